//! The planner: passes over the verified IR that decide how each op is lowered.
//!
//! Input: the IR and the verifier's [`Info`] (proof that the IR verified).
//! Output: one [`Plan`], plain data that code generation reads and nothing writes back to.
//! [`Kernel::plan`](crate::Kernel::plan) shows a built kernel's; the types here are its
//! parts, and [`PlanError`] is what planning reports.
//!
//! Passes, each in its own file and private to the planner:
//! - `arrangement.rs`: the static arrangement (blocked, striped) of every payload, and a
//!   rejection where a consumer needs another arrangement than its producer gives;
//! - `transfer.rs`: the index map of every load and store, derived from the layout algebra;
//! - `scratch.rs`: the shared-memory pass, which runs, one file per op family, `storage.rs`
//!   (user shared arrays and temp storages), `exchange.rs` (exchanges through shared memory
//!   or shuffles) and `collective.rs` (the shared memory of block collectives), each giving
//!   its ops' plans, slices and steps (`schedule.rs`: the shared-memory schedule, as data);
//!   then `alloc.rs` (slices by live range), `shared.rs` (the shared declarations: each array
//!   on its own, the window static or dynamic) and `barrier.rs` (the barriers between the
//!   steps, from the steps alone: `access.rs` turns each access into a byte map, `scope.rs`
//!   says which threads a barrier orders);
//! - `form.rs`: position forms from layouts, and padding; `ids.rs`: the plan's entities and
//!   side tables.
//!
//! Architecture invariant: the plan is plain data; the planner never emits code.

mod access;
mod alloc;
mod arrangement;
mod barrier;
mod collective;
mod error;
mod exchange;
mod form;
mod ids;
mod plan;
mod schedule;
mod scope;
mod scratch;
mod shared;
mod storage;
mod transfer;
mod warp_groups;

pub use alloc::Slice;
pub use barrier::{Barrier, Hazard};
pub(crate) use collective::scatter_read_width;
pub use collective::{CollectivePlan, Raking};
pub use error::PlanError;
pub use exchange::{ExchangePlan, Turn};
pub(crate) use form::{InverseForm, PositionForm, padded_slot};
pub use ids::{IdVec, Key, SliceId, StepId};
pub use plan::{Plan, TransferPlan};
pub use schedule::{Access, Positions, Step, Touch};
pub use scope::SyncScope;
pub use shared::{ArrayHome, SharedLayout};

use crate::ir::{Info, Ir};

/// Plans a verified kernel: `info` must be [`verify`](crate::ir::verify::verify)'s result for
/// `ir` ([`PlanError::NotVerified`] otherwise).
pub(crate) fn plan(ir: &Ir, info: &Info) -> Result<Plan, PlanError> {
    if !info.is_for(ir) {
        return Err(PlanError::NotVerified { loc: ir.block.loc });
    }
    let arrangements = arrangement::assign(ir)?;
    transfer::check_group_counts(ir, &arrangements)?;
    let transfers = transfer::plan_transfers(ir)?;
    let scratch = scratch::plan_scratch(ir, info, &arrangements)?;
    let positions = collective::plan_positions(ir)?;
    Ok(Plan {
        block_threads: ir.block_threads(),
        block_tile: ir.block_threads().saturating_mul(ir.items_per_thread),
        arrangements: IdVec::from(arrangements.of),
        transfers: IdVec::from(transfers),
        shared_bytes: scratch.bytes,
        shared: scratch.shared,
        exchanges: scratch.exchanges,
        slices: scratch.slices,
        steps: scratch.steps,
        barriers: scratch.barriers,
        arrays: scratch.arrays,
        collectives: scratch.collectives,
        positions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::verify::verify;
    use crate::{KernelBuilder, Load, Store};

    #[test]
    fn planning_with_another_kernels_verifier_result_is_an_error() {
        let mut k = KernelBuilder::new("two_ops").block(32);
        let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
        let b = k.this_block();
        let t = k.load_from(b, &x, Load::direct());
        k.store_to(b, &y, &t, Store::direct());
        let ir = k.ir().clone();
        let info = verify(&ir).expect("verifies");
        let mut other = ir.clone();
        other.ops.truncate(1);
        let body = other.body.index();
        other.regions[body].truncate(1);
        assert!(!info.is_for(&other));
        assert!(matches!(
            plan(&other, &info),
            Err(PlanError::NotVerified { .. })
        ));
        assert!(plan(&ir, &info).is_ok());
    }
}

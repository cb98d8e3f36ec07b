//! The planner: passes over the verified IR that decide how each op is lowered.
//!
//! Input: the IR and the verifier's [`Info`] (proof that the IR verified).
//! Output: one [`Plan`], plain data that code generation reads and nothing writes back to.
//!
//! Passes, each in its own file:
//! - [`arrangement`]: the static arrangement (blocked, striped) of every payload, and a
//!   rejection where a consumer needs another arrangement than its producer gives;
//! - [`transfer`]: the index map of every load and store, derived from the layout algebra;
//! - [`scratch`]: exchanges through shared memory, slices by live range, barriers (from
//!   `access.rs`: which thread touches which byte of shared memory at each step);
//! - [`shared`]: the shared declarations (each array on its own, the window static or
//!   dynamic).
//!
//! Architecture invariant: the plan is plain data; the planner never emits code.

mod access;
pub mod arrangement;
pub mod error;
pub mod plan;
pub mod scratch;
pub mod shared;
pub mod transfer;

pub use error::PlanError;
pub use plan::{Plan, TransferPlan};
pub use scratch::{
    Barrier, CollectivePlan, ExchangePlan, Hazard, PositionForm, Slice, SyncScope, padded_slot,
};
pub use shared::{ArrayHome, SharedLayout};

use crate::ir::{Info, Ir};

/// Plans a verified kernel: `info` must be [`verify`](crate::ir::verify::verify)'s result for
/// `ir` ([`PlanError::NotVerified`] otherwise).
pub fn plan(ir: &Ir, info: &Info) -> Result<Plan, PlanError> {
    if !info.is_for(ir) {
        return Err(PlanError::NotVerified { loc: ir.block.loc });
    }
    let arrangements = arrangement::assign(ir)?;
    transfer::check_group_counts(ir, &arrangements)?;
    let transfers = transfer::plan_transfers(ir)?;
    let scratch = scratch::plan_scratch(ir, info, &arrangements)?;
    Ok(Plan {
        block_threads: ir.block_threads(),
        block_tile: ir.block_threads().saturating_mul(ir.items_per_thread),
        arrangements: arrangements.of,
        transfers,
        shared_bytes: scratch.bytes,
        shared: scratch.shared,
        exchanges: scratch.exchanges,
        slices: scratch.slices,
        barriers: scratch.barriers,
        arrays: scratch.arrays,
        collectives: scratch.collectives,
    })
}

//! The shared memory of reductions over groups of whole warps, and their steps.
//!
//! A group of `n` whole warps reduces like a small block by warp reductions: lane 0 of each
//! warp writes its warp's value to the entry of its warp (the block's warp index, so group
//! `j`'s entries are `j * n .. (j + 1) * n`); the group's first warp reads its group's entries
//! (lanes below `n`) and reduces them; with broadcast, the group's rank 0 writes the result to
//! its group's slot after the entries, and every thread of the group reads it. Every access
//! pairs threads of one group, so a barrier before a step is the group's named barrier
//! ([`SyncScope::Warps`]); where the block's threads all run the op, a block barrier is
//! offered too, for conflicts with other ops' accesses to the same bytes. Where they do not
//! (the op runs under `if_member`), its slice has bytes of its own for the whole kernel.

use super::alloc::{Request, Slice};
use super::collective::CollectivePlan;
use super::error::PlanError;
use super::form::PositionForm;
use super::schedule::{Access, Positions, Touch, add_step};
use super::scope::SyncScope;
use super::scratch::{Context, Scratch};
use crate::ir::{Arrangement, OpId};

/// Plans the reduction `op` (at program point `point`) over groups of `warps` whole warps.
pub(super) fn plan_reduce(
    cx: &Context,
    s: &mut Scratch,
    point: usize,
    op: OpId,
    warps: u32,
) -> Result<CollectivePlan, PlanError> {
    let ir = cx.ir;
    let data = ir.op(op);
    let crate::ir::ops::OpKind::Reduce(r) = &data.kind else {
        return Err(PlanError::Internal {
            missing: format!("reduction for {op} over groups of warps"),
            loc: data.loc,
        });
    };
    let threads = warps * 32;
    let groups = cx.block / threads;
    let elem_bytes = ir.datas[r.src.index()].dtype.bytes();
    let entries = groups * warps;
    let slots = entries + if r.broadcast { groups } else { 0 };
    let slice = s.slices.push(Slice::new(
        "warp group partials".into(),
        op,
        slots.max(1) * elem_bytes,
        16,
    ));
    s.requests.push(Request {
        slice,
        at: point as u32 * 16 + 8,
        exclusive: cx.divergent(op),
    });
    let access = |write: bool, touch: Touch| Access {
        slice,
        write,
        elem_bytes,
        padding: None,
        touch,
        then_synced: None,
    };
    let form =
        PositionForm::of(Arrangement::Blocked, threads, 1).ok_or_else(|| PlanError::Layout {
            op,
            loc: data.loc,
            reason: format!("Blocked over {threads} threads x 1 item"),
        })?;
    let share = access(
        true,
        Touch::GroupLead {
            group: 32,
            groups: entries,
            base: 0,
        },
    );
    let mut fold = access(
        false,
        Touch::Positions(Positions {
            first: 0,
            threads: groups * threads,
            group: threads,
            region: warps,
            form,
            items: 1,
            below: Some(warps),
        }),
    );
    // The first warp reduces what it read with a full-warp shuffle tree.
    fold.then_synced = Some(SyncScope::Group { threads: 32 });
    let mut steps = vec![vec![share], vec![fold]];
    if r.broadcast {
        let (group, base) = (threads, entries);
        steps.push(vec![access(
            true,
            Touch::GroupLead {
                group,
                groups,
                base,
            },
        )]);
        steps.push(vec![access(
            false,
            Touch::GroupSlot {
                group,
                groups,
                base,
            },
        )]);
    }
    let scopes = if cx.divergent(op) {
        vec![SyncScope::Warps { warps }]
    } else {
        vec![SyncScope::Warps { warps }, SyncScope::Block]
    };
    let ids = steps
        .into_iter()
        .map(|accesses| add_step(&mut s.steps, op, scopes.clone(), accesses))
        .collect();
    Ok(CollectivePlan {
        slice,
        entries,
        elem_bytes,
        broadcast: r.broadcast,
        raking: None,
        padding: None,
        read_back: None,
        holes: false,
        prefix_slot: false,
        steps: ids,
    })
}

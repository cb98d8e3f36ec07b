//! The shared memory of reductions and scans over groups of whole warps, and their steps.
//!
//! A group of `n` whole warps runs a collective like a small block by warp collectives, with
//! one entry per warp (the block's warp index, so group `j`'s entries are
//! `j * n .. (j + 1) * n`):
//! - reduction: lane 0 of each warp writes its warp's value; the group's first warp reads its
//!   group's entries (lanes below `n`) and reduces them; with broadcast, the group's rank 0
//!   writes the result to its group's slot after the entries, and every thread of the group
//!   reads it;
//! - scan (always by warp scans, whatever the block algorithm asked: CUB's `BlockScan` over
//!   a sub-block): lane 31 of each warp writes its warp's total; every thread of the group
//!   reads its group's entries and folds those of the warps before its own (and all of them
//!   for the aggregate); with a prefix callback, the group's rank 0 writes its prefix to its
//!   group's slot after the entries, and every thread of the group reads it.
//!
//! Every access pairs threads of one group, so a barrier before a step is the group's named
//! barrier ([`SyncScope::Warps`]); where the block's threads all run the op, a block barrier
//! is offered too, for conflicts with other ops' accesses to the same bytes. Where they do
//! not (the op runs under `if_member`), its slice has bytes of its own for the whole kernel.

use super::alloc::{Request, Slice};
use super::collective::CollectivePlan;
use super::error::PlanError;
use super::form::PositionForm;
use super::schedule::{Access, Positions, Touch, add_step};
use super::scope::SyncScope;
use super::scratch::{Context, Scratch};
use crate::ir::ops::OpKind;
use crate::ir::{Arrangement, OpId};

/// Plans the reduction or scan `op` (at program point `point`) over groups of `warps` whole
/// warps.
pub(super) fn plan(
    cx: &Context,
    s: &mut Scratch,
    point: usize,
    op: OpId,
    warps: u32,
) -> Result<CollectivePlan, PlanError> {
    let ir = cx.ir;
    let data = ir.op(op);
    let (src, broadcast, prefix_slot) = match &data.kind {
        OpKind::Reduce(r) => (r.src, r.broadcast, false),
        OpKind::Scan(sc) => (sc.src, false, sc.callback.is_some()),
        _ => {
            return Err(PlanError::Internal {
                missing: format!("reduction or scan for {op} over groups of warps"),
                loc: data.loc,
            });
        }
    };
    let threads = warps * 32;
    let groups = cx.block / threads;
    let elem_bytes = ir.datas[src.index()].dtype.bytes();
    // A first-value reduction shares nothing but its broadcast.
    let first = super::collective::is_first(&data.kind);
    let entries = if first { 0 } else { groups * warps };
    // One slot per group after the entries: a broadcast result or rank 0's prefix.
    let group_slot = broadcast || prefix_slot;
    let slots = entries + if group_slot { groups } else { 0 };
    let label = format!("warp group {} partials", data.kind.name());
    let slice = s
        .slices
        .push(Slice::new(label, op, slots.max(1) * elem_bytes, 16));
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
    };
    // Lane `lane` of each warp of a group writes its warp's entry.
    let share = |lane: u32| {
        let touch = Touch::GroupLead {
            group: 32,
            rank: lane,
            groups: entries,
            base: 0,
        };
        access(true, touch)
    };
    let mut steps = if first {
        Vec::new()
    } else if let OpKind::Scan(_) = &data.kind {
        // Every thread of a group reads its group's entries.
        let read = Touch::GroupSlot {
            group: threads,
            groups,
            base: 0,
            slots: warps,
        };
        vec![vec![share(31)], vec![access(false, read)]]
    } else {
        let form = PositionForm::of(Arrangement::Blocked, threads, 1).ok_or_else(|| {
            PlanError::Layout {
                op,
                loc: data.loc,
                reason: format!("Blocked over {threads} threads x 1 item"),
            }
        })?;
        let fold = access(
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
        // The first warp reduces what it read with a full-warp shuffle tree, which orders no
        // memory.
        vec![vec![share(0)], vec![fold]]
    };
    if group_slot {
        // The group's rank 0 writes its group's slot, every thread of the group reads it.
        let (group, base) = (threads, entries);
        let lead = Touch::GroupLead {
            group,
            rank: 0,
            groups,
            base,
        };
        let all = Touch::GroupSlot {
            group,
            groups,
            base,
            slots: 1,
        };
        steps.push(vec![access(true, lead)]);
        steps.push(vec![access(false, all)]);
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
        broadcast,
        raking: None,
        padding: None,
        read_back: None,
        holes: false,
        prefix_slot,
        steps: ids,
    })
}

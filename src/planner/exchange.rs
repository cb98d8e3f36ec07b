//! Exchanges: payloads rearranged through shared memory (or shuffles), and their steps.
//!
//! Every op that moves a payload through shared memory does it as one or more *exchanges*: all
//! threads of an exchange group write their slots at positions of one arrangement (a step),
//! then read them back at positions of another (the next step). An op's exchanges are, in
//! order: the conversions the arrangement pass asked for, then its own algorithm's (a
//! transposing load or store). A time-sliced exchange takes one such pair of steps per turn.
//!
//! Invariants this pass establishes:
//! - every exchange has a slice: its own, or its temp storage's;
//! - an exchange's groups are the smallest that both arrangements' striped groups tile; every
//!   thread of a group reaches the exchange: groups that cross or span warps (and time-sliced
//!   exchanges) only in code uniform across the block, groups inside a warp under conditions
//!   uniform across each group;
//! - its steps say which thread touches which slot (the write and read position forms, from
//!   the arrangements' layouts), and that a barrier before them may order only the exchange
//!   groups that lie inside warps (else the block);
//! - padding (one slot per 32 elements) is chosen where the layout algebra's bank-conflict
//!   count says it removes conflicts; a side whose thread's items are one 8- or 16-byte run
//!   counts as conflict-free unpadded, where codegen moves it as one vector access.

use super::alloc::{Request, Slice};
use super::arrangement::{Arrangements, Conversion, of_algorithm};
use super::error::PlanError;
use super::form::{
    InverseForm, PositionForm, layout_of, padded_slot, padding_pays_over, striped_threads,
};
use super::ids::{SliceId, StepId};
use super::schedule::{Access, Positions, Touch, add_step, group_then_block};
use super::scope::SyncScope;
use super::scratch::{Context, Scratch, covers_groups, lcm, within_warps};
use super::storage::Storages;
use crate::ir::ops::{Algorithm, ExchangeVia, OpKind};
use crate::ir::verify::Uniformity;
use crate::ir::{Arrangement, DataId, OpId};
use crate::layout::SmemTransform;
use rustc_hash::FxHashMap;

/// One exchange: a payload rearranged through shared memory by groups of `scope` threads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExchangePlan {
    /// For a conversion, the payload converted; `None` for the op's own algorithm.
    pub data: Option<DataId>,
    /// Arrangement written.
    pub from: Arrangement,
    /// Arrangement read.
    pub to: Arrangement,
    /// Where each thread writes its slots.
    pub(crate) write: PositionForm,
    /// Where each thread reads its slots.
    pub(crate) read: PositionForm,
    /// Threads per exchange group (the block, a warp, or a logical warp).
    pub scope: u32,
    /// Items per thread.
    pub items: u32,
    /// Bytes per element.
    pub elem_bytes: u32,
    /// The slice.
    pub slice: SliceId,
    /// Elements per group's region, including padding.
    pub group_elems: u32,
    /// One padding slot after every 32 elements of a group's region.
    pub padded: bool,
    /// Time-sliced: the groups (warps) take turns on one region, in place.
    pub time_sliced: bool,
    /// The steps of each turn, in order: one turn, or one per warp when time-sliced (none
    /// through shuffles).
    pub turns: Vec<Turn>,
    /// Through shuffles within the group: no shared memory, no steps.
    pub via_shuffles: bool,
    /// Through shuffles: which rank holds each position of the written arrangement, and in
    /// which slot (the right inverse of its layout), where each thread fetches its result's.
    pub(crate) holder: Option<InverseForm>,
}

/// The two steps of one turn of an exchange: every thread of the turn writes its slots, then
/// reads its result's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Turn {
    /// The writes.
    pub write: StepId,
    /// The reads.
    pub read: StepId,
}

impl ExchangePlan {
    /// Positions between two padding slots, if padded.
    pub fn padding(&self) -> Option<u32> {
        self.padded.then_some(32)
    }

    /// The slot (in elements from the group's region start) of scope-local position `p`.
    pub fn slot(&self, p: u32) -> u32 {
        padded_slot(p, self.padding())
    }
}

/// An exchange an op needs.
struct Need {
    /// For a conversion, the payload converted.
    data: Option<DataId>,
    from: Arrangement,
    to: Arrangement,
    /// Time-sliced: the turns.
    turns: Option<u32>,
    shuffles: bool,
}

/// Plans every op's exchanges, in program order, with their slices and steps.
pub(super) fn plan_exchanges(
    cx: &Context,
    arr: &Arrangements,
    s: &mut Scratch,
    storages: &mut Storages,
) -> Result<(), PlanError> {
    let mut conversions: FxHashMap<OpId, Vec<&Conversion>> = FxHashMap::default();
    for c in &arr.conversions {
        conversions.entry(c.op).or_default().push(c);
    }
    for (point, &op) in cx.order.iter().enumerate() {
        let own = conversions.get(&op).map(Vec::as_slice).unwrap_or_default();
        for need in needs(cx, op, own) {
            if let Some(e) = plan_one(cx, s, storages, op, point as u32, need)? {
                s.exchanges[op].push(e);
            }
        }
    }
    Ok(())
}

/// The exchanges `op` needs, in order: its conversions, then its own algorithm's.
fn needs(cx: &Context, op: OpId, conversions: &[&Conversion]) -> Vec<Need> {
    let (ir, block) = (cx.ir, cx.block);
    let data = ir.op(op);
    let mut list = Vec::new();
    for c in conversions {
        // An explicit time-sliced exchange between blocked and warp-striped order.
        let warp_striped = |a: Arrangement| a == Arrangement::Striped { threads: 32 };
        let turns = match &data.kind {
            OpKind::Exchange {
                src,
                via: ExchangeVia::TimeSliced,
                ..
            } if *src == c.data
                && block.is_multiple_of(32)
                && (warp_striped(c.from) || warp_striped(c.to))
                && (c.from == Arrangement::Blocked || c.to == Arrangement::Blocked) =>
            {
                Some(block / 32)
            }
            _ => None,
        };
        let shuffles = matches!(
            &data.kind,
            OpKind::Exchange { src, via: ExchangeVia::Shuffles, .. } if *src == c.data
        );
        list.push(Need {
            data: Some(c.data),
            from: c.from,
            to: c.to,
            turns,
            shuffles,
        });
    }
    if let OpKind::Load(t) | OpKind::Store(t) = &data.kind {
        let g = ir.group_threads(t.group);
        let is_load = matches!(data.kind, OpKind::Load(_));
        let (moved, turns) = match t.algorithm {
            Algorithm::Transpose => (Some(Arrangement::Striped { threads: g }), None),
            Algorithm::WarpTranspose => (Some(Arrangement::Striped { threads: 32 }), None),
            Algorithm::WarpTransposeTimesliced => {
                (Some(Arrangement::Striped { threads: 32 }), Some(block / 32))
            }
            _ => (None, None),
        };
        let items = ir.datas[t.data.index()].items;
        if let Some(m) = moved {
            let blocked = of_algorithm(t.algorithm, g);
            let (from, to) = if is_load { (m, blocked) } else { (blocked, m) };
            // With the same positions on both sides, the access order is already blocked.
            if !from.same_positions(to, items) {
                list.push(Need {
                    data: None,
                    from,
                    to,
                    turns,
                    shuffles: false,
                });
            }
        }
    }
    list
}

/// Plans one exchange of `op` (at program point `point`): its groups, checked against the
/// code around it, its padding, its slice and its steps. `None` where there is no payload to
/// exchange.
fn plan_one(
    cx: &Context,
    s: &mut Scratch,
    storages: &mut Storages,
    op: OpId,
    point: u32,
    need: Need,
) -> Result<Option<ExchangePlan>, PlanError> {
    let ir = cx.ir;
    let data = ir.op(op);
    let data_for = need.data.or(match &data.kind {
        OpKind::Load(t) | OpKind::Store(t) => Some(t.data),
        _ => None,
    });
    let Some(d) = data_for.and_then(|d| ir.datas.get(d.index())) else {
        return Ok(None);
    };
    let (items, elem_bytes) = (d.items, d.dtype.bytes());
    let Need {
        from,
        to,
        turns,
        shuffles: via_shuffles,
        ..
    } = need;
    // The exchange groups: the smallest that both arrangements' groups tile.
    let scope = match turns {
        Some(_) => 32,
        None => lcm(striped_threads(from), striped_threads(to)),
    };
    let warp_group = warp_group(cx, op, scope);
    check_groups(cx, op, scope, turns.is_some(), via_shuffles, warp_group)?;
    let forms = PositionForm::of(from, scope, items).zip(PositionForm::of(to, scope, items));
    let holder = via_shuffles.then(|| InverseForm::of(from, scope, items));
    let (Some((write, read)), None | Some(Some(_))) = (forms, &holder) else {
        return Err(PlanError::Layout {
            op,
            loc: data.loc,
            reason: format!("{from:?} -> {to:?} over {scope} threads x {items} items"),
        });
    };
    let padded =
        !via_shuffles && choose_padding([from, to], [&write, &read], scope, items, elem_bytes);
    let elems = scope * items;
    let group_elems = if padded { elems + elems / 32 } else { elems };
    let groups = match turns {
        Some(_) => 1,
        None => members(cx, warp_group) / scope.max(1),
    };
    let bytes = if via_shuffles {
        0
    } else {
        group_elems * groups * elem_bytes
    };
    let storage = match &data.kind {
        OpKind::Load(t) | OpKind::Store(t) if need.data.is_none() => t.storage,
        _ => None,
    };
    let at = point * 16 + s.exchanges[op].len() as u32;
    let slice = match storage {
        Some(st) => storages.slice_for(cx.ir, &mut s.slices, st, op, bytes, at)?,
        None => {
            let label = format!("{} exchange {:?} -> {:?}", data.kind.name(), from, to);
            let slice = s.slices.push(Slice::new(label, op, bytes, 16));
            s.requests.push(Request {
                slice,
                at,
                exclusive: cx.divergent(op),
            });
            slice
        }
    };
    let mut e = ExchangePlan {
        data: need.data,
        from,
        to,
        write,
        read,
        scope,
        items,
        elem_bytes,
        slice,
        group_elems,
        padded,
        time_sliced: turns.is_some(),
        turns: Vec::new(),
        via_shuffles,
        holder: holder.flatten(),
    };
    if !via_shuffles {
        e.turns = add_steps(cx, s, op, &e, turns, warp_group);
    }
    Ok(Some(e))
}

/// For an exchange of an op over groups of whole warps, the warps per group: an explicit
/// exchange's, and a conversion's whose groups of `scope` threads tile each group of warps
/// (a wider conversion is the block's, where the block's barrier can stand).
fn warp_group(cx: &Context, op: OpId, scope: u32) -> Option<u32> {
    let kind = &cx.ir.op(op).kind;
    let warps = cx.ir.groups[kind.group()?.index()].kind.whole_warps()?;
    let tiles = scope > 0 && warps.saturating_mul(32).is_multiple_of(scope);
    (matches!(kind, OpKind::Exchange { .. }) || tiles).then_some(warps)
}

/// The threads that run an exchange: the block's, or those in a group of `warps` whole warps
/// (the warps a partition leaves over run none).
fn members(cx: &Context, warp_group: Option<u32>) -> u32 {
    match warp_group {
        Some(warps) if warps > 0 => cx.block / 32 / warps * warps * 32,
        _ => cx.block,
    }
}

/// Checks that an exchange over groups of `scope` threads can run where `op` stands: the
/// groups tile the block (over groups of whole warps, each group of warps); groups inside a
/// warp (synchronizing alone) run under conditions uniform across each group, others (and
/// the turns of a time-sliced exchange) only where the block's barrier can stand (over
/// groups of whole warps, where the group's can: the verifier checked that); shuffles only
/// inside a warp.
fn check_groups(
    cx: &Context,
    op: OpId,
    scope: u32,
    time_sliced: bool,
    via_shuffles: bool,
    warp_group: Option<u32>,
) -> Result<(), PlanError> {
    let block = cx.block;
    let loc = cx.ir.op(op).loc;
    if scope == 0 || !block.is_multiple_of(scope) && warp_group.is_none() {
        return Err(PlanError::Layout {
            op,
            loc,
            reason: format!("no exchange over groups of {scope} threads in a block of {block}"),
        });
    }
    if let Some(warps) = warp_group {
        let threads = warps.saturating_mul(32);
        if !threads.is_multiple_of(scope) {
            return Err(PlanError::Layout {
                op,
                loc,
                reason: format!(
                    "an exchange over groups of {warps} warps moves each group's tile, which \
                     groups of {scope} threads do not tile"
                ),
            });
        }
    }
    let in_warps = !time_sliced && within_warps(scope, block);
    let around = cx.enclosing[op];
    let block_wide = warp_group.is_none();
    if block_wide && !in_warps && !around.covers(block) && around < Uniformity::BLOCK {
        return Err(PlanError::BlockExchangeInDivergentCode { op, loc });
    }
    if in_warps && !covers_groups(around, scope, block) {
        return Err(PlanError::GroupExchangeInDivergentCode {
            op,
            loc,
            threads: scope,
        });
    }
    if via_shuffles && !in_warps {
        return Err(PlanError::Layout {
            op,
            loc,
            reason: format!(
                "an exchange through shuffles needs groups inside one warp, not groups of \
                 {scope} threads in a block of {block}"
            ),
        });
    }
    Ok(())
}

/// Adds the steps of exchange `e` of `op`: a write step and a read step per turn. A barrier
/// before them may order exchange groups inside a warp alone (with a mask of the lanes they
/// have), groups of whole warps with their named barrier (and the block where every thread
/// runs the op), warps where the block has only whole warps (or is one), else the block.
fn add_steps(
    cx: &Context,
    s: &mut Scratch,
    op: OpId,
    e: &ExchangePlan,
    turns: Option<u32>,
    warp_group: Option<u32>,
) -> Vec<Turn> {
    let block = members(cx, warp_group);
    let group = if e.scope >= 32 {
        cx.warps()
    } else if 32 % e.scope == 0 || block <= 32 {
        e.scope.min(block)
    } else {
        0
    };
    let scopes = match warp_group {
        Some(warps) if e.scope > 32 => {
            let mut v = vec![SyncScope::Warps { warps }];
            if !cx.divergent(op) {
                v.push(SyncScope::Block);
            }
            v
        }
        _ => group_then_block(group),
    };
    // Each thread of the turn (every thread without time slicing) touches its slots at the
    // side's positions; every turn of a time-sliced exchange uses the first region.
    let side = |form: &PositionForm, write: bool, turn: Option<u32>| Access {
        slice: e.slice,
        write,
        elem_bytes: e.elem_bytes,
        padding: e.padding(),
        touch: Touch::Positions(Positions {
            first: turn.map_or(0, |t| t * 32),
            threads: turn.map_or(block, |_| 32),
            group: e.scope,
            region: e.group_elems,
            form: form.clone(),
            items: e.items,
            below: None,
        }),
    };
    let mut out = Vec::new();
    for turn in 0..turns.unwrap_or(1) {
        let turn = turns.map(|_| turn);
        let write = side(&e.write, true, turn);
        let write = add_step(&mut s.steps, op, scopes.clone(), vec![write]);
        let read = side(&e.read, false, turn);
        let read = add_step(&mut s.steps, op, scopes.clone(), vec![read]);
        out.push(Turn { write, read });
    }
    out
}

/// Whether padding lowers the bank conflicts of writing `sides[0]` and reading `sides[1]`,
/// whose positions `forms` hold. Unpadded, a side whose thread's items are one 8- or 16-byte
/// vector ([`PositionForm::vector_width`]) moves as one vector access per thread, without
/// conflicts; padded, item by item.
fn choose_padding(
    sides: [Arrangement; 2],
    forms: [&PositionForm; 2],
    scope: u32,
    items: u32,
    bytes: u32,
) -> bool {
    let layouts = sides.map(|a| layout_of(a, scope, items));
    let Some(padded) = layouts.into_iter().collect::<Option<Vec<_>>>() else {
        return false;
    };
    let plain: Vec<_> = (forms.iter().zip(&padded))
        .filter(|(f, _)| f.vector_width(items, bytes).is_none())
        .map(|(_, l)| l.clone())
        .collect();
    padding_pays_over(
        &plain,
        &padded,
        bytes,
        scope.min(32),
        SmemTransform::Pad { every: 32, pad: 1 },
    )
}

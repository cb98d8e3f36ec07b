//! The shared memory of block-wide collectives (reductions, scans, neighbour ops, scatters)
//! and their steps.
//!
//! A collective over more than a warp shares values through one slice: one entry per warp or
//! per thread (the whole tile for a scatter), then a result slot and, for a scan with a prefix
//! callback, rank 0's prefix. Its steps, in the order its lowering (`codegen/reduce.rs`,
//! `scan.rs`, `neighbor.rs`) takes them:
//! - reduction by warp reductions: lane 0 of each warp writes its warp's value; warp 0 reads
//!   them (and reduces them with a warp collective); raking: the sharing threads (every
//!   thread, or those past the first warp for commutative-only raking: the [`Raking`] split)
//!   write their values; the first warp's lanes read their segments (and reduce); with
//!   broadcast, thread 0 writes the result, every thread reads it;
//! - scan by warp scans: the last lane of each warp writes its total; every thread reads all
//!   totals; raking: every thread writes its total; the first warp reads its segments, writes
//!   each entry's prefix back and the total after them (one step: a branch only the first warp
//!   takes, where no barrier can fall); every thread reads its prefix and the total; with a
//!   prefix callback, thread 0 writes its prefix, every thread reads it;
//! - neighbour op: every thread writes its shared value; each reads its neighbour's (and the
//!   one that leaves the tile);
//! - scatter: with a hole value, each thread writes it where it will read back; the items go
//!   to their ranks (any position); each thread reads its result's positions back.
//!
//! Invariants this pass establishes: the raking split and segments are decided here once (the
//! lowering reads them from [`CollectivePlan::raking`]); padding (one slot per segment) is
//! chosen where the layout algebra's bank-conflict count says it removes conflicts; a barrier
//! before a step may order warps alone where the block has only whole warps.

use super::alloc::{Request, Slice};
use super::arrangement::Arrangements;
use super::error::PlanError;
use super::form::{PositionForm, layout_of, padded_slot, padding_pays};
use super::ids::{IdVec, SliceId, StepId};
use super::schedule::{Access, Positions, Touch, add_step, group_then_block};
use super::scratch::{Context, Scratch};
use crate::ir::ops::{NeighborKind, OpKind, ReduceAlgorithm, ReduceOp, ScanAlgorithm};
use crate::ir::{Arrangement, DataId, GroupId, Ir, Loc, OpId};
use crate::layout::{Arrangement as LArr, SmemTransform, arrangement_layout};

/// Shared memory of a block-wide collective: `entries` shared values, then the result slot
/// (and, with `prefix_slot`, the slot of rank 0's prefix after it), and the steps that touch
/// them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectivePlan {
    /// The slice.
    pub slice: SliceId,
    /// Shared values: one per warp, or one per thread for the raking algorithms and neighbour
    /// ops, or the whole tile for a scatter.
    pub entries: u32,
    /// Bytes per value.
    pub elem_bytes: u32,
    /// Whether a reduction's result is shared with every thread.
    pub broadcast: bool,
    /// For the raking algorithms: which threads share their values, and the segments the
    /// first warp's lanes fold.
    pub raking: Option<Raking>,
    /// One unused slot follows every this many entries (a raking segment, so that the raking
    /// lanes' reads fall in different banks; or 32 positions of a scatter's tile, so that its
    /// read-back does).
    pub padding: Option<u32>,
    /// For a scatter: where each thread reads its slots back (the result's arrangement over
    /// the block, from its layout).
    pub(crate) read_back: Option<PositionForm>,
    /// For a scatter: a hole value is written first where each thread reads back.
    pub holes: bool,
    /// A scan with a prefix callback: rank 0's prefix goes through the slot after the result
    /// slot, so the whole group starts from it.
    pub prefix_slot: bool,
    /// The steps, in the order the lowering takes them.
    pub steps: Vec<StepId>,
}

/// How a raking collective shares: threads `first..first + shared` write their values to
/// entries `0..shared` (every thread, or, for commutative-only raking, those past the first
/// warp, which folds its own values); lane `l` of the first warp folds entries
/// `l * segment .. (l + 1) * segment` in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Raking {
    /// The first thread that shares.
    pub first: u32,
    /// Threads that share (and entries).
    pub shared: u32,
    /// Entries per lane of the first warp.
    pub segment: u32,
}

impl CollectivePlan {
    /// The slot (in elements from the slice's start) of entry `e`; entry `entries` is the
    /// result slot after the entries.
    pub fn slot(&self, e: u32) -> u32 {
        padded_slot(e, self.padding)
    }

    /// The slot rank 0's prefix goes through (with `prefix_slot`).
    pub fn prefix_slot_index(&self) -> u32 {
        self.slot(self.entries) + 1
    }

    /// Slots from one raking segment's start to the next's.
    pub fn segment_stride(&self) -> u32 {
        self.raking.map_or(0, |r| r.segment) + u32::from(self.padding.is_some())
    }
}

/// What a collective shares: its group and source, whether one value per thread (else per
/// warp), whether its result is broadcast, and what `explain` calls it.
struct Shape {
    group: GroupId,
    src: DataId,
    per_thread: bool,
    broadcast: bool,
    label: &'static str,
}

fn shape(kind: &OpKind) -> Option<Shape> {
    let (group, src, per_thread, broadcast, label) = match kind {
        OpKind::Reduce(r) => (
            r.group,
            r.src,
            r.algorithm != ReduceAlgorithm::WarpReductions,
            r.broadcast,
            "reduce",
        ),
        OpKind::Scan(sc) => (
            sc.group,
            sc.src,
            sc.algorithm != ScanAlgorithm::WarpScans,
            false,
            "scan",
        ),
        OpKind::Neighbor(nb) => (nb.group, nb.src, true, false, "neighbour"),
        OpKind::Scatter { group, src, .. } => (*group, *src, true, false, "scatter"),
        _ => return None,
    };
    Some(Shape {
        group,
        src,
        per_thread,
        broadcast,
        label,
    })
}

/// Plans the shared memory and steps of every block-wide collective, in program order.
pub(super) fn plan_collectives(
    cx: &Context,
    arr: &Arrangements,
    s: &mut Scratch,
) -> Result<(), PlanError> {
    let ir = cx.ir;
    for (point, &op) in cx.order.iter().enumerate() {
        let data = ir.op(op);
        let Some(sh) = shape(&data.kind) else {
            continue;
        };
        let threads = ir.group_threads(sh.group);
        let is_scatter = matches!(data.kind, OpKind::Scatter { .. });
        // A first-value reduction shares nothing but its broadcast.
        let first = is_first(&data.kind);
        if (threads <= 32 && !is_scatter) || (first && !sh.broadcast) {
            continue;
        }
        if let Some(warps) = ir.groups[sh.group.index()].kind.whole_warps() {
            let c = super::warp_groups::plan(cx, s, point, op, warps)?;
            s.collectives[op] = Some(c);
            continue;
        }
        let src = &ir.datas[sh.src.index()];
        let elem_bytes = src.dtype.bytes();
        let entries = if is_scatter {
            // The whole tile.
            threads * src.items
        } else if first {
            0
        } else if sh.per_thread {
            threads
        } else {
            threads.div_ceil(32)
        };
        let raking = raking(&data.kind, threads);
        let padding = match &data.kind {
            OpKind::Scatter {
                src: items,
                to,
                defined,
                ..
            } => {
                let from = arr.of[items.index()];
                scatter_padding(from, *to, threads, src.items, elem_bytes, *defined).then_some(32)
            }
            _ => raking
                .filter(|&r| choose_segment_padding(r, elem_bytes))
                .map(|r| r.segment),
        };
        let prefix_slot = matches!(&data.kind, OpKind::Scan(sc) if sc.callback.is_some());
        // The entries, the result slot, and rank 0's prefix.
        let slots = padded_slot(entries, padding) + 1 + u32::from(prefix_slot);
        let label = format!("{} partials", sh.label);
        let slice = s.slices.push(Slice::new(label, op, slots * elem_bytes, 16));
        s.requests.push(Request {
            slice,
            at: point as u32 * 16 + 8,
            exclusive: cx.divergent(op),
        });
        let read_back = match &data.kind {
            OpKind::Scatter { to, .. } => Some(read_back(*to, threads, src.items, op, data.loc)?),
            _ => None,
        };
        let mut c = CollectivePlan {
            slice,
            entries,
            elem_bytes,
            broadcast: sh.broadcast,
            raking,
            padding,
            read_back,
            holes: matches!(&data.kind, OpKind::Scatter { holes: Some(_), .. }),
            prefix_slot,
            steps: Vec::new(),
        };
        c.steps = add_steps(cx, s, op, &c, src.items)?;
        s.collectives[op] = Some(c);
    }
    Ok(())
}

/// Per op that counts the valid items of its group's tile (a reduction, scan or neighbour op
/// with a valid count), where its source's items lie in that tile: blocked over the group,
/// from the layout. Its lowering compares each item's position with the count.
pub(super) fn plan_positions(ir: &Ir) -> Result<IdVec<OpId, Option<PositionForm>>, PlanError> {
    let mut positions = IdVec::filled(ir.ops.len(), None);
    for (i, data) in ir.ops.iter().enumerate() {
        let (group, src) = match &data.kind {
            OpKind::Reduce(r) if r.valid.is_some() => (r.group, r.src),
            OpKind::Scan(sc) if sc.valid.is_some() => (sc.group, sc.src),
            OpKind::Neighbor(nb) if nb.valid.is_some() => (nb.group, nb.src),
            _ => continue,
        };
        let (threads, items) = (ir.group_threads(group), ir.datas[src.index()].items);
        let op = OpId(i as u32);
        let form = PositionForm::counted(Arrangement::Blocked, threads, items);
        positions[op] = Some(form.ok_or_else(|| PlanError::Layout {
            op,
            loc: data.loc,
            reason: format!("Blocked over {threads} threads x {items} items"),
        })?);
    }
    Ok(positions)
}

/// Whether `kind` is a [`ReduceOp::First`] reduction (which folds nothing).
pub(super) fn is_first(kind: &OpKind) -> bool {
    matches!(kind, OpKind::Reduce(r) if r.op == ReduceOp::First)
}

/// The raking split of a collective over `threads` threads, if it rakes.
fn raking(kind: &OpKind, threads: u32) -> Option<Raking> {
    if is_first(kind) {
        return None;
    }
    let first = match kind {
        OpKind::Reduce(r) if r.algorithm == ReduceAlgorithm::RakingCommutativeOnly => 32,
        OpKind::Reduce(r) if r.algorithm == ReduceAlgorithm::Raking => 0,
        OpKind::Scan(sc) if sc.algorithm != ScanAlgorithm::WarpScans => 0,
        _ => return None,
    };
    let shared = threads.saturating_sub(first);
    Some(Raking {
        first,
        shared,
        segment: shared.div_ceil(32),
    })
}

/// Whether one padding slot per raking segment lowers the bank conflicts of the sharing
/// threads writing one entry each in rank order and 32 lanes reading a segment each.
fn choose_segment_padding(r: Raking, elem_bytes: u32) -> bool {
    if r.segment < 2 {
        return false;
    }
    let layouts = [
        arrangement_layout(LArr::Blocked, r.shared, 1),
        arrangement_layout(LArr::Blocked, 32, r.segment),
    ];
    let Ok(layouts) = layouts.into_iter().collect::<Result<Vec<_>, _>>() else {
        return false;
    };
    let padded = SmemTransform::Pad {
        every: r.segment,
        pad: 1,
    };
    padding_pays(&layouts, elem_bytes, 32, padded)
}

/// Whether one padding slot per 32 tile positions lowers the bank conflicts of a scatter whose
/// items are in arrangement `from` and whose result is read back in arrangement `to` (CUB's
/// `BlockExchange::ScatterToBlocked` and `ScatterToStriped` pad the same way). Two accesses
/// count: the read-back (unpadded, a blocked one of `k` 32-bit items per thread meets `k`-way
/// conflicts, as lane `t` reads position `t * k + i`), and the writes in their common case,
/// where the ranks follow the items' own positions in `from` (a warp whose keys share a radix
/// digit, equal keys, a sorted run, a scatter by identity): from blocked items those writes
/// make the same `k`-way conflicts, which the padding removes whatever the read-back. A
/// read-back whose thread's items make one vector access ([`scatter_read_width`]) stays
/// unpadded: its quarter, half or whole warps read 128 contiguous bytes each.
fn scatter_padding(
    from: Option<Arrangement>,
    to: Arrangement,
    threads: u32,
    items: u32,
    elem_bytes: u32,
    defined: bool,
) -> bool {
    let vector = PositionForm::of(to, threads, items)
        .and_then(|f| scatter_read_width(&f, items, elem_bytes, defined))
        .is_some();
    let Some(read) = layout_of(to, threads, items).filter(|_| !vector) else {
        return false;
    };
    let writes = from.and_then(|a| layout_of(a, threads, items));
    let accesses: Vec<_> = std::iter::once(read).chain(writes).collect();
    let padded = SmemTransform::Pad { every: 32, pad: 1 };
    padding_pays(&accesses, elem_bytes, 32, padded)
}

/// The width of the one vector access a scatter's read-back (of form `form`) makes of each
/// thread's items, if it makes one: [`PositionForm::vector_width`], or, for a library sort's
/// sort bits (`defined`: every slot written, with a defined value), narrow items packed in words
/// ([`PositionForm::packed_width`]). The planner leaves such a tile unpadded and the lowering
/// reads it so.
pub(crate) fn scatter_read_width(
    form: &PositionForm,
    items: u32,
    elem_bytes: u32,
    defined: bool,
) -> Option<u32> {
    if defined {
        form.packed_width(items, elem_bytes)
    } else {
        form.vector_width(items, elem_bytes)
    }
}

/// A scatter's read-back form: the result's arrangement over the group.
fn read_back(
    to: Arrangement,
    threads: u32,
    items: u32,
    op: OpId,
    loc: Loc,
) -> Result<PositionForm, PlanError> {
    PositionForm::of(to, threads, items).ok_or_else(|| PlanError::Layout {
        op,
        loc,
        reason: format!("{to:?} over {threads} threads x {items} items"),
    })
}

/// Adds the steps of collective `c` of `op` (whose source has `items` items per thread), in
/// the order its lowering takes them (see the module's documentation).
fn add_steps(
    cx: &Context,
    s: &mut Scratch,
    op: OpId,
    c: &CollectivePlan,
    items: u32,
) -> Result<Vec<StepId>, PlanError> {
    let kind = &cx.ir.op(op).kind;
    let b = Build {
        c,
        block: cx.block,
        op,
        loc: cx.ir.op(op).loc,
    };
    let steps = match kind {
        kind if is_first(kind) => b.broadcast(c.slot(c.entries)).into(),
        OpKind::Reduce(r) => b.reduce(r.algorithm)?,
        OpKind::Scan(sc) => b.scan(sc.algorithm)?,
        OpKind::Neighbor(nb) => b.neighbor(nb.kind, nb.shifted_out.is_some())?,
        OpKind::Scatter { .. } => b.scatter(items),
        _ => Vec::new(),
    };
    // Warps synchronize alone where every warp of the block is whole, or in a block of one.
    let scopes = group_then_block(cx.warps());
    Ok(steps
        .into_iter()
        .map(|accesses| add_step(&mut s.steps, op, scopes.clone(), accesses))
        .collect())
}

/// Builds a collective's accesses.
struct Build<'a> {
    c: &'a CollectivePlan,
    block: u32,
    op: OpId,
    loc: Loc,
}

impl Build<'_> {
    fn access(&self, write: bool, touch: Touch) -> Access {
        Access {
            slice: self.c.slice,
            write,
            elem_bytes: self.c.elem_bytes,
            padding: self.c.padding,
            touch,
        }
    }

    /// The blocked form over `threads` threads with `items` items each.
    fn blocked(&self, threads: u32, items: u32) -> Result<PositionForm, PlanError> {
        PositionForm::of(Arrangement::Blocked, threads, items).ok_or_else(|| PlanError::Layout {
            op: self.op,
            loc: self.loc,
            reason: format!("Blocked over {threads} threads x {items} items"),
        })
    }

    /// Threads `first..first + count` touch entries `0..count`, one each.
    fn own(&self, first: u32, count: u32) -> Result<Touch, PlanError> {
        Ok(Touch::Positions(Positions {
            first,
            threads: count,
            group: count.max(1),
            region: 0,
            form: self.blocked(count, 1)?,
            items: 1,
            below: None,
        }))
    }

    /// Lane `l` of the first warp touches entries `l * segment ..` below `count`.
    fn segments(&self, segment: u32, count: u32) -> Result<Touch, PlanError> {
        Ok(Touch::Positions(Positions {
            first: 0,
            threads: self.block.min(32),
            group: 32,
            region: 0,
            form: self.blocked(32, segment)?,
            items: segment,
            below: Some(count),
        }))
    }

    /// Thread 0 writes slot `slot`, then every thread reads it.
    fn broadcast(&self, slot: u32) -> [Vec<Access>; 2] {
        [
            vec![self.access(true, Touch::OneSlot { thread: 0, slot })],
            vec![self.access(false, Touch::AllSlot { slot })],
        ]
    }

    fn reduce(&self, algorithm: ReduceAlgorithm) -> Result<Vec<Vec<Access>>, PlanError> {
        let c = self.c;
        let (share, fold) = match (algorithm, c.raking) {
            (ReduceAlgorithm::WarpReductions, _) | (_, None) => (
                self.access(true, Touch::WarpLane { lane: 0 }),
                self.access(false, self.own(0, c.entries)?),
            ),
            (_, Some(r)) => (
                self.access(true, self.own(r.first, r.shared)?),
                self.access(false, self.segments(r.segment.max(1), r.shared)?),
            ),
        };
        // The first warp reduces what it read with a full-warp shuffle tree (or
        // `redux.sync`), which orders no memory: a later write to what a lane read needs a
        // barrier as any other does.
        let mut steps = vec![vec![share], vec![fold]];
        if c.broadcast {
            steps.extend(self.broadcast(c.slot(c.entries)));
        }
        Ok(steps)
    }

    fn scan(&self, algorithm: ScanAlgorithm) -> Result<Vec<Vec<Access>>, PlanError> {
        let c = self.c;
        let result = c.slot(c.entries);
        let mut steps = match (algorithm, c.raking) {
            (ScanAlgorithm::WarpScans, _) | (_, None) => {
                let count = c.entries.min(self.block.div_ceil(32));
                vec![
                    vec![self.access(true, Touch::WarpLane { lane: 31 })],
                    vec![self.access(false, Touch::AllPositions { count })],
                ]
            }
            (_, Some(r)) => {
                let segment = r.segment.max(1);
                let own = || self.own(0, self.block);
                let total = Touch::OneSlot {
                    thread: 31,
                    slot: result,
                };
                vec![
                    vec![self.access(true, own()?)],
                    // The first warp reads its segments, then writes each entry's prefix back
                    // and the total (lane 31), in one branch: one step.
                    vec![
                        self.access(false, self.segments(segment, self.block)?),
                        self.access(true, self.segments(segment, self.block)?),
                        self.access(true, total),
                    ],
                    vec![
                        self.access(false, own()?),
                        self.access(false, Touch::AllSlot { slot: result }),
                    ],
                ]
            }
        };
        if c.prefix_slot {
            steps.extend(self.broadcast(c.prefix_slot_index()));
        }
        Ok(steps)
    }

    fn neighbor(
        &self,
        kind: NeighborKind,
        shifted_out: bool,
    ) -> Result<Vec<Vec<Access>>, PlanError> {
        let block = self.block;
        let (shift, rotate) = match kind {
            NeighborKind::AdjacentLeft | NeighborKind::Heads | NeighborKind::ShiftUp => (-1, false),
            NeighborKind::AdjacentRight | NeighborKind::Tails | NeighborKind::ShiftDown => {
                (1, false)
            }
            NeighborKind::Offset(d) => (d as i64, false),
            NeighborKind::Rotate(d) => ((d as i64).rem_euclid(block.max(1) as i64), true),
        };
        let mut read = vec![self.access(false, Touch::Neighbor { shift, rotate })];
        if shifted_out {
            let edge = if kind == NeighborKind::ShiftUp {
                block.saturating_sub(1)
            } else {
                0
            };
            let slot = self.c.slot(edge);
            read.push(self.access(false, Touch::AllSlot { slot }));
        }
        Ok(vec![vec![self.access(true, self.own(0, block)?)], read])
    }

    fn scatter(&self, items: u32) -> Vec<Vec<Access>> {
        let c = self.c;
        // Each thread reads back (and first writes the hole value at) its result's positions.
        let back = |write: bool| {
            c.read_back.clone().map(|form| {
                self.access(
                    write,
                    Touch::Positions(Positions {
                        first: 0,
                        threads: self.block,
                        group: self.block.max(1),
                        region: 0,
                        form,
                        items,
                        below: None,
                    }),
                )
            })
        };
        let mut steps = Vec::new();
        if c.holes {
            steps.push(back(true).into_iter().collect());
        }
        let anywhere = Touch::Anywhere { count: c.entries };
        steps.push(vec![self.access(true, anywhere)]);
        steps.push(back(false).into_iter().collect());
        steps
    }
}

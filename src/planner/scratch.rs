//! Shared memory: exchanges, the shared memory of block collectives, slices by live range.
//! The barriers between their accesses are `barrier.rs`'s.
//!
//! Every op that moves a payload through shared memory does it as one or more *exchanges*: all
//! threads of an exchange group write their slots at positions of one arrangement (step `2j`),
//! then read them back at positions of another (step `2j + 1`). An op's exchanges are, in
//! order: the conversions the arrangement pass asked for, then its own algorithm's (a
//! transposing load or store). Steps are the only points where shared memory is touched, and
//! the only points where barriers may go.
//!
//! Invariants this pass establishes:
//! - every exchange has a slice; slices whose live ranges overlap never share bytes; an
//!   exchange's live range is its own step pair, so exchanges in sequence reuse one region
//!   (the kernel needs the largest, not the sum) — except in code that is not uniform across
//!   the block, where a block barrier cannot go: those exchanges get bytes of their own;
//!   shared arrays with a declaration of their own ([`super::shared`]) take no bytes of the
//!   window, the others are in it for the whole kernel;
//! - an exchange's groups are the smallest that both arrangements' striped groups tile; every
//!   thread of a group reaches the exchange: groups that cross or span warps (and time-sliced
//!   exchanges) only in code uniform across the block, groups inside a warp under conditions
//!   uniform across each group;
//! - a barrier stands before a step exactly when the step needs one: `barrier.rs` places them
//!   from who touches which byte at each step (`access.rs`);
//! - padding (one slot per 32 elements) is chosen where the layout algebra's bank-conflict
//!   count says it removes conflicts.

use super::arrangement::{Arrangements, of_algorithm};
use super::barrier::{self, Barrier};
use super::error::PlanError;
use super::ids::{IdVec, SliceId};
use super::shared::{self, ArrayHome, SharedLayout};
use crate::ir::ops::{Algorithm, ExchangeVia, OpKind, ReduceAlgorithm, ScanAlgorithm};
use crate::ir::verify::Uniformity;
use crate::ir::{Arrangement, ArrayId, DataId, Info, Ir, OpId, StorageId};
use crate::layout::{
    Arrangement as LArr, Layout, SmemTransform, arrangement_layout, arrangement_layout_with_warp,
    bank_conflicts_with, decompose,
};
use std::collections::{HashMap, HashSet};

/// A position map `(item, rank) -> position` inside an exchange group, from the arrangement's
/// layout: `position = item * item_stride + sum over terms of ((rank / divisor) % extent) *
/// stride`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PositionForm {
    /// Added per item.
    pub item_stride: u32,
    /// The digits of the rank: `(extent, divisor, stride)`, lowest first.
    pub thread_terms: Vec<(u32, u32, u32)>,
}

impl PositionForm {
    /// The form of an arrangement over an exchange group of `scope` threads with `items`
    /// items each, derived from its layout.
    pub fn of(a: Arrangement, scope: u32, items: u32) -> Option<PositionForm> {
        let layout = layout_of(a, scope, items)?;
        let d = decompose(&layout).ok()?;
        let item_stride = match d.item.terms() {
            [] => 0,
            [t] => u32::try_from(t.stride).ok()?,
            _ => return None,
        };
        let thread_terms = d
            .thread
            .terms()
            .iter()
            .map(|t| {
                Some((
                    u32::try_from(t.extent).ok()?,
                    u32::try_from(t.divisor).ok()?,
                    u32::try_from(t.stride).ok()?,
                ))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(PositionForm {
            item_stride,
            thread_terms,
        })
    }

    /// The rank's part of the position.
    pub fn thread_part(&self, rank: u32) -> u32 {
        self.thread_terms
            .iter()
            .map(|&(e, d, s)| (rank / d.max(1)) % e.max(1) * s)
            .sum()
    }

    /// The position of `(item, rank)`.
    pub fn position(&self, item: u32, rank: u32) -> u32 {
        item * self.item_stride + self.thread_part(rank)
    }
}

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
    /// Time-sliced: the groups (warps) take turns on one region; `Some(turns)`.
    pub turns: Option<u32>,
    /// The step of the first write (reads are the next step; a time-sliced exchange takes
    /// `2 * turns` steps).
    pub first_step: u8,
    /// Through shuffles within the group: no shared memory, no steps.
    pub via_shuffles: bool,
}

/// The slot of position `p` when one unused slot follows every `every` positions (`None`: no
/// padding). Exchanges and raking collectives pad this way; code generation evaluates the same
/// formula at run time.
pub(crate) fn padded_slot(p: u32, every: Option<u32>) -> u32 {
    every.map_or(p, |n| p + p / n.max(1))
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

    /// Steps this exchange takes.
    pub fn steps(&self) -> u8 {
        if self.via_shuffles {
            return 0;
        }
        2 * self.turns.unwrap_or(1).min(127) as u8
    }
}

/// A region of shared memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    /// What uses it (for `explain`).
    pub label: String,
    /// The op that uses it.
    pub op: OpId,
    /// Byte offset in the kernel's shared memory.
    pub offset: u32,
    /// Size in bytes.
    pub bytes: u32,
    /// Alignment in bytes.
    pub align: u32,
    /// Live range in program points (inclusive).
    pub live: (u32, u32),
}

/// The result of this pass.
#[derive(Debug, Clone, Default)]
pub struct Scratch {
    /// Per op, its exchanges in step order.
    pub exchanges: IdVec<OpId, Vec<ExchangePlan>>,
    /// The slices.
    pub slices: IdVec<SliceId, Slice>,
    /// The barriers.
    pub barriers: Vec<Barrier>,
    /// Shared bytes the kernel needs (static declarations and dynamic part).
    pub bytes: u32,
    /// Per shared array, its slice.
    pub arrays: IdVec<ArrayId, SliceId>,
    /// The declarations: arrays on their own or in the window, the window static or dynamic.
    pub shared: SharedLayout,
    /// Per op, the shared memory of a block-wide collective (a reduction).
    pub collectives: IdVec<OpId, Option<CollectivePlan>>,
}

/// Shared memory of a block-wide reduction: `entries` partials (step `f` writes them, `f + 1`
/// reads them), then, with `broadcast`, one result slot (`f + 2` writes it, `f + 3` reads it),
/// where `f` is `first_step`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectivePlan {
    /// The slice.
    pub slice: SliceId,
    /// Partials: one per warp, or one per thread for the raking algorithms.
    pub entries: u32,
    /// Bytes per value.
    pub elem_bytes: u32,
    /// Whether the result is shared with every thread.
    pub broadcast: bool,
    /// The step of the first write (after the op's conversions).
    pub first_step: u8,
    /// A raking scan: at step `f + 1` the first warp reads the entries and then writes each
    /// entry's prefix back (the same threads over the same entries), and the total to the slot
    /// after them, all inside one branch that only the first warp takes, so that no barrier
    /// can fall between the reads and the writes; every thread reads its entry and the total
    /// at `f + 3`. (Step `f + 2` is not used.)
    pub rake_back: bool,
    /// For a scatter: where each thread reads its slots back (the result's arrangement over
    /// the block, from its layout).
    pub(crate) read_back: Option<PositionForm>,
    /// For a scatter with a hole value: step `f` writes it at every position each thread
    /// reads back, the items go to their ranks at `f + 1` and are read back at `f + 2`
    /// (without: at `f` and `f + 1`).
    pub holes: bool,
    /// For the raking algorithms: the entries each lane of the first warp folds, in order
    /// (lane `l` takes entries `l * segment ..`); 0 otherwise.
    pub segment: u32,
    /// One unused slot follows every `segment` entries, so that the raking lanes' reads fall
    /// in different banks (chosen by the bank-conflict count of the writes and the reads).
    pub padded: bool,
    /// A scan with a prefix callback: rank 0 writes its prefix to the slot after the result
    /// slot (step `f + 4`) and every thread reads it (`f + 5`), so the whole group starts from
    /// rank 0's prefix.
    pub prefix_slot: bool,
}

impl CollectivePlan {
    /// Entries between two padding slots, if padded.
    pub fn padding(&self) -> Option<u32> {
        self.padded.then_some(self.segment.max(1))
    }

    /// The slot (in elements from the slice's start) of entry `e`; entry `entries` is the
    /// result slot after the entries.
    pub fn slot(&self, e: u32) -> u32 {
        padded_slot(e, self.padding())
    }

    /// The slot rank 0's prefix goes through (with `prefix_slot`).
    pub fn prefix_slot_index(&self) -> u32 {
        self.slot(self.entries) + 1
    }

    /// Slots from one raking segment's start to the next's.
    pub fn segment_stride(&self) -> u32 {
        self.segment + u32::from(self.padded)
    }
}

/// Whether one padding slot per raking segment lowers the bank conflicts of `writers` threads
/// writing one entry each in rank order and 32 lanes reading `segment` consecutive entries
/// each.
fn choose_segment_padding(writers: u32, segment: u32, elem_bytes: u32) -> bool {
    if segment < 2 {
        return false;
    }
    let layouts = [
        arrangement_layout(LArr::Blocked, writers, 1),
        arrangement_layout(LArr::Blocked, 32, segment),
    ];
    let Ok(layouts) = layouts.into_iter().collect::<Result<Vec<_>, _>>() else {
        return false;
    };
    let padded = SmemTransform::Pad {
        every: segment,
        pad: 1,
    };
    padding_pays(&layouts, elem_bytes, 32, padded)
}

/// Whether `padding` lowers the summed worst-case bank conflicts of `accesses` (layouts of
/// accesses by `lanes` threads to `bytes`-byte elements) below the unpadded count.
fn padding_pays(accesses: &[Layout], bytes: u32, lanes: u32, padding: SmemTransform) -> bool {
    let cost = |t: SmemTransform| -> Option<u32> {
        accesses
            .iter()
            .map(|l| {
                bank_conflicts_with(l, bytes, lanes, t)
                    .ok()
                    .map(|r| r.worst)
            })
            .sum()
    };
    matches!(
        (cost(SmemTransform::Identity), cost(padding)),
        (Some(plain), Some(padded)) if padded < plain
    )
}

/// The arrangement for the layout algebra: `(kind, threads)` over a group.
fn layout_of(a: Arrangement, scope: u32, items: u32) -> Option<Layout> {
    let (kind, threads) = match a {
        Arrangement::Blocked => (LArr::Blocked, scope),
        Arrangement::Striped { threads } => (LArr::Striped, threads),
    };
    if threads == scope {
        return arrangement_layout(kind, threads, items).ok();
    }
    // Several striped groups inside the scope: each a warp of `threads` lanes,
    // `(items, (threads, scope / threads)) : (threads, (1, threads * items))`.
    arrangement_layout_with_warp(LArr::WarpStriped, scope, items, threads).ok()
}

/// Whether padding lowers the bank conflicts of writing `from` and reading `to`.
fn choose_padding(from: Arrangement, to: Arrangement, scope: u32, items: u32, bytes: u32) -> bool {
    let layouts = [from, to].map(|a| layout_of(a, scope, items));
    let Some(layouts) = layouts.into_iter().collect::<Option<Vec<_>>>() else {
        return false;
    };
    padding_pays(
        &layouts,
        bytes,
        scope.min(32),
        SmemTransform::Pad { every: 32, pad: 1 },
    )
}

/// Threads of the groups an arrangement is striped over (1 for blocked).
pub(super) fn striped_threads(a: Arrangement) -> u32 {
    match a {
        Arrangement::Blocked => 1,
        Arrangement::Striped { threads } => threads,
    }
}

/// An exchange an op needs: the payload (for a conversion), from, to, time-slicing turns, and
/// whether it goes through shuffles.
type ExchangeRequest = (Option<DataId>, Arrangement, Arrangement, Option<u32>, bool);

/// Plans the exchanges, slices and barriers.
pub fn plan_scratch(ir: &Ir, info: &Info, arr: &Arrangements) -> Result<Scratch, PlanError> {
    let mut s = Scratch {
        exchanges: IdVec::filled(ir.ops.len(), Vec::new()),
        ..Scratch::default()
    };
    let block = ir.block_threads();
    // Exchanges per op, in step order.
    let mut order = Vec::new();
    ir.walk(|op, _| order.push(op));
    let enclosing = enclosing_uniformity(ir, info);
    let divergent: HashSet<OpId> = enclosing
        .iter()
        .filter(|&(_, &u)| !u.covers(block) && u < Uniformity::BLOCK)
        .map(|(op, _)| op)
        .collect();
    // The conversions of each op, in order.
    let mut conversions: HashMap<OpId, Vec<&super::arrangement::Conversion>> = HashMap::new();
    for c in &arr.conversions {
        conversions.entry(c.op).or_default().push(c);
    }
    let mut requests: Vec<(OpId, SliceId, u32, bool)> = Vec::new();
    let end = order.len() as u32 * 16 + 16;
    // Shared arrays live for the whole kernel: in declarations of their own (their slices
    // keep offset 0 there), or, past the static limit, in the window.
    let arrays: Vec<(u32, u32)> = ir
        .arrays
        .iter()
        .map(|a| {
            (
                a.len.saturating_mul(a.dtype.bytes()),
                a.dtype.bytes().max(4),
            )
        })
        .collect();
    // The dynamic array (at most one) lies at the end of the dynamic part, sized at launch:
    // the others are laid out without it.
    let dynamic = ir.arrays.iter().position(|a| a.dynamic);
    let statics: Vec<(u32, u32)> = (arrays.iter().enumerate())
        .filter(|&(i, _)| Some(i) != dynamic)
        .map(|(_, &a)| a)
        .collect();
    let mut homes = shared::array_homes(&statics);
    if let Some(i) = dynamic {
        homes.insert(i, ArrayHome::Dynamic);
    }
    for (i, &(bytes, align)) in arrays.iter().enumerate() {
        let slice = s.slices.push(Slice {
            label: format!("shared array smem{i}"),
            op: OpId(0),
            offset: 0,
            bytes,
            align,
            live: (0, end),
        });
        s.arrays.push(slice);
        if homes[i] == ArrayHome::Window {
            requests.push((OpId(0), slice, 0, true));
        }
    }
    // Temp storages: one slice each, live from their first user to their last.
    let mut storage_slices: IdVec<StorageId, Option<SliceId>> =
        IdVec::filled(ir.storages.len(), None);
    let mut storage_need: IdVec<StorageId, u32> = IdVec::filled(ir.storages.len(), 0);
    for (point, &op) in order.iter().enumerate() {
        let data = ir.op(op);
        let mut list: Vec<ExchangeRequest> = Vec::new();
        for c in conversions.get(&op).into_iter().flatten() {
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
            list.push((Some(c.data), c.from, c.to, turns, shuffles));
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
                    list.push((None, from, to, turns, false));
                }
            }
        }
        let mut step = 0u8;
        for (data_id, from, to, turns, via_shuffles) in list {
            let data_for = data_id.or(match &data.kind {
                OpKind::Load(t) | OpKind::Store(t) => Some(t.data),
                _ => None,
            });
            let Some(d) = data_for.and_then(|d| ir.datas.get(d.index())) else {
                continue;
            };
            let (items, elem_bytes) = (d.items, d.dtype.bytes());
            // The exchange groups: the smallest that both arrangements' groups tile.
            let scope = match turns {
                Some(_) => 32,
                None => lcm(striped_threads(from), striped_threads(to)),
            };
            if scope == 0 || !block.is_multiple_of(scope) {
                return Err(PlanError::Layout {
                    op,
                    loc: data.loc,
                    reason: format!(
                        "no exchange over groups of {scope} threads in a block of {block}"
                    ),
                });
            }
            // Groups inside one warp synchronize alone; others (and the turns of a
            // time-sliced exchange) need the block's barrier, which every thread must reach.
            let in_warps = turns.is_none() && within_warps(scope, block);
            let around = enclosing[op];
            if !in_warps && !around.covers(block) && around < Uniformity::BLOCK {
                return Err(PlanError::BlockExchangeInDivergentCode { op, loc: data.loc });
            }
            if in_warps && !covers_groups(around, scope, block) {
                return Err(PlanError::GroupExchangeInDivergentCode {
                    op,
                    loc: data.loc,
                    threads: scope,
                });
            }
            if via_shuffles && !in_warps {
                return Err(PlanError::Layout {
                    op,
                    loc: data.loc,
                    reason: format!(
                        "an exchange through shuffles needs groups inside one warp, not groups \
                         of {scope} threads in a block of {block}"
                    ),
                });
            }
            let padded = !via_shuffles && choose_padding(from, to, scope, items, elem_bytes);
            let elems = scope * items;
            let group_elems = if padded { elems + elems / 32 } else { elems };
            let groups = match turns {
                Some(_) => 1,
                None => block / scope.max(1),
            };
            let bytes = if via_shuffles {
                0
            } else {
                group_elems * groups * elem_bytes
            };
            let storage = match &data.kind {
                OpKind::Load(t) | OpKind::Store(t) if data_id.is_none() => t.storage,
                _ => None,
            };
            let at = point as u32 * 16 + s.exchanges[op].len() as u32;
            let slice = match storage {
                Some(st) => {
                    let decl = &ir.storages[st.index()];
                    if let Some(have) = decl.size
                        && bytes > have
                    {
                        return Err(PlanError::TempStorageTooSmall {
                            op,
                            loc: data.loc,
                            need: bytes,
                            have,
                        });
                    }
                    storage_need[st] = storage_need[st].max(bytes);
                    match storage_slices[st] {
                        Some(sl) => {
                            let live = &mut s.slices[sl].live;
                            live.0 = live.0.min(at);
                            live.1 = live.1.max(at);
                            sl
                        }
                        None => {
                            let sl = s.slices.push(Slice {
                                label: format!("temp storage {st}"),
                                op,
                                offset: 0,
                                bytes: decl.size.unwrap_or(0),
                                align: decl.align.unwrap_or(16).max(1),
                                live: (at, at),
                            });
                            storage_slices[st] = Some(sl);
                            sl
                        }
                    }
                }
                None => {
                    let slice = s.slices.push(Slice {
                        label: format!("{} exchange {:?} -> {:?}", data.kind.name(), from, to),
                        op,
                        offset: 0,
                        bytes,
                        align: 16,
                        live: (0, 0),
                    });
                    requests.push((op, slice, at, divergent.contains(&op)));
                    slice
                }
            };
            let forms =
                PositionForm::of(from, scope, items).zip(PositionForm::of(to, scope, items));
            let Some((write, read)) = forms else {
                return Err(PlanError::Layout {
                    op,
                    loc: data.loc,
                    reason: format!("{from:?} -> {to:?} over {scope} threads x {items} items"),
                });
            };
            let e = ExchangePlan {
                data: data_id,
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
                turns,
                first_step: step,
                via_shuffles,
            };
            step = step.saturating_add(e.steps());
            s.exchanges[op].push(e);
        }
    }
    s.collectives = IdVec::filled(ir.ops.len(), None);
    for (point, &op) in order.iter().enumerate() {
        let data = ir.op(op);
        // One shared value per warp, or per thread.
        let (group, src, per_thread, broadcast, label) = match &data.kind {
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
            _ => continue,
        };
        let threads = ir.group_threads(group);
        let is_scatter = matches!(data.kind, OpKind::Scatter { .. });
        if threads <= 32 && !is_scatter {
            continue;
        }
        let elem_bytes = ir.datas[src.index()].dtype.bytes();
        let entries = if is_scatter {
            // The whole tile.
            threads * ir.datas[src.index()].items
        } else if per_thread {
            threads
        } else {
            threads.div_ceil(32)
        };
        // Raking: lane `l` of the first warp folds `segment` entries from `l * segment` (with
        // commutative-only raking, the first warp's own values are not shared).
        let (segment, writers) = match &data.kind {
            OpKind::Reduce(r) if r.algorithm == ReduceAlgorithm::RakingCommutativeOnly => {
                let shared = threads.saturating_sub(32);
                (shared.div_ceil(32), shared)
            }
            OpKind::Reduce(r) if r.algorithm == ReduceAlgorithm::Raking => {
                (threads.div_ceil(32), threads)
            }
            OpKind::Scan(sc) if sc.algorithm != ScanAlgorithm::WarpScans => {
                (threads.div_ceil(32), threads)
            }
            _ => (0, 0),
        };
        let padded = choose_segment_padding(writers, segment, elem_bytes);
        let prefix_slot = matches!(&data.kind, OpKind::Scan(sc) if sc.callback.is_some());
        // The entries, the result slot, and rank 0's prefix.
        let slots = padded_slot(entries, padded.then_some(segment)) + 1 + u32::from(prefix_slot);
        let slice = s.slices.push(Slice {
            label: format!("{label} partials"),
            op,
            offset: 0,
            bytes: slots * elem_bytes,
            align: 16,
            live: (0, 0),
        });
        requests.push((op, slice, point as u32 * 16 + 8, divergent.contains(&op)));
        let first_step = s.exchanges[op].iter().map(|e| e.steps()).sum();
        let rake_back =
            matches!(&data.kind, OpKind::Scan(sc) if sc.algorithm != ScanAlgorithm::WarpScans);
        let read_back = match &data.kind {
            OpKind::Scatter { to, .. } => {
                let items = ir.datas[src.index()].items;
                Some(
                    PositionForm::of(*to, threads, items).ok_or_else(|| PlanError::Layout {
                        op,
                        loc: data.loc,
                        reason: format!("{to:?} over {threads} threads x {items} items"),
                    })?,
                )
            }
            _ => None,
        };
        s.collectives[op] = Some(CollectivePlan {
            slice,
            entries,
            elem_bytes,
            broadcast,
            first_step,
            rake_back,
            read_back,
            holes: matches!(&data.kind, OpKind::Scatter { holes: Some(_), .. }),
            segment,
            padded,
            prefix_slot,
        });
    }
    for (st, sl) in storage_slices.iter() {
        if let Some(sl) = *sl {
            let slice = &mut s.slices[sl];
            if ir.storages[st.index()].size.is_none() {
                slice.bytes = storage_need[st];
            }
            requests.push((slice.op, sl, slice.live.0, false));
        }
    }
    requests.sort_by_key(|r| r.2);
    allocate(&mut s, &requests, end, &storage_slices);
    let window_align = requests
        .iter()
        .map(|r| s.slices[r.1].align)
        .max()
        .unwrap_or(16);
    s.shared = shared::layout(homes, &arrays, s.bytes, window_align);
    s.bytes = s.shared.total_bytes();
    // Uses of a storage without auto-sync are ordered by the user, not by planned barriers;
    // another storage that shares its bytes is still ordered against it.
    let mut manual: IdVec<SliceId, bool> = IdVec::filled(s.slices.len(), false);
    for (st, sl) in storage_slices.iter() {
        if let Some(sl) = *sl {
            manual[sl] = !ir.storages[st.index()].auto_sync;
        }
    }
    s.barriers = barrier::place(ir, &s, &manual);
    Ok(s)
}

/// Offsets by live range: lowest aligned offset that overlaps no placed slice whose range
/// overlaps. Exchanges in divergent code live for the whole kernel.
///
/// Requests come in order of their first point, so a placed slice whose range ended before a
/// request's start overlaps no later request but those that live for the whole kernel: the
/// others look only at the slices still live, which keeps the pass about linear in the number
/// of slices.
fn allocate(
    s: &mut Scratch,
    requests: &[(OpId, SliceId, u32, bool)],
    end: u32,
    storages: &IdVec<StorageId, Option<SliceId>>,
) {
    let mut is_storage: IdVec<SliceId, bool> = IdVec::filled(s.slices.len(), false);
    for &sl in storages.values().flatten() {
        is_storage[sl] = true;
    }
    let mut placed: Vec<SliceId> = Vec::new();
    // The placed slices live at or after the last request's start.
    let mut live_now: Vec<SliceId> = Vec::new();
    for &(_, slice, point, exclusive) in requests {
        let live = if exclusive {
            (0, end)
        } else if is_storage[slice] {
            s.slices[slice].live
        } else {
            (point, point)
        };
        s.slices[slice].live = live;
        let (bytes, align) = (s.slices[slice].bytes, s.slices[slice].align.max(1));
        let candidates = if exclusive {
            &placed
        } else {
            live_now.retain(|&i| s.slices[i].live.1 >= live.0);
            &live_now
        };
        let mut busy: Vec<(u32, u32)> = candidates
            .iter()
            .map(|&i| &s.slices[i])
            .filter(|o| o.live.0 <= live.1 && live.0 <= o.live.1)
            .map(|o| (o.offset, o.offset.saturating_add(o.bytes)))
            .collect();
        busy.sort();
        // Sums past 4 GiB saturate: such a kernel needs more shared memory than any device
        // has, which compiling it reports.
        let mut offset = 0u32;
        for (lo, hi) in busy {
            if offset.saturating_add(bytes) <= lo {
                break;
            }
            offset = offset.max(hi.div_ceil(align).saturating_mul(align));
        }
        s.slices[slice].offset = offset;
        s.bytes = s.bytes.max(offset.saturating_add(bytes));
        placed.push(slice);
        live_now.push(slice);
    }
}

/// Per op, how uniform every condition and loop around it is, and the early exits that may
/// have run before it: the verifier's finding ([`Uniformity::GRID`] for an op under none).
fn enclosing_uniformity(ir: &Ir, info: &Info) -> IdVec<OpId, Uniformity> {
    let mut out = info.control.clone();
    out.resize(ir.ops.len(), Uniformity::THREAD);
    IdVec::from(out)
}

/// Whether aligned groups of `scope` threads (dividing `block`) lie inside one warp each.
fn within_warps(scope: u32, block: u32) -> bool {
    scope <= 32 && (32 % scope == 0 || block <= 32)
}

/// Whether a value of uniformity `u` agrees across each aligned group of `scope` threads of a
/// block of `block` (runs of `u` threads agree, `u` a power of two or block-wide).
fn covers_groups(u: Uniformity, scope: u32, block: u32) -> bool {
    u.covers(block) || u >= Uniformity::BLOCK || (u.0 >= scope && u.0.is_multiple_of(scope))
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The least common multiple (saturating; 0 if either is 0): the threads of the smallest
/// exchange groups that groups of `a` and of `b` threads both tile.
pub(super) fn lcm(a: u32, b: u32) -> u32 {
    if a == 0 || b == 0 {
        return 0;
    }
    (a / gcd(a, b)).saturating_mul(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn position_forms_come_from_layouts() {
        let blocked = PositionForm::of(Arrangement::Blocked, 64, 4).expect("form");
        let striped = PositionForm::of(Arrangement::Striped { threads: 64 }, 64, 4).expect("form");
        let warps = PositionForm::of(Arrangement::Striped { threads: 32 }, 64, 4).expect("form");
        for r in 0..64 {
            for i in 0..4 {
                assert_eq!(blocked.position(i, r), r * 4 + i);
                assert_eq!(striped.position(i, r), i * 64 + r);
                assert_eq!(warps.position(i, r), (r / 32) * 128 + i * 32 + r % 32);
            }
        }
    }
}

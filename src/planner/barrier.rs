//! Barriers: where shared-memory steps need one, and which threads it synchronizes.
//!
//! Invariants this pass establishes (over the exchanges and collectives `scratch.rs` planned):
//! - a barrier stands before a step exactly when that step touches a byte that another thread
//!   touched since the last barrier between the two on some path, one of the two accesses
//!   writing (loops are walked twice, so accesses of the previous iteration count). Who
//!   touches which byte at each step comes from `access.rs`, exact for every exchange
//!   and collective (a scatter's run-time positions count as touched by every thread), so
//!   program order alone orders accesses of one thread. The barrier is `bar.warp.sync` over
//!   aligned groups (an exchange's groups within a warp, else warps) when every conflicting
//!   pair of threads lies in one group, else `bar.sync`; a group barrier orders everything
//!   before it within its groups, other ops' accesses included;
//! - a step may touch several ranges (a raking scan reads each thread's entry and the total at
//!   one step); a barrier before it orders everything before the step against all of them;
//! - the walk that places barriers takes time about linear in the program: each region's walk
//!   is remembered by the accesses pending before it (each kept once) and the barriers inside
//!   it, so a loop nest walks no body `2^depth` times, and regions touching no shared memory are
//!   not walked at all.

use super::access::{self, Owners};
use super::ids::{IdVec, SliceId};
use super::scratch::Scratch;
use crate::ir::ops::OpKind;
use crate::ir::{Ir, OpId, RegionId};
use std::collections::{HashMap, HashSet};

/// Which threads a barrier synchronizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncScope {
    /// `bar.sync 0`: the whole block.
    Block,
    /// `bar.warp.sync` over each group of `threads` lanes (1..=32).
    Group {
        /// Threads per group.
        threads: u32,
    },
}

/// What a barrier prevents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hazard {
    /// A read of bytes another thread wrote.
    ReadAfterWrite,
    /// A write over bytes another thread may still read.
    WriteAfterRead,
    /// A write over bytes another thread wrote.
    WriteAfterWrite,
}

/// A barrier before step `step` of `op`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Barrier {
    /// The op.
    pub op: OpId,
    /// The step it precedes.
    pub step: u8,
    /// Which threads it synchronizes.
    pub scope: SyncScope,
    /// The earlier access it orders against (op, step).
    pub after: (OpId, u8),
    /// The kind of conflict.
    pub hazard: Hazard,
}

/// The barriers the exchanges and collectives of `s` need, in the order they were placed.
/// `manual[slice]`: whether a slice is temp storage without auto-sync, whose users the user
/// orders.
pub(super) fn place(ir: &Ir, s: &Scratch, manual: &IdVec<SliceId, bool>) -> Vec<Barrier> {
    Barriers::new(ir, s, manual).run()
}

#[derive(Debug, Clone, Copy)]
struct Access {
    /// Which of the kernel's accesses this is: every field but `synced` follows from it.
    id: u32,
    at: (OpId, u8),
    write: bool,
    /// Which thread touches which byte (an index into the distinct maps): two accesses
    /// conflict where a byte both touch is touched by two different threads.
    map: u32,
    /// The bytes the map covers.
    lo: u32,
    hi: u32,
    /// The widest aligned groups a barrier at this step may synchronize alone (0: only the
    /// block): the exchange groups of an exchange within warps, else warps.
    group: u32,
    /// While pending: later accesses by threads in the same aligned group of this many
    /// threads are ordered after this one (a group barrier or warp collective since; 0: none).
    synced: u32,
    /// The slice of the temp storage without auto-sync the access is to: the user orders
    /// that storage's users, not another's (which may share its bytes).
    manual: Option<SliceId>,
}

/// Two copies of one access are equal when they are ordered alike (the same `synced`).
impl PartialEq for Access {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && self.synced == other.synced
    }
}

impl Eq for Access {}

impl std::hash::Hash for Access {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        h.write_u32(self.id);
        h.write_u32(self.synced);
    }
}

struct Barriers<'a> {
    ir: &'a Ir,
    steps: Vec<Vec<Access>>,
    /// The distinct byte maps of the accesses.
    maps: Vec<Owners>,
}

impl<'a> Barriers<'a> {
    fn new(ir: &'a Ir, s: &Scratch, manual: &IdVec<SliceId, bool>) -> Self {
        let block = ir.block_threads();
        // Warps synchronize alone where every warp of the block is whole, or in a block of
        // one (partial) warp.
        let warps = if block.is_multiple_of(32) || block < 32 {
            block.min(32)
        } else {
            0
        };
        let mut steps = vec![Vec::new(); ir.ops.len()];
        let mut count = 0u32;
        let mut next_id = || {
            count += 1;
            count
        };
        // One copy of each distinct byte map: equal maps share a number, so the walk decides
        // each pair of maps once.
        let mut maps: Vec<Owners> = Vec::new();
        let mut numbers: HashMap<Owners, u32, FastHash> = HashMap::default();
        let mut intern = |o: Owners| -> (u32, u32, u32) {
            let (lo, hi) = (o.lo(), o.hi());
            let n = *numbers.entry(o).or_insert_with_key(|o| {
                maps.push(o.clone());
                maps.len() as u32 - 1
            });
            (n, lo, hi)
        };
        for (op, list) in s.exchanges.iter() {
            for e in list.iter().filter(|e| !e.via_shuffles) {
                let sl = &s.slices[e.slice];
                // Exchange groups within a warp synchronize alone (with a mask of the lanes
                // they have); groups across warps need the block.
                let group = if e.scope >= 32 {
                    warps
                } else if 32 % e.scope == 0 || block <= 32 {
                    e.scope.min(block)
                } else {
                    0
                };
                for turn in 0..e.turns.unwrap_or(1) {
                    for write in [true, false] {
                        let step = e.first_step + 2 * turn as u8 + if write { 0 } else { 1 };
                        let turn = e.turns.map(|_| turn);
                        let (map, lo, hi) =
                            intern(access::exchange_side(e, sl, block, write, turn));
                        steps[op.index()].push(Access {
                            id: next_id(),
                            map,
                            lo,
                            hi,
                            manual: manual
                                .get(e.slice)
                                .copied()
                                .unwrap_or(false)
                                .then_some(e.slice),
                            at: (op, step),
                            write,
                            group,
                            synced: 0,
                        });
                    }
                }
            }
        }
        for (op, c) in s.collectives.iter() {
            let Some(c) = c else { continue };
            let sl = &s.slices[c.slice];
            let kind = &ir.op(op).kind;
            let items = match kind {
                OpKind::Scatter { src, .. } => ir.datas[src.index()].items,
                _ => 1,
            };
            for st in access::collective_steps(kind, c, sl, block, items) {
                let (map, lo, hi) = intern(st.owners);
                steps[op.index()].push(Access {
                    id: next_id(),
                    map,
                    lo,
                    hi,
                    manual: None,
                    at: (op, st.step),
                    write: st.write,
                    group: warps,
                    synced: st.synced,
                });
            }
        }
        Barriers { ir, steps, maps }
    }

    fn run(self) -> Vec<Barrier> {
        let nesting = regions_info(self.ir, &self.steps);
        let mut walk = Walk {
            ir: self.ir,
            steps: &self.steps,
            maps: &self.maps,
            version: vec![0; self.ir.regions.len()],
            nesting,
            placed: Vec::new(),
            placed_at: HashMap::new(),
            walked: HashMap::default(),
            conflicts: HashMap::default(),
            jumps: Vec::new(),
        };
        let mut pending = Vec::new();
        walk.region(self.ir.body, &mut pending);
        walk.placed
    }
}

/// Which regions touch shared memory or synchronize the block, themselves or in a region
/// nested in them (walking any other region leaves the pending accesses as they are); the
/// region holding each op; and the region holding each region's op.
fn regions_info(ir: &Ir, steps: &[Vec<Access>]) -> Nesting {
    let mut active = vec![false; ir.regions.len()];
    let mut holder = vec![None; ir.ops.len()];
    let mut outer = vec![None; ir.regions.len()];
    // Every region comes after the one holding it in this order, so walking it backwards
    // decides nested regions first.
    let mut order = Vec::with_capacity(ir.regions.len());
    let mut stack = vec![ir.body];
    while let Some(r) = stack.pop() {
        order.push(r);
        for &op in ir.region(r) {
            holder[op.index()] = Some(r);
            for sub in ir.op(op).kind.regions() {
                outer[sub.index()] = Some(r);
                stack.push(sub);
            }
        }
    }
    for &r in order.iter().rev() {
        active[r.index()] = ir.region(r).iter().any(|&op| {
            let kind = &ir.op(op).kind;
            matches!(kind, OpKind::SyncBlock | OpKind::Break | OpKind::Continue)
                || !steps[op.index()].is_empty()
                || kind.regions().iter().any(|sub| active[sub.index()])
        });
    }
    Nesting {
        active,
        holder,
        outer,
    }
}

/// What [`regions_info`] finds.
struct Nesting {
    active: Vec<bool>,
    holder: Vec<Option<RegionId>>,
    outer: Vec<Option<RegionId>>,
}

/// Keeps the last copy of each access. The walk reads pending accesses only by value (which
/// conflict, which is the last conflicting one, which to drop), so earlier copies of an access
/// change nothing; dropping them keeps the list as short as the distinct accesses.
fn dedup(list: &mut Vec<Access>) {
    if list.len() < 2 {
        return;
    }
    let mut seen = HashSet::with_capacity_and_hasher(list.len(), FastHash::default());
    let mut kept: Vec<Access> = list
        .iter()
        .rev()
        .filter(|a| seen.insert(**a))
        .copied()
        .collect();
    kept.reverse();
    *list = kept;
}

/// The walk in program order that places barriers: the accesses since the last barrier on some
/// path are pending, and an access that conflicts with one gets a barrier before it.
struct Walk<'a> {
    ir: &'a Ir,
    steps: &'a [Vec<Access>],
    /// The accesses' byte maps.
    maps: &'a [Owners],
    nesting: Nesting,
    placed: Vec<Barrier>,
    /// Where each placed barrier stands: its index in `placed` by (op, step).
    placed_at: HashMap<(OpId, u8), usize>,
    /// Per region, bumped whenever a barrier inside it (or in a region nested in it) is placed
    /// or widened.
    version: Vec<u64>,
    /// A region's walk is a function of the region, the pending accesses and the barriers
    /// placed inside it: the result of each walk that placed nothing, by (region, version,
    /// pending). Loops walk their bodies twice, so nested loops would walk the innermost body
    /// `2^depth` times; with this, every distinct walk runs once.
    /// With each, what it left at the loop's exit and head (`break_` and `continue_`).
    walked: HashMap<WalkKey, (Vec<Access>, Jumped), FastHash>,
    /// Per loop being walked, innermost last: the accesses pending at its `break_`s and
    /// `continue_`s, which reach its exit and its head.
    jumps: Vec<Jumped>,
    /// How a later access conflicts with an earlier one, by (earlier byte map, its `synced`,
    /// later byte map, its group): the maps are compared once per pair however often loops
    /// and ops bring it back.
    conflicts: HashMap<(u32, u32, u32, u32), Option<bool>, FastHash>,
}

/// A region's walk: the region, its version and the accesses pending before it.
type WalkKey = (RegionId, u64, Vec<Access>);

/// The accesses pending at a loop's `break_`s and at its `continue_`s.
#[derive(Debug, Clone, Default)]
struct Jumped {
    breaks: Vec<Access>,
    continues: Vec<Access>,
}

impl Jumped {
    fn extend(&mut self, o: &Jumped) {
        self.breaks.extend_from_slice(&o.breaks);
        self.continues.extend_from_slice(&o.continues);
        dedup(&mut self.breaks);
        dedup(&mut self.continues);
    }
}

/// A multiply-rotate hasher (as rustc's `FxHasher`) for the walk's keys: lists of accesses,
/// hashed field by field, where SipHash's per-write cost would dominate planning. Not
/// resistant to chosen collisions, which only cost time here.
#[derive(Default, Clone, Copy)]
struct Fx(u64);

impl std::hash::Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u8(&mut self, v: u8) {
        self.write_u64(u64::from(v));
    }

    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
}

type FastHash = std::hash::BuildHasherDefault<Fx>;

impl Walk<'_> {
    fn region(&mut self, r: RegionId, pending: &mut Vec<Access>) {
        if !self.nesting.active[r.index()] {
            return;
        }
        let key = (r, self.version[r.index()], pending.clone());
        if let Some((after, jumped)) = self.walked.get(&key) {
            pending.clone_from(after);
            if let Some(top) = self.jumps.last_mut() {
                top.extend(jumped);
            }
            return;
        }
        // What this walk adds at the enclosing loop's exit and head, apart from before.
        let before = self.jumps.last_mut().map(std::mem::take);
        for &op in self.ir.region(r) {
            self.op(op, pending);
        }
        let jumped = match (self.jumps.last_mut(), before) {
            (Some(top), Some(before)) => {
                let mine = std::mem::replace(top, before);
                top.extend(&mine);
                mine
            }
            _ => Jumped::default(),
        };
        if self.version[r.index()] == key.1 {
            self.walked.insert(key, (pending.clone(), jumped));
        }
    }

    /// Records that the barriers inside the regions around `op` changed.
    fn changed(&mut self, op: OpId) {
        let mut r = self.nesting.holder[op.index()];
        while let Some(region) = r {
            self.version[region.index()] += 1;
            r = self.nesting.outer[region.index()];
        }
    }

    fn op(&mut self, op: OpId, pending: &mut Vec<Access>) {
        if matches!(self.ir.op(op).kind, OpKind::SyncBlock) {
            pending.clear();
            return;
        }
        for &a in &self.steps[op.index()] {
            self.access(a, pending);
        }
        match &self.ir.op(op).kind {
            OpKind::If {
                then, otherwise, ..
            } => {
                let mut a = pending.clone();
                self.region(*then, &mut a);
                let mut b = pending.clone();
                if let Some(o) = otherwise {
                    self.region(*o, &mut b);
                }
                *pending = a;
                pending.extend(b);
                dedup(pending);
            }
            OpKind::For { body, .. } | OpKind::While { body, .. } | OpKind::Tiles { body, .. } => {
                // Twice: the second walk sees the previous iteration's accesses (from the
                // body's end or a `continue_`). After the loop, either no iteration ran or
                // the last one did, or a `break_` left it.
                self.jumps.push(Jumped::default());
                let mut inner = pending.clone();
                self.region(*body, &mut inner);
                if let Some(top) = self.jumps.last_mut() {
                    inner.append(&mut top.continues);
                    dedup(&mut inner);
                }
                self.region(*body, &mut inner);
                let jumped = self.jumps.pop().unwrap_or_default();
                pending.extend(inner);
                pending.extend(jumped.breaks);
                pending.extend(jumped.continues);
                dedup(pending);
            }
            OpKind::Break | OpKind::Continue => {
                if let Some(top) = self.jumps.last_mut() {
                    let to = match self.ir.op(op).kind {
                        OpKind::Break => &mut top.breaks,
                        _ => &mut top.continues,
                    };
                    to.extend_from_slice(pending);
                    dedup(to);
                }
            }
            // A scan's prefix callback runs after the scan's shared-memory steps.
            other => {
                for r in other.regions() {
                    self.region(r, pending);
                }
            }
        }
    }

    fn access(&mut self, a: Access, pending: &mut Vec<Access>) {
        // A barrier already placed before this step (by an earlier access of the step, or an
        // earlier walk of a loop body) runs every time.
        if let Some(&i) = self.placed_at.get(&a.at) {
            let scope = self.placed[i].scope;
            ordered(pending, &a, scope);
        }
        let mut first = None;
        let mut local = true;
        for p in pending.iter() {
            if p.lo >= a.hi
                || a.lo >= p.hi
                || !(p.write || a.write)
                || p.at == a.at
                || (p.manual.is_some() && p.manual == a.manual && p.at.0 != a.at.0)
            {
                continue;
            }
            let conflict = *self
                .conflicts
                .entry((p.map, p.synced, a.map, a.group))
                .or_insert_with(|| {
                    self.maps[p.map as usize].conflict(
                        &self.maps[a.map as usize],
                        p.synced,
                        a.group,
                    )
                });
            if let Some(within) = conflict {
                local &= within;
                first = Some((p.at, p.write));
            }
        }
        if let Some((after, earlier_write)) = first {
            let scope = if local {
                SyncScope::Group { threads: a.group }
            } else {
                SyncScope::Block
            };
            let hazard = match (earlier_write, a.write) {
                (true, false) => Hazard::ReadAfterWrite,
                (false, true) => Hazard::WriteAfterRead,
                _ => Hazard::WriteAfterWrite,
            };
            let b = Barrier {
                op: a.at.0,
                step: a.at.1,
                scope,
                after,
                hazard,
            };
            let scope = match self.placed_at.get(&a.at) {
                Some(&i) => {
                    let existing = &mut self.placed[i];
                    if scope == SyncScope::Block && existing.scope != SyncScope::Block {
                        existing.scope = SyncScope::Block;
                        self.changed(a.at.0);
                    }
                    self.placed[i].scope
                }
                None => {
                    self.placed_at.insert(a.at, self.placed.len());
                    self.placed.push(b);
                    self.changed(a.at.0);
                    scope
                }
            };
            ordered(pending, &a, scope);
        }
        pending.retain(|p| *p != a);
        pending.push(a);
    }
}

/// What a barrier of `scope` before `a`'s step orders: a block barrier every access before the
/// step (which leaves `pending`), a group barrier each one's later accesses by threads of the
/// same group. Accesses of the step itself come after the barrier and stay: a step may touch
/// several ranges (a raking scan reads each thread's entry and the total at one step), and a
/// later op must still see them.
fn ordered(pending: &mut Vec<Access>, a: &Access, scope: SyncScope) {
    match scope {
        SyncScope::Block => pending.retain(|p| p.at == a.at),
        SyncScope::Group { threads } => {
            for p in pending.iter_mut().filter(|p| p.at != a.at) {
                p.synced = p.synced.max(threads);
            }
        }
    }
}

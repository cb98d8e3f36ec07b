//! Barriers: where shared-memory steps need one, and which threads it synchronizes.
//!
//! The pass reads the plan's steps ([`super::Step`]) and the IR's control flow, nothing else
//! about shared memory. Invariants it establishes:
//! - a barrier stands before a step exactly when that step touches a byte that another thread
//!   touched since the last barrier between the two on some path, one of the two accesses
//!   writing (loops are walked twice, so accesses of the previous iteration count). Who
//!   touches which byte at each access comes from the steps (`access.rs` turns each into a
//!   byte map), exact for every exchange and collective (a scatter's run-time positions count
//!   as touched by every thread), so program order alone orders accesses of one thread. The
//!   barrier takes the first of the step's scopes that spans every conflicting pair of
//!   threads ([`SyncScope`]: `bar.warp.sync` over aligned groups, else `bar.sync`); a barrier
//!   orders everything before it within its groups, other ops' accesses included;
//! - a step may touch several ranges (a raking scan reads each thread's entry and the total at
//!   one step); a barrier before it orders everything before the step against all of them;
//! - accesses to a temp storage without auto-sync are not ordered against each other (the
//!   user orders them), only against other slices' that share their bytes;
//! - the walk that places barriers takes time about linear in the program: each region's walk
//!   is remembered by the accesses pending before it (each kept once) and the barriers inside
//!   it, so a loop nest walks no body `2^depth` times, and regions touching no shared memory are
//!   not walked at all.

use super::access::{self, Owners};
use super::alloc::Slice;
use super::ids::{IdVec, SliceId, StepId};
use super::schedule::Step;
use super::scope::SyncScope;
use crate::ir::ops::OpKind;
use crate::ir::{Ir, OpId, RegionId};
use rustc_hash::{FxHashMap, FxHashSet};

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

/// A barrier before a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Barrier {
    /// The step it precedes.
    pub step: StepId,
    /// Which threads it synchronizes.
    pub scope: SyncScope,
    /// The step of the earlier access it orders against.
    pub after: StepId,
    /// The kind of conflict.
    pub hazard: Hazard,
}

/// The barriers the steps of every op need (`slices`: where their slices lie), in the order
/// they were placed.
pub(super) fn place(
    ir: &Ir,
    steps: &IdVec<OpId, Vec<Step>>,
    slices: &IdVec<SliceId, Slice>,
) -> Vec<Barrier> {
    Barriers::new(ir, steps, slices).run()
}

#[derive(Debug, Clone, Copy)]
struct Access {
    /// Which of the kernel's accesses this is: every field but `ordered` follows from it.
    id: u32,
    at: StepId,
    write: bool,
    /// Which thread touches which byte (an index into the distinct maps): two accesses
    /// conflict where a byte both touch is touched by two different threads.
    map: u32,
    /// The bytes the map covers.
    lo: u32,
    hi: u32,
    /// The scopes a barrier before its step may take (an index into the distinct lists).
    scopes: u32,
    /// While pending: later accesses by threads in one group of this scope are ordered after
    /// this one (a group barrier since).
    ordered: Option<SyncScope>,
    /// The slice of the temp storage without auto-sync the access is to: the user orders
    /// that storage's users, not another's (which may share its bytes).
    manual: Option<SliceId>,
}

/// Two copies of one access are equal when they are ordered alike (the same `ordered`).
impl PartialEq for Access {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && self.ordered == other.ordered
    }
}

impl Eq for Access {}

impl std::hash::Hash for Access {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        h.write_u32(self.id);
        std::hash::Hash::hash(&self.ordered, h);
    }
}

struct Barriers<'a> {
    ir: &'a Ir,
    steps: IdVec<OpId, Vec<Access>>,
    /// The distinct byte maps of the accesses.
    maps: Vec<Owners>,
    /// The distinct lists of scopes of the steps.
    scopes: Vec<Vec<SyncScope>>,
}

impl<'a> Barriers<'a> {
    fn new(ir: &'a Ir, plan: &IdVec<OpId, Vec<Step>>, slices: &IdVec<SliceId, Slice>) -> Self {
        let block = ir.block_threads();
        let mut steps = IdVec::filled(ir.ops.len(), Vec::new());
        let mut count = 0u32;
        // One copy of each distinct byte map: equal maps share a number, so the walk decides
        // each pair of maps once.
        let mut maps: Vec<Owners> = Vec::new();
        let mut numbers: FxHashMap<Owners, u32> = FxHashMap::default();
        let mut scopes: Vec<Vec<SyncScope>> = Vec::new();
        // Every map in units every access touches whole: a tile of 4-byte items is mapped a
        // word an entry.
        let unit = access::unit(
            (plan.iter())
                .flat_map(|(_, list)| list)
                .flat_map(|step| &step.accesses)
                .filter_map(|a| Some((a, slices.get(a.slice)?))),
        );
        for (op, list) in plan.iter() {
            for step in list {
                let ladder = match scopes.iter().position(|l| *l == step.scopes) {
                    Some(i) => i,
                    None => {
                        scopes.push(step.scopes.clone());
                        scopes.len() - 1
                    }
                } as u32;
                for a in &step.accesses {
                    let Some(slice) = slices.get(a.slice) else {
                        continue;
                    };
                    let o = access::owners(a, slice, block, unit);
                    let (lo, hi) = (o.lo(), o.hi());
                    let map = *numbers.entry(o).or_insert_with_key(|o| {
                        maps.push(o.clone());
                        maps.len() as u32 - 1
                    });
                    count += 1;
                    steps[op].push(Access {
                        id: count,
                        map,
                        lo,
                        hi,
                        manual: slice.user_ordered.then_some(a.slice),
                        at: step.id,
                        write: a.write,
                        scopes: ladder,
                        ordered: None,
                    });
                }
            }
        }
        Barriers {
            ir,
            steps,
            maps,
            scopes,
        }
    }

    fn run(self) -> Vec<Barrier> {
        let nesting = regions_info(self.ir, &self.steps);
        let mut walk = Walk {
            ir: self.ir,
            steps: &self.steps,
            maps: &self.maps,
            scopes: &self.scopes,
            version: vec![0; self.ir.regions.len()],
            nesting,
            placed: Vec::new(),
            placed_at: FxHashMap::default(),
            walked: FxHashMap::default(),
            conflicts: FxHashMap::default(),
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
fn regions_info(ir: &Ir, steps: &IdVec<OpId, Vec<Access>>) -> Nesting {
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
            matches!(
                kind,
                OpKind::SyncBlock | OpKind::SyncGrid | OpKind::Break | OpKind::Continue
            ) || !steps[op].is_empty()
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
    let mut seen = FxHashSet::with_capacity_and_hasher(list.len(), Default::default());
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
    steps: &'a IdVec<OpId, Vec<Access>>,
    /// The accesses' byte maps.
    maps: &'a [Owners],
    /// The steps' lists of scopes.
    scopes: &'a [Vec<SyncScope>],
    nesting: Nesting,
    placed: Vec<Barrier>,
    /// Where each placed barrier stands: its index in `placed` by step.
    placed_at: FxHashMap<StepId, usize>,
    /// Per region, bumped whenever a barrier inside it (or in a region nested in it) is placed
    /// or widened.
    version: Vec<u64>,
    /// A region's walk is a function of the region, the pending accesses and the barriers
    /// placed inside it: the result of each walk that placed nothing, by (region, version,
    /// pending). Loops walk their bodies twice, so nested loops would walk the innermost body
    /// `2^depth` times; with this, every distinct walk runs once.
    /// With each, what it left at the loop's exit and head (`break_` and `continue_`).
    walked: FxHashMap<WalkKey, (Vec<Access>, Jumped)>,
    /// Per loop being walked, innermost last: the accesses pending at its `break_`s and
    /// `continue_`s, which reach its exit and its head.
    jumps: Vec<Jumped>,
    /// How a later access conflicts with an earlier one, by (earlier byte map, its
    /// `ordered`, later byte map, its scopes): the maps are compared once per pair however
    /// often loops and ops bring it back.
    conflicts: FxHashMap<ConflictKey, Option<usize>>,
}

/// A region's walk: the region, its version and the accesses pending before it.
type WalkKey = (RegionId, u64, Vec<Access>);

/// A pair of accesses compared: the earlier's byte map and `ordered`, the later's byte map
/// and scopes.
type ConflictKey = (u32, Option<SyncScope>, u32, u32);

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
        if matches!(self.ir.op(op).kind, OpKind::SyncBlock | OpKind::SyncGrid) {
            pending.clear();
            return;
        }
        for &a in &self.steps[op] {
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
        let scopes = &self.scopes[a.scopes as usize];
        let mut first = None;
        let mut need = 0usize;
        for p in pending.iter() {
            if p.lo >= a.hi
                || a.lo >= p.hi
                || !(p.write || a.write)
                || p.at == a.at
                || (p.manual.is_some() && p.manual == a.manual && p.at.op != a.at.op)
            {
                continue;
            }
            let conflict = *self
                .conflicts
                .entry((p.map, p.ordered, a.map, a.scopes))
                .or_insert_with(|| {
                    self.maps[p.map as usize].conflict(
                        &self.maps[a.map as usize],
                        p.ordered,
                        scopes,
                    )
                });
            if let Some(k) = conflict {
                need = need.max(k);
                first = Some((p.at, p.write));
            }
        }
        if let Some((after, earlier_write)) = first
            && let Some(&scope) = scopes.get(need)
        {
            let hazard = match (earlier_write, a.write) {
                (true, false) => Hazard::ReadAfterWrite,
                (false, true) => Hazard::WriteAfterRead,
                _ => Hazard::WriteAfterWrite,
            };
            let scope = match self.placed_at.get(&a.at) {
                Some(&i) => {
                    // The step's scopes each cover the one before: the wider one serves both.
                    let existing = &mut self.placed[i];
                    if !existing.scope.covers(scope) {
                        existing.scope = scope;
                        self.changed(a.at.op);
                    }
                    self.placed[i].scope
                }
                None => {
                    self.placed_at.insert(a.at, self.placed.len());
                    self.placed.push(Barrier {
                        step: a.at,
                        scope,
                        after,
                        hazard,
                    });
                    self.changed(a.at.op);
                    scope
                }
            };
            ordered(pending, &a, scope);
        }
        pending.retain(|p| *p != a);
        pending.push(a);
    }
}

/// What a barrier of `scope` before `a`'s step orders: every access before the step within
/// each of its groups; those it orders against every thread (a block barrier's) leave
/// `pending`. Accesses of the step itself come after the barrier and stay: a step may touch
/// several ranges (a raking scan reads each thread's entry and the total at one step), and a
/// later op must still see them.
fn ordered(pending: &mut Vec<Access>, a: &Access, scope: SyncScope) {
    pending.retain_mut(|p| {
        if p.at == a.at {
            return true;
        }
        let now = p.ordered.map_or(scope, |o| o.join(scope));
        p.ordered = Some(now);
        !now.covers(SyncScope::Block)
    });
}

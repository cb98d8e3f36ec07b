//! Cluster ops in the interpreter: barriers order the block's own accesses as a block
//! barrier does and mark where each block's shared arrays are snapshotted; a remote read
//! gives the element of the other block's array as it stood at that block's barrier of the
//! same number (the first pass records the snapshots, the second reads them).
//!
//! Remote writes and atomics land at the target block's next cluster barrier: the first pass
//! records each (by target and barrier), and the second applies them there, in any order: a
//! set of plain writes of one value, or of atomics of one commutative family, gives one
//! result; anything else leaves the element unspecified. The value an atomic returns depends
//! on the order, so it is unspecified.
//!
//! This models what the generator makes: remote reads after a cluster barrier, of arrays no
//! block writes between that barrier and the reads; remote writes and atomics between two
//! cluster barriers into elements their target block leaves alone between them.

use super::atomic;
use super::value::{UNSPEC, V};
use super::{Block, Event};
use coopgraph::ir::ops::{AtomicOp, ClusterOp};
use coopgraph::ir::{DType, OpId};
use std::collections::HashMap;

/// Shared arrays' values by (block, cluster barriers passed).
pub type Snapshots = HashMap<(u32, u32), Vec<Vec<V>>>;

/// A remote write (`op: None`) or atomic bound for element `index` of array `array`.
#[derive(Debug, Clone, Copy)]
pub struct Push {
    array: usize,
    index: usize,
    op: Option<AtomicOp>,
    dtype: DType,
    v: V,
}

/// What one pass saw of remote accesses.
#[derive(Debug, Clone, Default)]
pub struct Record {
    snapshots: Snapshots,
    /// Remote writes and atomics by (target block, the target's cluster barrier they land at).
    pushes: HashMap<(u32, u32), Vec<Push>>,
}

impl Block<'_> {
    pub(super) fn cluster(&mut self, op: OpId, c: &ClusterOp, active: &[bool]) {
        if c.array()
            .is_some_and(|a| self.ir.arrays[a.index()].view_of.is_some())
        {
            // Not modelled (the generator makes no remote access through a view).
            self.event(Event::Uncertain { op });
            return;
        }
        match c {
            ClusterOp::Sync | ClusterOp::Wait => {
                self.epoch += 1;
                self.cluster_barriers += 1;
                self.land_pushes();
                let arrays = (self.arrays.iter())
                    .map(|a| a.iter().map(|c| c.v).collect())
                    .collect();
                (self.out.cluster.snapshots).insert((self.b, self.cluster_barriers), arrays);
            }
            ClusterOp::Arrive => {}
            ClusterOp::Read {
                array,
                rank,
                index,
                dst,
            } => {
                for t in 0..self.threads {
                    if !active[t] {
                        continue;
                    }
                    let (r, i) = self.rank_and_index(*rank, *index, t);
                    let v = match self.target(op, array.index(), r, i) {
                        Some((b, i)) => self.remote(array.index(), b, i),
                        None => V::with(0, UNSPEC),
                    };
                    self.set(*dst, t, 0, v);
                }
            }
            ClusterOp::Write {
                array,
                rank,
                index,
                value,
            } => self.push_all(op, (array.index(), *rank, *index, *value), None, active),
            ClusterOp::Atomic {
                array,
                op: aop,
                rank,
                index,
                value,
                compare,
                old,
                ..
            } => {
                let what = (array.index(), *rank, *index, *value);
                // Only commutative updates without a compare value are followed.
                let aop = (compare.is_none()).then_some(*aop);
                self.push_all(op, what, Some(aop), active);
                for t in (0..self.threads).filter(|&t| active[t]) {
                    self.set(*old, t, 0, V::with(0, UNSPEC));
                }
            }
        }
    }

    fn rank_and_index(
        &mut self,
        rank: coopgraph::ir::ExprId,
        index: coopgraph::ir::ExprId,
        t: usize,
    ) -> (V, V) {
        let r = self.eval(rank, self.cx(t));
        let i = self.eval(index, self.cx(t));
        self.check_defined(r, "a cluster rank");
        self.check_defined(i, "a shared-array index");
        (r, i)
    }

    /// Each active thread's remote write (`atomic: None`) or atomic, recorded for its target.
    fn push_all(
        &mut self,
        op: OpId,
        (array, rank, index, value): (
            usize,
            coopgraph::ir::ExprId,
            coopgraph::ir::ExprId,
            coopgraph::ir::ExprId,
        ),
        atomic: Option<Option<AtomicOp>>,
        active: &[bool],
    ) {
        let dtype = self.ir.arrays[array].dtype;
        for t in (0..self.threads).filter(|&t| active[t]) {
            let (r, i) = self.rank_and_index(rank, index, t);
            let v = self.eval(value, self.cx(t));
            let Some((b, index)) = self.target(op, array, r, i) else {
                continue;
            };
            // An atomic the interpreter does not follow (a compare-and-swap) poisons the
            // element like conflicting writes do.
            let (op, v) = match atomic {
                None => (None, v),
                Some(Some(a)) => (Some(a), v),
                Some(None) => (Some(AtomicOp::Cas), V::with(0, UNSPEC)),
            };
            let push = Push {
                array,
                index,
                op,
                dtype,
                v,
            };
            let key = (b, self.cluster_barriers + 1);
            self.out.cluster.pushes.entry(key).or_default().push(push);
        }
    }

    /// At a cluster barrier: what other blocks wrote into this block's arrays before it
    /// (as the first pass recorded it).
    fn land_pushes(&mut self) {
        let seen = self.out.cluster_seen.as_ref();
        let Some(pushes) = seen.and_then(|s| s.pushes.get(&(self.b, self.cluster_barriers))) else {
            return;
        };
        let mut by_cell: HashMap<(usize, usize), Vec<Push>> = HashMap::new();
        for p in pushes {
            by_cell.entry((p.array, p.index)).or_default().push(*p);
        }
        for ((a, i), ps) in by_cell {
            let old = self.arrays[a][i].v;
            let new = landed(old, &ps);
            let cell = &mut self.arrays[a][i];
            cell.set(new);
            cell.writer = None;
            cell.reader = None;
        }
    }

    /// The block (linear index) and element a remote access of array `a` at cluster rank `r`
    /// and index `i` reaches, or `None` (an out-of-bounds event where either is past its end).
    fn target(&mut self, op: OpId, a: usize, r: V, i: V) -> Option<(u32, usize)> {
        if !r.known() || !i.known() {
            return None;
        }
        let dims = self.cluster_dims();
        let n = u64::from(dims.iter().product::<u32>());
        let len = self.arrays[a].len() as u64;
        if r.bits >= n || i.bits >= len {
            self.event(Event::SharedOob {
                op,
                array: a,
                index: i.bits,
            });
            return None;
        }
        let r = r.bits as u32;
        let [cx, cy, _] = dims;
        let at = [
            self.at[0] - self.at[0] % dims[0] + r % cx,
            self.at[1] - self.at[1] % dims[1] + r / cx % cy,
            self.at[2] - self.at[2] % dims[2] + r / (cx * cy),
        ];
        let [gx, gy, _] = self.launch.grid;
        Some((at[0] + gx * (at[1] + gy * at[2]), i.bits as usize))
    }

    /// Element `i` of array `a` in block `b`, at the barrier this block last passed.
    fn remote(&self, a: usize, b: u32, i: usize) -> V {
        let seen = self.out.cluster_seen.as_ref();
        match seen.and_then(|s| s.snapshots.get(&(b, self.cluster_barriers))) {
            Some(arrays) => arrays[a][i],
            None => V::with(0, UNSPEC),
        }
    }

    /// The cluster shape: the kernel's own, or the launch's.
    pub(super) fn cluster_dims(&self) -> [u32; 3] {
        match self.ir.cluster {
            None => [1, 1, 1],
            Some(c) => (c.dims.or(self.launch.cluster)).unwrap_or([1, 1, 1]),
        }
    }
}

/// An element after the pushes `ps` landed on `old`: plain writes of one known value, or
/// atomics of one commutative family folded in any order; else unspecified.
fn landed(old: V, ps: &[Push]) -> V {
    let unspec = V::with(0, UNSPEC);
    if ps.iter().any(|p| !p.v.known()) {
        return unspec;
    }
    if ps.iter().all(|p| p.op.is_none()) {
        let first = ps[0].v.bits;
        return if ps.iter().all(|p| p.v.bits == first) {
            ps[0].v
        } else {
            unspec
        };
    }
    let Some(a) = ps[0].op else {
        return unspec;
    };
    let dt = ps[0].dtype;
    let family = atomic::family(a, dt);
    let commute = family.is_some()
        && ps
            .iter()
            .all(|p| p.op.and_then(|o| atomic::family(o, dt)) == family);
    if !commute || !old.known() || (dt.is_float() && a != AtomicOp::Min && a != AtomicOp::Max) {
        return unspec;
    }
    let bits = ps.iter().fold(old.bits, |acc, p| {
        atomic::apply(p.op.unwrap_or(a), dt, true, acc, p.v.bits, 0)
    });
    V::exact(bits)
}

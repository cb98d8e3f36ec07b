//! Cluster ops in the interpreter: barriers order the block's own accesses as a block
//! barrier does and mark where each block's shared arrays are snapshotted; a remote read
//! gives the element of the other block's array as it stood at that block's barrier of the
//! same number (the first pass records the snapshots, the second reads them).
//!
//! This models what the generator makes: remote reads after a cluster barrier, of arrays no
//! block writes between that barrier and the reads. Remote writes and atomics change another
//! block's array while it runs, which one block at a time cannot follow: they make the case
//! uncertain.

use super::value::{UNSPEC, V};
use super::{Block, Event};
use coopgraph::ir::OpId;
use coopgraph::ir::ops::ClusterOp;
use std::collections::HashMap;

/// Shared arrays' values by (block, cluster barriers passed).
pub type Snapshots = HashMap<(u32, u32), Vec<Vec<V>>>;

impl Block<'_> {
    pub(super) fn cluster(&mut self, op: OpId, c: &ClusterOp, active: &[bool]) {
        match c {
            ClusterOp::Sync | ClusterOp::Wait => {
                self.epoch += 1;
                self.cluster_barriers += 1;
                let arrays = (self.arrays.iter())
                    .map(|a| a.iter().map(|c| c.v).collect())
                    .collect();
                self.out
                    .snapshots
                    .insert((self.b, self.cluster_barriers), arrays);
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
                    let r = self.eval(*rank, self.cx(t));
                    let i = self.eval(*index, self.cx(t));
                    self.check_defined(r, "a cluster rank");
                    self.check_defined(i, "a shared-array index");
                    let v = self.remote(op, array.index(), r, i);
                    self.set(*dst, t, 0, v);
                }
            }
            ClusterOp::Write { .. } | ClusterOp::Atomic { .. } => {
                self.event(Event::Uncertain { op });
            }
        }
    }

    /// The cluster shape: the kernel's own, or the launch's.
    pub(super) fn cluster_dims(&self) -> [u32; 3] {
        match self.ir.cluster {
            None => [1, 1, 1],
            Some(c) => (c.dims.or(self.launch.cluster)).unwrap_or([1, 1, 1]),
        }
    }

    /// Element `i` of array `a` in the block of cluster rank `r`, at the barrier this block
    /// last passed.
    fn remote(&mut self, op: OpId, a: usize, r: V, i: V) -> V {
        if !r.known() || !i.known() {
            return V::with(0, UNSPEC);
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
            return V::with(0, UNSPEC);
        }
        let r = r.bits as u32;
        let [cx, cy, _] = dims;
        let at = [
            self.at[0] - self.at[0] % dims[0] + r % cx,
            self.at[1] - self.at[1] % dims[1] + r / cx % cy,
            self.at[2] - self.at[2] % dims[2] + r / (cx * cy),
        ];
        let [gx, gy, _] = self.launch.grid;
        let b = at[0] + gx * (at[1] + gy * at[2]);
        let seen = self.out.snapshots_seen.as_ref();
        match seen.and_then(|s| s.get(&(b, self.cluster_barriers))) {
            Some(arrays) => arrays[a][i.bits as usize],
            None => V::with(0, UNSPEC),
        }
    }
}

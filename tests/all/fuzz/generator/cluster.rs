//! Clusters: some kernels run in thread-block clusters and end with a cluster barrier and a
//! read of the next block's copy of a shared array (distributed shared memory), written to
//! an output of its own.

use super::{Gen, Param};
use crate::fuzz::types::{Fz, with_dtype};
use coopgraph::KernelBuilder;
use coopgraph::ir::Atomic;
use coopgraph::ir::ops::OpKind;
use coopgraph::ir::{Element, Ir, index};

/// The cluster a kernel of `blocks` blocks (1-D) may run in: the most blocks of 4, 2 and 1
/// that divide the grid.
pub(super) fn cluster_size(blocks: u32) -> u32 {
    [4, 2, 1]
        .into_iter()
        .find(|c| blocks.is_multiple_of(*c))
        .unwrap_or(1)
}

/// The cluster shape a launch of `grid` blocks gives a kernel built with
/// `cluster_at_launch` (`None` for every other kernel): the one [`cluster_size`] picks.
pub fn launch_cluster(ir: &Ir, grid: [u32; 3]) -> Option<[u32; 3]> {
    let at_launch = ir.cluster.is_some_and(|c| c.dims.is_none());
    at_launch.then(|| [cluster_size(grid[0]), 1, 1])
}

/// Whether a kernel may end with the cluster tail: no early exit (the kernel ends with a
/// cluster barrier every thread must reach) and no grid barrier.
pub(super) fn cluster_fits(g: &Gen, k: &KernelBuilder) -> bool {
    let ir = k.ir();
    !g.exited
        && !(ir.ops.iter()).any(|op| matches!(op.kind, OpKind::ReturnIf { .. } | OpKind::SyncGrid))
}

impl Gen {
    /// The tail: a cluster barrier, then each thread reads an element some thread wrote of
    /// the next block's (cluster rank + 1, wrapping) copy of a ready shared array (or of a
    /// new one, each thread writing its own element before the barrier), into a new output at
    /// its grid rank.
    pub(super) fn cluster_tail(&mut self, k: &mut KernelBuilder, cluster: u32) {
        if self.rng.pct(35) {
            return self.cluster_push_tail(k, cluster);
        }
        let ready: Vec<usize> = (0..self.arrays.len())
            .filter(|&i| {
                let a = &self.arrays[i];
                a.ready && a.len > 0 && a.pattern.2 > 0
            })
            .collect();
        let pick = if ready.is_empty() || self.rng.pct(40) {
            self.fresh_array(k)
        } else {
            ready[self.rng.below(ready.len() as u64) as usize]
        };
        let (dt, len, (a, b, writers)) = {
            let info = &self.arrays[pick];
            (info.dt, info.len, info.pattern)
        };
        k.sync_cluster();
        let rank = k.this_cluster().block_rank();
        let w = index::thread_rank() % writers.min(self.t);
        let element = (w * a + b) % len;
        with_dtype!(dt, T => {
            let Some(array) = T::of_array(&self.arrays[pick].h) else {
                return;
            };
            let next = k.map_shared_rank(&array, (rank + 1u32) % cluster);
            let v = k.remote_read(&next, element);
            let name = self.name("y");
            let y = k.output::<T>(&name);
            let threads = self.blocks() * self.t;
            self.params.push(Param::Output { dtype: T::DTYPE, len: Some(u64::from(threads)) });
            k.write(&y, self.grid_rank(), v);
        });
    }

    /// The other tail: a new `u32` array, each thread setting its own element; a cluster
    /// barrier; each thread writes (or updates atomically: add, max or or) an element of the
    /// next block's copy (cluster rank + 1, wrapping); a cluster barrier; each thread reads
    /// its own block's element into a new output at its grid rank.
    fn cluster_push_tail(&mut self, k: &mut KernelBuilder, cluster: u32) {
        let pick = self.fresh_array(k);
        let a = u32::of_array(&self.arrays[pick].h).expect("a u32 array");
        // Not ready for other reads: other blocks write it from here on.
        self.arrays[pick].ready = false;
        k.sync_cluster();
        let me = index::thread_rank();
        let next = k.map_shared_rank(&a, (k.this_cluster().block_rank() + 1u32) % cluster);
        let v = self.grid_rank() * (1 + 2 * self.rng.below(50) as u32) + 1u32;
        match self.rng.below(4) {
            0 => k.remote_write(&next, &me, v),
            kind => {
                // Several threads to one element: thread t to element t % m.
                let m = 1 + self.rng.below(u64::from(self.t)) as u32;
                let op = match kind {
                    1 => Atomic::add(v),
                    2 => Atomic::max(v),
                    _ => Atomic::or(v),
                };
                let _old = k.remote_atomic(&next, me.clone() % m, op);
            }
        }
        k.sync_cluster();
        let name = self.name("y");
        let y = k.output::<u32>(&name);
        let threads = self.blocks() * self.t;
        self.params.push(Param::Output {
            dtype: coopgraph::ir::DType::U32,
            len: Some(u64::from(threads)),
        });
        k.write(&y, self.grid_rank(), a.read(&me));
    }

    /// A new `u32` shared array of one element per thread, each thread writing its own
    /// (a value of its grid rank); its index.
    fn fresh_array(&mut self, k: &mut KernelBuilder) -> usize {
        let t = self.t;
        let a = k.shared_array::<u32>(t);
        let salt = 1 + 2 * self.rng.below(1000) as u32;
        let me = index::thread_rank();
        k.shared_write(&a, &me, self.grid_rank() * salt + 3u32);
        self.arrays.push(super::ArrInfo {
            h: u32::array(a),
            dt: coopgraph::ir::DType::U32,
            len: t,
            pattern: (1, 0, t),
            past_end: 0,
            ready: true,
            nd: None,
            view: None,
            full: false,
        });
        self.arrays.len() - 1
    }
}

//! Thread-block clusters (sm_90): the cluster shape (`.reqnctapercluster`), the cluster
//! group's ranks and counts ([`Cluster`]), the cluster barrier, and distributed shared memory:
//! a shared array of another block of the cluster ([`RemoteShared`]), read, written and
//! updated atomically.

use super::{Atomic, KernelBuilder};
use crate::ir::dtype::{AtomicElement, Element};
use crate::ir::entities::Loc;
use crate::ir::expr::index::{self, Axis};
use crate::ir::expr::{Expr, ExprKind, IndexKind};
use crate::ir::handles::{ArrayIndex, SharedArray};
use crate::ir::ops::*;
use std::marker::PhantomData;

/// The group of the blocks of one thread-block cluster (Cooperative Groups'
/// `cluster_group`), from [`KernelBuilder::this_cluster`]: its ranks and counts as `u32`
/// expressions.
///
/// Clusters tile the grid: a cluster of `[cx, cy, cz]` blocks holds the blocks whose index
/// divided by the shape along each axis is the same. A block's rank in its cluster is
/// `x % cx + cx * (y % cy + cy * (z % cz))` over its block index (what PTX's
/// `%cluster_ctarank` reads), computed here from the block index and the kernel's static
/// cluster shape, or from the launch's (`%cluster_nctaid`) for a kernel built with
/// [`KernelBuilder::cluster_at_launch`].
///
/// ```
/// use coopgraph::ir::index;
/// use coopgraph::runtime::Device;
/// use coopgraph::KernelBuilder;
///
/// // Each block of clusters of 4 writes its rank in the cluster and the cluster's size.
/// let mut k = KernelBuilder::new("ranks").block(32).cluster(4);
/// let out = k.output::<u32>("out");
/// let c = k.this_cluster();
/// k.if_(index::thread_rank().eq(0u32), |k| {
///     k.write(&out, index::block_index(), c.block_rank() * 10u32 + c.num_blocks());
/// });
/// let kernel = k.build()?;
///
/// let dev = Device::sim();
/// let mut ob = dev.alloc_zeroed::<u32>(8)?;
/// dev.compile(&kernel)?.launch_grid(8, (&mut ob,))?;
/// assert_eq!(ob.to_vec()?, [4, 14, 24, 34, 4, 14, 24, 34]);
/// # Ok::<(), coopgraph::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cluster {
    /// The static shape; `None` when each launch gives it.
    dims: Option<[u32; 3]>,
    loc: Loc,
}

impl Cluster {
    /// Where [`KernelBuilder::this_cluster`] was called.
    pub fn loc(&self) -> Loc {
        self.loc
    }

    /// The cluster's extent in blocks along each axis, when the kernel fixes it (see
    /// [`Cluster`]); `None` for a kernel whose launches give it
    /// ([`KernelBuilder::cluster_at_launch`]: then [`dim`](Self::dim) reads it).
    pub fn dim_blocks(&self) -> Option<[u32; 3]> {
        self.dims
    }

    /// The cluster's extent in blocks along `axis`: a constant of a kernel that fixes its
    /// shape, else PTX `%cluster_nctaid` (the launch's shape).
    pub fn dim(&self, axis: Axis) -> Expr<u32> {
        match self.dims {
            Some(d) => Expr::from(d[axis.index()]),
            None => Expr::new(ExprKind::Index(IndexKind::ClusterDim(axis))),
        }
    }

    /// The block's index in its cluster along `axis` (PTX `%cluster_ctaid`): the block
    /// index modulo the cluster's extent (see [`Cluster`]).
    pub fn block_index(&self, axis: Axis) -> Expr<u32> {
        if self.dims.is_some_and(|d| d[axis.index()] == 1) {
            return Expr::from(0u32);
        }
        index::block_idx(axis) % self.dim(axis)
    }

    /// The block's rank in its cluster (PTX `%cluster_ctarank`), `x + cx * (y + cy * z)` over
    /// [`block_index`](Self::block_index) (see [`Cluster`]).
    pub fn block_rank(&self) -> Expr<u32> {
        let Some([cx, cy, cz]) = self.dims else {
            let (x, y, z) = (Axis::X, Axis::Y, Axis::Z);
            let yz = self.block_index(y) + self.block_index(z) * self.dim(y);
            return self.block_index(x) + yz * self.dim(x);
        };
        let mut rank = self.block_index(Axis::X);
        if cy > 1 {
            rank = rank + self.block_index(Axis::Y) * cx;
        }
        if cz > 1 {
            rank = rank + self.block_index(Axis::Z) * (cx * cy);
        }
        rank
    }

    /// The blocks of the cluster (PTX `%cluster_nctarank`; see [`Cluster`]).
    pub fn num_blocks(&self) -> Expr<u32> {
        match self.dims {
            Some(d) => Expr::from(d.iter().product::<u32>()),
            None => self.dim(Axis::X) * self.dim(Axis::Y) * self.dim(Axis::Z),
        }
    }

    /// The threads of the cluster: `num_blocks() * block threads`.
    pub fn num_threads(&self) -> Expr<u32> {
        self.num_blocks() * index::block_threads()
    }

    /// The thread's rank in its cluster: `block_rank() * block threads + thread rank`.
    pub fn thread_rank(&self) -> Expr<u32> {
        self.block_rank() * index::block_threads() + index::thread_rank()
    }
}

/// A shared array of another block of the cluster (distributed shared memory), from
/// [`KernelBuilder::map_shared_rank`]: the same declaration, in the block of cluster rank
/// `rank`. Read with [`KernelBuilder::remote_read`], written with
/// [`KernelBuilder::remote_write`], updated with [`KernelBuilder::remote_atomic`].
#[derive(Debug, Clone)]
pub struct RemoteShared<T: Element, const D: usize = 1> {
    array: SharedArray<T, D>,
    rank: Expr<u32>,
    _t: PhantomData<fn() -> T>,
}

impl<T: Element, const D: usize> RemoteShared<T, D> {
    /// The array (as the running block names it).
    pub fn array(&self) -> &SharedArray<T, D> {
        &self.array
    }

    /// The cluster rank of the block whose copy this is.
    pub fn rank(&self) -> &Expr<u32> {
        &self.rank
    }
}

impl KernelBuilder {
    /// Runs the kernel in thread-block clusters of `blocks` blocks along x (sm_90; PTX
    /// `.reqnctapercluster`, CUDA's `__cluster_dims__`): see
    /// [`cluster_dims`](Self::cluster_dims).
    #[track_caller]
    pub fn cluster(self, blocks: u32) -> Self {
        self.cluster_dims([blocks, 1, 1])
    }

    /// Runs the kernel in thread-block clusters of `[x, y, z]` blocks (sm_90). The blocks of
    /// a cluster run at once on one GPC, synchronize with
    /// [`sync_cluster`](Self::sync_cluster) and reach each other's shared arrays
    /// ([`map_shared_rank`](Self::map_shared_rank)).
    ///
    /// A cluster has at most [`MAX_CLUSTER_BLOCKS`] blocks (CUDA's portable size; the
    /// verifier reports more as [`VerifyErrorKind::ClusterSize`]), and each launch's grid must
    /// be a whole number of clusters along each axis
    /// ([`RuntimeError::ClusterGrid`](crate::runtime::RuntimeError::ClusterGrid) before
    /// launching). Emitting such a kernel for an arch below sm_90 is
    /// [`PlanError::ArchTooOld`](crate::planner::PlanError::ArchTooOld).
    ///
    /// The shape is the kernel's own (`.reqnctapercluster`, as CUDA's `__cluster_dims__`), so
    /// the runtime launches it as any kernel (`cuLaunchKernel`; the driver forms the clusters
    /// from the entry's shape). A grid barrier beside clusters is
    /// [`VerifyErrorKind::ClusterWithGridSync`]. A cluster of at most 8 blocks is CUDA's
    /// portable size, which every sm_90 device schedules;
    /// [`Function::max_active_clusters`](crate::runtime::Function::max_active_clusters) asks
    /// the driver how many fit at once. For a shape chosen per launch (up to 16 blocks), see
    /// [`cluster_at_launch`](Self::cluster_at_launch).
    ///
    /// [`VerifyErrorKind::ClusterSize`]: crate::ir::VerifyErrorKind::ClusterSize
    /// [`VerifyErrorKind::ClusterWithGridSync`]: crate::ir::VerifyErrorKind::ClusterWithGridSync
    ///
    /// ```
    /// use coopgraph::ptx::Arch;
    /// use coopgraph::planner::PlanError;
    /// use coopgraph::KernelBuilder;
    ///
    /// let mut k = KernelBuilder::new("pairs").block(64).cluster_dims([2, 1, 1]);
    /// k.sync_cluster();
    /// let kernel = k.build()?;
    /// assert!(kernel.ptx(Arch::Sm90)?.contains(".reqnctapercluster 2, 1, 1"));
    /// assert!(matches!(kernel.ptx(Arch::Sm80), Err(PlanError::ArchTooOld { .. })));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn cluster_dims(mut self, dims: [u32; 3]) -> Self {
        self.ir.cluster = Some(ClusterShape {
            dims: Some(dims),
            loc: Loc::caller(),
        });
        self
    }

    /// Runs the kernel in thread-block clusters whose shape each launch gives (sm_90; PTX
    /// `.explicitcluster`, CUDA's `cudaLaunchKernelEx` with the cluster-dimension attribute):
    /// one build serves every cluster shape, as a tuning loop over cluster sizes wants.
    /// Launch it with [`LaunchConfig::with_cluster`]; the runtime launches through
    /// `cuLaunchKernelEx` and allows up to 16 blocks per cluster (CUDA's non-portable sizes
    /// past 8 on sm_90), checks that the grid is a whole number of clusters
    /// ([`RuntimeError::ClusterGrid`]) and, on the GPU, that one cluster of that shape fits
    /// on the device at all ([`RuntimeError::ClusterTooLarge`], from
    /// `cuOccupancyMaxActiveClusters`). A launch that gives no shape is
    /// [`RuntimeError::ClusterShapeMissing`].
    ///
    /// [`Cluster`] then reads the shape from `%cluster_nctaid`, so ranks and counts cost a few
    /// instructions more than with a static shape ([`cluster_dims`](Self::cluster_dims)).
    ///
    /// [`LaunchConfig::with_cluster`]: crate::runtime::LaunchConfig::with_cluster
    /// [`RuntimeError::ClusterGrid`]: crate::runtime::RuntimeError::ClusterGrid
    /// [`RuntimeError::ClusterTooLarge`]: crate::runtime::RuntimeError::ClusterTooLarge
    /// [`RuntimeError::ClusterShapeMissing`]: crate::runtime::RuntimeError::ClusterShapeMissing
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::{Device, LaunchConfig};
    /// use coopgraph::KernelBuilder;
    ///
    /// // One build, launched in clusters of 2 and then of 4.
    /// let mut k = KernelBuilder::new("ranks").block(32).cluster_at_launch();
    /// let out = k.output::<u32>("out");
    /// let c = k.this_cluster();
    /// k.if_(index::thread_rank().eq(0u32), |k| {
    ///     k.write(&out, index::block_index(), c.block_rank() * 10u32 + c.num_blocks());
    /// });
    /// let f = Device::sim().compile(&k.build()?)?;
    /// let mut ob = f.device().alloc_zeroed::<u32>(4)?;
    /// f.launch(LaunchConfig::blocks(4).with_cluster([2, 1, 1]), (&mut ob,))?;
    /// assert_eq!(ob.to_vec()?, [2, 12, 2, 12]);
    /// f.launch(LaunchConfig::blocks(4).with_cluster([4, 1, 1]), (&mut ob,))?;
    /// assert_eq!(ob.to_vec()?, [4, 14, 24, 34]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn cluster_at_launch(mut self) -> Self {
        self.ir.cluster = Some(ClusterShape {
            dims: None,
            loc: Loc::caller(),
        });
        self
    }

    /// The group of the blocks of the running block's cluster ([`Cluster`]): its ranks and
    /// counts, from the cluster shape set so far (a kernel without one runs in clusters of
    /// one block).
    #[track_caller]
    pub fn this_cluster(&self) -> Cluster {
        Cluster {
            dims: self.ir.cluster.map_or(Some([1, 1, 1]), |c| c.dims),
            loc: Loc::caller(),
        }
    }

    /// A cluster barrier (Cooperative Groups' `this_cluster().sync()`, PTX
    /// `barrier.cluster.arrive` then `barrier.cluster.wait`): every thread of every block of
    /// the cluster waits until all have arrived; what any of them wrote to global memory or
    /// to the shared memory of any block of the cluster before it is visible to all after
    /// it.
    ///
    /// Every thread of the cluster must reach it: the verifier rejects one under a branch or
    /// loop whose condition may differ between the threads or blocks of a cluster (thread or
    /// block indices, a cluster rank), or after a `return_if` that may differ
    /// ([`VerifyErrorKind::NonUniformClusterSync`]); the simulator reports a block that exits
    /// while others wait ([`ParticipationProblem::ClusterBarrier`]).
    ///
    /// [`VerifyErrorKind::NonUniformClusterSync`]: crate::ir::VerifyErrorKind::NonUniformClusterSync
    /// [`ParticipationProblem::ClusterBarrier`]: crate::sim::ParticipationProblem::ClusterBarrier
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // Each block of a pair writes its thread ranks into its shared array; after the
    /// // cluster barrier each thread reads its partner block's element.
    /// let mut k = KernelBuilder::new("swap").block(40).cluster(2);
    /// let out = k.output::<u32>("out");
    /// let c = k.this_cluster();
    /// let t = index::thread_rank();
    /// let mine = k.shared_array::<u32>(40);
    /// k.shared_write(&mine, &t, t.clone() + c.block_rank() * 100u32);
    /// k.sync_cluster();
    /// let other = k.map_shared_rank(&mine, 1u32 - c.block_rank());
    /// let v = k.remote_read(&other, &t);
    /// k.write(&out, index::block_index() * 40u32 + t, v);
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut ob = dev.alloc_zeroed::<u32>(80)?;
    /// dev.compile(&kernel)?.launch_grid(2, (&mut ob,))?;
    /// let got = ob.to_vec()?;
    /// assert_eq!(got[0], 100);
    /// assert_eq!(got[40 + 3], 3);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn sync_cluster(&mut self) {
        self.push(OpKind::Cluster(ClusterOp::Sync), Loc::caller());
    }

    /// The arrive half of a split cluster barrier (`barrier.cluster.arrive`, release
    /// semantics): the thread's accesses before it are published to the cluster; work
    /// between it and [`cluster_wait`](Self::cluster_wait) overlaps the barrier. Each arrive
    /// must be followed by one wait on every path (the verifier checks the pairing:
    /// [`VerifyErrorKind::UnpairedClusterBarrier`]), at the same places
    /// [`sync_cluster`](Self::sync_cluster) may stand.
    ///
    /// [`VerifyErrorKind::UnpairedClusterBarrier`]: crate::ir::VerifyErrorKind::UnpairedClusterBarrier
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// let mut k = KernelBuilder::new("split").block(32).cluster(2);
    /// let out = k.output::<u32>("out");
    /// let c = k.this_cluster();
    /// let t = index::thread_rank();
    /// let a = k.shared_array::<u32>(32);
    /// k.shared_write(&a, &t, t.clone() * 2u32);
    /// k.cluster_arrive();
    /// let private = t.clone() + 1u32; // independent work overlaps the barrier
    /// k.cluster_wait();
    /// let other = k.map_shared_rank(&a, 1u32 - c.block_rank());
    /// let v = k.remote_read(&other, (t.clone() + 1u32) % 32u32) + private;
    /// k.write(&out, index::block_index() * 32u32 + t, v);
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut ob = dev.alloc_zeroed::<u32>(64)?;
    /// dev.compile(&kernel)?.launch_grid(2, (&mut ob,))?;
    /// assert_eq!(ob.to_vec()?[5], 6 * 2 + 6);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn cluster_arrive(&mut self) {
        self.push(OpKind::Cluster(ClusterOp::Arrive), Loc::caller());
    }

    /// The wait half of a split cluster barrier (`barrier.cluster.wait`, acquire semantics):
    /// see [`cluster_arrive`](Self::cluster_arrive).
    #[track_caller]
    pub fn cluster_wait(&mut self) {
        self.push(OpKind::Cluster(ClusterOp::Wait), Loc::caller());
    }

    /// The shared array `array` of the block of cluster rank `rank` (Cooperative Groups'
    /// `cluster.map_shared_rank`, PTX `mapa.shared::cluster`): distributed shared memory.
    /// `rank` is evaluated at each access.
    ///
    /// Accesses are checked as the block's own shared arrays are: an element or a rank
    /// outside the array or the cluster is out of bounds on the simulator; nothing guards
    /// them on the GPU. A block's shared memory is gone once it exits, so a kernel that
    /// accesses another block's array ends with a cluster barrier the code generator adds
    /// after the last op (every thread must reach it: a `return_if` in such a kernel is
    /// [`VerifyErrorKind::ExitWithRemoteShared`]). Accesses of two blocks to one element,
    /// at least one a write, must have a cluster barrier between them (the simulator reports
    /// a race otherwise).
    ///
    /// [`VerifyErrorKind::ExitWithRemoteShared`]: crate::ir::VerifyErrorKind::ExitWithRemoteShared
    ///
    /// ```
    /// use coopgraph::ir::{Atomic, index};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // Every thread of a cluster of 4 counts itself in rank 0's counter and writes its
    /// // rank into the next block's array.
    /// let mut k = KernelBuilder::new("count").block(33).cluster(4);
    /// let out = k.output::<u32>("out");
    /// let c = k.this_cluster();
    /// let t = index::thread_rank();
    /// let counter = k.shared_array::<u32>(1);
    /// let slots = k.shared_array::<u32>(33);
    /// k.if_(t.eq(0u32), |k| k.shared_write(&counter, 0u32, 0u32));
    /// k.sync_cluster();
    /// let first = k.map_shared_rank(&counter, 0u32);
    /// k.remote_atomic(&first, 0u32, Atomic::add(1u32));
    /// let next = k.map_shared_rank(&slots, (c.block_rank() + 1u32) % 4u32);
    /// k.remote_write(&next, &t, c.block_rank());
    /// k.sync_cluster();
    /// let b = index::block_index();
    /// k.write(&out, b.clone() * 34u32 + t.clone(), slots.read(&t));
    /// k.if_(t.eq(0u32), |k| k.write(&out, b * 34u32 + 33u32, counter.read(0u32)));
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut ob = dev.alloc_zeroed::<u32>(4 * 34)?;
    /// dev.compile(&kernel)?.launch_grid(4, (&mut ob,))?;
    /// let got = ob.to_vec()?;
    /// assert_eq!(got[33], 4 * 33); // rank 0 counted every thread of the cluster
    /// assert_eq!(got[34 + 5], 0); // block 1's slots were written by rank 0
    /// assert_eq!(got[5], 3); // block 0's by rank 3
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn map_shared_rank<T: Element, const D: usize>(
        &self,
        array: &SharedArray<T, D>,
        rank: impl Into<Expr<u32>>,
    ) -> RemoteShared<T, D> {
        RemoteShared {
            array: *array,
            rank: rank.into(),
            _t: PhantomData,
        }
    }

    /// Reads element `index` of another block's shared array (see
    /// [`map_shared_rank`](Self::map_shared_rank)): the value, as an expression of the
    /// thread that ran this.
    #[track_caller]
    pub fn remote_read<T: Element, const D: usize>(
        &mut self,
        remote: &RemoteShared<T, D>,
        index: impl ArrayIndex<D>,
    ) -> Expr<T> {
        let loc = Loc::caller();
        let array = self.array_id(&remote.array);
        let index = self.expr(&index.linear(&remote.array.dims));
        let rank = self.expr(&remote.rank);
        let dst = self.thread_data_n::<T>(1);
        let op = ClusterOp::Read {
            array,
            rank,
            index,
            dst: dst.id,
        };
        self.push(OpKind::Cluster(op), loc);
        self.item_expr(dst.id)
    }

    /// Writes element `index` of another block's shared array (see
    /// [`map_shared_rank`](Self::map_shared_rank)).
    #[track_caller]
    pub fn remote_write<T: Element, const D: usize>(
        &mut self,
        remote: &RemoteShared<T, D>,
        index: impl ArrayIndex<D>,
        value: impl Into<Expr<T>>,
    ) {
        let loc = Loc::caller();
        let array = self.array_id(&remote.array);
        let index = self.expr(&index.linear(&remote.array.dims));
        let rank = self.expr(&remote.rank);
        let value = self.expr(&value.into());
        let op = ClusterOp::Write {
            array,
            rank,
            index,
            value,
        };
        self.push(OpKind::Cluster(op), loc);
    }

    /// Updates element `index` of another block's shared array atomically, as `op` says
    /// (see [`Atomic`]), and returns the element's value before (see
    /// [`map_shared_rank`](Self::map_shared_rank) for an example). Atomics of any blocks on
    /// one element never race with one another.
    #[track_caller]
    pub fn remote_atomic<T: AtomicElement, const D: usize>(
        &mut self,
        remote: &RemoteShared<T, D>,
        index: impl ArrayIndex<D>,
        op: Atomic<T>,
    ) -> Expr<T> {
        let loc = Loc::caller();
        let array = self.array_id(&remote.array);
        let index = self.expr(&index.linear(&remote.array.dims));
        let rank = self.expr(&remote.rank);
        let (op, value, compare, order, scope) = op.into_parts();
        let value = self.expr(&value);
        let compare = compare.map(|c| self.expr(&c));
        let old = self.thread_data_n::<T>(1);
        let spec = ClusterOp::Atomic {
            array,
            op,
            rank,
            index,
            value,
            compare,
            order,
            scope,
            old: old.id,
        };
        self.push(OpKind::Cluster(spec), loc);
        self.item_expr(old.id)
    }

    /// The value of a one-item payload, as an expression.
    fn item_expr<T: Element>(&self, data: crate::ir::entities::DataId) -> Expr<T> {
        Expr::owned(ExprKind::Item { data, item: 0 }, self.lineage.id())
    }
}

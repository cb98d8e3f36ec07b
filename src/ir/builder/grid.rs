//! The grid group: every thread of every block of a launch (`this_grid`), its ranks and
//! counts as expressions, and the grid barrier (`sync_grid`), which makes a kernel
//! cooperative.

use super::KernelBuilder;
use crate::ir::entities::Loc;
use crate::ir::expr::Expr;
use crate::ir::expr::index::{self, Axis};
use crate::ir::ops::OpKind;

/// The group of every thread of every block of a launch (Cooperative Groups'
/// `grid_group`), from [`KernelBuilder::this_grid`].
///
/// Its ranks and counts are `u32` expressions, linear over the three axes as CUDA numbers
/// them (`x` fastest). A grid that synchronizes ([`KernelBuilder::sync_grid`]) is bounded by
/// the blocks that can be resident at once, far below `2^32` threads on every GPU, so the
/// 32-bit counts are exact there; in an ordinary launch of more than `u32::MAX` threads
/// they wrap, as [`index::grid`] does.
///
/// ```
/// use coopgraph::runtime::Device;
/// use coopgraph::KernelBuilder;
///
/// // Each thread writes its grid rank and the grid's thread count.
/// let mut k = KernelBuilder::new("ranks").block(48);
/// let out = k.output::<u32>("out");
/// let g = k.this_grid();
/// k.write(&out, g.thread_rank() * 2u32, g.block_rank());
/// k.write(&out, g.thread_rank() * 2u32 + 1u32, g.num_threads() + g.num_blocks());
/// let kernel = k.build()?;
///
/// let dev = Device::sim();
/// let mut ob = dev.alloc_zeroed::<u32>(2 * 3 * 48)?;
/// dev.compile(&kernel)?.launch_grid(3, (&mut ob,))?;
/// let got = ob.to_vec()?;
/// for r in 0..3 * 48 {
///     assert_eq!(got[2 * r], r as u32 / 48);
///     assert_eq!(got[2 * r + 1], 3 * 48 + 3);
/// }
/// # Ok::<(), coopgraph::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    loc: Loc,
}

impl Grid {
    /// Where [`KernelBuilder::this_grid`] was called.
    pub fn loc(&self) -> Loc {
        self.loc
    }

    /// The thread's rank in the grid: `block_rank() * block threads + thread rank in the
    /// block` (see [`Grid`] for an example).
    pub fn thread_rank(&self) -> Expr<u32> {
        self.block_rank() * index::block_threads() + index::thread_rank()
    }

    /// The grid's threads: `num_blocks() * block threads` (see [`Grid`]).
    pub fn num_threads(&self) -> Expr<u32> {
        self.num_blocks() * index::block_threads()
    }

    /// The block's linear rank in the grid: `x + gx * (y + gy * z)` over its `blockIdx`
    /// (just `blockIdx.x` where the kernel is launched on a 1-D grid; see [`Grid`]).
    pub fn block_rank(&self) -> Expr<u32> {
        let (gx, gy) = (index::grid_dim(Axis::X), index::grid_dim(Axis::Y));
        index::block_idx(Axis::X)
            + gx * (index::block_idx(Axis::Y) + gy * index::block_idx(Axis::Z))
    }

    /// The grid's blocks: the product of its extents (see [`Grid`]).
    pub fn num_blocks(&self) -> Expr<u32> {
        index::grid_dim(Axis::X) * index::grid_dim(Axis::Y) * index::grid_dim(Axis::Z)
    }
}

impl KernelBuilder {
    /// The group of every thread of the launch's grid: its ranks and counts
    /// ([`Grid`]), and its barrier, [`sync_grid`](Self::sync_grid).
    #[track_caller]
    pub fn this_grid(&self) -> Grid {
        Grid { loc: Loc::caller() }
    }

    /// A grid barrier (Cooperative Groups' `this_grid().sync()`): every thread of every block
    /// waits until all have arrived, and what any thread wrote to global memory before it is
    /// visible to every thread after it.
    ///
    /// A kernel with a grid barrier is *cooperative*: all its blocks must be resident at once,
    /// so the runtime launches it cooperatively and refuses a grid larger than the device can
    /// hold ([`RuntimeError::CooperativeGridTooLarge`](crate::runtime::RuntimeError::CooperativeGridTooLarge)),
    /// before launching; [`Function::launch_cooperative`](crate::runtime::Function::launch_cooperative)
    /// launches as many blocks as fit. Every thread of the grid must reach each barrier: the
    /// verifier rejects one under a branch or loop whose condition is not the same across
    /// the grid (block indices, thread indices, a `tiles` loop), or after a `return_if` that
    /// is not, and the simulator reports a block that exits while others wait.
    ///
    /// The barrier is a block barrier, then one thread per block arriving at a counter in
    /// global memory (a hidden parameter the runtime allocates zeroed per launch) with a
    /// release add and waiting with acquire loads for the count to complete, then a block
    /// barrier again. The counter's generation bit flips at each barrier, so it needs no reset
    /// between barriers.
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // Phase 1 writes a[i] = i; after the grid barrier, each thread reads the element a
    /// // thread of another block wrote.
    /// let mut k = KernelBuilder::new("rotate").block(40);
    /// let (a, b) = (k.buffer::<u32>("a"), k.output::<u32>("b"));
    /// let g = k.this_grid();
    /// let (i, n) = (g.thread_rank(), g.num_threads());
    /// k.write(&a, i.clone(), i.clone() * 3u32);
    /// k.sync_grid();
    /// let j = (i.clone() + 50u32) % n;
    /// k.write(&b, i, a.at(j));
    /// let kernel = k.build()?;
    /// assert!(kernel.needs_cooperative());
    ///
    /// let dev = Device::sim();
    /// let f = dev.compile(&kernel)?;
    /// let (mut ab, mut bb) = (dev.alloc_zeroed::<u32>(160)?, dev.alloc_zeroed::<u32>(160)?);
    /// f.launch_cooperative_grid(4, (&mut ab, &mut bb))?;
    /// let want: Vec<u32> = (0..160).map(|i| (i + 50) % 160 * 3).collect();
    /// assert_eq!(bb.to_vec()?, want);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn sync_grid(&mut self) {
        let loc = Loc::caller();
        self.push(OpKind::SyncGrid, loc);
    }
}

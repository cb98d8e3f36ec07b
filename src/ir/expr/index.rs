//! Built-in index expressions: the thread's rank, lane and warp, the block's and grid's
//! indices and extents along each axis, and Numba's `cuda.grid` / `cuda.gridsize`.

pub use super::Axis;
use super::{Expr, ExprKind, IndexKind};

fn ix(k: IndexKind) -> Expr<u32> {
    Expr::new(ExprKind::Index(k))
}

/// The thread's linear rank in its block (`x + dx * (y + dy * z)`; `threadIdx.x` in a
/// 1-D block): the rank collectives number threads by.
pub fn thread_rank() -> Expr<u32> {
    ix(IndexKind::ThreadRank)
}
/// The thread's index in its block along `axis` (CUDA's `threadIdx.x`, `.y`, `.z`); 0
/// along an axis the block does not extend in.
///
/// ```
/// use coopgraph::ir::index::{self, Axis};
/// use coopgraph::runtime::Device;
/// use coopgraph::KernelBuilder;
///
/// // An 8 x 4 block: thread (x, y) writes y * 10 + x at its linear rank.
/// let mut k = KernelBuilder::new("coords").block_dims([8, 4, 1]);
/// let out = k.output::<u32>("out");
/// let (x, y) = (index::thread_idx(Axis::X), index::thread_idx(Axis::Y));
/// k.write(&out, index::thread_rank(), y * 10u32 + x);
/// let kernel = k.build()?;
///
/// let dev = Device::sim();
/// let mut ob = dev.alloc_zeroed::<u32>(32)?;
/// dev.compile(&kernel)?.launch_grid(1, (&mut ob,))?;
/// let want: Vec<u32> = (0..32).map(|r| (r / 8) * 10 + r % 8).collect();
/// assert_eq!(ob.to_vec()?, want);
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub fn thread_idx(axis: Axis) -> Expr<u32> {
    ix(IndexKind::ThreadIdx(axis))
}
/// The block's index in the grid along `axis` (CUDA's `blockIdx`).
///
/// ```
/// use coopgraph::ir::index::{self, Axis};
/// use coopgraph::runtime::{Device, LaunchConfig};
/// use coopgraph::KernelBuilder;
///
/// // Thread 0 of each block of a 2 x 3 grid writes its block's (x, y) and the extents.
/// let mut k = KernelBuilder::new("blocks").block_dims([4, 2, 1]);
/// let out = k.output::<u32>("out");
/// let (bx, by) = (index::block_idx(Axis::X), index::block_idx(Axis::Y));
/// let at = (by * index::grid_dim(Axis::X) + bx.clone()) * 2u32;
/// k.if_(index::thread_rank().eq(0u32), |k| {
///     k.write(&out, at.clone(), bx * 10u32 + index::block_idx(Axis::Y));
///     let dims = index::grid_dim(Axis::Y) * 100u32 + index::block_dim(Axis::X);
///     k.write(&out, at + 1u32, dims);
/// });
/// let kernel = k.build()?;
///
/// let dev = Device::sim();
/// let mut ob = dev.alloc_zeroed::<u32>(12)?;
/// dev.compile(&kernel)?.launch(LaunchConfig::grid([2, 3, 1]), (&mut ob,))?;
/// assert_eq!(ob.to_vec()?, [0, 304, 10, 304, 1, 304, 11, 304, 2, 304, 12, 304]);
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub fn block_idx(axis: Axis) -> Expr<u32> {
    match axis {
        Axis::X => block_index(),
        _ => ix(IndexKind::BlockIdx(axis)),
    }
}
/// The block's extent along `axis` (CUDA's `blockDim`): a constant of the kernel (see
/// [`block_idx`] for an example).
pub fn block_dim(axis: Axis) -> Expr<u32> {
    ix(IndexKind::BlockDim(axis))
}
/// The grid's extent in blocks along `axis` (CUDA's `gridDim`; see [`block_idx`] for an
/// example).
pub fn grid_dim(axis: Axis) -> Expr<u32> {
    match axis {
        Axis::X => grid_blocks(),
        _ => ix(IndexKind::GridDim(axis)),
    }
}
/// The thread's absolute position in the grid along its first `N` axes (1 to 3), as
/// Numba's `cuda.grid(N)`: `blockIdx * blockDim + threadIdx` per axis. `u32` arithmetic,
/// which wraps past `u32::MAX`.
///
/// ```
/// use coopgraph::ir::index;
/// use coopgraph::runtime::{Device, LaunchConfig};
/// use coopgraph::KernelBuilder;
///
/// // out[y][x] = x + y over a 12 x 10 array, with 4 x 4 blocks on a 3 x 3 grid.
/// let (w, h) = (12u32, 10u32);
/// let mut k = KernelBuilder::new("sum_xy").block_dims([4, 4, 1]);
/// let out = k.output::<u32>("out");
/// let [x, y] = index::grid::<2>();
/// k.if_(x.lt(w) & y.lt(h), |k| k.write(&out, y.clone() * w + x.clone(), x + y));
/// let kernel = k.build()?;
///
/// let dev = Device::sim();
/// let mut ob = dev.alloc_zeroed::<u32>((w * h) as usize)?;
/// dev.compile(&kernel)?.launch(LaunchConfig::grid([3, 3, 1]), (&mut ob,))?;
/// let want: Vec<u32> = (0..w * h).map(|i| i % w + i / w).collect();
/// assert_eq!(ob.to_vec()?, want);
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub fn grid<const N: usize>() -> [Expr<u32>; N] {
    const { assert!(N >= 1 && N <= 3, "a grid has 1 to 3 axes") };
    std::array::from_fn(|a| {
        let axis = Axis::ALL[a];
        block_idx(axis) * block_dim(axis) + thread_idx(axis)
    })
}
/// The grid's extent in threads along its first `N` axes (1 to 3), as Numba's
/// `cuda.gridsize(N)`: `gridDim * blockDim` per axis (the stride of a grid-stride loop).
///
/// ```
/// use coopgraph::ir::index;
/// use coopgraph::runtime::Device;
/// use coopgraph::KernelBuilder;
///
/// // A grid-stride loop: each thread doubles every `grid_size`-th element.
/// let mut k = KernelBuilder::new("double").block(32);
/// let a = k.buffer::<u32>("a");
/// let n = k.scalar::<u32>("n");
/// let [start] = index::grid::<1>();
/// let [stride] = index::grid_size::<1>();
/// k.for_range_step(start, n, stride, |k, i| k.write(&a, &i, a.at(&i) * 2u32));
/// let kernel = k.build()?;
///
/// let dev = Device::sim();
/// let mut ab = dev.upload(&(0..1000).collect::<Vec<u32>>())?;
/// dev.compile(&kernel)?.launch_grid(3, (&mut ab, 1000u32))?;
/// assert_eq!(ab.to_vec()?, (0..1000).map(|v| 2 * v).collect::<Vec<u32>>());
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub fn grid_size<const N: usize>() -> [Expr<u32>; N] {
    const { assert!(N >= 1 && N <= 3, "a grid has 1 to 3 axes") };
    std::array::from_fn(|a| {
        let axis = Axis::ALL[a];
        grid_dim(axis) * block_dim(axis)
    })
}
/// The thread's lane in its warp (0..32).
pub fn lane() -> Expr<u32> {
    ix(IndexKind::Lane)
}
/// The warp's rank in its block.
pub fn warp_rank() -> Expr<u32> {
    ix(IndexKind::WarpRank)
}
/// The block's index in the grid.
pub fn block_index() -> Expr<u32> {
    ix(IndexKind::BlockIndex)
}
/// The number of blocks in the grid.
pub fn grid_blocks() -> Expr<u32> {
    ix(IndexKind::GridBlocks)
}
/// The number of threads in a block.
pub fn block_threads() -> Expr<u32> {
    ix(IndexKind::BlockThreads)
}
/// The slot a `map` body is computing (0..items); valid only inside `map`.
pub fn item() -> Expr<u32> {
    ix(IndexKind::Item)
}

//! Blocks of two and three dimensions and grids of up to three: the built-in indices along
//! each axis (`threadIdx`, `blockIdx`, `blockDim`, `gridDim`, `grid`, `grid_size`) against the
//! CPU, the linear rank collectives number threads by, collectives in 2-D and 3-D blocks, and
//! the launches a grid may take. Every kernel is assembled for every arch and run with every
//! checker on.

use super::common::{Batch, Rng, assemble_all, compiled, device};
use coopgraph::ir::index::{self, Axis};
use coopgraph::ir::{Reduce, Scan, VerifyErrorKind};
use coopgraph::ptx::Arch;
use coopgraph::runtime::{LaunchConfig, RuntimeError};
use coopgraph::{Error, Kernel, KernelBuilder, Load, Store};
use proptest::prelude::*;

/// Values each thread writes, in this order, at `out[g * FIELDS ..]` for its global linear
/// index `g = block * threads + rank` (`block` linear over the grid, x fastest).
const FIELDS: usize = 16;

/// A kernel writing every built-in index of each thread.
fn indices(name: &str, dims: [u32; 3]) -> Kernel {
    let mut k = KernelBuilder::new(name).block_dims(dims);
    let out = k.output::<u32>("out");
    let axes = Axis::ALL;
    let block = index::block_idx(Axis::X)
        + index::grid_dim(Axis::X)
            * (index::block_idx(Axis::Y) + index::grid_dim(Axis::Y) * index::block_idx(Axis::Z));
    let g = block * index::block_threads() + index::thread_rank();
    let base = g * FIELDS as u32;
    let grid = index::grid::<3>();
    let size = index::grid_size::<3>();
    let mut fields = vec![
        index::thread_rank(),
        index::lane(),
        index::warp_rank(),
        index::block_threads(),
    ];
    for a in axes {
        fields.push(index::thread_idx(a) + index::block_dim(a) * 1000u32);
    }
    for a in axes {
        fields.push(index::block_idx(a) + index::grid_dim(a) * 1000u32);
    }
    fields.extend(grid);
    fields.extend(size);
    assert_eq!(fields.len(), FIELDS);
    for (j, f) in fields.into_iter().enumerate() {
        k.write(&out, base.clone() + j as u32, f);
    }
    k.build().unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// What [`indices`] writes for a block of `dims` on a grid of `grid`.
fn indices_on_cpu(dims: [u32; 3], grid: [u32; 3]) -> Vec<u32> {
    let threads = dims.iter().product::<u32>();
    let blocks = grid.iter().product::<u32>();
    let mut out = vec![0u32; (threads * blocks) as usize * FIELDS];
    for b in 0..blocks {
        let bi = [b % grid[0], b / grid[0] % grid[1], b / (grid[0] * grid[1])];
        for r in 0..threads {
            let ti = [r % dims[0], r / dims[0] % dims[1], r / (dims[0] * dims[1])];
            let mut f = vec![r, r % 32, r / 32, threads];
            f.extend((0..3).map(|a| ti[a] + dims[a] * 1000));
            f.extend((0..3).map(|a| bi[a] + grid[a] * 1000));
            f.extend((0..3).map(|a| bi[a] * dims[a] + ti[a]));
            f.extend((0..3).map(|a| grid[a] * dims[a]));
            let g = (b * threads + r) as usize;
            out[g * FIELDS..(g + 1) * FIELDS].copy_from_slice(&f);
        }
    }
    out
}

/// A block shape of at most 1024 threads and 64 along z.
fn shape() -> impl Strategy<Value = [u32; 3]> {
    (1u32..40, 1u32..12, 1u32..6)
        .prop_filter("1024 threads at most", |(x, y, z)| x * y * z <= 1024)
        .prop_map(|(x, y, z)| [x, y, z])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, .. ProptestConfig::default() })]

    /// Every built-in index of every thread, in blocks and grids of any shape, is what CUDA
    /// defines: the linear rank `x + dx * (y + dy * z)`, lanes and warps of it, each axis's
    /// index and extent, `grid` and `grid_size` as Numba's.
    #[test]
    fn indices_along_every_axis_agree_with_the_cpu(
        dims in shape(),
        grid in (1u32..4, 1u32..3, 1u32..3),
    ) {
        let grid = [grid.0, grid.1, grid.2];
        let kernel = indices("indices", dims);
        let dev = device();
        let f = compiled(dev, &kernel).expect("compiles");
        let want = indices_on_cpu(dims, grid);
        let mut out = dev.alloc_zeroed::<u32>(want.len()).expect("alloc");
        f.launch(LaunchConfig::grid(grid), (&mut out,)).expect("launch");
        prop_assert_eq!(out.to_vec().expect("download"), want);
    }
}

#[test]
fn indices_assemble_for_every_arch() {
    let mut batch = Batch::default();
    for (i, dims) in [[32, 1, 1], [16, 8, 1], [4, 4, 64], [7, 3, 5]]
        .into_iter()
        .enumerate()
    {
        batch.add(&indices(&format!("indices{i}"), dims));
    }
    batch.finish();
}

/// A 1-D block's rank is `%tid.x` alone, and it reads no other axis.
#[test]
fn a_one_dimensional_block_reads_tid_x_alone() {
    let ptx = indices("flat", [64, 1, 1]).ptx(Arch::Sm90).expect("emits");
    assert!(ptx.contains("%tid.x"));
    assert!(!ptx.contains("%tid.y") && !ptx.contains("%tid.z"), "{ptx}");
    // A 2-D block's rank reads both of its axes, and not z.
    let ptx = indices("square", [8, 8, 1]).ptx(Arch::Sm90).expect("emits");
    assert!(ptx.contains("%tid.y") && !ptx.contains("%tid.z"), "{ptx}");
}

/// Loads, block and warp reductions and scans in blocks of two and three dimensions number
/// threads by their linear rank, as in a 1-D block of as many threads.
#[test]
fn collectives_in_two_and_three_dimensional_blocks_use_the_linear_rank() {
    for dims in [[16, 16, 1], [8, 4, 4], [32, 2, 1], [4, 4, 2], [2, 4, 8]] {
        let threads = dims.iter().product::<u32>();
        let items = 2u32;
        let mut k = KernelBuilder::new("dims_collectives")
            .block_dims(dims)
            .items_per_thread(items);
        let x = k.input::<i32>("x");
        let (sums, scans, warp_max) = (
            k.output::<i32>("sums"),
            k.output::<i32>("scans"),
            k.output::<i32>("warp_max"),
        );
        let b = k.this_block();
        let w = k.this_warp().group_by(threads.min(32));
        let t = k.load_from(b, &x, Load::transpose());
        let s = k.reduce(b, &t, Reduce::sum().broadcast());
        k.store_to(b, &sums, &s, Store::direct().offset(0u32));
        let sc = k.scan(b, &t, Scan::inclusive_sum());
        k.store_to(b, &scans, &sc, Store::direct());
        let m = k.reduce(w, &t, Reduce::max().broadcast());
        k.store_to(b, &warp_max, &m, Store::direct().offset(0u32));
        let kernel = k.build().unwrap_or_else(|e| panic!("{dims:?}: {e}"));
        assemble_all(&kernel);

        let dev = device();
        let n = (threads * items) as usize;
        let xs: Vec<i32> = Rng::new(u64::from(threads))
            .vec::<u32>(n)
            .into_iter()
            .map(|v| (v % 1000) as i32 - 500)
            .collect();
        let xb = dev.upload(&xs).expect("upload");
        let mut sb = dev.alloc_zeroed::<i32>(threads as usize).expect("alloc");
        let mut cb = dev.alloc_zeroed::<i32>(n).expect("alloc");
        let mut mb = dev.alloc_zeroed::<i32>(threads as usize).expect("alloc");
        let f = compiled(dev, &kernel).expect("compiles");
        f.launch_grid(1, (&xb, &mut sb, &mut cb, &mut mb))
            .unwrap_or_else(|e| panic!("{dims:?}: {e}"));
        let total: i32 = xs.iter().sum();
        assert_eq!(
            sb.to_vec().expect("download"),
            vec![total; threads as usize]
        );
        let scan: Vec<i32> = xs
            .iter()
            .scan(0, |acc, &v| {
                *acc += v;
                Some(*acc)
            })
            .collect();
        assert_eq!(cb.to_vec().expect("download"), scan, "{dims:?}");
        // Thread r holds positions 2r, 2r + 1; its warp is the ranks r / 32.
        let w = threads.min(32) as usize;
        let want: Vec<i32> = (0..threads as usize)
            .map(|r| {
                let first = r / w * w;
                (2 * first..2 * (first + w))
                    .map(|p| xs[p])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        assert_eq!(mb.to_vec().expect("download"), want, "{dims:?}");
    }
}

/// A block whose threads are not whole warps (nor a power of two below 32) cannot run block
/// collectives, whatever its shape: the verifier says so, naming the line.
#[test]
fn block_collectives_in_blocks_of_partial_warps_are_typed_errors() {
    for dims in [[5, 5, 1], [6, 8, 1], [3, 3, 3]] {
        let mut k = KernelBuilder::new("partial")
            .block_dims(dims)
            .items_per_thread(1);
        let (x, y) = (k.input::<i32>("x"), k.output::<i32>("y"));
        let b = k.this_block();
        let t = k.load_from(b, &x, Load::direct());
        let (s, line) = (k.reduce(b, &t, Reduce::sum().broadcast()), line!());
        k.store_to(b, &y, &s, Store::direct());
        let Err(Error::Verify(e)) = k.build() else {
            panic!("{dims:?} built")
        };
        let block = dims.iter().product::<u32>();
        assert!(
            e.errors.iter().any(|err| err.loc.line == line
                && err.kind == VerifyErrorKind::WarpOpInPartialWarpBlock { block }),
            "{e}"
        );
    }
}

/// A branch on `threadIdx.y` is uniform across each row of the block: in a block 32 threads
/// wide, a warp collective may run under it; in one 16 wide, it may not (a warp spans two
/// rows), and the verifier names the branch.
#[test]
fn a_row_of_whole_warps_is_uniform_across_its_warps() {
    let build = |dims: [u32; 3]| {
        let mut k = KernelBuilder::new("rows")
            .block_dims(dims)
            .items_per_thread(1);
        let (x, y) = (k.input::<i32>("x"), k.output::<i32>("y"));
        let w = k.this_warp();
        let t = k.load_from(w, &x, Load::direct());
        let line = line!() + 1;
        k.if_(index::thread_idx(Axis::Y).lt(2u32), |k| {
            let s = k.reduce(w, &t, Reduce::sum().broadcast());
            k.store_to(w, &y, &s, Store::direct());
        });
        (k.build(), line)
    };
    let (kernel, _) = build([32, 4, 1]);
    let kernel = kernel.expect("a row of 32 threads is a warp");
    let dev = device();
    let xs: Vec<i32> = (0..128).collect();
    let xb = dev.upload(&xs).expect("upload");
    let mut yb = dev.alloc_zeroed::<i32>(128).expect("alloc");
    compiled(dev, &kernel)
        .expect("compiles")
        .launch_grid(1, (&xb, &mut yb))
        .expect("launch");
    let want: Vec<i32> = (0..128)
        .map(|i| {
            if i < 64 {
                (i / 32 * 32..i / 32 * 32 + 32).sum()
            } else {
                0
            }
        })
        .collect();
    assert_eq!(yb.to_vec().expect("download"), want);
    let (narrow, line) = build([16, 8, 1]);
    let Err(Error::Verify(e)) = narrow else {
        panic!("a warp of two rows under a branch on the row built")
    };
    assert!(
        e.errors.iter().any(|err| matches!(
            err.kind,
            VerifyErrorKind::NonUniformCollective { condition, .. } if condition.line == line
        )),
        "{e}"
    );
}

/// A grid along y or z runs where the kernel tells its blocks apart there; a kernel that
/// reads only x refuses it (its blocks would repeat each other's work); a grid past the
/// device's limits is refused before anything runs.
#[test]
fn three_dimensional_grids_launch_where_the_kernel_sees_them() {
    let dev = device();
    let kernel = indices("grid3", [4, 2, 1]);
    let f = compiled(dev, &kernel).expect("compiles");
    let grid = [2, 3, 2];
    let want = indices_on_cpu([4, 2, 1], grid);
    let mut out = dev.alloc_zeroed::<u32>(want.len()).expect("alloc");
    f.launch(LaunchConfig::grid(grid), (&mut out,))
        .expect("launch");
    assert_eq!(out.to_vec().expect("download"), want);
    let max = dev.limits().max_grid;
    for over in [
        [max[0], max[1] + 1, 1],
        [1, 1, max[2] + 1],
        [0, 1, 1],
        [1, 0, 2],
    ] {
        let (r, line) = (f.launch(LaunchConfig::grid(over), (&mut out,)), line!());
        // The error names the launch's line.
        assert!(
            matches!(&r, Err(RuntimeError::GridTooLarge { at, .. }) if at.line == line),
            "{over:?}: {r:?}"
        );
    }

    // x only: a grid along y is refused, one along x runs.
    let mut k = KernelBuilder::new("x_only").block_dims([8, 4, 1]);
    let y = k.output::<u32>("y");
    let [gx] = index::grid::<1>();
    k.write(&y, gx.clone() * 4u32 + index::thread_idx(Axis::Y), gx);
    let f = compiled(dev, &k.build().expect("builds")).expect("compiles");
    let mut yb = dev.alloc_zeroed::<u32>(64).expect("alloc");
    let r = f.launch(LaunchConfig::grid([1, 2, 1]), (&mut yb,));
    assert!(
        matches!(r, Err(RuntimeError::GridDimensionUnseen { dims: 1, .. })),
        "{r:?}"
    );
    f.launch(LaunchConfig::grid([2, 1, 1]), (&mut yb,))
        .expect("launch");
    let want: Vec<u32> = (0..64).map(|i| i / 4).collect();
    assert_eq!(yb.to_vec().expect("download"), want);
}

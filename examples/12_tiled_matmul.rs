//! Tiled matrix multiplication, `C = A * B` (`A` of M x K, `B` of K x N, row-major `f32`),
//! as CUDA's programming guide writes it: 16 x 16 blocks on a 2-D grid, each block computing a
//! 16 x 16 tile of `C`. Per step along K, every thread loads one element of `A`'s tile and one
//! of `B`'s into 2-D shared arrays, the block synchronizes, and each thread accumulates its
//! row of `A`'s tile times its column of `B`'s with `fma`; a second barrier guards the tiles
//! before the next step overwrites them. Elements past the matrices' edges load as 0, so any
//! size works. Checked against the CPU (every element on the simulator, a sample of 1024 on
//! a GPU: the same `fma` chain in the same order, so equal bit for bit); on a GPU the
//! example multiplies 4096 x 4096 matrices (`COOPGRAPH_BENCH_N` elements per matrix
//! overrides it: the side is its square root) and prints GFLOP/s, `2 * M * N * K` flops per
//! product.

#[path = "support/bench.rs"]
#[allow(dead_code)]
mod bench;

use bench::OrExit;

use coopgraph::ir::index::{self, Axis};
use coopgraph::runtime::{Backend, Buffer, Device, Function, LaunchConfig};
use coopgraph::{Kernel, KernelBuilder};

/// The tile's side: blocks of TILE x TILE threads.
const TILE: u32 = 16;

fn matmul() -> Kernel {
    let mut k = KernelBuilder::new("tiled_matmul").block_dims([TILE, TILE, 1]);
    let (a, b, c) = (
        k.input::<f32>("a"),
        k.input::<f32>("b"),
        k.output::<f32>("c"),
    );
    let (m, n, kk) = (
        k.scalar::<u32>("m"),
        k.scalar::<u32>("n"),
        k.scalar::<u32>("k"),
    );
    let (tx, ty) = (index::thread_idx(Axis::X), index::thread_idx(Axis::Y));
    let [col, row] = index::grid::<2>();
    let a_tile = k.shared_array_2d::<f32>([TILE, TILE]);
    let b_tile = k.shared_array_2d::<f32>([TILE, TILE]);
    let acc = k.var(0.0f32);
    let steps = (kk.expr() + (TILE - 1)) / TILE;
    k.for_range(0u32, steps, |k, step| {
        // This thread's element of each tile: A[row][step * TILE + tx], B[step * TILE + ty][col],
        // or 0 past the matrices' edges (a select reads only the side it takes).
        let a_col = step.clone() * TILE + tx.clone();
        let b_row = step * TILE + ty.clone();
        let a_in = row.lt(m) & a_col.lt(kk);
        let b_in = b_row.lt(kk) & col.lt(n);
        let a_val = a_in.select(a.at(row.clone() * kk.expr() + a_col), 0.0f32);
        let b_val = b_in.select(b.at(b_row * n.expr() + col.clone()), 0.0f32);
        k.shared_write(&a_tile, (ty.clone(), tx.clone()), a_val);
        k.shared_write(&b_tile, (ty.clone(), tx.clone()), b_val);
        k.sync_block();
        k.for_range(0u32, TILE, |k, i| {
            let prod = a_tile
                .read((ty.clone(), i.clone()))
                .fma(b_tile.read((i, tx.clone())), acc.get());
            k.set(&acc, prod);
        });
        // Every thread is done with the tiles before the next step writes them.
        k.sync_block();
    });
    k.if_(row.lt(m) & col.lt(n), |k| {
        k.write(&c, row.clone() * n.expr() + col.clone(), acc.get())
    });
    k.build().or_exit("matmul builds")
}

/// Element `(i, j)` of `A * B` as the kernel computes it: an `fma` chain along K, in order.
fn reference(a: &[f32], b: &[f32], n: usize, kk: usize, i: usize, j: usize) -> f32 {
    (0..kk).fold(0.0f32, |acc, l| a[i * kk + l].mul_add(b[l * n + j], acc))
}

fn launch(f: &Function, a: &Buffer<f32>, b: &Buffer<f32>, c: &mut Buffer<f32>, mnk: [usize; 3]) {
    let [m, n, kk] = mnk;
    let grid = [
        n.div_ceil(TILE as usize) as u32,
        m.div_ceil(TILE as usize) as u32,
        1,
    ];
    f.launch(
        LaunchConfig::grid(grid),
        (a, b, c, m as u32, n as u32, kk as u32),
    )
    .or_exit("matmul");
}

fn main() {
    let dev = Device::default_device().or_exit("a device");
    let on_gpu = matches!(dev.backend(), Backend::Cuda { .. });
    let elements: usize = std::env::var("COOPGRAPH_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if on_gpu { 1 << 24 } else { 1 << 12 });
    let side = (elements as f64).sqrt() as usize;
    let side = side.max(1);
    // Square matrices; a size not a multiple of the tile exercises the edges.
    let (m, n, kk) = (side, side, side);
    let a: Vec<f32> = (0..m * kk)
        .map(|i| ((i * 7) % 17) as f32 * 0.125 - 1.0)
        .collect();
    let b: Vec<f32> = (0..kk * n)
        .map(|i| ((i * 5) % 13) as f32 * 0.25 - 1.5)
        .collect();
    let f = dev.compile(&matmul()).or_exit("compile");
    let (ab, bb) = (
        dev.upload(&a).or_exit("upload"),
        dev.upload(&b).or_exit("upload"),
    );
    let mut cb = dev.alloc_zeroed::<f32>(m * n).or_exit("alloc");
    launch(&f, &ab, &bb, &mut cb, [m, n, kk]);
    let c = cb.to_vec().or_exit("download");
    // Every element on the simulator; a sample spread over the matrix on a GPU.
    let checked: Vec<usize> = if on_gpu {
        (0..1024)
            .map(|s| (s * 2_654_435_761usize) % (m * n))
            .collect()
    } else {
        (0..m * n).collect()
    };
    for &e in &checked {
        let (i, j) = (e / n, e % n);
        let want = reference(&a, &b, n, kk, i, j);
        if c[e] != want {
            eprintln!("error: C[{i}][{j}] is {} instead of {want}", c[e]);
            std::process::exit(1);
        }
    }
    if !on_gpu {
        println!(
            "tiled matmul of {m} x {kk} by {kk} x {n} in {TILE} x {TILE} blocks: all {} elements match the CPU",
            checked.len()
        );
        return;
    }
    let t = bench::time(&dev, 10, || launch(&f, &ab, &bb, &mut cb, [m, n, kk]));
    let gflops = 2.0 * (m * n * kk) as f64 / t.as_secs_f64() / 1e9;
    println!(
        "tiled matmul {m} x {n} x {kk} f32 in {TILE} x {TILE} blocks: {:.3} ms, {gflops:.0} GFLOP/s ({} sampled elements match the CPU)",
        t.as_secs_f64() * 1e3,
        checked.len()
    );
}

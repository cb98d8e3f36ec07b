//! A grid-stride SAXPY in place, `y[i] = a * x[i] + y[i]`, over a read-write buffer, written
//! three ways. By index: each thread of the grid takes elements `first, first + threads, ...`
//! (four per step of its loop, all read before any is written), reading `x` through the
//! read-only path and `y` through the coherent one and writing `y` back by index. By index in
//! runs: each thread takes four consecutive elements per step (`read_run`, `write_run`), which
//! move in 16-byte vector accesses where aligned. By tiles: a grid-stride loop over tiles of
//! the block's threads x 4 elements, each thread loading its four consecutive elements of `x`
//! and of `y` at once (16-byte vector accesses), and storing them back the same way. Every
//! access is checked against its buffer's length, so elements past the end are skipped.
//! Checked against the CPU; on a GPU the example runs on 2^28 `f32` (override with
//! `COOPGRAPH_BENCH_N`) and prints GB/s (bytes read and written: 12 per element) beside the
//! device-to-device copy bandwidth of the same buffer measured in the same run, and beside
//! hand-written CUDA (`benches/cub/saxpy.cu`) when `COOPGRAPH_CUB_CSV` names the CSV it wrote
//! in the same run.

#[path = "support/bench.rs"]
#[allow(dead_code)]
mod bench;

use bench::OrExit;

use coopgraph::ir::{Expr, index};
use coopgraph::runtime::{Buffer, Device, Function};
use coopgraph::{Kernel, KernelBuilder};
use coopgraph::{Load, Store};

const BLOCK: u32 = 256;
/// Elements a thread takes per step.
const UNROLL: u32 = 4;

/// The grid's threads, this thread's rank in the grid, and the steps of a grid-stride loop
/// over `n` elements, `UNROLL` per thread and step: `ceil(n / (threads * UNROLL))`, without
/// overflowing near `u32::MAX`.
fn grid_stride(n: Expr<u32>) -> (Expr<u32>, Expr<u32>, Expr<u32>) {
    let threads = index::grid_blocks() * index::block_threads();
    let first = index::block_index() * index::block_threads() + index::thread_rank();
    let per_step = threads.clone() * UNROLL;
    let steps = n.clone() / per_step.clone() + (n % per_step).ne(0u32).to::<u32>();
    (threads, first, steps)
}

fn saxpy() -> Kernel {
    let mut k = KernelBuilder::new("saxpy").block(BLOCK);
    let (x, y) = (k.input::<f32>("x"), k.buffer::<f32>("y"));
    let (a, n) = (k.scalar::<f32>("a"), k.scalar::<u32>("n"));
    let (threads, first, steps) = grid_stride(n.expr());
    let per_step = threads.clone() * UNROLL;
    k.for_range(0u32, steps, |k, s| {
        let base = s * per_step.clone() + first.clone();
        let at = |u: u32| base.clone() + threads.clone() * u;
        // Every element of the step is read before any is written.
        let v = k.thread_data_n::<f32>(UNROLL);
        for u in 0..UNROLL {
            k.set_item(&v, u, x.at(at(u)).fma(a, y.at(at(u))));
        }
        for u in 0..UNROLL {
            k.write(&y, at(u), v.item(u));
        }
    });
    k.build().or_exit("saxpy builds")
}

/// The same SAXPY by index, each thread's four elements of a step consecutive: read and
/// written as runs, in vector accesses where aligned.
fn saxpy_runs() -> Kernel {
    let mut k = KernelBuilder::new("saxpy_runs").block(BLOCK);
    let (x, y) = (k.input::<f32>("x"), k.buffer::<f32>("y"));
    let (a, n) = (k.scalar::<f32>("a"), k.scalar::<u32>("n"));
    let (threads, first, steps) = grid_stride(n.expr());
    k.for_range(0u32, steps, |k, s| {
        let at = (s * threads.clone() + first.clone()) * UNROLL;
        let (xs, ys) = (k.read_run(&x, &at, UNROLL), k.read_run(&y, &at, UNROLL));
        let r = k.map2(&xs, &ys, |x, y| x.fma(a, y));
        k.write_run(&y, &at, &r);
    });
    k.build().or_exit("saxpy_runs builds")
}

/// The same SAXPY over tiles: blocked arrangements, moved with vector accesses.
fn saxpy_tiles() -> Kernel {
    let mut k = KernelBuilder::new("saxpy_tiles")
        .block(BLOCK)
        .items_per_thread(UNROLL);
    let (x, y) = (k.input::<f32>("x"), k.buffer::<f32>("y"));
    let (a, n) = (k.scalar::<f32>("a"), k.scalar::<u32>("n"));
    let b = k.this_block();
    k.tiles(n, |k, _| {
        let xs = k.load_from(b, &x, Load::vectorize());
        let ys = k.load_from(b, &y, Load::vectorize());
        let r = k.map2(&xs, &ys, |x, y| x.fma(a, y));
        k.store_to(b, &y, &r, Store::vectorize());
    });
    k.build().or_exit("saxpy_tiles builds")
}

fn launch(f: &Function, grid: u32, a: f32, x: &Buffer<f32>, y: &mut Buffer<f32>) {
    f.launch_grid(grid, (x, y, a, x.len() as u32))
        .or_exit("saxpy");
}

fn main() {
    let dev = Device::default_device().or_exit("a device");
    let (on_gpu, n, reps) = bench::size(&dev);
    let a = 1.5f32;
    let xs: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.25).collect();
    let ys: Vec<f32> = (0..n).map(|i| (i % 77) as f32 - 30.0).collect();
    let x = dev.upload(&xs).or_exit("upload");
    let mut scratch = dev.alloc_zeroed::<f32>(n).or_exit("alloc");
    let copy = on_gpu
        .then(|| bench::copy_gbps(&dev, reps, &x, &mut scratch))
        .flatten();
    let mut figures = Vec::new();
    for (name, kernel, per_thread) in [
        ("by index", saxpy(), UNROLL),
        ("by index in runs", saxpy_runs(), UNROLL),
        ("by tiles", saxpy_tiles(), UNROLL),
    ] {
        let f = dev.compile(&kernel).or_exit("compile");
        let per_sm = f.max_active_blocks_per_sm().or_exit("occupancy").max(1);
        let grid = (dev.limits().sm_count * per_sm)
            .min(n.div_ceil((BLOCK * per_thread) as usize) as u32)
            .max(1);
        let mut y = dev.upload(&ys).or_exit("upload");
        launch(&f, grid, a, &x, &mut y);
        let got = y.to_vec().or_exit("download");
        for i in 0..n {
            let want = xs[i].mul_add(a, ys[i]);
            if got[i] != want {
                eprintln!(
                    "error: saxpy {name}, element {i}: {} instead of {want}",
                    got[i]
                );
                std::process::exit(1);
            }
        }
        if !on_gpu {
            println!("saxpy {name} of {n} elements in {grid} blocks: correct");
            continue;
        }
        let t = bench::time(&dev, reps, || launch(&f, grid, a, &x, &mut y));
        let ours = bench::gbps(12 * n, t);
        println!(
            "saxpy {name} of {n} f32 in {grid} blocks: {ours:.0} GB/s; device-to-device copy: {}; {} of the copy",
            copy.map_or("-".into(), |c| format!("{c:.0} GB/s")),
            bench::percent(ours, copy)
        );
        figures.push((name, ours));
    }
    // Hand-written CUDA on the same shape, from `benches/cub/saxpy.cu` in the same run.
    let cuda = bench::cub_figures();
    for (alg, items) in [
        ("grid_stride", UNROLL),
        ("one_per_thread", 1),
        ("float4", 4),
    ] {
        let key = ("saxpy".into(), "f32".into(), alg.into(), BLOCK, items);
        if let Some(theirs) = cuda.get(&key) {
            for (name, ours) in &figures {
                let (g, ratio) = bench::versus(*ours, Some(theirs));
                println!("CUDA C++ saxpy, {alg}: {g} GB/s; coopgraph {name} / CUDA = {ratio}");
            }
        }
    }
}

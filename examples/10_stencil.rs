//! A 1-D stencil of radius 3, `y[i] = sum(w[j] * x[i + j - 3] for j in 0..7)` with weights
//! 1, 2, 3, 4, 3, 2, 1 and `x` taken as 0 outside `0..n`: each block stages its elements and a
//! halo of 3 on each side in a shared array, waits at a barrier, and every thread sums its
//! seven neighbours with a loop over the taps into a per-thread variable. Threads past `n`
//! leave with `return_if` after the barrier (never before: every thread of the block must
//! reach it). Reads past the input's ends (the left halo of the first block wraps below 0)
//! give 0 where bounds are checked. Checked against the CPU; on a GPU the example runs on 2^28
//! `f32` (override with `COOPGRAPH_BENCH_N`) and prints GB/s (8 bytes per element).

#[path = "support/bench.rs"]
#[allow(dead_code)]
mod bench;

use bench::OrExit;

use coopgraph::ir::index;
use coopgraph::runtime::{Buffer, Device, Function};
use coopgraph::{Kernel, KernelBuilder};

const BLOCK: u32 = 256;
const RADIUS: u32 = 3;

fn stencil() -> Kernel {
    let mut k = KernelBuilder::new("stencil").block(BLOCK);
    let (x, y, n) = (
        k.input::<f32>("x"),
        k.output::<f32>("y"),
        k.scalar::<u32>("n"),
    );
    let t = index::thread_rank();
    let g = index::block_index() * BLOCK + t.clone();
    // Element g - RADIUS + s of x sits at s in the block's window.
    let window = k.shared_array::<f32>(BLOCK + 2 * RADIUS);
    k.shared_write(&window, t.clone() + RADIUS, x.at(&g));
    k.if_(t.lt(RADIUS), |k| {
        // The left halo (wrapping below 0 for the first block: past the end, so 0) and the
        // right one.
        k.shared_write(&window, t.clone(), x.at(g.clone() - RADIUS));
        k.shared_write(&window, t.clone() + BLOCK + RADIUS, x.at(g.clone() + BLOCK));
    });
    k.sync_block();
    k.return_if(g.ge(n));
    let acc = k.var(0.0f32);
    k.for_range(0u32, 2 * RADIUS + 1, |k, j| {
        let w = (j.clone().min(2 * RADIUS - j.clone()) + 1u32).cast::<f32>();
        k.set(&acc, acc.get() + w * window.read(t.clone() + j));
    });
    k.write(&y, &g, acc.get());
    k.build().or_exit("stencil builds")
}

fn cpu(xs: &[f32]) -> Vec<f32> {
    let n = xs.len() as i64;
    (0..n)
        .map(|i| {
            let mut acc = 0.0f32;
            for j in 0..7i64 {
                let w = (j.min(6 - j) + 1) as f32;
                let at = i + j - RADIUS as i64;
                let v = if (0..n).contains(&at) {
                    xs[at as usize]
                } else {
                    0.0
                };
                acc += w * v;
            }
            acc
        })
        .collect()
}

fn launch(f: &Function, x: &Buffer<f32>, y: &mut Buffer<f32>) {
    let n = x.len() as u32;
    f.launch_grid(n.div_ceil(BLOCK), (x, y, n))
        .or_exit("stencil");
}

fn main() {
    let dev = Device::default_device().or_exit("a device");
    let (on_gpu, n, reps) = bench::size(&dev);
    // Not a multiple of the block: the last block is partial.
    let n = n - 5;
    let f = dev.compile(&stencil()).or_exit("compile");
    let xs: Vec<f32> = (0..n).map(|i| (i % 19) as f32 - 9.0).collect();
    let x = dev.upload(&xs).or_exit("upload");
    let mut y = dev.alloc_zeroed::<f32>(n).or_exit("alloc");
    launch(&f, &x, &mut y);
    let got = y.to_vec().or_exit("download");
    for (i, (g, w)) in got.iter().zip(cpu(&xs)).enumerate() {
        if *g != w {
            eprintln!("error: stencil element {i}: {g} instead of {w}");
            std::process::exit(1);
        }
    }
    if !on_gpu {
        println!("radius-{RADIUS} stencil of {n} elements: correct");
        return;
    }
    let t = bench::time(&dev, reps, || launch(&f, &x, &mut y));
    println!(
        "radius-{RADIUS} stencil of {n} f32: {:.0} GB/s",
        bench::gbps(8 * n, t)
    );
}

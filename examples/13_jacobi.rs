//! A Jacobi solver for Laplace's equation on a W x H grid with fixed edges: each iteration is
//! one launch over a 2-D grid of 32 x 8 blocks, every thread updating its point,
//! `u'[y][x] = (u[y][x-1] + u[y][x+1] + u[y-1][x] + u[y+1][x]) / 4` inside the grid and
//! `u'[y][x] = u[y][x]` on its edges. The two iterates are read-write buffers the launches
//! swap: each reads one and writes the other. Checked against the CPU bit for bit (the same
//! sums in the same order); on a GPU the example solves 4096 x 4096 points
//! (`COOPGRAPH_BENCH_N` points override it: the side is its square root) and prints the
//! iterations per second and the GB/s they move (8 bytes per point: one read, one write).

#[path = "support/bench.rs"]
#[allow(dead_code)]
mod bench;

use bench::OrExit;

use coopgraph::runtime::{Backend, Buffer, Device, Function, LaunchConfig};
use coopgraph::{Kernel, KernelBuilder, ir::index};

const BLOCK: [u32; 3] = [32, 8, 1];

fn step() -> Kernel {
    let mut k = KernelBuilder::new("jacobi_step").block_dims(BLOCK);
    let (u, next) = (k.buffer::<f32>("u"), k.buffer::<f32>("next"));
    let (w, h) = (k.scalar::<u32>("w"), k.scalar::<u32>("h"));
    let [x, y] = index::grid::<2>();
    let at = y.clone() * w.expr() + x.clone();
    k.if_(x.lt(w) & y.lt(h), |k| {
        let edge = x.eq(0u32) | y.eq(0u32) | x.eq(w.expr() - 1u32) | y.eq(h.expr() - 1u32);
        // The neighbours are read only inside (a select reads only the side it takes).
        let sum = u.at(at.clone() - 1u32)
            + u.at(at.clone() + 1u32)
            + u.at(at.clone() - w.expr())
            + u.at(at.clone() + w.expr());
        let v = edge.select(u.at(&at), sum * 0.25f32);
        k.write(&next, &at, v);
    });
    k.build().or_exit("jacobi builds")
}

/// One iteration on the CPU, in the kernel's order of operations.
fn step_on_cpu(u: &[f32], next: &mut [f32], w: usize, h: usize) {
    for y in 0..h {
        for x in 0..w {
            let i = y * w + x;
            next[i] = if x == 0 || y == 0 || x == w - 1 || y == h - 1 {
                u[i]
            } else {
                (u[i - 1] + u[i + 1] + u[i - w] + u[i + w]) * 0.25
            };
        }
    }
}

/// `iters` iterations from `a`, swapping the buffers; the last iterate ends in `a` when
/// `iters` is even, else in `b`.
fn solve(f: &Function, a: &mut Buffer<f32>, b: &mut Buffer<f32>, w: usize, h: usize, iters: usize) {
    let grid = [
        w.div_ceil(BLOCK[0] as usize) as u32,
        h.div_ceil(BLOCK[1] as usize) as u32,
        1,
    ];
    for it in 0..iters {
        let (src, dst) = if it % 2 == 0 {
            (&mut *a, &mut *b)
        } else {
            (&mut *b, &mut *a)
        };
        f.launch(LaunchConfig::grid(grid), (src, dst, w as u32, h as u32))
            .or_exit("jacobi step");
    }
}

fn main() {
    let dev = Device::default_device().or_exit("a device");
    let on_gpu = matches!(dev.backend(), Backend::Cuda { .. });
    let points: usize = std::env::var("COOPGRAPH_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if on_gpu { 1 << 24 } else { 40 * 40 });
    let side = ((points as f64).sqrt() as usize).max(3);
    let (w, h) = (side, side);
    let iters = if on_gpu { 100 } else { 20 };
    // Hot top edge, cold elsewhere; the inside starts at zero.
    let init: Vec<f32> = (0..w * h)
        .map(|i| {
            if i < w {
                100.0
            } else if i % w == 0 {
                25.0
            } else {
                0.0
            }
        })
        .collect();
    let f = dev.compile(&step()).or_exit("compile");
    let mut a = dev.upload(&init).or_exit("upload");
    let mut b = dev.upload(&init).or_exit("upload");
    solve(&f, &mut a, &mut b, w, h, iters);
    let got = if iters % 2 == 0 {
        a.to_vec()
    } else {
        b.to_vec()
    }
    .or_exit("download");
    let (mut u, mut next) = (init.clone(), init.clone());
    for _ in 0..iters {
        step_on_cpu(&u, &mut next, w, h);
        std::mem::swap(&mut u, &mut next);
    }
    if let Some(i) = (0..w * h).find(|&i| got[i] != u[i]) {
        eprintln!(
            "error: point ({}, {}) after {iters} iterations is {} instead of {}",
            i % w,
            i / w,
            got[i],
            u[i]
        );
        std::process::exit(1);
    }
    if !on_gpu {
        println!("jacobi on {w} x {h} points, {iters} launches: all points match the CPU");
        return;
    }
    let t = bench::time(&dev, 5, || solve(&f, &mut a, &mut b, w, h, 10));
    let per_iter = t.as_secs_f64() / 10.0;
    println!(
        "jacobi on {w} x {h} f32 points: {:.1} iterations per second, {:.0} GB/s ({iters} iterations match the CPU)",
        1.0 / per_iter,
        bench::gbps(8 * w * h, std::time::Duration::from_secs_f64(per_iter))
    );
}

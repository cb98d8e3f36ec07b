//! 1-D Jacobi (a heat stencil) three ways: a launch per iteration, a captured graph of those
//! launches, and one persistent cooperative kernel with a grid barrier per iteration.
//!
//! Each iteration sets `u'[i] = (u[i - 1] + u[i + 1]) * 0.5` for `0 < i < n - 1` and keeps
//! the two end points. The persistent kernel keeps each thread's `P` consecutive points in
//! registers across iterations and exchanges only its two end points (halos) through global
//! memory: each iteration a thread writes its first and last point, the grid synchronizes,
//! and it reads its neighbours' (the halo buffer alternates between two halves, so one grid
//! barrier per iteration suffices). Where the points do not fit the registers of the blocks
//! that can be resident at once (more than about `2^22` points on an H200), the persistent
//! kernel runs a grid-stride loop over global memory with the barrier between iterations
//! instead. All three results are checked bit for bit against the CPU (the same operations
//! in the same order); the example exits with status 1 on a mismatch.
//!
//! Sizes: `COOPGRAPH_JACOBI_N` points (default `2^20` on a GPU, `2^12` on the simulator),
//! `COOPGRAPH_JACOBI_ITERS` iterations (default 2,000 on a GPU, 20 on the simulator; rounded
//! up to an even number), `COOPGRAPH_JACOBI_POINTS` points per thread of the persistent
//! kernel (default: enough for about one block of 256 per SM). With `COOPGRAPH_JACOBI_SWEEP=1`
//! it runs `n = 2^14, 2^16, ..., 2^24` instead. On a GPU it prints one CSV line per size:
//! `jacobi,n,iters,relaunch_ms,graph_ms,grid_sync_ms,grid_sync_mode,points_per_thread,blocks`.

#[path = "support/bench.rs"]
#[allow(dead_code)]
mod bench;

use bench::OrExit;
use coopgraph::ir::index;
use coopgraph::runtime::{Backend, Buffer, Device, Function, LaunchConfig};
use coopgraph::{Kernel, KernelBuilder};
use std::time::Duration;

/// Threads per block of every kernel here.
const BLOCK: u32 = 256;

fn env_usize(name: &str) -> Option<usize> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// One iteration, one point per thread: `next[i]` from `u`.
fn step_kernel() -> Kernel {
    let mut k = KernelBuilder::new("jacobi_step").block(BLOCK);
    let (u, next) = (k.input::<f32>("u"), k.output::<f32>("next"));
    let n = k.scalar::<u32>("n");
    let [i] = index::grid::<1>();
    k.if_(i.lt(n), |k| {
        let edge = i.eq(0u32) | i.eq(n.expr() - 1u32);
        let v = edge.select(
            u.at(&i),
            (u.at(i.clone() - 1u32) + u.at(i.clone() + 1u32)) * 0.5f32,
        );
        k.write(&next, &i, v);
    });
    k.build().or_exit("the step kernel builds")
}

/// The persistent kernel keeping `points` points per thread in registers: thread `t` of the
/// grid holds points `t * points ..` (those below `n`); `halo` holds `4 * threads` values.
fn resident_kernel(points: u32) -> Kernel {
    let mut k = KernelBuilder::new(format!("jacobi_resident_{points}")).block(BLOCK);
    let u = k.buffer::<f32>("u");
    let halo = k.buffer::<f32>("halo");
    let (n, iters) = (k.scalar::<u32>("n"), k.scalar::<u32>("iters"));
    let g = k.this_grid();
    let t = k.var(g.thread_rank());
    let threads = k.var(g.num_threads());
    let base = k.var(t.get() * points);
    let p = points as usize;
    let x: Vec<_> = (0..p)
        .map(|j| {
            let i = base.get() + j as u32;
            k.var(i.lt(n).select(u.at(i.clone()), 0.0f32))
        })
        .collect();
    k.for_range(0u32, iters, |k, it| {
        // This iteration's half of the halo buffer.
        let h = (it & 1u32) * threads.get() * 2u32;
        let mine = h.clone() + t.get() * 2u32;
        k.write(&halo, mine.clone(), x[0].get());
        k.write(&halo, mine + 1u32, x[p - 1].get());
        k.sync_grid();
        // The left neighbour's last point and the right neighbour's first (the end points
        // of the whole line never use theirs).
        let first = t.get().eq(0u32);
        let left = first.select(x[0].get(), halo.at(h.clone() + t.get() * 2u32 - 1u32));
        let last = (t.get() + 1u32).ge(threads.get());
        let right = last.select(x[p - 1].get(), halo.at(h + t.get() * 2u32 + 2u32));
        let left = k.var(left);
        let right = k.var(right);
        let new: Vec<_> = (0..p)
            .map(|j| {
                let i = base.get() + j as u32;
                let prev = if j == 0 { left.get() } else { x[j - 1].get() };
                let next = if j + 1 == p {
                    right.get()
                } else {
                    x[j + 1].get()
                };
                let edge = i.eq(0u32) | i.ge(n.expr() - 1u32);
                k.var(edge.select(x[j].get(), (prev + next) * 0.5f32))
            })
            .collect();
        for (xj, nj) in x.iter().zip(&new) {
            k.set(xj, nj.get());
        }
    });
    for (j, xj) in x.iter().enumerate() {
        let i = base.get() + j as u32;
        k.if_(i.lt(n), |k| k.write(&u, i.clone(), xj.get()));
    }
    k.build().or_exit("the resident kernel builds")
}

/// The persistent kernel over global memory: each iteration a grid-stride loop from `a` into
/// `b`, then from `b` into `a`, with a grid barrier after each (`iters` is even).
fn global_kernel() -> Kernel {
    let mut k = KernelBuilder::new("jacobi_global").block(BLOCK);
    let (a, b) = (k.buffer::<f32>("a"), k.buffer::<f32>("b"));
    let (n, iters) = (k.scalar::<u32>("n"), k.scalar::<u32>("iters"));
    let g = k.this_grid();
    let t = k.var(g.thread_rank());
    let stride = k.var(g.num_threads());
    k.for_range(0u32, iters.expr() / 2u32, |k, _| {
        for (src, dst) in [(&a, &b), (&b, &a)] {
            k.for_range_step(t.get(), n, stride.get(), |k, i| {
                let edge = i.eq(0u32) | i.eq(n.expr() - 1u32);
                let mid = (src.at(i.clone() - 1u32) + src.at(i.clone() + 1u32)) * 0.5f32;
                k.write(dst, &i, edge.select(src.at(&i), mid));
            });
            k.sync_grid();
        }
    });
    k.build().or_exit("the global kernel builds")
}

fn cpu(init: &[f32], iters: usize) -> Vec<f32> {
    let (mut u, mut next) = (init.to_vec(), init.to_vec());
    let n = u.len();
    for _ in 0..iters {
        for i in 1..n - 1 {
            next[i] = (u[i - 1] + u[i + 1]) * 0.5;
        }
        std::mem::swap(&mut u, &mut next);
    }
    u
}

fn check(what: &str, got: &[f32], want: &[f32]) {
    if let Some(i) = (0..want.len()).find(|&i| got[i].to_bits() != want[i].to_bits()) {
        eprintln!(
            "error: {what}: point {i} of {} is {} instead of {}",
            want.len(),
            got[i],
            want[i]
        );
        std::process::exit(1);
    }
}

/// How the persistent kernel runs: in registers with `points` per thread, or over global
/// memory; with how many blocks.
enum Persistent {
    Resident {
        f: Function,
        points: u32,
        blocks: u32,
    },
    Global {
        f: Function,
        blocks: u32,
    },
}

fn persistent(dev: &Device, n: usize) -> Persistent {
    let sms = dev.sm_count() as usize;
    let asked = env_usize("COOPGRAPH_JACOBI_POINTS");
    // About one block per SM, as far as 64 points per thread go.
    let first = asked.unwrap_or_else(|| n.div_ceil(sms * BLOCK as usize).next_power_of_two());
    let mut points = first.clamp(1, 64);
    while points <= 64 {
        let f = dev
            .compile(&resident_kernel(points as u32))
            .or_exit("compile");
        let threads = n.div_ceil(points);
        let blocks = threads.div_ceil(BLOCK as usize);
        let most = f.max_cooperative_blocks().or_exit("occupancy") as usize;
        if blocks <= most {
            return Persistent::Resident {
                f,
                points: points as u32,
                blocks: blocks as u32,
            };
        }
        if asked.is_some() {
            break;
        }
        points *= 2;
    }
    let f = dev.compile(&global_kernel()).or_exit("compile");
    let most = f.max_cooperative_blocks().or_exit("occupancy") as usize;
    let blocks = most.min(n.div_ceil(BLOCK as usize)).max(1) as u32;
    Persistent::Global { f, blocks }
}

/// Runs the persistent kernel from `init`; the result.
fn run_persistent(dev: &Device, p: &Persistent, init: &[f32], iters: usize) -> Vec<f32> {
    let n = init.len();
    let mut u = dev.upload(init).or_exit("upload");
    match p {
        Persistent::Resident { f, blocks, .. } => {
            let threads = *blocks as usize * BLOCK as usize;
            let mut halo = dev.alloc_zeroed::<f32>(4 * threads).or_exit("alloc");
            f.launch_cooperative_grid(*blocks, (&mut u, &mut halo, n as u32, iters as u32))
                .or_exit("the resident kernel");
        }
        Persistent::Global { f, blocks } => {
            let mut b = dev.upload(init).or_exit("upload");
            f.launch_cooperative_grid(*blocks, (&mut u, &mut b, n as u32, iters as u32))
                .or_exit("the global kernel");
        }
    }
    u.to_vec().or_exit("download")
}

fn relaunch(f: &Function, a: &mut Buffer<f32>, b: &mut Buffer<f32>, n: usize, iters: usize) {
    let config = LaunchConfig::blocks(n.div_ceil(BLOCK as usize) as u32);
    for _ in 0..iters / 2 {
        f.launch(config.clone(), (&*a, &mut *b, n as u32))
            .or_exit("a step");
        f.launch(config.clone(), (&*b, &mut *a, n as u32))
            .or_exit("a step");
    }
}

fn one_size(dev: &Device, on_gpu: bool, n: usize, iters: usize) {
    let init: Vec<f32> = (0..n)
        .map(|i| {
            if i == 0 {
                100.0
            } else if i == n - 1 {
                25.0
            } else {
                (i % 13) as f32
            }
        })
        .collect();
    let want = cpu(&init, iters);
    let step = dev.compile(&step_kernel()).or_exit("compile");

    // A launch per iteration.
    let mut a = dev.upload(&init).or_exit("upload");
    let mut b = dev.upload(&init).or_exit("upload");
    relaunch(&step, &mut a, &mut b, n, iters);
    check("relaunch", &a.to_vec().or_exit("download"), &want);

    // The same launches, captured once into a graph.
    let stream = dev.stream();
    let mut ga = dev.upload(&init).or_exit("upload");
    let mut gb = dev.upload(&init).or_exit("upload");
    let config = LaunchConfig::blocks(n.div_ceil(BLOCK as usize) as u32).on_stream(&stream);
    let graph = stream
        .capture(|s| {
            let config = config.clone().on_stream(s);
            for _ in 0..iters / 2 {
                step.launch(config.clone(), (&ga, &mut gb, n as u32))?;
                step.launch(config.clone(), (&gb, &mut ga, n as u32))?;
            }
            Ok::<(), coopgraph::Error>(())
        })
        .or_exit("capture");
    graph.launch(&stream).or_exit("graph");
    check("graph", &stream.download(&ga).or_exit("download"), &want);

    // One persistent kernel.
    let p = persistent(dev, n);
    check("grid sync", &run_persistent(dev, &p, &init, iters), &want);

    let (mode, points, blocks) = match &p {
        Persistent::Resident { points, blocks, .. } => ("registers", *points, *blocks),
        Persistent::Global { blocks, .. } => ("global", 0, *blocks),
    };
    if !on_gpu {
        println!(
            "jacobi on {n} points, {iters} iterations: relaunch, graph and grid sync ({mode}, \
             {blocks} blocks) all match the CPU"
        );
        return;
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let t_relaunch = bench::time(dev, 5, || relaunch(&step, &mut a, &mut b, n, iters));
    let t_graph = bench::time(dev, 5, || graph.launch(&stream).or_exit("graph"));
    let t_grid = match &p {
        Persistent::Resident { f, blocks, .. } => {
            let threads = *blocks as usize * BLOCK as usize;
            let mut u = dev.upload(&init).or_exit("upload");
            let mut halo = dev.alloc_zeroed::<f32>(4 * threads).or_exit("alloc");
            bench::time(dev, 5, || {
                f.launch_cooperative_grid(*blocks, (&mut u, &mut halo, n as u32, iters as u32))
                    .or_exit("the resident kernel")
            })
        }
        Persistent::Global { f, blocks } => {
            let mut u = dev.upload(&init).or_exit("upload");
            let mut v = dev.upload(&init).or_exit("upload");
            bench::time(dev, 5, || {
                f.launch_cooperative_grid(*blocks, (&mut u, &mut v, n as u32, iters as u32))
                    .or_exit("the global kernel")
            })
        }
    };
    println!(
        "jacobi,{n},{iters},{:.3},{:.3},{:.3},{mode},{points},{blocks}",
        ms(t_relaunch),
        ms(t_graph),
        ms(t_grid)
    );
}

fn main() {
    let dev = Device::default_device().or_exit("a device");
    let on_gpu = matches!(dev.backend(), Backend::Cuda { .. });
    let iters = env_usize("COOPGRAPH_JACOBI_ITERS")
        .unwrap_or(if on_gpu { 2000 } else { 20 })
        .max(2)
        .next_multiple_of(2);
    let sweep = std::env::var("COOPGRAPH_JACOBI_SWEEP").is_ok_and(|v| v == "1");
    let sizes: Vec<usize> = if sweep {
        (14..=24).step_by(2).map(|e| 1usize << e).collect()
    } else {
        vec![env_usize("COOPGRAPH_JACOBI_N").unwrap_or(if on_gpu { 1 << 20 } else { 1 << 12 })]
    };
    if on_gpu {
        println!(
            "kind,n,iters,relaunch_ms,graph_ms,grid_sync_ms,grid_sync_mode,points_per_thread,blocks"
        );
    }
    for n in sizes {
        one_size(&dev, on_gpu, n.max(3), iters);
    }
}

//! Monte Carlo estimate of π with both generators of `coopgraph::random`: each thread draws
//! points in the unit square and counts those inside the quarter circle; π ≈ 4 · hits /
//! samples. Philox4x32-10 gives two points per call of a counter (the thread's index, the
//! call's number) and the seed as key, with no state; xoroshiro128+ draws from per-thread
//! states made as Numba's `create_xoroshiro128p_states` makes them, stored back after.
//!
//! Every thread's count is checked against the same generator run on the CPU (bit for bit:
//! the same uniforms, the same `x * x + y * y < 1` in `f32`), and the estimate against π
//! (within five standard deviations of the binomial count). On a GPU the run draws 10^8
//! samples per generator (`COOPGRAPH_PI_SAMPLES` overrides it, rounded to whole threads)
//! and prints the samples per second; on the simulator 2^14, rounded up to one block's
//! 32,000.

#[path = "support/bench.rs"]
#[allow(dead_code)]
mod bench;

use bench::OrExit;

use coopgraph::ir::{Expr, index};
use coopgraph::random::{self, Xoroshiro128p, host};
use coopgraph::runtime::{Backend, Device};
use coopgraph::{Kernel, KernelBuilder};

const BLOCK: u32 = 128;
/// Points per thread (an even count: Philox gives two per call).
const PER_THREAD: u32 = 250;
const SEED: u64 = 0x5EED_1234_ABCD;

/// The thread's index in the grid.
fn global() -> Expr<u32> {
    index::block_index() * index::block_threads() + index::thread_rank()
}

/// 1 where the point `(x, y)` lies inside the quarter circle.
fn inside(x: Expr<f32>, y: Expr<f32>) -> Expr<u32> {
    (x.clone() * x + y.clone() * y).lt(1.0f32).to::<u32>()
}

fn philox_kernel() -> Kernel {
    let mut k = KernelBuilder::new("pi_philox").block(BLOCK);
    let hits = k.output::<u32>("hits");
    let (key_lo, key_hi) = (k.scalar::<u32>("key_lo"), k.scalar::<u32>("key_hi"));
    let g = global();
    let count = k.var(0u32);
    k.for_range(0u32, PER_THREAD / 2, |k, call| {
        let zero = Expr::lit(0u32);
        let w = random::philox4x32_10(
            [g.clone(), call, zero.clone(), zero],
            [key_lo.expr(), key_hi.expr()],
        );
        let u = w.map(|w| random::unit_f32_from_u32(&w));
        let [x1, y1, x2, y2] = u;
        k.set(&count, count.get() + inside(x1, y1) + inside(x2, y2));
    });
    k.write(&hits, &g, count.get());
    k.build().or_exit("the Philox kernel builds")
}

fn xoroshiro_kernel() -> Kernel {
    let mut k = KernelBuilder::new("pi_xoroshiro").block(BLOCK);
    let states = k.buffer::<u64>("states");
    let hits = k.output::<u32>("hits");
    let g = global();
    let rng = Xoroshiro128p::load(&mut k, &states, &g);
    let count = k.var(0u32);
    k.for_range(0u32, PER_THREAD, |k, _| {
        let x = rng.uniform_f32(k);
        let x = k.var(x);
        let y = rng.uniform_f32(k);
        k.set(&count, count.get() + inside(x.get(), y));
    });
    rng.store(&mut k, &states, &g);
    k.write(&hits, &g, count.get());
    k.build().or_exit("the xoroshiro kernel builds")
}

fn inside_cpu(x: f32, y: f32) -> u32 {
    u32::from(x * x + y * y < 1.0)
}

/// Thread `t`'s count with Philox on the CPU.
fn philox_cpu(t: u32) -> u32 {
    let key = [SEED as u32, (SEED >> 32) as u32];
    (0..PER_THREAD / 2)
        .map(|call| {
            let w = host::philox4x32_10([t, call, 0, 0], key).map(host::unit_f32_from_u32);
            inside_cpu(w[0], w[1]) + inside_cpu(w[2], w[3])
        })
        .sum()
}

/// Thread `t`'s count with xoroshiro128+ on the CPU, from the states before the launch.
fn xoroshiro_cpu(states: &[u64], t: usize) -> u32 {
    let Some(mut g) = host::Xoroshiro128p::from_states(states, t) else {
        return 0;
    };
    (0..PER_THREAD)
        .map(|_| {
            let x = g.uniform_f32();
            inside_cpu(x, g.uniform_f32())
        })
        .sum()
}

/// Checks the device's counts against the CPU's and the estimate against π; prints a line.
fn report(name: &str, got: &[u32], cpu: impl Fn(usize) -> u32, secs: Option<f64>) {
    if let Some(t) = (0..got.len()).find(|&t| got[t] != cpu(t)) {
        eprintln!(
            "error: {name}: thread {t} counted {} hits, the CPU {}",
            got[t],
            cpu(t)
        );
        std::process::exit(1);
    }
    let samples = got.len() as f64 * f64::from(PER_THREAD);
    let hits: u64 = got.iter().map(|&h| u64::from(h)).sum();
    let pi = 4.0 * hits as f64 / samples;
    let p = std::f64::consts::FRAC_PI_4;
    let sigma = 4.0 * (p * (1.0 - p) / samples).sqrt();
    let off = (pi - std::f64::consts::PI) / sigma;
    if off.abs() > 5.0 {
        eprintln!("error: {name}: π ≈ {pi} is {off:.1} standard deviations from π");
        std::process::exit(1);
    }
    let speed = secs.map_or(String::new(), |s| {
        format!(", {:.2e} samples/s on the GPU", samples / s)
    });
    println!(
        "{name}: {samples:.0} samples, π ≈ {pi:.6} ({off:+.2} σ, σ = {sigma:.1e}), every thread's count equals the CPU's{speed}"
    );
}

fn main() {
    let dev = Device::default_device().or_exit("a device");
    let on_gpu = matches!(dev.backend(), Backend::Cuda { .. });
    let samples: u64 = std::env::var("COOPGRAPH_PI_SAMPLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if on_gpu { 100_000_000 } else { 1 << 14 });
    let per_block = u64::from(BLOCK * PER_THREAD);
    let blocks = samples.div_ceil(per_block).max(1) as u32;
    let threads = (blocks * BLOCK) as usize;
    let key = (SEED as u32, (SEED >> 32) as u32);

    let philox = dev.compile(&philox_kernel()).or_exit("compile Philox");
    let mut hits = dev.alloc_zeroed::<u32>(threads).or_exit("alloc");
    let launch_philox = |hits: &mut coopgraph::runtime::Buffer<u32>| {
        philox
            .launch_grid(blocks, (hits, key.0, key.1))
            .or_exit("launch Philox");
    };
    launch_philox(&mut hits);
    let secs = on_gpu.then(|| bench::time(&dev, 10, || launch_philox(&mut hits)).as_secs_f64());
    let got = hits.to_vec().or_exit("download");
    report("philox4x32-10", &got, |t| philox_cpu(t as u32), secs);

    let xoroshiro = dev
        .compile(&xoroshiro_kernel())
        .or_exit("compile xoroshiro");
    let start = host::xoroshiro128p_states(threads, SEED, 0);
    let mut states = dev.upload(&start).or_exit("upload the states");
    xoroshiro
        .launch_grid(blocks, (&mut states, &mut hits))
        .or_exit("launch xoroshiro");
    let got = hits.to_vec().or_exit("download");
    // Timed launches go on from the stored states (fresh numbers each time, same work).
    let secs = on_gpu.then(|| {
        bench::time(&dev, 10, || {
            xoroshiro
                .launch_grid(blocks, (&mut states, &mut hits))
                .or_exit("launch xoroshiro");
        })
        .as_secs_f64()
    });
    report("xoroshiro128+", &got, |t| xoroshiro_cpu(&start, t), secs);
}

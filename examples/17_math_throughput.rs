//! f32 `exp` and `sin` throughput: coopgraph's accurate functions (the default, built from
//! exactly rounded PTX) and its `fastmath` ones (`ex2.approx`, `sin.approx`), beside CUDA
//! C++'s `expf`/`sinf` and `__expf`/`__sinf` compiled by nvcc (`benches/cub/math.cu`, whose
//! CSV `COOPGRAPH_CUB_CSV` names when it ran in the same session).
//!
//! Two shapes, as in the CUDA program: `stream`, `y[i] = f(x[i])` (bound by memory), and
//! `x16`, `y[i] = sum over k < 16 of f(x[i] + k / 64)` (bound by the function), with
//! `x[i]` in `[-10, 10]`. Every result is checked against the CPU's f64 functions (every
//! element on the simulator, every 97th on a GPU); on a GPU the example runs 2^28 elements
//! (`COOPGRAPH_BENCH_N` overrides) and prints 10^9 evaluations per second, and the ratio of
//! CUDA's to ours (the time ours takes over CUDA's). It also prints how long building and
//! emitting each kernel takes.

#[path = "support/bench.rs"]
#[allow(dead_code)]
mod bench;

use bench::OrExit;

use coopgraph::ir::{Expr, MathMode};
use coopgraph::ptx::Arch;
use coopgraph::runtime::Device;
use coopgraph::{Kernel, KernelBuilder, Load, Store};
use std::time::Instant;

const BLOCK: u32 = 256;
const EVALS: u32 = 16;
const STEP: f32 = 1.0 / 64.0;

/// A function of the benchmark: its name, in coopgraph and on the CPU.
type Func = (&'static str, fn(Expr<f32>) -> Expr<f32>, fn(f64) -> f64);

fn kernel(f: Func, mode: MathMode, evals: u32) -> Kernel {
    let mut k = KernelBuilder::new(format!("{}_{}", f.0, evals))
        .block(BLOCK)
        .items_per_thread(1);
    if mode == MathMode::Fast {
        k = k.fastmath();
    }
    let (x, y) = (k.input::<f32>("x"), k.output::<f32>("y"));
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::direct());
    let r = k.map(&t, |v| {
        let mut acc = (f.1)(v.clone());
        for i in 1..evals {
            acc = acc + (f.1)(v.clone() + i as f32 * STEP);
        }
        acc
    });
    k.store_to(b, &y, &r, Store::direct());
    k.build().or_exit("builds")
}

fn main() {
    let dev = Device::default_device().or_exit("a device");
    let (on_gpu, n, reps) = bench::size(&dev);
    let xs: Vec<f32> = (0..n)
        .map(|i| (i % 20011) as f32 * (20.0 / 20011.0) - 10.0)
        .collect();
    let x = dev.upload(&xs).or_exit("upload");
    let mut y = dev.alloc_zeroed::<f32>(n).or_exit("alloc");
    let cuda = bench::cub_figures();
    let funcs: [Func; 2] = [
        ("exp", |v| v.exp(), f64::exp),
        ("sin", |v| v.sin(), f64::sin),
    ];
    // The library's templates are built once per process, by the first kernel that needs one.
    let started = Instant::now();
    kernel(funcs[0], MathMode::Accurate, 1)
        .ptx(Arch::Sm90)
        .or_exit("emits");
    println!(
        "first kernel, with the math library's templates: built and emitted in {:.0} us",
        started.elapsed().as_secs_f64() * 1e6
    );
    for evals in [1, EVALS] {
        let shape = if evals == 1 { "stream" } else { "x16" };
        for f in funcs {
            for mode in [MathMode::Accurate, MathMode::Fast] {
                let started = Instant::now();
                let k = kernel(f, mode, evals);
                let ptx = k.ptx(Arch::Sm90).or_exit("emits");
                let build = started.elapsed();
                let fun = dev.compile(&k).or_exit("compile");
                fun.launch_over(n, (&x, &mut y)).or_exit("launch");
                let got = y.to_vec().or_exit("download");
                let tolerance = if mode == MathMode::Fast { 1e-5 } else { 1e-6 };
                let step = if on_gpu { 97 } else { 1 };
                for i in (0..n).step_by(step) {
                    let want: f64 = (0..evals)
                        .map(|k| (f.2)(f64::from(xs[i] + k as f32 * STEP)))
                        .sum();
                    let err = (f64::from(got[i]) - want).abs();
                    // Each evaluation may err by the tolerance: a sum of `evals` by `evals` times it.
                    if err.is_nan() || err > tolerance * f64::from(evals) * want.abs().max(1.0) {
                        eprintln!(
                            "error: {} {shape} {mode:?}, element {i}: {} instead of {want}",
                            f.0, got[i]
                        );
                        std::process::exit(1);
                    }
                }
                let label = format!("{} {shape} {mode:?}", f.0);
                let built = format!(
                    "built and emitted in {:.0} us ({} lines of PTX)",
                    build.as_secs_f64() * 1e6,
                    ptx.lines().count()
                );
                if !on_gpu {
                    println!("{label}: {n} elements correct; {built}");
                    continue;
                }
                let t = bench::time(&dev, reps, || {
                    fun.launch_over(n, (&x, &mut y)).or_exit("launch")
                });
                let ours = (n as f64 * f64::from(evals)) / t.as_secs_f64() / 1e9;
                let theirs = match mode {
                    MathMode::Accurate => format!("{}f", f.0),
                    MathMode::Fast => format!("__{}f", f.0),
                };
                let key = ("math".into(), "f32".into(), theirs.clone(), BLOCK, evals);
                let (c, ratio) = bench::versus(ours, cuda.get(&key));
                println!(
                    "{label}: {ours:.1} G evaluations/s; CUDA {theirs}: {c}; coopgraph / CUDA = {ratio}; {built}"
                );
            }
        }
    }
}

//! Chooses the load/store algorithm (and, on a GPU, the block shape) at run time with the
//! autotuner: one kernel per candidate, each compiled once and cached, checked against the
//! first candidate's output and timed; the winner is kept in the disk cache directory, so the
//! next run of this example on the same GPU and driver builds the winner without measuring. On
//! the simulator the times are CPU times, and nothing is stored.
//!
//! `cargo run --example 04_choose_algorithm [ALGORITHM]` tunes over one algorithm only.

use coopgraph::ir::Algorithm;
use coopgraph::runtime::{Bench, Buffer, Device, Function, Outcome, TuneSource, Tuner, Workload};
use coopgraph::{Kernel, KernelBuilder, Load, Store};

/// A candidate: the algorithm, threads per block and items per thread.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Choice {
    algorithm: Algorithm,
    block: u32,
    items: u32,
}

/// `y = x / 2` over `n` elements, loaded and stored with the candidate's algorithm.
fn kernel_for(c: &Choice) -> Result<Kernel, coopgraph::Error> {
    let mut k = KernelBuilder::new(format!("scale_{:?}_{}x{}", c.algorithm, c.block, c.items))
        .block(c.block)
        .items_per_thread(c.items);
    let x = k.input::<f32>("x");
    let y = k.output::<f32>("y");
    let n = k.scalar::<u32>("n");
    let block = k.this_block();
    let algorithm = c.algorithm;
    k.tiles(n, |k, _tile| {
        let t = k.load_from(block, &x, Load::direct().algorithm(algorithm));
        let t = k.map(&t, |v| v * 0.5);
        k.store_to(block, &y, &t, Store::default().algorithm(algorithm));
    });
    k.build()
}

/// The problem every candidate runs on.
struct Scale {
    x: Buffer<f32>,
    y: Buffer<f32>,
}

impl Workload<Choice> for Scale {
    type Output = Vec<f32>;
    type Error = coopgraph::Error;

    fn reset(&mut self) -> Result<(), coopgraph::Error> {
        Ok(self.y.write(&vec![f32::NAN; self.y.len()])?)
    }

    fn launch(&mut self, f: &Function, _: &Choice) -> Result<(), coopgraph::Error> {
        let n = self.x.len();
        Ok(f.launch_over(n, (&self.x, &mut self.y, n as u32))?)
    }

    fn output(&mut self) -> Result<Vec<f32>, coopgraph::Error> {
        Ok(self.y.to_vec()?)
    }
}

/// Runs the example; an error is printed with its `Display` text (each cause once).
fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let device = Device::default_device()?;
    // COOPGRAPH_BENCH_N overrides the element count (the sanitizers run on fewer).
    let n: usize = std::env::var("COOPGRAPH_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if device.is_cuda() { 1 << 24 } else { 1 << 14 });
    let xs: Vec<f32> = (0..n).map(|i| (i % 4096) as f32).collect();
    let mut work = Scale {
        x: device.upload(&xs)?,
        y: device.alloc_zeroed::<f32>(n)?,
    };
    let requested = std::env::args().nth(1);
    let shapes: &[(u32, u32)] = if device.is_cuda() {
        &[(128, 4), (256, 4), (256, 8), (512, 2)]
    } else {
        &[(256, 4)]
    };
    let mut space = Vec::new();
    for algorithm in Algorithm::ALL {
        if requested
            .as_deref()
            .is_some_and(|r| !format!("{algorithm:?}").eq_ignore_ascii_case(r))
        {
            continue;
        }
        for &(block, items) in shapes {
            space.push(Choice {
                algorithm,
                block,
                items,
            });
        }
    }
    let bench = if device.is_cuda() {
        Bench::default()
    } else {
        Bench::ms(0, 1)
    };
    let tuner = Tuner::new(&device, "example_scale_f32").with_bench(bench);
    let tuned = tuner.tune(n as u64, &space, kernel_for, &mut work)?;
    for c in &tuned.candidates {
        match &c.outcome {
            Outcome::Timed(t) => println!(
                "{}: {:.3} ms, {:.1} GB/s",
                c.config,
                t.median().as_secs_f64() * 1e3,
                t.gb_per_s(2 * 4 * n as u64)
            ),
            Outcome::Pruned { screened, .. } => println!(
                "{}: pruned ({:.3} ms in the short benchmark)",
                c.config,
                screened.as_secs_f64() * 1e3
            ),
            Outcome::WrongOutput => println!("{}: wrong output", c.config),
            Outcome::Failed(e) => println!("{}: failed: {e}", c.config),
            other => println!("{}: {other:?}", c.config),
        }
    }
    let how = match tuned.source {
        TuneSource::Measured => "measured now",
        TuneSource::Stored => "stored by an earlier run",
    };
    println!(
        "winner: {:?} ({:.3} ms, {how})",
        tuned.config,
        tuned.median.as_secs_f64() * 1e3
    );

    // The winner computes what every candidate was checked against.
    work.launch(&tuned.function, &tuned.config)?;
    if work.output()?.iter().zip(&xs).any(|(g, x)| *g != x * 0.5) {
        return Err("the winner computed a wrong result".into());
    }
    // Building the winner again is a lookup in the device's cache of compiled kernels.
    let again = device.compile(&kernel_for(&tuned.config)?)?;
    assert!(tuned.function.same_module(&again));
    println!("cache: {:?}", device.cache_stats());
    Ok(())
}

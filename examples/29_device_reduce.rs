//! A whole-array sum with [`coopgraph::algorithms::DeviceReduce`], left on the device
//! ([`PreparedReduce::run_into`](coopgraph::algorithms::PreparedReduce::run_into)) as
//! `cub::DeviceReduce::Sum` leaves it, checked against the CPU for `i32`, `u32`, `f32` and
//! `u64`.
//!
//! On a GPU it runs 2^28 elements (`COOPGRAPH_BENCH_N` overrides; the simulator runs 2^14)
//! and prints GB/s (n · element bytes per sum) at the default tuning, beside
//! `cub::DeviceReduce::Sum` when `COOPGRAPH_CUB_CSV` names the CSV of `benches/cub/device.cu`
//! from the same run. `COOPGRAPH_REDUCE_SWEEP=1` also times (and checks) other tunings. The
//! process exits non-zero when any result is wrong.

#[path = "support/bench.rs"]
#[allow(dead_code)]
mod bench;

use bench::OrExit;
use coopgraph::algorithms::{DeviceReduce, Op, ScanElement, Tuning, Workspace, default_tuning};
use coopgraph::ir::DType;
use coopgraph::runtime::Device;

/// The input: small integers (so every type's sum is exact in any order), and their sum.
fn input<T: ScanElement>(n: usize) -> (Vec<T>, i64) {
    let vals: Vec<i64> = (0..n as u64)
        .map(|i| ((i.wrapping_mul(2654435761) >> 7) % 4) as i64)
        .collect();
    let sum = vals.iter().sum();
    (vals.into_iter().map(T::cast_from_i64).collect(), sum)
}

/// Sums `n` elements of `T` at `tuning`, checks the result, and on a GPU returns GB/s.
fn sum<T: ScanElement>(
    device: &Device,
    n: usize,
    reps: usize,
    tuning: Tuning,
) -> Result<Option<f64>, Box<dyn std::error::Error>> {
    let (xs, want) = input::<T>(n);
    let want = T::cast_from_i64(want);
    let x = device.upload(&xs)?;
    let mut out = device.alloc_zeroed::<T>(1)?;
    let r = DeviceReduce::new(Op::<T>::sum())
        .tuning(tuning)
        .prepare(device)?;
    let mut ws = Workspace::new(device)?;
    let what = format!("sum {} {}x{}", T::DTYPE, tuning.threads, tuning.items);
    let check = |out: &coopgraph::runtime::Buffer<T>| -> Result<(), String> {
        let got = out.to_vec().map_err(|e| e.to_string())?[0];
        if got.to_bits() == want.to_bits() {
            Ok(())
        } else {
            Err(format!("{what}: {got:?} instead of {want:?}"))
        }
    };
    r.run_into(&x, &mut out, &mut ws)?;
    check(&out)?;
    if !device.is_cuda() {
        return Ok(None);
    }
    let t = bench::time(device, reps, || {
        r.run_into(&x, &mut out, &mut ws).or_exit("device reduce");
    });
    check(&out)?;
    Ok(Some(bench::gbps(n * T::DTYPE.bytes() as usize, t)))
}

/// One element type's [`sum`].
type Sum = fn(&Device, usize, usize, Tuning) -> Result<Option<f64>, Box<dyn std::error::Error>>;

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
    let (_, n, reps) = bench::size(&device);
    let cub = bench::cub_figures();
    let runs: [(DType, Sum); 4] = [
        (DType::I32, sum::<i32>),
        (DType::U32, sum::<u32>),
        (DType::F32, sum::<f32>),
        (DType::U64, sum::<u64>),
    ];
    for (d, f) in runs {
        let dtype = d.to_string();
        let tuning = default_tuning(d);
        if let Some(g) = f(&device, n, reps, tuning)? {
            let key = ("device_reduce".into(), dtype.clone(), "sum".into(), 0, 0);
            let (c, ratio) = bench::versus(g, cub.get(&key));
            println!(
                "reduce {dtype} {}x{}: {g:.0} GB/s; cub::DeviceReduce::Sum {dtype}: {c} GB/s; ratio {ratio}",
                tuning.threads, tuning.items
            );
        }
    }
    if std::env::var("COOPGRAPH_REDUCE_SWEEP").is_ok_and(|v| v == "1") {
        for (threads, items) in [(128, 16), (256, 8), (256, 16), (256, 32), (512, 16)] {
            let tuning = Tuning { threads, items };
            if let Some(g) = sum::<u32>(&device, n, reps, tuning)? {
                println!("sweep: reduce u32 {threads}x{items}: {g:.0} GB/s");
            }
            if items <= 16
                && let Some(g) = sum::<u64>(&device, n, reps, tuning)?
            {
                println!("sweep: reduce u64 {threads}x{items}: {g:.0} GB/s");
            }
        }
    }
    println!("reduced {n} elements on {:?}: correct", device.backend());
    Ok(())
}

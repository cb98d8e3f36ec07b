//! Device-wide histograms and segmented sums, on the inputs of the CUB reference harness
//! (`benches/cub/device.cu`), each checked against the host:
//! - `histogram_even` of `u8` samples (every bit of a hash of the index, seed `0xD1`) into 256
//!   bins over levels [0, 256), and of `f32` samples (24 random bits scaled into [0, 1), seed
//!   `0xD2`) into 256 bins over [0, 1): both bin widths are powers of two, so the host's bin
//!   (`x`, `x * 256`) is the device's exactly;
//! - `segmented_reduce` (sum) of `f32` samples in [0, 1) (seed `0xD9`) in segments of 1024
//!   (the last one short), checked against the host's double sums (relative 1e-4).
//!
//! On a GPU it runs 2^28 elements (`COOPGRAPH_BENCH_N` overrides; the simulator runs 2^14) and
//! prints GB/s (the histograms count the samples read; the segmented sum the input, the
//! offsets and the sums, as CUB's harness does) beside `cub::DeviceHistogram::HistogramEven`
//! and `cub::DeviceSegmentedReduce::Sum` when `COOPGRAPH_CUB_CSV` names the CSV that
//! `benches/cub/run.sh` wrote for `device.cu`. With the argument `--sweep` it also times (and
//! checks) other tunings of each. The process exits non-zero when any result is wrong.

#[path = "support/bench.rs"]
#[allow(dead_code)]
mod bench;

use bench::OrExit;
use coopgraph::algorithms::{
    DeviceHistogram, DeviceSegmentedReduce, HistogramSample, Op, Tuning, Workspace,
    default_histogram_tuning, default_segmented_tuning,
};
use coopgraph::runtime::Device;

const BINS: u32 = 256;
const SEGMENT: usize = 1024;

const SEED_HISTOGRAM_U8: u64 = 0xD1;
const SEED_HISTOGRAM_F32: u64 = 0xD2;
const SEED_SEGMENTS: u64 = 0xD9;

/// The harness's `RandomBits<u8>`.
fn random_byte(i: u64, seed: u64) -> u8 {
    bench::mix64(i ^ (seed << 40)) as u8
}

/// The harness's `Pattern<float>`: 24 random bits scaled into [0, 1).
fn pattern_f32(i: u64, seed: u64) -> f32 {
    (bench::mix64(i ^ (seed << 40)) >> 40) as f32 * (1.0 / 16_777_216.0) as f32
}

/// Runs one histogram at `tuning`, checks it against `want`, and on a GPU returns its GB/s.
fn histogram<T: HistogramSample>(
    device: &Device,
    samples: &coopgraph::runtime::Buffer<T>,
    (lower, upper): (T::Level, T::Level),
    want: &[u32],
    tuning: Tuning,
    reps: usize,
) -> Result<Option<f64>, Box<dyn std::error::Error>> {
    let h = DeviceHistogram::<T>::even(BINS)
        .tuning(tuning)
        .prepare(device)?;
    let mut counts = device.alloc_zeroed::<u32>(BINS as usize)?;
    let what = format!(
        "histogram_even {} {}x{}",
        T::DTYPE,
        tuning.threads,
        tuning.items
    );
    let check = |counts: &coopgraph::runtime::Buffer<u32>| -> Result<(), String> {
        let got = counts.to_vec().map_err(|e| e.to_string())?;
        match (0..want.len()).find(|&b| got[b] != want[b]) {
            Some(b) => Err(format!(
                "{what}: bin {b} is {}, expected {}",
                got[b], want[b]
            )),
            None => Ok(()),
        }
    };
    h.run_even(samples, &mut counts, lower, upper)?;
    check(&counts)?;
    if !device.is_cuda() {
        return Ok(None);
    }
    let t = bench::time(device, reps, || {
        h.run_even(samples, &mut counts, lower, upper)
            .or_exit("histogram")
    });
    check(&counts)?;
    let bytes = samples.len() * T::DTYPE.bytes() as usize;
    Ok(Some(bench::gbps(bytes, t)))
}

/// Runs the segmented sum at `tuning`, checks it, and on a GPU returns its GB/s.
fn segmented(
    device: &Device,
    xs: &[f32],
    tuning: Tuning,
    reps: usize,
) -> Result<Option<f64>, Box<dyn std::error::Error>> {
    let n = xs.len();
    let segments = n.div_ceil(SEGMENT);
    let offsets: Vec<u32> = (0..=segments)
        .map(|s| (s * SEGMENT).min(n) as u32)
        .collect();
    let x = device.upload(xs)?;
    let ob = device.upload(&offsets)?;
    let mut out = device.alloc_zeroed::<f32>(segments)?;
    let r = DeviceSegmentedReduce::new(Op::<f32>::sum())
        .tuning(tuning)
        .prepare(device)?;
    let mut ws = Workspace::new(device)?;
    let what = format!("segmented sum f32 {}x{}", tuning.threads, tuning.items);
    let check = |out: &coopgraph::runtime::Buffer<f32>| -> Result<(), String> {
        let got = out.to_vec().map_err(|e| e.to_string())?;
        for (s, w) in offsets.windows(2).enumerate() {
            let want: f64 = xs[w[0] as usize..w[1] as usize]
                .iter()
                .map(|&v| f64::from(v))
                .sum();
            let err = (f64::from(got[s]) - want).abs();
            if err > 1e-4 * want.abs().max(1.0) {
                return Err(format!(
                    "{what}: segment {s} is {}, expected {want}",
                    got[s]
                ));
            }
        }
        Ok(())
    };
    r.run(&x, &ob, &mut out, 0.0, &mut ws)?;
    check(&out)?;
    if !device.is_cuda() {
        return Ok(None);
    }
    let t = bench::time(device, reps, || {
        r.run(&x, &ob, &mut out, 0.0, &mut ws)
            .or_exit("segmented reduce")
    });
    check(&out)?;
    let bytes = n * 4 + (segments + 1) * 4 + segments * 4;
    Ok(Some(bench::gbps(bytes, t)))
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

/// `default`, then (when sweeping) the other tunings of `others`.
fn tunings(default: Tuning, sweep: bool, others: [(u32, u32); 5]) -> Vec<Tuning> {
    let mut v = vec![default];
    if sweep {
        v.extend(others.map(|(threads, items)| Tuning { threads, items }));
    }
    v
}

/// One row: ours at `t` beside CUB's `theirs` figure.
fn row(ours: &str, t: Tuning, g: f64, theirs: &str, cub: Option<&f64>) {
    let (c, ratio) = bench::versus(g, cub);
    let (threads, items) = (t.threads, t.items);
    println!("{ours} {threads}x{items}: {g:.0} GB/s; {theirs}: {c} GB/s; ratio {ratio}");
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let device = Device::default_device()?;
    let (_, n, reps) = bench::size(&device);
    let cub = bench::cub_figures();
    let key = |kind: &str, dtype: &str, alg: &str| {
        (kind.to_string(), dtype.to_string(), alg.to_string(), 0, 0)
    };
    let sweep = std::env::args().any(|a| a == "--sweep");
    let cub_even = "cub::DeviceHistogram::HistogramEven";

    // u8 samples, 256 bins over [0, 256): the bin is the byte.
    let bytes: Vec<u8> = (0..n as u64)
        .map(|i| random_byte(i, SEED_HISTOGRAM_U8))
        .collect();
    let mut want = vec![0u32; BINS as usize];
    for &b in &bytes {
        want[b as usize] += 1;
    }
    let samples = device.upload(&bytes)?;
    drop(bytes);
    let default = default_histogram_tuning(coopgraph::ir::DType::U8);
    let others = [(128, 32), (256, 16), (256, 64), (512, 32), (1024, 16)];
    let theirs = cub.get(&key("device_histogram", "u8", "histogram_even"));
    for t in tunings(default, sweep, others) {
        if let Some(g) = histogram::<u8>(&device, &samples, (0, BINS), &want, t, reps)? {
            row("histogram_even u8", t, g, &format!("{cub_even} u8"), theirs);
        }
    }
    drop(samples);

    // f32 samples in [0, 1), 256 bins over [0, 1): the bin is x * 256, exactly.
    let floats: Vec<f32> = (0..n as u64)
        .map(|i| pattern_f32(i, SEED_HISTOGRAM_F32))
        .collect();
    let mut want = vec![0u32; BINS as usize];
    for &x in &floats {
        want[(x * BINS as f32) as usize] += 1;
    }
    let samples = device.upload(&floats)?;
    drop(floats);
    let default = default_histogram_tuning(coopgraph::ir::DType::F32);
    let others = [(128, 16), (256, 16), (256, 32), (512, 8), (512, 16)];
    let theirs = cub.get(&key("device_histogram", "f32", "histogram_even"));
    for t in tunings(default, sweep, others) {
        if let Some(g) = histogram::<f32>(&device, &samples, (0.0, 1.0), &want, t, reps)? {
            row(
                "histogram_even f32",
                t,
                g,
                &format!("{cub_even} f32"),
                theirs,
            );
        }
    }
    drop(samples);

    // Segmented sums of 1024-element f32 segments.
    let xs: Vec<f32> = (0..n as u64)
        .map(|i| pattern_f32(i, SEED_SEGMENTS))
        .collect();
    let default = default_segmented_tuning(coopgraph::ir::DType::F32);
    let others = [(128, 8), (128, 4), (512, 2), (1024, 1), (256, 8)];
    let theirs = cub.get(&key("device_segmented_reduce", "f32", "sum"));
    for t in tunings(default, sweep, others) {
        if let Some(g) = segmented(&device, &xs, t, reps)? {
            let ours = format!("segmented_reduce sum f32 (segments of {SEGMENT})");
            row(&ours, t, g, "cub::DeviceSegmentedReduce::Sum f32", theirs);
        }
    }
    println!(
        "histograms and segmented sums of {n} elements on {:?}: correct",
        device.backend()
    );
    Ok(())
}

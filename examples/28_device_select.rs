//! Device-wide selection, partition and run-length encoding, single pass with decoupled
//! look-back ([`coopgraph::algorithms::DeviceSelect`],
//! [`coopgraph::algorithms::DeviceRunLengthEncode`]), each checked against the host:
//! - `select_if` of `u32` keeping the even ones and of `f32` keeping those above 0.5, on the
//!   inputs `benches/cub/device.cu` builds for its `device_select` rows (a hash of the index:
//!   every bit for `u32`, 24 random bits scaled into [0, 1) for `f32`); also `u32` keeping
//!   those whose value mod 10 is below 3 (30% kept);
//! - `partition` of the same inputs (kept first in order, the rest after them in reverse
//!   order, as `cub::DevicePartition::If`);
//! - `run_length_encode` of `u32` runs of hashed lengths 1 to 16, as device.cu builds them.
//!
//! On a GPU it runs 2^28 elements (`COOPGRAPH_BENCH_N` overrides; the simulator runs 2^14)
//! and prints GB/s counted as device.cu counts them (selection: input read, kept elements
//! and the count written; partition: input read, output and count written; encoding: input
//! read, each run's value and length and the count written), beside CUB's rows when
//! `COOPGRAPH_CUB_CSV` names the CSV of `benches/cub/device.cu` from the same run. The counts
//! stay on the device while timing, as CUB's do. With the argument `sweep` it also times (and
//! checks) the `u32` selection, partition and encoding at several tunings; `sweep-encode`
//! sweeps the encoding alone. The process exits non-zero
//! when any result is wrong.

#[path = "support/bench.rs"]
#[allow(dead_code)]
mod bench;

use bench::OrExit;
use coopgraph::algorithms::{
    DeviceRunLengthEncode, DeviceSelect, PredicateFn, Tuning, Workspace, default_run_length_tuning,
    default_select_tuning,
};
use coopgraph::ir::{DType, Expr};
use coopgraph::runtime::{Buffer, Device, DeviceElement};
use std::sync::Arc;

/// device.cu's `RandomBits<u32>{kSeedSelectU32}`.
fn select_u32(n: usize) -> Vec<u32> {
    (0..n as u64)
        .map(|i| bench::mix64(i ^ (0xD3 << 40)) as u32)
        .collect()
}

/// device.cu's `Pattern<float>{kSeedSelectF32, 0}`.
fn select_f32(n: usize) -> Vec<f32> {
    (0..n as u64)
        .map(|i| (bench::mix64(i ^ (0xD4 << 40)) >> 40) as f32 * (1.0 / 16_777_216.0))
        .collect()
}

/// device.cu's runs: hashed lengths 1 to 16 (the last cut at `n`), each value different from
/// the one before.
fn runs_u32(n: usize) -> Vec<u32> {
    let mut xs = Vec::with_capacity(n);
    let mut previous = 0u32;
    let mut r = 0u64;
    while xs.len() < n {
        let h = bench::mix64(r ^ (0xD8 << 40));
        let mut value = (h >> 32) as u32;
        if r > 0 && value == previous {
            value ^= 1;
        }
        let len = (1 + (h % 16) as usize).min(n - xs.len());
        xs.extend(std::iter::repeat_n(value, len));
        previous = value;
        r += 1;
    }
    xs
}

/// Fails unless `got` has the bits of `want`, naming the first difference.
fn expect<T: DeviceElement>(what: &str, got: &[T], want: &[T]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} elements, expected {}",
            got.len(),
            want.len()
        ));
    }
    match (0..got.len()).find(|&i| got[i].to_bits() != want[i].to_bits()) {
        Some(i) => Err(format!(
            "{what}: element {i} is {:?}, expected {:?}",
            got[i], want[i]
        )),
        None => Ok(()),
    }
}

/// What one selection or partition run needs.
struct Case<'a, T: DeviceElement> {
    device: &'a Device,
    reps: usize,
    xs: &'a [T],
    x: &'a Buffer<T>,
    keep: fn(T) -> bool,
}

/// Runs the selection (or partition) of `case` at `tuning`, checks it (and again after the
/// timed runs), and on a GPU returns its GB/s.
fn select<T: DeviceElement>(
    case: &Case<'_, T>,
    partition: bool,
    predicate: PredicateFn<T>,
    tuning: Tuning,
) -> Result<Option<f64>, Box<dyn std::error::Error>> {
    let Case {
        device,
        reps,
        xs,
        x,
        keep,
    } = *case;
    let n = xs.len();
    let mut want: Vec<T> = xs.iter().copied().filter(|&v| keep(v)).collect();
    let kept = want.len();
    if partition {
        want.extend(xs.iter().rev().copied().filter(|&v| !keep(v)));
    }
    let p = move |v| predicate(v);
    let s = if partition {
        DeviceSelect::partition(p)
    } else {
        DeviceSelect::new(p)
    };
    let s = s.tuning(tuning).prepare(device)?;
    let mut ws = Workspace::new(device)?;
    let mut out = device.alloc_zeroed::<T>(n)?;
    let mut count = device.alloc_zeroed::<u32>(1)?;
    let what = format!(
        "{} {} {}x{}",
        if partition { "partition" } else { "select_if" },
        T::DTYPE,
        tuning.threads,
        tuning.items
    );
    let check = |out: &Buffer<T>, count: &Buffer<u32>| -> Result<(), String> {
        let c = count.to_vec().map_err(|e| e.to_string())?[0] as usize;
        if c != kept {
            return Err(format!("{what}: count {c}, expected {kept}"));
        }
        let got = out.to_vec().map_err(|e| e.to_string())?;
        expect(&what, &got[..want.len()], &want)
    };
    s.run_to_device(x, &mut out, &mut count, &mut ws)?;
    check(&out, &count)?;
    if kept != s.run(x, &mut out, &mut ws)? {
        return Err(format!("{what}: the count returned differs").into());
    }
    if !device.is_cuda() {
        return Ok(None);
    }
    let t = bench::time(device, reps, || {
        s.run_to_device(x, &mut out, &mut count, &mut ws)
            .or_exit("selection")
    });
    check(&out, &count)?;
    let written = if partition { n } else { kept };
    Ok(Some(bench::gbps(
        (n + written) * T::DTYPE.bytes() as usize + 4,
        t,
    )))
}

/// Runs the encoding of `xs` at `tuning`, checks it, and on a GPU returns its GB/s.
fn encode(
    device: &Device,
    reps: usize,
    xs: &[u32],
    tuning: Tuning,
) -> Result<Option<f64>, Box<dyn std::error::Error>> {
    let n = xs.len();
    let (mut want_u, mut want_c) = (Vec::new(), Vec::<u32>::new());
    for (i, &v) in xs.iter().enumerate() {
        if i == 0 || v != xs[i - 1] {
            want_u.push(v);
            want_c.push(0);
        }
        if let Some(c) = want_c.last_mut() {
            *c += 1;
        }
    }
    let runs = want_u.len();
    let rle = DeviceRunLengthEncode::<u32>::new()
        .tuning(tuning)
        .prepare(device)?;
    let mut ws = Workspace::new(device)?;
    let x = device.upload(xs)?;
    let (mut unique, mut counts) = (device.alloc_zeroed(n)?, device.alloc_zeroed(n)?);
    let mut num = device.alloc_zeroed::<u32>(1)?;
    let what = format!("run_length_encode u32 {}x{}", tuning.threads, tuning.items);
    let check = |u: &Buffer<u32>, c: &Buffer<u32>, num: &Buffer<u32>| -> Result<(), String> {
        let r = num.to_vec().map_err(|e| e.to_string())?[0] as usize;
        if r != runs {
            return Err(format!("{what}: {r} runs, expected {runs}"));
        }
        let u = u.to_vec().map_err(|e| e.to_string())?;
        let c = c.to_vec().map_err(|e| e.to_string())?;
        expect(&format!("{what} unique"), &u[..runs], &want_u)?;
        expect(&format!("{what} counts"), &c[..runs], &want_c)
    };
    rle.run_to_device(&x, &mut unique, &mut counts, &mut num, &mut ws)?;
    check(&unique, &counts, &num)?;
    if !device.is_cuda() {
        return Ok(None);
    }
    let t = bench::time(device, reps, || {
        rle.run_to_device(&x, &mut unique, &mut counts, &mut num, &mut ws)
            .or_exit("run-length encoding")
    });
    check(&unique, &counts, &num)?;
    Ok(Some(bench::gbps(n * 4 + runs * 8 + 4, t)))
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
    let (_, n, reps) = bench::size(&device);
    let cub = bench::cub_figures();
    let key = |kind: &str, dtype: &str, alg: &str| {
        (kind.to_string(), dtype.to_string(), alg.to_string(), 0, 0)
    };
    let report = |what: &str, g: Option<f64>, theirs: Option<(&str, &str, &str)>| {
        if let Some(g) = g {
            let c = theirs.and_then(|(k, d, a)| cub.get(&key(k, d, a)));
            let (c, ratio) = bench::versus(g, c);
            println!("{what}: {g:.0} GB/s; CUB: {c} GB/s; ratio {ratio}");
        }
    };
    let wide = default_select_tuning(DType::U32);

    let xs = select_u32(n);
    let x = device.upload(&xs)?;
    let mut y = device.alloc_zeroed::<u32>(n)?;
    if let Some(copy) = bench::copy_gbps(&device, reps, &x, &mut y) {
        println!("device-to-device copy u32: {copy:.0} GB/s");
    }
    let case = Case {
        device: &device,
        reps,
        xs: &xs,
        x: &x,
        keep: |v| v % 2 == 0,
    };
    let even: PredicateFn<u32> = Arc::new(|v: Expr<u32>| (v % 2u32).eq(0u32));
    let g = select(&case, false, even.clone(), wide)?;
    report(
        "select_if u32 (x % 2 == 0)",
        g,
        Some(("device_select", "u32", "if")),
    );
    let g = select(&case, true, even.clone(), wide)?;
    report(
        "partition u32 (x % 2 == 0)",
        g,
        Some(("device_partition", "u32", "if")),
    );
    let thirty = Case {
        keep: |v| v % 10 < 3,
        ..case
    };
    let below3: PredicateFn<u32> = Arc::new(|v: Expr<u32>| (v % 10u32).lt(3u32));
    let g = select(&thirty, false, below3.clone(), wide)?;
    report(
        "select_if u32 (x % 10 < 3, 30% kept)",
        g,
        Some(("device_select", "u32", "if_30pct")),
    );

    let fs = select_f32(n);
    let f = device.upload(&fs)?;
    let fcase = Case {
        device: &device,
        reps,
        xs: &fs,
        x: &f,
        keep: |v| v > 0.5,
    };
    let above: PredicateFn<f32> = Arc::new(|v: Expr<f32>| v.gt(0.5f32));
    let g = select(&fcase, false, above.clone(), wide)?;
    report(
        "select_if f32 (x > 0.5)",
        g,
        Some(("device_select", "f32", "if")),
    );
    let g = select(&fcase, true, above, wide)?;
    report(
        "partition f32 (x > 0.5)",
        g,
        Some(("device_partition", "f32", "if")),
    );

    let rs = runs_u32(n);
    let g = encode(&device, reps, &rs, default_run_length_tuning(DType::U32))?;
    report(
        "run_length_encode u32 (runs of 1..16)",
        g,
        Some(("device_run_length_encode", "u32", "encode")),
    );

    let sweep = std::env::args().any(|a| a == "sweep");
    let sweep_encode = std::env::args().any(|a| a == "sweep-encode");
    if sweep || sweep_encode {
        for (threads, items) in [
            (128, 16),
            (256, 8),
            (256, 12),
            (256, 16),
            (256, 24),
            (256, 32),
            (384, 16),
            (384, 20),
            (512, 8),
            (512, 16),
        ] {
            let t = Tuning { threads, items };
            if sweep {
                let g = select(&thirty, false, below3.clone(), t)?;
                report(
                    &format!("sweep: select_if u32 30% {threads}x{items}"),
                    g,
                    None,
                );
                let g = select(&case, true, even.clone(), t)?;
                report(&format!("sweep: partition u32 {threads}x{items}"), g, None);
            }
            let g = encode(&device, reps, &rs, t)?;
            report(
                &format!("sweep: run_length_encode u32 {threads}x{items}"),
                g,
                None,
            );
        }
    }
    println!(
        "selected, partitioned and encoded {n} elements on {:?}: correct",
        device.backend()
    );
    Ok(())
}

//! What the bandwidth benchmarks share: problem size and repetitions per device, median
//! timing, the device-to-device copy baseline, and CUB's figures from the reference harness's
//! CSV (`benches/cub`).

use coopgraph::runtime::{Backend, Buffer, Device, DeviceElement};
use std::collections::HashMap;
use std::fmt::Display;
use std::time::Duration;

/// A result the benchmark cannot go on without: its value, or the error printed with its
/// `Display` text (each cause once) and the process ended with status 1.
pub trait OrExit<T> {
    /// The value, or exit naming `what` failed.
    fn or_exit(self, what: &str) -> T;
}

impl<T, E: Display> OrExit<T> for Result<T, E> {
    fn or_exit(self, what: &str) -> T {
        match self {
            Ok(v) => v,
            Err(e) => {
                eprintln!("error: {what}: {e}");
                std::process::exit(1)
            }
        }
    }
}

/// Elements and timed repetitions: 2^28 and 20 on a GPU (`COOPGRAPH_BENCH_N` overrides the
/// size), 2^14 and 1 on the simulator, whose times say nothing about a GPU.
pub fn size(dev: &Device) -> (bool, usize, usize) {
    let on_gpu = matches!(dev.backend(), Backend::Cuda { .. });
    let n = std::env::var("COOPGRAPH_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if on_gpu { 1 << 28 } else { 1 << 14 });
    (on_gpu, n, if on_gpu { 20 } else { 1 })
}

/// The median of `reps` timed runs of `f`, after two untimed ones.
pub fn time(dev: &Device, reps: usize, mut f: impl FnMut()) -> Duration {
    f();
    f();
    let mut v: Vec<Duration> = (0..reps)
        .map(|_| dev.time(&mut f).or_exit("timing").1)
        .collect();
    v.sort();
    v[v.len() / 2]
}

/// The reference harness's hash (`mix64` of `benches/cub/common.cuh`).
pub fn mix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Element `i` of the harness's `fill_pattern(buf, seed, 255)` of bytes (`pattern_value`): a
/// uniform byte, so a benchmark counting these counts what CUB's counts.
pub fn pattern_byte(i: u64, seed: u64) -> u8 {
    (mix64(i ^ (seed << 40)) % 256) as u8
}

/// GB/s (10^9 bytes per second).
pub fn gbps(bytes: usize, t: Duration) -> f64 {
    bytes as f64 / t.as_secs_f64() / 1e9
}

/// The device-to-device copy of `x` into `y` (GB/s counting bytes read and written), on a GPU.
pub fn copy_gbps<T: DeviceElement>(
    dev: &Device,
    reps: usize,
    x: &Buffer<T>,
    y: &mut Buffer<T>,
) -> Option<f64> {
    let stream = dev.cuda_stream()?.clone();
    let (src, dst) = (x.as_cuda()?, y.as_cuda_mut()?);
    let t = time(dev, reps, || {
        stream
            .memcpy_dtod(src, &mut *dst)
            .or_exit("device-to-device copy")
    });
    Some(gbps(2 * x.len() * T::DTYPE.bytes() as usize, t))
}

/// CUB's GB/s by (kind, dtype, algorithm, block, items).
pub type CubFigures = HashMap<(String, String, String, u32, u32), f64>;

/// CUB's GB/s by (kind, dtype, algorithm, block, items), from the CSV that `COOPGRAPH_CUB_CSV`
/// names (empty without it).
pub fn cub_figures() -> CubFigures {
    let mut map = HashMap::new();
    let Ok(path) = std::env::var("COOPGRAPH_CUB_CSV") else {
        return map;
    };
    let text = std::fs::read_to_string(&path).or_exit(&path);
    for line in text.lines().skip(1) {
        if let [kind, dtype, alg, block, items, g] = line.split(',').collect::<Vec<_>>()[..]
            && let (Ok(b), Ok(i), Ok(g)) = (block.parse(), items.parse(), g.parse())
        {
            map.insert((kind.into(), dtype.into(), alg.into(), b, i), g);
        }
    }
    map
}

/// `"{ours / of * 100:.1}%"`, or `-` without a baseline.
pub fn percent(ours: f64, of: Option<f64>) -> String {
    of.map(|c| format!("{:.1}%", 100.0 * ours / c))
        .unwrap_or_else(|| "-".into())
}

/// CUB's figure and our ratio to it, or `-` for both.
pub fn versus(ours: f64, theirs: Option<&f64>) -> (String, String) {
    match theirs {
        Some(c) => (format!("{c:.0}"), format!("{:.2}", ours / c)),
        None => ("-".into(), "-".into()),
    }
}

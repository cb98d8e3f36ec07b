//! A device-wide radix sort in the Onesweep form ([`coopgraph::algorithms::DeviceRadixSort`]):
//! one launch counts the digits of every pass, then one launch per 8-bit digit ranks each
//! tile by its digit, finds each digit's place among the tiles before with a per-digit
//! decoupled look-back, and scatters the tile.
//!
//! On a GPU it sorts 2^28 random keys (`COOPGRAPH_BENCH_N` overrides; the simulator sorts
//! 2^14): `u32` keys, `u32` keys with their positions as values, and `u64` keys, and prints
//! G keys/s beside `cub::DeviceRadixSort::SortKeys` / `SortPairs` when `COOPGRAPH_CUB_CSV`
//! names the CSV of `benches/cub/device.cu` from the same run (its `device_radix_sort_gkeys`
//! rows). Each result is checked (sorted, and a permutation of the input: a hash checksum of
//! the keys; for pairs, every value a distinct position holding its key, in input order among
//! equal keys); the process exits non-zero when any is wrong. `COOPGRAPH_SORT_TUNINGS`
//! (e.g. `256x16,384x12`) runs each of these tunings (threads x items per thread) in turn
//! instead of the default one; `COOPGRAPH_SORT_TUNE=1` has the autotuner choose each sort's
//! tuning on the run's own keys first ([`DeviceRadixSort::tune`] over
//! [`sort_tuning_space`](coopgraph::algorithms::sort_tuning_space); two small tunings on the
//! simulator), prints its choice, and runs that. `COOPGRAPH_SORT_RUNS` (e.g.
//! `u32_pairs,u64_keys`) runs only the sorts it names, of `u32_keys`, `u32_pairs` and
//! `u64_keys`, in its order; a name may repeat (`u32_pairs,u32_keys,u32_pairs` times the
//! pairs before and after a keys sort in the same process).

#[path = "support/bench.rs"]
#[allow(dead_code)]
mod bench;

use bench::OrExit;
use coopgraph::algorithms::{
    DeviceRadixSort, SortKey, SortWorkspace, Tuning, default_pairs_tuning, default_sort_tuning,
    sort_tuning_space,
};
use coopgraph::ir::Element;
use coopgraph::runtime::Device;

/// Random keys (splitmix64 of the position).
fn input<K: Element>(n: usize) -> Vec<K> {
    (0..n as u64)
        .map(|i| {
            let mut z = i
                .wrapping_add(0x9E37_79B9_7F4A_7C15)
                .wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 30)).wrapping_mul(0x94D0_49BB_1331_11EB);
            K::from_bits(z ^ (z >> 31))
        })
        .collect()
}

/// An order-independent checksum of keys: the wrapping sum of a hash of each.
fn checksum<K: Element>(keys: &[K]) -> u64 {
    keys.iter()
        .map(|k| (k.to_bits() ^ 0x5851_F42D_4C95_7F2D).wrapping_mul(0x2545_F491_4F6C_DD1D))
        .fold(0u64, u64::wrapping_add)
}

/// Checks `out` is `keys` sorted ascending (unsigned keys: by their bits).
fn check_keys<K: Element>(keys: &[K], out: &[K], what: &str) -> Result<(), String> {
    if let Some(i) = (1..out.len()).find(|&i| out[i - 1].to_bits() > out[i].to_bits()) {
        return Err(format!("{what}: keys {} and {i} out of order", i - 1));
    }
    if out.len() != keys.len() || checksum(out) != checksum(keys) {
        return Err(format!(
            "{what}: the keys are not a permutation of the input"
        ));
    }
    Ok(())
}

/// Checks `values` (the positions sorted beside `out`) point at their keys, each once, in
/// input order among equal keys.
fn check_values<K: Element>(
    keys: &[K],
    out: &[K],
    values: &[u32],
    what: &str,
) -> Result<(), String> {
    let mut seen = vec![false; keys.len()];
    for (i, &v) in values.iter().enumerate() {
        let v = v as usize;
        if v >= keys.len() || seen[v] || keys[v].to_bits() != out[i].to_bits() {
            return Err(format!("{what}: value {i} ({v}) is not its key's position"));
        }
        seen[v] = true;
        if i > 0 && out[i - 1].to_bits() == out[i].to_bits() && values[i - 1] as usize > v {
            return Err(format!(
                "{what}: equal keys at {} and {i} out of input order",
                i - 1
            ));
        }
    }
    Ok(())
}

/// Prints the registers and occupancy the driver gives a digit pass (the last function).
fn report_pass(pass: Option<&coopgraph::runtime::Function>, what: &str) {
    if let Some(Ok(r)) = pass.map(|f| f.resources()) {
        let regs = r.registers.map_or("?".into(), |n| n.to_string());
        println!(
            "{what}: digit pass {regs} registers, {} B shared, {} blocks an SM ({:.0}% occupancy)",
            r.static_shared + r.dynamic_shared,
            r.max_active_blocks_per_sm,
            r.occupancy * 100.0
        );
    }
}

/// Sorts `n` random keys of `K` (with positions as values when `pairs`), checks the result,
/// and on a GPU returns G keys/s.
fn sort<K: SortKey>(
    device: &Device,
    n: usize,
    reps: usize,
    pairs: bool,
    tuning: Tuning,
) -> Result<Option<f64>, Box<dyn std::error::Error>> {
    let keys = input::<K>(n);
    let x = device.upload(&keys)?;
    let mut y = device.alloc_zeroed::<K>(n)?;
    let mut ws = SortWorkspace::new(device)?;
    let what = format!("{} {}", K::DTYPE, if pairs { "pairs" } else { "keys" });
    let t = if pairs {
        let positions: Vec<u32> = (0..n as u32).collect();
        let v = device.upload(&positions)?;
        let mut w = device.alloc_zeroed::<u32>(n)?;
        let sort = DeviceRadixSort::pairs::<K, u32>()
            .tuning(tuning)
            .prepare(device)?;
        sort.run(&x, &mut y, &v, &mut w, &mut ws)?;
        let out = y.to_vec()?;
        check_keys(&keys, &out, &what)?;
        check_values(&keys, &out, &w.to_vec()?, &what)?;
        if !device.is_cuda() {
            return Ok(None);
        }
        report_pass(sort.functions().last(), &what);
        let t = bench::time(device, reps, || {
            sort.run(&x, &mut y, &v, &mut w, &mut ws).or_exit(&what)
        });
        let out = y.to_vec()?;
        check_keys(&keys, &out, &what)?;
        check_values(&keys, &out, &w.to_vec()?, &what)?;
        t
    } else {
        let sort = DeviceRadixSort::keys::<K>()
            .tuning(tuning)
            .prepare(device)?;
        sort.run(&x, &mut y, &mut ws)?;
        check_keys(&keys, &y.to_vec()?, &what)?;
        if !device.is_cuda() {
            return Ok(None);
        }
        report_pass(sort.functions().last(), &what);
        let t = bench::time(device, reps, || {
            sort.run(&x, &mut y, &mut ws).or_exit(&what)
        });
        check_keys(&keys, &y.to_vec()?, &what)?;
        t
    };
    Ok(Some(n as f64 / t.as_secs_f64() / 1e9))
}

/// The tuning the autotuner picks for sorting `n` random keys of `K` (with positions as
/// values when `pairs`) on `device`, printed with where it came from.
fn autotuned<K: SortKey>(
    device: &Device,
    n: usize,
    pairs: bool,
) -> Result<Tuning, Box<dyn std::error::Error>> {
    let keys = device.upload(&input::<K>(n))?;
    let space = if device.is_cuda() {
        sort_tuning_space()
    } else {
        vec![
            Tuning {
                threads: 64,
                items: 3,
            },
            Tuning {
                threads: 96,
                items: 2,
            },
        ]
    };
    let (tuning, source, median) = if pairs {
        let positions: Vec<u32> = (0..n as u32).collect();
        let values = device.upload(&positions)?;
        let sort = DeviceRadixSort::pairs::<K, u32>();
        let tuned = sort.tune(&sort.tuner(device)?, &keys, &values, &space)?;
        (tuned.prepared.tuning(), tuned.source, tuned.median)
    } else {
        let sort = DeviceRadixSort::keys::<K>();
        let tuned = sort.tune(&sort.tuner(device)?, &keys, &space)?;
        (tuned.prepared.tuning(), tuned.source, tuned.median)
    };
    let what = if pairs { "pairs" } else { "keys" };
    let Tuning { threads, items } = tuning;
    println!(
        "autotuned {} {what}: {threads}x{items} of {} candidates ({source:?}, {:.3} ms)",
        K::DTYPE,
        space.len(),
        median.as_secs_f64() * 1e3
    );
    Ok(tuning)
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
    let key = |dtype: &str, alg: &str| {
        (
            "device_radix_sort_gkeys".to_string(),
            dtype.to_string(),
            alg.to_string(),
            0,
            0,
        )
    };
    let all: [(&str, &str, &str, bool); 3] = [
        ("u32_keys", "u32", "sort_keys", false),
        ("u32_pairs", "u32", "sort_pairs", true),
        ("u64_keys", "u64", "sort_keys", false),
    ];
    let tunings = tunings()?;
    // The sorts `COOPGRAPH_SORT_RUNS` names, in its order (a name may repeat), else all three.
    let runs: Vec<(&str, &str, bool)> = match std::env::var("COOPGRAPH_SORT_RUNS") {
        Err(_) => all.iter().map(|&(_, d, a, p)| (d, a, p)).collect(),
        Ok(list) => list
            .split(',')
            .map(|s| {
                all.iter()
                    .find(|r| r.0 == s.trim())
                    .map(|&(_, d, a, p)| (d, a, p))
                    .ok_or_else(|| {
                        let names: Vec<&str> = all.iter().map(|r| r.0).collect();
                        format!("COOPGRAPH_SORT_RUNS: `{s}` is none of {names:?}")
                    })
            })
            .collect::<Result<_, _>>()?,
    };
    for (dtype, alg, pairs) in runs {
        use coopgraph::ir::DType;
        let key_dtype = if dtype == "u64" {
            DType::U64
        } else {
            DType::U32
        };
        let chosen = if std::env::var("COOPGRAPH_SORT_TUNE").is_ok_and(|v| v == "1") {
            match dtype {
                "u64" => autotuned::<u64>(&device, n, pairs)?,
                _ => autotuned::<u32>(&device, n, pairs)?,
            }
        } else if pairs {
            default_pairs_tuning(key_dtype, DType::U32)
        } else {
            default_sort_tuning(key_dtype)
        };
        for &tuning in tunings.as_deref().unwrap_or(&[chosen]) {
            let g = match dtype {
                "u64" => sort::<u64>(&device, n, reps, pairs, tuning)?,
                _ => sort::<u32>(&device, n, reps, pairs, tuning)?,
            };
            let Tuning { threads, items } = tuning;
            let what = format!("onesweep radix sort {dtype} {alg} {threads}x{items} n={n}");
            match g {
                Some(g) => {
                    let (c, ratio) = bench::versus(g, cub.get(&key(dtype, alg)));
                    let name = if pairs { "SortPairs" } else { "SortKeys" };
                    println!(
                        "{what}: {g:.2} G keys/s; cub::DeviceRadixSort::{name} {dtype}: {c} G keys/s; ratio {ratio}"
                    );
                }
                None => println!("{what}: correct (simulator)"),
            }
        }
    }
    Ok(())
}

/// The tunings `COOPGRAPH_SORT_TUNINGS` names (`THREADSxITEMS`, comma-separated), if set.
fn tunings() -> Result<Option<Vec<Tuning>>, String> {
    let Ok(list) = std::env::var("COOPGRAPH_SORT_TUNINGS") else {
        return Ok(None);
    };
    let parse = |s: &str| -> Option<Tuning> {
        let (t, i) = s.trim().split_once('x')?;
        Some(Tuning {
            threads: t.parse().ok()?,
            items: i.parse().ok()?,
        })
    };
    list.split(',')
        .map(|s| {
            parse(s).ok_or_else(|| format!("COOPGRAPH_SORT_TUNINGS: `{s}` is not THREADSxITEMS"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

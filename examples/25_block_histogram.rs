//! Block histogram: each block counts its tile of bytes into 256 shared `u32` bins (CUB's
//! `BlockHistogram`), by shared atomics or by sorting the samples, and writes its bins out.
//!
//! First, 2^20 bytes (2^14 on the simulator; `COOPGRAPH_HIST_CHECK_N` overrides) in tiles of
//! 256 x 16 and of 128 x 4, with each algorithm, every tile's bins checked against a CPU count.
//! Then, on a GPU, the configurations of the CUB reference harness (`benches/cub/sort.cu`,
//! kind `block_histogram`): blocks of 128 and 256 threads, 4, 8 and 16 items per thread, both
//! algorithms, over 2^28 bytes (`COOPGRAPH_BENCH_N` overrides), each checked (every tile's
//! total, every 97th tile's bins) and timed; GB/s counts the samples read. With
//! `COOPGRAPH_CUB_CSV` naming the CSV `benches/cub/run.sh` wrote for `sort.cu`, each row shows
//! CUB's figure and the ratio beside ours. Exits non-zero on any wrong result.

#[path = "support/bench.rs"]
#[allow(dead_code)]
mod bench;

use bench::OrExit;

use coopgraph::ir::{Histogram, HistogramAlgorithm, index};
use coopgraph::runtime::Device;
use coopgraph::{Kernel, KernelBuilder, Load};

const BINS: u32 = 256;

/// A kernel counting one tile of `samples` per block into `hist[block * 256 ..]`.
fn kernel(block: u32, items: u32, algorithm: HistogramAlgorithm) -> Kernel {
    let name = format!("hist_{algorithm:?}_{block}x{items}").to_lowercase();
    let mut k = KernelBuilder::new(name)
        .block(block)
        .items_per_thread(items);
    let (x, y) = (k.input::<u8>("samples"), k.output::<u32>("hist"));
    let b = k.this_block();
    let samples = k.load_from(b, &x, Load::direct());
    let bins = k.shared_array::<u32>(BINS);
    let controls = match algorithm {
        HistogramAlgorithm::Atomic => Histogram::atomic(),
        HistogramAlgorithm::Sort => Histogram::sort(),
    };
    k.histogram(b, &samples, BINS, &bins, controls);
    let base = index::block_index() * BINS;
    k.for_range_step(index::thread_rank(), BINS, block, |k, j| {
        k.write(&y, base.clone() + j.clone(), bins.read(j))
    });
    k.build().or_exit("builds")
}

/// The bytes `benches/cub/sort.cu` counts (its `fill_pattern` with seed 0x4157), so both
/// count the same samples.
fn inputs(n: usize) -> Vec<u8> {
    (0..n as u64)
        .map(|i| bench::pattern_byte(i, 0x4157))
        .collect()
}

/// Checks every tile's bins sum to the tile, and every `every`-th tile's bins against a CPU
/// count. Exits non-zero on the first difference.
fn check(what: &str, tile: usize, every: usize, xs: &[u8], hist: &[u32]) {
    for (t, (input, bins)) in xs.chunks(tile).zip(hist.chunks(BINS as usize)).enumerate() {
        let total: u64 = bins.iter().map(|&c| u64::from(c)).sum();
        if total != tile as u64 {
            eprintln!("error: {what}: tile {t} counts {total} samples, not {tile}");
            std::process::exit(1);
        }
        if t % every != 0 {
            continue;
        }
        let mut want = [0u32; BINS as usize];
        input.iter().for_each(|&s| want[usize::from(s)] += 1);
        if let Some(b) = (0..BINS as usize).find(|&b| bins[b] != want[b]) {
            eprintln!(
                "error: {what}: tile {t} bin {b} is {}, not {}",
                bins[b], want[b]
            );
            std::process::exit(1);
        }
    }
}

/// Counts `n` bytes in tiles of `block x items`, checks the result, and returns GB/s when
/// `reps` > 0.
fn run(
    dev: &Device,
    n: usize,
    block: u32,
    items: u32,
    algorithm: HistogramAlgorithm,
    every: usize,
    reps: usize,
) -> Option<f64> {
    let tile = (block * items) as usize;
    let n = n / tile * tile;
    let xs = inputs(n);
    let f = dev
        .compile(&kernel(block, items, algorithm))
        .or_exit("compiles");
    let x = dev.upload(&xs).or_exit("upload");
    let blocks = n / tile;
    let mut y = dev
        .alloc_zeroed::<u32>(blocks * BINS as usize)
        .or_exit("alloc");
    let what = format!("{algorithm:?} {block}x{items}");
    let mut launch = || f.launch_grid(blocks as u32, (&x, &mut y)).or_exit("launch");
    launch();
    let t = (reps > 0).then(|| bench::time(dev, reps, &mut launch));
    let hist = y.to_vec().or_exit("download");
    check(&what, tile, every, &xs, &hist);
    t.map(|t| bench::gbps(n, t))
}

fn main() {
    let dev = Device::default_device().or_exit("a device");
    let (on_gpu, n, reps) = bench::size(&dev);
    let check_n = std::env::var("COOPGRAPH_HIST_CHECK_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if on_gpu { 1 << 20 } else { 1 << 14 });
    for algorithm in [HistogramAlgorithm::Atomic, HistogramAlgorithm::Sort] {
        for (block, items) in [(256u32, 16u32), (128, 4)] {
            run(&dev, check_n, block, items, algorithm, 1, 0);
            println!(
                "{check_n} bytes counted in tiles of {block} x {items} ({algorithm:?}): every \
                 tile correct"
            );
        }
    }
    if !on_gpu {
        println!("(no GPU: the timed configurations run only there)");
        return;
    }
    let cub = bench::cub_figures();
    println!("kind            algorithm block items   GB/s    CUB  ours/CUB");
    for block in [128u32, 256] {
        for items in [4u32, 8, 16] {
            for (name, algorithm) in [
                ("atomic", HistogramAlgorithm::Atomic),
                ("sort", HistogramAlgorithm::Sort),
            ] {
                let g = run(&dev, n, block, items, algorithm, 97, reps).unwrap_or(0.0);
                let key = (
                    "block_histogram".to_string(),
                    "u8".to_string(),
                    name.to_string(),
                    block,
                    items,
                );
                let (c, ratio) = bench::versus(g, cub.get(&key));
                println!(
                    "block_histogram {name:<9} {block:>5} {items:>5} {g:>6.0} {c:>6} {ratio:>9}"
                );
            }
        }
    }
}

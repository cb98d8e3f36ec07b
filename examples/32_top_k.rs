//! Block top-k: the `k` largest `f32` scores of each block's tile of a large array, each with
//! its position in the tile, in order (largest first; equal scores in tile order), by radix
//! selection ([`KernelBuilder::top_k_pairs`]). The same answer by a full block radix sort of
//! each tile (keeping its first `k`) runs beside it, for comparison.
//!
//! 2^28 scores on a GPU (2^14 on the simulator; `COOPGRAPH_BENCH_N` overrides) in tiles of
//! 256 x 8, `k` of 1, 16, 64 and 256; every tile checked against a stable CPU sort of the tile
//! (every 97th on a GPU, all on the simulator). On a GPU each is timed (10^9 scores read per
//! second) with the full sort's time beside it. Exits non-zero on any wrong result.

#[path = "support/bench.rs"]
#[allow(dead_code)]
mod bench;

use bench::OrExit;

#[path = "support/sorting.rs"]
#[allow(dead_code)]
mod sorting;

use sorting::{inputs, ordered_bits};

use coopgraph::ir::{RadixSort, TopK, index};
use coopgraph::runtime::Device;
use coopgraph::{Kernel, KernelBuilder, Load, Store};
use std::cmp::Reverse;

const BLOCK: u32 = 256;
const ITEMS: u32 = 8;

/// How a kernel finds each tile's top `k`.
#[derive(Clone, Copy, PartialEq)]
enum Method {
    /// Radix selection, then a sort of the `k` selected.
    Select,
    /// A sort of the whole tile, its first `k` stored.
    FullSort,
}

/// A kernel writing each block's top `k` scores of `scores` into `top` (`k` per block) and
/// their positions in the tile into `at`.
fn kernel(k: u32, method: Method) -> Kernel {
    let form = match method {
        Method::Select => "select",
        Method::FullSort => "sort",
    };
    let mut b = KernelBuilder::new(format!("top{k}_{form}"))
        .block(BLOCK)
        .items_per_thread(ITEMS);
    let x = b.input::<f32>("scores");
    let (y, z) = (b.output::<f32>("top"), b.output::<u32>("at"));
    let block = b.this_block();
    let scores = b.load_from(block, &x, Load::direct());
    let position = b.fill(index::thread_rank() * ITEMS + index::item());
    // Each block's k results at `block * k`.
    let store = Store::direct()
        .offset(index::block_index() * k)
        .valid_items(k);
    let (top, at) = match method {
        Method::Select => b.top_k_pairs(block, &scores, &position, TopK::largest(k)),
        Method::FullSort => b.radix_sort_pairs(block, &scores, &position, RadixSort::descending()),
    };
    b.store_to(block, &y, &top, store.clone());
    b.store_to(block, &z, &at, store);
    b.build().or_exit("builds")
}

/// Checks each `every`-th tile's top `k` (scores and positions) against a stable CPU sort.
fn check(what: &str, k: usize, every: usize, xs: &[f32], top: &[f32], at: &[u32]) {
    let tile = (BLOCK * ITEMS) as usize;
    for (t, input) in xs.chunks(tile).enumerate().step_by(every) {
        let mut order: Vec<usize> = (0..tile).collect();
        order.sort_by_key(|&i| Reverse(ordered_bits(input[i])));
        for (i, &o) in order[..k].iter().enumerate() {
            let (got, got_at) = (top[t * k + i], at[t * k + i] as usize);
            if ordered_bits(got) != ordered_bits(input[o]) || got_at != o {
                eprintln!(
                    "error: {what}: tile {t} place {i} holds {got} (position {got_at}); \
                     want {} (position {o})",
                    input[o]
                );
                std::process::exit(1);
            }
        }
    }
}

/// Finds the top `k` of `n` scores by `method`, checks it, and returns 10^9 scores/s when
/// `reps` > 0.
fn run(dev: &Device, n: usize, k: u32, method: Method, every: usize, reps: usize) -> Option<f64> {
    let tile = (BLOCK * ITEMS) as usize;
    let n = n / tile * tile;
    let blocks = n / tile;
    let (xs, _) = inputs::<f32>(n, tile);
    let f = dev.compile(&kernel(k, method)).or_exit("compiles");
    let x = dev.upload(&xs).or_exit("upload");
    let out = blocks * k as usize;
    let mut y = dev.alloc_zeroed::<f32>(out).or_exit("alloc");
    let mut z = dev.alloc_zeroed::<u32>(out).or_exit("alloc");
    let mut launch = || {
        f.launch_grid(blocks as u32, (&x, &mut y, &mut z))
            .or_exit("launch")
    };
    launch();
    let t = (reps > 0).then(|| bench::time(dev, reps, &mut launch));
    let (ys, zs) = (
        y.to_vec().or_exit("download"),
        z.to_vec().or_exit("download"),
    );
    let what = match method {
        Method::Select => format!("top-{k} by selection"),
        Method::FullSort => format!("top-{k} by a full sort"),
    };
    check(&what, k as usize, every, &xs, &ys, &zs);
    t.map(|t| n as f64 / t.as_secs_f64() / 1e9)
}

fn main() {
    let dev = Device::default_device().or_exit("a device");
    let (on_gpu, n, reps) = bench::size(&dev);
    let every = if on_gpu { 97 } else { 1 };
    let reps = if on_gpu { reps } else { 0 };
    println!("top-k of tiles of {BLOCK} x {ITEMS} f32 scores, {n} scores");
    println!("    k  selection Gscores/s  full sort Gscores/s");
    for k in [1u32, 16, 64, 256] {
        let select = run(&dev, n, k, Method::Select, every, reps);
        let sort = run(&dev, n, k, Method::FullSort, every, reps);
        let rate = |r: Option<f64>| r.map_or("checked".to_string(), |r| format!("{r:.3}"));
        println!("{k:>5}  {:>19}  {:>19}", rate(select), rate(sort));
    }
    if !on_gpu {
        println!("(no GPU: every tile checked; times only there)");
    }
}

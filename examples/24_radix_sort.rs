//! Block radix sort: each block sorts its tile of keys, or of keys with a `u32` value each
//! (CUB's `BlockRadixSort`), loaded blocked through a warp transpose and stored striped.
//!
//! First, 2^20 `u32` keys (2^14 on the simulator; `COOPGRAPH_SORT_CHECK_N` overrides) in tiles
//! of 256 x 16, keys alone and with values, every tile checked against a stable CPU sort. Then,
//! on a GPU, the configurations of the CUB reference harness (`benches/cub/sort.cu`): keys
//! `u32`, `i32`, `f32`, `u64`, alone and with `u32` values, blocks of 128 and 256 threads, 4, 8
//! and 16 items per thread, over 2^28 keys (`COOPGRAPH_BENCH_N` overrides), each checked (every
//! tile sorted, every 97th against the CPU) and timed; GB/s counts the keys (and values) read
//! and written. With `COOPGRAPH_CUB_CSV` naming the CSV `benches/cub/run.sh` wrote for
//! `sort.cu`, each row shows CUB's figure and the ratio beside ours. Without a GPU but with
//! `COOPGRAPH_DUMP_PTX` set, the timed configurations' kernels are built (their PTX written
//! there) and not run. `COOPGRAPH_SORT_MIN_BLOCKS=n` asks for `n` blocks an SM in every timed
//! kernel ([`KernelBuilder::min_blocks_per_sm`], CUDA's second `__launch_bounds__` argument), to
//! weigh registers against occupancy. Exits non-zero on any wrong result.

#[path = "support/bench.rs"]
#[allow(dead_code)]
mod bench;

use bench::OrExit;

#[path = "support/sorting.rs"]
mod sorting;

use sorting::{check, inputs};

use coopgraph::ir::{Element, RadixSort, SortOutput};
use coopgraph::runtime::{Device, DeviceElement};
use coopgraph::{Kernel, KernelBuilder, Load, Store};

/// The blocks an SM the timed kernels ask for (`COOPGRAPH_SORT_MIN_BLOCKS`), if any.
fn min_blocks() -> Option<u32> {
    std::env::var("COOPGRAPH_SORT_MIN_BLOCKS")
        .ok()
        .map(|v| v.parse().or_exit("COOPGRAPH_SORT_MIN_BLOCKS is a count"))
}

/// A kernel sorting one tile per block of `keys` into `sorted` (with `values` into `moved`).
fn kernel<K: Element>(block: u32, items: u32, pairs: bool) -> Kernel {
    let kind = if pairs { "pairs" } else { "keys" };
    let name = format!("radix_{kind}_{}_{block}x{items}", K::DTYPE).to_lowercase();
    let mut k = KernelBuilder::new(name)
        .block(block)
        .items_per_thread(items);
    if let Some(count) = min_blocks() {
        k = k.min_blocks_per_sm(count);
    }
    let (x, y) = (k.input::<K>("keys"), k.output::<K>("sorted"));
    let b = k.this_block();
    let keys = k.load_from(b, &x, Load::warp_transpose());
    let controls = RadixSort::ascending().output(SortOutput::Striped);
    if pairs {
        let (v, w) = (k.input::<u32>("values"), k.output::<u32>("moved"));
        let values = k.load_from(b, &v, Load::warp_transpose());
        let (sk, sv) = k.radix_sort_pairs(b, &keys, &values, controls);
        k.store_to(b, &y, &sk, Store::striped());
        k.store_to(b, &w, &sv, Store::striped());
    } else {
        let sk = k.radix_sort(b, &keys, controls);
        k.store_to(b, &y, &sk, Store::striped());
    }
    k.build().or_exit("builds")
}

/// Builds (and so, with `COOPGRAPH_DUMP_PTX` set, writes) the timed configurations' kernels
/// of key type `K`.
fn build_timed<K: Element>(dev: &Device) {
    for block in [128u32, 256] {
        for items in [4u32, 8, 16] {
            for pairs in [false, true] {
                dev.compile(&kernel::<K>(block, items, pairs))
                    .or_exit("compiles");
            }
        }
    }
}

/// Sorts `n` keys of `K` in tiles of `block x items` (with values when `pairs`), checks the
/// result, and returns GB/s when `reps` > 0.
fn run<K: DeviceElement>(
    dev: &Device,
    n: usize,
    block: u32,
    items: u32,
    pairs: bool,
    every: usize,
    reps: usize,
) -> Option<f64> {
    let tile = (block * items) as usize;
    let n = n / tile * tile;
    let (xs, vs) = inputs::<K>(n, tile);
    let f = dev
        .compile(&kernel::<K>(block, items, pairs))
        .or_exit("compiles");
    let x = dev.upload(&xs).or_exit("upload");
    let mut y = dev.alloc_zeroed::<K>(n).or_exit("alloc");
    let what = format!(
        "{} {} {block}x{items}",
        if pairs { "pairs" } else { "keys" },
        K::DTYPE
    );
    let blocks = (n / tile) as u32;
    let v = dev.upload(&vs).or_exit("upload");
    let mut w = dev.alloc_zeroed::<u32>(n).or_exit("alloc");
    let launch = |y: &mut coopgraph::runtime::Buffer<K>,
                  w: &mut coopgraph::runtime::Buffer<u32>| {
        if pairs {
            f.launch_grid(blocks, (&x, y, &v, w))
        } else {
            f.launch_grid(blocks, (&x, y))
        }
        .or_exit("launch")
    };
    launch(&mut y, &mut w);
    let ws = w.to_vec().or_exit("download");
    let ys = y.to_vec().or_exit("download");
    check(&what, tile, every, &xs, &ys, pairs.then_some(&ws[..]));
    let t = (reps > 0).then(|| bench::time(dev, reps, || launch(&mut y, &mut w)));
    let bytes = 2 * n * (K::DTYPE.bytes() as usize + if pairs { 4 } else { 0 });
    t.map(|t| bench::gbps(bytes, t))
}

fn main() {
    let dev = Device::default_device().or_exit("a device");
    let (on_gpu, n, reps) = bench::size(&dev);
    let check_n = std::env::var("COOPGRAPH_SORT_CHECK_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if on_gpu { 1 << 20 } else { 1 << 14 });
    for pairs in [false, true] {
        run::<u32>(&dev, check_n, 256, 16, pairs, 1, 0);
        let kind = if pairs { "key-value pairs" } else { "keys" };
        println!("{check_n} u32 {kind} sorted in tiles of 256 x 16: every tile correct");
    }
    if !on_gpu {
        sorting::without_gpu(|| {
            build_timed::<u32>(&dev);
            build_timed::<i32>(&dev);
            build_timed::<f32>(&dev);
            build_timed::<u64>(&dev);
        });
        return;
    }
    let cub = bench::cub_figures();
    if let Some(count) = min_blocks() {
        println!("every kernel asks for {count} blocks an SM");
    }
    println!("kind                    dtype block items   GB/s    CUB  ours/CUB");
    for (dtype, k) in [("u32", 0), ("i32", 1), ("f32", 2), ("u64", 3)] {
        for block in [128u32, 256] {
            for items in [4u32, 8, 16] {
                for pairs in [false, true] {
                    let g = match k {
                        0 => run::<u32>(&dev, n, block, items, pairs, 97, reps),
                        1 => run::<i32>(&dev, n, block, items, pairs, 97, reps),
                        2 => run::<f32>(&dev, n, block, items, pairs, 97, reps),
                        _ => run::<u64>(&dev, n, block, items, pairs, 97, reps),
                    }
                    .unwrap_or(0.0);
                    let kind = if pairs {
                        "block_radix_sort_pairs"
                    } else {
                        "block_radix_sort_keys"
                    };
                    let key = (
                        kind.to_string(),
                        dtype.to_string(),
                        "radix4".to_string(),
                        block,
                        items,
                    );
                    let (c, ratio) = bench::versus(g, cub.get(&key));
                    println!(
                        "{kind:<23} {dtype:<5} {block:>5} {items:>5} {g:>6.0} {c:>6} {ratio:>9}"
                    );
                }
            }
        }
    }
}

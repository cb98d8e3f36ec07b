//! Merge sort by a comparator: each block, or each logical warp, sorts its tile of keys, or of
//! keys with a `u32` value each (CUB's `BlockMergeSort` and `WarpMergeSort`), by the keys' bit
//! order (a total order: floats with NaNs and infinities included, as the radix sort orders
//! them), written as an expression (`f32` keys by the built-in `MergeSort::total_order`, the
//! same order). Tiles are loaded blocked through a warp transpose, sorted
//! to a striped result and stored striped.
//!
//! First, 2^20 `u32` keys (2^14 on the simulator; `COOPGRAPH_SORT_CHECK_N` overrides) in tiles
//! of 256 x 16 sorted by the block and in tiles of 16 x 8 by logical warps of 16 lanes, keys
//! alone and with values, every tile checked against a stable CPU sort. Then, on a GPU, the
//! configurations of the CUB reference harness (`benches/cub/merge_sort.cu`): keys `u32`,
//! `i32`, `f32`, `u64`, alone and with `u32` values, blocks of 128 and 256 threads, 4, 8 and
//! 16 items per thread, the block's sort and the warps' (tiles of 32 x items), over 2^28 keys
//! (`COOPGRAPH_BENCH_N` overrides), each checked (every tile sorted, every 97th against the
//! CPU) and timed; keys/s counts the keys sorted, GB/s the keys (and values) read and written.
//! `COOPGRAPH_SORT_DTYPES` (say `i32,f32`) keeps the timed rows of those key types.
//! Without a GPU but with `COOPGRAPH_DUMP_PTX` set, the timed configurations' kernels are built
//! (their PTX written there) and not run.
//! With `COOPGRAPH_CUB_CSV` naming the CSV `benches/cub/run.sh` wrote for `merge_sort.cu`,
//! each row shows CUB's figure and the ratio beside ours. Exits non-zero on any wrong result.

#[path = "support/bench.rs"]
#[allow(dead_code)]
mod bench;

use bench::OrExit;

#[path = "support/sorting.rs"]
mod sorting;

use sorting::{check, inputs};

use coopgraph::ir::{Expr, Group, MergeSort, SortOrder, SortOutput};
use coopgraph::runtime::{Device, DeviceElement};
use coopgraph::{Kernel, KernelBuilder, Load, Store};

/// Keys with their bit order ([`sorting::ordered_bits`]) as an expression: the sort's
/// comparator.
trait Key: DeviceElement {
    /// The key's place in the order, as an expression.
    fn ordered(e: Expr<Self>) -> Expr<u64>;

    /// The sort's controls: by [`Key::ordered`].
    fn controls() -> MergeSort<Self> {
        MergeSort::by(|a: Expr<Self>, b: Expr<Self>| Self::ordered(a).lt(Self::ordered(b)))
    }
}

impl Key for u32 {
    fn ordered(e: Expr<u32>) -> Expr<u64> {
        e.cast::<u64>()
    }
}

impl Key for u64 {
    fn ordered(e: Expr<u64>) -> Expr<u64> {
        e
    }
}

impl Key for i32 {
    fn ordered(e: Expr<i32>) -> Expr<u64> {
        (e.cast::<u32>() ^ 0x8000_0000u32).cast::<u64>()
    }
}

impl Key for f32 {
    fn ordered(e: Expr<f32>) -> Expr<u64> {
        let b = e.to_bits();
        let negative = (b.clone() >> 31u32).eq(1u32);
        negative
            .select(!b.clone(), b | 0x8000_0000u32)
            .cast::<u64>()
    }

    /// The same order, built in: each key made into its ordered bits once, not at every
    /// compare.
    fn controls() -> MergeSort<f32> {
        MergeSort::total_order(SortOrder::Ascending)
    }
}

/// Builds (and so, with `COOPGRAPH_DUMP_PTX` set, writes) the timed configurations' kernels
/// of key type `K`.
fn build_timed<K: Key>(dev: &Device) {
    for block in [128u32, 256] {
        for items in [4u32, 8, 16] {
            for lanes in [None, Some(32)] {
                for pairs in [false, true] {
                    let k = kernel::<K>(block, lanes, items, pairs);
                    dev.compile(&k).or_exit("compiles");
                }
            }
        }
    }
}

/// A kernel sorting one tile per group (the block, or logical warps of `lanes` when some) of
/// `keys` into `sorted` (with `values` into `moved`).
fn kernel<K: Key>(block: u32, lanes: Option<u32>, items: u32, pairs: bool) -> Kernel {
    let kind = if pairs { "pairs" } else { "keys" };
    let form = lanes.map_or("block".to_string(), |w| format!("warp{w}"));
    let name = format!("merge_{form}_{kind}_{}_{block}x{items}", K::DTYPE).to_lowercase();
    let mut k = KernelBuilder::new(name)
        .block(block)
        .items_per_thread(items);
    let (x, y) = (k.input::<K>("keys"), k.output::<K>("sorted"));
    let b = k.this_block();
    let g: Group = match lanes {
        Some(w) => k.this_warp().group_by(w),
        None => b,
    };
    let keys = k.load_from(b, &x, Load::warp_transpose());
    let controls = K::controls().output(SortOutput::Striped);
    if pairs {
        let (v, w) = (k.input::<u32>("values"), k.output::<u32>("moved"));
        let values = k.load_from(b, &v, Load::warp_transpose());
        let (sk, sv) = k.merge_sort_pairs(g, &keys, &values, controls);
        k.store_to(g, &y, &sk, Store::striped());
        k.store_to(g, &w, &sv, Store::striped());
    } else {
        let sk = k.merge_sort(g, &keys, controls);
        k.store_to(g, &y, &sk, Store::striped());
    }
    k.build().or_exit("builds")
}

/// One configuration: blocks of `block` threads, sorting by the block or by logical warps of
/// `lanes`, `items` keys per thread.
#[derive(Clone, Copy)]
struct Shape {
    block: u32,
    lanes: Option<u32>,
    items: u32,
}

/// Sorts `n` keys of `K` in the shape's tiles (with values when `pairs`), checks the result,
/// and returns (10^9 keys/s, GB/s) when `reps` > 0.
fn run<K: Key>(
    dev: &Device,
    n: usize,
    shape: Shape,
    pairs: bool,
    every: usize,
    reps: usize,
) -> Option<(f64, f64)> {
    let Shape {
        block,
        lanes,
        items,
    } = shape;
    let tile = (lanes.unwrap_or(block) * items) as usize;
    let block_tile = (block * items) as usize;
    let n = n / block_tile * block_tile;
    let (xs, vs) = inputs::<K>(n, tile);
    let f = dev
        .compile(&kernel::<K>(block, lanes, items, pairs))
        .or_exit("compiles");
    let x = dev.upload(&xs).or_exit("upload");
    let mut y = dev.alloc_zeroed::<K>(n).or_exit("alloc");
    let form = lanes.map_or("block".to_string(), |w| format!("warps of {w}"));
    let what = format!(
        "{} {} {block}x{items} by {form}",
        if pairs { "pairs" } else { "keys" },
        K::DTYPE
    );
    let blocks = (n / block_tile) as u32;
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
    let t = (reps > 0).then(|| bench::time(dev, reps, || launch(&mut y, &mut w)))?;
    let bytes = 2 * n * (K::DTYPE.bytes() as usize + if pairs { 4 } else { 0 });
    Some((n as f64 / t.as_secs_f64() / 1e9, bench::gbps(bytes, t)))
}

fn main() {
    let dev = Device::default_device().or_exit("a device");
    let (on_gpu, n, reps) = bench::size(&dev);
    let check_n = std::env::var("COOPGRAPH_SORT_CHECK_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if on_gpu { 1 << 20 } else { 1 << 14 });
    for (shape, form) in [
        (
            Shape {
                block: 256,
                lanes: None,
                items: 16,
            },
            "the block, tiles of 256 x 16",
        ),
        (
            Shape {
                block: 128,
                lanes: Some(16),
                items: 8,
            },
            "logical warps of 16, tiles of 16 x 8",
        ),
    ] {
        for pairs in [false, true] {
            let timed = run::<u32>(&dev, check_n, shape, pairs, 1, reps.min(3));
            let kind = if pairs { "key-value pairs" } else { "keys" };
            let rate = timed.map_or(String::new(), |(keys, _)| {
                format!(" ({:.0} keys/s)", keys * 1e9)
            });
            println!("{check_n} u32 {kind} sorted by {form}: every tile correct{rate}");
        }
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
    println!("kind                    dtype block items Gkeys/s   GB/s    CUB  ours/CUB");
    let dtypes = std::env::var("COOPGRAPH_SORT_DTYPES").unwrap_or_default();
    for (dtype, k) in [("u32", 0), ("i32", 1), ("f32", 2), ("u64", 3)] {
        if !dtypes.is_empty() && !dtypes.split(',').any(|d| d.trim() == dtype) {
            continue;
        }
        for block in [128u32, 256] {
            for items in [4u32, 8, 16] {
                for (lanes, form, alg) in [(None, "block", "merge"), (Some(32), "warp", "warp32")] {
                    for pairs in [false, true] {
                        let shape = Shape {
                            block,
                            lanes,
                            items,
                        };
                        let (keys, g) = match k {
                            0 => run::<u32>(&dev, n, shape, pairs, 97, reps),
                            1 => run::<i32>(&dev, n, shape, pairs, 97, reps),
                            2 => run::<f32>(&dev, n, shape, pairs, 97, reps),
                            _ => run::<u64>(&dev, n, shape, pairs, 97, reps),
                        }
                        .unwrap_or((0.0, 0.0));
                        let what = if pairs { "pairs" } else { "keys" };
                        let kind = format!("{form}_merge_sort_{what}");
                        let key = (
                            kind.clone(),
                            dtype.to_string(),
                            alg.to_string(),
                            block,
                            items,
                        );
                        let (c, ratio) = bench::versus(g, cub.get(&key));
                        println!(
                            "{kind:<23} {dtype:<5} {block:>5} {items:>5} {keys:>7.3} {g:>6.0} \
                             {c:>6} {ratio:>9}"
                        );
                    }
                }
            }
        }
    }
}

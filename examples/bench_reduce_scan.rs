//! Block reduce and block scan bandwidth, beside CUB's `BlockReduce`/`BlockScan` in the same
//! configurations: f32 and i32, blocks of 128 and 256, 1/4/8/16 items per thread.
//!
//! - reduce: striped load, block sum (each algorithm), thread 0 writes one partial per block;
//!   GB/s counts `n * size` read plus the partials written. Checked: every partial.
//! - scan: warp-transposed load, block inclusive sum (each algorithm) of each tile
//!   independently, warp-transposed store; GB/s counts `2 * n * size`. Checked: every element.
//!
//! Each figure is also given as a percentage of the device-to-device copy measured in the same
//! run (a reduction only reads, so it may pass 100%). With `COOPGRAPH_CUB_CSV` naming the CSV
//! `benches/cub/reduce_scan.cu` wrote in the same run, each row shows CUB's figure and our
//! ratio. On a GPU it uses 2^28 elements (`COOPGRAPH_BENCH_N` overrides); on the simulator
//! 2^14, and its times mean nothing.

#[path = "support/bench.rs"]
mod bench;

use bench::OrExit;

use coopgraph::ir::{Element, Reduce, ReduceAlgorithm, Scan, ScanAlgorithm, index};
use coopgraph::runtime::{Device, DeviceElement};
use coopgraph::{Kernel, KernelBuilder, Load, Store};

fn tile_valid(
    k: &mut KernelBuilder,
    n: &coopgraph::ir::Scalar<u32>,
    tile: u32,
) -> coopgraph::ir::Expr<u32> {
    let _ = k;
    let origin = index::block_index() * tile;
    n.expr().gt(origin.clone()).select(n.expr() - origin, 0u32)
}

fn reduce_kernel<T: Element>(alg: ReduceAlgorithm, block: u32, items: u32) -> Kernel {
    let mut k = KernelBuilder::new(format!("bsum_{}_{alg:?}_{block}x{items}", T::DTYPE))
        .block(block)
        .items_per_thread(items);
    let x = k.input::<T>("x");
    let p = k.output::<T>("partials");
    let n = k.scalar::<u32>("n");
    let b = k.this_block();
    let valid = tile_valid(&mut k, &n, block * items);
    let t = k.load_from(
        b,
        &x,
        Load::striped()
            .valid_items(valid)
            .oob_default(T::cast_from_i64(0)),
    );
    let s = k.reduce(b, &t, Reduce::sum().algorithm(alg));
    // Thread 0's result goes to partials[block].
    k.store_to(
        b,
        &p,
        &s,
        Store::direct()
            .offset(index::block_index())
            .valid_items(1u32),
    );
    k.build().or_exit("reduce kernel builds")
}

fn scan_kernel<T: Element>(alg: ScanAlgorithm, block: u32, items: u32) -> Kernel {
    let mut k = KernelBuilder::new(format!("bscan_{}_{alg:?}_{block}x{items}", T::DTYPE))
        .block(block)
        .items_per_thread(items);
    let x = k.input::<T>("x");
    let y = k.output::<T>("y");
    let n = k.scalar::<u32>("n");
    let b = k.this_block();
    let valid = tile_valid(&mut k, &n, block * items);
    let t = k.load_from(
        b,
        &x,
        Load::warp_transpose()
            .valid_items(valid.clone())
            .oob_default(T::cast_from_i64(0)),
    );
    let s = k.scan(b, &t, Scan::inclusive_sum().algorithm(alg));
    k.store_to(b, &y, &s, Store::warp_transpose().valid_items(valid));
    k.build().or_exit("scan kernel builds")
}

fn alg_name(a: ReduceAlgorithm) -> &'static str {
    match a {
        ReduceAlgorithm::RakingCommutativeOnly => "raking_commutative_only",
        ReduceAlgorithm::Raking => "raking",
        ReduceAlgorithm::WarpReductions => "warp_reductions",
    }
}

trait Sample: DeviceElement {
    fn sample(i: u64) -> Self;
    fn plus(a: Self, b: Self) -> Self;
}
impl Sample for f32 {
    fn sample(i: u64) -> Self {
        (i % 7) as f32
    }
    fn plus(a: Self, b: Self) -> Self {
        a + b
    }
}
impl Sample for i32 {
    fn sample(i: u64) -> Self {
        (i % 100) as i32
    }
    fn plus(a: Self, b: Self) -> Self {
        a.wrapping_add(b)
    }
}

fn run<T: Sample>(dev: &Device, n: usize, reps: usize, rows: &mut Vec<String>) {
    let table = bench::cub_figures();
    let xs: Vec<T> = (0..n as u64).map(T::sample).collect();
    let x = dev.upload(&xs).or_exit("upload");
    let mut y = dev.alloc_zeroed::<T>(n).or_exit("alloc");
    let copy = bench::copy_gbps(dev, reps, &x, &mut y);
    if let Some(g) = copy {
        rows.push(format!(
            "| copy | {} | device-to-device | - | - | {g:.0} | 100% | - | - |",
            T::DTYPE
        ));
    }
    let row = |kind: &str, alg: &str, block: u32, items: u32, g: f64| {
        let key = (
            kind.to_string(),
            T::DTYPE.to_string(),
            alg.to_string(),
            block,
            items,
        );
        let (theirs, ratio) = bench::versus(g, table.get(&key));
        format!(
            "| {kind} | {} | {alg} | {block} | {items} | {g:.0} | {} | {theirs} | {ratio} |",
            T::DTYPE,
            bench::percent(g, copy),
        )
    };
    for block in [128u32, 256] {
        for items in [1u32, 4, 8, 16] {
            let tile = (block * items) as usize;
            let blocks = n.div_ceil(tile);
            for alg in [
                ReduceAlgorithm::RakingCommutativeOnly,
                ReduceAlgorithm::Raking,
                ReduceAlgorithm::WarpReductions,
            ] {
                let f = dev
                    .compile(&reduce_kernel::<T>(alg, block, items))
                    .or_exit("compile");
                let mut p = dev.alloc_zeroed::<T>(blocks).or_exit("alloc");
                f.launch_over(n, (&x, &mut p, n as u32)).or_exit("launch");
                let got = p.to_vec().or_exit("download");
                for (b, chunk) in xs.chunks(tile).enumerate() {
                    let want = chunk.iter().copied().fold(T::sample(0), T::plus);
                    assert!(got[b] == want, "reduce {alg:?} {block}x{items}: block {b}");
                }
                let t = bench::time(dev, reps, || {
                    f.launch_over(n, (&x, &mut p, n as u32)).or_exit("launch")
                });
                let bytes = n * 4 + blocks * 4;
                rows.push(row(
                    "reduce",
                    alg_name(alg),
                    block,
                    items,
                    bytes as f64 / t.as_secs_f64() / 1e9,
                ));
            }
            for (alg, name) in [
                (ScanAlgorithm::Raking, "raking"),
                (ScanAlgorithm::RakingMemoize, "raking_memoize"),
                (ScanAlgorithm::WarpScans, "warp_scans"),
            ] {
                let f = dev
                    .compile(&scan_kernel::<T>(alg, block, items))
                    .or_exit("compile");
                f.launch_over(n, (&x, &mut y, n as u32)).or_exit("launch");
                let got = y.to_vec().or_exit("download");
                for (b, chunk) in xs.chunks(tile).enumerate() {
                    let mut acc = T::sample(0);
                    for (i, &v) in chunk.iter().enumerate() {
                        acc = T::plus(acc, v);
                        assert!(
                            got[b * tile + i] == acc,
                            "scan {alg:?} {block}x{items}: element {}",
                            b * tile + i
                        );
                    }
                }
                let t = bench::time(dev, reps, || {
                    f.launch_over(n, (&x, &mut y, n as u32)).or_exit("launch")
                });
                let g = (2 * n * 4) as f64 / t.as_secs_f64() / 1e9;
                rows.push(row("scan", name, block, items, g));
            }
        }
    }
}

fn main() {
    let dev = Device::default_device().or_exit("a device");
    let (on_gpu, n, reps) = bench::size(&dev);
    println!("device: {:?}, n = {n}", dev.backend());
    println!("| kind | dtype | algorithm | block | items | GB/s | % of copy | CUB GB/s | ratio |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut rows = Vec::new();
    run::<f32>(&dev, n, reps, &mut rows);
    run::<i32>(&dev, n, reps, &mut rows);
    for r in rows {
        println!("{r}");
    }
    if !on_gpu {
        println!("(simulator: figures are CPU time, not GPU bandwidth)");
    }
}

//! The reduce-scan suite: block reduce and block scan, beside CUB's `BlockReduce`/`BlockScan`
//! in the same configurations (`benches/cub/reduce_scan.cu`): f32 and i32, blocks of 128 and
//! 256, 1/4/8/16 items per thread.
//!
//! - reduce: striped load, block sum (each algorithm), thread 0 writes one partial per block;
//!   GB/s counts `n * size` read plus the partials written. Checked: every partial.
//! - scan: warp-transposed load, block inclusive sum (each algorithm) of each tile
//!   independently, warp-transposed store; GB/s counts `2 * n * size`. Checked: every element.
//!
//! A reduction only reads, so its percentage of the copy bandwidth may pass 100%.

use super::{Ctx, OrExit, Row, support};

use coopgraph::ir::{Element, Reduce, ReduceAlgorithm, Scan, ScanAlgorithm, index};
use coopgraph::runtime::DeviceElement;
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

/// An element type the suite runs, with its input and its sum.
pub trait Sample: DeviceElement {
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

/// Ends the process: a kernel computed something else than the CPU.
fn wrong(what: String) -> ! {
    eprintln!("error: {what}");
    std::process::exit(1)
}

/// The suite's rows for element type `T` at `ctx.n` elements.
pub fn run<T: Sample>(ctx: &Ctx) -> Vec<Row> {
    let (dev, n, reps) = (ctx.dev, ctx.n, ctx.reps);
    let dtype = T::DTYPE.to_string();
    let xs: Vec<T> = (0..n as u64).map(T::sample).collect();
    let x = dev.upload(&xs).or_exit("upload");
    let mut y = dev.alloc_zeroed::<T>(n).or_exit("alloc");
    let copy = support::copy_gbps(dev, reps, &x, &mut y);
    let row = |kind: &str, alg: &str, (block, items): (u32, u32), gbps: f64| Row {
        suite: "reduce-scan",
        kind: kind.into(),
        dtype: dtype.clone(),
        algorithm: alg.into(),
        block,
        items,
        n,
        gbps,
        copy,
        cub: ctx.cub.get(kind, &dtype, alg, (block, items), n),
        extra: Vec::new(),
    };
    let mut rows = Vec::new();
    if let Some(g) = copy {
        rows.push(ctx.progress(row("memcpy", "memcpy", (0, 0), g)));
    }
    for (block, items) in ctx.shapes() {
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
                if got[b] != want {
                    wrong(format!("reduce {alg:?} {block}x{items}: block {b}"));
                }
            }
            let t = support::time(dev, reps, || {
                f.launch_over(n, (&x, &mut p, n as u32)).or_exit("launch")
            });
            let bytes = n * 4 + blocks * 4;
            let g = support::gbps(bytes, t);
            rows.push(ctx.progress(row("reduce", alg_name(alg), (block, items), g)));
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
                    if got[b * tile + i] != acc {
                        wrong(format!(
                            "scan {alg:?} {block}x{items}: element {}",
                            b * tile + i
                        ));
                    }
                }
            }
            let t = support::time(dev, reps, || {
                f.launch_over(n, (&x, &mut y, n as u32)).or_exit("launch")
            });
            let g = support::gbps(2 * n * 4, t);
            rows.push(ctx.progress(row("scan", name, (block, items), g)));
        }
    }
    rows
}

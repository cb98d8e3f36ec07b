//! Copy-kernel bandwidth: every load/store algorithm, f32 and i32, blocks of 128 and 256,
//! 1/4/8/16 items per thread, beside the device-to-device copy bandwidth measured in the same
//! run. GB/s counts bytes read plus bytes written. Every kernel's output is checked once.
//!
//! Each configuration runs twice: as built (every access checked against the buffers'
//! lengths) and built with `unchecked_bounds` (launched with `launch_unchecked`); the row shows
//! both and the checked kernel's bandwidth as a percentage of the unchecked one's, so the cost
//! of the checks is read off one run.
//!
//! With `COOPGRAPH_CUB_CSV` naming the CSV that `benches/cub/run.sh` wrote in the same run
//! (CUB's `BlockLoad`/`BlockStore` in the same configurations), each row also shows CUB's
//! figure and our ratio to it.
//!
//! On a GPU it moves 2^28 elements (override with `COOPGRAPH_BENCH_N`); on the simulator it
//! checks the same kernels on 2^14 elements and prints simulator times, which say nothing
//! about a GPU.
//!
//! To look at a few configurations closely: `COOPGRAPH_BENCH_SHAPES=256x1,128x4` runs only
//! those blocks x items, and `COOPGRAPH_BENCH_UNCHECKED_FIRST=1` times the unchecked build
//! before the checked one (to tell the cost of the checks from an effect of the order).

#[path = "support/bench.rs"]
mod bench;

use bench::OrExit;

use coopgraph::ir::{Algorithm, Bounds, Element, index};
use coopgraph::runtime::{Buffer, Device, DeviceElement, Function};
use coopgraph::{KernelBuilder, Load, Store};

fn copy_kernel<T: Element>(
    alg: Algorithm,
    block: u32,
    items: u32,
    bounds: Bounds,
) -> coopgraph::Kernel {
    let name = format!("copy_{}_{alg:?}_{block}x{items}_{bounds:?}", T::DTYPE);
    let mut k = KernelBuilder::new(name)
        .block(block)
        .items_per_thread(items);
    if bounds == Bounds::Unchecked {
        k = k.unchecked_bounds();
    }
    let x = k.input::<T>("x");
    let y = k.output::<T>("y");
    let n = k.scalar::<u32>("n");
    let g = k.this_block();
    let origin = index::block_index() * (block * items);
    let valid = n.expr().gt(origin.clone()).select(n.expr() - origin, 0u32);
    let t = k.load_from(
        g,
        &x,
        Load::direct().algorithm(alg).valid_items(valid.clone()),
    );
    k.store_to(
        g,
        &y,
        &t,
        Store::default().algorithm(alg).valid_items(valid),
    );
    k.build().or_exit("copy kernel builds")
}

fn alg_name(a: Algorithm) -> &'static str {
    match a {
        Algorithm::Direct => "direct",
        Algorithm::Striped => "striped",
        Algorithm::Vectorize => "vectorize",
        Algorithm::Transpose => "transpose",
        Algorithm::WarpTranspose => "warp_transpose",
        Algorithm::WarpTransposeTimesliced => "warp_transpose_timesliced",
    }
}

/// One launch of a copy kernel over `n` elements of `x` into `y`.
fn copy<T: DeviceElement>(
    f: &Function,
    bounds: Bounds,
    n: usize,
    x: &Buffer<T>,
    y: &mut Buffer<T>,
) {
    let args = (x, y, n as u32);
    match bounds {
        Bounds::Checked => f.launch_over(n, args).or_exit("launch"),
        Bounds::Unchecked => {
            let config = f.config_over(n).or_exit("config");
            // SAFETY: the kernel's valid counts stop at `n`, and both buffers hold `n`
            // elements.
            unsafe { f.launch_unchecked(config, args) }.or_exit("launch")
        }
    }
}

fn run<T: DeviceElement>(dev: &Device, n: usize, reps: usize) -> Vec<String> {
    let cub = bench::cub_figures();
    let dtype = T::DTYPE.to_string();
    let xs: Vec<T> = (0..n as u64)
        .map(|i| T::from_bits(i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40))
        .collect();
    let x = dev.upload(&xs).or_exit("upload");
    let mut y = dev.alloc_zeroed::<T>(n).or_exit("alloc");
    let bytes = 2 * n * T::DTYPE.bytes() as usize;
    let copy_bw = bench::copy_gbps(dev, reps, &x, &mut y);
    let mut rows = Vec::new();
    if let Some(g) = copy_bw {
        let key = ("memcpy".into(), dtype.clone(), "memcpy".into(), 0, 0);
        let (theirs, _) = bench::versus(g, cub.get(&key));
        rows.push(format!(
            "| {dtype} | device-to-device copy | - | - | {g:.0} | - | - | 100% | {theirs} | - |"
        ));
    }
    let shapes = std::env::var("COOPGRAPH_BENCH_SHAPES").unwrap_or_default();
    let wanted = |block: u32, items: u32| {
        shapes.is_empty()
            || shapes
                .split(',')
                .any(|s| s.trim() == format!("{block}x{items}"))
    };
    let mut order = [Bounds::Checked, Bounds::Unchecked];
    if std::env::var("COOPGRAPH_BENCH_UNCHECKED_FIRST").is_ok_and(|v| v == "1") {
        order.reverse();
    }
    for alg in Algorithm::ALL {
        for block in [128u32, 256] {
            for items in [1u32, 4, 8, 16] {
                if !wanted(block, items) {
                    continue;
                }
                let mut gbps = Vec::new();
                for bounds in order {
                    let kernel = copy_kernel::<T>(alg, block, items, bounds);
                    let f = dev.compile(&kernel).or_exit("compile");
                    // Check once, into a poisoned output.
                    let mut out = dev.alloc_filled(n, T::from_bits(0x5a)).or_exit("alloc");
                    copy(&f, bounds, n, &x, &mut out);
                    let got = out.to_vec().or_exit("download");
                    assert!(got == xs, "{} copied wrongly", kernel.name());
                    let t = bench::time(dev, reps, || copy(&f, bounds, n, &x, &mut y));
                    gbps.push(bench::gbps(bytes, t));
                }
                // (checked, unchecked), whichever ran first.
                let (g, raw) = match order[0] {
                    Bounds::Checked => (gbps[0], gbps[1]),
                    Bounds::Unchecked => (gbps[1], gbps[0]),
                };
                let key = (
                    "copy".into(),
                    dtype.clone(),
                    alg_name(alg).into(),
                    block,
                    items,
                );
                let (theirs, ratio) = bench::versus(g, cub.get(&key));
                rows.push(format!(
                    "| {dtype} | {} | {block} | {items} | {g:.0} | {raw:.0} | {} | {} | {theirs} | {ratio} |",
                    alg_name(alg),
                    bench::percent(g, Some(raw)),
                    bench::percent(g, copy_bw),
                ));
            }
        }
    }
    rows
}

fn main() {
    let dev = Device::default_device().or_exit("a device");
    let (on_gpu, n, reps) = bench::size(&dev);
    println!("device: {:?}, n = {n}", dev.backend());
    println!(
        "| dtype | algorithm | block | items | GB/s | unchecked GB/s | % of unchecked | % of copy | CUB GB/s | ratio |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for row in run::<f32>(&dev, n, reps)
        .into_iter()
        .chain(run::<i32>(&dev, n, reps))
    {
        println!("{row}");
    }
    if !on_gpu {
        println!("(simulator: figures are CPU time, not GPU bandwidth)");
    }
}

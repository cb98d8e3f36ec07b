//! The copy suite: every load/store algorithm, f32 and i32, blocks of 128 and 256, 1/4/8/16
//! items per thread. GB/s counts bytes read plus bytes written. Each configuration runs twice:
//! as built (every access checked against the buffers' lengths) and built with
//! `unchecked_bounds` (launched with `launch_unchecked`), so the cost of the checks is read off
//! one run; the figure compared with CUB's (`benches/cub/copy.cu`: `BlockLoad`/`BlockStore` in
//! the same configurations) is the checked one. Every kernel's output is checked once.

use super::{Ctx, OrExit, Row, support};

use coopgraph::ir::{Algorithm, Bounds, Element, index};
use coopgraph::runtime::{Buffer, DeviceElement, Function};
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
        Algorithm::WarpStriped => "warp_striped",
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

/// The suite's rows for element type `T` at `ctx.n` elements.
pub fn run<T: DeviceElement>(ctx: &Ctx) -> Vec<Row> {
    let (dev, n) = (ctx.dev, ctx.n);
    let dtype = T::DTYPE.to_string();
    let xs: Vec<T> = (0..n as u64)
        .map(|i| T::from_bits(i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40))
        .collect();
    let x = dev.upload(&xs).or_exit("upload");
    let mut y = dev.alloc_zeroed::<T>(n).or_exit("alloc");
    let bytes = 2 * n * T::DTYPE.bytes() as usize;
    let copy_bw = support::copy_gbps(dev, ctx.reps, &x, &mut y);
    let mut rows = Vec::new();
    let row = |kind: &str, alg: &str, (block, items): (u32, u32), gbps: f64| Row {
        suite: "copy",
        kind: kind.into(),
        dtype: dtype.clone(),
        algorithm: alg.into(),
        block,
        items,
        n,
        gbps,
        copy: copy_bw,
        cub: ctx.cub.get(kind, &dtype, alg, (block, items), n),
        extra: Vec::new(),
    };
    if let Some(g) = copy_bw {
        rows.push(ctx.progress(row("memcpy", "memcpy", (0, 0), g)));
    }
    let mut order = [Bounds::Checked, Bounds::Unchecked];
    if ctx.unchecked_first {
        order.reverse();
    }
    for alg in Algorithm::ALL {
        for (block, items) in ctx.shapes() {
            let mut gbps = Vec::new();
            for bounds in order {
                let kernel = copy_kernel::<T>(alg, block, items, bounds);
                let f = dev.compile(&kernel).or_exit("compile");
                // Check once, into a poisoned output.
                let mut out = dev.alloc_filled(n, T::from_bits(0x5a)).or_exit("alloc");
                copy(&f, bounds, n, &x, &mut out);
                let got = out.to_vec().or_exit("download");
                if got != xs {
                    eprintln!("error: {} copied wrongly", kernel.name());
                    std::process::exit(1);
                }
                let t = support::time(dev, ctx.reps, || copy(&f, bounds, n, &x, &mut y));
                gbps.push(support::gbps(bytes, t));
            }
            // (checked, unchecked), whichever ran first.
            let (g, raw) = match order[0] {
                Bounds::Checked => (gbps[0], gbps[1]),
                Bounds::Unchecked => (gbps[1], gbps[0]),
            };
            let mut r = row("copy", alg_name(alg), (block, items), g);
            r.extra.push(("unchecked GB/s", raw));
            rows.push(ctx.progress(r));
        }
    }
    rows
}

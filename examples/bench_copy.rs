//! Copy-kernel bandwidth: every load/store algorithm, f32 and i32, blocks of 128 and 256,
//! 1/4/8/16 items per thread, beside the device-to-device copy bandwidth measured in the same
//! run. GB/s counts bytes read plus bytes written. Every kernel's output is checked once.
//!
//! With `COOPGRAPH_CUB_CSV` naming the CSV that `benches/cub/run.sh` wrote in the same run
//! (CUB's `BlockLoad`/`BlockStore` in the same configurations), each row also shows CUB's
//! figure and our ratio to it.
//!
//! On a GPU it moves 2^28 elements (override with `COOPGRAPH_BENCH_N`); on the simulator it
//! checks the same kernels on 2^14 elements and prints simulator times, which say nothing
//! about a GPU.

use coopgraph::ir::{Algorithm, Element, index};
use coopgraph::runtime::{Backend, Buffer, Device, DeviceElement, Function};
use coopgraph::{KernelBuilder, Load, Store};
use std::time::Duration;

const REPS: usize = 20;

fn copy_kernel<T: Element>(alg: Algorithm, block: u32, items: u32) -> coopgraph::Kernel {
    let name = format!("copy_{}_{alg:?}_{block}x{items}", T::DTYPE);
    let mut k = KernelBuilder::new(name)
        .block(block)
        .items_per_thread(items);
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
    k.build().expect("copy kernel builds")
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time_launches(
    dev: &Device,
    f: &Function,
    n: usize,
    x: &Buffer<impl DeviceElement>,
    y: &mut Buffer<impl DeviceElement>,
    reps: usize,
) -> Duration {
    for _ in 0..2 {
        f.launch_over(n, (x, &mut *y, n as u32))
            .expect("warm-up launch");
    }
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let (r, t) = dev
            .time(|| f.launch_over(n, (x, &mut *y, n as u32)))
            .expect("timed launch");
        r.expect("launch");
        times.push(t);
    }
    median(times)
}

fn d2d_copy<T: DeviceElement>(dev: &Device, x: &Buffer<T>, y: &mut Buffer<T>) -> Option<Duration> {
    let stream = dev.cuda_stream()?.clone();
    let (src, dst) = (x.as_cuda()?, y.as_cuda_mut()?);
    let mut times = Vec::new();
    for i in 0..REPS + 2 {
        let (r, t) = dev
            .time(|| stream.memcpy_dtod(src, dst))
            .expect("timed copy");
        r.expect("device-to-device copy");
        if i >= 2 {
            times.push(t);
        }
    }
    Some(median(times))
}

fn gbps(bytes: usize, t: Duration) -> f64 {
    bytes as f64 / t.as_secs_f64() / 1e9
}

/// CUB's figures by (dtype, algorithm, block, items), from the reference harness's CSV.
fn cub_figures() -> std::collections::HashMap<(String, String, u32, u32), f64> {
    let mut map = std::collections::HashMap::new();
    let Ok(path) = std::env::var("COOPGRAPH_CUB_CSV") else {
        return map;
    };
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        if let [kind, dtype, alg, block, items, gbps] = f[..] {
            if let (Ok(b), Ok(i), Ok(g)) = (block.parse(), items.parse(), gbps.parse()) {
                map.insert((format!("{kind}:{dtype}"), alg.to_string(), b, i), g);
            }
        }
    }
    map
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

fn run<T: DeviceElement>(dev: &Device, n: usize, reps: usize) -> Vec<String> {
    let cub = cub_figures();
    let xs: Vec<T> = (0..n as u64)
        .map(|i| T::from_bits(i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40))
        .collect();
    let x = dev.upload(&xs).expect("upload");
    let mut y = dev.alloc_zeroed::<T>(n).expect("alloc");
    let bytes = 2 * n * T::DTYPE.bytes() as usize;
    let copy = d2d_copy(dev, &x, &mut y);
    let mut rows = Vec::new();
    if let Some(t) = copy {
        let theirs = cub
            .get(&(format!("memcpy:{}", T::DTYPE), "memcpy".into(), 0, 0))
            .map(|g| format!("{g:.0}"))
            .unwrap_or_else(|| "-".into());
        rows.push(format!(
            "| {} | device-to-device copy | - | - | {:.0} | 100% | {theirs} | - |",
            T::DTYPE,
            gbps(bytes, t)
        ));
    }
    for alg in Algorithm::ALL {
        for block in [128u32, 256] {
            for items in [1u32, 4, 8, 16] {
                let kernel = copy_kernel::<T>(alg, block, items);
                let f = dev.compile(&kernel).expect("compile");
                // Check once, into a poisoned output.
                let mut out = dev.alloc_filled(n, T::from_bits(0x5a)).expect("alloc");
                f.launch_over(n, (&x, &mut out, n as u32)).expect("launch");
                let got = out.to_vec().expect("download");
                assert!(got == xs, "{} copied wrongly", kernel.name());
                let t = time_launches(dev, &f, n, &x, &mut y, reps);
                let g = gbps(bytes, t);
                let pct = copy
                    .map(|c| format!("{:.1}%", 100.0 * g / gbps(bytes, c)))
                    .unwrap_or_else(|| "-".into());
                let key = (
                    format!("copy:{}", T::DTYPE),
                    alg_name(alg).to_string(),
                    block,
                    items,
                );
                let (theirs, ratio) = match cub.get(&key) {
                    Some(c) => (format!("{c:.0}"), format!("{:.2}", g / c)),
                    None => ("-".into(), "-".into()),
                };
                rows.push(format!(
                    "| {} | {} | {block} | {items} | {g:.0} | {pct} | {theirs} | {ratio} |",
                    T::DTYPE,
                    alg_name(alg)
                ));
            }
        }
    }
    rows
}

fn main() {
    let dev = Device::default_device().expect("a device");
    let on_gpu = matches!(dev.backend(), Backend::Cuda { .. });
    let n = std::env::var("COOPGRAPH_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if on_gpu { 1 << 28 } else { 1 << 14 });
    let reps = if on_gpu { REPS } else { 1 };
    println!("device: {:?}, n = {n}", dev.backend());
    println!("| dtype | algorithm | block | items | GB/s | % of copy | CUB GB/s | ratio |");
    println!("|---|---|---|---|---|---|---|---|");
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

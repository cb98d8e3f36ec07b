//! A whole-array inclusive scan in the reduce-then-scan form: (1) each tile's sum, (2) one
//! block scans the tile sums, carrying a running total from tile to tile through a prefix
//! callback (each tile's scan starts from the running value, and the callback adds the tile's
//! total to it), (3) each tile's scan is seeded through a prefix callback with its prefix,
//! which thread 0 loads (the callback's value is taken from thread 0). Checked against the
//! CPU; on a GPU prints GB/s (2 · n · 4 bytes per scan) beside
//! `cub::DeviceScan::InclusiveSum` when `COOPGRAPH_CUB_CSV` names the reference harness's CSV
//! from the same run. `COOPGRAPH_BENCH_N` sets the element count.

use coopgraph::ir::{Reduce, Scan};
use coopgraph::runtime::{Backend, Buffer, Device};
use coopgraph::{Kernel, KernelBuilder, Load, Store};

const BLOCK: u32 = 256;
const ITEMS: u32 = 8;
const TILE: u32 = BLOCK * ITEMS;

/// partials[b] = the sum of tile b.
fn tile_sums() -> Result<Kernel, coopgraph::Error> {
    let mut k = KernelBuilder::new("tile_sums")
        .block(BLOCK)
        .items_per_thread(ITEMS);
    let x = k.input::<u32>("x");
    let p = k.output::<u32>("partials");
    let n = k.scalar::<u32>("n");
    let b = k.this_block();
    k.tiles(n, |k, tile| {
        let t = k.load_from(b, &x, Load::warp_transpose().oob_default(0));
        let s = k.reduce(b, &t, Reduce::sum());
        k.store_to(
            b,
            &p,
            &s,
            Store::direct().offset(tile.index.clone()).valid_items(1u32),
        );
    });
    k.build()
}

/// prefixes = exclusive scan of partials, by one block looping over its tiles; a prefix
/// callback carries the running total from tile to tile.
fn scan_sums() -> Result<Kernel, coopgraph::Error> {
    let mut k = KernelBuilder::new("scan_sums")
        .block(1024)
        .items_per_thread(ITEMS);
    let p = k.input::<u32>("partials");
    let q = k.output::<u32>("prefixes");
    let m = k.scalar::<u32>("m");
    let b = k.this_block();
    let running = k.thread_data_n::<u32>(1);
    k.set_item(&running, 0, 0u32);
    k.tiles(m, |k, _tile| {
        let t = k.load_from(b, &p, Load::warp_transpose().oob_default(0));
        let s = k.scan_with_prefix(b, &t, Scan::exclusive_sum(), |k, total| {
            // This tile starts where the last one ended; the next starts after this one.
            let start = running.item(0);
            k.set_item(&running, 0, running.item(0) + total);
            start
        });
        k.store_to(b, &q, &s, Store::warp_transpose());
    });
    k.build()
}

/// y = inclusive scan of each tile, starting from its prefix.
fn scan_tiles() -> Result<Kernel, coopgraph::Error> {
    let mut k = KernelBuilder::new("scan_tiles")
        .block(BLOCK)
        .items_per_thread(ITEMS);
    let x = k.input::<u32>("x");
    let q = k.input::<u32>("prefixes");
    let y = k.output::<u32>("y");
    let n = k.scalar::<u32>("n");
    let b = k.this_block();
    k.tiles(n, |k, tile| {
        // Thread 0 reads the tile's prefix; the prefix callback's value is taken from
        // thread 0 and seeds the whole block's scan.
        let carry = k.thread_data_n::<u32>(1);
        k.load_into(
            b,
            &q,
            &carry,
            Load::direct()
                .offset(tile.index.clone())
                .valid_items(1u32)
                .oob_default(0),
        );
        let t = k.load_from(b, &x, Load::warp_transpose());
        let s = k.scan_with_prefix(b, &t, Scan::inclusive_sum(), |_k, _total| carry.item(0));
        k.store_to(b, &y, &s, Store::warp_transpose());
    });
    k.build()
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
    let on_gpu = matches!(device.backend(), Backend::Cuda { .. });
    // 2^28 on a GPU, 2^16 on the simulator; COOPGRAPH_BENCH_N overrides (the sanitizers run
    // the example on fewer).
    let n: usize = std::env::var("COOPGRAPH_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if on_gpu { 1 << 28 } else { 1 << 16 });
    let tiles = n.div_ceil(TILE as usize);
    let (k1, k2, k3) = (
        device.compile(&tile_sums()?)?,
        device.compile(&scan_sums()?)?,
        device.compile(&scan_tiles()?)?,
    );
    let xs: Vec<u32> = (0..n as u64)
        .map(|i| (i.wrapping_mul(2654435761) >> 7) as u32 % 4)
        .collect();
    let x = device.upload(&xs)?;
    let mut partials = device.alloc_zeroed::<u32>(tiles)?;
    let mut prefixes = device.alloc_zeroed::<u32>(tiles)?;
    let mut y = device.alloc_zeroed::<u32>(n)?;
    let grid = if on_gpu { tiles.min(132 * 8) as u32 } else { 4 };
    let run = |partials: &mut Buffer<u32>,
               prefixes: &mut Buffer<u32>,
               y: &mut Buffer<u32>|
     -> Result<(), coopgraph::runtime::RuntimeError> {
        k1.launch_grid(grid, (&x, &mut *partials, n as u32))?;
        k2.launch_grid(1, (&*partials, &mut *prefixes, tiles as u32))?;
        k3.launch_grid(grid, (&x, &*prefixes, &mut *y, n as u32))
    };
    run(&mut partials, &mut prefixes, &mut y)?;
    let got = y.to_vec()?;
    let mut acc = 0u32;
    for (i, &v) in xs.iter().enumerate() {
        acc = acc.wrapping_add(v);
        if got[i] != acc {
            return Err(format!("element {i}: {} instead of {acc}", got[i]).into());
        }
    }
    println!("scanned {n} elements on {:?}: correct", device.backend());
    if on_gpu {
        let mut times = Vec::new();
        for _ in 0..10 {
            let (r, t) = device.time(|| run(&mut partials, &mut prefixes, &mut y))?;
            r?;
            times.push(t);
        }
        times.sort();
        let t = times[times.len() / 2];
        let ours = (2 * n * 4) as f64 / t.as_secs_f64() / 1e9;
        let cub = std::env::var("COOPGRAPH_CUB_CSV").ok().and_then(|p| {
            std::fs::read_to_string(p).ok()?.lines().find_map(|l| {
                l.strip_prefix("device_scan,i32,inclusive_sum,0,0,")?
                    .parse::<f64>()
                    .ok()
            })
        });
        match cub {
            Some(c) => println!(
                "reduce-then-scan: {ours:.0} GB/s; cub::DeviceScan::InclusiveSum (i32): {c:.0} GB/s; ratio {:.2}",
                ours / c
            ),
            None => println!("reduce-then-scan: {ours:.0} GB/s"),
        }
    }
    Ok(())
}

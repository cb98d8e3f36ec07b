//! A whole-array inclusive scan, two ways, each checked against the CPU:
//! - single pass with decoupled look-back ([`coopgraph::algorithms::DeviceScan`]): each block
//!   takes a tile from a counter, scans it, publishes its aggregate, and its first warp looks
//!   back over the tiles before for the prefix; every element is read once and written once;
//! - reduce-then-scan, kept for comparison (`reduce_then_scan`): (1) each tile's sum, (2) one
//!   block scans the tile sums, carrying a running total from tile to tile through a prefix
//!   callback, (3) each tile's scan seeded with its prefix, which thread 0 loads. The input
//!   is read twice.
//!
//! On a GPU it runs 2^28 elements (`COOPGRAPH_BENCH_N` overrides; the simulator runs 2^14)
//! and prints GB/s (2 · n · element bytes per scan) of both forms for `u32`, and of the
//! single pass for `i32`, `u32`, `f32` and `u64`, beside `cub::DeviceScan::InclusiveSum` when
//! `COOPGRAPH_CUB_CSV` names the CSV of `benches/cub/device.cu` from the same run, and beside
//! the device-to-device copy. It also runs a fused chain, `x * 3 + 1`, inclusive sum,
//! `y * 2 + 1` on `u32` ([`DeviceScan::map_input`] and [`DeviceScan::map_output`]: one kernel,
//! each element read once and written once), beside the same chain as CUB calls and map
//! kernels and as CUB's scan through transform iterators (`benches/cub/fused_scan.cu`, whose
//! CSV may be appended to device.cu's: `COOPGRAPH_CUB_CSV` reads every row of one file).
//! `COOPGRAPH_SCAN_SWEEP=1` also times (and checks) the single pass of `u32` at several
//! tunings (threads × items), `COOPGRAPH_SCAN_SWEEP=64` that of `u64`. The process exits
//! non-zero when any result is wrong.

#[path = "support/bench.rs"]
#[allow(dead_code)]
mod bench;

use bench::OrExit;
use coopgraph::algorithms::{DeviceScan, Op, ScanElement, Tuning, Workspace};
use coopgraph::ir::{Reduce, Scan};
use coopgraph::runtime::{Buffer, Device};
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

/// The reduce-then-scan form's three kernels, launched over `n` elements of `x` into `y`.
struct ReduceThenScan {
    kernels: [coopgraph::runtime::Function; 3],
    partials: Buffer<u32>,
    prefixes: Buffer<u32>,
    grid: u32,
    tiles: usize,
}

impl ReduceThenScan {
    fn new(device: &Device, n: usize) -> Result<Self, coopgraph::Error> {
        let tiles = n.div_ceil(TILE as usize);
        let grid = if device.is_cuda() {
            tiles.min(device.sm_count() as usize * 8) as u32
        } else {
            4
        };
        Ok(ReduceThenScan {
            kernels: [
                device.compile(&tile_sums()?)?,
                device.compile(&scan_sums()?)?,
                device.compile(&scan_tiles()?)?,
            ],
            partials: device.alloc_zeroed::<u32>(tiles)?,
            prefixes: device.alloc_zeroed::<u32>(tiles)?,
            grid,
            tiles,
        })
    }

    fn run(&mut self, x: &Buffer<u32>, y: &mut Buffer<u32>) -> Result<(), coopgraph::Error> {
        let n = x.len() as u32;
        let [k1, k2, k3] = &self.kernels;
        k1.launch_grid(self.grid, (x, &mut self.partials, n))?;
        k2.launch_grid(1, (&self.partials, &mut self.prefixes, self.tiles as u32))?;
        k3.launch_grid(self.grid, (x, &self.prefixes, &mut *y, n))?;
        Ok(())
    }
}

/// The input: small integers (exact in every type), as `T` and as `i64`.
fn input<T: ScanElement>(n: usize) -> (Vec<T>, Vec<i64>) {
    let vals: Vec<i64> = (0..n as u64)
        .map(|i| ((i.wrapping_mul(2654435761) >> 7) % 4) as i64)
        .collect();
    (vals.iter().map(|&v| T::cast_from_i64(v)).collect(), vals)
}

/// Checks `y` against the CPU's running sum of `vals` (exact: small integers).
fn check<T: ScanElement>(vals: &[i64], y: &Buffer<T>, what: &str) -> Result<(), String> {
    let got = y.to_vec().map_err(|e| e.to_string())?;
    let mut acc = 0i64;
    for (i, &v) in vals.iter().enumerate() {
        acc += v;
        let want = T::cast_from_i64(acc);
        if got[i].to_bits() != want.to_bits() {
            return Err(format!(
                "{what}: element {i} is {:?} instead of {want:?}",
                got[i]
            ));
        }
    }
    Ok(())
}

/// One element type's [`single_pass`].
type SinglePass =
    fn(&Device, usize, usize, Tuning) -> Result<Option<f64>, Box<dyn std::error::Error>>;

/// Runs the single pass for `T` at `tuning`, checks it, and on a GPU returns its GB/s.
fn single_pass<T: ScanElement>(
    device: &Device,
    n: usize,
    reps: usize,
    tuning: Tuning,
) -> Result<Option<f64>, Box<dyn std::error::Error>> {
    let (xs, vals) = input::<T>(n);
    let x = device.upload(&xs)?;
    let mut y = device.alloc_zeroed::<T>(n)?;
    let scan = DeviceScan::inclusive(Op::<T>::sum())
        .tuning(tuning)
        .prepare(device)?;
    let mut ws = Workspace::new(device)?;
    scan.run(&x, &mut y, &mut ws)?;
    let what = format!(
        "single pass {} {}x{}",
        T::DTYPE,
        tuning.threads,
        tuning.items
    );
    check(&vals, &y, &what)?;
    if !device.is_cuda() {
        return Ok(None);
    }
    let t = bench::time(device, reps, || {
        scan.run(&x, &mut y, &mut ws).or_exit("single-pass scan")
    });
    // The timed runs must have left the right answer too.
    check(&vals, &y, &what)?;
    Ok(Some(bench::gbps(2 * n * T::DTYPE.bytes() as usize, t)))
}

/// The fused chain's maps, as `benches/cub/fused_scan.cu` has them (wrapping).
fn chain_in(v: u32) -> u32 {
    v.wrapping_mul(3).wrapping_add(1)
}

fn chain_out(s: u32) -> u32 {
    s.wrapping_mul(2).wrapping_add(1)
}

/// Runs `x * 3 + 1`, inclusive sum, `y * 2 + 1` on `u32` as one single-pass scan with both
/// maps fused, checks it against the CPU's chain, and on a GPU returns its GB/s (each element
/// read once and written once).
fn fused_chain(
    device: &Device,
    n: usize,
    reps: usize,
) -> Result<Option<f64>, Box<dyn std::error::Error>> {
    let (xs, _) = input::<u32>(n);
    let x = device.upload(&xs)?;
    let mut y = device.alloc_zeroed::<u32>(n)?;
    let scan = DeviceScan::inclusive(Op::<u32>::sum())
        .map_input(|v| v * 3u32 + 1u32)
        .map_output(|s| s * 2u32 + 1u32)
        .prepare(device)?;
    let mut ws = Workspace::new(device)?;
    let check = |y: &Buffer<u32>| -> Result<(), String> {
        let got = y.to_vec().map_err(|e| e.to_string())?;
        let mut acc = 0u32;
        for (i, (&v, &g)) in xs.iter().zip(&got).enumerate() {
            acc = acc.wrapping_add(chain_in(v));
            if g != chain_out(acc) {
                return Err(format!(
                    "fused map->scan->map u32: element {i} is {g} instead of {}",
                    chain_out(acc)
                ));
            }
        }
        Ok(())
    };
    scan.run(&x, &mut y, &mut ws)?;
    check(&y)?;
    if !device.is_cuda() {
        return Ok(None);
    }
    let t = bench::time(device, reps, || {
        scan.run(&x, &mut y, &mut ws).or_exit("fused scan")
    });
    check(&y)?;
    Ok(Some(bench::gbps(2 * n * 4, t)))
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
    let (on_gpu, n, reps) = bench::size(&device);
    let cub = bench::cub_figures();
    let key = |dtype: &str| {
        (
            "device_scan".to_string(),
            dtype.to_string(),
            "inclusive_sum".to_string(),
            0,
            0,
        )
    };

    // Reduce-then-scan, for comparison.
    let (xs, vals) = input::<u32>(n);
    let x = device.upload(&xs)?;
    let mut y = device.alloc_zeroed::<u32>(n)?;
    let mut rts = ReduceThenScan::new(&device, n)?;
    rts.run(&x, &mut y)?;
    check(&vals, &y, "reduce-then-scan u32")?;
    let copy = bench::copy_gbps(&device, reps, &x, &mut y);
    if on_gpu {
        let t = bench::time(&device, reps, || {
            rts.run(&x, &mut y).or_exit("reduce-then-scan")
        });
        check(&vals, &y, "reduce-then-scan u32")?;
        let g = bench::gbps(2 * n * 4, t);
        let (c, ratio) = bench::versus(g, cub.get(&key("u32")));
        println!(
            "reduce-then-scan u32 {BLOCK}x{ITEMS}: {g:.0} GB/s ({} of copy); cub::DeviceScan::InclusiveSum u32: {c} GB/s; ratio {ratio}",
            bench::percent(g, copy)
        );
    }

    // The single pass, at the table's tuning, for each 32-bit type.
    let default = coopgraph::algorithms::default_tuning(coopgraph::ir::DType::U32);
    let runs: [(&str, SinglePass); 3] = [
        ("i32", single_pass::<i32>),
        ("u32", single_pass::<u32>),
        ("f32", single_pass::<f32>),
    ];
    for (dtype, f) in runs {
        if let Some(g) = f(&device, n, reps, default)? {
            let (c, ratio) = bench::versus(g, cub.get(&key(dtype)));
            println!(
                "single pass {dtype} {}x{}: {g:.0} GB/s ({} of copy); cub::DeviceScan::InclusiveSum {dtype}: {c} GB/s; ratio {ratio}",
                default.threads,
                default.items,
                bench::percent(g, copy)
            );
        }
    }
    let wide = coopgraph::algorithms::default_tuning(coopgraph::ir::DType::U64);
    if let Some(g) = single_pass::<u64>(&device, n, reps, wide)? {
        let (c, ratio) = bench::versus(g, cub.get(&key("u64")));
        println!(
            "single pass u64 {}x{}: {g:.0} GB/s; cub::DeviceScan::InclusiveSum u64: {c} GB/s; ratio {ratio}",
            wide.threads, wide.items
        );
    }

    if let Some(g) = fused_chain(&device, n, reps)? {
        let fused_key = |alg: &str| ("device_scan".into(), "u32".into(), alg.into(), 0, 0);
        let (c3, r3) = bench::versus(g, cub.get(&fused_key("fused_map_scan_map_3calls")));
        let (ci, ri) = bench::versus(g, cub.get(&fused_key("fused_map_scan_map_iterators")));
        println!(
            "fused map->scan->map u32: {g:.0} GB/s; CUB calls and map kernels: {c3} GB/s; ratio {r3}; CUB's scan through transform iterators: {ci} GB/s; ratio {ri}"
        );
    }

    let sweep = std::env::var("COOPGRAPH_SCAN_SWEEP").unwrap_or_default();
    if sweep == "64" {
        for (threads, items) in [(128, 8), (256, 4), (256, 12), (256, 16), (512, 4), (512, 8)] {
            let tuning = Tuning { threads, items };
            if let Some(g) = single_pass::<u64>(&device, n, reps, tuning)? {
                println!("sweep: single pass u64 {threads}x{items}: {g:.0} GB/s");
            }
        }
    }
    if sweep == "1" {
        for (threads, items) in [
            (128, 8),
            (128, 12),
            (128, 16),
            (128, 24),
            (256, 8),
            (256, 12),
            (256, 16),
            (256, 20),
            (256, 24),
            (256, 28),
            (256, 32),
            (384, 16),
            (384, 20),
            (512, 8),
            (512, 12),
            (512, 16),
            (512, 20),
        ] {
            let tuning = Tuning { threads, items };
            if let Some(g) = single_pass::<u32>(&device, n, reps, tuning)? {
                println!(
                    "sweep: single pass u32 {threads}x{items}: {g:.0} GB/s ({} of copy)",
                    bench::percent(g, copy)
                );
            }
        }
    }
    println!("scanned {n} elements on {:?}: correct", device.backend());
    Ok(())
}

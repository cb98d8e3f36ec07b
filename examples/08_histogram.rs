//! Histograms of 256 bins, of `u8` samples (the bin is the sample) and of `f32` samples in
//! [0, 1) (the bin is `floor(256 x)`; samples outside are not counted), two ways:
//!
//! - global atomics: each sample adds 1 to its bin in global memory;
//! - privatized: each block counts into a histogram in shared memory with shared atomics,
//!   then, after `sync_block`, adds its counts into the global bins (one atomic per bin).
//!
//! Each kernel runs a grid-stride loop over tiles of 256 threads times 16 `u8` (or 4 `f32`)
//! samples, loaded with vector accesses. Both are checked against the CPU. On a GPU the
//! example histograms 2^28 samples of each type (override with `COOPGRAPH_BENCH_N`) and
//! prints GB/s (samples read per second; zeroing the bins, a launch of its own, is timed
//! too, as CUB's is) beside `cub::DeviceHistogram::HistogramEven` on the same samples, when
//! `COOPGRAPH_CUB_CSV` names the CSV that `benches/cub/run.sh` wrote in the same run.

#[path = "support/bench.rs"]
#[allow(dead_code)]
mod bench;

use bench::OrExit;

use coopgraph::ir::{Atomic, Element, Expr, ThreadData, index};
use coopgraph::runtime::{Buffer, Device, DeviceElement, Function};
use coopgraph::{Kernel, KernelBuilder, Load};

const BLOCK: u32 = 256;
const BINS: u32 = 256;

/// A sample type: how many a thread loads per tile, its bin, and the samples the CUB
/// reference histograms.
trait Sample: Element + DeviceElement {
    const ITEMS: u32;
    /// The bin of `x`, or `BINS` where it is outside the levels.
    fn bin(x: Expr<Self>) -> Expr<u32>;
    /// The same on the host.
    fn host_bin(self) -> Option<usize>;
    /// Sample `i`, as `benches/cub/device.cu` makes it.
    fn make(i: u64) -> Self;
}

impl Sample for u8 {
    const ITEMS: u32 = 16;
    fn bin(x: Expr<u8>) -> Expr<u32> {
        x.cast::<u32>()
    }
    fn host_bin(self) -> Option<usize> {
        Some(self as usize)
    }
    fn make(i: u64) -> u8 {
        bench::mix64(i ^ (0xD1 << 40)) as u8
    }
}

impl Sample for f32 {
    const ITEMS: u32 = 4;
    fn bin(x: Expr<f32>) -> Expr<u32> {
        let inside = x.ge(0.0f32).and(&x.lt(1.0f32));
        inside.select((x * BINS as f32).cast::<u32>(), BINS)
    }
    fn host_bin(self) -> Option<usize> {
        (0.0..1.0)
            .contains(&self)
            .then_some((self * BINS as f32) as usize)
    }
    fn make(i: u64) -> f32 {
        (bench::mix64(i ^ (0xD2 << 40)) >> 40) as f32 / 16_777_216.0
    }
}

/// The bin of item `i` of this thread's part of a tile with `valid` samples, `BINS` past
/// them.
fn tile_bin<T: Sample>(x: Expr<T>, i: u32, valid: &Expr<u32>) -> Expr<u32> {
    let position = index::thread_rank() * T::ITEMS + i;
    position.lt(valid).select(T::bin(x), BINS)
}

/// Counts each of this thread's samples of a tile with `valid` samples: `add(k, bin)` for
/// each. A whole tile (all but the last) takes every item's bin as it is; the last
/// one's items past its end get bin `BINS`.
fn count<T: Sample>(
    k: &mut KernelBuilder,
    samples: &ThreadData<T>,
    valid: &Expr<u32>,
    add: impl Fn(&mut KernelBuilder, Expr<u32>),
) {
    k.if_else(
        valid.eq(BLOCK * T::ITEMS),
        |k| {
            for i in 0..T::ITEMS {
                add(k, T::bin(samples.item(i)));
            }
        },
        |k| {
            for i in 0..T::ITEMS {
                add(k, tile_bin(samples.item(i), i, valid));
            }
        },
    );
}

/// Every sample adds 1 to its bin in global memory. Samples past the tile's end (and `f32`
/// samples outside the levels) have bin `BINS`, past the bins' end: a checked kernel skips
/// an atomic there.
fn global_atomics<T: Sample>() -> Kernel {
    let mut k = KernelBuilder::new(format!("histogram_global_{}", T::DTYPE))
        .block(BLOCK)
        .items_per_thread(T::ITEMS);
    let (x, bins, n) = (
        k.input::<T>("x"),
        k.output::<u32>("bins"),
        k.scalar::<u32>("n"),
    );
    let b = k.this_block();
    k.tiles(n, |k, tile| {
        let t = k.load_from(b, &x, Load::vectorize().oob_default(T::from_bits(0)));
        count(k, &t, &tile.valid, |k, bin| {
            k.atomic(&bins, bin, Atomic::add(1u32));
        });
    });
    k.build().or_exit("the global-atomics histogram builds")
}

/// Each block counts into a shared histogram (with one more bin for what is not counted),
/// then adds it into the global bins.
fn privatized<T: Sample>() -> Kernel {
    let mut k = KernelBuilder::new(format!("histogram_shared_{}", T::DTYPE))
        .block(BLOCK)
        .items_per_thread(T::ITEMS);
    let (x, bins, n) = (
        k.input::<T>("x"),
        k.output::<u32>("bins"),
        k.scalar::<u32>("n"),
    );
    let b = k.this_block();
    let t = index::thread_rank();
    let local = k.shared_array::<u32>(BINS + 1);
    k.shared_write(&local, &t, 0u32);
    k.if_(t.eq(0u32), |k| k.shared_write(&local, BINS, 0u32));
    k.sync_block();
    k.tiles(n, |k, tile| {
        let s = k.load_from(b, &x, Load::vectorize().oob_default(T::from_bits(0)));
        count(k, &s, &tile.valid, |k, bin| {
            k.atomic(&local, bin, Atomic::add(1u32));
        });
    });
    k.sync_block();
    let counted = local.read(&t);
    k.if_(counted.gt(0u32), |k| {
        k.atomic(&bins, &t, Atomic::add(counted.clone()));
    });
    k.build().or_exit("the privatized histogram builds")
}

/// Zeroes the 256 bins.
fn zero_bins() -> Kernel {
    let mut k = KernelBuilder::new("zero_bins").block(BLOCK);
    let bins = k.output::<u32>("bins");
    k.write(&bins, index::thread_rank(), 0u32);
    k.build().or_exit("the zeroing kernel builds")
}

/// One histogram: zero the bins, count.
fn histogram<T: Sample>(
    zero: &Function,
    f: &Function,
    grid: u32,
    x: &Buffer<T>,
    bins: &mut Buffer<u32>,
) {
    zero.launch_grid(1, (&mut *bins,))
        .or_exit("zeroing the bins");
    f.launch_grid(grid, (x, &mut *bins, x.len() as u32))
        .or_exit("the histogram");
}

fn run<T: Sample>(dev: &Device, cub: &bench::CubFigures) {
    let (on_gpu, n, reps) = bench::size(dev);
    let xs: Vec<T> = (0..n as u64).map(T::make).collect();
    let mut want = vec![0u32; BINS as usize];
    for &x in &xs {
        if let Some(b) = x.host_bin() {
            want[b] += 1;
        }
    }
    let x = dev.upload(&xs).or_exit("upload");
    let mut bins = dev.alloc_zeroed::<u32>(BINS as usize).or_exit("alloc");
    let zero = dev.compile(&zero_bins()).or_exit("compile");
    let key = (
        "device_histogram".to_string(),
        T::DTYPE.to_string(),
        "histogram_even".to_string(),
        0,
        0,
    );
    for (what, kernel) in [
        ("global atomics", global_atomics::<T>()),
        ("privatized in shared memory", privatized::<T>()),
    ] {
        let f = dev.compile(&kernel).or_exit("compile");
        // A few waves of blocks, each looping over tiles.
        let tiles = n.div_ceil((BLOCK * T::ITEMS) as usize) as u32;
        let per_sm = f.max_active_blocks_per_sm().or_exit("occupancy").max(1);
        let grid = tiles.min(dev.limits().sm_count * per_sm).max(1);
        histogram(&zero, &f, grid, &x, &mut bins);
        let got = bins.to_vec().or_exit("download");
        if got != want {
            let b = (0..want.len()).find(|&b| got[b] != want[b]).unwrap_or(0);
            eprintln!(
                "error: {} histogram ({what}) of {n} samples: bin {b} holds {}, expected {}",
                T::DTYPE,
                got[b],
                want[b]
            );
            std::process::exit(1);
        }
        if on_gpu {
            let t = bench::time(dev, reps, || histogram(&zero, &f, grid, &x, &mut bins));
            let ours = bench::gbps(n * T::DTYPE.bytes() as usize, t);
            let (theirs, ratio) = bench::versus(ours, cub.get(&key));
            println!(
                "| {} | {what} | {grid} blocks | {ours:.0} GB/s | CUB HistogramEven {theirs} GB/s | ratio {ratio} |",
                T::DTYPE
            );
        } else {
            println!("{} histogram ({what}) of {n} samples: correct", T::DTYPE);
        }
    }
}

fn main() {
    let dev = Device::default_device().or_exit("a device");
    let cub = bench::cub_figures();
    run::<u8>(&dev, &cub);
    run::<f32>(&dev, &cub);
}

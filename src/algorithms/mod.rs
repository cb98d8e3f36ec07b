//! Device-wide algorithms over [`Buffer`]s, built with the public [`KernelBuilder`] like any
//! user's kernel: [`inclusive_scan`], [`exclusive_scan`] and [`reduce`] (sum, min, max or any
//! associative operator written in the expression language), with element-wise maps fused on
//! the way in and out ([`DeviceScan`], [`DeviceReduce`]); stream compaction ([`select_if`],
//! [`select_flagged`], [`partition`], [`DeviceSelect`]) and [`run_length_encode`]; radix
//! sorts of keys and of pairs ([`radix_sort_keys`], [`radix_sort_pairs`],
//! [`DeviceRadixSort`]); histograms between even levels or given ones ([`histogram_even`],
//! [`histogram_range`], [`DeviceHistogram`]); and reductions of many segments at once
//! ([`segmented_reduce`], [`DeviceSegmentedReduce`]).
//!
//! The scan is single pass with decoupled look-back: every block takes its tile's index from a
//! counter in the [`Workspace`] (so progress never depends on the order in which blocks are
//! scheduled), scans its tile, publishes the tile's aggregate, and its first warp looks back
//! over a window of 32 predecessors at once for the prefix, backing off with `nanosleep`
//! while one has not published; then it publishes its inclusive prefix. Every element is read
//! once and written once.
//!
//! The same look-back carries counts: [`select_if`], [`select_flagged`] and [`partition`]
//! ([`DeviceSelect`]) carry the number of kept elements before each tile, and
//! [`run_length_encode`] ([`DeviceRunLengthEncode`]) the runs before it and where the last
//! one started; each tile's kept elements are compacted in shared memory and written
//! contiguously.
//!
//! ```
//! use coopgraph::algorithms::{self, DeviceScan, Op, Workspace};
//! use coopgraph::runtime::Device;
//!
//! let device = Device::sim();
//! let x = device.upload(&[3u32, 1, 4, 1, 5, 9, 2, 6])?;
//! let mut y = device.alloc_zeroed::<u32>(8)?;
//! algorithms::inclusive_scan(&device, &x, &mut y)?;
//! assert_eq!(y.to_vec()?, [3, 4, 8, 9, 14, 23, 25, 31]);
//!
//! // Prepared once, run many times with one workspace: the running maximum of 2x.
//! let scan = DeviceScan::inclusive(Op::max()).map_input(|v| v * 2u32).prepare(&device)?;
//! let mut ws = Workspace::new(&device)?;
//! scan.run(&x, &mut y, &mut ws)?;
//! assert_eq!(y.to_vec()?, [6, 6, 8, 8, 10, 18, 18, 18]);
//! assert_eq!(algorithms::reduce(&device, &x, Op::sum())?, Some(31));
//! # Ok::<(), coopgraph::Error>(())
//! ```
//!
//! Invariants: the kernels here use only the public builder; every launch checks its buffers'
//! lengths first ([`AlgorithmError`]); the workspace's tile status words carry a per-call
//! epoch, so no call needs a reset kernel.

mod autotune;
mod element;
mod lookback;
mod op;
mod reduce;
mod run_length;
mod scan;
mod select;
mod tuning;
mod workspace;
// The device-wide radix sort (Onesweep).
mod radix;
mod radix_kernels;
mod sort_key;
pub use radix::{
    DeviceRadixSort, PreparedRadixSort, SortWorkspace, default_pairs_tuning, default_sort_tuning,
    radix_sort_keys, radix_sort_pairs,
};
pub use sort_key::SortKey;

pub use crate::error::AlgorithmError;
pub use autotune::{Tuned, sort_tuning_space, tuning_space};
pub use element::ScanElement;
pub(crate) use op::sum_identity;
pub use op::{MapFn, Op};
pub use reduce::{DeviceReduce, PreparedReduce};
pub use run_length::{DeviceRunLengthEncode, PreparedRunLengthEncode, default_run_length_tuning};
pub use scan::{DeviceScan, PreparedScan, ScanForm};
pub use select::{DeviceSelect, PredicateFn, PreparedSelect, SelectKind, default_select_tuning};
use tuning::chosen;
pub use tuning::{Tuning, default_tuning};
pub use workspace::Workspace;

mod histogram;
mod sample;
mod segmented;
pub use crate::error::HistogramBinning;
pub use histogram::{
    DeviceHistogram, LANE_COPIES_BINS, PreparedHistogram, SHARED_BINS, default_histogram_tuning,
};
pub use sample::HistogramSample;
pub use segmented::{DeviceSegmentedReduce, PreparedSegmentedReduce, default_segmented_tuning};

use crate::Error;
use crate::ir::Expr;
use crate::runtime::{Buffer, Device, DeviceElement};

#[cfg(doc)]
use crate::KernelBuilder;

/// `y[i] = x[0] + ... + x[i]` (wrapping for integers) over all of `x`, single pass; `y` may
/// be longer than `x` (its tail is left alone). The kernel is built on each call (its
/// compiled module comes from the device's cache) and a workspace allocated: prepare a
/// [`DeviceScan`] and keep a [`Workspace`] to avoid both.
///
/// ```
/// use coopgraph::runtime::Device;
///
/// let device = Device::sim();
/// let x = device.upload(&[1.5f32, 2.0, -0.5])?;
/// let mut y = device.alloc_zeroed::<f32>(3)?;
/// coopgraph::algorithms::inclusive_scan(&device, &x, &mut y)?;
/// assert_eq!(y.to_vec()?, [1.5, 3.5, 3.0]);
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub fn inclusive_scan<T: ScanElement>(
    device: &Device,
    x: &Buffer<T>,
    y: &mut Buffer<T>,
) -> Result<(), Error> {
    let scan = DeviceScan::inclusive(Op::sum()).prepare(device)?;
    scan.run(x, y, &mut Workspace::new(device)?)
}

/// `y[0] = initial`, `y[i] = initial + x[0] + ... + x[i - 1]`, single pass; as
/// [`inclusive_scan`] otherwise.
///
/// ```
/// use coopgraph::runtime::Device;
///
/// let device = Device::sim();
/// let x = device.upload(&[5i64, -2, 7])?;
/// let mut y = device.alloc_zeroed::<i64>(3)?;
/// coopgraph::algorithms::exclusive_scan(&device, &x, &mut y, 100)?;
/// assert_eq!(y.to_vec()?, [100, 105, 103]);
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub fn exclusive_scan<T: ScanElement>(
    device: &Device,
    x: &Buffer<T>,
    y: &mut Buffer<T>,
    initial: T,
) -> Result<(), Error> {
    let scan = DeviceScan::exclusive(Op::sum(), initial).prepare(device)?;
    scan.run(x, y, &mut Workspace::new(device)?)
}

/// The reduction of all of `x` with `op` (`None` for an empty buffer), combined in element
/// order (so any associative operator works) and the same bits on every run of the same
/// length and tuning, floats included.
///
/// ```
/// use coopgraph::algorithms::{self, Op};
/// use coopgraph::runtime::Device;
///
/// let device = Device::sim();
/// let x = device.upload(&[2.5f64, -1.0, 8.0])?;
/// assert_eq!(algorithms::reduce(&device, &x, Op::max())?, Some(8.0));
/// let empty = device.alloc_zeroed::<f64>(0)?;
/// assert_eq!(algorithms::reduce(&device, &empty, Op::sum())?, None);
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub fn reduce<T: ScanElement>(
    device: &Device,
    x: &Buffer<T>,
    op: Op<T>,
) -> Result<Option<T>, Error> {
    let r = DeviceReduce::new(op).prepare(device)?;
    r.run(x, &mut Workspace::new(device)?)
}

/// Copies the elements of `x` where `predicate` holds to the front of `out`, in input order,
/// single pass, and returns how many (`cub::DeviceSelect::If`); `out` may be longer than `x`
/// and its elements past those kept are left alone. Prepare a [`DeviceSelect`] and keep a
/// [`Workspace`] to build and allocate once, or to leave the count on the device.
///
/// ```
/// use coopgraph::runtime::Device;
///
/// let device = Device::sim();
/// let x = device.upload(&[3u32, 8, 1, 6, 4])?;
/// let mut out = device.alloc_zeroed::<u32>(5)?;
/// let kept = coopgraph::algorithms::select_if(&device, &x, &mut out, |v| (v % 2u32).eq(0u32))?;
/// assert_eq!(out.to_vec()?[..kept], [8, 6, 4]);
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub fn select_if<T: DeviceElement>(
    device: &Device,
    x: &Buffer<T>,
    out: &mut Buffer<T>,
    predicate: impl Fn(Expr<T>) -> Expr<bool> + Send + Sync + 'static,
) -> Result<usize, Error> {
    let select = DeviceSelect::new(predicate).prepare(device)?;
    select.run(x, out, &mut Workspace::new(device)?)
}

/// Copies the elements of `x` whose flag in `flags` is not 0 to the front of `out`, in input
/// order, and returns how many (`cub::DeviceSelect::Flagged`); as [`select_if`] otherwise.
///
/// ```
/// use coopgraph::runtime::Device;
///
/// let device = Device::sim();
/// let x = device.upload(&[10i64, 20, 30])?;
/// let flags = device.upload(&[0u8, 1, 1])?;
/// let mut out = device.alloc_zeroed::<i64>(3)?;
/// let kept = coopgraph::algorithms::select_flagged(&device, &x, &flags, &mut out)?;
/// assert_eq!(out.to_vec()?[..kept], [20, 30]);
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub fn select_flagged<T: DeviceElement>(
    device: &Device,
    x: &Buffer<T>,
    flags: &Buffer<u8>,
    out: &mut Buffer<T>,
) -> Result<usize, Error> {
    let select = DeviceSelect::<T>::flagged().prepare(device)?;
    select.run_flagged(x, flags, out, &mut Workspace::new(device)?)
}

/// Writes the elements of `x` where `predicate` holds to the front of `out` in input order,
/// and the others after them in reverse input order (`cub::DevicePartition::If`), single
/// pass; returns how many hold.
///
/// ```
/// use coopgraph::runtime::Device;
///
/// let device = Device::sim();
/// let x = device.upload(&[0.25f32, 0.75, 0.5, 0.9, 0.1])?;
/// let mut out = device.alloc_zeroed::<f32>(5)?;
/// let above = coopgraph::algorithms::partition(&device, &x, &mut out, |v| v.gt(0.5f32))?;
/// assert_eq!((above, out.to_vec()?), (2, vec![0.75, 0.9, 0.1, 0.5, 0.25]));
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub fn partition<T: DeviceElement>(
    device: &Device,
    x: &Buffer<T>,
    out: &mut Buffer<T>,
    predicate: impl Fn(Expr<T>) -> Expr<bool> + Send + Sync + 'static,
) -> Result<usize, Error> {
    let p = DeviceSelect::partition(predicate).prepare(device)?;
    p.run(x, out, &mut Workspace::new(device)?)
}

/// The runs of equal consecutive elements of `x` (`cub::DeviceRunLengthEncode::Encode`):
/// run `r`'s value to `unique[r]` and its length to `counts[r]`, single pass; returns the
/// number of runs. Both outputs must hold `x.len()` elements.
///
/// ```
/// use coopgraph::runtime::Device;
///
/// let device = Device::sim();
/// let x = device.upload(&[1u32, 1, 2, 2, 2, 1])?;
/// let (mut unique, mut counts) = (device.alloc_zeroed(6)?, device.alloc_zeroed(6)?);
/// let runs = coopgraph::algorithms::run_length_encode(&device, &x, &mut unique, &mut counts)?;
/// assert_eq!((&unique.to_vec()?[..runs], &counts.to_vec()?[..runs]), (&[1, 2, 1][..], &[2, 3, 1][..]));
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub fn run_length_encode<T: DeviceElement>(
    device: &Device,
    x: &Buffer<T>,
    unique: &mut Buffer<T>,
    counts: &mut Buffer<u32>,
) -> Result<usize, Error> {
    let rle = DeviceRunLengthEncode::new().prepare(device)?;
    rle.run(x, unique, counts, &mut Workspace::new(device)?)
}

/// `counts[b]` = how many of `samples` fall in even bin `b` of `counts.len()` between `lower`
/// (included) and `upper` (excluded), as `cub::DeviceHistogram::HistogramEven`: samples
/// outside (and NaN) are dropped, the counts overwritten. Each block counts in shared memory
/// and adds its bins to the counts at the end. See [`HistogramSample`] for the binning and
/// the level types; prepare a [`DeviceHistogram`] to build the kernels once.
///
/// ```
/// use coopgraph::runtime::Device;
///
/// let device = Device::sim();
/// let x = device.upload(&[0.1f32, 0.3, 0.35, 0.9, 1.0, -0.2, f32::NAN])?;
/// let mut counts = device.alloc_zeroed::<u32>(4)?;
/// coopgraph::algorithms::histogram_even(&device, &x, &mut counts, 0.0, 1.0)?;
/// assert_eq!(counts.to_vec()?, [1, 2, 0, 1]);
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub fn histogram_even<T: HistogramSample>(
    device: &Device,
    samples: &Buffer<T>,
    counts: &mut Buffer<u32>,
    lower: T::Level,
    upper: T::Level,
) -> Result<(), Error> {
    let Some(bins) = bins_of(counts)? else {
        return Ok(());
    };
    let h = DeviceHistogram::<T>::even(bins).prepare(device)?;
    h.run_even(samples, counts, lower, upper)
}

/// `counts[b]` = how many of `samples` fall in `[levels[b], levels[b + 1])`, found by binary
/// search over the `counts.len() + 1` ascending levels, as
/// `cub::DeviceHistogram::HistogramRange`: samples outside `[levels[0], levels[bins])` (and
/// NaN) are dropped, the counts overwritten.
///
/// ```
/// use coopgraph::runtime::Device;
///
/// let device = Device::sim();
/// let x = device.upload(&[5i32, -3, 17, 100, 0, 2])?;
/// let levels = device.upload(&[-10i64, 0, 3, 20])?;
/// let mut counts = device.alloc_zeroed::<u32>(3)?;
/// coopgraph::algorithms::histogram_range(&device, &x, &levels, &mut counts)?;
/// assert_eq!(counts.to_vec()?, [1, 2, 2]);
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub fn histogram_range<T: HistogramSample>(
    device: &Device,
    samples: &Buffer<T>,
    levels: &Buffer<T::Level>,
    counts: &mut Buffer<u32>,
) -> Result<(), Error> {
    let Some(bins) = bins_of(counts)? else {
        let given = levels.len();
        if given != 1 {
            return Err(AlgorithmError::LevelCount { want: 1, given }.into());
        }
        return Ok(());
    };
    let h = DeviceHistogram::<T>::range(bins).prepare(device)?;
    h.run_range(samples, levels, counts)
}

/// The bins of a histogram into `counts` (`None` for none).
fn bins_of(counts: &Buffer<u32>) -> Result<Option<u32>, Error> {
    match u32::try_from(counts.len()) {
        Ok(0) => Ok(None),
        Ok(bins) => Ok(Some(bins)),
        Err(_) => {
            let (len, max) = (counts.len(), u32::MAX as usize);
            Err(AlgorithmError::TooLong { len, max }.into())
        }
    }
}

/// `out[i]` = `initial op x[offsets[i]] op ... op x[offsets[i + 1] - 1]` for each segment `i`
/// of the `offsets.len() - 1` (`initial` for an empty one), as
/// `cub::DeviceSegmentedReduce::Reduce`: one block per segment. Offsets out of order or past
/// the end of `x` are found on the device and reported ([`AlgorithmError::Offsets`]),
/// never read past; see [`PreparedSegmentedReduce::run`].
///
/// ```
/// use coopgraph::algorithms::{self, Op};
/// use coopgraph::runtime::Device;
///
/// let device = Device::sim();
/// let x = device.upload(&[1u32, 2, 3, 4, 5, 6])?;
/// let offsets = device.upload(&[0u32, 2, 2, 6])?;
/// let mut out = device.alloc_zeroed::<u32>(3)?;
/// algorithms::segmented_reduce(&device, &x, &offsets, &mut out, Op::sum(), 100)?;
/// assert_eq!(out.to_vec()?, [103, 100, 118]);
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub fn segmented_reduce<T: ScanElement>(
    device: &Device,
    x: &Buffer<T>,
    offsets: &Buffer<u32>,
    out: &mut Buffer<T>,
    op: Op<T>,
    initial: T,
) -> Result<(), Error> {
    let r = DeviceSegmentedReduce::new(op).prepare(device)?;
    r.run(x, offsets, out, initial, &mut Workspace::new(device)?)
}

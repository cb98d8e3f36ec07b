//! The device-wide histogram (`cub::DeviceHistogram::HistogramEven` and `HistogramRange`).
//!
//! Two launches: one zeroes the counts (the call overwrites them, as CUB's does), then a
//! grid of a few blocks per SM strides over tiles of the samples. Each block keeps its own
//! copy of the bins in shared memory: its threads zero it, a block barrier, each thread
//! loads its items of a tile with vector loads and adds one to its sample's bin by a shared
//! atomic, tile after tile; a block barrier, and the block adds its non-zero bins to the
//! counts by global atomics. Where the bins do not fit [`SHARED_BINS`], every sample goes
//! to the counts by a global atomic.
//!
//! For `u8` samples each block counts the 256 raw values instead (no binning in the loop),
//! and maps each raw value to its bin once, when it adds its counts: the bins come out the
//! same, the formula applied to the value.
//!
//! Where a block counts at most [`LANE_COPIES_BINS`] counters, it keeps one copy of them per
//! lane, interleaved (counter `c` of lane `l` at `c * 32 + l`): each of a warp's atomics
//! then lands in its lane's own bank, where one copy would take a wavefront for every
//! distinct counter sharing a bank (about 3.5 for random bytes). The copies are summed once,
//! when the block adds its counts.

use super::scan::check_tuning;
use super::{AlgorithmError, HistogramBinning, HistogramSample, MapFn, Tuning};
use crate::ir::{Atomic, Element, Expr, Input, Scalar, Var, index};
use crate::runtime::{ArgList, Buffer, Device, Function};
use crate::{Error, Kernel, KernelBuilder, Load};
use std::fmt;
use std::sync::Arc;

/// The most bins a block keeps in shared memory (16 KiB of `u32` counters, so that 8
/// blocks of 256 threads share an SM's shared memory with room to spare); beyond it the
/// samples are counted straight into the counts by global atomics.
pub const SHARED_BINS: u32 = 4096;

/// The most counters a block keeps one copy of per lane (32 KiB of them): past it, one
/// copy.
pub const LANE_COPIES_BINS: u32 = 256;

/// Threads of the kernel that zeroes the counts.
const ZERO_THREADS: u32 = 256;

/// A device-wide histogram to prepare: its binning, its number of bins, an optional
/// element-wise map fused on the way in (the samples counted are `map_in(x)`), and its
/// tuning ([`default_histogram_tuning`] unless set).
///
/// ```
/// use coopgraph::algorithms::DeviceHistogram;
/// use coopgraph::runtime::Device;
///
/// // Four even bins over [0, 8) of |x|.
/// let device = Device::sim();
/// let h = DeviceHistogram::even(4).map_input(|v: coopgraph::ir::Expr<i32>| v.abs());
/// let h = h.prepare(&device)?;
/// let x = device.upload(&[-7i32, 1, 2, -3, 9, 0, 5])?;
/// let mut counts = device.alloc_zeroed::<u32>(4)?;
/// h.run_even(&x, &mut counts, 0, 8)?;
/// assert_eq!(counts.to_vec()?, [2, 2, 1, 1]);
/// # Ok::<(), coopgraph::Error>(())
/// ```
#[derive(Clone)]
pub struct DeviceHistogram<T: HistogramSample> {
    binning: HistogramBinning,
    bins: u32,
    map_in: Option<MapFn<T>>,
    tuning: Option<Tuning>,
}

impl<T: HistogramSample> fmt::Debug for DeviceHistogram<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceHistogram")
            .field("binning", &self.binning)
            .field("bins", &self.bins)
            .field("map_in", &self.map_in.is_some())
            .field("tuning", &self.chosen())
            .finish()
    }
}

/// The table of default tunings of the histogram: 256 threads, each reading 32 bytes of a
/// tile (two 16-byte vectors of `u8`, ...), at least 8 items.
///
/// ```
/// use coopgraph::algorithms::{Tuning, default_histogram_tuning};
/// use coopgraph::ir::DType;
///
/// assert_eq!(default_histogram_tuning(DType::U8), Tuning { threads: 256, items: 32 });
/// assert_eq!(default_histogram_tuning(DType::F32).items, 8);
/// ```
pub fn default_histogram_tuning(dtype: crate::ir::DType) -> Tuning {
    Tuning {
        threads: 256,
        items: (32 / dtype.bytes()).max(8),
    }
}

impl<T: HistogramSample> DeviceHistogram<T> {
    /// `bins` even bins between a lower and an upper level given to each run.
    pub fn even(bins: u32) -> Self {
        DeviceHistogram {
            binning: HistogramBinning::Even,
            bins,
            map_in: None,
            tuning: None,
        }
    }

    /// `bins` bins between `bins + 1` levels given to each run.
    pub fn range(bins: u32) -> Self {
        DeviceHistogram {
            binning: HistogramBinning::Range,
            ..DeviceHistogram::even(bins)
        }
    }

    /// Counts `f(x[i])` instead of `x[i]` (fused: read once, in the counting kernel).
    pub fn map_input(mut self, f: impl Fn(Expr<T>) -> Expr<T> + Send + Sync + 'static) -> Self {
        self.map_in = Some(Arc::new(f));
        self
    }

    /// Threads per block and items per thread of the counting kernel.
    pub fn tuning(mut self, tuning: Tuning) -> Self {
        self.tuning = Some(tuning);
        self
    }

    /// Its binning (see [`HistogramBinning`] for an example).
    pub fn binning(&self) -> HistogramBinning {
        self.binning
    }

    fn chosen(&self) -> Tuning {
        self.tuning
            .unwrap_or_else(|| default_histogram_tuning(T::DTYPE))
    }

    /// Whether each block counts in shared memory: raw values (`u8`), or bins that fit
    /// [`SHARED_BINS`].
    fn privatized(&self) -> Option<u32> {
        if T::RAW_VALUES > 0 {
            Some(T::RAW_VALUES)
        } else if self.bins <= SHARED_BINS {
            Some(self.bins)
        } else {
            None
        }
    }

    /// The two kernels, built: the zeroing of the counts and the counting.
    ///
    /// ```
    /// use coopgraph::algorithms::DeviceHistogram;
    /// use coopgraph::ptx::Arch;
    ///
    /// let [_, count] = DeviceHistogram::<f32>::even(256).kernels()?;
    /// let ptx = count.ptx(Arch::Sm90)?;
    /// assert!(ptx.contains("red.shared.add.u32") && ptx.contains("red.global.add.u32"));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn kernels(&self) -> Result<[Kernel; 2], Error> {
        if self.bins == 0 {
            return Err(AlgorithmError::NoBins.into());
        }
        let tuning = self.chosen();
        check_tuning(tuning)?;
        Ok([zero_kernel()?, self.count_kernel(tuning)?])
    }

    /// Builds both kernels and loads them on `device` (from its cache when loaded before).
    pub fn prepare(&self, device: &Device) -> Result<PreparedHistogram<T>, Error> {
        let [zero, count] = self.kernels()?;
        let count = device.compile(&count)?;
        // As many blocks an SM as it holds at once (at most `SM_THREADS` threads, and as many
        // as their shared counters allow), asked of the driver once.
        let threads = self.chosen().threads;
        let per_sm = (crate::ir::options::SM_THREADS / threads)
            .min(count.max_active_blocks_per_sm()?)
            .max(1);
        Ok(PreparedHistogram {
            zero: device.compile(&zero)?,
            count,
            per_sm: per_sm as usize,
            binning: self.binning,
            bins: self.bins,
            tuning: self.chosen(),
            _t: std::marker::PhantomData,
        })
    }

    /// The counting kernel: blocks stride over the tiles of the samples.
    fn count_kernel(&self, tuning: Tuning) -> Result<Kernel, Error> {
        let Tuning { threads, items } = tuning;
        let bins = self.bins;
        let kind = match self.binning {
            HistogramBinning::Even => "even",
            HistogramBinning::Range => "range",
        };
        let name = format!(
            "device_histogram_{kind}_{}_{bins}_{threads}x{items}",
            T::DTYPE
        );
        let mut k = KernelBuilder::new(name)
            .block(threads)
            .items_per_thread(items);
        let x = k.input::<T>("samples");
        let counts = k.output::<u32>("counts");
        let n = k.scalar::<u32>("n");
        let levels = match self.binning {
            HistogramBinning::Even => {
                let lower = k.scalar::<T::Level>("lower");
                let upper = k.scalar::<T::Level>("upper");
                let scale = k.var(T::even_scale(&lower.expr(), &upper.expr(), bins));
                Levels::Even {
                    lower,
                    upper,
                    scale,
                }
            }
            HistogramBinning::Range => Levels::Range(k.input::<T::Level>("levels")),
        };
        let b = k.this_block();
        let rank = index::thread_rank();
        let private = self.privatized();
        let copies = match private {
            Some(len) if len <= LANE_COPIES_BINS => 32,
            _ => 1,
        };
        let private = private.map(|len| (len, k.shared_array::<u32>(len * copies)));
        // Counter `c` of this thread's copy.
        let slot = |c: Expr<u32>| match copies {
            1 => c,
            _ => c * copies + index::lane(),
        };
        if let Some((len, local)) = &private {
            k.for_range_step(rank.clone(), *len * copies, threads, |k, j| {
                k.shared_write(local, j, 0u32)
            });
            k.sync_block();
        }
        let raw = T::RAW_VALUES > 0;
        k.tiles(n, |k, tile| {
            let load = Load::vectorize()
                .valid_items(tile.valid.clone())
                .oob_default(T::cast_from_i64(0));
            let t = k.load_from(b, &x, load);
            let t = match &self.map_in {
                Some(f) => k.map(&t, |v| f(v)),
                None => t,
            };
            // A full tile counts every sample without testing its position: one branch per
            // tile, not one per sample.
            let count = |k: &mut KernelBuilder, partial: bool| {
                for i in 0..items {
                    let here = partial.then(|| (rank.clone() * items + i).lt(tile.valid.clone()));
                    let v = t.item(i);
                    let (inside, bin) = match &private {
                        Some(_) if raw => (None, v.cast::<u32>()),
                        _ => {
                            let (inside, bin) = levels.bin::<T>(k, &v, bins);
                            (Some(inside), bin)
                        }
                    };
                    let add = |k: &mut KernelBuilder| match &private {
                        Some((_, local)) => {
                            k.atomic(local, slot(bin), Atomic::add(1u32));
                        }
                        None => {
                            k.atomic(&counts, bin, Atomic::add(1u32));
                        }
                    };
                    match (here, inside) {
                        (Some(h), Some(b)) => k.if_(h & b, add),
                        (Some(c), None) | (None, Some(c)) => k.if_(c, add),
                        (None, None) => add(k),
                    }
                }
            };
            let full = tile.valid.clone().ge(threads * items);
            k.if_else(full, |k| count(k, false), |k| count(k, true));
        });
        if let Some((len, local)) = &private {
            k.sync_block();
            k.for_range_step(rank, *len, threads, |k, j| {
                // The copies of counter `j`, each thread starting at its own lane's so that
                // a warp's reads fall in distinct banks.
                let copy = |l: u32| match copies {
                    1 => local.read(j.clone()),
                    _ => local.read(j.clone() * copies + ((j.clone() + l) & (copies - 1))),
                };
                let c = (1..copies).fold(copy(0), |sum, l| sum + copy(l));
                let (inside, bin) = if raw {
                    levels.bin::<T>(k, &T::from_raw(&j), bins)
                } else {
                    (Expr::lit_bool(true), j)
                };
                k.if_(c.ne(0u32) & inside, |k| {
                    k.atomic(&counts, bin, Atomic::add(c));
                });
            });
        }
        k.build()
    }
}

/// The levels as the counting kernel takes them (even levels with their scale, computed
/// once).
enum Levels<L: Element> {
    Even {
        lower: Scalar<L>,
        upper: Scalar<L>,
        scale: Var<L>,
    },
    Range(Input<L>),
}

impl<L: Element> Levels<L> {
    /// Whether sample `x` is counted, and its bin.
    fn bin<T: HistogramSample<Level = L>>(
        &self,
        k: &mut KernelBuilder,
        x: &Expr<T>,
        bins: u32,
    ) -> (Expr<bool>, Expr<u32>) {
        match self {
            Levels::Even {
                lower,
                upper,
                scale,
            } => T::even_bin(x, (&lower.expr(), &upper.expr()), &scale.get(), bins),
            Levels::Range(levels) => {
                // The last level at or below x: the search keeps levels[lo] <= x, halving a
                // window of `len` levels (the halves are known when the kernel is built).
                let v = T::level(x);
                let inside = levels.at(0u32).le(v.clone()) & v.lt(levels.at(bins));
                let lo = k.var(0u32);
                let mut len = bins + 1;
                while len > 1 {
                    let half = len / 2;
                    let probe = lo.get() + half;
                    let below = levels.at(probe.clone()).le(v.clone());
                    k.set(&lo, below.select(probe, lo.get()));
                    len -= half;
                }
                (inside, lo.get())
            }
        }
    }
}

/// `counts[i] = 0` for `i < m`, one thread per counter.
fn zero_kernel() -> Result<Kernel, Error> {
    let mut k = KernelBuilder::new("device_histogram_zero").block(ZERO_THREADS);
    let (counts, m) = (k.output::<u32>("counts"), k.scalar::<u32>("m"));
    let i = index::block_index() * ZERO_THREADS + index::thread_rank();
    k.if_(i.lt(m), |k| k.write(&counts, i.clone(), 0u32));
    k.build()
}

/// A histogram loaded on a device, ready to run on any buffers there
/// ([`run_even`](Self::run_even) or [`run_range`](Self::run_range), as it was prepared).
///
/// ```
/// use coopgraph::algorithms::DeviceHistogram;
/// use coopgraph::runtime::Device;
///
/// // Bins [0, 1), [1, 10), [10, 100) of f64 samples.
/// let device = Device::sim();
/// let h = DeviceHistogram::<f64>::range(3).prepare(&device)?;
/// let levels = device.upload(&[0.0f64, 1.0, 10.0, 100.0])?;
/// let x = device.upload(&[0.5f64, 3.0, 99.0, 100.0, -1.0, f64::NAN, 10.0])?;
/// let mut counts = device.alloc_zeroed::<u32>(3)?;
/// h.run_range(&x, &levels, &mut counts)?;
/// assert_eq!(counts.to_vec()?, [1, 1, 2]);
/// # Ok::<(), coopgraph::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct PreparedHistogram<T: HistogramSample> {
    zero: Function,
    count: Function,
    /// Blocks an SM of the counting kernel's grid.
    per_sm: usize,
    binning: HistogramBinning,
    bins: u32,
    tuning: Tuning,
    _t: std::marker::PhantomData<fn() -> T>,
}

impl<T: HistogramSample> PreparedHistogram<T> {
    /// Samples per tile of the counting kernel.
    pub fn tile_items(&self) -> u32 {
        self.tuning.tile_items()
    }

    /// Its number of bins.
    pub fn bins(&self) -> u32 {
        self.bins
    }

    /// `counts[b]` = the samples of `samples` in even bin `b` of `bins` between `lower`
    /// (included) and `upper` (excluded); samples outside are dropped. The counts are
    /// overwritten. See [`HistogramSample`] for the binning formula.
    ///
    /// ```
    /// use coopgraph::algorithms::DeviceHistogram;
    /// use coopgraph::runtime::Device;
    ///
    /// let device = Device::sim();
    /// let h = DeviceHistogram::<u8>::even(4).prepare(&device)?;
    /// let x = device.upload(&[0u8, 63, 64, 200, 255, 128])?;
    /// let mut counts = device.alloc_zeroed::<u32>(4)?;
    /// h.run_even(&x, &mut counts, 0, 256)?;
    /// assert_eq!(counts.to_vec()?, [2, 1, 1, 2]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn run_even(
        &self,
        samples: &Buffer<T>,
        counts: &mut Buffer<u32>,
        lower: T::Level,
        upper: T::Level,
    ) -> Result<(), Error> {
        self.check(HistogramBinning::Even, samples, counts)?;
        T::check_even(lower, upper, self.bins)?;
        self.zero(counts)?;
        let mut args = ArgList::new();
        args.push(samples)
            .push(&mut *counts)
            .push(samples.len() as u32)
            .push(lower)
            .push(upper);
        self.sweep(samples.len(), args)
    }

    /// `counts[b]` = the samples of `samples` in `[levels[b], levels[b + 1])`; samples
    /// outside `[levels[0], levels[bins])` are dropped. The levels must ascend (with levels
    /// out of order the bins are unspecified, though never out of bounds); the counts are
    /// overwritten. See [`PreparedHistogram`] for an example.
    pub fn run_range(
        &self,
        samples: &Buffer<T>,
        levels: &Buffer<T::Level>,
        counts: &mut Buffer<u32>,
    ) -> Result<(), Error> {
        self.check(HistogramBinning::Range, samples, counts)?;
        let want = self.bins as usize + 1;
        if levels.len() != want {
            let given = levels.len();
            return Err(AlgorithmError::LevelCount { want, given }.into());
        }
        if !levels.is_on(self.count.device()) {
            return Err(AlgorithmError::WrongDevice { what: "buffer" }.into());
        }
        self.zero(counts)?;
        let mut args = ArgList::new();
        args.push(samples)
            .push(&mut *counts)
            .push(samples.len() as u32)
            .push(levels);
        self.sweep(samples.len(), args)
    }

    /// Refuses another binning, counts of another length, too many samples and buffers on
    /// another device.
    fn check(
        &self,
        binning: HistogramBinning,
        samples: &Buffer<T>,
        counts: &Buffer<u32>,
    ) -> Result<(), Error> {
        if binning != self.binning {
            let prepared = self.binning;
            return Err(AlgorithmError::Binning { prepared, binning }.into());
        }
        if counts.len() != self.bins as usize {
            let (bins, given) = (self.bins, counts.len());
            return Err(AlgorithmError::CountsLength { bins, given }.into());
        }
        let max = u32::MAX as usize - self.tile_items() as usize;
        if samples.len() > max {
            let len = samples.len();
            return Err(AlgorithmError::TooLong { len, max }.into());
        }
        let device = self.count.device();
        if !samples.is_on(device) || !counts.is_on(device) {
            return Err(AlgorithmError::WrongDevice { what: "buffer" }.into());
        }
        Ok(())
    }

    /// Zeroes the counts.
    fn zero(&self, counts: &mut Buffer<u32>) -> Result<(), Error> {
        let grid = self.bins.div_ceil(ZERO_THREADS);
        self.zero.launch_grid(grid, (counts, self.bins))?;
        Ok(())
    }

    /// Counts `n` samples with `args`: as many blocks as the SMs hold at once (`per_sm`
    /// each), at most one per tile.
    fn sweep(&self, n: usize, args: ArgList<'_>) -> Result<(), Error> {
        if n == 0 {
            return Ok(());
        }
        let tiles = n.div_ceil(self.tile_items() as usize);
        let sms = self.count.device().sm_count().max(1) as usize;
        self.count
            .launch_grid(tiles.min(sms * self.per_sm) as u32, args)?;
        Ok(())
    }
}

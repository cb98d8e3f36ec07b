//! Block histogram (CUB's `BlockHistogram`): the block's tile of samples counted into bins of a
//! shared array, by shared-memory atomics or by sorting the samples and measuring the runs.
//!
//! Both are recorded as the builder's own ops:
//! - *atomic*: a block barrier where the counters may have been accessed before (an op
//!   recorded earlier reads or writes their bytes, or the histogram is inside a branch or a
//!   loop, whose last round may have read them), so that those accesses finish first; the
//!   threads zero the counters (bin `j` by thread `j % T`), a block barrier, one shared atomic
//!   add per counted sample, a block barrier. A histogram that is the kernel's first access of
//!   its counters needs no leading barrier: no thread has touched them;
//! - *sort*: a block radix sort of the samples (blocked), head and tail flags of the sorted
//!   tile, the counters zeroed, a barrier, each run's head writes `-start` into its bin, a
//!   barrier, each run's tail adds its end (`start` and `end` clamped to the valid count, so
//!   the padding a partial tile sorts last counts nothing), a barrier.
//!
//! The barriers are the block barriers the ops record (as a user's would be), beside the
//! ones the planner places for the sort and the flags; each is needed (a test removes each in
//! turn and the race checker reports the race). Every op carries the caller's line.

use super::{Flags, KernelBuilder, RadixSort};
use crate::ir::Atomic;
use crate::ir::dtype::{AtomicElement, DType, Element};
use crate::ir::entities::Loc;
use crate::ir::expr::{Expr, index};
use crate::ir::handles::{Group, SharedArray, ThreadData};
use crate::ir::ops::*;

/// How a block histogram counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HistogramAlgorithm {
    /// Shared-memory atomic adds, one per sample (CUB's `BLOCK_HISTO_ATOMIC`).
    Atomic,
    /// A block radix sort of the samples, then one write per run of equal samples (CUB's
    /// `BLOCK_HISTO_SORT`): no atomics, the same cost whatever the samples' spread.
    Sort,
}

/// The controls of a block histogram ([`KernelBuilder::histogram`]): the algorithm and a
/// valid count.
///
/// ```
/// use coopgraph::ir::{Histogram, HistogramAlgorithm};
///
/// assert_eq!(Histogram::sort().algorithm(), HistogramAlgorithm::Sort);
/// assert_eq!(Histogram::atomic().algorithm(), HistogramAlgorithm::Atomic);
/// ```
#[derive(Debug, Clone)]
pub struct Histogram {
    algorithm: HistogramAlgorithm,
    valid: Option<Expr<u32>>,
}

impl Histogram {
    /// Counting by shared-memory atomics.
    pub fn atomic() -> Self {
        Histogram {
            algorithm: HistogramAlgorithm::Atomic,
            valid: None,
        }
    }

    /// Counting by sorting the samples.
    pub fn sort() -> Self {
        Histogram {
            algorithm: HistogramAlgorithm::Sort,
            valid: None,
        }
    }

    /// Only the tile's first `n` positions (blocked order: thread `t`'s item `i` is position
    /// `t * items + i`) are counted.
    pub fn valid_items(mut self, n: impl Into<Expr<u32>>) -> Self {
        self.valid = Some(n.into());
        self
    }

    /// The algorithm.
    pub fn algorithm(&self) -> HistogramAlgorithm {
        self.algorithm
    }
}

impl KernelBuilder {
    /// Counts the block's tile of samples into `counters[0..bins]` (CUB's
    /// `BlockHistogram::Histogram`): afterwards counter `j` holds how many of the tile's
    /// (valid) samples equal `j`, for every thread to read; samples at or above `bins` are not
    /// counted, and counters past `bins` are left alone. The counters are zeroed first: to
    /// accumulate over tiles, add them into another array between calls.
    ///
    /// Samples are `u8`, `u16` or `u32` with `1..=2^bits` bins; counters `u32` or `u64`, at
    /// least `bins` of them; the group is the block. The sort algorithm takes blocks of a
    /// multiple of 32 threads (its block scans and flags do); the atomic one any block. The
    /// verifier reports what does not fit
    /// ([`PrimitiveProblem`]), naming this call's line.
    ///
    /// ```
    /// use coopgraph::ir::{Histogram, index};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load};
    ///
    /// let xs: Vec<u8> = (0..64u32).map(|i| (i * i % 11) as u8).collect();
    /// let hist = |controls: Histogram| -> Result<Vec<u32>, coopgraph::Error> {
    ///     let mut k = KernelBuilder::new("hist").block(32).items_per_thread(2);
    ///     let (x, y) = (k.input::<u8>("x"), k.output::<u32>("y"));
    ///     let b = k.this_block();
    ///     let t = k.load_from(b, &x, Load::direct());
    ///     let counters = k.shared_array::<u32>(8);
    ///     k.histogram(b, &t, 8, &counters, controls);
    ///     let i = index::thread_rank();
    ///     k.if_(i.lt(8u32), |k| k.write(&y, &i, counters.read(&i)));
    ///     let dev = Device::sim();
    ///     let xb = dev.upload(&xs)?;
    ///     let mut yb = dev.alloc_zeroed::<u32>(8)?;
    ///     dev.compile(&k.build()?)?.launch_grid(1, (&xb, &mut yb))?;
    ///     Ok(yb.to_vec()?)
    /// };
    /// // Bins 0..8 of the first `n` samples (samples 8, 9 and 10 are past them).
    /// let want = |n: usize| -> Vec<u32> {
    ///     (0..8).map(|b| xs[..n].iter().filter(|&&x| x == b).count() as u32).collect()
    /// };
    /// assert_eq!(hist(Histogram::atomic())?, want(64));
    /// assert_eq!(hist(Histogram::sort())?, want(64));
    /// assert_eq!(hist(Histogram::sort().valid_items(37u32))?, want(37));
    /// assert_eq!(hist(Histogram::atomic().valid_items(5u32))?, want(5));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn histogram<S: Element, C: AtomicElement>(
        &mut self,
        group: impl Into<Group>,
        samples: &ThreadData<S>,
        bins: u32,
        counters: &SharedArray<C>,
        controls: Histogram,
    ) {
        let loc = Loc::caller();
        let group = group.into();
        let sample_bits = S::DTYPE.bytes() * 8;
        let problem = if group.kind() != GroupKind::Block {
            let what = "block histogram";
            Some(PrimitiveProblem::Group {
                what,
                kind: group.kind(),
            })
        } else if !matches!(S::DTYPE, DType::U8 | DType::U16 | DType::U32) {
            Some(PrimitiveProblem::SampleDtype { dtype: S::DTYPE })
        } else if !matches!(C::DTYPE, DType::U32 | DType::U64) {
            Some(PrimitiveProblem::CounterDtype { dtype: C::DTYPE })
        } else if bins == 0 || (sample_bits < 32 && bins > 1 << sample_bits) {
            Some(PrimitiveProblem::Bins { bins, sample_bits })
        } else if !counters.is_dynamic() && counters.len() < bins {
            let len = counters.len();
            Some(PrimitiveProblem::CounterLength { bins, len })
        } else {
            None
        };
        if let Some(p) = problem {
            self.primitive_problem(p, loc);
            return;
        }
        let first = self.recorded();
        let threads = self.ir.block_threads().max(1);
        let items = samples.items;
        let valid = controls.valid.clone();
        // Where the bins cover the samples' range (256 bins of `u8` samples) every sample
        // names a bin: no test of it then.
        let all_bins = sample_bits < 32 && u64::from(bins) >= 1u64 << sample_bits;
        let in_bins = |v: Expr<u32>| (!all_bins).then(|| v.lt(bins));
        // Whether the sample at `p` is counted (`None`: always).
        let counted = |p: Expr<u32>, v: Expr<u32>| match (&valid, in_bins(v)) {
            (Some(n), Some(b)) => Some(p.lt(n.clone()) & b),
            (Some(n), None) => Some(p.lt(n.clone())),
            (None, b) => b,
        };
        let flagged = |flags: &ThreadData<u32>, i: u32, v: Expr<u32>| match in_bins(v) {
            Some(b) => flags.item(i).ne(0u32) & b,
            None => flags.item(i).ne(0u32),
        };
        let position = |i: u32| index::thread_rank() * items + i;
        let zero = || Expr::lit(C::cast_from_i64(0));
        match controls.algorithm {
            HistogramAlgorithm::Atomic => {
                // Whatever the kernel did with the counters before (read last time round a
                // loop, say) finishes before they are zeroed: a barrier where an op before
                // touched them, or where the histogram is inside a region (a loop's body
                // runs again after the ops it holds). Else no thread has touched them yet.
                // The sort's passes hold barriers of their own before its zeroing.
                if self.inside_region() || self.ir.shared_bytes_used(counters.id()) {
                    self.sync_block();
                }
                self.zero_bins(counters, bins, threads);
                self.sync_block();
                for i in 0..items {
                    let v = samples.item(i).cast::<u32>();
                    let one = Atomic::add(C::cast_from_i64(1));
                    match counted(position(i), v.clone()) {
                        Some(take) => self.if_(take, |k| {
                            k.atomic(counters, v, one);
                        }),
                        None => {
                            self.atomic(counters, v, one);
                        }
                    }
                }
                self.sync_block();
            }
            HistogramAlgorithm::Sort => {
                let mut sort = RadixSort::ascending();
                if let Some(n) = &valid {
                    sort = sort.valid_items(n.clone());
                }
                let sorted = self.radix_sort(group, samples, sort);
                let (heads, tails) = self.flag_heads_and_tails(
                    group,
                    &sorted,
                    Flags::inequality(),
                    Flags::inequality(),
                );
                let n = valid.unwrap_or_else(|| Expr::lit(threads * items));
                self.zero_bins(counters, bins, threads);
                self.sync_block();
                // A run's count is its end minus its start, both clamped to the valid count:
                // the head writes `-start`, the tail adds `end`.
                for i in 0..items {
                    let v = sorted.item(i).cast::<u32>();
                    let take = flagged(&heads, i, v.clone());
                    let start = position(i).min(n.clone()).cast::<C>();
                    self.if_(take, |k| k.shared_write(counters, v, zero() - start));
                }
                self.sync_block();
                for i in 0..items {
                    let v = sorted.item(i).cast::<u32>();
                    let take = flagged(&tails, i, v.clone());
                    let end = (position(i) + 1u32).min(n.clone()).cast::<C>();
                    let sum = counters.read(v.clone()) + end;
                    self.if_(take, |k| k.shared_write(counters, v, sum));
                }
                self.sync_block();
            }
        }
        self.attribute(first, loc);
    }

    /// Zeroes `counters[0..bins]`, bin `j` by thread `j % threads`.
    pub(super) fn zero_bins<C: Element>(
        &mut self,
        counters: &SharedArray<C>,
        bins: u32,
        threads: u32,
    ) {
        let zero = Expr::lit(C::cast_from_i64(0));
        if bins <= threads {
            let t = index::thread_rank();
            self.if_(t.clone().lt(bins), |k| k.shared_write(counters, t, zero));
        } else {
            self.for_range_step(index::thread_rank(), bins, threads, |k, j| {
                k.shared_write(counters, j, zero)
            });
        }
    }
}

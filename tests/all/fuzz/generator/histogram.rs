//! Block histograms (atomic in blocks of any size, sort where the block's scans run) of
//! `u8`, `u16` and `u32` payloads into shared counters of `u32` or `u64`, over random bin
//! counts and partial tiles, composed with what came before and after: the counters are read
//! back into a payload later ops use. A later histogram sometimes counts into an earlier one's
//! counters again (the builder must then order the earlier read-back before the zeroing).

use super::Gen;
use super::ops::handle;
use crate::fuzz::types::Fz;
use coopgraph::KernelBuilder;
use coopgraph::ir::{Arrangement, DType, Expr, Histogram, SharedArray, ThreadData, index};

impl Gen {
    pub fn op_histogram(&mut self, k: &mut KernelBuilder) -> bool {
        if !self.block_uniform() || self.cx().callback {
            return false;
        }
        let wide = self.rng.pct(30);
        // Now and then a second histogram right after the first one's read-back, counting
        // into the same counters (the kept ones let later statements do so too).
        let rounds = if self.rng.pct(40) { 2 } else { 1 };
        for round in 0..rounds {
            let eligible = |d: &super::DInfo| {
                d.rank0.is_none() && matches!(d.dt, DType::U8 | DType::U16 | DType::U32)
            };
            let samples = self.full(eligible);
            if samples.is_empty() {
                return round > 0;
            }
            let d = self.datas[self.rng.pick(&samples)].clone();
            // The atomic form more often where earlier counters may be counted into again:
            // its leading barrier is the one that orders their read-back before the zeroing.
            let kept = self.counters.len(wide);
            let sort = self.block_reduce_ok() && self.rng.pct(if kept.is_some() { 40 } else { 75 });
            let mut controls = if sort {
                Histogram::sort()
            } else {
                Histogram::atomic()
            };
            // A valid count counts blocked positions.
            let blocked = d
                .arr
                .is_some_and(|a| a.same_positions(Arrangement::Blocked, d.k));
            if blocked && self.rng.pct(30) {
                let tile = self.t * d.k;
                controls = controls.valid_items(self.rng.below(u64::from(tile) + 1) as u32);
            }
            let mut cap = if d.dt == DType::U8 { 256 } else { MOST_BINS };
            let again = round > 0 && kept.is_some();
            if let (true, Some(len)) = (again, kept) {
                cap = cap.min(len);
            }
            let bins = 1 + self.rng.below(u64::from(cap)) as u32;
            self.datas
                .iter_mut()
                .for_each(|x| x.used |= x.h.id() == d.h.id());
            let h = Hist {
                bins,
                controls,
                wide,
                again,
            };
            let counts = match d.dt {
                DType::U8 => self.histogram_into::<u8>(k, &d, h),
                DType::U16 => self.histogram_into::<u16>(k, &d, h),
                _ => self.histogram_into::<u32>(k, &d, h),
            };
            let items = counts.items();
            self.add(<u32 as Fz>::data(counts), DType::U32, items, None);
        }
        true
    }

    /// The histogram of `d`'s samples, each thread's result the count of bin
    /// `bins - 1 - rank % bins` (as `u32`): most bins read by another thread than the one that
    /// zeroes them.
    fn histogram_into<S: Fz>(
        &mut self,
        k: &mut KernelBuilder,
        d: &super::DInfo,
        h: Hist,
    ) -> ThreadData<u32> {
        let b = k.this_block();
        let src = handle::<S>(d);
        let Hist { bins, .. } = h;
        let bin = Expr::lit(bins - 1) - index::thread_rank() % bins;
        if h.wide {
            let counters = self.counters_of(k, bins, h.again, |c| &mut c.wide);
            k.histogram(b, &src, bins, &counters, h.controls);
            k.fill(counters.read(bin).cast::<u32>())
        } else {
            let counters = self.counters_of(k, bins, h.again, |c| &mut c.narrow);
            k.histogram(b, &src, bins, &counters, h.controls);
            k.fill(counters.read(bin))
        }
    }

    /// Counters for `bins` bins: an earlier histogram's where they are long enough, always
    /// when `again` says so and else most of the time; otherwise new ones (of `bins` elements,
    /// or of the most any histogram here counts), kept for later ones.
    fn counters_of<C: coopgraph::ir::Element>(
        &mut self,
        k: &mut KernelBuilder,
        bins: u32,
        again: bool,
        kept: impl Fn(&mut Counters) -> &mut Option<(SharedArray<C>, u32)>,
    ) -> SharedArray<C> {
        if let Some((a, len)) = *kept(&mut self.counters)
            && len >= bins
            && (again || self.rng.pct(70))
        {
            return a;
        }
        let len = if self.rng.pct(50) { bins } else { MOST_BINS };
        let a = k.shared_array::<C>(len);
        *kept(&mut self.counters) = Some((a, len));
        a
    }
}

/// The most bins a generated histogram counts into.
const MOST_BINS: u32 = 600;

/// One histogram the generator records: its bins and controls, whether its counters are
/// `u64`, and whether it counts into the kept counters.
struct Hist {
    bins: u32,
    controls: Histogram,
    wide: bool,
    again: bool,
}

/// Counters kept for later histograms ([`Gen::counters`]).
#[derive(Default)]
pub(crate) struct Counters {
    narrow: Option<(SharedArray<u32>, u32)>,
    wide: Option<(SharedArray<u64>, u32)>,
}

impl Counters {
    /// The length of the kept `u64` (`wide`) or `u32` counters, if any are kept.
    fn len(&self, wide: bool) -> Option<u32> {
        if wide {
            self.wide.as_ref().map(|c| c.1)
        } else {
            self.narrow.as_ref().map(|c| c.1)
        }
    }
}

/// The generator composes histograms with its other ops: some of its kernels hold each
/// algorithm's (shared atomics, or a run's head writes), recorded at this file's lines, and
/// some count twice into the same counters (each histogram zeroes its bins once).
#[test]
fn generated_kernels_hold_histograms() {
    use coopgraph::ir::expr::ExprKind;
    use coopgraph::ir::ops::{OpData, OpKind};
    use std::collections::HashMap;
    let (mut atomic, mut sort, mut again) = (0, 0, 0);
    for i in 0..1500u64 {
        let case = super::generate(&super::Spec::of(i.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        let here = |op: &OpData| op.loc.file.ends_with("generator/histogram.rs");
        let ops = &case.ir.ops;
        let mut zeroings = HashMap::new();
        for op in ops.iter().filter(|op| here(op)) {
            if let OpKind::SharedWrite { array, value, .. } = op.kind
                && case.ir.arrays[array.index()]
                    .loc
                    .file
                    .ends_with("generator/histogram.rs")
                && matches!(
                    case.ir.exprs.get(value).map(|n| &n.kind),
                    Some(ExprKind::Const(0))
                )
            {
                *zeroings.entry(array).or_insert(0) += 1;
            }
        }
        again += usize::from(zeroings.values().any(|&n| n >= 2));
        atomic += usize::from(
            ops.iter()
                .any(|op| here(op) && matches!(op.kind, OpKind::Atomic(_))),
        );
        sort += usize::from(
            ops.iter()
                .any(|op| here(op) && matches!(op.kind, OpKind::Scatter { .. })),
        );
    }
    assert!(
        atomic >= 3 && sort >= 3 && again >= 2,
        "{atomic} atomic and {sort} sort histograms in 1500 generated kernels, {again} counting \
         into the same counters twice"
    );
}

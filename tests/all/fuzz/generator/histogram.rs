//! Block histograms (atomic in blocks of any size, sort where the block's scans run) of
//! `u8`, `u16` and `u32` payloads into shared counters of `u32` or `u64`, over random bin
//! counts and partial tiles, composed with what came before and after: the counters are read
//! back into a payload later ops use.

use super::Gen;
use super::ops::handle;
use crate::fuzz::types::Fz;
use coopgraph::KernelBuilder;
use coopgraph::ir::{Arrangement, DType, Histogram, ThreadData, index};

impl Gen {
    pub fn op_histogram(&mut self, k: &mut KernelBuilder) -> bool {
        if !self.block_uniform() || self.cx().callback {
            return false;
        }
        let samples =
            self.full(|d| d.rank0.is_none() && matches!(d.dt, DType::U8 | DType::U16 | DType::U32));
        if samples.is_empty() {
            return false;
        }
        let d = self.datas[self.rng.pick(&samples)].clone();
        let sort = self.block_reduce_ok() && self.rng.pct(75);
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
        let cap = if d.dt == DType::U8 { 256 } else { 600 };
        let bins = 1 + self.rng.below(cap) as u32;
        self.datas
            .iter_mut()
            .for_each(|x| x.used |= x.h.id() == d.h.id());
        let wide = self.rng.pct(30);
        let counts = match d.dt {
            DType::U8 => self.histogram_into::<u8>(k, &d, bins, controls, wide),
            DType::U16 => self.histogram_into::<u16>(k, &d, bins, controls, wide),
            _ => self.histogram_into::<u32>(k, &d, bins, controls, wide),
        };
        let items = counts.items();
        self.add(<u32 as Fz>::data(counts), DType::U32, items, None);
        true
    }

    /// The histogram of `d`'s samples, each thread's result the count of bin
    /// `rank % bins` (as `u32`).
    fn histogram_into<S: Fz>(
        &mut self,
        k: &mut KernelBuilder,
        d: &super::DInfo,
        bins: u32,
        controls: Histogram,
        wide: bool,
    ) -> ThreadData<u32> {
        let b = k.this_block();
        let src = handle::<S>(d);
        let bin = index::thread_rank() % bins;
        if wide {
            let counters = k.shared_array::<u64>(bins);
            k.histogram(b, &src, bins, &counters, controls);
            k.fill(counters.read(bin).cast::<u32>())
        } else {
            let counters = k.shared_array::<u32>(bins);
            k.histogram(b, &src, bins, &counters, controls);
            k.fill(counters.read(bin))
        }
    }
}

/// The generator composes histograms with its other ops: some of its kernels hold each
/// algorithm's (shared atomics, or a run's head writes), recorded at this file's lines.
#[test]
fn generated_kernels_hold_histograms() {
    use coopgraph::ir::ops::{OpData, OpKind};
    let (mut atomic, mut sort) = (0, 0);
    for i in 0..1500u64 {
        let case = super::generate(&super::Spec::of(i.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        let here = |op: &OpData| op.loc.file.ends_with("generator/histogram.rs");
        let ops = &case.ir.ops;
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
        atomic >= 3 && sort >= 3,
        "{atomic} atomic and {sort} sort histograms in 1500 generated kernels"
    );
}

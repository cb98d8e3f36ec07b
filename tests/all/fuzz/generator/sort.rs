//! Block radix sorts and top-k: keys or pairs (values of the keys' dtype), over random bit
//! ranges, digit widths, orders, output arrangements, `k` and partial tiles, composed with
//! what came before and after.

use super::Gen;
use super::ops::handle;
use crate::fuzz::types::{Fz, with_dtype};
use coopgraph::KernelBuilder;
use coopgraph::ir::{Arrangement, DType, RadixRank, RadixSort, SortOutput, ThreadData, TopK};

impl Gen {
    pub fn op_radix_sort(&mut self, k: &mut KernelBuilder) -> bool {
        if !self.block_uniform() || self.cx().callback || !self.block_reduce_ok() {
            return false;
        }
        // Keys in blocked position order (the sort's valid count counts positions so).
        let blocked = |d: &super::DInfo| {
            d.arr
                .is_some_and(|a| a.same_positions(Arrangement::Blocked, d.k))
        };
        let keys = self.full(blocked);
        if keys.is_empty() {
            return false;
        }
        let d = self.datas[self.rng.pick(&keys)].clone();
        let items = d.k;
        let t = self.t;
        let tile = t * items;
        let values: Vec<usize> = self.full(|v| blocked(v) && v.dt == d.dt && v.k == items);
        let pair = (!values.is_empty() && self.rng.pct(50)).then(|| self.rng.pick(&values));
        let bits = d.dt.bytes() * 8;
        let begin = self.rng.below(u64::from(bits)) as u32 * u32::from(self.rng.pct(40));
        let end = begin + 1 + self.rng.below(u64::from(bits - begin)) as u32;
        let mut controls = if self.rng.pct(50) {
            RadixSort::ascending()
        } else {
            RadixSort::descending()
        };
        // Counters of at most 4096 words (2^(bits - 1) per thread), beside other shared memory.
        let widest = (1..=8u32)
            .filter(|b| (1u32 << (b - 1)) * t <= 4096)
            .max()
            .unwrap_or(1);
        controls = controls
            .bits(begin, end)
            .radix_bits((1 + self.rng.below(8) as u32).min(widest));
        let arr = if self.rng.pct(40) && self.exchange_ok(t) {
            controls = controls.output(SortOutput::Striped);
            Arrangement::Striped { threads: t }
        } else {
            Arrangement::Blocked
        };
        if self.rng.pct(30) {
            controls = controls.valid_items(self.rng.below(u64::from(tile) + 1) as u32);
        }
        let vd = pair.map(|i| self.datas[i].clone());
        let used = [Some(d.h.id()), vd.as_ref().map(|v| v.h.id())];
        for x in &mut self.datas {
            x.used |= used.contains(&Some(x.h.id()));
        }
        with_dtype!(d.dt, T => {
            let b = k.this_block();
            let src = handle::<T>(&d);
            match &vd {
                Some(v) => {
                    let (sk, sv) = k.radix_sort_pairs(b, &src, &handle::<T>(v), controls);
                    self.add(T::data(sk), d.dt, items, Some(arr));
                    self.add(T::data(sv), d.dt, items, Some(arr));
                }
                None => {
                    let sk = k.radix_sort(b, &src, controls);
                    self.add(T::data(sk), d.dt, items, Some(arr));
                }
            }
        });
        true
    }
}

impl Gen {
    /// A block radix rank (basic or memoized) of a `u32` payload's low bits; its ranks join
    /// the payloads, blocked. (Match ranking synchronizes warps around shared counters, which
    /// the interpreter's race model, block barriers only, cannot follow: its own tests cover
    /// it.)
    pub fn op_radix_rank(&mut self, k: &mut KernelBuilder) -> bool {
        if !self.block_uniform() || self.cx().callback || !self.block_reduce_ok() {
            return false;
        }
        let digits = self.full(|d| d.dt == DType::U32);
        if digits.is_empty() {
            return false;
        }
        let d = self.datas[self.rng.pick(&digits)].clone();
        let t = self.t;
        let tile = t * d.k;
        // Counters of at most 4096 words beside other shared memory.
        let widest = (1..=8u32)
            .filter(|b| ((1u32 << (b - 1)) | 1) * t <= 4096)
            .max()
            .unwrap_or(1);
        let bits = (1 + self.rng.below(8) as u32).min(widest);
        let mut controls = if self.rng.pct(50) {
            RadixRank::basic(bits)
        } else {
            RadixRank::memoize(bits)
        };
        if self.rng.pct(30) {
            controls = controls.valid_items(self.rng.below(u64::from(tile) + 1) as u32);
        }
        for x in &mut self.datas {
            x.used |= x.h.id() == d.h.id();
        }
        let b = k.this_block();
        let src: ThreadData<u32> = handle::<u32>(&d);
        let ranks = k.radix_rank(b, &src, controls);
        self.add(
            u32::data(ranks),
            DType::U32,
            d.k,
            Some(Arrangement::Blocked),
        );
        true
    }
}

impl Gen {
    /// A block top-k of a blocked payload (with values of its dtype, or not), the smallest or
    /// the largest, of a random `k`, bit range, digit width and valid count; its result joins
    /// the payloads, `ceil(k / threads)` items per thread, blocked.
    pub fn op_top_k(&mut self, k: &mut KernelBuilder) -> bool {
        if !self.block_uniform() || self.cx().callback || !self.block_reduce_ok() {
            return false;
        }
        let blocked = |d: &super::DInfo| {
            d.arr
                .is_some_and(|a| a.same_positions(Arrangement::Blocked, d.k))
        };
        let keys = self.full(blocked);
        if keys.is_empty() {
            return false;
        }
        let d = self.datas[self.rng.pick(&keys)].clone();
        let (t, items) = (self.t, d.k);
        let tile = t * items;
        let values: Vec<usize> = self.full(|v| blocked(v) && v.dt == d.dt && v.k == items);
        let pair = (!values.is_empty() && self.rng.pct(50)).then(|| self.rng.pick(&values));
        let bits = d.dt.bytes() * 8;
        let begin = self.rng.below(u64::from(bits)) as u32 * u32::from(self.rng.pct(40));
        let end = begin + 1 + self.rng.below(u64::from(bits - begin)) as u32;
        // Small k most often.
        let most = if self.rng.pct(60) { tile.min(9) } else { tile };
        let top = 1 + self.rng.below(u64::from(most)) as u32;
        let mut controls = if self.rng.pct(50) {
            TopK::smallest(top)
        } else {
            TopK::largest(top)
        };
        // Digits of 1 to 8 bits (8 the default).
        controls = controls
            .bits(begin, end)
            .radix_bits(1 + self.rng.below(8) as u32);
        if self.rng.pct(30) {
            controls = controls.valid_items(self.rng.below(u64::from(tile) + 1) as u32);
        }
        let vd = pair.map(|i| self.datas[i].clone());
        let used = [Some(d.h.id()), vd.as_ref().map(|v| v.h.id())];
        for x in &mut self.datas {
            x.used |= used.contains(&Some(x.h.id()));
        }
        let out = top.div_ceil(t);
        let arr = Some(Arrangement::Blocked);
        with_dtype!(d.dt, T => {
            let b = k.this_block();
            let src = handle::<T>(&d);
            match &vd {
                Some(v) => {
                    let (sk, sv) = k.top_k_pairs(b, &src, &handle::<T>(v), controls);
                    self.add(T::data(sk), d.dt, out, arr);
                    self.add(T::data(sv), d.dt, out, arr);
                }
                None => {
                    let sk = k.top_k(b, &src, controls);
                    self.add(T::data(sk), d.dt, out, arr);
                }
            }
        });
        true
    }
}

/// The generator composes radix sorts with its other ops: some of its kernels hold one (a loop
/// whose body synchronizes the block, scans and scatters: a sort's passes).
#[test]
fn generated_kernels_hold_radix_sorts() {
    use coopgraph::ir::ops::OpKind;
    let mut sorts = 0;
    for i in 0..400u64 {
        let case = super::generate(&super::Spec::of(i.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        let ir = &case.ir;
        let holds = |r: &[coopgraph::ir::OpId], f: fn(&OpKind) -> bool| {
            r.iter().any(|&o| f(&ir.op(o).kind))
        };
        sorts += ir
            .ops
            .iter()
            .filter(|op| match &op.kind {
                OpKind::For { body, .. } => {
                    let r = ir.region(*body);
                    holds(r, |k| matches!(k, OpKind::SyncBlock))
                        && holds(r, |k| matches!(k, OpKind::Scan(_)))
                        && holds(r, |k| matches!(k, OpKind::Scatter { .. }))
                }
                _ => false,
            })
            .count();
    }
    assert!(
        sorts >= 3,
        "only {sorts} radix sorts in 400 generated kernels"
    );
}

/// The generator composes top-k with its other ops: some of its kernels hold one (a loop whose
/// body synchronizes the block, scans and picks a digit under a branch, with no scatter).
#[test]
fn generated_kernels_hold_top_k() {
    use coopgraph::ir::ops::OpKind;
    let mut selections = 0;
    for i in 0..1500u64 {
        let case = super::generate(&super::Spec::of(i.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        let ir = &case.ir;
        let holds = |r: &[coopgraph::ir::OpId], f: fn(&OpKind) -> bool| {
            r.iter().any(|&o| f(&ir.op(o).kind))
        };
        selections += ir
            .ops
            .iter()
            .filter(|op| match &op.kind {
                OpKind::For { body, .. } => {
                    let r = ir.region(*body);
                    holds(r, |k| matches!(k, OpKind::SyncBlock))
                        && holds(r, |k| matches!(k, OpKind::Scan(_)))
                        && holds(r, |k| matches!(k, OpKind::If { .. }))
                        && !holds(r, |k| matches!(k, OpKind::Scatter { .. }))
                }
                _ => false,
            })
            .count();
    }
    assert!(
        selections >= 3,
        "only {selections} top-k selections in 1500 generated kernels"
    );
}

//! Radix sorts over the block, logical warps, warps and groups of whole warps, block radix
//! ranks (basic, memoized and by warp matches) and block top-k: keys or pairs (values of the
//! keys' dtype), over random bit ranges, digit widths, orders, output arrangements, `k` and
//! partial tiles, composed with what came before and after.

use super::Gen;
use super::ops::handle;
use crate::fuzz::types::{Fz, with_dtype};
use coopgraph::KernelBuilder;
use coopgraph::ir::ops::LOGICAL_WARP_WIDTHS;
use coopgraph::ir::{
    Arrangement, DType, Group, GroupKind, RadixRank, RadixSort, RankAlgorithm, SortOutput,
    ThreadData, TopK,
};

impl Gen {
    /// A radix sort over the block, or (in blocks of whole warps, half the time) over
    /// logical warps, warps or groups of whole warps, each group sorting its own tile.
    pub fn op_radix_sort(&mut self, k: &mut KernelBuilder) -> bool {
        if !self.block_uniform() || self.cx().callback {
            return false;
        }
        if self.warps_ok() && self.rng.pct(50) {
            let block_warps = self.t / 32;
            let mut groups: Vec<Group> = (LOGICAL_WARP_WIDTHS.iter())
                .map(|&w| k.this_warp().group_by(w))
                .collect();
            groups.push(k.this_warp().into());
            // Groups of whole warps that tile the block, whose barriers fit beside those the
            // kernel's groups already take.
            groups.extend(
                (self.warp_group_sizes(k).into_iter())
                    .filter(|&n| block_warps.is_multiple_of(n))
                    .map(|n| k.this_block().group_by_warps(n)),
            );
            let g = self.rng.pick(&groups);
            return self.radix_sort_over(k, g);
        }
        if !self.block_reduce_ok() {
            return false;
        }
        let b = k.this_block();
        self.radix_sort_over(k, b)
    }

    /// A radix sort of a blocked payload (with values of its dtype, or not) over the groups
    /// of `g`, each of its own tile: of a random bit range, digit width, order, output
    /// arrangement and valid count.
    fn radix_sort_over(&mut self, k: &mut KernelBuilder, g: Group) -> bool {
        // Keys in blocked position order (the sort's valid count counts positions so; blocked
        // over the block is blocked within each group's tile).
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
        let (t, gt) = (self.t, self.group_threads(&g));
        let tile = gt * items;
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
        let radix = (1 + self.rng.below(8) as u32).min(widest);
        // The simulator stops a block past 2^26 thread-instructions, and a pass costs a few
        // hundred a thread: at most 2^14 thread-passes (2^12 in a loop, which repeats them),
        // the bit range cut short where it would take more.
        let budget = if self.cx().in_loop { 1 << 12 } else { 1 << 14 };
        let end = end.min(begin + radix * (budget / t).max(1));
        controls = controls.bits(begin, end).radix_bits(radix);
        // A striped result is striped over each group: the block's where an exchange over it
        // can run, a power of two's (as the groups' exchanges) otherwise.
        let striped_ok = if g.kind() == GroupKind::Block {
            self.exchange_ok(t)
        } else {
            gt.is_power_of_two() && (gt > 32 || self.exchange_ok(gt))
        };
        let arr = if self.rng.pct(40) && striped_ok {
            controls = controls.output(SortOutput::Striped);
            Arrangement::Striped { threads: gt }
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
            let src = handle::<T>(&d);
            match &vd {
                Some(v) => {
                    let (sk, sv) = k.radix_sort_pairs(g, &src, &handle::<T>(v), controls);
                    self.add(T::data(sk), d.dt, items, Some(arr));
                    self.add(T::data(sv), d.dt, items, Some(arr));
                }
                None => {
                    let sk = k.radix_sort(g, &src, controls);
                    self.add(T::data(sk), d.dt, items, Some(arr));
                }
            }
        });
        true
    }
}

impl Gen {
    /// A block radix rank (basic, memoized, or by warp matches in blocks of whole warps) of
    /// an integer payload's low bits (as `u32`), or (`radix_rank_by`) of the bits its shift
    /// by 0..3 brings down; its ranks join the payloads, blocked (the match rank's, striped
    /// over each warp), and, where counted (`radix_rank_with_counts`, `radix_rank_by`), each
    /// digit's first rank and count, `ceil(2^bits / threads)` a thread.
    pub fn op_radix_rank(&mut self, k: &mut KernelBuilder) -> bool {
        if !self.block_uniform() || self.cx().callback || !self.block_reduce_ok() {
            return false;
        }
        let digits = self.full(|d| d.dt.is_int());
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
        // Ranks alone, with counts, or by a map of the keys (with counts).
        let (form, shift) = (self.rng.below(3), self.rng.below(4) as u32);
        let mut bits = (1 + self.rng.below(8) as u32).min(widest);
        // Counts of at most a payload's items a thread.
        while form != 0 && (1u32 << bits).div_ceil(t) > coopgraph::ir::ops::MAX_ITEMS_PER_THREAD {
            bits -= 1;
        }
        // Match ranks (blocks of whole warps only) half the time they can run.
        let mut controls = if self.warps_ok() && self.rng.pct(50) {
            RadixRank::match_any(bits)
        } else if self.rng.pct(50) {
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
        // The match rank ranks each warp's items striped over it.
        let arr = match controls.algorithm() {
            RankAlgorithm::Match => Arrangement::Striped { threads: 32 },
            _ => Arrangement::Blocked,
        };
        // The ranks, and each digit's first rank and count where counted.
        let (ranks, counted) = with_dtype!(d.dt, T => {
            let keys = handle::<T>(&d);
            let src: ThreadData<u32> = if d.dt == DType::U32 {
                handle::<u32>(&d)
            } else {
                k.map(&keys, |v| v.cast::<u32>())
            };
            if form == 0 {
                (k.radix_rank(b, &src, controls.clone()), None)
            } else {
                let ranked = if form == 1 {
                    k.radix_rank_with_counts(b, &src, controls.clone())
                } else {
                    k.radix_rank_by(b, &keys, move |v| v.cast::<u32>() >> shift, controls.clone())
                };
                (ranked.ranks, Some((ranked.prefix, ranked.counts)))
            }
        });
        self.add(u32::data(ranks), DType::U32, d.k, Some(arr));
        if let Some((prefix, counts)) = counted {
            let per = (1u32 << bits).div_ceil(t);
            for data in [prefix, counts] {
                self.add(u32::data(data), DType::U32, per, Some(Arrangement::Blocked));
            }
        }
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
    for i in 0..1000u64 {
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
        "only {sorts} radix sorts in 1000 generated kernels"
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

/// The generator composes radix sorts over logical warps, warps and groups of whole warps, and
/// match ranks, with its other ops: some of its kernels hold a loop whose body writes shared
/// memory and synchronizes such a group (a group sort's passes, scattering through shared
/// arrays), some a region that ballots, shuffles and synchronizes lanes before a block barrier
/// (a match rank's items, matched by ballots).
#[test]
fn generated_kernels_hold_group_radix_sorts_and_match_ranks() {
    use coopgraph::ir::ops::{LaneOp, OpKind};
    let (mut sorts, mut matches) = (0, 0);
    // Match ranks are rare (a few in 5000 kernels): enough kernels that a handful are made.
    for i in 0..12_000u64 {
        let case = super::generate(&super::Spec::of(i.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        let ir = &case.ir;
        let lanes = |r: &[coopgraph::ir::OpId], op: LaneOp| {
            (r.iter()).any(|&o| matches!(&ir.op(o).kind, OpKind::Lanes(l) if l.op == op))
        };
        for op in &ir.ops {
            let body = match &op.kind {
                OpKind::For { body, .. } => *body,
                _ => continue,
            };
            let r = ir.region(body);
            sorts += usize::from(
                lanes(r, LaneOp::Sync)
                    && (r.iter()).any(|&o| matches!(ir.op(o).kind, OpKind::SharedWrite { .. })),
            );
        }
        // A match rank matches its lanes' digits with a ballot a bit.
        let ballots = |r: &[coopgraph::ir::OpId]| {
            (r.iter())
                .filter(|&&o| matches!(&ir.op(o).kind, OpKind::Lanes(l) if l.op == LaneOp::Ballot))
                .count()
        };
        for r in &ir.regions {
            matches += usize::from(
                ballots(r) >= 2
                    && lanes(r, LaneOp::Shfl)
                    && lanes(r, LaneOp::Sync)
                    && (r.iter()).any(|&o| matches!(ir.op(o).kind, OpKind::SyncBlock)),
            );
        }
    }
    assert!(
        sorts >= 3,
        "only {sorts} group radix sorts in 12000 generated kernels"
    );
    assert!(
        matches >= 4,
        "only {matches} match ranks in 12000 generated kernels"
    );
}

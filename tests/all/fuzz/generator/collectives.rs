//! Collectives: reductions (every operator, custom ones, every block algorithm, broadcast,
//! valid counts), scans (inclusive and exclusive, seeds, aggregates, prefix callbacks, every
//! algorithm, valid counts), exchanges (explicit, time-sliced, through shuffles), scatters (by
//! a permutation, promised or not, or compacting flagged items) and every neighbour op.

use super::expr::{Leaves, constant};
use super::ops::handle;
use super::{Defect, Gen, span, striped};
use crate::fuzz::types::{Fz, IntBin, IntUn, with_dtype};
use coopgraph::KernelBuilder;
use coopgraph::ir::Element;
use coopgraph::ir::{
    Arrangement, BinaryFn, Difference, ExchangeVia, Expr, FlagFn, Flags, Group, GroupKind, Reduce,
    ReduceAlgorithm, Scan, ScanAlgorithm, Scatter, Shuffle, ThreadData, index,
};

/// Associative operators for `Reduce::custom`, as data (the closure must own its body).
#[derive(Debug, Clone, Copy)]
enum Custom {
    Add,
    Mul,
    Xor,
    Min,
    Max,
    First,
    Last,
    /// High bits from the earlier value, low bits from the later.
    HiLo(u64),
    /// The earlier where strictly smaller, else the later.
    MinSelect,
    MaxSelect,
}

impl Custom {
    fn commutative(self) -> bool {
        matches!(
            self,
            Custom::Add | Custom::Mul | Custom::Xor | Custom::Min | Custom::Max
        )
    }

    fn build<T: Fz>(self, a: Expr<T>, b: Expr<T>) -> Expr<T> {
        match self {
            Custom::Add => a + b,
            Custom::Mul => a * b,
            Custom::Xor => T::int_bin(IntBin::Xor, a, b),
            Custom::Min => a.min(b),
            Custom::Max => a.max(b),
            Custom::First => a,
            Custom::Last => b,
            Custom::HiLo(m) => {
                let m = Expr::lit(T::from_bits(m));
                let hi = T::int_bin(IntBin::And, a, m.clone());
                let lo = T::int_bin(IntBin::And, b, T::int_un(IntUn::Not, m));
                T::int_bin(IntBin::Or, hi, lo)
            }
            Custom::MinSelect => a.lt(&b).select(a, b),
            Custom::MaxSelect => a.gt(&b).select(a, b),
        }
    }
}

/// An operator choice for a reduction or scan.
#[derive(Debug, Clone, Copy)]
enum Op {
    Sum,
    Product,
    Min,
    Max,
    Bits(IntBin),
    /// `Reduce::first()`: the group's first value, handed on without folding.
    First,
    Custom(Custom, bool),
}

impl Op {
    fn commutative(self) -> bool {
        match self {
            Op::Custom(_, c) => c,
            Op::First => false,
            _ => true,
        }
    }

    fn reduce<T: Fz>(self) -> Reduce<T> {
        match self {
            Op::Sum => Reduce::sum(),
            Op::Product => Reduce::product(),
            Op::Min => Reduce::min(),
            Op::Max => Reduce::max(),
            Op::Bits(b) => T::bit_reduce(b),
            Op::First => Reduce::first(),
            Op::Custom(c, comm) => Reduce::custom(comm, move |a, b| c.build::<T>(a, b)),
        }
    }

    /// `a op b` as an expression (for running totals in prefix callbacks).
    fn apply<T: Fz>(self, a: Expr<T>, b: Expr<T>) -> Expr<T> {
        match self {
            Op::Sum => a + b,
            Op::Product => a * b,
            Op::Min => a.min(b),
            Op::Max => a.max(b),
            Op::Bits(bin) => T::int_bin(bin, a, b),
            Op::First => a,
            Op::Custom(c, _) => c.build(a, b),
        }
    }
}

/// A reduction operator for primitives outside this file.
pub(super) struct ReduceChoice(Op);

impl ReduceChoice {
    pub(super) fn reduce<T: Fz>(&self) -> Reduce<T> {
        self.0.reduce()
    }
}

impl Gen {
    /// An operator for a reduction outside this file.
    pub(super) fn pick_reduce_op(&mut self, float: bool) -> ReduceChoice {
        ReduceChoice(self.pick_op(float))
    }

    /// A group-uniform value of `T`, for primitives outside this file.
    pub(super) fn uniform_value_of<T: Fz>(&mut self, k: &mut KernelBuilder) -> Expr<T> {
        self.uniform_value(k)
    }

    fn pick_op(&mut self, float: bool) -> Op {
        match self
            .rng
            .weighted(&[30, 8, 12, 12, if float { 0 } else { 12 }, 10, 26])
        {
            0 => Op::Sum,
            1 => Op::Product,
            2 => Op::Min,
            3 => Op::Max,
            4 => Op::Bits(self.rng.pick(&[IntBin::And, IntBin::Or, IntBin::Xor])),
            5 => Op::First,
            _ => {
                let c = if float {
                    self.rng.pick(&[
                        Custom::Min,
                        Custom::Max,
                        Custom::First,
                        Custom::Last,
                        Custom::MinSelect,
                        Custom::MaxSelect,
                    ])
                } else {
                    let m = self.rng.next();
                    self.rng.pick(&[
                        Custom::Add,
                        Custom::Mul,
                        Custom::Xor,
                        Custom::Min,
                        Custom::Max,
                        Custom::First,
                        Custom::Last,
                        Custom::HiLo(m),
                        Custom::MinSelect,
                        Custom::MaxSelect,
                    ])
                };
                Op::Custom(c, c.commutative() && self.rng.pct(70))
            }
        }
    }

    /// A group-uniform u32 from `lo` to `hi`.
    fn uniform_count(&mut self, k: &mut KernelBuilder, lo: u32, hi: u32) -> Expr<u32> {
        let v = lo + self.rng.below(u64::from(hi.saturating_sub(lo)) + 1) as u32;
        if self.rng.pct(50) {
            Expr::lit(v)
        } else {
            self.scalar_param::<u32>(k, u64::from(v)).expr()
        }
    }

    /// A group-uniform value of `T`.
    fn uniform_value<T: Fz>(&mut self, k: &mut KernelBuilder) -> Expr<T> {
        let v = constant::<T>(self);
        if self.rng.pct(60) {
            Expr::lit(v)
        } else {
            self.scalar_param::<T>(k, coopgraph::ir::Element::to_bits(v))
                .expr()
        }
    }

    pub fn op_reduce(&mut self, k: &mut KernelBuilder) -> bool {
        let groups = self.groups(k, self.block_reduce_ok());
        let srcs = self.full(|_| true);
        if groups.is_empty() || srcs.is_empty() {
            return false;
        }
        let g = self.rng.pick(&groups);
        let d = self.datas[self.rng.pick(&srcs)].clone();
        with_dtype!(d.dt, T => self.reduce_t::<T>(k, g, handle::<T>(&d), d.arr))
    }

    pub(super) fn reduce_t<T: Fz>(
        &mut self,
        k: &mut KernelBuilder,
        g: Group,
        src: ThreadData<T>,
        arr: Option<Arrangement>,
    ) -> bool {
        let op = self.pick_op(T::DTYPE.is_float());
        let gt = self.group_threads(&g);
        let items = src.items();
        let valid = self.rng.pct(25);
        if (!op.commutative() || (valid && items > 1))
            && !self.conv_ok(arr, Arrangement::Blocked, items)
        {
            return false;
        }
        if !op.commutative() || (valid && items > 1) {
            self.note_conv(arr, Arrangement::Blocked, items);
        }
        let mut c = op.reduce::<T>();
        if g.kind() == GroupKind::Block {
            let mut algs = vec![ReduceAlgorithm::WarpReductions, ReduceAlgorithm::Raking];
            if op.commutative() {
                algs.push(ReduceAlgorithm::RakingCommutativeOnly);
            }
            c = c.algorithm(self.rng.pick(&algs));
        }
        if valid {
            let extent = if items > 1 { gt * items } else { gt };
            c = c.valid_items(self.uniform_count(k, 1, extent + 1));
        }
        let broadcast = self.rng.pct(60);
        if broadcast {
            c = c.broadcast();
        }
        let r = k.reduce(g, &src, c);
        self.mark_used(src.id());
        self.result(k, g, r, broadcast);
        true
    }

    fn mark_used(&mut self, id: coopgraph::ir::DataId) {
        for d in &mut self.datas {
            if d.h.id() == id {
                d.used = true;
            }
        }
    }

    /// Registers a one-item result: defined everywhere when broadcast, else copied out from
    /// rank 0 of each group into a payload defined everywhere.
    fn result<T: Fz>(
        &mut self,
        k: &mut KernelBuilder,
        g: Group,
        r: ThreadData<T>,
        broadcast: bool,
    ) {
        if broadcast {
            self.add(T::data(r), T::DTYPE, 1, None);
            return;
        }
        // Stored whole from a group of several threads, the result is read where only rank 0
        // holds it.
        if self.group_threads(&g) > 1
            && g.kind().whole_warps().is_none()
            && self.rng.pct(20)
            && self.feature(Defect::NonBroadcastStored)
        {
            let y = self.output::<T>(k);
            let st = coopgraph::Store::default().offset(self.block_id() * self.t);
            k.store_to(g, &y, &r, st);
            self.expect_reject = Some("a reduction's result without broadcast, stored whole");
        }
        let out = k.thread_data_n::<T>(1);
        k.set_item(&out, 0, Expr::lit(constant::<T>(self)));
        k.if_(g.rank().eq(0u32), |k| k.assign(&out, &r));
        self.add(T::data(out), T::DTYPE, 1, None);
    }

    pub fn op_scan(&mut self, k: &mut KernelBuilder) -> bool {
        let groups = self.groups(k, self.block_reduce_ok());
        let srcs = self.full(|d| self.conv_ok(d.arr, Arrangement::Blocked, d.k));
        if groups.is_empty() || srcs.is_empty() {
            return false;
        }
        let g = self.rng.pick(&groups);
        let d = self.datas[self.rng.pick(&srcs)].clone();
        self.note_conv(d.arr, Arrangement::Blocked, d.k);
        with_dtype!(d.dt, T => self.scan_t::<T>(k, g, handle::<T>(&d)))
    }

    pub(super) fn scan_t<T: Fz>(
        &mut self,
        k: &mut KernelBuilder,
        g: Group,
        src: ThreadData<T>,
    ) -> bool {
        let op = self.pick_op(T::DTYPE.is_float());
        let gt = self.group_threads(&g);
        let block = g.kind() == GroupKind::Block;
        let inclusive = self.rng.pct(50);
        let variant = self
            .rng
            .weighted(&[40, 35, if self.cx().callback { 0 } else { 25 }]);
        let mut c = if inclusive {
            Scan::inclusive(op.reduce::<T>())
        } else {
            Scan::exclusive(op.reduce::<T>())
        };
        if variant != 2 && (!inclusive || self.rng.pct(30)) {
            c = c.initial_value(self.uniform_value::<T>(k));
        }
        let mut raking = false;
        if block {
            let alg = self.rng.pick(&[
                ScanAlgorithm::WarpScans,
                ScanAlgorithm::Raking,
                ScanAlgorithm::RakingMemoize,
            ]);
            raking = alg != ScanAlgorithm::WarpScans && self.t > 32;
            c = c.algorithm(alg);
        }
        let tile = gt * src.items();
        if gt <= 32 && self.rng.pct(30) {
            c = c.valid_items(self.uniform_count(k, 1, tile + 2));
        }
        let (dst, agg) = match variant {
            0 => (k.scan(g, &src, c), None),
            1 => {
                let (d, a) = k.scan_with_aggregate(g, &src, c);
                (d, Some(a))
            }
            _ => {
                let running = k.thread_data_n::<T>(1);
                let seed = self.uniform_value::<T>(k);
                k.set_item(&running, 0, seed);
                let from_rank0 = self.rng.pct(30);
                let junk = constant::<T>(self);
                let d = k.scan_with_prefix(g, &src, c, |k, total| {
                    let start = running.item(0);
                    k.set_item(&running, 0, op.apply(running.item(0), total));
                    if from_rank0 {
                        g.rank().eq(0u32).select(start, junk)
                    } else {
                        start
                    }
                });
                self.add(T::data(running), T::DTYPE, 1, None);
                (d, None)
            }
        };
        self.mark_used(src.id());
        self.add(
            T::data(dst),
            T::DTYPE,
            dst.items(),
            Some(Arrangement::Blocked),
        );
        if let Some(a) = agg {
            self.add(T::data(a), T::DTYPE, 1, None);
        }
        // Mostly, the next collective may write the scan's shared memory right away.
        if raking && !(self.rng.pct(80) && self.feature(Defect::RakingScanThenCollective)) {
            k.sync_block();
        }
        true
    }

    /// Arrangements an exchange of a group of `gt` threads may target.
    fn targets(&self, gt: u32, block: bool) -> Vec<Arrangement> {
        let mut out = vec![Arrangement::Blocked];
        let t = self.t;
        for s in 1..=t.min(1024) {
            if !t.is_multiple_of(s) || (!block && !gt.is_multiple_of(s)) {
                continue;
            }
            let ok = s.is_power_of_two() && s <= 32 || s == t && block;
            if ok || self.exchange_ok(s) {
                out.push(Arrangement::Striped { threads: s });
            }
        }
        out
    }

    pub fn op_exchange(&mut self, k: &mut KernelBuilder) -> bool {
        let groups = self.groups(k, true);
        if groups.is_empty() {
            return false;
        }
        let g = self.rng.pick(&groups);
        self.exchange_over(k, g, None)
    }

    /// An exchange over `g` of `src` (else of a full payload it picks).
    pub(super) fn exchange_over(
        &mut self,
        k: &mut KernelBuilder,
        g: Group,
        src: Option<&super::DInfo>,
    ) -> bool {
        let d = match src {
            Some(d) => d.clone(),
            None => {
                let srcs = self.full(|_| true);
                if srcs.is_empty() {
                    return false;
                }
                self.datas[self.rng.pick(&srcs)].clone()
            }
        };
        let gt = self.group_threads(&g);
        let block = g.kind() == GroupKind::Block;
        // Time-sliced exchanges take turns at block barriers: only where the block runs (and
        // never over groups of whole warps).
        let sliced_ok = (self.block_uniform() || self.feature(Defect::TimeSlicedDivergent))
            && g.kind().whole_warps().is_none();
        let how = self.rng.weighted(&[50, if sliced_ok { 20 } else { 0 }, 30]);
        let whole_warps = g.kind().whole_warps().is_some();
        let mut to: Vec<Arrangement> = if whole_warps {
            // Each group of whole warps exchanges its own tile, at its own barrier: striped
            // over powers of two that tile the group.
            let pow2 = |a: Arrangement| striped(a).is_power_of_two();
            if d.arr.is_some_and(|a| !pow2(a)) {
                return false;
            }
            let spans = (0..=gt.ilog2()).map(|b| Arrangement::Striped { threads: 1 << b });
            std::iter::once(Arrangement::Blocked).chain(spans).collect()
        } else {
            self.targets(gt, block)
                .into_iter()
                .filter(|&a| self.conv_ok(d.arr, a, d.k))
                .collect()
        };
        if !block {
            // Inside the group: its tile holds what the exchange moves.
            let within = |a: Option<Arrangement>| a.is_none_or(|a| gt.is_multiple_of(striped(a)));
            if !within(d.arr) {
                return false;
            }
            to.retain(|&a| within(Some(a)));
        }
        if how == 2 {
            // Through shuffles: each group of the exchange inside one warp.
            let t = self.t;
            to.retain(|&a| {
                let scope = span(d.arr, a);
                scope <= 32 && scope <= gt && (32 % scope == 0 || t <= 32)
            });
        }
        if to.is_empty() {
            return false;
        }
        let target = self.rng.pick(&to);
        self.note_conv(d.arr, target, d.k);
        let mut via = match how {
            0 => ExchangeVia::Shared,
            1 => ExchangeVia::TimeSliced,
            _ => ExchangeVia::Shuffles,
        };
        // Between blocked and warp-striped order the warps take turns at block barriers,
        // which code not uniform across the block cannot reach: the planner must reject it.
        let warp_striped = Arrangement::Striped { threads: 32 };
        let sliced = d.arr.is_some_and(|a| {
            !a.same_positions(target, d.k)
                && self.t.is_multiple_of(32)
                && [a, target].contains(&warp_striped)
                && [a, target].contains(&Arrangement::Blocked)
        });
        if via == ExchangeVia::TimeSliced && sliced && !self.block_uniform() {
            if self.expect_reject.is_none() {
                self.expect_reject = Some(super::SLICED_DIVERGENT);
            } else {
                via = ExchangeVia::Shared;
            }
        }
        let h = with_dtype!(d.dt, T => {
            let src = handle::<T>(&d);
            let r = k.exchange(g, &src, target, via);
            T::data(r)
        });
        self.mark_used(d.h.id());
        self.add(h, d.dt, d.k, Some(target));
        true
    }

    pub fn op_scatter(&mut self, k: &mut KernelBuilder) -> bool {
        if !self.block_uniform() || self.cx().callback {
            return false;
        }
        let srcs = self.full(|_| true);
        if srcs.is_empty() {
            return false;
        }
        let d = self.datas[self.rng.pick(&srcs)].clone();
        let t = self.t;
        let items = d.k;
        let tile = t * items;
        let to: Vec<Arrangement> = self
            .targets(t, true)
            .into_iter()
            .filter(|a| {
                a.same_positions(Arrangement::Blocked, items) || self.exchange_ok(striped(*a))
            })
            .collect();
        let mut target = self.rng.pick(&to);
        let b = k.this_block();
        // Compaction pairs flags with items by position: the items must be blocked (or free).
        let compact = self.block_reduce_ok()
            && d.arr
                .is_none_or(|a| a.same_positions(Arrangement::Blocked, items))
            && self.rng.pct(35);
        with_dtype!(d.dt, T => {
            let src = handle::<T>(&d);
            if compact {
                // Every `m`-th position kept, its rank an exclusive sum of the flags: the kept
                // items land in order at the front, as many as the generator knows statically
                // (a valid count must be uniform, which a sum read from a payload is not).
                if !matches!(target, Arrangement::Striped { threads } if threads == t) {
                    target = Arrangement::Blocked;
                }
                let m = self.rng.below(4) as u32 + 1;
                let p = index::thread_rank() * items + index::item();
                let flags = k.fill::<u32>((p % m).eq(0u32).to::<u32>());
                let flags = if items == self.kk {
                    flags
                } else {
                    let f = k.thread_data_n::<u32>(items);
                    for i in 0..items {
                        let p = index::thread_rank() * items + i;
                        k.set_item(&f, i, (p % m).eq(0u32).to::<u32>());
                    }
                    f
                };
                let ranks = k.scan(b, &flags, Scan::exclusive_sum());
                let holes = self.rng.pct(40).then(|| constant::<T>(self));
                let mut how = Scatter::to(target).flags(&flags);
                if let Some(v) = holes {
                    how = how.holes(v);
                }
                let r = k.scatter(b, &src, &ranks, how);
                let y = self.output::<T>(k);
                let alg = match target {
                    Arrangement::Blocked => coopgraph::ir::Algorithm::Direct,
                    _ => coopgraph::ir::Algorithm::Striped,
                };
                let kept = tile.div_ceil(m);
                let mut st = coopgraph::Store::default().algorithm(alg);
                if holes.is_some() && self.rng.pct(50) {
                    // The whole tile: the holes read their value.
                } else if holes.is_none()
                    && m > 1
                    && self.rng.pct(20)
                    && self.feature(Defect::ScatterHoles)
                {
                    // Every position stored, the holes past the kept items too.
                    self.expect_reject = Some("a compaction's holes stored");
                } else {
                    st = st.valid_items(kept);
                }
                if items != self.kk {
                    st = st.offset(self.block_id() * tile);
                }
                k.store_to(b, &y, &r, st);
            } else {
                // A permutation, or every `spread`-th position (ranks past the tile skipped,
                // the other positions holes): with a hole value, defined everywhere.
                let (mul, add) = self.permutation(tile);
                let how = self.rng.below(5);
                let spread = 2 + self.rng.below(2) as u32;
                let q = index::thread_rank() * items;
                let ranks = k.thread_data_n::<u32>(items);
                for i in 0..items {
                    let p = q.clone() + i;
                    let r = match how {
                        0 => Expr::lit(tile - 1) - p,
                        1 => p * spread,
                        _ => (p * mul + add) % tile,
                    };
                    k.set_item(&ranks, i, r);
                }
                let holes = how == 1 || self.rng.pct(70);
                // Every rank but `how == 1`'s is a permutation: promised so, the result is
                // defined everywhere without holes.
                let permuted = !holes && self.rng.pct(50);
                let mut controls = Scatter::to(target);
                if holes {
                    controls = controls.holes(constant::<T>(self));
                }
                if permuted {
                    controls = controls.permutation();
                }
                let r = k.scatter(b, &src, &ranks, controls);
                let i = self.add(T::data(r), T::DTYPE, items, Some(target));
                if !holes && !permuted {
                    // Defined everywhere, but the verifier cannot know: only a read a valid
                    // count bounds would do, and the generator's reads are not.
                    self.datas[i].alive = false;
                    if self.conv_ok(Some(target), Arrangement::Blocked, items)
                        && self.rng.pct(30)
                        && self.feature(Defect::ScatterHoles)
                    {
                        self.note_conv(Some(target), Arrangement::Blocked, items);
                        let y = self.output::<T>(k);
                        let st = coopgraph::Store::default().offset(self.block_id() * tile);
                        k.store_to(b, &y, &r, st);
                        self.expect_reject = Some("a scatter without a hole value stored whole");
                    }
                }
            }
        });
        true
    }

    /// `(a, b)` with `q -> (a*q + b) % n` a permutation of `0..n`.
    fn permutation(&mut self, n: u32) -> (u32, u32) {
        fn gcd(a: u32, b: u32) -> u32 {
            if b == 0 { a } else { gcd(b, a % b) }
        }
        let b = self.rng.below(u64::from(n)) as u32;
        for _ in 0..8 {
            let a = 1 + 2 * self.rng.below(16) as u32;
            if gcd(a, n) == 1 && u64::from(a) * u64::from(n) < u64::from(u32::MAX) {
                return (a, b);
            }
        }
        (1, b)
    }

    pub fn op_neighbor(&mut self, k: &mut KernelBuilder) -> bool {
        let t = self.t;
        let block_ok = t > 32 || t.is_power_of_two();
        let groups = self.groups(k, block_ok);
        if groups.is_empty() {
            return false;
        }
        let g = self.rng.pick(&groups);
        let kind = self.rng.below(13);
        let one = kind >= 11;
        let srcs = self.full(|d| {
            if one {
                d.k == 1
            } else {
                self.conv_ok(d.arr, Arrangement::Blocked, d.k)
            }
        });
        if srcs.is_empty() {
            return false;
        }
        let d = self.datas[self.rng.pick(&srcs)].clone();
        if !one {
            self.note_conv(d.arr, Arrangement::Blocked, d.k);
        }
        with_dtype!(d.dt, T => self.neighbor_t::<T>(k, g, handle::<T>(&d), kind));
        true
    }

    /// A tile predecessor or successor: none, uniform, or varying by thread (not reading
    /// `src`, which the op may read converted).
    fn edge<T: Fz>(
        &mut self,
        k: &mut KernelBuilder,
        src: coopgraph::ir::DataId,
    ) -> Option<Expr<T>> {
        match self.rng.below(10) {
            0..=3 => None,
            4..=8 => Some(self.uniform_value::<T>(k)),
            _ => {
                let mut lv = Leaves::varying();
                if !self.feature(Defect::ItemOfConvertedOperand) {
                    lv.exclude.push(src);
                }
                Some(self.expr::<T>(&lv, 1))
            }
        }
    }

    fn neighbor_t<T: Fz>(
        &mut self,
        k: &mut KernelBuilder,
        g: Group,
        src: ThreadData<T>,
        kind: u64,
    ) {
        let diff: Option<BinaryFn<T>> = match self.rng.below(4) {
            0 => None,
            1 => Some(|a, b| a + b),
            2 => Some(|a, b| a * T::small(2) - b),
            _ => Some(|a, b| a.max(b)),
        };
        let flag: Option<FlagFn<T>> = match self.rng.below(4) {
            0 | 1 => None,
            2 => Some(|a, b| a.lt(b)),
            _ => Some(|a, b| (a - b).ge(T::small(1))),
        };
        let gt = self.group_threads(&g);
        let tile = gt * src.items();
        let mut outs: Vec<(ThreadData<T>, Option<Arrangement>)> = Vec::new();
        let mut flags: Vec<ThreadData<u32>> = Vec::new();
        let blocked = Some(Arrangement::Blocked);
        match kind {
            0 => {
                let e = self.edge::<T>(k, src.id());
                let c = difference(diff, e, None);
                outs.push((k.adjacent_difference_left(g, &src, c), blocked));
            }
            1 => {
                let e = self.edge::<T>(k, src.id());
                let c = difference(diff, e, None);
                outs.push((k.adjacent_difference_right(g, &src, c), blocked));
            }
            2 => {
                let e = self.edge::<T>(k, src.id());
                let v = self.uniform_count(k, 0, tile + 1);
                let c = difference(diff, e, Some(v));
                outs.push((k.adjacent_difference_left(g, &src, c), blocked));
            }
            3 => {
                let v = self.uniform_count(k, 0, tile + 1);
                let c = difference(diff, None, Some(v));
                outs.push((k.adjacent_difference_right(g, &src, c), blocked));
            }
            4 => {
                let e = self.edge::<T>(k, src.id());
                flags.push(k.flag_heads(g, &src, flag_controls(flag, e)));
            }
            5 => {
                let e = self.edge::<T>(k, src.id());
                flags.push(k.flag_tails(g, &src, flag_controls(flag, e)));
            }
            6 => {
                let (p, s) = (self.edge::<T>(k, src.id()), self.edge::<T>(k, src.id()));
                let (heads, tails) = (flag_controls(flag, p), flag_controls(flag, s));
                let (h, t) = k.flag_heads_and_tails(g, &src, heads, tails);
                flags.push(h);
                flags.push(t);
            }
            7 => {
                let e = self.edge::<T>(k, src.id());
                outs.push((k.shuffle_up(g, &src, shuffle(e)), blocked));
            }
            8 => {
                let e = self.edge::<T>(k, src.id());
                outs.push((k.shuffle_down(g, &src, shuffle(e)), blocked));
            }
            9 => {
                let e = self.edge::<T>(k, src.id());
                let (r, s) = k.shuffle_up_with_suffix(g, &src, shuffle(e));
                outs.push((r, blocked));
                outs.push((s, None));
            }
            10 => {
                let e = self.edge::<T>(k, src.id());
                let (r, s) = k.shuffle_down_with_prefix(g, &src, shuffle(e));
                outs.push((r, blocked));
                outs.push((s, None));
            }
            11 => {
                let dist = self.rng.below(u64::from(gt) * 2 + 3) as i32 - gt as i32 - 1;
                outs.push((k.shuffle_offset(g, &src, dist), None));
            }
            _ => {
                let dist = self.rng.below(u64::from(gt) * 2 + 3) as i32 - gt as i32 - 1;
                outs.push((k.shuffle_rotate(g, &src, dist), None));
            }
        }
        self.mark_used(src.id());
        for (o, a) in outs {
            self.add(T::data(o), T::DTYPE, o.items(), a);
        }
        for f in flags {
            self.add(u32::data(f), coopgraph::ir::DType::U32, f.items(), blocked);
        }
    }
}

/// A difference's controls: subtraction or `op`, with an edge item and a valid count if given.
fn difference<T: Element>(
    op: Option<BinaryFn<T>>,
    edge: Option<Expr<T>>,
    valid: Option<Expr<u32>>,
) -> Difference<T> {
    let mut c = op.map_or_else(Difference::subtract, Difference::custom);
    if let Some(e) = edge {
        c = c.edge(e);
    }
    if let Some(v) = valid {
        c = c.valid_items(v);
    }
    c
}

/// Flag controls: inequality or `op`, with an edge item if given.
fn flag_controls<T: Element>(op: Option<FlagFn<T>>, edge: Option<Expr<T>>) -> Flags<T> {
    let c = op.map_or_else(Flags::inequality, Flags::custom);
    match edge {
        Some(e) => c.edge(e),
        None => c,
    }
}

/// Shuffle controls, with an edge item if given.
fn shuffle<T: Element>(edge: Option<Expr<T>>) -> Shuffle<T> {
    match edge {
        Some(e) => Shuffle::new().edge(e),
        None => Shuffle::new(),
    }
}

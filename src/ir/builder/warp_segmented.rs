//! Segmented and batched warp reductions and scans (CUB's `WarpReduce::HeadSegmentedReduce`,
//! `TailSegmentedReduce`, `WarpScan` over head flags, and cuda.coop's batched reduction),
//! recorded as the builder's own lane ops: a ballot of the flags finds each lane's segment,
//! shuffles combine within it.
//!
//! Every op these record carries the caller's line, so errors name the user's call; the
//! verifier reports controls that do not fit ([`PrimitiveProblem`]).

use super::KernelBuilder;
use super::collectives::ReduceKind;
use crate::ir::dtype::Element;
use crate::ir::entities::Loc;
use crate::ir::expr::{BinaryOp, Expr, ExprKind, Node};
use crate::ir::handles::{Group, ThreadData};
use crate::ir::ops::*;
use crate::ir::{Reduce, Scan};
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// Where a segment's flag stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Segments {
    /// A flag marks a segment's first lane (CUB's head flags); lane 0 always starts one.
    Heads,
    /// A flag marks a segment's last lane (CUB's tail flags); the last lane always ends one.
    Tails,
}

/// Where each lane finds the results of a batched reduction
/// ([`KernelBuilder::reduce_batched`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BatchOutput {
    /// With `N` values per lane over `W` lanes: lane `l` holds the totals of values
    /// `l * N / W ..` (`N / W` of them) where `N >= W`, else the total of value `l * N / W`.
    Blocked,
    /// Lane `l` holds the totals of values `l, l + W, ...` where `N >= W`, else the total of
    /// value `l % N`.
    Striped,
}

/// A reduction operator as expressions: a fixed one, or the user's body over `Arg(0)` (the
/// earlier value) and `Arg(1)` (the later), applied by substitution.
pub(super) enum Combiner<T: Element> {
    Fixed(BinaryOp),
    Custom(Expr<T>),
}

impl<T: Element> Combiner<T> {
    pub(super) fn new(op: ReduceKind<T>) -> Self {
        let fixed = |op| Combiner::Fixed(op);
        match op {
            ReduceKind::Fixed(ReduceOp::Sum) => fixed(BinaryOp::Add),
            ReduceKind::Fixed(ReduceOp::Product) => fixed(BinaryOp::Mul),
            ReduceKind::Fixed(ReduceOp::Min) => fixed(BinaryOp::Min),
            ReduceKind::Fixed(ReduceOp::Max) => fixed(BinaryOp::Max),
            ReduceKind::Fixed(ReduceOp::BitAnd) => fixed(BinaryOp::And),
            ReduceKind::Fixed(ReduceOp::BitOr) => fixed(BinaryOp::Or),
            ReduceKind::Fixed(ReduceOp::BitXor) => fixed(BinaryOp::Xor),
            ReduceKind::Fixed(ReduceOp::First) => Combiner::Custom(Expr::arg(0)),
            // Controls hold a user's operator as its closure (`ReduceKind::Custom`); an
            // interned body appears only once a reduction is recorded, so it never comes here.
            ReduceKind::Fixed(ReduceOp::Custom { .. }) => fixed(BinaryOp::Add),
            ReduceKind::Custom(f, _) => Combiner::Custom(f(Expr::arg(0), Expr::arg(1))),
        }
    }

    /// `a op b`, `a` the earlier value.
    pub(super) fn apply(&self, a: Expr<T>, b: Expr<T>) -> Expr<T> {
        match self {
            Combiner::Fixed(op) => Expr::new(ExprKind::Binary(*op, a.node, b.node)),
            Combiner::Custom(body) => {
                let mut seen = FxHashMap::default();
                Expr::wrap(substitute(&body.node, [&a.node, &b.node], &mut seen))
            }
        }
    }
}

/// `n` with `Arg(i)` replaced by `args[i]`; shared subtrees are rebuilt once.
fn substitute(
    n: &Arc<Node>,
    args: [&Arc<Node>; 2],
    seen: &mut FxHashMap<*const Node, Arc<Node>>,
) -> Arc<Node> {
    if let ExprKind::Arg(i) = n.kind {
        return args[usize::from(i).min(1)].clone();
    }
    if let Some(done) = seen.get(&Arc::as_ptr(n)) {
        return done.clone();
    }
    let kind = n.kind.map_children(|c| substitute(c, args, seen));
    let out = Arc::new(Node {
        kind,
        ty: n.ty,
        owner: n.owner,
    });
    seen.insert(Arc::as_ptr(n), out.clone());
    out
}

/// The width of a logical warp group, or the problem of another group.
fn warp_width(group: Group, what: &'static str) -> Result<u32, PrimitiveProblem> {
    match group.kind() {
        GroupKind::LogicalWarp { width } => Ok(width.clamp(1, 32)),
        kind => Err(PrimitiveProblem::Group { what, kind }),
    }
}

/// The low `k` bits of `x` reversed (`k` in `1..=32`).
fn reverse_low(x: Expr<u32>, k: u32) -> Expr<u32> {
    x.reverse_bits() >> (32 - k)
}

impl KernelBuilder {
    /// Records `problem` at `loc` for the verifier.
    pub(super) fn primitive_problem(&mut self, problem: PrimitiveProblem, loc: Loc) {
        self.ir
            .issues
            .push(BuilderIssue::Primitive { problem, loc });
    }

    /// Checks a segmented primitive's group and one-item inputs; the group's width.
    fn segmented_inputs<T: Element, F: Element>(
        &mut self,
        group: Group,
        src: &ThreadData<T>,
        flags: &ThreadData<F>,
        what: &'static str,
        loc: Loc,
    ) -> Option<u32> {
        let checked = warp_width(group, what).and_then(|w| {
            for (input, items) in [("values", src.items), ("flags", flags.items)] {
                if items != 1 {
                    return Err(PrimitiveProblem::Items {
                        what,
                        input,
                        items,
                        want: 1,
                    });
                }
            }
            Ok(w)
        });
        checked.map_err(|p| self.primitive_problem(p, loc)).ok()
    }

    /// A segmented reduction over each logical warp of `group` (CUB's
    /// `WarpReduce::HeadSegmentedReduce` and `TailSegmentedReduce`): one value and one flag
    /// per lane (a nonzero flag marks a segment's first lane for [`Segments::Heads`], its last
    /// for [`Segments::Tails`]). Lane `l` gets the reduction of its segment's values from
    /// lane `l` to the segment's last lane, so each segment's first lane holds the segment's
    /// total (as CUB returns it) and its last lane its own value. Lane 0 always starts a
    /// segment and the logical warp's last lane (in the block's last, partial logical warp,
    /// its last thread) always ends one. Every [`Reduce`] operator, custom ones included (in
    /// lane order: commutativity is not needed), over every dtype; the logical warps of any
    /// width. Controls' valid counts are reported by the verifier
    /// ([`PrimitiveProblem::Control`]), as are groups other than logical warps and payloads
    /// of more than one item per thread.
    ///
    /// It takes `log2(width)` shuffles and one ballot.
    ///
    /// ```
    /// use coopgraph::ir::{Reduce, Segments};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("segment_sums").block(8).items_per_thread(1);
    /// let (x, f, y) = (k.input::<u32>("x"), k.input::<u32>("f"), k.output::<u32>("y"));
    /// let (b, w) = (k.this_block(), k.this_warp());
    /// let t = k.load_from(b, &x, Load::direct());
    /// let heads = k.load_from(b, &f, Load::direct());
    /// let s = k.segmented_reduce(w, &t, &heads, Segments::Heads, Reduce::sum());
    /// k.store_to(b, &y, &s, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[1u32, 2, 3, 4, 5, 6, 7, 8])?;
    /// let fb = dev.upload(&[0u32, 0, 1, 0, 0, 1, 1, 0])?;
    /// let mut yb = dev.alloc_zeroed::<u32>(8)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &fb, &mut yb))?;
    /// // Segments [1, 2], [3, 4, 5], [6], [7, 8]: each lane sums to its segment's end.
    /// assert_eq!(yb.to_vec()?, [3, 2, 12, 9, 5, 6, 15, 8]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn segmented_reduce<T: Element, F: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        flags: &ThreadData<F>,
        segments: Segments,
        controls: Reduce<T>,
    ) -> ThreadData<T> {
        let loc = Loc::caller();
        let group = group.into();
        let what = "segmented warp reduction";
        let (op, valid) = controls.into_parts();
        let Some(width) = self.segmented_inputs(group, src, flags, what, loc) else {
            return self.map(src, |v| v);
        };
        if valid.is_some() {
            let control = "a valid count";
            self.primitive_problem(PrimitiveProblem::Control { what, control }, loc);
            return self.map(src, |v| v);
        }
        let first = self.recorded();
        let op = Combiner::new(op);
        let rank = group.rank();
        let last = group.num_threads() - 1u32;
        let bits = self.ballot(group, flags.item(0).ne(F::cast_from_i64(0)));
        // The flags after the lane (heads), or at or after it (tails), from bit 0; the first
        // of them (at 32 when none) bounds the lane's segment.
        let after = match segments {
            Segments::Heads => (bits >> rank.clone()) >> 1u32,
            Segments::Tails => bits >> rank.clone(),
        };
        let end = (rank.clone() + after.reverse_bits().clz()).min(last);
        let end = self.var(end);
        let acc = self.var(src.item(0));
        let mut d = 1;
        while d < width {
            let down = self.shfl_down(group, acc.get(), d);
            let inside = (rank.clone() + d).le(end.get());
            let combined = op.apply(acc.get(), down);
            self.set(&acc, inside.select(combined, acc.get()));
            d *= 2;
        }
        let out = self.thread_data_n::<T>(1);
        self.set_item(&out, 0, acc.get());
        self.attribute(first, loc);
        out
    }

    /// A scan over each logical warp of `group` that restarts at every lane with a nonzero
    /// head flag (CUB's segmented `WarpScan` over head flags): lane `l` gets the scan of its
    /// segment's values up to lane `l` (inclusive), or before it (exclusive: the segment's
    /// first lane gets the initial value). An initial value, where given, starts every
    /// segment (`init op x[start] op ...`); exclusive scans need one
    /// ([`PrimitiveProblem::NoInitialValue`]). Lane 0 always starts a segment. Every
    /// [`Scan`] operator (custom ones in lane order) over every dtype, logical warps of any
    /// width, the block's last partial logical warp included; one value and one flag per
    /// lane. Valid counts and other groups are reported by the verifier.
    ///
    /// ```
    /// use coopgraph::ir::{Reduce, Scan};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("segment_scans").block(8).items_per_thread(1);
    /// let (x, f) = (k.input::<i32>("x"), k.input::<u32>("f"));
    /// let (y, z) = (k.output::<i32>("y"), k.output::<i32>("z"));
    /// let (b, tile) = (k.this_block(), k.this_warp().group_by(8));
    /// let t = k.load_from(b, &x, Load::direct());
    /// let heads = k.load_from(b, &f, Load::direct());
    /// let s = k.segmented_scan(tile, &t, &heads, Scan::inclusive_sum());
    /// k.store_to(b, &y, &s, Store::direct());
    /// let max = Scan::exclusive(Reduce::max()).initial_value(-1);
    /// let m = k.segmented_scan(tile, &t, &heads, max);
    /// k.store_to(b, &z, &m, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[1i32, 2, 3, 4, 5, 6, 7, 8])?;
    /// let fb = dev.upload(&[0u32, 0, 1, 0, 0, 1, 1, 0])?;
    /// let (mut yb, mut zb) = (dev.alloc_zeroed::<i32>(8)?, dev.alloc_zeroed::<i32>(8)?);
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &fb, &mut yb, &mut zb))?;
    /// assert_eq!(yb.to_vec()?, [1, 3, 3, 7, 12, 6, 7, 15]);
    /// assert_eq!(zb.to_vec()?, [-1, 1, -1, 3, 4, -1, -1, 7]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn segmented_scan<T: Element, F: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        head_flags: &ThreadData<F>,
        controls: Scan<T>,
    ) -> ThreadData<T> {
        let loc = Loc::caller();
        let group = group.into();
        let what = "segmented warp scan";
        let parts = controls.into_parts();
        let Some(width) = self.segmented_inputs(group, src, head_flags, what, loc) else {
            return self.map(src, |v| v);
        };
        let problem = if parts.valid.is_some() {
            let control = "a valid count";
            Some(PrimitiveProblem::Control { what, control })
        } else if !parts.inclusive && parts.initial.is_none() {
            Some(PrimitiveProblem::NoInitialValue)
        } else {
            None
        };
        if let Some(p) = problem {
            self.primitive_problem(p, loc);
            return self.map(src, |v| v);
        }
        let first = self.recorded();
        let op = Combiner::new(parts.op);
        let rank = group.rank();
        let bits = self.ballot(group, head_flags.item(0).ne(F::cast_from_i64(0)));
        // The last head at or before the lane (lane 0 when none): the heads up to the lane,
        // moved to the top bits.
        let upto = bits << (Expr::lit(31u32) - rank.clone());
        let start = upto
            .eq(0u32)
            .select(Expr::lit(0u32), rank.clone() - upto.clz());
        let start = self.var(start);
        let acc = self.var(src.item(0));
        let mut d = 1;
        while d < width {
            let up = self.shfl_up(group, acc.get(), d);
            let inside = rank.clone().ge(start.get() + d);
            let combined = op.apply(up, acc.get());
            self.set(&acc, inside.select(combined, acc.get()));
            d *= 2;
        }
        let value = if parts.inclusive {
            match &parts.initial {
                Some(init) => op.apply(init.clone(), acc.get()),
                None => acc.get(),
            }
        } else {
            let before = self.shfl_up(group, acc.get(), 1u32);
            let init = parts.initial.clone().unwrap_or_else(|| acc.get());
            let after = op.apply(init.clone(), before);
            rank.eq(start.get()).select(init, after)
        };
        let out = self.thread_data_n::<T>(1);
        self.set_item(&out, 0, value);
        self.attribute(first, loc);
        out
    }

    /// Reduces each lane's `N` values (the items of `src`) across each logical warp of
    /// `group` at once, value `i` of every lane with value `i` of the others (cuda.coop's
    /// batched warp reduction): a transpose-reduce, where each step's shuffles exchange half
    /// of a lane's remaining values with its partner and keep the other half combined, so
    /// `N` values take `N - 1` shuffles while `N <= W` (then `log2(W / N)` more), where `N`
    /// separate reductions would take `N * log2(W)`. The totals come out in
    /// [`BatchOutput`]'s arrangement over the lanes (blocked takes one more shuffle per
    /// result item): `max(N / W, 1)` items per lane, every lane holding its totals.
    ///
    /// `N` must be a power of two up to [`MAX_ITEMS_PER_THREAD`]; the logical warps' width
    /// must divide the block (every logical warp full); valid counts are not taken. Every
    /// [`Reduce`] operator (custom ones in lane order) over every dtype. The verifier reports
    /// what does not fit ([`PrimitiveProblem`]).
    ///
    /// ```
    /// use coopgraph::ir::{BatchOutput, Reduce};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// // Lanes of logical warps of 4 hold 2 values each: lane l holds (l, 10 * l).
    /// let mut k = KernelBuilder::new("batched").block(8).items_per_thread(2);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let (b, quad) = (k.this_block(), k.this_warp().group_by(4));
    /// let t = k.load_from(b, &x, Load::direct());
    /// let s = k.reduce_batched(quad, &t, Reduce::sum(), BatchOutput::Striped);
    /// k.store_to(b, &y, &s, Store::direct().offset(0u32));
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xs: Vec<u32> = (0..8).flat_map(|l| [l, 10 * l]).collect();
    /// let xb = dev.upload(&xs)?;
    /// let mut yb = dev.alloc_zeroed::<u32>(8)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// // Quad 0: totals 6 and 60, striped over its lanes (l % 2); quad 1: 22 and 220.
    /// assert_eq!(yb.to_vec()?, [6, 60, 6, 60, 22, 220, 22, 220]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn reduce_batched<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        controls: Reduce<T>,
        output: BatchOutput,
    ) -> ThreadData<T> {
        let loc = Loc::caller();
        let group = group.into();
        let what = "batched warp reduction";
        let (op, valid) = controls.into_parts();
        let n = src.items;
        let threads = self.ir.block_threads();
        let checked = warp_width(group, what).and_then(|w| {
            if !n.is_power_of_two() || n > MAX_ITEMS_PER_THREAD {
                Err(PrimitiveProblem::BatchItems {
                    items: n,
                    max: MAX_ITEMS_PER_THREAD,
                })
            } else if !threads.is_multiple_of(w) {
                Err(PrimitiveProblem::PartialWarp { width: w, threads })
            } else if valid.is_some() {
                let control = "a valid count";
                Err(PrimitiveProblem::Control { what, control })
            } else {
                Ok(w)
            }
        });
        let width = match checked {
            Ok(w) => w,
            Err(p) => {
                self.primitive_problem(p, loc);
                let out = self.thread_data_n::<T>(1);
                self.set_item(&out, 0, src.item(0));
                return out;
            }
        };
        let first = self.recorded();
        let op = Combiner::new(op);
        let rank = group.rank();
        let mut values: Vec<_> = (0..n).map(|i| self.var(src.item(i))).collect();
        // Offsets rise, so each partial covers consecutive lanes and the lower lane's value
        // comes first. A split step halves the values: striped keeps the even or the odd
        // ones (lane bit s becomes value bit s), blocked the lower or upper half (lane bit s
        // becomes value bit log2(N) - 1 - s).
        let mut d = 1;
        while d < width {
            let upper = (rank.clone() & d).ne(0u32);
            let c = values.len();
            if c > 1 {
                let pair = |i: usize| match output {
                    BatchOutput::Striped => (2 * i, 2 * i + 1),
                    BatchOutput::Blocked => (i, i + c / 2),
                };
                let mut kept = Vec::with_capacity(c / 2);
                for i in 0..c / 2 {
                    let (lo, hi) = pair(i);
                    let (lo, hi) = (values[lo].get(), values[hi].get());
                    let send = upper.clone().select(lo.clone(), hi.clone());
                    let keep = upper.clone().select(hi, lo);
                    let got = self.shfl_xor(group, send, d);
                    let v = upper
                        .clone()
                        .select(op.apply(got.clone(), keep.clone()), op.apply(keep, got));
                    kept.push(self.var(v));
                }
                values = kept;
            } else {
                let mine = values[0].get();
                let got = self.shfl_xor(group, mine.clone(), d);
                let v = upper.select(op.apply(got.clone(), mine.clone()), op.apply(mine, got));
                self.set(&values[0], v);
            }
            d *= 2;
        }
        let items = values.len() as u32;
        let out = self.thread_data_n::<T>(items);
        // Blocked: lane l holds the values of lane bits reversed; one shuffle each puts them
        // where the arrangement wants them.
        let log_w = width.trailing_zeros();
        let log_n = n.trailing_zeros();
        let source = match output {
            BatchOutput::Blocked if log_n >= log_w && log_w > 0 => {
                Some(reverse_low(rank.clone(), log_w))
            }
            BatchOutput::Blocked if log_n > 0 && log_n < log_w => {
                let value = rank.clone() >> (log_w - log_n);
                Some(reverse_low(value, log_n))
            }
            _ => None,
        };
        for (i, v) in values.iter().enumerate() {
            let v = match &source {
                Some(s) => self.shfl(group, v.get(), s.clone()),
                None => v.get(),
            };
            self.set_item(&out, i as u32, v);
        }
        self.attribute(first, loc);
        out
    }
}

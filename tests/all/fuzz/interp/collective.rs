//! The interpreter's collectives: reductions, scans, neighbour ops and scatters, in position
//! order over each group's tile.
//!
//! Float folds: a sum or product of floats is taken as known only where every order of
//! combining gives the same bits (every partial sum exact: integers, or multiples of one power
//! of two, small enough; products likewise); elsewhere the result is unspecified. A scan's
//! outputs are checked prefix by prefix: an operand that fixes the whole fold (a NaN) says
//! nothing of the prefixes before it. Min and max
//! are order-free. A custom float operator is folded in position order and cross-checked with a
//! pairwise fold; a NaN operand, or a disagreement, leaves the result unspecified.

use super::value::{self, UNSPEC, V};
use super::{Block, Cx, Event, Mode, owner, position};
use coopgraph::ir::expr::BinaryOp;
use coopgraph::ir::ops::{NeighborSpec, ReduceOp, Reduction, ScanSpec};
use coopgraph::ir::{Arrangement, DType, DataId, ExprId, GroupId, NeighborKind};

/// Whether a float sum or product folded so far has the same bits in every order of
/// combining. Fed one operand at a time, it answers for every prefix: a scan's outputs are
/// prefixes, and an operand that makes the whole fold order-free (a NaN, or infinities of
/// both signs, or a zero and an infinity in a product) says nothing of the prefixes before it.
#[derive(Clone, Copy)]
struct OrderFree {
    dt: DType,
    product: bool,
    nan: bool,
    pos_inf: bool,
    neg_inf: bool,
    zero: bool,
    /// Sums: the exponent of the lowest set bit of any operand, and the sum of magnitudes.
    lo_bit: i32,
    total: f64,
    /// Products: significant bits, and the exponent bounds of the finite nonzero operands.
    bits: i32,
    hi: i32,
    lo: i32,
}

impl OrderFree {
    /// A check for folds of `op` over `dt`; `None` for operators that are order-free or not
    /// checked this way.
    fn new(op: ReduceOp, dt: DType) -> Option<OrderFree> {
        let product = match op {
            ReduceOp::Sum => false,
            ReduceOp::Product => true,
            _ => return None,
        };
        Some(OrderFree {
            dt,
            product,
            nan: false,
            pos_inf: false,
            neg_inf: false,
            zero: false,
            lo_bit: i32::MAX,
            total: 0.0,
            bits: 0,
            hi: 0,
            lo: 0,
        })
    }

    fn push(&mut self, v: V) {
        let x = value::float(self.dt, v.bits);
        if x.is_nan() {
            self.nan = true;
        } else if x.is_infinite() {
            if x > 0.0 {
                self.pos_inf = true
            } else {
                self.neg_inf = true
            }
        } else if x == 0.0 {
            self.zero = true;
        } else if self.product {
            let e = x.abs().log2().floor() as i32;
            self.bits += e - low_bit(x) + 1;
            self.hi += (e + 1).max(0);
            self.lo += e.min(0);
        } else {
            self.lo_bit = self.lo_bit.min(low_bit(x));
            self.total += x.abs();
        }
    }

    /// Whether the operands pushed so far fold to the same bits in every order.
    fn exact(&self) -> bool {
        let f32 = self.dt == DType::F32;
        let inf = self.pos_inf || self.neg_inf;
        if self.product {
            let (p, max_exp, min_exp) = if f32 {
                (24, 127, -126)
            } else {
                (53, 1023, -1022)
            };
            if self.nan || (self.zero && inf) {
                return true;
            }
            return self.bits <= p && self.hi < max_exp && self.lo >= min_exp;
        }
        let (p, max_exp) = if f32 { (24, 126) } else { (53, 1022) };
        if self.nan || (self.pos_inf && self.neg_inf) {
            return true;
        }
        let total = self.total * (1.0 + 1e-9);
        if total >= 2f64.powi(max_exp) {
            return false;
        }
        inf || self.lo_bit == i32::MAX || total < 2f64.powi(self.lo_bit + p)
    }
}

/// Whether the float sum or product `op` of `vals` is the same in every order.
fn order_free_fold(op: ReduceOp, dt: DType, vals: &[V]) -> bool {
    OrderFree::new(op, dt).is_none_or(|mut c| {
        vals.iter().for_each(|&v| c.push(v));
        c.exact()
    })
}

/// The exponent of the lowest set bit of a finite nonzero `x`.
fn low_bit(x: f64) -> i32 {
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let mant = bits & ((1u64 << 52) - 1);
    let (m, e) = if exp == 0 {
        (mant, -1074)
    } else {
        (mant | (1u64 << 52), exp - 1075)
    };
    e + m.trailing_zeros() as i32
}

fn fixed(op: ReduceOp) -> Option<BinaryOp> {
    Some(match op {
        ReduceOp::Sum => BinaryOp::Add,
        ReduceOp::Product => BinaryOp::Mul,
        ReduceOp::Min => BinaryOp::Min,
        ReduceOp::Max => BinaryOp::Max,
        ReduceOp::BitAnd => BinaryOp::And,
        ReduceOp::BitOr => BinaryOp::Or,
        ReduceOp::BitXor => BinaryOp::Xor,
        ReduceOp::First | ReduceOp::Custom { .. } => return None,
    })
}

/// A scatter's fields.
pub(super) struct ScatterOp {
    pub group: GroupId,
    pub src: DataId,
    pub ranks: DataId,
    pub flags: Option<DataId>,
    pub dst: DataId,
    pub to: Arrangement,
    /// The bits of positions nothing was scattered to (`None`: undefined).
    pub holes: Option<u64>,
    /// The ranks are promised a permutation of the tile's positions.
    pub permutation: bool,
    /// The library marks the ranks inside the tile by construction (its sorts' own): the
    /// kernel writes them unguarded, so one past the tile is a library bug.
    pub inside: bool,
}

impl Block<'_> {
    /// The groups of `group` running now, as (first thread, threads): a group only some of
    /// whose threads are active is a participation fault.
    pub(super) fn groups(&mut self, group: GroupId, active: &[bool]) -> Vec<(usize, usize)> {
        let w = self.ir.group_threads(group) as usize;
        // Groups of whole warps are whole: the threads past the last whole group are in none.
        let whole = self.ir.groups[group.index()].kind.whole_warps().is_some();
        let mut out = Vec::new();
        for g0 in (0..self.threads).step_by(w.max(1)) {
            let end = (g0 + w).min(self.threads);
            let n = (g0..end).filter(|&t| active[t]).count();
            if whole && end - g0 < w {
                if n > 0 {
                    self.event(Event::Participation { op: self.op });
                }
            } else if n == end - g0 {
                out.push((g0, end - g0));
            } else if n > 0 {
                self.event(Event::Participation { op: self.op });
            }
        }
        out
    }

    /// A value every thread of the group must agree on, from its rank 0.
    fn uniform(&mut self, e: ExprId, g0: usize, w: usize) -> V {
        let v = self.eval(e, self.cx(g0));
        for t in g0 + 1..g0 + w {
            if self.eval(e, self.cx(t)) != v {
                self.event(Event::Participation { op: self.op });
                break;
            }
        }
        self.check_defined(v, "a collective's uniform operand");
        v
    }

    fn combine(&mut self, op: ReduceOp, dt: DType, a: V, b: V, t: usize) -> V {
        match (op, fixed(op)) {
            (_, Some(bin)) => {
                let flags = value::derive(a.flags | b.flags);
                match value::binary(bin, dt, a.bits, b.bits) {
                    Some(bits) => V::with(bits, flags),
                    None => V::with(0, flags | UNSPEC),
                }
            }
            (ReduceOp::First, None) => a,
            (ReduceOp::Custom { expr, .. }, None) => {
                let args = [a, b];
                let cx = Cx {
                    t,
                    args: &args,
                    item: None,
                    mode: Mode::Live,
                };
                self.eval(expr, cx)
            }
            _ => V::with(0, UNSPEC),
        }
    }

    /// Folds `vals` in order; for floats, unspecified unless every order agrees.
    fn fold(&mut self, op: ReduceOp, dt: DType, vals: &[V], t: usize) -> V {
        let Some(&first) = vals.first() else {
            return V::with(0, UNSPEC);
        };
        if vals.iter().any(|v| v.undef()) {
            self.event(Event::Undefined {
                op: self.op,
                what: "a reduced or scanned value",
            });
            return V::UNDEF;
        }
        let mut acc = first;
        for &v in &vals[1..] {
            acc = self.combine(op, dt, acc, v, t);
        }
        if dt.is_float() && !self.order_free(op, dt, vals, acc, t) {
            acc.flags |= UNSPEC;
        }
        acc
    }

    /// Whether folding `vals` in any order gives `acc` (floats).
    fn order_free(&mut self, op: ReduceOp, dt: DType, vals: &[V], acc: V, t: usize) -> bool {
        match op {
            ReduceOp::Sum | ReduceOp::Product => order_free_fold(op, dt, vals),
            ReduceOp::Custom { .. } => {
                if vals.iter().any(|v| value::is_nan(dt, v.bits)) {
                    return false;
                }
                let tree = self.tree(op, dt, vals, t);
                value::same(dt, tree.bits, acc.bits)
            }
            _ => true,
        }
    }

    fn tree(&mut self, op: ReduceOp, dt: DType, vals: &[V], t: usize) -> V {
        if vals.len() == 1 {
            return vals[0];
        }
        let mid = vals.len() / 2;
        let a = self.tree(op, dt, &vals[..mid], t);
        let b = self.tree(op, dt, &vals[mid..], t);
        self.combine(op, dt, a, b, t)
    }

    pub(super) fn reduce(&mut self, r: &Reduction, active: &[bool]) {
        let k = self.items(r.src) as usize;
        let dt = self.dtype(r.src);
        // Position order is rank order only over a blocked payload.
        let blocked = !r.op.commutative() || (r.valid.is_some() && k > 1);
        let vals = if blocked {
            self.view(r.src, Some(Arrangement::Blocked), active)
        } else {
            self.data[r.src.index()].clone()
        };
        for (g0, w) in self.groups(r.group, active) {
            let n = r.valid.map(|e| self.uniform(e, g0, w));
            let mut members = Vec::new();
            for rank in 0..w {
                for i in 0..k {
                    let ok = match n {
                        None => true,
                        Some(n) if k == 1 => (rank as u64) < n.bits,
                        Some(n) => ((rank * k + i) as u64) < n.bits,
                    };
                    if ok {
                        members.push(vals[(g0 + rank) * k + i]);
                    }
                }
            }
            let mut res = self.fold(r.op, dt, &members, g0);
            if n.is_some_and(|n| !n.known()) {
                res.flags |= UNSPEC;
            }
            for rank in 0..w {
                let v = if r.broadcast || rank == 0 {
                    res
                } else {
                    V::UNDEF
                };
                self.set(r.dst, g0 + rank, 0, v);
            }
        }
    }

    pub(super) fn scan(&mut self, s: &ScanSpec, active: &[bool]) {
        let k = self.items(s.src) as usize;
        let dt = self.dtype(s.src);
        let vals = self.view(s.src, Some(Arrangement::Blocked), active);
        let groups = self.groups(s.group, active);
        // The valid positions and total of each group.
        let mut parts = Vec::new();
        for &(g0, w) in &groups {
            let tile = w * k;
            let n = s.valid.map(|e| self.uniform(e, g0, w));
            let m = n.map_or(tile, |n| (n.bits as usize).min(tile));
            let members = vals[g0 * k..g0 * k + m].to_vec();
            let mut total = self.fold(s.op, dt, &members, g0);
            if n.is_some_and(|n| !n.known()) {
                total.flags |= UNSPEC;
            }
            if let Some(a) = s.aggregate {
                for t in g0..g0 + w {
                    self.set(a, t, 0, total);
                }
            }
            parts.push((members, n));
        }
        // The seed: an initial value, or the callback's prefix (rank 0's), evaluated before
        // the callback's ops run.
        let mut seeds = Vec::new();
        for &(g0, _) in &groups {
            let seed = match (&s.callback, s.initial) {
                (Some(c), _) => Some(self.eval(c.prefix, self.cx(g0))),
                (None, Some(e)) => Some(self.eval(e, self.cx(g0))),
                (None, None) => None,
            };
            seeds.push(seed);
        }
        if let Some(c) = &s.callback {
            self.region(c.body, active);
        }
        for (gi, &(g0, w)) in groups.iter().enumerate() {
            let (members, n) = &parts[gi];
            let seed = seeds[gi];
            let mut all: Vec<V> = seed.into_iter().collect();
            all.extend(members.iter().copied());
            // Sums and products are checked prefix by prefix (each output is one); other
            // float operators over the whole group.
            let mut prefix = OrderFree::new(s.op, dt).filter(|_| dt.is_float());
            let exact = !dt.is_float() || prefix.is_some() || {
                let acc = V::exact(0);
                self.order_free_scan(s.op, dt, &all, acc, g0)
            };
            if let (Some(c), Some(v)) = (prefix.as_mut(), seed) {
                c.push(v);
            }
            let mut acc = seed;
            for p in 0..w * k {
                let mut exact = exact;
                let out = if p < members.len() {
                    let x = members[p];
                    let next = match acc {
                        None => x,
                        Some(a) => self.combine(s.op, dt, a, x, g0),
                    };
                    let out = if s.inclusive {
                        next
                    } else {
                        acc.unwrap_or(V::with(0, UNSPEC))
                    };
                    if let Some(c) = prefix.as_mut() {
                        if s.inclusive {
                            c.push(x);
                            exact = c.exact();
                        } else {
                            exact = c.exact();
                            c.push(x);
                        }
                    }
                    acc = Some(next);
                    out
                } else {
                    // Past the valid count the lowering passes on one of the thread's own
                    // items (its last valid one, or its first): where any is undefined, the
                    // output may be, and a store of it may fault or not.
                    let own = (g0 + p / k) * k;
                    if vals[own..own + k].iter().any(|v| v.undef()) {
                        self.event(Event::Uncertain { op: self.op });
                    }
                    V::with(0, UNSPEC)
                };
                let mut out = out;
                if !exact || n.is_some_and(|n| !n.known()) {
                    out.flags |= UNSPEC;
                }
                if out.undef() {
                    self.check_defined(out, "a scanned value");
                }
                self.set(s.dst, g0 + p / k, (p % k) as u32, out);
            }
        }
    }

    fn order_free_scan(&mut self, op: ReduceOp, dt: DType, vals: &[V], acc: V, t: usize) -> bool {
        match op {
            ReduceOp::Custom { .. } => !vals.iter().any(|v| value::is_nan(dt, v.bits)),
            _ => self.order_free(op, dt, vals, acc, t),
        }
    }

    pub(super) fn neighbor(&mut self, nb: &NeighborSpec, active: &[bool]) {
        let groups = self.groups(nb.group, active);
        if let NeighborKind::Offset(d) | NeighborKind::Rotate(d) = nb.kind {
            let vals = self.data[nb.src.index()].clone();
            let k = self.items(nb.src) as usize;
            for (g0, w) in groups {
                for r in 0..w {
                    let from = match nb.kind {
                        NeighborKind::Rotate(_) => Some((r as i64 + d as i64).rem_euclid(w as i64)),
                        _ => Some(r as i64 + d as i64).filter(|s| (0..w as i64).contains(s)),
                    };
                    let src = from.map_or(g0 + r, |s| g0 + s as usize);
                    let v = vals[src * k];
                    self.check_defined(v, "a shuffled value");
                    self.set(nb.dst, g0 + r, 0, v);
                }
            }
            return;
        }
        let k = self.items(nb.src) as usize;
        let vals = self.view(nb.src, Some(Arrangement::Blocked), active);
        for (g0, w) in groups {
            let n = w * k;
            let x = |p: usize| vals[g0 * k + p];
            if (0..n).any(|p| x(p).undef()) {
                self.check_defined(V::UNDEF, "a neighbour op's operand");
            }
            let valid = nb.valid.map(|e| self.uniform(e, g0, w));
            let first_edge = nb.edge.map(|e| self.eval(e, self.cx(g0)));
            let last_edge = nb.edge.map(|e| self.eval(e, self.cx(g0 + w - 1)));
            let kept = |p: usize| -> bool {
                match (nb.kind, valid) {
                    (NeighborKind::AdjacentLeft, Some(v)) => p as u64 >= v.bits,
                    (NeighborKind::AdjacentRight, Some(v)) => p as u64 + 1 >= v.bits,
                    _ => false,
                }
            };
            for p in 0..n {
                let holder = g0 + p / k;
                let last = p + 1 == n;
                let op = |this: &mut Self, a: V, b: V| this.apply(nb.op, a, b, holder);
                let v = match nb.kind {
                    _ if kept(p) => x(p),
                    NeighborKind::AdjacentLeft => match (p, first_edge) {
                        (0, Some(e)) => op(self, x(0), e),
                        (0, None) => x(0),
                        _ => op(self, x(p), x(p - 1)),
                    },
                    NeighborKind::AdjacentRight => match (last, last_edge) {
                        (true, Some(e)) => op(self, x(p), e),
                        (true, None) => x(p),
                        _ => op(self, x(p), x(p + 1)),
                    },
                    NeighborKind::Heads => match (p, first_edge) {
                        (0, Some(e)) => flag(op(self, e, x(0))),
                        (0, None) => V::exact(1),
                        _ => flag(op(self, x(p - 1), x(p))),
                    },
                    NeighborKind::Tails => match (last, last_edge) {
                        (true, Some(e)) => flag(op(self, x(p), e)),
                        (true, None) => V::exact(1),
                        _ => flag(op(self, x(p), x(p + 1))),
                    },
                    NeighborKind::ShiftUp => match (p, first_edge) {
                        (0, Some(e)) => e,
                        (0, None) => x(0),
                        _ => x(p - 1),
                    },
                    NeighborKind::ShiftDown => match (last, last_edge) {
                        (true, Some(e)) => e,
                        (true, None) => x(p),
                        _ => x(p + 1),
                    },
                    NeighborKind::Offset(_) | NeighborKind::Rotate(_) => x(p),
                };
                self.set(nb.dst, holder, (p % k) as u32, v);
            }
            if let Some(o) = nb.shifted_out {
                let v = match nb.kind {
                    NeighborKind::ShiftUp => x(n - 1),
                    _ => x(0),
                };
                for t in g0..g0 + w {
                    self.set(o, t, 0, v);
                }
            }
        }
    }

    /// The neighbour operator `op(a, b)` (`None`: not used by the kinds that have none).
    fn apply(&mut self, op: Option<ExprId>, a: V, b: V, t: usize) -> V {
        let Some(e) = op else {
            return V::with(0, UNSPEC);
        };
        let args = [a, b];
        self.eval(
            e,
            Cx {
                t,
                args: &args,
                item: None,
                mode: Mode::Live,
            },
        )
    }

    pub(super) fn scatter(&mut self, s: &ScatterOp, active: &[bool]) {
        let ScatterOp {
            group,
            src,
            ranks,
            flags,
            dst,
            to,
            holes,
            permutation,
            inside,
        } = *s;
        if self.groups(group, active).is_empty() {
            return;
        }
        let dtype = self.dtype(src);
        let hole = holes.map_or(V::UNDEF, |b| V::exact(b & value::mask(dtype)));
        let k = self.items(src);
        let tile = self.threads as u32 * k;
        let pair = self.arr[src.index()];
        // Ranks and flags describe the same items: a free one holds the other's positions.
        let (ra, fa) = (
            self.arr[ranks.index()],
            flags.and_then(|f| self.arr[f.index()]),
        );
        let ranks_v = self.view_from(ranks, ra.or(fa), pair, active);
        let flags_v = flags.map(|f| self.view_from(f, fa.or(ra), pair, active));
        let items = self.data[src.index()].clone();
        let mut target: Vec<Option<V>> = vec![None; tile as usize];
        let mut known_rank = vec![false; tile as usize];
        let mut any_unknown = false;
        for t in 0..self.threads as u32 {
            for i in 0..k {
                let idx = (t * k + i) as usize;
                let f = flags_v.as_ref().map_or(V::exact(1), |f| f[idx]);
                let r = ranks_v[idx];
                self.check_defined(f, "a scatter flag");
                self.check_defined(r, "a scatter rank");
                if inside && f.bits != 0 && r.known() && r.bits >= u64::from(tile) {
                    self.event(Event::ScatterOutside {
                        op: self.op,
                        rank: r.bits,
                    });
                }
                if f.bits == 0 || r.bits >= u64::from(tile) {
                    continue;
                }
                let v = items[idx];
                self.check_defined(v, "a scattered item");
                let unknown = !f.known() || !r.known();
                // A rank the interpreter cannot know (one computed from an approximate value,
                // a sort's of approximate keys) may meet another without the kernel's ranks
                // meeting: only two known ranks collide for certain.
                let known_slot = &mut known_rank[r.bits as usize];
                if target[r.bits as usize].is_some() && *known_slot && !unknown {
                    self.event(Event::ScatterCollision {
                        op: self.op,
                        position: r.bits as u32,
                    });
                }
                *known_slot |= !unknown;
                any_unknown |= unknown;
                let slot = &mut target[r.bits as usize];
                *slot = Some(if unknown {
                    V::with(v.bits, v.flags | UNSPEC)
                } else {
                    v
                });
            }
        }
        // Under a promised permutation, a position an unknown rank may have reached holds a
        // value the interpreter does not know, not none.
        let hole = if permutation && any_unknown {
            V::with(0, UNSPEC)
        } else {
            hole
        };
        for t in 0..self.threads as u32 {
            for i in 0..k {
                let q = position(to, k, t, i);
                let v = target.get(q as usize).copied().flatten().unwrap_or(hole);
                debug_assert_eq!(owner(to, k, q), (t, i));
                self.set(dst, t as usize, i, v);
            }
        }
    }
}

/// A predicate as a `u32` flag.
fn flag(v: V) -> V {
    V::with(v.bits & 1, v.flags)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(op: ReduceOp, xs: &[f32]) -> Vec<bool> {
        let mut c = OrderFree::new(op, DType::F32).expect("a float fold");
        xs.iter()
            .map(|x| {
                c.push(V::exact(u64::from(x.to_bits())));
                c.exact()
            })
            .collect()
    }

    #[test]
    fn a_product_prefix_before_its_zero_and_infinity_can_depend_on_order() {
        // (1e30 * 1e30) * 0 is NaN, 1e30 * (1e30 * 0) is 0; once an infinity joins, every
        // order gives NaN.
        let got = check(ReduceOp::Product, &[1e30, 1e30, 0.0, f32::INFINITY]);
        assert_eq!(got, [true, false, false, true]);
        assert!(order_free_fold(
            ReduceOp::Product,
            DType::F32,
            &[1e30, 1e30, 0.0, f32::INFINITY].map(|x: f32| V::exact(u64::from(x.to_bits())))
        ));
    }

    #[test]
    fn a_sum_prefix_before_opposite_infinities_can_depend_on_order() {
        let tiny = 2f32.powi(-30);
        let got = check(
            ReduceOp::Sum,
            &[1.0, tiny, f32::INFINITY, f32::NEG_INFINITY],
        );
        assert_eq!(got, [true, false, true, true]);
        assert_eq!(check(ReduceOp::Sum, &[1.0, 2.0, 0.5]), [true, true, true]);
    }
}

//! Random expression trees over the DSL: arithmetic, comparisons, selects, casts, min/max,
//! bit operations and shifts on integers, float functions (the approximate ones rarely), and
//! leaves from map operands, payload slots, scalars, built-in indices, loop counters, shared
//! arrays and buffers read by index. Uniform expressions (conditions around collectives, bounds, counts) come
//! from leaves the verifier counts as uniform enough.

use super::{BLOCK, Defect, Gen, THREAD, WARP};
use crate::fuzz::types::{
    AnyExpr, F64_BINARY, F64_UNARY, FloatBin, FloatUn, Fz, IntBin, IntUn, with_dtype,
};
use coopgraph::KernelBuilder;
use coopgraph::ir::index::Axis;
use coopgraph::ir::{DType, Element, Expr, index};

/// What leaves an expression may use.
#[derive(Clone, Default)]
pub(crate) struct Leaves {
    /// Map operands (`Arg(i)`).
    pub args: Vec<AnyExpr>,
    /// `index::item()` (map and fill bodies).
    pub item: bool,
    /// Thread-varying leaves: payload slots, thread indices, shared arrays.
    pub varying: bool,
    /// Payloads whose slots may not be read (the op reads them converted).
    pub exclude: Vec<coopgraph::ir::DataId>,
}

impl Leaves {
    pub fn varying() -> Leaves {
        Leaves {
            varying: true,
            ..Leaves::default()
        }
    }

    pub fn map(args: Vec<AnyExpr>) -> Leaves {
        Leaves {
            args,
            item: true,
            varying: true,
            exclude: Vec::new(),
        }
    }
}

/// `e` converted to `T` (predicates as 1 or 0).
pub(crate) fn to<T: Fz>(e: AnyExpr) -> Expr<T> {
    match e {
        AnyExpr::B(b) => b.select(T::small(1), T::small(0)),
        AnyExpr::I8(x) => x.cast::<T>(),
        AnyExpr::I16(x) => x.cast::<T>(),
        AnyExpr::I32(x) => x.cast::<T>(),
        AnyExpr::I64(x) => x.cast::<T>(),
        AnyExpr::U8(x) => x.cast::<T>(),
        AnyExpr::U16(x) => x.cast::<T>(),
        AnyExpr::U32(x) => x.cast::<T>(),
        AnyExpr::U64(x) => x.cast::<T>(),
        AnyExpr::F32(x) => x.cast::<T>(),
        AnyExpr::F64(x) => x.cast::<T>(),
    }
}

/// A constant of `T`: small mostly, the type's edges sometimes.
pub(crate) fn constant<T: Fz>(g: &mut Gen) -> T {
    let wild = !T::DTYPE.is_float() || !g.tame;
    if wild && g.rng.pct(15) {
        let h = g.rng.next();
        let d = super::Data {
            dtype: T::DTYPE,
            flavor: super::Flavor::Edges,
            salt: h,
        };
        return T::from_bits(d.value(h));
    }
    T::small(g.rng.below(17) as i64 - 8)
}

impl Gen {
    /// A random tree of `T` of at most `depth` levels (and, in some cases, with subtrees
    /// shared many times over: [`Gen::shared`]).
    pub fn expr<T: Fz>(&mut self, lv: &Leaves, depth: u32) -> Expr<T> {
        let e = self.expr_tree::<T>(lv, depth);
        self.shared(e)
    }

    /// The tree of [`Gen::expr`] before any sharing.
    fn expr_tree<T: Fz>(&mut self, lv: &Leaves, depth: u32) -> Expr<T> {
        if depth == 0 || self.rng.pct(25) {
            return self.leaf::<T>(lv);
        }
        let d = depth - 1;
        let float = T::DTYPE.is_float();
        let tame = float && self.tame;
        let weights = [
            30,                         // + - *
            if tame { 0 } else { 4 },   // division
            10,                         // min, max
            if float { 0 } else { 10 }, // bit operators, remainder
            if float { 0 } else { 6 },  // shifts
            8,                          // neg, abs, int unary / float rounding
            if tame { 1 } else { 6 },   // sqrt, rcp, approximate functions
            4,                          // fma
            10,                         // select
            10,                         // cast from another type
        ];
        match self.rng.weighted(&weights) {
            0 => {
                let (a, b) = (self.expr::<T>(lv, d), self.expr::<T>(lv, d));
                match self.rng.below(3) {
                    0 => a + b,
                    1 => a - b,
                    _ => a * b,
                }
            }
            1 if !float && self.rng.pct(25) => {
                // By a constant power of two, which unsigned types lower to a shift or a mask.
                let a = self.expr::<T>(lv, d);
                let p = Expr::lit(T::small(1 << self.rng.below(5)));
                if self.rng.pct(50) {
                    a / p
                } else {
                    T::int_bin(IntBin::Rem, a, p)
                }
            }
            1 => {
                let (a, b) = (self.expr::<T>(lv, d), self.expr::<T>(lv, d));
                if !float && self.rng.pct(85) {
                    a / T::int_bin(IntBin::Or, b, Expr::lit(T::small(1)))
                } else {
                    a / b
                }
            }
            2 => {
                let (a, b) = (self.expr::<T>(lv, d), self.expr::<T>(lv, d));
                if self.rng.pct(50) { a.min(b) } else { a.max(b) }
            }
            3 => {
                let (a, b) = (self.expr::<T>(lv, d), self.expr::<T>(lv, d));
                let op = self.rng.pick(&[
                    IntBin::And,
                    IntBin::Or,
                    IntBin::Xor,
                    IntBin::Rem,
                    IntBin::MulHi,
                ]);
                let b = match op {
                    IntBin::Rem if self.rng.pct(85) => {
                        T::int_bin(IntBin::Or, b, Expr::lit(T::small(1)))
                    }
                    _ => b,
                };
                T::int_bin(op, a, b)
            }
            4 => {
                let a = self.expr::<T>(lv, d);
                let s: Expr<u32> = if self.rng.pct(70) {
                    Expr::lit(self.rng.below(u64::from(T::BITS) + 4) as u32)
                } else {
                    self.expr::<u32>(lv, d) & 127u32
                };
                T::shift(self.rng.pct(50), a, s)
            }
            5 => {
                let a = self.expr::<T>(lv, d);
                match (float, self.rng.below(4)) {
                    (_, 0) => -a,
                    (_, 1) => a.abs(),
                    (false, _) => {
                        let op = self
                            .rng
                            .pick(&[IntUn::Not, IntUn::Brev, IntUn::Popc, IntUn::Clz]);
                        T::int_un(op, a)
                    }
                    (true, _) => {
                        let op = self.rng.pick(&[
                            FloatUn::Floor,
                            FloatUn::Ceil,
                            FloatUn::Trunc,
                            FloatUn::Round,
                        ]);
                        T::float_un(op, a)
                    }
                }
            }
            6 => {
                let a = self.expr::<T>(lv, d);
                if !float {
                    return a.abs();
                }
                let library = self.rng.pct(40);
                let f64_lib = T::DTYPE == DType::F64;
                if library && self.rng.pct(10) {
                    return self.cold_sum(a);
                }
                if library && self.rng.pct(15) {
                    let b = self.expr::<T>(lv, d);
                    let op = if f64_lib {
                        self.rng.pick(F64_BINARY)
                    } else {
                        self.rng.pick(&[
                            FloatBin::Atan2,
                            FloatBin::Pow,
                            FloatBin::Hypot,
                            FloatBin::Powi,
                        ])
                    };
                    return T::float_bin(op, a, b);
                }
                let op = if library && f64_lib {
                    self.rng.pick(F64_UNARY)
                } else if library {
                    self.rng.pick(&[
                        FloatUn::Rsqrt,
                        FloatUn::Exp2,
                        FloatUn::Log2,
                        FloatUn::Sin,
                        FloatUn::Cos,
                        FloatUn::Tanh,
                        FloatUn::Exp,
                        FloatUn::Exp10,
                        FloatUn::Expm1,
                        FloatUn::Ln,
                        FloatUn::Log10,
                        FloatUn::Log1p,
                        FloatUn::Tan,
                        FloatUn::Asin,
                        FloatUn::Acos,
                        FloatUn::Atan,
                        FloatUn::Sinh,
                        FloatUn::Cosh,
                        FloatUn::Cbrt,
                        FloatUn::Erf,
                        FloatUn::Erfc,
                    ])
                } else {
                    self.rng
                        .pick(&[FloatUn::Sqrt, FloatUn::Rcp, FloatUn::Rsqrt, FloatUn::Bits])
                };
                T::float_un(op, a)
            }
            7 => {
                let (a, b, c) = (
                    self.expr::<T>(lv, d),
                    self.expr::<T>(lv, d),
                    self.expr::<T>(lv, d),
                );
                a.fma(b, c)
            }
            8 => {
                let c = self.cond(lv, d);
                let (a, b) = (self.expr::<T>(lv, d), self.expr::<T>(lv, d));
                c.select(a, b)
            }
            _ => {
                let dt = self.dtype();
                let e = self.expr_any(lv, d, dt);
                to::<T>(e)
            }
        }
    }

    /// A sum of 2 to 4 calls of functions with cold paths (`exp` past 86, huge arguments of
    /// the trigonometric functions) of `a` scaled, so that of the threads, some take some
    /// cold paths and others none: each call's branch around its rare side, among the others'
    /// (and after and before every other op).
    fn cold_sum<T: Fz>(&mut self, a: Expr<T>) -> Expr<T> {
        let n = 2 + self.rng.below(3);
        let mut sum: Option<Expr<T>> = None;
        for _ in 0..n {
            let scale = self.rng.pick(&[1i64, 16, 1000, 1 << 20, 1 << 40]);
            let op = self
                .rng
                .pick(&[FloatUn::Exp, FloatUn::Sin, FloatUn::Cos, FloatUn::Tan]);
            let term = T::float_un(op, a.clone() * T::small(scale));
            sum = Some(match sum {
                Some(s) => s + term,
                None => term,
            });
        }
        sum.unwrap_or(a)
    }

    /// A tree of dtype `dt`.
    pub fn expr_any(&mut self, lv: &Leaves, depth: u32, dt: DType) -> AnyExpr {
        with_dtype!(dt, T => T::expr(self.expr::<T>(lv, depth)))
    }

    /// A predicate (with subtrees shared as [`Gen::expr`]'s).
    pub fn cond(&mut self, lv: &Leaves, depth: u32) -> Expr<bool> {
        let c = self.cond_tree(lv, depth);
        self.shared_cond(c)
    }

    /// `e` as it is, or, in the cases that draw them (`shares`, about one case in eight),
    /// sometimes `e` combined with itself 4 to 47 times over, each time as both (or all
    /// three) operands of a node that gives `e`'s value back (`e.min(e)`, `e & e`,
    /// `e.lt(e).select(e, e)`, `(e ^ e) | e`), with one operator all the way down or a mix.
    /// The result has few nodes and up to 2^47 paths from its root: every walk of the builder,
    /// verifier, planner, code generator and interpreter must judge each node once, in time
    /// linear in the nodes, where a walk that follows every path hangs. Its value, bounds and
    /// uniformity are `e`'s, so the kernel computes what it did without the sharing.
    pub fn shared<T: Fz>(&mut self, e: Expr<T>) -> Expr<T> {
        let Some(n) = self.share_count() else {
            return e;
        };
        let float = T::DTYPE.is_float();
        let weights = [20, 20, 20, if float { 0 } else { 20 }, 10];
        let rng = self.shares.as_mut().expect("drawn by share_count");
        // One operator all the way down in half the chains (a walk that descends through one
        // kind of node only meets every path there), a mix in the others.
        let one = rng.pct(50).then(|| rng.weighted(&weights));
        let mut e = e;
        for _ in 0..n {
            e = match one.unwrap_or_else(|| rng.weighted(&weights)) {
                0 => e.clone().min(e),
                1 => e.clone().max(e),
                2 => {
                    let cmp = rng.below(6);
                    comparison(cmp, e.clone(), e.clone()).select(e.clone(), e)
                }
                3 => {
                    let op = rng.pick(&[IntBin::And, IntBin::Or]);
                    T::int_bin(op, e.clone(), e)
                }
                _ if !float => {
                    let zero = T::int_bin(IntBin::Xor, e.clone(), e.clone());
                    T::int_bin(IntBin::Or, zero, e)
                }
                _ => e.clone().max(e.clone()).min(e),
            };
        }
        e
    }

    /// [`Gen::shared`] for predicates: `c.and(&c)`, `c.or(&c)`, `(c ^ c).or(&c)`.
    fn shared_cond(&mut self, c: Expr<bool>) -> Expr<bool> {
        let Some(n) = self.share_count() else {
            return c;
        };
        let rng = self.shares.as_mut().expect("drawn by share_count");
        let one = rng.pct(50).then(|| rng.below(3));
        let mut c = c;
        for _ in 0..n {
            c = match one.unwrap_or_else(|| rng.below(3)) {
                0 => c.and(&c),
                1 => c.or(&c),
                _ => (c.clone() ^ c.clone()).or(&c),
            };
        }
        c
    }

    /// How many times [`Gen::shared`] combines an expression with itself, if it does: in one
    /// expression in ten of the cases that draw sharing.
    fn share_count(&mut self) -> Option<u32> {
        let rng = self.shares.as_mut()?;
        rng.pct(10).then(|| 4 + rng.below(44) as u32)
    }

    /// The predicate of [`Gen::cond`] before any sharing.
    fn cond_tree(&mut self, lv: &Leaves, depth: u32) -> Expr<bool> {
        let d = depth.saturating_sub(1);
        match self.rng.weighted(&[60, 15, 10, 5, 3]) {
            0 if self.rng.pct(15) => {
                // Two 32-bit integers widened to 64 bits, which compare as 32-bit values, or
                // with their sign bits flipped, which compare in the other signedness; or an
                // unsigned integer's top bit shifted down and compared with 0, 1 or 2 (on
                // either side), which compares the integer with zero as a signed one.
                let cmp = self.rng.below(6);
                match self.rng.below(8) {
                    6 | 7 => {
                        let v = self.rng.below(3) as u32;
                        let swap = self.rng.pct(50);
                        if self.rng.pct(50) {
                            let top = self.expr::<u32>(lv, d) >> 31u32;
                            let v = Expr::lit(v);
                            if swap {
                                comparison(cmp, v, top)
                            } else {
                                comparison(cmp, top, v)
                            }
                        } else {
                            let top = self.expr::<u64>(lv, d) >> 63u32;
                            let v = Expr::lit(u64::from(v));
                            if swap {
                                comparison(cmp, v, top)
                            } else {
                                comparison(cmp, top, v)
                            }
                        }
                    }
                    4 => {
                        let (a, b) = (self.expr::<u32>(lv, d), self.expr::<u32>(lv, d));
                        let (a, b) = (a ^ 0x8000_0000u32, b ^ 0x8000_0000u32);
                        if self.rng.pct(50) {
                            comparison(cmp, a.cast::<u64>(), b.cast::<u64>())
                        } else {
                            comparison(cmp, a, b)
                        }
                    }
                    5 => {
                        let (a, b) = (self.expr::<i32>(lv, d), self.expr::<i32>(lv, d));
                        comparison(cmp, a ^ i32::MIN, b ^ i32::MIN)
                    }
                    0 => {
                        let (a, b) = (self.expr::<u32>(lv, d), self.expr::<u32>(lv, d));
                        comparison(cmp, a.cast::<u64>(), b.cast::<u64>())
                    }
                    1 => {
                        let (a, b) = (self.expr::<u32>(lv, d), self.expr::<u32>(lv, d));
                        comparison(cmp, a.cast::<i64>(), b.cast::<i64>())
                    }
                    2 => {
                        let (a, b) = (self.expr::<i32>(lv, d), self.expr::<i32>(lv, d));
                        comparison(cmp, a.cast::<u64>(), b.cast::<u64>())
                    }
                    _ => {
                        let (a, b) = (self.expr::<i32>(lv, d), self.expr::<i32>(lv, d));
                        comparison(cmp, a.cast::<i64>(), b.cast::<i64>())
                    }
                }
            }
            0 => {
                let dt = self.dtype();
                with_dtype!(dt, T => {
                    let (a, b) = (self.expr::<T>(lv, d), self.expr::<T>(lv, d));
                    comparison(self.rng.below(6), a, b)
                })
            }
            1 if depth > 0 => {
                let (a, b) = (self.cond(lv, d), self.cond(lv, d));
                match self.rng.below(3) {
                    0 => a.and(&b),
                    1 => a.or(&b),
                    _ => a ^ b,
                }
            }
            2 if depth > 0 => !self.cond(lv, d),
            3 => {
                let dt = self.rng.pick(&[DType::F32, DType::F64]);
                with_dtype!(dt, T => {
                    let a = self.expr::<T>(lv, d);
                    <T as Fz>::is_nan(&a)
                })
            }
            _ => Expr::lit_bool(self.rng.pct(50)),
        }
    }

    /// A leaf of type `T`.
    pub fn leaf<T: Fz>(&mut self, lv: &Leaves) -> Expr<T> {
        for _ in 0..8 {
            match self.rng.weighted(&[20, 30, 20, 8, 12, 6, 6, 6, 6, 8, 6]) {
                0 => return Expr::lit(constant::<T>(self)),
                1 if !lv.args.is_empty() => {
                    let a = lv.args[self.rng.below(lv.args.len() as u64) as usize].clone();
                    return match T::of_expr(&a) {
                        Some(e) if self.rng.pct(80) => e,
                        _ => to::<T>(a),
                    };
                }
                2 if lv.varying => {
                    let full = self.full(|d| !lv.exclude.contains(&d.h.id()));
                    if full.is_empty() {
                        continue;
                    }
                    let d = self.datas[self.rng.pick(&full)].clone();
                    let i = self.rng.below(u64::from(d.k)) as u32;
                    return crate::fuzz::generator::ops::slot::<T>(&d, i);
                }
                3 if !self.scalars.is_empty() => {
                    let e = self.scalar_leaf();
                    return to::<T>(e);
                }
                4 => {
                    let e = self.index_leaf(lv);
                    return e.cast::<T>();
                }
                5 if !self.cx().loops.is_empty() => {
                    let loops = self.cx().loops.clone();
                    let (e, _) = loops[self.rng.below(loops.len() as u64) as usize].clone();
                    return e.cast::<T>();
                }
                6 if lv.varying => {
                    if let Some(e) = self.shared_read(lv) {
                        return to::<T>(e);
                    }
                }
                7 if lv.item => return index::item().cast::<T>(),
                8 if lv.varying => {
                    if let Some(e) = self.global_read(lv) {
                        return to::<T>(e);
                    }
                }
                9 => {
                    if let Some(e) = self.var_leaf(lv.varying) {
                        return to::<T>(e);
                    }
                }
                10 if lv.varying => {
                    if let Some(e) = self.array_read() {
                        return to::<T>(e);
                    }
                }
                _ => {}
            }
        }
        Expr::lit(constant::<T>(self))
    }

    /// An existing scalar parameter's value.
    pub fn scalar_leaf(&mut self) -> AnyExpr {
        let (h, _, _) = self.scalars[self.rng.below(self.scalars.len() as u64) as usize];
        scalar_expr(&h)
    }

    /// Declares a scalar of a random dtype and value, for expressions to come (which cannot
    /// declare parameters while the builder records their op).
    pub fn new_scalar(&mut self, k: &mut KernelBuilder) {
        let dt = self.dtype();
        with_dtype!(dt, T => {
            let v = constant::<T>(self);
            self.scalar_param::<T>(k, Element::to_bits(v));
        })
    }

    /// A built-in index: thread-varying ones only where allowed.
    fn index_leaf(&mut self, lv: &Leaves) -> Expr<u32> {
        let varying = [
            index::thread_rank(),
            index::lane(),
            index::warp_rank(),
            index::thread_rank() / 8u32,
        ];
        let uniform = [
            index::block_index(),
            index::grid_blocks(),
            index::block_threads(),
        ];
        let axis = self.rng.pick(&Axis::ALL);
        if lv.varying && self.rng.pct(70) {
            match self.rng.below(6) {
                4 => index::thread_idx(axis),
                5 => {
                    let [x, y, z] = index::grid::<3>();
                    [x, y, z][axis.index()].clone()
                }
                i => varying[i as usize].clone(),
            }
        } else {
            match self.rng.below(6) {
                3 => index::block_dim(axis),
                4 => index::grid_dim(axis) + index::block_idx(axis),
                5 => index::grid_size::<3>()[axis.index()].clone(),
                i => uniform[i as usize].clone(),
            }
        }
    }

    /// How uniform the thread's index along `axis` is (as the verifier counts it): the same
    /// for the block where the block does not extend along it, else constant over aligned
    /// runs of the largest power of two dividing the threads of the axes before it.
    pub fn axis_uni(&self, axis: Axis) -> u32 {
        let i = axis.index();
        if self.dims[i] == 1 {
            return BLOCK;
        }
        let run: u32 = self.dims[..i].iter().product();
        1 << run.trailing_zeros()
    }

    /// A u32 that every thread of the block agrees on: constants, scalars, the block's index
    /// and size, block-uniform loop counters. Also returns a bound on its value when known.
    pub fn block_u32(&mut self, k: &mut KernelBuilder, max: u32) -> Expr<u32> {
        let loops: Vec<_> = self
            .cx()
            .loops
            .iter()
            .filter(|(_, u)| *u >= BLOCK)
            .map(|(e, _)| e.clone())
            .collect();
        let var = self.uniform_u32_var();
        let e = match self.rng.weighted(&[
            30,
            30,
            20,
            if loops.is_empty() { 0 } else { 20 },
            if var.is_none() { 0 } else { 20 },
        ]) {
            0 => Expr::lit(self.rng.below(u64::from(max) + 1) as u32),
            1 => {
                let v = self.rng.below(u64::from(max) + 1) as u32;
                self.scalar_param::<u32>(k, u64::from(v)).expr()
            }
            2 => index::block_index() % (max.max(1)),
            3 => loops[self.rng.below(loops.len() as u64) as usize].clone() % max.max(1),
            _ => var.unwrap_or_else(|| Expr::lit(0)) % max.max(1),
        };
        // Shared nodes keep the value (and so the bound) and the uniformity.
        self.shared(e)
    }

    /// A condition and its uniformity, at least `level` (the verifier's count).
    pub fn uniform_cond(&mut self, k: &mut KernelBuilder, level: u32) -> (Expr<bool>, u32) {
        let (c, u) = self.uniform_cond_tree(k, level);
        // `and`, `or` and `^` of one predicate agree where it does.
        (self.shared_cond(c), u)
    }

    /// The condition of [`Gen::uniform_cond`] before any sharing.
    fn uniform_cond_tree(&mut self, k: &mut KernelBuilder, level: u32) -> (Expr<bool>, u32) {
        let t = self.t;
        if level >= BLOCK || level >= t {
            let a = self.block_u32(k, 8);
            let b = Expr::lit(self.rng.below(6) as u32);
            let c = match self.rng.below(4) {
                0 => a.lt(b),
                1 => a.ge(b),
                2 => a.eq(b),
                _ => a.ne(b),
            };
            return (c, BLOCK);
        }
        if level >= WARP && self.rng.pct(50) {
            let w = index::warp_rank();
            let c = Expr::lit(self.rng.below(u64::from(t.div_ceil(32))) as u32);
            return (if self.rng.pct(50) { w.eq(c) } else { w.gt(c) }, WARP);
        }
        let axis = self.rng.pick(&[Axis::Y, Axis::Z]);
        let u = self.axis_uni(axis);
        if level > THREAD && u >= level && u < BLOCK && self.rng.pct(40) {
            // A thread's row (or layer) agrees over aligned runs of `u` threads.
            let c = Expr::lit(self.rng.below(u64::from(self.dims[axis.index()])) as u32);
            let i = index::thread_idx(axis);
            return (if self.rng.pct(50) { i.lt(c) } else { i.eq(c) }, u);
        }
        if level > THREAD {
            // thread_rank / 2^j agrees over aligned runs of 2^j threads.
            let j = level.min(32).trailing_zeros().max(1);
            let d = 1u32 << j;
            let groups = t.div_ceil(d).max(1);
            let c = Expr::lit(self.rng.below(u64::from(groups)) as u32);
            let q = if self.rng.pct(50) {
                index::thread_rank() / d
            } else {
                index::thread_rank() >> j
            };
            let cond = match self.rng.below(3) {
                0 => q.lt(c),
                1 => q.eq(c),
                _ => (q & 1u32).eq(0u32),
            };
            return (cond, d);
        }
        let lv = Leaves::varying();
        let c = match self.rng.below(4) {
            0 => index::thread_rank().lt(self.rng.below(u64::from(t) + 1) as u32),
            1 => (index::lane() % 3u32).eq(self.rng.below(3) as u32),
            _ => self.cond(&lv, 2),
        };
        (c, THREAD)
    }

    /// A read of a shared array holding values from its last write phase, if any is readable.
    pub fn shared_read(&mut self, lv: &Leaves) -> Option<AnyExpr> {
        let ready: Vec<usize> = (0..self.arrays.len())
            .filter(|&i| self.arrays[i].ready)
            .collect();
        if ready.is_empty() {
            return None;
        }
        let a = self.arrays[self.rng.pick(&ready)].clone();
        let (mul, add, writers) = a.pattern;
        let c = self.rng.below(u64::from(writers)) as u32;
        let base = if lv.item && self.rng.pct(40) {
            index::thread_rank() + index::item()
        } else {
            index::thread_rank()
        };
        let w = (base + c) % writers;
        if let Some(view) = a.view.as_ref().filter(|_| a.full && self.rng.pct(60)) {
            // Every byte below `len` elements is written: any element of the view there.
            let within = a.len * a.dt.bytes() / view.dt.bytes();
            return Some(with_dtype!(view.dt, V => {
                let v = V::of_array(&view.h)?;
                V::expr(v.read((w * mul + add) % within))
            }));
        }
        let mut idx = (w * mul + add) % a.len;
        if self.rng.pct(3) && self.unchecked && self.feature(Defect::SharedArrayOverflow) {
            idx = idx + a.past_end;
        }
        if let Some(nd) = a.nd.filter(|_| self.rng.pct(70)) {
            return Some((nd.read)(idx));
        }
        Some(with_dtype!(a.dt, T => T::expr(T::of_array(&a.h)?.read(idx))))
    }
}

/// A scalar's value as an expression.
pub(crate) fn scalar_expr(h: &crate::fuzz::types::AnyScalar) -> AnyExpr {
    use crate::fuzz::types::AnyScalar as S;
    match h {
        S::I8(s) => AnyExpr::I8(s.expr()),
        S::I16(s) => AnyExpr::I16(s.expr()),
        S::I32(s) => AnyExpr::I32(s.expr()),
        S::I64(s) => AnyExpr::I64(s.expr()),
        S::U8(s) => AnyExpr::U8(s.expr()),
        S::U16(s) => AnyExpr::U16(s.expr()),
        S::U32(s) => AnyExpr::U32(s.expr()),
        S::U64(s) => AnyExpr::U64(s.expr()),
        S::F32(s) => AnyExpr::F32(s.expr()),
        S::F64(s) => AnyExpr::F64(s.expr()),
    }
}

/// Comparison `cmp` (0..6: `==`, `!=`, `<`, `<=`, `>`, `>=`) of `a` and `b`.
fn comparison<T: Element>(cmp: u64, a: Expr<T>, b: Expr<T>) -> Expr<bool> {
    match cmp {
        0 => a.eq(b),
        1 => a.ne(b),
        2 => a.lt(b),
        3 => a.le(b),
        4 => a.gt(b),
        _ => a.ge(b),
    }
}

#[test]
fn generated_kernels_share_subtrees_many_times_over() {
    // Paths from each node down to the leaves: 1 for a leaf, the sum of its operands'
    // otherwise (children come before their parents in the arena).
    let mut many = 0;
    for i in 0..1500u64 {
        let case = super::generate(&super::Spec::of(i.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        let nodes = case.ir.exprs.nodes();
        let mut paths = vec![0u64; nodes.len()];
        for (j, n) in nodes.iter().enumerate() {
            let below = n.kind.children().map(|c| paths[c.index()]);
            paths[j] = below.fold(0, u64::saturating_add).max(1);
        }
        many += usize::from(paths.iter().any(|&p| p >= 1 << 32));
    }
    assert!(
        many >= 30,
        "{many} kernels in 1500 hold an expression of 2^32 paths or more"
    );
}

//! The `f64` functions of the library, written over primitive expressions.
//!
//! PTX has no `f64` transcendental instruction, so each function is built from `add`, `mul`,
//! `fma`, correctly rounded `div`/`sqrt`/`rcp`, conversions and bit operations. Accuracy comes
//! from carrying the intermediate results that decide the last bit as unevaluated sums of
//! two doubles (`hi + lo`, "double-double"): exact products by FMA (`p = a b`,
//! `e = fma(a, b, -p)`), exact sums by the two-sum algorithm, and the reductions' constants
//! split into a leading part with trailing zero bits (so that its products with a small
//! integer are exact) and corrections.
//!
//! Polynomial coefficients are near-minimax fits (Chebyshev interpolation at 120 digits) of
//! the function over the reduced range each comment names, highest degree first.

use super::{Cold, Func, Template};
use crate::ir::expr::{BinaryOp, Expr, UnaryOp};

type D = Expr<f64>;
type L = Expr<u64>;
type U = Expr<u32>;
type I = Expr<i32>;
type B = Expr<bool>;

/// Every `f64` template.
pub(super) fn templates() -> Vec<(Func, Template)> {
    let x = || D::arg(0);
    let y = || D::arg(1);
    let un = |op: UnaryOp, f: fn(&D, &mut Cold) -> D| {
        let mut cold = Cold::default();
        let root = f(&x(), &mut cold);
        (Func::Unary(op), Template::new(&root, &cold.0))
    };
    let bin = |op: BinaryOp, root: D| (Func::Binary(op), Template::new(&root, &[]));
    vec![
        un(UnaryOp::Rsqrt, |x, _| rsqrt(x)),
        un(UnaryOp::Exp, |x, _| exp(x)),
        un(UnaryOp::Exp2, |x, _| exp2(x)),
        un(UnaryOp::Exp10, |x, _| exp10(x)),
        un(UnaryOp::Ln, |x, _| log(x, Base::E)),
        un(UnaryOp::Log2, |x, _| log(x, Base::Two)),
        un(UnaryOp::Log10, |x, _| log(x, Base::Ten)),
        un(UnaryOp::Sin, |x, c| trig(x, Trig::Sin, c)),
        un(UnaryOp::Cos, |x, c| trig(x, Trig::Cos, c)),
        un(UnaryOp::Tan, |x, c| trig(x, Trig::Tan, c)),
        un(UnaryOp::Asin, |x, _| asin(x)),
        un(UnaryOp::Acos, |x, _| acos(x)),
        un(UnaryOp::Atan, |x, _| atan(x)),
        un(UnaryOp::Sinh, |x, _| sinh(x)),
        un(UnaryOp::Cosh, |x, _| cosh(x)),
        un(UnaryOp::Tanh, |x, _| tanh(x)),
        un(UnaryOp::Expm1, |x, _| expm1(x)),
        un(UnaryOp::Log1p, |x, _| log1p(x)),
        un(UnaryOp::Cbrt, |x, _| cbrt(x)),
        un(UnaryOp::Erf, |x, _| erf(x)),
        un(UnaryOp::Erfc, |x, _| erfc(x)),
        bin(BinaryOp::Atan2, atan2(&x(), &y())),
        bin(BinaryOp::Hypot, hypot(&x(), &y())),
        bin(BinaryOp::Pow, pow(&x(), &y())),
        bin(BinaryOp::Powi, powi(&x(), &I::arg(1))),
    ]
}

// ---- helpers ----

/// `c[0] * x^n + .. + c[n]` by Horner's rule with FMAs.
fn horner(x: &D, c: &[f64]) -> D {
    let mut acc = D::lit(c[0]);
    for &ci in &c[1..] {
        acc = acc.fma(x, ci);
    }
    acc
}

/// `a + b` as `(s, e)` with `s + e` exact, for `|a| >= |b|` or `a = 0`.
fn fast_two_sum(a: &D, b: &D) -> (D, D) {
    let s = a + b;
    let e = b - (s.clone() - a);
    (s, e)
}

/// `a + b` as `(s, e)` with `s + e` exact, for any finite `a` and `b`.
fn two_sum(a: &D, b: &D) -> (D, D) {
    let s = a + b;
    let bb = s.clone() - a;
    let e = (a - (s.clone() - bb.clone())) + (b - bb);
    (s, e)
}

/// `a b` as `(p, e)` with `p + e` exact (barring underflow).
fn two_prod(a: &D, b: &D) -> (D, D) {
    let p = a * b;
    let e = a.fma(b, -p.clone());
    (p, e)
}

/// `(n_hi + n_lo) / (d_hi + d_lo)` as an unevaluated sum, to about 2^-100 relative, for
/// `d_lo` below an ulp of `d_hi`.
fn div_dd(n: (&D, &D), d: (&D, &D)) -> (D, D) {
    let q = n.0 / d.0;
    let res = (-q.clone()).fma(d.0, n.0);
    let lo = (res + n.1 - q.clone() * d.1) / d.0;
    (q, lo)
}

/// `2^n` for `n` in `[-1022, 1023]`.
fn pow2i(n: &I) -> D {
    D::from_bits((n + 1023i32).cast::<u64>() << 52u32)
}

/// `x * 2^n` for `n` in `[-2044, 2046]`, rounded once (into subnormals too).
fn scale(x: &D, n: &I) -> D {
    let half = n.clone() >> 1u32;
    let rest = n - half.clone();
    x * pow2i(&half) * pow2i(&rest)
}

/// The sign bit of `x`.
fn sign_of(x: &D) -> L {
    x.to_bits() & 0x8000_0000_0000_0000u64
}

/// `mag` (non-negative) with the sign bit `sign`.
fn signed(mag: &D, sign: &L) -> D {
    D::from_bits(mag.to_bits() | sign.clone())
}

/// Whether `x` is ±inf.
fn is_inf(x: &D) -> B {
    x.abs().eq(f64::INFINITY)
}

/// `x` unless it is NaN, then `v`.
fn nan_or(x: &D, v: D) -> D {
    x.is_nan().select(x, v)
}

// ---- exponentials ----

/// ln 2 with 42 significant bits (its products with integers below 2^11 are exact), then
/// the rest in two parts.
const LN2_HI: f64 = 0.6931471805598903;
const LN2_LO: f64 = 5.497923018708371e-14;
const LN2_LO2: f64 = 1.94704509238075e-31;
/// ln 2 as a double-double.
const LN2: (f64, f64) = (std::f64::consts::LN_2, 2.3190468138462996e-17);
/// log2(e) as a double-double.
const LOG2_E: (f64, f64) = (std::f64::consts::LOG2_E, 2.0355273740931033e-17);
/// ln 10 as a double-double.
const LN10: (f64, f64) = (std::f64::consts::LN_10, -2.1707562233822494e-16);
/// `(e^r - 1 - r) / r^2` on `[-0.3466, 0.3466]` (error 1.4e-18).
const EXP_P: [f64; 11] = [
    2.0914685161418067e-09,
    2.5105214474751413e-08,
    2.7557273647451087e-07,
    2.7557255406285044e-06,
    2.480158732554432e-05,
    0.00019841269874815834,
    0.001388888888888375,
    0.008333333333326136,
    0.04166666666666667,
    0.1666666666666667,
    0.5,
];

/// `h + l = k ln2 + r`: `(k, r_hi, r_lo)` with `|r| <= ln2/2` (barely more) and
/// `r_hi + r_lo` exact to about 2^-100, for `|h| <= 746` and `|l|` below an ulp of `h`.
fn exp_reduce(h: &D, l: Option<&D>) -> (D, D, D) {
    let k = (h * std::f64::consts::LOG2_E).round_even();
    // Exact: k has at most 11 bits, LN2_HI 42, and h is within a factor 2 of k LN2_HI.
    let hi = (-k.clone()).fma(LN2_HI, h);
    let (t, te) = two_prod(&k, &D::lit(LN2_LO));
    let (r, re) = two_sum(&hi, &(-t));
    let mut lo = re - te - k.clone() * LN2_LO2;
    if let Some(l) = l {
        lo = lo + l;
    }
    let (r, lo) = fast_two_sum(&r, &lo);
    (k, r, lo)
}

/// `e^(r_hi + r_lo) - 1 = r_hi + tail`: the tail, for `|r| <= 0.35`.
fn expm1_tail(rh: &D, rl: &D) -> D {
    let p = horner(rh, &EXP_P);
    // e^(rh + rl) - 1 = rh + rh^2 p + rl (1 + rh) + O(rl^2).
    (rh * rh.clone()).fma(p, rl.fma(rh, rl))
}

/// `e^(r_hi + r_lo) = v_hi + v_lo` (`v_lo` below an ulp of `v_hi`), for `|r| <= 0.35`.
fn exp_core(rh: &D, rl: &D) -> (D, D) {
    let tail = expm1_tail(rh, rl);
    let (v, ve) = fast_two_sum(&D::lit(1.0), rh);
    fast_two_sum(&v, &(ve + tail))
}

/// `e^(h + l)`, for `h` clamped to `[-746, 710]` (past which the result is 0 or inf) and `l`
/// below an ulp of `h`; NaN aside.
fn exp_dd(h: &D, l: Option<&D>) -> D {
    let (k, rh, rl) = exp_reduce(h, l);
    let (v, vl) = exp_core(&rh, &rl);
    scale(&(v + vl), &k.cast::<i32>())
}

/// `h` clamped to the range where `e^h` is finite and not 0.
fn exp_clamp(h: &D) -> D {
    h.max(-746.0f64).min(710.0f64)
}

fn exp(x: &D) -> D {
    nan_or(x, exp_dd(&exp_clamp(x), None))
}

fn exp2(x: &D) -> D {
    let xc = x.max(-1076.0f64).min(1025.0f64);
    let k = xc.round_even();
    // 2^f = e^(f ln2), with f ln2 carried as a double-double.
    let f = xc - k.clone();
    let (h, he) = two_prod(&f, &D::lit(LN2.0));
    let l = f.fma(LN2.1, he);
    let (v, vl) = exp_core(&h, &l);
    nan_or(x, scale(&(v + vl), &k.cast::<i32>()))
}

fn exp10(x: &D) -> D {
    let xc = x.max(-324.0f64).min(309.0f64);
    let (h, he) = two_prod(&xc, &D::lit(LN10.0));
    let l = xc.fma(LN10.1, he);
    let h = exp_clamp(&h);
    nan_or(x, exp_dd(&h, Some(&l)))
}

// ---- logarithms ----

/// `(2 atanh(s) - 2s) / s^3` in `z = s^2` on `[0, 0.0295]` (error 2.1e-18).
const LOG_Q: [f64; 8] = [
    0.13089629160674623,
    0.13268485680654427,
    0.1538625044794019,
    0.18181795442371984,
    0.2222222239356661,
    0.2857142857079543,
    0.4000000000000089,
    0.6666666666666666,
];

/// A logarithm's base.
#[derive(Clone, Copy)]
enum Base {
    E,
    Two,
    Ten,
}

/// `x = 2^e (1 + f)` with `1 + f` in `[sqrt(1/2), sqrt(2))`, for `x` positive and finite
/// (subnormals too): `(e, f)`, `f` exact.
fn log_reduce(x: &D) -> (D, D) {
    let tiny = x.lt(f64::MIN_POSITIVE);
    let xs = tiny.select(x * 18_014_398_509_481_984.0f64, x);
    let bias = tiny.select(54i32, 0i32);
    // The mantissa moved to [sqrt(1/2), sqrt(2)) by an offset on the bits.
    const SQRT_HALF: u64 = 0x3fe6_a09e_667f_3bcd;
    let ix = xs.to_bits() + (0x3ff0_0000_0000_0000u64 - SQRT_HALF);
    let e = (ix.clone() >> 52u32).cast::<i32>() - 1023i32 - bias;
    let m = D::from_bits((ix & 0x000f_ffff_ffff_ffffu64) + SQRT_HALF);
    (e.cast::<f64>(), m - 1.0f64)
}

/// `ln(1 + f) - f` for `f` in `[sqrt(1/2) - 1, sqrt(2) - 1]`, to about 2^-58 of `ln(1 + f)`:
/// with `s = f / (2 + f)`, `ln(1 + f) = f - f^2/2 + s (f^2/2 + s^2 Q(s^2))`.
fn log1p_tail(f: &D) -> D {
    let s = f / (f + 2.0f64);
    let z = s.clone() * s.clone();
    let r = z.clone() * horner(&z, &LOG_Q);
    let hf = f * 0.5f64;
    let (hfsq, hfsq_lo) = two_prod(&hf, f);
    s.fma(hfsq.clone() + r, -hfsq) - hfsq_lo
}

/// `log_b(2^e (1 + f))` where `ln(1 + f) = f + t`, `c` a small correction to add to
/// `ln(1 + f)`.
fn log_of(e: &D, f: &D, t: D, base: Base) -> D {
    match base {
        Base::E => {
            // e ln2 = e LN2_HI (exact) + e LN2_LO; |e LN2_HI| >= |f| unless e = 0.
            let (w, we) = fast_two_sum(&(e * LN2_HI), f);
            w + (we + e.fma(LN2_LO, t))
        }
        Base::Two => {
            let (p, pe) = two_prod(f, &D::lit(LOG2_E.0));
            let lo = t.fma(LOG2_E.0, f.fma(LOG2_E.1, pe));
            let (w, we) = fast_two_sum(e, &p);
            w + (we + lo)
        }
        Base::Ten => {
            const LOG10_E: (f64, f64) = (std::f64::consts::LOG10_E, 1.098319650216765e-17);
            const LG2_HI: f64 = 0.30102999566395283;
            const LG2_LO: f64 = 2.8363394551044964e-14;
            let (p, pe) = two_prod(f, &D::lit(LOG10_E.0));
            let lo = t.fma(LOG10_E.0, f.fma(LOG10_E.1, pe));
            let (w, we) = fast_two_sum(&(e * LG2_HI), &p);
            w + (we + e.fma(LG2_LO, lo))
        }
    }
}

/// The logarithm's value where `x` is positive and finite; -inf at 0, +inf at +inf, NaN
/// below 0 and at NaN.
fn log_special(x: &D, v: D) -> D {
    let special = x.eq(0.0f64).select(
        f64::NEG_INFINITY,
        x.eq(f64::INFINITY).select(f64::INFINITY, f64::NAN),
    );
    x.gt(0.0f64).and(&x.lt(f64::INFINITY)).select(v, special)
}

fn log(x: &D, base: Base) -> D {
    let (e, f) = log_reduce(x);
    let t = log1p_tail(&f);
    log_special(x, log_of(&e, &f, t, base))
}

// ---- powers ----

/// 2/3 as a double-double.
const TWO_THIRDS: (f64, f64) = (0.6666666666666666, 3.700743415417188e-17);

/// `ln(a)` as a double-double to about 2^-66 relative, for `a` positive and finite:
/// `ln(1 + f) = 2s + (2/3) s^3 + s^5 Q'(s^2)` with `s = f / (2 + f)`, the first two terms
/// in double-double.
fn ln_dd(a: &D) -> (D, D) {
    let (e, f) = log_reduce(a);
    // 2 + f and s = f / (2 + f) as double-doubles.
    let (d, dl) = fast_two_sum(&D::lit(2.0), &f);
    let (s, sl) = div_dd((&f, &D::lit(0.0)), (&d, &dl));
    // z = s^2, c = s^3, u = (2/3) s^3.
    let (z, ze) = two_prod(&s, &s);
    let zl = (s.clone() * 2.0f64).fma(&sl, ze);
    let (c, ce) = two_prod(&s, &z);
    let cl = s.fma(&zl, sl.fma(&z, ce));
    let (u, ue) = two_prod(&c, &D::lit(TWO_THIRDS.0));
    let ul = c.fma(TWO_THIRDS.1, cl.fma(TWO_THIRDS.0, ue));
    // The rest of the series: s^5 (Q(z) - 2/3) / z.
    let q = horner(&z, &LOG_Q[..LOG_Q.len() - 1]);
    let rest = (c * z).fma(q, ul);
    let s2 = s * 2.0f64;
    let (w, we) = fast_two_sum(&s2, &u);
    let lo = we + sl.fma(2.0f64, rest);
    // Plus e ln2, with e LN2_HI exact.
    let (h, he) = fast_two_sum(&(e.clone() * LN2_HI), &w);
    let lo = he + e.fma(LN2_LO, lo);
    fast_two_sum(&h, &lo)
}

/// `|x|^y`, with the special cases of `|x|` (0, 1, inf) and infinite `y`; NaN arguments
/// aside.
fn pow_abs(x: &D, y: &D) -> D {
    let a = x.abs();
    let finite = a.gt(0.0f64).and(&a.lt(f64::INFINITY));
    let (lh, ll) = ln_dd(&finite.select(a.clone(), 1.0f64));
    let lh = finite.select(lh, a.eq(0.0f64).select(f64::NEG_INFINITY, f64::INFINITY));
    // y ln|x| as a double-double, clamped to where e^h is finite and not 0.
    let (h, he) = two_prod(y, &lh);
    let l = y.fma(ll, he);
    let hc = exp_clamp(&h);
    let l = h.eq(&hc).select(l, 0.0f64);
    let v = exp_dd(&hc, Some(&l));
    // h is NaN only for |x| = 1 and infinite y (0 * inf): the result is 1.
    h.is_nan().select(1.0f64, v)
}

fn pow(x: &D, y: &D) -> D {
    let mag = pow_abs(x, y);
    let ay = y.abs();
    let integer = y.round_even().eq(y);
    // Integers past 2^53 are even.
    let odd = integer
        .and(&ay.lt(9_007_199_254_740_992.0f64))
        .and(&(y.cast::<i64>() & 1i64).ne(0i64));
    let negative = sign_of(x).ne(0u64);
    let v = signed(
        &mag,
        &negative.and(&odd).select(0x8000_0000_0000_0000u64, 0u64),
    );
    // A negative finite base and a finite non-integer exponent.
    let fraction = (!integer).and(&ay.lt(f64::INFINITY));
    let invalid = x.lt(0.0f64).and(&x.gt(f64::NEG_INFINITY)).and(&fraction);
    let v = invalid.select(f64::NAN, v);
    let v = x.is_nan().or(&y.is_nan()).select(x + y.clone(), v);
    y.eq(0.0f64).or(&x.eq(1.0f64)).select(1.0f64, v)
}

fn powi(x: &D, n: &I) -> D {
    let mag = pow_abs(x, &n.cast::<f64>());
    let odd = (n & 1i32).ne(0i32);
    let negative = sign_of(x).ne(0u64);
    let v = signed(
        &mag,
        &negative.and(&odd).select(0x8000_0000_0000_0000u64, 0u64),
    );
    let v = nan_or(x, v);
    n.eq(0i32).select(1.0f64, v)
}

// ---- roots ----

/// `1 / sqrt(x)`: the correctly rounded square root and reciprocal (within 1.5 ulp), then a
/// Newton step on the residual `1 - x r^2`, with `x r` an exact product (`x r^2` alone
/// overflows for subnormal `x`).
fn rsqrt(x: &D) -> D {
    let r = x.sqrt().recip();
    let (p, pe) = two_prod(x, &r);
    let e = (-p).fma(&r, 1.0f64) - pe * r.clone();
    let better = (r.clone() * 0.5f64).fma(&e, &r);
    // x = 0, inf or negative: r is already exact (inf, 0, NaN).
    e.is_nan().select(r, better)
}

// ---- trigonometry ----

/// `(sin r - r) / r^3` in `z = r^2` on `[0, (π/4)^2]` (error 1.2e-20).
const SIN_S: [f64; 7] = [
    -7.586697117706918e-13,
    1.6058531618986147e-10,
    -2.5052106232447578e-08,
    2.7557319219339167e-06,
    -0.00019841269841265065,
    0.008333333333333331,
    -0.16666666666666666,
];
/// `(cos r - 1 + r^2/2) / r^4` in `z` on `[0, (π/4)^2]` (error 6.4e-22).
const COS_C: [f64; 7] = [
    4.7458719020432915e-14,
    -1.1470460887609959e-11,
    2.087675579108042e-09,
    -2.7557319221402824e-07,
    2.4801587301584645e-05,
    -0.0013888888888888887,
    0.041666666666666664,
];
/// π/2 in three parts: `x - j (p1 + p2 + p3)` in double-double is exact to about 2^-128
/// for `|j| <= 2^30`.
const PIO2_PARTS: [f64; 3] = [
    std::f64::consts::FRAC_PI_2,
    6.123233995736766e-17,
    -1.4973849048591698e-33,
];
/// Past this, arguments are reduced by Payne–Hanek.
const TRIG_FAST_MAX: f64 = 1_073_741_824.0;
/// The bits of 2/π after the binary point, 64 at a time: enough for every double.
const TWO_OVER_PI: [u64; 19] = [
    0xa2f9_836e_4e44_1529,
    0xfc27_57d1_f534_ddc0,
    0xdb62_9599_3c43_9041,
    0xfe51_63ab_debb_c561,
    0xb724_6e3a_424d_d2e0,
    0x0649_2eea_09d1_921c,
    0xfe1d_eb1c_b129_a73e,
    0xe882_35f5_2ebb_4484,
    0xe99c_7026_b45f_7e41,
    0x3991_d639_8353_39f4,
    0x9c84_5f8b_bdf9_283b,
    0x1ff8_97ff_de05_980f,
    0xef2f_118b_5a0a_6d1f,
    0x6d36_7ecf_27cb_09b7,
    0x4f46_3f66_9e5f_ea2d,
    0x7527_bac7_ebe5_f17b,
    0x3d07_39f7_8a52_92ea,
    0x6bfb_5fb1_1f8d_5d08,
    0x5603_3046_fc7b_6bab,
];

/// Which trigonometric function.
#[derive(Clone, Copy, PartialEq)]
enum Trig {
    Sin,
    Cos,
    Tan,
}

/// `a + b` with the carry out, for 64-bit words.
fn add_carry(a: &L, b: &L) -> (L, L) {
    let s = a + b;
    let c = s.lt(a).select(1u64, 0u64);
    (s, c)
}

/// `|x| = (4k + q) π/2 + r_hi + r_lo` with `|r| <= π/4`, for `|x|` at least 2^30 and finite,
/// by Payne–Hanek: the 53-bit mantissa times 256 bits of 2/π from the right place, modulo 4,
/// leaves 126 bits of the fraction.
fn payne_hanek(ax: &D) -> (U, D, D) {
    let b = ax.to_bits();
    // x = m 2^big with m a 53-bit integer; big >= -22 here.
    let big = (b.clone() >> 52u32).cast::<i32>() - 1075i32;
    let m = (b & 0x000f_ffff_ffff_ffffu64) | 0x0010_0000_0000_0000u64;
    // The bits of 2/π before word w only add multiples of 4 (w <= 15).
    let w = ((big.clone() - 2i32).max(0i32) >> 6u32).cast::<u32>();
    let sh = big - (w.clone() << 6u32).cast::<i32>();
    // TWO_OVER_PI[w + j] by a tree of selects on the bits of w.
    let bit = |k: u32| (w.clone() & (1u32 << k)).ne(0u32);
    let (b0, b1, b2, b3) = (bit(0), bit(1), bit(2), bit(3));
    let word = |j: usize| -> L {
        let leaf = |i: usize| L::lit(TWO_OVER_PI[i + j]);
        let pair = |i: usize| b0.select(leaf(i + 1), leaf(i));
        let quad = |i: usize| b1.select(pair(i + 2), pair(i));
        let oct = |i: usize| b2.select(quad(i + 4), quad(i));
        b3.select(oct(8), oct(0))
    };
    // P = m (W0 W1 W2 W3), a 309-bit integer in five words, lowest first.
    let prod = |j: usize| {
        let wj = word(j);
        (m.clone() * wj.clone(), m.clone().mul_hi(wj))
    };
    let hi3 = m.clone().mul_hi(word(3));
    let (lo2, hi2) = prod(2);
    let (lo1, hi1) = prod(1);
    let (lo0, hi0) = prod(0);
    let (p1, c1) = add_carry(&hi3, &lo2);
    let (p2, c2a) = add_carry(&hi2, &lo1);
    let (p2, c2b) = add_carry(&p2, &c1);
    let (p3, c3a) = add_carry(&hi1, &lo0);
    let (p3, c3b) = add_carry(&p3, &(c2a + c2b));
    let p4 = hi0 + c3a + c3b;
    // x 2/π = P 2^(sh - 256): the binary point is after bit 256 - sh of P. The 128 bits from
    // two above it down: P >> u, u = 130 - sh in [65, 152] (words 1 and 2 on).
    let u = (130i32 - sh).cast::<u32>();
    let two = u.ge(128u32);
    let r = u & 63u32;
    let shift2 = |a: &L, b: &L| {
        // (b:a) >> r, low word; r = 0 takes a whole.
        let high = r.eq(0u32).select(0u64, b.clone() << (64u32 - r.clone()));
        (a.clone() >> r.clone()) | high
    };
    let (l1, l2, l3) = (
        two.select(p2.clone(), p1),
        two.select(p3.clone(), p2),
        two.select(p4.clone(), p3),
    );
    let lo = shift2(&l1, &l2);
    let hi = shift2(&l2, &l3);
    // Round to the nearest quadrant: hi:lo holds 2 integer bits and 126 of fraction.
    let rounded = hi + (1u64 << 61);
    let q = (rounded.clone() >> 62u32).cast::<u32>();
    let fh = (rounded & ((1u64 << 62) - 1)).cast::<i64>() - (1i64 << 61);
    // The fraction, times 2^62, is fh + lo 2^-64: as a double-double.
    let a = fh.cast::<f64>();
    let rem = (fh - a.cast::<i64>()).cast::<f64>();
    let tail = rem + lo.cast::<f64>() * 2f64.powi(-64);
    let (fa, fb) = fast_two_sum(&a, &tail);
    let (fa, fb) = (fa * 2f64.powi(-62), fb * 2f64.powi(-62));
    // r = F π/2.
    let (rh, re) = two_prod(&fa, &D::lit(PIO2_PARTS[0]));
    let rl = fa.fma(PIO2_PARTS[1], fb.fma(PIO2_PARTS[0], re));
    let (rh, rl) = fast_two_sum(&rh, &rl);
    (q, rh, rl)
}

/// The function at `x = q π/2 + r_hi + r_lo`, `|r| <= π/4`.
fn trig_finish(q: &U, rh: &D, rl: &D, which: Trig) -> D {
    let (z, ze) = two_prod(rh, rh);
    // sin(rh + rl) = rh + (rh^3 S(z) + rl (1 - z/2)).
    let s_lo = (rh * z.clone()).fma(horner(&z, &SIN_S), rl - (z.clone() * 0.5f64) * rl);
    // cos(rh + rl) = (1 - z/2) + (z^2 C(z) - rh rl), 1 - z/2 as a double-double.
    let hz = z.clone() * 0.5f64;
    let w = D::lit(1.0) - hz.clone();
    let c_lo = ((D::lit(1.0) - w.clone()) - hz)
        + ((z.clone() * z.clone()).fma(horner(&z, &COS_C), -(rh * rl.clone())) - ze * 0.5f64);
    if which == Trig::Tan {
        let odd = (q & 1u32).ne(0u32);
        // tan = sin / cos, and -cos / sin an odd number of quadrants on.
        let (s, sl) = fast_two_sum(rh, &s_lo);
        let (c, cl) = fast_two_sum(&w, &c_lo);
        let (n_hi, n_lo) = (odd.select(&c, &s), odd.select(&cl, &sl));
        let (d_hi, d_lo) = (odd.select(s, c), odd.select(sl, cl));
        let (t, tl) = div_dd((&n_hi, &n_lo), (&d_hi, &d_lo));
        let t = t + tl;
        return odd.select(-t.clone(), t);
    }
    let q = match which {
        Trig::Cos => q + 1u32,
        _ => q.clone(),
    };
    let s = rh + s_lo;
    let c = w + c_lo;
    let v = (q.clone() & 1u32).ne(0u32).select(c, s);
    D::from_bits(v.to_bits() ^ ((q & 2u32).cast::<u64>() << 62u32))
}

fn trig(x: &D, which: Trig, cold: &mut Cold) -> D {
    let ax = x.abs();
    let j = (x * std::f64::consts::FRAC_2_PI).round_even();
    // Exact: x and j p1 are multiples of the ulp of the result's binade.
    let r1 = (-j.clone()).fma(PIO2_PARTS[0], x);
    let (p2, p2e) = two_prod(&j, &D::lit(PIO2_PARTS[1]));
    let (rh, re) = two_sum(&r1, &(-p2));
    let rl = re - p2e - j.clone() * PIO2_PARTS[2];
    let (rh, rl) = fast_two_sum(&rh, &rl);
    let fast = trig_finish(&j.cast::<i32>().cast::<u32>(), &rh, &rl, which);
    let slow = {
        let (q, rh, rl) = payne_hanek(&ax);
        let neg = x.lt(0.0f64);
        let q = neg.select((0u32 - q.clone()) & 3u32, q);
        let (rh, rl) = (neg.select(-rh.clone(), rh), neg.select(-rl.clone(), rl));
        is_inf(x).select(f64::NAN, trig_finish(&q, &rh, &rl, which))
    };
    let v = cold.select(&ax.gt(TRIG_FAST_MAX), slow, fast);
    if which == Trig::Cos {
        v
    } else {
        // sin(-0) = tan(-0) = -0.
        x.eq(0.0f64).select(x, v)
    }
}

// ---- inverse trigonometry ----

/// `(atan t - t) / t^3` in `z = t^2` on `[0, tan(π/8)^2]` (error 1.2e-18).
const ATAN_P: [f64; 12] = [
    0.016285756855221028,
    -0.034570561981427744,
    0.04551593220626549,
    -0.05230454270650244,
    0.05878928997834775,
    -0.06666424885738255,
    0.07692296375032143,
    -0.09090908753500877,
    0.11111111105155447,
    -0.14285714285659828,
    0.19999999999999804,
    -0.3333333333333333,
];
/// `(asin t - t) / t^3` in `z = t^2` on `[0, 1/4]` (error 9.8e-19).
const ASIN_P: [f64; 14] = [
    0.02961201126495512,
    -0.01924167174674304,
    0.019554513336123378,
    0.0030448799094556773,
    0.009319560794767446,
    0.009621842970100282,
    0.011566459612121669,
    0.01396378001220357,
    0.017352816540325496,
    0.02237215744350722,
    0.03038194447553234,
    0.044642857142551895,
    0.07500000000000118,
    0.16666666666666666,
];
/// π/2, π/4 and π as double-doubles.
const PIO2: (f64, f64) = (std::f64::consts::FRAC_PI_2, 6.123233995736766e-17);
const PIO4: (f64, f64) = (std::f64::consts::FRAC_PI_4, 3.061616997868383e-17);
const PI: (f64, f64) = (std::f64::consts::PI, 1.2246467991473532e-16);

/// `c - (a_hi + a_lo)` for a double-double constant `c`, as a double-double.
fn const_minus(c: (f64, f64), a: (&D, &D)) -> (D, D) {
    let (s, se) = two_sum(&D::lit(c.0), &(-a.0.clone()));
    (s, se + c.1 - a.1)
}

/// `atan(a_hi + a_lo)` for `a >= 0` (at most 2^60) as a double-double: reduced to
/// `|t| <= tan(π/8)` by `atan(a) = π/4 + atan((a - 1) / (a + 1)) = π/2 + atan(-1 / a)`.
fn atan_dd(ah: &D, al: &D) -> (D, D) {
    let far = ah.gt(2.414_213_562_373_095_f64);
    let mid = ah.gt(0.414_213_562_373_095_f64);
    // -1 / a: t_hi a_hi = -1 + e exactly.
    let th_far = -ah.recip();
    let e = th_far.fma(ah, 1.0f64);
    let tl_far = th_far.clone() * th_far.fma(al, e);
    // (a - 1) / (a + 1).
    let (n, ne) = two_sum(ah, &D::lit(-1.0));
    let (d, de) = two_sum(ah, &D::lit(1.0));
    let (th_mid, tl_mid) = div_dd((&n, &(ne + al)), (&d, &(de + al)));
    let th = far.select(th_far, mid.select(th_mid, ah));
    let tl = far.select(tl_far, mid.select(tl_mid, al));
    let y0h = far.select(PIO2.0, mid.select(PIO4.0, 0.0f64));
    let y0l = far.select(PIO2.1, mid.select(PIO4.1, 0.0f64));
    // atan(th + tl) = th + th^3 P(z) + tl / (1 + z).
    let z = th.clone() * th.clone();
    let poly = (th.clone() * z.clone()).fma(horner(&z, &ATAN_P), (-tl.clone()).fma(&z, &tl));
    let (w, we) = two_sum(&y0h, &th);
    (w, we + y0l + poly)
}

fn atan(x: &D) -> D {
    let a = x.abs().min(1.152_921_504_606_847e18f64);
    let (h, l) = atan_dd(&a, &D::lit(0.0));
    nan_or(x, signed(&(h + l), &sign_of(x)))
}

fn atan2(y: &D, x: &D) -> D {
    let (ax, ay) = (x.abs(), y.abs());
    let (hi, lo) = (ax.max(&ay), ax.min(&ay));
    let both_inf = lo.eq(f64::INFINITY);
    let ordinary = hi.gt(0.0f64).and(&hi.lt(f64::INFINITY));
    // t = lo / hi in [0, 1] as a double-double (0 when hi is 0 or inf, 1 when both are inf).
    let safe_hi = ordinary.select(hi.clone(), 1.0f64);
    let t = lo.clone() / safe_hi.clone();
    let tl = (-t.clone()).fma(&safe_hi, &lo) / safe_hi;
    let t = ordinary.select(t, both_inf.select(1.0f64, 0.0f64));
    let tl = ordinary.select(tl, 0.0f64);
    let (h, l) = atan_dd(&t, &tl);
    // Past the diagonal, π/2 - a; left of the y axis (-0 included), π - that.
    let steep = ay.gt(&ax);
    let (h2, l2) = const_minus(PIO2, (&h, &l));
    let (h, l) = (steep.select(h2, h), steep.select(l2, l));
    let left = sign_of(x).ne(0u64);
    let (h3, l3) = const_minus(PI, (&h, &l));
    let (h, l) = (left.select(h3, h), left.select(l3, l));
    let v = signed(&(h + l), &sign_of(y));
    x.is_nan().or(&y.is_nan()).select(x + y.clone(), v)
}

/// `asin(a_hi + a_lo) = h + l` for `|a| <= 1/2`.
fn asin_small(ah: &D, al: &D) -> (D, D) {
    let z = ah * ah.clone();
    // asin(ah + al) = ah + ah^3 P(z) + al / sqrt(1 - z), the last to first order.
    let tail = (ah * z.clone()).fma(horner(&z, &ASIN_P), al.fma(z.clone() * 0.5f64, al));
    (ah.clone(), tail)
}

/// For `a` in `[1/2, 1]`: `asin(sqrt((1 - a) / 2))` (which is `(π/2 - asin(a)) / 2` and
/// `acos(a) / 2`) as a double-double, NaN past 1.
fn asin_half(a: &D) -> (D, D) {
    // Exact: 1 - a by Sterbenz, the halving.
    let w = (D::lit(1.0) - a) * 0.5f64;
    let s = w.sqrt();
    let sl = (-s.clone()).fma(&s, &w) / (s.clone() * 2.0f64);
    let sl = s.gt(0.0f64).select(sl, 0.0f64);
    asin_small(&s, &sl)
}

fn asin(x: &D) -> D {
    let a = x.abs();
    let (h, l) = asin_half(&a);
    // π/2 - 2 asin(s).
    let (bh, bl) = const_minus(PIO2, (&(h * 2.0f64), &(l * 2.0f64)));
    let (sh, sl) = asin_small(&a, &D::lit(0.0));
    let big = a.gt(0.5f64);
    let v = big.select(bh, sh) + big.select(bl, sl);
    nan_or(x, signed(&v, &sign_of(x)))
}

fn acos(x: &D) -> D {
    let a = x.abs();
    // |x| <= 1/2: π/2 - asin(x).
    let (sh, sl) = asin_small(x, &D::lit(0.0));
    let (mh, ml) = const_minus(PIO2, (&sh, &sl));
    // Otherwise 2 asin(s) right of the axis, π - 2 asin(s) left of it.
    let (h, l) = asin_half(&a);
    let (h, l) = (h * 2.0f64, l * 2.0f64);
    let (lh, ll) = const_minus(PI, (&h, &l));
    let neg = x.lt(0.0f64);
    let (bh, bl) = (neg.select(lh, &h), neg.select(ll, &l));
    let big = a.gt(0.5f64);
    let v = big.select(bh, mh) + big.select(bl, ml);
    nan_or(x, v)
}

// ---- hyperbolic functions ----

/// `e^x - 1` as an unevaluated sum `2^k (w + lo)`: `(k, w, lo)`, for `x` in `[-40, 710]`.
fn expm1_parts(x: &D) -> (I, D, D) {
    let (k, rh, rl) = exp_reduce(x, None);
    let tail = expm1_tail(&rh, &rl);
    let n = k.cast::<i32>();
    // e^x - 1 = 2^k (e^r - 2^-k) = 2^k ((1 - 2^-k) + rh + tail); 1 - 2^-k is exact for
    // |k| <= 53, and below -40 the result is -1 whatever it is.
    let c = D::lit(1.0) - scale(&D::lit(1.0), &(-n.clone()));
    let (w, we) = two_sum(&c, &rh);
    // |w| >= 0.15 unless k = 0, where w = rh and the tail is below rh.
    let (w, lo) = fast_two_sum(&w, &(we + tail));
    (n, w, lo)
}

fn expm1(x: &D) -> D {
    let (n, w, lo) = expm1_parts(&x.max(-40.0f64).min(710.0f64));
    let v = scale(&(w + lo), &n);
    // Keeps -0 and NaN.
    x.eq(0.0f64).or(&x.is_nan()).select(x, v)
}

fn log1p(x: &D) -> D {
    // u = 1 + x exactly as u + d; ln(u + d) = ln(u) + d / u.
    let (u, d) = two_sum(&D::lit(1.0), x);
    let ok = u.gt(0.0f64).and(&u.lt(f64::INFINITY));
    let uc = ok.select(u.clone(), 1.0f64);
    let (e, f) = log_reduce(&uc);
    let c = ok.select(d / uc, 0.0f64);
    let t = log1p_tail(&f) + c;
    let v = log_special(&u, log_of(&e, &f, t, Base::E));
    // log1p(-0) = -0; below -1, NaN (1 + x may round to 0 just below -1).
    let v = x.lt(-1.0f64).select(f64::NAN, v);
    x.eq(0.0f64).or(&x.is_nan()).select(x, v)
}

/// `e^a / 2` for `a` in `[0, 711]`: `2^(k - 1) (v_hi + v_lo)`, without the overflow of
/// `e^a` alone.
fn half_exp(a: &D) -> D {
    let (k, rh, rl) = exp_reduce(a, None);
    let (v, vl) = exp_core(&rh, &rl);
    scale(&(v + vl), &(k.cast::<i32>() - 1i32))
}

/// The cut between the forms of `sinh` and `tanh`: past it, `e^-a` is below 2^-57 of `e^a`.
const HYP_BIG: f64 = 20.0;

/// `t / (t + 1)` for `t = t_hi + t_lo >= 0`, as a double-double.
fn ratio(th: &D, tl: &D) -> (D, D) {
    let (d, de) = two_sum(th, &D::lit(1.0));
    let (d, de) = fast_two_sum(&d, &(de + tl));
    div_dd((th, tl), (&d, &de))
}

/// `e^a - 1 = t_hi + t_lo` for `a` in `[0, 2 HYP_BIG]`.
fn expm1_dd(a: &D) -> (D, D) {
    let (n, w, lo) = expm1_parts(a);
    // Exact: 2^n is at most 2^58.
    let p = pow2i(&n);
    (w * p.clone(), lo * p)
}

fn sinh(x: &D) -> D {
    let a = x.abs();
    // sinh a = (t + t / (t + 1)) / 2 with t = e^a - 1: no cancellation.
    let (th, tl) = expm1_dd(&a.min(HYP_BIG));
    let (q, ql) = ratio(&th, &tl);
    let (s, se) = two_sum(&th, &q);
    let small = (s + (se + tl + ql)) * 0.5f64;
    let big = half_exp(&a.min(711.0f64));
    let v = a.gt(HYP_BIG).select(big, small);
    nan_or(x, signed(&v, &sign_of(x)))
}

fn cosh(x: &D) -> D {
    let a = x.abs().min(711.0f64);
    // (e^a + e^-a) / 2 = 2^(k-1) (v + 2^-2k / v).
    let (k, rh, rl) = exp_reduce(&a, None);
    let (v, vl) = exp_core(&rh, &rl);
    let n = k.cast::<i32>();
    let r = v.recip();
    let r = (-(r.clone() * r.clone())).fma(&vl, &r);
    let inv = scale(&r, &(n.clone() * -2i32).max(-1200i32));
    let v = scale(&(v + (vl + inv)), &(n - 1i32));
    nan_or(x, v)
}

fn tanh(x: &D) -> D {
    let a = x.abs().min(HYP_BIG);
    // tanh a = t / (t + 2) with t = e^(2a) - 1.
    let (th, tl) = expm1_dd(&(a * 2.0f64));
    let (d, de) = fast_two_sum(&D::lit(2.0).max(&th), &D::lit(2.0).min(&th));
    let (d, de) = (d, de + tl.clone());
    let (q, ql) = div_dd((&th, &tl), (&d, &de));
    nan_or(x, signed(&(q + ql), &sign_of(x)))
}

// ---- roots ----

fn cbrt(x: &D) -> D {
    let a = x.abs();
    // Scaled into [2^-420, 2^420] so that t^3 + 2a neither overflows nor loses bits.
    let tiny = a.lt(2f64.powi(-960));
    let huge = a.gt(2f64.powi(960));
    let scaled = tiny.select(
        a.clone() * 2f64.powi(540),
        huge.select(a.clone() * 2f64.powi(-540), a.clone()),
    );
    // An estimate within a few percent from the high word's bits divided by 3, then two
    // Halley steps (to about 45 bits), then a Newton step on the exact residual.
    let hi = (scaled.to_bits() >> 32u32).cast::<u32>();
    let third = (hi.mul_hi(0xaaaa_aaabu32) >> 1u32) + 715_094_163u32;
    let t = D::from_bits(third.cast::<u64>() << 32u32);
    let halley = |t: D| {
        let t3 = t.clone() * t.clone() * t.clone();
        t * ((t3.clone() + scaled.clone() * 2.0f64) / (t3 * 2.0f64 + scaled.clone()))
    };
    let t = halley(halley(t));
    // t^3 - a with t^2 = s + se exactly.
    let (s, se) = two_prod(&t, &t);
    let res = s.fma(&t, -scaled.clone()) + se.clone() * t.clone();
    let t = t.clone() - res / (s * 3.0f64);
    let t = tiny.select(
        t.clone() * 2f64.powi(-180),
        huge.select(t.clone() * 2f64.powi(180), t),
    );
    let v = signed(&t, &sign_of(x));
    let keep = x.eq(0.0f64).or(&is_inf(x)).or(&x.is_nan());
    keep.select(x, v)
}

fn hypot(x: &D, y: &D) -> D {
    let (ax, ay) = (x.abs(), y.abs());
    let (hi, lo) = (ax.max(&ay), ax.min(&ay));
    // Scaled by a power of 2 that puts hi in [1, 2): no overflow nor underflow on the way.
    let ok = hi.gt(0.0f64).and(&hi.lt(f64::INFINITY));
    let hs = ok.select(hi.clone(), 1.0f64);
    let tiny = hs.lt(f64::MIN_POSITIVE);
    let hn = tiny.select(hs.clone() * 18_014_398_509_481_984.0f64, hs);
    let e = (hn.to_bits() >> 52u32).cast::<i32>() - 1023i32 - tiny.select(54i32, 0i32);
    let (a, b) = (scale(&hi, &(-e.clone())), scale(&lo, &(-e.clone())));
    // a^2 + b^2 as a double-double, then its square root corrected once.
    let (p, pe) = two_prod(&a, &a);
    let (q, qe) = two_prod(&b, &b);
    let (s, se) = fast_two_sum(&p, &q);
    let sl = se + pe + qe;
    let r = s.sqrt();
    let res = (-r.clone()).fma(&r, &s) + sl;
    let r = r.clone() + res / (r * 2.0f64);
    let v = scale(&r, &e);
    let v = ok.select(v, hi.clone());
    // inf wins over NaN.
    let v = x.is_nan().or(&y.is_nan()).select(x + y.clone(), v);
    is_inf(x).or(&is_inf(y)).select(f64::INFINITY, v)
}

// ---- error functions ----

/// `erf(x) / x - 1` in `z = x^2` on `[0, 1]` (error 3.4e-23).
const ERF_G: [f64; 15] = [
    2.8067128195611264e-13,
    -6.1967364287877e-12,
    9.323723518153027e-11,
    -1.2277734486795524e-09,
    1.4806027146128752e-08,
    -1.636576864883207e-07,
    1.6462110782018636e-06,
    -1.4925650236967501e-05,
    0.00012055332978879483,
    -0.0008548327023403001,
    0.005223977625441674,
    -0.026866170645131218,
    0.11283791670955126,
    -0.37612638903183754,
    0.1283791670955126,
];
/// `erfc(x) e^(x^2)` in `t = x - mid` over `[0.5, 1]`, `[1, 2]` and `[2, 4]`, and
/// `erfc(x) e^(x^2) x` in `t = 1/x - mid` for `x` in `[4, 28]` (relative error below 1e-19),
/// without the constant terms (`ERFC_C0`, double-doubles).
const ERFC_POLY: [[f64; 19]; 4] = [
    [
        -1.0893460084653933e-08,
        3.8440854296923164e-08,
        -1.2917140532146867e-07,
        4.343336617209898e-07,
        -1.424091024831779e-06,
        4.543742378688938e-06,
        -1.4088463757257895e-05,
        4.237247983087553e-05,
        -0.00012335437532634406,
        0.00034675066294136494,
        -0.0009385120614756291,
        0.002437637360757152,
        -0.006051532297208567,
        0.014289198665935789,
        -0.03189726203968182,
        0.06679054252756873,
        -0.1298360619948811,
        0.2309581315512983,
        -0.3679726916557954,
    ],
    [
        -2.2549271605029615e-10,
        8.979502147040172e-10,
        -3.2242266939179187e-09,
        1.2288470192463931e-08,
        -4.5970329037492514e-08,
        1.6756034844048246e-07,
        -5.960819078215798e-07,
        2.066968881634488e-06,
        -6.9749916653834805e-06,
        2.2864312423194544e-05,
        -7.265892219254739e-05,
        0.0002233099443389221,
        -0.000661930066411685,
        0.0018861348770302729,
        -0.005145957547985023,
        0.013377340953066709,
        -0.03293090529956264,
        0.0761510398554774,
        -0.16362291773256007,
    ],
    [
        -3.32463503923892e-13,
        1.6647790649164353e-12,
        -6.555844952443731e-12,
        3.165046186861128e-11,
        -1.539306000137148e-10,
        7.206556491473509e-10,
        -3.312780752600577e-09,
        1.4977112890287265e-08,
        -6.646690382092543e-08,
        2.8926692938101366e-07,
        -1.2333677143104898e-06,
        5.146436493852072e-06,
        -2.0989464462229973e-05,
        8.355413963925958e-05,
        -0.00032412554449670324,
        0.0012230390523759822,
        -0.00447943101837258,
        0.01588437115987136,
        -0.05437226000717287,
    ],
    [
        8520.197625035187,
        -2976.1634081811626,
        -692.812286367726,
        778.9767337941606,
        -192.47609391742506,
        -66.09450384995299,
        67.29864051860385,
        -15.06212625233519,
        -8.754359432619912,
        7.520056128419431,
        -1.0267357659951528,
        -1.6959261740416343,
        1.0900110812290191,
        0.1003709193665346,
        -0.48610563650428834,
        0.183727192224481,
        0.1904323750351947,
        -0.23612104015535407,
        -0.0760092369600675,
    ],
];
const ERFC_C0: [(f64, f64); 4] = [
    (0.5069376502931449, -5.335681035986159e-17),
    (0.3215854164543175, 1.7007884531435613e-17),
    (0.17900115118138996, -5.552119524704471e-18),
    (0.5586003803040706, -1.8950781615042623e-17),
];
const ERFC_MID: [f64; 4] = [0.75, 1.5, 3.0, 0.14285714285714285];

/// `erf(x)` for `|x| <= 1`, as `x + x G(x^2)`: `(x, x G)`.
fn erf_small(x: &D) -> (D, D) {
    (x.clone(), x * horner(&(x * x.clone()), &ERF_G))
}

/// `erfc(a)` for `a` in `[1/2, 27.5]` (past 27.3 it underflows): `e^(-a^2)` (with `a^2` a
/// double-double) times the fit of the piece holding `a`, both double-doubles.
fn erfc_pos(a: &D) -> D {
    let (k1, k2, k3) = (a.lt(1.0f64), a.lt(2.0f64), a.lt(4.0f64));
    let pick = |v: [f64; 4]| -> D { k1.select(v[0], k2.select(v[1], k3.select(v[2], v[3]))) };
    // 1/a as a double-double.
    let u = a.recip();
    let ul = (-u.clone()).fma(a, 1.0f64) * u.clone();
    let far = !k3.clone();
    let t = far.select(u.clone(), a) - pick(ERFC_MID);
    let mut acc = pick(ERFC_POLY.map(|p| p[0]));
    for i in 1..19 {
        acc = acc.fma(&t, pick(ERFC_POLY.map(|p| p[i])));
    }
    let (m, me) = two_prod(&t, &acc);
    let (f, fe) = two_sum(&pick(ERFC_C0.map(|c| c.0)), &m);
    let fl = fe + me + pick(ERFC_C0.map(|c| c.1));
    // The last piece's fit is of erfc(x) e^(x^2) x: times 1/x.
    let (g, ge) = two_prod(&f, &u);
    let gl = ge + f.fma(&ul, fl.clone() * u);
    let (f, fl) = (far.select(g, f), far.select(gl, fl));
    // e^(-a^2) = 2^k (v + vl).
    let (h, he) = two_prod(a, a);
    let (k, rh, rl) = exp_reduce(&(-h), Some(&(-he)));
    let (v, vl) = exp_core(&rh, &rl);
    let (p, pe) = two_prod(&v, &f);
    let lo = pe + v.fma(&fl, vl * f);
    scale(&(p + lo), &k.cast::<i32>())
}

fn erf(x: &D) -> D {
    let a = x.abs();
    let (s, sl) = erf_small(&x.max(-1.0f64).min(1.0f64));
    let small = s + sl;
    let big = D::lit(1.0) - erfc_pos(&a.max(1.0f64).min(6.0f64));
    let v = a.le(1.0f64).select(small, signed(&big, &sign_of(x)));
    nan_or(x, v)
}

fn erfc(x: &D) -> D {
    let a = x.abs();
    let tail = erfc_pos(&a.max(0.5f64).min(27.5f64));
    // 1 - erf(x) for x in [-1, 1/2), with 1 - x exact as a double-double.
    let (s, sl) = erf_small(&x.max(-1.0f64).min(1.0f64));
    let (d, de) = two_sum(&D::lit(1.0), &(-s));
    let near = d + (de - sl);
    let v = x
        .lt(0.5f64)
        .select(x.ge(-1.0f64).select(near, D::lit(2.0) - tail.clone()), tail);
    nan_or(x, v)
}

//! The `f32` functions of the library, written over primitive expressions.
//!
//! Polynomial coefficients are near-minimax fits (Chebyshev interpolation at 40 digits) of
//! the function over the reduced range each comment names, highest degree first; the
//! reductions split constants into a leading part and a correction so that the leading
//! products are exact.

use super::{Cold, Func, Template};
use crate::ir::expr::{BinaryOp, Expr, UnaryOp};

type F = Expr<f32>;
type D = Expr<f64>;
type U = Expr<u32>;
type I = Expr<i32>;
type L = Expr<u64>;
type B = Expr<bool>;

/// Every `f32` template.
pub(super) fn templates() -> Vec<(Func, Template)> {
    let x = || F::arg(0);
    let y = || F::arg(1);
    let un = |op: UnaryOp, f: fn(&F, &mut Cold) -> F| {
        let mut cold = Cold::default();
        let root = f(&x(), &mut cold);
        (Func::Unary(op), Template::new(&root, &cold.0))
    };
    let bin = |op: BinaryOp, root: F| (Func::Binary(op), Template::new(&root, &[]));
    vec![
        un(UnaryOp::Rsqrt, |x, _| rsqrt(x)),
        un(UnaryOp::Exp, exp),
        un(UnaryOp::Exp2, |x, _| exp2(x)),
        un(UnaryOp::Exp10, |x, _| exp10(x)),
        un(UnaryOp::Expm1, |x, _| expm1(x)),
        un(UnaryOp::Ln, |x, _| log(x, Base::E)),
        un(UnaryOp::Log2, |x, _| log(x, Base::Two)),
        un(UnaryOp::Log10, |x, _| log(x, Base::Ten)),
        un(UnaryOp::Log1p, |x, _| log1p(x)),
        un(UnaryOp::Sin, |x, c| trig(x, Trig::Sin, c)),
        un(UnaryOp::Cos, |x, c| trig(x, Trig::Cos, c)),
        un(UnaryOp::Tan, |x, c| trig(x, Trig::Tan, c)),
        un(UnaryOp::Asin, |x, _| asin(x)),
        un(UnaryOp::Acos, |x, _| acos(x)),
        un(UnaryOp::Atan, |x, _| atan(x)),
        un(UnaryOp::Sinh, |x, _| sinh(x)),
        un(UnaryOp::Cosh, |x, _| cosh(x)),
        un(UnaryOp::Tanh, |x, _| tanh(x)),
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

/// `c[0] * x^n + .. + c[n]` by Horner's rule with FMAs (coefficients rounded to `f32`).
fn horner(x: &F, c: &[f64]) -> F {
    let mut acc = F::lit(c[0] as f32);
    for &ci in &c[1..] {
        acc = acc.fma(x, ci as f32);
    }
    acc
}

/// The same in `f64`.
fn horner64(x: &D, c: &[f64]) -> D {
    let mut acc = D::lit(c[0]);
    for &ci in &c[1..] {
        acc = acc.fma(x, ci);
    }
    acc
}

/// `2^n` for `n` in `[-126, 127]`.
fn pow2i(n: &I) -> F {
    F::from_bits((n + 127i32).cast::<u32>() << 23u32)
}

/// `x * 2^n` for `n` in `[-252, 254]`, rounded once (into subnormals too).
fn scale(x: &F, n: &I) -> F {
    let half = n.clone() >> 1u32;
    let rest = n - half.clone();
    x * pow2i(&half) * pow2i(&rest)
}

/// The sign bit of `x`.
fn sign_of(x: &F) -> U {
    x.to_bits() & 0x8000_0000u32
}

/// `mag` (non-negative) with the sign bit `sign`.
fn signed(mag: &F, sign: &U) -> F {
    F::from_bits(mag.to_bits() | sign.clone())
}

/// Whether `x` is ±inf.
fn is_inf(x: &F) -> B {
    x.abs().eq(f32::INFINITY)
}

/// `x` unless it is NaN, then `v`.
fn nan_or(x: &F, v: F) -> F {
    x.is_nan().select(x, v)
}

// ---- exponentials ----

/// `e^r - 1` on `[-ln2/2, ln2/2]`: `r + r^2 q(r)`.
const EXP_Q2: [f64; 6] = [
    0.000198938947563099,
    0.0013936265003445753,
    0.008333308232893674,
    0.041666440678883705,
    0.1666666668439774,
    0.5000000015964116,
];
/// `(e^r - 1 - r) / r^2` on `[-ln2/2, ln2/2]`, degree 4 (Chebyshev fit, 2^-27 absolute
/// in `e^r`).
const EXP_FAST_Q: [f64; 5] = [
    0.0013926183587713494,
    0.008363179052722578,
    0.041666554617204574,
    0.16666576989698775,
    0.5,
];
/// `(2^f - 1) / f` on `[-1/2, 1/2]`.
const EXP2_Q: [f64; 7] = [
    1.529718319387643e-05,
    0.0001546144469856913,
    0.001333350300114263,
    0.009618056678524637,
    0.05550410883140894,
    0.24022650922288757,
    0.6931471805601855,
];
const LN2_HI: f32 = std::f32::consts::LN_2;
const LN2_LO: f32 = -1.904_654_2e-9;

/// `x = j ln2 + r`: `(j, e^r - 1)` for `x` clamped to `[lo, 89]` (past 89, `e^x`
/// overflows; `lo` = -104 is where it reaches 0).
fn exp_reduce(x: &F, lo: f32) -> (F, F) {
    let xc = x.max(lo).min(89.0f32);
    let j = (xc.clone() * std::f32::consts::LOG2_E).round_even();
    em1_of(&j, &xc, (LN2_HI, LN2_LO))
}

/// `(j, e^r - 1)` for `r = x - j c`, `c` given as a leading part and a correction.
fn em1_of(j: &F, x: &F, c: (f32, f32)) -> (F, F) {
    let r = (-j.clone()).fma(c.0, x);
    let r = (-j.clone()).fma(c.1, r);
    let s = (r.clone() * r.clone()).fma(horner(&r, &EXP_Q2), r);
    (j.clone(), s)
}

/// `e^x`, NaN aside.
fn exp_core(x: &F) -> F {
    let (j, s) = exp_reduce(x, -104.0);
    scale(&(s + 1.0f32), &j.cast::<i32>())
}

/// `1.5 * 2^23`: `fl(v + MAGIC) - MAGIC` is `v` rounded to an integer (ties to even) for
/// `|v| < 2^22`, and the sum's low bits hold that integer in two's complement.
const ROUND_MAGIC: f32 = 12_582_912.0;

/// `e^x`. Where `|x| <= 86` (so `2^j` below is normal and so is the result) the integer
/// `j = round(x log2 e)` comes from the magic-number sum, whose bits shifted left by 23 are
/// `j` in the exponent field (the magic's own bits leave nothing there), and the result is
/// `e^r` with `j` added to its exponent: no conversion instruction and no clamp, which
/// matters where the function bounds the kernel. Larger arguments, and NaN, take the
/// clamped, twice-scaled path behind a branch.
fn exp(x: &F, cold: &mut Cold) -> F {
    let t = x.fma(std::f32::consts::LOG2_E, ROUND_MAGIC);
    let j = t.clone() - ROUND_MAGIC;
    let r = (-j.clone()).fma(LN2_HI, x);
    let r = (-j).fma(LN2_LO, r);
    // 1 + r (1 + r q(r)): the last two steps are FMAs.
    let p = r.fma(horner(&r, &EXP_FAST_Q).fma(&r, 1.0f32), 1.0f32);
    let fast = F::from_bits(p.to_bits() + (t.to_bits() << 23u32));
    cold.select(&!x.abs().le(86.0f32), nan_or(x, exp_core(x)), fast)
}

fn exp2(x: &F) -> F {
    let xc = x.max(-151.0f32).min(129.0f32);
    let j = xc.round_even();
    let f = xc - j.clone();
    let p = f.fma(horner(&f, &EXP2_Q), 1.0f32);
    nan_or(x, scale(&p, &j.cast::<i32>()))
}

/// `10^x` as `2^(x log2 10)` in `f64` ([`exp2_64`]; the product's error is below 2^-45
/// relative in the result for the `x` that matter), rounded once (into subnormals too).
fn exp10(x: &F) -> F {
    let z = x.max(-50.0f32).min(40.0f32).cast::<f64>() * std::f64::consts::LOG2_10;
    nan_or(x, exp2_64(&z).cast::<f32>())
}

/// `e^x - 1` in `f64` for `x` in `[-40, 180]`, to about 2^-45 relative. `x = j ln2 + r`
/// (`|r| <= ln2 / 2`, `ln2` in two parts, so `r` is exact to about 2^-60 relative);
/// `e^r - 1 = r + r^2 p(r)` by Taylor's coefficients to `r^11` (truncation below 2^-40
/// relative); then `2^j (1 + s) - 1` is one FMA `2^j s + (2^j - 1)`, whose addend is exact
/// for such `j` up to 53 and negligible past it. Near 0 the result is `s` itself, so no
/// cancellation costs bits anywhere.
fn expm1_64(x: &D) -> D {
    const LN2_HI64: f64 = 0.693_147_180_369_123_8;
    const LN2_LO64: f64 = 1.908_214_929_270_587_7e-10;
    let j = (x.clone() * std::f64::consts::LOG2_E).round_even();
    let r = (-j.clone()).fma(LN2_HI64, x);
    let r = (-j.clone()).fma(LN2_LO64, r);
    let mut c = [0.0f64; 10];
    let mut fact = 2.0f64;
    for (k, ck) in c.iter_mut().enumerate() {
        *ck = 1.0 / fact;
        fact *= (k + 3) as f64;
    }
    c.reverse();
    let s = (r.clone() * r.clone()).fma(horner64(&r, &c), r);
    let n = j.cast::<i64>();
    let p2 = D::from_bits((n.clone() + 1023i64).cast::<u64>() << 52u32);
    let big = p2.clone().fma(&s, p2 - 1.0f64);
    n.eq(0i64).select(s, big)
}

/// `e^x - 1` through [`expm1_64`], rounded once.
fn expm1(x: &F) -> F {
    // Below -30, e^x - 1 rounds to -1; past 89, e^x overflows f32.
    let v = expm1_64(&x.max(-30.0f32).min(89.0f32).cast::<f64>()).cast::<f32>();
    // Keeps -0 and NaN.
    x.eq(0.0f32).or(&x.is_nan()).select(x, v)
}

// ---- logarithms ----

/// `(ln(1 + f) - f) / f^2` on `[sqrt(1/2) - 1, sqrt(2) - 1]`.
const LN_P: [f64; 10] = [
    0.06778830873252085,
    -0.11573863143504695,
    0.11816737288292292,
    -0.12418791610422755,
    0.14231559773074556,
    -0.16667603666106054,
    0.20001477386218622,
    -0.2500001041761481,
    0.33333322500801127,
    -0.49999999943641416,
];

/// A logarithm's base.
#[derive(Clone, Copy)]
enum Base {
    E,
    Two,
    Ten,
}

/// `x = 2^e (1 + f)` with `1 + f` in `[sqrt(1/2), sqrt(2))`, for `x` positive and finite
/// (subnormals too): `(e, f)`.
fn log_reduce(x: &F) -> (F, F) {
    let tiny = x.lt(f32::MIN_POSITIVE);
    let xs = tiny.select(x * 8_388_608.0f32, x);
    let bias = tiny.select(23i32, 0i32);
    // musl's split: the mantissa moved to [sqrt(1/2), sqrt(2)).
    let ix = xs.to_bits() + (0x3f80_0000u32 - 0x3f35_04f3u32);
    let e = (ix.clone() >> 23u32).cast::<i32>() - 127i32 - bias;
    let m = F::from_bits((ix & 0x007f_ffffu32) + 0x3f35_04f3u32);
    (e.cast::<f32>(), m - 1.0f32)
}

/// `log_b(2^e (1 + f))` plus the small correction `c` to `ln(1 + f)`.
fn log_of(e: &F, f: &F, c: F, base: Base) -> F {
    // log_b(1 + f) = a (f + f^2 p(f)), a = 1 / ln b = a_hi + a_lo; log_b 2 = k_hi + k_lo.
    let (a, k_hi, k_lo) = match base {
        Base::E => (1.0f64, 0.693_145_75_f32, 1.428_606_8e-6_f32),
        Base::Two => (std::f64::consts::LOG2_E, 1.0, 0.0),
        Base::Ten => (std::f64::consts::LOG10_E, 0.301_025_4, 4.605_039e-6),
    };
    let p: Vec<f64> = LN_P.iter().map(|c| c * a).collect();
    let a_hi = a as f32;
    let a_lo = (a - f64::from(a_hi)) as f32;
    // The small terms first, the leading f a_hi last: one rounding of the sum.
    let lin = f.fma(a_lo, c * a_hi);
    let tail = (f * f.clone()).fma(horner(f, &p), lin);
    let v = f.fma(a_hi, tail);
    match base {
        Base::Two => e + v,
        _ => e.fma(k_hi, e.fma(k_lo, v)),
    }
}

/// The logarithm's value where `x` is positive and finite; -inf at 0, +inf at +inf, NaN
/// below 0 and at NaN.
fn log_special(x: &F, v: F) -> F {
    let special = x.eq(0.0f32).select(
        f32::NEG_INFINITY,
        x.eq(f32::INFINITY).select(f32::INFINITY, f32::NAN),
    );
    x.gt(0.0f32).and(&x.lt(f32::INFINITY)).select(v, special)
}

fn log(x: &F, base: Base) -> F {
    let (e, f) = log_reduce(x);
    log_special(x, log_of(&e, &f, F::lit(0.0), base))
}

/// `ln(1 + x)`, in `f64` and rounded once. `u = 1 + x` is split as `2^e m` with `m` in
/// `[sqrt(1/2), sqrt(2))` and `ln m = 2 atanh(f / (2 + f))`, `f = m - 1` exact (Sterbenz);
/// where `e = 0`, `f` is `x` itself, so arguments too small for `1 + x` to hold them exactly
/// lose nothing. The series runs to `s^15`, below 2^-44 relative.
fn log1p(x: &F) -> F {
    let xd = x.cast::<f64>();
    let u = xd.clone() + 1.0f64;
    // The mantissa moved to [sqrt(1/2), sqrt(2)); u is at least 2^-24 where it is used.
    let ix = u.to_bits() + (0x3ff0_0000_0000_0000u64 - 0x3fe6_a09e_667f_3bcdu64);
    let e = (ix.clone() >> 52u32).cast::<i64>() - 1023i64;
    let m = D::from_bits((ix & 0x000f_ffff_ffff_ffffu64) + 0x3fe6_a09e_667f_3bcdu64);
    let f = e.eq(0i64).select(xd, m - 1.0f64);
    let s = f.clone() / (f + 2.0f64);
    let z = s.clone() * s.clone();
    let c: Vec<f64> = (0..8).rev().map(|k| 1.0 / (2 * k + 1) as f64).collect();
    let ln = (s * 2.0f64) * horner64(&z, &c);
    let v = e
        .cast::<f64>()
        .fma(std::f64::consts::LN_2, ln)
        .cast::<f32>();
    let v = log_special(&(x + 1.0f32), v);
    x.eq(0.0f32).select(x, v)
}

// ---- trigonometry ----

/// `(sin r - r) / r^3` in `z = r^2` on `[0, (π/4)^2]`.
const SIN_S: [f64; 4] = [
    2.7246868722877944e-06,
    -0.00019840063040804117,
    0.00833333183062943,
    -0.16666666663741367,
];
/// `(cos r - 1 + r^2/2) / r^4` in `z`.
const COS_C: [f64; 4] = [
    -2.7298407652795173e-07,
    2.4800580601354642e-05,
    -0.0013888887635227975,
    0.04166666666422613,
];
/// `(tan r - r) / r^3` in `z`.
const TAN_T: [f64; 8] = [
    0.0018115600189374376,
    -4.4698418157087317e-05,
    0.004460260608121329,
    0.008595811757236867,
    0.02191330419916549,
    0.05396477415429376,
    0.1333334376187074,
    0.33333333282473826,
];
/// π/2 in three parts: `x - j (p1 + p2 + p3)` by FMAs is exact to f32 accuracy for
/// `|x| <= 105615`.
const PIO2_PARTS: [f32; 3] = [1.570_796_4, -4.371_139e-8, -1.715_124_5e-15];
/// Past this, arguments are reduced by Payne–Hanek.
const TRIG_FAST_MAX: f32 = 105_615.0;
/// The bits of 2/π after the binary point, 32 at a time.
const TWO_OVER_PI: [u32; 7] = [
    0xa2f9_836e,
    0x4e44_1529,
    0xfc27_57d1,
    0xf534_ddc0,
    0xdb62_9599,
    0x3c43_9041,
    0xfe51_63ab,
];

/// Which trigonometric function.
#[derive(Clone, Copy, PartialEq)]
enum Trig {
    Sin,
    Cos,
    Tan,
}

/// `|x| = (4k + q) π/2 + r` with `|r| <= π/4` for `|x|` at least 2^16 and finite, by
/// Payne–Hanek: the product of the mantissa with 128 bits of 2/π from the right place,
/// modulo 4.
fn payne_hanek(ax: &F) -> (U, F) {
    let b = ax.to_bits();
    // x = m 2^big with m a 24-bit integer.
    let big = (b.clone() >> 23u32).cast::<i32>() - 150i32;
    let m = ((b & 0x007f_ffffu32) | 0x0080_0000u32).cast::<u64>();
    // The words from `w` on: the bits before them only add multiples of 4.
    let w = ((big.clone() - 2i32).max(0i32) >> 5u32).cast::<u32>();
    let sh = big - (w.clone() << 5u32).cast::<i32>();
    let word = |k: usize| -> L {
        let pick = w.eq(3u32).select(
            TWO_OVER_PI[k + 3],
            w.eq(2u32).select(
                TWO_OVER_PI[k + 2],
                w.eq(1u32).select(TWO_OVER_PI[k + 1], TWO_OVER_PI[k]),
            ),
        );
        pick.cast::<u64>()
    };
    let lo32 = 0xffff_ffffu64;
    let p3 = m.clone() * word(3);
    let p2 = m.clone() * word(2) + (p3 >> 32u32);
    let p1 = m.clone() * word(1) + (p2.clone() >> 32u32);
    let p0 = m * word(0) + (p1.clone() >> 32u32);
    // The product is P 2^(sh - 128); its value modulo 4 with 62 fraction bits is P shifted
    // right by 66 - sh, from the 128 bits hi:lo = P >> 32.
    let lo = (p1 << 32u32) | (p2 & lo32);
    let t = (34i32 - sh).cast::<u32>();
    let fixed = (lo >> t.clone()) | (p0 << (64u32 - t));
    let rounded = fixed + (1u64 << 61);
    let q = (rounded.clone() >> 62u32).cast::<u32>();
    let frac = (rounded & ((1u64 << 62) - 1)).cast::<i64>() - (1i64 << 61);
    let r = (frac.cast::<f64>() * (std::f64::consts::FRAC_PI_2 / 2f64.powi(62))).cast::<f32>();
    (q, r)
}

/// The function at `x = q π/2 + r`.
fn trig_finish(q: &U, r: &F, which: Trig) -> F {
    let z = r * r.clone();
    if which == Trig::Tan {
        let t = (r * z.clone()).fma(horner(&z, &TAN_T), r);
        let odd = (q & 1u32).ne(0u32);
        return odd.select(-t.recip(), t);
    }
    let q = match which {
        Trig::Cos => q + 1u32,
        _ => q.clone(),
    };
    let s = (r * z.clone()).fma(horner(&z, &SIN_S), r);
    let c = z.fma(z.fma(horner(&z, &COS_C), -0.5f32), 1.0f32);
    let v = (q.clone() & 1u32).ne(0u32).select(c, s);
    F::from_bits(v.to_bits() ^ ((q & 2u32) << 30u32))
}

fn trig(x: &F, which: Trig, cold: &mut Cold) -> F {
    let ax = x.abs();
    let j = (x * std::f32::consts::FRAC_2_PI).round_even();
    let r = (-j.clone()).fma(PIO2_PARTS[0], x);
    let r = (-j.clone()).fma(PIO2_PARTS[1], r);
    let r = (-j.clone()).fma(PIO2_PARTS[2], r);
    let fast = trig_finish(&j.cast::<i32>().cast::<u32>(), &r, which);
    let slow = {
        let (q, r) = payne_hanek(&ax);
        let neg = x.lt(0.0f32);
        let q = neg.select((0u32 - q.clone()) & 3u32, q);
        let r = neg.select(-r.clone(), r);
        ax.eq(f32::INFINITY)
            .select(f32::NAN, trig_finish(&q, &r, which))
    };
    let v = cold.select(&ax.gt(TRIG_FAST_MAX), slow, fast);
    if which == Trig::Cos {
        v
    } else {
        // sin(-0) = tan(-0) = -0.
        x.eq(0.0f32).select(x, v)
    }
}

// ---- inverse trigonometry ----

/// `(asin x - x) / x^3` in `z = x^2` on `[0, 1/4]`.
const ASIN_P: [f64; 7] = [
    0.03098546039993495,
    0.01056694782140368,
    0.02361371422189475,
    0.030268919101073113,
    0.044647675217118564,
    0.07499992383419403,
    0.16666666686147094,
];
/// `(atan x - x) / x^3` in `z = x^2` on `[0, tan(π/8)^2]`.
const ATAN_P: [f64; 7] = [
    -0.04024166516946352,
    0.0712625876792301,
    -0.09027378412931815,
    0.11107365357796328,
    -0.14285607821155916,
    0.19999998856156315,
    -0.3333333333131391,
];
const PIO2: f64 = std::f64::consts::FRAC_PI_2;
const PI: f64 = std::f64::consts::PI;
const PIO4: f64 = std::f64::consts::FRAC_PI_4;

// The inverse functions are evaluated in f64 (their polynomials fit to f32 accuracy), so
// that the cancellations of their reductions cost nothing: one rounding to f32 at the end.

/// `asin(a)` for `|a|` in `[0, 1/2]`.
fn asin_small(a: &D) -> D {
    let z = a * a.clone();
    (a * z.clone()).fma(horner64(&z, &ASIN_P), a)
}

/// For `a` in `[1/2, 1]`: `asin(sqrt((1 - a) / 2))`, which is `(π/2 - asin(a)) / 2` and
/// `acos(a) / 2` (NaN past 1).
fn asin_half(a: &D) -> D {
    let s = (D::lit(0.5) - a * 0.5f64).sqrt();
    asin_small(&s)
}

fn asin(x: &F) -> F {
    let a = x.abs().cast::<f64>();
    let big = D::lit(PIO2) - asin_half(&a) * 2.0f64;
    let v = a.gt(0.5f64).select(big, asin_small(&a)).cast::<f32>();
    nan_or(x, signed(&v, &sign_of(x)))
}

fn acos(x: &F) -> F {
    let (a, x64) = (x.abs().cast::<f64>(), x.cast::<f64>());
    let middle = D::lit(PIO2) - asin_small(&x64);
    let w = asin_half(&a) * 2.0f64;
    let left = D::lit(PI) - w.clone();
    let v = a.gt(0.5f64).select(x.gt(0.0f32).select(w, left), middle);
    nan_or(x, v.cast::<f32>())
}

/// `atan(a)` for `a >= 0` (NaN passes).
fn atan_pos(a: &D) -> D {
    let far = a.gt(2.414_213_562_373_095_f64);
    let mid = a.gt(0.414_213_562_373_095_f64);
    let t = far.select(-a.recip(), mid.select((a - 1.0f64) / (a + 1.0f64), a));
    let y0 = far.select(PIO2, mid.select(PIO4, 0.0f64));
    let z = t.clone() * t.clone();
    y0 + (t.clone() * z.clone()).fma(horner64(&z, &ATAN_P), t)
}

fn atan(x: &F) -> F {
    signed(&atan_pos(&x.abs().cast::<f64>()).cast::<f32>(), &sign_of(x))
}

fn atan2(y: &F, x: &F) -> F {
    let (ax, ay) = (x.abs().cast::<f64>(), y.abs().cast::<f64>());
    let (hi, lo) = (ax.max(&ay), ax.min(&ay));
    let both_inf = lo.eq(f64::INFINITY);
    let t = hi
        .eq(0.0f64)
        .select(0.0f64, both_inf.select(1.0f64, lo / hi));
    let a = atan_pos(&t);
    // Past the diagonal, π/2 - a; left of the y axis (-0 included), π - that.
    let a = ay.gt(&ax).select(D::lit(PIO2) - a.clone(), a);
    let a = sign_of(x).ne(0u32).select(D::lit(PI) - a.clone(), a);
    let v = signed(&a.cast::<f32>(), &sign_of(y));
    x.is_nan().or(&y.is_nan()).select(x + y.clone(), v)
}

// ---- hyperbolic functions ----

/// `sinh`, `cosh` and `tanh` from `E = e^a - 1` ([`expm1_64`], `a = |x|`) in `f64`,
/// rounded once: `sinh a = (E + E / (E + 1)) / 2` and `tanh a = E' / (E' + 2)` with
/// `E' = e^(2a) - 1` have no cancellation near 0; `cosh a = (E + 1 + 1 / (E + 1)) / 2`.
/// `f64` holds `e^a` past the `a` where the `f32` results overflow (89.5), so no case
/// needs a separate path.
fn sinh(x: &F) -> F {
    let a = x.abs().min(90.0f32).cast::<f64>();
    let t = expm1_64(&a);
    let v = ((t.clone() + t.clone() / (t + 1.0f64)) * 0.5f64).cast::<f32>();
    nan_or(x, signed(&v, &sign_of(x)))
}

fn cosh(x: &F) -> F {
    let a = x.abs().min(90.0f32).cast::<f64>();
    let e = expm1_64(&a) + 1.0f64;
    let v = ((e.clone() + e.recip()) * 0.5f64).cast::<f32>();
    nan_or(x, v)
}

fn tanh(x: &F) -> F {
    // Past 9.5, tanh rounds to 1.
    let a = x.abs().min(9.5f32).cast::<f64>();
    let t = expm1_64(&(a * 2.0f64));
    let v = (t.clone() / (t + 2.0f64)).cast::<f32>();
    nan_or(x, signed(&v, &sign_of(x)))
}

// ---- roots ----

fn rsqrt(x: &F) -> F {
    x.cast::<f64>().sqrt().recip().cast::<f32>()
}

fn cbrt(x: &F) -> F {
    let a = x.abs();
    let tiny = a.lt(f32::MIN_POSITIVE);
    let scaled = tiny.select(a.clone() * 16_777_216.0f32, a.clone());
    // An estimate within a few percent from the bits (musl's cbrtf), then two Halley steps
    // in f64.
    let third = (scaled.to_bits().mul_hi(0xaaaa_aaabu32) >> 1u32) + 709_958_130u32;
    let t0 = F::from_bits(third).cast::<f64>();
    let t0 = tiny.select(t0.clone() * (1.0f64 / 256.0), t0);
    let y = a.cast::<f64>();
    let halley = |t: D| {
        let t3 = t.clone() * t.clone() * t.clone();
        t * (t3.clone() + y.clone() * 2.0f64) / (t3 * 2.0f64 + y.clone())
    };
    let t = halley(halley(t0));
    let v = signed(&t.cast::<f32>(), &sign_of(x));
    let keep = x.eq(0.0f32).or(&is_inf(x)).or(&x.is_nan());
    keep.select(x, v)
}

fn hypot(x: &F, y: &F) -> F {
    let (a, b) = (x.cast::<f64>(), y.cast::<f64>());
    let v = (a.clone() * a + b.clone() * b).sqrt().cast::<f32>();
    is_inf(x).or(&is_inf(y)).select(f32::INFINITY, v)
}

// ---- powers ----

/// `2^z` in f64 to about 2^-50 relative, for `z` clamped to `[-200, 200]` (past which an
/// f32 result is 0 or inf).
fn exp2_64(z: &D) -> D {
    let zc = z.max(-200.0f64).min(200.0f64);
    let n = zc.round_even();
    let f = zc - n.clone();
    // Taylor coefficients of 2^f = e^(f ln2), degree 12.
    let ln2 = std::f64::consts::LN_2;
    let mut c = [0.0f64; 13];
    let mut term = 1.0f64;
    for (k, ck) in c.iter_mut().enumerate() {
        *ck = term;
        term *= ln2 / (k + 1) as f64;
    }
    c.reverse();
    let p = horner64(&f, &c);
    let bits = (n.cast::<i64>() + 1023i64).cast::<u64>() << 52u32;
    p * D::from_bits(bits)
}

/// `log2(a)` in f64 to about 2^-40 relative, for `a` positive and finite (an f32 value, so
/// its split is the f32 one).
fn log2_64(a: &F) -> D {
    let (e, f) = log_reduce(a);
    let f = f.cast::<f64>();
    // ln(1 + f) = 2 atanh(s), s = f / (2 + f).
    let s = f.clone() / (f + 2.0f64);
    let z = s.clone() * s.clone();
    let c: Vec<f64> = (0..8).rev().map(|k| 1.0 / (2 * k + 1) as f64).collect();
    let ln = s * 2.0f64 * horner64(&z, &c);
    ln.fma(std::f64::consts::LOG2_E, e.cast::<f64>())
}

/// `|x|^y` for an f64 exponent, with the special cases of `|x|` (0, 1, inf) and infinite
/// `y`; NaN arguments aside.
fn pow_abs(x: &F, y: &D) -> F {
    let a = x.abs();
    let finite = a.gt(0.0f32).and(&a.lt(f32::INFINITY));
    let l = finite.select(
        log2_64(&finite.select(a.clone(), 1.0f32)),
        a.eq(0.0f32).select(f64::NEG_INFINITY, f64::INFINITY),
    );
    let z = y.clone() * l;
    let v = exp2_64(&z.clone()).cast::<f32>();
    // z is NaN only for |x| = 1 and infinite y (0 * inf): the result is 1.
    z.is_nan().select(1.0f32, v)
}

fn pow(x: &F, y: &F) -> F {
    let mag = pow_abs(x, &y.cast::<f64>());
    let ay = y.abs();
    let integer = y.round_even().eq(y);
    // Odd integers are below 2^24.
    let odd = integer
        .and(&ay.lt(16_777_216.0f32))
        .and(&(y.cast::<i32>() & 1i32).ne(0i32));
    let negative = sign_of(x).ne(0u32);
    let v = signed(&mag, &negative.and(&odd).select(0x8000_0000u32, 0u32));
    // A negative finite base and a finite non-integer exponent.
    let fraction = (!integer).and(&ay.lt(f32::INFINITY));
    let invalid = x.lt(0.0f32).and(&x.gt(f32::NEG_INFINITY)).and(&fraction);
    let v = invalid.select(f32::NAN, v);
    let v = x.is_nan().or(&y.is_nan()).select(x + y.clone(), v);
    y.eq(0.0f32).or(&x.eq(1.0f32)).select(1.0f32, v)
}

fn powi(x: &F, n: &I) -> F {
    let mag = pow_abs(x, &n.cast::<f64>());
    let odd = (n & 1i32).ne(0i32);
    let negative = sign_of(x).ne(0u32);
    let v = signed(&mag, &negative.and(&odd).select(0x8000_0000u32, 0u32));
    let v = nan_or(x, v);
    n.eq(0i32).select(1.0f32, v)
}

// ---- error functions ----

/// `erf(x) / x` in `z = x^2` on `[0, 1]`.
const ERF_P: [f64; 9] = [
    1.058938064107502e-06,
    -1.3909340021874599e-05,
    0.0001195656256820733,
    -0.0008542637997087229,
    0.005223783477189248,
    -0.026866133235095593,
    0.11283791308604582,
    -0.3761263888963531,
    1.1283791670946768,
];
/// `erfc(x) e^(x^2)` in `t = x - 1.25` on `[-3/4, 3/4]`.
const ERFC_A: [f64; 11] = [
    6.31830922554295e-05,
    -0.00019245873439788436,
    0.00046868829913926727,
    -0.0013086880861896463,
    0.003554426891475518,
    -0.009085893046539277,
    0.02201123108461948,
    -0.050217842947736055,
    0.10679557525216257,
    -0.20882188813402866,
    0.3678229164523611,
];
/// `erfc(x) e^(x^2) x` in `v = 1/x - 0.3` on `[-0.2, 0.2]` (x in `[2, 10]`).
const ERFC_B: [f64; 10] = [
    0.8758634037451319,
    -0.2902922934691089,
    -0.2662057852031814,
    0.34498317028713044,
    -0.15845340919228604,
    -0.08159650334898215,
    0.2080724395173377,
    -0.135583601439592,
    -0.13460101417281867,
    0.5416332028935655,
];

/// `erf(x)` for `|x| <= 1`.
fn erf_small(x: &D) -> D {
    x * horner64(&(x * x.clone()), &ERF_P)
}

/// `erfc(a)` for `a` in `[1/2, 10.5]`: `e^(-a^2)` (with `a^2` exact in f64) times the fit.
fn erfc_pos(a: &D) -> D {
    let e = exp2_64(&(-(a * a.clone()) * std::f64::consts::LOG2_E));
    let near = horner64(&(a - 1.25f64), &ERFC_A);
    let u = a.recip();
    let far = horner64(&(u.clone() - 0.3f64), &ERFC_B) * u;
    e * a.lt(2.0f64).select(near, far)
}

fn erf(x: &F) -> F {
    let a = x.abs().cast::<f64>();
    let small = erf_small(&a.min(1.0f64));
    let big = D::lit(1.0) - erfc_pos(&a.max(1.0f64).min(10.5f64));
    let v = a.le(1.0f64).select(small, big).cast::<f32>();
    nan_or(x, signed(&v, &sign_of(x)))
}

fn erfc(x: &F) -> F {
    let (a, x64) = (x.abs().cast::<f64>(), x.cast::<f64>());
    let tail = erfc_pos(&a.max(0.5f64).min(10.5f64));
    let near = D::lit(1.0) - erf_small(&x64.max(-1.0f64).min(1.0f64));
    let v = x
        .lt(0.5f32)
        .select(x.ge(-1.0f32).select(near, D::lit(2.0) - tail.clone()), tail);
    nan_or(x, v.cast::<f32>())
}

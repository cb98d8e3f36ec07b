//! Value semantics of every arithmetic, logic, comparison, conversion and atomic operator.
//!
//! Registers hold `u64` bit patterns in a canonical form that every function here keeps:
//! - integers of 8, 16 and 32 bits live in 32-bit registers, sign-extended (signed types) or
//!   zero-extended (`.u`/`.b` types) to 32 bits, with the upper 32 bits zero;
//! - 64-bit integers use all 64 bits;
//! - f32 values are their IEEE bits in the low 32 bits, f64 values their 64 bits;
//! - predicates are 0 or 1.
//!
//! Each operator at each type is chosen once, when a function is decoded, as a plain function
//! pointer, so execution never matches on operator names or types.
//!
//! Choices where PTX leaves the result open (documented here once):
//! These follow what an H200 computes for the same PTX (checked instruction by instruction):
//! - integer division and remainder by zero give all ones (`-1` signed, the maximum
//!   unsigned); `MIN / -1` wraps to `MIN` with remainder 0;
//! - f32 arithmetic that produces a NaN produces the canonical NaN `0x7FFFFFFF`; f64
//!   arithmetic passes a NaN operand through, quieted, choosing among NaN operands in the
//!   order the hardware does (`add`, `mul`: b then a; `sub`: -b then a; `div`: a then b;
//!   `fma`: c, a, b), and an invalid operation gives `0xFFF8000000000000` (on the GPU the
//!   sign of an f64 NaN result can differ: ptxas moves negations across operations, computing
//!   `a - x / y` as `a + (-x) / y`, so the NaN an invalid division makes reaches the sum with
//!   the other sign); conversions between f32 and f64 keep a NaN's sign and top payload
//!   bits; `neg`, `abs`, `copysign` and `mov` only move bits. ptxas folds `min(x, x)` to `x`,
//!   so where both operands are one NaN the GPU passes it on uncanonicalized: comparisons
//!   with the GPU take any two NaNs as equal;
//! - `min`/`max` on floats return the non-NaN operand when one is NaN (when both are, the
//!   canonical NaN for f32, the first operand quieted for f64), and order `-0.0` below `+0.0`;
//! - float-to-integer conversions saturate; NaN gives 0 from f32 into 32 bits or fewer, and
//!   the destination's sign-bit pattern otherwise (`0x8000000000000000` into 64 bits,
//!   `0x80000000` into 32 bits from f64);
//! - the `.approx` functions (`sin`, `cos`, `ex2`, `lg2`, `tanh`, `rsqrt`, `rcp`, `sqrt`,
//!   `div`) are computed with Rust's std in the operand's precision: the GPU's results differ
//!   in the last bits; `.ftz` flushes subnormal operands and results to zeros of their sign
//!   (`add.ftz`, `sub.ftz`, `mul.ftz` round as `.rn` does: the simulator never contracts
//!   them into an FMA, which ptxas may do);
//! - `atom.add.f32` on global memory flushes subnormal inputs and results to sign-preserving
//!   zero, as PTX specifies for that instruction; on shared memory it keeps them (the H200
//!   adds there with subnormals, as an ordinary `add.f32` does).

use crate::ptx::{AtomOp, BinOp, Cmp, Round, Ty, UnOp};

/// One operand in, one result out.
pub(crate) type Fn1 = fn(u64) -> u64;
/// Two operands.
pub(crate) type Fn2 = fn(u64, u64) -> u64;
/// Three operands.
pub(crate) type Fn3 = fn(u64, u64, u64) -> u64;

macro_rules! int_mod {
    ($m:ident, $t:ty, $bits:expr, $wide:ty, $abs:expr) => {
        #[allow(clippy::unnecessary_cast, clippy::cast_lossless)]
        pub(crate) mod $m {
            const MASK: u64 = if $bits <= 32 { 0xFFFF_FFFF } else { u64::MAX };
            const WIDE_MASK: u64 = if $bits <= 16 { 0xFFFF_FFFF } else { u64::MAX };
            #[inline]
            pub fn get(v: u64) -> $t {
                v as $t
            }
            #[inline]
            pub fn put(x: $t) -> u64 {
                (x as i64 as u64) & MASK
            }
            pub fn canon(a: u64) -> u64 {
                put(get(a))
            }
            pub fn add(a: u64, b: u64) -> u64 {
                put(get(a).wrapping_add(get(b)))
            }
            pub fn sub(a: u64, b: u64) -> u64 {
                put(get(a).wrapping_sub(get(b)))
            }
            pub fn mul(a: u64, b: u64) -> u64 {
                put(get(a).wrapping_mul(get(b)))
            }
            pub fn mul_hi(a: u64, b: u64) -> u64 {
                let p = (get(a) as $wide).wrapping_mul(get(b) as $wide);
                put((p >> $bits) as $t)
            }
            pub fn mul_wide(a: u64, b: u64) -> u64 {
                let p = (get(a) as $wide).wrapping_mul(get(b) as $wide);
                (p as u64) & WIDE_MASK
            }
            pub fn mad(a: u64, b: u64, c: u64) -> u64 {
                add(mul(a, b), c)
            }
            pub fn mad_wide(a: u64, b: u64, c: u64) -> u64 {
                mul_wide(a, b).wrapping_add(c) & WIDE_MASK
            }
            pub fn div(a: u64, b: u64) -> u64 {
                let (x, y) = (get(a), get(b));
                if y == 0 {
                    put(!0)
                } else {
                    put(x.wrapping_div(y))
                }
            }
            pub fn rem(a: u64, b: u64) -> u64 {
                let (x, y) = (get(a), get(b));
                if y == 0 {
                    put(!0)
                } else {
                    put(x.wrapping_rem(y))
                }
            }
            pub fn min(a: u64, b: u64) -> u64 {
                put(get(a).min(get(b)))
            }
            pub fn max(a: u64, b: u64) -> u64 {
                put(get(a).max(get(b)))
            }
            pub fn and(a: u64, b: u64) -> u64 {
                put(get(a) & get(b))
            }
            pub fn or(a: u64, b: u64) -> u64 {
                put(get(a) | get(b))
            }
            pub fn xor(a: u64, b: u64) -> u64 {
                put(get(a) ^ get(b))
            }
            pub fn shl(a: u64, b: u64) -> u64 {
                let s = b as u32;
                if s >= $bits { 0 } else { put(get(a) << s) }
            }
            pub fn shr(a: u64, b: u64) -> u64 {
                let s = b as u32;
                let x = get(a);
                // Shifting by width-1 and then 1 more fills with sign bits for signed types
                // and with zeros for unsigned ones.
                if s >= $bits {
                    put((x >> ($bits - 1)) >> 1)
                } else {
                    put(x >> s)
                }
            }
            pub fn neg(a: u64) -> u64 {
                put(get(a).wrapping_neg())
            }
            pub fn abs(a: u64) -> u64 {
                let f: fn($t) -> $t = $abs;
                put(f(get(a)))
            }
            pub fn not(a: u64) -> u64 {
                put(!get(a))
            }
            pub fn cnot(a: u64) -> u64 {
                put((get(a) == 0) as $t)
            }
            pub fn popc(a: u64) -> u64 {
                get(a).count_ones() as u64
            }
            pub fn clz(a: u64) -> u64 {
                get(a).leading_zeros() as u64
            }
            pub fn brev(a: u64) -> u64 {
                put(get(a).reverse_bits())
            }
            pub fn eq(a: u64, b: u64) -> u64 {
                (get(a) == get(b)) as u64
            }
            pub fn ne(a: u64, b: u64) -> u64 {
                (get(a) != get(b)) as u64
            }
            pub fn lt(a: u64, b: u64) -> u64 {
                (get(a) < get(b)) as u64
            }
            pub fn le(a: u64, b: u64) -> u64 {
                (get(a) <= get(b)) as u64
            }
            pub fn gt(a: u64, b: u64) -> u64 {
                (get(a) > get(b)) as u64
            }
            pub fn ge(a: u64, b: u64) -> u64 {
                (get(a) >= get(b)) as u64
            }
            pub fn to_i128(a: u64) -> i128 {
                get(a) as i128
            }
            pub fn from_i128(x: i128, sat: bool) -> u64 {
                let x = if sat {
                    x.clamp(<$t>::MIN as i128, <$t>::MAX as i128)
                } else {
                    x
                };
                put(x as $t)
            }
        }
    };
}

int_mod!(s8, i8, 8, i128, |x: i8| x.wrapping_abs());
int_mod!(u8m, u8, 8, u128, |x: u8| x);
int_mod!(s16, i16, 16, i128, |x: i16| x.wrapping_abs());
int_mod!(u16m, u16, 16, u128, |x: u16| x);
int_mod!(s32, i32, 32, i128, |x: i32| x.wrapping_abs());
int_mod!(u32m, u32, 32, u128, |x: u32| x);
int_mod!(s64, i64, 64, i128, |x: i64| x.wrapping_abs());
int_mod!(u64m, u64, 64, u128, |x: u64| x);

macro_rules! float_mod {
    ($m:ident, $t:ty, $bits:ty, $default:expr, $propagate:expr) => {
        #[allow(clippy::unnecessary_cast, clippy::cast_lossless)]
        pub(crate) mod $m {
            /// The NaN an invalid operation produces (and every NaN result when NaNs are not
            /// propagated).
            pub const DEFAULT_NAN: u64 = $default;
            /// Whether NaN operands pass through (quieted) instead of becoming the default.
            const PROPAGATE: bool = $propagate;
            const SIGN: u64 = 1 << (<$bits>::BITS - 1);
            const MASK: u64 = <$bits>::MAX as u64;
            const QUIET: u64 = 1 << (<$t>::MANTISSA_DIGITS - 2);
            #[inline]
            pub fn get(v: u64) -> $t {
                <$t>::from_bits(v as $bits)
            }
            #[inline]
            pub fn put(x: $t) -> u64 {
                if x.is_nan() {
                    DEFAULT_NAN
                } else {
                    x.to_bits() as u64
                }
            }
            #[inline]
            fn bits(x: $t) -> u64 {
                x.to_bits() as u64
            }
            #[inline]
            fn is_nan(a: u64) -> bool {
                get(a).is_nan()
            }
            /// The NaN result when an operand is NaN: the first NaN of `order`, quieted.
            #[inline]
            fn nan_of(order: &[u64]) -> Option<u64> {
                let n = order.iter().copied().find(|x| is_nan(*x))?;
                Some(if PROPAGATE {
                    (n | QUIET) & MASK
                } else {
                    DEFAULT_NAN
                })
            }
            pub fn mov(a: u64) -> u64 {
                a & MASK
            }
            pub fn add(a: u64, b: u64) -> u64 {
                nan_of(&[b, a]).unwrap_or_else(|| put(get(a) + get(b)))
            }
            pub fn sub(a: u64, b: u64) -> u64 {
                nan_of(&[neg(b), a]).unwrap_or_else(|| put(get(a) - get(b)))
            }
            pub fn mul(a: u64, b: u64) -> u64 {
                nan_of(&[b, a]).unwrap_or_else(|| put(get(a) * get(b)))
            }
            pub fn div(a: u64, b: u64) -> u64 {
                nan_of(&[a, b]).unwrap_or_else(|| put(get(a) / get(b)))
            }
            pub fn fma(a: u64, b: u64, c: u64) -> u64 {
                nan_of(&[c, a, b]).unwrap_or_else(|| put(get(a).mul_add(get(b), get(c))))
            }
            pub fn min(a: u64, b: u64) -> u64 {
                let (x, y) = (get(a), get(b));
                match (x.is_nan(), y.is_nan()) {
                    (true, true) => nan_of(&[a]).unwrap_or(DEFAULT_NAN),
                    (true, false) => bits(y),
                    (false, true) => bits(x),
                    _ if x == y => {
                        if x.is_sign_negative() {
                            bits(x)
                        } else {
                            bits(y)
                        }
                    }
                    _ => {
                        if x < y {
                            bits(x)
                        } else {
                            bits(y)
                        }
                    }
                }
            }
            pub fn max(a: u64, b: u64) -> u64 {
                let (x, y) = (get(a), get(b));
                match (x.is_nan(), y.is_nan()) {
                    (true, true) => nan_of(&[a]).unwrap_or(DEFAULT_NAN),
                    (true, false) => bits(y),
                    (false, true) => bits(x),
                    _ if x == y => {
                        if x.is_sign_positive() {
                            bits(x)
                        } else {
                            bits(y)
                        }
                    }
                    _ => {
                        if x > y {
                            bits(x)
                        } else {
                            bits(y)
                        }
                    }
                }
            }
            pub fn copysign(a: u64, b: u64) -> u64 {
                bits(get(b).copysign(get(a)))
            }
            pub fn neg(a: u64) -> u64 {
                (a ^ SIGN) & MASK
            }
            pub fn abs(a: u64) -> u64 {
                a & !SIGN & MASK
            }
            pub fn sqrt(a: u64) -> u64 {
                nan_of(&[a]).unwrap_or_else(|| put(get(a).sqrt()))
            }
            pub fn rcp(a: u64) -> u64 {
                nan_of(&[a]).unwrap_or_else(|| put(1.0 / get(a)))
            }
            /// Rounds to an integral value (`cvt.rXi.fN.fN`), NaN as arithmetic does.
            pub fn round_integral(a: u64, r: crate::ptx::Round) -> u64 {
                use crate::ptx::Round;
                nan_of(&[a]).unwrap_or_else(|| {
                    let x = get(a);
                    put(match r {
                        Round::Rni => x.round_ties_even(),
                        Round::Rmi => x.floor(),
                        Round::Rpi => x.ceil(),
                        _ => x.trunc(),
                    })
                })
            }
            pub fn eq(a: u64, b: u64) -> u64 {
                (get(a) == get(b)) as u64
            }
            pub fn ne(a: u64, b: u64) -> u64 {
                let (x, y) = (get(a), get(b));
                (!x.is_nan() && !y.is_nan() && x != y) as u64
            }
            pub fn lt(a: u64, b: u64) -> u64 {
                (get(a) < get(b)) as u64
            }
            pub fn le(a: u64, b: u64) -> u64 {
                (get(a) <= get(b)) as u64
            }
            pub fn gt(a: u64, b: u64) -> u64 {
                (get(a) > get(b)) as u64
            }
            pub fn ge(a: u64, b: u64) -> u64 {
                (get(a) >= get(b)) as u64
            }
            pub fn neu(a: u64, b: u64) -> u64 {
                (get(a) != get(b)) as u64
            }
            pub fn num(a: u64, b: u64) -> u64 {
                (!get(a).is_nan() && !get(b).is_nan()) as u64
            }
            pub fn nan(a: u64, b: u64) -> u64 {
                (get(a).is_nan() || get(b).is_nan()) as u64
            }
        }
    };
}

// f32: every NaN result is the canonical 0x7FFFFFFF. f64: NaN operands pass through quieted,
// in a per-instruction order of operands, and invalid operations give 0xFFF8000000000000.
float_mod!(f32m, f32, u32, 0x7FFF_FFFF, false);
float_mod!(f64m, f64, u64, 0xFFF8_0000_0000_0000, true);

fn rsqrt_f32(a: u64) -> u64 {
    f32m::put(1.0 / f32m::get(a).sqrt())
}
fn sin_f32(a: u64) -> u64 {
    f32m::put(f32m::get(a).sin())
}
fn cos_f32(a: u64) -> u64 {
    f32m::put(f32m::get(a).cos())
}
fn ex2_f32(a: u64) -> u64 {
    f32m::put(f32m::get(a).exp2())
}
fn lg2_f32(a: u64) -> u64 {
    f32m::put(f32m::get(a).log2())
}
fn tanh_f32(a: u64) -> u64 {
    f32m::put(f32m::get(a).tanh())
}

/// Flushes an f32 subnormal to a zero of its sign.
fn flush(x: f32) -> f32 {
    if x.is_subnormal() {
        0.0f32.copysign(x)
    } else {
        x
    }
}

/// An `.ftz` f32 operation: subnormal operands and results flushed, NaNs canonical.
fn ftz1(a: u64, f: fn(f32) -> f32) -> u64 {
    f32m::put(flush(f(flush(f32m::get(a)))))
}

/// The same with two operands.
fn ftz2(a: u64, b: u64, f: fn(f32, f32) -> f32) -> u64 {
    f32m::put(flush(f(flush(f32m::get(a)), flush(f32m::get(b)))))
}

fn add_ftz(a: u64, b: u64) -> u64 {
    ftz2(a, b, |x, y| x + y)
}
fn sub_ftz(a: u64, b: u64) -> u64 {
    ftz2(a, b, |x, y| x - y)
}
fn mul_ftz(a: u64, b: u64) -> u64 {
    ftz2(a, b, |x, y| x * y)
}
fn div_approx(a: u64, b: u64) -> u64 {
    ftz2(a, b, |x, y| x / y)
}
fn sin_ftz(a: u64) -> u64 {
    ftz1(a, f32::sin)
}
fn cos_ftz(a: u64) -> u64 {
    ftz1(a, f32::cos)
}
fn ex2_ftz(a: u64) -> u64 {
    ftz1(a, f32::exp2)
}
fn lg2_ftz(a: u64) -> u64 {
    ftz1(a, f32::log2)
}
fn rcp_approx(a: u64) -> u64 {
    ftz1(a, f32::recip)
}
fn rsqrt_ftz_f32(a: u64) -> u64 {
    ftz1(a, |x| 1.0 / x.sqrt())
}
fn sqrt_approx(a: u64) -> u64 {
    ftz1(a, f32::sqrt)
}

/// `rsqrt.approx.ftz.f64`: subnormal inputs count as zero.
fn rsqrt_ftz_f64(a: u64) -> u64 {
    let x = f64m::get(a);
    let x = if x.is_subnormal() {
        0.0f64.copysign(x)
    } else {
        x
    };
    let y = 1.0 / x.sqrt();
    // The approximation unit answers every NaN with this pattern.
    if y.is_nan() {
        0x7FFF_FFFF_0000_0000
    } else {
        y.to_bits()
    }
}

fn pred_and(a: u64, b: u64) -> u64 {
    (a & b) & 1
}
fn pred_or(a: u64, b: u64) -> u64 {
    (a | b) & 1
}
fn pred_xor(a: u64, b: u64) -> u64 {
    (a ^ b) & 1
}
fn pred_not(a: u64) -> u64 {
    (a & 1) ^ 1
}
fn pred_mov(a: u64) -> u64 {
    (a != 0) as u64
}

macro_rules! pick_int {
    ($ty:expr, $f:ident, $fty:ty) => {
        match $ty {
            Ty::S8 => Some(s8::$f as $fty),
            Ty::U8 | Ty::B8 => Some(u8m::$f as $fty),
            Ty::S16 => Some(s16::$f as $fty),
            Ty::U16 | Ty::B16 => Some(u16m::$f as $fty),
            Ty::S32 => Some(s32::$f as $fty),
            Ty::U32 | Ty::B32 => Some(u32m::$f as $fty),
            Ty::S64 => Some(s64::$f as $fty),
            Ty::U64 | Ty::B64 => Some(u64m::$f as $fty),
            _ => None,
        }
    };
}

macro_rules! pick_float {
    ($ty:expr, $f:ident, $fty:ty) => {
        match $ty {
            Ty::F32 => Some(f32m::$f as $fty),
            Ty::F64 => Some(f64m::$f as $fty),
            _ => None,
        }
    };
}

fn is_int(ty: Ty) -> bool {
    !ty.is_float() && ty != Ty::Pred
}

/// The width in bits of a type's register value after an operation (narrow types widen to 32).
pub(crate) fn reg_bits(ty: Ty) -> u32 {
    match ty {
        Ty::Pred => 1,
        _ => ty.bytes().max(4) * 8,
    }
}

/// `op.ty` for two operands, or `None` when PTX has no such instruction.
pub(crate) fn bin(op: BinOp, ty: Ty) -> Option<Fn2> {
    if ty.is_float() {
        return match op {
            BinOp::Add => pick_float!(ty, add, Fn2),
            BinOp::Sub => pick_float!(ty, sub, Fn2),
            BinOp::Mul => pick_float!(ty, mul, Fn2),
            BinOp::Div => pick_float!(ty, div, Fn2),
            BinOp::Min => pick_float!(ty, min, Fn2),
            BinOp::Max => pick_float!(ty, max, Fn2),
            BinOp::Copysign => pick_float!(ty, copysign, Fn2),
            BinOp::AddFtz if ty == Ty::F32 => Some(add_ftz as Fn2),
            BinOp::SubFtz if ty == Ty::F32 => Some(sub_ftz as Fn2),
            BinOp::MulFtz if ty == Ty::F32 => Some(mul_ftz as Fn2),
            BinOp::DivApprox if ty == Ty::F32 => Some(div_approx as Fn2),
            _ => None,
        };
    }
    if ty == Ty::Pred {
        return match op {
            BinOp::And => Some(pred_and as Fn2),
            BinOp::Or => Some(pred_or as Fn2),
            BinOp::Xor => Some(pred_xor as Fn2),
            _ => None,
        };
    }
    let bytes = ty.bytes();
    match op {
        BinOp::Add => pick_int!(ty, add, Fn2),
        BinOp::Sub => pick_int!(ty, sub, Fn2),
        BinOp::Mul => pick_int!(ty, mul, Fn2),
        BinOp::MulHi if bytes >= 2 => pick_int!(ty, mul_hi, Fn2),
        BinOp::MulWide if bytes == 2 || bytes == 4 => pick_int!(ty, mul_wide, Fn2),
        BinOp::Div => pick_int!(ty, div, Fn2),
        BinOp::Rem => pick_int!(ty, rem, Fn2),
        BinOp::Min => pick_int!(ty, min, Fn2),
        BinOp::Max => pick_int!(ty, max, Fn2),
        BinOp::And => pick_int!(ty, and, Fn2),
        BinOp::Or => pick_int!(ty, or, Fn2),
        BinOp::Xor => pick_int!(ty, xor, Fn2),
        BinOp::Shl => pick_int!(ty, shl, Fn2),
        BinOp::Shr => pick_int!(ty, shr, Fn2),
        BinOp::MulHi
        | BinOp::MulWide
        | BinOp::Copysign
        | BinOp::AddFtz
        | BinOp::SubFtz
        | BinOp::MulFtz
        | BinOp::DivApprox => None,
    }
}

/// `op.ty` for one operand.
pub(crate) fn un(op: UnOp, ty: Ty) -> Option<Fn1> {
    if ty == Ty::Pred {
        return match op {
            UnOp::Not => Some(pred_not as Fn1),
            _ => None,
        };
    }
    if ty.is_float() {
        return match (op, ty) {
            (UnOp::Neg, _) => pick_float!(ty, neg, Fn1),
            (UnOp::Abs, _) => pick_float!(ty, abs, Fn1),
            (UnOp::Sqrt, _) => pick_float!(ty, sqrt, Fn1),
            (UnOp::Rcp, _) => pick_float!(ty, rcp, Fn1),
            (UnOp::Rsqrt, Ty::F32) => Some(rsqrt_f32 as Fn1),
            (UnOp::Rsqrt, _) => Some(rsqrt_ftz_f64 as Fn1),
            (UnOp::Sin, Ty::F32) => Some(sin_f32 as Fn1),
            (UnOp::Cos, Ty::F32) => Some(cos_f32 as Fn1),
            (UnOp::Ex2, Ty::F32) => Some(ex2_f32 as Fn1),
            (UnOp::Lg2, Ty::F32) => Some(lg2_f32 as Fn1),
            (UnOp::Tanh, Ty::F32) => Some(tanh_f32 as Fn1),
            (UnOp::SinFtz, Ty::F32) => Some(sin_ftz as Fn1),
            (UnOp::CosFtz, Ty::F32) => Some(cos_ftz as Fn1),
            (UnOp::Ex2Ftz, Ty::F32) => Some(ex2_ftz as Fn1),
            (UnOp::Lg2Ftz, Ty::F32) => Some(lg2_ftz as Fn1),
            (UnOp::RcpApprox, Ty::F32) => Some(rcp_approx as Fn1),
            (UnOp::RsqrtFtz, Ty::F32) => Some(rsqrt_ftz_f32 as Fn1),
            (UnOp::SqrtApprox, Ty::F32) => Some(sqrt_approx as Fn1),
            _ => None,
        };
    }
    match op {
        UnOp::Neg => pick_int!(ty, neg, Fn1),
        UnOp::Abs => pick_int!(ty, abs, Fn1),
        UnOp::Not => pick_int!(ty, not, Fn1),
        UnOp::Cnot => pick_int!(ty, cnot, Fn1),
        UnOp::Popc => pick_int!(ty, popc, Fn1),
        UnOp::Clz => pick_int!(ty, clz, Fn1),
        UnOp::Brev => pick_int!(ty, brev, Fn1),
        _ => None,
    }
}

/// The register width of a unary op's result: `popc` and `clz` give `.u32` whatever the
/// source type.
pub(crate) fn un_result_bits(op: UnOp, ty: Ty) -> u32 {
    match op {
        UnOp::Popc | UnOp::Clz => 32,
        _ => reg_bits(ty),
    }
}

/// `mov.ty`: keeps the canonical form.
pub(crate) fn mov(ty: Ty) -> Fn1 {
    match ty {
        Ty::Pred => pred_mov,
        Ty::F32 => f32m::mov,
        Ty::F64 => f64m::mov,
        _ => pick_int!(ty, canon, Fn1).unwrap_or(u64m::canon),
    }
}

/// Canonical register bits of an immediate used at type `ty`.
pub(crate) fn imm_int(ty: Ty, v: i64) -> u64 {
    if ty == Ty::Pred {
        return (v != 0) as u64;
    }
    mov(ty)(v as u64)
}

/// `setp.cmp.ty`.
pub(crate) fn setp(cmp: Cmp, ty: Ty) -> Option<Fn2> {
    if ty.is_float() {
        return match cmp {
            Cmp::Eq => pick_float!(ty, eq, Fn2),
            Cmp::Ne => pick_float!(ty, ne, Fn2),
            Cmp::Lt => pick_float!(ty, lt, Fn2),
            Cmp::Le => pick_float!(ty, le, Fn2),
            Cmp::Gt => pick_float!(ty, gt, Fn2),
            Cmp::Ge => pick_float!(ty, ge, Fn2),
            Cmp::Neu => pick_float!(ty, neu, Fn2),
            Cmp::Num => pick_float!(ty, num, Fn2),
            Cmp::Nan => pick_float!(ty, nan, Fn2),
        };
    }
    if !is_int(ty) {
        return None;
    }
    match cmp {
        Cmp::Eq => pick_int!(ty, eq, Fn2),
        Cmp::Ne => pick_int!(ty, ne, Fn2),
        Cmp::Lt => pick_int!(ty, lt, Fn2),
        Cmp::Le => pick_int!(ty, le, Fn2),
        Cmp::Gt => pick_int!(ty, gt, Fn2),
        Cmp::Ge => pick_int!(ty, ge, Fn2),
        Cmp::Neu | Cmp::Num | Cmp::Nan => None,
    }
}

/// `fma.rn.ty` (floats) or `mad.lo.ty` (integers).
pub(crate) fn mad(ty: Ty) -> Option<Fn3> {
    if ty.is_float() {
        pick_float!(ty, fma, Fn3)
    } else {
        pick_int!(ty, mad, Fn3)
    }
}

/// `mad.wide.ty` (16- and 32-bit integer factors).
pub(crate) fn mad_wide(ty: Ty) -> Option<Fn3> {
    match ty.bytes() {
        2 | 4 if is_int(ty) => pick_int!(ty, mad_wide, Fn3),
        _ => None,
    }
}

fn int_to_i128(ty: Ty, v: u64) -> i128 {
    pick_int!(ty, to_i128, fn(u64) -> i128).map_or(0, |f| f(v))
}

fn int_from_i128(ty: Ty, x: i128, sat: bool) -> u64 {
    pick_int!(ty, from_i128, fn(i128, bool) -> u64).map_or(0, |f| f(x, sat))
}

/// A decoded `cvt`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cvt {
    pub round: Option<Round>,
    pub sat: bool,
    pub dty: Ty,
    pub sty: Ty,
}

fn is_int_round(r: Round) -> bool {
    matches!(r, Round::Rni | Round::Rzi | Round::Rmi | Round::Rpi)
}

impl Cvt {
    /// Whether PTX has this conversion (checked against what the driver's JIT accepts):
    /// integer-to-integer takes no rounding modifier; float-to-integer needs an integer one
    /// (`.rni`, `.rzi`, `.rmi`, `.rpi`); integer-to-float and f64-to-f32 need `.rn` or `.rz`;
    /// f32-to-f64 takes none; float-to-same-float takes none or an integer one.
    pub(crate) fn is_valid(&self) -> bool {
        let (d, s) = (self.dty, self.sty);
        if d == Ty::Pred || s == Ty::Pred {
            return false;
        }
        let r = self.round;
        let float_round = matches!(r, Some(Round::Rn | Round::Rz));
        match (d.is_float(), s.is_float()) {
            (false, false) => r.is_none(),
            (false, true) => r.is_some_and(is_int_round),
            (true, false) => float_round,
            (true, true) if d == s => r.is_none_or(is_int_round),
            (true, true) if d == Ty::F32 => float_round,
            (true, true) => r.is_none(),
        }
    }

    /// The result bits of converting `v`.
    pub(crate) fn apply(&self, v: u64) -> u64 {
        let r = self.round;
        let integral = r.filter(|r| is_int_round(*r));
        match (self.dty, self.sty) {
            (Ty::F32, Ty::F32) => {
                let y = match integral {
                    Some(ri) => f32m::round_integral(v, ri),
                    None => f32m::put(f32m::get(v)),
                };
                sat32(self.sat, y)
            }
            (Ty::F64, Ty::F64) => {
                let y = match integral {
                    Some(ri) => f64m::round_integral(v, ri),
                    None => v,
                };
                sat64(self.sat, y)
            }
            (Ty::F64, Ty::F32) => {
                let x = f32m::get(v);
                let y = if x.is_nan() {
                    // The payload moves to the top of the wider mantissa, quieted.
                    let b = v & 0xFFFF_FFFF;
                    ((b & 0x8000_0000) << 32) | 0x7FF8_0000_0000_0000 | ((b & 0x7F_FFFF) << 29)
                } else {
                    f64::from(x).to_bits()
                };
                sat64(self.sat, y)
            }
            (Ty::F32, Ty::F64) => {
                let x = f64m::get(v);
                let y = if x.is_nan() {
                    // The payload's top bits survive, quieted.
                    ((v >> 32) & 0x8000_0000) | 0x7FC0_0000 | ((v >> 29) & 0x3F_FFFF)
                } else if r == Some(Round::Rz) {
                    u64::from(f64_to_f32_rz(x).to_bits())
                } else {
                    u64::from((x as f32).to_bits())
                };
                sat32(self.sat, y)
            }
            (Ty::F32, s) => {
                let i = int_to_i128(s, v);
                let y = if r == Some(Round::Rz) {
                    int_to_f32_rz(i)
                } else {
                    i as f32
                };
                sat32(self.sat, u64::from(y.to_bits()))
            }
            (Ty::F64, s) => {
                let i = int_to_i128(s, v);
                let y = if r == Some(Round::Rz) {
                    int_to_f64_rz(i)
                } else {
                    i as f64
                };
                sat64(self.sat, y.to_bits())
            }
            (d, Ty::F32) => float_to_int(f64::from(f32m::get(v)), r, d, false),
            (d, Ty::F64) => float_to_int(f64m::get(v), r, d, true),
            (d, s) => int_from_i128(d, int_to_i128(s, v), self.sat),
        }
    }
}

/// `.sat` on f32 bits: clamp to [0, 1], NaN to +0.
fn sat32(sat: bool, y: u64) -> u64 {
    let x = f32m::get(y);
    if !sat {
        y
    } else if x.is_nan() {
        0
    } else {
        u64::from(x.clamp(0.0, 1.0).to_bits())
    }
}

/// `.sat` on f64 bits.
fn sat64(sat: bool, y: u64) -> u64 {
    let x = f64m::get(y);
    if !sat {
        y
    } else if x.is_nan() {
        0
    } else {
        x.clamp(0.0, 1.0).to_bits()
    }
}

fn round_f64(x: f64, r: Option<Round>) -> f64 {
    match r {
        Some(Round::Rni) => x.round_ties_even(),
        Some(Round::Rmi) => x.floor(),
        Some(Round::Rpi) => x.ceil(),
        _ => x.trunc(),
    }
}

/// Float to integer: round as asked and saturate to the destination's range. NaN gives what
/// the hardware gives: the sign-bit pattern of the destination (its minimum for signed types,
/// `2^(w-1)` for unsigned ones) when the source is f64 or the destination is 64 bits wide,
/// and 0 for an f32 source into 32 bits or fewer.
fn float_to_int(x: f64, r: Option<Round>, dty: Ty, from_f64: bool) -> u64 {
    if x.is_nan() {
        let w = dty.bytes() * 8;
        if !from_f64 && w < 64 {
            return 0;
        }
        let v: i128 = if dty.is_signed() {
            -(1i128 << (w - 1))
        } else {
            1i128 << (w - 1)
        };
        return int_from_i128(dty, v, false);
    }
    // `as i128` saturates; the destination clamp does the rest.
    int_from_i128(dty, round_f64(x, r) as i128, true)
}

/// The f32 nearest to `x` in the direction of zero.
fn f64_to_f32_rz(x: f64) -> f32 {
    if x.is_nan() || x.is_infinite() {
        return x as f32;
    }
    let y = x as f32;
    if y.is_infinite() || (y as f64).abs() > x.abs() {
        // Rounding to nearest went away from zero: step one ulp back.
        f32::from_bits(y.to_bits().wrapping_sub(1))
    } else {
        y
    }
}

fn int_to_f32_rz(i: i128) -> f32 {
    let y = i as f32;
    if (y as i128).unsigned_abs() > i.unsigned_abs() {
        f32::from_bits(y.to_bits().wrapping_sub(1))
    } else {
        y
    }
}

fn int_to_f64_rz(i: i128) -> f64 {
    let y = i as f64;
    if (y as i128).unsigned_abs() > i.unsigned_abs() {
        f64::from_bits(y.to_bits().wrapping_sub(1))
    } else {
        y
    }
}

/// What an atomic operates on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AtomKind {
    U32,
    S32,
    U64,
    S64,
    F32,
    F64,
}

impl AtomKind {
    pub(crate) fn bytes(self) -> u32 {
        match self {
            AtomKind::U32 | AtomKind::S32 | AtomKind::F32 => 4,
            _ => 8,
        }
    }
}

/// The operand kind of `atom.op.ty`, or `None` when PTX has no such atomic (ptxas refuses it):
/// `add` takes `.u32`, `.s32`, `.u64`, `.f32`, `.f64`; `min` and `max` the signed and unsigned
/// integers; the bitwise operators, `exch` and `cas` only `.b32` and `.b64`; `inc` and `dec`
/// only `.u32`.
pub(crate) fn atom_kind(op: AtomOp, ty: Ty) -> Option<AtomKind> {
    let k = match ty {
        Ty::U32 | Ty::B32 => AtomKind::U32,
        Ty::S32 => AtomKind::S32,
        Ty::U64 | Ty::B64 => AtomKind::U64,
        Ty::S64 => AtomKind::S64,
        Ty::F32 => AtomKind::F32,
        Ty::F64 => AtomKind::F64,
        _ => return None,
    };
    let bits = matches!(ty, Ty::B32 | Ty::B64);
    let ok = match op {
        AtomOp::Add => matches!(ty, Ty::U32 | Ty::S32 | Ty::U64 | Ty::F32 | Ty::F64),
        AtomOp::Min | AtomOp::Max => matches!(ty, Ty::U32 | Ty::S32 | Ty::U64 | Ty::S64),
        AtomOp::And | AtomOp::Or | AtomOp::Xor | AtomOp::Exch | AtomOp::Cas => bits,
        AtomOp::Inc | AtomOp::Dec => ty == Ty::U32,
    };
    ok.then_some(k)
}

fn ftz32(x: f32) -> f32 {
    if x.is_subnormal() {
        0.0f32.copysign(x)
    } else {
        x
    }
}

/// Whether an atomic updates global or shared memory: `atom.add.f32` flushes subnormals in
/// the first only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AtomAt {
    Global,
    Shared,
}

/// The new memory value of an atomic: `old` is the memory, `a` the operand, `b` the second
/// operand of `cas` (the value stored when `old == a`).
pub(crate) fn atom_apply(op: AtomOp, k: AtomKind, at: AtomAt, old: u64, a: u64, b: u64) -> u64 {
    match (op, k) {
        (AtomOp::Add, AtomKind::F32) if at == AtomAt::Global => {
            let s = ftz32(ftz32(f32m::get(old)) + ftz32(f32m::get(a)));
            f32m::put(s)
        }
        (AtomOp::Add, AtomKind::F32) => f32m::add(old, a),
        (AtomOp::Add, AtomKind::F64) => f64m::add(old, a),
        (AtomOp::Add, AtomKind::U32 | AtomKind::S32) => u32m::add(old, a),
        (AtomOp::Add, _) => u64m::add(old, a),
        (AtomOp::Min, AtomKind::U32) => u32m::min(old, a),
        (AtomOp::Min, AtomKind::S32) => s32::min(old, a) & 0xFFFF_FFFF,
        (AtomOp::Min, AtomKind::U64) => u64m::min(old, a),
        (AtomOp::Min, _) => s64::min(old, a),
        (AtomOp::Max, AtomKind::U32) => u32m::max(old, a),
        (AtomOp::Max, AtomKind::S32) => s32::max(old, a) & 0xFFFF_FFFF,
        (AtomOp::Max, AtomKind::U64) => u64m::max(old, a),
        (AtomOp::Max, _) => s64::max(old, a),
        (AtomOp::And, _) => old & a,
        (AtomOp::Or, _) => old | a,
        (AtomOp::Xor, _) => old ^ a,
        (AtomOp::Exch, _) => a,
        (AtomOp::Cas, _) => {
            if old == a {
                b
            } else {
                old
            }
        }
        (AtomOp::Inc, _) => {
            if old >= a {
                0
            } else {
                old.wrapping_add(1)
            }
        }
        (AtomOp::Dec, _) => {
            if old == 0 || old > a {
                a
            } else {
                old.wrapping_sub(1)
            }
        }
    }
}

/// The combining function of `redux.sync.op.ty`.
pub(crate) fn redux(op: AtomOp, ty: Ty) -> Option<Fn2> {
    match (op, ty) {
        (AtomOp::Add, Ty::U32 | Ty::S32) => Some(u32m::add as Fn2),
        (AtomOp::Min, Ty::U32) => Some(u32m::min as Fn2),
        (AtomOp::Min, Ty::S32) => Some(s32::min as Fn2),
        (AtomOp::Max, Ty::U32) => Some(u32m::max as Fn2),
        (AtomOp::Max, Ty::S32) => Some(s32::max as Fn2),
        (AtomOp::And, Ty::B32) => Some(u32m::and as Fn2),
        (AtomOp::Or, Ty::B32) => Some(u32m::or as Fn2),
        (AtomOp::Xor, Ty::B32) => Some(u32m::xor as Fn2),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(x: f32) -> u64 {
        x.to_bits() as u64
    }

    #[test]
    fn narrow_integers_stay_canonical() {
        // s8: -1 lives as 0xFFFFFFFF; 127 + 1 wraps to -128.
        let add = bin(BinOp::Add, Ty::S8).unwrap();
        assert_eq!(add(0x7F, 1), 0xFFFF_FF80);
        let add = bin(BinOp::Add, Ty::U8).unwrap();
        assert_eq!(add(0xFF, 1), 0);
    }

    #[test]
    fn shifts_past_the_width() {
        assert_eq!(bin(BinOp::Shl, Ty::B32).unwrap()(1, 32), 0);
        assert_eq!(
            bin(BinOp::Shr, Ty::S32).unwrap()(0x8000_0000, 40),
            0xFFFF_FFFF
        );
        assert_eq!(bin(BinOp::Shr, Ty::U32).unwrap()(0x8000_0000, 40), 0);
        assert_eq!(bin(BinOp::Shr, Ty::S64).unwrap()(1 << 63, 63), u64::MAX);
    }

    #[test]
    fn division_by_zero_is_defined() {
        assert_eq!(bin(BinOp::Div, Ty::U32).unwrap()(7, 0), 0xFFFF_FFFF);
        assert_eq!(bin(BinOp::Div, Ty::S32).unwrap()(7, 0), 0xFFFF_FFFF);
        assert_eq!(bin(BinOp::Rem, Ty::S32).unwrap()(7, 0), 0xFFFF_FFFF);
        let min = 0x8000_0000u64;
        assert_eq!(bin(BinOp::Div, Ty::S32).unwrap()(min, 0xFFFF_FFFF), min);
    }

    #[test]
    fn float_min_max_ignore_nan() {
        let min = bin(BinOp::Min, Ty::F32).unwrap();
        assert_eq!(min(f(f32::NAN), f(2.0)), f(2.0));
        assert_eq!(min(f(1.0), f(f32::NAN)), f(1.0));
        assert_eq!(min(f(f32::NAN), f(f32::NAN)), 0x7FFF_FFFF);
        assert_eq!(min(f(0.0), f(-0.0)), f(-0.0));
        let max = bin(BinOp::Max, Ty::F32).unwrap();
        assert_eq!(max(f(-0.0), f(0.0)), f(0.0));
    }

    #[test]
    fn conversions_saturate() {
        let c = Cvt {
            round: Some(Round::Rzi),
            sat: false,
            dty: Ty::S32,
            sty: Ty::F32,
        };
        assert_eq!(c.apply(f(3e10)), 0x7FFF_FFFF);
        assert_eq!(c.apply(f(f32::NAN)), 0);
        assert_eq!(c.apply(f(-2.7)), (-2i32) as u32 as u64);
        let c = Cvt {
            round: Some(Round::Rni),
            sat: false,
            dty: Ty::U8,
            sty: Ty::F32,
        };
        assert_eq!(c.apply(f(300.0)), 255);
        assert_eq!(c.apply(f(2.5)), 2);
        let c = Cvt {
            round: None,
            sat: false,
            dty: Ty::S32,
            sty: Ty::S8,
        };
        assert_eq!(c.apply(0x1FF), 0xFFFF_FFFF);
        let c = Cvt {
            round: Some(Round::Rz),
            sat: false,
            dty: Ty::F32,
            sty: Ty::F64,
        };
        assert_eq!(f32m::get(c.apply(1e300f64.to_bits())), f32::MAX);
        assert_eq!(
            f32m::get(c.apply((1.0f64 + 1e-9).to_bits())),
            1.0,
            "rz must not round up"
        );
        let c = Cvt {
            round: Some(Round::Rz),
            sat: false,
            dty: Ty::F32,
            sty: Ty::U32,
        };
        assert_eq!(f32m::get(c.apply(0xFFFF_FFFF)), 4294967040.0);
    }

    /// Every operator at every type, on extreme operands: nothing may panic (debug builds
    /// trap integer overflow) and results keep the canonical register form.
    #[test]
    fn every_function_is_total_on_extreme_operands() {
        let vals: Vec<u64> = [
            0u64,
            1,
            2,
            31,
            32,
            63,
            64,
            0x7F,
            0x80,
            0xFF,
            0x7FFF,
            0x8000,
            0xFFFF,
            0x7FFF_FFFF,
            0x8000_0000,
            0xFFFF_FFFF,
            0x1_0000_0000,
            i64::MAX as u64,
            i64::MIN as u64,
            u64::MAX,
            f(f32::NAN),
            f(f32::INFINITY),
            f(f32::NEG_INFINITY),
            f(-0.0),
            f(f32::MIN_POSITIVE / 2.0),
            f(f32::MAX),
            f(-3e9),
            f64::NAN.to_bits(),
            f64::INFINITY.to_bits(),
            (-1e300f64).to_bits(),
            (5e-324f64).to_bits(),
            1e19f64.to_bits(),
        ]
        .to_vec();
        let fits = |v: u64, bits: u32| bits >= 64 || v >> bits == 0;
        for ty in Ty::ALL {
            let rb = if ty == Ty::Pred { 1 } else { reg_bits(ty) };
            for op in BinOp::ALL {
                if let Some(g) = bin(op, ty) {
                    let out = if op == BinOp::MulWide {
                        2 * ty.bytes() * 8
                    } else {
                        rb
                    };
                    for &a in &vals {
                        for &b in &vals {
                            let r = g(a, b);
                            assert!(fits(r, out.clamp(32, 64)) || ty == Ty::Pred);
                        }
                    }
                }
            }
            for op in UnOp::ALL {
                if let Some(g) = un(op, ty) {
                    for &a in &vals {
                        assert!(fits(g(a), un_result_bits(op, ty).max(32)));
                    }
                }
            }
            for c in Cmp::ALL {
                if let Some(g) = setp(c, ty) {
                    for &a in &vals {
                        for &b in &vals {
                            assert!(g(a, b) <= 1);
                        }
                    }
                }
            }
            for g in [mad(ty), mad_wide(ty)].into_iter().flatten() {
                for &a in &vals {
                    for &b in &vals {
                        g(a, b, a ^ b);
                    }
                }
            }
            for dty in Ty::ALL {
                for round in [
                    None,
                    Some(Round::Rn),
                    Some(Round::Rz),
                    Some(Round::Rni),
                    Some(Round::Rzi),
                    Some(Round::Rmi),
                    Some(Round::Rpi),
                ] {
                    for sat in [false, true] {
                        let c = Cvt {
                            round,
                            sat,
                            dty,
                            sty: ty,
                        };
                        if c.is_valid() {
                            for &a in &vals {
                                assert!(fits(c.apply(a), reg_bits(dty)));
                            }
                        }
                    }
                }
            }
            for op in [
                AtomOp::Add,
                AtomOp::Min,
                AtomOp::Max,
                AtomOp::And,
                AtomOp::Or,
                AtomOp::Xor,
                AtomOp::Exch,
                AtomOp::Cas,
                AtomOp::Inc,
                AtomOp::Dec,
            ] {
                if let Some(k) = atom_kind(op, ty) {
                    let m = if k.bytes() == 4 {
                        0xFFFF_FFFF
                    } else {
                        u64::MAX
                    };
                    for &a in &vals {
                        for &b in &vals {
                            for at in [AtomAt::Global, AtomAt::Shared] {
                                atom_apply(op, k, at, a & m, b & m, a & m);
                            }
                        }
                    }
                }
                if let Some(g) = redux(op, ty) {
                    for &a in &vals {
                        g(a & 0xFFFF_FFFF, 7);
                    }
                }
            }
        }
    }

    /// NaN results as an H200 produces them for the same instructions.
    #[test]
    fn nan_results_match_the_hardware() {
        let (qa, qb) = (0x7FF8_0000_0000_0005u64, 0xFFF8_0000_0000_0007u64);
        let one = 1.0f64.to_bits();
        let f64op = |op| bin(op, Ty::F64).unwrap();
        assert_eq!(f64op(BinOp::Add)(one, qa), qa);
        assert_eq!(f64op(BinOp::Add)(qa, qb), qb);
        assert_eq!(
            f64op(BinOp::Add)(0x7FF0_0000_0000_0009, one),
            0x7FF8_0000_0000_0009
        );
        assert_eq!(f64op(BinOp::Sub)(qa, qb), 0x7FF8_0000_0000_0007);
        assert_eq!(f64op(BinOp::Mul)(qa, qb), qb);
        assert_eq!(f64op(BinOp::Div)(qa, qb), qa);
        assert_eq!(f64op(BinOp::Min)(qa, qb), qa);
        assert_eq!(f64op(BinOp::Max)(qb, qa), qb);
        let inf = f64::INFINITY.to_bits();
        assert_eq!(f64op(BinOp::Sub)(inf, inf), 0xFFF8_0000_0000_0000);
        let fma = mad(Ty::F64).unwrap();
        assert_eq!(fma(qa, qb, one), qa);
        assert_eq!(fma(qa, one, qb), qb);
        assert_eq!(
            un(UnOp::Sqrt, Ty::F64).unwrap()((-1.0f64).to_bits()),
            0xFFF8_0000_0000_0000
        );
        assert_eq!(un(UnOp::Rsqrt, Ty::F64).unwrap()(qa), 0x7FFF_FFFF_0000_0000);
        assert_eq!(
            bin(BinOp::Add, Ty::F32).unwrap()(0x7FC0_0001, f(1.0)),
            0x7FFF_FFFF
        );
        let narrow = Cvt {
            round: Some(Round::Rn),
            sat: false,
            dty: Ty::F32,
            sty: Ty::F64,
        };
        assert_eq!(narrow.apply(0x7FF8_1234_0000_0000), 0x7FC0_91A0);
        assert_eq!(narrow.apply(0xFFF8_1234_0000_0000), 0xFFC0_91A0);
        let widen = Cvt {
            round: None,
            sat: false,
            dty: Ty::F64,
            sty: Ty::F32,
        };
        assert_eq!(widen.apply(0x7F80_0001), 0x7FF8_0000_2000_0000);
        let to_int = |dty, sty, v| {
            Cvt {
                round: Some(Round::Rzi),
                sat: false,
                dty,
                sty,
            }
            .apply(v)
        };
        let (nan32, nan64) = (f(f32::NAN), f64::NAN.to_bits());
        assert_eq!(to_int(Ty::S32, Ty::F32, nan32), 0);
        assert_eq!(to_int(Ty::S64, Ty::F32, nan32), 1 << 63);
        assert_eq!(to_int(Ty::U64, Ty::F64, nan64), 1 << 63);
        assert_eq!(to_int(Ty::U32, Ty::F64, nan64), 0x8000_0000);
        assert_eq!(to_int(Ty::S16, Ty::F64, nan64), 0xFFFF_8000);
        assert_eq!(to_int(Ty::U8, Ty::F64, nan64), 0x80);
    }

    #[test]
    fn atomics() {
        assert_eq!(
            atom_apply(AtomOp::Inc, AtomKind::U32, AtomAt::Global, 5, 5, 0),
            0
        );
        assert_eq!(
            atom_apply(AtomOp::Inc, AtomKind::U32, AtomAt::Global, 4, 5, 0),
            5
        );
        assert_eq!(
            atom_apply(AtomOp::Dec, AtomKind::U32, AtomAt::Global, 0, 5, 0),
            5
        );
        assert_eq!(
            atom_apply(AtomOp::Dec, AtomKind::U32, AtomAt::Global, 9, 5, 0),
            5
        );
        assert_eq!(
            atom_apply(AtomOp::Dec, AtomKind::U32, AtomAt::Global, 3, 5, 0),
            2
        );
        assert_eq!(
            atom_apply(AtomOp::Cas, AtomKind::U32, AtomAt::Global, 3, 3, 9),
            9
        );
        assert_eq!(
            atom_apply(AtomOp::Cas, AtomKind::U32, AtomAt::Global, 4, 3, 9),
            4
        );
        assert!(atom_kind(AtomOp::Inc, Ty::U64).is_none());
        assert!(atom_kind(AtomOp::Min, Ty::F32).is_none());
        // The types ptxas takes and no others: 64-bit adds are `.u64`, bitwise ops and
        // exchanges `.b`, minima and maxima signed or unsigned.
        for (op, refused, taken) in [
            (AtomOp::Add, Ty::S64, Ty::U64),
            (AtomOp::Add, Ty::B32, Ty::S32),
            (AtomOp::And, Ty::U32, Ty::B32),
            (AtomOp::Exch, Ty::F32, Ty::B32),
            (AtomOp::Cas, Ty::U64, Ty::B64),
            (AtomOp::Min, Ty::B32, Ty::S64),
            (AtomOp::Dec, Ty::S32, Ty::U32),
        ] {
            assert!(atom_kind(op, refused).is_none(), "{op:?}.{refused:?}");
            assert!(atom_kind(op, taken).is_some(), "{op:?}.{taken:?}");
        }
    }
}

//! Values and their arithmetic, as `src/ir/expr.rs` documents it: integers wrap at their width,
//! shifts by the width or more give 0 (or the sign), float→int casts saturate (NaN gives 0),
//! float `min`/`max` return the non-NaN operand and order `-0.0` below `+0.0`, comparisons are
//! ordered (false with a NaN) except `!=`. Integer division by zero (and `MIN / -1`) is
//! unspecified. Nothing here looks at how code generation or the simulator compute.

use coopgraph::ir::DType;
use coopgraph::ir::expr::{BinaryOp, CmpOp, UnaryOp};

/// The value is not defined: never written (a slot, an element of shared memory).
pub const UNDEF: u8 = 1;
/// The value is defined but not known to the interpreter (reassociated float sums, division
/// by zero, outputs the docs leave unspecified): not compared.
pub const UNSPEC: u8 = 2;
/// The value came from a function of the math library (or fast math) and is known only
/// within a tolerance.
pub const APPROX: u8 = 4;
/// Fast math contributed: the GPU may differ from the simulator.
pub const TAINT: u8 = 8;
/// Several threads of different blocks wrote it: the result depends on scheduling.
pub const NONDET: u8 = 16;

/// A value: bits zero-extended from the type's width (floats by their IEEE bits, predicates 0
/// or 1), and what is known about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V {
    pub bits: u64,
    pub flags: u8,
}

impl V {
    pub const UNDEF: V = V {
        bits: 0,
        flags: UNDEF,
    };

    pub fn exact(bits: u64) -> V {
        V { bits, flags: 0 }
    }

    pub fn with(bits: u64, flags: u8) -> V {
        V { bits, flags }
    }

    pub fn undef(self) -> bool {
        self.flags & UNDEF != 0
    }

    /// Whether the interpreter knows the value exactly.
    pub fn known(self) -> bool {
        self.flags & (UNDEF | UNSPEC | APPROX) == 0
    }
}

/// Flags of a result computed from operands with `flags`: an approximate operand makes the
/// result unknown (errors may grow), keeping the taint (where the approximation had one).
pub fn derive(flags: u8) -> u8 {
    let mut f = flags;
    if f & APPROX != 0 {
        f = (f & !APPROX) | UNSPEC;
    }
    f
}

pub fn width(dt: DType) -> u32 {
    dt.bytes() * 8
}

pub fn mask(dt: DType) -> u64 {
    match width(dt) {
        64 => u64::MAX,
        w => (1u64 << w) - 1,
    }
}

/// The integer value of `bits` in `dt` (signed types sign-extended).
pub fn int(dt: DType, bits: u64) -> i128 {
    let w = width(dt);
    let b = bits & mask(dt);
    if dt.is_signed_int() && w < 128 && b >> (w - 1) & 1 == 1 {
        b as i128 - (1i128 << w)
    } else {
        b as i128
    }
}

/// `v` wrapped into `dt`'s width.
pub fn wrap(dt: DType, v: i128) -> u64 {
    (v as u64) & mask(dt)
}

pub fn f32v(bits: u64) -> f32 {
    f32::from_bits(bits as u32)
}

pub fn f64v(bits: u64) -> f64 {
    f64::from_bits(bits)
}

/// The value of a float as f64 (exact for f32).
pub fn float(dt: DType, bits: u64) -> f64 {
    match dt {
        DType::F32 => f32v(bits) as f64,
        _ => f64v(bits),
    }
}

pub fn is_nan(dt: DType, bits: u64) -> bool {
    dt.is_float() && float(dt, bits).is_nan()
}

macro_rules! fminmax {
    ($name:ident, $t:ty) => {
        /// (min, max) with NaN and signed-zero rules.
        fn $name(a: $t, b: $t) -> ($t, $t) {
            match (a.is_nan(), b.is_nan()) {
                (true, true) => (<$t>::NAN, <$t>::NAN),
                (true, false) => (b, b),
                (false, true) => (a, a),
                _ if a < b => (a, b),
                _ if b < a => (b, a),
                // Equal: only the sign of a zero can differ.
                _ if a.is_sign_negative() => (a, b),
                _ => (b, a),
            }
        }
    };
}
fminmax!(minmax32, f32);
fminmax!(minmax64, f64);

/// Result of a binary op: bits, or unspecified.
pub type R = Option<u64>;

macro_rules! float_binary {
    ($name:ident, $t:ty, $minmax:ident, $from:ident, $to:expr) => {
        #[allow(clippy::unnecessary_cast)]
        fn $name(op: BinaryOp, a: u64, b: u64) -> R {
            let (x, y) = ($from(a), $from(b));
            let to: fn($t) -> u64 = $to;
            Some(to(match op {
                BinaryOp::Add => x + y,
                BinaryOp::Sub => x - y,
                BinaryOp::Mul => x * y,
                BinaryOp::Div => x / y,
                BinaryOp::Min => $minmax(x, y).0,
                BinaryOp::Max => $minmax(x, y).1,
                BinaryOp::Atan2 => (x as f64).atan2(y as f64) as $t,
                BinaryOp::Pow => (x as f64).powf(y as f64) as $t,
                BinaryOp::Hypot => (x as f64).hypot(y as f64) as $t,
                // The exponent is an i32: its bits, not a float.
                BinaryOp::Powi => (x as f64).powf(f64::from(b as u32 as i32)) as $t,
                _ => return None,
            }))
        }
    };
}
float_binary!(bin32, f32, minmax32, f32v, |v| v.to_bits() as u64);
float_binary!(bin64, f64, minmax64, f64v, |v| v.to_bits());

/// `a op b` in `dt` (for shifts, `b` is the u32 amount).
pub fn binary(op: BinaryOp, dt: DType, a: u64, b: u64) -> R {
    match dt {
        DType::F32 => return bin32(op, a, b),
        DType::F64 => return bin64(op, a, b),
        _ => {}
    }
    let w = width(dt);
    let (x, y) = (int(dt, a), int(dt, b));
    let v = match op {
        BinaryOp::Add => x + y,
        BinaryOp::Sub => x - y,
        BinaryOp::Mul => x.wrapping_mul(y),
        BinaryOp::Div | BinaryOp::Rem => {
            let min = if dt.is_signed_int() {
                -(1i128 << (w - 1))
            } else {
                0
            };
            if y == 0 || (dt.is_signed_int() && x == min && y == -1) {
                return None;
            }
            if op == BinaryOp::Div { x / y } else { x % y }
        }
        BinaryOp::Min => x.min(y),
        BinaryOp::Max => x.max(y),
        BinaryOp::MulHi if dt.is_signed_int() => (x * y) >> w,
        BinaryOp::MulHi => ((x as u128 * y as u128) >> w) as i128,
        // Float functions only.
        BinaryOp::Atan2 | BinaryOp::Pow | BinaryOp::Hypot | BinaryOp::Powi => return None,
        BinaryOp::And => x & y,
        BinaryOp::Or => x | y,
        BinaryOp::Xor => x ^ y,
        BinaryOp::Shl => {
            let s = b & 0xffff_ffff;
            if s >= w as u64 { 0 } else { x << s }
        }
        BinaryOp::Shr => {
            let s = b & 0xffff_ffff;
            match (s >= w as u64, x < 0) {
                (true, true) => -1,
                (true, false) => 0,
                (false, _) => x >> s,
            }
        }
    };
    Some(wrap(dt, v))
}

/// Predicate operators: and, or, xor.
pub fn bool_binary(op: BinaryOp, a: u64, b: u64) -> u64 {
    match op {
        BinaryOp::And => a & b & 1,
        BinaryOp::Or => (a | b) & 1,
        _ => (a ^ b) & 1,
    }
}

/// Whether `op` is a function of the math library (or `rsqrt`), which the interpreter
/// computes with Rust's `std` in f64: the kernel's result is close to it, not equal.
pub fn approximate(op: UnaryOp) -> bool {
    op.is_library()
}

/// A library function in f64 (Rust's `std`, the error functions by series).
fn library64(op: UnaryOp, x: f64) -> f64 {
    match op {
        UnaryOp::Rsqrt => 1.0 / x.sqrt(),
        UnaryOp::Exp2 => x.exp2(),
        UnaryOp::Log2 => x.log2(),
        UnaryOp::Sin => x.sin(),
        UnaryOp::Cos => x.cos(),
        UnaryOp::Tanh => x.tanh(),
        UnaryOp::Exp => x.exp(),
        UnaryOp::Exp10 => 10f64.powf(x),
        UnaryOp::Expm1 => x.exp_m1(),
        UnaryOp::Ln => x.ln(),
        UnaryOp::Log10 => x.log10(),
        UnaryOp::Log1p => x.ln_1p(),
        UnaryOp::Tan => x.tan(),
        UnaryOp::Asin => x.asin(),
        UnaryOp::Acos => x.acos(),
        UnaryOp::Atan => x.atan(),
        UnaryOp::Sinh => x.sinh(),
        UnaryOp::Cosh => x.cosh(),
        UnaryOp::Cbrt => x.cbrt(),
        UnaryOp::Erf => crate::common::erf(x),
        UnaryOp::Erfc => crate::common::erfc(x),
        _ => x,
    }
}

macro_rules! float_unary {
    ($name:ident, $t:ty, $from:ident, $to:expr) => {
        #[allow(clippy::unnecessary_cast)]
        fn $name(op: UnaryOp, a: u64) -> u64 {
            let x = $from(a);
            let to: fn($t) -> u64 = $to;
            to(match op {
                UnaryOp::Neg => -x,
                UnaryOp::Abs => x.abs(),
                UnaryOp::Sqrt => x.sqrt(),
                UnaryOp::Rcp => 1.0 / x,
                op if op.is_library() => library64(op, x as f64) as $t,
                UnaryOp::Floor => x.floor(),
                UnaryOp::Ceil => x.ceil(),
                UnaryOp::Trunc => x.trunc(),
                UnaryOp::Round => x.round_ties_even(),
                // Not, Popc, Clz, Brev, IsNan are typed elsewhere.
                _ => x,
            })
        }
    };
}
float_unary!(un32, f32, f32v, |v| v.to_bits() as u64);
float_unary!(un64, f64, f64v, |v| v.to_bits());

/// `op a` for an operand of `dt` (the result of `popc`/`clz` is a u32, of `is_nan` a
/// predicate; `not` on a predicate is logical).
pub fn unary(op: UnaryOp, dt: Option<DType>, a: u64) -> u64 {
    let Some(dt) = dt else {
        return (!a) & 1;
    };
    if op == UnaryOp::IsNan {
        return u64::from(is_nan(dt, a));
    }
    match dt {
        DType::F32 => return un32(op, a),
        DType::F64 => return un64(op, a),
        _ => {}
    }
    let w = width(dt);
    let x = int(dt, a);
    let b = a & mask(dt);
    match op {
        UnaryOp::Neg => wrap(dt, -x),
        UnaryOp::Not => wrap(dt, !x),
        UnaryOp::Abs => wrap(dt, x.abs()),
        UnaryOp::Popc => u64::from(b.count_ones()),
        UnaryOp::Clz => u64::from(b.leading_zeros() - (64 - w)),
        UnaryOp::Brev => b.reverse_bits() >> (64 - w),
        _ => b,
    }
}

/// `a op b` compared in `dt`.
pub fn compare(op: CmpOp, dt: DType, a: u64, b: u64) -> bool {
    if dt.is_float() {
        let (x, y) = (float(dt, a), float(dt, b));
        return match op {
            CmpOp::Eq => x == y,
            CmpOp::Ne => x != y,
            CmpOp::Lt => x < y,
            CmpOp::Le => x <= y,
            CmpOp::Gt => x > y,
            CmpOp::Ge => x >= y,
        };
    }
    let (x, y) = (int(dt, a), int(dt, b));
    match op {
        CmpOp::Eq => x == y,
        CmpOp::Ne => x != y,
        CmpOp::Lt => x < y,
        CmpOp::Le => x <= y,
        CmpOp::Gt => x > y,
        CmpOp::Ge => x >= y,
    }
}

/// `a * b + c`: one rounding for floats, wrapping for integers.
pub fn fma(dt: DType, a: u64, b: u64, c: u64) -> u64 {
    match dt {
        DType::F32 => f32v(a).mul_add(f32v(b), f32v(c)).to_bits() as u64,
        DType::F64 => f64v(a).mul_add(f64v(b), f64v(c)).to_bits(),
        _ => wrap(
            dt,
            int(dt, a).wrapping_mul(int(dt, b)).wrapping_add(int(dt, c)),
        ),
    }
}

macro_rules! float_to_int {
    ($x:expr, $to:expr) => {
        match $to {
            DType::I8 => $x as i8 as u8 as u64,
            DType::I16 => $x as i16 as u16 as u64,
            DType::I32 => $x as i32 as u32 as u64,
            DType::I64 => $x as i64 as u64,
            DType::U8 => $x as u8 as u64,
            DType::U16 => $x as u16 as u64,
            DType::U32 => $x as u32 as u64,
            _ => $x as u64,
        }
    };
}

/// Converts with Rust's `as` semantics.
pub fn cast(from: DType, to: DType, a: u64) -> u64 {
    match (from.is_float(), to.is_float()) {
        (false, false) => wrap(to, int(from, a)),
        (false, true) => {
            let x = int(from, a);
            match to {
                DType::F32 => (x as f32).to_bits() as u64,
                _ => (x as f64).to_bits(),
            }
        }
        (true, false) => match from {
            DType::F32 => float_to_int!(f32v(a), to),
            _ => float_to_int!(f64v(a), to),
        },
        (true, true) => match (from, to) {
            (DType::F32, DType::F64) => (f32v(a) as f64).to_bits(),
            (DType::F64, DType::F32) => (f64v(a) as f32).to_bits() as u64,
            _ => a,
        },
    }
}

/// Whether two values of `dt` are the same: equal bits, or both NaN.
pub fn same(dt: DType, a: u64, b: u64) -> bool {
    let m = mask(dt);
    a & m == b & m || (is_nan(dt, a) && is_nan(dt, b))
}

/// Whether `got` is within the tolerance of approximate functions of `want`.
pub fn close(dt: DType, got: u64, want: u64) -> bool {
    if same(dt, got, want) {
        return true;
    }
    let (g, w) = (float(dt, got), float(dt, want));
    if !g.is_finite() || !w.is_finite() {
        return false;
    }
    (g - w).abs() <= 1e-3 * w.abs().max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_edges() {
        assert_eq!(binary(BinaryOp::Shr, DType::I8, 0x80, 9), Some(0xff));
        assert_eq!(binary(BinaryOp::Shr, DType::U8, 0x80, 8), Some(0));
        assert_eq!(binary(BinaryOp::Shl, DType::U16, 1, 16), Some(0));
        assert_eq!(binary(BinaryOp::Div, DType::I32, 5, 0), None);
        assert_eq!(unary(UnaryOp::Clz, Some(DType::U8), 1), 7);
        assert_eq!(unary(UnaryOp::Brev, Some(DType::U8), 1), 0x80);
        assert_eq!(cast(DType::F32, DType::U8, (-3.0f32).to_bits() as u64), 0);
        assert_eq!(cast(DType::F64, DType::I32, f64::NAN.to_bits()), 0);
        assert_eq!(cast(DType::I8, DType::U32, 0xff), 0xffff_ffff);
        assert_eq!(fma(DType::U64, u64::MAX, u64::MAX, u64::MAX), 0);
    }
}

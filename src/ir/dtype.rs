//! Element types: the dtypes kernels compute on, and the Rust types that stand for them.

use std::fmt;

/// The element types of kernel parameters and payloads. There are no 16-bit floats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[allow(missing_docs)]
pub enum DType {
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F32,
    F64,
}

impl DType {
    /// Every dtype, for test matrices.
    pub const ALL: [DType; 10] = [
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::F32,
        DType::F64,
    ];

    /// Size in bytes.
    pub fn bytes(self) -> u32 {
        match self {
            DType::I8 | DType::U8 => 1,
            DType::I16 | DType::U16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::U64 | DType::F64 => 8,
        }
    }

    /// Whether this is `f32` or `f64`.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }

    /// Whether this is a signed integer.
    pub fn is_signed_int(self) -> bool {
        matches!(self, DType::I8 | DType::I16 | DType::I32 | DType::I64)
    }

    /// Whether this is an integer (signed or not).
    pub fn is_int(self) -> bool {
        !self.is_float()
    }

    /// The Rust name of the type (`i8`, `f32`...).
    pub fn name(self) -> &'static str {
        match self {
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U8 => "u8",
            DType::U16 => "u16",
            DType::U32 => "u32",
            DType::U64 => "u64",
            DType::F32 => "f32",
            DType::F64 => "f64",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A Rust type that stands for a [`DType`]: the element type of buffers, payloads and
/// expressions. Sealed: implemented for `i8..i64`, `u8..u64`, `f32`, `f64`.
///
/// Every element is a number in `num-traits`' terms, with what all ten types share: zero and
/// one ([`Num`](num_traits::Num), with the arithmetic operators), the type's range
/// ([`Bounded`](num_traits::Bounded)), and checked conversions from any primitive
/// ([`NumCast`](num_traits::NumCast)); so code generic over elements can make values without
/// naming a type:
///
/// ```
/// use coopgraph::ir::Element;
///
/// /// The identity of a max-reduction, and a poison value for outputs: generic over dtypes.
/// fn max_identity<T: Element>() -> T {
///     T::min_value()
/// }
/// fn poison<T: Element>() -> T {
///     T::max_value()
/// }
/// fn ramp<T: Element>(n: usize) -> Vec<T> {
///     (0..n).map(|i| <T as num_traits::NumCast>::from(i % 100).unwrap_or_else(T::zero)).collect()
/// }
///
/// assert_eq!(max_identity::<i8>(), -128);
/// assert_eq!(poison::<u16>(), u16::MAX);
/// assert_eq!(max_identity::<f32>(), f32::MIN);
/// assert_eq!(ramp::<f64>(3), vec![0.0, 1.0, 2.0]);
/// assert_eq!(<u8 as num_traits::One>::one() + 1, 2);
/// ```
pub trait Element:
    sealed::Sealed
    + Copy
    + Send
    + Sync
    + PartialEq
    + PartialOrd
    + fmt::Debug
    + Default
    + num_traits::Num
    + num_traits::NumCast
    + num_traits::Bounded
    + 'static
{
    /// The dtype.
    const DTYPE: DType;
    /// The value's bits, zero-extended to 64 (floats by their IEEE bits).
    fn to_bits(self) -> u64;
    /// The value from the low bits of `bits`.
    fn from_bits(bits: u64) -> Self;
    /// `v as Self`, with Rust's `as` semantics.
    fn cast_from_i64(v: i64) -> Self;
}

/// Element types atomics operate on: the 32- and 64-bit integers and floats (PTX has no
/// narrower atomics). `add`, `sub`, `min`, `max`, `nan_min`, `nan_max`, `exch` and `cas` take
/// any of them.
pub trait AtomicElement: Element {}
/// Integer element types atomics operate on: `and`, `or`, `xor` take only these.
pub trait AtomicInt: AtomicElement {}
/// Unsigned element types atomics operate on: `inc` and `dec` take only these.
pub trait AtomicUnsigned: AtomicInt {}

impl AtomicElement for i32 {}
impl AtomicElement for u32 {}
impl AtomicElement for i64 {}
impl AtomicElement for u64 {}
impl AtomicElement for f32 {}
impl AtomicElement for f64 {}
impl AtomicInt for i32 {}
impl AtomicInt for u32 {}
impl AtomicInt for i64 {}
impl AtomicInt for u64 {}
impl AtomicUnsigned for u32 {}
impl AtomicUnsigned for u64 {}

macro_rules! element {
    ($($t:ty => $d:ident, $to:expr, $from:expr;)*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            fn to_bits(self) -> u64 {
                let f: fn($t) -> u64 = $to;
                f(self)
            }
            fn from_bits(bits: u64) -> Self {
                let f: fn(u64) -> $t = $from;
                f(bits)
            }
            fn cast_from_i64(v: i64) -> Self {
                v as $t
            }
        }
    )*};
}

element! {
    i8 => I8, |v| v as u8 as u64, |b| b as u8 as i8;
    i16 => I16, |v| v as u16 as u64, |b| b as u16 as i16;
    i32 => I32, |v| v as u32 as u64, |b| b as u32 as i32;
    i64 => I64, |v| v as u64, |b| b as i64;
    u8 => U8, |v| v as u64, |b| b as u8;
    u16 => U16, |v| v as u64, |b| b as u16;
    u32 => U32, |v| v as u64, |b| b as u32;
    u64 => U64, |v| v, |b| b;
    f32 => F32, |v| v.to_bits() as u64, |b| f32::from_bits(b as u32);
    f64 => F64, |v| v.to_bits(), f64::from_bits;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_round_trip() {
        assert_eq!(i8::from_bits((-3i8).to_bits()), -3);
        assert_eq!((-1i16).to_bits(), 0xffff);
        assert_eq!(f32::from_bits(1.5f32.to_bits()), 1.5);
        assert_eq!(<f64 as Element>::DTYPE, DType::F64);
        assert_eq!(DType::U16.bytes(), 2);
    }
}

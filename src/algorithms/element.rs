//! The element types of the device-wide algorithms and how each packs into a 64-bit word.

use crate::ir::Expr;
use crate::runtime::{Arg, DeviceElement};

mod sealed {
    pub trait Sealed {}
}

/// An element type the device-wide algorithms take: `u32`, `i32`, `f32` (whose values share a
/// 64-bit tile status word with the status) and `u64`, `i64`, `f64` (whose values are published
/// in two halves, each in a word of its own beside a copy of the status).
///
/// ```
/// use coopgraph::algorithms::ScanElement;
///
/// assert!(!<f32 as ScanElement>::WIDE && <i64 as ScanElement>::WIDE);
/// ```
pub trait ScanElement: DeviceElement + for<'a> Arg<'a> + sealed::Sealed {
    /// Whether the value fills 64 bits (and so cannot share a status word).
    const WIDE: bool;

    /// The value's bits, zero-extended to 64 (floats by their IEEE bits).
    fn pack(e: &Expr<Self>) -> Expr<u64>;

    /// The value from the low bits of a word [`pack`](Self::pack) made.
    fn unpack(w: &Expr<u64>) -> Expr<Self>;
}

macro_rules! narrow_int {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl ScanElement for $t {
            const WIDE: bool = false;
            fn pack(e: &Expr<Self>) -> Expr<u64> {
                e.cast::<u32>().cast::<u64>()
            }
            fn unpack(w: &Expr<u64>) -> Expr<Self> {
                w.cast::<u32>().cast::<$t>()
            }
        }
    )*};
}
narrow_int!(u32, i32);

macro_rules! wide_int {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl ScanElement for $t {
            const WIDE: bool = true;
            fn pack(e: &Expr<Self>) -> Expr<u64> {
                e.cast::<u64>()
            }
            fn unpack(w: &Expr<u64>) -> Expr<Self> {
                w.cast::<$t>()
            }
        }
    )*};
}
wide_int!(u64, i64);

impl sealed::Sealed for f32 {}
impl ScanElement for f32 {
    const WIDE: bool = false;
    fn pack(e: &Expr<Self>) -> Expr<u64> {
        e.to_bits().cast::<u64>()
    }
    fn unpack(w: &Expr<u64>) -> Expr<Self> {
        Expr::<f32>::from_bits(w.cast::<u32>())
    }
}

impl sealed::Sealed for f64 {}
impl ScanElement for f64 {
    const WIDE: bool = true;
    fn pack(e: &Expr<Self>) -> Expr<u64> {
        e.to_bits()
    }
    fn unpack(w: &Expr<u64>) -> Expr<Self> {
        Expr::<f64>::from_bits(w.clone())
    }
}

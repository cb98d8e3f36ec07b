//! The key types of the device-wide radix sort and their digits: each key becomes unsigned
//! *sort bits* whose order is the keys' (as CUB's `DeviceRadixSort` twiddles them), and a
//! pass's digit is a field of those bits.

use crate::ir::expr::IntElement;
use crate::ir::{Expr, SortOrder};
use crate::runtime::DeviceElement;

mod sealed {
    pub trait Sealed {}
}

/// How a key's bits are made unsigned and ordered.
#[derive(Clone, Copy)]
enum Kind {
    Unsigned,
    Signed,
    Float,
}

/// A key type the device-wide radix sort takes: `u8`, `u16`, `u32`, `u64`, `i8`, `i16`,
/// `i32`, `i64`, `f32` and `f64`.
///
/// Keys sort by their *sort bits*, as CUB's `DeviceRadixSort` sorts them: unsigned keys by
/// their bits; signed keys with the sign bit flipped; floats with the sign bit flipped when
/// positive and every bit flipped when negative, so that a positive NaN sorts after `+inf`
/// and a negative NaN before `-inf` (ascending), and `-0.0` and `+0.0` have the same sort
/// bits (CUB's `ProcessFloatMinusZero`): the two zeros are equal keys and keep their input
/// order. Descending flips every sort bit.
///
/// ```
/// use coopgraph::runtime::Device;
///
/// let device = Device::sim();
/// let keys = [f32::NAN, 1.0, -f32::NAN, f32::INFINITY, 0.0, -0.0, f32::NEG_INFINITY];
/// let x = device.upload(&keys)?;
/// let mut y = device.alloc_zeroed::<f32>(7)?;
/// coopgraph::algorithms::radix_sort_keys(&device, &x, &mut y)?;
/// let bits: Vec<u32> = y.to_vec()?.iter().map(|v| v.to_bits()).collect();
/// let want = [-f32::NAN, f32::NEG_INFINITY, 0.0, -0.0, 1.0, f32::INFINITY, f32::NAN];
/// assert_eq!(bits, want.map(f32::to_bits));
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub trait SortKey: DeviceElement + sealed::Sealed {
    /// Bits `shift .. shift + width` of the key's sort bits in `order`, as the low bits of a
    /// `u32` (`width` at most 8 and `shift + width` within the key).
    fn digit(key: &Expr<Self>, shift: u32, width: u32, order: SortOrder) -> Expr<u32>;
}

/// The low `bits` bits set (`bits` at most 64).
fn ones(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// A literal of `B` from the low bits of `v`.
fn lit<B: IntElement>(v: u64) -> Expr<B> {
    Expr::lit(B::from_bits(v))
}

/// Bits `shift .. shift + width` of the sort bits of a key of `w` bits given as `raw` (its
/// bits in `B`, zero above `w`).
fn digit_of<B: IntElement>(
    raw: Expr<B>,
    kind: Kind,
    w: u32,
    order: SortOrder,
    shift: u32,
    width: u32,
) -> Expr<u32> {
    let all = ones(w);
    let sign = 1u64 << (w - 1);
    let bits = match kind {
        Kind::Unsigned => raw,
        Kind::Signed => raw ^ lit::<B>(sign),
        Kind::Float => {
            let negative = (raw.clone() & lit::<B>(sign)).ne(lit::<B>(0));
            raw ^ negative.select(lit::<B>(all), lit::<B>(sign))
        }
    };
    let bits = match order {
        SortOrder::Ascending => bits,
        SortOrder::Descending => bits ^ lit::<B>(all),
    };
    let bits = match kind {
        // The twiddled -0.0 (ascending; +0.0 descending) reads as the other zero.
        Kind::Float => bits
            .clone()
            .eq(lit::<B>(all >> 1))
            .select(lit::<B>(sign), bits),
        _ => bits,
    };
    (bits >> shift).cast::<u32>() & (ones(width) as u32)
}

macro_rules! narrow_key {
    ($($t:ty => $kind:ident, $w:expr, $raw:expr;)*) => {$(
        impl sealed::Sealed for $t {}
        impl SortKey for $t {
            fn digit(key: &Expr<Self>, shift: u32, width: u32, order: SortOrder) -> Expr<u32> {
                let raw: fn(&Expr<$t>) -> Expr<u32> = $raw;
                digit_of(raw(key), Kind::$kind, $w, order, shift, width)
            }
        }
    )*};
}

narrow_key! {
    u8 => Unsigned, 8, |k| k.cast::<u32>() & 0xffu32;
    u16 => Unsigned, 16, |k| k.cast::<u32>() & 0xffffu32;
    u32 => Unsigned, 32, |k| k.clone();
    i8 => Signed, 8, |k| k.cast::<u32>() & 0xffu32;
    i16 => Signed, 16, |k| k.cast::<u32>() & 0xffffu32;
    i32 => Signed, 32, |k| k.cast::<u32>();
    f32 => Float, 32, |k| k.to_bits();
}

macro_rules! wide_key {
    ($($t:ty => $kind:ident, $raw:expr;)*) => {$(
        impl sealed::Sealed for $t {}
        impl SortKey for $t {
            fn digit(key: &Expr<Self>, shift: u32, width: u32, order: SortOrder) -> Expr<u32> {
                let raw: fn(&Expr<$t>) -> Expr<u64> = $raw;
                digit_of(raw(key), Kind::$kind, 64, order, shift, width)
            }
        }
    )*};
}

wide_key! {
    u64 => Unsigned, |k| k.clone();
    i64 => Signed, |k| k.cast::<u64>();
    f64 => Float, |k| k.to_bits();
}

//! The sample types of the device-wide histogram, their level types, and how a sample finds
//! its bin between even levels (as `cub::DeviceHistogram::HistogramEven` computes it).

use super::AlgorithmError;
use crate::ir::Expr;
use crate::runtime::{Arg, DeviceElement};

mod sealed {
    pub trait Sealed {}
}

/// A sample type of the device-wide histogram ([`histogram_even`](super::histogram_even),
/// [`histogram_range`](super::histogram_range)): `u8`, `u16`, `i32`, `u32`, `f32` and `f64`.
///
/// Levels are of [`Level`](Self::Level), wide enough to name one past the samples' largest
/// value (`u32` for `u8` and `u16`, `i64` for `i32`, `u64` for `u32`; floats are their own
/// level type), so that a histogram can count every value of its sample type: 256 bins of
/// `u8` have levels 0 and 256.
///
/// Between even levels, sample `x` with `lower <= x < upper` goes to bin
/// - integers: `((x - lower) * bins) / (upper - lower)`, exactly (integer arithmetic, 32-bit
///   where it cannot overflow, else 64-bit), as CUB computes it;
/// - floats: `((x - lower) * scale) as u32` with `scale = bins / (upper - lower)` (each
///   operation rounded in the sample's type, as CUB computes it), the last bin where rounding
///   reaches `bins`. NaN samples fail the range test and are dropped.
///
/// ```
/// use coopgraph::algorithms::HistogramSample;
///
/// let upper: <u8 as HistogramSample>::Level = 256;
/// assert_eq!(upper, 256u32);
/// ```
pub trait HistogramSample: DeviceElement + for<'a> Arg<'a> + sealed::Sealed {
    /// The type of the levels.
    type Level: DeviceElement + for<'a> Arg<'a> + PartialOrd + Copy;

    /// Values the sample type has when they are few enough to count one by one (256 for
    /// `u8`): each block then counts raw values and maps them to bins once, at the end.
    #[doc(hidden)]
    const RAW_VALUES: u32;

    /// The sample as a level.
    #[doc(hidden)]
    fn level(x: &Expr<Self>) -> Expr<Self::Level>;

    /// The sample of raw value `v` (below [`RAW_VALUES`](Self::RAW_VALUES)).
    #[doc(hidden)]
    fn from_raw(v: &Expr<u32>) -> Expr<Self>;

    /// What the binning between even levels computes once, before the samples: the range
    /// `upper - lower` for integers, the scale `bins / (upper - lower)` for floats.
    #[doc(hidden)]
    fn even_scale(
        lower: &Expr<Self::Level>,
        upper: &Expr<Self::Level>,
        bins: u32,
    ) -> Expr<Self::Level>;

    /// Whether `x` lies in `[lower, upper)`, and its bin of `bins` even ones (`scale` from
    /// [`even_scale`](Self::even_scale)).
    #[doc(hidden)]
    fn even_bin(
        x: &Expr<Self>,
        levels: (&Expr<Self::Level>, &Expr<Self::Level>),
        scale: &Expr<Self::Level>,
        bins: u32,
    ) -> (Expr<bool>, Expr<u32>);

    /// Refuses even levels the binning cannot take: `lower` not below `upper`, or (integers)
    /// `(upper - lower) * bins` past 64 bits.
    #[doc(hidden)]
    fn check_even(lower: Self::Level, upper: Self::Level, bins: u32) -> Result<(), AlgorithmError>;
}

/// `(lower, upper)` are refused unless `lower < upper`.
fn ordered<L: PartialOrd>(lower: L, upper: L) -> Result<(), AlgorithmError> {
    if lower < upper {
        Ok(())
    } else {
        Err(AlgorithmError::LevelsNotIncreasing)
    }
}

macro_rules! narrow_sample {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl HistogramSample for $t {
            type Level = u32;
            const RAW_VALUES: u32 = if <$t>::BITS <= 8 { 1 << <$t>::BITS } else { 0 };
            fn level(x: &Expr<Self>) -> Expr<u32> {
                x.cast::<u32>()
            }
            fn from_raw(v: &Expr<u32>) -> Expr<Self> {
                v.cast::<$t>()
            }
            fn even_scale(lower: &Expr<u32>, upper: &Expr<u32>, _bins: u32) -> Expr<u32> {
                upper.clone() - lower.clone()
            }
            fn even_bin(
                x: &Expr<Self>,
                (lower, upper): (&Expr<u32>, &Expr<u32>),
                range: &Expr<u32>,
                bins: u32,
            ) -> (Expr<bool>, Expr<u32>) {
                let v = x.cast::<u32>();
                let inside = v.ge(lower.clone()) & v.lt(upper.clone());
                let offset = v - lower.clone();
                let range = range.clone();
                // offset < 2^16, so offset * bins fits 32 bits while bins <= 2^16.
                let bin = if bins <= 1 << 16 {
                    offset * bins / range
                } else {
                    (offset.cast::<u64>() * u64::from(bins) / range.cast::<u64>()).cast::<u32>()
                };
                (inside, bin)
            }
            fn check_even(lower: u32, upper: u32, _bins: u32) -> Result<(), AlgorithmError> {
                ordered(lower, upper)
            }
        }
    )*};
}
narrow_sample!(u8, u16);

macro_rules! wide_sample {
    ($($t:ty => $l:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl HistogramSample for $t {
            type Level = $l;
            const RAW_VALUES: u32 = 0;
            fn level(x: &Expr<Self>) -> Expr<$l> {
                x.cast::<$l>()
            }
            fn from_raw(v: &Expr<u32>) -> Expr<Self> {
                v.cast::<$t>()
            }
            fn even_scale(lower: &Expr<$l>, upper: &Expr<$l>, _bins: u32) -> Expr<$l> {
                upper.clone() - lower.clone()
            }
            fn even_bin(
                x: &Expr<Self>,
                (lower, upper): (&Expr<$l>, &Expr<$l>),
                range: &Expr<$l>,
                bins: u32,
            ) -> (Expr<bool>, Expr<u32>) {
                let v = x.cast::<$l>();
                let inside = v.ge(lower.clone()) & v.lt(upper.clone());
                let offset = (v - lower.clone()).cast::<u64>();
                let range = range.cast::<u64>();
                let bin = (offset * u64::from(bins) / range).cast::<u32>();
                (inside, bin)
            }
            fn check_even(lower: $l, upper: $l, bins: u32) -> Result<(), AlgorithmError> {
                ordered(lower, upper)?;
                let range = (i128::from(upper) - i128::from(lower)) as u128;
                if range * u128::from(bins) > u128::from(u64::MAX) {
                    return Err(AlgorithmError::BinningOverflow { bins });
                }
                Ok(())
            }
        }
    )*};
}
wide_sample!(i32 => i64, u32 => u64);

macro_rules! float_sample {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl HistogramSample for $t {
            type Level = $t;
            const RAW_VALUES: u32 = 0;
            fn level(x: &Expr<Self>) -> Expr<$t> {
                x.clone()
            }
            fn from_raw(v: &Expr<u32>) -> Expr<Self> {
                v.cast::<$t>()
            }
            fn even_scale(lower: &Expr<$t>, upper: &Expr<$t>, bins: u32) -> Expr<$t> {
                Expr::lit(bins as $t) / (upper.clone() - lower.clone())
            }
            fn even_bin(
                x: &Expr<Self>,
                (lower, upper): (&Expr<$t>, &Expr<$t>),
                scale: &Expr<$t>,
                bins: u32,
            ) -> (Expr<bool>, Expr<u32>) {
                let inside = x.ge(lower.clone()) & x.lt(upper.clone());
                let bin = ((x.clone() - lower.clone()) * scale.clone()).cast::<u32>().min(bins - 1);
                (inside, bin)
            }
            fn check_even(lower: $t, upper: $t, _bins: u32) -> Result<(), AlgorithmError> {
                ordered(lower, upper)
            }
        }
    )*};
}
float_sample!(f32, f64);

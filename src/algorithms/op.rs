//! The operators and element-wise maps of the device-wide algorithms.

use crate::ir::{Element, Expr, Reduce};
use std::fmt;
use std::sync::Arc;

type Combine<T> = Arc<dyn Fn(Expr<T>, Expr<T>) -> Expr<T> + Send + Sync>;

/// An element-wise map written in the expression language, fused into an algorithm's kernel
/// (what [`DeviceScan::map_input`](super::DeviceScan::map_input) and the other map methods
/// keep).
///
/// ```
/// use coopgraph::algorithms::MapFn;
/// use std::sync::Arc;
///
/// let double: MapFn<u32> = Arc::new(|v| v * 2u32);
/// let _ = double(coopgraph::ir::Expr::lit(4u32));
/// ```
pub type MapFn<T> = Arc<dyn Fn(Expr<T>) -> Expr<T> + Send + Sync>;

/// An associative operator of a device-wide scan or reduction: sum (wrapping for integers),
/// minimum, maximum, or the caller's own, written in the expression language. A custom
/// operator need not be commutative (values are combined in element order) and needs no
/// identity.
///
/// ```
/// use coopgraph::algorithms::{DeviceScan, Op, Workspace};
/// use coopgraph::runtime::Device;
///
/// // "Last non-zero": each output holds the latest non-zero input so far.
/// let device = Device::sim();
/// let last = Op::custom(|a, b: coopgraph::ir::Expr<i32>| b.ne(0).select(b, a));
/// let scan = DeviceScan::inclusive(last).prepare(&device)?;
/// let x = device.upload(&[0i32, 4, 0, 0, -3, 0])?;
/// let mut y = device.alloc_zeroed::<i32>(6)?;
/// scan.run(&x, &mut y, &mut Workspace::new(&device)?)?;
/// assert_eq!(y.to_vec()?, [0, 4, 4, 4, -3, -3]);
/// # Ok::<(), coopgraph::Error>(())
/// ```
#[derive(Clone)]
pub struct Op<T: Element> {
    kind: Kind<T>,
}

#[derive(Clone)]
enum Kind<T: Element> {
    Sum,
    Min,
    Max,
    Custom(Combine<T>),
}

impl<T: Element> fmt::Debug for Op<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.kind {
            Kind::Sum => "Op::sum",
            Kind::Min => "Op::min",
            Kind::Max => "Op::max",
            Kind::Custom(_) => "Op::custom",
        })
    }
}

impl<T: Element> Op<T> {
    /// The sum (wrapping for integers).
    pub fn sum() -> Self {
        Op { kind: Kind::Sum }
    }

    /// The minimum (for floats, the non-NaN one when one is NaN).
    pub fn min() -> Self {
        Op { kind: Kind::Min }
    }

    /// The maximum (for floats, the non-NaN one when one is NaN).
    pub fn max() -> Self {
        Op { kind: Kind::Max }
    }

    /// `f(a, b)`, where `a` comes before `b` in element order; `f` must be associative.
    pub fn custom(f: impl Fn(Expr<T>, Expr<T>) -> Expr<T> + Send + Sync + 'static) -> Self {
        Op {
            kind: Kind::Custom(Arc::new(f)),
        }
    }

    /// `a op b` as an expression.
    pub(crate) fn apply(&self, a: Expr<T>, b: Expr<T>) -> Expr<T> {
        match &self.kind {
            Kind::Sum => a + b,
            Kind::Min => a.min(b),
            Kind::Max => a.max(b),
            Kind::Custom(f) => f(a, b),
        }
    }

    /// Where the operator's result does not depend on the order it combines values in, its
    /// identity: sums (of floats up to rounding; `-0.0`, which leaves every float as it is,
    /// `+0.0` included) and the minimum and maximum of integers. `None` for a custom
    /// operator, and for the minimum and maximum of floats (which of two zeros or NaNs
    /// comes out may depend on the order).
    pub(crate) fn any_order_identity(&self) -> Option<T> {
        let float = T::DTYPE.is_float();
        match &self.kind {
            Kind::Sum => Some(sum_identity()),
            Kind::Min if !float => Some(T::max_value()),
            Kind::Max if !float => Some(T::min_value()),
            _ => None,
        }
    }

    /// The block collective's operator.
    pub(crate) fn reduce(&self) -> Reduce<T> {
        match &self.kind {
            Kind::Sum => Reduce::sum(),
            Kind::Min => Reduce::min(),
            Kind::Max => Reduce::max(),
            Kind::Custom(f) => {
                let f = f.clone();
                Reduce::custom(false, move |a, b| f(a, b))
            }
        }
    }
}

/// The identity of a sum of `T`: `0` for integers, `-0.0` for floats (`+0.0` is none:
/// `-0.0 + +0.0` is `+0.0`, where `-0.0` leaves every float as it is). Every fold that starts
/// from a sum's identity (the device reduce's any-order fold, what an empty rank contributes
/// to a reduce across ranks) takes it from here.
pub(crate) fn sum_identity<T: Element>() -> T {
    if T::DTYPE.is_float() {
        T::from_bits(1u64 << (T::DTYPE.bytes() * 8 - 1))
    } else {
        T::zero()
    }
}

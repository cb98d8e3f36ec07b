//! The `f64` functions of the library, written over primitive expressions.

use super::{Func, Template};
use crate::ir::expr::{Expr, UnaryOp};

type D = Expr<f64>;

/// Every `f64` template.
pub(super) fn templates() -> Vec<(Func, Template)> {
    let x = D::arg(0);
    vec![(Func::Unary(UnaryOp::Rsqrt), Template::new(&rsqrt(&x), &[]))]
}

/// `1 / sqrt(x)` from the correctly rounded square root and reciprocal: within 1 ulp.
fn rsqrt(x: &D) -> D {
    x.sqrt().recip()
}

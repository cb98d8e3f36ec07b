//! Math-library functions at the types the library has.

use super::{K, OpId, err};
use crate::ir::entities::ExprId;
use crate::ir::error::VerifyError;
use crate::ir::expr::ExprKind;
use crate::ir::ops::Ir;
use rustc_hash::FxHashSet;

/// Every math-library function an op evaluates is one the library has at its type (the typed
/// builder offers no other; hand-built IR may name, say, `sin` of an `i32`). Reported once per
/// function and type, at the first op that evaluates it.
pub(super) fn check_library_types(ir: &Ir, errors: &mut Vec<VerifyError>) {
    let nodes = ir.exprs.nodes();
    let mut seen = vec![false; nodes.len()];
    let mut reported = FxHashSet::default();
    for (i, op) in ir.ops.iter().enumerate() {
        let mut stack: Vec<ExprId> = op.kind.exprs().into_vec();
        while let Some(e) = stack.pop() {
            let Some(n) = nodes.get(e.index()) else {
                continue;
            };
            if std::mem::replace(&mut seen[e.index()], true) {
                continue;
            }
            stack.extend(n.kind.children().copied());
            let func = match n.kind {
                ExprKind::Unary(f, _) if f.is_library() => crate::ir::math::Func::Unary(f),
                ExprKind::Binary(f, ..) if f.is_library() => crate::ir::math::Func::Binary(f),
                _ => continue,
            };
            let dtype = n.ty.dtype();
            let known = dtype.is_some_and(|d| crate::ir::math::template(func, d).is_some());
            if !known && reported.insert((func, n.ty)) {
                let kind = K::MathFunctionType {
                    function: func.name(),
                    found: n.ty,
                };
                errors.push(err(kind, op.loc, Some(OpId(i as u32))));
            }
        }
    }
}

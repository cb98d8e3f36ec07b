//! The math library: each float function built from primitive expressions.
//!
//! A function of the library is one node of a kernel's expressions (a [`UnaryOp`] or
//! [`BinaryOp`] for which `is_library` holds). Code generation evaluates it from its
//! [`Template`]: the function written once, in the expression language itself, over
//! primitive operations only (float `add`/`sub`/`mul`/`fma`, correctly rounded `div`, `sqrt`
//! and `rcp`, conversions, comparisons, selects, integer and bit operations, bit casts), so
//! the GPU and the simulator compute the same bits. A template is built once per process and
//! shared by every use; each use emits its instructions inline.
//!
//! A select of a template may be *cold*: its first side (a rare case, such as the
//! Payne–Hanek reduction of a huge argument) is evaluated behind a branch, only by the
//! threads that take it, instead of by every thread. Each call has its own branch: deferring
//! the cold selects of all the calls of an expression to one branch (a first pass with their
//! common sides, a second where any condition held) issued 23% fewer instructions for sixteen
//! `exp`s summed but ran 3.5% slower, ptxas interleaving the calls in half the occupancy
//! (BENCHMARKS.md, "Cold paths deferred to one branch, tried").
//!
//! # Accuracy
//!
//! Measured against a reference computed in `f64` (Rust's `std`, whose error is far below
//! an `f32` ulp; the error functions by their series), by `tests/all/math.rs`: per function,
//! `n` arguments spread over every float by their bits (both signs), `n` spread evenly over
//! the range where the function varies, and the special values (±0, ±inf, NaN, the smallest
//! normal and subnormal, the largest finite); the functions of two operands over every pair
//! of 14 special values and 8192 random pairs at five scales. The GPU computes the same
//! bits: the sweeps are compared bit for bit between `Device::default_device()` and the
//! simulator. Maximum error, in ulps of the result, of the `f32` functions with
//! `n` = 2^20 on the H200 (`COOPGRAPH_MATH_SWEEP=1048576`), beside nvcc's default
//! functions over the same arguments (`benches/cub/math_ulp.cu`; goal: at most 1 where
//! they reach it):
//!
//! | function | max error (ulp) | nvcc's | | function | max error (ulp) | nvcc's |
//! |---|---|---|---|---|---|---|
//! | `exp` | 0.93 | 1.86 | | `asin` | 0.50 | 1.32 |
//! | `exp2` | 0.84 | 2.07 | | `acos` | 0.50 | 1.29 |
//! | `exp10` | 0.50 | 1.91 | | `atan` | 0.50 | 1.13 |
//! | `exp_m1` | 0.50 | 1.38 | | `sinh` | 0.50 | 2.39 |
//! | `ln` | 0.87 | 0.85 | | `cosh` | 0.50 | 2.08 |
//! | `log2` | 0.94 | 0.91 | | `tanh` | 0.50 | 1.74 |
//! | `log10` | 0.91 | 2.05 | | `cbrt` | 0.50 | 0.96 |
//! | `ln_1p` | 0.50 | 0.87 | | `erf` | 0.50 | 1.00 |
//! | `sin` | 1.43 | 1.43 | | `erfc` | 0.54 | 4.07 |
//! | `cos` | 1.45 | 1.49 | | `rsqrt` | 0.50 | 1.50 |
//! | `tan` | 2.34 | 2.76 | | `pow`, `powi`, `hypot`, `atan2` | 0.50 | - |
//!
//! The inverse trigonometric, hyperbolic, error, root and power functions, `exp10`,
//! `exp_m1` and `ln_1p` compute in `f64` internally and round once. `exp`, `exp2` and the
//! logarithms stay in `f32` for speed: `exp` takes its integer part from a magic-number sum
//! and adds it to the exponent bits, with a branch for `|x| > 86` (and NaN) only. `sin`,
//! `cos` and `tan` reduce arguments up to 105615 by a three-part
//! Cody–Waite reduction with FMAs and larger ones by Payne–Hanek (128 bits of 2/π), behind a
//! branch that only threads with such an argument take. `sqrt`, `recip` (`rcp.rn`), `/`
//! (`div.rn`) and `fma` are correctly rounded (0.5 ulp).
//!
//! The `f64` functions carry the intermediate results that decide the last bit as
//! double-doubles (exact products by FMA, exact sums by two-sum; see `f64.rs`): `exp`,
//! `exp2`, `exp10` by a Cody–Waite reduction by ln 2 and a degree-10 polynomial; the
//! logarithms by a bit split into `2^e (1 + f)` and the `atanh` series of `f / (2 + f)`;
//! `pow` and `powi` by a logarithm to about 2^-66 and `e^(y ln x)` of the double-double
//! product; `sin`, `cos`, `tan` by a three-part Cody–Waite reduction up to 2^30 and
//! Payne–Hanek (1216 bits of 2/π, a 53 by 256-bit product) past it, behind a cold branch;
//! `atan` and `asin`/`acos` by reductions to `tan(π/8)` and `1/2` (`asin(sqrt((1 - x) / 2))`);
//! the hyperbolic functions from `e^x - 1` or `e^x` as double-doubles; `cbrt` by two Halley
//! steps and a Newton step on the exact residual; `hypot` scaled by a power of 2, its square
//! root corrected once; `erf` by a polynomial in `x^2` below 1, `erfc` as `e^(-x^2)` (with
//! `x^2` a double-double) times piecewise fits on `[1/2, 1]`, `[1, 2]`, `[2, 4]` and in `1/x`
//! on `[4, 28]`; `rsqrt` by the rounded square root and reciprocal and a Newton step. Maximum
//! error, in ulps of the exact result, of the `f64` functions, measured against 60-digit
//! references (mpmath) by `tools/math-ulp.py` over the sweeps of `tests/all/math64.rs` at
//! 20000 arguments of each kind (`COOPGRAPH_MATH_SWEEP=20000 COOPGRAPH_MATH_DUMP=dir`: 40014
//! arguments per function of one operand, 20000 random pairs and the pairs of 14 special
//! values for the others; special values are checked exactly by the tests; `sinh` and `cosh`
//! also at 200000, 400014 arguments, where `cosh` reaches 0.84). The tests check
//! the same sweeps at 2048 arguments against the platform's libm in CI (goal: at most 2;
//! libdevice reaches 1 to 2):
//!
//! | function | max error (ulp) | | function | max error (ulp) |
//! |---|---|---|---|---|
//! | `exp` | 0.64 | | `asin` | 0.61 |
//! | `exp2` | 0.61 | | `acos` | 0.59 |
//! | `exp10` | 0.73 | | `atan` | 0.54 |
//! | `exp_m1` | 0.93 | | `atan2` | 0.58 |
//! | `ln` | 0.80 | | `sinh` | 0.60 |
//! | `log2` | 0.88 | | `cosh` | 0.84 |
//! | `log10` | 0.81 | | `tanh` | 0.54 |
//! | `ln_1p` | 0.72 | | `cbrt` | 0.50 |
//! | `sin` | 0.69 | | `erf` | 0.87 |
//! | `cos` | 0.71 | | `erfc` | 0.73 |
//! | `tan` | 0.75 | | `pow` | 0.56 |
//! | `rsqrt` | 0.50 | | `powi` | 0.58 |
//! | | | | `hypot` | 0.50 |
//!
//! # Fast math
//!
//! In a kernel built with [`fastmath`](crate::KernelBuilder::fastmath) the `f32` functions
//! with an approximate PTX instruction use it (with `.ftz`): `sin`, `cos` (`sin.approx`,
//! `cos.approx`), `tan` (their quotient by `div.approx`), `exp2` (`ex2.approx`), `exp` and
//! `exp10` (`ex2.approx` of the argument scaled), `log2` (`lg2.approx`), `ln` and `log10`
//! (`lg2.approx` scaled), `pow` (`ex2.approx(y * lg2.approx(x))`), `tanh` (`tanh.approx`),
//! `rsqrt`, `recip`, `sqrt` and `/` (`rsqrt.approx`, `rcp.approx`, `sqrt.approx`,
//! `div.approx`); the others, and every `f64` function, keep their accurate templates. PTX does not specify the
//! approximate instructions' bits, so the simulator computes them with Rust's `std` and the
//! GPU may differ: PTX documents `sin.approx`/`cos.approx` to 2^-20.9 absolute in
//! `[-π, π]`, `ex2.approx` to 2 ulp (of the full-range result), `lg2.approx` to 2^-22.6
//! absolute in `[0.5, 2]` (relative elsewhere), `rcp`/`sqrt`/`rsqrt.approx` to 1 ulp and
//! `div.approx` to 2 ulp; the tests compare the two within 1e-3 (relative, absolute below 1).

mod f32;
mod f64;

use super::dtype::DType;
use super::entities::ExprId;
use super::expr::{Arena, BinaryOp, Expr, ExprNode, ExprType, Node, UnaryOp};
use rustc_hash::FxHashMap;
use std::sync::{Arc, OnceLock};

/// A function of the math library.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Func {
    /// A function of one operand (`Arg(0)` in its template).
    Unary(UnaryOp),
    /// A function of two (`Arg(0)`, `Arg(1)`).
    Binary(BinaryOp),
}

impl Func {
    /// The function's name, as the IR listing prints it.
    pub fn name(self) -> &'static str {
        match self {
            Func::Unary(op) => crate::ir::print::unary_name(op),
            Func::Binary(BinaryOp::Atan2) => "atan2",
            Func::Binary(BinaryOp::Pow) => "pow",
            Func::Binary(BinaryOp::Hypot) => "hypot",
            Func::Binary(BinaryOp::Powi) => "powi",
            Func::Binary(_) => "a binary operator",
        }
    }
}

/// A function of the library as primitive expressions: a small arena whose `Arg(i)` nodes
/// stand for the operands, its root, and its cold selects.
#[derive(Debug)]
pub struct Template {
    nodes: Vec<ExprNode>,
    root: ExprId,
    cold: Vec<ExprId>,
}

impl Template {
    /// Interns `root`, with `cold` the select nodes whose first side is evaluated behind a
    /// branch.
    fn new<T: ExprType>(root: &Expr<T>, cold: &[Arc<Node>]) -> Template {
        let mut arena = Arena::default();
        let id = arena.intern(root.node());
        let mut cold: Vec<ExprId> = cold.iter().filter_map(|n| arena.id_of(n)).collect();
        cold.sort();
        cold.dedup();
        Template {
            nodes: arena.nodes().to_vec(),
            root: id,
            cold,
        }
    }

    /// The nodes, operands before their users.
    pub fn nodes(&self) -> &[ExprNode] {
        &self.nodes
    }

    /// The node computing the function.
    pub fn root(&self) -> ExprId {
        self.root
    }

    /// Whether `id` is a cold select: its first side is evaluated behind a branch taken only
    /// where the condition holds.
    pub fn is_cold(&self, id: ExprId) -> bool {
        self.cold.binary_search(&id).is_ok()
    }
}

/// The template of `f` at `d`, or `None` where the library has no such function.
pub fn template(f: Func, d: DType) -> Option<&'static Template> {
    static TEMPLATES: OnceLock<FxHashMap<(Func, DType), Template>> = OnceLock::new();
    TEMPLATES.get_or_init(build_all).get(&(f, d))
}

/// Builds every template.
fn build_all() -> FxHashMap<(Func, DType), Template> {
    let mut all = FxHashMap::default();
    for (f, t) in f32::templates() {
        all.insert((f, DType::F32), t);
    }
    for (f, t) in f64::templates() {
        all.insert((f, DType::F64), t);
    }
    all
}

/// The cold selects of a template being written.
#[derive(Default)]
struct Cold(Vec<Arc<Node>>);

impl Cold {
    /// `cond ? rare : common`, with `rare` evaluated behind a branch.
    fn select<T: crate::ir::Element>(
        &mut self,
        cond: &Expr<bool>,
        rare: Expr<T>,
        common: Expr<T>,
    ) -> Expr<T> {
        let e = cond.select(rare, common);
        self.0.push(e.node().clone());
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::expr::{ExprKind, VType};

    /// Every function the typed builder offers at `f32` (and at `f64`).
    const F32_UNARY: [UnaryOp; 21] = [
        UnaryOp::Rsqrt,
        UnaryOp::Exp,
        UnaryOp::Exp2,
        UnaryOp::Exp10,
        UnaryOp::Expm1,
        UnaryOp::Ln,
        UnaryOp::Log2,
        UnaryOp::Log10,
        UnaryOp::Log1p,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Tan,
        UnaryOp::Asin,
        UnaryOp::Acos,
        UnaryOp::Atan,
        UnaryOp::Sinh,
        UnaryOp::Cosh,
        UnaryOp::Tanh,
        UnaryOp::Cbrt,
        UnaryOp::Erf,
        UnaryOp::Erfc,
    ];

    #[test]
    fn every_library_function_has_a_template_of_primitive_nodes() {
        let mut all: Vec<(Func, DType)> = F32_UNARY
            .iter()
            .map(|&op| (Func::Unary(op), DType::F32))
            .collect();
        for op in [
            BinaryOp::Atan2,
            BinaryOp::Pow,
            BinaryOp::Hypot,
            BinaryOp::Powi,
        ] {
            all.push((Func::Binary(op), DType::F32));
        }
        // Every f64 function too.
        let f64_all: Vec<(Func, DType)> = all.iter().map(|&(f, _)| (f, DType::F64)).collect();
        all.extend(f64_all);
        for (f, d) in all {
            let t = template(f, d).unwrap_or_else(|| panic!("no template of {f:?} at {d}"));
            assert_eq!(t.nodes()[t.root().index()].ty, VType::D(d), "{f:?}");
            for (i, n) in t.nodes().iter().enumerate() {
                let primitive = match &n.kind {
                    ExprKind::Const(_) | ExprKind::Arg(0 | 1) | ExprKind::Cmp(..) => true,
                    ExprKind::Unary(op, _) => !op.is_library(),
                    ExprKind::Binary(op, ..) => !op.is_library(),
                    ExprKind::Select(..) | ExprKind::Cast(_) | ExprKind::Fma(..) => true,
                    _ => false,
                };
                assert!(primitive, "{f:?} at {d}: node {i} is {:?}", n.kind);
                // Children come first, so evaluating in any order of demand terminates.
                for c in n.kind.children() {
                    assert!(c.index() < i, "{f:?}: node {i}");
                }
            }
            for id in &t.cold {
                let cold = &t.nodes()[id.index()];
                assert!(matches!(cold.kind, ExprKind::Select(..)), "{f:?}");
            }
        }
    }

    #[test]
    fn trigonometric_functions_reduce_huge_arguments_behind_a_branch() {
        for op in [UnaryOp::Sin, UnaryOp::Cos, UnaryOp::Tan] {
            for d in [DType::F32, DType::F64] {
                let t = template(Func::Unary(op), d).expect("a template");
                assert_eq!(t.cold.len(), 1, "{op:?} at {d}");
            }
        }
    }

    /// An IR whose map evaluates `f` at `i32` (which the typed builder cannot write) is
    /// refused by the verifier at the map's line, naming the function.
    #[test]
    fn a_library_function_at_an_integer_type_is_a_typed_error() {
        use crate::ir::error::VerifyErrorKind;
        use crate::ir::expr::Node;
        use crate::ir::ops::OpKind;
        use crate::{KernelBuilder, Load, Store};
        use std::sync::Arc;

        for (f, arity) in [
            (Func::Unary(UnaryOp::Sin), 1),
            (Func::Binary(BinaryOp::Pow), 2),
        ] {
            let mut k = KernelBuilder::new("ill_typed").block(32);
            let (x, y) = (k.input::<i32>("x"), k.output::<i32>("y"));
            let t = k.load_from(k.this_block(), &x, Load::direct());
            let r = k.map(&t, |v| v + 1i32);
            k.store_to(k.this_block(), &y, &r, Store::direct());
            let mut ir = k.ir().clone();
            let ty = VType::D(DType::I32);
            let arg = Arc::new(Node {
                kind: ExprKind::Arg(0),
                ty,
                owner: None,
            });
            let kind = match (f, arity) {
                (Func::Unary(op), _) => ExprKind::Unary(op, arg),
                (Func::Binary(op), _) => ExprKind::Binary(op, arg.clone(), arg),
            };
            let bad = ir.exprs.intern(&Arc::new(Node {
                kind,
                ty,
                owner: None,
            }));
            let (at, loc) = (ir.ops.iter().enumerate())
                .find_map(|(i, o)| matches!(o.kind, OpKind::Map { .. }).then_some((i, o.loc)))
                .expect("a map");
            if let OpKind::Map { expr, .. } = &mut ir.ops[at].kind {
                *expr = bad;
            }
            let e = crate::ir::verify::verify(&ir).expect_err("verified");
            let hit = e.errors.iter().find(|e| {
                matches!(e.kind, VerifyErrorKind::MathFunctionType { function, found }
                    if function == f.name() && found == ty)
            });
            let hit = hit.unwrap_or_else(|| panic!("{f:?}: {e}"));
            assert_eq!(hit.loc, loc, "{f:?}");
            assert!(hit.to_string().contains(f.name()), "{hit}");
        }
    }
}

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
//! threads that take it, instead of by every thread.
//!
//! # Accuracy
//!
//! Measured against a reference computed in `f64` with Rust's `std` (whose error is far
//! below an `f32` ulp), over dense sweeps of the whole float range and special values (±0,
//! subnormals, ±inf, NaN, huge trigonometric arguments) by the tests in
//! `tests/all/math.rs`, on the simulator; the GPU computes the same bits (the same sweeps
//! are compared bit for bit between `Device::default_device()` and the simulator). Maximum
//! error in ulp of the result, `f32`:
//!
//! | function | max error (ulp) | CUDA libdevice (documented) |
//! |---|---|---|
//! | see `tests/all/math.rs` | | |
//!
//! `sqrt`, `recip` (`rcp.rn`), `/` (`div.rn`) and `fma` are correctly rounded (0.5 ulp).
//!
//! # Fast math
//!
//! In a kernel built with [`fastmath`](crate::KernelBuilder::fastmath) the `f32` functions
//! with an approximate PTX instruction use it (with `.ftz`): `sin`, `cos` (`sin.approx`,
//! `cos.approx`), `tan` (their quotient by `div.approx`), `exp2` (`ex2.approx`), `exp` and
//! `exp10` (`ex2.approx` of the argument scaled), `log2` (`lg2.approx`), `ln` and `log10`
//! (`lg2.approx` scaled), `pow` (`ex2.approx(y * lg2.approx(x))`), `tanh` (`tanh.approx`),
//! `rsqrt`, `recip`, `sqrt` and `/` (`rsqrt.approx`, `rcp.approx`, `sqrt.approx`,
//! `div.approx`); the others keep their accurate templates. PTX does not specify the
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
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// A function of the math library.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Func {
    /// A function of one operand (`Arg(0)` in its template).
    Unary(UnaryOp),
    /// A function of two (`Arg(0)`, `Arg(1)`).
    Binary(BinaryOp),
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
    static TEMPLATES: OnceLock<HashMap<(Func, DType), Template>> = OnceLock::new();
    TEMPLATES.get_or_init(build_all).get(&(f, d))
}

/// Builds every template.
fn build_all() -> HashMap<(Func, DType), Template> {
    let mut all = HashMap::new();
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

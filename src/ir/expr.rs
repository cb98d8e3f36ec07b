//! The scalar expression DSL: typed expressions built by operator overloading.
//!
//! An [`Expr<T>`] is an immutable tree (shared through `Arc`, never mutated) that stands for a
//! per-thread scalar of type `T`. Kernels use expressions in `map` bodies, branch conditions,
//! loop bounds, offsets and valid counts. When an op is recorded, the tree is flattened into the
//! kernel's expression arena ([`ExprNode`]s indexed by [`ExprId`]), sharing common subtrees.
//!
//! Rust's types reject what they can: float math exists only on float expressions, bit
//! operations only on integers, and the approximate transcendental functions (which PTX offers
//! for `f32` only) only on `Expr<f32>`.
//!
//! Semantics follow PTX and agree with Rust's wrapping arithmetic and `as` casts: integer
//! arithmetic wraps at the type's width; float→int casts round toward zero and saturate (NaN
//! gives 0); shifts by the width or more give 0 (or the sign for signed right shifts); integer
//! division by zero is unspecified.

use super::dtype::{DType, Element};
use super::entities::{ArrayId, ConstId, DataId, ExprId, LocalId, OpId, ParamId};
use super::identity::{BuilderId, Table};
use smallvec::SmallVec;
use std::fmt;
use std::marker::PhantomData;
use std::ops;
use std::sync::Arc;

/// The type of an expression value: a dtype, or a predicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VType {
    /// A predicate (comparison result).
    Bool,
    /// An element value.
    D(DType),
}

impl VType {
    /// The dtype, or `None` for predicates.
    pub fn dtype(self) -> Option<DType> {
        match self {
            VType::Bool => None,
            VType::D(d) => Some(d),
        }
    }
}

impl fmt::Display for VType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VType::Bool => f.write_str("bool"),
            VType::D(d) => write!(f, "{d}"),
        }
    }
}

/// An axis of a block or a grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Axis {
    /// The first (fastest-varying) axis.
    X,
    /// The second.
    Y,
    /// The third.
    Z,
}

impl Axis {
    /// Every axis, in order.
    pub const ALL: [Axis; 3] = [Axis::X, Axis::Y, Axis::Z];

    /// Its position in a `[x, y, z]` triple.
    pub fn index(self) -> usize {
        match self {
            Axis::X => 0,
            Axis::Y => 1,
            Axis::Z => 2,
        }
    }

    /// Its name as CUDA spells it (`x`, `y`, `z`).
    pub fn name(self) -> &'static str {
        match self {
            Axis::X => "x",
            Axis::Y => "y",
            Axis::Z => "z",
        }
    }
}

/// Built-in per-thread index values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IndexKind {
    /// The thread's linear rank in its block: `x + dx * (y + dy * z)` for the thread at
    /// `(x, y, z)` of a block of `dx * dy * dz` threads (`%tid.x` alone for 1-D blocks). It
    /// is the rank collectives number threads by, and warps are consecutive ranks.
    ThreadRank,
    /// The lane in the warp (`%laneid`).
    Lane,
    /// The warp's rank in the block (`tid / 32`).
    WarpRank,
    /// The block's index in the grid (`%ctaid.x`).
    BlockIndex,
    /// The number of blocks in the grid (`%nctaid.x`).
    GridBlocks,
    /// The number of threads in the block.
    BlockThreads,
    /// The thread's index in the block along an axis (`%tid.y`); 0 along an axis the block
    /// does not extend in.
    ThreadIdx(Axis),
    /// The block's index in the grid along an axis (`%ctaid.y`); along x, the same as
    /// [`IndexKind::BlockIndex`].
    BlockIdx(Axis),
    /// The block's extent along an axis (`%ntid.y`, a constant of the kernel).
    BlockDim(Axis),
    /// The grid's extent in blocks along an axis (`%nctaid.y`); along x, the same as
    /// [`IndexKind::GridBlocks`].
    GridDim(Axis),
    /// The cluster's extent in blocks along an axis (`%cluster_nctaid.y`, sm_90): the shape a
    /// launch gives a kernel built with
    /// [`cluster_at_launch`](crate::KernelBuilder::cluster_at_launch).
    ClusterDim(Axis),
    /// The index of the item (slot) a `map` body is computing; only valid inside `map`.
    Item,
}

/// One-operand operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum UnaryOp {
    Neg,
    /// Bitwise not on integers, logical not on predicates.
    Not,
    Abs,
    Sqrt,
    Rsqrt,
    Rcp,
    Exp2,
    Log2,
    Sin,
    Cos,
    Tanh,
    /// `e^x`.
    Exp,
    /// `10^x`.
    Exp10,
    /// `e^x - 1`.
    Expm1,
    /// The natural logarithm.
    Ln,
    Log10,
    /// `ln(1 + x)`.
    Log1p,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    /// The cube root.
    Cbrt,
    /// The error function.
    Erf,
    /// `1 - erf(x)`.
    Erfc,
    /// The operand's bits as the node's type (of the same width): `f32` <-> `u32`, `f64` <->
    /// `u64`.
    Bitcast,
    Floor,
    Ceil,
    Trunc,
    /// Round half to even.
    Round,
    Popc,
    Clz,
    Brev,
    IsNan,
}

/// Two-operand operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Min,
    Max,
    /// Bitwise and on integers, logical and on predicates (on predicates, the right operand
    /// is evaluated only where the left holds when it reads memory, as `&&`).
    And,
    /// Bitwise or on integers, logical or on predicates (on predicates, the right operand is
    /// evaluated only where the left fails when it reads memory, as `||`).
    Or,
    Xor,
    Shl,
    Shr,
    /// The high half of the double-width product of two integers.
    MulHi,
    /// `atan(a / b)` in the quadrant of the point `(b, a)` (floats).
    Atan2,
    /// `a^b` (floats).
    Pow,
    /// `sqrt(a^2 + b^2)` without overflow or underflow on the way (floats).
    Hypot,
    /// `a^n` for an `i32` exponent `n` (the right operand).
    Powi,
}

impl UnaryOp {
    /// Whether this is a function of the math library ([`crate::ir::math`]): built from
    /// primitive operations when code is generated, or from approximate instructions under
    /// `fastmath`.
    pub fn is_library(self) -> bool {
        use UnaryOp::*;
        matches!(
            self,
            Rsqrt
                | Exp2
                | Log2
                | Sin
                | Cos
                | Tanh
                | Exp
                | Exp10
                | Expm1
                | Ln
                | Log10
                | Log1p
                | Tan
                | Asin
                | Acos
                | Atan
                | Sinh
                | Cosh
                | Cbrt
                | Erf
                | Erfc
        )
    }
}

impl BinaryOp {
    /// Whether this is a function of the math library ([`crate::ir::math`]).
    pub fn is_library(self) -> bool {
        matches!(
            self,
            BinaryOp::Atan2 | BinaryOp::Pow | BinaryOp::Hypot | BinaryOp::Powi
        )
    }
}

/// Comparisons (ordered for floats: false when either side is NaN, except `Ne`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// The shape of an expression node, generic over how children are referenced: `Arc` trees in
/// the builder, [`ExprId`]s in the kernel's arena.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ExprKind<C> {
    /// A constant: the value's bits (see [`Element::to_bits`]); predicates are 0 or 1.
    Const(u64),
    /// A scalar kernel parameter.
    Param(ParamId),
    /// The `n`th operand item of a `map` body.
    Arg(u8),
    /// One slot of a payload.
    Item {
        /// The payload.
        data: DataId,
        /// The slot.
        item: u32,
    },
    /// A built-in index.
    Index(IndexKind),
    /// The induction variable of a loop op (`for` or `tiles`); `field` 0 is the counter,
    /// for `tiles` 1 is the tile's origin and 2 its valid count.
    LoopVar {
        /// The loop op.
        op: OpId,
        /// Which value of the loop.
        field: u8,
    },
    /// A one-operand operation.
    Unary(UnaryOp, C),
    /// A two-operand operation.
    Binary(BinaryOp, C, C),
    /// A comparison (the node's type is `Bool`).
    Cmp(CmpOp, C, C),
    /// `cond ? a : b`. Only the side taken is evaluated where a side reads memory (a shared,
    /// local or constant array, a buffer): the other side's reads never happen.
    Select(C, C, C),
    /// A conversion to the node's type.
    Cast(C),
    /// `a * b + c` rounded once (floats) or wrapping (integers).
    Fma(C, C, C),
    /// Element `index` of a shared array.
    SharedRead(ArrayId, C),
    /// Element `index` (`u32`) of the thread's own local array.
    LocalRead(LocalId, C),
    /// Element `index` (`u32`) of a constant array.
    ConstRead(ConstId, C),
    /// Element `index` (`u32`, or `u64`) of a buffer parameter the kernel may read: an input
    /// (through the read-only path) or a read-write buffer. Where bounds are checked, an index
    /// at or past the buffer's length reads 0 (`0.0` for floats) and touches no memory.
    GlobalRead(ParamId, C),
}

impl<C> ExprKind<C> {
    /// The children, in order.
    pub fn children(&self) -> impl Iterator<Item = &C> {
        let [a, b, c] = self.child_slots();
        a.into_iter().chain(b).chain(c)
    }

    /// The children in order, then as many `None` as there are fewer than three.
    fn child_slots(&self) -> [Option<&C>; 3] {
        let (a, b, c) = match self {
            ExprKind::Unary(_, a)
            | ExprKind::Cast(a)
            | ExprKind::SharedRead(_, a)
            | ExprKind::LocalRead(_, a)
            | ExprKind::ConstRead(_, a)
            | ExprKind::GlobalRead(_, a) => (Some(a), None, None),
            ExprKind::Binary(_, a, b) | ExprKind::Cmp(_, a, b) => (Some(a), Some(b), None),
            ExprKind::Select(a, b, c) | ExprKind::Fma(a, b, c) => (Some(a), Some(b), Some(c)),
            _ => (None, None, None),
        };
        [a, b, c]
    }

    /// The same node with children mapped.
    pub fn map_children<D>(&self, mut f: impl FnMut(&C) -> D) -> ExprKind<D> {
        match self {
            ExprKind::Const(v) => ExprKind::Const(*v),
            ExprKind::Param(p) => ExprKind::Param(*p),
            ExprKind::Arg(i) => ExprKind::Arg(*i),
            ExprKind::Item { data, item } => ExprKind::Item {
                data: *data,
                item: *item,
            },
            ExprKind::Index(k) => ExprKind::Index(*k),
            ExprKind::LoopVar { op, field } => ExprKind::LoopVar {
                op: *op,
                field: *field,
            },
            ExprKind::Unary(o, a) => ExprKind::Unary(*o, f(a)),
            ExprKind::Binary(o, a, b) => {
                let a = f(a);
                ExprKind::Binary(*o, a, f(b))
            }
            ExprKind::Cmp(o, a, b) => {
                let a = f(a);
                ExprKind::Cmp(*o, a, f(b))
            }
            ExprKind::Select(c, a, b) => {
                let c = f(c);
                let a = f(a);
                ExprKind::Select(c, a, f(b))
            }
            ExprKind::Cast(a) => ExprKind::Cast(f(a)),
            ExprKind::SharedRead(arr, i) => ExprKind::SharedRead(*arr, f(i)),
            ExprKind::LocalRead(arr, i) => ExprKind::LocalRead(*arr, f(i)),
            ExprKind::ConstRead(arr, i) => ExprKind::ConstRead(*arr, f(i)),
            ExprKind::GlobalRead(p, i) => ExprKind::GlobalRead(*p, f(i)),
            ExprKind::Fma(a, b, c) => {
                let a = f(a);
                let b = f(b);
                ExprKind::Fma(a, b, f(c))
            }
        }
    }
}

/// A node of the builder's expression tree.
///
/// Trees may share subtrees (`let y = x.clone() + x;`), so a tree of depth `d` can stand for
/// `2^d` nodes: nothing here walks one as a tree. Dropping a tree takes it apart in a loop, so
/// a deep tree does not overflow the stack; `Debug` shows the first levels only.
pub struct Node {
    /// What it computes.
    pub kind: ExprKind<Arc<Node>>,
    /// Its type.
    pub ty: VType,
    /// For a node naming a builder's entity (a parameter, payload slot, loop variable or
    /// shared array), the builder that made the handle.
    pub(crate) owner: Option<BuilderId>,
}

impl Node {
    /// The builder's entity this node names, if any: its owner, table, index and what it is.
    pub(crate) fn names(&self) -> Option<(BuilderId, Table, u32, &'static str)> {
        let owner = self.owner?;
        Some(match &self.kind {
            ExprKind::Param(p) => (owner, Table::Param, p.0, "parameter"),
            ExprKind::Item { data, .. } => (owner, Table::Data, data.0, "payload"),
            ExprKind::LoopVar { op, .. } => (owner, Table::Op, op.0, "loop variable"),
            ExprKind::SharedRead(a, _) => (owner, Table::Array, a.0, "shared array"),
            ExprKind::LocalRead(a, _) => (owner, Table::Local, a.0, "local array"),
            ExprKind::ConstRead(a, _) => (owner, Table::Const, a.0, "constant array"),
            ExprKind::GlobalRead(p, _) => (owner, Table::Param, p.0, "parameter"),
            _ => return None,
        })
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        // Children this node holds the last reference to are emptied here, one after the
        // other, instead of dropping each other recursively.
        let mut orphans = Vec::new();
        take_children(&mut self.kind, &mut orphans);
        while let Some(child) = orphans.pop() {
            if let Some(mut node) = Arc::into_inner(child) {
                take_children(&mut node.kind, &mut orphans);
            }
        }
    }
}

/// Moves the children out of `kind` (leaving a constant) into `out`.
fn take_children(kind: &mut ExprKind<Arc<Node>>, out: &mut Vec<Arc<Node>>) {
    if kind.children().next().is_none() {
        return;
    }
    match std::mem::replace(kind, ExprKind::Const(0)) {
        ExprKind::Unary(_, a)
        | ExprKind::Cast(a)
        | ExprKind::SharedRead(_, a)
        | ExprKind::LocalRead(_, a)
        | ExprKind::ConstRead(_, a)
        | ExprKind::GlobalRead(_, a) => out.push(a),
        ExprKind::Binary(_, a, b) | ExprKind::Cmp(_, a, b) => out.extend([a, b]),
        ExprKind::Select(a, b, c) | ExprKind::Fma(a, b, c) => out.extend([a, b, c]),
        ExprKind::Const(_)
        | ExprKind::Param(_)
        | ExprKind::Arg(_)
        | ExprKind::Item { .. }
        | ExprKind::Index(_)
        | ExprKind::LoopVar { .. } => {}
    }
}

impl fmt::Debug for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        /// Levels shown; deeper subtrees print as `..`.
        const SHOWN: usize = 8;
        fn go(n: &Node, depth: usize, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            if depth >= SHOWN {
                return f.write_str("..");
            }
            let sub = |c: &Arc<Node>, f: &mut fmt::Formatter<'_>| go(c, depth + 1, f);
            match &n.kind {
                ExprKind::Const(bits) => write!(f, "{bits:#x}"),
                ExprKind::Param(p) => write!(f, "{p}"),
                ExprKind::Arg(i) => write!(f, "arg{i}"),
                ExprKind::Item { data, item } => write!(f, "{data}[{item}]"),
                ExprKind::Index(k) => write!(f, "{k:?}"),
                ExprKind::LoopVar { op, field } => write!(f, "{op}.{field}"),
                ExprKind::Unary(o, a) => {
                    write!(f, "{o:?}(")?;
                    sub(a, f)?;
                    f.write_str(")")
                }
                ExprKind::Binary(o, a, b) => {
                    write!(f, "{o:?}(")?;
                    sub(a, f)?;
                    f.write_str(", ")?;
                    sub(b, f)?;
                    f.write_str(")")
                }
                ExprKind::Cmp(o, a, b) => {
                    write!(f, "{o:?}(")?;
                    sub(a, f)?;
                    f.write_str(", ")?;
                    sub(b, f)?;
                    f.write_str(")")
                }
                ExprKind::Select(c, a, b) => {
                    f.write_str("Select(")?;
                    sub(c, f)?;
                    f.write_str(", ")?;
                    sub(a, f)?;
                    f.write_str(", ")?;
                    sub(b, f)?;
                    f.write_str(")")
                }
                ExprKind::Cast(a) => {
                    write!(f, "{}(", n.ty)?;
                    sub(a, f)?;
                    f.write_str(")")
                }
                ExprKind::Fma(a, b, c) => {
                    f.write_str("Fma(")?;
                    sub(a, f)?;
                    f.write_str(", ")?;
                    sub(b, f)?;
                    f.write_str(", ")?;
                    sub(c, f)?;
                    f.write_str(")")
                }
                ExprKind::SharedRead(arr, i) => {
                    write!(f, "{arr}[")?;
                    sub(i, f)?;
                    f.write_str("]")
                }
                ExprKind::LocalRead(arr, i) => {
                    write!(f, "{arr}[")?;
                    sub(i, f)?;
                    f.write_str("]")
                }
                ExprKind::ConstRead(arr, i) => {
                    write!(f, "{arr}[")?;
                    sub(i, f)?;
                    f.write_str("]")
                }
                ExprKind::GlobalRead(p, i) => {
                    write!(f, "{p}[")?;
                    sub(i, f)?;
                    f.write_str("]")
                }
            }
        }
        write!(f, "{}: ", self.ty)?;
        go(self, 0, f)
    }
}

/// A node of the kernel's expression arena.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ExprNode {
    /// What it computes.
    pub kind: ExprKind<ExprId>,
    /// Its type.
    pub ty: VType,
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for bool {}
    impl<T: crate::ir::Element> Sealed for T {}
}

/// A type an expression can have: every [`Element`] type, and `bool` for predicates.
pub trait ExprType: sealed::Sealed + Copy + 'static {
    /// The expression type.
    const VTYPE: VType;
}

impl ExprType for bool {
    const VTYPE: VType = VType::Bool;
}

impl<T: Element> ExprType for T {
    const VTYPE: VType = VType::D(T::DTYPE);
}

/// Integer element types: the ones with bit operations and shifts.
pub trait IntElement: Element {}
/// Float element types: the ones with `sqrt`, `floor`, ...
pub trait FloatElement: Element {}
macro_rules! marker {
    ($tr:ident: $($t:ty),*) => {$(impl $tr for $t {})*};
}
marker!(IntElement: i8, i16, i32, i64, u8, u16, u32, u64);
marker!(FloatElement: f32, f64);

/// A typed per-thread scalar expression. Cheap to clone.
pub struct Expr<T: ExprType> {
    pub(crate) node: Arc<Node>,
    _t: PhantomData<fn() -> T>,
}

impl<T: ExprType> Clone for Expr<T> {
    fn clone(&self) -> Self {
        Expr::wrap(self.node.clone())
    }
}

impl<T: ExprType> fmt::Debug for Expr<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Expr({:?})", self.node)
    }
}

impl<T: ExprType> Expr<T> {
    pub(crate) fn wrap(node: Arc<Node>) -> Self {
        Expr {
            node,
            _t: PhantomData,
        }
    }

    pub(crate) fn new(kind: ExprKind<Arc<Node>>) -> Self {
        Expr::wrap(Arc::new(Node {
            kind,
            ty: T::VTYPE,
            owner: None,
        }))
    }

    /// A node naming an entity of the builder `owner`.
    pub(crate) fn owned(kind: ExprKind<Arc<Node>>, owner: BuilderId) -> Self {
        Expr::wrap(Arc::new(Node {
            kind,
            ty: T::VTYPE,
            owner: Some(owner),
        }))
    }

    /// The node at the root of this expression.
    pub fn node(&self) -> &Arc<Node> {
        &self.node
    }

    fn bin(op: BinaryOp, a: &Self, b: &Self) -> Self {
        Expr::new(ExprKind::Binary(op, a.node.clone(), b.node.clone()))
    }

    fn un(op: UnaryOp, a: &Self) -> Self {
        Expr::new(ExprKind::Unary(op, a.node.clone()))
    }

    fn cmp(op: CmpOp, a: &Self, b: &Self) -> Expr<bool> {
        Expr::new(ExprKind::Cmp(op, a.node.clone(), b.node.clone()))
    }
}

impl<T: Element> Expr<T> {
    /// A constant.
    pub fn lit(v: T) -> Self {
        Expr::new(ExprKind::Const(v.to_bits()))
    }

    pub(crate) fn arg(i: u8) -> Self {
        Expr::new(ExprKind::Arg(i))
    }

    /// `self == rhs`.
    pub fn eq(&self, rhs: impl Into<Expr<T>>) -> Expr<bool> {
        Expr::cmp(CmpOp::Eq, self, &rhs.into())
    }
    /// `self != rhs` (true when either side is NaN).
    pub fn ne(&self, rhs: impl Into<Expr<T>>) -> Expr<bool> {
        Expr::cmp(CmpOp::Ne, self, &rhs.into())
    }
    /// `self < rhs`.
    pub fn lt(&self, rhs: impl Into<Expr<T>>) -> Expr<bool> {
        Expr::cmp(CmpOp::Lt, self, &rhs.into())
    }
    /// `self <= rhs`.
    pub fn le(&self, rhs: impl Into<Expr<T>>) -> Expr<bool> {
        Expr::cmp(CmpOp::Le, self, &rhs.into())
    }
    /// `self > rhs`.
    pub fn gt(&self, rhs: impl Into<Expr<T>>) -> Expr<bool> {
        Expr::cmp(CmpOp::Gt, self, &rhs.into())
    }
    /// `self >= rhs`.
    pub fn ge(&self, rhs: impl Into<Expr<T>>) -> Expr<bool> {
        Expr::cmp(CmpOp::Ge, self, &rhs.into())
    }
    /// The smaller of the two (for floats, the non-NaN one when one is NaN).
    pub fn min(&self, rhs: impl Into<Expr<T>>) -> Self {
        Expr::bin(BinaryOp::Min, self, &rhs.into())
    }
    /// The larger of the two (for floats, the non-NaN one when one is NaN).
    pub fn max(&self, rhs: impl Into<Expr<T>>) -> Self {
        Expr::bin(BinaryOp::Max, self, &rhs.into())
    }
    /// The absolute value (wrapping for the most negative integer; identity on unsigned).
    pub fn abs(&self) -> Self {
        Expr::un(UnaryOp::Abs, self)
    }
    /// `self * b + c`: one rounding for floats, wrapping for integers.
    pub fn fma(&self, b: impl Into<Expr<T>>, c: impl Into<Expr<T>>) -> Self {
        Expr::new(ExprKind::Fma(
            self.node.clone(),
            b.into().node.clone(),
            c.into().node.clone(),
        ))
    }
    /// Converts to another dtype with Rust's `as` semantics.
    pub fn cast<U: Element>(&self) -> Expr<U> {
        if T::DTYPE == U::DTYPE {
            return Expr::wrap(self.node.clone());
        }
        Expr::new(ExprKind::Cast(self.node.clone()))
    }
}

impl<T: IntElement> Expr<T> {
    /// The number of set bits.
    pub fn popc(&self) -> Expr<u32> {
        Expr::new(ExprKind::Unary(UnaryOp::Popc, self.node.clone()))
    }
    /// The number of leading zero bits.
    pub fn clz(&self) -> Expr<u32> {
        Expr::new(ExprKind::Unary(UnaryOp::Clz, self.node.clone()))
    }
    /// The bits in reverse order.
    pub fn reverse_bits(&self) -> Self {
        Expr::un(UnaryOp::Brev, self)
    }
}

impl<T: FloatElement> Expr<T> {
    /// Square root, correctly rounded.
    pub fn sqrt(&self) -> Self {
        Expr::un(UnaryOp::Sqrt, self)
    }
    /// Reciprocal, correctly rounded.
    pub fn recip(&self) -> Self {
        Expr::un(UnaryOp::Rcp, self)
    }
    /// Round toward minus infinity.
    pub fn floor(&self) -> Self {
        Expr::un(UnaryOp::Floor, self)
    }
    /// Round toward plus infinity.
    pub fn ceil(&self) -> Self {
        Expr::un(UnaryOp::Ceil, self)
    }
    /// Round toward zero.
    pub fn trunc(&self) -> Self {
        Expr::un(UnaryOp::Trunc, self)
    }
    /// Round to nearest, ties to even.
    pub fn round_even(&self) -> Self {
        Expr::un(UnaryOp::Round, self)
    }
    /// Whether the value is NaN.
    pub fn is_nan(&self) -> Expr<bool> {
        Expr::new(ExprKind::Unary(UnaryOp::IsNan, self.node.clone()))
    }
}

impl Expr<bool> {
    /// A constant predicate.
    pub fn lit_bool(v: bool) -> Self {
        Expr::new(ExprKind::Const(v as u64))
    }
    /// `self ? a : b`. A side that reads memory (a shared array, a buffer) is read only where
    /// it is taken, so `has.select(s.read(tid - 1), 0)` never reads element `-1`.
    pub fn select<T: Element>(&self, a: impl Into<Expr<T>>, b: impl Into<Expr<T>>) -> Expr<T> {
        Expr::new(ExprKind::Select(
            self.node.clone(),
            a.into().node.clone(),
            b.into().node.clone(),
        ))
    }
    /// 1 when true, 0 when false.
    pub fn to<T: Element>(&self) -> Expr<T> {
        self.select(
            Expr::lit(T::cast_from_i64(1)),
            Expr::lit(T::cast_from_i64(0)),
        )
    }
    /// Both. As `&&`, `rhs` is evaluated only where `self` holds when it reads memory: a
    /// bounds test guards the read after it (`i.lt(n).and(&x.at(i).gt(0))`).
    pub fn and(&self, rhs: &Expr<bool>) -> Expr<bool> {
        Expr::bin(BinaryOp::And, self, rhs)
    }
    /// Either. As `||`, `rhs` is evaluated only where `self` fails when it reads memory.
    pub fn or(&self, rhs: &Expr<bool>) -> Expr<bool> {
        Expr::bin(BinaryOp::Or, self, rhs)
    }
}

/// `cond ? a : b`.
pub fn select<T: Element>(
    cond: &Expr<bool>,
    a: impl Into<Expr<T>>,
    b: impl Into<Expr<T>>,
) -> Expr<T> {
    cond.select(a, b)
}

impl<T: Element> From<T> for Expr<T> {
    fn from(v: T) -> Self {
        Expr::lit(v)
    }
}

impl<T: Element> From<&Expr<T>> for Expr<T> {
    fn from(e: &Expr<T>) -> Self {
        e.clone()
    }
}

impl From<bool> for Expr<bool> {
    fn from(v: bool) -> Self {
        Expr::lit_bool(v)
    }
}

macro_rules! binop {
    ($tr:ident, $f:ident, $op:ident, $bound:ident) => {
        impl<T: $bound, R: Into<Expr<T>>> ops::$tr<R> for Expr<T> {
            type Output = Expr<T>;
            fn $f(self, rhs: R) -> Expr<T> {
                Expr::bin(BinaryOp::$op, &self, &rhs.into())
            }
        }
        impl<T: $bound, R: Into<Expr<T>>> ops::$tr<R> for &Expr<T> {
            type Output = Expr<T>;
            fn $f(self, rhs: R) -> Expr<T> {
                Expr::bin(BinaryOp::$op, self, &rhs.into())
            }
        }
    };
}
binop!(Add, add, Add, Element);
binop!(Sub, sub, Sub, Element);
binop!(Mul, mul, Mul, Element);
binop!(Div, div, Div, Element);
binop!(Rem, rem, Rem, IntElement);
binop!(BitAnd, bitand, And, IntElement);
binop!(BitOr, bitor, Or, IntElement);
binop!(BitXor, bitxor, Xor, IntElement);

macro_rules! shift {
    ($tr:ident, $f:ident, $op:ident) => {
        impl<T: IntElement, R: Into<Expr<u32>>> ops::$tr<R> for Expr<T> {
            type Output = Expr<T>;
            fn $f(self, rhs: R) -> Expr<T> {
                let amount = rhs.into();
                Expr::new(ExprKind::Binary(BinaryOp::$op, self.node, amount.node))
            }
        }
        impl<T: IntElement, R: Into<Expr<u32>>> ops::$tr<R> for &Expr<T> {
            type Output = Expr<T>;
            fn $f(self, rhs: R) -> Expr<T> {
                let amount = rhs.into();
                Expr::new(ExprKind::Binary(
                    BinaryOp::$op,
                    self.node.clone(),
                    amount.node,
                ))
            }
        }
    };
}
shift!(Shl, shl, Shl);
shift!(Shr, shr, Shr);

impl<T: Element> ops::Neg for Expr<T> {
    type Output = Expr<T>;
    fn neg(self) -> Expr<T> {
        Expr::un(UnaryOp::Neg, &self)
    }
}

impl<T: IntElement> ops::Not for Expr<T> {
    type Output = Expr<T>;
    fn not(self) -> Expr<T> {
        Expr::un(UnaryOp::Not, &self)
    }
}

impl ops::Not for Expr<bool> {
    type Output = Expr<bool>;
    fn not(self) -> Expr<bool> {
        Expr::un(UnaryOp::Not, &self)
    }
}

impl ops::BitAnd for Expr<bool> {
    type Output = Expr<bool>;
    fn bitand(self, rhs: Expr<bool>) -> Expr<bool> {
        Expr::bin(BinaryOp::And, &self, &rhs)
    }
}

impl ops::BitOr for Expr<bool> {
    type Output = Expr<bool>;
    fn bitor(self, rhs: Expr<bool>) -> Expr<bool> {
        Expr::bin(BinaryOp::Or, &self, &rhs)
    }
}

impl ops::BitXor for Expr<bool> {
    type Output = Expr<bool>;
    fn bitxor(self, rhs: Expr<bool>) -> Expr<bool> {
        Expr::bin(BinaryOp::Xor, &self, &rhs)
    }
}

// `2.0 * x` as well as `x * 2.0`.
macro_rules! lhs_literal {
    ($($t:ty),*) => {$(
        impl ops::Add<Expr<$t>> for $t {
            type Output = Expr<$t>;
            fn add(self, rhs: Expr<$t>) -> Expr<$t> { Expr::lit(self) + rhs }
        }
        impl ops::Sub<Expr<$t>> for $t {
            type Output = Expr<$t>;
            fn sub(self, rhs: Expr<$t>) -> Expr<$t> { Expr::lit(self) - rhs }
        }
        impl ops::Mul<Expr<$t>> for $t {
            type Output = Expr<$t>;
            fn mul(self, rhs: Expr<$t>) -> Expr<$t> { Expr::lit(self) * rhs }
        }
        impl ops::Div<Expr<$t>> for $t {
            type Output = Expr<$t>;
            fn div(self, rhs: Expr<$t>) -> Expr<$t> { Expr::lit(self) / rhs }
        }
    )*};
}
lhs_literal!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

/// Built-in index expressions.
pub mod index;
mod math;

/// Flattens builder trees into an arena, sharing subtrees that are the same `Arc` and
/// structurally equal nodes.
#[derive(Debug, Default, Clone)]
pub struct Arena {
    pub(crate) nodes: Vec<ExprNode>,
    by_ptr: rustc_hash::FxHashMap<usize, ExprId>,
    by_value: rustc_hash::FxHashMap<ExprNode, ExprId>,
    // Keeps interned trees alive (each by its root) so pointer keys stay unique.
    roots: Vec<Arc<Node>>,
}

impl Arena {
    /// Interns a tree and returns its root's id. Children are interned before their parents,
    /// left to right, each node once however often the tree shares it; the walk keeps its own
    /// stack, so a deep tree does not overflow the thread's.
    pub fn intern(&mut self, node: &Arc<Node>) -> ExprId {
        self.intern_with(node, |_| {})
    }

    /// [`intern`](Self::intern), calling `visit` on each node interned for the first time.
    pub(crate) fn intern_with(&mut self, node: &Arc<Node>, mut visit: impl FnMut(&Node)) -> ExprId {
        let key = |n: &Arc<Node>| Arc::as_ptr(n) as usize;
        // A tree met before (a variable's read, an operand used again) walks nothing.
        if let Some(&id) = self.by_ptr.get(&key(node)) {
            return id;
        }
        // (node, whether its children are interned).
        let mut stack: SmallVec<[(&Arc<Node>, bool); 16]> = smallvec::smallvec![(node, false)];
        let mut last = ExprId(0);
        while let Some((n, ready)) = stack.pop() {
            if self.by_ptr.contains_key(&key(n)) {
                continue;
            }
            if !ready {
                stack.push((n, true));
                // Reversed, so the first child is interned first.
                for c in n.kind.child_slots().into_iter().rev().flatten() {
                    stack.push((c, false));
                }
                continue;
            }
            visit(n);
            let kind = n
                .kind
                .map_children(|c| self.by_ptr.get(&key(c)).copied().unwrap_or(ExprId(0)));
            let flat = ExprNode { kind, ty: n.ty };
            let id = match self.by_value.get(&flat) {
                Some(&id) => id,
                None => {
                    let id = ExprId(self.nodes.len() as u32);
                    self.nodes.push(flat.clone());
                    self.by_value.insert(flat, id);
                    id
                }
            };
            self.by_ptr.insert(key(n), id);
            last = id;
        }
        // The root keeps every node interned here alive (those interned before are kept by
        // their own roots), so no pointer key is freed and used again.
        self.roots.push(node.clone());
        // The root, not interned on entry, is the walk's last node.
        last
    }

    /// The id a tree interned here got, if it was.
    pub(crate) fn id_of(&self, node: &Arc<Node>) -> Option<ExprId> {
        self.by_ptr.get(&(Arc::as_ptr(node) as usize)).copied()
    }

    /// The node behind an id.
    pub fn get(&self, id: ExprId) -> Option<&ExprNode> {
        self.nodes.get(id.index())
    }

    /// Every node, in id order (children before parents).
    pub fn nodes(&self) -> &[ExprNode] {
        &self.nodes
    }

    /// The depth of every node, in id order: 1 for a leaf, one more than its deepest operand
    /// otherwise (an operand that is not before its user counts as a leaf).
    pub fn depths(&self) -> Vec<u32> {
        let mut depth: Vec<u32> = Vec::with_capacity(self.nodes.len());
        for n in &self.nodes {
            let below = n.kind.children().filter_map(|c| depth.get(c.index())).max();
            depth.push(below.map_or(1, |d| d.saturating_add(1)));
        }
        depth
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_build_typed_trees() {
        let x = Expr::<f32>::arg(0);
        let y = x.clone() * 2.0 + 1.0;
        assert_eq!(y.node.ty, VType::D(DType::F32));
        let c = y.gt(0.5f32);
        assert_eq!(c.node.ty, VType::Bool);
        let z: Expr<i32> = c.select(1i32, -1i32);
        assert_eq!(z.node.ty, VType::D(DType::I32));
        let w = 3.0f32 * x;
        assert!(matches!(w.node.kind, ExprKind::Binary(BinaryOp::Mul, _, _)));
    }

    #[test]
    fn arena_shares_subtrees() {
        let x = Expr::<u32>::arg(0);
        let s = x.clone() + 1u32;
        let t = s.clone() * s.clone();
        let mut a = Arena::default();
        let id = a.intern(&t.node);
        // arg, const, add, mul
        assert_eq!(a.nodes().len(), 4);
        let again = a.intern(&(Expr::<u32>::arg(0) + 1u32).node);
        assert_ne!(again, id);
        assert_eq!(a.nodes().len(), 4);
    }

    /// Trees dropped by their builder after interning stay alive in the arena, so a tree
    /// made later never lands at the address of one met before and takes its id: each of
    /// these trees, interned and dropped at once (its inner nodes too), reads back as the
    /// tree it was.
    #[test]
    fn dropped_trees_keep_their_ids() {
        let mut a = Arena::default();
        let mut ids = Vec::new();
        for i in 0..500u32 {
            let e = (Expr::<u32>::arg(0) * (i + 7)) + (i + 1);
            ids.push((i, a.intern(&e.node)));
        }
        for (i, id) in ids {
            let Some(ExprNode {
                kind: ExprKind::Binary(BinaryOp::Add, mul, add),
                ..
            }) = a.get(id)
            else {
                panic!("tree {i}: not an addition");
            };
            let lit = |e: &ExprId| a.get(*e).map(|n| n.kind.clone());
            assert_eq!(
                lit(add),
                Some(ExprKind::Const(u64::from(i + 1))),
                "tree {i}"
            );
            let Some(ExprKind::Binary(BinaryOp::Mul, _, k)) = lit(mul) else {
                panic!("tree {i}: not a product");
            };
            assert_eq!(lit(&k), Some(ExprKind::Const(u64::from(i + 7))), "tree {i}");
        }
    }
}

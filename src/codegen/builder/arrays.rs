//! Local and constant arrays in the emission builder: their declarations (each array its own,
//! named as the IR listing names it, with its type, length and source line in the comment, so
//! the simulator checks every access against the array it was computed from) and the
//! addresses of their elements.

use super::*;
use crate::ir::options::{ArrayMemory, CheckKind};

/// A local or constant array's symbol, whose address the prologue reads once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ArraySymbol {
    /// `Function::local[i]`.
    Local(u32),
    /// `Function::consts[i]`.
    Const(u32),
}

/// The `.local` declarations: one per local array, `local0` as the listing names it.
pub(super) fn local_decls(ir: &Ir) -> Vec<LocalDecl> {
    (ir.locals.iter().enumerate())
        .map(|(i, a)| LocalDecl {
            name: LocalId(i as u32).to_string(),
            align: a.dtype.bytes().max(4),
            bytes: a.len.saturating_mul(a.dtype.bytes()),
            comment: Some(format!(
                "local{i}: local {} x {} at {}",
                a.dtype, a.len, a.loc
            )),
        })
        .collect()
}

/// The `.const` declarations with their contents: one per constant array, named after the
/// entry (`<entry>_cmem0`), since constants live at module scope and a module may hold several
/// entries.
pub(super) fn const_decls(ir: &Ir, entry: &str) -> Vec<ConstDecl> {
    (ir.consts.iter().enumerate())
        .map(|(i, a)| {
            let size = a.dtype.bytes() as usize;
            ConstDecl {
                name: format!("{entry}_{}", ConstId(i as u32)),
                align: a.dtype.bytes().max(4),
                data: (a.data.iter())
                    .flat_map(|b| b.to_le_bytes().into_iter().take(size))
                    .collect(),
                comment: Some(format!(
                    "cmem{i}: const {} x {} at {}",
                    a.dtype,
                    a.data.len(),
                    a.loc
                )),
            }
        })
        .collect()
}

/// A user-declared array an indexed access names.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ArrayRef {
    /// `Ir::arrays[i]`.
    Shared(ArrayId),
    /// `Ir::locals[i]`.
    Local(LocalId),
    /// `Ir::consts[i]`.
    Const(ConstId),
}

impl Emitter<'_> {
    /// Where bounds are checked ([`Bounds::Checked`](crate::ir::Bounds)): whether `index` (the
    /// value of `index_expr`, a `u32`) lies inside `array`, the guard of the access (an index
    /// past the end reads 0 and skips its write, as one past a buffer does). `None` where
    /// bounds are unchecked or the index is a constant inside the array. In a debug kernel, a
    /// failure is recorded where the index is outside (and `guard` holds).
    pub(crate) fn array_inside(
        &mut self,
        array: ArrayRef,
        index_expr: ExprId,
        index: Reg,
        write: bool,
        guard: Option<Reg>,
    ) -> Option<Reg> {
        if self.ir.bounds == Bounds::Unchecked {
            return None;
        }
        let (memory, declared, len) = match array {
            // The library's own array, every index inside it by construction.
            ArrayRef::Shared(a) if self.ir.arrays[a.index()].inside => return None,
            ArrayRef::Shared(a) => {
                let d = &self.ir.arrays[a.index()];
                (ArrayMemory::Shared, d.loc, (!d.dynamic).then_some(d.len))
            }
            ArrayRef::Local(a) => {
                let d = &self.ir.locals[a.index()];
                (ArrayMemory::Local, d.loc, Some(d.len))
            }
            ArrayRef::Const(a) => {
                let d = &self.ir.consts[a.index()];
                (ArrayMemory::Const, d.loc, Some(d.data.len() as u32))
            }
        };
        if let Some(len) = len
            && index_max(self.ir, index_expr).is_some_and(|m| m < u64::from(len))
        {
            return None;
        }
        let limit = match (len, array) {
            (Some(len), _) => {
                let r = self.reg(RegClass::B32);
                self.op(Op::Mov {
                    ty: Ty::U32,
                    dst: r,
                    src: Operand::Imm(i64::from(len)),
                });
                r
            }
            (None, ArrayRef::Shared(a)) => self.dynamic_array_len(a),
            (None, _) => return None,
        };
        let inside = self.setp(Cmp::Lt, Ty::U32, index.into(), limit.into());
        if self.checking() {
            let outside = self.reg(RegClass::Pred);
            self.op(Op::PredNot {
                dst: outside,
                a: inside,
            });
            let fail = self.both(guard, Some(outside)).unwrap_or(outside);
            let what = CheckKind::ArrayIndex {
                memory,
                declared,
                write,
            };
            self.record_failure(what, fail, index, limit);
        }
        Some(inside)
    }

    /// The address of element `index` of the thread's local array `array`.
    pub(crate) fn local_addr(&mut self, array: LocalId, index: Reg) -> Reg {
        let size = self.ir.locals[array.index()].dtype.bytes();
        self.element_addr_of(ArraySymbol::Local(array.0), index, size)
    }

    /// The address of element `index` of constant array `array`.
    pub(crate) fn const_addr(&mut self, array: ConstId, index: Reg) -> Reg {
        let size = self.ir.consts[array.index()].dtype.bytes();
        self.element_addr_of(ArraySymbol::Const(array.0), index, size)
    }

    /// `[addr] = v` in `space`, at `dtype`'s memory type.
    pub(crate) fn store_at(
        &mut self,
        space: Space,
        dtype: DType,
        addr: Reg,
        v: Reg,
        guard: Option<Reg>,
    ) {
        self.maybe_guarded(
            guard,
            Op::St {
                space,
                ty: mem_ty(dtype),
                addr: Address {
                    base: AddrBase::Reg(addr),
                    offset: 0,
                },
                src: smallvec![v.into()],
            },
        );
    }

    /// `symbol + index * size`, 64 bits wide; the symbol's address is read once, in the
    /// prologue.
    fn element_addr_of(&mut self, symbol: ArraySymbol, index: Reg, size: u32) -> Reg {
        let base = match self.array_bases.get(&symbol) {
            Some(&r) => r,
            None => {
                let r = self.reg(RegClass::B64);
                self.entry_op(Op::Mov {
                    ty: Ty::U64,
                    dst: r,
                    src: match symbol {
                        ArraySymbol::Local(i) => Operand::LocalAddr(i),
                        ArraySymbol::Const(i) => Operand::ConstAddr(i),
                    },
                });
                self.array_bases.insert(symbol, r);
                r
            }
        };
        let addr = self.reg(RegClass::B64);
        self.op(Op::MadWide {
            ty: Ty::U32,
            dst: addr,
            a: index.into(),
            b: Operand::Imm(i64::from(size)),
            c: base.into(),
        });
        addr
    }
}

/// The largest value a `u32` index expression can take in the kernel, where simple interval
/// reasoning bounds it (`None` otherwise): constants, the thread's position in the block
/// (bounded by the block's shape), a `for_range` variable (below its end), a `u8` or `u16`
/// widened, and `+`, `*`, `/` and `%` by constants, `&`, `>>`, `min`, `max` and selects of
/// such. An access whose index is
/// bounded inside its array needs no guard: a tile's `a[ty][k]` with `k` the loop variable of
/// `0..TILE` costs nothing.
pub(crate) fn index_max(ir: &Ir, e: ExprId) -> Option<u64> {
    bound_of(ir, e, 0, &mut FxHashMap::default())
}

/// [`index_max`] of node `e` at `depth`, each node judged once (`seen`): an expression may
/// share its subtrees, and one of 48 nodes has 2^48 paths. A bound found at any depth bounds
/// the node, and `None` only leaves a guard in place, so the first judgement stands.
fn bound_of(
    ir: &Ir,
    e: ExprId,
    depth: u32,
    seen: &mut FxHashMap<ExprId, Option<u64>>,
) -> Option<u64> {
    if let Some(&known) = seen.get(&e) {
        return known;
    }
    let bound = node_bound(ir, e, depth, seen);
    seen.insert(e, bound);
    bound
}

fn node_bound(
    ir: &Ir,
    e: ExprId,
    depth: u32,
    seen: &mut FxHashMap<ExprId, Option<u64>>,
) -> Option<u64> {
    use crate::ir::expr::{Axis, BinaryOp as B, IndexKind as I};
    if depth > 32 {
        return None;
    }
    let node = ir.exprs.get(e)?;
    if node.ty != crate::ir::expr::VType::D(DType::U32) {
        return None;
    }
    let mut max = |x: ExprId| bound_of(ir, x, depth + 1, seen);
    let konst = |x: ExprId| match ir.exprs.get(x).map(|n| &n.kind) {
        Some(ExprKind::Const(c)) => Some(*c),
        _ => None,
    };
    let [dx, dy, dz] = ir.block.dims.map(u64::from);
    let v = match &node.kind {
        ExprKind::Const(c) => *c,
        ExprKind::Index(k) => match k {
            I::ThreadRank => (dx * dy * dz).checked_sub(1)?,
            I::Lane => 31,
            I::WarpRank => (dx * dy * dz).div_ceil(32).checked_sub(1)?,
            I::BlockThreads => dx * dy * dz,
            I::ThreadIdx(Axis::X) => dx.checked_sub(1)?,
            I::ThreadIdx(Axis::Y) => dy.checked_sub(1)?,
            I::ThreadIdx(Axis::Z) => dz.checked_sub(1)?,
            I::BlockDim(Axis::X) => dx,
            I::BlockDim(Axis::Y) => dy,
            I::BlockDim(Axis::Z) => dz,
            _ => return None,
        },
        ExprKind::LoopVar { op, field: 0 } => match &ir.ops.get(op.index())?.kind {
            crate::ir::ops::OpKind::For { end, .. } => max(*end)?.checked_sub(1)?,
            _ => return None,
        },
        ExprKind::Binary(op, a, b) => match op {
            B::Add => max(*a)?.checked_add(max(*b)?)?,
            B::Mul => max(*a)?.checked_mul(max(*b)?)?,
            B::Div => max(*a)? / konst(*b).filter(|&c| c > 0)?,
            B::Rem => match konst(*b).filter(|&c| c > 0) {
                Some(c) => max(*a).map_or(c - 1, |m| m.min(c - 1)),
                None => return None,
            },
            B::And => match (max(*a), max(*b)) {
                (Some(x), Some(y)) => x.min(y),
                (Some(x), None) | (None, Some(x)) => x,
                (None, None) => return None,
            },
            B::Shr => max(*a)? >> konst(*b).filter(|&c| c < 32)?,
            B::Min => match (max(*a), max(*b)) {
                (Some(x), Some(y)) => x.min(y),
                (Some(x), None) | (None, Some(x)) => x,
                (None, None) => return None,
            },
            B::Max => max(*a)?.max(max(*b)?),
            _ => return None,
        },
        ExprKind::Select(_, a, b) => max(*a)?.max(max(*b)?),
        // A narrower unsigned value widened: below its dtype's range.
        ExprKind::Cast(x) => match ir.exprs.get(*x)?.ty {
            crate::ir::expr::VType::D(DType::U8) => u64::from(u8::MAX),
            crate::ir::expr::VType::D(DType::U16) => u64::from(u16::MAX),
            _ => return None,
        },
        _ => return None,
    };
    // A u32 expression wraps past u32::MAX: no bound then.
    (v <= u64::from(u32::MAX)).then_some(v)
}

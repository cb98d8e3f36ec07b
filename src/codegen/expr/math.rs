//! The math library's functions: their templates evaluated inline, or PTX's approximate
//! instructions under `fastmath`.

use super::super::builder::{Emitter, arith_ty, bits_or_float, class};
use crate::ir::expr::{BinaryOp as B, ExprKind, UnaryOp as U, VType};
use crate::ir::math::{self, Func, Template};
use crate::ir::{DType, ExprId};
use crate::ptx::*;

/// The registers of a template's nodes evaluated so far, and those evaluated behind each
/// open branch (innermost last), which hold their values only where the branch was taken.
struct Eval<'t> {
    t: &'t Template,
    args: &'t [Reg],
    regs: Vec<Option<Reg>>,
    branches: Vec<Vec<ExprId>>,
}

impl Emitter<'_> {
    /// `f` of `args` at `d`: PTX's approximate instruction for it in a fast-math kernel
    /// where one exists, else its template evaluated inline.
    pub(super) fn library(&mut self, f: Func, d: DType, args: &[Reg]) -> Reg {
        if d == DType::F32
            && self.fast_arith()
            && let Some(r) = self.approximate(f, args)
        {
            return r;
        }
        match math::template(f, d) {
            Some(t) => {
                self.library_depth += 1;
                let mut ev = Eval {
                    t,
                    args,
                    regs: vec![None; t.nodes().len()],
                    branches: Vec::new(),
                };
                let r = self.template_node(&mut ev, t.root());
                self.library_depth -= 1;
                r
            }
            // The typed builder offers no function at a type without a template.
            None => self.constant(d, nan_bits(d)),
        }
    }

    /// `f` by approximate instructions, where PTX has them.
    fn approximate(&mut self, f: Func, args: &[Reg]) -> Option<Reg> {
        use std::f32::consts::{LN_2, LOG2_10, LOG2_E, LOG10_2};
        let x = *args.first()?;
        Some(match f {
            Func::Unary(U::Sin) => self.approx(UnOp::SinFtz, x),
            Func::Unary(U::Cos) => self.approx(UnOp::CosFtz, x),
            Func::Unary(U::Tan) => {
                let s = self.approx(UnOp::SinFtz, x);
                let c = self.approx(UnOp::CosFtz, x);
                self.approx2(BinOp::DivApprox, s, c)
            }
            Func::Unary(U::Exp2) => self.approx(UnOp::Ex2Ftz, x),
            Func::Unary(U::Exp) => self.scaled(UnOp::Ex2Ftz, x, LOG2_E, true),
            Func::Unary(U::Exp10) => self.scaled(UnOp::Ex2Ftz, x, LOG2_10, true),
            Func::Unary(U::Log2) => self.approx(UnOp::Lg2Ftz, x),
            Func::Unary(U::Ln) => self.scaled(UnOp::Lg2Ftz, x, LN_2, false),
            Func::Unary(U::Log10) => self.scaled(UnOp::Lg2Ftz, x, LOG10_2, false),
            Func::Unary(U::Tanh) => self.approx(UnOp::Tanh, x),
            Func::Unary(U::Rsqrt) => self.approx(UnOp::RsqrtFtz, x),
            Func::Binary(B::Pow) => {
                let y = *args.get(1)?;
                let l = self.approx(UnOp::Lg2Ftz, x);
                let p = self.approx2(BinOp::MulFtz, y, l);
                self.approx(UnOp::Ex2Ftz, p)
            }
            _ => return None,
        })
    }

    /// `op.f32` of `a` into a new register.
    fn approx(&mut self, op: UnOp, a: Reg) -> Reg {
        let r = self.reg(RegClass::F32);
        self.op(Op::Un {
            op,
            ty: Ty::F32,
            dst: r,
            a: a.into(),
        });
        r
    }

    /// `op.f32` of `a` and `b` into a new register.
    fn approx2(&mut self, op: BinOp, a: Reg, b: Reg) -> Reg {
        let r = self.reg(RegClass::F32);
        self.op(Op::Bin {
            op,
            ty: Ty::F32,
            dst: r,
            a: a.into(),
            b: b.into(),
        });
        r
    }

    /// `op(x * k)` (`before`) or `op(x) * k`.
    fn scaled(&mut self, op: UnOp, x: Reg, k: f32, before: bool) -> Reg {
        let k = self.constant(DType::F32, u64::from(k.to_bits()));
        if before {
            let p = self.approx2(BinOp::MulFtz, x, k);
            self.approx(op, p)
        } else {
            let v = self.approx(op, x);
            self.approx2(BinOp::MulFtz, v, k)
        }
    }

    /// A template's node, its operands first; a cold select's first side behind a branch.
    fn template_node(&mut self, ev: &mut Eval<'_>, id: ExprId) -> Reg {
        if let Some(Some(r)) = ev.regs.get(id.index()) {
            return *r;
        }
        let Some(node) = ev.t.nodes().get(id.index()) else {
            return self.constant(DType::U32, 0);
        };
        let r = match (node.ty, &node.kind) {
            (VType::D(d), ExprKind::Select(c, a, b)) if ev.t.is_cold(id) => {
                // r = common; where p: r = rare (behind a branch); then p ? r : common, so
                // the value depends on p wherever p is undefined.
                let p = self.template_node(ev, *c);
                let common = self.template_node(ev, *b);
                let r = self.reg(class(d));
                let ty = bits_or_float(d);
                self.op(Op::Mov {
                    ty,
                    dst: r,
                    src: common.into(),
                });
                let skip = self.select_label();
                self.guarded(
                    p,
                    true,
                    Op::Bra {
                        target: skip.clone(),
                        uni: false,
                    },
                );
                ev.branches.push(Vec::new());
                let rare = self.template_node(ev, *a);
                self.op(Op::Mov {
                    ty,
                    dst: r,
                    src: rare.into(),
                });
                for n in ev.branches.pop().unwrap_or_default() {
                    ev.regs[n.index()] = None;
                }
                self.op(Op::Label(skip));
                self.pick(d, p, r, common)
            }
            (ty, kind) => {
                let kind = kind.clone();
                let mut ops = [None; 3];
                for (slot, c) in ops.iter_mut().zip(kind.children()) {
                    *slot = Some(self.template_node(ev, *c));
                }
                self.template_op(ev, ty, &kind, ops)
            }
        };
        ev.regs[id.index()] = Some(r);
        if let Some(open) = ev.branches.last_mut() {
            open.push(id);
        }
        r
    }

    /// One primitive node of a template, its operands in registers.
    fn template_op(
        &mut self,
        ev: &Eval<'_>,
        ty: VType,
        kind: &ExprKind<ExprId>,
        ops: [Option<Reg>; 3],
    ) -> Reg {
        let operand_ty = |i: usize| {
            kind.children()
                .nth(i)
                .and_then(|c| ev.t.nodes().get(c.index()))
                .and_then(|n| n.ty.dtype())
                .unwrap_or(DType::U32)
        };
        let [a, b, c] = ops;
        let zero = |e: &mut Self| e.constant(DType::U32, 0);
        match (ty, kind) {
            (VType::Bool, ExprKind::Cmp(op, ..)) => {
                let (Some(a), Some(b)) = (a, b) else {
                    return zero(self);
                };
                let p = self.reg(RegClass::Pred);
                self.compare_into(p, *op, operand_ty(0), a, b);
                p
            }
            (VType::Bool, ExprKind::Unary(U::IsNan, _)) => {
                let Some(a) = a else { return zero(self) };
                let d = operand_ty(0);
                self.setp(Cmp::Nan, arith_ty(d), a.into(), a.into())
            }
            (VType::Bool, ExprKind::Unary(U::Not, _)) => {
                let Some(a) = a else { return zero(self) };
                let p = self.reg(RegClass::Pred);
                self.op(Op::PredNot { dst: p, a });
                p
            }
            (VType::Bool, ExprKind::Binary(op, ..)) => {
                let (Some(a), Some(b)) = (a, b) else {
                    return zero(self);
                };
                let p = self.reg(RegClass::Pred);
                let op = match op {
                    B::Or => BinOp::Or,
                    B::Xor => BinOp::Xor,
                    _ => BinOp::And,
                };
                self.op(Op::PredBin { op, dst: p, a, b });
                p
            }
            (VType::D(d), ExprKind::Const(bits)) => self.constant(d, *bits),
            (VType::D(d), ExprKind::Arg(i)) => match ev.args.get(*i as usize) {
                Some(r) => *r,
                None => self.constant(d, 0),
            },
            (VType::D(d), ExprKind::Unary(op, _)) => match a {
                Some(a) => self.unary(d, operand_ty(0), *op, a),
                None => self.constant(d, 0),
            },
            (VType::D(d), ExprKind::Binary(op, ..)) => match (a, b) {
                (Some(a), Some(b)) => self.binary(d, *op, a, b),
                _ => self.constant(d, 0),
            },
            (VType::D(d), ExprKind::Select(..)) => match (a, b, c) {
                (Some(p), Some(x), Some(y)) => self.pick(d, p, x, y),
                _ => self.constant(d, 0),
            },
            (VType::D(d), ExprKind::Cast(_)) => match a {
                Some(a) => self.cast(operand_ty(0), d, a),
                None => self.constant(d, 0),
            },
            (VType::D(d), ExprKind::Fma(..)) => match (a, b, c) {
                (Some(x), Some(y), Some(z)) => self.fma_value(d, x, y, z),
                _ => self.constant(d, 0),
            },
            // Templates hold no other nodes (a test of `ir::math` checks every one).
            (VType::D(d), _) => self.constant(d, 0),
            (VType::Bool, _) => zero(self),
        }
    }
}

/// A quiet NaN of a float type (0 for others).
fn nan_bits(d: DType) -> u64 {
    match d {
        DType::F32 => u64::from(f32::NAN.to_bits()),
        DType::F64 => f64::NAN.to_bits(),
        _ => 0,
    }
}

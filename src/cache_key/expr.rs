//! The canonical forms of expressions: their nodes, types and operators.

use super::{Canonical, Writer};
use crate::ir::expr::{Axis, BinaryOp, CmpOp, ExprKind, ExprNode, IndexKind, UnaryOp, VType};

impl Canonical for VType {
    fn write(&self, w: &mut Writer) {
        match self {
            VType::Bool => w.tag(0),
            VType::D(d) => {
                w.tag(1);
                d.write(w);
            }
        }
    }
}

impl Canonical for IndexKind {
    fn write(&self, w: &mut Writer) {
        w.tag(match self {
            IndexKind::ThreadRank => 0,
            IndexKind::Lane => 1,
            IndexKind::WarpRank => 2,
            IndexKind::BlockIndex => 3,
            IndexKind::GridBlocks => 4,
            IndexKind::BlockThreads => 5,
            IndexKind::Item => 6,
            IndexKind::ThreadIdx(_) => 7,
            IndexKind::BlockIdx(_) => 8,
            IndexKind::BlockDim(_) => 9,
            IndexKind::GridDim(_) => 10,
            IndexKind::ClusterDim(_) => 11,
        });
        if let IndexKind::ThreadIdx(a)
        | IndexKind::BlockIdx(a)
        | IndexKind::BlockDim(a)
        | IndexKind::GridDim(a)
        | IndexKind::ClusterDim(a) = self
        {
            a.write(w);
        }
    }
}

impl Canonical for Axis {
    fn write(&self, w: &mut Writer) {
        w.tag(match self {
            Axis::X => 0,
            Axis::Y => 1,
            Axis::Z => 2,
        });
    }
}

impl Canonical for UnaryOp {
    fn write(&self, w: &mut Writer) {
        w.tag(match self {
            UnaryOp::Neg => 0,
            UnaryOp::Not => 1,
            UnaryOp::Abs => 2,
            UnaryOp::Sqrt => 3,
            UnaryOp::Rsqrt => 4,
            UnaryOp::Rcp => 5,
            UnaryOp::Exp2 => 6,
            UnaryOp::Log2 => 7,
            UnaryOp::Sin => 8,
            UnaryOp::Cos => 9,
            UnaryOp::Tanh => 10,
            UnaryOp::Floor => 11,
            UnaryOp::Ceil => 12,
            UnaryOp::Trunc => 13,
            UnaryOp::Round => 14,
            UnaryOp::Popc => 15,
            UnaryOp::Clz => 16,
            UnaryOp::Brev => 17,
            UnaryOp::IsNan => 18,
            UnaryOp::Exp => 19,
            UnaryOp::Exp10 => 20,
            UnaryOp::Expm1 => 21,
            UnaryOp::Ln => 22,
            UnaryOp::Log10 => 23,
            UnaryOp::Log1p => 24,
            UnaryOp::Tan => 25,
            UnaryOp::Asin => 26,
            UnaryOp::Acos => 27,
            UnaryOp::Atan => 28,
            UnaryOp::Sinh => 29,
            UnaryOp::Cosh => 30,
            UnaryOp::Cbrt => 31,
            UnaryOp::Erf => 32,
            UnaryOp::Erfc => 33,
            UnaryOp::Bitcast => 34,
        });
    }
}

impl Canonical for BinaryOp {
    fn write(&self, w: &mut Writer) {
        w.tag(match self {
            BinaryOp::Add => 0,
            BinaryOp::Sub => 1,
            BinaryOp::Mul => 2,
            BinaryOp::Div => 3,
            BinaryOp::Rem => 4,
            BinaryOp::Min => 5,
            BinaryOp::Max => 6,
            BinaryOp::And => 7,
            BinaryOp::Or => 8,
            BinaryOp::Xor => 9,
            BinaryOp::Shl => 10,
            BinaryOp::Shr => 11,
            BinaryOp::MulHi => 12,
            BinaryOp::Atan2 => 13,
            BinaryOp::Pow => 14,
            BinaryOp::Hypot => 15,
            BinaryOp::Powi => 16,
        });
    }
}

impl Canonical for CmpOp {
    fn write(&self, w: &mut Writer) {
        w.tag(match self {
            CmpOp::Eq => 0,
            CmpOp::Ne => 1,
            CmpOp::Lt => 2,
            CmpOp::Le => 3,
            CmpOp::Gt => 4,
            CmpOp::Ge => 5,
        });
    }
}

impl Canonical for ExprNode {
    fn write(&self, w: &mut Writer) {
        let ExprNode { kind, ty } = self;
        ty.write(w);
        match kind {
            ExprKind::Const(bits) => {
                w.tag(0);
                w.u64(*bits);
            }
            ExprKind::Param(p) => {
                w.tag(1);
                p.write(w);
            }
            ExprKind::Arg(i) => {
                w.tag(2);
                w.tag(*i);
            }
            ExprKind::Item { data, item } => {
                w.tag(3);
                data.write(w);
                w.u32(*item);
            }
            ExprKind::Index(k) => {
                w.tag(4);
                k.write(w);
            }
            ExprKind::LoopVar { op, field } => {
                w.tag(5);
                op.write(w);
                w.tag(*field);
            }
            ExprKind::Unary(o, a) => {
                w.tag(6);
                o.write(w);
                a.write(w);
            }
            ExprKind::Binary(o, a, b) => {
                w.tag(7);
                o.write(w);
                a.write(w);
                b.write(w);
            }
            ExprKind::Cmp(o, a, b) => {
                w.tag(8);
                o.write(w);
                a.write(w);
                b.write(w);
            }
            ExprKind::Select(c, a, b) => {
                w.tag(9);
                c.write(w);
                a.write(w);
                b.write(w);
            }
            ExprKind::Cast(a) => {
                w.tag(10);
                a.write(w);
            }
            ExprKind::Fma(a, b, c) => {
                w.tag(11);
                a.write(w);
                b.write(w);
                c.write(w);
            }
            ExprKind::SharedRead(arr, i) => {
                w.tag(12);
                arr.write(w);
                i.write(w);
            }
            ExprKind::GlobalRead(p, i) => {
                w.tag(13);
                p.write(w);
                i.write(w);
            }
            ExprKind::LocalRead(arr, i) => {
                w.tag(14);
                arr.write(w);
                i.write(w);
            }
            ExprKind::ConstRead(arr, i) => {
                w.tag(15);
                arr.write(w);
                i.write(w);
            }
        }
    }
}

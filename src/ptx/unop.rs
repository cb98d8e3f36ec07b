//! One-operand operations, and the labels of select branches.

use super::Ty;

/// The prefix of the labels that end a *select branch*: `@!p bra $LselN;` skips code that
/// only writes registers, all merged after the label by a `selp` on the same `p` (the math
/// library's rare paths). Its predicate is not a use of its own: where it is undefined, the
/// merged value is, and the simulator reports that where it is used.
pub const SELECT_LABEL_PREFIX: &str = "$Lsel";

/// One-operand operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// `neg`.
    Neg,
    /// `abs`.
    Abs,
    /// `not` (bitwise).
    Not,
    /// `cnot` (1 when zero, else 0).
    Cnot,
    /// `popc` (result `.u32`).
    Popc,
    /// `clz` (result `.u32`).
    Clz,
    /// `brev`.
    Brev,
    /// `sqrt.rn`.
    Sqrt,
    /// `rsqrt.approx` (`.ftz` for f64 as PTX requires).
    Rsqrt,
    /// `rcp.rn`.
    Rcp,
    /// `sin.approx.f32`.
    Sin,
    /// `cos.approx.f32`.
    Cos,
    /// `ex2.approx.f32`.
    Ex2,
    /// `lg2.approx.f32`.
    Lg2,
    /// `tanh.approx.f32`.
    Tanh,
    /// `sin.approx.ftz.f32`.
    SinFtz,
    /// `cos.approx.ftz.f32`.
    CosFtz,
    /// `ex2.approx.ftz.f32`.
    Ex2Ftz,
    /// `lg2.approx.ftz.f32`.
    Lg2Ftz,
    /// `rcp.approx.ftz.f32`.
    RcpApprox,
    /// `rsqrt.approx.ftz.f32`.
    RsqrtFtz,
    /// `sqrt.approx.ftz.f32`.
    SqrtApprox,
}

impl UnOp {
    /// Every one of the one-operand operations, in declaration order.
    pub const ALL: [UnOp; 22] = [
        UnOp::Neg,
        UnOp::Abs,
        UnOp::Not,
        UnOp::Cnot,
        UnOp::Popc,
        UnOp::Clz,
        UnOp::Brev,
        UnOp::Sqrt,
        UnOp::Rsqrt,
        UnOp::Rcp,
        UnOp::Sin,
        UnOp::Cos,
        UnOp::Ex2,
        UnOp::Lg2,
        UnOp::Tanh,
        UnOp::SinFtz,
        UnOp::CosFtz,
        UnOp::Ex2Ftz,
        UnOp::Lg2Ftz,
        UnOp::RcpApprox,
        UnOp::RsqrtFtz,
        UnOp::SqrtApprox,
    ];

    /// Whether PTX defines this operation at `ty` (`popc.u32` is not PTX: bit counts take
    /// `.b` types; the approximate transcendentals are `.f32` only).
    pub fn accepts(self, ty: Ty) -> bool {
        let signed = matches!(ty, Ty::S16 | Ty::S32 | Ty::S64);
        let bits = matches!(ty, Ty::B16 | Ty::B32 | Ty::B64);
        let wide_bits = matches!(ty, Ty::B32 | Ty::B64);
        match self {
            UnOp::Neg | UnOp::Abs => signed || ty.is_float(),
            UnOp::Not | UnOp::Cnot => bits,
            UnOp::Popc | UnOp::Clz | UnOp::Brev => wide_bits,
            UnOp::Sqrt | UnOp::Rsqrt | UnOp::Rcp => ty.is_float(),
            UnOp::Sin | UnOp::Cos | UnOp::Ex2 | UnOp::Lg2 | UnOp::Tanh => ty == Ty::F32,
            UnOp::SinFtz
            | UnOp::CosFtz
            | UnOp::Ex2Ftz
            | UnOp::Lg2Ftz
            | UnOp::RcpApprox
            | UnOp::RsqrtFtz
            | UnOp::SqrtApprox => ty == Ty::F32,
        }
    }
}

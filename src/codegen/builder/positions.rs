//! Positions in a group's tile, as the plan gives them: a rank's part of a position form, the
//! test of an item's position against a valid count, the holder of a position (the decode of
//! an inverse form), and a group's share of a valid count.

use super::{Emitter, Lowered};
use crate::ir::OpId;
use crate::planner::{InverseForm, PositionForm};
use crate::ptx::*;

impl Emitter<'_> {
    /// Where the items of `op`'s source lie in its group's tile, which the plan gives every op
    /// that counts valid items.
    pub(crate) fn counted_positions(&self, op: OpId) -> Lowered<PositionForm> {
        (self.plan.positions.get(op).cloned().flatten())
            .ok_or_else(|| self.missing(op, "positions of the items a valid count counts"))
    }

    /// Digit `((rank / divisor) % extent)` of a rank below `scope`; the top digit (the one
    /// whose range reaches the scope) needs no remainder.
    fn rank_digit(&mut self, rank: Reg, (extent, divisor): (u32, u32), scope: u32) -> Reg {
        let mut digit = rank;
        if divisor > 1 {
            digit = self.u32op(BinOp::Div, digit.into(), Operand::Imm(divisor as i64));
        }
        if (extent as u64) * (divisor as u64) < scope as u64 {
            digit = self.u32op(BinOp::Rem, digit.into(), Operand::Imm(extent as i64));
        }
        digit
    }

    /// The rank's part of a position form over a group of `scope` threads:
    /// `sum ((rank / d) % e) * s`, accumulated from 0.
    pub(crate) fn thread_part(&mut self, a: &PositionForm, scope: u32, rank: Reg) -> Reg {
        let acc = self.reg(RegClass::B32);
        self.op(Op::Mov {
            ty: Ty::U32,
            dst: acc,
            src: Operand::Imm(0),
        });
        for &(extent, divisor, stride) in &a.thread_terms {
            let digit = self.rank_digit(rank, (extent, divisor), scope);
            self.op(Op::Mad {
                ty: Ty::U32,
                dst: acc,
                a: digit.into(),
                b: Operand::Imm(stride as i64),
                c: acc.into(),
            });
        }
        acc
    }

    /// Whether item `i` of `rank` (below `scope`) lies below `n` in the tile of position form
    /// `form` (compared as `ty`, `U32` or `S32`): the valid-count test of one item. The
    /// position is the item's part, then each of the rank's digits multiplied and added on.
    pub(crate) fn position_below(
        &mut self,
        form: &PositionForm,
        scope: u32,
        (rank, i): (Reg, u32),
        n: Reg,
        ty: Ty,
    ) -> Reg {
        let mut pos = Operand::Imm(i as i64 * form.item_stride as i64);
        for &(extent, divisor, stride) in &form.thread_terms {
            let digit = self.rank_digit(rank, (extent, divisor), scope);
            let acc = self.reg(RegClass::B32);
            self.op(Op::Mad {
                ty: Ty::U32,
                dst: acc,
                a: digit.into(),
                b: Operand::Imm(stride as i64),
                c: pos,
            });
            pos = acc.into();
        }
        self.setp(Cmp::Lt, ty, pos, n.into())
    }

    /// The rank and the slot that hold position `q` under inverse form `f`: the position's
    /// digits, top first (each `rest / divisor`, `rest % divisor` going on), summed into the
    /// rank's and the slot's.
    pub(crate) fn holder(&mut self, f: &InverseForm, q: Reg) -> (Reg, Reg) {
        let mut rest = q;
        let mut digits = Vec::with_capacity(f.digits.len());
        for (k, d) in f.digits.iter().enumerate() {
            if d.divisor <= 1 {
                digits.push((d, rest));
                continue;
            }
            let divisor = Operand::Imm(d.divisor as i64);
            digits.push((d, self.u32op(BinOp::Div, rest.into(), divisor)));
            if k + 1 < f.digits.len() {
                rest = self.u32op(BinOp::Rem, rest.into(), divisor);
            }
        }
        let mut sum = |rank: bool| {
            let mine = || digits.iter().filter(move |(d, _)| d.rank == rank);
            // The digit of stride 1 starts the sum; the others are multiplied onto it.
            let mut acc = mine().find(|(d, _)| d.stride == 1).map(|&(_, v)| v);
            for &(d, v) in mine().filter(|(d, _)| d.stride != 1) {
                let stride = Operand::Imm(d.stride as i64);
                acc = Some(match acc {
                    None => self.u32op(BinOp::Mul, v.into(), stride),
                    Some(a) => {
                        let r = self.reg(RegClass::B32);
                        self.op(Op::Mad {
                            ty: Ty::U32,
                            dst: r,
                            a: v.into(),
                            b: stride,
                            c: a.into(),
                        });
                        r
                    }
                });
            }
            acc.unwrap_or_else(|| {
                let zero = self.reg(RegClass::B32);
                self.op(Op::Mov {
                    ty: Ty::U32,
                    dst: zero,
                    src: Operand::Imm(0),
                });
                zero
            })
        };
        let rank = sum(true);
        let slot = sum(false);
        (rank, slot)
    }

    /// A group's share of a valid count: `min(count - start, tile)`, none at or below the
    /// group's `start` (`None`: the group starts at 0). The one place a group's share of a
    /// count is computed.
    pub(crate) fn share_of(&mut self, count: Reg, start: Option<Operand>, tile: Operand) -> Reg {
        match start {
            None => self.u32op(BinOp::Min, count.into(), tile),
            Some(s) => {
                let above = self.u32op(BinOp::Max, count.into(), s);
                let past = self.u32op(BinOp::Sub, above.into(), s);
                self.u32op(BinOp::Min, past.into(), tile)
            }
        }
    }
}

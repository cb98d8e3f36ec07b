//! Lowering of lane collectives: `shfl.sync`, `vote.sync`, `match.sync` and `bar.warp.sync`
//! over one tile, with the member mask and clamp of the thread's own tile.
//!
//! A tile of width `w` is a segment of `w` lanes of its warp (`w` a power of two). Its member
//! mask is [`Emitter::group_mask`]: the tile's lanes that exist. The shuffles' `c` operand
//! carries the segment mask and the clamp lane: the tile's last lane, which in the block's
//! last tile (where `w` does not divide the block) is the last thread there, so a source past
//! it reads the thread's own value instead of a lane that does not exist. Operands are brought
//! into PTX's range first: a delta is capped at `w` (PTX reads only its low five bits) and a
//! butterfly mask taken modulo `w` (so the source stays in the tile). Ballots and match masks
//! are shifted down to the tile's ranks.

use super::builder::{Emitter, Lowered, segment_clamp, up_clamp};
use super::expr::Ctx;
use crate::ir::ops::{GroupKind, LaneOp, LaneSpec};
use crate::ir::{DType, OpId};
use crate::ptx::*;
use std::collections::HashMap;

impl Emitter<'_> {
    /// Lowers a lane collective.
    pub(crate) fn lanes(&mut self, op: OpId, l: &LaneSpec) -> Lowered {
        let ir = self.ir;
        let w = match ir.groups.get(l.group.index()).map(|g| g.kind) {
            Some(GroupKind::LogicalWarp { width }) => width.clamp(1, 32),
            _ => return Err(self.missing(op, "tile of a lane collective")),
        };
        let mask = self.group_mask(w);
        if l.op == LaneOp::Sync {
            self.op(Op::BarWarpSync { mask });
            return Ok(());
        }
        let (Some(value), Some(out)) = (l.value, l.out) else {
            return Err(self.missing(op, "value and result of a lane collective"));
        };
        let mut memo = HashMap::new();
        let ctx = Ctx::default();
        let v = self.eval(value, &ctx, &mut memo);
        let dtype = ir.datas[out.index()].dtype;
        let result = match l.op {
            LaneOp::Shfl | LaneOp::ShflUp | LaneOp::ShflDown | LaneOp::ShflXor => {
                let lane = l
                    .lane
                    .ok_or_else(|| self.missing(op, "lane of a shuffle"))?;
                let lane = self.eval(lane, &ctx, &mut memo);
                self.tile_shuffle(l.op, w, v, lane, mask)
            }
            LaneOp::Any | LaneOp::All => {
                let mode = if l.op == LaneOp::Any {
                    VoteMode::Any
                } else {
                    VoteMode::All
                };
                let p = self.reg(RegClass::Pred);
                self.op(Op::Vote {
                    mode,
                    dst: p,
                    src: v,
                    negate: false,
                    mask,
                });
                let (one, zero) = (self.constant(DType::U32, 1), self.constant(DType::U32, 0));
                self.pick(DType::U32, p, one, zero)
            }
            LaneOp::Ballot => {
                let bits = self.reg(RegClass::B32);
                self.op(Op::Vote {
                    mode: VoteMode::Ballot,
                    dst: bits,
                    src: v,
                    negate: false,
                    mask,
                });
                self.tile_rank_bits(w, bits)
            }
            LaneOp::MatchAny | LaneOp::MatchAll => {
                let src_dtype = match ir.expr(value).ty {
                    crate::ir::expr::VType::D(d) => d,
                    crate::ir::expr::VType::Bool => DType::U32,
                };
                let (ty, bits) = if src_dtype.bytes() == 8 {
                    let b = self.reg(RegClass::B64);
                    self.op(Op::Mov {
                        ty: Ty::B64,
                        dst: b,
                        src: v.into(),
                    });
                    (Ty::B64, b)
                } else {
                    let b = self.reg(RegClass::B32);
                    self.op(Op::Mov {
                        ty: Ty::B32,
                        dst: b,
                        src: v.into(),
                    });
                    (Ty::B32, b)
                };
                let dst = self.reg(RegClass::B32);
                self.op(Op::Match {
                    all: l.op == LaneOp::MatchAll,
                    ty,
                    dst,
                    src: bits.into(),
                    mask,
                });
                self.tile_rank_bits(w, dst)
            }
            LaneOp::Sync => return Err(self.missing(op, "value of a tile barrier")),
        };
        self.mov_into(dtype, out, 0, result);
        Ok(())
    }

    /// A shuffle of `v` within the thread's tile of `w` lanes.
    fn tile_shuffle(&mut self, op: LaneOp, w: u32, v: Reg, lane: Reg, mask: Operand) -> Reg {
        let w_imm = Operand::Imm(i64::from(w));
        let (mode, b) = match op {
            LaneOp::ShflUp => (ShflMode::Up, self.u32op(BinOp::Min, lane.into(), w_imm)),
            LaneOp::ShflDown => (ShflMode::Down, self.u32op(BinOp::Min, lane.into(), w_imm)),
            LaneOp::ShflXor => {
                let m = Operand::Imm(i64::from(w - 1));
                (ShflMode::Bfly, self.u32op(BinOp::And, lane.into(), m))
            }
            _ => (ShflMode::Idx, lane),
        };
        let c = if mode == ShflMode::Up {
            // The clamp of `up` is the tile's first lane, which always exists.
            Operand::Imm(up_clamp(w))
        } else {
            self.tile_clamp(w)
        };
        self.shuffle_operand(mode, v, b.into(), c, mask)
    }

    /// The `c` operand of `idx`, `down` and `bfly` shuffles in the thread's tile: the
    /// segment mask, and the tile's last existing lane as the clamp.
    fn tile_clamp(&mut self, w: u32) -> Operand {
        let block = self.plan.block_threads;
        let full = segment_clamp(w);
        let rest = block % w;
        if rest == 0 {
            return Operand::Imm(full);
        }
        // In the block's last tile, lanes past `rest - 1` of the segment do not exist.
        let partial = ((32 - i64::from(w)) << 8) | (i64::from(rest) - 1);
        let tid = self.tid();
        let last = self.setp(
            Cmp::Ge,
            Ty::U32,
            tid.into(),
            Operand::Imm(i64::from(block - rest)),
        );
        let (a, b) = (
            self.constant(DType::U32, partial as u64),
            self.constant(DType::U32, full as u64),
        );
        self.pick(DType::U32, last, a, b).into()
    }

    /// Lane bits of the warp shifted down so that bit `i` is the tile's rank `i`.
    fn tile_rank_bits(&mut self, w: u32, bits: Reg) -> Reg {
        if w >= 32 {
            return bits;
        }
        let lane = self.special(Special::Laneid);
        let start = self.u32op(
            BinOp::And,
            lane.into(),
            Operand::Imm(!(i64::from(w) - 1) & 0xffff_ffff),
        );
        self.u32op(BinOp::Shr, bits.into(), start.into())
    }
}

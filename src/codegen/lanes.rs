//! Lowering of lane collectives: `shfl.sync`, `vote.sync`, `match.sync`, `activemask` and
//! `bar.warp.sync` over one tile, with the member mask and clamp of the thread's own tile, or
//! over a partition, with its lanes as the member mask; the barrier of a group of whole warps
//! is the group's named barrier.
//!
//! A tile of width `w` is a segment of `w` lanes of its warp (`w` a power of two). Its member
//! mask is the group mask (`Emitter::group_mask`): the tile's lanes that exist. The shuffles'
//! `c` operand carries the segment mask and the clamp lane: the tile's last lane, which in the block's
//! last tile (where `w` does not divide the block) is the last thread there, so a source past
//! it reads the thread's own value instead of a lane that does not exist. Operands are brought
//! into PTX's range first: a delta is capped at `w` (PTX reads only its low five bits) and a
//! butterfly mask taken modulo `w` (so the source stays in the tile). Ballots and match masks
//! are shifted down to the tile's ranks.
//!
//! A partition's members are any lanes of the warp, ranked in lane order. Its shuffles find
//! the source rank's lane by a binary search over prefix counts (`popc` of the mask below a
//! lane) and read it with `shfl.sync.idx` over the whole warp; its ballots and match masks
//! are compressed from lane bits to rank bits (the five-step parallel compress).

use super::builder::{Emitter, Lowered, segment_clamp, up_clamp};
use super::expr::Ctx;
use crate::ir::ops::{GroupKind, LaneOp, LaneSpec};
use crate::ir::{DType, OpId};
use crate::ptx::*;
use rustc_hash::FxHashMap;

impl Emitter<'_> {
    /// Lowers a lane collective.
    pub(crate) fn lanes(&mut self, op: OpId, l: &LaneSpec) -> Lowered {
        let ir = self.ir;
        let w = match ir.groups.get(l.group.index()).map(|g| g.kind) {
            Some(GroupKind::LogicalWarp { width }) => width.clamp(1, 32),
            // A group of whole warps's barrier: the group's named barrier (a warp's own for a
            // group of one warp).
            Some(GroupKind::Warps { warps }) if l.op == LaneOp::Sync => {
                if warps <= 1 {
                    self.op(Op::BarWarpSync {
                        mask: Operand::Imm(-1),
                    });
                } else {
                    self.warp_group_barrier(warps);
                }
                return Ok(());
            }
            _ => return Err(self.missing(op, "tile of a lane collective")),
        };
        let members = match l.members {
            Some(m) => Some(
                (self.data_regs(m).first().copied())
                    .ok_or_else(|| self.missing(op, "lanes of a partition"))?,
            ),
            None => None,
        };
        if l.op == LaneOp::Coalesce {
            let out = l
                .out
                .ok_or_else(|| self.missing(op, "result of coalesced_threads"))?;
            let lanes = self.reg(RegClass::B32);
            self.op(Op::Activemask { dst: lanes });
            self.mov_into(DType::U32, out, 0, lanes);
            return Ok(());
        }
        let mask = match members {
            Some(m) => m.into(),
            None => self.group_mask(w),
        };
        if l.op == LaneOp::Sync {
            self.op(Op::BarWarpSync { mask });
            return Ok(());
        }
        let (Some(value), Some(out)) = (l.value, l.out) else {
            return Err(self.missing(op, "value and result of a lane collective"));
        };
        let mut memo = FxHashMap::default();
        let ctx = Ctx::default();
        let v = self.eval(value, &ctx, &mut memo);
        let dtype = ir.datas[out.index()].dtype;
        // Lane bits, then rank bits: a tile's shifted down to its first lane, a partition's
        // compressed by its lanes.
        let ranked = |e: &mut Self, bits: Reg| match members {
            Some(m) => e.compress(bits, m),
            None => e.tile_rank_bits(w, bits),
        };
        let result = match l.op {
            LaneOp::Shfl | LaneOp::ShflUp | LaneOp::ShflDown | LaneOp::ShflXor => {
                let lane = l
                    .lane
                    .ok_or_else(|| self.missing(op, "lane of a shuffle"))?;
                let lane = self.eval(lane, &ctx, &mut memo);
                match members {
                    Some(m) => self.partition_shuffle(l.op, m, v, lane),
                    None => self.tile_shuffle(l.op, w, v, lane, mask),
                }
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
                let bits = self.ballot(v, mask);
                ranked(self, bits)
            }
            LaneOp::Binary => {
                // The lanes whose predicate is true, or the group's others.
                let yes = self.ballot(v, mask);
                let group = match mask {
                    Operand::Reg(r) => r,
                    other => {
                        let r = self.reg(RegClass::B32);
                        self.op(Op::Mov {
                            ty: Ty::B32,
                            dst: r,
                            src: other,
                        });
                        r
                    }
                };
                let no = self.u32op(BinOp::Xor, group.into(), yes.into());
                self.pick(DType::U32, v, yes, no)
            }
            LaneOp::MatchAny | LaneOp::MatchAll | LaneOp::Labeled => {
                let src_dtype = match ir.expr(value).ty {
                    crate::ir::expr::VType::D(d) => d,
                    crate::ir::expr::VType::Bool => DType::U32,
                };
                let (ty, class) = if src_dtype.bytes() == 8 {
                    (Ty::B64, RegClass::B64)
                } else {
                    (Ty::B32, RegClass::B32)
                };
                let bits = self.reg(class);
                self.op(Op::Mov {
                    ty,
                    dst: bits,
                    src: v.into(),
                });
                let dst = self.reg(RegClass::B32);
                self.op(Op::Match {
                    all: l.op == LaneOp::MatchAll,
                    ty,
                    dst,
                    src: bits.into(),
                    mask,
                });
                if l.op == LaneOp::Labeled {
                    dst
                } else {
                    ranked(self, dst)
                }
            }
            LaneOp::Sync | LaneOp::Coalesce => {
                return Err(self.missing(op, "value of a tile barrier or coalesced_threads"));
            }
        };
        self.mov_into(dtype, out, 0, result);
        Ok(())
    }

    /// `vote.sync.ballot.b32` of predicate `p` over `mask`.
    fn ballot(&mut self, p: Reg, mask: Operand) -> Reg {
        let bits = self.reg(RegClass::B32);
        self.op(Op::Vote {
            mode: VoteMode::Ballot,
            dst: bits,
            src: p,
            negate: false,
            mask,
        });
        bits
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

    /// A shuffle of `v` among the members of the partition whose lanes `m` holds: the source
    /// rank's lane, or the thread's own where the rank is not a member's.
    fn partition_shuffle(&mut self, op: LaneOp, m: Reg, v: Reg, lane: Reg) -> Reg {
        let below = self.special(Special::LanemaskLt);
        let mine = self.u32op(BinOp::And, m.into(), below.into());
        let rank = self.popc(mine);
        let n = self.popc(m);
        let (src, ok) = match op {
            LaneOp::ShflUp => {
                let ok = self.setp(Cmp::Le, Ty::U32, lane.into(), rank.into());
                (self.u32op(BinOp::Sub, rank.into(), lane.into()), ok)
            }
            LaneOp::ShflDown => {
                let room = self.u32op(BinOp::Sub, n.into(), rank.into());
                let ok = self.setp(Cmp::Lt, Ty::U32, lane.into(), room.into());
                (self.u32op(BinOp::Add, rank.into(), lane.into()), ok)
            }
            _ => {
                let src = if op == LaneOp::ShflXor {
                    self.u32op(BinOp::Xor, rank.into(), lane.into())
                } else {
                    lane
                };
                (src, self.setp(Cmp::Lt, Ty::U32, src.into(), n.into()))
            }
        };
        // The largest lane below which at most `src` members lie is the member of rank `src`.
        let mut pos = self.constant(DType::U32, 0);
        for step in [16, 8, 4, 2, 1] {
            let cand = self.u32op(BinOp::Add, pos.into(), Operand::Imm(step));
            let one = self.constant(DType::U32, 1);
            let bit = self.u32op(BinOp::Shl, one.into(), cand.into());
            let low = self.u32op(BinOp::Sub, bit.into(), Operand::Imm(1));
            let under = self.u32op(BinOp::And, m.into(), low.into());
            let count = self.popc(under);
            let fits = self.setp(Cmp::Le, Ty::U32, count.into(), src.into());
            pos = self.pick(DType::U32, fits, cand, pos);
        }
        let own = self.special(Special::Laneid);
        let from = self.pick(DType::U32, ok, pos, own);
        self.shuffle_operand(
            ShflMode::Idx,
            v,
            from.into(),
            Operand::Imm(segment_clamp(32)),
            m.into(),
        )
    }

    /// `popc.b32` into a new register.
    fn popc(&mut self, a: Reg) -> Reg {
        let r = self.reg(RegClass::B32);
        self.op(Op::Un {
            op: UnOp::Popc,
            ty: Ty::B32,
            dst: r,
            a: a.into(),
        });
        r
    }

    /// The bits of `x` at the set bits of `m`, packed into the low bits in order (bit `i` of
    /// the result is `x`'s bit at `m`'s `i`-th set bit): five steps that each move bits right
    /// past the zeros of `m` below them, by 1, 2, 4, 8 and 16.
    fn compress(&mut self, x: Reg, m: Reg) -> Reg {
        let op = |e: &mut Self, op: BinOp, a: Reg, b: Operand| e.u32op(op, a.into(), b);
        let mut x = op(self, BinOp::And, x, m.into());
        let mut m = m;
        // Per bit: the zeros of `m` to its right, counted bit by bit (odd parity first).
        let not_m = self.reg(RegClass::B32);
        self.op(Op::Un {
            op: UnOp::Not,
            ty: Ty::B32,
            dst: not_m,
            a: m.into(),
        });
        let mut mk = op(self, BinOp::Shl, not_m, Operand::Imm(1));
        for i in 0..5 {
            let mut mp = mk;
            for s in [1, 2, 4, 8, 16] {
                let shifted = op(self, BinOp::Shl, mp, Operand::Imm(s));
                mp = op(self, BinOp::Xor, mp, shifted.into());
            }
            let mv = op(self, BinOp::And, mp, m.into());
            let kept = op(self, BinOp::Xor, m, mv.into());
            let moved = op(self, BinOp::Shr, mv, Operand::Imm(1 << i));
            m = op(self, BinOp::Or, kept, moved.into());
            let t = op(self, BinOp::And, x, mv.into());
            let stay = op(self, BinOp::Xor, x, t.into());
            let go = op(self, BinOp::Shr, t, Operand::Imm(1 << i));
            x = op(self, BinOp::Or, stay, go.into());
            let not_mp = self.reg(RegClass::B32);
            self.op(Op::Un {
                op: UnOp::Not,
                ty: Ty::B32,
                dst: not_mp,
                a: mp.into(),
            });
            mk = op(self, BinOp::And, mk, not_mp.into());
        }
        x
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
        let start = self.group_first_lane(w);
        self.u32op(BinOp::Shr, bits.into(), start.into())
    }
}

//! Barriers of groups of whole warps in the emission builder ([`SyncScope::Warps`]): each
//! group of each partition the kernel's collectives use has a named barrier of its own,
//! `bar.sync id, 32 * warps`.
//!
//! Ids are given in the order of [`Ir::warp_partitions`]: the first partition's groups take
//! ids `1..`, the next partition's follow; id 0 is the block's (the verifier bounds the total
//! by the 15 ids past it). A barrier id is an immediate here, so a group's barrier is reached
//! through a branch on the group's index, taken by whole warps:
//!
//! ```text
//! group = (tid / 32) / warps
//! @group != 0 bra next_1;  bar.sync base + 0, 32 * warps;  bra done;
//! next_1: @group != 1 bra next_2;  bar.sync base + 1, 32 * warps;  bra done;
//! ...
//! done:
//! ```
//!
//! A group that is the whole block needs no barrier of its own: it takes `bar.sync 0`.
//!
//! [`SyncScope::Warps`]: crate::planner::SyncScope::Warps
//! [`Ir::warp_partitions`]: crate::ir::Ir::warp_partitions

use super::*;

impl Emitter<'_> {
    /// The barrier of the thread's group of `warps` whole warps.
    pub(crate) fn warp_group_barrier(&mut self, warps: u32) {
        let block_warps = self.plan.block_threads / 32;
        let count = warps.saturating_mul(32);
        if warps >= block_warps {
            self.op(Op::BarSync { id: 0, count: None });
            return;
        }
        let mut base = 1;
        let mut groups = 0;
        for (w, g) in self.ir.warp_partitions() {
            if w == warps {
                groups = g;
                break;
            }
            base += g;
        }
        if groups <= 1 {
            self.op(Op::BarSync {
                id: base,
                count: Some(count),
            });
            return;
        }
        let tid = self.tid();
        let group = self.u32op(BinOp::Div, tid.into(), Operand::Imm(i64::from(count)));
        let done = self.label();
        for j in 0..groups {
            let next = self.label();
            let other = self.setp(Cmp::Ne, Ty::U32, group.into(), Operand::Imm(i64::from(j)));
            self.guarded(
                other,
                false,
                Op::Bra {
                    target: next.clone(),
                    uni: false,
                },
            );
            self.op(Op::BarSync {
                id: base + j,
                count: Some(count),
            });
            self.op(Op::Bra {
                target: done.clone(),
                uni: false,
            });
            self.op(Op::Label(next));
        }
        self.op(Op::Label(done));
    }
}

/// Where the thread stands in its group of whole warps: see [`Emitter::warp_group_place`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct WarpGroupPlace {
    /// The thread's lane.
    pub lane: Reg,
    /// The warp's index in the block (its entry in a collective's slice).
    pub warp: Reg,
    /// The warp's rank in its group.
    pub in_group: Reg,
    /// The group's index.
    pub group: Reg,
}

impl Emitter<'_> {
    /// The thread's lane, warp, warp rank in its group and group index, for groups of
    /// `warps` whole warps.
    pub(crate) fn warp_group_place(&mut self, warps: u32) -> WarpGroupPlace {
        let tid = self.tid();
        let lane = self.u32op(BinOp::Rem, tid.into(), Operand::Imm(32));
        let warp = self.u32op(BinOp::Div, tid.into(), Operand::Imm(32));
        let in_group = self.u32op(BinOp::Rem, warp.into(), Operand::Imm(i64::from(warps)));
        let group = self.u32op(BinOp::Div, warp.into(), Operand::Imm(i64::from(warps)));
        WarpGroupPlace {
            lane,
            warp,
            in_group,
            group,
        }
    }

    /// Hands `value` of each group's rank 0 to every thread of its group of `warps` whole
    /// warps, through the group's slot after the collective's entries, at the plan's next two
    /// steps (rank 0 writes; every thread reads).
    pub(crate) fn warp_group_hand_out(
        &mut self,
        c: &Collective,
        warps: u32,
        group: Reg,
        d: DType,
        value: Reg,
        steps: &mut Steps,
    ) -> Lowered<Reg> {
        self.enter_step(steps)?;
        let index = self.u32op(BinOp::Add, group.into(), Operand::Imm(i64::from(c.entries)));
        let slot = self.collective_addr(c, index.into());
        let tid = self.tid();
        let threads = i64::from(warps) * 32;
        let rank = self.u32op(BinOp::Rem, tid.into(), Operand::Imm(threads));
        let first = self.setp(Cmp::Eq, Ty::U32, rank.into(), Operand::Imm(0));
        self.shared_access_if(first, false, d, slot, value);
        self.enter_step(steps)?;
        let all = self.reg(super::class(d));
        self.shared_value(true, d, slot, all);
        Ok(all)
    }
}

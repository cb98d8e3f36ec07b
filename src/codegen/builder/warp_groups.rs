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

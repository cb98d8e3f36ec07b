//! Lane collectives: a tile's ops must be run by every thread of the tile (its control
//! uniform over the tile's width); a partition's ops stay in the region the partition was
//! made in, with no exit between, where the lanes that run them are its members.

use super::Verifier;
use super::defined::{Def, State};
use crate::ir::DType;
use crate::ir::entities::{DataId, OpId};
use crate::ir::error::VerifyErrorKind as K;
use crate::ir::expr::VType;
use crate::ir::ops::*;

impl Verifier<'_> {
    /// A lane collective: a tile's op, its operands' types, and its result's.
    pub(super) fn lanes(&mut self, op: OpId, l: &LaneSpec, state: &mut State) {
        let ir = self.ir;
        let loc = ir.op(op).loc;
        let group = ir.groups[l.group.index()].kind;
        match group {
            // A partition's lanes, and those `coalesced_threads` finds, run it by
            // construction.
            GroupKind::LogicalWarp { .. } if l.members.is_some() || l.op == LaneOp::Coalesce => {}
            GroupKind::LogicalWarp { .. } => self.collective(group, loc, op),
            // A group of whole warps's barrier: its members only, reached by whole groups.
            GroupKind::Warps { .. } if l.op == LaneOp::Sync => self.collective(group, loc, op),
            GroupKind::Block | GroupKind::Warps { .. } => {
                self.push(K::LaneOpNotOnTile { op: l.op, group }, loc, Some(op));
            }
        }
        let shape = (l.value.is_some(), l.lane.is_some(), l.out.is_some());
        if shape != (l.op.takes_value(), l.op.takes_lane(), l.op.gives_result()) {
            self.push(K::LaneOperands { op: l.op }, loc, Some(op));
        }
        if let Some(m) = l.members {
            self.partition_use(op, m);
        }
        let u32_ty = VType::D(DType::U32);
        if let Some(v) = l.value {
            if l.op.votes() {
                self.expect_ty(v, VType::Bool, loc, op);
            } else if self.ty(v) == VType::Bool {
                let found = VType::Bool;
                self.push(
                    K::TypeMismatch {
                        expected: u32_ty,
                        found,
                    },
                    loc,
                    Some(op),
                );
            }
            self.expr(v, state, op, None);
        }
        if let Some(lane) = l.lane {
            self.expect_ty(lane, u32_ty, loc, op);
            self.expr(lane, state, op, None);
        }
        if let Some(out) = l.out {
            let d = &ir.datas[out.index()];
            let expected = match (l.op.takes_lane(), l.value.map(|v| self.ty(v))) {
                (true, Some(VType::D(t))) => Some(t),
                (true, _) => None,
                (false, _) => Some(DType::U32),
            };
            if let Some(t) = expected
                && d.dtype != t
            {
                let (expected, found) = (VType::D(t), VType::D(d.dtype));
                self.push(K::TypeMismatch { expected, found }, loc, Some(op));
            }
            self.items_match(1, d.items, loc, op);
            state.set(out.index(), 0, Def::Everywhere);
        }
    }

    /// An op of the partition whose lanes payload `m` holds: in the region the partition was
    /// made in, after it, with no exit between.
    fn partition_use(&mut self, op: OpId, m: DataId) {
        let ir = self.ir;
        let loc = ir.op(op).loc;
        let made = ir.ops.iter().position(
            |o| matches!(&o.kind, OpKind::Lanes(l) if l.op.makes_partition() && l.out == Some(m)),
        );
        let Some(made) = made.map(|i| OpId(i as u32)) else {
            self.push(K::NotAPartition { data: m }, loc, Some(op));
            return;
        };
        let placed = ir.regions.iter().find_map(|r| {
            let at = |o: OpId| r.iter().position(|&x| x == o);
            Some((r, at(made)?, at(op)?))
        });
        // Whether `o` is or holds an exit (each op visited at most once per op of the IR, so
        // even a malformed nesting ends).
        let exits = |o: OpId| {
            let mut stack = vec![o];
            let mut budget = ir.ops.len();
            while let Some(x) = stack.pop() {
                let Some(d) = ir.ops.get(x.index()) else {
                    continue;
                };
                if matches!(
                    d.kind,
                    OpKind::ReturnIf { .. } | OpKind::Break | OpKind::Continue
                ) {
                    return true;
                }
                if budget == 0 {
                    break;
                }
                budget -= 1;
                for sub in d.kind.regions() {
                    stack.extend(ir.regions.get(sub.index()).into_iter().flatten().copied());
                }
            }
            false
        };
        let in_place =
            placed.is_some_and(|(r, a, b)| a < b && !r[a + 1..b].iter().any(|&x| exits(x)));
        if !in_place {
            let made = ir.op(made).loc;
            self.push(K::PartitionOutOfPlace { made }, loc, Some(op));
        }
        let d = &ir.datas[m.index()];
        if d.dtype != DType::U32 || d.items != 1 {
            self.push(K::NotAPartition { data: m }, loc, Some(op));
        }
    }
}

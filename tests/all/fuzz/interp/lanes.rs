//! Lane collectives, from `LaneOp`'s documentation: each tile of `w` threads (fewer in the
//! block's last) shuffles, votes and matches among its own threads; a source rank outside the
//! tile gives the thread its own value. A tile barrier orders nothing the interpreter tracks
//! (its races are the block's, between block barriers), so it only checks participation.

use super::Block;
use super::value::{V, derive, mask};
use coopgraph::ir::ops::{LaneOp, LaneSpec};
use coopgraph::ir::{DType, GroupKind};

impl Block<'_> {
    pub(super) fn lanes(&mut self, l: &LaneSpec, active: &[bool]) {
        let w = match self.ir.groups[l.group.index()].kind {
            GroupKind::LogicalWarp { width } => width.max(1),
            GroupKind::Block => return,
        };
        for (g0, n) in self.groups(l.group, active) {
            let (Some(value), Some(out)) = (l.value, l.out) else {
                continue;
            };
            let vals: Vec<V> = (g0..g0 + n).map(|t| self.eval(value, self.cx(t))).collect();
            let dt = match self.ir.expr(value).ty {
                coopgraph::ir::expr::VType::D(d) => d,
                coopgraph::ir::expr::VType::Bool => DType::U32,
            };
            let flags = vals.iter().fold(0, |f, v| f | v.flags);
            for r in 0..n {
                let t = g0 + r;
                let got = if l.op.takes_lane() {
                    let Some(lane) = l.lane else { continue };
                    let lane = self.eval(lane, self.cx(t));
                    self.check_defined(lane, "a shuffle's lane");
                    let lane = lane.bits as u32;
                    let r = r as u32;
                    let src = match l.op {
                        LaneOp::Shfl => Some(lane % w),
                        LaneOp::ShflUp => r.checked_sub(lane.min(w)),
                        LaneOp::ShflDown => Some(r + lane.min(w)),
                        _ => Some(r ^ (lane % w)),
                    };
                    match src {
                        Some(j) if (j as usize) < n => vals[j as usize],
                        _ => vals[r as usize],
                    }
                } else {
                    let key = |v: V| v.bits & mask(dt);
                    let bits = |f: &dyn Fn(V) -> bool| -> u64 {
                        (0..n).filter(|&j| f(vals[j])).map(|j| 1u64 << j).sum()
                    };
                    let all = if n >= 32 {
                        u64::from(u32::MAX)
                    } else {
                        (1u64 << n) - 1
                    };
                    let truth = bits(&|v| v.bits != 0);
                    let mine = key(vals[r]);
                    let result = match l.op {
                        LaneOp::Any => u64::from(truth != 0),
                        LaneOp::All => u64::from(truth == all),
                        LaneOp::Ballot => truth,
                        LaneOp::MatchAny => bits(&|v| key(v) == mine),
                        _ => {
                            if bits(&|v| key(v) == mine) == all {
                                all
                            } else {
                                0
                            }
                        }
                    };
                    V::with(result, derive(flags))
                };
                self.set(out, t, 0, got);
            }
        }
    }
}

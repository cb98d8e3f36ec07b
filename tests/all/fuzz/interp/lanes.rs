//! Lane collectives, from `LaneOp`'s documentation: each tile of `w` threads (fewer in the
//! block's last) or each partition (a set of lanes of a warp, ranked in lane order) shuffles,
//! votes and matches among its own threads; a source rank outside it gives the thread its own
//! value. `coalesced_threads` gives lanes of the warp that run it together: here all its active
//! lanes, but lanes that arrive apart (after a loop some ran longer, as the simulator and the
//! GPU schedule them) make groups of their own, so its lanes, and everything computed over a
//! partition made from them, are unspecified and scheduling-dependent. Labeled and binary
//! partitions give the lanes of the group with the same key or predicate. A barrier of a tile,
//! a partition or a group of whole warps orders its threads' shared accesses ([`super::order`]);
//! the other lane ops order none (`shfl.sync`, `vote.sync` and `match.sync` promise no memory
//! ordering).

use super::value::{NONDET, UNSPEC, V, derive, mask};
use super::{Block, Event};
use coopgraph::ir::ops::{LaneOp, LaneSpec};
use coopgraph::ir::{DType, GroupKind};

impl Block<'_> {
    pub(super) fn lanes(&mut self, l: &LaneSpec, active: &[bool]) {
        let w = match self.ir.groups[l.group.index()].kind {
            GroupKind::LogicalWarp { width } => width.max(1) as usize,
            // A group of whole warps's barrier: run by whole groups, ordering each's threads.
            GroupKind::Warps { .. } if l.op == LaneOp::Sync => {
                let sets: Vec<Vec<usize>> = (self.groups(l.group, active).into_iter())
                    .map(|(g0, n)| (g0..g0 + n).collect())
                    .collect();
                self.group_barrier(&sets);
                return;
            }
            GroupKind::Block | GroupKind::Warps { .. } => return,
        };
        // The sets of threads that run the op together, each in rank order.
        let mut sets: Vec<Vec<usize>> = Vec::new();
        if l.op == LaneOp::Coalesce {
            for w0 in (0..self.threads).step_by(32) {
                let set: Vec<usize> = (w0..(w0 + 32).min(self.threads))
                    .filter(|&t| active[t])
                    .collect();
                if !set.is_empty() {
                    sets.push(set);
                }
            }
        } else if let Some(m) = l.members {
            for w0 in (0..self.threads).step_by(32) {
                let warp: Vec<usize> = (w0..(w0 + 32).min(self.threads)).collect();
                for &t in &warp {
                    if !active[t] || sets.iter().any(|s| s.contains(&t)) {
                        continue;
                    }
                    let lanes = self.get(m, t, 0);
                    self.check_defined(lanes, "a partition's lanes");
                    let set: Vec<usize> = (warp.iter().copied())
                        .filter(|&u| lanes.bits >> (u - w0) & 1 == 1)
                        .collect();
                    // Exactly the members run it, and each sees the same lanes.
                    let runs = |u: usize| active[u] && self.get(m, u, 0).bits == lanes.bits;
                    if !set.contains(&t) || !set.iter().all(|&u| runs(u)) {
                        self.event(Event::Participation { op: self.op });
                        return;
                    }
                    sets.push(set);
                }
            }
        } else {
            sets = (self.groups(l.group, active).into_iter())
                .map(|(g0, n)| (g0..g0 + n).collect())
                .collect();
        }
        if l.op == LaneOp::Sync {
            self.group_barrier(&sets);
        }
        let Some(out) = l.out else {
            return;
        };
        for set in sets {
            self.lanes_of(l, &set, w, out);
        }
    }

    /// The op over one set of threads, in rank order.
    fn lanes_of(&mut self, l: &LaneSpec, set: &[usize], w: usize, out: coopgraph::ir::DataId) {
        let n = set.len();
        let lane_bit = |t: usize| 1u64 << (t % 32);
        if l.op == LaneOp::Coalesce {
            let lanes: u64 = set.iter().map(|&t| lane_bit(t)).sum();
            for &t in set {
                self.set(out, t, 0, V::with(lanes, UNSPEC | NONDET));
            }
            return;
        }
        // What the partition's lanes leave unknown, everything over it is.
        let unknown_lanes = l.members.map_or(0, |m| {
            set.iter().fold(0, |f, &t| f | self.get(m, t, 0).flags) & (UNSPEC | NONDET)
        });
        let Some(value) = l.value else {
            return;
        };
        let vals: Vec<V> = set.iter().map(|&t| self.eval(value, self.cx(t))).collect();
        // A vote or match reads every member's operand (the simulator faults on an undefined
        // one, as on any collective's); a shuffle's value only where a lane takes it.
        if !l.op.takes_lane() && vals.iter().any(|v| v.undef()) {
            self.event(Event::Undefined {
                op: self.op,
                what: "a vote's or match's operand",
            });
        }
        let dt = match self.ir.expr(value).ty {
            coopgraph::ir::expr::VType::D(d) => d,
            coopgraph::ir::expr::VType::Bool => DType::U32,
        };
        let flags = vals.iter().fold(unknown_lanes, |f, v| f | v.flags);
        // A tile's ranks; a partition's (and a coalesced group's) ranks count its members.
        let width = if l.members.is_some() { usize::MAX } else { w };
        for (r, &t) in set.iter().enumerate() {
            let got = if l.op.takes_lane() {
                let Some(lane) = l.lane else { continue };
                let lane = self.eval(lane, self.cx(t));
                self.check_defined(lane, "a shuffle's lane");
                // A lane the interpreter does not know (a remainder by zero, say) takes a
                // value from a lane it does not know either.
                let from_unknown = derive(lane.flags);
                let lane = lane.bits as u32 as usize;
                let w = width.min(u32::MAX as usize);
                let src = match l.op {
                    LaneOp::Shfl if l.members.is_some() => Some(lane),
                    LaneOp::Shfl => Some(lane % w),
                    LaneOp::ShflUp => r.checked_sub(lane.min(w)),
                    LaneOp::ShflDown => r.checked_add(lane.min(w)),
                    _ if l.members.is_some() => Some(r ^ lane),
                    _ => Some(r ^ (lane % w)),
                };
                let mut got = match src {
                    Some(j) if j < n => vals[j],
                    _ => vals[r],
                };
                got.flags |= unknown_lanes | from_unknown;
                got
            } else {
                let key = |v: V| v.bits & mask(dt);
                let ranks = |f: &dyn Fn(V) -> bool| -> u64 {
                    (0..n).filter(|&j| f(vals[j])).map(|j| 1u64 << j).sum()
                };
                let lanes = |f: &dyn Fn(V) -> bool| -> u64 {
                    (0..n)
                        .filter(|&j| f(vals[j]))
                        .map(|j| lane_bit(set[j]))
                        .sum()
                };
                let all = if n >= 32 {
                    u64::from(u32::MAX)
                } else {
                    (1u64 << n) - 1
                };
                let truth = ranks(&|v| v.bits != 0);
                let mine = key(vals[r]);
                let result = match l.op {
                    LaneOp::Any => u64::from(truth != 0),
                    LaneOp::All => u64::from(truth == all),
                    LaneOp::Ballot => truth,
                    LaneOp::MatchAny => ranks(&|v| key(v) == mine),
                    LaneOp::MatchAll => {
                        if ranks(&|v| key(v) == mine) == all {
                            all
                        } else {
                            0
                        }
                    }
                    LaneOp::Labeled => lanes(&|v| key(v) == mine),
                    _ => {
                        let p = vals[r].bits != 0;
                        lanes(&|v| (v.bits != 0) == p)
                    }
                };
                V::with(result, derive(flags))
            };
            self.set(out, t, 0, got);
        }
    }
}

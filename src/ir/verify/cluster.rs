//! Thread-block clusters: the cluster shape, cluster barriers at cluster-uniform control
//! (every thread of every block of the cluster must reach each one, so conditions and exits
//! before it must be the same across the grid: anything that depends on a block's index may
//! differ between the blocks of a cluster), the pairing of split barriers on every path, and
//! accesses to other blocks' shared arrays.

use super::Verifier;
use super::defined::{Def, State};
use crate::ir::entities::{OpId, RegionId};
use crate::ir::error::VerifyErrorKind as K;
use crate::ir::expr::VType;
use crate::ir::ops::*;
use crate::ir::{DType, Uniformity};

/// Where a split cluster barrier stands on a path: between an arrive and its wait or not.
type Arrived = bool;

impl Verifier<'_> {
    /// A cluster op: a barrier's control, or a remote access's operands.
    pub(super) fn cluster_op(&mut self, op: OpId, c: &ClusterOp, state: &mut State) {
        let ir = self.ir;
        let loc = ir.op(op).loc;
        if ir.cluster.is_none() {
            self.push(K::ClusterOpWithoutShape, loc, Some(op));
        }
        if c.is_barrier() {
            let grid = Uniformity::GRID.0;
            if let Some(&(_, condition)) = self.conds.iter().find(|(u, _)| !u.covers(grid)) {
                self.push(K::NonUniformClusterSync { condition }, loc, Some(op));
            } else if let Some((u, exit)) = self.flow.exit[op.index()]
                && !u.covers(grid)
            {
                let exit = ir.op(exit).loc;
                self.push(K::ClusterSyncAfterReturn { exit }, loc, Some(op));
            }
            return;
        }
        let u32_ty = VType::D(DType::U32);
        let (array, rank, index) = match c {
            ClusterOp::Read {
                array, rank, index, ..
            }
            | ClusterOp::Write {
                array, rank, index, ..
            }
            | ClusterOp::Atomic {
                array, rank, index, ..
            } => (*array, *rank, *index),
            _ => return,
        };
        let dtype = ir.arrays[array.index()].dtype;
        self.array_index_ty(index, loc, op);
        self.expect_ty(rank, u32_ty, loc, op);
        for e in c.exprs() {
            if e != rank && e != index {
                self.expect_ty(e, VType::D(dtype), loc, op);
            }
            self.expr(e, state, op, None);
        }
        if let ClusterOp::Atomic {
            op: aop, compare, ..
        } = c
        {
            if !aop.takes(dtype) {
                self.push(K::AtomicType { op: *aop, dtype }, loc, Some(op));
            }
            if (*aop == AtomicOp::Cas) != compare.is_some() {
                self.push(K::AtomicCompare { op: *aop }, loc, Some(op));
            }
            if *aop == AtomicOp::Load {
                let order = MemoryOrder::Relaxed;
                self.push(
                    K::AtomicLoad {
                        order,
                        shared: true,
                    },
                    loc,
                    Some(op),
                );
            }
        }
        if let Some(dst) = c.dst() {
            let d = &ir.datas[dst.index()];
            if d.dtype != dtype {
                let (expected, found) = (VType::D(dtype), VType::D(d.dtype));
                self.push(K::TypeMismatch { expected, found }, loc, Some(op));
            }
            self.items_match(1, d.items, loc, op);
            state.set(dst.index(), 0, Def::Everywhere);
        }
    }

    /// The kernel-wide rules of clusters: the shape's size, no grid barrier beside clusters,
    /// no early exit before the trailing barrier of a kernel with remote accesses, and split
    /// barriers paired on every path.
    pub(super) fn check_clusters(&mut self) {
        let ir = self.ir;
        if let Some(c) = ir.cluster
            && let Some(dims) = c.dims
            && (dims.contains(&0) || c.blocks() > Some(MAX_CLUSTER_BLOCKS))
        {
            self.push(K::ClusterSize { dims }, c.loc, None);
        }
        if !ir.uses_cluster() {
            return;
        }
        for (i, op) in ir.ops.iter().enumerate() {
            if matches!(op.kind, OpKind::SyncGrid) {
                self.push(K::ClusterWithGridSync, op.loc, Some(OpId(i as u32)));
            }
        }
        if ir.uses_remote_shared() {
            for (i, op) in ir.ops.iter().enumerate() {
                if matches!(op.kind, OpKind::ReturnIf { .. }) {
                    let exit = op.loc;
                    self.push(K::ExitWithRemoteShared { exit }, exit, Some(OpId(i as u32)));
                }
            }
        }
        let end = self.pairing(ir.body, false, None);
        if end {
            let loc = ir.cluster.map_or(ir.block.loc, |c| c.loc);
            let problem = "an arrive has no wait after it before the kernel ends";
            self.push(K::UnpairedClusterBarrier { problem }, loc, None);
        }
    }

    /// Walks `region` from state `arrived`; returns the state at its end. `loop_start` is
    /// the state at the start of the innermost loop's body (where `break_` and `continue_`
    /// must leave it).
    fn pairing(
        &mut self,
        region: RegionId,
        mut arrived: Arrived,
        loop_start: Option<Arrived>,
    ) -> Arrived {
        let ir = self.ir;
        for &op in ir.region(region) {
            let data = ir.op(op);
            let loc = data.loc;
            let bad = |v: &mut Self, problem: &'static str| {
                v.push(K::UnpairedClusterBarrier { problem }, loc, Some(op));
            };
            match &data.kind {
                OpKind::Cluster(ClusterOp::Arrive) => {
                    if arrived {
                        bad(self, "a second arrive before the first one's wait");
                    }
                    arrived = true;
                }
                OpKind::Cluster(ClusterOp::Wait) => {
                    if !arrived {
                        bad(self, "a wait without an arrive before it");
                    }
                    arrived = false;
                }
                OpKind::Cluster(ClusterOp::Sync) if arrived => {
                    bad(self, "a cluster sync between an arrive and its wait");
                }
                OpKind::Break | OpKind::Continue if loop_start.is_some_and(|s| s != arrived) => {
                    bad(
                        self,
                        "a jump out of a loop body between an arrive and its wait",
                    );
                }
                OpKind::If {
                    then, otherwise, ..
                } => {
                    let a = self.pairing(*then, arrived, loop_start);
                    let b = match otherwise {
                        Some(o) => self.pairing(*o, arrived, loop_start),
                        None => arrived,
                    };
                    if a != b {
                        bad(
                            self,
                            "the branches of an `if` leave the barrier differently",
                        );
                    }
                    arrived = a;
                }
                kind if kind.is_loop() => {
                    for body in kind.regions() {
                        if self.pairing(body, arrived, Some(arrived)) != arrived {
                            bad(
                                self,
                                "a loop body leaves the barrier differently than it found it",
                            );
                        }
                    }
                }
                kind => {
                    // A prefix callback's body runs once, inside its op.
                    for body in kind.regions() {
                        if self.pairing(body, arrived, loop_start) != arrived {
                            bad(
                                self,
                                "a callback leaves the barrier differently than it found it",
                            );
                        }
                    }
                }
            }
        }
        arrived
    }
}

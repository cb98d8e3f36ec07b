//! Lowering of cluster ops (sm_90): the cluster barrier as `barrier.cluster.arrive` and
//! `barrier.cluster.wait` (their default semantics: release, then acquire, at cluster
//! scope), and accesses to another block's shared array: the element's `.shared` address in
//! this block, mapped to the block of the rank asked for with `mapa.shared::cluster`, then
//! `ld`, `st` or `atom` on `.shared::cluster`.
//!
//! A kernel that accesses another block's shared memory ends with a cluster barrier (see
//! [`Emitter::cluster_epilogue`]): a block's shared memory must stay until every other block
//! of the cluster is done with it.

use super::builder::{ArrayRef, Emitter, Lowered};
use super::expr::Ctx;
use crate::ir::ops::{AtomicMemory, AtomicSpec, Bounds, ClusterOp};
use crate::ir::{ArrayId, ExprId, Ir, OpId};
use crate::planner::PlanError;
use crate::ptx::*;
use rustc_hash::FxHashMap;

/// The arch check of a kernel that runs in clusters: thread-block clusters need sm_90.
pub(crate) fn check_arch(ir: &Ir, arch: Arch) -> Result<(), PlanError> {
    if arch >= Arch::Sm90 || !ir.uses_cluster() {
        return Ok(());
    }
    let loc = match ir.cluster {
        Some(c) => c.loc,
        None => (ir.ops.iter())
            .find(|o| matches!(o.kind, crate::ir::ops::OpKind::Cluster(_)))
            .map_or(ir.block.loc, |o| o.loc),
    };
    Err(PlanError::ArchTooOld {
        feature: "a thread-block cluster",
        loc,
        need: Arch::Sm90,
        arch,
    })
}

impl Emitter<'_> {
    /// Lowers a cluster op.
    pub(crate) fn cluster_op(&mut self, op: OpId, c: &ClusterOp) -> Lowered {
        let ir = self.ir;
        let mut memo = FxHashMap::default();
        let ctx = Ctx::default();
        match c {
            ClusterOp::Sync => {
                self.op(Op::BarrierCluster { wait: false });
                self.op(Op::BarrierCluster { wait: true });
            }
            ClusterOp::Arrive => self.op(Op::BarrierCluster { wait: false }),
            ClusterOp::Wait => self.op(Op::BarrierCluster { wait: true }),
            ClusterOp::Read {
                array,
                rank,
                index,
                dst,
            } => {
                let dtype = ir.arrays[array.index()].dtype;
                let i = self.eval(*index, &ctx, &mut memo);
                let r = self.eval(*rank, &ctx, &mut memo);
                let local = self.array_addr(*array, i);
                let remote = self.mapa(local, r);
                let inside = self.remote_inside(*array, *index, i, r, false);
                let v = self.load(Space::SharedCluster, dtype, remote, inside);
                self.mov_into(dtype, *dst, 0, v);
            }
            ClusterOp::Write {
                array,
                rank,
                index,
                value,
            } => {
                let dtype = ir.arrays[array.index()].dtype;
                let i = self.eval(*index, &ctx, &mut memo);
                let r = self.eval(*rank, &ctx, &mut memo);
                let v = self.eval(*value, &ctx, &mut memo);
                let local = self.array_addr(*array, i);
                let remote = self.mapa(local, r);
                let inside = self.remote_inside(*array, *index, i, r, true);
                self.store_at(Space::SharedCluster, dtype, remote, v, inside);
            }
            ClusterOp::Atomic {
                array,
                op: aop,
                rank,
                index,
                value,
                compare,
                order,
                scope,
                old,
            } => {
                let dtype = ir.arrays[array.index()].dtype;
                let i = self.eval(*index, &ctx, &mut memo);
                let r = self.eval(*rank, &ctx, &mut memo);
                let v = self.eval(*value, &ctx, &mut memo);
                let compare_reg = compare.map(|c| self.eval(c, &ctx, &mut memo));
                let local = self.array_addr(*array, i);
                let remote = self.mapa(local, r);
                let spec = AtomicSpec {
                    memory: AtomicMemory::Shared(*array),
                    op: *aop,
                    index: *index,
                    value: *value,
                    compare: *compare,
                    order: *order,
                    scope: *scope,
                    old: *old,
                };
                let inside = self.remote_inside(*array, *index, i, r, true);
                let site = (dtype, Space::SharedCluster, remote, inside);
                self.atomic_at(op, &spec, site, v, compare_reg)?;
            }
        }
        Ok(())
    }

    /// Where bounds are checked, the guard of a remote access: the index inside the array
    /// ([`Emitter::array_inside`], which also records a debug failure) and the rank inside
    /// the cluster (on the GPU, `mapa` of a rank past the cluster is undefined).
    fn remote_inside(
        &mut self,
        array: ArrayId,
        index_expr: ExprId,
        index: Reg,
        rank: Reg,
        write: bool,
    ) -> Option<Reg> {
        if self.ir.bounds == Bounds::Unchecked {
            return None;
        }
        let inside = self.array_inside(ArrayRef::Shared(array), index_expr, index, write, None);
        let blocks = match self.ir.cluster.as_ref().map_or(Some(1), |c| c.blocks()) {
            Some(n) => Operand::Imm(i64::from(n)),
            None => self.special(Special::ClusterNctarank).into(),
        };
        let rank_ok = self.setp(Cmp::Lt, Ty::U32, rank.into(), blocks);
        self.both(inside, Some(rank_ok))
    }

    /// `mapa.shared::cluster.u32`: the `.shared::cluster` address of `.shared` address
    /// `local` in the block of cluster rank `rank`.
    fn mapa(&mut self, local: Reg, rank: Reg) -> Reg {
        let dst = self.reg(RegClass::B32);
        self.op(Op::Mapa {
            dst,
            src: local.into(),
            rank: rank.into(),
        });
        dst
    }

    /// Before the kernel's `ret`: a cluster barrier where the kernel accesses another block's
    /// shared memory, so that no block exits (and frees its shared memory) while another may
    /// still access it. Every thread reaches it: the verifier refuses an early exit in such a
    /// kernel.
    pub(crate) fn cluster_epilogue(&mut self) {
        if self.ir.uses_remote_shared() {
            self.op(Op::Comment(
                "the kernel's last cluster barrier: no block leaves while another may still \
                 access its shared memory"
                    .into(),
            ));
            self.op(Op::BarrierCluster { wait: false });
            self.op(Op::BarrierCluster { wait: true });
        }
    }
}

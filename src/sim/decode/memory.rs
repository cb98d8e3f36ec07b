//! Decoding of what touches memory beside plain loads and stores: ordered loads, the memory
//! orders of atomics, and the state spaces instructions name.

use super::{D, Decoder, Ext, Fit, Inst, Mem, NONE, alu, class_bits};
use crate::ptx::*;
use crate::sim::error::{InvalidReason, MemSpace};

impl Decoder<'_> {
    /// `[base+offset]` in `space`: the base slot and displacement.
    pub(super) fn addr(&mut self, a: &Address, space: Space) -> D<(u32, i64)> {
        match &a.base {
            AddrBase::Reg(r) => {
                let fit = if matches!(space, Space::Global | Space::GlobalNc) {
                    Fit::Exact(64)
                } else {
                    Fit::AtLeast(32)
                };
                if matches!(r.class, RegClass::F32 | RegClass::F64) {
                    return Err(InvalidReason::RegisterClass {
                        register: format!("%{}{}", r.class.prefix(), r.index),
                    });
                }
                Ok((self.reg(*r, fit)?, a.offset))
            }
            AddrBase::Param(name) => {
                if space != Space::Param {
                    return Err(InvalidReason::UnknownSymbol);
                }
                let p = self
                    .params
                    .iter()
                    .find(|p| &p.name == name)
                    .ok_or(InvalidReason::UnknownSymbol)?;
                Ok((NONE, a.offset.saturating_add(i64::from(p.offset))))
            }
            AddrBase::Shared(i) => {
                if space != Space::Shared {
                    return Err(InvalidReason::UnknownSymbol);
                }
                let s = self
                    .shared
                    .get(*i as usize)
                    .ok_or(InvalidReason::UnknownSymbol)?;
                Ok((NONE, a.offset.saturating_add(i64::from(s.addr))))
            }
            AddrBase::Local(i) => {
                if space != Space::Local {
                    return Err(InvalidReason::UnknownSymbol);
                }
                let s = self
                    .local
                    .get(*i as usize)
                    .ok_or(InvalidReason::UnknownSymbol)?;
                Ok((NONE, a.offset.saturating_add(s.addr as i64)))
            }
            AddrBase::Const(i) => {
                if space != Space::Const {
                    return Err(InvalidReason::UnknownSymbol);
                }
                let s = self
                    .cmem
                    .get(*i as usize)
                    .ok_or(InvalidReason::UnknownSymbol)?;
                Ok((NONE, a.offset.saturating_add(s.addr as i64)))
            }
        }
    }

    /// `ld.sem.scope.space.ty dst, [addr]`: a scalar load, global or shared, of 32 or 64 bits.
    pub(super) fn ld_ordered(
        &mut self,
        space: Space,
        ty: Ty,
        dst: Reg,
        addr: &Address,
        acquire: bool,
    ) -> D<Inst> {
        if ty == Ty::Pred || ty.bytes() < 4 {
            return Err(InvalidReason::BadType);
        }
        let space = atomic_space(space)?;
        let fit = if ty.is_float() {
            Fit::Exact(alu::reg_bits(ty))
        } else {
            Fit::AtLeast(alu::reg_bits(ty))
        };
        let reg = self.reg(dst, fit)?;
        let ext = match (ty.is_signed(), class_bits(dst.class) == 64) {
            (false, _) => Ext::Zero,
            (true, false) => Ext::Sign32,
            (true, true) => Ext::Sign64,
        };
        let (base, disp) = self.addr(addr, *space_of(space))?;
        Ok(Inst::LdOrdered {
            mem: Mem {
                space,
                n: 1,
                size: ty.bytes() as u8,
                ext,
                regs: [reg, NONE, NONE, NONE],
                base,
                disp,
            },
            acquire,
        })
    }
}

/// Whether a memory order acquires (`.acquire`, `.acq_rel`).
pub(super) fn acquires(order: Order) -> bool {
    matches!(order, Some((Sem::Acquire | Sem::AcqRel, _)))
}

/// Whether a memory order releases (`.release`, `.acq_rel`).
pub(super) fn releases(order: Order) -> bool {
    matches!(order, Some((Sem::Release | Sem::AcqRel, _)))
}

impl Decoder<'_> {
    /// `mapa.shared::cluster.u32 dst, src, rank`.
    pub(super) fn mapa(&mut self, dst: Reg, src: &Operand, rank: &Operand) -> D<Inst> {
        Ok(Inst::Mapa {
            dst: self.dst(dst, Ty::U32)?,
            src: self.opd(src, Ty::U32)?,
            rank: self.opd(rank, Ty::U32)?,
        })
    }
}

/// Whether an instruction belongs to clusters (see [`crate::sim::cluster`]).
pub(super) fn is_cluster_op(op: &Op) -> bool {
    match op {
        Op::Mapa { .. } | Op::BarrierCluster { .. } => true,
        Op::Ld { space, .. }
        | Op::St { space, .. }
        | Op::Atom { space, .. }
        | Op::Red { space, .. }
        | Op::LdOrdered { space, .. } => *space == Space::SharedCluster,
        _ => false,
    }
}

pub(super) fn mem_space(s: Space) -> MemSpace {
    match s {
        Space::SharedCluster => MemSpace::Cluster,
        Space::Param => MemSpace::Param,
        Space::Global | Space::GlobalNc => MemSpace::Global,
        Space::Shared => MemSpace::Shared,
        Space::Local => MemSpace::Local,
        Space::Const => MemSpace::Const,
    }
}

pub(super) fn atomic_space(s: Space) -> D<MemSpace> {
    match s {
        Space::Global => Ok(MemSpace::Global),
        Space::Shared => Ok(MemSpace::Shared),
        Space::SharedCluster => Ok(MemSpace::Cluster),
        _ => Err(InvalidReason::ReadOnlySpace),
    }
}

pub(super) fn space_of(s: MemSpace) -> &'static Space {
    match s {
        MemSpace::Shared => &Space::Shared,
        MemSpace::Cluster => &Space::SharedCluster,
        _ => &Space::Global,
    }
}

/// A vector access's length: 1, 2 or 4.
pub(super) fn vec_len(n: usize) -> D<u8> {
    match n {
        1 | 2 | 4 => Ok(n as u8),
        _ => Err(InvalidReason::BadVector),
    }
}

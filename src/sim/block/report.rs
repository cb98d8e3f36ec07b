//! What fault reports need of a block: the shared address of a storage byte, and where an
//! undefined value came from, and the memory extent nearest a faulting address.

use super::super::decode::SHARED_SHIFT;
use super::super::error::{Extent, MemSpace, UninitOrigin};
use super::super::exec::NEVER;
use super::BlockRun;

impl BlockRun<'_> {
    /// The shared address of storage byte `byte`.
    pub(super) fn shared_address(&self, byte: u32) -> u32 {
        self.shared
            .segments
            .iter()
            .enumerate()
            .find(|(_, s)| byte >= s.offset && byte - s.offset < s.len)
            .map_or(byte, |(k, s)| {
                ((k as u32) << SHARED_SHIFT) + (byte - s.offset)
            })
    }

    pub(super) fn origin_of(&self, o: u32) -> UninitOrigin {
        if o & NEVER != 0 {
            let register = self
                .prog
                .slot_name(o & !NEVER)
                .unwrap_or_else(|| "?".to_string());
            return UninitOrigin::Register { register };
        }
        let pc = o.saturating_sub(1);
        let at = self.prog.location(pc);
        match self.prog.code.get(pc as usize).map(|i| i.inst) {
            Some(super::super::decode::Inst::Coll(_)) => UninitOrigin::Shuffle { at },
            _ => UninitOrigin::Load { at },
        }
    }

    /// The extent nearest `addr` in `space`, and whether `addr` lies past every extent.
    pub(super) fn nearest(&self, space: MemSpace, addr: u64) -> (Option<Extent>, bool) {
        let dist = |e: &Extent| {
            if addr < e.base {
                e.base - addr
            } else {
                addr.saturating_sub(e.base.saturating_add(e.len))
            }
        };
        let pick = |v: Vec<Extent>| v.into_iter().min_by_key(dist);
        match space {
            MemSpace::Cluster => {
                self.nearest(MemSpace::Shared, addr & super::super::cluster::LOCAL_MASK)
            }
            MemSpace::Global => self.global.nearest(addr),
            MemSpace::Shared => {
                let dynamic = self.shape.dynamic_smem;
                let mut v: Vec<Extent> = self
                    .prog
                    .shared
                    .iter()
                    .map(|s| Extent {
                        base: u64::from(s.addr),
                        len: u64::from(if s.bytes == 0 { dynamic } else { s.bytes }),
                        name: Some(s.name.clone()),
                        note: s.comment.clone(),
                    })
                    .collect();
                if dynamic > 0 && self.prog.shared.iter().all(|s| s.bytes > 0) {
                    v.push(Extent {
                        base: u64::from(self.prog.dyn_addr()),
                        len: u64::from(dynamic),
                        name: Some("(dynamic shared memory)".to_string()),
                        note: None,
                    });
                }
                // Shared addresses are 32 bits: an index below the first declaration wraps
                // to the top of the space, and is nearest to it.
                let wrapped = |e: &Extent| {
                    let Ok(a) = u32::try_from(addr) else {
                        return dist(e);
                    };
                    let (b, l) = (e.base as u32, e.len as u32);
                    if a.wrapping_sub(b) < l.max(1) {
                        0
                    } else {
                        u64::from(a.wrapping_sub(b.wrapping_add(l)).min(b.wrapping_sub(a)))
                    }
                };
                (v.into_iter().min_by_key(wrapped), false)
            }
            MemSpace::Local => {
                let window = Extent {
                    base: 0,
                    len: u64::from(self.opts.local_bytes),
                    name: Some("(local window)".to_string()),
                    note: None,
                };
                let decls = self.prog.local.iter().map(|s| Extent {
                    base: s.addr,
                    len: u64::from(s.bytes),
                    name: Some(s.name.clone()),
                    note: s.comment.clone(),
                });
                let all = (self.opts.local_bytes > 0).then_some(window);
                (pick(all.into_iter().chain(decls).collect()), false)
            }
            MemSpace::Const => (
                pick(
                    self.prog
                        .cmem
                        .iter()
                        .map(|s| Extent {
                            base: s.addr,
                            len: s.data.len() as u64,
                            name: Some(s.name.clone()),
                            note: s.comment.clone(),
                        })
                        .collect(),
                ),
                false,
            ),
            MemSpace::Param => (
                pick(
                    self.prog
                        .params
                        .iter()
                        .map(|p| Extent {
                            base: u64::from(p.offset),
                            len: u64::from(p.size),
                            name: Some(p.name.clone()),
                            note: None,
                        })
                        .collect(),
                ),
                false,
            ),
        }
    }
}

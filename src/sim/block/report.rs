//! What fault reports need of a block: the shared address of a storage byte, and where an
//! undefined value came from.

use super::super::decode::SHARED_SHIFT;
use super::super::error::UninitOrigin;
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
}

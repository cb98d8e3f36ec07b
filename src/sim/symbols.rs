//! Where a function's declarations live: its shared memory (the static declarations in order,
//! then the dynamic part), its threads' local memory (the window, then each `.local`
//! declaration) and its constants, each declaration at an address of its own with unmapped
//! addresses around it, so an access past one faults instead of reaching another's bytes.

use super::error::InvalidReason;
use crate::ptx::Function;

/// Declaration `k` of a block's shared memory (the static ones in order, then the dynamic
/// part) is at shared address `k << SHARED_SHIFT`: 1 MiB apart, so every declaration (at most
/// the 227 KiB a block can have) is followed by unmapped addresses, more than its own size,
/// and an overrun or underrun of up to a whole declaration faults instead of reaching the
/// next one.
pub(crate) const SHARED_SHIFT: u32 = 20;

/// The most shared declarations a function may have (their addresses stay below 2^32).
const MAX_SHARED_DECLS: usize = (1 << (32 - SHARED_SHIFT)) - 1;

/// The most shared declarations a function that runs in clusters may have: their addresses
/// stay below the rank bits of `.shared::cluster` addresses
/// ([`CLUSTER_SHIFT`](super::cluster::CLUSTER_SHIFT)).
const MAX_CLUSTER_SHARED_DECLS: usize = (1 << (super::cluster::CLUSTER_SHIFT - SHARED_SHIFT)) - 1;

/// A thread's local window is at local address 0, and `.local` declaration `k` at
/// `(k + 1) << LOCAL_SHIFT`; `.const` declaration `k` at const address `(k + 1) << LOCAL_SHIFT`.
/// 1 MiB apart (a thread has at most 512 KiB of local memory, a module 64 KiB of constants),
/// so an access past or below a declaration faults instead of reaching another's bytes.
pub(crate) const LOCAL_SHIFT: u32 = 20;

/// The most `.local` or `.const` declarations a function may have (their addresses stay
/// below 2^32).
const MAX_LOCAL_DECLS: usize = (1 << (32 - LOCAL_SHIFT)) - 2;

/// A `.local` declaration: its address, and where its bytes start in a thread's local storage
/// (after the window).
#[derive(Debug, Clone)]
pub(crate) struct LocalSlot {
    pub name: String,
    /// The local address of its first byte.
    pub addr: u64,
    /// Where its bytes start in the thread's storage, counted from the window's end.
    pub offset: u32,
    pub bytes: u32,
    pub comment: Option<String>,
}

/// A `.const` declaration: its address and contents.
#[derive(Debug, Clone)]
pub(crate) struct ConstSlot {
    pub name: String,
    /// The const address of its first byte.
    pub addr: u64,
    pub data: Vec<u8>,
    pub comment: Option<String>,
}

/// A shared declaration: its address, and its place in the block's storage (where the static
/// declarations lie in order, each at its alignment, then the dynamic part).
#[derive(Debug, Clone)]
pub(crate) struct SharedSlot {
    pub name: String,
    /// The shared address of its first byte.
    pub addr: u32,
    /// Where its bytes start in the block's storage.
    pub offset: u32,
    /// Its size; 0 for the dynamic part (sized at launch).
    pub bytes: u32,
    /// The declaration's comment.
    pub comment: Option<String>,
}

/// A function's declarations, laid out.
pub(crate) struct Symbols {
    /// Every shared declaration, in declaration order; dynamic ones have size 0.
    pub shared: Vec<SharedSlot>,
    /// Bytes of static shared declarations.
    pub static_smem: u32,
    /// Where the dynamic part starts in the block's storage.
    pub dyn_base: u32,
    /// Every `.local` declaration, in order.
    pub local: Vec<LocalSlot>,
    /// Bytes of `.local` declarations a thread has (after its window).
    pub local_bytes: u32,
    /// Every `.const` declaration, in order.
    pub cmem: Vec<ConstSlot>,
}

/// Lays out `f`'s declarations; a bad one (an alignment not a power of two, too many, too
/// large) is [`InvalidReason::BadShared`].
pub(crate) fn lay_out(f: &Function) -> Result<Symbols, InvalidReason> {
    // Static declarations in order, each at its alignment; then the dynamic part, where every
    // dynamic declaration (size 0) starts, as `extern __shared__` arrays all alias.
    let mut shared = Vec::with_capacity(f.shared.len());
    let mut soff: u32 = 0;
    let bad_shared = || InvalidReason::BadShared;
    let clustered = f.reqnctapercluster.is_some() || f.explicitcluster;
    let most = if clustered {
        MAX_CLUSTER_SHARED_DECLS
    } else {
        MAX_SHARED_DECLS
    };
    if f.shared.len() > most {
        return Err(bad_shared());
    }
    for s in &f.shared {
        if !s.align.is_power_of_two() {
            return Err(bad_shared());
        }
        if s.bytes == 0 {
            continue;
        }
        soff = soff
            .checked_next_multiple_of(s.align)
            .ok_or_else(bad_shared)?;
        shared.push(SharedSlot {
            name: s.name.clone(),
            addr: (shared.len() as u32) << SHARED_SHIFT,
            offset: soff,
            bytes: s.bytes,
            comment: s.comment.clone(),
        });
        soff = soff.checked_add(s.bytes).ok_or_else(bad_shared)?;
    }
    let mut dyn_base = soff;
    for s in f.shared.iter().filter(|s| s.bytes == 0) {
        dyn_base = dyn_base.max(
            soff.checked_next_multiple_of(s.align)
                .ok_or_else(bad_shared)?,
        );
    }
    // Keep declaration order, so `SharedAddr(i)` indexes this table.
    let dyn_addr = (shared.len() as u32) << SHARED_SHIFT;
    let mut ordered = Vec::with_capacity(f.shared.len());
    let mut statics = shared.into_iter();
    for s in &f.shared {
        if s.bytes == 0 {
            ordered.push(SharedSlot {
                name: s.name.clone(),
                addr: dyn_addr,
                offset: dyn_base,
                bytes: 0,
                comment: s.comment.clone(),
            });
        } else if let Some(x) = statics.next() {
            ordered.push(x);
        }
    }
    let shared = ordered;

    // `.local` declarations, each at its alignment after the ones before it in a thread's
    // storage (which starts with the window), and `.const` ones with their contents.
    let mut local = Vec::with_capacity(f.local.len());
    let mut loff: u32 = 0;
    if f.local.len() > MAX_LOCAL_DECLS || f.consts.len() > MAX_LOCAL_DECLS {
        return Err(bad_shared());
    }
    for (k, l) in f.local.iter().enumerate() {
        if !l.align.is_power_of_two() || l.bytes == 0 || l.bytes > 1 << LOCAL_SHIFT {
            return Err(bad_shared());
        }
        loff = loff
            .checked_next_multiple_of(l.align)
            .ok_or_else(bad_shared)?;
        local.push(LocalSlot {
            name: l.name.clone(),
            addr: (k as u64 + 1) << LOCAL_SHIFT,
            offset: loff,
            bytes: l.bytes,
            comment: l.comment.clone(),
        });
        loff = loff.checked_add(l.bytes).ok_or_else(bad_shared)?;
    }
    let mut cmem = Vec::with_capacity(f.consts.len());
    for (k, c) in f.consts.iter().enumerate() {
        if !c.align.is_power_of_two() || c.data.is_empty() || c.data.len() > 1 << LOCAL_SHIFT {
            return Err(bad_shared());
        }
        cmem.push(ConstSlot {
            name: c.name.clone(),
            addr: (k as u64 + 1) << LOCAL_SHIFT,
            data: c.data.clone(),
            comment: c.comment.clone(),
        });
    }
    Ok(Symbols {
        shared,
        static_smem: soff,
        dyn_base,
        local,
        local_bytes: loff,
        cmem,
    })
}

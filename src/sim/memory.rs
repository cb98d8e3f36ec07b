//! Simulated global memory: allocations at 256-byte aligned device addresses with unmapped gaps
//! between them, each with a written bit per byte.
//!
//! The map of allocations is behind a lock held only for the moment an allocation is made,
//! freed or looked up; a launch takes a snapshot of it (each allocation is shared, so freeing
//! one during a launch leaves the launch's copy alive until it ends), and host copies and
//! allocations proceed while kernels run.
//!
//! Storage is `AtomicU64` words and a byte of written bits per word, accessed with relaxed
//! ordering: plain moves on the host, yet safe to share between worker threads that run blocks
//! in parallel. Every kernel access is naturally aligned (misaligned ones fault before they get
//! here) and allocations start on word boundaries, so an access never straddles two words.
//! Read-modify-write of part of a word uses a compare-and-swap loop when blocks run in
//! parallel, so neighbouring bytes written by another block are never lost.

use super::error::{Extent, SimError};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};

/// The first device address handed out.
const BASE: u64 = 1 << 40;
/// Allocation alignment.
const ALIGN: u64 = 256;
/// The smallest unmapped gap after an allocation (larger allocations get a gap of their own
/// size, so an overrun by up to a whole buffer faults).
const MIN_GAP: u64 = 64 << 10;

/// One allocation.
pub(crate) struct Allocation {
    pub base: u64,
    pub len: u64,
    words: Box<[AtomicU64]>,
    written: Box<[AtomicU8]>,
}

fn boxed<T>(n: usize, mut make: impl FnMut() -> T) -> Result<Box<[T]>, SimError> {
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| SimError::OutOfMemory { bytes: n })?;
    v.resize_with(n, &mut make);
    Ok(v.into_boxed_slice())
}

impl Allocation {
    fn new(base: u64, len: u64, zeroed: bool) -> Result<Allocation, SimError> {
        let oom = SimError::OutOfMemory {
            bytes: usize::try_from(len).unwrap_or(usize::MAX),
        };
        let words = usize::try_from(len.div_ceil(8)).map_err(|_| oom.clone())?;
        let fill = if zeroed { 0xFF } else { 0 };
        Ok(Allocation {
            base,
            len,
            words: boxed(words, || AtomicU64::new(0)).map_err(|_| oom.clone())?,
            written: boxed(words, || AtomicU8::new(fill)).map_err(|_| oom)?,
        })
    }

    /// Loads `size` (1, 2, 4 or 8) bytes at offset `off` (aligned to `size`, in bounds):
    /// the value and whether every byte was written.
    #[inline]
    pub(crate) fn load(&self, off: u64, size: u32) -> (u64, bool) {
        let i = (off / 8) as usize;
        let sh = (off % 8) as u32;
        let (Some(w), Some(m)) = (self.words.get(i), self.written.get(i)) else {
            return (0, false);
        };
        let w = w.load(Relaxed);
        let m = m.load(Relaxed);
        let bits = byte_mask(size);
        let val = (w >> (sh * 8)) & value_mask(size);
        let defined = (u32::from(m) >> sh) & bits == bits;
        (val, defined)
    }

    /// Stores the low `size` bytes of `v` at offset `off` (aligned, in bounds).
    #[inline]
    pub(crate) fn store(&self, off: u64, size: u32, v: u64, parallel: bool) {
        let i = (off / 8) as usize;
        let sh = (off % 8) as u32;
        let (Some(w), Some(m)) = (self.words.get(i), self.written.get(i)) else {
            return;
        };
        if size == 8 {
            w.store(v, Relaxed);
        } else {
            let mask = value_mask(size) << (sh * 8);
            let bits = (v << (sh * 8)) & mask;
            if parallel {
                // The closure always returns Some, so the update cannot fail.
                let _ = w.fetch_update(Relaxed, Relaxed, |old| Some((old & !mask) | bits));
            } else {
                w.store((w.load(Relaxed) & !mask) | bits, Relaxed);
            }
        }
        let wb = (byte_mask(size) << sh) as u8;
        if m.load(Relaxed) & wb != wb {
            if parallel {
                m.fetch_or(wb, Relaxed);
            } else {
                m.store(m.load(Relaxed) | wb, Relaxed);
            }
        }
    }

    /// Copies host bytes in at `off` (in bounds): whole words at once, the partial words at
    /// either end byte by byte with compare-and-swap (other bytes of them may be written by
    /// someone else meanwhile).
    fn write_bytes(&self, off: u64, data: &[u8]) {
        let mut at = off;
        let mut rest = data;
        while !rest.is_empty() {
            let i = (at / 8) as usize;
            if at.is_multiple_of(8) && rest.len() >= 8 {
                if let (Some(w), Some(m)) = (self.words.get(i), self.written.get(i)) {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(&rest[..8]);
                    w.store(u64::from_le_bytes(b), Relaxed);
                    m.store(0xFF, Relaxed);
                }
                at += 8;
                rest = &rest[8..];
            } else {
                self.store(at, 1, u64::from(rest[0]), true);
                at += 1;
                rest = &rest[1..];
            }
        }
    }

    /// Copies bytes at `off` (in bounds) to the host, a word at a time.
    fn read_bytes(&self, off: u64, out: &mut [u8]) {
        for (k, b) in out.iter_mut().enumerate() {
            let at = off + k as u64;
            let w = self
                .words
                .get((at / 8) as usize)
                .map_or(0, |w| w.load(Relaxed));
            *b = (w >> ((at % 8) * 8)) as u8;
        }
    }

    /// Atomically replaces the `size`-byte value at `off` by `f(old)`; returns the old value
    /// and whether it was written before.
    pub(crate) fn update(&self, off: u64, size: u32, f: impl Fn(u64) -> u64) -> (u64, bool) {
        let i = (off / 8) as usize;
        let sh = (off % 8) as u32 * 8;
        let (Some(w), Some(m)) = (self.words.get(i), self.written.get(i)) else {
            return (0, false);
        };
        let vmask = value_mask(size);
        let mut old_val = 0;
        let _ = w.fetch_update(Relaxed, Relaxed, |old| {
            old_val = (old >> sh) & vmask;
            let new = f(old_val) & vmask;
            Some((old & !(vmask << sh)) | (new << sh))
        });
        let wb = (byte_mask(size) << (off % 8)) as u8;
        let before = m.fetch_or(wb, Relaxed);
        (old_val, before & wb == wb)
    }
}

fn value_mask(size: u32) -> u64 {
    if size >= 8 {
        u64::MAX
    } else {
        (1u64 << (size * 8)) - 1
    }
}

fn byte_mask(size: u32) -> u32 {
    (1u32 << size.min(8)) - 1
}

/// The device memory a [`super::Simulator`] owns.
pub(crate) struct GlobalMemory {
    map: Mutex<MemoryMap>,
}

/// The allocations, and what was freed (for reports of accesses to freed memory).
struct MemoryMap {
    allocs: BTreeMap<u64, Arc<Allocation>>,
    freed: Vec<(u64, u64)>,
    next: u64,
}

impl GlobalMemory {
    pub(crate) fn new() -> Self {
        GlobalMemory {
            map: Mutex::new(MemoryMap {
                allocs: BTreeMap::new(),
                freed: Vec::new(),
                next: BASE,
            }),
        }
    }

    /// Locks the map. Every critical section leaves it consistent (inserts and removals of
    /// whole entries), so a panic elsewhere that poisoned it is taken over.
    fn map(&self) -> MutexGuard<'_, MemoryMap> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn alloc(&self, bytes: usize, zeroed: bool) -> Result<u64, SimError> {
        let len = bytes as u64;
        let mut map = self.map();
        let base = map.next;
        let gap = len.max(MIN_GAP);
        let next = base
            .checked_add(len)
            .and_then(|e| e.checked_add(gap))
            .and_then(|e| e.checked_next_multiple_of(ALIGN))
            .ok_or(SimError::OutOfMemory { bytes })?;
        // The address range is taken first, so the (possibly large) storage is made unlocked.
        map.next = next;
        drop(map);
        let a = Arc::new(Allocation::new(base, len, zeroed)?);
        self.map().allocs.insert(base, a);
        Ok(base)
    }

    pub(crate) fn free(&self, addr: u64) -> Result<(), SimError> {
        let mut map = self.map();
        match map.allocs.remove(&addr) {
            Some(a) => {
                map.freed.push((a.base, a.len));
                Ok(())
            }
            None => Err(SimError::NotAllocated { address: addr }),
        }
    }

    fn host_range(&self, addr: u64, len: usize) -> Result<(Arc<Allocation>, u64), SimError> {
        let err = SimError::HostOutOfBounds {
            address: addr,
            len: len as u64,
        };
        let map = self.map();
        let (_, a) = map.allocs.range(..=addr).next_back().ok_or(err.clone())?;
        let off = addr - a.base;
        let end = off.checked_add(len as u64).ok_or(err.clone())?;
        if end > a.len {
            return Err(err);
        }
        Ok((a.clone(), off))
    }

    pub(crate) fn write(&self, addr: u64, data: &[u8]) -> Result<(), SimError> {
        let (a, off) = self.host_range(addr, data.len())?;
        a.write_bytes(off, data);
        Ok(())
    }

    pub(crate) fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), SimError> {
        let (a, off) = self.host_range(addr, out.len())?;
        a.read_bytes(off, out);
        Ok(())
    }

    /// A snapshot of the allocations for one launch.
    pub(crate) fn view(&self, parallel: bool) -> GlobalView<'_> {
        GlobalView {
            allocs: self.map().allocs.values().cloned().collect(),
            memory: self,
            parallel,
        }
    }

    /// Whether `addr` lies in a freed allocation.
    fn freed(&self, addr: u64) -> bool {
        self.map()
            .freed
            .iter()
            .any(|&(b, l)| addr >= b && addr < b.saturating_add(l))
    }
}

/// The allocations during a launch, sorted by address. Shared by all worker threads.
pub(crate) struct GlobalView<'a> {
    allocs: Vec<Arc<Allocation>>,
    memory: &'a GlobalMemory,
    pub parallel: bool,
}

impl GlobalView<'_> {
    /// The allocation holding `[addr, addr+size)` and the offset in it. `hint` is the index of
    /// the allocation found last (a cache the caller keeps).
    #[inline]
    pub(crate) fn find(
        &self,
        addr: u64,
        size: u32,
        hint: &mut usize,
    ) -> Option<(&Allocation, u64)> {
        if let Some(a) = self.allocs.get(*hint)
            && let Some(off) = within(a, addr, size)
        {
            return Some((a, off));
        }
        let i = self
            .allocs
            .partition_point(|a| a.base <= addr)
            .checked_sub(1)?;
        let a = self.allocs.get(i)?;
        let off = within(a, addr, size)?;
        *hint = i;
        Some((a, off))
    }

    /// The allocation nearest to `addr`, and whether `addr` lies in a freed one.
    pub(crate) fn nearest(&self, addr: u64) -> (Option<Extent>, bool) {
        let dist = |a: &Allocation| {
            if addr < a.base {
                a.base - addr
            } else {
                addr.saturating_sub(a.base.saturating_add(a.len))
            }
        };
        let near = self.allocs.iter().min_by_key(|a| dist(a)).map(|a| Extent {
            base: a.base,
            len: a.len,
            name: None,
            note: None,
        });
        (near, self.memory.freed(addr))
    }
}

#[inline]
fn within(a: &Allocation, addr: u64, size: u32) -> Option<u64> {
    let off = addr.checked_sub(a.base)?;
    let end = off.checked_add(u64::from(size))?;
    (end <= a.len).then_some(off)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_are_aligned_and_apart() {
        let g = GlobalMemory::new();
        let a = g.alloc(100, false).unwrap();
        let b = g.alloc(10, true).unwrap();
        assert_eq!(a % 256, 0);
        assert_eq!(b % 256, 0);
        assert!(b >= a + 100 + MIN_GAP);
        let v = g.view(false);
        let mut hint = 0;
        assert!(v.find(a + 96, 4, &mut hint).is_some());
        assert!(v.find(a + 100, 1, &mut hint).is_none());
        assert!(v.find(b, 8, &mut hint).is_some());
        assert!(v.find(b + 8, 4, &mut hint).is_none());
    }

    #[test]
    fn written_bits_track_bytes() {
        let g = GlobalMemory::new();
        let a = g.alloc(16, false).unwrap();
        g.write(a + 1, &[7]).unwrap();
        let v = g.view(true);
        let mut hint = 0;
        let (al, off) = v.find(a, 2, &mut hint).unwrap();
        assert_eq!(al.load(off, 2), (0x0700, false));
        al.store(off, 1, 5, true);
        assert_eq!(al.load(off, 2), (0x0705, true));
        let (old, def) = al.update(8, 4, |x| x + 1);
        assert_eq!((old, def), (0, false));
        assert_eq!(al.load(8, 4), (1, true));
    }

    #[test]
    fn host_copies_of_any_alignment() {
        let g = GlobalMemory::new();
        let a = g.alloc(40, false).unwrap();
        let data: Vec<u8> = (1..=29).collect();
        g.write(a + 3, &data).unwrap();
        let mut out = vec![0u8; 40];
        g.read(a, &mut out).unwrap();
        assert_eq!(&out[3..32], &data[..]);
        assert!(out[..3].iter().chain(&out[32..]).all(|b| *b == 0));
        // Written bits: exactly the bytes copied.
        let v = g.view(false);
        let mut hint = 0;
        let (al, _) = v.find(a, 8, &mut hint).unwrap();
        assert_eq!(
            al.load(0, 4),
            (out[0] as u64 | (u64::from(out[3]) << 24), false)
        );
        assert!(al.load(8, 8).1 && al.load(24, 8).1 && !al.load(32, 8).1);
        assert!(al.load(28, 4).1 && !al.load(32, 1).1);
    }

    #[test]
    fn host_access_checks_bounds() {
        let g = GlobalMemory::new();
        let a = g.alloc(8, true).unwrap();
        assert!(g.write(a + 4, &[0; 8]).is_err());
        assert!(g.free(a + 1).is_err());
        g.free(a).unwrap();
        assert!(g.write(a, &[0]).is_err());
        let mut out = [0u8; 1];
        assert!(g.read(a, &mut out).is_err());
    }
}

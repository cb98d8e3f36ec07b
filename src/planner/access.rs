//! Who touches which bytes of shared memory at each access of a step.
//!
//! The barrier pass turns each access of the plan's steps ([`Access`]) into a byte map: for
//! every byte of the access's slice, the lowest and highest thread that may touch it. Two
//! accesses conflict exactly where some byte is touched by two different threads, one of them
//! writing. An access whose positions depend on run-time data (a scatter's writes) counts the
//! first and last thread as touchers of every byte it may reach. Nothing here knows ops: the
//! steps say everything.

use super::alloc::Slice;
use super::schedule::{Access, Positions, Touch};
use super::scope::SyncScope;

/// The threads that may touch each byte of `[lo, lo + len)`: the lowest and highest, or none.
///
/// Maps are compared and hashed as keys (equal maps share a number in the barrier pass), and
/// a map spans its whole slice, kilobytes for a tile's exchange: the hash is computed once,
/// when [`owners`] has filled the map, so a table growing or looking a map up does not walk
/// its bytes again.
#[derive(Debug, Clone)]
pub(super) struct Owners {
    lo: u32,
    /// Per byte: `(lowest, highest)` thread; `(u16::MAX, 0)` where no thread touches it.
    threads: Vec<(u16, u16)>,
    /// A hash of `lo` and `threads` (see [`Owners::seal`]).
    hash: u64,
}

impl PartialEq for Owners {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.lo == other.lo && self.threads == other.threads
    }
}

impl Eq for Owners {}

impl std::hash::Hash for Owners {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        h.write_u64(self.hash);
    }
}

const NONE: (u16, u16) = (u16::MAX, 0);

impl Owners {
    /// No byte of `[lo, hi)` touched yet.
    pub(super) fn new(lo: u32, hi: u32) -> Owners {
        Owners {
            lo,
            threads: vec![NONE; hi.saturating_sub(lo) as usize],
            hash: 0,
        }
    }

    /// Computes the hash once the map is filled: a multiply-rotate over the bytes' owners,
    /// two bytes a step.
    fn seal(mut self) -> Owners {
        let step = |h: u64, v: u64| (h.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
        let word = |&(a, b): &(u16, u16)| u64::from(a) | u64::from(b) << 16;
        let mut h = step(u64::from(self.lo), self.threads.len() as u64);
        let mut pairs = self.threads.chunks_exact(2);
        for two in &mut pairs {
            h = step(h, word(&two[0]) | word(&two[1]) << 32);
        }
        if let Some(last) = pairs.remainder().first() {
            h = step(h, word(last));
        }
        self.hash = h;
        self
    }

    /// The first byte.
    pub(super) fn lo(&self) -> u32 {
        self.lo
    }

    /// One past the last byte.
    pub(super) fn hi(&self) -> u32 {
        self.lo + self.threads.len() as u32
    }

    /// Thread `t` touches `[at, at + bytes)` (clipped to the range).
    fn touch(&mut self, at: u32, bytes: u32, t: u32) {
        let t = t.min(u16::MAX as u32 - 1) as u16;
        let len = self.threads.len();
        let start = (at.saturating_sub(self.lo) as usize).min(len);
        let end = (at.saturating_add(bytes).saturating_sub(self.lo) as usize).min(len);
        for o in &mut self.threads[start..end] {
            *o = (o.0.min(t), o.1.max(t));
        }
    }

    /// How a later access `other` conflicts with this earlier one: `None` where no byte both
    /// touch is touched by two different threads (or every such pair lies in one group of
    /// `ordered`, a scope a barrier since ordered this access within);
    /// else the index of the first of `scopes` that spans every conflicting pair (the last
    /// one where none does).
    pub(super) fn conflict(
        &self,
        other: &Owners,
        ordered: Option<SyncScope>,
        scopes: &[SyncScope],
    ) -> Option<usize> {
        let (lo, hi) = (self.lo.max(other.lo), self.hi().min(other.hi()));
        let widest = scopes.len().saturating_sub(1);
        let mut need = None;
        for b in lo..hi {
            let x = self.threads[(b - self.lo) as usize];
            let y = other.threads[(b - other.lo) as usize];
            if x == NONE || y == NONE {
                continue;
            }
            let (first, last) = (u32::from(x.0.min(y.0)), u32::from(x.1.max(y.1)));
            if first == last || ordered.is_some_and(|s| s.spans(first, last)) {
                continue;
            }
            let k = (scopes.iter())
                .position(|s| s.spans(first, last))
                .unwrap_or(widest)
                .min(widest);
            if k == widest {
                return Some(widest);
            }
            need = need.max(Some(k));
        }
        need
    }
}

/// The bytes each thread of a block of `block` threads touches at `a`, within its slice.
pub(super) fn owners(a: &Access, slice: &Slice, block: u32) -> Owners {
    let lo = slice.offset;
    let es = a.elem_bytes;
    let mut o = Owners::new(lo, lo + slice.bytes);
    let at_slot = |o: &mut Owners, slot: u32, t: u32| o.touch(lo + slot * es, es, t);
    let at = |o: &mut Owners, p: u32, t: u32| at_slot(o, a.slot(p), t);
    match &a.touch {
        Touch::Positions(p) => positions(&mut o, a, p, block, lo),
        Touch::WarpLane { lane } => {
            for w in 0..block.div_ceil(32) {
                if w * 32 + lane < block {
                    at(&mut o, w, w * 32 + lane);
                }
            }
        }
        Touch::AllPositions { count } => {
            for t in 0..block {
                for p in 0..*count {
                    at(&mut o, p, t);
                }
            }
        }
        Touch::AllSlot { slot } => {
            for t in 0..block {
                at_slot(&mut o, *slot, t);
            }
        }
        Touch::OneSlot { thread, slot } => at_slot(&mut o, *slot, *thread),
        Touch::Neighbor { shift, rotate } => {
            for t in 0..block {
                let target = t as i64 + shift;
                let target = if *rotate {
                    target.rem_euclid(block.max(1) as i64)
                } else {
                    target
                };
                if (0..block as i64).contains(&target) {
                    at(&mut o, target as u32, t);
                }
            }
        }
        Touch::GroupLead {
            group,
            rank,
            groups,
            base,
        } => {
            for j in 0..*groups {
                let t = j.saturating_mul(*group).saturating_add(*rank);
                if t < block {
                    at_slot(&mut o, base + j, t);
                }
            }
        }
        Touch::GroupSlot {
            group,
            groups,
            base,
            slots,
        } => {
            for j in 0..*groups {
                let first = j.saturating_mul(*group);
                for t in first..first.saturating_add(*group).min(block) {
                    for s in 0..*slots {
                        at_slot(&mut o, base + j * slots + s, t);
                    }
                }
            }
        }
        Touch::Anywhere { count } => {
            for p in 0..*count {
                at(&mut o, p, 0);
                at(&mut o, p, block.saturating_sub(1));
            }
        }
    }
    o.seal()
}

/// The bytes of a [`Positions`] access: each thread of the range touches its positions in
/// its group's region.
fn positions(o: &mut Owners, a: &Access, p: &Positions, block: u32, lo: u32) {
    let es = a.elem_bytes;
    let group = p.group.max(1);
    let end = p.first.saturating_add(p.threads).min(block);
    for t in p.first..end {
        let (j, rank) = ((t - p.first) / group, (t - p.first) % group);
        let region = lo + j * p.region * es;
        for i in 0..p.items {
            let pos = p.form.position(i, rank);
            if p.below.is_none_or(|n| pos < n) {
                o.touch(region + a.slot(pos) * es, es, t);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::OpId;
    use crate::planner::ids::SliceId;
    use std::collections::HashMap;

    fn access(touch: Touch) -> Access {
        Access {
            slice: SliceId(0),
            write: true,
            elem_bytes: 4,
            padding: None,
            touch,
        }
    }

    /// Maps built apart from equal accesses are equal keys; a map differing in one byte's
    /// owner or in its first byte is another key (the hash, computed once when the map is
    /// filled, agrees with equality).
    #[test]
    fn sealed_maps_are_keys_by_content() {
        let mut slice = Slice::new("t".into(), OpId(0), 4 * 300, 4);
        let all = |s: &Slice| owners(&access(Touch::AllSlot { slot: 7 }), s, 200);
        let (a, b) = (all(&slice), all(&slice));
        assert_eq!(a, b);
        let one = owners(&access(Touch::OneSlot { thread: 3, slot: 7 }), &slice, 200);
        let other = owners(&access(Touch::OneSlot { thread: 4, slot: 7 }), &slice, 200);
        assert_ne!(one, other);
        assert_ne!(a, one);
        slice.offset = 16;
        let moved = all(&slice);
        assert_ne!(a, moved);
        assert_eq!((moved.lo(), moved.hi()), (16, 16 + 4 * 300));
        let mut numbers: HashMap<Owners, usize> = HashMap::new();
        for (i, m) in [a, one, other, moved, b].into_iter().enumerate() {
            let n = numbers.len();
            let got = *numbers.entry(m).or_insert(n);
            assert_eq!(got, if i == 4 { 0 } else { i });
        }
    }

    /// A touch clipped to the map's bytes: bytes before and past it are left out, the rest
    /// recorded with the lowest and highest thread.
    #[test]
    fn touches_are_clipped_to_the_slice() {
        let mut o = Owners::new(8, 16);
        o.touch(4, 6, 5);
        o.touch(14, 10, 2);
        o.touch(0, 4, 9);
        o.touch(11, 1, 7);
        o.touch(11, 1, 3);
        let got: Vec<(u16, u16)> = o.seal().threads;
        let mut want = vec![NONE; 8];
        want[0] = (5, 5);
        want[1] = (5, 5);
        want[3] = (3, 7);
        want[6] = (2, 2);
        want[7] = (2, 2);
        assert_eq!(got, want);
    }
}

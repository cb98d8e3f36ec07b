//! Who touches which bytes of shared memory at each access of a step.
//!
//! The barrier pass turns each access of the plan's steps ([`Access`]) into a byte map: for
//! every byte of the access's slice, the lowest and highest thread that may touch it. Two
//! accesses conflict exactly where some byte is touched by two different threads, one of them
//! writing. An access whose positions depend on run-time data (a scatter's writes) counts the
//! first and last thread as touchers of every byte it may reach. A map holds one entry per
//! unit of bytes ([`unit`]): every access of a kernel touches whole units, so the bytes of a
//! unit always have the same owners and one entry stands for them all. Nothing here knows
//! ops: the steps say everything.

use super::alloc::Slice;
use super::form::padded_slot;
use super::schedule::{Access, Positions, Touch};
use super::scope::SyncScope;
use std::hash::Hasher;

/// The threads that may touch each byte of `[lo, hi)`: the lowest and highest, or none, kept
/// per unit of `unit` bytes.
///
/// Maps are compared and hashed as keys (equal maps share a number in the barrier pass), and
/// a map spans its whole slice, kilobytes for a tile's exchange: the hash is computed once,
/// when [`owners`] has filled the map, so a table growing or looking a map up does not walk
/// its bytes again.
#[derive(Debug, Clone)]
pub(super) struct Owners {
    lo: u32,
    /// Bytes per entry of `threads` (every map of a kernel has the same unit).
    unit: u32,
    /// Per unit: `(lowest, highest)` thread; `(u16::MAX, 0)` where no thread touches it.
    threads: Vec<(u16, u16)>,
    /// A hash of `lo`, `unit` and `threads` (see [`Owners::seal`]).
    hash: u64,
}

impl PartialEq for Owners {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash
            && self.lo == other.lo
            && self.unit == other.unit
            && self.threads == other.threads
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
    /// No byte of `[lo, hi)` touched yet; `lo` and `hi` are multiples of `unit`.
    fn new(lo: u32, hi: u32, unit: u32) -> Owners {
        let unit = unit.max(1);
        debug_assert!(
            lo.is_multiple_of(unit) && hi.is_multiple_of(unit),
            "a map's ends are whole units"
        );
        Owners {
            lo,
            unit,
            threads: vec![NONE; (hi.saturating_sub(lo) / unit) as usize],
            hash: 0,
        }
    }

    /// Computes the hash once the map is filled, with the planner's hasher (`FxHasher`),
    /// two units' owners a word.
    fn seal(mut self) -> Owners {
        let word = |&(a, b): &(u16, u16)| u64::from(a) | u64::from(b) << 16;
        let mut h = rustc_hash::FxHasher::default();
        h.write_u32(self.lo);
        h.write_u32(self.unit);
        h.write_usize(self.threads.len());
        let mut pairs = self.threads.chunks_exact(2);
        for two in &mut pairs {
            h.write_u64(word(&two[0]) | word(&two[1]) << 32);
        }
        if let Some(last) = pairs.remainder().first() {
            h.write_u64(word(last));
        }
        self.hash = h.finish();
        self
    }

    /// The first byte.
    pub(super) fn lo(&self) -> u32 {
        self.lo
    }

    /// One past the last byte.
    pub(super) fn hi(&self) -> u32 {
        self.lo + self.threads.len() as u32 * self.unit
    }

    /// Thread `t` touches `[at, at + bytes)` (clipped to the range); `at` and `bytes` are
    /// multiples of the unit.
    fn touch(&mut self, at: u32, bytes: u32, t: u32) {
        self.touch_by(at, bytes, t, t);
    }

    /// Every thread from `first` to `last` touches `[at, at + bytes)`, as [`Self::touch`]
    /// for each (`first <= last`).
    fn touch_by(&mut self, at: u32, bytes: u32, first: u32, last: u32) {
        debug_assert!(
            at.is_multiple_of(self.unit) && bytes.is_multiple_of(self.unit),
            "whole units"
        );
        debug_assert!(first <= last, "a range of threads");
        let thread = |t: u32| t.min(u16::MAX as u32 - 1) as u16;
        let (first, last) = (thread(first), thread(last));
        let entry = |b: u32| (b.saturating_sub(self.lo) / self.unit) as usize;
        let (start, end) = (entry(at), entry(at.saturating_add(bytes)));
        self.touch_entries(start, end - start, first, last);
    }

    /// Threads `first` to `last` touch entries `[start, start + count)` (clipped to the map).
    fn touch_entries(&mut self, start: usize, count: usize, first: u16, last: u16) {
        let len = self.threads.len();
        let (start, end) = (start.min(len), start.saturating_add(count).min(len));
        for o in &mut self.threads[start..end] {
            *o = (o.0.min(first), o.1.max(last));
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
        debug_assert_eq!(self.unit, other.unit, "maps of one kernel share a unit");
        let (lo, hi) = (self.lo.max(other.lo), self.hi().min(other.hi()));
        let widest = scopes.len().saturating_sub(1);
        let mut need = None;
        for b in (lo..hi).step_by(self.unit as usize) {
            let x = self.threads[((b - self.lo) / self.unit) as usize];
            let y = other.threads[((b - other.lo) / other.unit) as usize];
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

/// The largest unit every access in `accesses` touches whole: the greatest common divisor
/// of their element sizes and their slices' offsets and sizes (each access touches elements
/// at multiples of its element size from its slice's start). 1 where there is no access.
pub(super) fn unit<'a>(accesses: impl IntoIterator<Item = (&'a Access, &'a Slice)>) -> u32 {
    use super::scratch::gcd;
    let g = accesses.into_iter().fold(0, |g, (a, s)| {
        gcd(gcd(gcd(g, a.elem_bytes), s.offset), s.bytes)
    });
    g.max(1)
}

/// The bytes each thread of a block of `block` threads touches at `a`, within its slice, in
/// maps of `unit` bytes an entry ([`unit`] of the kernel's accesses).
pub(super) fn owners(a: &Access, slice: &Slice, block: u32, unit: u32) -> Owners {
    let lo = slice.offset;
    let es = a.elem_bytes;
    let mut o = Owners::new(lo, lo + slice.bytes, unit);
    let at_slot = |o: &mut Owners, slot: u32, t: u32| o.touch(lo + slot * es, es, t);
    let at = |o: &mut Owners, p: u32, t: u32| at_slot(o, a.slot(p), t);
    match &a.touch {
        Touch::Positions(p) => positions(&mut o, a, p, block),
        Touch::WarpLane { lane } => {
            for w in 0..block.div_ceil(32) {
                if w * 32 + lane < block {
                    at(&mut o, w, w * 32 + lane);
                }
            }
        }
        // Every thread touches the same bytes: its first and last stand for them all.
        Touch::AllPositions { count } if block > 0 => {
            slot_runs(*count, a.padding, |slot, n| {
                o.touch_by(lo + slot * es, n * es, 0, block - 1);
            });
        }
        Touch::AllSlot { slot } if block > 0 => o.touch_by(lo + slot * es, es, 0, block - 1),
        Touch::AllPositions { .. } | Touch::AllSlot { .. } => {}
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
        Touch::Anywhere { count } => slot_runs(*count, a.padding, |slot, n| {
            o.touch_by(lo + slot * es, n * es, 0, block.saturating_sub(1));
        }),
    }
    o.seal()
}

/// The bytes of a [`Positions`] access: each thread of the range touches its positions in
/// its group's region.
///
/// The map starts at the slice and its unit divides the element size, so a slot's entries
/// are found by multiplying, without dividing bytes by the unit at every touch.
fn positions(o: &mut Owners, a: &Access, p: &Positions, block: u32) {
    debug_assert!(
        a.elem_bytes.is_multiple_of(o.unit),
        "the unit divides the element size"
    );
    let per = (a.elem_bytes / o.unit) as usize;
    let group = p.group.max(1);
    let end = p.first.saturating_add(p.threads).min(block);
    for t in p.first..end {
        let (j, rank) = ((t - p.first) / group, (t - p.first) % group);
        let region = j as usize * p.region as usize;
        let thread_part = p.form.thread_part(rank);
        let toucher = t.min(u32::from(u16::MAX) - 1) as u16;
        for i in 0..p.items {
            let pos = i * p.form.item_stride + thread_part;
            if p.below.is_none_or(|n| pos < n) {
                let entry = (region + a.slot(pos) as usize) * per;
                o.touch_entries(entry, per, toucher, toucher);
            }
        }
    }
}

/// Positions `0..count`, padded every `padding` positions, as runs of consecutive slots:
/// `f(first slot, slots)` for each.
fn slot_runs(count: u32, padding: Option<u32>, mut f: impl FnMut(u32, u32)) {
    let every = padding.map_or(count, |n| n.max(1));
    let mut first = 0;
    while first < count {
        let n = every.min(count - first);
        f(padded_slot(first, padding), n);
        first += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::OpId;
    use crate::planner::ids::SliceId;
    use crate::planner::scope::SyncScope;
    use rustc_hash::FxHashMap;

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
        let all = |s: &Slice| owners(&access(Touch::AllSlot { slot: 7 }), s, 200, 4);
        let (a, b) = (all(&slice), all(&slice));
        assert_eq!(a, b);
        let one = owners(
            &access(Touch::OneSlot { thread: 3, slot: 7 }),
            &slice,
            200,
            4,
        );
        let other = owners(
            &access(Touch::OneSlot { thread: 4, slot: 7 }),
            &slice,
            200,
            4,
        );
        assert_ne!(one, other);
        assert_ne!(a, one);
        slice.offset = 16;
        let moved = all(&slice);
        assert_ne!(a, moved);
        assert_eq!((moved.lo(), moved.hi()), (16, 16 + 4 * 300));
        let mut numbers: FxHashMap<Owners, usize> = FxHashMap::default();
        for (i, m) in [a, one, other, moved, b].into_iter().enumerate() {
            let n = numbers.len();
            let got = *numbers.entry(m).or_insert(n);
            assert_eq!(got, if i == 4 { 0 } else { i });
        }
    }

    /// The map of `a` made one thread's touch of one element at a time.
    fn touch_by_touch(a: &Access, slice: &Slice, block: u32, unit: u32) -> Owners {
        let (lo, es) = (slice.offset, a.elem_bytes);
        let mut o = Owners::new(lo, lo + slice.bytes, unit);
        let mut at = |p: u32, t: u32| o.touch(lo + a.slot(p) * es, es, t);
        match &a.touch {
            Touch::AllPositions { count } => {
                for t in 0..block {
                    (0..*count).for_each(|p| at(p, t));
                }
            }
            Touch::Anywhere { count } => {
                for p in 0..*count {
                    at(p, 0);
                    at(p, block.saturating_sub(1));
                }
            }
            Touch::Positions(ps) => {
                let group = ps.group.max(1);
                for t in ps.first..ps.first.saturating_add(ps.threads).min(block) {
                    let (j, rank) = ((t - ps.first) / group, (t - ps.first) % group);
                    for i in 0..ps.items {
                        let pos = ps.form.position(i, rank);
                        if ps.below.is_none_or(|n| pos < n) {
                            o.touch(lo + (j * ps.region + a.slot(pos)) * es, es, t);
                        }
                    }
                }
            }
            Touch::AllSlot { slot } => {
                for t in 0..block {
                    o.touch(lo + slot * es, es, t);
                }
            }
            other => unreachable!("not tried here: {other:?}"),
        }
        o.seal()
    }

    /// Accesses of every thread alike (every position, one slot, anywhere) and accesses of
    /// positions by groups of threads map as each thread's touches one by one would: padded
    /// or not, with a unit smaller than the element, clipped to the slice, in blocks of none,
    /// one and several threads.
    #[test]
    fn maps_are_each_threads_touches() {
        use crate::ir::Arrangement;
        use crate::planner::form::PositionForm;
        let mut slice = Slice::new("t".into(), OpId(0), 8 * 100, 8);
        slice.offset = 32;
        let striped = PositionForm::of(Arrangement::Striped { threads: 16 }, 16, 3);
        let blocked = PositionForm::of(Arrangement::Blocked, 16, 3);
        let forms = [striped.expect("a form"), blocked.expect("a form")];
        let mut touches = vec![
            Touch::AllPositions { count: 37 },
            Touch::AllPositions { count: 120 },
            Touch::AllSlot { slot: 5 },
            Touch::AllSlot { slot: 140 },
            Touch::Anywhere { count: 41 },
            Touch::Anywhere { count: 130 },
        ];
        for form in forms {
            for (first, threads, below) in [(0, 64, None), (3, 29, Some(40)), (0, 500, None)] {
                touches.push(Touch::Positions(Positions {
                    first,
                    threads,
                    group: 16,
                    region: 50,
                    form: form.clone(),
                    items: 3,
                    below,
                }));
            }
        }
        for block in [0, 1, 3, 65, 256] {
            for padding in [None, Some(8), Some(32)] {
                for (touch, (es, unit)) in
                    touches.iter().zip([(4, 4), (8, 4), (8, 8)].iter().cycle())
                {
                    let a = Access {
                        padding,
                        elem_bytes: *es,
                        ..access(touch.clone())
                    };
                    assert_eq!(
                        owners(&a, &slice, block, *unit),
                        touch_by_touch(&a, &slice, block, *unit),
                        "{touch:?}, {es}-byte elements, unit {unit}, {padding:?}, {block} threads"
                    );
                }
            }
        }
    }

    /// A touch clipped to the map's bytes: bytes before and past it are left out, the rest
    /// recorded with the lowest and highest thread, per unit.
    #[test]
    fn touches_are_clipped_to_the_slice() {
        let mut o = Owners::new(8, 16, 1);
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
        let mut o = Owners::new(8, 16, 2);
        o.touch(4, 6, 5);
        o.touch(14, 10, 2);
        o.touch(10, 2, 7);
        o.touch(10, 2, 3);
        assert_eq!((o.lo(), o.hi()), (8, 16));
        assert_eq!(o.seal().threads, [(5, 5), (3, 7), NONE, (2, 2)]);
    }

    /// The unit is the greatest common divisor of element sizes, offsets and sizes.
    #[test]
    fn units_divide_every_access() {
        let slice = |offset, bytes| {
            let mut s = Slice::new("s".into(), OpId(0), bytes, 16);
            s.offset = offset;
            s
        };
        let (a4, a8) = (access(Touch::AllSlot { slot: 0 }), {
            let mut a = access(Touch::AllSlot { slot: 0 });
            a.elem_bytes = 8;
            a
        });
        let (s0, s16, s12) = (slice(0, 1024), slice(16, 64), slice(16, 12));
        assert_eq!(unit([(&a8, &s0), (&a8, &s16)]), 8);
        assert_eq!(unit([(&a8, &s0), (&a4, &s16)]), 4);
        assert_eq!(unit([(&a8, &s12)]), 4);
        assert_eq!(unit([]), 1);
    }

    /// Maps kept per unit decide every conflict as maps kept per byte do: random accesses
    /// (positions, whole-block and one-thread slots, warp lanes, neighbours, group slots and
    /// run-time positions; 4- and 8-byte elements; overlapping slices; padding) compared
    /// pairwise, with and without a group barrier since, at unit 1 and at the kernel's unit.
    #[test]
    fn maps_per_unit_decide_conflicts_as_maps_per_byte() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u32| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % u64::from(n.max(1))) as u32
        };
        let scopes = [
            SyncScope::Group { threads: 4 },
            SyncScope::Group { threads: 32 },
            SyncScope::Warps { warps: 2 },
            SyncScope::Block,
        ];
        for _ in 0..200 {
            let block = 1 + next(200);
            let wide = next(2) == 1;
            let mut cases = Vec::new();
            for _ in 0..4 {
                let es = if wide && next(2) == 1 { 8 } else { 4 };
                let touch = match next(7) {
                    6 => {
                        let (group, items) = (1 + next(64), 1 + next(6));
                        let arr = [
                            crate::ir::Arrangement::Blocked,
                            crate::ir::Arrangement::Striped { threads: group },
                        ][next(2) as usize];
                        match crate::planner::form::PositionForm::of(arr, group, items) {
                            Some(form) => Touch::Positions(Positions {
                                first: next(block),
                                threads: 1 + next(block),
                                group,
                                region: group * items,
                                form,
                                items,
                                below: (next(2) == 1).then(|| next(group * items)),
                            }),
                            None => Touch::AllSlot { slot: 0 },
                        }
                    }
                    0 => Touch::AllSlot { slot: next(40) },
                    1 => Touch::OneSlot {
                        thread: next(block),
                        slot: next(40),
                    },
                    2 => Touch::WarpLane { lane: next(32) },
                    3 => Touch::Neighbor {
                        shift: i64::from(next(5)) - 2,
                        rotate: next(2) == 1,
                    },
                    4 => Touch::GroupSlot {
                        group: 1 + next(64),
                        groups: 1 + next(8),
                        base: next(8),
                        slots: 1 + next(3),
                    },
                    _ => Touch::Anywhere {
                        count: 1 + next(50),
                    },
                };
                let mut a = access(touch);
                a.elem_bytes = es;
                a.padding = (next(3) == 0).then_some(8);
                let mut sl = Slice::new("s".into(), OpId(0), es * (1 + next(300)), 16);
                sl.offset = 4 * next(80);
                cases.push((a, sl));
            }
            let g = unit(cases.iter().map(|(a, s)| (a, s)));
            let maps = |u: u32| -> Vec<Owners> {
                cases.iter().map(|(a, s)| owners(a, s, block, u)).collect()
            };
            let (bytes, units) = (maps(1), maps(g));
            for i in 0..cases.len() {
                for j in 0..cases.len() {
                    for ordered in [None, Some(SyncScope::Group { threads: 8 })] {
                        assert_eq!(
                            bytes[i].conflict(&bytes[j], ordered, &scopes),
                            units[i].conflict(&units[j], ordered, &scopes),
                            "unit {g}: {:?} against {:?}",
                            cases[i],
                            cases[j]
                        );
                    }
                    assert_eq!(bytes[i] == bytes[j], units[i] == units[j]);
                }
            }
        }
    }
}

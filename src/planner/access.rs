//! Who touches which bytes of shared memory at each step.
//!
//! For every step of an exchange or a block collective, the set of bytes each thread may touch,
//! derived from the same plan data code generation reads (position forms, slots, padding,
//! raking segments) and from what each lowering does with them (which lanes write a warp's
//! partial, which read it back, which neighbour a thread reads). The barrier pass compares
//! these maps: two accesses conflict exactly where some byte is touched by two different
//! threads, one of them writing. A step whose positions depend on run-time data (a scatter's
//! writes) counts every thread as a toucher of every byte it may reach.

use super::scratch::{CollectivePlan, ExchangePlan, Slice};
use crate::ir::ops::{NeighborKind, OpKind, ReduceAlgorithm, ScanAlgorithm};

/// The threads that may touch each byte of `[lo, lo + len)`: the lowest and highest, or none.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct Owners {
    lo: u32,
    /// Per byte: `(lowest, highest)` thread; `(u16::MAX, 0)` where no thread touches it.
    threads: Vec<(u16, u16)>,
}

const NONE: (u16, u16) = (u16::MAX, 0);

impl Owners {
    /// No byte of `[lo, hi)` touched yet.
    pub(super) fn new(lo: u32, hi: u32) -> Owners {
        Owners {
            lo,
            threads: vec![NONE; hi.saturating_sub(lo) as usize],
        }
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
        for b in at..at.saturating_add(bytes) {
            if let Some(o) = b
                .checked_sub(self.lo)
                .and_then(|i| self.threads.get_mut(i as usize))
            {
                *o = (o.0.min(t), o.1.max(t));
            }
        }
    }

    /// How a later access `other` conflicts with this earlier one: `None` where no byte both
    /// touch is touched by two different threads (or every such pair lies in one aligned group
    /// of `synced` threads, which a barrier or warp collective since ordered); else whether
    /// every conflicting pair lies in one aligned group of `group` threads (0: no group).
    pub(super) fn conflict(&self, other: &Owners, synced: u32, group: u32) -> Option<bool> {
        let (lo, hi) = (self.lo.max(other.lo), self.hi().min(other.hi()));
        let same = |n: u32, a: u16, b: u16| n > 0 && a as u32 / n == b as u32 / n;
        let mut found = None;
        for b in lo..hi {
            let x = self.threads[(b - self.lo) as usize];
            let y = other.threads[(b - other.lo) as usize];
            if x == NONE || y == NONE {
                continue;
            }
            let (first, last) = (x.0.min(y.0), x.1.max(y.1));
            if first == last || same(synced, first, last) {
                continue;
            }
            let local = same(group, first, last);
            if !local {
                return Some(false);
            }
            found = Some(true);
        }
        found
    }
}

/// The accesses of one exchange side at one turn: each thread of the turn (every thread
/// without time slicing) touches its slots at the side's positions.
pub(super) fn exchange_side(
    e: &ExchangePlan,
    slice: &Slice,
    block: u32,
    write: bool,
    turn: Option<u32>,
) -> Owners {
    let mut o = Owners::new(slice.offset, slice.offset + slice.bytes);
    let form = if write { &e.write } else { &e.read };
    let scope = e.scope.max(1);
    let threads = match turn {
        Some(t) => (t * 32)..((t + 1) * 32).min(block),
        None => 0..block,
    };
    for tid in threads {
        // A time-sliced exchange puts every turn on the first region.
        let group = if turn.is_some() { 0 } else { tid / scope };
        let region = slice.offset + group * e.group_elems * e.elem_bytes;
        for i in 0..e.items {
            let slot = e.slot(form.position(i, tid % scope));
            o.touch(region + slot * e.elem_bytes, e.elem_bytes, tid);
        }
    }
    o
}

/// Which threads touch which entries at one step of a block collective.
enum Pattern {
    /// Thread `from + e` touches entry `e`, for `e < count`.
    Own { from: u32, count: u32 },
    /// Lane `lane` of warp `w` touches entry `w`.
    WarpLeaders { lane: u32 },
    /// Lane `l` of the first warp touches entries `[l * segment, (l + 1) * segment)` below
    /// `count`.
    Segments { segment: u32, count: u32 },
    /// Every thread touches slot `slot` (past the padding).
    AllAt { slot: u32 },
    /// Every thread touches every entry below `count`.
    AllEntries { count: u32 },
    /// Thread `thread` touches slot `slot`.
    One { thread: u32, slot: u32 },
    /// Thread `t` touches entry `target(t)` where the neighbour exists.
    Neighbor { shift: i64, rotate: bool },
    /// Thread `t` touches positions `form(i, t)` of the tile.
    ReadBack,
    /// Any thread may touch any entry below `count` (positions known only at run time).
    Anywhere { count: u32 },
}

/// One shared-memory access of a block collective.
pub(super) struct Step {
    /// The step.
    pub(super) step: u8,
    /// Whether it writes.
    pub(super) write: bool,
    /// Who touches which bytes.
    pub(super) owners: Owners,
    /// Groups of this many threads run a warp collective right after the access, on values
    /// it read, before touching shared memory again (0: none): its lanes' later accesses are
    /// ordered after it.
    pub(super) synced: u32,
}

/// The shared-memory steps of a block collective, several accesses per step where one step
/// touches several ranges.
pub(super) fn collective_steps(
    kind: &OpKind,
    c: &CollectivePlan,
    slice: &Slice,
    block: u32,
    items: u32,
) -> Vec<Step> {
    let f = c.first_step;
    let warps = block.div_ceil(32);
    let result = c.slot(c.entries);
    let mut steps: Vec<(u8, bool, Pattern)> = Vec::new();
    match kind {
        OpKind::Reduce(r) => {
            match r.algorithm {
                ReduceAlgorithm::WarpReductions => {
                    steps.push((f, true, Pattern::WarpLeaders { lane: 0 }));
                    steps.push((
                        f + 1,
                        false,
                        Pattern::Own {
                            from: 0,
                            count: c.entries,
                        },
                    ));
                }
                ReduceAlgorithm::Raking | ReduceAlgorithm::RakingCommutativeOnly => {
                    let from = if r.algorithm == ReduceAlgorithm::Raking {
                        0
                    } else {
                        32
                    };
                    let count = block.saturating_sub(from);
                    steps.push((f, true, Pattern::Own { from, count }));
                    let segment = c.segment.max(1);
                    steps.push((f + 1, false, Pattern::Segments { segment, count }));
                }
            }
            if c.broadcast {
                steps.push((
                    f + 2,
                    true,
                    Pattern::One {
                        thread: 0,
                        slot: result,
                    },
                ));
                steps.push((f + 3, false, Pattern::AllAt { slot: result }));
            }
        }
        OpKind::Scan(sc) => {
            if sc.algorithm == ScanAlgorithm::WarpScans {
                steps.push((f, true, Pattern::WarpLeaders { lane: 31 }));
                steps.push((
                    f + 1,
                    false,
                    Pattern::AllEntries {
                        count: c.entries.min(warps),
                    },
                ));
            } else {
                let segment = c.segment.max(1);
                let own = Pattern::Own {
                    from: 0,
                    count: block,
                };
                let rake = || Pattern::Segments {
                    segment,
                    count: block,
                };
                steps.push((f, true, own));
                // The first warp reads its segments, then writes each entry's prefix back and
                // the total (lane 31), in one branch: one step.
                steps.push((f + 1, false, rake()));
                steps.push((f + 1, true, rake()));
                steps.push((
                    f + 1,
                    true,
                    Pattern::One {
                        thread: 31,
                        slot: result,
                    },
                ));
                steps.push((
                    f + 3,
                    false,
                    Pattern::Own {
                        from: 0,
                        count: block,
                    },
                ));
                steps.push((f + 3, false, Pattern::AllAt { slot: result }));
            }
            if c.prefix_slot {
                let slot = c.prefix_slot_index();
                steps.push((f + 4, true, Pattern::One { thread: 0, slot }));
                steps.push((f + 5, false, Pattern::AllAt { slot }));
            }
        }
        OpKind::Neighbor(nb) => {
            steps.push((
                f,
                true,
                Pattern::Own {
                    from: 0,
                    count: block,
                },
            ));
            let (shift, rotate) = match nb.kind {
                NeighborKind::AdjacentLeft | NeighborKind::Heads | NeighborKind::ShiftUp => {
                    (-1, false)
                }
                NeighborKind::AdjacentRight | NeighborKind::Tails | NeighborKind::ShiftDown => {
                    (1, false)
                }
                NeighborKind::Offset(d) => (d as i64, false),
                NeighborKind::Rotate(d) => ((d as i64).rem_euclid(block.max(1) as i64), true),
            };
            steps.push((f + 1, false, Pattern::Neighbor { shift, rotate }));
            if nb.shifted_out.is_some() {
                let edge = if nb.kind == NeighborKind::ShiftUp {
                    block.saturating_sub(1)
                } else {
                    0
                };
                steps.push((f + 1, false, Pattern::AllAt { slot: c.slot(edge) }));
            }
        }
        OpKind::Scatter { .. } => {
            // The hole value first, where each thread will read back.
            let h = u8::from(c.holes);
            if c.holes {
                steps.push((f, true, Pattern::ReadBack));
            }
            steps.push((f + h, true, Pattern::Anywhere { count: c.entries }));
            steps.push((f + h + 1, false, Pattern::ReadBack));
        }
        _ => {}
    }
    let es = c.elem_bytes;
    let lo = slice.offset;
    steps
        .into_iter()
        .map(|(step, write, pattern)| {
            let mut o = Owners::new(lo, lo + slice.bytes);
            let entry = |o: &mut Owners, e: u32, t: u32| o.touch(lo + c.slot(e) * es, es, t);
            match pattern {
                Pattern::Own { from, count } => {
                    for e in 0..count.min(block.saturating_sub(from)) {
                        entry(&mut o, e, from + e);
                    }
                }
                Pattern::WarpLeaders { lane } => {
                    for w in 0..warps {
                        if w * 32 + lane < block {
                            entry(&mut o, w, w * 32 + lane);
                        }
                    }
                }
                Pattern::Segments { segment, count } => {
                    for lane in 0..32.min(block) {
                        for e in lane * segment..((lane + 1) * segment).min(count) {
                            entry(&mut o, e, lane);
                        }
                    }
                }
                Pattern::AllAt { slot } => {
                    for t in 0..block {
                        o.touch(lo + slot * es, es, t);
                    }
                }
                Pattern::AllEntries { count } => {
                    for t in 0..block {
                        for e in 0..count {
                            entry(&mut o, e, t);
                        }
                    }
                }
                Pattern::One { thread, slot } => o.touch(lo + slot * es, es, thread),
                Pattern::Neighbor { shift, rotate } => {
                    for t in 0..block {
                        let target = t as i64 + shift;
                        let target = if rotate {
                            target.rem_euclid(block.max(1) as i64)
                        } else {
                            target
                        };
                        if (0..block as i64).contains(&target) {
                            entry(&mut o, target as u32, t);
                        }
                    }
                }
                Pattern::ReadBack => {
                    if let Some(form) = &c.read_back {
                        for t in 0..block {
                            for i in 0..items {
                                entry(&mut o, form.position(i, t), t);
                            }
                        }
                    }
                }
                Pattern::Anywhere { count } => {
                    for e in 0..count {
                        entry(&mut o, e, 0);
                        entry(&mut o, e, block.saturating_sub(1));
                    }
                }
            }
            // A reduction's first warp reduces what it read with a full-warp shuffle tree
            // (or `redux.sync`), whose sources are the values read: every lane's read is
            // performed before any lane passes it.
            let synced = match kind {
                OpKind::Reduce(_) if step == f + 1 => 32,
                _ => 0,
            };
            Step {
                step,
                write,
                owners: o,
                synced,
            }
        })
        .collect()
}

//! Which shared-array accesses are ordered, from the documented semantics of barriers: two
//! accesses of one thread are; a `sync_block` (or grid or cluster barrier) orders everything
//! before it with everything after it (the block's barrier epoch); a barrier of a logical
//! warp, a warp, a partition of one or a group of whole warps (`sync` over it) orders what its
//! threads did before it with what they do after it; orderings compose.
//!
//! Group barriers are followed with a vector clock per thread: each thread counts the group
//! barriers it passed, and knows the latest count of every other thread that a chain of group
//! barriers since then carried to it. An access records its thread, epoch and count; a later
//! access of another thread is ordered after it when an epoch passed between, or when it has
//! seen a later count of the first thread.
//!
//! Atomics find the accesses unordered with them by block barriers alone (`atomic.rs`), which
//! is exact for the generator's: its shared atomics run in a phase of their own between block
//! barriers.
//!
//! Each element keeps its last write and the reads since then. Where the kernel has no group
//! barrier, reads by several threads in one epoch need not be told apart (no write of the
//! epoch is ordered after all of them), so the list of them is kept only where it has.

use super::{Block, OpKind};
use coopgraph::ir::ops::LaneOp;
use std::collections::HashMap;

/// A record's thread when several threads read an element in its epoch.
pub(super) const SEVERAL: u32 = u32::MAX;

/// One access: its thread, its block's barrier epoch and the thread's group-barrier count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Rec {
    pub thread: u32,
    pub epoch: u32,
    pub clock: u32,
}

/// The block's group-barrier clocks and the reads of elements that several threads read.
pub(super) struct Order {
    threads: usize,
    /// Whether the kernel has group barriers (and so the reads need telling apart).
    tracks: bool,
    /// Per thread: the group barriers it passed.
    clock: Vec<u32>,
    /// Per thread `u`, per thread `t`: the latest count of `t` a barrier carried to `u`
    /// (empty until the first group barrier).
    seen: Vec<u32>,
    /// Per element `(array, index)` whose reader is [`SEVERAL`]: its reads in the epoch.
    reads: HashMap<(usize, u64), Vec<Rec>>,
}

impl Order {
    pub(super) fn new(ir: &coopgraph::ir::Ir, threads: usize) -> Self {
        let tracks =
            (ir.ops.iter()).any(|o| matches!(&o.kind, OpKind::Lanes(l) if l.op == LaneOp::Sync));
        Order {
            threads,
            tracks,
            clock: vec![0; threads],
            seen: Vec::new(),
            reads: HashMap::new(),
        }
    }

    /// Thread `t`'s access now, in epoch `epoch`.
    pub(super) fn rec(&self, t: usize, epoch: u32) -> Rec {
        Rec {
            thread: t as u32,
            epoch,
            clock: self.clock[t],
        }
    }

    /// Whether access `r` (of one thread) is ordered before thread `u`'s point in `epoch`.
    fn ordered(&self, r: Rec, u: usize, epoch: u32) -> bool {
        r.thread == u as u32
            || r.epoch != epoch
            || (r.thread != SEVERAL
                && (self.seen.get(u * self.threads + r.thread as usize))
                    .is_some_and(|&c| c > r.clock))
    }

    /// Whether the last write `w` of an element is unordered with thread `u`'s access.
    pub(super) fn write_unordered(&self, w: Option<Rec>, u: usize, epoch: u32) -> bool {
        w.is_some_and(|w| !self.ordered(w, u, epoch))
    }

    /// Whether some read of element `key` since its last write (`reader`) is unordered with
    /// thread `u`'s write.
    pub(super) fn reads_unordered(
        &self,
        reader: Option<Rec>,
        key: (usize, u64),
        u: usize,
        epoch: u32,
    ) -> bool {
        match reader {
            None => false,
            Some(r) if r.thread == SEVERAL && r.epoch == epoch => match self.reads.get(&key) {
                Some(list) => list.iter().any(|&x| !self.ordered(x, u, epoch)),
                None => true,
            },
            Some(r) => !self.ordered(r, u, epoch),
        }
    }

    /// Notes read `me` of element `key`, whose reads since its last write `reader` records.
    pub(super) fn read(&mut self, reader: &mut Option<Rec>, key: (usize, u64), me: Rec) {
        let (u, epoch) = (me.thread as usize, me.epoch);
        match *reader {
            Some(r) if r.thread == SEVERAL && r.epoch == epoch => {
                if self.tracks {
                    let mut list = self.reads.remove(&key).unwrap_or_default();
                    list.retain(|&x| !self.ordered(x, u, epoch));
                    list.push(me);
                    self.reads.insert(key, list);
                }
            }
            Some(r) if !self.ordered(r, u, epoch) => {
                if self.tracks {
                    self.reads.insert(key, vec![r, me]);
                }
                *reader = Some(Rec {
                    thread: SEVERAL,
                    epoch,
                    clock: 0,
                });
            }
            _ => {
                self.reads.remove(&key);
                *reader = Some(me);
            }
        }
    }

    /// A write of element `key`: the reads before it are ordered before it (else it races
    /// with them), so what is ordered after it is ordered after them.
    pub(super) fn written(&mut self, reader: &mut Option<Rec>, key: (usize, u64)) {
        if reader.take().is_some_and(|r| r.thread == SEVERAL) {
            self.reads.remove(&key);
        }
    }

    /// A block barrier: the reads before it are ordered before everything after it.
    pub(super) fn block_barrier(&mut self) {
        self.reads.clear();
    }

    /// Threads `set` passed a group barrier together.
    pub(super) fn group_barrier(&mut self, set: impl Iterator<Item = usize> + Clone) {
        let n = self.threads;
        if self.seen.is_empty() {
            self.seen = vec![0; n * n];
        }
        let mut join = vec![0u32; n];
        for s in set.clone() {
            self.clock[s] += 1;
            for (j, &v) in join.iter_mut().zip(&self.seen[s * n..s * n + n]) {
                *j = (*j).max(v);
            }
        }
        for s in set.clone() {
            join[s] = join[s].max(self.clock[s]);
        }
        for s in set {
            self.seen[s * n..s * n + n].copy_from_slice(&join);
        }
    }
}

impl Block<'_> {
    /// A group barrier over the threads of each of `sets` (each a whole group, or a
    /// partition's lanes).
    pub(super) fn group_barrier(&mut self, sets: &[Vec<usize>]) {
        for set in sets {
            self.order.group_barrier(set.iter().copied());
        }
    }
}

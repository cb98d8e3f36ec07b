//! The shared-memory race detector: happens-before from block and warp barriers, and a
//! shadow record per shared byte.
//!
//! What orders what:
//! - program order within a thread;
//! - a completed `bar.sync` orders everything its participating threads did before it with
//!   everything they do after it (barriers complete for whole warps, so every lane of a
//!   participating warp is ordered);
//! - a completed `bar.warp.sync` does the same for its participating lanes;
//! - orderings compose transitively.
//!
//! `atom`/`red` never race with each other; `membar` and `activemask` order nothing (a fence
//! without a flag protocol is not synchronization, and the flag protocols themselves are races
//! this checker reports). Neither do `shfl.sync`, `vote.sync`, `match.sync` and `redux.sync`:
//! they wait for their lanes, but the PTX ISA promises memory ordering among the lanes of a
//! warp only for `bar.warp.sync` (as the CUDA guide does for `__syncwarp` and not for
//! `__shfl_sync`), so a lane that reads what another wrote needs a warp barrier between them
//! even when a shuffle already made them meet.
//!
//! Clocks are kept at two granularities, which is exact because barriers always take whole
//! warps: a barrier generation per warp with a vector clock over warps (`bvc`), and a
//! warp-barrier count per thread with a vector clock over the lanes of its own warp (`lvc`).
//! An access by thread `t` records `(t, pc, generation of t's warp, warp-barrier count of t)`;
//! a later access by `u` is ordered after it when `u`'s warp has seen a later generation of
//! `t`'s warp, or when `u` is in `t`'s warp and has seen a later warp-barrier count of `t`.
//!
//! Each shared byte keeps its last write (or atomic) and the reads since then that are not
//! ordered before one another; a read that is ordered after an earlier recorded read replaces
//! it. A write is checked against all of them.

use super::error::AccessKind;

const NONE: u32 = u32::MAX;
const ATOMIC: u32 = 1 << 31;

/// One recorded access.
#[derive(Debug, Clone, Copy)]
struct Rec {
    /// Thread index, with [`ATOMIC`] set for atomics; [`NONE`] when empty.
    tid: u32,
    pc: u32,
    phase: u32,
    lclk: u32,
}

const EMPTY: Rec = Rec {
    tid: NONE,
    pc: 0,
    phase: 0,
    lclk: 0,
};

impl Rec {
    fn thread(&self) -> u32 {
        self.tid & !ATOMIC
    }
    fn atomic(&self) -> bool {
        self.tid != NONE && self.tid & ATOMIC != 0
    }
    fn kind(&self, write: bool) -> AccessKind {
        if self.atomic() {
            AccessKind::Atomic
        } else if write {
            AccessKind::Write
        } else {
            AccessKind::Read
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Shadow {
    w: Rec,
    r: Rec,
    /// 0, or 1 + the index of an overflow list of further reads (and atomics).
    list: u32,
}

struct ReadList {
    recs: Vec<Rec>,
    prune_at: usize,
    has_atomic: bool,
}

/// A race found: the earlier access it conflicts with.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RaceHit {
    /// The shared byte.
    pub byte: u32,
    /// The earlier access's thread (linear index in the block).
    pub other: u32,
    /// The earlier access's instruction (decoded pc).
    pub other_pc: u32,
    /// The earlier access's kind.
    pub other_kind: AccessKind,
}

/// Clocks and shadow state of one block.
pub(crate) struct RaceState {
    nwarps: usize,
    lclk: Vec<u32>,
    lvc: Vec<u32>,
    generation: Vec<u32>,
    bvc: Vec<u32>,
    shadow: Vec<Shadow>,
    lists: Vec<ReadList>,
    free: Vec<u32>,
}

impl RaceState {
    pub(crate) fn new() -> Self {
        RaceState {
            nwarps: 0,
            lclk: Vec::new(),
            lvc: Vec::new(),
            generation: Vec::new(),
            bvc: Vec::new(),
            shadow: Vec::new(),
            lists: Vec::new(),
            free: Vec::new(),
        }
    }

    /// Resets for a block of `nthreads` threads and `smem` shared bytes.
    pub(crate) fn reset(&mut self, nthreads: usize, smem: usize) {
        let nwarps = nthreads.div_ceil(32);
        self.nwarps = nwarps;
        self.lclk.clear();
        self.lclk.resize(nthreads, 0);
        self.lvc.clear();
        self.lvc.resize(nthreads * 32, 0);
        self.generation.clear();
        self.generation.resize(nwarps, 0);
        self.bvc.clear();
        self.bvc.resize(nwarps * nwarps, 0);
        self.shadow.clear();
        self.shadow.resize(
            smem,
            Shadow {
                w: EMPTY,
                r: EMPTY,
                list: 0,
            },
        );
        self.lists.clear();
        self.free.clear();
    }

    fn rec(&self, tid: u32, pc: u32, atomic: bool) -> Rec {
        let t = tid as usize;
        Rec {
            tid: if atomic { tid | ATOMIC } else { tid },
            pc,
            phase: self.generation.get(t / 32).copied().unwrap_or(0),
            lclk: self.lclk.get(t).copied().unwrap_or(0),
        }
    }

    /// Whether `rec` happens before the current point of thread `u`.
    fn ordered(&self, rec: &Rec, u: u32) -> bool {
        let t = rec.thread();
        if t == u {
            return true;
        }
        let (wt, wu) = (t as usize / 32, u as usize / 32);
        if self.bvc.get(wu * self.nwarps + wt).copied().unwrap_or(0) > rec.phase {
            return true;
        }
        wt == wu
            && self
                .lvc
                .get(u as usize * 32 + t as usize % 32)
                .copied()
                .unwrap_or(0)
                > rec.lclk
    }

    fn hit(byte: usize, rec: &Rec, write: bool) -> RaceHit {
        RaceHit {
            byte: byte as u32,
            other: rec.thread(),
            other_pc: rec.pc,
            other_kind: rec.kind(write),
        }
    }

    /// A plain read of `byte` by thread `u` at `pc`.
    pub(crate) fn read(&mut self, byte: usize, u: u32, pc: u32) -> Result<(), RaceHit> {
        let new = self.rec(u, pc, false);
        let Some(s) = self.shadow.get(byte).copied() else {
            return Ok(());
        };
        if s.w.tid != NONE && !self.ordered(&s.w, u) {
            return Err(Self::hit(byte, &s.w, true));
        }
        if s.list != 0 {
            let l = &self.lists[(s.list - 1) as usize];
            if l.has_atomic
                && let Some(a) = l.recs.iter().find(|r| r.atomic() && !self.ordered(r, u))
            {
                return Err(Self::hit(byte, a, true));
            }
        }
        if s.r.tid == NONE || self.ordered(&s.r, u) {
            self.shadow[byte].r = new;
        } else {
            self.push(byte, s.r, u);
            self.shadow[byte].r = new;
        }
        Ok(())
    }

    /// A plain write of `byte` by thread `u` at `pc`.
    pub(crate) fn write(&mut self, byte: usize, u: u32, pc: u32) -> Result<(), RaceHit> {
        let new = self.rec(u, pc, false);
        let Some(s) = self.shadow.get(byte).copied() else {
            return Ok(());
        };
        if s.w.tid != NONE && !self.ordered(&s.w, u) {
            return Err(Self::hit(byte, &s.w, true));
        }
        if s.r.tid != NONE && !self.ordered(&s.r, u) {
            return Err(Self::hit(byte, &s.r, false));
        }
        if s.list != 0 {
            let l = &self.lists[(s.list - 1) as usize];
            if let Some(r) = l.recs.iter().find(|r| !self.ordered(r, u)) {
                return Err(Self::hit(byte, r, false));
            }
            self.release(s.list);
        }
        self.shadow[byte] = Shadow {
            w: new,
            r: EMPTY,
            list: 0,
        };
        Ok(())
    }

    /// An atomic read-modify-write of `byte` by thread `u` at `pc`.
    pub(crate) fn atomic(&mut self, byte: usize, u: u32, pc: u32) -> Result<(), RaceHit> {
        let new = self.rec(u, pc, true);
        let Some(s) = self.shadow.get(byte).copied() else {
            return Ok(());
        };
        if s.w.tid != NONE && !s.w.atomic() && !self.ordered(&s.w, u) {
            return Err(Self::hit(byte, &s.w, true));
        }
        if s.r.tid != NONE && !self.ordered(&s.r, u) {
            return Err(Self::hit(byte, &s.r, false));
        }
        if s.list != 0 {
            let l = &self.lists[(s.list - 1) as usize];
            if let Some(r) = l.recs.iter().find(|r| !r.atomic() && !self.ordered(r, u)) {
                return Err(Self::hit(byte, r, false));
            }
        }
        // Keep an unordered earlier atomic, so later plain accesses are checked against both.
        if s.w.atomic() && !self.ordered(&s.w, u) {
            self.push(byte, s.w, u);
        }
        self.shadow[byte].w = new;
        Ok(())
    }

    /// Adds `rec` to the byte's overflow list, pruning records ordered before thread `u`'s
    /// current point whenever the list has doubled since the last pruning.
    fn push(&mut self, byte: usize, rec: Rec, u: u32) {
        let idx = match self.shadow[byte].list {
            0 => {
                let i = match self.free.pop() {
                    Some(i) => i,
                    None => {
                        self.lists.push(ReadList {
                            recs: Vec::new(),
                            prune_at: 8,
                            has_atomic: false,
                        });
                        (self.lists.len() - 1) as u32
                    }
                };
                self.shadow[byte].list = i + 1;
                i as usize
            }
            l => (l - 1) as usize,
        };
        let mut recs = std::mem::take(&mut self.lists[idx].recs);
        if recs.len() >= self.lists[idx].prune_at {
            recs.retain(|r| r.atomic() || !self.ordered(r, u));
            self.lists[idx].prune_at = (recs.len() * 2).max(8);
        }
        recs.push(rec);
        let l = &mut self.lists[idx];
        l.has_atomic |= rec.atomic();
        l.recs = recs;
    }

    fn release(&mut self, list: u32) {
        let i = (list - 1) as usize;
        if let Some(l) = self.lists.get_mut(i) {
            l.recs.clear();
            l.prune_at = 8;
            l.has_atomic = false;
            self.free.push(i as u32);
        }
    }

    /// Lanes `lanes` (a bit mask) of warp `w` completed a `bar.warp.sync` together.
    pub(crate) fn warp_sync(&mut self, w: usize, lanes: u32) {
        let mut join = [0u32; 32];
        for l in 0..32 {
            if lanes & (1 << l) == 0 {
                continue;
            }
            let t = w * 32 + l;
            if let Some(c) = self.lclk.get_mut(t) {
                *c += 1;
            }
            if let Some(row) = self.lvc.get(t * 32..t * 32 + 32) {
                for (j, v) in join.iter_mut().zip(row) {
                    *j = (*j).max(*v);
                }
            }
        }
        for (l, j) in join.iter_mut().enumerate() {
            if lanes & (1 << l) != 0 {
                *j = (*j).max(self.lclk.get(w * 32 + l).copied().unwrap_or(0));
            }
        }
        for l in 0..32 {
            if lanes & (1 << l) != 0 {
                let t = w * 32 + l;
                if let Some(row) = self.lvc.get_mut(t * 32..t * 32 + 32) {
                    row.copy_from_slice(&join);
                }
            }
        }
    }

    /// Warps `warps` completed a barrier together.
    pub(crate) fn barrier(&mut self, warps: &[usize]) {
        let n = self.nwarps;
        let mut join = vec![0u32; n];
        for &w in warps {
            if let Some(g) = self.generation.get_mut(w) {
                *g += 1;
            }
            if let Some(row) = self.bvc.get(w * n..w * n + n) {
                for (j, v) in join.iter_mut().zip(row) {
                    *j = (*j).max(*v);
                }
            }
        }
        for &w in warps {
            if let Some(j) = join.get_mut(w) {
                *j = (*j).max(self.generation.get(w).copied().unwrap_or(0));
            }
        }
        for &w in warps {
            if let Some(row) = self.bvc.get_mut(w * n..w * n + n) {
                row.copy_from_slice(&join);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn barrier_orders_across_warps() {
        let mut r = RaceState::new();
        r.reset(64, 16);
        r.write(0, 0, 1).unwrap();
        assert!(r.read(0, 32, 2).is_err(), "no barrier yet");
        r.reset(64, 16);
        r.write(0, 0, 1).unwrap();
        r.barrier(&[0, 1]);
        r.read(0, 32, 2).unwrap();
        r.read(0, 33, 2).unwrap();
        assert!(
            r.write(0, 5, 3).is_err(),
            "reads by 32, 33 are not ordered before 5"
        );
    }

    #[test]
    fn warp_barrier_orders_its_lanes_only() {
        let mut r = RaceState::new();
        r.reset(32, 4);
        r.write(0, 0, 1).unwrap();
        r.warp_sync(0, 0b11);
        r.read(0, 1, 2).unwrap();
        assert!(r.read(0, 2, 2).is_err(), "lane 2 was not in the collective");
    }

    /// Lane `l` writes `s[l]`, then `between` runs, then lane `l` reads `s[l ^ 1]`.
    fn neighbour_exchange(between: &str) -> Result<(), crate::sim::SimError> {
        use crate::sim::{SimOptions, Simulator, entry_text};
        let text = entry_text(
            "xchg",
            &[],
            &[".shared .align 4 .b8 s[128];"],
            &format!(
                "mov.u32 %r0, %tid.x;
                 mov.u32 %r1, s;
                 shl.b32 %r2, %r0, 2;
                 add.u32 %r3, %r1, %r2;
                 st.shared.u32 [%r3], %r0;
                 {between}
                 xor.b32 %r4, %r2, 4;
                 add.u32 %r5, %r1, %r4;
                 ld.shared.u32 %r6, [%r5];
                 ret;"
            ),
        );
        let sim = Simulator::new(SimOptions::default());
        let m = sim.load_module(&text)?;
        sim.launch(&m, "xchg", [1, 1, 1], [32, 1, 1], 0, &[])?;
        Ok(())
    }

    #[test]
    fn a_shuffle_orders_no_memory_and_a_warp_barrier_does() {
        let e = neighbour_exchange("shfl.sync.bfly.b32 %r7, %r0, 1, 31, -1;").unwrap_err();
        assert!(matches!(e, crate::sim::SimError::Race(_)), "{e}");
        neighbour_exchange("bar.warp.sync -1;").unwrap();
        neighbour_exchange("shfl.sync.bfly.b32 %r7, %r0, 1, 31, -1;\nbar.warp.sync -1;").unwrap();
    }

    #[test]
    fn atomics_do_not_race_with_atomics() {
        let mut r = RaceState::new();
        r.reset(64, 4);
        r.atomic(0, 0, 1).unwrap();
        r.atomic(0, 33, 1).unwrap();
        r.atomic(0, 7, 1).unwrap();
        assert!(r.read(0, 0, 2).is_err(), "the atomic by 33 is unordered");
        r.barrier(&[0, 1]);
        r.read(0, 0, 3).unwrap();
    }

    #[test]
    fn many_concurrent_readers_then_a_write() {
        let mut r = RaceState::new();
        r.reset(256, 4);
        for t in 0..256 {
            r.read(0, t, 1).unwrap();
        }
        let all: Vec<usize> = (0..8).collect();
        r.barrier(&all);
        r.write(0, 3, 2).unwrap();
        r.reset(256, 4);
        for t in 0..256 {
            r.read(0, t, 1).unwrap();
        }
        assert!(r.write(0, 3, 2).is_err());
    }
}

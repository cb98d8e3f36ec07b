//! Races on global memory between the blocks of a cooperative launch.
//!
//! Blocks are the unit: each has a vector clock over the grid's blocks, its own entry counting
//! its releases. Orderings come only from memory orders, as the PTX memory model gives them:
//! an atomic with `.release` (or `.acq_rel`) publishes the block's clock at its address (the
//! join of every release there: later read-modify-writes continue a release sequence), and
//! an atomic with `.acquire` (or `.acq_rel`) or an `ld.acquire` there takes it in; a block
//! barrier orders the block's own threads (so a release by one thread after a `bar.sync`
//! carries what the block did before). A grid barrier is such a release and acquire.
//!
//! Each byte of global memory keeps the last plain write and the plain reads since, each
//! with its block and that block's clock then. A write and another block's read or write of
//! the same byte are a race unless the later access's block had acquired the earlier
//! block's clock at that access. Atomics and ordered loads never race with one another (they
//! are not checked against plain accesses either).

use super::error::AccessKind;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

/// One plain access: the block (linear index), its clock then, the thread and instruction.
#[derive(Debug, Clone, Copy)]
struct Rec {
    block: u32,
    clock: u32,
    thread: u32,
    pc: u32,
}

#[derive(Debug, Default)]
struct Shadow {
    write: Option<Rec>,
    reads: SmallVec<[Rec; 2]>,
}

/// The earlier access of a race, found by a later one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GlobalHit {
    /// The byte.
    pub addr: u64,
    /// The earlier access's block (linear index), thread and instruction.
    pub block: u32,
    pub thread: u32,
    pub pc: u32,
    /// What it was.
    pub kind: AccessKind,
}

/// The clocks and shadow bytes of one cooperative launch.
#[derive(Debug)]
pub(crate) struct GlobalRaces {
    clocks: Vec<Vec<u32>>,
    released: FxHashMap<u64, Vec<u32>>,
    shadow: FxHashMap<u64, Shadow>,
}

impl GlobalRaces {
    /// No access yet, for a grid of `blocks` blocks.
    pub(crate) fn new(blocks: usize) -> Self {
        let clocks = (0..blocks)
            .map(|b| {
                let mut c = vec![0; blocks];
                c[b] = 1;
                c
            })
            .collect();
        GlobalRaces {
            clocks,
            released: FxHashMap::default(),
            shadow: FxHashMap::default(),
        }
    }

    fn ordered(&self, block: u32, earlier: &Rec) -> bool {
        earlier.block == block
            || self.clocks[block as usize]
                .get(earlier.block as usize)
                .is_some_and(|c| *c >= earlier.clock)
    }

    fn rec(&self, block: u32, thread: u32, pc: u32) -> Rec {
        Rec {
            block,
            clock: self.clocks[block as usize][block as usize],
            thread,
            pc,
        }
    }

    fn hit(addr: u64, r: &Rec, kind: AccessKind) -> GlobalHit {
        GlobalHit {
            addr,
            block: r.block,
            thread: r.thread,
            pc: r.pc,
            kind,
        }
    }

    /// A plain read of `len` bytes at `addr` by `thread` of `block`.
    pub(crate) fn read(
        &mut self,
        block: u32,
        thread: u32,
        pc: u32,
        addr: u64,
        len: u32,
    ) -> Result<(), GlobalHit> {
        let me = self.rec(block, thread, pc);
        for a in addr..addr + u64::from(len) {
            if let Some(w) = self.shadow.get(&a).and_then(|s| s.write)
                && !self.ordered(block, &w)
            {
                return Err(Self::hit(a, &w, AccessKind::Write));
            }
            let s = self.shadow.entry(a).or_default();
            match s.reads.iter_mut().find(|r| r.block == block) {
                Some(r) => *r = me,
                None => s.reads.push(me),
            }
        }
        Ok(())
    }

    /// A plain write of `len` bytes at `addr` by `thread` of `block`.
    pub(crate) fn write(
        &mut self,
        block: u32,
        thread: u32,
        pc: u32,
        addr: u64,
        len: u32,
    ) -> Result<(), GlobalHit> {
        let me = self.rec(block, thread, pc);
        for a in addr..addr + u64::from(len) {
            if let Some(s) = self.shadow.get(&a) {
                if let Some(w) = s.write
                    && !self.ordered(block, &w)
                {
                    return Err(Self::hit(a, &w, AccessKind::Write));
                }
                if let Some(r) = s.reads.iter().find(|r| !self.ordered(block, r)) {
                    return Err(Self::hit(a, r, AccessKind::Read));
                }
            }
            let s = self.shadow.entry(a).or_default();
            s.write = Some(me);
            s.reads.clear();
        }
        Ok(())
    }

    /// An acquire at `addr` by `block`: it takes in every clock released there.
    pub(crate) fn acquire(&mut self, block: u32, addr: u64) {
        let Some(rel) = self.released.get(&addr) else {
            return;
        };
        for (c, r) in self.clocks[block as usize].iter_mut().zip(rel) {
            *c = (*c).max(*r);
        }
    }

    /// A release at `addr` by `block`: its clock joins the address's, and its own entry
    /// advances (what it does next is after the release).
    pub(crate) fn release(&mut self, block: u32, addr: u64) {
        let mine = &mut self.clocks[block as usize];
        let rel = self
            .released
            .entry(addr)
            .or_insert_with(|| vec![0; mine.len()]);
        for (r, c) in rel.iter_mut().zip(mine.iter()) {
            *r = (*r).max(*c);
        }
        mine[block as usize] += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_release_and_acquire_order_writes_between_blocks() {
        let mut g = GlobalRaces::new(2);
        g.write(0, 5, 1, 100, 4).expect("first write");
        // Unordered: block 1 reads what block 0 wrote.
        assert_eq!(g.read(1, 0, 2, 100, 4).map_err(|h| h.block), Err(0));
        let mut g = GlobalRaces::new(2);
        g.write(0, 5, 1, 100, 4).expect("first write");
        g.release(0, 8);
        g.acquire(1, 8);
        g.read(1, 0, 2, 100, 4).expect("ordered read");
        // Block 0 writes again after its release: unordered with block 1's read.
        let hit = g.write(0, 5, 3, 102, 1).expect_err("a race");
        assert_eq!((hit.block, hit.kind, hit.addr), (1, AccessKind::Read, 102));
    }
}

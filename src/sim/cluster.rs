//! Thread-block clusters (sm_90): the blocks of one cluster run together, interleaved as a
//! cooperative launch's blocks are, and share what this module keeps — the cluster barrier's
//! arrivals, every block's shared memory for distributed shared memory (DSMEM) accesses, and
//! the DSMEM race checker.
//!
//! Addresses: a `.shared::cluster` address is `(rank + 1) << CLUSTER_SHIFT | a`, where `a` is
//! the `.shared` address in the block of cluster rank `rank` (`mapa` makes them); an address
//! without rank bits is the thread's own block's, as on the GPU, where a `.shared` address is
//! a valid `.shared::cluster` one. A rank past the cluster is out of bounds.
//!
//! The cluster barrier: `barrier.cluster.arrive` counts the thread's arrival at its next
//! phase; `barrier.cluster.wait` lets the thread on once every thread of every block of the
//! cluster has arrived at the phase the thread waits for, and otherwise spins (the thread
//! yields at the wait, so the blocks it waits for run). A wait without an arrival before it
//! waits for the next phase's arrivals, which never come while the thread itself has not
//! arrived: the launch ends with a participation fault. Threads that exit never arrive, so
//! a block that exits while others wait at the barrier ends the launch with a participation
//! fault naming the barrier ([`ParticipationProblem::ClusterBarrier`](super::error::ParticipationProblem::ClusterBarrier)).
//!
//! Races: every access to shared memory in a cluster launch (the block's own and remote ones)
//! is recorded per byte with the accessing block's rank, thread, instruction and the number
//! of cluster arrivals its thread had made. An access by a thread of another block is
//! ordered after it when its thread has completed the wait of a later phase than that
//! count; otherwise, if either writes (atomics never race with atomics), it is a race
//! ([`SimError::ClusterRace`](super::SimError::ClusterRace)). Accesses of one block to its
//! own shared memory are left to the block's own race checker, for which a completed cluster
//! barrier is a block barrier.

use super::SimOptions;
use super::block::{BlockRun, Counts, Round, Shape};
use super::control::Monitor;
use super::coop::{Ran, split_live};
use super::decode::Program;
use super::error::{AccessKind, ParticipationFault, ParticipationProblem, SimError};
use super::exec::SharedMem;
use super::memory::GlobalView;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::cell::RefCell;

/// Where the rank bits of a `.shared::cluster` address start: 5 bits above a block's shared
/// addresses (which stay below 2^27: see [`super::symbols`]), room for ranks 0 to 30.
pub(crate) const CLUSTER_SHIFT: u32 = 27;
/// The `.shared` part of a `.shared::cluster` address.
pub(crate) const LOCAL_MASK: u64 = (1 << CLUSTER_SHIFT) - 1;

/// The cluster of ranks of a `.shared::cluster` address: `None` for the thread's own block
/// (no rank bits), else the rank.
pub(crate) fn rank_of(addr: u64) -> Option<u32> {
    match (addr >> CLUSTER_SHIFT) as u32 {
        0 => None,
        r => Some(r - 1),
    }
}

/// `mapa`: the `.shared::cluster` address of `.shared` address `local` in rank `rank`. Ranks
/// past 30 all map to rank 30's bits (out of every cluster: at most 16 blocks).
pub(crate) fn mapa(local: u64, rank: u64) -> u64 {
    let r = rank.min(30) + 1;
    (r << CLUSTER_SHIFT) | (local & LOCAL_MASK)
}

/// One recorded access.
#[derive(Debug, Clone, Copy)]
struct Rec {
    rank: u32,
    thread: u32,
    pc: u32,
    /// The thread's cluster arrivals when it accessed.
    arrivals: u32,
    atomic: bool,
}

#[derive(Debug, Default)]
struct Shadow {
    write: Option<Rec>,
    /// At most one read per block: the one with the most arrivals.
    reads: SmallVec<[Rec; 2]>,
}

/// The earlier access of a DSMEM race, found by a later one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ClusterHit {
    /// The rank whose shared memory holds the byte, and the byte's `.shared` address there.
    pub owner: u32,
    pub addr: u32,
    /// The earlier access's rank, thread and instruction.
    pub rank: u32,
    pub thread: u32,
    pub pc: u32,
    pub kind: AccessKind,
}

/// What the blocks of one cluster share while they run.
pub(crate) struct Cluster {
    /// Threads per block.
    threads: usize,
    /// The shared memory of each rank while the block is not running (the running block
    /// holds its own).
    pub mems: Vec<Option<SharedMem>>,
    /// Per (rank, thread): arrivals and completed waits.
    arrivals: Vec<u32>,
    waits: Vec<u32>,
    /// Per phase (0-based): threads that arrived at it.
    phases: Vec<u64>,
    /// Per rank: the phases its own race checker has taken as block barriers.
    applied: Vec<u32>,
    /// Per (owner rank, storage byte), when checking races.
    shadow: Option<FxHashMap<(u32, usize), Shadow>>,
}

impl Cluster {
    /// A cluster of `blocks` blocks of `threads` threads.
    pub(crate) fn new(blocks: usize, threads: usize, races: bool) -> Self {
        Cluster {
            threads,
            mems: (0..blocks).map(|_| None).collect(),
            arrivals: vec![0; blocks * threads],
            waits: vec![0; blocks * threads],
            phases: Vec::new(),
            applied: vec![0; blocks],
            shadow: races.then(FxHashMap::default),
        }
    }

    /// Blocks in the cluster.
    pub(crate) fn blocks(&self) -> usize {
        self.mems.len()
    }

    /// `barrier.cluster.arrive` by `thread` of `rank`.
    pub(crate) fn arrive(&mut self, rank: u32, thread: u32) {
        let i = rank as usize * self.threads + thread as usize;
        let Some(a) = self.arrivals.get_mut(i) else {
            return;
        };
        *a += 1;
        let phase = *a as usize - 1;
        if self.phases.len() <= phase {
            self.phases.resize(phase + 1, 0);
        }
        self.phases[phase] += 1;
    }

    /// `barrier.cluster.wait` by `thread` of `rank`: whether the phase it waits for has
    /// completed (then the wait is counted), and whether the rank's race checker must now
    /// take a block barrier (the first of its threads past this phase).
    pub(crate) fn wait(&mut self, rank: u32, thread: u32) -> (bool, bool) {
        let i = rank as usize * self.threads + thread as usize;
        let Some(&w) = self.waits.get(i) else {
            return (false, false);
        };
        let total = (self.mems.len() * self.threads) as u64;
        let done = self.phases.get(w as usize).is_some_and(|&n| n == total);
        if !done {
            return (false, false);
        }
        self.waits[i] = w + 1;
        let applied = &mut self.applied[rank as usize];
        let barrier = *applied <= w;
        if barrier {
            *applied = w + 1;
        }
        (true, barrier)
    }

    /// Threads per block.
    pub(crate) fn threads(&self) -> usize {
        self.threads
    }

    /// Checks an access of storage byte `byte` of `owner`'s shared memory (at `.shared`
    /// address `addr`) by `thread` of `rank` against the other blocks' accesses, and records
    /// it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn access(
        &mut self,
        owner: u32,
        byte: usize,
        addr: u32,
        rank: u32,
        thread: u32,
        pc: u32,
        kind: AccessKind,
    ) -> Result<(), ClusterHit> {
        let i = rank as usize * self.threads + thread as usize;
        let (arrivals, waits) = (
            self.arrivals.get(i).copied().unwrap_or(0),
            self.waits.get(i).copied().unwrap_or(0),
        );
        let Some(shadow) = self.shadow.as_mut() else {
            return Ok(());
        };
        let s = shadow.entry((owner, byte)).or_default();
        // Ordered: the same block (its own checker's business), or a wait of a later phase
        // than the earlier access's arrivals.
        let ordered = |r: &Rec| r.rank == rank || waits > r.arrivals;
        let hit = |r: &Rec, k: AccessKind| ClusterHit {
            owner,
            addr,
            rank: r.rank,
            thread: r.thread,
            pc: r.pc,
            kind: k,
        };
        let atomic = kind == AccessKind::Atomic;
        let rec = Rec {
            rank,
            thread,
            pc,
            arrivals,
            atomic,
        };
        if let Some(w) = &s.write
            && !ordered(w)
            && !(atomic && w.atomic)
        {
            let k = if w.atomic {
                AccessKind::Atomic
            } else {
                AccessKind::Write
            };
            return Err(hit(w, k));
        }
        if kind == AccessKind::Read {
            match s.reads.iter_mut().find(|r| r.rank == rank) {
                Some(r) if r.arrivals <= arrivals => *r = rec,
                Some(_) => {}
                None => s.reads.push(rec),
            }
            return Ok(());
        }
        if let Some(r) = s.reads.iter().find(|r| !ordered(r)) {
            return Err(hit(r, AccessKind::Read));
        }
        s.reads.clear();
        s.write = Some(rec);
        Ok(())
    }
}

/// Runs a cluster launch: cluster after cluster, the blocks of each interleaved (a round of
/// each in turn), sharing the cluster's state. `grid` is the launch's grid and `dims` the
/// cluster shape (which divides it). Returns the counters and what was printed.
pub(crate) fn run(
    prog: &Program,
    opts: &SimOptions,
    view: &GlobalView<'_>,
    params: &[u8],
    shape: Shape,
    monitor: &Monitor<'_>,
    dims: [u32; 3],
) -> Result<Ran, SimError> {
    let [gx, gy, gz] = shape.grid;
    let [cx, cy, cz] = dims;
    let threads = shape.block.iter().map(|&d| d as usize).product::<usize>();
    let blocks = (cx * cy * cz) as usize;
    let mut counts = Counts::default();
    let mut printed = Vec::new();
    for z in (0..gz).step_by(cz as usize) {
        for y in (0..gy).step_by(cy as usize) {
            for x in (0..gx).step_by(cx as usize) {
                let ctaids: Vec<[u32; 3]> = (0..blocks as u32)
                    .map(|r| [x + r % cx, y + (r / cx) % cy, z + r / (cx * cy)])
                    .collect();
                let state = RefCell::new(Cluster::new(blocks, threads, opts.check_races));
                let r = run_one(prog, opts, view, params, shape, monitor, &state, &ctaids);
                let (c, lines) = r?;
                counts.steps += c.steps;
                counts.barriers += c.barriers;
                counts.warp_collectives += c.warp_collectives;
                counts.rounds += c.rounds;
                printed.extend(lines);
            }
        }
    }
    Ok((counts, printed))
}

/// Runs the blocks `ctaids` of one cluster (rank order) to their end.
#[allow(clippy::too_many_arguments)]
fn run_one<'a>(
    prog: &'a Program,
    opts: &'a SimOptions,
    view: &'a GlobalView<'a>,
    params: &'a [u8],
    shape: Shape,
    monitor: &'a Monitor<'a>,
    state: &'a RefCell<Cluster>,
    ctaids: &[[u32; 3]],
) -> Result<Ran, SimError> {
    let mut runs: Vec<BlockRun<'a>> = Vec::with_capacity(ctaids.len());
    for (rank, &c) in ctaids.iter().enumerate() {
        let mut run = BlockRun::new(prog, opts, view, params, shape, monitor);
        run.join_cluster(state, rank as u32);
        run.start(c)?;
        state.borrow_mut().mems[rank] = Some(run.take_shared());
        runs.push(run);
    }
    let mut live = vec![true; runs.len()];
    let result = schedule(&mut runs, &mut live, state);
    let mut counts = Counts::default();
    let mut printed = Vec::new();
    for run in &mut runs {
        run.flush();
        printed.extend(run.take_printed());
        let c = run.counts();
        counts.steps += c.steps;
        counts.barriers += c.barriers;
        counts.warp_collectives += c.warp_collectives;
        counts.rounds += c.rounds;
    }
    result.map(|()| (counts, printed))
}

fn schedule(
    runs: &mut [BlockRun<'_>],
    live: &mut [bool],
    state: &RefCell<Cluster>,
) -> Result<(), SimError> {
    loop {
        let mut progressed = false;
        for (b, run) in runs.iter_mut().enumerate() {
            if !live[b] {
                continue;
            }
            let Some(mem) = state.borrow_mut().mems[b].take() else {
                continue;
            };
            run.put_shared(mem);
            let round = run.round();
            // A block that ran to its end keeps no shared memory: a later access of it from
            // another block is out of bounds (CUDA: a block's shared memory is gone once it
            // exits).
            let mem = run.take_shared();
            if !matches!(round, Ok(Round::Done)) {
                state.borrow_mut().mems[b] = Some(mem);
            }
            match round {
                Ok(Round::Done) => {
                    live[b] = false;
                    progressed = true;
                    run.finish(Ok(()))?;
                }
                Ok(Round::Running { progressed: p }) => progressed |= p,
                Err(e) => return run.finish(Err(e)),
            }
        }
        let Some(first) = live.iter().position(|l| *l) else {
            return Ok(());
        };
        if !progressed {
            return Err(deadlock(&runs[first], runs, live));
        }
    }
}

/// The fault of a cluster whose live blocks can no longer go on.
fn deadlock(first: &BlockRun<'_>, runs: &[BlockRun<'_>], live: &[bool]) -> SimError {
    let (waiting, exited) = split_live(runs, live);
    let spin = waiting
        .iter()
        .find_map(|r| r.cluster_waiting().into_iter().next().map(|s| (r, s)));
    // A thread that will never arrive: one that exited, in a block that exited or not.
    let exited_at = (exited.iter().chain(waiting.iter()))
        .find_map(|r| r.exits().into_iter().next())
        .map(|(_, at)| at);
    let problem = ParticipationProblem::ClusterBarrier {
        waiting_blocks: waiting.iter().map(|r| r.ctaid()).collect(),
        exited_blocks: exited.iter().map(|r| r.ctaid()).collect(),
        exited_at,
    };
    match spin {
        Some((run, (_, at))) => SimError::Participation(Box::new(ParticipationFault {
            block: run.ctaid(),
            at,
            problem,
            waiting: run.cluster_waiting().into_iter().map(|(t, _)| t).collect(),
            absent: Vec::new(),
        })),
        None => first.stuck_error(),
    }
}

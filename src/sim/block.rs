//! One block at a time: thread states, the scheduler, and the completion of barriers and warp
//! collectives.
//!
//! Each thread runs on its own (as on Volta and later) until it reaches a collective, exits,
//! faults or spends a quantum. When no thread can run, every collective whose participants
//! have all arrived completes; if none can, the block is stuck and the run ends with a
//! participation fault that says who waits where and who is missing. A stuck state is always
//! reported, whatever the options say.
//!
//! Participation rules (strict, the default):
//! - `bar.sync id` without a count needs every thread of the block at the same instruction;
//!   a thread that exited never arrives (the hardware would release the barrier; the checker
//!   calls it a fault, because the kernel's correctness then rests on who exited);
//! - `bar.sync id, count` completes for the first `count / 32` whole warps to arrive at the
//!   same instruction (arrival is per warp, as the hardware counts it: every lane of the
//!   warp must be there);
//! - a warp collective completes when every non-exited lane of its member mask waits at the
//!   same instruction with the same mask (PTX excludes exited lanes; reading such a lane's
//!   value gives an undefined value); a lane outside its own mask is a fault;
//! - `activemask` needs nobody: it returns the lanes of the warp that wait at it together.
//!
//! With participation checking off, the hardware's rules apply instead: exited threads do not
//! hold barriers up, barrier instances gather at any `bar.sync` with the same id and count,
//! and warp collectives gather lanes at any instruction of the same kind, mode and type.
//!
//! Special registers: `%warpid` is the warp's index in the block and `%nwarpid` the block's
//! number of warps (a GPU's physical ids differ; kernels must not rely on them). `%clock64`
//! and `%globaltimer` read the number of thread-instructions the block has run so far, which
//! only grows within a block.

use super::SimOptions;
use super::control::{Monitor, POLL_STEPS};
use super::decode::{Coll, NONE, Program};
use super::error::{
    AbsentGroup, AbsentState, Access, GlobalRaceFault, MemoryFault, ParticipationFault,
    ParticipationProblem, RaceFault, SimError, ThreadRef, UninitFault, UninitOrigin, UseKind,
};
use super::exec::{self, Env, Fault, NEVER, Segment, SharedMem, Stop};
use super::global_race::GlobalRaces;

mod cluster;
mod grid;
mod report;
use super::cluster::Cluster;
use super::memory::GlobalView;
use super::race::RaceState;
use crate::ptx::{Dim, ShflMode, Special, VoteMode};
use std::cell::RefCell;

/// An ordered load a thread stopped at: the pc after it, a hash of the thread's registers.
type SpinKey = (u32, u64);

/// No ordered load stopped at.
const NO_SPIN: SpinKey = (u32::MAX, 0);

/// Instructions a thread runs before others get a turn (so spin-waits make progress).
const QUANTUM: u64 = 1 << 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Ready,
    Waiting,
    Exited,
}

/// Counters one block adds to the launch report.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Counts {
    pub steps: u64,
    pub barriers: u64,
    pub warp_collectives: u64,
    pub rounds: u64,
}

/// Where a block stands after a scheduling round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Round {
    /// Every thread exited.
    Done,
    /// Threads remain. `progressed`: something changed that could let another block (or this
    /// one) go on — a thread ran to a collective, exited or spent a quantum, a collective
    /// completed, or global memory was written — rather than threads only spinning on
    /// unchanged memory.
    Running { progressed: bool },
}

/// The shape of a launch.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub dynamic_smem: u32,
    /// The cluster shape (`[1, 1, 1]` outside clusters; the launch sets it).
    pub cluster: [u32; 3],
}

impl Shape {
    /// A launch's shape outside clusters.
    pub(crate) fn new(grid: [u32; 3], block: [u32; 3], dynamic_smem: u32) -> Shape {
        Shape {
            grid,
            block,
            dynamic_smem,
            cluster: [1, 1, 1],
        }
    }
}

/// The reusable state of one worker running blocks.
pub(crate) struct BlockRun<'a> {
    prog: &'a Program,
    opts: &'a SimOptions,
    global: &'a GlobalView<'a>,
    params: &'a [u8],
    shape: Shape,
    nthreads: usize,
    nwarps: usize,
    stride: usize,
    ctaid: [u32; 3],
    regs: Vec<u64>,
    origin: Vec<u32>,
    row: Vec<u64>,
    origin_row: Vec<u32>,
    pc: Vec<u32>,
    status: Vec<Status>,
    arrival: Vec<u64>,
    /// Per thread: the ordered load it last stopped at, as its pc and a hash of the thread's
    /// registers then ([`NO_SPIN`]: none). Stopping at the same load with every register as
    /// it was is a poll that saw nothing new; any other stop at an ordered load is progress
    /// (a load read once, one in a loop that moves on, or one that saw memory change).
    spun_at: Vec<SpinKey>,
    shared: SharedMem,
    local: Vec<u8>,
    local_written: Vec<u8>,
    hint: usize,
    seq: u64,
    counts: Counts,
    monitor: &'a Monitor<'a>,
    /// `counts.steps` at the last report to the monitor, and blocks finished since.
    reported: u64,
    unreported_blocks: u64,
    /// The block's first undefined-value fault: (thread, pc, fault).
    pending: Option<(usize, u32, Fault)>,
    /// Thread-instructions the current block ran.
    block_steps: u64,
    /// Global stores and atomics executed so far (a spinning block waits for one).
    global_writes: u64,
    /// In a cooperative launch with race checking: the launch's global race checker.
    global_races: Option<&'a RefCell<GlobalRaces>>,
    /// In a cluster launch: the cluster's shared state and the block's rank in it.
    cluster: Option<(&'a RefCell<Cluster>, u32)>,
    /// What the block's threads printed: (thread, text), in the order they printed.
    printed: Vec<(u32, String)>,
    /// What every block this worker ran printed: (block, thread, text).
    output: Vec<(u64, u32, String)>,
}

impl<'a> BlockRun<'a> {
    pub(crate) fn new(
        prog: &'a Program,
        opts: &'a SimOptions,
        global: &'a GlobalView<'a>,
        params: &'a [u8],
        shape: Shape,
        monitor: &'a Monitor<'a>,
    ) -> Self {
        let [bx, by, bz] = shape.block;
        let nthreads = (bx as usize) * (by as usize) * (bz as usize);
        let stride = prog.nslots.max(1);
        let smem = (prog.dyn_base as usize) + shape.dynamic_smem as usize;
        let mut row = vec![0u64; stride];
        let mut origin_row = vec![0u32; stride];
        let nregs: u32 = prog.reg_count.iter().sum();
        for (s, o) in origin_row.iter_mut().enumerate().take(nregs as usize) {
            *o = NEVER | s as u32;
        }
        for &(s, v) in &prog.consts {
            if let Some(r) = row.get_mut(s as usize) {
                *r = v;
            }
        }
        let local_bytes = opts.local_bytes as usize + prog.local_bytes as usize;
        BlockRun {
            prog,
            opts,
            global,
            params,
            shape,
            nthreads,
            nwarps: nthreads.div_ceil(32),
            stride,
            ctaid: [0; 3],
            regs: vec![0; nthreads * stride],
            origin: if opts.check_uninit {
                vec![0; nthreads * stride]
            } else {
                Vec::new()
            },
            row,
            origin_row,
            pc: vec![0; nthreads],
            status: vec![Status::Ready; nthreads],
            arrival: vec![0; nthreads],
            spun_at: vec![NO_SPIN; nthreads],
            shared: SharedMem {
                segments: prog
                    .shared
                    .iter()
                    .filter(|s| s.bytes > 0)
                    .map(|s| Segment {
                        len: s.bytes,
                        offset: s.offset,
                    })
                    .chain([Segment {
                        len: shape.dynamic_smem,
                        offset: prog.dyn_base,
                    }])
                    .collect(),
                data: vec![0; smem],
                written: vec![0; smem],
                race: opts.check_races.then(RaceState::new),
            },
            local: vec![0; nthreads * local_bytes],
            local_written: vec![0; nthreads * local_bytes],
            hint: 0,
            seq: 0,
            counts: Counts::default(),
            monitor,
            reported: 0,
            unreported_blocks: 0,
            pending: None,
            block_steps: 0,
            global_writes: 0,
            global_races: None,
            cluster: None,
            printed: Vec::new(),
            output: Vec::new(),
        }
    }

    /// What the blocks this worker ran printed, as (block, thread, text); leaves none.
    pub(crate) fn take_printed(&mut self) -> Vec<(u64, u32, String)> {
        std::mem::take(&mut self.output)
    }

    /// Counters accumulated over every block this worker ran.
    pub(crate) fn counts(&self) -> Counts {
        self.counts
    }

    /// Reports the steps and blocks since the last report to the monitor; whether the launch
    /// goes on.
    pub(crate) fn report(&mut self) -> bool {
        let steps = self.counts.steps - self.reported;
        self.reported = self.counts.steps;
        let blocks = std::mem::take(&mut self.unreported_blocks);
        self.monitor.report(steps, blocks)
    }

    /// Hands the counts not yet reported to the monitor, checking nothing: the worker is done.
    pub(crate) fn flush(&mut self) {
        let steps = self.counts.steps - self.reported;
        self.reported = self.counts.steps;
        let blocks = std::mem::take(&mut self.unreported_blocks);
        self.monitor.add(steps, blocks);
    }

    /// Reports when enough steps ran since the last report; whether the launch goes on.
    #[inline]
    fn report_due(&mut self) -> bool {
        self.counts.steps - self.reported < POLL_STEPS || self.report()
    }

    fn tid3(&self, t: usize) -> [u32; 3] {
        let [bx, by, _] = self.shape.block;
        let (bx, by) = (bx as usize, by as usize);
        [
            (t % bx) as u32,
            ((t / bx) % by) as u32,
            (t / (bx * by)) as u32,
        ]
    }

    fn thread_ref(&self, t: usize) -> ThreadRef {
        ThreadRef {
            block: self.ctaid,
            thread: self.tid3(t),
        }
    }

    fn special(&self, s: Special, t: usize) -> u64 {
        let d = |d: Dim| match d {
            Dim::X => 0,
            Dim::Y => 1,
            Dim::Z => 2,
        };
        let lane = (t % 32) as u32;
        let lt = (1u64 << lane) - 1;
        let le = (2u64 << lane) - 1;
        let v: u64 = match s {
            Special::Tid(x) => u64::from(self.tid3(t)[d(x)]),
            Special::Ntid(x) => u64::from(self.shape.block[d(x)]),
            Special::Ctaid(x) => u64::from(self.ctaid[d(x)]),
            Special::Nctaid(x) => u64::from(self.shape.grid[d(x)]),
            Special::ClusterNctaid(x) => u64::from(self.shape.cluster[d(x)]),
            Special::ClusterNctarank => self.shape.cluster.iter().map(|&c| u64::from(c)).product(),
            Special::Laneid => u64::from(lane),
            Special::Warpid => (t / 32) as u64,
            Special::Nwarpid => self.nwarps as u64,
            Special::LanemaskLt => lt,
            Special::LanemaskLe => le,
            Special::LanemaskGt => !le & 0xFFFF_FFFF,
            Special::LanemaskGe => !lt & 0xFFFF_FFFF,
            Special::DynamicSmemSize => u64::from(self.shape.dynamic_smem),
            Special::TotalSmemSize => {
                u64::from(self.prog.static_smem) + u64::from(self.shape.dynamic_smem)
            }
            // Read through a clock instruction, never through a slot.
            Special::Clock64 | Special::GlobalTimer => 0,
        };
        v
    }

    fn reset(&mut self, ctaid: [u32; 3]) {
        self.ctaid = ctaid;
        let stride = self.stride;
        for t in 0..self.nthreads {
            let regs = &mut self.regs[t * stride..(t + 1) * stride];
            regs.copy_from_slice(&self.row);
            if self.opts.check_uninit {
                self.origin[t * stride..(t + 1) * stride].copy_from_slice(&self.origin_row);
            }
        }
        for sp in &self.prog.specials {
            for t in 0..self.nthreads {
                let v = self.special(sp.special, t);
                if let Some(r) = self.regs.get_mut(t * stride + sp.slot as usize) {
                    *r = v;
                }
            }
        }
        self.pc.fill(0);
        self.status.fill(Status::Ready);
        self.arrival.fill(0);
        self.spun_at.fill(NO_SPIN);
        self.shared.data.fill(0);
        self.shared.written.fill(0);
        if let Some(r) = self.shared.race.as_mut() {
            r.reset(self.nthreads, self.shared.data.len());
        }
        self.local.fill(0);
        self.local_written.fill(0);
        self.seq = 0;
        self.pending = None;
    }

    /// Runs the block `ctaid` to completion.
    ///
    /// Faults end the run at once, except undefined-value faults: the first is kept and the
    /// block goes on, so that a race found later in the block is reported instead (a missing
    /// barrier usually shows first as a read of shared memory its writer has not yet written
    /// in this schedule). Any other fault after it reports the undefined value, which came
    /// first.
    pub(crate) fn run(&mut self, ctaid: [u32; 3]) -> Result<(), SimError> {
        let r = self.run_block(ctaid);
        self.finish(r)
    }

    /// After the started block ended with `r`: keeps what it printed and, where it ran to
    /// its end, counts it as done for the monitor.
    pub(crate) fn finish(&mut self, r: Result<(), SimError>) -> Result<(), SimError> {
        let ctaid = self.ctaid;
        let [gx, gy, _] = self.shape.grid.map(u64::from);
        let block = u64::from(ctaid[0]) + gx * (u64::from(ctaid[1]) + gy * u64::from(ctaid[2]));
        let lines = self.printed.drain(..).map(|(t, text)| (block, t, text));
        self.output.extend(lines);
        if r.is_ok() {
            self.unreported_blocks += 1;
            if !self.report_due() {
                return Err(self.stop_error());
            }
        }
        r
    }

    /// The error of a launch the monitor stopped.
    fn stop_error(&self) -> SimError {
        self.monitor
            .stop_error()
            .unwrap_or_else(|| self.step_limit(0))
    }

    fn run_block(&mut self, ctaid: [u32; 3]) -> Result<(), SimError> {
        self.start(ctaid)?;
        while let Round::Running { .. } = self.round()? {}
        Ok(())
    }

    /// Starts block `ctaid`: every thread at the first instruction, shared memory cleared.
    pub(crate) fn start(&mut self, ctaid: [u32; 3]) -> Result<(), SimError> {
        if self.monitor.stopped() {
            return Err(self.stop_error());
        }
        self.reset(ctaid);
        self.block_steps = 0;
        Ok(())
    }

    /// One scheduling round of the started block: every ready thread runs until it reaches a
    /// collective, exits, spins or spends a quantum; then every collective that can complete
    /// does. [`Round::Done`] once every thread exited; an error where the block faulted or
    /// is stuck (no thread can run and no collective complete, with no thread spinning).
    pub(crate) fn round(&mut self) -> Result<Round, SimError> {
        let limit = self.opts.max_steps;
        self.counts.rounds += 1;
        let mut yielded = false;
        let mut progressed = false;
        let writes = self.global_writes;
        for t in 0..self.nthreads {
            if self.status[t] != Status::Ready {
                continue;
            }
            let budget = QUANTUM.min(limit.saturating_sub(self.block_steps));
            if budget == 0 {
                return Err(self.first(self.step_limit(t)));
            }
            let (stop, s) = self.run_thread(t, self.block_steps, budget);
            self.block_steps += s;
            self.counts.steps += s;
            if !self.report_due() {
                return Err(self.stop_error());
            }
            match stop {
                Stop::Coll => {
                    self.status[t] = Status::Waiting;
                    self.arrival[t] = self.seq;
                    self.seq += 1;
                    progressed = true;
                }
                Stop::Exit => {
                    self.status[t] = Status::Exited;
                    progressed = true;
                }
                Stop::Yield | Stop::Spin if self.block_steps >= limit => {
                    return Err(self.first(self.step_limit(t)));
                }
                Stop::Yield => {
                    yielded = true;
                    progressed = true;
                }
                Stop::Spin => {
                    yielded = true;
                    let key = self.spin_key(t);
                    if self.spun_at[t] != key {
                        self.spun_at[t] = key;
                        progressed = true;
                    }
                }
                Stop::Fault(
                    f @ (Fault::Race { .. } | Fault::GlobalRace { .. } | Fault::ClusterRace { .. }),
                ) => {
                    return Err(self.fault(t, self.pc[t], f));
                }
                Stop::Fault(f) => {
                    let e = self.fault(t, self.pc[t], f);
                    return Err(self.first(e));
                }
            }
        }
        let (completed, done) = match self.resolve() {
            Ok(x) => x,
            Err(e) => return Err(self.first(e)),
        };
        self.block_steps += done;
        if !yielded && !completed {
            if self.status.iter().all(|s| *s == Status::Exited) {
                return match self.pending {
                    Some((t, pc, f)) => Err(self.fault(t, pc, f)),
                    None => Ok(Round::Done),
                };
            }
            return Err(self.first(self.stuck()));
        }
        Ok(Round::Running {
            progressed: progressed || completed || self.global_writes != writes,
        })
    }

    /// The ordered load thread `t` just stopped at: its pc and a hash (FNV-1a) of the
    /// thread's registers.
    fn spin_key(&self, t: usize) -> SpinKey {
        let regs = &self.regs[t * self.stride..(t + 1) * self.stride];
        let hash = regs.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, r| {
            (h ^ r).wrapping_mul(0x0000_0100_0000_01b3)
        });
        (self.pc[t], hash)
    }

    /// `e`, unless an undefined-value fault came before it.
    fn first(&self, e: SimError) -> SimError {
        match self.pending {
            Some((t, pc, f)) => self.fault(t, pc, f),
            None => e,
        }
    }

    fn run_thread(&mut self, t: usize, clock: u64, budget: u64) -> (Stop, u64) {
        let stride = self.stride;
        let lb = self.opts.local_bytes as usize + self.prog.local_bytes as usize;
        let uninit = self.opts.check_uninit;
        let linear = self.linear_block();
        let mut env = Env {
            prog: self.prog,
            global: self.global,
            params: self.params,
            regs: &mut self.regs[t * stride..(t + 1) * stride],
            origin: if uninit {
                &mut self.origin[t * stride..(t + 1) * stride]
            } else {
                &mut []
            },
            shared: &mut self.shared,
            local: &mut self.local[t * lb..(t + 1) * lb],
            local_written: &mut self.local_written[t * lb..(t + 1) * lb],
            hint: &mut self.hint,
            tid: t as u32,
            clock,
            printed: &mut self.printed,
            pending: None,
            global_writes: &mut self.global_writes,
            global_races: self.global_races.map(|g| (g, linear)),
            cluster: self.cluster,
        };
        let pc = &mut self.pc[t];
        let out = if uninit {
            exec::run::<true>(&mut env, pc, budget)
        } else {
            exec::run::<false>(&mut env, pc, budget)
        };
        if let (None, Some((pc, f))) = (self.pending, env.pending) {
            self.pending = Some((t, pc, f));
        }
        out
    }

    fn coll_of(&self, t: usize) -> Option<Coll> {
        match self.prog.code.get(self.pc[t] as usize)?.inst {
            super::decode::Inst::Coll(i) => self.prog.colls.get(i as usize).copied(),
            _ => None,
        }
    }

    fn reg(&self, t: usize, slot: u32) -> u64 {
        self.regs
            .get(t * self.stride + slot as usize)
            .copied()
            .unwrap_or(0)
    }

    fn org(&self, t: usize, slot: u32) -> u32 {
        if !self.opts.check_uninit {
            return 0;
        }
        self.origin
            .get(t * self.stride + slot as usize)
            .copied()
            .unwrap_or(0)
    }

    fn set(&mut self, t: usize, slot: u32, v: u64, origin: u32) {
        let i = t * self.stride + slot as usize;
        if let Some(r) = self.regs.get_mut(i) {
            *r = v;
        }
        if let Some(o) = self.origin.get_mut(i) {
            *o = origin;
        }
    }

    /// Reads a collective operand, faulting when it is undefined.
    fn operand(&self, t: usize, slot: u32) -> Result<u64, SimError> {
        let o = self.org(t, slot);
        if o != 0 {
            return Err(self.fault(
                t,
                self.pc[t],
                Fault::Uninit {
                    use_kind: UseKind::Collective,
                    slot,
                    origin: o,
                },
            ));
        }
        Ok(self.reg(t, slot))
    }

    /// Completes every collective that can complete. Returns whether any did and how many
    /// thread-instructions they count.
    fn resolve(&mut self) -> Result<(bool, u64), SimError> {
        let mut progressed = false;
        let mut steps = 0;
        for w in 0..self.nwarps {
            let (p, s) = self.resolve_warp(w)?;
            progressed |= p;
            steps += s;
        }
        let (p, s) = self.resolve_barriers();
        self.counts.steps += steps + s;
        Ok((progressed | p, steps + s))
    }

    fn lanes(&self, w: usize) -> std::ops::Range<usize> {
        w * 32..((w + 1) * 32).min(self.nthreads)
    }

    fn lane_mask(&self, w: usize, status: Status) -> u32 {
        self.lanes(w)
            .filter(|t| self.status[*t] == status)
            .fold(0, |m, t| m | 1 << (t % 32))
    }

    fn resolve_warp(&mut self, w: usize) -> Result<(bool, u64), SimError> {
        let strict = self.opts.check_participation;
        let exited = self.lane_mask(w, Status::Exited);
        let exists = self.lanes(w).fold(0u32, |m, t| m | 1 << (t % 32));
        // Per waiting lane: the grouping key and the member mask.
        let mut key = [u32::MAX; 32];
        let mut mask = [0u32; 32];
        let mut waiting = 0u32;
        for t in self.lanes(w) {
            if self.status[t] != Status::Waiting {
                continue;
            }
            let Some(c) = self.coll_of(t) else { continue };
            let l = t % 32;
            match c {
                Coll::Bar { .. } => continue,
                Coll::Activemask { .. } => {
                    key[l] = self.pc[t];
                    mask[l] = 0;
                }
                _ => {
                    let m = self.operand(t, c.mask().unwrap_or(NONE))? as u32;
                    if m & (1 << l) == 0 {
                        return Err(self.not_in_mask(t, m));
                    }
                    key[l] = if strict { self.pc[t] } else { c.signature() };
                    mask[l] = m;
                }
            }
            waiting |= 1 << l;
        }
        let mut progressed = false;
        let mut steps = 0;
        let mut seen = 0u32;
        for l in 0..32 {
            if waiting & (1 << l) == 0 || seen & (1 << l) != 0 {
                continue;
            }
            let group = (0..32)
                .filter(|&j| waiting & (1 << j) != 0 && key[j] == key[l] && mask[j] == mask[l])
                .fold(0u32, |g, j| g | 1 << j);
            seen |= group;
            let is_activemask = matches!(self.coll_of(w * 32 + l), Some(Coll::Activemask { .. }));
            let required = if is_activemask {
                group
            } else {
                mask[l] & exists & !exited
            };
            if group != required {
                continue;
            }
            self.complete_warp(w, group)?;
            progressed = true;
            steps += u64::from(group.count_ones());
        }
        Ok((progressed, steps))
    }

    /// Executes a warp collective for lanes `group` of warp `w` and lets them go on.
    fn complete_warp(&mut self, w: usize, group: u32) -> Result<(), SimError> {
        let members: Vec<usize> = (0..32)
            .filter(|l| group & (1 << l) != 0)
            .map(|l| w * 32 + l)
            .collect();
        let Some(&first) = members.first() else {
            return Ok(());
        };
        let Some(kind) = self.coll_of(first) else {
            return Ok(());
        };
        match kind {
            Coll::Shfl { .. } => self.complete_shfl(w, &members, group)?,
            Coll::Vote { .. } => {
                let mut preds = 0u32;
                for &t in &members {
                    if let Some(Coll::Vote { src, negate, .. }) = self.coll_of(t) {
                        let p = (self.operand(t, src)? != 0) ^ negate;
                        preds |= u32::from(p) << (t % 32);
                    }
                }
                for &t in &members {
                    if let Some(Coll::Vote { mode, dst, .. }) = self.coll_of(t) {
                        let v = match mode {
                            VoteMode::All => u64::from(preds == group),
                            VoteMode::Any => u64::from(preds != 0),
                            VoteMode::Uni => u64::from(preds == group || preds == 0),
                            VoteMode::Ballot => u64::from(preds),
                        };
                        self.set(t, dst, v, 0);
                    }
                }
            }
            Coll::Match { .. } => {
                let mut vals = [0u64; 32];
                for &t in &members {
                    if let Some(Coll::Match { src, wide, .. }) = self.coll_of(t) {
                        let v = self.operand(t, src)?;
                        vals[t % 32] = if wide { v } else { v & 0xFFFF_FFFF };
                    }
                }
                let all_same = members.iter().all(|t| vals[t % 32] == vals[first % 32]);
                for &t in &members {
                    if let Some(Coll::Match { all, dst, .. }) = self.coll_of(t) {
                        let v = if all {
                            if all_same { group } else { 0 }
                        } else {
                            members
                                .iter()
                                .filter(|u| vals[*u % 32] == vals[t % 32])
                                .fold(0u32, |m, u| m | 1 << (u % 32))
                        };
                        self.set(t, dst, u64::from(v), 0);
                    }
                }
            }
            Coll::Redux { .. } => {
                let mut acc: Option<u64> = None;
                for &t in &members {
                    if let Some(Coll::Redux { f, src, .. }) = self.coll_of(t) {
                        let v = self.operand(t, src)?;
                        acc = Some(match acc {
                            Some(a) => f(a, v),
                            None => v,
                        });
                    }
                }
                for &t in &members {
                    if let Some(Coll::Redux { dst, .. }) = self.coll_of(t) {
                        self.set(t, dst, acc.unwrap_or(0), 0);
                    }
                }
            }
            Coll::Activemask { .. } => {
                for &t in &members {
                    if let Some(Coll::Activemask { dst }) = self.coll_of(t) {
                        self.set(t, dst, u64::from(group), 0);
                    }
                }
            }
            Coll::WarpSync { .. } | Coll::Bar { .. } => {}
        }
        if !matches!(kind, Coll::Activemask { .. }) {
            self.counts.warp_collectives += 1;
        }
        // Only `bar.warp.sync` orders memory among its lanes: the PTX ISA promises no memory
        // ordering for `shfl`, `vote`, `match` or `redux`, which only exchange registers.
        if matches!(kind, Coll::WarpSync { .. })
            && let Some(r) = self.shared.race.as_mut()
        {
            r.warp_sync(w, group);
        }
        for &t in &members {
            self.pc[t] += 1;
            self.status[t] = Status::Ready;
        }
        Ok(())
    }

    /// `shfl.sync` as the PTX ISA defines it: `b` selects the source lane or delta, `c` packs
    /// the clamp (bits 0-4) and the segment mask (bits 8-12).
    fn complete_shfl(&mut self, w: usize, members: &[usize], group: u32) -> Result<(), SimError> {
        let mut out = Vec::with_capacity(members.len());
        for &t in members {
            let Some(Coll::Shfl {
                mode,
                dst,
                pred,
                b,
                c,
                ..
            }) = self.coll_of(t)
            else {
                continue;
            };
            let lane = (t % 32) as i64;
            let bval = (self.operand(t, b)? & 31) as i64;
            let cval = self.operand(t, c)?;
            let clamp = (cval & 31) as i64;
            let seg = ((cval >> 8) & 31) as i64;
            let max_lane = (lane & seg) | (clamp & !seg);
            let min_lane = lane & seg;
            let (j, pval) = match mode {
                ShflMode::Up => (lane - bval, lane - bval >= max_lane),
                ShflMode::Down => (lane + bval, lane + bval <= max_lane),
                ShflMode::Bfly => (lane ^ bval, (lane ^ bval) <= max_lane),
                ShflMode::Idx => {
                    let j = min_lane | (bval & !seg);
                    (j, j <= max_lane)
                }
            };
            let j = if pval { j } else { lane };
            let outside = (0, self.pc[t] + 1);
            let (v, o) = if (0..32).contains(&j) && group & (1 << j) != 0 {
                let tj = w * 32 + j as usize;
                match self.coll_of(tj) {
                    Some(Coll::Shfl { src, .. }) => (self.reg(tj, src), self.org(tj, src)),
                    _ => outside,
                }
            } else {
                outside
            };
            out.push((t, dst, pred, v, o, pval));
        }
        for (t, dst, pred, v, o, pval) in out {
            self.set(t, dst, v & 0xFFFF_FFFF, o);
            if pred != NONE {
                self.set(t, pred, u64::from(pval), 0);
            }
        }
        Ok(())
    }

    /// Completes the barriers whose warps have all arrived.
    fn resolve_barriers(&mut self) -> (bool, u64) {
        let strict = self.opts.check_participation;
        // Warps that arrived: (warp, id, count, instruction key, arrival of its last lane).
        let mut arrived: Vec<(usize, u32, Option<u32>, u32, u64)> = Vec::new();
        for w in 0..self.nwarps {
            let mut info: Option<(u32, Option<u32>, u32)> = None;
            let mut seq = 0;
            let mut ok = true;
            for t in self.lanes(w) {
                match self.status[t] {
                    Status::Exited if !strict => continue,
                    Status::Exited | Status::Ready => {
                        ok = false;
                        break;
                    }
                    Status::Waiting => {
                        let Some(Coll::Bar { id, count }) = self.coll_of(t) else {
                            ok = false;
                            break;
                        };
                        let key = if strict { self.pc[t] } else { 0 };
                        match info {
                            None => info = Some((id, count, key)),
                            Some(i) if i == (id, count, key) => {}
                            Some(_) => {
                                ok = false;
                                break;
                            }
                        }
                        seq = seq.max(self.arrival[t]);
                    }
                }
            }
            if let (true, Some((id, count, key))) = (ok, info) {
                arrived.push((w, id, count, key, seq));
            }
        }
        if arrived.is_empty() {
            return (false, 0);
        }
        let live = (0..self.nwarps)
            .filter(|&w| strict || self.lanes(w).any(|t| self.status[t] != Status::Exited))
            .count();
        let mut progressed = false;
        let mut steps = 0;
        let mut taken = vec![false; arrived.len()];
        for i in 0..arrived.len() {
            if taken[i] {
                continue;
            }
            let (_, id, count, key, _) = arrived[i];
            let mut group: Vec<(u64, usize)> = Vec::new();
            for (k, a) in arrived.iter().enumerate() {
                if !taken[k] && a.1 == id && a.2 == count && a.3 == key {
                    taken[k] = true;
                    group.push((a.4, a.0));
                }
            }
            let need = match count {
                None => live,
                Some(c) => (c / 32) as usize,
            };
            if group.len() < need || (count.is_none() && group.len() != need) {
                continue;
            }
            group.sort_unstable();
            let release: Vec<usize> = group.iter().take(need).map(|g| g.1).collect();
            if let Some(r) = self.shared.race.as_mut() {
                r.barrier(&release);
            }
            for &w in &release {
                for t in self.lanes(w) {
                    if self.status[t] == Status::Waiting {
                        self.pc[t] += 1;
                        self.status[t] = Status::Ready;
                        steps += 1;
                    }
                }
            }
            self.counts.barriers += 1;
            progressed = true;
        }
        (progressed, steps)
    }

    /// The participation fault of a block in which nothing can run or complete.
    fn stuck(&self) -> SimError {
        let strict = self.opts.check_participation;
        let n = self.nthreads;
        let Some(t0) = (0..n).find(|&t| self.status[t] == Status::Waiting) else {
            return self.step_limit(0);
        };
        let at = self.prog.location(self.pc[t0]);
        let c0 = self.coll_of(t0);
        let (here, required, problem): (Vec<usize>, Vec<usize>, ParticipationProblem) = match c0 {
            Some(Coll::Bar { id, count }) => {
                let here: Vec<usize> = (0..n)
                    .filter(|&t| {
                        self.status[t] == Status::Waiting
                            && (!strict || self.pc[t] == self.pc[t0])
                            && matches!(self.coll_of(t), Some(Coll::Bar { id: i, count: c }) if i == id && c == count)
                    })
                    .collect();
                let required = (0..n)
                    .filter(|&t| strict || self.status[t] != Status::Exited)
                    .collect();
                let problem = match count {
                    None => ParticipationProblem::NeverArrive,
                    Some(count) => {
                        let full = (0..self.nwarps)
                            .filter(|&w| self.lanes(w).all(|t| here.contains(&t)))
                            .count();
                        ParticipationProblem::CountNotReached {
                            count,
                            arrived: (full * 32) as u32,
                        }
                    }
                };
                (here, required, problem)
            }
            Some(c) => {
                let m = self.reg(t0, c.mask().unwrap_or(NONE)) as u32;
                let key = |t: usize| {
                    if strict {
                        Some(self.pc[t])
                    } else {
                        self.coll_of(t).map(|c| c.signature())
                    }
                };
                let w = t0 / 32;
                let mask_of = |t: usize| {
                    self.coll_of(t)
                        .and_then(|c| c.mask())
                        .map(|s| self.reg(t, s) as u32)
                };
                let here = self
                    .lanes(w)
                    .filter(|&t| {
                        self.status[t] == Status::Waiting
                            && key(t) == key(t0)
                            && mask_of(t) == Some(m)
                    })
                    .collect();
                let required = self
                    .lanes(w)
                    .filter(|&t| m & (1 << (t % 32)) != 0 && self.status[t] != Status::Exited)
                    .collect();
                (here, required, ParticipationProblem::NeverArrive)
            }
            None => (vec![t0], vec![t0], ParticipationProblem::NeverArrive),
        };
        let mut absent: Vec<AbsentGroup> = Vec::new();
        let mut keys: Vec<(Status, u32, Option<u32>)> = Vec::new();
        for &t in &required {
            if here.contains(&t) {
                continue;
            }
            let mask = match self.status[t] {
                Status::Waiting => self
                    .coll_of(t)
                    .and_then(|c| c.mask())
                    .map(|s| self.reg(t, s) as u32),
                _ => None,
            };
            let k = (self.status[t], self.pc[t], mask);
            match keys.iter().position(|x| *x == k) {
                Some(i) => absent[i].threads.push(t as u32),
                None => {
                    let at = self.prog.location(self.pc[t]);
                    let state = match self.status[t] {
                        Status::Exited => AbsentState::Exited { at },
                        _ => AbsentState::Waiting { at, mask },
                    };
                    keys.push(k);
                    absent.push(AbsentGroup {
                        threads: vec![t as u32],
                        state,
                    });
                }
            }
        }
        SimError::Participation(Box::new(ParticipationFault {
            block: self.ctaid,
            at,
            problem,
            waiting: here.iter().map(|&t| t as u32).collect(),
            absent,
        }))
    }

    fn not_in_mask(&self, t: usize, mask: u32) -> SimError {
        SimError::Participation(Box::new(ParticipationFault {
            block: self.ctaid,
            at: self.prog.location(self.pc[t]),
            problem: ParticipationProblem::NotInMask { mask },
            waiting: vec![t as u32],
            absent: Vec::new(),
        }))
    }

    fn step_limit(&self, t: usize) -> SimError {
        SimError::StepLimit {
            limit: self.opts.max_steps,
            thread: self.thread_ref(t),
            at: self.prog.location(self.pc.get(t).copied().unwrap_or(0)),
        }
    }

    /// The error for a fault of thread `t` at instruction `pc`.
    fn fault(&self, t: usize, pc: u32, f: Fault) -> SimError {
        let thread = self.thread_ref(t);
        let at = self.prog.location(pc);
        let mem = |space, address, size| {
            let (nearest, freed) = self.nearest(space, address);
            Box::new(MemoryFault {
                thread,
                at: at.clone(),
                space,
                address,
                size,
                nearest,
                freed,
            })
        };
        match f {
            Fault::Bounds { space, addr, size } => SimError::OutOfBounds(mem(space, addr, size)),
            Fault::PrintFormat(byte) => SimError::PrintFormat {
                thread,
                at: at.clone(),
                byte,
            },
            Fault::Misaligned { space, addr, size } => SimError::Misaligned(mem(space, addr, size)),
            Fault::Uninit {
                use_kind,
                slot,
                origin,
            } => SimError::Uninitialized(Box::new(UninitFault {
                thread,
                at: at.clone(),
                use_kind,
                register: self.prog.slot_name(slot),
                origin: self.origin_of(origin),
            })),
            Fault::UninitMemory { space, addr } => SimError::Uninitialized(Box::new(UninitFault {
                thread,
                at: at.clone(),
                use_kind: UseKind::Atomic,
                register: None,
                origin: UninitOrigin::Memory {
                    space,
                    address: addr,
                },
            })),
            Fault::ClusterRace { hit, kind } => self.cluster_race(t, pc, hit, kind),
            Fault::GlobalRace { hit, kind } => {
                let [gx, gy, _] = self.shape.grid;
                let b = hit.block;
                let block = [b % gx, (b / gx) % gy, b / (gx * gy)];
                SimError::GlobalRace(Box::new(GlobalRaceFault {
                    address: hit.addr,
                    first: Access {
                        thread: ThreadRef {
                            block,
                            thread: self.tid3(hit.thread as usize),
                        },
                        kind: hit.kind,
                        at: self.prog.location(hit.pc),
                    },
                    second: Access {
                        thread,
                        kind,
                        at: at.clone(),
                    },
                }))
            }
            Fault::Race { hit, kind } => SimError::Race(Box::new(RaceFault {
                address: self.shared_address(hit.byte),
                symbol: self
                    .prog
                    .shared_symbol(u64::from(hit.byte), self.shape.dynamic_smem)
                    .map(|s| s.name.clone()),
                first: Access {
                    thread: self.thread_ref(hit.other as usize),
                    kind: hit.other_kind,
                    at: self.prog.location(hit.other_pc),
                },
                second: Access {
                    thread,
                    kind,
                    at: at.clone(),
                },
            })),
        }
    }
}

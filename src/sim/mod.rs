//! A CPU simulator that executes the PTX text the code generator emits, with checkers.
//!
//! The simulator parses the same text the GPU gets ([`parse()`]), decodes each entry once into a
//! compact program ([`Simulator::load_module`]), and runs a grid of blocks over simulated
//! global memory that it owns ([`Simulator::alloc`], [`Simulator::write`],
//! [`Simulator::read`], [`Simulator::launch`]). It is the embedded default backend: with no
//! GPU, every kernel runs here.
//!
//! ```
//! use coopgraph::sim::{SimOptions, Simulator};
//! let ptx = "\
//! .version 7.0
//! .target sm_80
//! .address_size 64
//!
//! .visible .entry twice(
//! \t.param .u64 p
//! )
//! {
//! \t.reg .b32 %r<2>;
//! \t.reg .b64 %rd<4>;
//!
//! \tld.param.u64 %rd0, [p];
//! \tmov.u32 %r0, %tid.x;
//! \tmul.wide.u32 %rd1, %r0, 4;
//! \tadd.u64 %rd2, %rd0, %rd1;
//! \tld.global.u32 %r1, [%rd2];
//! \tshl.b32 %r1, %r1, 1;
//! \tst.global.u32 [%rd2], %r1;
//! \tret;
//! }
//! ";
//! let mut sim = Simulator::new(SimOptions::default());
//! let m = sim.load_module(ptx)?;
//! let buf = sim.alloc(4 * 32)?;
//! let data: Vec<u8> = (0u32..32).flat_map(|i| i.to_le_bytes()).collect();
//! sim.write(buf, &data)?;
//! sim.launch(&m, "twice", [1, 1, 1], [32, 1, 1], 0, &[buf])?;
//! let mut out = vec![0u8; 4 * 32];
//! sim.read(buf, &mut out)?;
//! assert_eq!(u32::from_le_bytes([out[12], out[13], out[14], out[15]]), 6);
//! # Ok::<(), coopgraph::sim::SimError>(())
//! ```
//!
//! # Execution model
//! Threads run independently, as on Volta and later: each is an interpreter with its own pc
//! and registers (a flat array of typed slots: `%p`, `%r`, `%rd`, `%f`, `%fd`), and runs until
//! it reaches a collective (barrier, shuffle, vote, match, redux, warp sync, activemask) or
//! exits (a thread that spins also yields after a quantum, so flag waits make progress).
//! When no thread can run, every collective whose participants have all arrived completes:
//! - `bar.sync id` without a count needs every thread of the block at the same instruction;
//!   `bar.sync id, count` completes for the first `count / 32` whole warps to arrive at the
//!   same instruction (arrival is per warp, as the hardware counts it);
//! - a warp collective needs every non-exited lane of its member mask at the same
//!   instruction with the same mask (a shuffle that reads an exited or non-member lane gets
//!   an undefined value); `activemask` needs nobody and returns the lanes of the warp that
//!   wait at it together.
//!
//! Blocks run one after another in linear order (or spread over [`SimOptions::threads`]
//! workers, or interleaved in a chosen order: [`SimOptions::block_order`]); global stores are
//! visible to later blocks and after the launch, as on the GPU.
//! A cooperative launch ([`Simulator::launch_cooperative`], for kernels with grid barriers)
//! runs every block at once instead, interleaved a scheduling round at a time; a thread that
//! polls memory with an ordered load (`ld.acquire`, `ld.relaxed`) yields after it, so the
//! blocks a grid barrier waits for get to run (as does a thread that runs `nanosleep`).
//! Each static shared declaration, and then the dynamic part (where every `.extern .shared`
//! declaration starts), has addresses of its own: declaration `k` is at `k` MiB, with nothing
//! mapped between the end of one and the start of the next (a gap larger than any block's
//! shared memory), as global allocations have gaps between them. So accesses in bounds see
//! what the GPU's do, and an access past or below a declaration (a 32-bit address that
//! wrapped below the first one included) is out of bounds of that declaration instead of
//! reaching its neighbour's bytes. Kernels must not rely on the numeric value of a shared
//! symbol's address (the GPU's differ too). `%warpid` is the warp's index in the block and
//! `%nwarpid` the block's warp count; `%clock64` and `%globaltimer` count the block's
//! thread-instructions so far. Atomics (`atom`, `red`) run one at a time in the schedule's
//! order, each a single read-modify-write; every access is sequentially consistent here, so
//! the memory orders and scopes they carry (`.acq_rel.gpu`, ...) hold trivially.
//!
//! Invariants:
//! - nothing in the simulator panics on any input; every problem is a [`SimError`] naming the
//!   PTX line, the op comment above it and the threads involved;
//! - a kernel never hangs the simulator: a stuck block is a participation fault, a block
//!   that runs more than [`SimOptions::max_steps`] thread-instructions is a step-limit error,
//!   and a whole launch (2^31 blocks of sane ones included) can be bounded and cancelled (see
//!   below);
//! - results are deterministic: the same launch on the same memory gives the same memory and
//!   report, with one worker or many, for kernels whose blocks do not race with one another;
//! - arithmetic gives the bits an H200 gives for the same PTX (checked instruction by
//!   instruction, NaN payloads and division by zero included), except the `.approx`
//!   functions, which are computed with Rust's std and differ in the last bits; the decoder
//!   also refuses the forms the driver's JIT refuses (8/16-bit types outside `ld`/`st`/`cvt`,
//!   integer literals as float operands, `cvt` rounding modifiers the conversion does not
//!   take).
//!
//! # Bounding and watching a launch
//! [`SimOptions::budget`] limits a whole launch's thread-instructions and wall time, and
//! [`SimOptions::progress`] is called as it goes ([`Progress`]: blocks done of the grid's,
//! thread-instructions so far, time) and may answer [`Control::Cancel`]. A launch that passes
//! its budget or is cancelled stops within about 65536 thread-instructions per worker, even
//! inside a long block, with [`SimError::Stopped`] saying why and how far it got; global
//! memory keeps what the blocks that ran wrote. A fault found before the stop, in an earlier
//! block, is reported instead. The simulator is `Sync`: modules load
//! ([`SimModule::load`]) and host copies run while a launch runs on another thread.
//!
//! # Checkers
//! All are on by default; [`SimOptions`] turns each off. Every report names the PTX line,
//! the op comment above it and the threads; none depends on the budget or the callback.
//! - **participation** (always on in effect: a stuck state is always an error): reports a
//!   barrier or warp collective that some required thread never reaches — a divergent
//!   branch, an exit before a `bar.sync`, a member mask naming lanes that wait elsewhere, a
//!   lane outside its own mask, different collective instructions, a counted barrier that
//!   cannot fill — with the waiting threads, the absent ones and where each of those is.
//!   In a cooperative launch, a pass over every live block in which nothing changes (threads
//!   only spin on memory no one writes) is a fault too: blocks wait at a grid barrier that a
//!   block which exited, or waits elsewhere, never arrives at
//!   ([`ParticipationProblem::GridBarrier`], naming the barrier's op and the blocks that
//!   left). In a cluster launch (an entry with `.reqnctapercluster` or cluster
//!   instructions: the blocks of each cluster run together, see the `cluster` module), a
//!   cluster barrier some thread of the cluster never arrives at is such a fault
//!   ([`ParticipationProblem::ClusterBarrier`]).
//!   Turned off, the hardware's rules apply instead: exited threads release barriers, and
//!   barrier or warp-collective instances gather across instructions of the same kind.
//! - **races**: reports two accesses to the same shared-memory byte by different threads, at
//!   least one a write and not both atomic, that nothing orders. Orderings: program order in
//!   a thread; a completed `bar.sync` orders what its participating threads did before it
//!   with what they do after it; a completed `bar.warp.sync` does the same for its lanes;
//!   orderings compose. `membar`, `activemask` and the other warp collectives (`shfl.sync`,
//!   `vote.sync`, `match.sync`, `redux.sync`) order nothing: they make lanes meet, but the PTX
//!   ISA promises memory ordering among lanes only for `bar.warp.sync`. Every such pair in the run's schedule is found.
//!   Global memory is checked in cooperative launches, between blocks: a plain write and
//!   another block's plain read or write of the same byte race unless a release (an atomic
//!   with `.release` or `.acq_rel`) and an acquire of the value it published (an atomic with
//!   `.acquire` or `.acq_rel`, or `ld.acquire`) order them, as a grid barrier does
//!   ([`SimError::GlobalRace`]). Threads of one block are not checked against one another
//!   there. In a cluster launch, shared memory is checked between the blocks of a cluster
//!   too (distributed shared memory): an access by one block and a write by another to the
//!   same byte race unless a completed cluster barrier orders them
//!   ([`SimError::ClusterRace`]); `.shared::cluster` accesses past the cluster's ranks or a
//!   declaration are out of bounds ([`MemSpace::Cluster`]).
//! - **out of bounds** (always on): reports accesses outside every live allocation (global),
//!   outside every shared declaration (shared: each is checked on its own, so an index past
//!   one array into the next, or into the code generator's scratch, is out of bounds, not
//!   another array's value or a race), outside every `.local` declaration and the thread's
//!   window (local; see [`SimOptions::local_bytes`]; each declaration is at an address of its
//!   own, so an index past one local array is out of bounds, not another's element), outside
//!   every `.const` declaration (const, read-only, each at an address of its own too) or
//!   outside a parameter, and misaligned accesses, with the
//!   nearest buffer's extent and, for shared memory, what the declaration's comment says it
//!   is (the code generator declares each user shared array on its own, `smem0` as the IR
//!   listing names it, and writes its type, length and source line there). Shared arrays past
//!   the 48 KiB static limit live in the planned dynamic window, and are checked against that
//!   window only (see [`SharedLayout`](crate::planner::SharedLayout)).
//! - **uninitialized**: tracks a defined bit per register and per byte of shared, local and
//!   global memory, propagates undefinedness through arithmetic like valgrind's memcheck, and
//!   reports when an undefined value reaches an observable use: a store's value or address, a
//!   guard or branch predicate (but that of a select branch, whose skipped code only writes
//!   registers that a `selp` on the same predicate merges: see
//!   [`SELECT_LABEL_PREFIX`](crate::ptx::SELECT_LABEL_PREFIX)), a collective's operand (a shuffled value itself propagates),
//!   or an atomic (including the memory it updates). The report says where the value became
//!   undefined. Registers are tracked whole: a result is undefined when any operand is.
//!
//! One fault ends a launch, and it is the block's first, with one exception: when a block has
//! both an undefined-value fault and a later race, the race is reported, because a missing
//! barrier usually shows first as a read of shared memory that its writer, scheduled later,
//! has not yet written. Blocks run in linear order and the first faulting block is reported.

mod alu;
mod block;
mod cluster;
mod control;
mod coop;
#[cfg(test)]
mod coverage;
mod decode;
mod entry_text;
mod error;
mod exec;
mod global_race;
#[cfg(test)]
mod known_results;
mod memory;
mod parse;
mod printf;
mod race;
mod symbols;

pub use control::{
    Budget, Control, PROGRESS_INTERVAL, Progress, ProgressHook, StopReason, Stopped,
};
pub use entry_text::entry_text;
pub use error::{
    AbsentGroup, AbsentState, Access, AccessKind, ClusterRaceFault, Extent, GlobalRaceFault,
    InvalidReason, LaunchProblem, Location, MemSpace, MemoryFault, ParseError, ParseReason,
    ParticipationFault, ParticipationProblem, RaceFault, SimError, ThreadRef, UninitFault,
    UninitOrigin, UseKind,
};
pub use parse::parse;

use crate::ptx::Arch;
use crate::ptx::Module;
use block::{BlockRun, Counts, Shape};
use control::Monitor;
use decode::Program;
use memory::GlobalMemory;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// The most bytes of local memory a thread can have (512 KiB, as on every supported GPU):
/// the bound of [`SimOptions::local_bytes`], which each block's threads hold at once.
pub const MAX_LOCAL_BYTES: u32 = 512 * 1024;

/// What the simulator checks and how it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimOptions {
    /// Report shared-memory races.
    pub check_races: bool,
    /// Report undefined values reaching observable uses.
    pub check_uninit: bool,
    /// Apply the strict participation rules (a stuck block is reported either way).
    pub check_participation: bool,
    /// Most thread-instructions one block may run before it is reported as runaway.
    pub max_steps: u64,
    /// Worker threads that run blocks in parallel (1 runs them in order on the caller's).
    pub threads: usize,
    /// Bytes of local memory each thread may address in its window (`[0, local_bytes)` of the
    /// `.local` space), beside its `.local` declarations (each at an address of its own and
    /// checked on its own). Generated kernels address only their declarations, so the default
    /// is 0. A launch whose window and declarations pass [`MAX_LOCAL_BYTES`] is refused.
    pub local_bytes: u32,
    /// Limits on a whole launch (none by default): past one, the launch stops with
    /// [`SimError::Stopped`] saying how far it got.
    pub budget: Budget,
    /// Called as a launch goes, with its progress; it can cancel the launch.
    pub progress: Option<ProgressHook>,
    /// Keep what kernels print (`vprintf`) in the launch's report only
    /// ([`LaunchReport::printed`]); by default it is also written to standard output.
    pub capture_prints: bool,
    /// The most blocks a cooperative launch ([`Simulator::launch_cooperative`]) may have:
    /// its blocks all run at once, each with its own registers and shared memory, as on a
    /// GPU where they must all be resident. A larger grid is
    /// [`LaunchProblem::CooperativeGrid`]. Default 64.
    pub max_cooperative_blocks: u32,
    /// The order blocks run in, outside clusters: one after another (the default), or
    /// interleaved with the rounds going over them in linear, reversed or shuffled order.
    /// Kernels whose blocks hand work to one another (a look-back over tiles taken from a
    /// counter) must be correct in every one.
    pub block_order: BlockOrder,
}

/// The order in which the simulator runs a launch's blocks ([`SimOptions::block_order`]).
///
/// The interleaved orders run blocks as a cooperative launch does, every block at once a
/// scheduling round at a time (in waves of at most [`SimOptions::max_cooperative_blocks`]
/// blocks, as a GPU keeps only so many resident), checking races on global memory between the
/// blocks of a wave; a thread that spins (an ordered load, an atomic followed by `nanosleep`)
/// yields, so the blocks it waits for get to run. A cooperative launch is always interleaved;
/// the orders choose its rounds' order too.
///
/// ```
/// use coopgraph::ir::{Atomic, index};
/// use coopgraph::runtime::Device;
/// use coopgraph::sim::{BlockOrder, SimOptions};
/// use coopgraph::KernelBuilder;
///
/// // Each block's thread 0 takes a ticket: the order blocks arrive in.
/// let mut k = KernelBuilder::new("tickets").block(32);
/// let (c, y) = (k.buffer::<u32>("c"), k.output::<u32>("y"));
/// k.if_(index::thread_rank().eq(0u32), |k| {
///     let t = k.atomic(&c, 0u32, Atomic::add(1u32));
///     k.write(&y, index::block_index(), t);
/// });
/// let kernel = k.build()?;
/// for (order, want) in [
///     (BlockOrder::Linear, [0, 1, 2, 3]),
///     (BlockOrder::Interleaved, [0, 1, 2, 3]),
///     (BlockOrder::InterleavedReversed, [3, 2, 1, 0]),
/// ] {
///     let dev = Device::sim_with(SimOptions { block_order: order, ..SimOptions::default() });
///     let (mut cb, mut yb) = (dev.alloc_zeroed::<u32>(1)?, dev.alloc_zeroed::<u32>(4)?);
///     dev.compile(&kernel)?.launch_grid(4, (&mut cb, &mut yb))?;
///     assert_eq!(yb.to_vec()?, want);
/// }
/// # Ok::<(), coopgraph::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BlockOrder {
    /// One block after another in linear order (or spread over [`SimOptions::threads`]
    /// workers).
    #[default]
    Linear,
    /// Interleaved, the rounds going over the blocks in linear order.
    Interleaved,
    /// Interleaved, the rounds going over the blocks in reverse linear order.
    InterleavedReversed,
    /// Interleaved, the rounds going over the blocks in an order shuffled by `seed` (each
    /// wave takes the next blocks of that order).
    InterleavedShuffled {
        /// The shuffle's seed.
        seed: u64,
    },
}

impl BlockOrder {
    /// Whether blocks run interleaved.
    fn interleaved(self) -> bool {
        self != BlockOrder::Linear
    }

    /// The linear block indices `0..n` in this order's sequence of rounds.
    fn sequence(self, n: u64) -> Vec<u64> {
        let mut v: Vec<u64> = (0..n).collect();
        match self {
            BlockOrder::Linear | BlockOrder::Interleaved => {}
            BlockOrder::InterleavedReversed => v.reverse(),
            BlockOrder::InterleavedShuffled { seed } => {
                // Fisher-Yates with SplitMix64.
                let mut s = seed;
                let mut next = || {
                    s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
                    let mut z = s;
                    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                    z ^ (z >> 31)
                };
                for i in (1..v.len()).rev() {
                    let j = (next() % (i as u64 + 1)) as usize;
                    v.swap(i, j);
                }
            }
        }
        v
    }
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            check_races: true,
            check_uninit: true,
            check_participation: true,
            max_steps: 1 << 32,
            threads: 1,
            local_bytes: 0,
            budget: Budget::default(),
            progress: None,
            capture_prints: false,
            max_cooperative_blocks: 64,
            block_order: BlockOrder::Linear,
        }
    }
}

/// A parsed and decoded module, ready to launch.
#[derive(Debug, Clone)]
pub struct SimModule {
    module: Module,
    programs: Vec<Program>,
}

impl SimModule {
    /// Parses PTX text and decodes every entry (registers, labels, operators resolved once).
    /// Needs no simulator: modules can be loaded while launches run.
    pub fn load(ptx: &str) -> Result<SimModule, SimError> {
        let parsed = parse::parse_with_lines(ptx)?;
        let text: Vec<&str> = ptx.split('\n').collect();
        let programs = parsed
            .module
            .functions
            .iter()
            .zip(&parsed.lines)
            .map(|(f, l)| decode::decode(f, l, &text))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SimModule {
            module: parsed.module,
            programs,
        })
    }

    /// The parsed module.
    pub fn module(&self) -> &Module {
        &self.module
    }

    /// The entry names.
    pub fn entries(&self) -> impl Iterator<Item = &str> {
        self.programs.iter().map(|p| p.name.as_str())
    }
}

/// What a launch did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaunchReport {
    /// Thread-instructions executed (guarded-off instructions and completed collectives
    /// count; labels and comments do not).
    pub thread_instructions: u64,
    /// Blocks run.
    pub blocks: u64,
    /// Threads run.
    pub threads: u64,
    /// Barrier instances completed.
    pub barriers: u64,
    /// Warp collective instances completed (`activemask` excluded).
    pub warp_collectives: u64,
    /// Scheduler rounds (each runs every ready thread of a block once).
    pub rounds: u64,
    /// What the kernel printed (`vprintf`), in thread order: block by block in linear
    /// order, within a block by thread rank, each thread's lines in the order it printed
    /// them.
    pub printed: String,
}

/// The simulator: owns the simulated global memory and runs kernels on it.
///
/// `Sync`: allocations, host copies and launches may come from several threads at once. The
/// memory is locked only while an allocation is made, freed or looked up; a launch runs on a
/// snapshot of the allocations (one freed meanwhile stays alive until the launch ends), so
/// host copies proceed while kernels run. Launches that run at once and touch the same memory
/// race with one another, as kernels on two GPU streams do.
pub struct Simulator {
    options: SimOptions,
    memory: GlobalMemory,
}

impl std::fmt::Debug for Simulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulator")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Simulator {
    /// A simulator with empty memory.
    pub fn new(options: SimOptions) -> Self {
        Simulator {
            options,
            memory: GlobalMemory::new(),
        }
    }

    /// The options.
    pub fn options(&self) -> &SimOptions {
        &self.options
    }

    /// Changes the options for later launches.
    pub fn set_options(&mut self, options: SimOptions) {
        self.options = options;
    }

    /// Allocates `bytes` of device memory whose contents are undefined until written. The
    /// address is 256-byte aligned, and an unmapped gap (at least 64 KiB, and at least the
    /// allocation's size) follows, so overruns fault. Addresses are never reused.
    pub fn alloc(&self, bytes: usize) -> Result<u64, SimError> {
        self.memory.alloc(bytes, false)
    }

    /// Like [`Simulator::alloc`], but the memory is zeroed and counts as written.
    pub fn alloc_zeroed(&self, bytes: usize) -> Result<u64, SimError> {
        self.memory.alloc(bytes, true)
    }

    /// Frees an allocation by its start address.
    pub fn free(&self, addr: u64) -> Result<(), SimError> {
        self.memory.free(addr)
    }

    /// Copies host bytes into one allocation (marking them written).
    pub fn write(&self, addr: u64, data: &[u8]) -> Result<(), SimError> {
        self.memory.write(addr, data)
    }

    /// Copies bytes of one allocation to the host.
    pub fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), SimError> {
        self.memory.read(addr, out)
    }

    /// Parses PTX text and decodes every entry: [`SimModule::load`].
    pub fn load_module(&self, ptx: &str) -> Result<SimModule, SimError> {
        SimModule::load(ptx)
    }

    /// Runs `entry` over a grid of blocks. `params` holds one value per `.param` of the entry:
    /// its bits in the low bytes (pointers are addresses from [`Simulator::alloc`]). The
    /// options' budget bounds it and their progress callback watches it (see the module
    /// documentation); other threads may allocate, copy and load modules meanwhile.
    pub fn launch(
        &self,
        module: &SimModule,
        entry: &str,
        grid: [u32; 3],
        block: [u32; 3],
        dynamic_smem_bytes: u32,
        params: &[u64],
    ) -> Result<LaunchReport, SimError> {
        let shape = Shape::new(grid, block, dynamic_smem_bytes);
        self.launch_with(module, entry, shape, params, false, None)
    }

    /// As [`launch`](Self::launch), in thread-block clusters of `cluster` blocks (what
    /// `cuLaunchKernelEx` with the cluster-dimension attribute does): required for an entry
    /// with `.explicitcluster`, and equal to the shape of one with `.reqnctapercluster`. The
    /// grid must be a whole number of clusters of at most 16 blocks
    /// ([`LaunchProblem::ClusterGrid`]); an entry without either directive is refused
    /// ([`LaunchProblem::ClusterShape`]).
    #[allow(clippy::too_many_arguments)]
    pub fn launch_clusters(
        &self,
        module: &SimModule,
        entry: &str,
        grid: [u32; 3],
        cluster: [u32; 3],
        block: [u32; 3],
        dynamic_smem_bytes: u32,
        params: &[u64],
    ) -> Result<LaunchReport, SimError> {
        let shape = Shape::new(grid, block, dynamic_smem_bytes);
        self.launch_with(module, entry, shape, params, false, Some(cluster))
    }

    /// As [`launch`](Self::launch), with every block running at once (a cooperative launch,
    /// for kernels with grid barriers): the blocks take turns, a round of each at a time, so a
    /// block spinning on global memory lets the others run (see the `coop` module). A grid
    /// of more than [`SimOptions::max_cooperative_blocks`] blocks is refused
    /// ([`LaunchProblem::CooperativeGrid`]); blocks that spin at a barrier no other block can
    /// release end the launch with a participation fault
    /// ([`ParticipationProblem::GridBarrier`]) instead of hanging. Global memory is
    /// checked for races between blocks too (see the checkers in the module documentation).
    pub fn launch_cooperative(
        &self,
        module: &SimModule,
        entry: &str,
        grid: [u32; 3],
        block: [u32; 3],
        dynamic_smem_bytes: u32,
        params: &[u64],
    ) -> Result<LaunchReport, SimError> {
        let shape = Shape::new(grid, block, dynamic_smem_bytes);
        self.launch_with(module, entry, shape, params, true, None)
    }

    fn launch_with(
        &self,
        module: &SimModule,
        entry: &str,
        mut shape: Shape,
        params: &[u64],
        cooperative: bool,
        given_cluster: Option<[u32; 3]>,
    ) -> Result<LaunchReport, SimError> {
        let Shape {
            grid,
            block,
            dynamic_smem: dynamic_smem_bytes,
            ..
        } = shape;
        let prog = module
            .programs
            .iter()
            .find(|p| p.name == entry)
            .ok_or_else(|| SimError::NoSuchEntry {
                name: entry.to_string(),
                entries: module.entries().map(str::to_string).collect(),
            })?;
        if params.len() != prog.params.len() {
            return Err(SimError::BadParams {
                entry: entry.to_string(),
                expected: prog.params.len(),
                got: params.len(),
            });
        }
        let refuse = |problem| SimError::BadLaunch {
            entry: entry.to_string(),
            problem,
        };
        let threads = block
            .iter()
            .fold(1u64, |n, &d| n.saturating_mul(u64::from(d)));
        let dims_ok = grid.iter().chain(&block).all(|d| *d > 0)
            && threads <= 1024
            && block[2] <= 64
            && grid[0] < (1 << 31)
            && grid[1] <= 65535
            && grid[2] <= 65535;
        if !dims_ok {
            return Err(refuse(LaunchProblem::Dimensions { grid, block }));
        }
        let local = self.options.local_bytes.saturating_add(prog.local_bytes);
        if local > MAX_LOCAL_BYTES {
            return Err(refuse(LaunchProblem::LocalMemory {
                bytes: local,
                limit: MAX_LOCAL_BYTES,
            }));
        }
        if let Some(required) = prog.reqntid
            && required != block
        {
            return Err(refuse(LaunchProblem::Reqntid { required, block }));
        }
        let limit = module.module.arch.max_shared_per_block();
        let total = u64::from(prog.dyn_base) + u64::from(dynamic_smem_bytes);
        let static_limit = Arch::MAX_STATIC_SHARED;
        if prog.static_smem > static_limit || total > u64::from(limit) {
            return Err(refuse(LaunchProblem::SharedMemory {
                static_bytes: prog.static_smem,
                dynamic_bytes: dynamic_smem_bytes,
                limit: if prog.static_smem > static_limit {
                    static_limit
                } else {
                    limit
                },
            }));
        }
        let mut pbuf = vec![0u8; prog.param_bytes as usize];
        for (p, v) in prog.params.iter().zip(params) {
            let bytes = v.to_le_bytes();
            let (o, n) = (p.offset as usize, p.size as usize);
            if let Some(dst) = pbuf.get_mut(o..o + n) {
                dst.copy_from_slice(&bytes[..n]);
            }
        }
        let nblocks = u64::from(grid[0]) * u64::from(grid[1]) * u64::from(grid[2]);
        if cooperative && nblocks > u64::from(self.options.max_cooperative_blocks) {
            return Err(refuse(LaunchProblem::CooperativeGrid {
                blocks: nblocks,
                max: self.options.max_cooperative_blocks,
            }));
        }
        let clustered = prog.uses_cluster || prog.cluster.is_some();
        let cluster = match (prog.cluster, prog.explicit_cluster, given_cluster) {
            (Some(c), _, None) => c,
            (Some(c), _, Some(g)) if c == g => c,
            (None, true, Some(g)) => g,
            (None, false, None) => [1, 1, 1],
            (entry, explicit, given) => {
                return Err(refuse(LaunchProblem::ClusterShape {
                    entry,
                    explicit,
                    given,
                }));
            }
        };
        shape.cluster = cluster;
        if clustered {
            let size = cluster.iter().fold(1u64, |n, &d| n * u64::from(d));
            let whole = (grid.iter().zip(&cluster)).all(|(g, c)| *c > 0 && g % c == 0);
            if !whole || size > 16 {
                return Err(refuse(LaunchProblem::ClusterGrid { grid, cluster }));
            }
            if cooperative {
                return Err(refuse(LaunchProblem::CooperativeCluster));
            }
        }
        let ctaid = |b: u64| {
            let (gx, gy) = (u64::from(grid[0]), u64::from(grid[1]));
            [
                (b % gx) as u32,
                ((b / gx) % gy) as u32,
                (b / (gx * gy)) as u32,
            ]
        };
        let workers = self.options.threads.max(1).min(nblocks as usize);
        let opts = &self.options;
        let view = self.memory.view(workers > 1);
        let monitor = Monitor::new(entry, opts.budget, opts.progress.as_ref(), nblocks);
        let printed: Mutex<Vec<(u64, u32, String)>> = Mutex::new(Vec::new());
        let counts = if clustered {
            match cluster::run(prog, opts, &view, &pbuf, shape, &monitor, cluster) {
                Err(e @ SimError::Stopped(_)) => return Err(monitor.stop_error().unwrap_or(e)),
                Err(e) => return Err(e),
                Ok((counts, lines)) => {
                    printed
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .extend(lines);
                    counts
                }
            }
        } else if cooperative || opts.block_order.interleaved() {
            let order: Vec<[u32; 3]> = opts
                .block_order
                .sequence(nblocks)
                .into_iter()
                .map(ctaid)
                .collect();
            // A cooperative grid runs at once; an ordinary one in waves of resident blocks.
            let wave = if cooperative {
                order.len().max(1)
            } else {
                (opts.max_cooperative_blocks.max(1)) as usize
            };
            let mut counts = Counts::default();
            for ctaids in order.chunks(wave) {
                let ran = coop::run(prog, opts, &view, &pbuf, shape, &monitor, ctaids);
                match ran {
                    Err(e @ SimError::Stopped(_)) => {
                        return Err(monitor.stop_error().unwrap_or(e));
                    }
                    Err(e) => return Err(e),
                    Ok((c, lines)) => {
                        printed
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .extend(lines);
                        counts.steps += c.steps;
                        counts.barriers += c.barriers;
                        counts.warp_collectives += c.warp_collectives;
                        counts.rounds += c.rounds;
                    }
                }
            }
            counts
        } else if workers <= 1 {
            let mut run = BlockRun::new(prog, opts, &view, &pbuf, shape, &monitor);
            let mut result = Ok(());
            for b in 0..nblocks {
                result = run.run(ctaid(b));
                if result.is_err() {
                    break;
                }
            }
            run.flush();
            printed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend(run.take_printed());
            match result {
                // With the final counts.
                Err(e @ SimError::Stopped(_)) => return Err(monitor.stop_error().unwrap_or(e)),
                Err(e) => return Err(e),
                Ok(()) => run.counts(),
            }
        } else {
            let next = AtomicU64::new(0);
            let failed = AtomicU64::new(u64::MAX);
            let errors: Mutex<Vec<(u64, SimError)>> = Mutex::new(Vec::new());
            let total: Mutex<Counts> = Mutex::new(Counts::default());
            let work = || {
                let mut run = BlockRun::new(prog, opts, &view, &pbuf, shape, &monitor);
                loop {
                    let b = next.fetch_add(1, Ordering::Relaxed);
                    // Blocks after a failed (or stopped) one need not run; earlier ones still
                    // must, so the error reported is always the first block's in linear order.
                    if b >= nblocks || b > failed.load(Ordering::Relaxed) {
                        break;
                    }
                    if let Err(e) = run.run(ctaid(b)) {
                        failed.fetch_min(b, Ordering::Relaxed);
                        errors
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push((b, e));
                    }
                }
                run.flush();
                printed
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .extend(run.take_printed());
                let c = run.counts();
                let mut t = total.lock().unwrap_or_else(|p| p.into_inner());
                t.steps += c.steps;
                t.barriers += c.barriers;
                t.warp_collectives += c.warp_collectives;
                t.rounds += c.rounds;
            };
            std::thread::scope(|s| {
                for _ in 1..workers {
                    // A worker that cannot start leaves its blocks to the others.
                    let _ = std::thread::Builder::new().spawn_scoped(s, work);
                }
                work();
            });
            let mut errors = errors.into_inner().unwrap_or_else(|p| p.into_inner());
            errors.sort_by_key(|e| e.0);
            match errors.into_iter().next() {
                Some((_, e @ SimError::Stopped(_))) => {
                    return Err(monitor.stop_error().unwrap_or(e));
                }
                Some((_, e)) => return Err(e),
                None => {}
            }
            total.into_inner().unwrap_or_else(|p| p.into_inner())
        };
        monitor.finish();
        let mut lines = printed.into_inner().unwrap_or_else(|p| p.into_inner());
        // Stable: each thread's lines stay in the order it printed them.
        lines.sort_by_key(|&(block, thread, _)| (block, thread));
        let printed: String = lines.into_iter().map(|(_, _, text)| text).collect();
        if !self.options.capture_prints && !printed.is_empty() {
            print!("{printed}");
        }
        Ok(LaunchReport {
            thread_instructions: counts.steps,
            blocks: nblocks,
            threads: nblocks.saturating_mul(threads),
            barriers: counts.barriers,
            warp_collectives: counts.warp_collectives,
            rounds: counts.rounds,
            printed,
        })
    }
}

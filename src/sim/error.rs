//! The simulator's typed errors and their readable, multi-line rendering.
//!
//! Every fault found while running a kernel names the PTX line (number and text), the nearest
//! `// ...` comment above it (the code generator writes one per IR op, naming the op and the
//! user's source line), and the threads involved.

use std::fmt;

/// A place in the PTX text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The entry (kernel) the line belongs to.
    pub entry: String,
    /// 1-based line number in the PTX text.
    pub line: u32,
    /// The line's text, trimmed.
    pub text: String,
    /// The nearest `// ...` comment line above it in the same function, without the `//`:
    /// the IR op the code generator was lowering.
    pub op: Option<String>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: `{}`", self.line, self.text)?;
        if let Some(op) = &self.op {
            write!(f, "\n    op: {op}")?;
        }
        Ok(())
    }
}

/// One thread of a launch: its block index and its thread index within the block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ThreadRef {
    /// `%ctaid`.
    pub block: [u32; 3],
    /// `%tid`.
    pub thread: [u32; 3],
}

impl fmt::Display for ThreadRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [bx, by, bz] = self.block;
        let [tx, ty, tz] = self.thread;
        write!(f, "thread ({tx},{ty},{tz}) of block ({bx},{by},{bz})")
    }
}

/// Why a line of PTX text could not be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseReason {
    /// The text ended inside a function or before `.target`.
    UnexpectedEnd,
    /// A directive or line that does not belong where it stands.
    UnexpectedLine,
    /// An instruction mnemonic the format does not contain.
    UnknownMnemonic,
    /// A type suffix that is not a PTX fundamental type, or not allowed here.
    BadType,
    /// An operand that is not a register, immediate, special register or known symbol.
    BadOperand,
    /// A register name that is malformed.
    BadRegister,
    /// A number that does not parse or does not fit.
    BadNumber,
    /// An address that is not `[base]` or `[base+offset]`.
    BadAddress,
    /// A name that is neither a parameter nor a shared-memory symbol of the function.
    UnknownSymbol,
    /// The wrong number of operands for the instruction.
    OperandCount,
    /// An instruction line without the closing `;`.
    MissingSemicolon,
    /// A `.target` that names no supported arch.
    UnknownTarget,
    /// A malformed `.reg`, `.shared`, `.param`, `.reqntid` or `.maxnreg` declaration.
    BadDeclaration,
}

impl fmt::Display for ParseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ParseReason::UnexpectedEnd => "unexpected end of the text",
            ParseReason::UnexpectedLine => "this line does not belong here",
            ParseReason::UnknownMnemonic => "unknown instruction",
            ParseReason::BadType => "bad or missing type suffix",
            ParseReason::BadOperand => "bad operand",
            ParseReason::BadRegister => "bad register name",
            ParseReason::BadNumber => "bad number",
            ParseReason::BadAddress => "bad address (expected [base] or [base+offset])",
            ParseReason::UnknownSymbol => "unknown symbol",
            ParseReason::OperandCount => "wrong number of operands",
            ParseReason::MissingSemicolon => "missing `;`",
            ParseReason::UnknownTarget => "unknown .target",
            ParseReason::BadDeclaration => "bad declaration",
        })
    }
}

/// A parse failure: the line, its text and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number.
    pub line: u32,
    /// The line's text.
    pub text: String,
    /// What is wrong with it.
    pub reason: ParseReason,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "PTX parse error at line {}: {}\n  `{}`",
            self.line, self.reason, self.text
        )
    }
}

impl std::error::Error for ParseError {}

/// Why a parsed function cannot be prepared for execution: the PTX is ill-formed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InvalidReason {
    /// A register beyond its class's `.reg` declaration.
    UndeclaredRegister {
        /// The register as written (`%r12`).
        register: String,
    },
    /// A register of a class or width the instruction cannot use there.
    RegisterClass {
        /// The register as written.
        register: String,
    },
    /// A branch to a label that the function does not define.
    UnknownLabel {
        /// The label.
        label: String,
    },
    /// A label defined twice.
    DuplicateLabel {
        /// The label.
        label: String,
    },
    /// A shared symbol index or parameter name that the function does not declare.
    UnknownSymbol,
    /// An operator or type (or combination) that the instruction does not take.
    BadType,
    /// An integer literal where the instruction takes a float (PTX wants `0f`/`0d` literals).
    ImmediateType,
    /// A vector width other than 1, 2 or 4 (or registers of mixed widths).
    BadVector,
    /// A store or atomic to a space it cannot write (`.param`, `.global.nc`, `.local` atomics).
    ReadOnlySpace,
    /// A barrier id above 15 or a thread count that is zero or not a multiple of 32.
    BadBarrier,
    /// A shared declaration with an alignment that is not a power of two, or sizes that
    /// overflow the shared window.
    BadShared,
    /// More virtual registers (plus constants) than the simulator holds per thread.
    TooManyRegisters {
        /// How many slots the function needs.
        slots: usize,
    },
}

impl fmt::Display for InvalidReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidReason::UndeclaredRegister { register } => {
                write!(f, "register {register} is not declared")
            }
            InvalidReason::RegisterClass { register } => {
                write!(f, "register {register} has the wrong class or width here")
            }
            InvalidReason::UnknownLabel { label } => write!(f, "no label `{label}`"),
            InvalidReason::DuplicateLabel { label } => write!(f, "label `{label}` defined twice"),
            InvalidReason::UnknownSymbol => f.write_str("unknown parameter or shared symbol"),
            InvalidReason::BadType => f.write_str("operator and type do not go together"),
            InvalidReason::ImmediateType => {
                f.write_str("an integer literal cannot be a float operand (use 0f/0d)")
            }
            InvalidReason::BadVector => {
                f.write_str("vector width must be 1, 2 or 4, with registers of one width")
            }
            InvalidReason::ReadOnlySpace => f.write_str("this state space cannot be written here"),
            InvalidReason::BadBarrier => {
                f.write_str("barrier id must be 0..15 and a count a non-zero multiple of 32")
            }
            InvalidReason::BadShared => f.write_str("bad shared-memory declaration"),
            InvalidReason::TooManyRegisters { slots } => {
                write!(
                    f,
                    "{slots} register slots per thread exceed the simulator's limit"
                )
            }
        }
    }
}

/// Why a launch was refused before any thread ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LaunchProblem {
    /// A grid or block dimension is zero or past the hardware limit.
    Dimensions {
        /// The grid.
        grid: [u32; 3],
        /// The block.
        block: [u32; 3],
    },
    /// The block does not match the entry's `.reqntid`.
    Reqntid {
        /// What the entry requires.
        required: [u32; 3],
        /// What the launch asked for.
        block: [u32; 3],
    },
    /// Static plus dynamic shared memory is past the arch's per-block limit (or the static
    /// part past 48 KiB).
    SharedMemory {
        /// Bytes declared by `.shared`.
        static_bytes: u32,
        /// Bytes asked for at launch.
        dynamic_bytes: u32,
        /// The limit that was exceeded.
        limit: u32,
    },
    /// [`SimOptions::local_bytes`](super::SimOptions::local_bytes) and the entry's `.local`
    /// declarations are past the local memory a thread can have.
    LocalMemory {
        /// Bytes per thread asked for.
        bytes: u32,
        /// The limit ([`MAX_LOCAL_BYTES`](super::MAX_LOCAL_BYTES)).
        limit: u32,
    },
    /// A cooperative launch of more blocks than can run at once
    /// ([`SimOptions::max_cooperative_blocks`](super::SimOptions::max_cooperative_blocks)).
    CooperativeGrid {
        /// Blocks asked for.
        blocks: u64,
        /// The most allowed.
        max: u32,
    },
    /// The grid is not a whole number of the entry's clusters (`.reqnctapercluster`), or the
    /// entry's cluster has more than 16 blocks.
    ClusterGrid {
        /// The grid.
        grid: [u32; 3],
        /// The cluster shape.
        cluster: [u32; 3],
    },
    /// A launch whose cluster shape does not fit the entry: none for an entry with
    /// `.explicitcluster`, another than its `.reqnctapercluster`, or one for an entry with
    /// neither.
    ClusterShape {
        /// The entry's `.reqnctapercluster`.
        entry: Option<[u32; 3]>,
        /// Whether the entry has `.explicitcluster`.
        explicit: bool,
        /// The launch's shape.
        given: Option<[u32; 3]>,
    },
    /// A grid barrier's cooperative launch of an entry that runs in clusters (the simulator
    /// runs either the whole grid at once or one cluster at a time).
    CooperativeCluster,
}

impl fmt::Display for LaunchProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LaunchProblem::Dimensions { grid, block } => write!(
                f,
                "bad launch shape: grid {grid:?}, block {block:?} (dimensions must be non-zero, \
                 at most 1024 threads per block, grid y/z at most 65535)"
            ),
            LaunchProblem::CooperativeGrid { blocks, max } => write!(
                f,
                "a cooperative launch of {blocks} blocks; at most {max} can run at once"
            ),
            LaunchProblem::ClusterGrid { grid, cluster } => write!(
                f,
                "grid {grid:?} is not a whole number of clusters of {cluster:?} blocks \
                 (.reqnctapercluster; a cluster has at most 16 blocks)"
            ),
            LaunchProblem::ClusterShape {
                entry: Some(c),
                given,
                ..
            } => write!(
                f,
                "the entry runs in clusters of {c:?} blocks (.reqnctapercluster); the launch \
                 asked for {given:?}"
            ),
            LaunchProblem::ClusterShape { explicit: true, .. } => f.write_str(
                "the entry's cluster shape is given at launch (.explicitcluster); the launch \
                 gave none",
            ),
            LaunchProblem::ClusterShape { given, .. } => write!(
                f,
                "a launch in clusters of {given:?} blocks of an entry that does not run in \
                 clusters (it has neither .reqnctapercluster nor .explicitcluster)"
            ),
            LaunchProblem::CooperativeCluster => {
                f.write_str("a cooperative launch of an entry that runs in clusters")
            }
            LaunchProblem::LocalMemory { bytes, limit } => write!(
                f,
                "{bytes} bytes of local memory per thread; a thread can have at most {limit}"
            ),
            LaunchProblem::Reqntid { required, block } => {
                write!(
                    f,
                    "the entry requires block {required:?} (.reqntid), launched with {block:?}"
                )
            }
            LaunchProblem::SharedMemory {
                static_bytes,
                dynamic_bytes,
                limit,
            } => write!(
                f,
                "shared memory {static_bytes} static + {dynamic_bytes} dynamic bytes exceeds \
                 the limit of {limit} bytes"
            ),
        }
    }
}

/// A memory state space as the simulator reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemSpace {
    /// Kernel parameters.
    Param,
    /// Device memory from [`super::Simulator::alloc`].
    Global,
    /// The block's shared memory (each static declaration, then the dynamic part, at
    /// addresses of its own).
    Shared,
    /// The thread's local memory: its window, then each `.local` declaration at an address
    /// of its own.
    Local,
    /// Constant memory: each `.const` declaration at an address of its own (read-only).
    Const,
    /// The shared memory of the blocks of a cluster (`.shared::cluster`): the rank of the
    /// block in the address's top bits, its `.shared` address below them.
    Cluster,
}

impl fmt::Display for MemSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MemSpace::Param => "param",
            MemSpace::Global => "global",
            MemSpace::Shared => "shared",
            MemSpace::Cluster => "shared::cluster",
            MemSpace::Local => "local",
            MemSpace::Const => "const",
        })
    }
}

/// A range of addresses: an allocation, a shared declaration, a parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extent {
    /// First address.
    pub base: u64,
    /// Length in bytes.
    pub len: u64,
    /// The symbol, for parameters and shared declarations.
    pub name: Option<String>,
    /// What the declaration's comment says it is: for a shared array the code generator
    /// declared, the user's array, its type and length, and where it was declared.
    pub note: Option<String>,
}

impl fmt::Display for Extent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(n) = &self.name {
            write!(f, "`{n}` ")?;
        }
        write!(
            f,
            "[{:#x}, {:#x}) ({} bytes)",
            self.base,
            self.base.saturating_add(self.len),
            self.len
        )?;
        if let Some(n) = &self.note {
            write!(f, "\n    declared as: {n}")?;
        }
        Ok(())
    }
}

/// A faulting memory access: out of bounds or misaligned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryFault {
    /// The thread.
    pub thread: ThreadRef,
    /// The instruction.
    pub at: Location,
    /// The state space.
    pub space: MemSpace,
    /// The first byte's address (the offset in the thread's window for local memory and in
    /// the parameter buffer for parameters).
    pub address: u64,
    /// Bytes accessed (the whole vector for vector accesses); also the alignment required.
    pub size: u32,
    /// The buffer nearest to the address, when there is one.
    pub nearest: Option<Extent>,
    /// Whether the address lies in an allocation that was freed.
    pub freed: bool,
}

impl fmt::Display for MemoryFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}-byte {} access at {:#x} by {}\n  at {}",
            self.size, self.space, self.address, self.thread, self.at
        )?;
        if self.freed {
            write!(f, "\n  the address lies in a freed allocation")?;
        }
        match &self.nearest {
            Some(e) => write!(f, "\n  nearest buffer: {e}"),
            None => write!(f, "\n  no buffer in this space"),
        }
    }
}

/// How a shared-memory access touched a byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessKind {
    /// A load.
    Read,
    /// A store.
    Write,
    /// An `atom` or `red`.
    Atomic,
}

impl fmt::Display for AccessKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AccessKind::Read => "read",
            AccessKind::Write => "write",
            AccessKind::Atomic => "atomic",
        })
    }
}

/// One side of a race.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    /// The thread.
    pub thread: ThreadRef,
    /// Read, write or atomic.
    pub kind: AccessKind,
    /// The instruction.
    pub at: Location,
}

/// Two unordered accesses to the same shared byte, at least one a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaceFault {
    /// The shared-memory byte's address (each shared declaration has addresses of its own:
    /// see the simulator's module documentation).
    pub address: u32,
    /// The shared declaration holding the byte, if any (else the dynamic part).
    pub symbol: Option<String>,
    /// The earlier access.
    pub first: Access,
    /// The later access, which found the earlier one unordered.
    pub second: Access,
}

impl fmt::Display for RaceFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "shared-memory race on byte {:#x}", self.address)?;
        if let Some(s) = &self.symbol {
            write!(f, " (in `{s}`)")?;
        }
        write!(
            f,
            "\n  {} by {}\n    at {}\n  {} by {}\n    at {}\n  no barrier or warp collective orders them",
            self.first.kind,
            self.first.thread,
            self.first.at,
            self.second.kind,
            self.second.thread,
            self.second.at
        )
    }
}

/// A race on global memory between two blocks of a cooperative launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalRaceFault {
    /// The global byte's address.
    pub address: u64,
    /// The earlier access.
    pub first: Access,
    /// The later access, which found the earlier one unordered.
    pub second: Access,
}

impl fmt::Display for GlobalRaceFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "global-memory race on byte {:#x} between blocks\n  {} by {}\n    at {}\n  {} by {}\n    at {}\n  no grid barrier (or release and acquire) orders them",
            self.address,
            self.first.kind,
            self.first.thread,
            self.first.at,
            self.second.kind,
            self.second.thread,
            self.second.at
        )
    }
}

/// A race on distributed shared memory: two blocks of a cluster touch the same byte of one
/// block's shared memory, at least one writing, with no cluster barrier between.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterRaceFault {
    /// The block whose shared memory holds the byte.
    pub owner: [u32; 3],
    /// The byte's `.shared` address in that block.
    pub address: u32,
    /// The earlier access.
    pub first: Access,
    /// The later access, which found the earlier one unordered.
    pub second: Access,
}

impl fmt::Display for ClusterRaceFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [x, y, z] = self.owner;
        write!(
            f,
            "distributed shared memory race on byte {:#x} of block ({x},{y},{z})'s shared memory\n  {} by {}\n    at {}\n  {} by {}\n    at {}\n  no cluster barrier orders them",
            self.address,
            self.first.kind,
            self.first.thread,
            self.first.at,
            self.second.kind,
            self.second.thread,
            self.second.at
        )
    }
}

/// Where an undefined value reached something observable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UseKind {
    /// The value stored by `st`.
    StoreValue,
    /// An address of a load, store or atomic.
    Address,
    /// A guard predicate or a branch condition.
    Predicate,
    /// An operand of a warp or block collective (value, lane, member mask).
    Collective,
    /// An operand of `atom`/`red`, or the memory it updates.
    Atomic,
}

impl fmt::Display for UseKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UseKind::StoreValue => "stored value",
            UseKind::Address => "address",
            UseKind::Predicate => "predicate",
            UseKind::Collective => "collective operand",
            UseKind::Atomic => "atomic operand",
        })
    }
}

/// Where an undefined value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UninitOrigin {
    /// A register that no instruction wrote before it was read.
    Register {
        /// The register (`%r3`).
        register: String,
    },
    /// A load of memory bytes never written (in this block, for shared memory), or of shared
    /// bytes a store wrote an undefined value to.
    Load {
        /// The load.
        at: Location,
    },
    /// A `shfl.sync` that read a lane outside the collective.
    Shuffle {
        /// The shuffle.
        at: Location,
    },
    /// Memory never written that an atomic read.
    Memory {
        /// Its space.
        space: MemSpace,
        /// Its address.
        address: u64,
    },
}

impl fmt::Display for UninitOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UninitOrigin::Register { register } => {
                write!(f, "register {register}, never written")
            }
            UninitOrigin::Load { at } => write!(
                f,
                "a load of memory never written (or written with undefined values), {at}"
            ),
            UninitOrigin::Shuffle { at } => {
                write!(f, "a shuffle from a lane outside the collective, {at}")
            }
            UninitOrigin::Memory { space, address } => {
                write!(f, "{space} memory at {address:#x}, never written")
            }
        }
    }
}

/// An undefined value reached an observable use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UninitFault {
    /// The thread.
    pub thread: ThreadRef,
    /// The instruction that used the value.
    pub at: Location,
    /// How it was used.
    pub use_kind: UseKind,
    /// The operand register holding the undefined value, when it was a register.
    pub register: Option<String>,
    /// Where the undefinedness started.
    pub origin: UninitOrigin,
}

impl fmt::Display for UninitFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "undefined {} used by {}", self.use_kind, self.thread)?;
        if let Some(r) = &self.register {
            write!(f, " (register {r})")?;
        }
        write!(f, "\n  at {}\n  undefined since: {}", self.at, self.origin)
    }
}

/// What kept a collective from completing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParticipationProblem {
    /// Some required threads never arrive (they exited or wait elsewhere).
    NeverArrive,
    /// A counted barrier can never gather its count.
    CountNotReached {
        /// The count the barrier waits for.
        count: u32,
        /// Threads (in whole warps) that arrived.
        arrived: u32,
    },
    /// A thread executed a warp collective whose member mask does not contain it.
    NotInMask {
        /// The mask.
        mask: u32,
    },
    /// In a cooperative launch, blocks spin at a grid barrier (the fault's location) that no
    /// other block can release: every block still running spins there or waits behind it,
    /// and global memory no longer changes. The blocks that exited before arriving are
    /// listed with where their threads exited.
    GridBarrier {
        /// Blocks spinning at (or waiting behind) the barrier.
        waiting_blocks: Vec<[u32; 3]>,
        /// Blocks whose threads all exited.
        exited_blocks: Vec<[u32; 3]>,
        /// Where the first exited block's thread 0 exited (`None` when no block exited:
        /// blocks wait at different barriers).
        exited_at: Option<Location>,
    },
    /// In a cluster launch, threads wait at a cluster barrier (the fault's location) that can
    /// never complete: some thread of the cluster exited (or waits elsewhere) without
    /// arriving. The blocks whose threads all exited are listed with where their first
    /// thread exited.
    ClusterBarrier {
        /// Blocks with threads waiting at the barrier.
        waiting_blocks: Vec<[u32; 3]>,
        /// Blocks of the cluster whose threads all exited.
        exited_blocks: Vec<[u32; 3]>,
        /// Where a thread that will never arrive exited, when one did.
        exited_at: Option<Location>,
    },
}

impl fmt::Display for ParticipationProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParticipationProblem::NeverArrive => f.write_str("required threads never arrive"),
            ParticipationProblem::CountNotReached { count, arrived } => write!(
                f,
                "the barrier waits for {count} threads but only {arrived} can arrive"
            ),
            ParticipationProblem::GridBarrier {
                waiting_blocks,
                exited_blocks,
                exited_at,
            } => {
                write!(
                    f,
                    "a grid barrier that can never complete: {} blocks wait, {} blocks exited \
                     before arriving",
                    waiting_blocks.len(),
                    exited_blocks.len()
                )?;
                if let (Some([bx, by, bz]), Some(at)) = (exited_blocks.first(), exited_at) {
                    write!(f, " (block ({bx},{by},{bz}) exited at {at})")?;
                }
                Ok(())
            }
            ParticipationProblem::ClusterBarrier {
                waiting_blocks,
                exited_blocks,
                exited_at,
            } => {
                write!(
                    f,
                    "a cluster barrier that can never complete: {} blocks of the cluster wait, \
                     {} blocks exited",
                    waiting_blocks.len(),
                    exited_blocks.len()
                )?;
                if let Some(at) = exited_at {
                    write!(f, " (a thread that never arrives exited at {at})")?;
                }
                Ok(())
            }
            ParticipationProblem::NotInMask { mask } => {
                write!(
                    f,
                    "the executing thread is not in the member mask {mask:#010x}"
                )
            }
        }
    }
}

/// Where a thread that a collective needs is instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AbsentState {
    /// It exited (by `ret` or the end of the function).
    Exited {
        /// Where.
        at: Location,
    },
    /// It waits at another collective (or the same one with a different member mask).
    Waiting {
        /// Where.
        at: Location,
        /// Its member mask, for warp collectives.
        mask: Option<u32>,
    },
}

/// Threads in the same absent state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AbsentGroup {
    /// Linear thread indices in the block (`x + y*ntid.x + z*ntid.x*ntid.y`).
    pub threads: Vec<u32>,
    /// Where they are.
    pub state: AbsentState,
}

/// A barrier or warp collective that cannot complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParticipationFault {
    /// The block.
    pub block: [u32; 3],
    /// The collective that cannot complete.
    pub at: Location,
    /// What is wrong.
    pub problem: ParticipationProblem,
    /// Linear indices of the threads waiting there.
    pub waiting: Vec<u32>,
    /// The required threads that are elsewhere.
    pub absent: Vec<AbsentGroup>,
}

impl fmt::Display for ParticipationFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [bx, by, bz] = self.block;
        write!(
            f,
            "participation fault in block ({bx},{by},{bz}): {}\n  at {}\n  waiting here: threads {}",
            self.problem,
            self.at,
            ThreadList(&self.waiting)
        )?;
        for g in &self.absent {
            match &g.state {
                AbsentState::Exited { at } => {
                    write!(f, "\n  threads {} exited at {}", ThreadList(&g.threads), at)?
                }
                AbsentState::Waiting { at, mask } => {
                    write!(f, "\n  threads {} wait at {}", ThreadList(&g.threads), at)?;
                    if let Some(m) = mask {
                        write!(f, "\n    with member mask {m:#010x}")?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Renders a sorted list of thread indices as ranges: `0..=31, 64`.
struct ThreadList<'a>(&'a [u32]);

impl fmt::Display for ThreadList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("(none)");
        }
        let mut i = 0;
        let mut first = true;
        while i < self.0.len() {
            let start = self.0[i];
            let mut end = start;
            while i + 1 < self.0.len() && self.0[i + 1] == end.wrapping_add(1) {
                i += 1;
                end = self.0[i];
            }
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            if start == end {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}..={end}")?;
            }
            i += 1;
        }
        Ok(())
    }
}

/// Everything the simulator can report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SimError {
    /// The PTX text does not parse.
    Parse {
        /// 1-based line number.
        line: u32,
        /// The line's text.
        text: String,
        /// What is wrong.
        reason: ParseReason,
    },
    /// The PTX parses but is ill-formed (undeclared register, unknown label, ...).
    Invalid {
        /// Where.
        at: Location,
        /// What is wrong.
        reason: InvalidReason,
    },
    /// The module has no entry of that name.
    NoSuchEntry {
        /// The name asked for.
        name: String,
        /// The entries it has.
        entries: Vec<String>,
    },
    /// The launch passed a different number of parameters than the entry declares.
    BadParams {
        /// The entry.
        entry: String,
        /// Declared parameters.
        expected: usize,
        /// Values passed.
        got: usize,
    },
    /// The launch configuration is refused.
    BadLaunch {
        /// The entry.
        entry: String,
        /// Why.
        problem: LaunchProblem,
    },
    /// A barrier or warp collective that cannot complete: the run stops instead of hanging.
    Participation(Box<ParticipationFault>),
    /// Two threads touch the same shared byte between the same synchronizations.
    Race(Box<RaceFault>),
    /// In a cooperative launch, two blocks touch the same global byte, at least one writing,
    /// with no release and acquire (a grid barrier) ordering them.
    GlobalRace(Box<GlobalRaceFault>),
    /// In a cluster launch, two blocks touch the same byte of one block's shared memory, at
    /// least one writing, with no cluster barrier ordering them.
    ClusterRace(Box<ClusterRaceFault>),
    /// An access outside every buffer of its space.
    OutOfBounds(Box<MemoryFault>),
    /// An access not aligned to its size.
    Misaligned(Box<MemoryFault>),
    /// An undefined value reached an observable use.
    Uninitialized(Box<UninitFault>),
    /// A block ran more thread-instructions than [`super::SimOptions::max_steps`].
    StepLimit {
        /// The limit.
        limit: u64,
        /// The thread running when it was reached.
        thread: ThreadRef,
        /// Where that thread was.
        at: Location,
    },
    /// The launch passed its [`super::Budget`] or its progress callback cancelled it.
    Stopped(Box<super::Stopped>),
    /// A `vprintf` format with a conversion the simulator does not implement (it implements
    /// `%d %u %x %lld %llu %llx %f %e`, precisions of `%f` and `%e`, and `%%`).
    PrintFormat {
        /// The thread that called it.
        thread: ThreadRef,
        /// The call.
        at: Location,
        /// The byte of the format where the conversion starts.
        byte: u32,
    },
    /// A host-side access (`read`, `write`) outside every allocation.
    HostOutOfBounds {
        /// First address.
        address: u64,
        /// Bytes.
        len: u64,
    },
    /// `free` of an address that is not the start of a live allocation.
    NotAllocated {
        /// The address.
        address: u64,
    },
    /// An allocation that the host cannot provide.
    OutOfMemory {
        /// Bytes asked for.
        bytes: usize,
    },
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Parse { line, text, reason } => {
                write!(f, "PTX parse error at line {line}: {reason}\n  `{text}`")
            }
            SimError::Invalid { at, reason } => {
                write!(f, "invalid PTX in `{}`: {reason}\n  at {at}", at.entry)
            }
            SimError::NoSuchEntry { name, entries } => {
                write!(
                    f,
                    "no entry `{name}` in the module (it has: {})",
                    entries.join(", ")
                )
            }
            SimError::BadParams {
                entry,
                expected,
                got,
            } => write!(f, "`{entry}` takes {expected} parameters, {got} given"),
            SimError::BadLaunch { entry, problem } => {
                write!(f, "launch of `{entry}` refused: {problem}")
            }
            SimError::Participation(p) => write!(f, "in `{}`: {p}", p.at.entry),
            SimError::Race(r) => write!(f, "in `{}`: {r}", r.second.at.entry),
            SimError::GlobalRace(r) => write!(f, "in `{}`: {r}", r.second.at.entry),
            SimError::ClusterRace(r) => write!(f, "in `{}`: {r}", r.second.at.entry),
            SimError::OutOfBounds(m) => write!(f, "in `{}`: out-of-bounds {m}", m.at.entry),
            SimError::Misaligned(m) => write!(
                f,
                "in `{}`: misaligned {m}\n  (the address must be a multiple of {})",
                m.at.entry, m.size
            ),
            SimError::Uninitialized(u) => write!(f, "in `{}`: {u}", u.at.entry),
            SimError::StepLimit { limit, thread, at } => write!(
                f,
                "in `{}`: a block ran past {limit} thread-instructions (a runaway loop?)\n  \
                 {thread} was at {at}",
                at.entry
            ),
            SimError::Stopped(s) => write!(f, "{s}"),
            SimError::PrintFormat { thread, at, byte } => write!(
                f,
                "in `{}`: {thread} called vprintf with a format whose conversion at byte {byte} \
                 the simulator does not implement\n  at {at}",
                at.entry
            ),
            SimError::HostOutOfBounds { address, len } => write!(
                f,
                "host access of {len} bytes at {address:#x} is outside every allocation"
            ),
            SimError::NotAllocated { address } => {
                write!(f, "{address:#x} is not the start of a live allocation")
            }
            SimError::OutOfMemory { bytes } => write!(f, "cannot allocate {bytes} bytes"),
        }
    }
}

impl std::error::Error for SimError {}

impl From<ParseError> for SimError {
    fn from(e: ParseError) -> Self {
        SimError::Parse {
            line: e.line,
            text: e.text,
            reason: e.reason,
        }
    }
}

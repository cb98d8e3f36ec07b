//! The kernel IR's tables: parameters, groups, payloads, ops and regions.
//!
//! What an op *is* lives in [`Ir::ops`]; *when* it runs lives in [`Ir::regions`] (ordered op
//! lists, one per kernel body, branch arm or loop body). Passes may reorder regions without
//! rewriting ops.

use super::dtype::DType;
use super::entities::{
    ArrayId, DataId, ExprId, GroupId, Loc, LocalId, OpId, ParamId, RegionId, StorageId,
};
use super::expr::{Arena, ExprNode};
use super::format::{PrintPiece, PrintProblem};
use super::options::CompileOptions;
use smallvec::SmallVec;

mod arrays;
mod atomic;
mod cluster;
mod exchange;
mod lanes;
mod neighbor;
mod primitive;
mod sort;
pub use arrays::*;
pub use atomic::*;
pub use cluster::*;
pub use exchange::*;
pub use lanes::*;
pub use neighbor::*;
pub use primitive::*;
pub use sort::*;

/// The largest `items_per_thread` a payload may have.
pub const MAX_ITEMS_PER_THREAD: u32 = 64;
/// The largest block, in threads.
pub const MAX_BLOCK_THREADS: u32 = 1024;
/// The largest block extent along x, y and z (every supported GPU's).
pub const MAX_BLOCK_DIMS: [u32; 3] = [1024, 1024, 64];
/// The deepest nesting of regions (branches, loops, prefix callbacks) a kernel may have. The
/// passes after the verifier recurse once per level; this bound keeps them far inside a 2 MiB
/// thread stack.
pub const MAX_NESTING: usize = 256;
/// The deepest expression a kernel may have, in nodes from the root to the deepest leaf (`x`
/// is 1 deep, `x + 1` 2). Every pass walks expressions with a stack of its own, so this bounds
/// work, not the thread's stack.
pub const MAX_EXPR_DEPTH: u32 = 1 << 16;
/// The most bytes of parameters an entry may take (the limit of the PTX ISA the code generator
/// writes), counted as 8 per parameter plus 4 per buffer length the runtime passes where bounds
/// are checked (8 for a buffer indexed with 64-bit indices): an upper bound of the laid-out
/// size.
pub const MAX_PARAM_BYTES: usize = 4352;
/// The longest [`KernelBuilder::nanosleep`](crate::KernelBuilder::nanosleep) delay, in
/// nanoseconds: PTX's bound on `nanosleep` (1 ms).
pub const MAX_NANOSLEEP_NS: u32 = 1_000_000;
/// The logical-warp widths `group_by` accepts.
pub const LOGICAL_WARP_WIDTHS: [u32; 6] = [1, 2, 4, 8, 16, 32];

/// What a kernel parameter is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// A buffer the kernel only reads (loaded through the read-only path).
    Input,
    /// A buffer the kernel writes.
    Output,
    /// A scalar passed by value.
    Scalar,
    /// A buffer the kernel both reads and writes: its reads take the coherent path (plain
    /// `ld.global`), so a thread reads back what it wrote before.
    Buffer,
}

impl Role {
    /// Whether the kernel may read the buffer (an input or a read-write buffer).
    pub fn readable(self) -> bool {
        matches!(self, Role::Input | Role::Buffer)
    }

    /// Whether the kernel may write the buffer (an output or a read-write buffer).
    pub fn writable(self) -> bool {
        matches!(self, Role::Output | Role::Buffer)
    }
}

/// A declared kernel parameter.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ParamDecl {
    /// The user's name for it.
    pub name: String,
    /// Its role.
    pub role: Role,
    /// Its element type.
    pub dtype: DType,
    /// Where it was declared.
    pub loc: Loc,
}

/// A kind of thread group: units inside an upper level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GroupKind {
    /// All threads of the block.
    Block,
    /// Consecutive threads in tiles of `width` lanes inside a warp (`width` = 32 is the warp).
    LogicalWarp {
        /// Threads per group: 1, 2, 4, 8, 16 or 32.
        width: u32,
    },
    /// Groups of `warps` whole consecutive warps of the block (CCCL's groups of warps): group
    /// `j` holds warps `j * warps .. (j + 1) * warps`. Where the block's warps are not a
    /// multiple of `warps`, the last ones are in no group (a non-exhaustive partition, whose
    /// collectives run inside [`KernelBuilder::if_member`]). The block's threads must be a
    /// multiple of 32: a partial warp joins no group. Such groups run reductions (by warp
    /// reductions, whatever block algorithm is asked, through a named barrier per group) and
    /// loads and stores that move each group's tile without an exchange of their own (direct,
    /// striped, vectorized); the verifier reports other ops over them.
    ///
    /// [`KernelBuilder::if_member`]: crate::KernelBuilder::if_member
    Warps {
        /// Warps per group: 1 up to the block's warps.
        warps: u32,
    },
}

impl GroupKind {
    /// For a group of whole warps, the warps per group.
    pub fn whole_warps(self) -> Option<u32> {
        match self {
            GroupKind::Warps { warps } => Some(warps),
            _ => None,
        }
    }
}

/// A declared group.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GroupDecl {
    /// What kind of group.
    pub kind: GroupKind,
    /// Where it was made.
    pub loc: Loc,
}

/// How a payload's items map onto tile positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arrangement {
    /// Thread `t` holds positions `t*K .. t*K+K` (the same for every group size).
    Blocked,
    /// Within each group of `threads` threads, rank `r` holds positions `r, r+G, r+2G, ...`
    /// of its group's tile (`G = threads`). Striped over the block and striped over warps
    /// (`threads = 32`) are different arrangements. The groups tile the block: `G` divides
    /// its threads (the verifier rejects other `G` where an exchange or scatter asks for
    /// one). Groups that lie inside one warp exchange with warp barriers; others (3 threads
    /// in a block of 96, 64 in 128) with the block's.
    Striped {
        /// Threads in the group the payload is striped over.
        threads: u32,
    },
}

impl Arrangement {
    /// Whether a payload of `items` items per thread holds the same positions in `self` as in
    /// `other`. With one item per thread every arrangement puts rank `r` at position `r`, and
    /// striping over single threads is blocking; such arrangements need no exchange between
    /// them.
    pub fn same_positions(self, other: Arrangement, items: u32) -> bool {
        let norm = |a: Arrangement| match a {
            Arrangement::Striped { threads: 1 } => Arrangement::Blocked,
            a => a,
        };
        items <= 1 || norm(self) == norm(other)
    }
}

/// A declared payload: `items` registers of `dtype` per thread.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DataDecl {
    /// Element type.
    pub dtype: DType,
    /// Items per thread.
    pub items: u32,
    /// Alignment in bytes the payload's items may be moved with (a power of two, at least the
    /// element size): `vectorize` uses vectors of at most this many bytes. `None`: 16.
    pub align: Option<u32>,
    /// Whether it is a per-thread variable ([`KernelBuilder::var`]): one item, written only by
    /// its declaration and `set`, whose uniformity the verifier tracks.
    ///
    /// [`KernelBuilder::var`]: super::KernelBuilder::var
    pub var: bool,
    /// Where it was made.
    pub loc: Loc,
}

/// Load and store algorithms (CUB's `BlockLoad`/`BlockStore` set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// Each thread moves its own blocked items (`t*K + i`); no scratch, no barrier.
    Direct,
    /// Striped items (`t + i*G`), coalesced, left striped; no scratch, no barrier.
    Striped,
    /// Blocked items moved with 8- or 16-byte vector accesses where the address allows (checked
    /// at run time, falling back to scalar accesses); 8- and 16-bit items packed in 32-bit
    /// words, 4 to 16 bytes at a time; no scratch.
    Vectorize,
    /// Coalesced striped accesses, exchanged with blocked order through shared memory. The
    /// payload is blocked.
    Transpose,
    /// Each warp moves its segment warp-striped (coalesced) and exchanges it with blocked order
    /// through its own shared-memory slice (warp synchronization only). Block groups only.
    WarpTranspose,
    /// As [`Algorithm::WarpTranspose`], with one warp-sized slice the warps take turns on
    /// (less shared memory, a block barrier per turn). Block groups only.
    WarpTransposeTimesliced,
    /// Each warp moves its segment warp-striped and the payload stays so: lane `l` of warp
    /// `w` holds positions `w * 32 * K + i * 32 + l` (`Striped` over 32; the match rank's
    /// arrangement). No scratch, no barrier. Block groups of whole warps only.
    WarpStriped,
}

impl Algorithm {
    /// Every algorithm.
    pub const ALL: [Algorithm; 7] = [
        Algorithm::Direct,
        Algorithm::Striped,
        Algorithm::Vectorize,
        Algorithm::Transpose,
        Algorithm::WarpTranspose,
        Algorithm::WarpTransposeTimesliced,
        Algorithm::WarpStriped,
    ];

    /// Whether a logical-warp group may use it.
    pub fn for_warps(self) -> bool {
        !matches!(
            self,
            Algorithm::WarpTranspose | Algorithm::WarpTransposeTimesliced | Algorithm::WarpStriped
        )
    }
}

/// The controls of a load or store.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Transfer {
    /// The group that moves the tile together.
    pub group: GroupId,
    /// The buffer parameter.
    pub param: ParamId,
    /// The payload loaded into or stored from.
    pub data: DataId,
    /// How items map to positions.
    pub algorithm: Algorithm,
    /// Element offset of the block's tile in the buffer; `None` means the default: the
    /// enclosing `tiles` loop's origin, or `block_index * block_tile`. A group of a warp or
    /// logical warp adds its own origin within the block's tile.
    pub offset: Option<ExprId>,
    /// How many items are valid; `None` means all (or, inside a `tiles` loop, the tile's valid
    /// count, counted over the block's tile).
    pub valid: Option<ValidItems>,
    /// For loads: the value of slots past the valid items (bits); `None` leaves them unwritten.
    pub oob_default: Option<u64>,
    /// User temp storage for the op's shared-memory exchange; `None`: planned.
    pub storage: Option<StorageId>,
}

/// Whether a kernel's loads and stores check the lengths of the buffers they are given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Bounds {
    /// Every global access is guarded by its buffer's length (a hidden kernel parameter the
    /// runtime fills in from the buffer passed): positions past the end are not read (a load
    /// treats them as past its valid items) and not written.
    #[default]
    Checked,
    /// No guards and no hidden parameters: every access is the launch's responsibility, so
    /// the kernel runs only through the unsafe
    /// [`Function::launch_unchecked`](crate::runtime::Function::launch_unchecked).
    Unchecked,
}

/// A load's or store's count of valid items: positions at or past it are not read (a load
/// leaves their slots unwritten, or gives them its default) and not written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ValidItems {
    /// The count (a `u32` expression, uniform across the group it counts for).
    pub count: ExprId,
    /// What it counts.
    pub of: ValidOf,
}

/// What a valid count counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValidOf {
    /// The valid prefix of the op's group's own tile (cuda.coop's `valid_items`): with warp or
    /// logical-warp groups, each group has its own count.
    Group,
    /// The valid prefix of the block's tile, from the offset: a group whose tile starts `s`
    /// elements into the block's tile and holds `t` elements has `min(count - s, t)` valid
    /// items (none when `count <= s`). For a block group the two are the same.
    Block,
}

/// The operator of a reduction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// `a + b` (wrapping for integers).
    Sum,
    /// `a * b` (wrapping for integers).
    Product,
    /// The smaller.
    Min,
    /// The larger.
    Max,
    /// Bitwise and.
    BitAnd,
    /// Bitwise or.
    BitOr,
    /// Bitwise xor.
    BitXor,
    /// The earlier value: a group's first in position order (rank 0's first item). A
    /// broadcast reduction with it hands rank 0's value to the group through one barrier,
    /// where the other operators fold every value first.
    First,
    /// A user operator: an expression of `Arg(0)` (the earlier value) and `Arg(1)` (the later).
    Custom {
        /// The body.
        expr: ExprId,
        /// Whether `a op b == b op a`; if not, values are combined in position order over a
        /// blocked payload.
        commutative: bool,
    },
}

impl ReduceOp {
    /// Whether the operator may combine values in any order.
    pub fn commutative(self) -> bool {
        match self {
            ReduceOp::Custom { commutative, .. } => commutative,
            ReduceOp::First => false,
            _ => true,
        }
    }
}

/// Block reduction algorithms (CUB's `BlockReduce` set). Warp groups always reduce with
/// shuffles (or `redux.sync` for 32-bit integers on sm_80+).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceAlgorithm {
    /// Every thread shares its partial; the first warp rakes them (commutative operators only).
    RakingCommutativeOnly,
    /// Every thread shares its partial; the first warp rakes consecutive segments in order.
    Raking,
    /// Each warp reduces with shuffles; the first warp reduces the warps' results.
    WarpReductions,
}

/// A reduction.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reduction {
    /// The group.
    pub group: GroupId,
    /// The payload reduced.
    pub src: DataId,
    /// The one-item result.
    pub dst: DataId,
    /// The operator.
    pub op: ReduceOp,
    /// Whether every rank gets the result (else rank 0 only).
    pub broadcast: bool,
    /// With one item per thread: only ranks below this count take part.
    pub valid: Option<ExprId>,
    /// The block algorithm.
    pub algorithm: ReduceAlgorithm,
}

/// A scan: `dst[p] = initial op x[0] op ... op x[p]` (inclusive) or up to `x[p - 1]`
/// (exclusive), over positions `p` of the group's tile in blocked order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ScanSpec {
    /// The group.
    pub group: GroupId,
    /// The payload scanned.
    pub src: DataId,
    /// The result, as many items as `src`.
    pub dst: DataId,
    /// The operator (associative; applied in position order).
    pub op: ReduceOp,
    /// Inclusive (else exclusive).
    pub inclusive: bool,
    /// The value the scan starts from (required for exclusive scans).
    pub initial: Option<ExprId>,
    /// A one-item payload that receives the group's total (without the initial value) at
    /// every rank.
    pub aggregate: Option<DataId>,
    /// A prefix callback: once the group's total is known (in `aggregate`), `body` runs and
    /// `prefix` (rank 0's, handed to the whole group) seeds the scan in place of an initial
    /// value.
    pub callback: Option<PrefixCallback>,
    /// The block algorithm.
    pub algorithm: ScanAlgorithm,
    /// Groups of at most 32 threads: only the first this many positions (blocked order) take
    /// part; outputs past them are unspecified, and the aggregate counts the valid ones.
    pub valid: Option<ExprId>,
}

/// Block scan algorithms (CUB's `BlockScan` set). Warp groups always scan with shuffles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScanAlgorithm {
    /// Every thread shares its total; the first warp rakes consecutive segments (reading them
    /// again from shared memory to write the prefixes back) and scans the segment totals.
    Raking,
    /// As raking, keeping the raked segment in registers between the two passes.
    RakingMemoize,
    /// Each warp scans with shuffles; every thread folds the totals of the warps before it.
    WarpScans,
}

/// A scan's prefix callback (for running scans over many tiles).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PrefixCallback {
    /// The ops run once the total is known.
    pub body: RegionId,
    /// The prefix the scan starts from.
    pub prefix: ExprId,
}

/// How a temp storage may be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sharing {
    /// Several ops may use it, one after another (the bytes are reused).
    Shared,
    /// One op only.
    Exclusive,
}

/// A user-declared temp storage: shared memory that ops use for their exchanges instead of
/// planned scratch.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StorageDecl {
    /// Size in bytes; `None`: the largest need of its users.
    pub size: Option<u32>,
    /// Alignment in bytes; `None`: 16.
    pub align: Option<u32>,
    /// Whether barriers are placed between its users (as the planner does for planned
    /// scratch); without, ordering uses of the storage is the user's job (`sync_block`).
    pub auto_sync: bool,
    /// Whether more than one op may use it.
    pub sharing: Sharing,
    /// Where it was declared.
    pub loc: Loc,
}

/// What an op does.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// Reads a tile from global memory into a payload.
    Load(Transfer),
    /// Writes a payload's tile to global memory.
    Store(Transfer),
    /// `dst[i] = expr(srcs[0][i], srcs[1][i], ...)` for every slot `i`.
    Map {
        /// The payload written.
        dst: DataId,
        /// The payloads read as `Arg(0)`, `Arg(1)`...
        srcs: SmallVec<[DataId; 2]>,
        /// The body.
        expr: ExprId,
    },
    /// `dst[item] = expr` for one slot.
    SetItem {
        /// The payload written.
        dst: DataId,
        /// The slot.
        item: u32,
        /// The value.
        expr: ExprId,
    },
    /// `dst = src`, slot by slot.
    Assign {
        /// The payload written.
        dst: DataId,
        /// The payload read.
        src: DataId,
    },
    /// `if cond { then } else { otherwise }`.
    If {
        /// The condition.
        cond: ExprId,
        /// Ops run when true.
        then: RegionId,
        /// Ops run when false.
        otherwise: Option<RegionId>,
    },
    /// `for i in (start..end).step_by(step) { body }` (the counter is `LoopVar { field: 0 }`).
    /// The bounds and the step are evaluated once, before the first iteration; a step of 0
    /// runs the body no time, and the loop ends where the next counter would pass `u32::MAX`.
    For {
        /// First value.
        start: ExprId,
        /// One past the last value.
        end: ExprId,
        /// The step (`None`: 1).
        step: Option<ExprId>,
        /// The body.
        body: RegionId,
    },
    /// `while cond { body }`: `cond` is evaluated before every iteration.
    While {
        /// The condition.
        cond: ExprId,
        /// The body.
        body: RegionId,
    },
    /// Leaves the innermost enclosing loop (`for`, `while` or `tiles`).
    Break,
    /// Goes on with the next iteration of the innermost enclosing loop.
    Continue,
    /// The threads where `cond` holds leave the kernel.
    ReturnIf {
        /// The condition.
        cond: ExprId,
    },
    /// A user assertion: in a kernel built with debug checks, a thread where `cond` does not
    /// hold records the failure, which the launch reports with `message`; without debug checks
    /// it does nothing (the condition is not evaluated).
    Assert {
        /// What must hold.
        cond: ExprId,
        /// What the report says.
        message: String,
    },
    /// `array[index] = value`.
    SharedWrite {
        /// The array.
        array: ArrayId,
        /// The element.
        index: ExprId,
        /// The value.
        value: ExprId,
    },
    /// `array[index] = value` in the thread's own local array.
    LocalWrite {
        /// The array.
        array: LocalId,
        /// The element (`u32`).
        index: ExprId,
        /// The value.
        value: ExprId,
    },
    /// `buffer[index] = value` in global memory (each thread that runs it writes one
    /// element). Where bounds are checked, an index at or past the buffer's length writes
    /// nothing.
    GlobalWrite {
        /// The buffer parameter (an output or a read-write buffer).
        param: ParamId,
        /// The element (`u32`, or `u64` for buffers of more than `u32::MAX` elements).
        index: ExprId,
        /// The value.
        value: ExprId,
    },
    /// `dst[j] = buffer[index + j]` for every item `j` of `dst` (each thread that runs it
    /// reads its own run of consecutive elements), with vector accesses where the run's
    /// address is aligned for them. Where bounds are checked, elements at or past the
    /// buffer's length read 0.
    ReadRun {
        /// The buffer parameter (an input or a read-write buffer).
        param: ParamId,
        /// The run's first element (`u32`, or `u64` for buffers of more than `u32::MAX`
        /// elements).
        index: ExprId,
        /// The payload read into: one item per element of the run.
        dst: DataId,
    },
    /// `buffer[index + j] = src[j]` for every item `j` of `src`, with vector accesses where the
    /// run's address is aligned for them. Where bounds are checked, elements at or past the
    /// buffer's length are not written.
    WriteRun {
        /// The buffer parameter (an output or a read-write buffer).
        param: ParamId,
        /// The run's first element (`u32` or `u64`).
        index: ExprId,
        /// The payload written: one item per element of the run.
        src: DataId,
    },
    /// An atomic update of one element of global or shared memory by each thread that runs
    /// it; atomics on one element never race with one another.
    Atomic(AtomicSpec),
    /// A block barrier (`bar.sync`): every thread of the block waits for all others.
    SyncBlock,
    /// Suspends the thread for about `ns` nanoseconds (PTX `nanosleep`, at most 1 ms): the
    /// back-off of a spin-wait. It orders nothing and changes no value.
    Nanosleep {
        /// The requested delay, at most [`MAX_NANOSLEEP_NS`].
        ns: u32,
    },
    /// A lane collective of one tile (shuffle, vote, match, tile barrier).
    Lanes(LaneSpec),
    /// A grid barrier: every thread of every block of the launch waits for all others, and
    /// what any of them wrote to global memory before it is visible to all after it. A kernel
    /// with one is cooperative ([`Ir::needs_cooperative`]).
    SyncGrid,
    /// A cluster barrier or an access to another block's shared array (sm_90): see
    /// [`ClusterOp`].
    Cluster(ClusterOp),
    /// A line printed by each thread that runs it: the format's pieces, one value per
    /// placeholder (see [`KernelBuilder::print`](super::KernelBuilder::print)).
    Print {
        /// The format, parsed.
        pieces: Vec<PrintPiece>,
        /// The values, in order.
        args: SmallVec<[ExprId; 4]>,
    },
    /// Reduces every item of the group's threads with `op` into `dst` (one item), at rank 0
    /// or, with `broadcast`, at every rank.
    Reduce(Reduction),
    /// Scans the group's items in position order (a blocked payload) into `dst`.
    Scan(ScanSpec),
    /// Each item combined with its neighbour in position order (adjacent difference,
    /// discontinuity flags, block shuffles).
    Neighbor(NeighborSpec),
    /// Each item of `src` goes to tile position `ranks` (same slot), then `dst` reads the tile
    /// in arrangement `to`. Ranks past the tile and items flagged 0 are skipped.
    Scatter {
        /// The group (the block).
        group: GroupId,
        /// The items.
        src: DataId,
        /// Their tile positions (`u32`).
        ranks: DataId,
        /// Per item, 1 to scatter it, 0 to skip it (`u32`).
        flags: Option<DataId>,
        /// The result.
        dst: DataId,
        /// The arrangement of the result.
        to: Arrangement,
        /// The value (bits) of positions nothing was scattered to (`None`: no value).
        holes: Option<u64>,
        /// The ranks are a permutation of the tile (the builder's promise): no holes.
        permutation: bool,
        /// The ranks lie inside the tile by construction (a library sort's own), so the
        /// writes go unguarded; never set by the public controls, whose ranks are checked.
        inside: bool,
        /// Every item holds a defined value (a library sort's sort bits), so the read-back
        /// may take narrow items packed in words; never set by the public controls.
        defined: bool,
    },
    /// `dst` holds `src`'s tile positions in arrangement `to` (through shared memory when the
    /// arrangements differ).
    Exchange {
        /// The group (for participation).
        group: GroupId,
        /// The payload.
        src: DataId,
        /// The result.
        dst: DataId,
        /// The arrangement of the result.
        to: Arrangement,
        /// How the items move between threads.
        via: ExchangeVia,
    },
    /// A grid-stride loop over the tiles of `n` elements: tile `b, b + grid, ...` for block
    /// `b`. Field 0 is the tile index, 1 its first element, 2 its valid count.
    Tiles {
        /// Total elements.
        n: ExprId,
        /// The body.
        body: RegionId,
    },
}

impl OpKind {
    /// A short name for messages (`load`, `map`...).
    pub fn name(&self) -> &'static str {
        match self {
            OpKind::Load(_) => "load",
            OpKind::Store(_) => "store",
            OpKind::Map { .. } => "map",
            OpKind::SetItem { .. } => "set_item",
            OpKind::Assign { .. } => "assign",
            OpKind::If { .. } => "if",
            OpKind::For { .. } => "for",
            OpKind::While { .. } => "while",
            OpKind::Break => "break",
            OpKind::Continue => "continue",
            OpKind::ReturnIf { .. } => "return_if",
            OpKind::Assert { .. } => "assert",
            OpKind::Tiles { .. } => "tiles",
            OpKind::SharedWrite { .. } => "shared_write",
            OpKind::LocalWrite { .. } => "local_write",
            OpKind::GlobalWrite { .. } => "write",
            OpKind::ReadRun { .. } => "read_run",
            OpKind::WriteRun { .. } => "write_run",
            OpKind::Atomic(_) => "atomic",
            OpKind::SyncBlock => "sync_block",
            OpKind::Nanosleep { .. } => "nanosleep",
            OpKind::Lanes(l) => l.op.name(),
            OpKind::SyncGrid => "sync_grid",
            OpKind::Cluster(c) => c.name(),
            OpKind::Print { .. } => "print",
            OpKind::Reduce(_) => "reduce",
            OpKind::Scan(_) => "scan",
            OpKind::Exchange { .. } => "exchange",
            OpKind::Neighbor(_) => "neighbor",
            OpKind::Scatter { .. } => "scatter",
        }
    }

    /// Whether the op is a loop (`for`, `while`, `tiles`): what `break_` and `continue_` act on.
    pub fn is_loop(&self) -> bool {
        matches!(
            self,
            OpKind::For { .. } | OpKind::While { .. } | OpKind::Tiles { .. }
        )
    }

    /// The group the op runs collectively over, if it is a collective.
    pub fn group(&self) -> Option<GroupId> {
        match self {
            OpKind::Load(t) | OpKind::Store(t) => Some(t.group),
            OpKind::Reduce(r) => Some(r.group),
            OpKind::Scan(s) => Some(s.group),
            OpKind::Exchange { group, .. } => Some(*group),
            OpKind::Neighbor(nb) => Some(nb.group),
            OpKind::Scatter { group, .. } => Some(*group),
            OpKind::Lanes(l) => Some(l.group),
            _ => None,
        }
    }

    /// The regions nested in this op.
    pub fn regions(&self) -> SmallVec<[RegionId; 2]> {
        match self {
            OpKind::If {
                then, otherwise, ..
            } => {
                let mut v = SmallVec::new();
                v.push(*then);
                if let Some(o) = otherwise {
                    v.push(*o);
                }
                v
            }
            OpKind::For { body, .. } | OpKind::While { body, .. } | OpKind::Tiles { body, .. } => {
                let mut v = SmallVec::new();
                v.push(*body);
                v
            }
            OpKind::Scan(ScanSpec {
                callback: Some(c), ..
            }) => {
                let mut v = SmallVec::new();
                v.push(c.body);
                v
            }
            _ => SmallVec::new(),
        }
    }

    /// The expressions the op evaluates.
    pub fn exprs(&self) -> SmallVec<[ExprId; 3]> {
        let mut v = SmallVec::new();
        match self {
            OpKind::Load(t) | OpKind::Store(t) => {
                v.extend(t.offset);
                v.extend(t.valid.map(|v| v.count));
            }
            OpKind::Map { expr, .. } | OpKind::SetItem { expr, .. } => v.push(*expr),
            OpKind::Assign { .. } => {}
            OpKind::If { cond, .. }
            | OpKind::While { cond, .. }
            | OpKind::ReturnIf { cond }
            | OpKind::Assert { cond, .. } => v.push(*cond),
            OpKind::For {
                start, end, step, ..
            } => {
                v.push(*start);
                v.push(*end);
                v.extend(*step);
            }
            OpKind::Tiles { n, .. } => v.push(*n),
            OpKind::ReadRun { index, .. } | OpKind::WriteRun { index, .. } => v.push(*index),
            OpKind::Atomic(a) => {
                v.push(a.index);
                v.push(a.value);
                v.extend(a.compare);
            }
            OpKind::SharedWrite { index, value, .. }
            | OpKind::LocalWrite { index, value, .. }
            | OpKind::GlobalWrite { index, value, .. } => {
                v.push(*index);
                v.push(*value);
            }
            OpKind::Print { args, .. } => v.extend(args.iter().copied()),
            OpKind::Cluster(c) => v.extend(c.exprs()),
            OpKind::Lanes(l) => {
                v.extend(l.value);
                v.extend(l.lane);
            }
            OpKind::SyncBlock
            | OpKind::Nanosleep { .. }
            | OpKind::SyncGrid
            | OpKind::Break
            | OpKind::Continue
            | OpKind::Exchange { .. }
            | OpKind::Scatter { .. } => {}
            OpKind::Neighbor(nb) => {
                v.extend(nb.op);
                v.extend(nb.edge);
                v.extend(nb.valid);
            }
            OpKind::Reduce(r) => {
                v.extend(r.valid);
                if let ReduceOp::Custom { expr, .. } = r.op {
                    v.push(expr);
                }
            }
            OpKind::Scan(s) => {
                v.extend(s.initial);
                v.extend(s.valid);
                v.extend(s.callback.as_ref().map(|c| c.prefix));
                if let ReduceOp::Custom { expr, .. } = s.op {
                    v.push(expr);
                }
            }
        }
        v
    }
}

/// An op and where the user made it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OpData {
    /// What it does.
    pub kind: OpKind,
    /// Where it was made.
    pub loc: Loc,
}

/// The block shape requested with `block(..)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlockShape {
    /// Threads in x, y, z.
    pub dims: [u32; 3],
    /// Where it was set.
    pub loc: Loc,
}

impl BlockShape {
    /// Total threads (saturating).
    pub fn threads(&self) -> u32 {
        self.dims.iter().fold(1u32, |acc, &d| acc.saturating_mul(d))
    }
}

/// A problem the builder noticed while recording (reported by the verifier with the rest).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum BuilderIssue {
    /// `group_by(width)` with a width outside 1, 2, 4, 8, 16, 32.
    GroupWidth {
        /// The width asked for.
        width: u32,
        /// Where.
        loc: Loc,
    },
    /// `set_item` past the payload's items.
    ItemOutOfRange {
        /// The slot asked for.
        item: u32,
        /// The payload's items.
        items: u32,
        /// Where.
        loc: Loc,
    },
    /// A payload alignment that is not a power of two at least the element size.
    DataAlign {
        /// The alignment asked for.
        align: u32,
        /// Where.
        loc: Loc,
    },
    /// A payload with 0 items or more than [`MAX_ITEMS_PER_THREAD`].
    Items {
        /// The count asked for.
        items: u32,
        /// Where.
        loc: Loc,
    },
    /// Two parameters with one name.
    DuplicateParam {
        /// The name.
        name: String,
        /// Where.
        loc: Loc,
    },
    /// A print whose format does not fit its values.
    PrintFormat {
        /// What is wrong.
        problem: PrintProblem,
        /// Where.
        loc: Loc,
    },
    /// A radix sort whose controls do not fit its keys or group.
    RadixSort {
        /// What is wrong.
        problem: RadixSortProblem,
        /// Where.
        loc: Loc,
    },
    /// A merge sort whose group or inputs it cannot sort.
    MergeSort {
        /// What is wrong.
        problem: MergeSortProblem,
        /// Where.
        loc: Loc,
    },
    /// A warp or block primitive whose controls do not fit its inputs or group.
    Primitive {
        /// What is wrong.
        problem: PrimitiveProblem,
        /// Where.
        loc: Loc,
    },
    /// A handle made by another builder (see [`VerifyErrorKind::ForeignHandle`]).
    ///
    /// [`VerifyErrorKind::ForeignHandle`]: super::VerifyErrorKind::ForeignHandle
    ForeignHandle {
        /// What kind of handle.
        what: &'static str,
        /// Where it was used.
        loc: Loc,
    },
}

impl BuilderIssue {
    /// Points the problem at `at`: the user's call whose collective found it.
    pub(crate) fn set_loc(&mut self, at: Loc) {
        match self {
            BuilderIssue::GroupWidth { loc, .. }
            | BuilderIssue::ItemOutOfRange { loc, .. }
            | BuilderIssue::DataAlign { loc, .. }
            | BuilderIssue::Items { loc, .. }
            | BuilderIssue::DuplicateParam { loc, .. }
            | BuilderIssue::PrintFormat { loc, .. }
            | BuilderIssue::RadixSort { loc, .. }
            | BuilderIssue::MergeSort { loc, .. }
            | BuilderIssue::Primitive { loc, .. }
            | BuilderIssue::ForeignHandle { loc, .. } => *loc = at,
        }
    }
}

/// The kernel IR: everything the builder recorded.
#[derive(Debug, Clone)]
pub struct Ir {
    /// The kernel's name (the PTX entry is derived from it).
    pub name: String,
    /// The block shape.
    pub block: BlockShape,
    /// The thread-block cluster shape (sm_90), when set.
    pub cluster: Option<ClusterShape>,
    /// Default items per thread of payloads.
    pub items_per_thread: u32,
    /// Where `items_per_thread` was set.
    pub items_loc: Loc,
    /// Reject arrangement mismatches instead of converting through shared memory.
    pub strict_arrangements: bool,
    /// Whether loads and stores are guarded by the lengths of the buffers passed.
    pub bounds: Bounds,
    /// Compile options: register limit, line information, debug checks.
    pub options: CompileOptions,
    /// Parameters, in signature order.
    pub params: Vec<ParamDecl>,
    /// Groups.
    pub groups: Vec<GroupDecl>,
    /// Payloads.
    pub datas: Vec<DataDecl>,
    /// Temp storages.
    pub storages: Vec<StorageDecl>,
    /// Shared arrays.
    pub arrays: Vec<ArrayDecl>,
    /// Per-thread local arrays.
    pub locals: Vec<LocalDecl>,
    /// Constant arrays.
    pub consts: Vec<ConstDecl>,
    /// Expressions.
    pub exprs: Arena,
    /// Ops.
    pub ops: Vec<OpData>,
    /// Regions: ordered op lists.
    pub regions: Vec<Vec<OpId>>,
    /// The kernel body.
    pub body: RegionId,
    /// Problems noticed while recording.
    pub issues: Vec<BuilderIssue>,
}

impl Ir {
    /// The op behind an id.
    pub fn op(&self, id: OpId) -> &OpData {
        &self.ops[id.index()]
    }

    /// The expression node behind an id.
    pub fn expr(&self, id: ExprId) -> &ExprNode {
        &self.exprs.nodes()[id.index()]
    }

    /// The ops of a region, in order.
    pub fn region(&self, id: RegionId) -> &[OpId] {
        &self.regions[id.index()]
    }

    /// Per parameter, whether some access indexes it with 64-bit indices: a read, write or
    /// atomic by an `Expr<u64>` index. Such a buffer's length is passed as a `u64` where bounds are
    /// checked (others pass a `u32`).
    pub fn wide_indexed(&self) -> Vec<bool> {
        let mut wide = vec![false; self.params.len()];
        let is_wide = |e: ExprId| {
            self.exprs
                .get(e)
                .is_some_and(|n| n.ty == super::expr::VType::D(DType::U64))
        };
        let mut mark = |p: ParamId, index: ExprId| {
            if is_wide(index)
                && let Some(w) = wide.get_mut(p.index())
            {
                *w = true;
            }
        };
        for n in self.exprs.nodes() {
            if let super::expr::ExprKind::GlobalRead(p, i) = n.kind {
                mark(p, i);
            }
        }
        for op in &self.ops {
            match &op.kind {
                OpKind::GlobalWrite { param, index, .. }
                | OpKind::ReadRun { param, index, .. }
                | OpKind::WriteRun { param, index, .. } => mark(*param, *index),
                OpKind::Atomic(AtomicSpec {
                    memory: AtomicMemory::Global(param),
                    index,
                    ..
                }) => mark(*param, *index),
                _ => {}
            }
        }
        wide
    }

    /// Whether the kernel synchronizes the whole grid ([`OpKind::SyncGrid`]), so that every
    /// block of a launch must be resident at once: such a kernel is launched cooperatively.
    pub fn needs_cooperative(&self) -> bool {
        self.ops
            .iter()
            .any(|op| matches!(op.kind, OpKind::SyncGrid))
    }

    /// Whether the kernel reads, writes or updates another block's shared array
    /// ([`ClusterOp::Read`], [`ClusterOp::Write`], [`ClusterOp::Atomic`]).
    pub fn uses_remote_shared(&self) -> bool {
        (self.ops.iter()).any(|op| matches!(&op.kind, OpKind::Cluster(c) if c.array().is_some()))
    }

    /// Whether the kernel runs in thread-block clusters: it sets a cluster shape or uses a
    /// cluster op.
    pub fn uses_cluster(&self) -> bool {
        self.cluster.is_some() || (self.ops.iter()).any(|op| matches!(op.kind, OpKind::Cluster(_)))
    }

    /// Threads in the block.
    pub fn block_threads(&self) -> u32 {
        self.block.threads()
    }

    /// Threads in a group.
    pub fn group_threads(&self, g: GroupId) -> u32 {
        match self.groups[g.index()].kind {
            GroupKind::Block => self.block_threads(),
            GroupKind::LogicalWarp { width } => width,
            GroupKind::Warps { warps } => warps.saturating_mul(32),
        }
    }

    /// The partitions of the block into groups of whole warps that the kernel's collectives
    /// use and that synchronize with barriers of their own (more than one warp per group, and
    /// fewer than the block's, whose barrier is the block's), in the order they were first
    /// used, each as `(warps per group, groups)`. Each group needs
    /// a barrier of its own for the whole kernel (a group's barrier must never gather another
    /// group's warps), so the kernel needs as many named barriers as the groups here count
    /// together.
    pub fn warp_partitions(&self) -> Vec<(u32, u32)> {
        let block_warps = self.block_threads() / 32;
        let mut out: Vec<(u32, u32)> = Vec::new();
        for g in &self.groups {
            if let GroupKind::Warps { warps } = g.kind
                && warps > 1
                && warps < block_warps
                && !out.iter().any(|&(w, _)| w == warps)
            {
                out.push((warps, block_warps / warps));
            }
        }
        out
    }

    /// A hash of every field (source locations included): what the verifier's [`Info`] is
    /// checked against, so that a later stage never runs on an IR other than the one verified.
    ///
    /// [`Info`]: super::Info
    pub fn fingerprint(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let Ir {
            name,
            block,
            items_per_thread,
            items_loc,
            strict_arrangements,
            params,
            groups,
            datas,
            storages,
            arrays,
            locals,
            consts,
            exprs,
            ops,
            regions,
            body,
            issues,
            bounds,
            options,
            cluster,
        } = self;
        let mut h = rustc_hash::FxHasher::default();
        (bounds, options, cluster).hash(&mut h);
        (
            name,
            block,
            items_per_thread,
            items_loc,
            strict_arrangements,
        )
            .hash(&mut h);
        (params, groups, datas, storages, arrays, locals, consts).hash(&mut h);
        (exprs.nodes(), ops, regions, body, issues).hash(&mut h);
        h.finish()
    }

    /// Visits every op in program order (pre-order through regions), with its nesting depth.
    /// Each region is entered once and ids past the tables are skipped, so the walk ends on
    /// any IR, verified or not.
    pub fn walk(&self, mut f: impl FnMut(OpId, usize)) {
        let mut entered = vec![false; self.regions.len()];
        let mut enter = |r: RegionId| match entered.get_mut(r.index()) {
            Some(e) if !*e => {
                *e = true;
                true
            }
            _ => false,
        };
        // (region, next op in it, depth).
        let mut stack = Vec::new();
        if enter(self.body) {
            stack.push((self.body, 0usize, 0usize));
        }
        while let Some(top) = stack.last_mut() {
            let (r, next, depth) = *top;
            let Some(&op) = self.regions[r.index()].get(next) else {
                stack.pop();
                continue;
            };
            top.1 += 1;
            f(op, depth);
            if let Some(data) = self.ops.get(op.index()) {
                // Reversed, so the first nested region is walked first.
                for sub in data.kind.regions().into_iter().rev() {
                    if enter(sub) {
                        stack.push((sub, 0, depth + 1));
                    }
                }
            }
        }
    }
}

//! Verifier errors: each pinned to the user's source line, all collected in one pass.

use super::dtype::DType;
use super::entities::{DataId, Loc, OpId, ParamId, RegionId};
use super::expr::{Axis, VType};
use super::format::PrintProblem;
use super::ops::{
    AtomicOp, GroupKind, LaneOp, MemoryOrder, MergeSortProblem, PrimitiveProblem, RadixSortProblem,
    Role,
};
use std::fmt;

/// What is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyErrorKind {
    /// The block has more than 1024 threads.
    BlockTooLarge {
        /// Threads asked for.
        threads: u64,
    },
    /// A block dimension is 0.
    EmptyBlock,
    /// A block extent along one axis past the hardware's limit (1024 along x and y, 64
    /// along z).
    BlockDimension {
        /// The axis.
        axis: Axis,
        /// The extent asked for.
        size: u32,
        /// The limit along that axis.
        max: u32,
    },
    /// Items per thread of 0 or above the bound.
    ItemsPerThread {
        /// The count asked for.
        items: u32,
        /// The bound ([`super::ops::MAX_ITEMS_PER_THREAD`]).
        max: u32,
    },
    /// Debug checks in a kernel without bounds checks: they compare indices with the buffers'
    /// lengths, which such a kernel does not take.
    ChecksWithoutBounds,
    /// A register limit outside the range every arch accepts.
    MaxRegisters {
        /// The limit asked for.
        count: u32,
        /// The fewest ([`super::options::MIN_MAX_REGISTERS`]).
        min: u32,
        /// The most ([`super::options::MAX_MAX_REGISTERS`]).
        max: u32,
    },
    /// Blocks per SM that are none, or more than one SM holds.
    MinBlocks {
        /// The blocks asked for.
        count: u32,
        /// Threads of the block.
        threads: u64,
        /// Threads an SM holds ([`super::options::SM_THREADS`]).
        sm_threads: u32,
    },
    /// A register limit that the block's threads cannot all have at once on one SM.
    RegistersPastFile {
        /// The limit asked for.
        count: u32,
        /// Threads of the block.
        threads: u64,
        /// Registers of an SM ([`super::options::REGISTER_FILE`]).
        file: u32,
    },
    /// A logical-warp width outside 1, 2, 4, 8, 16, 32.
    GroupWidth {
        /// The width asked for.
        width: u32,
    },
    /// A group of whole warps of no warps, more warps than the block has, or made from a group
    /// other than the block.
    WarpGroupSize {
        /// Warps per group asked for (0 where the parent was not the block).
        warps: u32,
        /// Warps of the block.
        block_warps: u32,
    },
    /// Groups of whole warps whose barriers need more named barriers than a block has (15
    /// besides the block's own): each group of more than one warp of every partition the
    /// kernel's collectives and group barriers (`sync`) use takes one.
    TooManyWarpGroupBarriers {
        /// Named barriers needed.
        needed: u32,
        /// Named barriers a block has besides the block's own.
        max: u32,
    },
    /// A collective over a partition into groups of whole warps that leaves warps over, outside
    /// [`KernelBuilder::if_member`] of that partition: the warps left over would run it in no
    /// group.
    ///
    /// [`KernelBuilder::if_member`]: crate::KernelBuilder::if_member
    CollectiveOutsideMembership {
        /// Warps per group.
        warps: u32,
        /// Warps of the block.
        block_warps: u32,
    },
    /// An op that groups of whole warps do not run: they run reductions, scans, exchanges
    /// (through shared memory or shuffles, not time-sliced), their barrier (`sync`), and
    /// loads and stores by the direct, striped and vectorized algorithms.
    NotForWarpGroups {
        /// The op's name.
        op: &'static str,
    },
    /// A warp-level op in a block whose size is not a multiple of 32.
    WarpOpInPartialWarpBlock {
        /// Threads in the block.
        block: u32,
    },
    /// An algorithm a group cannot use (the warp-transposing ones on logical warps).
    AlgorithmNotForGroup {
        /// The algorithm.
        algorithm: super::ops::Algorithm,
        /// The group.
        group: GroupKind,
    },
    /// A collective under a branch or loop whose condition differs between threads of the
    /// group, so some threads of the group would not take part.
    NonUniformCollective {
        /// The group the collective runs over.
        group: GroupKind,
        /// Where the varying condition was written.
        condition: Loc,
    },
    /// A collective or `sync_block` after a `return_if` whose condition differs between the
    /// threads of the block: the threads that left would not take part (the planner may
    /// synchronize the whole block around any collective, so the exit must be uniform across
    /// the block).
    CollectiveAfterReturn {
        /// The group the collective runs over (the block for `sync_block`).
        group: GroupKind,
        /// Where the `return_if` was written.
        exit: Loc,
    },
    /// `sync_grid` under a branch or loop whose condition is not the same in every thread of
    /// the grid (it depends on the thread's or the block's index, a thread's variable, or it
    /// is a `tiles` loop, whose trip count differs between blocks): the threads that skip it
    /// would leave the others waiting at the grid barrier for ever.
    NonUniformGridSync {
        /// Where the condition (or loop) was written.
        condition: Loc,
    },
    /// `sync_grid` after a `return_if` whose condition is not the same in every thread of the
    /// grid: the threads that left would never arrive at the grid barrier.
    GridSyncAfterReturn {
        /// Where the `return_if` was written.
        exit: Loc,
    },
    /// A cluster barrier (`sync_cluster`, `cluster_arrive`, `cluster_wait`) under a branch or
    /// loop whose condition may differ between the threads of a cluster (it depends on a
    /// thread's or block's index, a cluster rank, a thread's variable, or it is a `tiles`
    /// loop): the threads that skip it would leave the cluster waiting for ever.
    NonUniformClusterSync {
        /// Where the condition (or loop) was written.
        condition: Loc,
    },
    /// A cluster barrier after a `return_if` whose condition may differ between the threads
    /// of a cluster: the threads that left would never arrive.
    ClusterSyncAfterReturn {
        /// Where the `return_if` was written.
        exit: Loc,
    },
    /// A split cluster barrier that does not pair up: an arrive with no wait after it before
    /// the next arrive or the kernel's end, a wait without an arrive before it, or a branch
    /// or loop body that leaves the barrier in another state than it found it.
    UnpairedClusterBarrier {
        /// What is wrong.
        problem: &'static str,
    },
    /// A cluster op or cluster shape in a kernel with more than
    /// [`MAX_CLUSTER_BLOCKS`](super::ops::MAX_CLUSTER_BLOCKS) blocks per cluster (or an
    /// extent of 0).
    ClusterSize {
        /// The shape asked for.
        dims: [u32; 3],
    },
    /// A cluster op in a kernel without a cluster shape
    /// ([`KernelBuilder::cluster`](super::KernelBuilder::cluster)).
    ClusterOpWithoutShape,
    /// A grid barrier in a kernel that runs in clusters (a cooperative launch of clusters is
    /// not supported).
    ClusterWithGridSync,
    /// A `return_if` in a kernel that accesses another block's shared array: the kernel ends
    /// with a cluster barrier (a block's shared memory must outlive the other blocks'
    /// accesses to it), which the threads that left would never reach.
    ExitWithRemoteShared {
        /// Where the `return_if` was written.
        exit: Loc,
    },
    /// `break_` or `continue_` outside any loop (a scan's prefix callback is no loop's body).
    JumpOutsideLoop {
        /// `break_` or `continue_`.
        what: &'static str,
    },
    /// `return_if` inside a scan's prefix callback, which runs in the middle of the scan.
    ReturnInCallback,
    /// A stepped loop whose step is the constant 0.
    ZeroStep,
    /// A payload slot read before anything wrote it on every path.
    UninitializedRead {
        /// The payload.
        data: DataId,
        /// The slot.
        item: u32,
        /// Where the payload was made.
        declared: Loc,
    },
    /// A slot read at threads where it may hold no value, by an op that observes it (a
    /// collective, a store, a condition, a loop bound, an offset, a count, a shared write).
    PartlyDefinedRead {
        /// The payload.
        data: DataId,
        /// The slot.
        item: u32,
        /// Where it holds a value.
        defined: DefinedAt,
        /// The op that left it so (the reduction, the scatter, or the branch on the rank).
        producer: Loc,
    },
    /// A parameter used with the wrong role (in an IR edited by hand: a typed handle cannot
    /// be).
    ParamRole {
        /// The parameter.
        param: ParamId,
        /// The role the use needs.
        expected: Role,
        /// The role it was declared with.
        found: Role,
    },
    /// An index of a type it cannot have (in an IR edited by hand: the typed builder takes
    /// only those): a buffer's is `u32` or `u64`, an array's (shared, local or constant)
    /// `u32`.
    IndexType {
        /// The index's type.
        found: VType,
        /// Whether it indexes a buffer (else an array).
        buffer: bool,
    },
    /// A second dynamic shared array: a kernel has at most one (it lies at the end of the
    /// launch's dynamic shared memory).
    SecondDynamicArray {
        /// Where the first was declared.
        first: Loc,
    },
    /// A view of the kernel's dynamic shared array
    /// ([`shared_view`](crate::KernelBuilder::shared_view)): its length is known only at
    /// launch.
    DynamicArrayView,
    /// A local or constant array of no elements.
    EmptyArray {
        /// What kind of array (`local`, `constant`).
        what: &'static str,
    },
    /// Local arrays holding more bytes per thread than a thread can have.
    LocalMemory {
        /// Bytes of the kernel's local arrays up to this one.
        bytes: u64,
        /// The limit ([`MAX_LOCAL_BYTES`](super::ops::MAX_LOCAL_BYTES)).
        max: u64,
    },
    /// Constant arrays holding more bytes than a module's constant bank.
    ConstMemory {
        /// Bytes of the kernel's constant arrays up to this one.
        bytes: u64,
        /// The limit ([`MAX_CONST_BYTES`](super::ops::MAX_CONST_BYTES)).
        max: u64,
    },
    /// An atomic on an element type it does not take (in an IR edited by hand: the typed
    /// builder's bounds reject it): atomics take 32- and 64-bit integers and floats, the
    /// bitwise ones integers only, `inc` and `dec` unsigned integers only.
    AtomicType {
        /// The operation.
        op: AtomicOp,
        /// The element type.
        dtype: DType,
    },
    /// A compare-and-swap without a value to compare with, or another atomic with one.
    AtomicCompare {
        /// The operation.
        op: AtomicOp,
    },
    /// An atomic load ([`Atomic::load`](crate::ir::Atomic::load)) of a shared array's element,
    /// or with an order that releases: it reads buffer elements, relaxed or acquiring.
    AtomicLoad {
        /// Its memory order.
        order: MemoryOrder,
        /// Whether it reads a shared array (or another block's, in a cluster).
        shared: bool,
    },
    /// A lane collective (shuffle, vote, match, tile barrier) of a group that is not a tile:
    /// they run within one warp, over a logical warp of 1 to 32 threads.
    LaneOpNotOnTile {
        /// The op.
        op: LaneOp,
        /// The group it names.
        group: GroupKind,
    },
    /// A lane collective without the operands its op takes, or with ones it does not take
    /// (hand-built IR).
    LaneOperands {
        /// The op.
        op: LaneOp,
    },
    /// An op of a partition (a coalesced, labeled or binary group) outside the region its
    /// partition was made in, or after an exit (`return_if`, `break_`, `continue_`) that may
    /// have taken some of its members away: the lanes that run it would not be its members.
    PartitionOutOfPlace {
        /// Where the partition was made.
        made: Loc,
    },
    /// An op of a partition whose members are not a payload a partition op wrote
    /// (hand-built IR).
    NotAPartition {
        /// The payload.
        data: DataId,
    },
    /// A parameter or payload whose dtype differs from its use.
    TypeMismatch {
        /// What the use needs.
        expected: VType,
        /// What it has.
        found: VType,
    },
    /// A handle that does not belong to this kernel.
    UnknownHandle {
        /// What kind of handle.
        what: &'static str,
        /// Its index.
        index: u32,
    },
    /// Payloads of different item counts used together.
    ItemsMismatch {
        /// The first payload's items.
        expected: u32,
        /// The other's.
        found: u32,
    },
    /// A slot index past the payload's items.
    ItemOutOfRange {
        /// The slot.
        item: u32,
        /// The payload's items.
        items: u32,
    },
    /// `index::item()` or a map operand used outside a `map` body.
    MapValueOutsideMap,
    /// A loop variable used outside its loop.
    LoopVarOutOfScope {
        /// The loop.
        lp: OpId,
    },
    /// Two parameters with one name.
    DuplicateParam {
        /// The name.
        name: String,
    },
    /// A kernel name that is not a valid PTX identifier once sanitized (empty).
    EmptyName,
    /// An exclusive scan without an initial value (its first output would be undefined).
    ExclusiveScanNeedsInitial,
    /// An op that only a block group can run (scatters).
    BlockOnly,
    /// A right adjacent difference over a partial tile given an edge item: its last valid
    /// position keeps its input, so no position is differenced with the item after the tile.
    EdgeOfPartialRightDifference,
    /// A commutative-only algorithm with an operator declared not commutative.
    NotCommutative,
    /// `valid_items` on a scan over more than 32 threads (as CUB's block scans, they take
    /// whole tiles).
    ValidItemsNeedWarpGroup,
    /// An exclusive temp storage used by more than one op.
    ExclusiveStorageShared {
        /// Where the first op using it was written.
        first: Loc,
    },
    /// An alignment that is not a power of two (or is 0).
    BadAlignment {
        /// The alignment asked for.
        align: u32,
    },
    /// A shared array of no elements or more bytes than a block can have.
    ArraySize {
        /// Elements asked for.
        len: u32,
    },
    /// A [`nanosleep`](crate::KernelBuilder::nanosleep) longer than PTX allows.
    SleepTooLong {
        /// The delay asked for, in nanoseconds.
        ns: u32,
        /// The longest, [`MAX_NANOSLEEP_NS`](super::MAX_NANOSLEEP_NS).
        max: u32,
    },
    /// A load's or store's offset or valid count that may differ between threads that move
    /// one tile together (see [`super::Uniformity`]).
    NonUniformTransfer {
        /// Which control.
        control: TransferControl,
        /// Threads that must agree on it: the group's (the block's for a block count).
        threads: u32,
    },
    /// A load or store at the default offset with a payload whose items per thread differ
    /// from the kernel's: the default offset steps by the kernel's tile (block threads times
    /// items per thread), which the payload would not fill, or would overrun.
    TileItems {
        /// The payload's items per thread.
        items: u32,
        /// The kernel's items per thread.
        items_per_thread: u32,
        /// Where the kernel's items per thread were set.
        set_at: Loc,
    },
    /// More parameters than an entry can take.
    ParameterSpace {
        /// Bytes the parameters take (counted as [`super::ops::MAX_PARAM_BYTES`] says).
        bytes: usize,
        /// The bound.
        max: usize,
    },
    /// A temp storage of more bytes than a block can have.
    StorageSize {
        /// Bytes asked for.
        bytes: u32,
    },
    /// Regions (branches, loops, prefix callbacks) nested deeper than the bound.
    NestingTooDeep {
        /// The bound ([`super::ops::MAX_NESTING`]).
        max: usize,
    },
    /// A math-library function at a type the library does not have it for (hand-built IR:
    /// the typed builder offers each at `f32` and `f64` only).
    MathFunctionType {
        /// The function.
        function: &'static str,
        /// Its type in the IR.
        found: VType,
    },
    /// An expression deeper than the bound (each operator is one level above its operands).
    ExpressionTooDeep {
        /// The expression's depth.
        depth: u32,
        /// The bound ([`super::ops::MAX_EXPR_DEPTH`]).
        max: u32,
    },
    /// A region that is the body of more than one op, the kernel body used as an op's body,
    /// or a region holding an op whose body encloses it: regions must form a tree.
    RegionReused {
        /// The region.
        region: RegionId,
    },
    /// An op listed in more than one place of the regions.
    OpListedTwice,
    /// A print whose format does not fit its values.
    PrintFormat(PrintProblem),
    /// A radix sort whose controls do not fit its keys or its group.
    RadixSort(RadixSortProblem),
    /// A merge sort over a group or of inputs it cannot sort.
    MergeSort(MergeSortProblem),
    /// A warp or block primitive (a segmented or batched warp reduction, a histogram) whose
    /// controls do not fit its inputs or its group.
    Primitive(PrimitiveProblem),
    /// A handle made by another kernel builder.
    ForeignHandle {
        /// What kind of handle.
        what: &'static str,
    },
    /// An arrangement striped over groups of `threads` threads asked of an exchange or a
    /// scatter where the groups do not tile the block (`threads` must divide it).
    StripedGroup {
        /// Threads per group asked for.
        threads: u32,
        /// Threads in the block.
        block: u32,
    },
    /// An exchange over groups of whole warps to an arrangement striped over groups of
    /// threads that do not tile each group of warps (each group exchanges its own tile).
    StripedPastWarpGroup {
        /// Threads per striped group asked for.
        threads: u32,
        /// Threads in each group of warps.
        group: u32,
    },
}

/// Where a slot holds a value when not at every thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefinedAt {
    /// At the threads whose rank is a multiple of `threads`: rank 0 of each group of
    /// `threads` (a reduction's result without broadcast).
    RankZero {
        /// The group width.
        threads: u32,
    },
    /// Only where a scatter put something.
    Scattered,
}

/// A control of a load or store, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransferControl {
    /// The offset.
    Offset,
    /// The valid count.
    ValidItems,
}

/// One verifier finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyError {
    /// What is wrong.
    pub kind: VerifyErrorKind,
    /// The user's source line it points at.
    pub loc: Loc,
    /// The op it concerns, if any.
    pub op: Option<OpId>,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.loc)?;
        if let Some(op) = self.op {
            write!(f, "{op}: ")?;
        }
        use VerifyErrorKind::*;
        match &self.kind {
            BlockTooLarge { threads } => {
                write!(f, "a block of {threads} threads is over the limit of 1024")
            }
            EmptyBlock => write!(f, "a block dimension is 0"),
            BlockDimension { axis, size, max } => write!(
                f,
                "a block of {size} threads along {}; at most {max} are allowed there",
                axis.name()
            ),
            ItemsPerThread { items, max } => {
                write!(f, "{items} items per thread; it must be 1..={max}")
            }
            ChecksWithoutBounds => write!(
                f,
                "debug checks need the buffers' lengths, which unchecked_bounds leaves out"
            ),
            MaxRegisters { count, min, max } => write!(
                f,
                "a limit of {count} registers per thread; it must be {min}..={max}"
            ),
            MinBlocks {
                count,
                threads,
                sm_threads,
            } => write!(
                f,
                "at least {count} blocks per SM of {threads} threads: it must be 1 or more, and \
                 that many blocks must fit the {sm_threads} threads of an SM"
            ),
            RegistersPastFile {
                count,
                threads,
                file,
            } => write!(
                f,
                "a limit of {count} registers per thread for {threads} threads: a block needs \
                 more than the {file} registers of an SM"
            ),
            GroupWidth { width } => write!(
                f,
                "logical warp width {width} is not one of 1, 2, 4, 8, 16, 32"
            ),
            WarpGroupSize { warps, block_warps } => write!(
                f,
                "groups of {warps} whole warps of the block: a group takes 1 to the block's \
                 {block_warps} warps and is made from the block"
            ),
            TooManyWarpGroupBarriers { needed, max } => write!(
                f,
                "the kernel's groups of whole warps need {needed} named barriers; a block has \
                 {max} besides its own"
            ),
            CollectiveOutsideMembership { warps, block_warps } => write!(
                f,
                "collective over groups of {warps} warps outside `if_member`: the block's \
                 {block_warps} warps leave {} in no group",
                block_warps % (*warps).max(1)
            ),
            NotForWarpGroups { op } => write!(
                f,
                "`{op}` does not run over groups of whole warps (reductions, scans, exchanges \
                 not time-sliced, `sync`, and loads and stores by the direct, striped and \
                 vectorized algorithms do)"
            ),
            WarpOpInPartialWarpBlock { block } => write!(
                f,
                "warp-level op in a block of {block} threads, which is not a multiple of 32"
            ),
            AlgorithmNotForGroup { algorithm, group } => write!(
                f,
                "{algorithm:?} works over a block of whole warps, not over {group:?}"
            ),
            NonUniformCollective { group, condition } => write!(
                f,
                "collective over {group:?} under a condition that varies within the group \
                 (written at {condition}); some of its threads would not take part"
            ),
            CollectiveAfterReturn { group, exit } => write!(
                f,
                "collective over {group:?} after a `return_if` (at {exit}) whose condition \
                 varies across the block; the threads that left would not take part"
            ),
            NonUniformGridSync { condition } => write!(
                f,
                "`sync_grid` under a condition or loop that is not the same in every thread of \
                 the grid (written at {condition}); the threads that skip it would leave the \
                 others waiting for ever"
            ),
            GridSyncAfterReturn { exit } => write!(
                f,
                "`sync_grid` after a `return_if` (at {exit}) whose condition is not the same in \
                 every thread of the grid; the threads that left would never arrive"
            ),
            NonUniformClusterSync { condition } => write!(
                f,
                "cluster barrier under a condition or loop that may differ between the threads \
                 of a cluster (written at {condition}); the threads that skip it would leave \
                 the others waiting for ever"
            ),
            ClusterSyncAfterReturn { exit } => write!(
                f,
                "cluster barrier after a `return_if` (at {exit}) whose condition may differ \
                 between the threads of a cluster; the threads that left would never arrive"
            ),
            UnpairedClusterBarrier { problem } => {
                write!(f, "split cluster barrier does not pair up: {problem}")
            }
            ClusterSize { dims } => write!(
                f,
                "a cluster of {dims:?} blocks; a cluster has 1 to {} blocks",
                super::ops::MAX_CLUSTER_BLOCKS
            ),
            ClusterOpWithoutShape => write!(
                f,
                "a cluster op in a kernel without a cluster shape (set one with `.cluster(n)`)"
            ),
            ClusterWithGridSync => write!(
                f,
                "`sync_grid` in a kernel that runs in clusters (cooperative cluster launches \
                 are not supported)"
            ),
            ExitWithRemoteShared { exit } => write!(
                f,
                "`return_if` (at {exit}) in a kernel that accesses another block's shared \
                 array: the kernel ends with a cluster barrier the threads that left would \
                 never reach"
            ),
            JumpOutsideLoop { what } => write!(f, "`{what}` outside a loop"),
            ReturnInCallback => write!(
                f,
                "`return_if` inside a scan's prefix callback, which runs in the middle of \
                 the scan"
            ),
            ZeroStep => write!(f, "a loop step of 0 (the loop would never advance)"),
            UninitializedRead {
                data,
                item,
                declared,
            } => write!(
                f,
                "slot {item} of payload {data} (made at {declared}) is read before anything \
                 wrote it"
            ),
            PartlyDefinedRead {
                data,
                item,
                defined: DefinedAt::RankZero { threads },
                producer,
            } => write!(
                f,
                "slot {item} of payload {data} holds a value only at rank 0 of each group of \
                 {threads} threads (made so at {producer}), but is read here at other threads \
                 too; broadcast the reduction, store it with `valid_items(1)`, or read it \
                 under `if rank == 0`"
            ),
            PartlyDefinedRead {
                data,
                item,
                defined: DefinedAt::Scattered,
                producer,
            } => write!(
                f,
                "slot {item} of payload {data} holds a value only where the scatter at \
                 {producer} put one, but is read here where it may not; bound the read with a \
                 valid count, or give the scatter a hole value"
            ),
            ParamRole {
                param,
                expected,
                found,
            } => write!(
                f,
                "parameter {param} is used as {expected:?} but was declared {found:?}"
            ),
            AtomicType { op, dtype } => write!(
                f,
                "atomic {op:?} on {dtype}: atomics take i32, u32, i64, u64, f32 and f64 (and, \
                 or, xor integers only; inc, dec u32 and u64 only)"
            ),
            LaneOpNotOnTile { op, group } => write!(
                f,
                "`{}` runs within one warp: it needs a tile (a logical warp of 1 to 32 \
                 threads), not {group:?}",
                op.name()
            ),
            PartitionOutOfPlace { made } => write!(
                f,
                "an op of the partition made at {made} runs outside the region it was made in, \
                 or after an exit there: the lanes that run it may not be its members"
            ),
            NotAPartition { data } => write!(
                f,
                "{data} is not the result of `coalesced_threads`, `labeled_partition` or \
                 `binary_partition`"
            ),
            LaneOperands { op } => write!(
                f,
                "`{}` takes {}",
                op.name(),
                match op {
                    LaneOp::Sync => "no value, lane or result",
                    LaneOp::Coalesce => "a result only",
                    o if o.takes_lane() => "a value, a lane and a result",
                    _ => "a value and a result, and no lane",
                }
            ),
            AtomicLoad { order, shared } => {
                let what = if *shared {
                    "a shared array's element".to_string()
                } else {
                    format!("with order {order:?}")
                };
                write!(
                    f,
                    "atomic load {what}: an atomic load reads a buffer element, with order \
                     Relaxed or Acquire (a shared array is read in order by barriers)"
                )
            }
            AtomicCompare { op } => write!(
                f,
                "atomic {op:?}: a compare-and-swap takes the value to compare with, and no other \
                 atomic takes one"
            ),
            IndexType {
                found,
                buffer: true,
            } => write!(
                f,
                "a buffer index of type {found}; indices are u32 (or u64 for buffers of more \
                 than u32::MAX elements)"
            ),
            IndexType {
                found,
                buffer: false,
            } => write!(
                f,
                "an array index of type {found}; array indices are u32 (cast others with \
                 `.cast::<u32>()`)"
            ),
            DynamicArrayView => write!(
                f,
                "a view of the dynamic shared array, whose length is known only at launch; \
                 view an array of a fixed length"
            ),
            EmptyArray { what } => write!(f, "a {what} array of no elements"),
            SecondDynamicArray { first } => write!(
                f,
                "a second dynamic shared array; the kernel has one already (declared at \
                 {first}), and may have only one"
            ),
            LocalMemory { bytes, max } => write!(
                f,
                "the kernel's local arrays take {bytes} bytes per thread; a thread can have at \
                 most {max}"
            ),
            ConstMemory { bytes, max } => write!(
                f,
                "the kernel's constant arrays take {bytes} bytes; a module can have at most \
                 {max}"
            ),
            TypeMismatch { expected, found } => {
                write!(f, "type mismatch: expected {expected}, found {found}")
            }
            UnknownHandle { what, index } => {
                write!(f, "{what} #{index} does not belong to this kernel")
            }
            ItemsMismatch { expected, found } => write!(
                f,
                "payloads of {expected} and {found} items per thread used together"
            ),
            ItemOutOfRange { item, items } => {
                write!(f, "slot {item} is past the payload's {items} items")
            }
            MapValueOutsideMap => write!(f, "a map operand or item index used outside map"),
            LoopVarOutOfScope { lp } => {
                write!(f, "the variable of loop {lp} is used outside that loop")
            }
            DuplicateParam { name } => write!(f, "a second parameter named `{name}`"),
            EmptyName => write!(f, "the kernel name is empty"),
            ExclusiveScanNeedsInitial => {
                write!(f, "an exclusive scan needs an initial value")
            }
            BlockOnly => write!(f, "this op runs over the block only"),
            EdgeOfPartialRightDifference => write!(
                f,
                "a right difference over a partial tile keeps its last valid position, so it \
                 takes no edge item"
            ),
            NotCommutative => write!(
                f,
                "raking_commutative_only needs a commutative operator; use raking"
            ),
            ValidItemsNeedWarpGroup => write!(
                f,
                "valid_items on a scan needs a warp or logical-warp group"
            ),
            ExclusiveStorageShared { first } => write!(
                f,
                "an exclusive temp storage is used here and by the op at {first}"
            ),
            BadAlignment { align } => write!(
                f,
                "alignment {align} is not a power of two at least the element size"
            ),
            ArraySize { len } => write!(
                f,
                "a shared array of {len} elements; it needs 1 to 65536 elements in all (of \
                 one to three dimensions) and at most 227 KiB"
            ),
            SleepTooLong { ns, max } => write!(
                f,
                "a nanosleep of {ns} ns; PTX sleeps at most {max} ns (1 ms) at a time"
            ),
            NonUniformTransfer { control, threads } => write!(
                f,
                "the {} may differ between the {threads} threads that move one tile together; \
                 it must be uniform across them",
                match control {
                    TransferControl::Offset => "offset",
                    TransferControl::ValidItems => "valid count",
                }
            ),
            TileItems {
                items,
                items_per_thread,
                set_at,
            } => write!(
                f,
                "a payload of {items} items per thread at the default offset, which steps by \
                 tiles of {items_per_thread} items per thread (set at {set_at}); give the \
                 offset explicitly or use a payload of {items_per_thread} items"
            ),
            ParameterSpace { bytes, max } => write!(
                f,
                "the parameters take {bytes} bytes (8 per parameter, and 4 per buffer for its \
                 length where bounds are checked, 8 where indexed with u64); an entry takes at \
                 most {max}"
            ),
            StorageSize { bytes } => write!(
                f,
                "a temp storage of {bytes} bytes; a block can have at most 227 KiB"
            ),
            NestingTooDeep { max } => write!(
                f,
                "branches and loops nested more than {max} deep; split the kernel or flatten \
                 the nesting"
            ),
            MathFunctionType { function, found } => write!(
                f,
                "the math function `{function}` at {found}: the library has it at f32 and f64 \
                 only"
            ),
            ExpressionTooDeep { depth, max } => write!(
                f,
                "an expression {depth} levels deep; at most {max} are allowed (give long sums \
                 or chains a tree shape, or split them over several maps)"
            ),
            RegionReused { region } => write!(
                f,
                "{region} is the body of more than one op or encloses the op it is the body \
                 of; regions must form a tree"
            ),
            OpListedTwice => write!(f, "the op is listed in more than one region"),
            PrintFormat(problem) => write!(f, "{problem}"),
            RadixSort(problem) => write!(f, "{problem}"),
            MergeSort(problem) => write!(f, "{problem}"),
            Primitive(problem) => write!(f, "{problem}"),
            ForeignHandle { what } => write!(
                f,
                "this {what} was made by another kernel builder; use handles of the builder \
                 that records the op"
            ),
            StripedGroup { threads, block } => write!(
                f,
                "striped over groups of {threads} threads, which do not tile the block's \
                 {block} threads; use a number of threads that divides {block}"
            ),
            StripedPastWarpGroup { threads, group } => write!(
                f,
                "striped over groups of {threads} threads, which do not tile each group of \
                 warps' {group} threads (each group exchanges its own tile); use a number of \
                 threads that divides {group}"
            ),
        }
    }
}

/// Every error the verifier found, with the kernel's listing.
#[derive(Debug, Clone)]
pub struct VerifyErrors {
    /// The errors, in the order found.
    pub errors: Vec<VerifyError>,
    /// The kernel in text form with each error beside its op.
    pub listing: String,
}

impl VerifyErrors {
    /// Whether any error is of this kind (compared by variant).
    pub fn has(&self, pred: impl Fn(&VerifyErrorKind) -> bool) -> bool {
        self.errors.iter().any(|e| pred(&e.kind))
    }
}

impl fmt::Display for VerifyErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "the kernel has {} error(s):", self.errors.len())?;
        for e in &self.errors {
            writeln!(f, "  {e}")?;
        }
        write!(f, "{}", self.listing)
    }
}

impl std::error::Error for VerifyErrors {}

impl From<DType> for VType {
    fn from(d: DType) -> VType {
        VType::D(d)
    }
}

//! The kernel IR: dtypes, groups, payloads, expressions, ops, control flow and the verifier.
//!
//! What a kernel is written with lives here, re-exported from the files that hold it: the
//! [`KernelBuilder`] and the controls its methods take ([`Load`], [`Store`], [`Atomic`],
//! [`Reduce`], [`Scan`], [`RadixSort`], [`MergeSort`], [`Histogram`], [`Difference`], [`Flags`], [`Shuffle`], [`Scatter`], [`StorageSpec`]),
//! the handles it hands out ([`Input`], [`Output`], [`Buffer`], [`ThreadData`], [`Group`],
//! ...), the expression DSL ([`Expr`], [`index`]) and the verifier's errors ([`VerifyErrors`]).
//! The recorded IR is public for inspection: its tables ([`ops`]), expression nodes
//! ([`expr`]), text listing ([`print`](mod@print)) and the verifier ([`verify`](mod@verify)).
//!
//! Architecture invariant: ir/ knows nothing of CUDA, PTX or the planner. The builder records;
//! the verifier ([`verify::verify`]) checks and returns [`verify::Info`], which every later
//! stage requires.

pub(crate) mod builder;
mod defined;
pub(crate) mod dtype;
pub(crate) mod entities;
pub(crate) mod error;
pub mod expr;
pub(crate) mod format;
pub mod graph;
pub(crate) mod handles;
mod identity;
pub mod math;
pub mod ops;
pub mod options;
pub mod print;
pub mod verify;

pub use builder::{
    Atomic, BatchOutput, BinaryFn, Cluster, DEFAULT_RADIX_BITS, Decoded, Difference, FlagFn, Flags,
    Grid, Histogram, HistogramAlgorithm, KernelBuilder, Load, MAX_COUNTER_WORDS, MEMO_WORDS,
    MergeSort, Pipeline, PrintArg, PrintArgs, PrintValue, RadixRank, RadixSort, RankAlgorithm,
    RankedDigits, Reduce, RemoteShared, Runs, Scan, Scatter, Segments, Shuffle, SortOrder,
    SortOutput, StorageSpec, Store, TopK,
};
pub use dtype::{AtomicElement, AtomicInt, AtomicUnsigned, DType, Element};
pub use entities::{
    ArrayId, ConstId, DataId, ExprId, GroupId, Loc, LocalId, OpId, ParamId, RegionId, StorageId,
};
pub use error::{DefinedAt, TransferControl, VerifyError, VerifyErrorKind, VerifyErrors};
pub use expr::{Expr, index, select};
pub use format::{MAX_PRINT_DECIMALS, PrintPiece, PrintProblem, PrintSpec};
pub use handles::{
    ArrayIndex, AtomicTarget, Buffer, ConstArray, ElementIndex, Group, Input, LaneGroup,
    LocalArray, Output, Partition, Readable, Scalar, SharedArray, TempStorage, ThreadData, Tile,
    Var, Warp, Writable,
};
pub use ops::{
    Algorithm, Arrangement, AtomicOp, Bounds, ClusterOp, ClusterShape, ExchangeVia, GroupKind, Ir,
    MAX_CLUSTER_BLOCKS, MAX_LAUNCH_CLUSTER_BLOCKS, MAX_NANOSLEEP_NS, MemoryOrder, MemoryScope,
    MergeSortProblem, NeighborKind, PrimitiveProblem, RadixSortProblem, ReduceAlgorithm, ReduceOp,
    Role, ScanAlgorithm, Sharing, ValidItems, ValidOf,
};
pub use options::{
    ArrayMemory, CheckKind, CheckSite, Checks, CompileOptions, LineInfo, MathMode, MaxRegisters,
    MinBlocks,
};
pub use verify::{Info, Uniformity};

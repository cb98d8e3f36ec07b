//! Atomics in the IR: what an atomic does, its memory order and scope, and the memory it
//! updates.

use super::{DType, DataId, ExprId};
use crate::ir::entities::{ArrayId, ParamId};

/// What an atomic does to the element it updates (`old` is the element's value before, `v` the
/// operand): each returns `old`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    /// `old + v` (wrapping for integers; `f32` flushes subnormal operands and results to
    /// zero, as PTX's `atom.add.f32` does).
    Add,
    /// `old - v`, as [`AtomicOp::Add`] of `-v`.
    Sub,
    /// The smaller; for floats NaN-propagating (a NaN operand or element gives NaN), with
    /// `-0.0` below `+0.0`.
    Min,
    /// The larger; for floats NaN-propagating, with `-0.0` below `+0.0`.
    Max,
    /// The smaller, a NaN treated as missing (`nan_min(NaN, x) == x`), as Numba's `nanmin`;
    /// [`AtomicOp::Min`] for integers.
    NanMin,
    /// The larger, a NaN treated as missing, as Numba's `nanmax`; [`AtomicOp::Max`] for
    /// integers.
    NanMax,
    /// `old & v` (integers).
    And,
    /// `old | v` (integers).
    Or,
    /// `old ^ v` (integers).
    Xor,
    /// `v`.
    Exch,
    /// `v` where `old == compare` (floats compared by their bits), else `old`.
    Cas,
    /// `old >= v ? 0 : old + 1` (unsigned integers).
    Inc,
    /// `old == 0 || old > v ? v : old - 1` (unsigned integers).
    Dec,
    /// `old`, the element left as it is: an atomic read (PTX's `ld.relaxed` / `ld.acquire`),
    /// of a buffer element only, with a relaxed or acquire order. It reads without the trip
    /// through the L2's atomic units an `add` of 0 takes.
    Load,
}

impl AtomicOp {
    /// Whether the op takes element type `d`: every op takes the 32- and 64-bit integers and
    /// floats, except the bitwise ones (integers only) and `inc`/`dec` (unsigned only).
    pub fn takes(self, d: DType) -> bool {
        let atomic = matches!(
            d,
            DType::I32 | DType::U32 | DType::I64 | DType::U64 | DType::F32 | DType::F64
        );
        atomic
            && match self {
                AtomicOp::And | AtomicOp::Or | AtomicOp::Xor => d.is_int(),
                AtomicOp::Inc | AtomicOp::Dec => matches!(d, DType::U32 | DType::U64),
                _ => true,
            }
    }
}

/// The memory-synchronizing effect of an atomic, as C++'s `std::memory_order` (and PTX's
/// `.sem`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MemoryOrder {
    /// No ordering of other accesses (the default).
    #[default]
    Relaxed,
    /// Later accesses of the thread happen after it.
    Acquire,
    /// Earlier accesses of the thread happen before it.
    Release,
    /// Both.
    AcqRel,
}

/// The threads an atomic's memory order is observed by (PTX's `.scope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MemoryScope {
    /// The threads of the block (`.cta`).
    Block,
    /// Every thread of the GPU (`.gpu`, the default).
    #[default]
    Gpu,
    /// The GPU, the host and other GPUs (`.sys`).
    System,
}

/// The memory an atomic updates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AtomicMemory {
    /// An element of a buffer parameter (an output or a read-write buffer).
    Global(ParamId),
    /// An element of a shared array.
    Shared(ArrayId),
}

/// An atomic read-modify-write of one element.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AtomicSpec {
    /// The memory.
    pub memory: AtomicMemory,
    /// What it does.
    pub op: AtomicOp,
    /// The element (`u32`, or `u64` for buffers; `u32` for shared arrays).
    pub index: ExprId,
    /// The operand (for `cas`, the value stored where the element equals `compare`).
    pub value: ExprId,
    /// For `cas`: the value the element is compared with.
    pub compare: Option<ExprId>,
    /// The memory order.
    pub order: MemoryOrder,
    /// Its scope.
    pub scope: MemoryScope,
    /// A one-item payload receiving the element's value before the update (0 where bounds
    /// are checked and the index is past the buffer's end, which updates nothing).
    pub old: DataId,
}

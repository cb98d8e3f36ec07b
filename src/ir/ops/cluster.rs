//! Thread-block clusters in the IR (sm_90): the cluster shape a kernel runs in, the cluster
//! barrier, and accesses to the shared arrays of the other blocks of the cluster (distributed
//! shared memory).
//!
//! A cluster is `dims[0] x dims[1] x dims[2]` blocks of the grid, adjacent along each axis
//! (CUDA's `__cluster_dims__`); block `(x, y, z)` of the grid has rank
//! `x % cx + cx * (y % cy + cy * (z % cz))` in its cluster.

use super::{AtomicOp, DataId, ExprId, MemoryOrder, MemoryScope};
use crate::ir::entities::{ArrayId, Loc};

/// The most blocks a cluster may have (CUDA's portable limit; 16 needs a non-portable
/// attribute the runtime does not set).
pub const MAX_CLUSTER_BLOCKS: u32 = 8;

/// The most blocks a cluster launched with a shape given at launch may have: 16 on sm_90
/// (the runtime allows CUDA's non-portable sizes past [`MAX_CLUSTER_BLOCKS`] for those).
pub const MAX_LAUNCH_CLUSTER_BLOCKS: u32 = 16;

/// The cluster shape set with [`KernelBuilder::cluster`](crate::KernelBuilder::cluster), or
/// left to each launch with
/// [`KernelBuilder::cluster_at_launch`](crate::KernelBuilder::cluster_at_launch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClusterShape {
    /// Blocks along x, y, z; `None` when each launch gives the shape.
    pub dims: Option<[u32; 3]>,
    /// Where it was set.
    pub loc: Loc,
}

impl ClusterShape {
    /// Blocks in the cluster (saturating), when the kernel fixes its shape.
    pub fn blocks(&self) -> Option<u32> {
        (self.dims).map(|d| d.iter().fold(1u32, |n, &d| n.saturating_mul(d)))
    }
}

/// What a cluster op does. Every thread of every block of the cluster runs the barriers;
/// a remote access is the running thread's alone, on the block of cluster rank `rank`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ClusterOp {
    /// `barrier.cluster.arrive` then `barrier.cluster.wait`: what every thread of the
    /// cluster did before it (to shared memory of any block of the cluster too) happens
    /// before what any does after it.
    Sync,
    /// `barrier.cluster.arrive` (release): the first half of a split barrier.
    Arrive,
    /// `barrier.cluster.wait` (acquire): the second half; it waits for every thread's
    /// arrival.
    Wait,
    /// `dst = array[index]` in the shared memory of the block of cluster rank `rank`.
    Read {
        /// The shared array (its copy in that block).
        array: ArrayId,
        /// The block's cluster rank (`u32`).
        rank: ExprId,
        /// The element (`u32`).
        index: ExprId,
        /// A one-item payload receiving the value.
        dst: DataId,
    },
    /// `array[index] = value` in the shared memory of the block of cluster rank `rank`.
    Write {
        /// The shared array.
        array: ArrayId,
        /// The block's cluster rank (`u32`).
        rank: ExprId,
        /// The element (`u32`).
        index: ExprId,
        /// The value.
        value: ExprId,
    },
    /// An atomic update of `array[index]` in the block of cluster rank `rank`; `old`
    /// receives the element's value before it.
    Atomic {
        /// The shared array.
        array: ArrayId,
        /// What it does.
        op: AtomicOp,
        /// The block's cluster rank (`u32`).
        rank: ExprId,
        /// The element (`u32`).
        index: ExprId,
        /// The operand (for `cas`, the value stored where the element equals `compare`).
        value: ExprId,
        /// For `cas`: the value the element is compared with.
        compare: Option<ExprId>,
        /// The memory order.
        order: MemoryOrder,
        /// Its scope.
        scope: MemoryScope,
        /// A one-item payload receiving the old value.
        old: DataId,
    },
}

impl ClusterOp {
    /// A short name for messages.
    pub fn name(&self) -> &'static str {
        match self {
            ClusterOp::Sync => "sync_cluster",
            ClusterOp::Arrive => "cluster_arrive",
            ClusterOp::Wait => "cluster_wait",
            ClusterOp::Read { .. } => "remote_read",
            ClusterOp::Write { .. } => "remote_write",
            ClusterOp::Atomic { .. } => "remote_atomic",
        }
    }

    /// The expressions it evaluates.
    pub fn exprs(&self) -> Vec<ExprId> {
        match self {
            ClusterOp::Sync | ClusterOp::Arrive | ClusterOp::Wait => Vec::new(),
            ClusterOp::Read { rank, index, .. } => vec![*rank, *index],
            ClusterOp::Write {
                rank, index, value, ..
            } => vec![*rank, *index, *value],
            ClusterOp::Atomic {
                rank,
                index,
                value,
                compare,
                ..
            } => [Some(*rank), Some(*index), Some(*value), *compare]
                .into_iter()
                .flatten()
                .collect(),
        }
    }

    /// The payload it writes.
    pub fn dst(&self) -> Option<DataId> {
        match self {
            ClusterOp::Read { dst, .. } => Some(*dst),
            ClusterOp::Atomic { old, .. } => Some(*old),
            _ => None,
        }
    }

    /// The shared array it touches in another block.
    pub fn array(&self) -> Option<ArrayId> {
        match self {
            ClusterOp::Read { array, .. }
            | ClusterOp::Write { array, .. }
            | ClusterOp::Atomic { array, .. } => Some(*array),
            _ => None,
        }
    }

    /// Whether it is (half of) a cluster barrier.
    pub fn is_barrier(&self) -> bool {
        matches!(self, ClusterOp::Sync | ClusterOp::Arrive | ClusterOp::Wait)
    }
}

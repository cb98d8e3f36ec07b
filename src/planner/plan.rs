//! The plan: plain data that code generation reads.

use super::alloc::Slice;
use super::barrier::Barrier;
use super::collective::CollectivePlan;
use super::exchange::ExchangePlan;
use super::form::PositionForm;
use super::ids::{IdVec, SliceId, StepId};
use super::schedule::Step;
use super::shared::SharedLayout;
use crate::ir::{Algorithm, Arrangement, ArrayId, DataId, OpId};

/// How one load or store moves its tile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferPlan {
    /// Threads in the group that moves the tile together.
    pub group_threads: u32,
    /// Items per thread.
    pub items: u32,
    /// The payload's arrangement.
    pub arrangement: Arrangement,
    /// Position of `(item, rank)` in the group's tile is
    /// `item * item_stride + rank * thread_stride` (derived from the layout algebra).
    pub item_stride: u32,
    /// See `item_stride`.
    pub thread_stride: u32,
    /// Elements in one group's tile: `group_threads * items`.
    pub group_tile: u32,
    /// Elements the whole block moves: `block_threads * items`.
    pub block_tile: u32,
    /// The enclosing `tiles` loop, which supplies the default offset and valid count.
    pub tiles: Option<OpId>,
    /// Whether loads may use the read-only (non-coherent) path.
    pub read_only: bool,
    /// The algorithm.
    pub algorithm: Algorithm,
    /// For `vectorize`: elements per vector access (1: scalar only).
    pub vector: u32,
    /// For a `vectorize` store: whether each pair of ranks `2k`, `2k + 1` writes its two runs
    /// together, so that every vector store of the pair covers one whole 32-byte sector
    /// (16-byte vectors, an even number of them a thread, in blocks of an even number of
    /// threads; the planner's `transfer::stores_in_pairs` decides). Never for a load.
    pub paired: bool,
}

/// Everything code generation needs to know beyond the IR. Only the planner makes one, from a
/// verified IR, when a kernel is built ([`Kernel::plan`](crate::Kernel::plan) shows it); its
/// fields are read through the accessors below, so code generation runs on nothing but what
/// the planner produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Threads per block.
    pub(crate) block_threads: u32,
    /// Elements per block tile at the default items per thread (the `tiles` loop's step).
    pub(crate) block_tile: u32,
    /// Each payload's arrangement (`None`: not tied to one, e.g. a fill).
    pub(crate) arrangements: IdVec<DataId, Option<Arrangement>>,
    /// Per op: the plan of a load or store.
    pub(crate) transfers: IdVec<OpId, Option<TransferPlan>>,
    /// Shared memory the kernel needs, in bytes: its static declarations (as ptxas allocates
    /// them at most) and its dynamic part.
    pub(crate) shared_bytes: u32,
    /// How that memory is declared: each shared array on its own where the static limit
    /// allows, and the window of the planned slices, static or dynamic.
    pub(crate) shared: SharedLayout,
    /// Per op, its exchanges through shared memory, in step order.
    pub(crate) exchanges: IdVec<OpId, Vec<ExchangePlan>>,
    /// Shared-memory slices.
    pub(crate) slices: IdVec<SliceId, Slice>,
    /// Per op, its shared-memory work: its steps, in the order its lowering takes them.
    pub(crate) steps: IdVec<OpId, Vec<Step>>,
    /// Barriers, each before one step of one op.
    pub(crate) barriers: Vec<Barrier>,
    /// Per shared array, its slice (at offset 0 of the array's own declaration, or in the
    /// window: see [`Plan::shared`]).
    pub(crate) arrays: IdVec<ArrayId, SliceId>,
    /// Per op, the shared memory of a block-wide collective.
    pub(crate) collectives: IdVec<OpId, Option<CollectivePlan>>,
    /// Per op that counts the valid items of its group's tile (a reduction, scan or neighbour
    /// op with a valid count), where its source's items lie in the tile.
    pub(crate) positions: IdVec<OpId, Option<PositionForm>>,
}

impl Plan {
    /// Threads per block.
    pub fn block_threads(&self) -> u32 {
        self.block_threads
    }

    /// Elements per block tile at the default items per thread (the `tiles` loop's step).
    pub fn block_tile(&self) -> u32 {
        self.block_tile
    }

    /// Each payload's arrangement (`None`: not tied to one, e.g. a fill).
    pub fn arrangements(&self) -> &IdVec<DataId, Option<Arrangement>> {
        &self.arrangements
    }

    /// Per op: the plan of a load or store.
    pub fn transfers(&self) -> &IdVec<OpId, Option<TransferPlan>> {
        &self.transfers
    }

    /// Shared memory the kernel needs, in bytes: its static declarations (as ptxas allocates
    /// them at most) and its dynamic part.
    pub fn shared_bytes(&self) -> u32 {
        self.shared_bytes
    }

    /// How that memory is declared: each shared array on its own where the static limit
    /// allows, and the window of the planned slices, static or dynamic.
    pub fn shared(&self) -> &SharedLayout {
        &self.shared
    }

    /// Per op, its exchanges through shared memory, in step order.
    pub fn exchanges(&self) -> &IdVec<OpId, Vec<ExchangePlan>> {
        &self.exchanges
    }

    /// Shared-memory slices.
    pub fn slices(&self) -> &IdVec<SliceId, Slice> {
        &self.slices
    }

    /// Per op, its shared-memory work: its steps, in the order its lowering takes them.
    pub fn steps(&self) -> &IdVec<OpId, Vec<Step>> {
        &self.steps
    }

    /// Step `id`.
    pub fn step(&self, id: StepId) -> Option<&Step> {
        self.steps.get(id.op)?.get(id.index as usize)
    }

    /// Barriers, each before one step of one op.
    pub fn barriers(&self) -> &[Barrier] {
        &self.barriers
    }

    /// Per shared array, its slice (at offset 0 of the array's own declaration, or in the
    /// window: see [`Plan::shared`]).
    pub fn arrays(&self) -> &IdVec<ArrayId, SliceId> {
        &self.arrays
    }

    /// Per op, the shared memory of a block-wide collective.
    pub fn collectives(&self) -> &IdVec<OpId, Option<CollectivePlan>> {
        &self.collectives
    }

    /// The barriers before step `step`.
    pub fn barriers_at(&self, step: StepId) -> impl Iterator<Item = &Barrier> {
        self.barriers.iter().filter(move |b| b.step == step)
    }
}

//! The shared-memory schedule: each op's shared-memory work as a list of steps.
//!
//! A step is a point in the op's lowering where a barrier may stand, followed by the accesses
//! the lowering makes before the next step: for each, which slice, which threads touch which
//! elements (a position form derived from a layout, or one of a few fixed patterns), whether
//! they write, and the scopes a barrier before the step may take. The planner file of each
//! op family builds its ops' steps (`exchange.rs`, `collective.rs`), from the same values it
//! puts in the op's plan; the barrier pass (`barrier.rs`) reads nothing else about shared
//! memory; code generation takes an op's steps in order ([`StepId`]s in the op's plan) and
//! emits the barriers planned before each, never numbering steps itself.

use super::form::{PositionForm, padded_slot};
use super::ids::{IdVec, SliceId, StepId};
use super::scope::SyncScope;
use crate::ir::OpId;

/// One step of an op's shared-memory work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The step.
    pub id: StepId,
    /// The scopes a barrier before the step may take, narrowest first, each covering the one
    /// before: the barrier takes the first that spans every pair of threads whose accesses
    /// conflict (the last one always).
    pub scopes: Vec<SyncScope>,
    /// The accesses, in the order the lowering makes them.
    pub accesses: Vec<Access>,
}

/// One shared-memory access of a step: which threads touch which elements of a slice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    /// The slice.
    pub slice: SliceId,
    /// Whether the threads write (else they read).
    pub write: bool,
    /// Bytes per element.
    pub elem_bytes: u32,
    /// One unused slot follows every this many positions (`None`: position `p` is slot `p`).
    pub padding: Option<u32>,
    /// Who touches which positions.
    pub touch: Touch,
}

impl Access {
    /// The slot (in elements from the slice's start) of position `p`.
    pub fn slot(&self, p: u32) -> u32 {
        padded_slot(p, self.padding)
    }
}

/// Which threads touch which positions (or slots) at an access.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Touch {
    /// Positions from a form: see [`Positions`].
    Positions(Positions),
    /// Lane `lane` of each warp touches the position of its warp's index.
    WarpLane {
        /// The lane.
        lane: u32,
    },
    /// Every thread touches every position below `count`.
    AllPositions {
        /// Positions touched.
        count: u32,
    },
    /// Every thread touches slot `slot` (past the padding).
    AllSlot {
        /// The slot.
        slot: u32,
    },
    /// Thread `thread` alone touches slot `slot` (past the padding).
    OneSlot {
        /// The thread.
        thread: u32,
        /// The slot.
        slot: u32,
    },
    /// Thread `t` touches position `t + shift` (modulo the block with `rotate`), where the
    /// block has that position.
    Neighbor {
        /// The distance.
        shift: i64,
        /// Whether positions wrap around the block.
        rotate: bool,
    },
    /// Any thread may touch any position below `count`: the positions are known only at run
    /// time (a scatter's ranks).
    Anywhere {
        /// Positions that may be touched.
        count: u32,
    },
    /// Rank `rank` of each of the first `groups` groups of `group` consecutive threads
    /// touches its group's slot: `base + j` for group `j` (past the padding).
    GroupLead {
        /// Threads per group.
        group: u32,
        /// The rank in its group of the thread that touches.
        rank: u32,
        /// Groups, from thread 0.
        groups: u32,
        /// Group 0's slot.
        base: u32,
    },
    /// Every thread of each of the first `groups` groups of `group` consecutive threads
    /// touches its group's `slots` slots: `base + j * slots ..` for group `j` (past the
    /// padding).
    GroupSlot {
        /// Threads per group.
        group: u32,
        /// Groups, from thread 0.
        groups: u32,
        /// Group 0's first slot.
        base: u32,
        /// Slots per group.
        slots: u32,
    },
}

/// Threads `first..first + threads` (those in the block) in groups of `group`: thread `t`, of
/// rank `r = (t - first) % group` in group `j = (t - first) / group`, touches positions
/// `form.position(i, r)` for `i < items` (those below `below`), in its group's region, which
/// starts `j * region` slots into the slice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Positions {
    /// The first thread.
    pub first: u32,
    /// Threads from the first.
    pub threads: u32,
    /// Threads per group.
    pub group: u32,
    /// Slots from one group's region to the next's.
    pub region: u32,
    /// Where each `(item, rank)` lies in the region.
    pub(crate) form: PositionForm,
    /// Items per thread.
    pub items: u32,
    /// Only positions below this are touched.
    pub below: Option<u32>,
}

/// Appends a step to `op`'s list: a barrier before it may take `scopes`; `accesses` follow it.
pub(super) fn add_step(
    steps: &mut IdVec<OpId, Vec<Step>>,
    op: OpId,
    scopes: Vec<SyncScope>,
    accesses: Vec<Access>,
) -> StepId {
    let list = &mut steps[op];
    let id = StepId {
        op,
        index: list.len() as u32,
    };
    list.push(Step {
        id,
        scopes,
        accesses,
    });
    id
}

/// The scopes a barrier over aligned groups of `group` threads may take (0: none), then the
/// block.
pub(super) fn group_then_block(group: u32) -> Vec<SyncScope> {
    match group {
        0 => vec![SyncScope::Block],
        threads => vec![SyncScope::Group { threads }, SyncScope::Block],
    }
}

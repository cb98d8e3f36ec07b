//! Lane collectives in the IR: shuffles, votes, matches and barriers among the threads of one
//! tile (a logical warp of 1 to 32 lanes), as Cooperative Groups' `thread_block_tile` methods.
//!
//! A tile is the [`GroupKind::LogicalWarp`] its op names: tile `i` of width `w` holds the
//! block's threads `i*w .. i*w + w` (by linear rank); the block's last tile has fewer threads
//! where `w` does not divide the block. Every op takes its member mask from the tile: the
//! threads of the tile that exist. Ranks are the threads' ranks within the tile.
//!
//! [`GroupKind::LogicalWarp`]: super::GroupKind::LogicalWarp

use super::{DataId, ExprId, GroupId};

/// What a lane collective computes, for the thread of tile rank `r` in a tile of `n` threads
/// (`n` = the width, fewer in the block's last tile) and width `w`. A source rank outside the
/// tile's `n` threads gives the thread its own value, as CUDA's shuffles do at the tile's
/// edges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LaneOp {
    /// The value of rank `lane % w` (`shfl.sync.idx`).
    Shfl,
    /// The value of rank `r - delta` (`shfl.sync.up`); own value where `r < delta`.
    ShflUp,
    /// The value of rank `r + delta` (`shfl.sync.down`); own value where that passes `n`.
    ShflDown,
    /// The value of rank `r ^ (mask % w)` (`shfl.sync.bfly`).
    ShflXor,
    /// Whether the predicate holds on any thread of the tile (`vote.sync.any`).
    Any,
    /// Whether it holds on every thread of the tile (`vote.sync.all`).
    All,
    /// Bit `i` set where it holds on rank `i` (`vote.sync.ballot`, shifted to the tile).
    Ballot,
    /// Bit `i` set where rank `i` holds the same value (bits) as this thread
    /// (`match.any.sync`, shifted to the tile): sm_70 and later.
    MatchAny,
    /// The tile's mask (bits `0..n`) where every thread holds the same value, else 0
    /// (`match.all.sync`): sm_70 and later.
    MatchAll,
    /// A barrier of the tile's threads (`bar.warp.sync`): their shared and global accesses
    /// before it happen before those after it.
    Sync,
    /// The lanes of the warp that run it together, as lane bits (`activemask`): the members
    /// of a coalesced group. Its group is the warp; it needs no participation.
    Coalesce,
    /// The lanes of the group whose value has the same bits as this thread's, as lane bits
    /// (`match.any.sync`): the members of this thread's part of a labeled partition.
    Labeled,
    /// The lanes of the group whose predicate equals this thread's, as lane bits (a ballot):
    /// the members of this thread's part of a binary partition.
    Binary,
}

impl LaneOp {
    /// Every lane collective, in declaration order.
    pub const ALL: [LaneOp; 13] = [
        LaneOp::Shfl,
        LaneOp::ShflUp,
        LaneOp::ShflDown,
        LaneOp::ShflXor,
        LaneOp::Any,
        LaneOp::All,
        LaneOp::Ballot,
        LaneOp::MatchAny,
        LaneOp::MatchAll,
        LaneOp::Sync,
        LaneOp::Coalesce,
        LaneOp::Labeled,
        LaneOp::Binary,
    ];

    /// Its name, as the builder method's.
    pub fn name(self) -> &'static str {
        match self {
            LaneOp::Shfl => "shfl",
            LaneOp::ShflUp => "shfl_up",
            LaneOp::ShflDown => "shfl_down",
            LaneOp::ShflXor => "shfl_xor",
            LaneOp::Any => "any",
            LaneOp::All => "all",
            LaneOp::Ballot => "ballot",
            LaneOp::MatchAny => "match_any",
            LaneOp::MatchAll => "match_all",
            LaneOp::Sync => "sync",
            LaneOp::Coalesce => "coalesced_threads",
            LaneOp::Labeled => "labeled_partition",
            LaneOp::Binary => "binary_partition",
        }
    }

    /// Whether it takes a rank, delta or mask operand (the shuffles).
    pub fn takes_lane(self) -> bool {
        matches!(
            self,
            LaneOp::Shfl | LaneOp::ShflUp | LaneOp::ShflDown | LaneOp::ShflXor
        )
    }

    /// Whether its value is a predicate (the votes and binary partitions).
    pub fn votes(self) -> bool {
        matches!(
            self,
            LaneOp::Any | LaneOp::All | LaneOp::Ballot | LaneOp::Binary
        )
    }

    /// Whether it takes a value.
    pub fn takes_value(self) -> bool {
        !matches!(self, LaneOp::Sync | LaneOp::Coalesce)
    }

    /// Whether it gives a result.
    pub fn gives_result(self) -> bool {
        self != LaneOp::Sync
    }

    /// Whether its result is a set of lanes of the warp (the members of a partition), not
    /// of tile ranks.
    pub fn makes_partition(self) -> bool {
        matches!(self, LaneOp::Coalesce | LaneOp::Labeled | LaneOp::Binary)
    }
}

/// A lane collective: every thread of the tile runs it together, or, with `members`, every
/// thread of a partition (a set of lanes of the warp).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LaneSpec {
    /// The tile (a logical warp; the warp for an op of a partition).
    pub group: GroupId,
    /// The partition the op runs over instead of the tile: the one-item `u32` payload an op
    /// that [makes partitions](LaneOp::makes_partition) wrote, holding its lanes. Ranks are
    /// then the members' ranks in lane order, and the op is run by exactly those lanes: the
    /// verifier has it in the region its partition was made in, with no exit between.
    pub members: Option<DataId>,
    /// What it computes.
    pub op: LaneOp,
    /// The value shuffled or matched (any dtype), or the predicate voted on (`bool`); none
    /// for [`LaneOp::Sync`].
    pub value: Option<ExprId>,
    /// The shuffles' source rank, delta or mask (`u32`).
    pub lane: Option<ExprId>,
    /// The one-item payload that receives the result: the value's dtype for shuffles, `u32`
    /// for the others (0 or 1 for `any` and `all`); none for [`LaneOp::Sync`].
    pub out: Option<DataId>,
}

//! What a neighbour op (adjacent differences, discontinuity flags, block shuffles) computes.

use crate::ir::entities::{DataId, ExprId, GroupId};

/// What a neighbour op computes, for position `p` of the group's tile (blocked order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NeighborKind {
    /// `op(x[p], x[p - 1])` (default `x[p] - x[p - 1]`); position 0 takes the tile predecessor
    /// (`edge`) or is copied.
    AdjacentLeft,
    /// `op(x[p], x[p + 1])`; the last position takes the tile successor or is copied.
    AdjacentRight,
    /// Head flags: `op(x[p - 1], x[p])` (default `!=`) as 1 or 0; position 0 compares with the
    /// predecessor, else is a head.
    Heads,
    /// Tail flags: `op(x[p], x[p + 1])`; the last position compares with the successor, else
    /// is a tail.
    Tails,
    /// `x[p - 1]` (block shuffle up); position 0 takes `edge` or keeps its value.
    ShiftUp,
    /// `x[p + 1]` (block shuffle down); the last position takes `edge` or keeps its value.
    ShiftDown,
    /// One item per thread: the value of rank `r + distance`, when in the group (else kept).
    Offset(i32),
    /// One item per thread: the value of rank `(r + distance) mod size`.
    Rotate(i32),
}

/// A neighbour op.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NeighborSpec {
    /// The group.
    pub group: GroupId,
    /// The payload (blocked; others are converted).
    pub src: DataId,
    /// The result (flags are `u32` 1 or 0).
    pub dst: DataId,
    /// What to compute.
    pub kind: NeighborKind,
    /// The operator (`Arg(0)`, `Arg(1)` as documented per kind); `None`: the default.
    pub op: Option<ExprId>,
    /// The tile predecessor or successor value.
    pub edge: Option<ExprId>,
    /// For `ShiftUp`, the item shifted out of the tile (its last); for `ShiftDown`, the item
    /// shifted out at the front (its first): a one-item payload at every rank.
    pub shifted_out: Option<DataId>,
    /// Adjacent differences over a partial tile: positions from this count on (and, looking
    /// right, the last valid one) keep their input.
    pub valid: Option<ExprId>,
}

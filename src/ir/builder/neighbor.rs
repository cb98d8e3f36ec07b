//! Ops between neighbouring positions of a group's tile: adjacent differences, head and
//! tail flags, block shuffles, and scatters to ranks.

use super::KernelBuilder;
use crate::ir::dtype::Element;
use crate::ir::entities::{DataId, ExprId, Loc};
use crate::ir::expr::{Expr, ExprType};
use crate::ir::handles::{Group, ThreadData};
use crate::ir::ops::*;

/// An operator on two items: `(this, neighbour) -> result`.
pub type BinaryFn<T> = fn(Expr<T>, Expr<T>) -> Expr<T>;

/// A flag operator on two items in position order: `(earlier, later) -> flag`.
pub type FlagFn<T> = fn(Expr<T>, Expr<T>) -> Expr<bool>;

impl KernelBuilder {
    #[track_caller]
    fn neighbor<T: Element, U: Element>(
        &mut self,
        group: Group,
        src: &ThreadData<T>,
        kind: NeighborKind,
        op: Option<ExprId>,
        edge: Option<ExprId>,
    ) -> ThreadData<U> {
        self.neighbor_out(group, src, kind, op, edge, None)
    }

    #[track_caller]
    fn neighbor_out<T: Element, U: Element>(
        &mut self,
        group: Group,
        src: &ThreadData<T>,
        kind: NeighborKind,
        op: Option<ExprId>,
        edge: Option<ExprId>,
        shifted_out: Option<DataId>,
    ) -> ThreadData<U> {
        let loc = Loc::caller();
        let group = self.group_id(group);
        let dst = self.thread_data_n::<U>(src.items);
        let src_id = self.data_id(src);
        self.push(
            OpKind::Neighbor(NeighborSpec {
                group,
                src: src_id,
                dst: dst.id,
                kind,
                op,
                edge,
                shifted_out,
                valid: None,
            }),
            loc,
        );
        dst
    }

    /// A neighbour op whose operator is `f(Arg(0), Arg(1))`.
    #[track_caller]
    fn neighbor_fn<T: Element, U: Element, R: ExprType>(
        &mut self,
        group: Group,
        src: &ThreadData<T>,
        kind: NeighborKind,
        f: fn(Expr<T>, Expr<T>) -> Expr<R>,
        edge: Option<Expr<T>>,
    ) -> ThreadData<U> {
        let body = f(Expr::arg(0), Expr::arg(1));
        let op = Some(self.expr(&body));
        let edge = edge.as_ref().map(|e| self.expr(e));
        self.neighbor(group, src, kind, op, edge)
    }

    /// Adjacent differences in position order: `x[p] - x[p - 1]`, or `f(x[p], x[p - 1])`;
    /// position 0 uses `predecessor` (the item before the tile) or keeps its value.
    #[track_caller]
    pub fn adjacent_difference_left<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        f: Option<BinaryFn<T>>,
        predecessor: Option<Expr<T>>,
    ) -> ThreadData<T> {
        self.neighbor_fn(
            group.into(),
            src,
            NeighborKind::AdjacentLeft,
            f.unwrap_or(|a, b| a - b),
            predecessor,
        )
    }

    /// [`adjacent_difference_left`](Self::adjacent_difference_left) over a partial tile:
    /// positions from `valid` on keep their input (CUB's `SubtractLeftPartialTile`).
    #[track_caller]
    pub fn adjacent_difference_left_partial<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        f: Option<BinaryFn<T>>,
        predecessor: Option<Expr<T>>,
        valid: impl Into<Expr<u32>>,
    ) -> ThreadData<T> {
        let d = self.adjacent_difference_left(group, src, f, predecessor);
        self.set_neighbor_valid(d.id, valid.into());
        d
    }

    /// [`adjacent_difference_right`](Self::adjacent_difference_right) over a partial tile:
    /// the last valid position and those after it keep their input (CUB's
    /// `SubtractRightPartialTile`).
    #[track_caller]
    pub fn adjacent_difference_right_partial<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        f: Option<BinaryFn<T>>,
        valid: impl Into<Expr<u32>>,
    ) -> ThreadData<T> {
        let d = self.adjacent_difference_right(group, src, f, None);
        self.set_neighbor_valid(d.id, valid.into());
        d
    }

    /// Sets the valid count of the neighbour op that produced `dst` (the last op recorded).
    fn set_neighbor_valid(&mut self, dst: DataId, valid: Expr<u32>) {
        let e = self.expr(&valid);
        if let Some(OpData {
            kind: OpKind::Neighbor(nb),
            loc,
        }) = self.ir.ops.last_mut()
            && nb.dst == dst
        {
            nb.valid = Some(e);
            let loc = *loc;
            self.flush_foreign(loc);
        }
    }

    /// Adjacent differences to the right: `x[p] - x[p + 1]`, or `f(x[p], x[p + 1])`; the last
    /// position uses `successor` or keeps its value.
    #[track_caller]
    pub fn adjacent_difference_right<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        f: Option<BinaryFn<T>>,
        successor: Option<Expr<T>>,
    ) -> ThreadData<T> {
        self.neighbor_fn(
            group.into(),
            src,
            NeighborKind::AdjacentRight,
            f.unwrap_or(|a, b| a - b),
            successor,
        )
    }

    /// Head flags (1 where a run starts): `x[p - 1] != x[p]`, or `f(x[p - 1], x[p])`; position
    /// 0 compares with `predecessor`, else is a head.
    #[track_caller]
    pub fn flag_heads<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        f: Option<FlagFn<T>>,
        predecessor: Option<Expr<T>>,
    ) -> ThreadData<u32> {
        self.neighbor_fn(
            group.into(),
            src,
            NeighborKind::Heads,
            f.unwrap_or(|a, b| a.ne(b)),
            predecessor,
        )
    }

    /// Tail flags (1 where a run ends): `x[p] != x[p + 1]`, or `f(x[p], x[p + 1])`; the last
    /// position compares with `successor`, else is a tail.
    #[track_caller]
    pub fn flag_tails<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        f: Option<FlagFn<T>>,
        successor: Option<Expr<T>>,
    ) -> ThreadData<u32> {
        self.neighbor_fn(
            group.into(),
            src,
            NeighborKind::Tails,
            f.unwrap_or(|a, b| a.ne(b)),
            successor,
        )
    }

    /// Head and tail flags together (CUB's `FlagHeadsAndTails`): `(heads, tails)`.
    #[track_caller]
    pub fn flag_heads_and_tails<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        f: Option<FlagFn<T>>,
        predecessor: Option<Expr<T>>,
        successor: Option<Expr<T>>,
    ) -> (ThreadData<u32>, ThreadData<u32>) {
        let group = group.into();
        let heads = self.flag_heads(group, src, f, predecessor);
        let tails = self.flag_tails(group, src, f, successor);
        (heads, tails)
    }

    /// Block shuffle up: position `p` gets `x[p - 1]`; position 0 gets `edge` or keeps its
    /// value.
    #[track_caller]
    pub fn shuffle_up<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        edge: Option<Expr<T>>,
    ) -> ThreadData<T> {
        let edge = edge.as_ref().map(|e| self.expr(e));
        self.neighbor(group.into(), src, NeighborKind::ShiftUp, None, edge)
    }

    /// Block shuffle down: position `p` gets `x[p + 1]`; the last position gets `edge` or keeps
    /// its value.
    #[track_caller]
    pub fn shuffle_down<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        edge: Option<Expr<T>>,
    ) -> ThreadData<T> {
        let edge = edge.as_ref().map(|e| self.expr(e));
        self.neighbor(group.into(), src, NeighborKind::ShiftDown, None, edge)
    }

    /// [`shuffle_up`](Self::shuffle_up), also returning the tile's last item (the one shifted
    /// out, CUB's block suffix) at every rank.
    #[track_caller]
    pub fn shuffle_up_with_suffix<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        edge: Option<Expr<T>>,
    ) -> (ThreadData<T>, ThreadData<T>) {
        let edge = edge.as_ref().map(|e| self.expr(e));
        let out = self.thread_data_n::<T>(1);
        let r = self.neighbor_out(
            group.into(),
            src,
            NeighborKind::ShiftUp,
            None,
            edge,
            Some(out.id),
        );
        (r, out)
    }

    /// [`shuffle_down`](Self::shuffle_down), also returning the tile's first item (the one
    /// shifted out, CUB's block prefix) at every rank.
    #[track_caller]
    pub fn shuffle_down_with_prefix<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        edge: Option<Expr<T>>,
    ) -> (ThreadData<T>, ThreadData<T>) {
        let edge = edge.as_ref().map(|e| self.expr(e));
        let out = self.thread_data_n::<T>(1);
        let r = self.neighbor_out(
            group.into(),
            src,
            NeighborKind::ShiftDown,
            None,
            edge,
            Some(out.id),
        );
        (r, out)
    }

    /// Block shuffle by offset (one item per thread): rank `r` gets rank `r + distance`'s value
    /// when that rank is in the group, else keeps its own.
    #[track_caller]
    pub fn shuffle_offset<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        distance: i32,
    ) -> ThreadData<T> {
        self.neighbor(
            group.into(),
            src,
            NeighborKind::Offset(distance),
            None,
            None,
        )
    }

    /// Block shuffle by rotation (one item per thread): rank `r` gets rank
    /// `(r + distance) mod size`'s value.
    #[track_caller]
    pub fn shuffle_rotate<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        distance: i32,
    ) -> ThreadData<T> {
        self.neighbor(
            group.into(),
            src,
            NeighborKind::Rotate(distance),
            None,
            None,
        )
    }
}

/// The controls of a scatter: the arrangement the tile is read back in, flags that skip
/// items, and the value of positions nothing was scattered to.
#[derive(Debug, Clone, Copy)]
pub struct Scatter<T: Element> {
    to: Arrangement,
    flags: Option<ThreadData<u32>>,
    holes: Option<T>,
}

impl<T: Element> Scatter<T> {
    /// Reads the tile back in `to` (blocked, or striped over groups that tile the block).
    pub fn to(to: Arrangement) -> Self {
        Scatter {
            to,
            flags: None,
            holes: None,
        }
    }

    /// Reads the tile back blocked (CUB's `ScatterToBlocked`).
    pub fn blocked() -> Self {
        Self::to(Arrangement::Blocked)
    }

    /// Reads the tile back striped over groups of `threads` threads (CUB's
    /// `ScatterToStriped` with the block's threads).
    pub fn striped(threads: u32) -> Self {
        Self::to(Arrangement::Striped { threads })
    }

    /// Scatters only the items whose flag (`u32`, slot by slot with the items) is not 0.
    pub fn flags(mut self, flags: &ThreadData<u32>) -> Self {
        self.flags = Some(*flags);
        self
    }

    /// Positions nothing was scattered to read `value`, so the result holds a value at every
    /// position. Without it they hold none, and the result may only be read where a valid
    /// count bounds the read to positions the user knows were scattered to (a store's, a
    /// reduction's or a scan's `valid_items`): the verifier rejects other reads.
    pub fn holes(mut self, value: T) -> Self {
        self.holes = Some(value);
        self
    }
}

impl KernelBuilder {
    /// Scatters each item to the tile position its rank names (ranks past the tile, and items
    /// whose flag is 0, are skipped), then reads the tile back in the controls' arrangement:
    /// CUB's `ScatterToBlocked`/`ScatterToStriped` (guarded, and flagged). Block groups only.
    /// Positions no item was scattered to read the hole value, or hold no value without one
    /// (see [`Scatter::holes`]).
    ///
    /// A compaction: the kept items move to the front, the rest of the tile reads 0.
    ///
    /// ```
    /// use coopgraph::ir::{Scatter, index};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("evens_first").block(4).items_per_thread(2);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// // Position p keeps its item where p is even, at p / 2.
    /// let p = index::thread_rank() * 2u32 + index::item();
    /// let rank = k.fill(p.clone() / 2u32);
    /// let keep = k.fill((p % 2u32).eq(0u32).select(1u32, 0u32));
    /// let s = k.scatter(b, &t, &rank, Scatter::blocked().flags(&keep).holes(0));
    /// k.store_to(b, &y, &s, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let f = dev.compile(&kernel)?;
    /// let xs = dev.upload(&[10u32, 11, 12, 13, 14, 15, 16, 17])?;
    /// let mut ys = dev.alloc_zeroed::<u32>(8)?;
    /// f.launch_grid(1, (&xs, &mut ys))?;
    /// assert_eq!(ys.to_vec()?, [10, 12, 14, 16, 0, 0, 0, 0]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn scatter<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        ranks: &ThreadData<u32>,
        controls: Scatter<T>,
    ) -> ThreadData<T> {
        let loc = Loc::caller();
        let group = self.group_id(group.into());
        let dst = self.thread_data_n::<T>(src.items);
        let src_id = self.data_id(src);
        let ranks_id = self.data_id(ranks);
        let flags_id = controls.flags.map(|f| self.data_id(&f));
        self.push(
            OpKind::Scatter {
                group,
                src: src_id,
                ranks: ranks_id,
                flags: flags_id,
                dst: dst.id,
                to: controls.to,
                holes: controls.holes.map(|v| v.to_bits()),
            },
            loc,
        );
        dst
    }
}

//! Ops between neighbouring positions of a group's tile: adjacent differences, head and
//! tail flags, block shuffles, and scatters to ranks, with their controls.

use super::KernelBuilder;
use crate::ir::dtype::Element;
use crate::ir::entities::{DataId, ExprId, Loc};
use crate::ir::expr::Expr;
use crate::ir::handles::{Group, ThreadData};
use crate::ir::ops::*;

/// An operator on two items: `(this, neighbour) -> result`.
pub type BinaryFn<T> = fn(Expr<T>, Expr<T>) -> Expr<T>;

/// A flag operator on two items in position order: `(earlier, later) -> flag`.
pub type FlagFn<T> = fn(Expr<T>, Expr<T>) -> Expr<bool>;

/// The controls of an adjacent difference: the operator, the item beyond the tile's edge, and
/// the valid items of a partial tile.
#[derive(Debug, Clone)]
pub struct Difference<T: Element> {
    op: BinaryFn<T>,
    edge: Option<Expr<T>>,
    valid: Option<Expr<u32>>,
}

impl<T: Element> Default for Difference<T> {
    fn default() -> Self {
        Difference::subtract()
    }
}

impl<T: Element> Difference<T> {
    /// `this - neighbour` (wrapping for integers).
    pub fn subtract() -> Self {
        Difference::custom(|a, b| a - b)
    }

    /// `f(this, neighbour)`.
    pub fn custom(f: BinaryFn<T>) -> Self {
        Difference {
            op: f,
            edge: None,
            valid: None,
        }
    }

    /// The item beyond the tile, which the position at its edge is differenced with: the one
    /// before position 0 for a left difference (CUB's tile predecessor), the one after the last
    /// position for a right difference (the tile successor). Without it that position keeps
    /// its value.
    pub fn edge(mut self, item: impl Into<Expr<T>>) -> Self {
        self.edge = Some(item.into());
        self
    }

    /// A partial tile: only the group's first `n` positions hold items (`n` uniform across
    /// the group). Positions from `n` on keep their input, and so does a right difference's
    /// last valid position, as CUB's `SubtractLeftPartialTile` and `SubtractRightPartialTile`
    /// do; a right difference over a partial tile has no use for an [`edge`](Self::edge), and
    /// giving it one is an error when the kernel is built.
    pub fn valid_items(mut self, n: impl Into<Expr<u32>>) -> Self {
        self.valid = Some(n.into());
        self
    }
}

/// The controls of head or tail flags: the flag operator and the item beyond the tile's edge.
#[derive(Debug, Clone)]
pub struct Flags<T: Element> {
    op: FlagFn<T>,
    edge: Option<Expr<T>>,
}

impl<T: Element> Default for Flags<T> {
    fn default() -> Self {
        Flags::inequality()
    }
}

impl<T: Element> Flags<T> {
    /// A flag where neighbours differ: `earlier != later`.
    pub fn inequality() -> Self {
        Flags::custom(|a, b| a.ne(b))
    }

    /// A flag where `f(earlier, later)` holds.
    pub fn custom(f: FlagFn<T>) -> Self {
        Flags { op: f, edge: None }
    }

    /// The item beyond the tile, which the position at its edge is compared with: the one
    /// before position 0 for heads (CUB's tile predecessor), the one after the last position
    /// for tails (the tile successor). Without it that position is always a head (or a tail).
    pub fn edge(mut self, item: impl Into<Expr<T>>) -> Self {
        self.edge = Some(item.into());
        self
    }
}

/// The controls of a block shuffle up or down: what the position at the tile's edge, which
/// has no neighbour to take from, gets.
#[derive(Debug, Clone)]
pub struct Shuffle<T: Element> {
    edge: Option<Expr<T>>,
}

impl<T: Element> Default for Shuffle<T> {
    fn default() -> Self {
        Shuffle::new()
    }
}

impl<T: Element> Shuffle<T> {
    /// The position at the tile's edge keeps its value.
    pub fn new() -> Self {
        Shuffle { edge: None }
    }

    /// The position at the tile's edge gets `item` (position 0 shuffling up, the last
    /// position shuffling down).
    pub fn edge(mut self, item: impl Into<Expr<T>>) -> Self {
        self.edge = Some(item.into());
        self
    }
}

/// What a neighbour op records beside its group, source and result: the kind, the operator
/// and the edge item (interned), the valid count, and the payload of the item shifted out.
struct Parts<'a> {
    kind: NeighborKind,
    op: Option<ExprId>,
    edge: Option<ExprId>,
    valid: Option<&'a Expr<u32>>,
    shifted_out: Option<DataId>,
}

impl Parts<'_> {
    fn of(kind: NeighborKind) -> Self {
        Parts {
            kind,
            op: None,
            edge: None,
            valid: None,
            shifted_out: None,
        }
    }
}

impl KernelBuilder {
    #[track_caller]
    fn neighbor<T: Element, U: Element>(
        &mut self,
        group: Group,
        src: &ThreadData<T>,
        parts: Parts<'_>,
    ) -> ThreadData<U> {
        let loc = Loc::caller();
        let group = self.group_id(group);
        let dst = self.thread_data_n::<U>(src.items);
        let src_id = self.data_id(src);
        let valid = parts.valid.map(|n| self.expr(n));
        self.push(
            OpKind::Neighbor(NeighborSpec {
                group,
                src: src_id,
                dst: dst.id,
                kind: parts.kind,
                op: parts.op,
                edge: parts.edge,
                shifted_out: parts.shifted_out,
                valid,
            }),
            loc,
        );
        dst
    }

    #[track_caller]
    fn difference<T: Element>(
        &mut self,
        group: Group,
        src: &ThreadData<T>,
        kind: NeighborKind,
        controls: &Difference<T>,
    ) -> ThreadData<T> {
        let body = (controls.op)(Expr::arg(0), Expr::arg(1));
        let parts = Parts {
            op: Some(self.expr(&body)),
            edge: controls.edge.as_ref().map(|e| self.expr(e)),
            valid: controls.valid.as_ref(),
            ..Parts::of(kind)
        };
        self.neighbor(group, src, parts)
    }

    #[track_caller]
    fn flags<T: Element>(
        &mut self,
        group: Group,
        src: &ThreadData<T>,
        kind: NeighborKind,
        controls: &Flags<T>,
    ) -> ThreadData<u32> {
        let body = (controls.op)(Expr::arg(0), Expr::arg(1));
        let parts = Parts {
            op: Some(self.expr(&body)),
            edge: controls.edge.as_ref().map(|e| self.expr(e)),
            ..Parts::of(kind)
        };
        self.neighbor(group, src, parts)
    }

    #[track_caller]
    fn shuffle<T: Element>(
        &mut self,
        group: Group,
        src: &ThreadData<T>,
        kind: NeighborKind,
        controls: &Shuffle<T>,
        shifted_out: Option<DataId>,
    ) -> ThreadData<T> {
        let parts = Parts {
            edge: controls.edge.as_ref().map(|e| self.expr(e)),
            shifted_out,
            ..Parts::of(kind)
        };
        self.neighbor(group, src, parts)
    }

    /// Adjacent differences in position order: `x[p] - x[p - 1]`, or `f(x[p], x[p - 1])` with
    /// [`Difference::custom`]; position 0 is differenced with the controls' edge item (the
    /// item before the tile) or keeps its value (CUB's `SubtractLeft`, and
    /// `SubtractLeftPartialTile` with [`Difference::valid_items`]).
    ///
    /// ```
    /// use coopgraph::ir::{Difference, index};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("steps").block(4).items_per_thread(2);
    /// let (x, y) = (k.input::<i32>("x"), k.output::<i32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// // Differences of the first 6 positions, the first from 0; the last two keep their input.
    /// let d = k.adjacent_difference_left(b, &t, Difference::subtract().edge(0).valid_items(6u32));
    /// k.store_to(b, &y, &d, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xs = dev.upload(&[1i32, 3, 6, 10, 15, 21, 28, 36])?;
    /// let mut ys = dev.alloc_zeroed::<i32>(8)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xs, &mut ys))?;
    /// assert_eq!(ys.to_vec()?, [1, 2, 3, 4, 5, 6, 28, 36]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn adjacent_difference_left<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        controls: Difference<T>,
    ) -> ThreadData<T> {
        self.difference(group.into(), src, NeighborKind::AdjacentLeft, &controls)
    }

    /// Adjacent differences to the right: `x[p] - x[p + 1]`, or `f(x[p], x[p + 1])` with
    /// [`Difference::custom`]; the last position is differenced with the controls' edge item
    /// (the item after the tile) or keeps its value (CUB's `SubtractRight`, and
    /// `SubtractRightPartialTile` with [`Difference::valid_items`]).
    ///
    /// ```
    /// use coopgraph::ir::Difference;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// // Gaps to the next element: the last one's is to 100, the item after the tile.
    /// let mut k = KernelBuilder::new("gaps").block(4).items_per_thread(2);
    /// let (x, y) = (k.input::<i32>("x"), k.output::<i32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let gap = Difference::custom(|x, next| next - x).edge(100);
    /// let d = k.adjacent_difference_right(b, &t, gap);
    /// k.store_to(b, &y, &d, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[1i32, 3, 6, 10, 15, 21, 28, 36])?;
    /// let mut yb = dev.alloc_zeroed::<i32>(8)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// assert_eq!(yb.to_vec()?, [2, 3, 4, 5, 6, 7, 8, 64]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn adjacent_difference_right<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        controls: Difference<T>,
    ) -> ThreadData<T> {
        self.difference(group.into(), src, NeighborKind::AdjacentRight, &controls)
    }

    /// Head flags (1 where a run starts): `x[p - 1] != x[p]`, or `f(x[p - 1], x[p])` with
    /// [`Flags::custom`]; position 0 is compared with the controls' edge item (the item before
    /// the tile), else is a head.
    ///
    /// ```
    /// use coopgraph::ir::Flags;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("run_starts").block(4).items_per_thread(2);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// // The item before the tile is 7, so position 0 starts no run.
    /// let heads = k.flag_heads(b, &t, Flags::inequality().edge(7u32));
    /// k.store_to(b, &y, &heads, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xs = dev.upload(&[7u32, 7, 2, 2, 2, 5, 7, 7])?;
    /// let mut ys = dev.alloc_zeroed::<u32>(8)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xs, &mut ys))?;
    /// assert_eq!(ys.to_vec()?, [0, 0, 1, 0, 0, 1, 1, 0]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn flag_heads<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        controls: Flags<T>,
    ) -> ThreadData<u32> {
        self.flags(group.into(), src, NeighborKind::Heads, &controls)
    }

    /// Tail flags (1 where a run ends): `x[p] != x[p + 1]`, or `f(x[p], x[p + 1])` with
    /// [`Flags::custom`]; the last position is compared with the controls' edge item (the item
    /// after the tile), else is a tail.
    ///
    /// ```
    /// use coopgraph::ir::Flags;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("run_ends").block(4).items_per_thread(2);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// // Without an edge item the last position always ends a run.
    /// let tails = k.flag_tails(b, &t, Flags::inequality());
    /// k.store_to(b, &y, &tails, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[7u32, 7, 2, 2, 2, 5, 7, 7])?;
    /// let mut yb = dev.alloc_zeroed::<u32>(8)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// assert_eq!(yb.to_vec()?, [0, 1, 0, 0, 1, 1, 0, 1]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn flag_tails<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        controls: Flags<T>,
    ) -> ThreadData<u32> {
        self.flags(group.into(), src, NeighborKind::Tails, &controls)
    }

    /// Head and tail flags together (CUB's `FlagHeadsAndTails`), each with its own controls
    /// (the heads' edge item is the one before the tile, the tails' the one after):
    /// `(heads, tails)`.
    ///
    /// ```
    /// use coopgraph::ir::Flags;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// // Runs of rising values: a head where an item is not one more than the one before.
    /// let mut k = KernelBuilder::new("rising").block(4).items_per_thread(2);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let steps = Flags::custom(|a, b| b.ne(a + 1u32));
    /// let (heads, tails) = k.flag_heads_and_tails(b, &t, steps.clone(), steps.edge(9u32));
    /// let both = k.map2(&heads, &tails, |h, t| h * 10u32 + t);
    /// k.store_to(b, &y, &both, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[1u32, 2, 3, 7, 8, 4, 5, 8])?;
    /// let mut yb = dev.alloc_zeroed::<u32>(8)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// // The item after the tile is 9, one more than the last: no tail there.
    /// assert_eq!(yb.to_vec()?, [10, 0, 1, 10, 1, 10, 1, 10]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn flag_heads_and_tails<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        heads: Flags<T>,
        tails: Flags<T>,
    ) -> (ThreadData<u32>, ThreadData<u32>) {
        let group = group.into();
        let heads = self.flags(group, src, NeighborKind::Heads, &heads);
        let tails = self.flags(group, src, NeighborKind::Tails, &tails);
        (heads, tails)
    }

    /// Block shuffle up: position `p` gets `x[p - 1]`; position 0 gets the controls' edge item
    /// or keeps its value.
    ///
    /// ```
    /// use coopgraph::ir::Shuffle;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("shift").block(4).items_per_thread(2);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let up = k.shuffle_up(b, &t, Shuffle::new().edge(0u32));
    /// k.store_to(b, &y, &up, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xs = dev.upload(&[1u32, 2, 3, 4, 5, 6, 7, 8])?;
    /// let mut ys = dev.alloc_zeroed::<u32>(8)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xs, &mut ys))?;
    /// assert_eq!(ys.to_vec()?, [0, 1, 2, 3, 4, 5, 6, 7]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn shuffle_up<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        controls: Shuffle<T>,
    ) -> ThreadData<T> {
        self.shuffle(group.into(), src, NeighborKind::ShiftUp, &controls, None)
    }

    /// Block shuffle down: position `p` gets `x[p + 1]`; the last position gets the controls'
    /// edge item or keeps its value.
    ///
    /// ```
    /// use coopgraph::ir::Shuffle;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("shift").block(4).items_per_thread(2);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let down = k.shuffle_down(b, &t, Shuffle::new());
    /// k.store_to(b, &y, &down, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[1u32, 2, 3, 4, 5, 6, 7, 8])?;
    /// let mut yb = dev.alloc_zeroed::<u32>(8)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// // The last position has no neighbour to take from and keeps its item.
    /// assert_eq!(yb.to_vec()?, [2, 3, 4, 5, 6, 7, 8, 8]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn shuffle_down<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        controls: Shuffle<T>,
    ) -> ThreadData<T> {
        self.shuffle(group.into(), src, NeighborKind::ShiftDown, &controls, None)
    }

    /// [`shuffle_up`](Self::shuffle_up), also returning the tile's last item (the one shifted
    /// out, CUB's block suffix) at every rank.
    ///
    /// ```
    /// use coopgraph::ir::Shuffle;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("up").block(4).items_per_thread(2);
    /// let (x, y, last) = (k.input::<u32>("x"), k.output::<u32>("y"), k.output::<u32>("last"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let (up, suffix) = k.shuffle_up_with_suffix(b, &t, Shuffle::new().edge(0u32));
    /// k.store_to(b, &y, &up, Store::direct());
    /// k.store_to(b, &last, &suffix, Store::direct().offset(0u32));
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[1u32, 2, 3, 4, 5, 6, 7, 8])?;
    /// let mut yb = dev.alloc_zeroed::<u32>(8)?;
    /// let mut lb = dev.alloc_zeroed::<u32>(4)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb, &mut lb))?;
    /// assert_eq!(yb.to_vec()?, [0, 1, 2, 3, 4, 5, 6, 7]);
    /// assert_eq!(lb.to_vec()?, [8; 4]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn shuffle_up_with_suffix<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        controls: Shuffle<T>,
    ) -> (ThreadData<T>, ThreadData<T>) {
        let out = self.thread_data_n::<T>(1);
        let up = NeighborKind::ShiftUp;
        (
            self.shuffle(group.into(), src, up, &controls, Some(out.id)),
            out,
        )
    }

    /// [`shuffle_down`](Self::shuffle_down), also returning the tile's first item (the one
    /// shifted out, CUB's block prefix) at every rank.
    ///
    /// ```
    /// use coopgraph::ir::Shuffle;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// // A rotation of the tile by one position: the first item comes round to the end.
    /// let mut k = KernelBuilder::new("rotate").block(4).items_per_thread(2);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let (down, prefix) = k.shuffle_down_with_prefix(b, &t, Shuffle::new());
    /// k.if_(b.rank().eq(3u32), |k| k.set_item(&down, 1, prefix.item(0)));
    /// k.store_to(b, &y, &down, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[1u32, 2, 3, 4, 5, 6, 7, 8])?;
    /// let mut yb = dev.alloc_zeroed::<u32>(8)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// assert_eq!(yb.to_vec()?, [2, 3, 4, 5, 6, 7, 8, 1]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn shuffle_down_with_prefix<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        controls: Shuffle<T>,
    ) -> (ThreadData<T>, ThreadData<T>) {
        let out = self.thread_data_n::<T>(1);
        let down = NeighborKind::ShiftDown;
        (
            self.shuffle(group.into(), src, down, &controls, Some(out.id)),
            out,
        )
    }

    /// Block shuffle by offset (one item per thread): rank `r` gets rank `r + distance`'s value
    /// when that rank is in the group, else keeps its own.
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("ahead").block(8).items_per_thread(1);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let ahead = k.shuffle_offset(b, &t, 3);
    /// k.store_to(b, &y, &ahead, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[10u32, 11, 12, 13, 14, 15, 16, 17])?;
    /// let mut yb = dev.alloc_zeroed::<u32>(8)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// assert_eq!(yb.to_vec()?, [13, 14, 15, 16, 17, 15, 16, 17]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn shuffle_offset<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        distance: i32,
    ) -> ThreadData<T> {
        let parts = Parts::of(NeighborKind::Offset(distance));
        self.neighbor(group.into(), src, parts)
    }

    /// Block shuffle by rotation (one item per thread): rank `r` gets rank
    /// `(r + distance) mod size`'s value.
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("rotate").block(8).items_per_thread(1);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let r = k.shuffle_rotate(b, &t, 3);
    /// k.store_to(b, &y, &r, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[10u32, 11, 12, 13, 14, 15, 16, 17])?;
    /// let mut yb = dev.alloc_zeroed::<u32>(8)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// assert_eq!(yb.to_vec()?, [13, 14, 15, 16, 17, 10, 11, 12]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn shuffle_rotate<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        distance: i32,
    ) -> ThreadData<T> {
        let parts = Parts::of(NeighborKind::Rotate(distance));
        self.neighbor(group.into(), src, parts)
    }
}

/// The controls of a scatter: the arrangement the tile is read back in, flags that skip
/// items, and the value of positions nothing was scattered to.
#[derive(Debug, Clone, Copy)]
pub struct Scatter<T: Element> {
    to: Arrangement,
    flags: Option<ThreadData<u32>>,
    holes: Option<T>,
    permutation: bool,
    inside: bool,
    defined: bool,
}

impl<T: Element> Scatter<T> {
    /// Reads the tile back in `to` (blocked, or striped over groups that tile the block).
    pub fn to(to: Arrangement) -> Self {
        Scatter {
            to,
            flags: None,
            holes: None,
            permutation: false,
            inside: false,
            defined: false,
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

    /// Promises that the ranks are a permutation of the tile's positions (no flags skip an
    /// item): every position receives one item, so the result holds a value everywhere with
    /// no hole value and no writing of holes first (a radix sort's ranks are one). Ranks that
    /// are not leave the positions nothing went to unspecified (the simulator reports reading
    /// them as reading unwritten shared memory).
    ///
    /// ```
    /// use coopgraph::ir::{Scatter, index};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// // Reverse the tile.
    /// let mut k = KernelBuilder::new("reverse").block(4).items_per_thread(2);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let rank = k.fill(7u32 - (index::thread_rank() * 2u32 + index::item()));
    /// let s = k.scatter(b, &t, &rank, Scatter::blocked().permutation());
    /// k.store_to(b, &y, &s, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xs = dev.upload(&[10u32, 11, 12, 13, 14, 15, 16, 17])?;
    /// let mut ys = dev.alloc_zeroed::<u32>(8)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xs, &mut ys))?;
    /// assert_eq!(ys.to_vec()?, [17, 16, 15, 14, 13, 12, 11, 10]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn permutation(mut self) -> Self {
        self.permutation = true;
        self
    }

    /// Marks the ranks as the library's own permutation of the tile (a radix sort's), each
    /// inside it by construction, so the scatter's writes go unguarded: for the library's
    /// sorts only, whose ranks come from their own counters.
    pub(crate) fn inside(mut self) -> Self {
        self.permutation = true;
        self.inside = true;
        self
    }

    /// Marks every item as holding a defined value (a library sort's sort bits, padding
    /// included), so the read-back may take narrow items packed in words.
    pub(crate) fn defined(mut self) -> Self {
        self.defined = true;
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
                permutation: controls.permutation,
                inside: controls.inside,
                defined: controls.defined,
            },
            loc,
        );
        dst
    }
}

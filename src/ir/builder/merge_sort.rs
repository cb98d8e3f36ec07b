//! Merge sort over a group (CUB's `BlockMergeSort` and `WarpMergeSort`): each group's tile of
//! keys, or of keys with values, sorted by a comparator the caller writes as an expression.
//!
//! The sort is recorded as the builder's own ops, as CUB's algorithm runs them:
//! - items past the valid count take the out-of-bounds default; they sort after every valid
//!   key whatever the comparator says of them, because validity goes by position (the invalid
//!   items of a sorted run are its tail), never by the key;
//! - each thread sorts its own items in registers by an odd-even transposition network of
//!   compare-exchanges (`K` rounds for `K` items; a pair swaps only when the second goes
//!   strictly before the first, so equal keys keep their order);
//! - `log2(threads)` merge rounds follow, in a loop as CUB's: the threads store their sorted
//!   runs blocked in a shared array, the group synchronizes, each thread finds where its `K`
//!   outputs of the merged pair of runs start by a binary search along the merge path (a loop
//!   over the comparator), merges `K` items serially into its registers, and the group
//!   synchronizes again before the next round's stores. Where two keys go equally, the
//!   first run's goes first: the merge is stable.
//!
//! The group's barrier is the block's (`bar.sync`) for the block, the named barrier of a
//! group of whole warps, and the lanes' warp barrier for a logical warp. Every op the sort
//! records carries the caller's line, so errors name the user's call.

use super::sort::{from_sort_bits, to_sort_bits};
use super::{KernelBuilder, SortOrder, SortOutput};
use crate::ir::dtype::{DType, Element};
use crate::ir::entities::Loc;
use crate::ir::expr::{Expr, IntElement, index};
use crate::ir::handles::{Group, SharedArray, ThreadData, Var};
use crate::ir::ops::*;
use std::fmt;
use std::sync::Arc;

/// The comparator of a merge sort: whether its first key goes strictly before its second.
type Before<K> = Arc<dyn Fn(Expr<K>, Expr<K>) -> Expr<bool>>;

/// The controls of a merge sort ([`KernelBuilder::merge_sort`]): the comparator, where the
/// result goes, and a valid count with the key that fills the positions past it.
///
/// The comparator says whether `a` goes strictly before `b` (a strict weak order: `lt` sorts
/// ascending, `gt` descending); keys that go neither way keep their order. Floats under `lt`
/// are no such order where NaNs are: [`total_order`](Self::total_order) sorts them by IEEE's
/// total order (as `f32::total_cmp`), and a comparator may order by the keys' bits (see the
/// example of [`KernelBuilder::merge_sort_pairs`]).
///
/// ```
/// use coopgraph::ir::{Expr, MergeSort, SortOutput};
///
/// // By the low byte only, largest first; a partial tile filled with zeros.
/// let c = MergeSort::by(|a: Expr<u32>, b: Expr<u32>| (a & 0xffu32).gt(b & 0xffu32))
///     .valid_items(100u32)
///     .oob_default(0u32)
///     .output(SortOutput::Striped);
/// assert_eq!(c.output_arrangement(), SortOutput::Striped);
/// ```
#[derive(Clone)]
pub struct MergeSort<K: Element> {
    before: Before<K>,
    output: SortOutput,
    valid: Option<Expr<u32>>,
    oob_default: Option<Expr<K>>,
    /// Float keys sorted by their total order, through their sort bits.
    total: Option<SortOrder>,
}

impl<K: Element> fmt::Debug for MergeSort<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MergeSort")
            .field("output", &self.output)
            .field("valid", &self.valid)
            .field("oob_default", &self.oob_default)
            .field("total", &self.total)
            .finish_non_exhaustive()
    }
}

impl<K: Element> MergeSort<K> {
    /// Smallest key first (`a.lt(b)`), blocked output, every position valid.
    ///
    /// ```
    /// use coopgraph::ir::{MergeSort, SortOutput};
    ///
    /// assert_eq!(MergeSort::<i32>::ascending().output_arrangement(), SortOutput::Blocked);
    /// ```
    pub fn ascending() -> Self {
        Self::by(|a: Expr<K>, b: Expr<K>| a.lt(b))
    }

    /// Largest key first (`a.gt(b)`); otherwise as [`ascending`](Self::ascending).
    ///
    /// ```
    /// use coopgraph::ir::MergeSort;
    ///
    /// let _ = MergeSort::<u64>::descending();
    /// ```
    pub fn descending() -> Self {
        Self::by(|a: Expr<K>, b: Expr<K>| a.gt(b))
    }

    /// Sorts by `before(a, b)`: whether `a` goes strictly before `b` (CUB's `compare_op`).
    ///
    /// ```
    /// use coopgraph::ir::{Expr, MergeSort};
    ///
    /// // Even keys before odd ones, each kind in its original order.
    /// let _ = MergeSort::by(|a: Expr<u32>, b: Expr<u32>| (a % 2u32).lt(b % 2u32));
    /// ```
    pub fn by(before: impl Fn(Expr<K>, Expr<K>) -> Expr<bool> + 'static) -> Self {
        MergeSort {
            before: Arc::new(before),
            output: SortOutput::Blocked,
            valid: None,
            oob_default: None,
            total: None,
        }
    }

    /// Sorts by the keys' total order in `order`: for integers their order (as
    /// [`ascending`](Self::ascending) and [`descending`](Self::descending)); for floats IEEE
    /// 754's total order, as Rust's `f32::total_cmp` ranks them: a NaN with the sign bit set
    /// first, then `-inf`, the negative numbers, `-0.0`, `+0.0`, the positive numbers,
    /// `+inf`, and a NaN without the sign bit last (ascending). Equal keys keep their order.
    ///
    /// Float keys are sorted as their order-preserving bits (the block radix sort's), each
    /// key made into them once on the way in and back on the way out, so every compare of
    /// the sort is one integer compare where a comparator written on the bits would
    /// transform both keys at every compare.
    ///
    /// ```
    /// use coopgraph::ir::{MergeSort, SortOrder};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("total").block(4).items_per_thread(2);
    /// let (x, y) = (k.input::<f32>("x"), k.output::<f32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let s = k.merge_sort(b, &t, MergeSort::total_order(SortOrder::Ascending));
    /// k.store_to(b, &y, &s, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xs = [f32::NAN, 2.0, -1.0, 0.0, -0.0, f32::NEG_INFINITY, -f32::NAN, 7.5];
    /// let xb = dev.upload(&xs)?;
    /// let mut yb = dev.alloc_zeroed::<f32>(8)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// let mut want = xs;
    /// want.sort_by(f32::total_cmp);
    /// let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    /// assert_eq!(bits(&yb.to_vec()?), bits(&want));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn total_order(order: SortOrder) -> Self {
        let mut sort = match order {
            SortOrder::Ascending => Self::ascending(),
            SortOrder::Descending => Self::descending(),
        };
        if matches!(K::DTYPE, DType::F32 | DType::F64) {
            sort.total = Some(order);
        }
        sort
    }

    /// The arrangement of the result (default blocked).
    ///
    /// ```
    /// use coopgraph::ir::{MergeSort, SortOutput};
    ///
    /// let c = MergeSort::<u32>::ascending().output(SortOutput::Striped);
    /// assert_eq!(c.output_arrangement(), SortOutput::Striped);
    /// ```
    pub fn output(mut self, output: SortOutput) -> Self {
        self.output = output;
        self
    }

    /// Only the first `n` positions of each group's tile (blocked order) hold keys (CUB's
    /// `valid_items`; the same count for every group). The others take the
    /// [`oob_default`](Self::oob_default) key (their values take zero) and sort after every
    /// valid key whatever the comparator says of them, so the sorted tile's first `n`
    /// positions are the valid keys. A count past the tile counts as the tile.
    ///
    /// ```
    /// use coopgraph::ir::MergeSort;
    ///
    /// let _ = MergeSort::<i8>::ascending().valid_items(5u32).oob_default(i8::MAX);
    /// ```
    pub fn valid_items(mut self, n: impl Into<Expr<u32>>) -> Self {
        self.valid = Some(n.into());
        self
    }

    /// The key of the positions past [`valid_items`](Self::valid_items) (CUB's
    /// `oob_default`; default zero). It decides nothing of the order: those positions sort
    /// last even where the comparator would put this key first.
    ///
    /// ```
    /// use coopgraph::ir::MergeSort;
    ///
    /// let _ = MergeSort::<f32>::descending().valid_items(7u32).oob_default(f32::INFINITY);
    /// ```
    pub fn oob_default(mut self, key: impl Into<Expr<K>>) -> Self {
        self.oob_default = Some(key.into());
        self
    }

    /// The arrangement of the result.
    ///
    /// ```
    /// use coopgraph::ir::{MergeSort, SortOutput};
    ///
    /// assert_eq!(MergeSort::<u8>::ascending().output_arrangement(), SortOutput::Blocked);
    /// ```
    pub fn output_arrangement(&self) -> SortOutput {
        self.output
    }
}

/// What the rounds of one sort share.
struct Tiles<K: Element, V: Element> {
    group: Group,
    /// The group's threads.
    threads: u32,
    items: u32,
    keys: SharedArray<K>,
    values: Option<SharedArray<V>>,
    /// The valid count, clamped to the tile (`None`: every position).
    valid: Option<Var<u32>>,
}

impl<K: Element, V: Element> Tiles<K, V> {
    /// The first element of the thread's group's tile in the shared arrays.
    fn base(&self) -> Expr<u32> {
        self.group.index() * (self.threads * self.items)
    }
}

impl KernelBuilder {
    /// Sorts each group's tile of keys by a comparator (CUB's `BlockMergeSort::Sort` for the
    /// block, `WarpMergeSort::Sort` for a warp or logical warp): thread `t` of a group holds
    /// positions `t * K .. (t + 1) * K` of its group's sorted tile (or the striped positions
    /// the controls ask for). The sort is stable and takes keys of any dtype. The group is
    /// the block, a warp ([`this_warp`](Self::this_warp)), logical warps
    /// ([`Warp::group_by`](crate::ir::Warp::group_by)) whose width divides the block, or
    /// groups of whole warps ([`Group::group_by_warps`]; inside
    /// [`if_member`](Self::if_member) where some warps are in no group); its threads must be
    /// a power of two ([`MergeSortProblem`](crate::ir::MergeSortProblem) lists what the
    /// verifier reports). Each group sorts its own tile.
    ///
    /// ```
    /// use coopgraph::ir::{Expr, MergeSort};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// // Logical warps of 4 lanes, 2 keys each: each tile of 8 sorted by the last decimal
    /// // digit, ties in their order.
    /// let mut k = KernelBuilder::new("msort").block(32).items_per_thread(2);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let quad = k.this_warp().group_by(4);
    /// let t = k.load_from(b, &x, Load::direct());
    /// let by_digit = MergeSort::by(|a: Expr<u32>, b: Expr<u32>| (a % 10u32).lt(b % 10u32));
    /// let s = k.merge_sort(quad, &t, by_digit);
    /// k.store_to(b, &y, &s, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xs: Vec<u32> = (0..64).map(|i| i * 37 % 101).collect();
    /// let xb = dev.upload(&xs)?;
    /// let mut yb = dev.alloc_zeroed::<u32>(64)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// let ys = yb.to_vec()?;
    /// assert_eq!(ys[..8], [0, 10, 20, 74, 84, 37, 47, 57]);
    /// let mut want = xs.clone();
    /// want.chunks_mut(8).for_each(|tile| tile.sort_by_key(|v| v % 10));
    /// assert_eq!(ys, want);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn merge_sort<K: Element>(
        &mut self,
        group: impl Into<Group>,
        keys: &ThreadData<K>,
        controls: MergeSort<K>,
    ) -> ThreadData<K> {
        self.merge_sort_inner::<K, u32>(group.into(), keys, None, controls)
            .0
    }

    /// Sorts each group's tile of keys with a value beside each (CUB's `SortByKey`): each
    /// value moves with its key, values of keys that go neither way keep their order. As
    /// [`merge_sort`](Self::merge_sort) otherwise; the values may be of any dtype, with as
    /// many items per thread as the keys.
    ///
    /// ```
    /// use coopgraph::ir::{Expr, MergeSort, index};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// // A block of 4 sorts floats by their order as integers (a total order: -0.0 before
    /// // 0.0, NaN last), each with its position.
    /// let total = |v: Expr<f32>| {
    ///     let b = v.to_bits();
    ///     (b.clone() >> 31u32).eq(1u32).select(!b.clone(), b | 0x8000_0000u32)
    /// };
    /// let mut k = KernelBuilder::new("argsort").block(4).items_per_thread(2);
    /// let (x, y, z) = (k.input::<f32>("x"), k.output::<f32>("y"), k.output::<u32>("z"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let at = k.fill(index::thread_rank() * 2u32 + index::item());
    /// let by_bits = MergeSort::by(move |a: Expr<f32>, b: Expr<f32>| total(a).lt(total(b)));
    /// let (s, p) = k.merge_sort_pairs(b, &t, &at, by_bits);
    /// k.store_to(b, &y, &s, Store::direct());
    /// k.store_to(b, &z, &p, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[f32::NAN, 2.0, -1.0, 0.0, -0.0, 7.5, 2.0, -3.0])?;
    /// let (mut yb, mut zb) = (dev.alloc_zeroed::<f32>(8)?, dev.alloc_zeroed::<u32>(8)?);
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb, &mut zb))?;
    /// assert_eq!(zb.to_vec()?, [7, 2, 4, 3, 1, 6, 5, 0]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn merge_sort_pairs<K: Element, V: Element>(
        &mut self,
        group: impl Into<Group>,
        keys: &ThreadData<K>,
        values: &ThreadData<V>,
        controls: MergeSort<K>,
    ) -> (ThreadData<K>, ThreadData<V>) {
        let (k, v) = self.merge_sort_inner(group.into(), keys, Some(values), controls);
        match v {
            Some(v) => (k, v),
            None => (k, self.map(values, |v| v)),
        }
    }

    /// The group's threads, or what the verifier reports of the group.
    fn merge_sort_threads(&self, group: Group) -> Result<u32, MergeSortProblem> {
        let block = self.ir.block_threads();
        let threads = match group.kind {
            GroupKind::Block => block,
            GroupKind::LogicalWarp { width } => {
                if width == 0 || !block.is_multiple_of(width) {
                    return Err(MergeSortProblem::PartialGroup { width, block });
                }
                width
            }
            GroupKind::Warps { warps } => warps.saturating_mul(32),
        };
        if threads.is_power_of_two() {
            Ok(threads)
        } else {
            Err(MergeSortProblem::Threads {
                kind: group.kind,
                threads,
            })
        }
    }

    #[track_caller]
    fn merge_sort_inner<K: Element, V: Element>(
        &mut self,
        group: Group,
        keys: &ThreadData<K>,
        values: Option<&ThreadData<V>>,
        controls: MergeSort<K>,
    ) -> (ThreadData<K>, Option<ThreadData<V>>) {
        let loc = Loc::caller();
        let checked = self
            .merge_sort_threads(group)
            .and_then(|threads| match values {
                Some(v) if v.items != keys.items => Err(MergeSortProblem::ValueItems {
                    keys: keys.items,
                    values: v.items,
                }),
                _ => Ok(threads),
            });
        let threads = match checked {
            Ok(threads) => threads,
            Err(problem) => {
                self.ir
                    .issues
                    .push(BuilderIssue::MergeSort { problem, loc });
                return (self.map(keys, |v| v), None);
            }
        };
        let first_op = self.recorded();
        let sorted = match controls.total {
            Some(order) if K::DTYPE.bytes() == 8 => self.merge_sort_bits::<K, u64, V>(
                group,
                threads,
                keys,
                values,
                &controls,
                (order, loc),
            ),
            Some(order) => self.merge_sort_bits::<K, u32, V>(
                group,
                threads,
                keys,
                values,
                &controls,
                (order, loc),
            ),
            None => self.merge_sort_ops(group, threads, keys, values, &controls, loc),
        };
        self.attribute(first_op, loc);
        sorted
    }

    /// The sort by the keys' total order: the keys made into their sort bits `B`, those
    /// sorted ascending (the default key past the valid count made into them too), and made
    /// back into keys.
    fn merge_sort_bits<K: Element, B: IntElement, V: Element>(
        &mut self,
        group: Group,
        threads: u32,
        keys: &ThreadData<K>,
        values: Option<&ThreadData<V>>,
        controls: &MergeSort<K>,
        (order, loc): (SortOrder, Loc),
    ) -> (ThreadData<K>, Option<ThreadData<V>>) {
        let bits = self.map(keys, |v| to_sort_bits::<K, B>(v, order));
        let oob = controls
            .oob_default
            .clone()
            .unwrap_or_else(|| Expr::lit(K::zero()));
        let by_bits = MergeSort::<B> {
            valid: controls.valid.clone(),
            oob_default: Some(to_sort_bits::<K, B>(oob, order)),
            ..MergeSort::ascending().output(controls.output)
        };
        let (sorted, values) = self.merge_sort_ops(group, threads, &bits, values, &by_bits, loc);
        (
            self.map(&sorted, |b| from_sort_bits::<K, B>(b, order)),
            values,
        )
    }

    /// The sort's ops: the keys (and values) exchanged into blocked order and copied, the
    /// positions past the valid count filled, the thread's sort, the merge rounds, and the
    /// exchange to the asked arrangement.
    fn merge_sort_ops<K: Element, V: Element>(
        &mut self,
        group: Group,
        threads: u32,
        keys: &ThreadData<K>,
        values: Option<&ThreadData<V>>,
        controls: &MergeSort<K>,
        loc: Loc,
    ) -> (ThreadData<K>, Option<ThreadData<V>>) {
        let items = keys.items;
        let keys = self.exchange(group, keys, Arrangement::Blocked, ExchangeVia::Shared);
        let values =
            values.map(|v| self.exchange(group, v, Arrangement::Blocked, ExchangeVia::Shared));
        let valid = controls
            .valid
            .as_ref()
            .map(|n| self.var(n.min(threads * items)));
        let position = group.rank() * items + index::item();
        // The sort works on its own copies, past the valid count filled.
        let (keys, values) = match &valid {
            Some(n) => {
                let oob = controls
                    .oob_default
                    .clone()
                    .unwrap_or_else(|| Expr::lit(K::zero()));
                let inside = position.lt(n.get());
                let k = self.map(&keys, |v| inside.select(v, oob));
                let v = values.map(|v| self.map(&v, |x| inside.select(x, Expr::lit(V::zero()))));
                (k, v)
            }
            None => (self.map(&keys, |v| v), values.map(|v| self.map(&v, |x| x))),
        };
        let before = controls.before.clone();
        let start = group.rank() * items;
        self.sort_own_items(&keys, values.as_ref(), &before, valid.as_ref(), start);
        if threads > 1 {
            // Every index the rounds use lies inside the group's runs (see `merge_round`).
            let shared = self.shared_array_inside::<K>(self.ir.block_threads() * items);
            let shared_values =
                values.map(|_| self.shared_array_inside::<V>(self.ir.block_threads() * items));
            let tiles = Tiles {
                group,
                threads,
                items,
                keys: shared,
                values: shared_values,
                valid,
            };
            let rounds = threads.trailing_zeros();
            self.counted_loop(loc, Expr::lit(0u32), Expr::lit(rounds), None, |k, round| {
                k.merge_round(&tiles, round, &keys, values.as_ref(), &before);
            });
        }
        match controls.output {
            SortOutput::Blocked => (keys, values),
            SortOutput::Striped => {
                let to = Arrangement::Striped { threads };
                let k = self.exchange(group, &keys, to, ExchangeVia::Shared);
                let v = values.map(|v| self.exchange(group, &v, to, ExchangeVia::Shared));
                (k, v)
            }
        }
    }

    /// The group's barrier: the block's, or the group's own.
    pub(super) fn group_barrier(&mut self, group: Group) {
        match group.kind {
            GroupKind::Block => self.sync_block(),
            _ => self.sync(group),
        }
    }

    /// Sorts each thread's items in place by odd-even transposition: `K` rounds of
    /// compare-exchanges of neighbours, alternately from the even and the odd items, a pair
    /// swapping only when the second goes strictly before the first. Items past the valid
    /// count (the thread's last ones) never move.
    fn sort_own_items<K: Element, V: Element>(
        &mut self,
        keys: &ThreadData<K>,
        values: Option<&ThreadData<V>>,
        before: &Before<K>,
        valid: Option<&Var<u32>>,
        start: Expr<u32>,
    ) {
        let items = keys.items;
        if items < 2 {
            return;
        }
        // The thread's valid items: its positions below the valid count.
        let own_valid = valid.map(|n| {
            let start = start.clone();
            self.var((n.get().max(start.clone()) - start).min(items))
        });
        let swap = self.var(0u32);
        let held = self.var(Expr::lit(K::zero()));
        let held_value = values.map(|_| self.var(Expr::lit(V::zero())));
        for round in 0..items {
            for i in (round % 2..items - 1).step_by(2) {
                let (a, b) = (keys.item(i), keys.item(i + 1));
                let goes = before(b.clone(), a.clone());
                let goes = match &own_valid {
                    Some(n) => Expr::lit(i + 1).lt(n.get()).and(&goes),
                    None => goes,
                };
                self.set(&swap, goes.to::<u32>());
                let s = swap.get().ne(0u32);
                self.set(&held, a.clone());
                self.set_item(keys, i, s.select(b.clone(), a));
                self.set_item(keys, i + 1, s.select(held.get(), b));
                if let (Some(v), Some(h)) = (values, &held_value) {
                    let (a, b) = (v.item(i), v.item(i + 1));
                    self.set(h, a.clone());
                    self.set_item(v, i, s.select(b.clone(), a));
                    self.set_item(v, i + 1, s.select(h.get(), b));
                }
            }
        }
    }

    /// One merge round: the sorted runs of `K << round` items of each tile merged in pairs.
    /// The threads store their items; after the group's barrier each finds where its outputs
    /// start on the merge path of its pair of runs and merges `K` items; a second barrier
    /// keeps the next round's stores behind this round's reads.
    fn merge_round<K: Element, V: Element>(
        &mut self,
        tiles: &Tiles<K, V>,
        round: Expr<u32>,
        keys: &ThreadData<K>,
        values: Option<&ThreadData<V>>,
        before: &Before<K>,
    ) {
        let items = tiles.items;
        let base = self.var(tiles.base());
        let start = self.var(tiles.group.rank() * items);
        // Written from the group's index and rank themselves (not the variables), so the
        // index is bounded inside the array and the stores need no guard; all keys before all
        // values, so ptxas merges each run into vector stores.
        let at = |i: u32| tiles.base() + tiles.group.rank() * items + i;
        for i in 0..items {
            self.shared_write(&tiles.keys, at(i), keys.item(i));
        }
        if let (Some(array), Some(v)) = (&tiles.values, values) {
            for i in 0..items {
                self.shared_write(array, at(i), v.item(i));
            }
        }
        self.group_barrier(tiles.group);
        // The pair of runs the thread's outputs fall in: the first run (`a`) at `first`, the
        // second (`b`) right after it, each `run` long; the outputs start `diag` into the
        // merged pair. A pair of runs is the items of `2 << round` threads (a power of two),
        // so the pair's first thread is the thread's rank with the low bits cleared.
        let run = self.var(Expr::lit(items) << round.clone());
        let pair_threads = Expr::lit(2u32) << round;
        let first_rank = tiles.group.rank() & (Expr::lit(0u32) - pair_threads);
        let first = self.var(first_rank * items);
        let diag = self.var(start.get() - first.get());
        let a_at = self.var(base.get() + first.get());
        let b_at = self.var(a_at.get() + run.get());
        // Where each run's valid items end in the shared array.
        let valid_end = |k: &mut Self, at: &Var<u32>, from: Expr<u32>| match &tiles.valid {
            Some(n) => k.var(at.get() + (n.get().max(from.clone()) - from).min(run.get())),
            None => k.var(at.get() + run.get()),
        };
        let a_valid = valid_end(self, &a_at, first.get());
        let b_valid = valid_end(self, &b_at, first.get() + run.get());
        // Whether b's item at `pb` (key `kb`) goes strictly before a's item at `pa` (key
        // `ka`), positions in the shared array: an invalid item goes before nothing, and
        // everything valid goes before it.
        let goes = |kb: Expr<K>, ka: Expr<K>, pb: Expr<u32>, pa: Expr<u32>| -> Expr<bool> {
            match &tiles.valid {
                Some(_) => pb
                    .lt(b_valid.get())
                    .and(&pa.ge(a_valid.get()).or(&before(kb, ka))),
                None => before(kb, ka),
            }
        };
        // The merge path's binary search (CUB's `MergePath`): the number of a's items among
        // the `diag` first of the merged pair, in `lo..=hi`, the range halved until empty.
        // Every key it reads lies inside the pair's runs.
        let lo = self.var(diag.get().max(run.get()) - run.get());
        let hi = self.var(diag.get().min(run.get()));
        self.while_(lo.get().lt(hi.get()), |k| {
            let mid = k.var((lo.get() + hi.get()) >> 1u32);
            let pb = b_at.get() + diag.get() - 1u32 - mid.get();
            let pa = a_at.get() + mid.get();
            let left = goes(
                tiles.keys.read(pb.clone()),
                tiles.keys.read(pa.clone()),
                pb,
                pa,
            );
            let took = k.var(left.to::<u32>());
            let left = took.get().ne(0u32);
            k.set(&hi, left.clone().select(mid.get(), hi.get()));
            k.set(&lo, left.select(lo.get(), mid.get() + 1u32));
        });
        // The serial merge (CUB's `SerialMerge`) from a's item at `pa` and b's at `pb`, each
        // run's next key held; each output reads one key, the next of the run it took from
        // (kept inside the pair: a key read past a run's end is never used, the run is then
        // done).
        let pa = self.var(a_at.get() + lo.get());
        let pb = self.var(b_at.get() + (diag.get() - lo.get()));
        let a_end = self.var(a_at.get() + run.get());
        let b_end = self.var(b_at.get() + run.get());
        let ka = self.var(tiles.keys.read(pa.get()));
        let last = self.var(b_end.get() - 1u32);
        let kb = self.var(tiles.keys.read(pb.get().min(last.get())));
        let take_b = self.var(0u32);
        for i in 0..items {
            let b_left = pb.get().lt(b_end.get());
            let a_done = pa.get().ge(a_end.get());
            let takes = b_left.and(&a_done.or(&goes(kb.get(), ka.get(), pb.get(), pa.get())));
            self.set(&take_b, takes.to::<u32>());
            let t = take_b.get().ne(0u32);
            self.set_item(keys, i, t.clone().select(kb.get(), ka.get()));
            let from = self.var(t.clone().select(pb.get(), pa.get()));
            if let (Some(array), Some(v)) = (&tiles.values, values) {
                self.set_item(v, i, array.read(from.get()));
            }
            if i + 1 < items {
                self.set(&pb, pb.get() + take_b.get());
                self.set(&pa, pa.get() + (Expr::lit(1u32) - take_b.get()));
                let next = self.var(tiles.keys.read((from.get() + 1u32).min(last.get())));
                self.set(&kb, t.clone().select(next.get(), kb.get()));
                self.set(&ka, t.select(ka.get(), next.get()));
            }
        }
        self.group_barrier(tiles.group);
    }
}

//! Block top-k: the `k` smallest or largest keys of the block's tile (with their values), in
//! order, found by radix selection over the block's radix rank and sorted by its radix sort.
//!
//! The selection is recorded as the builder's own ops:
//! - keys become the sort bits the block radix sort orders them by (`sort.rs`), inverted for
//!   the largest keys, so that the top-k is always the `k` smallest sort bits;
//! - every valid key starts as a *candidate*; one pass per digit, from the most significant,
//!   ranks the candidates' digits with the block's memoized radix rank and its digit counts
//!   ([`KernelBuilder::radix_rank_with_counts`]), the keys out of the running taking one
//!   digit past every candidate's (so the rank's digits are one bit wider than the top-k's);
//! - the thread holding the digit whose bucket holds the next key to select (the digit `d`
//!   with `prefix(d) < remaining <= prefix(d) + count(d)`) writes it and its prefix to shared
//!   memory; after a barrier every thread reads them: candidates that rank below the prefix
//!   are selected, those of the digit stay candidates, the others drop out, and `remaining`
//!   falls by the prefix. After the last digit the candidates left all have the same bits, and
//!   the first of them in tile order (by rank, which is stable) are selected;
//! - the selected keys (and values) are compacted in tile order through shared memory (an
//!   exclusive scan of the selection flags gives each its place) into `ceil(k / threads)`
//!   items per thread, and sorted by the block radix sort over those items only.
//!
//! The selection ranks the whole tile once per digit, as a sort would, but moves no key: the
//! one sort afterwards is over `k` keys, not the tile. Every op carries the caller's line.

use super::sort::{from_sort_bits, ones, range_and_values_problem, to_sort_bits};
use super::{DEFAULT_RADIX_BITS, KernelBuilder, RadixRank, RadixSort, Scan, SortOrder};
use crate::ir::dtype::Element;
use crate::ir::entities::Loc;
use crate::ir::expr::{Expr, IntElement, index};
use crate::ir::handles::{Group, ThreadData};
use crate::ir::ops::*;

/// The controls of a block top-k ([`KernelBuilder::top_k`]): which end of the order, how
/// many keys, the key bits that count, the digit width, and a valid count.
///
/// ```
/// use coopgraph::ir::{SortOrder, TopK};
///
/// let c = TopK::largest(10).bits(0, 16).radix_bits(6);
/// assert_eq!((c.k(), c.order()), (10, SortOrder::Descending));
/// assert_eq!((c.begin_bit(), c.end_bit(), c.digit_bits()), (0, Some(16), 6));
/// ```
#[derive(Debug, Clone)]
pub struct TopK {
    order: SortOrder,
    k: u32,
    begin_bit: u32,
    end_bit: Option<u32>,
    radix_bits: u32,
    valid: Option<Expr<u32>>,
}

impl TopK {
    /// The `k` smallest keys, smallest first (the first `k` of the tile sorted ascending by
    /// [`KernelBuilder::radix_sort`]: equal keys in tile order).
    ///
    /// ```
    /// use coopgraph::ir::{SortOrder, TopK};
    ///
    /// assert_eq!(TopK::smallest(3).order(), SortOrder::Ascending);
    /// ```
    pub fn smallest(k: u32) -> Self {
        TopK {
            order: SortOrder::Ascending,
            k,
            begin_bit: 0,
            end_bit: None,
            radix_bits: DEFAULT_RADIX_BITS,
            valid: None,
        }
    }

    /// The `k` largest keys, largest first (the first `k` of the tile sorted descending).
    ///
    /// ```
    /// use coopgraph::ir::{SortOrder, TopK};
    ///
    /// assert_eq!(TopK::largest(3).order(), SortOrder::Descending);
    /// ```
    pub fn largest(k: u32) -> Self {
        TopK {
            order: SortOrder::Descending,
            ..Self::smallest(k)
        }
    }

    /// Orders by bits `begin..end` of the keys' sort bits only, as
    /// [`RadixSort::bits`]: keys equal there go in tile order.
    ///
    /// ```
    /// use coopgraph::ir::TopK;
    ///
    /// assert_eq!(TopK::smallest(4).bits(8, 16).end_bit(), Some(16));
    /// ```
    pub fn bits(mut self, begin: u32, end: u32) -> Self {
        self.begin_bit = begin;
        self.end_bit = Some(end);
        self
    }

    /// Digits of `bits` bits per pass (1..=7; default 4). The selection's rank takes digits
    /// one bit wider (`2^bits + 1` counter words per thread).
    ///
    /// ```
    /// use coopgraph::ir::TopK;
    ///
    /// assert_eq!(TopK::smallest(4).radix_bits(7).digit_bits(), 7);
    /// ```
    pub fn radix_bits(mut self, bits: u32) -> Self {
        self.radix_bits = bits;
        self
    }

    /// Only the first `n` positions of the tile (blocked order) hold keys: the others are
    /// never selected, and where `n < k` only the first `n` positions of the result hold keys.
    ///
    /// ```
    /// use coopgraph::ir::TopK;
    ///
    /// let _ = TopK::largest(8).valid_items(100u32);
    /// ```
    pub fn valid_items(mut self, n: impl Into<Expr<u32>>) -> Self {
        self.valid = Some(n.into());
        self
    }

    /// How many keys.
    pub fn k(&self) -> u32 {
        self.k
    }

    /// The order of the result: ascending for the smallest keys, descending for the largest.
    pub fn order(&self) -> SortOrder {
        self.order
    }

    /// The first bit ordered by.
    pub fn begin_bit(&self) -> u32 {
        self.begin_bit
    }

    /// One past the last bit ordered by (`None`: the key's width).
    pub fn end_bit(&self) -> Option<u32> {
        self.end_bit
    }

    /// Bits per digit.
    pub fn digit_bits(&self) -> u32 {
        self.radix_bits
    }
}

/// A selection state: out of the running.
const OUT: u32 = 0;
/// A selection state: a candidate.
const CANDIDATE: u32 = 1;
/// A selection state: selected.
const SELECTED: u32 = 2;

impl KernelBuilder {
    /// The `k` smallest (or largest) keys of the block's tile, in order: thread `t` holds
    /// positions `t * J .. (t + 1) * J` of them, `J = ceil(k / threads)` items per thread
    /// (blocked; store with `Store::direct().valid_items(k)` and an offset of the block's
    /// own, as the examples do). Keys order as
    /// [`radix_sort`](Self::radix_sort) orders them (floats through their bits); equal keys
    /// go in tile order, so the result is the first `k` of the tile's stable sort. With a
    /// valid count `n` below `k`, only the first `n` positions of the result hold keys (the
    /// others hold an unspecified key). Block groups only; `k` is `1..=` the tile's keys
    /// ([`RadixSortProblem`](crate::ir::ops::RadixSortProblem) lists what the verifier
    /// reports).
    ///
    /// ```
    /// use coopgraph::ir::TopK;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// // The 3 largest of 8 keys: thread 0 holds two of them, thread 1 the third.
    /// let mut k = KernelBuilder::new("top3").block(2).items_per_thread(4);
    /// let (x, y) = (k.input::<i32>("x"), k.output::<i32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let top = k.top_k(b, &t, TopK::largest(3));
    /// k.store_to(b, &y, &top, Store::direct().offset(0u32).valid_items(3u32));
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[5i32, -3, 9, 0, -3, 7, 2, -8])?;
    /// let mut yb = dev.alloc_zeroed::<i32>(3)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// assert_eq!(yb.to_vec()?, [9, 7, 5]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn top_k<K: Element>(
        &mut self,
        group: impl Into<Group>,
        keys: &ThreadData<K>,
        controls: TopK,
    ) -> ThreadData<K> {
        self.top_k_inner::<K, u32>(group.into(), keys, None, controls)
            .0
    }

    /// As [`top_k`](Self::top_k), with a value beside each key: each selected key's value
    /// comes out beside it (values of any dtype, as many items per thread as the keys).
    ///
    /// ```
    /// use coopgraph::ir::{TopK, index};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// // The positions of the 2 smallest of the first 5 scores (the rest are not valid).
    /// let mut k = KernelBuilder::new("argmin2").block(4).items_per_thread(2);
    /// let (x, z) = (k.input::<f32>("x"), k.output::<u32>("z"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let at = k.fill(index::thread_rank() * 2u32 + index::item());
    /// let (_, p) = k.top_k_pairs(b, &t, &at, TopK::smallest(2).valid_items(5u32));
    /// k.store_to(b, &z, &p, Store::direct().offset(0u32).valid_items(2u32));
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[0.5f32, 2.0, -1.0, 2.0, 7.25, -9.0, -7.0, 0.0])?;
    /// let mut zb = dev.alloc_zeroed::<u32>(2)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut zb))?;
    /// assert_eq!(zb.to_vec()?, [2, 0]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn top_k_pairs<K: Element, V: Element>(
        &mut self,
        group: impl Into<Group>,
        keys: &ThreadData<K>,
        values: &ThreadData<V>,
        controls: TopK,
    ) -> (ThreadData<K>, ThreadData<V>) {
        let (k, v) = self.top_k_inner(group.into(), keys, Some(values), controls);
        match v {
            Some(v) => (k, v),
            None => {
                let v = self.thread_data_n::<V>(k.items);
                for i in 0..k.items {
                    self.set_item(&v, i, Expr::lit(V::zero()));
                }
                (k, v)
            }
        }
    }

    #[track_caller]
    fn top_k_inner<K: Element, V: Element>(
        &mut self,
        group: Group,
        keys: &ThreadData<K>,
        values: Option<&ThreadData<V>>,
        controls: TopK,
    ) -> (ThreadData<K>, Option<ThreadData<V>>) {
        let loc = Loc::caller();
        let key_bits = K::DTYPE.bytes() * 8;
        let end = controls.end_bit.unwrap_or(key_bits);
        let threads = self.ir.block_threads().max(1);
        let tile = threads * keys.items;
        let problem = if group.kind() != GroupKind::Block {
            Some(RadixSortProblem::Group { kind: group.kind() })
        } else if controls.k == 0 || controls.k > tile {
            Some(RadixSortProblem::TopK {
                k: controls.k,
                tile,
            })
        } else if !(1..=7).contains(&controls.radix_bits) {
            Some(RadixSortProblem::SelectBits {
                bits: controls.radix_bits,
            })
        } else {
            range_and_values_problem(controls.begin_bit, end, keys, values)
        };
        let first_op = self.ir.ops.len();
        let result = match problem {
            Some(problem) => {
                self.ir
                    .issues
                    .push(BuilderIssue::RadixSort { problem, loc });
                None
            }
            None if key_bits <= 32 => {
                self.top_k_ops::<K, u32, V>(group, keys, values, &controls, end, loc)
            }
            None => self.top_k_ops::<K, u64, V>(group, keys, values, &controls, end, loc),
        };
        let result = result.unwrap_or_else(|| {
            let per = controls.k.clamp(1, tile.max(1)).div_ceil(threads);
            let zero = self.thread_data_n::<K>(per);
            for i in 0..per {
                self.set_item(&zero, i, Expr::lit(K::zero()));
            }
            (zero, None)
        });
        for op in &mut self.ir.ops[first_op..] {
            op.loc = loc;
        }
        result
    }

    /// The selection passes over sort bits of type `B`, the compaction and the sort of the
    /// selected keys; `None` where a rank's counters do not fit (its problem recorded).
    fn top_k_ops<K: Element, B: IntElement, V: Element>(
        &mut self,
        group: Group,
        keys: &ThreadData<K>,
        values: Option<&ThreadData<V>>,
        controls: &TopK,
        end: u32,
        loc: Loc,
    ) -> Option<(ThreadData<K>, Option<ThreadData<V>>)> {
        let keys = &self.exchange(group, keys, Arrangement::Blocked, ExchangeVia::Shared);
        let values =
            values.map(|v| self.exchange(group, v, Arrangement::Blocked, ExchangeVia::Shared));
        let (order, r, begin) = (controls.order, controls.radix_bits, controls.begin_bit);
        let threads = self.ir.block_threads().max(1);
        let items = keys.items;
        let tile = threads * items;
        let position = || index::thread_rank() * items + index::item();
        // The keys to select: the valid ones, at most k.
        let valid = controls.valid.clone().map(|n| self.var(n.min(tile)));
        let wanted = match &valid {
            Some(n) => n.get().min(controls.k),
            None => Expr::lit(controls.k),
        };
        let wanted = self.var(wanted);
        let bits = self.map(keys, |v| to_sort_bits::<K, B>(v, order));
        let state = match &valid {
            Some(n) => self.map(keys, |_| {
                position()
                    .lt(n.get())
                    .select(Expr::lit(CANDIDATE), Expr::lit(OUT))
            }),
            None => self.map(keys, |_| Expr::lit(CANDIDATE)),
        };
        let ranker = self.ranker(group, RadixRank::memoize(r + 1), loc)?;
        let remaining = self.var(wanted.get());
        // The digit whose bucket holds the next key to select, and the candidates below it.
        let chosen = self.shared_array::<u32>(2);
        let passes = (end - begin).div_ceil(r);
        let radix = 1u32 << r;
        let per = (2 * radix).div_ceil(threads);
        self.counted_loop(loc, Expr::lit(0u32), Expr::lit(passes), None, |k, p| {
            // Bits lo..hi: the digit `p` places below the top, the last one narrower.
            let hi = Expr::lit(end) - p.clone() * r;
            let lo = k.var(hi.clone().max(begin + r) - r);
            let mask = (Expr::lit(1u32) << (hi - lo.get())) - 1u32;
            let digits = k.map2(&bits, &state, |b, s| {
                s.eq(CANDIDATE)
                    .select((b >> lo.get()).cast::<u32>() & mask, Expr::lit(radix))
            });
            let (ranks, counted) = k.rank(&ranker, &digits, true);
            let Some((prefix, counts)) = counted else {
                return;
            };
            for j in 0..per {
                let d = index::thread_rank() * per + j;
                let (p, c) = (prefix.item(j), counts.item(j));
                let holds = p.clone().lt(remaining.get()) & remaining.get().le(p.clone() + c);
                let none_left = remaining.get().eq(0u32) & d.clone().eq(0u32);
                let found = d.clone().lt(radix) & (holds | none_left);
                k.if_(found, |k| {
                    k.shared_write(&chosen, Expr::lit(0u32), d);
                    k.shared_write(&chosen, Expr::lit(1u32), p);
                });
            }
            k.sync_block();
            let digit = k.var(chosen.read(Expr::lit(0u32)));
            let below = k.var(chosen.read(Expr::lit(1u32)));
            let last = p.eq(passes - 1);
            for i in 0..items {
                let (s, rank, d) = (state.item(i), ranks.item(i), digits.item(i));
                let taken =
                    rank.clone().lt(below.get()) | (last.clone() & rank.lt(remaining.get()));
                let stays = !last.clone() & d.eq(digit.get());
                let next = taken.select(
                    Expr::lit(SELECTED),
                    stays.select(Expr::lit(CANDIDATE), Expr::lit(OUT)),
                );
                k.set_item(&state, i, s.clone().eq(CANDIDATE).select(next, s));
            }
            k.set(&remaining, remaining.get() - below.get());
        });
        // The selected keys in tile order: each at its place among them.
        let flags = self.map(&state, |s| s.eq(SELECTED).select(1u32, 0u32));
        let places = self.scan(group, &flags, Scan::exclusive_sum());
        let k = controls.k;
        let compact_bits = self.shared_array::<B>(k);
        let compact_values = values.as_ref().map(|_| self.shared_array::<V>(k));
        for i in 0..items {
            let (place, selected) = (places.item(i), state.item(i).eq(SELECTED));
            let (key, value) = (bits.item(i), values.as_ref().map(|v| v.item(i)));
            self.if_(selected, |b| {
                b.shared_write(&compact_bits, place.clone(), key);
                if let (Some(array), Some(v)) = (&compact_values, value) {
                    b.shared_write(array, place, v);
                }
            });
        }
        self.sync_block();
        let out = k.div_ceil(threads);
        let at = |j: u32| index::thread_rank() * out + j;
        let picked = self.thread_data_n::<B>(out);
        let picked_values = compact_values.map(|_| self.thread_data_n::<V>(out));
        for j in 0..out {
            self.set_item(&picked, j, Expr::lit(B::from_bits(ones(64))));
            if let Some(v) = &picked_values {
                self.set_item(v, j, Expr::lit(V::zero()));
            }
            self.if_(at(j).lt(wanted.get()), |b| {
                b.set_item(&picked, j, compact_bits.read(at(j)));
                if let (Some(array), Some(v)) = (&compact_values, &picked_values) {
                    b.set_item(v, j, array.read(at(j)));
                }
            });
        }
        let sort = RadixSort::ascending()
            .bits(begin, end)
            .radix_bits(r)
            .valid_items(wanted.get());
        let (sorted, sorted_values) =
            self.radix_passes::<B, B, V>(group, &picked, picked_values.as_ref(), &sort, end, loc);
        let sorted = self.map(&sorted, |b| from_sort_bits::<K, B>(b, order));
        Some((sorted, sorted_values))
    }
}

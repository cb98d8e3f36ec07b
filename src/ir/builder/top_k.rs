//! Block top-k: the `k` smallest or largest keys of the block's tile (with their values), in
//! order, found by radix selection over shared-memory histograms of the candidates' digits.
//!
//! The selection is recorded as the builder's own ops:
//! - keys become the sort bits the block radix sort orders them by (`sort.rs`), inverted for
//!   the largest keys, so that the top-k is always the `k` smallest sort bits;
//! - every valid key starts as a *candidate*; one histogram per digit (of `radix_bits` bits,
//!   8 by default: 4 passes for 32-bit keys; at most 32 bins per lane, so narrower in blocks
//!   of fewer than 8 threads) is zeroed up front, behind one block barrier;
//! - one pass per digit, from the most significant: each candidate adds one to its digit's
//!   bin (a shared atomic), a block barrier, then every warp reads the whole histogram (lane
//!   `l` the bins `l * J .. (l + 1) * J`, laid out so that a warp's reads take distinct banks)
//!   and scans it, and the lane holding the digit `d` with
//!   `below(d) < remaining <= below(d) + count(d)` hands `d` and `below(d)` to its warp (a
//!   ballot and two shuffles). Candidates with a smaller digit are selected, those of `d`
//!   stay candidates, the others drop out, and `remaining` falls by `below(d)`. No pass ranks
//!   the tile or needs a second barrier: the next pass counts into its own histogram;
//! - after the last digit the candidates left all have the same bits: the first `remaining`
//!   of them in tile order are selected too. One block scan of the selection and tie flags
//!   (a `u64`, one count in each half) gives every selected key its place in tile order; the
//!   keys (and values) are compacted there through shared memory, behind a barrier, into
//!   `ceil(k / threads)` items per thread;
//! - the compacted keys are put in order: where `k` times those items is at most 128, each
//!   key's place is counted (the compacted keys before it in the order, equal keys by their
//!   place in the tile) and it is written there, behind one more barrier; otherwise the block
//!   radix sort sorts them (4-bit digits at most).
//!
//! Each barrier is a block barrier the ops record, beside the ones the planner places for the
//! scan and the sort; a test removes each in turn and the race checker reports the race.
//! Every op carries the caller's line.

use super::sort::{from_sort_bits, ones, range_and_values_problem, to_sort_bits};
use super::{DEFAULT_RADIX_BITS, KernelBuilder, RadixSort, Scan, SortOrder};
use crate::ir::Atomic;
use crate::ir::dtype::Element;
use crate::ir::entities::Loc;
use crate::ir::expr::{Expr, IntElement, index};
use crate::ir::handles::{Group, SharedArray, ThreadData, Warp};
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
            radix_bits: SELECT_BITS,
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

    /// Digits of `bits` bits per selection pass (1..=8; default 8): each pass counts the
    /// candidates into `2^bits` bins (`ceil((end - begin) / bits)` passes, one histogram of
    /// at least 32 words each in shared memory). Blocks of fewer than 8 threads take at most
    /// `5 + log2(threads)` bits.
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

/// The digit width a top-k's selection takes by default.
const SELECT_BITS: u32 = 8;

/// The widest digits of the sort of the selected keys.
const SORT_BITS: u32 = DEFAULT_RADIX_BITS;

/// The most comparisons per thread (`k` times the selected keys each thread holds) for which
/// the selected keys are placed by counting rather than sorted by the radix sort.
const COUNTED_SORT_MAX: u32 = 128;

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
        } else if !(1..=8).contains(&controls.radix_bits) {
            Some(RadixSortProblem::SelectBits {
                bits: controls.radix_bits,
            })
        } else {
            range_and_values_problem(controls.begin_bit, end, keys, values)
        };
        let first_op = self.recorded();
        let result = match problem {
            Some(problem) => {
                self.ir
                    .issues
                    .push(BuilderIssue::RadixSort { problem, loc });
                let per = controls.k.clamp(1, tile.max(1)).div_ceil(threads);
                let zero = self.thread_data_n::<K>(per);
                for i in 0..per {
                    self.set_item(&zero, i, Expr::lit(K::zero()));
                }
                (zero, None)
            }
            None if key_bits <= 32 => {
                self.top_k_ops::<K, u32, V>(group, keys, values, &controls, end, loc)
            }
            None => self.top_k_ops::<K, u64, V>(group, keys, values, &controls, end, loc),
        };
        self.attribute(first_op, loc);
        result
    }

    /// The selection passes over sort bits of type `B`, the compaction and the order of the
    /// selected keys.
    fn top_k_ops<K: Element, B: IntElement, V: Element>(
        &mut self,
        group: Group,
        keys: &ThreadData<K>,
        values: Option<&ThreadData<V>>,
        controls: &TopK,
        end: u32,
        loc: Loc,
    ) -> (ThreadData<K>, Option<ThreadData<V>>) {
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
        let remaining = self.var(wanted.get());
        // One histogram per pass, zeroed once: lane `l` of every warp reads the digits
        // `l * per .. (l + 1) * per` (digit `d` at `(d % per) * lanes + d / per`, so that a
        // warp's reads fall in distinct banks).
        // A warp's lanes read at most 32 bins each: blocks of fewer than 8 threads take
        // narrower digits.
        let lanes = threads.min(32);
        let r = r.min(5 + lanes.ilog2());
        let passes = (end - begin).div_ceil(r);
        let radix = 1u32 << r;
        let per = radix.div_ceil(lanes);
        let words = per * lanes;
        let hist = self.shared_array::<u32>(passes * words);
        self.zero_bins(&hist, passes * words, threads);
        self.sync_block();
        // The warps carry the user's line: a verifier error about them names the call.
        let warp = Warp { loc };
        let lane = index::thread_rank() % lanes;
        self.counted_loop(loc, Expr::lit(0u32), Expr::lit(passes), None, |k, p| {
            // Bits lo..hi: the digit `p` places below the top, the last one narrower.
            let hi = Expr::lit(end) - p.clone() * r;
            let lo = k.var(hi.clone().max(begin + r) - r);
            let mask = (Expr::lit(1u32) << (hi - lo.get())) - 1u32;
            let digits = k.map(&bits, |b| (b >> lo.get()).cast::<u32>() & mask);
            let base = k.var(p * words);
            for i in 0..items {
                let d = digits.item(i);
                let at = base.get() + (d.clone() % per) * lanes + d / per;
                k.if_(state.item(i).eq(CANDIDATE), |k| {
                    k.atomic(&hist, at, Atomic::add(1u32));
                });
            }
            k.sync_block();
            // Every warp finds the digit whose bucket holds the next key to select (the
            // digit `d` with `below(d) < remaining <= below(d) + count(d)`) and the
            // candidates below it.
            let counts = k.thread_data_n::<u32>(per);
            for j in 0..per {
                k.set_item(&counts, j, hist.read(base.get() + j * lanes + lane.clone()));
            }
            let below = if threads <= 32 {
                k.scan(group, &counts, Scan::exclusive_sum())
            } else {
                k.scan(warp, &counts, Scan::exclusive_sum())
            };
            let (found, digit, under) = (k.var(0u32), k.var(0u32), k.var(0u32));
            for j in 0..per {
                let (b, c) = (below.item(j), counts.item(j));
                let holds = b.clone().lt(remaining.get()) & remaining.get().le(b.clone() + c);
                k.if_(holds, |k| {
                    k.set(&found, Expr::lit(1u32));
                    k.set(&digit, lane.clone() * per + j);
                    k.set(&under, b);
                });
            }
            let from = Expr::lit(31u32) - k.ballot(warp, found.get().ne(0u32)).clz();
            let digit = k.shfl(warp, digit.get(), from.clone());
            let digit = k.var(digit);
            let under = k.shfl(warp, under.get(), from);
            for i in 0..items {
                let (s, d) = (state.item(i), digits.item(i));
                let next = d.clone().lt(digit.get()).select(
                    Expr::lit(SELECTED),
                    d.eq(digit.get())
                        .select(Expr::lit(CANDIDATE), Expr::lit(OUT)),
                );
                k.set_item(&state, i, s.clone().eq(CANDIDATE).select(next, s));
            }
            k.set(&remaining, remaining.get() - under);
        });
        // The selected keys in tile order, each at its place among them: the keys below the
        // last digit chosen, and the first `remaining` candidates left (all with the same
        // bits) in tile order. The scan counts the first in the low half, the second in the
        // high half.
        let flags = self.map(&state, |s| {
            s.clone().eq(SELECTED).select(
                Expr::lit(1u64),
                s.eq(CANDIDATE)
                    .select(Expr::lit(1u64 << 32), Expr::lit(0u64)),
            )
        });
        let before = self.scan(group, &flags, Scan::exclusive_sum());
        let k = controls.k;
        let compact_bits = self.shared_array::<B>(k);
        let compact_values = values.as_ref().map(|_| self.shared_array::<V>(k));
        for i in 0..items {
            let (s, b) = (state.item(i), before.item(i));
            let ties = (b.clone() >> 32u32).cast::<u32>();
            let taken =
                s.clone().eq(SELECTED) | (s.eq(CANDIDATE) & ties.clone().lt(remaining.get()));
            let place =
                (b & Expr::lit(u64::from(u32::MAX))).cast::<u32>() + ties.min(remaining.get());
            let (key, value) = (bits.item(i), values.as_ref().map(|v| v.item(i)));
            self.if_(taken, |b| {
                b.shared_write(&compact_bits, place.clone(), key);
                if let (Some(array), Some(v)) = (&compact_values, value) {
                    b.shared_write(array, place, v);
                }
            });
        }
        self.sync_block();
        let out = k.div_ceil(threads);
        // Keys past `wanted` are the largest sort bits.
        let none = || Expr::lit(B::from_bits(ones(64)));
        let picked = self.read_selected(&compact_bits, out, wanted.get(), none());
        let picked_values = (compact_values.as_ref())
            .map(|a| self.read_selected(a, out, wanted.get(), Expr::lit(V::zero())));
        let (sorted, sorted_values) = if k * out <= COUNTED_SORT_MAX {
            let n = wanted.get();
            let places = self.places_by_counting(&picked, &compact_bits, n.clone(), begin, end);
            let keys = self.permute_selected(&picked, &places, n.clone(), k);
            let values =
                (picked_values.as_ref()).map(|v| self.permute_selected(v, &places, n.clone(), k));
            self.sync_block();
            let keys = self.read_selected(&keys, out, n.clone(), none());
            let values =
                values.map(|a| self.read_selected(&a, out, n.clone(), Expr::lit(V::zero())));
            (keys, values)
        } else {
            let sort = RadixSort::ascending()
                .bits(begin, end)
                .radix_bits(SORT_BITS.min(r))
                .valid_items(wanted.get());
            self.radix_passes::<B, B, V>(group, &picked, picked_values.as_ref(), &sort, end, loc)
        };
        let sorted = self.map(&sorted, |b| from_sort_bits::<K, B>(b, order));
        (sorted, sorted_values)
    }

    /// Each selected key's place in the order: the selected keys (of `compact`, in tile
    /// order) that go before it, by bits `begin..end`, equal ones by their place in the tile.
    fn places_by_counting<B: IntElement>(
        &mut self,
        picked: &ThreadData<B>,
        compact: &SharedArray<B>,
        wanted: Expr<u32>,
        begin: u32,
        end: u32,
    ) -> ThreadData<u32> {
        let out = picked.items;
        let mask = Expr::lit(B::from_bits(ones(end - begin)));
        let digit = |b: Expr<B>| (b >> begin) & mask.clone();
        let mine = self.map(picked, digit);
        let places = self.map(picked, |_| Expr::lit(0u32));
        let loc = Loc::caller();
        self.counted_loop(loc, Expr::lit(0u32), wanted, None, |k, i| {
            let other = k.var(digit(compact.read(i.clone())));
            for j in 0..out {
                let (o, m) = (other.get(), mine.item(j));
                let at = index::thread_rank() * out + j;
                let before = o.clone().lt(m.clone()) | (o.eq(m) & i.clone().lt(at));
                k.set_item(&places, j, places.item(j) + before.select(1u32, 0u32));
            }
        });
        places
    }

    /// Writes each of the thread's selected items (places `thread * J + j` below `wanted`)
    /// to its place in a shared array of `k`.
    fn permute_selected<T: Element>(
        &mut self,
        items: &ThreadData<T>,
        places: &ThreadData<u32>,
        wanted: Expr<u32>,
        k: u32,
    ) -> SharedArray<T> {
        let out = items.items;
        let array = self.shared_array::<T>(k);
        for j in 0..out {
            let at = index::thread_rank() * out + j;
            self.if_(at.lt(wanted.clone()), |b| {
                b.shared_write(&array, places.item(j), items.item(j));
            });
        }
        array
    }

    /// Places `thread * J .. (thread + 1) * J` of a shared array of selected items, `none`
    /// at places from `wanted` on.
    fn read_selected<T: Element>(
        &mut self,
        array: &SharedArray<T>,
        out: u32,
        wanted: Expr<u32>,
        none: Expr<T>,
    ) -> ThreadData<T> {
        let items = self.thread_data_n::<T>(out);
        for j in 0..out {
            let at = index::thread_rank() * out + j;
            self.set_item(&items, j, none.clone());
            self.if_(at.clone().lt(wanted.clone()), |b| {
                b.set_item(&items, j, array.read(at));
            });
        }
        items
    }
}

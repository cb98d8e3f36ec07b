//! Radix sort over a group (CUB's `BlockRadixSort`, and the same over warps, logical warps and
//! groups of whole warps): each group's tile of keys, or of keys with values, sorted by the
//! bits of the keys, a digit of a few bits per pass.
//!
//! The sort is recorded as the builder's own ops, as CUB's algorithm runs them:
//! - keys become unsigned *sort bits* whose order is the keys' (signed integers with the sign
//!   bit flipped; floats with the sign bit flipped when positive and every bit flipped when
//!   negative, so NaNs sort by their bits: after `+inf` ascending; descending flips every bit);
//! - per pass, the digits are ranked by the block's memoized radix rank
//!   ([`KernelBuilder::radix_rank`], in `radix_rank.rs`: per-thread packed counters, one
//!   block-wide scan), so equal digits keep their order and the sort is stable from pass to
//!   pass;
//! - a scatter by rank through shared memory ([`Scatter::permutation`]: no hole values
//!   written first) moves keys (and values) to their places, read back blocked, or in the
//!   asked arrangement after the last pass.
//!
//! The passes but a striped last one run in a loop (as CUB's do) where there are more than
//! `UNROLLED_PASSES` (two); fewer are written out one after another, so each pass's shift and digit
//! mask are constants (a byte's two 4-bit digits, the block histogram's sort form: nvcc writes
//! CUB's two passes out the same way). Each pass has the rank's two
//! barriers (after the counting, after the scan's write-back) beside the block scan's and the
//! scatters', which the planner places. A group other than the block ranks in its own part of
//! the counters with its own scan, and scatters through its own part of a shared array behind
//! its own barrier (the block's `bar.sync`, a named barrier for whole warps, the lanes' warp
//! barrier for a logical warp); the next pass's rank orders its reads before the next
//! scatter's writes. Every op
//! the sort records carries the caller's line, so errors (a block scan's in a block that is
//! not a multiple of 32 threads, say) name the user's call.

use super::radix_rank::{RadixRank, Ranker};
use super::{KernelBuilder, Scatter};
use crate::ir::dtype::{DType, Element};
use crate::ir::entities::Loc;
use crate::ir::expr::{Expr, ExprKind, IntElement, UnaryOp, index};
use crate::ir::handles::{Group, SharedArray, ThreadData};
use crate::ir::ops::*;

/// The digit width a radix sort takes by default (CUB's `BlockRadixSort` default).
pub const DEFAULT_RADIX_BITS: u32 = 4;

/// The order keys are sorted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SortOrder {
    /// Smallest first.
    Ascending,
    /// Largest first.
    Descending,
}

/// Where each thread finds the sorted keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SortOutput {
    /// Thread `t` holds positions `t * K .. (t + 1) * K` (CUB's `Sort`).
    Blocked,
    /// Thread `t` holds positions `t, t + T, ...` for `T` threads (CUB's
    /// `SortBlockedToStriped`): a striped store writes them coalesced.
    Striped,
}

/// The controls of a block radix sort ([`KernelBuilder::radix_sort`]): the order, the key bits
/// that count, the digit width per pass, where the result goes, and a valid count.
///
/// ```
/// use coopgraph::ir::{RadixSort, SortOrder, SortOutput};
///
/// let c = RadixSort::descending().bits(0, 12).radix_bits(6).output(SortOutput::Striped);
/// assert_eq!(c.order(), SortOrder::Descending);
/// assert_eq!((c.begin_bit(), c.end_bit(), c.digit_bits()), (0, Some(12), 6));
/// ```
#[derive(Debug, Clone)]
pub struct RadixSort {
    order: SortOrder,
    begin_bit: u32,
    end_bit: Option<u32>,
    radix_bits: u32,
    output: SortOutput,
    valid: Option<Expr<u32>>,
}

impl RadixSort {
    /// Smallest key first, over all the key's bits, 4-bit digits, blocked output.
    pub fn ascending() -> Self {
        RadixSort {
            order: SortOrder::Ascending,
            begin_bit: 0,
            end_bit: None,
            radix_bits: DEFAULT_RADIX_BITS,
            output: SortOutput::Blocked,
            valid: None,
        }
    }

    /// Largest key first (otherwise as [`ascending`](Self::ascending)).
    pub fn descending() -> Self {
        RadixSort {
            order: SortOrder::Descending,
            ..Self::ascending()
        }
    }

    /// Sorts by bits `begin..end` of the keys' sort bits only (CUB's `begin_bit`, `end_bit`);
    /// keys equal there keep their order. The range must be non-empty and end within the key.
    pub fn bits(mut self, begin: u32, end: u32) -> Self {
        self.begin_bit = begin;
        self.end_bit = Some(end);
        self
    }

    /// Digits of `bits` bits per pass (1..=8; default 4): fewer passes for wider digits, at
    /// `2^(bits - 1)` counter words per thread.
    pub fn radix_bits(mut self, bits: u32) -> Self {
        self.radix_bits = bits;
        self
    }

    /// The arrangement of the result (default blocked).
    pub fn output(mut self, output: SortOutput) -> Self {
        self.output = output;
        self
    }

    /// Only the first `n` positions of the tile (blocked order) hold keys: the others are
    /// sorted past them (as the largest key), so the sorted tile's first `n` positions are the
    /// valid keys, and a store with the same valid count writes exactly those.
    pub fn valid_items(mut self, n: impl Into<Expr<u32>>) -> Self {
        self.valid = Some(n.into());
        self
    }

    /// The order.
    pub fn order(&self) -> SortOrder {
        self.order
    }

    /// The first bit sorted by.
    pub fn begin_bit(&self) -> u32 {
        self.begin_bit
    }

    /// One past the last bit sorted by (`None`: the key's width).
    pub fn end_bit(&self) -> Option<u32> {
        self.end_bit
    }

    /// Bits per digit.
    pub fn digit_bits(&self) -> u32 {
        self.radix_bits
    }
}

/// The most keys a thread may hold for a sort of 8- or 16-bit keys to scatter its sort bits
/// at the key's width (and read them back packed in words); more keys a thread scatter them
/// as 32-bit words. Measured on an H100 with the sort-form block histogram of bytes (GB/s,
/// byte sort bits against 32-bit ones, two runs each): 4 items a thread 176 -> 189 (128
/// threads) and 188 -> 194 (256), but 16 items 273 -> 259 and 249 -> 235, and 8 items
/// 241 -> 247 and 239 -> 231 (not profiled: likely the byte stores of one digit's keys,
/// which neighbouring lanes hold at neighbouring ranks when a thread holds many, share
/// words).
const NARROW_SORT_BITS_ITEMS: u32 = 4;

/// Passes (before a striped last one) written out one after another rather than looped: each
/// has constant shifts and masks, at the cost of the pass's code repeated.
const UNROLLED_PASSES: u32 = 2;

/// A literal of the sort-bits type from the low bits of `v`.
pub(super) fn lit<B: Element>(v: u64) -> Expr<B> {
    Expr::lit(B::from_bits(v))
}

/// The low `bits` bits set.
pub(super) fn ones(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// Reinterprets a float's bits as the unsigned type of its width, or back.
fn bitcast<A: Element, B: Element>(v: Expr<A>) -> Expr<B> {
    Expr::new(ExprKind::Unary(UnaryOp::Bitcast, v.node))
}

/// Every bit set where the top bit of `b` (a float's bits, `u32` or `u64`) is set, none
/// where clear: an arithmetic shift, two instructions with the flip that uses it where a
/// compare and a select take three.
fn sign_mask<B: IntElement>(b: Expr<B>) -> Expr<B> {
    if B::DTYPE.bytes() == 8 {
        bitcast(bitcast::<B, i64>(b) >> 63u32)
    } else {
        bitcast(bitcast::<B, i32>(b) >> 31u32)
    }
}

fn is_float(d: DType) -> bool {
    matches!(d, DType::F32 | DType::F64)
}

fn is_signed(d: DType) -> bool {
    matches!(d, DType::I8 | DType::I16 | DType::I32 | DType::I64)
}

/// A key's sort bits: unsigned, in `B` (as wide as the key or wider, zero above the key's
/// width), ordered as the keys are in `order`.
pub(super) fn to_sort_bits<K: Element, B: IntElement>(v: Expr<K>, order: SortOrder) -> Expr<B> {
    let w = K::DTYPE.bytes() * 8;
    let sign = lit::<B>(1u64 << (w - 1));
    let bits: Expr<B> = if is_float(K::DTYPE) {
        // Every bit flipped where the sign is set, the sign alone where not (the float's
        // bits themselves: the sort bits are as wide as the key).
        debug_assert_eq!(
            K::DTYPE.bytes(),
            B::DTYPE.bytes(),
            "float sort bits of another width"
        );
        let raw: Expr<B> = bitcast(v);
        raw.clone() ^ (sign_mask(raw) | sign)
    } else if is_signed(K::DTYPE) {
        let b = v.cast::<B>();
        let b = if w < B::DTYPE.bytes() * 8 {
            b & lit::<B>(ones(w))
        } else {
            b
        };
        b ^ sign
    } else {
        v.cast::<B>()
    };
    match order {
        SortOrder::Ascending => bits,
        SortOrder::Descending => bits ^ lit::<B>(ones(w)),
    }
}

/// The key back from its sort bits (the inverse of [`to_sort_bits`]).
pub(super) fn from_sort_bits<K: Element, B: IntElement>(b: Expr<B>, order: SortOrder) -> Expr<K> {
    let w = K::DTYPE.bytes() * 8;
    let sign = lit::<B>(1u64 << (w - 1));
    let b = match order {
        SortOrder::Ascending => b,
        SortOrder::Descending => b ^ lit::<B>(ones(w)),
    };
    if is_float(K::DTYPE) {
        debug_assert_eq!(
            K::DTYPE.bytes(),
            B::DTYPE.bytes(),
            "float sort bits of another width"
        );
        // A set top bit was a positive key's (its sign alone flipped); a clear one a
        // negative key's (every bit flipped).
        bitcast(b.clone() ^ (!sign_mask(b) | sign))
    } else if is_signed(K::DTYPE) {
        (b ^ sign).cast::<K>()
    } else {
        b.cast::<K>()
    }
}

/// What the verifier reports of a sort's or top-k's bit range `begin..end` over keys `K`,
/// or of values of other items per thread than the keys.
pub(super) fn range_and_values_problem<K: Element, V: Element>(
    begin: u32,
    end: u32,
    keys: &ThreadData<K>,
    values: Option<&ThreadData<V>>,
) -> Option<RadixSortProblem> {
    let key_bits = K::DTYPE.bytes() * 8;
    match values {
        _ if begin >= end || end > key_bits => Some(RadixSortProblem::BitRange {
            begin,
            end,
            key_bits,
        }),
        Some(v) if v.items != keys.items => Some(RadixSortProblem::ValueItems {
            keys: keys.items,
            values: v.items,
        }),
        _ => None,
    }
}

/// The most counter words a sort or rank takes: 224 KiB, within every arch's shared memory
/// (the block's other shared memory must fit beside them).
pub const MAX_COUNTER_WORDS: u32 = 56 * 1024;

impl KernelBuilder {
    /// Sorts each group's tile of keys (CUB's `BlockRadixSort::Sort` for the block): the
    /// result holds the tile's keys in order, blocked or striped (over the group's threads)
    /// as the controls say. Keys of every integer
    /// dtype sort by value; `f32` and `f64` keys by value through their bits (`-0.0` before
    /// `0.0`, NaNs by their bits: a positive NaN after `+inf` ascending). The sort is stable
    /// and takes one pass per digit of the controls' bit range; it needs the block shape set
    /// before it is recorded. The group is the block, a warp, logical warps
    /// ([`Warp::group_by`](crate::ir::Warp::group_by)) whose width divides the block, or
    /// groups of whole warps ([`Group::group_by_warps`](crate::ir::Group::group_by_warps)):
    /// each group sorts its own tile, thread `r` of a group holding its positions
    /// `r * K .. (r + 1) * K` (the valid count counts within each tile)
    /// ([`RadixSortProblem`](crate::ir::ops::RadixSortProblem) lists what the verifier
    /// reports).
    ///
    /// ```
    /// use coopgraph::ir::{RadixSort, SortOutput};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("sort").block(4).items_per_thread(2);
    /// let (x, y) = (k.input::<i32>("x"), k.output::<i32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let s = k.radix_sort(b, &t, RadixSort::ascending().output(SortOutput::Striped));
    /// k.store_to(b, &y, &s, Store::striped());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[5i32, -3, 9, 0, -3, 7, 2, -8])?;
    /// let mut yb = dev.alloc_zeroed::<i32>(8)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// assert_eq!(yb.to_vec()?, [-8, -3, -3, 0, 2, 5, 7, 9]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    ///
    /// Logical warps of 4 lanes, each sorting its own tile of 8 keys, largest first:
    ///
    /// ```
    /// use coopgraph::ir::RadixSort;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("quad_sort").block(32).items_per_thread(2);
    /// let (x, y) = (k.input::<u16>("x"), k.output::<u16>("y"));
    /// let b = k.this_block();
    /// let quad = k.this_warp().group_by(4);
    /// let t = k.load_from(b, &x, Load::direct());
    /// let s = k.radix_sort(quad, &t, RadixSort::descending());
    /// k.store_to(b, &y, &s, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let xs: Vec<u16> = (0..64).map(|i| (i * 7919 % 1000) as u16).collect();
    /// let dev = Device::sim();
    /// let xb = dev.upload(&xs)?;
    /// let mut yb = dev.alloc_zeroed::<u16>(64)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// let mut want = xs.clone();
    /// want.chunks_mut(8).for_each(|tile| tile.sort_by(|a, b| b.cmp(a)));
    /// assert_eq!(yb.to_vec()?, want);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn radix_sort<K: Element>(
        &mut self,
        group: impl Into<Group>,
        keys: &ThreadData<K>,
        controls: RadixSort,
    ) -> ThreadData<K> {
        self.radix_sort_inner::<K, u32>(group.into(), keys, None, controls)
            .0
    }

    /// Sorts each group's tile of keys with a value beside each (CUB's
    /// `BlockRadixSort::Sort` with values): each value moves with its key, and values of equal
    /// keys keep their order. As [`radix_sort`](Self::radix_sort) otherwise; the values may
    /// be of any dtype, with as many items per thread as the keys.
    ///
    /// ```
    /// use coopgraph::ir::{RadixSort, index};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// // Sort by descending score; each score's position rides along.
    /// let mut k = KernelBuilder::new("argsort").block(2).items_per_thread(3);
    /// let (x, y, z) = (k.input::<f32>("x"), k.output::<f32>("y"), k.output::<u32>("z"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let at = k.fill(index::thread_rank() * 3u32 + index::item());
    /// let (s, p) = k.radix_sort_pairs(b, &t, &at, RadixSort::descending());
    /// k.store_to(b, &y, &s, Store::direct());
    /// k.store_to(b, &z, &p, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[0.5f32, 2.0, -1.0, 2.0, 7.25, 0.0])?;
    /// let (mut yb, mut zb) = (dev.alloc_zeroed::<f32>(6)?, dev.alloc_zeroed::<u32>(6)?);
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb, &mut zb))?;
    /// assert_eq!(yb.to_vec()?, [7.25, 2.0, 2.0, 0.5, 0.0, -1.0]);
    /// assert_eq!(zb.to_vec()?, [4, 1, 3, 0, 5, 2]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn radix_sort_pairs<K: Element, V: Element>(
        &mut self,
        group: impl Into<Group>,
        keys: &ThreadData<K>,
        values: &ThreadData<V>,
        controls: RadixSort,
    ) -> (ThreadData<K>, ThreadData<V>) {
        let (k, v) = self.radix_sort_inner(group.into(), keys, Some(values), controls);
        match v {
            Some(v) => (k, v),
            None => (k, self.map(values, |v| v)),
        }
    }

    #[track_caller]
    fn radix_sort_inner<K: Element, V: Element>(
        &mut self,
        group: Group,
        keys: &ThreadData<K>,
        values: Option<&ThreadData<V>>,
        controls: RadixSort,
    ) -> (ThreadData<K>, Option<ThreadData<V>>) {
        let loc = Loc::caller();
        let key_bits = K::DTYPE.bytes() * 8;
        let end = controls.end_bit.unwrap_or(key_bits);
        let problem = if let Err(problem) = self.group_threads(group) {
            Some(problem)
        } else if !(1..=8).contains(&controls.radix_bits) {
            Some(RadixSortProblem::RadixBits {
                bits: controls.radix_bits,
            })
        } else {
            range_and_values_problem(controls.begin_bit, end, keys, values)
        };
        if let Some(problem) = problem {
            self.ir
                .issues
                .push(BuilderIssue::RadixSort { problem, loc });
            return (self.map(keys, |v| v), None);
        }
        // Sort bits as wide as the key where a thread holds few keys: narrow keys scatter
        // through narrow shared words and read back packed.
        let narrow = keys.items <= NARROW_SORT_BITS_ITEMS;
        if key_bits <= 8 && narrow {
            self.radix_passes::<K, u8, V>(group, keys, values, &controls, end, loc)
        } else if key_bits <= 16 && narrow {
            self.radix_passes::<K, u16, V>(group, keys, values, &controls, end, loc)
        } else if key_bits <= 32 {
            self.radix_passes::<K, u32, V>(group, keys, values, &controls, end, loc)
        } else {
            self.radix_passes::<K, u64, V>(group, keys, values, &controls, end, loc)
        }
    }

    /// The sort's passes over sort bits of type `B`, from `controls.begin_bit` to `end`: a
    /// loop over the passes that read back blocked (as CUB's), then, for a striped result,
    /// the last pass. Every op recorded takes the user's line.
    pub(super) fn radix_passes<K: Element, B: IntElement, V: Element>(
        &mut self,
        group: Group,
        keys: &ThreadData<K>,
        values: Option<&ThreadData<V>>,
        controls: &RadixSort,
        end: u32,
        loc: Loc,
    ) -> (ThreadData<K>, Option<ThreadData<V>>) {
        let first_op = self.recorded();
        // The passes rank blocked positions and carry blocked payloads from pass to pass:
        // keys (and values) of another arrangement are exchanged into blocked order first (the
        // exchange costs nothing for blocked ones).
        let keys = &self.exchange(group, keys, Arrangement::Blocked, ExchangeVia::Shared);
        let values =
            values.map(|v| self.exchange(group, v, Arrangement::Blocked, ExchangeVia::Shared));
        let order = controls.order;
        let key_bits = K::DTYPE.bytes() * 8;
        let threads = self.group_threads(group).unwrap_or(1).max(1);
        let items = keys.items;
        // The largest sort bits: padding sorts past every valid key.
        let last_key = lit::<B>(ones(key_bits));
        let bits = match &controls.valid {
            Some(n) => {
                let n = n.clone();
                self.map(keys, |v| {
                    let position = group.rank() * items + index::item();
                    position
                        .lt(n)
                        .select(to_sort_bits::<K, B>(v, order), last_key)
                })
            }
            None => self.map(keys, |v| to_sort_bits::<K, B>(v, order)),
        };
        // The loop carries its own copy of the values.
        let values = values.map(|v| self.map(&v, |x| x));
        let rank = RadixRank::memoize(controls.radix_bits);
        let Some(ranker) = self.ranker(group, rank, false, loc) else {
            return (self.map(keys, |v| v), None);
        };
        // A group other than the block scatters through its own part of shared arrays.
        let tiles = (group.kind() != GroupKind::Block).then(|| {
            let len = self.ir.block_threads() * items;
            let v = values.as_ref().map(|_| self.shared_array::<V>(len));
            (self.shared_array::<B>(len), v)
        });
        let pass = Pass {
            group,
            ranker,
            radix_bits: controls.radix_bits,
            begin: controls.begin_bit,
            end,
            threads,
        };
        let passes = (end - controls.begin_bit).div_ceil(controls.radix_bits);
        let looped = match controls.output {
            SortOutput::Blocked => passes,
            SortOutput::Striped => passes - 1,
        };
        let (mut bits, mut values) = (bits, values);
        if looped <= UNROLLED_PASSES {
            // Written out: each pass's shift and digit mask are constants.
            for p in 0..looped {
                let blocked = Arrangement::Blocked;
                let p = Expr::lit(p);
                (bits, values) = self.radix_pass(&pass, &tiles, p, &bits, values.as_ref(), blocked);
            }
        } else {
            self.counted_loop(loc, Expr::lit(0u32), Expr::lit(looped), None, |k, p| {
                let blocked = Arrangement::Blocked;
                let (b, v) = k.radix_pass(&pass, &tiles, p, &bits, values.as_ref(), blocked);
                k.assign(&bits, &b);
                if let (Some(v), Some(dst)) = (v, &values) {
                    k.assign(dst, &v);
                }
            });
        }
        let (bits, values) = if looped < passes {
            let striped = Arrangement::Striped { threads };
            let p = Expr::lit(passes - 1);
            self.radix_pass(&pass, &tiles, p, &bits, values.as_ref(), striped)
        } else {
            (bits, values)
        };
        let sorted = self.map(&bits, |b| from_sort_bits::<K, B>(b, order));
        self.attribute(first_op, loc);
        (sorted, values)
    }

    /// One pass `p` (counted from the first): digits of the sort bits at
    /// `begin + p * radix_bits`, ranked through the counters, then `bits` and `values`
    /// scattered by rank and read back in `to`.
    fn radix_pass<B: IntElement, V: Element>(
        &mut self,
        pass: &Pass,
        tiles: &GroupTiles<B, V>,
        p: Expr<u32>,
        bits: &ThreadData<B>,
        values: Option<&ThreadData<V>>,
        to: Arrangement,
    ) -> (ThreadData<B>, Option<ThreadData<V>>) {
        let Pass {
            group,
            ref ranker,
            radix_bits,
            begin,
            end,
            threads,
        } = *pass;
        let shift = p * radix_bits + begin;
        // The last pass may take fewer bits.
        let digit_mask =
            (Expr::lit(1u32) << (Expr::lit(end) - shift.clone()).min(radix_bits)) - 1u32;
        let digits = self.map(bits, |b| (b >> shift).cast::<u32>() & digit_mask);
        let (ranks, _) = self.rank(ranker, &digits, false);
        if let Some((keys_at, values_at)) = tiles {
            let bits = self.group_scatter(group, threads, bits, &ranks, to, keys_at);
            let values = match (values, values_at) {
                (Some(v), Some(at)) => Some(self.group_scatter(group, threads, v, &ranks, to, at)),
                _ => None,
            };
            return (bits, values);
        }
        // The sort bits are defined at every position (padding included); the values may
        // not be, past a valid count.
        let bits = self.scatter(group, bits, &ranks, Scatter::to(to).inside().defined());
        let values = match values {
            Some(v) => Some(self.scatter(group, v, &ranks, Scatter::to(to).inside())),
            None => None,
        };
        (bits, values)
    }

    /// A scatter by rank within each group's tile (`threads` threads) through the group's
    /// part of `array`, read back in `to` after the group's barrier. The next write to the
    /// array comes after the next rank's barriers, so no barrier follows the reads.
    fn group_scatter<T: Element>(
        &mut self,
        group: Group,
        threads: u32,
        src: &ThreadData<T>,
        ranks: &ThreadData<u32>,
        to: Arrangement,
        array: &SharedArray<T>,
    ) -> ThreadData<T> {
        let items = src.items;
        let base = group.index() * (threads * items);
        for i in 0..items {
            let at = base.clone() + ranks.item(i);
            self.shared_write(array, at, src.item(i));
        }
        self.group_barrier(group);
        // Read back blocked, and declared blocked: a payload written slot by slot has no
        // arrangement of its own (the planner would convert nothing before a store of
        // another order), so the read-back takes the ranks' (blocked) arrangement through an
        // element-wise op. A striped result is then an exchange the planner knows of.
        let read = self.thread_data_n::<T>(items);
        for i in 0..items {
            let position = group.rank() * items + i;
            self.set_item(&read, i, array.read(base.clone() + position));
        }
        let dst = self.map2(ranks, &read, |_, v| v);
        match to {
            Arrangement::Striped { .. } => self.exchange(
                group,
                &dst,
                Arrangement::Striped { threads },
                ExchangeVia::Shared,
            ),
            _ => dst,
        }
    }
}

/// A group's shared arrays for its scatters (keys, values), or `None` for the block's.
type GroupTiles<B, V> = Option<(SharedArray<B>, Option<SharedArray<V>>)>;

/// What every pass of one sort shares.
struct Pass {
    group: Group,
    ranker: Ranker,
    radix_bits: u32,
    begin: u32,
    end: u32,
    /// The group's threads.
    threads: u32,
}

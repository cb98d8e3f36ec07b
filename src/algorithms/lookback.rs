//! Decoupled look-back: how a tile learns the fold of every tile before it in one pass.
//!
//! Tiles are taken in order from a counter (word 0 of the status buffer, offset by the call's
//! `base`), so a tile's predecessors belong to blocks already running. Each tile publishes its
//! aggregate, looks back for the nearest predecessor that has published an inclusive prefix
//! (folding the aggregates in between), and publishes its own inclusive prefix.
//!
//! Every published word carries its own flag, `(epoch << 2) | kind` in its high 32 bits, so a
//! word read whole is its own proof of what it holds, and no release or acquire orders a value
//! against a status. For 32-bit elements the low half is the value: tile `t`'s word is word
//! `1 + t` of the status buffer, written and read by single relaxed atomics. A 64-bit value
//! does not fit beside its flag, so it is published in halves: tile `t` has four words from
//! word `1 + 4t` (the aggregate's low and high halves, then the inclusive prefix's), each
//! `(flag << 32) | half`. A reader takes all four with independent relaxed loads — one trip
//! through the L2, where a status read then a dependent value read took two — and takes a value
//! only when both its halves carry this call's flag of that kind (a value half written reads
//! as not yet published, and the next poll sees it whole). The status buffer holds nothing but
//! such flagged words (and the counter), so no other call's data can pass for a status. Words
//! are read with atomic loads (`ld.relaxed`), which spare the look-back's reads the trip
//! through the L2's atomic units an `add` of 0 would take.

use super::{Op, ScanElement};
use crate::KernelBuilder;
use crate::ir::{
    Atomic, Buffer as IrBuffer, Element, Expr, Group, MemoryOrder, Reduce, Scalar, SharedArray,
    Var, index,
};

/// A tile that has published its aggregate only.
pub(super) const AGGREGATE: u32 = 1;
/// A tile that has published its inclusive prefix.
pub(super) const INCLUSIVE: u32 = 2;
/// Status words a tile of 64-bit elements takes: an aggregate and an inclusive prefix, each
/// in two halves.
const WIDE_WORDS: usize = 4;

/// Status words (less the counter) the look-back of `tiles` tiles of `T` takes.
pub(super) fn status_words<T: ScanElement>(tiles: usize) -> usize {
    if T::WIDE { WIDE_WORDS * tiles } else { tiles }
}

/// Word `offset` of tile `tile`'s status words (after the counter in word 0): its one word,
/// or one of its four for 64-bit elements.
fn tile_word<T: ScanElement>(tile: Expr<u32>, offset: u32) -> Expr<u32> {
    if T::WIDE {
        tile * WIDE_WORDS as u32 + (1 + offset)
    } else {
        tile + (1 + offset)
    }
}

/// The back-off of warp 0 while a predecessor in its window has not published, in ns.
pub(super) const BACKOFF_NS: u32 = 100;

/// The block's tile, taken from the counter in word 0 of `status` (less `base`) by thread 0
/// and handed to every thread by a broadcast of its value (one barrier).
pub(super) fn take_tile(
    k: &mut KernelBuilder,
    status: &IrBuffer<u64>,
    base: &Scalar<u64>,
) -> Expr<u32> {
    take_ticket(k, status, base, MemoryOrder::Relaxed)
}

/// The block's ticket from the counter in word 0 of `status` (less `base`), taken by thread 0
/// with `order` (acquire-release orders thread 0's accesses before it against other blocks'
/// before theirs) and handed to every thread by a broadcast of its value (one barrier).
pub(super) fn take_ticket(
    k: &mut KernelBuilder,
    status: &IrBuffer<u64>,
    base: &Scalar<u64>,
    order: MemoryOrder,
) -> Expr<u32> {
    let b = k.this_block();
    from_thread0(k, b, |k| {
        let taken = k.atomic(status, 0u32, Atomic::add(1u64).order(order));
        (taken - base.expr()).cast::<u32>()
    })
}

/// The value `f` builds in thread 0 (its ops run there alone), at every thread of block `b`:
/// handed on by a broadcast of thread 0's value through one barrier, so block-uniform.
pub(super) fn from_thread0<T: Element>(
    k: &mut KernelBuilder,
    b: Group,
    f: impl FnOnce(&mut KernelBuilder) -> Expr<T>,
) -> Expr<T> {
    let d = k.thread_data_n::<T>(1);
    k.set_item(&d, 0, Expr::lit(T::cast_from_i64(0)));
    k.if_(index::thread_rank().eq(0u32), |k| {
        let v = f(k);
        k.set_item(&d, 0, v);
    });
    k.reduce(b, &d, Reduce::first().broadcast()).item(0)
}

/// What the look-back needs: the operator, the status words, the call's epoch and the tile.
pub(super) struct LookBack<'a, T: ScanElement> {
    pub(super) op: &'a Op<T>,
    pub(super) status: &'a IrBuffer<u64>,
    pub(super) epoch: &'a Scalar<u32>,
    pub(super) tile: Expr<u32>,
}

impl<T: ScanElement> LookBack<'_, T> {
    /// The flag of this call's words of `kind`: `(epoch << 2) | kind`.
    fn flag(&self, kind: u32) -> Expr<u32> {
        (self.epoch.expr() << 2u32) | kind
    }

    /// Tile `tile` publishes `value` as `kind` (from one thread).
    pub(super) fn publish(&self, k: &mut KernelBuilder, kind: u32, value: Expr<T>) {
        let flag = self.flag(kind).cast::<u64>() << 32u32;
        if T::WIDE {
            let bits = T::pack(&value);
            let slot = tile_word::<T>(self.tile.clone(), (kind - 1) * 2);
            let low = flag.clone() | (bits.clone() & 0xffff_ffffu64);
            let high = flag | (bits >> 32u32);
            k.atomic(self.status, slot.clone(), Atomic::exch(low));
            k.atomic(self.status, slot + 1u32, Atomic::exch(high));
        } else {
            let word = flag | T::pack(&value);
            k.atomic(
                self.status,
                tile_word::<T>(self.tile.clone(), 0),
                Atomic::exch(word),
            );
        }
    }

    /// What lane's predecessor `pred` has published, read once: its kind (0 while it has
    /// published nothing of this call) and its value's bits.
    fn poll(&self, k: &mut KernelBuilder, pred: &Expr<u32>) -> (Expr<u32>, Expr<u64>) {
        let load = |k: &mut KernelBuilder, at: Expr<u32>| k.atomic(self.status, at, Atomic::load());
        let flag_of = |w: &Expr<u64>| (w.clone() >> 32u32).cast::<u32>();
        if !T::WIDE {
            let word = load(k, tile_word::<T>(pred.clone(), 0));
            let st = flag_of(&word);
            let current = (st.clone() >> 2u32).eq(self.epoch.expr());
            (current.select(st & 3u32, 0u32), word)
        } else {
            let at = tile_word::<T>(pred.clone(), 0);
            let words: Vec<Expr<u64>> = (0..WIDE_WORDS as u32)
                .map(|w| load(k, at.clone() + w))
                .collect();
            let whole = |lo: &Expr<u64>, hi: &Expr<u64>, kind: u32| {
                let ok = flag_of(lo)
                    .eq(self.flag(kind))
                    .and(&flag_of(hi).eq(self.flag(kind)));
                let bits = (hi.clone() << 32u32) | (lo.clone() & 0xffff_ffffu64);
                (ok, bits)
            };
            let (aggregate, a) = whole(&words[0], &words[1], AGGREGATE);
            let (inclusive, i) = whole(&words[2], &words[3], INCLUSIVE);
            let kind = inclusive
                .clone()
                .select(INCLUSIVE, aggregate.select(AGGREGATE, 0u32));
            (kind, inclusive.select(i, a))
        }
    }

    /// Warp 0's part, run in every thread of the block: lane 0 publishes the tile's
    /// aggregate `total`, the warp looks back, and lane 0 publishes the inclusive prefix and
    /// writes the tile's prefix to `slot` (the inclusive form's tile 0 publishes `total` at
    /// once and writes it, unused; the exclusive form's tile 0 starts from `initial`).
    pub(super) fn prefix(
        &self,
        k: &mut KernelBuilder,
        total: Expr<T>,
        initial: Option<Expr<T>>,
        slot: &SharedArray<T>,
    ) {
        let lane0 = index::lane().eq(0u32);
        let tile0 = self.tile.eq(0u32);
        k.if_(index::warp_rank().eq(0u32), |k| {
            let prefix = k.var(total.clone());
            let search = |k: &mut KernelBuilder| {
                k.if_(lane0.clone(), |k| self.publish(k, AGGREGATE, total.clone()));
                self.look_back(k, &prefix);
            };
            let inclusive = match initial {
                Some(initial) => {
                    k.if_else(tile0.clone(), |k| k.set(&prefix, initial), search);
                    self.op.apply(prefix.get(), total.clone())
                }
                None => {
                    k.if_(!tile0.clone(), search);
                    let joined = self.op.apply(prefix.get(), total.clone());
                    tile0.select(total.clone(), joined)
                }
            };
            k.if_(lane0.clone(), |k| {
                self.publish(k, INCLUSIVE, inclusive);
                k.shared_write(slot, 0u32, prefix.get());
            });
        });
    }

    /// Warp 0's look-back over windows of 32 predecessors: `prefix` (in lane 0) ends as the
    /// fold of every tile before this one.
    pub(super) fn look_back(&self, k: &mut KernelBuilder, prefix: &Var<T>) {
        let warp = k.this_warp();
        let lane = index::lane();
        // The window is the 32 tiles before `end`, lane i reading tile end - 1 - i.
        let end = k.var(self.tile.clone());
        let found = k.var(0u32);
        let have = k.var(0u32);
        k.while_(found.get().eq(0u32), |k| {
            let in_range = lane.lt(end.get());
            let pred = end.get() - 1u32 - lane.clone();
            let kind = k.var(0u32);
            let word = k.var(0u64);
            let pending = k.var(1u32);
            k.while_(pending.get().ne(0u32), |k| {
                k.if_(in_range.clone(), |k| {
                    let (got, bits) = self.poll(k, &pred);
                    k.set(&kind, got);
                    k.set(&word, bits);
                });
                let published = kind.get().ne(0u32);
                let waiting = k.any(warp, in_range.clone().and(&!published));
                k.set(&pending, waiting.select(1u32, 0u32));
                k.if_(waiting, |k| k.nanosleep(BACKOFF_NS));
            });
            let inclusive = in_range.clone().and(&kind.get().eq(INCLUSIVE));
            let bits = k.ballot(warp, inclusive);
            let lowest = bits.clone() & (Expr::lit(0u32) - bits.clone());
            let last = bits.eq(0u32).select(31u32, Expr::lit(31u32) - lowest.clz());
            let v = k.var(Expr::lit(T::default()));
            k.if_(in_range.clone(), |k| k.set(&v, T::unpack(&word.get())));
            // Fold lanes 0..=last, higher lanes (earlier tiles) first.
            for off in [1u32, 2, 4, 8, 16] {
                let other = k.shfl_down(warp, v.get(), off);
                let joins = (lane.clone() + off).le(last.clone());
                k.if_(joins, |k| k.set(&v, self.op.apply(other, v.get())));
            }
            k.if_else(
                have.get().eq(0u32),
                |k| k.set(prefix, v.get()),
                |k| k.set(prefix, self.op.apply(v.get(), prefix.get())),
            );
            k.set(&have, 1u32);
            k.if_else(
                bits.ne(0u32),
                |k| k.set(&found, 1u32),
                |k| k.set(&end, end.get() - 32u32),
            );
        });
    }
}

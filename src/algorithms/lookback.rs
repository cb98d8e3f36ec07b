//! Decoupled look-back: how a tile learns the fold of every tile before it in one pass.
//!
//! Tiles are taken in order from a counter (word 0 of the status buffer, offset by the call's
//! `base`), so a tile's predecessors belong to blocks already running. Each tile publishes its
//! aggregate, looks back for the nearest predecessor that has published an inclusive prefix
//! (folding the aggregates in between), and publishes its own inclusive prefix.
//!
//! Status words: `(epoch << 2) | kind` in 32 bits. For 32-bit elements the status is the high
//! half of one 64-bit word whose low half is the value, written and read by single atomics
//! (relaxed: the value travels in the same word). For 64-bit elements the status is a word of
//! its own and the values sit in two slots per tile (aggregate, inclusive), each written
//! before its status is exchanged with release and read after the status is read with
//! acquire. Status words are read with atomic loads (`ld.relaxed`, or `ld.acquire` where the
//! value sits apart), which spare the look-back's reads the trip through the L2's atomic
//! units an `add` of 0 would take.

use super::{Op, ScanElement};
use crate::KernelBuilder;
use crate::ir::{
    Atomic, Buffer as IrBuffer, Expr, MemoryOrder, Reduce, Scalar, SharedArray, Var, index,
};

/// A tile that has published its aggregate only.
pub(super) const AGGREGATE: u32 = 1;
/// A tile that has published its inclusive prefix.
pub(super) const INCLUSIVE: u32 = 2;
/// The back-off of warp 0 while a predecessor in its window has not published, in ns.
pub(super) const BACKOFF_NS: u32 = 100;

/// The block's tile, taken from the counter in word 0 of `status` (less `base`) by thread 0
/// and handed to every thread by a broadcast sum.
pub(super) fn take_tile(
    k: &mut KernelBuilder,
    status: &IrBuffer<u64>,
    base: &Scalar<u64>,
) -> Expr<u32> {
    let b = k.this_block();
    let ticket = k.thread_data_n::<u32>(1);
    k.set_item(&ticket, 0, 0u32);
    k.if_(index::thread_rank().eq(0u32), |k| {
        let taken = k.atomic(status, 0u32, Atomic::add(1u64));
        k.set_item(&ticket, 0, (taken - base.expr()).cast::<u32>());
    });
    k.reduce(b, &ticket, Reduce::sum().broadcast()).item(0)
}

/// What the look-back needs: the operator, the status and value words, the call's epoch and
/// the tile.
pub(super) struct LookBack<'a, T: ScanElement> {
    pub(super) op: &'a Op<T>,
    pub(super) status: &'a IrBuffer<u64>,
    pub(super) values: Option<&'a IrBuffer<u64>>,
    pub(super) epoch: &'a Scalar<u32>,
    pub(super) tile: Expr<u32>,
}

impl<T: ScanElement> LookBack<'_, T> {
    /// Tile `tile` publishes `value` as `kind` (from one thread).
    pub(super) fn publish(&self, k: &mut KernelBuilder, kind: u32, value: Expr<T>) {
        let flag = (self.epoch.expr() << 2u32) | kind;
        let at = self.tile.clone() + 1u32;
        match self.values {
            None => {
                let word = (flag.cast::<u64>() << 32u32) | T::pack(&value);
                k.atomic(self.status, at, Atomic::exch(word));
            }
            Some(values) => {
                let slot = self.tile.clone() * 2u32 + (kind - 1);
                k.write(values, slot, T::pack(&value));
                let release = Atomic::exch(flag.cast::<u64>()).order(MemoryOrder::Release);
                k.atomic(self.status, at, release);
            }
        }
    }

    /// The status half of a status word.
    fn status_of(&self, word: Expr<u64>) -> Expr<u32> {
        match self.values {
            None => (word >> 32u32).cast::<u32>(),
            Some(_) => word.cast::<u32>(),
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
        let order = match self.values {
            None => MemoryOrder::Relaxed,
            Some(_) => MemoryOrder::Acquire,
        };
        // The window is the 32 tiles before `end`, lane i reading tile end - 1 - i.
        let end = k.var(self.tile.clone());
        let found = k.var(0u32);
        let have = k.var(0u32);
        k.while_(found.get().eq(0u32), |k| {
            let in_range = lane.lt(end.get());
            let pred = end.get() - 1u32 - lane.clone();
            let word = k.var(0u64);
            let pending = k.var(1u32);
            k.while_(pending.get().ne(0u32), |k| {
                k.if_(in_range.clone(), |k| {
                    let w = k.atomic(
                        self.status,
                        pred.clone() + 1u32,
                        Atomic::load().order(order),
                    );
                    k.set(&word, w);
                });
                let st = self.status_of(word.get());
                let published = (st.clone() >> 2u32)
                    .eq(self.epoch.expr())
                    .and(&(st & 3u32).ne(0u32));
                let waiting = k.any(warp, in_range.clone().and(&!published));
                k.set(&pending, waiting.select(1u32, 0u32));
                k.if_(waiting, |k| k.nanosleep(BACKOFF_NS));
            });
            let st = self.status_of(word.get());
            let inclusive = in_range.and(&(st.clone() & 3u32).eq(INCLUSIVE));
            let bits = k.ballot(warp, inclusive);
            let lowest = bits.clone() & (Expr::lit(0u32) - bits.clone());
            let last = bits.eq(0u32).select(31u32, Expr::lit(31u32) - lowest.clz());
            let v = k.var(Expr::lit(T::default()));
            k.if_(in_range.clone(), |k| {
                let value = match self.values {
                    None => T::unpack(&word.get()),
                    Some(values) => {
                        let slot = pred.clone() * 2u32 + ((st & 3u32) - 1u32);
                        T::unpack(&values.at(slot))
                    }
                };
                k.set(&v, value);
            });
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

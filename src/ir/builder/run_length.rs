//! Block run-length decode (CUB's `BlockRunLengthDecode`): runs held by the block's threads
//! (a value and a length each, blocked) decoded into windows of the expanded sequence.
//!
//! Recorded as the builder's own ops: [`KernelBuilder::run_lengths`] takes an exclusive block
//! scan of the lengths (each run's offset in the decoded sequence, and the total), writes every
//! run's offset and value into shared arrays, then records a block barrier (the decoding
//! threads read runs other threads wrote); inside a region (a loop's body, say) it records one
//! before the writes too, as the last round's decodes may still be reading;
//! [`KernelBuilder::run_length_decode`] finds the run of each thread's first decoded position
//! by a binary search over the offsets and walks onward from it, reading shared memory only,
//! so any number of windows may be decoded after one setup. Every op carries the caller's
//! line.

use super::{KernelBuilder, Scan};
use crate::ir::dtype::Element;
use crate::ir::entities::Loc;
use crate::ir::expr::{Expr, index};
use crate::ir::handles::{Group, SharedArray, ThreadData, Var};
use crate::ir::ops::*;

/// Items a thread decodes at most for the walk that keeps its run in registers
/// ([`KernelBuilder::run_length_decode`]); above it the walk rereads shared memory. Measured
/// on an H100 (example 33, BENCHMARKS): at 4 items the register walk is 4-5% faster; with
/// its step by selects, 9-15% slower at 8 items and 12-20% at 16 ("The decode's search
/// unclamped, its walk by selects").
const REGISTER_WALK_ITEMS: u32 = 4;

/// The window position a thread decodes first: its items are the `items` positions from it.
fn first_position(from: Expr<u32>, items: u32) -> Expr<u32> {
    from + index::thread_rank() * items
}

/// The block's runs, ready to decode ([`KernelBuilder::run_lengths`]).
#[derive(Debug, Clone)]
pub struct Runs<T: Element> {
    values: SharedArray<T>,
    offsets: SharedArray<u32>,
    runs: u32,
    total: ThreadData<u32>,
}

impl<T: Element> Runs<T> {
    /// The decoded sequence's length (the sum of the run lengths), at every thread.
    pub fn total(&self) -> Expr<u32> {
        self.total.item(0)
    }
}

/// A decoded window ([`KernelBuilder::run_length_decode`]).
#[derive(Debug, Clone)]
pub struct Decoded<T: Element> {
    /// The decoded items, blocked: thread `t`'s item `i` is position `from + t * items + i`
    /// of the decoded sequence (past its total: the last run's value).
    pub items: ThreadData<T>,
    /// Each item's offset within its run (CUB's relative offsets).
    pub offsets: ThreadData<u32>,
}

impl KernelBuilder {
    /// Takes the block's runs for decoding (CUB's `BlockRunLengthDecode` constructor): thread
    /// `t`'s item `i` of `values` and `lengths` is run `t * runs + i` (blocked, `runs` items
    /// per thread in each). Records a block scan of the lengths (so the block must be one a
    /// block scan takes: a power of two up to 32 threads, or a multiple of 32) and a block
    /// barrier. The lengths' sum must fit in `u32`. Block groups only; values and lengths of
    /// other item counts are reported by the verifier ([`PrimitiveProblem`]).
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("decode").block(4).items_per_thread(2);
    /// let (v, l) = (k.input::<i32>("values"), k.input::<u32>("lengths"));
    /// let (y, o, n) = (k.output::<i32>("y"), k.output::<u32>("o"), k.output::<u32>("n"));
    /// let b = k.this_block();
    /// let values = k.load_from(b, &v, Load::direct());
    /// let lengths = k.load_from(b, &l, Load::direct());
    /// let runs = k.run_lengths(b, &values, &lengths);
    /// // The window of 4 x 3 decoded items starting at decoded position 2.
    /// let d = k.run_length_decode(&runs, 3, 2u32);
    /// let store = Store::direct().offset(0u32);
    /// k.store_to(b, &y, &d.items, store.clone());
    /// k.store_to(b, &o, &d.offsets, store);
    /// let total = k.fill(runs.total());
    /// k.store_to(b, &n, &total, Store::direct().valid_items(1u32));
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let vb = dev.upload(&[7i32, 8, 9, 10, 11, 12, 13, 14])?;
    /// let lb = dev.upload(&[3u32, 0, 2, 1, 4, 0, 0, 2])?;
    /// let (mut yb, mut ob) = (dev.alloc_zeroed::<i32>(12)?, dev.alloc_zeroed::<u32>(12)?);
    /// let mut nb = dev.alloc_zeroed::<u32>(1)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&vb, &lb, &mut yb, &mut ob, &mut nb))?;
    /// // 7 7 7 9 9 10 11 11 11 11 14 14, from position 2; past the total, the last run.
    /// assert_eq!(yb.to_vec()?, [7, 9, 9, 10, 11, 11, 11, 11, 14, 14, 14, 14]);
    /// assert_eq!(ob.to_vec()?[..10], [2, 0, 1, 0, 0, 1, 2, 3, 0, 1]);
    /// assert_eq!(nb.to_vec()?, [12]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn run_lengths<T: Element>(
        &mut self,
        group: impl Into<Group>,
        values: &ThreadData<T>,
        lengths: &ThreadData<u32>,
    ) -> Runs<T> {
        let loc = Loc::caller();
        let group = group.into();
        let what = "block run-length decode";
        let runs = values.items;
        let problem = if group.kind() != GroupKind::Block {
            Some(PrimitiveProblem::Group {
                what,
                kind: group.kind(),
            })
        } else if lengths.items != runs {
            Some(PrimitiveProblem::Items {
                what,
                input: "lengths",
                items: lengths.items,
                want: runs,
            })
        } else {
            None
        };
        let first = self.recorded();
        let threads = self.ir.block_threads().max(1);
        let all = (threads * runs).max(1);
        let value_array = self.shared_array::<T>(all);
        let offset_array = self.shared_array::<u32>(all);
        if let Some(p) = problem {
            self.primitive_problem(p, loc);
            let total = self.thread_data_n::<u32>(1);
            self.set_item(&total, 0, 0u32);
            return Runs {
                values: value_array,
                offsets: offset_array,
                runs: all,
                total,
            };
        }
        let (starts, total) = self.scan_with_aggregate(group, lengths, Scan::exclusive_sum());
        if self.inside_region() {
            // Inside a loop (or any region) the arrays may still be read by the decodes of
            // the last time round: they finish before the runs are overwritten. (The scan's
            // own barriers, where it has any, are the planner's to place or drop.)
            self.sync_block();
        }
        for i in 0..runs {
            let r = index::thread_rank() * runs + i;
            self.shared_write(&offset_array, r.clone(), starts.item(i));
            self.shared_write(&value_array, r, values.item(i));
        }
        self.sync_block();
        self.attribute(first, loc);
        Runs {
            values: value_array,
            offsets: offset_array,
            runs: all,
            total,
        }
    }

    /// Decodes the window of `items` decoded items per thread starting at decoded position
    /// `from` (CUB's `RunLengthDecode(decoded_items, relative_offsets, from_decoded_offset)`):
    /// thread `t`'s item `i` is the value of the run holding position `from + t * items + i`,
    /// beside its offset within that run. Positions at or past [`Runs::total`] hold the last
    /// run's value (and their distance from its start). Runs of length 0 hold no position.
    /// Reads shared memory only: decode as many windows as needed after one
    /// [`run_lengths`](Self::run_lengths) (see there for an example).
    #[track_caller]
    pub fn run_length_decode<T: Element>(
        &mut self,
        runs: &Runs<T>,
        items: u32,
        from: impl Into<Expr<u32>>,
    ) -> Decoded<T> {
        let loc = Loc::caller();
        let from = from.into();
        let out_items = items.clamp(1, MAX_ITEMS_PER_THREAD);
        let decoded = self.thread_data_n::<T>(out_items);
        let offsets = self.thread_data_n::<u32>(out_items);
        if items != out_items {
            let max = MAX_ITEMS_PER_THREAD;
            self.primitive_problem(PrimitiveProblem::DecodedItems { items, max }, loc);
            return Decoded {
                items: decoded,
                offsets,
            };
        }
        let first = self.recorded();
        // The run holding the thread's first position, by a binary search; from there the
        // thread walks onward, run by run, as CUB's decode does: each next position is in the
        // same run or a later one (the next, unless runs of length 0 lie between).
        let out = Decoded {
            items: decoded,
            offsets,
        };
        if items <= REGISTER_WALK_ITEMS {
            self.walk_in_registers(runs, from, &out);
        } else {
            self.walk_rereading(runs, from, &out);
        }
        self.attribute(first, loc);
        out
    }

    /// The walk for a few items a thread: the run's value, its start and the next run's start
    /// stay in registers, each position stepping to the next run by selects (two shared reads
    /// a position, no branch) and looping only past runs of length 0. Every index it reads is
    /// a run's (clamped to the last), so the runs' arrays are marked inside and go unguarded.
    fn walk_in_registers<T: Element>(&mut self, runs: &Runs<T>, from: Expr<u32>, out: &Decoded<T>) {
        let (n, items) = (runs.runs, out.items.items);
        for id in [runs.values.id.index(), runs.offsets.id.index()] {
            self.ir.arrays[id].inside = true;
        }
        // `r`: the last run starting at or before the position.
        let first_at = first_position(from, items);
        let p0 = self.var(first_at.clone());
        let r = self.last_run_at_or_before(runs, &p0);
        let next_start = |r: Expr<u32>| runs.offsets.read((r + 1u32).min(n - 1));
        let value = self.var(runs.values.read(r.get()));
        let start = self.var(runs.offsets.read(r.get()));
        let end = self.var(next_start(r.get()));
        for i in 0..items {
            let p = first_at.clone() + i;
            if i > 0 {
                // Onward while the next run starts at or before p. The first step is taken
                // by selects, its reads made whether it moves or not: where runs are a few
                // items long, some lane of a warp starts a new run at nearly every position,
                // so a branch round them would be taken anyway (runs of a hundred items would
                // skip it three times in four; not measured). Only runs of length 0 loop.
                let onward = || (r.get() + 1u32).lt(n) & end.get().le(p.clone());
                let moves = onward();
                self.set(&start, moves.clone().select(end.get(), start.get()));
                self.set(&r, r.get() + moves.select(1u32, 0u32));
                self.set(&end, next_start(r.get()));
                self.set(&value, runs.values.read(r.get()));
                self.while_(onward(), |k| {
                    k.set(&r, r.get() + 1u32);
                    k.set(&start, end.get());
                    k.set(&end, next_start(r.get()));
                    k.set(&value, runs.values.read(r.get()));
                });
            }
            self.set_item(&out.items, i, value.get());
            self.set_item(&out.offsets, i, p - start.get());
        }
    }

    /// The walk for many items a thread: each position reads the next run's start, its run's
    /// value and start from shared memory, keeping one register (the run) across the items.
    /// Its reads keep their guards, though every index is a run's: unguarded, the 8- and
    /// 16-item kernels measured 2-13% slower on an H100 (BENCHMARKS.md, "The rereading walk's
    /// arrays unguarded, tried", 2026-12-06).
    fn walk_rereading<T: Element>(&mut self, runs: &Runs<T>, from: Expr<u32>, out: &Decoded<T>) {
        let (n, items) = (runs.runs, out.items.items);
        // `r`: the last run starting at or before `p`.
        let first_at = first_position(from, items);
        let p0 = self.var(first_at.clone());
        let r = self.last_run_at_or_before(runs, &p0);
        for i in 0..items {
            let p = if i == 0 {
                p0
            } else {
                let p = self.var(first_at.clone() + i);
                // Onward while the next run starts at or before p (once per new run).
                let next = r.get() + 1u32;
                let onward = next.clone().lt(n) & runs.offsets.read(next.min(n - 1)).le(p.get());
                self.while_(onward, |k| k.set(&r, r.get() + 1u32));
                p
            };
            self.set_item(&out.items, i, runs.values.read(r.get()));
            self.set_item(&out.offsets, i, p.get() - runs.offsets.read(r.get()));
        }
    }

    /// The last run starting at or before position `p`, by binary lifting over the runs'
    /// offsets in shared memory from run 0 (which starts at 0). Where the offsets are read
    /// unguarded (the register walk's), a step's candidate is clamped to the last run and
    /// checked against the run count only where the steps before it could carry it past the
    /// last run: with a power-of-two run count none can, and each step is one shared read, a
    /// comparison and a predicated add (4 items a thread: 0-2% faster on an H100). Guarded reads
    /// keep the clamp, which costs what a guard would (without it the rereading walk's 8- and
    /// 16-item kernels measured 1% slower; BENCHMARKS, "The decode's search unclamped").
    fn last_run_at_or_before<T: Element>(&mut self, runs: &Runs<T>, p: &Var<u32>) -> Var<u32> {
        let n = runs.runs;
        let unguarded = self.ir.arrays[runs.offsets.id.index()].inside;
        let r = self.var(0u32);
        // The largest power of two below `n`: the steps then sum to at least `n - 1`, the
        // last run's index, and a power-of-two `n` takes one step fewer than lifting from `n`.
        let mut step = n.saturating_sub(1).checked_ilog2().map_or(0, |b| 1u32 << b);
        // The largest index `r` can hold before the step.
        let mut reach = 0u32;
        while step > 0 {
            let cand = r.get() + step;
            let take = if unguarded && reach + step < n {
                runs.offsets.read(cand.clone()).le(p.get())
            } else {
                let start = runs.offsets.read(cand.clone().min(n - 1));
                cand.clone().lt(n) & start.le(p.get())
            };
            self.set(&r, take.select(cand, r.get()));
            reach = (reach + step).min(n - 1);
            step /= 2;
        }
        r
    }
}

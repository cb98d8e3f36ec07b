//! The kernels of the Onesweep radix sort: the upfront histogram of every pass's digits, the
//! digits' global offsets, and the per-digit pass with its per-digit decoupled look-back.
//!
//! *Histogram* (one launch): each block counts the digits of every pass over its run of
//! tiles in shared memory (one shared atomic add per key and pass), then adds its non-zero
//! counters to the global counters (`hist[pass * 256 + digit]`, zeroed before the launch).
//!
//! *Offsets* (one launch, a block per pass): each pass's counters become their exclusive
//! prefix sums in place, the first position of each digit in the pass's output.
//!
//! *Digit pass* (one launch per 8-bit digit), one block per tile:
//! 1. thread 0 takes the tile's index from the counter in status word 0 (so tile `t`'s
//!    predecessors were taken by blocks already running); a broadcast hands it out;
//! 2. the block loads its tile warp-striped (coalesced, no shared memory), computes each
//!    key's digit, and ranks the digits with the block's match rank (one pass over all 8
//!    bits: per-warp counters, lanes matched by ballots; the padding of a partial tile ranks
//!    last and counts in no digit), which also gives each digit's count in the tile and its
//!    first rank;
//! 3. the thread of digit `d` publishes the tile's count of `d` (`AGGREGATE`; tile 0
//!    publishes `INCLUSIVE`), so that the tiles after can go on while this one moves its keys:
//!    for keys alone as soon as the rank has counted them, before its scan (CUB's early
//!    counts), with values once it has ranked ([`LookBack`]);
//! 4. keys (and values) are scattered by rank through shared memory, striped: consecutive
//!    threads hold consecutive ranks;
//! 5. the per-digit look-back: the thread of digit `d` walks back over the tiles before,
//!    reading the status words of a window of them at once ([`LookBack`]: 4 tiles for keys
//!    of up to 4 bytes alone, 2 for 8-byte keys, 1 with values) and summing counts in order
//!    until it meets an `INCLUSIVE` one (backing off with `nanosleep` while the next tile has
//!    not published in this launch's epoch), and publishes the inclusive count; then
//!    `base[d] = offset[d] + prefix[d] - first[d]` in shared memory;
//! 6. the item of rank `r` with digit `d` goes to `base[d] + r`.
//!
//! Status words: `(epoch << 2 | kind) << 32 | count`, word `1 + tile * 256 + d`, written by one
//! exchange and read by relaxed atomic loads (the count travels in the word).

use super::sort_key::SortKey;
use super::tuning::Tuning;
use crate::ir::{
    Arrangement, Atomic, Buffer as IrBuffer, DType, Expr, RadixRank, Scalar, Scan, Scatter,
    SortOrder, ThreadData, index,
};
use crate::runtime::DeviceElement;
use crate::{Error, Kernel, KernelBuilder, Load};

/// Digits per pass.
pub(super) const DIGIT_BITS: u32 = 8;
/// Digit values per pass.
pub(super) const RADIX: u32 = 1 << DIGIT_BITS;
/// A tile's count of a digit, published before its look-back.
const AGGREGATE: u32 = 1;
/// The count of a digit over the tile and every tile before it.
const INCLUSIVE: u32 = 2;
/// The back-off of a digit's thread while the next tile back has not published, in ns.
const BACKOFF_NS: u32 = 64;

/// What every kernel of one sort shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Plan {
    pub order: SortOrder,
    pub begin: u32,
    pub end: u32,
    pub tuning: Tuning,
    pub look_back: LookBack,
}

/// How a digit pass finds its tile's place among the tiles before it: the tiles its
/// look-back reads a step, and whether the tile's counts are published as soon as the rank
/// has counted them (before its scan: CUB's early counts) or once it has ranked.
///
/// Both shorten the wait of the tiles after this one, which a pass of keys alone (bound by
/// its own latency) gains from; a pass of pairs, which moves twice the bytes, loses by the
/// wider step's extra reads, and by the register its early counts hold across the rank.
/// On an H100 at 2^28 keys, the default tunings, each form run twice alternating in one
/// lease (G keys/s), one / two / four tiles a step: `u32` keys 43.5 / 44.3 / 44.5, `u32`
/// pairs 30.7 / 30.4 / 30.1, `u64` keys 15.7 / 16.0 / 15.9 (eight: 15.8); then, with
/// these steps, counts published once ranked / early: `u32` keys 44.6, 44.4 / 45.1, 45.2,
/// `u32` pairs (one tile a step) 30.8, 30.8 / 30.4, 30.5, `u64` keys 16.0, 15.9 / 16.1,
/// 16.1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct LookBack {
    /// The tiles a step reads.
    pub window: u32,
    /// Whether the counts are published before the rank's scan.
    pub early_counts: bool,
}

impl LookBack {
    /// The look-back of a sort of keys of `key` (with values of `values`): four tiles a
    /// step for keys of up to 4 bytes alone, two for 8-byte keys alone, both with early
    /// counts; one a step, counts once ranked, with values.
    pub fn of(key: DType, values: Option<DType>) -> LookBack {
        match (values, key.bytes()) {
            (Some(_), _) => LookBack {
                window: 1,
                early_counts: false,
            },
            (None, bytes) => LookBack {
                window: if bytes == 8 { 2 } else { 4 },
                early_counts: true,
            },
        }
    }
}

impl Plan {
    /// Digit passes.
    pub fn passes(&self) -> u32 {
        (self.end - self.begin).div_ceil(DIGIT_BITS)
    }

    /// The first bit of pass `p`'s digit and its width.
    fn digit(&self, p: u32) -> (u32, u32) {
        let shift = self.begin + p * DIGIT_BITS;
        (shift, DIGIT_BITS.min(self.end - shift))
    }

    fn tag(&self) -> String {
        let order = match self.order {
            SortOrder::Ascending => "asc",
            SortOrder::Descending => "desc",
        };
        let Tuning { threads, items } = self.tuning;
        format!("{order}_{}_{}_{threads}x{items}", self.begin, self.end)
    }
}

/// The histogram kernel: `hist[p * 256 + d] += ` the count of keys whose pass-`p` digit is
/// `d`, over tiles `block * per_block ..` of the `n` keys.
pub(super) fn histogram<K: SortKey>(plan: &Plan) -> Result<Kernel, Error> {
    let Tuning { threads, items } = plan.tuning;
    let tile_items = plan.tuning.tile_items();
    let words = plan.passes() * RADIX;
    let name = format!("device_radix_sort_histogram_{}_{}", K::DTYPE, plan.tag());
    let mut k = KernelBuilder::new(name)
        .block(threads)
        .items_per_thread(items);
    let keys = k.input::<K>("keys");
    let hist = k.buffer::<u64>("hist");
    let (n, per_block) = (k.scalar::<u32>("n"), k.scalar::<u32>("per_block"));
    let b = k.this_block();
    let tid = index::thread_rank();
    let counters = k.shared_array::<u32>(words);
    for j in 0..words.div_ceil(threads) {
        let w = tid.clone() + j * threads;
        k.if_(w.lt(words), |k| k.shared_write(&counters, w, 0u32));
    }
    k.sync_block();
    let tiles = (n.expr() + (tile_items - 1)) / tile_items;
    k.for_range(0u32, per_block.expr(), |k, i| {
        let tile = index::block_index() * per_block.expr() + i;
        k.if_(tile.lt(tiles), |k| {
            let start = tile * tile_items;
            let valid = (n.expr() - start.clone()).min(tile_items);
            let load = Load::striped()
                .offset(start)
                .valid_items(valid.clone())
                .oob_default(K::default());
            let t = k.load_from(b, &keys, load);
            for item in 0..items {
                let at = tid.clone() + item * threads;
                k.if_(at.lt(valid.clone()), |k| {
                    for p in 0..plan.passes() {
                        let (shift, width) = plan.digit(p);
                        let d = K::digit(&t.item(item), shift, width, plan.order);
                        k.atomic(&counters, d + p * RADIX, Atomic::add(1u32));
                    }
                });
            }
        });
    });
    k.sync_block();
    for j in 0..words.div_ceil(threads) {
        let w = tid.clone() + j * threads;
        k.if_(w.lt(words), |k| {
            let c = k.var(counters.read(w.clone()));
            k.if_(c.get().ne(0u32), |k| {
                k.atomic(&hist, w, Atomic::add(c.get().cast::<u64>()));
            });
        });
    }
    k.build()
}

/// The offsets kernel: each pass's row of `hist` (a block each, one thread a digit) becomes
/// its exclusive prefix sums.
pub(super) fn offsets(plan: &Plan) -> Result<Kernel, Error> {
    let name = format!("device_radix_sort_offsets_{}", plan.tag());
    let mut k = KernelBuilder::new(name).block(RADIX).items_per_thread(1);
    let hist = k.buffer::<u64>("hist");
    let b = k.this_block();
    let at = index::block_index() * RADIX + index::thread_rank();
    let counts = k.thread_data_n::<u64>(1);
    k.set_item(&counts, 0, hist.at(at.clone()));
    let firsts = k.scan(b, &counts, Scan::exclusive_sum());
    k.write(&hist, at, firsts.item(0));
    k.build()
}

/// The per-digit look-back's handles.
struct Look<'a> {
    status: &'a IrBuffer<u64>,
    epoch: &'a Scalar<u32>,
    tile: Expr<u32>,
    /// The tiles a step reads.
    window: u32,
}

impl Look<'_> {
    /// The status word of `tile`'s digit `d`.
    fn word(&self, tile: Expr<u32>, d: Expr<u32>) -> Expr<u32> {
        tile * RADIX + d + 1u32
    }

    /// Publishes `count` as `kind` for this tile's digit `d`.
    fn publish(&self, k: &mut KernelBuilder, d: Expr<u32>, kind: Expr<u32>, count: Expr<u32>) {
        let flag = (self.epoch.expr() << 2u32) | kind;
        let word = (flag.cast::<u64>() << 32u32) | count.cast::<u64>();
        k.atomic(
            self.status,
            self.word(self.tile.clone(), d),
            Atomic::exch(word),
        );
    }

    /// The count of digit `d` over every tile before this one (0 for tile 0), walking back
    /// until an inclusive count, `window` tiles a step: the step reads the words of the
    /// next `window` tiles back at once (clamped at tile 0, whose count is inclusive from
    /// the start), then takes them in order up to the first one not yet published or the
    /// first inclusive one. A step that takes none backs off.
    fn prefix(&self, k: &mut KernelBuilder, d: Expr<u32>) -> Expr<u32> {
        let prefix = k.var(0u32);
        let pred = k.var(self.tile.clone());
        let done = k.var(self.tile.eq(0u32).select(1u32, 0u32));
        k.while_(done.get().eq(0u32), |k| {
            let words: Vec<_> = (1..=self.window)
                .map(|j| {
                    let back = pred.get().max(j) - j;
                    let at = self.word(back, d.clone());
                    let w = k.atomic(self.status, at, Atomic::load());
                    k.var(w)
                })
                .collect();
            let taken = k.var(0u32);
            let open = k.var(1u32);
            for word in &words {
                k.if_(open.get().ne(0u32), |k| {
                    let st = (word.get() >> 32u32).cast::<u32>();
                    let published = (st.clone() >> 2u32)
                        .eq(self.epoch.expr())
                        .and(&(st.clone() & 3u32).ne(0u32));
                    k.if_else(
                        published,
                        |k| {
                            k.set(&prefix, prefix.get() + word.get().cast::<u32>());
                            k.set(&taken, taken.get() + 1u32);
                            k.if_((st & 3u32).eq(INCLUSIVE), |k| {
                                k.set(&done, 1u32);
                                k.set(&open, 0u32);
                            });
                        },
                        |k| k.set(&open, 0u32),
                    );
                });
            }
            k.set(&pred, pred.get() - taken.get());
            k.if_(taken.get().eq(0u32), |k| k.nanosleep(BACKOFF_NS));
        });
        prefix.get()
    }
}

/// The kernel of digit pass `pass`: `src` (and `vsrc`) scattered by the pass's digit into
/// `dst` (and `vdst`). Without values (`pairs` false) `V` is unused.
pub(super) fn pass<K: SortKey, V: DeviceElement>(
    plan: &Plan,
    pass: u32,
    pairs: bool,
) -> Result<Kernel, Error> {
    let Tuning { threads, items } = plan.tuning;
    let tile_items = plan.tuning.tile_items();
    let (shift, width) = plan.digit(pass);
    let values = if pairs {
        format!("{}", V::DTYPE)
    } else {
        "keys".into()
    };
    let name = format!(
        "device_radix_sort_pass{pass}_{}_{values}_{}",
        K::DTYPE,
        plan.tag()
    );
    let mut k = KernelBuilder::new(name)
        .block(threads)
        .items_per_thread(items);
    if plan.look_back.early_counts {
        // The early counts hold a register across the rank; two blocks an SM keep the
        // default tunings' 512 threads at 64 (a 4-byte spill), where ptxas would take 72.
        k = k.min_blocks_per_sm(2);
    }
    let (src, dst) = (k.input::<K>("src"), k.output::<K>("dst"));
    let vbufs = pairs.then(|| (k.input::<V>("vsrc"), k.output::<V>("vdst")));
    let n = k.scalar::<u32>("n");
    let status = k.buffer::<u64>("status");
    let hist = k.buffer::<u64>("hist");
    let (epoch, base) = (k.scalar::<u32>("epoch"), k.scalar::<u64>("base"));
    let b = k.this_block();
    let tid = index::thread_rank();
    let tile = super::lookback::take_tile(&mut k, &status, &base);
    let tiles = (n.expr() + (tile_items - 1)) / tile_items;
    k.if_(tile.lt(tiles), |k| {
        let start = tile.clone() * tile_items;
        let valid = (n.expr() - start.clone()).min(tile_items);
        // Warp-striped, where each warp's items are in the tile's order: the match rank's
        // arrangement, straight from memory.
        let load = Load::warp_striped()
            .offset(start.clone())
            .valid_items(valid.clone())
            .oob_default(K::default());
        let keys = k.load_from(b, &src, load);
        // Thread t handles digits t * per .. (t + 1) * per.
        let per = RADIX.div_ceil(threads);
        let digit_of = |j: u32| tid.clone() * per + j;
        let look = Look {
            status: &status,
            epoch: &epoch,
            tile: tile.clone(),
            window: plan.look_back.window,
        };
        let first = tile.eq(0u32).select(INCLUSIVE, AGGREGATE);
        // Each digit is computed where the rank needs it: no digit payload lives across it.
        // The tile's counts are published as the look-back says: as soon as the rank has
        // counted them, or once it has ranked.
        let rank = RadixRank::match_any(DIGIT_BITS).valid_items(valid.clone());
        let digit = |v: Expr<K>| K::digit(&v, shift, width, plan.order);
        let mut publish = |k: &mut KernelBuilder, counts: &ThreadData<u32>| {
            for j in 0..per {
                k.if_(digit_of(j).lt(RADIX), |k| {
                    look.publish(k, digit_of(j), first.clone(), counts.item(j));
                });
            }
        };
        let ranked = if plan.look_back.early_counts {
            k.radix_rank_by_early(b, &keys, digit, rank, &mut publish)
        } else {
            let ranked = k.radix_rank_by(b, &keys, digit, rank);
            publish(k, &ranked.counts);
            ranked
        };
        // The tile sorted by digit, striped: consecutive threads hold consecutive ranks.
        let striped = Arrangement::Striped { threads };
        let sorted_keys = k.scatter(b, &keys, &ranked.ranks, Scatter::to(striped).inside());
        let bases = k.shared_array::<u32>(RADIX);
        for j in 0..per {
            k.if_(digit_of(j).lt(RADIX), |k| {
                let d = digit_of(j);
                let prefix = look.prefix(k, d.clone());
                let count = ranked.counts.item(j);
                k.if_(tile.ne(0u32), |k| {
                    look.publish(k, d.clone(), Expr::lit(INCLUSIVE), prefix.clone() + count);
                });
                let offset = hist.at(d.clone() + pass * RADIX).cast::<u32>();
                let first_rank = ranked.prefix.item(j);
                k.shared_write(&bases, d, offset + prefix - first_rank);
            });
        }
        k.sync_block();
        // The item of rank `r` with digit `d` goes to `bases[d] + r`. The values are loaded
        // and exchanged only after the keys have gone out, each key's digit kept a byte a
        // register for its value, so no sorted payload waits in registers for another's
        // exchange.
        let packed = pairs.then(|| k.thread_data_n::<u32>(items.div_ceil(4)));
        for i in 0..items {
            let rank = tid.clone() + i * threads;
            let d = k.var(K::digit(&sorted_keys.item(i), shift, width, plan.order));
            if let Some(packed) = &packed {
                let byte = d.get() << (8 * (i % 4));
                let word = if i % 4 == 0 {
                    byte
                } else {
                    packed.item(i / 4) | byte
                };
                k.set_item(packed, i / 4, word);
            }
            k.if_(rank.lt(valid.clone()), |k| {
                k.write(&dst, bases.read(d.get()) + rank, sorted_keys.item(i));
            });
        }
        if let (Some((vsrc, vdst)), Some(packed)) = (&vbufs, &packed) {
            let load = Load::warp_striped()
                .offset(start.clone())
                .valid_items(valid.clone())
                .oob_default(V::default());
            let vals = k.load_from(b, vsrc, load);
            let sorted = k.scatter(b, &vals, &ranked.ranks, Scatter::to(striped).inside());
            for i in 0..items {
                let rank = tid.clone() + i * threads;
                k.if_(rank.lt(valid.clone()), |k| {
                    let d = (packed.item(i / 4) >> (8 * (i % 4))) & 255u32;
                    k.write(vdst, bases.read(d) + rank, sorted.item(i));
                });
            }
        }
    });
    k.build()
}

//! Block radix rank (CUB's `BlockRadixRank` and `BlockRadixRankMatch`): each item's place in
//! the stable order of the block's tile by a digit of a few bits, recorded as the builder's own
//! ops.
//!
//! Three algorithms, as CUB's:
//! - [`RankAlgorithm::Basic`]: each thread counts its items' digits in its own column of a
//!   shared array of counters (two 16-bit counters a 32-bit word: the low halves hold the lower
//!   half of the digits, the high halves the upper; each item loads and stores its 16-bit
//!   counter through a view of the words), one block-wide exclusive scan over the
//!   counters (each thread scanning a consecutive segment, which it reads twice), and each
//!   item's rank is its column's prefix plus its count before it. Works on the blocked
//!   arrangement.
//! - [`RankAlgorithm::Memoize`]: as basic, the segment kept in registers between its two
//!   walks (one read of the counters fewer per word: the faster of the two where registers
//!   allow), for segments of up to [`MEMO_WORDS`] words (digits of up to 6 bits); wider
//!   digits are ranked as basic ranks them.
//! - [`RankAlgorithm::Match`]: each warp counts the digits of its own items in its own row of
//!   counters, item by item: the lanes holding one digit find each other with one ballot a
//!   digit bit (as CUB's `MatchAny`: `match.any.sync` issues to sm_90's address-divergence
//!   unit, whose rate bounded the rank), the first of them adds their number to the counter,
//!   and each takes the counter's old value plus its peers before it. One block-wide scan
//!   over the digits (each digit's warps in order) makes the counters prefixes. All digits of
//!   up to 8 bits are counted in one pass, with one shared access per item and
//!   warp-synchronous steps only.
//!   It works on the warp-striped arrangement (thread `lane` of warp `w` holding positions
//!   `w * 32 * K + i * 32 + lane`), as CUB's does, so that the order it counts in is the
//!   positions' order, and needs whole warps.
//!
//! The counters of basic and memoize take one lane more than the digits need when that makes
//! the lane count odd: the counting reads and writes word `lane * threads + thread` (a warp's
//! threads in distinct banks whatever their digits, for a block of whole warps), and the
//! scan's segment of thread `t`, words `t * lanes ..`, then strides an odd number of words
//! from thread to thread, so its reads fall in distinct banks too. (A padding word per 32
//! instead would shift each lane by a bank and make the counting conflict.)
//!
//! With a valid count, the items past it rank after every valid item (in their order) and
//! count in no digit. The digits' counts and exclusive prefixes are there on request
//! ([`KernelBuilder::radix_rank_with_counts`]): thread `t` holds those of digits
//! `t * P .. (t + 1) * P` for `P = ceil(2^bits / threads)`, as CUB's `exclusive_digit_prefix`.

use super::{KernelBuilder, Scan};
use crate::ir::dtype::Element;
use crate::ir::entities::Loc;
use crate::ir::expr::{Expr, index};
use crate::ir::handles::{Group, SharedArray, ThreadData, Var, Warp};
use crate::ir::ops::*;

/// How a block ranks digits ([`RadixRank`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RankAlgorithm {
    /// Per-thread packed counters, counted and scanned through shared memory (CUB's
    /// `RADIX_RANK_BASIC`); on the blocked arrangement.
    Basic,
    /// As basic, each thread's scan segment kept in registers (CUB's `RADIX_RANK_MEMOIZE`);
    /// on the blocked arrangement.
    Memoize,
    /// Per-warp counters, the lanes of one digit matched by ballots (CUB's
    /// `RADIX_RANK_MATCH`); on the warp-striped arrangement; whole warps only.
    Match,
}

/// The controls of a block radix rank ([`KernelBuilder::radix_rank`]): the algorithm, the
/// digit width and a valid count.
///
/// ```
/// use coopgraph::ir::{RadixRank, RankAlgorithm};
///
/// let r = RadixRank::match_any(8);
/// assert_eq!((r.algorithm(), r.digit_bits()), (RankAlgorithm::Match, 8));
/// ```
#[derive(Debug, Clone)]
pub struct RadixRank {
    algorithm: RankAlgorithm,
    bits: u32,
    valid: Option<Expr<u32>>,
}

impl RadixRank {
    /// Basic ranking of `bits`-bit digits (1..=8).
    pub fn basic(bits: u32) -> Self {
        RadixRank {
            algorithm: RankAlgorithm::Basic,
            bits,
            valid: None,
        }
    }

    /// Memoized ranking of `bits`-bit digits (1..=8).
    pub fn memoize(bits: u32) -> Self {
        RadixRank {
            algorithm: RankAlgorithm::Memoize,
            ..Self::basic(bits)
        }
    }

    /// Ranking of `bits`-bit digits (1..=8) by warp matches.
    pub fn match_any(bits: u32) -> Self {
        RadixRank {
            algorithm: RankAlgorithm::Match,
            ..Self::basic(bits)
        }
    }

    /// Only the first `n` positions of the tile hold items: the others rank after them (in
    /// their order) and count in no digit.
    pub fn valid_items(mut self, n: impl Into<Expr<u32>>) -> Self {
        self.valid = Some(n.into());
        self
    }

    /// The algorithm.
    pub fn algorithm(&self) -> RankAlgorithm {
        self.algorithm
    }

    /// Bits per digit.
    pub fn digit_bits(&self) -> u32 {
        self.bits
    }
}

/// A rank's results with its digits' counts ([`KernelBuilder::radix_rank_with_counts`]).
#[derive(Debug, Clone, Copy)]
pub struct RankedDigits {
    /// Each item's rank (its position in the tile sorted stably by digit), in the arrangement
    /// the algorithm ranks.
    pub ranks: ThreadData<u32>,
    /// Thread `t`'s item `j`: the valid items whose digit is below `t * P + j` (the digit's
    /// first rank), `P` items per thread; digits past the last read the valid total.
    pub prefix: ThreadData<u32>,
    /// Thread `t`'s item `j`: the valid items whose digit is `t * P + j` (0 past the last
    /// digit).
    pub counts: ThreadData<u32>,
}

/// The most counter words memoized ranking keeps in registers: wider digits' segments are
/// read twice, as basic ranking's are.
pub const MEMO_WORDS: u32 = 33;

/// The lanes of counters for `bits`-bit digits in basic and memoize ranking: `2^(bits - 1)`
/// (two 16-bit counters a word), and one more when that is even, so that each thread's scan
/// segment strides an odd number of words.
pub(super) fn counter_lanes(bits: u32) -> u32 {
    let lanes = 1u32 << (bits.clamp(1, 8) - 1);
    lanes | 1
}

/// The counter words a rank of `bits`-bit digits takes for `threads` threads.
pub(super) fn counter_words(algorithm: RankAlgorithm, bits: u32, threads: u32) -> u32 {
    match algorithm {
        RankAlgorithm::Basic | RankAlgorithm::Memoize => counter_lanes(bits) * threads,
        RankAlgorithm::Match => (1u32 << bits.clamp(1, 8)) * threads.div_ceil(32),
    }
}

/// The digits' first ranks and counts, where asked for.
type Counted = Option<(ThreadData<u32>, ThreadData<u32>)>;

/// What a rank hands the digits' counts to as soon as it has them (thread `t`'s item `j`
/// the count of digit `t * P + j`, as [`RankedDigits::counts`]).
pub(crate) type OnCounts<'a> = &'a mut dyn FnMut(&mut KernelBuilder, &ThreadData<u32>);

/// Shared state of a rank inside a loop: its counters are allocated once.
pub(super) struct Ranker {
    group: Group,
    controls: RadixRank,
    counters: SharedArray<u32>,
    /// The counters' 16-bit halves (basic and memoize count in them, as CUB's do: a load
    /// and a store of the half, no shifts).
    halves: SharedArray<u16>,
    /// The group's threads.
    threads: u32,
}

impl Ranker {
    /// The digit `d` counts as: modulo `2^bits`, and the last digit for an item at
    /// `position` past the valid count.
    fn counted(&self, d: Expr<u32>, position: Expr<u32>) -> Expr<u32> {
        let last = (1u32 << self.controls.bits) - 1;
        match &self.controls.valid {
            Some(n) => position.lt(n.clone()).select(d & last, Expr::lit(last)),
            None => d & last,
        }
    }

    /// Word `at` of the thread's group's counters: each group of a logical warp or of whole
    /// warps counts in its own `lanes * threads` words (the block's are all of them).
    fn word(&self, at: Expr<u32>) -> Expr<u32> {
        match self.group.kind() {
            GroupKind::Block => at,
            _ => {
                let lanes = counter_lanes(self.controls.bits);
                at + self.group.index() * (lanes * self.threads)
            }
        }
    }
}

impl KernelBuilder {
    /// Ranks the block's items by their digits (CUB's `BlockRadixRank::RankKeys`): each
    /// item's rank is its position in the tile sorted stably by digit, so a scatter by rank
    /// ([`Scatter::permutation`](super::Scatter::permutation)) sorts the tile. `digits` are
    /// taken modulo `2^bits`; every algorithm ranks by position in the tile. Basic and
    /// memoize work on the blocked arrangement, match on the warp-striped one (`digits` are
    /// exchanged there first when arranged otherwise, and the ranks come out so arranged: the
    /// planner converts them where an op needs another arrangement). Block groups only
    /// ([`RadixSortProblem`](crate::ir::ops::RadixSortProblem) lists what the verifier
    /// reports).
    ///
    /// ```
    /// use coopgraph::ir::{RadixRank, Scatter};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// // Sort a tile of 64 bytes by their low nibble, stably.
    /// let mut k = KernelBuilder::new("by_nibble").block(32).items_per_thread(2);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let digits = k.map(&t, |v| v & 15u32);
    /// let ranks = k.radix_rank(b, &digits, RadixRank::match_any(4));
    /// let sorted = k.scatter(b, &t, &ranks, Scatter::blocked().permutation());
    /// k.store_to(b, &y, &sorted, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let xs: Vec<u32> = (0..64).map(|i| (i * 37) % 256).collect();
    /// let dev = Device::sim();
    /// let xb = dev.upload(&xs)?;
    /// let mut yb = dev.alloc_zeroed::<u32>(64)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// let mut want = xs.clone();
    /// want.sort_by_key(|v| v & 15);
    /// assert_eq!(yb.to_vec()?, want);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn radix_rank(
        &mut self,
        group: impl Into<Group>,
        digits: &ThreadData<u32>,
        controls: RadixRank,
    ) -> ThreadData<u32> {
        let loc = Loc::caller();
        self.rank_recorded(group.into(), digits, controls, false, loc)
            .ranks
    }

    /// As [`radix_rank`](Self::radix_rank), with each digit's count and first rank (CUB's
    /// `exclusive_digit_prefix`): thread `t` holds those of digits `t * P .. (t + 1) * P`,
    /// `P = ceil(2^bits / threads)`, at most
    /// [`MAX_ITEMS_PER_THREAD`](crate::ir::ops::MAX_ITEMS_PER_THREAD) (more is refused at
    /// the call: [`RadixSortProblem::Counts`](crate::ir::RadixSortProblem::Counts)). Inside
    /// a loop (or any region), a basic or memoize rank with counts begins with a barrier of
    /// its group: its counts read thread 0's counters, which the next round zeroes.
    ///
    /// ```
    /// use coopgraph::ir::RadixRank;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// // 2-bit digits over 4 threads: thread t holds digit t's count and first rank.
    /// let mut k = KernelBuilder::new("digit_counts").block(4).items_per_thread(2);
    /// let x = k.input::<u32>("x");
    /// let (c, p) = (k.output::<u32>("counts"), k.output::<u32>("prefix"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let r = k.radix_rank_with_counts(b, &t, RadixRank::memoize(2).valid_items(7u32));
    /// k.store_to(b, &c, &r.counts, Store::direct().offset(0u32));
    /// k.store_to(b, &p, &r.prefix, Store::direct().offset(0u32));
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[3u32, 1, 1, 0, 3, 3, 2, 0])?; // the last is past the valid 7
    /// let (mut cb, mut pb) = (dev.alloc_zeroed::<u32>(4)?, dev.alloc_zeroed::<u32>(4)?);
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut cb, &mut pb))?;
    /// assert_eq!(cb.to_vec()?, [1, 2, 1, 3]);
    /// assert_eq!(pb.to_vec()?, [0, 1, 3, 4]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn radix_rank_with_counts(
        &mut self,
        group: impl Into<Group>,
        digits: &ThreadData<u32>,
        controls: RadixRank,
    ) -> RankedDigits {
        let loc = Loc::caller();
        self.rank_recorded(group.into(), digits, controls, true, loc)
    }

    /// As [`radix_rank_with_counts`](Self::radix_rank_with_counts), each item's digit
    /// `digit(key)` of its key: the digits are computed where the rank needs them, not held
    /// as a payload of their own. The match rank then keeps no digit in a register across
    /// its ranking (a register per item fewer at its peak); the others rank a map of `keys`.
    /// Returns the ranks in the arrangement the algorithm ranks, as `radix_rank` does.
    ///
    /// ```
    /// use coopgraph::ir::{RadixRank, Scatter};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// // Sort a tile of 64 keys by bits 4..8, stably.
    /// let mut k = KernelBuilder::new("by_bits").block(32).items_per_thread(2);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let r = k.radix_rank_by(b, &t, |v| v >> 4u32, RadixRank::match_any(4));
    /// let sorted = k.scatter(b, &t, &r.ranks, Scatter::blocked().permutation());
    /// k.store_to(b, &y, &sorted, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let xs: Vec<u32> = (0..64).map(|i| (i * 37) % 256).collect();
    /// let dev = Device::sim();
    /// let xb = dev.upload(&xs)?;
    /// let mut yb = dev.alloc_zeroed::<u32>(64)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// let mut want = xs.clone();
    /// want.sort_by_key(|v| (v >> 4) & 15);
    /// assert_eq!(yb.to_vec()?, want);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn radix_rank_by<K: Element>(
        &mut self,
        group: impl Into<Group>,
        keys: &ThreadData<K>,
        digit: impl Fn(Expr<K>) -> Expr<u32>,
        controls: RadixRank,
    ) -> RankedDigits {
        let loc = Loc::caller();
        self.rank_by_at(group.into(), keys, &digit, controls, None, loc)
    }

    /// As [`radix_rank_by`](Self::radix_rank_by), handing the digits' counts to
    /// `on_counts` as soon as the rank has them: the match rank between its count and its
    /// scan (where a single-pass sort publishes its tile's counts, so that the tiles after it
    /// read them a scan and a barrier sooner: CUB's early counts), the others after the
    /// ranks. Every op is recorded at the caller's line.
    #[track_caller]
    pub(crate) fn radix_rank_by_early<K: Element>(
        &mut self,
        group: impl Into<Group>,
        keys: &ThreadData<K>,
        digit: impl Fn(Expr<K>) -> Expr<u32>,
        controls: RadixRank,
        on_counts: OnCounts<'_>,
    ) -> RankedDigits {
        let loc = Loc::caller();
        self.rank_by_at(group.into(), keys, &digit, controls, Some(on_counts), loc)
    }

    /// The rank of `keys` by `digit`, its counts handed to `on_counts` where given.
    fn rank_by_at<K: Element>(
        &mut self,
        group: Group,
        keys: &ThreadData<K>,
        digit: &dyn Fn(Expr<K>) -> Expr<u32>,
        controls: RadixRank,
        mut on_counts: Option<OnCounts<'_>>,
        loc: Loc,
    ) -> RankedDigits {
        let zero = |k: &mut Self| k.map(keys, |_| Expr::lit(0u32));
        self.rank_at(group, controls, true, loc, zero, |k, ranker| {
            if ranker.controls.algorithm == RankAlgorithm::Match {
                k.rank_match_keys(ranker, keys, digit, on_counts)
            } else {
                let digits = k.map(keys, digit);
                let ranked = k.rank(ranker, &digits, true);
                if let (Some(hook), Some((_, counts))) = (on_counts.as_mut(), &ranked.1) {
                    hook(k, counts);
                }
                ranked
            }
        })
    }

    /// Checks the controls and records the rank, every op at `loc`.
    fn rank_recorded(
        &mut self,
        group: Group,
        digits: &ThreadData<u32>,
        controls: RadixRank,
        with_counts: bool,
        loc: Loc,
    ) -> RankedDigits {
        let zero = |k: &mut Self| k.map(digits, |_| Expr::lit(0u32));
        self.rank_at(group, controls, with_counts, loc, zero, |k, ranker| {
            k.rank(ranker, digits, with_counts)
        })
    }

    /// Checks the controls and records `rank` (or, where the controls are wrong, `zero` as
    /// every result), every op at `loc`.
    fn rank_at(
        &mut self,
        group: Group,
        controls: RadixRank,
        with_counts: bool,
        loc: Loc,
        zero: impl FnOnce(&mut Self) -> ThreadData<u32>,
        rank: impl FnOnce(&mut Self, &Ranker) -> (ThreadData<u32>, Counted),
    ) -> RankedDigits {
        let first_op = self.recorded();
        let ranker = if group.kind() == GroupKind::Block {
            self.ranker(group, controls, with_counts, loc)
        } else {
            let problem = RadixSortProblem::Group { kind: group.kind() };
            self.ir
                .issues
                .push(BuilderIssue::RadixSort { problem, loc });
            None
        };
        let ranked = match ranker {
            Some(ranker) => {
                let (ranks, counted) = rank(self, &ranker);
                // Without counts asked for, the ranks stand in (the public form drops them).
                let (prefix, counts) = counted.unwrap_or((ranks, ranks));
                RankedDigits {
                    ranks,
                    prefix,
                    counts,
                }
            }
            None => {
                let zero = zero(self);
                RankedDigits {
                    ranks: zero,
                    prefix: zero,
                    counts: zero,
                }
            }
        };
        self.attribute(first_op, loc);
        ranked
    }

    /// A rank's counters, or `None` with the controls' problem recorded. Basic and memoize
    /// ranks rank within any group whose threads [`group_threads`](Self::group_threads)
    /// finds (each group its own tile); match ranks the block only.
    /// Where `with_counts`, the counts (`ceil(2^bits / threads)` a thread) must fit a
    /// payload.
    pub(super) fn ranker(
        &mut self,
        group: Group,
        controls: RadixRank,
        with_counts: bool,
        loc: Loc,
    ) -> Option<Ranker> {
        let threads = self.ir.block_threads();
        let words = counter_words(controls.algorithm, controls.bits, threads);
        let group_threads = self.group_threads(group);
        let problem =
            if group.kind() != GroupKind::Block && controls.algorithm == RankAlgorithm::Match {
                Some(RadixSortProblem::Group { kind: group.kind() })
            } else if let Err(problem) = group_threads {
                Some(problem)
            } else if !(1..=8).contains(&controls.bits) {
                Some(RadixSortProblem::RadixBits {
                    bits: controls.bits,
                })
            } else if controls.algorithm == RankAlgorithm::Match && !threads.is_multiple_of(32) {
                Some(RadixSortProblem::WholeWarps { threads })
            } else if words > super::MAX_COUNTER_WORDS {
                Some(RadixSortProblem::Counters {
                    bits: controls.bits,
                    threads,
                    words,
                    max: super::MAX_COUNTER_WORDS,
                })
            } else if with_counts
                && let Ok(&group_threads) = group_threads.as_ref()
                && let items = (1u32 << controls.bits).div_ceil(group_threads.max(1))
                && items > MAX_ITEMS_PER_THREAD
            {
                Some(RadixSortProblem::Counts {
                    bits: controls.bits,
                    threads: group_threads,
                    items,
                    max: MAX_ITEMS_PER_THREAD,
                })
            } else {
                None
            };
        if let Some(problem) = problem {
            self.ir
                .issues
                .push(BuilderIssue::RadixSort { problem, loc });
            return None;
        }
        let counters = self.shared_array(words);
        let halves = self.shared_view(&counters);
        Some(Ranker {
            group,
            controls,
            counters,
            halves,
            threads: group_threads.unwrap_or(threads).max(1),
        })
    }

    /// The threads of each of the group's tiles in a radix sort or rank: the block's, a
    /// logical warp's width (which must divide the block's threads), or `32 * warps`.
    pub(super) fn group_threads(&self, group: Group) -> Result<u32, RadixSortProblem> {
        let block = self.ir.block_threads();
        match group.kind() {
            GroupKind::Block => Ok(block),
            GroupKind::LogicalWarp { width } => {
                if width == 0 || !block.is_multiple_of(width) {
                    Err(RadixSortProblem::PartialGroup { width, block })
                } else {
                    Ok(width)
                }
            }
            GroupKind::Warps { warps } => Ok(warps.saturating_mul(32)),
        }
    }

    /// Records one rank with `ranker`'s counters: the ranks, and the digits' first ranks and
    /// counts where `with_counts`.
    pub(super) fn rank(
        &mut self,
        ranker: &Ranker,
        digits: &ThreadData<u32>,
        with_counts: bool,
    ) -> (ThreadData<u32>, Counted) {
        match ranker.controls.algorithm {
            RankAlgorithm::Basic => self.rank_counting(ranker, digits, false, with_counts),
            RankAlgorithm::Memoize => self.rank_counting(ranker, digits, true, with_counts),
            RankAlgorithm::Match => self.rank_match(ranker, digits, with_counts),
        }
    }

    /// The digits to count: modulo `2^bits`, and the last digit past the valid count (so
    /// those items rank after every valid one, in their order; the last digit's count drops
    /// them again). `position` is an item's position in the ranked order.
    fn counted_digits(
        &mut self,
        ranker: &Ranker,
        digits: &ThreadData<u32>,
        position: impl Fn() -> Expr<u32>,
    ) -> ThreadData<u32> {
        self.map(digits, |d| ranker.counted(d, position()))
    }

    /// Basic and memoized ranking over per-thread packed counters.
    fn rank_counting(
        &mut self,
        ranker: &Ranker,
        digits: &ThreadData<u32>,
        memoize: bool,
        with_counts: bool,
    ) -> (ThreadData<u32>, Counted) {
        let (group, counters, threads) = (ranker.group, ranker.counters, ranker.threads);
        let halves = ranker.halves;
        let bits = ranker.controls.bits;
        let digits = &self.exchange(group, digits, Arrangement::Blocked, ExchangeVia::Shared);
        let items = digits.items;
        let digits = self.counted_digits(ranker, digits, || group.rank() * items + index::item());
        let tid = group.rank();
        let log_lanes = bits - 1;
        let lanes = 1u32 << log_lanes;
        let padded_lanes = counter_lanes(bits);
        // Digit d counts in word (d mod lanes) of the thread's column, in the half
        // d / lanes (the high half for the upper digits): half `2 * word + d / lanes`, the
        // thread's part `2 * word(t)` apart (the same for every item).
        // (`& 1` bounds the half for the bounds analysis, which cannot see that the digits
        // are below `2 * lanes`: the accesses need no guard.)
        let half_of = |d: Expr<u32>, twice_t: Expr<u32>| {
            (d.clone() & (lanes - 1)) * (2 * threads) + ((d >> log_lanes) & 1u32) + twice_t
        };
        let twice_t = ranker.word(group.rank()) * 2u32;
        let half = |d: Expr<u32>| half_of(d, twice_t.clone());
        // A thread zeroes and bumps its own column, and its ranks read only that column; but
        // the counts read thread 0's column, which thread 0 zeroes at the next rank with
        // these counters (the same rank, inside a loop): there every thread's reads finish
        // before the zeroing (as the histogram's counters and the run-length decode's arrays
        // do, inside any region).
        if with_counts && self.inside_region() {
            self.group_barrier(group);
        }
        for lane in 0..padded_lanes {
            self.shared_write(&counters, ranker.word(tid.clone() + lane * threads), 0u32);
        }
        // Each item's count of equal digits before it in the thread: its half before its own
        // count.
        let before = self.thread_data_n::<u32>(items);
        for i in 0..items {
            let d = digits.item(i);
            self.set_item(&before, i, halves.read(half(d.clone())).cast::<u32>());
            let bumped = (before.item(i) + 1u32).cast::<u16>();
            self.shared_write(&halves, half(d), bumped);
        }
        self.group_barrier(group);
        // The block-wide exclusive scan of the counter words (CUB's raking over them): thread
        // t sums its segment, words t * lanes .. (t + 1) * lanes; one block scan of the
        // sums; then t walks its segment again, writing each word's exclusive prefix. The
        // high halves start after every low half (the low halves' total).
        let at = |j: u32| ranker.word(group.rank() * padded_lanes + j);
        let segment = (memoize && padded_lanes <= MEMO_WORDS).then(|| {
            let s = self.thread_data_n::<u32>(padded_lanes);
            for j in 0..padded_lanes {
                self.set_item(&s, j, counters.read(at(j)));
            }
            s
        });
        let word_at = |j: u32| match &segment {
            Some(s) => s.item(j),
            None => counters.read(at(j)),
        };
        let sum = (1..padded_lanes).fold(word_at(0), |acc, j| acc + word_at(j));
        let partial = self.thread_data_n::<u32>(1);
        self.set_item(&partial, 0, sum);
        let (prefix, total) = self.scan_with_aggregate(group, &partial, Scan::exclusive_sum());
        let running = self.var(prefix.item(0) + (total.item(0) << 16u32));
        let word_j = self.var(0u32);
        for j in 0..padded_lanes {
            self.set(&word_j, word_at(j));
            self.shared_write(&counters, at(j), running.get());
            if j + 1 < padded_lanes {
                self.set(&running, running.get() + word_j.get());
            }
        }
        self.group_barrier(group);
        let ranks = self.map2(&digits, &before, |d, b| {
            b + halves.read(half(d)).cast::<u32>()
        });
        let counted = with_counts.then(|| {
            // A digit's first rank: its column's half of thread 0.
            let first = |d: Expr<u32>| halves.read(half_of(d, Expr::lit(0u32))).cast::<u32>();
            self.digit_counts(ranker, items, first)
        });
        (ranks, counted)
    }

    /// Each thread's digits' first ranks and counts from `first(d)` (read after the scan's
    /// write-back), the last digit's count less the items past the valid count.
    fn digit_counts(
        &mut self,
        ranker: &Ranker,
        items: u32,
        first: impl Fn(Expr<u32>) -> Expr<u32>,
    ) -> (ThreadData<u32>, ThreadData<u32>) {
        let radix = 1u32 << ranker.controls.bits;
        let per = radix.div_ceil(ranker.threads);
        let valid = self.valid_total(ranker, items);
        let prefix = self.thread_data_n::<u32>(per);
        let counts = self.thread_data_n::<u32>(per);
        for j in 0..per {
            let d = index::thread_rank() * per + j;
            let p = d
                .lt(radix)
                .select(first(d.clone().min(radix - 1)), valid.clone());
            let next = (d.clone() + 1u32)
                .lt(radix)
                .select(first((d.clone() + 1u32).min(radix - 1)), valid.clone());
            self.set_item(&prefix, j, p.clone());
            self.set_item(&counts, j, d.lt(radix).select(next - p, Expr::lit(0u32)));
        }
        (prefix, counts)
    }

    /// The valid items of the tile.
    fn valid_total(&self, ranker: &Ranker, items: u32) -> Expr<u32> {
        let tile = ranker.threads * items;
        match &ranker.controls.valid {
            Some(n) => n.clone().min(tile),
            None => Expr::lit(tile),
        }
    }

    /// Ranking by warp matches over per-warp counters, warp `w`'s counter of digit `d` at
    /// `counters[w * radix + d]`: the lanes of a warp meet in a bank only when their digits
    /// agree modulo 32, and the threads scanning consecutive digits read consecutive words.
    fn rank_match(
        &mut self,
        ranker: &Ranker,
        digits: &ThreadData<u32>,
        with_counts: bool,
    ) -> (ThreadData<u32>, Counted) {
        let warped = Arrangement::Striped { threads: 32 };
        let digits = &self.exchange(ranker.group, digits, warped, ExchangeVia::Shared);
        let items = digits.items;
        let digits = self.counted_digits(ranker, digits, || {
            (index::warp_rank() * items + index::item()) * 32u32 + index::lane()
        });
        self.rank_match_items(ranker, &digits, &|i| digits.item(i), with_counts, None)
    }

    /// [`rank_match`](Self::rank_match) over `keys`, each digit `digit(key)` computed where
    /// it is needed: no payload of digits lives across the ranking.
    fn rank_match_keys<K: Element>(
        &mut self,
        ranker: &Ranker,
        keys: &ThreadData<K>,
        digit: &dyn Fn(Expr<K>) -> Expr<u32>,
        on_counts: Option<OnCounts<'_>>,
    ) -> (ThreadData<u32>, Counted) {
        let warped = Arrangement::Striped { threads: 32 };
        let keys = self.exchange(ranker.group, keys, warped, ExchangeVia::Shared);
        let items = keys.items;
        // Item `i`'s counted digit, at its warp-striped position.
        let counted = |key: Expr<K>, i: u32| {
            let position = (index::warp_rank() * items + i) * 32u32 + index::lane();
            ranker.counted(digit(key), position)
        };
        let digit_i = |i: u32| counted(keys.item(i), i);
        self.rank_match_items(ranker, &keys, &digit_i, true, on_counts)
    }

    /// The lanes of the warp (of `members`, its lanes) whose digit of `bits` bits equals this
    /// lane's, as bits: what `match.any` gives, by one ballot per bit. On sm_90 `match.any`
    /// issues to the address-divergence unit, whose rate bounded the match rank of 8-bit
    /// digits (that unit 87% busy in the Onesweep pass, the ALU a third); ballots and the
    /// logic that folds them run on the ALU.
    fn match_by_ballots(
        &mut self,
        warp: Warp,
        members: &Var<u32>,
        d: Expr<u32>,
        bits: u32,
    ) -> Var<u32> {
        let digit = self.var(d);
        let peers = self.var(members.get());
        for b in 0..bits {
            // One logic op with a predicate out: no shift, no compare.
            let set = (digit.get() & (1u32 << b)).ne(0u32);
            let voted = self.ballot(warp, set.clone());
            // The lanes whose bit `b` agrees with this lane's.
            self.set(&peers, peers.get() & set.select(voted.clone(), !voted));
        }
        peers
    }

    /// The match rank of the warp-striped items of `shape` (whose arrangement the ranks
    /// take), item `i`'s counted digit `digit(i)`.
    ///
    /// Each item's count of its digit before it (below `2^16`: a tile holds at most `2^16`
    /// items) is kept with the digit in its high half, so that the ranks' final read of the
    /// digit's counter needs no register of digits.
    fn rank_match_items<T: Element>(
        &mut self,
        ranker: &Ranker,
        shape: &ThreadData<T>,
        digit: &dyn Fn(u32) -> Expr<u32>,
        with_counts: bool,
        on_counts: Option<OnCounts<'_>>,
    ) -> (ThreadData<u32>, Counted) {
        let (group, counters, threads) = (ranker.group, ranker.counters, ranker.threads);
        let items = shape.items;
        let radix = 1u32 << ranker.controls.bits;
        let warps = threads / 32;
        let slot = |d: Expr<u32>| index::warp_rank() * radix + d;
        // Each warp zeroes its own row: only its own lanes touch it until the scan.
        let warp = self.this_warp();
        self.sync(warp);
        for j in 0..radix.div_ceil(32) {
            let d = index::lane() + j * 32;
            self.if_(d.lt(radix), |k| k.shared_write(&counters, slot(d), 0u32));
        }
        self.sync(warp);
        let before = self.thread_data_n::<u32>(items);
        let lower = (Expr::lit(1u32) << index::lane()) - 1u32;
        // The warp's lanes.
        let members = self.ballot(warp, true);
        let members = self.var(members);
        for i in 0..items {
            let d = digit(i);
            let peers = self.match_by_ballots(warp, &members, d.clone(), ranker.controls.bits);
            let earlier = (peers.get() & lower.clone()).popc();
            // The lowest lane of the digit's peers bumps the counter and hands out its old
            // value; a warp barrier orders the bump before the next item's (the shuffle
            // orders no memory), the block barrier after the last item before the scan.
            let lowest = peers.get() & (Expr::lit(0u32) - peers.get());
            let leader = Expr::lit(31u32) - lowest.clz();
            let old = self.var(0u32);
            self.if_(earlier.clone().eq(0u32), |k| {
                let c = k.var(counters.read(slot(d.clone())));
                k.shared_write(&counters, slot(d.clone()), c.get() + peers.get().popc());
                k.set(&old, c.get());
            });
            let first = self.shfl(warp, old.get(), leader);
            if i + 1 < items {
                self.sync(warp);
            }
            self.set_item(&before, i, (first + earlier) | (d << 16u32));
        }
        self.sync_block();
        // Thread t scans digits t * per .. (t + 1) * per: their totals over the warps, one
        // block scan, then each digit's warps get their prefixes in order.
        let per = radix.div_ceil(threads);
        let digit = |j: u32| index::thread_rank() * per + j;
        let totals = self.thread_data_n::<u32>(per);
        for j in 0..per {
            let d = digit(j).min(radix - 1);
            let sum = (1..warps).fold(counters.read(d.clone()), |acc, w| {
                acc + counters.read(d.clone() + w * radix)
            });
            self.set_item(&totals, j, digit(j).lt(radix).select(sum, Expr::lit(0u32)));
        }
        // Each digit's count: its total, less the items past the valid count (counted in
        // the last digit).
        let valid = self.valid_total(ranker, items);
        let count_of = |j: u32| {
            let t = totals.item(j);
            let dropped = Expr::lit(threads * items) - valid.clone();
            digit(j).eq(radix - 1).select(t.clone() - dropped, t)
        };
        let counts_of = |k: &mut Self| {
            let counts = k.thread_data_n::<u32>(per);
            for j in 0..per {
                k.set_item(&counts, j, count_of(j));
            }
            counts
        };
        let early = on_counts.map(|hook| {
            let counts = counts_of(self);
            hook(self, &counts);
            counts
        });
        let scanned = self.scan(group, &totals, Scan::exclusive_sum());
        for j in 0..per {
            self.if_(digit(j).lt(radix), |k| {
                let running = k.var(scanned.item(j));
                for w in 0..warps {
                    let at = digit(j) + w * radix;
                    let c = k.var(counters.read(at.clone()));
                    k.shared_write(&counters, at, running.get());
                    k.set(&running, running.get() + c.get());
                }
            });
        }
        self.sync_block();
        let ranks = self.map2(shape, &before, |_, b| {
            counters.read(slot(b.clone() >> 16u32)) + (b & 0xffffu32)
        });
        let counted = with_counts.then(|| {
            let prefix = self.thread_data_n::<u32>(per);
            for j in 0..per {
                let p = digit(j).lt(radix).select(scanned.item(j), valid.clone());
                self.set_item(&prefix, j, p);
            }
            let counts = early.unwrap_or_else(|| counts_of(self));
            (prefix, counts)
        });
        (ranks, counted)
    }
}

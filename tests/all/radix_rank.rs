//! Block radix rank, all three algorithms: ranks against a stable CPU sort by digit (a scatter
//! by rank must sort the tile), digit counts and first ranks against CPU counts, over random
//! block sizes, items per thread, digit widths, arrivals in several arrangements and partial
//! tiles; every block barrier shown necessary; every typed error.

use super::common::{Rng, compiled, device, race_checker};
use coopgraph::ir::{
    Arrangement, ExchangeVia, Input, Output, RadixRank, RadixSortProblem, RankAlgorithm,
    RankedDigits, Scatter, ThreadData, VerifyErrorKind,
};
use coopgraph::ptx::Arch;
use coopgraph::runtime::{Device, RuntimeError};
use coopgraph::{Error, Kernel, KernelBuilder, Load, Store};
use proptest::prelude::*;

#[derive(Debug, Clone, Copy)]
struct Case {
    algorithm: RankAlgorithm,
    block: u32,
    items: u32,
    bits: u32,
    valid: Option<u32>,
    /// Digits arrive striped over the block instead of blocked.
    striped_in: bool,
    /// Ranked by `radix_rank_by` over keys shifted 8 bits up, the digit an expression of the
    /// key, instead of by a payload of digits.
    by_key: bool,
    /// Times the kernel loads, ranks and stores (each round alike).
    rounds: u32,
    seed: u64,
}

impl Case {
    /// A case of the looped kernels: 3 items a thread, 5-bit digits, a full tile, two rounds.
    fn looped(algorithm: RankAlgorithm, block: u32, by_key: bool, seed: u64) -> Case {
        Case {
            algorithm,
            block,
            items: 3,
            bits: 5,
            valid: None,
            striped_in: false,
            by_key,
            rounds: 2,
            seed,
        }
    }

    fn controls(&self, n: Option<coopgraph::ir::Scalar<u32>>) -> RadixRank {
        let r = match self.algorithm {
            RankAlgorithm::Basic => RadixRank::basic(self.bits),
            RankAlgorithm::Memoize => RadixRank::memoize(self.bits),
            RankAlgorithm::Match => RadixRank::match_any(self.bits),
        };
        match n {
            Some(n) => r.valid_items(n),
            None => r,
        }
    }

    fn tile(&self) -> usize {
        (self.block * self.items) as usize
    }

    fn per(&self) -> usize {
        (1usize << self.bits).div_ceil(self.block as usize)
    }
}

/// The rank kernels' parameters: the input `x`, and the outputs `y` (ranks or the sorted
/// tile), `counts` and `prefix`.
fn rank_params(k: &mut KernelBuilder) -> (Input<u32>, [Output<u32>; 3]) {
    let x = k.input::<u32>("x");
    let outputs = ["y", "counts", "prefix"].map(|name| k.output::<u32>(name));
    (x, outputs)
}

/// The block's rank of the blocked tile `t` (digits in its low bits) with its counts: by
/// `radix_rank_by` over the tile shifted 8 bits up where `case.by_key`, else by
/// `radix_rank_with_counts` of a copy of the digits.
fn rank_with_counts(
    k: &mut KernelBuilder,
    t: &ThreadData<u32>,
    case: &Case,
    n: Option<coopgraph::ir::Scalar<u32>>,
) -> RankedDigits {
    let b = k.this_block();
    if case.by_key {
        let keys = k.map(t, |v| v << 8u32);
        k.radix_rank_by(b, &keys, |key| key >> 8u32, case.controls(n))
    } else {
        let digits = k.map(t, |v| v);
        k.radix_rank_with_counts(b, &digits, case.controls(n))
    }
}

/// Loads a tile of `x` (digits in their low bits, a tag above), ranks the digits, and writes
/// the tile scattered by rank (blocked) to `y`, each digit's count and first rank to `counts`
/// and `prefix` (`P` per thread, blocked).
fn rank_kernel(case: &Case) -> Kernel {
    let mut k = KernelBuilder::new("rank")
        .block(case.block)
        .items_per_thread(case.items);
    let (x, [y, c, p]) = rank_params(&mut k);
    let n = case.valid.map(|_| k.scalar::<u32>("n"));
    let b = k.this_block();
    let load = if case.striped_in {
        Load::striped()
    } else {
        Load::direct()
    };
    let t = k.load_from(b, &x, load);
    let t = k.exchange(b, &t, Arrangement::Blocked, ExchangeVia::Shared);
    let r = rank_with_counts(&mut k, &t, case, n);
    let sorted = k.scatter(b, &t, &r.ranks, Scatter::blocked().permutation());
    k.store_to(b, &y, &sorted, Store::direct());
    k.store_to(b, &c, &r.counts, Store::direct().offset(0u32));
    k.store_to(b, &p, &r.prefix, Store::direct().offset(0u32));
    k.build().expect("builds")
}

/// Ranks warp-striped digits of `x` (the match rank's own arrangement: no exchange) `rounds`
/// times in a loop and stores the ranks warp-striped to `y`: nothing but the rank touches
/// shared memory, so only the rank's own barriers order a round's reads of its counters
/// before the next round zeroes them.
fn looped_rank_kernel(case: &Case) -> Kernel {
    let mut k = KernelBuilder::new("rank_loop")
        .block(case.block)
        .items_per_thread(case.items);
    let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    let b = k.this_block();
    k.for_range(0u32, case.rounds, |k, _| {
        let digits = k.load_from(b, &x, Load::warp_striped());
        let ranks = if case.by_key {
            let keys = k.map(&digits, |v| v << 8u32);
            k.radix_rank_by(b, &keys, |key| key >> 8u32, case.controls(None))
                .ranks
        } else {
            k.radix_rank(b, &digits, case.controls(None))
        };
        k.store_to(b, &y, &ranks, Store::warp_striped());
    });
    k.build().expect("builds")
}

/// Runs the looped rank on `dev`: each position's rank.
fn run_looped(dev: &Device, kernel: &Kernel, case: &Case) -> Result<Vec<u32>, RuntimeError> {
    let xb = dev.upload(&values(case))?;
    let mut yb = dev.alloc_zeroed::<u32>(case.tile())?;
    compiled(dev, kernel)?.launch_grid(1, (&xb, &mut yb))?;
    yb.to_vec()
}

/// The tile's values (digit in the low bits, the position above them).
fn values(case: &Case) -> Vec<u32> {
    let mut rng = Rng::new(case.seed);
    (0..case.tile())
        .map(|i| ((i as u32) << 8) | (rng.next() as u32 & ((1 << case.bits) - 1)))
        .collect()
}

/// The scattered tile, the counts and the prefixes of one run.
type Ranked = (Vec<u32>, Vec<u32>, Vec<u32>);

/// Runs one case on `dev`: the scattered tile, the counts and the prefixes.
fn run_case(dev: &Device, kernel: &Kernel, case: &Case) -> Result<Ranked, RuntimeError> {
    let xs = values(case);
    let xb = dev.upload(&xs)?;
    let mut yb = dev.alloc_zeroed::<u32>(case.tile())?;
    let slots = case.per() * case.block as usize;
    let mut cb = dev.alloc_zeroed::<u32>(slots)?;
    let mut pb = dev.alloc_zeroed::<u32>(slots)?;
    let f = compiled(dev, kernel)?;
    match case.valid {
        Some(n) => f.launch_grid(1, (&xb, &mut yb, &mut cb, &mut pb, n))?,
        None => f.launch_grid(1, (&xb, &mut yb, &mut cb, &mut pb))?,
    }
    Ok((yb.to_vec()?, cb.to_vec()?, pb.to_vec()?))
}

/// Each position's rank in the case's tile: the positions before it in a stable sort by
/// digit.
fn stable_ranks(case: &Case) -> Vec<u32> {
    let mask = (1u32 << case.bits) - 1;
    let xs = values(case);
    let digit = |i: usize| xs[i] & mask;
    (0..xs.len())
        .map(|p| {
            (0..xs.len())
                .filter(|&q| (digit(q), q) < (digit(p), p))
                .count() as u32
        })
        .collect()
}

fn check(case: &Case) {
    let dev = device();
    let kernel = rank_kernel(case);
    let (ys, counts, prefix) = run_case(dev, &kernel, case).expect("runs");
    let xs = values(case);
    let mask = (1u32 << case.bits) - 1;
    let valid = case
        .valid
        .unwrap_or(case.tile() as u32)
        .min(case.tile() as u32) as usize;
    // Every algorithm ranks tile positions: the valid ones sort stably by digit, the rest
    // follow in their order.
    let mut good: Vec<usize> = (0..valid).collect();
    let rest: Vec<usize> = (valid..case.tile()).collect();
    good.sort_by_key(|&p| xs[p] & mask);
    let want: Vec<u32> = good.iter().chain(rest.iter()).map(|&p| xs[p]).collect();
    assert_eq!(ys, want, "{case:?}");
    let per = case.per();
    for d in 0..per * case.block as usize {
        let (c, first) = if d < 1 << case.bits {
            let of = |q: usize| {
                good.iter()
                    .filter(|&&p| (xs[p] & mask) as usize == q)
                    .count()
            };
            let first: usize = (0..d).map(of).sum();
            (of(d), first)
        } else {
            (0, valid)
        };
        assert_eq!(counts[d], c as u32, "count of digit {d}, {case:?}");
        assert_eq!(prefix[d], first as u32, "first rank of digit {d}, {case:?}");
    }
}

const ALGORITHMS: [RankAlgorithm; 3] = [
    RankAlgorithm::Basic,
    RankAlgorithm::Memoize,
    RankAlgorithm::Match,
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn ranks_agree_with_a_stable_cpu_sort(
        algorithm in 0usize..3,
        warps in 1u32..5,
        items in 1u32..6,
        bits in 1u32..9,
        partial in proptest::option::of(0u32..1000),
        striped_in in any::<bool>(),
        by_key in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let block = warps * 32;
        let case = Case {
            algorithm: ALGORITHMS[algorithm],
            block,
            items,
            bits,
            valid: partial.map(|v| v % (block * items + 1)),
            striped_in,
            by_key,
            rounds: 1,
            seed,
        };
        check(&case);
    }
}

#[test]
fn every_algorithm_at_every_width() {
    for algorithm in ALGORITHMS {
        for bits in [1, 4, 5, 8] {
            for (block, items, valid) in [(32, 1, None), (64, 4, Some(200)), (96, 3, Some(0))] {
                for by_key in [false, true] {
                    let case = Case {
                        algorithm,
                        block,
                        items,
                        bits,
                        valid,
                        striped_in: false,
                        by_key,
                        rounds: 1,
                        seed: 7 + bits as u64,
                    };
                    check(&case);
                }
            }
        }
    }
}

/// The match rank matches its lanes' digits by ballots, never by `match.any.sync` (on sm_90
/// that instruction issues to the address-divergence unit, whose rate bounded the device radix
/// sort's digit pass): one ballot a digit bit and item, and one for the warp's lanes, on every
/// arch. The ranks themselves are checked by the tests above.
#[test]
fn match_rank_matches_by_ballots() {
    for bits in [1, 5, 8] {
        for by_key in [false, true] {
            let case = Case {
                algorithm: RankAlgorithm::Match,
                block: 96,
                items: 3,
                bits,
                valid: Some(200),
                striped_in: false,
                by_key,
                rounds: 1,
                seed: 3,
            };
            let kernel = rank_kernel(&case);
            for arch in Arch::ALL {
                let ptx = kernel.ptx(arch).expect("ptx");
                let what = format!("{bits}-bit match rank (by key: {by_key}) on {arch:?}");
                assert!(!ptx.contains("match.any"), "{what} uses match.any");
                let ballots = ptx.matches("vote.sync.ballot").count();
                assert_eq!(ballots, (bits * case.items + 1) as usize, "{what}: ballots");
            }
        }
    }
}

/// Every block barrier the rank records or the planner places is needed.
#[test]
fn every_barrier_is_necessary() {
    let checked = race_checker();
    for algorithm in ALGORITHMS {
        let case = Case {
            algorithm,
            block: 64,
            items: 3,
            bits: 5,
            valid: Some(150),
            striped_in: false,
            by_key: false,
            rounds: 1,
            seed: 11,
        };
        let kernel = rank_kernel(&case);
        run_case(&checked, &kernel, &case).expect("race-free");
        super::common::assert_barriers_necessary(&kernel, |k| run_case(&checked, k, &case));
        let syncs =
            super::common::assert_sync_blocks_necessary(&kernel, |k| run_case(&checked, k, &case));
        assert!(syncs > 0, "the rank records barriers");
    }
}

/// Every warp barrier of the match rank is needed, in a rank repeated in a loop with nothing
/// else touching shared memory: one before its warp zeroes its row (after the last round's
/// reads of it), one after, and one after each item but the last, ordering the counters'
/// bumps (the shuffle handing out a bump's old value orders no memory; the block barrier
/// after the last item does).
#[test]
fn every_match_rank_warp_barrier_is_necessary() {
    for by_key in [false, true] {
        match_rank_warp_barriers(by_key);
    }
}

/// [`every_match_rank_warp_barrier_is_necessary`] of a rank of digits, or of keys by a digit
/// expression.
fn match_rank_warp_barriers(by_key: bool) {
    let checked = race_checker();
    let case = Case::looped(RankAlgorithm::Match, 64, by_key, 11);
    let kernel = looped_rank_kernel(&case);
    let ranks = run_looped(&checked, &kernel, &case).expect("race-free");
    assert_eq!(ranks, stable_ranks(&case));
    let groups =
        super::common::assert_group_syncs_necessary(&kernel, |k| run_looped(&checked, k, &case));
    assert_eq!(groups, case.items as usize + 1);
}

/// Ranks blocked digits of `x` with their counts `rounds` times in a loop, storing the
/// ranks to `y` and each digit's count and first rank to `counts` and `prefix` every round:
/// nothing but the rank touches shared memory, so only the rank's own barriers order a
/// round's reads of its counters (every thread reads thread 0's column for the counts)
/// before the next round zeroes them.
fn looped_counts_kernel(case: &Case) -> Kernel {
    let mut k = KernelBuilder::new("rank_counts_loop")
        .block(case.block)
        .items_per_thread(case.items);
    let (x, [y, c, p]) = rank_params(&mut k);
    let b = k.this_block();
    k.for_range(0u32, case.rounds, |k, _| {
        let t = k.load_from(b, &x, Load::direct());
        let r = rank_with_counts(k, &t, case, None);
        k.store_to(b, &y, &r.ranks, Store::direct());
        k.store_to(b, &c, &r.counts, Store::direct().offset(0u32));
        k.store_to(b, &p, &r.prefix, Store::direct().offset(0u32));
    });
    k.build().expect("builds")
}

/// A rank with counts by the counting algorithms (basic, memoize; of digits and of keys by a
/// digit expression) repeated in a loop: race-free, right each round, and every block
/// barrier needed, the one before the counters' zeroing among them (without it the zeroing
/// raced with the last round's reads of thread 0's column for the counts; found by the
/// fuzzer).
#[test]
fn counting_ranks_with_counts_repeat_in_a_loop() {
    let checked = race_checker();
    for algorithm in [RankAlgorithm::Basic, RankAlgorithm::Memoize] {
        for by_key in [false, true] {
            let case = Case::looped(algorithm, 96, by_key, 13);
            let kernel = looped_counts_kernel(&case);
            let run = |k: &Kernel| run_case(&checked, k, &case);
            let (ranks, counts, prefix) = run(&kernel).expect("race-free");
            assert_eq!(ranks, stable_ranks(&case), "{algorithm:?} by_key={by_key}");
            let mask = (1u32 << case.bits) - 1;
            let xs = values(&case);
            let digit = |i: usize| xs[i] & mask;
            let radix = 1usize << case.bits;
            for d in 0..counts.len() {
                let (n, first) = if d < radix {
                    let n = (0..xs.len()).filter(|&q| digit(q) as usize == d).count();
                    let first = (0..xs.len()).filter(|&q| (digit(q) as usize) < d).count();
                    (n as u32, first as u32)
                } else {
                    (0, xs.len() as u32)
                };
                assert_eq!((counts[d], prefix[d]), (n, first), "digit {d}");
            }
            super::common::assert_sync_blocks_necessary(&kernel, run);
        }
    }
}

#[test]
fn typed_errors_name_the_line() {
    fn error_of(block: u32, f: impl FnOnce(&mut KernelBuilder)) -> (RadixSortProblem, u32) {
        let mut k = KernelBuilder::new("bad").block(block).items_per_thread(2);
        f(&mut k);
        match k.build() {
            Err(Error::Verify(e)) => {
                let errors = e.errors.len();
                let e = e.errors.first().expect("an error").clone();
                match e.kind {
                    VerifyErrorKind::RadixSort(p) if errors == 1 => (p, e.loc.line),
                    other => panic!("unexpected error {other:?}"),
                }
            }
            other => panic!("expected a verify error, got {:?}", other.map(|_| ())),
        }
    }
    let digits = |k: &mut KernelBuilder| {
        let x = k.input::<u32>("x");
        let b = k.this_block();
        k.load_from(b, &x, Load::direct())
    };
    let (p, line) = error_of(48, |k| {
        let d = digits(k);
        let b = k.this_block();
        k.radix_rank(b, &d, RadixRank::match_any(4));
    });
    assert_eq!(p, RadixSortProblem::WholeWarps { threads: 48 });
    assert_eq!(line, line!() - 3);
    for bits in [0, 9] {
        let (p, _) = error_of(64, |k| {
            let d = digits(k);
            let b = k.this_block();
            k.radix_rank(b, &d, RadixRank::basic(bits));
        });
        assert_eq!(p, RadixSortProblem::RadixBits { bits });
    }
    let (p, line) = error_of(64, |k| {
        let d = digits(k);
        let w = k.this_warp();
        k.radix_rank_with_counts(w, &d, RadixRank::memoize(4));
    });
    assert!(matches!(p, RadixSortProblem::Group { .. }), "{p:?}");
    assert_eq!(line, line!() - 3);
    // Counts of 256 digits over 2 threads would take 128 items a thread: asked for, they are
    // refused at the user's line (and nothing else is reported); the ranks alone build.
    let counts = RadixSortProblem::Counts {
        bits: 8,
        threads: 2,
        items: 128,
        max: 64,
    };
    let (p, line) = error_of(2, |k| {
        let d = digits(k);
        let b = k.this_block();
        k.radix_rank_with_counts(b, &d, RadixRank::basic(8));
    });
    assert_eq!((p, line), (counts, line!() - 2));
    let (p, line) = error_of(2, |k| {
        let d = digits(k);
        let b = k.this_block();
        k.radix_rank_by(b, &d, |v| v >> 1u32, RadixRank::memoize(8));
    });
    assert_eq!((p, line), (counts, line!() - 2));
    // The ranks alone of 8-bit digits over 2 threads, and counts of exactly 64 items a thread
    // (8-bit digits over 4 threads), build.
    for (block, with_counts) in [(2, false), (4, true)] {
        let mut k = KernelBuilder::new("within")
            .block(block)
            .items_per_thread(2);
        let d = digits(&mut k);
        let b = k.this_block();
        if with_counts {
            k.radix_rank_with_counts(b, &d, RadixRank::basic(8));
        } else {
            k.radix_rank(b, &d, RadixRank::basic(8));
        }
        if let Err(e) = k.build() {
            panic!("block {block}, counts {with_counts}: {e}");
        }
    }
}

//! Block histograms (atomic and sort) against a CPU count, over random sample and counter
//! dtypes, bin counts, items per thread, partial tiles and block sizes (the atomic algorithm's
//! not multiples of 32), on the simulator with every checker on; every barrier the histogram
//! records shown necessary by the race checker; and the verifier's errors for controls that
//! do not fit, naming the user's line.

use super::common::{Batch, Rng, assert_same, device, race_checker};
use coopgraph::ir::{
    AtomicElement, DType, Element, Expr, Histogram, HistogramAlgorithm, PrimitiveProblem, index,
};
use coopgraph::runtime::{Device, DeviceElement, RuntimeError};
use coopgraph::{Kernel, KernelBuilder, Load};

/// One case: the block, the tile, the bins, the algorithm and the valid count.
#[derive(Debug, Clone, Copy)]
struct Case {
    block: u32,
    items: u32,
    bins: u32,
    algorithm: HistogramAlgorithm,
    valid: Option<u32>,
}

/// Where the kernel records its histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placement {
    /// Twice round a loop: the second histogram's zeroing follows the first one's read-back.
    Looped,
    /// Once, the kernel's first access to the counters.
    First,
    /// Once, after each of the first threads has written a counter through a view of them
    /// (the bins are zeroed by other threads).
    AfterUse,
}

/// The histogram of one tile per block, its counters copied to `y[block * bins + j]`, twice
/// round a loop.
fn kernel<S: Element, C: AtomicElement>(case: Case) -> Kernel {
    kernel_placed::<S, C>(case, Placement::Looped)
}

/// The histogram of one tile per block, its counters copied to `y[block * bins + j]`, placed
/// as `placement` says.
fn kernel_placed<S: Element, C: AtomicElement>(case: Case, placement: Placement) -> Kernel {
    let name = format!(
        "hist_{}_{}_{}_{:?}_{:?}_{:?}_{}_{placement:?}",
        case.block,
        case.items,
        case.bins,
        case.algorithm,
        S::DTYPE,
        C::DTYPE,
        case.valid.is_some()
    );
    let mut k = KernelBuilder::new(name.to_lowercase())
        .block(case.block)
        .items_per_thread(case.items);
    let (x, y) = (k.input::<S>("x"), k.output::<C>("y"));
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::direct());
    let counters = k.shared_array::<C>(case.bins + 3);
    let mut controls = match case.algorithm {
        HistogramAlgorithm::Atomic => Histogram::atomic(),
        HistogramAlgorithm::Sort => Histogram::sort(),
    };
    if let Some(n) = case.valid {
        controls = controls.valid_items(n);
    }
    let histogram = |k: &mut KernelBuilder| {
        k.histogram(b, &t, case.bins, &counters, controls.clone());
        let base = index::block_index() * case.bins;
        // Bins read back in reverse, by other threads than the ones that zero them.
        k.for_range_step(index::thread_rank(), case.bins, case.block, |k, j| {
            let bin = Expr::lit(case.bins - 1) - j;
            k.write(&y, base.clone() + bin.clone(), counters.read(bin))
        });
    };
    match placement {
        Placement::Looped => k.for_range(0u32, 2u32, |k, _| histogram(k)),
        Placement::First => histogram(&mut k),
        Placement::AfterUse => {
            let words = k.shared_view::<u32, C>(&counters);
            let (i, n) = (index::thread_rank(), words.len());
            k.if_(i.clone().lt(n), |k| {
                k.shared_write(&words, Expr::lit(n - 1) - i, 7u32)
            });
            histogram(&mut k);
        }
    }
    k.build().expect("builds")
}

/// The CPU's counts of each block's tile.
fn expected<S: Element, C: Element>(case: Case, blocks: usize, xs: &[S]) -> Vec<C> {
    let tile = (case.block * case.items) as usize;
    let n = case.valid.map_or(tile, |v| (v as usize).min(tile));
    let mut out = vec![0u64; blocks * case.bins as usize];
    for blk in 0..blocks {
        for &s in &xs[blk * tile..blk * tile + n] {
            let v = s.to_bits();
            if v < u64::from(case.bins) {
                out[blk * case.bins as usize + v as usize] += 1;
            }
        }
    }
    out.into_iter().map(C::from_bits).collect()
}

fn run<S: DeviceElement, C: DeviceElement + AtomicElement>(
    dev: &Device,
    kernel: &Kernel,
    blocks: usize,
    case: Case,
    xs: &[S],
) -> Result<Vec<C>, RuntimeError> {
    let xb = dev.upload(xs)?;
    let mut yb = dev.alloc_zeroed::<C>(blocks * case.bins as usize)?;
    dev.compile(kernel)?
        .launch_grid(blocks as u32, (&xb, &mut yb))?;
    yb.to_vec()
}

/// Samples below `spread` (some of them at or past the bins).
fn samples<S: Element>(rng: &mut Rng, n: usize, spread: u64) -> Vec<S> {
    (0..n)
        .map(|_| S::from_bits(rng.next() % spread.max(1)))
        .collect()
}

fn random_case<S: DeviceElement, C: DeviceElement + AtomicElement>(
    batch: &mut Batch,
    rng: &mut Rng,
) {
    let bits = S::DTYPE.bytes() * 8;
    let max_bins = if bits >= 13 { 4096 } else { 1u32 << bits };
    let bins = 1 + (rng.next() % u64::from(max_bins)) as u32;
    let algorithm = if rng.next().is_multiple_of(2) {
        HistogramAlgorithm::Atomic
    } else {
        HistogramAlgorithm::Sort
    };
    let block = match algorithm {
        HistogramAlgorithm::Atomic => 1 + (rng.next() % 200) as u32,
        HistogramAlgorithm::Sort => 32 * (1 + (rng.next() % 6) as u32),
    };
    let items = 1 + (rng.next() % 8) as u32;
    let tile = block * items;
    let valid = (rng.next().is_multiple_of(3)).then(|| (rng.next() % u64::from(tile + 1)) as u32);
    let case = Case {
        block,
        items,
        bins,
        algorithm,
        valid,
    };
    let blocks = 2;
    // Few distinct samples now and then, so runs span threads.
    let spread = match rng.next() % 3 {
        0 => 4,
        _ => u64::from(bins) + u64::from(bins / 8) + 1,
    };
    let xs = samples::<S>(rng, blocks * tile as usize, spread);
    let kernel = kernel::<S, C>(case);
    let got = run::<S, C>(device(), &kernel, blocks, case, &xs).expect("runs");
    let want = expected::<S, C>(case, blocks, &xs);
    assert_same(
        &got,
        &want,
        &format!("{case:?} {:?} {:?}", S::DTYPE, C::DTYPE),
    );
    batch.add(&kernel);
}

#[test]
fn histograms_match_the_cpu() {
    let mut batch = Batch::default();
    let mut rng = Rng::new(0x4157);
    for _ in 0..5 {
        random_case::<u8, u32>(&mut batch, &mut rng);
        random_case::<u8, u64>(&mut batch, &mut rng);
        random_case::<u16, u32>(&mut batch, &mut rng);
        random_case::<u32, u32>(&mut batch, &mut rng);
        random_case::<u32, u64>(&mut batch, &mut rng);
    }
    batch.finish();
}

/// CUB's configurations: u8 samples, 256 bins, 128 and 256 threads, 4 to 16 items.
#[test]
fn byte_histograms_of_cub_shapes_match_the_cpu() {
    let mut batch = Batch::default();
    let mut rng = Rng::new(11);
    for (block, items) in [(128u32, 4u32), (256, 16)] {
        for algorithm in [HistogramAlgorithm::Atomic, HistogramAlgorithm::Sort] {
            let case = Case {
                block,
                items,
                bins: 256,
                algorithm,
                valid: None,
            };
            let xs = samples::<u8>(&mut rng, (block * items) as usize, 256);
            let kernel = kernel::<u8, u32>(case);
            let got = run::<u8, u32>(device(), &kernel, 1, case, &xs).expect("runs");
            assert_same(
                &got,
                &expected::<u8, u32>(case, 1, &xs),
                &format!("{case:?}"),
            );
            batch.add(&kernel);
        }
    }
}

/// Every block barrier a histogram records (and its sort's) is needed: without it the race
/// checker reports a race. The atomic form's leading barrier (before the bins are zeroed)
/// stands where the counters were touched before, in a loop or by an earlier write through a
/// view, and only there: the kernel's first access needs two.
#[test]
fn every_barrier_is_necessary() {
    let checked = race_checker();
    for algorithm in [HistogramAlgorithm::Atomic, HistogramAlgorithm::Sort] {
        for placement in [Placement::Looped, Placement::First, Placement::AfterUse] {
            let case = Case {
                block: 64,
                items: 3,
                bins: 5,
                algorithm,
                valid: Some(150),
            };
            // Three values in long runs across threads, and bins no thread zeroes for itself;
            // every fifth sample past the bins with a high nibble of its own, so that the sort
            // form's second 4-bit pass moves keys between threads as its first does (and each
            // pass's barriers, where the passes are written out, are shown necessary).
            let xs: Vec<u8> = (0..192u32)
                .map(|i| match i % 5 {
                    4 => (0x10 * (1 + i % 7)) as u8 | 2,
                    _ => ((i / 50 + 1) % 3) as u8 + 2,
                })
                .collect();
            let kernel = kernel_placed::<u8, u32>(case, placement);
            let got = run::<u8, u32>(&checked, &kernel, 1, case, &xs).expect("race-free");
            assert_same(
                &got,
                &expected::<u8, u32>(case, 1, &xs),
                &format!("{case:?}"),
            );
            super::common::assert_barriers_necessary(&kernel, |k| {
                run::<u8, u32>(&checked, k, 1, case, &xs)
            });
            let i = super::common::assert_sync_blocks_necessary(&kernel, |k| {
                run::<u8, u32>(&checked, k, 1, case, &xs)
            });
            let what = format!("{algorithm:?} {placement:?}: {i} block barriers");
            match (algorithm, placement) {
                (HistogramAlgorithm::Atomic, Placement::First) => assert_eq!(i, 2, "{what}"),
                (HistogramAlgorithm::Atomic, _) => assert_eq!(i, 3, "{what}"),
                _ => assert!(i >= 2, "{what}"),
            }
        }
    }
}

/// The verifier's problem of a histogram that cannot build, checked to name its line.
fn problem<S: Element, C: AtomicElement>(
    block: u32,
    group_of_warps: bool,
    bins: u32,
    len: u32,
) -> PrimitiveProblem {
    let mut k = KernelBuilder::new("bad").block(block).items_per_thread(2);
    let x = k.input::<S>("x");
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::direct());
    let counters = k.shared_array::<C>(len);
    let g = if group_of_warps {
        k.this_warp().group_by(16)
    } else {
        b
    };
    k.histogram(g, &t, bins, &counters, Histogram::atomic());
    let line = line!() - 1;
    super::common::primitive_problem(k, line)
}

#[test]
fn controls_that_do_not_fit_are_reported_at_the_users_line() {
    use PrimitiveProblem as P;
    let p = problem::<u8, u32>(64, false, 257, 300);
    assert_eq!(
        p,
        P::Bins {
            bins: 257,
            sample_bits: 8
        }
    );
    let p = problem::<u16, u32>(64, false, 0, 8);
    assert_eq!(
        p,
        P::Bins {
            bins: 0,
            sample_bits: 16
        }
    );
    let p = problem::<u8, u32>(64, false, 100, 99);
    assert_eq!(p, P::CounterLength { bins: 100, len: 99 });
    let p = problem::<i32, u32>(64, false, 8, 8);
    assert_eq!(p, P::SampleDtype { dtype: DType::I32 });
    let p = problem::<u8, i32>(64, false, 8, 8);
    assert_eq!(p, P::CounterDtype { dtype: DType::I32 });
    let p = problem::<u8, u32>(64, true, 8, 8);
    assert!(matches!(p, P::Group { .. }));
}

//! The device-wide histogram against CPU references: every sample type, even and range
//! binning, bins from 1 to past what a block keeps in shared memory, lengths around the
//! tile, samples outside the levels and NaN, blocks in shuffled orders, and the refusals.

use crate::common::{Rng, assert_sync_blocks_necessary, device, race_checker};
use coopgraph::Error;
use coopgraph::algorithms::{
    self, AlgorithmError, DeviceHistogram, HistogramBinning, HistogramSample, SHARED_BINS, Tuning,
};
use coopgraph::ir::Element;
use coopgraph::runtime::{Device, SimOptions};
use coopgraph::sim::BlockOrder;

const SMALL: Tuning = Tuning {
    threads: 64,
    items: 4,
};

/// Bins counts: one, a few, a byte's worth, and past [`SHARED_BINS`] (global atomics).
const BINS: [u32; 4] = [1, 7, 256, 5000];

fn sizes() -> [usize; 6] {
    let tile = SMALL.tile_items() as usize;
    [0, 1, tile - 1, tile, 3 * tile + 5, 5 * tile + 37]
}

/// A sample type with what the tests need: the host's binning between even levels (the
/// formula of [`HistogramSample`], computed independently), and samples and levels to try.
trait Sample: HistogramSample + std::fmt::Debug {
    /// The even levels of a test: some samples fall outside them.
    fn even_levels() -> (Self::Level, Self::Level);
    /// The bin of `x` between even levels, if counted.
    fn host_bin(x: Self, lower: Self::Level, upper: Self::Level, bins: u32) -> Option<u32>;
    /// A random sample (floats: NaN and infinities among them).
    fn sample(rng: &mut Rng) -> Self;
    /// `bins + 1` random ascending levels (duplicates among them).
    fn levels(rng: &mut Rng, bins: u32) -> Vec<Self::Level>;
    /// The level of a sample, on the host.
    fn as_level(x: Self) -> Self::Level;
}

macro_rules! int_sample {
    ($($t:ty => $l:ty, $lo:expr, $hi:expr);*) => {$(
        impl Sample for $t {
            fn even_levels() -> ($l, $l) {
                ($lo, $hi)
            }
            fn host_bin(x: $t, lower: $l, upper: $l, bins: u32) -> Option<u32> {
                let v = <$l>::from(x);
                if v < lower || v >= upper {
                    return None;
                }
                let offset = (i128::from(v) - i128::from(lower)) as u128;
                let range = (i128::from(upper) - i128::from(lower)) as u128;
                Some((offset * u128::from(bins) / range) as u32)
            }
            fn sample(rng: &mut Rng) -> $t {
                rng.value()
            }
            fn levels(rng: &mut Rng, bins: u32) -> Vec<$l> {
                let mut v: Vec<$l> = (0..=bins)
                    .map(|_| <$l>::from(rng.value::<$t>()))
                    .collect();
                v.sort();
                v
            }
            fn as_level(x: $t) -> $l {
                <$l>::from(x)
            }
        }
    )*};
}
int_sample!(
    u8 => u32, 3, 256;
    u16 => u32, 1000, 60_001;
    i32 => i64, -1_500_000_000, 1_900_000_001;
    u32 => u64, 12_345, 1 << 32
);

macro_rules! float_sample {
    ($($t:ty),*) => {$(
        impl Sample for $t {
            fn even_levels() -> ($t, $t) {
                (-700.0, 650.5)
            }
            fn host_bin(x: $t, lower: $t, upper: $t, bins: u32) -> Option<u32> {
                if !(x >= lower && x < upper) {
                    return None;
                }
                let scale = bins as $t / (upper - lower);
                Some((((x - lower) * scale) as u32).min(bins - 1))
            }
            fn sample(rng: &mut Rng) -> $t {
                match rng.next() % 50 {
                    0 => <$t>::NAN,
                    1 => <$t>::INFINITY,
                    2 => <$t>::NEG_INFINITY,
                    3 => 650.5,
                    4 => -700.0,
                    _ => rng.value(),
                }
            }
            fn levels(rng: &mut Rng, bins: u32) -> Vec<$t> {
                let mut v: Vec<$t> = (0..=bins).map(|_| rng.value::<$t>().round()).collect();
                v.sort_by(|a, b| a.total_cmp(b));
                v
            }
            fn as_level(x: $t) -> $t {
                x
            }
        }
    )*};
}
float_sample!(f32, f64);

/// The host's histogram of `xs` into `bins`, by `bin_of`.
fn reference<T: Copy>(xs: &[T], bins: u32, bin_of: impl Fn(T) -> Option<u32>) -> Vec<u32> {
    let mut counts = vec![0u32; bins as usize];
    for &x in xs {
        if let Some(b) = bin_of(x) {
            counts[b as usize] += 1;
        }
    }
    counts
}

/// The last level at or below `v`, if `v` lies in `[levels[0], levels[bins])`.
fn range_bin<L: PartialOrd + Copy>(v: L, levels: &[L]) -> Option<u32> {
    let bins = levels.len() - 1;
    if !(levels[0] <= v && v < levels[bins]) {
        return None;
    }
    Some((levels.partition_point(|&l| l <= v) - 1) as u32)
}

/// Even and range histograms of `T`, every bins count and size, on `dev`.
fn check<T: Sample>(dev: &Device, seed: u64) {
    let mut rng = Rng::new(seed);
    let (lower, upper) = T::even_levels();
    for bins in BINS {
        let even = DeviceHistogram::<T>::even(bins)
            .tuning(SMALL)
            .prepare(dev)
            .expect("prepares");
        let range = DeviceHistogram::<T>::range(bins)
            .tuning(SMALL)
            .prepare(dev)
            .expect("prepares");
        let levels = T::levels(&mut rng, bins);
        let lb = dev.upload(&levels).expect("upload");
        for n in sizes() {
            let xs: Vec<T> = (0..n).map(|_| T::sample(&mut rng)).collect();
            let x = dev.upload(&xs).expect("upload");
            // Counts start dirty: the call overwrites them.
            let mut counts = dev.upload(&vec![7u32; bins as usize]).expect("upload");
            even.run_even(&x, &mut counts, lower, upper).expect("runs");
            let want = reference(&xs, bins, |v| T::host_bin(v, lower, upper, bins));
            let what = format!("even {} bins={bins} n={n}", T::DTYPE);
            assert_eq!(counts.to_vec().expect("read"), want, "{what}");
            range.run_range(&x, &lb, &mut counts).expect("runs");
            let want = reference(&xs, bins, |v| range_bin(T::as_level(v), &levels));
            let what = format!("range {} bins={bins} n={n}", T::DTYPE);
            assert_eq!(counts.to_vec().expect("read"), want, "{what}");
        }
    }
}

#[test]
fn even_and_range_of_u8_u16() {
    check::<u8>(device(), 1);
    check::<u16>(device(), 2);
}

#[test]
fn even_and_range_of_i32_u32() {
    check::<i32>(device(), 3);
    check::<u32>(device(), 4);
}

#[test]
fn even_and_range_of_floats() {
    check::<f32>(device(), 5);
    check::<f64>(device(), 6);
}

/// Blocks interleaved in shuffled orders, adding to the same counts by global atomics (and,
/// past [`SHARED_BINS`], every sample by one).
#[test]
fn blocks_in_any_order() {
    for seed in [11, 12] {
        let dev = Device::sim_with(SimOptions {
            block_order: BlockOrder::InterleavedShuffled { seed },
            ..SimOptions::default()
        });
        let mut rng = Rng::new(seed);
        for bins in [256, SHARED_BINS + 1] {
            let h = DeviceHistogram::<f32>::even(bins)
                .tuning(SMALL)
                .prepare(&dev)
                .expect("prepares");
            let xs: Vec<f32> = (0..SMALL.tile_items() as usize * 9 + 3)
                .map(|_| f32::sample(&mut rng))
                .collect();
            let x = dev.upload(&xs).expect("upload");
            let mut counts = dev.alloc_zeroed::<u32>(bins as usize).expect("alloc");
            h.run_even(&x, &mut counts, -700.0, 650.5).expect("runs");
            let want = reference(&xs, bins, |v| f32::host_bin(v, -700.0, 650.5, bins));
            assert_eq!(counts.to_vec().expect("read"), want, "{seed} bins={bins}");
        }
    }
}

/// The convenience functions at the default tuning, and a fused map.
#[test]
fn convenience_functions_and_a_map() {
    let dev = device();
    let mut rng = Rng::new(21);
    let xs: Vec<u8> = rng.vec(10_000);
    let x = dev.upload(&xs).expect("upload");
    let mut counts = dev.alloc_zeroed::<u32>(256).expect("alloc");
    algorithms::histogram_even(dev, &x, &mut counts, 0, 256).expect("runs");
    let want = reference(&xs, 256, |v| Some(u32::from(v)));
    assert_eq!(counts.to_vec().expect("read"), want);

    let ys: Vec<i32> = (0..7000)
        .map(|_| (rng.next() % 2001) as i32 - 1000)
        .collect();
    let y = dev.upload(&ys).expect("upload");
    let levels = [-1000i64, -10, 0, 1, 500, 1001];
    let lb = dev.upload(&levels).expect("upload");
    let mut counts = dev.alloc_zeroed::<u32>(5).expect("alloc");
    algorithms::histogram_range(dev, &y, &lb, &mut counts).expect("runs");
    let want = reference(&ys, 5, |v| range_bin(i64::from(v), &levels));
    assert_eq!(counts.to_vec().expect("read"), want);

    // |y| in 10 even bins over [0, 1000).
    let h = DeviceHistogram::<i32>::even(10)
        .map_input(|v| v.abs())
        .prepare(dev)
        .expect("prepares");
    let mut counts = dev.alloc_zeroed::<u32>(10).expect("alloc");
    h.run_even(&y, &mut counts, 0, 1000).expect("runs");
    let want = reference(&ys, 10, |v| i32::host_bin(v.abs(), 0, 1000, 10));
    assert_eq!(counts.to_vec().expect("read"), want);

    // No bins: nothing to count.
    let mut none = dev.alloc_zeroed::<u32>(0).expect("alloc");
    algorithms::histogram_even(dev, &x, &mut none, 0, 256).expect("runs");
}

fn algorithm_error(e: Error) -> AlgorithmError {
    match e {
        Error::Algorithm(a) => a,
        other => panic!("expected an algorithm error, got {other}"),
    }
}

#[test]
fn refusals() {
    let dev = device();
    let x = dev.upload(&[1.0f32, 2.0]).expect("upload");
    let mut counts = dev.alloc_zeroed::<u32>(4).expect("alloc");
    let even = DeviceHistogram::<f32>::even(4)
        .prepare(dev)
        .expect("prepares");
    let e = even.run_even(&x, &mut counts, 1.0, 1.0).unwrap_err();
    assert_eq!(algorithm_error(e), AlgorithmError::LevelsNotIncreasing);
    let e = even.run_even(&x, &mut counts, f32::NAN, 1.0).unwrap_err();
    assert_eq!(algorithm_error(e), AlgorithmError::LevelsNotIncreasing);
    let mut short = dev.alloc_zeroed::<u32>(3).expect("alloc");
    let e = even.run_even(&x, &mut short, 0.0, 1.0).unwrap_err();
    let want = AlgorithmError::CountsLength { bins: 4, given: 3 };
    assert_eq!(algorithm_error(e), want);
    let levels = dev.upload(&[0.0f32, 1.0, 2.0, 3.0, 4.0]).expect("upload");
    let e = even.run_range(&x, &levels, &mut counts).unwrap_err();
    let want = AlgorithmError::Binning {
        prepared: HistogramBinning::Even,
        binning: HistogramBinning::Range,
    };
    assert_eq!(algorithm_error(e), want);
    let short_levels = dev.upload(&[0.0f32, 1.0]).expect("upload");
    let e = algorithms::histogram_range(dev, &x, &short_levels, &mut counts).unwrap_err();
    let want = AlgorithmError::LevelCount { want: 5, given: 2 };
    assert_eq!(algorithm_error(e), want);
    let e = DeviceHistogram::<f32>::even(0).kernels().unwrap_err();
    assert_eq!(algorithm_error(e), AlgorithmError::NoBins);
    // (upper - lower) * bins past 64 bits.
    let ints = dev.upload(&[5i32]).expect("upload");
    let e = algorithms::histogram_even(dev, &ints, &mut counts, i64::MIN / 2, i64::MAX / 2)
        .unwrap_err();
    assert_eq!(
        algorithm_error(e),
        AlgorithmError::BinningOverflow { bins: 4 }
    );
}

/// Both block barriers of the privatized kernel are needed: between zeroing the shared bins
/// and the first atomic on them, and between the last atomic and reading them back.
#[test]
fn both_barriers_are_needed() {
    fn run_for<T: HistogramSample<Level = L>, L: Element + for<'a> coopgraph::runtime::Arg<'a>>(
        xs: &[T],
        lower: L,
        upper: L,
        bins: u32,
    ) {
        let [_, kernel] = DeviceHistogram::<T>::even(bins)
            .tuning(SMALL)
            .kernels()
            .expect("builds");
        let dev = race_checker();
        let run = |k: &coopgraph::Kernel| -> Result<Vec<u32>, coopgraph::runtime::RuntimeError> {
            let f = dev.compile(k)?;
            let x = dev.upload(xs)?;
            let mut counts = dev.alloc_zeroed::<u32>(bins as usize)?;
            f.launch_grid(1, (&x, &mut counts, xs.len() as u32, lower, upper))?;
            counts.to_vec()
        };
        let got = run(&kernel).expect("runs");
        assert_eq!(got.iter().sum::<u32>() as usize, xs.len());
        assert_eq!(kernel.sync_blocks(), 2, "{}", kernel.name());
        assert_eq!(assert_sync_blocks_necessary(&kernel, run), 2);
    }
    let mut rng = Rng::new(31);
    let bytes: Vec<u8> = rng.vec(600);
    run_for::<u8, u32>(&bytes, 0, 256, 256);
    let floats: Vec<f32> = (0..600).map(|i| (i % 97) as f32).collect();
    run_for::<f32, f32>(&floats, 0.0, 97.0, 97);
}

/// Counters kept one copy per lane (at most [`algorithms::LANE_COPIES_BINS`] of them) and one
/// copy past that, at blocks of one warp, of three, and of 1024 threads (whose counters'
/// sum takes one thread a counter, some threads none): the counts agree with the host's on
/// tiles full and partial.
#[test]
fn lane_copies_at_any_block() {
    let dev = device();
    let mut rng = Rng::new(41);
    for tuning in [
        Tuning {
            threads: 32,
            items: 4,
        },
        Tuning {
            threads: 96,
            items: 32,
        },
        Tuning {
            threads: 1024,
            items: 1,
        },
    ] {
        let tile = tuning.tile_items() as usize;
        for bins in [
            7,
            algorithms::LANE_COPIES_BINS,
            algorithms::LANE_COPIES_BINS + 1,
        ] {
            let even = DeviceHistogram::<i32>::even(bins)
                .tuning(tuning)
                .prepare(dev)
                .expect("prepares");
            let raw = DeviceHistogram::<u8>::even(bins)
                .tuning(tuning)
                .prepare(dev)
                .expect("prepares");
            for n in [tile - 1, 4 * tile + 3] {
                let xs: Vec<i32> = (0..n).map(|_| (rng.next() % 1100) as i32 - 50).collect();
                let x = dev.upload(&xs).expect("upload");
                let mut counts = dev.upload(&vec![3u32; bins as usize]).expect("upload");
                even.run_even(&x, &mut counts, 0, 1000).expect("runs");
                let want = reference(&xs, bins, |v| i32::host_bin(v, 0, 1000, bins));
                let what = format!("i32 {tuning:?} bins={bins} n={n}");
                assert_eq!(counts.to_vec().expect("read"), want, "{what}");
                let bytes: Vec<u8> = rng.vec(n);
                let x = dev.upload(&bytes).expect("upload");
                raw.run_even(&x, &mut counts, 0, 256).expect("runs");
                let want = reference(&bytes, bins, |v| u8::host_bin(v, 0, 256, bins));
                let what = format!("u8 {tuning:?} bins={bins} n={n}");
                assert_eq!(counts.to_vec().expect("read"), want, "{what}");
            }
        }
    }
}

//! The device-wide reduction against CPU references: every element type, sum / min / max /
//! a non-commutative operator, a fused map, partial tiles, and bit-for-bit repeatability.

use crate::common::{Rng, device, same};
use coopgraph::algorithms::{DeviceReduce, Op, PreparedReduce, ScanElement, Tuning, Workspace};
use coopgraph::ir::Expr;
use coopgraph::runtime::Device;

const SMALL: Tuning = Tuning {
    threads: 64,
    items: 3,
};

fn sizes() -> [usize; 6] {
    let tile = SMALL.tile_items() as usize;
    [1, 2, tile - 1, tile, 3 * tile + 1, 1500 * tile / 100]
}

fn check<T: ScanElement>(op: Op<T>, f: impl Fn(T, T) -> T, seed: u64) {
    let dev = device();
    let mut rng = Rng::new(seed);
    let r = DeviceReduce::new(op)
        .tuning(SMALL)
        .prepare(dev)
        .expect("prepares");
    let mut ws = Workspace::new(dev).expect("ws");
    against_the_cpu(dev, &r, &mut ws, &sizes(), 100, &f, &mut rng);
    let empty = dev.alloc_zeroed::<T>(0).expect("alloc");
    assert_eq!(r.run(&empty, &mut ws).expect("runs"), None);
}

/// Runs `r` (on `dev`) over random inputs of each length in `sizes` (values in `-spread ..= spread`) and
/// checks each result against the CPU's fold by `f`, in element order.
fn against_the_cpu<T: ScanElement>(
    dev: &Device,
    r: &PreparedReduce<T>,
    ws: &mut Workspace,
    sizes: &[usize],
    spread: i64,
    f: impl Fn(T, T) -> T,
    rng: &mut Rng,
) {
    for &n in sizes {
        let xs: Vec<T> = (0..n)
            .map(|_| T::cast_from_i64((rng.next() % (2 * spread as u64 + 1)) as i64 - spread))
            .collect();
        let want = xs.iter().copied().reduce(&f).expect("not empty");
        let x = dev.upload(&xs).expect("upload");
        let got = r.run(&x, ws).expect("runs").expect("not empty");
        assert!(
            same(got, want),
            "{} (tiles of {}) n={n}: {got:?}, expected {want:?}",
            T::DTYPE,
            r.tile_items()
        );
    }
}

#[test]
fn every_type_and_operator() {
    check::<u32>(Op::sum(), u32::wrapping_add, 1);
    check::<i32>(Op::max(), i32::max, 2);
    check::<f32>(Op::sum(), |a, b| a + b, 3);
    check::<u64>(Op::min(), u64::min, 4);
    check::<i64>(Op::sum(), i64::wrapping_add, 5);
    check::<f64>(Op::max(), f64::max, 6);
    // Not commutative: the first element of the last pair seen... "a - b"-free: the last
    // non-zero element in order.
    check::<i32>(
        Op::custom(|a, b: Expr<i32>| b.ne(0).select(b, a)),
        |a, b| if b != 0 { b } else { a },
        7,
    );
}

/// A fused map, and float sums of values with rounding: the same bits on every run.
#[test]
fn fused_map_and_repeatable_floats() {
    let dev = device();
    let mut rng = Rng::new(9);
    let xs: Vec<f32> = rng.vec(20_000);
    let r = DeviceReduce::new(Op::sum())
        .map_input(|v: Expr<f32>| v.clone() * v)
        .prepare(dev)
        .expect("prepares");
    let mut ws = Workspace::new(dev).expect("ws");
    let x = dev.upload(&xs).expect("upload");
    let first = r.run(&x, &mut ws).expect("runs").expect("not empty");
    for _ in 0..2 {
        let again = r.run(&x, &mut ws).expect("runs").expect("not empty");
        assert_eq!(first.to_bits(), again.to_bits(), "bit-for-bit repeatable");
    }
    let want: f64 = xs.iter().map(|&v| f64::from(v) * f64::from(v)).sum();
    let rel = ((f64::from(first) - want) / want).abs();
    assert!(rel < 1e-4, "sum of squares {first}, expected about {want}");
}

/// Sums, and the minimum and maximum of integers, fold in any order (each thread its share of
/// the block's tiles in 16-byte runs, one block reduction at the end); custom operators and
/// float minima keep the ordered fold. Checked at vector widths 4, 2 and 1 (items that 4 or 2
/// do not divide), at partial tiles, and past 4 blocks per SM of tiles, where each block
/// folds several.
#[test]
fn any_order_operators_at_every_vector_width() {
    fn case<T: ScanElement>(op: Op<T>, f: impl Fn(T, T) -> T, tuning: Tuning, seed: u64) {
        let dev = device();
        let r = DeviceReduce::new(op).tuning(tuning);
        let tiles = r.kernels().expect("builds")[0].name().to_string();
        assert!(tiles.contains("any_order"), "{tiles}");
        let r = r.prepare(dev).expect("prepares");
        let mut ws = Workspace::new(dev).expect("ws");
        let mut rng = Rng::new(seed);
        let tile = tuning.tile_items() as usize;
        // 4 blocks per SM take at most one tile each below the last size.
        let blocks = 4 * dev.limits().sm_count as usize;
        let sizes = [
            1,
            tile - 1,
            tile,
            tile + 1,
            2 * tile + 3,
            (2 * blocks + 3) * tile + 5,
        ];
        against_the_cpu(dev, &r, &mut ws, &sizes, 1000, &f, &mut rng);
    }
    let at = |threads, items| Tuning { threads, items };
    case::<u32>(Op::sum(), u32::wrapping_add, at(32, 4), 11);
    case::<i32>(Op::max(), i32::max, at(64, 8), 12);
    case::<f32>(Op::sum(), |a, b| a + b, at(32, 6), 13);
    case::<u64>(Op::min(), u64::min, at(32, 2), 14);
    case::<i64>(Op::sum(), i64::wrapping_add, at(32, 3), 15);
    case::<f64>(Op::sum(), |a, b| a + b, at(64, 5), 16);
    for ordered in [
        DeviceReduce::new(Op::<f32>::min()).kernels(),
        DeviceReduce::new(Op::custom(|a, b: Expr<u32>| a + b)).kernels(),
    ] {
        let name = ordered.expect("builds")[0].name().to_string();
        assert!(!name.contains("any_order"), "{name}");
    }
}

/// The any-order sum starts from `-0.0`, the identity of float addition: a sum of negative
/// zeros is `-0.0`, as the ordered fold gives. A fused map is not applied to the positions
/// past the input that fill a partial tile.
#[test]
fn any_order_sums_keep_negative_zero_and_skip_the_tile_s_padding() {
    let dev = device();
    let mut ws = Workspace::new(dev).expect("ws");
    let tuning = Tuning {
        threads: 32,
        items: 4,
    };
    let r = DeviceReduce::new(Op::<f32>::sum())
        .tuning(tuning)
        .prepare(dev)
        .expect("prepares");
    for n in [1, 127, 129] {
        let x = dev.upload(&vec![-0.0f32; n]).expect("upload");
        let got = r.run(&x, &mut ws).expect("runs").expect("not empty");
        assert_eq!(got.to_bits(), (-0.0f32).to_bits(), "n={n}: {got}");
    }
    let plus_one = DeviceReduce::new(Op::<u64>::sum())
        .map_input(|v| v + 1u64)
        .tuning(tuning)
        .prepare(dev)
        .expect("prepares");
    for n in [1usize, 7, 127, 128, 129, 1000] {
        let xs: Vec<u64> = (0..n as u64).collect();
        let want = xs.iter().map(|v| v + 1).sum::<u64>();
        let x = dev.upload(&xs).expect("upload");
        let got = plus_one.run(&x, &mut ws).expect("runs");
        assert_eq!(got, Some(want), "n={n}");
    }
}

/// One launch: every block writes its partial and takes a ticket; the last folds the partials.
/// With the blocks interleaved in every order (the race checker watching global memory between
/// them), the result is the CPU's, and a float sum has the same bits whichever block finished
/// last. The same workspace serves every call, so each call's tickets start where the last
/// one's ended.
#[test]
fn the_last_block_folds_the_partials_in_any_block_order() {
    let tuning = Tuning {
        threads: 32,
        items: 3,
    };
    let tile = tuning.tile_items() as usize;
    let blocks = 4 * device().limits().sm_count as usize;
    // One block; a few; every block one tile; every block several, the last partial.
    let sizes = [
        tile - 1,
        5 * tile + 1,
        blocks * tile,
        (3 * blocks + 2) * tile + 7,
    ];
    let mut rng = Rng::new(21);
    let floats: Vec<Vec<f32>> = sizes.iter().map(|&n| rng.vec(n)).collect();
    let mut bits: Option<Vec<u32>> = None;
    for order in std::iter::once(None).chain(crate::common::BLOCK_ORDERS.map(Some)) {
        let dev = match order {
            Some(order) => &crate::common::sim_in(order),
            None => device(),
        };
        let mut ws = Workspace::new(dev).expect("ws");
        let sum = DeviceReduce::new(Op::<u32>::sum())
            .tuning(tuning)
            .prepare(dev)
            .expect("prepares");
        // Not commutative: the last non-zero element, in order.
        let last = DeviceReduce::new(Op::custom(|a, b: Expr<i32>| b.ne(0).select(b, a)))
            .tuning(tuning)
            .prepare(dev)
            .expect("prepares");
        let mut rng = Rng::new(22);
        against_the_cpu(
            dev,
            &sum,
            &mut ws,
            &sizes,
            1000,
            u32::wrapping_add,
            &mut rng,
        );
        let nonzero = |a: i32, b: i32| if b != 0 { b } else { a };
        against_the_cpu(dev, &last, &mut ws, &sizes, 3, nonzero, &mut rng);
        let fsum = DeviceReduce::new(Op::<f32>::sum())
            .tuning(tuning)
            .prepare(dev)
            .expect("prepares");
        let got: Vec<u32> = floats
            .iter()
            .map(|xs| {
                let x = dev.upload(xs).expect("upload");
                let s = fsum.run(&x, &mut ws).expect("runs").expect("not empty");
                s.to_bits()
            })
            .collect();
        match &bits {
            None => bits = Some(got),
            Some(first) => assert_eq!(&got, first, "{order:?}: the float sums' bits"),
        }
    }
}

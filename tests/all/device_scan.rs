//! The device-wide scan (single pass, decoupled look-back) against CPU references: every
//! element type, sum / min / max / non-commutative operators, both forms, initial values,
//! fused maps, partial tiles, and blocks run interleaved in linear, reversed and shuffled
//! order on the simulator with every checker on.

use crate::common::{BLOCK_ORDERS, Rng, assert_same, device, sim_in};
use coopgraph::algorithms::{
    AlgorithmError, DeviceScan, Op, PreparedScan, ScanElement, Tuning, Workspace,
};
use coopgraph::ir::Expr;
use coopgraph::runtime::{Device, SimOptions};
use coopgraph::sim::BlockOrder;
use coopgraph::{Error, ir::Element};

/// A small tuning (tiles of 192), so that many tiles stay cheap on the simulator.
const SMALL: Tuning = Tuning {
    threads: 64,
    items: 3,
};

/// Sizes around the tile: empty, one element, a tile less one, a tile, many tiles and a
/// partial one.
fn sizes(tile: usize) -> [usize; 6] {
    [0, 1, tile - 1, tile, 2 * tile + 1, 7 * tile + 37]
}

/// Small integers (exact in every type, so float sums are exact in any order).
fn data<T: Element>(rng: &mut Rng, n: usize) -> Vec<T> {
    (0..n)
        .map(|_| T::cast_from_i64((rng.next() % 17) as i64 - 8))
        .collect()
}

/// The CPU's inclusive scan with `f`.
fn inclusive_ref<T: Copy>(xs: &[T], f: impl Fn(T, T) -> T) -> Vec<T> {
    let mut out = Vec::with_capacity(xs.len());
    for &x in xs {
        let v = match out.last() {
            Some(&acc) => f(acc, x),
            None => x,
        };
        out.push(v);
    }
    out
}

/// The CPU's exclusive scan with `f` from `init`.
fn exclusive_ref<T: Copy>(xs: &[T], init: T, f: impl Fn(T, T) -> T) -> Vec<T> {
    let mut acc = init;
    xs.iter()
        .map(|&x| {
            let before = acc;
            acc = f(acc, x);
            before
        })
        .collect()
}

/// Runs `scan` on `xs` on `dev` and returns the output (one element longer than the input,
/// whose last element must stay untouched).
fn run<T: ScanElement>(
    dev: &Device,
    scan: &PreparedScan<T>,
    xs: &[T],
    ws: &mut Workspace,
) -> Vec<T> {
    let x = dev.upload(xs).expect("upload");
    let sentinel = T::cast_from_i64(77);
    let mut y = dev.alloc_filled(xs.len() + 1, sentinel).expect("alloc");
    scan.run(&x, &mut y, ws).expect("scan runs");
    let mut out = y.to_vec().expect("read back");
    assert!(
        coopgraph::ir::Element::to_bits(out.pop().expect("one more")) == sentinel.to_bits(),
        "the element past the input was written"
    );
    out
}

/// Inclusive and exclusive sums of one element type over every size.
fn sums<T: ScanElement>(wrapping: impl Fn(T, T) -> T + Copy) {
    let dev = device();
    let mut rng = Rng::new(T::DTYPE.bytes() as u64 * 31 + 7);
    let inc = DeviceScan::inclusive(Op::<T>::sum())
        .tuning(SMALL)
        .prepare(dev)
        .expect("prepares");
    let init = T::cast_from_i64(5);
    let exc = (DeviceScan::exclusive(Op::<T>::sum(), init).tuning(SMALL))
        .prepare(dev)
        .expect("prepares");
    let mut ws = Workspace::new(dev).expect("workspace");
    for n in sizes(SMALL.tile_items() as usize) {
        let xs = data::<T>(&mut rng, n);
        let what = format!("{} n={n}", T::DTYPE);
        assert_same(
            &run(dev, &inc, &xs, &mut ws),
            &inclusive_ref(&xs, wrapping),
            &format!("inclusive {what}"),
        );
        assert_same(
            &run(dev, &exc, &xs, &mut ws),
            &exclusive_ref(&xs, init, wrapping),
            &format!("exclusive {what}"),
        );
    }
}

#[test]
fn sums_of_every_type_and_size() {
    sums::<u32>(u32::wrapping_add);
    sums::<i32>(i32::wrapping_add);
    sums::<f32>(|a, b| a + b);
    sums::<u64>(u64::wrapping_add);
    sums::<i64>(i64::wrapping_add);
    sums::<f64>(|a, b| a + b);
}

/// Integer sums wrap: random full-range values.
#[test]
fn integer_sums_wrap() {
    let dev = device();
    let mut rng = Rng::new(3);
    let xs: Vec<u32> = rng.vec(1000);
    let scan = DeviceScan::inclusive(Op::sum())
        .tuning(SMALL)
        .prepare(dev)
        .expect("prepares");
    let got = run(dev, &scan, &xs, &mut Workspace::new(dev).expect("ws"));
    assert_same(&got, &inclusive_ref(&xs, u32::wrapping_add), "wrapping u32");
    let xs: Vec<i64> = rng.vec(1000);
    let scan = DeviceScan::inclusive(Op::sum())
        .tuning(SMALL)
        .prepare(dev)
        .expect("prepares");
    let got = run(dev, &scan, &xs, &mut Workspace::new(dev).expect("ws"));
    assert_same(&got, &inclusive_ref(&xs, i64::wrapping_add), "wrapping i64");
}

#[test]
fn min_and_max() {
    let dev = device();
    let mut rng = Rng::new(11);
    let n = 5 * SMALL.tile_items() as usize + 3;
    let xs: Vec<f32> = rng.vec(n);
    let mut ws = Workspace::new(dev).expect("ws");
    let max = DeviceScan::inclusive(Op::max())
        .tuning(SMALL)
        .prepare(dev)
        .expect("prepares");
    assert_same(
        &run(dev, &max, &xs, &mut ws),
        &inclusive_ref(&xs, f32::max),
        "f32 max",
    );
    let ys: Vec<i64> = rng.vec(n);
    let min = DeviceScan::exclusive(Op::min(), i64::MAX)
        .tuning(SMALL)
        .prepare(dev)
        .expect("prepares");
    assert_same(
        &run(dev, &min, &ys, &mut ws),
        &exclusive_ref(&ys, i64::MAX, i64::min),
        "i64 min",
    );
}

/// Affine maps `x -> a x + b` (mod 2^32) packed as `a << 32 | b`, composed in order: not
/// commutative, no identity used.
fn compose(f: Expr<u64>, g: Expr<u64>) -> Expr<u64> {
    let (fa, fb) = ((f.clone() >> 32u32).cast::<u32>(), f.cast::<u32>());
    let (ga, gb) = ((g.clone() >> 32u32).cast::<u32>(), g.cast::<u32>());
    let a = ga.clone() * fa;
    let b = ga * fb + gb;
    (a.cast::<u64>() << 32u32) | b.cast::<u64>()
}

fn compose_ref(f: u64, g: u64) -> u64 {
    let (fa, fb) = ((f >> 32) as u32, f as u32);
    let (ga, gb) = ((g >> 32) as u32, g as u32);
    let a = ga.wrapping_mul(fa);
    let b = ga.wrapping_mul(fb).wrapping_add(gb);
    (u64::from(a) << 32) | u64::from(b)
}

#[test]
fn non_commutative_operators() {
    let dev = device();
    let mut rng = Rng::new(19);
    let mut ws = Workspace::new(dev).expect("ws");
    for n in sizes(SMALL.tile_items() as usize) {
        let xs: Vec<u64> = rng.vec(n);
        let inc = DeviceScan::inclusive(Op::custom(compose))
            .tuning(SMALL)
            .prepare(dev)
            .expect("prepares");
        assert_same(
            &run(dev, &inc, &xs, &mut ws),
            &inclusive_ref(&xs, compose_ref),
            "affine inclusive",
        );
        let init = (3u64 << 32) | 1;
        let exc = DeviceScan::exclusive(Op::custom(compose), init)
            .tuning(SMALL)
            .prepare(dev)
            .expect("prepares");
        assert_same(
            &run(dev, &exc, &xs, &mut ws),
            &exclusive_ref(&xs, init, compose_ref),
            "affine exclusive",
        );
        // "Last non-zero", in i32, with a zero every other element or so.
        let ys: Vec<i32> = (0..n)
            .map(|_| {
                if rng.next().is_multiple_of(3) {
                    rng.next() as i32
                } else {
                    0
                }
            })
            .collect();
        let last = Op::custom(|a, b: Expr<i32>| b.ne(0).select(b, a));
        let scan = DeviceScan::inclusive(last)
            .tuning(SMALL)
            .prepare(dev)
            .expect("prepares");
        let want = inclusive_ref(&ys, |a, b| if b != 0 { b } else { a });
        assert_same(&run(dev, &scan, &ys, &mut ws), &want, "last non-zero");
    }
}

#[test]
fn fused_maps() {
    let dev = device();
    let mut rng = Rng::new(23);
    let n = 4 * SMALL.tile_items() as usize + 9;
    let xs = data::<i32>(&mut rng, n);
    let scan = DeviceScan::exclusive(Op::sum(), 100i32)
        .map_input(|v| v.clone() * v)
        .map_output(|s| s * 2 - 1)
        .tuning(SMALL)
        .prepare(dev)
        .expect("prepares");
    let squares: Vec<i32> = xs.iter().map(|v| v * v).collect();
    let want: Vec<i32> = exclusive_ref(&squares, 100, |a, b| a + b)
        .iter()
        .map(|s| s * 2 - 1)
        .collect();
    assert_same(
        &run(dev, &scan, &xs, &mut Workspace::new(dev).expect("ws")),
        &want,
        "fused maps",
    );
}

/// The default tunings (tiles of 4096 and 2048) over sizes around them.
#[test]
fn default_tunings() {
    let dev = device();
    let mut rng = Rng::new(29);
    for n in [4095, 4096, 3 * 4096 + 5] {
        let xs = data::<f32>(&mut rng, n);
        let y = coopgraph_scan(dev, &xs);
        assert_same(&y, &inclusive_ref(&xs, |a, b| a + b), "default f32");
        let xs = data::<u64>(&mut rng, n);
        let x = dev.upload(&xs).expect("upload");
        let mut y = dev.alloc_zeroed::<u64>(n).expect("alloc");
        coopgraph::algorithms::exclusive_scan(dev, &x, &mut y, 9).expect("scans");
        let want = exclusive_ref(&xs, 9, u64::wrapping_add);
        assert_same(&y.to_vec().expect("read"), &want, "default u64 exclusive");
    }
}

fn coopgraph_scan(dev: &Device, xs: &[f32]) -> Vec<f32> {
    let x = dev.upload(xs).expect("upload");
    let mut y = dev.alloc_zeroed::<f32>(xs.len()).expect("alloc");
    coopgraph::algorithms::inclusive_scan(dev, &x, &mut y).expect("scans");
    y.to_vec().expect("read")
}

/// Blocks interleaved in every order: tiles come from the counter in arrival order, and warp
/// 0 of a tile sees predecessors that published only their aggregate or nothing yet, so
/// windows fold aggregates and slide back past 32 tiles.
#[test]
fn look_back_in_any_block_order() {
    let tuning = Tuning {
        threads: 32,
        items: 2,
    };
    let mut rng = Rng::new(37);
    for order in BLOCK_ORDERS {
        let dev = sim_in(order);
        let mut ws = Workspace::new(&dev).expect("ws");
        for n in [64 * 70 + 5, 64 * 3] {
            let xs = data::<u32>(&mut rng, n);
            let scan = DeviceScan::inclusive(Op::sum())
                .tuning(tuning)
                .prepare(&dev)
                .expect("prepares");
            assert_same(
                &run(&dev, &scan, &xs, &mut ws),
                &inclusive_ref(&xs, u32::wrapping_add),
                &format!("{order:?} u32"),
            );
            let ys = data::<f64>(&mut rng, n);
            let scan = DeviceScan::exclusive(Op::sum(), 0.5)
                .tuning(tuning)
                .prepare(&dev)
                .expect("prepares");
            assert_same(
                &run(&dev, &scan, &ys, &mut ws),
                &exclusive_ref(&ys, 0.5, |a, b| a + b),
                &format!("{order:?} f64"),
            );
            let zs: Vec<u64> = rng.vec(n);
            let scan = DeviceScan::inclusive(Op::custom(compose))
                .tuning(tuning)
                .prepare(&dev)
                .expect("prepares");
            assert_same(
                &run(&dev, &scan, &zs, &mut ws),
                &inclusive_ref(&zs, compose_ref),
                &format!("{order:?} affine"),
            );
        }
    }
}

/// One launch of the scan's kernel per call, and no other kernel (the status words need no
/// reset: they carry the call's epoch).
#[test]
fn single_pass() {
    let dev = device();
    let tuning = Tuning {
        threads: 96,
        items: 5,
    };
    let scan = DeviceScan::inclusive(Op::<i32>::sum())
        .tuning(tuning)
        .prepare(dev)
        .expect("prepares");
    let name = scan.function().name().to_string();
    let launches = || crate::common::logged_with(&format!("launch `{name}`")).len();
    let before = launches();
    let mut ws = Workspace::new(dev).expect("ws");
    let xs = vec![1i32; 10 * 480 + 1];
    for call in 1..=3 {
        let got = run(dev, &scan, &xs, &mut ws);
        assert_eq!(got, (1..=xs.len() as i32).collect::<Vec<i32>>());
        assert_eq!(launches() - before, call, "one launch per call");
    }
    assert_eq!(ws.calls(), 3);
    let kernel = DeviceScan::inclusive(Op::<i32>::sum())
        .tuning(tuning)
        .kernel()
        .expect("builds");
    crate::common::assemble_all(&kernel);
}

#[test]
fn typed_errors() {
    let dev = device();
    let x = dev.upload(&[1u32, 2, 3]).expect("upload");
    let mut y = dev.alloc_zeroed::<u32>(2).expect("alloc");
    let e = coopgraph::algorithms::inclusive_scan(dev, &x, &mut y);
    assert!(matches!(
        e,
        Err(Error::Algorithm(AlgorithmError::OutputTooShort {
            input: 3,
            output: 2
        }))
    ));
    for bad in [(48, 4), (0, 4), (2048, 4), (64, 0), (64, 65)] {
        let t = Tuning {
            threads: bad.0,
            items: bad.1,
        };
        let e = DeviceScan::inclusive(Op::<u32>::sum())
            .tuning(t)
            .prepare(dev);
        assert!(matches!(
            e,
            Err(Error::Algorithm(AlgorithmError::Tuning { threads, items }))
                if threads == t.threads && items == t.items
        ));
    }
    let other = Device::sim();
    let scan = DeviceScan::inclusive(Op::<u32>::sum())
        .prepare(dev)
        .expect("prepares");
    let mut ws = Workspace::new(&other).expect("ws");
    let mut y = dev.alloc_zeroed::<u32>(3).expect("alloc");
    let e = scan.run(&x, &mut y, &mut ws);
    assert!(matches!(
        e,
        Err(Error::Algorithm(AlgorithmError::WrongDevice { .. }))
    ));
}

/// Every kernel variant assembles for every arch (packed and split status words, both forms).
#[test]
fn kernels_assemble() {
    let mut batch = crate::common::Batch::default();
    // Example 06's fused chain; its name says so.
    let fused = DeviceScan::inclusive(Op::<u32>::sum())
        .map_input(|v| v * 3u32 + 1u32)
        .map_output(|s| s * 2u32 + 1u32)
        .kernel()
        .expect("builds");
    assert_eq!(fused.name(), "device_scan_inclusive_map_in_out_u32_256x32");
    batch.add(&fused);
    batch.add(
        &DeviceScan::inclusive(Op::<u32>::sum())
            .kernel()
            .expect("builds"),
    );
    batch.add(
        &DeviceScan::exclusive(Op::<f32>::max(), 0.0)
            .kernel()
            .expect("builds"),
    );
    batch.add(
        &DeviceScan::inclusive(Op::custom(compose))
            .kernel()
            .expect("builds"),
    );
    batch.add(
        &DeviceScan::exclusive(Op::<i64>::sum(), 1)
            .kernel()
            .expect("builds"),
    );
    batch.add(
        &DeviceScan::inclusive(Op::<f64>::min())
            .kernel()
            .expect("builds"),
    );
    batch.finish();
}

/// Every barrier of the scan's kernel is needed: without any one of them (the prefix's hand-off
/// from warp 0 included) the race checker reports a race.
#[test]
fn every_barrier_is_needed() {
    let tuning = Tuning {
        threads: 64,
        items: 2,
    };
    let kernel = DeviceScan::inclusive(Op::<u32>::sum())
        .tuning(tuning)
        .kernel()
        .expect("builds");
    let dev = crate::common::race_checker();
    let n = 3 * tuning.tile_items() as usize - 5;
    let xs: Vec<u32> = (0..n as u32).collect();
    let run = |k: &coopgraph::Kernel| {
        let f = crate::common::compiled(&dev, k)?;
        let x = dev.upload(&xs)?;
        let mut y = dev.alloc_zeroed::<u32>(n)?;
        let mut status = dev.alloc_zeroed::<u64>(8)?;
        f.launch_grid(3, (&x, &mut y, n as u32, &mut status, 1u32, 0u64))?;
        y.to_vec()
    };
    let want: Vec<u32> = inclusive_ref(&xs, u32::wrapping_add);
    assert_eq!(run(&kernel).expect("runs"), want);
    crate::common::assert_barriers_necessary(&kernel, run);
    assert_eq!(kernel.sync_blocks(), 1, "the prefix's hand-off");
    assert_eq!(crate::common::assert_sync_blocks_necessary(&kernel, run), 1);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 12, .. proptest::prelude::ProptestConfig::default() })]

    /// Any length, tuning and block order: the inclusive sum of i32 and the exclusive max of
    /// u64 match the CPU's.
    #[test]
    fn scans_of_any_length_tuning_and_order(
        n in 0usize..1500,
        warps in 1u32..4,
        items in 1u32..6,
        order in 0u64..4,
        seed in 0u64..1000,
    ) {
        let block_order = match order {
            0 => BlockOrder::Linear,
            1 => BlockOrder::Interleaved,
            2 => BlockOrder::InterleavedReversed,
            _ => BlockOrder::InterleavedShuffled { seed },
        };
        let dev = Device::sim_with(SimOptions { block_order, ..SimOptions::default() });
        let tuning = Tuning { threads: 32 * warps, items };
        let mut rng = Rng::new(seed);
        let mut ws = Workspace::new(&dev).expect("ws");
        let xs: Vec<i32> = rng.vec(n);
        let scan = DeviceScan::inclusive(Op::sum()).tuning(tuning).prepare(&dev).expect("prepares");
        assert_same(&run(&dev, &scan, &xs, &mut ws), &inclusive_ref(&xs, i32::wrapping_add), "i32 sum");
        let ys: Vec<u64> = rng.vec(n);
        let scan = DeviceScan::exclusive(Op::max(), 7u64).tuning(tuning).prepare(&dev).expect("prepares");
        assert_same(&run(&dev, &scan, &ys, &mut ws), &exclusive_ref(&ys, 7, u64::max), "u64 max");
    }
}

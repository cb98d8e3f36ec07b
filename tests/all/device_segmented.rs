//! The device-wide segmented reduction against CPU references: every element type, sum /
//! min / max / a non-commutative operator, empty segments and segments around the tile, a
//! fused map, blocks in shuffled orders, and offsets out of order or past the end.

use crate::common::{Rng, assert_same, device};
use coopgraph::Error;
use coopgraph::algorithms::{
    self, AlgorithmError, DeviceSegmentedReduce, Op, ScanElement, Tuning, Workspace,
};
use coopgraph::ir::Expr;
use coopgraph::runtime::{Device, SimOptions};
use coopgraph::sim::BlockOrder;

const SMALL: Tuning = Tuning {
    threads: 64,
    items: 3,
};

/// Segment lengths: empty, one, around the tile, several tiles, and random ones.
fn lengths(rng: &mut Rng) -> Vec<usize> {
    let tile = SMALL.tile_items() as usize;
    let mut v = vec![0, 1, tile - 1, tile, tile + 1, 0, 3 * tile + 7, 2];
    v.extend((0..12).map(|_| (rng.next() % (2 * tile as u64 + 3)) as usize));
    v
}

/// Offsets of segments of `lengths`.
fn offsets_of(lengths: &[usize]) -> Vec<u32> {
    let mut offsets = vec![0u32];
    for &l in lengths {
        offsets.push(offsets.last().copied().unwrap_or(0) + l as u32);
    }
    offsets
}

/// The host's segmented reduction, each segment folded in order from `initial`.
fn reference<T: Copy>(xs: &[T], offsets: &[u32], initial: T, f: impl Fn(T, T) -> T) -> Vec<T> {
    offsets
        .windows(2)
        .map(|w| {
            xs[w[0] as usize..w[1] as usize]
                .iter()
                .fold(initial, |a, &b| f(a, b))
        })
        .collect()
}

fn check<T: ScanElement>(dev: &Device, op: Op<T>, initial: T, f: impl Fn(T, T) -> T, seed: u64) {
    let mut rng = Rng::new(seed);
    let r = DeviceSegmentedReduce::new(op)
        .tuning(SMALL)
        .prepare(dev)
        .expect("prepares");
    let mut ws = Workspace::new(dev).expect("ws");
    let lengths = lengths(&mut rng);
    let offsets = offsets_of(&lengths);
    let n = *offsets.last().expect("offsets") as usize;
    // Small integers: exact in every type, so float sums do not depend on the order.
    let xs: Vec<T> = (0..n)
        .map(|_| T::cast_from_i64((rng.next() % 201) as i64 - 100))
        .collect();
    let x = dev.upload(&xs).expect("upload");
    let ob = dev.upload(&offsets).expect("upload");
    let mut out = dev.alloc_zeroed::<T>(lengths.len()).expect("alloc");
    r.run(&x, &ob, &mut out, initial, &mut ws).expect("runs");
    let want = reference(&xs, &offsets, initial, &f);
    assert_same(
        &out.to_vec().expect("read"),
        &want,
        &format!("{}", T::DTYPE),
    );
}

#[test]
fn every_type_and_operator() {
    let dev = device();
    check::<u32>(dev, Op::sum(), 0, u32::wrapping_add, 1);
    check::<i32>(dev, Op::max(), i32::MIN, i32::max, 2);
    check::<f32>(dev, Op::sum(), 0.5, |a, b| a + b, 3);
    check::<u64>(dev, Op::min(), u64::MAX, u64::min, 4);
    check::<i64>(dev, Op::sum(), -3, i64::wrapping_add, 5);
    check::<f64>(dev, Op::min(), 1e9, f64::min, 6);
    // Not commutative: the last non-zero element in order (the initial value if none).
    check::<i32>(
        dev,
        Op::custom(|a, b: Expr<i32>| b.ne(0).select(b, a)),
        -77,
        |a, b| if b != 0 { b } else { a },
        7,
    );
}

/// Segments whose blocks run interleaved in shuffled orders, and the first bad segment
/// reported whatever order the blocks ran in.
#[test]
fn blocks_in_any_order() {
    for order in [
        BlockOrder::InterleavedReversed,
        BlockOrder::InterleavedShuffled { seed: 3 },
    ] {
        let dev = Device::sim_with(SimOptions {
            block_order: order,
            ..SimOptions::default()
        });
        check::<u32>(&dev, Op::sum(), 9, u32::wrapping_add, 8);
        let r = DeviceSegmentedReduce::new(Op::<u32>::sum())
            .tuning(SMALL)
            .prepare(&dev)
            .expect("prepares");
        let mut ws = Workspace::new(&dev).expect("ws");
        let x = dev.upload(&[1u32; 100]).expect("upload");
        let bad = dev
            .upload(&[0u32, 10, 5, 20, 200, 30, 1000])
            .expect("upload");
        let mut out = dev.alloc_zeroed::<u32>(6).expect("alloc");
        let e = r.run(&x, &bad, &mut out, 0, &mut ws).unwrap_err();
        assert!(
            matches!(e, Error::Algorithm(AlgorithmError::Offsets { segment: 1 })),
            "{order:?}: {e}"
        );
    }
}

/// A fused map; the convenience function at the default tuning over 1024-element segments.
#[test]
fn fused_map_and_default_tuning() {
    let dev = device();
    let mut rng = Rng::new(12);
    let xs: Vec<f32> = (0..5000).map(|_| (rng.next() % 64) as f32 - 32.0).collect();
    let offsets: Vec<u32> = (0..=5usize).map(|s| (s * 1024).min(5000) as u32).collect();
    let x = dev.upload(&xs).expect("upload");
    let ob = dev.upload(&offsets).expect("upload");
    let mut out = dev.alloc_zeroed::<f32>(5).expect("alloc");
    algorithms::segmented_reduce(dev, &x, &ob, &mut out, Op::sum(), 0.0).expect("runs");
    let want = reference(&xs, &offsets, 0.0, |a, b| a + b);
    assert_same(&out.to_vec().expect("read"), &want, "f32 sum");

    let r = DeviceSegmentedReduce::new(Op::sum())
        .map_input(|v: Expr<f32>| v.clone() * v)
        .prepare(dev)
        .expect("prepares");
    r.run(
        &x,
        &ob,
        &mut out,
        1.0,
        &mut Workspace::new(dev).expect("ws"),
    )
    .expect("runs");
    let want = reference(&xs, &offsets, 1.0, |a, b| a + b * b);
    assert_same(&out.to_vec().expect("read"), &want, "f32 sum of squares");
}

/// Offsets out of order or past the end: reported, nothing read out of bounds, and the
/// workspace's next call unaffected.
#[test]
fn bad_offsets_are_reported() {
    let dev = device();
    let r = DeviceSegmentedReduce::new(Op::<i64>::sum())
        .tuning(SMALL)
        .prepare(dev)
        .expect("prepares");
    let mut ws = Workspace::new(dev).expect("ws");
    let x = dev.upload(&[1i64, 2, 3, 4, 5, 6, 7]).expect("upload");
    let mut out = dev.alloc_zeroed::<i64>(3).expect("alloc");
    for (offsets, segment) in [
        (vec![0u32, 4, 2, 7], 1),
        (vec![0u32, 3, 7, 8], 2),
        (vec![5u32, 4, 9, 3], 0),
    ] {
        let ob = dev.upload(&offsets).expect("upload");
        let e = r.run(&x, &ob, &mut out, 0, &mut ws).unwrap_err();
        assert!(
            matches!(e, Error::Algorithm(AlgorithmError::Offsets { segment: s }) if s == segment),
            "{offsets:?}: {e}"
        );
        // The next good call succeeds with the same workspace.
        let good = dev.upload(&[0u32, 2, 2, 7]).expect("upload");
        r.run(&x, &good, &mut out, 10, &mut ws).expect("runs");
        assert_eq!(out.to_vec().expect("read"), [13, 10, 35]);
    }
    // An output shorter than the segments; no segments at all.
    let ob = dev.upload(&[0u32, 1, 2, 3, 4]).expect("upload");
    let e = r.run(&x, &ob, &mut out, 0, &mut ws).unwrap_err();
    assert!(matches!(
        e,
        Error::Algorithm(AlgorithmError::OutputTooShort {
            input: 4,
            output: 3
        })
    ));
    let none = dev.upload(&[3u32]).expect("upload");
    r.run(&x, &none, &mut out, 0, &mut ws).expect("runs");
}

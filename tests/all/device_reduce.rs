//! The device-wide reduction against CPU references: every element type, sum / min / max /
//! a non-commutative operator, a fused map, partial tiles, and bit-for-bit repeatability.

use crate::common::{Rng, device, same};
use coopgraph::algorithms::{DeviceReduce, Op, ScanElement, Tuning, Workspace};
use coopgraph::ir::Expr;

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
    for n in sizes() {
        let xs: Vec<T> = (0..n)
            .map(|_| T::cast_from_i64((rng.next() % 201) as i64 - 100))
            .collect();
        let want = xs.iter().copied().reduce(&f).expect("not empty");
        let x = dev.upload(&xs).expect("upload");
        let got = r.run(&x, &mut ws).expect("runs").expect("not empty");
        assert!(
            same(got, want),
            "{} n={n}: {got:?}, expected {want:?}",
            T::DTYPE
        );
    }
    let empty = dev.alloc_zeroed::<T>(0).expect("alloc");
    assert_eq!(r.run(&empty, &mut ws).expect("runs"), None);
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

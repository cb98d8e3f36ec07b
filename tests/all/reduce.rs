//! Reductions over blocks, warps and logical warps: every operator, block algorithm, dtype,
//! valid count and broadcast, against a CPU fold in position order.

use super::common::{Batch, Rng, assert_same, device, first_collective};
use coopgraph::ir::{Expr, Group, GroupKind, Reduce, ReduceAlgorithm};
use coopgraph::runtime::DeviceElement;
use coopgraph::{KernelBuilder, Load, Store};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Sum,
    Product,
    Min,
    Max,
    First,
    Last,
    /// `Reduce::first()`: `First` handed on without folding.
    Head,
}

trait Val: DeviceElement + PartialOrd {
    fn fold(op: Op, a: Self, b: Self) -> Self;
    fn sample(rng: &mut Rng, op: Op) -> Self;
}

macro_rules! int_val {
    ($($t:ty),*) => {$(
        impl Val for $t {
            fn fold(op: Op, a: Self, b: Self) -> Self {
                match op {
                    Op::Sum => a.wrapping_add(b),
                    Op::Product => a.wrapping_mul(b),
                    Op::Min => a.min(b),
                    Op::Max => a.max(b),
                    Op::First | Op::Head => a,
                    Op::Last => b,
                }
            }
            fn sample(rng: &mut Rng, _op: Op) -> Self {
                rng.value()
            }
        }
    )*};
}
int_val!(i8, i16, i32, i64, u8, u32, u64);

macro_rules! float_val {
    ($($t:ty),*) => {$(
        impl Val for $t {
            fn fold(op: Op, a: Self, b: Self) -> Self {
                match op {
                    Op::Sum => a + b,
                    Op::Product => a * b,
                    Op::Min => a.min(b),
                    Op::Max => a.max(b),
                    Op::First | Op::Head => a,
                    Op::Last => b,
                }
            }
            fn sample(rng: &mut Rng, op: Op) -> Self {
                // Small integers (or ±1 for products): every order of summing is exact.
                let v = (rng.next() % 17) as i64 - 8;
                match op {
                    Op::Product => if v < 0 { -1.0 } else { 1.0 },
                    _ => v as $t,
                }
            }
        }
    )*};
}
float_val!(f32, f64);

fn controls<T: Val>(op: Op) -> Reduce<T> {
    match op {
        Op::Sum => Reduce::sum(),
        Op::Product => Reduce::product(),
        Op::Min => Reduce::min(),
        Op::Max => Reduce::max(),
        Op::First => Reduce::custom(false, |a: Expr<T>, _b| a),
        Op::Last => Reduce::custom(false, |_a, b: Expr<T>| b),
        Op::Head => Reduce::first(),
    }
}

fn width(g: Group, block: u32) -> u32 {
    match g.kind() {
        GroupKind::Block => block,
        GroupKind::LogicalWarp { width } => width,
        GroupKind::Warps { warps } => warps * 32,
    }
}

/// Threads per block, items per thread, and the group that computes.
#[derive(Clone, Copy)]
struct Shape {
    block: u32,
    items: u32,
    group: Group,
}

fn check<T: Val>(
    batch: &mut Batch,
    shape: Shape,
    op: Op,
    alg: ReduceAlgorithm,
    broadcast: bool,
    valid: Option<u32>,
    seed: u64,
) {
    let Shape {
        block,
        items,
        group,
    } = shape;
    let name = format!(
        "reduce_{}_{block}x{items}_{}_{op:?}_{alg:?}_{broadcast}_{}",
        T::DTYPE,
        width(group, block),
        valid.map_or("all".to_string(), |v| v.to_string())
    );
    let mut k = KernelBuilder::new(name.clone())
        .block(block)
        .items_per_thread(items);
    let x = k.input::<T>("x");
    let y = k.output::<T>("y");
    let n = k.scalar::<u32>("n");
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::direct());
    let mut c = controls::<T>(op).algorithm(alg);
    if broadcast {
        c = c.broadcast();
    }
    if valid.is_some() {
        c = c.valid_items(n);
    }
    let r = k.reduce(group, &t, c);
    let out = k.thread_data_n::<T>(1);
    k.set_item(&out, 0, Expr::lit(T::cast_from_i64(0)));
    if broadcast {
        k.assign(&out, &r);
    } else {
        k.if_(group.rank().eq(0u32), |k| k.assign(&out, &r));
    }
    k.store_to(b, &y, &out, Store::direct().offset(0u32));
    let kernel = k.build().unwrap_or_else(|e| panic!("{name}: {e}"));
    batch.add(&kernel);
    let dev = device();
    let f = dev
        .compile(&kernel)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut rng = Rng::new(seed);
    let len = (block * items) as usize;
    let xs: Vec<T> = (0..len).map(|_| T::sample(&mut rng, op)).collect();
    let xb = dev.upload(&xs).expect("upload");
    let mut yb = dev
        .alloc_filled(block as usize, T::cast_from_i64(99))
        .expect("alloc");
    f.launch_grid(1, (&xb, &mut yb, valid.unwrap_or(0)))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let got = yb.to_vec().expect("download");
    let w = width(group, block) as usize;
    let k = items as usize;
    let mut want = vec![T::cast_from_i64(0); block as usize];
    for g in 0..block as usize / w {
        let ranks = valid.map_or(w, |v| (v as usize).min(w));
        let mut acc: Option<T> = None;
        for r in 0..ranks {
            for i in 0..k {
                let v = xs[(g * w + r) * k + i];
                acc = Some(match acc {
                    None => v,
                    Some(a) => T::fold(op, a, v),
                });
            }
        }
        let Some(total) = acc else { continue };
        for r in 0..w {
            if broadcast || r == 0 {
                want[g * w + r] = total;
            }
        }
    }
    assert_same(&got, &want, &name);
}

fn sweep<T: Val>(seed: u64) {
    let mut batch = Batch::default();
    let probe = KernelBuilder::new("probe");
    let groups = [
        probe.this_block(),
        probe.this_warp().into(),
        probe.this_warp().group_by(8),
        probe.this_warp().group_by(1),
    ];
    for op in [Op::Sum, Op::Min, Op::Max, Op::Product, Op::Last, Op::Head] {
        for &g in &groups {
            let algs: &[ReduceAlgorithm] = if g.kind() == GroupKind::Block {
                &[
                    ReduceAlgorithm::WarpReductions,
                    ReduceAlgorithm::Raking,
                    ReduceAlgorithm::RakingCommutativeOnly,
                ]
            } else {
                &[ReduceAlgorithm::WarpReductions]
            };
            for &alg in algs {
                if alg == ReduceAlgorithm::RakingCommutativeOnly
                    && matches!(op, Op::Last | Op::Head)
                {
                    continue;
                }
                for (block, items) in [(128u32, 4u32), (256, 1)] {
                    let shape = Shape {
                        block,
                        items,
                        group: g,
                    };
                    check::<T>(&mut batch, shape, op, alg, false, None, seed);
                    check::<T>(&mut batch, shape, op, alg, true, None, seed + 1);
                }
                for v in [1u32, 5, 100] {
                    let shape = Shape {
                        block: 256,
                        items: 1,
                        group: g,
                    };
                    check::<T>(&mut batch, shape, op, alg, true, Some(v), seed + v as u64);
                }
            }
        }
    }
}

#[test]
fn reduce_i32() {
    sweep::<i32>(1);
}

#[test]
fn reduce_u32() {
    sweep::<u32>(2);
}

#[test]
fn reduce_f32() {
    sweep::<f32>(3);
}

#[test]
fn reduce_f64() {
    sweep::<f64>(4);
}

#[test]
fn reduce_i64() {
    sweep::<i64>(5);
}

#[test]
fn reduce_narrow() {
    sweep::<i8>(6);
    sweep::<u8>(7);
    sweep::<i16>(8);
}

#[test]
fn reduce_first_u64() {
    let mut batch = Batch::default();
    let probe = KernelBuilder::new("probe");
    for g in [probe.this_block(), probe.this_warp().group_by(16)] {
        for alg in [ReduceAlgorithm::WarpReductions, ReduceAlgorithm::Raking] {
            let shape = Shape {
                block: 64,
                items: 2,
                group: g,
            };
            check::<u64>(&mut batch, shape, Op::First, alg, true, None, 9);
        }
    }
}

/// `Reduce::first()` hands each group's rank 0 value on over every kind of group (the block
/// at whole-warp sizes, logical warps, groups of whole warps), at one and several items, with
/// and without broadcast and valid counts, against the CPU's first value.
#[test]
fn first_values_over_every_group() {
    let mut batch = Batch::default();
    let probe = KernelBuilder::new("probe");
    let groups = [
        probe.this_block(),
        probe.this_warp().into(),
        probe.this_warp().group_by(4),
        probe.this_block().group_by_warps(2),
        probe.this_block().group_by_warps(3),
    ];
    for (i, &g) in groups.iter().enumerate() {
        for block in [192u32, 384] {
            for items in [1u32, 3] {
                let shape = Shape {
                    block,
                    items,
                    group: g,
                };
                let seed = 40 + i as u64;
                let alg = ReduceAlgorithm::WarpReductions;
                check::<u32>(&mut batch, shape, Op::Head, alg, false, None, seed);
                check::<f64>(&mut batch, shape, Op::Head, alg, true, None, seed);
                check::<i8>(&mut batch, shape, Op::Head, alg, true, Some(7), seed);
            }
        }
    }
}

/// A broadcast first value takes one barrier, and needs it: thread 0 writes the block's slot
/// and every thread reads it after the barrier (the race checker reports the read without).
#[test]
fn a_first_value_is_handed_on_through_one_barrier() {
    let sim = super::common::race_checker();
    let mut k = KernelBuilder::new("first_twice").block(96);
    let x = k.input::<i32>("x");
    let y = k.output::<i32>("y");
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::direct());
    // Twice in a row: the second's write to the slot waits for the first's reads.
    let r1 = k.reduce(b, &t, Reduce::first().broadcast());
    let s1 = r1.item(0);
    let u = k.map(&t, move |v| v * 3i32 - s1.clone());
    let r2 = k.reduce(b, &u, Reduce::first().broadcast());
    let s2 = r2.item(0);
    let out = k.map(&t, move |v| v + s2.clone());
    k.store_to(b, &y, &out, Store::direct());
    let kernel = k.build().expect("builds");
    let barriers = kernel.plan().barriers();
    assert!(barriers.len() <= 3, "{}", kernel.explain());
    let xs: Vec<i32> = (0..96).map(|i| i * 7 % 31 - 9).collect();
    let run = |kernel: &coopgraph::Kernel| super::common::run_xy(&sim, kernel, &xs, 96);
    let first = xs[0] * 3 - xs[0];
    let want: Vec<i32> = xs.iter().map(|v| v + first).collect();
    assert_eq!(run(&kernel).expect("race-free"), want);
    super::common::assert_barriers_necessary(&kernel, run);
}

/// Every barrier the planner places for a block reduction is needed: without it the
/// simulator's race checker reports a race.
#[test]
fn reduction_barriers_are_necessary() {
    let sim = super::common::race_checker();
    for alg in [
        ReduceAlgorithm::WarpReductions,
        ReduceAlgorithm::Raking,
        ReduceAlgorithm::RakingCommutativeOnly,
    ] {
        let mut k = KernelBuilder::new(format!("twice_{alg:?}"))
            .block(128)
            .items_per_thread(2);
        let x = k.input::<i32>("x");
        let y = k.output::<i32>("y");
        let b = k.this_block();
        let t = k.load_from(b, &x, Load::direct());
        // Two reductions in a row: raking's partials (one per thread) reuse the same bytes;
        // warp reductions' (one per warp) are small and have their own.
        let r1 = k.reduce(b, &t, Reduce::sum().algorithm(alg).broadcast());
        let s1 = r1.item(0);
        let u = k.map(&t, move |v| v - s1);
        let u1 = k.thread_data_n::<i32>(1);
        k.set_item(&u1, 0, u.item(0) + u.item(1));
        let r2 = k.reduce(b, &u1, Reduce::max().algorithm(alg).broadcast());
        k.store_to(b, &y, &r2, Store::direct().offset(0u32));
        let kernel = k.build().expect("builds");
        let barriers = kernel.plan().barriers();
        if alg == ReduceAlgorithm::WarpReductions {
            // Each reduction's two: before warp 0 reads the warps' values, and before every
            // thread reads the result warp 0 wrote.
            assert_eq!(barriers.len(), 4, "{}", kernel.explain());
        } else {
            assert!(barriers.len() >= 4, "{}", kernel.explain());
        }
        let xs: Vec<i32> = (0..256).map(|i| i % 13).collect();
        let run = |kernel: &coopgraph::Kernel| super::common::run_xy(&sim, kernel, &xs, 128);
        let sum: i32 = xs.iter().sum();
        let best = (0..128).map(|t| xs[2 * t] + xs[2 * t + 1] - 2 * sum).max();
        let best = best.expect("threads");
        let got = run(&kernel).expect("race-free");
        assert!(got.iter().all(|&v| v == best), "{alg:?}: {got:?}");
        super::common::assert_barriers_necessary(&kernel, run);
    }
}

/// A valid count over several items per thread: the first `valid` positions (blocked order)
/// of each group take part; a striped payload is converted first.
#[test]
fn valid_items_over_several_items() {
    let mut batch = Batch::default();
    let dev = device();
    let probe = KernelBuilder::new("probe");
    let mut case = 0;
    for g in [
        probe.this_block(),
        probe.this_warp().into(),
        probe.this_warp().group_by(4),
    ] {
        for op in [Op::Sum, Op::Last] {
            for valid in [1u32, 5, 77, 400, 512] {
                case += 1;
                let mut k = KernelBuilder::new(format!("valid_multi_{case}"))
                    .block(128)
                    .items_per_thread(4);
                let x = k.input::<i32>("x");
                let y = k.output::<i32>("y");
                let n = k.scalar::<u32>("n");
                let b = k.this_block();
                let t = k.load_from(b, &x, Load::striped());
                let r = k.reduce(g, &t, controls::<i32>(op).valid_items(n).broadcast());
                k.store_to(b, &y, &r, Store::direct().offset(0u32));
                let kernel = k.build().expect("builds");
                batch.add(&kernel);
                let f = dev.compile(&kernel).expect("compile");
                let xs: Vec<i32> = (0..512).map(|i| (i * 7919) % 101 - 50).collect();
                let xb = dev.upload(&xs).expect("upload");
                let mut yb = dev.alloc_zeroed::<i32>(128).expect("alloc");
                f.launch_grid(1, (&xb, &mut yb, valid)).expect("launch");
                let w = width(g, 128) as usize;
                let want: Vec<i32> = (0..128usize)
                    .map(|t| {
                        let start = (t / w) * w * 4;
                        let m = (valid as usize).min(w * 4);
                        xs[start..start + m]
                            .iter()
                            .copied()
                            .reduce(|a, b| i32::fold(op, a, b))
                            .expect("at least one")
                    })
                    .collect();
                assert_same(
                    &yb.to_vec().expect("download"),
                    &want,
                    &format!("{op:?} over {w} threads, valid {valid}"),
                );
            }
        }
    }
}

/// The raking entries are padded where the raking lanes' reads would conflict: one slot per
/// segment of 8 (8-way conflicts unpadded), none for the odd segments of commutative-only
/// raking over 256 threads; the sweeps above run both shapes against the CPU fold.
#[test]
fn raking_entries_are_padded_where_segments_conflict() {
    use coopgraph::ir::{Scan, ScanAlgorithm};
    use coopgraph::layout::{Arrangement, SmemTransform, arrangement_layout, bank_conflicts_with};
    fn plan_of<T: coopgraph::ir::Element>(
        alg: Option<ReduceAlgorithm>,
        scan: Option<ScanAlgorithm>,
    ) -> (u32, bool) {
        let mut k = KernelBuilder::new("raking").block(256).items_per_thread(2);
        let b = k.this_block();
        let x = k.input::<T>("x");
        let y = k.output::<T>("y");
        let t = k.load_from(b, &x, Load::direct());
        let r = match (alg, scan) {
            (Some(a), _) => k.reduce(b, &t, Reduce::sum().algorithm(a)),
            (_, Some(a)) => k.scan(b, &t, Scan::inclusive_sum().algorithm(a)),
            _ => unreachable!("one of the two"),
        };
        // A reduction's result is at rank 0 only: store the first position alone.
        k.store_to(b, &y, &r, Store::direct().offset(0u32).valid_items(1u32));
        let kernel = k.build().expect("builds");
        let c = first_collective(&kernel);
        assert!(kernel.explain().contains("raked in segments of"));
        let raking = c.raking.expect("a raking split");
        assert_eq!(c.padding, c.padding.and(Some(raking.segment)));
        (raking.segment, c.padding.is_some())
    }
    let plan_of = |alg: Option<ReduceAlgorithm>, scan: Option<ScanAlgorithm>, bytes: u32| {
        if bytes == 8 {
            plan_of::<f64>(alg, scan)
        } else {
            plan_of::<f32>(alg, scan)
        }
    };
    for bytes in [4, 8] {
        assert_eq!(
            plan_of(Some(ReduceAlgorithm::Raking), None, bytes),
            (8, true)
        );
        assert_eq!(
            plan_of(Some(ReduceAlgorithm::RakingCommutativeOnly), None, bytes),
            (7, false)
        );
        for alg in [ScanAlgorithm::Raking, ScanAlgorithm::RakingMemoize] {
            assert_eq!(plan_of(None, Some(alg), bytes), (8, true));
        }
    }
    // What the choice rests on: 32 lanes reading segments of 8 f32 values.
    let reads = arrangement_layout(Arrangement::Blocked, 32, 8).expect("layout");
    let plain = bank_conflicts_with(&reads, 4, 32, SmemTransform::Identity).expect("count");
    let padded = SmemTransform::Pad { every: 8, pad: 1 };
    let padded = bank_conflicts_with(&reads, 4, 32, padded).expect("count");
    assert_eq!((plain.worst, padded.worst), (7, 0));
}

/// A broadcast reduction gives every rank of its group the same value, so a branch on it may
/// hold the group's collectives and its result may place a load; a rank-0 result may not.
#[test]
fn broadcast_results_are_uniform_across_their_group() {
    let build = |broadcast: bool| {
        let mut k = KernelBuilder::new("steered").block(64).items_per_thread(2);
        let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
        let b = k.this_block();
        let t = k.load_from(b, &x, Load::direct());
        let controls = if broadcast {
            Reduce::max().broadcast()
        } else {
            Reduce::max()
        };
        let m = k.reduce(b, &t, controls).item(0);
        k.if_(m.gt(100u32), |k| {
            let s = k.scan(b, &t, coopgraph::ir::Scan::inclusive_sum());
            // The offset comes from the reduction too.
            let at = (m.clone() - 101u32) % 2u32 * 128u32;
            k.store_to(b, &y, &s, Store::direct().offset(at));
        });
        k.build()
    };
    let Err(coopgraph::Error::Verify(e)) = build(false) else {
        panic!("a rank-0 result steered a collective")
    };
    assert!(e.errors.iter().any(|e| matches!(
        e.kind,
        coopgraph::ir::VerifyErrorKind::NonUniformCollective { .. }
            | coopgraph::ir::VerifyErrorKind::PartlyDefinedRead { .. }
    )));
    let kernel = build(true).expect("builds");
    let dev = device();
    let xs: Vec<u32> = (0..128).map(|i| if i == 77 { 102 } else { 1 }).collect();
    let x = dev.upload(&xs).expect("upload");
    let mut y = dev.alloc_zeroed::<u32>(256).expect("alloc");
    dev.compile(&kernel)
        .expect("compiles")
        .launch_grid(1, (&x, &mut y))
        .expect("runs");
    let got = y.to_vec().expect("read");
    // max = 102: the scan lands at offset 128.
    let want: Vec<u32> = inclusive(&xs);
    assert_eq!(&got[128..], &want[..]);
    assert!(got[..128].iter().all(|&v| v == 0));
}

fn inclusive(xs: &[u32]) -> Vec<u32> {
    xs.iter()
        .scan(0u32, |acc, &v| {
            *acc += v;
            Some(*acc)
        })
        .collect()
}

/// A scan's aggregate under a built-in operator is the same at every rank of its group (a
/// block's and a logical warp's), so a loop over it may hold the group's collectives; a user
/// operator's aggregate may not steer one.
#[test]
fn scan_aggregates_of_built_in_operators_are_uniform_across_their_group() {
    let build = |custom: bool, width: Option<u32>| {
        let mut k = KernelBuilder::new("windows").block(64).items_per_thread(2);
        let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
        let g: coopgraph::ir::Group = match width {
            None => k.this_block(),
            Some(w) => k.this_warp().group_by(w),
        };
        let t = k.load_from(g, &x, Load::direct());
        let op = if custom {
            coopgraph::ir::Scan::inclusive(Reduce::custom(true, |a, b| a + b))
        } else {
            coopgraph::ir::Scan::inclusive_sum()
        };
        let (_, total) = k.scan_with_aggregate(g, &t, op);
        // One round per 4 of the group's total, each a collective over the group.
        let acc = k.fill(0u32);
        k.for_range_step(0u32, total.item(0), 4u32, |k, _| {
            let s = k.scan(g, &t, coopgraph::ir::Scan::inclusive_sum());
            let next = k.map2(&acc, &s, |a, s| a + s);
            k.assign(&acc, &next);
        });
        k.store_to(g, &y, &acc, Store::direct());
        k.build()
    };
    for width in [None, Some(16)] {
        let Err(coopgraph::Error::Verify(e)) = build(true, width) else {
            panic!("a user operator's aggregate steered a collective ({width:?})")
        };
        assert!(
            e.errors.iter().any(|e| matches!(
                e.kind,
                coopgraph::ir::VerifyErrorKind::NonUniformCollective { .. }
            )),
            "{e}"
        );
        let kernel = build(false, width).expect("builds");
        let dev = device();
        let xs: Vec<u32> = (0..128).map(|i| i % 3).collect();
        let x = dev.upload(&xs).expect("upload");
        let mut y = dev.alloc_zeroed::<u32>(128).expect("alloc");
        dev.compile(&kernel)
            .expect("compiles")
            .launch_grid(1, (&x, &mut y))
            .expect("runs");
        let got = y.to_vec().expect("read");
        let group = width.map_or(128, |w| 2 * w as usize);
        for (gi, chunk) in xs.chunks(group).enumerate() {
            let total: u32 = chunk.iter().sum();
            let rounds = total.div_ceil(4);
            let want: Vec<u32> = inclusive(chunk).iter().map(|s| s * rounds).collect();
            assert_eq!(
                &got[gi * group..(gi + 1) * group],
                &want[..],
                "{width:?} group {gi}"
            );
        }
    }
}

/// A broadcast float sum hands every thread the bits the same sum without broadcast leaves
/// at thread 0, at blocks of whole and partial warps. Values of many magnitudes make any
/// other order of folding show.
#[test]
fn broadcast_float_sums_carry_the_first_warps_bits() {
    let dev = device();
    for block in [256u32, 96, 160, 1024] {
        let run = |broadcast: bool| {
            let name = format!("float_sum_{block}_{broadcast}");
            let mut k = KernelBuilder::new(name).block(block).items_per_thread(3);
            let (x, y) = (k.input::<f32>("x"), k.output::<f32>("y"));
            let b = k.this_block();
            let t = k.load_from(b, &x, Load::direct());
            let (controls, store) = if broadcast {
                (Reduce::sum().broadcast(), Store::direct().offset(0u32))
            } else {
                let one = Store::direct().offset(0u32).valid_items(1u32);
                (Reduce::sum(), one)
            };
            let s = k.reduce(b, &t, controls);
            k.store_to(b, &y, &s, store);
            let kernel = k.build().expect("builds");
            super::common::assemble_all(&kernel);
            let xs: Vec<f32> = (0..block * 3)
                .map(|i| {
                    let m = (u64::from(i) * 2_654_435_761 % 1000) as f32;
                    let sign = if i % 3 == 0 { -1.0 } else { 1.0 };
                    sign * m * 10f32.powi((i % 9) as i32 - 4)
                })
                .collect();
            let xb = dev.upload(&xs).expect("upload");
            let mut yb = dev.alloc_zeroed::<f32>(block as usize).expect("alloc");
            let f = dev.compile(&kernel).expect("compiles");
            f.launch_grid(1, (&xb, &mut yb)).expect("runs");
            yb.to_vec().expect("download")
        };
        let (all, first) = (run(true), run(false));
        let want = first[0].to_bits();
        let wrong = all.iter().position(|v| v.to_bits() != want);
        assert_eq!(wrong, None, "block {block}: {all:?} against {}", first[0]);
    }
}

//! Scans over blocks, warps and logical warps: inclusive and exclusive, sums, min/max and
//! non-commutative operators, initial values and aggregates, against a CPU scan in position
//! order.

use super::common::{Batch, Rng, assert_same, device};
use coopgraph::ir::ScanAlgorithm;
use coopgraph::ir::{Expr, Group, GroupKind, Reduce, Scan, index};
use coopgraph::runtime::DeviceElement;
use coopgraph::{KernelBuilder, Load, Store};
use std::cell::Cell;

thread_local! {
    /// The block algorithm the current test scans with.
    static ALGORITHM: Cell<ScanAlgorithm> = const { Cell::new(ScanAlgorithm::WarpScans) };
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Sum,
    Max,
    First,
}

trait Val: DeviceElement + PartialOrd {
    fn fold(op: Op, a: Self, b: Self) -> Self;
    fn sample(rng: &mut Rng) -> Self;
}

macro_rules! val {
    ($($t:ty: $add:ident, $max:expr;)*) => {$(
        impl Val for $t {
            fn fold(op: Op, a: Self, b: Self) -> Self {
                match op {
                    Op::Sum => a.$add(b),
                    Op::Max => $max(a, b),
                    Op::First => a,
                }
            }
            fn sample(rng: &mut Rng) -> Self {
                // Small integers: float sums are exact in any order.
                ((rng.next() % 17) as i64 - 8) as $t
            }
        }
    )*};
}

trait AddF {
    fn addf(self, b: Self) -> Self;
}
impl AddF for f32 {
    fn addf(self, b: Self) -> Self {
        self + b
    }
}
impl AddF for f64 {
    fn addf(self, b: Self) -> Self {
        self + b
    }
}

val! {
    i32: wrapping_add, |a: i32, b: i32| a.max(b);
    u8: wrapping_add, |a: u8, b: u8| a.max(b);
    i64: wrapping_add, |a: i64, b: i64| a.max(b);
    f32: addf, |a: f32, b: f32| a.max(b);
    f64: addf, |a: f64, b: f64| a.max(b);
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
    inclusive: bool,
    initial: Option<i64>,
    seed: u64,
) {
    let Shape {
        block,
        items,
        group,
    } = shape;
    let name = format!(
        "scan_{:?}_{}_{block}x{items}_{}_{op:?}_{inclusive}_{}",
        ALGORITHM.with(|a| a.get()),
        T::DTYPE,
        width(group, block),
        initial.map_or("none".into(), |v| v.to_string())
    );
    let mut k = KernelBuilder::new(name.clone())
        .block(block)
        .items_per_thread(items);
    let x = k.input::<T>("x");
    let y = k.output::<T>("y");
    let z = k.output::<T>("z");
    let b = k.this_block();
    // A striped load: the scan's input is converted to blocked order by the planner.
    let t = k.load_from(b, &x, Load::striped());
    let r: Reduce<T> = match op {
        Op::Sum => Reduce::sum(),
        Op::Max => Reduce::max(),
        Op::First => Reduce::custom(false, |a: Expr<T>, _b| a),
    };
    let mut c = if inclusive {
        Scan::inclusive(r)
    } else {
        Scan::exclusive(r)
    };
    c = c.algorithm(ALGORITHM.with(|a| a.get()));
    if let Some(v) = initial {
        c = c.initial_value(T::cast_from_i64(v));
    }
    let (s, agg) = k.scan_with_aggregate(group, &t, c);
    k.store_to(b, &y, &s, Store::direct());
    k.store_to(b, &z, &agg, Store::direct().offset(0u32));
    let kernel = k.build().unwrap_or_else(|e| panic!("{name}: {e}"));
    batch.add(&kernel);
    let dev = device();
    let f = dev
        .compile(&kernel)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut rng = Rng::new(seed);
    let len = (block * items) as usize;
    let xs: Vec<T> = (0..len).map(|_| T::sample(&mut rng)).collect();
    let xb = dev.upload(&xs).expect("upload");
    let mut yb = dev.alloc_filled(len, T::cast_from_i64(99)).expect("alloc");
    let mut zb = dev
        .alloc_filled(block as usize, T::cast_from_i64(99))
        .expect("alloc");
    f.launch_grid(1, (&xb, &mut yb, &mut zb))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let w = (width(group, block) * items) as usize;
    let mut want = vec![T::cast_from_i64(0); len];
    let mut totals = vec![T::cast_from_i64(0); block as usize];
    for g in 0..len / w {
        let mut acc: Option<T> = initial.map(T::cast_from_i64);
        for p in 0..w {
            let v = xs[g * w + p];
            let next = match acc {
                None => v,
                Some(a) => T::fold(op, a, v),
            };
            want[g * w + p] = if inclusive { next } else { acc.unwrap_or(v) };
            acc = Some(next);
        }
        let total = xs[g * w..(g + 1) * w]
            .iter()
            .copied()
            .reduce(|a, b| T::fold(op, a, b))
            .expect("items");
        let gw = width(group, block) as usize;
        for r in 0..gw {
            totals[g * gw + r] = total;
        }
    }
    assert_same(&yb.to_vec().expect("download"), &want, &name);
    assert_same(
        &zb.to_vec().expect("download"),
        &totals,
        &format!("{name} aggregate"),
    );
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
    for g in groups {
        for op in [Op::Sum, Op::Max, Op::First] {
            for (block, items) in [(128u32, 4u32), (256, 1), (64, 3)] {
                let shape = Shape {
                    block,
                    items,
                    group: g,
                };
                check::<T>(&mut batch, shape, op, true, None, seed);
                check::<T>(&mut batch, shape, op, true, Some(5), seed + 1);
                check::<T>(&mut batch, shape, op, false, Some(-3), seed + 2);
            }
        }
    }
}

#[test]
fn scan_i32() {
    sweep::<i32>(11);
}

#[test]
fn scan_f32() {
    sweep::<f32>(12);
}

#[test]
fn scan_u8_i64_f64() {
    sweep::<u8>(13);
    sweep::<i64>(14);
    sweep::<f64>(15);
}

#[test]
fn exclusive_scan_needs_an_initial_value() {
    let mut k = KernelBuilder::new("k");
    let x = k.input::<i32>("x");
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::direct());
    let line = line!() + 1;
    k.scan(b, &t, Scan::exclusive(Reduce::max()));
    match k.build() {
        Err(coopgraph::Error::Verify(e)) => assert!(e.errors.iter().any(|e| e.loc.line == line
            && e.kind == coopgraph::ir::VerifyErrorKind::ExclusiveScanNeedsInitial)),
        other => panic!("expected an error, got {other:?}"),
    }
}

/// The barriers of back-to-back block scans are each necessary.
#[test]
fn scan_barriers_are_necessary() {
    let sim = super::common::race_checker();
    for alg in [
        ScanAlgorithm::WarpScans,
        ScanAlgorithm::Raking,
        ScanAlgorithm::RakingMemoize,
    ] {
        let mut k = KernelBuilder::new(format!("scans_{alg:?}"))
            .block(128)
            .items_per_thread(2);
        let x = k.input::<i32>("x");
        let y = k.output::<i32>("y");
        let b = k.this_block();
        let t = k.load_from(b, &x, Load::direct());
        let s1 = k.scan(b, &t, Scan::inclusive_sum().algorithm(alg));
        let s2 = k.scan(b, &s1, Scan::exclusive_sum().algorithm(alg));
        k.store_to(b, &y, &s2, Store::direct());
        let kernel = k.build().expect("builds");
        let xs: Vec<i32> = (0..256).map(|i| i % 7 - 3).collect();
        let run = |kernel: &coopgraph::Kernel| super::common::run_xy(&sim, kernel, &xs, 256);
        let mut incl = Vec::new();
        let mut acc = 0;
        for v in &xs {
            acc += v;
            incl.push(acc);
        }
        let mut want = Vec::new();
        let mut acc = 0;
        for v in &incl {
            want.push(acc);
            acc += v;
        }
        assert_eq!(run(&kernel).expect("race-free"), want);
        // Warp scans' totals (one per warp) have bytes of their own, raking's (one per
        // thread) are reused: the second scan's writes wait for the first's reads.
        let least = if alg == ScanAlgorithm::WarpScans {
            2
        } else {
            3
        };
        assert!(
            kernel.plan().barriers().len() >= least,
            "{}",
            kernel.explain()
        );
        super::common::assert_barriers_necessary(&kernel, run);
    }
}

/// A running scan over many tiles in one block: a prefix callback carries the total.
#[test]
fn prefix_callback_carries_a_running_total() {
    let dev = device();
    for (block, items, group_is_warp) in [(128u32, 4u32, false), (32, 2, true)] {
        let mut k = KernelBuilder::new(format!("running_{block}_{items}"))
            .block(block)
            .items_per_thread(items);
        let x = k.input::<i32>("x");
        let y = k.output::<i32>("y");
        let n = k.scalar::<u32>("n");
        let b = k.this_block();
        let g: Group = if group_is_warp {
            k.this_warp().into()
        } else {
            b
        };
        let running = k.thread_data_n::<i32>(1);
        k.set_item(&running, 0, 10i32);
        k.tiles(n, |k, _tile| {
            let t = k.load_from(b, &x, Load::direct().oob_default(0));
            let s = k.scan_with_prefix(g, &t, Scan::inclusive_sum(), |k, total| {
                let start = running.item(0);
                k.set_item(&running, 0, running.item(0) + total);
                start
            });
            k.store_to(b, &y, &s, Store::direct());
        });
        let kernel = k.build().expect("builds");
        super::common::assemble_all(&kernel);
        let f = dev.compile(&kernel).expect("compile");
        let len = 3000usize;
        let xs: Vec<i32> = (0..len as i32).map(|i| i % 9 - 4).collect();
        let xb = dev.upload(&xs).expect("upload");
        let mut yb = dev.alloc_zeroed::<i32>(len).expect("alloc");
        // One block walks every tile in order.
        f.launch_grid(1, (&xb, &mut yb, len as u32))
            .expect("launch");
        let mut acc = 10i32;
        let want: Vec<i32> = xs
            .iter()
            .map(|v| {
                acc += v;
                acc
            })
            .collect();
        assert_same(
            &yb.to_vec().expect("download"),
            &want,
            &format!("running scan {block}x{items}"),
        );
    }
}

/// The raking block algorithms give the same results.
#[test]
fn raking_scans() {
    for alg in [ScanAlgorithm::Raking, ScanAlgorithm::RakingMemoize] {
        ALGORITHM.with(|a| a.set(alg));
        let mut batch = Batch::default();
        let probe = KernelBuilder::new("probe");
        let g = probe.this_block();
        for op in [Op::Sum, Op::Max, Op::First] {
            for (block, items) in [(128u32, 4u32), (256, 1), (64, 3), (128, 2)] {
                let shape = Shape {
                    block,
                    items,
                    group: g,
                };
                check::<i32>(&mut batch, shape, op, false, Some(0), 23);
                check::<i32>(&mut batch, shape, op, true, None, 21);
                check::<f32>(&mut batch, shape, op, false, Some(-3), 22);
            }
        }
        ALGORITHM.with(|a| a.set(ScanAlgorithm::WarpScans));
    }
}

/// Warp and logical-warp scans with a valid count: valid positions scan the valid items, and
/// the aggregate counts only them.
#[test]
fn warp_scans_with_valid_items() {
    let mut batch = Batch::default();
    let dev = device();
    let probe = KernelBuilder::new("probe");
    let mut case = 0;
    for g in [probe.this_warp().into(), probe.this_warp().group_by(8)] {
        for items in [1u32, 3] {
            for op in [Op::Sum, Op::Max] {
                let w = width(g, 64) as usize;
                let tile = w * items as usize;
                for valid in [1usize, 5, tile - 1, tile, tile + 9] {
                    case += 1;
                    let mut k = KernelBuilder::new(format!("scan_valid_{case}"))
                        .block(64)
                        .items_per_thread(items);
                    let x = k.input::<i32>("x");
                    let y = k.output::<i32>("y");
                    let z = k.output::<i32>("z");
                    let n = k.scalar::<u32>("n");
                    let b = k.this_block();
                    let t = k.load_from(b, &x, Load::direct());
                    let r: Reduce<i32> = if op == Op::Sum {
                        Reduce::sum()
                    } else {
                        Reduce::max()
                    };
                    let (s, agg) = k.scan_with_aggregate(g, &t, Scan::inclusive(r).valid_items(n));
                    k.store_to(b, &y, &s, Store::direct());
                    k.store_to(b, &z, &agg, Store::direct().offset(0u32));
                    let kernel = k.build().expect("builds");
                    batch.add(&kernel);
                    let f = dev.compile(&kernel).expect("compile");
                    let len = 64 * items as usize;
                    let xs: Vec<i32> = (0..len as i32).map(|i| (i * 37) % 23 - 11).collect();
                    let xb = dev.upload(&xs).expect("upload");
                    let mut yb = dev.alloc_zeroed::<i32>(len).expect("alloc");
                    let mut zb = dev.alloc_zeroed::<i32>(64).expect("alloc");
                    f.launch_grid(1, (&xb, &mut yb, &mut zb, valid as u32))
                        .expect("launch");
                    let got = yb.to_vec().expect("y");
                    let got_agg = zb.to_vec().expect("z");
                    for (gi, chunk) in xs.chunks(tile).enumerate() {
                        let m = valid.min(tile);
                        let mut acc: Option<i32> = None;
                        for (p, &v) in chunk.iter().enumerate().take(m) {
                            let next = acc.map_or(v, |a| i32::fold(op, a, v));
                            assert_eq!(got[gi * tile + p], next, "case {case} position {p}");
                            acc = Some(next);
                        }
                        for r in 0..w {
                            assert_eq!(
                                got_agg[gi * w + r],
                                acc.expect("valid"),
                                "case {case} aggregate"
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn block_scans_take_whole_tiles() {
    let mut k = KernelBuilder::new("k").block(64).items_per_thread(2);
    let x = k.input::<i32>("x");
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::direct());
    k.scan(b, &t, Scan::inclusive_sum().valid_items(10u32));
    match k.build() {
        Err(coopgraph::Error::Verify(e)) => {
            assert!(e.has(|k| matches!(k, coopgraph::ir::VerifyErrorKind::ValidItemsNeedWarpGroup)))
        }
        other => panic!("expected an error, got {other:?}"),
    }
}

/// The prefix a callback returns is taken from the group's rank 0 and seeds every thread, as
/// CUB takes its callback's value from lane 0: here only rank 0 holds the tile's carry (the
/// others hold garbage), for block scans of each algorithm, warps and logical warps. Every
/// barrier the block scans get is necessary.
#[test]
fn prefix_callback_value_comes_from_rank_0() {
    let dev = device();
    let mut batch = Batch::default();
    let algs = [
        ScanAlgorithm::WarpScans,
        ScanAlgorithm::Raking,
        ScanAlgorithm::RakingMemoize,
    ];
    for (case, (group, alg)) in [
        (0u32, algs[0]),
        (0, algs[1]),
        (0, algs[2]),
        (32, algs[0]),
        (8, algs[0]),
    ]
    .into_iter()
    .enumerate()
    {
        let (block, items) = (128u32, 3u32);
        let mut k = KernelBuilder::new(format!("rank0_prefix_{case}"))
            .block(block)
            .items_per_thread(items);
        let x = k.input::<i32>("x");
        let carries = k.input::<i32>("carries");
        let y = k.output::<i32>("y");
        let b = k.this_block();
        let g: Group = match group {
            0 => b,
            32 => k.this_warp().into(),
            w => k.this_warp().group_by(w),
        };
        let threads = if group == 0 { block } else { group };
        // Rank r of each group gets carries[group index] at rank 0, and 1000 + r elsewhere.
        let mine = k.thread_data_n::<i32>(1);
        let rank = index::thread_rank() % threads;
        // Thread t reads element t, which holds its group's carry.
        k.load_into(b, &carries, &mine, Load::direct().offset(0u32));
        let t = k.load_from(b, &x, Load::direct());
        let s = k.scan_with_prefix(
            g,
            &t,
            Scan::inclusive_sum().algorithm(alg),
            move |_k, _total| {
                rank.eq(0u32)
                    .select(mine.item(0), rank.cast::<i32>() + 1000)
            },
        );
        k.store_to(b, &y, &s, Store::direct());
        let kernel = k.build().expect("builds");
        batch.add(&kernel);
        let groups = (block / threads) as usize;
        let tile = (threads * items) as usize;
        let xs: Vec<i32> = (0..(block * items) as i32).map(|i| i % 7 - 3).collect();
        let cs: Vec<i32> = (0..groups as i32).map(|i| 100 * (i + 1)).collect();
        let per_thread: Vec<i32> = (0..block as usize)
            .map(|t| cs[t / threads as usize])
            .collect();
        let run = |dev: &coopgraph::runtime::Device, kernel: &coopgraph::Kernel| {
            let f = super::common::compiled(dev, kernel)?;
            let xb = dev.upload(&xs)?;
            let cb = dev.upload(&per_thread)?;
            let mut yb = dev.alloc_zeroed::<i32>(xs.len())?;
            f.launch_grid(1, (&xb, &cb, &mut yb))?;
            yb.to_vec()
        };
        let mut want = Vec::new();
        for (gi, chunk) in xs.chunks(tile).enumerate() {
            let mut acc = cs[gi];
            for v in chunk {
                acc += v;
                want.push(acc);
            }
        }
        assert_same(
            &run(dev, &kernel).expect("runs"),
            &want,
            &format!("case {case}"),
        );
        if group == 0 {
            let sim = super::common::race_checker();
            super::common::assert_barriers_necessary(&kernel, |k| run(&sim, k));
        }
    }
}

/// A raking scan followed by a block reduction that shares the scan's bytes: the reduction's
/// first write waits for every thread's last read of the scan (its own entry and the total).
/// Over many blocks and repeated runs, as the GPU schedules warps differently each time: on
/// the GPU 4,096 blocks, 20 runs; on the simulator (which checks races) a few blocks, once.
#[test]
fn raking_scan_then_block_reduce() {
    let dev = device();
    let on_gpu = !matches!(dev.backend(), coopgraph::runtime::Backend::Sim);
    let (blocks, runs) = if on_gpu { (4096u32, 20) } else { (6, 1) };
    let (block, items) = (128u32, 4u32);
    let mut batch = Batch::default();
    for alg in [ScanAlgorithm::Raking, ScanAlgorithm::RakingMemoize] {
        let mut k = KernelBuilder::new(format!("scan_then_reduce_{alg:?}"))
            .block(block)
            .items_per_thread(items);
        let x = k.input::<i32>("x");
        let y = k.output::<i32>("y");
        let b = k.this_block();
        let t = k.load_from(b, &x, Load::direct());
        let s = k.scan(b, &t, Scan::inclusive_sum().algorithm(alg));
        let m = k.reduce(b, &s, Reduce::max().broadcast());
        let d = k.map(&s, move |v| v - m.item(0));
        k.store_to(b, &y, &d, Store::direct());
        let kernel = k.build().expect("builds");
        batch.add(&kernel);
        let tile = (block * items) as usize;
        let n = tile * blocks as usize;
        let xs: Vec<i32> = (0..n).map(|i| ((i * 7919) % 13) as i32 - 5).collect();
        let mut want = Vec::with_capacity(n);
        for chunk in xs.chunks(tile) {
            let scan: Vec<i32> = chunk
                .iter()
                .scan(0i32, |acc, v| {
                    *acc += v;
                    Some(*acc)
                })
                .collect();
            let max = *scan.iter().max().expect("a whole tile");
            want.extend(scan.iter().map(|v| v - max));
        }
        let f = dev.compile(&kernel).expect("compiles");
        let xb = dev.upload(&xs).expect("upload");
        for run in 0..runs {
            let mut yb = dev.alloc_filled(n, 99i32).expect("alloc");
            f.launch_grid(blocks, (&xb, &mut yb)).expect("launch");
            assert_same(
                &yb.to_vec().expect("download"),
                &want,
                &format!("{alg:?}, run {run}"),
            );
        }
        let sim = super::common::race_checker();
        let one_block = |k: &coopgraph::Kernel| super::common::run_xy(&sim, k, &xs[..tile], tile);
        assert_eq!(one_block(&kernel).expect("race-free"), want[..tile]);
        super::common::assert_barriers_necessary(&kernel, one_block);
    }
}

/// Every payload a builder method makes, the aggregate of `scan_with_aggregate` included,
/// names the user's line, not one inside the crate.
#[test]
fn payloads_name_the_callers_line() {
    let mut k = KernelBuilder::new("k").block(64).items_per_thread(2);
    let (x, y) = (k.input::<i32>("x"), k.output::<i32>("y"));
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::direct());
    let s = k.scan(b, &t, Scan::inclusive_sum());
    let (s2, agg) = k.scan_with_aggregate(b, &s, Scan::inclusive_sum());
    let m = k.reduce(b, &s2, Reduce::max().broadcast());
    k.store_to(b, &y, &s2, Store::direct());
    let _ = (agg, m);
    let kernel = k.build().expect("kernel builds");
    for d in &kernel.ir().datas {
        assert_eq!(d.loc.file, file!(), "a payload made at {}", d.loc);
    }
}

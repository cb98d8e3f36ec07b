//! Groups of whole warps (`group_by_warps`): reductions against a CPU fold in blocks of 64 to
//! 1024 threads with and without warps left over (`if_member`), loads and stores of each
//! group's tile, the group's named barriers shown necessary by the race checker, queries, and
//! the verifier's typed errors (scans, exchanges and the group's barrier: `warp_group_scan.rs`,
//! `warp_group_exchange.rs`).

use super::common::{Batch, Rng, assert_same, device, race_checker};
use coopgraph::ir::Algorithm;
use coopgraph::ir::{Expr, Reduce, VerifyErrorKind as K, index};
use coopgraph::planner::SyncScope;
use coopgraph::runtime::{Device, RuntimeError};
use coopgraph::{Error, Kernel, KernelBuilder, Load, Store};

/// How a test reduces.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Sum,
    Max,
    /// The last value in rank order (not commutative).
    Last,
}

fn controls(op: Op) -> Reduce<i64> {
    match op {
        Op::Sum => Reduce::sum(),
        Op::Max => Reduce::max(),
        Op::Last => Reduce::custom(false, |_a, b: Expr<i64>| b),
    }
}

fn fold(op: Op, vals: &[i64]) -> i64 {
    let f = |a: i64, b: i64| match op {
        Op::Sum => a.wrapping_add(b),
        Op::Max => a.max(b),
        Op::Last => b,
    };
    vals.iter().copied().reduce(f).unwrap_or(0)
}

/// A reduction over groups of `warps` warps of a block of `block` threads with `items` items
/// per thread (and a valid count of `valid` ranks with one item): with `broadcast`, every
/// member writes its group's result at its own index; else each group's rank 0 writes it at
/// the group's index. Threads in no group write nothing.
fn reduce_kernel(block: u32, warps: u32, items: u32, op: Op, broadcast: bool) -> Kernel {
    let name = format!("wg_reduce_{block}_{warps}_{items}_{op:?}_{broadcast}");
    let mut k = KernelBuilder::new(&name)
        .block(block)
        .items_per_thread(items);
    let (x, y) = (k.input::<i64>("x"), k.output::<i64>("y"));
    let b = k.this_block();
    let g = b.group_by_warps(warps);
    let t = k.load_from(b, &x, Load::direct());
    k.if_member(&g, |k, g| {
        if broadcast {
            let s = k.reduce(g, &t, controls(op).broadcast());
            k.write(&y, index::thread_rank(), s.item(0));
        } else {
            let s = k.reduce(g, &t, controls(op));
            k.if_(g.thread_rank().eq(0u32), |k| {
                k.write(&y, g.meta_group_rank(), s.item(0));
            });
        }
    });
    k.build().expect("builds")
}

/// What [`reduce_kernel`] writes for input `xs`.
fn expected(block: u32, warps: u32, items: u32, op: Op, broadcast: bool, xs: &[i64]) -> Vec<i64> {
    let (threads, block_warps) = ((warps * 32) as usize, block / 32);
    let groups = (block_warps / warps) as usize;
    let k = items as usize;
    let sums: Vec<i64> = (0..groups)
        .map(|j| fold(op, &xs[j * threads * k..(j + 1) * threads * k]))
        .collect();
    let mut want = vec![0i64; block as usize];
    for (j, &s) in sums.iter().enumerate() {
        if broadcast {
            want[j * threads..(j + 1) * threads].fill(s);
        } else {
            want[j] = s;
        }
    }
    want
}

fn run(dev: &Device, kernel: &Kernel, xs: &[i64], n: usize) -> Result<Vec<i64>, RuntimeError> {
    let xb = dev.upload(xs)?;
    let mut yb = dev.alloc_zeroed::<i64>(n)?;
    dev.compile(kernel)?.launch_grid(1, (&xb, &mut yb))?;
    yb.to_vec()
}

#[test]
fn reductions_match_a_cpu_fold() {
    let mut rng = Rng::new(14);
    let mut batch = Batch::default();
    let cases = [
        (64, 1),
        (64, 2),
        (96, 2),
        (128, 3),
        (160, 2),
        (160, 4),
        (256, 3),
        (320, 4),
        (512, 2),
        (1024, 1),
        (1024, 3),
        (1024, 4),
    ];
    for (block, warps) in cases {
        for (items, op, broadcast) in [
            (1, Op::Sum, true),
            (3, Op::Last, true),
            (2, Op::Max, false),
            (1, Op::Last, false),
        ] {
            let kernel = reduce_kernel(block, warps, items, op, broadcast);
            batch.add(&kernel);
            let xs: Vec<i64> = (0..block * items)
                .map(|_| (rng.next() % 2001) as i64 - 1000)
                .collect();
            let got = run(device(), &kernel, &xs, block as usize).expect("runs");
            let want = expected(block, warps, items, op, broadcast, &xs);
            let what = format!("{block} threads, groups of {warps} warps, {items} items, {op:?}");
            assert_same(&got, &want, &what);
        }
    }
    batch.finish();
}

#[test]
fn valid_counts_limit_each_group() {
    // Groups of 2 warps in a block of 224 (7 warps: warp 6 in no group); each group counts
    // its first 40 ranks.
    let mut k = KernelBuilder::new("wg_valid")
        .block(224)
        .items_per_thread(1);
    let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    let b = k.this_block();
    let g = b.group_by_warps(2);
    let t = k.load_from(b, &x, Load::direct());
    k.if_member(&g, |k, g| {
        let s = k.reduce(g, &t, Reduce::sum().valid_items(40u32).broadcast());
        k.write(&y, index::thread_rank(), s.item(0));
    });
    let kernel = k.build().expect("builds");
    let xs: Vec<u32> = (0..224).collect();
    let xb = device().upload(&xs).expect("uploads");
    let mut yb = device().alloc_zeroed::<u32>(224).expect("allocates");
    (device().compile(&kernel).expect("compiles"))
        .launch_grid(1, (&xb, &mut yb))
        .expect("runs");
    let mut want = vec![0u32; 224];
    for j in 0..3 {
        let s: u32 = (j * 64..j * 64 + 40).sum();
        want[(j * 64) as usize..(j * 64 + 64) as usize].fill(s);
    }
    assert_same(&yb.to_vec().expect("reads"), &want, "valid counts");
}

#[test]
fn loads_and_stores_move_each_groups_tile() {
    // Each group loads its tile (at the group's index past the block's offset), adds its sum
    // to every element, and stores the tile back where it came from; warps in no group touch
    // nothing. Blocks of 4 and 7 warps, groups of 2 and 3, over 3 blocks.
    let mut batch = Batch::default();
    for (block, warps) in [(128u32, 2u32), (224, 2), (224, 3), (256, 3)] {
        for alg in [Algorithm::Direct, Algorithm::Striped, Algorithm::Vectorize] {
            let items = 3u32;
            let name = format!("wg_copy_{block}_{warps}_{alg:?}");
            let mut k = KernelBuilder::new(&name)
                .block(block)
                .items_per_thread(items);
            let (x, y) = (k.input::<i32>("x"), k.output::<i32>("y"));
            let g = k.this_block().group_by_warps(warps);
            k.if_member(&g, |k, g| {
                let t = k.load_from(g, &x, Load::direct().algorithm(alg));
                let s = k.reduce(g, &t, Reduce::sum().broadcast());
                let total = s.item(0);
                let r = k.map(&t, move |v| v + total.clone());
                k.store_to(g, &y, &r, Store::default().algorithm(alg));
            });
            let kernel = k.build().expect("builds");
            batch.add(&kernel);
            let tile = (block * items) as usize;
            let n = 3 * tile;
            let xs: Vec<i32> = (0..n as i32).map(|i| i * 5 % 97 - 40).collect();
            let xb = device().upload(&xs).expect("uploads");
            let mut yb = device().alloc_filled(n, -1i32).expect("allocates");
            (device().compile(&kernel).expect("compiles"))
                .launch_grid(3, (&xb, &mut yb))
                .expect("runs");
            let group = (warps * 32 * items) as usize;
            let groups = (block / 32 / warps) as usize;
            let mut want = vec![-1i32; n];
            for b in 0..3 {
                for j in 0..groups {
                    let at = b * tile + j * group;
                    let s: i32 = xs[at..at + group].iter().sum();
                    for p in at..at + group {
                        want[p] = xs[p] + s;
                    }
                }
            }
            let what = format!("{block} threads, groups of {warps} warps, {alg:?}");
            assert_same(&yb.to_vec().expect("reads"), &want, &what);
        }
    }
    batch.finish();
}

#[test]
fn a_store_counts_each_groups_own_valid_items() {
    // Groups of 2 warps in a block of 192 store the first 70 of their 128 elements.
    let mut k = KernelBuilder::new("wg_store_valid")
        .block(192)
        .items_per_thread(2);
    let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    let g = k.this_block().group_by_warps(2);
    let t = k.load_from(g, &x, Load::direct());
    k.store_to(g, &y, &t, Store::default().valid_items(70u32));
    let kernel = k.build().expect("builds");
    let xs: Vec<u32> = (1..=384).collect();
    let xb = device().upload(&xs).expect("uploads");
    let mut yb = device().alloc_zeroed::<u32>(384).expect("allocates");
    (device().compile(&kernel).expect("compiles"))
        .launch_grid(1, (&xb, &mut yb))
        .expect("runs");
    let want: Vec<u32> = (0..384u32)
        .map(|p| if p % 128 < 70 { p + 1 } else { 0 })
        .collect();
    assert_same(&yb.to_vec().expect("reads"), &want, "group valid counts");
}

#[test]
fn queries_of_a_group_of_warps() {
    // Groups of 3 warps in a block of 320 (10 warps: warp 9 in no group).
    let mut k = KernelBuilder::new("wg_queries").block(320);
    let y = k.output::<u32>("y");
    let g = k.this_block().group_by_warps(3);
    assert_eq!(g.static_num_threads(), Some(96));
    assert_eq!(k.this_block().static_num_threads(), None);
    let packed = g.thread_rank()
        + g.num_threads() * 100u32
        + g.warp_rank() * 100_000u32
        + g.num_warps() * 1_000_000u32
        + g.meta_group_rank() * 10_000_000u32
        + g.meta_group_size() * 100_000_000u32;
    k.write(&y, index::thread_rank(), packed);
    let kernel = k.build().expect("builds");
    let mut yb = device().alloc_zeroed::<u32>(320).expect("allocates");
    (device().compile(&kernel).expect("compiles"))
        .launch_grid(1, (&mut yb,))
        .expect("runs");
    let want: Vec<u32> = (0..320u32)
        .map(|t| {
            let warp = t / 32;
            t % 96
                + 9_600
                + warp % 3 * 100_000
                + 3_000_000
                + (warp / 3).min(3) * 10_000_000
                + 300_000_000
        })
        .collect();
    assert_same(&yb.to_vec().expect("reads"), &want, "queries");
}

/// Every planned barrier of `kernel` is needed: without it the race checker reports a race.
fn barriers_needed(kernel: &Kernel, xs: &[i64], n: usize) {
    let races = race_checker();
    run(&races, kernel, xs, n).expect("race-free with its barriers");
    assert!(!kernel.plan().barriers().is_empty(), "{}", kernel.name());
    for (i, b) in kernel.plan().barriers().iter().enumerate() {
        let without = kernel.without_barrier(i).expect("barrier exists");
        match run(&races, &without, xs, n) {
            Err(RuntimeError::Sim(coopgraph::sim::SimError::Race(_))) => {}
            other => panic!("{}: barrier {b:?} is not needed: {other:?}", kernel.name()),
        }
    }
}

#[test]
fn group_barriers_are_named_and_needed() {
    for (block, warps) in [(128, 2), (160, 2), (320, 3), (256, 4)] {
        let kernel = reduce_kernel(block, warps, 1, Op::Sum, true);
        let scopes: Vec<SyncScope> = kernel.plan().barriers().iter().map(|b| b.scope).collect();
        assert!(
            scopes.iter().all(|s| *s == SyncScope::Warps { warps }),
            "{block}/{warps}: {scopes:?}"
        );
        let ptx = kernel.ptx(device().arch()).expect("emits");
        let count = format!(", {};", warps * 32);
        assert!(ptx.contains("bar.sync 1") && ptx.contains(&count), "{ptx}");
        let xs: Vec<i64> = (0..block as i64).collect();
        barriers_needed(&kernel, &xs, block as usize);
    }
}

#[test]
fn a_reduction_in_a_loop_orders_its_iterations() {
    // The same group reduces twice in a loop: the next iteration's writes wait for the
    // previous iteration's reads, within each group.
    let mut k = KernelBuilder::new("wg_loop").block(192).items_per_thread(1);
    let (x, y) = (k.input::<i64>("x"), k.output::<i64>("y"));
    let b = k.this_block();
    let g = b.group_by_warps(2);
    let t = k.load_from(b, &x, Load::direct());
    let acc = k.var(Expr::<i64>::lit(0));
    k.for_range(0u32, 3u32, |k, _| {
        let s = k.reduce(g, &t, Reduce::sum().broadcast());
        k.set(&acc, acc.get() + s.item(0));
    });
    k.write(&y, index::thread_rank(), acc.get());
    let kernel = k.build().expect("builds");
    let xs: Vec<i64> = (0..192).collect();
    let got = run(device(), &kernel, &xs, 192).expect("runs");
    let want: Vec<i64> = (0..192)
        .map(|t| 3 * (t / 64 * 64..t / 64 * 64 + 64).sum::<i64>())
        .collect();
    assert_same(&got, &want, "loop");
    barriers_needed(&kernel, &xs, 192);
}

/// The verifier's errors as (kind, line).
pub(super) fn errors(k: KernelBuilder) -> Vec<(K, u32)> {
    match k.build() {
        Err(Error::Verify(e)) => e.errors.into_iter().map(|e| (e.kind, e.loc.line)).collect(),
        Err(other) => panic!("expected verifier errors, got {other}"),
        Ok(_) => panic!("expected verifier errors, the kernel built"),
    }
}

fn has(errs: &[(K, u32)], line: u32, want: K) {
    assert!(
        errs.iter().any(|(k, l)| *l == line && *k == want),
        "no {want:?} at line {line}: {errs:?}"
    );
}

/// A kernel of `block` threads whose body `f` gets a loaded payload.
fn kernel_with(
    block: u32,
    f: impl FnOnce(&mut KernelBuilder, &coopgraph::ir::ThreadData<u32>, &coopgraph::ir::Output<u32>),
) -> KernelBuilder {
    let mut k = KernelBuilder::new("wg_err")
        .block(block)
        .items_per_thread(1);
    let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::direct());
    f(&mut k, &t, &y);
    k
}

#[test]
fn more_groups_than_named_barriers_is_an_error() {
    let mut line = 0;
    let k = kernel_with(1024, |k, t, y| {
        let (g, l) = (k.this_block().group_by_warps(2), line!());
        line = l;
        let s = k.reduce(g, t, Reduce::sum().broadcast());
        k.write(y, index::thread_rank(), s.item(0));
    });
    let want = K::TooManyWarpGroupBarriers {
        needed: 16,
        max: 15,
    };
    has(&errors(k), line, want);
}

#[test]
fn a_collective_outside_if_member_is_an_error() {
    let mut line = 0;
    let k = kernel_with(160, |k, t, y| {
        let g = k.this_block().group_by_warps(2);
        let (s, l) = (k.reduce(g, t, Reduce::sum().broadcast()), line!());
        line = l;
        k.write(y, index::thread_rank(), s.item(0));
    });
    let want = K::CollectiveOutsideMembership {
        warps: 2,
        block_warps: 5,
    };
    has(&errors(k), line, want);
}

#[test]
fn control_that_varies_within_the_group_is_an_error() {
    let mut line = 0;
    let k = kernel_with(256, |k, t, y| {
        let g = k.this_block().group_by_warps(2);
        let l = line!() + 1;
        k.if_(index::warp_rank().eq(1u32), |k| {
            let s = k.reduce(g, t, Reduce::sum().broadcast());
            k.write(y, index::thread_rank(), s.item(0));
        });
        line = l;
    });
    let errs = errors(k);
    assert!(
        errs.iter().any(|(k, _)| matches!(
            k,
            K::NonUniformCollective { condition, .. } if condition.line == line
        )),
        "{errs:?}"
    );
}

#[test]
fn control_uniform_over_each_group_is_fine() {
    // `warp_rank / 2` is the same over each group of 2 (and of 4) warps, but not of 3.
    for (warps, ok) in [(2, true), (4, true), (3, false)] {
        let k = kernel_with(384, |k, t, y| {
            let g = k.this_block().group_by_warps(warps);
            k.if_member(&g, |k, g| {
                k.if_((index::warp_rank() / 4u32).lt(2u32), |k| {
                    let s = k.reduce(g, t, Reduce::sum().broadcast());
                    k.write(y, index::thread_rank(), s.item(0));
                });
            });
        });
        match k.build() {
            Ok(kernel) => {
                assert!(ok, "groups of {warps}: built");
                let xs: Vec<u32> = (0..384).collect();
                let xb = device().upload(&xs).expect("uploads");
                let mut yb = device().alloc_zeroed::<u32>(384).expect("allocates");
                (device().compile(&kernel).expect("compiles"))
                    .launch_grid(1, (&xb, &mut yb))
                    .expect("runs");
                let got = yb.to_vec().expect("reads");
                let n = (warps * 32) as usize;
                for (i, &v) in got[..256].iter().enumerate() {
                    let j = i / n;
                    let s: u32 = (j * n..j * n + n).map(|v| v as u32).sum();
                    assert_eq!(v, s, "groups of {warps}, thread {i}");
                }
                assert!(got[256..].iter().all(|&v| v == 0));
            }
            Err(Error::Verify(e)) => {
                assert!(!ok, "groups of {warps}: {e}");
                assert!(
                    (e.errors.iter()).any(|e| matches!(e.kind, K::NonUniformCollective { .. })),
                    "{e}"
                );
            }
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn bad_groups_of_warps_are_errors() {
    let mut lines = [0; 3];
    let k = kernel_with(256, |k, t, y| {
        let b = k.this_block();
        let (none, l0) = (b.group_by_warps(0), line!());
        let (many, l1) = (b.group_by_warps(9), line!());
        let (nested, l2) = (
            coopgraph::ir::Group::from(k.this_warp()).group_by_warps(2),
            line!(),
        );
        lines = [l0, l1, l2];
        for g in [none, many, nested] {
            k.if_member(&g, |k, g| {
                let s = k.reduce(g, t, Reduce::sum().broadcast());
                k.write(y, index::thread_rank(), s.item(0));
            });
        }
    });
    let errs = errors(k);
    let size = |warps| K::WarpGroupSize {
        warps,
        block_warps: 8,
    };
    has(&errs, lines[0], size(0));
    has(&errs, lines[1], size(9));
    // Reported once per size: the nested group is a group of no warps too.
    assert!(errs.iter().any(|(k, _)| *k == size(0)), "{errs:?}");
}

#[test]
fn a_partial_warp_joins_no_group() {
    let mut line = 0;
    let k = kernel_with(100, |k, t, y| {
        let (g, l) = (k.this_block().group_by_warps(1), line!());
        line = l;
        k.if_member(&g, |k, g| {
            let s = k.reduce(g, t, Reduce::sum().broadcast());
            k.write(y, index::thread_rank(), s.item(0));
        });
    });
    has(&errors(k), line, K::WarpOpInPartialWarpBlock { block: 100 });
}

#[test]
fn ops_groups_of_warps_do_not_run_are_errors() {
    // Neighbour ops, scatters, transposing loads, time-sliced exchanges, and lane collectives
    // other than the barrier.
    let mut lines = [0; 5];
    let k = kernel_with(128, |k, t, y| {
        let g = k.this_block().group_by_warps(2);
        let l0 = line!() + 1;
        k.adjacent_difference_left(g, t, coopgraph::ir::Difference::subtract());
        let l1 = line!() + 1;
        let v = k.shfl(g, t.item(0), 0u32);
        k.write(y, index::thread_rank(), v);
        let z = k.input::<u32>("z");
        let l2 = line!() + 1;
        k.load_from(g, &z, Load::direct().algorithm(Algorithm::Transpose));
        let l3 = line!() + 1;
        k.scatter(
            g,
            t,
            t,
            coopgraph::ir::Scatter::to(coopgraph::ir::Arrangement::Blocked),
        );
        let via = coopgraph::ir::ExchangeVia::TimeSliced;
        let striped = coopgraph::ir::Arrangement::Striped { threads: 32 };
        let l4 = line!() + 1;
        k.exchange(g, t, striped, via);
        lines = [l0, l1, l2, l3, l4];
    });
    let errs = errors(k);
    has(&errs, lines[0], K::NotForWarpGroups { op: "neighbor" });
    has(&errs, lines[2], K::NotForWarpGroups { op: "load" });
    has(&errs, lines[3], K::NotForWarpGroups { op: "scatter" });
    has(&errs, lines[4], K::NotForWarpGroups { op: "exchange" });
    assert!(
        errs.iter()
            .any(|(k, l)| *l == lines[1] && matches!(k, K::LaneOpNotOnTile { .. })),
        "{errs:?}"
    );
}

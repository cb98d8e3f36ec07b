//! Every shared-memory collective followed by every other, in both orders, at several block
//! sizes: the kernel is race-free on the simulator with every checker on, agrees with a CPU
//! reference on the default device, and every barrier the planner placed is necessary.
//!
//! Each stage maps a blocked `i32` payload of the whole block tile to another (so that any
//! stage can follow any other); the reference applies the same stages to the tile in position
//! order.

use super::common::{Batch, Rng, compiled, device};
use coopgraph::ir::{
    Algorithm, Arrangement, Difference, ExchangeVia, Expr, Flags, Reduce, ReduceAlgorithm, Scan,
    ScanAlgorithm, Scatter, Shuffle, ThreadData, index,
};
use coopgraph::runtime::{Device, RuntimeError};
use coopgraph::{Kernel, KernelBuilder, Load, Store};

/// A scan's extra output.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Extra {
    /// Only the scan.
    Plain,
    /// An exclusive scan with its aggregate.
    Aggregate,
    /// An inclusive scan seeded by a prefix callback.
    Prefix,
}

/// An explicit exchange to striped order and back, with a map between.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Via {
    /// Striped over the block.
    Block,
    /// Striped over warps.
    Warps,
    /// Striped over warps, time-sliced.
    TimeSliced,
    /// Striped over groups of this many threads.
    Groups(u32),
}

/// A neighbour op.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Nb {
    Left,
    Right,
    Heads,
    Tails,
    /// With the edge value.
    Up,
    /// Plus the item shifted out at the front, which every rank gets.
    Down,
    Offset,
    Rotate,
}

/// One step of a test kernel.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Stage {
    /// A block sum, broadcast or at rank 0.
    Reduce(ReduceAlgorithm, bool),
    /// A block sum scan.
    Scan(ScanAlgorithm, Extra),
    Exchange(Via),
    Neighbor(Nb),
    /// Each item to the mirrored tile position, read back in blocked order (or striped over
    /// the block, and exchanged back).
    Scatter(bool),
    /// The items at odd positions to the front (flagged; each goes to another thread's
    /// position), the rest of the tile the hole value.
    Compact,
    /// Through a user shared array (with the user's barrier): each thread takes its
    /// successor's items.
    Array,
    /// Adds the input tile, loaded with a transposing algorithm.
    Load(Algorithm),
    /// Stores the payload with a transposing algorithm to its own output, unchanged.
    Store(Algorithm),
}

const EDGE: i32 = 1000;

/// Every stage.
fn stages() -> Vec<Stage> {
    let mut v = Vec::new();
    for a in [
        ReduceAlgorithm::WarpReductions,
        ReduceAlgorithm::Raking,
        ReduceAlgorithm::RakingCommutativeOnly,
    ] {
        v.push(Stage::Reduce(a, true));
        v.push(Stage::Reduce(a, false));
    }
    for a in [
        ScanAlgorithm::WarpScans,
        ScanAlgorithm::Raking,
        ScanAlgorithm::RakingMemoize,
    ] {
        for e in [Extra::Plain, Extra::Aggregate, Extra::Prefix] {
            v.push(Stage::Scan(a, e));
        }
    }
    for via in [Via::Block, Via::Warps, Via::TimeSliced] {
        v.push(Stage::Exchange(via));
    }
    for nb in [
        Nb::Left,
        Nb::Right,
        Nb::Heads,
        Nb::Tails,
        Nb::Up,
        Nb::Down,
        Nb::Offset,
        Nb::Rotate,
    ] {
        v.push(Stage::Neighbor(nb));
    }
    v.push(Stage::Scatter(false));
    v.push(Stage::Scatter(true));
    v.push(Stage::Compact);
    v.push(Stage::Array);
    for a in [
        Algorithm::Transpose,
        Algorithm::WarpTranspose,
        Algorithm::WarpTransposeTimesliced,
    ] {
        v.push(Stage::Load(a));
        v.push(Stage::Store(a));
    }
    v
}

/// Whether a stage exists at this block shape (the verifier rejects the others, as
/// `small_blocks` checks).
fn allowed(stage: Stage, block: u32, items: u32) -> bool {
    let warp_collective = if block <= 32 {
        block.is_power_of_two()
    } else {
        block.is_multiple_of(32)
    };
    match stage {
        Stage::Reduce(..) | Stage::Scan(..) => warp_collective,
        Stage::Neighbor(Nb::Offset | Nb::Rotate) => items == 1 && (block > 32 || warp_collective),
        Stage::Neighbor(_) => block > 32 || warp_collective,
        Stage::Exchange(Via::Groups(g)) => block.is_multiple_of(g),
        Stage::Exchange(Via::Warps | Via::TimeSliced)
        | Stage::Load(Algorithm::WarpTranspose | Algorithm::WarpTransposeTimesliced)
        | Stage::Store(Algorithm::WarpTranspose | Algorithm::WarpTransposeTimesliced) => {
            block.is_multiple_of(32)
        }
        _ => true,
    }
}

/// Records `stage` on `cur`; `z` is the output a store stage writes.
fn record(
    k: &mut KernelBuilder,
    stage: Stage,
    cur: &ThreadData<i32>,
    x: &coopgraph::ir::Input<i32>,
    z: &coopgraph::ir::Output<i32>,
) -> ThreadData<i32> {
    let b = k.this_block();
    let block = k.block_tile() / cur.items();
    let items = cur.items();
    match stage {
        Stage::Reduce(alg, true) => {
            let r = k.reduce(b, cur, Reduce::sum().algorithm(alg).broadcast());
            k.map(cur, move |v| v - r.item(0))
        }
        Stage::Reduce(alg, false) => {
            let r = k.reduce(b, cur, Reduce::sum().algorithm(alg));
            let out = k.map(cur, |v| v);
            k.if_(b.rank().eq(0u32), |k| {
                k.set_item(&out, 0, out.item(0) + r.item(0));
            });
            out
        }
        Stage::Scan(alg, Extra::Plain) => k.scan(b, cur, Scan::inclusive_sum().algorithm(alg)),
        Stage::Scan(alg, Extra::Aggregate) => {
            let (s, agg) = k.scan_with_aggregate(b, cur, Scan::exclusive_sum().algorithm(alg));
            k.map(&s, move |v| v - agg.item(0))
        }
        Stage::Scan(alg, Extra::Prefix) => {
            k.scan_with_prefix(b, cur, Scan::inclusive_sum().algorithm(alg), |_, total| {
                total + 3
            })
        }
        Stage::Exchange(via) => {
            let (to, how) = match via {
                Via::Block => (Arrangement::Striped { threads: block }, ExchangeVia::Shared),
                Via::Warps => (Arrangement::Striped { threads: 32 }, ExchangeVia::Shared),
                Via::TimeSliced => (
                    Arrangement::Striped { threads: 32 },
                    ExchangeVia::TimeSliced,
                ),
                Via::Groups(g) => (Arrangement::Striped { threads: g }, ExchangeVia::Shared),
            };
            let s = k.exchange(b, cur, to, how);
            let m = k.map(&s, |v| v + index::item().cast::<i32>());
            k.exchange(b, &m, Arrangement::Blocked, how)
        }
        Stage::Neighbor(nb) => match nb {
            Nb::Left => k.adjacent_difference_left(b, cur, Difference::subtract()),
            Nb::Right => k.adjacent_difference_right(b, cur, Difference::subtract()),
            Nb::Heads | Nb::Tails => {
                let f = if nb == Nb::Heads {
                    k.flag_heads(b, cur, Flags::inequality())
                } else {
                    k.flag_tails(b, cur, Flags::inequality())
                };
                k.map2(cur, &f, |v, f| v + f.cast::<i32>())
            }
            Nb::Up => k.shuffle_up(b, cur, Shuffle::new().edge(Expr::lit(EDGE))),
            Nb::Down => {
                let (r, first) = k.shuffle_down_with_prefix(b, cur, Shuffle::new());
                k.map(&r, move |v| v * 2 + first.item(0))
            }
            Nb::Offset => k.shuffle_offset(b, cur, 1),
            Nb::Rotate => k.shuffle_rotate(b, cur, -1),
        },
        Stage::Scatter(striped) => {
            let last = block * items - 1;
            let ranks = k.fill(Expr::lit(last) - (index::thread_rank() * items + index::item()));
            if striped {
                let s = k.scatter(b, cur, &ranks, Scatter::striped(block).holes(EDGE));
                k.exchange(b, &s, Arrangement::Blocked, ExchangeVia::Shared)
            } else {
                k.scatter(b, cur, &ranks, Scatter::blocked().holes(EDGE))
            }
        }
        Stage::Compact => {
            let p = index::thread_rank() * items + index::item();
            let ranks = k.fill(p.clone() / 2u32);
            let keep = k.fill((p % 2u32).eq(1u32).select(1u32, 0u32));
            k.scatter(b, cur, &ranks, Scatter::blocked().flags(&keep).holes(EDGE))
        }
        Stage::Array => {
            let arr = k.shared_array::<i32>(block * items);
            for i in 0..items {
                k.shared_write(&arr, index::thread_rank() * items + i, cur.item(i));
            }
            k.sync_block();
            let next = (index::thread_rank() + 1u32) % block;
            k.map(cur, move |_| arr.read(next.clone() * items + index::item()))
        }
        Stage::Load(alg) => {
            let t = k.load_from(b, x, Load::direct().algorithm(alg));
            k.map2(cur, &t, |a, b| a + b)
        }
        Stage::Store(alg) => {
            k.store_to(b, z, cur, Store::default().algorithm(alg));
            *cur
        }
    }
}

/// Applies `stage` to the tile `cur` (position order); also returns what a store stage
/// writes.
fn reference(
    stage: Stage,
    cur: &[i32],
    xs: &[i32],
    block: usize,
    items: usize,
) -> (Vec<i32>, Option<Vec<i32>>) {
    let n = cur.len();
    let total = cur.iter().fold(0i32, |a, &v| a.wrapping_add(v));
    let inclusive: Vec<i32> = cur
        .iter()
        .scan(0i32, |acc, &v| {
            *acc = acc.wrapping_add(v);
            Some(*acc)
        })
        .collect();
    let prev = |p: usize| (p > 0).then(|| cur[p - 1]);
    let next = |p: usize| (p + 1 < n).then(|| cur[p + 1]);
    let out: Vec<i32> = match stage {
        Stage::Reduce(_, true) => cur.iter().map(|v| v.wrapping_sub(total)).collect(),
        Stage::Reduce(_, false) => {
            let mut v = cur.to_vec();
            v[0] = v[0].wrapping_add(total);
            v
        }
        Stage::Scan(_, Extra::Plain) => inclusive,
        Stage::Scan(_, Extra::Aggregate) => (0..n)
            .map(|p| inclusive[p].wrapping_sub(cur[p]).wrapping_sub(total))
            .collect(),
        Stage::Scan(_, Extra::Prefix) => inclusive
            .iter()
            .map(|v| v.wrapping_add(total.wrapping_add(3)))
            .collect(),
        Stage::Exchange(via) => {
            let g = match via {
                Via::Block => block,
                Via::Groups(g) => g as usize,
                Via::Warps | Via::TimeSliced => 32,
            };
            (0..n)
                .map(|p| cur[p].wrapping_add(((p % (g * items)) / g) as i32))
                .collect()
        }
        Stage::Neighbor(nb) => (0..n)
            .map(|p| {
                let x = cur[p];
                match nb {
                    Nb::Left => prev(p).map_or(x, |q| x.wrapping_sub(q)),
                    Nb::Right => next(p).map_or(x, |q| x.wrapping_sub(q)),
                    Nb::Heads => x + prev(p).map_or(1, |q| (q != x) as i32),
                    Nb::Tails => x + next(p).map_or(1, |q| (q != x) as i32),
                    Nb::Up => prev(p).unwrap_or(EDGE),
                    Nb::Down => next(p).unwrap_or(x).wrapping_mul(2).wrapping_add(cur[0]),
                    Nb::Offset => next(p).unwrap_or(x),
                    Nb::Rotate => cur[(p + n - 1) % n],
                }
            })
            .collect(),
        Stage::Scatter(_) => (0..n).map(|p| cur[n - 1 - p]).collect(),
        Stage::Compact => (0..n)
            .map(|q| if 2 * q + 1 < n { cur[2 * q + 1] } else { EDGE })
            .collect(),
        Stage::Array => (0..n)
            .map(|p| cur[((p / items + 1) % block) * items + p % items])
            .collect(),
        Stage::Load(_) => (0..n).map(|p| cur[p].wrapping_add(xs[p])).collect(),
        Stage::Store(_) => return (cur.to_vec(), Some(cur.to_vec())),
    };
    (out, None)
}

/// The kernel `load x -> stages -> store y`; store stages write `z0`, `z1`.
fn build(block: u32, items: u32, stages: &[Stage]) -> Kernel {
    try_build(block, items, stages).unwrap_or_else(|e| panic!("{stages:?}: {e}"))
}

/// [`build`], or the error building it gives.
fn try_build(block: u32, items: u32, stages: &[Stage]) -> Result<Kernel, coopgraph::Error> {
    let name = format!("pair_{block}x{items}_{stages:?}")
        .replace(|c: char| !c.is_ascii_alphanumeric(), "_");
    let mut k = KernelBuilder::new(name.clone())
        .block(block)
        .items_per_thread(items);
    let x = k.input::<i32>("x");
    let y = k.output::<i32>("y");
    let zs = [k.output::<i32>("z0"), k.output::<i32>("z1")];
    let b = k.this_block();
    let mut cur = k.load_from(b, &x, Load::direct());
    for (i, &s) in stages.iter().enumerate() {
        cur = record(&mut k, s, &cur, &x, &zs[i]);
    }
    k.store_to(b, &y, &cur, Store::direct());
    k.build()
}

/// Runs a pair kernel on one block: `(y, z0, z1)`.
fn run(dev: &Device, kernel: &Kernel, xs: &[i32]) -> Result<[Vec<i32>; 3], RuntimeError> {
    let f = compiled(dev, kernel)?;
    let x = dev.upload(xs)?;
    let mut y = dev.alloc_filled(xs.len(), -7i32)?;
    let mut z0 = dev.alloc_filled(xs.len(), -7i32)?;
    let mut z1 = dev.alloc_filled(xs.len(), -7i32)?;
    f.launch_grid(1, (&x, &mut y, &mut z0, &mut z1))?;
    Ok([y.to_vec()?, z0.to_vec()?, z1.to_vec()?])
}

/// The CPU result of `stages` on `xs`: `(y, z0, z1)`.
fn expected(stages: &[Stage], xs: &[i32], block: usize, items: usize) -> [Vec<i32>; 3] {
    let mut cur = xs.to_vec();
    let mut stored = [vec![-7; xs.len()], vec![-7; xs.len()]];
    for (i, &s) in stages.iter().enumerate() {
        let (next, z) = reference(s, &cur, xs, block, items);
        if let Some(z) = z {
            stored[i] = z;
        }
        cur = next;
    }
    let [z0, z1] = stored;
    [cur, z0, z1]
}

/// Checks one kernel: correct and race-free on the simulator with every checker, correct on
/// the default device, and each planned barrier needed (the race checker reports a race
/// without it).
fn check(kernel: &Kernel, xs: &[i32], want: &[Vec<i32>; 3]) -> Result<(), String> {
    let sim = Device::sim();
    let races = super::common::race_checker();
    let same = |got: [Vec<i32>; 3], on: &str| -> Result<(), String> {
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            if let Some(p) = (0..w.len()).find(|&p| g[p] != w[p]) {
                return Err(format!(
                    "output {i} on the {on}: element {p} is {}, expected {}",
                    g[p], w[p]
                ));
            }
        }
        Ok(())
    };
    same(
        run(&sim, kernel, xs).map_err(|e| format!("{e}"))?,
        "simulator",
    )?;
    if !matches!(device().backend(), coopgraph::runtime::Backend::Sim) {
        same(
            run(device(), kernel, xs).map_err(|e| format!("{e}"))?,
            "device",
        )?;
    }
    for (i, b) in kernel.plan().barriers().iter().enumerate() {
        let without = kernel.without_barrier(i).expect("barrier exists");
        match run(&races, &without, xs) {
            Err(RuntimeError::Sim(coopgraph::sim::SimError::Race(_))) => {}
            other => {
                let what = match other {
                    Ok(_) => "no race".to_string(),
                    Err(e) => format!("{e}"),
                };
                return Err(format!("barrier {b:?} is not needed: {what}"));
            }
        }
    }
    Ok(())
}

/// Builds and checks every ordered pair of the stages allowed at `block` x `items`.
fn check_pairs(block: u32, items: u32) {
    let mut batch = Batch::default();
    let all: Vec<Stage> = stages()
        .into_iter()
        .filter(|&s| allowed(s, block, items))
        .collect();
    let n = (block * items) as usize;
    let mut rng = Rng::new(u64::from(block * 100 + items));
    let xs: Vec<i32> = (0..n).map(|_| (rng.next() % 7) as i32 - 3).collect();
    let mut failures = Vec::new();
    for &a in &all {
        for &b in &all {
            let pair = [a, b];
            let kernel = build(block, items, &pair);
            batch.add(&kernel);
            let want = expected(&pair, &xs, block as usize, items as usize);
            if let Err(e) = check(&kernel, &xs, &want) {
                failures.push(format!("{pair:?}: {e}"));
            }
        }
        batch.finish();
    }
    assert!(
        failures.is_empty(),
        "{} pairs at {block}x{items} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn pairs_64x2() {
    check_pairs(64, 2);
}

#[test]
fn pairs_96x3() {
    check_pairs(96, 3);
}

/// A block that is not a whole number of warps: no block reductions or scans, no warp
/// exchanges.
#[test]
fn pairs_48x2() {
    check_pairs(48, 2);
}

/// One item per thread: exchanges need no shared memory; offset and rotate shuffles exist.
#[test]
fn pairs_128x1() {
    check_pairs(128, 1);
}

/// One warp: reductions, scans and neighbour ops through shuffles beside shared-memory ones.
#[test]
fn pairs_32x3() {
    check_pairs(32, 3);
}

/// Less than a warp, and not a power of two: exchanges within one partial warp.
#[test]
fn pairs_24x2() {
    check_pairs(24, 2);
}

/// Every shared-memory op alone at every block size from 1 to 64 threads (1, 2 and 3 items,
/// and exchanges striped over groups of 3, 5, 6 and 12): where the verifier accepts it, it is
/// race-free with every checker, correct, and needs each of its barriers (the member masks of
/// warp barriers name the lanes the block has); where not, the error is the typed one for a
/// block the op cannot use.
#[test]
fn every_op_at_every_block_size() {
    let mut all = stages();
    all.extend([3, 5, 6, 12].map(|g| Stage::Exchange(Via::Groups(g))));
    let mut failures = Vec::new();
    for block in 1..=64u32 {
        for items in 1..=3u32 {
            let mut batch = Batch::default();
            let n = (block * items) as usize;
            let mut rng = Rng::new(u64::from(block * 10 + items));
            let xs: Vec<i32> = (0..n).map(|_| (rng.next() % 7) as i32 - 3).collect();
            for &stage in &all {
                let what = format!("{stage:?} at {block}x{items}");
                match (
                    try_build(block, items, &[stage]),
                    allowed(stage, block, items),
                ) {
                    (Ok(kernel), true) => {
                        batch.add(&kernel);
                        let want = expected(&[stage], &xs, block as usize, items as usize);
                        if let Err(e) = check(&kernel, &xs, &want) {
                            failures.push(format!("{what}: {e}"));
                        }
                    }
                    (Err(coopgraph::Error::Verify(e)), false)
                        if e.errors.iter().all(|e| {
                            matches!(
                                e.kind,
                                coopgraph::ir::VerifyErrorKind::WarpOpInPartialWarpBlock { .. }
                                    | coopgraph::ir::VerifyErrorKind::StripedGroup { .. }
                                    | coopgraph::ir::VerifyErrorKind::ItemsMismatch { .. }
                            ) && e.loc.file.ends_with("pairs.rs")
                        }) => {}
                    (Ok(_), false) => failures.push(format!("{what}: builds, but should not")),
                    (Err(e), _) => {
                        let e = e.to_string();
                        let line = e.lines().take(2).collect::<Vec<_>>().join(" ");
                        failures.push(format!("{what}: {line}"));
                    }
                }
            }
            batch.finish();
        }
    }
    assert!(
        failures.is_empty(),
        "{} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// An exchange to (and back from) an arrangement striped over groups of `G` threads: lowered
/// wherever the groups tile the block — with warp barriers where each group lies in one warp
/// (the lanes it has in a smaller block), with the block's barrier where groups cross warps
/// (3 in 96) or span several (64 in 128) — and rejected, naming the line, where they do not.
#[test]
fn exchanges_striped_over_any_group_that_tiles_the_block() {
    let mut failures = Vec::new();
    let mut batch = Batch::default();
    for (block, items) in [(32u32, 3u32), (96, 3), (128, 2), (24, 2), (12, 2), (3, 2)] {
        let n = (block * items) as usize;
        let xs: Vec<i32> = (0..n as i32).map(|i| i * 3 - 7).collect();
        for g in [1u32, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 48, 64, 0, 200] {
            let stage = Stage::Exchange(Via::Groups(g));
            let what = format!("striped over {g} at {block}x{items}");
            match try_build(block, items, &[stage]) {
                Ok(kernel) if g > 0 && block % g == 0 => {
                    batch.add(&kernel);
                    let want = expected(&[stage], &xs, block as usize, items as usize);
                    if let Err(e) = check(&kernel, &xs, &want) {
                        failures.push(format!("{what}: {e}"));
                    }
                }
                Err(coopgraph::Error::Verify(e)) if g == 0 || block % g != 0 => {
                    let named = e.errors.iter().all(|e| {
                        e.kind == coopgraph::ir::VerifyErrorKind::StripedGroup { threads: g, block }
                            && e.loc.file.ends_with("pairs.rs")
                    });
                    if !named {
                        failures.push(format!("{what}: {e}"));
                    }
                }
                Ok(_) => failures.push(format!("{what}: builds, but should not")),
                Err(e) => failures.push(format!("{what}: {e}")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Exchanges whose barriers some threads of a group would never reach are rejected, naming
/// the line: groups across warps (and the turns of a time-sliced exchange) under a branch
/// that differs between warps, and groups within a warp under one that differs inside a
/// group.
#[test]
fn exchanges_under_branches_their_groups_do_not_agree_on() {
    use coopgraph::Error;
    use coopgraph::planner::PlanError;
    let line = std::cell::Cell::new(0);
    let kernel = |block: u32, f: &dyn Fn(&mut KernelBuilder, &ThreadData<i32>)| {
        let mut k = KernelBuilder::new("k").block(block).items_per_thread(2);
        let x = k.input::<i32>("x");
        let b = k.this_block();
        let t = k.load_from(b, &x, Load::direct());
        f(&mut k, &t);
        k.build()
    };
    // Groups of 3 threads cross warps: the block's barrier, under a branch on the warp.
    let got = kernel(96, &|k, t| {
        let w = k.this_warp();
        line.set(line!() + 2);
        k.if_(index::warp_rank().eq(0u32), |k| {
            k.exchange(
                w,
                t,
                Arrangement::Striped { threads: 3 },
                ExchangeVia::Shared,
            );
        });
    });
    match got {
        Err(Error::Plan(PlanError::BlockExchangeInDivergentCode { loc, .. })) => {
            assert_eq!(loc.line, line.get())
        }
        other => panic!("groups of 3 across warps: {other:?}"),
    }
    // The warps of a time-sliced exchange take turns between block barriers.
    let got = kernel(64, &|k, t| {
        let w = k.this_warp();
        line.set(line!() + 2);
        k.if_(index::warp_rank().eq(0u32), |k| {
            k.exchange(
                w,
                t,
                Arrangement::Striped { threads: 32 },
                ExchangeVia::TimeSliced,
            );
        });
    });
    match got {
        Err(Error::Plan(PlanError::BlockExchangeInDivergentCode { loc, .. })) => {
            assert_eq!(loc.line, line.get())
        }
        other => panic!("time-sliced under a warp branch: {other:?}"),
    }
    // Groups of 8 lanes under a branch that agrees only across 4.
    let got = kernel(64, &|k, t| {
        let quad = k.this_warp().group_by(4);
        let octet = k.this_warp().group_by(8);
        let s = k.exchange(
            octet,
            t,
            Arrangement::Striped { threads: 8 },
            ExchangeVia::Shared,
        );
        line.set(line!() + 2);
        k.if_((index::thread_rank() / 4u32).eq(0u32), |k| {
            k.exchange(quad, &s, Arrangement::Blocked, ExchangeVia::Shared);
        });
    });
    match got {
        Err(Error::Plan(PlanError::GroupExchangeInDivergentCode { loc, threads, .. })) => {
            assert_eq!((loc.line, threads), (line.get(), 8))
        }
        other => panic!("groups of 8 under a branch of 4: {other:?}"),
    }
}

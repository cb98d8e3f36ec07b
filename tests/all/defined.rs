//! Where values are defined: a reduction without broadcast leaves its result at each group's
//! rank 0 only, a scatter without a hole value leaves holes. The verifier rejects every use
//! that would read such a value where it is not (naming the use's line and the producer's),
//! and accepts the legitimate ones, which run here on the default device against a CPU
//! reference and are assembled by ptxas for each arch.

use super::common::{Batch, assert_same, device};
use coopgraph::ir::{
    DefinedAt, Difference, ExchangeVia, Reduce, Scan, Scatter, Shuffle, VerifyErrorKind as K, index,
};
use coopgraph::{Error, Kernel, KernelBuilder, Load, Store};

const BLOCK: u32 = 64;

/// The verifier's errors as (kind, line) pairs; panics if the kernel builds.
fn errors(k: KernelBuilder) -> Vec<(K, u32)> {
    match k.build() {
        Err(Error::Verify(e)) => {
            for err in &e.errors {
                assert!(e.listing.contains(&err.to_string()), "{}", e.listing);
            }
            e.errors.into_iter().map(|e| (e.kind, e.loc.line)).collect()
        }
        Err(other) => panic!("expected verifier errors, got {other}"),
        Ok(_) => panic!("expected verifier errors, the kernel built"),
    }
}

/// Asserts that the only error is a read at `line` of a value defined at `defined`, made so at
/// line `producer`.
fn partly_defined(k: KernelBuilder, line: u32, defined: DefinedAt, producer: u32) {
    let errs = errors(k);
    assert!(
        matches!(
            errs.as_slice(),
            [(K::PartlyDefinedRead { defined: d, producer: p, .. }, l)]
                if *l == line && *d == defined && p.line == producer
        ),
        "expected one partly-defined read at line {line} of a value made at {producer}: {errs:?}"
    );
}

/// A block of `BLOCK` threads, one item each, with `x` loaded.
fn kernel(name: &str) -> (KernelBuilder, coopgraph::ir::ThreadData<i32>) {
    let mut k = KernelBuilder::new(name).block(BLOCK).items_per_thread(1);
    let x = k.input::<i32>("x");
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::direct());
    (k, t)
}

const AT_BLOCK_RANK_ZERO: DefinedAt = DefinedAt::RankZero { threads: BLOCK };

#[test]
fn reduction_stored_by_every_rank() {
    let (mut k, t) = kernel("k");
    let y = k.output::<i32>("y");
    let b = k.this_block();
    let (r, made) = (k.reduce(b, &t, Reduce::sum()), line!());
    let line = line!() + 1;
    k.store_to(b, &y, &r, Store::direct().offset(0u32));
    partly_defined(k, line, AT_BLOCK_RANK_ZERO, made);
}

#[test]
fn reduction_mapped_into_a_value_stored_by_every_rank() {
    let (mut k, t) = kernel("k");
    let y = k.output::<i32>("y");
    let b = k.this_block();
    let (r, made) = (k.reduce(b, &t, Reduce::sum()), line!());
    let m = k.map(&t, move |v| v - r.item(0));
    let copy = k.thread_data::<i32>();
    k.assign(&copy, &m);
    let (_, line) = (k.store_to(b, &y, &copy, Store::direct()), line!());
    partly_defined(k, line, AT_BLOCK_RANK_ZERO, made);
}

/// Each collective, neighbour op and scatter that takes the rank-0 result as its input.
#[test]
fn reduction_fed_to_another_collective() {
    type Use = fn(&mut KernelBuilder, &coopgraph::ir::ThreadData<i32>) -> u32;
    let uses: [Use; 7] = [
        |k, r| {
            let b = k.this_block();
            (k.reduce(b, r, Reduce::max().broadcast()), line!()).1
        },
        |k, r| {
            let w = k.this_warp();
            (k.reduce(w, r, Reduce::sum()), line!()).1
        },
        |k, r| {
            let b = k.this_block();
            (k.scan(b, r, Scan::inclusive_sum()), line!()).1
        },
        |k, r| {
            let b = k.this_block();
            let to = coopgraph::ir::Arrangement::Striped { threads: 32 };
            (k.exchange(b, r, to, ExchangeVia::Shared), line!()).1
        },
        |k, r| {
            let b = k.this_block();
            (k.shuffle_up(b, r, Shuffle::new()), line!()).1
        },
        |k, r| {
            let (b, d) = (k.this_block(), Difference::subtract());
            (k.adjacent_difference_left(b, r, d), line!()).1
        },
        |k, r| {
            let b = k.this_block();
            let ranks = k.fill(index::thread_rank());
            (k.scatter(b, r, &ranks, Scatter::blocked()), line!()).1
        },
    ];
    for (i, f) in uses.into_iter().enumerate() {
        let (mut k, t) = kernel(&format!("k{i}"));
        let b = k.this_block();
        let (r, made) = (k.reduce(b, &t, Reduce::sum()), line!());
        let line = f(&mut k, &r);
        partly_defined(k, line, AT_BLOCK_RANK_ZERO, made);
    }
}

/// A condition, a loop bound, a scatter's ranks, a shared array's index or value: every
/// thread that evaluates them needs the value.
#[test]
fn reduction_observed_by_every_rank() {
    type Use = fn(&mut KernelBuilder, &coopgraph::ir::ThreadData<u32>) -> u32;
    let uses: [Use; 5] = [
        |k, r| (k.if_(r.item(0).gt(3u32), |_| {}), line!()).1,
        |k, r| (k.for_range(0u32, r.item(0), |_, _| {}), line!()).1,
        |k, r| {
            let b = k.this_block();
            (k.scatter(b, r, r, Scatter::blocked().holes(0)), line!()).1
        },
        |k, r| {
            let arr = k.shared_array::<u32>(BLOCK);
            let line = line!() + 1;
            k.shared_write(&arr, index::thread_rank(), r.item(0));
            line
        },
        |k, r| {
            // Even inside a value: the index picks the shared memory touched.
            let arr = k.shared_array::<u32>(BLOCK);
            let b = k.this_block();
            let (m, line) = (k.fill(arr.read(r.item(0))), line!());
            k.if_(b.rank().eq(0u32), |k| k.shared_write(&arr, 0u32, m.item(0)));
            line
        },
    ];
    for (i, f) in uses.into_iter().enumerate() {
        let mut k = KernelBuilder::new(format!("k{i}"))
            .block(BLOCK)
            .items_per_thread(1);
        let x = k.input::<u32>("x");
        let b = k.this_block();
        let t = k.load_from(b, &x, Load::direct());
        let (r, made) = (k.reduce(b, &t, Reduce::sum()), line!());
        let line = f(&mut k, &r);
        partly_defined(k, line, AT_BLOCK_RANK_ZERO, made);
    }
}

/// An accumulator that takes a rank-0 result in a loop holds a value only at rank 0 from the
/// second iteration on: a store of it at the top of the body is a read of that value.
#[test]
fn reduction_accumulated_across_iterations() {
    let (mut k, t) = kernel("k");
    let y = k.output::<i32>("y");
    let b = k.this_block();
    let acc = k.fill(0i32);
    let mut lines = (0, 0);
    k.for_range(0u32, 4u32, |k, i| {
        lines.0 = line!() + 1;
        k.store_to(b, &y, &acc, Store::direct().offset(i * BLOCK));
        let (r, made) = (k.reduce(b, &t, Reduce::sum()), line!());
        let next = k.map(&acc, move |v| v + r.item(0));
        k.assign(&acc, &next);
        lines.1 = made;
    });
    partly_defined(k, lines.0, AT_BLOCK_RANK_ZERO, lines.1);
}

/// Under `rank == 0 && more`, rank 0 may not take the branch: a slot written only there holds
/// no value at rank 0 afterwards. With the rank test alone it does, and rank 0 shares it.
#[test]
fn rank_test_joined_with_another_condition() {
    let mut batch = Batch::default();
    let xs = xs();
    for joined in [true, false] {
        let (mut k, t) = kernel("rank_0_shares_its_sum");
        let y = k.output::<i32>("y");
        let b = k.this_block();
        let r = k.reduce(b, &t, Reduce::sum());
        let out = k.thread_data::<i32>();
        let cond = if joined {
            b.rank().eq(0u32) & t.item(0).gt(0i32)
        } else {
            b.rank().eq(0u32)
        };
        k.if_(cond, |k| k.set_item(&out, 0, r.item(0)));
        let arr = k.shared_array::<i32>(1);
        let mut line = 0;
        k.if_(b.rank().eq(0u32), |k| {
            line = line!() + 1;
            k.shared_write(&arr, 0u32, out.item(0));
        });
        k.sync_block();
        let all = k.fill(arr.read(0u32));
        k.store_to(b, &y, &all, Store::direct());
        if joined {
            let errs = errors(k);
            assert!(
                matches!(errs.as_slice(), [(K::UninitializedRead { .. }, l)] if *l == line),
                "{errs:?}"
            );
        } else {
            let got = run(&mut batch, &build(k), &xs, BLOCK as usize);
            let total = xs.iter().fold(0i32, |a, &v| a.wrapping_add(v));
            assert_same(&got, &vec![total; BLOCK as usize], "rank 0's sum shared");
        }
    }
}

#[test]
fn scatter_without_holes_read_everywhere() {
    let (mut k, t) = kernel("k");
    let y = k.output::<i32>("y");
    let b = k.this_block();
    let ranks = k.fill(index::thread_rank() / 2u32);
    let (s, made) = (k.scatter(b, &t, &ranks, Scatter::blocked()), line!());
    let m = k.map(&s, |v| v * 2);
    let (_, line) = (k.store_to(b, &y, &m, Store::direct()), line!());
    partly_defined(k, line, DefinedAt::Scattered, made);

    let (mut k, t) = kernel("k");
    let b = k.this_block();
    let ranks = k.fill(index::thread_rank() / 2u32);
    let (s, made) = (k.scatter(b, &t, &ranks, Scatter::blocked()), line!());
    let (_, line) = (k.reduce(b, &s, Reduce::sum().broadcast()), line!());
    partly_defined(k, line, DefinedAt::Scattered, made);
}

/// Runs a kernel taking `(x, y)` over one block and returns `y` of `out` elements.
fn run(batch: &mut Batch, kernel: &Kernel, xs: &[i32], out: usize) -> Vec<i32> {
    batch.add(kernel);
    super::common::run_xy(device(), kernel, xs, out).unwrap_or_else(|e| panic!("{e}"))
}

fn build(k: KernelBuilder) -> Kernel {
    k.build().unwrap_or_else(|e| panic!("{e}"))
}

fn xs() -> Vec<i32> {
    (0..BLOCK as i32).map(|i| i * 7 % 23 - 11).collect()
}

/// The legitimate uses of a rank-0 result: stored by rank 0 alone (per group, with a valid
/// count of 1), broadcast through a shared array written under `rank == 0`, and merged into
/// a value defined everywhere (`out = 0; if rank == 0 { out = r }`); a loop's accumulator at
/// rank 0, stored by rank 0.
#[test]
fn rank_zero_results_used_where_they_are_defined() {
    let mut batch = Batch::default();
    let xs = xs();
    let sum = |r: std::ops::Range<usize>| xs[r].iter().fold(0i32, |a, &v| a.wrapping_add(v));
    let n = BLOCK as usize;

    // Each logical warp of 8 stores its sum at its tile's first position.
    let (mut k, t) = kernel("warp_sums_by_rank_0");
    let y = k.output::<i32>("y");
    let g = k.this_warp().group_by(8);
    let r = k.reduce(g, &t, Reduce::sum());
    k.store_to(g, &y, &r, Store::direct().offset(0u32).valid_items(1u32));
    let got = run(&mut batch, &build(k), &xs, n);
    let want: Vec<i32> = (0..n)
        .map(|p| if p % 8 == 0 { sum(p..p + 8) } else { 0 })
        .collect();
    assert_same(&got, &want, "warp sums stored by rank 0");

    // The block sum, through a shared array, to every thread.
    let (mut k, t) = kernel("block_sum_through_shared");
    let y = k.output::<i32>("y");
    let b = k.this_block();
    let r = k.reduce(b, &t, Reduce::sum());
    let arr = k.shared_array::<i32>(1);
    k.if_(b.rank().eq(0u32), |k| k.shared_write(&arr, 0u32, r.item(0)));
    k.sync_block();
    let u = k.map(&t, move |v| v - arr.read(0u32));
    k.store_to(b, &y, &u, Store::direct());
    let got = run(&mut batch, &build(k), &xs, n);
    let total = sum(0..n);
    let want: Vec<i32> = xs.iter().map(|v| v.wrapping_sub(total)).collect();
    assert_same(&got, &want, "block sum through a shared array");

    // Rank 0 of each logical warp of 16 takes its sum, the others 0: defined everywhere.
    let (mut k, t) = kernel("warp_sums_merged");
    let y = k.output::<i32>("y");
    let (b, g) = (k.this_block(), k.this_warp().group_by(16));
    let r = k.reduce(g, &t, Reduce::sum());
    let out = k.fill(0i32);
    k.if_(g.rank().eq(0u32), |k| k.assign(&out, &r));
    k.store_to(b, &y, &out, Store::direct());
    let got = run(&mut batch, &build(k), &xs, n);
    let want: Vec<i32> = (0..n)
        .map(|p| if p % 16 == 0 { sum(p..p + 16) } else { 0 })
        .collect();
    assert_same(&got, &want, "warp sums merged with 0");

    // Four block sums of shifted inputs, accumulated at rank 0 and stored by it.
    let (mut k, t) = kernel("block_sums_accumulated");
    let y = k.output::<i32>("y");
    let b = k.this_block();
    let acc = k.fill(0i32);
    k.for_range(0u32, 4u32, |k, i| {
        let shift = i.cast::<i32>();
        let shifted = k.map(&t, move |v| v + shift);
        let r = k.reduce(b, &shifted, Reduce::sum());
        let next = k.map(&acc, move |v| v + r.item(0));
        k.assign(&acc, &next);
    });
    k.store_to(b, &y, &acc, Store::direct().offset(0u32).valid_items(1u32));
    let got = run(&mut batch, &build(k), &xs, 2);
    let want = (0..4).fold(0i32, |a, i| a.wrapping_add(total + i * BLOCK as i32));
    assert_same(&got, &[want, 0], "block sums accumulated at rank 0");
}

/// A scatter's holes: a compaction read back whole with a hole value, or without one up to a
/// valid count, also after an exchange (the holes move with their positions).
#[test]
fn scatter_holes_bounded_or_filled() {
    let mut batch = Batch::default();
    let xs = xs();
    let n = BLOCK as usize;
    // The items at odd positions to the front.
    let compact =
        |k: &mut KernelBuilder, t: &coopgraph::ir::ThreadData<i32>, holes: Option<i32>| {
            let b = k.this_block();
            let p = index::thread_rank();
            let ranks = k.fill(p.clone() / 2u32);
            let keep = k.fill((p % 2u32).eq(1u32).select(1u32, 0u32));
            let controls = Scatter::blocked().flags(&keep);
            let controls = match holes {
                Some(h) => controls.holes(h),
                None => controls,
            };
            k.scatter(b, t, &ranks, controls)
        };
    let kept: Vec<i32> = (0..n / 2).map(|q| xs[2 * q + 1]).collect();

    let (mut k, t) = kernel("compact_with_holes");
    let y = k.output::<i32>("y");
    let b = k.this_block();
    let s = compact(&mut k, &t, Some(-5));
    k.store_to(b, &y, &s, Store::direct());
    let got = run(&mut batch, &build(k), &xs, n);
    let mut want = kept.clone();
    want.resize(n, -5);
    assert_same(&got, &want, "compaction with a hole value");

    let (mut k, t) = kernel("compact_exchanged_up_to_count");
    let y = k.output::<i32>("y");
    let b = k.this_block();
    let s = compact(&mut k, &t, None);
    let m = k.map(&s, |v| v * 3);
    let striped = k.exchange(
        b,
        &m,
        coopgraph::ir::Arrangement::Striped { threads: 32 },
        ExchangeVia::Shared,
    );
    k.store_to(b, &y, &striped, Store::striped().valid_items(BLOCK / 2));
    let got = run(&mut batch, &build(k), &xs, n);
    let mut want: Vec<i32> = kept.iter().map(|v| v.wrapping_mul(3)).collect();
    want.resize(n, 0);
    assert_same(&got, &want, "compaction up to its count, exchanged");
}

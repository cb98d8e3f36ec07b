//! Tile methods (shuffles, votes, matches, tile barriers, `invoke_one`, group queries) over
//! tiles of every width, in blocks whose size the width does not divide, for every dtype,
//! against a CPU model of the tile; and the verifier's reports on misuse.

use super::common::{Batch, assert_same, device};
use coopgraph::ir::ops::LaneOp;
use coopgraph::ir::{Atomic, Element, Expr, Group, VerifyErrorKind, index};
use coopgraph::runtime::DeviceElement;
use coopgraph::{Error, KernelBuilder};

/// (block, width) pairs: whole tiles and a partial last tile, partial warps, one-lane tiles.
const SHAPES: [(u32, u32); 7] = [
    (32, 32),
    (100, 8),
    (40, 16),
    (7, 4),
    (64, 1),
    (96, 2),
    (50, 32),
];

/// Thread `t`'s tile: (first thread, threads in it, rank in it).
fn tile_of(t: u32, block: u32, w: u32) -> (u32, u32, u32) {
    let start = t / w * w;
    (start, w.min(block - start), t - start)
}

/// What a shuffle gives thread `t` (see `LaneOp`).
fn shuffled<T: Copy>(op: LaneOp, vals: &[T], t: u32, block: u32, w: u32, lane: u32) -> T {
    let (start, n, r) = tile_of(t, block, w);
    let src = match op {
        LaneOp::Shfl => Some(lane % w),
        LaneOp::ShflUp => r.checked_sub(lane.min(w)),
        LaneOp::ShflDown => Some(r + lane.min(w)),
        LaneOp::ShflXor => Some(r ^ (lane % w)),
        _ => unreachable!(),
    };
    match src {
        Some(j) if j < n => vals[(start + j) as usize],
        _ => vals[t as usize],
    }
}

/// Every shuffle with in-range and out-of-range lanes, for one dtype, at every shape.
fn shuffles<T: Element + DeviceElement>(batch: &mut Batch) {
    let dev = device();
    let lanes = [0u32, 1, 3, 5, 31, 33];
    let ops = [
        LaneOp::Shfl,
        LaneOp::ShflUp,
        LaneOp::ShflDown,
        LaneOp::ShflXor,
    ];
    for (block, w) in SHAPES {
        let name = format!("shfl_{}_{block}_{w}", T::DTYPE);
        let mut k = KernelBuilder::new(name.clone()).block(block);
        let (x, y) = (k.input::<T>("x"), k.output::<T>("y"));
        let tile = k.this_warp().group_by(w);
        let t = index::thread_rank();
        let v = x.at(&t);
        let mut slot = 0u32;
        for op in ops {
            for lane in lanes {
                let got = match op {
                    LaneOp::Shfl => k.shfl(tile, v.clone(), lane),
                    LaneOp::ShflUp => k.shfl_up(tile, v.clone(), lane),
                    LaneOp::ShflDown => k.shfl_down(tile, v.clone(), lane),
                    _ => k.shfl_xor(tile, v.clone(), lane),
                };
                k.write(&y, t.clone() + slot * block, got);
                slot += 1;
            }
        }
        // A lane that varies by thread: every thread reads its mirror in the tile.
        let mirror = k.shfl(tile, v.clone(), (w - 1) - tile.thread_rank());
        k.write(&y, t.clone() + slot * block, mirror);
        let kernel = k.build().unwrap_or_else(|e| panic!("{name}: {e}"));
        batch.add(&kernel);
        let xs: Vec<T> = (0..block)
            .map(|i| T::cast_from_i64(i64::from(i) * 37 - 500))
            .collect();
        let xb = dev.upload(&xs).expect("upload");
        let mut yb = dev
            .alloc_zeroed::<T>(((slot + 1) * block) as usize)
            .expect("alloc");
        dev.compile(&kernel)
            .and_then(|f| f.launch_grid(1, (&xb, &mut yb)))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut want = Vec::new();
        for op in ops {
            for lane in lanes {
                want.extend((0..block).map(|t| shuffled(op, &xs, t, block, w, lane)));
            }
        }
        want.extend((0..block).map(|t| {
            let r = t % w;
            shuffled(LaneOp::Shfl, &xs, t, block, w, (w - 1) - r)
        }));
        assert_same(&yb.to_vec().expect("download"), &want, &name);
    }
}

#[test]
fn shuffles_of_every_dtype_stay_in_their_tile() {
    every_dtype!(shuffles);
}

/// Votes, ballots and matches at every shape, against the tile model.
#[test]
fn votes_and_matches_count_the_tile_only() {
    let dev = device();
    let mut batch = Batch::default();
    for (block, w) in SHAPES {
        let name = format!("votes_{block}_{w}");
        let mut k = KernelBuilder::new(name.clone()).block(block);
        let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
        let tile = k.this_warp().group_by(w);
        let t = index::thread_rank();
        let v = x.at(&t);
        let p = (v.clone() % 3u32).eq(0u32);
        let outs: [Expr<u32>; 7] = [
            k.any(tile, p.clone()).select(1u32, 0u32),
            k.all(tile, p.clone()).select(1u32, 0u32),
            k.ballot(tile, p),
            k.match_any(tile, v.clone() % 4u32),
            k.match_all(tile, v.clone() / 1000u32),
            k.match_any(tile, (v.clone() % 2u32).cast::<u64>() << 40u32),
            k.match_all(tile, (v.clone() % 5u32).cast::<f64>()),
        ];
        for (i, o) in outs.into_iter().enumerate() {
            k.write(&y, t.clone() + i as u32 * block, o);
        }
        let kernel = k.build().unwrap_or_else(|e| panic!("{name}: {e}"));
        batch.add(&kernel);
        // Mostly multiples of 3 early on, so some tiles are all-true.
        let xs: Vec<u32> = (0..block)
            .map(|i| if i < 12 { i * 3 } else { i * 7 + 1 })
            .collect();
        let xb = dev.upload(&xs).expect("upload");
        let mut yb = dev
            .alloc_zeroed::<u32>((7 * block) as usize)
            .expect("alloc");
        dev.compile(&kernel)
            .and_then(|f| f.launch_grid(1, (&xb, &mut yb)))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let bits = |t: u32, f: &dyn Fn(u32) -> bool| -> u32 {
            let (start, n, _) = tile_of(t, block, w);
            (0..n).filter(|&j| f(start + j)).map(|j| 1u32 << j).sum()
        };
        let all_mask = |t: u32| {
            let n = tile_of(t, block, w).1;
            if n == 32 { u32::MAX } else { (1u32 << n) - 1 }
        };
        let x = |i: u32| xs[i as usize];
        let mut want = Vec::new();
        let pred = |i: u32| x(i) % 3 == 0;
        want.extend((0..block).map(|t| u32::from(bits(t, &pred) != 0)));
        want.extend((0..block).map(|t| u32::from(bits(t, &pred) == all_mask(t))));
        want.extend((0..block).map(|t| bits(t, &pred)));
        want.extend((0..block).map(|t| bits(t, &|j| x(j) % 4 == x(t) % 4)));
        let same_all = |t: u32, key: &dyn Fn(u32) -> u32| {
            if bits(t, &|j| key(j) == key(t)) == all_mask(t) {
                all_mask(t)
            } else {
                0
            }
        };
        want.extend((0..block).map(|t| same_all(t, &|j| x(j) / 1000)));
        want.extend((0..block).map(|t| bits(t, &|j| x(j) % 2 == x(t) % 2)));
        want.extend((0..block).map(|t| same_all(t, &|j| x(j) % 5)));
        assert_same(&yb.to_vec().expect("download"), &want, &name);
    }
}

/// Group queries and `invoke_one` (tiles by shuffle, the block through shared memory), and a
/// tile barrier ordering shared accesses within tiles.
#[test]
fn queries_invoke_one_and_tile_barriers() {
    let dev = device();
    let mut batch = Batch::default();
    for (block, w) in SHAPES {
        let name = format!("queries_{block}_{w}");
        let mut k = KernelBuilder::new(name.clone()).block(block);
        let (y, counter) = (k.output::<u32>("y"), k.output::<u32>("counter"));
        let tile = k.this_warp().group_by(w);
        let b: Group = k.this_block();
        let t = index::thread_rank();
        let queries = tile.thread_rank()
            + tile.num_threads() * 100u32
            + tile.meta_group_rank() * 10_000u32
            + tile.meta_group_size() * 1_000_000u32;
        k.write(&y, t.clone(), queries);
        // Each tile's rank 0 takes a ticket; the block's rank 0 another.
        let ticket = k.invoke_one(tile, |k| k.atomic(&counter, 0u32, Atomic::add(1u32)));
        let block_ticket = k.invoke_one(b, |k| k.atomic(&counter, 1u32, Atomic::add(7u32)));
        k.write(&y, t.clone() + block, ticket);
        k.write(
            &y,
            t.clone() + 2 * block,
            block_ticket + b.num_threads() * 10u32,
        );
        // Rotate each tile's ranks by one through shared memory.
        let s = k.shared_array::<u32>(block);
        k.shared_write(&s, &t, t.clone() * 3u32);
        k.sync(tile);
        let start = tile.meta_group_rank() * w;
        let next = start + (tile.thread_rank() + 1u32) % tile.num_threads();
        k.write(&y, t.clone() + 3 * block, s.read(next));
        let kernel = k.build().unwrap_or_else(|e| panic!("{name}: {e}"));
        batch.add(&kernel);
        let mut yb = dev
            .alloc_zeroed::<u32>((4 * block) as usize)
            .expect("alloc");
        let mut cb = dev.alloc_zeroed::<u32>(2).expect("alloc");
        dev.compile(&kernel)
            .and_then(|f| f.launch_grid(1, (&mut yb, &mut cb)))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let ys = yb.to_vec().expect("download");
        let tiles = block.div_ceil(w);
        assert_eq!(cb.to_vec().expect("download"), [tiles, 7], "{name}");
        let (q, tickets) = (
            &ys[..block as usize],
            &ys[block as usize..2 * block as usize],
        );
        let mut seen = Vec::new();
        for t in 0..block {
            let (start, n, r) = tile_of(t, block, w);
            let i = t as usize;
            assert_eq!(
                q[i],
                r + n * 100 + (t / w) * 10_000 + tiles * 1_000_000,
                "{name} {t}"
            );
            // Every thread of a tile has its tile's ticket.
            assert_eq!(tickets[i], tickets[start as usize], "{name} {t}");
            if r == 0 {
                seen.push(tickets[i]);
            }
            assert_eq!(ys[i + 2 * block as usize], block * 10, "{name} {t}");
            assert_eq!(
                ys[i + 3 * block as usize],
                (start + (r + 1) % n) * 3,
                "{name} {t}"
            );
        }
        seen.sort();
        assert_eq!(seen, (0..tiles).collect::<Vec<u32>>(), "{name}");
    }
}

/// A vote's result is the same across its tile, so a tile collective may run under it; a
/// shuffle under a condition that varies within the tile, a lane op of the block, and a vote
/// of the tile under a lane-varying branch are reported at the user's line.
#[test]
fn the_verifier_knows_who_runs_a_tile_op() {
    // Allowed: a shuffle under the tile's vote.
    let mut k = KernelBuilder::new("under_vote").block(64);
    let y = k.output::<u32>("y");
    let tile = k.this_warp().group_by(8);
    let t = index::thread_rank();
    let some = k.any(tile, t.clone().eq(5u32));
    k.if_(some, |k| {
        let v = k.shfl_down(tile, t.clone(), 1u32);
        k.write(&y, t.clone(), v);
    });
    let kernel = k.build().expect("a vote is uniform over its tile");
    let mut yb = device().alloc_zeroed::<u32>(64).expect("alloc");
    device()
        .compile(&kernel)
        .and_then(|f| f.launch_grid(1, (&mut yb,)))
        .expect("runs");
    let want: Vec<u32> = (0..64)
        .map(|t| if t < 8 { (t + 1).min(7) } else { 0 })
        .collect();
    assert_eq!(yb.to_vec().expect("download"), want);

    // A tile wider than the block is the block: in a block of 3, a condition uniform over the
    // block holds a warp's shuffle, one that varies by thread does not.
    for (cond, ok) in [
        (index::block_index().lt(9u32), true),
        (t.clone().lt(1u32), false),
    ] {
        let mut k = KernelBuilder::new("three_threads").block(3);
        let y = k.output::<u32>("y");
        let warp = k.this_warp();
        k.if_(cond, |k| {
            let v = k.shfl(warp, index::thread_rank() + 5u32, 2u32);
            k.write(&y, index::thread_rank(), v);
        });
        match k.build() {
            Ok(kernel) if ok => {
                let mut yb = device().alloc_zeroed::<u32>(3).expect("alloc");
                device()
                    .compile(&kernel)
                    .and_then(|f| f.launch_grid(1, (&mut yb,)))
                    .expect("runs");
                assert_eq!(yb.to_vec().expect("download"), [7, 7, 7]);
            }
            Err(Error::Verify(_)) if !ok => {}
            other => panic!("block of 3, expected {ok}: {other:?}"),
        }
    }

    let errors = |k: KernelBuilder| match k.build() {
        Err(Error::Verify(e)) => e
            .errors
            .iter()
            .map(|e| (e.kind.clone(), e.loc.line))
            .collect::<Vec<_>>(),
        other => panic!("expected verify errors, got {other:?}"),
    };
    // A shuffle under a branch on the lane.
    let mut k = KernelBuilder::new("divergent").block(64);
    let y = k.output::<u32>("y");
    let tile = k.this_warp().group_by(8);
    let t = index::thread_rank();
    let line = line!() + 2;
    k.if_(t.clone().lt(3u32), |k| {
        let v = k.shfl(tile, t.clone(), 0u32);
        k.write(&y, t.clone(), v);
    });
    let found = errors(k);
    assert!(
        found
            .iter()
            .any(|(e, l)| matches!(e, VerifyErrorKind::NonUniformCollective { .. }) && *l == line),
        "{found:?}"
    );
    // A branch uniform over tiles of 8 holds tile ops of 8 but not of 16.
    let mut k = KernelBuilder::new("per_tile").block(64);
    let y = k.output::<u32>("y");
    let (t8, t16) = (k.this_warp().group_by(8), k.this_warp().group_by(16));
    let t = index::thread_rank();
    let line = line!() + 3;
    k.if_((t.clone() / 8u32).eq(2u32), |k| {
        let a = k.shfl(t8, t.clone(), 1u32);
        let b = k.shfl(t16, t.clone(), 1u32);
        k.write(&y, t.clone(), a + b);
    });
    let found = errors(k);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        matches!(found[0].0, VerifyErrorKind::NonUniformCollective { .. }) && found[0].1 == line
    );
    // Lane ops of the block.
    let mut k = KernelBuilder::new("block_lanes").block(64);
    let y = k.output::<u32>("y");
    let b = k.this_block();
    let line = line!() + 1;
    let v = k.shfl(b, index::thread_rank(), 0u32);
    k.write(&y, index::thread_rank(), v);
    let found = errors(k);
    assert!(
        found.iter().any(|(e, l)| matches!(
            e,
            VerifyErrorKind::LaneOpNotOnTile {
                op: LaneOp::Shfl,
                ..
            }
        ) && *l == line),
        "{found:?}"
    );
}

/// Per warp, the threads of `set(t)` in lane order (the partition a thread belongs to).
fn members(block: u32, t: u32, same: &dyn Fn(u32, u32) -> bool) -> Vec<u32> {
    let w0 = t / 32 * 32;
    (w0..(w0 + 32).min(block)).filter(|&u| same(t, u)).collect()
}

/// Coalesced groups in a data-dependent branch, labeled partitions of tiles, and binary
/// partitions of coalesced groups: ranks, sizes, lanes, shuffles by rank, votes and ballots
/// in rank order, against a CPU model of the partitions.
#[test]
fn partitions_rank_their_members_in_lane_order() {
    let dev = device();
    let mut batch = Batch::default();
    for block in [32u32, 40, 64, 100] {
        let name = format!("partitions_{block}");
        let mut k = KernelBuilder::new(name.clone()).block(block);
        let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
        let t = index::thread_rank();
        let v = x.at(&t);
        const SLOTS: u32 = 14;
        let slot = |i: u32| t.clone() + i * block;
        k.if_((v.clone() % 3u32).ne(0u32), |k| {
            let g = k.coalesced_threads();
            k.write(&y, slot(0), g.thread_rank() + g.num_threads() * 100u32);
            k.write(&y, slot(1), g.mask());
            let s0 = k.shfl(g, v.clone(), 0u32);
            let s1 = k.shfl(g, v.clone(), (g.thread_rank() + 2u32) % g.num_threads());
            let s2 = k.shfl_up(g, v.clone(), 1u32);
            let s3 = k.shfl_down(g, v.clone(), 3u32);
            let s4 = k.shfl_xor(g, v.clone(), 1u32);
            for (i, s) in [s0, s1, s2, s3, s4].into_iter().enumerate() {
                k.write(&y, slot(2 + i as u32), s);
            }
            let odd = (v.clone() % 2u32).eq(1u32);
            let ballot = k.ballot(g, odd.clone());
            let any = k.any(g, v.clone().gt(90u32));
            let same = k.match_any(g, v.clone() % 4u32);
            k.write(&y, slot(7), ballot);
            k.write(&y, slot(8), any.select(1u32, 0u32));
            k.write(&y, slot(9), same);
            // The odd and the even members of the coalesced group.
            let b = k.binary_partition(g, odd);
            k.write(&y, slot(10), b.thread_rank() + b.num_threads() * 100u32);
            let lead = k.invoke_one(b, |_| v.clone() * 10u32);
            k.write(&y, slot(11), lead);
        });
        // Labeled partitions of tiles of 8 by key.
        let tile = k.this_warp().group_by(8);
        let key = v.clone() % 3u32;
        let p = k.labeled_partition(tile, key);
        k.write(&y, slot(12), p.mask());
        let s = k.shfl_down(p, v.clone(), 1u32);
        k.write(&y, slot(13), s);
        let kernel = k.build().unwrap_or_else(|e| panic!("{name}: {e}"));
        batch.add(&kernel);
        let xs: Vec<u32> = (0..block).map(|i| (i * 37 + 11) % 101).collect();
        let xb = dev.upload(&xs).expect("upload");
        let mut yb = dev
            .alloc_filled((SLOTS * block) as usize, 7777u32)
            .expect("alloc");
        dev.compile(&kernel)
            .and_then(|f| f.launch_grid(1, (&xb, &mut yb)))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let ys = yb.to_vec().expect("download");
        let x = |i: u32| xs[i as usize];
        let lanes = |m: &[u32]| m.iter().map(|&u| 1u32 << (u % 32)).sum::<u32>();
        let ranks = |m: &[u32], f: &dyn Fn(u32) -> bool| -> u32 {
            (m.iter().enumerate())
                .filter(|&(_, &u)| f(u))
                .map(|(j, _)| 1u32 << j)
                .sum()
        };
        for t in 0..block {
            let at = |i: u32| ys[(t + i * block) as usize];
            let kept = |u: u32| x(u) % 3 != 0;
            if kept(t) {
                let g = members(block, t, &|_, u| kept(u));
                let (n, r) = (g.len(), g.iter().position(|&u| u == t).unwrap());
                let by_rank = |j: Option<usize>| match j {
                    Some(j) if j < n => x(g[j]),
                    _ => x(t),
                };
                let want = [
                    (r + n * 100) as u32,
                    lanes(&g),
                    by_rank(Some(0)),
                    by_rank(Some((r + 2) % n)),
                    by_rank(r.checked_sub(1)),
                    by_rank(Some(r + 3)),
                    by_rank(Some(r ^ 1)),
                    ranks(&g, &|u| x(u) % 2 == 1),
                    u32::from(g.iter().any(|&u| x(u) > 90)),
                    ranks(&g, &|u| x(u) % 4 == x(t) % 4),
                ];
                for (i, w) in want.into_iter().enumerate() {
                    assert_eq!(at(i as u32), w, "{name}: thread {t} slot {i}");
                }
                let b: Vec<u32> = (g.iter().copied())
                    .filter(|&u| x(u) % 2 == x(t) % 2)
                    .collect();
                let rb = b.iter().position(|&u| u == t).unwrap();
                assert_eq!(at(10), (rb + b.len() * 100) as u32, "{name}: thread {t}");
                assert_eq!(at(11), x(b[0]) * 10, "{name}: thread {t}");
            } else {
                for i in 0..12 {
                    assert_eq!(at(i), 7777, "{name}: thread {t} slot {i}");
                }
            }
            let p: Vec<u32> = (t / 8 * 8..(t / 8 * 8 + 8).min(block))
                .filter(|&u| x(u) % 3 == x(t) % 3)
                .collect();
            let rp = p.iter().position(|&u| u == t).unwrap();
            assert_eq!(at(12), lanes(&p), "{name}: thread {t}");
            let down = p.get(rp + 1).map_or(x(t), |&u| x(u));
            assert_eq!(at(13), down, "{name}: thread {t}");
        }
    }
}

/// A partition is used only where its lanes run: not in a branch inside its region, not
/// after an exit, not outside its branch.
#[test]
fn partitions_stay_in_their_region() {
    let out_of_place = |k: KernelBuilder, line: u32| match k.build() {
        Err(Error::Verify(e)) => assert!(
            e.errors.iter().any(|e| {
                matches!(e.kind, VerifyErrorKind::PartitionOutOfPlace { .. }) && e.loc.line == line
            }),
            "{e}"
        ),
        other => panic!("expected PartitionOutOfPlace at line {line}, got {other:?}"),
    };
    let t = || index::thread_rank();
    // In a nested branch.
    let mut k = KernelBuilder::new("nested").block(64);
    let y = k.output::<u32>("y");
    let g = k.coalesced_threads();
    let line = line!() + 2;
    k.if_(t().lt(5u32), |k| {
        let v = k.shfl(g, t(), 0u32);
        k.write(&y, t(), v);
    });
    out_of_place(k, line);
    // After an exit.
    let mut k = KernelBuilder::new("after_exit").block(64);
    let y = k.output::<u32>("y");
    let g = k.coalesced_threads();
    k.return_if(t().eq(3u32));
    let line = line!() + 1;
    let v = k.any(g, t().eq(4u32));
    k.write(&y, t(), v.select(1u32, 0u32));
    out_of_place(k, line);
    // Outside its branch.
    let mut k = KernelBuilder::new("outside").block(64);
    let y = k.output::<u32>("y");
    let mut made = None;
    k.if_(t().lt(40u32), |k| made = Some(k.coalesced_threads()));
    let g = made.expect("made");
    let line = line!() + 1;
    let v = k.ballot(g, t().eq(4u32));
    k.write(&y, t(), v);
    out_of_place(k, line);
}

/// `reduce_lanes` over tiles of every width (partial last tiles included) and over
/// partitions: sums of `i64`, maxima of `f32` and xors, at every thread of each group.
#[test]
fn lane_reductions_cover_tiles_and_partitions() {
    let dev = device();
    let mut batch = Batch::default();
    for (block, w) in SHAPES {
        let name = format!("reduce_lanes_{block}_{w}");
        let mut k = KernelBuilder::new(name.clone()).block(block);
        let (x, y) = (k.input::<i64>("x"), k.output::<i64>("y"));
        let (f, z) = (k.output::<f32>("f"), k.output::<u32>("z"));
        let tile = k.this_warp().group_by(w);
        let t = index::thread_rank();
        let v = x.at(&t);
        let s = k.reduce_lanes(tile, v.clone(), |a, b| a + b);
        k.write(&y, t.clone(), s);
        let m = k.reduce_lanes(tile, v.clone().cast::<f32>() * 0.5f32, |a, b| a.max(b));
        k.write(&f, t.clone(), m);
        // Over the coalesced threads holding an even value: the xor of their ranks' squares.
        k.if_((v.clone() % 2i64).eq(0i64), |k| {
            let g = k.coalesced_threads();
            let r = g.thread_rank();
            let x = k.reduce_lanes(g, r.clone() * r, |a, b| a ^ b);
            k.write(&z, t.clone(), x);
        });
        let kernel = k.build().unwrap_or_else(|e| panic!("{name}: {e}"));
        batch.add(&kernel);
        let xs: Vec<i64> = (0..block as i64).map(|i| (i * 7919) % 1000 - 400).collect();
        let xb = dev.upload(&xs).expect("upload");
        let mut yb = dev.alloc_zeroed::<i64>(block as usize).expect("alloc");
        let mut fb = dev.alloc_zeroed::<f32>(block as usize).expect("alloc");
        let mut zb = dev.alloc_filled(block as usize, 9999u32).expect("alloc");
        dev.compile(&kernel)
            .and_then(|f| f.launch_grid(1, (&xb, &mut yb, &mut fb, &mut zb)))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let (ys, fs, zs) = (
            yb.to_vec().expect("download"),
            fb.to_vec().expect("download"),
            zb.to_vec().expect("download"),
        );
        for t in 0..block {
            let (start, n, _) = tile_of(t, block, w);
            let tile = &xs[start as usize..(start + n) as usize];
            let i = t as usize;
            assert_eq!(ys[i], tile.iter().sum::<i64>(), "{name}: thread {t}");
            let max = tile
                .iter()
                .map(|&v| v as f32 * 0.5)
                .fold(f32::MIN, f32::max);
            assert_eq!(fs[i], max, "{name}: thread {t}");
            if xs[i] % 2 == 0 {
                let g = members(block, t, &|_, u| xs[u as usize] % 2 == 0);
                let want = (0..g.len() as u32).fold(0, |a, r| a ^ (r * r));
                assert_eq!(zs[i], want, "{name}: thread {t}");
            } else {
                assert_eq!(zs[i], 9999, "{name}: thread {t}");
            }
        }
    }
}

//! Adjacent differences, discontinuity flags and block shuffles over blocks, warps and
//! logical warps, against a CPU reference in position order.

use super::common::{Batch, Rng, assemble_all, assert_same, compiled, device, first_collective};
use coopgraph::ir::{Difference, Expr, Flags, Group, GroupKind, Shuffle};
use coopgraph::{Kernel, KernelBuilder, Load, Store};

#[derive(Debug, Clone, Copy)]
enum Case {
    Left(bool),
    Right(bool),
    Heads(bool),
    Tails(bool),
    Up(bool),
    Down(bool),
    Offset(i32),
    Rotate(i32),
}

const EDGE: i32 = 1000;

fn build(name: &str, block: u32, items: u32, g: Group, case: Case) -> Kernel {
    let mut k = KernelBuilder::new(name)
        .block(block)
        .items_per_thread(items);
    let x = k.input::<i32>("x");
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::striped());
    let flags = |on: bool| {
        let f = Flags::inequality();
        if on { f.edge(Expr::lit(EDGE)) } else { f }
    };
    let shuffle = |on: bool| {
        let s = Shuffle::new();
        if on { s.edge(Expr::lit(EDGE)) } else { s }
    };
    match case {
        Case::Heads(e) | Case::Tails(e) => {
            let y = k.output::<u32>("y");
            let f = if matches!(case, Case::Heads(_)) {
                k.flag_heads(g, &t, flags(e))
            } else {
                k.flag_tails(g, &t, flags(e))
            };
            k.store_to(b, &y, &f, Store::direct());
        }
        _ => {
            let y = k.output::<i32>("y");
            let r = match case {
                Case::Left(e) => {
                    let d = Difference::subtract();
                    let d = if e { d.edge(Expr::lit(EDGE)) } else { d };
                    k.adjacent_difference_left(g, &t, d)
                }
                Case::Right(e) => {
                    let d = Difference::custom(|a, b| a * 2 - b);
                    let d = if e { d.edge(Expr::lit(EDGE)) } else { d };
                    k.adjacent_difference_right(g, &t, d)
                }
                Case::Up(e) => k.shuffle_up(g, &t, shuffle(e)),
                Case::Down(e) => k.shuffle_down(g, &t, shuffle(e)),
                Case::Offset(d) => k.shuffle_offset(g, &t, d),
                Case::Rotate(d) => k.shuffle_rotate(g, &t, d),
                _ => unreachable!("flags are handled above"),
            };
            k.store_to(b, &y, &r, Store::direct());
        }
    }
    k.build().unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The expected output at position `p` of a group tile `tile` (blocked, `w` threads).
fn reference(case: Case, tile: &[i32], w: usize, k: usize) -> Vec<i64> {
    let n = tile.len();
    (0..n)
        .map(|p| {
            let prev = (p > 0).then(|| tile[p - 1]);
            let next = (p + 1 < n).then(|| tile[p + 1]);
            let x = tile[p];
            match case {
                Case::Left(e) => match (prev, e) {
                    (Some(q), _) => x.wrapping_sub(q) as i64,
                    (None, true) => x.wrapping_sub(EDGE) as i64,
                    (None, false) => x as i64,
                },
                Case::Right(e) => match (next, e) {
                    (Some(q), _) => x.wrapping_mul(2).wrapping_sub(q) as i64,
                    (None, true) => x.wrapping_mul(2).wrapping_sub(EDGE) as i64,
                    (None, false) => x as i64,
                },
                Case::Heads(e) => match (prev, e) {
                    (Some(q), _) => (q != x) as i64,
                    (None, true) => (EDGE != x) as i64,
                    (None, false) => 1,
                },
                Case::Tails(e) => match (next, e) {
                    (Some(q), _) => (x != q) as i64,
                    (None, true) => (x != EDGE) as i64,
                    (None, false) => 1,
                },
                Case::Up(e) => prev.map_or(if e { EDGE } else { x }, |q| q) as i64,
                Case::Down(e) => next.map_or(if e { EDGE } else { x }, |q| q) as i64,
                Case::Offset(d) => {
                    let r = p / k;
                    let t = r as i64 + d as i64;
                    (if (0..w as i64).contains(&t) {
                        tile[t as usize * k]
                    } else {
                        x
                    }) as i64
                }
                Case::Rotate(d) => {
                    let r = p / k;
                    tile[(r as i64 + d as i64).rem_euclid(w as i64) as usize * k] as i64
                }
            }
        })
        .collect()
}

#[test]
fn neighbours_in_position_order() {
    let mut batch = Batch::default();
    let dev = device();
    let probe = KernelBuilder::new("probe");
    let groups = [
        probe.this_block(),
        probe.this_warp().into(),
        probe.this_warp().group_by(8),
    ];
    let mut case_no = 0u64;
    for g in groups {
        for (block, items) in [(128u32, 3u32), (64, 1)] {
            let cases = [
                Case::Left(false),
                Case::Left(true),
                Case::Right(false),
                Case::Right(true),
                Case::Heads(false),
                Case::Heads(true),
                Case::Tails(false),
                Case::Tails(true),
                Case::Up(false),
                Case::Up(true),
                Case::Down(true),
                Case::Down(false),
                Case::Offset(3),
                Case::Offset(-5),
                Case::Rotate(5),
                Case::Rotate(-3),
            ];
            for case in cases {
                if matches!(case, Case::Offset(_) | Case::Rotate(_)) && items != 1 {
                    continue;
                }
                case_no += 1;
                let name = format!("neighbor_{case_no}");
                let kernel = build(&name, block, items, g, case);
                batch.add(&kernel);
                let f = dev.compile(&kernel).expect("compile");
                let len = (block * items) as usize;
                let mut rng = Rng::new(case_no);
                let xs: Vec<i32> = (0..len).map(|_| (rng.next() % 3) as i32).collect();
                let xb = dev.upload(&xs).expect("upload");
                let w = match g.kind() {
                    GroupKind::Block => block,
                    GroupKind::LogicalWarp { width } => width,
                    GroupKind::Warps { warps } => warps * 32,
                } as usize;
                let k = items as usize;
                let mut want = Vec::new();
                for tile in xs.chunks(w * k) {
                    want.extend(reference(case, tile, w, k));
                }
                let what = format!("{case:?} over {w} threads, {block}x{items}");
                if matches!(case, Case::Heads(_) | Case::Tails(_)) {
                    let mut yb = dev.alloc_filled(len, 7u32).expect("alloc");
                    f.launch_grid(1, (&xb, &mut yb)).expect("launch");
                    let want: Vec<u32> = want.iter().map(|&v| v as u32).collect();
                    assert_same(&yb.to_vec().expect("download"), &want, &what);
                } else {
                    let mut yb = dev.alloc_filled(len, 7i32).expect("alloc");
                    f.launch_grid(1, (&xb, &mut yb)).expect("launch");
                    let want: Vec<i32> = want.iter().map(|&v| v as i32).collect();
                    assert_same(&yb.to_vec().expect("download"), &want, &what);
                }
            }
        }
    }
}

/// Scatters by rank into blocked and striped order: a reversal, and a compaction of the
/// flagged (even) items where the others carry ranks past the tile.
#[test]
fn scatter_by_rank() {
    use coopgraph::ir::{Algorithm, Arrangement, Scatter};
    let mut batch = Batch::default();
    let dev = device();
    let n = 256usize;
    for (case, (to, compact)) in [
        (Arrangement::Blocked, false),
        (Arrangement::Striped { threads: 64 }, false),
        (Arrangement::Blocked, true),
    ]
    .into_iter()
    .enumerate()
    {
        let mut k = KernelBuilder::new(format!("scatter_{case}"))
            .block(64)
            .items_per_thread(4);
        let x = k.input::<f32>("x");
        let rk = k.input::<u32>("ranks");
        let fl = k.input::<u32>("flags");
        let y = k.output::<f32>("y");
        let b = k.this_block();
        let t = k.load_from(b, &x, Load::direct());
        let r = k.load_from(b, &rk, Load::direct());
        let f = k.load_from(b, &fl, Load::direct());
        let mut controls = Scatter::to(to);
        if compact {
            controls = controls.flags(&f);
        }
        // Without a hole value only the compacted half holds values: the store's valid count
        // bounds the read to it.
        let s = k.scatter(b, &t, &r, controls);
        let alg = if to == Arrangement::Blocked {
            Algorithm::Direct
        } else {
            Algorithm::Striped
        };
        // Only the compacted half is defined after a compaction.
        let valid = if compact { n as u32 / 2 } else { n as u32 };
        k.store_to(
            b,
            &y,
            &s,
            Store::default().algorithm(alg).valid_items(valid),
        );
        let kernel = k.build().unwrap_or_else(|e| panic!("{e}"));
        batch.add(&kernel);
        let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let (ranks, flags): (Vec<u32>, Vec<u32>) = if compact {
            (0..n as u32)
                .map(|i| {
                    if i % 2 == 0 {
                        (i / 2, 1)
                    } else {
                        (n as u32 + i, 0)
                    }
                })
                .unzip()
        } else {
            (
                (0..n as u32).map(|i| n as u32 - 1 - i).collect(),
                vec![1; n],
            )
        };
        let f = dev.compile(&kernel).expect("compile");
        let (xb, rb, fb) = (
            dev.upload(&xs).expect("upload"),
            dev.upload(&ranks).expect("upload"),
            dev.upload(&flags).expect("upload"),
        );
        let mut yb = dev.alloc_filled(n, -1.0f32).expect("alloc");
        f.launch_grid(1, (&xb, &rb, &fb, &mut yb)).expect("launch");
        let want: Vec<f32> = (0..n)
            .map(|p| match compact {
                false => (n - 1 - p) as f32,
                true if p < n / 2 => (2 * p) as f32,
                true => -1.0,
            })
            .collect();
        assert_same(
            &yb.to_vec().expect("download"),
            &want,
            &format!("scatter to {to:?}"),
        );
    }
}

/// A scatter's tile is padded (one slot per 32 positions) where its read-back or its writes
/// meet bank conflicts unpadded: a blocked read-back of items per thread that are no one vector
/// (lane `t` reads `t * k + i`, a `k`-way conflict at 16 32-bit items), and writes from
/// blocked items whose ranks follow their positions (the same `k`-way conflict, whatever the
/// read-back: a striped one too); not one item per thread. A blocked read-back of one 8- or
/// 16-byte run of 32-bit items a thread stays unpadded and reads its run as one vector access.
/// Each shape scatters a permutation (`p -> 7p + 3 mod n`) and is checked against the CPU;
/// item by item, each reads back from one address with immediate offsets.
#[test]
fn scatter_tiles_are_padded_where_the_read_back_or_the_writes_conflict() {
    let mut batch = Batch::default();
    // (block, items, striped, padded, one vector)
    for (block, items, striped, padded, vector) in [
        (256u32, 16u32, false, true, false),
        (256, 8, false, true, false),
        (96, 4, false, false, true),
        (64, 2, false, false, true),
        (256, 1, false, false, false),
        (256, 16, true, true, false),
        (96, 4, true, true, false),
    ] {
        scatter_case::<u32>(&mut batch, block, items, striped, padded, vector);
    }
    // Narrow items read back item by item (only a library sort's scatter, whose every slot
    // holds a defined value, reads them packed in words): 2 bytes a thread share words
    // without conflict, 8 bytes a thread conflict two ways (too few for a pad to pay), 16
    // bytes a thread conflict four ways unpadded, read back blocked or written from blocked.
    for (block, items, striped, padded) in [
        (256u32, 16u32, false, true),
        (96, 8, false, false),
        (96, 2, false, false),
        (96, 16, true, true),
    ] {
        scatter_case::<u8>(&mut batch, block, items, striped, padded, false);
        scatter_case::<i8>(&mut batch, block, items, striped, padded, false);
    }
    scatter_case::<i16>(&mut batch, 160, 8, false, true, false);
}

/// One shape of [`scatter_tiles_are_padded_where_the_read_back_or_the_writes_conflict`] with items of
/// type `T`.
fn scatter_case<T: coopgraph::runtime::DeviceElement>(
    batch: &mut Batch,
    block: u32,
    items: u32,
    striped: bool,
    padded: bool,
    vector: bool,
) {
    use coopgraph::ir::{Algorithm, Arrangement, Scatter};
    let dev = device();
    let n = (block * items) as usize;
    let to = if striped {
        Arrangement::Striped { threads: block }
    } else {
        Arrangement::Blocked
    };
    let mut k = KernelBuilder::new(format!(
        "scatter_pad_{block}x{items}_{striped}_{:?}",
        T::DTYPE
    ))
    .block(block)
    .items_per_thread(items);
    let (x, y) = (k.input::<T>("x"), k.output::<T>("y"));
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::direct());
    let position = coopgraph::ir::index::thread_rank() * items + coopgraph::ir::index::item();
    let ranks = k.fill((position * 7u32 + 3u32) % n as u32);
    let s = k.scatter(b, &t, &ranks, Scatter::to(to).permutation());
    let alg = if striped {
        Algorithm::Striped
    } else {
        Algorithm::Direct
    };
    k.store_to(b, &y, &s, Store::default().algorithm(alg));
    let kernel = k.build().unwrap_or_else(|e| panic!("{e}"));
    let c = first_collective(&kernel);
    assert_eq!(c.padding, padded.then_some(32), "{}", kernel.name());
    batch.add(&kernel);
    let xs: Vec<T> = (0..n as u64)
        .map(|i| T::from_bits(i.wrapping_mul(2_654_435_761) >> 3))
        .collect();
    let mut want = vec![T::from_bits(0); n];
    for (p, &v) in xs.iter().enumerate() {
        want[(p * 7 + 3) % n] = v;
    }
    let f = dev.compile(&kernel).expect("compile");
    let xb = dev.upload(&xs).expect("upload");
    let mut yb = dev.alloc_filled(n, T::from_bits(!0)).expect("alloc");
    f.launch_grid(1, (&xb, &mut yb)).expect("launch");
    assert_same(&yb.to_vec().expect("download"), &want, kernel.name());
    let ptx = kernel.ptx(coopgraph::ptx::Arch::Sm90).expect("emits");
    let loads: Vec<&str> = ptx.lines().filter(|l| l.contains("ld.shared")).collect();
    if vector {
        // One access of the thread's whole run.
        assert_eq!(loads.len(), 1, "{}: {loads:?}", kernel.name());
        return;
    }
    // Each thread's padded slots lie at the same distances from its first for every rank
    // (the items fit between two pads, or nothing is padded): the read-back takes one
    // address and an immediate offset for every other item.
    assert_eq!(loads.len(), items as usize, "{ptx}");
    let offset = loads.iter().filter(|l| l.contains('+')).count();
    assert_eq!(offset, items as usize - 1, "{}: {loads:?}", kernel.name());
}

/// Block shuffles also hand every rank the item shifted out of the tile.
#[test]
fn shuffles_return_the_item_shifted_out() {
    let mut batch = Batch::default();
    let dev = device();
    let probe = KernelBuilder::new("probe");
    for (case, g) in [probe.this_block(), probe.this_warp().group_by(8)]
        .into_iter()
        .enumerate()
    {
        for up in [true, false] {
            let mut k = KernelBuilder::new(format!("shifted_{case}_{up}"))
                .block(128)
                .items_per_thread(3);
            let x = k.input::<i32>("x");
            let y = k.output::<i32>("y");
            let z = k.output::<i32>("z");
            let b = k.this_block();
            let t = k.load_from(b, &x, Load::direct());
            let (s, out) = if up {
                k.shuffle_up_with_suffix(g, &t, Shuffle::new().edge(Expr::lit(-1)))
            } else {
                k.shuffle_down_with_prefix(g, &t, Shuffle::new().edge(Expr::lit(-1)))
            };
            k.store_to(b, &y, &s, Store::direct());
            k.store_to(b, &z, &out, Store::direct().offset(0u32));
            let kernel = k.build().expect("builds");
            batch.add(&kernel);
            let f = dev.compile(&kernel).expect("compile");
            let xs: Vec<i32> = (0..384).collect();
            let xb = dev.upload(&xs).expect("upload");
            let mut yb = dev.alloc_zeroed::<i32>(384).expect("alloc");
            let mut zb = dev.alloc_zeroed::<i32>(128).expect("alloc");
            f.launch_grid(1, (&xb, &mut yb, &mut zb)).expect("launch");
            let w = match g.kind() {
                GroupKind::Block => 128usize,
                GroupKind::LogicalWarp { width } => width as usize,
                GroupKind::Warps { warps } => warps as usize * 32,
            };
            let tile = w * 3;
            let want_y: Vec<i32> = (0..384usize)
                .map(|p| {
                    let q = p % tile;
                    match (up, q) {
                        (true, 0) => -1,
                        (true, _) => p as i32 - 1,
                        (false, q) if q == tile - 1 => -1,
                        (false, _) => p as i32 + 1,
                    }
                })
                .collect();
            let want_z: Vec<i32> = (0..128usize)
                .map(|t| {
                    let start = (t / w) * tile;
                    if up {
                        (start + tile - 1) as i32
                    } else {
                        start as i32
                    }
                })
                .collect();
            assert_same(
                &yb.to_vec().expect("y"),
                &want_y,
                &format!("shuffle up={up} over {w}"),
            );
            assert_same(
                &zb.to_vec().expect("z"),
                &want_z,
                &format!("shifted out, up={up} over {w}"),
            );
        }
    }
}

/// Adjacent differences over partial tiles: positions past the valid ones keep their input
/// (looking right, from the last valid one).
#[test]
fn adjacent_differences_over_partial_tiles() {
    let mut batch = Batch::default();
    let dev = device();
    let probe = KernelBuilder::new("probe");
    let mut case = 0;
    for g in [probe.this_block(), probe.this_warp().group_by(8)] {
        for left in [true, false] {
            let w = match g.kind() {
                GroupKind::Block => 64usize,
                GroupKind::LogicalWarp { width } => width as usize,
                GroupKind::Warps { warps } => warps as usize * 32,
            };
            let tile = w * 3;
            for valid in [1usize, 5, tile - 1, tile] {
                case += 1;
                let mut k = KernelBuilder::new(format!("partial_{case}"))
                    .block(64)
                    .items_per_thread(3);
                let x = k.input::<i32>("x");
                let y = k.output::<i32>("y");
                let n = k.scalar::<u32>("n");
                let b = k.this_block();
                let t = k.load_from(b, &x, Load::direct());
                let d = if left {
                    let d = Difference::subtract().edge(Expr::lit(100));
                    k.adjacent_difference_left(g, &t, d.valid_items(n))
                } else {
                    k.adjacent_difference_right(g, &t, Difference::subtract().valid_items(n))
                };
                k.store_to(b, &y, &d, Store::direct());
                let kernel = k.build().expect("builds");
                batch.add(&kernel);
                let f = dev.compile(&kernel).expect("compile");
                let xs: Vec<i32> = (0..192).map(|i| (i * 13) % 29).collect();
                let xb = dev.upload(&xs).expect("upload");
                let mut yb = dev.alloc_zeroed::<i32>(192).expect("alloc");
                f.launch_grid(1, (&xb, &mut yb, valid as u32))
                    .expect("launch");
                let want: Vec<i32> = (0..192usize)
                    .map(|p| {
                        let q = p % tile;
                        if left {
                            match q {
                                q if q >= valid => xs[p],
                                0 => xs[p] - 100,
                                _ => xs[p] - xs[p - 1],
                            }
                        } else if q + 1 >= valid {
                            xs[p]
                        } else {
                            xs[p] - xs[p + 1]
                        }
                    })
                    .collect();
                assert_same(
                    &yb.to_vec().expect("download"),
                    &want,
                    &format!("left={left} over {w}, valid {valid}"),
                );
            }
        }
    }
}

#[test]
fn heads_and_tails_together() {
    let dev = device();
    let mut k = KernelBuilder::new("heads_tails")
        .block(32)
        .items_per_thread(2);
    let x = k.input::<i32>("x");
    let h = k.output::<u32>("h");
    let t = k.output::<u32>("t");
    let b = k.this_block();
    let v = k.load_from(b, &x, Load::direct());
    let (heads, tails) = k.flag_heads_and_tails(
        b,
        &v,
        Flags::inequality(),
        Flags::inequality().edge(Expr::lit(7)),
    );
    k.store_to(b, &h, &heads, Store::direct());
    k.store_to(b, &t, &tails, Store::direct());
    let kernel = k.build().expect("builds");
    super::common::assemble_all(&kernel);
    let f = dev.compile(&kernel).expect("compile");
    let xs: Vec<i32> = (0..64).map(|i| i / 3).collect();
    let xb = dev.upload(&xs).expect("upload");
    let mut hb = dev.alloc_zeroed::<u32>(64).expect("alloc");
    let mut tb = dev.alloc_zeroed::<u32>(64).expect("alloc");
    f.launch_grid(1, (&xb, &mut hb, &mut tb)).expect("launch");
    let want_h: Vec<u32> = (0..64)
        .map(|p| (p == 0 || xs[p - 1] != xs[p]) as u32)
        .collect();
    let want_t: Vec<u32> = (0..64)
        .map(|p| {
            (if p == 63 {
                xs[p] != 7
            } else {
                xs[p] != xs[p + 1]
            }) as u32
        })
        .collect();
    assert_same(&hb.to_vec().expect("h"), &want_h, "heads");
    assert_same(&tb.to_vec().expect("t"), &want_t, "tails");
}

/// A right difference over a partial tile keeps its last valid position's input, so no
/// position is differenced with an item after the tile: giving one is an error naming the
/// line, while a left difference over a partial tile uses its item before the tile.
#[test]
fn partial_right_difference_takes_no_edge() {
    use coopgraph::Error;
    use coopgraph::ir::VerifyErrorKind;
    let build = |right: bool, edge: bool| {
        let mut k = KernelBuilder::new("partial_edge")
            .block(32)
            .items_per_thread(2);
        let x = k.input::<i32>("x");
        let y = k.output::<i32>("y");
        let b = k.this_block();
        let t = k.load_from(b, &x, Load::direct());
        let d = Difference::subtract().valid_items(40u32);
        let d = if edge { d.edge(Expr::lit(5)) } else { d };
        let line = line!() + 2;
        let r = if right {
            k.adjacent_difference_right(b, &t, d)
        } else {
            k.adjacent_difference_left(b, &t, d)
        };
        k.store_to(b, &y, &r, Store::direct());
        (k.build(), line)
    };
    match build(true, true) {
        (Err(Error::Verify(e)), line) => {
            assert_eq!(e.errors.len(), 1, "{e}");
            let err = &e.errors[0];
            assert_eq!(err.kind, VerifyErrorKind::EdgeOfPartialRightDifference);
            assert_eq!(err.loc.line, line);
        }
        (other, _) => panic!("a right difference with an edge over a partial tile: {other:?}"),
    }
    for (right, edge) in [(true, false), (false, true), (false, false)] {
        let (kernel, _) = build(right, edge);
        let kernel = kernel.unwrap_or_else(|e| panic!("right {right}, edge {edge}: {e}"));
        super::common::assemble_all(&kernel);
    }
}

/// A scatter without a hole value leaves the positions no item went to undefined; a warp scan
/// over the scattered tile with a valid count reads only the scattered positions, though the
/// exchange before it moves every register (holes included) through shared memory. Moving an
/// undefined value is not using it: the run must agree with the CPU, the simulator's
/// uninitialized-value checker on.
#[test]
fn holes_moved_by_an_exchange_before_a_bounded_scan_are_not_used() {
    use coopgraph::ir::{Scan, Scatter, index};
    let mut batch = Batch::default();
    let dev = device();
    let (block, items, valid) = (64u32, 2u32, 10u32);
    let tile = (block * items) as usize;
    let mut k = KernelBuilder::new("holes_then_scan")
        .block(block)
        .items_per_thread(items);
    let x = k.input::<i32>("x");
    let y = k.output::<i32>("y");
    let b = k.this_block();
    let w = k.this_warp();
    let t = k.load_from(b, &x, Load::direct());
    let p = index::thread_rank() * items + index::item();
    let r = k.fill::<u32>(
        (p.clone() % 64u32)
            .lt(Expr::lit(valid))
            .select(p, Expr::lit(1000u32)),
    );
    let s = k.scatter(b, &t, &r, Scatter::striped(4));
    let sums = k.scan(w, &s, Scan::inclusive_sum().valid_items(valid));
    k.store_to(w, &y, &sums, Store::direct().valid_items(valid));
    let kernel = k.build().unwrap_or_else(|e| panic!("{e}"));
    batch.add(&kernel);
    let xs: Vec<i32> = (0..tile as i32).map(|i| 3 * i - 50).collect();
    let f = dev.compile(&kernel).expect("compile");
    let xb = dev.upload(&xs).expect("upload");
    let mut yb = dev.alloc_filled(tile, -1i32).expect("alloc");
    f.launch_grid(1, (&xb, &mut yb)).expect("launch");
    let mut want = vec![-1i32; tile];
    for warp in 0..tile / 64 {
        let mut acc = 0;
        for j in 0..valid as usize {
            acc += xs[warp * 64 + j];
            want[warp * 64 + j] = acc;
        }
    }
    assert_same(
        &yb.to_vec().expect("download"),
        &want,
        "bounded scan after holes",
    );
}

/// Flags that a scan turned into ranks pair with those ranks in a later scatter, whatever
/// arrangement the scattered payload has (here striped): a free payload of flags is read in
/// the ranks' arrangement, and converted with them.
#[test]
fn free_flags_pair_with_their_ranks_in_a_scatter() {
    use coopgraph::ir::{Arrangement, Reduce, Scan, Scatter, index};
    let dev = device();
    let (threads, items) = (64u32, 3u32);
    let n = (threads * items) as usize;
    let mut k = KernelBuilder::new("compact_every_third")
        .block(threads)
        .items_per_thread(items);
    let x = k.input::<u32>("x");
    let y = k.output::<u32>("y");
    let b = k.this_block();
    // Flags every third position (blocked: thread t holds positions t*3 + i).
    let third = (index::thread_rank() * items + index::item()) % 3u32;
    let flags = k.fill(third.eq(0u32).select(1u32, 0u32));
    let ranks = k.scan(
        b,
        &flags,
        Scan::exclusive(Reduce::sum()).initial_value(0u32),
    );
    let t = k.load_from(b, &x, Load::striped());
    let kept = k.scatter(
        b,
        &t,
        &ranks,
        Scatter::to(Arrangement::Blocked).flags(&flags),
    );
    k.store_to(b, &y, &kept, Store::direct().valid_items(n as u32 / 3));
    let kernel = k.build().unwrap_or_else(|e| panic!("{e}"));
    assemble_all(&kernel);
    let xs: Vec<u32> = (0..n as u32).map(|i| 1000 + i).collect();
    let f = compiled(dev, &kernel).expect("compile");
    let xb = dev.upload(&xs).expect("upload");
    let mut yb = dev.alloc_zeroed::<u32>(n / 3).expect("alloc");
    f.launch_grid(1, (&xb, &mut yb)).expect("launch");
    let want: Vec<u32> = (0..n / 3).map(|j| xs[3 * j]).collect();
    assert_eq!(yb.to_vec().expect("download"), want);
}

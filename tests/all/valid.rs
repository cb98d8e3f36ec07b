//! Valid counts of loads and stores, as cuda.coop means them: a warp's or logical warp's
//! `valid_items` counts the valid prefix of that group's own tile (each group may have its own),
//! and `block_valid_items` counts from the block's tile offset, each group taking its share.
//! Every kernel runs on the default device against a CPU reference and is assembled by ptxas
//! for each arch.

use super::common::{Batch, Rng, assert_same, device};
use super::kernels::TestElem;
use coopgraph::ir::{Algorithm, index};
use coopgraph::{KernelBuilder, Load, Store};

const BLOCK: u32 = 64;

/// Group `g`'s own count: `base + g * step`, different for every logical warp.
fn count(base: u32, step: u32, g: usize) -> usize {
    (base + g as u32 * step) as usize
}

/// Each logical warp `g` loads the first `load + g * step` items of its own tile (the rest
/// take `default`), adds the slot index, and stores the first `store + g * step` positions.
fn per_group_counts<T: TestElem>(seed: u64) {
    let dev = device();
    let mut rng = Rng::new(seed);
    let mut batch = Batch::default();
    for width in [1u32, 4, 8, 32] {
        for items in [1u32, 3, 4] {
            for algorithm in [
                Algorithm::Direct,
                Algorithm::Striped,
                Algorithm::Vectorize,
                Algorithm::Transpose,
            ] {
                let name = format!("own_{}_w{width}_{algorithm:?}_{items}", T::DTYPE);
                let mut k = KernelBuilder::new(name.clone())
                    .block(BLOCK)
                    .items_per_thread(items);
                let x = k.input::<T>("x");
                let y = k.output::<T>("y");
                let load = k.scalar::<u32>("load");
                let store = k.scalar::<u32>("store");
                let step = k.scalar::<u32>("step");
                let g = k.this_warp().group_by(width);
                let mine = index::thread_rank() / width * step.expr();
                let t = k.load_from(
                    g,
                    &x,
                    Load::direct()
                        .algorithm(algorithm)
                        .valid_items(load.expr() + mine.clone())
                        .oob_default(T::from_i64(-7)),
                );
                let u = k.map(&t, |v| v + index::item().cast::<T>());
                k.store_to(
                    g,
                    &y,
                    &u,
                    Store::default()
                        .algorithm(algorithm)
                        .valid_items(store.expr() + mine),
                );
                let kernel = k.build().unwrap_or_else(|e| panic!("{name}: {e}"));
                batch.add(&kernel);
                let f = dev
                    .compile(&kernel)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                let tile = (BLOCK * items) as usize;
                let group_tile = (width * items) as usize;
                let xs: Vec<T> = rng.vec(tile);
                let poison = T::from_i64(0x5a);
                for (l, s, step) in [(0u32, 0u32, 1u32), (1, 2, 1), (3, 1, 2), (100, 100, 0)] {
                    let xb = dev.upload(&xs).expect("upload");
                    let mut yb = dev.alloc_filled(tile, poison).expect("alloc");
                    f.launch_grid(1, (&xb, &mut yb, l, s, step))
                        .unwrap_or_else(|e| panic!("{name}: {e}"));
                    let mut want = vec![poison; tile];
                    for (gi, chunk) in want.chunks_mut(group_tile).enumerate() {
                        let base = gi * group_tile;
                        let stored = count(s, step, gi).min(group_tile);
                        for (q, w) in chunk.iter_mut().enumerate().take(stored) {
                            let slot = match algorithm {
                                Algorithm::Striped => q / width as usize,
                                _ => q % items as usize,
                            };
                            let v = if q < count(l, step, gi) {
                                xs[base + q]
                            } else {
                                T::from_i64(-7)
                            };
                            *w = v.plus(slot as u32);
                        }
                    }
                    assert_same(
                        &yb.to_vec().expect("download"),
                        &want,
                        &format!("{name} load={l} store={s} step={step}"),
                    );
                }
            }
        }
    }
}

#[test]
fn warp_counts_are_each_groups_own_i32() {
    per_group_counts::<i32>(1);
}

#[test]
fn warp_counts_are_each_groups_own_f64_u8() {
    per_group_counts::<f64>(2);
    per_group_counts::<u8>(3);
}

/// A count of the block's tile: each logical warp takes the part of it that falls in its own
/// tile, as the block-wide warp-transposing algorithms do for their warps.
#[test]
fn block_counts_are_shared_out() {
    let dev = device();
    let mut batch = Batch::default();
    let items = 3u32;
    let cases: [(&str, Option<u32>, Algorithm); 4] = [
        ("w8_striped", Some(8), Algorithm::Striped),
        ("w32_transpose", Some(32), Algorithm::Transpose),
        ("block_warp_transpose", None, Algorithm::WarpTranspose),
        ("block_timesliced", None, Algorithm::WarpTransposeTimesliced),
    ];
    for (name, width, algorithm) in cases {
        let mut k = KernelBuilder::new(format!("block_count_{name}"))
            .block(BLOCK)
            .items_per_thread(items);
        let x = k.input::<i32>("x");
        let y = k.output::<i32>("y");
        let n = k.scalar::<u32>("n");
        let g = match width {
            Some(w) => k.this_warp().group_by(w),
            None => k.this_block(),
        };
        let t = k.load_from(
            g,
            &x,
            Load::direct().algorithm(algorithm).block_valid_items(n),
        );
        k.store_to(
            g,
            &y,
            &t,
            Store::default().algorithm(algorithm).block_valid_items(n),
        );
        let kernel = k.build().unwrap_or_else(|e| panic!("{name}: {e}"));
        batch.add(&kernel);
        let f = dev.compile(&kernel).expect("compile");
        let tile = (BLOCK * items) as usize;
        let xs: Vec<i32> = (0..tile as i32).map(|i| i * 3 + 1).collect();
        for n in [0usize, 1, 23, 24, 25, 100, tile - 1, tile, tile + 9] {
            let xb = dev.upload(&xs).expect("upload");
            let mut yb = dev.alloc_filled(tile, -1).expect("alloc");
            f.launch_grid(1, (&xb, &mut yb, n as u32)).expect("launch");
            let want: Vec<i32> = (0..tile).map(|q| if q < n { xs[q] } else { -1 }).collect();
            assert_same(
                &yb.to_vec().expect("download"),
                &want,
                &format!("{name} n={n}"),
            );
        }
    }
}

/// For a block group the two counts are one: the same PTX.
#[test]
fn block_groups_count_the_block_either_way() {
    let build = |block_count: bool| {
        let mut k = KernelBuilder::new("same").block(BLOCK);
        let x = k.input::<f32>("x");
        let y = k.output::<f32>("y");
        let n = k.scalar::<u32>("n");
        let b = k.this_block();
        let (load, store) = if block_count {
            (
                Load::transpose().block_valid_items(n),
                Store::transpose().block_valid_items(n),
            )
        } else {
            (
                Load::transpose().valid_items(n),
                Store::transpose().valid_items(n),
            )
        };
        let t = k.load_from(b, &x, load);
        k.store_to(b, &y, &t, store);
        k.build().expect("builds")
    };
    let arch = coopgraph::ptx::Arch::Sm90;
    assert_eq!(
        build(true).ptx(arch).expect("emits"),
        build(false).ptx(arch).expect("emits")
    );
}

/// The least common multiple.
fn lcm(a: u32, b: u32) -> u32 {
    let (mut x, mut y) = (a, b);
    while y != 0 {
        (x, y) = (y, x % y);
    }
    a / x * b
}

/// A logical warp's own count says nothing about the positions of other warps' tiles, so a
/// store converts a payload under per-group counts only in exchange groups that nest in its
/// own. A scattered tile striped over 3, 6, 12 or 24 threads (groups that straddle logical
/// warps of 8 or 32), or over more threads than a warp, stored with `valid_items` is a typed
/// error naming the store; those stores with a count of the block's tile, and the ones whose
/// conversions nest (striped over 4 threads under warps of 8), write exactly the valid
/// positions of the scattered tile.
#[test]
fn group_counts_need_conversions_inside_the_group() {
    use coopgraph::Error;
    use coopgraph::ir::Scatter;
    use coopgraph::planner::PlanError;
    let dev = device();
    let mut batch = Batch::default();
    let (block, items) = (96u32, 2u32);
    let tile = (block * items) as usize;
    // Position p goes to rank 19p + 30 mod 199: a permutation of 0..199 whose 7 ranks past
    // the tile are skipped, leaving 7 holes.
    let hole = -3i32;
    let xs: Vec<i32> = (0..tile as i32).map(|i| 1000 + i).collect();
    let mut scattered = vec![hole; tile];
    for (p, &v) in xs.iter().enumerate() {
        if let Some(s) = scattered.get_mut((p * 19 + 30) % 199) {
            *s = v;
        }
    }
    let poison = -77i32;
    for striped in [3u32, 4, 6, 12, 16, 24] {
        for width in [8u32, 32] {
            for algorithm in [Algorithm::Direct, Algorithm::Transpose, Algorithm::Striped] {
                for block_count in [false, true] {
                    let of = if block_count { "block" } else { "own" };
                    let name = format!("scattered_s{striped}_w{width}_{algorithm:?}_{of}");
                    let mut k = KernelBuilder::new(name.clone())
                        .block(block)
                        .items_per_thread(items);
                    let x = k.input::<i32>("x");
                    let y = k.output::<i32>("y");
                    let n = k.scalar::<u32>("n");
                    let step = k.scalar::<u32>("step");
                    let b = k.this_block();
                    let t = k.load_from(b, &x, Load::direct());
                    let p = index::thread_rank() * items + index::item();
                    let r = k.fill((p * 19u32 + 30u32) % 199u32);
                    let s = k.scatter(b, &t, &r, Scatter::striped(striped).holes(hole));
                    let w = k.this_warp().group_by(width);
                    let store = Store::default().algorithm(algorithm);
                    let store = if block_count {
                        store.block_valid_items(n)
                    } else {
                        store.valid_items(n.expr() + index::thread_rank() / width * step.expr())
                    };
                    let line = line!() + 1;
                    k.store_to(w, &y, &s, store);
                    let need = if algorithm == Algorithm::Striped {
                        width
                    } else {
                        1
                    };
                    let across = lcm(striped, need);
                    let nests = width.is_multiple_of(across);
                    let kernel = match k.build() {
                        Ok(kernel) if block_count || nests => kernel,
                        Err(Error::Plan(PlanError::GroupCountAcrossGroups {
                            loc,
                            group,
                            across: a,
                            ..
                        })) if !block_count && !nests => {
                            assert_eq!((loc.line, group, a), (line, width, across), "{name}");
                            continue;
                        }
                        Ok(_) => panic!("{name}: built, but its conversion straddles the groups"),
                        Err(e) => panic!("{name}: {e}"),
                    };
                    batch.add(&kernel);
                    let f = dev
                        .compile(&kernel)
                        .unwrap_or_else(|e| panic!("{name}: {e}"));
                    let group_tile = (width * items) as usize;
                    let counts: &[(u32, u32)] = if block_count {
                        &[(0, 0), (5, 0), (100, 0), (191, 0), (192, 0), (201, 0)]
                    } else {
                        &[(0, 1), (5, 0), (3, 7), (16, 0), (1000, 0)]
                    };
                    for &(n, step) in counts {
                        let xb = dev.upload(&xs).expect("upload");
                        let mut yb = dev.alloc_filled(tile, poison).expect("alloc");
                        f.launch_grid(1, (&xb, &mut yb, n, step))
                            .unwrap_or_else(|e| panic!("{name}: {e}"));
                        let want: Vec<i32> = (0..tile)
                            .map(|q| {
                                let (g, at) = (q / group_tile, q % group_tile);
                                let valid = if block_count {
                                    q < n as usize
                                } else {
                                    at < count(n, step, g)
                                };
                                if valid { scattered[q] } else { poison }
                            })
                            .collect();
                        assert_same(
                            &yb.to_vec().expect("download"),
                            &want,
                            &format!("{name} n={n} step={step}"),
                        );
                    }
                }
            }
        }
    }
}

//! Verifier tests: one per error kind, each checking the error names the user's line; plus
//! "all errors in one pass" and the planner's arrangement check.

use coopgraph::ir::{Expr, VerifyErrorKind as K, index};
use coopgraph::{Error, KernelBuilder, Load, Store};

/// Builds and returns the verifier's errors as (kind, line) pairs.
fn errors(k: KernelBuilder) -> Vec<(K, u32)> {
    match k.build() {
        Err(Error::Verify(e)) => {
            // The listing names every error.
            for err in &e.errors {
                assert!(e.listing.contains(&err.to_string()), "{}", e.listing);
            }
            e.errors.into_iter().map(|e| (e.kind, e.loc.line)).collect()
        }
        Err(other) => panic!("expected verifier errors, got {other}"),
        Ok(_) => panic!("expected verifier errors, the kernel built"),
    }
}

fn has(errs: &[(K, u32)], line: u32, pred: impl Fn(&K) -> bool) {
    assert!(
        errs.iter().any(|(k, l)| *l == line && pred(k)),
        "no matching error at line {line}: {errs:?}"
    );
}

/// A copy kernel body over `group`, for tests that need a collective.
fn copy(k: &mut KernelBuilder, group: coopgraph::ir::Group) {
    let x = k.input::<f32>("x");
    let y = k.output::<f32>("y");
    let t = k.load_from(group, &x, Load::direct());
    k.store_to(group, &y, &t, Store::direct());
}

#[test]
fn block_over_1024_threads() {
    let (k, line) = (KernelBuilder::new("k").block(2048), line!());
    has(&errors(k), line, |k| {
        matches!(k, K::BlockTooLarge { threads: 2048 })
    });
}

#[test]
fn empty_block() {
    let (k, line) = (KernelBuilder::new("k").block(0), line!());
    has(&errors(k), line, |k| matches!(k, K::EmptyBlock));
}

#[test]
fn blocks_of_two_and_three_dimensions_over_the_limits() {
    use coopgraph::ir::index::Axis;
    let (k, line) = (KernelBuilder::new("k").block_dims([64, 32, 1]), line!());
    has(&errors(k), line, |k| {
        matches!(k, K::BlockTooLarge { threads: 2048 })
    });
    let (k, line) = (KernelBuilder::new("k").block_dims([16, 8, 9]), line!());
    has(&errors(k), line, |k| {
        matches!(k, K::BlockTooLarge { threads: 1152 })
    });
    // Past z's limit of 64 within 1024 threads.
    let (k, line) = (KernelBuilder::new("k").block_dims([2, 2, 100]), line!());
    has(&errors(k), line, |k| {
        matches!(
            k,
            K::BlockDimension {
                axis: Axis::Z,
                size: 100,
                max: 64
            }
        )
    });
    // Within every limit, any shape verifies.
    for dims in [[32, 4, 1], [1, 1024, 1], [1, 16, 64], [3, 5, 7]] {
        assert!(KernelBuilder::new("k").block_dims(dims).build().is_ok());
    }
}

#[test]
fn items_per_thread_zero_or_too_many() {
    for items in [0, 65] {
        let (k, line) = (KernelBuilder::new("k").items_per_thread(items), line!());
        has(&errors(k), line, |k| matches!(k, K::ItemsPerThread { .. }));
    }
    let mut k = KernelBuilder::new("k");
    let (_, line) = (k.thread_data_n::<u8>(100), line!());
    has(&errors(k), line, |k| {
        matches!(k, K::ItemsPerThread { items: 100, .. })
    });
}

#[test]
fn logical_warp_width_outside_the_set() {
    let mut k = KernelBuilder::new("k").block(64);
    let (g, line) = (k.this_warp().group_by(3), line!());
    copy(&mut k, g);
    has(&errors(k), line, |k| {
        matches!(k, K::GroupWidth { width: 3 })
    });
}

#[test]
fn warp_op_in_block_of_partial_warps() {
    let mut k = KernelBuilder::new("k").block(48);
    let (w, line) = (k.this_warp(), line!());
    copy(&mut k, w.into());
    has(&errors(k), line, |k| {
        matches!(k, K::WarpOpInPartialWarpBlock { block: 48 })
    });
}

#[test]
fn collective_under_a_varying_branch() {
    let mut k = KernelBuilder::new("k").block(128);
    let x = k.input::<f32>("x");
    let block = k.this_block();
    let cond_line = line!() + 1;
    k.if_(index::thread_rank().lt(5u32), |k| {
        k.load_from(block, &x, Load::direct());
    });
    let errs = errors(k);
    assert!(
        errs.iter().any(|(kind, _)| matches!(
            kind,
            K::NonUniformCollective { condition, .. } if condition.line == cond_line
        )),
        "{errs:?}"
    );
}

#[test]
fn collective_under_uniform_branches_is_accepted() {
    // A warp-uniform condition is fine for a warp collective, and a block-uniform one for a
    // block collective.
    let mut k = KernelBuilder::new("k").block(128);
    let x = k.input::<f32>("x");
    let y = k.output::<f32>("y");
    let n = k.scalar::<u32>("n");
    let warp = k.this_warp();
    let block = k.this_block();
    k.if_(index::warp_rank().lt(2u32), |k| {
        let t = k.load_from(warp, &x, Load::direct());
        k.store_to(warp, &y, &t, Store::direct());
    });
    k.if_((index::thread_rank() / 8u32).lt(3u32), |k| {
        let g = k.this_warp().group_by(8);
        let t = k.load_from(g, &x, Load::direct());
        k.store_to(g, &y, &t, Store::direct());
    });
    k.if_(n.expr().gt(5u32), |k| {
        let t = k.load_from(block, &x, Load::direct());
        k.store_to(block, &y, &t, Store::direct());
    });
    k.build().expect("uniform branches verify");
}

#[test]
fn warp_uniform_branch_rejects_block_collective() {
    let mut k = KernelBuilder::new("k").block(128);
    let x = k.input::<f32>("x");
    let block = k.this_block();
    let cond_line = line!() + 1;
    k.if_(index::warp_rank().eq(0u32), |k| {
        k.load_from(block, &x, Load::direct());
    });
    let errs = errors(k);
    assert!(errs.iter().any(|(kind, _)| matches!(
        kind,
        K::NonUniformCollective { condition, .. } if condition.line == cond_line
    )));
}

#[test]
fn read_before_write() {
    let mut k = KernelBuilder::new("k");
    let y = k.output::<i32>("y");
    let block = k.this_block();
    let t = k.thread_data::<i32>();
    k.set_item(&t, 0, 1i32);
    let (_, line) = (k.store_to(block, &y, &t, Store::direct()), line!());
    has(&errors(k), line, |k| {
        matches!(k, K::UninitializedRead { item: 1, .. })
    });
}

#[test]
fn write_in_one_branch_only_is_not_a_definite_write() {
    let mut k = KernelBuilder::new("k");
    let y = k.output::<u32>("y");
    let n = k.scalar::<u32>("n");
    let block = k.this_block();
    let t = k.thread_data::<u32>();
    k.if_(n.expr().gt(1u32), |k| {
        let v = k.fill(7u32);
        k.assign(&t, &v);
    });
    let (_, line) = (k.store_to(block, &y, &t, Store::direct()), line!());
    has(&errors(k), line, |k| {
        matches!(k, K::UninitializedRead { .. })
    });
    // Written in both arms: accepted.
    let mut k = KernelBuilder::new("k");
    let y = k.output::<u32>("y");
    let n = k.scalar::<u32>("n");
    let block = k.this_block();
    let t = k.thread_data::<u32>();
    k.if_else(
        n.expr().gt(1u32),
        |k| {
            let v = k.fill(7u32);
            k.assign(&t, &v);
        },
        |k| {
            let v = k.fill(index::item());
            k.assign(&t, &v);
        },
    );
    k.store_to(block, &y, &t, Store::direct());
    k.build().expect("written on every path");
}

#[test]
fn parameter_of_another_kernel() {
    // There param 0 is an input of f32, here an output of i32: the handle is reported as
    // another builder's, not taken for this kernel's param 0 (nor for an unknown one).
    let mut other = KernelBuilder::new("other");
    let _a = other.input::<f32>("a");
    let foreign = other.input::<f32>("x");
    for dtype_or_role in [false, true] {
        let mut k = KernelBuilder::new("k");
        if dtype_or_role {
            let _y = k.output::<f32>("y");
        } else {
            let _x = k.input::<i32>("x");
        }
        let block = k.this_block();
        let (_, line) = (k.load_from(block, &foreign, Load::direct()), line!());
        assert_eq!(
            errors(k),
            vec![(K::ForeignHandle { what: "parameter" }, line)]
        );
    }
}

#[test]
fn payloads_of_different_sizes() {
    let mut k = KernelBuilder::new("k").items_per_thread(4);
    let four = k.fill(1.0f32);
    let two = k.thread_data_n::<f32>(2);
    let (_, line) = (k.assign(&two, &four), line!());
    has(&errors(k), line, |k| {
        matches!(
            k,
            K::ItemsMismatch {
                expected: 2,
                found: 4
            }
        )
    });
}

#[test]
fn slot_out_of_range() {
    let mut k = KernelBuilder::new("k");
    let t = k.thread_data_n::<f32>(4);
    let (_, line) = (k.set_item(&t, 9, 1.0f32), line!());
    has(&errors(k), line, |k| {
        matches!(k, K::ItemOutOfRange { item: 9, items: 4 })
    });
}

#[test]
fn item_index_outside_map() {
    let mut k = KernelBuilder::new("k");
    let (_, line) = (k.if_(index::item().eq(0u32), |_| {}), line!());
    has(&errors(k), line, |k| matches!(k, K::MapValueOutsideMap));
}

#[test]
fn loop_variable_outside_its_loop() {
    let mut k = KernelBuilder::new("k");
    let mut escaped: Option<Expr<u32>> = None;
    k.for_range(0u32, 4u32, |_, i| escaped = Some(i));
    let t = k.thread_data::<u32>();
    let i = escaped.expect("loop body ran");
    let (_, line) = (k.set_item(&t, 0, i), line!());
    has(&errors(k), line, |k| {
        matches!(k, K::LoopVarOutOfScope { .. })
    });
}

#[test]
fn duplicate_parameter_names() {
    let mut k = KernelBuilder::new("k");
    let _ = k.input::<f32>("x");
    let (_, line) = (k.output::<f32>("x"), line!());
    has(&errors(k), line, |k| matches!(k, K::DuplicateParam { .. }));
}

#[test]
fn empty_kernel_name() {
    let (k, line) = (KernelBuilder::new(" "), line!());
    has(&errors(k), line, |k| matches!(k, K::EmptyName));
}

#[test]
fn every_error_in_one_pass() {
    let (k, l1) = (KernelBuilder::new("k").block(4096), line!());
    let (mut k, l2) = (k.items_per_thread(0), line!());
    let (g, l3) = (k.this_warp().group_by(5), line!());
    copy(&mut k, g);
    let errs = errors(k);
    has(&errs, l1, |k| matches!(k, K::BlockTooLarge { .. }));
    has(&errs, l2, |k| matches!(k, K::ItemsPerThread { .. }));
    has(&errs, l3, |k| matches!(k, K::GroupWidth { .. }));
}

#[test]
fn striped_payload_into_direct_store_is_rejected_in_strict_mode() {
    let mut k = KernelBuilder::new("k").strict_arrangements(true);
    let x = k.input::<f32>("x");
    let y = k.output::<f32>("y");
    let block = k.this_block();
    let (t, load_line) = (k.load_from(block, &x, Load::striped()), line!());
    let u = k.map(&t, |v| v + 1.0);
    let (_, line) = (k.store_to(block, &y, &u, Store::direct()), line!());
    match k.build() {
        Err(Error::Plan(coopgraph::planner::PlanError::ArrangementMismatch {
            loc,
            producer,
            ..
        })) => {
            assert_eq!(loc.line, line);
            assert_eq!(producer.line, load_line);
        }
        other => panic!("expected an arrangement mismatch, got {other:?}"),
    }
}

/// A load's or store's offset and valid count must be uniform across the threads that move one
/// tile: the group for its own count and offset, the block for a count of the block's tile.
#[test]
fn transfer_controls_must_be_uniform_across_their_group() {
    use coopgraph::ir::TransferControl as C;
    let mut k = KernelBuilder::new("k").block(64);
    let x = k.input::<f32>("x");
    let y = k.output::<f32>("y");
    let block = k.this_block();
    let warp = k.this_warp();
    let warp8 = warp.group_by(8);
    let thread_count = line!() + 1;
    let t = k.load_from(warp8, &x, Load::direct().valid_items(index::thread_rank()));
    // Uniform across each logical warp of 8 (aligned runs of 8 threads): fine.
    let per8 = index::thread_rank() / 8u32;
    let u = k.load_from(warp8, &x, Load::direct().valid_items(per8.clone()));
    // ... but not across a warp of 32, nor across the block.
    let warp_count = line!() + 1;
    k.store_to(warp, &y, &u, Store::direct().valid_items(per8.clone()));
    let block_count = line!() + 1;
    k.store_to(warp8, &y, &t, Store::direct().block_valid_items(per8));
    let offset = line!() + 1;
    k.store_to(
        block,
        &y,
        &u,
        Store::direct().offset(index::warp_rank() * 32u32),
    );
    let errs = errors(k);
    let non_uniform = |control, threads| {
        move |k: &K| {
            matches!(k, K::NonUniformTransfer { control: c, threads: t }
                if *c == control && *t == threads)
        }
    };
    has(&errs, thread_count, non_uniform(C::ValidItems, 8));
    has(&errs, warp_count, non_uniform(C::ValidItems, 32));
    has(&errs, block_count, non_uniform(C::ValidItems, 64));
    has(&errs, offset, non_uniform(C::Offset, 64));
    assert_eq!(errs.len(), 4, "{errs:?}");
}

/// The default offset steps by the kernel's tile: a payload of other items per thread would
/// move a part of the tile (or overrun it) without a word. The error names both lines.
#[test]
fn payload_items_must_match_the_default_tile() {
    let set_at = line!() + 1;
    let mut k = KernelBuilder::new("k").block(128).items_per_thread(4);
    let x = k.input::<i32>("x");
    let y = k.output::<i32>("y");
    let b = k.this_block();
    let two = k.thread_data_n::<i32>(2);
    let load = line!() + 1;
    k.load_into(b, &x, &two, Load::direct());
    let store = line!() + 1;
    k.store_to(b, &y, &two, Store::direct());
    // An explicit offset says which elements are meant: no error.
    k.store_to(
        b,
        &y,
        &two,
        Store::direct().offset(index::block_index() * 256u32),
    );
    let errs = match k.build() {
        Err(Error::Verify(e)) => e,
        other => panic!("expected verifier errors, got {other:?}"),
    };
    assert_eq!(errs.errors.len(), 2, "{errs}");
    for (e, line) in errs.errors.iter().zip([load, store]) {
        assert_eq!(e.loc.line, line);
        match &e.kind {
            K::TileItems {
                items: 2,
                items_per_thread: 4,
                set_at: at,
            } => assert_eq!(at.line, set_at),
            other => panic!("expected TileItems, got {other:?}"),
        }
        let text = e.to_string();
        assert!(text.contains(&format!("verify.rs:{set_at}:")), "{text}");
    }
}

/// A store whose logical warps each count their own valid items cannot convert a payload
/// arranged across the block: the exchange would move positions of other groups, whose counts
/// the moving threads do not know. A count of the block's tile is fine.
#[test]
fn per_group_counts_do_not_cross_groups() {
    for block_count in [false, true] {
        let mut k = KernelBuilder::new("k").block(64).items_per_thread(2);
        let x = k.input::<i32>("x");
        let y = k.output::<i32>("y");
        let n = k.scalar::<u32>("n");
        let b = k.this_block();
        let t = k.load_from(b, &x, Load::striped());
        let warp8 = k.this_warp().group_by(8);
        let store = if block_count {
            Store::direct().block_valid_items(n)
        } else {
            Store::direct().valid_items(n)
        };
        let line = line!() + 1;
        k.store_to(warp8, &y, &t, store);
        match (block_count, k.build()) {
            (true, Ok(_)) => {}
            (
                false,
                Err(Error::Plan(coopgraph::planner::PlanError::GroupCountAcrossGroups {
                    loc,
                    group: 8,
                    across: 64,
                    ..
                })),
            ) => assert_eq!(loc.line, line),
            (_, other) => panic!("block count {block_count}: {other:?}"),
        }
    }
}

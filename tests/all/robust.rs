//! Malformed input to the public API gets typed errors: IRs edited by hand (ids past the
//! tables, regions that do not form a tree), handles of another builder.

use coopgraph::ir::ops::OpKind;
use coopgraph::ir::verify::verify;
use coopgraph::ir::{
    ExchangeVia, Input, Ir, Output, ThreadData, VerifyError, VerifyErrorKind, VerifyErrors, index,
};
use coopgraph::{KernelBuilder, Load, Store};

/// Two branches in sequence, the second holding a loop: regions 0 (body), 1, 2 and 3.
fn branches() -> Ir {
    let mut k = KernelBuilder::new("branches").block(32).items_per_thread(1);
    let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    let t = k.load_from(k.this_block(), &x, Load::direct());
    k.if_(index::block_index().lt(2u32), |k| {
        k.store_to(k.this_block(), &y, &t, Store::direct())
    });
    k.if_(index::block_index().lt(3u32), |k| {
        k.for_range(0u32, 2u32, |k, _| {
            k.store_to(k.this_block(), &y, &t, Store::direct())
        })
    });
    k.ir().clone()
}

/// Verifies on a thread of its own with a small stack: a recursion that never ends overflows
/// it and aborts the test binary, a panic fails the test.
fn verify_small(ir: Ir) -> Result<(), VerifyErrors> {
    std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(move || {
            let result = verify(&ir).map(|_| ());
            // Walking and listing such an IR ends too.
            let mut ops = 0;
            ir.walk(|_, _| ops += 1);
            assert!(ops <= ir.ops.len() * 2);
            let _ = coopgraph::ir::print::listing(&ir, &[]);
            result
        })
        .expect("thread starts")
        .join()
        .unwrap_or_else(|_| panic!("verify panicked"))
}

fn kinds(e: &VerifyErrors) -> Vec<VerifyErrorKind> {
    e.errors.iter().map(|e| e.kind.clone()).collect()
}

/// The ops that are branches, in op order, with their `then` regions.
fn ifs(ir: &Ir) -> Vec<(usize, coopgraph::ir::RegionId)> {
    ir.ops
        .iter()
        .enumerate()
        .filter_map(|(i, o)| match o.kind {
            OpKind::If { then, .. } => Some((i, then)),
            _ => None,
        })
        .collect()
}

#[test]
fn the_unedited_ir_verifies() {
    assert!(verify_small(branches()).is_ok());
}

#[test]
fn a_body_past_the_regions_is_an_error() {
    let mut ir = branches();
    let (_, region) = ifs(&ir)[1];
    // A region id of this IR's, in an IR with fewer regions.
    ir.regions.truncate(region.index());
    ir.body = region;
    let e = verify_small(ir).expect_err("verified");
    assert!(e.has(|k| matches!(k, VerifyErrorKind::UnknownHandle { what: "region", .. })));
}

#[test]
fn a_region_holding_its_own_op_is_an_error() {
    let mut ir = branches();
    let (op, then) = ifs(&ir)[0];
    // The branch inside its own arm: a cycle.
    let id = op_id(&ir, op);
    ir.regions[then.index()].push(id);
    let e = verify_small(ir).expect_err("verified");
    assert_eq!(kinds(&e), vec![VerifyErrorKind::OpListedTwice]);
}

#[test]
fn an_arm_that_is_the_body_is_an_error() {
    let mut ir = branches();
    let (op, _) = ifs(&ir)[0];
    let body = ir.body;
    if let OpKind::If { then, .. } = &mut ir.ops[op].kind {
        *then = body;
    }
    let e = verify_small(ir).expect_err("verified");
    assert_eq!(
        kinds(&e),
        vec![VerifyErrorKind::RegionReused { region: body }]
    );
    assert_eq!(e.errors[0].op.map(|o| o.index()), Some(op));
}

#[test]
fn an_arm_shared_by_two_branches_is_an_error() {
    let mut ir = branches();
    let (first, shared) = ifs(&ir)[0];
    let (second, _) = ifs(&ir)[1];
    if let OpKind::If { then, .. } = &mut ir.ops[second].kind {
        *then = shared;
    }
    let e = verify_small(ir).expect_err("verified");
    assert_eq!(
        kinds(&e),
        vec![VerifyErrorKind::RegionReused { region: shared }]
    );
    // Reported at whichever of the two the walk meets second.
    let at = e.errors[0].op.map(|o| o.index());
    assert!(at == Some(first) || at == Some(second));
}

#[test]
fn a_loop_body_enclosing_its_loop_is_an_error() {
    let mut ir = branches();
    let (_, outer) = ifs(&ir)[1];
    let lp = ir
        .ops
        .iter()
        .position(|o| matches!(o.kind, OpKind::For { .. }))
        .expect("a loop");
    if let OpKind::For { body, .. } = &mut ir.ops[lp].kind {
        *body = outer;
    }
    let e = verify_small(ir).expect_err("verified");
    assert_eq!(
        kinds(&e),
        vec![VerifyErrorKind::RegionReused { region: outer }]
    );
}

#[test]
fn an_op_listed_twice_is_an_error() {
    let mut ir = branches();
    let first = ir.regions[ir.body.index()][0];
    let body = ir.body.index();
    ir.regions[body].push(first);
    let e = verify_small(ir).expect_err("verified");
    assert_eq!(kinds(&e), vec![VerifyErrorKind::OpListedTwice]);
}

#[test]
fn an_edited_parameter_role_or_dtype_is_an_error() {
    let mut ir = branches();
    ir.params[0].role = coopgraph::ir::Role::Output;
    let e = verify_small(ir).expect_err("verified");
    assert!(e.has(|k| matches!(k, VerifyErrorKind::ParamRole { .. })));
    let mut ir = branches();
    ir.params[0].dtype = coopgraph::ir::DType::F32;
    let e = verify_small(ir).expect_err("verified");
    assert!(e.has(|k| matches!(k, VerifyErrorKind::TypeMismatch { .. })));
}

#[test]
fn ids_past_the_tables_are_errors() {
    let mut ir = branches();
    ir.params.truncate(1);
    ir.datas.clear();
    let e = verify_small(ir).expect_err("verified");
    assert!(e.has(|k| matches!(
        k,
        VerifyErrorKind::UnknownHandle {
            what: "parameter",
            ..
        }
    )));
    assert!(e.has(|k| matches!(
        k,
        VerifyErrorKind::UnknownHandle {
            what: "payload",
            ..
        }
    )));
}

/// A view must view an array declared before it that is no view itself: an edited IR whose
/// view names itself, a later array, a view or no array is refused, never planned.
#[test]
fn an_edited_view_of_a_view_or_a_later_array_is_an_error() {
    let mut k = KernelBuilder::new("viewed").block(32);
    let y = k.output::<u16>("y");
    let a = k.shared_array::<u32>(16);
    let v = k.shared_view::<u16, _>(&a);
    let w = k.shared_view::<u8, _>(&a);
    let b = k.shared_array::<u32>(4);
    k.shared_write(&v, index::thread_rank(), 1u16);
    k.shared_write(&b, 0u32, 1u32);
    k.sync_block();
    k.write(
        &y,
        index::thread_rank(),
        v.read(index::thread_rank()) + w.read(0u32).cast(),
    );
    let viewed = k.ir().clone();
    assert!(verify_small(viewed.clone()).is_ok());
    // An id past this kernel's arrays: another kernel's fifth.
    let mut other = KernelBuilder::new("other").block(32);
    let far = (0..5)
        .map(|_| other.shared_array::<u32>(1))
        .last()
        .expect("arrays");
    for root in [v.id(), w.id(), b.id(), far.id()] {
        let mut ir = viewed.clone();
        ir.arrays[v.id().index()].view_of = Some(root);
        let e = verify_small(ir).expect_err("verified");
        assert!(
            e.has(|k| matches!(
                k,
                VerifyErrorKind::UnknownHandle {
                    what: "shared array",
                    ..
                }
            )),
            "{root}: {e}"
        );
    }
}

/// The id of op `i` of `ir`, as the regions hold it.
fn op_id(ir: &Ir, i: usize) -> coopgraph::ir::OpId {
    let mut found = None;
    ir.walk(|op, _| {
        if op.index() == i {
            found = Some(op);
        }
    });
    found.expect("the op is in a region")
}

/// The one error of a build that used another builder's handle: what it was, and its line.
fn foreign(k: KernelBuilder) -> (&'static str, u32) {
    match k.build() {
        Ok(_) => panic!("a kernel with another builder's handle built"),
        Err(coopgraph::Error::Verify(e)) => match e.errors.as_slice() {
            [
                VerifyError {
                    kind: VerifyErrorKind::ForeignHandle { what },
                    loc,
                    ..
                },
            ] => (what, loc.line),
            other => panic!("{other:?}"),
        },
        Err(other) => panic!("{other}"),
    }
}

/// A builder with an input, an output and one payload, like the one each test borrows from.
fn plain(name: &str) -> (KernelBuilder, Input<u32>, Output<u32>, ThreadData<u32>) {
    let mut k = KernelBuilder::new(name).block(32).items_per_thread(1);
    let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    let t = k.load_from(k.this_block(), &x, Load::direct());
    (k, x, y, t)
}

#[test]
fn another_builders_payload_is_an_error_naming_the_line() {
    let (_, _, _, theirs) = plain("theirs");
    let (mut k, _, y, _) = plain("mine");
    // Same id (d0), same dtype: it used to store this builder's d0.
    let line = line!() + 1;
    k.store_to(k.this_block(), &y, &theirs, Store::direct());
    assert_eq!(foreign(k), ("payload", line));
}

#[test]
fn another_builders_parameters_are_errors() {
    let (_, x2, y2, _) = plain("theirs");
    let (mut k, _, _, t) = plain("mine");
    let line = line!() + 1;
    k.store_to(k.this_block(), &y2, &t, Store::direct());
    assert_eq!(foreign(k), ("parameter", line));
    let (mut k, _, _, _) = plain("mine");
    let line = line!() + 1;
    let _ = k.load_from(k.this_block(), &x2, Load::direct());
    assert_eq!(foreign(k), ("parameter", line));
    // A scalar inside an expression.
    let mut other = KernelBuilder::new("theirs");
    let n = other.scalar::<u32>("n");
    let (mut k, _, y, t) = plain("mine");
    k.scalar::<u32>("n");
    let line = line!() + 1;
    let u = k.map(&t, move |v| v + n.expr());
    k.store_to(k.this_block(), &y, &u, Store::direct());
    assert_eq!(foreign(k), ("parameter", line));
}

#[test]
fn another_builders_loop_variable_storage_and_array_are_errors() {
    // Groups are not a builder's: the block is the block everywhere.
    let other = KernelBuilder::new("theirs");
    let (mut k, _, y, t) = plain("mine");
    k.store_to(other.this_block(), &y, &t, Store::direct());
    assert!(k.build().is_ok());

    let mut other = KernelBuilder::new("theirs");
    let mut kept = None;
    other.tiles(64u32, |_, tile| kept = Some(tile));
    let tile = kept.expect("the loop body ran");
    let (mut k, _, y, t) = plain("mine");
    let mut line = 0;
    k.tiles(64u32, |k, _| {
        line = line!() + 1;
        let u = k.map(&t, |v| v + tile.origin.clone());
        k.store_to(k.this_block(), &y, &u, Store::direct());
    });
    assert_eq!(foreign(k), ("loop variable", line));

    let mut other = KernelBuilder::new("theirs");
    let storage = other.temp_storage(Default::default());
    let array = other.shared_array::<u32>(32);
    let (mut k, _, y, t) = plain("mine");
    k.temp_storage(Default::default());
    let line = line!() + 1;
    k.store_to(
        k.this_block(),
        &y,
        &t,
        Store::transpose().temp_storage(&storage),
    );
    assert_eq!(foreign(k), ("temp storage", line));
    let (mut k, _, _, _) = plain("mine");
    k.shared_array::<u32>(32);
    let line = line!() + 1;
    k.shared_write(&array, index::thread_rank(), 1u32);
    assert_eq!(foreign(k), ("shared array", line));
}

#[test]
fn a_clone_takes_the_handles_made_before_it() {
    let (mut k, _, y, t) = plain("forked");
    let before = k.map(&t, |v| v + 1u32);
    let mut fork = k.clone();
    // Made before the clone: the same entities in both.
    fork.store_to(fork.this_block(), &y, &before, Store::direct());
    assert!(fork.build().is_ok());
    // Made in the origin after the clone: another builder's, to the clone (the clone's own
    // next payload has the same id).
    let mut fork = k.clone();
    let after = k.map(&t, |v| v + 2u32);
    let _ = fork.map(&t, |v| v + 3u32);
    let line = line!() + 1;
    fork.store_to(fork.this_block(), &y, &after, Store::direct());
    assert_eq!(foreign(fork), ("payload", line));
    // And the clone's to the origin.
    let mut fork = k.clone();
    let in_fork = fork.map(&t, |v| v + 3u32);
    let _ = k.map(&t, |v| v + 4u32);
    let line = line!() + 1;
    k.store_to(k.this_block(), &y, &in_fork, Store::direct());
    assert_eq!(foreign(k), ("payload", line));
}

#[test]
fn the_same_kernel_from_two_builders_has_one_key() {
    let build = || {
        let (mut k, _, y, t) = plain("twice");
        k.store_to(k.this_block(), &y, &t, Store::direct());
        k.build().expect("builds")
    };
    let (a, b) = (build(), build());
    assert_eq!(a.key(), b.key());
}

/// A hand-written image of one `ret` entry with one buffer parameter and this block shape.
fn empty_image(entry: &str, block: [u32; 3]) -> coopgraph::runtime::KernelImage {
    use coopgraph::runtime::{ImageParts, KernelImage, ParamKind, ParamSig};
    KernelImage::unchecked_bounds(ImageParts {
        entry: entry.into(),
        ptx: coopgraph::sim::entry_text(entry, &["u64 p"], &[], "ret;"),
        arch: coopgraph::ptx::Arch::Sm80,
        params: vec![ParamSig::new(
            "p",
            ParamKind::Input,
            coopgraph::ir::DType::U32,
        )],
        hidden: Vec::new(),
        block,
        tile_elems: 32,
        static_smem: 0,
        dynamic_smem: 0,
        needs_cooperative: false,
        tile_offsets: false,
        grid_dims: 1,
        dynamic_array: None,
    })
}

#[test]
fn an_image_with_a_huge_block_is_an_error() {
    let dev = crate::common::device();
    // 2^66 threads: the product overflowed.
    for block in [[1 << 22; 3], [u32::MAX; 3], [0, u32::MAX, u32::MAX]] {
        match dev.compile(&empty_image("huge_block", block)) {
            Err(coopgraph::runtime::RuntimeError::BlockTooLarge { block: b, .. }) => {
                assert_eq!(b, block)
            }
            other => panic!("{block:?}: {other:?}"),
        }
    }
}

#[test]
fn a_simulator_launch_with_a_huge_block_is_an_error() {
    let sim = coopgraph::sim::Simulator::new(Default::default());
    let ptx = coopgraph::sim::entry_text("k", &[], &[], "ret;");
    let module = sim.load_module(&ptx).expect("parses");
    for block in [[u32::MAX; 3], [1 << 22; 3], [1024, 1024, 1024]] {
        match sim.launch(&module, "k", [1, 1, 1], block, 0, &[]) {
            Err(coopgraph::sim::SimError::BadLaunch { .. }) => {}
            other => panic!("{block:?}: {other:?}"),
        }
    }
    for grid in [[u32::MAX; 3], [1 << 22; 3]] {
        match sim.launch(&module, "k", grid, [32, 1, 1], 0, &[]) {
            Err(coopgraph::sim::SimError::BadLaunch { .. }) => {}
            other => panic!("{grid:?}: {other:?}"),
        }
    }
}

#[test]
fn a_kernel_block_past_u64_is_an_error() {
    for dims in [[u32::MAX; 3], [1 << 22; 3]] {
        let k = KernelBuilder::new("huge").block_dims(dims);
        match k.build() {
            Err(coopgraph::Error::Verify(e)) => {
                assert!(e.has(|k| matches!(k, VerifyErrorKind::BlockTooLarge { .. })))
            }
            other => panic!("{dims:?}: {other:?}"),
        }
    }
}

#[test]
fn temp_storages_past_shared_memory_are_errors() {
    use coopgraph::ir::StorageSpec;
    let (mut k, x, y, _) = plain("storages");
    let big = StorageSpec::default().size_in_bytes(u32::MAX);
    let (a, b) = (k.temp_storage(big), k.temp_storage(big.alignment(1 << 31)));
    let t = k.load_from(k.this_block(), &x, Load::transpose().temp_storage(&a));
    k.store_to(k.this_block(), &y, &t, Store::transpose().temp_storage(&b));
    match k.build() {
        Err(coopgraph::Error::Verify(e)) => {
            assert_eq!(
                e.errors
                    .iter()
                    .filter(|e| matches!(e.kind, VerifyErrorKind::StorageSize { .. }))
                    .count(),
                2,
                "{e}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn shuffles_by_the_largest_distances_build_and_run() {
    let mut k = KernelBuilder::new("far").block(32).items_per_thread(1);
    let y = k.output::<u32>("y");
    let block = k.this_block();
    let t = k.fill(index::thread_rank());
    let mut outs = Vec::new();
    for d in [i32::MIN, i32::MAX, i32::MIN + 1] {
        outs.push(k.shuffle_rotate(block, &t, d));
        outs.push(k.shuffle_offset(block, &t, d));
    }
    let mut sum = k.fill(0u32);
    for (i, o) in outs.iter().enumerate() {
        let w = 1u32 << (5 * i);
        sum = k.map2(&sum, o, move |s, v| s + v * w);
    }
    k.store_to(block, &y, &sum, Store::direct());
    let kernel = k.build().expect("builds");
    crate::common::assemble_all(&kernel);
    let dev = crate::common::device();
    let f = dev.compile(&kernel).expect("compiles");
    let mut yb = dev.alloc_zeroed::<u32>(32).expect("alloc");
    f.launch_grid(1, (&mut yb,)).expect("runs");
    let got = yb.to_vec().expect("download");
    let want: Vec<u32> = (0..32i64)
        .map(|r| {
            [i32::MIN, i32::MAX, i32::MIN + 1]
                .iter()
                .flat_map(|&d| {
                    let rotated = (r + i64::from(d)).rem_euclid(32) as u32;
                    let src = r + i64::from(d);
                    let offset = if (0..32).contains(&src) {
                        src as u32
                    } else {
                        r as u32
                    };
                    [rotated, offset]
                })
                .enumerate()
                .fold(0u32, |s, (i, v)| {
                    s.wrapping_add(v.wrapping_mul(1 << (5 * i)))
                })
        })
        .collect();
    assert_eq!(got, want);
}

#[test]
fn groups_of_any_width_are_errors_or_kernels() {
    use coopgraph::ir::{Arrangement, Reduce, Scan};
    for width in [0u32, 3, 33, 64, 1 << 20, u32::MAX] {
        for block in [0u32, 1, 31, 32, 48, 1024, u32::MAX] {
            let mut k = KernelBuilder::new("widths")
                .block(block)
                .items_per_thread(2);
            let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
            let g = k.this_warp().group_by(width);
            let t = k.load_from(g, &x, Load::transpose().valid_items(7u32));
            let r = k.reduce(g, &t, Reduce::sum().broadcast().valid_items(3u32));
            let s = k.scan(g, &t, Scan::exclusive_sum().valid_items(5u32));
            let e = k.exchange(
                g,
                &s,
                Arrangement::Striped { threads: width },
                ExchangeVia::Shared,
            );
            let u = k.map2(&e, &t, |a, b| a + b);
            let v = k.shuffle_up(g, &u, coopgraph::ir::Shuffle::new());
            let w = k.map(&v, move |a| a + r.item(0));
            k.store_to(g, &y, &w, Store::warp_transpose().block_valid_items(9u32));
            assert!(k.build().is_err(), "width {width}, block {block}");
        }
    }
}

/// A kernel of `buffers` buffer parameters (one read, the rest written) that copies the first
/// to the second.
fn many_buffers(buffers: usize, bounds: bool) -> KernelBuilder {
    let mut k = KernelBuilder::new("many").block(32).items_per_thread(1);
    if !bounds {
        k = k.unchecked_bounds();
    }
    let x = k.input::<u32>("x");
    let outs: Vec<_> = (1..buffers)
        .map(|i| k.output::<u32>(&format!("y{i}")))
        .collect();
    let t = k.load_from(k.this_block(), &x, Load::direct());
    k.store_to(k.this_block(), &outs[0], &t, Store::direct());
    k
}

#[test]
fn parameters_past_the_entrys_space_are_an_error() {
    use coopgraph::ir::ops::MAX_PARAM_BYTES;
    // 8 bytes per buffer and 4 for its length: 362 fit, 363 do not.
    let fits = MAX_PARAM_BYTES / 12;
    let kernel = many_buffers(fits, true).build().expect("fits");
    crate::common::assemble_all(&kernel);
    match many_buffers(fits + 1, true).build() {
        Err(coopgraph::Error::Verify(e)) => assert_eq!(
            kinds(&e),
            vec![VerifyErrorKind::ParameterSpace {
                bytes: (fits + 1) * 12,
                max: MAX_PARAM_BYTES
            }]
        ),
        other => panic!("{other:?}"),
    }
    // Without lengths, 8 bytes each.
    let kernel = many_buffers(MAX_PARAM_BYTES / 8, false)
        .build()
        .expect("fits");
    crate::common::assemble_all(&kernel);
    assert!(
        many_buffers(MAX_PARAM_BYTES / 8 + 1, false)
            .build()
            .is_err()
    );
}

#[test]
fn a_hand_written_image_launches_safely_only_when_vouched_for() {
    use coopgraph::runtime::{KernelImage, RuntimeError};
    let dev = crate::common::device();
    let mut y = dev.alloc_zeroed::<u32>(32).expect("alloc");
    // A hand-written image is unchecked unless its author vouches for it, unsafely.
    let hand = empty_image("vouch_plain", [32, 1, 1]);
    assert_eq!(hand.bounds(), coopgraph::ir::Bounds::Unchecked);
    let f = dev.compile(&hand).expect("loads");
    assert!(matches!(
        f.launch_grid(1, (&mut y,)),
        Err(RuntimeError::UncheckedKernel { .. })
    ));
    // SAFETY: the entry touches no memory at all.
    let vouched = unsafe { KernelImage::assume_checked_bounds(hand.into_parts()) };
    let f = dev.compile(&vouched).expect("loads");
    f.launch_grid(1, (&mut y,)).expect("runs");
    // A generated image whose PTX is edited is a hand-written one: the claim does not carry.
    let (mut k, _, y2, t) = plain("vouch_generated");
    k.store_to(k.this_block(), &y2, &t, Store::direct());
    let kernel = k.build().expect("builds");
    let image = coopgraph::runtime::Compile::emit(&kernel, dev.arch()).expect("emits");
    assert_eq!(image.bounds(), coopgraph::ir::Bounds::Checked);
    let mut parts = image.into_parts();
    parts.ptx.push_str("// edited\n");
    assert_eq!(
        KernelImage::unchecked_bounds(parts).bounds(),
        coopgraph::ir::Bounds::Unchecked
    );
}

#[test]
fn a_simulator_launch_with_more_local_memory_than_a_thread_has_is_an_error() {
    use coopgraph::sim::{LaunchProblem, MAX_LOCAL_BYTES, SimError, SimOptions, Simulator};
    let ptx = coopgraph::sim::entry_text("k", &[], &[], "ret;");
    for bytes in [MAX_LOCAL_BYTES + 1, u32::MAX] {
        // 1024 threads of 4 GiB each: the simulator once tried to allocate it all.
        let sim = Simulator::new(SimOptions {
            local_bytes: bytes,
            ..SimOptions::default()
        });
        let module = sim.load_module(&ptx).expect("parses");
        match sim.launch(&module, "k", [1, 1, 1], [1024, 1, 1], 0, &[]) {
            Err(SimError::BadLaunch {
                problem: LaunchProblem::LocalMemory { bytes: b, limit },
                ..
            }) => assert_eq!((b, limit), (bytes, MAX_LOCAL_BYTES)),
            other => panic!("{bytes}: {other:?}"),
        }
    }
    let sim = Simulator::new(SimOptions {
        local_bytes: MAX_LOCAL_BYTES,
        ..SimOptions::default()
    });
    let module = sim.load_module(&ptx).expect("parses");
    sim.launch(&module, "k", [1, 1, 1], [32, 1, 1], 0, &[])
        .expect("runs");
}

#[test]
fn occupancy_of_any_block_and_shared_memory_is_a_count() {
    use coopgraph::runtime::DeviceLimits;
    let huge = DeviceLimits {
        max_threads_per_block: u32::MAX,
        smem_per_sm: u32::MAX,
        max_threads_per_sm: u32::MAX,
        max_blocks_per_sm: u32::MAX,
        ..DeviceLimits::H200
    };
    for limits in [DeviceLimits::H200, DeviceLimits::T4, huge] {
        for threads in [0, 1, 1024, u64::from(u32::MAX), u64::MAX] {
            // The 1 KiB each block reserves used to overflow past u64::MAX - 1024.
            for smem in [0, 1 << 20, u64::MAX - 1023, u64::MAX] {
                let blocks = limits.blocks_per_sm(threads, smem);
                assert!(blocks <= limits.max_blocks_per_sm, "{threads} {smem}");
                if smem > u64::from(limits.smem_per_sm) {
                    assert_eq!(blocks, 0, "{threads} {smem}");
                }
            }
        }
    }
}

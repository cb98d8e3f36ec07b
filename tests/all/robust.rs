//! Malformed input to the public API gets typed errors: IRs edited by hand (ids past the
//! tables, regions that do not form a tree), verifier results of another kernel, handles of
//! another builder.

use coopgraph::ir::ops::OpKind;
use coopgraph::ir::verify::verify;
use coopgraph::ir::{
    Input, Ir, Output, ThreadData, VerifyError, VerifyErrorKind, VerifyErrors, index,
};
use coopgraph::planner::PlanError;
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

#[test]
fn planning_with_another_kernels_verifier_result_is_an_error() {
    let ir = branches();
    let info = verify(&ir).expect("verifies");
    let mut other = ir.clone();
    other.ops.truncate(1);
    let body = other.body.index();
    other.regions[body].truncate(1);
    assert!(!info.is_for(&other));
    assert!(matches!(
        coopgraph::planner::plan(&other, &info),
        Err(PlanError::NotVerified { .. })
    ));
    assert!(coopgraph::planner::plan(&ir, &info).is_ok());
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

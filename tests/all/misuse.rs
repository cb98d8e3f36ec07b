//! Misuses of the kernel language are typed errors naming the user's lines, all at once: one
//! kernel with many mistakes gets every one of them from one build (and, edited by hand into
//! what the typed builder cannot express, atomics on a type that cannot take them and indices
//! of a float type, from one verification); a dynamic shared array given more elements at
//! launch than the device has room for names the launch, the array and every other user of
//! shared memory. (Writes to inputs, atomics on 8- and 16-bit types and float indices do not
//! compile: see the `compile_fail` examples of `KernelBuilder::write`, `Atomic` and
//! `Input::at`.)

use crate::common::{compiled, device};
use coopgraph::ir::ops::{AtomicOp, OpKind};
use coopgraph::ir::{Atomic, DType, Reduce, VerifyErrorKind as K, index};
use coopgraph::runtime::{LaunchConfig, RuntimeError};
use coopgraph::{Error, KernelBuilder, Load, Store};

/// The (kind, line) of each verifier error of `build`.
fn errors(built: Result<coopgraph::Kernel, Error>) -> Vec<(K, u32)> {
    match built {
        Err(Error::Verify(e)) => e.errors.into_iter().map(|e| (e.kind, e.loc.line)).collect(),
        Err(other) => panic!("expected verifier errors, got {other}"),
        Ok(_) => panic!("expected verifier errors, the kernel built"),
    }
}

fn has(errs: &[(K, u32)], line: u32, what: &str, pred: impl Fn(&K) -> bool) {
    assert!(
        errs.iter().any(|(k, l)| *l == line && pred(k)),
        "no {what} error at line {line}: {errs:?}"
    );
}

/// One kernel, every mistake of the language a typed builder lets through, each reported at
/// its own line by one build.
#[test]
fn every_misuse_of_the_language_in_one_build() {
    // 32 x 32 x 2 threads: 2048.
    let block = line!() + 1;
    let mut k = KernelBuilder::new("misuse").block_dims([32, 32, 2]);
    let (x, y) = (k.input::<f32>("x"), k.output::<f32>("y"));
    let t = index::thread_rank();
    // 300 x 300 elements: past 65536.
    let (big, big_line) = (k.shared_array_2d::<f32>([300, 300]), line!());
    k.shared_write(&big, (t.clone(), 0u32), 1.0f32);
    let (_, dyn1) = (k.dynamic_shared_array::<u32>(), line!());
    let (_, dyn2) = (k.dynamic_shared_array::<u32>(), line!());
    let (_, local) = (k.local_array::<f64>(1 << 20), line!());
    let (_, empty) = (k.const_array::<u32>(&[]), line!());
    let zero = line!() + 1;
    k.for_range_step(0u32, 8u32, 0u32, |k, i| k.write(&y, i, 0.0f32));
    let jump = line!() + 1;
    k.break_();
    let exit = line!() + 1;
    k.return_if(t.clone().lt(5u32));
    let b = k.this_block();
    let (d, load) = (k.load_from(b, &x, Load::direct()), line!());
    let (_, reduce) = (k.reduce(b, &d, Reduce::sum()), line!());
    let errs = errors(k.build());
    has(&errs, block, "block", |k| {
        matches!(k, K::BlockTooLarge { threads: 2048 })
    });
    has(&errs, big_line, "array size", |k| {
        matches!(k, K::ArraySize { len: 90000 })
    });
    has(
        &errs,
        dyn2,
        "second dynamic array",
        |k| matches!(k, K::SecondDynamicArray { first } if first.line == dyn1),
    );
    has(&errs, local, "local memory", |k| {
        matches!(k, K::LocalMemory { .. })
    });
    has(&errs, empty, "empty array", |k| {
        matches!(k, K::EmptyArray { what: "constant" })
    });
    has(&errs, zero, "zero step", |k| matches!(k, K::ZeroStep));
    has(&errs, jump, "jump", |k| {
        matches!(k, K::JumpOutsideLoop { .. })
    });
    // The load and the reduction are both collectives no thread past the exit runs.
    for after in [load, reduce] {
        has(
            &errs,
            after,
            "collective after an exit",
            |k| matches!(k, K::CollectiveAfterReturn { exit: e, .. } if e.line == exit),
        );
    }
}

/// What the typed builder rejects at compile time, edited into the IR by hand: an atomic
/// `and` on `f32` and a write at an `f32` index, each named at its line, both from one
/// verification.
#[test]
fn atomics_on_a_type_that_cannot_take_them_and_float_indices_in_one_pass() {
    let mut k = KernelBuilder::new("edited").block(32);
    let (x, y) = (k.input::<f32>("x"), k.output::<f32>("y"));
    let t = index::thread_rank();
    let atomic_line = line!() + 1;
    k.atomic(&y, &t, Atomic::add(x.at(&t)));
    let f = k.fill(t.clone().cast::<f32>());
    let index_line = line!() + 1;
    k.write(&y, &t, 2.0f32);
    let mut ir = k.ir().clone();
    let float = (ir.ops.iter())
        .find_map(|op| match &op.kind {
            OpKind::Map { dst, expr, .. } if *dst == f.id() => Some(*expr),
            _ => None,
        })
        .expect("the fill's f32 expression");
    for op in &mut ir.ops {
        match &mut op.kind {
            OpKind::Atomic(a) => a.op = AtomicOp::And,
            OpKind::GlobalWrite { index, .. } => *index = float,
            _ => {}
        }
    }
    let e = coopgraph::ir::verify::verify(&ir).expect_err("misused");
    let errs: Vec<(K, u32)> = (e.errors.iter())
        .map(|e| (e.kind.clone(), e.loc.line))
        .collect();
    has(&errs, atomic_line, "atomic type", |k| {
        matches!(
            k,
            K::AtomicType {
                op: AtomicOp::And,
                dtype: DType::F32
            }
        )
    });
    has(&errs, index_line, "index type", |k| {
        matches!(k, K::IndexType { buffer: true, .. })
    });
}

/// A dynamic shared array given more elements than a block can have beside the kernel's own
/// shared memory: the launch's error names its line, the array's declaration, the length,
/// and every other user of shared memory (here a block scan's scratch and a shared array).
#[test]
fn a_dynamic_array_past_the_device_limit_names_the_launch_and_every_user() {
    let mut k = KernelBuilder::new("dyn_too_large")
        .block(128)
        .items_per_thread(2);
    let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    let b = k.this_block();
    let t = index::thread_rank();
    let (d, dyn_line) = (k.dynamic_shared_array::<u32>(), line!());
    let (s, array_line) = (k.shared_array::<u32>(256), line!());
    k.shared_write(&d, t.clone(), 1u32);
    k.shared_write(&s, t.clone(), 2u32);
    k.sync_block();
    let v = k.load_from(b, &x, Load::transpose());
    let (sc, scan_line) = (k.scan(b, &v, coopgraph::ir::Scan::inclusive_sum()), line!());
    k.store_to(b, &y, &sc, Store::direct());
    k.write(&y, t.clone() + 256u32, d.read(t.clone()) + s.read(t));
    let kernel = k.build().expect("builds");
    let dev = device();
    let f = compiled(dev, &kernel).expect("compiles");
    let xb = dev.upload(&[1u32; 512]).expect("upload");
    let mut yb = dev.alloc_zeroed::<u32>(512).expect("alloc");
    let limit = u64::from(dev.limits().smem_per_block_optin);
    for len in [(limit / 4) as u32, u32::MAX] {
        let line = line!() + 1;
        let r = f.launch(
            LaunchConfig::blocks(1).with_dynamic_array_len(len),
            (&xb, &mut yb),
        );
        let Err(RuntimeError::DynamicArrayTooLarge {
            array,
            len: l,
            need,
            limit: lim,
            users,
            at,
            ..
        }) = &r
        else {
            panic!("expected a dynamic array too large, got {r:?}")
        };
        assert_eq!((at.line, *l, *lim), (line, len, limit), "{r:?}");
        assert!(*need > limit && *need >= u64::from(len) * 4, "{r:?}");
        assert!(array.contains(&format!("misuse.rs:{dyn_line}:")), "{array}");
        assert!(
            !users
                .iter()
                .any(|u| u.contains(&format!("misuse.rs:{dyn_line}:"))),
            "the dynamic array among its own others: {users:?}"
        );
        for user in [array_line, scan_line] {
            assert!(
                users
                    .iter()
                    .any(|u| u.contains(&format!("misuse.rs:{user}:"))),
                "line {user} not among {users:?}"
            );
        }
        let shown = r.unwrap_err().to_string();
        assert!(shown.contains(&format!("misuse.rs:{line}:")), "{shown}");
        assert!(
            shown.contains(&format!("misuse.rs:{scan_line}:")),
            "{shown}"
        );
    }
    // A length that fits runs.
    f.launch(
        LaunchConfig::blocks(1).with_dynamic_array_len(128),
        (&xb, &mut yb),
    )
    .expect("fits");
    let out = yb.to_vec().expect("download");
    assert_eq!(out[256..384], [3u32; 128]);
    assert_eq!(out[..4], [1, 2, 3, 4]);
}

//! The shared-memory planner: exchanges, slices, barriers — each barrier shown necessary by the
//! simulator's race checker, and every kernel race-free with them.

use super::common::{Batch, Rng, assert_same, compiled, device};
use coopgraph::ir::{Algorithm, Difference, ExchangeVia, index};
use coopgraph::planner::{Hazard, SyncScope};
use coopgraph::runtime::{Device, RuntimeError, SimOptions};
use coopgraph::sim::SimError;
use coopgraph::{Error, Kernel, KernelBuilder, Load, Store};

/// A copy of `n` i32 through `load` and `store`, over one block of `block` threads.
fn copy(name: &str, block: u32, items: u32, load: Algorithm, store: Algorithm) -> Kernel {
    let mut k = KernelBuilder::new(name)
        .block(block)
        .items_per_thread(items);
    let x = k.input::<i32>("x");
    let y = k.output::<i32>("y");
    let n = k.scalar::<u32>("n");
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::direct().algorithm(load).valid_items(n));
    let u = k.map(&t, |v| v * 3 + index::item().cast::<i32>());
    k.store_to(b, &y, &u, Store::default().algorithm(store).valid_items(n));
    k.build().unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Runs a one-block copy kernel on `dev` and returns the output.
fn run(dev: &Device, kernel: &Kernel, xs: &[i32], n: u32) -> Result<Vec<i32>, RuntimeError> {
    let f = compiled(dev, kernel)?;
    let x = dev.upload(xs)?;
    let mut y = dev.alloc_filled(xs.len(), -7i32)?;
    f.launch_grid(1, (&x, &mut y, n))?;
    y.to_vec()
}

/// Every pair of load/store algorithms with shared memory, plus conversions: correct on the
/// default device, race-free on the simulator, and every planned barrier necessary.
#[test]
fn every_barrier_is_necessary() {
    let checked = Device::sim_with(SimOptions {
        check_uninit: false,
        ..SimOptions::default()
    });
    let mut batch = Batch::default();
    let pairs = [
        (Algorithm::Transpose, Algorithm::Transpose),
        (Algorithm::WarpTranspose, Algorithm::WarpTranspose),
        (
            Algorithm::WarpTransposeTimesliced,
            Algorithm::WarpTransposeTimesliced,
        ),
        (Algorithm::Striped, Algorithm::Direct),
        (Algorithm::Direct, Algorithm::Striped),
        (Algorithm::Transpose, Algorithm::Striped),
    ];
    for (items, block) in [(4u32, 64u32), (3, 96)] {
        for (load, store) in pairs {
            let name = format!("smem_{load:?}_{store:?}_{block}x{items}");
            let kernel = copy(&name, block, items, load, store);
            batch.add(&kernel);
            assert!(
                !kernel.plan().barriers().is_empty(),
                "{name} exchanges through shared memory but has no barrier"
            );
            let tile = (block * items) as usize;
            let xs: Vec<i32> = Rng::new(tile as u64).vec(tile);
            for n in [tile as u32, tile as u32 - 5] {
                let want: Vec<i32> = (0..tile)
                    .map(|q| {
                        if q < n as usize {
                            xs[q]
                                .wrapping_mul(3)
                                .wrapping_add((q % items as usize) as i32)
                        } else {
                            -7
                        }
                    })
                    .collect();
                // Which slot holds position q depends on the payload's arrangement: blocked
                // unless the load was striped.
                let want: Vec<i32> = if load == Algorithm::Striped {
                    (0..tile)
                        .map(|q| {
                            if q < n as usize {
                                xs[q]
                                    .wrapping_mul(3)
                                    .wrapping_add((q / block as usize) as i32)
                            } else {
                                -7
                            }
                        })
                        .collect()
                } else {
                    want
                };
                let got = run(device(), &kernel, &xs, n).expect("runs");
                assert_same(&got, &want, &format!("{name} n={n}"));
                let got = run(&checked, &kernel, &xs, n).expect("race-free on the simulator");
                assert_same(&got, &want, &format!("{name} n={n} (simulator)"));
            }
            for i in 0..kernel.plan().barriers().len() {
                let b = &kernel.plan().barriers()[i];
                let without = kernel.without_barrier(i).expect("barrier exists");
                match run(&checked, &without, &xs, tile as u32) {
                    Err(RuntimeError::Sim(SimError::Race(_))) => {}
                    other => panic!(
                        "{name}: without barrier {i} ({:?} before {}, {:?}) the race checker \
                         says {other:?}\n{}",
                        b.scope,
                        b.step,
                        b.hazard,
                        kernel.explain()
                    ),
                }
            }
        }
    }
}

#[test]
fn exchanges_in_sequence_share_one_region() {
    // A transposing load then a transposing store: each thread writes the store's slots where
    // it read the load's, so the second exchange needs no barrier before its write.
    let kernel = copy("reuse", 128, 4, Algorithm::Transpose, Algorithm::Transpose);
    let plan = kernel.plan();
    let slices: Vec<_> = plan.slices().values().collect();
    assert_eq!(slices.len(), 2);
    assert_eq!(slices[0].offset, slices[1].offset);
    assert_eq!(
        plan.shared_bytes(),
        slices[0].bytes,
        "the largest slice, not the sum"
    );
    assert_eq!(plan.barriers().len(), 2, "{}", kernel.explain());
    assert!(
        plan.barriers()
            .iter()
            .all(|b| b.hazard == Hazard::ReadAfterWrite)
    );
    let report = kernel.explain();
    assert!(
        report.contains("slice0") && report.contains("barrier"),
        "{report}"
    );
}

/// Two striped payloads converted for direct stores: the second conversion's writes land
/// where other threads read the first's, so a block barrier orders them; it is necessary.
#[test]
fn reuse_by_other_threads_needs_a_barrier() {
    let mut k = KernelBuilder::new("two").block(64).items_per_thread(4);
    let x = k.input::<i32>("x");
    let y = k.output::<i32>("y");
    let z = k.output::<i32>("z");
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::striped());
    let u = k.map(&t, |v| v + 1);
    k.store_to(b, &y, &t, Store::direct());
    k.store_to(b, &z, &u, Store::direct());
    let kernel = k.build().expect("builds");
    let plan = kernel.plan();
    assert!(
        plan.barriers()
            .iter()
            .any(|b| b.hazard == Hazard::WriteAfterRead && b.scope == SyncScope::Block),
        "{}",
        kernel.explain()
    );
    let checked = Device::sim_with(SimOptions {
        check_uninit: false,
        ..SimOptions::default()
    });
    let xs: Vec<i32> = Rng::new(9).vec(256);
    let run2 = |k: &Kernel| -> Result<(Vec<i32>, Vec<i32>), RuntimeError> {
        let f = compiled(&checked, k)?;
        let xb = checked.upload(&xs)?;
        let mut yb = checked.alloc_zeroed::<i32>(256)?;
        let mut zb = checked.alloc_zeroed::<i32>(256)?;
        f.launch_grid(1, (&xb, &mut yb, &mut zb))?;
        Ok((yb.to_vec()?, zb.to_vec()?))
    };
    let (ys, zs) = run2(&kernel).expect("race-free");
    assert_same(&ys, &xs, "first store");
    let plus: Vec<i32> = xs.iter().map(|v| v.wrapping_add(1)).collect();
    assert_same(&zs, &plus, "second store");
    super::common::assert_barriers_necessary(&kernel, run2);
}

#[test]
fn no_barrier_where_nothing_is_shared() {
    for (load, store) in [
        (Algorithm::Direct, Algorithm::Direct),
        (Algorithm::Striped, Algorithm::Striped),
        (Algorithm::Vectorize, Algorithm::Vectorize),
    ] {
        let kernel = copy("plain", 128, 4, load, store);
        assert!(kernel.plan().barriers().is_empty(), "{load:?}/{store:?}");
        assert_eq!(kernel.plan().shared_bytes(), 0);
    }
    // A warp transpose synchronizes its warp only.
    let kernel = copy("warp", 128, 4, Algorithm::WarpTranspose, Algorithm::Direct);
    assert!(
        kernel
            .plan()
            .barriers()
            .iter()
            .all(|b| b.scope == SyncScope::Group { threads: 32 })
    );
}

#[test]
fn loop_carried_reuse_gets_a_barrier() {
    let mut k = KernelBuilder::new("looped").block(64).items_per_thread(2);
    let x = k.input::<u32>("x");
    let y = k.output::<u32>("y");
    let n = k.scalar::<u32>("n");
    let b = k.this_block();
    k.tiles(n, |k, _tile| {
        let t = k.load_from(b, &x, Load::transpose());
        k.store_to(b, &y, &t, Store::direct());
    });
    let kernel = k.build().expect("builds");
    // The next tile's write must wait for this tile's reads.
    assert!(
        kernel
            .plan()
            .barriers()
            .iter()
            .any(|b| b.hazard == Hazard::WriteAfterRead && b.step.index == 0),
        "{}",
        kernel.explain()
    );
    let dev = device();
    let f = dev.compile(&kernel).expect("compile");
    let len = 1000usize;
    let xs: Vec<u32> = Rng::new(5).vec(len);
    let xb = dev.upload(&xs).expect("upload");
    let mut yb = dev.alloc_filled(len, 0u32).expect("alloc");
    f.launch_grid(2, (&xb, &mut yb, len as u32))
        .expect("launch");
    assert_same(&yb.to_vec().expect("download"), &xs, "looped transpose");
}

#[test]
fn block_exchange_under_a_warp_branch_is_rejected() {
    let mut k = KernelBuilder::new("k").block(64).items_per_thread(2);
    let x = k.input::<u32>("x");
    let y = k.output::<u32>("y");
    let w = k.this_warp();
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::striped());
    let line = line!() + 2;
    k.if_(index::warp_rank().eq(0u32), |k| {
        k.store_to(w, &y, &t, Store::direct());
    });
    match k.build() {
        Err(Error::Plan(coopgraph::planner::PlanError::BlockExchangeInDivergentCode {
            loc,
            ..
        })) => assert_eq!(loc.line, line),
        other => panic!("expected a rejection, got {other:?}"),
    }
}

/// Rotates a block's values through a shared array: correct with the user's barrier, and a
/// race the simulator reports without it.
#[test]
fn shared_arrays_with_user_barriers() {
    let build = |sync: bool| {
        let mut k = KernelBuilder::new(format!("rotate_{sync}"))
            .block(64)
            .items_per_thread(1);
        let x = k.input::<f32>("x");
        let y = k.output::<f32>("y");
        let b = k.this_block();
        let arr = k.shared_array::<f32>(64);
        let t = k.load_from(b, &x, Load::direct());
        k.shared_write(&arr, index::thread_rank(), t.item(0));
        if sync {
            k.sync_block();
        }
        let r = k.fill(arr.read((index::thread_rank() + 1u32) % 64u32));
        // A planned exchange beside the array: the two get different bytes.
        k.store_to(b, &y, &r, Store::transpose());
        k.build().expect("builds")
    };
    let kernel = build(true);
    let plan = kernel.plan();
    // The array is declared on its own, beside the window of the planned exchange.
    assert_eq!(
        plan.shared().arrays,
        vec![coopgraph::planner::ArrayHome::Own]
    );
    let array = &plan.slices()[*plan.arrays().values().next().expect("one array")];
    assert!(plan.shared_bytes() >= plan.shared().window_bytes + array.bytes);
    let ptx = kernel.ptx(coopgraph::ptx::Arch::Sm90).expect("emits");
    assert!(
        ptx.contains(".shared .align 4 .b8 smem0[256]; // smem0: shared f32 x 64 at"),
        "{ptx}"
    );
    let xs: Vec<f32> = (0..64).map(|i| i as f32).collect();
    let want: Vec<f32> = (0..64).map(|i| ((i + 1) % 64) as f32).collect();
    let dev = device();
    let f = dev.compile(&kernel).expect("compile");
    let xb = dev.upload(&xs).expect("upload");
    let mut yb = dev.alloc_zeroed::<f32>(64).expect("alloc");
    f.launch_grid(1, (&xb, &mut yb)).expect("launch");
    assert_same(&yb.to_vec().expect("download"), &want, "rotate");
    let racy = build(false);
    let sim = Device::sim_with(SimOptions {
        check_uninit: false,
        ..SimOptions::default()
    });
    let f = sim.compile(&racy).expect("compile");
    let xb = sim.upload(&xs).expect("upload");
    let mut yb = sim.alloc_zeroed::<f32>(64).expect("alloc");
    assert!(matches!(
        f.launch_grid(1, (&xb, &mut yb)),
        Err(RuntimeError::Sim(SimError::Race(_)))
    ));
}

fn storage_kernel(spec: coopgraph::ir::StorageSpec, user_sync: bool) -> Result<Kernel, Error> {
    let mut k = KernelBuilder::new(format!("storage_{user_sync}"))
        .block(64)
        .items_per_thread(4);
    let x = k.input::<i32>("x");
    let y = k.output::<i32>("y");
    let z = k.output::<i32>("z");
    let b = k.this_block();
    let ts = k.temp_storage(spec);
    let t = k.load_from(b, &x, Load::transpose().temp_storage(&ts));
    let u = k.map(&t, |v| v + 1);
    k.store_to(b, &y, &u, Store::direct());
    if user_sync {
        k.sync_block();
    }
    let t2 = k.load_from(b, &x, Load::warp_transpose().temp_storage(&ts));
    k.store_to(b, &z, &t2, Store::direct());
    k.build()
}

#[test]
fn temp_storage_sharing_and_sync() {
    use coopgraph::ir::{Sharing, StorageSpec};
    let sim = Device::sim_with(SimOptions {
        check_uninit: false,
        ..SimOptions::default()
    });
    let xs: Vec<i32> = Rng::new(4).vec(256);
    let run = |dev: &Device, k: &Kernel| -> Result<(Vec<i32>, Vec<i32>), RuntimeError> {
        let f = compiled(dev, k)?;
        let xb = dev.upload(&xs)?;
        let mut yb = dev.alloc_zeroed::<i32>(256)?;
        let mut zb = dev.alloc_zeroed::<i32>(256)?;
        f.launch_grid(1, (&xb, &mut yb, &mut zb))?;
        Ok((yb.to_vec()?, zb.to_vec()?))
    };
    let plus: Vec<i32> = xs.iter().map(|v| v.wrapping_add(1)).collect();
    // auto_sync (the default): the planner orders the two users; one slice serves both.
    let auto = storage_kernel(StorageSpec::default(), false).expect("builds");
    assert_eq!(auto.plan().slices().len(), 1, "{}", auto.explain());
    let (ys, zs) = run(device(), &auto).expect("runs");
    assert_same(&ys, &plus, "auto-sync first user");
    assert_same(&zs, &xs, "auto-sync second user");
    // Without auto_sync and without a user barrier: the race checker objects...
    let manual = StorageSpec::default().auto_sync(false);
    let racy = storage_kernel(manual, false).expect("builds");
    assert!(matches!(
        run(&sim, &racy),
        Err(RuntimeError::Sim(SimError::Race(_)))
    ));
    // ...and with the user's barrier it is right.
    let synced = storage_kernel(manual, true).expect("builds");
    let (ys, zs) = run(&sim, &synced).expect("race-free");
    assert_same(&ys, &plus, "user-synced first user");
    assert_same(&zs, &xs, "user-synced second user");
    // Too small a storage, and an exclusive one used twice, are errors naming the op.
    match storage_kernel(StorageSpec::default().size_in_bytes(64), false) {
        Err(Error::Plan(coopgraph::planner::PlanError::TempStorageTooSmall {
            need, have, ..
        })) => {
            assert_eq!(have, 64);
            assert!(need > 64);
        }
        other => panic!("expected a too-small storage, got {other:?}"),
    }
    match storage_kernel(StorageSpec::default().sharing(Sharing::Exclusive), false) {
        Err(Error::Verify(e)) => assert!(e.has(|k| matches!(
            k,
            coopgraph::ir::VerifyErrorKind::ExclusiveStorageShared { .. }
        ))),
        other => panic!("expected an exclusive-storage error, got {other:?}"),
    }
}

/// Two temp storages without auto-sync, one user each: nothing of either is the user's to
/// order, but the planner gives them the same bytes (their live ranges do not meet), so it
/// places the barrier between the first's last reads and the second's first writes.
#[test]
fn manual_storages_sharing_bytes_are_ordered_by_the_planner() {
    use coopgraph::ir::StorageSpec;
    let mut k = KernelBuilder::new("two_manual_storages")
        .block(64)
        .items_per_thread(4);
    let x = k.input::<i32>("x");
    let y = k.output::<i32>("y");
    let b = k.this_block();
    let first = k.temp_storage(StorageSpec::default().auto_sync(false));
    let second = k.temp_storage(StorageSpec::default().auto_sync(false));
    // The first load's last reads (blocked) and the second's first writes (striped) touch
    // the same bytes from different threads.
    let t = k.load_from(b, &x, Load::transpose().temp_storage(&first));
    let u = k.load_from(b, &x, Load::transpose().temp_storage(&second));
    let v = k.map2(&t, &u, |a, c| a * 2 + c);
    k.store_to(b, &y, &v, Store::direct());
    let kernel = k.build().expect("builds");
    let offsets: Vec<u32> = kernel.plan().slices().values().map(|s| s.offset).collect();
    assert_eq!(
        offsets,
        [0, 0],
        "the storages share bytes:\n{}",
        kernel.explain()
    );
    let xs: Vec<i32> = Rng::new(11).vec(256);
    let want: Vec<i32> = xs.iter().map(|v| v.wrapping_mul(3)).collect();
    let run = |dev: &Device, k: &Kernel| -> Result<Vec<i32>, RuntimeError> {
        let f = compiled(dev, k)?;
        let xb = dev.upload(&xs)?;
        let mut yb = dev.alloc_zeroed::<i32>(256)?;
        f.launch_grid(1, (&xb, &mut yb))?;
        yb.to_vec()
    };
    let ys = run(device(), &kernel).expect("race-free");
    assert_same(&ys, &want, "two manual storages");
    super::common::assert_barriers_necessary(&kernel, |k| run(&super::common::race_checker(), k));
    Batch::default().add(&kernel);
}

/// Past 48 KiB the kernel's shared memory becomes dynamic (sized at launch, with the opt-in
/// attribute set at load); past the arch's limit compiling fails naming every user.
#[test]
fn dynamic_shared_memory_past_48k() {
    let build = |len: u32| {
        let mut k = KernelBuilder::new(format!("big_{len}"))
            .block(256)
            .items_per_thread(4);
        let x = k.input::<f32>("x");
        let y = k.output::<f32>("y");
        let b = k.this_block();
        let arr = k.shared_array::<f32>(len);
        let t = k.load_from(b, &x, Load::transpose());
        k.shared_write(&arr, index::thread_rank() * 4u32, t.item(0));
        k.sync_block();
        let u = k.map(&t, |v| v + arr.read(index::thread_rank() * 4u32));
        k.store_to(b, &y, &u, Store::transpose());
        k.build().expect("builds")
    };
    let kernel = build(16 * 1024);
    assert!(kernel.plan().shared_bytes() > 48 * 1024);
    // The 64 KiB array cannot be a static declaration: it lives in the dynamic window.
    assert_eq!(
        kernel.plan().shared().arrays,
        vec![coopgraph::planner::ArrayHome::Window]
    );
    assert!(kernel.plan().shared().window_dynamic);
    let explained = kernel.explain();
    assert!(
        explained.contains("dynamic") && explained.contains("checked against the window only"),
        "{explained}"
    );
    let ptx = kernel.ptx(coopgraph::ptx::Arch::Sm90).expect("emits");
    assert!(
        ptx.contains(".extern .shared .align 16 .b8 scratch[];"),
        "{ptx}"
    );
    super::common::assemble_all(&kernel);
    let dev = device();
    let f = dev.compile(&kernel).expect("compile");
    let xs: Vec<f32> = (0..1024).map(|i| i as f32).collect();
    let xb = dev.upload(&xs).expect("upload");
    let mut yb = dev.alloc_zeroed::<f32>(1024).expect("alloc");
    f.launch_grid(1, (&xb, &mut yb)).expect("launch");
    // Thread t's item 0 is element 4t; every item of thread t gets it added.
    let want: Vec<f32> = (0..1024).map(|i| (i + (i / 4) * 4) as f32).collect();
    assert_same(
        &yb.to_vec().expect("download"),
        &want,
        "dynamic shared memory",
    );
    // Too much for any block: the error names the array and the exchanges.
    let mut k = KernelBuilder::new("too_big").block(128);
    let a = k.shared_array::<f32>(40_000);
    let line = line!() - 1;
    let b2 = k.shared_array::<f32>(40_000);
    k.shared_write(&a, index::thread_rank(), 1.0f32);
    k.shared_write(&b2, index::thread_rank(), 1.0f32);
    let kernel = k.build().expect("builds");
    match dev.compile(&kernel) {
        Err(RuntimeError::Plan(coopgraph::planner::PlanError::SharedMemory {
            need,
            users,
            ..
        })) => {
            assert_eq!(need, 320_000);
            assert!(
                users
                    .iter()
                    .any(|(_, loc, bytes)| loc.line == line && *bytes == 160_000)
            );
        }
        other => panic!("expected a shared-memory error, got {other:?}"),
    }
}

/// A payload's alignment bounds the vectors `vectorize` moves it with.
#[test]
fn payload_alignment_bounds_vector_width() {
    let build = |align: Option<u32>| {
        let mut k = KernelBuilder::new("aligned").block(64).items_per_thread(4);
        let x = k.input::<f32>("x");
        let y = k.output::<f32>("y");
        let b = k.this_block();
        let t = match align {
            Some(a) => k.thread_data_aligned::<f32>(4, a),
            None => k.thread_data::<f32>(),
        };
        k.load_into(b, &x, &t, Load::vectorize());
        k.store_to(b, &y, &t, Store::vectorize());
        k.build()
    };
    let vector = |k: &Kernel| {
        k.plan()
            .transfers()
            .values()
            .next()?
            .as_ref()
            .map(|t| t.vector)
    };
    assert_eq!(vector(&build(None).expect("builds")), Some(4));
    assert_eq!(vector(&build(Some(8)).expect("builds")), Some(2));
    assert_eq!(vector(&build(Some(4)).expect("builds")), Some(1));
    let line = line!() + 2;
    let mut k = KernelBuilder::new("bad");
    k.thread_data_aligned::<f64>(2, 4);
    match k.build() {
        Err(Error::Verify(e)) => assert!(e.errors.iter().any(|e| e.loc.line == line
            && matches!(
                e.kind,
                coopgraph::ir::VerifyErrorKind::BadAlignment { align: 4 }
            ))),
        other => panic!("expected an alignment error, got {other:?}"),
    }
    let kernel = build(Some(8)).expect("builds");
    let dev = device();
    let f = dev.compile(&kernel).expect("compile");
    let xs: Vec<f32> = (0..256).map(|i| i as f32).collect();
    let xb = dev.upload(&xs).expect("upload");
    let mut yb = dev.alloc_zeroed::<f32>(256).expect("alloc");
    f.launch_grid(1, (&xb, &mut yb)).expect("launch");
    assert_same(&yb.to_vec().expect("download"), &xs, "aligned vectorize");
}

/// Explicit exchanges: blocked ↔ striped over the block and over warps, in strict mode too.
#[test]
fn explicit_exchanges() {
    use coopgraph::ir::Arrangement;
    let mut batch = Batch::default();
    let dev = device();
    for (case, (to, back)) in [
        (Arrangement::Striped { threads: 64 }, Algorithm::Striped),
        (Arrangement::Striped { threads: 32 }, Algorithm::Direct),
        (Arrangement::Blocked, Algorithm::Direct),
    ]
    .into_iter()
    .enumerate()
    {
        let mut k = KernelBuilder::new(format!("exchange_{case}"))
            .block(64)
            .items_per_thread(4)
            .strict_arrangements(true);
        let x = k.input::<i32>("x");
        let y = k.output::<i32>("y");
        let b = k.this_block();
        let t = k.load_from(b, &x, Load::direct());
        let e = k.exchange(b, &t, to, ExchangeVia::Shared);
        // Tag each item with its slot, which depends on the arrangement.
        let u = k.map(&e, |v| v * 8 + index::item().cast::<i32>());
        let u = if back == Algorithm::Direct && to != Arrangement::Blocked {
            k.exchange(b, &u, Arrangement::Blocked, ExchangeVia::Shared)
        } else {
            u
        };
        k.store_to(b, &y, &u, Store::default().algorithm(back));
        let kernel = k.build().expect("builds in strict mode");
        batch.add(&kernel);
        let xs: Vec<i32> = (0..256).collect();
        let f = dev.compile(&kernel).expect("compile");
        let xb = dev.upload(&xs).expect("upload");
        let mut yb = dev.alloc_zeroed::<i32>(256).expect("alloc");
        f.launch_grid(1, (&xb, &mut yb)).expect("launch");
        let want: Vec<i32> = (0..256usize)
            .map(|p| {
                let slot = match to {
                    Arrangement::Blocked => p % 4,
                    Arrangement::Striped { threads } => {
                        (p % (threads as usize * 4)) / threads as usize
                    }
                };
                p as i32 * 8 + slot as i32
            })
            .collect();
        assert_same(
            &yb.to_vec().expect("download"),
            &want,
            &format!("exchange to {to:?}"),
        );
    }
}

/// The planner's allocation invariant: slices whose live ranges overlap never share bytes —
/// over kernels mixing shared arrays, temp storage, transposes, reductions, scans and neighbour
/// ops.
#[test]
fn live_slices_never_share_bytes() {
    use coopgraph::ir::{Reduce, Scan, StorageSpec};
    let mut k = KernelBuilder::new("mix").block(128).items_per_thread(4);
    let x = k.input::<i32>("x");
    let y = k.output::<i32>("y");
    let b = k.this_block();
    let arr = k.shared_array::<i32>(300);
    let ts = k.temp_storage(StorageSpec::default());
    let t = k.load_from(b, &x, Load::transpose().temp_storage(&ts));
    k.shared_write(&arr, index::thread_rank(), t.item(0));
    let r = k.reduce(b, &t, Reduce::sum().broadcast());
    let s = k.scan(b, &t, Scan::inclusive_sum());
    let d = k.adjacent_difference_left(b, &s, Difference::subtract());
    k.sync_block();
    let total = r.item(0);
    let u = k.map(&d, move |v| {
        v + total.clone() + arr.read(index::thread_rank())
    });
    k.store_to(b, &y, &u, Store::transpose());
    let kernel = k.build().expect("builds");
    let plan = kernel.plan();
    // The array has a declaration of its own; the window's slices are the others.
    assert_eq!(
        plan.shared().arrays,
        vec![coopgraph::planner::ArrayHome::Own]
    );
    let window: Vec<_> = plan
        .slices()
        .iter()
        .filter(|(i, _)| !plan.arrays().values().any(|a| a == i))
        .map(|(_, s)| s)
        .collect();
    for (i, a) in window.iter().enumerate() {
        for bsl in &window[i + 1..] {
            let live = a.live.0 <= bsl.live.1 && bsl.live.0 <= a.live.1;
            let bytes = a.offset < bsl.offset + bsl.bytes && bsl.offset < a.offset + a.bytes;
            assert!(
                !(live && bytes),
                "{} and {} overlap\n{}",
                a.label,
                bsl.label,
                kernel.explain()
            );
        }
    }
    // And it runs race-free and right.
    let dev = device();
    let f = dev.compile(&kernel).expect("compile");
    let xs: Vec<i32> = (0..512).map(|i| i % 11 - 5).collect();
    let xb = dev.upload(&xs).expect("upload");
    let mut yb = dev.alloc_zeroed::<i32>(512).expect("alloc");
    f.launch_grid(1, (&xb, &mut yb)).expect("launch");
    let total: i32 = xs.iter().sum();
    let mut incl = Vec::new();
    let mut acc = 0;
    for v in &xs {
        acc += v;
        incl.push(acc);
    }
    let want: Vec<i32> = (0..512)
        .map(|p| {
            let diff = if p == 0 {
                incl[0]
            } else {
                incl[p] - incl[p - 1]
            };
            diff + total + xs[(p / 4) * 4]
        })
        .collect();
    assert_same(
        &yb.to_vec().expect("download"),
        &want,
        "mixed shared memory users",
    );
}

/// A time-sliced exchange between blocked and warp-striped order: right, using one warp-sized
/// region, and every barrier needed.
#[test]
fn time_sliced_exchange() {
    use coopgraph::ir::Arrangement;
    let build = |sliced: bool| {
        let via = if sliced {
            ExchangeVia::TimeSliced
        } else {
            ExchangeVia::Shared
        };
        let mut k = KernelBuilder::new(format!("sliced_{sliced}"))
            .block(128)
            .items_per_thread(4);
        let x = k.input::<i32>("x");
        let y = k.output::<i32>("y");
        let b = k.this_block();
        let t = k.load_from(b, &x, Load::direct());
        let w = k.exchange(b, &t, Arrangement::Striped { threads: 32 }, via);
        let u = k.map(&w, |v| v * 4 + index::item().cast::<i32>());
        let back = k.exchange(b, &u, Arrangement::Blocked, via);
        k.store_to(b, &y, &back, Store::direct());
        k.build().expect("builds")
    };
    let sliced = build(true);
    let plain = build(false);
    assert!(sliced.plan().shared_bytes() * 2 < plain.plan().shared_bytes());
    super::common::assemble_all(&sliced);
    let xs: Vec<i32> = (0..512).collect();
    let want: Vec<i32> = (0..512).map(|p| p * 4 + ((p % 128) / 32)).collect();
    let dev = device();
    let f = dev.compile(&sliced).expect("compile");
    let xb = dev.upload(&xs).expect("upload");
    let mut yb = dev.alloc_zeroed::<i32>(512).expect("alloc");
    f.launch_grid(1, (&xb, &mut yb)).expect("launch");
    assert_same(
        &yb.to_vec().expect("download"),
        &want,
        "time-sliced exchange",
    );
    let sim = super::common::race_checker();
    super::common::assert_barriers_necessary(&sliced, |k| {
        let f = compiled(&sim, k)?;
        let xb = sim.upload(&xs)?;
        let mut yb = sim.alloc_zeroed::<i32>(512)?;
        f.launch_grid(1, (&xb, &mut yb))?;
        yb.to_vec()
    });
}

/// Exchanges inside logical warps through shuffles: no shared memory, same results.
#[test]
fn exchanges_through_shuffles() {
    use coopgraph::ir::Arrangement;
    let mut batch = Batch::default();
    let dev = device();
    for (case, (w, items)) in [(32u32, 4u32), (8, 3), (16, 1), (4, 2)]
        .into_iter()
        .enumerate()
    {
        let mut k = KernelBuilder::new(format!("shfl_exchange_{case}"))
            .block(64)
            .items_per_thread(items);
        let x = k.input::<i64>("x");
        let y = k.output::<i64>("y");
        let z = k.output::<i64>("z");
        let g = k.this_warp().group_by(w);
        let t = k.load_from(g, &x, Load::direct());
        let s = k.exchange(
            g,
            &t,
            Arrangement::Striped { threads: w },
            ExchangeVia::Shuffles,
        );
        // Tag with the slot: striped slot i of rank r is group position i*w + r.
        let u = k.map(&s, |v| v * 8 + index::item().cast::<i64>());
        k.store_to(g, &y, &u, Store::striped());
        let back = k.exchange(g, &u, Arrangement::Blocked, ExchangeVia::Shuffles);
        k.store_to(g, &z, &back, Store::direct());
        let kernel = k.build().expect("builds");
        assert_eq!(kernel.plan().shared_bytes(), 0, "{}", kernel.explain());
        assert!(kernel.plan().barriers().is_empty());
        batch.add(&kernel);
        let n = (64 * items) as usize;
        let xs: Vec<i64> = (0..n as i64).map(|v| v * 3 - 100).collect();
        let f = dev.compile(&kernel).expect("compile");
        let xb = dev.upload(&xs).expect("upload");
        let mut yb = dev.alloc_zeroed::<i64>(n).expect("alloc");
        let mut zb = dev.alloc_zeroed::<i64>(n).expect("alloc");
        f.launch_grid(1, (&xb, &mut yb, &mut zb)).expect("launch");
        let tile = (w * items) as usize;
        let want: Vec<i64> = (0..n)
            .map(|p| xs[p] * 8 + ((p % tile) / w as usize) as i64)
            .collect();
        assert_same(
            &yb.to_vec().expect("y"),
            &want,
            &format!("to striped over {w}"),
        );
        assert_same(
            &zb.to_vec().expect("z"),
            &want,
            &format!("back to blocked over {w}"),
        );
    }
}

#[test]
fn block_exchange_through_shuffles_is_rejected() {
    use coopgraph::ir::Arrangement;
    let mut k = KernelBuilder::new("k").block(64).items_per_thread(2);
    let x = k.input::<i32>("x");
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::direct());
    let line = line!() + 1;
    k.exchange(
        b,
        &t,
        Arrangement::Striped { threads: 64 },
        ExchangeVia::Shuffles,
    );
    match k.build() {
        Err(Error::Plan(coopgraph::planner::PlanError::Layout { loc, .. })) => {
            assert_eq!(loc.line, line)
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
}

/// With one item per thread every arrangement holds the same positions: no algorithm's
/// exchange, no conversion, no shared memory and no barrier; the copies stay correct and
/// strict mode sees no mismatch.
#[test]
fn one_item_per_thread_needs_no_exchange() {
    let mut batch = Batch::default();
    let dev = device();
    let algs = [
        Algorithm::Direct,
        Algorithm::Striped,
        Algorithm::Vectorize,
        Algorithm::Transpose,
        Algorithm::WarpTranspose,
        Algorithm::WarpTransposeTimesliced,
    ];
    let xs: Vec<i32> = (0..128).map(|i| i * 7 - 300).collect();
    for load in algs {
        for store in algs {
            let kernel = copy(&format!("one_item_{load:?}_{store:?}"), 128, 1, load, store);
            batch.add(&kernel);
            assert_eq!(
                (kernel.plan().shared_bytes(), kernel.plan().barriers().len()),
                (0, 0),
                "{load:?}/{store:?}\n{}",
                kernel.explain()
            );
            for n in [128u32, 77] {
                let got = run(dev, &kernel, &xs, n).expect("runs");
                let want: Vec<i32> = (0..128)
                    .map(|i| if i < n as usize { xs[i] * 3 } else { -7 })
                    .collect();
                assert_same(&got, &want, &format!("{load:?}/{store:?}, n = {n}"));
            }
        }
    }
    let strict = |items: u32| {
        let mut k = KernelBuilder::new("strict_one_item")
            .block(64)
            .items_per_thread(items)
            .strict_arrangements(true);
        let x = k.input::<i32>("x");
        let y = k.output::<i32>("y");
        let b = k.this_block();
        let t = k.load_from(b, &x, Load::striped());
        k.store_to(b, &y, &t, Store::direct());
        k.build()
    };
    assert!(strict(1).is_ok());
    assert!(matches!(
        strict(2),
        Err(Error::Plan(
            coopgraph::planner::PlanError::ArrangementMismatch { .. }
        ))
    ));
}

/// A copy of a tile of `T` through a transposing `load` and `store` (valid count `n`), by a
/// block of `block` threads with `items` each.
fn transposed_copy<T: coopgraph::ir::Element>(
    block: u32,
    items: u32,
    load: Algorithm,
    store: Algorithm,
) -> Kernel {
    let name = format!("vcopy_{}_{block}x{items}_{load:?}_{store:?}", T::DTYPE);
    let mut k = KernelBuilder::new(name)
        .block(block)
        .items_per_thread(items);
    let (x, y, n) = (k.input::<T>("x"), k.output::<T>("y"), k.scalar::<u32>("n"));
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::direct().algorithm(load).valid_items(n));
    k.store_to(b, &y, &t, Store::default().algorithm(store).valid_items(n));
    k.build().expect("builds")
}

/// Unpadded, a thread's blocked run of 8 or 16 bytes moves through shared memory as one
/// vector: the transposing loads and stores of 4 words, 2 words or 2 doublewords per thread
/// leave their regions unpadded and move the blocked side with one `v4` or `v2` access per
/// thread (at full tiles; a partial tile's moves stay item by item, guarded); 8 words or 4
/// doublewords per thread stay padded, item by item. Each copy is right on the simulator at
/// a full tile, a partial one and an empty one, race-free with every barrier necessary,
/// and assembles for every arch.
#[test]
fn blocked_runs_move_as_one_vector() {
    use super::common::{assert_barriers_necessary, race_checker};
    use coopgraph::ir::Element;
    use coopgraph::ptx::Arch;
    use coopgraph::runtime::DeviceElement;
    /// `vector`: the blocked side's vector access, `None` where it moves item by item;
    /// `padded`: whether the regions are padded.
    fn case<T: Element + DeviceElement + PartialEq + std::fmt::Debug>(
        batch: &mut Batch,
        (block, items): (u32, u32),
        (load, store): (Algorithm, Algorithm),
        vector: Option<&str>,
        padded: bool,
    ) {
        let kernel = transposed_copy::<T>(block, items, load, store);
        let name = kernel.name().to_string();
        let exchanges: Vec<_> = kernel
            .plan()
            .exchanges()
            .iter()
            .flat_map(|(_, e)| e)
            .collect();
        assert_eq!(exchanges.len(), 2, "{name}");
        for e in &exchanges {
            assert_eq!(e.padded, padded, "{name}: {}", kernel.explain());
        }
        // One access a turn: the load's exchange reads the blocked side, the store's writes it.
        let turns = |i: usize| exchanges[i].turns.len();
        let ptx = kernel.ptx(Arch::Sm90).expect("emits");
        let shared_vectors = |op: &str| {
            ptx.lines()
                .filter(|l| l.contains(op) && l.contains(".v"))
                .count()
        };
        match vector {
            Some(v) => {
                let (loads, stores) = (format!("ld.shared.{v}"), format!("st.shared.{v}"));
                assert_eq!(shared_vectors(&loads), turns(0), "{name}\n{ptx}");
                assert_eq!(shared_vectors(&stores), turns(1), "{name}\n{ptx}");
            }
            None => assert_eq!(shared_vectors(".shared."), 0, "{name}\n{ptx}"),
        }
        batch.add(&kernel);
        let tile = (block * items) as usize;
        let xs: Vec<T> = (0..tile as i64)
            .map(|i| T::cast_from_i64(i * 7 - 300))
            .collect();
        let sim = race_checker();
        for n in [tile, tile - 5, 0] {
            let f = compiled(&sim, &kernel).expect("compile");
            let xb = sim.upload(&xs).expect("upload");
            let fill = T::cast_from_i64(-1);
            let mut yb = sim.alloc_filled(tile, fill).expect("alloc");
            f.launch_grid(1, (&xb, &mut yb, n as u32))
                .unwrap_or_else(|e| panic!("{name} at {n}: {e}"));
            let want: Vec<T> = (0..tile)
                .map(|i| if i < n { xs[i] } else { fill })
                .collect();
            assert_eq!(yb.to_vec().expect("download"), want, "{name} at {n}");
        }
        assert_barriers_necessary(&kernel, |k| {
            let f = compiled(&sim, k)?;
            let xb = sim.upload(&xs)?;
            let mut yb = sim.alloc_filled(tile, T::cast_from_i64(-1))?;
            f.launch_grid(1, (&xb, &mut yb, (tile - 3) as u32))?;
            yb.to_vec()
        });
    }
    let warp = (Algorithm::WarpTranspose, Algorithm::WarpTranspose);
    let sliced = (
        Algorithm::WarpTransposeTimesliced,
        Algorithm::WarpTransposeTimesliced,
    );
    let block = (Algorithm::Transpose, Algorithm::Transpose);
    let mut batch = Batch::default();
    case::<i32>(&mut batch, (64, 4), warp, Some("v4"), false);
    case::<f32>(&mut batch, (256, 4), sliced, Some("v4"), false);
    case::<u32>(&mut batch, (48, 4), block, Some("v4"), false);
    case::<u32>(&mut batch, (96, 2), sliced, Some("v2"), false);
    case::<f64>(&mut batch, (64, 2), warp, Some("v2"), false);
    case::<i64>(&mut batch, (40, 2), block, Some("v2"), false);
    case::<i32>(&mut batch, (64, 8), warp, None, true);
    case::<u64>(&mut batch, (64, 4), sliced, None, true);
    // Odd runs meet no conflicts item by item: unpadded, and no vector.
    case::<i32>(&mut batch, (64, 3), block, None, false);
    batch.finish();
}

/// A reduction, a scan and a second reduction in sequence, the reductions broadcast: their
/// partials are small, so each gets bytes of its own, and no collective waits for the one
/// before it to finish reading (no write-after-read barrier). Every barrier left is
/// necessary, and the results are right.
#[test]
fn small_collectives_in_sequence_share_no_bytes() {
    use coopgraph::ir::{Reduce, Scan};
    for block in [256u32, 96] {
        let mut k = KernelBuilder::new(format!("in_sequence_{block}"))
            .block(block)
            .items_per_thread(2);
        let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
        let b = k.this_block();
        let t = k.load_from(b, &x, Load::direct());
        let total = k.reduce(b, &t, Reduce::sum().broadcast());
        let scanned = k.scan(b, &t, Scan::inclusive_sum());
        let most = k.reduce(b, &scanned, Reduce::max().broadcast());
        let out = k.map(&scanned, |v| v ^ (total.item(0) * 3u32 + most.item(0)));
        k.store_to(b, &y, &out, Store::direct());
        let kernel = k.build().expect("builds");
        super::common::assemble_all(&kernel);
        let plan = kernel.plan();
        let small: Vec<_> = plan.slices().values().collect();
        assert_eq!(small.len(), 3, "{}", kernel.explain());
        for (i, a) in small.iter().enumerate() {
            for c in &small[i + 1..] {
                let apart = a.offset + a.bytes <= c.offset || c.offset + c.bytes <= a.offset;
                assert!(apart, "{}", kernel.explain());
            }
        }
        let reuse = plan
            .barriers()
            .iter()
            .any(|b| b.hazard != Hazard::ReadAfterWrite);
        assert!(!reuse, "{}", kernel.explain());
        let n = block as usize * 2;
        let xs: Vec<u32> = (0..n as u32).map(|i| i * 7919 % 1000).collect();
        let sum: u32 = xs.iter().sum();
        let scanned: Vec<u32> = (xs.iter())
            .scan(0u32, |run, v| {
                *run += v;
                Some(*run)
            })
            .collect();
        let most = scanned.iter().copied().max().unwrap_or(0);
        let want: Vec<u32> = scanned.iter().map(|v| v ^ (sum * 3 + most)).collect();
        let go = |dev: &Device, k: &Kernel| -> Result<Vec<u32>, RuntimeError> {
            let f = compiled(dev, k)?;
            let xb = dev.upload(&xs)?;
            let mut yb = dev.alloc_zeroed::<u32>(n)?;
            f.launch_grid(1, (&xb, &mut yb))?;
            yb.to_vec()
        };
        let got = go(device(), &kernel).expect("runs");
        assert_same(&got, &want, kernel.name());
        let sim = Device::sim();
        super::common::assert_barriers_necessary(&kernel, |k| go(&sim, k));
    }
}

/// Past 48 KiB of shared memory small slices share bytes as before, so a kernel near a
/// device's limit is not pushed over it: the kernel needs its largest slice, not the sum.
#[test]
fn small_collectives_share_bytes_past_48k() {
    use coopgraph::ir::{Reduce, Scan};
    let mut k = KernelBuilder::new("past_48k")
        .block(1024)
        .items_per_thread(12);
    let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::transpose());
    let total = k.reduce(b, &t, Reduce::sum().broadcast());
    let scanned = k.scan(b, &t, Scan::inclusive_sum());
    let out = k.map(&scanned, |v| v + total.item(0));
    k.store_to(b, &y, &out, Store::transpose());
    let kernel = k.build().expect("builds");
    let plan = kernel.plan();
    let largest = plan.slices().values().map(|s| s.bytes).max().unwrap_or(0);
    assert!(largest > 48 * 1024, "{}", kernel.explain());
    assert_eq!(plan.shared_bytes(), largest, "{}", kernel.explain());
}

/// Two loads in a row that each exchange their tile through shared memory (a sort's keys and
/// values) issue both tiles' global reads before the first exchange, so the second tile's
/// memory latency overlaps the first's instead of waiting behind its barrier: every
/// `ld.global` of the kernel comes before its first `st.shared`. With partial tiles (one
/// load's slots past the valid count unwritten, the other's given a default) at blocks that
/// are not multiples of 32, the two payloads still come out right.
#[test]
fn consecutive_exchanged_loads_read_global_memory_before_the_first_exchange() {
    let mut batch = Batch::default();
    let dev = device();
    // (block, items, valid, algorithm): warp transposes need whole warps; a block transpose
    // takes any block.
    for (block, items, valid, alg) in [
        (96u32, 4u32, 301u32, Algorithm::WarpTranspose),
        (48, 3, 100, Algorithm::Transpose),
        (256, 16, 4000, Algorithm::WarpTranspose),
    ] {
        let mut k = KernelBuilder::new(format!("two_loads_{block}x{items}"))
            .block(block)
            .items_per_thread(items);
        let (x, v) = (k.input::<i32>("x"), k.input::<u32>("v"));
        let (y, w) = (k.output::<i32>("y"), k.output::<u32>("w"));
        let n = k.scalar::<u32>("n");
        let b = k.this_block();
        let keys = k.load_from(b, &x, Load::direct().algorithm(alg).valid_items(n));
        let values = k.load_from(
            b,
            &v,
            Load::direct().algorithm(alg).valid_items(n).oob_default(9),
        );
        k.store_to(b, &y, &keys, Store::direct().valid_items(n));
        k.store_to(b, &w, &values, Store::direct());
        let kernel = k.build().unwrap_or_else(|e| panic!("{e}"));
        batch.add(&kernel);
        let ptx = kernel.ptx(coopgraph::ptx::Arch::Sm90).expect("emits");
        let last_read = ptx.rfind("ld.global").expect("global reads");
        let first_exchange = ptx.find("st.shared").expect("an exchange");
        assert!(last_read < first_exchange, "{}", kernel.name());
        let tile = (block * items) as usize;
        let xs: Vec<i32> = (0..tile as i32).map(|i| i * 3 - 500).collect();
        let vs: Vec<u32> = (0..tile as u32).map(|i| i ^ 0x5a5a).collect();
        let f = dev.compile(&kernel).expect("compile");
        let (xb, vb) = (
            dev.upload(&xs).expect("upload"),
            dev.upload(&vs).expect("upload"),
        );
        let mut yb = dev.alloc_filled(tile, -7i32).expect("alloc");
        let mut wb = dev.alloc_filled(tile, 7u32).expect("alloc");
        f.launch_grid(1, (&xb, &vb, &mut yb, &mut wb, valid))
            .expect("launch");
        let want_y: Vec<i32> = (0..tile)
            .map(|i| if i < valid as usize { xs[i] } else { -7 })
            .collect();
        let want_w: Vec<u32> = (0..tile)
            .map(|i| if i < valid as usize { vs[i] } else { 9 })
            .collect();
        assert_same(&yb.to_vec().expect("download"), &want_y, kernel.name());
        assert_same(&wb.to_vec().expect("download"), &want_w, kernel.name());
    }
}

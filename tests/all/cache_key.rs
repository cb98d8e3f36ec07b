//! The cache key covers the whole IR: kernels that differ in any field get different keys (and,
//! where the field reaches the code, different images), and the cache never hands one kernel's
//! module to another.

use coopgraph::ir::index::{self, Axis};
use coopgraph::ir::{Arrangement, ExchangeVia, Reduce, ReduceAlgorithm, Sharing, StorageSpec};
use coopgraph::ptx::Arch;
use coopgraph::runtime::{Compile, Device, KernelImage};
use coopgraph::{Kernel, KernelBuilder, Load, Store};

/// Everything the test kernel lets one vary.
#[derive(Debug, Clone, Copy)]
struct Knobs {
    name: &'static str,
    block: u32,
    /// The block's extent along y (its threads stay `block`).
    rows: u32,
    items: u32,
    strict: bool,
    extra_name: &'static str,
    extra_output: bool,
    extra_f32: bool,
    warp_store: bool,
    data_align: u32,
    storage_size: Option<u32>,
    storage_align: u32,
    auto_sync: bool,
    exclusive: bool,
    array_len: u32,
    array_f32: bool,
    /// The array's view reads bytes (else 16-bit halves).
    view_u8: bool,
    local_len: u32,
    table_last: u32,
    factor: u32,
    sync: bool,
    /// A grid barrier where `sync` puts a block barrier.
    grid_sync: bool,
    swap_maps: bool,
    threshold: u32,
    /// The axis of the block index the branch tests.
    branch_axis: Axis,
    trips: u32,
    raking: bool,
    broadcast: bool,
}

const BASE: Knobs = Knobs {
    name: "keyed",
    block: 64,
    rows: 1,
    items: 4,
    strict: false,
    extra_name: "e",
    extra_output: false,
    extra_f32: false,
    warp_store: false,
    data_align: 16,
    storage_size: None,
    storage_align: 16,
    auto_sync: true,
    exclusive: false,
    array_len: 16,
    array_f32: false,
    view_u8: false,
    local_len: 4,
    table_last: 3,
    factor: 2,
    sync: false,
    grid_sync: false,
    swap_maps: false,
    threshold: 5,
    branch_axis: Axis::X,
    trips: 3,
    raking: false,
    broadcast: false,
};

fn build(k: &Knobs) -> Kernel {
    let mut b = KernelBuilder::new(k.name)
        .block_dims([k.block / k.rows, k.rows, 1])
        .items_per_thread(k.items)
        .strict_arrangements(k.strict);
    let x = b.input::<u32>("x");
    let y = b.output::<u32>("y");
    let z = b.output::<u32>("z");
    match (k.extra_output, k.extra_f32) {
        (false, false) => {
            b.input::<u32>(k.extra_name);
        }
        (true, false) => {
            b.output::<u32>(k.extra_name);
        }
        (_, true) => {
            b.input::<f32>(k.extra_name);
        }
    }
    let block = b.this_block();
    let shared = b.temp_storage({
        let spec = StorageSpec::default()
            .alignment(k.storage_align)
            .auto_sync(k.auto_sync);
        match k.storage_size {
            Some(n) => spec.size_in_bytes(n),
            None => spec,
        }
    });
    let single = b.temp_storage(StorageSpec::default().sharing(if k.exclusive {
        Sharing::Exclusive
    } else {
        Sharing::Shared
    }));
    // Placed first, so the storages' offsets depend on its size and their alignment.
    if k.array_f32 {
        let arr = b.shared_array::<f32>(k.array_len);
        b.shared_write(&arr, coopgraph::ir::index::thread_rank(), 1.0f32);
    } else {
        let arr = b.shared_array::<u32>(k.array_len);
        b.shared_write(&arr, coopgraph::ir::index::thread_rank(), 1u32);
        b.sync_block();
        if k.view_u8 {
            let v = b.shared_view::<u8, _>(&arr);
            b.shared_write(&v, 1u32, 2u8);
        } else {
            let v = b.shared_view::<u16, _>(&arr);
            b.shared_write(&v, 1u32, 2u16);
        }
    }
    let table = b.const_array(&[1u32, 2, k.table_last]);
    let scratch = b.local_array::<u32>(k.local_len);
    b.local_write(&scratch, 0u32, table.read(index::thread_rank() % 3u32));
    let items = k.items;
    let d = b.thread_data_aligned::<u32>(items, k.data_align);
    b.load_into(block, &x, &d, Load::vectorize());
    let u = b.load_from(block, &x, Load::transpose().temp_storage(&single));
    // Its last read (the last warp's turn, on the first warp's region) and the store's first
    // write of one storage: ordered by a barrier only with auto-sync.
    let t = b.load_from(
        block,
        &x,
        Load::warp_transpose_timesliced().temp_storage(&shared),
    );
    let factor = k.factor;
    let (m1, m2) = if k.swap_maps {
        let m2 = b.map(&t, |v| v + 1u32);
        (b.map(&d, move |v| v * factor), m2)
    } else {
        let m1 = b.map(&d, move |v| v * factor);
        (m1, b.map(&t, |v| v + 1u32))
    };
    if k.sync {
        b.sync_block();
    }
    if k.grid_sync {
        b.sync_grid();
    }
    let threshold = k.threshold;
    let sum = b.map2(&m1, &m2, |a, c| a + c);
    b.if_(index::block_idx(k.branch_axis).lt(threshold), |b| {
        b.store_to(
            block,
            &y,
            &sum,
            Store::warp_transpose().temp_storage(&shared),
        );
    });
    let acc = b.fill::<u32>(0u32);
    b.for_range(0u32, k.trips, |b, _| {
        let next = b.map2(&acc, &u, |a, v| a + v);
        b.assign(&acc, &next);
    });
    let mut reduce = Reduce::sum();
    if k.raking {
        reduce = reduce.algorithm(ReduceAlgorithm::Raking);
    }
    if k.broadcast {
        reduce = reduce.broadcast();
    }
    let total = b.reduce(block, &acc, reduce);
    let out = b.thread_data_n::<u32>(1);
    b.assign(&out, &total);
    let spread = b.exchange(
        block,
        &acc,
        Arrangement::Striped { threads: k.block },
        ExchangeVia::Shared,
    );
    if k.warp_store {
        b.store_to(b.this_warp(), &z, &acc, Store::direct());
    } else {
        b.store_to(block, &z, &spread, Store::striped());
    }
    b.build().expect("the test kernel builds")
}

fn image(k: &Kernel) -> KernelImage {
    k.emit(Arch::Sm90).expect("emits")
}

#[test]
fn every_ir_field_is_in_the_key() {
    let base = build(&BASE);
    let base_image = image(&base);
    // Each change, and whether it reaches the image (PTX or signature).
    let changes: Vec<(&str, Knobs, bool)> = vec![
        (
            "name",
            Knobs {
                name: "other",
                ..BASE
            },
            true,
        ),
        ("block", Knobs { block: 128, ..BASE }, true),
        ("block shape", Knobs { rows: 2, ..BASE }, true),
        ("items per thread", Knobs { items: 2, ..BASE }, true),
        // A kernel that builds in strict mode has no conversions: the same code.
        (
            "strict arrangements",
            Knobs {
                strict: true,
                ..BASE
            },
            false,
        ),
        (
            "parameter name",
            Knobs {
                extra_name: "f",
                ..BASE
            },
            true,
        ),
        (
            "parameter role",
            Knobs {
                extra_output: true,
                ..BASE
            },
            true,
        ),
        (
            "parameter dtype",
            Knobs {
                extra_f32: true,
                ..BASE
            },
            true,
        ),
        (
            "group",
            Knobs {
                warp_store: true,
                ..BASE
            },
            true,
        ),
        (
            "payload alignment",
            Knobs {
                data_align: 8,
                ..BASE
            },
            true,
        ),
        (
            "storage size",
            Knobs {
                storage_size: Some(4096),
                ..BASE
            },
            true,
        ),
        (
            "storage alignment",
            Knobs {
                storage_align: 512,
                ..BASE
            },
            true,
        ),
        (
            "storage auto-sync",
            Knobs {
                auto_sync: false,
                ..BASE
            },
            true,
        ),
        // Sharing only decides whether a second user is an error.
        (
            "storage sharing",
            Knobs {
                exclusive: true,
                ..BASE
            },
            false,
        ),
        (
            "array length",
            Knobs {
                array_len: 64,
                ..BASE
            },
            true,
        ),
        (
            "array dtype",
            Knobs {
                array_f32: true,
                ..BASE
            },
            true,
        ),
        (
            "array view dtype",
            Knobs {
                view_u8: true,
                ..BASE
            },
            true,
        ),
        (
            "local array length",
            Knobs {
                local_len: 5,
                ..BASE
            },
            true,
        ),
        (
            "constant values",
            Knobs {
                table_last: 4,
                ..BASE
            },
            true,
        ),
        ("expression", Knobs { factor: 3, ..BASE }, true),
        ("an extra op", Knobs { sync: true, ..BASE }, true),
        (
            "a grid barrier",
            Knobs {
                grid_sync: true,
                ..BASE
            },
            true,
        ),
        (
            "op order",
            Knobs {
                swap_maps: true,
                ..BASE
            },
            true,
        ),
        (
            "branch condition",
            Knobs {
                threshold: 6,
                ..BASE
            },
            true,
        ),
        (
            "index axis",
            Knobs {
                branch_axis: Axis::Y,
                ..BASE
            },
            true,
        ),
        ("loop bound", Knobs { trips: 4, ..BASE }, true),
        (
            "reduce algorithm",
            Knobs {
                raking: true,
                ..BASE
            },
            true,
        ),
        (
            "reduce broadcast",
            Knobs {
                broadcast: true,
                ..BASE
            },
            true,
        ),
    ];
    let mut keys = vec![base.key().clone()];
    for (what, knobs, reaches_code) in changes {
        let k = build(&knobs);
        assert_ne!(k.key(), base.key(), "{what}: same key");
        assert_ne!(k.key().digest(), base.key().digest(), "{what}: same hash");
        if reaches_code {
            assert!(image(&k) != base_image, "{what}: same image");
        }
        assert!(!keys.contains(k.key()), "{what}: key of another change");
        keys.push(k.key().clone());
    }
}

#[test]
fn source_lines_do_not_change_the_key() {
    // The same kernel written twice, on other lines.
    let a = {
        let mut b = KernelBuilder::new("lines").block(32).items_per_thread(2);
        let (x, y) = (b.input::<u32>("x"), b.output::<u32>("y"));
        let t = b.load_from(b.this_block(), &x, Load::transpose());
        b.store_to(b.this_block(), &y, &t, Store::direct());
        b.build().expect("builds")
    };
    let b = {
        let mut b = KernelBuilder::new("lines").block(32).items_per_thread(2);
        let x = b.input::<u32>("x");
        let y = b.output::<u32>("y");
        let t = b.load_from(b.this_block(), &x, Load::transpose());
        b.store_to(b.this_block(), &y, &t, Store::direct());
        b.build().expect("builds")
    };
    assert_ne!(a.ir().ops[0].loc, b.ir().ops[0].loc);
    assert_ne!(a.ir().items_loc, b.ir().items_loc);
    assert_eq!(a.key(), b.key());
    assert_eq!(a.key().digest(), b.key().digest());
}

#[test]
fn kernels_differing_in_shared_sizes_get_their_own_modules() {
    let dev = Device::sim();
    let small = build(&BASE);
    let large = build(&Knobs {
        array_len: 64,
        ..BASE
    });
    let sized = build(&Knobs {
        storage_size: Some(4096),
        ..BASE
    });
    let f_small = dev.compile(&small).expect("loads");
    let f_large = dev.compile(&large).expect("loads");
    let f_sized = dev.compile(&sized).expect("loads");
    assert!(!f_small.same_module(&f_large));
    assert!(!f_small.same_module(&f_sized));
    assert!(f_large.image().static_smem > f_small.image().static_smem);
    assert!(f_sized.image().static_smem > f_small.image().static_smem);
    // The same kernel built again is a hit.
    assert!(
        dev.compile(&build(&BASE))
            .expect("hit")
            .same_module(&f_small)
    );
    assert_eq!(dev.cache_stats().misses, 3);
}

#[test]
fn kernels_without_a_barrier_have_keys_of_their_own() {
    let k = build(&BASE);
    let n = k.plan().barriers().len();
    assert!(n >= 2, "the test kernel has {n} barriers");
    let mut keys = vec![k.key().clone()];
    for i in 0..n {
        let w = k.without_barrier(i).expect("barrier exists");
        assert_eq!(
            w.key(),
            k.without_barrier(i).expect("barrier exists").key(),
            "the same barrier left out twice is one kernel"
        );
        assert!(!keys.contains(w.key()), "barrier {i}");
        keys.push(w.key().clone());
        // Leaving out two barriers in either order is one kernel too, and another than either.
        if i + 1 < n {
            let ab = w.without_barrier(i).expect("barrier exists");
            let ba = k
                .without_barrier(i + 1)
                .and_then(|v| v.without_barrier(i))
                .expect("barriers exist");
            assert_eq!(ab.key(), ba.key());
            assert!(!keys.contains(ab.key()));
        }
    }
    let dev = Device::sim();
    let whole = dev.compile(&k).expect("loads");
    let less = dev
        .compile(&k.without_barrier(0).expect("barrier"))
        .expect("loads");
    assert!(!whole.same_module(&less));
    assert_ne!(whole.image().ptx, less.image().ptx);
}

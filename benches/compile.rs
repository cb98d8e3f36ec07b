//! Compile-time benchmarks: builder → PTX text for the quickstart kernel, a 20-op kernel, a
//! block radix sort of pairs and the device-wide pairs sort's six kernels, and a
//! specialization-cache hit.

use coopgraph::algorithms::DeviceRadixSort;
use coopgraph::ir::{RadixSort, SortOutput, index};
use coopgraph::ptx::Arch;
use coopgraph::runtime::Device;
use coopgraph::{Kernel, KernelBuilder, Load, Store};
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

fn quickstart() -> Kernel {
    KernelBuilder::new("scale_add")
        .block(128)
        .items_per_thread(4)
        .load::<f32>("x")
        .map(|v| v * 2.0 + 1.0)
        .store("y")
        .build()
        .expect("builds")
}

/// Twenty ops: loads, maps, branches, a loop, slot writes and stores.
fn twenty_ops() -> Kernel {
    let mut k = KernelBuilder::new("twenty").block(256).items_per_thread(4);
    let a = k.input::<f32>("a");
    let b = k.input::<f32>("b");
    let y = k.output::<f32>("y");
    let z = k.output::<i32>("z");
    let n = k.scalar::<u32>("n");
    let block = k.this_block();
    let warp = k.this_warp();
    let ta = k.load_from(block, &a, Load::striped().valid_items(n).oob_default(0.0)); // 1
    let tb = k.load_from(block, &b, Load::striped().valid_items(n).oob_default(1.0)); // 2
    let s = k.map2(&ta, &tb, |x, y| x * y + 1.0); // 3
    let t = k.map(&s, |v| v.abs().sqrt()); // 4
    let acc = k.fill(0.0f32); // 5
    k.for_range(0u32, 4u32, |k, i| {
        // 6
        let next = k.map2(&acc, &t, |a, v| a + v * i.cast::<f32>()); // 7
        k.assign(&acc, &next); // 8
    });
    let out = k.thread_data::<f32>();
    k.if_else(
        // 9
        index::warp_rank().lt(4u32),
        |k| {
            let m = k.map(&acc, |v| v.max(0.5)); // 10
            k.assign(&out, &m); // 11
        },
        |k| {
            let m = k.map(&acc, |v| v.min(0.5)); // 12
            k.assign(&out, &m); // 13
        },
    );
    k.set_item(&out, 0, out.item(0) + out.item(1)); // 14
    k.store_to(block, &y, &out, Store::striped().valid_items(n)); // 15
    let ints = k.map(&out, |v| v.cast::<i32>() ^ 0x55); // 16
    let shifted = k.map(&ints, |v| (&v << 2u32) | (&v >> 3u32)); // 17
    let _ = shifted;
    let w = k.load_from(warp, &a, Load::direct()); // 18
    let wi = k.map(&w, |x| x.cast::<i32>()); // 19
    k.store_to(warp, &z, &wi, Store::direct()); // 20
    k.build().expect("builds")
}

/// A block radix sort of `u32` pairs, 256 threads × 16 items: a tile's keys and values
/// loaded, sorted in shared memory digit by digit, stored striped.
fn block_sort_pairs() -> Kernel {
    let mut k = KernelBuilder::new("block_sort_pairs")
        .block(256)
        .items_per_thread(16);
    let (x, y) = (k.input::<u32>("keys"), k.output::<u32>("sorted"));
    let (v, w) = (k.input::<u32>("values"), k.output::<u32>("moved"));
    let b = k.this_block();
    let keys = k.load_from(b, &x, Load::warp_transpose());
    let values = k.load_from(b, &v, Load::warp_transpose());
    let controls = RadixSort::ascending().output(SortOutput::Striped);
    let (sk, sv) = k.radix_sort_pairs(b, &keys, &values, controls);
    k.store_to(b, &y, &sk, Store::striped());
    k.store_to(b, &w, &sv, Store::striped());
    k.build().expect("builds")
}

fn bench(c: &mut Criterion) {
    c.bench_function("builder_to_ptx/quickstart", |b| {
        b.iter(|| black_box(quickstart().ptx(Arch::Sm90).expect("emits")))
    });
    c.bench_function("builder_to_ptx/twenty_ops", |b| {
        b.iter(|| black_box(twenty_ops().ptx(Arch::Sm90).expect("emits")))
    });
    c.bench_function("builder_to_ptx/block_radix_sort_pairs_256x16", |b| {
        b.iter(|| black_box(block_sort_pairs().ptx(Arch::Sm90).expect("emits")))
    });
    // The histogram, the offsets and four digit passes, each built and written out.
    c.bench_function("builder_to_ptx/device_radix_sort_pairs_u32", |b| {
        b.iter(|| {
            let kernels = DeviceRadixSort::pairs::<u32, u32>()
                .pair_kernels()
                .expect("builds");
            for k in &kernels {
                black_box(k.ptx(Arch::Sm90).expect("emits"));
            }
        })
    });
    let device = Device::sim();
    let kernel = quickstart();
    device.compile(&kernel).expect("first compile");
    c.bench_function("cache_hit", |b| {
        b.iter(|| black_box(device.compile(black_box(&kernel)).expect("hit")))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);

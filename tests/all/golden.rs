//! Golden tests: PTX (or error text) for a handful of kernels, compared with files under
//! `tests/golden/`; `BLESS=1` refreshes them. Each PTX is also assembled by ptxas.

use super::common::{assemble, check};
use coopgraph::ir::index;
use coopgraph::ptx::Arch;
use coopgraph::{KernelBuilder, Load, Store};

fn golden_ptx(file: &str, kernel: &coopgraph::Kernel, arch: Arch) {
    let ptx = kernel.ptx(arch).expect("emits");
    assemble(&ptx, arch, file);
    check(file, &ptx);
}

#[test]
fn quickstart_pipeline() {
    let kernel = KernelBuilder::new("scale_add")
        .block(128)
        .items_per_thread(4)
        .load::<f32>("x")
        .map(|v| v * 2.0 + 1.0)
        .store("y")
        .build()
        .expect("builds");
    golden_ptx("scale_add.sm_90.ptx", &kernel, Arch::Sm90);
}

#[test]
fn logical_warps_of_8_striped_i8_with_default() {
    let mut k = KernelBuilder::new("warp8_i8").block(64).items_per_thread(3);
    let x = k.input::<i8>("x");
    let y = k.output::<i8>("y");
    let n = k.scalar::<u32>("n");
    let w = k.this_warp().group_by(8);
    let t = k.load_from(w, &x, Load::striped().valid_items(n).oob_default(-1));
    let u = k.map(&t, |v| (v * 3i8) >> 1u32);
    k.store_to(w, &y, &u, Store::striped().valid_items(n));
    golden_ptx(
        "warp8_i8.sm_75.ptx",
        &k.build().expect("builds"),
        Arch::Sm75,
    );
}

#[test]
fn grid_stride_tiles_and_branches() {
    let mut k = KernelBuilder::new("tiles_branch")
        .block(256)
        .items_per_thread(2);
    let x = k.input::<f64>("x");
    let y = k.output::<f64>("y");
    let n = k.scalar::<u32>("n");
    let block = k.this_block();
    k.tiles(n, |k, _tile| {
        let t = k.load_from(block, &x, Load::direct());
        let out = k.thread_data::<f64>();
        k.if_else(
            index::warp_rank().eq(0u32),
            |k| {
                let s = k.map(&t, |v| v.abs().sqrt());
                k.assign(&out, &s);
            },
            |k| {
                let s = k.map(&t, |v| v.fma(2.0, -1.0));
                k.assign(&out, &s);
            },
        );
        k.store_to(block, &y, &out, Store::direct());
    });
    golden_ptx(
        "tiles_branch.sm_80.ptx",
        &k.build().expect("builds"),
        Arch::Sm80,
    );
}

#[test]
fn casts_and_math() {
    let mut k = KernelBuilder::new("casts")
        .block(32)
        .items_per_thread(1)
        .fastmath();
    let x = k.input::<f32>("x");
    let y = k.output::<u16>("y");
    let warp = k.this_warp();
    let t = k.load_from(warp, &x, Load::direct());
    let u = k.map(&t, |v| {
        let s = v.sin() * v.exp2() + v.tanh();
        (s.floor().cast::<i32>().max(0i32).cast::<u16>() ^ 0x0f0fu16).reverse_bits()
    });
    k.store_to(warp, &y, &u, Store::direct());
    golden_ptx("casts.sm_90.ptx", &k.build().expect("builds"), Arch::Sm90);
}

#[test]
fn error_listing() {
    let mut k = KernelBuilder::new("bad").block(2000);
    let y = k.output::<f32>("y");
    let block = k.this_block();
    let t = k.thread_data::<f32>();
    k.store_to(block, &y, &t, Store::direct());
    let err = k.build().expect_err("does not verify");
    check("bad.errors.txt", &err.to_string());
}

/// A grid barrier between two phases: the barrier word's hidden parameter, the block barrier,
/// thread 0's release add and acquire spin, the block barrier again.
#[test]
fn grid_barrier_between_phases() {
    let mut k = KernelBuilder::new("grid_phases").block(96);
    let (a, b) = (k.buffer::<u32>("a"), k.output::<u32>("b"));
    let g = k.this_grid();
    let (i, n) = (g.thread_rank(), g.num_threads());
    k.write(&a, i.clone(), i.clone() * 2u32);
    k.sync_grid();
    k.write(&b, i.clone(), a.at((i + 1u32) % n));
    let kernel = k.build().expect("builds");
    golden_ptx("grid_phases.sm_90.ptx", &kernel, Arch::Sm90);
}

/// A cluster of two blocks: each writes its shared array, a cluster barrier, a read of the
/// other block's copy (`mapa` and `ld.shared::cluster`), and the trailing cluster barrier
/// before the kernel ends.
#[test]
fn cluster_exchange_through_distributed_shared_memory() {
    let mut k = KernelBuilder::new("cluster_swap").block(64).cluster(2);
    let y = k.output::<u32>("y");
    let c = k.this_cluster();
    let t = index::thread_rank();
    let a = k.shared_array::<u32>(64);
    k.shared_write(&a, &t, t.clone() + 1u32);
    k.sync_cluster();
    let other = k.map_shared_rank(&a, 1u32 - c.block_rank());
    let v = k.remote_read(&other, (t.clone() + 1u32) % 64u32);
    k.write(&y, index::block_index() * 64u32 + t, v);
    let kernel = k.build().expect("builds");
    golden_ptx("cluster_swap.sm_90.ptx", &kernel, Arch::Sm90);
}

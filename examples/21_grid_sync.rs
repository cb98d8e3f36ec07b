//! The latency of a grid barrier (`sync_grid`), in a cooperative launch of as many blocks of
//! 256 threads as can be resident, as `benches/cub/grid_sync.cu` measures CUDA C++'s
//! `cg::this_grid().sync()`.
//!
//! First a checking kernel: before each barrier thread 0 of every block adds 1 to a counter,
//! and after it checks that every block's add of that phase is visible; a missing one, or a
//! final count other than blocks x barriers, ends the example with status 1. Then the timed
//! kernel, which does nothing but its barriers: the median of 5 launches divided by their
//! count. On a GPU it prints one CSV line in the shape `cub_grid_sync` prints
//! (`kind,impl,blocks,threads,syncs,us_per_sync`); `COOPGRAPH_GRID_SYNCS` sets the barriers
//! per launch (default 10,000 on a GPU, 20 on the simulator).

#[path = "support/bench.rs"]
#[allow(dead_code)]
mod bench;

use bench::OrExit;
use coopgraph::ir::{Atomic, index};
use coopgraph::runtime::{Backend, Device};
use coopgraph::{Kernel, KernelBuilder};

const BLOCK: u32 = 256;

/// `syncs` grid barriers and nothing else.
fn sync_only() -> Kernel {
    let mut k = KernelBuilder::new("sync_only").block(BLOCK);
    let syncs = k.scalar::<u32>("syncs");
    k.for_range(0u32, syncs, |k, _| k.sync_grid());
    k.build().or_exit("builds")
}

/// Each phase: thread 0 of each block adds 1 to `count`; after the barrier it counts an
/// error where fewer than every block's adds of the phases so far are visible.
fn sync_checked() -> Kernel {
    let mut k = KernelBuilder::new("sync_checked").block(BLOCK);
    let (count, errors) = (k.buffer::<u32>("count"), k.buffer::<u32>("errors"));
    let syncs = k.scalar::<u32>("syncs");
    let g = k.this_grid();
    let lead = index::thread_rank().eq(0u32);
    k.for_range(0u32, syncs, |k, s| {
        k.if_(lead.clone(), |k| {
            k.atomic(&count, 0u32, Atomic::add(1u32));
        });
        k.sync_grid();
        k.if_(lead.clone(), |k| {
            let seen = k.atomic(&count, 0u32, Atomic::add(0u32));
            k.if_(seen.lt((s + 1u32) * g.num_blocks()), |k| {
                k.atomic(&errors, 0u32, Atomic::add(1u32));
            });
        });
        k.sync_grid();
    });
    k.build().or_exit("builds")
}

fn main() {
    let dev = Device::default_device().or_exit("a device");
    let on_gpu = matches!(dev.backend(), Backend::Cuda { .. });
    let syncs: u32 = std::env::var("COOPGRAPH_GRID_SYNCS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if on_gpu { 10_000 } else { 20 });
    let timed = dev.compile(&sync_only()).or_exit("compile");
    let checked = dev.compile(&sync_checked()).or_exit("compile");
    let blocks = timed
        .max_cooperative_blocks()
        .or_exit("occupancy")
        .min(checked.max_cooperative_blocks().or_exit("occupancy"));
    let blocks = if on_gpu { blocks } else { blocks.min(8) } as u32;

    let mut count = dev.alloc_zeroed::<u32>(1).or_exit("alloc");
    let mut errors = dev.alloc_zeroed::<u32>(1).or_exit("alloc");
    let checked_syncs = syncs.min(1000);
    checked
        .launch_cooperative_grid(blocks, (&mut count, &mut errors, checked_syncs))
        .or_exit("the checking kernel");
    let (c, e) = (
        count.to_vec().or_exit("download")[0],
        errors.to_vec().or_exit("download")[0],
    );
    if e != 0 || c != blocks * checked_syncs {
        eprintln!(
            "error: grid barrier check: {e} arrivals missed, count {c} instead of {}",
            blocks * checked_syncs
        );
        std::process::exit(1);
    }
    timed
        .launch_cooperative_grid(blocks, (syncs,))
        .or_exit("the timed kernel");
    if !on_gpu {
        println!(
            "grid barriers over {blocks} blocks of {BLOCK}: every block's arrival visible after \
             each of {checked_syncs} barriers"
        );
        return;
    }
    let t = bench::time(&dev, 5, || {
        timed
            .launch_cooperative_grid(blocks, (syncs,))
            .or_exit("the timed kernel")
    });
    let us = t.as_secs_f64() * 1e6 / f64::from(syncs);
    println!("kind,impl,blocks,threads,syncs,us_per_sync");
    println!("grid_sync,coopgraph,{blocks},{BLOCK},{syncs},{us:.4}");
}

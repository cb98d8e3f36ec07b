//! Groups of whole warps inside a block: a block of 10 warps splits into groups of 3 warps
//! (`group_by_warps(3)`), leaving warp 9 in no group. Each group sums its 384 values with a
//! reduction that synchronizes through its own named barrier (`bar.sync id, 96`), inside
//! `if_member`; warp 9 sums its own values with a warp reduction. Each group also scans its
//! tile (an exclusive prefix sum of the group's own 384 values, CUB's `BlockScan` over the
//! sub-block: warp scans, the warps' totals through shared memory, the group's barrier, the
//! carry added) and stores it. The four partial sums of each block and every group's prefix
//! sums are checked against the CPU; the example exits non-zero when one is wrong.

use coopgraph::ir::{Reduce, Scan, index};
use coopgraph::runtime::{Backend, Device};
use coopgraph::{KernelBuilder, Load, Store};

/// Runs the example; an error is printed with its `Display` text (each cause once).
fn main() -> std::process::ExitCode {
    match run() {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => std::process::ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

const BLOCK: u32 = 320;
const ITEMS: u32 = 4;
const WARPS_PER_GROUP: u32 = 3;
/// Partial sums per block: one per group of 3 warps, and warp 9's.
const PARTIALS: u32 = 4;

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let mut k = KernelBuilder::new("warp_group_sums")
        .block(BLOCK)
        .items_per_thread(ITEMS);
    let (x, sums) = (k.input::<u64>("x"), k.output::<u64>("sums"));
    let prefixes = k.output::<u64>("prefixes");
    let block = k.this_block();
    let trio = block.group_by_warps(WARPS_PER_GROUP);
    let t = k.load_from(block, &x, Load::direct());
    let first = index::block_index() * PARTIALS;
    k.if_member(&trio, |k, g| {
        let s = k.reduce(g, &t, Reduce::sum());
        k.if_(g.thread_rank().eq(0u32), |k| {
            k.write(&sums, first.clone() + g.meta_group_rank(), s.item(0));
        });
        // Each group's exclusive prefix sums of its own tile, stored where the tile lies.
        let p = k.scan(g, &t, Scan::exclusive_sum());
        k.store_to(g, &prefixes, &p, Store::direct());
    });
    // The warp left over: groups of 3 hold warps 0..9.
    let warp = k.this_warp();
    k.if_(index::warp_rank().ge(9u32), |k| {
        let s = k.reduce(warp, &t, Reduce::sum());
        k.if_(index::lane().eq(0u32), |k| {
            k.write(&sums, first.clone() + 3u32, s.item(0));
        });
    });
    let kernel = k.build()?;
    println!("{}", kernel.explain());

    let device = Device::default_device()?;
    let ptx = kernel.ptx(device.arch())?;
    let named = ptx
        .lines()
        .filter(|l| l.trim_start().starts_with("bar.sync") && l.contains(", 96;"))
        .count();
    println!(
        "PTX for {}: {named} named barriers of 96 threads",
        device.arch()
    );

    let blocks = 64u32;
    let tile = (BLOCK * ITEMS) as usize;
    let n = blocks as usize * tile;
    let xs: Vec<u64> = (0..n as u64).map(|i| i * 7 % 1000 + i / 1000).collect();
    let xb = device.upload(&xs)?;
    let mut sb = device.alloc_zeroed::<u64>((blocks * PARTIALS) as usize)?;
    let mut pb = device.alloc_filled(n, u64::MAX)?;
    device
        .compile(&kernel)?
        .launch_grid(blocks, (&xb, &mut sb, &mut pb))?;
    let got = sb.to_vec()?;
    let prefixes = pb.to_vec()?;

    let group = (WARPS_PER_GROUP * 32 * ITEMS) as usize;
    let mut want = Vec::new();
    for b in xs.chunks(tile) {
        for j in 0..3 {
            want.push(b[j * group..(j + 1) * group].iter().sum::<u64>());
        }
        want.push(b[3 * group..].iter().sum::<u64>());
    }
    // Each group's exclusive prefix sums; warp 9's values get none.
    let mut want_prefixes = vec![u64::MAX; n];
    for (b, chunk) in xs.chunks(tile).enumerate() {
        for j in 0..3 {
            let mut acc = 0u64;
            for p in j * group..(j + 1) * group {
                want_prefixes[b * tile + p] = acc;
                acc += chunk[p];
            }
        }
    }
    let place = match device.backend() {
        Backend::Cuda { name, .. } => format!("the GPU ({name})"),
        Backend::Sim => "the CPU simulator (no GPU found)".to_string(),
    };
    if let Some(i) = (0..n).find(|&i| prefixes[i] != want_prefixes[i]) {
        eprintln!(
            "prefix {i} (block {}, position {}) is {}, expected {} on {place}",
            i / tile,
            i % tile,
            prefixes[i],
            want_prefixes[i]
        );
        return Ok(false);
    }
    match (0..want.len()).find(|&i| got[i] != want[i]) {
        None => {
            println!(
                "{} partial sums and {n} prefix sums of {blocks} blocks match the CPU on {place}",
                want.len()
            );
            Ok(true)
        }
        Some(i) => {
            eprintln!(
                "partial {i} (block {}, part {}) is {}, expected {} on {place}",
                i / 4,
                i % 4,
                got[i],
                want[i]
            );
            Ok(false)
        }
    }
}

//! The Cooperative Groups guide's `demo`, in coopgraph: one `group_sum` written once over any
//! group — the block, tiles of 32 and of 8, the coalesced threads of a data-dependent branch —
//! whose rank 0 adds the group's sum to a global total atomically; and the hand-written
//! helpers it is built from: `tile_sum` (a tree of `shfl_down`) and `block_sum` (each warp's
//! `tile_sum` into shared memory at its `meta_group_rank`, then the first warp's). Every
//! total is checked against the CPU, in a block of 96 threads (three warps) and one of 80 (a
//! partial last warp and a partial last tile of 32).

use coopgraph::KernelBuilder;
use coopgraph::ir::{Atomic, Expr, Group, LaneGroup, index};
use coopgraph::runtime::Device;

/// The sum of `v` over a tile or partition, at its rank 0: a tree of `shfl_down` (a rank
/// past the group's last thread adds nothing).
fn tile_sum(
    k: &mut KernelBuilder,
    g: LaneGroup,
    width: u32,
    n: Expr<u32>,
    v: Expr<u32>,
) -> Expr<u32> {
    let acc = k.var(v);
    let rank = g.thread_rank();
    let mut d = width.next_power_of_two() / 2;
    while d >= 1 {
        let other = k.shfl_down(g, acc.get(), d);
        let inside = (rank.clone() + d).lt(n.clone());
        k.set(&acc, acc.get() + inside.select(other, 0u32));
        d /= 2;
    }
    acc.get()
}

/// The sum of `v` over the block, at thread 0: each warp's sum into shared memory at the
/// warp's `meta_group_rank`, then the first warp sums those.
fn block_sum(k: &mut KernelBuilder, block: u32, v: Expr<u32>) -> Expr<u32> {
    let warp: Group = k.this_warp().into();
    let warps = block.div_ceil(32);
    let partial = tile_sum(k, warp.into(), 32, warp.num_threads(), v);
    let sums = k.shared_array::<u32>(warps);
    k.if_(warp.thread_rank().eq(0u32), |k| {
        k.shared_write(&sums, warp.meta_group_rank(), partial)
    });
    k.sync_block();
    // The first warp (written so the verifier sees it is the same across each warp).
    let first = (index::thread_rank() / 32u32).eq(0u32);
    let mine = first
        .clone()
        .and(&index::thread_rank().lt(warps))
        .select(sums.read(index::thread_rank().min(warps - 1)), 0u32);
    let total = k.var(0u32);
    k.if_(first, |k| {
        let s = tile_sum(k, warp.into(), 32, warp.num_threads(), mine);
        k.set(&total, s);
    });
    total.get()
}

/// What the guide's `demo` does with any group: sum, then rank 0 adds the sum to `total`.
enum Kind {
    Block,
    Tile(u32),
    Coalesced,
}

fn demo(block: u32, kind: &Kind) -> Result<(), Box<dyn std::error::Error>> {
    let name = match kind {
        Kind::Block => "block".to_string(),
        Kind::Tile(w) => format!("tile{w}"),
        Kind::Coalesced => "coalesced".to_string(),
    };
    let mut k = KernelBuilder::new(format!("demo_{name}_{block}")).block(block);
    let (x, total) = (k.input::<u32>("x"), k.output::<u32>("total"));
    let t = index::block_index() * block + index::thread_rank();
    let v = x.at(&t);
    match kind {
        Kind::Block => {
            let s = block_sum(&mut k, block, v);
            k.if_(index::thread_rank().eq(0u32), |k| {
                k.atomic(&total, 0u32, Atomic::add(s));
            });
        }
        Kind::Tile(w) => {
            let tile = k.this_warp().group_by(*w);
            let s = tile_sum(&mut k, tile.into(), *w, tile.num_threads(), v);
            k.if_(tile.thread_rank().eq(0u32), |k| {
                k.atomic(&total, 0u32, Atomic::add(s));
            });
        }
        Kind::Coalesced => {
            // Only the odd values take part, through the lanes that took the branch.
            k.if_((v.clone() % 2u32).eq(1u32), |k| {
                let g = k.coalesced_threads();
                let s = tile_sum(k, g.into(), 32, g.num_threads(), v.clone());
                k.if_(g.thread_rank().eq(0u32), |k| {
                    k.atomic(&total, 0u32, Atomic::add(s));
                });
            });
        }
    }
    let kernel = k.build()?;
    let dev = Device::default_device()?;
    let blocks = 7u32;
    let xs: Vec<u32> = (0..block * blocks)
        .map(|i| i.wrapping_mul(2_654_435_761) >> 20)
        .collect();
    let xb = dev.upload(&xs)?;
    let mut tb = dev.alloc_zeroed::<u32>(1)?;
    dev.compile(&kernel)?.launch_grid(blocks, (&xb, &mut tb))?;
    let want: u32 = match kind {
        Kind::Coalesced => xs.iter().filter(|&&v| v % 2 == 1).sum(),
        _ => xs.iter().sum(),
    };
    let got = tb.to_vec()?[0];
    if got != want {
        return Err(format!("{name} in blocks of {block}: total {got}, expected {want}").into());
    }
    println!(
        "{name:>9} in blocks of {block:>2}: total {got} correct on {:?}",
        dev.backend()
    );
    Ok(())
}

fn main() -> std::process::ExitCode {
    for block in [96, 80] {
        for kind in [Kind::Block, Kind::Tile(32), Kind::Tile(8), Kind::Coalesced] {
            if let Err(e) = demo(block, &kind) {
                eprintln!("error: {e}");
                return std::process::ExitCode::FAILURE;
            }
        }
    }
    std::process::ExitCode::SUCCESS
}

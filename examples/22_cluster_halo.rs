//! A 1-D stencil whose blocks exchange halos within thread-block clusters (sm_90), two ways:
//! through distributed shared memory (each block reads its neighbours' edge elements straight
//! from their shared arrays) and through global memory (each block publishes its edges to a
//! global buffer and reads its neighbours' from there). Everything else is the same kernel:
//! each cluster of `CLUSTER` blocks owns a segment of the line (zero beyond its ends) and
//! runs `steps` Jacobi steps `u'[i] = (u[i-1] + u[i+1]) / 4 + u[i] / 2` with the segment in
//! shared memory (two arrays, one read and one written per step) and one cluster barrier per
//! step.
//!
//! Both results are checked bit for bit against the CPU (the kernel's float operations are
//! rounded one by one, as the CPU's); a mismatch ends the example with status 1. Sizes:
//! `COOPGRAPH_HALO_N` elements (rounded up to whole clusters; default 2^22 on a GPU, 2 clusters
//! on the simulator) and `COOPGRAPH_HALO_STEPS` steps (default 1,000 on a GPU, 6 on the
//! simulator). On a GPU each variant prints its median time of 5 launches.

#[path = "support/bench.rs"]
#[allow(dead_code)]
mod bench;

use bench::OrExit;
use coopgraph::ir::index;
use coopgraph::runtime::{Backend, Device};
use coopgraph::{Kernel, KernelBuilder};

const CLUSTER: u32 = 4;

/// The stencil with halos exchanged through distributed shared memory (`dsmem`) or through
/// a global buffer `halo` of `2 * 2 * blocks` elements.
fn stencil(block: u32, dsmem: bool) -> Kernel {
    let name = if dsmem { "halo_dsmem" } else { "halo_global" };
    let mut k = KernelBuilder::new(name).block(block).cluster(CLUSTER);
    let (x, y) = (k.input::<f32>("x"), k.output::<f32>("y"));
    let halo = (!dsmem).then(|| k.buffer::<f32>("halo"));
    let steps = k.scalar::<u32>("steps");
    let c = k.this_cluster();
    let (t, b) = (index::thread_rank(), index::block_index());
    let blocks = index::grid_blocks();
    let g = b.clone() * block + t.clone();
    let rank = c.block_rank();
    let (first, last) = (rank.clone().eq(0u32), rank.clone().eq(CLUSTER - 1));
    let (lead, tail) = (t.clone().eq(0u32), t.clone().eq(block - 1));
    let bufs = [k.shared_array::<f32>(block), k.shared_array::<f32>(block)];
    // Slot of block `b`'s edge (`side` 0: first element, 1: last) of buffer `p`.
    let slot =
        |p: u32, b: coopgraph::ir::Expr<u32>, side: u32| (blocks.clone() * p + b) * 2u32 + side;
    let v = x.at(&g);
    k.shared_write(&bufs[0], &t, v.clone());
    if let Some(h) = &halo {
        k.if_(lead.clone(), |k| {
            k.write(h, slot(0, b.clone(), 0), v.clone())
        });
        k.if_(tail.clone(), |k| {
            k.write(h, slot(0, b.clone(), 1), v.clone())
        });
    }
    k.sync_cluster();
    k.for_range(0u32, steps, |k, _| {
        for s in 0..2usize {
            let (src, dst) = (&bufs[s], &bufs[1 - s]);
            let mid = src.read(&t);
            // Inside the block, from its own array; at its edges, from the neighbours'.
            let left = k.var(src.read((t.clone() + block - 1u32) % block));
            let right = k.var(src.read((t.clone() + 1u32) % block));
            k.if_(lead.clone(), |k| {
                k.set(&left, 0.0f32);
                k.if_(!first.clone(), |k| {
                    let v = match &halo {
                        None => {
                            let prev = k.map_shared_rank(src, rank.clone() - 1u32);
                            k.remote_read(&prev, block - 1)
                        }
                        Some(h) => h.at(slot(s as u32, b.clone() - 1u32, 1)),
                    };
                    k.set(&left, v);
                });
            });
            k.if_(tail.clone(), |k| {
                k.set(&right, 0.0f32);
                k.if_(!last.clone(), |k| {
                    let v = match &halo {
                        None => {
                            let next = k.map_shared_rank(src, rank.clone() + 1u32);
                            k.remote_read(&next, 0u32)
                        }
                        Some(h) => h.at(slot(s as u32, b.clone() + 1u32, 0)),
                    };
                    k.set(&right, v);
                });
            });
            let new = (left.get() + right.get()) * 0.25f32 + mid * 0.5f32;
            k.shared_write(dst, &t, new.clone());
            if let Some(h) = &halo {
                let p = 1 - s as u32;
                k.if_(lead.clone(), |k| {
                    k.write(h, slot(p, b.clone(), 0), new.clone())
                });
                k.if_(tail.clone(), |k| {
                    k.write(h, slot(p, b.clone(), 1), new.clone())
                });
            }
            k.sync_cluster();
        }
    });
    k.write(&y, &g, bufs[0].read(&t));
    k.build().or_exit("builds")
}

/// `2 * pairs` steps of the stencil over each segment of `seg` elements, zero beyond.
fn reference(x: &[f32], seg: usize, pairs: u32) -> Vec<f32> {
    let mut u = x.to_vec();
    let mut next = vec![0.0f32; x.len()];
    for _ in 0..2 * pairs {
        for (s, chunk) in u.chunks(seg).enumerate() {
            for i in 0..seg {
                let l = if i == 0 { 0.0 } else { chunk[i - 1] };
                let r = if i + 1 == seg { 0.0 } else { chunk[i + 1] };
                next[s * seg + i] = (l + r) * 0.25 + chunk[i] * 0.5;
            }
        }
        std::mem::swap(&mut u, &mut next);
    }
    u
}

fn main() {
    let dev = Device::default_device().or_exit("a device");
    let on_gpu = matches!(dev.backend(), Backend::Cuda { .. });
    let env = |name: &str| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
    };
    // A block size that is not a multiple of 32 on the simulator.
    let block: u32 = if on_gpu { 256 } else { 100 };
    let seg = (CLUSTER * block) as usize;
    let n = env("COOPGRAPH_HALO_N").unwrap_or(if on_gpu { 1 << 22 } else { 2 * seg });
    let n = n.div_ceil(seg).max(1) * seg;
    let steps = env("COOPGRAPH_HALO_STEPS").unwrap_or(if on_gpu { 1000 } else { 6 });
    // The kernel runs steps in pairs (one per shared array).
    let pairs = steps.div_ceil(2) as u32;
    let blocks = (n / block as usize) as u32;

    let x: Vec<f32> = (0..n)
        .map(|i| ((i as u32).wrapping_mul(2654435761) >> 8) as f32 / (1u32 << 24) as f32)
        .collect();
    let want = reference(&x, seg, pairs);
    let xb = dev.upload(&x).or_exit("upload");
    let mut yb = dev.alloc_zeroed::<f32>(n).or_exit("alloc");
    let mut halo = dev
        .alloc_zeroed::<f32>(4 * blocks as usize)
        .or_exit("alloc");
    let mut failed = false;
    for dsmem in [true, false] {
        let kernel = stencil(block, dsmem);
        let f = dev.compile(&kernel).or_exit("compile");
        let mut run = |yb: &mut coopgraph::runtime::Buffer<f32>| {
            if dsmem {
                f.launch_grid(blocks, (&xb, yb, pairs))
                    .or_exit(kernel.name());
            } else {
                f.launch_grid(blocks, (&xb, yb, &mut halo, pairs))
                    .or_exit(kernel.name());
            }
        };
        run(&mut yb);
        let got = yb.to_vec().or_exit("download");
        let bad = (got.iter().zip(&want)).position(|(g, w)| g.to_bits() != w.to_bits());
        if let Some(i) = bad {
            eprintln!(
                "error: {}: element {i} is {}, the CPU's is {}",
                kernel.name(),
                got[i],
                want[i]
            );
            failed = true;
            continue;
        }
        let exchange = if dsmem {
            "distributed shared memory"
        } else {
            "global memory"
        };
        if on_gpu {
            let t = bench::time(&dev, 5, || run(&mut yb));
            let us_per_step = t.as_secs_f64() * 1e6 / f64::from(2 * pairs);
            println!(
                "{}: halos through {exchange}, n = {n}, clusters of {CLUSTER} x {block}, {} steps: \
                 {:.3} ms, {us_per_step:.3} us per step",
                kernel.name(),
                2 * pairs,
                t.as_secs_f64() * 1e3
            );
        } else {
            println!(
                "{}: halos through {exchange}, n = {n}, clusters of {CLUSTER} x {block}, {} steps: \
                 matches the CPU",
                kernel.name(),
                2 * pairs
            );
        }
    }
    if failed {
        std::process::exit(1);
    }
}

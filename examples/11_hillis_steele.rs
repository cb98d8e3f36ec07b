//! A block-wide inclusive scan by Hillis and Steele in a shared array: each block stages its
//! elements in one half of a double buffer, then for offsets 1, 2, 4, .. below the block size
//! every thread adds the element `offset` places before its own (when there is one) into the
//! other half, and the halves swap. The offset and the current half are per-thread variables
//! every thread sets alike, so the verifier knows the `while_` loop is uniform across the
//! block and accepts the barrier inside it. Each block scans its own tile (the last one
//! partial: reads past the input's end give 0, writes there are skipped). Checked against the
//! CPU; on a GPU the example runs on 2^28 `u32` (override with `COOPGRAPH_BENCH_N`) and prints
//! GB/s (8 bytes per element).

#[path = "support/bench.rs"]
#[allow(dead_code)]
mod bench;

use bench::OrExit;

use coopgraph::ir::index;
use coopgraph::runtime::{Buffer, Device, Function};
use coopgraph::{Kernel, KernelBuilder};

const BLOCK: u32 = 256;

fn scan() -> Kernel {
    let mut k = KernelBuilder::new("hillis_steele").block(BLOCK);
    let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    let t = index::thread_rank();
    let g = index::block_index() * BLOCK + t.clone();
    let halves = k.shared_array::<u32>(2 * BLOCK);
    k.shared_write(&halves, t.clone(), x.at(&g));
    k.sync_block();
    let (offset, cur) = (k.var(1u32), k.var(0u32));
    k.while_(offset.get().lt(BLOCK), |k| {
        let from = cur.get() * BLOCK;
        let own = halves.read(from.clone() + t.clone());
        let earlier = t
            .ge(offset.get())
            .select(halves.read(from + t.clone() - offset.get()), 0u32);
        k.shared_write(
            &halves,
            (1u32 - cur.get()) * BLOCK + t.clone(),
            own + earlier,
        );
        k.sync_block();
        k.set(&cur, 1u32 - cur.get());
        k.set(&offset, offset.get() * 2u32);
    });
    k.write(&y, &g, halves.read(cur.get() * BLOCK + t));
    k.build().or_exit("hillis_steele builds")
}

fn launch(f: &Function, x: &Buffer<u32>, y: &mut Buffer<u32>) {
    let n = x.len() as u32;
    f.launch_grid(n.div_ceil(BLOCK), (x, y))
        .or_exit("hillis_steele");
}

fn main() {
    let dev = Device::default_device().or_exit("a device");
    let (on_gpu, n, reps) = bench::size(&dev);
    let n = n - 3;
    let f = dev.compile(&scan()).or_exit("compile");
    let xs: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761) >> 20)
        .collect();
    let x = dev.upload(&xs).or_exit("upload");
    let mut y = dev.alloc_zeroed::<u32>(n).or_exit("alloc");
    launch(&f, &x, &mut y);
    let got = y.to_vec().or_exit("download");
    for (b, (tile, out)) in xs
        .chunks(BLOCK as usize)
        .zip(got.chunks(BLOCK as usize))
        .enumerate()
    {
        let mut acc = 0u32;
        for (i, (&v, &o)) in tile.iter().zip(out).enumerate() {
            acc = acc.wrapping_add(v);
            if o != acc {
                eprintln!("error: block {b} position {i}: {o} instead of {acc}");
                std::process::exit(1);
            }
        }
    }
    if !on_gpu {
        println!("block scans of {n} elements: correct");
        return;
    }
    let t = bench::time(&dev, reps, || launch(&f, &x, &mut y));
    println!(
        "Hillis-Steele block scans of {n} u32: {:.0} GB/s",
        bench::gbps(8 * n, t)
    );
}

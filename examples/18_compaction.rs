//! Stream compaction by warp-aggregated atomics: keep the `f32` elements below 0.3 (30% of a
//! uniform input), in any order, through one counter. Three forms, each checked (the count,
//! and two order-free checksums of the kept values' bits) and timed:
//! - `atomic_per_element`: each kept element takes its slot with its own atomic;
//! - `coalesced`: the Cooperative Groups guide's `append_index`: in the branch,
//!   `coalesced_threads()`, whose rank 0 adds the group's size, the base shuffled to the rest;
//! - `ballot_xN`: each thread holds `N` elements; per element a warp ballot, one atomic per
//!   warp for all `N * 32` of them, and each kept element written at the warp's base plus the
//!   kept elements before it (the ballots' prefix counts): consecutive slots per warp;
//! - `block_xN`: the same ballots, the warps' counts combined in shared memory into one atomic
//!   per block for `N * 256` elements.
//!
//! On a GPU the example runs 2^28 elements (`COOPGRAPH_BENCH_N` overrides) and prints GB/s
//! counting the input read and the kept elements written, beside `cub::DeviceSelect::If` and
//! CUDA C++'s forms from `benches/cub/compact.cu` when `COOPGRAPH_CUB_CSV` names its CSV.

#[path = "support/bench.rs"]
#[allow(dead_code)]
mod bench;

use bench::OrExit;

use coopgraph::ir::{Atomic, Expr, index};
use coopgraph::runtime::{Buffer, Device};
use coopgraph::{Kernel, KernelBuilder};

const BLOCK: u32 = 256;
const KEEP_BELOW: f32 = 0.3;

/// The form's kernel and the elements each block handles.
fn kernel(form: &str, items: u32) -> (Kernel, u32) {
    let mut k = KernelBuilder::new(format!("compact_{form}"))
        .block(BLOCK)
        .items_per_thread(1);
    let (x, y) = (k.input::<f32>("x"), k.output::<f32>("y"));
    let (count, n) = (k.output::<u32>("count"), k.scalar::<u32>("n"));
    let t = index::thread_rank();
    let first = index::block_index() * (BLOCK * items);
    let element = |i: u32| first.clone() + i * BLOCK + t.clone();
    let kept = |e: &Expr<u32>, v: &Expr<f32>| e.lt(n).and(&v.lt(KEEP_BELOW));
    match form {
        "atomic_per_element" => {
            let (e, v) = (element(0), x.at(element(0)));
            k.if_(kept(&e, &v), |k| {
                let slot = k.atomic(&count, 0u32, Atomic::add(1u32));
                k.write(&y, slot, v.clone());
            });
        }
        "coalesced" => {
            let (e, v) = (element(0), x.at(element(0)));
            k.if_(kept(&e, &v), |k| {
                let g = k.coalesced_threads();
                let base =
                    k.invoke_one(g, |k| k.atomic(&count, 0u32, Atomic::add(g.num_threads())));
                k.write(&y, base + g.thread_rank(), v.clone());
            });
        }
        _ => {
            let per_block = form.starts_with("block");
            let warp = k.this_warp();
            let below = (Expr::<u32>::lit(1) << index::lane()) - 1u32;
            let mut vals = Vec::new();
            let mut total: Expr<u32> = Expr::lit(0);
            for i in 0..items {
                // Each value read once into a register: an expression is evaluated by every op
                // that uses it, so `x.at(..)` in the ballot, the branch and the write would be
                // three loads.
                let e = element(i);
                let v = k.var(x.at(&e)).get();
                let keep = k.var(kept(&e, &v).select(1u32, 0u32)).get().eq(1u32);
                let bits = k.ballot(warp, keep.clone());
                // The kept elements of the warp before this one: in earlier ballots, and in
                // lower lanes of this one.
                let before = total.clone() + (bits.clone() & below.clone()).popc();
                total = total + bits.popc();
                vals.push((keep, v, before));
            }
            let base = if per_block {
                // Each warp's count into shared memory; thread 0 turns them into the warps'
                // offsets and takes the block's slots with one atomic.
                let warps = BLOCK / 32;
                let counts = k.shared_array::<u32>(warps + 1);
                let lane0 = index::lane().eq(0u32);
                k.if_(lane0, |k| {
                    k.shared_write(&counts, index::warp_rank(), total)
                });
                k.sync_block();
                k.if_(t.eq(0u32), |k| {
                    let run = k.var(0u32);
                    for w in 0..warps {
                        // Read before the slot is overwritten (an expression is evaluated
                        // where an op uses it).
                        let c = k.var(counts.read(w));
                        k.shared_write(&counts, w, run.get());
                        k.set(&run, run.get() + c.get());
                    }
                    let at = k.atomic(&count, 0u32, Atomic::add(run.get()));
                    k.shared_write(&counts, warps, at);
                });
                k.sync_block();
                counts.read(warps) + counts.read(index::warp_rank())
            } else {
                k.invoke_one(warp, |k| k.atomic(&count, 0u32, Atomic::add(total)))
            };
            for (keep, v, before) in vals {
                k.if_(keep, |k| k.write(&y, base.clone() + before, v));
            }
        }
    }
    (k.build().or_exit("builds"), BLOCK * items)
}

/// The count and two order-free checksums of values' bits.
fn digest(vals: &[f32]) -> (usize, u64, u64) {
    let mix = |b: u64| {
        let mut z = b.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    vals.iter().fold((0, 0, 0), |(c, s, x), v| {
        let b = u64::from(v.to_bits());
        (c + 1, s.wrapping_add(b), x ^ mix(b))
    })
}

fn main() {
    let dev = Device::default_device().or_exit("a device");
    let (on_gpu, n, reps) = bench::size(&dev);
    // A uniform [0, 1) input from a hash of the index.
    let xs: Vec<f32> = (0..n as u64)
        .map(|i| {
            let h = (i ^ 0x5eed).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let h = (h ^ (h >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            ((h ^ (h >> 32)) >> 40) as f32 / (1u64 << 24) as f32
        })
        .collect();
    let want: Vec<f32> = xs.iter().copied().filter(|&v| v < KEEP_BELOW).collect();
    let want = digest(&want);
    let bytes = (n + want.0) * 4;
    let x = dev.upload(&xs).or_exit("upload");
    let mut y = dev.alloc_zeroed::<f32>(n).or_exit("alloc");
    let mut count: Buffer<u32> = dev.alloc_zeroed(1).or_exit("alloc");
    let zero = {
        let mut k = KernelBuilder::new("zero_count").block(32);
        let c = k.output::<u32>("c");
        k.if_(index::thread_rank().eq(0u32), |k| k.write(&c, 0u32, 0u32));
        dev.compile(&k.build().or_exit("builds"))
            .or_exit("compiles")
    };
    let cub = bench::cub_figures();
    let cub_of = |alg: &str, block: u32, items: u32| {
        cub.get(&("compact".into(), "f32".into(), alg.into(), block, items))
            .copied()
    };
    println!(
        "compaction of {n} f32 elements, {} kept ({:.1}%), on {:?}",
        want.0,
        100.0 * want.0 as f64 / n as f64,
        dev.backend()
    );
    println!("| form | GB/s | vs cub::DeviceSelect::If | vs one atomic per element |");
    println!("|---|---|---|---|");
    let mut per_element = None;
    let forms = [
        ("atomic_per_element", 1),
        ("coalesced", 1),
        ("ballot_x4", 4),
        ("ballot_x8", 8),
        ("ballot_x16", 16),
        ("block_x8", 8),
        ("block_x16", 16),
        ("block_x32", 32),
    ];
    for (form, items) in forms {
        let (kernel, per_block) = kernel(form, items);
        let f = dev.compile(&kernel).or_exit("compiles");
        let blocks = (n as u32).div_ceil(per_block).max(1);
        let run = |y: &mut Buffer<f32>, count: &mut Buffer<u32>| {
            zero.launch_grid(1, (&mut *count,)).or_exit("zero");
            f.launch_grid(blocks, (&x, y, count, n as u32))
                .or_exit("launch");
        };
        run(&mut y, &mut count);
        let k = count.to_vec().or_exit("download")[0] as usize;
        let kept = &y.to_vec().or_exit("download")[..k.min(n)];
        if digest(kept) != want {
            eprintln!(
                "error: {form}: kept {k} elements (checksums {:?}), expected {want:?}",
                digest(kept)
            );
            std::process::exit(1);
        }
        if !on_gpu {
            println!("| {form} | (simulator) | - | - |");
            continue;
        }
        let t = bench::time(&dev, reps, || run(&mut y, &mut count));
        let g = bench::gbps(bytes, t);
        let vs_element = per_element.map_or("-".to_string(), |p: f64| format!("{:.2}", g / p));
        if form == "atomic_per_element" {
            per_element = Some(g);
        }
        let vs_cub = bench::versus(g, cub_of("cub_select_if", 0, 0).as_ref()).1;
        println!("| {form} | {g:.0} | {vs_cub} | {vs_element} |");
    }
    for (alg, block, items) in [
        ("cub_select_if", 0, 0),
        ("atomic_per_element", 256, 1),
        ("cg_coalesced", 256, 1),
    ] {
        if let Some(g) = cub_of(alg, block, items) {
            println!("| CUDA C++ {alg} | {g:.0} | - | - |");
        }
    }
}

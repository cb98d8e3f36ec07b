//! Block run-length decoding (CUB's `BlockRunLengthDecode`): each block takes `threads × runs`
//! runs (a `u32` value and a length from 1 to 7 each, blocked), and decodes them window by
//! window, `threads × items` decoded items at a time, into its part of the output (where the
//! block starts is the sum of the lengths before its runs, computed on the host).
//!
//! Every configuration of the CUB reference harness (`benches/cub/run_length_decode.cu`, kind
//! `block_run_length_decode`) runs: blocks of 128 and 256 threads, 2 or 4 runs and 4, 8 or 16
//! decoded items per thread, over 2^26 runs (2^12 on the simulator; `COOPGRAPH_BENCH_N`
//! overrides), each checked against the host's decoding and, on a GPU, timed. GB/s counts the
//! runs read (value and length) and the decoded items written. With `COOPGRAPH_CUB_CSV`
//! naming that harness's CSV, each row shows CUB's figure and the ratio beside ours. Exits
//! non-zero on any wrong result.

#[path = "support/bench.rs"]
#[allow(dead_code)]
mod bench;

use bench::OrExit;

use coopgraph::ir::index;
use coopgraph::runtime::Device;
use coopgraph::{Kernel, KernelBuilder, Load, Store};

/// The longest run.
const MAX_LENGTH: u64 = 7;

/// The configurations: threads, runs per thread, decoded items per thread.
const CONFIGS: [(u32, u32, u32); 6] = [
    (128, 2, 4),
    (128, 4, 8),
    (128, 4, 16),
    (256, 2, 4),
    (256, 4, 8),
    (256, 4, 16),
];

/// A kernel decoding `threads × runs` runs per block into `y[offsets[block] ..]`.
fn kernel(threads: u32, runs: u32, items: u32) -> Kernel {
    let name = format!("run_length_decode_{threads}x{runs}_{items}");
    let mut k = KernelBuilder::new(name)
        .block(threads)
        .items_per_thread(runs);
    let (v, l) = (k.input::<u32>("values"), k.input::<u32>("lengths"));
    let offsets = k.input::<u32>("offsets");
    let y = k.output::<u32>("y");
    let b = k.this_block();
    let first_run = index::block_index() * (threads * runs);
    // A thread's runs are adjacent: one vector read each for values and lengths where the
    // address allows (1-7% faster than a word at a time on an H100).
    let values = k.load_from(b, &v, Load::vectorize().offset(first_run.clone()));
    let lengths = k.load_from(b, &l, Load::vectorize().offset(first_run));
    let decoder = k.run_lengths(b, &values, &lengths);
    let total = decoder.total();
    // Read once: the loop below would otherwise load it again for every window.
    let out = k.var(offsets.at(index::block_index())).get();
    let window = threads * items;
    k.for_range_step(0u32, total.clone(), window, |k, from| {
        let d = k.run_length_decode(&decoder, items, from.clone());
        let store = Store::direct()
            .offset(out.clone() + from.clone())
            .valid_items(total.clone() - from);
        k.store_to(b, &y, &d.items, store);
    });
    k.build().or_exit("builds")
}

/// `n` runs: hashed values, lengths uniform in `1..=MAX_LENGTH`. (Ours decodes runs of length
/// 0 anywhere; CUB's `BlockRunLengthDecode` only at the end of a block's runs, so the inputs
/// both decode have none.)
fn inputs(n: usize) -> (Vec<u32>, Vec<u32>) {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..n)
        .map(|_| {
            let h = next();
            ((h >> 32) as u32, (1 + h % MAX_LENGTH) as u32)
        })
        .unzip()
}

/// Each block's first output position (the lengths before its runs), and the whole output's
/// length.
fn block_offsets(lengths: &[u32], per_block: usize) -> (Vec<u32>, usize) {
    let mut at = 0usize;
    let offsets = lengths
        .chunks(per_block)
        .map(|c| {
            let o = at as u32;
            at += c.iter().map(|&l| l as usize).sum::<usize>();
            o
        })
        .collect();
    (offsets, at)
}

/// Runs the example; an error is printed with its `Display` text (each cause once).
fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let device = Device::default_device()?;
    let (on_gpu, n, reps) = bench::size(&device);
    // A quarter of `n` runs (2^26 on a GPU), of 3.5 decoded items on average.
    let runs_n = n / 4;
    let cub = bench::cub_figures();
    let (values, lengths) = inputs(runs_n);
    let mut want = Vec::new();
    for (&v, &l) in values.iter().zip(&lengths) {
        want.extend(std::iter::repeat_n(v, l as usize));
    }
    let vb = device.upload(&values)?;
    let lb = device.upload(&lengths)?;
    let mut ran = 0;
    for (threads, runs, items) in CONFIGS {
        let per_block = (threads * runs) as usize;
        let blocks = runs_n / per_block;
        if blocks == 0 {
            // Fewer runs than one block takes (a small `COOPGRAPH_BENCH_N`).
            continue;
        }
        let used = blocks * per_block;
        let (offsets, total) = block_offsets(&lengths[..used], per_block);
        let ob = device.upload(&offsets)?;
        let mut yb = device.alloc_zeroed::<u32>(total.max(1))?;
        let f = device.compile(&kernel(threads, runs, items))?;
        let launch = |yb: &mut coopgraph::runtime::Buffer<u32>| {
            f.launch_grid(blocks as u32, (&vb, &lb, &ob, yb))
                .or_exit("decodes")
        };
        launch(&mut yb);
        let what = format!("run_length_decode {threads}x{runs} runs, {items} items");
        let check = |got: &[u32]| -> Result<(), String> {
            match (0..total).find(|&i| got[i] != want[i]) {
                Some(i) => Err(format!(
                    "{what}: decoded item {i} is {}, expected {}",
                    got[i], want[i]
                )),
                None => Ok(()),
            }
        };
        check(&yb.to_vec()?)?;
        ran += 1;
        if on_gpu {
            let t = bench::time(&device, reps, || launch(&mut yb));
            check(&yb.to_vec()?)?;
            let g = bench::gbps(used * 8 + total * 4, t);
            let key = (
                "block_run_length_decode".to_string(),
                "u32".to_string(),
                format!("runs{runs}"),
                threads,
                items,
            );
            let (c, ratio) = bench::versus(g, cub.get(&key));
            println!("{what}: {g:.0} GB/s; CUB: {c} GB/s; ratio {ratio}");
        }
    }
    println!(
        "decoded {runs_n} runs into {} items in {ran} of {} configurations on {:?}: correct",
        want.len(),
        CONFIGS.len(),
        device.backend()
    );
    Ok(())
}

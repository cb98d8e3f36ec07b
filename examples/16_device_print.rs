//! Printing from a kernel: each of the first threads of every block prints its indices and
//! values of several types with `k.print`. On a GPU the lines come from CUDA's device
//! `printf` (`vprintf`) on standard output, in an order the hardware picks; on the simulator
//! the same text is captured in the launch's report, in thread order, and printed here after
//! a header, so the two outputs sorted line by line are the same.

use coopgraph::KernelBuilder;
use coopgraph::ir::index;
use coopgraph::runtime::{Backend, Device, LaunchConfig, SimOptions};

fn main() -> Result<(), coopgraph::Error> {
    let mut k = KernelBuilder::new("hello_print").block(64);
    let x = k.input::<f32>("x");
    let t = index::thread_rank();
    let b = index::block_index();
    let g = b.clone() * 64u32 + t.clone();
    k.if_(t.lt(3u32), |k| {
        k.print(
            "block {} thread {}: x = {:.3}, x^2 = {:e}, g = {:x}, -g = {}, g64 = {}",
            (
                &b,
                &t,
                x.at(&g),
                x.at(&g) * x.at(&g),
                &g,
                -(g.cast::<i32>()),
                g.cast::<u64>() << 40u32,
            ),
        );
    });
    let kernel = k.build()?;
    let dev = Device::default_device()?;
    let on_gpu = matches!(dev.backend(), Backend::Cuda { .. });
    let xs: Vec<f32> = (0..128).map(|i| i as f32 * 0.5 - 3.0).collect();
    if on_gpu {
        let xb = dev.upload(&xs)?;
        dev.compile(&kernel)?.launch_grid(2, (&xb,))?;
        dev.synchronize()?;
        return Ok(());
    }
    let sim = Device::sim_with(SimOptions {
        capture_prints: true,
        ..SimOptions::default()
    });
    let xb = sim.upload(&xs)?;
    let report = sim
        .compile(&kernel)?
        .launch_with_report(LaunchConfig::blocks(2), (&xb,))?;
    let printed = report.map(|r| r.printed).unwrap_or_default();
    eprintln!("the simulator's captured output, in thread order:");
    print!("{printed}");
    Ok(())
}

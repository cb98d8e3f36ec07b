//! Chooses the load/store algorithm at run time by building one kernel per choice: each
//! specialization is compiled once and cached, so asking again is a lookup. Times each on the
//! device (on the simulator the times are CPU times) and checks every result.

use coopgraph::ir::Algorithm;
use coopgraph::runtime::Device;
use coopgraph::{Kernel, KernelBuilder, Load, Store};

fn kernel_for(algorithm: Algorithm) -> Result<Kernel, coopgraph::Error> {
    let mut k = KernelBuilder::new(format!("scale_{algorithm:?}"))
        .block(256)
        .items_per_thread(4);
    let x = k.input::<f32>("x");
    let y = k.output::<f32>("y");
    let n = k.scalar::<u32>("n");
    let block = k.this_block();
    k.tiles(n, |k, _tile| {
        let t = k.load_from(block, &x, Load::direct().algorithm(algorithm));
        let t = k.map(&t, |v| v * 0.5);
        k.store_to(block, &y, &t, Store::default().algorithm(algorithm));
    });
    k.build()
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
    let n = if device.is_cuda() { 1 << 24 } else { 1 << 14 };
    let xs: Vec<f32> = (0..n).map(|i| (i % 4096) as f32).collect();
    let x = device.upload(&xs)?;
    let mut y = device.alloc_zeroed::<f32>(n)?;
    let requested = std::env::args().nth(1);
    for algorithm in Algorithm::ALL {
        if requested
            .as_deref()
            .is_some_and(|r| !format!("{algorithm:?}").eq_ignore_ascii_case(r))
        {
            continue;
        }
        let f = device.compile(&kernel_for(algorithm)?)?;
        // A second build of the same specialization is a cache hit.
        let again = device.compile(&kernel_for(algorithm)?)?;
        assert!(f.same_module(&again));
        f.launch_over(n, (&x, &mut y, n as u32))?;
        let (r, t) = device.time(|| f.launch_over(n, (&x, &mut y, n as u32)))?;
        r?;
        if y.to_vec()?.iter().zip(&xs).any(|(g, x)| *g != x * 0.5) {
            return Err(format!("{algorithm:?} computed a wrong result").into());
        }
        let gbps = (2 * n * 4) as f64 / t.as_secs_f64() / 1e9;
        println!(
            "{algorithm:?}: {:.3} ms, {gbps:.0} GB/s",
            t.as_secs_f64() * 1e3
        );
    }
    println!("cache: {:?}", device.cache_stats());
    Ok(())
}

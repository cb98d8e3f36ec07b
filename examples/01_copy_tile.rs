//! Copies a buffer tile by tile: each block loads its tile with a transposing load (coalesced
//! reads, exchanged to blocked order through shared memory the planner allocates) and stores
//! it with a transposing store. Prints the plan, then checks the copy.

use coopgraph::runtime::Device;
use coopgraph::{KernelBuilder, Load, Store};

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
    let mut k = KernelBuilder::new("copy_tile")
        .block(128)
        .items_per_thread(4);
    let x = k.input::<f32>("x");
    let y = k.output::<f32>("y");
    let n = k.scalar::<u32>("n");
    let block = k.this_block();
    k.tiles(n, |k, _tile| {
        let t = k.load_from(block, &x, Load::transpose());
        k.store_to(block, &y, &t, Store::transpose());
    });
    let kernel = k.build()?;
    println!("{}", kernel.explain());

    let device = Device::default_device()?;
    let n = 100_000usize;
    let xs: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let x = device.upload(&xs)?;
    let mut y = device.alloc_filled(n, f32::NAN)?;
    device
        .compile(&kernel)?
        .launch_over(n, (&x, &mut y, n as u32))?;
    let ys = y.to_vec()?;
    if ys != xs {
        return Err("the copy differs from its input".into());
    }
    println!("copied {n} elements on {:?}", device.backend());
    Ok(())
}

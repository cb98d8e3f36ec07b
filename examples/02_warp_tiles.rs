//! Logical warps of 8 threads, each moving its own tile of 8 x 3 items, over a buffer whose
//! length is not a multiple of the block's tile: the last tile is partial, and every logical
//! warp gets its share of the valid count automatically.

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
    let mut k = KernelBuilder::new("warp8_tiles")
        .block(64)
        .items_per_thread(3);
    let x = k.input::<i32>("x");
    let y = k.output::<i32>("y");
    let n = k.scalar::<u32>("n");
    let warp8 = k.this_warp().group_by(8);
    k.tiles(n, |k, _tile| {
        let t = k.load_from(warp8, &x, Load::striped().oob_default(0));
        let t = k.map(&t, |v| v * 2 - 1);
        k.store_to(warp8, &y, &t, Store::striped());
    });
    let kernel = k.build()?;

    let device = Device::default_device()?;
    let tile = 64 * 3;
    let n = 10 * tile + 77;
    let xs: Vec<i32> = (0..n as i32).map(|i| i * 7 % 1000).collect();
    let x = device.upload(&xs)?;
    let mut y = device.alloc_filled(n + 1, -1)?;
    device
        .compile(&kernel)?
        .launch_over(n, (&x, &mut y, n as u32))?;
    let ys = y.to_vec()?;
    for (i, &v) in xs.iter().enumerate() {
        if ys[i] != v * 2 - 1 {
            return Err(format!("element {i}: {} instead of {}", ys[i], v * 2 - 1).into());
        }
    }
    if ys[n] != -1 {
        return Err("the element past the end was written".into());
    }
    println!(
        "{n} elements in logical warps of 8 on {:?}: correct",
        device.backend()
    );
    Ok(())
}

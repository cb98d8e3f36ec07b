//! Device helpers are plain Rust functions over the builder, a group and payloads. Here one
//! loads a clamped tile into a payload, another normalizes it; a kernel composes them.

use coopgraph::ir::{Group, Input, ThreadData};
use coopgraph::runtime::Device;
use coopgraph::{KernelBuilder, Load, Store};

/// Loads the group's tile of `x`, clamped to `[lo, hi]`, blocked, with `lo` past the end.
fn load_clamped(
    k: &mut KernelBuilder,
    group: Group,
    x: &Input<f32>,
    lo: f32,
    hi: f32,
) -> ThreadData<f32> {
    let t = k.load_from(group, x, Load::warp_transpose().oob_default(lo));
    k.map(&t, |v| v.max(lo).min(hi))
}

/// Maps `[lo, hi]` onto `[0, 1]`.
fn normalize(k: &mut KernelBuilder, t: &ThreadData<f32>, lo: f32, hi: f32) -> ThreadData<f32> {
    k.map(t, |v| (v - lo) / (hi - lo))
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
    let mut k = KernelBuilder::new("normalize")
        .block(128)
        .items_per_thread(8);
    let x = k.input::<f32>("x");
    let y = k.output::<f32>("y");
    let n = k.scalar::<u32>("n");
    let block = k.this_block();
    k.tiles(n, |k, _tile| {
        let t = load_clamped(k, block, &x, -1.0, 1.0);
        let u = normalize(k, &t, -1.0, 1.0);
        k.store_to(block, &y, &u, Store::warp_transpose());
    });
    let kernel = k.build()?;

    let device = Device::default_device()?;
    let n = 5000usize;
    let xs: Vec<f32> = (0..n).map(|i| (i as f32 - 2500.0) / 1000.0).collect();
    let x = device.upload(&xs)?;
    let mut y = device.alloc_zeroed::<f32>(n)?;
    device
        .compile(&kernel)?
        .launch_over(n, (&x, &mut y, n as u32))?;
    for (i, (&v, &got)) in xs.iter().zip(&y.to_vec()?).enumerate() {
        let want = (v.clamp(-1.0, 1.0) + 1.0) / 2.0;
        if got.to_bits() != want.to_bits() {
            return Err(format!("element {i}: {got} instead of {want}").into());
        }
    }
    println!("normalized {n} elements on {:?}", device.backend());
    Ok(())
}

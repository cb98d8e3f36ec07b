//! Builds a load → map → store kernel, prints its plan and a PTX summary, runs it on the
//! default device (the GPU when present, else the CPU simulator) and checks the result against
//! the CPU.

use coopgraph::KernelBuilder;
use coopgraph::runtime::{Backend, Device};

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
    let kernel = KernelBuilder::new("scale_add")
        .block(128)
        .items_per_thread(4)
        .load::<f32>("x")
        .map(|v| v * 2.0 + 1.0)
        .store("y")
        .build()?;
    println!("{}", kernel.explain());

    let device = Device::default_device()?;
    let ptx = kernel.ptx(device.arch())?;
    let instructions = ptx
        .lines()
        .filter(|l| l.starts_with('\t') && l.trim_end().ends_with(';') && !l.contains(".reg"))
        .count();
    println!(
        "PTX for {}: {} lines, {} instructions, entry `{}`",
        device.arch(),
        ptx.lines().count(),
        instructions,
        kernel.entry()
    );

    let n = 1_000_003usize;
    let xs: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.25 - 100.0).collect();
    let x = device.upload(&xs)?;
    let mut y = device.alloc_filled(n, f32::NAN)?;
    let f = device.compile(&kernel)?;
    f.launch_over(n, (&x, n as u32, &mut y))?;
    let ys = y.to_vec()?;

    let wrong = xs
        .iter()
        .zip(&ys)
        .position(|(&x, &y)| (x * 2.0 + 1.0).to_bits() != y.to_bits());
    let place = match device.backend() {
        Backend::Cuda { name, .. } => format!("the GPU ({name})"),
        Backend::Sim => "the CPU simulator (no GPU found)".to_string(),
    };
    match wrong {
        None => {
            println!("ran on {place}: all {n} results match the CPU");
            Ok(())
        }
        Some(i) => Err(format!(
            "ran on {place}: element {i} is {}, expected {}",
            ys[i],
            xs[i] * 2.0 + 1.0
        )
        .into()),
    }
}

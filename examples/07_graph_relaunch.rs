//! A Jacobi relaunch loop captured once into a graph and replayed.
//!
//! Each step of a 1-D three-point stencil reads one buffer and writes the other
//! (`y[i + 1] = (x[i] + x[i + 1] + x[i + 2]) / 3`, boundary cells fixed), and the buffers swap
//! every step. Launched one by one, every step pays a launch; captured, a replay of the graph
//! pays one driver call for all the steps it holds. The example runs the steps both ways,
//! checks both results bit for bit against the CPU (same operations in the same order), prints
//! the times, and exits with status 1 on a mismatch.
//!
//! `cargo run --release --example 07_graph_relaunch -- [n] [steps]`: `n` interior points
//! (default 2^14 on a GPU, 2048 on the simulator) and `steps` Jacobi steps (default 2000 on a
//! GPU, 20 on the simulator; rounded up to a whole number of replays).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use coopgraph::runtime::{Backend, Device};
use coopgraph::{Kernel, KernelBuilder, Load, Store};

/// Runs the example; an error is printed with its `Display` text (each cause once).
fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One Jacobi step over `n` interior points of buffers of `n + 2` elements.
fn jacobi_kernel() -> Result<Kernel, coopgraph::Error> {
    let mut k = KernelBuilder::new("jacobi_step")
        .block(256)
        .items_per_thread(4);
    let x = k.input::<f32>("x");
    let y = k.output::<f32>("y");
    let n = k.scalar::<u32>("n");
    let b = k.this_block();
    k.tiles(n, |k, tile| {
        let at = |shift: u32| {
            Load::direct()
                .offset(tile.origin.clone() + shift)
                .valid_items(tile.valid.clone())
        };
        let left = k.load_from(b, &x, at(0));
        let mid = k.load_from(b, &x, at(1));
        let right = k.load_from(b, &x, at(2));
        let sum = k.map2(&left, &mid, |l, m| l + m);
        let avg = k.map2(&sum, &right, |s, r| (s + r) * (1.0f32 / 3.0));
        let store = Store::direct()
            .offset(tile.origin + 1u32)
            .valid_items(tile.valid);
        k.store_to(b, &y, &avg, store);
    });
    k.build()
}

/// The CPU's step, in the kernel's order of operations.
fn cpu_step(x: &[f32], y: &mut [f32]) {
    for i in 0..x.len() - 2 {
        y[i + 1] = ((x[i] + x[i + 1]) + x[i + 2]) * (1.0f32 / 3.0);
    }
}

fn run() -> Result<bool, coopgraph::Error> {
    let device = Device::default_device()?;
    let on_gpu = matches!(device.backend(), Backend::Cuda { .. });
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>());
    let n = match args.next() {
        Some(Ok(n)) if n > 0 => n,
        None => {
            if on_gpu {
                1 << 14
            } else {
                2048
            }
        }
        _ => return usage(),
    };
    let steps = match args.next() {
        Some(Ok(s)) if s > 0 => s,
        None => {
            if on_gpu {
                2000
            } else {
                20
            }
        }
        _ => return usage(),
    };
    // A graph holds up to 100 steps (an even number, so each replay ends where it began);
    // the loop replays it as often as the steps need.
    let per_graph = steps.min(100).next_multiple_of(2);
    let replays = steps.div_ceil(per_graph);
    let steps = per_graph * replays;

    let f = device.compile(&jacobi_kernel()?)?;
    let init: Vec<f32> = (0..n + 2)
        .map(|i| {
            if i == 0 || i == n + 1 {
                1.0
            } else {
                (i % 13) as f32
            }
        })
        .collect();
    let stream = device.new_stream()?;
    let config = f.config_over(n)?.on_stream(&stream);

    // One launch per step.
    let mut a = stream.upload(&init)?;
    let mut b = stream.upload(&init)?;
    stream.synchronize()?;
    let t = Instant::now();
    for _ in 0..steps / 2 {
        f.launch(config.clone(), (&a, &mut b, n as u32))?;
        f.launch(config.clone(), (&b, &mut a, n as u32))?;
    }
    stream.synchronize()?;
    let relaunch = t.elapsed();
    let relaunched = stream.download(&a)?;

    // The same steps, captured once and replayed.
    let mut a = stream.upload(&init)?;
    let mut b = stream.upload(&init)?;
    let graph = stream.capture(|s| {
        let config = config.clone().on_stream(s);
        for _ in 0..per_graph / 2 {
            f.launch(config.clone(), (&a, &mut b, n as u32))?;
            f.launch(config.clone(), (&b, &mut a, n as u32))?;
        }
        Ok::<(), coopgraph::Error>(())
    })?;
    // The first replay uploads the graph to the device: not timed. The buffers then start
    // over (a graph launches on the memory it captured, so they are rewritten, not replaced).
    graph.launch(&stream)?;
    stream.write(&mut a, &init)?;
    stream.write(&mut b, &init)?;
    stream.synchronize()?;
    let t = Instant::now();
    for _ in 0..replays {
        graph.launch(&stream)?;
    }
    stream.synchronize()?;
    let replayed_time = t.elapsed();
    let replayed = stream.download(&a)?;

    let (mut x, mut y) = (init.clone(), init);
    for _ in 0..steps / 2 {
        cpu_step(&x, &mut y);
        cpu_step(&y, &mut x);
    }
    let place = match device.backend() {
        Backend::Cuda { name, .. } => name.clone(),
        Backend::Sim => "the simulator (times are CPU time)".into(),
    };
    println!(
        "{steps} Jacobi steps over {n} points on {place}: {} launched one by one, {} as {replays} \
         replays of a graph of {per_graph} launches",
        ms(relaunch),
        ms(replayed_time)
    );
    let mut ok = true;
    for (what, got) in [("relaunched", &relaunched), ("replayed", &replayed)] {
        if let Some(i) = got
            .iter()
            .zip(&x)
            .position(|(g, w)| g.to_bits() != w.to_bits())
        {
            eprintln!("{what}: element {i} is {}, the CPU says {}", got[i], x[i]);
            ok = false;
        }
    }
    if ok {
        println!("both match the CPU bit for bit");
    }
    Ok(ok)
}

fn usage() -> Result<bool, coopgraph::Error> {
    eprintln!("usage: 07_graph_relaunch [n] [steps] (positive integers)");
    Ok(false)
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

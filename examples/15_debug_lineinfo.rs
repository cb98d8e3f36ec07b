//! Finding an out-of-bounds write two ways: `debug()` checks and line information.
//!
//! The kernel `y[i + 1] = 2 * x[i]` writes one past the end of `y` in the grid's last thread.
//! A checked kernel skips that write silently. Built with [`KernelBuilder::debug`], the launch
//! reports it: `RuntimeError::CheckFailed` names the write, this file's line, the thread and
//! block, and the index against the length (on the simulator and on the GPU alike).
//!
//! Built with [`KernelBuilder::lineinfo`] and `unchecked_bounds`, the kernel really writes past
//! the end (launched through the unsafe `launch_unchecked`): on the simulator the launch fails
//! with the simulator's out-of-bounds report; on a GPU, run the example under
//! `compute-sanitizer --tool memcheck`, whose report names this file and the line of the write
//! (`/work/notes/gpu-opts.sh` checks that). The example prints that line as `planted write at
//! FILE:LINE`.
//!
//! [`KernelBuilder::debug`]: coopgraph::KernelBuilder::debug
//! [`KernelBuilder::lineinfo`]: coopgraph::KernelBuilder::lineinfo

use coopgraph::ir::{CheckKind, index};
use coopgraph::runtime::{Backend, Device, LaunchConfig, RuntimeError};
use coopgraph::{Kernel, KernelBuilder};

const BLOCK: u32 = 128;
const N: usize = 1000;

/// `y[i + 1] = 2 * x[i]` for the grid's threads below `n`, with `options` applied; and the
/// line of the write.
fn shift(name: &str, options: impl FnOnce(KernelBuilder) -> KernelBuilder) -> (Kernel, u32) {
    let mut k = options(KernelBuilder::new(name).block(BLOCK));
    let (x, y, n) = (
        k.input::<f32>("x"),
        k.output::<f32>("y"),
        k.scalar::<u32>("n"),
    );
    let i = index::block_index() * BLOCK + index::thread_rank();
    k.return_if(i.ge(n));
    let line = line!() + 1;
    k.write(&y, i.clone() + 1u32, x.at(&i) * 2.0f32);
    (k.build().expect("the kernel builds"), line)
}

fn main() -> Result<(), coopgraph::Error> {
    let dev = Device::default_device()?;
    let xs: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let x = dev.upload(&xs)?;
    let grid = (N as u32).div_ceil(BLOCK);

    // 1. Debug checks: the safe launch reports the write past the end.
    let (checked, line) = shift("shift_debug", |k| k.debug());
    let mut y = dev.alloc_zeroed::<f32>(N)?;
    let f = dev.compile(&checked)?;
    println!("resources: {}", f.explain()?);
    match f.launch_grid(grid, (&x, &mut y, N as u32)) {
        Err(RuntimeError::CheckFailed(f)) => {
            println!("debug checks: {f}");
            let site = f.site.as_ref().expect("the kernel's image names its sites");
            assert_eq!(site.what, CheckKind::Write { buffer: "y".into() });
            assert_eq!((site.loc.file, site.loc.line), (file!(), line));
            assert_eq!((f.value, f.limit), (N as u64, N as u64));
        }
        Err(e) => return Err(e.into()),
        Ok(()) => panic!("the write past the end was not reported"),
    }
    // The other writes happened; the one past the end did not.
    let got = y.to_vec()?;
    assert!((1..N).all(|i| got[i] == 2.0 * (i - 1) as f32));

    // 2. Line information, no bounds checks: the write really goes past the end.
    let (raw, line) = shift("shift_lineinfo", |k| k.lineinfo().unchecked_bounds());
    println!("planted write at {}:{line}", file!());
    let f = dev.compile(&raw)?;
    // A buffer of exactly N elements: thread N - 1 writes element N.
    let mut y = dev.alloc_zeroed::<f32>(N)?;
    // SAFETY: deliberately not: the last thread writes one element past `y`, which is what
    // this example shows the tools finding. On the simulator that is a reported fault; on a
    // GPU it is undefined behaviour, which compute-sanitizer reports (it writes into the
    // allocation's padding otherwise).
    let launched =
        unsafe { f.launch_unchecked(LaunchConfig::grid([grid, 1, 1]), (&x, &mut y, N as u32)) };
    match (dev.backend(), launched) {
        (Backend::Sim, Err(e)) => {
            println!("simulator: {e}");
            assert!(e.to_string().contains(&format!("{}:{line}", file!())));
        }
        (Backend::Sim, Ok(())) => panic!("the simulator missed the write past the end"),
        (Backend::Cuda { .. }, launched) => {
            launched?;
            println!("launched on the GPU: run under compute-sanitizer --tool memcheck");
        }
    }
    Ok(())
}

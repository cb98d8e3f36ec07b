//! One helper that sums a payload over any group — the block, a warp, logical warps of 8 —
//! used three times in one kernel, each checked against the CPU.

use coopgraph::ir::{Element, Group, Reduce, ThreadData, index};
use coopgraph::runtime::Device;
use coopgraph::{KernelBuilder, Load, Store};

/// The sum of `t` over `group`, at every rank of the group.
fn group_sum<T: Element>(k: &mut KernelBuilder, group: Group, t: &ThreadData<T>) -> ThreadData<T> {
    k.reduce(group, t, Reduce::sum().broadcast())
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
    let mut k = KernelBuilder::new("group_sums")
        .block(256)
        .items_per_thread(4);
    let x = k.input::<i32>("x");
    let outs = [
        k.output::<i32>("block"),
        k.output::<i32>("warp"),
        k.output::<i32>("warp8"),
    ];
    let block = k.this_block();
    let groups = [block, k.this_warp().into(), k.this_warp().group_by(8)];
    let t = k.load_from(block, &x, Load::warp_transpose());
    for (g, out) in groups.iter().zip(&outs) {
        let s = group_sum(&mut k, *g, &t);
        // One sum per thread: the block's 256 of them after those of the blocks before it.
        let at = index::block_index() * 256u32;
        k.store_to(block, out, &s, Store::direct().offset(at));
    }
    let kernel = k.build()?;

    let device = Device::default_device()?;
    let xs: Vec<i32> = (0..1024).map(|i| (i * 37 % 101) - 50).collect();
    let x = device.upload(&xs)?;
    let mut bufs = [
        device.alloc_zeroed::<i32>(256)?,
        device.alloc_zeroed::<i32>(256)?,
        device.alloc_zeroed::<i32>(256)?,
    ];
    let [b0, b1, b2] = &mut bufs;
    device.compile(&kernel)?.launch_grid(1, (&x, b0, b1, b2))?;
    for (width, buf) in [256usize, 32, 8].into_iter().zip(&bufs) {
        let got = buf.to_vec()?;
        for (t, &v) in got.iter().enumerate() {
            let g = t / width;
            let want: i32 = xs[g * width * 4..(g + 1) * width * 4].iter().sum();
            if v != want {
                return Err(
                    format!("groups of {width}: thread {t} has {v}, expected {want}").into(),
                );
            }
        }
    }
    println!(
        "block, warp and 8-lane sums correct on {:?}",
        device.backend()
    );
    Ok(())
}

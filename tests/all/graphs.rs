//! Graphs: launches captured once on a stream and replayed, on the default device (the
//! simulator here; the GPU with `COOPGRAPH_DEVICE=cuda`), checked against a CPU reference;
//! and the rules that keep replays inside live buffers.

use super::common::{assemble_all, device};
use coopgraph::runtime::{Device, Foreign, LaunchConfig, RuntimeError};
use coopgraph::{Kernel, KernelBuilder, Load, Store};

/// One Jacobi step of a 1-D three-point stencil over `n` interior points of buffers of
/// `n + 2`: `y[i + 1] = (x[i] + x[i + 1] + x[i + 2]) / 3`; the two boundary cells are never
/// written.
pub fn jacobi_kernel() -> Kernel {
    let mut k = KernelBuilder::new("graph_jacobi")
        .block(128)
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
        k.store_to(
            b,
            &y,
            &avg,
            Store::direct()
                .offset(tile.origin + 1u32)
                .valid_items(tile.valid),
        );
    });
    let kernel = k.build().expect("builds");
    assemble_all(&kernel);
    kernel
}

/// The CPU's Jacobi step, in the kernel's order of operations (so the results are equal
/// bit for bit).
pub fn jacobi_step(x: &[f32], y: &mut [f32]) {
    for i in 0..x.len() - 2 {
        y[i + 1] = ((x[i] + x[i + 1]) + x[i + 2]) * (1.0f32 / 3.0);
    }
}

fn start(n: usize) -> Vec<f32> {
    (0..n + 2)
        .map(|i| {
            if i == 0 || i == n + 1 {
                100.0
            } else {
                (i % 7) as f32
            }
        })
        .collect()
}

/// A relaunch loop captured once and replayed: the graph's result equals the CPU's after the
/// same number of steps, and equals the same steps launched one by one.
#[test]
fn a_captured_jacobi_loop_replays_like_the_cpu() {
    let dev = device();
    let f = dev.compile(&jacobi_kernel()).expect("compiles");
    let n = 1500usize;
    let init = start(n);
    let stream = dev.new_stream().expect("stream");
    let mut a = stream.upload(&init).expect("upload");
    let mut b = stream.upload(&init).expect("upload");
    let config = f.config_over(n).expect("config").on_stream(&stream);
    let graph = stream
        .capture(|s| {
            let config = config.clone().on_stream(s);
            f.launch(config.clone(), (&a, &mut b, n as u32))?;
            f.launch(config, (&b, &mut a, n as u32))
        })
        .expect("captures");
    assert_eq!(graph.kernels(), 2);
    // Capturing ran nothing.
    assert_eq!(stream.download(&b).expect("download"), init);
    let replays = 7;
    for _ in 0..replays {
        graph.launch(&stream).expect("replay");
    }
    let (mut x, mut y) = (init.clone(), init.clone());
    for _ in 0..replays {
        jacobi_step(&x, &mut y);
        jacobi_step(&y, &mut x);
    }
    assert_eq!(stream.download(&a).expect("download"), x);
    assert_eq!(stream.download(&b).expect("download"), y);
    // Replayed on another stream of the device, after the first stream's work.
    let other = dev.new_stream().expect("stream");
    other
        .wait(&stream.record_event().expect("event"))
        .expect("wait");
    graph.launch(&other).expect("replay elsewhere");
    jacobi_step(&x, &mut y);
    jacobi_step(&y, &mut x);
    assert_eq!(other.download(&a).expect("download"), x);
    // The same two launches one by one give the same.
    let mut c = dev.upload(&x).expect("upload");
    let mut d = dev.upload(&x).expect("upload");
    f.launch_over(n, (&c, &mut d, n as u32)).expect("launch");
    f.launch_over(n, (&d, &mut c, n as u32)).expect("launch");
    graph.launch(&other).expect("replay");
    assert_eq!(c.to_vec().expect("c"), other.download(&a).expect("a"));
}

/// A graph refuses to launch once a buffer it captured is gone; views keep their buffer's
/// cell; other graphs of the same buffers are not affected by a graph's drop.
#[test]
fn graphs_refuse_buffers_that_are_gone() {
    let dev = device();
    let f = dev.compile(&jacobi_kernel()).expect("compiles");
    let n = 300usize;
    let stream = dev.new_stream().expect("stream");
    let a = stream.upload(&start(n)).expect("upload");
    let mut b = stream.upload(&start(n)).expect("upload");
    let config = f.config_over(n).expect("config");
    let graph = stream
        .capture(|s| f.launch(config.clone().on_stream(s), (&a, &mut b, n as u32)))
        .expect("captures");
    let twin = stream
        .capture(|s| {
            let src = a.view(..).expect("view");
            f.launch(config.clone().on_stream(s), (&src, &mut b, n as u32))
        })
        .expect("captures a view");
    graph.launch(&stream).expect("replay");
    drop(graph);
    twin.launch(&stream)
        .expect("the other graph still launches");
    let mut want = start(n);
    jacobi_step(&start(n), &mut want);
    assert_eq!(stream.download(&b).expect("download"), want);
    drop(a);
    assert!(matches!(
        twin.launch(&stream),
        Err(RuntimeError::GraphBufferGone)
    ));
    // A buffer made inside the closure is gone when it returns.
    let mut c = stream.upload(&start(n)).expect("upload");
    let temp = stream
        .capture(|s| {
            let t = dev.upload(&start(n))?;
            f.launch(config.clone().on_stream(s), (&t, &mut c, n as u32))
        })
        .expect("captures");
    assert!(matches!(
        temp.launch(&stream),
        Err(RuntimeError::GraphBufferGone)
    ));
}

/// A capturing stream takes only launches; errors end the capture and leave the device
/// usable; a graph launches only on a stream of its device.
#[test]
fn capture_rules() {
    let dev = device();
    let f = dev.compile(&jacobi_kernel()).expect("compiles");
    let n = 200usize;
    let stream = dev.new_stream().expect("stream");
    let a = stream.upload(&start(n)).expect("upload");
    let mut b = stream.upload(&start(n)).expect("upload");
    let refused = stream.capture(|s| {
        assert!(s.is_capturing() && !stream.is_capturing());
        for result in [
            s.upload(&[1.0f32]).map(|_| ()),
            s.download(&a).map(|_| ()),
            s.record_event().map(|_| ()),
            s.synchronize(),
            s.capture(|_| Ok::<(), RuntimeError>(())).map(|_| ()),
        ] {
            assert!(
                matches!(result, Err(RuntimeError::Capturing { .. })),
                "{result:?}"
            );
        }
        // Copies on other streams run as usual meanwhile.
        assert_eq!(stream.download(&a)?, start(n));
        Err(RuntimeError::ZeroTile {
            entry: "the closure's own error".into(),
        })
    });
    assert!(matches!(refused, Err(RuntimeError::ZeroTile { .. })));
    // An argument error inside the closure comes back the same way.
    let bad = stream.capture(|s| {
        f.launch(
            LaunchConfig::blocks(1).on_stream(s),
            (&a, &mut b, n as u32, 1u32),
        )
    });
    assert!(matches!(bad, Err(RuntimeError::ArgCount { .. })));
    // The stream works after failed captures.
    let graph = stream
        .capture(|s| f.launch(f.config_over(n)?.on_stream(s), (&a, &mut b, n as u32)))
        .expect("captures");
    graph.launch(&stream).expect("replay");
    let mut want = start(n);
    jacobi_step(&start(n), &mut want);
    assert_eq!(stream.download(&b).expect("download"), want);
    // An empty capture is a graph of no launches.
    let empty = stream
        .capture(|_| Ok::<(), RuntimeError>(()))
        .expect("captures");
    assert_eq!(empty.kernels(), 0);
    empty.launch(&stream).expect("nothing to do");
    // Another device's stream is refused.
    let elsewhere = Device::sim().new_stream().expect("stream");
    assert!(matches!(
        graph.launch(&elsewhere),
        Err(RuntimeError::WrongDevice {
            what: Foreign::Graph
        })
    ));
    // cudarc memory is refused at capture on CUDA: a graph cannot follow its lifetime.
    if let Some(cuda) = dev.cuda_stream() {
        let raw = cuda.clone_htod(&start(n)).expect("htod");
        let untracked =
            stream.capture(|s| f.launch(f.config_over(n)?.on_stream(s), (&raw, &mut b, n as u32)));
        assert!(matches!(
            untracked,
            Err(RuntimeError::CaptureUntracked { index: 0, .. })
        ));
        // Borrowing a captured buffer's slice mutably retires it for the graph.
        let mut held = stream.upload(&start(n)).expect("upload");
        let g = stream
            .capture(|s| f.launch(f.config_over(n)?.on_stream(s), (&a, &mut held, n as u32)))
            .expect("captures");
        g.launch(&stream).expect("replay");
        let _ = held.as_cuda_mut();
        assert!(matches!(
            g.launch(&stream),
            Err(RuntimeError::GraphBufferGone)
        ));
    }
}

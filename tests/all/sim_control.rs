//! The simulator stays responsive: modules load and buffers move while a kernel runs, a whole
//! launch can be bounded by a budget of instructions or wall time, and a progress callback
//! sees how far it got and can cancel it.

use coopgraph::runtime::{Device, RuntimeError};
use coopgraph::sim::{
    Budget, Control, ProgressHook, SimError, SimOptions, Simulator, StopReason, Stopped, entry_text,
};
use coopgraph::{Kernel, KernelBuilder, Store};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One block of 32 threads, each folding `n` rounds of `a * 3 + 1`.
fn spin() -> Kernel {
    let mut k = KernelBuilder::new("spin").block(32).items_per_thread(1);
    let y = k.output::<u32>("y");
    let n = k.scalar::<u32>("n");
    let b = k.this_block();
    let acc = k.fill::<u32>(0u32);
    k.for_range(0u32, n, |k, _| {
        let next = k.map(&acc, |a| a * 3u32 + 1u32);
        k.assign(&acc, &next);
    });
    k.store_to(b, &y, &acc, Store::direct());
    k.build().expect("builds")
}

/// `n` rounds of `a * 3 + 1` from 0, wrapping.
fn spun(n: u32) -> u32 {
    (0..n).fold(0u32, |a, _| a.wrapping_mul(3).wrapping_add(1))
}

/// A kernel no cache holds yet: its name is new.
fn fresh(name: &str) -> Kernel {
    let mut k = KernelBuilder::new(name).block(64).items_per_thread(2);
    let x = k.input::<f32>("x");
    let y = k.output::<f32>("y");
    let b = k.this_block();
    let t = k.load_from(b, &x, coopgraph::Load::transpose());
    let u = k.map(&t, |v| v * 2.0f32);
    k.store_to(b, &y, &u, Store::transpose());
    k.build().expect("builds")
}

fn stopped(e: RuntimeError) -> Box<Stopped> {
    match e {
        RuntimeError::Sim(SimError::Stopped(s)) => s,
        other => panic!("expected a stopped launch, got {other}"),
    }
}

/// A compile (and an upload, a download and a free) on another thread completes while a
/// launch of about a second runs: loading takes no lock the launch holds, and host copies
/// lock the memory only for a moment.
#[test]
fn compiles_and_copies_proceed_during_a_launch() {
    let started = Arc::new(AtomicBool::new(false));
    let flag = started.clone();
    let dev = Device::sim_with(SimOptions {
        progress: Some(ProgressHook::new(move |_| {
            flag.store(true, Ordering::Relaxed);
            Control::Continue
        })),
        ..SimOptions::default()
    });
    let f = dev.compile(&spin()).expect("compile");
    let mut y = dev.alloc_zeroed::<u32>(32).expect("alloc");
    // Calibrate: rounds for a launch of about a second on this machine.
    let t = Instant::now();
    f.launch_grid(1, (&mut y, 2000u32)).expect("launch");
    let per_round = t.elapsed().as_secs_f64() / 2000.0;
    let rounds = ((1.0 / per_round) as u32).clamp(2000, 50_000_000);
    started.store(false, Ordering::Relaxed);
    let done = std::thread::scope(|s| {
        let launch = s.spawn(|| {
            let t = Instant::now();
            f.launch_grid(1, (&mut y, rounds)).expect("long launch");
            (t, Instant::now())
        });
        let wait = Instant::now();
        while !started.load(Ordering::Relaxed) && wait.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(1));
        }
        let t = Instant::now();
        let g = dev.compile(&fresh("during_a_launch")).expect("compile");
        let xs: Vec<f32> = (0..128).map(|i| i as f32).collect();
        let xb = dev.upload(&xs).expect("upload");
        assert_eq!(xb.to_vec().expect("download"), xs);
        drop(xb);
        let compiled = Instant::now();
        assert!(g.name().contains("during"));
        let (launch_start, launch_end) = launch.join().expect("the launch thread");
        (t, compiled, launch_start, launch_end)
    });
    let (t, compiled, launch_start, launch_end) = done;
    let launch = launch_end - launch_start;
    assert!(
        compiled < launch_end && compiled - t < launch / 4,
        "the compile took {:?} and ended {:?} before a launch of {:?} ended",
        compiled - t,
        launch_end.saturating_duration_since(compiled),
        launch
    );
    assert_eq!(y.to_vec().expect("download"), vec![spun(rounds); 32]);
}

/// Each block stores the sum of its indices: a few thread-instructions a block.
fn grid_kernel() -> String {
    entry_text(
        "each",
        &["u64 out"],
        &[],
        "ld.param.u64 %rd0, [out];
         mov.u32 %r0, %ctaid.x;
         mov.u32 %r1, %ctaid.y;
         add.u32 %r2, %r0, %r1;
         st.global.u32 [%rd0], %r2;
         ret;",
    )
}

/// 2^31 blocks with a budget of a million thread-instructions stop at once, saying how far
/// they got; a wall-time budget stops them too.
#[test]
fn a_budget_bounds_a_launch_of_two_billion_blocks() {
    let text = grid_kernel();
    let grid = [1 << 16, 1 << 15, 1];
    for threads in [1, 3] {
        let limit = 1_000_000;
        let sim = Simulator::new(SimOptions {
            budget: Budget {
                thread_instructions: Some(limit),
                wall_time: None,
            },
            threads,
            ..SimOptions::default()
        });
        let m = sim.load_module(&text).unwrap();
        let out = sim.alloc_zeroed(4).unwrap();
        let t = Instant::now();
        let e = sim
            .launch(&m, "each", grid, [1, 1, 1], 0, &[out])
            .unwrap_err();
        let took = t.elapsed();
        let SimError::Stopped(s) = &e else {
            panic!("{e}")
        };
        assert_eq!(s.reason, StopReason::Instructions { limit });
        assert_eq!(s.entry, "each");
        let p = s.progress;
        assert_eq!(p.blocks_total, 1 << 31);
        assert!(p.blocks_done > 0 && p.blocks_done < 1 << 20, "{e}");
        assert!(
            p.thread_instructions > limit && p.thread_instructions < limit + (1 << 20),
            "{e}"
        );
        assert!(took < Duration::from_secs(10), "{took:?}");
        let text = e.to_string();
        assert!(text.contains("1000000 thread-instructions"), "{text}");
    }
    let sim = Simulator::new(SimOptions {
        budget: Budget {
            thread_instructions: None,
            wall_time: Some(Duration::from_millis(50)),
        },
        ..SimOptions::default()
    });
    let m = sim.load_module(&text).unwrap();
    let out = sim.alloc_zeroed(4).unwrap();
    let t = Instant::now();
    let e = sim
        .launch(&m, "each", grid, [1, 1, 1], 0, &[out])
        .unwrap_err();
    let SimError::Stopped(s) = &e else {
        panic!("{e}")
    };
    assert_eq!(
        s.reason,
        StopReason::WallTime {
            limit: Duration::from_millis(50)
        }
    );
    assert!(s.progress.elapsed >= Duration::from_millis(50));
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    // A budget the launch stays within changes nothing.
    let sim = Simulator::new(SimOptions {
        budget: Budget {
            thread_instructions: Some(1 << 40),
            wall_time: Some(Duration::from_secs(3600)),
        },
        ..SimOptions::default()
    });
    let m = sim.load_module(&text).unwrap();
    let out = sim.alloc_zeroed(4).unwrap();
    let r = sim
        .launch(&m, "each", [100, 3, 1], [1, 1, 1], 0, &[out])
        .unwrap();
    assert_eq!(r.blocks, 300);
}

/// Through a device: the budget error comes back as the runtime's simulator error, and what
/// the blocks that ran wrote stays.
#[test]
fn a_budget_bounds_a_device_launch() {
    let dev = Device::sim_with(SimOptions {
        budget: Budget {
            thread_instructions: Some(200_000),
            wall_time: None,
        },
        ..SimOptions::default()
    });
    let f = dev.compile(&spin()).expect("compile");
    let mut y = dev.alloc_zeroed::<u32>(32).expect("alloc");
    f.launch_grid(1, (&mut y, 10u32))
        .expect("a small launch fits");
    assert_eq!(y.to_vec().expect("download"), vec![spun(10); 32]);
    let s = stopped(f.launch_grid(1, (&mut y, u32::MAX)).unwrap_err());
    assert_eq!(s.reason, StopReason::Instructions { limit: 200_000 });
    // The one block never finished.
    assert_eq!((s.progress.blocks_done, s.progress.blocks_total), (0, 1));
}

/// The callback sees the blocks done grow, is called once more at the end with every block
/// done, and can cancel, with one worker or several.
#[test]
fn the_progress_callback_watches_and_cancels() {
    let text = grid_kernel();
    for threads in [1, 4] {
        let seen: Arc<Mutex<Vec<(u64, u64)>>> = Arc::default();
        let log = seen.clone();
        let sim = Simulator::new(SimOptions {
            progress: Some(ProgressHook::new(move |p| {
                log.lock().unwrap().push((p.blocks_done, p.blocks_total));
                Control::Continue
            })),
            threads,
            ..SimOptions::default()
        });
        let m = sim.load_module(&text).unwrap();
        let out = sim.alloc_zeroed(4).unwrap();
        sim.launch(&m, "each", [5000, 4, 1], [32, 1, 1], 0, &[out])
            .unwrap();
        let seen = seen.lock().unwrap();
        assert!(seen.len() >= 2, "{seen:?}");
        assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0), "{seen:?}");
        assert_eq!(seen.last(), Some(&(20_000, 20_000)));

        let calls = Arc::new(AtomicU64::new(0));
        let c = calls.clone();
        let sim = Simulator::new(SimOptions {
            progress: Some(ProgressHook::new(move |_| {
                c.fetch_add(1, Ordering::Relaxed);
                Control::Cancel
            })),
            threads,
            ..SimOptions::default()
        });
        let m = sim.load_module(&text).unwrap();
        let out = sim.alloc_zeroed(4).unwrap();
        let e = sim
            .launch(&m, "each", [1 << 20, 1024, 1], [32, 1, 1], 0, &[out])
            .unwrap_err();
        let SimError::Stopped(s) = &e else {
            panic!("{e}")
        };
        assert_eq!(s.reason, StopReason::Cancelled);
        assert!(s.progress.blocks_done < 1 << 20, "{e}");
        assert_eq!(
            calls.load(Ordering::Relaxed),
            1,
            "one cancel stops every worker"
        );
        assert!(e.to_string().contains("cancelled"), "{e}");
    }
}

/// Options compare equal with the same callback (clones of one hook), not with another.
#[test]
fn options_with_callbacks_compare_by_identity() {
    let hook = ProgressHook::new(|_| Control::Continue);
    let a = SimOptions {
        progress: Some(hook.clone()),
        ..SimOptions::default()
    };
    assert_eq!(a, a.clone());
    let b = SimOptions {
        progress: Some(ProgressHook::new(|_| Control::Continue)),
        ..SimOptions::default()
    };
    assert_ne!(a, b);
    assert_ne!(a, SimOptions::default());
    assert!(format!("{a:?}").contains("ProgressHook"));
    fn shareable<T: Send + Sync>() {}
    shareable::<Simulator>();
    shareable::<SimOptions>();
}

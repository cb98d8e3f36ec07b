//! Benchmark timing (`do_bench`, `Bench::run`) on the default device: the simulator here, where
//! times are wall times, and the GPU with `COOPGRAPH_DEVICE=cuda`, where they come from events
//! and the L2 cache is flushed between runs.

use super::common::{Rng, assemble_all, device};
use coopgraph::runtime::{Bench, Clock, Flush, RuntimeError, Timing, do_bench};
use coopgraph::{Kernel, KernelBuilder, Load, Store};
use std::time::Duration;

/// `y[i] = x[i] ^ 0x5a5a` over `n` elements in tiles of 128 x 4.
fn xor_kernel() -> Kernel {
    let mut k = KernelBuilder::new("bench_xor")
        .block(128)
        .items_per_thread(4);
    let x = k.input::<u32>("x");
    let y = k.output::<u32>("y");
    let n = k.scalar::<u32>("n");
    let b = k.this_block();
    k.tiles(n, |k, _tile| {
        let t = k.load_from(b, &x, Load::striped());
        let t = k.map(&t, |v| v ^ 0x5a5au32);
        k.store_to(b, &y, &t, Store::striped());
    });
    let kernel = k.build().expect("builds");
    assemble_all(&kernel);
    kernel
}

fn check_summary(t: &Timing) {
    assert!(t.reps() >= 1);
    assert!(t.samples().windows(2).all(|w| w[0] <= w[1]), "sorted");
    assert!(t.min() <= t.quantile(0.2) && t.quantile(0.2) <= t.median());
    assert!(t.median() <= t.quantile(0.8) && t.quantile(0.8) <= t.max());
    assert!(t.min() <= t.mean() && t.mean() <= t.max());
    assert!(t.max() < Duration::from_secs(60), "{t:?}");
    let want = if device().is_cuda() {
        Clock::Events
    } else {
        Clock::Host
    };
    assert_eq!(t.clock(), want);
}

/// Every run the benchmark makes is either a warm-up run or a measured one, the budgets bound
/// the measured runs, and the work's output is what one run computes.
#[test]
fn do_bench_runs_the_work_within_its_budgets() {
    let dev = device();
    let f = dev.compile(&xor_kernel()).expect("compiles");
    let n = 3000usize;
    let xs: Vec<u32> = Rng::new(5).vec(n);
    let x = dev.upload(&xs).expect("upload");
    let mut y = dev.alloc_zeroed::<u32>(n).expect("alloc");
    let mut calls = 0u32;
    let timing = do_bench(dev, Bench::ms(2, 10), || {
        calls += 1;
        f.launch_over(n, (&x, &mut y, n as u32))
    })
    .expect("benchmarks");
    check_summary(&timing);
    assert_eq!(calls, timing.warmup_runs() + timing.reps() as u32);
    // The first run, then at least one estimating run.
    assert!(timing.warmup_runs() >= 2, "{timing:?}");
    let want: Vec<u32> = xs.iter().map(|v| v ^ 0x5a5a).collect();
    assert_eq!(y.to_vec().expect("download"), want);

    // No measuring budget: one measured run; a repetition bound holds whatever the budget.
    let mut calls = 0u32;
    let once = do_bench(dev, Bench::ms(0, 0), || {
        calls += 1;
        f.launch_over(n, (&x, &mut y, n as u32))
    })
    .expect("benchmarks");
    assert_eq!(once.reps(), 1);
    assert_eq!(calls, once.warmup_runs() + 1);
    let capped = do_bench(dev, Bench::ms(0, 60_000).with_max_reps(3), || {
        f.launch_over(n, (&x, &mut y, n as u32))
    })
    .expect("benchmarks");
    assert_eq!(capped.reps(), 3);
    check_summary(&capped);
}

/// A benchmark on a stream of its own, hot-cache (no flush), and one whose work fails: the
/// error comes back as the work's.
#[test]
fn benchmarks_run_on_any_stream_and_return_the_work_s_errors() {
    let dev = device();
    let f = dev.compile(&xor_kernel()).expect("compiles");
    let stream = dev.new_stream().expect("stream");
    let n = 1000usize;
    let x = stream.upload(&vec![1u32; n]).expect("upload");
    let mut y = stream.alloc_zeroed::<u32>(n).expect("alloc");
    let timing = Bench::ms(1, 4)
        .with_flush(Flush::Nothing)
        .run(&stream, || {
            f.launch(f.config_over(n)?.on_stream(&stream), (&x, &mut y, n as u32))
        })
        .expect("benchmarks");
    check_summary(&timing);
    assert_eq!(stream.download(&y).expect("download"), vec![1 ^ 0x5a5a; n]);

    // The wrong arguments: the launch's error, at the first run.
    let mut calls = 0;
    let failed = do_bench(dev, Bench::default(), || {
        calls += 1;
        f.launch_over(n, (&x, &mut y))
    });
    assert!(
        matches!(failed, Err(RuntimeError::ArgCount { .. })),
        "{failed:?}"
    );
    assert_eq!(calls, 1);

    // An error of the caller's own type passes through unchanged.
    #[derive(Debug)]
    enum Mine {
        Stop,
        Runtime,
    }
    impl From<RuntimeError> for Mine {
        fn from(_: RuntimeError) -> Mine {
            Mine::Runtime
        }
    }
    let mut calls = 0;
    let stopped = do_bench(dev, Bench::ms(0, 0), || {
        calls += 1;
        if calls == 2 { Err(Mine::Stop) } else { Ok(()) }
    });
    assert!(matches!(stopped, Err(Mine::Stop)), "{stopped:?}");
}

//! Block run-length decode against a CPU expansion of the runs, over random value dtypes,
//! runs and decoded items per thread, run lengths (zeros among them), block sizes and windows
//! (every window of the decoded sequence, one after another, and windows past its end), on
//! the simulator with every checker on; the barrier the setup records shown necessary by the
//! race checker; the verifier's errors, naming the user's line.

use super::common::{Batch, Rng, assert_same, device, race_checker};
use coopgraph::ir::{PrimitiveProblem, index};
use coopgraph::runtime::{Device, DeviceElement, RuntimeError};
use coopgraph::{Kernel, KernelBuilder, Load, Store};

#[derive(Debug, Clone, Copy)]
struct Case {
    block: u32,
    runs: u32,
    items: u32,
    /// Windows decoded one after another, from `start`.
    windows: u32,
    start: u32,
}

/// Decodes `windows` windows of `block * items` items from `start` on; window `w`'s items and
/// relative offsets stored at `w * block * items ..`, the total at `n[0]`.
fn kernel<T: DeviceElement>(case: Case) -> Kernel {
    let name = format!(
        "rld_{}_{}_{}_{}_{:?}",
        case.block,
        case.runs,
        case.items,
        case.windows,
        T::DTYPE
    );
    let mut k = KernelBuilder::new(name.to_lowercase())
        .block(case.block)
        .items_per_thread(case.runs);
    let (v, l) = (k.input::<T>("values"), k.input::<u32>("lengths"));
    let (y, o, n) = (
        k.output::<T>("y"),
        k.output::<u32>("o"),
        k.output::<u32>("n"),
    );
    let b = k.this_block();
    let values = k.load_from(b, &v, Load::direct());
    let lengths = k.load_from(b, &l, Load::direct());
    let runs = k.run_lengths(b, &values, &lengths);
    let window = case.block * case.items;
    k.for_range(0u32, case.windows, |k, w| {
        let from = w.clone() * window + case.start;
        let d = k.run_length_decode(&runs, case.items, from);
        let store = Store::direct().offset(w * window);
        k.store_to(b, &y, &d.items, store.clone());
        k.store_to(b, &o, &d.offsets, store);
    });
    k.if_(index::thread_rank().eq(0u32), |k| {
        k.write(&n, 0u32, runs.total())
    });
    k.build().expect("builds")
}

/// The CPU's decoded windows: items, offsets within runs, total.
fn expected<T: DeviceElement>(case: Case, vs: &[T], ls: &[u32]) -> (Vec<T>, Vec<u32>, u32) {
    let mut seq = Vec::new();
    let mut rel = Vec::new();
    for (&v, &l) in vs.iter().zip(ls) {
        for j in 0..l {
            seq.push(v);
            rel.push(j);
        }
    }
    let total = seq.len();
    let last = (0..vs.len())
        .rev()
        .find(|&r| ls[..r].iter().sum::<u32>() <= total as u32);
    let last = last.expect("run 0 starts at 0");
    let last_start: u32 = ls[..last].iter().sum();
    let window = (case.block * case.items) as usize;
    let (mut items, mut offsets) = (Vec::new(), Vec::new());
    for p in case.start as usize..case.start as usize + window * case.windows as usize {
        if p < total {
            items.push(seq[p]);
            offsets.push(rel[p]);
        } else {
            items.push(vs[last]);
            offsets.push(p as u32 - last_start);
        }
    }
    (items, offsets, total as u32)
}

type Outputs<T> = (Vec<T>, Vec<u32>, u32);

fn run<T: DeviceElement>(
    dev: &Device,
    kernel: &Kernel,
    case: Case,
    vs: &[T],
    ls: &[u32],
) -> Result<Outputs<T>, RuntimeError> {
    let out = (case.block * case.items * case.windows) as usize;
    let (vb, lb) = (dev.upload(vs)?, dev.upload(ls)?);
    let (mut yb, mut ob) = (dev.alloc_zeroed::<T>(out)?, dev.alloc_zeroed::<u32>(out)?);
    let mut nb = dev.alloc_zeroed::<u32>(1)?;
    dev.compile(kernel)?
        .launch_grid(1, (&vb, &lb, &mut yb, &mut ob, &mut nb))?;
    Ok((yb.to_vec()?, ob.to_vec()?, nb.to_vec()?[0]))
}

fn random_case<T: DeviceElement>(batch: &mut Batch, rng: &mut Rng) {
    let blocks = [1u32, 2, 4, 8, 16, 32, 64, 96, 160];
    let block = blocks[(rng.next() % blocks.len() as u64) as usize];
    let runs = 1 + (rng.next() % 4) as u32;
    let items = 1 + (rng.next() % 8) as u32;
    let n = (block * runs) as usize;
    let longest = 1 + rng.next() % 9;
    let ls: Vec<u32> = (0..n)
        .map(|_| {
            let l = (rng.next() % longest) as u32;
            if rng.next().is_multiple_of(4) { 0 } else { l }
        })
        .collect();
    let total: u32 = ls.iter().sum();
    let window = block * items;
    // Every window of the sequence and one past it, from 0 or from within the first window.
    let start = if rng.next().is_multiple_of(2) {
        0
    } else {
        (rng.next() % u64::from(window)) as u32
    };
    let windows = (total / window + 2).min(6);
    let case = Case {
        block,
        runs,
        items,
        windows,
        start,
    };
    let vs: Vec<T> = rng.vec(n);
    let kernel = kernel::<T>(case);
    let (y, o, t) = run(device(), &kernel, case, &vs, &ls).expect("runs");
    let (wy, wo, wt) = expected(case, &vs, &ls);
    let what = format!("{case:?} {:?}", T::DTYPE);
    assert_eq!(t, wt, "{what}: total");
    assert_same(&y, &wy, &what);
    assert_eq!(o, wo, "{what}: relative offsets");
    batch.add(&kernel);
}

#[test]
fn run_length_decode_matches_the_cpu() {
    let mut batch = Batch::default();
    let mut rng = Rng::new(0x41d);
    for _ in 0..6 {
        random_case::<u8>(&mut batch, &mut rng);
        random_case::<i16>(&mut batch, &mut rng);
        random_case::<u32>(&mut batch, &mut rng);
        random_case::<i64>(&mut batch, &mut rng);
        random_case::<f32>(&mut batch, &mut rng);
        random_case::<f64>(&mut batch, &mut rng);
    }
    batch.finish();
}

/// The setup's block barrier (and every barrier the planner placed) is needed.
#[test]
fn every_barrier_is_necessary() {
    let checked = race_checker();
    let case = Case {
        block: 64,
        runs: 2,
        items: 3,
        windows: 2,
        start: 5,
    };
    let ls: Vec<u32> = (0..128u32).map(|i| (i * 7) % 4).collect();
    let vs: Vec<u32> = (0..128).collect();
    let kernel = kernel::<u32>(case);
    run(&checked, &kernel, case, &vs, &ls).expect("race-free");
    super::common::assert_barriers_necessary(&kernel, |k| run(&checked, k, case, &vs, &ls));
    let syncs =
        super::common::assert_sync_blocks_necessary(&kernel, |k| run(&checked, k, case, &vs, &ls));
    assert_eq!(syncs, 1, "one block barrier: the setup's");
}

/// Runs set up again round a loop, in a block of one warp (whose scan holds no block
/// barrier): the barrier before the writes keeps the last round's decodes from reading
/// overwritten runs.
#[test]
fn a_setup_round_a_loop_waits_for_the_last_decodes() {
    let checked = race_checker();
    let mut k = KernelBuilder::new("rld_rounds")
        .block(32)
        .items_per_thread(2);
    let (v, l) = (k.input::<u32>("values"), k.input::<u32>("lengths"));
    let y = k.output::<u32>("y");
    let b = k.this_block();
    let values = k.load_from(b, &v, Load::direct());
    let lengths = k.load_from(b, &l, Load::direct());
    k.for_range(0u32, 2u32, |k, round| {
        let shifted = k.map(&values, |x| x + round.clone());
        let runs = k.run_lengths(b, &shifted, &lengths);
        let d = k.run_length_decode(&runs, 3, 0u32);
        k.store_to(b, &y, &d.items, Store::direct().offset(round * 96u32));
    });
    let kernel = k.build().expect("builds");
    let ls: Vec<u32> = (0..64u32).map(|i| 1 + i % 3).collect();
    let vs: Vec<u32> = (0..64).collect();
    let run = |kernel: &Kernel| -> Result<Vec<u32>, RuntimeError> {
        let (vb, lb) = (checked.upload(&vs)?, checked.upload(&ls)?);
        let mut yb = checked.alloc_zeroed::<u32>(192)?;
        checked
            .compile(kernel)?
            .launch_grid(1, (&vb, &lb, &mut yb))?;
        yb.to_vec()
    };
    let seq: Vec<u32> = (vs.iter().zip(&ls))
        .flat_map(|(&v, &l)| std::iter::repeat_n(v, l as usize))
        .take(96)
        .collect();
    let want: Vec<u32> = (0..2u32)
        .flat_map(|r| seq.iter().map(move |&x| x + r))
        .collect();
    assert_same(&run(&kernel).expect("race-free"), &want, "two rounds");
    super::common::assert_barriers_necessary(&kernel, |k| run(k));
    // The simulator's race checker takes the scan's warp shuffles as ordering the lanes; the
    // PTX memory model does not, nor does the independent interpreter, which sees the race
    // without the first barrier.
    use crate::fuzz::interp::{self, Arg, Event, Launch};
    let (lens, vals) = (|i: u64| 1 + i % 3, |i: u64| i);
    let zero = |_: u64| 0u64;
    let races = |kernel: &Kernel| {
        let launch = Launch {
            grid: [1, 1, 1],
            cluster: None,
            dyn_len: None,
            args: vec![
                Arg::Input {
                    len: Some(64),
                    value: &vals,
                },
                Arg::Input {
                    len: Some(64),
                    value: &lens,
                },
                Arg::Output {
                    len: Some(192),
                    before: &zero,
                },
            ],
        };
        (interp::run(kernel.ir(), &launch).events.iter())
            .filter(|e| matches!(e, Event::SharedRace { .. }))
            .count()
    };
    assert_eq!(races(&kernel), 0, "the interpreter sees no race");
    let without = kernel
        .without_sync_block(0)
        .expect("the barrier before the writes");
    assert!(
        races(&without) > 0,
        "without the barrier before the writes, no race seen"
    );
    assert!(kernel.without_sync_block(2).is_none(), "two block barriers");
}

fn problem(build: impl FnOnce(&mut KernelBuilder) -> u32) -> PrimitiveProblem {
    let mut k = KernelBuilder::new("bad").block(64).items_per_thread(2);
    let line = build(&mut k);
    super::common::primitive_problem(k, line)
}

#[test]
fn controls_that_do_not_fit_are_reported_at_the_users_line() {
    let p = problem(|k| {
        let (b, l) = (k.this_block(), k.input::<u32>("l"));
        let t = k.load_from(b, &l, Load::direct());
        let w = k.this_warp();
        k.run_lengths(w, &t, &t);
        line!() - 1
    });
    assert!(matches!(p, PrimitiveProblem::Group { .. }));
    let p = problem(|k| {
        let (b, l) = (k.this_block(), k.input::<u32>("l"));
        let t = k.load_from(b, &l, Load::direct());
        let one = k.thread_data_n::<u32>(1);
        k.set_item(&one, 0, 1u32);
        k.run_lengths(b, &t, &one);
        line!() - 1
    });
    assert_eq!(
        p,
        PrimitiveProblem::Items {
            what: "block run-length decode",
            input: "lengths",
            items: 1,
            want: 2
        }
    );
    let p = problem(|k| {
        let (b, l) = (k.this_block(), k.input::<u32>("l"));
        let t = k.load_from(b, &l, Load::direct());
        let runs = k.run_lengths(b, &t, &t);
        k.run_length_decode(&runs, 0, 0u32);
        line!() - 1
    });
    assert_eq!(p, PrimitiveProblem::DecodedItems { items: 0, max: 64 });
}

/// The whole decoded sequence, window after window until the runs' total (a loop bounded by
/// the block scan's aggregate, which the verifier takes as uniform, holding the decodes), in
/// blocks of several sizes: every item against the CPU's expansion, race-free, and assembled
/// for every arch.
#[test]
fn decoding_window_after_window_until_the_total() {
    let checked = race_checker();
    let mut batch = Batch::default();
    let mut rng = Rng::new(0x7d1);
    for (block, runs, items) in [(16u32, 3u32, 2u32), (64, 2, 5), (96, 4, 3)] {
        let mut k = KernelBuilder::new(format!("rld_until_total_{block}_{runs}_{items}"))
            .block(block)
            .items_per_thread(runs);
        let (v, l) = (k.input::<u32>("values"), k.input::<u32>("lengths"));
        let y = k.output::<u32>("y");
        let b = k.this_block();
        let values = k.load_from(b, &v, Load::direct());
        let lengths = k.load_from(b, &l, Load::direct());
        let decoder = k.run_lengths(b, &values, &lengths);
        let total = decoder.total();
        let window = block * items;
        k.for_range_step(0u32, total.clone(), window, |k, from| {
            let d = k.run_length_decode(&decoder, items, from.clone());
            let store = Store::direct()
                .offset(from.clone())
                .valid_items(total.clone() - from);
            k.store_to(b, &y, &d.items, store);
        });
        let kernel = k.build().expect("builds");
        batch.add(&kernel);
        let n = (block * runs) as usize;
        let ls: Vec<u32> = (0..n).map(|_| (rng.next() % 9) as u32).collect();
        let vs: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
        let want: Vec<u32> = vs
            .iter()
            .zip(&ls)
            .flat_map(|(&v, &l)| std::iter::repeat_n(v, l as usize))
            .collect();
        let (vb, lb) = (
            checked.upload(&vs).expect("upload"),
            checked.upload(&ls).expect("upload"),
        );
        let mut yb = checked
            .alloc_zeroed::<u32>(want.len().max(1))
            .expect("alloc");
        checked
            .compile(&kernel)
            .expect("compiles")
            .launch_grid(1, (&vb, &lb, &mut yb))
            .expect("race-free");
        assert_eq!(
            yb.to_vec().expect("read")[..want.len()],
            want[..],
            "{}",
            kernel.name()
        );
    }
    batch.finish();
}

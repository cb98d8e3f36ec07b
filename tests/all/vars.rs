//! Per-thread variables and the control flow around them: `var`/`set`, stepped `for`,
//! `while_`, `break_`, `continue_` and `return_if`. Kernels run on the simulator with every
//! checker on against CPU references and are assembled for every arch; each misuse is a typed
//! error naming the user's line.

use super::common::{Batch, assert_same, compiled, device};
use coopgraph::ir::{Reduce, VerifyErrorKind as K, index};
use coopgraph::runtime::{Device, RuntimeError, SimOptions};
use coopgraph::sim::SimError;
use coopgraph::{Error, Kernel, KernelBuilder, Load, Store};
use proptest::prelude::*;

fn built(k: KernelBuilder) -> Kernel {
    let name = k.ir().name.clone();
    k.build().unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Builds and returns the verifier's errors as (kind, line) pairs.
fn errors(k: KernelBuilder) -> Vec<(K, u32)> {
    match k.build() {
        Err(Error::Verify(e)) => {
            for err in &e.errors {
                assert!(e.listing.contains(&err.to_string()), "{}", e.listing);
            }
            e.errors.into_iter().map(|e| (e.kind, e.loc.line)).collect()
        }
        Err(other) => panic!("expected verifier errors, got {other}"),
        Ok(_) => panic!("expected verifier errors, the kernel built"),
    }
}

fn has(errs: &[(K, u32)], line: u32, pred: impl Fn(&K) -> bool) {
    assert!(
        errs.iter().any(|(k, l)| *l == line && pred(k)),
        "no matching error at line {line}: {errs:?}"
    );
}

/// The steps of the Collatz sequence from `v` to 1, at most `cap`.
fn collatz_cpu(mut v: u32, cap: u32) -> u32 {
    let mut steps = 0;
    while v > 1 && steps < cap {
        v = if v.is_multiple_of(2) {
            v / 2
        } else {
            3 * v + 1
        };
        steps += 1;
    }
    steps
}

/// Each thread of the grid counts the Collatz steps of `x[g]` (at most `cap`) with a
/// thread-varying `while_`, and leaves early past `n`.
fn collatz(block: u32) -> Kernel {
    let mut k = KernelBuilder::new("collatz").block(block);
    let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    let (n, cap) = (k.scalar::<u32>("n"), k.scalar::<u32>("cap"));
    let g = index::block_index() * index::block_threads() + index::thread_rank();
    k.return_if(g.ge(n));
    let v = k.var(x.at(&g));
    let steps = k.var(0u32);
    k.while_(v.get().gt(1u32), |k| {
        k.if_(steps.get().ge(cap), |k| k.break_());
        k.if_else(
            (v.get() % 2u32).eq(0u32),
            |k| k.set(&v, v.get() / 2u32),
            |k| k.set(&v, v.get() * 3u32 + 1u32),
        );
        k.set(&steps, steps.get() + 1u32);
    });
    k.write(&y, &g, steps.get());
    built(k)
}

/// `sum(i for i in (start..end).step_by(step))` and the count, per thread, with a stepped
/// loop whose start differs by thread, and a `continue_` skipping multiples of 5.
fn stepped(block: u32) -> Kernel {
    let mut k = KernelBuilder::new("stepped").block(block);
    let (y, c) = (k.output::<u32>("y"), k.output::<u32>("c"));
    let (end, step) = (k.scalar::<u32>("end"), k.scalar::<u32>("step"));
    let t = index::thread_rank();
    let (sum, count) = (k.var(0u32), k.var(0u32));
    k.for_range_step(&t, end, step, |k, i| {
        k.set(&count, count.get() + 1u32);
        k.if_((i.clone() % 5u32).eq(0u32), |k| k.continue_());
        k.set(&sum, sum.get() + i);
    });
    k.write(&y, &t, sum.get());
    k.write(&c, &t, count.get());
    built(k)
}

fn stepped_cpu(start: u32, end: u32, step: u32) -> (u32, u32) {
    let (mut sum, mut count) = (0u32, 0u32);
    if step == 0 {
        return (0, 0);
    }
    let mut i = start as u64;
    while i < end as u64 {
        count += 1;
        if !i.is_multiple_of(5) {
            sum = sum.wrapping_add(i as u32);
        }
        i += step as u64;
    }
    (sum, count)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, .. ProptestConfig::default() })]

    /// A thread-varying `while_` with a `break_`, after a thread-varying `return_if`, agrees
    /// with the CPU at any block size and a partial last block.
    #[test]
    fn collatz_steps_agree_with_the_cpu(
        block in 1u32..200,
        extra in 0u32..150,
        cap in 0u32..200,
        seed in any::<u64>(),
    ) {
        let kernel = collatz(block);
        Batch::default().add(&kernel);
        let n = block + extra;
        let grid = n.div_ceil(block);
        let mut rng = super::common::Rng::new(seed);
        let xs: Vec<u32> = (0..n).map(|_| (rng.next() % 1000) as u32).collect();
        let dev = device();
        let f = compiled(dev, &kernel).expect("compiles");
        let xb = dev.upload(&xs).expect("upload");
        let mut yb = dev.alloc_zeroed::<u32>(n as usize).expect("alloc");
        f.launch_grid(grid, (&xb, &mut yb, n, cap)).expect("runs");
        let want: Vec<u32> = xs.iter().map(|&v| collatz_cpu(v, cap)).collect();
        assert_same(&yb.to_vec().expect("read"), &want, "collatz");
    }

    /// A stepped loop agrees with the CPU for any step, 0 and steps that would wrap included.
    #[test]
    fn stepped_loops_agree_with_the_cpu(
        block in 1u32..100,
        end in prop_oneof![0u32..300, Just(u32::MAX), (u32::MAX - 100)..u32::MAX],
        step in prop_oneof![0u32..20, Just(u32::MAX), (1u32 << 31)..(1u32 << 31) + 3],
    ) {
        let kernel = stepped(block);
        Batch::default().add(&kernel);
        let dev = device();
        let f = compiled(dev, &kernel).expect("compiles");
        let mut yb = dev.alloc_zeroed::<u32>(block as usize).expect("alloc");
        let mut cb = dev.alloc_zeroed::<u32>(block as usize).expect("alloc");
        // Small steps over a huge range would run for ever: keep the trip count small.
        let end = if step < 20 && end > 300 { 300 } else { end };
        f.launch_grid(1, (&mut yb, &mut cb, end, step)).expect("runs");
        let want: Vec<(u32, u32)> = (0..block).map(|t| stepped_cpu(t, end, step)).collect();
        let sums: Vec<u32> = want.iter().map(|w| w.0).collect();
        let counts: Vec<u32> = want.iter().map(|w| w.1).collect();
        assert_same(&yb.to_vec().expect("read"), &sums, "sums");
        assert_same(&cb.to_vec().expect("read"), &counts, "counts");
    }
}

/// A variable set only to uniform values under uniform control is uniform: a `while_` on
/// it holds a block reduction and `sync_block`, and a branch on it a store.
#[test]
fn uniform_variables_carry_collectives() {
    for block in [32u32, 96, 128] {
        let mut k = KernelBuilder::new("halvings")
            .block(block)
            .items_per_thread(1);
        let (x, y, n) = (
            k.input::<u32>("x"),
            k.output::<u32>("y"),
            k.scalar::<u32>("n"),
        );
        let b = k.this_block();
        let t = k.load_from(b, &x, Load::direct());
        let (w, total) = (k.var(n.expr()), k.var(0u32));
        let acc = k.fill(0u32);
        k.while_(w.get().gt(0u32), |k| {
            let s = k.reduce(b, &t, Reduce::sum().broadcast());
            k.sync_block();
            let next = k.map2(&acc, &s, |a, s| a + s * w.get());
            k.assign(&acc, &next);
            k.set(&total, total.get() + w.get());
            k.set(&w, w.get() / 2u32);
        });
        k.if_(total.get().eq(18u32), |k| {
            k.store_to(b, &y, &acc, Store::direct());
        });
        let kernel = built(k);
        Batch::default().add(&kernel);
        let dev = device();
        let f = compiled(dev, &kernel).expect("compiles");
        let xs: Vec<u32> = (0..block).collect();
        let xb = dev.upload(&xs).expect("upload");
        let mut yb = dev.alloc_zeroed::<u32>(block as usize).expect("alloc");
        f.launch_grid(1, (&xb, &mut yb, 10u32)).expect("runs");
        let sum: u32 = xs.iter().sum();
        let want = sum * (10 + 5 + 2 + 1);
        assert_eq!(yb.to_vec().expect("read"), vec![want; block as usize]);
    }
}

/// A `return_if` uniform across the block (whole blocks leave) may precede collectives;
/// one uniform across the block inside a uniform loop, too.
#[test]
fn block_uniform_exits_precede_collectives() {
    let mut k = KernelBuilder::new("odd_blocks")
        .block(64)
        .items_per_thread(2);
    let (x, y) = (k.input::<i32>("x"), k.output::<i32>("y"));
    let b = k.this_block();
    k.return_if((index::block_index() % 2u32).eq(1u32));
    let t = k.load_from(b, &x, Load::direct());
    let s = k.reduce(b, &t, Reduce::sum().broadcast());
    let r = k.map(&t, |v| v + s.item(0));
    k.store_to(b, &y, &r, Store::direct());
    let kernel = built(k);
    Batch::default().add(&kernel);
    let dev = device();
    let f = compiled(dev, &kernel).expect("compiles");
    let xs: Vec<i32> = (0..512).map(|i| i % 7 - 3).collect();
    let xb = dev.upload(&xs).expect("upload");
    let mut yb = dev.alloc_zeroed::<i32>(512).expect("alloc");
    f.launch_grid(4, (&xb, &mut yb)).expect("runs");
    let mut want = vec![0i32; 512];
    for blk in (0..4).step_by(2) {
        let tile = &xs[blk * 128..blk * 128 + 128];
        let s: i32 = tile.iter().sum();
        for (i, v) in tile.iter().enumerate() {
            want[blk * 128 + i] = v + s;
        }
    }
    assert_same(&yb.to_vec().expect("read"), &want, "odd_blocks");
}

/// `break_` and `continue_` in a `tiles` loop: tiles past a limit are left, tiles with an
/// odd index skipped; the block collectives in the body see uniform control.
#[test]
fn jumps_in_tiles_loops() {
    let mut k = KernelBuilder::new("tiles_jumps")
        .block(64)
        .items_per_thread(3);
    let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    let (n, limit) = (k.scalar::<u32>("n"), k.scalar::<u32>("limit"));
    let b = k.this_block();
    k.tiles(n, |k, tile| {
        k.if_(tile.index.ge(limit), |k| k.break_());
        k.if_((tile.index.clone() % 2u32).eq(1u32), |k| k.continue_());
        let t = k.load_from(b, &x, Load::direct().oob_default(0));
        let s = k.reduce(b, &t, Reduce::sum().broadcast());
        let r = k.map(&t, |v| v * 1000u32 + s.item(0));
        k.store_to(b, &y, &r, Store::direct());
    });
    let kernel = built(k);
    Batch::default().add(&kernel);
    let dev = device();
    let f = compiled(dev, &kernel).expect("compiles");
    let n = 192 * 7 + 5;
    let xs: Vec<u32> = (0..n).map(|i| i % 11).collect();
    let xb = dev.upload(&xs).expect("upload");
    let mut yb = dev.alloc_zeroed::<u32>(n as usize).expect("alloc");
    f.launch_grid(3, (&xb, &mut yb, n, 6u32)).expect("runs");
    let mut want = vec![0u32; n as usize];
    for (ti, tile) in xs.chunks(192).enumerate() {
        if ti >= 6 || ti % 2 == 1 {
            continue;
        }
        let s: u32 = tile.iter().sum();
        for (i, v) in tile.iter().enumerate() {
            want[ti * 192 + i] = v * 1000 + s;
        }
    }
    assert_same(&yb.to_vec().expect("read"), &want, "tiles_jumps");
}

/// A `while_` that never ends is the simulator's step-limit error, not a hang.
#[test]
fn a_runaway_while_is_a_step_limit_error() {
    let mut k = KernelBuilder::new("forever").block(33);
    let y = k.output::<u32>("y");
    let v = k.var(0u32);
    k.while_(v.get().lt(10u32), |k| k.set(&v, v.get() * 2u32));
    k.write(&y, index::thread_rank(), v.get());
    let kernel = built(k);
    Batch::default().add(&kernel);
    let dev = Device::sim_with(SimOptions {
        max_steps: 100_000,
        ..SimOptions::default()
    });
    let f = compiled(&dev, &kernel).expect("compiles");
    let mut yb = dev.alloc_zeroed::<u32>(33).expect("alloc");
    let err = f.launch_grid(1, (&mut yb,)).expect_err("never ends");
    assert!(
        matches!(err, RuntimeError::Sim(SimError::StepLimit { .. })),
        "{err}"
    );
}

#[test]
fn break_and_continue_outside_loops() {
    let mut k = KernelBuilder::new("k").block(32);
    let line = line!() + 1;
    k.break_();
    k.if_(index::thread_rank().lt(3u32), |k| k.continue_());
    let cont_line = line!() - 1;
    let errs = errors(k);
    has(&errs, line, |k| {
        matches!(k, K::JumpOutsideLoop { what: "break_" })
    });
    has(&errs, cont_line, |k| {
        matches!(k, K::JumpOutsideLoop { what: "continue_" })
    });
}

#[test]
fn a_constant_zero_step() {
    let mut k = KernelBuilder::new("k").block(32);
    let y = k.output::<u32>("y");
    let line = line!() + 1;
    k.for_range_step(0u32, 10u32, 0u32, |k, i| k.write(&y, i.clone(), i));
    has(&errors(k), line, |k| matches!(k, K::ZeroStep));
}

/// A collective after a thread-varying `return_if` names both lines; so does `sync_block`,
/// and a collective earlier in a loop body than the exit (it runs again after it).
#[test]
fn collectives_after_a_varying_exit() {
    let mut k = KernelBuilder::new("k").block(64).items_per_thread(1);
    let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    let b = k.this_block();
    let exit_line = line!() + 1;
    k.return_if(index::thread_rank().eq(7u32));
    let (t, load_line) = (k.load_from(b, &x, Load::direct()), line!());
    let sync_line = line!() + 1;
    k.sync_block();
    let (s, reduce_line) = (k.reduce(b, &t, Reduce::sum().broadcast()), line!());
    k.store_to(b, &y, &s, Store::direct());
    let errs = errors(k);
    for line in [load_line, sync_line, reduce_line] {
        has(
            &errs,
            line,
            |k| matches!(k, K::CollectiveAfterReturn { exit, .. } if exit.line == exit_line),
        );
    }

    let mut k = KernelBuilder::new("k").block(64).items_per_thread(1);
    let x = k.input::<u32>("x");
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::direct());
    let lines = std::cell::Cell::new((0, 0));
    k.for_range(0u32, 4u32, |k, i| {
        let l = line!() + 1;
        k.reduce(b, &t, Reduce::sum().broadcast());
        k.return_if(index::thread_rank().lt(i));
        lines.set((l, line!() - 1));
    });
    let (reduce_line, exit_line) = lines.get();
    has(
        &errors(k),
        reduce_line,
        |k| matches!(k, K::CollectiveAfterReturn { exit, .. } if exit.line == exit_line),
    );
}

/// A variable set under a thread-varying branch is thread-varying: a branch on it holding a
/// collective names the branch; a thread-varying `break_` makes its loop's body
/// thread-varying (naming the `break_`), and so does a `while_` on a thread-varying
/// condition (naming the `while_`).
#[test]
fn varying_variables_and_loops() {
    let mut k = KernelBuilder::new("k").block(64).items_per_thread(1);
    let x = k.input::<u32>("x");
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::direct());
    let v = k.var(1u32);
    k.if_(index::thread_rank().lt(5u32), |k| k.set(&v, 0u32));
    let cond_line = line!() + 1;
    k.if_(v.get().gt(0u32), |k| {
        k.reduce(b, &t, Reduce::sum().broadcast());
    });
    let errs = errors(k);
    assert!(
        errs.iter().any(|(kind, _)| matches!(
            kind,
            K::NonUniformCollective { condition, .. } if condition.line == cond_line
        )),
        "{errs:?}"
    );

    let mut k = KernelBuilder::new("k").block(64).items_per_thread(1);
    let x = k.input::<u32>("x");
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::direct());
    let break_line = std::cell::Cell::new(0);
    k.for_range(0u32, 4u32, |k, i| {
        k.sync_block();
        k.if_(index::thread_rank().lt(i), |k| {
            break_line.set(line!() + 1);
            k.break_();
        });
    });
    k.reduce(b, &t, Reduce::sum().broadcast());
    let errs = errors(k);
    assert!(
        errs.iter().any(|(kind, _)| matches!(
            kind,
            K::NonUniformCollective { condition, .. } if condition.line == break_line.get()
        )),
        "{errs:?}"
    );

    let mut k = KernelBuilder::new("k").block(64);
    let v = k.var(index::thread_rank());
    let while_line = line!() + 1;
    k.while_(v.get().lt(10u32), |k| {
        k.set(&v, v.get() + 1u32);
        k.sync_block();
    });
    let errs = errors(k);
    assert!(
        errs.iter().any(|(kind, _)| matches!(
            kind,
            K::NonUniformCollective { condition, .. } if condition.line == while_line
        )),
        "{errs:?}"
    );
}

/// A variable declared inside a branch holds a value only there; a variable of another
/// builder is a foreign handle.
#[test]
fn variables_out_of_scope_and_foreign() {
    let mut k = KernelBuilder::new("k").block(32);
    let y = k.output::<u32>("y");
    let mut inner = None;
    let decl_line = std::cell::Cell::new(0);
    k.if_(index::thread_rank().lt(3u32), |k| {
        decl_line.set(line!() + 1);
        inner = Some(k.var(5u32));
    });
    let inner = inner.expect("declared");
    let line = line!() + 1;
    k.write(&y, index::thread_rank(), inner.get());
    has(
        &errors(k),
        line,
        |k| matches!(k, K::UninitializedRead { declared, .. } if declared.line == decl_line.get()),
    );

    let mut other = KernelBuilder::new("other");
    let theirs = other.var(1u32);
    let mut k = KernelBuilder::new("k").block(32);
    let line = line!() + 1;
    k.set(&theirs, 2u32);
    has(&errors(k), line, |k| {
        matches!(k, K::ForeignHandle { what: "variable" })
    });
}

/// `return_if` inside a scan's prefix callback is an error naming its line.
#[test]
fn return_inside_a_prefix_callback() {
    let mut k = KernelBuilder::new("k").block(32).items_per_thread(1);
    let x = k.input::<u32>("x");
    let w = k.this_warp();
    let t = k.load_from(w, &x, Load::direct());
    let line = std::cell::Cell::new(0);
    k.scan_with_prefix(w, &t, coopgraph::ir::Scan::inclusive_sum(), |k, total| {
        line.set(line!() + 1);
        k.return_if(total.gt(3u32));
        total
    });
    has(&errors(k), line.get(), |k| matches!(k, K::ReturnInCallback));
}

/// The barriers a loop body needs across a `continue_` or a `break_`: a transposing load that
/// runs again after a `continue_` skipped the body's `sync_block` (or that follows the loop a
/// `break_` left) must wait for the previous one's readers of shared memory. The planner
/// places a barrier for each, the race checker finds no race with them and one without each,
/// and the results agree with the CPU.
#[test]
fn barriers_across_jumps() {
    for brk in [false, true] {
        let mut k = KernelBuilder::new(if brk { "after_break" } else { "after_continue" })
            .block(96)
            .items_per_thread(2);
        let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
        let b = k.this_block();
        let acc = k.fill(0u32);
        k.for_range(0u32, 4u32, |k, i| {
            let t = k.load_from(b, &x, Load::transpose());
            let next = k.map2(&acc, &t, |a, v| a + v);
            k.assign(&acc, &next);
            // Leaves after the second round, or skips the barrier in the second and the last
            // (so the loop also ends without it).
            let jump = if brk { i.eq(1u32) } else { (i % 2u32).eq(1u32) };
            k.if_(jump, |k| if brk { k.break_() } else { k.continue_() });
            k.sync_block();
        });
        let t = k.load_from(b, &x, Load::transpose());
        let r = k.map2(&acc, &t, |a, v| a * 1000u32 + v);
        k.store_to(b, &y, &r, Store::direct());
        let kernel = built(k);
        Batch::default().add(&kernel);
        let xs: Vec<u32> = (0..192).map(|v| v % 13).collect();
        let run = |kernel: &Kernel| -> Result<Vec<u32>, RuntimeError> {
            let dev = super::common::race_checker();
            let f = compiled(&dev, kernel)?;
            let xb = dev.upload(&xs)?;
            let mut yb = dev.alloc_zeroed::<u32>(192)?;
            f.launch_grid(1, (&xb, &mut yb))?;
            yb.to_vec()
        };
        let rounds = if brk { 2 } else { 4 };
        let want: Vec<u32> = xs.iter().map(|v| v * rounds * 1000 + v).collect();
        assert_eq!(run(&kernel).expect("runs"), want);
        assert!(!kernel.plan().barriers().is_empty(), "{}", kernel.explain());
        super::common::assert_barriers_necessary(&kernel, run);
    }
}

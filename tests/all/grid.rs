//! The grid group: `this_grid` ranks, `sync_grid` against a CPU reference at block sizes that
//! are not multiples of 32 and several grid sizes, the verifier's grid-uniformity rule, the
//! runtime's cooperative launch checks, and the simulator's participation and global-race
//! reports.

use crate::common::{assemble_all, compiled, device};
use coopgraph::ir::{VerifyErrorKind, index};
use coopgraph::runtime::{Device, LaunchConfig, RuntimeError, SimOptions};
use coopgraph::sim::{ParticipationProblem, SimError, Simulator, entry_text};
use coopgraph::{Error, Kernel, KernelBuilder};

/// Three phases over `n = blocks * block` elements, each reading what other blocks wrote in
/// the phase before, with a grid barrier between phases, the last two inside a loop:
/// `a[i] = 3i + 1`; then twice `b[i] = a[(i + shift) % n] + a[n - 1 - i]`, `a[i] = b[i] ^ i`.
fn phases(block: u32) -> Kernel {
    let mut k = KernelBuilder::new(format!("phases_{block}")).block(block);
    let (a, b) = (k.buffer::<u32>("a"), k.buffer::<u32>("b"));
    let shift = k.scalar::<u32>("shift");
    let g = k.this_grid();
    let (i, n) = (g.thread_rank(), g.num_threads());
    k.write(&a, i.clone(), i.clone() * 3u32 + 1u32);
    k.sync_grid();
    k.for_range(0u32, 2u32, |k, _| {
        let j = (i.clone() + shift.expr()) % n.clone();
        let v = a.at(j) + a.at(n.clone() - 1u32 - i.clone());
        k.write(&b, i.clone(), v);
        k.sync_grid();
        k.write(&a, i.clone(), b.at(i.clone()) ^ i.clone());
        k.sync_grid();
    });
    k.build().expect("builds")
}

fn phases_reference(n: usize, shift: usize) -> (Vec<u32>, Vec<u32>) {
    let mut a: Vec<u32> = (0..n as u32).map(|i| i * 3 + 1).collect();
    let mut b = vec![0u32; n];
    for _ in 0..2 {
        for i in 0..n {
            b[i] = a[(i + shift) % n].wrapping_add(a[n - 1 - i]);
        }
        for i in 0..n {
            a[i] = b[i] ^ i as u32;
        }
    }
    (a, b)
}

#[test]
fn grid_barriers_order_phases_across_blocks() {
    let dev = device();
    for block in [40u32, 96, 100, 256] {
        let kernel = phases(block);
        assert!(kernel.needs_cooperative());
        assemble_all(&kernel);
        let f = compiled(dev, &kernel).expect("compiles");
        let most = f.max_cooperative_blocks().expect("occupancy");
        for blocks in [1u32, 3, 7] {
            let blocks = blocks.min(most as u32);
            let n = (blocks * block) as usize;
            let shift = 37 % n;
            let mut ab = dev.alloc_zeroed::<u32>(n).expect("alloc");
            let mut bb = dev.alloc_zeroed::<u32>(n).expect("alloc");
            f.launch_cooperative_grid(blocks, (&mut ab, &mut bb, shift as u32))
                .unwrap_or_else(|e| panic!("block {block}, {blocks} blocks: {e}"));
            let (want_a, want_b) = phases_reference(n, shift);
            assert_eq!(ab.to_vec().expect("a"), want_a, "a: {block} x {blocks}");
            assert_eq!(bb.to_vec().expect("b"), want_b, "b: {block} x {blocks}");
        }
    }
}

/// `launch_cooperative` takes as many blocks as fit; a plain launch of a cooperative kernel
/// is cooperative too, and one of more blocks than fit is refused before it runs.
#[test]
fn cooperative_launches_are_sized_and_checked() {
    let dev = device();
    let kernel = phases(64);
    let f = compiled(dev, &kernel).expect("compiles");
    let most = f.max_cooperative_blocks().expect("occupancy");
    assert!(most >= 1);
    let n = most as usize * 64;
    let mut ab = dev.alloc_zeroed::<u32>(n).expect("alloc");
    let mut bb = dev.alloc_zeroed::<u32>(n).expect("alloc");
    f.launch_cooperative((&mut ab, &mut bb, 5u32))
        .expect("as many blocks as fit");
    let (want_a, _) = phases_reference(n, 5);
    assert_eq!(ab.to_vec().expect("a"), want_a);
    // Through `launch_grid`: cooperative as well.
    let mut ab = dev.alloc_zeroed::<u32>(3 * 64).expect("alloc");
    let mut bb = dev.alloc_zeroed::<u32>(3 * 64).expect("alloc");
    f.launch_grid(3, (&mut ab, &mut bb, 5u32))
        .expect("a plain launch");
    assert_eq!(ab.to_vec().expect("a"), phases_reference(192, 5).0);
    // One block too many: refused, nothing runs.
    let too_many = u32::try_from(most + 1).expect("fits");
    let mut big_a = dev
        .alloc_zeroed::<u32>(too_many as usize * 64)
        .expect("alloc");
    let mut big_b = dev
        .alloc_zeroed::<u32>(too_many as usize * 64)
        .expect("alloc");
    let refused = f.launch_cooperative_grid(too_many, (&mut big_a, &mut big_b, 5u32));
    assert!(
        matches!(
            refused,
            Err(RuntimeError::CooperativeGridTooLarge { grid, max }) if grid == most + 1 && max == most
        ),
        "{refused:?}"
    );
    assert!(big_a.to_vec().expect("a").iter().all(|v| *v == 0));
}

/// A cooperative launch cannot be captured into a graph (its barrier word is per launch).
#[test]
fn cooperative_launches_are_not_captured() {
    let dev = device();
    let f = compiled(dev, &phases(32)).expect("compiles");
    let stream = dev.new_stream().expect("stream");
    let mut ab = dev.alloc_zeroed::<u32>(32).expect("alloc");
    let mut bb = dev.alloc_zeroed::<u32>(32).expect("alloc");
    let captured = stream.capture(|s| {
        f.launch(
            LaunchConfig::blocks(1).on_stream(s),
            (&mut ab, &mut bb, 1u32),
        )
    });
    assert!(
        matches!(
            captured,
            Err(RuntimeError::CooperativeKernelCaptured { .. })
        ),
        "{:?}",
        captured.err()
    );
}

fn verify_errors(k: KernelBuilder) -> coopgraph::ir::VerifyErrors {
    match k.build() {
        Err(Error::Verify(e)) => e,
        Err(e) => panic!("not a verify error: {e}"),
        Ok(_) => panic!("built"),
    }
}

/// A grid barrier under anything that is not the same in every thread of the grid is an
/// error naming the condition's line; under grid-uniform conditions and loops it builds.
#[test]
fn grid_barriers_need_grid_uniform_control() {
    // A branch on the block index: block-uniform, not grid-uniform.
    let mut k = KernelBuilder::new("by_block").block(64);
    let line = line!() + 1;
    k.if_(index::block_index().lt(2u32), |k| k.sync_grid());
    let e = verify_errors(k);
    assert!(
        e.has(|k| matches!(k, VerifyErrorKind::NonUniformGridSync { condition } if condition.line == line)),
        "{e}"
    );
    // A branch on the thread's rank.
    let mut k = KernelBuilder::new("by_thread").block(64);
    let line = line!() + 1;
    k.if_(index::thread_rank().eq(0u32), |k| k.sync_grid());
    let e = verify_errors(k);
    assert!(
        e.has(|k| matches!(k, VerifyErrorKind::NonUniformGridSync { condition } if condition.line == line)),
        "{e}"
    );
    // A per-thread variable's loop.
    let mut k = KernelBuilder::new("by_var").block(64);
    let v = k.var(index::thread_rank());
    let line = line!() + 1;
    k.while_(v.get().lt(70u32), |k| {
        k.sync_grid();
        k.set(&v, v.get() + 1u32);
    });
    let e = verify_errors(k);
    assert!(
        e.has(|k| matches!(k, VerifyErrorKind::NonUniformGridSync { condition } if condition.line == line)),
        "{e}"
    );
    // Inside `tiles`: blocks take different numbers of tiles.
    let mut k = KernelBuilder::new("in_tiles").block(64);
    let n = k.scalar::<u32>("n");
    let line = line!() + 1;
    k.tiles(n.expr(), |k, _| k.sync_grid());
    let e = verify_errors(k);
    assert!(
        e.has(|k| matches!(k, VerifyErrorKind::NonUniformGridSync { condition } if condition.line == line)),
        "{e}"
    );
    // After a block-dependent early exit.
    let mut k = KernelBuilder::new("after_exit").block(64);
    let line = line!() + 1;
    k.return_if(index::block_index().eq(1u32));
    let sync_line = line!() + 1;
    k.sync_grid();
    let e = verify_errors(k);
    assert!(
        e.errors.iter().any(|err| matches!(
            err.kind,
            VerifyErrorKind::GridSyncAfterReturn { exit } if exit.line == line
        ) && err.loc.line == sync_line),
        "{e}"
    );
    // Grid-uniform control: a scalar's branch, a loop with constant bounds.
    let mut k = KernelBuilder::new("uniform").block(64);
    let s = k.scalar::<u32>("s");
    k.if_(s.expr().gt(3u32), |k| k.sync_grid());
    k.for_range(0u32, s.expr(), |k, _| k.sync_grid());
    k.build().expect("grid-uniform control builds");
}

/// The grid barrier as the code generator writes it, by hand, with block 1 leaving first.
fn early_exit_ptx() -> String {
    entry_text(
        "early_exit",
        &["u64 word"],
        &[],
        "ld.param.u64 %rd0, [word];
         cvta.to.global.u64 %rd1, %rd0;
         mov.u32 %r0, %ctaid.x;
         mov.u32 %r1, %tid.x;
         mov.u32 %r2, %nctaid.x;
         setp.eq.u32 %p0, %r0, 1;
         @%p0 ret;
         // op1 sync_grid at tests/all/grid.rs:1:1
         bar.sync 0;
         setp.eq.u32 %p1, %r1, 0;
         @!%p1 bra $L1;
         setp.eq.u32 %p2, %r0, 0;
         sub.u32 %r3, 2147483649, %r2;
         selp.u32 %r4, %r3, 1, %p2;
         atom.release.gpu.global.add.u32 %r5, [%rd1], %r4;
         $L2:
         ld.acquire.gpu.global.u32 %r6, [%rd1];
         xor.b32 %r7, %r5, %r6;
         and.b32 %r7, %r7, 2147483648;
         setp.eq.u32 %p3, %r7, 0;
         @%p3 bra $L2;
         $L1:
         bar.sync 0;
         ret;",
    )
}

/// A block that exits before a grid barrier the others wait at is a participation fault
/// naming the barrier's op and the block that left, never a hang.
#[test]
fn a_block_leaving_before_a_grid_barrier_is_reported() {
    let sim = Simulator::new(SimOptions::default());
    let m = sim.load_module(&early_exit_ptx()).expect("loads");
    let word = sim.alloc_zeroed(4).expect("alloc");
    let err = sim
        .launch_cooperative(&m, "early_exit", [4, 1, 1], [48, 1, 1], 0, &[word])
        .expect_err("block 1 never arrives");
    let SimError::Participation(p) = &err else {
        panic!("{err}")
    };
    let ParticipationProblem::GridBarrier {
        waiting_blocks,
        exited_blocks,
        exited_at,
    } = &p.problem
    else {
        panic!("{err}")
    };
    assert_eq!(exited_blocks, &[[1, 0, 0]]);
    assert_eq!(waiting_blocks.len(), 3);
    assert!(exited_at.as_ref().is_some_and(|at| at.text.contains("ret")));
    assert!(p.at.text.contains("ld.acquire.gpu.global.u32"), "{err}");
    assert_eq!(
        p.at.op.as_deref(),
        Some("op1 sync_grid at tests/all/grid.rs:1:1")
    );
    assert!(err.to_string().contains("exited"), "{err}");
    // Without the early exit (every block arrives), the same barrier completes.
    let ok = early_exit_ptx().replace("@%p0 ret;", "");
    let m = sim.load_module(&ok).expect("loads");
    // A fresh word: the failed launch left its count short.
    let word = sim.alloc_zeroed(4).expect("alloc");
    sim.launch_cooperative(&m, "early_exit", [4, 1, 1], [48, 1, 1], 0, &[word])
        .expect("every block arrives");
    // The simulator's own limit on blocks that run at once.
    let refused = sim.launch_cooperative(&m, "early_exit", [65, 1, 1], [48, 1, 1], 0, &[word]);
    assert!(
        matches!(refused, Err(SimError::BadLaunch { .. })),
        "{refused:?}"
    );
}

/// Reading what another block wrote without a grid barrier between is a global race the
/// simulator reports with both accesses; with the barrier the same reads are ordered.
#[test]
fn global_races_between_blocks_are_reported() {
    let build = |barrier: bool| {
        let mut k = KernelBuilder::new(if barrier { "ordered" } else { "racy" }).block(40);
        let (a, b) = (k.buffer::<u32>("a"), k.output::<u32>("b"));
        let g = k.this_grid();
        let (i, n) = (g.thread_rank(), g.num_threads());
        // A barrier first, so both kernels are cooperative.
        k.sync_grid();
        k.write(&a, i.clone(), i.clone() + 7u32);
        if barrier {
            k.sync_grid();
        }
        let line = line!() + 1;
        k.write(&b, i.clone(), a.at((i + 40u32) % n));
        (k.build().expect("builds"), line)
    };
    let dev = Device::sim();
    let (racy, line) = build(false);
    let f = compiled(&dev, &racy).expect("compiles");
    let mut ab = dev.alloc_zeroed::<u32>(120).expect("alloc");
    let mut bb = dev.alloc_zeroed::<u32>(120).expect("alloc");
    let err = f
        .launch_cooperative_grid(3, (&mut ab, &mut bb))
        .expect_err("a race");
    let RuntimeError::Sim(SimError::GlobalRace(r)) = &err else {
        panic!("{err}")
    };
    assert_ne!(r.first.thread.block, r.second.thread.block, "{err}");
    let ops = [&r.first.at, &r.second.at].map(|a| a.op.clone().unwrap_or_default());
    assert!(
        ops.iter().any(|o| o.contains(&format!("grid.rs:{line}:"))),
        "{err}"
    );
    let (ordered, _) = build(true);
    let f = compiled(&dev, &ordered).expect("compiles");
    f.launch_cooperative_grid(3, (&mut ab, &mut bb))
        .expect("ordered by the grid barrier");
    let want: Vec<u32> = (0..120).map(|i| (i + 40) % 120 + 7).collect();
    assert_eq!(bb.to_vec().expect("b"), want);
}

/// The grid's ranks and counts over a 3-D grid of blocks of a 3-D shape.
#[test]
fn grid_ranks_count_blocks_linearly() {
    let dev = device();
    let mut k = KernelBuilder::new("grid_ranks").block_dims([5, 3, 2]);
    let out = k.output::<u32>("out");
    let g = k.this_grid();
    let r = g.thread_rank();
    k.write(&out, r.clone() * 3u32, g.block_rank());
    k.write(&out, r.clone() * 3u32 + 1u32, g.num_blocks());
    k.write(&out, r * 3u32 + 2u32, g.num_threads());
    let kernel = k.build().expect("builds");
    assemble_all(&kernel);
    let f = compiled(dev, &kernel).expect("compiles");
    let grid = [2u32, 3, 2];
    let (blocks, threads) = (12u32, 30u32);
    let mut ob = dev
        .alloc_zeroed::<u32>((blocks * threads * 3) as usize)
        .expect("alloc");
    f.launch(LaunchConfig::grid(grid), (&mut ob,))
        .expect("runs");
    let got = ob.to_vec().expect("out");
    for rank in 0..blocks * threads {
        let at = (rank * 3) as usize;
        assert_eq!(
            got[at..at + 3],
            [rank / threads, blocks, blocks * threads],
            "rank {rank}"
        );
    }
}

//! The simulator's checkers: one planted fault per checker (participation, races, bounds,
//! uninitialized reads), with the kernel that is right beside it, so a checker that cannot
//! fail, or that fires on correct code, fails here.

use super::*;

// ---------------------------------------------------------------------------------------
// Participation checker

#[test]
fn divergent_barrier_is_reported_with_both_places() {
    let text = kernel(
        "div",
        &[],
        &[],
        "mov.u32 %r0, %tid.x;
         setp.lt.u32 %p0, %r0, 32;
         @%p0 bra $L_a;
         // op1 sync (user.rs:20)
         bar.sync 0;
         bra $L_end;
         $L_a:
         // op2 sync (user.rs:30)
         bar.sync 0;
         $L_end:
         ret;",
    );
    let e = launch(&mut sim(), &text, 1, 64, &[]).unwrap_err();
    let SimError::Participation(p) = &e else {
        panic!("{e}")
    };
    let first = line_of(&text, "bar.sync 0;", 0);
    let second = line_of(&text, "bar.sync 0;", first);
    assert_eq!(p.problem, ParticipationProblem::NeverArrive);
    assert_eq!(p.at.line, second, "thread 0 waits at the second barrier");
    assert_eq!(p.at.op.as_deref(), Some("op2 sync (user.rs:30)"));
    assert_eq!(p.waiting, (0..32).collect::<Vec<u32>>());
    assert_eq!(p.absent.len(), 1);
    assert_eq!(p.absent[0].threads, (32..64).collect::<Vec<u32>>());
    match &p.absent[0].state {
        AbsentState::Waiting { at, .. } => {
            assert_eq!(at.line, first);
            assert_eq!(at.op.as_deref(), Some("op1 sync (user.rs:20)"));
        }
        other => panic!("{other:?}"),
    }
    // The message names both lines and the ops.
    let msg = e.to_string();
    assert!(msg.lines().count() >= 5, "{msg}");
}

#[test]
fn early_exit_before_a_barrier_is_reported() {
    let text = kernel(
        "early",
        &[],
        &[],
        "mov.u32 %r0, %tid.x;
         setp.ge.u32 %p0, %r0, 32;
         @%p0 ret;
         bar.sync 0;
         ret;",
    );
    let e = launch(&mut sim(), &text, 1, 64, &[]).unwrap_err();
    let SimError::Participation(p) = &e else {
        panic!("{e}")
    };
    assert_eq!(p.at.line, line_of(&text, "bar.sync", 0));
    assert_eq!(p.waiting, (0..32).collect::<Vec<u32>>());
    match &p.absent[..] {
        [g] => {
            assert_eq!(g.threads, (32..64).collect::<Vec<u32>>());
            assert!(
                matches!(&g.state, AbsentState::Exited { at } if at.line == line_of(&text, "@%p0 ret", 0))
            );
        }
        other => panic!("{other:?}"),
    }
    // With the strict rules off, exited threads release the barrier, as on the hardware.
    let mut lenient = Simulator::new(SimOptions {
        check_participation: false,
        ..SimOptions::default()
    });
    launch(&mut lenient, &text, 1, 64, &[]).unwrap();
}

#[test]
fn member_mask_naming_lanes_elsewhere_is_reported() {
    // Lanes 16..31 skip the shuffle and wait at a barrier instead.
    let text = kernel(
        "mask",
        &[],
        &[],
        "mov.u32 %r0, %laneid;
         setp.ge.u32 %p0, %r0, 16;
         @%p0 bra $L_skip;
         shfl.sync.idx.b32 %r1, %r0, 0, 31, -1;
         $L_skip:
         bar.sync 0;
         ret;",
    );
    let e = launch(&mut sim(), &text, 1, 32, &[]).unwrap_err();
    let SimError::Participation(p) = &e else {
        panic!("{e}")
    };
    assert_eq!(p.at.line, line_of(&text, "shfl.sync", 0));
    assert_eq!(p.waiting, (0..16).collect::<Vec<u32>>());
    assert_eq!(p.absent[0].threads, (16..32).collect::<Vec<u32>>());
    // The right mask completes.
    let fixed = text.replace("31, -1;", "31, 0xFFFF;");
    launch(&mut sim(), &fixed, 1, 32, &[]).unwrap();
    // A lane outside its own mask.
    let outside = text.replace("31, -1;", "31, 0x1;");
    let e = launch(&mut sim(), &outside, 1, 32, &[]).unwrap_err();
    assert!(
        matches!(&e, SimError::Participation(p) if p.problem == ParticipationProblem::NotInMask { mask: 1 } && p.waiting == [1]),
        "{e}"
    );
}

#[test]
fn different_collective_instructions_are_reported() {
    let text = kernel(
        "two",
        &[],
        &[],
        "mov.u32 %r0, %laneid;
         setp.ge.u32 %p0, %r0, 16;
         @%p0 bra $L_b;
         shfl.sync.bfly.b32 %r1, %r0, 1, 31, -1;
         bra $L_end;
         $L_b:
         shfl.sync.bfly.b32 %r1, %r0, 1, 31, -1;
         $L_end:
         ret;",
    );
    let e = launch(&mut sim(), &text, 1, 32, &[]).unwrap_err();
    assert!(
        matches!(&e, SimError::Participation(p) if p.waiting.len() == 16),
        "{e}"
    );
    // Without the strict rules, the same kind of shuffle at two places completes together.
    let mut lenient = Simulator::new(SimOptions {
        check_participation: false,
        ..SimOptions::default()
    });
    launch(&mut lenient, &text, 1, 32, &[]).unwrap();
}

#[test]
fn counted_barrier_that_cannot_fill_is_reported() {
    let text = kernel("cnt", &[], &[], "bar.sync 1, 64;\nret;");
    let e = launch(&mut sim(), &text, 1, 32, &[]).unwrap_err();
    assert!(
        matches!(&e, SimError::Participation(p) if p.problem == ParticipationProblem::CountNotReached { count: 64, arrived: 32 }),
        "{e}"
    );
    // Two warps fill it; named barriers with counts synchronize groups of warps.
    launch(&mut sim(), &text, 1, 64, &[]).unwrap();
    let groups = kernel(
        "groups",
        &[],
        &[],
        "mov.u32 %r0, %tid.x;
         setp.lt.u32 %p0, %r0, 64;
         @%p0 bra $L_lo;
         bar.sync 2, 64;
         bra $L_end;
         $L_lo:
         bar.sync 1, 64;
         $L_end:
         ret;",
    );
    launch(&mut sim(), &groups, 1, 128, &[]).unwrap();
}

#[test]
fn runaway_loop_hits_the_step_limit() {
    let text = kernel(
        "spin",
        &[],
        &[],
        "mov.u32 %r0, 0;
         $L_loop:
         // op3 while (user.rs:7)
         add.u32 %r0, %r0, 1;
         bra $L_loop;
         ret;",
    );
    let mut s = Simulator::new(SimOptions {
        max_steps: 100_000,
        ..SimOptions::default()
    });
    let e = launch(&mut s, &text, 1, 32, &[]).unwrap_err();
    match &e {
        SimError::StepLimit { limit, at, .. } => {
            assert_eq!(*limit, 100_000);
            assert_eq!(at.op.as_deref(), Some("op3 while (user.rs:7)"));
        }
        other => panic!("{other}"),
    }
}

// ---------------------------------------------------------------------------------------
// Race checker

/// Each thread writes `s[tid]`, then reads `s[(tid + shift) % n]`; `sync` goes in between.
fn exchange_kernel(sync: &str, shift: u32, n: u32) -> String {
    kernel(
        "xchg",
        &["u64 out"],
        &[".shared .align 4 .b8 s[512];"],
        &format!(
            "ld.param.u64 %rd0, [out];
             mov.u32 %r0, %tid.x;
             mov.u32 %r1, s;
             shl.b32 %r2, %r0, 2;
             add.u32 %r3, %r1, %r2;
             // op0 write (user.rs:1)
             st.shared.u32 [%r3], %r0;
             {sync}
             add.u32 %r4, %r0, {shift};
             rem.u32 %r5, %r4, {n};
             shl.b32 %r6, %r5, 2;
             add.u32 %r7, %r1, %r6;
             // op1 read (user.rs:2)
             ld.shared.u32 %r8, [%r7];
             mul.wide.u32 %rd1, %r0, 4;
             add.u64 %rd2, %rd0, %rd1;
             st.global.u32 [%rd2], %r8;
             ret;"
        ),
    )
}

fn run_exchange(sync: &str, shift: u32, n: u32, opts: SimOptions) -> Result<Vec<u32>, SimError> {
    let mut s = Simulator::new(opts);
    let out = s.alloc(4 * n as usize).unwrap();
    launch(&mut s, &exchange_kernel(sync, shift, n), 1, n, &[out])?;
    Ok(u32s(&s, out, n as usize))
}

#[test]
fn missing_barrier_between_write_and_read_is_a_race() {
    let text = exchange_kernel("", 33, 64);
    let e = run_exchange("", 33, 64, SimOptions::default()).unwrap_err();
    let SimError::Race(r) = &e else { panic!("{e}") };
    // Thread 0 reads s[33] before thread 33 ran: that is not the race (the byte is unwritten,
    // an uninitialized read). Thread 31 reads s[0]... the first conflict the schedule shows
    // is a read by a thread of warp 1 of a byte warp 0 wrote.
    assert_eq!(r.symbol.as_deref(), Some("s"));
    assert_eq!(r.first.kind, AccessKind::Write);
    assert_eq!(r.second.kind, AccessKind::Read);
    assert_eq!(r.first.at.line, line_of(&text, "st.shared", 0));
    assert_eq!(r.first.at.op.as_deref(), Some("op0 write (user.rs:1)"));
    assert_eq!(r.second.at.line, line_of(&text, "ld.shared", 0));
    assert_ne!(r.first.thread, r.second.thread);
    let (w, rd) = (r.first.thread.thread[0], r.second.thread.thread[0]);
    assert_eq!(r.address, 4 * w);
    assert_eq!((rd + 33) % 64, w);
    // With the barrier: no race, and the right data.
    let v = run_exchange("bar.sync 0;", 33, 64, SimOptions::default()).unwrap();
    assert_eq!(v, (0..64).map(|t| (t + 33) % 64).collect::<Vec<u32>>());
}

#[test]
fn warp_sync_orders_lanes_of_one_warp_only() {
    // Within one warp, bar.warp.sync orders the exchange, also after a shuffle.
    let v = run_exchange("bar.warp.sync -1;", 1, 32, SimOptions::default()).unwrap();
    assert_eq!(v, (0..32).map(|t| (t + 1) % 32).collect::<Vec<u32>>());
    run_exchange(
        "shfl.sync.bfly.b32 %r9, %r0, 1, 31, -1;\n bar.warp.sync -1;",
        1,
        32,
        SimOptions::default(),
    )
    .unwrap();
    let e = run_exchange("", 1, 32, SimOptions::default()).unwrap_err();
    assert!(matches!(e, SimError::Race(_)), "{e}");
    // The other warp collectives make the lanes meet but order no memory (the PTX ISA
    // promises that only for bar.warp.sync): each alone leaves the exchange a race.
    for sync in [
        "shfl.sync.bfly.b32 %r9, %r0, 1, 31, -1;",
        "setp.ne.u32 %p1, %r0, 99;\n vote.sync.ballot.b32 %r9, %p1, -1;",
        "match.any.sync.b32 %r9, %r0, -1;",
        "redux.sync.add.u32 %r9, %r0, -1;",
    ] {
        let text = exchange_kernel(sync, 1, 32);
        let e = run_exchange(sync, 1, 32, SimOptions::default()).unwrap_err();
        let SimError::Race(r) = &e else {
            panic!("{sync}: {e}")
        };
        assert_eq!(r.first.kind, AccessKind::Write, "{sync}");
        assert_eq!(r.first.at.line, line_of(&text, "st.shared", 0), "{sync}");
        assert_eq!(r.second.at.line, line_of(&text, "ld.shared", 0), "{sync}");
    }
    // Across warps it does not: thread 31 reads what thread 32 wrote.
    let e = run_exchange("bar.warp.sync -1;", 1, 64, SimOptions::default()).unwrap_err();
    assert!(
        matches!(&e, SimError::Race(r) if r.first.thread.thread[0] / 32 != r.second.thread.thread[0] / 32),
        "{e}"
    );
}

#[test]
fn write_after_read_without_barrier_is_a_race() {
    // Everyone reads s[0]; then thread 0 overwrites it with no barrier in between.
    let text = kernel(
        "war",
        &[],
        &[".shared .align 4 .b8 s[4];"],
        "mov.u32 %r0, %tid.x;
         setp.eq.u32 %p0, %r0, 0;
         @%p0 st.shared.u32 [s], 7;
         bar.sync 0;
         ld.shared.u32 %r1, [s];
         @%p0 st.shared.u32 [s], 8;
         ret;",
    );
    // Thread 0 runs first; its write is ordered after its own read, but threads 1.. read
    // later and find thread 0's unordered write.
    let e = launch(&mut sim(), &text, 1, 64, &[]).unwrap_err();
    let SimError::Race(r) = &e else { panic!("{e}") };
    assert_eq!(r.first.kind, AccessKind::Write);
    assert_eq!(r.first.thread.thread[0], 0);
    let fixed = text.replace(
        "@%p0 st.shared.u32 [s], 8;",
        "bar.sync 0;\n@%p0 st.shared.u32 [s], 8;",
    );
    launch(&mut sim(), &fixed, 1, 64, &[]).unwrap();
    // Off, the checker says nothing.
    let mut off = Simulator::new(SimOptions {
        check_races: false,
        ..SimOptions::default()
    });
    launch(&mut off, &text, 1, 64, &[]).unwrap();
}

#[test]
fn atomics_do_not_race_but_a_plain_read_does() {
    let text = kernel(
        "at",
        &[],
        &[".shared .align 4 .b8 c[4];"],
        "mov.u32 %r0, %tid.x;
         setp.eq.u32 %p0, %r0, 0;
         @%p0 st.shared.u32 [c], 0;
         bar.sync 0;
         atom.shared.add.u32 %r1, [c], 1;
         SYNC
         ld.shared.u32 %r2, [c];
         ret;",
    );
    launch(&mut sim(), &text.replace("SYNC", "bar.sync 0;"), 1, 64, &[]).unwrap();
    let e = launch(&mut sim(), &text.replace("SYNC", ""), 1, 64, &[]).unwrap_err();
    let SimError::Race(r) = &e else { panic!("{e}") };
    // Thread 0 reads before thread 1's atomic: the read is the earlier access.
    assert_eq!(
        (r.first.kind, r.second.kind),
        (AccessKind::Read, AccessKind::Atomic)
    );
    assert_eq!(
        (r.first.thread.thread[0], r.second.thread.thread[0]),
        (0, 1)
    );
}

// ---------------------------------------------------------------------------------------
// Out-of-bounds checker

#[test]
fn global_overrun_names_the_buffer() {
    let text = kernel(
        "over",
        &["u64 buf"],
        &[],
        "ld.param.u64 %rd0, [buf];
         mov.u32 %r0, %tid.x;
         mul.wide.u32 %rd1, %r0, 4;
         add.u64 %rd2, %rd0, %rd1;
         ld.global.u32 %r1, [%rd2];
         st.global.u32 [%rd2], %r1;
         ret;",
    );
    let mut s = sim();
    let buf = s.alloc_zeroed(4 * 31).unwrap();
    let e = launch(&mut s, &text, 1, 32, &[buf]).unwrap_err();
    let SimError::OutOfBounds(m) = &e else {
        panic!("{e}")
    };
    assert_eq!(m.space, MemSpace::Global);
    assert_eq!(m.thread.thread, [31, 0, 0]);
    assert_eq!((m.address, m.size), (buf + 124, 4));
    assert_eq!(m.at.line, line_of(&text, "ld.global", 0));
    let near = m.nearest.clone().unwrap();
    assert_eq!((near.base, near.len), (buf, 124));
    assert!(!m.freed);
    // After free, the same launch faults at thread 0 and says the memory was freed.
    let good = s.alloc_zeroed(4 * 32).unwrap();
    launch(&mut s, &text, 1, 32, &[good]).unwrap();
    s.free(good).unwrap();
    let e = launch(&mut s, &text, 1, 32, &[good]).unwrap_err();
    assert!(
        matches!(&e, SimError::OutOfBounds(m) if m.freed && m.thread.thread == [0, 0, 0]),
        "{e}"
    );
}

#[test]
fn shared_local_and_param_overruns() {
    // Shared: past the declaration and the dynamic part.
    let sh = kernel(
        "sh",
        &[],
        &[".shared .align 4 .b8 s[128];"],
        "mov.u32 %r0, %tid.x;
         shl.b32 %r1, %r0, 2;
         mov.u32 %r2, s;
         add.u32 %r3, %r2, %r1;
         st.shared.u32 [%r3+OFF], %r0;
         ret;",
    );
    let s = sim();
    let m = s.load_module(&sh.replace("OFF", "0")).unwrap();
    s.launch(&m, "sh", [1, 1, 1], [32, 1, 1], 0, &[]).unwrap();
    let e = s
        .launch(&m, "sh", [1, 1, 1], [33, 1, 1], 0, &[])
        .unwrap_err();
    assert!(
        matches!(&e, SimError::OutOfBounds(f) if f.space == MemSpace::Shared && f.address == 128
            && f.nearest.as_ref().is_some_and(|n| n.name.as_deref() == Some("s") && n.len == 128)),
        "{e}"
    );
    // The dynamic part does not extend a static declaration: it has addresses of its own.
    let e = s
        .launch(&m, "sh", [1, 1, 1], [33, 1, 1], 4, &[])
        .unwrap_err();
    assert!(
        matches!(&e, SimError::OutOfBounds(f) if f.address == 128 && f.thread.thread == [32, 0, 0]),
        "{e}"
    );
    let m2 = s.load_module(&sh.replace("OFF", "4")).unwrap();
    let e = s
        .launch(&m2, "sh", [1, 1, 1], [32, 1, 1], 4, &[])
        .unwrap_err();
    assert!(
        matches!(&e, SimError::OutOfBounds(f) if f.address == 128 && f.thread.thread == [31, 0, 0]),
        "{e}"
    );
    // Local: no window by default; a window when asked for.
    let lo = kernel(
        "lo",
        &[],
        &[],
        "mov.u64 %rd0, 8;
         st.local.u32 [%rd0], 5;
         ld.local.u32 %r0, [%rd0];
         ret;",
    );
    let e = launch(&mut sim(), &lo, 1, 1, &[]).unwrap_err();
    assert!(
        matches!(&e, SimError::OutOfBounds(f) if f.space == MemSpace::Local),
        "{e}"
    );
    let mut with_local = Simulator::new(SimOptions {
        local_bytes: 16,
        ..SimOptions::default()
    });
    launch(&mut with_local, &lo, 1, 1, &[]).unwrap();
    // Param: past the parameter.
    let pa = kernel("pa", &["u64 a"], &[], "ld.param.u64 %rd0, [a+8];\nret;");
    let e = launch(&mut sim(), &pa, 1, 1, &[0]).unwrap_err();
    assert!(
        matches!(&e, SimError::OutOfBounds(f) if f.space == MemSpace::Param
            && f.nearest.as_ref().is_some_and(|n| n.name.as_deref() == Some("a"))),
        "{e}"
    );
}

#[test]
fn misaligned_access_is_reported() {
    let text = kernel(
        "mis",
        &["u64 buf"],
        &[],
        "ld.param.u64 %rd0, [buf];
         ld.global.v2.u32 {%r0, %r1}, [%rd0+4];
         ret;",
    );
    let mut s = sim();
    let buf = s.alloc_zeroed(64).unwrap();
    let e = launch(&mut s, &text, 1, 1, &[buf]).unwrap_err();
    assert!(
        matches!(&e, SimError::Misaligned(m) if m.address == buf + 4 && m.size == 8),
        "{e}"
    );
    launch(&mut s, &text.replace("+4]", "+8]"), 1, 1, &[buf]).unwrap();
}

// ---------------------------------------------------------------------------------------
// Uninitialized-read checker

fn uninit(text: &str, buf_zeroed: bool, opts: SimOptions) -> Result<(), SimError> {
    let mut s = Simulator::new(opts);
    let buf = if buf_zeroed {
        s.alloc_zeroed(256).unwrap()
    } else {
        s.alloc(256).unwrap()
    };
    launch(&mut s, text, 1, 32, &[buf]).map(|_| ())
}

/// A store of an undefined register to shared memory moves it, as an exchange moves the
/// undefined registers of a partial tile: no fault there, and none when nothing uses it; a
/// load of it that reaches a global store is reported at that store, with the load as origin.
#[test]
fn an_undefined_value_moved_through_shared_memory_is_reported_where_used() {
    let body = |tail: &str| {
        kernel(
            "mv",
            &["u64 out"],
            &[".shared .align 4 .b8 s[128];"],
            &format!(
                "ld.param.u64 %rd0, [out];
                 mov.u32 %r0, %tid.x;
                 shl.b32 %r1, %r0, 2;
                 mov.u32 %r2, s;
                 add.u32 %r3, %r2, %r1;
                 add.u32 %r6, %r7, 1;
                 st.shared.u32 [%r3], %r6;
                 bar.sync 0;
                 ld.shared.u32 %r4, [%r3];
                 {tail}
                 ret;"
            ),
        )
    };
    uninit(&body(""), true, SimOptions::default()).expect("moving is not using");
    let text = body(
        "mul.wide.u32 %rd1, %r0, 4;
         add.u64 %rd2, %rd0, %rd1;
         st.global.u32 [%rd2], %r4;",
    );
    let e = uninit(&text, true, SimOptions::default()).unwrap_err();
    let SimError::Uninitialized(u) = &e else {
        panic!("{e}")
    };
    assert_eq!(u.use_kind, UseKind::StoreValue);
    assert_eq!(u.at.line, line_of(&text, "st.global", 0));
    match &u.origin {
        UninitOrigin::Load { at } => assert_eq!(at.line, line_of(&text, "ld.shared", 0)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn unwritten_shared_memory_reaching_a_store_is_reported() {
    let text = kernel(
        "us",
        &["u64 out"],
        &[".shared .align 4 .b8 s[128];"],
        "ld.param.u64 %rd0, [out];
         mov.u32 %r0, %tid.x;
         setp.lt.u32 %p0, %r0, 16;
         shl.b32 %r1, %r0, 2;
         mov.u32 %r2, s;
         add.u32 %r3, %r2, %r1;
         @%p0 st.shared.u32 [%r3], %r0;
         bar.sync 0;
         // op4 load tile (user.rs:44)
         ld.shared.u32 %r4, [%r3];
         add.u32 %r5, %r4, 1;
         mul.wide.u32 %rd1, %r0, 4;
         add.u64 %rd2, %rd0, %rd1;
         st.global.u32 [%rd2], %r5;
         ret;",
    );
    let e = uninit(&text, true, SimOptions::default()).unwrap_err();
    let SimError::Uninitialized(u) = &e else {
        panic!("{e}")
    };
    assert_eq!(u.use_kind, UseKind::StoreValue);
    assert_eq!(u.thread.thread, [16, 0, 0]);
    assert_eq!(u.register.as_deref(), Some("%r5"));
    assert_eq!(u.at.line, line_of(&text, "st.global", 0));
    match &u.origin {
        UninitOrigin::Load { at } => {
            assert_eq!(at.line, line_of(&text, "ld.shared", 0));
            assert_eq!(at.op.as_deref(), Some("op4 load tile (user.rs:44)"));
        }
        other => panic!("{other:?}"),
    }
    // Every thread writing its slot fixes it; turning the checker off hides it.
    uninit(
        &text.replace("@%p0 st.shared", "st.shared"),
        true,
        SimOptions::default(),
    )
    .unwrap();
    let off = SimOptions {
        check_uninit: false,
        ..SimOptions::default()
    };
    uninit(&text, true, off).unwrap();
}

#[test]
fn never_written_register_reaching_a_branch_is_reported() {
    let text = kernel(
        "ur",
        &["u64 out"],
        &[],
        "add.u32 %r2, %r7, 1;
         setp.eq.u32 %p1, %r2, 0;
         @%p1 bra $L_x;
         $L_x:
         ret;",
    );
    let e = uninit(&text, true, SimOptions::default()).unwrap_err();
    assert!(
        matches!(&e, SimError::Uninitialized(u) if u.use_kind == UseKind::Predicate
            && u.origin == UninitOrigin::Register { register: "%r7".into() }
            && u.at.line == line_of(&text, "@%p1 bra", 0)),
        "{e}"
    );
}

#[test]
fn selp_of_a_defined_side_is_defined() {
    // The oob-default pattern: load only when valid, select a default otherwise.
    let text = kernel(
        "sel",
        &["u64 buf"],
        &[],
        "ld.param.u64 %rd0, [buf];
         mov.u32 %r0, %tid.x;
         setp.lt.u32 %p0, %r0, 8;
         mul.wide.u32 %rd1, %r0, 4;
         add.u64 %rd2, %rd0, %rd1;
         @%p0 ld.global.u32 %r1, [%rd2];
         selp.u32 %r2, %r1, 0, %p0;
         st.global.u32 [%rd2+128], %r2;
         ret;",
    );
    uninit(&text, true, SimOptions::default()).unwrap();
    // Storing %r1 itself is not fine for threads 8..
    let bad = text.replace("[%rd2+128], %r2", "[%rd2+128], %r1");
    let e = uninit(&bad, true, SimOptions::default()).unwrap_err();
    assert!(
        matches!(&e, SimError::Uninitialized(u) if u.thread.thread == [8, 0, 0]
            && u.origin == UninitOrigin::Register { register: "%r1".into() }),
        "{e}"
    );
}

#[test]
fn unwritten_global_memory_addresses_collectives_and_atomics() {
    let load_store = kernel(
        "ug",
        &["u64 buf"],
        &[],
        "ld.param.u64 %rd0, [buf];
         ld.global.u32 %r0, [%rd0];
         st.global.u32 [%rd0+4], %r0;
         ret;",
    );
    let e = uninit(&load_store, false, SimOptions::default()).unwrap_err();
    assert!(
        matches!(&e, SimError::Uninitialized(u) if matches!(u.origin, UninitOrigin::Load { .. })),
        "{e}"
    );
    uninit(&load_store, true, SimOptions::default()).unwrap();

    let address = kernel("ua", &["u64 buf"], &[], "ld.global.u32 %r0, [%rd9];\nret;");
    let e = uninit(&address, true, SimOptions::default()).unwrap_err();
    assert!(
        matches!(&e, SimError::Uninitialized(u) if u.use_kind == UseKind::Address),
        "{e}"
    );

    let vote = kernel(
        "uv",
        &["u64 buf"],
        &[],
        "vote.sync.any.pred %p1, %p9, -1;\nret;",
    );
    let e = uninit(&vote, true, SimOptions::default()).unwrap_err();
    assert!(
        matches!(&e, SimError::Uninitialized(u) if u.use_kind == UseKind::Collective),
        "{e}"
    );

    let atom = kernel(
        "uat",
        &["u64 buf"],
        &[],
        "ld.param.u64 %rd0, [buf];
         atom.global.add.u32 %r0, [%rd0+16], 1;
         ret;",
    );
    let e = uninit(&atom, false, SimOptions::default()).unwrap_err();
    assert!(
        matches!(&e, SimError::Uninitialized(u) if u.use_kind == UseKind::Atomic
            && matches!(u.origin, UninitOrigin::Memory { space: MemSpace::Global, .. })),
        "{e}"
    );
    uninit(&atom, true, SimOptions::default()).unwrap();
}

#[test]
fn shuffle_from_outside_the_collective_is_undefined() {
    // Lanes 0..15 shuffle down by one with a 16-lane mask: lane 15 reads lane 16.
    let text = kernel(
        "ush",
        &["u64 buf"],
        &[],
        "ld.param.u64 %rd0, [buf];
         mov.u32 %r0, %laneid;
         setp.ge.u32 %p0, %r0, 16;
         @%p0 bra $L_end;
         shfl.sync.down.b32 %r1, %r0, 1, 31, 0xFFFF;
         mul.wide.u32 %rd1, %r0, 4;
         add.u64 %rd2, %rd0, %rd1;
         st.global.u32 [%rd2], %r1;
         $L_end:
         ret;",
    );
    let e = uninit(&text, true, SimOptions::default()).unwrap_err();
    assert!(
        matches!(&e, SimError::Uninitialized(u) if u.thread.thread == [15, 0, 0]
            && matches!(&u.origin, UninitOrigin::Shuffle { at } if at.line == line_of(&text, "shfl", 0))),
        "{e}"
    );
    // Clamping the segment to 16 lanes keeps lane 15 on its own value.
    uninit(
        &text.replace("1, 31, 0xFFFF", "1, 15, 0xFFFF"),
        true,
        SimOptions::default(),
    )
    .unwrap();
}

// ---------------------------------------------------------------------------------------
// The API around launches

#[test]
fn launch_arguments_are_checked() {
    let s = sim();
    let m = s.load_module(&copy_kernel()).unwrap();
    assert!(matches!(
        s.launch(&m, "nope", [1, 1, 1], [1, 1, 1], 0, &[0, 0]),
        Err(SimError::NoSuchEntry { entries, .. }) if entries == ["copy4"]
    ));
    assert!(matches!(
        s.launch(&m, "copy4", [1, 1, 1], [1, 1, 1], 0, &[0]),
        Err(SimError::BadParams {
            expected: 2,
            got: 1,
            ..
        })
    ));
    for (grid, block) in [
        ([0, 1, 1], [1, 1, 1]),
        ([1, 1, 1], [1025, 1, 1]),
        ([1, 70000, 1], [1, 1, 1]),
    ] {
        assert!(matches!(
            s.launch(&m, "copy4", grid, block, 0, &[0, 0]),
            Err(SimError::BadLaunch {
                problem: LaunchProblem::Dimensions { .. },
                ..
            })
        ));
    }
    assert!(matches!(
        s.launch(&m, "copy4", [1, 1, 1], [32, 1, 1], 200 << 10, &[0, 0]),
        Err(SimError::BadLaunch {
            problem: LaunchProblem::SharedMemory { .. },
            ..
        })
    ));
    let req = kernel("req", &[], &[], "ret;").replace(")\n{", ")\n.reqntid 128, 1, 1\n{");
    let m = s.load_module(&req).unwrap();
    s.launch(&m, "req", [1, 1, 1], [128, 1, 1], 0, &[]).unwrap();
    assert!(matches!(
        s.launch(&m, "req", [1, 1, 1], [64, 1, 1], 0, &[]),
        Err(SimError::BadLaunch {
            problem: LaunchProblem::Reqntid { .. },
            ..
        })
    ));
}

#[test]
fn parallel_blocks_match_sequential_blocks() {
    let blocks = 24;
    let data: Vec<u32> = (0..128 * blocks as u32).map(|x| x * 7 + 3).collect();
    let run = |threads: usize| {
        let mut s = Simulator::new(SimOptions {
            threads,
            ..SimOptions::default()
        });
        let src = put_u32(&mut s, &data);
        let dst = s.alloc(4 * blocks).unwrap();
        let counter = s.alloc_zeroed(4).unwrap();
        let rep = launch(&mut s, &reduce_kernel(), blocks as u32, 128, &[src, dst]).unwrap();
        let _ = counter;
        (u32s(&s, dst, blocks), rep)
    };
    let (a, ra) = run(1);
    let (b, rb) = run(4);
    assert_eq!(a, b);
    assert_eq!(ra, rb);
    // A fault in several blocks is reported for the first one, whatever the workers do.
    let mut s = Simulator::new(SimOptions {
        threads: 3,
        ..SimOptions::default()
    });
    let small = s.alloc_zeroed(4 * (128 * 5 + 7)).unwrap();
    let dst = s.alloc(4 * blocks).unwrap();
    let e = launch(&mut s, &reduce_kernel(), blocks as u32, 128, &[small, dst]).unwrap_err();
    assert!(
        matches!(&e, SimError::OutOfBounds(m) if m.thread.block == [5, 0, 0] && m.thread.thread == [7, 0, 0]),
        "{e}"
    );
}

#[test]
fn host_memory_api() {
    let s = sim();
    let a = s.alloc(100).unwrap();
    let b = s.alloc(100).unwrap();
    assert_eq!(a % 256, 0);
    assert!(b > a + 100);
    assert!(matches!(
        s.write(a + 96, &[0; 8]),
        Err(SimError::HostOutOfBounds { .. })
    ));
    assert!(matches!(s.free(a + 4), Err(SimError::NotAllocated { .. })));
    s.write(a, &[1, 2, 3]).unwrap();
    let mut out = [0u8; 3];
    s.read(a, &mut out).unwrap();
    assert_eq!(out, [1, 2, 3]);
    s.free(a).unwrap();
    assert!(s.read(a, &mut out).is_err());
    assert!(matches!(
        s.alloc(usize::MAX),
        Err(SimError::OutOfMemory { .. })
    ));
}

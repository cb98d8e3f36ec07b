//! Shared memory is checked per declaration: each user shared array is a `.shared` declaration
//! of its own, the simulator gives every declaration addresses of its own with unmapped ones
//! around them, and an index past an array (or below it) is an out-of-bounds report naming the
//! array and the user's line — never another array's bytes, never a race on planned scratch.

use super::common::{assemble_all, assert_same, compiled, device};
use coopgraph::ir::index;
use coopgraph::ir::ops::Bounds;
use coopgraph::planner::{ArrayHome, PlanError};
use coopgraph::ptx::Arch;
use coopgraph::runtime::{Device, LaunchConfig, RuntimeError, SimOptions};
use coopgraph::sim::{MemSpace, MemoryFault, SimError};
use coopgraph::{Kernel, KernelBuilder, Load, Store};

/// Two arrays of 64 `i32`: thread `t` writes `a[t] = t` and `b[t] = 1000 + t`, and after a
/// barrier stores `which[t + shift]` (the index wrapping as `u32`) into `y[t]`. The line
/// returned is the declaration of `a`; `b`'s is the next one. Built without bounds checks
/// (`unchecked_bounds`), so that a stray index reaches memory and the simulator's own check of
/// every access against its declaration sees it (a checked kernel guards the access instead:
/// `checks::array_indices_are_guarded_and_checked`).
fn two_arrays(name: &str, read_b: bool, shift: i32, wrap: bool) -> (Kernel, u32) {
    let mut k = KernelBuilder::new(name)
        .block(64)
        .items_per_thread(1)
        .unchecked_bounds();
    let y = k.output::<i32>("y");
    let b = k.this_block();
    let line = line!() + 1;
    let a0 = k.shared_array::<i32>(64);
    let a1 = k.shared_array::<i32>(64);
    let t = index::thread_rank();
    k.shared_write(&a0, t.clone(), t.clone().cast::<i32>());
    k.shared_write(&a1, t.clone(), t.clone().cast::<i32>() + 1000);
    k.sync_block();
    let i = if shift >= 0 {
        t + shift as u32
    } else {
        t - shift.unsigned_abs()
    };
    let i = if wrap { i % 64u32 } else { i };
    let which = if read_b { a1 } else { a0 };
    let r = k.fill(which.read(i));
    k.store_to(b, &y, &r, Store::direct());
    (k.build().unwrap_or_else(|e| panic!("{name}: {e}")), line)
}

fn run(dev: &Device, kernel: &Kernel) -> Result<Vec<i32>, RuntimeError> {
    let f = compiled(dev, kernel)?;
    let mut y = dev.alloc_zeroed::<i32>(64)?;
    // SAFETY: the kernel writes y[0..64) of the 64 elements it is given; only its shared index
    // may stray (on the simulator, which reports it).
    unsafe { f.launch_unchecked(LaunchConfig::blocks(1), (&mut y,))? };
    y.to_vec()
}

/// The out-of-bounds report of a shared access, or a panic naming what came instead.
fn shared_fault(result: Result<Vec<i32>, RuntimeError>, what: &str) -> Box<MemoryFault> {
    match result {
        Err(RuntimeError::Sim(SimError::OutOfBounds(f))) if f.space == MemSpace::Shared => f,
        other => panic!("{what}: expected a shared out-of-bounds report, got {other:?}"),
    }
}

#[test]
fn arrays_have_declarations_of_their_own() {
    let (kernel, line) = two_arrays("neighbours", false, 1, true);
    let plan = kernel.plan();
    assert_eq!(plan.shared().arrays, vec![ArrayHome::Own, ArrayHome::Own]);
    assert_eq!(plan.shared().window_bytes, 0);
    let ptx = kernel.ptx(Arch::Sm90).expect("emits");
    for (i, l) in [(0, line), (1, line + 1)] {
        let decl = format!(".shared .align 4 .b8 smem{i}[256]; // smem{i}: shared i32 x 64 at ");
        assert!(
            ptx.lines()
                .any(|p| p.contains(&decl) && p.contains(&format!("shared_bounds.rs:{l}:"))),
            "{ptx}"
        );
    }
    let explained = kernel.explain();
    assert!(
        explained.contains("256 bytes in its own declaration"),
        "{explained}"
    );
    assemble_all(&kernel);
    // In bounds, the result is the same everywhere.
    let want: Vec<i32> = (0..64).map(|t| (t + 1) % 64).collect();
    assert_same(&run(device(), &kernel).expect("runs"), &want, "a[(t+1)%64]");
    let (kernel, _) = two_arrays("neighbours_b", true, -1, true);
    let want: Vec<i32> = (0..64).map(|t| 1000 + (t + 63) % 64).collect();
    assert_same(&run(device(), &kernel).expect("runs"), &want, "b[(t-1)%64]");
}

/// One past the first array was the second array's first element (wrong output, silently);
/// now it faults, naming the array and where the user declared it.
#[test]
fn one_past_an_array_is_out_of_bounds_of_that_array() {
    let (kernel, line) = two_arrays("past_a", false, 1, false);
    assemble_all(&kernel);
    let f = shared_fault(run(&Device::sim(), &kernel), "a[t+1]");
    assert_eq!(f.thread.thread, [63, 0, 0]);
    let near = f.nearest.as_ref().expect("the nearest declaration");
    assert_eq!(near.name.as_deref(), Some("smem0"));
    assert_eq!(f.address, near.base + 256, "one past its end");
    let note = near.note.as_deref().unwrap_or_default();
    assert!(
        note.contains("shared i32 x 64") && note.contains(&format!("shared_bounds.rs:{line}:")),
        "{note}"
    );
    let text = SimError::OutOfBounds(f.clone()).to_string();
    assert!(
        text.contains("`smem0`") && text.contains("declared as"),
        "{text}"
    );
    // Every checker on or off, it is the same report.
    let unchecked = Device::sim_with(SimOptions {
        check_races: false,
        check_uninit: false,
        ..SimOptions::default()
    });
    let g = shared_fault(run(&unchecked, &kernel), "a[t+1], checkers off");
    assert_eq!((g.address, g.thread), (f.address, f.thread));
}

/// A negative index wraps (the index is a `u32`) to just below the array: for the second
/// array that was the first array's last element.
#[test]
fn negative_index_is_out_of_bounds_of_that_array() {
    let (kernel, _) = two_arrays("below_b", true, -1, false);
    assemble_all(&kernel);
    let f = shared_fault(run(&Device::sim(), &kernel), "b[t-1]");
    assert_eq!(f.thread.thread, [0, 0, 0]);
    let near = f.nearest.as_ref().expect("the nearest declaration");
    assert_eq!(near.name.as_deref(), Some("smem1"));
    assert_eq!(f.address + 4, near.base, "one element below it");
    // Below the first array, the 32-bit address wraps to the top of the space; the report
    // still names the array.
    let (kernel, _) = two_arrays("below_a", false, -1, false);
    let f = shared_fault(run(&Device::sim(), &kernel), "a[t-1]");
    let near = f.nearest.as_ref().expect("the nearest declaration");
    assert_eq!(near.name.as_deref(), Some("smem0"));
    assert_eq!(f.address, u64::from(u32::MAX - 3));
}

/// An index past an array that landed in the planned scratch (an exchange's slice) was
/// reported as a race with the exchange; now it is an out-of-bounds report.
#[test]
fn past_an_array_into_scratch_is_not_a_race() {
    let build = |past: bool| {
        let mut k = KernelBuilder::new(format!("scratch_{past}"))
            .block(64)
            .items_per_thread(2);
        if past {
            // The stray index reaches memory only without the array's guard.
            k = k.unchecked_bounds();
        }
        let x = k.input::<i32>("x");
        let y = k.output::<i32>("y");
        let b = k.this_block();
        let arr = k.shared_array::<i32>(64);
        let t = k.load_from(b, &x, Load::direct());
        k.shared_write(&arr, index::thread_rank(), t.item(0));
        k.sync_block();
        let i = index::thread_rank() + 1u32;
        let i = if past { i } else { i % 64u32 };
        let u = k.map(&t, move |v| v + arr.read(i.clone()));
        k.store_to(b, &y, &u, Store::transpose());
        k.build().expect("builds")
    };
    let xs: Vec<i32> = (0..128).map(|i| i * 7 - 300).collect();
    let exec = |dev: &Device, kernel: &Kernel| -> Result<Vec<i32>, RuntimeError> {
        let f = compiled(dev, kernel)?;
        let x = dev.upload(&xs)?;
        let mut y = dev.alloc_zeroed::<i32>(128)?;
        if kernel.ir().bounds == Bounds::Unchecked {
            // SAFETY: the tile is the 128 elements given; only the shared index strays (run
            // on the simulator, which reports it).
            unsafe { f.launch_unchecked(LaunchConfig::blocks(1), (&x, &mut y))? };
        } else {
            f.launch_grid(1, (&x, &mut y))?;
        }
        y.to_vec()
    };
    let good = build(false);
    assert!(good.plan().shared().window_bytes > 0, "{}", good.explain());
    assemble_all(&good);
    // Thread t holds items 2t, 2t+1 and adds arr[(t+1) % 64] = x[2((t+1) % 64)].
    let want: Vec<i32> = (0..128)
        .map(|p| xs[p] + xs[2 * ((p / 2 + 1) % 64)])
        .collect();
    assert_same(&exec(device(), &good).expect("runs"), &want, "in bounds");
    assert_same(&exec(&Device::sim(), &good).expect("runs"), &want, "sim");
    let bad = build(true);
    let f = shared_fault(exec(&Device::sim(), &bad), "arr[t+1] beside scratch");
    assert_eq!(f.thread.thread, [63, 0, 0]);
    assert_eq!(
        f.nearest.as_ref().and_then(|n| n.name.as_deref()),
        Some("smem0")
    );
}

/// Past the static limit an array lives in the dynamic window (and is checked against it
/// only); the arrays before it keep their own declarations, and the per-arch limit still
/// counts every byte.
#[test]
fn arrays_past_the_static_limit_live_in_the_window() {
    let mut k = KernelBuilder::new("big").block(128).items_per_thread(1);
    let y = k.output::<f32>("y");
    let b = k.this_block();
    let small = k.shared_array::<f32>(1024);
    let line = line!() + 1;
    let big = k.shared_array::<f32>(12 * 1024);
    k.shared_write(&small, index::thread_rank(), 1.0f32);
    k.shared_write(&big, index::thread_rank() * 8u32, 2.0f32);
    k.sync_block();
    let r = k.fill(small.read(index::thread_rank()) + big.read(index::thread_rank() * 8u32));
    k.store_to(b, &y, &r, Store::direct());
    let kernel = k.build().expect("builds");
    let shared = &kernel.plan().shared();
    assert_eq!(shared.arrays, vec![ArrayHome::Own, ArrayHome::Window]);
    assert!(shared.window_dynamic);
    assert_eq!(shared.static_bytes, 4096);
    assert_eq!(shared.dynamic_bytes(), 48 * 1024);
    assert_eq!(kernel.plan().shared_bytes(), 52 * 1024);
    let ptx = kernel.ptx(Arch::Sm90).expect("emits");
    assert!(
        ptx.contains(".extern .shared .align 16 .b8 scratch[];"),
        "{ptx}"
    );
    assert!(ptx.contains(".shared .align 4 .b8 smem0[4096];"), "{ptx}");
    assemble_all(&kernel);
    let explained = kernel.explain();
    assert!(
        explained.contains("of them dynamic") && explained.contains("checked against the window"),
        "{explained}"
    );
    let dev = device();
    if dev.limits().smem_per_block_optin >= 52 * 1024 {
        let f = dev.compile(&kernel).expect("compile");
        let mut yb = dev.alloc_zeroed::<f32>(128).expect("alloc");
        f.launch_grid(1, (&mut yb,)).expect("launch");
        assert_same(&yb.to_vec().expect("download"), &[3.0; 128], "big");
    }
    // sm_75 blocks have 48 KiB + 16 KiB: the kernel fits, barely; one more array does not,
    // and the error names each array with its line.
    assert!(kernel.check_shared_memory(Arch::Sm75).is_ok());
    let mut k = KernelBuilder::new("bigger").block(128);
    let a = k.shared_array::<f32>(12 * 1024);
    let c = k.shared_array::<f32>(4 * 1024 + 1);
    k.shared_write(&a, index::thread_rank(), 1.0f32);
    k.shared_write(&c, index::thread_rank(), 1.0f32);
    let kernel = k.build().expect("builds");
    match kernel.check_shared_memory(Arch::Sm75) {
        Err(PlanError::SharedMemory { need, users, .. }) => {
            assert!(need > 64 * 1024, "{need}");
            assert_eq!(users.len(), 2);
            assert!(
                users
                    .iter()
                    .any(|(_, loc, bytes)| *bytes == 16388 && loc.line > line)
            );
        }
        other => panic!("expected a shared-memory error, got {other:?}"),
    }
}

/// Hand-written PTX: two static declarations side by side. An overrun of the first by up to
/// a whole declaration faults (it used to write the second's bytes), the report quoting the
/// declaration's comment; accesses in bounds behave as before.
#[test]
fn overrun_of_one_declaration_never_reaches_the_next() {
    use coopgraph::sim::{Simulator, entry_text};
    let text = |off: u32| {
        entry_text(
            "two",
            &["u64 out"],
            &[
                ".shared .align 4 .b8 s0[128]; // s0: the first",
                ".shared .align 4 .b8 s1[128];",
            ],
            &format!(
                "ld.param.u64 %rd0, [out];
                 mov.u32 %r0, %tid.x;
                 mul.lo.u32 %r1, %r0, 4;
                 mov.u32 %r2, s0;
                 add.u32 %r3, %r2, %r1;
                 st.shared.u32 [%r3+{off}], %r0;
                 st.shared.u32 [s1], 77;
                 bar.sync 0;
                 ld.shared.u32 %r4, [%r3];
                 ld.shared.u32 %r5, [s1];
                 mul.wide.u32 %rd1, %r0, 8;
                 add.u64 %rd2, %rd0, %rd1;
                 st.global.v2.u32 [%rd2], {{%r4, %r5}};
                 ret;"
            ),
        )
    };
    let sim = Simulator::new(SimOptions {
        check_races: false,
        ..SimOptions::default()
    });
    let out = sim.alloc_zeroed(8 * 64).unwrap();
    let m = sim.load_module(&text(0)).unwrap();
    sim.launch(&m, "two", [1, 1, 1], [32, 1, 1], 0, &[out])
        .unwrap();
    let mut b = vec![0u8; 8 * 32];
    sim.read(out, &mut b).unwrap();
    let words: Vec<u32> = b
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    for t in 0..32 {
        assert_eq!(&words[2 * t..2 * t + 2], &[t as u32, 77]);
    }
    // Thread 32 writes just past `s0`; thread 0, 120 bytes past it or a whole declaration
    // past it: all fault, naming `s0`.
    for (off, threads, thread, past) in [(0, 33, 32, 0), (248, 1, 0, 120), (256, 1, 0, 128)] {
        let m = sim.load_module(&text(off)).unwrap();
        let e = sim
            .launch(&m, "two", [1, 1, 1], [threads, 1, 1], 0, &[out])
            .unwrap_err();
        let SimError::OutOfBounds(f) = &e else {
            panic!("{e}")
        };
        assert_eq!(f.thread.thread[0], thread, "{e}");
        let near = f.nearest.as_ref().expect("nearest");
        assert_eq!(near.name.as_deref(), Some("s0"), "{e}");
        assert_eq!(near.note.as_deref(), Some("s0: the first"), "{e}");
        assert_eq!(f.address, near.base + 128 + past, "{e}");
    }
}

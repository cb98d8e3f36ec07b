//! Debug checks (`KernelBuilder::debug`): faults planted in kernels written as the examples
//! write them (a stencil's halo read past the ends, a histogram's bin past the bins, a write
//! one past the end, valid items past a buffer, a tiles loop over more elements than the
//! buffer holds, a failing assertion) are each reported after the launch as
//! `RuntimeError::CheckFailed` naming the op, the line of this file that recorded it, the
//! thread and block, and the index against the length; on the default device (the GPU with
//! `COOPGRAPH_DEVICE=cuda`, else the simulator). The same kernels without debug checks run
//! without an error, as before, and debug kernels whose accesses stay inside compute the same
//! results. Every kernel is assembled by ptxas for each arch.

use super::common::{assemble_all, device};
use coopgraph::ir::index::{self, Axis};
use coopgraph::ir::{Atomic, CheckKind, Checks, VerifyErrorKind};
use coopgraph::ptx::Arch;
use coopgraph::runtime::{CheckFailure, LaunchConfig, RuntimeError};
use coopgraph::{Error, Kernel, KernelBuilder, Load, Store};

/// The failure a launch reports; panics on success or another error.
fn failure(launched: Result<(), RuntimeError>) -> CheckFailure {
    match launched {
        Err(RuntimeError::CheckFailed(f)) => *f,
        Err(e) => panic!("expected a failed check, got: {e}"),
        Ok(()) => panic!("expected a failed check, the launch succeeded"),
    }
}

/// Asserts the failure's site: what it tests and the line of this file that recorded it.
fn at(f: &CheckFailure, what: CheckKind, line: u32) {
    let site = f.site.as_ref().expect("the image names its sites");
    assert_eq!(site.what, what, "{f}");
    assert_eq!((site.loc.file, site.loc.line), (file!(), line), "{f}");
    assert!(
        f.to_string().contains(&format!("{}:{line}:", file!())),
        "{f}"
    );
}

/// Builds a kernel with and without debug checks (`build` returns it with the line of the
/// op whose check fails); both are assembled for every arch.
fn both(build: impl Fn(bool) -> (Kernel, u32)) -> (Kernel, Kernel, u32) {
    let ((plain, line), (checked, same)) = (build(false), build(true));
    assert_eq!(line, same);
    assert_eq!(checked.ir().options.checks, Checks::Debug);
    assert_ne!(plain.key(), checked.key());
    assemble_all(&plain);
    assemble_all(&checked);
    (plain, checked, line)
}

fn builder(name: &str, debug: bool) -> KernelBuilder {
    let k = KernelBuilder::new(name);
    if debug { k.debug() } else { k }
}

/// `y[i + 1] = x[i]`: the last thread of the last block writes one past the end of `y`.
#[test]
fn a_write_one_past_the_end_names_its_line_and_thread() {
    let (plain, checked, line) = both(|debug| {
        let mut k = builder("shift_write", debug).block(64);
        let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
        let i = index::block_index() * 64u32 + index::thread_rank();
        let v = x.at(&i) * 2u32;
        let line = line!() + 1;
        k.write(&y, i + 1u32, v);
        (k.build().expect("builds"), line)
    });
    let dev = device();
    let xs: Vec<u32> = (0..256).collect();
    let x = dev.upload(&xs).expect("upload");
    let mut y = dev.alloc_zeroed::<u32>(256).expect("alloc");
    let want: Vec<u32> = (0..256)
        .map(|i| if i == 0 { 0 } else { 2 * (i - 1) })
        .collect();
    // Without checks: the write past the end is skipped silently.
    dev.compile(&plain)
        .expect("compile")
        .launch_grid(4, (&x, &mut y))
        .expect("a clean run");
    assert_eq!(y.to_vec().expect("download"), want);

    let mut y = dev.alloc_zeroed::<u32>(256).expect("alloc");
    let f = failure(
        dev.compile(&checked)
            .expect("compile")
            .launch_grid(4, (&x, &mut y)),
    );
    at(&f, CheckKind::Write { buffer: "y".into() }, line);
    assert_eq!((f.thread, f.block), ([63, 0, 0], [3, 0, 0]));
    assert_eq!((f.value, f.limit), (256, 256));
    assert_eq!(f.site.as_ref().map(|s| s.op_name), Some("write"));
    // The checks change nothing the kernel computes.
    assert_eq!(y.to_vec().expect("download"), want);
}

/// Example 10's stencil reads its halo at `g - RADIUS` and `g + BLOCK`, past both ends of `x`
/// in the first and last blocks: a checked kernel reads 0 there, a debug kernel reports it.
#[test]
fn a_stencils_halo_past_the_ends_is_a_read_out_of_bounds() {
    const BLOCK: u32 = 64;
    const RADIUS: u32 = 3;
    let (plain, checked, line) = both(|debug| {
        let mut k = builder("stencil_halo", debug).block(BLOCK);
        let (x, y) = (k.input::<f32>("x"), k.output::<f32>("y"));
        let t = index::thread_rank();
        let g = index::block_index() * BLOCK + t.clone();
        let window = k.shared_array::<f32>(BLOCK + 2 * RADIUS);
        k.shared_write(&window, t.clone() + RADIUS, x.at(&g));
        let mut line = 0;
        k.if_(t.lt(RADIUS), |k| {
            line = line!() + 1;
            k.shared_write(&window, t.clone(), x.at(g.clone() - RADIUS));
        });
        k.sync_block();
        let sum = window.read(t.clone()) + window.read(t.clone() + RADIUS);
        k.write(&y, &g, sum);
        (k.build().expect("builds"), line)
    });
    let dev = device();
    let xs: Vec<f32> = (0..256).map(|i| i as f32).collect();
    let x = dev.upload(&xs).expect("upload");
    let mut y = dev.alloc_zeroed::<f32>(256).expect("alloc");
    dev.compile(&plain)
        .expect("compile")
        .launch_grid(4, (&x, &mut y))
        .expect("a clean run");
    let want: Vec<f32> = (0..256)
        .map(|i| if i < 3 { i as f32 } else { (2 * i - 3) as f32 })
        .collect();
    assert_eq!(y.to_vec().expect("download"), want);
    let f = failure(
        dev.compile(&checked)
            .expect("compile")
            .launch_grid(4, (&x, &mut y)),
    );
    at(&f, CheckKind::Read { buffer: "x".into() }, line);
    // Only block 0's first three threads read below 0 (a u32 index that wrapped).
    assert_eq!(f.block, [0, 0, 0]);
    assert!(f.thread[0] < 3, "{f}");
    assert_eq!(f.value, u64::from(u32::MAX - 2 + f.thread[0]));
    assert_eq!(f.limit, 256);
}

/// Example 08's histogram: samples outside the levels get the bin past the last, whose
/// atomic a checked kernel skips; a debug kernel reports it.
#[test]
fn a_histogram_bin_past_the_bins_is_an_atomic_out_of_bounds() {
    const BINS: u32 = 16;
    let (plain, checked, line) = both(|debug| {
        let mut k = builder("histogram_bins", debug).block(128);
        let (x, bins) = (k.input::<u32>("x"), k.output::<u32>("bins"));
        let i = index::block_index() * 128u32 + index::thread_rank();
        let sample = x.at(&i);
        // Samples of 160 and more have no bin: 160 / 10 = 16 is one past the last.
        let bin = sample / 10u32;
        let line = line!() + 1;
        k.atomic(&bins, bin, Atomic::add(1u32));
        (k.build().expect("builds"), line)
    });
    let dev = device();
    let xs: Vec<u32> = (0..256).map(|i| (i * 7) % 170).collect();
    let x = dev.upload(&xs).expect("upload");
    let mut bins = dev.alloc_zeroed::<u32>(BINS as usize).expect("alloc");
    dev.compile(&plain)
        .expect("compile")
        .launch_grid(2, (&x, &mut bins))
        .expect("a clean run");
    let mut want = vec![0u32; BINS as usize];
    for &s in &xs {
        if let Some(b) = want.get_mut((s / 10) as usize) {
            *b += 1;
        }
    }
    assert_eq!(bins.to_vec().expect("download"), want);
    let mut bins = dev.alloc_zeroed::<u32>(BINS as usize).expect("alloc");
    let f = failure(
        dev.compile(&checked)
            .expect("compile")
            .launch_grid(2, (&x, &mut bins)),
    );
    at(
        &f,
        CheckKind::Atomic {
            buffer: "bins".into(),
        },
        line,
    );
    assert_eq!(f.limit, u64::from(BINS));
    let sample = xs[(f.block[0] * 128 + f.thread[0]) as usize];
    assert!(sample >= 160, "{f}: sample {sample}");
    assert_eq!(f.value, u64::from(sample / 10));
    assert_eq!(bins.to_vec().expect("download"), want);
}

/// A load whose valid items pass its buffer's end, a store at an offset whose tile passes it,
/// and a tiles loop over more elements than the buffers hold: each is a range failure at its
/// own line; the same kernels over counts that fit run clean.
#[test]
fn valid_items_and_offsets_past_a_buffer_are_range_failures() {
    let dev = device();
    // A load of the block's tile with a valid count.
    let (_, valid, load_line) = both(|debug| {
        let mut k = builder("valid_past", debug).block(32).items_per_thread(2);
        let (x, y, n) = (
            k.input::<u32>("x"),
            k.output::<u32>("y"),
            k.scalar::<u32>("n"),
        );
        let b = k.this_block();
        let line = line!() + 1;
        let t = k.load_from(b, &x, Load::direct().valid_items(n.expr()).oob_default(0));
        k.store_to(b, &y, &t, Store::direct().valid_items(n.expr()));
        (k.build().expect("builds"), line)
    });
    let f = dev.compile(&valid).expect("compile");
    let x = dev.upload(&(0..50).collect::<Vec<u32>>()).expect("upload");
    let mut y = dev.alloc_zeroed::<u32>(64).expect("alloc");
    f.launch_grid(1, (&x, &mut y, 50u32))
        .expect("50 valid items fit");
    let fail = failure(f.launch_grid(1, (&x, &mut y, 60u32)));
    at(&fail, CheckKind::Range { buffer: "x".into() }, load_line);
    assert_eq!((fail.value, fail.limit), (60, 50));

    // A store at an offset: its whole tile is declared.
    let (_, offset, store_line) = both(|debug| {
        let mut k = builder("offset_past", debug).block(32).items_per_thread(1);
        let (x, y, at) = (
            k.input::<u32>("x"),
            k.output::<u32>("y"),
            k.scalar::<u32>("at"),
        );
        let b = k.this_block();
        let t = k.load_from(b, &x, Load::direct().offset(0u32));
        let line = line!() + 1;
        k.store_to(b, &y, &t, Store::direct().offset(at.expr()));
        (k.build().expect("builds"), line)
    });
    let f = dev.compile(&offset).expect("compile");
    let x = dev.upload(&(0..32).collect::<Vec<u32>>()).expect("upload");
    let mut y = dev.alloc_zeroed::<u32>(100).expect("alloc");
    f.launch_grid(1, (&x, &mut y, 68u32)).expect("68 + 32 fits");
    let fail = failure(f.launch_grid(1, (&x, &mut y, 80u32)));
    at(&fail, CheckKind::Range { buffer: "y".into() }, store_line);
    assert_eq!((fail.value, fail.limit), (112, 100));

    // A tiles loop over n elements, from buffers of 1000.
    let (_, tiles, tiles_line) = both(|debug| {
        let mut k = builder("tiles_past", debug).block(64).items_per_thread(4);
        let (x, y, n) = (
            k.input::<f32>("x"),
            k.output::<f32>("y"),
            k.scalar::<u32>("n"),
        );
        let b = k.this_block();
        let mut line = 0;
        k.tiles(n, |k, _| {
            line = line!() + 1;
            let t = k.load_from(b, &x, Load::vectorize());
            let t = k.map(&t, |v| v + 1.0f32);
            k.store_to(b, &y, &t, Store::vectorize());
        });
        (k.build().expect("builds"), line)
    });
    let f = dev.compile(&tiles).expect("compile");
    let x = dev.upload(&[1.0f32; 1000]).expect("upload");
    let mut y = dev.alloc_zeroed::<f32>(1000).expect("alloc");
    f.launch_grid(2, (&x, &mut y, 1000u32)).expect("1000 fits");
    assert_eq!(y.to_vec().expect("download"), [2.0f32; 1000]);
    let fail = failure(f.launch_grid(2, (&x, &mut y, 1100u32)));
    at(&fail, CheckKind::Range { buffer: "x".into() }, tiles_line);
    // The tile at 768 of 256 elements declares 1024 > 1000.
    assert_eq!(fail.limit, 1000);
    assert!(fail.value > 1000 && fail.value <= 1100, "{fail}");
}

/// Runs of consecutive elements by index: a run whose last element passes the buffer's end
/// is reported with that element's index.
#[test]
fn runs_past_the_end_name_their_last_element() {
    let (plain, checked, line) = both(|debug| {
        let mut k = builder("runs_past", debug).block(32);
        let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
        let first = index::thread_rank() * 4u32;
        let line = line!() + 1;
        let t = k.read_run(&x, first.clone() + 2u32, 4);
        k.write_run(&y, first, &t);
        (k.build().expect("builds"), line)
    });
    let dev = device();
    let x = dev.upload(&(0..128).collect::<Vec<u32>>()).expect("upload");
    let mut y = dev.alloc_zeroed::<u32>(128).expect("alloc");
    dev.compile(&plain)
        .expect("compile")
        .launch_grid(1, (&x, &mut y))
        .expect("a clean run");
    let want: Vec<u32> = (0..128)
        .map(|i| if i + 2 < 128 { i + 2 } else { 0 })
        .collect();
    assert_eq!(y.to_vec().expect("download"), want);
    let f = failure(
        dev.compile(&checked)
            .expect("compile")
            .launch_grid(1, (&x, &mut y)),
    );
    at(&f, CheckKind::Read { buffer: "x".into() }, line);
    // Thread 31 reads 126..130: its last element is 129.
    assert_eq!((f.thread, f.value, f.limit), ([31, 0, 0], 129, 128));
    assert_eq!(y.to_vec().expect("download"), want);
}

/// Warps with their own valid counts: each warp declares its count from its own origin, so
/// the second warp's items pass a buffer the first warp's fit.
#[test]
fn a_warps_own_valid_items_are_checked_from_its_origin() {
    let (_, warps, line) = both(|debug| {
        let mut k = builder("warp_valid", debug).block(64).items_per_thread(1);
        let (x, y, n) = (
            k.input::<u32>("x"),
            k.output::<u32>("y"),
            k.scalar::<u32>("n"),
        );
        let w = k.this_warp();
        let line = line!() + 1;
        let t = k.load_from(w, &x, Load::direct().valid_items(n.expr()).oob_default(7));
        k.store_to(w, &y, &t, Store::direct().valid_items(n.expr()));
        (k.build().expect("builds"), line)
    });
    let dev = device();
    let f = dev.compile(&warps).expect("compile");
    let x = dev.upload(&(0..40).collect::<Vec<u32>>()).expect("upload");
    let mut y = dev.alloc_zeroed::<u32>(64).expect("alloc");
    f.launch_grid(1, (&x, &mut y, 8u32))
        .expect("8 items from 32 fit in 40");
    let want: Vec<u32> = (0..64).map(|i| if i % 32 < 8 { i } else { 0 }).collect();
    assert_eq!(y.to_vec().expect("download"), want);
    let fail = failure(f.launch_grid(1, (&x, &mut y, 20u32)));
    at(&fail, CheckKind::Range { buffer: "x".into() }, line);
    // The second warp's items end at 32 + 20.
    assert_eq!((fail.value, fail.limit), (52, 40));
    assert!((32..64).contains(&fail.thread[0]), "{fail}");
}

/// An assertion that fails in one thread of one block (of a 2-D grid, so the block's y index
/// is recorded too); without debug checks the assertion is not even evaluated.
#[test]
fn a_failing_assertion_names_its_message_line_and_thread() {
    let (plain, checked, line) = both(|debug| {
        let mut k = builder("assert_sorted", debug).block_dims([16, 2, 1]);
        let x = k.input::<u32>("x");
        let y = k.output::<u32>("y");
        let rank = index::thread_rank();
        let block = index::block_idx(index::Axis::X) + index::block_idx(index::Axis::Y) * 2u32;
        let i = block * 32u32 + rank;
        let next = (i.clone() + 1u32).min(127u32);
        let line = line!() + 1;
        k.assert(x.at(&i).le(x.at(next)), "x is sorted");
        k.write(&y, &i, x.at(&i));
        (k.build().expect("builds"), line)
    });
    for arch in Arch::ALL {
        let ptx = plain.ptx(arch).expect("emits");
        assert!(!ptx.contains("atom.global.cas") && !ptx.contains("_checks"));
    }
    let dev = device();
    let mut xs: Vec<u32> = (0..128).collect();
    xs.swap(100, 101);
    let x = dev.upload(&xs).expect("upload");
    let mut y = dev.alloc_zeroed::<u32>(128).expect("alloc");
    let grid = LaunchConfig::grid([2, 2, 1]);
    dev.compile(&plain)
        .expect("compile")
        .launch(grid.clone(), (&x, &mut y))
        .expect("not checked");
    let f = failure(
        dev.compile(&checked)
            .expect("compile")
            .launch(grid, (&x, &mut y)),
    );
    at(
        &f,
        CheckKind::Assert {
            message: "x is sorted".into(),
        },
        line,
    );
    // Element 100: block 3 = (1, 1), rank 4 = (4, 0).
    assert_eq!((f.thread, f.block), ([4, 0, 0], [1, 1, 0]));
    assert!(
        f.to_string().contains("assertion failed: x is sorted"),
        "{f}"
    );
    assert_eq!(y.to_vec().expect("download"), xs);
}

/// Debug checks need the lengths that `unchecked_bounds` removes; the listing says a kernel
/// has them.
#[test]
fn debug_checks_need_bounds_and_show_in_the_report() {
    let line = line!() + 1;
    let mut k = KernelBuilder::new("raw").debug().unchecked_bounds();
    let y = k.output::<u32>("y");
    k.write(&y, index::thread_rank(), 1u32);
    let Err(Error::Verify(e)) = k.build() else {
        panic!("built")
    };
    assert_eq!(e.errors[0].kind, VerifyErrorKind::ChecksWithoutBounds);
    assert_eq!(e.errors[0].loc.line, line);

    let mut k = KernelBuilder::new("report").debug();
    let y = k.output::<u32>("y");
    k.write(&y, index::thread_rank(), 1u32);
    let kernel = k.build().expect("builds");
    assert!(kernel.explain().contains("debug checks"));
    let image = coopgraph::runtime::Compile::emit(&kernel, Arch::Sm80).expect("emits");
    assert_eq!(image.check_sites().len(), 1);
}

/// Shared, dynamic shared, local and constant arrays indexed past their ends: a checked
/// kernel guards each access as it guards a buffer's (the read gives 0, the write and the
/// atomic are skipped, so the neighbouring array keeps its values), and a debug kernel
/// reports the first stray access naming the array's kind and declaration, the access's
/// line, the index and the length.
#[test]
fn array_indices_are_guarded_and_checked() {
    use coopgraph::ir::ArrayMemory;
    // Thread t of 32 writes a[t + shift] = t + 1 (32 elements), atomically adds 1 to
    // b[t + shift] (32 elements, zeroed first), reads a local array of 4 at t / 8 + lshift
    // and a constant array of 4 at t / 8 + cshift; y[t] = a[t] + b[t] + local + const.
    struct Lines {
        shared: u32,
        write: u32,
        atomic: u32,
        local: u32,
        konst: u32,
        /// The write of `y`, whose expression holds the array reads (the site is its op).
        read: u32,
    }
    let build = |debug: bool, shift: u32, lshift: u32, cshift: u32| {
        let mut k = builder(&format!("arrays_{shift}_{lshift}_{cshift}"), debug).block(32);
        let y = k.output::<u32>("y");
        let t = index::thread_rank();
        let shared = line!() + 1;
        let a = k.shared_array::<u32>(32);
        let b = k.shared_array::<u32>(32);
        k.shared_write(&a, t.clone(), 0u32);
        k.shared_write(&b, t.clone(), 0u32);
        k.sync_block();
        let write = line!() + 1;
        k.shared_write(&a, t.clone() + shift, t.clone() + 1u32);
        let atomic = line!() + 1;
        let _ = k.atomic(&b, t.clone() + shift, Atomic::add(1u32));
        k.sync_block();
        let local = line!() + 1;
        let l = k.local_array::<u32>(4);
        k.for_range(0u32, 4u32, |k, i| k.local_write(&l, i.clone(), i * 10u32));
        let konst = line!() + 1;
        let c = k.const_array(&[100u32, 200, 300, 400]);
        let lv = l.read(t.clone() / 8u32 + lshift);
        let cv = c.read(t.clone() / 8u32 + cshift);
        let read = line!() + 1;
        k.write(&y, &t, a.read(t.clone()) + b.read(t.clone()) + lv + cv);
        let lines = Lines {
            shared,
            write,
            atomic,
            local,
            konst,
            read,
        };
        (k.build().expect("builds"), lines)
    };
    let run = |kernel: &Kernel| {
        let dev = device();
        let mut y = dev.alloc_zeroed::<u32>(32).expect("alloc");
        let r = dev
            .compile(kernel)
            .expect("compiles")
            .launch_grid(1, (&mut y,));
        (r, y.to_vec().expect("download"))
    };
    // In bounds, debug or not, the same values.
    let want: Vec<u32> = (0..32u32)
        .map(|t| t + 1 + 1 + t / 8 * 10 + 100 * (t / 8 + 1))
        .collect();
    for debug in [false, true] {
        let (kernel, _) = build(debug, 0, 0, 0);
        assemble_all(&kernel);
        let (r, y) = run(&kernel);
        r.expect("runs");
        assert_eq!(y, want, "debug {debug}");
    }
    // Shifted by one: thread 31's write and atomic are skipped, and a[0], b[0] keep their 0.
    let (kernel, _) = build(false, 1, 0, 0);
    assemble_all(&kernel);
    let (r, y) = run(&kernel);
    r.expect("a checked kernel skips the stray write");
    for t in 0..32u32 {
        let (lv, cv) = (t / 8 * 10, 100 * (t / 8 + 1));
        let (a, b) = if t == 0 { (0, 0) } else { (t, 1) };
        assert_eq!(y[t as usize], a + b + lv + cv, "thread {t}");
    }
    // Reads past the local and constant arrays give 0.
    let (kernel, _) = build(false, 0, 1, 1);
    let (r, y) = run(&kernel);
    r.expect("a checked kernel reads 0 past the end");
    for t in 24..32u32 {
        assert_eq!(
            y[t as usize],
            t + 2,
            "thread {t}: the local and constant reads give 0"
        );
    }
    // Debug kernels name the first failure.
    let (kernel, lines) = build(true, 1, 0, 0);
    assemble_all(&kernel);
    let f = failure(run(&kernel).0);
    let site = f.site.as_ref().expect("a site");
    let declared = |line: u32| (site_decl(&site.what), line);
    assert!([lines.write, lines.atomic].contains(&site.loc.line), "{f}");
    assert_eq!(
        declared(lines.shared),
        (
            Some((ArrayMemory::Shared, lines.shared, true)),
            lines.shared
        ),
        "{f}"
    );
    assert_eq!((f.thread, f.value, f.limit), ([31, 0, 0], 32, 32), "{f}");
    assert!(f.to_string().contains("shared array declared at"), "{f}");
    let (kernel, lines) = build(true, 0, 1, 0);
    let f = failure(run(&kernel).0);
    let site = f.site.as_ref().expect("a site");
    assert_eq!(site.loc.line, lines.read, "{f}");
    assert_eq!(
        site_decl(&site.what),
        Some((ArrayMemory::Local, lines.local, false)),
        "{f}"
    );
    assert_eq!((f.value, f.limit), (4, 4), "{f}");
    let (kernel, lines) = build(true, 0, 0, 1);
    let f = failure(run(&kernel).0);
    let site = f.site.as_ref().expect("a site");
    assert_eq!(site.loc.line, lines.read, "{f}");
    assert_eq!(
        site_decl(&site.what),
        Some((ArrayMemory::Const, lines.konst, false)),
        "{f}"
    );

    // A dynamic shared array: its length is the launch's.
    let dynamic = |debug: bool| {
        let mut k = builder("dyn_guard", debug).block(32);
        let y = k.output::<u32>("y");
        let decl = line!() + 1;
        let d = k.dynamic_shared_array::<u32>();
        let t = index::thread_rank();
        k.shared_write(&d, t.clone(), t.clone() + 5u32);
        k.sync_block();
        let read = line!() + 1;
        k.write(&y, &t, d.read(t.clone() + 1u32));
        (k.build().expect("builds"), decl, read)
    };
    for debug in [false, true] {
        let (kernel, decl, read) = dynamic(debug);
        assemble_all(&kernel);
        let dev = device();
        let mut y = dev.alloc_zeroed::<u32>(32).expect("alloc");
        let f = dev.compile(&kernel).expect("compiles");
        let launched = f.launch(
            LaunchConfig::blocks(1).with_dynamic_array_len(32),
            (&mut y,),
        );
        if debug {
            let fail = failure(launched);
            let site = fail.site.as_ref().expect("a site");
            assert_eq!(site.loc.line, read, "{fail}");
            assert_eq!(
                site_decl(&site.what),
                Some((ArrayMemory::Shared, decl, false)),
                "{fail}"
            );
            assert_eq!((fail.value, fail.limit), (32, 32), "{fail}");
        } else {
            launched.expect("runs");
            let y = y.to_vec().expect("download");
            let want: Vec<u32> = (0..32u32).map(|t| if t < 31 { t + 6 } else { 0 }).collect();
            assert_eq!(y, want);
        }
    }
}

/// An array check's memory, declaration line and whether it writes.
fn site_decl(what: &CheckKind) -> Option<(coopgraph::ir::ArrayMemory, u32, bool)> {
    match what {
        CheckKind::ArrayIndex {
            memory,
            declared,
            write,
        } => Some((*memory, declared.line, *write)),
        _ => None,
    }
}

/// A `u8` or `u16` widened to `u32` stays below its dtype's range: a widened `u8` indexes a
/// 256-element shared array with no guard (a byte histogram's counters). A shorter array keeps
/// the guard, and so do a widened `i8` (a negative one wraps past every array) and a `u16`
/// into 256 elements; each reads what Rust would, 0 past the array.
#[test]
fn widened_narrow_indices_need_no_guard() {
    use coopgraph::runtime::DeviceElement;
    fn run<S: DeviceElement + Copy>(len: u32, xs: &[S], wide: impl Fn(S) -> i64) -> usize {
        let name = format!("widened_{:?}_{len}", S::DTYPE).to_lowercase();
        let mut k = KernelBuilder::new(name).block(256);
        let (x, y) = (k.input::<S>("x"), k.output::<u32>("y"));
        let table = k.shared_array::<u32>(len);
        let t = index::thread_rank();
        k.if_(t.clone().lt(len), |k| {
            k.shared_write(&table, t.clone(), t.clone() + 1u32)
        });
        k.sync_block();
        let v = table.read(x.at(t.clone()).cast::<u32>());
        k.write(&y, &t, v);
        let kernel = k.build().expect("builds");
        assemble_all(&kernel);
        let dev = device();
        let xb = dev.upload(xs).expect("upload");
        let mut yb = dev.alloc_zeroed::<u32>(256).expect("alloc");
        dev.compile(&kernel)
            .expect("compiles")
            .launch_grid(1, (&xb, &mut yb))
            .expect("runs");
        let want: Vec<u32> = (xs.iter())
            .map(|&v| match u32::try_from(wide(v)) {
                Ok(i) if i < len => i + 1,
                _ => 0,
            })
            .collect();
        assert_eq!(yb.to_vec().expect("download"), want, "{}", kernel.name());
        super::common::ptx_lines(&kernel, super::common::guarded_shared_load)
    }
    let bytes: Vec<u8> = (0..=255).rev().collect();
    let signed: Vec<i8> = bytes.iter().map(|&b| b as i8).collect();
    let wide: Vec<u16> = (0..256u32).map(|i| (i * 257) as u16).collect();
    assert_eq!(run(256, &bytes, i64::from), 0);
    assert_eq!(run(255, &bytes, i64::from), 1);
    assert_eq!(run(256, &signed, |v: i8| i64::from(v as u32)), 1);
    assert_eq!(run(256, &wide, i64::from), 1);
}

/// An array index that interval reasoning bounds inside the array (the thread's position,
/// a `for_range` variable, `%` by a constant, products and sums of such) needs no guard: the
/// tiled loop's shared reads are plain loads. An index it cannot bound keeps its guard.
#[test]
fn bounded_array_indices_need_no_guard() {
    let build = |bounded: bool| {
        let mut k = KernelBuilder::new(format!("tile_reads_{bounded}")).block_dims([16, 16, 1]);
        let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
        let tile = k.shared_array_2d::<u32>([16, 16]);
        let (tx, ty) = (index::thread_idx(Axis::X), index::thread_idx(Axis::Y));
        let t = index::thread_rank();
        k.shared_write(&tile, (ty.clone(), tx.clone()), x.at(t.clone()));
        k.sync_block();
        let acc = k.var(0u32);
        k.for_range(0u32, 16u32, |k, i| {
            let row = if bounded { ty.clone() } else { x.at(t.clone()) };
            k.set(&acc, acc.get() + tile.read((row, i)));
        });
        k.write(&y, &t, acc.get());
        k.build().expect("builds")
    };
    let guarded = |kernel: &Kernel| {
        let ptx = kernel.ptx(Arch::Sm90).expect("emits");
        ptx.lines()
            .filter(|l| l.contains("ld.shared") || l.contains("st.shared"))
            .filter(|l| l.trim_start().starts_with('@'))
            .count()
    };
    let (bounded, unbounded) = (build(true), build(false));
    assemble_all(&bounded);
    assemble_all(&unbounded);
    assert_eq!(guarded(&bounded), 0, "{}", bounded.ptx(Arch::Sm90).unwrap());
    assert!(
        guarded(&unbounded) > 0,
        "{}",
        unbounded.ptx(Arch::Sm90).unwrap()
    );
    // Both compute the same where the rows stay inside.
    let dev = device();
    let xs: Vec<u32> = (0..256).map(|i| i % 16).collect();
    for kernel in [&bounded, &unbounded] {
        let xb = dev.upload(&xs).expect("upload");
        let mut yb = dev.alloc_zeroed::<u32>(256).expect("alloc");
        dev.compile(kernel)
            .expect("compiles")
            .launch_grid(1, (&xb, &mut yb))
            .expect("runs");
        let y = yb.to_vec().expect("download");
        for (t, &got) in y.iter().enumerate() {
            let row = if kernel.ir().name.ends_with("true") {
                t / 16
            } else {
                t % 16
            };
            let want: u32 = (0..16).map(|i| xs[row * 16 + i]).sum();
            assert_eq!(got, want, "thread {t}");
        }
    }
}

//! Compile options: the register limit (`.maxnreg`), blocks per SM (`.minnctapersm`) and line
//! information (`.file`/`.loc`
//! naming the Rust lines that recorded each op). Every kernel runs on the default device and
//! is assembled by ptxas for each arch (with `-lineinfo` where it carries line information).

use super::common::{assemble_all, assert_same, device};
use coopgraph::ir::{LineInfo, VerifyErrorKind};
use coopgraph::ptx::Arch;
use coopgraph::{Error, KernelBuilder, Load, Store};

/// `y = 2 * x + 1` over tiles of 128 threads x 4 items, with `options` applied to the builder.
fn scale(options: impl FnOnce(KernelBuilder) -> KernelBuilder) -> KernelBuilder {
    let mut k = options(KernelBuilder::new("scale").block(128).items_per_thread(4));
    let (x, y) = (k.input::<f32>("x"), k.output::<f32>("y"));
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::vectorize());
    let t = k.map(&t, |v| v * 2.0f32 + 1.0f32);
    k.store_to(b, &y, &t, Store::vectorize());
    k
}

fn run_scale(kernel: &coopgraph::Kernel) {
    let dev = device();
    let xs: Vec<f32> = (0..1000).map(|i| i as f32 * 0.25).collect();
    let x = dev.upload(&xs).expect("upload");
    let mut y = dev.alloc_zeroed::<f32>(xs.len()).expect("alloc");
    let f = dev.compile(kernel).expect("compile");
    f.launch_over(xs.len(), (&x, &mut y)).expect("launch");
    let want: Vec<f32> = xs.iter().map(|v| v * 2.0 + 1.0).collect();
    assert_same(&y.to_vec().expect("download"), &want, "y");
}

#[test]
fn max_registers_reaches_ptx_and_the_device() {
    let kernel = scale(|k| k.max_registers(32)).build().expect("builds");
    for arch in Arch::ALL {
        let ptx = kernel.ptx(arch).expect("emits");
        assert!(ptx.contains("\n.maxnreg 32\n"), "{ptx}");
    }
    assemble_all(&kernel);
    run_scale(&kernel);
    let f = device().compile(&kernel).expect("compile");
    if let Some(n) = f.num_registers().expect("attribute") {
        assert!(n <= 32, "{n} registers under a limit of 32");
    }
    let plain = scale(|k| k).build().expect("builds");
    assert!(!plain.ptx(Arch::Sm90).expect("emits").contains(".maxnreg"));
    assert_ne!(kernel.key(), plain.key());
    let other = scale(|k| k.max_registers(40)).build().expect("builds");
    assert_ne!(kernel.key(), other.key());
}

#[test]
fn register_limits_out_of_range_name_their_line() {
    let line = line!() + 1;
    let Err(Error::Verify(e)) = scale(|k| k.max_registers(8)).build() else {
        panic!("built")
    };
    let [err] = &e.errors[..] else { panic!("{e}") };
    assert_eq!(
        err.kind,
        VerifyErrorKind::MaxRegisters {
            count: 8,
            min: 24,
            max: 255
        }
    );
    assert_eq!((err.loc.file, err.loc.line), (file!(), line));

    let Err(Error::Verify(e)) = scale(|k| k.block(1024).max_registers(128)).build() else {
        panic!("built")
    };
    assert_eq!(
        e.errors[0].kind,
        VerifyErrorKind::RegistersPastFile {
            count: 128,
            threads: 1024,
            file: 65536
        }
    );
    assert!(scale(|k| k.block(1024).max_registers(64)).build().is_ok());
}

/// `.minnctapersm` reaches the PTX of every arch (sm_75's SMs hold 1024 threads, so three
/// blocks of 384 are more than they hold: ptxas leaves the wish unmet there, and the kernel
/// still assembles and runs), is part of the key, and the selection's kernels carry it.
#[test]
fn min_blocks_reaches_ptx_and_the_device() {
    let kernel = scale(|k| k.block(384).min_blocks_per_sm(3))
        .build()
        .expect("builds");
    for arch in Arch::ALL {
        let ptx = kernel.ptx(arch).expect("emits");
        assert!(
            ptx.contains("\n.reqntid 384, 1, 1\n.minnctapersm 3\n"),
            "{ptx}"
        );
    }
    assemble_all(&kernel);
    run_scale(&kernel);
    assert!(kernel.explain().contains("at least 3 blocks per SM"));
    let plain = scale(|k| k.block(384)).build().expect("builds");
    assert!(
        !plain
            .ptx(Arch::Sm90)
            .expect("emits")
            .contains(".minnctapersm")
    );
    assert_ne!(kernel.key(), plain.key());
    let other = scale(|k| k.block(384).min_blocks_per_sm(2))
        .build()
        .expect("builds");
    assert_ne!(kernel.key(), other.key());
    // With a register limit as well, both reach the PTX.
    let both = scale(|k| k.block(384).max_registers(40).min_blocks_per_sm(3))
        .build()
        .expect("builds");
    assert!(
        both.ptx(Arch::Sm90)
            .expect("emits")
            .contains(".maxnreg 40\n.minnctapersm 3\n")
    );
    assemble_all(&both);

    let select =
        coopgraph::algorithms::DeviceSelect::new(|v: coopgraph::ir::Expr<u32>| (v % 2u32).eq(0u32))
            .kernel()
            .expect("builds");
    let ptx = select.ptx(Arch::Sm90).expect("emits");
    assert!(
        ptx.contains(".reqntid 256, 1, 1\n.minnctapersm 3\n"),
        "{ptx}"
    );
    assemble_all(&select);
}

#[test]
fn blocks_per_sm_out_of_range_name_their_line() {
    for (blocks, threads) in [(0u32, 128u64), (6, 384), (3, 1024)] {
        let line = line!() + 1;
        let built = scale(|k| k.block(threads as u32).min_blocks_per_sm(blocks)).build();
        let Err(Error::Verify(e)) = built else {
            panic!("{blocks} x {threads} built")
        };
        let [err] = &e.errors[..] else { panic!("{e}") };
        assert_eq!(
            err.kind,
            VerifyErrorKind::MinBlocks {
                count: blocks,
                threads,
                sm_threads: 2048
            }
        );
        assert_eq!((err.loc.file, err.loc.line), (file!(), line));
    }
    assert!(
        scale(|k| k.block(1024).min_blocks_per_sm(2))
            .build()
            .is_ok()
    );
}

/// A kernel with a loop and a branch, built with line information: each op's `.loc` names
/// the line of this file that recorded it, the module declares this file once, and the
/// kernel assembles with `-lineinfo` and computes what it computes without line information.
#[test]
fn line_info_names_each_ops_rust_line() {
    let build = |line_info: bool| {
        let mut k = KernelBuilder::new("lines").block(64).items_per_thread(2);
        if line_info {
            k = k.lineinfo();
        }
        let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
        let b = k.this_block();
        let load_line = line!() + 1;
        let t = k.load_from(b, &x, Load::direct());
        let map_line = line!() + 1;
        let t = k.map(&t, |v| v * 3u32 + 1u32);
        let store_line = line!() + 1;
        k.store_to(b, &y, &t, Store::direct());
        (
            k.build().expect("builds"),
            [load_line, map_line, store_line],
        )
    };
    let (kernel, lines) = build(true);
    assert_eq!(kernel.ir().options.line_info, LineInfo::RustLines);
    for arch in Arch::ALL {
        let ptx = kernel.ptx(arch).expect("emits");
        let files: Vec<&str> = ptx.lines().filter(|l| l.starts_with(".file")).collect();
        assert_eq!(files, [format!(".file 1 \"{}\"", file!())], "{ptx}");
        for line in lines {
            assert!(ptx.contains(&format!("\t.loc 1 {line} ")), "{line}: {ptx}");
        }
    }
    assemble_all(&kernel);

    let dev = device();
    let xs: Vec<u32> = (0..300).collect();
    let x = dev.upload(&xs).expect("upload");
    let mut y = dev.alloc_zeroed::<u32>(300).expect("alloc");
    let f = dev.compile(&kernel).expect("compile");
    f.launch_over(300, (&x, &mut y)).expect("launch");
    let want: Vec<u32> = xs.iter().map(|v| v * 3 + 1).collect();
    assert_eq!(y.to_vec().expect("download"), want);

    // Without line information: no directives, and the same code otherwise.
    let (plain, _) = build(false);
    let ptx = plain.ptx(Arch::Sm80).expect("emits");
    assert!(!ptx.contains(".file") && !ptx.contains(".loc"));
    let stripped: String = (kernel.ptx(Arch::Sm80).expect("emits").lines())
        .filter(|l| !l.starts_with(".file") && !l.starts_with("\t.loc "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(stripped, ptx);
}

/// The cache key leaves source lines out, except where line information puts them in the PTX.
#[test]
fn line_info_keys_carry_the_source_lines() {
    let a = scale(|k| k).build().expect("builds");
    let b = scale(|k| k).build().expect("builds");
    let with_lines = |k: KernelBuilder| k.lineinfo();
    let c = scale(with_lines).build().expect("builds");
    let d = scale(with_lines).build().expect("builds");
    assert_eq!(a.key(), b.key());
    assert_ne!(a.key(), c.key());
    // Built by the same lines: one kernel.
    assert_eq!(c.key(), d.key());
    // The same ops recorded by other lines.
    let mut k = KernelBuilder::new("scale")
        .block(128)
        .items_per_thread(4)
        .lineinfo();
    let (x, y) = (k.input::<f32>("x"), k.output::<f32>("y"));
    let blk = k.this_block();
    let t = k.load_from(blk, &x, Load::vectorize());
    let t = k.map(&t, |v| v * 2.0f32 + 1.0f32);
    k.store_to(blk, &y, &t, Store::vectorize());
    let e = k.build().expect("builds");
    assert_ne!(c.key(), e.key());
    run_scale(&c);
    run_scale(&e);
}

/// The resource report of a compiled kernel on the default device (the driver's figures on a
/// GPU, ptxas's on the simulator where `COOPGRAPH_PTXAS` names one, as in CI): a register limit
/// holds, a local array shows as local memory, shared memory is the plan's, and the occupancy
/// is the resident blocks' warps over the SM's.
#[test]
fn the_resource_report_gives_registers_memory_and_occupancy() {
    use coopgraph::ir::{Reduce, index};
    use coopgraph::runtime::{Backend, ResourceSource};
    let mut k = (KernelBuilder::new("resources").block(256))
        .items_per_thread(1)
        .max_registers(32);
    let (x, y) = (k.input::<f32>("x"), k.output::<f32>("y"));
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::direct());
    let s = k.reduce(b, &t, Reduce::sum().broadcast());
    let local = k.local_array::<f32>(64);
    k.for_range(0u32, 64u32, |k, i| {
        k.local_write(&local, i.clone(), i.cast::<f32>())
    });
    let picked = local.read(index::thread_rank() % 64u32);
    let s = k.map(&s, move |v| v + picked.clone());
    k.store_to(b, &y, &s, Store::direct());
    let kernel = k.build().expect("builds");
    assemble_all(&kernel);
    let dev = device();
    let f = dev.compile(&kernel).expect("compile");
    let r = f.resources().expect("resources");
    let image = f.image();
    assert_eq!(r.threads_per_block, 256);
    assert_eq!(r.dynamic_shared, image.dynamic_smem);
    let cuda = matches!(dev.backend(), Backend::Cuda { .. });
    let ptxas = std::env::var_os("COOPGRAPH_PTXAS").is_some();
    let want = match (cuda, ptxas) {
        (true, _) => ResourceSource::Driver,
        (false, true) => ResourceSource::Ptxas,
        (false, false) => ResourceSource::Plan,
    };
    assert_eq!(r.source, want);
    // The driver counts what the cubin declares: at least the plan's bytes.
    if cuda {
        assert!(r.static_shared >= image.static_smem, "{r}");
    } else {
        assert_eq!(r.static_shared, image.static_smem);
    }
    if cuda {
        assert_eq!(
            r.max_active_blocks_per_sm,
            f.max_active_blocks_per_sm().expect("occupancy")
        );
    }
    assert!(r.static_shared > 0, "{r}");
    if r.source != ResourceSource::Plan {
        let regs = r.registers.expect("registers");
        assert!((1..=32).contains(&regs), "{r}");
        // The 64 floats of the local array live in local memory.
        assert!(r.local_bytes.expect("local memory") >= 256, "{r}");
    }
    let limits = dev.limits();
    assert!(
        r.max_active_blocks_per_sm >= 1 && r.max_active_blocks_per_sm <= limits.max_blocks_per_sm
    );
    let warps = f64::from(r.max_active_blocks_per_sm * 8);
    let want = (warps / f64::from(limits.max_threads_per_sm / 32)).min(1.0);
    assert!((r.occupancy - want).abs() < 1e-9, "{r}");
    let line = f.explain().expect("explain");
    assert!(
        line.contains("occupancy") && line.contains("blocks per SM"),
        "{line}"
    );
    // Off the device: from ptxas, for each arch, where there is one.
    for arch in Arch::ALL {
        match kernel.resources(arch) {
            Some(r) => {
                assert!(ptxas);
                assert_eq!((r.arch, r.source), (arch, ResourceSource::Ptxas));
                assert!(r.registers.is_some_and(|n| n <= 32), "{r}");
            }
            None => assert!(!ptxas),
        }
    }
    if ptxas {
        assert!(kernel.explain().contains("resources on an H200"));
    }
}

/// Code a loop runs after its body (the latch, the condition again) carries the loop's line,
/// not the line of the body's last op.
#[test]
fn line_info_returns_to_the_enclosing_ops_line() {
    use coopgraph::ir::index;
    let mut k = KernelBuilder::new("loop_lines").block(32).lineinfo();
    let y = k.output::<u32>("y");
    let n = k.scalar::<u32>("n");
    let loop_line = line!() + 1;
    k.for_range(0u32, n, |k, i| {
        let body_line = line!() + 1;
        k.write(&y, i.clone() * 32u32 + index::thread_rank(), i);
        assert!(body_line > loop_line);
    });
    let kernel = k.build().expect("builds");
    assemble_all(&kernel);
    let ptx = kernel.ptx(Arch::Sm80).expect("emits");
    let locs: Vec<u32> = (ptx.lines())
        .filter_map(|l| l.strip_prefix("\t.loc 1 "))
        .filter_map(|l| l.split(' ').next()?.parse().ok())
        .collect();
    // The loop's line, the body's, then the loop's again (for its latch).
    let at = locs
        .iter()
        .position(|&l| l == loop_line)
        .expect("the loop's .loc");
    assert_eq!(locs[at + 1], loop_line + 2, "{ptx}");
    assert_eq!(locs[at + 2], loop_line, "{ptx}");
    let dev = device();
    let mut yb = dev.alloc_zeroed::<u32>(96).expect("alloc");
    let f = dev.compile(&kernel).expect("compile");
    f.launch_grid(1, (&mut yb, 3u32)).expect("launch");
    let want: Vec<u32> = (0..96).map(|e| e / 32).collect();
    assert_eq!(yb.to_vec().expect("download"), want);
}

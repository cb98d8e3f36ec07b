//! Printing from kernels: every dtype and format, the simulator's text in thread order
//! against the same text formatted on the host, and a typed error at the user's line for each
//! bad format. The kernels run on the default device (on a GPU their lines go to standard
//! output through `vprintf`) and are assembled for every arch.

use super::common::{Batch, device};
use coopgraph::ir::{PrintProblem, PrintSpec, VerifyErrorKind, index};
use coopgraph::runtime::{Device, LaunchConfig, SimOptions};
use coopgraph::{Error, Kernel, KernelBuilder};

fn built(k: KernelBuilder, batch: &mut Batch) -> Kernel {
    let name = k.ir().name.clone();
    let kernel = k.build().unwrap_or_else(|e| panic!("{name}: {e}"));
    batch.add(&kernel);
    kernel
}

/// A simulator that keeps what kernels print instead of writing it out.
fn capturing() -> Device {
    Device::sim_with(SimOptions {
        capture_prints: true,
        ..SimOptions::default()
    })
}

/// Runs `kernel` over `blocks` blocks with no arguments on the default device and, where that
/// is a simulator, on a capturing one too; returns the captured text.
fn printed(kernel: &Kernel, blocks: u32) -> String {
    let dev = device();
    dev.compile(kernel)
        .unwrap()
        .launch_grid(blocks, ())
        .unwrap();
    dev.synchronize().unwrap();
    let sim = capturing();
    let report = sim
        .compile(kernel)
        .unwrap()
        .launch_with_report(LaunchConfig::blocks(blocks), ())
        .unwrap()
        .expect("the simulator reports");
    report.printed
}

#[test]
fn every_dtype_prints_as_the_host_formats_it_in_thread_order() {
    let mut batch = Batch::default();
    let mut k = KernelBuilder::new("print_dtypes").block(64);
    let t = index::thread_rank();
    let b = index::block_index();
    let s = t.cast::<i32>() - 30i32;
    k.print(
        "b{} t{}: {} {} {} {} | {} {} {} {} | {} {}",
        (
            &b,
            &t,
            s.cast::<i8>() * 4i8,
            s.cast::<i16>() * 1000i16,
            s.clone() * 70_000i32,
            s.cast::<i64>() * 5_000_000_000i64,
            t.cast::<u8>() * 7u8,
            t.cast::<u16>() * 1001u16,
            t.clone() * 67_108_864u32,
            t.cast::<u64>() * 300_000_000_000u64,
            s.cast::<f32>() / 7.0f32,
            s.cast::<f64>() * 1e10 / 3.0,
        ),
    );
    let kernel = built(k, &mut batch);
    let got = printed(&kernel, 2);
    let mut want = String::new();
    for b in 0..2u32 {
        for t in 0..64u32 {
            let s = t as i32 - 30;
            want += &format!(
                "b{b} t{t}: {} {} {} {} | {} {} {} {} | {:.6} {:.6}\n",
                (s as i8).wrapping_mul(4),
                (s as i16).wrapping_mul(1000),
                s.wrapping_mul(70_000),
                s as i64 * 5_000_000_000,
                (t as u8).wrapping_mul(7),
                (t as u16).wrapping_mul(1001),
                t.wrapping_mul(67_108_864),
                t as u64 * 300_000_000_000,
                f64::from(s as f32 / 7.0),
                s as f64 * 1e10 / 3.0,
            );
        }
    }
    assert_eq!(got, want);
}

#[test]
fn formats_hex_scientific_decimals_and_braces() {
    let mut batch = Batch::default();
    let mut k = KernelBuilder::new("print_formats").block(32);
    let t = index::thread_rank();
    k.if_(t.lt(3u32), |k| {
        let s = t.cast::<i8>() - 1i8;
        let x = t.cast::<f32>() * 1.5f32 - 0.25f32;
        let y = t.cast::<f64>() * -123.456;
        k.print(
            "{{{}}} {:x} {:x} {:x} {:e} {:.2} {:.0} {:e} 100%",
            (
                &t,
                s,
                t.cast::<u64>() * 0x1_0000_0001u64,
                t.cast::<i16>() - 1i16,
                x.clone(),
                x,
                y.clone(),
                y,
            ),
        );
    });
    k.print("done", ());
    let kernel = built(k, &mut batch);
    let got = printed(&kernel, 1);
    let want = "{0} ff 0 ffff -2.500000e-01 -0.25 -0 -0.000000e+00 100%\ndone\n\
                {1} 0 100000001 0 1.250000e+00 1.25 -123 -1.234560e+02 100%\ndone\n\
                {2} 1 200000002 1 2.750000e+00 2.75 -247 -2.469120e+02 100%\ndone\n"
        .to_string()
        + &"done\n".repeat(29);
    assert_eq!(got, want);
}

#[test]
fn prints_keep_each_threads_order_across_loops_and_blocks() {
    let mut batch = Batch::default();
    let mut k = KernelBuilder::new("print_order").block(64);
    let t = index::thread_rank();
    k.for_range(0u32, 2u32, |k, j| {
        k.if_((t.clone() % 16u32).eq(0u32), |k| {
            k.print("block {} thread {} step {}", (index::block_index(), &t, &j));
        });
        k.sync_block();
    });
    let kernel = built(k, &mut batch);
    let got = printed(&kernel, 3);
    let mut want = String::new();
    for b in 0..3 {
        for t in (0..64).step_by(16) {
            for j in 0..2 {
                want += &format!("block {b} thread {t} step {j}\n");
            }
        }
    }
    assert_eq!(got, want);
}

/// The verifier's errors of a build, as (kind, line).
fn errors(k: KernelBuilder) -> Vec<(VerifyErrorKind, u32)> {
    match k.build() {
        Err(Error::Verify(e)) => e.errors.into_iter().map(|e| (e.kind, e.loc.line)).collect(),
        Err(other) => panic!("expected verifier errors, got {other}"),
        Ok(_) => panic!("the kernel built"),
    }
}

#[test]
fn bad_formats_are_errors_at_their_line() {
    let mut k = KernelBuilder::new("print_bad").block(32);
    let t = index::thread_rank();
    let x = t.cast::<f32>();
    let first = line!() + 1;
    k.print("{} {}", (&t,));
    k.print("{}", (&t, &t));
    k.print("{:x}", (&x,));
    k.print("{:e} {:.3}", (&t, &t));
    k.print("{", (&t,));
    k.print("a }", ());
    k.print("{:?}", (&t,));
    k.print("", (&t,));
    let got = errors(k);
    use PrintProblem as P;
    let want = vec![
        P::Count {
            placeholders: 2,
            values: 1,
        },
        P::Count {
            placeholders: 1,
            values: 2,
        },
        P::SpecType {
            value: 0,
            spec: PrintSpec::Hex,
            dtype: coopgraph::ir::DType::F32,
        },
        P::SpecType {
            value: 0,
            spec: PrintSpec::Exp,
            dtype: coopgraph::ir::DType::U32,
        },
        P::SpecType {
            value: 1,
            spec: PrintSpec::Fixed(3),
            dtype: coopgraph::ir::DType::U32,
        },
        P::UnmatchedBrace { at: 0 },
        P::UnmatchedBrace { at: 2 },
        P::UnknownSpec {
            at: 0,
            spec: ":?".into(),
        },
        P::Count {
            placeholders: 0,
            values: 1,
        },
    ];
    let lines = [0, 1, 2, 3, 3, 4, 5, 6, 7].map(|l| first + l);
    let want: Vec<(VerifyErrorKind, u32)> = (want.into_iter())
        .map(VerifyErrorKind::PrintFormat)
        .zip(lines)
        .collect();
    assert_eq!(got, want);
}

//! The math library's `f64` functions: accuracy against Rust's `std` (the platform's libm)
//! over dense sweeps and special values, the simulator against the default device bit for
//! bit, and the sweeps written out for a higher-precision check.
//!
//! The sweeps hold 2048 arguments per kind in CI; `COOPGRAPH_MATH_SWEEP=n` sets `n`. With
//! `COOPGRAPH_MATH_DUMP=dir`, each function's arguments and results are written to
//! `dir/NAME.txt` (one `x [y] result` line of hexadecimal bits each), which
//! `tools/math-ulp.py` measures against 60-digit references.

use crate::math::run;
use coopgraph::ir::Expr;
use coopgraph::runtime::Device;
use coopgraph::{Kernel, KernelBuilder, Load, Store};
use std::fmt::Write as _;

// The platform's C math library (which Rust's `std` links): glibc documents its `erf` and
// `erfc` within 1 and 2 ulp.
unsafe extern "C" {
    #[link_name = "erf"]
    safe fn c_erf(x: f64) -> f64;
    #[link_name = "erfc"]
    safe fn c_erfc(x: f64) -> f64;
}

/// A function of one `f64` expression.
type F64Fn = fn(Expr<f64>) -> Expr<f64>;

/// An f64 function of the library and its reference.
struct Unary {
    name: &'static str,
    f: F64Fn,
    reference: fn(f64) -> f64,
    /// Where the function is not flat: a dense linear sweep covers it.
    range: (f64, f64),
    /// The most difference allowed from the reference, in ulps: the function's error (the
    /// table of `coopgraph::ir::math`, measured against 60-digit references) plus the
    /// reference's own (the platform's libm: glibc 2.36 is within 1 ulp for most, but reaches
    /// 2 for `log10`, 1.73 for `tanh` at -0.2271, 1.56 for `sinh` and `cosh` at 710.45 and
    /// 2.57 for `erfc` at 1.2358).
    bound: f64,
}

fn unaries() -> Vec<Unary> {
    let u = |name, f, reference, range, bound| Unary {
        name,
        f,
        reference,
        range,
        bound,
    };
    vec![
        u(
            "exp",
            |x: Expr<f64>| x.exp(),
            f64::exp as fn(f64) -> f64,
            (-746.0, 710.0),
            1.0,
        ),
        u("exp2", |x| x.exp2(), f64::exp2, (-1076.0, 1025.0), 1.0),
        u(
            "exp10",
            |x| x.exp10(),
            |x| 10f64.powf(x),
            (-324.0, 309.0),
            1.0,
        ),
        u("ln", |x| x.ln(), f64::ln, (0.0, 4.0), 1.0),
        u("log2", |x| x.log2(), f64::log2, (0.0, 4.0), 1.0),
        u("log10", |x| x.log10(), f64::log10, (0.0, 4.0), 2.5),
        u("sin", |x| x.sin(), f64::sin, (-20.0, 20.0), 1.0),
        u("cos", |x| x.cos(), f64::cos, (-20.0, 20.0), 1.0),
        u("tan", |x| x.tan(), f64::tan, (-20.0, 20.0), 1.0),
        u("asin", |x| x.asin(), f64::asin, (-1.0, 1.0), 1.0),
        u("acos", |x| x.acos(), f64::acos, (-1.0, 1.0), 1.0),
        u("atan", |x| x.atan(), f64::atan, (-8.0, 8.0), 1.0),
        u("sinh", |x| x.sinh(), f64::sinh, (-712.0, 712.0), 2.5),
        u("cosh", |x| x.cosh(), f64::cosh, (-712.0, 712.0), 2.5),
        u("tanh", |x| x.tanh(), f64::tanh, (-20.0, 20.0), 2.5),
        u("exp_m1", |x| x.exp_m1(), f64::exp_m1, (-40.0, 710.0), 1.0),
        u("ln_1p", |x| x.ln_1p(), f64::ln_1p, (-1.0, 4.0), 1.0),
        u("cbrt", |x| x.cbrt(), f64::cbrt, (-8.0, 8.0), 1.0),
        u("erf", |x| x.erf(), |x| c_erf(x), (-6.0, 6.0), 1.0),
        u("erfc", |x| x.erfc(), |x| c_erfc(x), (-6.0, 28.0), 3.5),
        u("rsqrt", |x| x.rsqrt(), |x| 1.0 / x.sqrt(), (0.0, 4.0), 1.0),
    ]
}

/// An f64 function of two operands and its reference.
struct Binary {
    name: &'static str,
    f: fn(Expr<f64>, Expr<f64>) -> Expr<f64>,
    reference: fn(f64, f64) -> f64,
    bound: f64,
}

fn binaries() -> Vec<Binary> {
    let b = |name, f, reference, bound| Binary {
        name,
        f,
        reference,
        bound,
    };
    vec![
        b(
            "atan2",
            |y: Expr<f64>, x: Expr<f64>| y.atan2(x),
            f64::atan2 as fn(f64, f64) -> f64,
            1.0,
        ),
        b("hypot", |x, y| x.hypot(y), f64::hypot, 1.0),
        b("pow", |x, y| x.pow(y), f64::powf, 1.0),
        // The exponent: the second operand's integer part.
        b(
            "powi",
            |x, n| x.powi(n.cast::<i32>()),
            |x, n| x.powf(f64::from(n as i32)),
            1.0,
        ),
    ]
}

/// The number of arguments of each kind in a sweep.
fn sweep_size(ci: usize) -> usize {
    std::env::var("COOPGRAPH_MATH_SWEEP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ci)
}

/// The kernel computing `f` element by element, at a block size that is not a multiple of
/// 32 (so the last warp and the last tile are partial).
fn unary_kernel(name: &str, f: F64Fn) -> Kernel {
    let mut k = KernelBuilder::new(name).block(100).items_per_thread(2);
    let (x, y) = (k.input::<f64>("x"), k.output::<f64>("y"));
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::direct());
    let r = k.map(&t, f);
    k.store_to(b, &y, &r, Store::direct());
    k.build().expect("builds")
}

/// The kernel computing `f` of two inputs element by element.
fn binary_kernel(name: &str, f: fn(Expr<f64>, Expr<f64>) -> Expr<f64>) -> Kernel {
    let mut k = KernelBuilder::new(name).block(100).items_per_thread(2);
    let (x, y) = (k.input::<f64>("x"), k.input::<f64>("y"));
    let out = k.output::<f64>("out");
    let b = k.this_block();
    let tx = k.load_from(b, &x, Load::direct());
    let ty = k.load_from(b, &y, Load::direct());
    let r = k.map2(&tx, &ty, f);
    k.store_to(b, &out, &r, Store::direct());
    k.build().expect("builds")
}

/// `f` over the pairs on `dev`.
fn run2(dev: &Device, kernel: &Kernel, xs: &[f64], ys: &[f64]) -> Vec<f64> {
    let xb = dev.upload(xs).expect("upload");
    let yb = dev.upload(ys).expect("upload");
    let mut ob = dev.alloc_zeroed::<f64>(xs.len()).expect("alloc");
    dev.compile(kernel)
        .expect("compiles")
        .launch_over(xs.len(), (&xb, &yb, &mut ob))
        .expect("launches");
    ob.to_vec().expect("reads back")
}

/// Special values, then `n` values spread over every double (by bits, both signs), then `n`
/// spread linearly over `range`.
fn sweep(range: (f64, f64), n: usize) -> Vec<f64> {
    let mut xs = vec![
        0.0f64,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        f64::MIN_POSITIVE,
        -f64::MIN_POSITIVE,
        5e-324,
        -5e-324,
        f64::MAX,
        f64::MIN,
        1.0,
        -1.0,
        0.5,
        -0.5,
        1.0 - f64::EPSILON / 2.0,
        1.0 + f64::EPSILON,
    ];
    let step = (0x7ff0_0000_0000_0000u64 / n as u64).max(1);
    for i in 0..n as u64 {
        let b = i
            .wrapping_mul(step)
            .wrapping_add(i.wrapping_mul(0x9e37_79b9) % 4099);
        let x = f64::from_bits(b.min(0x7fef_ffff_ffff_ffff));
        xs.push(if i % 2 == 0 { x } else { -x });
    }
    for i in 0..n {
        let t = (i as f64 + 0.37) / n as f64;
        xs.push(range.0 + (range.1 - range.0) * t);
    }
    xs
}

/// The error of `got` in ulps of the double nearest to `want` (the ulp of the smallest
/// normal below it).
fn ulps(got: f64, want: f64) -> f64 {
    if want.is_nan() || got.is_nan() {
        return if want.is_nan() && got.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if want.is_infinite() || got.is_infinite() {
        return if got == want { 0.0 } else { f64::INFINITY };
    }
    let e = want.abs().max(f64::MIN_POSITIVE).log2().floor();
    let ulp = 2f64.powf(e - 52.0);
    // The difference of two doubles near each other is exact.
    (got - want).abs() / ulp
}

/// Pairs: every two of some special values, then pseudo-random ones over a few scales.
fn pairs(n: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let special = [
        0.0f64,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -2.0,
        3.0,
        -3.0,
        2.5,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        1e-310,
        f64::MAX,
    ];
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for &a in &special {
        for &b in &special {
            xs.push(a);
            ys.push(b);
        }
    }
    let mut rng = crate::common::Rng::new(seed);
    for i in 0..n {
        let scale = [1.0f64, 8.0, 100.0, 1e10, 1e-10, 1e200][i % 6];
        let mut v = || ((rng.next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * scale;
        let x = v();
        let y = v();
        xs.push(x);
        ys.push(y);
    }
    (xs, ys)
}

/// The pairs of a binary function's sweep: exponents of `pow`/`powi` folded into `[-64, 64]`
/// (for the larger scales, `[-1100, 1100]`) so that results stay in range for many pairs.
fn binary_pairs(name: &str, n: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let (xs, ys) = pairs(n, seed);
    let ys = if name == "pow" || name == "powi" {
        ys.iter()
            .enumerate()
            .map(|(i, y)| {
                let m = if i % 2 == 0 { 64.0 } else { 1100.0 };
                if y.abs() > m { y % m } else { *y }
            })
            .collect()
    } else {
        ys
    };
    (xs, ys)
}

/// Writes a sweep for `tools/math-ulp.py` where `COOPGRAPH_MATH_DUMP` names a folder.
fn dump(name: &str, cols: &[&[f64]]) {
    let Ok(dir) = std::env::var("COOPGRAPH_MATH_DUMP") else {
        return;
    };
    let mut text = String::new();
    for i in 0..cols[0].len() {
        let line: Vec<String> = cols
            .iter()
            .map(|c| format!("{:016x}", c[i].to_bits()))
            .collect();
        let _ = writeln!(text, "{}", line.join(" "));
    }
    let path = std::path::Path::new(&dir).join(format!("{name}.txt"));
    std::fs::write(&path, text).expect("write the sweep");
}

#[test]
fn f64_functions_within_their_ulp_bounds() {
    let dev = Device::sim();
    let n = sweep_size(2048);
    let mut failed = Vec::new();
    for u in unaries() {
        let kernel = unary_kernel(u.name, u.f);
        let xs = sweep(u.range, n);
        let got = run(&dev, &kernel, &xs);
        dump(u.name, &[&xs, &got]);
        let (mut e, mut at) = (0.0f64, 0.0f64);
        for (&x, &g) in xs.iter().zip(&got) {
            let want = (u.reference)(x);
            // Zeros keep the sign IEEE gives them (sin(-0) = -0, cos(-0) = 1, ...).
            if want == 0.0 && g.to_bits() != want.to_bits() {
                failed.push(format!("{}({x:e}) = {g:e}, want {want:e}", u.name));
            }
            let err = ulps(g, want);
            if err > e {
                (e, at) = (err, x);
            }
        }
        println!("{:8} {e:6.3} ulp at {at:e}", u.name);
        if e > u.bound {
            failed.push(format!("{}: {e} ulp at {at:e} (bound {})", u.name, u.bound));
        }
    }
    for b in binaries() {
        let kernel = binary_kernel(b.name, b.f);
        let (xs, ys) = binary_pairs(b.name, n, 7);
        let got = run2(&dev, &kernel, &xs, &ys);
        dump(b.name, &[&xs, &ys, &got]);
        let mut worst = (0.0f64, 0.0f64, 0.0f64);
        for ((&x, &y), &g) in xs.iter().zip(&ys).zip(&got) {
            let e = ulps(g, (b.reference)(x, y));
            if e > worst.0 {
                worst = (e, x, y);
            }
        }
        println!(
            "{:8} {:6.3} ulp at ({:e}, {:e})",
            b.name, worst.0, worst.1, worst.2
        );
        if worst.0 > b.bound {
            failed.push(format!(
                "{}: {} ulp at {:?} (bound {})",
                b.name,
                worst.0,
                (worst.1, worst.2),
                b.bound
            ));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}

#[test]
fn f64_functions_give_the_same_bits_on_the_device_and_the_simulator() {
    let (sim, dev) = (Device::sim(), crate::common::device());
    let n = sweep_size(2048);
    for u in unaries() {
        let kernel = unary_kernel(u.name, u.f);
        let xs = sweep(u.range, n);
        let (a, b) = (run(&sim, &kernel, &xs), run(dev, &kernel, &xs));
        for ((x, a), b) in xs.iter().zip(&a).zip(&b) {
            assert!(
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                "{} at {x:e}: simulator {a:e}, device {b:e}",
                u.name
            );
        }
    }
    for f in binaries() {
        let kernel = binary_kernel(f.name, f.f);
        let (xs, ys) = binary_pairs(f.name, n, 11);
        let (a, b) = (run2(&sim, &kernel, &xs, &ys), run2(dev, &kernel, &xs, &ys));
        for (i, (a, b)) in a.iter().zip(&b).enumerate() {
            assert!(
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                "{} at ({:e}, {:e}): simulator {a:e}, device {b:e}",
                f.name,
                xs[i],
                ys[i]
            );
        }
    }
}

#[test]
fn f64_kernels_use_no_approximate_instruction_and_assemble() {
    let mut batch = crate::common::Batch::default();
    for u in unaries() {
        let kernel = unary_kernel(&format!("acc64_{}", u.name), u.f);
        let ptx = kernel.ptx(coopgraph::ptx::Arch::ALL[0]).expect("emits");
        assert!(!ptx.contains(".approx"), "{}: {ptx}", u.name);
        batch.add(&kernel);
    }
    for f in binaries() {
        batch.add(&binary_kernel(&format!("acc64_{}", f.name), f.f));
    }
    batch.finish();
}

#[test]
fn f64_special_values_follow_ieee() {
    let dev = Device::sim();
    let (inf, nan) = (f64::INFINITY, f64::NAN);
    // (function, argument, exact result).
    let cases: Vec<(&str, F64Fn, f64, f64)> = vec![
        ("exp", |x| x.exp(), 0.0, 1.0),
        ("exp", |x| x.exp(), -inf, 0.0),
        ("exp", |x| x.exp(), inf, inf),
        ("exp", |x| x.exp(), 710.0, inf),
        ("exp", |x| x.exp(), -746.0, 0.0),
        ("exp2", |x| x.exp2(), -1074.0, 5e-324),
        ("exp2", |x| x.exp2(), 1023.0, 2f64.powi(1023)),
        ("exp2", |x| x.exp2(), 1024.0, inf),
        ("exp10", |x| x.exp10(), 2.0, 100.0),
        ("ln", |x| x.ln(), 1.0, 0.0),
        ("ln", |x| x.ln(), 0.0, -inf),
        ("ln", |x| x.ln(), -0.0, -inf),
        ("ln", |x| x.ln(), inf, inf),
        ("log2", |x| x.log2(), 5e-324, -1074.0),
        ("log2", |x| x.log2(), 2f64.powi(1023), 1023.0),
        ("log10", |x| x.log10(), 1000.0, 3.0),
        ("log10", |x| x.log10(), 1e-300, -300.0),
    ];
    for (name, f, x, want) in cases {
        let got = run(&dev, &unary_kernel(name, f), &[x])[0];
        assert_eq!(
            got.to_bits(),
            want.to_bits(),
            "{name}({x:e}) = {got:e}, want {want:e}"
        );
    }
    for (name, f) in [
        ("ln", (|x: Expr<f64>| x.ln()) as F64Fn),
        ("exp", |x| x.exp()),
    ] {
        let got = run(&dev, &unary_kernel(name, f), &[nan, -1.0]);
        assert!(got[0].is_nan(), "{name}(NaN) = {}", got[0]);
        assert!(name != "ln" || got[1].is_nan(), "ln(-1) = {}", got[1]);
    }
    let pow = binary_kernel("pow", |x, y| x.pow(y));
    let cases = [
        (nan, 0.0, 1.0),
        (1.0, nan, 1.0),
        (-1.0, inf, 1.0),
        (0.0, -3.0, inf),
        (-0.0, -3.0, -inf),
        (-0.0, 3.0, -0.0),
        (-inf, 3.0, -inf),
        (-inf, -3.0, -0.0),
        (-8.0, 1.0 / 3.0, nan),
        (-2.0, 3.0, -8.0),
        (0.5, inf, 0.0),
        (0.5, -inf, inf),
        (2.0, -1075.0, 0.0),
        (2.0, -1074.0, 5e-324),
        (10.0, 308.0, 1e308),
    ];
    let xs: Vec<f64> = cases.iter().map(|c| c.0).collect();
    let ys: Vec<f64> = cases.iter().map(|c| c.1).collect();
    for (c, got) in cases.iter().zip(run2(&dev, &pow, &xs, &ys)) {
        assert!(
            got.to_bits() == c.2.to_bits() || (got.is_nan() && c.2.is_nan()),
            "pow({:e}, {:e}) = {got:e}, want {:e}",
            c.0,
            c.1,
            c.2
        );
    }
}

#[test]
fn f64_trigonometry_reduces_huge_arguments_exactly() {
    let dev = Device::sim();
    // (x, sin x, cos x, tan x), the values rounded from 800-digit references; the second
    // argument is the double closest to a multiple of π/2 (its reduced argument is 2^-61).
    let cases = [
        (
            1e22,
            -0.8522008497671888,
            0.523214785395139,
            -1.6287782256068988,
        ),
        (
            5.319372648326541e255,
            1.0,
            -4.687165924254628e-19,
            -2.133485385753704e18,
        ),
        (
            f64::MAX,
            0.004961954789184062,
            -0.9999876894265599,
            -0.004962015874444895,
        ),
        (
            1073741824.5,
            -0.16458741069886315,
            0.9863625014361829,
            -0.1668630046856175,
        ),
    ];
    let fs: [(&str, F64Fn); 3] = [
        ("sin", |x| x.sin()),
        ("cos", |x| x.cos()),
        ("tan", |x| x.tan()),
    ];
    for (i, (name, f)) in fs.into_iter().enumerate() {
        let kernel = unary_kernel(name, f);
        let xs: Vec<f64> = cases.iter().flat_map(|c| [c.0, -c.0]).collect();
        let got = run(&dev, &kernel, &xs);
        for (k, c) in cases.iter().enumerate() {
            let want = [c.1, c.2, c.3][i];
            // sin and tan are odd, cos even.
            let want_neg = if i == 1 { want } else { -want };
            for (g, w) in [(got[2 * k], want), (got[2 * k + 1], want_neg)] {
                assert!(ulps(g, w) <= 1.0, "{name}({:e}) = {g:e}, want {w:e}", c.0);
            }
        }
    }
}

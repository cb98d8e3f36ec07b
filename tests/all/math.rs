//! The math library: accuracy of every f32 function against an f64 reference over dense
//! sweeps and special values, the simulator against the default device bit for bit, and
//! `fastmath` within its tolerances.

use crate::common::{erf, erfc};
use coopgraph::ir::{Expr, MathMode};
use coopgraph::runtime::Device;
use coopgraph::{Kernel, KernelBuilder, Load, Store};

/// An f32 function of the library and its f64 reference.
struct Unary {
    name: &'static str,
    f: fn(Expr<f32>) -> Expr<f32>,
    reference: fn(f64) -> f64,
    /// Where the function is not flat: a dense linear sweep covers it.
    range: (f64, f64),
    /// The most error allowed, in ulps (the table of `coopgraph::ir::math`).
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
            |x: Expr<f32>| x.exp(),
            f64::exp as fn(f64) -> f64,
            (-104.0, 89.0),
            1.0,
        ),
        u("exp2", |x| x.exp2(), f64::exp2, (-151.0, 129.0), 1.0),
        u(
            "exp10",
            |x| x.exp10(),
            |x| 10f64.powf(x),
            (-46.0, 39.0),
            0.55,
        ),
        u("exp_m1", |x| x.exp_m1(), f64::exp_m1, (-20.0, 89.0), 0.55),
        u("ln", |x| x.ln(), f64::ln, (0.0, 4.0), 1.0),
        u("log2", |x| x.log2(), f64::log2, (0.0, 4.0), 1.0),
        u("log10", |x| x.log10(), f64::log10, (0.0, 4.0), 1.0),
        u("ln_1p", |x| x.ln_1p(), f64::ln_1p, (-1.0, 4.0), 0.55),
        u("sin", |x| x.sin(), f64::sin, (-20.0, 20.0), 1.5),
        u("cos", |x| x.cos(), f64::cos, (-20.0, 20.0), 1.5),
        u("tan", |x| x.tan(), f64::tan, (-20.0, 20.0), 2.6),
        u("asin", |x| x.asin(), f64::asin, (-1.0, 1.0), 0.55),
        u("acos", |x| x.acos(), f64::acos, (-1.0, 1.0), 0.55),
        u("atan", |x| x.atan(), f64::atan, (-8.0, 8.0), 0.55),
        u("sinh", |x| x.sinh(), f64::sinh, (-90.0, 90.0), 0.55),
        u("cosh", |x| x.cosh(), f64::cosh, (-90.0, 90.0), 0.55),
        u("tanh", |x| x.tanh(), f64::tanh, (-10.0, 10.0), 0.55),
        u("cbrt", |x| x.cbrt(), f64::cbrt, (-8.0, 8.0), 0.55),
        u("erf", |x| x.erf(), erf, (-5.0, 5.0), 0.55),
        u("erfc", |x| x.erfc(), erfc, (-5.0, 11.0), 0.6),
        u("rsqrt", |x| x.rsqrt(), |x| 1.0 / x.sqrt(), (0.0, 4.0), 0.55),
    ]
}

/// The kernel computing `f` element by element.
fn unary_kernel(name: &str, f: fn(Expr<f32>) -> Expr<f32>, mode: MathMode) -> Kernel {
    let mut k = KernelBuilder::new(name).block(256).items_per_thread(2);
    if mode == MathMode::Fast {
        k = k.fastmath();
    }
    let (x, y) = (k.input::<f32>("x"), k.output::<f32>("y"));
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::direct());
    let r = k.map(&t, f);
    k.store_to(b, &y, &r, Store::direct());
    k.build().expect("builds")
}

/// A kernel of one input and one output (of `f32` here, of `f64` in `math64`) over `xs` on
/// `dev`.
pub(crate) fn run<T: coopgraph::runtime::DeviceElement + Copy>(
    dev: &Device,
    kernel: &Kernel,
    xs: &[T],
) -> Vec<T> {
    let xb = dev.upload(xs).expect("upload");
    let mut yb = dev.alloc_zeroed::<T>(xs.len()).expect("alloc");
    dev.compile(kernel)
        .expect("compiles")
        .launch_over(xs.len(), (&xb, &mut yb))
        .expect("launches");
    yb.to_vec().expect("reads back")
}

/// Special values, then `n` values spread over every float (by bits, both signs), then `n`
/// spread linearly over `range`.
fn sweep(range: (f64, f64), n: usize) -> Vec<f32> {
    let mut xs = vec![
        0.0f32,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        1e-45,
        -1e-45,
        f32::MAX,
        f32::MIN,
        1.0,
        -1.0,
        0.5,
        -0.5,
    ];
    let step = (0x7f80_0000u64 / n as u64).max(1) as u32;
    for i in 0..n as u32 {
        let b = i.wrapping_mul(step).wrapping_add(i % 7);
        let x = f32::from_bits(b.min(0x7f7f_ffff));
        xs.push(if i % 2 == 0 { x } else { -x });
    }
    for i in 0..n {
        let t = i as f64 / n as f64;
        xs.push((range.0 + (range.1 - range.0) * t) as f32);
    }
    xs
}

/// The error of `got` in ulps of the f32 result nearest to `want`.
fn ulps(got: f32, want: f64) -> f64 {
    if want.is_nan() || got.is_nan() {
        return if want.is_nan() && got.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    let rounded = want as f32;
    if rounded.is_infinite() || got.is_infinite() {
        return if got == rounded { 0.0 } else { f64::INFINITY };
    }
    let e = (want.abs().max(f64::from(f32::MIN_POSITIVE)))
        .log2()
        .floor();
    let ulp = 2f64.powf(e - 23.0);
    (f64::from(got) - want).abs() / ulp
}

/// The largest error over `xs`, and where.
fn worst(xs: &[f32], got: &[f32], reference: fn(f64) -> f64) -> (f64, f32) {
    xs.iter()
        .zip(got)
        .map(|(&x, &y)| (ulps(y, reference(f64::from(x))), x))
        .fold((0.0, 0.0), |a, b| if b.0 > a.0 { b } else { a })
}

/// An f32 function of two operands and its f64 reference.
struct Binary {
    name: &'static str,
    f: fn(Expr<f32>, Expr<f32>) -> Expr<f32>,
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
            |y: Expr<f32>, x: Expr<f32>| y.atan2(x),
            f64::atan2 as fn(f64, f64) -> f64,
            0.55,
        ),
        b("pow", |x, y| x.pow(y), f64::powf, 0.55),
        b("hypot", |x, y| x.hypot(y), f64::hypot, 0.55),
        // The exponent: the second operand's integer part.
        b(
            "powi",
            |x, n| x.powi(n.cast::<i32>()),
            |x, n| x.powi(n as i32),
            0.55,
        ),
    ]
}

/// The kernel computing `f` of two inputs element by element.
fn binary_kernel(name: &str, f: fn(Expr<f32>, Expr<f32>) -> Expr<f32>) -> Kernel {
    let mut k = KernelBuilder::new(name).block(256).items_per_thread(2);
    let (x, y) = (k.input::<f32>("x"), k.input::<f32>("y"));
    let out = k.output::<f32>("out");
    let b = k.this_block();
    let tx = k.load_from(b, &x, Load::direct());
    let ty = k.load_from(b, &y, Load::direct());
    let r = k.map2(&tx, &ty, f);
    k.store_to(b, &out, &r, Store::direct());
    k.build().expect("builds")
}

/// `f` over the pairs on `dev`.
fn run2(dev: &Device, kernel: &Kernel, xs: &[f32], ys: &[f32]) -> Vec<f32> {
    let xb = dev.upload(xs).expect("upload");
    let yb = dev.upload(ys).expect("upload");
    let mut ob = dev.alloc_zeroed::<f32>(xs.len()).expect("alloc");
    dev.compile(kernel)
        .expect("compiles")
        .launch_over(xs.len(), (&xb, &yb, &mut ob))
        .expect("launches");
    ob.to_vec().expect("reads back")
}

/// Pairs: every two of some special values, then pseudo-random ones over a few scales.
fn pairs(n: usize, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let special = [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -2.0,
        3.0,
        -3.0,
        2.5,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1e-40,
        f32::MAX,
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
        let scale = [1.0f32, 8.0, 100.0, 1e10, 1e-10][i % 5];
        let mut v = || (rng.next() as u32 as f32 / u32::MAX as f32 * 2.0 - 1.0) * scale;
        let x = v();
        let y = v();
        xs.push(x);
        ys.push(y);
    }
    (xs, ys)
}

/// The unary sweeps and each function's largest error.
fn measure_unaries(dev: &Device, n: usize) -> Vec<(&'static str, f64, f32, f64)> {
    unaries()
        .into_iter()
        .map(|u| {
            let kernel = unary_kernel(u.name, u.f, MathMode::Accurate);
            let xs = sweep(u.range, n);
            let got = run(dev, &kernel, &xs);
            let (e, at) = worst(&xs, &got, u.reference);
            (u.name, e, at, u.bound)
        })
        .collect()
}

/// Each function's largest error over its sweeps, against its bound. On the default device
/// (the simulator unless `COOPGRAPH_DEVICE` says otherwise) with `COOPGRAPH_MATH_SWEEP`
/// arguments per part of a sweep (default 8192): the GPU run uses 2^20, beside
/// `benches/cub/math_ulp.cu` (nvcc's functions over the same arguments).
#[test]
fn f32_functions_within_their_ulp_bounds() {
    let dev = Device::default_device().expect("a device");
    let n = std::env::var("COOPGRAPH_MATH_SWEEP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8192);
    let mut failed = Vec::new();
    for (name, e, at, bound) in measure_unaries(&dev, n) {
        println!("{name:8} {e:6.3} ulp at {at:e}");
        if e > bound {
            failed.push(format!("{name}: {e} ulp at {at:e} (bound {bound})"));
        }
    }
    for b in binaries() {
        let kernel = binary_kernel(b.name, b.f);
        let (xs, ys) = pairs(8192, 7);
        // pow's exponents scaled so that results stay in range for some of the pairs.
        let ys: Vec<f32> = if b.name == "pow" || b.name == "powi" {
            ys.iter()
                .map(|y| if y.abs() > 64.0 { y % 64.0 } else { *y })
                .collect()
        } else {
            ys
        };
        let got = run2(&dev, &kernel, &xs, &ys);
        let mut worst = (0.0f64, 0.0f32, 0.0f32);
        for ((&x, &y), &g) in xs.iter().zip(&ys).zip(&got) {
            let e = ulps(g, (b.reference)(f64::from(x), f64::from(y)));
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
fn f32_functions_give_the_same_bits_on_the_device_and_the_simulator() {
    let (sim, dev) = (Device::sim(), crate::common::device());
    for u in unaries() {
        let kernel = unary_kernel(u.name, u.f, MathMode::Accurate);
        let xs = sweep(u.range, 2048);
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
        let (xs, ys) = pairs(1024, 11);
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
fn accurate_kernels_use_no_approximate_instruction_and_assemble() {
    let mut batch = crate::common::Batch::default();
    for u in unaries() {
        let kernel = unary_kernel(&format!("acc_{}", u.name), u.f, MathMode::Accurate);
        let ptx = kernel.ptx(coopgraph::ptx::Arch::ALL[0]).expect("emits");
        assert!(!ptx.contains(".approx"), "{}: {ptx}", u.name);
        batch.add(&kernel);
    }
    for f in binaries() {
        batch.add(&binary_kernel(&format!("acc_{}", f.name), f.f));
    }
    batch.finish();
}

/// A fast-math case: the function, its f64 reference, the instruction it uses and the range
/// it is checked over.
type FastCase = (
    &'static str,
    fn(Expr<f32>) -> Expr<f32>,
    fn(f64) -> f64,
    &'static str,
    (f64, f64),
);

/// The fast-math functions.
fn fast_cases() -> Vec<FastCase> {
    vec![
        (
            "sin",
            |x: Expr<f32>| x.sin(),
            f64::sin as fn(f64) -> f64,
            "sin.approx.ftz.f32",
            (-3.1, 3.1),
        ),
        (
            "cos",
            |x| x.cos(),
            f64::cos,
            "cos.approx.ftz.f32",
            (-3.1, 3.1),
        ),
        (
            "tan",
            |x| x.tan(),
            f64::tan,
            "div.approx.ftz.f32",
            (-1.2, 1.2),
        ),
        (
            "exp",
            |x| x.exp(),
            f64::exp,
            "ex2.approx.ftz.f32",
            (-80.0, 80.0),
        ),
        (
            "exp2",
            |x| x.exp2(),
            f64::exp2,
            "ex2.approx.ftz.f32",
            (-120.0, 120.0),
        ),
        (
            "exp10",
            |x| x.exp10(),
            |x| 10f64.powf(x),
            "ex2.approx.ftz.f32",
            (-30.0, 30.0),
        ),
        ("ln", |x| x.ln(), f64::ln, "lg2.approx.ftz.f32", (1e-3, 1e3)),
        (
            "log2",
            |x| x.log2(),
            f64::log2,
            "lg2.approx.ftz.f32",
            (1e-3, 1e3),
        ),
        (
            "log10",
            |x| x.log10(),
            f64::log10,
            "lg2.approx.ftz.f32",
            (1e-3, 1e3),
        ),
        (
            "tanh",
            |x| x.tanh(),
            f64::tanh,
            "tanh.approx.f32",
            (-5.0, 5.0),
        ),
        (
            "rsqrt",
            |x| x.rsqrt(),
            |x| 1.0 / x.sqrt(),
            "rsqrt.approx.ftz.f32",
            (1e-3, 1e3),
        ),
        (
            "sqrt",
            |x| x.sqrt(),
            f64::sqrt,
            "sqrt.approx.ftz.f32",
            (0.0, 1e3),
        ),
        (
            "recip",
            |x| x.recip(),
            |x| 1.0 / x,
            "rcp.approx.ftz.f32",
            (0.5, 1e3),
        ),
        (
            "div",
            |x| x.clone() / (x + 1.0f32),
            |x| x / (x + 1.0),
            "div.approx.ftz.f32",
            (0.0, 1e3),
        ),
    ]
}

#[test]
fn fastmath_uses_approximate_instructions_within_their_tolerance() {
    let dev = crate::common::device();
    let mut batch = crate::common::Batch::default();
    for (name, f, reference, instruction, range) in fast_cases() {
        let kernel = unary_kernel(&format!("fast_{name}"), f, MathMode::Fast);
        let ptx = kernel.ptx(coopgraph::ptx::Arch::ALL[0]).expect("emits");
        assert!(
            ptx.contains(instruction),
            "{name}: no {instruction} in\n{ptx}"
        );
        let xs: Vec<f32> = (0..2048)
            .map(|i| (range.0 + (range.1 - range.0) * f64::from(i) / 2048.0) as f32)
            .collect();
        let got = run(dev, &kernel, &xs);
        for (x, g) in xs.iter().zip(&got) {
            let want = reference(f64::from(*x));
            // The tolerance the docs state: 1e-3, relative (absolute below 1).
            let tol = 1e-3 * want.abs().max(1.0);
            assert!(
                (f64::from(*g) - want).abs() <= tol,
                "{name}({x}) = {g}, want {want}"
            );
        }
        batch.add(&kernel);
    }
    batch.finish();
}

#[test]
fn fastmath_is_part_of_the_cache_key_and_flushes_subnormals() {
    let accurate = unary_kernel("k", |x| x * 0.5f32, MathMode::Accurate);
    let fast = unary_kernel("k", |x| x * 0.5f32, MathMode::Fast);
    assert_ne!(accurate.key(), fast.key());
    let dev = Device::sim();
    let xs = [2e-38f32, 1.0];
    assert_eq!(run(&dev, &accurate, &xs), [xs[0] * 0.5, 0.5]);
    assert_eq!(run(&dev, &fast, &xs), [0.0, 0.5]);
}

/// Sums of calls with cold paths (`exp` past 86, huge arguments of the trigonometric
/// functions), in `f32` and `f64`, over arguments where some threads take some cold paths and
/// others none: each sum has the bits of its calls evaluated one kernel each and summed in the
/// same order (each call's cold branch joins only its own value).
macro_rules! sums_of_cold_paths {
    ($test:ident, $t:ty, $block:expr) => {
        #[test]
        fn $test() {
            type Term = (&'static str, fn(Expr<$t>) -> Expr<$t>);
            const ITEMS: usize = 3;
            let terms: [Term; 5] = [
                ("exp", |x| x.exp()),
                ("sin_1e6", |x| (x * 1.0e6 as $t).sin()),
                ("exp_8", |x| (x * 8.0 as $t).exp()),
                ("cos_3e4", |x| (x * 3.0e4 as $t).cos()),
                ("tan", |x| x.tan()),
            ];
            let kernel = |name: &str, terms: &[Term]| {
                let terms = terms.to_vec();
                let mut k = KernelBuilder::new(name)
                    .block($block)
                    .items_per_thread(ITEMS as u32);
                let (x, y) = (k.input::<$t>("x"), k.output::<$t>("y"));
                let b = k.this_block();
                let t = k.load_from(b, &x, Load::direct());
                let r = k.map(&t, move |v| {
                    let mut s = (terms[0].1)(v.clone());
                    for term in &terms[1..] {
                        s = s + (term.1)(v.clone());
                    }
                    s
                });
                k.store_to(b, &y, &r, Store::direct());
                k.build().expect("builds")
            };
            let dev = Device::default_device().expect("a device");
            let mut xs: Vec<$t> = (0..3000)
                .map(|i| (i as $t - 1500.0) * (24.0 / 1500.0))
                .collect();
            xs.extend([
                0.0,
                -0.0,
                <$t>::NAN,
                <$t>::INFINITY,
                -<$t>::INFINITY,
                1.0e30,
                -7.5e22,
            ]);
            let mut batch = crate::common::Batch::default();
            let alone: Vec<Vec<$t>> = terms
                .iter()
                .map(|term| {
                    let k = kernel(&format!("alone_{}", term.0), std::slice::from_ref(term));
                    batch.add(&k);
                    run(&dev, &k, &xs)
                })
                .collect();
            for n in 2..=terms.len() {
                let k = kernel(&format!("sum_{n}"), &terms[..n]);
                batch.add(&k);
                let got = run(&dev, &k, &xs);
                for (i, &x) in xs.iter().enumerate() {
                    let want = (1..n).fold(alone[0][i], |s, j| s + alone[j][i]);
                    assert!(
                        got[i].to_bits() == want.to_bits() || (got[i].is_nan() && want.is_nan()),
                        "{n} calls at x = {x:e}: {:e} where the calls one by one give {want:e}",
                        got[i]
                    );
                }
            }
            batch.finish();
        }
    };
}

sums_of_cold_paths!(sums_of_calls_with_cold_paths_keep_their_bits_f32, f32, 100);
sums_of_cold_paths!(sums_of_calls_with_cold_paths_keep_their_bits_f64, f64, 150);

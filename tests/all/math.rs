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
}

fn unaries() -> Vec<Unary> {
    let u = |name, f, reference, range| Unary {
        name,
        f,
        reference,
        range,
    };
    vec![
        u(
            "exp",
            |x: Expr<f32>| x.exp(),
            f64::exp as fn(f64) -> f64,
            (-104.0, 89.0),
        ),
        u("exp2", |x| x.exp2(), f64::exp2, (-151.0, 129.0)),
        u("exp10", |x| x.exp10(), |x| 10f64.powf(x), (-46.0, 39.0)),
        u("exp_m1", |x| x.exp_m1(), f64::exp_m1, (-20.0, 89.0)),
        u("ln", |x| x.ln(), f64::ln, (0.0, 4.0)),
        u("log2", |x| x.log2(), f64::log2, (0.0, 4.0)),
        u("log10", |x| x.log10(), f64::log10, (0.0, 4.0)),
        u("ln_1p", |x| x.ln_1p(), f64::ln_1p, (-1.0, 4.0)),
        u("sin", |x| x.sin(), f64::sin, (-20.0, 20.0)),
        u("cos", |x| x.cos(), f64::cos, (-20.0, 20.0)),
        u("tan", |x| x.tan(), f64::tan, (-20.0, 20.0)),
        u("asin", |x| x.asin(), f64::asin, (-1.0, 1.0)),
        u("acos", |x| x.acos(), f64::acos, (-1.0, 1.0)),
        u("atan", |x| x.atan(), f64::atan, (-8.0, 8.0)),
        u("sinh", |x| x.sinh(), f64::sinh, (-90.0, 90.0)),
        u("cosh", |x| x.cosh(), f64::cosh, (-90.0, 90.0)),
        u("tanh", |x| x.tanh(), f64::tanh, (-10.0, 10.0)),
        u("cbrt", |x| x.cbrt(), f64::cbrt, (-8.0, 8.0)),
        u("erf", |x| x.erf(), erf, (-5.0, 5.0)),
        u("erfc", |x| x.erfc(), erfc, (-5.0, 11.0)),
        u("rsqrt", |x| x.rsqrt(), |x| 1.0 / x.sqrt(), (0.0, 4.0)),
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

/// `f` over `xs` on `dev`.
fn run(dev: &Device, kernel: &Kernel, xs: &[f32]) -> Vec<f32> {
    let xb = dev.upload(xs).expect("upload");
    let mut yb = dev.alloc_zeroed::<f32>(xs.len()).expect("alloc");
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

#[test]
fn f32_functions_measured() {
    let dev = Device::sim();
    for u in unaries() {
        let kernel = unary_kernel(u.name, u.f, MathMode::Accurate);
        let xs = sweep(u.range, 4096);
        let got = run(&dev, &kernel, &xs);
        let (e, at) = worst(&xs, &got, u.reference);
        println!("{:8} {:6.3} ulp at {:e}", u.name, e, at);
    }
}

//! The expression DSL on the default device: every operator, math function and cast, for
//! every dtype, against Rust's own arithmetic (wrapping integers, `as` casts, IEEE floats).
//! Approximate functions are checked within their documented error.

use super::common::{Batch, Rng, assert_same, device};
use super::kernels::TestElem;
use coopgraph::KernelBuilder;
use coopgraph::ir::{Expr, Load, Store, index};
use std::sync::Mutex;

const BLOCK: u32 = 64;
const ITEMS: u32 = 2;
const TILE: usize = (BLOCK * ITEMS) as usize;

/// Kernels waiting to be assembled; each test flushes it when done.
static PENDING: Mutex<Option<Batch>> = Mutex::new(None);

fn flush() {
    let batch = PENDING.lock().ok().and_then(|mut b| b.take());
    if let Some(mut b) = batch {
        b.finish();
    }
}

/// Runs `z = f(x, y)` element-wise over `xs`, `ys` (lengths a multiple of the tile) on the
/// default device and returns `z`.
fn map2<A: TestElem, B: TestElem, U: TestElem>(
    name: &str,
    xs: &[A],
    ys: &[B],
    f: impl FnOnce(Expr<A>, Expr<B>) -> Expr<U>,
) -> Vec<U> {
    let dev = device();
    let mut k = KernelBuilder::new(name)
        .block(BLOCK)
        .items_per_thread(ITEMS);
    let x = k.input::<A>("x");
    let y = k.input::<B>("y");
    let z = k.output::<U>("z");
    let block = k.this_block();
    let tx = k.load_from(block, &x, Load::striped());
    let ty = k.load_from(block, &y, Load::striped());
    let tz = k.map2(&tx, &ty, f);
    k.store_to(block, &z, &tz, Store::striped());
    let kernel = k.build().unwrap_or_else(|e| panic!("{name}: {e}"));
    if let Ok(mut pending) = PENDING.lock() {
        pending.get_or_insert_with(Batch::default).add(&kernel);
    }
    let func = dev
        .compile(&kernel)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let xb = dev.upload(xs).expect("upload");
    let yb = dev.upload(ys).expect("upload");
    let mut zb = dev
        .alloc_filled(xs.len(), U::from_i64(0x77))
        .expect("alloc");
    func.launch_grid((xs.len() / TILE) as u32, (&xb, &yb, &mut zb))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    zb.to_vec().expect("download")
}

/// Random values with the type's edge cases mixed in; a multiple of the tile long.
fn inputs<T: TestElem>(rng: &mut Rng, specials: &[T]) -> Vec<T> {
    let mut v: Vec<T> = rng.vec(2 * TILE);
    for (i, s) in specials.iter().enumerate() {
        v[i * 7 % (2 * TILE)] = *s;
    }
    v
}

fn check<T: TestElem>(name: &str, got: &[T], want: &[T]) {
    assert_same(got, want, name);
}

macro_rules! int_suite {
    ($($name:ident: $t:ty,)*) => {$(
        #[test]
        fn $name() {
            type T = $t;
            let mut rng = Rng::new(stringify!($name).len() as u64 * 31);
            let specials = [0 as T, 1 as T, T::MAX, T::MIN, T::MAX / 2 + 1];
            let xs: Vec<T> = inputs(&mut rng, &specials);
            let ys: Vec<T> = inputs(&mut rng, &specials);
            let width = T::BITS;
            // Divisors: never zero, and never -1 against MIN (undefined in PTX).
            let ds: Vec<T> = xs
                .iter()
                .zip(&ys)
                .map(|(&x, &y)| if y == 0 || (x == T::MIN && y.wrapping_add(1) == 0) { 3 as T } else { y })
                .collect();
            let amounts: Vec<u32> = ys.iter().map(|&y| (y as u64 % width as u64) as u32).collect();
            let n = stringify!($t);
            macro_rules! bin {
                ($op:literal, $f:expr, $r:expr) => {{
                    let got = map2(&format!("{}_{}", $op, n), &xs, &ys, $f);
                    let want: Vec<T> = xs.iter().zip(&ys).map(|(&a, &b)| $r(a, b)).collect();
                    check(&format!("{} {}", n, $op), &got, &want);
                }};
            }
            bin!("add", |a, b| a + b, |a: T, b: T| a.wrapping_add(b));
            bin!("sub", |a, b| a - b, |a: T, b: T| a.wrapping_sub(b));
            bin!("mul", |a, b| a * b, |a: T, b: T| a.wrapping_mul(b));
            bin!("min", |a: Expr<T>, b| a.min(b), |a: T, b: T| a.min(b));
            bin!("max", |a: Expr<T>, b| a.max(b), |a: T, b: T| a.max(b));
            bin!("and", |a, b| a & b, |a: T, b: T| a & b);
            bin!("or", |a, b| a | b, |a: T, b: T| a | b);
            bin!("xor", |a, b| a ^ b, |a: T, b: T| a ^ b);
            bin!("fma", |a: Expr<T>, b: Expr<T>| a.fma(&b, 7 as T), |a: T, b: T| a.wrapping_mul(b).wrapping_add(7 as T));
            bin!("select", |a: Expr<T>, b: Expr<T>| a.lt(&b).select(&a - &b, &b - &a),
                |a: T, b: T| if a < b { a.wrapping_sub(b) } else { b.wrapping_sub(a) });
            bin!("cmp", |a: Expr<T>, b: Expr<T>| {
                    let code = a.eq(&b).to::<T>() + (a.ne(&b).to::<T>() << 1u32) + (a.le(&b).to::<T>() << 2u32)
                        + (a.gt(&b).to::<T>() << 3u32) + (a.ge(&b).to::<T>() << 4u32);
                    code
                },
                |a: T, b: T| ((a == b) as T) + (((a != b) as T) << 1) + (((a <= b) as T) << 2)
                    + (((a > b) as T) << 3) + (((a >= b) as T) << 4));
            bin!("unary", |a: Expr<T>, _b| -a.clone() ^ !a.clone() ^ a.abs(),
                |a: T, _b: T| a.wrapping_neg() ^ !a ^ abs_wrapping(a));
            bin!("bits", |a: Expr<T>, _b| a.reverse_bits() ^ a.popc().cast::<T>() ^ (a.clz().cast::<T>() << 3u32),
                |a: T, _b: T| a.reverse_bits() ^ (a.count_ones() as T) ^ ((a.leading_zeros() as T).wrapping_shl(3)));
            // Striped payloads of 2 items: position q is in slot (q % tile) / block.
            let got = map2(&format!("item_{n}"), &xs, &ys, |a: Expr<T>, _b| a + index::item().cast::<T>());
            let want: Vec<T> = xs.iter().enumerate()
                .map(|(q, &a)| a.wrapping_add(((q % TILE) / BLOCK as usize) as T)).collect();
            check(&format!("{n} item index"), &got, &want);
            // Division and remainder by safe divisors.
            let got = map2(&format!("div_{n}"), &xs, &ds, |a: Expr<T>, b: Expr<T>| (&a / &b) ^ (&a % &b));
            let want: Vec<T> = xs.iter().zip(&ds).map(|(&a, &b)| a.wrapping_div(b) ^ a.wrapping_rem(b)).collect();
            check(&format!("{n} div/rem"), &got, &want);
            // Shifts by amounts below the width.
            let got = map2(&format!("shift_{n}"), &xs, &amounts, |a: Expr<T>, s: Expr<u32>| (&a << s.clone()) ^ (&a >> s));
            let want: Vec<T> = xs.iter().zip(&amounts).map(|(&a, &s)| a.wrapping_shl(s) ^ a.wrapping_shr(s)).collect();
            check(&format!("{n} shifts"), &got, &want);
            // Shifts by the width or more give 0 (or the sign for a signed right shift).
            let big: Vec<u32> = amounts.iter().map(|s| width + s).collect();
            let got = map2(&format!("bigshift_{n}"), &xs, &big, |a: Expr<T>, s: Expr<u32>| (&a << s.clone()) | (&a >> s));
            let want: Vec<T> = xs.iter().map(|&a| if a < (0 as T) { !(0 as T) } else { 0 as T }).collect();
            check(&format!("{n} shifts past the width"), &got, &want);
            casts_from::<T>(&xs);
            flush();
        }
    )*};
}

/// `abs` that wraps at the most negative value, and is the identity on unsigned types.
fn abs_wrapping<T: num_traits::PrimInt + num_traits::WrappingSub>(a: T) -> T {
    if a < T::zero() {
        T::zero().wrapping_sub(&a)
    } else {
        a
    }
}

int_suite! {
    expr_i8: i8,
    expr_i16: i16,
    expr_i32: i32,
    expr_i64: i64,
    expr_u8: u8,
    expr_u16: u16,
    expr_u32: u32,
    expr_u64: u64,
}

/// Casts from `S` to every dtype, as Rust's `as`.
fn casts_from<S: TestElem + AsAll>(xs: &[S]) {
    let ys = xs.to_vec();
    macro_rules! to {
        ($($u:ty),*) => {$(
            let got = map2(&format!("cast_{}_{}", S::DTYPE, stringify!($u)), xs, &ys, |a: Expr<S>, _b| a.cast::<$u>());
            let want: Vec<$u> = xs.iter().map(|&a| <$u as FromAs>::from_as(a)).collect();
            assert_same(&got, &want, &format!("cast {} -> {}", S::DTYPE, stringify!($u)));
        )*};
    }
    to!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);
}

/// Rust's `as` between every pair of element types.
pub trait AsAll: Copy {
    /// `self as f64` and friends, by value.
    fn as_i128(self) -> Option<i128>;
    /// The value as f64 (exact for floats).
    fn as_f64(self) -> f64;
    /// Whether this is an f32.
    fn is_f32(self) -> Option<f32>;
}

/// Conversion with `as` semantics into `Self`.
pub trait FromAs {
    /// `v as Self`.
    fn from_as<S: AsAll>(v: S) -> Self;
}

macro_rules! as_all_int {
    ($($t:ty),*) => {$(
        impl AsAll for $t {
            fn as_i128(self) -> Option<i128> { Some(self as i128) }
            fn as_f64(self) -> f64 { self as f64 }
            fn is_f32(self) -> Option<f32> { None }
        }
        impl FromAs for $t {
            fn from_as<S: AsAll>(v: S) -> Self {
                match v.as_i128() {
                    Some(i) => i as $t,
                    None => match v.is_f32() {
                        Some(f) => f as $t,
                        None => v.as_f64() as $t,
                    },
                }
            }
        }
    )*};
}
as_all_int!(i8, i16, i32, i64, u8, u16, u32, u64);

impl AsAll for f32 {
    fn as_i128(self) -> Option<i128> {
        None
    }
    fn as_f64(self) -> f64 {
        self as f64
    }
    fn is_f32(self) -> Option<f32> {
        Some(self)
    }
}

impl AsAll for f64 {
    fn as_i128(self) -> Option<i128> {
        None
    }
    fn as_f64(self) -> f64 {
        self
    }
    fn is_f32(self) -> Option<f32> {
        None
    }
}

impl FromAs for f32 {
    fn from_as<S: AsAll>(v: S) -> Self {
        match (v.as_i128(), v.is_f32()) {
            (Some(i), _) => i as f32,
            (None, Some(f)) => f,
            (None, None) => v.as_f64() as f32,
        }
    }
}

impl FromAs for f64 {
    fn from_as<S: AsAll>(v: S) -> Self {
        match v.as_i128() {
            Some(i) => i as f64,
            None => v.as_f64(),
        }
    }
}

macro_rules! float_suite {
    ($($name:ident: $t:ty,)*) => {$(
        #[test]
        fn $name() {
            type T = $t;
            let mut rng = Rng::new(stringify!($name).len() as u64 * 17);
            let specials = [0.0 as T, -0.0 as T, T::INFINITY, T::NEG_INFINITY, T::NAN,
                T::MIN_POSITIVE, T::MIN_POSITIVE / 4.0, 2.5 as T, -2.5 as T, 1e30 as T, -3e9 as T];
            let xs: Vec<T> = inputs(&mut rng, &specials);
            let ys: Vec<T> = inputs(&mut rng, &specials);
            let n = stringify!($t);
            macro_rules! bin {
                ($op:literal, $f:expr, $r:expr) => {{
                    let got = map2(&format!("{}_{}", $op, n), &xs, &ys, $f);
                    let want: Vec<T> = xs.iter().zip(&ys).map(|(&a, &b)| $r(a, b)).collect();
                    check(&format!("{} {}", n, $op), &got, &want);
                }};
            }
            bin!("add", |a, b| a + b, |a: T, b: T| a + b);
            bin!("sub", |a, b| a - b, |a: T, b: T| a - b);
            bin!("mul", |a, b| a * b, |a: T, b: T| a * b);
            bin!("div", |a, b| a / b, |a: T, b: T| a / b);
            bin!("fma", |a: Expr<T>, b: Expr<T>| a.fma(&b, 0.5 as T), |a: T, b: T| a.mul_add(b, 0.5 as T));
            bin!("sqrt_abs_neg", |a: Expr<T>, _b| -(a.abs().sqrt()), |a: T, _b: T| -(a.abs().sqrt()));
            bin!("sqrt_of_negative", |a: Expr<T>, _b| (-(a.abs()) - 1.0 as T).sqrt(), |a: T, _b: T| (-(a.abs()) - 1.0 as T).sqrt());
            bin!("recip", |a: Expr<T>, _b| a.recip(), |a: T, _b: T| 1.0 as T / a);
            bin!("rounding", |a: Expr<T>, _b| a.floor() + a.ceil() * 3.0 as T + a.trunc() * 5.0 as T + a.round_even() * 7.0 as T,
                |a: T, _b: T| a.floor() + a.ceil() * 3.0 as T + a.trunc() * 5.0 as T + a.round_ties_even() * 7.0 as T);
            bin!("select", |a: Expr<T>, b: Expr<T>| a.gt(&b).select(&a, &b) + a.is_nan().select(1.0 as T, 0.0 as T),
                |a: T, b: T| (if a > b { a } else { b }) + if a.is_nan() { 1.0 } else { 0.0 });
            bin!("cmp", |a: Expr<T>, b: Expr<T>| {
                    a.eq(&b).to::<T>() + a.ne(&b).to::<T>() * 2.0 as T + a.lt(&b).to::<T>() * 4.0 as T
                        + a.le(&b).to::<T>() * 8.0 as T + a.ge(&b).to::<T>() * 16.0 as T
                },
                |a: T, b: T| ((a == b) as u8 as T) + ((a != b) as u8 as T) * 2.0 + ((a < b) as u8 as T) * 4.0
                    + ((a <= b) as u8 as T) * 8.0 + ((a >= b) as u8 as T) * 16.0);
            // min/max: equal up to the sign of zero, which PTX and Rust may pick differently.
            let got = map2(&format!("minmax_{n}"), &xs, &ys, |a: Expr<T>, b: Expr<T>| a.min(&b) * 3.0 as T + a.max(&b));
            let want: Vec<T> = xs.iter().zip(&ys).map(|(&a, &b)| a.min(b) * 3.0 + a.max(b)).collect();
            let got: Vec<T> = got.into_iter().map(|v| if v == 0.0 { 0.0 } else { v }).collect();
            let want: Vec<T> = want.into_iter().map(|v| if v == 0.0 { 0.0 } else { v }).collect();
            check(&format!("{n} min/max"), &got, &want);
            casts_from::<T>(&xs);
            flush();
        }
    )*};
}

float_suite! {
    expr_f32: f32,
    expr_f64: f64,
}

/// The approximate f32 functions, within the hardware's documented error on modest inputs.
#[test]
fn approximate_f32_functions() {
    let mut rng = Rng::new(99);
    let xs: Vec<f32> = (0..2 * TILE).map(|_| rng.value::<f32>() / 400.0).collect();
    let pos: Vec<f32> = xs.iter().map(|v| v.abs() + 0.5).collect();
    type Case = (
        &'static str,
        fn(Expr<f32>) -> Expr<f32>,
        fn(f32) -> f32,
        f32,
        bool,
    );
    let cases: [Case; 8] = [
        ("sin", |a| a.sin(), f32::sin, 2e-6, false),
        ("cos", |a| a.cos(), f32::cos, 2e-6, false),
        ("exp2", |a| a.exp2(), f32::exp2, 2e-6, true),
        ("log2", |a| a.log2(), f32::log2, 2e-6, false),
        ("exp", |a| a.exp(), f32::exp, 4e-6, true),
        ("ln", |a| a.ln(), f32::ln, 4e-6, false),
        ("tanh", |a| a.tanh(), f32::tanh, 1e-3, false),
        ("rsqrt", |a| a.rsqrt(), |v| 1.0 / v.sqrt(), 2e-6, true),
    ];
    for (name, f, r, tol, relative) in cases {
        let input = if matches!(name, "log2" | "ln" | "rsqrt") {
            &pos
        } else {
            &xs
        };
        let got = map2(&format!("approx_{name}"), input, input, |a, _b| f(a));
        for (i, (&g, &x)) in got.iter().zip(input).enumerate() {
            let w = r(x);
            let err = if relative {
                ((g - w) / w).abs()
            } else {
                (g - w).abs()
            };
            assert!(
                err <= tol,
                "{name}({x}) = {g} at {i}, expected {w} within {tol} ({})",
                if relative { "relative" } else { "absolute" }
            );
        }
    }
    flush();
}

/// An op that converts an operand into its own arrangement still reads the operand's own
/// slots through `item(i)`: `map2(a, b, |x, _| x + b.item(0))` over a blocked `a` and a
/// striped `b` adds `b`'s striped item 0, not the converted registers' item 0.
#[test]
fn item_of_converted_operand_reads_its_own_slots() {
    const N: usize = TILE * 3;
    let dev = device();
    let mut k = KernelBuilder::new("item_of_converted")
        .block(BLOCK)
        .items_per_thread(ITEMS);
    let (x, y, z) = (
        k.input::<i32>("x"),
        k.input::<i32>("y"),
        k.output::<i32>("z"),
    );
    let block = k.this_block();
    let a = k.load_from(block, &x, Load::direct());
    let b = k.load_from(block, &y, Load::striped());
    let own = b.item(0);
    let c = k.map2(&a, &b, |x, _| x + own);
    k.store_to(block, &z, &c, Store::direct());
    let kernel = k.build().expect("builds");
    super::common::assemble_all(&kernel);
    let xs: Vec<i32> = (0..N as i32).collect();
    let ys: Vec<i32> = (0..N as i32).map(|v| 1000 * v).collect();
    let func = dev.compile(&kernel).expect("compiles");
    let xb = dev.upload(&xs).expect("upload");
    let yb = dev.upload(&ys).expect("upload");
    let mut zb = dev.alloc_filled(N, 0i32).expect("alloc");
    func.launch_grid((N / TILE) as u32, (&xb, &yb, &mut zb))
        .expect("launch");
    let want: Vec<i32> = (0..N)
        .map(|e| {
            let (tile, t) = (e / TILE, (e % TILE) / ITEMS as usize);
            // Striped item 0 of thread t in this tile is element tile*TILE + t.
            xs[e] + ys[tile * TILE + t]
        })
        .collect();
    assert_same(&zb.to_vec().expect("download"), &want, "item_of_converted");
}

/// The six comparisons of `a` and `b` as one code, bit `i` for the `i`th of `==`, `!=`, `<`,
/// `<=`, `>`, `>=`.
fn comparison_code<T: coopgraph::ir::Element>(a: Expr<T>, b: Expr<T>) -> Expr<u32> {
    let bits = [a.eq(&b), a.ne(&b), a.lt(&b), a.le(&b), a.gt(&b), a.ge(&b)];
    bits.into_iter()
        .enumerate()
        .fold(Expr::lit(0u32), |acc, (i, p)| {
            acc | (p.to::<u32>() << i as u32)
        })
}

/// The same code on the host.
fn comparison_code_ref<T: PartialOrd>(a: T, b: T) -> u32 {
    [a == b, a != b, a < b, a <= b, a > b, a >= b]
        .into_iter()
        .enumerate()
        .fold(0, |acc, (i, p)| acc | (u32::from(p) << i))
}

/// The sm_90 PTX of a kernel storing `cmp(x, y)` of two `u32` inputs as 0 or 1.
fn compare_ptx(name: &str, cmp: impl Fn(Expr<u32>, Expr<u32>) -> Expr<bool>) -> String {
    let mut k = KernelBuilder::new(name)
        .block(BLOCK)
        .items_per_thread(ITEMS);
    let (x, y, z) = (
        k.input::<u32>("x"),
        k.input::<u32>("y"),
        k.output::<u32>("z"),
    );
    let block = k.this_block();
    let (tx, ty) = (
        k.load_from(block, &x, Load::striped()),
        k.load_from(block, &y, Load::striped()),
    );
    let tz = k.map2(&tx, &ty, |a, b| cmp(a, b).to::<u32>());
    k.store_to(block, &z, &tz, Store::striped());
    k.build()
        .expect("builds")
        .ptx(coopgraph::ptx::Arch::Sm90)
        .expect("emits")
}

/// Operands for comparisons of 32-bit integers: random, every pair of edge values (0, 1, both
/// sides of the sign boundary, the maxima), and equal pairs.
fn edge_pairs(seed: u64) -> (Vec<u32>, Vec<u32>) {
    let mut rng = Rng::new(seed);
    let edges = [
        0u32,
        1,
        0x7fff_ffff,
        0x8000_0000,
        0x8000_0001,
        u32::MAX,
        u32::MAX - 1,
    ];
    let mut xs = inputs::<u32>(&mut rng, &edges);
    let mut ys = inputs::<u32>(&mut rng, &edges);
    for (i, (a, b)) in edges
        .iter()
        .flat_map(|&a| edges.iter().map(move |&b| (a, b)))
        .enumerate()
    {
        xs[100 + i] = a;
        ys[100 + i] = b;
    }
    ys[200..220].copy_from_slice(&xs[200..220]);
    (xs, ys)
}

/// Comparisons of two 32-bit integers with their sign bits flipped (`x ^ 0x8000_0000`, an
/// `i32` ordered by its bits as a `u32`) compare the unflipped values in the other
/// signedness: Rust's answers for `u32` and `i32`, the constant on either side, widened to
/// `u64` after the flip (the merge sort's key order), and for a flip of another bit (no
/// rewrite). The `u32` comparison's PTX has no `xor` left.
#[test]
fn comparisons_of_sign_flipped_integers() {
    const SIGN: u32 = 0x8000_0000;
    let (xs, ys) = edge_pairs(0xC1);
    let is: Vec<i32> = xs.iter().map(|&v| v as i32).collect();
    let js: Vec<i32> = ys.iter().map(|&v| v as i32).collect();
    let want_u = |flip: u32| -> Vec<u32> {
        (xs.iter().zip(&ys))
            .map(|(&a, &b)| comparison_code_ref(a ^ flip, b ^ flip))
            .collect()
    };
    let got = map2("cmp_flipped_u32", &xs, &ys, |a, b| {
        comparison_code(a ^ SIGN, b ^ SIGN)
    });
    check("u32 ^ sign", &got, &want_u(SIGN));
    let got = map2("cmp_flipped_u32_left", &xs, &ys, |a, b| {
        comparison_code(Expr::lit(SIGN) ^ a, b ^ SIGN)
    });
    check("sign ^ u32", &got, &want_u(SIGN));
    let got = map2("cmp_flipped_other_bit", &xs, &ys, |a, b| {
        comparison_code(a ^ 0x4000_0000u32, b ^ 0x4000_0000u32)
    });
    check("u32 ^ another bit", &got, &want_u(0x4000_0000));
    let got = map2("cmp_flipped_i32", &is, &js, |a, b| {
        comparison_code(a ^ i32::MIN, b ^ i32::MIN)
    });
    let want: Vec<u32> = (is.iter().zip(&js))
        .map(|(&a, &b)| comparison_code_ref(a ^ i32::MIN, b ^ i32::MIN))
        .collect();
    check("i32 ^ sign", &got, &want);
    let got = map2("cmp_flipped_i32_as_u64", &is, &js, |a, b| {
        let key = |v: Expr<i32>| (v.cast::<u32>() ^ SIGN).cast::<u64>();
        comparison_code(key(a), key(b))
    });
    let want: Vec<u32> = (xs.iter().zip(&ys))
        .map(|(&a, &b)| comparison_code_ref(u64::from(a ^ SIGN), u64::from(b ^ SIGN)))
        .collect();
    check("i32 bits ^ sign as u64", &got, &want);
    flush();
    let ptx = compare_ptx("cmp_flipped_ptx", |a, b| (a ^ SIGN).lt(b ^ SIGN));
    assert!(ptx.contains("setp.lt.s32"), "{ptx}");
    assert!(!ptx.contains("xor"), "{ptx}");
}

/// Every comparison of `x >> (bits - 1)` with `v`, for `v` = 0, 1 and 2 on the right and
/// on the left, as bits of one code (the six comparisons of each pair in turn).
fn top_bit_code<T: coopgraph::ir::Element>(
    top: Expr<T>,
    lit: impl Fn(u32) -> Expr<T>,
) -> Expr<u32> {
    (0..3u32).fold(Expr::lit(0u32), |acc, v| {
        let right = comparison_code(top.clone(), lit(v));
        let left = comparison_code(lit(v), top.clone());
        acc | (right << (12 * v)) | (left << (12 * v + 6))
    })
}

/// The same code on the host, from the top bit `top` (0 or 1).
fn top_bit_code_ref(top: u64) -> u32 {
    (0..3u64).fold(0, |acc, v| {
        acc | (comparison_code_ref(top, v) << (12 * v))
            | (comparison_code_ref(v, top) << (12 * v + 6))
    })
}

/// Tests of an unsigned integer's top bit written as a shift and a comparison
/// (`(x >> 31).eq(1)`, how a float's sign is read from its bits) compare the integer with zero
/// as a signed one: every comparison with 0, 1 and 2, the constant on either side, gives
/// Rust's answers for `u32` and `u64` at the edges and at random. In PTX, `(x >> 31).eq(1)`
/// is one `setp.lt.s32` against zero and leaves no shift behind.
#[test]
fn comparisons_of_top_bits() {
    let (xs, ys) = edge_pairs(0xC2);
    let got = map2("cmp_top_bit_u32", &xs, &ys, |a, _| {
        top_bit_code(a >> 31u32, Expr::lit)
    });
    let want: Vec<u32> = xs
        .iter()
        .map(|&a| top_bit_code_ref(u64::from(a >> 31)))
        .collect();
    check("u32 top bit", &got, &want);
    let wide: Vec<u64> = (xs.iter().zip(&ys))
        .map(|(&a, &b)| (u64::from(a) << 32) | u64::from(b))
        .collect();
    let got = map2("cmp_top_bit_u64", &wide, &ys, |a, _| {
        top_bit_code(a >> 63u32, |v| Expr::lit(u64::from(v)))
    });
    let want: Vec<u32> = wide.iter().map(|&a| top_bit_code_ref(a >> 63)).collect();
    check("u64 top bit", &got, &want);
    flush();
    let shifts = |ptx: &str| ptx.matches("shr.").count();
    let plain = compare_ptx("cmp_top_bit_plain_ptx", |a, b| a.lt(b));
    let ptx = compare_ptx("cmp_top_bit_ptx", |a, _| (a >> 31u32).eq(1u32));
    assert!(ptx.contains(", 0;") && ptx.contains("setp.lt.s32"), "{ptx}");
    assert_eq!(shifts(&ptx), shifts(&plain), "{ptx}");
}

/// 64-bit comparisons of two widened 32-bit integers compare the 32-bit values (one 32-bit
/// `setp`): zero-extended `u32`s and sign-extended `i32`s, as `u64` and as `i64`, give Rust's
/// answers at the edges (0, 1, the sign boundary, the maxima, equal pairs) and at random.
#[test]
fn comparisons_of_widened_32_bit_integers() {
    let (xs, ys) = edge_pairs(0xC0);
    let is: Vec<i32> = xs.iter().map(|&v| v as i32).collect();
    let js: Vec<i32> = ys.iter().map(|&v| v as i32).collect();
    let cases: [(&str, Vec<u32>, Vec<u32>); 4] = [
        (
            "u32_as_u64",
            map2("cmp_u32_as_u64", &xs, &ys, |a, b| {
                comparison_code(a.cast::<u64>(), b.cast::<u64>())
            }),
            xs.iter()
                .zip(&ys)
                .map(|(&a, &b)| comparison_code_ref(u64::from(a), u64::from(b)))
                .collect(),
        ),
        (
            "u32_as_i64",
            map2("cmp_u32_as_i64", &xs, &ys, |a, b| {
                comparison_code(a.cast::<i64>(), b.cast::<i64>())
            }),
            xs.iter()
                .zip(&ys)
                .map(|(&a, &b)| comparison_code_ref(i64::from(a), i64::from(b)))
                .collect(),
        ),
        (
            "i32_as_i64",
            map2("cmp_i32_as_i64", &is, &js, |a, b| {
                comparison_code(a.cast::<i64>(), b.cast::<i64>())
            }),
            is.iter()
                .zip(&js)
                .map(|(&a, &b)| comparison_code_ref(i64::from(a), i64::from(b)))
                .collect(),
        ),
        (
            "i32_as_u64",
            map2("cmp_i32_as_u64", &is, &js, |a, b| {
                comparison_code(a.cast::<u64>(), b.cast::<u64>())
            }),
            is.iter()
                .zip(&js)
                .map(|(&a, &b)| comparison_code_ref(a as u64, b as u64))
                .collect(),
        ),
    ];
    for (what, got, want) in &cases {
        check(what, got, want);
    }
    flush();
    // One 32-bit compare each: no 64-bit `setp` is left in the kernel.
    let ptx = compare_ptx("cmp_widened_ptx", |a, b| {
        a.cast::<u64>().lt(b.cast::<u64>())
    });
    assert!(ptx.contains("setp.lt.u32"), "{ptx}");
    assert!(!ptx.contains("setp.lt.u64"), "{ptx}");
}

/// Unsigned `/` and `%` by a constant power of two (1, 2, 32, 2^31, and 2^40 for `u64`) give
/// Rust's answers and are emitted as shifts and masks, with no `div` or `rem` left.
#[test]
fn divisions_by_constant_powers_of_two() {
    let mut rng = Rng::new(0xD1);
    let xs = inputs::<u32>(&mut rng, &[0, 1, 31, 32, 33, 0x8000_0000, u32::MAX]);
    let ws = inputs::<u64>(&mut rng, &[0, 1, 1 << 40, (1 << 40) - 1, u64::MAX]);
    for n in [1u32, 2, 32, 1 << 31] {
        let got = map2(&format!("div_u32_{n}"), &xs, &xs, move |a, _| {
            (a.clone() / n) ^ ((a % n) << 1u32)
        });
        let want: Vec<u32> = xs.iter().map(|&a| (a / n) ^ ((a % n) << 1)).collect();
        check(&format!("u32 / {n}"), &got, &want);
    }
    for n in [1u64, 32, 1 << 40] {
        let got = map2(&format!("div_u64_{n}"), &ws, &ws, move |a, _| {
            (a.clone() / n) ^ ((a % n) << 1u32)
        });
        let want: Vec<u64> = ws.iter().map(|&a| (a / n) ^ ((a % n) << 1)).collect();
        check(&format!("u64 / {n}"), &got, &want);
    }
    flush();
    let mut k = KernelBuilder::new("div_pow2_ptx")
        .block(BLOCK)
        .items_per_thread(ITEMS);
    let (x, z) = (k.input::<u32>("x"), k.output::<u32>("z"));
    let block = k.this_block();
    let t = k.load_from(block, &x, Load::striped());
    let r = k.map(&t, |a| {
        a.clone() / 16u32 + a % 64u32 + index::thread_rank() / 32u32
    });
    k.store_to(block, &z, &r, Store::striped());
    let ptx = k
        .build()
        .expect("builds")
        .ptx(coopgraph::ptx::Arch::Sm90)
        .expect("emits");
    assert!(!ptx.contains("div.") && !ptx.contains("rem."), "{ptx}");
}

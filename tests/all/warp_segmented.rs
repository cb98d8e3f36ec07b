//! Segmented warp reductions (head and tail flags), head-segmented warp scans (inclusive and
//! exclusive) and batched warp reductions (blocked and striped results), against CPU
//! references over random dtypes, operators (a non-commutative one among them), logical warp
//! widths, flags and block sizes (most not multiples of 32, so the block's last logical warp
//! is partial), on the simulator with every checker on; every kernel assembled by ptxas. And
//! the verifier's errors for controls that do not fit, naming the user's line.

use super::common::{Batch, Rng, assert_same, device};
use coopgraph::ir::{BatchOutput, DType, Element, Expr, PrimitiveProblem, Reduce, Scan, Segments};
use coopgraph::runtime::DeviceElement;
use coopgraph::{Kernel, KernelBuilder, Load, Store};

/// An operator the tests combine with.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Sum,
    Min,
    Max,
    Xor,
    /// The later value unless it is zero, else the earlier: associative, not commutative, so
    /// a result combined in another order than the lanes' shows.
    Ordered,
}

const OPS: [Op; 5] = [Op::Sum, Op::Min, Op::Max, Op::Xor, Op::Ordered];

/// A dtype the tests take.
trait Tested: DeviceElement {
    fn xor() -> Option<Reduce<Self>>;
}

macro_rules! tested {
    (ints: $($i:ty),*; floats: $($f:ty),*) => {
        $(impl Tested for $i {
            fn xor() -> Option<Reduce<Self>> {
                Some(Reduce::bit_xor())
            }
        })*
        $(impl Tested for $f {
            fn xor() -> Option<Reduce<Self>> {
                None
            }
        })*
    };
}
tested!(ints: u8, i8, u16, i16, u32, i32, u64, i64; floats: f32, f64);

fn is_float(d: DType) -> bool {
    matches!(d, DType::F32 | DType::F64)
}

impl Op {
    fn controls<T: Tested>(self) -> Option<Reduce<T>> {
        Some(match self {
            Op::Sum => Reduce::sum(),
            Op::Min => Reduce::min(),
            Op::Max => Reduce::max(),
            Op::Xor => T::xor()?,
            Op::Ordered => Reduce::custom(false, |a: Expr<T>, b: Expr<T>| {
                b.ne(T::cast_from_i64(0)).select(b, a)
            }),
        })
    }

    /// The operator on the CPU over `T`'s values as `f64` (floats, kept small and exact) or
    /// wrapped `i128`s (integers).
    fn apply<T: Element>(self, a: T, b: T) -> T {
        if is_float(T::DTYPE) {
            let (x, y) = (as_f64(a), as_f64(b));
            let r = match self {
                Op::Sum => x + y,
                Op::Min => x.min(y),
                Op::Max => x.max(y),
                Op::Xor => unreachable!("no xor of floats"),
                Op::Ordered if y != 0.0 => y,
                Op::Ordered => x,
            };
            from_f64(r)
        } else {
            let (x, y) = (wide(a), wide(b));
            let r = match self {
                Op::Sum => x + y,
                Op::Min => x.min(y),
                Op::Max => x.max(y),
                Op::Xor => x ^ y,
                Op::Ordered if y != 0 => y,
                Op::Ordered => x,
            };
            T::from_bits(r as u64)
        }
    }
}

fn as_f64<T: Element>(v: T) -> f64 {
    match T::DTYPE {
        DType::F32 => f64::from(f32::from_bits(v.to_bits() as u32)),
        _ => f64::from_bits(v.to_bits()),
    }
}

fn from_f64<T: Element>(v: f64) -> T {
    match T::DTYPE {
        DType::F32 => T::from_bits(u64::from((v as f32).to_bits())),
        _ => T::from_bits(v.to_bits()),
    }
}

/// An integer's value, sign-extended by its dtype.
fn wide<T: Element>(v: T) -> i128 {
    let b = v.to_bits();
    match T::DTYPE {
        DType::I8 => b as u8 as i8 as i128,
        DType::I16 => b as u16 as i16 as i128,
        DType::I32 => b as u32 as i32 as i128,
        DType::I64 => b as i64 as i128,
        _ => b as i128,
    }
}

/// Values for `op`: small integers for floats (so that every order of sums is exact; zeros
/// for `Ordered`), any bits for integers.
fn values<T: Element>(rng: &mut Rng, n: usize, op: Op) -> Vec<T> {
    (0..n)
        .map(|_| {
            if is_float(T::DTYPE) {
                let range = if op == Op::Ordered { 4 } else { 64 };
                from_f64((rng.next() % range) as f64 - (range / 2) as f64)
            } else {
                rng.value()
            }
        })
        .collect()
}

/// What a segmented test computes.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Reduce(Segments),
    Scan { inclusive: bool, initial: bool },
}

/// The kernel: one value and flag per thread, the primitive over logical warps of `width`,
/// each thread's result stored at its rank.
fn segmented_kernel<T: Tested>(block: u32, width: u32, op: Op, kind: Kind) -> Option<Kernel> {
    let name = format!("seg_{block}_{width}_{op:?}_{:?}", T::DTYPE).to_lowercase();
    let mut k = KernelBuilder::new(&name).block(block).items_per_thread(1);
    let (x, f, y) = (k.input::<T>("x"), k.input::<u32>("f"), k.output::<T>("y"));
    let (b, g) = (k.this_block(), k.this_warp().group_by(width));
    let t = k.load_from(b, &x, Load::direct());
    let flags = k.load_from(b, &f, Load::direct());
    let r = match kind {
        Kind::Reduce(s) => k.segmented_reduce(g, &t, &flags, s, op.controls()?),
        Kind::Scan { inclusive, initial } => {
            let mut c = if inclusive {
                Scan::inclusive(op.controls()?)
            } else {
                Scan::exclusive(op.controls()?)
            };
            if initial {
                c = c.initial_value(T::cast_from_i64(2));
            }
            k.segmented_scan(g, &t, &flags, c)
        }
    };
    k.store_to(b, &y, &r, Store::direct());
    Some(k.build().expect("builds"))
}

/// The CPU's results for [`segmented_kernel`].
fn segmented_expected<T: Element>(
    block: usize,
    width: usize,
    op: Op,
    kind: Kind,
    xs: &[T],
    flags: &[u32],
) -> Vec<T> {
    let mut out = Vec::with_capacity(block);
    let fold = |s: &[T]| s.iter().copied().reduce(|a, b| op.apply(a, b));
    for start in (0..block).step_by(width) {
        let n = width.min(block - start);
        let (x, f) = (&xs[start..start + n], &flags[start..start + n]);
        for l in 0..n {
            let v = match kind {
                Kind::Reduce(Segments::Heads) => {
                    let end = (l + 1..n).find(|&j| f[j] != 0).unwrap_or(n);
                    fold(&x[l..end])
                }
                Kind::Reduce(Segments::Tails) => {
                    let end = (l..n).find(|&j| f[j] != 0).map_or(n, |j| j + 1);
                    fold(&x[l..end])
                }
                Kind::Scan { inclusive, initial } => {
                    let first = (0..=l).rev().find(|&j| f[j] != 0).unwrap_or(0);
                    let upto = if inclusive { l + 1 } else { l };
                    let init = initial.then(|| T::cast_from_i64(2));
                    let seg = fold(&x[first..upto]);
                    match (init, seg) {
                        (Some(i), Some(s)) => Some(op.apply(i, s)),
                        (i, s) => s.or(i),
                    }
                }
            };
            out.push(v.expect("a value"));
        }
    }
    out
}

/// The kind picked by `pick` (0..4) and `initial`.
fn kind(pick: u64, initial: bool) -> Kind {
    match pick % 4 {
        0 => Kind::Reduce(Segments::Heads),
        1 => Kind::Reduce(Segments::Tails),
        2 => Kind::Scan {
            inclusive: true,
            initial,
        },
        _ => Kind::Scan {
            inclusive: false,
            initial: true,
        },
    }
}

fn segmented_case<T: Tested>(batch: &mut Batch, rng: &mut Rng) {
    let op = OPS[(rng.next() % 5) as usize];
    let width = 1u32 << (rng.next() % 6);
    let block = 1 + (rng.next() % 100) as u32;
    let kind = kind(rng.next(), rng.next().is_multiple_of(2));
    if let Some(kernel) = segmented_check::<T>(block, width, op, kind, rng) {
        batch.add(&kernel);
    }
}

/// Runs one segmented case on random values and flags, checked against the CPU; the kernel
/// (`None` where `T` lacks the operator).
fn segmented_check<T: Tested>(
    block: u32,
    width: u32,
    op: Op,
    kind: Kind,
    rng: &mut Rng,
) -> Option<Kernel> {
    let kernel = segmented_kernel::<T>(block, width, op, kind)?;
    let n = block as usize;
    let xs = values::<T>(rng, n, op);
    let density = 1 + rng.next() % 4;
    let flags: Vec<u32> = (0..n)
        .map(|_| u32::from(rng.next() % 8 < density) * (1 + (rng.next() % 3) as u32))
        .collect();
    let dev = device();
    let f = dev.compile(&kernel).expect("compiles");
    let (xb, fb) = (
        dev.upload(&xs).expect("upload"),
        dev.upload(&flags).expect("upload"),
    );
    let mut yb = dev.alloc_zeroed::<T>(n).expect("alloc");
    f.launch_grid(1, (&xb, &fb, &mut yb)).expect("runs");
    let want = segmented_expected(n, width as usize, op, kind, &xs, &flags);
    let what = format!("{kind:?} {op:?} {:?} block {block} width {width}", T::DTYPE);
    assert_same(&yb.to_vec().expect("read"), &want, &what);
    Some(kernel)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 16,
        ..proptest::prelude::ProptestConfig::default()
    })]

    /// Segmented reductions and scans over any block size, width, operator and flags.
    #[test]
    fn segmented_primitives_agree_with_the_cpu(
        block in 1u32..200,
        log_width in 0u32..6,
        op in 0usize..5,
        pick in 0u64..4,
        wide in proptest::prelude::any::<bool>(),
        seed in proptest::prelude::any::<u64>(),
    ) {
        let mut rng = Rng::new(seed);
        let (width, kind) = (1 << log_width, kind(pick, seed % 2 == 0));
        if wide {
            segmented_check::<i64>(block, width, OPS[op], kind, &mut rng);
        } else {
            segmented_check::<u32>(block, width, OPS[op], kind, &mut rng);
        }
    }
}

#[test]
fn segmented_reductions_and_scans_match_the_cpu() {
    let mut batch = Batch::default();
    let mut rng = Rng::new(0x5e9);
    for _ in 0..6 {
        segmented_case::<u8>(&mut batch, &mut rng);
        segmented_case::<i8>(&mut batch, &mut rng);
        segmented_case::<u16>(&mut batch, &mut rng);
        segmented_case::<i16>(&mut batch, &mut rng);
        segmented_case::<u32>(&mut batch, &mut rng);
        segmented_case::<i32>(&mut batch, &mut rng);
        segmented_case::<u64>(&mut batch, &mut rng);
        segmented_case::<i64>(&mut batch, &mut rng);
        segmented_case::<f32>(&mut batch, &mut rng);
        segmented_case::<f64>(&mut batch, &mut rng);
    }
    batch.finish();
}

/// The batched kernel: `n` values per thread, totals stored at `rank * items + item`.
fn batched_kernel<T: Tested>(
    block: u32,
    width: u32,
    n: u32,
    op: Op,
    output: BatchOutput,
) -> Option<Kernel> {
    let name = format!(
        "batched_{block}_{width}_{n}_{op:?}_{output:?}_{:?}",
        T::DTYPE
    );
    let mut k = KernelBuilder::new(name.to_lowercase())
        .block(block)
        .items_per_thread(n);
    let (x, y) = (k.input::<T>("x"), k.output::<T>("y"));
    let (b, g) = (k.this_block(), k.this_warp().group_by(width));
    let t = k.load_from(b, &x, Load::direct());
    let r = k.reduce_batched(g, &t, op.controls()?, output);
    assert_eq!(r.items(), (n / width).max(1));
    k.store_to(b, &y, &r, Store::direct().offset(0u32));
    Some(k.build().expect("builds"))
}

fn batched_expected<T: Element>(
    block: usize,
    w: usize,
    n: usize,
    op: Op,
    output: BatchOutput,
    xs: &[T],
) -> Vec<T> {
    let items = (n / w).max(1);
    let mut out = Vec::with_capacity(block * items);
    for start in (0..block).step_by(w) {
        let totals: Vec<T> = (0..n)
            .map(|i| {
                let lanes = (0..w).map(|l| xs[(start + l) * n + i]);
                lanes.reduce(|a, b| op.apply(a, b)).expect("lanes")
            })
            .collect();
        for l in 0..w {
            for j in 0..items {
                let v = match output {
                    BatchOutput::Blocked if n >= w => l * items + j,
                    BatchOutput::Blocked => l * n / w,
                    BatchOutput::Striped if n >= w => l + w * j,
                    BatchOutput::Striped => l % n,
                };
                out.push(totals[v]);
            }
        }
    }
    out
}

fn batched_case<T: Tested>(batch: &mut Batch, rng: &mut Rng) {
    let op = OPS[(rng.next() % 5) as usize];
    let width = 1u32 << (rng.next() % 6);
    let n = 1u32 << (rng.next() % 7);
    // Whole logical warps, rarely a multiple of 32 threads.
    let block = width * (1 + (rng.next() % (96 / u64::from(width)).max(1)) as u32);
    let output = if rng.next().is_multiple_of(2) {
        BatchOutput::Blocked
    } else {
        BatchOutput::Striped
    };
    let Some(kernel) = batched_kernel::<T>(block, width, n, op, output) else {
        return;
    };
    let xs = values::<T>(rng, (block * n) as usize, op);
    let dev = device();
    let f = dev.compile(&kernel).expect("compiles");
    let xb = dev.upload(&xs).expect("upload");
    let items = (n / width).max(1);
    let mut yb = dev
        .alloc_zeroed::<T>((block * items) as usize)
        .expect("alloc");
    f.launch_grid(1, (&xb, &mut yb)).expect("runs");
    let (b, w, nn) = (block as usize, width as usize, n as usize);
    let want = batched_expected(b, w, nn, op, output, &xs);
    let what = format!(
        "batched {op:?} {output:?} {:?} block {block} width {width} n {n}",
        T::DTYPE
    );
    assert_same(&yb.to_vec().expect("read"), &want, &what);
    batch.add(&kernel);
}

#[test]
fn batched_reductions_match_the_cpu() {
    let mut batch = Batch::default();
    let mut rng = Rng::new(0xba7c);
    for _ in 0..5 {
        batched_case::<u8>(&mut batch, &mut rng);
        batched_case::<i16>(&mut batch, &mut rng);
        batched_case::<u32>(&mut batch, &mut rng);
        batched_case::<i32>(&mut batch, &mut rng);
        batched_case::<u64>(&mut batch, &mut rng);
        batched_case::<f32>(&mut batch, &mut rng);
        batched_case::<f64>(&mut batch, &mut rng);
    }
    batch.finish();
}

/// Every width, count and arrangement once, for the transposition's corner cases.
#[test]
fn batched_reductions_cover_every_width_and_count() {
    let mut batch = Batch::default();
    let mut rng = Rng::new(7);
    for width in [1u32, 2, 4, 8, 16, 32] {
        for n in [1u32, 2, 4, 8, 16, 32, 64] {
            for output in [BatchOutput::Blocked, BatchOutput::Striped] {
                let block = width * 3;
                let kernel = batched_kernel::<u32>(block, width, n, Op::Ordered, output)
                    .expect("an operator for u32");
                let xs = values::<u32>(&mut rng, (block * n) as usize, Op::Ordered);
                let dev = device();
                let xb = dev.upload(&xs).expect("upload");
                let items = (n / width).max(1);
                let mut yb = dev
                    .alloc_zeroed::<u32>((block * items) as usize)
                    .expect("alloc");
                let f = dev.compile(&kernel).expect("compiles");
                f.launch_grid(1, (&xb, &mut yb)).expect("runs");
                let (b, w) = (block as usize, width as usize);
                let want = batched_expected(b, w, n as usize, Op::Ordered, output, &xs);
                let what = format!("{output:?} width {width} n {n}");
                assert_same(&yb.to_vec().expect("read"), &want, &what);
                batch.add(&kernel);
            }
        }
    }
}

/// The verifier's problem of a kernel that cannot build, checked to name the line `build`
/// returns.
fn problem(build: impl FnOnce(&mut KernelBuilder) -> u32) -> PrimitiveProblem {
    let mut k = KernelBuilder::new("bad").block(48).items_per_thread(1);
    let line = build(&mut k);
    super::common::primitive_problem(k, line)
}

#[test]
fn controls_that_do_not_fit_are_reported_at_the_users_line() {
    let p = problem(|k| {
        let (b, x) = (k.this_block(), k.input::<u32>("x"));
        let t = k.load_from(b, &x, Load::direct());
        k.segmented_reduce(b, &t, &t, Segments::Heads, Reduce::sum());
        line!() - 1
    });
    assert!(matches!(p, PrimitiveProblem::Group { .. }));
    let p = problem(|k| {
        let (b, x) = (k.this_block(), k.input::<u32>("x"));
        let t = k.load_from(b, &x, Load::direct());
        let two = k.thread_data_n::<u32>(2);
        k.set_item(&two, 0, 1u32);
        k.set_item(&two, 1, 1u32);
        let w = k.this_warp().group_by(16);
        k.segmented_scan(w, &t, &two, Scan::inclusive_sum());
        line!() - 1
    });
    assert_eq!(
        p,
        PrimitiveProblem::Items {
            what: "segmented warp scan",
            input: "flags",
            items: 2,
            want: 1
        }
    );
    let p = problem(|k| {
        let (b, x) = (k.this_block(), k.input::<u32>("x"));
        let t = k.load_from(b, &x, Load::direct());
        let w = k.this_warp().group_by(16);
        k.segmented_scan(w, &t, &t, Scan::exclusive(Reduce::max()));
        line!() - 1
    });
    assert_eq!(p, PrimitiveProblem::NoInitialValue);
    let p = problem(|k| {
        let (b, x) = (k.this_block(), k.input::<u32>("x"));
        let t = k.load_from(b, &x, Load::direct());
        let w = k.this_warp().group_by(16);
        k.segmented_reduce(w, &t, &t, Segments::Tails, Reduce::sum().valid_items(3u32));
        line!() - 1
    });
    assert!(matches!(p, PrimitiveProblem::Control { .. }));
    // 48 threads: logical warps of 32 leave a partial one; 3 values are not a power of two.
    let p = problem(|k| {
        let (b, x) = (k.this_block(), k.input::<u32>("x"));
        let t = k.load_from(b, &x, Load::direct());
        let w = k.this_warp();
        k.reduce_batched(w, &t, Reduce::sum(), BatchOutput::Blocked);
        line!() - 1
    });
    assert_eq!(
        p,
        PrimitiveProblem::PartialWarp {
            width: 32,
            threads: 48
        }
    );
    let p = problem(|k| {
        let three = k.thread_data_n::<u32>(3);
        for i in 0..3 {
            k.set_item(&three, i, 1u32);
        }
        let w = k.this_warp().group_by(16);
        k.reduce_batched(w, &three, Reduce::sum(), BatchOutput::Striped);
        line!() - 1
    });
    assert_eq!(p, PrimitiveProblem::BatchItems { items: 3, max: 64 });
}

//! Atomics on global memory (outputs, read-write buffers) and shared arrays: every operation at
//! every element type it takes, its old value and the element after it against a CPU
//! reference (NaNs and signed zeros of float minima and maxima included), contended updates
//! whose result does not depend on their order, bounds, memory orders and scopes, `red` where
//! the old value is unused, and the race checker's view (atomics never race with one
//! another; a plain access racing with one does). Every kernel is assembled for every arch.

use super::common::{Batch, Rng, compiled, device, race_checker, same};
use coopgraph::ir::ops::{AtomicMemory, OpKind};
use coopgraph::ir::{
    Atomic, AtomicElement, AtomicOp, DType, Element, Expr, MemoryOrder, MemoryScope,
    VerifyErrorKind, index,
};
use coopgraph::ptx::Arch;
use coopgraph::runtime::{DeviceElement, RuntimeError};
use coopgraph::sim::SimError;
use coopgraph::{Error, Kernel, KernelBuilder};

/// Every operation, in `AtomicOp` order.
const OPS: [AtomicOp; 14] = [
    AtomicOp::Add,
    AtomicOp::Sub,
    AtomicOp::Min,
    AtomicOp::Max,
    AtomicOp::NanMin,
    AtomicOp::NanMax,
    AtomicOp::And,
    AtomicOp::Or,
    AtomicOp::Xor,
    AtomicOp::Exch,
    AtomicOp::Cas,
    AtomicOp::Inc,
    AtomicOp::Dec,
    AtomicOp::Load,
];

/// An element type the tests run atomics on.
trait At: AtomicElement + DeviceElement {
    /// The controls of `op` with operand `v` (and `compare` for `cas`); `None` where the type
    /// does not take the operation (which the builder's bounds reject at compile time).
    fn control(op: AtomicOp, v: Expr<Self>, compare: Expr<Self>) -> Option<Atomic<Self>>;
}

macro_rules! at_int {
    ($($t:ty, $unsigned:expr;)*) => {$(
        impl At for $t {
            fn control(op: AtomicOp, v: Expr<$t>, c: Expr<$t>) -> Option<Atomic<$t>> {
                Some(match op {
                    AtomicOp::Add => Atomic::add(v),
                    AtomicOp::Sub => Atomic::sub(v),
                    AtomicOp::Min => Atomic::min(v),
                    AtomicOp::Max => Atomic::max(v),
                    AtomicOp::NanMin => Atomic::nan_min(v),
                    AtomicOp::NanMax => Atomic::nan_max(v),
                    AtomicOp::And => Atomic::and(v),
                    AtomicOp::Or => Atomic::or(v),
                    AtomicOp::Xor => Atomic::xor(v),
                    AtomicOp::Exch => Atomic::exch(v),
                    AtomicOp::Cas => Atomic::cas(c, v),
                    AtomicOp::Load => Atomic::load(),
                    AtomicOp::Inc | AtomicOp::Dec => {
                        let f: fn(AtomicOp, Expr<$t>) -> Option<Atomic<$t>> = $unsigned;
                        return f(op, v);
                    }
                })
            }
        }
    )*};
}

at_int! {
    i32, |_, _| None;
    i64, |_, _| None;
    u32, |op, v| Some(if op == AtomicOp::Inc { Atomic::inc(v) } else { Atomic::dec(v) });
    u64, |op, v| Some(if op == AtomicOp::Inc { Atomic::inc(v) } else { Atomic::dec(v) });
}

macro_rules! at_float {
    ($($t:ty;)*) => {$(
        impl At for $t {
            fn control(op: AtomicOp, v: Expr<$t>, c: Expr<$t>) -> Option<Atomic<$t>> {
                Some(match op {
                    AtomicOp::Add => Atomic::add(v),
                    AtomicOp::Sub => Atomic::sub(v),
                    AtomicOp::Min => Atomic::min(v),
                    AtomicOp::Max => Atomic::max(v),
                    AtomicOp::NanMin => Atomic::nan_min(v),
                    AtomicOp::NanMax => Atomic::nan_max(v),
                    AtomicOp::Exch => Atomic::exch(v),
                    AtomicOp::Cas => Atomic::cas(c, v),
                    AtomicOp::Load => Atomic::load(),
                    _ => return None,
                })
            }
        }
    )*};
}

at_float! {
    f32;
    f64;
}

/// The element after `op` with operand `v` (and `c` for `cas`), as the documentation says.
/// The element after `op`; `shared`: the element is in shared memory (where an `f32` add keeps
/// subnormals).
fn reference<T: At>(op: AtomicOp, shared: bool, old: T, v: T, c: T) -> T {
    let b = |x: T| x.to_bits();
    let float = T::DTYPE.is_float();
    let nan = |x: T| float && x.partial_cmp(&x).is_none();
    // PTX's min/max: the non-NaN operand; -0.0 below +0.0.
    let lesser = |x: T, y: T| {
        let x_first = !nan(x) && (nan(y) || x < y || (x == y && b(x) != b(y) && neg(x)));
        if x_first { x } else { y }
    };
    let greater = |x: T, y: T| {
        let x_first = !nan(x) && (nan(y) || x > y || (x == y && b(x) != b(y) && !neg(x)));
        if x_first { x } else { y }
    };
    let wrap = |bits: u64| T::from_bits(bits);
    match op {
        AtomicOp::Add => add(old, v, shared),
        AtomicOp::Sub => add(old, negate(v), shared),
        AtomicOp::Min if float && (nan(old) || nan(v)) => {
            if nan(old) {
                old
            } else {
                v
            }
        }
        AtomicOp::Max if float && (nan(old) || nan(v)) => {
            if nan(old) {
                old
            } else {
                v
            }
        }
        AtomicOp::Min | AtomicOp::NanMin => lesser(old, v),
        AtomicOp::Max | AtomicOp::NanMax => greater(old, v),
        AtomicOp::And => wrap(b(old) & b(v)),
        AtomicOp::Or => wrap(b(old) | b(v)),
        AtomicOp::Xor => wrap(b(old) ^ b(v)),
        AtomicOp::Exch => v,
        AtomicOp::Cas => {
            if b(old) == b(c) {
                v
            } else {
                old
            }
        }
        AtomicOp::Inc => {
            if b(old) >= b(v) {
                wrap(0)
            } else {
                wrap(b(old) + 1)
            }
        }
        AtomicOp::Load => old,
        AtomicOp::Dec => {
            if b(old) == 0 || b(old) > b(v) {
                v
            } else {
                wrap(b(old) - 1)
            }
        }
    }
}

/// Whether a float's sign bit is set.
fn neg<T: Element>(x: T) -> bool {
    match T::DTYPE {
        DType::F32 => x.to_bits() >> 31 & 1 == 1,
        DType::F64 => x.to_bits() >> 63 == 1,
        _ => false,
    }
}

/// `-x` (wrapping for integers).
fn negate<T: Element>(x: T) -> T {
    match T::DTYPE {
        DType::F32 => T::from_bits(x.to_bits() ^ (1 << 31)),
        DType::F64 => T::from_bits(x.to_bits() ^ (1 << 63)),
        _ => T::from_bits(x.to_bits().wrapping_neg()),
    }
}

/// `a + b`: wrapping for integers; f32 flushing subnormal operands and results to zero in
/// global memory, as PTX's `atom.add.f32` does there (`shared`: keeping them, as the GPU does
/// in shared memory).
fn add<T: Element>(a: T, b: T, shared: bool) -> T {
    match T::DTYPE {
        DType::F32 if shared => {
            let s = f32::from_bits(a.to_bits() as u32) + f32::from_bits(b.to_bits() as u32);
            T::from_bits(if s.is_nan() {
                0x7FFF_FFFF
            } else {
                u64::from(s.to_bits())
            })
        }
        DType::F32 => {
            let ftz = |x: f32| {
                if x.is_subnormal() {
                    0.0f32.copysign(x)
                } else {
                    x
                }
            };
            let (x, y) = (
                ftz(f32::from_bits(a.to_bits() as u32)),
                ftz(f32::from_bits(b.to_bits() as u32)),
            );
            T::from_bits(ftz(x + y).to_bits() as u64)
        }
        DType::F64 => {
            T::from_bits((f64::from_bits(a.to_bits()) + f64::from_bits(b.to_bits())).to_bits())
        }
        _ => T::from_bits(a.to_bits().wrapping_add(b.to_bits())),
    }
}

/// Values that reach the operations' edges: NaNs, signed zeros, infinities, extremes.
fn edgy<T: Element>(rng: &mut Rng, n: usize) -> Vec<T> {
    (0..n)
        .map(|i| {
            let pick = rng.next() % 8;
            match (T::DTYPE, pick) {
                (DType::F32, 0) => T::from_bits(f32::NAN.to_bits() as u64),
                (DType::F32, 1) => T::from_bits((-0.0f32).to_bits() as u64),
                (DType::F32, 2) => T::from_bits(0.0f32.to_bits() as u64),
                (DType::F32, 3) => T::from_bits(f32::NEG_INFINITY.to_bits() as u64),
                (DType::F64, 0) => T::from_bits(f64::NAN.to_bits()),
                (DType::F64, 1) => T::from_bits((-0.0f64).to_bits()),
                (DType::F64, 2) => T::from_bits(0.0f64.to_bits()),
                (DType::F64, 3) => T::from_bits(f64::INFINITY.to_bits()),
                (_, 4) => T::from_bits((i % 5) as u64),
                (_, 5) => T::max_value(),
                _ => rng.value(),
            }
        })
        .collect()
}

/// Where an atomic's element lives in the tests.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mem {
    Output,
    Buffer,
    Shared,
}

/// Thread `t` of one block applies `op` with operand `v[t]` (and `c[t]`) to element `t` of
/// memory that holds `m[t]` before, and stores the old value; `len` elements of global memory
/// (threads past it update nothing and read 0). With `used`, the old value is stored.
fn own_element<T: At>(
    name: &str,
    op: AtomicOp,
    mem: Mem,
    order: MemoryOrder,
    scope: MemoryScope,
    used: bool,
) -> Option<Kernel> {
    let mut k = KernelBuilder::new(name).block(64);
    let (m, v, c) = (k.input::<T>("m"), k.input::<T>("v"), k.input::<T>("c"));
    let olds = k.output::<T>("olds");
    let after = k.output::<T>("after");
    let t = index::thread_rank();
    let ctl = T::control(op, v.at(&t), c.at(&t))?
        .order(order)
        .scope(scope);
    let old = match mem {
        Mem::Output => {
            let g = k.output::<T>("g");
            k.write(&g, &t, m.at(&t));
            let old = k.atomic(&g, &t, ctl);
            // An output is not read: an exchange returns the element as it is.
            let now = k.atomic(&g, &t, Atomic::exch(m.at(&t)));
            k.write(&after, &t, now);
            old
        }
        Mem::Buffer => {
            let g = k.buffer::<T>("g");
            k.write(&g, &t, m.at(&t));
            let old = k.atomic(&g, &t, ctl);
            k.write(&after, &t, g.at(&t));
            old
        }
        Mem::Shared => {
            let s = k.shared_array::<T>(64);
            k.shared_write(&s, &t, m.at(&t));
            let old = k.atomic(&s, &t, ctl);
            k.write(&after, &t, s.read(&t));
            old
        }
    };
    if used {
        k.write(&olds, &t, old);
    }
    Some(k.build().unwrap_or_else(|e| panic!("{name}: {e}")))
}

fn run_own<T: At>(kernel: &Kernel, mem: Mem, op: AtomicOp, used: bool, seed: u64) {
    let dev = device();
    let mut rng = Rng::new(seed);
    let (mut m, mut v, mut c): (Vec<T>, Vec<T>, Vec<T>) =
        (edgy(&mut rng, 64), edgy(&mut rng, 64), edgy(&mut rng, 64));
    if matches!(op, AtomicOp::Inc | AtomicOp::Dec) {
        // Limits at, above and below the element.
        for i in 0..64 {
            if i % 3 == 0 {
                v[i] = m[i];
            }
        }
    }
    if op == AtomicOp::Cas {
        // Half the compares hit.
        for i in (0..64).step_by(2) {
            c[i] = m[i];
        }
    }
    if op == AtomicOp::Add || op == AtomicOp::Sub {
        // f32 adds flush subnormals in global memory: keep some.
        if T::DTYPE == DType::F32 {
            m[7] = T::from_bits(1);
            v[9] = T::from_bits(0x8000_0001);
            // A subnormal plus -0.0: itself in shared memory, +0.0 in global memory.
            m[11] = T::from_bits(3);
            v[11] = T::from_bits(0x8000_0000);
        }
    }
    let f = compiled(dev, kernel).expect("compiles");
    let (mb, vb, cb) = (
        dev.upload(&m).expect("upload"),
        dev.upload(&v).expect("upload"),
        dev.upload(&c).expect("upload"),
    );
    let mut olds = dev.alloc_zeroed::<T>(64).expect("alloc");
    let mut after = dev.alloc_zeroed::<T>(64).expect("alloc");
    match mem {
        Mem::Output => {
            let mut g = dev.alloc_zeroed::<T>(64).expect("alloc");
            f.launch_grid(1, (&mb, &vb, &cb, &mut olds, &mut after, &mut g))
                .expect("runs");
        }
        Mem::Buffer => {
            let mut g = dev.alloc_zeroed::<T>(64).expect("alloc");
            f.launch_grid(1, (&mb, &vb, &cb, &mut olds, &mut after, &mut g))
                .expect("runs");
        }
        Mem::Shared => f
            .launch_grid(1, (&mb, &vb, &cb, &mut olds, &mut after))
            .expect("runs"),
    }
    let (got_old, got_after) = (olds.to_vec().expect("olds"), after.to_vec().expect("after"));
    for i in 0..64 {
        let want = reference(op, mem == Mem::Shared, m[i], v[i], c[i]);
        assert!(
            same(got_after[i], want),
            "{}: element {i}: {:?} {op:?} {:?} (compare {:?}) gave {:?}, expected {want:?}",
            kernel.name(),
            m[i],
            v[i],
            c[i],
            got_after[i]
        );
        if used {
            assert!(
                same(got_old[i], m[i]),
                "{}: element {i}: old {:?}, expected {:?}",
                kernel.name(),
                got_old[i],
                m[i]
            );
        }
    }
}

/// Every operation at every element type, on outputs, read-write buffers and shared arrays,
/// with its old value used and unused, against the CPU: one thread per element.
#[test]
fn every_atomic_agrees_with_the_cpu() {
    fn all<T: At>(batch: &mut Batch) {
        for (oi, op) in OPS.into_iter().enumerate() {
            for (mi, mem) in [Mem::Output, Mem::Buffer, Mem::Shared]
                .into_iter()
                .enumerate()
            {
                if op == AtomicOp::Load && mem == Mem::Shared {
                    // Atomic loads read buffers only (`misused_atomics_are_typed_errors`).
                    continue;
                }
                for used in [true, false] {
                    let name = format!("own_{}_{oi}_{mi}_{used}", T::DTYPE);
                    let order = match op {
                        AtomicOp::Load => [MemoryOrder::Relaxed, MemoryOrder::Acquire][mi % 2],
                        _ => [MemoryOrder::Relaxed, MemoryOrder::AcqRel][oi % 2],
                    };
                    let scope = [MemoryScope::Gpu, MemoryScope::Block][mi % 2];
                    let Some(kernel) = own_element::<T>(&name, op, mem, order, scope, used) else {
                        assert!(!op.takes(T::DTYPE), "{op:?} at {}", T::DTYPE);
                        continue;
                    };
                    batch.add(&kernel);
                    run_own::<T>(&kernel, mem, op, used, oi as u64 * 7 + mi as u64);
                }
            }
        }
    }
    let mut batch = Batch::default();
    all::<i32>(&mut batch);
    all::<u32>(&mut batch);
    all::<i64>(&mut batch);
    all::<u64>(&mut batch);
    all::<f32>(&mut batch);
    all::<f64>(&mut batch);
}

/// Many threads on few elements: the element after every update is the same in any order for
/// the commutative operations (and for `inc`/`dec` of one limit, counting modulo it); the old
/// values an add returns are its partial sums.
#[test]
fn contended_atomics_leave_what_every_order_leaves() {
    fn one<T: At>(op: AtomicOp, shared: bool, batch: &mut Batch) {
        let name = format!("contended_{}_{op:?}_{shared}", T::DTYPE);
        let mut k = KernelBuilder::new(&name).block(128);
        let (x, olds, y) = (k.input::<T>("x"), k.output::<T>("olds"), k.output::<T>("y"));
        let t = index::thread_rank();
        let g = index::block_index() * 128u32 + t.clone();
        let e = t.clone() % 4u32;
        let limit = Expr::lit(T::from_bits(10));
        let v = if matches!(op, AtomicOp::Inc | AtomicOp::Dec) {
            limit
        } else {
            x.at(&g)
        };
        let Some(ctl) = T::control(op, v, Expr::lit(T::from_bits(0))) else {
            return;
        };
        let old = if shared {
            let s = k.shared_array::<T>(4);
            k.if_(t.lt(4u32), |k| {
                k.shared_write(&s, &t, Expr::lit(T::from_bits(3)))
            });
            k.sync_block();
            let old = k.atomic(&s, &e, ctl);
            k.sync_block();
            k.if_(t.lt(4u32), |k| {
                k.atomic(
                    &y,
                    index::block_index() * 4u32 + t.clone(),
                    Atomic::exch(s.read(&t)),
                );
            });
            old
        } else {
            k.atomic(&y, index::block_index() * 4u32 + e, ctl)
        };
        k.write(&olds, &g, old);
        let kernel = k.build().unwrap_or_else(|e| panic!("{name}: {e}"));
        batch.add(&kernel);
        let dev = device();
        let mut rng = Rng::new(op as u64);
        // Small integers: float sums are exact in any order.
        let xs: Vec<T> = (0..256)
            .map(|_| {
                let small = (rng.next() % 17) as i64 - 8;
                match T::DTYPE {
                    DType::F32 | DType::F64 => T::cast_from_i64(small),
                    _ => T::from_bits(rng.next() % 1000),
                }
            })
            .collect();
        let init = T::from_bits(3);
        let xb = dev.upload(&xs).expect("upload");
        let mut ob = dev.alloc_zeroed::<T>(256).expect("alloc");
        let mut yb = dev.upload(&[init; 8]).expect("upload");
        compiled(dev, &kernel)
            .expect("compiles")
            .launch_grid(2, (&xb, &mut ob, &mut yb))
            .expect("runs");
        let (got, olds) = (yb.to_vec().expect("y"), ob.to_vec().expect("olds"));
        for b in 0..2usize {
            for e in 0..4usize {
                let mine: Vec<usize> = (0..128)
                    .map(|t| b * 128 + t)
                    .filter(|g| g % 4 == e)
                    .collect();
                let want = mine.iter().fold(init, |acc, &g| {
                    let v = if matches!(op, AtomicOp::Inc | AtomicOp::Dec) {
                        T::from_bits(10)
                    } else {
                        xs[g]
                    };
                    reference(op, shared, acc, v, v)
                });
                assert!(
                    same(got[b * 4 + e], want),
                    "{name}: element {e} of block {b}: {:?}, expected {want:?}",
                    got[b * 4 + e]
                );
                if op == AtomicOp::Add && !T::DTYPE.is_float() {
                    // Each old is the sum before one add: with the final sum, they are the
                    // partial sums, each add once.
                    let mut before: Vec<u64> = mine.iter().map(|&g| olds[g].to_bits()).collect();
                    let mut after: Vec<u64> = mine
                        .iter()
                        .map(|&g| add(olds[g], xs[g], shared).to_bits())
                        .collect();
                    before.push(got[b * 4 + e].to_bits());
                    after.push(init.to_bits());
                    before.sort();
                    after.sort();
                    assert_eq!(before, after, "{name}: the old values are not partial sums");
                }
            }
        }
    }
    let mut batch = Batch::default();
    for op in [
        AtomicOp::Add,
        AtomicOp::Sub,
        AtomicOp::Min,
        AtomicOp::Max,
        AtomicOp::NanMax,
        AtomicOp::And,
        AtomicOp::Or,
        AtomicOp::Xor,
        AtomicOp::Inc,
        AtomicOp::Dec,
    ] {
        for shared in [false, true] {
            one::<i32>(op, shared, &mut batch);
            one::<u32>(op, shared, &mut batch);
            one::<u64>(op, shared, &mut batch);
            one::<i64>(op, shared, &mut batch);
            one::<f32>(op, shared, &mut batch);
            one::<f64>(op, shared, &mut batch);
        }
    }
}

/// Where bounds are checked, an atomic past a buffer's end updates nothing and returns 0;
/// with `unchecked_bounds` it faults on the simulator.
#[test]
fn atomics_past_the_end_update_nothing() {
    let build = |unchecked: bool, op: u8| {
        let mut k = KernelBuilder::new(format!("past_{unchecked}_{op}")).block(32);
        if unchecked {
            k = k.unchecked_bounds();
        }
        let (y, olds) = (k.output::<f32>("y"), k.output::<f32>("olds"));
        let t = index::thread_rank();
        let ctl = match op {
            0 => Atomic::add(1.0f32),
            1 => Atomic::max(t.cast::<f32>()),
            _ => Atomic::exch(2.0f32),
        };
        let old = k.atomic(&y, t.cast::<u64>() * 2u64, ctl);
        k.write(&olds, &t, old);
        k.build().expect("builds")
    };
    let dev = device();
    let mut batch = Batch::default();
    for op in 0..3 {
        let kernel = build(false, op);
        batch.add(&kernel);
        let mut y = dev.upload(&[5.0f32; 20]).expect("upload");
        let mut olds = dev.upload(&[-1.0f32; 32]).expect("upload");
        compiled(dev, &kernel)
            .expect("compiles")
            .launch_grid(1, (&mut y, &mut olds))
            .expect("stays inside");
        let (y, olds) = (y.to_vec().expect("y"), olds.to_vec().expect("olds"));
        for (t, &old) in olds.iter().enumerate() {
            let inside = 2 * t < 20;
            assert_eq!(old, if inside { 5.0 } else { 0.0 }, "op {op} thread {t}");
        }
        for (i, &v) in y.iter().enumerate() {
            let want = match (i % 2, op) {
                (1, _) => 5.0,
                (_, 0) => 6.0,
                (_, 1) => (i as f32 / 2.0).max(5.0),
                _ => 2.0,
            };
            assert_eq!(v, want, "op {op} element {i}");
        }
        if !dev.is_cuda() {
            let kernel = build(true, op);
            batch.add(&kernel);
            let mut y = dev.upload(&[5.0f32; 20]).expect("upload");
            let mut olds = dev.upload(&[-1.0f32; 32]).expect("upload");
            let f = compiled(dev, &kernel).expect("compiles");
            // SAFETY: on the simulator, which reports the access past the end.
            let e = unsafe {
                f.launch_unchecked(
                    coopgraph::runtime::LaunchConfig::blocks(1),
                    (&mut y, &mut olds),
                )
            }
            .expect_err("past the end");
            assert!(
                matches!(e, RuntimeError::Sim(SimError::OutOfBounds(_))),
                "{e}"
            );
        }
    }
}

/// An unused old value makes a `red`, unless the order acquires; the PTX names the order and
/// scope asked for.
#[test]
fn atomics_carry_their_order_and_reduce_when_unused() {
    let build = |order: MemoryOrder, scope: MemoryScope, used: bool, shared: bool| {
        let name = format!("ordered_{order:?}_{scope:?}_{used}_{shared}");
        let mut k = KernelBuilder::new(name).block(32);
        let (y, olds) = (k.output::<u32>("y"), k.output::<u32>("olds"));
        let t = index::thread_rank();
        let ctl = Atomic::add(1u32).order(order).scope(scope);
        let old = if shared {
            let s = k.shared_array::<u32>(1);
            k.if_(t.eq(0u32), |k| k.shared_write(&s, 0u32, 0u32));
            k.sync_block();
            k.atomic(&s, 0u32, ctl)
        } else {
            k.atomic(&y, 0u32, ctl)
        };
        if used {
            k.write(&olds, &t, old);
        }
        k.build().expect("builds")
    };
    let ptx = |kernel: &Kernel| kernel.ptx(Arch::Sm90).expect("emits");
    let mut batch = Batch::default();
    let cases = [
        (
            MemoryOrder::Relaxed,
            MemoryScope::Gpu,
            false,
            false,
            "red.global.add.u32",
        ),
        (
            MemoryOrder::Relaxed,
            MemoryScope::Gpu,
            true,
            false,
            "atom.global.add.u32",
        ),
        (
            MemoryOrder::Release,
            MemoryScope::System,
            false,
            false,
            "red.release.sys.global.add.u32",
        ),
        (
            MemoryOrder::Acquire,
            MemoryScope::Gpu,
            false,
            false,
            "atom.acquire.gpu.global.add.u32",
        ),
        (
            MemoryOrder::AcqRel,
            MemoryScope::Block,
            true,
            true,
            "atom.acq_rel.cta.shared.add.u32",
        ),
        (
            MemoryOrder::Relaxed,
            MemoryScope::Block,
            false,
            true,
            "red.relaxed.cta.shared.add.u32",
        ),
    ];
    for (order, scope, used, shared, want) in cases {
        let kernel = build(order, scope, used, shared);
        let text = ptx(&kernel);
        assert!(text.contains(want), "{want}:\n{text}");
        let other = if want.starts_with("red") {
            "atom."
        } else {
            "red."
        };
        assert!(
            !text.lines().any(|l| l.trim_start().starts_with(other)),
            "{want}:\n{text}"
        );
        batch.add(&kernel);
    }
}

/// Atomics on one shared element never race with one another; a plain read that nothing
/// orders after them races with them.
#[test]
fn atomics_order_themselves_but_not_plain_accesses() {
    let build = |barrier: bool| {
        let mut k = KernelBuilder::new("count").block(64);
        let y = k.output::<u32>("y");
        let t = index::thread_rank();
        let s = k.shared_array::<u32>(1);
        k.if_(t.eq(0u32), |k| k.shared_write(&s, 0u32, 0u32));
        k.sync_block();
        k.atomic(&s, 0u32, Atomic::add(1u32));
        if barrier {
            k.sync_block();
        }
        k.write(&y, &t, s.read(0u32));
        k.build().expect("builds")
    };
    let dev = race_checker();
    let ordered = build(true);
    let f = compiled(&dev, &ordered).expect("compiles");
    let mut y = dev.alloc_zeroed::<u32>(64).expect("alloc");
    f.launch_grid(1, (&mut y,)).expect("no race");
    assert_eq!(y.to_vec().expect("y"), vec![64; 64]);
    let racy = build(false);
    let f = compiled(&dev, &racy).expect("compiles");
    let e = f
        .launch_grid(1, (&mut y,))
        .expect_err("a read racing with the adds");
    assert!(matches!(e, RuntimeError::Sim(SimError::Race(_))), "{e}");
    let mut batch = Batch::default();
    batch.add(&ordered);
}

/// A hand-edited IR with an atomic on a type it does not take, or on an input, gets typed
/// errors naming the op's line.
#[test]
fn misused_atomics_are_typed_errors() {
    let mut k = KernelBuilder::new("misuse").block(32);
    let (x, y) = (k.input::<f32>("x"), k.output::<f32>("y"));
    let t = index::thread_rank();
    let line = line!() + 1;
    k.atomic(&y, &t, Atomic::max(x.at(&t)));
    let mut ir = k.ir().clone();
    let at = (ir.ops.iter())
        .position(|o| matches!(o.kind, OpKind::Atomic(_)))
        .expect("the atomic");
    if let OpKind::Atomic(a) = &mut ir.ops[at].kind {
        a.op = AtomicOp::And;
        a.memory = AtomicMemory::Global(x.id());
    }
    let e = coopgraph::ir::verify::verify(&ir).expect_err("misused");
    assert!(
        e.has(|k| matches!(
            k,
            VerifyErrorKind::AtomicType {
                op: AtomicOp::And,
                dtype: DType::F32
            }
        )),
        "{e}"
    );
    assert!(
        e.has(|k| matches!(k, VerifyErrorKind::ParamRole { .. })),
        "{e}"
    );
    assert!(
        e.errors
            .iter()
            .all(|e| e.loc.to_string().contains(&format!("atomics.rs:{line}:"))),
        "{e}"
    );

    // An atomic load of a shared array's element, or with an order that releases.
    for (shared, order) in [(true, MemoryOrder::Relaxed), (false, MemoryOrder::Release)] {
        let mut k = KernelBuilder::new("misused_load").block(32);
        let (b, s) = (k.buffer::<u32>("b"), k.shared_array::<u32>(32));
        let t = index::thread_rank();
        let load = Atomic::load().order(order);
        // The line of the atomic: the one before each `line!()`.
        let line = if shared {
            k.atomic(&s, &t, load);
            line!() - 1
        } else {
            k.atomic(&b, &t, load);
            line!() - 1
        };
        let e = k.build().expect_err("misused load");
        let text = e.to_string();
        assert!(text.contains("atomic load"), "{text}");
        assert!(text.contains(&format!("atomics.rs:{line}:")), "{text}");
        let Error::Verify(v) = &e else {
            panic!("not a verify error: {e}")
        };
        let (want_order, want_shared) = (order, shared);
        assert!(
            v.has(
                |k| matches!(k, VerifyErrorKind::AtomicLoad { order, shared }
                if *order == want_order && *shared == want_shared)
            ),
            "{e}"
        );
    }
}

/// An atomic load read once is not a wait: blocks of a cooperative launch that each read once
/// and then meet at the grid barrier run on (the simulator takes only a load of one address
/// that keeps reading one value for a poll that sees nothing new).
#[test]
fn atomic_loads_read_once_are_not_waits() {
    let mut k = KernelBuilder::new("load_once").block(108);
    let (b, out) = (k.buffer::<u32>("b"), k.output::<u32>("out"));
    let g = index::block_index() * 108u32 + index::thread_rank();
    let v = k.atomic(
        &b,
        g.clone() % 5u32,
        Atomic::load().order(MemoryOrder::Acquire),
    );
    k.sync_grid();
    k.write(&out, g, v + 1u32);
    let kernel = k.build().expect("builds");
    let dev = device();
    let f = compiled(dev, &kernel).expect("compiles");
    let mut bb = dev.upload(&[10u32, 11, 12, 13, 14]).expect("upload");
    let mut ob = dev.alloc_zeroed::<u32>(3 * 108).expect("alloc");
    f.launch_grid(3, (&mut bb, &mut ob)).expect("runs");
    let want: Vec<u32> = (0..3 * 108).map(|i| 11 + i % 5).collect();
    assert_eq!(ob.to_vec().expect("out"), want);
}

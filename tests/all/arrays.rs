//! Local and constant arrays: per-thread arrays (`.local`) written and read at run-time
//! indices, constant arrays (`.const`) of host data read at run-time indices, each against a
//! CPU reference for every element type; what the simulator reports for an index past an
//! array's end (naming the array) and for a local element read before it was written; the
//! verifier's errors; and selects that never read an array on the side they do not take.

use super::common::{Batch, Rng, assert_same, compiled, device};
use coopgraph::ir::ops::{MAX_CONST_BYTES, MAX_LOCAL_BYTES, OpKind};
use coopgraph::ir::{Element, VerifyErrorKind, index};
use coopgraph::runtime::{Device, DeviceElement, LaunchConfig, RuntimeError};
use coopgraph::sim::{MemSpace, SimError};
use coopgraph::{Error, Kernel, KernelBuilder};
use proptest::prelude::*;

/// Each thread fills a local array of `len` with `x[t] + i` at element `(i + t) % len`, then
/// writes `step`-strided elements, then reads back `reads` of them: `y[t * reads + r]` is
/// element `(t * mul + r) % len`.
fn local_kernel<T: Element>(name: &str, block: u32, len: u32, mul: u32, reads: u32) -> Kernel {
    let mut k = KernelBuilder::new(name).block(block);
    let (x, y) = (k.input::<T>("x"), k.output::<T>("y"));
    let t = index::thread_rank();
    let arr = k.local_array::<T>(len);
    let base = x.at(&t);
    k.for_range(0u32, len, |k, i| {
        let at = (i.clone() + t.clone() % len) % len;
        k.local_write(&arr, at, base + i.cast::<T>());
    });
    // Every third element is overwritten with its index.
    k.for_range_step(0u32, len, 3u32, |k, i| {
        k.local_write(&arr, i.clone(), i.cast::<T>())
    });
    k.for_range(0u32, reads, |k, r| {
        let at = (t.clone() * mul + r.clone()) % len;
        k.write(&y, t.clone() * reads + r, arr.read(at));
    });
    k.build().unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// What [`local_kernel`] writes.
fn local_on_cpu<T: Element>(xs: &[T], len: u32, mul: u32, reads: u32) -> Vec<T> {
    let mut out = Vec::new();
    for (t, &x) in xs.iter().enumerate() {
        let t = t as u32;
        let mut arr = vec![T::from_bits(0); len as usize];
        for i in 0..len {
            let v = add_index(x, i);
            arr[((i + t % len) % len) as usize] = v;
        }
        for i in (0..len).step_by(3) {
            arr[i as usize] = T::cast_from_i64(i64::from(i));
        }
        for r in 0..reads {
            out.push(arr[((t.wrapping_mul(mul).wrapping_add(r)) % len) as usize]);
        }
    }
    out
}

/// `x + i as T`, as the kernel computes it (wrapping integers, one rounding for floats).
fn add_index<T: Element>(x: T, i: u32) -> T {
    let i = T::cast_from_i64(i64::from(i));
    match T::DTYPE {
        coopgraph::ir::DType::F32 => {
            let v = f32::from_bits(x.to_bits() as u32) + f32::from_bits(i.to_bits() as u32);
            T::from_bits(u64::from(v.to_bits()))
        }
        coopgraph::ir::DType::F64 => {
            let v = f64::from_bits(x.to_bits()) + f64::from_bits(i.to_bits());
            T::from_bits(v.to_bits())
        }
        _ => {
            let bits = x.to_bits().wrapping_add(i.to_bits());
            let width = T::DTYPE.bytes() * 8;
            let mask = if width == 64 {
                u64::MAX
            } else {
                (1 << width) - 1
            };
            T::from_bits(bits & mask)
        }
    }
}

/// Runs [`local_kernel`] for `T` against the CPU.
fn local_case<T: Element + DeviceElement>(block: u32, len: u32, mul: u32, reads: u32, seed: u64) {
    let kernel = local_kernel::<T>(&format!("local_{}", T::DTYPE), block, len, mul, reads);
    let dev = device();
    let xs: Vec<T> = Rng::new(seed).vec(block as usize);
    let xb = dev.upload(&xs).expect("upload");
    let mut yb = dev
        .alloc_zeroed::<T>((block * reads) as usize)
        .expect("alloc");
    compiled(dev, &kernel)
        .expect("compiles")
        .launch_grid(1, (&xb, &mut yb))
        .expect("launch");
    let want = local_on_cpu(&xs, len, mul, reads);
    assert_same(&yb.to_vec().expect("download"), &want, "local array");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, .. ProptestConfig::default() })]

    /// Local arrays of every element type hold each thread's own values at every index.
    #[test]
    fn local_arrays_agree_with_the_cpu(
        block in 1u32..100,
        len in 1u32..40,
        mul in 0u32..7,
        reads in 1u32..6,
        seed in any::<u64>(),
    ) {
        local_case::<u8>(block, len, mul, reads, seed);
        local_case::<i16>(block, len, mul, reads, seed);
        local_case::<u32>(block, len, mul, reads, seed);
        local_case::<i64>(block, len, mul, reads, seed);
        local_case::<f32>(block, len, mul, reads, seed);
        local_case::<f64>(block, len, mul, reads, seed);
    }

    /// Constant arrays of every element type read what the host gave, at any index.
    #[test]
    fn constant_arrays_agree_with_the_cpu(
        block in 1u32..100,
        len in 1usize..200,
        mul in 0u32..9,
        add in 0u32..50,
        seed in any::<u64>(),
    ) {
        const_case::<i8>(block, len, mul, add, seed);
        const_case::<u16>(block, len, mul, add, seed);
        const_case::<i32>(block, len, mul, add, seed);
        const_case::<u64>(block, len, mul, add, seed);
        const_case::<f32>(block, len, mul, add, seed);
        const_case::<f64>(block, len, mul, add, seed);
    }
}

/// `y[t] = table[(t * mul + add) % len] `, the table a constant array.
fn const_kernel<T: Element>(name: &str, block: u32, table: &[T], mul: u32, add: u32) -> Kernel {
    let mut k = KernelBuilder::new(name).block(block);
    let y = k.output::<T>("y");
    let c = k.const_array(table);
    let t = index::thread_rank();
    k.write(&y, &t, c.read((t.clone() * mul + add) % c.len()));
    k.build().unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn const_case<T: Element + DeviceElement>(block: u32, len: usize, mul: u32, add: u32, seed: u64) {
    let table: Vec<T> = Rng::new(seed).vec(len);
    let kernel = const_kernel(&format!("const_{}", T::DTYPE), block, &table, mul, add);
    let dev = device();
    let mut yb = dev.alloc_zeroed::<T>(block as usize).expect("alloc");
    compiled(dev, &kernel)
        .expect("compiles")
        .launch_grid(1, (&mut yb,))
        .expect("launch");
    let want: Vec<T> = (0..block)
        .map(|t| table[((t * mul + add) % len as u32) as usize])
        .collect();
    assert_same(&yb.to_vec().expect("download"), &want, "constant array");
}

#[test]
fn local_and_constant_arrays_assemble_for_every_arch() {
    let mut batch = Batch::default();
    batch.add(&local_kernel::<u8>("local_a", 64, 7, 3, 2));
    batch.add(&local_kernel::<f64>("local_b", 96, 33, 5, 4));
    // Two kernels with constant arrays in one module: their symbols do not clash.
    batch.add(&const_kernel("const_a", 32, &[1u32, 2, 3], 1, 0));
    batch.add(&const_kernel("const_b", 32, &[0.5f64; 9], 2, 1));
    batch.finish();
}

/// The values of a constant array are part of the kernel: another table is another kernel,
/// with its own key and module.
#[test]
fn a_constant_arrays_values_are_part_of_the_key() {
    let a = const_kernel("table", 32, &[1u32, 2, 3, 4], 1, 0);
    let b = const_kernel("table", 32, &[1u32, 2, 3, 5], 1, 0);
    let c = const_kernel("table", 32, &[1u32, 2, 3, 4], 1, 0);
    assert_ne!(a.key(), b.key());
    assert_eq!(a.key(), c.key());
    let dev = device();
    let (fa, fb) = (compiled(dev, &a).expect("a"), compiled(dev, &b).expect("b"));
    assert!(!fa.same_module(&fb));
    let mut ya = dev.alloc_zeroed::<u32>(32).expect("alloc");
    let mut yb = dev.alloc_zeroed::<u32>(32).expect("alloc");
    fa.launch_grid(1, (&mut ya,)).expect("launch");
    fb.launch_grid(1, (&mut yb,)).expect("launch");
    assert_eq!(ya.to_vec().expect("download")[3], 4);
    assert_eq!(yb.to_vec().expect("download")[3], 5);
    let local = |len: u32| local_kernel::<u32>("local", 32, len, 1, 1);
    assert_ne!(local(4).key(), local(5).key());
}

/// An index past a local or constant array's end, in a kernel without bounds checks (which
/// would guard it), is an out-of-bounds fault on the simulator that names the array, not a
/// read of another array's bytes.
#[test]
fn indices_past_an_arrays_end_are_reported_naming_the_array() {
    let sim = Device::sim();
    // Two local arrays: thread 5 reads element 4 of the first, of 4 elements.
    let mut k = KernelBuilder::new("local_over").block(8).unchecked_bounds();
    let y = k.output::<u32>("y");
    let (first, second) = (k.local_array::<u32>(4), k.local_array::<u32>(4));
    k.for_range(0u32, 4u32, |k, i| {
        k.local_write(&first, i.clone(), i.clone());
        k.local_write(&second, i.clone(), i);
    });
    let t = index::thread_rank();
    let at = (t.clone() * 5u32 / 6u32).min(4u32);
    k.write(&y, &t, first.read(at) + second.read(0u32));
    let kernel = k.build().expect("builds");
    let mut yb = sim.alloc_zeroed::<u32>(8).expect("alloc");
    let f = compiled(&sim, &kernel).expect("compiles");
    // SAFETY: the simulator, which reports the stray array index instead of running it.
    let r = unsafe { f.launch_unchecked(LaunchConfig::blocks(1), (&mut yb,)) };
    let Err(RuntimeError::Sim(SimError::OutOfBounds(f))) = &r else {
        panic!("expected an out-of-bounds fault, got {r:?}")
    };
    assert_eq!(f.space, MemSpace::Local);
    let nearest = f.nearest.as_ref().expect("names the array");
    assert_eq!(nearest.name.as_deref(), Some("local0"), "{f:?}");
    assert!(
        nearest
            .note
            .as_deref()
            .is_some_and(|n| n.contains("arrays.rs"))
    );

    // A constant array of 3 read at 3.
    let mut k = KernelBuilder::new("const_over").block(4).unchecked_bounds();
    let y = k.output::<i32>("y");
    let c = k.const_array(&[1i32, 2, 3]);
    let t = index::thread_rank();
    k.write(&y, &t, c.read(t.clone()));
    let kernel = k.build().expect("builds");
    let mut yb = sim.alloc_zeroed::<i32>(4).expect("alloc");
    let f = compiled(&sim, &kernel).expect("compiles");
    // SAFETY: the simulator, which reports the stray array index instead of running it.
    let r = unsafe { f.launch_unchecked(LaunchConfig::blocks(1), (&mut yb,)) };
    let Err(RuntimeError::Sim(SimError::OutOfBounds(f))) = &r else {
        panic!("expected an out-of-bounds fault, got {r:?}")
    };
    assert_eq!(f.space, MemSpace::Const);
    let nearest = f.nearest.as_ref().expect("names the array");
    assert_eq!(nearest.name.as_deref(), Some("const_over_cmem0"), "{f:?}");
}

/// A local element read before the thread wrote it holds no value: the simulator's
/// uninitialized-read checker reports it where it is used.
#[test]
fn a_local_element_never_written_is_an_uninitialized_read() {
    let mut k = KernelBuilder::new("local_unwritten").block(4);
    let y = k.output::<u32>("y");
    let arr = k.local_array::<u32>(4);
    let t = index::thread_rank();
    k.local_write(&arr, 0u32, 7u32);
    k.write(&y, &t, arr.read(t.clone()));
    let kernel = k.build().expect("builds");
    let sim = Device::sim();
    let mut yb = sim.alloc_zeroed::<u32>(4).expect("alloc");
    let r = compiled(&sim, &kernel)
        .expect("compiles")
        .launch_grid(1, (&mut yb,));
    assert!(
        matches!(r, Err(RuntimeError::Sim(SimError::Uninitialized(_)))),
        "{r:?}"
    );
}

/// A select reads an array only on the side it takes: `t > 0 ? a[t - 1] : 0` never reads
/// element `u32::MAX`.
#[test]
fn selects_read_arrays_only_on_the_side_taken() {
    let mut k = KernelBuilder::new("select_arrays").block(8);
    let y = k.output::<u32>("y");
    let c = k.const_array(&[10u32, 11, 12, 13, 14, 15, 16, 17]);
    let arr = k.local_array::<u32>(8);
    k.for_range(0u32, 8u32, |k, i| k.local_write(&arr, i.clone(), i * 2u32));
    let t = index::thread_rank();
    let has = t.gt(0u32);
    let prev = has.select(c.read(t.clone() - 1u32), 0u32);
    let local = has.select(arr.read(t.clone() - 1u32), 100u32);
    k.write(&y, &t, prev + local);
    let kernel = k.build().expect("builds");
    let dev = device();
    let mut yb = dev.alloc_zeroed::<u32>(8).expect("alloc");
    compiled(dev, &kernel)
        .expect("compiles")
        .launch_grid(1, (&mut yb,))
        .expect("no access past either array");
    let want: Vec<u32> = (0..8)
        .map(|t| if t == 0 { 100 } else { 9 + t + 2 * (t - 1) })
        .collect();
    assert_eq!(yb.to_vec().expect("download"), want);
}

/// Every misuse is a verifier error naming its line, all at once: empty arrays, local
/// arrays past a thread's local memory, constant arrays past a module's bank, and (in an IR
/// edited by hand) an array index that is no `u32`.
#[test]
fn array_misuses_are_typed_errors_naming_the_line() {
    let mut k = KernelBuilder::new("bad_arrays");
    let (_, l_empty) = (k.local_array::<u32>(0), line!());
    let (_, c_empty) = (k.const_array::<f32>(&[]), line!());
    let (_, _l_half) = (k.local_array::<u64>((MAX_LOCAL_BYTES / 16) as u32), line!());
    let (_, l_over) = (k.local_array::<u64>((MAX_LOCAL_BYTES / 8) as u32), line!());
    let big = vec![0u32; (MAX_CONST_BYTES / 4) as usize];
    let (_, _c_full) = (k.const_array(&big), line!());
    let (_, c_over) = (k.const_array(&[1u8]), line!());
    let Err(Error::Verify(e)) = k.build() else {
        panic!("built")
    };
    let at = |line: u32, pred: &dyn Fn(&VerifyErrorKind) -> bool| {
        assert!(
            e.errors.iter().any(|x| x.loc.line == line && pred(&x.kind)),
            "no error at line {line}: {e}"
        )
    };
    at(l_empty, &|k| {
        matches!(k, VerifyErrorKind::EmptyArray { what: "local" })
    });
    at(c_empty, &|k| {
        matches!(k, VerifyErrorKind::EmptyArray { what: "constant" })
    });
    at(l_over, &|k| {
        matches!(k, VerifyErrorKind::LocalMemory { bytes, max }
            if *bytes == MAX_LOCAL_BYTES / 2 + MAX_LOCAL_BYTES && *max == MAX_LOCAL_BYTES)
    });
    at(
        c_over,
        &|k| matches!(k, VerifyErrorKind::ConstMemory { bytes, .. } if *bytes == MAX_CONST_BYTES + 1),
    );
    assert_eq!(e.errors.len(), 4, "{e}");

    // A float index, written into the IR by hand: the typed builder does not compile one.
    let mut k = KernelBuilder::new("float_index").block(32);
    let arr = k.local_array::<u32>(4);
    let f = k.fill(index::thread_rank().cast::<f32>());
    let line = line!() + 1;
    k.local_write(&arr, 0u32, 1u32);
    let mut ir = k.ir().clone();
    let float = (ir.ops.iter())
        .find_map(|op| match &op.kind {
            OpKind::Map { dst, expr, .. } if *dst == f.id() => Some(*expr),
            _ => None,
        })
        .expect("the fill's expression, an f32");
    for op in &mut ir.ops {
        if let OpKind::LocalWrite { index, .. } = &mut op.kind {
            *index = float;
        }
    }
    let e = coopgraph::ir::verify::verify(&ir).expect_err("a float index");
    assert!(
        e.errors.iter().any(|x| x.loc.line == line
            && matches!(x.kind, VerifyErrorKind::IndexType { buffer: false, .. })),
        "{e}"
    );
}

/// The listing names local and constant arrays as their ops use them.
#[test]
fn explain_lists_local_and_constant_arrays() {
    let kernel = const_kernel("listed", 32, &[5u16, 6, 7], 1, 0);
    let report = kernel.explain();
    assert!(
        report.contains("cmem0: const u16 x 3 = [5, 6, 7]"),
        "{report}"
    );
    assert!(
        report.contains("cmem0[(threadIdx.x * 1 + 0) % 3]"),
        "{report}"
    );
    let report = local_kernel::<i32>("listed_local", 32, 5, 1, 1).explain();
    assert!(report.contains("local0: local i32 x 5"), "{report}");
}

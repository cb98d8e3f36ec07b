//! Global memory by index: `x.at(i)` reads (the read-only path for inputs, the coherent one for
//! read-write buffers), `k.write(&y, i, v)` writes, 64-bit indices, the checks of safe
//! launches (a read past the end gives 0, a write there is skipped), their absence with
//! `unchecked_bounds`, and selects that never read the side they do not take. Every kernel is
//! assembled for every arch and run with every checker on against a CPU reference.

use super::common::{Batch, Rng, assemble_all, assert_same, compiled, device};
use coopgraph::ir::ops::OpKind;
use coopgraph::ir::{Element, Expr, Reduce, Role, VerifyErrorKind, index};
use coopgraph::ptx::Arch;
use coopgraph::runtime::{
    Compile, DeviceElement, HiddenParam, LaunchConfig, ParamKind, RuntimeError,
};
use coopgraph::sim::{MemSpace, SimError};
use coopgraph::{Error, Kernel, KernelBuilder, Load, Store};
use proptest::prelude::*;

/// `y[g + shift] = x[(g * mul + add) % (len_x + over)] + 1` for each thread `g` of the grid:
/// reads and writes that run past both buffers' ends, with `u64` indices where `wide`.
fn gather(name: &str, block: u32, mul: u32, add: u32, span: u32, shift: u32, wide: bool) -> Kernel {
    let mut k = KernelBuilder::new(name).block(block);
    let (x, y) = (k.input::<i32>("x"), k.output::<i32>("y"));
    let g = index::block_index() * index::block_threads() + index::thread_rank();
    let src = (g.clone() * mul + add) % span;
    let dst = g + shift;
    let v = if wide {
        x.at(src.cast::<u64>()) + 1
    } else {
        x.at(src) + 1
    };
    if wide {
        k.write(&y, dst.cast::<u64>(), v);
    } else {
        k.write(&y, dst, v);
    }
    k.build().unwrap_or_else(|e| panic!("{name}: {e}"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, .. ProptestConfig::default() })]

    /// Reads and writes at any index, past the ends included, agree with the CPU: a read past
    /// the end gives 0, a write there is skipped, and no access leaves the buffers (the
    /// simulator reports any that would).
    #[test]
    fn reads_and_writes_by_index_agree_with_the_cpu(
        block in 1u32..200,
        grid in 1u32..4,
        len_x in 1usize..300,
        len_y in 1usize..300,
        mul in 1u32..5,
        add in 0u32..50,
        over in 0u32..4,
        shift in 0u32..20,
        wide in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let span = len_x as u32 + over;
        let kernel = gather("gather", block, mul, add, span, shift, wide);
        let dev = device();
        let f = compiled(dev, &kernel).expect("compiles");
        let xs: Vec<i32> = Rng::new(seed).vec(len_x);
        let xb = dev.upload(&xs).expect("upload");
        let mut yb = dev.upload(&vec![-7i32; len_y]).expect("upload");
        f.launch_grid(grid, (&xb, &mut yb)).expect("a safe launch stays in bounds");
        let mut want = vec![-7i32; len_y];
        for g in 0..grid * block {
            let src = (g.wrapping_mul(mul).wrapping_add(add) % span) as usize;
            let v = xs.get(src).copied().unwrap_or(0).wrapping_add(1);
            if let Some(w) = want.get_mut((g + shift) as usize) {
                *w = v;
            }
        }
        prop_assert_eq!(yb.to_vec().expect("download"), want);
    }
}

#[test]
fn gathers_assemble_for_every_arch() {
    let mut batch = Batch::default();
    for (i, wide) in [false, true].into_iter().enumerate() {
        batch.add(&gather(&format!("gather{i}"), 96, 3, 5, 100, 7, wide));
    }
    batch.finish();
}

/// Every element type reads through `at` and writes through `write`, narrow ones with their
/// sign or zero extension; past the end it reads 0.
#[test]
fn every_dtype_reads_and_writes_by_index() {
    fn one<T: Element + DeviceElement>(batch: &mut Batch) {
        let mut k = KernelBuilder::new(format!("copy_{}", T::DTYPE)).block(64);
        let (x, y) = (k.input::<T>("x"), k.output::<T>("y"));
        let t = index::thread_rank();
        // y[t] = x[63 - t], and x has 40 elements: the first 24 threads read past its end.
        k.write(&y, &t, x.at(63u32 - t.clone()));
        let kernel = k.build().expect("builds");
        batch.add(&kernel);
        let dev = device();
        let xs: Vec<T> = Rng::new(T::DTYPE.bytes() as u64).vec(40);
        let xb = dev.upload(&xs).expect("upload");
        let mut yb = dev.alloc_zeroed::<T>(64).expect("alloc");
        compiled(dev, &kernel)
            .expect("compiles")
            .launch_grid(1, (&xb, &mut yb))
            .expect("runs");
        let want: Vec<T> = (0..64)
            .map(|t| xs.get(63 - t).copied().unwrap_or_else(|| T::from_bits(0)))
            .collect();
        assert_same(&yb.to_vec().expect("download"), &want, kernel.name());
    }
    every_dtype!(one);
}

/// An input reads through the read-only path, a read-write buffer through the coherent one:
/// a thread reads back what it wrote just before, and tile loads and stores take buffers too.
#[test]
fn a_read_write_buffer_reads_back_its_own_writes() {
    let mut k = KernelBuilder::new("in_place").block(64).items_per_thread(2);
    let (x, a) = (k.input::<u32>("x"), k.buffer::<u32>("a"));
    let b = k.this_block();
    let t = index::thread_rank();
    // a[t] = 2 * a[t] + x[t]; then a[t] = a[t] + 1 reads the write just made.
    k.write(&a, &t, a.at(&t) * 2u32 + x.at(&t));
    k.write(&a, &t, a.at(&t) + 1u32);
    // The whole tile, loaded and stored in place: a[p] = 3 * a[p].
    k.sync_block();
    let tile = k.load_from(b, &a, Load::direct());
    let tripled = k.map(&tile, |v| v * 3u32);
    k.store_to(b, &a, &tripled, Store::direct());
    let kernel = k.build().expect("builds");
    assemble_all(&kernel);
    let ptx = kernel.ptx(Arch::Sm90).expect("emits");
    assert!(ptx.contains("ld.global.nc.u32"), "{ptx}");
    assert!(
        ptx.lines()
            .any(|l| l.contains("ld.global.u32") && !l.contains(".nc")),
        "{ptx}"
    );
    let sig = kernel.signature();
    assert_eq!(sig[1].kind, ParamKind::Buffer);
    let dev = device();
    let f = compiled(dev, &kernel).expect("compiles");
    let xs: Vec<u32> = (0..128).map(|i| i * 7).collect();
    let before: Vec<u32> = (0..128).map(|i| i + 1000).collect();
    let xb = dev.upload(&xs).expect("upload");
    let mut ab = dev.upload(&before).expect("upload");
    f.launch_grid(1, (&xb, &mut ab)).expect("runs");
    let want: Vec<u32> = (0..128usize)
        .map(|i| {
            let v = if i < 64 {
                before[i] * 2 + xs[i] + 1
            } else {
                before[i]
            };
            v * 3
        })
        .collect();
    assert_eq!(ab.to_vec().expect("download"), want);
    // A read-write buffer takes `&mut` only.
    let err = f.launch_grid(1, (&xb, &ab)).expect_err("a shared borrow");
    assert!(
        matches!(err, RuntimeError::ArgMismatch { index: 1, .. }),
        "{err}"
    );
}

/// A read of an input at a block-uniform index is block-uniform (inputs do not change during
/// a launch): it may decide a branch around a collective. A read-write buffer's may not.
#[test]
fn reads_of_inputs_at_uniform_indices_are_uniform() {
    let build = |buffer: bool| {
        let mut k = KernelBuilder::new("gate").block(64).items_per_thread(1);
        let y = k.output::<u32>("y");
        let b = k.this_block();
        let t = k.fill(index::thread_rank());
        let gate = if buffer {
            k.buffer::<u32>("g").at(index::block_index())
        } else {
            k.input::<u32>("g").at(index::block_index())
        };
        k.if_(gate.gt(0u32), |k| {
            let s = k.reduce(b, &t, Reduce::sum().broadcast());
            k.store_to(b, &y, &s, Store::direct());
        });
        k.build()
    };
    let kernel = build(false).expect("an input's read is uniform");
    let dev = device();
    let f = compiled(dev, &kernel).expect("compiles");
    let gb = dev.upload(&[1u32, 0]).expect("upload");
    let mut yb = dev.alloc_zeroed::<u32>(128).expect("alloc");
    f.launch_grid(2, (&mut yb, &gb)).expect("runs");
    let got = yb.to_vec().expect("download");
    assert_eq!(&got[..64], &[2016; 64][..]);
    assert_eq!(&got[64..], &[0; 64][..]);
    let Err(Error::Verify(e)) = build(true) else {
        panic!("a buffer's read is not uniform");
    };
    assert!(e.has(|k| matches!(k, VerifyErrorKind::NonUniformCollective { .. })));
}

/// `has.select(s.read(t - 1), 0)`: the thread without a left neighbour never reads element
/// `-1`, which lies outside the array. Old code evaluated both sides and read it.
#[test]
fn selects_never_read_the_side_they_do_not_take() {
    let mut k = KernelBuilder::new("left").block(64);
    let y = k.output::<i32>("y");
    let s = k.shared_array::<i32>(64);
    let t = index::thread_rank();
    k.shared_write(&s, &t, t.cast::<i32>() * 10);
    k.sync_block();
    let has = t.gt(0u32);
    k.write(&y, &t, has.select(s.read(t.clone() - 1u32), -1));
    let kernel = k.build().expect("builds");
    assemble_all(&kernel);
    let dev = device();
    let mut yb = dev.alloc_zeroed::<i32>(64).expect("alloc");
    compiled(dev, &kernel)
        .expect("compiles")
        .launch_grid(1, (&mut yb,))
        .expect("no read of element -1");
    let want: Vec<i32> = (0..64)
        .map(|t| if t == 0 { -1 } else { (t - 1) * 10 })
        .collect();
    assert_eq!(yb.to_vec().expect("download"), want);
}

/// In a kernel without bounds checks a read past the end faults (the simulator says where),
/// unless a select, an `and` or an `or` leaves it out: a bounds test guards what follows it,
/// in a shallow expression and in one deep enough to be evaluated bottom up.
#[test]
fn unchecked_reads_happen_only_where_taken() {
    let n = 40u32;
    let build = |guard: u8| {
        let mut k = KernelBuilder::new(format!("guarded{guard}"))
            .block(64)
            .unchecked_bounds();
        let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
        let t = index::thread_rank();
        let inside = t.lt(n);
        let v: Expr<u32> = match guard {
            0 => x.at(&t),
            1 => inside.select(x.at(&t), 0u32),
            2 => inside.and(&x.at(&t).gt(5u32)).to::<u32>(),
            3 => (!inside.clone()).or(&x.at(&t).gt(5u32)).to::<u32>(),
            _ => {
                // 100 nested selects, each reading only where its own test holds.
                let mut acc = Expr::lit(0u32);
                for j in 0..100u32 {
                    let i = t.clone() + j;
                    acc = i.lt(n).select(x.at(&i) + acc.clone(), acc);
                }
                acc
            }
        };
        k.write(&y, &t, v);
        k.build().expect("builds")
    };
    let dev = device();
    let xs: Vec<u32> = (0..n).map(|i| i * 3).collect();
    let run = |kernel: &Kernel| {
        let xb = dev.upload(&xs)?;
        let mut yb = dev.alloc_zeroed::<u32>(64)?;
        let f = compiled(dev, kernel)?;
        // SAFETY: the kernel reads x only below its length (guards 1 to 4); guard 0 runs on
        // the simulator only, which reports the read past the end.
        unsafe { f.launch_unchecked(LaunchConfig::blocks(1), (&xb, &mut yb))? };
        yb.to_vec()
    };
    let mut batch = Batch::default();
    for guard in 0..5 {
        let kernel = build(guard);
        batch.add(&kernel);
        if guard == 0 {
            if !dev.is_cuda() {
                let e = run(&kernel).expect_err("reads past the end");
                assert!(
                    matches!(&e, RuntimeError::Sim(SimError::OutOfBounds(f)) if f.space == MemSpace::Global),
                    "{e}"
                );
            }
            continue;
        }
        let got = run(&kernel).expect("reads only inside");
        let want: Vec<u32> = (0..64u32)
            .map(|t| {
                let x = |i: u32| xs.get(i as usize).copied();
                match guard {
                    1 => x(t).unwrap_or(0),
                    2 => x(t).is_some_and(|v| v > 5) as u32,
                    3 => (t >= n || x(t).is_some_and(|v| v > 5)) as u32,
                    _ => (0..100).rev().fold(0, |acc, j| match x(t + j) {
                        Some(v) => v + acc,
                        None => acc,
                    }),
                }
            })
            .collect();
        assert_eq!(got, want, "guard {guard}");
    }
}

/// Indices past `u32::MAX` take 64 bits: the buffer's length is passed whole (a `u64`), an
/// index there reads 0 and writes nothing, and the address arithmetic is 64-bit.
#[test]
fn sixty_four_bit_indices_reach_past_u32_max() {
    let mut k = KernelBuilder::new("far").block(32);
    let (x, y) = (k.input::<u16>("x"), k.output::<u16>("y"));
    let t = index::thread_rank().cast::<u64>();
    let far = t.clone() + (1u64 << 32);
    // y[t] = x[t] + x[t + 2^32] (0: past the end); y[t + 2^32] is skipped.
    k.write(&y, &t, x.at(&t) + x.at(&far));
    k.write(&y, &far, Expr::lit(9u16));
    let kernel = k.build().expect("builds");
    assemble_all(&kernel);
    let image = kernel.emit(Arch::Sm90).expect("emits");
    assert_eq!(
        image.hidden,
        vec![
            HiddenParam::Length64 { buffer: 0 },
            HiddenParam::Length64 { buffer: 1 }
        ]
    );
    let ptx = &image.ptx;
    assert!(ptx.contains(".param .u64 far_len_0"), "{ptx}");
    assert!(ptx.contains("mad.lo.u64"), "{ptx}");
    let dev = device();
    let xs: Vec<u16> = (0..32).map(|i| 100 + i).collect();
    let xb = dev.upload(&xs).expect("upload");
    let mut yb = dev.alloc_zeroed::<u16>(32).expect("alloc");
    compiled(dev, &kernel)
        .expect("compiles")
        .launch_grid(1, (&xb, &mut yb))
        .expect("runs");
    assert_eq!(yb.to_vec().expect("download"), xs);
}

/// With `unchecked_bounds` the accesses carry no guard: no hidden lengths, no comparison.
#[test]
fn unchecked_kernels_drop_the_checks() {
    let build = |unchecked: bool| {
        let mut k = KernelBuilder::new("plain").block(32);
        if unchecked {
            k = k.unchecked_bounds();
        }
        let (x, y) = (k.input::<f32>("x"), k.output::<f32>("y"));
        let t = index::thread_rank();
        k.write(&y, &t, x.at(&t) * 2.0f32);
        k.build().expect("builds")
    };
    let checked = build(false).ptx(Arch::Sm80).expect("emits");
    let unchecked = build(true).ptx(Arch::Sm80).expect("emits");
    assert!(checked.contains("setp.lt.u32"), "{checked}");
    assert!(!unchecked.contains("setp"), "{unchecked}");
    assert!(!unchecked.contains("_len_"), "{unchecked}");
    assert!(
        build(true)
            .emit(Arch::Sm80)
            .expect("emits")
            .hidden
            .is_empty()
    );
}

/// A hand-edited IR that reads an output, writes an input or indexes with a signed integer
/// gets typed errors naming the op's line.
#[test]
fn misused_indexed_accesses_are_typed_errors() {
    let mut k = KernelBuilder::new("misuse").block(32);
    let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    let t = index::thread_rank();
    let line = line!() + 1;
    k.write(&y, &t, x.at(&t));
    // A signed value for the edit below to use as an index.
    k.fill(t.cast::<i32>());
    let base = k.ir().clone();
    let lines = |e: &coopgraph::ir::VerifyErrors| {
        e.errors
            .iter()
            .map(|e| e.loc.to_string())
            .collect::<Vec<_>>()
    };
    // The output is read, the input written.
    let mut ir = base.clone();
    ir.params[0].role = Role::Output;
    ir.params[1].role = Role::Input;
    let e = coopgraph::ir::verify::verify(&ir).expect_err("roles");
    let roles = e
        .errors
        .iter()
        .filter(|e| matches!(e.kind, VerifyErrorKind::ParamRole { .. }))
        .count();
    assert_eq!(roles, 2, "{e}");
    assert!(
        lines(&e)
            .iter()
            .all(|l| l.contains(&format!("indexed.rs:{line}:"))),
        "{e}"
    );
    // An i32 index.
    let mut ir = base;
    let signed = (ir.ops.iter())
        .find_map(|o| match o.kind {
            OpKind::Map { expr, .. } => Some(expr),
            _ => None,
        })
        .expect("the signed value");
    let write = (ir.ops.iter())
        .position(|o| matches!(o.kind, OpKind::GlobalWrite { .. }))
        .expect("the write");
    if let OpKind::GlobalWrite { index, .. } = &mut ir.ops[write].kind {
        *index = signed;
    }
    let e = coopgraph::ir::verify::verify(&ir).expect_err("index type");
    assert!(
        e.has(|k| matches!(k, VerifyErrorKind::IndexType { .. })),
        "{e}"
    );
    assert!(lines(&e)[0].contains(&format!("indexed.rs:{line}:")), "{e}");
}

/// Selects whose sides share a select that is on the sides of others would be lowered once
/// per path through them, which grows exponentially: past a bound that is a typed error naming
/// the line, not a hang. A chain of selects whose sides share their inner one (the common
/// shape) is lowered once per select, however long.
#[test]
fn conditional_reads_are_lowered_in_bounded_time() {
    let build = |diamond: bool, levels: u32| {
        let mut k = KernelBuilder::new("shared_sides").block(32);
        let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
        let t = index::thread_rank();
        let mut s = x.at(&t);
        for j in 0..levels {
            let c = (t.clone() + j).lt(16u32);
            s = if diamond {
                // Both sides hold `s` behind a condition of their own: no side needs it
                // wherever the select does.
                let d = (t.clone() * j).lt(100u32);
                c.select(
                    d.select(s.clone(), 1u32),
                    d.select(s.clone() + x.at(j), 2u32),
                )
            } else {
                c.select(s.clone() + x.at(j), s)
            };
        }
        let line = line!() + 1;
        k.write(&y, &t, s);
        (k.build().expect("builds"), line)
    };
    let (chain, _) = build(false, 3000);
    let start = std::time::Instant::now();
    chain.ptx(Arch::Sm80).expect("a chain lowers");
    assert!(start.elapsed().as_secs() < 30, "{:?}", start.elapsed());
    let (diamond, line) = build(true, 40);
    let start = std::time::Instant::now();
    let e = diamond.ptx(Arch::Sm80).expect_err("too many paths");
    assert!(start.elapsed().as_secs() < 30, "{:?}", start.elapsed());
    assert!(
        matches!(e, coopgraph::planner::PlanError::ConditionalReads { .. }),
        "{e}"
    );
    assert!(
        e.to_string().contains(&format!("indexed.rs:{line}:")),
        "{e}"
    );
}

/// A read-write buffer loaded and stored back by tiles with vector accesses (example 09's
/// second SAXPY): `y = a * x + y` over a grid-stride loop of tiles, at a length that leaves
/// the last tile partial and a block that is not a multiple of 32; every arch assembles it.
#[test]
fn a_read_write_buffer_round_trips_through_vector_tiles() {
    for (block, n) in [(256u32, 10_001usize), (96, 1_237)] {
        let mut k = KernelBuilder::new("saxpy_tiles")
            .block(block)
            .items_per_thread(4);
        let (x, y) = (k.input::<f32>("x"), k.buffer::<f32>("y"));
        let (a, len) = (k.scalar::<f32>("a"), k.scalar::<u32>("n"));
        let b = k.this_block();
        k.tiles(len, |k, _| {
            let xs = k.load_from(b, &x, Load::vectorize());
            let ys = k.load_from(b, &y, Load::vectorize());
            let r = k.map2(&xs, &ys, |x, y| x.fma(a, y));
            k.store_to(b, &y, &r, Store::vectorize());
        });
        let kernel = k.build().expect("builds");
        assemble_all(&kernel);
        let mut rng = Rng::new(u64::from(block));
        let (xs, ys): (Vec<f32>, Vec<f32>) = (rng.vec(n), rng.vec(n));
        let dev = device();
        let f = dev.compile(&kernel).expect("compiles");
        let xb = dev.upload(&xs).expect("upload");
        let mut yb = dev.upload(&ys).expect("upload");
        f.launch_grid(3, (&xb, &mut yb, 1.5f32, n as u32))
            .expect("launch");
        let want: Vec<f32> = (0..n).map(|i| xs[i].mul_add(1.5, ys[i])).collect();
        assert_same(&yb.to_vec().expect("download"), &want, "saxpy by tiles");
    }
}

/// Runs of consecutive elements (`read_run`, `write_run`) of every dtype, 1 to 16 long, at
/// aligned and misaligned starts, through views that start at misaligned offsets, and across
/// the buffers' ends: each element lands where the CPU says (0 read past the input's end,
/// nothing written past the output's), whichever of the vector and element paths it took.
/// Aligned runs of four `f32` and sixteen `u8` move in 16-byte accesses, and an unchecked
/// kernel runs them without guards.
#[test]
fn runs_move_consecutive_elements_of_every_dtype() {
    const THREADS: u32 = 40;
    fn run_kernel<T: Element>(items: u32, unchecked: bool) -> Kernel {
        let name = format!("runs_{}_{items}_{unchecked}", T::DTYPE);
        let mut k = KernelBuilder::new(name).block(THREADS);
        if unchecked {
            k = k.unchecked_bounds();
        }
        let (x, y) = (k.input::<T>("x"), k.output::<T>("y"));
        let shift = k.scalar::<u32>("shift");
        let i = index::thread_rank() * items + shift.expr();
        let d = k.read_run(&x, i.clone(), items);
        k.write_run(&y, i, &d);
        k.build().expect("builds")
    }
    fn one<T: Element + DeviceElement>(batch: &mut Batch) {
        let dev = device();
        let sentinel = T::from_bits(0x77);
        for items in [1u32, 2, 3, 4, 8, 16] {
            let kernel = run_kernel::<T>(items, false);
            batch.add(&kernel);
            let f = compiled(dev, &kernel).expect("compiles");
            let span = (THREADS * items) as usize;
            // x ends 5 elements before the last runs do; y 3 elements past them, so shifted
            // runs cross its end.
            let xs: Vec<T> = Rng::new(u64::from(items)).vec(span - 5 + 1);
            for view in [0usize, 1] {
                for shift in [0usize, 1, 2, 3] {
                    let what = format!("{} view={view} shift={shift}", kernel.name());
                    let xb = dev.upload(&xs).expect("upload");
                    let mut yb = dev.alloc_filled(span + 3 + view, sentinel).expect("alloc");
                    let xv = xb.view(view..).expect("view");
                    let mut yv = yb.view_mut(view..).expect("view");
                    f.launch_grid(1, (&xv, &mut yv, shift as u32))
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                    let (x, ny) = (&xs[view..], span + 3);
                    let mut want = vec![sentinel; span + 3 + view];
                    for e in shift..(shift + span).min(ny) {
                        want[view + e] = x.get(e).copied().unwrap_or_else(|| T::from_bits(0));
                    }
                    assert_same(&yb.to_vec().expect("download"), &want, &what);
                }
            }
        }
    }
    every_dtype!(one);

    let f32x4 = run_kernel::<f32>(4, false).ptx(Arch::Sm90).expect("emits");
    assert!(f32x4.contains("ld.global.nc.v4.f32"), "{f32x4}");
    assert!(f32x4.contains("st.global.v4.f32"), "{f32x4}");
    let u8x16 = run_kernel::<u8>(16, false).ptx(Arch::Sm90).expect("emits");
    assert!(u8x16.contains("ld.global.nc.v4.b32"), "{u8x16}");
    let odd = run_kernel::<f32>(3, false).ptx(Arch::Sm90).expect("emits");
    assert!(!odd.contains(".v2") && !odd.contains(".v4"), "{odd}");

    // Unchecked: no guards, and the same elements where every run is inside.
    let kernel = run_kernel::<f32>(4, true);
    assemble_all(&kernel);
    let ptx = kernel.ptx(Arch::Sm90).expect("emits");
    assert!(!ptx.contains("setp.lt"), "{ptx}");
    let dev = device();
    let f = compiled(dev, &kernel).expect("compiles");
    let xs: Vec<f32> = Rng::new(9).vec(200);
    let xb = dev.upload(&xs).expect("upload");
    let mut yb = dev.alloc_zeroed::<f32>(200).expect("alloc");
    for shift in [0u32, 1, 40] {
        // SAFETY: thread t's run is elements 4t + shift .. 4t + shift + 3 < 200 of both
        // buffers, which the launch passes whole.
        unsafe {
            f.launch_unchecked(LaunchConfig::grid([1, 1, 1]), (&xb, &mut yb, shift))
                .expect("runs");
        }
        let s = shift as usize;
        assert_same(
            &yb.to_vec().expect("download")[s..s + 160],
            &xs[s..s + 160],
            "unchecked",
        );
    }
}

//! Views of a shared array's bytes as elements of another type (`shared_view`): narrower and
//! wider elements against the CPU's little-endian bytes, a view of an array in its own
//! declaration and of one in the planned window, the planner's ordering of accesses through
//! either handle, races and out-of-bounds accesses the simulator reports at the bytes (a view
//! reaches no byte past its array), and the typed error of a view of the dynamic array.

use super::common::{assemble_all, compiled, device, race_checker};
use coopgraph::ir::index;
use coopgraph::ir::{Element, VerifyErrorKind};
use coopgraph::planner::ArrayHome;
use coopgraph::runtime::{DeviceElement, LaunchConfig, RuntimeError};
use coopgraph::sim::{MemSpace, SimError};
use coopgraph::{Error, Kernel, KernelBuilder};

/// The little-endian bytes of `words`, read back as elements of `U` (as many as fit).
fn reinterpret<U: Element>(words: &[u32]) -> Vec<U> {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let size = U::DTYPE.bytes() as usize;
    (bytes.chunks_exact(size))
        .map(|c| {
            let mut b = [0u8; 8];
            b[..size].copy_from_slice(c);
            U::from_bits(u64::from_le_bytes(b))
        })
        .collect()
}

/// A block of 64 threads writes `x[t]` at word `t` of a shared array of `u32`, then (after a
/// barrier) thread `t` reads element `t` of the array's view as `U` (threads past the view's
/// length read nothing and write 0).
fn words_as<U: Element>(name: &str, words: u32) -> Kernel {
    let mut k = KernelBuilder::new(name).block(64);
    let (x, y) = (k.input::<u32>("x"), k.output::<U>("y"));
    let t = index::thread_rank();
    let a = k.shared_array::<u32>(words);
    let v = k.shared_view::<U, _>(&a);
    k.if_(t.clone().lt(words), |k| {
        k.shared_write(&a, t.clone(), x.at(&t))
    });
    k.sync_block();
    k.if_(t.clone().lt(v.len()), |k| {
        k.write(&y, &t, v.read(t.clone()))
    });
    k.build().unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn views_read_the_bytes_of_their_array_as_the_cpu_lays_them_out() {
    let xs: Vec<u32> = (0..64u32)
        .map(|i| i.wrapping_mul(0x9e37_79b9) ^ 0x0102_0304)
        .collect();
    fn check<U: DeviceElement + std::fmt::Debug + PartialEq>(xs: &[u32], words: u32, name: &str) {
        let kernel = words_as::<U>(name, words);
        assemble_all(&kernel);
        let dev = device();
        let f = compiled(dev, &kernel).expect("compiles");
        let xb = dev.upload(xs).expect("upload");
        let mut yb = dev.alloc_zeroed::<U>(64).expect("alloc");
        f.launch_grid(1, (&xb, &mut yb)).expect("launch");
        let got = yb.to_vec().expect("download");
        let mut want = reinterpret::<U>(&xs[..words as usize]);
        want.truncate(64);
        assert_eq!(&got[..want.len()], &want[..], "{name}");
    }
    check::<u16>(&xs, 32, "as_u16");
    check::<u8>(&xs, 16, "as_u8");
    check::<i16>(&xs, 20, "as_i16");
    check::<u64>(&xs, 64, "as_u64");
    check::<f64>(&xs, 64, "as_f64");
    // An odd number of words: the wider view holds as many whole elements as fit.
    check::<u64>(&xs, 33, "as_u64_odd");
    assert_eq!(words_as::<u64>("len", 33).ir().arrays[1].len, 16);
}

/// Thread `t` writes the two halves of word `t` through a 16-bit view, each with its own
/// store, and reads the word of its neighbour through the array: the halves compose.
#[test]
fn halves_written_through_a_view_compose_into_words() {
    let mut k = KernelBuilder::new("halves").block(96);
    let y = k.output::<u32>("y");
    let t = index::thread_rank();
    let words = k.shared_array::<u32>(96);
    let halves = k.shared_view::<u16, _>(&words);
    k.shared_write(&halves, t.clone() * 2u32, t.clone().cast::<u16>());
    k.shared_write(
        &halves,
        t.clone() * 2u32 + 1u32,
        (t.clone() * 3u32).cast::<u16>(),
    );
    k.sync_block();
    k.write(&y, &t, words.read((t.clone() + 1u32) % 96u32));
    let kernel = k.build().expect("builds");
    assemble_all(&kernel);
    let dev = device();
    let mut yb = dev.alloc_zeroed::<u32>(96).expect("alloc");
    compiled(dev, &kernel)
        .expect("compiles")
        .launch_grid(1, (&mut yb,))
        .expect("launch");
    let want: Vec<u32> = (0..96u32)
        .map(|t| (t + 1) % 96)
        .map(|n| (n * 3) << 16 | n)
        .collect();
    assert_eq!(yb.to_vec().expect("download"), want);
}

/// A view of a two-dimensional array, and a view of a view (which is a view of the first
/// array): each sees the array's bytes in row-major order.
#[test]
fn a_view_of_a_view_and_of_a_2d_array_see_the_same_bytes() {
    let mut k = KernelBuilder::new("chain").block(64);
    let y = k.output::<u8>("y");
    let t = index::thread_rank();
    let grid = k.shared_array_2d::<u32>([4, 16]);
    let halves = k.shared_view::<u16, _>(&grid.flat());
    let bytes = k.shared_view::<u8, _>(&halves);
    assert_eq!((halves.len(), bytes.len()), (128, 256));
    k.shared_write(
        &grid,
        (t.clone() / 16u32, t.clone() % 16u32),
        t.clone() * 0x0101_0101u32,
    );
    k.sync_block();
    k.write(&y, &t, bytes.read(t.clone() * 4u32 + t.clone() % 4u32));
    let kernel = k.build().expect("builds");
    assert_eq!(
        kernel.ir().arrays[2].view_of,
        Some(kernel.ir().arrays[1].view_of.unwrap())
    );
    assemble_all(&kernel);
    let dev = device();
    let mut yb = dev.alloc_zeroed::<u8>(64).expect("alloc");
    compiled(dev, &kernel)
        .expect("compiles")
        .launch_grid(1, (&mut yb,))
        .expect("launch");
    let want: Vec<u8> = (0..64u32).map(|t| t as u8).collect();
    assert_eq!(yb.to_vec().expect("download"), want);
}

/// A view of an array that lives in the planned window (past the static limit) reaches the
/// array's slice there; the view adds no bytes and no declaration; the array is aligned for
/// the view's elements.
#[test]
fn a_view_of_an_array_in_the_window_adds_no_bytes() {
    let mut k = KernelBuilder::new("windowed").block(128);
    let y = k.output::<u64>("y");
    let t = index::thread_rank();
    let small = k.shared_array::<f32>(1024);
    let big = k.shared_array::<u32>(12 * 1024);
    let wide = k.shared_view::<u64, _>(&big);
    k.shared_write(&small, t.clone(), 1.0f32);
    k.shared_write(&big, t.clone() * 2u32, t.clone());
    k.shared_write(&big, t.clone() * 2u32 + 1u32, t.clone() + 1000u32);
    k.sync_block();
    k.write(&y, &t, wide.read((t.clone() + 5u32) % 128u32));
    let kernel = k.build().expect("builds");
    let shared = kernel.plan().shared();
    assert_eq!(
        shared.arrays,
        vec![ArrayHome::Own, ArrayHome::Window, ArrayHome::View]
    );
    assert_eq!(kernel.plan().shared_bytes(), 52 * 1024);
    let plan = kernel.plan();
    let slice = plan.arrays().get(big.id()).expect("the array's slice");
    assert_eq!(plan.slices().get(*slice).expect("slice").align, 8);
    assemble_all(&kernel);
    let dev = device();
    if dev.limits().smem_per_block_optin >= 52 * 1024 {
        let mut yb = dev.alloc_zeroed::<u64>(128).expect("alloc");
        compiled(dev, &kernel)
            .expect("compiles")
            .launch_grid(1, (&mut yb,))
            .expect("launch");
        let want: Vec<u64> = (0..128u64)
            .map(|t| (t + 5) % 128)
            .map(|n| (n + 1000) << 32 | n)
            .collect();
        assert_eq!(yb.to_vec().expect("download"), want);
    }
}

/// Without a barrier, a write through the view and a read of the same bytes through the
/// array by another thread race; writes of different halves of one word by two threads do
/// not (the simulator checks bytes).
#[test]
fn races_through_a_view_are_the_bytes_races() {
    let build = |name: &str, neighbour: bool| {
        let mut k = KernelBuilder::new(name).block(64);
        let y = k.output::<u32>("y");
        let t = index::thread_rank();
        let words = k.shared_array::<u32>(32);
        let halves = k.shared_view::<u16, _>(&words);
        // Thread t writes half t: threads 2w and 2w + 1 share word w.
        k.shared_write(&halves, t.clone(), t.clone().cast::<u16>());
        if neighbour {
            k.write(&y, &t, words.read((t.clone() / 2u32 + 1u32) % 32u32));
        } else {
            k.sync_block();
            k.write(&y, &t, words.read(t.clone() / 2u32));
        }
        k.build().expect("builds")
    };
    let sim = race_checker();
    let run = |kernel: &Kernel| {
        let f = compiled(&sim, kernel)?;
        let mut yb = sim.alloc_zeroed::<u32>(64)?;
        f.launch_grid(1, (&mut yb,))?;
        yb.to_vec()
    };
    let r = run(&build("racy", true));
    assert!(
        matches!(r, Err(RuntimeError::Sim(SimError::Race(_)))),
        "{r:?}"
    );
    let want: Vec<u32> = (0..64u32)
        .map(|t| (t / 2 * 2 + 1) << 16 | (t / 2 * 2))
        .collect();
    assert_eq!(run(&build("halves_apart", false)).expect("race-free"), want);
}

/// Past the view's end: a checked kernel's guard reads 0 and skips the write; an unchecked
/// one reaches past the array's bytes, which the simulator reports naming the array.
#[test]
fn an_index_past_the_view_is_guarded_or_reported() {
    let build = |checked: bool| {
        let mut k = KernelBuilder::new(if checked { "guarded" } else { "stray" }).block(32);
        if !checked {
            k = k.unchecked_bounds();
        }
        let y = k.output::<u16>("y");
        let t = index::thread_rank();
        let words = k.shared_array::<u32>(8);
        let halves = k.shared_view::<u16, _>(&words);
        k.if_(t.clone().lt(8u32), |k| {
            k.shared_write(&words, t.clone(), 0x0005_0003u32)
        });
        k.sync_block();
        // Half 16 is the first past the array's 32 bytes.
        k.write(&y, &t, halves.read(t.clone().min(16u32)));
        k.build().expect("builds")
    };
    let dev = device();
    let mut yb = dev.alloc_zeroed::<u16>(32).expect("alloc");
    compiled(dev, &build(true))
        .expect("compiles")
        .launch_grid(1, (&mut yb,))
        .expect("launch");
    let want: Vec<u16> = (0..32u32)
        .map(|t| match t {
            0..16 if t % 2 == 0 => 3,
            0..16 => 5,
            _ => 0,
        })
        .collect();
    assert_eq!(yb.to_vec().expect("download"), want);

    let sim = race_checker();
    let f = compiled(&sim, &build(false)).expect("compiles");
    let mut yb = sim.alloc_zeroed::<u16>(32).expect("alloc");
    // SAFETY: the simulator, which reports the stray index instead of running it.
    let r = unsafe { f.launch_unchecked(LaunchConfig::blocks(1), (&mut yb,)) };
    let Err(RuntimeError::Sim(SimError::OutOfBounds(fault))) = &r else {
        panic!("expected an out-of-bounds fault, got {r:?}")
    };
    assert_eq!(fault.space, MemSpace::Shared);
    let nearest = fault.nearest.as_ref().expect("the array");
    assert_eq!(nearest.name.as_deref(), Some("smem0"), "{fault:?}");
}

/// A view of the dynamic array (whose length only a launch gives) is refused at build, at the
/// view's line; so is a view too wide for any element of its array.
#[test]
fn views_of_the_dynamic_array_or_of_too_few_bytes_are_typed_errors() {
    let mut k = KernelBuilder::new("dyn_view").block(32);
    let d = k.dynamic_shared_array::<u32>();
    let line = line!() + 1;
    let v = k.shared_view::<u16, _>(&d);
    k.shared_write(&v, index::thread_rank(), 1u16);
    let Err(Error::Verify(e)) = k.build() else {
        panic!("a view of the dynamic array built")
    };
    assert!(
        (e.errors.iter())
            .any(|x| x.loc.line == line && x.kind == VerifyErrorKind::DynamicArrayView),
        "{e}"
    );

    let mut k = KernelBuilder::new("too_narrow").block(32);
    let a = k.shared_array::<u32>(1);
    let line = line!() + 1;
    let v = k.shared_view::<u64, _>(&a);
    k.shared_write(&v, 0u32, 1u64);
    let Err(Error::Verify(e)) = k.build() else {
        panic!("a view of no elements built")
    };
    assert!(
        (e.errors.iter())
            .any(|x| x.loc.line == line && x.kind == VerifyErrorKind::ArraySize { len: 0 }),
        "{e}"
    );
}

/// Kernels that differ only in a view's element type are different kernels to the cache.
#[test]
fn the_views_type_is_part_of_the_cache_key() {
    let a = words_as::<u16>("same", 32);
    let b = words_as::<i16>("same", 32);
    assert_ne!(a.key(), b.key());
    let dev = device();
    let (fa, fb) = (
        compiled(dev, &a).expect("compiles"),
        compiled(dev, &b).expect("compiles"),
    );
    let xs: Vec<u32> = (0..64u32).map(|i| 0xffff_0000 | i).collect();
    let xb = dev.upload(&xs).expect("upload");
    let mut ya = dev.alloc_zeroed::<u16>(64).expect("alloc");
    let mut yb = dev.alloc_zeroed::<i16>(64).expect("alloc");
    fa.launch_grid(1, (&xb, &mut ya)).expect("launch");
    fb.launch_grid(1, (&xb, &mut yb)).expect("launch");
    assert_eq!(ya.to_vec().expect("download")[1], 0xffff);
    assert_eq!(yb.to_vec().expect("download")[1], -1);
}

/// A narrowing cast before a store of a narrow element is left to the store (which keeps the
/// register's low bits): the values stored are the cast's, through a view, a shared array, a
/// local array and a buffer, signed and unsigned.
#[test]
fn narrow_stores_of_a_cast_keep_the_low_bits() {
    let mut k = KernelBuilder::new("narrow_stores").block(64);
    let (x, y16, y8, yi) = (
        k.input::<u32>("x"),
        k.output::<u16>("y16"),
        k.output::<i8>("y8"),
        k.output::<i16>("yi"),
    );
    let t = index::thread_rank();
    let words = k.shared_array::<u32>(32);
    let halves = k.shared_view::<u16, _>(&words);
    let bytes = k.shared_array::<i8>(64);
    let local = k.local_array::<i16>(2);
    let v = x.at(&t);
    k.shared_write(&halves, t.clone(), (v.clone() * 3u32).cast::<u16>());
    k.shared_write(
        &bytes,
        t.clone(),
        (v.clone().cast::<i32>() - 7i32).cast::<i8>(),
    );
    k.local_write(
        &local,
        t.clone() % 2u32,
        (v.clone() ^ 0xdead_beefu32).cast::<i16>(),
    );
    k.sync_block();
    k.write(&y16, &t, halves.read(t.clone()));
    k.write(&y8, &t, bytes.read(t.clone()));
    k.write(&yi, &t, local.read(t.clone() % 2u32));
    let kernel = k.build().expect("builds");
    let ptx = kernel.ptx(coopgraph::ptx::Arch::Sm90).expect("emits");
    assert!(
        !ptx.contains("cvt.u32.u16"),
        "a narrowing cast before a store"
    );
    assemble_all(&kernel);
    let dev = device();
    let xs: Vec<u32> = (0..64u32).map(|i| i.wrapping_mul(0x9e37_79b9)).collect();
    let xb = dev.upload(&xs).expect("upload");
    let mut b16 = dev.alloc_zeroed::<u16>(64).expect("alloc");
    let mut b8 = dev.alloc_zeroed::<i8>(64).expect("alloc");
    let mut bi = dev.alloc_zeroed::<i16>(64).expect("alloc");
    compiled(dev, &kernel)
        .expect("compiles")
        .launch_grid(1, (&xb, &mut b16, &mut b8, &mut bi))
        .expect("launch");
    let want16: Vec<u16> = xs.iter().map(|&v| v.wrapping_mul(3) as u16).collect();
    let want8: Vec<i8> = xs
        .iter()
        .map(|&v| (v as i32).wrapping_sub(7) as i8)
        .collect();
    let wanti: Vec<i16> = xs.iter().map(|&v| (v ^ 0xdead_beef) as i16).collect();
    assert_eq!(b16.to_vec().expect("download"), want16);
    assert_eq!(b8.to_vec().expect("download"), want8);
    assert_eq!(bi.to_vec().expect("download"), wanti);
}

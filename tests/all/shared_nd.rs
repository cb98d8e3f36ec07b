//! Shared arrays of two and three dimensions and the dynamic shared array: row-major indexing
//! against the CPU, barriers only where the kernel calls `sync_block` (a missing one is a race
//! the simulator reports), the dynamic array beside the planner's own scratch (static or
//! dynamic) at lengths given at launch, and the typed errors of their misuse.

use super::common::{Rng, assemble_all, compiled, device, race_checker};
use coopgraph::ir::index::{self, Axis};
use coopgraph::ir::{Reduce, Scan, VerifyErrorKind};
use coopgraph::planner::{ArrayHome, PlanError};
use coopgraph::ptx::Arch;
use coopgraph::runtime::{Device, LaunchConfig, RuntimeError};
use coopgraph::sim::{MemSpace, SimError};
use coopgraph::{Error, Kernel, KernelBuilder, Load, Store};
use proptest::prelude::*;

/// A block of `[cols, rows]` threads writes `x[r]` (its linear rank `r`) at `tile[y][x]` of a
/// `[rows, cols]` array, then (after a barrier where `sync`) reads `tile[(y + dy) % rows][(x +
/// dx) % cols]`, a neighbour's element.
fn shift_2d(name: &str, rows: u32, cols: u32, dy: u32, dx: u32, sync: bool) -> Kernel {
    let mut k = KernelBuilder::new(name).block_dims([cols, rows, 1]);
    let (x, y) = (k.input::<i32>("x"), k.output::<i32>("y"));
    let (tx, ty) = (index::thread_idx(Axis::X), index::thread_idx(Axis::Y));
    let r = index::thread_rank();
    let tile = k.shared_array_2d::<i32>([rows, cols]);
    k.shared_write(&tile, (ty.clone(), tx.clone()), x.at(&r));
    if sync {
        k.sync_block();
    }
    k.write(&y, &r, tile.read(((ty + dy) % rows, (tx + dx) % cols)));
    k.build().unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn shift_2d_on_cpu(xs: &[i32], rows: u32, cols: u32, dy: u32, dx: u32) -> Vec<i32> {
    (0..rows * cols)
        .map(|r| {
            let (x, y) = (r % cols, r / cols);
            xs[(((y + dy) % rows) * cols + (x + dx) % cols) as usize]
        })
        .collect()
}

/// A 3-D array of `dims` filled by element `v = i * 7 + 1` for its linear index `i` from a
/// block of `dims.product()` threads (thread `r` at `(r / (b * c), r / c % b, r % c)`), then
/// read at the coordinates rotated by one axis.
fn rotate_3d(name: &str, dims: [u32; 3]) -> Kernel {
    let threads = dims.iter().product::<u32>();
    let [a, b, c] = dims;
    let mut k = KernelBuilder::new(name).block(threads);
    let y = k.output::<u32>("y");
    let r = index::thread_rank();
    let cube = k.shared_array_3d::<u32>(dims);
    let (i, j, l) = (r.clone() / (b * c), r.clone() / c % b, r.clone() % c);
    k.shared_write(
        &cube,
        (i.clone(), j.clone(), l.clone()),
        r.clone() * 7u32 + 1u32,
    );
    k.sync_block();
    // (i, j, l) -> (j % a, l % b, i % c): any element, read by its coordinates.
    k.write(&y, &r, cube.read((j % a, l % b, i % c)));
    k.build().unwrap_or_else(|e| panic!("{name}: {e}"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, .. ProptestConfig::default() })]

    /// 2-D arrays index row-major: `tile[y][x]` is element `y * cols + x`, read back by any
    /// thread after a barrier.
    #[test]
    fn two_dimensional_arrays_agree_with_the_cpu(
        rows in 1u32..20,
        cols in 1u32..40,
        dy in 0u32..25,
        dx in 0u32..45,
        seed in any::<u64>(),
    ) {
        prop_assume!(rows * cols <= 1024);
        let kernel = shift_2d("shift_2d", rows, cols, dy, dx, true);
        let dev = device();
        let xs: Vec<i32> = Rng::new(seed).vec((rows * cols) as usize);
        let xb = dev.upload(&xs).expect("upload");
        let mut yb = dev.alloc_zeroed::<i32>((rows * cols) as usize).expect("alloc");
        compiled(dev, &kernel).expect("compiles").launch_grid(1, (&xb, &mut yb)).expect("launch");
        prop_assert_eq!(yb.to_vec().expect("download"), shift_2d_on_cpu(&xs, rows, cols, dy, dx));
    }

    /// 3-D arrays index row-major too.
    #[test]
    fn three_dimensional_arrays_agree_with_the_cpu(a in 1u32..9, b in 1u32..9, c in 1u32..9) {
        let kernel = rotate_3d("rotate_3d", [a, b, c]);
        let dev = device();
        let n = (a * b * c) as usize;
        let mut yb = dev.alloc_zeroed::<u32>(n).expect("alloc");
        compiled(dev, &kernel).expect("compiles").launch_grid(1, (&mut yb,)).expect("launch");
        let want: Vec<u32> = (0..a * b * c)
            .map(|r| {
                let (i, j, l) = (r / (b * c), r / c % b, r % c);
                ((j % a) * b + l % b) * c + i % c
            })
            .map(|e| e * 7 + 1)
            .collect();
        prop_assert_eq!(yb.to_vec().expect("download"), want);
    }
}

#[test]
fn arrays_of_several_dimensions_assemble_for_every_arch() {
    assemble_all(&shift_2d("shift_a", 16, 16, 1, 3, true));
    assemble_all(&rotate_3d("rotate_a", [4, 8, 8]));
}

/// The planner places no barrier for a user array: without the kernel's `sync_block`, a
/// thread reads an element another thread writes with nothing between them, and the
/// simulator reports the race; with it, the kernel is race-free.
#[test]
fn a_missing_sync_block_between_shared_array_writes_and_reads_is_a_race() {
    let unsynced = shift_2d("unsynced", 8, 8, 1, 0, false);
    assert!(unsynced.plan().barriers().is_empty());
    let sim = race_checker();
    let xs: Vec<i32> = (0..64).collect();
    let run = |kernel: &Kernel| {
        let f = compiled(&sim, kernel)?;
        let xb = sim.upload(&xs)?;
        let mut yb = sim.alloc_zeroed::<i32>(64)?;
        f.launch_grid(1, (&xb, &mut yb))?;
        yb.to_vec()
    };
    let r = run(&unsynced);
    let Err(RuntimeError::Sim(SimError::Race(race))) = &r else {
        panic!("expected a race, got {r:?}")
    };
    assert_ne!(race.first.thread, race.second.thread);
    let synced = shift_2d("synced", 8, 8, 1, 0, true);
    assert_eq!(
        run(&synced).expect("race-free"),
        shift_2d_on_cpu(&xs, 8, 8, 1, 0)
    );

    // The same for the dynamic array.
    let mut k = KernelBuilder::new("dynamic_unsynced").block(64);
    let y = k.output::<u32>("y");
    let d = k.dynamic_shared_array::<u32>();
    let r = index::thread_rank();
    k.shared_write(&d, r.clone(), r.clone());
    k.write(&y, &r, d.read((r.clone() + 1u32) % 64u32));
    let kernel = k.build().expect("builds");
    let mut yb = sim.alloc_zeroed::<u32>(64).expect("alloc");
    let r = compiled(&sim, &kernel).expect("compiles").launch(
        LaunchConfig::blocks(1).with_dynamic_array_len(64),
        (&mut yb,),
    );
    assert!(
        matches!(r, Err(RuntimeError::Sim(SimError::Race(_)))),
        "{r:?}"
    );
}

/// A kernel with a dynamic array and a block collective: `y = reverse(x) + sum(x)` over a
/// block of `block` threads, the array `n` elements long.
fn dynamic_with_collective(name: &str, block: u32, items: u32) -> Kernel {
    let mut k = KernelBuilder::new(name)
        .block(block)
        .items_per_thread(items);
    let (x, y) = (k.input::<f64>("x"), k.output::<f64>("y"));
    let n = k.scalar::<u32>("n");
    let b = k.this_block();
    let buf = k.dynamic_shared_array::<f64>();
    let t = index::thread_rank();
    // The collective's shared memory is the planner's: a transposing load and a reduction.
    let tile = k.load_from(b, &x, Load::transpose().offset(0u32));
    let part = k.reduce(b, &tile, Reduce::sum().broadcast());
    k.for_range_step(t.clone(), n, block, |k, i| {
        k.shared_write(&buf, i.clone(), x.at(&i))
    });
    k.sync_block();
    let sum = part.item(0);
    k.for_range_step(t, n, block, |k, i| {
        let v = buf.read(n.expr() - 1u32 - i.clone()) + sum.clone();
        k.write(&y, &i, v);
    });
    let scanned = k.scan(b, &tile, Scan::inclusive_sum());
    k.store_to(b, &y, &scanned, Store::direct().offset(n.expr()));
    k.build().unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The dynamic array coexists with the planner's scratch, static or dynamic: the runtime
/// gives the launch the scratch's bytes and then the array's, and every element is where the
/// kernel expects it.
#[test]
fn the_dynamic_array_coexists_with_planned_scratch() {
    // Small: the window is static, the array is the whole dynamic part. Large (1024 threads
    // of 8 f64): the window passes 48 KiB and is dynamic, the array after it.
    for (block, items, window_dynamic) in [(64, 2, false), (1024, 8, true)] {
        let kernel = dynamic_with_collective(&format!("dyn_{block}"), block, items);
        let shared = kernel.plan().shared();
        assert_eq!(shared.window_dynamic, window_dynamic);
        let (array, offset) = shared.dynamic_array.expect("a dynamic array");
        assert_eq!(shared.arrays[array], ArrayHome::Dynamic);
        if window_dynamic {
            assert!(offset >= shared.window_bytes, "{offset} {shared:?}");
        } else {
            assert_eq!(offset, 0);
        }
        assemble_all(&kernel);
        let dev = device();
        let tile = (block * items) as usize;
        for n in [1usize, 100, 3000] {
            let bytes = u64::from(offset) + 8 * n as u64;
            if u64::from(shared.static_bytes) + bytes > u64::from(dev.limits().smem_per_block_optin)
            {
                continue;
            }
            let xs: Vec<f64> = (0..tile.max(n)).map(|v| (v % 13) as f64).collect();
            let xb = dev.upload(&xs).expect("upload");
            let mut yb = dev.alloc_zeroed::<f64>(n + tile).expect("alloc");
            let f = compiled(dev, &kernel).expect("compiles");
            let config = LaunchConfig::blocks(1).with_dynamic_array_len(n as u32);
            f.launch(config, (&xb, &mut yb, n as u32))
                .unwrap_or_else(|e| panic!("{block} x {items}, n = {n}: {e}"));
            let sum: f64 = xs[..tile].iter().sum();
            let mut want: Vec<f64> = (0..n).map(|i| xs[n - 1 - i] + sum).collect();
            want.extend(xs[..tile].iter().scan(0.0, |acc, v| {
                *acc += v;
                Some(*acc)
            }));
            assert_eq!(yb.to_vec().expect("download"), want, "{block}, n = {n}");
        }
    }
}

/// Misuses of the dynamic array are typed errors naming the user's line: a launch without
/// its length (or with one for a kernel that has none), a second dynamic array, and an index
/// past the length the launch gave (the simulator's fault names the array).
#[test]
fn dynamic_array_misuses_are_typed_errors() {
    let kernel = dynamic_with_collective("dyn_errors", 64, 2);
    let sim = Device::sim();
    let f = compiled(&sim, &kernel).expect("compiles");
    let xb = sim.upload(&[1.0f64; 256]).expect("upload");
    let mut yb = sim.alloc_zeroed::<f64>(256).expect("alloc");
    let line = line!() + 1;
    let r = f.launch_grid(1, (&xb, &mut yb, 16u32));
    let Err(RuntimeError::DynamicArrayUnsized { array, at, .. }) = &r else {
        panic!("expected an unsized dynamic array, got {r:?}")
    };
    assert_eq!(at.line, line, "{r:?}");
    assert!(
        array.contains("smem0") && array.contains("shared_nd.rs"),
        "{array}"
    );
    assert!(
        r.unwrap_err()
            .to_string()
            .contains("with_dynamic_array_len")
    );

    let plain = shift_2d("no_dynamic", 4, 4, 0, 0, true);
    let g = compiled(&sim, &plain).expect("compiles");
    let xs = sim.upload(&[0i32; 16]).expect("upload");
    let mut ys = sim.alloc_zeroed::<i32>(16).expect("alloc");
    let r = g.launch(
        LaunchConfig::blocks(1).with_dynamic_array_len(4),
        (&xs, &mut ys),
    );
    assert!(
        matches!(r, Err(RuntimeError::NoDynamicArray { .. })),
        "{r:?}"
    );

    let mut k = KernelBuilder::new("two_dynamic");
    let (_, first) = (k.dynamic_shared_array::<u32>(), line!());
    let (_, second) = (k.dynamic_shared_array::<f32>(), line!());
    let Err(Error::Verify(e)) = k.build() else {
        panic!("built")
    };
    assert!(
        e.errors.iter().any(|x| x.loc.line == second
            && matches!(x.kind, VerifyErrorKind::SecondDynamicArray { first: f } if f.line == first)),
        "{e}"
    );

    // 16 elements given, element 16 read (without the guard bounds checks put on it).
    let mut k = KernelBuilder::new("dyn_over").block(32).unchecked_bounds();
    let y = k.output::<u32>("y");
    let d = k.dynamic_shared_array::<u32>();
    let t = index::thread_rank();
    k.if_(t.lt(16u32), |k| k.shared_write(&d, t.clone(), t.clone()));
    k.sync_block();
    k.write(&y, &t, d.read(t.clone().min(16u32)));
    let kernel = k.build().expect("builds");
    let mut yb = sim.alloc_zeroed::<u32>(32).expect("alloc");
    let f = compiled(&sim, &kernel).expect("compiles");
    // SAFETY: the simulator, which reports the stray array index instead of running it.
    let r = unsafe {
        f.launch_unchecked(
            LaunchConfig::blocks(1).with_dynamic_array_len(16),
            (&mut yb,),
        )
    };
    let Err(RuntimeError::Sim(SimError::OutOfBounds(fault))) = &r else {
        panic!("expected an out-of-bounds fault, got {r:?}")
    };
    assert_eq!(fault.space, MemSpace::Shared);
    let nearest = fault.nearest.as_ref().expect("the array");
    assert_eq!(nearest.name.as_deref(), Some("smem0"), "{fault:?}");
    assert_eq!(nearest.len, 64);
}

/// A shared array over an arch's limit is an error that lists every user of shared memory
/// with its line: the arrays and the collectives.
#[test]
fn shared_memory_over_the_arch_limit_lists_every_user() {
    let mut k = KernelBuilder::new("too_much")
        .block(128)
        .items_per_thread(4);
    let (x, y) = (k.input::<f32>("x"), k.output::<f32>("y"));
    let b = k.this_block();
    let (tile, tile_line) = (k.shared_array_2d::<f32>([128, 126]), line!());
    k.shared_write(&tile, (index::thread_rank(), 0u32), 1.0f32);
    let t = k.load_from(b, &x, Load::transpose());
    let (s, scan_line) = (k.scan(b, &t, Scan::inclusive_sum()), line!());
    k.store_to(b, &y, &s, Store::direct());
    let kernel = k.build().expect("builds");
    let Err(PlanError::SharedMemory { users, limit, .. }) = kernel.check_shared_memory(Arch::Sm75)
    else {
        panic!("61440 bytes of array and the scan's fit sm_75?")
    };
    assert_eq!(limit, Arch::Sm75.max_shared_per_block());
    assert!(
        users
            .iter()
            .any(|(_, loc, bytes)| loc.line == tile_line && *bytes == 128 * 126 * 4),
        "{users:?}"
    );
    assert!(
        users.iter().any(|(_, loc, _)| loc.line == scan_line),
        "{users:?}"
    );
    assert!(kernel.check_shared_memory(Arch::Sm90).is_ok());
}

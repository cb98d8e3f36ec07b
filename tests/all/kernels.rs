//! Copy and map kernels on the default device (the GPU when present, else the simulator),
//! for every dtype, group, load/store algorithm and partial tile, compared exactly with a CPU reference.
//! Every kernel built here is also assembled by ptxas for each supported arch.

use super::common::{Batch, Rng, assemble_all, assert_same, device};
use coopgraph::ir::{Algorithm, Element, Expr, Group, index};
use coopgraph::runtime::DeviceElement;
use coopgraph::{KernelBuilder, Load, Store};

/// Element types with the CPU reference operations the tests need.
pub trait TestElem: Element + DeviceElement {
    /// A value from a small integer.
    fn from_i64(v: i64) -> Self;
    /// `self + i` with the kernel's semantics (wrapping for integers).
    fn plus(self, i: u32) -> Self;
    /// `self * 3 + 1` with the kernel's semantics.
    fn affine(self) -> Self;
}

macro_rules! int_elem {
    ($($t:ty),*) => {$(
        impl TestElem for $t {
            fn from_i64(v: i64) -> Self { v as $t }
            fn plus(self, i: u32) -> Self { self.wrapping_add(i as $t) }
            fn affine(self) -> Self { self.wrapping_mul(3).wrapping_add(1) }
        }
    )*};
}
int_elem!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! float_elem {
    ($($t:ty),*) => {$(
        impl TestElem for $t {
            fn from_i64(v: i64) -> Self { v as $t }
            fn plus(self, i: u32) -> Self { self + i as $t }
            fn affine(self) -> Self { self * 3.0 + 1.0 }
        }
    )*};
}
float_elem!(f32, f64);

const BLOCK: u32 = 64;

fn groups(k: &KernelBuilder) -> Vec<(String, Group)> {
    let mut g = vec![("block".to_string(), k.this_block())];
    for w in [1, 2, 4, 8, 16, 32] {
        g.push((format!("warp{w}"), k.this_warp().group_by(w)));
    }
    g
}

/// `y[offset + q] = x[offset + q] + slot(q)` for `q < min(valid, tile)`, where `slot(q)` is the
/// payload slot that holds position `q` under the algorithm's arrangement.
fn reference<T: TestElem>(
    x: &[T],
    y: &mut [T],
    offset: usize,
    valid: usize,
    group: u32,
    items: u32,
    algorithm: Algorithm,
) {
    let tile = (BLOCK * items) as usize;
    let group_tile = (group * items) as usize;
    for q in 0..valid.min(tile) {
        let pq = q % group_tile;
        let slot = match algorithm {
            Algorithm::Striped => pq / group as usize,
            // Each warp's segment is striped over its 32 lanes.
            Algorithm::WarpStriped => q % (32 * items as usize) / 32,
            _ => pq % items as usize,
        };
        y[offset + q] = x[offset + q].plus(slot as u32);
    }
}

fn copy_plus_slot<T: TestElem>(seed: u64) {
    let dev = device();
    let mut rng = Rng::new(seed);
    let mut batch = Batch::default();
    for items in [1u32, 3, 4] {
        for algorithm in Algorithm::ALL {
            let probe = KernelBuilder::new("probe");
            for (gname, group) in groups(&probe) {
                if !algorithm.for_warps() && gname != "block" {
                    continue;
                }
                let name = format!("copy_{}_{gname}_{algorithm:?}_{items}", T::DTYPE);
                let mut k = KernelBuilder::new(name.clone())
                    .block(BLOCK)
                    .items_per_thread(items);
                let x = k.input::<T>("x");
                let y = k.output::<T>("y");
                let offset = k.scalar::<u32>("offset");
                let valid = k.scalar::<u32>("valid");
                let t = k.load_from(
                    group,
                    &x,
                    Load::direct()
                        .algorithm(algorithm)
                        .offset(offset)
                        .block_valid_items(valid),
                );
                let u = k.map(&t, |v| v + index::item().cast::<T>());
                k.store_to(
                    group,
                    &y,
                    &u,
                    Store::default()
                        .algorithm(algorithm)
                        .offset(offset)
                        .block_valid_items(valid),
                );
                let kernel = k.build().unwrap_or_else(|e| panic!("{name}: {e}"));
                batch.add(&kernel);
                let f = dev
                    .compile(&kernel)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                let tile = (BLOCK * items) as usize;
                let len = tile + 64;
                let xs: Vec<T> = rng.vec(len);
                let poison = T::from_i64(0x5a);
                for offset in [0usize, 3, 37] {
                    for valid in [0usize, 1, tile - 1, tile, tile + 5] {
                        let xb = dev.upload(&xs).expect("upload");
                        let mut yb = dev.alloc_filled(len, poison).expect("alloc");
                        f.launch_grid(1, (&xb, &mut yb, offset as u32, valid as u32))
                            .unwrap_or_else(|e| panic!("{name}: {e}"));
                        let got = yb.to_vec().expect("download");
                        let mut want = vec![poison; len];
                        reference(
                            &xs,
                            &mut want,
                            offset,
                            valid,
                            group_width(group),
                            items,
                            algorithm,
                        );
                        assert_same(
                            &got,
                            &want,
                            &format!("{name} offset={offset} valid={valid}"),
                        );
                    }
                }
            }
        }
    }
}

fn group_width(g: Group) -> u32 {
    match g.kind() {
        coopgraph::ir::GroupKind::Block => BLOCK,
        coopgraph::ir::GroupKind::LogicalWarp { width } => width,
        coopgraph::ir::GroupKind::Warps { warps } => warps * 32,
    }
}

macro_rules! copy_tests {
    ($($name:ident: $t:ty,)*) => {$(
        #[test]
        fn $name() {
            copy_plus_slot::<$t>(stringify!($name).len() as u64);
        }
    )*};
}

copy_tests! {
    copy_i8: i8,
    copy_i16: i16,
    copy_i32: i32,
    copy_i64: i64,
    copy_u8: u8,
    copy_u16: u16,
    copy_u32: u32,
    copy_u64: u64,
    copy_f32: f32,
    copy_f64: f64,
}

/// The fluent pipeline over sizes that are not a multiple of the tile, launched with
/// `launch_over`.
fn pipeline<T: TestElem>() {
    let dev = device();
    let mut rng = Rng::new(7);
    for block in [32u32, 128, 256] {
        for items in [1u32, 4] {
            let kernel = KernelBuilder::new(format!("affine_{}_{block}_{items}", T::DTYPE))
                .block(block)
                .items_per_thread(items)
                .load::<T>("x")
                .map(|v| v * T::from_i64(3) + T::from_i64(1))
                .store("y")
                .build()
                .expect("pipeline builds");
            assemble_all(&kernel);
            let f = dev.compile(&kernel).expect("compile");
            let tile = (block * items) as usize;
            for n in [1usize, tile - 1, tile, 3 * tile + 5] {
                let xs: Vec<T> = rng.vec(n);
                let xb = dev.upload(&xs).expect("upload");
                // One element past the end stays poisoned.
                let mut yb = dev.alloc_filled(n + 1, T::from_i64(0x33)).expect("alloc");
                f.launch_over(n, (&xb, n as u32, &mut yb)).expect("launch");
                let got = yb.to_vec().expect("download");
                let mut want: Vec<T> = xs.iter().map(|&v| v.affine()).collect();
                want.push(T::from_i64(0x33));
                assert_same(&got, &want, &format!("pipeline {} n={n}", kernel.name()));
            }
        }
    }
}

#[test]
fn pipeline_every_dtype() {
    pipeline::<i8>();
    pipeline::<i16>();
    pipeline::<i32>();
    pipeline::<i64>();
    pipeline::<u8>();
    pipeline::<u16>();
    pipeline::<u32>();
    pipeline::<u64>();
    pipeline::<f32>();
    pipeline::<f64>();
}

/// A grid-stride loop over tiles with fewer blocks than tiles: loads and stores take the
/// tile's origin and valid count by default.
#[test]
fn tiles_loop_with_a_small_grid() {
    let dev = device();
    for algorithm in [Algorithm::Direct, Algorithm::Striped] {
        let mut k = KernelBuilder::new(format!("tiles_{algorithm:?}"))
            .block(128)
            .items_per_thread(4);
        let x = k.input::<u32>("x");
        let y = k.output::<u32>("y");
        let n = k.scalar::<u32>("n");
        let block = k.this_block();
        k.tiles(n, |k, tile| {
            let t = k.load_from(block, &x, Load::direct().algorithm(algorithm));
            let u = k.map(&t, |v| v ^ tile.index.clone());
            k.store_to(block, &y, &u, Store::default().algorithm(algorithm));
        });
        let kernel = k.build().expect("builds");
        assemble_all(&kernel);
        let f = dev.compile(&kernel).expect("compile");
        let tile = 512usize;
        for n in [0usize, 1, 10 * tile + 7] {
            let xs: Vec<u32> = Rng::new(n as u64).vec(n.max(1));
            let xb = dev.upload(&xs).expect("upload");
            let mut yb = dev.alloc_filled(n.max(1), 0xdead_beefu32).expect("alloc");
            f.launch_grid(3, (&xb, &mut yb, n as u32)).expect("launch");
            let got = yb.to_vec().expect("download");
            let mut want = xs.clone();
            for (i, w) in want.iter_mut().enumerate().take(n) {
                *w ^= (i / tile) as u32;
            }
            if n == 0 {
                want[0] = 0xdead_beef;
            }
            assert_same(&got, &want, &format!("tiles {algorithm:?} n={n}"));
        }
    }
}

/// Branches, loops, per-slot writes and assignment, checked against the CPU.
#[test]
fn control_flow_and_slot_writes() {
    let dev = device();
    let mut k = KernelBuilder::new("control").block(64).items_per_thread(2);
    let x = k.input::<i32>("x");
    let y = k.output::<i32>("y");
    let reps = k.scalar::<u32>("reps");
    let block = k.this_block();
    let t = k.load_from(block, &x, Load::striped());
    let acc = k.fill(0i32);
    k.for_range(0u32, reps, |k, i| {
        let next = k.map2(&acc, &t, |a, v| a + v * i.cast::<i32>());
        k.assign(&acc, &next);
    });
    let out = k.thread_data::<i32>();
    k.if_else(
        (index::thread_rank() % 2u32).eq(0u32),
        |k| {
            let neg = k.map(&acc, |a| -a);
            k.assign(&out, &neg);
        },
        |k| {
            k.assign(&out, &acc);
        },
    );
    let first: Expr<i32> = out.item(0);
    k.set_item(&out, 1, first.max(out.item(1)));
    k.store_to(block, &y, &out, Store::striped());
    let kernel = k.build().expect("builds");
    assemble_all(&kernel);
    let f = dev.compile(&kernel).expect("compile");
    let xs: Vec<i32> = Rng::new(3)
        .vec(128)
        .into_iter()
        .map(|v: i32| v % 1000)
        .collect();
    for reps in [0u32, 1, 5] {
        let xb = dev.upload(&xs).expect("upload");
        let mut yb = dev.alloc_filled(128, 7i32).expect("alloc");
        f.launch_grid(1, (&xb, &mut yb, reps)).expect("launch");
        let got = yb.to_vec().expect("download");
        let tri: i32 = (0..reps as i32).sum();
        let mut want = vec![0i32; 128];
        for t in 0..64usize {
            let mut slots = [0i32; 2];
            for (i, s) in slots.iter_mut().enumerate() {
                let v = xs[t + i * 64].wrapping_mul(tri);
                *s = if t % 2 == 0 { v.wrapping_neg() } else { v };
            }
            slots[1] = slots[0].max(slots[1]);
            want[t] = slots[0];
            want[t + 64] = slots[1];
        }
        assert_same(&got, &want, &format!("control reps={reps}"));
    }
}

/// 8- and 16-bit items of vectorized loads and stores move packed in 32-bit words, up to 16
/// bytes at a time, each with its sign; a thread whose run is misaligned (an odd offset) or
/// partly past the valid count takes the scalar path.
#[test]
fn narrow_items_move_packed() {
    fn one<T: TestElem>(items: u32, offset: u32, short: u32, batch: &mut Batch) {
        let name = format!("packed_{}_{items}_{offset}_{short}", T::DTYPE);
        let mut k = KernelBuilder::new(&name).block(32).items_per_thread(items);
        let (x, y) = (k.input::<T>("x"), k.output::<T>("y"));
        let b = k.this_block();
        let tile = 32 * items;
        let valid = tile - short;
        let load = Load::vectorize()
            .offset(offset)
            .valid_items(valid)
            .oob_default(T::from_i64(7));
        let t = k.load_from(b, &x, load);
        let u = k.map(&t, |v| v * T::from_i64(3) + T::from_i64(1));
        k.store_to(
            b,
            &y,
            &u,
            Store::vectorize().offset(offset).valid_items(valid),
        );
        let kernel = k.build().expect("builds");
        if items == 16 && T::DTYPE.bytes() == 1 {
            let ptx = kernel.ptx(coopgraph::ptx::Arch::Sm90).expect("emits");
            assert!(ptx.contains("ld.global.nc.v4.b32"), "{ptx}");
            assert!(ptx.contains("st.global.v4.b32"), "{ptx}");
        }
        batch.add(&kernel);
        let dev = device();
        let n = (offset + tile) as usize;
        let xs: Vec<T> = Rng::new(u64::from(items * 7 + offset)).vec(n);
        let xb = dev.upload(&xs).expect("upload");
        let mut yb = dev.alloc_zeroed::<T>(n).expect("alloc");
        dev.compile(&kernel)
            .expect("compiles")
            .launch_grid(1, (&xb, &mut yb))
            .expect("runs");
        let want: Vec<T> = (0..n)
            .map(|i| {
                let p = i as i64 - i64::from(offset);
                if p >= 0 && p < i64::from(valid) {
                    xs[i].affine()
                } else {
                    T::from_i64(0)
                }
            })
            .collect();
        assert_same(&yb.to_vec().expect("download"), &want, &name);
    }
    let mut batch = Batch::default();
    for items in [4u32, 8, 16] {
        for (offset, short) in [(0u32, 0u32), (1, 0), (0, 3), (4, 17)] {
            one::<i8>(items, offset, short, &mut batch);
            one::<u8>(items, offset, short, &mut batch);
            one::<i16>(items, offset, short, &mut batch);
            one::<u16>(items, offset, short, &mut batch);
        }
    }
}

/// Vectorized stores of runs of 16-byte vectors, an even number of them a thread, write in
/// pairs of lanes (each store of a pair covers one 32-byte sector; the pair swaps half its
/// vectors by shuffles): whole tiles and tiles cut anywhere (inside a pair's second run, at a pair's
/// boundary, inside the first warp), misaligned offsets (every warp takes the scalar path),
/// blocks with a partial last warp, an odd block (no pairs), and whole warps as the group.
#[test]
fn paired_vector_runs_round_trip() {
    fn one<T: TestElem>(block: u32, items: u32, warps: bool, offset: u32, batch: &mut Batch) {
        let name = format!(
            "paired_{}_{block}x{items}_{}_{offset}",
            T::DTYPE,
            if warps { "warps" } else { "block" }
        );
        let mut k = KernelBuilder::new(&name)
            .block(block)
            .items_per_thread(items);
        let (x, y) = (k.input::<T>("x"), k.output::<T>("y"));
        let valid = k.scalar::<u32>("valid");
        let g: Group = if warps {
            k.this_warp().into()
        } else {
            k.this_block()
        };
        let load = Load::vectorize()
            .offset(offset)
            .valid_items(valid)
            .oob_default(T::from_i64(7));
        let t = k.load_from(g, &x, load);
        let u = k.map(&t, |v| v * T::from_i64(3) + T::from_i64(1));
        let store = Store::vectorize().offset(offset).valid_items(valid);
        k.store_to(g, &y, &u, store);
        let kernel = k.build().expect("builds");
        let ptx = kernel.ptx(coopgraph::ptx::Arch::Sm90).expect("emits");
        // Shuffles only where pairs are planned: an even block.
        assert_eq!(
            ptx.contains("shfl.sync.bfly"),
            block.is_multiple_of(2),
            "{name}"
        );
        batch.add(&kernel);
        let dev = device();
        let f = dev.compile(&kernel).expect("compiles");
        let group = if warps { 32 } else { block };
        let tile = (group * items) as usize;
        let n = offset as usize + (block * items) as usize;
        let xs: Vec<T> = Rng::new(u64::from(block * items + offset)).vec(n);
        let xb = dev.upload(&xs).expect("upload");
        let cuts = [tile, tile - 1, tile - items as usize, tile / 2 + 3, 5, 0];
        for valid in cuts.map(|c| c as u32) {
            let mut yb = dev.alloc_zeroed::<T>(n).expect("alloc");
            f.launch_grid(1, (&xb, &mut yb, valid)).expect("runs");
            let want: Vec<T> = (0..n)
                .map(|i| {
                    let Some(p) = i.checked_sub(offset as usize) else {
                        return T::from_i64(0);
                    };
                    // Each group's tile holds its own first `valid` positions.
                    if p % tile < valid as usize {
                        xs[i].affine()
                    } else {
                        T::from_i64(0)
                    }
                })
                .collect();
            assert_same(
                &yb.to_vec().expect("download"),
                &want,
                &format!("{name} valid {valid}"),
            );
        }
    }
    let mut batch = Batch::default();
    for (block, warps) in [
        (64u32, false),
        (34, false),
        (33, false),
        (96, true),
        (50, false),
    ] {
        for offset in [0u32, 1, 4] {
            one::<f32>(block, 8, warps, offset, &mut batch);
            one::<u32>(block, 16, warps, offset, &mut batch);
            one::<u64>(block, 4, warps, offset, &mut batch);
            one::<f64>(block, 8, warps, offset, &mut batch);
        }
    }
}

//! Bounds: every load and store of a kernel is guarded by the length of the buffer actually
//! passed, so no launch through the safe API touches memory outside its buffers, whatever its
//! grid, offsets and valid counts. Loads past the end behave as past the valid items (their
//! slots take the default, or stay unwritten); stores past the end are dropped. Kernels built
//! with `unchecked_bounds` have no guards and launch only through `launch_unchecked`.
//!
//! Every kernel runs on the default device against a CPU reference, with a neighbouring buffer
//! that must stay untouched, and is assembled by ptxas for each arch.

use super::common::{Batch, assemble_all, assert_same, device};
use coopgraph::ir::{Algorithm, Bounds, Group, index};
use coopgraph::ptx::Arch;
use coopgraph::runtime::{Compile, HiddenParam, LaunchConfig, RuntimeError};
use coopgraph::{KernelBuilder, Load, Store};

const SENTINEL: i32 = -777;

/// The fluent pipeline launched over far more elements than its buffers hold: a clean run that
/// computes the buffers' elements and nothing past them.
#[test]
fn launch_over_more_than_the_buffers_is_clean() {
    let dev = device();
    let kernel = KernelBuilder::new("scale_add_oob")
        .block(128)
        .items_per_thread(4)
        .load::<f32>("x")
        .map(|v| v * 2.0 + 1.0)
        .store("y")
        .build()
        .expect("builds");
    assemble_all(&kernel);
    let f = dev.compile(&kernel).expect("compile");
    let xs: Vec<f32> = (0..100).map(|i| i as f32).collect();
    let before = dev.alloc_filled(1000, -1.0f32).expect("alloc");
    let x = dev.upload(&xs).expect("upload");
    let mut y = dev.alloc_zeroed::<f32>(100).expect("alloc");
    let after = dev.alloc_filled(1000, -1.0f32).expect("alloc");
    f.launch_over(1_000_000, (&x, 1_000_000u32, &mut y))
        .expect("a clean run");
    let want: Vec<f32> = xs.iter().map(|v| v * 2.0 + 1.0).collect();
    assert_same(&y.to_vec().expect("download"), &want, "y");
    for (name, b) in [("before", &before), ("after", &after)] {
        assert_same(&b.to_vec().expect("download"), &[-1.0; 1000], name);
    }
}

fn groups(k: &KernelBuilder) -> Vec<(&'static str, Group)> {
    vec![
        ("block", k.this_block()),
        ("warp8", k.this_warp().group_by(8)),
    ]
}

/// `y[offset + q] = x[offset + q] + 1` for every position `q` of the block's tile with
/// `offset + q` inside both buffers (`oob` past `x`'s end), for every algorithm and group and
/// offsets at, across and far past the end of either buffer, and tiles that run past
/// `u32::MAX`; a buffer allocated after each stays untouched.
#[test]
fn offsets_past_the_end_read_defaults_and_write_nothing() {
    let dev = device();
    let mut batch = Batch::default();
    let block = 64u32;
    for items in [1u32, 3, 4] {
        for algorithm in Algorithm::ALL {
            let probe = KernelBuilder::new("probe");
            for (gname, group) in groups(&probe) {
                if !algorithm.for_warps() && gname != "block" {
                    continue;
                }
                let name = format!("oob_{gname}_{algorithm:?}_{items}");
                let mut k = KernelBuilder::new(name.clone())
                    .block(block)
                    .items_per_thread(items);
                let x = k.input::<i32>("x");
                let y = k.output::<i32>("y");
                let offset = k.scalar::<u32>("offset");
                let t = k.load_from(
                    group,
                    &x,
                    Load::direct()
                        .algorithm(algorithm)
                        .offset(offset)
                        .oob_default(1000),
                );
                let u = k.map(&t, |v| v + 1);
                k.store_to(
                    group,
                    &y,
                    &u,
                    Store::default().algorithm(algorithm).offset(offset),
                );
                let kernel = k.build().unwrap_or_else(|e| panic!("{name}: {e}"));
                batch.add(&kernel);
                let f = dev
                    .compile(&kernel)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                let tile = (block * items) as usize;
                let (nx, ny) = (tile / 2 + 7, tile + 3);
                let xs: Vec<i32> = (0..nx as i32).map(|i| i * 5 - 3).collect();
                // The last three wrap past u32::MAX within the tile: the wrapped positions are
                // past the end too, never the buffer's first elements.
                let top = u32::MAX as usize;
                for offset in [
                    0usize,
                    5,
                    nx - 1,
                    nx,
                    ny - 2,
                    ny,
                    ny + 1,
                    3 * tile,
                    1 << 20,
                    top - 5,
                    top - tile / 2,
                    top,
                ] {
                    let x = dev.upload(&xs).expect("upload");
                    let x_after = dev.alloc_filled(4 * tile, SENTINEL).expect("alloc");
                    let mut y = dev.alloc_filled(ny, SENTINEL).expect("alloc");
                    let y_after = dev.alloc_filled(4 * tile, SENTINEL).expect("alloc");
                    f.launch_grid(1, (&x, &mut y, offset as u32))
                        .unwrap_or_else(|e| panic!("{name} offset={offset}: {e}"));
                    let mut want = vec![SENTINEL; ny];
                    for (p, w) in want.iter_mut().enumerate().skip(offset) {
                        if p < offset + tile {
                            *w = xs.get(p).copied().unwrap_or(1000) + 1;
                        }
                    }
                    let what = format!("{name} offset={offset}");
                    assert_same(&y.to_vec().expect("download"), &want, &what);
                    for b in [&x_after, &y_after] {
                        assert_same(
                            &b.to_vec().expect("download"),
                            &vec![SENTINEL; 4 * tile],
                            &format!("{what}: neighbour"),
                        );
                    }
                }
            }
        }
    }
}

/// Valid counts past the end of the buffer, per group and per block, and a grid-stride loop
/// over more elements than the buffers hold: the buffers' lengths bound them all.
#[test]
fn counts_and_tiles_past_the_end_stop_at_the_buffer() {
    let dev = device();
    let mut batch = Batch::default();
    for (name, algorithm) in [
        ("direct", Algorithm::Direct),
        ("vectorize", Algorithm::Vectorize),
        ("warp_transpose", Algorithm::WarpTranspose),
    ] {
        let mut k = KernelBuilder::new(format!("tiles_oob_{name}"))
            .block(64)
            .items_per_thread(4);
        let x = k.input::<i32>("x");
        let y = k.output::<i32>("y");
        let n = k.scalar::<u32>("n");
        let b = k.this_block();
        k.tiles(n, |k, _| {
            let t = k.load_from(b, &x, Load::direct().algorithm(algorithm).oob_default(0));
            let u = k.map(&t, |v| v * 2);
            k.store_to(b, &y, &u, Store::default().algorithm(algorithm));
        });
        let kernel = k.build().expect("builds");
        batch.add(&kernel);
        let f = dev.compile(&kernel).expect("compile");
        let (nx, ny) = (700usize, 900usize);
        let xs: Vec<i32> = (0..nx as i32).collect();
        let x = dev.upload(&xs).expect("upload");
        let mut y = dev.alloc_filled(ny, SENTINEL).expect("alloc");
        let after = dev.alloc_filled(4096, SENTINEL).expect("alloc");
        // Four blocks over n = 5000: every tile past 900 elements is dropped.
        f.launch_grid(4, (&x, &mut y, 5000u32)).expect("launch");
        let want: Vec<i32> = (0..ny).map(|i| xs.get(i).map_or(0, |v| v * 2)).collect();
        assert_same(&y.to_vec().expect("download"), &want, name);
        assert_same(&after.to_vec().expect("download"), &[SENTINEL; 4096], name);
    }
    // A logical warp's own count past its buffer's end.
    let mut k = KernelBuilder::new("own_count_oob")
        .block(64)
        .items_per_thread(3);
    let x = k.input::<i32>("x");
    let y = k.output::<i32>("y");
    let w = k.this_warp().group_by(16);
    let t = k.load_from(w, &x, Load::striped().valid_items(1000u32).oob_default(-5));
    k.store_to(w, &y, &t, Store::striped().valid_items(1000u32));
    let kernel = k.build().expect("builds");
    batch.add(&kernel);
    let f = dev.compile(&kernel).expect("compile");
    let xs: Vec<i32> = (0..100).collect();
    let x = dev.upload(&xs).expect("upload");
    let mut y = dev.alloc_filled(150, SENTINEL).expect("alloc");
    let after = dev.alloc_filled(1024, SENTINEL).expect("alloc");
    f.launch_grid(1, (&x, &mut y)).expect("launch");
    let want: Vec<i32> = (0..150).map(|i| if i < 100 { i } else { -5 }).collect();
    assert_same(&y.to_vec().expect("download"), &want, "own count");
    assert_same(
        &after.to_vec().expect("download"),
        &[SENTINEL; 1024],
        "own count",
    );
}

/// A bounds-checked scalar load of at most sixteen items a thread guards each item on every
/// tile (one predicated load an item, no branch); one of more items branches between an
/// unguarded copy for whole tiles and a guarded one. Either way a partial last tile moves only
/// the elements the buffers hold (the simulator faults any access past them).
#[test]
fn loads_of_a_few_items_are_predicated_and_longer_ones_branch() {
    let dev = device();
    let mut batch = Batch::default();
    for items in [2u32, 8, 16, 17, 20] {
        let mut k = KernelBuilder::new(format!("few_items_{items}"))
            .block(48)
            .items_per_thread(items);
        let x = k.input::<u16>("x");
        let y = k.output::<u32>("y");
        let b = k.this_block();
        let t = k.load_from(b, &x, Load::direct().oob_default(7));
        let u = k.map(&t, |v| v.cast::<u32>() + 1u32);
        k.store_to(b, &y, &u, Store::direct());
        let kernel = k.build().expect("builds");
        batch.add(&kernel);
        let ptx = kernel.ptx(Arch::Sm90).expect("ptx");
        let loads: Vec<&str> = (ptx.lines().map(str::trim))
            .filter(|l| l.contains("ld.global"))
            .collect();
        let what = format!("{items} items: {loads:?}");
        if items <= 16 {
            assert_eq!(loads.len(), items as usize, "{what}");
            assert!(loads.iter().all(|l| l.starts_with("@%p")), "{what}");
        } else {
            assert_eq!(loads.len(), 2 * items as usize, "{what}");
            let guarded = loads.iter().filter(|l| l.starts_with("@%p")).count();
            assert_eq!(guarded, items as usize, "{what}");
        }
        // Two blocks, the second's tile cut 5 items short by the input's end.
        let tile = 48 * items as usize;
        let n = 2 * tile - 5;
        let xs: Vec<u16> = (0..n).map(|i| (i * 37 % 1000) as u16).collect();
        let f = dev.compile(&kernel).expect("compile");
        let x = dev.upload(&xs).expect("upload");
        let mut y = dev.alloc_filled(n, SENTINEL as u32).expect("alloc");
        f.launch_grid(2, (&x, &mut y)).expect("launch");
        let want: Vec<u32> = xs.iter().map(|&v| u32::from(v) + 1).collect();
        assert_same(&y.to_vec().expect("download"), &want, &what);
    }
    batch.finish();
}

/// Misaligned vector accesses fall back to scalar ones, which the length guards as well.
#[test]
fn vector_accesses_stop_at_the_end() {
    let dev = device();
    let mut k = KernelBuilder::new("vec_oob").block(32).items_per_thread(4);
    let x = k.input::<f32>("x");
    let y = k.output::<f32>("y");
    let offset = k.scalar::<u32>("offset");
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::vectorize().offset(offset).oob_default(0.5));
    k.store_to(b, &y, &t, Store::vectorize().offset(offset));
    let kernel = k.build().expect("builds");
    assemble_all(&kernel);
    let f = dev.compile(&kernel).expect("compile");
    let xs: Vec<f32> = (0..77).map(|i| i as f32).collect();
    for offset in [0usize, 1, 4, 60, 77, 80] {
        let x = dev.upload(&xs).expect("upload");
        let mut y = dev.alloc_filled(90, -1.0f32).expect("alloc");
        f.launch_grid(1, (&x, &mut y, offset as u32))
            .expect("launch");
        let want: Vec<f32> = (0..90)
            .map(|p| match p {
                _ if p < offset || p >= offset + 128 => -1.0,
                _ if p < 77 => p as f32,
                _ => 0.5,
            })
            .collect();
        assert_same(
            &y.to_vec().expect("download"),
            &want,
            &format!("offset={offset}"),
        );
    }
}

/// The lengths are hidden parameters: the signature shows the user's, the image describes the
/// rest, one `u32` per buffer after them.
#[test]
fn lengths_are_hidden_parameters() {
    let mut k = KernelBuilder::new("hidden");
    let x = k.input::<f32>("x");
    let n = k.scalar::<u32>("n");
    let y = k.output::<f32>("y");
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::direct().valid_items(n));
    k.store_to(b, &y, &t, Store::direct().valid_items(n));
    let kernel = k.build().expect("builds");
    let names: Vec<String> = kernel.signature().into_iter().map(|p| p.name).collect();
    assert_eq!(names, ["x", "n", "y"]);
    let image = kernel.emit(Arch::Sm90).expect("emits");
    assert_eq!(image.bounds(), Bounds::Checked);
    assert_eq!(
        image.hidden,
        [
            HiddenParam::Length { buffer: 0 },
            HiddenParam::Length { buffer: 2 }
        ]
    );
    assert!(
        image.ptx.contains(".param .u32 hidden_len_2\n)"),
        "{}",
        image.ptx
    );
}

/// A kernel built without checks: no guards and no hidden parameters; the safe launches refuse
/// it, the unsafe one runs it; it is another kernel to the cache.
#[test]
fn unchecked_kernels_launch_only_unsafely() {
    let dev = device();
    let build = |unchecked: bool| {
        let mut k = KernelBuilder::new("copy_unchecked")
            .block(64)
            .items_per_thread(4);
        if unchecked {
            k = k.unchecked_bounds();
        }
        let x = k.input::<i32>("x");
        let y = k.output::<i32>("y");
        let n = k.scalar::<u32>("n");
        let b = k.this_block();
        let origin = index::block_index() * 256u32;
        let valid = n.expr().gt(origin.clone()).select(n.expr() - origin, 0u32);
        let t = k.load_from(b, &x, Load::vectorize().valid_items(valid.clone()));
        k.store_to(b, &y, &t, Store::vectorize().valid_items(valid));
        k.build().expect("builds")
    };
    let (checked, unchecked) = (build(false), build(true));
    assemble_all(&unchecked);
    assert_ne!(checked.key(), unchecked.key());
    let image = unchecked.emit(Arch::Sm90).expect("emits");
    assert_eq!(image.bounds(), Bounds::Unchecked);
    assert!(image.hidden.is_empty());
    assert!(!image.ptx.contains("_len_"), "{}", image.ptx);
    assert!(unchecked.explain().contains("unchecked"));

    let f = dev.compile(&unchecked).expect("compile");
    let g = dev.compile(&checked).expect("compile");
    assert!(!f.same_module(&g));
    let xs: Vec<i32> = (0..1000).collect();
    let x = dev.upload(&xs).expect("upload");
    let mut y = dev.alloc_filled(1000, SENTINEL).expect("alloc");
    for refused in [
        f.launch_over(1000, (&x, &mut y, 1000u32)),
        f.launch_grid(4, (&x, &mut y, 1000u32)),
        f.launch(LaunchConfig::blocks(4), (&x, &mut y, 1000u32)),
        f.launch_with_report(LaunchConfig::blocks(4), (&x, &mut y, 1000u32))
            .map(|_| ()),
    ] {
        match refused {
            Err(RuntimeError::UncheckedKernel { entry }) => assert_eq!(entry, "copy_unchecked"),
            other => panic!("expected UncheckedKernel, got {other:?}"),
        }
    }
    assert_same(&y.to_vec().expect("download"), &[SENTINEL; 1000], "refused");
    let config = f.config_over(1000).expect("config");
    // SAFETY: the valid counts stop at n = 1000, the length of both buffers.
    unsafe { f.launch_unchecked(config, (&x, &mut y, 1000u32)) }.expect("launch");
    assert_same(&y.to_vec().expect("download"), &xs, "unchecked copy");
    // The checked kernel may go through the unsafe entry point too.
    let mut z = dev.alloc_filled(1000, SENTINEL).expect("alloc");
    let config = g.config_over(1000).expect("config");
    // SAFETY: the kernel checks its own accesses.
    unsafe { g.launch_unchecked(config, (&x, &mut z, 1000u32)) }.expect("launch");
    assert_same(&z.to_vec().expect("download"), &xs, "checked copy");
}

/// An empty buffer has no element an access may touch: an unchecked store to element 0 of
/// an empty output is an out-of-bounds access on the simulator (it once had a byte of
/// padding there), and the checked kernel writes nothing.
#[test]
fn empty_buffers_have_no_elements() {
    use coopgraph::sim::SimError;
    let build = |unchecked: bool| {
        let mut k = KernelBuilder::new(format!("one_u8_{unchecked}"))
            .block(1)
            .items_per_thread(1);
        if unchecked {
            k = k.unchecked_bounds();
        }
        let x = k.input::<u8>("x");
        let y = k.output::<u8>("y");
        let b = k.this_block();
        let t = k.load_from(b, &x, Load::vectorize());
        k.store_to(b, &y, &t, Store::vectorize());
        k.build().expect("builds")
    };
    let sim = coopgraph::runtime::Device::sim();
    let x = sim.upload(&[7u8]).expect("upload");
    let mut y = sim.alloc_zeroed::<u8>(0).expect("alloc");
    let (checked, unchecked) = (build(false), build(true));
    assemble_all(&checked);
    assemble_all(&unchecked);
    let f = sim.compile(&unchecked).expect("compile");
    let config = f.config_over(1).expect("config");
    // SAFETY: none; the simulator reports the access past the empty output.
    let r = unsafe { f.launch_unchecked(config, (&x, &mut y)) };
    match r {
        Err(RuntimeError::Sim(SimError::OutOfBounds(_))) => {}
        other => panic!("expected an out-of-bounds store, got {other:?}"),
    }
    let g = sim.compile(&checked).expect("compile");
    g.launch_grid(1, (&x, &mut y)).expect("launch");
    assert!(y.to_vec().expect("download").is_empty());
    let mut z = sim.alloc_filled(1, 0u8).expect("alloc");
    g.launch_grid(1, (&x, &mut z)).expect("launch");
    assert_eq!(z.to_vec().expect("download"), [7]);
}

/// Past `u32::MAX` elements a launch over `n` is an error: indices are 32-bit.
#[test]
fn launches_over_more_than_32_bit_indices_are_errors() {
    let dev = device();
    let kernel = KernelBuilder::new("big")
        .load::<u8>("x")
        .store("y")
        .build()
        .expect("builds");
    let f = dev.compile(&kernel).expect("compile");
    let x = dev.upload(&[1u8; 4]).expect("upload");
    let mut y = dev.alloc_zeroed::<u8>(4).expect("alloc");
    let n = u32::MAX as usize + 1;
    match f.launch_over(n, (&x, 4u32, &mut y)) {
        Err(RuntimeError::TooManyElements { n: got, max }) => {
            assert_eq!((got, max), (n as u64, u64::from(u32::MAX)))
        }
        other => panic!("expected TooManyElements, got {other:?}"),
    }
}

/// A grid whose blocks' tiles pass 2^32 positions is refused for a kernel whose loads and
/// stores take their tiles from the block's index (its offsets would wrap onto other blocks'
/// elements), and only for such a kernel; with that guarantee, the one-item guard of a
/// block's own tile compares the element with the length only, while a user's offset keeps
/// the wrap test.
#[test]
fn grids_past_32_bit_positions_are_errors_where_tiles_come_from_the_block() {
    let dev = device();
    let copy = |name: &str, offset: bool| {
        let mut k = KernelBuilder::new(name).block(256).items_per_thread(1);
        let (x, y) = (k.input::<f32>("x"), k.output::<f32>("y"));
        let b = k.this_block();
        let (load, store) = if offset {
            let at = index::block_index() * 256u32 + 5u32;
            (
                Load::direct().offset(at.clone()),
                Store::direct().offset(at),
            )
        } else {
            (Load::direct(), Store::direct())
        };
        let t = k.load_from(b, &x, load);
        k.store_to(b, &y, &t, store);
        k.build().expect("builds")
    };
    let (tiled, offset) = (copy("tiled", false), copy("offset", true));
    assemble_all(&tiled);
    assemble_all(&offset);
    let f = dev.compile(&tiled).expect("compile");
    assert!(f.image().tile_offsets);
    assert!(!dev.compile(&offset).expect("compile").image().tile_offsets);
    let x = dev.upload(&[1.0f32; 4]).expect("upload");
    let mut y = dev.alloc_zeroed::<f32>(4).expect("alloc");
    // 2^24 blocks of 256 end exactly at 2^32: one position too many.
    match f.launch_grid(1 << 24, (&x, &mut y)) {
        Err(RuntimeError::TooManyElements { n, max }) => {
            assert_eq!((n, max), (1u64 << 32, u64::from(u32::MAX)))
        }
        other => panic!("expected TooManyElements, got {other:?}"),
    }
    f.launch_grid(3, (&x, &mut y)).expect("launch");
    assert_eq!(y.to_vec().expect("download"), [1.0; 4]);
    // The wrap test is `setp.ge.u32` of the element against the offset.
    let wrap_tests = |k: &coopgraph::Kernel| {
        let ptx = k.ptx(Arch::Sm90).expect("ptx");
        ptx.lines().filter(|l| l.contains("setp.ge.u32")).count()
    };
    assert_eq!(wrap_tests(&tiled), 0);
    assert_eq!(wrap_tests(&offset), 2);
}

//! The device-wide selection, partition and run-length encoding (single pass, decoupled
//! look-back) against CPU references: element types from `u8` to `f64`, predicates keeping
//! none, about 30% and all, flags, partial tiles, runs crossing tile boundaries, counts left
//! on the device, and blocks run interleaved in linear, reversed and shuffled order on the
//! simulator with every checker on.

use crate::common::{BLOCK_ORDERS, Rng, assert_same, device, sim_in};
use coopgraph::Error;
use coopgraph::algorithms::{
    AlgorithmError, DeviceRunLengthEncode, DeviceSelect, PreparedRunLengthEncode, PreparedSelect,
    SelectKind, Tuning, Workspace,
};
use coopgraph::ir::{Element, Expr};
use coopgraph::runtime::{Device, DeviceElement, SimOptions};
use coopgraph::sim::BlockOrder;

/// A small tuning (tiles of 192), so that many tiles stay cheap on the simulator.
const SMALL: Tuning = Tuning {
    threads: 64,
    items: 3,
};

/// Sizes around the tile: empty, one element, a tile less one, a tile, many tiles and a
/// partial one.
fn sizes(tile: usize) -> [usize; 6] {
    [0, 1, tile - 1, tile, 2 * tile + 1, 7 * tile + 37]
}

/// Values 0 to 9 (exact in every type).
fn data<T: Element>(rng: &mut Rng, n: usize) -> Vec<T> {
    (0..n)
        .map(|_| T::cast_from_i64((rng.next() % 10) as i64))
        .collect()
}

/// The predicates: keep below `limit` (0: none, 3: about 30%, 10: all).
fn below<T: Element>(limit: i64) -> impl Fn(Expr<T>) -> Expr<bool> + Send + Sync + 'static {
    move |v| v.lt(Expr::lit(T::cast_from_i64(limit)))
}

fn kept_ref<T: Element>(xs: &[T], limit: i64) -> Vec<bool> {
    let limit = T::cast_from_i64(limit);
    xs.iter()
        .map(|&v| v.partial_cmp(&limit) == Some(std::cmp::Ordering::Less))
        .collect()
}

/// Runs `select` on `xs`: the output (one element longer than the input, filled with a
/// sentinel) and the count, returned and left on the device (which must agree).
fn run_select<T: DeviceElement>(
    dev: &Device,
    select: &PreparedSelect<T>,
    xs: &[T],
    flags: Option<&[u8]>,
    ws: &mut Workspace,
) -> (Vec<T>, usize) {
    let x = dev.upload(xs).expect("upload");
    let sentinel = T::cast_from_i64(77);
    let mut out = dev.alloc_filled(xs.len() + 1, sentinel).expect("alloc");
    let mut on_device = dev.alloc_filled(1, 12345u32).expect("alloc");
    let kept = match flags {
        Some(f) => {
            let f = dev.upload(f).expect("upload");
            let mut again = dev.alloc_filled(xs.len() + 1, sentinel).expect("alloc");
            select
                .run_flagged_to_device(&x, &f, &mut again, &mut on_device, ws)
                .expect("runs");
            select.run_flagged(&x, &f, &mut out, ws).expect("runs")
        }
        None => {
            let mut again = dev.alloc_filled(xs.len() + 1, sentinel).expect("alloc");
            select
                .run_to_device(&x, &mut again, &mut on_device, ws)
                .expect("runs");
            let kept = select.run(&x, &mut out, ws).expect("runs");
            let (a, b) = (again.to_vec().expect("read"), out.to_vec().expect("read"));
            assert_same(&a[..kept], &b[..kept], "the device-count run's output");
            kept
        }
    };
    assert_eq!(
        on_device.to_vec().expect("read")[0] as usize,
        kept,
        "the count left on the device"
    );
    let mut got = out.to_vec().expect("read back");
    assert!(
        got.pop().expect("one more").to_bits() == sentinel.to_bits(),
        "the element past the input was written"
    );
    (got, kept)
}

/// Selection and partition of one element type over every size and fraction kept.
fn select_and_partition<T: DeviceElement>(tuning: Tuning) {
    let dev = device();
    let mut rng = Rng::new(T::DTYPE.bytes() as u64 * 41 + 3);
    let mut ws = Workspace::new(dev).expect("workspace");
    let sentinel = T::cast_from_i64(77);
    for limit in [0, 3, 10] {
        let select = DeviceSelect::new(below::<T>(limit))
            .tuning(tuning)
            .prepare(dev)
            .expect("prepares");
        let part = DeviceSelect::partition(below::<T>(limit))
            .tuning(tuning)
            .prepare(dev)
            .expect("prepares");
        for n in sizes(tuning.tile_items() as usize) {
            let xs = data::<T>(&mut rng, n);
            let keep = kept_ref(&xs, limit);
            let what = format!("{} n={n} below {limit}", T::DTYPE);
            let want: Vec<T> = xs
                .iter()
                .zip(&keep)
                .filter(|p| *p.1)
                .map(|p| *p.0)
                .collect();
            let rejected: Vec<T> = xs
                .iter()
                .zip(&keep)
                .filter(|p| !*p.1)
                .map(|p| *p.0)
                .collect();
            let (got, kept) = run_select(dev, &select, &xs, None, &mut ws);
            assert_eq!(kept, want.len(), "select {what}: count");
            assert_same(&got[..kept], &want, &format!("select {what}"));
            assert!(
                got[kept..]
                    .iter()
                    .all(|v| v.to_bits() == sentinel.to_bits()),
                "select {what}: wrote past the kept elements"
            );
            let (got, kept) = run_select(dev, &part, &xs, None, &mut ws);
            let mut full = want.clone();
            full.extend(rejected.iter().rev());
            assert_eq!(kept, want.len(), "partition {what}: count");
            assert_same(&got, &full, &format!("partition {what}"));
        }
    }
}

#[test]
fn select_and_partition_every_type_size_and_fraction() {
    select_and_partition::<u8>(SMALL);
    select_and_partition::<u32>(SMALL);
    select_and_partition::<i32>(SMALL);
    select_and_partition::<f32>(SMALL);
    select_and_partition::<u64>(SMALL);
    select_and_partition::<f64>(SMALL);
}

/// A thread's flags fold into a 32-bit mask up to 32 items and a 64-bit one past that: items
/// on both sides of the switch and at each width's last bit, with none, some and all kept.
#[test]
fn flag_masks_of_both_widths() {
    for items in [31, 32, 33, 64] {
        let tuning = Tuning { threads: 32, items };
        select_and_partition::<u32>(tuning);
        select_and_partition::<f64>(tuning);
    }
}

#[test]
fn flagged_and_fused_map() {
    let dev = device();
    let mut rng = Rng::new(5);
    let mut ws = Workspace::new(dev).expect("ws");
    let flagged = DeviceSelect::<i64>::flagged()
        .tuning(SMALL)
        .prepare(dev)
        .expect("prepares");
    let squares = DeviceSelect::new(|v: Expr<i32>| v.gt(20))
        .map_input(|v| v.clone() * v)
        .tuning(SMALL)
        .prepare(dev)
        .expect("prepares");
    for n in sizes(SMALL.tile_items() as usize) {
        let xs: Vec<i64> = rng.vec(n);
        let flags: Vec<u8> = (0..n).map(|_| (rng.next() % 3) as u8 * 100).collect();
        let want: Vec<i64> = (0..n).filter(|&i| flags[i] != 0).map(|i| xs[i]).collect();
        let (got, kept) = run_select(dev, &flagged, &xs, Some(&flags), &mut ws);
        assert_same(&got[..kept], &want, &format!("flagged n={n}"));
        let ys = data::<i32>(&mut rng, n);
        let want: Vec<i32> = ys.iter().map(|v| v * v).filter(|&v| v > 20).collect();
        let (got, kept) = run_select(dev, &squares, &ys, None, &mut ws);
        assert_same(&got[..kept], &want, &format!("squares n={n}"));
    }
}

/// The CPU's run-length encoding.
fn encode_ref<T: Element>(xs: &[T]) -> (Vec<T>, Vec<u32>) {
    let (mut unique, mut counts) = (Vec::new(), Vec::<u32>::new());
    for (i, &x) in xs.iter().enumerate() {
        if i == 0 || x != xs[i - 1] {
            unique.push(x);
            counts.push(0);
        }
        *counts.last_mut().expect("a run") += 1;
    }
    (unique, counts)
}

/// Runs of random lengths from 1 to `longest`, consecutive runs of different values (some
/// NaN for floats: each NaN its own run).
fn runs<T: Element>(rng: &mut Rng, n: usize, longest: u64) -> Vec<T> {
    let mut xs = Vec::with_capacity(n);
    let mut v = 0i64;
    while xs.len() < n {
        v = (v + 1 + (rng.next() % 5) as i64) % 50;
        let len = 1 + (rng.next() % longest) as usize;
        let x = if rng.next().is_multiple_of(17) {
            T::from_bits(match T::DTYPE {
                coopgraph::ir::DType::F32 => f32::NAN.to_bits() as u64,
                coopgraph::ir::DType::F64 => f64::NAN.to_bits(),
                _ => T::cast_from_i64(v).to_bits(),
            })
        } else {
            T::cast_from_i64(v)
        };
        xs.extend(std::iter::repeat_n(x, len.min(n - xs.len())));
    }
    xs
}

/// Encodes `xs` (returned to the host and left on the device, which must agree) and checks
/// it against the CPU's, and that nothing past the runs was written.
fn check_encode<T: DeviceElement>(
    dev: &Device,
    rle: &PreparedRunLengthEncode<T>,
    xs: &[T],
    ws: &mut Workspace,
    what: &str,
) {
    let x = dev.upload(xs).expect("upload");
    let n = xs.len();
    let sentinel = T::cast_from_i64(77);
    let mut unique = dev.alloc_filled(n, sentinel).expect("alloc");
    let mut counts = dev.alloc_filled(n + 1, u32::MAX).expect("alloc");
    let mut on_device = dev.alloc_filled(1, 12345u32).expect("alloc");
    let (mut u2, mut c2) = (
        dev.alloc_zeroed::<T>(n).expect("alloc"),
        dev.alloc_zeroed::<u32>(n).expect("alloc"),
    );
    rle.run_to_device(&x, &mut u2, &mut c2, &mut on_device, ws)
        .expect("runs");
    let runs = rle.run(&x, &mut unique, &mut counts, ws).expect("runs");
    let (want_u, want_c) = encode_ref(xs);
    assert_eq!(runs, want_u.len(), "{what}: runs");
    assert_eq!(
        on_device.to_vec().expect("read")[0] as usize,
        runs,
        "{what}: runs on the device"
    );
    let (u, c) = (
        unique.to_vec().expect("read"),
        counts.to_vec().expect("read"),
    );
    assert_same(&u[..runs], &want_u, &format!("{what}: unique"));
    assert_eq!(c[..runs], want_c[..], "{what}: counts");
    assert!(
        u[runs..].iter().all(|v| v.to_bits() == sentinel.to_bits()),
        "{what}: unique past the runs"
    );
    assert!(
        c[runs..].iter().all(|&v| v == u32::MAX),
        "{what}: counts past the runs"
    );
    assert_same(
        &c2.to_vec().expect("read")[..runs],
        &want_c,
        &format!("{what}: device-count run"),
    );
}

fn encodes<T: DeviceElement>() {
    let dev = device();
    let mut rng = Rng::new(T::DTYPE.bytes() as u64 * 7 + 1);
    let mut ws = Workspace::new(dev).expect("ws");
    let rle = DeviceRunLengthEncode::<T>::new()
        .tuning(SMALL)
        .prepare(dev)
        .expect("prepares");
    let tile = SMALL.tile_items() as usize;
    for n in sizes(tile) {
        // Short runs, runs near a tile, and runs longer than two tiles.
        for longest in [1, 16, tile as u64, 3 * tile as u64] {
            let xs = runs::<T>(&mut rng, n, longest);
            check_encode(
                dev,
                &rle,
                &xs,
                &mut ws,
                &format!("{} n={n} longest {longest}", T::DTYPE),
            );
        }
    }
}

#[test]
fn run_length_encode_every_type_size_and_run_length() {
    encodes::<u8>();
    encodes::<u32>();
    encodes::<i32>();
    encodes::<f32>();
    encodes::<u64>();
    encodes::<f64>();
}

/// Blocks interleaved in every order: tiles come from the counter in arrival order, and warp
/// 0 of a tile sees predecessors that published only their aggregate or nothing yet.
#[test]
fn look_back_in_any_block_order() {
    let tuning = Tuning {
        threads: 32,
        items: 2,
    };
    let mut rng = Rng::new(37);
    for order in BLOCK_ORDERS {
        let dev = sim_in(order);
        let mut ws = Workspace::new(&dev).expect("ws");
        let n = 64 * 70 + 5;
        let xs = data::<u32>(&mut rng, n);
        let part = DeviceSelect::partition(below::<u32>(3))
            .tuning(tuning)
            .prepare(&dev)
            .expect("prepares");
        let keep = kept_ref(&xs, 3);
        let mut want: Vec<u32> = xs
            .iter()
            .zip(&keep)
            .filter(|p| *p.1)
            .map(|p| *p.0)
            .collect();
        let kept = want.len();
        want.extend(xs.iter().zip(&keep).filter(|p| !*p.1).map(|p| *p.0).rev());
        let (got, count) = run_select(&dev, &part, &xs, None, &mut ws);
        assert_eq!(count, kept, "{order:?} partition count");
        assert_same(&got, &want, &format!("{order:?} partition"));
        let rle = DeviceRunLengthEncode::<f64>::new()
            .tuning(tuning)
            .prepare(&dev)
            .expect("prepares");
        let ys = runs::<f64>(&mut rng, n, 100);
        check_encode(&dev, &rle, &ys, &mut ws, &format!("{order:?} encode"));
    }
}

/// The convenience functions at the default tunings (tiles of 7680 for the 4-byte selection,
/// 4096 for the 8-byte encoding, 8192 for the 4-byte one).
#[test]
fn default_tunings() {
    let dev = device();
    let mut rng = Rng::new(29);
    let n = 2 * 8192 + 77;
    let xs = data::<f32>(&mut rng, n);
    let x = dev.upload(&xs).expect("upload");
    let mut out = dev.alloc_zeroed::<f32>(n).expect("alloc");
    let kept = coopgraph::algorithms::select_if(dev, &x, &mut out, below::<f32>(3)).expect("runs");
    let want: Vec<f32> = xs.iter().copied().filter(|&v| v < 3.0).collect();
    assert_same(
        &out.to_vec().expect("read")[..kept],
        &want,
        "default select",
    );
    let ys = runs::<u64>(&mut rng, n, 40);
    let y = dev.upload(&ys).expect("upload");
    let (mut u, mut c) = (
        dev.alloc_zeroed::<u64>(n).expect("alloc"),
        dev.alloc_zeroed(n).expect("alloc"),
    );
    let r = coopgraph::algorithms::run_length_encode(dev, &y, &mut u, &mut c).expect("runs");
    let (want_u, want_c) = encode_ref(&ys);
    assert_same(&u.to_vec().expect("read")[..r], &want_u, "default encode");
    assert_eq!(
        c.to_vec().expect("read")[..r],
        want_c[..],
        "default encode counts"
    );
    // 32-bit elements encode in tiles of 512 × 16.
    let zs = runs::<u32>(&mut rng, n, 40);
    let z = dev.upload(&zs).expect("upload");
    let (mut u, mut c) = (
        dev.alloc_zeroed::<u32>(n).expect("alloc"),
        dev.alloc_zeroed(n).expect("alloc"),
    );
    let r = coopgraph::algorithms::run_length_encode(dev, &z, &mut u, &mut c).expect("runs");
    let (want_u, want_c) = encode_ref(&zs);
    assert_same(
        &u.to_vec().expect("read")[..r],
        &want_u,
        "default u32 encode",
    );
    assert_eq!(c.to_vec().expect("read")[..r], want_c[..], "u32 counts");
}

/// An empty input writes a count of 0 on the device too.
#[test]
fn empty_input_counts_zero_on_the_device() {
    let dev = device();
    let select = DeviceSelect::new(below::<u32>(3))
        .prepare(dev)
        .expect("prepares");
    let x = dev.alloc_zeroed::<u32>(0).expect("alloc");
    let mut out = dev.alloc_zeroed::<u32>(0).expect("alloc");
    let mut count = dev.alloc_filled(1, 9u32).expect("alloc");
    let mut ws = Workspace::new(dev).expect("ws");
    select
        .run_to_device(&x, &mut out, &mut count, &mut ws)
        .expect("runs");
    assert_eq!(count.to_vec().expect("read"), [0]);
    let rle = DeviceRunLengthEncode::<u32>::new()
        .prepare(dev)
        .expect("prepares");
    let mut c = dev.alloc_zeroed::<u32>(0).expect("alloc");
    let mut runs = dev.alloc_filled(1, 9u32).expect("alloc");
    rle.run_to_device(&x, &mut out, &mut c, &mut runs, &mut ws)
        .expect("runs");
    assert_eq!(runs.to_vec().expect("read"), [0]);
}

#[test]
fn typed_errors() {
    let dev = device();
    let x = dev.upload(&[1u32, 2, 3]).expect("upload");
    let mut short = dev.alloc_zeroed::<u32>(2).expect("alloc");
    let e = coopgraph::algorithms::select_if(dev, &x, &mut short, below::<u32>(3));
    assert!(matches!(
        e,
        Err(Error::Algorithm(AlgorithmError::OutputTooShort {
            input: 3,
            output: 2
        }))
    ));
    let mut out = dev.alloc_zeroed::<u32>(3).expect("alloc");
    let e = coopgraph::algorithms::run_length_encode(dev, &x, &mut out, &mut short);
    assert!(matches!(
        e,
        Err(Error::Algorithm(AlgorithmError::OutputTooShort {
            input: 3,
            output: 2
        }))
    ));
    let mut ws = Workspace::new(dev).expect("ws");
    let flagged = DeviceSelect::<u32>::flagged()
        .prepare(dev)
        .expect("prepares");
    assert_eq!(DeviceSelect::<u32>::flagged().kind(), SelectKind::Flagged);
    let e = flagged.run(&x, &mut out, &mut ws);
    assert!(matches!(
        e,
        Err(Error::Algorithm(AlgorithmError::Flags { flagged: true }))
    ));
    let short_flags = dev.upload(&[1u8]).expect("upload");
    let e = flagged.run_flagged(&x, &short_flags, &mut out, &mut ws);
    assert!(matches!(
        e,
        Err(Error::Algorithm(AlgorithmError::OutputTooShort {
            input: 3,
            output: 1
        }))
    ));
    let select = DeviceSelect::new(below::<u32>(3))
        .prepare(dev)
        .expect("prepares");
    let e = select.run_flagged(&x, &short_flags, &mut out, &mut ws);
    assert!(matches!(
        e,
        Err(Error::Algorithm(AlgorithmError::Flags { flagged: false }))
    ));
    let mut no_count = dev.alloc_zeroed::<u32>(0).expect("alloc");
    let e = select.run_to_device(&x, &mut out, &mut no_count, &mut ws);
    assert!(matches!(
        e,
        Err(Error::Algorithm(AlgorithmError::OutputTooShort {
            input: 1,
            output: 0
        }))
    ));
    let other = Device::sim();
    let mut ws_other = Workspace::new(&other).expect("ws");
    let e = select.run(&x, &mut out, &mut ws_other);
    assert!(matches!(
        e,
        Err(Error::Algorithm(AlgorithmError::WrongDevice { .. }))
    ));
    let bad = Tuning {
        threads: 48,
        items: 2,
    };
    let e = DeviceRunLengthEncode::<u32>::new().tuning(bad).prepare(dev);
    assert!(matches!(
        e,
        Err(Error::Algorithm(AlgorithmError::Tuning {
            threads: 48,
            items: 2
        }))
    ));
    // A tile whose shared memory passes the block's limit is a typed error naming the source
    // line when the kernel is built, not a failed launch.
    let huge = Tuning {
        threads: 1024,
        items: 64,
    };
    let too_big = |e: Result<(), Error>| {
        let text = e.expect_err("too much shared memory").to_string();
        assert!(text.contains("shared") && text.contains(".rs:"), "{text}");
    };
    too_big(
        DeviceRunLengthEncode::<u64>::new()
            .tuning(huge)
            .prepare(dev)
            .map(drop),
    );
    too_big(
        DeviceSelect::new(below::<u64>(3))
            .tuning(huge)
            .prepare(dev)
            .map(drop),
    );
}

/// Every kernel variant assembles for every arch.
#[test]
fn kernels_assemble() {
    let mut batch = crate::common::Batch::default();
    batch.add(&DeviceSelect::new(below::<u32>(3)).kernel().expect("builds"));
    batch.add(&DeviceSelect::<u8>::flagged().kernel().expect("builds"));
    batch.add(
        &DeviceSelect::partition(below::<f64>(3))
            .kernel()
            .expect("builds"),
    );
    batch.add(
        &DeviceRunLengthEncode::<f32>::new()
            .kernel()
            .expect("builds"),
    );
    batch.add(
        &DeviceRunLengthEncode::<u64>::new()
            .kernel()
            .expect("builds"),
    );
    batch.finish();
}

/// Runs `kernel` (a selection's, with the look-back's launch arguments of a fresh workspace)
/// over `xs` in 3 tiles on `dev`: the output and the count.
fn launch_select(
    dev: &Device,
    kernel: &coopgraph::Kernel,
    xs: &[u32],
) -> Result<(Vec<u32>, Vec<u32>), coopgraph::runtime::RuntimeError> {
    let f = crate::common::compiled(dev, kernel)?;
    let x = dev.upload(xs)?;
    let mut y = dev.alloc_zeroed::<u32>(xs.len())?;
    let mut status = dev.alloc_zeroed::<u64>(8)?;
    let mut count = dev.alloc_zeroed::<u32>(1)?;
    let n = xs.len() as u32;
    f.launch_grid(3, (&x, &mut y, n, &mut status, 1u32, 0u64, &mut count))?;
    Ok((y.to_vec()?, count.to_vec()?))
}

/// Every barrier the planner placed in the selection's, partition's and encoding's kernels is
/// needed: without any one of them the race checker reports a race. The kernels add no
/// `sync_block` of their own (thread 0 hands the look-back's result on by a broadcast).
#[test]
fn every_barrier_is_needed() {
    let tuning = Tuning {
        threads: 64,
        items: 2,
    };
    let dev = crate::common::race_checker();
    let n = 3 * tuning.tile_items() as usize - 5;
    let xs: Vec<u32> = (0..n as u32).map(|i| (i * 7) % 10).collect();
    for select in [
        DeviceSelect::new(below::<u32>(3)),
        DeviceSelect::partition(below::<u32>(3)),
    ] {
        let kernel = select.tuning(tuning).kernel().expect("builds");
        let run = |k: &coopgraph::Kernel| launch_select(&dev, k, &xs);
        let (_, count) = run(&kernel).expect("runs");
        assert_eq!(
            count[0] as usize,
            kept_ref(&xs, 3).iter().filter(|k| **k).count()
        );
        crate::common::assert_barriers_necessary(&kernel, run);
        assert_eq!(
            kernel.sync_blocks(),
            0,
            "the count's hand-off is a broadcast reduction"
        );
    }
    let kernel = DeviceRunLengthEncode::<u32>::new()
        .tuning(tuning)
        .kernel()
        .expect("builds");
    let ys: Vec<u32> = (0..n as u32).map(|i| i / 5).collect();
    let run = |k: &coopgraph::Kernel| {
        let f = crate::common::compiled(&dev, k)?;
        let x = dev.upload(&ys)?;
        let mut u = dev.alloc_zeroed::<u32>(n)?;
        let mut c = dev.alloc_zeroed::<u32>(n)?;
        // The counter and four status words a tile (the pair is 64 bits, published in halves).
        let mut status = dev.alloc_zeroed::<u64>(1 + 4 * 3)?;
        let mut runs = dev.alloc_zeroed::<u32>(1)?;
        let args = (
            &x,
            &mut u,
            &mut c,
            n as u32,
            &mut status,
            1u32,
            0u64,
            &mut runs,
        );
        f.launch_grid(3, args)?;
        Ok::<_, coopgraph::runtime::RuntimeError>((c.to_vec()?, runs.to_vec()?))
    };
    let (c, runs) = run(&kernel).expect("runs");
    assert_eq!(runs[0] as usize, n.div_ceil(5));
    assert_eq!(c[0], 5);
    crate::common::assert_barriers_necessary(&kernel, run);
    assert_eq!(
        kernel.sync_blocks(),
        2,
        "one barrier after the heads' positions are written, one after the prefix"
    );
    crate::common::assert_sync_blocks_necessary(&kernel, run);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 10, .. proptest::prelude::ProptestConfig::default() })]

    /// Any length, tuning and block order: the partition of i32 and the encoding of u32
    /// match the CPU's.
    #[test]
    fn any_length_tuning_and_order(
        n in 0usize..1200,
        warps in 1u32..4,
        items in 1u32..6,
        order in 0u64..4,
        longest in 1u64..40,
        seed in 0u64..1000,
    ) {
        let block_order = match order {
            0 => BlockOrder::Linear,
            1 => BlockOrder::Interleaved,
            2 => BlockOrder::InterleavedReversed,
            _ => BlockOrder::InterleavedShuffled { seed },
        };
        let dev = Device::sim_with(SimOptions { block_order, ..SimOptions::default() });
        let tuning = Tuning { threads: 32 * warps, items };
        let mut rng = Rng::new(seed);
        let mut ws = Workspace::new(&dev).expect("ws");
        let xs = data::<i32>(&mut rng, n);
        let part = DeviceSelect::partition(below::<i32>(4)).tuning(tuning).prepare(&dev).expect("prepares");
        let keep = kept_ref(&xs, 4);
        let mut want: Vec<i32> = xs.iter().zip(&keep).filter(|p| *p.1).map(|p| *p.0).collect();
        want.extend(xs.iter().zip(&keep).filter(|p| !*p.1).map(|p| *p.0).rev());
        let (got, _) = run_select(&dev, &part, &xs, None, &mut ws);
        assert_same(&got, &want, "partition");
        let rle = DeviceRunLengthEncode::<u32>::new().tuning(tuning).prepare(&dev).expect("prepares");
        let ys = runs::<u32>(&mut rng, n, longest);
        check_encode(&dev, &rle, &ys, &mut ws, "encode");
    }
}

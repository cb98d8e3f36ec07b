//! The device-wide scan and radix sort picking their tunings through the autotuner: every
//! candidate checked against the first one's result and timed, the winner stored in the disk
//! cache and read back by the next tune; families told apart by what the algorithm computes.

use crate::common::device;
use coopgraph::Error;
use coopgraph::algorithms::{
    AlgorithmError, DeviceRadixSort, DeviceScan, Op, SortWorkspace, Tuning, Workspace,
    default_pairs_tuning, default_sort_tuning, sort_tuning_space, tuning_space,
};
use coopgraph::ir::DType;
use coopgraph::runtime::{Bench, Device, DiskCache, TuneSource};

/// A cache directory of this test's own, removed when dropped.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("coopgraph-{name}-{}", std::process::id()));
        std::fs::remove_dir_all(&dir).ok();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

const SPACE: [Tuning; 3] = [
    Tuning {
        threads: 64,
        items: 3,
    },
    Tuning {
        threads: 32,
        items: 8,
    },
    Tuning {
        threads: 128,
        items: 2,
    },
];

#[test]
fn the_winner_is_stored_and_read_back() {
    let dev = device();
    let dir = TempDir::new("scan-tune");
    let xs: Vec<u32> = (0..2000u32)
        .map(|i| i.wrapping_mul(2_654_435_761) >> 20)
        .collect();
    let x = dev.upload(&xs).expect("upload");
    let scan = DeviceScan::exclusive(Op::<u32>::sum(), 7);
    let tuner = scan
        .tuner(dev)
        .expect("tuner")
        .with_cache(DiskCache::new(&dir.0))
        .with_bench(Bench::ms(0, 1));
    let tuned = scan.tune(&tuner, &x, &SPACE).expect("tunes");
    assert_eq!(tuned.source, TuneSource::Measured);
    assert!(SPACE.contains(&tuned.prepared.tuning()));
    assert!(
        tuner
            .record_path(xs.len() as u64)
            .expect("a record")
            .exists()
    );
    let again = scan.tune(&tuner, &x, &SPACE).expect("tunes");
    assert_eq!(again.source, TuneSource::Stored);
    assert_eq!(again.prepared.tuning(), tuned.prepared.tuning());
    // The prepared scan computes the scan.
    let mut y = dev.alloc_zeroed::<u32>(xs.len()).expect("alloc");
    let mut ws = Workspace::new(dev).expect("workspace");
    again.prepared.run(&x, &mut y, &mut ws).expect("runs");
    let want: Vec<u32> = xs
        .iter()
        .scan(7u32, |acc, &v| {
            let before = *acc;
            *acc = acc.wrapping_add(v);
            Some(before)
        })
        .collect();
    assert_eq!(y.to_vec().expect("download"), want);
}

#[test]
fn float_candidates_pass_despite_reassociation() {
    let dev = device();
    let xs: Vec<f32> = (0..1500)
        .map(|i| ((i * 37) % 101) as f32 * 0.013 - 0.6)
        .collect();
    let x = dev.upload(&xs).expect("upload");
    let scan = DeviceScan::inclusive(Op::<f32>::sum()).map_input(|v| v.clone() * v);
    let tuner = scan
        .tuner(dev)
        .expect("tuner")
        .without_cache()
        .with_bench(Bench::ms(0, 1));
    let tuned = scan
        .tune(&tuner, &x, &SPACE)
        .expect("every candidate agrees");
    assert_eq!(tuned.source, TuneSource::Measured);
}

#[test]
fn families_name_what_the_scan_computes() {
    let dev = device();
    let family = |s: &DeviceScan<u32>| s.tuner(dev).expect("tuner").family().to_string();
    let sum = DeviceScan::inclusive(Op::<u32>::sum());
    assert_eq!(family(&sum), family(&sum.clone().tuning(SPACE[2])));
    assert_ne!(family(&sum), family(&DeviceScan::inclusive(Op::max())));
    assert_ne!(family(&sum), family(&sum.clone().map_input(|v| v + 1u32)));
    assert_ne!(family(&sum), family(&DeviceScan::exclusive(Op::sum(), 0)));
}

#[test]
fn a_buffer_of_another_device_is_refused() {
    let dev = device();
    let other = Device::sim();
    let x = other.upload(&[1u32, 2, 3]).expect("upload");
    let scan = DeviceScan::inclusive(Op::<u32>::sum());
    let tuner = scan.tuner(dev).expect("tuner").without_cache();
    match scan.tune(&tuner, &x, &SPACE) {
        Err(Error::Algorithm(AlgorithmError::WrongDevice { .. })) => {}
        other => panic!("expected a wrong-device error, got {other:?}"),
    }
}

#[test]
fn the_default_space_holds_the_default_tunings() {
    for dtype in [DType::U32, DType::F32, DType::U64, DType::F64] {
        let space = tuning_space(dtype);
        assert!(space.contains(&coopgraph::algorithms::default_tuning(dtype)));
        // Every candidate's tile holds at most 64 KiB of elements, in whole warps.
        let bytes = dtype.bytes();
        assert!(space.iter().all(|t| t.tile_items() * bytes <= 64 * 1024));
        assert!(space.iter().all(|t| t.threads % 32 == 0));
    }
}

/// Candidates for the radix sort: small tiles (the simulator sorts several of them), one of
/// them not a whole number of warps.
const SORT_SPACE: [Tuning; 3] = [
    Tuning {
        threads: 64,
        items: 3,
    },
    Tuning {
        threads: 96,
        items: 2,
    },
    Tuning {
        threads: 32,
        items: 5,
    },
];

/// f32 keys with both zeros, NaNs and infinities among ordinary ones.
fn awkward_floats(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| match i % 11 {
            0 => f32::NAN,
            1 => -0.0,
            2 => 0.0,
            3 => f32::NEG_INFINITY,
            4 => f32::INFINITY,
            _ => ((i as u32).wrapping_mul(2_654_435_761) >> 9) as f32 * 0.37 - 1.0e6,
        })
        .collect()
}

#[test]
fn sorts_tune_keys_and_pairs_and_read_the_winner_back() {
    let dev = device();
    let dir = TempDir::new("sort-tune");
    // Keys alone: f32 with NaNs (candidates compared by their bits), a partial last tile.
    let xs = awkward_floats(1000);
    let keys = dev.upload(&xs).expect("upload");
    let sort = DeviceRadixSort::keys::<f32>().descending();
    let tuner = (sort.tuner(dev).expect("tuner"))
        .with_cache(DiskCache::new(&dir.0))
        .with_bench(Bench::ms(0, 1));
    let tuned = sort.tune(&tuner, &keys, &SORT_SPACE).expect("tunes");
    assert_eq!(tuned.source, TuneSource::Measured);
    let mut out = dev.alloc_zeroed::<f32>(xs.len()).expect("alloc");
    let mut ws = SortWorkspace::new(dev).expect("workspace");
    tuned.prepared.run(&keys, &mut out, &mut ws).expect("runs");
    let out = out.to_vec().expect("download");
    // Descending as CUB orders floats: NaNs (positive ones) first, then +inf, ..., -inf;
    // the two zeros alike.
    let order = |v: f32| {
        let b = if v == 0.0 { 0 } else { v.to_bits() };
        if b >> 31 == 1 { !b } else { b | 1 << 31 }
    };
    assert!(out.windows(2).all(|w| order(w[0]) >= order(w[1])));
    let mut want: Vec<u32> = xs.iter().map(|v| v.to_bits()).collect();
    let mut got: Vec<u32> = out.iter().map(|v| v.to_bits()).collect();
    want.sort_unstable();
    got.sort_unstable();
    assert_eq!(got, want, "the sorted keys are the input's");
    let again = sort.tune(&tuner, &keys, &SORT_SPACE).expect("reads back");
    assert_eq!(again.source, TuneSource::Stored);
    assert_eq!(again.prepared.tile_items(), tuned.prepared.tile_items());

    // Pairs: u64 keys by bits 8..40 with u16 values, their positions.
    let ks: Vec<u64> = (0..700u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .collect();
    let vs: Vec<u16> = (0..700u16).collect();
    let (keys, values) = (
        dev.upload(&ks).expect("upload"),
        dev.upload(&vs).expect("upload"),
    );
    let sort = DeviceRadixSort::pairs::<u64, u16>().bits(8, 40);
    let tuner = (sort.tuner(dev).expect("tuner"))
        .without_cache()
        .with_bench(Bench::ms(0, 1));
    let tuned = sort
        .tune(&tuner, &keys, &values, &SORT_SPACE)
        .expect("tunes");
    let mut k = dev.alloc_zeroed::<u64>(ks.len()).expect("alloc");
    let mut v = dev.alloc_zeroed::<u16>(vs.len()).expect("alloc");
    (tuned.prepared)
        .run(&keys, &mut k, &values, &mut v, &mut ws)
        .expect("runs");
    let digit = |x: u64| (x >> 8) & 0xFFFF_FFFF;
    let mut want: Vec<usize> = (0..ks.len()).collect();
    want.sort_by_key(|&i| digit(ks[i]));
    let want_v: Vec<u16> = want.iter().map(|&i| vs[i]).collect();
    assert_eq!(
        v.to_vec().expect("download"),
        want_v,
        "stable by bits 8..40"
    );
}

#[test]
fn sort_families_name_keys_values_order_and_bits() {
    let dev = device();
    let keys = |s: &DeviceRadixSort<u32>| s.tuner(dev).expect("tuner").family().to_string();
    let asc = DeviceRadixSort::keys::<u32>();
    assert_eq!(keys(&asc), keys(&asc.clone().tuning(SORT_SPACE[1])));
    assert_ne!(keys(&asc), keys(&asc.clone().descending()));
    assert_ne!(keys(&asc), keys(&asc.clone().bits(0, 16)));
    let signed = DeviceRadixSort::keys::<i32>().tuner(dev).expect("tuner");
    assert_ne!(keys(&asc), signed.family());
    let pairs = DeviceRadixSort::pairs::<u32, u32>();
    let pair_family = pairs.tuner(dev).expect("tuner").family().to_string();
    assert_ne!(keys(&asc), pair_family);
    let other = DeviceRadixSort::pairs::<u32, f64>();
    assert_ne!(pair_family, other.tuner(dev).expect("tuner").family());
}

#[test]
fn sort_tunes_refuse_bad_buffers_and_skip_bad_candidates() {
    let dev = device();
    let keys = dev.upload(&[5u32, 1, 4, 2, 3]).expect("upload");
    let sort = DeviceRadixSort::pairs::<u32, u32>();
    let tuner = (sort.tuner(dev).expect("tuner"))
        .without_cache()
        .with_bench(Bench::ms(0, 1));
    let short = dev.upload(&[0u32; 4]).expect("upload");
    match sort.tune(&tuner, &keys, &short, &SORT_SPACE) {
        Err(Error::Algorithm(AlgorithmError::ValuesLength { keys: 5, values: 4 })) => {}
        other => panic!("expected a values-length error, got {other:?}"),
    }
    let elsewhere = Device::sim().upload(&[0u32; 5]).expect("upload");
    match sort.tune(&tuner, &keys, &elsewhere, &SORT_SPACE) {
        Err(Error::Algorithm(AlgorithmError::WrongDevice { .. })) => {}
        other => panic!("expected a wrong-device error, got {other:?}"),
    }
    // A candidate that cannot be built (no threads) is rejected; the others still tune.
    let bad = Tuning {
        threads: 0,
        items: 4,
    };
    let values = dev.upload(&[0u32, 1, 2, 3, 4]).expect("upload");
    let keys_only = DeviceRadixSort::keys::<u32>();
    let tuner = (keys_only.tuner(dev).expect("tuner"))
        .without_cache()
        .with_bench(Bench::ms(0, 1));
    let tuned = keys_only
        .tune(&tuner, &keys, &[bad, SORT_SPACE[0]])
        .expect("the good candidate wins");
    assert_eq!(tuned.prepared.tile_items(), SORT_SPACE[0].tile_items());
    let tuned = sort
        .tune(&tuner, &keys, &values, &[SORT_SPACE[2], bad])
        .expect("the good candidate wins");
    assert_eq!(tuned.prepared.tile_items(), SORT_SPACE[2].tile_items());
}

#[test]
fn the_default_sort_space_holds_the_default_sort_tunings() {
    let space = sort_tuning_space();
    for dtype in [DType::U8, DType::U32, DType::F32, DType::U64, DType::F64] {
        assert!(space.contains(&default_sort_tuning(dtype)));
        assert!(space.contains(&default_pairs_tuning(dtype, DType::U32)));
    }
    assert!(space.iter().all(|t| t.threads % 32 == 0));
}

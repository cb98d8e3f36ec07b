//! The device-wide scan picking its tuning through the autotuner: every candidate checked
//! against the first one's result and timed, the winner stored in the disk cache and read back
//! by the next tune; families told apart by what the scan computes.

use crate::common::device;
use coopgraph::Error;
use coopgraph::algorithms::{AlgorithmError, DeviceScan, Op, Tuning, Workspace, tuning_space};
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

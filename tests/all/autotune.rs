//! The autotuner on the default device (the simulator here, timing wall time; the GPU with
//! `COOPGRAPH_DEVICE=cuda`): candidates checked against the first one's output, a stored winner
//! reused by another tuner, records that fail a check deleted and tuned again.

use super::common::{Batch, device, logged, logged_with};
use coopgraph::ir::Algorithm;
use coopgraph::runtime::{
    Bench, Buffer, DiskCache, Function, Outcome, TuneError, TuneSource, Tuner, Workload,
};
use coopgraph::{Kernel, KernelBuilder, Load, Store};
use std::cell::Cell;
use std::path::PathBuf;

/// A candidate: the block, items per thread and algorithm of `y = x * factor` (a factor other
/// than 2 computes something else).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cfg {
    block: u32,
    items: u32,
    algorithm: Algorithm,
    factor: u32,
}

const fn good(block: u32, items: u32, algorithm: Algorithm) -> Cfg {
    Cfg {
        block,
        items,
        algorithm,
        factor: 2,
    }
}

const SPACE: [Cfg; 4] = [
    good(128, 4, Algorithm::Transpose),
    good(256, 2, Algorithm::Striped),
    good(64, 8, Algorithm::Vectorize),
    good(128, 2, Algorithm::WarpTranspose),
];

fn kernel(c: &Cfg) -> Result<Kernel, coopgraph::Error> {
    let Cfg {
        block,
        items,
        algorithm,
        factor,
    } = *c;
    let mut k = KernelBuilder::new(format!("tune_scale_{block}x{items}_{algorithm:?}_{factor}"))
        .block(block)
        .items_per_thread(items);
    let x = k.input::<u32>("x");
    let y = k.output::<u32>("y");
    let n = k.scalar::<u32>("n");
    let b = k.this_block();
    k.tiles(n, |k, _tile| {
        let t = k.load_from(b, &x, Load::direct().algorithm(algorithm));
        let t = k.map(&t, move |v| v * factor);
        k.store_to(b, &y, &t, Store::default().algorithm(algorithm));
    });
    k.build()
}

/// Assembles every candidate that builds, for every arch.
fn assemble(space: &[Cfg]) {
    let mut batch = Batch::default();
    for c in space {
        if let Ok(k) = kernel(c) {
            batch.add(&k);
        }
    }
}

struct Scale {
    x: Buffer<u32>,
    y: Buffer<u32>,
}

impl Scale {
    fn new(n: usize) -> Scale {
        let xs: Vec<u32> = (0..n as u32)
            .map(|i| i.wrapping_mul(2_654_435_761))
            .collect();
        Scale {
            x: device().upload(&xs).expect("upload"),
            y: device().alloc_zeroed(n).expect("alloc"),
        }
    }

    fn want(&self) -> Vec<u32> {
        let xs = self.x.to_vec().expect("download");
        xs.iter().map(|v| v.wrapping_mul(2)).collect()
    }
}

impl Workload<Cfg> for Scale {
    type Output = Vec<u32>;
    type Error = coopgraph::Error;

    fn reset(&mut self) -> Result<(), coopgraph::Error> {
        Ok(self.y.write(&vec![0xdead_beef; self.y.len()])?)
    }

    fn launch(&mut self, f: &Function, _: &Cfg) -> Result<(), coopgraph::Error> {
        let n = self.x.len();
        Ok(f.launch_over(n, (&self.x, &mut self.y, n as u32))?)
    }

    fn output(&mut self) -> Result<Vec<u32>, coopgraph::Error> {
        Ok(self.y.to_vec()?)
    }
}

/// A fresh cache directory of the test's own.
fn cache_dir(name: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    std::env::temp_dir().join(format!(
        "coopgraph-tune-{name}-{}-{nanos}",
        std::process::id()
    ))
}

/// A tuner with short budgets and no pruning (every candidate that passes is timed).
fn tuner(family: &str) -> Tuner {
    Tuner::new(device(), family)
        .with_bench(Bench::ms(0, 1))
        .with_prune_ratio(f64::INFINITY)
}

const N: usize = 3000;

#[test]
fn a_candidate_that_computes_something_else_is_rejected() {
    logged();
    let wrong = Cfg {
        factor: 3,
        ..good(128, 4, Algorithm::Striped)
    };
    let too_big = good(2048, 1, Algorithm::Direct);
    let space = [SPACE[0], wrong, too_big, SPACE[1], SPACE[2]];
    assemble(&space);
    let mut work = Scale::new(N);
    let tuned = tuner("tune_rejects")
        .without_cache()
        .tune(N as u64, &space, kernel, &mut work)
        .expect("tunes");
    assert_eq!(tuned.source, TuneSource::Measured);
    assert_eq!(tuned.candidates.len(), space.len());
    for (i, c) in tuned.candidates.iter().enumerate() {
        assert_eq!(c.index, i);
        assert_eq!(c.config, format!("{:?}", space[i]));
        match (i, &c.outcome) {
            (1, Outcome::WrongOutput) => {}
            (2, Outcome::Failed(coopgraph::Error::Verify(_))) => {}
            (0 | 3 | 4, Outcome::Timed(t)) => assert!(t.reps() >= 1),
            (_, other) => panic!("candidate {i}: {other:?}"),
        }
    }
    assert!([0, 3, 4].contains(&tuned.index), "{}", tuned.index);
    assert_eq!(tuned.config, space[tuned.index]);
    // The winner's function computes the reference's result.
    work.reset().expect("reset");
    work.launch(&tuned.function, &tuned.config).expect("launch");
    assert_eq!(work.output().expect("output"), work.want());
    let lines = logged_with("autotune `tune_rejects`");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("WARN") && l.contains("factor: 3") && l.contains("differs")),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("INFO") && l.contains(" wins ")),
        "{lines:#?}"
    );
}

#[test]
fn pruning_times_only_candidates_near_the_fastest() {
    assemble(&SPACE);
    let mut work = Scale::new(N);
    // A ratio below 1 counts as 1: only the fastest of the short benchmark is timed further.
    let tuned = tuner("tune_prune")
        .without_cache()
        .with_prune_ratio(0.5)
        .tune(N as u64, &SPACE, kernel, &mut work)
        .expect("tunes");
    let timed: Vec<usize> = tuned
        .candidates
        .iter()
        .filter(|c| matches!(c.outcome, Outcome::Timed(_)))
        .map(|c| c.index)
        .collect();
    let pruned = tuned
        .candidates
        .iter()
        .filter(|c| matches!(c.outcome, Outcome::Pruned { screened, best } if screened > best))
        .count();
    assert!(timed.contains(&tuned.index), "{:#?}", tuned.candidates);
    assert_eq!(pruned + timed.len(), SPACE.len(), "{:#?}", tuned.candidates);
    // Only a tie with the fastest (seen with GPU events on kernels this small) is timed too;
    // the simulator's wall times do not tie.
    if device().is_sim() {
        assert_eq!(timed, vec![tuned.index], "{:#?}", tuned.candidates);
    }
}

#[test]
fn a_stored_winner_is_reused_by_a_second_tuner() {
    logged();
    assemble(&SPACE);
    let dir = cache_dir("reuse");
    let mut work = Scale::new(N);
    let builds = Cell::new(0);
    let counted = |c: &Cfg| {
        builds.set(builds.get() + 1);
        kernel(c)
    };
    let first = tuner("tune_reuse")
        .with_cache(DiskCache::new(&dir))
        .tune(N as u64, &SPACE, counted, &mut work)
        .expect("tunes");
    assert_eq!(first.source, TuneSource::Measured);
    assert_eq!(builds.get(), SPACE.len());
    let path = tuner("tune_reuse")
        .with_cache(DiskCache::new(&dir))
        .record_path(N as u64)
        .expect("a cache");
    assert!(path.is_file(), "{path:?}");

    // Another tuner, as in another process: the stored winner, one build, nothing measured.
    builds.set(0);
    let second = tuner("tune_reuse")
        .with_cache(DiskCache::new(&dir))
        .tune(N as u64 - 7, &SPACE, counted, &mut work)
        .expect("tunes");
    assert_eq!(second.source, TuneSource::Stored);
    assert_eq!((second.index, second.config), (first.index, first.config));
    assert_eq!(second.median, first.median);
    assert!(second.candidates.is_empty());
    assert_eq!(builds.get(), 1);
    work.reset().expect("reset");
    work.launch(&second.function, &second.config)
        .expect("launch");
    assert_eq!(work.output().expect("output"), work.want());

    // Another size bucket, another family: tuned apart.
    builds.set(0);
    let mut larger = Scale::new(2 * N);
    let other_size = tuner("tune_reuse")
        .with_cache(DiskCache::new(&dir))
        .tune(2 * N as u64, &SPACE, counted, &mut larger)
        .expect("tunes");
    assert_eq!(other_size.source, TuneSource::Measured);
    let other_family = tuner("tune_reuse_other")
        .with_cache(DiskCache::new(&dir))
        .tune(N as u64, &SPACE, counted, &mut work)
        .expect("tunes");
    assert_eq!(other_family.source, TuneSource::Measured);
    assert_eq!(builds.get(), 2 * SPACE.len());

    // Another space of candidates: the record names a winner among others; tuned again, and
    // the new record is used next time.
    let wider = [
        SPACE[0],
        SPACE[1],
        SPACE[2],
        SPACE[3],
        good(32, 4, Algorithm::Direct),
    ];
    assemble(&wider[4..]);
    let retuned = tuner("tune_reuse")
        .with_cache(DiskCache::new(&dir))
        .tune(N as u64, &wider, kernel, &mut work)
        .expect("tunes");
    assert_eq!(retuned.source, TuneSource::Measured);
    assert!(
        logged_with("autotune `tune_reuse`")
            .iter()
            .any(|l| l.contains("among other candidates")),
    );
    let reused = tuner("tune_reuse")
        .with_cache(DiskCache::new(&dir))
        .tune(N as u64, &wider, kernel, &mut work)
        .expect("tunes");
    assert_eq!(reused.source, TuneSource::Stored);
    assert_eq!(reused.index, retuned.index);

    // Forgetting the record: measured again.
    let t = tuner("tune_reuse").with_cache(DiskCache::new(&dir));
    t.forget(N as u64).expect("forgets");
    assert!(!path.exists());
    let after = t.tune(N as u64, &wider, kernel, &mut work).expect("tunes");
    assert_eq!(after.source, TuneSource::Measured);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_corrupted_record_is_detected_deleted_and_tuned_again() {
    logged();
    assemble(&SPACE);
    let dir = cache_dir("corrupt");
    let mut work = Scale::new(N);
    let t = tuner("tune_corrupt").with_cache(DiskCache::new(&dir));
    t.tune(N as u64, &SPACE, kernel, &mut work).expect("tunes");
    let path = t.record_path(N as u64).expect("a cache");
    let deleted = || {
        logged_with(&format!("disk cache: deleting {}", path.display()))
            .iter()
            .filter(|l| l.starts_with("WARN") && l.contains("tuned again"))
            .count()
    };
    assert_eq!(deleted(), 0);

    // One byte changed: detected, deleted, tuned again, stored again.
    let mut bytes = std::fs::read(&path).expect("read");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x20;
    std::fs::write(&path, &bytes).expect("write");
    let again = t.tune(N as u64, &SPACE, kernel, &mut work).expect("tunes");
    assert_eq!(again.source, TuneSource::Measured);
    assert_eq!(deleted(), 1);
    let stored = t.tune(N as u64, &SPACE, kernel, &mut work).expect("tunes");
    assert_eq!(stored.source, TuneSource::Stored);

    // Truncated: the same.
    let bytes = std::fs::read(&path).expect("read");
    std::fs::write(&path, &bytes[..bytes.len() - 3]).expect("write");
    assert_eq!(
        t.tune(N as u64, &SPACE, kernel, &mut work)
            .expect("tunes")
            .source,
        TuneSource::Measured
    );
    assert_eq!(deleted(), 2);

    // Another family's valid record copied under this one's name: its key is not this one's.
    let other = tuner("tune_corrupt_other").with_cache(DiskCache::new(&dir));
    other
        .tune(N as u64, &SPACE, kernel, &mut work)
        .expect("tunes");
    let other_path = other.record_path(N as u64).expect("a cache");
    std::fs::copy(&other_path, &path).expect("copy");
    assert_eq!(
        t.tune(N as u64, &SPACE, kernel, &mut work)
            .expect("tunes")
            .source,
        TuneSource::Measured
    );
    assert_eq!(deleted(), 3);
    assert_eq!(
        t.tune(N as u64, &SPACE, kernel, &mut work)
            .expect("tunes")
            .source,
        TuneSource::Stored
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_space_with_no_working_candidate_is_an_error_naming_each() {
    let mut work = Scale::new(N);
    let empty = tuner("tune_empty")
        .without_cache()
        .tune(N as u64, &[], kernel, &mut work);
    assert!(
        matches!(empty, Err(TuneError::EmptySpace { .. })),
        "{empty:?}"
    );
    let space = [
        good(2048, 1, Algorithm::Direct),
        good(0, 1, Algorithm::Direct),
    ];
    let failed = tuner("tune_none")
        .without_cache()
        .tune(N as u64, &space, kernel, &mut work);
    let Err(e @ TuneError::NoCandidate { .. }) = failed else {
        panic!("{failed:?}");
    };
    let text = e.to_string();
    assert!(text.contains("none of the 2 candidates"), "{text}");
    assert!(
        text.contains("block: 2048") && text.contains("block: 0"),
        "{text}"
    );
    // It converts into the crate's error with its text.
    let as_crate: coopgraph::Error = e.into();
    assert_eq!(as_crate.to_string(), text);
}

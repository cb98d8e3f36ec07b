//! The autotuner: picks the fastest of a space of kernel specializations on a device, checking
//! each against the first one's output, and keeps the choice on disk so that the next process
//! starts tuned. See [`Tuner`].

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

use super::bench::{Bench, Timing};
use super::device::{Device, Imp};
use super::disk_cache::{DiskCache, Lookup, checksum};
use super::error::RuntimeError;
use super::image::Compile;
use super::launch::Function;

/// What the autotuner runs each candidate on: the buffers of one problem, how a candidate is
/// launched on them, and how its result is read and compared.
///
/// The tuner calls [`reset`](Self::reset), [`launch`](Self::launch) and
/// [`output`](Self::output) once per candidate to check it, then `launch` alone, many times, to
/// time it. Launches go to the device's own stream (the default of `Function::launch_over`).
pub trait Workload<C> {
    /// A candidate's result, compared with the first candidate's by [`matches`](Self::matches).
    type Output: PartialEq;

    /// What the workload's methods, and the closure that builds candidates
    /// ([`Tuner::tune`]), fail with: [`coopgraph::Error`](crate::Error) (which holds a build's
    /// verifier or planner error as well as a [`RuntimeError`]), or any error of your own that a
    /// `RuntimeError` converts into. A failed candidate keeps it ([`Outcome::Failed`]).
    type Error: From<RuntimeError> + fmt::Display;

    /// Puts the outputs in a state no correct candidate leaves them in (fills them with a
    /// poison value), so that a candidate that writes too little is caught by the comparison.
    fn reset(&mut self) -> Result<(), Self::Error>;

    /// Queues one run of the candidate `function`, built from `config`.
    fn launch(&mut self, function: &Function, config: &C) -> Result<(), Self::Error>;

    /// The result of the runs so far (downloads wait for them).
    fn output(&mut self) -> Result<Self::Output, Self::Error>;

    /// Whether `output` is as good as the first candidate's `reference`: equality by default;
    /// replace it to allow rounding differences (float sums in another order).
    fn matches(&self, reference: &Self::Output, output: &Self::Output) -> bool {
        reference == output
    }
}

/// An autotuner for one kernel family on one device.
///
/// [`tune`](Self::tune) takes the candidates (any configuration type: block size, items per
/// thread, algorithm, any builder parameter) and a closure that builds a kernel from one. It
/// builds and compiles each candidate, runs it once and compares its output with the first
/// working candidate's (a candidate that fails to build, to compile or to run, or that
/// computes something else, is rejected), times every remaining one with a short benchmark,
/// prunes those more than [`prune_ratio`](Self::with_prune_ratio) times slower than the fastest,
/// and times the rest with the full benchmark ([`Bench`]). The fastest median wins.
///
/// The winner is stored in the disk cache directory, per kernel family, problem-size bucket
/// (sizes up to the same power of two share a winner), device (its name and arch) and driver
/// version (and coopgraph's version), together with a hash of the candidates' `Debug` texts.
/// The next tune of that family and bucket, in this process or another, builds the stored
/// winner without measuring anything, as long as the candidates are the same. A record is
/// stored like a compiled module ([`DiskCache`]): checksummed, written atomically; a corrupted,
/// truncated or tampered record is reported through `log`, deleted, and the family tuned again.
/// Progress and decisions are logged (`info`: each candidate's result and the winner; `warn`:
/// a candidate that computes something else, or a record that cannot be used).
///
/// On the simulator the times are the host's wall time of simulating each candidate (see
/// [`Bench`]): they say nothing of a GPU, but every step runs, so tuning code is tested
/// without one.
///
/// ```
/// use coopgraph::ir::Algorithm;
/// use coopgraph::runtime::{Bench, Buffer, Device, DiskCache, Function, TuneSource, Tuner, Workload};
/// use coopgraph::{Kernel, KernelBuilder, Load, Store};
///
/// /// `y = 2 * x` in tiles of `block` threads x `items`, loaded and stored with `algorithm`.
/// fn build(&(block, items, algorithm): &(u32, u32, Algorithm)) -> Result<Kernel, coopgraph::Error> {
///     let mut k = KernelBuilder::new(format!("double_{block}x{items}_{algorithm:?}"))
///         .block(block)
///         .items_per_thread(items);
///     let x = k.input::<u32>("x");
///     let y = k.output::<u32>("y");
///     let n = k.scalar::<u32>("n");
///     let b = k.this_block();
///     k.tiles(n, |k, _| {
///         let t = k.load_from(b, &x, Load::direct().algorithm(algorithm));
///         let t = k.map(&t, |v| v * 2u32);
///         k.store_to(b, &y, &t, Store::default().algorithm(algorithm));
///     });
///     k.build()
/// }
///
/// struct Double {
///     x: Buffer<u32>,
///     y: Buffer<u32>,
/// }
///
/// impl Workload<(u32, u32, Algorithm)> for Double {
///     type Output = Vec<u32>;
///     type Error = coopgraph::Error;
///     fn reset(&mut self) -> Result<(), coopgraph::Error> {
///         Ok(self.y.write(&vec![u32::MAX; self.y.len()])?)
///     }
///     fn launch(&mut self, f: &Function, _: &(u32, u32, Algorithm)) -> Result<(), coopgraph::Error> {
///         let n = self.x.len();
///         Ok(f.launch_over(n, (&self.x, &mut self.y, n as u32))?)
///     }
///     fn output(&mut self) -> Result<Vec<u32>, coopgraph::Error> {
///         Ok(self.y.to_vec()?)
///     }
/// }
///
/// # fn main() -> Result<(), coopgraph::Error> {
/// let device = Device::sim();
/// let n = 2048;
/// let mut work = Double {
///     x: device.upload(&(0..n as u32).collect::<Vec<_>>())?,
///     y: device.alloc_zeroed(n)?,
/// };
/// let space = [
///     (128, 4, Algorithm::Transpose),
///     (256, 2, Algorithm::Striped),
///     (64, 8, Algorithm::Vectorize),
/// ];
/// let dir = std::env::temp_dir().join(format!("coopgraph-tune-doc-{}", std::process::id()));
/// let tuner = Tuner::new(&device, "double")
///     .with_cache(DiskCache::new(&dir))
///     .with_bench(Bench::ms(0, 2));
/// let tuned = tuner.tune(n as u64, &space, build, &mut work)?;
/// assert_eq!(tuned.source, TuneSource::Measured);
/// assert!(space.contains(&tuned.config));
///
/// // Another tuner (another process, say) finds the winner stored and measures nothing.
/// let again = Tuner::new(&device, "double").with_cache(DiskCache::new(&dir));
/// let stored = again.tune(n as u64, &space, build, &mut work)?;
/// assert_eq!(stored.source, TuneSource::Stored);
/// assert_eq!(stored.config, tuned.config);
/// # let _ = std::fs::remove_dir_all(&dir);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Tuner {
    device: Device,
    family: String,
    bench: Bench,
    prune_ratio: f64,
    cache: Option<DiskCache>,
}

/// How a [`Tuned`] winner was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TuneSource {
    /// Every candidate was checked and measured now.
    Measured,
    /// A stored record named the winner; nothing was measured.
    Stored,
}

/// The winner of a [`Tuner::tune`]: configuration `C`, kernel `K`, and the candidates' outcomes
/// with the workload's error type `E`.
#[derive(Debug)]
pub struct Tuned<C, K, E> {
    /// The winning configuration.
    pub config: C,
    /// Its index in the space.
    pub index: usize,
    /// The kernel built from it.
    pub kernel: K,
    /// The kernel compiled on the tuner's device.
    pub function: Function,
    /// Its median time (measured now, or when the stored record was made).
    pub median: Duration,
    /// Whether it was measured now or read from a record.
    pub source: TuneSource,
    /// What became of every candidate, in the space's order (empty for a stored winner).
    pub candidates: Vec<Candidate<E>>,
}

/// What became of one candidate of a tuning (`E`: the workload's error type).
#[derive(Debug)]
pub struct Candidate<E> {
    /// Its index in the space.
    pub index: usize,
    /// Its configuration's `Debug` text.
    pub config: String,
    /// What happened to it.
    pub outcome: Outcome<E>,
}

/// What became of a candidate (`E`: the workload's error type).
#[derive(Debug)]
#[non_exhaustive]
pub enum Outcome<E> {
    /// It failed to build, to compile or to run.
    Failed(E),
    /// Its output does not match the first working candidate's.
    WrongOutput,
    /// Its short benchmark's median was over the prune ratio times the fastest one's.
    Pruned {
        /// Its median in the short benchmark.
        screened: Duration,
        /// The fastest median in the short benchmark.
        best: Duration,
    },
    /// It was timed with the full benchmark.
    Timed(Timing),
}

/// Why a tuning found no winner (`E`: the workload's error type, which a failed candidate
/// keeps).
#[derive(Debug)]
#[non_exhaustive]
pub enum TuneError<E> {
    /// The space of candidates is empty.
    EmptySpace {
        /// The kernel family.
        family: String,
    },
    /// Every candidate was rejected.
    NoCandidate {
        /// The kernel family.
        family: String,
        /// What became of each.
        candidates: Vec<Candidate<E>>,
    },
}

impl<E: fmt::Display> fmt::Display for TuneError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TuneError::EmptySpace { family } => {
                write!(f, "autotuning `{family}`: the space of candidates is empty")
            }
            TuneError::NoCandidate { family, candidates } => {
                write!(
                    f,
                    "autotuning `{family}`: none of the {} candidates passed",
                    candidates.len()
                )?;
                for c in candidates {
                    write!(f, "\n  [{}] {}: ", c.index, c.config)?;
                    match &c.outcome {
                        Outcome::Failed(e) => write!(f, "{e}")?,
                        Outcome::WrongOutput => {
                            f.write_str("its output differs from the reference's")?
                        }
                        Outcome::Pruned { .. } => f.write_str("pruned")?,
                        Outcome::Timed(_) => f.write_str("timed")?,
                    }
                }
                Ok(())
            }
        }
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for TuneError<E> {}

/// The short benchmark that screens candidates takes this fraction of the full one's budgets.
const SCREEN_FRACTION: u32 = 5;

impl Tuner {
    /// The default prune ratio: candidates more than 1.5 times slower than the fastest (in the
    /// short benchmark) are not timed further.
    pub const DEFAULT_PRUNE_RATIO: f64 = 1.5;

    /// A tuner of kernel family `family` (a name for what the candidates compute, the same in
    /// every process: records are found by it) on `device`, with the default benchmark
    /// ([`Bench::default`]) and prune ratio, storing records in the device's disk cache
    /// directory ([`Device::disk_cache`]: on CUDA the one the environment names; the simulator
    /// has none unless [`with_cache`](Self::with_cache) gives one).
    pub fn new(device: &Device, family: impl Into<String>) -> Tuner {
        Tuner {
            device: device.clone(),
            family: family.into(),
            bench: Bench::default(),
            prune_ratio: Self::DEFAULT_PRUNE_RATIO,
            cache: device.disk_cache().map(|c| c.tuning()),
        }
    }

    /// The same tuner timing candidates with `bench` (the short benchmark that screens them
    /// takes a fifth of its budgets).
    pub fn with_bench(mut self, bench: Bench) -> Tuner {
        self.bench = bench;
        self
    }

    /// The same tuner pruning candidates more than `ratio` times slower than the fastest in the
    /// short benchmark. A ratio below 1 (or NaN) counts as 1: only the fastest is timed
    /// further; an infinite one prunes nothing.
    pub fn with_prune_ratio(mut self, ratio: f64) -> Tuner {
        self.prune_ratio = if ratio >= 1.0 { ratio } else { 1.0 };
        self
    }

    /// The same tuner keeping its records in `cache`'s directory (in a subdirectory of their
    /// own: see [`DiskCache::tuning`]).
    pub fn with_cache(mut self, cache: DiskCache) -> Tuner {
        self.cache = Some(cache.tuning());
        self
    }

    /// The same tuner keeping no records: every tune measures.
    pub fn without_cache(mut self) -> Tuner {
        self.cache = None;
        self
    }

    /// The device it tunes on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The kernel family.
    pub fn family(&self) -> &str {
        &self.family
    }

    /// The problem-size bucket of `size`: the smallest power of two at least `size` (1 for 0;
    /// `u64::MAX` past the largest power of two). Sizes of one bucket share a record.
    pub fn bucket(size: u64) -> u64 {
        size.checked_next_power_of_two().unwrap_or(u64::MAX)
    }

    /// The file of the record for problems of `size`, when the tuner keeps records.
    pub fn record_path(&self, size: u64) -> Option<PathBuf> {
        let cache = self.cache.as_ref()?;
        Some(cache.entry_path(&self.record_key(size)))
    }

    /// Deletes the record for problems of `size` (the next tune measures again).
    pub fn forget(&self, size: u64) -> io::Result<()> {
        match &self.cache {
            Some(cache) => cache.remove(&self.record_key(size)),
            None => Ok(()),
        }
    }

    /// The device, as records name it: its name and arch, and the driver's version.
    fn device_identity(&self) -> (String, String) {
        match &self.device.inner.imp {
            Imp::Cuda(c) => {
                let name = match self.device.backend() {
                    super::Backend::Cuda { name, .. } => name.as_str(),
                    super::Backend::Sim => "",
                };
                let (major, minor) = c.compute_capability;
                (
                    format!("{name} (compute capability {major}.{minor})"),
                    format!("CUDA driver {}", c.driver_version),
                )
            }
            Imp::Sim(_) => (
                format!("simulator of {}", self.device.arch()),
                "no driver".to_string(),
            ),
        }
    }

    /// The key of the record for problems of `size`: every field that selects it, each ended
    /// by a NUL (the family may hold any text, so its length comes first).
    fn record_key(&self, size: u64) -> Vec<u8> {
        let (device, driver) = self.device_identity();
        let mut key = Vec::new();
        key.extend_from_slice(b"coopgraph tuning record\0");
        for field in [
            env!("CARGO_PKG_VERSION"),
            &self.family.len().to_string(),
            &self.family,
            &Self::bucket(size).to_string(),
            &device,
            &driver,
        ] {
            key.extend_from_slice(field.as_bytes());
            key.push(0);
        }
        key
    }

    /// Picks the fastest of `space` for problems of `size`, or the winner a record names; see
    /// the [type's documentation](Tuner). `build` makes a candidate's kernel from its
    /// configuration; `workload` runs it. Candidates are told apart by their `Debug` text, which
    /// a record stores.
    pub fn tune<C, K, W>(
        &self,
        size: u64,
        space: &[C],
        mut build: impl FnMut(&C) -> Result<K, W::Error>,
        workload: &mut W,
    ) -> Result<Tuned<C, K, W::Error>, TuneError<W::Error>>
    where
        C: Clone + fmt::Debug,
        K: Compile,
        W: Workload<C>,
    {
        let family = &self.family;
        if space.is_empty() {
            return Err(TuneError::EmptySpace {
                family: family.clone(),
            });
        }
        let names: Vec<String> = space.iter().map(|c| format!("{c:?}")).collect();
        let space_hash = space_hash(&names);
        let key = self.record_key(size);
        let bucket = Self::bucket(size);
        let (device, _) = self.device_identity();
        let what = format!("autotune `{family}` (size bucket {bucket}, {device})");

        if let Some(cache) = &self.cache
            && let Some(record) = self.read_record(cache, &key, &what, space_hash, &names)
        {
            let config = &space[record.index];
            let built = build(config).and_then(|kernel| {
                let function = self.device.compile(&kernel)?;
                Ok((kernel, function))
            });
            match built {
                Ok((kernel, function)) => {
                    log::info!(
                        "{what}: the stored winner {} ({:.3} ms)",
                        names[record.index],
                        ms(record.median)
                    );
                    return Ok(Tuned {
                        config: config.clone(),
                        index: record.index,
                        kernel,
                        function,
                        median: record.median,
                        source: TuneSource::Stored,
                        candidates: Vec::new(),
                    });
                }
                Err(e) => log::warn!(
                    "{what}: the stored winner {} no longer builds ({e}); tuning again",
                    names[record.index]
                ),
            }
        }

        log::info!("{what}: {} candidates", space.len());
        let stream = self.device.stream();
        let screen = Bench {
            warmup: self.bench.warmup / SCREEN_FRACTION,
            rep: self.bench.rep / SCREEN_FRACTION,
            ..self.bench
        };
        let mut outcomes: Vec<Option<Outcome<W::Error>>> = space.iter().map(|_| None).collect();
        let mut reference: Option<W::Output> = None;
        // The candidates that passed the check, with their short benchmark.
        let mut passed: Vec<(usize, K, Function, Duration)> = Vec::new();
        for (i, config) in space.iter().enumerate() {
            let step = format!("{what}: [{}/{}] {}", i + 1, space.len(), names[i]);
            let candidate = build(config).and_then(|kernel| {
                let function = self.device.compile(&kernel)?;
                workload.reset()?;
                workload.launch(&function, config)?;
                let output = workload.output()?;
                Ok((kernel, function, output))
            });
            let (kernel, function, output) = match candidate {
                Ok(c) => c,
                Err(e) => {
                    log::info!("{step}: rejected: {e}");
                    outcomes[i] = Some(Outcome::Failed(e));
                    continue;
                }
            };
            match &reference {
                None => reference = Some(output),
                Some(r) if workload.matches(r, &output) => {}
                Some(_) => {
                    log::warn!(
                        "{step}: rejected: its output differs from the first working \
                         candidate's"
                    );
                    outcomes[i] = Some(Outcome::WrongOutput);
                    continue;
                }
            }
            match screen.run(&stream, || workload.launch(&function, config)) {
                Ok(t) => {
                    log::info!("{step}: {:.3} ms (short benchmark)", ms(t.median()));
                    passed.push((i, kernel, function, t.median()));
                }
                Err(e) => {
                    log::info!("{step}: rejected: {e}");
                    outcomes[i] = Some(Outcome::Failed(e));
                }
            }
        }

        let best_screen = passed.iter().map(|p| p.3).min().unwrap_or_default();
        let limit = best_screen.as_secs_f64() * self.prune_ratio;
        let mut winner: Option<(usize, K, Function, Duration)> = None;
        for (i, kernel, function, screened) in passed {
            let step = format!("{what}: [{}/{}] {}", i + 1, space.len(), names[i]);
            if screened.as_secs_f64() > limit {
                log::info!(
                    "{step}: pruned ({:.3} ms against the fastest's {:.3} ms)",
                    ms(screened),
                    ms(best_screen)
                );
                outcomes[i] = Some(Outcome::Pruned {
                    screened,
                    best: best_screen,
                });
                continue;
            }
            let config = &space[i];
            match self
                .bench
                .run(&stream, || workload.launch(&function, config))
            {
                Ok(t) => {
                    let median = t.median();
                    log::info!(
                        "{step}: {:.3} ms median, {:.3}..{:.3} ms (20%..80%) over {} runs",
                        ms(median),
                        ms(t.quantile(0.2)),
                        ms(t.quantile(0.8)),
                        t.reps()
                    );
                    outcomes[i] = Some(Outcome::Timed(t));
                    if winner.as_ref().is_none_or(|w| median < w.3) {
                        winner = Some((i, kernel, function, median));
                    }
                }
                Err(e) => {
                    log::info!("{step}: rejected: {e}");
                    outcomes[i] = Some(Outcome::Failed(e));
                }
            }
        }

        let candidates: Vec<Candidate<W::Error>> = outcomes
            .into_iter()
            .enumerate()
            .filter_map(|(index, outcome)| {
                Some(Candidate {
                    index,
                    config: names[index].clone(),
                    outcome: outcome?,
                })
            })
            .collect();
        let Some((index, kernel, function, median)) = winner else {
            log::warn!("{what}: no candidate passed");
            return Err(TuneError::NoCandidate {
                family: family.clone(),
                candidates,
            });
        };
        log::info!("{what}: {} wins ({:.3} ms)", names[index], ms(median));
        if let Some(cache) = &self.cache {
            let record = Record {
                space: space_hash,
                index,
                median,
                config: names[index].clone(),
            };
            match cache.store(&key, &record.encode()) {
                Ok(()) => log::debug!(
                    "{what}: winner stored in {}",
                    cache.entry_path(&key).display()
                ),
                Err(e) => log::warn!(
                    "{what}: cannot store the winner in {}: {e}",
                    cache.dir().display()
                ),
            }
        }
        Ok(Tuned {
            config: space[index].clone(),
            index,
            kernel,
            function,
            median,
            source: TuneSource::Measured,
            candidates,
        })
    }

    /// The record stored under `key`, when there is a valid one for this space. A record that
    /// is not one (its checks hold but its text does not parse) is deleted; one made for
    /// another space of candidates is left for the tuning to replace.
    fn read_record(
        &self,
        cache: &DiskCache,
        key: &[u8],
        what: &str,
        space: u128,
        names: &[String],
    ) -> Option<Record> {
        // A rejected entry is logged and deleted by the cache itself.
        let Lookup::Hit(payload) = cache.load(key) else {
            return None;
        };
        let Some(record) = Record::decode(&payload) else {
            log::warn!(
                "disk cache: deleting {}: it is not a tuning record; the kernel is tuned again",
                cache.entry_path(key).display()
            );
            if let Err(e) = cache.remove(key) {
                log::warn!("disk cache: cannot delete it: {e}");
            }
            return None;
        };
        if record.space != space || names.get(record.index) != Some(&record.config) {
            log::info!(
                "{what}: the stored winner ({}) was chosen among other candidates; tuning again",
                record.config
            );
            return None;
        }
        Some(record)
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A hash of the candidates' texts, in order.
fn space_hash(names: &[String]) -> u128 {
    let mut bytes = Vec::new();
    for n in names {
        bytes.extend_from_slice(&(n.len() as u64).to_le_bytes());
        bytes.extend_from_slice(n.as_bytes());
    }
    u128::from_le_bytes(checksum(&bytes))
}

/// A stored winner: the text of a tuning record.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Record {
    /// The hash of the space it was chosen in.
    space: u128,
    /// The winner's index in that space.
    index: usize,
    /// Its median time.
    median: Duration,
    /// Its configuration's `Debug` text.
    config: String,
}

impl Record {
    /// `space <hex>\nwinner <index>\nmedian_ns <n>\nconfig <text>` (the text last, so it may
    /// hold any character).
    fn encode(&self) -> Vec<u8> {
        format!(
            "space {:032x}\nwinner {}\nmedian_ns {}\nconfig {}",
            self.space,
            self.index,
            self.median.as_nanos(),
            self.config
        )
        .into_bytes()
    }

    fn decode(payload: &[u8]) -> Option<Record> {
        let text = std::str::from_utf8(payload).ok()?;
        let mut parts = text.splitn(4, '\n');
        let mut field = |name: &str| parts.next()?.strip_prefix(name)?.strip_prefix(' ');
        let space = field("space")?;
        let index = field("winner")?;
        let median = field("median_ns")?;
        let config = field("config")?;
        if space.len() != 32 {
            return None;
        }
        Some(Record {
            space: u128::from_str_radix(space, 16).ok()?,
            index: index.parse().ok()?,
            median: Duration::from_nanos(median.parse().ok()?),
            config: config.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_junk_is_no_record() {
        let r = Record {
            space: 0x0123_4567_89ab_cdef_0011_2233_4455_6677,
            index: 3,
            median: Duration::from_nanos(12_345),
            config: "Config { block: 128,\nname: \"a b\" }".to_string(),
        };
        assert_eq!(Record::decode(&r.encode()), Some(r.clone()));
        for junk in [
            &b""[..],
            b"space 12\nwinner 0\nmedian_ns 1\nconfig x",
            b"winner 0\nspace 00000000000000000000000000000000\nmedian_ns 1\nconfig x",
            b"space 00000000000000000000000000000000\nwinner -1\nmedian_ns 1\nconfig x",
            b"space 00000000000000000000000000000000\nwinner 0\nmedian_ns 1",
            b"\xff\xfe",
        ] {
            assert_eq!(Record::decode(junk), None, "{junk:?}");
        }
        // Any truncation of a record is no record, or (cut inside the config text) another
        // config, which the tuner compares with the candidate's.
        let bytes = r.encode();
        for len in 0..bytes.len() {
            if let Some(d) = Record::decode(&bytes[..len]) {
                assert_ne!(d.config, r.config);
            }
        }
    }

    #[test]
    fn buckets_are_powers_of_two() {
        assert_eq!(Tuner::bucket(0), 1);
        assert_eq!(Tuner::bucket(1), 1);
        assert_eq!(Tuner::bucket(1000), 1024);
        assert_eq!(Tuner::bucket(1024), 1024);
        assert_eq!(Tuner::bucket(1025), 2048);
        assert_eq!(Tuner::bucket(u64::MAX), u64::MAX);
    }

    #[test]
    fn records_are_keyed_by_family_bucket_and_device() {
        let dev = Device::sim();
        let a = Tuner::new(&dev, "a").with_cache(DiskCache::new("/nonexistent"));
        assert_eq!(a.record_key(1000), a.record_key(1024));
        assert_ne!(a.record_key(1024), a.record_key(1025));
        let b = Tuner::new(&dev, "b").with_cache(DiskCache::new("/nonexistent"));
        assert_ne!(a.record_key(8), b.record_key(8));
        let other_arch = Device::sim_for(crate::ptx::Arch::Sm80, Default::default());
        let c = Tuner::new(&other_arch, "a");
        assert_ne!(a.record_key(8), c.record_key(8));
        // Family texts cannot run into the fields after them.
        let d = Tuner::new(&dev, "a\u{0}8");
        assert_ne!(d.record_key(8), a.record_key(8));
        assert!(
            c.record_path(8).is_none(),
            "the simulator has no cache of its own"
        );
        assert!(a.record_path(8).is_some());
    }
}

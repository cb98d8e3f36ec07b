//! Benchmark timing in the manner of Triton's `do_bench`: see [`Bench`] for what is measured on
//! each backend.

use std::time::Duration;

use cudarc::driver::sys;

use super::device::Device;
use super::error::RuntimeError;
use super::event::Event;
use super::stream::Stream;

/// What runs before each measured run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Flush {
    /// Write a buffer larger than the L2 cache, so every run reads its data from device memory.
    #[default]
    L2,
    /// Nothing: runs find in L2 what the run before left there (hot-cache times).
    Nothing,
}

/// How a benchmark measures, in the manner of Triton's `do_bench`: a warm-up and a measuring
/// phase each given as a time budget, the L2 cache flushed before every measured run, each run
/// timed on its own, and the distribution summarized in a [`Timing`] (median, quantiles).
/// [`do_bench`] and [`Bench::run`] use it.
///
/// On CUDA every run is bracketed by two events on the stream, so its time is the GPU's time
/// for the work the run queued, whatever the host did meanwhile. Before each run the stream
/// writes a buffer of twice the L2 cache's size (a device-side memset, outside the timed
/// interval), so a run finds none of its data in L2 from the run before: the times are those of
/// data coming from device memory, as in a real pipeline where the kernel's input was written
/// long before.
///
/// On the simulator the same code runs: events there are the host clock, and the simulator runs
/// each launch to completion when it is queued, so a time is the wall time of simulating the
/// run on the CPU ([`Clock::Host`]). It says nothing of GPU speed; it lets code that benchmarks
/// or autotunes run (and be tested) where there is no GPU. There is no cache to flush.
///
/// The budgets are times, not counts: the number of runs of each phase is the budget divided
/// by an estimate of one run's time (at least one run each, at most
/// [`max_reps`](Self::max_reps) measured runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Bench {
    /// Time spent running the work before measuring (clocks rise, caches and TLBs fill).
    pub warmup: Duration,
    /// Time spent measuring.
    pub rep: Duration,
    /// What runs before each measured run.
    pub flush: Flush,
    /// The most measured runs, whatever the budget allows.
    pub max_reps: u32,
}

impl Default for Bench {
    /// Triton's defaults: 25 ms of warm-up, 100 ms of measurement, L2 flushed; at most 10,000
    /// measured runs.
    fn default() -> Bench {
        Bench::ms(25, 100)
    }
}

/// Runs used to estimate one run's time (fewer when they exceed the measuring budget).
const ESTIMATE_RUNS: u32 = 5;

impl Bench {
    /// `warmup_ms` milliseconds of warm-up and `rep_ms` of measurement, the L2 cache flushed
    /// before each measured run, at most 10,000 measured runs.
    pub fn ms(warmup_ms: u64, rep_ms: u64) -> Bench {
        Bench {
            warmup: Duration::from_millis(warmup_ms),
            rep: Duration::from_millis(rep_ms),
            flush: Flush::L2,
            max_reps: 10_000,
        }
    }

    /// The same benchmark with another flush.
    pub fn with_flush(mut self, flush: Flush) -> Bench {
        self.flush = flush;
        self
    }

    /// The same benchmark with at most `max_reps` measured runs (at least one is always made).
    pub fn with_max_reps(mut self, max_reps: u32) -> Bench {
        self.max_reps = max_reps;
        self
    }

    /// Times `work`, which queues one run of what is measured on `stream` (launches through
    /// `LaunchConfig::on_stream`, or a graph's replay), as the [type's documentation](Bench)
    /// describes.
    ///
    /// The phases: one run unmeasured (it loads what loads lazily); up to five measured runs
    /// that estimate one run's time; warm-up runs to fill the warm-up budget (the estimate's
    /// runs count towards it); then the measured runs, each after the flush and between two
    /// events. An error from `work` or from the device ends the benchmark and is returned.
    pub fn run<E: From<RuntimeError>>(
        &self,
        stream: &Stream,
        mut work: impl FnMut() -> Result<(), E>,
    ) -> Result<Timing, E> {
        let mut flush = Flusher::new(stream, self.flush)?;
        work()?;
        stream.synchronize()?;

        let mut estimate = Duration::ZERO;
        let mut estimate_runs = 0u32;
        while estimate_runs < ESTIMATE_RUNS && (estimate_runs == 0 || estimate < self.rep) {
            flush.flush()?;
            estimate += timed(stream, &mut work)?;
            estimate_runs += 1;
        }
        // A run too short for the clock to see counts as a microsecond.
        let one = (estimate / estimate_runs).max(Duration::from_micros(1));
        let runs = |budget: Duration| (budget.as_nanos() / one.as_nanos()).max(1);
        let warmup = u32::try_from(runs(self.warmup))
            .unwrap_or(u32::MAX)
            .saturating_sub(estimate_runs);
        let reps = u32::try_from(runs(self.rep))
            .unwrap_or(u32::MAX)
            .clamp(1, self.max_reps.max(1));

        for _ in 0..warmup {
            work()?;
        }
        let mut events = Vec::with_capacity(reps as usize);
        for _ in 0..reps {
            flush.flush()?;
            let start = stream.record_event()?;
            work()?;
            let end = stream.record_event()?;
            events.push((start, end));
        }
        stream.synchronize()?;
        let mut samples = Vec::with_capacity(events.len());
        for (start, end) in &events {
            samples.push(end.elapsed_since(start)?);
        }
        samples.sort();
        Ok(Timing {
            samples,
            warmup_runs: warmup + estimate_runs + 1,
            clock: clock_of(stream),
        })
    }
}

/// Times `work` on `device`'s own stream with `bench`'s budgets: Triton's `do_bench`. `work`
/// queues one run (launches without a stream go to the device's stream). See [`Bench::run`]
/// for the phases and [`Bench`] for what is measured on each backend.
///
/// ```
/// use coopgraph::runtime::{Bench, Clock, Device, do_bench};
/// use coopgraph::{KernelBuilder, Load, Store};
///
/// # fn main() -> Result<(), coopgraph::Error> {
/// let mut k = KernelBuilder::new("bench_copy").block(128).items_per_thread(4);
/// let x = k.input::<u32>("x");
/// let y = k.output::<u32>("y");
/// let b = k.this_block();
/// let t = k.load_from(b, &x, Load::transpose());
/// k.store_to(b, &y, &t, Store::transpose());
/// let f = Device::sim().compile(&k.build()?)?;
///
/// let device = f.device().clone();
/// let n = 4096;
/// let x = device.upload(&vec![7u32; n])?;
/// let mut y = device.alloc_zeroed::<u32>(n)?;
/// // 1 ms of warm-up and 5 ms of measurement.
/// let timing = do_bench(&device, Bench::ms(1, 5), || f.launch_over(n, (&x, &mut y)))?;
/// assert!(timing.min() <= timing.median() && timing.median() <= timing.max());
/// assert!(timing.quantile(0.2) <= timing.quantile(0.8));
/// assert_eq!(timing.clock(), Clock::Host); // the simulator's time is the host's wall time
/// let _gb_per_s = timing.gb_per_s(2 * 4 * n as u64);
/// assert_eq!(y.to_vec()?, vec![7u32; n]);
/// # Ok(())
/// # }
/// ```
pub fn do_bench<E: From<RuntimeError>>(
    device: &Device,
    bench: Bench,
    work: impl FnMut() -> Result<(), E>,
) -> Result<Timing, E> {
    bench.run(&device.stream(), work)
}

/// Which clock a [`Timing`]'s samples come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Clock {
    /// CUDA events on the stream: the GPU's time for each run.
    Events,
    /// The host's clock around each run: on the simulator, the wall time of simulating it.
    Host,
}

/// The measured times of a benchmark's runs, and their summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timing {
    /// Ascending.
    samples: Vec<Duration>,
    warmup_runs: u32,
    clock: Clock,
}

impl Timing {
    /// A timing of these samples (in any order; at least one): for summaries of times measured
    /// elsewhere. `None` when `samples` is empty.
    pub fn from_samples(mut samples: Vec<Duration>, clock: Clock) -> Option<Timing> {
        if samples.is_empty() {
            return None;
        }
        samples.sort();
        Some(Timing {
            samples,
            warmup_runs: 0,
            clock,
        })
    }

    /// The measured runs' times, ascending (at least one).
    pub fn samples(&self) -> &[Duration] {
        &self.samples
    }

    /// How many runs were measured.
    pub fn reps(&self) -> usize {
        self.samples.len()
    }

    /// How many runs went before the measured ones (the first, the estimate's and the
    /// warm-up's).
    pub fn warmup_runs(&self) -> u32 {
        self.warmup_runs
    }

    /// The clock the samples come from.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// The median time.
    pub fn median(&self) -> Duration {
        self.quantile(0.5)
    }

    /// The `q` quantile (`0.0` the fastest run, `1.0` the slowest), interpolated linearly
    /// between the two nearest samples as `numpy.quantile` and `torch.quantile` do. `q` is
    /// clamped to `0.0..=1.0`; a NaN `q` gives the median.
    pub fn quantile(&self, q: f64) -> Duration {
        let q = if q.is_nan() { 0.5 } else { q.clamp(0.0, 1.0) };
        let last = self.samples.len().saturating_sub(1);
        let pos = q * last as f64;
        // `pos` lies in 0..=last, so both indices are in range.
        let lo = (pos.floor() as usize).min(last);
        let hi = (pos.ceil() as usize).min(last);
        let (a, b) = (self.samples[lo], self.samples[hi]);
        let frac = pos - lo as f64;
        a + Duration::from_secs_f64((b - a).as_secs_f64() * frac)
    }

    /// The fastest run.
    pub fn min(&self) -> Duration {
        self.samples[0]
    }

    /// The slowest run.
    pub fn max(&self) -> Duration {
        self.samples[self.samples.len() - 1]
    }

    /// The mean time.
    pub fn mean(&self) -> Duration {
        let total: u128 = self.samples.iter().map(Duration::as_nanos).sum();
        let mean = total / self.samples.len() as u128;
        Duration::from_nanos(u64::try_from(mean).unwrap_or(u64::MAX))
    }

    /// `bytes` moved per median run, in GB/s (10^9 bytes a second); infinite for a median of
    /// zero.
    pub fn gb_per_s(&self, bytes: u64) -> f64 {
        bytes as f64 / self.median().as_secs_f64() / 1e9
    }
}

/// One run of `work` between two events on `stream`, waited for.
fn timed<E: From<RuntimeError>>(
    stream: &Stream,
    work: &mut impl FnMut() -> Result<(), E>,
) -> Result<Duration, E> {
    let start = stream.record_event()?;
    work()?;
    let end: Event = stream.record_event()?;
    Ok(end.elapsed_since(&start)?)
}

fn clock_of(stream: &Stream) -> Clock {
    match stream.cuda_stream() {
        Some(_) => Clock::Events,
        None => Clock::Host,
    }
}

/// The buffer a flush writes (CUDA only) and the stream it writes it on.
struct Flusher<'s> {
    stream: &'s Stream,
    buffer: Option<cudarc::driver::CudaSlice<u8>>,
}

/// The flush buffer's size where the driver reports no L2 size: Triton's 256 MiB.
const FALLBACK_FLUSH_BYTES: usize = 256 << 20;

impl<'s> Flusher<'s> {
    fn new(stream: &'s Stream, flush: Flush) -> Result<Flusher<'s>, RuntimeError> {
        let buffer = match (flush, stream.cuda_stream()) {
            (Flush::L2, Some(s)) => {
                let l2 = s
                    .context()
                    .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
                    .map_err(RuntimeError::driver("cuDeviceGetAttribute"))?;
                let bytes = match usize::try_from(l2) {
                    Ok(l2) if l2 > 0 => l2.saturating_mul(2),
                    _ => FALLBACK_FLUSH_BYTES,
                };
                let buffer = s
                    .alloc_zeros::<u8>(bytes)
                    .map_err(RuntimeError::driver("cuMemAllocAsync"))?;
                log::trace!("benchmark: flushing L2 with a buffer of {bytes} bytes");
                Some(buffer)
            }
            _ => None,
        };
        Ok(Flusher { stream, buffer })
    }

    /// Queues the flush on the stream.
    fn flush(&mut self) -> Result<(), RuntimeError> {
        if let (Some(buffer), Some(s)) = (&mut self.buffer, self.stream.cuda_stream()) {
            s.memset_zeros(buffer)
                .map_err(RuntimeError::driver("cuMemsetD8Async"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: &[u64]) -> Vec<Duration> {
        v.iter().map(|&m| Duration::from_millis(m)).collect()
    }

    #[test]
    fn quantiles_interpolate_between_sorted_samples() {
        let t = Timing::from_samples(ms(&[40, 10, 30, 20]), Clock::Host).expect("samples");
        assert_eq!(t.samples(), &ms(&[10, 20, 30, 40])[..]);
        assert_eq!(t.min(), Duration::from_millis(10));
        assert_eq!(t.max(), Duration::from_millis(40));
        assert_eq!(t.median(), Duration::from_millis(25));
        assert_eq!(t.mean(), Duration::from_millis(25));
        assert_eq!(t.quantile(0.0), Duration::from_millis(10));
        assert_eq!(t.quantile(1.0), Duration::from_millis(40));
        // numpy.quantile([10, 20, 30, 40], 0.2) == 16.
        let q = t.quantile(0.2).as_secs_f64();
        assert!((q - 0.016).abs() < 1e-9, "{q}");
        assert_eq!(t.quantile(-3.0), t.min());
        assert_eq!(t.quantile(7.0), t.max());
        assert_eq!(t.quantile(f64::NAN), t.median());
        let one = Timing::from_samples(ms(&[5]), Clock::Events).expect("samples");
        assert_eq!(one.median(), Duration::from_millis(5));
        assert_eq!(one.quantile(0.9), Duration::from_millis(5));
        assert!(Timing::from_samples(Vec::new(), Clock::Host).is_none());
        assert!((one.gb_per_s(10_000_000) - 2.0).abs() < 1e-9);
    }
}

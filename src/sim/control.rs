//! Bounding and watching a whole launch: a budget of thread-instructions and wall time, and a
//! progress callback that can cancel.
//!
//! Every worker reports to one [`Monitor`] at the end of each block and, inside a block, each
//! time it has run [`POLL_STEPS`] thread-instructions since it last reported; so a launch
//! stops within about that many instructions per worker of passing its budget, or of a cancel,
//! even inside one long block. The check costs one comparison per scheduled thread turn, and
//! an atomic add and a clock read per report.

use std::fmt;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Thread-instructions a worker runs between reports to the monitor.
pub(crate) const POLL_STEPS: u64 = 1 << 16;

/// The least time between two calls of the progress callback.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(10);

/// Limits on one whole launch (all blocks together); `None` is no limit. A launch that passes
/// one stops with [`super::SimError::Stopped`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Budget {
    /// Thread-instructions, counted as [`super::LaunchReport::thread_instructions`] counts
    /// them.
    pub thread_instructions: Option<u64>,
    /// Wall-clock time from the start of the launch.
    pub wall_time: Option<Duration>,
}

/// How far a launch has got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Blocks run to completion.
    pub blocks_done: u64,
    /// Blocks in the grid.
    pub blocks_total: u64,
    /// Thread-instructions run so far (blocks still running included, up to their last
    /// report).
    pub thread_instructions: u64,
    /// Wall-clock time since the launch started.
    pub elapsed: Duration,
}

/// What the progress callback wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// Go on.
    Continue,
    /// Stop the launch: it returns [`super::SimError::Stopped`] with [`StopReason::Cancelled`].
    Cancel,
}

/// The signature of a progress callback.
type ProgressFn = dyn Fn(&Progress) -> Control + Send + Sync;

/// A progress callback: called during a launch at most every [`PROGRESS_INTERVAL`] (the first
/// time at the first report, so early), never from two threads at once, and once more when
/// the launch has run every block (that answer is ignored). It runs on a worker thread while
/// the others go on.
///
/// Two hooks are equal when they are the same callback (clones of one hook).
///
/// ```
/// use coopgraph::sim::{Control, ProgressHook, SimOptions};
/// let hook = ProgressHook::new(|p| {
///     if p.blocks_done * 2 > p.blocks_total {
///         Control::Cancel
///     } else {
///         Control::Continue
///     }
/// });
/// let options = SimOptions {
///     progress: Some(hook.clone()),
///     ..SimOptions::default()
/// };
/// assert_eq!(options.progress, Some(hook));
/// ```
#[derive(Clone)]
pub struct ProgressHook(Arc<ProgressFn>);

impl ProgressHook {
    /// Wraps a callback.
    pub fn new(f: impl Fn(&Progress) -> Control + Send + Sync + 'static) -> Self {
        ProgressHook(Arc::new(f))
    }

    /// Calls it.
    pub fn call(&self, progress: &Progress) -> Control {
        (self.0)(progress)
    }
}

impl PartialEq for ProgressHook {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for ProgressHook {}

impl fmt::Debug for ProgressHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ProgressHook({:p})", Arc::as_ptr(&self.0).cast::<()>())
    }
}

/// Why a launch stopped before running every block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// It ran past [`Budget::thread_instructions`].
    Instructions {
        /// The budget.
        limit: u64,
    },
    /// It ran past [`Budget::wall_time`].
    WallTime {
        /// The budget.
        limit: Duration,
    },
    /// The progress callback answered [`Control::Cancel`].
    Cancelled,
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopReason::Instructions { limit } => {
                write!(f, "past its budget of {limit} thread-instructions")
            }
            StopReason::WallTime { limit } => write!(f, "past its budget of {limit:?}"),
            StopReason::Cancelled => f.write_str("cancelled by its progress callback"),
        }
    }
}

/// A launch that stopped early, and how far it got. Global memory holds what the blocks that
/// ran (some of them partly) wrote, as after a GPU kernel that was killed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopped {
    /// The entry.
    pub entry: String,
    /// Why.
    pub reason: StopReason,
    /// How far it got.
    pub progress: Progress,
}

impl fmt::Display for Stopped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.progress;
        write!(
            f,
            "launch of `{}` stopped, {}: {} of {} blocks done, {} thread-instructions in {:?}",
            self.entry,
            self.reason,
            p.blocks_done,
            p.blocks_total,
            p.thread_instructions,
            p.elapsed
        )
    }
}

const GO: u8 = 0;
const INSTRUCTIONS: u8 = 1;
const WALL_TIME: u8 = 2;
const CANCELLED: u8 = 3;

/// The launch-wide counters, budget and callback that every worker reports to.
pub(crate) struct Monitor<'a> {
    entry: &'a str,
    budget: Budget,
    hook: Option<&'a ProgressHook>,
    start: Instant,
    blocks_total: u64,
    steps: AtomicU64,
    blocks: AtomicU64,
    stop: AtomicU8,
    /// When the callback was last called (`None`: never); held while it runs.
    last_call: Mutex<Option<Instant>>,
}

impl<'a> Monitor<'a> {
    pub(crate) fn new(
        entry: &'a str,
        budget: Budget,
        hook: Option<&'a ProgressHook>,
        blocks_total: u64,
    ) -> Self {
        Monitor {
            entry,
            budget,
            hook,
            start: Instant::now(),
            blocks_total,
            steps: AtomicU64::new(0),
            blocks: AtomicU64::new(0),
            stop: AtomicU8::new(GO),
            last_call: Mutex::new(None),
        }
    }

    /// Whether the launch has been stopped (by any worker).
    #[inline]
    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(Relaxed) != GO
    }

    /// Adds a worker's `steps` and finished `blocks` since its last report, then checks the
    /// budget and calls the callback when it is due. Whether the launch goes on.
    pub(crate) fn report(&self, steps: u64, blocks: u64) -> bool {
        let total = self.steps.fetch_add(steps, Relaxed) + steps;
        self.blocks.fetch_add(blocks, Relaxed);
        if self.stopped() {
            return false;
        }
        if self.budget.thread_instructions.is_some_and(|l| total > l) {
            return self.halt(INSTRUCTIONS);
        }
        if self.budget.wall_time.is_none() && self.hook.is_none() {
            return true;
        }
        let now = Instant::now();
        if self
            .budget
            .wall_time
            .is_some_and(|l| now.duration_since(self.start) > l)
        {
            return self.halt(WALL_TIME);
        }
        let Some(hook) = self.hook else {
            return true;
        };
        // Another worker calling it now makes this report's call unnecessary.
        let Ok(mut last) = self.last_call.try_lock() else {
            return true;
        };
        if self.stopped() || last.is_some_and(|t| now.duration_since(t) < PROGRESS_INTERVAL) {
            return !self.stopped();
        }
        *last = Some(now);
        // Read under the lock, so successive calls see counts that only grow.
        let p = self.progress();
        match hook.call(&p) {
            Control::Continue => true,
            Control::Cancel => self.halt(CANCELLED),
        }
    }

    /// Adds a worker's last counts, checking nothing (its run is over).
    pub(crate) fn add(&self, steps: u64, blocks: u64) {
        self.steps.fetch_add(steps, Relaxed);
        self.blocks.fetch_add(blocks, Relaxed);
    }

    /// Stops the launch (the first reason recorded stands); returns false.
    fn halt(&self, why: u8) -> bool {
        let _ = self.stop.compare_exchange(GO, why, Relaxed, Relaxed);
        false
    }

    /// The final call of the callback, once every block ran.
    pub(crate) fn finish(&self) {
        if let Some(hook) = self.hook {
            let _ = hook.call(&self.progress());
        }
    }

    /// The counters now.
    pub(crate) fn progress(&self) -> Progress {
        Progress {
            blocks_done: self.blocks.load(Relaxed),
            blocks_total: self.blocks_total,
            thread_instructions: self.steps.load(Relaxed),
            elapsed: self.start.elapsed(),
        }
    }

    /// The error of a stopped launch, if it was stopped.
    pub(crate) fn stop_error(&self) -> Option<super::SimError> {
        let reason = match self.stop.load(Relaxed) {
            INSTRUCTIONS => StopReason::Instructions {
                limit: self.budget.thread_instructions.unwrap_or(0),
            },
            WALL_TIME => StopReason::WallTime {
                limit: self.budget.wall_time.unwrap_or_default(),
            },
            CANCELLED => StopReason::Cancelled,
            _ => return None,
        };
        Some(super::SimError::Stopped(Box::new(Stopped {
            entry: self.entry.to_string(),
            reason,
            progress: self.progress(),
        })))
    }
}

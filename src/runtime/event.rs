//! Events: points in a stream's work, to order other streams after them ([`Stream::wait`]), to
//! wait for on the host, and to time the work between two of them.
//!
//! On CUDA an [`Event`] is a cudarc timing event recorded on a stream, so the time between two
//! events is the GPU's time for the work queued between them. On the simulator, which runs each
//! launch to completion when it is enqueued, it is the host clock at the recording, and an event
//! is complete as soon as it is recorded.

use std::time::{Duration, Instant};

use cudarc::driver::{CudaEvent, sys};

use super::RuntimeError;
use super::device::{Device, Imp};
use super::error::Foreign;
use super::stream::Stream;

/// A point in a stream's work: [`Stream::record_event`] or [`Device::record_event`].
#[derive(Debug)]
pub struct Event {
    repr: EventRepr,
}

#[derive(Debug)]
enum EventRepr {
    Cuda(CudaEvent),
    Sim { at: Instant, sim: u64 },
}

impl Device {
    /// Records an event at the current end of the device's stream.
    pub fn record_event(&self) -> Result<Event, RuntimeError> {
        let repr = match &self.inner.imp {
            Imp::Cuda(c) => EventRepr::Cuda(
                c.stream
                    .record_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                    .map_err(RuntimeError::driver("cuEventRecord"))?,
            ),
            Imp::Sim(s) => EventRepr::Sim {
                at: Instant::now(),
                sim: s.id,
            },
        };
        Ok(Event { repr })
    }

    /// Runs `work` (which queues launches on this device) between two events and returns its
    /// result with the device time between them. Waits for the work to finish.
    pub fn time<R>(&self, work: impl FnOnce() -> R) -> Result<(R, Duration), RuntimeError> {
        let start = self.record_event()?;
        let result = work();
        let end = self.record_event()?;
        let elapsed = end.elapsed_since(&start)?;
        Ok((result, elapsed))
    }
}

impl Stream {
    /// Records an event at the current end of this stream's work.
    pub fn record_event(&self) -> Result<Event, RuntimeError> {
        if self.is_capturing() {
            return Err(RuntimeError::Capturing {
                what: "an event record",
            });
        }
        let repr = match (&self.inner.cuda, &self.device().inner.imp) {
            (Some(s), _) => EventRepr::Cuda(
                s.record_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                    .map_err(RuntimeError::driver("cuEventRecord"))?,
            ),
            (None, Imp::Sim(s)) => EventRepr::Sim {
                at: Instant::now(),
                sim: s.id,
            },
            (None, Imp::Cuda(_)) => {
                return Err(RuntimeError::WrongDevice {
                    what: Foreign::Stream,
                });
            }
        };
        Ok(Event { repr })
    }

    /// Makes the work queued on this stream from now on wait until `event` has completed
    /// (the work before it on its stream). The event must come from this stream's device;
    /// on the simulator, where every event is complete once recorded, this returns at once.
    pub fn wait(&self, event: &Event) -> Result<(), RuntimeError> {
        if self.is_capturing() {
            return Err(RuntimeError::Capturing {
                what: "an event wait",
            });
        }
        match (&self.inner.cuda, &event.repr, &self.device().inner.imp) {
            (Some(s), EventRepr::Cuda(e), _) if **e.context() == **s.context() => {
                s.wait(e).map_err(RuntimeError::driver("cuStreamWaitEvent"))
            }
            (None, EventRepr::Sim { sim, .. }, Imp::Sim(s)) if *sim == s.id => Ok(()),
            _ => Err(RuntimeError::WrongDevice {
                what: Foreign::Event,
            }),
        }
    }
}

impl Event {
    /// Whether the work before the event has finished, without waiting.
    pub fn is_complete(&self) -> Result<bool, RuntimeError> {
        match &self.repr {
            EventRepr::Cuda(e) => e
                .try_is_complete()
                .map_err(RuntimeError::driver("cuEventQuery")),
            EventRepr::Sim { .. } => Ok(true),
        }
    }

    /// Waits until the work before this event has finished.
    pub fn synchronize(&self) -> Result<(), RuntimeError> {
        match &self.repr {
            EventRepr::Cuda(e) => e
                .synchronize()
                .map_err(RuntimeError::driver("cuEventSynchronize")),
            EventRepr::Sim { .. } => Ok(()),
        }
    }

    /// The device time from `start` to this event; waits for both to complete. Both must come
    /// from the same device.
    pub fn elapsed_since(&self, start: &Event) -> Result<Duration, RuntimeError> {
        match (&start.repr, &self.repr) {
            (EventRepr::Cuda(a), EventRepr::Cuda(b)) => {
                if **a.context() != **b.context() {
                    return Err(RuntimeError::WrongDevice {
                        what: Foreign::Event,
                    });
                }
                let ms = a
                    .elapsed_ms(b)
                    .map_err(RuntimeError::driver("cuEventElapsedTime"))?;
                // `max` maps NaN to 0; an infinite time (never seen) saturates.
                Ok(Duration::try_from_secs_f64(f64::from(ms.max(0.0)) / 1e3)
                    .unwrap_or(Duration::MAX))
            }
            (EventRepr::Sim { at: a, sim: x }, EventRepr::Sim { at: b, sim: y }) if x == y => {
                Ok(b.saturating_duration_since(*a))
            }
            _ => Err(RuntimeError::WrongDevice {
                what: Foreign::Event,
            }),
        }
    }
}

//! Graphs: a sequence of kernel launches captured once and replayed, on CUDA as a CUDA graph
//! (stream capture), on the simulator as the recorded launches.
//!
//! [`Stream::capture`] runs a closure that launches kernels on the stream it is given; those
//! launches are recorded, not run, and come back as a [`Graph`], which [`Graph::launch`]
//! replays on any stream of the device, as often as asked. A replay costs one driver call
//! however many kernels the graph holds.
//!
//! A graph launches later with the addresses it captured, so it must know that each buffer is
//! still there. It holds a liveness cell of every buffer it captured ([`Keep`], reached through
//! the buffer's [`GraphUse`]): dropping the buffer (or handing its cudarc slice out) marks the
//! cell gone and first waits for the last replay that used it, so memory is never freed under
//! a running replay, and a graph whose buffer is gone refuses to launch
//! ([`RuntimeError::GraphBufferGone`]) instead of touching memory that is not the buffer's.
//! Memory a graph cannot follow (a cudarc slice or view passed directly) is refused at capture.
//!
//! Ordering: a replay runs after everything that used the graph's buffers before the capture
//! (cudarc's tracking of each buffer is settled at capture, on a stream outside it), and after
//! what was queued before it on the stream it is launched on. Work on other streams after the
//! capture is not ordered with replays by buffer tracking: order it with that stream (or with an
//! [`Event`](super::Event) and [`Stream::wait`]) — for instance read a graph's results with
//! [`Stream::download`] on the stream the graph was launched on.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use cudarc::driver::{CudaEvent, CudaStream, sys};

use super::RuntimeError;
use super::args::CheckedArgs;
use super::device::{Device, Imp};
use super::driver::GraphExec;
use super::error::Foreign;
use super::image::KernelImage;
use super::launch::Function;
use super::stream::Stream;

/// What graphs hold of one buffer: its liveness cell, made when a graph first captures the
/// buffer. Every [`Buffer`](super::Buffer) has one; dropping it retires the cell.
#[derive(Default)]
pub(super) struct GraphUse {
    keep: OnceLock<Arc<Keep>>,
}

impl GraphUse {
    /// The buffer's liveness cell, for a graph that captures it.
    pub(super) fn keep(&self) -> Arc<Keep> {
        self.keep.get_or_init(Arc::default).clone()
    }

    /// Tells every graph that captured the buffer that it is gone, after the last replay that
    /// used it has finished. Graphs captured later get a new cell.
    pub(super) fn retire(&mut self) {
        if let Some(keep) = self.keep.take() {
            keep.retire();
        }
    }
}

impl Drop for GraphUse {
    fn drop(&mut self) {
        self.retire();
    }
}

/// One buffer's liveness, shared by the buffer and every graph that captured it.
#[derive(Default)]
pub(super) struct Keep {
    state: Mutex<KeepState>,
}

#[derive(Default)]
struct KeepState {
    /// The buffer was dropped (or its memory handed out): its graphs cannot launch.
    gone: bool,
    /// Completes when the last replay that used the buffer has finished (CUDA).
    last_use: Option<Arc<CudaEvent>>,
}

impl Keep {
    fn lock(&self) -> MutexGuard<'_, KeepState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn retire(&self) {
        let mut state = self.lock();
        state.gone = true;
        if let Some(event) = state.last_use.take() {
            // A failure here is a failed context: no replay runs on it any more.
            let _ = event.synchronize();
        }
    }
}

/// What a capture records: the buffers its launches use, and (on the simulator) the launches.
pub(super) struct Recording {
    keeps: Vec<Arc<Keep>>,
    kernels: usize,
    kind: RecordingKind,
}

enum RecordingKind {
    /// The stream outside the capture that buffer tracking goes through.
    Cuda {
        fence: Arc<CudaStream>,
    },
    Sim {
        launches: Vec<SimLaunch>,
    },
}

/// One simulator launch of a graph: the function and its checked parameters.
pub(super) struct SimLaunch {
    pub(super) function: Function,
    pub(super) grid: [u32; 3],
    /// The cluster shape the launch was given.
    pub(super) cluster: Option<[u32; 3]>,
    pub(super) block: [u32; 3],
    pub(super) dynamic_smem: u32,
    pub(super) params: smallvec::SmallVec<[u64; 12]>,
}

impl Recording {
    /// The stream a CUDA launch into the graph tracks its buffers through (`None` on the
    /// simulator).
    pub(super) fn fence(&self) -> Option<&Arc<CudaStream>> {
        match &self.kind {
            RecordingKind::Cuda { fence } => Some(fence),
            RecordingKind::Sim { .. } => None,
        }
    }

    /// Takes note of a launch's buffers, before it is captured: refuses memory a graph cannot
    /// follow.
    pub(super) fn add_buffers(
        &mut self,
        image: &KernelImage,
        args: &CheckedArgs<'_, '_>,
    ) -> Result<(), RuntimeError> {
        let mut keeps = Vec::new();
        for (index, slot) in args.slots().iter().enumerate() {
            match slot.graph_use() {
                None => {}
                Some(Some(graph_use)) => keeps.push(graph_use.keep()),
                Some(None) => {
                    return Err(RuntimeError::CaptureUntracked {
                        index,
                        name: image
                            .params
                            .get(index)
                            .map_or_else(String::new, |p| p.name.clone()),
                    });
                }
            }
        }
        self.keeps.extend(keeps);
        self.kernels += 1;
        Ok(())
    }

    /// Records a simulator launch.
    pub(super) fn add_sim_launch(&mut self, launch: SimLaunch) {
        if let RecordingKind::Sim { launches } = &mut self.kind {
            launches.push(launch);
        }
    }
}

/// Kernel launches captured once, to replay: made by [`Stream::capture`], replayed by
/// [`Graph::launch`]. `Send + Sync`; replays of one graph from several threads take turns.
pub struct Graph {
    device: Device,
    /// Every buffer the graph's launches use, each once, in address order (the order replays
    /// lock them in, so that replays of graphs sharing buffers never deadlock).
    keeps: Vec<Arc<Keep>>,
    kernels: usize,
    repr: GraphRepr,
}

enum GraphRepr {
    Cuda {
        /// `None` when the capture held no work.
        exec: Option<Mutex<GraphExec>>,
        /// Completes when everything that used the buffers before the capture has.
        ready: CudaEvent,
    },
    Sim(Vec<SimLaunch>),
}

impl Stream {
    /// Captures the kernel launches `record` makes on the stream it is given into a graph.
    ///
    /// The closure's stream is a new stream of this stream's device that records instead of
    /// running: launches on it (through [`LaunchConfig::on_stream`](super::LaunchConfig::on_stream))
    /// are checked as usual, then kept for [`Graph::launch`]; uploads, downloads and events on
    /// it are [`RuntimeError::Capturing`] (do them on another stream, before or after).
    /// Buffers passed to captured launches must be coopgraph buffers or their views (the graph
    /// follows their lifetime; see [`Graph`]). Work the closure does on other streams runs as
    /// usual. An error from the closure ends the capture and is returned.
    ///
    /// On the simulator the launches are recorded the same way and run at each replay.
    ///
    /// ```
    /// use coopgraph::runtime::{Device, RuntimeError};
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// # fn main() -> Result<(), coopgraph::Error> {
    /// let mut k = KernelBuilder::new("add_one").block(128);
    /// let x = k.input::<u32>("x");
    /// let y = k.output::<u32>("y");
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let t = k.map(&t, |v| v + 1);
    /// k.store_to(b, &y, &t, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let device = Device::sim();
    /// let f = device.compile(&kernel)?;
    /// let stream = device.new_stream()?;
    /// let mut a = stream.upload(&[0u32; 256])?;
    /// let mut b = stream.alloc_zeroed::<u32>(256)?;
    /// let config = f.config_over(256)?;
    /// // Two launches, a -> b -> a: each replay adds 2.
    /// let graph = stream.capture(|s| {
    ///     f.launch(config.clone().on_stream(s), (&a, &mut b))?;
    ///     f.launch(config.clone().on_stream(s), (&b, &mut a))
    /// })?;
    /// for _ in 0..5 {
    ///     graph.launch(&stream)?;
    /// }
    /// assert_eq!(stream.download(&a)?, vec![10u32; 256]);
    /// // A graph whose buffer is gone refuses to launch.
    /// drop(b);
    /// assert!(matches!(graph.launch(&stream), Err(RuntimeError::GraphBufferGone)));
    /// # Ok(())
    /// # }
    /// ```
    pub fn capture<E: From<RuntimeError>>(
        &self,
        record: impl FnOnce(&Stream) -> Result<(), E>,
    ) -> Result<Graph, E> {
        if self.is_capturing() {
            return Err(RuntimeError::Capturing { what: "a capture" }.into());
        }
        let device = self.device().clone();
        match &device.inner.imp {
            Imp::Cuda(c) => {
                let new_stream = || {
                    c.ctx
                        .new_stream()
                        .map_err(RuntimeError::driver("cuStreamCreate"))
                };
                let (capture, fence) = (new_stream()?, new_stream()?);
                // Relaxed: the closure (and buffer tracking on `fence`) may make any driver
                // call on other streams while the capture records; only the capture stream
                // records.
                capture
                    .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED)
                    .map_err(RuntimeError::driver("cuStreamBeginCapture"))?;
                let stream = Stream::new(device.clone(), Some(capture.clone()));
                *stream.recording() = Some(Recording {
                    keeps: Vec::new(),
                    kernels: 0,
                    kind: RecordingKind::Cuda {
                        fence: fence.clone(),
                    },
                });
                let result = record(&stream);
                let recording = stream.recording().take();
                // The capture ends whatever the closure did, so the stream is usable again.
                let graph = capture.end_capture(sys::CUgraphInstantiate_flags(0));
                result?;
                let graph = graph.map_err(RuntimeError::driver("cuStreamEndCapture"))?;
                let ready = fence
                    .record_event(None)
                    .map_err(RuntimeError::driver("cuEventRecord"))?;
                let recording = recording.ok_or(RuntimeError::Capturing { what: "a capture" })?;
                Ok(Graph::new(
                    device,
                    recording,
                    GraphRepr::Cuda {
                        exec: graph.map(|g| Mutex::new(GraphExec(g))),
                        ready,
                    },
                ))
            }
            Imp::Sim(_) => {
                let stream = Stream::new(device.clone(), None);
                *stream.recording() = Some(Recording {
                    keeps: Vec::new(),
                    kernels: 0,
                    kind: RecordingKind::Sim {
                        launches: Vec::new(),
                    },
                });
                let result = record(&stream);
                let recording = stream.recording().take();
                result?;
                let mut recording =
                    recording.ok_or(RuntimeError::Capturing { what: "a capture" })?;
                let launches = match &mut recording.kind {
                    RecordingKind::Sim { launches } => std::mem::take(launches),
                    RecordingKind::Cuda { .. } => Vec::new(),
                };
                Ok(Graph::new(device, recording, GraphRepr::Sim(launches)))
            }
        }
    }
}

impl Graph {
    fn new(device: Device, recording: Recording, repr: GraphRepr) -> Graph {
        log::debug!("captured a graph of {} kernel launches", recording.kernels);
        let mut keeps = recording.keeps;
        keeps.sort_by_key(|k| Arc::as_ptr(k) as usize);
        keeps.dedup_by(|a, b| Arc::ptr_eq(a, b));
        Graph {
            device,
            keeps,
            kernels: recording.kernels,
            repr,
        }
    }

    /// The device the graph was captured on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Kernel launches the graph holds.
    pub fn kernels(&self) -> usize {
        self.kernels
    }

    /// Replays the graph's launches, in order, on `stream` (a stream of the graph's device, not
    /// capturing). On CUDA this queues the graph and returns; errors inside its kernels surface
    /// at the next synchronization. On the simulator the launches run here, each checked as
    /// any launch is.
    ///
    /// A graph whose buffers are not all alive is [`RuntimeError::GraphBufferGone`].
    pub fn launch(&self, stream: &Stream) -> Result<(), RuntimeError> {
        if !stream.is_on(&self.device) {
            return Err(RuntimeError::WrongDevice {
                what: Foreign::Graph,
            });
        }
        if stream.is_capturing() {
            return Err(RuntimeError::Capturing {
                what: "a graph launch",
            });
        }
        // Held until the replay is queued (CUDA) or done (simulator): a buffer dropped
        // meanwhile waits for it.
        let mut states: Vec<MutexGuard<'_, KeepState>> =
            self.keeps.iter().map(|k| k.lock()).collect();
        if states.iter().any(|s| s.gone) {
            return Err(RuntimeError::GraphBufferGone);
        }
        log::trace!("graph replay: {} kernel launches", self.kernels);
        match &self.repr {
            GraphRepr::Cuda { exec, ready } => {
                let Some(cuda) = stream.cuda_stream() else {
                    return Err(RuntimeError::WrongDevice {
                        what: Foreign::Stream,
                    });
                };
                let Some(exec) = exec else {
                    return Ok(());
                };
                cuda.wait(ready)
                    .map_err(RuntimeError::driver("cuStreamWaitEvent"))?;
                exec.lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .launch(cuda)?;
                let done = Arc::new(
                    cuda.record_event(None)
                        .map_err(RuntimeError::driver("cuEventRecord"))?,
                );
                for state in &mut states {
                    state.last_use = Some(done.clone());
                }
                Ok(())
            }
            GraphRepr::Sim(launches) => {
                for launch in launches {
                    launch.function.run_sim(launch)?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Debug for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Graph({} kernels, {} buffers, on {:?})",
            self.kernels,
            self.keeps.len(),
            self.device
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graphs_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Graph>();
    }

    #[test]
    fn a_retired_cell_stays_gone_and_a_new_one_is_made() {
        let mut use_ = GraphUse::default();
        let first = use_.keep();
        assert!(Arc::ptr_eq(&first, &use_.keep()));
        use_.retire();
        assert!(first.lock().gone);
        let second = use_.keep();
        assert!(!Arc::ptr_eq(&first, &second) && !second.lock().gone);
        drop(use_);
        assert!(second.lock().gone);
    }
}

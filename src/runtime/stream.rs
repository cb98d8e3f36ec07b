//! Streams: ordered queues of work on a device. Launches, uploads and downloads go to any stream
//! of the device; events recorded on one stream order work on another ([`Stream::wait`]) and
//! time the work between them.
//!
//! On CUDA a [`Stream`] is a cudarc stream: work on it runs in order, asynchronously to the
//! host and to other streams. Buffers keep cudarc's cross-stream tracking, so a kernel reading a
//! buffer another stream wrote waits for that write without an explicit event.
//!
//! On the simulator a stream has the same API, and every operation runs when it is enqueued
//! (the simulator runs each launch to completion on the calling thread): a simulated stream's
//! order is program order, [`Stream::synchronize`] and [`Stream::wait`] return at once, and an
//! event records the host clock. Code written against streams therefore runs unchanged on both,
//! and the simulator checks every launch as it is made.
//!
//! Downloads into [`PinnedBuffer`]s (page-locked host memory) are asynchronous on CUDA:
//! [`Stream::download_into`] returns once the copy is queued, and the pinned buffer waits for
//! it when read.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use cudarc::driver::{CudaStream, PinnedHostSlice};

use super::RuntimeError;
use super::buffer::{Buffer, BufferRepr, DeviceElement, byte_len, to_le_bytes};
use super::device::{Device, Imp};
use super::driver::{alloc_pinned_zeroed, memset_pattern};
use super::error::Foreign;
use super::graph::Recording;

/// An ordered queue of work on a device: made by [`Device::new_stream`], or the device's own
/// by [`Device::stream`]. Cheap to clone (clones are one stream); `Send + Sync`.
///
/// ```
/// use coopgraph::runtime::{Device, LaunchConfig};
/// use coopgraph::{KernelBuilder, Load, Store};
///
/// # fn main() -> Result<(), coopgraph::Error> {
/// let mut k = KernelBuilder::new("double").block(128);
/// let x = k.input::<f32>("x");
/// let y = k.output::<f32>("y");
/// let b = k.this_block();
/// let t = k.load_from(b, &x, Load::direct());
/// let t = k.map(&t, |v| v * 2.0);
/// k.store_to(b, &y, &t, Store::direct());
/// let kernel = k.build()?;
///
/// let device = Device::sim();
/// let f = device.compile(&kernel)?;
/// let stream = device.new_stream()?;
/// let x = stream.upload(&[1.0f32; 512])?;
/// let mut y = stream.alloc_zeroed::<f32>(512)?;
/// let start = stream.record_event()?;
/// f.launch(f.config_over(512)?.on_stream(&stream), (&x, &mut y))?;
/// let end = stream.record_event()?;
/// let mut host = device.alloc_pinned::<f32>(512)?;
/// stream.download_into(&y, &mut host)?;
/// assert_eq!(host.as_slice()?, &[2.0f32; 512][..]);
/// let _gpu_time = end.elapsed_since(&start)?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Stream {
    pub(super) inner: Arc<StreamInner>,
}

pub(super) struct StreamInner {
    pub(super) device: Device,
    /// The cudarc stream, on CUDA.
    pub(super) cuda: Option<Arc<CudaStream>>,
    /// What a capture records, while this is the stream [`Stream::capture`] hands its closure.
    pub(super) capture: Mutex<Option<Recording>>,
}

impl Stream {
    pub(super) fn new(device: Device, cuda: Option<Arc<CudaStream>>) -> Stream {
        Stream {
            inner: Arc::new(StreamInner {
                device,
                cuda,
                capture: Mutex::new(None),
            }),
        }
    }

    /// The device the stream belongs to.
    pub fn device(&self) -> &Device {
        &self.inner.device
    }

    /// The cudarc stream, on CUDA.
    pub fn cuda_stream(&self) -> Option<&Arc<CudaStream>> {
        self.inner.cuda.as_ref()
    }

    /// Whether `self` and `other` are one stream.
    pub fn same_as(&self, other: &Stream) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
            || matches!((&self.inner.cuda, &other.inner.cuda), (Some(a), Some(b)) if a == b)
    }

    /// Whether the stream is capturing a graph (it is the stream a [`Stream::capture`] closure
    /// was given, and the closure has not returned).
    pub fn is_capturing(&self) -> bool {
        self.recording().is_some()
    }

    pub(super) fn recording(&self) -> MutexGuard<'_, Option<Recording>> {
        self.inner
            .capture
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Refuses `what` on a capturing stream: a graph holds kernel launches only.
    fn not_capturing(&self, what: &'static str) -> Result<(), RuntimeError> {
        if self.is_capturing() {
            return Err(RuntimeError::Capturing { what });
        }
        Ok(())
    }

    /// Whether the stream belongs to `device` (its CUDA context, or its simulator).
    pub fn is_on(&self, device: &Device) -> bool {
        self.device().shares_target_with(device)
    }

    /// Checks that the stream belongs to `device`.
    pub(super) fn check_on(&self, device: &Device) -> Result<(), RuntimeError> {
        if self.is_on(device) {
            Ok(())
        } else {
            Err(RuntimeError::WrongDevice {
                what: Foreign::Stream,
            })
        }
    }

    /// Waits until all work queued on the stream has finished, and reports an error a kernel
    /// ran into. Returns at once on the simulator.
    pub fn synchronize(&self) -> Result<(), RuntimeError> {
        self.not_capturing("a synchronization")?;
        match &self.inner.cuda {
            Some(s) => s
                .synchronize()
                .map_err(RuntimeError::driver("cuStreamSynchronize")),
            None => Ok(()),
        }
    }

    /// Copies `data` into a new buffer, on this stream (on CUDA the buffer is freed on this
    /// stream too).
    pub fn upload<T: DeviceElement>(&self, data: &[T]) -> Result<Buffer<T>, RuntimeError> {
        self.not_capturing("an upload")?;
        match &self.inner.cuda {
            Some(s) => {
                byte_len::<T>(data.len())?;
                let slice = s
                    .clone_htod(data)
                    .map_err(RuntimeError::driver("cuMemcpyHtoDAsync"))?;
                Ok(Buffer::new(BufferRepr::Cuda(slice)))
            }
            None => self.device().upload(data),
        }
    }

    /// A new buffer of `len` zeros, allocated on this stream.
    pub fn alloc_zeroed<T: DeviceElement>(&self, len: usize) -> Result<Buffer<T>, RuntimeError> {
        self.not_capturing("an allocation")?;
        match &self.inner.cuda {
            Some(s) => {
                byte_len::<T>(len)?;
                let slice = s
                    .alloc_zeros(len)
                    .map_err(RuntimeError::driver("cuMemAllocAsync"))?;
                Ok(Buffer::new(BufferRepr::Cuda(slice)))
            }
            None => self.device().alloc_zeroed(len),
        }
    }

    /// Overwrites `buffer` with `data` (of the buffer's length), on this stream: later work on
    /// any stream that uses the buffer waits for the copy.
    pub fn write<T: DeviceElement>(
        &self,
        buffer: &mut Buffer<T>,
        data: &[T],
    ) -> Result<(), RuntimeError> {
        self.not_capturing("an upload")?;
        self.check_buffer(buffer)?;
        if data.len() != buffer.len() {
            return Err(RuntimeError::LengthMismatch {
                buffer: buffer.len(),
                host: data.len(),
            });
        }
        match (&self.inner.cuda, &mut buffer.repr) {
            (Some(s), BufferRepr::Cuda(slice)) => s
                .memcpy_htod(data, slice)
                .map_err(RuntimeError::driver("cuMemcpyHtoDAsync")),
            (None, BufferRepr::Sim(a)) => {
                let bytes = to_le_bytes(data);
                Ok(a.shared.sim.write(a.addr, &bytes)?)
            }
            _ => Err(RuntimeError::WrongDevice {
                what: Foreign::Buffer,
            }),
        }
    }

    /// Copies `buffer` to the host, on this stream: waits for the work before the copy that
    /// writes the buffer (on any stream), and for the copy.
    pub fn download<T: DeviceElement>(&self, buffer: &Buffer<T>) -> Result<Vec<T>, RuntimeError> {
        self.not_capturing("a download")?;
        self.check_buffer(buffer)?;
        match (&self.inner.cuda, &buffer.repr) {
            (Some(s), BufferRepr::Cuda(slice)) => s
                .clone_dtoh(slice)
                .map_err(RuntimeError::driver("cuMemcpyDtoHAsync")),
            _ => buffer.to_vec(),
        }
    }

    /// Queues a copy of `buffer` into `host` (of the buffer's length) on this stream and
    /// returns without waiting for it, on CUDA; reading `host` ([`PinnedBuffer::as_slice`])
    /// waits for the copy. On the simulator the copy is made here.
    pub fn download_into<T: DeviceElement>(
        &self,
        buffer: &Buffer<T>,
        host: &mut PinnedBuffer<T>,
    ) -> Result<(), RuntimeError> {
        self.not_capturing("a download")?;
        self.check_buffer(buffer)?;
        if host.len() != buffer.len() {
            return Err(RuntimeError::LengthMismatch {
                buffer: buffer.len(),
                host: host.len(),
            });
        }
        match (&self.inner.cuda, &buffer.repr, &mut host.repr) {
            (Some(s), BufferRepr::Cuda(slice), PinnedRepr::Cuda(pinned)) => {
                if **pinned.context() != **s.context() {
                    return Err(RuntimeError::WrongDevice {
                        what: Foreign::HostBuffer,
                    });
                }
                s.memcpy_dtoh(slice, pinned)
                    .map_err(RuntimeError::driver("cuMemcpyDtoHAsync"))
            }
            (None, BufferRepr::Sim(a), PinnedRepr::Sim { data, sim }) if a.shared.id == *sim => {
                *data = buffer.to_vec()?;
                Ok(())
            }
            _ => Err(RuntimeError::WrongDevice {
                what: Foreign::HostBuffer,
            }),
        }
    }

    /// A new buffer of `len` copies of `value`, filled on this stream.
    pub fn alloc_filled<T: DeviceElement>(
        &self,
        len: usize,
        value: T,
    ) -> Result<Buffer<T>, RuntimeError> {
        self.not_capturing("an allocation")?;
        match &self.inner.cuda {
            Some(s) => {
                byte_len::<T>(len)?;
                let size = T::DTYPE.bytes();
                let bits = value.to_bits();
                let (lo, hi) = (bits as u32, (bits >> 32) as u32);
                let slice = if size <= 4 || lo == hi {
                    let mut slice = s
                        .alloc_zeros(len)
                        .map_err(RuntimeError::driver("cuMemAllocAsync"))?;
                    memset_pattern(s, &mut slice, size.min(4), lo)?;
                    slice
                } else {
                    s.clone_htod(&vec![value; len])
                        .map_err(RuntimeError::driver("cuMemcpyHtoDAsync"))?
                };
                Ok(Buffer::new(BufferRepr::Cuda(slice)))
            }
            None => self.device().alloc_filled(len, value),
        }
    }

    fn check_buffer<T: DeviceElement>(&self, buffer: &Buffer<T>) -> Result<(), RuntimeError> {
        if buffer.is_on(self.device()) {
            Ok(())
        } else {
            Err(RuntimeError::WrongDevice {
                what: Foreign::Buffer,
            })
        }
    }
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Stream on {:?}", self.device())?;
        if self.is_capturing() {
            f.write_str(" (capturing)")?;
        }
        Ok(())
    }
}

impl Device {
    /// A new stream of this device. On CUDA it is a non-blocking stream of the device's
    /// context (work on it does not wait for the legacy default stream); on the simulator it
    /// runs its work when enqueued, like every simulated stream.
    pub fn new_stream(&self) -> Result<Stream, RuntimeError> {
        match &self.inner.imp {
            Imp::Cuda(c) => {
                let s = c
                    .ctx
                    .new_stream()
                    .map_err(RuntimeError::driver("cuStreamCreate"))?;
                Ok(Stream::new(self.clone(), Some(s)))
            }
            Imp::Sim(_) => Ok(Stream::new(self.clone(), None)),
        }
    }

    /// The device's own stream: the one [`Device::upload`], [`Device::synchronize`] and
    /// launches without a stream use.
    pub fn stream(&self) -> Stream {
        match &self.inner.imp {
            Imp::Cuda(c) => Stream::new(self.clone(), Some(c.stream.clone())),
            Imp::Sim(_) => Stream::new(self.clone(), None),
        }
    }

    /// Adopts a cudarc stream of this device's context as a coopgraph stream.
    pub fn wrap_cuda_stream(&self, stream: Arc<CudaStream>) -> Result<Stream, RuntimeError> {
        match &self.inner.imp {
            Imp::Cuda(c) if **stream.context() == *c.ctx => {
                Ok(Stream::new(self.clone(), Some(stream)))
            }
            _ => Err(RuntimeError::WrongDevice {
                what: Foreign::Stream,
            }),
        }
    }

    /// `len` zeros in page-locked host memory, the target of asynchronous downloads
    /// ([`Stream::download_into`]). On CUDA the memory is page-locked by the driver (not
    /// write-combined, so reading it on the host is fast); on the simulator it is ordinary
    /// memory.
    pub fn alloc_pinned<T: DeviceElement>(
        &self,
        len: usize,
    ) -> Result<PinnedBuffer<T>, RuntimeError> {
        byte_len::<T>(len)?;
        let repr = match &self.inner.imp {
            Imp::Cuda(c) => PinnedRepr::Cuda(alloc_pinned_zeroed(&c.ctx, len)?),
            Imp::Sim(s) => PinnedRepr::Sim {
                data: vec![T::zero(); len],
                sim: s.id,
            },
        };
        Ok(PinnedBuffer { repr })
    }
}

/// Host memory the device copies into asynchronously: page-locked on CUDA. Made by
/// [`Device::alloc_pinned`], filled by [`Stream::download_into`]; reading it waits for the
/// copies queued into it.
pub struct PinnedBuffer<T: DeviceElement> {
    repr: PinnedRepr<T>,
}

enum PinnedRepr<T> {
    Cuda(PinnedHostSlice<T>),
    /// Host memory of the simulator with this id (copies check it, as on CUDA they check the
    /// context).
    Sim {
        data: Vec<T>,
        sim: u64,
    },
}

impl<T: DeviceElement> PinnedBuffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match &self.repr {
            PinnedRepr::Cuda(p) => p.len(),
            PinnedRepr::Sim { data, .. } => data.len(),
        }
    }

    /// Whether the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements, once every copy queued into the buffer has finished.
    pub fn as_slice(&self) -> Result<&[T], RuntimeError> {
        match &self.repr {
            PinnedRepr::Cuda(p) => p
                .as_slice()
                .map_err(RuntimeError::driver("cuEventSynchronize")),
            PinnedRepr::Sim { data, .. } => Ok(data),
        }
    }

    /// The elements, mutably, once every copy queued into the buffer has finished.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T], RuntimeError> {
        match &mut self.repr {
            PinnedRepr::Cuda(p) => p
                .as_mut_slice()
                .map_err(RuntimeError::driver("cuEventSynchronize")),
            PinnedRepr::Sim { data, .. } => Ok(data),
        }
    }
}

impl<T: DeviceElement> fmt::Debug for PinnedBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PinnedBuffer<{}>[{}]", T::DTYPE, self.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Stream>();
        check::<PinnedBuffer<f64>>();
    }

    #[test]
    fn simulated_streams_move_data_in_order() {
        let dev = Device::sim();
        let s = dev.new_stream().expect("a stream");
        assert!(s.is_on(&dev) && !s.is_on(&Device::sim()));
        let mut b = s.upload(&[1u16, 2, 3]).expect("upload");
        s.write(&mut b, &[4, 5, 6]).expect("write");
        assert_eq!(s.download(&b).expect("download"), vec![4, 5, 6]);
        let mut host = dev.alloc_pinned::<u16>(3).expect("pinned");
        assert_eq!(host.as_slice().expect("read"), &[0, 0, 0]);
        s.download_into(&b, &mut host).expect("download");
        assert_eq!(host.as_slice().expect("read"), &[4, 5, 6]);
        let mut short = dev.alloc_pinned::<u16>(2).expect("pinned");
        assert!(matches!(
            s.download_into(&b, &mut short),
            Err(RuntimeError::LengthMismatch { buffer: 3, host: 2 })
        ));
        let other = Device::sim().upload(&[1u16, 2, 3]).expect("upload");
        assert!(matches!(
            s.download(&other),
            Err(RuntimeError::WrongDevice {
                what: Foreign::Buffer
            })
        ));
        let filled = s.alloc_filled(4, -1i64).expect("fill");
        assert_eq!(filled.to_vec().expect("read"), vec![-1; 4]);
        s.synchronize().expect("sync");
        assert!(s.same_as(&s.clone()) && !s.same_as(&dev.new_stream().expect("a stream")));
    }
}

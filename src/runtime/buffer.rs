//! Device buffers over both backends: a cudarc `CudaSlice<T>` on CUDA, an allocation in the
//! simulator's memory on the simulator.
//!
//! Every transfer checks lengths first (cudarc asserts on them), and a buffer remembers which
//! device it lives on, so passing it to a kernel of another device is an error at launch.
//!
//! A [`View`] or [`ViewMut`] is a range of a buffer, passed to kernels like a buffer of the
//! range's length (so a kernel's bounds checks stop at the end of the range).

use std::fmt;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, DeviceRepr, ValidAsZeroBits};

use super::RuntimeError;
use super::device::{Device, Imp, SimShared};
use super::driver::memset_pattern;
use super::graph::GraphUse;
use crate::ir::{DType, Element};

/// An element type buffers can hold: every [`Element`] (`i8..i64`, `u8..u64`, `f32`, `f64`).
/// Implemented automatically; write `T: DeviceElement` in code generic over buffer types.
pub trait DeviceElement: Element + DeviceRepr + ValidAsZeroBits {}

impl<T: Element + DeviceRepr + ValidAsZeroBits> DeviceElement for T {}

/// An array of `T` in a device's memory.
///
/// Made by [`Device::upload`], [`Device::alloc_zeroed`], [`Device::alloc_filled`], or from a
/// cudarc slice with [`Buffer::from_cuda`]. Pass `&buffer` for kernel inputs and
/// `&mut buffer` for outputs.
pub struct Buffer<T: DeviceElement> {
    /// What graphs that captured the buffer hold of it. Declared first, so it is dropped
    /// first: graphs learn the buffer is gone (and their last replay has finished) before
    /// `repr` frees the memory.
    pub(super) graph_use: GraphUse,
    pub(super) repr: BufferRepr<T>,
}

/// Where a buffer's memory is.
pub(super) enum BufferRepr<T> {
    Cuda(CudaSlice<T>),
    Sim(SimAlloc),
}

/// An allocation in a simulator's memory; freed on drop.
pub(super) struct SimAlloc {
    pub(super) shared: Arc<SimShared>,
    pub(super) addr: u64,
    pub(super) len: usize,
}

impl Drop for SimAlloc {
    fn drop(&mut self) {
        // A failed free only leaks simulator memory; there is no caller to tell.
        let _ = self.shared.sim.free(self.addr);
    }
}

impl<T: DeviceElement> Buffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match &self.repr {
            BufferRepr::Cuda(s) => s.len(),
            BufferRepr::Sim(a) => a.len,
        }
    }

    /// Whether the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        T::DTYPE
    }

    /// Copies the buffer to the host. Waits for the kernels queued before it that write the
    /// buffer.
    pub fn to_vec(&self) -> Result<Vec<T>, RuntimeError> {
        match &self.repr {
            BufferRepr::Cuda(slice) => slice
                .stream()
                .clone_dtoh(slice)
                .map_err(RuntimeError::driver("cuMemcpyDtoHAsync")),
            BufferRepr::Sim(a) => SimRange::of(a, 0, a.len, T::DTYPE).to_vec(),
        }
    }

    /// Overwrites the buffer with `data`, which must have the buffer's length.
    pub fn write(&mut self, data: &[T]) -> Result<(), RuntimeError> {
        if data.len() != self.len() {
            return Err(RuntimeError::LengthMismatch {
                buffer: self.len(),
                host: data.len(),
            });
        }
        match &mut self.repr {
            BufferRepr::Cuda(slice) => {
                let stream = slice.stream().clone();
                stream
                    .memcpy_htod(data, slice)
                    .map_err(RuntimeError::driver("cuMemcpyHtoDAsync"))
            }
            BufferRepr::Sim(a) => Ok(a.shared.sim.write(a.addr, &to_le_bytes(data))?),
        }
    }

    /// Sets every element to `value` on the device. On CUDA a value whose bytes repeat with a
    /// period of 1, 2 or 4 bytes (zero, every 8-, 16- and 32-bit value) is written by the
    /// driver's memset, queued on the buffer's stream with no host copy; other 64-bit values
    /// are copied from the host.
    ///
    /// ```
    /// let device = coopgraph::runtime::Device::sim();
    /// let mut b = device.upload(&[1u64, 2, 3])?;
    /// b.fill(0)?;
    /// assert_eq!(b.to_vec()?, [0, 0, 0]);
    /// b.fill(u64::MAX)?;
    /// assert_eq!(b.to_vec()?, [u64::MAX; 3]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn fill(&mut self, value: T) -> Result<(), RuntimeError> {
        match &mut self.repr {
            BufferRepr::Cuda(slice) => {
                let stream = slice.stream().clone();
                fill_cuda(&stream, slice, value)
            }
            BufferRepr::Sim(a) => {
                let one = to_le_bytes(&[value]);
                Ok(a.shared.sim.write(a.addr, &one.repeat(a.len))?)
            }
        }
    }

    /// Wraps a cudarc slice. It keeps its context and stream; it can be passed to kernels
    /// compiled in that context.
    pub fn from_cuda(slice: CudaSlice<T>) -> Self {
        Buffer::new(BufferRepr::Cuda(slice))
    }

    /// The buffer's address in its simulator (`None` on CUDA).
    pub(super) fn sim_addr(&self) -> Option<u64> {
        match &self.repr {
            BufferRepr::Sim(a) => Some(a.addr),
            BufferRepr::Cuda(_) => None,
        }
    }

    pub(super) fn new(repr: BufferRepr<T>) -> Self {
        Buffer {
            graph_use: GraphUse::default(),
            repr,
        }
    }

    /// The cudarc slice, when this is a CUDA buffer.
    pub fn as_cuda(&self) -> Option<&CudaSlice<T>> {
        match &self.repr {
            BufferRepr::Cuda(s) => Some(s),
            BufferRepr::Sim(_) => None,
        }
    }

    /// The cudarc slice, mutably, when this is a CUDA buffer.
    ///
    /// The slice could be replaced (and the memory a graph captured freed), so graphs that
    /// captured this buffer stop launching from here on
    /// ([`RuntimeError::GraphBufferGone`]); launches and graphs captured later are not affected.
    pub fn as_cuda_mut(&mut self) -> Option<&mut CudaSlice<T>> {
        match &mut self.repr {
            BufferRepr::Cuda(s) => {
                self.graph_use.retire();
                Some(s)
            }
            BufferRepr::Sim(_) => None,
        }
    }

    /// The cudarc slice, when this is a CUDA buffer; the buffer itself otherwise. Graphs that
    /// captured the buffer stop launching ([`RuntimeError::GraphBufferGone`]).
    pub fn into_cuda(self) -> Result<CudaSlice<T>, Self> {
        let Buffer { graph_use, repr } = self;
        match repr {
            BufferRepr::Cuda(s) => {
                drop(graph_use);
                Ok(s)
            }
            repr @ BufferRepr::Sim(_) => Err(Buffer { graph_use, repr }),
        }
    }

    /// A view of the elements in `range`, to pass to kernels as an input (a buffer of the
    /// range's length). A range past the end is [`RuntimeError::ViewOutOfRange`].
    ///
    /// ```
    /// # fn main() -> Result<(), coopgraph::runtime::RuntimeError> {
    /// let device = coopgraph::runtime::Device::sim();
    /// let b = device.upload(&[1u32, 2, 3, 4, 5])?;
    /// let v = b.view(1..4)?;
    /// assert_eq!((v.len(), v.to_vec()?), (3, vec![2, 3, 4]));
    /// assert!(b.view(2..9).is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub fn view(&self, range: impl RangeBounds<usize>) -> Result<View<'_, T>, RuntimeError> {
        let (start, end) = bounds(&range, self.len())?;
        let repr = match &self.repr {
            BufferRepr::Cuda(s) => ViewRepr::Cuda(s.slice(start..end)),
            BufferRepr::Sim(a) => ViewRepr::Sim(SimRange::of(a, start, end, T::DTYPE)),
        };
        Ok(View {
            graph_use: &self.graph_use,
            repr,
        })
    }

    /// A view of the elements in `range`, to pass to kernels as an output (`&mut view`) or an
    /// input (`&view`). A range past the end is [`RuntimeError::ViewOutOfRange`].
    pub fn view_mut(
        &mut self,
        range: impl RangeBounds<usize>,
    ) -> Result<ViewMut<'_, T>, RuntimeError> {
        let (start, end) = bounds(&range, self.len())?;
        let repr = match &mut self.repr {
            BufferRepr::Cuda(s) => ViewMutRepr::Cuda(s.slice_mut(start..end)),
            BufferRepr::Sim(a) => ViewMutRepr::Sim(SimRange::of(a, start, end, T::DTYPE)),
        };
        Ok(ViewMut {
            graph_use: &self.graph_use,
            repr,
        })
    }

    /// Whether the buffer lives on `device` (in its CUDA context, or in its simulator).
    pub fn is_on(&self, device: &Device) -> bool {
        match (&self.repr, &device.inner.imp) {
            (BufferRepr::Cuda(s), Imp::Cuda(c)) => **s.context() == *c.ctx,
            (BufferRepr::Sim(a), Imp::Sim(s)) => a.shared.id == s.id,
            _ => false,
        }
    }
}

impl<T: DeviceElement> fmt::Debug for Buffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let backend = match &self.repr {
            BufferRepr::Cuda(_) => "cuda",
            BufferRepr::Sim(_) => "sim",
        };
        write!(f, "Buffer<{}>[{}] on {backend}", T::DTYPE, self.len())
    }
}

/// The start and end of `range` in a buffer of `len` elements, or `ViewOutOfRange`.
fn bounds(range: &impl RangeBounds<usize>, len: usize) -> Result<(usize, usize), RuntimeError> {
    let start = match range.start_bound() {
        Bound::Included(&s) => Some(s),
        Bound::Excluded(&s) => s.checked_add(1),
        Bound::Unbounded => Some(0),
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1),
        Bound::Excluded(&e) => Some(e),
        Bound::Unbounded => Some(len),
    };
    match (start, end) {
        (Some(start), Some(end)) if start <= end && end <= len => Ok((start, end)),
        _ => Err(RuntimeError::ViewOutOfRange {
            start: start.unwrap_or(usize::MAX),
            end: end.unwrap_or(usize::MAX),
            len,
        }),
    }
}

/// A range of a simulator allocation: its first element's address and its length.
#[derive(Clone)]
pub(super) struct SimRange {
    pub(super) shared: Arc<SimShared>,
    pub(super) addr: u64,
    pub(super) len: usize,
}

impl SimRange {
    fn of(a: &SimAlloc, start: usize, end: usize, dtype: DType) -> SimRange {
        SimRange {
            shared: a.shared.clone(),
            addr: a.addr + (start as u64) * u64::from(dtype.bytes()),
            len: end - start,
        }
    }

    /// The elements, copied to the host.
    pub(super) fn to_vec<T: Element>(&self) -> Result<Vec<T>, RuntimeError> {
        let size = T::DTYPE.bytes() as usize;
        let mut bytes = vec![0u8; byte_len::<T>(self.len)?];
        self.shared.sim.read(self.addr, &mut bytes)?;
        Ok(bytes.chunks_exact(size).map(element_from_le::<T>).collect())
    }
}

/// A range of a [`Buffer`], read-only: passed to a kernel (`&view`) as an input buffer of the
/// range's length. Made by [`Buffer::view`].
pub struct View<'a, T: DeviceElement> {
    pub(super) graph_use: &'a GraphUse,
    pub(super) repr: ViewRepr<'a, T>,
}

pub(super) enum ViewRepr<'a, T> {
    Cuda(CudaView<'a, T>),
    Sim(SimRange),
}

/// A range of a [`Buffer`] a kernel may write: passed as `&mut view` to an output parameter
/// (or as `&view` to an input), as a buffer of the range's length. Made by
/// [`Buffer::view_mut`].
pub struct ViewMut<'a, T: DeviceElement> {
    pub(super) graph_use: &'a GraphUse,
    pub(super) repr: ViewMutRepr<'a, T>,
}

pub(super) enum ViewMutRepr<'a, T> {
    Cuda(CudaViewMut<'a, T>),
    Sim(SimRange),
}

impl<T: DeviceElement> View<'_, T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match &self.repr {
            ViewRepr::Cuda(v) => v.len(),
            ViewRepr::Sim(r) => r.len,
        }
    }

    /// Whether the view holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies the view's elements to the host (after the kernels queued before that write
    /// them).
    pub fn to_vec(&self) -> Result<Vec<T>, RuntimeError> {
        match &self.repr {
            ViewRepr::Cuda(v) => cudarc::driver::DeviceSlice::stream(v)
                .clone_dtoh(v)
                .map_err(RuntimeError::driver("cuMemcpyDtoHAsync")),
            ViewRepr::Sim(r) => r.to_vec(),
        }
    }
}

impl<T: DeviceElement> ViewMut<'_, T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match &self.repr {
            ViewMutRepr::Cuda(v) => v.len(),
            ViewMutRepr::Sim(r) => r.len,
        }
    }

    /// Whether the view holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies the view's elements to the host (after the kernels queued before that write
    /// them).
    pub fn to_vec(&self) -> Result<Vec<T>, RuntimeError> {
        match &self.repr {
            ViewMutRepr::Cuda(v) => cudarc::driver::DeviceSlice::stream(v)
                .clone_dtoh(v)
                .map_err(RuntimeError::driver("cuMemcpyDtoHAsync")),
            ViewMutRepr::Sim(r) => r.to_vec(),
        }
    }
}

impl<T: DeviceElement> fmt::Debug for View<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "View<{}>[{}]", T::DTYPE, self.len())
    }
}

impl<T: DeviceElement> fmt::Debug for ViewMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ViewMut<{}>[{}]", T::DTYPE, self.len())
    }
}

impl Device {
    /// Copies `data` into a new buffer on this device.
    pub fn upload<T: DeviceElement>(&self, data: &[T]) -> Result<Buffer<T>, RuntimeError> {
        let bytes = byte_len::<T>(data.len())?;
        let repr = match &self.inner.imp {
            Imp::Cuda(c) => BufferRepr::Cuda(
                c.stream
                    .clone_htod(data)
                    .map_err(RuntimeError::driver("cuMemcpyHtoDAsync"))?,
            ),
            Imp::Sim(s) => {
                let alloc = sim_alloc(s, data.len(), bytes)?;
                s.sim.write(alloc.addr, &to_le_bytes(data))?;
                BufferRepr::Sim(alloc)
            }
        };
        Ok(Buffer::new(repr))
    }

    /// A new buffer of `len` zeros.
    pub fn alloc_zeroed<T: DeviceElement>(&self, len: usize) -> Result<Buffer<T>, RuntimeError> {
        let bytes = byte_len::<T>(len)?;
        let repr = match &self.inner.imp {
            Imp::Cuda(c) => BufferRepr::Cuda(
                c.stream
                    .alloc_zeros(len)
                    .map_err(RuntimeError::driver("cuMemAllocAsync"))?,
            ),
            Imp::Sim(s) => {
                let addr = s.sim.alloc_zeroed(bytes)?;
                BufferRepr::Sim(SimAlloc {
                    shared: s.clone(),
                    addr,
                    len,
                })
            }
        };
        Ok(Buffer::new(repr))
    }

    /// A new buffer of `len` copies of `value` (for example a poison value in an output, so a
    /// kernel that misses an element is caught).
    pub fn alloc_filled<T: DeviceElement>(
        &self,
        len: usize,
        value: T,
    ) -> Result<Buffer<T>, RuntimeError> {
        let bytes = byte_len::<T>(len)?;
        let repr = match &self.inner.imp {
            Imp::Cuda(c) => {
                let mut slice = c
                    .stream
                    .alloc_zeros(len)
                    .map_err(RuntimeError::driver("cuMemAllocAsync"))?;
                fill_cuda(&c.stream, &mut slice, value)?;
                BufferRepr::Cuda(slice)
            }
            Imp::Sim(s) => {
                let alloc = sim_alloc(s, len, bytes)?;
                let one = to_le_bytes(&[value]);
                s.sim.write(alloc.addr, &one.repeat(len))?;
                BufferRepr::Sim(alloc)
            }
        };
        Ok(Buffer::new(repr))
    }
}

/// Sets every element of `slice` to `value` on `stream`: a driver memset where the value's
/// bytes repeat every 1, 2 or 4 bytes, else a copy from the host.
fn fill_cuda<T: DeviceElement>(
    stream: &Arc<CudaStream>,
    slice: &mut CudaSlice<T>,
    value: T,
) -> Result<(), RuntimeError> {
    if slice.is_empty() {
        return Ok(());
    }
    let size = T::DTYPE.bytes();
    let bits = value.to_bits();
    let (lo, hi) = (bits as u32, (bits >> 32) as u32);
    if size <= 4 || lo == hi {
        memset_pattern(stream, slice, size.min(4), lo)
    } else {
        stream
            .memcpy_htod(&vec![value; slice.len()], slice)
            .map_err(RuntimeError::driver("cuMemcpyHtoDAsync"))
    }
}

/// Bytes of `len` elements of `T`, or `TooLarge`.
pub(super) fn byte_len<T: Element>(len: usize) -> Result<usize, RuntimeError> {
    len.checked_mul(T::DTYPE.bytes() as usize)
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or(RuntimeError::TooLarge {
            elems: len,
            dtype: T::DTYPE,
        })
}

/// Allocates `bytes` in the simulator; the contents are undefined (to its uninitialized-value
/// checker) until written. An empty buffer has an address of its own and no byte an access may
/// touch.
pub(super) fn sim_alloc(
    shared: &Arc<SimShared>,
    len: usize,
    bytes: usize,
) -> Result<SimAlloc, RuntimeError> {
    let addr = shared.sim.alloc(bytes)?;
    Ok(SimAlloc {
        shared: shared.clone(),
        addr,
        len,
    })
}

/// Elements as little-endian bytes (the simulator's memory order, as on the GPU).
pub(super) fn to_le_bytes<T: Element>(data: &[T]) -> Vec<u8> {
    let size = T::DTYPE.bytes() as usize;
    let mut out = Vec::with_capacity(data.len() * size);
    for v in data {
        out.extend_from_slice(&v.to_bits().to_le_bytes()[..size]);
    }
    out
}

/// One element from its little-endian bytes (`bytes.len()` is the element size).
fn element_from_le<T: Element>(bytes: &[u8]) -> T {
    let mut full = [0u8; 8];
    full[..bytes.len()].copy_from_slice(bytes);
    T::from_bits(u64::from_le_bytes(full))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn little_endian_round_trip() {
        let data = [-2i16, 300, i16::MIN];
        let bytes = to_le_bytes(&data);
        assert_eq!(bytes, vec![0xfe, 0xff, 0x2c, 0x01, 0x00, 0x80]);
        let back: Vec<i16> = bytes.chunks_exact(2).map(element_from_le::<i16>).collect();
        assert_eq!(back, data);
        let f = [1.5f64, -0.0];
        let back: Vec<f64> = to_le_bytes(&f)
            .chunks_exact(8)
            .map(element_from_le::<f64>)
            .collect();
        assert_eq!(back[0], 1.5);
        assert!(back[1].is_sign_negative());
    }

    #[test]
    fn byte_lengths_are_checked() {
        assert_eq!(byte_len::<f32>(10).ok(), Some(40));
        assert!(matches!(
            byte_len::<u64>(usize::MAX / 4),
            Err(RuntimeError::TooLarge {
                dtype: DType::U64,
                ..
            })
        ));
    }
}

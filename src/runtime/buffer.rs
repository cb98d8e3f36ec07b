//! Device buffers over both backends: a cudarc `CudaSlice<T>` on CUDA, an allocation in the
//! simulator's memory on the simulator.
//!
//! Every transfer checks lengths first (cudarc asserts on them), and a buffer remembers which
//! device it lives on, so passing it to a kernel of another device is an error at launch.

use std::fmt;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, DeviceRepr, ValidAsZeroBits};

use super::RuntimeError;
use super::device::{Device, Imp, SimShared};
use super::driver::memset_pattern;
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
            BufferRepr::Sim(a) => {
                let size = T::DTYPE.bytes() as usize;
                let mut bytes = vec![0u8; byte_len::<T>(a.len)?];
                a.shared.sim.read(a.addr, &mut bytes)?;
                Ok(bytes.chunks_exact(size).map(element_from_le::<T>).collect())
            }
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

    /// Wraps a cudarc slice. It keeps its context and stream; it can be passed to kernels
    /// compiled in that context.
    pub fn from_cuda(slice: CudaSlice<T>) -> Self {
        Buffer {
            repr: BufferRepr::Cuda(slice),
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
    pub fn as_cuda_mut(&mut self) -> Option<&mut CudaSlice<T>> {
        match &mut self.repr {
            BufferRepr::Cuda(s) => Some(s),
            BufferRepr::Sim(_) => None,
        }
    }

    /// The cudarc slice, when this is a CUDA buffer; the buffer itself otherwise.
    pub fn into_cuda(self) -> Result<CudaSlice<T>, Self> {
        match self.repr {
            BufferRepr::Cuda(s) => Ok(s),
            repr @ BufferRepr::Sim(_) => Err(Buffer { repr }),
        }
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
        Ok(Buffer { repr })
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
                let addr = s.sim.alloc_zeroed(bytes.max(1))?;
                BufferRepr::Sim(SimAlloc {
                    shared: s.clone(),
                    addr,
                    len,
                })
            }
        };
        Ok(Buffer { repr })
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
                let size = T::DTYPE.bytes();
                let bits = value.to_bits();
                let (lo, hi) = (bits as u32, (bits >> 32) as u32);
                if size <= 4 || lo == hi {
                    let mut slice = c
                        .stream
                        .alloc_zeros(len)
                        .map_err(RuntimeError::driver("cuMemAllocAsync"))?;
                    memset_pattern(&c.stream, &mut slice, size.min(4), lo)?;
                    BufferRepr::Cuda(slice)
                } else {
                    BufferRepr::Cuda(
                        c.stream
                            .clone_htod(&vec![value; len])
                            .map_err(RuntimeError::driver("cuMemcpyHtoDAsync"))?,
                    )
                }
            }
            Imp::Sim(s) => {
                let alloc = sim_alloc(s, len, bytes)?;
                let one = to_le_bytes(&[value]);
                s.sim.write(alloc.addr, &one.repeat(len))?;
                BufferRepr::Sim(alloc)
            }
        };
        Ok(Buffer { repr })
    }
}

/// Bytes of `len` elements of `T`, or `TooLarge`.
fn byte_len<T: Element>(len: usize) -> Result<usize, RuntimeError> {
    len.checked_mul(T::DTYPE.bytes() as usize)
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or(RuntimeError::TooLarge {
            elems: len,
            dtype: T::DTYPE,
        })
}

/// Allocates `bytes` (at least one, so every buffer has its own address) in the simulator; the
/// contents are undefined (to its uninitialized-value checker) until written.
fn sim_alloc(shared: &Arc<SimShared>, len: usize, bytes: usize) -> Result<SimAlloc, RuntimeError> {
    let addr = shared.sim.alloc(bytes.max(1))?;
    Ok(SimAlloc {
        shared: shared.clone(),
        addr,
        len,
    })
}

/// Elements as little-endian bytes (the simulator's memory order, as on the GPU).
fn to_le_bytes<T: Element>(data: &[T]) -> Vec<u8> {
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

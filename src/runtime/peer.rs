//! Copies between buffers, of one device or of two: the peer copy.
//!
//! Between two CUDA devices the copy is cudarc's `memcpy_dtod`, which for buffers of two
//! contexts issues `cuMemcpyPeerAsync` on the destination's stream after the source's stream
//! (the driver copies over NVLink or PCIe where the devices can reach each other, and stages
//! through the host where they cannot; peer access need not be enabled). Between two
//! simulators the bytes are read from one and written to the other. Between a GPU and a
//! simulator they go through the host.

use std::ops::Range;

use cudarc::driver::DeviceSlice;

use super::RuntimeError;
use super::buffer::{Buffer, DeviceElement, View, ViewMut, ViewMutRepr, ViewRepr, byte_len};

impl<T: DeviceElement> Buffer<T> {
    /// Overwrites this buffer with `src`, which may live on another device (a peer copy) or
    /// on this one; the lengths must be equal ([`RuntimeError::CopyLengthMismatch`]).
    /// Ordered after the work queued before it that writes `src` or this buffer.
    ///
    /// ```
    /// use coopgraph::runtime::{Device, RuntimeError};
    ///
    /// let devices = Device::sim_group(2);
    /// let a = devices[0].upload(&[1.5f32, 2.5])?;
    /// let mut b = devices[1].alloc_zeroed::<f32>(2)?;
    /// b.copy_from(&a)?;
    /// assert_eq!(b.to_vec()?, [1.5, 2.5]);
    /// let mut c = devices[1].alloc_zeroed::<f32>(3)?;
    /// assert!(matches!(c.copy_from(&a), Err(RuntimeError::CopyLengthMismatch { src: 2, dst: 3 })));
    /// # Ok::<(), RuntimeError>(())
    /// ```
    pub fn copy_from(&mut self, src: &Buffer<T>) -> Result<(), RuntimeError> {
        if src.len() != self.len() {
            return Err(RuntimeError::CopyLengthMismatch {
                src: src.len(),
                dst: self.len(),
            });
        }
        let len = src.len();
        self.copy_range_from(0, src, 0..len)
    }

    /// Copies `src[range]` (of any device) into this buffer's elements from `at` on. A range
    /// outside either buffer is [`RuntimeError::ViewOutOfRange`].
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    ///
    /// let devices = Device::sim_group(2);
    /// let a = devices[0].upload(&[1u64, 2, 3, 4])?;
    /// let mut b = devices[1].upload(&[0u64; 5])?;
    /// b.copy_range_from(2, &a, 1..4)?;
    /// assert_eq!(b.to_vec()?, [0, 0, 2, 3, 4]);
    /// assert!(b.copy_range_from(3, &a, 0..3).is_err());
    /// # Ok::<(), coopgraph::runtime::RuntimeError>(())
    /// ```
    pub fn copy_range_from(
        &mut self,
        at: usize,
        src: &Buffer<T>,
        range: Range<usize>,
    ) -> Result<(), RuntimeError> {
        let from = src.view(range.clone())?;
        let end = at.saturating_add(range.len());
        let mut to = self.view_mut(at..end)?;
        to.copy_from(&from)
    }
}

impl<T: DeviceElement> ViewMut<'_, T> {
    /// Overwrites the view with `src`, a view of a buffer of any device; the lengths must be
    /// equal ([`RuntimeError::CopyLengthMismatch`]).
    pub fn copy_from(&mut self, src: &View<'_, T>) -> Result<(), RuntimeError> {
        if src.len() != self.len() {
            return Err(RuntimeError::CopyLengthMismatch {
                src: src.len(),
                dst: self.len(),
            });
        }
        if src.is_empty() {
            return Ok(());
        }
        match (&src.repr, &mut self.repr) {
            (ViewRepr::Cuda(s), ViewMutRepr::Cuda(d)) => {
                let stream = d.stream().clone();
                stream
                    .memcpy_dtod(s, d)
                    .map_err(RuntimeError::driver("cuMemcpyPeerAsync"))
            }
            (ViewRepr::Sim(s), ViewMutRepr::Sim(d)) => {
                let mut bytes = vec![0u8; byte_len::<T>(s.len)?];
                s.shared.sim.read(s.addr, &mut bytes)?;
                Ok(d.shared.sim.write(d.addr, &bytes)?)
            }
            // A GPU and a simulator: through the host.
            (_, ViewMutRepr::Cuda(d)) => {
                let data = src.to_vec()?;
                let stream = d.stream().clone();
                stream
                    .memcpy_htod(&data, d)
                    .map_err(RuntimeError::driver("cuMemcpyHtoDAsync"))
            }
            (_, ViewMutRepr::Sim(d)) => {
                let data = src.to_vec()?;
                Ok(d.shared
                    .sim
                    .write(d.addr, &super::buffer::to_le_bytes(&data))?)
            }
        }
    }
}

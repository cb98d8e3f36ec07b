//! The communicator of one process: collectives by copies between the ranks' devices and a
//! combining kernel, issued one after another from the calling thread.

use super::kernels::{Operand, combine, launch_combine};
use super::{
    CommElement, CommError, Communicator, ReduceOp, check_all_reduce, check_all_to_all,
    check_broadcast, check_parts,
};
use crate::Error;
use crate::runtime::{Buffer, Device, DeviceElement};

/// A communicator of N ranks in one process, one device each: made over N simulated devices
/// ([`SimCommunicator::new`], what CI runs) or over any devices
/// ([`SimCommunicator::over`]: GPUs without NCCL, or several ranks sharing one GPU).
///
/// Data moves by [`Buffer::copy_from`] (peer copies between GPUs) and reductions run as an
/// element-wise kernel on the devices; nothing passes through the host.
///
/// Reduction order (so float results are the same bits on every run and every rank): an
/// all-reduce folds the ranks in rank order on rank 0, `((b0 op b1) op b2) op ...`, element by
/// element, and copies the result to the other ranks; a reduce-scatter folds block `r` of
/// every rank in rank order on rank `r`. (NCCL's ring folds in another order, so its float
/// sums may differ in the last bits.)
///
/// ```
/// use coopgraph::multi::{Communicator, ReduceOp, SimCommunicator};
///
/// let comm = SimCommunicator::new(3)?;
/// let send: Vec<_> = (0..3)
///     .map(|r| comm.device(r).upload(&[r as u64 + 1; 6]))
///     .collect::<Result<_, _>>()?;
/// let mut recv: Vec<_> = (0..3)
///     .map(|r| comm.device(r).alloc_zeroed::<u64>(2))
///     .collect::<Result<_, _>>()?;
/// comm.reduce_scatter(&send, &mut recv, ReduceOp::Prod)?;
/// assert_eq!(recv[2].to_vec()?, [6, 6]);
/// # Ok::<(), coopgraph::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct SimCommunicator {
    devices: Vec<Device>,
}

impl SimCommunicator {
    /// A communicator of `ranks` ranks, each on a simulated device of its own
    /// ([`Device::sim_group`]). No ranks is [`CommError::NoRanks`].
    pub fn new(ranks: usize) -> Result<SimCommunicator, Error> {
        SimCommunicator::over(Device::sim_group(ranks))
    }

    /// A communicator whose rank `r` runs on `devices[r]` (devices may repeat: ranks then
    /// share a device). No devices is [`CommError::NoRanks`].
    ///
    /// ```
    /// use coopgraph::multi::{Communicator, SimCommunicator};
    /// use coopgraph::runtime::Device;
    ///
    /// let one = Device::sim();
    /// let comm = SimCommunicator::over(vec![one.clone(), one])?;
    /// assert_eq!(comm.ranks(), 2);
    /// assert!(SimCommunicator::over(Vec::new()).is_err());
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn over(devices: Vec<Device>) -> Result<SimCommunicator, Error> {
        if devices.is_empty() {
            return Err(CommError::NoRanks.into());
        }
        Ok(SimCommunicator { devices })
    }
}

/// Copies rank `src`'s buffer over rank `dst`'s.
fn copy_rank<T: DeviceElement>(
    bufs: &mut [Buffer<T>],
    src: usize,
    dst: usize,
) -> Result<(), Error> {
    if src == dst {
        return Ok(());
    }
    let (from, to) = if src < dst {
        let (head, tail) = bufs.split_at_mut(dst);
        (&head[src], &mut tail[0])
    } else {
        let (head, tail) = bufs.split_at_mut(src);
        (&tail[0], &mut head[dst])
    };
    to.copy_from(from)?;
    Ok(())
}

impl Communicator for SimCommunicator {
    fn ranks(&self) -> usize {
        self.devices.len()
    }

    fn devices(&self) -> &[Device] {
        &self.devices
    }

    fn all_reduce<T: CommElement>(
        &self,
        bufs: &mut [Buffer<T>],
        op: ReduceOp,
    ) -> Result<(), Error> {
        let n = check_all_reduce(&self.devices, bufs)?;
        if n == 0 {
            return Ok(());
        }
        let root = &self.devices[0];
        let f = root.compile(&combine::<T>(op)?)?;
        let mut other = root.alloc_zeroed::<T>(n)?;
        let (acc, rest) = bufs.split_at_mut(1);
        for b in rest.iter() {
            other.copy_from(b)?;
            launch_combine(&f, &mut acc[0], &other, n, Operand::Elementwise)?;
        }
        for r in 1..bufs.len() {
            copy_rank(bufs, 0, r)?;
        }
        Ok(())
    }

    fn all_gather<T: DeviceElement>(
        &self,
        send: &[Buffer<T>],
        recv: &mut [Buffer<T>],
    ) -> Result<(), Error> {
        let m = check_parts(&self.devices, send, recv)?;
        for r in recv.iter_mut() {
            for (q, s) in send.iter().enumerate() {
                r.copy_range_from(q * m, s, 0..m)?;
            }
        }
        Ok(())
    }

    fn reduce_scatter<T: CommElement>(
        &self,
        send: &[Buffer<T>],
        recv: &mut [Buffer<T>],
        op: ReduceOp,
    ) -> Result<(), Error> {
        let m = check_parts(&self.devices, recv, send)?;
        if m == 0 {
            return Ok(());
        }
        let kernel = combine::<T>(op)?;
        for (r, (out, device)) in recv.iter_mut().zip(&self.devices).enumerate() {
            let block = r * m..(r + 1) * m;
            out.copy_range_from(0, &send[0], block.clone())?;
            let f = device.compile(&kernel)?;
            let mut other = device.alloc_zeroed::<T>(m)?;
            for s in &send[1..] {
                other.copy_range_from(0, s, block.clone())?;
                launch_combine(&f, out, &other, m, Operand::Elementwise)?;
            }
        }
        Ok(())
    }

    fn broadcast<T: DeviceElement>(
        &self,
        bufs: &mut [Buffer<T>],
        root: usize,
    ) -> Result<(), Error> {
        check_broadcast(&self.devices, bufs, root)?;
        for r in 0..self.ranks() {
            copy_rank(bufs, root, r)?;
        }
        Ok(())
    }

    fn all_to_all<T: DeviceElement>(
        &self,
        send: &[Buffer<T>],
        counts: &[Vec<usize>],
        recv: &mut [Buffer<T>],
    ) -> Result<Vec<usize>, Error> {
        let received = check_all_to_all(&self.devices, send, counts, recv)?;
        let mut at = vec![0usize; self.ranks()];
        for (s, row) in send.iter().zip(counts) {
            let mut from = 0;
            for ((d, out), &c) in recv.iter_mut().enumerate().zip(row) {
                out.copy_range_from(at[d], s, from..from + c)?;
                at[d] += c;
                from += c;
            }
        }
        Ok(received)
    }
}

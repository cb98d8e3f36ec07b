//! The temporary storage of the device-wide algorithms, reusable from call to call.

use super::AlgorithmError;
use crate::Error;
use crate::runtime::{Buffer, Device};

/// The largest epoch a status word holds (30 bits); past it the status words are cleared.
const MAX_EPOCH: u32 = (1 << 30) - 1;

/// Device memory the algorithms work in: the ticket counter (the scan's tiles and the
/// reduction's blocks take tickets from it), the scan's tile status words (four a tile for
/// 64-bit elements, whose values are published in halves beside their status), and the
/// reduction's per-block partials and the sort's digit counts. It grows
/// to what a call needs and is kept for the next one; a caller running many calls keeps one
/// and passes it each time (the convenience functions make a fresh one per call).
///
/// No call resets it on the device. The counter only grows (each call knows where its
/// tickets start), and every status word carries the epoch of the call that wrote it — a 30-bit
/// count of calls, bumped per call — so a status from an earlier call reads as not yet
/// published. The words are cleared only when the workspace grows, after 2^30 − 1 calls, and
/// after a call that failed (whose blocks may have stopped half way).
///
/// ```
/// use coopgraph::algorithms::{DeviceScan, Op, Workspace};
/// use coopgraph::runtime::Device;
///
/// let device = Device::sim();
/// let scan = DeviceScan::exclusive(Op::sum(), 0u32).prepare(&device)?;
/// let mut ws = Workspace::new(&device)?;
/// for len in [10, 5000, 7] {
///     let x = device.upload(&vec![2u32; len])?;
///     let mut y = device.alloc_zeroed::<u32>(len)?;
///     scan.run(&x, &mut y, &mut ws)?;
///     assert_eq!(y.to_vec()?, (0..len as u32).map(|i| 2 * i).collect::<Vec<u32>>());
/// }
/// assert_eq!(ws.calls(), 3);
/// # Ok::<(), coopgraph::Error>(())
/// ```
#[derive(Debug)]
pub struct Workspace {
    device: Device,
    /// Word 0: the ticket counter; then the tiles' status words (one a tile, or four for 64-bit
    /// elements).
    status: Buffer<u64>,
    /// The reduction's per-block partials, the sort's digit counts.
    values: Buffer<u64>,
    /// The word a call that returns a count to the host has it written to (made on first
    /// use).
    count: Option<Buffer<u32>>,
    counter: u64,
    epoch: u32,
    calls: u64,
    clean: bool,
    /// The segmented reduction's error word (made on first use), raised by an atomic
    /// maximum of `(flag_epoch << 32) | code`.
    flag: Option<Buffer<u64>>,
    flag_epoch: u32,
}

/// What one scan call gets from the workspace: its epoch and where its tiles start on the
/// counter.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ticket {
    pub epoch: u32,
    pub base: u64,
}

impl Workspace {
    /// A small workspace on `device`; it grows as calls need.
    pub fn new(device: &Device) -> Result<Workspace, Error> {
        Ok(Workspace {
            device: device.clone(),
            status: device.alloc_zeroed::<u64>(1)?,
            values: device.alloc_zeroed::<u64>(1)?,
            count: None,
            counter: 0,
            epoch: 0,
            calls: 0,
            clean: true,
            flag: None,
            flag_epoch: 0,
        })
    }

    /// Calls that have used it (see [`Workspace`] for an example).
    pub fn calls(&self) -> u64 {
        self.calls
    }

    /// Bytes of device memory it holds.
    ///
    /// ```
    /// use coopgraph::algorithms::Workspace;
    /// use coopgraph::runtime::Device;
    ///
    /// let device = Device::sim();
    /// let mut ws = Workspace::new(&device)?;
    /// assert_eq!(ws.bytes(), 16);
    /// let x = device.upload(&vec![1u64; 9000])?;
    /// let mut y = device.alloc_zeroed::<u64>(9000)?;
    /// let scan = coopgraph::algorithms::DeviceScan::inclusive(coopgraph::algorithms::Op::sum());
    /// scan.prepare(&device)?.run(&x, &mut y, &mut ws)?;
    /// // Three tiles of 4096 64-bit elements: the counter and four status words a tile (13,
    /// // rounded up to a power of two), and the one value word it started with.
    /// assert_eq!(ws.bytes(), 8 * (16 + 1));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn bytes(&self) -> usize {
        let flag = self.flag.as_ref().map_or(0, Buffer::len);
        let count = self.count.as_ref().map_or(0, |c| 4 * c.len());
        8 * (self.status.len() + self.values.len() + flag) + count
    }

    /// The one-word count buffer, taken out until [`put_count`](Self::put_count) returns it.
    pub(crate) fn take_count(&mut self) -> Result<Buffer<u32>, Error> {
        match self.count.take() {
            Some(c) => Ok(c),
            None => Ok(self.device.alloc_zeroed::<u32>(1)?),
        }
    }

    /// Gives the count buffer back.
    pub(crate) fn put_count(&mut self, count: Buffer<u32>) {
        self.count = Some(count);
    }

    /// Checks it is on `device`.
    pub(crate) fn check_device(&self, device: &Device) -> Result<(), Error> {
        if self.device.same_as(device) {
            Ok(())
        } else {
            Err(AlgorithmError::WrongDevice { what: "workspace" }.into())
        }
    }

    /// Makes room for `tiles` tiles and `values` value words, and takes the next call's
    /// ticket, with the status words and the value words. The call must report back with
    /// [`finish`](Self::finish).
    pub(crate) fn begin(
        &mut self,
        tiles: usize,
        values: usize,
    ) -> Result<(Ticket, &mut Buffer<u64>, &mut Buffer<u64>), Error> {
        if self.status.len() < tiles + 1 {
            let len = (tiles + 1).next_power_of_two();
            self.status = self.device.alloc_zeroed::<u64>(len)?;
            self.reset_counters();
        }
        if self.values.len() < values {
            let len = values.next_power_of_two();
            self.values = self.device.alloc_zeroed::<u64>(len)?;
        }
        if !self.clean || self.epoch >= MAX_EPOCH {
            self.status.fill(0)?;
            self.reset_counters();
        }
        self.epoch += 1;
        self.clean = false;
        let ticket = Ticket {
            epoch: self.epoch,
            base: self.counter,
        };
        Ok((ticket, &mut self.status, &mut self.values))
    }

    /// Records how the call went: on success its `tiles` tiles were taken from the counter;
    /// after a failure the status words are cleared before the next call.
    pub(crate) fn finish<R>(&mut self, tiles: usize, result: Result<R, Error>) -> Result<R, Error> {
        self.calls += 1;
        if result.is_ok() {
            self.counter = self.counter.wrapping_add(tiles as u64);
            self.clean = true;
        }
        result
    }

    /// The next call's error word and epoch. The word is never cleared between calls: a
    /// kernel raises it with an atomic maximum of `(epoch << 32) | code`, and a word from an
    /// earlier call carries a smaller epoch (the word is cleared when the 32-bit epoch would
    /// wrap).
    pub(crate) fn flag(&mut self) -> Result<(u32, &mut Buffer<u64>), Error> {
        let flag = match &mut self.flag {
            Some(f) => f,
            slot @ None => {
                self.flag_epoch = 0;
                slot.insert(self.device.alloc_zeroed::<u64>(1)?)
            }
        };
        if self.flag_epoch == u32::MAX {
            flag.fill(0)?;
            self.flag_epoch = 0;
        }
        self.flag_epoch += 1;
        self.calls += 1;
        Ok((self.flag_epoch, flag))
    }

    fn reset_counters(&mut self) {
        self.counter = 0;
        self.epoch = 0;
    }
}

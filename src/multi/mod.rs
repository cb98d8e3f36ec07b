//! Beyond one device: communicators with one rank per device, their collectives over one
//! [`Buffer`] per rank, and the device-wide algorithms over data spread across ranks.
//!
//! - Devices: [`Device::all`] opens every GPU, [`Device::sim_group`] makes several simulated
//!   devices (each its own device: a buffer of one is refused by kernels of another), and
//!   [`Buffer::copy_from`] copies between devices (a peer copy).
//! - [`Communicator`]: `ranks`, the rank devices, and the collectives [`all_reduce`],
//!   [`all_gather`], [`reduce_scatter`], [`broadcast`] and [`all_to_all`] (with per-rank
//!   counts). Implemented by [`SimCommunicator`] (in one process, by peer copies and a
//!   combining kernel on the devices: on simulated devices in CI, and over any devices) and,
//!   with the cargo feature `nccl`, by `NcclCommunicator` (one rank per GPU of this process,
//!   each collective one NCCL group on the ranks' device streams).
//! - Algorithms, each rank holding its slice: [`reduce`], [`inclusive_scan`] and
//!   [`exclusive_scan`] (sums) and [`inclusive_scan_with`] and [`exclusive_scan_with`] (any
//!   [`ReduceOp`]), [`sort_keys`] and [`sort_pairs`] (sample sort: local radix sorts,
//!   splitters by regular sampling, an all-to-all exchange; values move with their keys).
//!   Each runs over any [`Communicator`].
//!
//! [`all_reduce`]: Communicator::all_reduce
//! [`all_gather`]: Communicator::all_gather
//! [`reduce_scatter`]: Communicator::reduce_scatter
//! [`broadcast`]: Communicator::broadcast
//! [`all_to_all`]: Communicator::all_to_all
//!
//! ```
//! use coopgraph::multi::{self, Communicator, SimCommunicator};
//!
//! let comm = SimCommunicator::new(3)?;
//! let slices: [&[u32]; 3] = [&[9, 1, 7], &[], &[4, 8, 2, 6]];
//! let keys = slices
//!     .iter()
//!     .enumerate()
//!     .map(|(r, s)| comm.device(r).upload(s))
//!     .collect::<Result<Vec<_>, _>>()?;
//! assert_eq!(multi::reduce(&comm, &keys, multi::ReduceOp::Sum)?, Some(37));
//! let sorted = multi::sort_keys(&comm, &keys)?;
//! let mut all = Vec::new();
//! for run in &sorted {
//!     all.extend(run.to_vec()?);
//! }
//! assert_eq!(all, [1, 2, 4, 6, 7, 8, 9]);
//! # Ok::<(), coopgraph::Error>(())
//! ```
//!
//! Invariants: every collective checks its buffers (one per rank, on that rank's device,
//! lengths as the collective needs) before moving anything; the data stays on the devices
//! (the host reads only counts: the sort's partition sizes); each communicator documents its
//! reduction order (the [`SimCommunicator`]'s is fixed, so its float results are the same bits
//! on every run; NCCL picks its own).
//!
//! NCCL (cargo feature `nccl`): cudarc's bindings open `libnccl` at run time, as the driver
//! is opened, so the crate builds and everything else runs where NCCL is absent; the
//! communicator checks that the library opens before its first call and returns
//! [`CommError::NcclUnavailable`] where it does not. cudarc's loader looks for `libnccl.so`
//! (and names of CUDA's numbering), not NCCL's soname `libnccl.so.2`: where only the latter
//! is installed (the `nvidia-nccl-cu12`/`-cu13` Python packages), a `libnccl.so` link to it in
//! a directory on `LD_LIBRARY_PATH` makes it loadable. NCCL runs one rank per GPU, so on a
//! machine of one GPU a NCCL communicator has one rank; [`SimCommunicator::over`] runs
//! several ranks on one GPU, or GPUs without NCCL, by peer copies.

mod algorithms;
mod kernels;
#[cfg(feature = "nccl")]
mod nccl;
mod sim;

pub use crate::error::{CommError, ReduceOp};
pub use algorithms::{
    PairRuns, exclusive_scan, exclusive_scan_with, inclusive_scan, inclusive_scan_with, reduce,
    sort_keys, sort_pairs,
};
#[cfg(feature = "nccl")]
pub use nccl::NcclCommunicator;
pub use sim::SimCommunicator;

use crate::Error;
use crate::algorithms::{Op, ScanElement};
use crate::runtime::{Buffer, Device, DeviceElement, Foreign, RuntimeError};

impl ReduceOp {
    /// The operator of a device-wide reduction on one rank.
    pub(crate) fn op<T: CommElement>(self) -> Op<T> {
        match self {
            ReduceOp::Sum => Op::sum(),
            ReduceOp::Prod => Op::custom(|a, b| a * b),
            ReduceOp::Min => Op::min(),
            ReduceOp::Max => Op::max(),
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// An element type collectives reduce: the [`ScanElement`]s (`u32`, `i32`, `u64`, `i64`,
/// `f32`, `f64`), each with the identity of every [`ReduceOp`] (what a rank of no elements
/// contributes): a float sum's is `-0.0`, which leaves every float as it is (`+0.0` would make
/// a sum of negative zeros positive).
///
/// ```
/// use coopgraph::multi::{CommElement, ReduceOp};
///
/// assert_eq!(<i32 as CommElement>::identity(ReduceOp::Min), i32::MAX);
/// assert_eq!(<f32 as CommElement>::identity(ReduceOp::Max), f32::NEG_INFINITY);
/// assert_eq!(<f64 as CommElement>::identity(ReduceOp::Sum).to_bits(), (-0.0f64).to_bits());
/// ```
pub trait CommElement: ScanElement + sealed::Sealed {
    /// `e` with `e op x == x` for every `x`.
    fn identity(op: ReduceOp) -> Self;
}

macro_rules! comm_element {
    ($($t:ty => $min:expr, $max:expr;)*) => {$(
        impl sealed::Sealed for $t {}
        impl CommElement for $t {
            fn identity(op: ReduceOp) -> Self {
                match op {
                    ReduceOp::Sum => crate::algorithms::sum_identity(),
                    ReduceOp::Prod => 1 as $t,
                    ReduceOp::Min => $max,
                    ReduceOp::Max => $min,
                }
            }
        }
    )*};
}

comm_element! {
    u32 => u32::MIN, u32::MAX;
    i32 => i32::MIN, i32::MAX;
    u64 => u64::MIN, u64::MAX;
    i64 => i64::MIN, i64::MAX;
    f32 => f32::NEG_INFINITY, f32::INFINITY;
    f64 => f64::NEG_INFINITY, f64::INFINITY;
}

/// A group of ranks, one device each, and the collectives among them. Every collective takes
/// one buffer per rank (index `r` for rank `r`, on rank `r`'s device) and returns once the
/// result can be read on every rank (later work on a rank's device is ordered after it).
///
/// ```
/// use coopgraph::multi::{Communicator, ReduceOp, SimCommunicator};
///
/// let comm = SimCommunicator::new(2)?;
/// let mut x = vec![comm.device(0).upload(&[1.5f32, 3.0])?, comm.device(1).upload(&[2.0f32, -1.0])?];
/// comm.all_reduce(&mut x, ReduceOp::Max)?;
/// assert_eq!((x[0].to_vec()?, x[1].to_vec()?), (vec![2.0, 3.0], vec![2.0, 3.0]));
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub trait Communicator {
    /// The number of ranks.
    fn ranks(&self) -> usize;

    /// The device of each rank, by rank.
    fn devices(&self) -> &[Device];

    /// The device of `rank` (`rank < ranks()`; a rank past the end panics, as indexing does).
    fn device(&self, rank: usize) -> &Device {
        &self.devices()[rank]
    }

    /// Replaces every rank's buffer (all of rank 0's length) by the element-wise reduction
    /// over the ranks with `op`.
    fn all_reduce<T: CommElement>(&self, bufs: &mut [Buffer<T>], op: ReduceOp)
    -> Result<(), Error>;

    /// Writes every rank's `send` (all of rank 0's length `m`) to every rank's `recv` (of
    /// `ranks * m` elements): rank `q`'s at `q * m`.
    fn all_gather<T: DeviceElement>(
        &self,
        send: &[Buffer<T>],
        recv: &mut [Buffer<T>],
    ) -> Result<(), Error>;

    /// Reduces the ranks' `send` buffers (of `ranks * m` elements, `m` the length of every
    /// `recv`) element-wise with `op` and leaves block `r` (elements `r * m ..`) of the result
    /// in rank `r`'s `recv`.
    fn reduce_scatter<T: CommElement>(
        &self,
        send: &[Buffer<T>],
        recv: &mut [Buffer<T>],
        op: ReduceOp,
    ) -> Result<(), Error>;

    /// Copies rank `root`'s buffer to every other rank's (all of one length).
    fn broadcast<T: DeviceElement>(&self, bufs: &mut [Buffer<T>], root: usize)
    -> Result<(), Error>;

    /// Rank `s` sends `counts[s][d]` elements to rank `d`, taken from its `send` in order of
    /// `d` (the first `counts[s][0]` to rank 0, the next to rank 1, ...); rank `d` receives
    /// them at the front of its `recv` in order of `s`. Returns the elements each rank
    /// received (its `recv` may be longer; the rest is left alone).
    fn all_to_all<T: DeviceElement>(
        &self,
        send: &[Buffer<T>],
        counts: &[Vec<usize>],
        recv: &mut [Buffer<T>],
    ) -> Result<Vec<usize>, Error>;
}

/// Checks the buffers of an all-reduce; returns their length.
pub(crate) fn check_all_reduce<T: DeviceElement>(
    devices: &[Device],
    bufs: &[Buffer<T>],
) -> Result<usize, Error> {
    check_ranks(devices, bufs)?;
    let n = bufs[0].len();
    check_lengths(bufs, |_| n)?;
    Ok(n)
}

/// Checks the buffers of an all-gather (`part` the send buffers, `whole` the receive
/// buffers) or of a reduce-scatter (the other way round); returns the length of a part.
pub(crate) fn check_parts<T: DeviceElement>(
    devices: &[Device],
    part: &[Buffer<T>],
    whole: &[Buffer<T>],
) -> Result<usize, Error> {
    check_ranks(devices, part)?;
    check_ranks(devices, whole)?;
    let m = part[0].len();
    check_lengths(part, |_| m)?;
    let total = m.saturating_mul(devices.len());
    check_lengths(whole, |_| total)?;
    Ok(m)
}

/// Checks the buffers and the root of a broadcast; returns their length.
pub(crate) fn check_broadcast<T: DeviceElement>(
    devices: &[Device],
    bufs: &[Buffer<T>],
    root: usize,
) -> Result<usize, Error> {
    check_ranks(devices, bufs)?;
    let ranks = devices.len();
    if root >= ranks {
        return Err(CommError::Root { root, ranks }.into());
    }
    let n = bufs[root].len();
    check_lengths(bufs, |_| n)?;
    Ok(n)
}

/// Checks the buffers and counts of an all-to-all; returns what each rank receives.
pub(crate) fn check_all_to_all<T: DeviceElement>(
    devices: &[Device],
    send: &[Buffer<T>],
    counts: &[Vec<usize>],
    recv: &[Buffer<T>],
) -> Result<Vec<usize>, Error> {
    check_ranks(devices, send)?;
    check_ranks(devices, recv)?;
    check_counts(send, counts, recv)
}

/// Checks that `bufs` holds one buffer per rank, each on its rank's device.
pub(crate) fn check_ranks<T: DeviceElement>(
    devices: &[Device],
    bufs: &[Buffer<T>],
) -> Result<(), Error> {
    if bufs.len() != devices.len() {
        return Err(CommError::RankCount {
            ranks: devices.len(),
            given: bufs.len(),
        }
        .into());
    }
    for (rank, (b, d)) in bufs.iter().zip(devices).enumerate() {
        if !b.is_on(d) {
            let what = Foreign::RankBuffer { rank };
            return Err(RuntimeError::WrongDevice { what }.into());
        }
    }
    Ok(())
}

/// Checks that every rank's buffer holds `want(rank)` elements.
pub(crate) fn check_lengths<T: DeviceElement>(
    bufs: &[Buffer<T>],
    want: impl Fn(usize) -> usize,
) -> Result<(), Error> {
    for (rank, b) in bufs.iter().enumerate() {
        let want = want(rank);
        if b.len() != want {
            let len = b.len();
            return Err(CommError::Length { rank, len, want }.into());
        }
    }
    Ok(())
}

/// Checks the counts of an all-to-all and returns what each rank receives.
fn check_counts<T: DeviceElement>(
    send: &[Buffer<T>],
    counts: &[Vec<usize>],
    recv: &[Buffer<T>],
) -> Result<Vec<usize>, Error> {
    let ranks = send.len();
    if counts.len() != ranks {
        let given = counts.len();
        return Err(CommError::RankCount { ranks, given }.into());
    }
    let mut received = vec![0usize; ranks];
    for (rank, row) in counts.iter().enumerate() {
        if row.len() != ranks {
            let given = row.len();
            return Err(CommError::CountRow { rank, given, ranks }.into());
        }
        let counted = row.iter().try_fold(0usize, |a, &c| a.checked_add(c));
        let len = send[rank].len();
        match counted {
            Some(counted) if counted <= len => {}
            counted => {
                let counted = counted.unwrap_or(usize::MAX);
                return Err(CommError::CountsExceed { rank, counted, len }.into());
            }
        }
        for (d, &c) in row.iter().enumerate() {
            // Cannot overflow: each row's sum fits.
            received[d] = received[d].saturating_add(c);
        }
    }
    for (rank, (&need, b)) in received.iter().zip(recv).enumerate() {
        if need > b.len() {
            let len = b.len();
            return Err(CommError::ReceiveTooShort { rank, need, len }.into());
        }
    }
    Ok(received)
}

//! The errors of communicators and multi-rank algorithms.

use std::fmt;

/// Arguments a collective or a multi-rank algorithm refuses before moving anything, and the
/// failures of a communicator's library (reported as
/// [`Error::Comm`](crate::Error::Comm)). A buffer given for a rank but living on another
/// device is [`RuntimeError::WrongDevice`](crate::runtime::RuntimeError::WrongDevice) with
/// [`Foreign::RankBuffer`](crate::runtime::Foreign::RankBuffer).
///
/// ```
/// use coopgraph::multi::{CommError, Communicator, ReduceOp, SimCommunicator};
/// use coopgraph::Error;
///
/// let comm = SimCommunicator::new(2)?;
/// let mut one = vec![comm.device(0).upload(&[1u32])?];
/// let e = comm.all_reduce(&mut one, ReduceOp::Sum).unwrap_err();
/// assert!(matches!(e, Error::Comm(CommError::RankCount { ranks: 2, given: 1 })));
/// # Ok::<(), coopgraph::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommError {
    /// A communicator of no ranks was asked for.
    NoRanks,
    /// A collective got a number of buffers (or of count rows) other than one per rank.
    RankCount {
        /// Ranks of the communicator.
        ranks: usize,
        /// Buffers given.
        given: usize,
    },
    /// A rank's buffer does not have the length the collective needs (every rank's buffer of
    /// an all-reduce or a broadcast has rank 0's length; an all-gather's receive buffers hold
    /// `ranks` times the send length; a reduce-scatter's send buffers `ranks` times the
    /// receive length).
    Length {
        /// The rank whose buffer is wrong.
        rank: usize,
        /// Its length.
        len: usize,
        /// The length wanted.
        want: usize,
    },
    /// The root of a broadcast is not a rank.
    Root {
        /// The root asked for.
        root: usize,
        /// Ranks of the communicator.
        ranks: usize,
    },
    /// A rank's row of all-to-all counts does not have one count per rank.
    CountRow {
        /// The sending rank.
        rank: usize,
        /// Counts in its row.
        given: usize,
        /// Ranks of the communicator.
        ranks: usize,
    },
    /// A rank's all-to-all counts add up to more elements than its send buffer holds.
    CountsExceed {
        /// The sending rank.
        rank: usize,
        /// The sum of its counts.
        counted: usize,
        /// Its send buffer's length.
        len: usize,
    },
    /// A rank's all-to-all receive buffer is shorter than what the others send it.
    ReceiveTooShort {
        /// The receiving rank.
        rank: usize,
        /// Elements sent to it.
        need: usize,
        /// Its receive buffer's length.
        len: usize,
    },
    /// Two ranks of a NCCL communicator were given one GPU (NCCL runs one rank per GPU).
    DuplicateDevice {
        /// The GPU's ordinal.
        ordinal: usize,
    },
    /// A NCCL communicator needs CUDA devices; this rank's is a simulator.
    NotCuda {
        /// The rank.
        rank: usize,
    },
    /// The NCCL library (`libnccl.so`) could not be loaded.
    NcclUnavailable,
    /// A NCCL call failed.
    Nccl {
        /// The call, e.g. `ncclAllReduce`.
        call: &'static str,
        /// Its `ncclResult_t`.
        code: u32,
    },
}

impl fmt::Display for CommError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use CommError as E;
        match self {
            E::NoRanks => f.write_str("a communicator needs at least one rank"),
            E::RankCount { ranks, given } => write!(
                f,
                "the communicator has {ranks} ranks but {given} buffers (or count rows) were given"
            ),
            E::Length { rank, len, want } => write!(
                f,
                "the buffer of rank {rank} holds {len} elements; the collective needs {want}"
            ),
            E::Root { root, ranks } => {
                write!(f, "root {root} is not a rank of a communicator of {ranks}")
            }
            E::CountRow { rank, given, ranks } => write!(
                f,
                "rank {rank} gave {given} all-to-all counts; one per rank ({ranks}) is needed"
            ),
            E::CountsExceed { rank, counted, len } => write!(
                f,
                "rank {rank} sends {counted} elements but its buffer holds {len}"
            ),
            E::ReceiveTooShort { rank, need, len } => write!(
                f,
                "rank {rank} receives {need} elements but its buffer holds {len}"
            ),
            E::DuplicateDevice { ordinal } => write!(
                f,
                "two ranks of a NCCL communicator were given GPU {ordinal} (one rank per GPU)"
            ),
            E::NotCuda { rank } => {
                write!(f, "rank {rank} of a NCCL communicator is not a CUDA device")
            }
            E::NcclUnavailable => f.write_str("the NCCL library (libnccl) could not be loaded"),
            E::Nccl { call, code } => write!(f, "{call} failed with ncclResult_t {code}"),
        }
    }
}

impl std::error::Error for CommError {}

//! The top-level error: one variant per stage, each wrapping that stage's typed error.
//!
//! Every error of the crate prints each cause once: an error's `Display` is complete by itself,
//! and `source()` returns only a cause whose text that `Display` does not already hold. A
//! wrapper (this [`Error`], or [`RuntimeError::Sim`](crate::runtime::RuntimeError::Sim)) shows
//! the wrapped error's text and hands on the wrapped error's own source, so a reporter that
//! prints an error and then each `source()` in turn never repeats a line.

use std::fmt;

use crate::ir::DType;

/// Any error coopgraph returns. Each variant wraps the typed error of one stage (match on it to
/// get the stage's error). `Display` is the stage error's text, and `source()` the stage
/// error's source: the wrapper adds no line of its own.
///
/// Every error of the crate prints each cause once: an error's `Display` is complete by itself,
/// and `source()` returns only a cause whose text that `Display` does not already hold. A
/// wrapper (this [`Error`], or [`RuntimeError::Sim`](crate::runtime::RuntimeError::Sim)) shows
/// the wrapped error's text and hands on the wrapped error's own source, so a reporter that
/// prints an error and then each `source()` in turn never repeats a line.
///
/// ```
/// use coopgraph::ir::VerifyErrorKind;
/// use coopgraph::{Error, KernelBuilder, Load, Store};
///
/// let mut k = KernelBuilder::new("bad").items_per_thread(0);
/// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
/// let b = k.this_block();
/// let t = k.load_from(b, &x, Load::direct());
/// k.store_to(b, &y, &t, Store::direct());
/// match k.build() {
///     Err(Error::Verify(e)) => {
///         assert!(matches!(e.errors[0].kind, VerifyErrorKind::ItemsPerThread { items: 0, .. }));
///         // The text is the verifier's: the error, then the kernel's listing.
///         assert_eq!(Error::Verify(e.clone()).to_string(), e.to_string());
///     }
///     other => panic!("{other:?}"),
/// }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The kernel did not verify: every error, with the kernel's listing.
    Verify(crate::ir::VerifyErrors),
    /// The kernel verified but could not be planned.
    Plan(crate::planner::PlanError),
    /// Loading, caching or launching failed.
    Runtime(crate::runtime::RuntimeError),
    /// Autotuning found no candidate that works.
    Tune(crate::runtime::TuneError<Error>),
    /// A device-wide algorithm refused its arguments.
    Algorithm(AlgorithmError),
    /// A collective or a multi-rank algorithm refused its arguments.
    Comm(CommError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Verify(e) => e.fmt(f),
            Error::Plan(e) => e.fmt(f),
            Error::Runtime(e) => e.fmt(f),
            Error::Tune(e) => e.fmt(f),
            Error::Algorithm(e) => e.fmt(f),
            Error::Comm(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Verify(e) => e.source(),
            Error::Plan(e) => e.source(),
            Error::Runtime(e) => e.source(),
            Error::Tune(e) => e.source(),
            Error::Algorithm(e) => e.source(),
            Error::Comm(e) => e.source(),
        }
    }
}

/// A kernel that cannot be emitted for a device's architecture
/// ([`RuntimeError::Plan`](crate::runtime::RuntimeError::Plan)) becomes [`Error::Plan`], as one
/// that cannot be planned at all does; every other runtime error is [`Error::Runtime`].
impl From<crate::runtime::RuntimeError> for Error {
    fn from(e: crate::runtime::RuntimeError) -> Self {
        match e {
            crate::runtime::RuntimeError::Plan(e) => Error::Plan(e),
            e => Error::Runtime(e),
        }
    }
}

impl From<crate::runtime::TuneError<Error>> for Error {
    fn from(e: crate::runtime::TuneError<Error>) -> Self {
        Error::Tune(e)
    }
}

impl From<AlgorithmError> for Error {
    fn from(e: AlgorithmError) -> Self {
        Error::Algorithm(e)
    }
}

impl From<crate::ir::VerifyErrors> for Error {
    fn from(e: crate::ir::VerifyErrors) -> Self {
        Error::Verify(e)
    }
}

impl From<crate::planner::PlanError> for Error {
    fn from(e: crate::planner::PlanError) -> Self {
        Error::Plan(e)
    }
}

/// Arguments a device-wide algorithm refuses before building or launching anything
/// (reported as [`Error::Algorithm`]; defined here, beside the top-level error, and
/// re-exported by `algorithms`, so that the two modules do not import each other).
///
/// ```
/// use coopgraph::algorithms::{self, AlgorithmError};
/// use coopgraph::runtime::Device;
/// use coopgraph::Error;
///
/// let device = Device::sim();
/// let x = device.upload(&[1u32, 2, 3])?;
/// let mut y = device.alloc_zeroed::<u32>(2)?;
/// let e = algorithms::inclusive_scan(&device, &x, &mut y).unwrap_err();
/// assert!(matches!(
///     e,
///     Error::Algorithm(AlgorithmError::OutputTooShort { input: 3, output: 2 })
/// ));
/// # Ok::<(), coopgraph::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AlgorithmError {
    /// The output holds fewer elements than the input.
    OutputTooShort {
        /// Elements of the input.
        input: usize,
        /// Elements of the output.
        output: usize,
    },
    /// More elements than one call handles (element indices are 32-bit).
    TooLong {
        /// Elements given.
        len: usize,
        /// The most a call takes.
        max: usize,
    },
    /// A tuning the kernels cannot take: threads must be a multiple of 32 from 32 to 1024,
    /// items 1 to 64.
    Tuning {
        /// Threads per block asked for.
        threads: u32,
        /// Items per thread asked for.
        items: u32,
    },
    /// A buffer or workspace on another device than the algorithm was prepared for.
    WrongDevice {
        /// Which argument.
        what: &'static str,
    },
    /// A flagged selection run without flags, or another selection run with them.
    Flags {
        /// Whether the selection takes flags.
        flagged: bool,
    },
    /// A radix sort's bit range that is empty or passes the key's width.
    BitRange {
        /// The first bit asked for.
        begin: u32,
        /// One past the last bit asked for.
        end: u32,
        /// The key's width in bits.
        key_bits: u32,
    },
    /// Values to sort beside keys whose count is not the keys'.
    ValuesLength {
        /// Keys given.
        keys: usize,
        /// Values given.
        values: usize,
    },
    /// A histogram of no bins.
    NoBins,
    /// Even histogram levels whose lower level is not below the upper one (or is NaN).
    LevelsNotIncreasing,
    /// Even integer levels too far apart for exact binning: `(upper - lower) * bins` must
    /// stay below 2^64.
    BinningOverflow {
        /// The histogram's bins.
        bins: u32,
    },
    /// A histogram run with levels of the other binning than it was prepared for.
    Binning {
        /// The binning it was prepared for.
        prepared: HistogramBinning,
        /// The binning of the run.
        binning: HistogramBinning,
    },
    /// Histogram counts of another length than the histogram's bins.
    CountsLength {
        /// The histogram's bins.
        bins: u32,
        /// Elements of the counts.
        given: usize,
    },
    /// A histogram's levels buffer of another length than its bins plus one.
    LevelCount {
        /// Levels the histogram takes.
        want: usize,
        /// Elements of the levels buffer.
        given: usize,
    },
    /// Segment offsets out of order or past the end of the input: `segment` is the first
    /// segment whose `offsets[segment] <= offsets[segment + 1] <= len` fails (found on the
    /// device; no element outside the input was read).
    Offsets {
        /// The first such segment.
        segment: usize,
    },
}

impl fmt::Display for AlgorithmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AlgorithmError::OutputTooShort { input, output } => write!(
                f,
                "the output holds {output} elements, fewer than the input's {input}"
            ),
            AlgorithmError::TooLong { len, max } => {
                write!(f, "{len} elements; one call takes at most {max}")
            }
            AlgorithmError::Tuning { threads, items } => write!(
                f,
                "a tuning of {threads} threads x {items} items; threads must be a multiple of \
                 32 from 32 to 1024 and items 1 to 64"
            ),
            AlgorithmError::WrongDevice { what } => {
                write!(f, "the {what} is on another device than the algorithm's")
            }
            AlgorithmError::Flags { flagged: true } => {
                write!(f, "a flagged selection runs with flags (`run_flagged`)")
            }
            AlgorithmError::Flags { flagged: false } => {
                write!(f, "only a flagged selection takes flags (`run`)")
            }
            AlgorithmError::BitRange {
                begin,
                end,
                key_bits,
            } => write!(
                f,
                "sort bits {begin}..{end} of {key_bits}-bit keys; the range must be non-empty \
                 and end within the key"
            ),
            AlgorithmError::ValuesLength { keys, values } => {
                write!(
                    f,
                    "{values} values beside {keys} keys; each key needs one value"
                )
            }
            AlgorithmError::NoBins => f.write_str("a histogram of no bins"),
            AlgorithmError::LevelsNotIncreasing => {
                f.write_str("the histogram's lower level is not below its upper level")
            }
            AlgorithmError::BinningOverflow { bins } => write!(
                f,
                "the histogram's levels are too far apart for exact binning into {bins} bins \
                 ((upper - lower) * bins must stay below 2^64)"
            ),
            AlgorithmError::Binning { prepared, binning } => write!(
                f,
                "a histogram prepared for {prepared:?} levels run with {binning:?} levels"
            ),
            AlgorithmError::CountsLength { bins, given } => write!(
                f,
                "the histogram has {bins} bins but its counts hold {given} elements"
            ),
            AlgorithmError::LevelCount { want, given } => {
                write!(f, "the histogram takes {want} levels, not {given}")
            }
            AlgorithmError::Offsets { segment } => write!(
                f,
                "segment {segment}'s offsets are out of order or past the end of the input"
            ),
        }
    }
}

impl std::error::Error for AlgorithmError {}

/// How samples find their bins.
///
/// ```
/// use coopgraph::algorithms::{DeviceHistogram, HistogramBinning};
///
/// assert_eq!(DeviceHistogram::<f32>::range(10).binning(), HistogramBinning::Range);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HistogramBinning {
    /// `bins` equal bins between a lower and an upper level (launch arguments).
    Even,
    /// Bin `i` is `[levels[i], levels[i + 1])`, from a buffer of `bins + 1` ascending levels,
    /// found by binary search.
    Range,
}

/// The operator of a reduction across ranks (defined here, beside [`CommError`], which names
/// it, and re-exported by `multi`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// The sum (wrapping for integers).
    Sum,
    /// The product (wrapping for integers).
    Prod,
    /// The minimum (for floats, the non-NaN one when one is NaN).
    Min,
    /// The maximum (for floats, the non-NaN one when one is NaN).
    Max,
}

/// Arguments a collective or a multi-rank algorithm refuses before moving anything (reported as
/// [`Error::Comm`]; defined here, beside the top-level error, and re-exported by `multi`, so
/// that the two modules do not import each other). A buffer given for a rank but living on another
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
    /// A NCCL communicator was asked for over a device that is not a CUDA GPU (a simulator).
    NotCuda {
        /// The rank whose device it is.
        rank: usize,
    },
    /// Two ranks of a NCCL communicator were given one GPU (NCCL runs one rank per GPU).
    SharedDevice {
        /// The later rank.
        rank: usize,
        /// The earlier rank on the same GPU.
        first: usize,
    },
    /// The NCCL library could not be loaded (none of the file names tried opens, or one
    /// lacks an entry point the communicator calls).
    NcclUnavailable {
        /// The file names tried, in order.
        tried: Vec<String>,
        /// The entry point missing from the library that opened, if one opened.
        missing: Option<&'static str>,
    },
    /// NCCL has no reduction of this element type (e.g. 16-bit integers).
    NcclUnsupported {
        /// The element type.
        dtype: DType,
        /// The reduction asked for.
        op: ReduceOp,
    },
    /// A NCCL call failed.
    Nccl {
        /// The NCCL entry point.
        call: &'static str,
        /// NCCL's result code (`ncclResult_t`).
        code: u32,
        /// NCCL's description of the code (`ncclGetErrorString`).
        message: String,
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
            E::NotCuda { rank } => write!(
                f,
                "the device of rank {rank} is not a CUDA GPU; NCCL runs on GPUs only"
            ),
            E::SharedDevice { rank, first } => write!(
                f,
                "ranks {first} and {rank} were given one GPU; NCCL runs one rank per GPU"
            ),
            E::NcclUnavailable {
                tried,
                missing: None,
            } => write!(
                f,
                "the NCCL library could not be loaded (tried {}); put the directory of a \
                 `libnccl.so` on LD_LIBRARY_PATH (a symbolic link to `libnccl.so.2` will do)",
                tried.join(", ")
            ),
            E::NcclUnavailable {
                missing: Some(name),
                ..
            } => write!(f, "the NCCL library that was loaded has no `{name}`"),
            E::NcclUnsupported { dtype, op } => {
                write!(f, "NCCL has no {op:?} reduction of {dtype} elements")
            }
            E::Nccl {
                call,
                code,
                message,
            } => write!(f, "{call} failed: NCCL error {code} ({message})"),
        }
    }
}

impl std::error::Error for CommError {}

impl From<CommError> for Error {
    fn from(e: CommError) -> Self {
        Error::Comm(e)
    }
}

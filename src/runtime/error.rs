//! Errors of the runtime: opening a device, moving data, loading a module, launching.

use std::fmt;

use cudarc::driver::DriverError;

use crate::ir::{DType, Loc};

use super::args::ArgKind;
use super::checks::CheckFailure;
use super::image::ParamLayout;

/// An error from the runtime: opening a device, moving data, loading a module, or launching.
///
/// `Display` never calls into the driver. (`Debug` of a driver error asks the driver for the
/// error's description; driver errors only exist where a driver was loaded.)
#[derive(Debug)]
#[non_exhaustive]
pub enum RuntimeError {
    /// No CUDA driver library (`libcuda`) could be loaded on this machine.
    NoDriver,
    /// The CUDA driver library lacks an entry point the runtime calls (the driver is too old).
    MissingDriverSymbol {
        /// The missing entry point, e.g. `cuLaunchCooperativeKernel`.
        name: &'static str,
    },
    /// The driver is present but has no device with this ordinal.
    NoDevice {
        /// The ordinal asked for.
        ordinal: usize,
    },
    /// The device is older than every architecture code generation supports.
    UnsupportedDevice {
        /// The device's ordinal.
        ordinal: usize,
        /// Its compute capability `(major, minor)`.
        compute_capability: (i32, i32),
    },
    /// `COOPGRAPH_DEVICE` holds a value that names no backend.
    EnvVar {
        /// The value found.
        value: String,
    },
    /// A driver call failed.
    Driver {
        /// The driver (or cudarc) call that failed.
        call: &'static str,
        /// The driver's error.
        code: DriverError,
    },
    /// The driver's JIT rejected the PTX.
    Jit {
        /// The JIT's error log (and info log, when it wrote one).
        log: String,
        /// The PTX text that failed to load.
        ptx: String,
        /// The driver's error.
        code: DriverError,
    },
    /// The PTX text contains a NUL byte, so it cannot be handed to the driver.
    PtxNul {
        /// Byte offset of the first NUL.
        offset: usize,
    },
    /// The loaded module has no entry with the image's name.
    MissingEntry {
        /// The entry name looked for.
        entry: String,
    },
    /// The PTX entry's parameters differ in number, size or offset from the image's
    /// signature.
    SignatureMismatch {
        /// The entry.
        entry: String,
        /// Each parameter as the PTX declares it.
        declared: Vec<ParamLayout>,
        /// Each parameter as the signature implies it
        /// ([`ImageParts::param_layout`](super::ImageParts::param_layout)).
        expected: Vec<ParamLayout>,
    },
    /// A hidden parameter of the image names no buffer parameter (a malformed image).
    HiddenParam {
        /// The entry.
        entry: String,
        /// The hidden parameter's position among the hidden ones.
        index: usize,
    },
    /// A safe launch of a kernel built without bounds checks: only the unsafe
    /// [`Function::launch_unchecked`](super::Function::launch_unchecked) launches it.
    UncheckedKernel {
        /// The entry.
        entry: String,
    },
    /// A debug check of a kernel built with debug checks failed during the launch: an index
    /// past its buffer's end, valid items past it, or an assertion (the first failure of the
    /// launch, with its op, line and thread).
    CheckFailed(Box<CheckFailure>),
    /// A kernel with debug checks was launched into a stream that captures a graph: its
    /// checks are read after each launch, which a graph's replays do not do.
    CheckedKernelCaptured {
        /// The entry.
        entry: String,
    },
    /// A cooperative kernel (one with grid barriers) launched into a stream that captures a
    /// graph: its barrier word is allocated for each launch, which a replayed graph cannot
    /// do. Launch it outside the capture.
    CooperativeKernelCaptured {
        /// The entry.
        entry: String,
    },
    /// A launch passed the wrong number of arguments.
    ArgCount {
        /// Parameters the kernel declares.
        expected: usize,
        /// Arguments passed.
        got: usize,
    },
    /// A launch argument does not fit its parameter (dtype or role).
    ArgMismatch {
        /// Position of the argument (0-based).
        index: usize,
        /// The parameter's name.
        name: String,
        /// What the parameter takes.
        expected: ArgKind,
        /// What was passed.
        got: ArgKind,
    },
    /// The launch's block shape differs from the one the kernel was built for.
    BlockMismatch {
        /// The kernel's block shape.
        expected: [u32; 3],
        /// The block shape asked for.
        got: [u32; 3],
    },
    /// The kernel's block is empty or has more threads than the device allows per block.
    BlockTooLarge {
        /// The kernel's block shape.
        block: [u32; 3],
        /// Most threads per block on the device.
        max_threads: u32,
    },
    /// [`Function::launch_over`](super::Function::launch_over) on a kernel whose image
    /// declares no elements per tile.
    ZeroTile {
        /// The kernel's entry.
        entry: String,
    },
    /// The grid is empty or beyond the device's grid limits.
    GridTooLarge {
        /// The grid asked for (for `launch_over`, the x extent that would be needed, saturated
        /// at `u64::MAX`).
        grid: [u64; 3],
        /// The largest grid extent per dimension.
        max: [u64; 3],
        /// Where the launch (or `config_over`) was called.
        at: Loc,
    },
    /// A launch grid extends along a dimension the kernel does not tell blocks apart by:
    /// blocks that differ only there would repeat the work of others and race with them on
    /// every output.
    GridDimensionUnseen {
        /// The kernel's entry.
        entry: String,
        /// The grid asked for.
        grid: [u32; 3],
        /// The grid dimensions the kernel sees
        /// ([`ImageParts::grid_dims`](super::ImageParts::grid_dims)).
        dims: u32,
    },
    /// A launch over more elements than 32-bit positions reach:
    /// [`Function::launch_over`](super::Function::launch_over)'s `n`, or a grid whose
    /// `grid.x × tile_elems` does for a kernel whose loads and stores take their tiles from
    /// the block's index ([`ImageParts::tile_offsets`](super::ImageParts::tile_offsets)).
    TooManyElements {
        /// Elements asked for.
        n: u64,
        /// The most a launch may cover (`u32::MAX`).
        max: u64,
    },
    /// A cooperative launch asked for more blocks than can be resident at once; launching it
    /// would hang at the first grid-wide barrier.
    CooperativeGridTooLarge {
        /// Blocks asked for (product of the grid's extents).
        grid: u64,
        /// Blocks that can be resident at once (blocks per SM times SMs).
        max: u64,
    },
    /// The device cannot launch cooperative kernels.
    CooperativeUnsupported,
    /// A launch of a kernel that runs in thread-block clusters (`.reqnctapercluster`) with a
    /// grid that is not a whole number of clusters along each axis.
    ClusterGrid {
        /// The grid asked for.
        grid: [u32; 3],
        /// The kernel's cluster shape.
        cluster: [u32; 3],
        /// Where the launch was written.
        at: crate::ir::Loc,
    },
    /// A launch of a kernel built with
    /// [`cluster_at_launch`](crate::KernelBuilder::cluster_at_launch) that gives no cluster
    /// shape ([`LaunchConfig::with_cluster`](super::LaunchConfig::with_cluster)).
    ClusterShapeMissing {
        /// The kernel's entry.
        entry: String,
        /// Where the launch was written.
        at: crate::ir::Loc,
    },
    /// A launch whose cluster shape is not the kernel's: another than the shape the kernel was
    /// built with, or any shape for a kernel that does not run in clusters.
    ClusterShapeMismatch {
        /// The kernel's entry.
        entry: String,
        /// The kernel's own shape (`None`: the kernel does not run in clusters).
        kernel: Option<[u32; 3]>,
        /// The launch's shape.
        given: [u32; 3],
        /// Where the launch was written.
        at: crate::ir::Loc,
    },
    /// A cluster shape the device cannot run: more than 16 blocks, a zero extent, or (from
    /// `cuOccupancyMaxActiveClusters`) a cluster of this kernel's blocks that does not fit on
    /// the device at once.
    ClusterTooLarge {
        /// The launch's shape.
        cluster: [u32; 3],
        /// Why it cannot run.
        reason: String,
        /// Where the launch was written.
        at: crate::ir::Loc,
    },
    /// A kernel that runs in thread-block clusters, on a device below sm_90.
    ClustersUnsupported {
        /// The device's arch.
        arch: crate::ptx::Arch,
    },
    /// A kernel needs more shared memory per block than the device offers.
    SharedMemory {
        /// Bytes needed (static plus dynamic).
        need: u64,
        /// Bytes available per block (with the opt-in).
        limit: u64,
    },
    /// A launch of a kernel with a dynamic shared array that gives the array no length
    /// ([`LaunchConfig::with_dynamic_array_len`](super::LaunchConfig::with_dynamic_array_len)).
    DynamicArrayUnsized {
        /// The kernel's entry.
        entry: String,
        /// The array, and where it was declared.
        array: String,
        /// Where the launch was made.
        at: Loc,
    },
    /// A launch that gives a dynamic shared array a length whose bytes, with the kernel's
    /// own shared memory, are more than a block of the device can have.
    DynamicArrayTooLarge {
        /// The array, and where it was declared.
        array: String,
        /// The length the launch gives it, in elements.
        len: u32,
        /// Bytes of shared memory a block would need (the kernel's own and the array's).
        need: u64,
        /// Bytes available per block (with the opt-in).
        limit: u64,
        /// The kernel's other users of shared memory, each with where it was written and its
        /// bytes ([`DynamicArray::users`](super::DynamicArray::users)).
        users: Vec<String>,
        /// Where the launch was made.
        at: Loc,
    },
    /// A launch that gives a dynamic shared array's length to a kernel without one.
    NoDynamicArray {
        /// The kernel's entry.
        entry: String,
        /// Where the launch was made.
        at: Loc,
    },
    /// A launch asked for less dynamic shared memory than the kernel needs.
    DynamicSharedMemoryTooSmall {
        /// Bytes asked for.
        given: u32,
        /// Bytes the kernel needs.
        need: u32,
    },
    /// A buffer, stream or event belongs to another device or context.
    WrongDevice {
        /// What came from the other device.
        what: Foreign,
    },
    /// Host data and a buffer differ in length.
    LengthMismatch {
        /// The buffer's length in elements.
        buffer: usize,
        /// The host data's length in elements.
        host: usize,
    },
    /// A copy between buffers (of one device or of two) whose lengths differ.
    CopyLengthMismatch {
        /// Elements of the source.
        src: usize,
        /// Elements of the destination.
        dst: usize,
    },
    /// A buffer's size in bytes does not fit the address space.
    TooLarge {
        /// Elements asked for.
        elems: usize,
        /// Their dtype.
        dtype: DType,
    },
    /// The simulator failed.
    Sim(crate::sim::SimError),
    /// A kernel cannot be emitted for the device's architecture: it needs more shared memory
    /// than the architecture has, or its plan lacks something code generation needs. `?` into
    /// a [`coopgraph::Error`](crate::Error) makes this its `Plan` variant, as a kernel that
    /// cannot be planned at build time is.
    Plan(crate::planner::PlanError),
    /// A view's range does not lie inside its buffer.
    ViewOutOfRange {
        /// The range's first element.
        start: usize,
        /// One past the range's last element.
        end: usize,
        /// The buffer's length.
        len: usize,
    },
    /// Work other than a kernel launch went to a stream that is capturing a graph (a graph
    /// holds kernel launches only; copies and events go to another stream).
    Capturing {
        /// What was asked of the capturing stream, e.g. `an upload`.
        what: &'static str,
    },
    /// A launch being captured into a graph passed memory the graph cannot keep track of (a
    /// cudarc slice or view): a graph replays launches later, so it takes only coopgraph
    /// buffers and views of them, whose lifetime it follows.
    CaptureUntracked {
        /// The argument's position (0-based).
        index: usize,
        /// The parameter's name.
        name: String,
    },
    /// A graph was asked to launch after a buffer it captured was dropped (or its cudarc slice
    /// was taken out or borrowed mutably): its launches would touch memory that is not the
    /// buffer's any more.
    GraphBufferGone,
}

/// What [`RuntimeError::WrongDevice`] found on another device.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Foreign {
    /// A launch argument (a buffer).
    Argument {
        /// Its position (0-based).
        index: usize,
        /// The parameter's name.
        name: String,
    },
    /// The stream a launch, copy or graph replay was asked to use.
    Stream,
    /// The start event of a time measurement, or an event a stream was asked to wait for.
    Event,
    /// A buffer a stream was asked to copy.
    Buffer,
    /// A pinned host buffer a stream was asked to copy into.
    HostBuffer,
    /// A graph asked to launch on a stream of another device.
    Graph,
    /// The loaded function itself.
    Function,
    /// The buffer given for a rank of a communicator, which is not on that rank's device.
    RankBuffer {
        /// The rank.
        rank: usize,
    },
}

impl fmt::Display for Foreign {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Foreign::Argument { index, name } => write!(f, "argument {index} (`{name}`)"),
            Foreign::Stream => f.write_str("the stream"),
            Foreign::Event => f.write_str("the event"),
            Foreign::Buffer => f.write_str("the buffer"),
            Foreign::HostBuffer => f.write_str("the pinned host buffer"),
            Foreign::Graph => f.write_str("the graph"),
            Foreign::Function => f.write_str("the function"),
            Foreign::RankBuffer { rank } => write!(f, "the buffer of rank {rank}"),
        }
    }
}

impl RuntimeError {
    pub(crate) fn driver(call: &'static str) -> impl FnOnce(DriverError) -> RuntimeError {
        move |code| RuntimeError::Driver { call, code }
    }
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use RuntimeError as E;
        match self {
            E::NoDriver => f.write_str("no CUDA driver library (libcuda) could be loaded"),
            E::MissingDriverSymbol { name } => {
                write!(f, "the CUDA driver library lacks `{name}` (driver too old)")
            }
            E::NoDevice { ordinal } => write!(f, "no CUDA device with ordinal {ordinal}"),
            E::UnsupportedDevice {
                ordinal,
                compute_capability: (major, minor),
            } => write!(
                f,
                "CUDA device {ordinal} has compute capability {major}.{minor}, older than sm_75"
            ),
            E::EnvVar { value } => write!(
                f,
                "COOPGRAPH_DEVICE={value:?} names no backend (expected `cuda`, `cuda:N` or `sim`)"
            ),
            E::Driver { call, code } => write!(f, "{call} failed: {:?}", code.0),
            E::Jit { log, code, ptx } => {
                write!(f, "the driver JIT rejected the PTX ({:?})", code.0)?;
                if log.trim().is_empty() {
                    f.write_str(" with an empty log")?;
                } else {
                    write!(f, ":\n{}", log.trim_end())?;
                }
                write!(f, "\n({} bytes of PTX)", ptx.len())
            }
            E::PtxNul { offset } => write!(f, "the PTX text holds a NUL byte at offset {offset}"),
            E::MissingEntry { entry } => write!(f, "the module has no entry `{entry}`"),
            E::SignatureMismatch {
                entry,
                declared,
                expected,
            } => {
                let list = |l: &[ParamLayout]| {
                    l.iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                write!(
                    f,
                    "`{entry}` declares parameters [{}], its signature needs [{}]",
                    list(declared),
                    list(expected)
                )
            }
            E::HiddenParam { entry, index } => write!(
                f,
                "hidden parameter {index} of `{entry}` takes the length of a parameter that is \
                 not a buffer"
            ),
            E::UncheckedKernel { entry } => write!(
                f,
                "`{entry}` was built without bounds checks; only the unsafe launch_unchecked \
                 launches it"
            ),
            E::CheckFailed(failure) => write!(f, "debug check failed: {failure}"),
            E::CheckedKernelCaptured { entry } => write!(
                f,
                "`{entry}` has debug checks, which a graph cannot read after its replays; \
                 launch it outside the capture, or build it without debug checks"
            ),
            E::CooperativeKernelCaptured { entry } => write!(
                f,
                "`{entry}` synchronizes the grid, and its cooperative launches cannot be \
                 captured into a graph; launch it outside the capture"
            ),
            E::ArgCount { expected, got } => {
                write!(
                    f,
                    "the kernel takes {expected} arguments, {got} were passed"
                )
            }
            E::ArgMismatch {
                index,
                name,
                expected,
                got,
            } => write!(
                f,
                "argument {index} (`{name}`) takes {expected}, {got} was passed"
            ),
            E::BlockMismatch { expected, got } => write!(
                f,
                "the kernel was built for blocks of {expected:?} threads, the launch asked for {got:?}"
            ),
            E::BlockTooLarge { block, max_threads } => write!(
                f,
                "a block of {block:?} threads is empty or exceeds the device's {max_threads} threads per block"
            ),
            E::ZeroTile { entry } => write!(
                f,
                "`{entry}` declares no elements per tile, so it cannot be launched over a length"
            ),
            E::GridTooLarge { grid, max, at } => write!(
                f,
                "{at}: grid {grid:?} is empty or exceeds the device's limit {max:?}"
            ),
            E::GridDimensionUnseen { entry, grid, dims } => write!(
                f,
                "grid {grid:?} extends past the {dims} dimension(s) `{entry}` tells blocks apart \
                 by; its extra blocks would repeat others' work and race on their outputs"
            ),
            E::TooManyElements { n, max } => write!(
                f,
                "a launch over {n} elements: kernels index elements with 32-bit integers, so at \
                 most {max}"
            ),
            E::CooperativeGridTooLarge { grid, max } => write!(
                f,
                "a cooperative launch of {grid} blocks exceeds the {max} blocks that can be resident at once"
            ),
            E::CooperativeUnsupported => {
                f.write_str("the device cannot launch cooperative kernels")
            }
            E::ClusterGrid { grid, cluster, at } => write!(
                f,
                "{at}: grid {grid:?} is not a whole number of the kernel's clusters of \
                 {cluster:?} blocks"
            ),
            E::ClusterShapeMissing { entry, at } => write!(
                f,
                "{at}: `{entry}` runs in clusters whose shape each launch gives; give one with \
                 LaunchConfig::with_cluster"
            ),
            E::ClusterShapeMismatch {
                entry,
                kernel: Some(kernel),
                given,
                at,
            } => write!(
                f,
                "{at}: `{entry}` runs in clusters of {kernel:?} blocks; the launch asked for \
                 {given:?}"
            ),
            E::ClusterShapeMismatch {
                entry,
                kernel: None,
                given,
                at,
            } => write!(
                f,
                "{at}: a launch in clusters of {given:?} blocks of `{entry}`, which does not \
                 run in clusters (build it with .cluster(n) or .cluster_at_launch())"
            ),
            E::ClusterTooLarge {
                cluster,
                reason,
                at,
            } => {
                write!(f, "{at}: clusters of {cluster:?} blocks: {reason}")
            }
            E::ClustersUnsupported { arch } => write!(
                f,
                "the kernel runs in thread-block clusters, which need sm_90; the device is {arch}"
            ),
            E::SharedMemory { need, limit } => write!(
                f,
                "the kernel needs {need} bytes of shared memory per block, the device offers {limit}"
            ),
            E::DynamicArrayUnsized { entry, array, at } => write!(
                f,
                "{at}: `{entry}` has a dynamic shared array ({array}); give its length with \
                 LaunchConfig::with_dynamic_array_len"
            ),
            E::DynamicArrayTooLarge {
                array,
                len,
                need,
                limit,
                users,
                at,
            } => {
                write!(
                    f,
                    "{at}: the kernel with its dynamic shared array ({array}) of {len} \
                     elements needs {need} bytes of shared memory per block, the device offers \
                     {limit}"
                )?;
                if !users.is_empty() {
                    f.write_str(". The kernel's other users:")?;
                    for u in users {
                        write!(f, "\n  {u}")?;
                    }
                }
                Ok(())
            }
            E::NoDynamicArray { entry, at } => write!(
                f,
                "{at}: the launch gives a dynamic shared array's length, but `{entry}` has no \
                 dynamic shared array"
            ),
            E::DynamicSharedMemoryTooSmall { given, need } => write!(
                f,
                "the launch gives {given} bytes of dynamic shared memory, the kernel needs {need}"
            ),
            E::WrongDevice { what } => {
                write!(f, "{what} belongs to another device or context")
            }
            E::LengthMismatch { buffer, host } => write!(
                f,
                "the buffer holds {buffer} elements, the host data {host}"
            ),
            E::CopyLengthMismatch { src, dst } => write!(
                f,
                "a copy of {src} elements into a buffer (or range) of {dst} elements"
            ),
            E::TooLarge { elems, dtype } => {
                write!(f, "{elems} elements of {dtype} exceed the address space")
            }
            E::Sim(e) => write!(f, "simulator: {e}"),
            E::Plan(e) => e.fmt(f),
            E::ViewOutOfRange { start, end, len } => write!(
                f,
                "the view {start}..{end} does not lie inside a buffer of {len} elements"
            ),
            E::Capturing { what } => write!(
                f,
                "{what} went to a stream that is capturing a graph, which holds kernel launches \
                 only"
            ),
            E::CaptureUntracked { index, name } => write!(
                f,
                "argument {index} (`{name}`) of a captured launch is a cudarc slice or view; a \
                 graph replays launches later, so it takes only coopgraph buffers and their views"
            ),
            E::GraphBufferGone => f.write_str(
                "a buffer the graph captured was dropped or handed out to cudarc; the graph \
                 cannot launch",
            ),
        }
    }
}

/// Each cause once: a driver error's code is in the message (cudarc's `DriverError` would only
/// print it again, and asks the driver for its description to do so), and the simulator's
/// error is shown by `Display`, so its own source is handed on.
impl std::error::Error for RuntimeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RuntimeError::Sim(e) => e.source(),
            RuntimeError::Plan(e) => e.source(),
            _ => None,
        }
    }
}

impl From<crate::planner::PlanError> for RuntimeError {
    fn from(e: crate::planner::PlanError) -> Self {
        RuntimeError::Plan(e)
    }
}

impl From<crate::sim::SimError> for RuntimeError {
    fn from(e: crate::sim::SimError) -> Self {
        RuntimeError::Sim(e)
    }
}

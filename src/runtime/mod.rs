//! The runtime: devices, buffers, module loading, the specialization cache and typed launch, on
//! a CUDA GPU (through cudarc's driver API, loaded dynamically, so the crate builds and runs
//! where no CUDA is installed) or on the CPU simulator of the same PTX.
//!
//! ```text
//! Compile (kernel) --emit--> KernelImage --Device::compile--> Function --launch--> GPU / sim
//!                                           (cache: per context)   (args checked)
//! ```
//!
//! - [`Device`]: a GPU ([`Device::cuda`]) or the simulator ([`Device::sim`]);
//!   [`default_device`] picks one as `COOPGRAPH_DEVICE` says.
//! - [`Buffer`]: an array in a device's memory; interoperates with cudarc's `CudaSlice`.
//!   [`Buffer::copy_from`]: copies between buffers of one device or of two (peer copies).
//!   [`Device::all`]: every GPU; [`Device::sim_group`]: several simulated devices.
//!   [`View`] and [`ViewMut`]: ranges of buffers, passed to kernels as buffers of their length.
//! - [`KernelImage`] and [`Compile`]: the contract with code generation.
//! - [`Device::compile`]: the specialization cache; [`Function::launch`]: the typed launch.
//! - [`DiskCache`]: compiled modules (cubins) kept on disk across processes, so a CUDA device
//!   loads a kernel another process compiled without running the JIT.
//! - [`Stream`]: a queue of work (launches, uploads, downloads, into [`PinnedBuffer`]s
//!   asynchronously); [`Event`]: a point in a stream, to wait for or time;
//!   [`Device::time`]: GPU timing for benchmarks.
//! - [`do_bench`] and [`Bench`]: benchmark timing (warm-up and measurement budgets, the L2
//!   cache flushed between runs, median and quantiles in a [`Timing`]).
//! - [`Tuner`]: the autotuner, which picks the fastest of a space of specializations after
//!   checking each against the first one's output, and stores the winner in the disk cache
//!   directory for the next process.
//! - [`Graph`]: launches captured once on a stream ([`Stream::capture`]) and replayed.
//!
//! Architecture invariants:
//! - `unsafe` only at the driver boundary (`driver.rs`, `load.rs`), each block with a `SAFETY:`
//!   comment; everything else here is safe code, and launch arguments are checked against the
//!   kernel's signature before any address reaches the driver.
//! - A graph launches only while every buffer it captured is alive, and a captured buffer's
//!   memory is freed only after the graph's last replay that used it has finished
//!   (`graph.rs`).
//! - A function is never used in a context it was not loaded in: the cache lives with the
//!   context, a [`Function`] launches only on the device it was compiled for, and every buffer
//!   and stream passed to a launch is checked to belong to that context.
//! - Code from the disk cache is loaded only when its entry's checksum holds and its stored key
//!   equals the whole key asked for; any other entry is deleted and rebuilt (`disk_cache.rs`).
//! - No public function panics for want of a driver: the driver library and its entry points
//!   are checked before the first driver call, and their absence is
//!   [`RuntimeError::NoDriver`] (or [`RuntimeError::MissingDriverSymbol`]).

mod args;
mod bench;
mod buffer;
mod cache;
mod checks;
mod device;
mod disk_cache;
mod driver;
mod error;
mod event;
mod graph;
mod image;
mod launch;
mod load;
mod peer;
mod ptxas;
mod resources;
mod stream;
mod tune;

pub use crate::cache_key::KernelKey;
pub use crate::sim::{Budget, Control, LaunchReport, Progress, ProgressHook, SimOptions};
pub use args::{Arg, ArgKind, ArgList, ArgSlot, KernelArgs};
pub use bench::{Bench, Clock, Flush, Timing, do_bench};
pub use buffer::{Buffer, DeviceElement, View, ViewMut};
pub use cache::CacheStats;
pub use checks::CheckFailure;
pub use device::{Backend, DEVICE_ENV, Device, DeviceChoice, DeviceLimits};
pub use disk_cache::{
    CACHE_DIR_ENV, DISK_CACHE_ENV, DISK_CACHE_MAX_ENV, DiskCache, Lookup, Rejection, Usage,
};
pub use error::{Foreign, RuntimeError};
pub use event::Event;
pub use graph::Graph;
pub use image::{
    Compile, DynamicArray, HiddenParam, ImageParts, KernelImage, ParamKind, ParamLayout, ParamSig,
};
pub use launch::{Function, LaunchConfig};
pub use resources::{ResourceSource, Resources, ptxas_resources};
pub use stream::{PinnedBuffer, Stream};
pub use tune::{Candidate, Outcome, TuneError, TuneSource, Tuned, Tuner, Workload};

/// The default device: the GPU where one is present, the simulator otherwise, unless
/// `COOPGRAPH_DEVICE` says `cuda` (then a GPU or an error) or `sim`. See
/// [`Device::default_device`].
pub fn default_device() -> Result<Device, RuntimeError> {
    Device::default_device()
}

//! Devices: one type over the CUDA backend (through cudarc) and the simulator backend, and the
//! choice between them (`COOPGRAPH_DEVICE`).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use cudarc::driver::{CudaContext, CudaStream, DriverError, sys};

use super::RuntimeError;
use super::cache::{KernelCache, StatCounters};
use super::disk_cache::DiskCache;
use super::driver::{driver_version, ensure_driver};
use crate::ptx::Arch;
use crate::sim::{SimOptions, Simulator};

/// The environment variable that picks the default device: `cuda` (or `cuda:N` for ordinal N)
/// forces the GPU, `sim` forces the simulator; unset or empty means "the GPU if there is one,
/// else the simulator".
pub const DEVICE_ENV: &str = "COOPGRAPH_DEVICE";

/// Which backend a device runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// A CUDA GPU.
    Cuda {
        /// The device's name as the driver reports it.
        name: String,
        /// The newest supported arch the device runs.
        arch: Arch,
        /// The device ordinal.
        ordinal: usize,
    },
    /// The CPU simulator.
    Sim,
}

/// The device limits launches are checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceLimits {
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// Largest grid extent per dimension.
    pub max_grid: [u32; 3],
    /// Most threads in one block.
    pub max_threads_per_block: u32,
    /// Shared memory per block with the opt-in attribute, in bytes.
    pub smem_per_block_optin: u32,
    /// Shared memory per SM, in bytes.
    pub smem_per_sm: u32,
    /// Most resident threads per SM.
    pub max_threads_per_sm: u32,
    /// Most resident blocks per SM.
    pub max_blocks_per_sm: u32,
    /// Whether cooperative launches are supported.
    pub cooperative: bool,
}

impl DeviceLimits {
    /// The limits of an NVIDIA H200 (sm_90, 132 SMs).
    pub const H200: DeviceLimits = DeviceLimits {
        sm_count: 132,
        max_grid: [i32::MAX as u32, 65535, 65535],
        max_threads_per_block: 1024,
        smem_per_block_optin: 232_448,
        smem_per_sm: 233_472,
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        cooperative: true,
    };

    /// The limits of an NVIDIA A100 (sm_80, 108 SMs).
    pub const A100: DeviceLimits = DeviceLimits {
        sm_count: 108,
        smem_per_block_optin: 166_912,
        smem_per_sm: 167_936,
        ..DeviceLimits::H200
    };

    /// The limits of an NVIDIA T4 (sm_75, 40 SMs).
    pub const T4: DeviceLimits = DeviceLimits {
        sm_count: 40,
        smem_per_block_optin: 65_536,
        smem_per_sm: 65_536,
        max_threads_per_sm: 1024,
        max_blocks_per_sm: 16,
        ..DeviceLimits::H200
    };

    /// The limits the simulator reports for `arch`: those of a common GPU of that arch
    /// ([`H200`](Self::H200), [`A100`](Self::A100), [`T4`](Self::T4)), so that launches fail
    /// on the simulator where they would fail on that GPU.
    pub fn simulated(arch: Arch) -> DeviceLimits {
        match arch {
            Arch::Sm75 => DeviceLimits::T4,
            Arch::Sm80 => DeviceLimits::A100,
            Arch::Sm90 => DeviceLimits::H200,
        }
    }

    /// Blocks of `threads` threads using `smem` bytes of shared memory each that fit on one SM
    /// by these limits (registers not counted): the simulator's occupancy.
    pub fn blocks_per_sm(&self, threads: u64, smem: u64) -> u32 {
        if threads == 0 || threads > u64::from(self.max_threads_per_block) {
            return 0;
        }
        let warps = threads.div_ceil(32);
        let by_threads = u64::from(self.max_threads_per_sm / 32) / warps;
        // Each resident block also reserves 1 KiB of shared memory for the system.
        let by_smem = u64::from(self.smem_per_sm) / smem.saturating_add(1024);
        let blocks = by_threads
            .min(by_smem)
            .min(u64::from(self.max_blocks_per_sm));
        blocks as u32
    }
}

/// A device kernels run on: a CUDA GPU, or the CPU simulator of the same PTX.
///
/// Cheap to clone (clones share one device); `Send + Sync`. Each device carries the
/// specialization cache of its context: see [`Device::compile`].
#[derive(Clone)]
pub struct Device {
    pub(super) inner: Arc<DeviceInner>,
}

pub(super) struct DeviceInner {
    pub(super) backend: Backend,
    pub(super) arch: Arch,
    pub(super) limits: DeviceLimits,
    pub(super) imp: Imp,
    pub(super) cache: Arc<KernelCache>,
    pub(super) stats: StatCounters,
    /// The disk cache CUDA modules are loaded from and stored in (`None`: off). Read from the
    /// environment when the device opens; [`Device::set_disk_cache`] changes it.
    pub(super) disk: Mutex<Option<Arc<DiskCache>>>,
}

/// The backend's handles.
pub(super) enum Imp {
    Cuda(CudaImp),
    Sim(Arc<SimShared>),
}

/// A CUDA device: its context and the stream work is queued on by default.
pub(super) struct CudaImp {
    pub(super) ctx: Arc<CudaContext>,
    pub(super) stream: Arc<CudaStream>,
    /// The device's compute capability, exactly (the JIT compiles for it).
    pub(super) compute_capability: (u32, u32),
    /// The driver's version (`cuDriverGetVersion`: 1000 × major + 10 × minor).
    pub(super) driver_version: u32,
}

/// A simulator, shared by the device and every buffer allocated in it.
///
/// The simulator locks its own memory only for the moment an allocation is made, freed or
/// looked up, so uploads, downloads and frees proceed while a kernel runs, and loading a
/// module (parsing) needs no lock at all. Launches take [`SimShared::launch_lock`]: they run
/// one after another, as on one stream.
pub(super) struct SimShared {
    /// Tells simulators apart (buffers check it at launch).
    pub(super) id: u64,
    pub(super) sim: Simulator,
    launches: Mutex<()>,
}

impl SimShared {
    /// Orders launches on this simulator. A panic during a launch (in the simulator itself)
    /// leaves nothing half-done that a later launch depends on; the lock is taken over rather
    /// than propagating the panic.
    pub(super) fn launch_lock(&self) -> MutexGuard<'_, ()> {
        self.launches
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Device {
    /// Opens CUDA device `ordinal` (its primary context and the context's default stream).
    ///
    /// Fails with [`RuntimeError::NoDriver`] where no driver library is installed and with
    /// [`RuntimeError::NoDevice`] where the driver sees no such device; never panics.
    pub fn cuda(ordinal: usize) -> Result<Device, RuntimeError> {
        if ordinal >= cuda_device_count()? {
            return Err(RuntimeError::NoDevice { ordinal });
        }
        let ctx =
            CudaContext::new(ordinal).map_err(RuntimeError::driver("cuDevicePrimaryCtxRetain"))?;
        let stream = ctx.default_stream();
        Device::from_parts(ctx, stream)
    }

    /// Every CUDA device of this machine, by ordinal (each opened as [`Device::cuda`] opens
    /// it: its primary context and that context's default stream).
    ///
    /// Where a driver is loaded but sees no device, the list is empty. Where no driver library
    /// can be loaded at all, this is [`RuntimeError::NoDriver`] (not an empty list, so a
    /// machine without CUDA is told apart from one whose GPUs are hidden, e.g. by
    /// `CUDA_VISIBLE_DEVICES=`). A device older than every supported arch is
    /// [`RuntimeError::UnsupportedDevice`] for the whole call: the ordinals of the list are
    /// the driver's. Never panics.
    ///
    /// ```
    /// use coopgraph::runtime::{Device, RuntimeError};
    ///
    /// match Device::all() {
    ///     Ok(gpus) => assert!(gpus.iter().all(Device::is_cuda)),
    ///     Err(RuntimeError::NoDriver) => {} // no CUDA here: use the simulator
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok::<(), RuntimeError>(())
    /// ```
    pub fn all() -> Result<Vec<Device>, RuntimeError> {
        (0..cuda_device_count()?).map(Device::cuda).collect()
    }

    /// `n` simulators with default options (sm_90), each a device of its own: a buffer of one
    /// passed to a kernel of another is [`RuntimeError::WrongDevice`], and each compiles
    /// kernels into its own cache. The devices of a multi-device program on the CPU.
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    ///
    /// let devices = Device::sim_group(3);
    /// let b = devices[0].upload(&[1u32, 2])?;
    /// assert!(b.is_on(&devices[0]) && !b.is_on(&devices[1]));
    /// assert!(!devices[1].shares_target_with(&devices[2]));
    /// # Ok::<(), coopgraph::runtime::RuntimeError>(())
    /// ```
    pub fn sim_group(n: usize) -> Vec<Device> {
        Device::sim_group_with(n, Arch::Sm90, SimOptions::default())
    }

    /// `n` simulators of `arch` with these options, each a device of its own (see
    /// [`Device::sim_group`]).
    pub fn sim_group_with(n: usize, arch: Arch, options: SimOptions) -> Vec<Device> {
        (0..n)
            .map(|_| Device::sim_for(arch, options.clone()))
            .collect()
    }

    /// Adopts a cudarc stream: kernels and copies of the new device go to `stream`, in its
    /// context. For libraries that already use cudarc. Kernels compiled through any device of
    /// the same context are shared.
    pub fn from_cuda_stream(stream: Arc<CudaStream>) -> Result<Device, RuntimeError> {
        // A stream exists, so the driver library was loaded; check the entry points anyway.
        ensure_driver()?;
        let ctx = stream.context().clone();
        Device::from_parts(ctx, stream)
    }

    fn from_parts(ctx: Arc<CudaContext>, stream: Arc<CudaStream>) -> Result<Device, RuntimeError> {
        let ordinal = ctx.ordinal();
        let attr = |a: sys::CUdevice_attribute| -> Result<u32, RuntimeError> {
            let v = ctx
                .attribute(a)
                .map_err(RuntimeError::driver("cuDeviceGetAttribute"))?;
            Ok(u32::try_from(v).unwrap_or(0))
        };
        use sys::CUdevice_attribute as A;
        let major = attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        let arch =
            Arch::for_compute_capability(major, minor).ok_or(RuntimeError::UnsupportedDevice {
                ordinal,
                compute_capability: (major as i32, minor as i32),
            })?;
        let limits = DeviceLimits {
            sm_count: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            max_grid: [
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
            ],
            max_threads_per_block: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            smem_per_block_optin: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
            smem_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?,
            max_threads_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
            max_blocks_per_sm: attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)?,
            cooperative: attr(A::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)? != 0,
        };
        let name = ctx
            .name()
            .map_err(RuntimeError::driver("cuDeviceGetName"))?;
        let driver_version = driver_version()?;
        let cache = KernelCache::for_context(&ctx);
        let disk = DiskCache::from_env();
        log::debug!(
            "CUDA device {ordinal}: {name}, compute capability {major}.{minor}, driver {}.{}; \
             disk cache {}",
            driver_version / 1000,
            driver_version % 1000 / 10,
            disk.as_ref()
                .map_or("off".to_string(), |d| format!("in {}", d.dir().display()))
        );
        Ok(Device {
            inner: Arc::new(DeviceInner {
                backend: Backend::Cuda {
                    name,
                    arch,
                    ordinal,
                },
                arch,
                limits,
                imp: Imp::Cuda(CudaImp {
                    ctx,
                    stream,
                    compute_capability: (major, minor),
                    driver_version,
                }),
                cache,
                stats: StatCounters::default(),
                disk: Mutex::new(disk.map(Arc::new)),
            }),
        })
    }

    /// A simulator with default options, simulating an sm_90 device.
    pub fn sim() -> Device {
        Device::sim_with(SimOptions::default())
    }

    /// A simulator with these options, simulating an sm_90 device.
    pub fn sim_with(options: SimOptions) -> Device {
        Device::sim_for(Arch::Sm90, options)
    }

    /// A simulator with these options, simulating a device of `arch` (kernels are emitted for
    /// it, and its limits are [`DeviceLimits::simulated`] for it).
    pub fn sim_for(arch: Arch, options: SimOptions) -> Device {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let shared = Arc::new(SimShared {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            sim: Simulator::new(options),
            launches: Mutex::new(()),
        });
        Device {
            inner: Arc::new(DeviceInner {
                backend: Backend::Sim,
                arch,
                limits: DeviceLimits::simulated(arch),
                imp: Imp::Sim(shared),
                cache: Arc::new(KernelCache::new(None)),
                stats: StatCounters::default(),
                disk: Mutex::new(None),
            }),
        }
    }

    /// The default device, as [`DEVICE_ENV`] (`COOPGRAPH_DEVICE`) asks: `cuda` or `cuda:N`
    /// opens that GPU and fails if it cannot (it never falls back), `sim` opens the simulator,
    /// unset or empty opens GPU 0 where there is a usable one and the simulator otherwise. Any
    /// other value is [`RuntimeError::EnvVar`].
    pub fn default_device() -> Result<Device, RuntimeError> {
        DeviceChoice::from_env()?.open()
    }

    /// Which backend this device runs on.
    pub fn backend(&self) -> &Backend {
        &self.inner.backend
    }

    /// The arch kernels are emitted for on this device.
    pub fn arch(&self) -> Arch {
        self.inner.arch
    }

    /// Whether this is a CUDA device.
    pub fn is_cuda(&self) -> bool {
        matches!(self.inner.imp, Imp::Cuda(_))
    }

    /// Whether this is the simulator.
    pub fn is_sim(&self) -> bool {
        matches!(self.inner.imp, Imp::Sim(_))
    }

    /// The limits launches are checked against.
    pub fn limits(&self) -> &DeviceLimits {
        &self.inner.limits
    }

    /// Streaming multiprocessors (the simulator of sm_90 reports an H200's 132).
    pub fn sm_count(&self) -> u32 {
        self.inner.limits.sm_count
    }

    /// The cudarc context, on CUDA.
    pub fn cuda_context(&self) -> Option<&Arc<CudaContext>> {
        match &self.inner.imp {
            Imp::Cuda(c) => Some(&c.ctx),
            Imp::Sim(_) => None,
        }
    }

    /// The cudarc stream work is queued on, on CUDA.
    pub fn cuda_stream(&self) -> Option<&Arc<CudaStream>> {
        match &self.inner.imp {
            Imp::Cuda(c) => Some(&c.stream),
            Imp::Sim(_) => None,
        }
    }

    /// Waits until all work queued on the device's stream has finished, and reports an error a
    /// kernel ran into. The simulator runs each launch to completion, so there it returns at
    /// once.
    pub fn synchronize(&self) -> Result<(), RuntimeError> {
        match &self.inner.imp {
            Imp::Cuda(c) => c
                .stream
                .synchronize()
                .map_err(RuntimeError::driver("cuStreamSynchronize")),
            Imp::Sim(_) => Ok(()),
        }
    }

    /// The disk cache this device loads CUDA modules from and stores them in, if it has one.
    /// A CUDA device opens with the cache the environment asks for ([`DiskCache::from_env`]);
    /// the simulator has none (it parses PTX, which is cheap) and ignores one set.
    pub fn disk_cache(&self) -> Option<Arc<DiskCache>> {
        self.inner
            .disk
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Sets the disk cache of this device (and its clones): `None` turns it off. Kernels loaded
    /// already are not affected.
    pub fn set_disk_cache(&self, cache: Option<DiskCache>) {
        if self.is_cuda() {
            *self
                .inner
                .disk
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()) = cache.map(Arc::new);
        }
    }

    /// Whether `self` and `other` run in one place: the same CUDA context, or the same
    /// simulator. Buffers, streams, events and functions of one are valid on the other.
    pub fn shares_target_with(&self, other: &Device) -> bool {
        match (&self.inner.imp, &other.inner.imp) {
            (Imp::Cuda(a), Imp::Cuda(b)) => *a.ctx == *b.ctx,
            (Imp::Sim(a), Imp::Sim(b)) => a.id == b.id,
            _ => false,
        }
    }

    /// Whether `self` and `other` are the same device (clones of one another).
    pub fn same_as(&self, other: &Device) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

/// How many CUDA devices the driver sees (0 where it sees none); [`RuntimeError::NoDriver`]
/// without a driver.
fn cuda_device_count() -> Result<usize, RuntimeError> {
    ensure_driver()?;
    match CudaContext::device_count() {
        Ok(n) => Ok(usize::try_from(n).unwrap_or(0)),
        Err(DriverError(sys::CUresult::CUDA_ERROR_NO_DEVICE)) => Ok(0),
        Err(code) => Err(RuntimeError::Driver {
            call: "cuInit",
            code,
        }),
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner.backend {
            Backend::Cuda {
                name,
                arch,
                ordinal,
            } => write!(f, "Device(cuda:{ordinal} {name}, {arch})"),
            Backend::Sim => write!(f, "Device(sim, {})", self.inner.arch),
        }
    }
}

/// What [`DEVICE_ENV`] asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceChoice {
    /// The GPU where a usable one is present, the simulator otherwise.
    Auto,
    /// This CUDA device, or an error.
    Cuda(usize),
    /// The simulator.
    Sim,
}

impl DeviceChoice {
    /// Parses a value of [`DEVICE_ENV`]: `None` (unset) or blank is [`Auto`](Self::Auto);
    /// `cuda` is GPU 0 and `cuda:N` GPU N; `sim` is the simulator (case and surrounding
    /// blanks ignored). Anything else is [`RuntimeError::EnvVar`] naming the value.
    pub fn parse(value: Option<&str>) -> Result<DeviceChoice, RuntimeError> {
        let Some(raw) = value else {
            return Ok(DeviceChoice::Auto);
        };
        let v = raw.trim().to_ascii_lowercase();
        let bad = || RuntimeError::EnvVar {
            value: raw.to_string(),
        };
        match v.as_str() {
            "" => Ok(DeviceChoice::Auto),
            "sim" => Ok(DeviceChoice::Sim),
            "cuda" => Ok(DeviceChoice::Cuda(0)),
            _ => {
                let ordinal = v.strip_prefix("cuda:").ok_or_else(bad)?;
                if ordinal.is_empty() || !ordinal.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(bad());
                }
                ordinal.parse().map(DeviceChoice::Cuda).map_err(|_| bad())
            }
        }
    }

    /// Reads and parses [`DEVICE_ENV`] from the process environment.
    pub fn from_env() -> Result<DeviceChoice, RuntimeError> {
        match std::env::var_os(DEVICE_ENV) {
            None => Ok(DeviceChoice::Auto),
            Some(v) => match v.to_str() {
                Some(s) => DeviceChoice::parse(Some(s)),
                None => Err(RuntimeError::EnvVar {
                    value: v.to_string_lossy().into_owned(),
                }),
            },
        }
    }

    /// Opens the device this choice names. [`Auto`](Self::Auto) falls back to the simulator
    /// only when there is no driver, no device, or no supported device; other CUDA errors are
    /// returned.
    pub fn open(self) -> Result<Device, RuntimeError> {
        match self {
            DeviceChoice::Sim => Ok(Device::sim()),
            DeviceChoice::Cuda(ordinal) => Device::cuda(ordinal),
            DeviceChoice::Auto => match Device::cuda(0) {
                Ok(d) => Ok(d),
                Err(
                    e @ (RuntimeError::NoDriver
                    | RuntimeError::NoDevice { .. }
                    | RuntimeError::UnsupportedDevice { .. }),
                ) => {
                    log::info!("no usable GPU ({e}); kernels run on the CPU simulator");
                    Ok(Device::sim())
                }
                Err(e) => Err(e),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_device_env() {
        assert_eq!(DeviceChoice::parse(None).ok(), Some(DeviceChoice::Auto));
        assert_eq!(DeviceChoice::parse(Some("")).ok(), Some(DeviceChoice::Auto));
        assert_eq!(
            DeviceChoice::parse(Some(" ")).ok(),
            Some(DeviceChoice::Auto)
        );
        assert_eq!(
            DeviceChoice::parse(Some("sim")).ok(),
            Some(DeviceChoice::Sim)
        );
        assert_eq!(
            DeviceChoice::parse(Some("SIM")).ok(),
            Some(DeviceChoice::Sim)
        );
        assert_eq!(
            DeviceChoice::parse(Some("cuda")).ok(),
            Some(DeviceChoice::Cuda(0))
        );
        assert_eq!(
            DeviceChoice::parse(Some("cuda:3")).ok(),
            Some(DeviceChoice::Cuda(3))
        );
        for bad in [
            "gpu",
            "cuda:",
            "cuda:x",
            "cuda:-1",
            "cuda:+1",
            "simulator",
            "cuda0",
        ] {
            match DeviceChoice::parse(Some(bad)) {
                Err(RuntimeError::EnvVar { value }) => assert_eq!(value, bad),
                other => panic!("{bad:?} parsed as {other:?}"),
            }
        }
        let msg = DeviceChoice::parse(Some("gpu")).unwrap_err().to_string();
        assert!(msg.contains("\"gpu\""), "{msg}");
    }

    #[test]
    fn h200_occupancy() {
        let l = DeviceLimits::H200;
        assert_eq!(l.blocks_per_sm(128, 0), 16);
        assert_eq!(l.blocks_per_sm(32, 0), 32);
        assert_eq!(l.blocks_per_sm(1024, 0), 2);
        assert_eq!(l.blocks_per_sm(256, 100 * 1024), 2);
        assert_eq!(l.blocks_per_sm(256, 227 * 1024), 1);
        assert_eq!(l.blocks_per_sm(2048, 0), 0);
        assert_eq!(l.blocks_per_sm(0, 0), 0);
        assert_eq!(DeviceLimits::T4.blocks_per_sm(128, 0), 8);
        assert_eq!(DeviceLimits::simulated(Arch::Sm80).sm_count, 108);
    }

    #[test]
    fn cuda_without_a_driver_is_an_error_not_a_panic() {
        match Device::cuda(0) {
            Ok(d) => assert!(d.is_cuda()),
            Err(RuntimeError::NoDriver | RuntimeError::NoDevice { .. }) => {}
            Err(e) => panic!("unexpected error {e}"),
        }
        match Device::cuda(usize::MAX) {
            Err(RuntimeError::NoDriver | RuntimeError::NoDevice { .. }) => {}
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn handles_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Device>();
        check::<crate::runtime::Function>();
        check::<crate::runtime::Buffer<f32>>();
        check::<crate::runtime::Event>();
    }
}

//! The driver boundary: finding the driver library, and the raw driver calls that cudarc's safe
//! API does not offer (launch from a module we loaded ourselves, occupancy, function attributes,
//! memset of 16- and 32-bit patterns).
//!
//! Every `unsafe` block of the runtime lives here or in `load.rs`, each with a `SAFETY:` comment.
//! Everything above this file is safe code. Nothing here is reachable without a CUDA [`Device`]
//! or a cudarc object, and creating either means the driver library was found: cudarc's
//! dynamically loaded entry points panic when the library is missing, so [`ensure_driver`] is
//! the gate every CUDA path goes through first.
//!
//! [`Device`]: super::Device

use std::ffi::c_void;
use std::sync::{Arc, OnceLock};

use cudarc::driver::{
    CudaContext, CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, DeviceRepr,
    DeviceSlice, DriverError, PinnedHostSlice, SyncOnDrop, ValidAsZeroBits, sys,
};

use super::RuntimeError;
use super::args::{CheckedArgs, Slot};
use super::error::Foreign;
use super::image::ParamLayout;

/// Driver entry points the runtime reaches, directly or through cudarc. A driver lacking one of
/// them would make cudarc panic on first use; checking them up front turns that into
/// [`RuntimeError::MissingDriverSymbol`].
const REQUIRED_SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetAttribute",
    "cuDeviceGetName",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuCtxSynchronize",
    "cuGetErrorName",
    "cuGetErrorString",
    "cuStreamSynchronize",
    "cuStreamWaitEvent",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemAllocAsync",
    "cuMemFreeAsync",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemsetD8Async",
    "cuMemsetD16Async",
    "cuMemsetD32Async",
    "cuEventCreate",
    "cuEventRecord",
    "cuEventSynchronize",
    "cuEventElapsedTime",
    "cuEventDestroy_v2",
    "cuModuleLoadDataEx",
    "cuModuleGetFunction",
    "cuModuleUnload",
    "cuFuncGetAttribute",
    "cuFuncSetAttribute",
    "cuLaunchKernel",
    "cuLaunchCooperativeKernel",
    "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
    "cuEventQuery",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuMemHostAlloc",
    "cuMemFreeHost",
    "cuStreamBeginCapture_v2",
    "cuStreamEndCapture",
    "cuGraphInstantiateWithFlags",
    "cuGraphLaunch",
    "cuGraphExecDestroy",
    "cuGraphDestroy",
    "cuDriverGetVersion",
];

/// The driver library, opened by coopgraph itself under a name cudarc's loader also tries, and
/// kept open for the process; `None` where there is none. Opened here rather than through cudarc
/// so that the check works however cudarc reaches the driver (loaded at run time, or linked when
/// a crate beside coopgraph asks cudarc for `dynamic-linking`).
fn driver_library() -> Option<&'static libloading::Library> {
    static LIB: OnceLock<Option<libloading::Library>> = OnceLock::new();
    LIB.get_or_init(|| {
        library_names().into_iter().find_map(|name| {
            // SAFETY: opening the driver library runs its initialisers, which touch no state of
            // this program; the handle is kept for the process, so nothing looked up in it
            // outlives it.
            unsafe { libloading::Library::new(name) }.ok()
        })
    })
    .as_ref()
}

/// File names of the driver library, each one that cudarc's loader tries too (so where one is
/// found here, cudarc finds a library as well): `libcuda.so` and `libcuda.so.1` on Linux,
/// `nvcuda.dll` on Windows.
fn library_names() -> [String; 2] {
    use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
    let base = if cfg!(windows) { "nvcuda" } else { "cuda" };
    [
        format!("{DLL_PREFIX}{base}{DLL_SUFFIX}"),
        format!("{DLL_PREFIX}{base}{DLL_SUFFIX}.1"),
    ]
}

/// Checks, once per process, that the CUDA driver library can be loaded and has every entry
/// point the runtime uses. Never panics.
pub(super) fn ensure_driver() -> Result<(), RuntimeError> {
    static STATE: OnceLock<Result<(), Option<&'static str>>> = OnceLock::new();
    let state = STATE.get_or_init(|| {
        let lib = driver_library().ok_or(None)?;
        for &name in REQUIRED_SYMBOLS {
            // SAFETY: the symbol is only looked up, never called through this pointer type.
            let found = unsafe { lib.get::<*const c_void>(name.as_bytes()) }.is_ok();
            if !found {
                return Err(Some(name));
            }
        }
        Ok(())
    });
    match *state {
        Ok(()) => Ok(()),
        Err(None) => Err(RuntimeError::NoDriver),
        Err(Some(name)) => Err(RuntimeError::MissingDriverSymbol { name }),
    }
}

/// The driver's version: 1000 × major + 10 × minor (12080 for CUDA 12.8).
pub(super) fn driver_version() -> Result<u32, RuntimeError> {
    ensure_driver()?;
    let mut version = 0i32;
    // SAFETY: the driver library is loaded (checked above, `cuDriverGetVersion` among the
    // required entry points) and `version` is a valid out pointer; the call needs no context.
    unsafe { sys::cuDriverGetVersion(&mut version) }
        .result()
        .map_err(RuntimeError::driver("cuDriverGetVersion"))?;
    Ok(u32::try_from(version).unwrap_or(0))
}

/// A module loaded in a context and the entry function looked up in it. Unloads the module on
/// drop. Holds the context, so the context outlives the module and the function handle.
#[derive(Debug)]
pub(super) struct CudaKernel {
    pub(super) module: sys::CUmodule,
    pub(super) function: sys::CUfunction,
    pub(super) ctx: Arc<CudaContext>,
}

// SAFETY: `CUmodule` and `CUfunction` are opaque driver handles that the driver allows any
// thread to use once the owning context is current; every use below binds `ctx` first. The
// handles are never freed while shared (only in `Drop`, with `&mut self`).
unsafe impl Send for CudaKernel {}
// SAFETY: as for `Send`: the driver synchronizes concurrent use of module and function handles.
unsafe impl Sync for CudaKernel {}

impl Drop for CudaKernel {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: `module` was loaded by `cuModuleLoadDataEx` in `ctx`, is unloaded only
            // here, and no launch can be in flight from host code that still holds this value.
            // Work already queued on the device keeps the module's code alive in the driver.
            let _ = unsafe { sys::cuModuleUnload(self.module) };
        }
    }
}

/// `cuFuncGetParamInfo` (CUDA 12.4 drivers and later), looked up in the driver library rather
/// than through cudarc's bindings, which declare it only for the CUDA versions that have it.
/// Returns the driver's raw status (a C enum, so an `int`).
type ParamInfoFn = unsafe extern "C" fn(sys::CUfunction, usize, *mut usize, *mut usize) -> i32;

/// The driver's `cuFuncGetParamInfo`, where it has one.
fn param_info_fn() -> Option<ParamInfoFn> {
    static FN: OnceLock<Option<ParamInfoFn>> = OnceLock::new();
    *FN.get_or_init(|| {
        let lib = driver_library()?;
        // SAFETY: the symbol is the driver's `cuFuncGetParamInfo`, whose C signature is
        // `CUresult (CUfunction, size_t, size_t *, size_t *)`: `ParamInfoFn` with the enum as
        // `int`. The library stays open for the process, so the pointer stays valid.
        let symbol = unsafe { lib.get::<ParamInfoFn>(b"cuFuncGetParamInfo") };
        symbol.ok().map(|s| *s)
    })
}

/// A raw driver status as cudarc's enum, for the statuses a parameter query can return; any
/// other becomes `CUDA_ERROR_UNKNOWN` (an `int` outside the enum cannot be made into one).
fn status_of(code: i32) -> sys::CUresult {
    use sys::CUresult as R;
    match code {
        0 => R::CUDA_SUCCESS,
        1 => R::CUDA_ERROR_INVALID_VALUE,
        3 => R::CUDA_ERROR_NOT_INITIALIZED,
        4 => R::CUDA_ERROR_DEINITIALIZED,
        201 => R::CUDA_ERROR_INVALID_CONTEXT,
        400 => R::CUDA_ERROR_INVALID_HANDLE,
        _ => R::CUDA_ERROR_UNKNOWN,
    }
}

impl CudaKernel {
    /// Offset and size of parameters `0..count` of the entry, as the driver laid them out from
    /// the PTX; `None` where the driver cannot say (`cuFuncGetParamInfo` needs a CUDA 12.4
    /// driver). `count` is the number the PTX declares, so no query asks past the last one; a
    /// query the driver refuses all the same (a PTX the count was misread from) ends the list.
    pub(super) fn param_layout(
        &self,
        count: usize,
    ) -> Result<Option<Vec<ParamLayout>>, RuntimeError> {
        let Some(param_info) = param_info_fn() else {
            return Ok(None);
        };
        self.ctx
            .bind_to_thread()
            .map_err(RuntimeError::driver("cuCtxSetCurrent"))?;
        let mut layout = Vec::with_capacity(count);
        for index in 0..count {
            let (mut offset, mut size) = (0usize, 0usize);
            // SAFETY: `function` is a live handle in the bound context; both out pointers are
            // valid; an index past the last parameter is reported, not read.
            let status = unsafe { param_info(self.function, index, &mut offset, &mut size) };
            match status_of(status) {
                sys::CUresult::CUDA_SUCCESS => layout.push(ParamLayout {
                    offset: u32::try_from(offset).unwrap_or(u32::MAX),
                    size: u32::try_from(size).unwrap_or(u32::MAX),
                }),
                sys::CUresult::CUDA_ERROR_INVALID_VALUE => break,
                code => {
                    return Err(RuntimeError::Driver {
                        call: "cuFuncGetParamInfo",
                        code: DriverError(code),
                    });
                }
            }
        }
        Ok(Some(layout))
    }

    /// `cuFuncGetAttribute` on the entry.
    pub(super) fn attribute(&self, attr: sys::CUfunction_attribute) -> Result<i32, RuntimeError> {
        self.ctx
            .bind_to_thread()
            .map_err(RuntimeError::driver("cuCtxSetCurrent"))?;
        let mut value = 0i32;
        // SAFETY: `function` is a live handle of a module loaded in `ctx` (bound above);
        // `value` is a valid out pointer.
        unsafe { sys::cuFuncGetAttribute(&mut value, attr, self.function) }
            .result()
            .map_err(RuntimeError::driver("cuFuncGetAttribute"))?;
        Ok(value)
    }

    /// Raises the entry's dynamic shared memory limit to `bytes`.
    pub(super) fn set_max_dynamic_smem(&self, bytes: u32) -> Result<(), RuntimeError> {
        let value = i32::try_from(bytes).map_err(|_| RuntimeError::SharedMemory {
            need: u64::from(bytes),
            limit: i32::MAX as u64,
        })?;
        let attr = sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
        self.set_attribute(attr, value)
    }

    /// `cuFuncSetAttribute` on the entry (every attribute it sets takes an int).
    fn set_attribute(
        &self,
        attr: sys::CUfunction_attribute,
        value: i32,
    ) -> Result<(), RuntimeError> {
        self.ctx
            .bind_to_thread()
            .map_err(RuntimeError::driver("cuCtxSetCurrent"))?;
        // SAFETY: `function` is a live handle in the bound context; the attribute takes an int.
        unsafe { sys::cuFuncSetAttribute(self.function, attr, value) }
            .result()
            .map_err(RuntimeError::driver("cuFuncSetAttribute"))
    }

    /// Blocks of this entry that fit on one SM at once.
    pub(super) fn max_active_blocks(
        &self,
        threads_per_block: u32,
        dynamic_smem: u32,
    ) -> Result<u32, RuntimeError> {
        let threads = i32::try_from(threads_per_block).unwrap_or(i32::MAX);
        self.ctx
            .bind_to_thread()
            .map_err(RuntimeError::driver("cuCtxSetCurrent"))?;
        let mut blocks = 0i32;
        // SAFETY: `function` is a live handle in the bound context; `blocks` is a valid out
        // pointer; flags 0 is `CU_OCCUPANCY_DEFAULT`.
        unsafe {
            sys::cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
                &mut blocks,
                self.function,
                threads,
                dynamic_smem as usize,
                0,
            )
        }
        .result()
        .map_err(RuntimeError::driver(
            "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
        ))?;
        Ok(u32::try_from(blocks).unwrap_or(0))
    }

    /// Lets launches use clusters past CUDA's portable 8 blocks (up to 16 on sm_90).
    pub(super) fn allow_non_portable_clusters(&self) -> Result<(), RuntimeError> {
        let attr = sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED;
        self.set_attribute(attr, 1)
    }

    /// Clusters of `cluster` blocks of this entry (launched as `shape`) that can be resident
    /// on the device at once (`cuOccupancyMaxActiveClusters`).
    pub(super) fn max_active_clusters(
        &self,
        shape: Shape,
        cluster: [u32; 3],
    ) -> Result<u32, RuntimeError> {
        self.ctx
            .bind_to_thread()
            .map_err(RuntimeError::driver("cuCtxSetCurrent"))?;
        let mut attr = cluster_attribute(cluster);
        let config = launch_config(shape, std::ptr::null_mut(), &mut attr);
        let mut clusters = 0i32;
        // SAFETY: `function` is a live handle in the bound context; `config` points at one
        // initialized attribute that outlives the call; `clusters` is a valid out pointer.
        unsafe { sys::cuOccupancyMaxActiveClusters(&mut clusters, self.function, &config) }
            .result()
            .map_err(RuntimeError::driver("cuOccupancyMaxActiveClusters"))?;
        Ok(u32::try_from(clusters).unwrap_or(0))
    }

    /// Launches the entry on `streams.launch`.
    ///
    /// `args` went through [`super::args::check`], which matched every argument with the
    /// image's parameters (count, role, dtype), checked that every buffer lives in this
    /// kernel's context and filled in the hidden parameters; both streams belong to the same
    /// context (checked by the caller). cudarc's cross-stream tracking of each buffer goes
    /// through `streams.track`: it waits for the buffer's earlier users and records the use.
    pub(super) fn launch(
        &self,
        shape: Shape,
        streams: Streams<'_>,
        args: CheckedArgs<'_, '_>,
    ) -> Result<(), RuntimeError> {
        let Shape {
            grid,
            block,
            dynamic_smem,
            cooperative,
            cluster,
        } = shape;
        let Streams {
            launch: stream,
            track,
        } = streams;
        self.ctx
            .bind_to_thread()
            .map_err(RuntimeError::driver("cuCtxSetCurrent"))?;
        let (slots, hidden) = args.into_parts();
        // One 8-byte cell per parameter: a device address, or a scalar's bytes at the start;
        // the hidden parameters' cells last.
        let mut cells: smallvec::SmallVec<[u64; 12]> = smallvec::SmallVec::new();
        // Guards that record the read/write events of cudarc's cross-stream tracking once the
        // launch is queued (as cudarc's own launch builder does); dropped after the launch.
        let mut guards: smallvec::SmallVec<[SyncOnDrop<'_>; 12]> = smallvec::SmallVec::new();
        for slot in slots.iter_mut() {
            match &mut slot.0 {
                Slot::Scalar { dtype, bits } => cells.push(scalar_cell(dtype.bytes(), *bits)),
                Slot::CudaRead { mem, .. } => {
                    let (ptr, guard) = mem.read_ptr(track);
                    cells.push(ptr);
                    guards.push(guard);
                }
                Slot::CudaWrite { mem, .. } => {
                    let (ptr, guard) = mem.write_ptr(track);
                    cells.push(ptr);
                    guards.push(guard);
                }
                // `check` admits simulator buffers only for simulator functions.
                Slot::Sim { .. } => {
                    return Err(RuntimeError::WrongDevice {
                        what: Foreign::Argument {
                            index: cells.len(),
                            name: String::new(),
                        },
                    });
                }
            }
        }
        cells.extend(hidden.iter().map(|h| scalar_cell(h.bytes, h.bits)));
        let mut params: smallvec::SmallVec<[*mut c_void; 12]> = cells
            .iter_mut()
            .map(|c| c as *mut u64 as *mut c_void)
            .collect();
        let [gx, gy, gz] = grid;
        let [bx, by, bz] = block;
        let result = if let Some(cluster) = cluster {
            let mut attr = cluster_attribute(cluster);
            let config = launch_config(shape, stream.cu_stream(), &mut attr);
            // SAFETY: as for `cuLaunchKernel` below; `config` holds the launch's shape and
            // stream and points at one initialized cluster attribute that outlives the call
            // (the grid is a whole number of such clusters, checked by the caller).
            unsafe {
                sys::cuLaunchKernelEx(
                    &config,
                    self.function,
                    params.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            }
        } else if cooperative {
            // SAFETY: `function` is live in the bound context and `stream` belongs to it (and
            // `track`, through which every buffer's earlier users were waited for: on `stream`
            // itself, or before a capture on `stream` began).
            // `params` holds one pointer per declared parameter (the image's parameters and
            // hidden parameters, whose count and sizes loading checked against the entry),
            // each to an 8-byte cell holding a device address of a buffer of the parameter's
            // dtype in this context, or a scalar's bytes in native order at the start of the
            // cell (the driver copies exactly the parameter's size). The cells outlive the
            // call, which copies them. The grid fits the occupancy limit (checked by the
            // caller).
            unsafe {
                sys::cuLaunchCooperativeKernel(
                    self.function,
                    gx,
                    gy,
                    gz,
                    bx,
                    by,
                    bz,
                    dynamic_smem,
                    stream.cu_stream(),
                    params.as_mut_ptr(),
                )
            }
        } else {
            // SAFETY: as above, with no extra options (`extra` is null).
            unsafe {
                sys::cuLaunchKernel(
                    self.function,
                    gx,
                    gy,
                    gz,
                    bx,
                    by,
                    bz,
                    dynamic_smem,
                    stream.cu_stream(),
                    params.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            }
        };
        drop(guards);
        result
            .result()
            .map_err(RuntimeError::driver(match (cluster, cooperative) {
                (Some(_), _) => "cuLaunchKernelEx",
                (None, true) => "cuLaunchCooperativeKernel",
                (None, false) => "cuLaunchKernel",
            }))
    }
}

/// The launch attribute of thread-block clusters of `cluster` blocks.
fn cluster_attribute(cluster: [u32; 3]) -> sys::CUlaunchAttribute {
    let [x, y, z] = cluster;
    sys::CUlaunchAttribute {
        id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
        pad: [0; 4],
        value: sys::CUlaunchAttributeValue {
            clusterDim: sys::CUlaunchAttributeValue_union__bindgen_ty_1 { x, y, z },
        },
    }
}

/// `cuLaunchKernelEx`'s configuration of `shape` on `stream`, with the one attribute `attr`.
fn launch_config(
    shape: Shape,
    stream: sys::CUstream,
    attr: &mut sys::CUlaunchAttribute,
) -> sys::CUlaunchConfig {
    let [gx, gy, gz] = shape.grid;
    let [bx, by, bz] = shape.block;
    sys::CUlaunchConfig {
        gridDimX: gx,
        gridDimY: gy,
        gridDimZ: gz,
        blockDimX: bx,
        blockDimY: by,
        blockDimZ: bz,
        sharedMemBytes: shape.dynamic_smem,
        hStream: stream,
        attrs: attr,
        numAttrs: 1,
    }
}

/// The shape of one launch.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape {
    pub(super) grid: [u32; 3],
    pub(super) block: [u32; 3],
    pub(super) dynamic_smem: u32,
    /// Whether to launch cooperatively (every block resident at once).
    pub(super) cooperative: bool,
    /// The thread-block cluster shape to launch with (`cuLaunchKernelEx`), when given.
    pub(super) cluster: Option<[u32; 3]>,
}

/// The streams of one launch: the one it runs on, and the one cudarc's tracking of its buffers
/// goes through. They are one stream but for a launch into a graph: there `track` is a stream
/// outside the capture, so that waiting for a buffer's earlier users and recording this use
/// touch no event inside the graph (the graph replays the launch; its replays are ordered by
/// the stream they are launched on).
#[derive(Clone, Copy)]
pub(super) struct Streams<'s> {
    pub(super) launch: &'s CudaStream,
    pub(super) track: &'s CudaStream,
}

/// An instantiated CUDA graph. cudarc's `CudaGraph` holds raw driver handles, so it is neither
/// `Send` nor `Sync`; this wrapper is `Send`, and is only ever used behind a mutex.
pub(super) struct GraphExec(pub(super) cudarc::driver::CudaGraph);

// SAFETY: the driver allows a graph and its executable to be used from any thread as long as
// calls on them are serialized; `GraphExec` is only reached through a `Mutex` (in `Graph`),
// and is dropped (destroying the handles) by whichever thread drops that mutex.
unsafe impl Send for GraphExec {}

impl GraphExec {
    /// Launches the graph on `stream`, which belongs to the graph's context (checked by the
    /// caller); a replay needs no waiting for buffers (see `Streams`).
    pub(super) fn launch(&self, stream: &CudaStream) -> Result<(), RuntimeError> {
        stream
            .context()
            .bind_to_thread()
            .map_err(RuntimeError::driver("cuCtxSetCurrent"))?;
        // SAFETY: the executable graph is live (owned by `self.0`) and was instantiated in the
        // stream's context; the caller holds the mutex around `self`, so no other call on the
        // graph runs at once. Every buffer the graph touches is alive: the caller holds each
        // captured buffer's liveness lock, checked it is alive, and makes its drop wait for
        // this launch.
        unsafe { sys::cuGraphLaunch(self.0.cu_graph_exec(), stream.cu_stream()) }
            .result()
            .map_err(RuntimeError::driver("cuGraphLaunch"))
    }
}

/// `len` zeroed elements of page-locked host memory in `ctx` (not write-combined: the host
/// reads what is copied into it). `len` elements of `T` fit the address space (checked by the
/// caller).
pub(super) fn alloc_pinned_zeroed<T: DeviceRepr + ValidAsZeroBits>(
    ctx: &Arc<CudaContext>,
    len: usize,
) -> Result<PinnedHostSlice<T>, RuntimeError> {
    // SAFETY: the memory is written below before anything can read it: the slice is returned
    // only after every byte is zeroed, and zero bits are a value of every element type.
    let mut pinned = unsafe { ctx.alloc_pinned_with_flags::<T>(len, 0) }
        .map_err(RuntimeError::driver("cuMemHostAlloc"))?;
    let ptr = pinned
        .as_mut_ptr()
        .map_err(RuntimeError::driver("cuEventSynchronize"))?;
    // SAFETY: `ptr` is the start of a fresh allocation of `len` elements of `T`, aligned for
    // `T` (cudarc asserts it), and no copy into it is queued yet.
    unsafe { std::ptr::write_bytes(ptr, 0, len) };
    Ok(pinned)
}

/// A scalar's bytes in native order at the start of an 8-byte cell.
fn scalar_cell(size: u32, bits: u64) -> u64 {
    let mut cell = [0u8; 8];
    match size {
        1 => cell[..1].copy_from_slice(&(bits as u8).to_ne_bytes()),
        2 => cell[..2].copy_from_slice(&(bits as u16).to_ne_bytes()),
        4 => cell[..4].copy_from_slice(&(bits as u32).to_ne_bytes()),
        _ => cell.copy_from_slice(&bits.to_ne_bytes()),
    }
    u64::from_ne_bytes(cell)
}

/// A CUDA buffer of any element type, seen as memory a kernel reads.
pub(super) trait CudaMem: Send + Sync {
    /// The context the memory was allocated in.
    fn context(&self) -> &Arc<CudaContext>;
    /// The address, after making `stream` wait for earlier writes; the guard records the read.
    fn read_ptr<'s>(&'s self, stream: &'s CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'s>);
}

/// A CUDA buffer of any element type, seen as memory a kernel writes.
pub(super) trait CudaMemMut: Send + Sync {
    /// The context the memory was allocated in.
    fn context(&self) -> &Arc<CudaContext>;
    /// The address, after making `stream` wait for earlier reads and writes; the guard records
    /// the write.
    fn write_ptr<'s>(&'s mut self, stream: &'s CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'s>);
}

impl<T: Send + Sync> CudaMem for CudaSlice<T> {
    fn context(&self) -> &Arc<CudaContext> {
        CudaSlice::context(self)
    }
    fn read_ptr<'s>(&'s self, stream: &'s CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'s>) {
        self.device_ptr(stream)
    }
}

impl<T: Send + Sync> CudaMemMut for CudaSlice<T> {
    fn context(&self) -> &Arc<CudaContext> {
        CudaSlice::context(self)
    }
    fn write_ptr<'s>(&'s mut self, stream: &'s CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'s>) {
        self.device_ptr_mut(stream)
    }
}

impl<T: Send + Sync> CudaMem for CudaView<'_, T> {
    fn context(&self) -> &Arc<CudaContext> {
        DeviceSlice::stream(self).context()
    }
    fn read_ptr<'s>(&'s self, stream: &'s CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'s>) {
        self.device_ptr(stream)
    }
}

impl<T: Send + Sync> CudaMem for CudaViewMut<'_, T> {
    fn context(&self) -> &Arc<CudaContext> {
        DeviceSlice::stream(self).context()
    }
    fn read_ptr<'s>(&'s self, stream: &'s CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'s>) {
        self.device_ptr(stream)
    }
}

impl<T: Send + Sync> CudaMemMut for CudaViewMut<'_, T> {
    fn context(&self) -> &Arc<CudaContext> {
        DeviceSlice::stream(self).context()
    }
    fn write_ptr<'s>(&'s mut self, stream: &'s CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'s>) {
        self.device_ptr_mut(stream)
    }
}

/// Fills `slice` with a repeated 1-, 2- or 4-byte pattern on `stream` (`cuMemsetD8/16/32Async`).
/// `pattern` holds the element's bits; `size` is the element size.
pub(super) fn memset_pattern<T: DeviceRepr>(
    stream: &Arc<CudaStream>,
    slice: &mut CudaSlice<T>,
    size: u32,
    pattern: u32,
) -> Result<(), RuntimeError> {
    let elems = slice.len();
    if elems == 0 {
        return Ok(());
    }
    stream
        .context()
        .bind_to_thread()
        .map_err(RuntimeError::driver("cuCtxSetCurrent"))?;
    let (ptr, _record) = slice.device_ptr_mut(stream);
    // `ptr` is the start of `slice`, a live allocation of `bytes` bytes in the stream's
    // (bound) context. Each fill below writes `bytes / unit` units of `unit` bytes, so it stays
    // inside the allocation; `_record` orders later users of the slice after the fill.
    let bytes = elems * std::mem::size_of::<T>();
    let cu_stream = stream.cu_stream();
    let (call, result) = match size {
        1 => (
            "cuMemsetD8Async",
            // SAFETY: see above; unit 1.
            unsafe { sys::cuMemsetD8Async(ptr, pattern as u8, bytes, cu_stream) },
        ),
        2 => (
            "cuMemsetD16Async",
            // SAFETY: see above; unit 2.
            unsafe { sys::cuMemsetD16Async(ptr, pattern as u16, bytes / 2, cu_stream) },
        ),
        _ => (
            "cuMemsetD32Async",
            // SAFETY: see above; unit 4.
            unsafe { sys::cuMemsetD32Async(ptr, pattern, bytes / 4, cu_stream) },
        ),
    };
    result.result().map_err(RuntimeError::driver(call))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalar_cells_hold_the_value_at_the_start() {
        let cell = scalar_cell(4, 0xdead_beef).to_ne_bytes();
        assert_eq!(
            u32::from_ne_bytes(cell[..4].try_into().unwrap()),
            0xdead_beef
        );
        let cell = scalar_cell(1, 0x1ff).to_ne_bytes();
        assert_eq!(cell[0], 0xff);
        assert_eq!(&cell[1..], &[0; 7]);
        let cell = scalar_cell(2, 0xabcd).to_ne_bytes();
        assert_eq!(u16::from_ne_bytes([cell[0], cell[1]]), 0xabcd);
        assert_eq!(scalar_cell(8, u64::MAX - 1), u64::MAX - 1);
    }

    #[test]
    fn driver_check_never_panics() {
        // On a machine without libcuda this is `NoDriver`; with one, it is `Ok`.
        match ensure_driver() {
            Ok(()) | Err(RuntimeError::NoDriver) => {}
            Err(RuntimeError::MissingDriverSymbol { name }) => {
                assert!(REQUIRED_SYMBOLS.contains(&name))
            }
            Err(e) => panic!("unexpected {e}"),
        }
    }
}

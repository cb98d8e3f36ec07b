//! Loaded functions and their launch: shape checks, argument checks, occupancy for cooperative
//! launches, then the driver (or the simulator).
//!
//! The launch goes through `cuLaunchKernel` / `cuLaunchCooperativeKernel` on the module we
//! loaded with `cuModuleLoadDataEx` (cudarc's launch builder only takes modules cudarc loaded
//! itself). Buffer arguments take part in cudarc's cross-stream tracking exactly as in its
//! builder: the stream waits for earlier writers (and, for outputs, readers) of each buffer,
//! and the launch is recorded as a read or write of it.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use cudarc::driver::{DevicePtrMut, sys};

use super::RuntimeError;
use super::args::{self, ArgList, KernelArgs};
use super::buffer::Buffer;
use super::checks;
use super::device::{Device, Imp};
use super::disk_cache::Origin;
use super::driver::{CudaKernel, Shape, Streams};
use super::error::Foreign;
use super::graph::SimLaunch;
use super::image::{HiddenParam, KernelImage, ParamKind};
use super::load::{self, DiskModule, default_dynamic_limit};
use super::resources::{self, Resources};
use super::stream::Stream;
use crate::ir::{Bounds, Loc, MAX_CLUSTER_BLOCKS, MAX_LAUNCH_CLUSTER_BLOCKS};
use crate::sim::{LaunchReport, SimModule};

/// A kernel loaded in one context (or one simulator): the module and the image it came from.
pub(super) struct LoadedKernel {
    image: KernelImage,
    module: LoadedModule,
    /// The JIT's info log (empty on the simulator).
    jit_log: String,
    /// Where the module's code came from.
    origin: Origin,
    /// The largest dynamic shared memory the function is configured for (locked while the
    /// driver attribute is raised, so concurrent launches never lower it).
    smem_configured: Mutex<u32>,
}

enum LoadedModule {
    Cuda(CudaKernel),
    Sim(SimModule),
}

impl LoadedKernel {
    /// Loads `image` on `device`.
    pub(super) fn load(
        device: &Device,
        image: KernelImage,
        disk: Option<&DiskModule>,
    ) -> Result<Self, RuntimeError> {
        let limits = device.limits();
        let threads = image.threads_per_block();
        if threads == 0 || threads > u64::from(limits.max_threads_per_block) {
            return Err(RuntimeError::BlockTooLarge {
                block: image.block,
                max_threads: limits.max_threads_per_block,
            });
        }
        for (index, h) in image.hidden.iter().enumerate() {
            // A length names a buffer parameter; the check record names none.
            let Some(buffer) = h.buffer() else { continue };
            if image
                .params
                .get(buffer)
                .is_none_or(|p| p.kind == ParamKind::Scalar)
            {
                return Err(RuntimeError::HiddenParam {
                    entry: image.entry.clone(),
                    index,
                });
            }
        }
        let (module, jit_log, origin) = match &device.inner.imp {
            Imp::Cuda(c) => {
                let (kernel, log, origin) = load::load_cuda(&c.ctx, &image, limits, disk)?;
                (LoadedModule::Cuda(kernel), log, origin)
            }
            Imp::Sim(_) => {
                let start = Instant::now();
                let module = load::load_sim(&image, limits)?;
                log::debug!(
                    "`{}` parsed for the simulator in {:.3} ms",
                    image.entry,
                    start.elapsed().as_secs_f64() * 1e3
                );
                (LoadedModule::Sim(module), String::new(), Origin::Built)
            }
        };
        let smem_configured = Mutex::new(
            image
                .dynamic_smem
                .max(default_dynamic_limit(image.static_smem)),
        );
        Ok(LoadedKernel {
            image,
            module,
            jit_log,
            origin,
            smem_configured,
        })
    }

    /// Where the module's code came from.
    pub(super) fn origin(&self) -> Origin {
        self.origin
    }

    /// The entry's name.
    pub(super) fn entry(&self) -> &str {
        &self.image.entry
    }
}

/// Where and how to launch: the grid, and optionally a different stream or more dynamic shared
/// memory than the kernel's image asks for.
#[derive(Debug, Clone)]
pub struct LaunchConfig {
    /// Blocks in each dimension (each at least 1).
    pub grid: [u32; 3],
    /// The block shape; `None` uses the image's. When given it must equal the image's.
    pub block: Option<[u32; 3]>,
    /// Dynamic shared memory per block; `None` uses what the kernel needs (the image's, plus
    /// its dynamic array's bytes). When given it must be at least that.
    pub dynamic_smem: Option<u32>,
    /// The length, in elements, of the kernel's dynamic shared array (see
    /// [`KernelBuilder::dynamic_shared_array`](crate::KernelBuilder::dynamic_shared_array)):
    /// required for a kernel that has one, refused for one that has none.
    pub dynamic_array_len: Option<u32>,
    /// The stream to launch on, a stream of the function's device; `None` uses the device's
    /// own. A stream that is capturing a graph records the launch instead of running it.
    pub stream: Option<Stream>,
    /// The thread-block cluster shape: required for a kernel built with
    /// [`cluster_at_launch`](crate::KernelBuilder::cluster_at_launch); `None` (or the same
    /// shape) for one built with [`cluster`](crate::KernelBuilder::cluster).
    pub cluster: Option<[u32; 3]>,
}

impl LaunchConfig {
    /// A launch of `grid` blocks with everything else from the image and the device: along
    /// y and z only for a kernel that reads a block's index or the grid's extent there
    /// ([`index::block_idx`](crate::ir::index::block_idx) has an example), each extent within
    /// the device's limits (else [`RuntimeError::GridTooLarge`] names the launch's line).
    pub fn grid(grid: [u32; 3]) -> Self {
        LaunchConfig {
            grid,
            block: None,
            dynamic_smem: None,
            dynamic_array_len: None,
            stream: None,
            cluster: None,
        }
    }

    /// A one-dimensional launch of `blocks` blocks.
    pub fn blocks(blocks: u32) -> Self {
        LaunchConfig::grid([blocks, 1, 1])
    }

    /// Launches on `stream` instead of the device's stream.
    pub fn on_stream(mut self, stream: &Stream) -> Self {
        self.stream = Some(stream.clone());
        self
    }

    /// Launches in thread-block clusters of `cluster` blocks (`cuLaunchKernelEx` with the
    /// cluster-dimension attribute): see
    /// [`KernelBuilder::cluster_at_launch`](crate::KernelBuilder::cluster_at_launch) for an
    /// example.
    pub fn with_cluster(mut self, cluster: [u32; 3]) -> Self {
        self.cluster = Some(cluster);
        self
    }

    /// Gives each block `bytes` of dynamic shared memory.
    pub fn with_dynamic_smem(mut self, bytes: u32) -> Self {
        self.dynamic_smem = Some(bytes);
        self
    }

    /// Gives the kernel's dynamic shared array `len` elements: the runtime adds their bytes
    /// to the dynamic shared memory the kernel's own collectives need (see
    /// [`KernelBuilder::dynamic_shared_array`](crate::KernelBuilder::dynamic_shared_array) for
    /// an example). More than a block can have is [`RuntimeError::DynamicArrayTooLarge`],
    /// which names the launch's line and every other user of shared memory.
    pub fn with_dynamic_array_len(mut self, len: u32) -> Self {
        self.dynamic_array_len = Some(len);
        self
    }
}

impl Default for LaunchConfig {
    /// One block.
    fn default() -> Self {
        LaunchConfig::blocks(1)
    }
}

/// Which kernels a launch may run: those that check their accesses against the buffers'
/// lengths, or (through the unsafe entry point) every kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Checked,
    Unchecked,
}

/// A kernel loaded on a device, ready to launch. Cheap to clone.
///
/// Made by [`Device::compile`]; it launches only on the device (context) it was loaded in.
#[derive(Clone)]
pub struct Function {
    device: Device,
    kernel: Arc<LoadedKernel>,
}

impl std::fmt::Debug for Function {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Function({} on {:?})",
            self.kernel.image.entry, self.device
        )
    }
}

impl Function {
    pub(super) fn new(device: Device, kernel: Arc<LoadedKernel>) -> Self {
        Function { device, kernel }
    }

    /// The image the function was loaded from (PTX, signature, block shape).
    pub fn image(&self) -> &KernelImage {
        &self.kernel.image
    }

    /// The entry's name.
    pub fn name(&self) -> &str {
        &self.kernel.image.entry
    }

    /// The device the function runs on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The driver JIT's info log for this function's module (registers, spills); empty on the
    /// simulator. A module from the disk cache has the log its JIT wrote when it was stored.
    pub fn jit_log(&self) -> &str {
        &self.kernel.jit_log
    }

    /// Whether `self` and `other` are the same loaded module (so one was a cache hit of the
    /// other).
    pub fn same_module(&self, other: &Function) -> bool {
        Arc::ptr_eq(&self.kernel, &other.kernel)
    }

    /// Launches over `n` elements: `ceil(n / tile_elems)` blocks (at least one) along x; see
    /// [`config_over`](Self::config_over).
    #[track_caller]
    pub fn launch_over<'a>(&self, n: usize, args: impl KernelArgs<'a>) -> Result<(), RuntimeError> {
        self.launch(self.config_over(n)?, args)
    }

    /// The launch over `n` elements: `ceil(n / tile_elems)` blocks (at least one) along x.
    ///
    /// Kernels index elements with 32-bit integers, so `n` above `u32::MAX` is
    /// [`RuntimeError::TooManyElements`] (those elements could not be reached).
    #[track_caller]
    pub fn config_over(&self, n: usize) -> Result<LaunchConfig, RuntimeError> {
        let image = &self.kernel.image;
        if image.tile_elems == 0 {
            return Err(RuntimeError::ZeroTile {
                entry: image.entry.clone(),
            });
        }
        let n = n as u64;
        if n > u64::from(u32::MAX) {
            return Err(RuntimeError::TooManyElements {
                n,
                max: u64::from(u32::MAX),
            });
        }
        let blocks = n.div_ceil(u64::from(image.tile_elems)).max(1);
        let max = self.device.limits().max_grid;
        let grid_x = u32::try_from(blocks).ok().filter(|&b| b <= max[0]).ok_or(
            RuntimeError::GridTooLarge {
                grid: [blocks, 1, 1],
                max: max.map(u64::from),
                at: Loc::caller(),
            },
        )?;
        Ok(LaunchConfig::blocks(grid_x))
    }

    /// Launches `grid_x` blocks along x.
    #[track_caller]
    pub fn launch_grid<'a>(
        &self,
        grid_x: u32,
        args: impl KernelArgs<'a>,
    ) -> Result<(), RuntimeError> {
        self.launch(LaunchConfig::blocks(grid_x), args)
    }

    /// Launches as many blocks along x as can be resident on the device at once
    /// ([`max_cooperative_blocks`](Self::max_cooperative_blocks)), cooperatively where the
    /// kernel synchronizes the grid ([`KernelBuilder::sync_grid`](crate::KernelBuilder::sync_grid)):
    /// the persistent-kernel launch, whose blocks stride over the work themselves.
    ///
    /// Every launch of a kernel with a grid barrier is cooperative, through this method or
    /// [`launch`](Self::launch) and [`launch_grid`](Self::launch_grid) alike: the runtime
    /// checks that the grid can be resident at once
    /// ([`RuntimeError::CooperativeGridTooLarge`] before launching, never a hang), and
    /// launches it with `cuLaunchCooperativeKernel` (on the simulator, with every block
    /// running at once). A device without cooperative launch is
    /// [`RuntimeError::CooperativeUnsupported`].
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // Each block adds its count of threads, then (after the grid barrier) thread 0 of
    /// // block 0 doubles the total: the grid's threads, twice.
    /// let mut k = KernelBuilder::new("count").block(64);
    /// let total = k.buffer::<u32>("total");
    /// let g = k.this_grid();
    /// k.if_(coopgraph::ir::index::thread_rank().eq(0u32), |k| {
    ///     k.atomic(&total, 0u32, coopgraph::ir::Atomic::add(64u32));
    /// });
    /// k.sync_grid();
    /// k.if_(g.thread_rank().eq(0u32), |k| k.write(&total, 0u32, total.at(0u32) * 2u32));
    /// let f = Device::sim().compile(&k.build()?)?;
    /// let mut t = f.device().alloc_zeroed::<u32>(1)?;
    /// f.launch_cooperative((&mut t,))?;
    /// let blocks = f.max_cooperative_blocks()? as u32;
    /// assert_eq!(t.to_vec()?, [2 * 64 * blocks]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn launch_cooperative<'a>(&self, args: impl KernelArgs<'a>) -> Result<(), RuntimeError> {
        let blocks = self.max_cooperative_blocks()?;
        let blocks = u32::try_from(blocks).unwrap_or(u32::MAX);
        self.launch(LaunchConfig::blocks(blocks), args)
    }

    /// As [`launch_cooperative`](Self::launch_cooperative), with `blocks` blocks along x: a
    /// grid larger than can be resident at once is
    /// [`RuntimeError::CooperativeGridTooLarge`] (see
    /// [`KernelBuilder::sync_grid`](crate::KernelBuilder::sync_grid) for an example).
    #[track_caller]
    pub fn launch_cooperative_grid<'a>(
        &self,
        blocks: u32,
        args: impl KernelArgs<'a>,
    ) -> Result<(), RuntimeError> {
        self.launch(LaunchConfig::blocks(blocks), args)
    }

    /// Launches with `config`, after checking the block shape, the grid against the device's
    /// limits (and, for kernels that need it, against the number of blocks that can be
    /// resident at once), shared memory, and every argument against the image's parameters.
    ///
    /// On CUDA the launch is queued on the stream and this returns once the driver accepted
    /// it; errors inside the kernel surface at the next synchronization. On the simulator the
    /// kernel runs to completion here.
    ///
    /// A kernel built without bounds checks
    /// ([`KernelBuilder::unchecked_bounds`](crate::KernelBuilder::unchecked_bounds)) is
    /// [`RuntimeError::UncheckedKernel`] here and in every other safe launch; see
    /// [`launch_unchecked`](Self::launch_unchecked).
    #[track_caller]
    pub fn launch<'a>(
        &self,
        config: LaunchConfig,
        args: impl KernelArgs<'a>,
    ) -> Result<(), RuntimeError> {
        self.launch_inner(config, args, Access::Checked).map(|_| ())
    }

    /// As [`launch`](Self::launch), for kernels built without bounds checks too.
    ///
    /// ```
    /// use coopgraph::runtime::{Device, RuntimeError};
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// # fn main() -> Result<(), coopgraph::Error> {
    /// let mut k = KernelBuilder::new("raw_copy").block(128).unchecked_bounds();
    /// let x = k.input::<u32>("x");
    /// let y = k.output::<u32>("y");
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::vectorize());
    /// k.store_to(b, &y, &t, Store::vectorize());
    /// let device = Device::sim();
    /// let f = device.compile(&k.build()?)?;
    /// let x = device.upload(&vec![7u32; 1024])?;
    /// let mut y = device.alloc_zeroed::<u32>(1024)?;
    /// // The safe launches refuse it.
    /// let refused = f.launch_over(1024, (&x, &mut y));
    /// assert!(matches!(refused, Err(RuntimeError::UncheckedKernel { .. })));
    /// // Two blocks of 512 elements: every access is inside both buffers of 1024.
    /// // SAFETY: the grid covers exactly the buffers' 1024 elements.
    /// unsafe { f.launch_unchecked(f.config_over(1024)?, (&x, &mut y))? };
    /// assert_eq!(y.to_vec()?, vec![7u32; 1024]);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Safety
    ///
    /// The kernel may not check its accesses against the lengths of the buffers it is given.
    /// The caller must make sure that, for this grid and these arguments, every element the
    /// kernel reads or writes lies inside the buffer passed for it: for a kernel built here,
    /// each load's and store's offset plus the part of its tile it moves (its valid items,
    /// else the whole tile) must be within the buffer, in every block of the grid. An access
    /// outside is undefined behaviour on the GPU (it may read or overwrite other allocations);
    /// the simulator reports it as an out-of-bounds fault.
    #[track_caller]
    pub unsafe fn launch_unchecked<'a>(
        &self,
        config: LaunchConfig,
        args: impl KernelArgs<'a>,
    ) -> Result<(), RuntimeError> {
        self.launch_inner(config, args, Access::Unchecked)
            .map(|_| ())
    }

    /// As [`launch`](Self::launch), and on the simulator also returns the simulator's report
    /// of the run (`None` on CUDA).
    #[track_caller]
    pub fn launch_with_report<'a>(
        &self,
        config: LaunchConfig,
        args: impl KernelArgs<'a>,
    ) -> Result<Option<LaunchReport>, RuntimeError> {
        self.launch_inner(config, args, Access::Checked)
    }

    #[track_caller]
    fn launch_inner<'a>(
        &self,
        config: LaunchConfig,
        args: impl KernelArgs<'a>,
        access: Access,
    ) -> Result<Option<LaunchReport>, RuntimeError> {
        let image = &self.kernel.image;
        let limits = self.device.limits();
        if access == Access::Checked && image.bounds() == Bounds::Unchecked {
            return Err(RuntimeError::UncheckedKernel {
                entry: image.entry.clone(),
            });
        }

        let block = config.block.unwrap_or(image.block);
        if block != image.block {
            return Err(RuntimeError::BlockMismatch {
                expected: image.block,
                got: block,
            });
        }
        let grid = config.grid;
        if grid
            .iter()
            .zip(limits.max_grid)
            .any(|(&g, m)| g == 0 || g > m)
        {
            return Err(RuntimeError::GridTooLarge {
                grid: grid.map(u64::from),
                max: limits.max_grid.map(u64::from),
                at: Loc::caller(),
            });
        }
        // Blocks past 2^32 positions would wrap their 32-bit offsets onto other blocks' tiles.
        let positions = u64::from(grid[0]) * u64::from(image.tile_elems);
        if image.tile_offsets && positions > u64::from(u32::MAX) {
            return Err(RuntimeError::TooManyElements {
                n: positions,
                max: u64::from(u32::MAX),
            });
        }
        let cluster = self.cluster_shape(grid, config.cluster)?;
        let seen = image.grid_dims.clamp(1, 3) as usize;
        if grid[seen..].iter().any(|&g| g > 1) {
            return Err(RuntimeError::GridDimensionUnseen {
                entry: image.entry.clone(),
                grid,
                dims: image.grid_dims,
            });
        }
        // The kernel's own dynamic bytes, and its dynamic array's after them.
        let need = match (&image.dynamic_array, config.dynamic_array_len) {
            (None, None) => image.dynamic_smem,
            (Some(a), Some(len)) => {
                // The array's bytes past what a block can have name the launch and the array.
                let dynamic = u64::from(a.offset) + u64::from(len) * u64::from(a.elem_bytes);
                let total =
                    u64::from(image.static_smem) + dynamic.max(u64::from(image.dynamic_smem));
                let limit = u64::from(limits.smem_per_block_optin);
                match a.bytes_for(len) {
                    Some(bytes) if total <= limit => bytes.max(image.dynamic_smem),
                    _ => {
                        return Err(RuntimeError::DynamicArrayTooLarge {
                            array: a.what.clone(),
                            len,
                            need: total,
                            limit,
                            users: a.users.clone(),
                            at: Loc::caller(),
                        });
                    }
                }
            }
            (Some(a), None) => {
                return Err(RuntimeError::DynamicArrayUnsized {
                    entry: image.entry.clone(),
                    array: a.what.clone(),
                    at: Loc::caller(),
                });
            }
            (None, Some(_)) => {
                return Err(RuntimeError::NoDynamicArray {
                    entry: image.entry.clone(),
                    at: Loc::caller(),
                });
            }
        };
        let dynamic_smem = config.dynamic_smem.unwrap_or(need);
        if dynamic_smem < need {
            return Err(RuntimeError::DynamicSharedMemoryTooSmall {
                given: dynamic_smem,
                need,
            });
        }
        load::check_shared_memory(image, dynamic_smem, limits)?;

        let mut list = ArgList::new();
        args.push_into(&mut list);
        let mut checked = args::check(image, &mut list, self.device.target())?;
        let mut record = checks::new_record(&self.device, image)?;

        if image.needs_cooperative {
            if !limits.cooperative {
                return Err(RuntimeError::CooperativeUnsupported);
            }
            let blocks: u64 = grid.iter().map(|&g| u64::from(g)).product();
            let max = self.cooperative_limit(dynamic_smem)?;
            if blocks > max {
                return Err(RuntimeError::CooperativeGridTooLarge { grid: blocks, max });
            }
        }
        // The grid barrier's word: zeroed for each launch, so launches on different streams
        // never share one.
        let mut grid_word = if image.hidden.contains(&HiddenParam::GridBarrier) {
            Some(self.device.alloc_zeroed::<u32>(1)?)
        } else {
            None
        };

        if let Some(stream) = &config.stream {
            stream.check_on(&self.device)?;
        }
        // A stream capturing a graph keeps its recording locked while a launch goes in.
        let mut capture = config.stream.as_ref().map(Stream::recording);
        let recording = capture.as_mut().and_then(|c| c.as_mut());
        if record.is_some() && recording.is_some() {
            return Err(RuntimeError::CheckedKernelCaptured {
                entry: image.entry.clone(),
            });
        }
        if grid_word.is_some() && recording.is_some() {
            return Err(RuntimeError::CooperativeKernelCaptured {
                entry: image.entry.clone(),
            });
        }
        // Launches given a shape go through `cuLaunchKernelEx`; a kernel with its own shape
        // launched without one, as any kernel.
        let launch_cluster = config.cluster.and(cluster);
        let shape = Shape {
            grid,
            block,
            dynamic_smem,
            cooperative: image.needs_cooperative,
            cluster: launch_cluster,
        };
        log::trace!(
            "launch `{}`: grid {grid:?}, block {block:?}, {dynamic_smem} bytes of dynamic shared \
             memory{}{}",
            image.entry,
            if image.needs_cooperative {
                ", cooperative"
            } else {
                ""
            },
            if recording.is_some() {
                ", captured into a graph"
            } else {
                ""
            }
        );
        match (&self.kernel.module, &self.device.inner.imp) {
            (LoadedModule::Cuda(kernel), Imp::Cuda(c)) => {
                let stream = config
                    .stream
                    .as_ref()
                    .and_then(Stream::cuda_stream)
                    .unwrap_or(&c.stream);
                if **stream.context() != *kernel.ctx {
                    return Err(RuntimeError::WrongDevice {
                        what: Foreign::Stream,
                    });
                }
                if dynamic_smem > default_dynamic_limit(self.kernel.image.static_smem) {
                    let mut configured = self
                        .kernel
                        .smem_configured
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner());
                    if dynamic_smem > *configured {
                        log::debug!(
                            "`{}`: dynamic shared memory limit raised to {dynamic_smem} bytes",
                            image.entry
                        );
                        kernel.set_max_dynamic_smem(dynamic_smem)?;
                        *configured = dynamic_smem;
                    }
                }
                if let Some(c) = launch_cluster {
                    self.check_cluster_fits(kernel, shape, c)?;
                }
                let mut track = stream;
                if let Some(recording) = recording {
                    recording.add_buffers(image, &checked)?;
                    track = recording.fence().unwrap_or(stream);
                }
                // The record's address, held (and its use tracked) through the launch.
                let record_ptr = (record.as_mut())
                    .and_then(Buffer::as_cuda_mut)
                    .map(|slice| slice.device_ptr_mut(stream));
                if let Some((ptr, _)) = &record_ptr {
                    checked.set_record(image, *ptr);
                }
                // The grid barrier's word, likewise held through the launch.
                let word_ptr = (grid_word.as_mut())
                    .and_then(Buffer::as_cuda_mut)
                    .map(|slice| slice.device_ptr_mut(stream));
                if let Some((ptr, _)) = &word_ptr {
                    checked.set_grid_barrier(image, *ptr);
                }
                kernel.launch(
                    shape,
                    Streams {
                        launch: stream,
                        track,
                    },
                    checked,
                )?;
                drop(record_ptr);
                drop(word_ptr);
                if let Some(rec) = &record {
                    stream
                        .synchronize()
                        .map_err(RuntimeError::driver("cuStreamSynchronize"))?;
                    checks::read_record(image, rec)?;
                }
                Ok(None)
            }
            (LoadedModule::Sim(module), Imp::Sim(s)) => {
                if let Some(recording) = recording {
                    recording.add_buffers(image, &checked)?;
                    recording.add_sim_launch(SimLaunch {
                        function: self.clone(),
                        grid,
                        cluster: launch_cluster,
                        block,
                        dynamic_smem,
                        params: args::sim_params(checked),
                    });
                    return Ok(None);
                }
                if let Some(addr) = record.as_ref().and_then(Buffer::sim_addr) {
                    checked.set_record(image, addr);
                }
                if let Some(addr) = grid_word.as_ref().and_then(Buffer::sim_addr) {
                    checked.set_grid_barrier(image, addr);
                }
                let params = args::sim_params(checked);
                let report = {
                    let _in_order = s.launch_lock();
                    if image.needs_cooperative {
                        s.sim.launch_cooperative(
                            module,
                            &image.entry,
                            grid,
                            block,
                            dynamic_smem,
                            &params,
                        )?
                    } else if let Some(c) = launch_cluster {
                        let entry = &image.entry;
                        (s.sim).launch_clusters(
                            module,
                            entry,
                            grid,
                            c,
                            block,
                            dynamic_smem,
                            &params,
                        )?
                    } else {
                        s.sim
                            .launch(module, &image.entry, grid, block, dynamic_smem, &params)?
                    }
                };
                if let Some(rec) = &record {
                    checks::read_record(image, rec)?;
                }
                Ok(Some(report))
            }
            // A function is made only by `Device::compile` on the device it holds, so its
            // module and device are of one backend; this arm is never taken.
            (LoadedModule::Cuda(_), Imp::Sim(_)) | (LoadedModule::Sim(_), Imp::Cuda(_)) => {
                Err(RuntimeError::WrongDevice {
                    what: Foreign::Function,
                })
            }
        }
    }

    /// Runs one launch of a simulator graph (its arguments were checked at capture).
    pub(super) fn run_sim(&self, launch: &SimLaunch) -> Result<(), RuntimeError> {
        match (&self.kernel.module, &self.device.inner.imp) {
            (LoadedModule::Sim(module), Imp::Sim(s)) => {
                let _in_order = s.launch_lock();
                let entry = &self.kernel.image.entry;
                let (grid, block, smem) = (launch.grid, launch.block, launch.dynamic_smem);
                match launch.cluster {
                    Some(c) => s.sim.launch_clusters(
                        module,
                        entry,
                        grid,
                        c,
                        block,
                        smem,
                        &launch.params,
                    )?,
                    None => s
                        .sim
                        .launch(module, entry, grid, block, smem, &launch.params)?,
                };
                Ok(())
            }
            _ => Err(RuntimeError::WrongDevice {
                what: Foreign::Function,
            }),
        }
    }

    /// The driver's handle of the entry, on CUDA: for launching the kernel through the driver
    /// (or cudarc's `sys` bindings) yourself.
    ///
    /// The handle belongs to [`device`](Self::device)'s CUDA context
    /// ([`Device::cuda_context`]) and stays valid while this function or any clone of it
    /// lives (it is not to be unloaded or destroyed). A raw launch passes, after one argument
    /// per parameter of [`ImageParts::params`](super::ImageParts::params) (a buffer's device
    /// address, or a scalar), one value per [`ImageParts::hidden`](super::ImageParts::hidden)
    /// parameter: for each [`HiddenParam::Length`](super::HiddenParam::Length) the element
    /// count of the buffer passed for that parameter as a `u32` (`u32::MAX` for longer
    /// buffers), for each [`HiddenParam::Length64`](super::HiddenParam::Length64) the count as
    /// a `u64`. The kernel checks every access against these lengths, so lengths larger than
    /// the buffers make it read and write outside them; the layout of the whole parameter block
    /// is [`ImageParts::param_layout`](super::ImageParts::param_layout). Grid, block shape and
    /// dynamic shared memory follow the image (see [`launch`](Self::launch) for the checks a
    /// raw launch skips).
    ///
    /// ```no_run
    /// use coopgraph::runtime::Device;
    /// use cudarc::driver::{DevicePtr, sys};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let mut k = coopgraph::KernelBuilder::new("copy").block(128);
    /// # let x = k.input::<f32>("x");
    /// # let y = k.output::<f32>("y");
    /// # let b = k.this_block();
    /// # let t = k.load_from(b, &x, coopgraph::Load::direct());
    /// # k.store_to(b, &y, &t, coopgraph::Store::direct());
    /// # let kernel = k.build()?;
    /// let device = Device::cuda(0)?;
    /// let f = device.compile(&kernel)?; // a kernel `(x: &[f32], y: &mut [f32])`
    /// let stream = device.cuda_stream().expect("a CUDA device").clone();
    /// let x = stream.clone_htod(&[1.0f32; 1024])?;
    /// let y = stream.alloc_zeros::<f32>(1024)?;
    /// let (px, _rx) = x.device_ptr(&stream);
    /// let (py, _ry) = y.device_ptr(&stream);
    /// // The user parameters, then the hidden lengths (here of x and of y, in that order).
    /// let mut cells: Vec<u64> = vec![px, py];
    /// for hidden in &f.image().hidden {
    ///     // A u32 at the start of its cell (a u64 for `HiddenParam::Length64`).
    ///     cells.push([1024u64, 1024][hidden.buffer().expect("a length")]);
    /// }
    /// let mut params: Vec<*mut std::ffi::c_void> =
    ///     cells.iter_mut().map(|c| c as *mut u64 as *mut _).collect();
    /// let blocks = f.config_over(1024)?.grid[0];
    /// let [bx, by, bz] = f.image().block;
    /// device.cuda_context().expect("a CUDA device").bind_to_thread()?;
    /// // SAFETY: the function lives in this context; the cells match the parameter layout;
    /// // the lengths are those of the buffers passed.
    /// unsafe {
    ///     sys::cuLaunchKernel(
    ///         f.cu_function().expect("a CUDA function"),
    ///         blocks, 1, 1, bx, by, bz,
    ///         f.image().dynamic_smem,
    ///         stream.cu_stream(),
    ///         params.as_mut_ptr(),
    ///         std::ptr::null_mut(),
    ///     )
    ///     .result()?;
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn cu_function(&self) -> Option<sys::CUfunction> {
        match &self.kernel.module {
            LoadedModule::Cuda(kernel) => Some(kernel.function),
            LoadedModule::Sim(_) => None,
        }
    }

    /// Blocks of this kernel (with the image's dynamic shared memory) that can be resident on
    /// one SM at once: the driver's occupancy on CUDA, [`DeviceLimits::blocks_per_sm`](super::DeviceLimits::blocks_per_sm)
    /// on the simulator.
    pub fn max_active_blocks_per_sm(&self) -> Result<u32, RuntimeError> {
        self.blocks_per_sm(self.kernel.image.dynamic_smem)
    }

    /// The largest grid (in blocks) a cooperative launch of this kernel may use:
    /// [`max_active_blocks_per_sm`](Self::max_active_blocks_per_sm) times the SM count (on
    /// the simulator, at most its
    /// [`max_cooperative_blocks`](crate::sim::SimOptions::max_cooperative_blocks)).
    pub fn max_cooperative_blocks(&self) -> Result<u64, RuntimeError> {
        self.cooperative_limit(self.kernel.image.dynamic_smem)
    }

    /// Clusters of `cluster` blocks of this kernel (with the image's dynamic shared memory)
    /// that can be resident on the device at once: `cuOccupancyMaxActiveClusters` on CUDA;
    /// on the simulator, which runs one cluster at a time, 1 for a shape of at most 16
    /// blocks. 0 when none fits (such a launch is [`RuntimeError::ClusterTooLarge`]).
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// let mut k = KernelBuilder::new("c").block(64).cluster_at_launch();
    /// k.sync_cluster();
    /// let f = Device::sim().compile(&k.build()?)?;
    /// assert_eq!(f.max_active_clusters([4, 1, 1])?, 1);
    /// assert_eq!(f.max_active_clusters([32, 1, 1])?, 0);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn max_active_clusters(&self, cluster: [u32; 3]) -> Result<u32, RuntimeError> {
        let size = cluster.iter().fold(1u64, |n, &c| n * u64::from(c));
        if size == 0 || size > u64::from(MAX_LAUNCH_CLUSTER_BLOCKS) {
            return Ok(0);
        }
        match &self.kernel.module {
            LoadedModule::Cuda(kernel) => {
                if size > u64::from(MAX_CLUSTER_BLOCKS) {
                    kernel.allow_non_portable_clusters()?;
                }
                let image = &self.kernel.image;
                let shape = Shape {
                    grid: cluster,
                    block: image.block,
                    dynamic_smem: image.dynamic_smem,
                    cooperative: false,
                    cluster: Some(cluster),
                };
                kernel.max_active_clusters(shape, cluster)
            }
            LoadedModule::Sim(_) => Ok(1),
        }
    }

    /// The cluster shape a launch of `grid` blocks runs in (`given` by the launch, or the
    /// kernel's own), checked against the kernel, the device and the grid.
    #[track_caller]
    fn cluster_shape(
        &self,
        grid: [u32; 3],
        given: Option<[u32; 3]>,
    ) -> Result<Option<[u32; 3]>, RuntimeError> {
        let image = &self.kernel.image;
        let at = Loc::caller();
        let entry = || image.entry.clone();
        let cluster = match (image.cluster_dims(), image.cluster_at_launch(), given) {
            (None, false, None) => return Ok(None),
            (Some(c), _, None) => c,
            (Some(c), _, Some(g)) if c == g => c,
            (None, true, Some(g)) => g,
            (None, true, None) => {
                return Err(RuntimeError::ClusterShapeMissing { entry: entry(), at });
            }
            (kernel, _, Some(given)) => {
                let entry = entry();
                return Err(RuntimeError::ClusterShapeMismatch {
                    entry,
                    kernel,
                    given,
                    at,
                });
            }
        };
        let arch = self.device.arch();
        if arch < crate::ptx::Arch::Sm90 {
            return Err(RuntimeError::ClustersUnsupported { arch });
        }
        let size = cluster.iter().fold(1u64, |n, &c| n * u64::from(c));
        if size == 0 || size > u64::from(MAX_LAUNCH_CLUSTER_BLOCKS) {
            let reason = format!(
                "a cluster has 1 to {MAX_LAUNCH_CLUSTER_BLOCKS} blocks, each extent at least 1"
            );
            return Err(RuntimeError::ClusterTooLarge {
                cluster,
                reason,
                at,
            });
        }
        if (grid.iter().zip(cluster)).any(|(&g, c)| g % c != 0) {
            return Err(RuntimeError::ClusterGrid { grid, cluster, at });
        }
        Ok(Some(cluster))
    }

    /// On CUDA, before a launch given a cluster shape: sizes past 8 blocks allowed on the
    /// function, and at least one cluster of the shape resident at once.
    #[track_caller]
    fn check_cluster_fits(
        &self,
        kernel: &CudaKernel,
        shape: Shape,
        cluster: [u32; 3],
    ) -> Result<(), RuntimeError> {
        let size: u32 = cluster.iter().product();
        if size <= MAX_CLUSTER_BLOCKS {
            return Ok(());
        }
        kernel.allow_non_portable_clusters()?;
        if kernel.max_active_clusters(shape, cluster)? == 0 {
            return Err(RuntimeError::ClusterTooLarge {
                cluster,
                reason: format!(
                    "no cluster of {size} blocks of this kernel fits on the device at once \
                     (cuOccupancyMaxActiveClusters)"
                ),
                at: Loc::caller(),
            });
        }
        Ok(())
    }

    fn cooperative_limit(&self, dynamic_smem: u32) -> Result<u64, RuntimeError> {
        let resident =
            u64::from(self.blocks_per_sm(dynamic_smem)?) * u64::from(self.device.limits().sm_count);
        Ok(match &self.device.inner.imp {
            Imp::Sim(s) => resident.min(u64::from(s.sim.options().max_cooperative_blocks)),
            Imp::Cuda(_) => resident,
        })
    }

    fn blocks_per_sm(&self, dynamic_smem: u32) -> Result<u32, RuntimeError> {
        let image = &self.kernel.image;
        match &self.kernel.module {
            LoadedModule::Cuda(kernel) => {
                let threads = u32::try_from(image.threads_per_block()).unwrap_or(u32::MAX);
                kernel.max_active_blocks(threads, dynamic_smem)
            }
            LoadedModule::Sim(_) => Ok(self.device.limits().blocks_per_sm(
                image.threads_per_block(),
                u64::from(image.static_smem) + u64::from(dynamic_smem),
            )),
        }
    }

    /// What the kernel uses of an SM (registers, local memory and spills, static and dynamic
    /// shared memory) and the occupancy that allows on this device: from the driver on CUDA
    /// (the function's attributes and the occupancy API; spills from the JIT's log), from
    /// `ptxas -v` on the simulator where `COOPGRAPH_PTXAS` names a ptxas (else registers and
    /// local memory are unknown, and the occupancy counts threads and shared memory only).
    ///
    /// ```
    /// use coopgraph::runtime::{Device, ResourceSource};
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("sum").block(256).items_per_thread(1);
    /// let (x, y) = (k.input::<f32>("x"), k.output::<f32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let s = k.reduce(b, &t, coopgraph::ir::Reduce::sum().broadcast());
    /// k.store_to(b, &y, &s, Store::direct());
    /// let f = Device::sim().compile(&k.build()?)?;
    /// let r = f.resources()?;
    /// assert_eq!(r.threads_per_block, 256);
    /// assert!(r.static_shared > 0 && r.max_active_blocks_per_sm > 0);
    /// assert!(r.occupancy > 0.0 && r.occupancy <= 1.0);
    /// if r.source == ResourceSource::Ptxas {
    ///     assert!(r.registers.is_some());
    /// }
    /// println!("{}", f.explain()?);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn resources(&self) -> Result<Resources, RuntimeError> {
        let image = &self.kernel.image;
        let limits = self.device.limits();
        match &self.kernel.module {
            LoadedModule::Cuda(kernel) => {
                use sys::CUfunction_attribute as A;
                let attribute = |a: A| {
                    let v = kernel.attribute(a)?;
                    Ok::<u32, RuntimeError>(u32::try_from(v).unwrap_or(0))
                };
                let attributes = [
                    attribute(A::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
                    attribute(A::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
                    attribute(A::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
                ];
                let blocks = self.max_active_blocks_per_sm()?;
                let log = &self.kernel.jit_log;
                Ok(resources::from_driver(
                    image, attributes, blocks, log, limits,
                ))
            }
            LoadedModule::Sim(_) => {
                let info = resources::run_ptxas(image);
                Ok(resources::from_info(image, info, limits))
            }
        }
    }

    /// The resource report ([`resources`](Self::resources)) as one readable line.
    pub fn explain(&self) -> Result<String, RuntimeError> {
        Ok(self.resources()?.to_string())
    }

    /// Registers per thread the JIT allocated (CUDA only; `None` on the simulator).
    pub fn num_registers(&self) -> Result<Option<u32>, RuntimeError> {
        match &self.kernel.module {
            LoadedModule::Cuda(kernel) => {
                let n = kernel.attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS)?;
                Ok(Some(u32::try_from(n).unwrap_or(0)))
            }
            LoadedModule::Sim(_) => Ok(None),
        }
    }
}

//! The kernel's options: block shape, items per thread, arrangement strictness, bounds checks,
//! and the compile options (register limit, line information, debug checks).

use super::KernelBuilder;
use crate::ir::entities::Loc;
use crate::ir::ops::{BlockShape, Bounds};
use crate::ir::options::{Checks, LineInfo, MathMode, MaxRegisters, MinBlocks};

impl KernelBuilder {
    /// Sets a 1-D block of `threads` threads.
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("copy").block(32).items_per_thread(2);
    /// assert_eq!(k.block_tile(), 64);
    /// let (x, y) = (k.input::<u16>("x"), k.output::<u16>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// k.store_to(b, &y, &t, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xs: Vec<u16> = (0..200).collect();
    /// let xb = dev.upload(&xs)?;
    /// let mut yb = dev.alloc_zeroed::<u16>(200)?;
    /// let f = dev.compile(&kernel)?;
    /// assert_eq!(f.config_over(200)?.grid, [4, 1, 1]);
    /// f.launch_over(200, (&xb, &mut yb))?;
    /// assert_eq!(yb.to_vec()?, xs);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn block(self, threads: u32) -> Self {
        self.block_dims([threads, 1, 1])
    }

    /// Sets a block shape of up to three dimensions, `[x, y, z]` threads (CUDA's
    /// `blockDim`): at most 1024 threads in all, 1024 along x and y and 64 along z (others are
    /// reported by the verifier). Threads are ranked linearly, `x + dx * (y + dy * z)`
    /// ([`index::thread_rank`](crate::ir::index::thread_rank)); warps are runs of 32
    /// consecutive ranks, and collectives number their threads by it, so a block of `[16, 16,
    /// 1]` runs warp and block collectives as a block of 256 does.
    ///
    /// ```
    /// use coopgraph::ir::index::{self, Axis};
    /// use coopgraph::ir::{Reduce, VerifyErrorKind};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{Error, KernelBuilder, Load, Store};
    ///
    /// // A 16 x 4 block: each row's sum of x, by a block reduction over all 64 threads.
    /// let mut k = KernelBuilder::new("rows").block_dims([16, 4, 1]).items_per_thread(1);
    /// assert_eq!(k.block_tile(), 64);
    /// let y = k.output::<u32>("y");
    /// let b = k.this_block();
    /// let v = k.fill(index::thread_idx(Axis::X) + index::thread_idx(Axis::Y) * 100u32);
    /// let s = k.reduce(b, &v, Reduce::sum().broadcast());
    /// k.store_to(b, &y, &s, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut yb = dev.alloc_zeroed::<u32>(64)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut yb,))?;
    /// // 4 * (0 + .. + 15) + 16 * (0 + 100 + 200 + 300)
    /// assert_eq!(yb.to_vec()?, [480 + 9600; 64]);
    ///
    /// let tall = KernelBuilder::new("tall").block_dims([1, 2, 128]);
    /// let Err(Error::Verify(e)) = tall.build() else { panic!("built") };
    /// assert!(matches!(
    ///     e.errors[0].kind,
    ///     VerifyErrorKind::BlockDimension { axis: Axis::Z, size: 128, max: 64 }
    /// ));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn block_dims(mut self, dims: [u32; 3]) -> Self {
        self.ir.block = BlockShape {
            dims,
            loc: Loc::caller(),
        };
        self
    }

    /// Sets the default items per thread of payloads
    /// (1..=[`MAX_ITEMS_PER_THREAD`](crate::ir::ops::MAX_ITEMS_PER_THREAD)).
    ///
    /// ```
    /// use coopgraph::ir::Reduce;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// // Each of 32 threads sums its own 8 consecutive items.
    /// let mut k = KernelBuilder::new("runs").block(32).items_per_thread(8);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// assert_eq!(t.items(), 8);
    /// let one = k.this_warp().group_by(1);
    /// let s = k.reduce(one, &t, Reduce::sum());
    /// // One item per thread: the block's tile of `y` is 32 elements, not the kernel's 256.
    /// k.store_to(b, &y, &s, Store::direct().offset(0u32));
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&(0..256).collect::<Vec<u32>>())?;
    /// let mut yb = dev.alloc_zeroed::<u32>(32)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// let want: Vec<u32> = (0..32).map(|t| (8 * t..8 * t + 8).sum()).collect();
    /// assert_eq!(yb.to_vec()?, want);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn items_per_thread(mut self, items: u32) -> Self {
        self.ir.items_per_thread = items;
        self.ir.items_loc = Loc::caller();
        self
    }

    /// Makes an arrangement mismatch (a striped payload into a blocked consumer, say) a build
    /// error naming both ops, instead of an exchange through shared memory the planner adds.
    ///
    /// ```
    /// use coopgraph::ir::Scan;
    /// use coopgraph::planner::PlanError;
    /// use coopgraph::{Error, KernelBuilder, Load, Store};
    ///
    /// // Striped items into a scan, which takes them blocked.
    /// let scan_of_striped = |strict: bool| {
    ///     let mut k = KernelBuilder::new("scan").block(32).strict_arrangements(strict);
    ///     let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    ///     let b = k.this_block();
    ///     let t = k.load_from(b, &x, Load::striped());
    ///     let s = k.scan(b, &t, Scan::inclusive_sum());
    ///     k.store_to(b, &y, &s, Store::direct());
    ///     k.build()
    /// };
    /// assert!(scan_of_striped(false).is_ok());
    /// assert!(matches!(
    ///     scan_of_striped(true),
    ///     Err(Error::Plan(PlanError::ArrangementMismatch { .. }))
    /// ));
    /// ```
    pub fn strict_arrangements(mut self, strict: bool) -> Self {
        self.ir.strict_arrangements = strict;
        self
    }

    /// Builds the kernel without bounds checks: no load or store is guarded by the length of
    /// its buffer, and the kernel takes no hidden length parameters. A copy kernel's guards
    /// cost one comparison per thread and tile, so this is for kernels whose every access is
    /// known to be in bounds and where even that counts. Such a kernel launches only through
    /// the unsafe [`Function::launch_unchecked`](crate::runtime::Function::launch_unchecked);
    /// the safe launches refuse it. It is another kernel for the cache (its key differs).
    ///
    /// ```
    /// use coopgraph::ir::Bounds;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("raw_copy").unchecked_bounds();
    /// let x = k.input::<f32>("x");
    /// let y = k.output::<f32>("y");
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::vectorize());
    /// k.store_to(b, &y, &t, Store::vectorize());
    /// let kernel = k.build()?;
    /// assert_eq!(kernel.ir().bounds, Bounds::Unchecked);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn unchecked_bounds(mut self) -> Self {
        self.ir.bounds = Bounds::Unchecked;
        self
    }

    /// Limits the registers each thread may use (PTX `.maxnreg`), as Numba's
    /// `max_registers`: fewer registers let more blocks share an SM, at the cost of spills to
    /// local memory where the kernel needs more. The count must be
    /// [`MIN_MAX_REGISTERS`](crate::ir::options::MIN_MAX_REGISTERS)..=[`MAX_MAX_REGISTERS`](crate::ir::options::MAX_MAX_REGISTERS),
    /// and the block's threads times it must fit one SM's
    /// [`REGISTER_FILE`](crate::ir::options::REGISTER_FILE); the verifier reports others at
    /// this line. Part of the cache key.
    ///
    /// ```
    /// use coopgraph::ir::VerifyErrorKind;
    /// use coopgraph::ptx::Arch;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{Error, KernelBuilder, Load, Store};
    ///
    /// let copy = |registers: u32| {
    ///     let mut k = KernelBuilder::new("copy").block(256).max_registers(registers);
    ///     let (x, y) = (k.input::<f32>("x"), k.output::<f32>("y"));
    ///     let b = k.this_block();
    ///     let t = k.load_from(b, &x, Load::direct());
    ///     k.store_to(b, &y, &t, Store::direct());
    ///     k.build()
    /// };
    /// let kernel = copy(32)?;
    /// assert!(kernel.ptx(Arch::Sm90)?.contains(".maxnreg 32"));
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[1.5f32; 1000])?;
    /// let mut yb = dev.alloc_zeroed::<f32>(1000)?;
    /// dev.compile(&kernel)?.launch_over(1000, (&xb, &mut yb))?;
    /// assert_eq!(yb.to_vec()?, [1.5f32; 1000]);
    ///
    /// let Err(Error::Verify(e)) = copy(8) else { panic!("built") };
    /// assert!(matches!(e.errors[0].kind, VerifyErrorKind::MaxRegisters { count: 8, .. }));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn max_registers(mut self, count: u32) -> Self {
        self.ir.options.max_registers = Some(MaxRegisters {
            count,
            loc: Loc::caller(),
        });
        self
    }

    /// Asks that each SM hold at least `count` of the kernel's blocks at once (PTX
    /// `.minnctapersm`, the second argument of CUDA's `__launch_bounds__`): ptxas keeps the
    /// registers per thread within what `count` blocks share ([`REGISTER_FILE`] over
    /// `count` times the block's threads, in the allocation's steps), spilling where the
    /// kernel needs more. Where registers bound the blocks an SM holds, one more block can
    /// hide memory latency a kernel waits on. `count` must be at least 1, and `count` blocks
    /// must fit one SM's [`SM_THREADS`]; the verifier reports others at this line. Part of
    /// the cache key.
    ///
    /// [`REGISTER_FILE`]: crate::ir::options::REGISTER_FILE
    /// [`SM_THREADS`]: crate::ir::options::SM_THREADS
    ///
    /// ```
    /// use coopgraph::ir::VerifyErrorKind;
    /// use coopgraph::ptx::Arch;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{Error, KernelBuilder, Load, Store};
    ///
    /// let copy = |blocks: u32| {
    ///     let mut k = KernelBuilder::new("copy").block(384).min_blocks_per_sm(blocks);
    ///     let (x, y) = (k.input::<f32>("x"), k.output::<f32>("y"));
    ///     let b = k.this_block();
    ///     let t = k.load_from(b, &x, Load::direct());
    ///     k.store_to(b, &y, &t, Store::direct());
    ///     k.build()
    /// };
    /// let kernel = copy(3)?;
    /// assert!(kernel.ptx(Arch::Sm90)?.contains(".minnctapersm 3"));
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[1.5f32; 1000])?;
    /// let mut yb = dev.alloc_zeroed::<f32>(1000)?;
    /// dev.compile(&kernel)?.launch_over(1000, (&xb, &mut yb))?;
    /// assert_eq!(yb.to_vec()?, [1.5f32; 1000]);
    ///
    /// // Six blocks of 384 threads are more than an SM's 2048.
    /// let Err(Error::Verify(e)) = copy(6) else { panic!("built") };
    /// assert!(matches!(e.errors[0].kind, VerifyErrorKind::MinBlocks { count: 6, .. }));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn min_blocks_per_sm(mut self, count: u32) -> Self {
        self.ir.options.min_blocks = Some(MinBlocks {
            count,
            loc: Loc::caller(),
        });
        self
    }

    /// Emits line information: before each op's instructions a `.loc` directive naming the
    /// Rust line that recorded the op (every builder method records its caller's), with each
    /// such source file declared by a `.file` directive, as `nvcc -lineinfo` does for CUDA
    /// C++. The runtime then asks the driver's JIT for line tables, so `compute-sanitizer` and
    /// Nsight Compute report `src/my_kernel.rs:42` for the instructions of the op written
    /// there. The code is the same otherwise. Part of the cache key, with every op's source
    /// line (which the key leaves out without it).
    ///
    /// ```
    /// use coopgraph::ptx::Arch;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("copy").block(64).lineinfo();
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let line = line!() - 1;
    /// k.store_to(b, &y, &t, Store::direct());
    /// let ptx = k.build()?.ptx(Arch::Sm80)?;
    /// assert!(ptx.contains(&format!(".file 1 \"{}\"", file!())));
    /// assert!(ptx.contains(&format!(".loc 1 {line} ")));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn lineinfo(mut self) -> Self {
        self.ir.options.line_info = LineInfo::RustLines;
        self
    }

    /// Computes the kernel's `f32` math functions with PTX's approximate instructions, its
    /// `f32` arithmetic with subnormals flushed to zero and contractions into FMAs allowed
    /// ([`MathMode::Fast`]); off by default ([`MathMode::Accurate`]). It is another kernel for
    /// the cache (its key differs).
    ///
    /// ```
    /// use coopgraph::ir::MathMode;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let sines = |fast: bool| -> Result<Vec<f32>, coopgraph::Error> {
    ///     let mut k = KernelBuilder::new("sines").block(32);
    ///     if fast {
    ///         k = k.fastmath();
    ///     }
    ///     let (x, y) = (k.input::<f32>("x"), k.output::<f32>("y"));
    ///     let b = k.this_block();
    ///     let t = k.load_from(b, &x, Load::direct());
    ///     let r = k.map(&t, |v| v.sin());
    ///     k.store_to(b, &y, &r, Store::direct());
    ///     let kernel = k.build()?;
    ///     assert_eq!(kernel.ir().options.math == MathMode::Fast, fast);
    ///     let dev = Device::sim();
    ///     let xb = dev.upload(&[0.5f32, 1e4])?;
    ///     let mut yb = dev.alloc_zeroed::<f32>(2)?;
    ///     dev.compile(&kernel)?.launch_over(2, (&xb, &mut yb))?;
    ///     Ok(yb.to_vec()?)
    /// };
    /// let (accurate, fast) = (sines(false)?, sines(true)?);
    /// assert_eq!(accurate[1], (1e4f64.sin()) as f32);
    /// // The approximate sine loses accuracy as the argument grows.
    /// assert!((fast[0] - 0.5f32.sin()).abs() < 1e-6);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn fastmath(mut self) -> Self {
        self.ir.options.math = MathMode::Fast;
        self
    }

    /// Builds the kernel with debug checks, as Numba's `debug=True`: every read, write and
    /// atomic by index is compared with its buffer's length, each load's and store's explicit
    /// valid count and offset with its buffer's room, and every [`assert`](Self::assert)
    /// condition is evaluated. The first failure of a launch is recorded with its thread, and
    /// the launch returns
    /// [`RuntimeError::CheckFailed`](crate::runtime::RuntimeError::CheckFailed) naming the op,
    /// the line that recorded it, the thread and block, and the index against the length (the
    /// launch waits for the kernel to read its record). What the kernel computes does not
    /// change: an index past the end still reads 0 and skips its write. Without it (the
    /// default) none of this code is emitted. Part of the cache key; it needs the bounds
    /// checks that [`unchecked_bounds`](Self::unchecked_bounds) removes.
    ///
    /// ```
    /// use coopgraph::ir::CheckKind;
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::{Device, RuntimeError};
    /// use coopgraph::{Error, KernelBuilder};
    ///
    /// // y[i] = x[i + 1]: the last thread reads one past the end of x.
    /// let mut k = KernelBuilder::new("shift").block(64).debug();
    /// let (x, y) = (k.input::<f32>("x"), k.output::<f32>("y"));
    /// let i = index::block_index() * 64u32 + index::thread_rank();
    /// let line = line!() + 1;
    /// k.write(&y, i.clone(), x.at(i + 1u32));
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[1.0f32; 128])?;
    /// let mut yb = dev.alloc_zeroed::<f32>(128)?;
    /// let Err(RuntimeError::CheckFailed(failure)) =
    ///     dev.compile(&kernel)?.launch_grid(2, (&xb, &mut yb))
    /// else {
    ///     panic!("no failure")
    /// };
    /// let site = failure.site.as_ref().expect("a site");
    /// assert_eq!(site.what, CheckKind::Read { buffer: "x".into() });
    /// assert_eq!((site.loc.file, site.loc.line), (file!(), line));
    /// assert_eq!((failure.thread, failure.block), ([63, 0, 0], [1, 0, 0]));
    /// assert_eq!((failure.value, failure.limit), (128, 128));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn debug(mut self) -> Self {
        self.ir.options.checks = Checks::Debug;
        self
    }

    /// The kernel's name.
    ///
    /// ```
    /// use coopgraph::KernelBuilder;
    ///
    /// assert_eq!(KernelBuilder::new("saxpy").name(), "saxpy");
    /// ```
    pub fn name(&self) -> &str {
        &self.ir.name
    }

    /// Elements one block handles per tile: threads × items per thread.
    ///
    /// ```
    /// use coopgraph::KernelBuilder;
    ///
    /// let k = KernelBuilder::new("tiles").block(256).items_per_thread(8);
    /// assert_eq!(k.block_tile(), 2048);
    /// ```
    pub fn block_tile(&self) -> u32 {
        self.ir
            .block_threads()
            .saturating_mul(self.ir.items_per_thread)
    }
}

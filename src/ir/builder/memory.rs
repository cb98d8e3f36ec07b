//! Global memory and temp storages: parameters, loads and stores with their controls, writes
//! by index, temp storages.

use super::KernelBuilder;
use crate::ir::dtype::{DType, Element};
use crate::ir::entities::{Loc, ParamId, StorageId};
use crate::ir::expr::Expr;
use crate::ir::handles::{
    Buffer, ElementIndex, Group, Input, Output, Readable, Scalar, TempStorage, ThreadData, Writable,
};
use crate::ir::ops::*;

/// The controls of a load: algorithm, offset, valid items and the out-of-bounds default.
///
/// The algorithms read the same tile in different ways (each thread its own run, coalesced,
/// vectors, through shared memory); the planner tracks the arrangement each leaves, so every
/// one of them copies here:
///
/// ```
/// use coopgraph::runtime::Device;
/// use coopgraph::{KernelBuilder, Load, Store};
///
/// let dev = Device::sim();
/// let xs: Vec<u32> = (0..128).collect();
/// let xb = dev.upload(&xs)?;
/// for load in [
///     Load::direct(),
///     Load::striped(),
///     Load::vectorize(),
///     Load::transpose(),
///     Load::warp_transpose(),
///     Load::warp_transpose_timesliced(),
/// ] {
///     let mut k = KernelBuilder::new("copy").block(64).items_per_thread(2);
///     let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
///     let b = k.this_block();
///     let t = k.load_from(b, &x, load);
///     k.store_to(b, &y, &t, Store::direct());
///     let mut yb = dev.alloc_zeroed::<u32>(128)?;
///     dev.compile(&k.build()?)?.launch_grid(1, (&xb, &mut yb))?;
///     assert_eq!(yb.to_vec()?, xs);
/// }
/// # Ok::<(), coopgraph::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Load<T: Element> {
    pub(crate) algorithm: Algorithm,
    pub(crate) offset: Option<Expr<u32>>,
    pub(crate) valid: Option<(Expr<u32>, ValidOf)>,
    pub(crate) oob_default: Option<T>,
    pub(crate) storage: Option<TempStorage>,
}

impl<T: Element> Default for Load<T> {
    fn default() -> Self {
        Load::direct()
    }
}

impl<T: Element> Load<T> {
    /// Blocked items, each thread reading its own consecutive run.
    pub fn direct() -> Self {
        Load {
            algorithm: Algorithm::Direct,
            offset: None,
            valid: None,
            oob_default: None,
            storage: None,
        }
    }

    /// Striped items: coalesced reads, leaving the payload striped.
    pub fn striped() -> Self {
        Load::direct().algorithm(Algorithm::Striped)
    }

    /// Blocked items read with vector accesses where alignment allows.
    pub fn vectorize() -> Self {
        Load::direct().algorithm(Algorithm::Vectorize)
    }

    /// Coalesced reads, transposed to blocked order through shared memory.
    pub fn transpose() -> Self {
        Load::direct().algorithm(Algorithm::Transpose)
    }

    /// Warp-striped reads, transposed to blocked order per warp (block groups).
    pub fn warp_transpose() -> Self {
        Load::direct().algorithm(Algorithm::WarpTranspose)
    }

    /// As [`Load::warp_transpose`], the warps taking turns on one slice (block groups).
    pub fn warp_transpose_timesliced() -> Self {
        Load::direct().algorithm(Algorithm::WarpTransposeTimesliced)
    }

    /// Warp-striped reads, left warp-striped: lane `l` of warp `w` holds positions
    /// `w * 32 * K + i * 32 + l` ([`Algorithm::WarpStriped`]; block groups of whole warps).
    /// No shared memory: the arrangement the match rank works on, straight from memory.
    ///
    /// ```
    /// use coopgraph::{KernelBuilder, Load, Store};
    /// use coopgraph::runtime::Device;
    ///
    /// let mut k = KernelBuilder::new("warp_striped").block(64).items_per_thread(3);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::warp_striped().valid_items(150u32).oob_default(0));
    /// // Each item plus 1000 times its lane: warp-striped, consecutive positions of a warp's
    /// // segment sit in consecutive lanes.
    /// let t = k.map(&t, |v| v + coopgraph::ir::index::lane() * 1000u32);
    /// k.store_to(b, &y, &t, Store::warp_striped().valid_items(150u32));
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xs: Vec<u32> = (0..192).collect();
    /// let xb = dev.upload(&xs)?;
    /// let mut yb = dev.alloc_zeroed::<u32>(192)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// let want: Vec<u32> = (0..192).map(|p| if p < 150 { p + (p % 32) * 1000 } else { 0 }).collect();
    /// assert_eq!(yb.to_vec()?, want);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn warp_striped() -> Self {
        Load::direct().algorithm(Algorithm::WarpStriped)
    }

    /// Chooses the algorithm.
    pub fn algorithm(mut self, a: Algorithm) -> Self {
        self.algorithm = a;
        self
    }

    /// Element offset of the block's tile in the buffer (uniform across the group). Default:
    /// the enclosing `tiles` loop's origin, else `block_index * block_tile`, which needs a
    /// payload of the kernel's items per thread. Warp groups add their own origin.
    pub fn offset(mut self, offset: impl Into<Expr<u32>>) -> Self {
        self.offset = Some(offset.into());
        self
    }

    /// Valid items of the group's own tile, as cuda.coop's `valid_items`: positions from `n`
    /// on are not read (their slots stay unwritten, or take the
    /// [`oob_default`](Self::oob_default)). `n` must be uniform across the group; warps and
    /// logical warps each pass their own. Positions past the end of the buffer are never read
    /// either, whatever the count.
    pub fn valid_items(mut self, n: impl Into<Expr<u32>>) -> Self {
        self.valid = Some((n.into(), ValidOf::Group));
        self
    }

    /// Valid items of the block's tile, counted from the offset (uniform across the block):
    /// each warp or logical warp takes its share, the part of the first `n` positions that
    /// falls in its own tile. For a block group this is [`valid_items`](Self::valid_items).
    pub fn block_valid_items(mut self, n: impl Into<Expr<u32>>) -> Self {
        self.valid = Some((n.into(), ValidOf::Block));
        self
    }

    /// The value written to slots past the valid items (left unwritten without it).
    pub fn oob_default(mut self, v: T) -> Self {
        self.oob_default = Some(v);
        self
    }

    /// Exchanges through this temp storage instead of planned scratch.
    pub fn temp_storage(mut self, storage: &TempStorage) -> Self {
        self.storage = Some(*storage);
        self
    }
}

/// The controls of a store: algorithm, offset and valid items.
///
/// As with [`Load`], the algorithms write the same tile in different ways:
///
/// ```
/// use coopgraph::runtime::Device;
/// use coopgraph::{KernelBuilder, Load, Store};
///
/// let dev = Device::sim();
/// let xs: Vec<u32> = (0..128).collect();
/// let xb = dev.upload(&xs)?;
/// for store in [
///     Store::direct(),
///     Store::striped(),
///     Store::vectorize(),
///     Store::transpose(),
///     Store::warp_transpose(),
///     Store::warp_transpose_timesliced(),
/// ] {
///     let mut k = KernelBuilder::new("copy").block(64).items_per_thread(2);
///     let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
///     let b = k.this_block();
///     let t = k.load_from(b, &x, Load::direct());
///     k.store_to(b, &y, &t, store);
///     let mut yb = dev.alloc_zeroed::<u32>(128)?;
///     dev.compile(&k.build()?)?.launch_grid(1, (&xb, &mut yb))?;
///     assert_eq!(yb.to_vec()?, xs);
/// }
/// # Ok::<(), coopgraph::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Store {
    pub(crate) algorithm: Option<Algorithm>,
    pub(crate) offset: Option<Expr<u32>>,
    pub(crate) valid: Option<(Expr<u32>, ValidOf)>,
    pub(crate) storage: Option<TempStorage>,
}

impl Store {
    /// Blocked items, each thread writing its own consecutive run.
    pub fn direct() -> Self {
        Store::default().algorithm(Algorithm::Direct)
    }

    /// Striped items: coalesced writes of a striped payload.
    pub fn striped() -> Self {
        Store::default().algorithm(Algorithm::Striped)
    }

    /// Blocked items written with vector accesses where alignment allows.
    pub fn vectorize() -> Self {
        Store::default().algorithm(Algorithm::Vectorize)
    }

    /// Blocked items transposed to striped order through shared memory, written coalesced.
    pub fn transpose() -> Self {
        Store::default().algorithm(Algorithm::Transpose)
    }

    /// Blocked items transposed to warp-striped order per warp (block groups).
    pub fn warp_transpose() -> Self {
        Store::default().algorithm(Algorithm::WarpTranspose)
    }

    /// As [`Store::warp_transpose`], the warps taking turns on one slice (block groups).
    pub fn warp_transpose_timesliced() -> Self {
        Store::default().algorithm(Algorithm::WarpTransposeTimesliced)
    }

    /// Warp-striped items written as they are, coalesced ([`Algorithm::WarpStriped`]; block
    /// groups of whole warps): the payload is converted to the warp-striped arrangement first
    /// where it has another. See [`Load::warp_striped`] for an example.
    pub fn warp_striped() -> Self {
        Store::default().algorithm(Algorithm::WarpStriped)
    }

    /// Chooses the algorithm (default: direct).
    pub fn algorithm(mut self, a: Algorithm) -> Self {
        self.algorithm = Some(a);
        self
    }

    /// Element offset of the block's tile (uniform across the group; default as for
    /// [`Load::offset`]).
    pub fn offset(mut self, offset: impl Into<Expr<u32>>) -> Self {
        self.offset = Some(offset.into());
        self
    }

    /// Valid items of the group's own tile, as cuda.coop's `valid_items`: positions from `n`
    /// on are not written. `n` must be uniform across the group; warps and logical warps each
    /// pass their own. Positions past the end of the buffer are never written either. A
    /// payload the store must rearrange across its groups (striped over more threads than a
    /// group, or over groups that straddle them, such as 6 threads under logical warps of 8)
    /// needs a count of the block's tile instead
    /// ([`PlanError::GroupCountAcrossGroups`](crate::planner::PlanError::GroupCountAcrossGroups)).
    pub fn valid_items(mut self, n: impl Into<Expr<u32>>) -> Self {
        self.valid = Some((n.into(), ValidOf::Group));
        self
    }

    /// Valid items of the block's tile, counted from the offset (uniform across the block):
    /// each warp or logical warp takes its share (as [`Load::block_valid_items`]).
    pub fn block_valid_items(mut self, n: impl Into<Expr<u32>>) -> Self {
        self.valid = Some((n.into(), ValidOf::Block));
        self
    }

    /// Exchanges through this temp storage instead of planned scratch.
    pub fn temp_storage(mut self, storage: &TempStorage) -> Self {
        self.storage = Some(*storage);
        self
    }
}

/// The controls of a temp storage, with cuda.coop's meanings.
#[derive(Debug, Clone, Copy)]
pub struct StorageSpec {
    size: Option<u32>,
    align: Option<u32>,
    auto_sync: bool,
    sharing: Sharing,
}

impl Default for StorageSpec {
    fn default() -> Self {
        StorageSpec {
            size: None,
            align: None,
            auto_sync: true,
            sharing: Sharing::Shared,
        }
    }
}

impl StorageSpec {
    /// Size in bytes (default: the largest need of the ops using it; a smaller size than an
    /// op needs is reported when the kernel is built).
    pub fn size_in_bytes(mut self, bytes: u32) -> Self {
        self.size = Some(bytes);
        self
    }

    /// Alignment in bytes, a power of two (default 16).
    pub fn alignment(mut self, bytes: u32) -> Self {
        self.align = Some(bytes);
        self
    }

    /// Whether the planner places barriers between the ops using it (default `true`);
    /// without, ordering them is the user's job (`sync_block`).
    pub fn auto_sync(mut self, on: bool) -> Self {
        self.auto_sync = on;
        self
    }

    /// Whether several ops may use it (default [`Sharing::Shared`]).
    pub fn sharing(mut self, sharing: Sharing) -> Self {
        self.sharing = sharing;
        self
    }
}

impl KernelBuilder {
    #[track_caller]
    fn param(&mut self, name: &str, role: Role, dtype: DType) -> ParamId {
        let loc = Loc::caller();
        if self.ir.params.iter().any(|p| p.name == name) {
            self.ir.issues.push(BuilderIssue::DuplicateParam {
                name: name.to_string(),
                loc,
            });
        }
        let id = ParamId(self.ir.params.len() as u32);
        self.ir.params.push(ParamDecl {
            name: name.to_string(),
            role,
            dtype,
            loc,
        });
        id
    }

    /// Declares a read-only buffer parameter (next in the signature).
    ///
    /// Parameters are passed to a launch in the order they were declared, buffers by
    /// reference and scalars by value:
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("axpy").block(32).items_per_thread(1);
    /// let x = k.input::<f32>("x");
    /// let a = k.scalar::<f32>("a");
    /// let y = k.input::<f32>("y");
    /// let out = k.output::<f32>("out");
    /// let b = k.this_block();
    /// let tx = k.load_from(b, &x, Load::direct());
    /// let ty = k.load_from(b, &y, Load::direct());
    /// let r = k.map2(&tx, &ty, |x, y| x.fma(a, y));
    /// k.store_to(b, &out, &r, Store::direct());
    /// let kernel = k.build()?;
    /// let names: Vec<_> = kernel.signature().into_iter().map(|p| p.name).collect();
    /// assert_eq!(names, ["x", "a", "y", "out"]);
    ///
    /// let dev = Device::sim();
    /// let (xb, yb) = (dev.upload(&[2.0f32; 32])?, dev.upload(&[1.0f32; 32])?);
    /// let mut ob = dev.alloc_zeroed::<f32>(32)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, 3.0f32, &yb, &mut ob))?;
    /// assert_eq!(ob.to_vec()?, [7.0; 32]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn input<T: Element>(&mut self, name: &str) -> Input<T> {
        Input::new(self.param(name, Role::Input, T::DTYPE), self.lineage.id())
    }

    /// Declares a buffer parameter the kernel writes (next in the signature).
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Store};
    ///
    /// let mut k = KernelBuilder::new("sevens").block(32).items_per_thread(1);
    /// let y = k.output::<u8>("y");
    /// let b = k.this_block();
    /// let t = k.fill(7u8);
    /// k.store_to(b, &y, &t, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut yb = dev.alloc_zeroed::<u8>(32)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut yb,))?;
    /// assert_eq!(yb.to_vec()?, [7; 32]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn output<T: Element>(&mut self, name: &str) -> Output<T> {
        Output::new(self.param(name, Role::Output, T::DTYPE), self.lineage.id())
    }

    /// Declares a buffer parameter the kernel both reads and writes (next in the signature): a
    /// launch passes it as `&mut`. Reads by index ([`Buffer::at`]) and tile loads take the
    /// coherent path (`ld.global`), so each thread reads back its own earlier writes; ordering
    /// accesses of different threads to one element is the kernel's job (a barrier orders
    /// a block's threads; atomics order themselves).
    ///
    /// A grid-stride SAXPY in place, `y[i] = a * x[i] + y[i]`:
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// let mut k = KernelBuilder::new("saxpy").block(64);
    /// let (x, y) = (k.input::<f32>("x"), k.buffer::<f32>("y"));
    /// let (a, n) = (k.scalar::<f32>("a"), k.scalar::<u32>("n"));
    /// let threads = index::grid_blocks() * index::block_threads();
    /// let first = index::block_index() * index::block_threads() + index::thread_rank();
    /// let steps = (n.expr() + threads.clone() - 1u32) / threads.clone();
    /// k.for_range(0u32, steps, |k, s| {
    ///     let i = s * threads.clone() + first.clone();
    ///     k.write(&y, &i, x.at(&i).fma(a, y.at(&i)));
    /// });
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let n = 1000;
    /// let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    /// let xb = dev.upload(&xs)?;
    /// let mut yb = dev.upload(&vec![1.0f32; n])?;
    /// dev.compile(&kernel)?.launch_grid(3, (&xb, &mut yb, 2.0f32, n as u32))?;
    /// assert!(yb.to_vec()?.iter().zip(&xs).all(|(y, x)| *y == x.mul_add(2.0, 1.0)));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn buffer<T: Element>(&mut self, name: &str) -> Buffer<T> {
        Buffer::new(self.param(name, Role::Buffer, T::DTYPE), self.lineage.id())
    }

    /// `dst[index] = value` in global memory: each thread that runs it writes one element of
    /// an output or a read-write buffer (an input cannot be written: that does not compile).
    /// Where bounds are checked, an index at or past the buffer's length writes nothing;
    /// with `unchecked_bounds` it must be in bounds. Two threads writing one element without
    /// an order between them leave either value.
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // Thread t writes t * t at 2 * t; the last 16 threads' indices are past the end.
    /// let mut k = KernelBuilder::new("evens").block(32);
    /// let y = k.output::<u32>("y");
    /// let t = index::thread_rank();
    /// k.write(&y, t.clone() * 2u32, t.clone() * t);
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut yb = dev.alloc_zeroed::<u32>(32)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut yb,))?;
    /// let want: Vec<u32> = (0..32).map(|i| if i % 2 == 0 { (i / 2) * (i / 2) } else { 0 }).collect();
    /// assert_eq!(yb.to_vec()?, want);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    ///
    /// Writing to an input does not compile:
    ///
    /// ```compile_fail
    /// let mut k = coopgraph::KernelBuilder::new("k");
    /// let x = k.input::<u32>("x");
    /// k.write(&x, 0u32, 1u32);
    /// ```
    #[track_caller]
    pub fn write<T: Element>(
        &mut self,
        dst: &impl Writable<T>,
        index: impl ElementIndex,
        value: impl Into<Expr<T>>,
    ) {
        let loc = Loc::caller();
        let param = dst.param_in(self);
        let index = self.expr(&Expr::<u32>::wrap(index.index_node()));
        let value = self.expr(&value.into());
        self.push(
            OpKind::GlobalWrite {
                param,
                index,
                value,
            },
            loc,
        );
    }

    /// Reads `items` consecutive elements, `src[index]` to `src[index + items - 1]`, into a
    /// new payload of `items` items per thread (item `j` holds `src[index + j]`). Where the
    /// run's address is aligned to a vector (up to 16 bytes: four `f32`, two `f64`, sixteen
    /// `u8`) and the run lies inside the buffer, it moves in vector accesses, as
    /// `Load::vectorize` moves a tile; elsewhere element by element. Where bounds are checked,
    /// elements at or past the buffer's length read 0; an input is read through the read-only
    /// path, a read-write buffer through the coherent one.
    ///
    /// A grid-stride SAXPY, four elements per thread and step, each thread's four read and
    /// written in 16-byte accesses:
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// let mut k = KernelBuilder::new("saxpy4").block(64);
    /// let (x, y) = (k.input::<f32>("x"), k.buffer::<f32>("y"));
    /// let (a, n) = (k.scalar::<f32>("a"), k.scalar::<u32>("n"));
    /// let threads = index::grid_blocks() * index::block_threads();
    /// let first = index::block_index() * index::block_threads() + index::thread_rank();
    /// let steps = (n.expr() + threads.clone() * 4u32 - 1u32) / (threads.clone() * 4u32);
    /// k.for_range(0u32, steps, |k, s| {
    ///     let i = (s * threads.clone() + first.clone()) * 4u32;
    ///     let (xs, ys) = (k.read_run(&x, &i, 4), k.read_run(&y, &i, 4));
    ///     let r = k.map2(&xs, &ys, |x, y| x.fma(a, y));
    ///     k.write_run(&y, &i, &r);
    /// });
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let n = 1001; // the last run crosses the end: its elements past it are skipped
    /// let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    /// let xb = dev.upload(&xs)?;
    /// let mut yb = dev.upload(&vec![1.0f32; n])?;
    /// dev.compile(&kernel)?.launch_grid(3, (&xb, &mut yb, 2.0f32, n as u32))?;
    /// assert!(yb.to_vec()?.iter().zip(&xs).all(|(y, x)| *y == x.mul_add(2.0, 1.0)));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn read_run<T: Element>(
        &mut self,
        src: &impl Readable<T>,
        index: impl ElementIndex,
        items: u32,
    ) -> ThreadData<T> {
        let loc = Loc::caller();
        let dst = self.thread_data_n::<T>(items);
        let param = src.param_in(self);
        let index = self.expr(&Expr::<u32>::wrap(index.index_node()));
        let dst_id = self.data_id(&dst);
        self.push(
            OpKind::ReadRun {
                param,
                index,
                dst: dst_id,
            },
            loc,
        );
        dst
    }

    /// Writes every item of `src` to consecutive elements of `dst`: item `j` to
    /// `dst[index + j]`. Where the run's address is aligned to a vector and the run lies
    /// inside the buffer, it moves in vector accesses (see [`Self::read_run`]); elsewhere
    /// element by element. Where bounds are checked, elements at or past the buffer's length
    /// are not written.
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // Thread t writes t, t + 1 at 2 * t (in one 8-byte store where aligned).
    /// let mut k = KernelBuilder::new("pairs").block(32);
    /// let y = k.output::<u32>("y");
    /// let t = index::thread_rank();
    /// let v = k.thread_data_n::<u32>(2);
    /// k.set_item(&v, 0, t.clone());
    /// k.set_item(&v, 1, t.clone() + 1u32);
    /// k.write_run(&y, t * 2u32, &v);
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut yb = dev.alloc_zeroed::<u32>(63)?; // the last thread's second element is past the end
    /// dev.compile(&kernel)?.launch_grid(1, (&mut yb,))?;
    /// let want: Vec<u32> = (0..63).map(|i| i / 2 + i % 2).collect();
    /// assert_eq!(yb.to_vec()?, want);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn write_run<T: Element>(
        &mut self,
        dst: &impl Writable<T>,
        index: impl ElementIndex,
        src: &ThreadData<T>,
    ) {
        let loc = Loc::caller();
        let param = dst.param_in(self);
        let index = self.expr(&Expr::<u32>::wrap(index.index_node()));
        let src = self.data_id(src);
        self.push(OpKind::WriteRun { param, index, src }, loc);
    }

    /// Declares a scalar parameter (next in the signature). It reads as an expression
    /// wherever one is taken (`s.expr()`, or the handle itself).
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("shift").block(32).items_per_thread(1);
    /// let (x, y) = (k.input::<i64>("x"), k.output::<i64>("y"));
    /// let by = k.scalar::<i64>("by");
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let r = k.map(&t, |v| v + by.expr());
    /// k.store_to(b, &y, &r, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[1i64 << 40; 32])?;
    /// let mut yb = dev.alloc_zeroed::<i64>(32)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb, -1i64))?;
    /// assert_eq!(yb.to_vec()?, [(1i64 << 40) - 1; 32]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn scalar<T: Element>(&mut self, name: &str) -> Scalar<T> {
        Scalar::new(self.param(name, Role::Scalar, T::DTYPE), self.lineage.id())
    }

    /// Loads the group's tile of `src` (an input, or a read-write buffer) into a new payload
    /// (default items per thread). The controls choose how ([`Load::direct`], [`Load::striped`], [`Load::transpose`], ...), and
    /// where the tile starts and ends.
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// // The first 50 elements from offset 10; the rest of the tile reads -1.
    /// let mut k = KernelBuilder::new("window").block(16).items_per_thread(4);
    /// let (x, y) = (k.input::<i32>("x"), k.output::<i32>("y"));
    /// let b = k.this_block();
    /// let window = Load::transpose().offset(10u32).valid_items(50u32).oob_default(-1);
    /// let t = k.load_from(b, &x, window);
    /// k.store_to(b, &y, &t, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&(0..100).collect::<Vec<i32>>())?;
    /// let mut yb = dev.alloc_zeroed::<i32>(64)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// let want: Vec<i32> = (0..64).map(|i| if i < 50 { i + 10 } else { -1 }).collect();
    /// assert_eq!(yb.to_vec()?, want);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn load_from<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &impl Readable<T>,
        opts: Load<T>,
    ) -> ThreadData<T> {
        let dst = self.thread_data::<T>();
        self.load_into(group, src, &dst, opts);
        dst
    }

    /// Loads the group's tile of `src` into an existing payload, which may differ from the
    /// kernel's items per thread.
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// // Thread t loads x[t] and x[32 + t], into two payloads of one item.
    /// let mut k = KernelBuilder::new("halves").block(32).items_per_thread(1);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let (lo, hi) = (k.thread_data_n::<u32>(1), k.thread_data_n::<u32>(1));
    /// k.load_into(b, &x, &lo, Load::direct().offset(0u32));
    /// k.load_into(b, &x, &hi, Load::direct().offset(32u32));
    /// let sum = k.map2(&lo, &hi, |a, b| a + b);
    /// k.store_to(b, &y, &sum, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&(0..64).collect::<Vec<u32>>())?;
    /// let mut yb = dev.alloc_zeroed::<u32>(32)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// assert_eq!(yb.to_vec()?, (0..32).map(|t| 2 * t + 32).collect::<Vec<u32>>());
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn load_into<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &impl Readable<T>,
        dst: &ThreadData<T>,
        opts: Load<T>,
    ) {
        let loc = Loc::caller();
        let group = self.group_id(group.into());
        let param = src.param_in(self);
        let t = Transfer {
            group,
            param,
            data: self.data_id(dst),
            algorithm: opts.algorithm,
            offset: opts.offset.as_ref().map(|e| self.expr(e)),
            valid: opts.valid.as_ref().map(|(n, of)| ValidItems {
                count: self.expr(n),
                of: *of,
            }),
            oob_default: opts.oob_default.map(Element::to_bits),
            storage: opts.storage.map(|s| self.storage_id(&s)),
        };
        self.push(OpKind::Load(t), loc);
    }

    /// Stores a payload to the group's tile of `dst` (an output, or a read-write buffer). The
    /// controls choose how
    /// ([`Store::direct`], [`Store::striped`], [`Store::transpose`], ...), and where the tile
    /// starts and ends.
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// // Each warp stores its first 20 items, through shared memory for coalesced writes.
    /// let mut k = KernelBuilder::new("heads").block(64).items_per_thread(2);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let w = k.this_warp();
    /// let t = k.load_from(w, &x, Load::direct());
    /// k.store_to(w, &y, &t, Store::transpose().valid_items(20u32));
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&(1..=128).collect::<Vec<u32>>())?;
    /// let mut yb = dev.alloc_zeroed::<u32>(128)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// let ys = yb.to_vec()?;
    /// assert_eq!([ys[19], ys[20], ys[64 + 19], ys[64 + 20]], [20, 0, 84, 0]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn store_to<T: Element>(
        &mut self,
        group: impl Into<Group>,
        dst: &impl Writable<T>,
        data: &ThreadData<T>,
        opts: Store,
    ) {
        let loc = Loc::caller();
        let group = self.group_id(group.into());
        let param = dst.param_in(self);
        let t = Transfer {
            group,
            param,
            data: self.data_id(data),
            algorithm: opts.algorithm.unwrap_or(Algorithm::Direct),
            offset: opts.offset.as_ref().map(|e| self.expr(e)),
            valid: opts.valid.as_ref().map(|(n, of)| ValidItems {
                count: self.expr(n),
                of: *of,
            }),
            oob_default: None,
            storage: opts.storage.map(|s| self.storage_id(&s)),
        };
        self.push(OpKind::Store(t), loc);
    }

    /// Declares a temp storage: shared memory that loads and stores given it (with
    /// `.temp_storage(..)`) use for their exchanges instead of planned scratch.
    ///
    /// ```
    /// use coopgraph::ir::StorageSpec;
    /// use coopgraph::planner::PlanError;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{Error, KernelBuilder, Load, Store};
    ///
    /// // One storage serves the load's transpose and then the store's.
    /// let through = |spec: StorageSpec| {
    ///     let mut k = KernelBuilder::new("through").block(32).items_per_thread(8);
    ///     let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    ///     let b = k.this_block();
    ///     let s = k.temp_storage(spec);
    ///     let t = k.load_from(b, &x, Load::transpose().temp_storage(&s));
    ///     k.store_to(b, &y, &t, Store::transpose().temp_storage(&s));
    ///     k.build()
    /// };
    /// // 256 items of 4 bytes, padded against bank conflicts, do not fit in 1024 bytes.
    /// let small = through(StorageSpec::default().size_in_bytes(1024));
    /// let Err(Error::Plan(PlanError::TempStorageTooSmall { need, .. })) = small else {
    ///     panic!("{small:?}")
    /// };
    /// assert_eq!(need, 1056);
    /// let kernel = through(StorageSpec::default())?;
    ///
    /// let dev = Device::sim();
    /// let xs: Vec<u32> = (0..256).collect();
    /// let xb = dev.upload(&xs)?;
    /// let mut yb = dev.alloc_zeroed::<u32>(256)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// assert_eq!(yb.to_vec()?, xs);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn temp_storage(&mut self, spec: StorageSpec) -> TempStorage {
        let id = StorageId(self.ir.storages.len() as u32);
        self.ir.storages.push(StorageDecl {
            size: spec.size,
            align: spec.align,
            auto_sync: spec.auto_sync,
            sharing: spec.sharing,
            loc: Loc::caller(),
        });
        TempStorage {
            id,
            owner: self.lineage.id(),
        }
    }
}

//! Device-wide selection and partition, single pass with decoupled look-back.
//!
//! One block per tile, the tile's index taken from the workspace's counter (as the scan's).
//! The block loads its tile (warp-transposed), computes each item's flag in registers (the
//! predicate, or the flags buffer, and the tile's valid count), and scans the flags with
//! their aggregate: each kept item's rank among the tile's kept ones, and the tile's count.
//! The count of kept items before the tile is an exclusive sum across tiles: warp 0 finds it
//! by the look-back of `lookback.rs` (in `u32`), after the block has scattered its kept
//! items to their ranks in shared memory and read them back striped (which needs only the
//! ranks in the tile), so the tile's kept run is written contiguously and coalesced.
//!
//! A partition scatters the rejected items too, from the end of the tile backwards (a
//! permutation of the tile), and writes them from the end of the output backwards: the
//! rejected item with `g` rejected ones before it goes to `n - 1 - g`, as
//! `cub::DevicePartition::If` lays them out. The last tile writes the count.

use super::lookback::{LookBack, from_thread0, take_tile};
use super::scan::{check_lengths, check_tuning};
use super::{AlgorithmError, MapFn, Op, Tuning, Workspace};
use crate::ir::expr::IntElement;
use crate::ir::options::REGISTER_FILE;
use crate::ir::{DType, Expr, Group, Scan, Scatter, StorageSpec, ThreadData, index};
use crate::runtime::{ArgList, Buffer, Device, DeviceElement, Function};
use crate::{Error, Kernel, KernelBuilder, Load, Store};
use std::fmt;
use std::sync::Arc;

/// A predicate written in the expression language, fused into a selection's kernel.
///
/// ```
/// use coopgraph::algorithms::PredicateFn;
/// use std::sync::Arc;
///
/// let even: PredicateFn<u32> = Arc::new(|v| (v % 2u32).eq(0u32));
/// let _ = even(coopgraph::ir::Expr::lit(4u32));
/// ```
pub type PredicateFn<T> = Arc<dyn Fn(Expr<T>) -> Expr<bool> + Send + Sync>;

/// What a [`DeviceSelect`] does with the items.
///
/// ```
/// use coopgraph::algorithms::{DeviceSelect, SelectKind};
///
/// let p = DeviceSelect::partition(|v: coopgraph::ir::Expr<i32>| v.lt(0));
/// assert_eq!(p.kind(), SelectKind::Partition);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelectKind {
    /// The items the predicate keeps, in input order (`cub::DeviceSelect::If`).
    If,
    /// The items whose flag (a `u8` buffer beside the input) is not 0, in input order
    /// (`cub::DeviceSelect::Flagged`).
    Flagged,
    /// The kept items first in input order, then the rest in reverse input order
    /// (`cub::DevicePartition::If`).
    Partition,
}

impl SelectKind {
    fn name(self) -> &'static str {
        match self {
            SelectKind::If => "select_if",
            SelectKind::Flagged => "select_flagged",
            SelectKind::Partition => "partition",
        }
    }
}

/// The default tuning of a selection or partition of `dtype`: [`default_tuning`]'s (256
/// threads × 32 items for 4-byte elements). With three blocks an SM (the kernel asks for
/// them, see [`KernelBuilder::min_blocks_per_sm`]) 256 × 32 is the fastest measured on the
/// H200 at 2^28 `u32`, in one run beside CUB: the even selection 2889 GB/s (1.12× CUB),
/// keeping 30% 2574 (1.05×), `f32` above 0.5 2874 (1.07×), the even partition 3020 (1.27×);
/// at 384 × 20, the default before, 2654, 2420, 2658 and 2886; at 256 × 24 between the two.
///
/// [`default_tuning`]: super::default_tuning
///
/// ```
/// use coopgraph::algorithms::{Tuning, default_select_tuning};
/// use coopgraph::ir::DType;
///
/// assert_eq!(default_select_tuning(DType::F32), Tuning { threads: 256, items: 32 });
/// assert_eq!(default_select_tuning(DType::U64).tile_items(), 4096);
/// ```
pub fn default_select_tuning(dtype: DType) -> Tuning {
    super::default_tuning(dtype)
}

/// A device-wide selection or partition to prepare: its kind and predicate, an optional
/// element-wise map fused on the way in (the predicate sees, and the output gets, `f(x[i])`),
/// and its tuning ([`default_select_tuning`] unless set).
///
/// ```
/// use coopgraph::algorithms::{DeviceSelect, Workspace};
/// use coopgraph::runtime::Device;
///
/// // The squares above 10, in order.
/// let device = Device::sim();
/// let select = DeviceSelect::new(|v: coopgraph::ir::Expr<u32>| v.gt(10u32))
///     .map_input(|v| v.clone() * v)
///     .prepare(&device)?;
/// let x = device.upload(&[1u32, 5, 2, 4, 3, 6])?;
/// let mut out = device.alloc_zeroed::<u32>(6)?;
/// let kept = select.run(&x, &mut out, &mut Workspace::new(&device)?)?;
/// assert_eq!(out.to_vec()?[..kept], [25, 16, 36]);
/// # Ok::<(), coopgraph::Error>(())
/// ```
#[derive(Clone)]
pub struct DeviceSelect<T: DeviceElement> {
    kind: SelectKind,
    predicate: Option<PredicateFn<T>>,
    map_in: Option<MapFn<T>>,
    tuning: Option<Tuning>,
}

impl<T: DeviceElement> fmt::Debug for DeviceSelect<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceSelect")
            .field("kind", &self.kind)
            .field("map_in", &self.map_in.is_some())
            .field("tuning", &self.chosen())
            .finish()
    }
}

impl<T: DeviceElement> DeviceSelect<T> {
    /// Keeps the items where `predicate` holds, in input order.
    pub fn new(predicate: impl Fn(Expr<T>) -> Expr<bool> + Send + Sync + 'static) -> Self {
        DeviceSelect {
            kind: SelectKind::If,
            predicate: Some(Arc::new(predicate)),
            map_in: None,
            tuning: None,
        }
    }

    /// Keeps the items whose flag is not 0 (run with [`PreparedSelect::run_flagged`]).
    ///
    /// ```
    /// use coopgraph::algorithms::{DeviceSelect, Workspace};
    /// use coopgraph::runtime::Device;
    ///
    /// let device = Device::sim();
    /// let select = DeviceSelect::<f32>::flagged().prepare(&device)?;
    /// let x = device.upload(&[0.5f32, 1.5, 2.5, 3.5])?;
    /// let flags = device.upload(&[1u8, 0, 0, 7])?;
    /// let mut out = device.alloc_zeroed::<f32>(4)?;
    /// let kept = select.run_flagged(&x, &flags, &mut out, &mut Workspace::new(&device)?)?;
    /// assert_eq!(out.to_vec()?[..kept], [0.5, 3.5]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn flagged() -> Self {
        DeviceSelect {
            kind: SelectKind::Flagged,
            predicate: None,
            map_in: None,
            tuning: None,
        }
    }

    /// The items where `predicate` holds first, in input order, then the others in reverse
    /// input order.
    ///
    /// ```
    /// use coopgraph::algorithms::{DeviceSelect, Workspace};
    /// use coopgraph::runtime::Device;
    ///
    /// let device = Device::sim();
    /// let p = DeviceSelect::partition(|v: coopgraph::ir::Expr<i32>| v.lt(0)).prepare(&device)?;
    /// let x = device.upload(&[3i32, -1, 4, -1, 5, -9])?;
    /// let mut out = device.alloc_zeroed::<i32>(6)?;
    /// let negative = p.run(&x, &mut out, &mut Workspace::new(&device)?)?;
    /// assert_eq!((negative, out.to_vec()?), (3, vec![-1, -1, -9, 5, 4, 3]));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn partition(predicate: impl Fn(Expr<T>) -> Expr<bool> + Send + Sync + 'static) -> Self {
        DeviceSelect {
            kind: SelectKind::Partition,
            ..DeviceSelect::new(predicate)
        }
    }

    /// Selects from `f(x[i])` instead of `x[i]` (fused: read once, in the kernel).
    pub fn map_input(mut self, f: impl Fn(Expr<T>) -> Expr<T> + Send + Sync + 'static) -> Self {
        self.map_in = Some(Arc::new(f));
        self
    }

    /// Threads per block and items per thread of the kernel.
    pub fn tuning(mut self, tuning: Tuning) -> Self {
        self.tuning = Some(tuning);
        self
    }

    /// Its kind (see [`SelectKind`] for an example).
    pub fn kind(&self) -> SelectKind {
        self.kind
    }

    fn chosen(&self) -> Tuning {
        self.tuning
            .unwrap_or_else(|| default_select_tuning(T::DTYPE))
    }

    /// The kernel, built (for inspection: its IR, PTX, resources).
    ///
    /// ```
    /// use coopgraph::algorithms::DeviceSelect;
    /// use coopgraph::ptx::Arch;
    ///
    /// let k = DeviceSelect::new(|v: coopgraph::ir::Expr<f32>| v.gt(0.5f32)).kernel()?;
    /// assert!(k.ptx(Arch::Sm90)?.contains("nanosleep"));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn kernel(&self) -> Result<Kernel, Error> {
        let tuning = self.chosen();
        check_tuning(tuning)?;
        build(self, tuning)
    }

    /// Builds the kernel and loads it on `device` (from the device's cache when the same
    /// kernel was loaded before).
    pub fn prepare(&self, device: &Device) -> Result<PreparedSelect<T>, Error> {
        let kernel = self.kernel()?;
        Ok(PreparedSelect {
            function: device.compile(&kernel)?,
            tuning: self.chosen(),
            kind: self.kind,
            _t: std::marker::PhantomData,
        })
    }
}

/// Where a call leaves its count: returned to the host, or in the first element of a
/// device buffer (so a pipeline of calls need not wait for the device).
pub(super) enum CountTo<'a> {
    Host,
    Device(&'a mut Buffer<u32>),
}

impl CountTo<'_> {
    /// Refuses an empty count buffer.
    pub(super) fn check(&self, device: &Device) -> Result<(), Error> {
        match self {
            CountTo::Host => Ok(()),
            CountTo::Device(c) if c.is_empty() => Err(AlgorithmError::OutputTooShort {
                input: 1,
                output: 0,
            }
            .into()),
            CountTo::Device(c) if !c.is_on(device) => {
                Err(AlgorithmError::WrongDevice { what: "count" }.into())
            }
            CountTo::Device(_) => Ok(()),
        }
    }
}

/// Checks a counting call's lengths (`outputs`, each at least `n`), devices (`on`: whether
/// its buffers are on the function's device) and count buffer, then runs `launch` over its
/// tiles with the count buffer `to` names (the workspace's for the host, which is then read
/// back): the count, or 0 when it stays on the device. An empty input launches nothing when
/// the count goes to the host (and one block that writes 0 when it stays on the device).
#[allow(clippy::too_many_arguments)]
pub(super) fn counted_launch(
    function: &Function,
    tile: u32,
    n: usize,
    outputs: &[usize],
    on: bool,
    to: CountTo<'_>,
    ws: &mut Workspace,
    launch: impl FnOnce(&mut Workspace, &mut Buffer<u32>, usize) -> Result<(), Error>,
) -> Result<usize, Error> {
    let device = function.device();
    for &len in outputs {
        check_lengths(n, len, tile as usize)?;
    }
    if !on {
        return Err(AlgorithmError::WrongDevice { what: "buffer" }.into());
    }
    to.check(device)?;
    ws.check_device(device)?;
    let tiles = n.div_ceil(tile as usize).max(1);
    match to {
        CountTo::Device(count) => launch(ws, count, tiles).map(|()| 0),
        CountTo::Host => {
            if n == 0 {
                return Ok(0);
            }
            let mut count = ws.take_count()?;
            let result = launch(ws, &mut count, tiles).and_then(|()| Ok(count.to_vec()?));
            ws.put_count(count);
            Ok(result?[0] as usize)
        }
    }
}

/// A selection or partition loaded on a device, ready to run on any buffers there.
///
/// ```
/// use coopgraph::algorithms::{DeviceSelect, Tuning};
/// use coopgraph::runtime::Device;
///
/// let t = Tuning { threads: 128, items: 4 };
/// let s = DeviceSelect::new(|v: coopgraph::ir::Expr<u64>| v.ne(0u64)).tuning(t);
/// let s = s.prepare(&Device::sim())?;
/// assert_eq!((s.tuning(), s.tile_items()), (t, 512));
/// assert!(s.function().name().starts_with("device_select_if_u64"));
/// # Ok::<(), coopgraph::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct PreparedSelect<T: DeviceElement> {
    function: Function,
    tuning: Tuning,
    kind: SelectKind,
    _t: std::marker::PhantomData<fn() -> T>,
}

impl<T: DeviceElement> PreparedSelect<T> {
    /// Elements per tile (one block each).
    pub fn tile_items(&self) -> u32 {
        self.tuning.tile_items()
    }

    /// The tuning it was built with.
    pub fn tuning(&self) -> Tuning {
        self.tuning
    }

    /// The loaded kernel.
    pub fn function(&self) -> &Function {
        &self.function
    }

    /// Selects from all of `x` into the front of `out` (a partition fills the first
    /// `x.len()` elements) in one launch, working in `ws`, and returns the number kept (read
    /// back from the device). `out` may be longer than `x`; its elements past those written
    /// are left alone.
    pub fn run(
        &self,
        x: &Buffer<T>,
        out: &mut Buffer<T>,
        ws: &mut Workspace,
    ) -> Result<usize, Error> {
        self.launch(x, None, out, CountTo::Host, ws)
    }

    /// As [`run`](Self::run), leaving the number kept in `count[0]` on the device instead
    /// (nothing waits for the device).
    ///
    /// ```
    /// use coopgraph::algorithms::{DeviceSelect, Workspace};
    /// use coopgraph::runtime::Device;
    ///
    /// let device = Device::sim();
    /// let s = DeviceSelect::new(|v: coopgraph::ir::Expr<i64>| v.ge(2)).prepare(&device)?;
    /// let x = device.upload(&[1i64, 2, 3, -4])?;
    /// let (mut out, mut count) = (device.alloc_zeroed::<i64>(4)?, device.alloc_zeroed::<u32>(1)?);
    /// s.run_to_device(&x, &mut out, &mut count, &mut Workspace::new(&device)?)?;
    /// assert_eq!((count.to_vec()?, out.to_vec()?), (vec![2], vec![2, 3, 0, 0]));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn run_to_device(
        &self,
        x: &Buffer<T>,
        out: &mut Buffer<T>,
        count: &mut Buffer<u32>,
        ws: &mut Workspace,
    ) -> Result<(), Error> {
        self.launch(x, None, out, CountTo::Device(count), ws)
            .map(drop)
    }

    /// A flagged selection (see [`DeviceSelect::flagged`]) of `x` where `flags` is not 0;
    /// `flags` must hold at least `x.len()` elements.
    pub fn run_flagged(
        &self,
        x: &Buffer<T>,
        flags: &Buffer<u8>,
        out: &mut Buffer<T>,
        ws: &mut Workspace,
    ) -> Result<usize, Error> {
        self.launch(x, Some(flags), out, CountTo::Host, ws)
    }

    /// As [`run_flagged`](Self::run_flagged), leaving the number kept in `count[0]`.
    pub fn run_flagged_to_device(
        &self,
        x: &Buffer<T>,
        flags: &Buffer<u8>,
        out: &mut Buffer<T>,
        count: &mut Buffer<u32>,
        ws: &mut Workspace,
    ) -> Result<(), Error> {
        self.launch(x, Some(flags), out, CountTo::Device(count), ws)
            .map(drop)
    }

    fn launch(
        &self,
        x: &Buffer<T>,
        flags: Option<&Buffer<u8>>,
        out: &mut Buffer<T>,
        to: CountTo<'_>,
        ws: &mut Workspace,
    ) -> Result<usize, Error> {
        let device = self.function.device();
        let n = x.len();
        if flags.is_some() != (self.kind == SelectKind::Flagged) {
            return Err(AlgorithmError::Flags {
                flagged: self.kind == SelectKind::Flagged,
            }
            .into());
        }
        let lens = [out.len(), flags.map_or(n, |f| f.len())];
        let on = x.is_on(device) && out.is_on(device) && flags.is_none_or(|f| f.is_on(device));
        let tile = self.tile_items();
        counted_launch(
            &self.function,
            tile,
            n,
            &lens,
            on,
            to,
            ws,
            |ws, count, tiles| {
                let (ticket, status, _) = ws.begin(tiles, 1)?;
                let mut args = ArgList::new();
                args.push(x);
                if let Some(f) = flags {
                    args.push(f);
                }
                args.push(&mut *out)
                    .push(n as u32)
                    .push(&mut *status)
                    .push(ticket.epoch)
                    .push(ticket.base)
                    .push(&mut *count);
                let result = (self.function)
                    .launch_grid(tiles as u32, args)
                    .map_err(Error::from);
                ws.finish(tiles, result)
            },
        )
    }
}

/// The kept items' flags (1 or 0), their ranks among the tile's kept items and the tile's
/// count of them, from `keep`'s flags: each thread's flags folded into one mask (`M` holds a
/// bit an item), its count scanned across the block, an item's rank the thread's base and
/// the count of the mask's bits below its own. Scanned item by item, the flags and ranks
/// took two registers an item: the 256 x 32 selection needed 80 registers (three blocks an
/// SM) where the mask leaves it 56 (four).
fn ranks_by_mask<M: IntElement>(
    k: &mut KernelBuilder,
    b: Group,
    keep: &ThreadData<u32>,
    items: u32,
) -> (ThreadData<u32>, ThreadData<u32>, ThreadData<u32>) {
    let one = || Expr::lit(1u32).cast::<M>();
    let mask = k.var(Expr::lit(0u32).cast::<M>());
    for j in 0..items {
        k.set(&mask, mask.get() | (keep.item(j).cast::<M>() << j));
    }
    let counts = k.thread_data_n::<u32>(1);
    k.set_item(&counts, 0, mask.get().popc());
    let (base, total) = k.scan_with_aggregate(b, &counts, Scan::exclusive_sum());
    let m = mask.get();
    let flag = k.map(keep, |_| {
        ((m.clone() >> index::item()) & one()).cast::<u32>()
    });
    let rank = k.map(keep, |_| {
        let below = (one() << index::item()) - one();
        base.item(0) + (m.clone() & below).popc()
    });
    (flag, rank, total)
}

/// Warps a selection's kernel asks each SM to hold at once: 36, as CUB's selection on the
/// H200 runs (three blocks of 384 threads at 56 registers). Left to itself, ptxas gave the
/// 384 × 20 kernel of some predicates 58 registers, two blocks an SM (Nsight Compute: 36%
/// of the warps resident against CUB's 54%). At the default 256 × 32 the items' registers
/// hold the hint to three blocks (where ptxas alone gave 128 registers and two blocks);
/// under it ptxas gives the partition 80 registers (three blocks an SM) and the selection,
/// whose flags fold into a mask ([`ranks_by_mask`]), 56 (four blocks; hinted four, it
/// spilled 40 bytes at 64).
const RESIDENT_WARPS: u32 = 36;

/// Registers a selection's thread needs beside its items' (the flags, ranks, offsets and
/// addresses; ptxas gave the 4-byte kernels 56–64 at 16–24 items without spilling).
const SELECT_OVERHEAD_REGISTERS: u32 = 36;

/// The blocks per SM a selection's kernel asks ptxas for
/// ([`KernelBuilder::min_blocks_per_sm`]): [`RESIDENT_WARPS`] worth, but no more than leave
/// each thread its items' registers and [`SELECT_OVERHEAD_REGISTERS`] (so a tile of many
/// items is not made to spill); `None` where that is fewer than two.
fn blocks_per_sm(tuning: Tuning, bytes: u32) -> Option<u32> {
    let Tuning { threads, items } = tuning;
    let per_thread = (items * bytes.div_ceil(4) + SELECT_OVERHEAD_REGISTERS).next_multiple_of(8);
    let by_registers = REGISTER_FILE / threads.max(1).saturating_mul(per_thread);
    let blocks = (RESIDENT_WARPS * 32 / threads.max(1)).min(by_registers);
    (blocks >= 2).then_some(blocks)
}

/// The kernel of a selection or partition.
fn build<T: DeviceElement>(sel: &DeviceSelect<T>, tuning: Tuning) -> Result<Kernel, Error> {
    let Tuning { threads, items } = tuning;
    let tile_items = tuning.tile_items();
    let name = format!("device_{}_{}_{threads}x{items}", sel.kind.name(), T::DTYPE);
    let mut k = KernelBuilder::new(name)
        .block(threads)
        .items_per_thread(items);
    if let Some(blocks) = blocks_per_sm(tuning, T::DTYPE.bytes()) {
        k = k.min_blocks_per_sm(blocks);
    }
    let x = k.input::<T>("x");
    let flags = match sel.kind {
        SelectKind::Flagged => Some(k.input::<u8>("flags")),
        _ => None,
    };
    let (out, n) = (k.output::<T>("out"), k.scalar::<u32>("n"));
    let status = k.buffer::<u64>("status");
    let (epoch, base) = (k.scalar::<u32>("epoch"), k.scalar::<u64>("base"));
    let count = k.output::<u32>("count");
    let b = k.this_block();
    let tile = take_tile(&mut k, &status, &base);
    let tiles = (n.expr() + (tile_items - 1)) / tile_items;
    // An empty input's one block writes the count.
    let empty = n.expr().eq(0u32).and(&index::thread_rank().eq(0u32));
    k.if_(empty, |k| k.write(&count, 0u32, 0u32));
    let sum = Op::<u32>::sum();
    let look = LookBack {
        op: &sum,
        status: &status,
        epoch: &epoch,
        tile: tile.clone(),
    };
    k.if_(tile.lt(tiles.clone()), |k| {
        let start = tile.clone() * tile_items;
        let valid = (n.expr() - start.clone()).min(tile_items);
        let staging = k.temp_storage(StorageSpec::default());
        let load = Load::warp_transpose()
            .offset(start.clone())
            .valid_items(valid.clone())
            .oob_default(T::default())
            .temp_storage(&staging);
        let loaded = k.load_from(b, &x, load);
        let input = match &sel.map_in {
            Some(f) => k.map(&loaded, |v| f(v)),
            None => loaded,
        };
        // The item's position in the tile (the load leaves the tile blocked).
        let pos = index::thread_rank() * items + index::item();
        let in_tile = pos.lt(valid.clone());
        let keep = match (&sel.predicate, flags) {
            (Some(p), _) => k.map(&input, |v| in_tile.and(&p(v)).select(1u32, 0u32)),
            (None, Some(flags)) => {
                let load = Load::warp_transpose()
                    .offset(start.clone())
                    .valid_items(valid.clone())
                    .oob_default(0u8)
                    .temp_storage(&staging);
                let f = k.load_from(b, &flags, load);
                k.map(&f, |f| in_tile.and(&f.ne(0u8)).select(1u32, 0u32))
            }
            (None, None) => unreachable!("a selection without a predicate is flagged"),
        };
        // Each kept item's rank in the tile and the tile's count; the block scatters its items
        // to the tile's slots (which need only the ranks in the tile), then warp 0 finds the
        // count before the tile while the other warps wait at the barrier. Scattered after the
        // look-back, the selections ran 2.5-3.5% slower on an H100 (2^28, example 28), and
        // scattered by warps 1.. while warp 0 looks back, no faster than that.
        let (keep, rank, total) = if items <= 32 {
            ranks_by_mask::<u32>(k, b, &keep, items)
        } else {
            ranks_by_mask::<u64>(k, b, &keep, items)
        };
        let slot = k.shared_array::<u32>(1);
        let s = match sel.kind {
            SelectKind::If | SelectKind::Flagged => {
                let to = Scatter::striped(threads).flags(&keep);
                k.scatter(b, &input, &rank, to)
            }
            SelectKind::Partition => {
                // Kept items to their ranks, rejected ones from the tile's valid end
                // backwards, the positions past it to themselves: a permutation.
                let to_slot = k.map2(&keep, &rank, |kp, r| {
                    let back = valid.clone() - 1u32 - (pos.clone() - r.clone());
                    let other = in_tile.clone().select(back, pos.clone());
                    kp.eq(1u32).select(r, other)
                });
                k.scatter(b, &input, &to_slot, Scatter::striped(threads).permutation())
            }
        };
        look.prefix(k, total.item(0), Some(Expr::lit(0u32)), &slot);
        // Thread 0 (lane 0 of warp 0, which wrote the slot) hands the count before the tile
        // and the tile's count to the block, uniform as the stores' offsets and counts must
        // be.
        let both = (slot.read(0u32).cast::<u64>() << 32u32) | total.item(0).cast::<u64>();
        let both = from_thread0(k, b, |_| both);
        let before = (both.clone() >> 32u32).cast::<u32>();
        let kept = both.cast::<u32>();
        let last = tile.eq(tiles - 1u32).and(&index::thread_rank().eq(0u32));
        k.if_(last, |k| {
            k.write(&count, 0u32, before.clone() + kept.clone())
        });
        match sel.kind {
            SelectKind::If | SelectKind::Flagged => {
                let store = Store::striped().offset(before).valid_items(kept);
                k.store_to(b, &out, &s, store);
            }
            SelectKind::Partition => {
                // Slot `s` of the rejected ones goes to `n - start + before - valid + s`.
                let back = n.expr() - start.clone() + before.clone() - valid.clone();
                for j in 0..items {
                    let at = index::thread_rank() + j * threads;
                    let dest = at
                        .lt(kept.clone())
                        .select(before.clone() + at.clone(), back.clone() + at.clone());
                    k.if_(at.lt(valid.clone()), |k| k.write(&out, dest, s.item(j)));
                }
            }
        }
    });
    k.build()
}

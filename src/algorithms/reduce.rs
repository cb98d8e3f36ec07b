//! The device-wide reduction, in one launch: each block folds a contiguous run of tiles into
//! one partial and writes it; then it takes a ticket from the workspace's counter (an atomic
//! add with acquire-release order, after its partial), and the block whose ticket is the
//! grid's last folds every block's partial, in block order, and writes the result. No second
//! launch waits for the first to drain. Deterministic for any operator: the same length,
//! tuning and device (its SM count sets the grid) give the same tree of operations, so floats
//! come out bit for bit the same on every run, whichever block finishes last.
//!
//! A custom operator, and the minimum and maximum of floats, fold each tile in element order
//! and the tiles in order, through a tile loaded blocked (a warp transpose). Sums, and the
//! minimum and maximum of integers, do not depend on the order (float sums up to their
//! rounding, as CUB's): each thread folds its share of the block's tiles, read in 16-byte
//! runs with the threads side by side, and the block combines the threads' values once.
//!
//! A grid of a few blocks per SM keeps the partials few (hundreds): the last block's fold
//! reads a handful a thread.

use super::lookback::take_ticket;
use super::scan::{check_lengths, check_tuning};
use super::{AlgorithmError, MapFn, Op, ScanElement, Tuning, Workspace, chosen};
use crate::ir::{Element, Expr, Group, Input, MemoryOrder, Output, Scalar, ThreadData, index};
use crate::runtime::{Buffer, Device, Function};
use crate::{Error, Kernel, KernelBuilder, Load};
use std::fmt;
use std::sync::Arc;

/// Blocks per SM of the kernel that reads the input.
const BLOCKS_PER_SM: usize = 4;

/// A device-wide reduction to prepare: its operator, an optional element-wise map fused on
/// the way in (`op` reduces `map_in(x)`), and its tuning ([`default_tuning`](super::default_tuning) unless set).
///
/// ```
/// use coopgraph::algorithms::{DeviceReduce, Op, Workspace};
/// use coopgraph::runtime::Device;
///
/// // The sum of squares.
/// let device = Device::sim();
/// let r = DeviceReduce::new(Op::sum()).map_input(|v| v.clone() * v).prepare(&device)?;
/// let x = device.upload(&(1..=100).collect::<Vec<u64>>())?;
/// assert_eq!(r.run(&x, &mut Workspace::new(&device)?)?, Some(338_350));
/// # Ok::<(), coopgraph::Error>(())
/// ```
#[derive(Clone)]
pub struct DeviceReduce<T: ScanElement> {
    op: Op<T>,
    map_in: Option<MapFn<T>>,
    tuning: Option<Tuning>,
}

impl<T: ScanElement> fmt::Debug for DeviceReduce<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceReduce")
            .field("op", &self.op)
            .field("map_in", &self.map_in.is_some())
            .field("tuning", &self.chosen())
            .finish()
    }
}

impl<T: ScanElement> DeviceReduce<T> {
    /// The reduction with `op`.
    pub fn new(op: Op<T>) -> Self {
        DeviceReduce {
            op,
            map_in: None,
            tuning: None,
        }
    }

    /// Reduces `f(x[i])` instead of `x[i]` (fused: read once, in the first kernel).
    pub fn map_input(mut self, f: impl Fn(Expr<T>) -> Expr<T> + Send + Sync + 'static) -> Self {
        self.map_in = Some(Arc::new(f));
        self
    }

    /// Threads per block and items per thread of the kernel that reads the input.
    pub fn tuning(mut self, tuning: Tuning) -> Self {
        self.tuning = Some(tuning);
        self
    }

    fn chosen(&self) -> Tuning {
        chosen::<T>(self.tuning)
    }

    /// The kernels it launches, built: one, which reads the tiles and folds the partials.
    pub fn kernels(&self) -> Result<[Kernel; 1], Error> {
        let tuning = self.chosen();
        check_tuning(tuning)?;
        Ok([self.tiles_kernel(tuning)?])
    }

    /// Builds the kernel and loads it on `device` (from its cache when loaded before).
    pub fn prepare(&self, device: &Device) -> Result<PreparedReduce<T>, Error> {
        let [tiles] = self.kernels()?;
        Ok(self.prepared_with(device.compile(&tiles)?, self.chosen()))
    }

    /// The reduction prepared from its loaded kernel, built with `tuning`.
    pub(super) fn prepared_with(&self, tiles: Function, tuning: Tuning) -> PreparedReduce<T> {
        PreparedReduce {
            tiles,
            tuning,
            _t: std::marker::PhantomData,
        }
    }

    /// `partials[b]` = the fold of block `b`'s tiles `b * per .. (b + 1) * per` (packed in 64
    /// bits): each tile in element order and the tiles in order, or in any order where the
    /// operator allows it ([`any_order_tiles_kernel`](Self::any_order_tiles_kernel)); then
    /// the last block to finish writes the fold of the partials to `out[0]` ([`TilesHead::finish`]).
    pub(super) fn tiles_kernel(&self, tuning: Tuning) -> Result<Kernel, Error> {
        if let Some(identity) = self.op.any_order_identity() {
            return self.any_order_tiles_kernel(tuning, identity);
        }
        let tile_items = tuning.tile_items();
        let mut head = TilesHead::<T>::new("", tuning);
        let (x, n, b) = (head.x, head.n, head.b);
        let (first, end) = (head.first.clone(), head.end.clone());
        let k = &mut head.k;
        let first_thread = index::thread_rank().eq(0u32);
        let carry = k.var(Expr::lit(T::default()));
        k.for_range(first.clone(), end, |k, tile| {
            let start = tile.clone() * tile_items;
            let valid = (n.expr() - start.clone()).min(tile_items);
            let load = Load::warp_transpose()
                .offset(start)
                .valid_items(valid.clone())
                .oob_default(T::default());
            let t = k.load_from(b, &x, load);
            let t = match &self.map_in {
                Some(f) => k.map(&t, |v| f(v)),
                None => t,
            };
            let r = fold(k, b, &self.op, &t, valid);
            k.if_(first_thread.clone(), |k| {
                k.if_else(
                    tile.eq(first.clone()),
                    |k| k.set(&carry, r.item(0)),
                    |k| k.set(&carry, self.op.apply(carry.get(), r.item(0))),
                );
            });
        });
        head.finish(&self.op, carry.get())
    }

    /// The first launch for an operator whose result does not depend on the order it
    /// combines in ([`Op::any_order_identity`]), as CUB's: each thread folds its part of the
    /// block's whole run of tiles into one value, starting from the identity, and the block
    /// combines its threads' values once, at the end. A tile is read in runs of `v`
    /// consecutive elements (one 16-byte load where `items` allows), the block's threads
    /// side by side: thread `t`'s `i`-th run starts at `(i * threads + t) * v`, so each
    /// warp's load is one contiguous stretch (CUB's striped vectors). Every run's read is
    /// issued before the fold, so they are in flight together.
    fn any_order_tiles_kernel(&self, tuning: Tuning, identity: T) -> Result<Kernel, Error> {
        let Tuning { threads, items } = tuning;
        let tile_items = tuning.tile_items();
        let mut v = (16 / T::DTYPE.bytes()).max(1);
        while items % v != 0 {
            v /= 2;
        }
        let mut head = TilesHead::<T>::new("any_order_", tuning);
        let (x, n, b) = (head.x, head.n, head.b);
        let (first, end) = (head.first.clone(), head.end.clone());
        let k = &mut head.k;
        let t = index::thread_rank();
        // The block's full tiles end here; a partial one (the input's last) may follow.
        let full_end = end.clone().min(n.expr() / tile_items);
        let acc = k.var(Expr::lit(identity));
        // Folds the tile at `start`; `rest`: the elements it holds, where it is partial.
        let fold_tile = |k: &mut KernelBuilder, start: Expr<u32>, rest: Option<Expr<u32>>| {
            let runs: Vec<_> = (0..items / v)
                .map(|i| {
                    let at = (t.clone() + i * threads) * v;
                    (at.clone(), k.read_run(&x, start.clone() + at, v))
                })
                .collect();
            for (at, run) in runs {
                let run = match &self.map_in {
                    Some(f) => k.map(&run, |e| f(e)),
                    None => run,
                };
                for j in 0..v {
                    // Past a partial tile's end: zeros read past the input, or their map.
                    let joined = self.op.apply(acc.get(), run.item(j));
                    let next = match &rest {
                        Some(rest) => (at.clone() + j).lt(rest.clone()).select(joined, acc.get()),
                        None => joined,
                    };
                    k.set(&acc, next);
                }
            }
        };
        k.for_range(first, full_end.clone(), |k, tile| {
            fold_tile(k, tile * tile_items, None);
        });
        k.if_(full_end.clone().lt(end), |k| {
            let start = full_end.clone() * tile_items;
            fold_tile(k, start.clone(), Some(n.expr() - start));
        });
        let part = k.thread_data_n::<T>(1);
        k.set_item(&part, 0, acc.get());
        let r = k.reduce(b, &part, self.op.reduce());
        head.finish(&self.op, r.item(0))
    }
}

/// What both forms of the kernel begin and end with: their parameters (`x`, `partials`, `n`,
/// `per`, `status`, `base`, `out`, in that order), the tiles `first .. end` of the block's run,
/// and the fold of the blocks' partials by the last block ([`finish`](Self::finish)).
struct TilesHead<T: ScanElement> {
    k: KernelBuilder,
    x: Input<T>,
    partials: crate::ir::Buffer<u64>,
    n: Scalar<u32>,
    status: crate::ir::Buffer<u64>,
    base: Scalar<u64>,
    out: Output<T>,
    b: Group,
    threads: u32,
    first: Expr<u32>,
    end: Expr<u32>,
}

impl<T: ScanElement> TilesHead<T> {
    /// The kernel `device_reduce_tiles_{form}{dtype}_{threads}x{items}`.
    fn new(form: &str, tuning: Tuning) -> Self {
        let Tuning { threads, items } = tuning;
        let tile_items = tuning.tile_items();
        let name = format!("device_reduce_tiles_{form}{}_{threads}x{items}", T::DTYPE);
        let mut k = KernelBuilder::new(name)
            .block(threads)
            .items_per_thread(items);
        let (x, partials) = (k.input::<T>("x"), k.buffer::<u64>("partials"));
        let (n, per) = (k.scalar::<u32>("n"), k.scalar::<u32>("per"));
        let (status, base) = (k.buffer::<u64>("status"), k.scalar::<u64>("base"));
        let out = k.output::<T>("out");
        let b = k.this_block();
        let tiles = (n.expr() + (tile_items - 1)) / tile_items;
        let first = index::block_index() * per.expr();
        let end = (first.clone() + per.expr()).min(tiles);
        TilesHead {
            k,
            x,
            partials,
            n,
            status,
            base,
            out,
            b,
            threads,
            first,
            end,
        }
    }

    /// Ends the kernel: thread 0 writes `partial` (the block's fold, valid at thread 0) to
    /// `partials[block]` and takes a ticket from the counter in word 0 of `status`, with
    /// acquire-release order (the write happens before the ticket; every partial whose ticket
    /// came earlier is visible after it). The block that takes the grid's last ticket (less
    /// `base`, where this call's tickets start) folds the partials in block order: thread `t`
    /// folds its run of consecutive partials (plain reads, ordered after the other blocks'
    /// writes by thread 0's acquire and the block barrier of the broadcast), and the block
    /// folds the threads' values in rank order into `out[0]`.
    fn finish(mut self, op: &Op<T>, partial: Expr<T>) -> Result<Kernel, Error> {
        let k = &mut self.k;
        let t = index::thread_rank();
        let blocks = index::grid_blocks();
        k.if_(t.eq(0u32), |k| {
            k.write(&self.partials, index::block_index(), T::pack(&partial));
        });
        let ticket = take_ticket(k, &self.status, &self.base, MemoryOrder::AcqRel);
        let threads = self.threads;
        k.if_(ticket.eq(blocks.clone() - 1u32), |k| {
            let run = (blocks.clone() + (threads - 1)) / threads;
            let start = t.clone() * run.clone();
            let mine = (blocks.clone() - blocks.clone().min(start.clone())).min(run.clone());
            let acc = k.var(Expr::lit(T::default()));
            k.for_range(0u32, mine, |k, j| {
                let v = T::unpack(&self.partials.at(start.clone() + j.clone()));
                let joined = op.apply(acc.get(), v.clone());
                k.set(&acc, j.eq(0u32).select(v, joined));
            });
            let part = k.thread_data_n::<T>(1);
            k.set_item(&part, 0, acc.get());
            let holders = (blocks.clone() + (run.clone() - 1u32)) / run;
            let r = k.reduce(self.b, &part, op.reduce().valid_items(holders));
            k.if_(t.eq(0u32), |k| k.write(&self.out, 0u32, r.item(0)));
        });
        self.k.build()
    }
}

/// The fold of the first `valid` positions of a blocked tile, in position order, at rank 0:
/// each thread folds its own valid items, then the threads holding any fold theirs.
pub(super) fn fold<T: Element>(
    k: &mut KernelBuilder,
    b: Group,
    op: &Op<T>,
    t: &ThreadData<T>,
    valid: Expr<u32>,
) -> ThreadData<T> {
    let items = t.items();
    let before = index::thread_rank() * items;
    let mine = (valid.clone() - valid.clone().min(before)).min(items);
    let acc = k.var(t.item(0));
    for j in 1..items {
        let joined = op.apply(acc.get(), t.item(j));
        k.set(
            &acc,
            Expr::lit(j).lt(mine.clone()).select(joined, acc.get()),
        );
    }
    let part = k.thread_data_n::<T>(1);
    k.set_item(&part, 0, acc.get());
    let holders = (valid + (items - 1)) / items;
    k.reduce(b, &part, op.reduce().valid_items(holders))
}

/// A reduction loaded on a device, ready to run on any buffer there (see
/// [`PreparedReduce::run`]).
///
/// ```
/// use coopgraph::algorithms::{DeviceReduce, Op};
/// use coopgraph::runtime::Device;
///
/// let r = DeviceReduce::new(Op::<u64>::max());
/// assert_eq!(r.kernels()?.len(), 1);
/// assert_eq!(r.prepare(&Device::sim())?.tile_items(), 4096);
/// # Ok::<(), coopgraph::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct PreparedReduce<T: ScanElement> {
    tiles: Function,
    tuning: Tuning,
    _t: std::marker::PhantomData<fn() -> T>,
}

impl<T: ScanElement> PreparedReduce<T> {
    /// Elements per tile of the kernel that reads the input.
    pub fn tile_items(&self) -> u32 {
        self.tuning.tile_items()
    }

    /// The grid of the first launch and the tiles each of its blocks folds, for `n` elements.
    fn grid(&self, n: usize) -> (usize, usize) {
        let tiles = n.div_ceil(self.tile_items() as usize);
        let sms = self.tiles.device().sm_count().max(1) as usize;
        let per = tiles.div_ceil(tiles.min(sms * BLOCKS_PER_SM));
        (tiles.div_ceil(per), per)
    }

    /// The reduction of all of `x` (`None` when it is empty), working in `ws`: one launch
    /// and a read of the result ([`run_into`](Self::run_into) leaves it on the device).
    ///
    /// ```
    /// use coopgraph::algorithms::{DeviceReduce, Op, Workspace};
    /// use coopgraph::runtime::Device;
    ///
    /// let device = Device::sim();
    /// let r = DeviceReduce::new(Op::<f32>::min()).prepare(&device)?;
    /// let mut ws = Workspace::new(&device)?;
    /// let x = device.upload(&[3.5f32, -1.25, 8.0])?;
    /// assert_eq!(r.run(&x, &mut ws)?, Some(-1.25));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn run(&self, x: &Buffer<T>, ws: &mut Workspace) -> Result<Option<T>, Error> {
        let mut out = self.tiles.device().alloc_zeroed::<T>(1)?;
        if !self.run_into(x, &mut out, ws)? {
            return Ok(None);
        }
        Ok(out.to_vec()?.first().copied())
    }

    /// Writes the reduction of all of `x` to `out[0]`, on the device: nothing waits for it
    /// (read `out` when it is needed, or hand it to the next kernel). Returns whether `x` had
    /// elements: an empty `x` leaves `out` as it is.
    ///
    /// ```
    /// use coopgraph::algorithms::{DeviceReduce, Op, Workspace};
    /// use coopgraph::runtime::Device;
    ///
    /// let device = Device::sim();
    /// let r = DeviceReduce::new(Op::<u32>::sum()).prepare(&device)?;
    /// let x = device.upload(&(1..=1000).collect::<Vec<u32>>())?;
    /// let mut total = device.alloc_zeroed::<u32>(1)?;
    /// assert!(r.run_into(&x, &mut total, &mut Workspace::new(&device)?)?);
    /// assert_eq!(total.to_vec()?, [500_500]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn run_into(
        &self,
        x: &Buffer<T>,
        out: &mut Buffer<T>,
        ws: &mut Workspace,
    ) -> Result<bool, Error> {
        let device = self.tiles.device();
        let n = x.len();
        check_lengths(n, n, self.tile_items() as usize)?;
        if out.is_empty() {
            return Err(AlgorithmError::OutputTooShort {
                input: 1,
                output: 0,
            }
            .into());
        }
        if !x.is_on(device) || !out.is_on(device) {
            return Err(AlgorithmError::WrongDevice { what: "buffer" }.into());
        }
        ws.check_device(device)?;
        if n == 0 {
            return Ok(false);
        }
        let (grid, per) = self.grid(n);
        let (ticket, status, words) = ws.begin(0, grid)?;
        let args = (x, words, n as u32, per as u32, status, ticket.base, out);
        let result = self
            .tiles
            .launch_grid(grid as u32, args)
            .map_err(Error::from);
        // The grid took `grid` tickets from the counter.
        ws.finish(grid, result).map(|()| true)
    }
}

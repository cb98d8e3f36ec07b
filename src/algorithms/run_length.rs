//! Device-wide run-length encoding, single pass with decoupled look-back.
//!
//! A run is a maximal stretch of equal consecutive elements (`==`: a NaN is a run of its
//! own). One block per tile, from the workspace's counter. The block loads its tile and
//! flags in registers each run's head (compared with the element before, the one before the
//! tile read from global memory) and tail (compared with the element after). Two block scans
//! with their aggregates give each head its rank among the tile's heads, and each position
//! the start of its run in the tile (an inclusive maximum of the heads' positions, plus one,
//! 0 before the tile's first head).
//!
//! What crosses tiles is the pair (heads before the tile, the start of the last run before
//! it, plus one), packed in 64 bits (heads above): sums of the one, maxima of the other. The
//! look-back of `lookback.rs` finds the tile's exclusive pair. Then each head's value goes
//! to `unique[heads before + rank]` and each tail's run length (its position + 1 less the
//! start of its run, in this tile or before it) to `counts[run]`, both scattered to their
//! ranks in shared memory and written striped (coalesced). The last tile writes the number
//! of runs.

use super::lookback::{LookBack, take_tile};
use super::scan::check_tuning;
use super::select::{CountTo, counted_launch, from_thread0};
use super::{Op, Tuning, Workspace, chosen};
use crate::ir::{Expr, Flags, Reduce, Scan, Scatter, StorageSpec, index};
use crate::runtime::{ArgList, Buffer, Device, DeviceElement, Function};
use crate::{Error, Kernel, KernelBuilder, Load, Store};

/// A device-wide run-length encoding to prepare (`cub::DeviceRunLengthEncode::Encode`):
/// each run's value and length, runs in input order. Its tuning is
/// [`default_tuning`](super::default_tuning)'s unless set.
///
/// ```
/// use coopgraph::algorithms::{DeviceRunLengthEncode, Workspace};
/// use coopgraph::runtime::Device;
///
/// let device = Device::sim();
/// let rle = DeviceRunLengthEncode::<i32>::new().prepare(&device)?;
/// let x = device.upload(&[7i32, 7, 7, -1, 4, 4])?;
/// let (mut unique, mut counts) = (device.alloc_zeroed(6)?, device.alloc_zeroed(6)?);
/// let runs = rle.run(&x, &mut unique, &mut counts, &mut Workspace::new(&device)?)?;
/// assert_eq!(unique.to_vec()?[..runs], [7, -1, 4]);
/// assert_eq!(counts.to_vec()?[..runs], [3, 1, 2]);
/// # Ok::<(), coopgraph::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct DeviceRunLengthEncode<T: DeviceElement> {
    tuning: Option<Tuning>,
    _t: std::marker::PhantomData<fn() -> T>,
}

impl<T: DeviceElement> DeviceRunLengthEncode<T> {
    /// The encoding.
    pub fn new() -> Self {
        DeviceRunLengthEncode {
            tuning: None,
            _t: std::marker::PhantomData,
        }
    }

    /// Threads per block and items per thread of the kernel.
    pub fn tuning(mut self, tuning: Tuning) -> Self {
        self.tuning = Some(tuning);
        self
    }

    fn chosen(&self) -> Tuning {
        chosen::<T>(self.tuning)
    }

    /// The kernel, built (for inspection: its IR, PTX, resources).
    ///
    /// ```
    /// use coopgraph::algorithms::DeviceRunLengthEncode;
    /// use coopgraph::ptx::Arch;
    ///
    /// let k = DeviceRunLengthEncode::<u32>::new().kernel()?;
    /// assert!(k.ptx(Arch::Sm90)?.contains("nanosleep"));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn kernel(&self) -> Result<Kernel, Error> {
        let tuning = self.chosen();
        check_tuning(tuning)?;
        build::<T>(tuning)
    }

    /// Builds the kernel and loads it on `device` (from the device's cache when the same
    /// kernel was loaded before).
    pub fn prepare(&self, device: &Device) -> Result<PreparedRunLengthEncode<T>, Error> {
        let kernel = self.kernel()?;
        Ok(PreparedRunLengthEncode {
            function: device.compile(&kernel)?,
            tuning: self.chosen(),
            _t: std::marker::PhantomData,
        })
    }
}

/// A run-length encoding loaded on a device, ready to run on any buffers there.
///
/// ```
/// use coopgraph::algorithms::{DeviceRunLengthEncode, Tuning};
/// use coopgraph::runtime::Device;
///
/// let t = Tuning { threads: 64, items: 4 };
/// let rle = DeviceRunLengthEncode::<u8>::new().tuning(t).prepare(&Device::sim())?;
/// assert_eq!(rle.tile_items(), 256);
/// assert!(rle.function().name().starts_with("device_run_length_encode_u8"));
/// # Ok::<(), coopgraph::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct PreparedRunLengthEncode<T: DeviceElement> {
    function: Function,
    tuning: Tuning,
    _t: std::marker::PhantomData<fn() -> T>,
}

impl<T: DeviceElement> PreparedRunLengthEncode<T> {
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

    /// Encodes all of `x` in one launch, working in `ws`: run `r`'s value to `unique[r]`, its
    /// length to `counts[r]`; returns the number of runs (read back from the device). Both
    /// outputs must hold `x.len()` elements (the most runs there can be).
    pub fn run(
        &self,
        x: &Buffer<T>,
        unique: &mut Buffer<T>,
        counts: &mut Buffer<u32>,
        ws: &mut Workspace,
    ) -> Result<usize, Error> {
        self.launch(x, unique, counts, CountTo::Host, ws)
    }

    /// As [`run`](Self::run), leaving the number of runs in `runs[0]` on the device.
    ///
    /// ```
    /// use coopgraph::algorithms::{DeviceRunLengthEncode, Workspace};
    /// use coopgraph::runtime::Device;
    ///
    /// let device = Device::sim();
    /// let rle = DeviceRunLengthEncode::<f64>::new().prepare(&device)?;
    /// let x = device.upload(&[0.5f64, 0.5, 2.0])?;
    /// let (mut unique, mut counts) = (device.alloc_zeroed(3)?, device.alloc_zeroed(3)?);
    /// let mut runs = device.alloc_zeroed::<u32>(1)?;
    /// rle.run_to_device(&x, &mut unique, &mut counts, &mut runs, &mut Workspace::new(&device)?)?;
    /// assert_eq!(runs.to_vec()?, [2]);
    /// assert_eq!(counts.to_vec()?[..2], [2, 1]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn run_to_device(
        &self,
        x: &Buffer<T>,
        unique: &mut Buffer<T>,
        counts: &mut Buffer<u32>,
        runs: &mut Buffer<u32>,
        ws: &mut Workspace,
    ) -> Result<(), Error> {
        self.launch(x, unique, counts, CountTo::Device(runs), ws)
            .map(drop)
    }

    fn launch(
        &self,
        x: &Buffer<T>,
        unique: &mut Buffer<T>,
        counts: &mut Buffer<u32>,
        to: CountTo<'_>,
        ws: &mut Workspace,
    ) -> Result<usize, Error> {
        let device = self.function.device();
        let n = x.len();
        let lens = [unique.len(), counts.len()];
        let on = x.is_on(device) && unique.is_on(device) && counts.is_on(device);
        let tile = self.tile_items();
        counted_launch(
            &self.function,
            tile,
            n,
            &lens,
            on,
            to,
            ws,
            |ws, runs, tiles| {
                let (ticket, status, values) = ws.begin(tiles, 2 * tiles)?;
                let mut args = ArgList::new();
                args.push(x)
                    .push(&mut *unique)
                    .push(&mut *counts)
                    .push(n as u32)
                    .push(&mut *status)
                    .push(&mut *values)
                    .push(ticket.epoch)
                    .push(ticket.base)
                    .push(&mut *runs);
                let result = (self.function)
                    .launch_grid(tiles as u32, args)
                    .map_err(Error::from);
                ws.finish(tiles, result)
            },
        )
    }
}

/// The pair carried from tile to tile: heads (high half) add, run starts (low half) take
/// the maximum.
fn join(a: Expr<u64>, b: Expr<u64>) -> Expr<u64> {
    let heads = (a.clone() >> 32u32) + (b.clone() >> 32u32);
    let start = a.cast::<u32>().max(b.cast::<u32>());
    (heads << 32u32) | start.cast::<u64>()
}

/// The encoding's kernel.
fn build<T: DeviceElement>(tuning: Tuning) -> Result<Kernel, Error> {
    let Tuning { threads, items } = tuning;
    let tile_items = tuning.tile_items();
    let name = format!("device_run_length_encode_{}_{threads}x{items}", T::DTYPE);
    let mut k = KernelBuilder::new(name)
        .block(threads)
        .items_per_thread(items);
    let x = k.input::<T>("x");
    let (unique, counts) = (k.output::<T>("unique"), k.output::<u32>("counts"));
    let n = k.scalar::<u32>("n");
    let (status, values) = (k.buffer::<u64>("status"), k.buffer::<u64>("values"));
    let (epoch, base) = (k.scalar::<u32>("epoch"), k.scalar::<u64>("base"));
    let runs = k.output::<u32>("runs");
    let b = k.this_block();
    let first = index::thread_rank().eq(0u32);
    let tile = take_tile(&mut k, &status, &base);
    let tiles = (n.expr() + (tile_items - 1)) / tile_items;
    let empty = n.expr().eq(0u32).and(&first);
    k.if_(empty, |k| k.write(&runs, 0u32, 0u32));
    let op = Op::custom(join);
    let look = LookBack {
        op: &op,
        status: &status,
        values: Some(&values),
        epoch: &epoch,
        tile: tile.clone(),
    };
    k.if_(tile.lt(tiles.clone()), |k| {
        let start = tile.clone() * tile_items;
        let valid = (n.expr() - start.clone()).min(tile_items);
        let end = start.clone() + valid.clone();
        let staging = k.temp_storage(StorageSpec::default());
        let load = Load::warp_transpose()
            .offset(start.clone())
            .valid_items(valid.clone())
            .oob_default(T::default())
            .temp_storage(&staging);
        let loaded = k.load_from(b, &x, load);
        // The elements beside the tile, from global memory: the one before (a tile's first
        // position starts a run where it differs), the one after a full tile, and whether
        // the tile's first position starts a run and its last valid one ends one.
        let not_first = tile.ne(0u32);
        let before = k.var(Expr::lit(T::default()));
        let head0 = k.var(1u32);
        k.if_(not_first.clone(), |k| {
            k.set(&before, x.at(start.clone() - 1u32));
            k.set(
                &head0,
                x.at(start.clone()).ne(before.get()).select(1u32, 0u32),
            );
        });
        let after = k.var(Expr::lit(T::default()));
        let tail_last = k.var(1u32);
        k.if_(end.lt(n.expr()), |k| {
            k.set(&after, x.at(end.clone()));
            let last = x.at(end.clone() - 1u32);
            k.set(&tail_last, last.ne(after.get()).select(1u32, 0u32));
        });
        let pos = index::thread_rank() * items + index::item();
        let heads = k.flag_heads(b, &loaded, Flags::inequality().edge(before.get()));
        let heads = k.map(&heads, |h| {
            let first_head = pos.eq(0u32).select(head0.get(), h);
            pos.lt(valid.clone()).select(first_head, 0u32)
        });
        let tails = k.flag_tails(b, &loaded, Flags::inequality().edge(after.get()));
        let tails = k.map(&tails, |t| {
            let last = valid.clone() - 1u32;
            let at_last = pos.eq(last.clone()).select(tail_last.get(), 0u32);
            pos.lt(last).select(t, at_last)
        });
        // Each head's rank and the tile's heads; each position's run start (plus one) in
        // the tile, 0 before its first head.
        let (rank, heads_total) = k.scan_with_aggregate(b, &heads, Scan::exclusive_sum());
        let starts = k.map(&heads, |h| {
            h.eq(1u32).select(start.clone() + pos.clone() + 1u32, 0u32)
        });
        let max = Scan::inclusive(Reduce::max());
        let (run_start, last_start) = k.scan_with_aggregate(b, &starts, max);
        let heads_total = heads_total.item(0);
        let total = (heads_total.clone().cast::<u64>() << 32u32) | last_start.item(0).cast::<u64>();
        let slot = k.shared_array::<u64>(1);
        look.prefix(k, total, Some(Expr::lit(0u64)), &slot);
        // Thread 0 (which wrote the slot) hands the heads before the tile and the tile's
        // own to the block (uniform, as the stores' offsets and counts must be).
        let pair = ((slot.read(0u32) >> 32u32) << 32u32) | heads_total.clone().cast::<u64>();
        let both = from_thread0(k, b, pair);
        let heads_before = (both.clone() >> 32u32).cast::<u32>();
        let heads_total = both.cast::<u32>();
        // Read by every thread after the hand-off's barrier. A block of one warp hands off
        // by shuffles alone, which order no memory: a barrier orders thread 0's write first.
        if threads <= 32 {
            k.sync_block();
        }
        let start_before = k.var(slot.read(0u32).cast::<u32>()).get();
        let last = tile.eq(tiles - 1u32).and(&first);
        k.if_(last, |k| {
            k.write(&runs, 0u32, heads_before.clone() + heads_total.clone())
        });
        let u = k.scatter(b, &loaded, &rank, Scatter::striped(threads).flags(&heads));
        let store = Store::striped()
            .offset(heads_before.clone())
            .valid_items(heads_total.clone());
        k.store_to(b, &unique, &u, store);
        // A tail's run: the heads up to it, less one; its rank among the tile's tails: the
        // same less the run continued from before the tile.
        let tail_rank = k.map2(&rank, &heads, |r, h| r + h - head0.get());
        let lengths = k.map(&run_start, |s| {
            start.clone() + pos.clone() + 2u32 - s.max(start_before.clone())
        });
        let c = k.scatter(
            b,
            &lengths,
            &tail_rank,
            Scatter::striped(threads).flags(&tails),
        );
        let tails_total = heads_total.clone() - head0.get() + tail_last.get();
        let store = Store::striped()
            .offset(heads_before + head0.get() - 1u32)
            .valid_items(tails_total);
        k.store_to(b, &counts, &c, store);
    });
    k.build()
}

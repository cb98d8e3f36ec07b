//! Device-wide run-length encoding, single pass with decoupled look-back.
//!
//! A run is a maximal stretch of equal consecutive elements (`==`: a NaN is a run of its
//! own). One block per tile, from the workspace's counter. The block loads its tile, shifts
//! it up by one position (the tile's first position gets the element before the tile, read
//! from global memory) and flags in registers each run's head: a position whose element
//! differs from the one before it. One block sum scan ranks the heads, and each head writes
//! its position to its rank in shared memory.
//!
//! What crosses tiles is the pair (heads, start of the last run plus one), the tile's own
//! read from the positions: 64 bits, heads above, sums of the one and maxima of the other.
//! The look-back of `lookback.rs` finds the tile's exclusive pair. The threads then take the
//! tile's heads in turn, and each head closes the run before it, as
//! `cub::DeviceRunLengthEncode::Encode`'s reduce-by-key does: that run's value is the element
//! before the head (read back from the input) and its length the head's position less the
//! position before it (or the last run start before the tile). Only the tile's runs are
//! touched after the scan, not every slot of it. The last tile closes the last run and
//! writes the number of runs.

use super::lookback::{LookBack, status_words, take_tile};
use super::scan::check_tuning;
use super::select::{CountTo, counted_launch};
use super::{Op, Tuning, Workspace};
use crate::ir::{DType, Expr, Scan, Shuffle, StorageSpec, index};
use crate::runtime::{ArgList, Buffer, Device, DeviceElement, Function};
use crate::{Error, Kernel, KernelBuilder, Load};

/// The default tuning of a run-length encoding of `dtype`: 512 threads × 16 items for
/// elements of up to 4 bytes (on the H200 at 2^28 `u32` in runs of 1 to 16, 1819 GB/s,
/// the fastest of eight tunings: 256 × 24 1779, 256 × 32 1718, 256 × 16 1655, 128 × 16 1519),
/// [`default_tuning`](super::default_tuning)'s for 8-byte ones.
///
/// ```
/// use coopgraph::algorithms::{Tuning, default_run_length_tuning};
/// use coopgraph::ir::DType;
///
/// assert_eq!(default_run_length_tuning(DType::U32), Tuning { threads: 512, items: 16 });
/// assert_eq!(default_run_length_tuning(DType::F64).tile_items(), 4096);
/// ```
pub fn default_run_length_tuning(dtype: DType) -> Tuning {
    match dtype.bytes() {
        8 => super::default_tuning(dtype),
        _ => Tuning {
            threads: 512,
            items: 16,
        },
    }
}

/// A device-wide run-length encoding to prepare (`cub::DeviceRunLengthEncode::Encode`):
/// each run's value and length, runs in input order. Its tuning is
/// [`default_run_length_tuning`]'s unless set.
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
        self.tuning
            .unwrap_or_else(|| default_run_length_tuning(T::DTYPE))
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
                let (ticket, status, _) = ws.begin(status_words::<u64>(tiles), 1)?;
                let mut args = ArgList::new();
                args.push(x)
                    .push(&mut *unique)
                    .push(&mut *counts)
                    .push(n as u32)
                    .push(&mut *status)
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

/// The pair carried from tile to tile: heads (high half) add, run starts plus one (low half)
/// take the maximum. 0 is its identity.
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
    let status = k.buffer::<u64>("status");
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
        epoch: &epoch,
        tile: tile.clone(),
    };
    k.if_(tile.lt(tiles.clone()), |k| {
        let start = tile.clone() * tile_items;
        let valid = (n.expr() - start.clone()).min(tile_items);
        let tile0 = tile.eq(0u32);
        let staging = k.temp_storage(StorageSpec::default());
        let load = Load::warp_transpose()
            .offset(start.clone())
            .valid_items(valid.clone())
            .oob_default(T::default())
            .temp_storage(&staging);
        let loaded = k.load_from(b, &x, load);
        // Each position's element before it: the tile's first gets the last element of the
        // tile before (tile 0's first position starts a run whatever it gets).
        let before = k.var(Expr::lit(T::default()));
        k.if_(!tile0.clone(), |k| {
            k.set(&before, x.at(start.clone() - 1u32))
        });
        let prev = k.shuffle_up(b, &loaded, Shuffle::new().edge(before.get()));
        let pos = index::thread_rank() * items + index::item();
        let heads = k.map2(&loaded, &prev, |v, p| {
            let head = v.ne(p).or(&pos.eq(0u32).and(&tile0));
            pos.lt(valid.clone()).and(&head).select(1u32, 0u32)
        });
        // Each head's rank among the tile's, and the heads' positions in the tile, in order.
        let (rank, total) = k.scan_with_aggregate(b, &heads, Scan::exclusive_sum());
        let at = k.shared_array::<u32>(tile_items);
        for j in 0..items {
            let p = index::thread_rank() * items + j;
            k.if_(heads.item(j).ne(0u32), |k| {
                k.shared_write(&at, rank.item(j), p);
            });
        }
        k.sync_block();
        // The tile's pair: its heads, and the start of its last run plus one (0 if none).
        let heads_total = total.item(0);
        let last = heads_total.eq(0u32).select(
            0u32,
            start.clone() + at.read(heads_total.clone() - 1u32) + 1u32,
        );
        let pair = (heads_total.clone().cast::<u64>() << 32u32) | last.cast::<u64>();
        let slot = k.shared_array::<u64>(1);
        look.prefix(k, pair.clone(), Some(Expr::lit(0u64)), &slot);
        k.sync_block();
        let prefix = k.var(slot.read(0u32)).get();
        let heads_before = (prefix.clone() >> 32u32).cast::<u32>();
        // Head `i` of the tile closes the run before it (tile 0's first head, the first of
        // all, closes none): run `heads_before + i - 1`, whose value is the element before
        // the head and whose length is the head's position less the run's start (the head
        // before it, or the last start before the tile).
        let skip = tile0.select(1u32, 0u32);
        let first_i = index::thread_rank() + skip;
        k.for_range_step(first_i, heads_total.clone(), threads, |k, i| {
            let head = start.clone() + at.read(i.clone());
            let run_start = i.eq(0u32).select(
                prefix.clone().cast::<u32>() - 1u32,
                start.clone() + at.read(i.clone() - 1u32),
            );
            let run = heads_before.clone() + i - 1u32;
            k.write(&unique, run.clone(), x.at(head.clone() - 1u32));
            k.write(&counts, run, head - run_start);
        });
        // The last tile closes the last run and writes the number of runs.
        let closing = tile.eq(tiles - 1u32).and(&first);
        k.if_(closing, |k| {
            let all = join(prefix.clone(), pair);
            let runs_total = (all.clone() >> 32u32).cast::<u32>();
            k.write(&runs, 0u32, runs_total.clone());
            let at = runs_total - 1u32;
            k.write(&unique, at.clone(), x.at(n.expr() - 1u32));
            k.write(&counts, at, n.expr() + 1u32 - all.cast::<u32>());
        });
    });
    k.build()
}

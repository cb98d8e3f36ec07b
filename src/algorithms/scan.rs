//! The single-pass scan with decoupled look-back.
//!
//! One block per tile. Thread 0 takes the tile's index from the counter in workspace word 0
//! (so tile `t`'s predecessors were taken by blocks already running: progress never depends
//! on the order blocks are scheduled in); a broadcast hands it to the block. The block
//! loads its tile (warp-transposed: coalesced, staged per warp), scans it on its own (with its
//! aggregate), and while the other warps wait at one barrier, warp 0 finds the tile's prefix:
//! 1. lane 0 publishes the tile's aggregate (status `AGGREGATE`);
//! 2. lane `i` reads the status of tile `end - 1 - i` (`end` starts at the tile), the warp
//!    backing off with `nanosleep` while one of them has not published in this call's epoch;
//! 3. a ballot finds the nearest `INCLUSIVE` predecessor; lanes up to it fold their values,
//!    earlier tiles first, by shuffles; the window's fold joins the prefix so far;
//! 4. without an inclusive one the window slides 32 tiles back; with one, lane 0 publishes the
//!    tile's inclusive prefix (status `INCLUSIVE`) and hands the prefix to the block through
//!    shared memory.
//!
//! Every thread then joins the prefix to its items (the exclusive form to the item before's,
//! shifted by a block shuffle) and the block stores the tile.
//!
//! Tile 0 publishes its inclusive value at once: the inclusive form scans it without a prefix
//! (a custom operator has no identity to start from), the exclusive form starts it from the
//! initial value (and every published prefix includes the initial value).
//!
//! The tile ticket, the status words and the look-back itself are in `lookback.rs`.

use super::lookback::{LookBack, status_words, take_tile};
use super::{AlgorithmError, MapFn, Op, ScanElement, Tuning, Workspace, chosen};
use crate::ir::{Expr, Scalar, Scan, Shuffle, StorageSpec, index};
use crate::runtime::{ArgList, Buffer, Device, Function};
use crate::{Error, Kernel, KernelBuilder, Load, Store};
use std::fmt;
use std::sync::Arc;

/// Which scan: inclusive, or exclusive from an initial value.
///
/// ```
/// use coopgraph::algorithms::{DeviceScan, Op, ScanForm};
///
/// let scan = DeviceScan::exclusive(Op::sum(), 3u32);
/// assert_eq!(scan.form(), ScanForm::Exclusive { initial: 3 });
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ScanForm<T> {
    /// `y[i] = x[0] op ... op x[i]`.
    Inclusive,
    /// `y[0] = initial`, `y[i] = initial op x[0] op ... op x[i - 1]`.
    Exclusive {
        /// The value the scan starts from (a launch argument: changing it rebuilds nothing).
        initial: T,
    },
}

/// A device-wide scan to prepare: its operator and form, optional element-wise maps fused on
/// the way in (`op` scans `map_in(x)`) and out (`y` gets `map_out` of the scan), and its
/// tuning ([`default_tuning`](super::default_tuning) unless set).
///
/// ```
/// use coopgraph::algorithms::{DeviceScan, Op, Workspace};
/// use coopgraph::runtime::Device;
///
/// // y = 10 * (exclusive sum of x^2, from 1).
/// let device = Device::sim();
/// let scan = DeviceScan::exclusive(Op::sum(), 1.0f64)
///     .map_input(|v| v.clone() * v)
///     .map_output(|v| v * 10.0)
///     .prepare(&device)?;
/// let x = device.upload(&[1.0f64, 2.0, 3.0, 4.0])?;
/// let mut y = device.alloc_zeroed::<f64>(4)?;
/// scan.run(&x, &mut y, &mut Workspace::new(&device)?)?;
/// assert_eq!(y.to_vec()?, [10.0, 20.0, 60.0, 150.0]);
/// # Ok::<(), coopgraph::Error>(())
/// ```
#[derive(Clone)]
pub struct DeviceScan<T: ScanElement> {
    op: Op<T>,
    form: ScanForm<T>,
    map_in: Option<MapFn<T>>,
    map_out: Option<MapFn<T>>,
    tuning: Option<Tuning>,
}

impl<T: ScanElement> fmt::Debug for DeviceScan<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceScan")
            .field("op", &self.op)
            .field("form", &self.form)
            .field("map_in", &self.map_in.is_some())
            .field("map_out", &self.map_out.is_some())
            .field("tuning", &self.chosen())
            .finish()
    }
}

impl<T: ScanElement> DeviceScan<T> {
    /// The inclusive scan with `op`.
    pub fn inclusive(op: Op<T>) -> Self {
        DeviceScan {
            op,
            form: ScanForm::Inclusive,
            map_in: None,
            map_out: None,
            tuning: None,
        }
    }

    /// The exclusive scan with `op`, starting from `initial`.
    pub fn exclusive(op: Op<T>, initial: T) -> Self {
        DeviceScan {
            form: ScanForm::Exclusive { initial },
            ..DeviceScan::inclusive(op)
        }
    }

    /// Scans `f(x[i])` instead of `x[i]` (fused: read once, in the scan's kernel).
    pub fn map_input(mut self, f: impl Fn(Expr<T>) -> Expr<T> + Send + Sync + 'static) -> Self {
        self.map_in = Some(Arc::new(f));
        self
    }

    /// Writes `f(s)` for each scanned value `s` (fused, in the scan's kernel).
    pub fn map_output(mut self, f: impl Fn(Expr<T>) -> Expr<T> + Send + Sync + 'static) -> Self {
        self.map_out = Some(Arc::new(f));
        self
    }

    /// Threads per block and items per thread of the kernel.
    pub fn tuning(mut self, tuning: Tuning) -> Self {
        self.tuning = Some(tuning);
        self
    }

    fn chosen(&self) -> Tuning {
        chosen::<T>(self.tuning)
    }

    /// Its form (see [`ScanForm`] for an example).
    pub fn form(&self) -> ScanForm<T> {
        self.form
    }

    /// The scan's kernel, built (for inspection: its IR, PTX, resources).
    ///
    /// ```
    /// use coopgraph::algorithms::{DeviceScan, Op};
    /// use coopgraph::ptx::Arch;
    ///
    /// let k = DeviceScan::inclusive(Op::<u32>::sum()).kernel()?;
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
    pub fn prepare(&self, device: &Device) -> Result<PreparedScan<T>, Error> {
        let kernel = self.kernel()?;
        let function = device.compile(&kernel)?;
        Ok(self.prepared_with(function, self.chosen()))
    }

    /// The scan prepared from `function`, this scan's kernel built with `tuning`.
    pub(super) fn prepared_with(&self, function: Function, tuning: Tuning) -> PreparedScan<T> {
        let initial = match self.form {
            ScanForm::Inclusive => None,
            ScanForm::Exclusive { initial } => Some(initial),
        };
        PreparedScan {
            function,
            tuning,
            initial,
        }
    }
}

/// A scan loaded on a device, ready to run on any buffers there (see [`PreparedScan::run`]).
///
/// ```
/// use coopgraph::algorithms::{DeviceScan, Op, Tuning};
/// use coopgraph::runtime::Device;
///
/// let t = Tuning { threads: 128, items: 4 };
/// let scan = DeviceScan::inclusive(Op::<f32>::sum()).tuning(t).prepare(&Device::sim())?;
/// assert_eq!((scan.tuning(), scan.tile_items()), (t, 512));
/// assert!(scan.function().name().starts_with("device_scan_inclusive_f32"));
/// # Ok::<(), coopgraph::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct PreparedScan<T: ScanElement> {
    function: Function,
    tuning: Tuning,
    initial: Option<T>,
}

impl<T: ScanElement> PreparedScan<T> {
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

    /// Scans all of `x` into the first `x.len()` elements of `y`, in one launch of one block
    /// per tile, working in `ws`.
    ///
    /// ```
    /// use coopgraph::algorithms::{DeviceScan, Op, Workspace};
    /// use coopgraph::runtime::Device;
    ///
    /// let device = Device::sim();
    /// let scan = DeviceScan::inclusive(Op::<i32>::min()).prepare(&device)?;
    /// let x = device.upload(&[4i32, 7, -2, 9, -5])?;
    /// let mut y = device.alloc_zeroed::<i32>(6)?;
    /// scan.run(&x, &mut y, &mut Workspace::new(&device)?)?;
    /// assert_eq!(y.to_vec()?, [4, 4, -2, -2, -5, 0]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn run(&self, x: &Buffer<T>, y: &mut Buffer<T>, ws: &mut Workspace) -> Result<(), Error> {
        let device = self.function.device();
        let n = x.len();
        let tile = self.tile_items() as usize;
        check_lengths(n, y.len(), tile)?;
        if !x.is_on(device) || !y.is_on(device) {
            return Err(AlgorithmError::WrongDevice { what: "buffer" }.into());
        }
        ws.check_device(device)?;
        if n == 0 {
            return Ok(());
        }
        let tiles = n.div_ceil(tile);
        let (ticket, status, _) = ws.begin(status_words::<T>(tiles), 1)?;
        let mut args = ArgList::new();
        args.push(x).push(&mut *y).push(n as u32).push(&mut *status);
        args.push(ticket.epoch).push(ticket.base);
        if let Some(initial) = self.initial {
            args.push(initial);
        }
        let result = (self.function)
            .launch_grid(tiles as u32, args)
            .map_err(Error::from);
        ws.finish(tiles, result)
    }
}

/// Refuses a tuning the kernels cannot take.
pub(crate) fn check_tuning(t: Tuning) -> Result<(), Error> {
    let threads_ok = (32..=1024).contains(&t.threads) && t.threads.is_multiple_of(32);
    if threads_ok && (1..=64).contains(&t.items) {
        Ok(())
    } else {
        Err(AlgorithmError::Tuning {
            threads: t.threads,
            items: t.items,
        }
        .into())
    }
}

/// Refuses an output shorter than the input, or an input whose indices pass 32 bits.
pub(crate) fn check_lengths(input: usize, output: usize, tile: usize) -> Result<(), Error> {
    if output < input {
        return Err(AlgorithmError::OutputTooShort { input, output }.into());
    }
    let max = u32::MAX as usize - tile;
    if input > max {
        return Err(AlgorithmError::TooLong { len: input, max }.into());
    }
    Ok(())
}

/// The scan's kernel.
fn build<T: ScanElement>(scan: &DeviceScan<T>, tuning: Tuning) -> Result<Kernel, Error> {
    let Tuning { threads, items } = tuning;
    let tile_items = tuning.tile_items();
    let form = match scan.form {
        ScanForm::Inclusive => "inclusive",
        ScanForm::Exclusive { .. } => "exclusive",
    };
    // Fused maps show in the name, so a profiler tells the kernel from the plain scan's.
    let maps = match (scan.map_in.is_some(), scan.map_out.is_some()) {
        (false, false) => "",
        (true, false) => "_map_in",
        (false, true) => "_map_out",
        (true, true) => "_map_in_out",
    };
    let name = format!("device_scan_{form}{maps}_{}_{threads}x{items}", T::DTYPE);
    let mut k = KernelBuilder::new(name)
        .block(threads)
        .items_per_thread(items);
    let (x, y, n) = (k.input::<T>("x"), k.output::<T>("y"), k.scalar::<u32>("n"));
    let status = k.buffer::<u64>("status");
    let (epoch, base) = (k.scalar::<u32>("epoch"), k.scalar::<u64>("base"));
    let initial = match scan.form {
        ScanForm::Inclusive => None,
        ScanForm::Exclusive { .. } => Some(k.scalar::<T>("initial")),
    };
    let b = k.this_block();
    let first = index::thread_rank().eq(0u32);
    let tile = take_tile(&mut k, &status, &base);
    let tiles = (n.expr() + (tile_items - 1)) / tile_items;
    let look = LookBack {
        op: &scan.op,
        status: &status,
        epoch: &epoch,
        tile: tile.clone(),
    };
    k.if_(tile.lt(tiles), |k| {
        let start = tile.clone() * tile_items;
        let valid = (n.expr() - start.clone()).min(tile_items);
        // The warp-transposing load and store stage through one storage of their own: each
        // warp uses its own part, so no block barrier orders them against the collectives.
        let staging = k.temp_storage(StorageSpec::default());
        let load = Load::warp_transpose()
            .offset(start.clone())
            .valid_items(valid.clone())
            .oob_default(T::default())
            .temp_storage(&staging);
        let loaded = k.load_from(b, &x, load);
        let input = match &scan.map_in {
            Some(f) => k.map(&loaded, |v| f(v)),
            None => loaded,
        };
        // The tile's own inclusive scan; warp 0 finds the prefix from the tiles before while
        // the other warps wait at the barrier; then every thread joins it to its items.
        let ops = Scan::inclusive(scan.op.reduce());
        let (local, total) = k.scan_with_aggregate(b, &input, ops);
        let slot = k.shared_array::<T>(1);
        let init = initial.as_ref().map(Scalar::expr);
        look.prefix(k, total.item(0), init, &slot);
        k.sync_block();
        let prefix = k.var(slot.read(0u32)).get();
        let op = &scan.op;
        let scanned = match initial {
            None => {
                let tile0 = tile.eq(0u32);
                k.map(&local, |v| {
                    tile0.select(v.clone(), op.apply(prefix.clone(), v))
                })
            }
            Some(_) => {
                // Each position gets the prefix joined to the position before's inclusive
                // scan; the first gets the prefix.
                let before = k.shuffle_up(b, &local, Shuffle::new());
                let out = k.map(&before, |v| op.apply(prefix.clone(), v));
                k.if_(first.clone(), |k| k.set_item(&out, 0, prefix.clone()));
                out
            }
        };
        let output = match &scan.map_out {
            Some(f) => k.map(&scanned, |v| f(v)),
            None => scanned,
        };
        let store = Store::warp_transpose()
            .offset(start)
            .valid_items(valid)
            .temp_storage(&staging);
        k.store_to(b, &y, &output, store);
    });
    k.build()
}

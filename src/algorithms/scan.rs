//! The single-pass scan with decoupled look-back.
//!
//! One block per tile. Thread 0 takes the tile's index from the counter in workspace word 0
//! (so tile `t`'s predecessors were taken by blocks already running: progress never depends
//! on the order blocks are scheduled in); a broadcast sum hands it to the block. The block
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
//! Status words: `(epoch << 2) | kind` in 32 bits. For 32-bit elements the status is the high
//! half of one 64-bit word whose low half is the value, written and read by single atomics
//! (relaxed: the value travels in the same word). For 64-bit elements the status is a word of
//! its own and the values sit in two slots per tile (aggregate, inclusive), each written
//! before its status is exchanged with release and read after the status is read with
//! acquire. Status words are read with atomics (an `add` of 0, relaxed or acquire): the
//! builder has no ordered plain load of a buffer element (`ld.relaxed` / `ld.acquire`), which
//! would spare the look-back's reads the trip through the L2's atomic units.

use super::{AlgorithmError, MapFn, Op, ScanElement, Tuning, Workspace, chosen};
use crate::ir::{
    Atomic, Buffer as IrBuffer, Expr, MemoryOrder, Reduce, Scalar, Scan, SharedArray, Shuffle,
    StorageSpec, Var, index,
};
use crate::runtime::{ArgList, Buffer, Device, Function};
use crate::{Error, Kernel, KernelBuilder, Load, Store};
use std::fmt;
use std::sync::Arc;

/// A tile that has published its aggregate only.
const AGGREGATE: u32 = 1;
/// A tile that has published its inclusive prefix.
const INCLUSIVE: u32 = 2;
/// The back-off of warp 0 while a predecessor in its window has not published, in ns.
const BACKOFF_NS: u32 = 100;

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
        let values = if T::WIDE { 2 * tiles } else { 1 };
        let (ticket, status, vals) = ws.begin(tiles, values)?;
        let mut args = ArgList::new();
        args.push(x).push(&mut *y).push(n as u32).push(&mut *status);
        if T::WIDE {
            args.push(&mut *vals);
        }
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

/// What the look-back needs: the operator, the status and value words, the call's epoch and
/// the tile.
struct Look<'a, T: ScanElement> {
    op: &'a Op<T>,
    status: &'a IrBuffer<u64>,
    values: Option<&'a IrBuffer<u64>>,
    epoch: &'a Scalar<u32>,
    tile: Expr<u32>,
}

impl<T: ScanElement> Look<'_, T> {
    /// Tile `tile` publishes `value` as `kind` (from one thread).
    fn publish(&self, k: &mut KernelBuilder, kind: u32, value: Expr<T>) {
        let flag = (self.epoch.expr() << 2u32) | kind;
        let at = self.tile.clone() + 1u32;
        match self.values {
            None => {
                let word = (flag.cast::<u64>() << 32u32) | T::pack(&value);
                k.atomic(self.status, at, Atomic::exch(word));
            }
            Some(values) => {
                let slot = self.tile.clone() * 2u32 + (kind - 1);
                k.write(values, slot, T::pack(&value));
                let release = Atomic::exch(flag.cast::<u64>()).order(MemoryOrder::Release);
                k.atomic(self.status, at, release);
            }
        }
    }

    /// The status half of a status word.
    fn status_of(&self, word: Expr<u64>) -> Expr<u32> {
        match self.values {
            None => (word >> 32u32).cast::<u32>(),
            Some(_) => word.cast::<u32>(),
        }
    }

    /// Warp 0's part, run in every thread of the block: lane 0 publishes the tile's
    /// aggregate `total`, the warp looks back, and lane 0 publishes the inclusive prefix and
    /// writes the tile's prefix to `slot` (the inclusive form's tile 0 publishes `total` at
    /// once and writes it, unused; the exclusive form's tile 0 starts from `initial`).
    fn prefix(
        &self,
        k: &mut KernelBuilder,
        total: Expr<T>,
        initial: Option<Expr<T>>,
        slot: &SharedArray<T>,
    ) {
        let lane0 = index::lane().eq(0u32);
        let tile0 = self.tile.eq(0u32);
        k.if_(index::warp_rank().eq(0u32), |k| {
            let prefix = k.var(total.clone());
            let search = |k: &mut KernelBuilder| {
                k.if_(lane0.clone(), |k| self.publish(k, AGGREGATE, total.clone()));
                self.look_back(k, &prefix);
            };
            let inclusive = match initial {
                Some(initial) => {
                    k.if_else(tile0.clone(), |k| k.set(&prefix, initial), search);
                    self.op.apply(prefix.get(), total.clone())
                }
                None => {
                    k.if_(!tile0.clone(), search);
                    let joined = self.op.apply(prefix.get(), total.clone());
                    tile0.select(total.clone(), joined)
                }
            };
            k.if_(lane0.clone(), |k| {
                self.publish(k, INCLUSIVE, inclusive);
                k.shared_write(slot, 0u32, prefix.get());
            });
        });
    }

    /// Warp 0's look-back over windows of 32 predecessors: `prefix` (in lane 0) ends as the
    /// fold of every tile before this one.
    fn look_back(&self, k: &mut KernelBuilder, prefix: &Var<T>) {
        let warp = k.this_warp();
        let lane = index::lane();
        let order = match self.values {
            None => MemoryOrder::Relaxed,
            Some(_) => MemoryOrder::Acquire,
        };
        // The window is the 32 tiles before `end`, lane i reading tile end - 1 - i.
        let end = k.var(self.tile.clone());
        let found = k.var(0u32);
        let have = k.var(0u32);
        k.while_(found.get().eq(0u32), |k| {
            let in_range = lane.lt(end.get());
            let pred = end.get() - 1u32 - lane.clone();
            let word = k.var(0u64);
            let pending = k.var(1u32);
            k.while_(pending.get().ne(0u32), |k| {
                k.if_(in_range.clone(), |k| {
                    let w = k.atomic(
                        self.status,
                        pred.clone() + 1u32,
                        Atomic::add(0u64).order(order),
                    );
                    k.set(&word, w);
                });
                let st = self.status_of(word.get());
                let published = (st.clone() >> 2u32)
                    .eq(self.epoch.expr())
                    .and(&(st & 3u32).ne(0u32));
                let waiting = k.any(warp, in_range.clone().and(&!published));
                k.set(&pending, waiting.select(1u32, 0u32));
                k.if_(waiting, |k| k.nanosleep(BACKOFF_NS));
            });
            let st = self.status_of(word.get());
            let inclusive = in_range.and(&(st.clone() & 3u32).eq(INCLUSIVE));
            let bits = k.ballot(warp, inclusive);
            let lowest = bits.clone() & (Expr::lit(0u32) - bits.clone());
            let last = bits.eq(0u32).select(31u32, Expr::lit(31u32) - lowest.clz());
            let v = k.var(Expr::lit(T::default()));
            k.if_(in_range.clone(), |k| {
                let value = match self.values {
                    None => T::unpack(&word.get()),
                    Some(values) => {
                        let slot = pred.clone() * 2u32 + ((st & 3u32) - 1u32);
                        T::unpack(&values.at(slot))
                    }
                };
                k.set(&v, value);
            });
            // Fold lanes 0..=last, higher lanes (earlier tiles) first.
            for off in [1u32, 2, 4, 8, 16] {
                let other = k.shfl_down(warp, v.get(), off);
                let joins = (lane.clone() + off).le(last.clone());
                k.if_(joins, |k| k.set(&v, self.op.apply(other, v.get())));
            }
            k.if_else(
                have.get().eq(0u32),
                |k| k.set(prefix, v.get()),
                |k| k.set(prefix, self.op.apply(v.get(), prefix.get())),
            );
            k.set(&have, 1u32);
            k.if_else(
                bits.ne(0u32),
                |k| k.set(&found, 1u32),
                |k| k.set(&end, end.get() - 32u32),
            );
        });
    }
}

/// The scan's kernel.
fn build<T: ScanElement>(scan: &DeviceScan<T>, tuning: Tuning) -> Result<Kernel, Error> {
    let Tuning { threads, items } = tuning;
    let tile_items = tuning.tile_items();
    let form = match scan.form {
        ScanForm::Inclusive => "inclusive",
        ScanForm::Exclusive { .. } => "exclusive",
    };
    let name = format!("device_scan_{form}_{}_{threads}x{items}", T::DTYPE);
    let mut k = KernelBuilder::new(name)
        .block(threads)
        .items_per_thread(items);
    let (x, y, n) = (k.input::<T>("x"), k.output::<T>("y"), k.scalar::<u32>("n"));
    let status = k.buffer::<u64>("status");
    let values = if T::WIDE {
        Some(k.buffer::<u64>("values"))
    } else {
        None
    };
    let (epoch, base) = (k.scalar::<u32>("epoch"), k.scalar::<u64>("base"));
    let initial = match scan.form {
        ScanForm::Inclusive => None,
        ScanForm::Exclusive { .. } => Some(k.scalar::<T>("initial")),
    };
    let b = k.this_block();
    let first = index::thread_rank().eq(0u32);
    // Thread 0 takes the tile from the counter; a broadcast sum hands it to every thread.
    let ticket = k.thread_data_n::<u32>(1);
    k.set_item(&ticket, 0, 0u32);
    k.if_(first.clone(), |k| {
        let taken = k.atomic(&status, 0u32, Atomic::add(1u64));
        k.set_item(&ticket, 0, (taken - base.expr()).cast::<u32>());
    });
    let tile = k.reduce(b, &ticket, Reduce::sum().broadcast()).item(0);
    let tiles = (n.expr() + (tile_items - 1)) / tile_items;
    let look = Look {
        op: &scan.op,
        status: &status,
        values: values.as_ref(),
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

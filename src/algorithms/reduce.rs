//! The device-wide reduction: each tile's partial in element order, then one block folds the
//! partials in tile order. Two small launches, deterministic for any operator: the same
//! length and tuning give the same tree of operations, so floats come out bit for bit the
//! same on every run.

use super::scan::{check_lengths, check_tuning};
use super::{AlgorithmError, MapFn, Op, ScanElement, Tuning, Workspace, chosen};
use crate::ir::{Element, Expr, Group, ThreadData, index};
use crate::runtime::{Buffer, Device, Function};
use crate::{Error, Kernel, KernelBuilder, Load};
use std::fmt;
use std::sync::Arc;

/// Threads and items per thread of the kernel that folds the partials.
const FOLD: Tuning = Tuning {
    threads: 256,
    items: 4,
};

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

    /// The two kernels, built: the tiles' partials, and the fold of the partials.
    pub fn kernels(&self) -> Result<[Kernel; 2], Error> {
        let tuning = self.chosen();
        check_tuning(tuning)?;
        Ok([self.tiles_kernel(tuning)?, self.fold_kernel()?])
    }

    /// Builds both kernels and loads them on `device` (from its cache when loaded before).
    pub fn prepare(&self, device: &Device) -> Result<PreparedReduce<T>, Error> {
        let [tiles, fold] = self.kernels()?;
        Ok(PreparedReduce {
            tiles: device.compile(&tiles)?,
            fold: device.compile(&fold)?,
            tuning: self.chosen(),
            _t: std::marker::PhantomData,
        })
    }

    /// `partials[t]` = the fold of tile `t` (packed in 64 bits), blocks striding over tiles.
    fn tiles_kernel(&self, tuning: Tuning) -> Result<Kernel, Error> {
        let Tuning { threads, items } = tuning;
        let name = format!("device_reduce_tiles_{}_{threads}x{items}", T::DTYPE);
        let mut k = KernelBuilder::new(name)
            .block(threads)
            .items_per_thread(items);
        let (x, partials, n) = (
            k.input::<T>("x"),
            k.buffer::<u64>("partials"),
            k.scalar::<u32>("n"),
        );
        let b = k.this_block();
        k.tiles(n, |k, tile| {
            let load = Load::warp_transpose()
                .valid_items(tile.valid.clone())
                .oob_default(T::default());
            let t = k.load_from(b, &x, load);
            let t = match &self.map_in {
                Some(f) => k.map(&t, |v| f(v)),
                None => t,
            };
            let r = fold(k, b, &self.op, &t, tile.valid.clone());
            k.if_(index::thread_rank().eq(0u32), |k| {
                k.write(&partials, tile.index.clone(), T::pack(&r.item(0)));
            });
        });
        k.build()
    }

    /// `words[m]` = the fold of `words[0..m]` in order, by one block.
    fn fold_kernel(&self) -> Result<Kernel, Error> {
        let Tuning { threads, items } = FOLD;
        let name = format!("device_reduce_fold_{}", T::DTYPE);
        let mut k = KernelBuilder::new(name)
            .block(threads)
            .items_per_thread(items);
        let (words, m) = (k.buffer::<u64>("words"), k.scalar::<u32>("m"));
        let b = k.this_block();
        let first = index::thread_rank().eq(0u32);
        let carry = k.var(Expr::lit(T::default()));
        k.tiles(m, |k, tile| {
            let load = Load::warp_transpose()
                .valid_items(tile.valid.clone())
                .oob_default(0u64);
            let w = k.load_from(b, &words, load);
            let t = k.map(&w, |w| T::unpack(&w));
            let r = fold(k, b, &self.op, &t, tile.valid.clone());
            k.if_(first.clone(), |k| {
                k.if_else(
                    tile.index.eq(0u32),
                    |k| k.set(&carry, r.item(0)),
                    |k| k.set(&carry, self.op.apply(carry.get(), r.item(0))),
                );
            });
        });
        k.if_(first, |k| k.write(&words, m, T::pack(&carry.get())));
        k.build()
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
/// assert_eq!(r.kernels()?.len(), 2);
/// assert_eq!(r.prepare(&Device::sim())?.tile_items(), 4096);
/// # Ok::<(), coopgraph::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct PreparedReduce<T: ScanElement> {
    tiles: Function,
    fold: Function,
    tuning: Tuning,
    _t: std::marker::PhantomData<fn() -> T>,
}

impl<T: ScanElement> PreparedReduce<T> {
    /// Elements per tile of the kernel that reads the input.
    pub fn tile_items(&self) -> u32 {
        self.tuning.tile_items()
    }

    /// The reduction of all of `x` (`None` when it is empty), working in `ws`: one launch
    /// for the tiles' partials, one of a single block for their fold, and a read of the
    /// result.
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
        let device = self.tiles.device();
        let n = x.len();
        check_lengths(n, n, self.tile_items() as usize)?;
        if !x.is_on(device) {
            return Err(AlgorithmError::WrongDevice { what: "buffer" }.into());
        }
        ws.check_device(device)?;
        if n == 0 {
            return Ok(None);
        }
        let tiles = n.div_ceil(self.tile_items() as usize);
        let grid = tiles.min(device.sm_count().max(1) as usize * 4) as u32;
        let (_, _, words) = ws.begin(0, tiles + 1)?;
        let result = (|| -> Result<T, Error> {
            self.tiles.launch_grid(grid, (x, &mut *words, n as u32))?;
            self.fold.launch_grid(1, (&mut *words, tiles as u32))?;
            let all = words.view(tiles..tiles + 1)?.to_vec()?;
            let bits = all.first().copied().unwrap_or_default();
            Ok(T::from_bits(bits))
        })();
        ws.finish(0, result).map(Some)
    }
}

//! The device-wide radix sort in the Onesweep form (CUB's `DeviceRadixSort` since 1.15):
//! one upfront launch counts the digits of every pass at once, a second turns the counts into
//! each digit's first position, then one launch per 8-bit digit ranks each tile by its digit, finds each digit's place among the tiles before with
//! a per-digit decoupled look-back, and scatters the tile's keys (and values) to their
//! places. Every key is read twice per digit at most (once by the histogram, once by its
//! pass) and written once per digit; the kernels are in `radix_kernels`.
//!
//! The passes ping-pong between the caller's output and a buffer of the [`SortWorkspace`],
//! the first reading the input, the last writing the output: the first pass writes the
//! output when the passes are odd in number, the workspace's buffer when even.

use super::radix_kernels::{self, LookBack, Plan, RADIX};
use super::scan::{check_lengths, check_tuning};
use super::sort_key::SortKey;
use super::workspace::Ticket;
use super::{AlgorithmError, Tuning, Workspace};
use crate::ir::{DType, SortOrder};
use crate::runtime::{ArgList, Buffer, Device, DeviceElement, Function};
use crate::{Error, Kernel};
use std::any::Any;
use std::fmt;
use std::marker::PhantomData;

/// The most blocks of the histogram's launch: each counts a run of consecutive tiles.
const HISTOGRAM_BLOCKS: usize = 1024;

/// The default tuning of a sort of keys of `dtype` alone: 512 threads × 20 items for keys of
/// up to 4 bytes, 384 × 20 for 8-byte keys. On the H200 at 2^28 keys, in one run beside CUB:
/// u32 keys 44.2 G keys/s at 512×20 against 40.2 at 384×16 (CUB 42.3); u64 keys 15.5 at
/// 384×16 against 13.9 at 512×20 (one block an SM), and 384×20 the fastest of seven tunings
/// at 2^26 (15.0 G keys/s).
///
/// ```
/// use coopgraph::algorithms::{Tuning, default_sort_tuning};
/// use coopgraph::ir::DType;
///
/// assert_eq!(default_sort_tuning(DType::U32), Tuning { threads: 512, items: 20 });
/// assert_eq!(default_sort_tuning(DType::F64), Tuning { threads: 384, items: 20 });
/// ```
pub fn default_sort_tuning(dtype: DType) -> Tuning {
    match dtype.bytes() {
        8 => Tuning {
            threads: 384,
            items: 20,
        },
        _ => Tuning {
            threads: 512,
            items: 20,
        },
    }
}

/// The default tuning of a sort of keys of `key` with values of `value`: 512 threads × 20
/// items where both are of up to 4 bytes (on the H200 at 2^28 u32 pairs, in one run beside
/// CUB: 35.5 G keys/s against 31.8 at 384×16; CUB 36.0), otherwise 384 × 12, which keeps the
/// shared memory of a tile of 8-byte keys or values within three blocks an SM.
///
/// ```
/// use coopgraph::algorithms::{Tuning, default_pairs_tuning};
/// use coopgraph::ir::DType;
///
/// assert_eq!(default_pairs_tuning(DType::U32, DType::F32), Tuning { threads: 512, items: 20 });
/// assert_eq!(default_pairs_tuning(DType::U64, DType::U32), Tuning { threads: 384, items: 12 });
/// ```
pub fn default_pairs_tuning(key: DType, value: DType) -> Tuning {
    if key.bytes() <= 4 && value.bytes() <= 4 {
        Tuning {
            threads: 512,
            items: 20,
        }
    } else {
        Tuning {
            threads: 384,
            items: 12,
        }
    }
}

/// A device-wide radix sort to prepare: of keys alone ([`keys`](DeviceRadixSort::keys)) or
/// of keys with a value each ([`pairs`](DeviceRadixSort::pairs)), by all of the keys' sort
/// bits or a range of them ([`bits`](Self::bits)), ascending or descending, with a tuning
/// ([`default_sort_tuning`] or [`default_pairs_tuning`] unless set). The sort is stable: keys equal in the sorted bits
/// keep their input order. [`SortKey`] tells how each key type orders (floats as CUB orders
/// them).
///
/// ```
/// use coopgraph::algorithms::{DeviceRadixSort, SortWorkspace};
/// use coopgraph::runtime::Device;
///
/// let device = Device::sim();
/// let sort = DeviceRadixSort::keys::<i32>().descending().prepare(&device)?;
/// let keys = device.upload(&[3i32, -7, 12, 0, -1, 5])?;
/// let mut out = device.alloc_zeroed::<i32>(6)?;
/// let mut ws = SortWorkspace::new(&device)?;
/// sort.run(&keys, &mut out, &mut ws)?;
/// assert_eq!(out.to_vec()?, [12, 5, 3, 0, -1, -7]);
///
/// // By the low 4 bits only, values riding along; equal digits keep their order.
/// let sort = DeviceRadixSort::pairs::<u32, f32>().bits(0, 4).prepare(&device)?;
/// let keys = device.upload(&[0x13u32, 0x02, 0x23, 0x11])?;
/// let values = device.upload(&[1.0f32, 2.0, 3.0, 4.0])?;
/// let (mut k, mut v) = (device.alloc_zeroed::<u32>(4)?, device.alloc_zeroed::<f32>(4)?);
/// sort.run(&keys, &mut k, &values, &mut v, &mut ws)?;
/// assert_eq!(k.to_vec()?, [0x11, 0x02, 0x13, 0x23]);
/// assert_eq!(v.to_vec()?, [4.0, 2.0, 1.0, 3.0]);
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub struct DeviceRadixSort<K, V = ()> {
    pub(super) order: SortOrder,
    bits: Option<(u32, u32)>,
    tuning: Option<Tuning>,
    types: PhantomData<fn() -> (K, V)>,
}

impl<K, V> Clone for DeviceRadixSort<K, V> {
    fn clone(&self) -> Self {
        DeviceRadixSort {
            types: PhantomData,
            ..*self
        }
    }
}

impl<K: SortKey, V> fmt::Debug for DeviceRadixSort<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceRadixSort")
            .field("keys", &K::DTYPE)
            .field("order", &self.order)
            .field("bits", &self.bit_range())
            .field("tuning", &self.tuning)
            .finish()
    }
}

impl DeviceRadixSort<(), ()> {
    /// A sort of keys of type `K`, ascending, by all their bits.
    pub fn keys<K: SortKey>() -> DeviceRadixSort<K> {
        DeviceRadixSort {
            order: SortOrder::Ascending,
            bits: None,
            tuning: None,
            types: PhantomData,
        }
    }

    /// A sort of keys of type `K` with a value of type `V` each (any element type), which
    /// moves with its key.
    pub fn pairs<K: SortKey, V: DeviceElement>() -> DeviceRadixSort<K, V> {
        DeviceRadixSort {
            order: SortOrder::Ascending,
            bits: None,
            tuning: None,
            types: PhantomData,
        }
    }
}

impl<K: SortKey, V> DeviceRadixSort<K, V> {
    /// Sorts by bits `begin..end` of the keys' sort bits only (CUB's `begin_bit`,
    /// `end_bit`): one pass per 8 bits. The range must be non-empty and end within the key
    /// ([`AlgorithmError::BitRange`] otherwise, from `prepare`).
    pub fn bits(mut self, begin: u32, end: u32) -> Self {
        self.bits = Some((begin, end));
        self
    }

    /// Largest key first (as CUB's `SortKeysDescending`: every sort bit flipped).
    pub fn descending(mut self) -> Self {
        self.order = SortOrder::Descending;
        self
    }

    /// Threads per block and items per thread of the passes (a tile is one block's keys).
    pub fn tuning(mut self, tuning: Tuning) -> Self {
        self.tuning = Some(tuning);
        self
    }

    pub(super) fn bit_range(&self) -> (u32, u32) {
        self.bits.unwrap_or((0, K::DTYPE.bytes() * 8))
    }

    /// The tuning set, else the default for the keys (with values of `values`).
    fn chosen(&self, values: Option<DType>) -> Tuning {
        self.tuning.unwrap_or_else(|| match values {
            Some(v) => default_pairs_tuning(K::DTYPE, v),
            None => default_sort_tuning(K::DTYPE),
        })
    }

    /// The checked plan of the kernels (with values of `values`).
    fn plan(&self, values: Option<DType>) -> Result<Plan, Error> {
        let (begin, end) = self.bit_range();
        let key_bits = K::DTYPE.bytes() * 8;
        if begin >= end || end > key_bits {
            return Err(AlgorithmError::BitRange {
                begin,
                end,
                key_bits,
            }
            .into());
        }
        let tuning = self.chosen(values);
        check_tuning(tuning)?;
        Ok(Plan {
            order: self.order,
            begin,
            end,
            tuning,
            look_back: LookBack::of(K::DTYPE, values),
        })
    }

    /// The histogram and offsets kernels and one kernel per digit pass, built (values of
    /// type `W`).
    pub(super) fn build<W: DeviceElement>(
        &self,
        pairs: bool,
    ) -> Result<(Plan, Vec<Kernel>), Error> {
        let plan = self.plan(pairs.then_some(W::DTYPE))?;
        let mut kernels = vec![
            radix_kernels::histogram::<K>(&plan)?,
            radix_kernels::offsets(&plan)?,
        ];
        for p in 0..plan.passes() {
            kernels.push(radix_kernels::pass::<K, W>(&plan, p, pairs)?);
        }
        Ok((plan, kernels))
    }

    pub(super) fn load<W: DeviceElement, V2>(
        &self,
        device: &Device,
        pairs: bool,
    ) -> Result<PreparedRadixSort<K, V2>, Error> {
        let (plan, kernels) = self.build::<W>(pairs)?;
        let mut functions = Vec::with_capacity(kernels.len());
        for k in &kernels {
            functions.push(device.compile(k)?);
        }
        let histogram = functions.remove(0);
        let offsets = functions.remove(0);
        Ok(PreparedRadixSort {
            histogram,
            offsets,
            passes: functions,
            plan,
            types: PhantomData,
        })
    }
}

impl<K: SortKey> DeviceRadixSort<K> {
    /// The sort's kernels, built (for inspection): the histogram, the offsets, then one per
    /// digit pass.
    ///
    /// ```
    /// use coopgraph::algorithms::DeviceRadixSort;
    /// use coopgraph::ptx::Arch;
    ///
    /// let ks = DeviceRadixSort::keys::<u32>().bits(4, 20).kernels()?;
    /// assert_eq!(ks.len(), 4);
    /// assert!(ks[2].ptx(Arch::Sm90)?.contains("nanosleep"));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn kernels(&self) -> Result<Vec<Kernel>, Error> {
        Ok(self.build::<u8>(false)?.1)
    }

    /// Builds the kernels and loads them on `device` (from the device's cache when loaded
    /// before).
    pub fn prepare(&self, device: &Device) -> Result<PreparedRadixSort<K>, Error> {
        self.load::<u8, ()>(device, false)
    }
}

impl<K: SortKey, V: DeviceElement> DeviceRadixSort<K, V> {
    /// The sort's kernels, built (for inspection): the histogram, the offsets, then one per
    /// digit pass.
    pub fn pair_kernels(&self) -> Result<Vec<Kernel>, Error> {
        Ok(self.build::<V>(true)?.1)
    }

    /// Builds the kernels and loads them on `device`.
    pub fn prepare(&self, device: &Device) -> Result<PreparedRadixSort<K, V>, Error> {
        self.load::<V, V>(device, true)
    }
}

/// A radix sort loaded on a device, ready to run on any buffers there: see
/// [`DeviceRadixSort`] for an example.
pub struct PreparedRadixSort<K, V = ()> {
    histogram: Function,
    offsets: Function,
    passes: Vec<Function>,
    plan: Plan,
    types: PhantomData<fn() -> (K, V)>,
}

impl<K, V> fmt::Debug for PreparedRadixSort<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreparedRadixSort")
            .field("histogram", &self.histogram)
            .field("offsets", &self.offsets)
            .field("passes", &self.passes)
            .finish()
    }
}

/// The device memory of a radix sort, kept from call to call: the look-back's [`Workspace`]
/// (tile counter, per-digit status words with their epochs, the digit counters) and the
/// buffers the passes ping-pong through (as long as the largest sort so far).
///
/// ```
/// use coopgraph::algorithms::{DeviceRadixSort, SortWorkspace};
/// use coopgraph::runtime::Device;
///
/// let device = Device::sim();
/// let sort = DeviceRadixSort::keys::<u16>().prepare(&device)?;
/// let mut ws = SortWorkspace::new(&device)?;
/// for len in [3, 0, 40] {
///     let keys: Vec<u16> = (0..len).map(|i| (i * 7919 % 1000) as u16).collect();
///     let input = device.upload(&keys)?;
///     let mut out = device.alloc_zeroed::<u16>(len)?;
///     sort.run(&input, &mut out, &mut ws)?;
///     let mut want = keys.clone();
///     want.sort();
///     assert_eq!(out.to_vec()?, want);
/// }
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub struct SortWorkspace {
    ws: Workspace,
    keys: Option<Box<dyn Any + Send + Sync>>,
    values: Option<Box<dyn Any + Send + Sync>>,
}

impl fmt::Debug for SortWorkspace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SortWorkspace")
            .field("ws", &self.ws)
            .finish_non_exhaustive()
    }
}

impl SortWorkspace {
    /// A small workspace on `device`; it grows as sorts need.
    pub fn new(device: &Device) -> Result<SortWorkspace, Error> {
        Ok(SortWorkspace {
            ws: Workspace::new(device)?,
            keys: None,
            values: None,
        })
    }

    /// Launches of digit passes it has served.
    pub fn passes(&self) -> u64 {
        self.ws.calls()
    }
}

/// The buffer of `T` in `slot` if it holds at least `len`, else a new one.
fn take<T: DeviceElement>(
    slot: &mut Option<Box<dyn Any + Send + Sync>>,
    device: &Device,
    len: usize,
) -> Result<Buffer<T>, Error> {
    match slot.take().map(|b| b.downcast::<Buffer<T>>()) {
        Some(Ok(b)) if b.len() >= len => Ok(*b),
        _ => Ok(device.alloc_zeroed::<T>(len.max(1).next_power_of_two())?),
    }
}

/// The values of one pass: where they come from and go to.
type Values<'a, W> = Option<(&'a Buffer<W>, &'a mut Buffer<W>)>;

impl<K: SortKey> PreparedRadixSort<K> {
    /// Sorts all of `keys_in` into the first `keys_in.len()` elements of `keys_out`.
    pub fn run(
        &self,
        keys_in: &Buffer<K>,
        keys_out: &mut Buffer<K>,
        ws: &mut SortWorkspace,
    ) -> Result<(), Error> {
        self.sort::<u8>(keys_in, keys_out, None, ws)
    }
}

impl<K: SortKey, V: DeviceElement> PreparedRadixSort<K, V> {
    /// Sorts all of `keys_in` into the first `keys_in.len()` elements of `keys_out`, and
    /// `values_in` (as many as the keys) beside them into `values_out`.
    pub fn run(
        &self,
        keys_in: &Buffer<K>,
        keys_out: &mut Buffer<K>,
        values_in: &Buffer<V>,
        values_out: &mut Buffer<V>,
        ws: &mut SortWorkspace,
    ) -> Result<(), Error> {
        let n = keys_in.len();
        if values_in.len() != n {
            let values = values_in.len();
            return Err(AlgorithmError::ValuesLength { keys: n, values }.into());
        }
        check_lengths(n, values_out.len(), 0)?;
        let on = self.histogram.device();
        if !values_in.is_on(on) || !values_out.is_on(on) {
            return Err(AlgorithmError::WrongDevice { what: "buffer" }.into());
        }
        self.sort(keys_in, keys_out, Some((values_in, values_out)), ws)
    }
}

impl<K: SortKey, V> PreparedRadixSort<K, V> {
    /// Keys per tile (one block each).
    pub fn tile_items(&self) -> u32 {
        self.plan.tuning.tile_items()
    }

    /// The tuning the sort's kernels were built with (the one set, the default, or the one
    /// [`DeviceRadixSort::tune`] chose).
    ///
    /// ```
    /// use coopgraph::algorithms::{DeviceRadixSort, Tuning, default_sort_tuning};
    /// use coopgraph::ir::DType;
    /// use coopgraph::runtime::Device;
    ///
    /// let device = Device::sim();
    /// let sort = DeviceRadixSort::keys::<u64>().prepare(&device)?;
    /// assert_eq!(sort.tuning(), default_sort_tuning(DType::U64));
    /// let t = Tuning { threads: 64, items: 3 };
    /// assert_eq!(DeviceRadixSort::keys::<u8>().tuning(t).prepare(&device)?.tuning(), t);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn tuning(&self) -> Tuning {
        self.plan.tuning
    }

    /// Digit passes per sort (one launch each, after the histogram's and the offsets').
    pub fn passes(&self) -> u32 {
        self.plan.passes()
    }

    /// The loaded kernels: the histogram, the offsets, then the passes.
    pub fn functions(&self) -> impl Iterator<Item = &Function> {
        [&self.histogram, &self.offsets]
            .into_iter()
            .chain(&self.passes)
    }

    pub(super) fn sort<W: DeviceElement>(
        &self,
        keys_in: &Buffer<K>,
        keys_out: &mut Buffer<K>,
        values: Values<'_, W>,
        ws: &mut SortWorkspace,
    ) -> Result<(), Error> {
        let device = self.histogram.device();
        let n = keys_in.len();
        let tile = self.tile_items() as usize;
        check_lengths(n, keys_out.len(), tile)?;
        // Status word indices (1 + tile * 256 + digit) stay within 32 bits.
        let max_tiles = (u32::MAX as usize - 1) / RADIX as usize;
        if n.div_ceil(tile) > max_tiles {
            let max = max_tiles * tile;
            return Err(AlgorithmError::TooLong { len: n, max }.into());
        }
        if !keys_in.is_on(device) || !keys_out.is_on(device) {
            return Err(AlgorithmError::WrongDevice { what: "buffer" }.into());
        }
        ws.ws.check_device(device)?;
        if n == 0 {
            return Ok(());
        }
        let scratch = if self.passes() > 1 { n } else { 1 };
        let mut alt = take::<K>(&mut ws.keys, device, scratch)?;
        let mut values = match values {
            Some((vi, vo)) => Some((vi, vo, take::<W>(&mut ws.values, device, scratch)?)),
            None => None,
        };
        let result = self.passes_over(keys_in, keys_out, &mut alt, &mut values, &mut ws.ws);
        ws.keys = Some(Box::new(alt));
        if let Some((_, _, valt)) = values {
            ws.values = Some(Box::new(valt));
        }
        result
    }

    /// The histogram and every pass, ping-ponging between `keys_out` and `alt`.
    fn passes_over<W: DeviceElement>(
        &self,
        keys_in: &Buffer<K>,
        keys_out: &mut Buffer<K>,
        alt: &mut Buffer<K>,
        values: &mut Option<(&Buffer<W>, &mut Buffer<W>, Buffer<W>)>,
        ws: &mut Workspace,
    ) -> Result<(), Error> {
        let n = keys_in.len();
        let tiles = n.div_ceil(self.tile_items() as usize);
        let passes = self.passes();
        let words = passes as usize * RADIX as usize;
        for p in 0..passes {
            // Pass p writes the output when an even number of passes follows it.
            let to_out = (passes - 1 - p).is_multiple_of(2);
            let (src, dst): (&Buffer<K>, &mut Buffer<K>) = match (p, to_out) {
                (0, true) => (keys_in, &mut *keys_out),
                (0, false) => (keys_in, &mut *alt),
                (_, true) => (&*alt, &mut *keys_out),
                (_, false) => (&*keys_out, &mut *alt),
            };
            let vals: Values<'_, W> = match values.as_mut() {
                None => None,
                Some((vi, vo, va)) => Some(match (p, to_out) {
                    (0, true) => (*vi, &mut **vo),
                    (0, false) => (*vi, va),
                    (_, true) => (&*va, &mut **vo),
                    (_, false) => (&**vo, va),
                }),
            };
            let (ticket, status, hist) = ws.begin(tiles * RADIX as usize, words)?;
            let result = self.launch(p, n, tiles, src, dst, vals, status, hist, ticket);
            ws.finish(tiles, result)?;
        }
        Ok(())
    }

    /// Pass `p`'s launch (after the histogram's and the offsets', for the first).
    #[allow(clippy::too_many_arguments)]
    fn launch<W: DeviceElement>(
        &self,
        p: u32,
        n: usize,
        tiles: usize,
        src: &Buffer<K>,
        dst: &mut Buffer<K>,
        values: Values<'_, W>,
        status: &mut Buffer<u64>,
        hist: &mut Buffer<u64>,
        ticket: Ticket,
    ) -> Result<(), Error> {
        if p == 0 {
            hist.fill(0)?;
            let per_block = tiles.div_ceil(HISTOGRAM_BLOCKS);
            let blocks = tiles.div_ceil(per_block);
            let mut args = ArgList::new();
            args.push(src)
                .push(&mut *hist)
                .push(n as u32)
                .push(per_block as u32);
            self.histogram.launch_grid(blocks as u32, args)?;
            let mut args = ArgList::new();
            args.push(&mut *hist);
            self.offsets.launch_grid(self.passes(), args)?;
        }
        let mut args = ArgList::new();
        args.push(src).push(dst);
        if let Some((vi, vo)) = values {
            args.push(vi).push(vo);
        }
        args.push(n as u32)
            .push(status)
            .push(hist)
            .push(ticket.epoch)
            .push(ticket.base);
        self.passes[p as usize].launch_grid(tiles as u32, args)?;
        Ok(())
    }
}

/// Sorts `keys_in` into `keys_out` (which may be longer: its tail is left alone), ascending
/// by all of the keys' bits, stable. The kernels are built on each call (their compiled
/// modules come from the device's cache) and a workspace allocated: prepare a
/// [`DeviceRadixSort`] and keep a [`SortWorkspace`] to avoid both.
///
/// ```
/// use coopgraph::runtime::Device;
///
/// let device = Device::sim();
/// let keys = device.upload(&[2.5f32, -0.0, f32::NEG_INFINITY, 1e9, -3.0, 0.0])?;
/// let mut out = device.alloc_zeroed::<f32>(6)?;
/// coopgraph::algorithms::radix_sort_keys(&device, &keys, &mut out)?;
/// assert_eq!(out.to_vec()?, [f32::NEG_INFINITY, -3.0, -0.0, 0.0, 2.5, 1e9]);
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub fn radix_sort_keys<K: SortKey>(
    device: &Device,
    keys_in: &Buffer<K>,
    keys_out: &mut Buffer<K>,
) -> Result<(), Error> {
    let sort = DeviceRadixSort::keys::<K>().prepare(device)?;
    sort.run(keys_in, keys_out, &mut SortWorkspace::new(device)?)
}

/// Sorts `keys_in` into `keys_out` ascending, stable, and `values_in` (one per key) into
/// `values_out` beside them; as [`radix_sort_keys`] otherwise.
///
/// ```
/// use coopgraph::runtime::Device;
///
/// let device = Device::sim();
/// let keys = device.upload(&[30u64, 10, 20, 10])?;
/// let names = device.upload(&[b'c', b'a', b'b', b'd'])?;
/// let (mut k, mut v) = (device.alloc_zeroed::<u64>(4)?, device.alloc_zeroed::<u8>(4)?);
/// coopgraph::algorithms::radix_sort_pairs(&device, &keys, &mut k, &names, &mut v)?;
/// assert_eq!(k.to_vec()?, [10, 10, 20, 30]);
/// assert_eq!(v.to_vec()?, *b"adbc");
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub fn radix_sort_pairs<K: SortKey, V: DeviceElement>(
    device: &Device,
    keys_in: &Buffer<K>,
    keys_out: &mut Buffer<K>,
    values_in: &Buffer<V>,
    values_out: &mut Buffer<V>,
) -> Result<(), Error> {
    let sort = DeviceRadixSort::pairs::<K, V>().prepare(device)?;
    let mut ws = SortWorkspace::new(device)?;
    sort.run(keys_in, keys_out, values_in, values_out, &mut ws)
}

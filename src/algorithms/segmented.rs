//! The device-wide segmented reduction (`cub::DeviceSegmentedReduce::Reduce`): one block per
//! segment, reading it tile by tile with vector loads and folding each tile in element order.
//!
//! Each block first checks its segment's offsets (`offsets[s] <= offsets[s + 1] <= len`, a
//! comparison of two values it reads anyway): a segment that fails reads nothing and raises
//! the call's error word in the [`Workspace`] (an atomic maximum of the call's epoch and the
//! segment, so the first bad segment wins and no reset is needed between calls), which the
//! call reads back and reports as [`AlgorithmError::Offsets`].

use super::reduce::fold;
use super::scan::{check_lengths, check_tuning};
use super::{AlgorithmError, MapFn, Op, ScanElement, Tuning, Workspace};
use crate::ir::{Atomic, Expr, index};
use crate::runtime::{ArgList, Buffer, Device, Function};
use crate::{Error, Kernel, KernelBuilder, Load};
use std::fmt;
use std::sync::Arc;

/// The most segments of one call (the grid's limit: one block each).
const MAX_SEGMENTS: usize = i32::MAX as usize;

/// The table of default tunings of the segmented reduction: 256 threads × 4 items for 32-bit
/// elements (a 1024-element segment is one tile, one 16-byte vector per thread), 256 × 2 for
/// 64-bit ones.
///
/// ```
/// use coopgraph::algorithms::default_segmented_tuning;
/// use coopgraph::ir::DType;
///
/// assert_eq!(default_segmented_tuning(DType::F32).tile_items(), 1024);
/// assert_eq!(default_segmented_tuning(DType::F64).tile_items(), 512);
/// ```
pub fn default_segmented_tuning(dtype: crate::ir::DType) -> Tuning {
    Tuning {
        threads: 256,
        items: (16 / dtype.bytes()).max(1),
    }
}

/// A device-wide segmented reduction to prepare: its operator, an optional element-wise map
/// fused on the way in, and its tuning ([`default_segmented_tuning`] unless set).
///
/// ```
/// use coopgraph::algorithms::{DeviceSegmentedReduce, Op, Workspace};
/// use coopgraph::runtime::Device;
///
/// // The largest |x| of each segment, from 0.
/// let device = Device::sim();
/// let r = DeviceSegmentedReduce::new(Op::max()).map_input(|v: coopgraph::ir::Expr<i32>| v.abs());
/// let r = r.prepare(&device)?;
/// let x = device.upload(&[3i32, -9, 4, 1, -5, 2])?;
/// let offsets = device.upload(&[0u32, 3, 3, 6])?;
/// let mut out = device.alloc_zeroed::<i32>(3)?;
/// r.run(&x, &offsets, &mut out, 0, &mut Workspace::new(&device)?)?;
/// assert_eq!(out.to_vec()?, [9, 0, 5]);
/// # Ok::<(), coopgraph::Error>(())
/// ```
#[derive(Clone)]
pub struct DeviceSegmentedReduce<T: ScanElement> {
    op: Op<T>,
    map_in: Option<MapFn<T>>,
    tuning: Option<Tuning>,
}

impl<T: ScanElement> fmt::Debug for DeviceSegmentedReduce<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceSegmentedReduce")
            .field("op", &self.op)
            .field("map_in", &self.map_in.is_some())
            .field("tuning", &self.chosen())
            .finish()
    }
}

impl<T: ScanElement> DeviceSegmentedReduce<T> {
    /// The segmented reduction with `op`.
    pub fn new(op: Op<T>) -> Self {
        DeviceSegmentedReduce {
            op,
            map_in: None,
            tuning: None,
        }
    }

    /// Reduces `f(x[i])` instead of `x[i]` (fused: read once).
    pub fn map_input(mut self, f: impl Fn(Expr<T>) -> Expr<T> + Send + Sync + 'static) -> Self {
        self.map_in = Some(Arc::new(f));
        self
    }

    /// Threads per block and items per thread (a segment is read a tile of their product at
    /// a time).
    pub fn tuning(mut self, tuning: Tuning) -> Self {
        self.tuning = Some(tuning);
        self
    }

    fn chosen(&self) -> Tuning {
        self.tuning
            .unwrap_or_else(|| default_segmented_tuning(T::DTYPE))
    }

    /// The kernel, built.
    ///
    /// ```
    /// use coopgraph::algorithms::{DeviceSegmentedReduce, Op};
    /// use coopgraph::ptx::Arch;
    ///
    /// let k = DeviceSegmentedReduce::new(Op::<f32>::sum()).kernel()?;
    /// assert!(k.ptx(Arch::Sm90)?.contains("ld.global.nc.v4.f32"));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn kernel(&self) -> Result<Kernel, Error> {
        let tuning = self.chosen();
        check_tuning(tuning)?;
        let Tuning { threads, items } = tuning;
        let tile = tuning.tile_items();
        let name = format!("device_segmented_reduce_{}_{threads}x{items}", T::DTYPE);
        let mut k = KernelBuilder::new(name)
            .block(threads)
            .items_per_thread(items);
        let (x, offsets) = (k.input::<T>("x"), k.input::<u32>("offsets"));
        let out = k.output::<T>("out");
        let (n, initial) = (k.scalar::<u32>("n"), k.scalar::<T>("initial"));
        let (flag, epoch) = (k.buffer::<u64>("flag"), k.scalar::<u32>("epoch"));
        let b = k.this_block();
        let s = index::block_index();
        let first = index::thread_rank().eq(0u32);
        let begin = offsets.at(s.clone());
        let end = offsets.at(s.clone() + 1u32);
        let bad = begin.gt(end.clone()) | end.gt(n.expr());
        k.if_else(
            bad,
            |k| {
                let code = (Expr::lit(u32::MAX) - s.clone()).cast::<u64>();
                let raised = (epoch.expr().cast::<u64>() << 32u32) | code;
                k.if_(first.clone(), |k| {
                    k.atomic(&flag, 0u32, Atomic::max(raised));
                });
            },
            |k| {
                let len = end.clone() - begin.clone();
                let acc = k.var(initial.expr());
                k.for_range_step(0u32, len.clone(), tile, |k, at| {
                    let valid = (len.clone() - at.clone()).min(tile);
                    let load = Load::vectorize()
                        .offset(begin.clone() + at)
                        .valid_items(valid.clone())
                        .oob_default(T::default());
                    let t = k.load_from(b, &x, load);
                    let t = match &self.map_in {
                        Some(f) => k.map(&t, |v| f(v)),
                        None => t,
                    };
                    // The tile's fold is at rank 0, which carries the segment's.
                    let r = fold(k, b, &self.op, &t, valid);
                    k.if_(first.clone(), |k| {
                        k.set(&acc, self.op.apply(acc.get(), r.item(0)));
                    });
                });
                k.if_(first.clone(), |k| k.write(&out, s.clone(), acc.get()));
            },
        );
        k.build()
    }

    /// Builds the kernel and loads it on `device` (from its cache when loaded before).
    pub fn prepare(&self, device: &Device) -> Result<PreparedSegmentedReduce<T>, Error> {
        Ok(PreparedSegmentedReduce {
            function: device.compile(&self.kernel()?)?,
            tuning: self.chosen(),
            _t: std::marker::PhantomData,
        })
    }
}

/// A segmented reduction loaded on a device, ready to run on any buffers there (see
/// [`PreparedSegmentedReduce::run`]).
///
/// ```
/// use coopgraph::algorithms::{DeviceSegmentedReduce, Op, Tuning};
/// use coopgraph::runtime::Device;
///
/// let t = Tuning { threads: 64, items: 2 };
/// let r = DeviceSegmentedReduce::new(Op::<u64>::sum()).tuning(t).prepare(&Device::sim())?;
/// assert_eq!(r.tile_items(), 128);
/// # Ok::<(), coopgraph::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct PreparedSegmentedReduce<T: ScanElement> {
    function: Function,
    tuning: Tuning,
    _t: std::marker::PhantomData<fn() -> T>,
}

impl<T: ScanElement> PreparedSegmentedReduce<T> {
    /// Elements a block reads at a time.
    pub fn tile_items(&self) -> u32 {
        self.tuning.tile_items()
    }

    /// `out[i]` = `initial op x[offsets[i]] op ... op x[offsets[i + 1] - 1]` for each of the
    /// `offsets.len() - 1` segments (in element order; `initial` for an empty segment), in
    /// one launch of one block per segment; `out` may be longer (its tail is left alone).
    ///
    /// The offsets are checked on the device as each block reads its own two: a segment
    /// whose offsets are out of order or past the end of `x` reads nothing, and the call
    /// fails with [`AlgorithmError::Offsets`] naming the first such segment. Finding out
    /// takes one read back of an 8-byte word per call (so the call waits for the kernel).
    ///
    /// ```
    /// use coopgraph::algorithms::{AlgorithmError, DeviceSegmentedReduce, Op, Workspace};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::Error;
    ///
    /// let device = Device::sim();
    /// let r = DeviceSegmentedReduce::new(Op::<f32>::sum()).prepare(&device)?;
    /// let mut ws = Workspace::new(&device)?;
    /// let x = device.upload(&[1.0f32, 2.0, 3.0, 4.0])?;
    /// let mut out = device.alloc_zeroed::<f32>(2)?;
    /// r.run(&x, &device.upload(&[0u32, 1, 4])?, &mut out, 0.5, &mut ws)?;
    /// assert_eq!(out.to_vec()?, [1.5, 9.5]);
    /// let past_end = device.upload(&[0u32, 2, 5])?;
    /// let e = r.run(&x, &past_end, &mut out, 0.0, &mut ws).unwrap_err();
    /// assert!(matches!(e, Error::Algorithm(AlgorithmError::Offsets { segment: 1 })));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn run(
        &self,
        x: &Buffer<T>,
        offsets: &Buffer<u32>,
        out: &mut Buffer<T>,
        initial: T,
        ws: &mut Workspace,
    ) -> Result<(), Error> {
        let device = self.function.device();
        let segments = offsets.len().saturating_sub(1);
        check_lengths(segments, out.len(), 0)?;
        check_lengths(x.len(), x.len(), self.tile_items() as usize)?;
        if segments > MAX_SEGMENTS {
            let (len, max) = (segments, MAX_SEGMENTS);
            return Err(AlgorithmError::TooLong { len, max }.into());
        }
        if !x.is_on(device) || !offsets.is_on(device) || !out.is_on(device) {
            return Err(AlgorithmError::WrongDevice { what: "buffer" }.into());
        }
        ws.check_device(device)?;
        if segments == 0 {
            return Ok(());
        }
        let (epoch, flag) = ws.flag()?;
        let mut args = ArgList::new();
        args.push(x)
            .push(offsets)
            .push(out)
            .push(x.len() as u32)
            .push(initial)
            .push(&mut *flag)
            .push(epoch);
        self.function.launch_grid(segments as u32, args)?;
        let word = flag.to_vec()?.first().copied().unwrap_or_default();
        if (word >> 32) as u32 == epoch {
            let segment = (u32::MAX - word as u32) as usize;
            return Err(AlgorithmError::Offsets { segment }.into());
        }
        Ok(())
    }
}

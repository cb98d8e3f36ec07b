//! Choosing an algorithm's tuning on the device that runs it, through the runtime's
//! autotuner ([`Tuner`]): every candidate tuning is built, checked against the first one's
//! result, timed, and the fastest kept in the disk cache per kernel family, size bucket,
//! device and driver, so that the next process starts tuned.

use std::time::Duration;

use super::radix::{DeviceRadixSort, PreparedRadixSort, SortWorkspace};
use super::reduce::{DeviceReduce, PreparedReduce};
use super::scan::{DeviceScan, PreparedScan};
use super::sort_key::SortKey;
use super::{AlgorithmError, ScanElement, Tuning, Workspace};
use crate::Error;
use crate::ir::{DType, SortOrder};
use crate::runtime::{Buffer, Device, DeviceElement, Function, TuneSource, Tuner, Workload};

/// The candidates [`DeviceScan::tune`] tries for elements of `dtype` when given none:
/// 128, 256 and 512 threads with 8 to 32 items of 32-bit elements, or 4 to 16 of 64-bit ones.
///
/// ```
/// use coopgraph::algorithms::{Tuning, default_tuning, tuning_space};
/// use coopgraph::ir::DType;
///
/// let space = tuning_space(DType::U32);
/// assert!(space.contains(&default_tuning(DType::U32)));
/// assert!(space.iter().all(|t| t.threads % 32 == 0 && t.items >= 1));
/// ```
pub fn tuning_space(dtype: DType) -> Vec<Tuning> {
    let items: &[u32] = if dtype.bytes() >= 8 {
        &[4, 8, 12, 16]
    } else {
        &[8, 12, 16, 24, 32]
    };
    [128, 256, 512]
        .into_iter()
        .flat_map(|threads| items.iter().map(move |&items| Tuning { threads, items }))
        .collect()
}

/// The candidates given, or the algorithm's default space where none are.
fn or_default(space: &[Tuning], default: impl FnOnce() -> Vec<Tuning>) -> Vec<Tuning> {
    if space.is_empty() {
        default()
    } else {
        space.to_vec()
    }
}

/// An algorithm prepared with the tuning the autotuner chose.
#[derive(Debug, Clone)]
pub struct Tuned<P> {
    /// The algorithm, ready to run.
    pub prepared: P,
    /// Whether the tuning was measured now or read from a stored record.
    pub source: TuneSource,
    /// The winner's median time on the tuning problem (measured now, or when the record was
    /// made).
    pub median: Duration,
}

/// The tuning a kernel family's name is taken at: any fixed one does, as only the kernel's
/// operator and maps tell families apart.
const NAMING: Tuning = Tuning {
    threads: 32,
    items: 1,
};

impl<T: ScanElement> DeviceScan<T> {
    /// A tuner for this scan on `device`: its kernel family names the scan's form, operator,
    /// maps and element type (two scans computing the same thing share it), and it keeps its
    /// records in the device's disk cache. Adjust it ([`Tuner::with_bench`],
    /// [`Tuner::with_cache`]) before [`tune`](Self::tune).
    pub fn tuner(&self, device: &Device) -> Result<Tuner, Error> {
        let key = self.clone().tuning(NAMING).kernel()?.key().digest();
        Ok(Tuner::new(device, format!("algorithms.scan.{key:032x}")))
    }

    /// Picks the fastest of `space` ([`tuning_space`] when empty) for scanning `x` with
    /// `tuner` (from [`tuner`](Self::tuner)), and prepares the scan with it. Each candidate
    /// scans `x` into a buffer of its own; a candidate whose result differs from the first
    /// one's is rejected (float results may differ by the reassociation a tuning does: by at
    /// most 10^-4 of the output's largest magnitude). `x` must be on the tuner's device.
    /// A stored record for the same family, size bucket, device and candidates is used
    /// without measuring.
    ///
    /// ```
    /// use coopgraph::algorithms::{DeviceScan, Op, Tuning, Workspace};
    /// use coopgraph::runtime::{Bench, Device, DiskCache, TuneSource};
    ///
    /// let device = Device::sim();
    /// let x = device.upload(&(0..3000u32).collect::<Vec<_>>())?;
    /// let dir = std::env::temp_dir().join(format!("coopgraph-scan-tune-{}", std::process::id()));
    /// let scan = DeviceScan::inclusive(Op::<u32>::sum());
    /// let space = [Tuning { threads: 64, items: 4 }, Tuning { threads: 128, items: 2 }];
    /// let tuner = scan.tuner(&device)?.with_cache(DiskCache::new(&dir)).with_bench(Bench::ms(0, 1));
    /// let tuned = scan.tune(&tuner, &x, &space)?;
    /// assert_eq!(tuned.source, TuneSource::Measured);
    ///
    /// // The next tune (in this process or another) reads the winner back.
    /// let again = scan.tune(&tuner, &x, &space)?;
    /// assert_eq!((again.source, again.prepared.tuning()), (TuneSource::Stored, tuned.prepared.tuning()));
    /// let mut y = device.alloc_zeroed::<u32>(3000)?;
    /// again.prepared.run(&x, &mut y, &mut Workspace::new(&device)?)?;
    /// assert_eq!(y.to_vec()?[2999], 2999 * 3000 / 2);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn tune(
        &self,
        tuner: &Tuner,
        x: &Buffer<T>,
        space: &[Tuning],
    ) -> Result<Tuned<PreparedScan<T>>, Error> {
        let space = or_default(space, || tuning_space(T::DTYPE));
        let device = tuner.device().clone();
        if !x.is_on(&device) {
            return Err(AlgorithmError::WrongDevice { what: "buffer" }.into());
        }
        let mut work = ScanWork {
            scan: self,
            x,
            y: device.alloc_zeroed::<T>(x.len())?,
            ws: Workspace::new(&device)?,
        };
        let build = |t: &Tuning| self.clone().tuning(*t).kernel();
        let tuned = tuner.tune(x.len() as u64, &space, build, &mut work)?;
        Ok(Tuned {
            prepared: self.prepared_with(tuned.function, tuned.config),
            source: tuned.source,
            median: tuned.median,
        })
    }
}

/// The tuning problem of a scan: one input, an output, a workspace.
struct ScanWork<'a, T: ScanElement> {
    scan: &'a DeviceScan<T>,
    x: &'a Buffer<T>,
    y: Buffer<T>,
    ws: Workspace,
}

impl<T: ScanElement> Workload<Tuning> for ScanWork<'_, T> {
    type Output = Vec<T>;
    type Error = Error;

    fn reset(&mut self) -> Result<(), Error> {
        Ok(self.y.fill(T::max_value())?)
    }

    fn launch(&mut self, function: &Function, tuning: &Tuning) -> Result<(), Error> {
        let scan = self.scan.prepared_with(function.clone(), *tuning);
        scan.run(self.x, &mut self.y, &mut self.ws)
    }

    fn output(&mut self) -> Result<Vec<T>, Error> {
        Ok(self.y.to_vec()?)
    }

    fn matches(&self, reference: &Vec<T>, output: &Vec<T>) -> bool {
        agrees(reference, output)
    }
}

/// Whether a candidate's output agrees with the first candidate's: integers exactly, floats
/// within 10^-4 of the largest magnitude (the reassociation a tuning does).
fn agrees<T: ScanElement>(reference: &[T], output: &[T]) -> bool {
    if !matches!(T::DTYPE, DType::F32 | DType::F64) {
        return reference == output;
    }
    let f = |v: &T| -> f64 { num_traits::NumCast::from(*v).unwrap_or(f64::NAN) };
    let scale = reference.iter().map(|v| f(v).abs()).fold(0.0, f64::max);
    reference.len() == output.len()
        && reference.iter().zip(output).all(|(a, b)| {
            let (a, b) = (f(a), f(b));
            a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-4 * scale
        })
}

impl<T: ScanElement> DeviceReduce<T> {
    /// A tuner for this reduction on `device`: its kernel family names the operator, the map
    /// and the element type, and it keeps its records in the device's disk cache (see
    /// [`DeviceScan::tuner`]).
    pub fn tuner(&self, device: &Device) -> Result<Tuner, Error> {
        let key = self.tiles_kernel(NAMING)?.key().digest();
        Ok(Tuner::new(device, format!("algorithms.reduce.{key:032x}")))
    }

    /// Picks the fastest of `space` ([`tuning_space`] when empty) for reducing `x` with
    /// `tuner` (from [`tuner`](Self::tuner)), and prepares the reduction with it; as
    /// [`DeviceScan::tune`] otherwise (float results may differ between tunings by the
    /// reassociation: by at most 10^-4 of the result's magnitude).
    ///
    /// ```
    /// use coopgraph::algorithms::{DeviceReduce, Op, Tuning, Workspace};
    /// use coopgraph::runtime::{Bench, Device, DiskCache, TuneSource};
    ///
    /// let device = Device::sim();
    /// let x = device.upload(&(0..5000u64).collect::<Vec<_>>())?;
    /// let dir = std::env::temp_dir().join(format!("coopgraph-reduce-tune-{}", std::process::id()));
    /// let r = DeviceReduce::new(Op::<u64>::sum());
    /// let space = [Tuning { threads: 64, items: 4 }, Tuning { threads: 128, items: 8 }];
    /// let tuner = r.tuner(&device)?.with_cache(DiskCache::new(&dir)).with_bench(Bench::ms(0, 1));
    /// let tuned = r.tune(&tuner, &x, &space)?;
    /// assert_eq!(tuned.source, TuneSource::Measured);
    /// assert_eq!(tuned.prepared.run(&x, &mut Workspace::new(&device)?)?, Some(4999 * 5000 / 2));
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn tune(
        &self,
        tuner: &Tuner,
        x: &Buffer<T>,
        space: &[Tuning],
    ) -> Result<Tuned<PreparedReduce<T>>, Error> {
        let space = or_default(space, || tuning_space(T::DTYPE));
        let device = tuner.device().clone();
        if !x.is_on(&device) {
            return Err(AlgorithmError::WrongDevice { what: "buffer" }.into());
        }
        for t in &space {
            super::scan::check_tuning(*t)?;
        }
        let mut work = ReduceWork {
            reduce: self,
            x,
            out: device.alloc_zeroed::<T>(1)?,
            ws: Workspace::new(&device)?,
        };
        let build = |t: &Tuning| self.tiles_kernel(*t);
        let tuned = tuner.tune(x.len() as u64, &space, build, &mut work)?;
        Ok(Tuned {
            prepared: self.prepared_with(tuned.function, tuned.config),
            source: tuned.source,
            median: tuned.median,
        })
    }
}

/// The tuning problem of a reduction: one input, a result, a workspace.
struct ReduceWork<'a, T: ScanElement> {
    reduce: &'a DeviceReduce<T>,
    x: &'a Buffer<T>,
    out: Buffer<T>,
    ws: Workspace,
}

impl<T: ScanElement> Workload<Tuning> for ReduceWork<'_, T> {
    type Output = Vec<T>;
    type Error = Error;

    fn reset(&mut self) -> Result<(), Error> {
        Ok(self.out.write(&[T::max_value()])?)
    }

    fn launch(&mut self, function: &Function, tuning: &Tuning) -> Result<(), Error> {
        let r = (self.reduce).prepared_with(function.clone(), *tuning);
        r.run_into(self.x, &mut self.out, &mut self.ws).map(|_| ())
    }

    fn output(&mut self) -> Result<Vec<T>, Error> {
        Ok(self.out.to_vec()?)
    }

    fn matches(&self, reference: &Vec<T>, output: &Vec<T>) -> bool {
        agrees(reference, output)
    }
}

/// The candidates [`DeviceRadixSort::tune`] tries when given none: 256, 384 and 512 threads
/// with 12, 16 and 20 items per thread (the defaults, [`default_sort_tuning`] and
/// [`default_pairs_tuning`], are among them).
///
/// [`default_sort_tuning`]: super::default_sort_tuning
/// [`default_pairs_tuning`]: super::default_pairs_tuning
///
/// ```
/// use coopgraph::algorithms::{default_sort_tuning, sort_tuning_space};
/// use coopgraph::ir::DType;
///
/// let space = sort_tuning_space();
/// assert_eq!(space.len(), 9);
/// assert!(space.contains(&default_sort_tuning(DType::U32)));
/// assert!(space.contains(&default_sort_tuning(DType::U64)));
/// ```
pub fn sort_tuning_space() -> Vec<Tuning> {
    [256, 384, 512]
        .into_iter()
        .flat_map(|threads| [12, 16, 20].map(|items| Tuning { threads, items }))
        .collect()
}

impl<K: SortKey, V> DeviceRadixSort<K, V> {
    /// The kernel family of this sort's tunings: key type, values (their type, or none),
    /// order and bit range; any tuning set on the sort is not part of it.
    fn family(&self, values: Option<DType>) -> String {
        let (begin, end) = self.bit_range();
        let order = match self.order {
            SortOrder::Ascending => "asc",
            SortOrder::Descending => "desc",
        };
        let values = values.map_or_else(|| "keys".to_string(), |v| v.to_string());
        format!(
            "algorithms.radix_sort.{}.{values}.{order}.{begin}_{end}",
            K::DTYPE
        )
    }

    /// The tuning of a sort of `keys` (and `values`, of type `W`, where `pairs`), prepared.
    fn tune_with<W: DeviceElement>(
        &self,
        tuner: &Tuner,
        keys: &Buffer<K>,
        values: Option<&Buffer<W>>,
        space: &[Tuning],
    ) -> Result<Tuned<PreparedRadixSort<K, V>>, Error> {
        let space = or_default(space, sort_tuning_space);
        let device = tuner.device().clone();
        if !keys.is_on(&device) || values.is_some_and(|v| !v.is_on(&device)) {
            return Err(AlgorithmError::WrongDevice { what: "buffer" }.into());
        }
        if let Some(v) = values
            && v.len() != keys.len()
        {
            let (keys, values) = (keys.len(), v.len());
            return Err(AlgorithmError::ValuesLength { keys, values }.into());
        }
        let pairs = values.is_some();
        let mut work = SortWork {
            sort: self,
            device: device.clone(),
            keys,
            out: device.alloc_zeroed::<K>(keys.len().max(1))?,
            values: match values {
                Some(v) => Some((v, device.alloc_zeroed::<W>(v.len().max(1))?)),
                None => None,
            },
            ws: SortWorkspace::new(&device)?,
            prepared: Vec::new(),
        };
        // The candidate's kernel is its first digit pass (the histogram's and the offsets'
        // follow the tuning too, loaded with it when the candidate first runs).
        let build = |t: &Tuning| {
            let (_, mut kernels) = self.clone().tuning(*t).build::<W>(pairs)?;
            Ok::<_, Error>(kernels.swap_remove(2))
        };
        let tuned = tuner.tune(keys.len() as u64, &space, build, &mut work)?;
        let prepared = match work.prepared.into_iter().find(|(t, _)| *t == tuned.config) {
            Some((_, p)) => p,
            None => (self.clone().tuning(tuned.config)).load::<W, V>(&device, pairs)?,
        };
        Ok(Tuned {
            prepared,
            source: tuned.source,
            median: tuned.median,
        })
    }
}

impl<K: SortKey> DeviceRadixSort<K> {
    /// A tuner for this sort on `device`: its kernel family names the key type, the order and
    /// the bit range, and it keeps its records in the device's disk cache (see
    /// [`DeviceScan::tuner`]).
    pub fn tuner(&self, device: &Device) -> Result<Tuner, Error> {
        Ok(Tuner::new(device, self.family(None)))
    }

    /// Picks the fastest of `space` ([`sort_tuning_space`] when empty) for sorting `keys`
    /// with `tuner` (from [`tuner`](Self::tuner)), and prepares the sort with it. Each
    /// candidate sorts `keys` into a buffer of its own (poisoned before each check); one
    /// whose result differs from the first one's is rejected. A stored record for the same
    /// family, size bucket, device and candidates is used without measuring.
    ///
    /// ```
    /// use coopgraph::algorithms::{DeviceRadixSort, SortWorkspace, Tuning};
    /// use coopgraph::runtime::{Bench, Device, DiskCache, TuneSource};
    ///
    /// let device = Device::sim();
    /// let xs: Vec<u32> = (0..3000u32).map(|i| i.wrapping_mul(2_654_435_761) >> 7).collect();
    /// let keys = device.upload(&xs)?;
    /// let dir = std::env::temp_dir().join(format!("coopgraph-sort-tune-{}", std::process::id()));
    /// let sort = DeviceRadixSort::keys::<u32>().bits(0, 25);
    /// let space = [Tuning { threads: 64, items: 4 }, Tuning { threads: 128, items: 2 }];
    /// let tuner = sort.tuner(&device)?.with_cache(DiskCache::new(&dir)).with_bench(Bench::ms(0, 1));
    /// let tuned = sort.tune(&tuner, &keys, &space)?;
    /// assert_eq!(tuned.source, TuneSource::Measured);
    ///
    /// let mut out = device.alloc_zeroed::<u32>(3000)?;
    /// tuned.prepared.run(&keys, &mut out, &mut SortWorkspace::new(&device)?)?;
    /// let mut want = xs.clone();
    /// want.sort();
    /// assert_eq!(out.to_vec()?, want);
    ///
    /// // The next tune (in this process or another) reads the winner back.
    /// let again = sort.tune(&tuner, &keys, &space)?;
    /// assert_eq!((again.source, again.prepared.tile_items()), (TuneSource::Stored, tuned.prepared.tile_items()));
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn tune(
        &self,
        tuner: &Tuner,
        keys: &Buffer<K>,
        space: &[Tuning],
    ) -> Result<Tuned<PreparedRadixSort<K>>, Error> {
        self.tune_with::<u8>(tuner, keys, None, space)
    }
}

impl<K: SortKey, V: DeviceElement> DeviceRadixSort<K, V> {
    /// A tuner for this sort of pairs on `device`: its kernel family names the key and value
    /// types, the order and the bit range (see [`DeviceScan::tuner`]).
    pub fn tuner(&self, device: &Device) -> Result<Tuner, Error> {
        Ok(Tuner::new(device, self.family(Some(V::DTYPE))))
    }

    /// Picks the fastest of `space` ([`sort_tuning_space`] when empty) for sorting `keys`
    /// with `values` (as many) with `tuner`, and prepares the sort with it; as
    /// [`DeviceRadixSort::tune`] for keys otherwise (keys and values both checked).
    ///
    /// ```
    /// use coopgraph::algorithms::{DeviceRadixSort, SortWorkspace, Tuning};
    /// use coopgraph::runtime::{Bench, Device};
    ///
    /// let device = Device::sim();
    /// let xs: Vec<u16> = (0..2000u32).map(|i| (i.wrapping_mul(40_503) >> 3) as u16).collect();
    /// let positions: Vec<u32> = (0..2000).collect();
    /// let (keys, values) = (device.upload(&xs)?, device.upload(&positions)?);
    /// let sort = DeviceRadixSort::pairs::<u16, u32>();
    /// let space = [Tuning { threads: 64, items: 3 }, Tuning { threads: 96, items: 2 }];
    /// let tuner = sort.tuner(&device)?.with_bench(Bench::ms(0, 1));
    /// let tuned = sort.tune(&tuner, &keys, &values, &space)?;
    ///
    /// let (mut k, mut v) = (device.alloc_zeroed::<u16>(2000)?, device.alloc_zeroed::<u32>(2000)?);
    /// tuned.prepared.run(&keys, &mut k, &values, &mut v, &mut SortWorkspace::new(&device)?)?;
    /// let (k, v) = (k.to_vec()?, v.to_vec()?);
    /// assert!(k.windows(2).all(|w| w[0] <= w[1]));
    /// assert!(v.iter().zip(&k).all(|(&p, &key)| xs[p as usize] == key));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn tune(
        &self,
        tuner: &Tuner,
        keys: &Buffer<K>,
        values: &Buffer<V>,
        space: &[Tuning],
    ) -> Result<Tuned<PreparedRadixSort<K, V>>, Error> {
        self.tune_with::<V>(tuner, keys, Some(values), space)
    }
}

/// The tuning problem of a radix sort: the keys (and values) in, buffers out, a workspace,
/// and each candidate's prepared sort (loaded when it first runs, so that its timed runs
/// launch kernels only).
struct SortWork<'a, K: SortKey, V, W: DeviceElement> {
    sort: &'a DeviceRadixSort<K, V>,
    device: Device,
    keys: &'a Buffer<K>,
    out: Buffer<K>,
    values: Option<(&'a Buffer<W>, Buffer<W>)>,
    ws: SortWorkspace,
    prepared: Vec<(Tuning, PreparedRadixSort<K, V>)>,
}

impl<K: SortKey, V, W: DeviceElement> Workload<Tuning> for SortWork<'_, K, V, W> {
    /// The sorted keys' and values' bits (floats compared by their bits: NaNs too).
    type Output = (Vec<u64>, Vec<u64>);
    type Error = Error;

    fn reset(&mut self) -> Result<(), Error> {
        self.out.write(&vec![K::default(); self.out.len()])?;
        if let Some((_, out)) = &mut self.values {
            out.write(&vec![W::default(); out.len()])?;
        }
        Ok(())
    }

    fn launch(&mut self, _first_pass: &Function, tuning: &Tuning) -> Result<(), Error> {
        let at = match self.prepared.iter().position(|(t, _)| t == tuning) {
            Some(at) => at,
            None => {
                let pairs = self.values.is_some();
                let sort = self.sort.clone().tuning(*tuning);
                let prepared = sort.load::<W, V>(&self.device, pairs)?;
                self.prepared.push((*tuning, prepared));
                self.prepared.len() - 1
            }
        };
        let values = self.values.as_mut().map(|(vi, vo)| (*vi, vo));
        self.prepared[at]
            .1
            .sort::<W>(self.keys, &mut self.out, values, &mut self.ws)
    }

    fn output(&mut self) -> Result<(Vec<u64>, Vec<u64>), Error> {
        let n = self.keys.len();
        let keys = self.out.to_vec()?[..n]
            .iter()
            .map(|k| k.to_bits())
            .collect();
        let values = match &self.values {
            Some((_, out)) => out.to_vec()?[..n].iter().map(|v| v.to_bits()).collect(),
            None => Vec::new(),
        };
        Ok((keys, values))
    }
}

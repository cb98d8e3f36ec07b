//! The device-wide algorithms over data spread across the ranks of a communicator: rank `r`
//! holds slice `r` (any length, none included) and the whole is the slices in rank order.

use super::kernels::{Operand, combine, launch_combine, run_split, split};
use super::{CommElement, Communicator, ReduceOp, check_ranks};
use crate::Error;
use crate::algorithms::{
    DeviceRadixSort, DeviceReduce, DeviceScan, Op, SortKey, SortWorkspace, Workspace,
};
use crate::runtime::{Buffer, Device};

/// The reduction with `op` of every element of every rank (`None` when all are empty): each
/// rank reduces its slice on its device ([`algorithms::reduce`](crate::algorithms::reduce)'s
/// kernels; a rank of no elements contributes the [identity](CommElement::identity)), then
/// the partials are all-reduced. The same bits on every run: each rank's order is the
/// device-wide reduction's and the ranks' the communicator's.
///
/// ```
/// use coopgraph::multi::{self, Communicator, ReduceOp, SimCommunicator};
///
/// let comm = SimCommunicator::new(2)?;
/// let x = vec![comm.device(0).upload(&[3i32, -7])?, comm.device(1).upload(&[5i32])?];
/// assert_eq!(multi::reduce(&comm, &x, ReduceOp::Min)?, Some(-7));
/// assert_eq!(multi::reduce(&comm, &x, ReduceOp::Prod)?, Some(-105));
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub fn reduce<C: Communicator, T: CommElement>(
    comm: &C,
    x: &[Buffer<T>],
    op: ReduceOp,
) -> Result<Option<T>, Error> {
    check_ranks(comm.devices(), x)?;
    if x.iter().all(Buffer::is_empty) {
        return Ok(None);
    }
    let local = DeviceReduce::new(op.op::<T>());
    let mut partials = Vec::with_capacity(x.len());
    for (d, xs) in comm.devices().iter().zip(x) {
        let mut p = d.upload(&[T::identity(op)])?;
        local
            .prepare(d)?
            .run_into(xs, &mut p, &mut Workspace::new(d)?)?;
        partials.push(p);
    }
    comm.all_reduce(&mut partials, op)?;
    Ok(partials[0].to_vec()?.first().copied())
}

/// The inclusive sum across ranks: `y[r][i]` = the sum of every element of the ranks before
/// `r` and of `x[r][0..=i]` (wrapping for integers). Each rank scans its slice on its
/// device, the ranks' totals are all-gathered, and each rank adds the sum of the totals
/// before it (an exclusive scan of the gathered totals, on its device) with a small map
/// kernel. `y[r]` may be longer than `x[r]` (its tail is left alone). Floats: the same bits
/// on every run; the carry of rank `r` is the scan of the totals, each total as
/// [`algorithms::reduce`](crate::algorithms::reduce) sums it.
///
/// ```
/// use coopgraph::multi::{self, Communicator, SimCommunicator};
///
/// let comm = SimCommunicator::new(3)?;
/// let x = vec![
///     comm.device(0).upload(&[1u32, 2])?,
///     comm.device(1).upload(&[])?,
///     comm.device(2).upload(&[3u32, 4])?,
/// ];
/// let mut y: Vec<_> = x.iter().enumerate()
///     .map(|(r, b)| comm.device(r).alloc_zeroed::<u32>(b.len()))
///     .collect::<Result<_, _>>()?;
/// multi::inclusive_scan(&comm, &x, &mut y)?;
/// assert_eq!((y[0].to_vec()?, y[2].to_vec()?), (vec![1, 3], vec![6, 10]));
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub fn inclusive_scan<C: Communicator, T: CommElement>(
    comm: &C,
    x: &[Buffer<T>],
    y: &mut [Buffer<T>],
) -> Result<(), Error> {
    scan_with_carry(comm, x, y, DeviceScan::inclusive(Op::sum()))
}

/// The exclusive sum across ranks from `initial`: `y[r][i]` = `initial` + the sum of every
/// element of the ranks before `r` and of `x[r][0..i]`; as [`inclusive_scan`] otherwise (the
/// local scan starts from `initial`, the carry is added after).
///
/// ```
/// use coopgraph::multi::{self, Communicator, SimCommunicator};
///
/// let comm = SimCommunicator::new(2)?;
/// let x = vec![comm.device(0).upload(&[1.0f64, 2.0])?, comm.device(1).upload(&[4.0f64])?];
/// let mut y = vec![comm.device(0).alloc_zeroed::<f64>(2)?, comm.device(1).alloc_zeroed(1)?];
/// multi::exclusive_scan(&comm, &x, &mut y, 10.0)?;
/// assert_eq!((y[0].to_vec()?, y[1].to_vec()?), (vec![10.0, 11.0], vec![13.0]));
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub fn exclusive_scan<C: Communicator, T: CommElement>(
    comm: &C,
    x: &[Buffer<T>],
    y: &mut [Buffer<T>],
    initial: T,
) -> Result<(), Error> {
    scan_with_carry(comm, x, y, DeviceScan::exclusive(Op::sum(), initial))
}

/// Scans each rank's slice with `scan` (a sum) and adds the sum of the slices before it.
fn scan_with_carry<C: Communicator, T: CommElement>(
    comm: &C,
    x: &[Buffer<T>],
    y: &mut [Buffer<T>],
    scan: DeviceScan<T>,
) -> Result<(), Error> {
    let devices = comm.devices();
    check_ranks(devices, x)?;
    check_ranks(devices, y)?;
    let ranks = comm.ranks();
    let zero = T::identity(ReduceOp::Sum);
    let total = DeviceReduce::new(Op::sum());
    let mut totals = Vec::with_capacity(ranks);
    for (r, d) in devices.iter().enumerate() {
        let mut ws = Workspace::new(d)?;
        scan.prepare(d)?.run(&x[r], &mut y[r], &mut ws)?;
        let mut t = d.upload(&[zero])?;
        total.prepare(d)?.run_into(&x[r], &mut t, &mut ws)?;
        totals.push(t);
    }
    if ranks == 1 {
        return Ok(());
    }
    let mut gathered = devices
        .iter()
        .map(|d| d.alloc_zeroed::<T>(ranks))
        .collect::<Result<Vec<_>, _>>()?;
    comm.all_gather(&totals, &mut gathered)?;
    let carries = DeviceScan::exclusive(Op::sum(), zero);
    let add = combine::<T>(ReduceOp::Sum)?;
    for (r, d) in devices.iter().enumerate() {
        let n = x[r].len();
        if r == 0 || n == 0 {
            continue;
        }
        let mut c = d.alloc_zeroed::<T>(ranks)?;
        carries
            .prepare(d)?
            .run(&gathered[r], &mut c, &mut Workspace::new(d)?)?;
        launch_combine(&d.compile(&add)?, &mut y[r], &c, n, Operand::One { at: r })?;
    }
    Ok(())
}

/// Sorts the keys of every rank across the ranks (sample sort): returns one sorted run per
/// rank, every key of run `r` at most (by the radix sort's order, see [`SortKey`]) every
/// key of run `r + 1`; the runs together hold the keys of all the ranks.
///
/// Each rank sorts its slice ([`radix_sort_keys`](crate::algorithms::radix_sort_keys)'s
/// kernels) and picks `ranks - 1` regular samples (the keys at `(j + 1) * n / ranks`);
/// the samples are all-gathered; every rank sorts those of the ranks that have keys and
/// takes the same `ranks - 1` splitters at regular places among them; a kernel finds each
/// splitter's upper bound in the rank's sorted keys by binary search; the counts go to the
/// host (the only data that does), the keys are exchanged by an all-to-all, and each rank
/// sorts what it received. Runs are balanced as the samples allow (regular sampling bounds a
/// run by about twice the average when keys are distinct); many equal keys go to one run.
///
/// ```
/// use coopgraph::multi::{self, Communicator, SimCommunicator};
///
/// let comm = SimCommunicator::new(2)?;
/// let keys = vec![
///     comm.device(0).upload(&[5.5f32, -1.0, 3.25])?,
///     comm.device(1).upload(&[0.5f32, 9.0, -4.0, 2.0])?,
/// ];
/// let runs = multi::sort_keys(&comm, &keys)?;
/// let all: Vec<f32> = [runs[0].to_vec()?, runs[1].to_vec()?].concat();
/// assert_eq!(all, [-4.0, -1.0, 0.5, 2.0, 3.25, 5.5, 9.0]);
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub fn sort_keys<C: Communicator, K: SortKey>(
    comm: &C,
    keys: &[Buffer<K>],
) -> Result<Vec<Buffer<K>>, Error> {
    let devices = comm.devices();
    check_ranks(devices, keys)?;
    let sorter = DeviceRadixSort::keys::<K>();
    let sort_on = |d: &Device, src: &Buffer<K>| -> Result<Buffer<K>, Error> {
        let mut out = d.alloc_zeroed::<K>(src.len())?;
        if !src.is_empty() {
            sorter
                .prepare(d)?
                .run(src, &mut out, &mut SortWorkspace::new(d)?)?;
        }
        Ok(out)
    };
    let local = devices
        .iter()
        .zip(keys)
        .map(|(d, k)| sort_on(d, k))
        .collect::<Result<Vec<_>, _>>()?;
    let p = comm.ranks();
    let lens: Vec<usize> = keys.iter().map(Buffer::len).collect();
    let full: Vec<usize> = (0..p).filter(|&r| lens[r] > 0).collect();
    if p == 1 || full.is_empty() {
        return Ok(local);
    }
    // Regular samples: `s` per rank (a rank of no keys sends zeros, dropped below).
    let s = p - 1;
    let mut samples = Vec::with_capacity(p);
    for (d, (run, &n)) in devices.iter().zip(local.iter().zip(&lens)) {
        let mut smp = d.alloc_zeroed::<K>(s)?;
        if n > 0 {
            for j in 0..s {
                let at = (j + 1) * n / p;
                smp.copy_range_from(j, run, at..at + 1)?;
            }
        }
        samples.push(smp);
    }
    let mut gathered = devices
        .iter()
        .map(|d| d.alloc_zeroed::<K>(p * s))
        .collect::<Result<Vec<_>, _>>()?;
    comm.all_gather(&samples, &mut gathered)?;
    // Every rank picks the same splitters and partitions its keys by them.
    let v = full.len() * s;
    let split_kernel = split::<K>()?;
    let mut counts = Vec::with_capacity(p);
    for (r, d) in devices.iter().enumerate() {
        let mut valid = d.alloc_zeroed::<K>(v)?;
        for (i, &q) in full.iter().enumerate() {
            valid.copy_range_from(i * s, &gathered[r], q * s..(q + 1) * s)?;
        }
        let sorted = sort_on(d, &valid)?;
        let mut splitters = d.alloc_zeroed::<K>(s)?;
        for j in 1..p {
            let at = j * v / p;
            splitters.copy_range_from(j - 1, &sorted, at..at + 1)?;
        }
        let bounds = run_split(d, &split_kernel, &local[r], &splitters)?;
        let mut row = Vec::with_capacity(p);
        let mut prev = 0;
        for dst in 0..p {
            let end = bounds.get(dst).copied().unwrap_or(lens[r]).max(prev);
            row.push(end - prev);
            prev = end;
        }
        counts.push(row);
    }
    let mut recv = devices
        .iter()
        .enumerate()
        .map(|(dst, d)| d.alloc_zeroed::<K>(counts.iter().map(|row| row[dst]).sum()))
        .collect::<Result<Vec<_>, _>>()?;
    comm.all_to_all(&local, &counts, &mut recv)?;
    devices
        .iter()
        .zip(&recv)
        .map(|(d, k)| sort_on(d, k))
        .collect()
}

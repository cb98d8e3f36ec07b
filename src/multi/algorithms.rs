//! The device-wide algorithms over data spread across the ranks of a communicator: rank `r`
//! holds slice `r` (any length, none included) and the whole is the slices in rank order.

use super::kernels::{Operand, combine, launch_combine, run_split, split};
use super::{CommElement, Communicator, ReduceOp, check_lengths, check_ranks};
use crate::Error;
use crate::algorithms::{
    DeviceRadixSort, DeviceReduce, DeviceScan, SortKey, SortWorkspace, Workspace,
};
use crate::runtime::{Buffer, Device, DeviceElement};

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
    inclusive_scan_with(comm, x, y, ReduceOp::Sum)
}

/// The inclusive scan across ranks with `op`: `y[r][i]` = the fold with `op` of every element
/// of the ranks before `r` and of `x[r][0..=i]`. As [`inclusive_scan`] otherwise: each rank
/// scans its slice with `op`, the ranks' totals (each a device-wide reduction with `op`) are
/// all-gathered, and each rank joins the fold of the totals before it to every element (every
/// [`ReduceOp`] is commutative, so joining the carry after the local scan is the same fold;
/// for floats, the same bits on every run, in this order).
///
/// ```
/// use coopgraph::multi::{self, Communicator, ReduceOp, SimCommunicator};
///
/// let comm = SimCommunicator::new(2)?;
/// let x = vec![comm.device(0).upload(&[3i32, 1, 4])?, comm.device(1).upload(&[1i32, 5, 0])?];
/// let mut y = vec![comm.device(0).alloc_zeroed::<i32>(3)?, comm.device(1).alloc_zeroed(3)?];
/// multi::inclusive_scan_with(&comm, &x, &mut y, ReduceOp::Max)?;
/// assert_eq!((y[0].to_vec()?, y[1].to_vec()?), (vec![3, 3, 4], vec![4, 5, 5]));
/// multi::inclusive_scan_with(&comm, &x, &mut y, ReduceOp::Min)?;
/// assert_eq!((y[0].to_vec()?, y[1].to_vec()?), (vec![3, 1, 1], vec![1, 1, 0]));
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub fn inclusive_scan_with<C: Communicator, T: CommElement>(
    comm: &C,
    x: &[Buffer<T>],
    y: &mut [Buffer<T>],
    op: ReduceOp,
) -> Result<(), Error> {
    scan_with_carry(comm, x, y, op, DeviceScan::inclusive(op.op()))
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
    exclusive_scan_with(comm, x, y, ReduceOp::Sum, initial)
}

/// The exclusive scan across ranks with `op` from `initial`: `y[r][i]` = the fold with `op`
/// of `initial`, every element of the ranks before `r` and `x[r][0..i]`; as
/// [`inclusive_scan_with`] otherwise (the local scan starts from `initial`, the carry is
/// joined after).
///
/// ```
/// use coopgraph::multi::{self, Communicator, ReduceOp, SimCommunicator};
///
/// let comm = SimCommunicator::new(3)?;
/// let x = vec![
///     comm.device(0).upload(&[2u64, 3])?,
///     comm.device(1).upload(&[])?,
///     comm.device(2).upload(&[5u64, 7])?,
/// ];
/// let mut y: Vec<_> = x.iter().enumerate()
///     .map(|(r, b)| comm.device(r).alloc_zeroed::<u64>(b.len()))
///     .collect::<Result<_, _>>()?;
/// multi::exclusive_scan_with(&comm, &x, &mut y, ReduceOp::Prod, 1)?;
/// assert_eq!((y[0].to_vec()?, y[2].to_vec()?), (vec![1, 2], vec![6, 30]));
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub fn exclusive_scan_with<C: Communicator, T: CommElement>(
    comm: &C,
    x: &[Buffer<T>],
    y: &mut [Buffer<T>],
    op: ReduceOp,
    initial: T,
) -> Result<(), Error> {
    scan_with_carry(comm, x, y, op, DeviceScan::exclusive(op.op(), initial))
}

/// Scans each rank's slice with `scan` (with `op`) and joins the fold with `op` of the slices
/// before it.
fn scan_with_carry<C: Communicator, T: CommElement>(
    comm: &C,
    x: &[Buffer<T>],
    y: &mut [Buffer<T>],
    op: ReduceOp,
    scan: DeviceScan<T>,
) -> Result<(), Error> {
    let devices = comm.devices();
    check_ranks(devices, x)?;
    check_ranks(devices, y)?;
    let ranks = comm.ranks();
    let zero = T::identity(op);
    let total = DeviceReduce::new(op.op::<T>());
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
    let carries = DeviceScan::exclusive(op.op::<T>(), zero);
    let add = combine::<T>(op)?;
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
    let Some(counts) = exchange_counts(comm, &local)? else {
        return Ok(local);
    };
    let received = exchange(comm, &local, &counts)?;
    devices
        .iter()
        .zip(&received)
        .map(|(d, k)| sort_on(d, k))
        .collect()
}

/// The runs of [`sort_pairs`]: the keys' runs and the values' runs, one buffer each per rank.
pub type PairRuns<K, V> = (Vec<Buffer<K>>, Vec<Buffer<V>>);

/// Sorts the pairs of every rank across the ranks by key (sample sort, as [`sort_keys`]):
/// `values[r]` holds one value per key of `keys[r]` (any element type), and each value moves
/// with its key through the local sorts and the all-to-all exchange. Returns the runs of keys
/// and the runs of values, one each per rank, run `r` of the keys at most run `r + 1`.
///
/// Stable: pairs of equal keys keep the order of the whole (rank by rank, each slice in
/// order), as every local sort is stable, the exchange keeps the order of the sending ranks,
/// and equal keys all go to one run. A rank whose values are not as many as its keys is
/// [`CommError::Length`](super::CommError::Length).
///
/// ```
/// use coopgraph::multi::{self, Communicator, SimCommunicator};
///
/// let comm = SimCommunicator::new(2)?;
/// let keys = vec![comm.device(0).upload(&[3u32, 1, 3])?, comm.device(1).upload(&[0u32, 1])?];
/// let values = vec![
///     comm.device(0).upload(&[10.5f64, 11.5, 12.5])?,
///     comm.device(1).upload(&[13.5f64, 14.5])?,
/// ];
/// let (k, v) = multi::sort_pairs(&comm, &keys, &values)?;
/// assert_eq!([k[0].to_vec()?, k[1].to_vec()?].concat(), [0, 1, 1, 3, 3]);
/// assert_eq!([v[0].to_vec()?, v[1].to_vec()?].concat(), [13.5, 11.5, 14.5, 10.5, 12.5]);
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub fn sort_pairs<C: Communicator, K: SortKey, V: DeviceElement>(
    comm: &C,
    keys: &[Buffer<K>],
    values: &[Buffer<V>],
) -> Result<PairRuns<K, V>, Error> {
    let devices = comm.devices();
    check_ranks(devices, keys)?;
    check_ranks(devices, values)?;
    check_lengths(values, |r| keys[r].len())?;
    let sorter = DeviceRadixSort::pairs::<K, V>();
    let sort_on = |d: &Device, k: &Buffer<K>, v: &Buffer<V>| {
        let mut out = (d.alloc_zeroed::<K>(k.len())?, d.alloc_zeroed::<V>(v.len())?);
        if !k.is_empty() {
            let mut ws = SortWorkspace::new(d)?;
            sorter
                .prepare(d)?
                .run(k, &mut out.0, v, &mut out.1, &mut ws)?;
        }
        Ok::<_, Error>(out)
    };
    let sort_all = |k: &[Buffer<K>], v: &[Buffer<V>]| {
        let mut out = (Vec::with_capacity(k.len()), Vec::with_capacity(k.len()));
        for (d, (k, v)) in devices.iter().zip(k.iter().zip(v)) {
            let (k, v) = sort_on(d, k, v)?;
            out.0.push(k);
            out.1.push(v);
        }
        Ok::<_, Error>(out)
    };
    let (local_keys, local_values) = sort_all(keys, values)?;
    let Some(counts) = exchange_counts(comm, &local_keys)? else {
        return Ok((local_keys, local_values));
    };
    let received_keys = exchange(comm, &local_keys, &counts)?;
    let received_values = exchange(comm, &local_values, &counts)?;
    sort_all(&received_keys, &received_values)
}

/// The counts of a sample sort's exchange (`counts[s][d]`: the keys rank `s` sends rank `d`)
/// from each rank's sorted keys, or `None` when nothing moves (one rank, or no keys at all).
///
/// Each rank picks `ranks - 1` regular samples of its sorted keys; the samples are
/// all-gathered; every rank sorts those of the ranks that have keys, takes the same
/// splitters at regular places among them, and finds each splitter's upper bound in its keys
/// (a binary search kernel); the bounds come to the host.
fn exchange_counts<C: Communicator, K: SortKey>(
    comm: &C,
    local: &[Buffer<K>],
) -> Result<Option<Vec<Vec<usize>>>, Error> {
    let devices = comm.devices();
    let p = comm.ranks();
    let lens: Vec<usize> = local.iter().map(Buffer::len).collect();
    let full: Vec<usize> = (0..p).filter(|&r| lens[r] > 0).collect();
    if p == 1 || full.is_empty() {
        return Ok(None);
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
    let sorter = DeviceRadixSort::keys::<K>();
    let mut counts = Vec::with_capacity(p);
    for (r, d) in devices.iter().enumerate() {
        let mut valid = d.alloc_zeroed::<K>(v)?;
        for (i, &q) in full.iter().enumerate() {
            valid.copy_range_from(i * s, &gathered[r], q * s..(q + 1) * s)?;
        }
        let mut sorted = d.alloc_zeroed::<K>(v)?;
        sorter
            .prepare(d)?
            .run(&valid, &mut sorted, &mut SortWorkspace::new(d)?)?;
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
    Ok(Some(counts))
}

/// The all-to-all of a sample sort: each rank's `send` goes out by `counts`, into new
/// buffers of exactly what each rank receives.
fn exchange<C: Communicator, T: DeviceElement>(
    comm: &C,
    send: &[Buffer<T>],
    counts: &[Vec<usize>],
) -> Result<Vec<Buffer<T>>, Error> {
    let mut recv = comm
        .devices()
        .iter()
        .enumerate()
        .map(|(dst, d)| d.alloc_zeroed::<T>(counts.iter().map(|row| row[dst]).sum()))
        .collect::<Result<Vec<_>, _>>()?;
    comm.all_to_all(send, counts, &mut recv)?;
    Ok(recv)
}

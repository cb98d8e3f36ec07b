//! The NCCL communicator (cargo feature `nccl`): one rank per GPU of this process, each
//! collective one NCCL group of the ranks' calls, on the ranks' buffers and the devices'
//! streams.
//!
//! The library is opened at run time through cudarc's NCCL bindings, after coopgraph has
//! checked itself (with the file name cudarc tries first, `libnccl.so`) that it opens and has
//! every entry point called here; so a machine without NCCL gets
//! [`CommError::NcclUnavailable`], never a panic from the loader. NCCL's own `libnccl.so.2`
//! (the library's soname, the only name the `nvidia-nccl` Python packages install) is not
//! among the names cudarc tries: a `libnccl.so` link to it in a directory on
//! `LD_LIBRARY_PATH` makes it loadable.
//!
//! Ordering: each call takes the buffers' device pointers through cudarc
//! (`device_ptr`/`device_ptr_mut` on the rank's stream: the stream waits for the buffer's
//! earlier writes, and the buffer's events are recorded after the NCCL group is issued), so
//! work queued before a collective on any stream of the device comes first and work queued
//! after it waits.

use std::ffi::{CStr, c_int, c_void};
use std::sync::{Arc, OnceLock};

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut, SyncOnDrop};
use cudarc::nccl::{result, sys};

use super::{
    CommElement, CommError, Communicator, ReduceOp, check_all_reduce, check_all_to_all,
    check_broadcast, check_parts,
};
use crate::Error;
use crate::ir::DType;
use crate::runtime::{Backend, Buffer, Device, DeviceElement, Foreign, RuntimeError};

/// The entry points the communicator calls (each checked once, before the first call).
const REQUIRED_SYMBOLS: &[&str] = &[
    "ncclGetErrorString",
    "ncclCommInitAll",
    "ncclCommDestroy",
    "ncclGroupStart",
    "ncclGroupEnd",
    "ncclAllReduce",
    "ncclAllGather",
    "ncclReduceScatter",
    "ncclBroadcast",
    "ncclSend",
    "ncclRecv",
];

/// The file name of the NCCL library that coopgraph checks: the first cudarc's loader tries
/// (so where it opens here, cudarc opens the same library).
fn library_name() -> String {
    use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
    format!("{DLL_PREFIX}nccl{DLL_SUFFIX}")
}

/// Checks, once per process, that the NCCL library opens and has every entry point the
/// communicator calls. Never panics.
fn ensure_nccl() -> Result<(), CommError> {
    static STATE: OnceLock<Result<(), CommError>> = OnceLock::new();
    STATE
        .get_or_init(|| {
            let name = library_name();
            // SAFETY: opening the library runs its initialisers, which touch no state of this
            // program; the handle is kept for the process (leaked), as cudarc keeps its own.
            let Ok(lib) = (unsafe { libloading::Library::new(&name) }) else {
                let tried = vec![name];
                return Err(CommError::NcclUnavailable {
                    tried,
                    missing: None,
                });
            };
            let lib: &'static libloading::Library = Box::leak(Box::new(lib));
            for &symbol in REQUIRED_SYMBOLS {
                // SAFETY: the symbol is only looked up, never called through this type.
                if unsafe { lib.get::<*const c_void>(symbol.as_bytes()) }.is_err() {
                    return Err(CommError::NcclUnavailable {
                        tried: vec![library_name()],
                        missing: Some(symbol),
                    });
                }
            }
            Ok(())
        })
        .clone()
}

/// A NCCL result as coopgraph's error: [`CommError::Nccl`] with NCCL's own description.
fn check(
    call: &'static str,
    r: Result<result::NcclStatus, result::NcclError>,
) -> Result<(), Error> {
    match r {
        Ok(_) => Ok(()),
        Err(result::NcclError(code)) => {
            // SAFETY: the library is loaded (a call just returned this code) and
            // `ncclGetErrorString` returns a static, NUL-terminated string for any code.
            let text = unsafe { CStr::from_ptr(sys::ncclGetErrorString(code)) };
            Err(CommError::Nccl {
                call,
                code: code as u32,
                message: text.to_string_lossy().into_owned(),
            }
            .into())
        }
    }
}

/// NCCL's type for reducing elements of `dtype` with `op`, or
/// [`CommError::NcclUnsupported`] where NCCL has none (16-bit integers).
pub(crate) fn nccl_type(dtype: DType, op: ReduceOp) -> Result<sys::ncclDataType_t, CommError> {
    use sys::ncclDataType_t as N;
    Ok(match dtype {
        DType::I8 => N::ncclInt8,
        DType::U8 => N::ncclUint8,
        DType::I32 => N::ncclInt32,
        DType::U32 => N::ncclUint32,
        DType::I64 => N::ncclInt64,
        DType::U64 => N::ncclUint64,
        DType::F32 => N::ncclFloat32,
        DType::F64 => N::ncclFloat64,
        DType::I16 | DType::U16 => return Err(CommError::NcclUnsupported { dtype, op }),
    })
}

/// NCCL's reduction operator for `op`.
pub(crate) fn nccl_op(op: ReduceOp) -> sys::ncclRedOp_t {
    match op {
        ReduceOp::Sum => sys::ncclRedOp_t::ncclSum,
        ReduceOp::Prod => sys::ncclRedOp_t::ncclProd,
        ReduceOp::Min => sys::ncclRedOp_t::ncclMin,
        ReduceOp::Max => sys::ncclRedOp_t::ncclMax,
    }
}

/// A rank, an ordinal or a root as NCCL's `int`: each is below the driver's device count,
/// itself an `int`.
fn c_int_of(v: usize) -> c_int {
    c_int::try_from(v).unwrap_or(c_int::MAX)
}

/// The stream as the CUDA runtime type NCCL takes (the driver's `CUstream` is the same
/// handle).
fn raw(stream: &CudaStream) -> sys::cudaStream_t {
    stream.cu_stream() as sys::cudaStream_t
}

/// An open NCCL group: ended by [`Group::end`], or on drop where an error left it early (the
/// calls queued so far are then issued; their error is the one already returned).
struct Group;

impl Group {
    fn start() -> Result<Group, Error> {
        check("ncclGroupStart", result::group_start())?;
        Ok(Group)
    }

    fn end(self) -> Result<(), Error> {
        std::mem::forget(self);
        check("ncclGroupEnd", result::group_end())
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        let _ = result::group_end();
    }
}

/// The cudarc slice of rank `rank`'s buffer (on a GPU, as the communicator checked).
fn slice<T: DeviceElement>(b: &Buffer<T>, rank: usize) -> Result<&CudaSlice<T>, Error> {
    b.as_cuda().ok_or_else(|| not_on_rank(rank))
}

/// The cudarc slice of rank `rank`'s buffer, to write.
fn slice_mut<T: DeviceElement>(b: &mut Buffer<T>, rank: usize) -> Result<&mut CudaSlice<T>, Error> {
    b.as_cuda_mut().ok_or_else(|| not_on_rank(rank))
}

fn not_on_rank(rank: usize) -> Error {
    let what = Foreign::RankBuffer { rank };
    RuntimeError::WrongDevice { what }.into()
}

/// Byte `at` of a device pointer, as NCCL's receive pointer.
fn at_mut(ptr: u64, at: usize) -> *mut c_void {
    (ptr as usize + at) as *mut c_void
}

/// Byte `at` of a device pointer, as NCCL's send pointer.
fn at(ptr: u64, at: usize) -> *const c_void {
    at_mut(ptr, at) as *const c_void
}

/// A communicator of one rank per GPU of this process, over NCCL (cargo feature `nccl`):
/// rank `r` is `devices[r]`, each collective is one NCCL group (`ncclGroupStart`, one call per
/// rank on that rank's device stream, `ncclGroupEnd`), and the communicators are destroyed
/// on drop.
///
/// Reductions (all-reduce, reduce-scatter) map [`ReduceOp`] to NCCL's operator and the element
/// type to NCCL's; data movement (all-gather, broadcast, all-to-all by grouped
/// `ncclSend`/`ncclRecv`) moves bytes, so any [`DeviceElement`] travels. NCCL chooses its
/// algorithm (ring, tree) and so the order in which floats are folded: float sums may differ
/// from [`SimCommunicator`](super::SimCommunicator)'s in the last bits, and NCCL's order
/// decides what `Min`/`Max` give for NaN.
///
/// ```
/// use coopgraph::multi::{CommError, Communicator, NcclCommunicator, ReduceOp};
/// use coopgraph::runtime::Device;
/// use coopgraph::Error;
///
/// // NCCL runs on GPUs: simulated devices are refused.
/// let e = NcclCommunicator::new(Device::sim_group(2)).unwrap_err();
/// assert!(matches!(e, Error::Comm(CommError::NotCuda { rank: 0 })));
/// if let Ok(gpus) = Device::all()
///     && !gpus.is_empty()
/// {
///     match NcclCommunicator::new(gpus) {
///         Ok(comm) => {
///             let mut x = (0..comm.ranks())
///                 .map(|r| comm.device(r).upload(&[r as u32 + 1, 10]))
///                 .collect::<Result<Vec<_>, _>>()?;
///             comm.all_reduce(&mut x, ReduceOp::Max)?;
///             assert_eq!(x[0].to_vec()?, [comm.ranks() as u32, 10]);
///         }
///         // No `libnccl.so` on this machine.
///         Err(Error::Comm(CommError::NcclUnavailable { .. })) => {}
///         Err(e) => return Err(e),
///     }
/// }
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub struct NcclCommunicator {
    devices: Vec<Device>,
    streams: Vec<Arc<CudaStream>>,
    comms: Vec<sys::ncclComm_t>,
}

impl std::fmt::Debug for NcclCommunicator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NcclCommunicator")
            .field("devices", &self.devices)
            .finish_non_exhaustive()
    }
}

impl NcclCommunicator {
    /// A communicator whose rank `r` runs on `devices[r]` (`ncclCommInitAll` over their
    /// ordinals). Each device must be a distinct CUDA GPU opened on its primary context
    /// ([`Device::cuda`], [`Device::all`]). Refused, before NCCL is loaded: no devices
    /// ([`CommError::NoRanks`]), a simulator ([`CommError::NotCuda`]), one GPU twice
    /// ([`CommError::SharedDevice`]). Then a missing library is
    /// [`CommError::NcclUnavailable`] and a failing initialisation [`CommError::Nccl`].
    pub fn new(devices: Vec<Device>) -> Result<NcclCommunicator, Error> {
        if devices.is_empty() {
            return Err(CommError::NoRanks.into());
        }
        let mut ordinals: Vec<usize> = Vec::with_capacity(devices.len());
        let mut streams = Vec::with_capacity(devices.len());
        for (rank, d) in devices.iter().enumerate() {
            let (Backend::Cuda { ordinal, .. }, Some(stream)) = (d.backend(), d.cuda_stream())
            else {
                return Err(CommError::NotCuda { rank }.into());
            };
            if let Some(first) = ordinals.iter().position(|o| o == ordinal) {
                return Err(CommError::SharedDevice { rank, first }.into());
            }
            ordinals.push(*ordinal);
            streams.push(stream.clone());
        }
        ensure_nccl()?;
        let list: Vec<c_int> = ordinals.into_iter().map(c_int_of).collect();
        let mut comms = vec![std::ptr::null_mut(); list.len()];
        // SAFETY: the library has `ncclCommInitAll` (checked above); `comms` has one slot per
        // ordinal of `list`, which holds distinct devices of this machine.
        let init = unsafe {
            result::comm_init_all(comms.as_mut_ptr(), c_int_of(list.len()), list.as_ptr())
        };
        check("ncclCommInitAll", init)?;
        Ok(NcclCommunicator {
            devices,
            streams,
            comms,
        })
    }

    /// Rank `r`'s stream and communicator.
    fn rank(&self, r: usize) -> (&CudaStream, sys::ncclComm_t) {
        (&self.streams[r], self.comms[r])
    }
}

impl Drop for NcclCommunicator {
    fn drop(&mut self) {
        // Errors cannot be reported from here; a failed wait leaves the destroy to NCCL.
        for s in &self.streams {
            let _ = s.synchronize();
        }
        for &c in &self.comms {
            // SAFETY: each handle came from `ncclCommInitAll` and is destroyed once, here.
            let _ = unsafe { result::comm_destroy(c) };
        }
    }
}

/// One NCCL call of a rank: its send and receive pointers (the same in place), its comm and
/// stream.
type RankCall<'f> = dyn Fn(
        *const c_void,
        *mut c_void,
        sys::ncclComm_t,
        sys::cudaStream_t,
    ) -> Result<result::NcclStatus, result::NcclError>
    + 'f;

impl NcclCommunicator {
    /// One NCCL group of `call` on every rank's buffer, in place (`bufs` checked: one per
    /// rank, on its device).
    fn in_place<T: DeviceElement>(
        &self,
        bufs: &mut [Buffer<T>],
        name: &'static str,
        call: &RankCall<'_>,
    ) -> Result<(), Error> {
        let mut recorded: Vec<SyncOnDrop<'_>> = Vec::with_capacity(bufs.len());
        let group = Group::start()?;
        for (r, b) in bufs.iter_mut().enumerate() {
            let (stream, comm) = self.rank(r);
            let (ptr, record) = slice_mut(b, r)?.device_ptr_mut(stream);
            recorded.push(record);
            check(name, call(at(ptr, 0), at_mut(ptr, 0), comm, raw(stream)))?;
        }
        group.end()
    }

    /// One NCCL group of `call` from every rank's `send` to its `recv` (both checked).
    fn send_recv<T: DeviceElement>(
        &self,
        send: &[Buffer<T>],
        recv: &mut [Buffer<T>],
        name: &'static str,
        call: &RankCall<'_>,
    ) -> Result<(), Error> {
        let mut recorded = Vec::with_capacity(2 * send.len());
        let group = Group::start()?;
        for (r, (s, d)) in send.iter().zip(recv.iter_mut()).enumerate() {
            let (stream, comm) = self.rank(r);
            let (from, read) = slice(s, r)?.device_ptr(stream);
            let (to, write) = slice_mut(d, r)?.device_ptr_mut(stream);
            recorded.extend([read, write]);
            check(name, call(at(from, 0), at_mut(to, 0), comm, raw(stream)))?;
        }
        group.end()
    }
}

impl Communicator for NcclCommunicator {
    fn ranks(&self) -> usize {
        self.devices.len()
    }

    fn devices(&self) -> &[Device] {
        &self.devices
    }

    fn all_reduce<T: CommElement>(
        &self,
        bufs: &mut [Buffer<T>],
        op: ReduceOp,
    ) -> Result<(), Error> {
        let n = check_all_reduce(&self.devices, bufs)?;
        let dtype = nccl_type(T::DTYPE, op)?;
        if n == 0 {
            return Ok(());
        }
        self.in_place(bufs, "ncclAllReduce", &|from, to, comm, stream| {
            // SAFETY: each rank's buffer holds `n` elements of `dtype` on its device
            // (checked), reduced in place; the comm and stream are the rank's.
            unsafe { result::all_reduce(from, to, n, dtype, nccl_op(op), comm, stream) }
        })
    }

    fn all_gather<T: DeviceElement>(
        &self,
        send: &[Buffer<T>],
        recv: &mut [Buffer<T>],
    ) -> Result<(), Error> {
        let m = check_parts(&self.devices, send, recv)?;
        if m == 0 {
            return Ok(());
        }
        let bytes = m * size_of::<T>();
        self.send_recv(send, recv, "ncclAllGather", &|from, to, comm, stream| {
            // SAFETY: each rank's send buffer holds `bytes` bytes and its receive buffer
            // `ranks` times as many, both on its device (checked); the comm and stream are
            // the rank's.
            unsafe { result::all_gather(from, to, bytes, BYTES, comm, stream) }
        })
    }

    fn reduce_scatter<T: CommElement>(
        &self,
        send: &[Buffer<T>],
        recv: &mut [Buffer<T>],
        op: ReduceOp,
    ) -> Result<(), Error> {
        let m = check_parts(&self.devices, recv, send)?;
        let dtype = nccl_type(T::DTYPE, op)?;
        if m == 0 {
            return Ok(());
        }
        self.send_recv(
            send,
            recv,
            "ncclReduceScatter",
            &|from, to, comm, stream| {
                // SAFETY: each rank's receive buffer holds `m` elements of `dtype` and its send
                // buffer `ranks` times as many, both on its device (checked); the comm and
                // stream are the rank's.
                unsafe { result::reduce_scatter(from, to, m, dtype, nccl_op(op), comm, stream) }
            },
        )
    }

    fn broadcast<T: DeviceElement>(
        &self,
        bufs: &mut [Buffer<T>],
        root: usize,
    ) -> Result<(), Error> {
        let n = check_broadcast(&self.devices, bufs, root)?;
        if n == 0 {
            return Ok(());
        }
        let (bytes, root) = (n * size_of::<T>(), c_int_of(root));
        self.in_place(bufs, "ncclBroadcast", &|from, to, comm, stream| {
            // SAFETY: each rank's buffer holds `bytes` bytes on its device (checked), in
            // place; `root` is a rank; the comm and stream are the rank's.
            unsafe { result::broadcast(from, to, bytes, BYTES, root, comm, stream) }
        })
    }

    fn all_to_all<T: DeviceElement>(
        &self,
        send: &[Buffer<T>],
        counts: &[Vec<usize>],
        recv: &mut [Buffer<T>],
    ) -> Result<Vec<usize>, Error> {
        let received = check_all_to_all(&self.devices, send, counts, recv)?;
        let size = size_of::<T>();
        let mut recorded = Vec::with_capacity(2 * send.len());
        let group = Group::start()?;
        for (s, (b, row)) in send.iter().zip(counts).enumerate() {
            let (stream, comm) = self.rank(s);
            let (from, read) = slice(b, s)?.device_ptr(stream);
            recorded.push(read);
            let mut offset = 0;
            for (d, &c) in row.iter().enumerate().filter(|&(_, &c)| c > 0) {
                let (ptr, peer) = (at(from, offset * size), c_int_of(d));
                // SAFETY: elements `offset..offset + c` lie in rank `s`'s send buffer (the
                // counts were checked against it); the comm and stream are rank `s`'s.
                let call = unsafe { result::send(ptr, c * size, BYTES, peer, comm, raw(stream)) };
                check("ncclSend", call)?;
                offset += c;
            }
        }
        for (d, b) in recv.iter_mut().enumerate() {
            let (stream, comm) = self.rank(d);
            let (to, write) = slice_mut(b, d)?.device_ptr_mut(stream);
            recorded.push(write);
            let mut offset = 0;
            for (s, c) in counts
                .iter()
                .map(|row| row[d])
                .enumerate()
                .filter(|&(_, c)| c > 0)
            {
                let (ptr, peer) = (at_mut(to, offset * size), c_int_of(s));
                // SAFETY: elements `offset..offset + c` lie in rank `d`'s receive buffer (it
                // holds what every rank sends it, checked); the comm and stream are rank `d`'s.
                let call = unsafe { result::recv(ptr, c * size, BYTES, peer, comm, raw(stream)) };
                check("ncclRecv", call)?;
                offset += c;
            }
        }
        group.end()?;
        Ok(received)
    }
}

/// Data movement goes as bytes: every element type travels.
const BYTES: sys::ncclDataType_t = sys::ncclDataType_t::ncclUint8;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Element;

    /// Every element type collectives reduce has a NCCL type of its size for every operator;
    /// 16-bit integers, which NCCL cannot reduce, are refused with a typed error.
    #[test]
    fn every_dtype_maps_or_is_refused() {
        use sys::ncclDataType_t as N;
        let size = |t: N| -> u32 {
            match t {
                N::ncclInt8 | N::ncclUint8 => 1,
                N::ncclInt32 | N::ncclUint32 | N::ncclFloat32 => 4,
                N::ncclInt64 | N::ncclUint64 | N::ncclFloat64 => 8,
                other => panic!("{other:?}"),
            }
        };
        let reduced = [
            DType::U32,
            DType::I32,
            DType::U64,
            DType::I64,
            DType::F32,
            DType::F64,
        ];
        for dtype in DType::ALL {
            for op in [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max] {
                match nccl_type(dtype, op) {
                    Ok(t) => assert_eq!(size(t), dtype.bytes(), "{dtype} {op:?}"),
                    Err(e) => {
                        assert!(!reduced.contains(&dtype), "{dtype} {op:?}");
                        assert_eq!(e, CommError::NcclUnsupported { dtype, op });
                    }
                }
            }
        }
        for t in [
            u32::DTYPE,
            i32::DTYPE,
            u64::DTYPE,
            i64::DTYPE,
            f32::DTYPE,
            f64::DTYPE,
        ] {
            assert!(reduced.contains(&t));
        }
        assert!(nccl_type(DType::U16, ReduceOp::Max).is_err());
        assert_eq!(nccl_op(ReduceOp::Min), sys::ncclRedOp_t::ncclMin);
        assert_eq!(nccl_op(ReduceOp::Prod), sys::ncclRedOp_t::ncclProd);
    }
}

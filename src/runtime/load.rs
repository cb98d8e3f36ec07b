//! Module loading: PTX text to a launchable entry, on either backend.
//!
//! On CUDA the PTX goes through `cuModuleLoadDataEx` with error and info log buffers, so a JIT
//! failure comes back as [`RuntimeError::Jit`] carrying the assembler's own words and the PTX
//! (cudarc's `load_module` would keep only the error code). Kernels that need more than 48 KiB
//! of dynamic shared memory get the opt-in attribute; kernels that need more than the device
//! offers are rejected with [`RuntimeError::SharedMemory`] before any launch.
//!
//! On the simulator, loading is parsing: the simulator reads the same PTX text.

use std::ffi::{CString, c_void};
use std::sync::Arc;

use cudarc::driver::{CudaContext, DriverError, sys};

use super::RuntimeError;
use super::device::DeviceLimits;
use super::driver::CudaKernel;
use super::image::{KernelImage, ParamKind};
use crate::sim::{SimModule, Simulator};

/// Dynamic shared memory a kernel may use without the opt-in attribute.
pub(super) const DEFAULT_DYNAMIC_SMEM: u32 = 48 * 1024;

/// Bytes of each JIT log buffer.
const LOG_BYTES: usize = 64 * 1024;

/// Checks the image's shared memory against the device's per-block limit (with the opt-in).
pub(super) fn check_shared_memory(
    image: &KernelImage,
    dynamic_smem: u32,
    limits: &DeviceLimits,
) -> Result<(), RuntimeError> {
    let need = u64::from(image.static_smem) + u64::from(dynamic_smem);
    let limit = u64::from(limits.smem_per_block_optin);
    if need > limit {
        return Err(RuntimeError::SharedMemory { need, limit });
    }
    Ok(())
}

/// Loads `image` into `ctx` and looks up its entry. Returns the kernel and the JIT's info log
/// (register and spill counts, since the log is verbose).
pub(super) fn load_cuda(
    ctx: &Arc<CudaContext>,
    image: &KernelImage,
    limits: &DeviceLimits,
) -> Result<(CudaKernel, String), RuntimeError> {
    check_shared_memory(image, image.dynamic_smem, limits)?;
    let ptx = CString::new(image.ptx.as_str()).map_err(|e| RuntimeError::PtxNul {
        offset: e.nul_position(),
    })?;
    let entry = CString::new(image.entry.as_str()).map_err(|_| RuntimeError::MissingEntry {
        entry: image.entry.clone(),
    })?;
    ctx.bind_to_thread()
        .map_err(RuntimeError::driver("cuCtxSetCurrent"))?;

    let mut info_log = vec![0u8; LOG_BYTES];
    let mut error_log = vec![0u8; LOG_BYTES];
    let mut options = [
        sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER,
        sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        sys::CUjit_option::CU_JIT_LOG_VERBOSE,
    ];
    // Option values are pointer-sized: buffers as pointers, sizes and flags as integers cast
    // to pointers (the driver's convention). The size slots come back holding bytes written.
    let mut values: [*mut c_void; 5] = [
        info_log.as_mut_ptr().cast(),
        std::ptr::without_provenance_mut(LOG_BYTES),
        error_log.as_mut_ptr().cast(),
        std::ptr::without_provenance_mut(LOG_BYTES),
        std::ptr::without_provenance_mut(1),
    ];
    let mut module: sys::CUmodule = std::ptr::null_mut();
    // SAFETY: `ctx` is bound to this thread. `ptx` is a NUL-terminated PTX image that lives
    // through the call. `options` and `values` have the same length (passed as the count); each
    // log buffer is writable for the size given beside it, and both outlive the call (the
    // driver does not keep them). `module` is a valid out pointer.
    let status = unsafe {
        sys::cuModuleLoadDataEx(
            &mut module,
            ptx.as_ptr().cast(),
            options.len() as u32,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    };
    let info = log_text(&info_log, values[1].addr());
    if let Err(code) = status.result() {
        let error = log_text(&error_log, values[3].addr());
        let log = match (error.is_empty(), info.is_empty()) {
            (false, false) => format!("{error}\n{info}"),
            (false, true) => error,
            (true, _) => info,
        };
        return Err(RuntimeError::Jit {
            log,
            ptx: image.ptx.clone(),
            code,
        });
    }
    // From here the module is owned: dropping `kernel` on an error path unloads it.
    let mut kernel = CudaKernel {
        module,
        function: std::ptr::null_mut(),
        ctx: ctx.clone(),
    };
    // SAFETY: `module` was just loaded in the bound context; `entry` is NUL-terminated and
    // lives through the call; `kernel.function` is a valid out pointer.
    let status = unsafe { sys::cuModuleGetFunction(&mut kernel.function, module, entry.as_ptr()) };
    match status.result() {
        Ok(()) => {}
        Err(DriverError(sys::CUresult::CUDA_ERROR_NOT_FOUND)) => {
            return Err(RuntimeError::MissingEntry {
                entry: image.entry.clone(),
            });
        }
        Err(code) => {
            return Err(RuntimeError::Driver {
                call: "cuModuleGetFunction",
                code,
            });
        }
    }
    if let Some(declared) = kernel.param_sizes()? {
        check_signature(image, declared)?;
    }
    if image.dynamic_smem > DEFAULT_DYNAMIC_SMEM {
        kernel.set_max_dynamic_smem(image.dynamic_smem)?;
    }
    Ok((kernel, info))
}

/// Checks the parameter sizes the PTX declares against the image's signature: the launch
/// hands the driver one cell per signature parameter, sized by the signature.
fn check_signature(image: &KernelImage, declared: Vec<u32>) -> Result<(), RuntimeError> {
    let expected: Vec<u32> = image
        .params
        .iter()
        .map(|p| match p.kind {
            ParamKind::Input | ParamKind::Output => 8,
            ParamKind::Scalar => p.dtype.bytes(),
        })
        .collect();
    if declared != expected {
        return Err(RuntimeError::SignatureMismatch {
            entry: image.entry.clone(),
            declared,
            expected,
        });
    }
    Ok(())
}

/// The text the driver wrote into a log buffer: at most `written` bytes, up to the first NUL.
fn log_text(buffer: &[u8], written: usize) -> String {
    let bytes = &buffer[..written.min(buffer.len())];
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end])
        .trim_end()
        .to_string()
}

/// "Loads" `image` on the simulator: parses and decodes its PTX, and looks for its entry.
pub(super) fn load_sim(
    sim: &Simulator,
    image: &KernelImage,
    limits: &DeviceLimits,
) -> Result<SimModule, RuntimeError> {
    check_shared_memory(image, image.dynamic_smem, limits)?;
    let module = sim.load_module(&image.ptx)?;
    let Some(function) = module
        .module()
        .functions
        .iter()
        .find(|f| f.name == image.entry)
    else {
        return Err(RuntimeError::MissingEntry {
            entry: image.entry.clone(),
        });
    };
    check_signature(
        image,
        function.params.iter().map(|p| p.ty.bytes()).collect(),
    )?;
    Ok(module)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::Arch;

    #[test]
    fn log_text_stops_at_nul_and_written_count() {
        assert_eq!(log_text(b"ptxas error\0junk", 100), "ptxas error");
        assert_eq!(log_text(b"abcdef", 3), "abc");
        assert_eq!(log_text(b"line\n\n\0", 7), "line");
        assert_eq!(log_text(b"", 0), "");
    }

    #[test]
    fn signature_sizes() {
        use crate::ir::DType;
        use crate::runtime::ParamSig;
        let mut image = KernelImage {
            entry: "k".into(),
            ptx: String::new(),
            arch: Arch::Sm90,
            params: vec![
                ParamSig::new("x", ParamKind::Input, DType::F64),
                ParamSig::new("a", ParamKind::Scalar, DType::I8),
                ParamSig::new("b", ParamKind::Scalar, DType::F32),
            ],
            block: [32, 1, 1],
            tile_elems: 32,
            static_smem: 0,
            dynamic_smem: 0,
            needs_cooperative: false,
        };
        assert!(check_signature(&image, vec![8, 1, 4]).is_ok());
        assert!(matches!(
            check_signature(&image, vec![8, 1]),
            Err(RuntimeError::SignatureMismatch { .. })
        ));
        image.params[2].dtype = DType::F64;
        match check_signature(&image, vec![8, 1, 4]) {
            Err(RuntimeError::SignatureMismatch { expected, .. }) => {
                assert_eq!(expected, vec![8, 1, 8])
            }
            other => panic!("expected SignatureMismatch, got {other:?}"),
        }
    }

    #[test]
    fn shared_memory_over_the_limit_is_rejected() {
        let limits = DeviceLimits::simulated(Arch::Sm90);
        let image = KernelImage {
            entry: "k".into(),
            ptx: String::new(),
            arch: Arch::Sm90,
            params: vec![],
            block: [128, 1, 1],
            tile_elems: 128,
            static_smem: 1024,
            dynamic_smem: limits.smem_per_block_optin,
            needs_cooperative: false,
        };
        match check_shared_memory(&image, image.dynamic_smem, &limits) {
            Err(RuntimeError::SharedMemory { need, limit }) => {
                assert_eq!(need, u64::from(limits.smem_per_block_optin) + 1024);
                assert_eq!(limit, u64::from(limits.smem_per_block_optin));
            }
            other => panic!("expected SharedMemory, got {other:?}"),
        }
        assert!(check_shared_memory(&image, 0, &limits).is_ok());
    }
}

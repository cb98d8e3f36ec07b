//! Module loading: PTX text to a launchable entry, on either backend.
//!
//! On CUDA the PTX goes through `cuModuleLoadDataEx` with error and info log buffers, so a JIT
//! failure comes back as [`RuntimeError::Jit`] carrying the assembler's own words and the PTX
//! (cudarc's `load_module` would keep only the error code). Kernels that need more than 48 KiB
//! of dynamic shared memory get the opt-in attribute; kernels that need more than the device
//! offers are rejected with [`RuntimeError::SharedMemory`] before any launch.
//!
//! With a disk cache ([`DiskCache`]) and a `ptxas` (see `ptxas.rs`), `ptxas` assembles the PTX
//! to a cubin for the context's device, which is loaded and stored; the next process finds it
//! and loads it with `cuModuleLoadDataEx`, skipping the JIT. Not the driver's linker: it
//! compiles PTX as relocatable code, with more registers than the JIT gives the same PTX.
//! Without a `ptxas` the PTX goes to the JIT as without a disk cache (the driver's own cache
//! of JIT results then serves the next process).
//!
//! On the simulator, loading is parsing: the simulator reads the same PTX text.

use std::ffi::{CStr, CString, c_void};
use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::{CudaContext, DriverError, sys};

use super::RuntimeError;
use super::device::DeviceLimits;
use super::disk_cache::{DiskCache, Origin, load_or_build};
use super::driver::CudaKernel;
use super::image::{KernelImage, ParamLayout};
use super::ptxas::Ptxas;
use crate::sim::SimModule;

/// Shared memory (static and dynamic together) a block may use without the opt-in attribute.
const DEFAULT_SMEM: u32 = 48 * 1024;

/// The dynamic shared memory an entry with `static_smem` static bytes may take at launch
/// before its `MAX_DYNAMIC_SHARED_SIZE_BYTES` attribute is raised: the driver's default is what
/// is left of 48 KiB after the static part, not 48 KiB.
pub(super) fn default_dynamic_limit(static_smem: u32) -> u32 {
    DEFAULT_SMEM.saturating_sub(static_smem)
}

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

/// A disk cache to load a module from, and to store it in: the cache, the entry's key (the
/// whole specialization, see `Device::compile`), the `ptxas` that assembles its cubin and the
/// device's arch (`sm_90`).
pub(super) struct DiskModule {
    pub(super) cache: Arc<DiskCache>,
    pub(super) key: Vec<u8>,
    pub(super) ptxas: &'static Ptxas,
    pub(super) arch: String,
}

/// Loads `image` into `ctx` and looks up its entry. Returns the kernel, the JIT's info log
/// (register and spill counts, since the log is verbose) and where the code came from.
///
/// Without a disk cache the PTX goes to `cuModuleLoadDataEx`. With one, a valid entry's cubin
/// is loaded (no JIT at all); otherwise `ptxas` assembles the PTX to a cubin for the
/// context's device, which is loaded and stored for the next process (and where that fails,
/// the PTX goes to the JIT, nothing stored).
pub(super) fn load_cuda(
    ctx: &Arc<CudaContext>,
    image: &KernelImage,
    limits: &DeviceLimits,
    disk: Option<&DiskModule>,
) -> Result<(CudaKernel, String, Origin), RuntimeError> {
    check_shared_memory(image, image.dynamic_smem, limits)?;
    let ptx = CString::new(image.ptx.as_str()).map_err(|e| RuntimeError::PtxNul {
        offset: e.nul_position(),
    })?;
    let entry = CString::new(image.entry.as_str()).map_err(|_| RuntimeError::MissingEntry {
        entry: image.entry.clone(),
    })?;
    ctx.bind_to_thread()
        .map_err(RuntimeError::driver("cuCtxSetCurrent"))?;
    let start = Instant::now();
    let (module, info, origin) = match disk {
        None => {
            let (module, info) = load_module(ModuleData::Ptx(&ptx), image)?;
            (module, info, Origin::Built)
        }
        Some(disk) => load_through_disk(&ptx, image, disk)?,
    };
    let took = start.elapsed();
    match origin {
        Origin::Built => log::debug!(
            "JIT of `{}` for {}: {:.3} ms",
            image.entry,
            image.arch,
            took.as_secs_f64() * 1e3
        ),
        Origin::Disk => log::debug!(
            "`{}` loaded from the disk cache: {:.3} ms",
            image.entry,
            took.as_secs_f64() * 1e3
        ),
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
    // The count comes from the PTX text, so that the driver is asked about exactly the
    // parameters that exist: probing past the last one is a failing call that tools such as
    // compute-sanitizer report on every load.
    let count =
        entry_param_count(&image.ptx, &image.entry).ok_or_else(|| RuntimeError::MissingEntry {
            entry: image.entry.clone(),
        })?;
    if let Some(declared) = kernel.param_layout(count)? {
        check_signature(image, declared)?;
    }
    if image.dynamic_smem > default_dynamic_limit(image.static_smem) {
        kernel.set_max_dynamic_smem(image.dynamic_smem)?;
    }
    Ok((kernel, info, origin))
}

/// The cubin of a valid disk-cache entry, loaded; else the PTX assembled by `ptxas`, loaded
/// and stored (see [`load_or_build`]). Where `ptxas` fails or its cubin does not load (a
/// `ptxas` newer than the driver), the JIT compiles the PTX and nothing is stored.
fn load_through_disk(
    ptx: &CStr,
    image: &KernelImage,
    disk: &DiskModule,
) -> Result<(sys::CUmodule, String, Origin), RuntimeError> {
    let args: &[&str] = if has_line_info(image) {
        &["-lineinfo"]
    } else {
        &[]
    };
    let stored = load_or_build(
        &disk.cache,
        &disk.key,
        &image.entry,
        |cubin| {
            load_module(ModuleData::Cubin(&aligned(cubin)), image)
                .map(|(module, _)| module)
                .map_err(|e| e.to_string())
        },
        || disk.ptxas.assemble(&image.ptx, &disk.arch, args),
    );
    match stored {
        Ok(loaded) => Ok(loaded),
        Err(e) => {
            log::warn!(
                "disk cache: no cubin of `{}` from ptxas ({e}); the JIT compiles its PTX",
                image.entry
            );
            let (module, info) = load_module(ModuleData::Ptx(ptx), image)?;
            Ok((module, info, Origin::Built))
        }
    }
}

/// `bytes` copied into 8-byte words (an ELF image's headers hold 8-byte fields, so the image
/// is handed to the driver aligned), zero-padded at the end.
fn aligned(bytes: &[u8]) -> Vec<u64> {
    bytes
        .chunks(8)
        .map(|c| {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            u64::from_ne_bytes(w)
        })
        .collect()
}

/// What `cuModuleLoadDataEx` is given.
#[derive(Clone, Copy)]
enum ModuleData<'a> {
    /// PTX text, NUL-terminated.
    Ptx(&'a CStr),
    /// A cubin (an ELF image) assembled by `ptxas` for this device, in aligned words.
    Cubin(&'a [u64]),
}

/// The JIT options of every load: info and error log buffers, verbose logging, and
/// line information for an image whose PTX declares source files (`.file`, from
/// [`LineInfo::RustLines`](crate::ir::LineInfo::RustLines)).
struct JitLogs {
    info: Vec<u8>,
    error: Vec<u8>,
    options: [sys::CUjit_option; 6],
    values: [*mut c_void; 6],
}

/// Whether the image's PTX carries line information: the JIT then keeps line tables.
fn has_line_info(image: &KernelImage) -> bool {
    image.ptx.lines().any(|l| l.starts_with(".file "))
}

impl JitLogs {
    fn new(image: &KernelImage) -> Box<JitLogs> {
        let mut logs = Box::new(JitLogs {
            info: vec![0u8; LOG_BYTES],
            error: vec![0u8; LOG_BYTES],
            options: [
                sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER,
                sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
                sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                sys::CUjit_option::CU_JIT_LOG_VERBOSE,
                sys::CUjit_option::CU_JIT_GENERATE_LINE_INFO,
            ],
            values: [std::ptr::null_mut(); 6],
        });
        // Option values are pointer-sized: buffers as pointers, sizes and flags as integers
        // cast to pointers (the driver's convention). The size slots come back holding bytes
        // written.
        logs.values = [
            logs.info.as_mut_ptr().cast(),
            std::ptr::without_provenance_mut(LOG_BYTES),
            logs.error.as_mut_ptr().cast(),
            std::ptr::without_provenance_mut(LOG_BYTES),
            std::ptr::without_provenance_mut(1),
            std::ptr::without_provenance_mut(usize::from(has_line_info(image))),
        ];
        logs
    }

    fn info(&self) -> String {
        log_text(&self.info, self.values[1].addr())
    }

    /// The error log, then the info log, whichever were written.
    fn failure(&self) -> String {
        let (error, info) = (log_text(&self.error, self.values[3].addr()), self.info());
        match (error.is_empty(), info.is_empty()) {
            (false, false) => format!("{error}\n{info}"),
            (false, true) => error,
            (true, _) => info,
        }
    }
}

/// Loads a module from PTX or a cubin in the bound context, with the JIT's logs. Returns the
/// module and the info log.
fn load_module(
    data: ModuleData<'_>,
    image: &KernelImage,
) -> Result<(sys::CUmodule, String), RuntimeError> {
    let mut logs = JitLogs::new(image);
    let ptr: *const c_void = match data {
        ModuleData::Ptx(ptx) => ptx.as_ptr().cast(),
        ModuleData::Cubin(words) => words.as_ptr().cast(),
    };
    let mut module: sys::CUmodule = std::ptr::null_mut();
    // SAFETY: the caller bound the context. `ptr` is a NUL-terminated PTX text or a whole
    // cubin assembled for this device (by `ptxas` just now, or from a disk-cache
    // entry whose checksum and key matched; the cache directory is private to the user), and
    // it lives through the call. `options` and `values` have the same length (passed as the
    // count); each log buffer is writable for the size given beside it, and both outlive the
    // call (the driver does not keep them). `module` is a valid out pointer.
    let status = unsafe {
        sys::cuModuleLoadDataEx(
            &mut module,
            ptr,
            logs.options.len() as u32,
            logs.options.as_mut_ptr(),
            logs.values.as_mut_ptr(),
        )
    };
    if let Err(code) = status.result() {
        return Err(RuntimeError::Jit {
            log: logs.failure(),
            ptx: image.ptx.clone(),
            code,
        });
    }
    Ok((module, logs.info()))
}

/// Checks the parameters the PTX declares (count, offsets and sizes) against the image's
/// signature: the launch hands the driver one cell per signature parameter, sized by the
/// signature.
fn check_signature(image: &KernelImage, declared: Vec<ParamLayout>) -> Result<(), RuntimeError> {
    let expected = image.param_layout();
    if declared != expected {
        return Err(RuntimeError::SignatureMismatch {
            entry: image.entry.clone(),
            declared,
            expected,
        });
    }
    Ok(())
}

/// Parameters the PTX text declares for `.entry entry`: the `.param` directives in its
/// parameter list (comments skipped; no list is no parameters). `None` when the text declares
/// no entry of that name.
pub(super) fn entry_param_count(ptx: &str, entry: &str) -> Option<usize> {
    let text = without_comments(ptx);
    let is_name = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%');
    let mut from = 0;
    while let Some(at) = text[from..].find(".entry").map(|i| i + from) {
        from = at + ".entry".len();
        let rest = &text[from..];
        let standalone = text[..at].ends_with(|c: char| c.is_whitespace()) || at == 0;
        if !standalone || !rest.starts_with(char::is_whitespace) {
            continue;
        }
        let rest = rest.trim_start();
        let len = rest.find(|c: char| !is_name(c)).unwrap_or(rest.len());
        if &rest[..len] != entry {
            continue;
        }
        let Some(list) = rest[len..].trim_start().strip_prefix('(') else {
            return Some(0);
        };
        let list = &list[..list.find(')')?];
        return Some(list.matches(".param").count());
    }
    None
}

/// `ptx` with `//` and `/* */` comments blanked out.
pub(super) fn without_comments(ptx: &str) -> String {
    let mut out = String::with_capacity(ptx.len());
    let mut rest = ptx;
    loop {
        let line = rest.find("//");
        let block = rest.find("/*");
        let Some(at) = line.into_iter().chain(block).min() else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..at]);
        out.push(' ');
        rest = if Some(at) == line {
            rest[at..].find('\n').map_or("", |e| &rest[at + e..])
        } else {
            rest[at + 2..]
                .find("*/")
                .map_or("", |e| &rest[at + 4 + e..])
        };
    }
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
/// It touches no simulator state, so it runs while the simulator runs kernels.
pub(super) fn load_sim(
    image: &KernelImage,
    limits: &DeviceLimits,
) -> Result<SimModule, RuntimeError> {
    check_shared_memory(image, image.dynamic_smem, limits)?;
    let module = SimModule::load(&image.ptx)?;
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
        ParamLayout::packed(function.params.iter().map(|p| p.ty.bytes())),
    )?;
    Ok(module)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptx::Arch;

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
        use crate::runtime::{ParamKind, ParamSig};
        let mut image = KernelImage::generated(
            super::super::ImageParts {
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
                tile_offsets: false,
                grid_dims: 1,
                dynamic_array: None,
                hidden: vec![],
            },
            crate::ir::Bounds::Checked,
            Vec::new(),
        );
        assert!(check_signature(&image, ParamLayout::packed([8, 1, 4])).is_ok());
        assert!(matches!(
            check_signature(&image, ParamLayout::packed([8, 1])),
            Err(RuntimeError::SignatureMismatch { .. })
        ));
        // The right sizes at other offsets (an `.align` in the PTX) do not match either.
        let mut spread = ParamLayout::packed([8, 1, 4]);
        spread[2].offset = 16;
        assert!(check_signature(&image, spread).is_err());
        image.parts_mut().params[2].dtype = DType::F64;
        match check_signature(&image, ParamLayout::packed([8, 1, 4])) {
            Err(RuntimeError::SignatureMismatch { expected, .. }) => {
                assert_eq!(expected, ParamLayout::packed([8, 1, 8]))
            }
            other => panic!("expected SignatureMismatch, got {other:?}"),
        }
    }

    #[test]
    fn parameter_counts_come_from_the_entry_list() {
        let nvcc = "\
// Generated by NVIDIA NVVM Compiler
.version 8.5
.target sm_90
.address_size 64
/* .entry decoy(.param .u64 a) */
.visible .entry _Z4copyPKfPfj(
\t.param .u64 .ptr .global .align 4 _Z4copyPKfPfj_param_0,
\t.param .u64 _Z4copyPKfPfj_param_1, // .param in a comment
\t.param .u32 _Z4copyPKfPfj_param_2
)
{
\tret;
}
.entry none
{
\tret;
}
.entry empty()
{
\tret;
}
";
        assert_eq!(entry_param_count(nvcc, "_Z4copyPKfPfj"), Some(3));
        assert_eq!(entry_param_count(nvcc, "none"), Some(0));
        assert_eq!(entry_param_count(nvcc, "empty"), Some(0));
        assert_eq!(entry_param_count(nvcc, "decoy"), None);
        assert_eq!(entry_param_count(nvcc, "_Z4copy"), None);
        assert_eq!(entry_param_count(".entry k(.param .u32 a", "k"), None);
        assert_eq!(without_comments("a // b\nc /* d */ e /* f"), "a  \nc   e  ");
    }

    #[test]
    fn shared_memory_over_the_limit_is_rejected() {
        let limits = DeviceLimits::simulated(Arch::Sm90);
        let image = KernelImage::generated(
            super::super::ImageParts {
                entry: "k".into(),
                ptx: String::new(),
                arch: Arch::Sm90,
                params: vec![],
                block: [128, 1, 1],
                tile_elems: 128,
                static_smem: 1024,
                dynamic_smem: limits.smem_per_block_optin,
                needs_cooperative: false,
                tile_offsets: false,
                grid_dims: 1,
                dynamic_array: None,
                hidden: vec![],
            },
            crate::ir::Bounds::Checked,
            Vec::new(),
        );
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

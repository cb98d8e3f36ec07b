//! What a compiled kernel uses of an SM: registers, local memory (its stack frame: local
//! arrays and spills), static and dynamic shared memory, and what they allow: resident blocks
//! per SM and occupancy.
//!
//! On CUDA the figures come from the driver (`cuFuncGetAttribute`, the occupancy API), with
//! the spills from the JIT's verbose log. Elsewhere they come from `ptxas -v` where
//! `COOPGRAPH_PTXAS` names a ptxas (as in CI); without one only the shared memory (from the
//! plan) and the blocks it allows are known.

use super::device::DeviceLimits;
use super::image::KernelImage;
use super::ptxas::Ptxas;
use crate::ptx::Arch;
use std::fmt;

/// Where a [`Resources`] report's figures come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceSource {
    /// The CUDA driver: the loaded function's attributes and the occupancy API.
    Driver,
    /// `ptxas -v` (the one `COOPGRAPH_PTXAS` names) on the kernel's PTX.
    Ptxas,
    /// Only what the kernel's plan says (shared memory); registers and local memory unknown.
    Plan,
}

/// The resources of a compiled kernel and the occupancy they allow: from the driver on CUDA
/// ([`Function::resources`](super::Function::resources)), else from `ptxas -v` where
/// `COOPGRAPH_PTXAS` names a ptxas; without one only the shared memory and the blocks it
/// allows are known.
#[derive(Debug, Clone, PartialEq)]
pub struct Resources {
    /// The kernel's entry.
    pub entry: String,
    /// The arch it was compiled for.
    pub arch: Arch,
    /// Where the figures come from.
    pub source: ResourceSource,
    /// Registers per thread.
    pub registers: Option<u32>,
    /// Local memory per thread, in bytes (local arrays and spills).
    pub local_bytes: Option<u32>,
    /// Bytes stored to local memory by register spills (per thread).
    pub spill_stores: Option<u32>,
    /// Bytes loaded back from spills (per thread).
    pub spill_loads: Option<u32>,
    /// Static shared memory per block, in bytes.
    pub static_shared: u32,
    /// Dynamic shared memory per block the kernel itself needs, in bytes (a dynamic shared
    /// array's elements come on top, at each launch).
    pub dynamic_shared: u32,
    /// Threads per block.
    pub threads_per_block: u32,
    /// Blocks that can be resident on one SM at once.
    pub max_active_blocks_per_sm: u32,
    /// Resident warps over the most an SM holds (`0.0..=1.0`).
    pub occupancy: f64,
}

impl Resources {
    /// The resident warps of `blocks` blocks over the most an SM holds.
    fn occupancy_of(blocks: u32, threads: u32, limits: &DeviceLimits) -> f64 {
        let warps = u64::from(blocks) * u64::from(threads.div_ceil(32));
        let most = u64::from(limits.max_threads_per_sm / 32).max(1);
        (warps as f64 / most as f64).min(1.0)
    }
}

impl fmt::Display for Resources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let known = |v: Option<u32>, unit: &str| match v {
            Some(v) => format!("{v} {unit}"),
            None => format!("? {unit}"),
        };
        write!(
            f,
            "`{}` on {} ({}): {} per thread, {} of local memory per thread",
            self.entry,
            self.arch,
            match self.source {
                ResourceSource::Driver => "driver",
                ResourceSource::Ptxas => "ptxas -v",
                ResourceSource::Plan => "plan only",
            },
            known(self.registers, "registers"),
            known(self.local_bytes, "bytes"),
        )?;
        if let (Some(st), Some(ld)) = (self.spill_stores, self.spill_loads) {
            write!(f, " ({st} bytes of spill stores, {ld} of spill loads)")?;
        }
        write!(
            f,
            ", {} bytes of static and {} of dynamic shared memory per block; {} threads per \
             block, {} blocks per SM, occupancy {:.0}%",
            self.static_shared,
            self.dynamic_shared,
            self.threads_per_block,
            self.max_active_blocks_per_sm,
            self.occupancy * 100.0
        )
    }
}

/// What `ptxas -v` (or a verbose JIT log) says of one entry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct PtxasInfo {
    pub(super) registers: Option<u32>,
    pub(super) stack_frame: Option<u32>,
    pub(super) spill_stores: Option<u32>,
    pub(super) spill_loads: Option<u32>,
    pub(super) shared: Option<u32>,
}

/// Reads the figures of `entry` from ptxas's verbose output: the lines after `Compiling entry
/// function 'entry'` (or `Function properties for entry`) up to the next entry's.
pub(super) fn parse_verbose(log: &str, entry: &str) -> PtxasInfo {
    let mut info = PtxasInfo::default();
    let mut mine = false;
    let number_before = |line: &str, word: &str| -> Option<u32> {
        let at = line.find(word)?;
        line[..at].split_whitespace().last()?.parse().ok()
    };
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            mine = rest.starts_with(&format!("{entry}'"));
            continue;
        }
        if let Some(rest) = line.split("Function properties for ").nth(1) {
            mine = rest.trim() == entry;
            continue;
        }
        if !mine {
            continue;
        }
        if line.contains("stack frame") {
            info.stack_frame = number_before(line, "bytes stack frame");
            info.spill_stores = number_before(line, "bytes spill stores");
            info.spill_loads = number_before(line, "bytes spill loads");
        }
        if line.contains("Used") && line.contains("registers") {
            info.registers = number_before(line, "registers");
            info.shared = number_before(line, "bytes smem");
        }
    }
    info
}

/// `ptxas -v` on the image's PTX for its arch, where `COOPGRAPH_PTXAS` names a ptxas that
/// runs and accepts it; `None` otherwise.
pub(super) fn run_ptxas(image: &KernelImage) -> Option<PtxasInfo> {
    let path = std::env::var_os("COOPGRAPH_PTXAS")?;
    let ptxas = Ptxas::at(std::path::Path::new(&path))?;
    let line_info = image.ptx.lines().any(|l| l.starts_with(".file "));
    let args: &[&str] = if line_info { &["-lineinfo"] } else { &[] };
    let arch = image.arch.to_string();
    let (_, log) = ptxas.assemble(&image.ptx, &arch, args).ok()?;
    Some(parse_verbose(&log, &image.entry))
}

/// The report of `image` from `ptxas -v` (the one `COOPGRAPH_PTXAS` names), with the
/// occupancy `limits` allow: `None` without such a ptxas, or where it rejects the PTX.
///
/// ```
/// use coopgraph::runtime::{Compile, DeviceLimits, ResourceSource, ptxas_resources};
/// use coopgraph::ptx::Arch;
/// use coopgraph::KernelBuilder;
///
/// let kernel = KernelBuilder::new("negate").load::<f32>("x").map(|v| -v).store("y").build()?;
/// let image = kernel.emit(Arch::Sm90)?;
/// if let Some(r) = ptxas_resources(&image, &DeviceLimits::H200) {
///     assert_eq!(r.source, ResourceSource::Ptxas);
///     assert!(r.registers.is_some_and(|n| n > 0));
///     assert!(r.max_active_blocks_per_sm > 0);
/// }
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub fn ptxas_resources(image: &KernelImage, limits: &DeviceLimits) -> Option<Resources> {
    let info = run_ptxas(image)?;
    Some(from_info(image, Some(info), limits))
}

/// The report of `image` from figures read elsewhere (ptxas, or nothing), with the occupancy
/// `limits` give: blocks by threads, shared memory and (where known) registers.
pub(super) fn from_info(
    image: &KernelImage,
    info: Option<PtxasInfo>,
    limits: &DeviceLimits,
) -> Resources {
    let threads = u32::try_from(image.threads_per_block()).unwrap_or(u32::MAX);
    let mut blocks = limits.blocks_per_sm(u64::from(threads), image.smem_per_block());
    let registers = info.and_then(|i| i.registers);
    if let Some(r) = registers {
        // Registers are allocated per warp in units of 256.
        let per_warp = (r.max(1) * 32).div_ceil(256) * 256;
        let per_block = per_warp * threads.div_ceil(32);
        blocks = blocks.min(crate::ir::options::REGISTER_FILE / per_block.max(1));
    }
    Resources {
        entry: image.entry.clone(),
        arch: image.arch,
        source: if info.is_some() {
            ResourceSource::Ptxas
        } else {
            ResourceSource::Plan
        },
        registers,
        local_bytes: info.and_then(|i| i.stack_frame),
        spill_stores: info.and_then(|i| i.spill_stores),
        spill_loads: info.and_then(|i| i.spill_loads),
        static_shared: image.static_smem,
        dynamic_shared: image.dynamic_smem,
        threads_per_block: threads,
        max_active_blocks_per_sm: blocks,
        occupancy: Resources::occupancy_of(blocks, threads, limits),
    }
}

/// The driver's report of a loaded function: `registers`, `local_bytes` and `static_shared`
/// from its attributes, `blocks` from the occupancy API, spills from the JIT's log.
pub(super) fn from_driver(
    image: &KernelImage,
    attributes: [u32; 3],
    blocks: u32,
    jit_log: &str,
    limits: &DeviceLimits,
) -> Resources {
    let [registers, local, shared] = attributes;
    let threads = u32::try_from(image.threads_per_block()).unwrap_or(u32::MAX);
    let log = parse_verbose(jit_log, &image.entry);
    Resources {
        entry: image.entry.clone(),
        arch: image.arch,
        source: ResourceSource::Driver,
        registers: Some(registers),
        local_bytes: Some(local),
        spill_stores: log.spill_stores,
        spill_loads: log.spill_loads,
        static_shared: shared,
        dynamic_shared: image.dynamic_smem,
        threads_per_block: threads,
        max_active_blocks_per_sm: blocks,
        occupancy: Resources::occupancy_of(blocks, threads, limits),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbose_output_is_read_per_entry() {
        let log = "ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'other' for 'sm_90'
ptxas info    : Function properties for other
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 512 bytes smem
ptxas info    : Compiling entry function 'k' for 'sm_90'
ptxas info    : Function properties for k
    16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 0 barriers, 360 bytes cmem[0]
";
        let k = parse_verbose(log, "k");
        assert_eq!(
            k,
            PtxasInfo {
                registers: Some(12),
                stack_frame: Some(16),
                spill_stores: Some(0),
                spill_loads: Some(0),
                shared: None,
            }
        );
        let other = parse_verbose(log, "other");
        assert_eq!((other.registers, other.shared), (Some(40), Some(512)));
        assert_eq!(other.spill_stores, Some(4));
        assert_eq!(parse_verbose(log, "missing"), PtxasInfo::default());
    }
}

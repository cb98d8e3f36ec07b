//! Running `ptxas`: whole-program cubins for the disk cache, and the verbose report the
//! resource figures read.
//!
//! The disk cache stores cubins that `ptxas` assembled from a kernel's PTX, not the driver's
//! linker's: `cuLinkAddData` compiles PTX as relocatable code (as `nvcc -rdc` would), which
//! loses whole-program register allocation. The Onesweep digit pass of u32 keys, for one,
//! takes 115 registers linked and 48 from `ptxas` or `cuModuleLoadDataEx` (the same PTX,
//! CUDA 13.0). `ptxas` assembles what the driver's JIT would.
//!
//! A `ptxas` is looked for once a process: `COOPGRAPH_PTXAS`, then `bin/ptxas` under
//! `CUDA_HOME`, `CUDA_PATH` and `/usr/local/cuda`, then `ptxas` on `PATH`; the first that
//! prints its version is used.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// A `ptxas` that runs.
#[derive(Debug)]
pub(super) struct Ptxas {
    path: PathBuf,
    /// The last line of `ptxas --version` (its build), part of the disk cache's keys.
    pub(super) version: String,
}

impl Ptxas {
    /// The `ptxas` at `path`, if it runs and prints its version.
    pub(super) fn at(path: &Path) -> Option<Ptxas> {
        let out = Command::new(path).arg("--version").output().ok()?;
        if !out.status.success() {
            return None;
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let version = text
            .lines()
            .rfind(|l| !l.trim().is_empty())?
            .trim()
            .to_string();
        Some(Ptxas {
            path: path.to_path_buf(),
            version,
        })
    }

    /// The process's `ptxas` for the disk cache, found once (see the module doc).
    pub(super) fn find() -> Option<&'static Ptxas> {
        static FOUND: OnceLock<Option<Ptxas>> = OnceLock::new();
        FOUND
            .get_or_init(|| {
                let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
                let mut candidates: Vec<PathBuf> = Vec::new();
                candidates.extend(env("COOPGRAPH_PTXAS").map(PathBuf::from));
                for root in ["CUDA_HOME", "CUDA_PATH"] {
                    candidates.extend(env(root).map(|r| PathBuf::from(r).join("bin/ptxas")));
                }
                candidates.push(PathBuf::from("/usr/local/cuda/bin/ptxas"));
                if let Some(path) = env("PATH") {
                    candidates.extend(std::env::split_paths(&path).map(|d| d.join("ptxas")));
                }
                let found = candidates.iter().find_map(|p| Ptxas::at(p));
                match &found {
                    Some(p) => log::debug!("ptxas for the disk cache: {}", p.path.display()),
                    None => log::debug!("no ptxas found: modules are not stored on disk"),
                }
                found
            })
            .as_ref()
    }

    /// Assembles `ptx` for `arch` (`sm_90`) with `-v` and the extra `args`: the cubin and
    /// the verbose log, or what went wrong.
    pub(super) fn assemble(
        &self,
        ptx: &str,
        arch: &str,
        args: &[&str],
    ) -> Result<(Vec<u8>, String), String> {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!("coopgraph-ptxas-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let n = N.fetch_add(1, Ordering::Relaxed);
        let (src, out) = (
            dir.join(format!("m{n}.ptx")),
            dir.join(format!("m{n}.cubin")),
        );
        std::fs::write(&src, ptx).map_err(|e| format!("{}: {e}", src.display()))?;
        let run = Command::new(&self.path)
            .arg(format!("-arch={arch}"))
            .arg("-v")
            .args(args)
            .arg(&src)
            .arg("-o")
            .arg(&out)
            .output();
        let cubin = std::fs::read(&out);
        let _ = std::fs::remove_file(&src);
        let _ = std::fs::remove_file(&out);
        let run = run.map_err(|e| format!("{}: {e}", self.path.display()))?;
        let log = format!(
            "{}{}",
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr)
        );
        if !run.status.success() {
            return Err(format!("ptxas failed ({}): {log}", run.status));
        }
        let cubin = cubin.map_err(|e| format!("{}: {e}", out.display()))?;
        Ok((cubin, log))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_ptxas_is_none() {
        assert!(Ptxas::at(Path::new("/nonexistent/coopgraph/ptxas")).is_none());
    }

    /// With `COOPGRAPH_PTXAS` set (as in CI), a kernel's PTX assembles to an ELF cubin whose
    /// log names the entry; bad PTX is an error carrying ptxas's words.
    #[test]
    fn assembles_a_cubin_or_says_why_not() {
        let Some(path) = std::env::var_os("COOPGRAPH_PTXAS") else {
            return;
        };
        let ptxas = Ptxas::at(Path::new(&path)).expect("COOPGRAPH_PTXAS runs");
        assert!(!ptxas.version.is_empty());
        let ptx = ".version 7.8\n.target sm_80\n.address_size 64\n\
                   .visible .entry nothing()\n{\n\tret;\n}\n";
        let (cubin, log) = ptxas.assemble(ptx, "sm_80", &[]).expect("assembles");
        assert_eq!(&cubin[..4], b"\x7fELF");
        assert!(log.contains("nothing"), "{log}");
        let err = ptxas
            .assemble(".version 7.8\n.target sm_80\nnonsense", "sm_80", &[])
            .expect_err("bad PTX");
        assert!(err.contains("ptxas failed"), "{err}");
    }
}

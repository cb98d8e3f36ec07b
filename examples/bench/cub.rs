//! CUB's figures, from the reference harnesses in `benches/cub` (CSV with the header
//! `kind,dtype,algorithm,block,items,gbps`): run here once per size, or read from files they
//! wrote.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// (kind, dtype, algorithm, block, items, n).
type Key = (String, String, String, u32, u32, usize);

/// CUB's GB/s per configuration and size.
#[derive(Debug, Default)]
pub struct Cub {
    figures: HashMap<Key, f64>,
}

impl Cub {
    /// Adds the rows of one harness's CSV `text`, measured at `n` elements. Lines that are not
    /// figures (the header, blank lines) are skipped; a malformed figure is an error.
    pub fn add_csv(&mut self, text: &str, n: usize) -> Result<(), String> {
        for line in text.lines().skip(1).filter(|l| !l.trim().is_empty()) {
            let f: Vec<&str> = line.split(',').collect();
            let [kind, dtype, alg, block, items, g] = f[..] else {
                return Err(format!("not a CUB figure: {line:?}"));
            };
            let parsed = (block.parse(), items.parse(), g.parse());
            let (Ok(block), Ok(items), Ok(g)) = parsed else {
                return Err(format!("not a CUB figure: {line:?}"));
            };
            let key = (kind.into(), dtype.into(), alg.into(), block, items, n);
            self.figures.insert(key, g);
        }
        Ok(())
    }

    /// Runs the harness `program` with `n` (`program n`) and adds its figures.
    pub fn run(&mut self, program: &Path, n: usize) -> Result<(), String> {
        let out = Command::new(program)
            .arg(n.to_string())
            .output()
            .map_err(|e| format!("{}: {e}", program.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{} {n}: {}\n{}",
                program.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        self.add_csv(&String::from_utf8_lossy(&out.stdout), n)
    }

    /// Reads a CSV a harness wrote for `n` elements.
    pub fn read(&mut self, path: &PathBuf, n: usize) -> Result<(), String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        self.add_csv(&text, n)
    }

    /// CUB's GB/s for a configuration at `n` elements.
    pub fn get(
        &self,
        kind: &str,
        dtype: &str,
        alg: &str,
        shape: (u32, u32),
        n: usize,
    ) -> Option<f64> {
        let key = (kind.into(), dtype.into(), alg.into(), shape.0, shape.1, n);
        self.figures.get(&key).copied()
    }
}

//! One measured configuration, and the forms results are written in: a markdown table on
//! stdout and a CSV file.

use std::fmt::Write as _;
use std::io;
use std::path::Path;

/// One configuration of one suite at one size.
#[derive(Debug, Clone)]
pub struct Row {
    /// The suite that measured it (`copy`, `reduce-scan`).
    pub suite: &'static str,
    /// What the kernel does (`copy`, `reduce`, `scan`), as CUB's CSV names it; `memcpy` for
    /// the device-to-device copy baseline.
    pub kind: String,
    /// The element type.
    pub dtype: String,
    /// The algorithm, as CUB's CSV names it.
    pub algorithm: String,
    /// Threads per block (0 for the copy baseline).
    pub block: u32,
    /// Items per thread (0 for the copy baseline).
    pub items: u32,
    /// Elements.
    pub n: usize,
    /// Our bandwidth, GB/s.
    pub gbps: f64,
    /// The device-to-device copy of the same size in the same run, GB/s.
    pub copy: Option<f64>,
    /// CUB's bandwidth in the same configuration, GB/s.
    pub cub: Option<f64>,
    /// Suite-specific figures: (column, value).
    pub extra: Vec<(&'static str, f64)>,
}

impl Row {
    /// `"{block}x{items}"`, or `-` for the copy baseline.
    pub fn shape(&self) -> String {
        if self.block == 0 {
            "-".into()
        } else {
            format!("{}x{}", self.block, self.items)
        }
    }

    /// Our bandwidth over CUB's.
    pub fn ratio(&self) -> Option<f64> {
        self.cub.map(|c| self.gbps / c)
    }

    /// A short label naming the configuration within its suite and size.
    pub fn label(&self) -> String {
        format!(
            "{} {} {} {}",
            self.kind,
            self.dtype,
            self.algorithm,
            self.shape()
        )
    }
}

/// GB/s as the tables show it: whole numbers, or four significant digits below 10 (the
/// simulator's figures).
pub fn figure(g: f64) -> String {
    if g >= 10.0 {
        format!("{g:.0}")
    } else {
        format!("{g:.4}")
    }
}

fn or_dash(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map(f).unwrap_or_else(|| "-".into())
}

/// The rows of one suite at one size as a markdown table.
pub fn markdown(rows: &[Row]) -> String {
    let extra: Vec<&str> = rows
        .first()
        .map(|r| r.extra.iter().map(|(c, _)| *c).collect())
        .unwrap_or_default();
    let mut out = String::from("| kind | dtype | algorithm | block | items | GB/s |");
    for c in &extra {
        let _ = write!(out, " {c} |");
    }
    out.push_str(" % of copy | CUB GB/s | ratio |\n|");
    out.push_str(&"---|".repeat(9 + extra.len()));
    out.push('\n');
    for r in rows {
        let (block, items) = if r.block == 0 {
            ("-".to_string(), "-".to_string())
        } else {
            (r.block.to_string(), r.items.to_string())
        };
        let _ = write!(
            out,
            "| {} | {} | {} | {block} | {items} | {} |",
            r.kind,
            r.dtype,
            r.algorithm,
            figure(r.gbps)
        );
        for c in &extra {
            let v = r.extra.iter().find(|(e, _)| e == c).map(|&(_, v)| v);
            let _ = write!(out, " {} |", or_dash(v, figure));
        }
        let _ = writeln!(
            out,
            " {} | {} | {} |",
            or_dash(r.copy, |c| format!("{:.1}%", 100.0 * r.gbps / c)),
            or_dash(r.cub, figure),
            or_dash(r.ratio(), |q| format!("{q:.2}")),
        );
    }
    out
}

/// Writes `rows` as CSV (one header line; suite-specific figures as `name=value` in the last
/// column).
pub fn write_csv(path: &Path, rows: &[Row]) -> io::Result<()> {
    let mut out = String::from(
        "suite,kind,dtype,algorithm,block,items,n,gbps,copy_gbps,cub_gbps,ratio,extra\n",
    );
    let num = |v: Option<f64>| v.map(|v| format!("{v:.3}")).unwrap_or_default();
    for r in rows {
        let extra: Vec<String> = r.extra.iter().map(|(c, v)| format!("{c}={v:.3}")).collect();
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{:.3},{},{},{},{}",
            r.suite,
            r.kind,
            r.dtype,
            r.algorithm,
            r.block,
            r.items,
            r.n,
            r.gbps,
            num(r.copy),
            num(r.cub),
            num(r.ratio()),
            extra.join(";"),
        );
    }
    std::fs::write(path, out)
}

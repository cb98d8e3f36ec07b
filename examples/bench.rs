//! The benchmark runner: runs any of coopgraph's bandwidth suites on the device (a GPU with
//! `COOPGRAPH_DEVICE=cuda`, else the simulator, whose times say nothing about a GPU), beside
//! CUB's figures for the same configurations and the device-to-device copy of the same run,
//! at one size or over a sweep of sizes. It prints each figure as it is measured and one
//! markdown table per suite and size, and writes a CSV and SVG plots: GB/s beside CUB's, our
//! ratio to CUB, and (over a sweep) GB/s against the element count. Every kernel's output is
//! checked; a wrong one ends the run with status 1.
//!
//! ```text
//! bench [SUITE...] [--log2-n 16,20,24,28] [--shapes 128x4,256x8] [--dtypes f32]
//!       [--cub PROGRAM]... [--cub-csv FILE]... [--reps N] [--out DIR] [--unchecked-first]
//! ```
//!
//! Suites: `copy` (every load/store algorithm), `reduce-scan` (block reduce and block scan).
//! `--cub` names a reference harness built from `benches/cub` (`cub_copy`,
//! `cub_reduce_scan`), which is run once per size as `PROGRAM N`; `--cub-csv` reads a CSV one
//! wrote at the single size of the run. Without `--log2-n` the size is 2^28 on a GPU and 2^14
//! on the simulator (`COOPGRAPH_BENCH_N` overrides). Results go to `target/bench` unless
//! `--out` says otherwise.

#[path = "support/bench.rs"]
#[allow(dead_code)]
mod support;

#[path = "bench/copy.rs"]
mod copy;
#[path = "bench/cub.rs"]
mod cub;
#[path = "bench/plot.rs"]
mod plot;
#[path = "bench/record.rs"]
mod record;
#[path = "bench/reduce_scan.rs"]
mod reduce_scan;

use clap::{Parser, ValueEnum};
use coopgraph::runtime::Device;
use cub::Cub;
use record::Row;
use std::path::PathBuf;
use support::OrExit;

/// Runs coopgraph's bandwidth suites beside CUB's figures and writes tables, CSV and plots.
#[derive(Parser, Debug)]
#[command(name = "bench")]
struct Cli {
    /// The suites to run (all of them when none is named).
    #[arg(value_enum)]
    suites: Vec<Suite>,
    /// Element counts, as powers of two separated by commas (`16,20,24,28`).
    #[arg(long, value_delimiter = ',')]
    log2_n: Vec<u32>,
    /// Only these shapes, as BLOCKxITEMS separated by commas (default: 128 and 256 threads
    /// with 1, 4, 8 and 16 items each).
    #[arg(long, value_delimiter = ',', value_parser = parse_shape)]
    shapes: Vec<(u32, u32)>,
    /// Only these element types (`f32`, `i32`), separated by commas.
    #[arg(long, value_delimiter = ',')]
    dtypes: Vec<String>,
    /// A CUB reference harness from `benches/cub`, run once per size as `PROGRAM N`.
    #[arg(long)]
    cub: Vec<PathBuf>,
    /// A CSV a CUB reference harness wrote at this run's (single) size.
    #[arg(long)]
    cub_csv: Vec<PathBuf>,
    /// Timed repetitions per configuration (the median is kept; default 20 on a GPU, 1 on the
    /// simulator).
    #[arg(long)]
    reps: Option<usize>,
    /// Where the CSV and the plots go.
    #[arg(long, default_value = "target/bench")]
    out: PathBuf,
    /// Times each copy configuration's unchecked build before its checked one (to tell the
    /// cost of the bounds checks from an effect of the order).
    #[arg(long)]
    unchecked_first: bool,
}

/// A benchmark suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Suite {
    /// Block load and store, every algorithm.
    Copy,
    /// Block reduce and block scan, every algorithm.
    ReduceScan,
}

impl Suite {
    fn name(self) -> &'static str {
        match self {
            Suite::Copy => "copy",
            Suite::ReduceScan => "reduce-scan",
        }
    }

    fn run(self, ctx: &Ctx) -> Vec<Row> {
        let mut rows = Vec::new();
        if ctx.wants_dtype("f32") {
            rows.extend(match self {
                Suite::Copy => copy::run::<f32>(ctx),
                Suite::ReduceScan => reduce_scan::run::<f32>(ctx),
            });
        }
        if ctx.wants_dtype("i32") {
            rows.extend(match self {
                Suite::Copy => copy::run::<i32>(ctx),
                Suite::ReduceScan => reduce_scan::run::<i32>(ctx),
            });
        }
        rows
    }
}

fn parse_shape(s: &str) -> Result<(u32, u32), String> {
    let (b, i) = s
        .split_once('x')
        .ok_or_else(|| format!("{s:?} is not BLOCKxITEMS"))?;
    let num = |v: &str| v.trim().parse::<u32>().map_err(|e| format!("{s:?}: {e}"));
    Ok((num(b)?, num(i)?))
}

/// What a suite runs with.
pub struct Ctx<'a> {
    /// The device.
    pub dev: &'a Device,
    /// Elements.
    pub n: usize,
    /// Timed repetitions per configuration.
    pub reps: usize,
    /// CUB's figures.
    pub cub: &'a Cub,
    /// Whether the copy suite times the unchecked build first.
    pub unchecked_first: bool,
    cli: &'a Cli,
}

impl Ctx<'_> {
    /// The (block, items) shapes to run.
    pub fn shapes(&self) -> Vec<(u32, u32)> {
        if !self.cli.shapes.is_empty() {
            return self.cli.shapes.clone();
        }
        [128, 256]
            .into_iter()
            .flat_map(|b| [1, 4, 8, 16].map(|i| (b, i)))
            .collect()
    }

    fn wants_dtype(&self, dtype: &str) -> bool {
        self.cli.dtypes.is_empty() || self.cli.dtypes.iter().any(|d| d == dtype)
    }

    /// Prints `row` as it is measured, and hands it back.
    pub fn progress(&self, row: Row) -> Row {
        let cub = match (row.cub, row.ratio()) {
            (Some(c), Some(q)) => format!(" (CUB {c:.0}, ratio {q:.2})"),
            _ => String::new(),
        };
        eprintln!(
            "[{} n=2^{:.1}] {}: {:.0} GB/s{cub}",
            row.suite,
            (self.n as f64).log2(),
            row.label(),
            row.gbps
        );
        row
    }
}

fn main() {
    let cli = Cli::parse();
    let dev = Device::default_device().or_exit("a device");
    let (on_gpu, default_n, default_reps) = support::size(&dev);
    let sizes: Vec<usize> = if cli.log2_n.is_empty() {
        vec![default_n]
    } else {
        cli.log2_n.iter().map(|&k| 1usize << k).collect()
    };
    let mut cub = Cub::default();
    for &n in &sizes {
        for program in &cli.cub {
            cub.run(program, n).or_exit("CUB reference harness");
        }
    }
    for path in &cli.cub_csv {
        if sizes.len() != 1 {
            eprintln!("error: --cub-csv holds one size's figures; run one size, or use --cub");
            std::process::exit(2);
        }
        cub.read(path, sizes[0]).or_exit("CUB figures");
    }
    let suites = if cli.suites.is_empty() {
        Suite::value_variants().to_vec()
    } else {
        cli.suites.clone()
    };
    println!("device: {:?}", dev.backend());
    std::fs::create_dir_all(&cli.out).or_exit("the output directory");
    for suite in suites {
        let mut rows = Vec::new();
        for &n in &sizes {
            let ctx = Ctx {
                dev: &dev,
                n,
                reps: cli.reps.unwrap_or(default_reps),
                cub: &cub,
                unchecked_first: cli.unchecked_first,
                cli: &cli,
            };
            let part = suite.run(&ctx);
            println!(
                "\n## {}, n = {n}\n\n{}",
                suite.name(),
                record::markdown(&part)
            );
            rows.extend(part);
        }
        write_results(&cli.out, suite.name(), &rows, on_gpu);
    }
    if !on_gpu {
        println!("(simulator: figures are CPU time, not GPU bandwidth)");
    }
}

/// The suite's CSV, and its plots: bandwidth and ratio bars per element type at the largest
/// size, and a size sweep per kind and element type where there are several sizes.
fn write_results(out: &std::path::Path, suite: &str, rows: &[Row], on_gpu: bool) {
    let csv = out.join(format!("{suite}.csv"));
    record::write_csv(&csv, rows).or_exit("the CSV");
    let mut written = vec![csv];
    let largest = rows.iter().map(|r| r.n).max().unwrap_or(0);
    let device = if on_gpu { "" } else { " (simulator)" };
    for dtype in unique(rows.iter().map(|r| r.dtype.as_str())) {
        let at: Vec<&Row> = rows
            .iter()
            .filter(|r| r.dtype == dtype && r.n == largest && r.block != 0)
            .collect();
        let title = format!("{suite}, {dtype}, n = 2^{}{device}", largest.ilog2());
        let path = out.join(format!("{suite}_{dtype}_gbps.svg"));
        plot::bandwidth(&path, &format!("{title}: GB/s"), &at).or_exit("the plot");
        written.push(path);
        if at.iter().any(|r| r.cub.is_some()) {
            let path = out.join(format!("{suite}_{dtype}_ratio.svg"));
            plot::ratio(&path, &format!("{title}: ratio to CUB"), &at).or_exit("the plot");
            written.push(path);
        }
        for kind in unique(at.iter().map(|r| r.kind.as_str()))
            .into_iter()
            .filter(|_| rows.iter().any(|r| r.n != largest))
        {
            let series = sweep_series(rows, kind, dtype);
            let path = out.join(format!("{suite}_{kind}_{dtype}_sweep.svg"));
            let title = format!("{suite}: {kind}, {dtype}, best shape per algorithm{device}");
            plot::sweep(&path, &title, &series).or_exit("the plot");
            written.push(path);
        }
    }
    for p in written {
        eprintln!("wrote {}", p.display());
    }
}

/// One line per algorithm of `kind` at its fastest shape at the largest size, CUB's line for
/// the same configuration beside it (dashed), and the copy baseline.
fn sweep_series(rows: &[Row], kind: &str, dtype: &str) -> Vec<plot::Series> {
    let of = |r: &&Row| r.dtype == dtype;
    let largest = rows.iter().map(|r| r.n).max().unwrap_or(0);
    let algs = unique(
        rows.iter()
            .filter(|r| of(r) && r.kind == kind)
            .map(|r| r.algorithm.as_str()),
    );
    let mut series = Vec::new();
    let log2 = |n: usize| (n as f64).log2();
    for (color, alg) in algs.into_iter().enumerate() {
        let same = |r: &&Row| of(r) && r.kind == kind && r.algorithm == alg;
        let Some(best) = rows
            .iter()
            .filter(|r| same(r) && r.n == largest)
            .max_by(|a, b| a.gbps.total_cmp(&b.gbps))
        else {
            continue;
        };
        let line: Vec<&Row> = rows
            .iter()
            .filter(|r| same(r) && (r.block, r.items) == (best.block, best.items))
            .collect();
        let name = format!("{alg} {}", best.shape());
        series.push(plot::Series {
            name: name.clone(),
            points: line.iter().map(|r| (log2(r.n), r.gbps)).collect(),
            dashed: false,
            color,
        });
        let cub: Vec<(f64, f64)> = line
            .iter()
            .filter_map(|r| Some((log2(r.n), r.cub?)))
            .collect();
        if !cub.is_empty() {
            series.push(plot::Series {
                name: format!("CUB {name}"),
                points: cub,
                dashed: true,
                color,
            });
        }
    }
    let copy: Vec<(f64, f64)> = rows
        .iter()
        .filter(|r| of(r) && r.kind == "memcpy")
        .map(|r| (log2(r.n), r.gbps))
        .collect();
    if !copy.is_empty() {
        series.push(plot::Series {
            name: "device-to-device copy".into(),
            points: copy,
            dashed: true,
            color: 98,
        });
    }
    series
}

/// The distinct items of `items`, in the order they first appear.
fn unique<'a>(items: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen = Vec::new();
    for item in items {
        if !seen.contains(&item) {
            seen.push(item);
        }
    }
    seen
}

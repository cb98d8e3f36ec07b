//! The runner: builds a generated case, sizes its buffers from the interpreter's accesses,
//! runs it on a device (the simulator with every checker on, or the GPU), and compares every
//! output element with the interpreter's: written elements by value (bits; NaN equal to NaN;
//! approximate functions within a tolerance), unwritten ones must keep their sentinel.

use super::generator::{self, Case, Data, Param, Spec};
use super::interp::value::{self, APPROX, NONDET, TAINT, UNDEF, UNSPEC};
use super::interp::{self, Arg, Event, Outcome};
use super::types::{AnyBuf, push_scalar};
use coopgraph::ir::Bounds;
use coopgraph::ir::DType;
use coopgraph::planner::PlanError;
use coopgraph::ptx::Arch;
use coopgraph::runtime::{ArgList, Device, LaunchConfig, RuntimeError};
use coopgraph::sim::SimError;
use coopgraph::{Error, Kernel};
use std::collections::BTreeMap;
use std::process::Command;

/// Time spent per stage, summed over threads (nanoseconds): generating and building,
/// interpreting, compiling on the device, running, ptxas.
pub static TIME: [std::sync::atomic::AtomicU64; 5] =
    [const { std::sync::atomic::AtomicU64::new(0) }; 5];

/// Adds the time since `start` to stage `i`.
pub fn charge(i: usize, start: std::time::Instant) {
    TIME[i].fetch_add(
        start.elapsed().as_nanos() as u64,
        std::sync::atomic::Ordering::Relaxed,
    );
}

/// The stage times in seconds.
pub fn times() -> String {
    let names = ["generate+build", "interpret", "compile", "run", "ptxas"];
    names
        .iter()
        .zip(&TIME)
        .map(|(n, t)| {
            format!(
                "{n} {:.1}",
                t.load(std::sync::atomic::Ordering::Relaxed) as f64 / 1e9
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Output elements checked: by exact value, within a tolerance, as unwritten (sentinel), and
/// skipped as unspecified.
pub static CHECKED: [std::sync::atomic::AtomicU64; 4] =
    [const { std::sync::atomic::AtomicU64::new(0) }; 4];

fn count(i: usize, n: u64) {
    CHECKED[i].fetch_add(n, std::sync::atomic::Ordering::Relaxed);
}

/// The element counts in words.
pub fn checked() -> String {
    let l = |i: usize| CHECKED[i].load(std::sync::atomic::Ordering::Relaxed);
    format!(
        "elements: {} exact, {} approximate, {} unwritten, {} unspecified",
        l(0),
        l(1),
        l(2),
        l(3)
    )
}

/// Buffers longer than this are not worth a case.
const MAX_LEN: u64 = 1 << 21;

/// How a case ended.
pub enum Verdict {
    /// Ran and agreed.
    Passed,
    /// Not run: the kernel needs more shared memory than a block has, or buffers too large.
    Skipped(&'static str),
    /// A case invalid on purpose got the typed error it should.
    Rejected,
    /// Something is wrong: a class (for the summary) and the full report.
    Failed { class: String, report: String },
}

/// The first verifier error of `e` that names a line of the library (a file under `src/`)
/// where every typed error must name the user's: shown as the error reads.
pub fn library_line(e: &Error) -> Option<String> {
    match e {
        Error::Verify(v) => (v.errors.iter())
            .find(|x| x.loc.file.starts_with("src/"))
            .map(|x| x.to_string()),
        _ => None,
    }
}

/// The seed of case `i` of a run.
pub fn seed_of(base: u64, i: u64) -> u64 {
    let mut x = base ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 31;
    x = x.wrapping_mul(0x7fb5_d329_728e_a185);
    x ^ (x >> 27)
}

/// The sentinel bits of element `i` of output parameter `p` (never NaN).
pub fn sentinel(dtype: DType, p: usize, i: u64) -> u64 {
    let h = seed_of(0x05e4_71e1, (p as u64) << 32 | i);
    match dtype {
        DType::F32 => (-(1000.0 + (h % 4096) as f32 * 0.25)).to_bits() as u64,
        DType::F64 => (-(1000.0 + (h % 4096) as f64 * 0.125)).to_bits(),
        d => h & value::mask(d),
    }
}

/// A case with its buffers sized and the interpreter's expectation.
pub struct Prepared {
    pub kernel: Kernel,
    pub params: Vec<Param>,
    /// Blocks along x, y and z.
    pub grid: [u32; 3],
    /// The dynamic shared array's length, if the kernel has one.
    pub dyn_len: Option<u32>,
    pub lens: Vec<u64>,
    pub expect: Outcome,
    /// The interpreter saw an out-of-bounds access: the device must report a memory fault.
    pub expect_oob: bool,
}

/// The launch a prepared case gets: grid, scalars, buffer lengths and contents.
pub fn describe(p: &Prepared) -> String {
    let mut s = match p.grid {
        [x, 1, 1] => format!("launch: {x} blocks"),
        g => format!("launch: a grid of {g:?} blocks"),
    };
    if let Some(n) = p.dyn_len {
        s.push_str(&format!(", a dynamic shared array of {n} elements"));
    }
    if let Some(c) = generator::launch_cluster(p.kernel.ir(), p.grid) {
        s.push_str(&format!(", in clusters of {c:?} blocks"));
    }
    for (i, prm) in p.params.iter().enumerate() {
        s.push_str(&match prm {
            Param::Scalar { dtype, bits } => format!(", param{i} = {}", show(*dtype, *bits)),
            Param::Input { data, .. } => {
                format!(", param{i}: {} elements {:?}", p.lens[i], data.flavor)
            }
            Param::Buffer { data, .. } => {
                format!(
                    ", param{i}: {} elements {:?}, read and written",
                    p.lens[i], data.flavor
                )
            }
            Param::Output { .. } => format!(", param{i}: {} elements", p.lens[i]),
        });
    }
    s
}

fn launch_of<'a>(
    params: &'a [Param],
    lens: Option<&[u64]>,
    (grid, cluster): ([u32; 3], Option<[u32; 3]>),
    dyn_len: Option<u32>,
    values: &'a [Box<dyn Fn(u64) -> u64 + 'a>],
) -> interp::Launch<'a> {
    let mut args = Vec::new();
    for (i, p) in params.iter().enumerate() {
        // Without lengths (the probe that measures the kernel's reach), a buffer whose length
        // the case fixes has it still: what the kernel reads past its end decides where the
        // kernel goes next.
        let len = match (lens, p) {
            (Some(l), _) => Some(l[i]),
            (
                None,
                Param::Input { len, .. } | Param::Output { len, .. } | Param::Buffer { len, .. },
            ) => *len,
            (None, Param::Scalar { .. }) => None,
        };
        let value = &*values[i];
        args.push(match p {
            Param::Input { .. } => Arg::Input { len, value },
            Param::Buffer { .. } => Arg::Buffer { len, value },
            Param::Output { .. } => Arg::Output { len, before: value },
            Param::Scalar { bits, .. } => Arg::Scalar(*bits),
        });
    }
    interp::Launch {
        grid,
        cluster,
        dyn_len,
        args,
    }
}

/// Per parameter, its elements before the launch: an input's or buffer's data, an output's
/// sentinels (nothing for a scalar).
fn value_fns(params: &[Param]) -> Vec<Box<dyn Fn(u64) -> u64 + '_>> {
    params
        .iter()
        .enumerate()
        .map(|(i, p)| match p {
            Param::Input { data, .. } | Param::Buffer { data, .. } => {
                let d: Data = *data;
                Box::new(move |e| d.value(e)) as Box<dyn Fn(u64) -> u64>
            }
            Param::Output { dtype, .. } => {
                let dt = *dtype;
                Box::new(move |e| sentinel(dt, i, e)) as Box<dyn Fn(u64) -> u64>
            }
            Param::Scalar { .. } => Box::new(|_| 0u64) as Box<dyn Fn(u64) -> u64>,
        })
        .collect()
}

/// Interprets the case twice: unbounded, to find how long each buffer must be, then with
/// those lengths. With `short`, a kernel without bounds checks gets one buffer an element
/// short (the device must report the fault); `trim` (every fourth value) cuts one buffer of a
/// checked kernel by some elements, which the kernel's guards must respect.
pub fn prepare(case: Case, short: bool, trim: u64) -> Result<Prepared, Verdict> {
    if let Some(what) = case.expect_reject
        && !(what == generator::SLICED_DIVERGENT && case.kernel.is_ok())
    {
        use coopgraph::planner::PlanError;
        let sliced = what == generator::SLICED_DIVERGENT;
        let by_planner = what == generator::ACROSS_GROUPS || sliced;
        let library = case.kernel.as_ref().err().and_then(library_line);
        return Err(match case.kernel {
            Err(_) if library.is_some() => Verdict::Failed {
                class: format!("invalid on purpose ({what}), rejected at a library line"),
                report: format!(
                    "the error names a line of the library, not the user's: {}\n{}",
                    library.unwrap_or_default(),
                    super::program::program(&case.ir, "")
                ),
            },
            Err(Error::Verify(_)) if !by_planner => Verdict::Rejected,
            Err(Error::Plan(PlanError::GroupCountAcrossGroups { .. }))
                if what == generator::ACROSS_GROUPS =>
            {
                Verdict::Rejected
            }
            Err(Error::Plan(PlanError::BlockExchangeInDivergentCode { .. })) if sliced => {
                Verdict::Rejected
            }
            Err(e) => Verdict::Failed {
                class: format!("invalid on purpose ({what}), rejected: {}", error_class(&e)),
                report: format!(
                    "expected a {} error, got:\n{e}\n{}",
                    if by_planner { "planner" } else { "verifier" },
                    super::program::program(&case.ir, "")
                ),
            },
            Ok(_) => Verdict::Failed {
                class: format!("accepted a kernel invalid on purpose: {what}"),
                report: format!(
                    "the kernel built:\n{}",
                    super::program::program(&case.ir, "")
                ),
            },
        });
    }
    let kernel = match case.kernel {
        Ok(k) => k,
        Err(Error::Plan(coopgraph::planner::PlanError::SharedMemory { .. })) => {
            return Err(Verdict::Skipped("shared memory"));
        }
        Err(e) => {
            return Err(Verdict::Failed {
                class: format!("rejected: {}", error_class(&e)),
                report: format!(
                    "a kernel the generator made valid does not build:\n{e}\n{}",
                    super::program::program(&case.ir, "")
                ),
            });
        }
    };
    let t0 = std::time::Instant::now();
    let grid = launch_grid(kernel.ir(), case.grid);
    let cluster = generator::launch_cluster(kernel.ir(), grid);
    let values = value_fns(&case.params);
    let probe = interp::run(
        kernel.ir(),
        &launch_of(&case.params, None, (grid, cluster), case.dyn_len, &values),
    );
    let mut lens = Vec::new();
    for (i, p) in case.params.iter().enumerate() {
        let len = match p {
            Param::Scalar { .. } => 0,
            Param::Input { len: Some(l), .. }
            | Param::Output { len: Some(l), .. }
            | Param::Buffer { len: Some(l), .. } => *l,
            _ => probe.max_index[i].map_or(1, |m| m + 1),
        };
        if len > MAX_LEN {
            return Err(Verdict::Skipped("buffers too large"));
        }
        lens.push(len);
    }
    let full = lens.clone();
    let checked = kernel.ir().bounds == Bounds::Checked;
    let accessed: Vec<usize> = (0..lens.len())
        .filter(|&i| probe.max_index[i].is_some())
        .collect();
    if short && !checked {
        // The longest-reaching buffer loses its last element: a fault.
        if let Some(&i) = accessed.iter().max_by_key(|&&i| lens[i]) {
            lens[i] -= 1;
        }
    } else if checked && !accessed.is_empty() && trim.is_multiple_of(4) {
        // Buffers shorter than the kernel's reach: the guards must stop at their ends.
        let i = accessed[(trim / 4) as usize % accessed.len()];
        lens[i] = lens[i].saturating_sub(1 + trim / 16 % lens[i].max(1));
    }
    // Buffers as long as the kernel reaches change nothing the probe saw (a buffer of a
    // length the case fixes may be shorter than that).
    let fixed = case.params.iter().any(|p| {
        matches!(
            p,
            Param::Input { len: Some(_), .. }
                | Param::Output { len: Some(_), .. }
                | Param::Buffer { len: Some(_), .. }
        )
    });
    let mut expect = if lens == full && !fixed {
        probe
    } else {
        interp::run(
            kernel.ir(),
            &launch_of(
                &case.params,
                Some(&lens),
                (grid, cluster),
                case.dyn_len,
                &values,
            ),
        )
    };
    if lens != full && checked && expect.events.iter().any(|e| !e.is_oob()) {
        // A load cut short left slots unwritten that the kernel goes on to use.
        lens = full;
        expect = interp::run(
            kernel.ir(),
            &launch_of(
                &case.params,
                Some(&lens),
                (grid, cluster),
                case.dyn_len,
                &values,
            ),
        );
    }
    if expect
        .events
        .iter()
        .any(|e| matches!(e, Event::Uncertain { .. }))
    {
        return Err(Verdict::Skipped(
            "a memory access under an unspecified condition, or a value that may be undefined",
        ));
    }
    let expect_oob = expect.events.iter().any(Event::is_oob);
    charge(1, t0);
    Ok(Prepared {
        kernel,
        params: case.params.clone(),
        grid,
        dyn_len: case.dyn_len,
        lens,
        expect,
        expect_oob,
    })
}

/// The grid a case launches: the case's, but along y and z only as far as the kernel reads a
/// block's index or the grid's extent there (the runtime refuses a grid along an axis the
/// kernel cannot tell blocks apart by, and a reduced case may have lost its reads).
pub fn launch_grid(ir: &coopgraph::ir::Ir, grid: [u32; 3]) -> [u32; 3] {
    use coopgraph::ir::expr::{ExprKind, IndexKind};
    let seen = ir
        .exprs
        .nodes()
        .iter()
        .filter_map(|n| match n.kind {
            ExprKind::Index(IndexKind::BlockIdx(a) | IndexKind::GridDim(a)) => Some(a.index() + 1),
            _ => None,
        })
        .max()
        .unwrap_or(1);
    std::array::from_fn(|a| if a < seen { grid[a] } else { 1 })
}

fn error_class(e: &Error) -> String {
    match e {
        Error::Verify(v) => v
            .errors
            .first()
            .map_or("verify".into(), |e| {
                format!("verify {:?}", std::mem::discriminant(&e.kind))
            })
            .replace("Discriminant", ""),
        Error::Plan(p) => format!("plan {}", first_word(&format!("{p:?}"))),
        Error::Runtime(r) => format!("runtime {}", first_word(&format!("{r:?}"))),
        _ => "other".into(),
    }
}

fn first_word(s: &str) -> String {
    s.split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or("")
        .to_string()
}

/// What a device run produced: the output buffers' bits, or the error.
pub type DeviceRun = Result<Vec<Option<Vec<u64>>>, RuntimeError>;

/// Runs the prepared case on `dev`. Compile errors are returned as the verdict.
pub fn run_on(dev: &Device, p: &Prepared) -> Result<DeviceRun, Verdict> {
    let t0 = std::time::Instant::now();
    let compiled = dev.compile(&p.kernel);
    charge(2, t0);
    let t0 = std::time::Instant::now();
    let f = match compiled {
        Ok(f) => f,
        Err(RuntimeError::Plan(coopgraph::planner::PlanError::SharedMemory { .. })) => {
            return Err(Verdict::Skipped("shared memory"));
        }
        Err(e) => {
            let e = Error::from(e);
            return Err(Verdict::Failed {
                class: format!("compile: {}", error_class(&e)),
                report: format!("compiling failed: {e}"),
            });
        }
    };
    let own = match p.kernel.ptx(dev.arch()) {
        Ok(own) => own,
        Err(e) => {
            let e = Error::from(e);
            return Err(Verdict::Failed {
                class: format!("emit: {}", error_class(&e)),
                report: format!("emitting failed after compiling: {e}"),
            });
        }
    };
    if f.image().ptx != own {
        return Err(Verdict::Failed {
            class: "cache: another kernel's module".into(),
            report: "the device's cache returned a module whose PTX differs from this kernel's"
                .into(),
        });
    }
    let mut bufs: Vec<Option<AnyBuf>> = Vec::new();
    for (i, prm) in p.params.iter().enumerate() {
        let b = match prm {
            Param::Input { dtype, data, .. } | Param::Buffer { dtype, data, .. } => {
                let bits: Vec<u64> = (0..p.lens[i]).map(|e| data.value(e)).collect();
                Some(AnyBuf::upload(dev, *dtype, &bits).map_err(|e| fail_rt("upload", e))?)
            }
            Param::Output { dtype, .. } => {
                let bits: Vec<u64> = (0..p.lens[i]).map(|e| sentinel(*dtype, i, e)).collect();
                Some(AnyBuf::upload(dev, *dtype, &bits).map_err(|e| fail_rt("upload", e))?)
            }
            Param::Scalar { .. } => None,
        };
        bufs.push(b);
    }
    let result = {
        let mut list = ArgList::new();
        let mut it = bufs.iter_mut();
        for prm in &p.params {
            let b = it.next().expect("one per parameter");
            match prm {
                Param::Input { .. } => b.as_ref().expect("a buffer").push_read(&mut list),
                Param::Output { .. } | Param::Buffer { .. } => {
                    b.as_mut().expect("a buffer").push_write(&mut list)
                }
                Param::Scalar { dtype, bits } => push_scalar(&mut list, *dtype, *bits),
            }
        }
        let mut config = LaunchConfig::grid(p.grid);
        config.dynamic_array_len = p.dyn_len;
        config.cluster = generator::launch_cluster(p.kernel.ir(), p.grid);
        if p.kernel.ir().bounds == Bounds::Checked {
            f.launch_with_report(config, list)
        } else {
            // SAFETY: the buffers cover every access the interpreter found, except in a case
            // cut short on purpose, which runs only on the simulator and must fault there.
            unsafe { f.launch_unchecked(config, list) }.map(|()| None)
        }
    };
    charge(3, t0);
    let report = match result {
        Ok(report) => report,
        Err(e) => return Ok(Err(e)),
    };
    // The simulator's printed text, in thread order, against the interpreter's lines.
    if let Some(report) = report
        && !p.expect.printed_unsure
        && !p.expect_oob
        && p.expect.events.is_empty()
    {
        let mut lines: Vec<&(u32, u32, String)> = p.expect.printed.iter().collect();
        lines.sort_by_key(|&&(block, thread, _)| (block, thread));
        let want: String = lines.into_iter().map(|(_, _, l)| l.as_str()).collect();
        if report.printed != want {
            return Err(Verdict::Failed {
                class: "mismatch: print".into(),
                report: format!(
                    "the simulator printed\n{}\nthe interpreter\n{want}",
                    report.printed
                ),
            });
        }
    }
    let mut out = Vec::new();
    for (prm, b) in p.params.iter().zip(&bufs) {
        out.push(match (prm, b) {
            (Param::Output { .. } | Param::Buffer { .. }, Some(b)) => {
                Some(b.bits().map_err(|e| fail_rt("download", e))?)
            }
            _ => None,
        });
    }
    Ok(Ok(out))
}

fn fail_rt(what: &str, e: RuntimeError) -> Verdict {
    Verdict::Failed {
        class: format!("runtime: {what}"),
        report: format!("{what} failed: {e}"),
    }
}

/// The first element where `got` disagrees with the interpreter.
pub fn compare(p: &Prepared, got: &[Option<Vec<u64>>]) -> Result<(), String> {
    let mut first: Option<String> = None;
    let mut wrong = 0u64;
    for (i, prm) in p.params.iter().enumerate() {
        // Elements nothing wrote keep their sentinel (an output) or their value before the
        // launch (a read-write buffer).
        let (dtype, before): (&DType, Box<dyn Fn(u64) -> u64>) = match (prm, &got[i]) {
            (Param::Output { dtype, .. }, Some(_)) => {
                (dtype, Box::new(move |e| sentinel(*dtype, i, e)))
            }
            (Param::Buffer { dtype, data, .. }, Some(_)) => {
                let d: Data = *data;
                (dtype, Box::new(move |e| d.value(e)))
            }
            _ => continue,
        };
        let Some(bits) = &got[i] else { continue };
        let cells = &p.expect.outputs[i];
        let mut n = [0u64; 4];
        for (e, &b) in bits.iter().enumerate() {
            let e = e as u64;
            let bad = match cells.get(&e) {
                None => {
                    n[2] += 1;
                    (b != before(e)).then(|| {
                        format!(
                            "param{i} ({dtype}) element {e}: the kernel wrote {} where nothing \
                             should be written",
                            show(*dtype, b)
                        )
                    })
                }
                Some(c) => {
                    let v = c.v;
                    if v.flags & (UNDEF | UNSPEC) != 0 {
                        n[3] += 1;
                        continue;
                    }
                    n[if v.flags & APPROX != 0 { 1 } else { 0 }] += 1;
                    let ok = if v.flags & APPROX != 0 {
                        value::close(*dtype, b, v.bits)
                    } else {
                        value::same(*dtype, b, v.bits)
                    };
                    (!ok).then(|| {
                        format!(
                            "param{i} ({dtype}) element {e}: got {}, expected {}",
                            show(*dtype, b),
                            show(*dtype, v.bits)
                        )
                    })
                }
            };
            if let Some(b) = bad {
                wrong += 1;
                match &mut first {
                    None => first = Some(b),
                    // A few more, for the pattern.
                    Some(f) if wrong <= 6 => {
                        let at = b.find("element").unwrap_or(0);
                        f.push_str(&format!("; {}", &b[at..]));
                    }
                    Some(_) => {}
                }
            }
        }
        for (j, c) in n.iter().enumerate() {
            count(j, *c);
        }
    }
    match first {
        None => Ok(()),
        Some(f) if wrong == 1 => Err(f),
        Some(f) => Err(format!("{f} ({wrong} elements differ)")),
    }
}

/// Compares two devices' outputs bit for bit, except where approximate functions or
/// scheduling may differ.
pub fn compare_devices(
    p: &Prepared,
    a: &[Option<Vec<u64>>],
    b: &[Option<Vec<u64>>],
) -> Result<(), String> {
    for (i, prm) in p.params.iter().enumerate() {
        let (Param::Output { dtype, .. } | Param::Buffer { dtype, .. }, Some(x), Some(y)) =
            (prm, &a[i], &b[i])
        else {
            continue;
        };
        for (e, (&u, &v)) in x.iter().zip(y).enumerate() {
            let flags = p.expect.outputs[i]
                .get(&(e as u64))
                .map_or(0, |c| c.v.flags);
            if flags & (TAINT | NONDET) != 0 || u == v || both_nan(*dtype, u, v) {
                continue;
            }
            return Err(format!(
                "param{i} ({dtype}) element {e}: GPU {} but simulator {}",
                show(*dtype, u),
                show(*dtype, v)
            ));
        }
    }
    Ok(())
}

/// Two NaNs of a float type: the GPU's NaN bits are not the simulator's instruction by
/// instruction, because ptxas simplifies around them. It moves negations across operations
/// (computing `a - x / y` as `a + (-x) / y`), which flips the sign of an f64 NaN the sum
/// passes on; and it folds `min(x, x)` to `x`, so a NaN `x` (say `0x7FC00000`, converted
/// from f64) comes out as it is where `min.f32` itself gives the canonical `0x7FFFFFFF`
/// (as the H200 does for two distinct NaNs, and the simulator for any two). That a value is
/// NaN is compared; which NaN, not.
fn both_nan(dtype: DType, a: u64, b: u64) -> bool {
    match dtype {
        DType::F32 => value::f32v(a).is_nan() && value::f32v(b).is_nan(),
        DType::F64 => value::f64v(a).is_nan() && value::f64v(b).is_nan(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_two_nans_of_a_float_type_pass_as_equal() {
        assert!(both_nan(DType::F32, 0x7FC0_0000, 0x7FFF_FFFF));
        assert!(both_nan(DType::F64, 0x7FF8 << 48, 0xFFF8 << 48));
        assert!(!both_nan(DType::F32, 0x7FC0_0000, 0x3F80_0000));
        assert!(!both_nan(DType::F32, 0x7F80_0000, 0x7FC0_0000));
        assert!(!both_nan(DType::U32, 0x7FC0_0000, 0x7FFF_FFFF));
    }
}

fn show(dtype: DType, bits: u64) -> String {
    match dtype {
        DType::F32 => format!("{} ({bits:#x})", value::f32v(bits)),
        DType::F64 => format!("{} ({bits:#x})", value::f64v(bits)),
        d => format!("{} ({bits:#x})", value::int(d, bits)),
    }
}

/// The verdict of a device run against the interpreter.
pub fn judge(p: &Prepared, run: &DeviceRun) -> Verdict {
    // After an out-of-bounds access the run must stop with its fault; what the interpreter
    // saw after it does not count.
    let first_oob = p.expect.events.iter().position(Event::is_oob);
    let bad_events: Vec<&Event> = p.expect.events[..first_oob.unwrap_or(p.expect.events.len())]
        .iter()
        .collect();
    if let Some(e) = bad_events.first() {
        let class = match e {
            Event::Undefined { what, .. } => format!("interp: undefined {what}"),
            other => format!("interp: {}", first_word(&format!("{other:?}"))),
        };
        return Verdict::Failed {
            class,
            report: format!("the interpreter saw {bad_events:?} in a kernel that built"),
        };
    }
    match (run, p.expect_oob) {
        (Err(RuntimeError::Sim(SimError::OutOfBounds(_))), true) => Verdict::Passed,
        (Ok(_), true) => Verdict::Failed {
            class: "sim: missed an out-of-bounds access".into(),
            report: format!(
                "the interpreter saw {:?}; the run reported nothing",
                p.expect.events
            ),
        },
        (Err(e), _) => Verdict::Failed {
            class: format!("device: {}", sim_class(e)),
            report: format!("the run failed: {e}"),
        },
        (Ok(got), false) => match compare(p, got) {
            Ok(()) => Verdict::Passed,
            Err(d) => Verdict::Failed {
                class: format!("mismatch: {}", mismatch_class(p)),
                report: d,
            },
        },
    }
}

fn sim_class(e: &RuntimeError) -> String {
    match e {
        RuntimeError::Sim(s) => format!("sim {}", first_word(&format!("{s:?}"))),
        other => first_word(&format!("{other:?}")),
    }
}

/// The op kinds of a kernel, for classes and the summary.
pub fn op_kinds(k: &Kernel) -> BTreeMap<&'static str, u64> {
    use coopgraph::ir::expr::ExprKind;
    let mut m = BTreeMap::new();
    k.ir()
        .walk(|op, _| *m.entry(k.ir().op(op).kind.name()).or_insert(0) += 1);
    // Arrays of several dimensions, the dynamic one and views (the generator's and the radix
    // ranks'), by declaration.
    for a in &k.ir().arrays {
        let name = match a.dims.len() {
            _ if a.view_of.is_some() => "shared_view",
            _ if a.dynamic => "dynamic_array",
            2 => "shared_2d",
            3 => "shared_3d",
            _ => continue,
        };
        *m.entry(name).or_insert(0) += 1;
    }
    // Kernels whose launches give their cluster shape.
    if k.ir().cluster.is_some_and(|c| c.dims.is_none()) {
        m.insert("cluster_at_launch", 1);
    }
    // Reads of arrays are expressions, not ops: counted too.
    for n in k.ir().exprs.nodes() {
        let name = match n.kind {
            ExprKind::LocalRead(..) => "local_read",
            ExprKind::ConstRead(..) => "const_read",
            _ => continue,
        };
        *m.entry(name).or_insert(0) += 1;
    }
    m
}

fn mismatch_class(p: &Prepared) -> String {
    let kinds = op_kinds(&p.kernel);
    let mut names: Vec<&str> = kinds
        .keys()
        .copied()
        .filter(|n| {
            matches!(
                *n,
                "reduce" | "scan" | "exchange" | "neighbor" | "scatter" | "shared_write" | "tiles"
            )
        })
        .collect();
    names.sort();
    if names.is_empty() {
        "elementwise".into()
    } else {
        names.join("+")
    }
}

/// Kernels waiting for ptxas: one module per arch holding many entries.
#[derive(Default)]
pub struct Assembler {
    kernels: Vec<(Spec, Kernel)>,
    /// Every kernel for every arch (else each for one arch in turn, by its seed).
    pub every_arch: bool,
}

impl Assembler {
    pub fn add(&mut self, spec: Spec, k: &Kernel) {
        if self.kernels.iter().any(|(_, o)| o.name() == k.name()) {
            return;
        }
        // Emitted only for a dump: emitting every case once more would cost the sweep time.
        if let Ok(d) = std::env::var("COOPGRAPH_FUZZ_DUMP")
            && let Ok(ptx) = k.ptx(Arch::Sm90)
        {
            let _ = std::fs::write(format!("{d}/k{:016x}.ptx", spec.seed), ptx);
        }
        self.kernels.push((spec, k.clone()));
    }

    pub fn len(&self) -> usize {
        self.kernels.len()
    }

    /// Assembles what was added; on a rejection, finds the kernels it was.
    pub fn finish(&mut self) -> Vec<(Spec, String, Kernel)> {
        let t0 = std::time::Instant::now();
        let failures = self.assemble_all();
        charge(4, t0);
        failures
    }

    fn assemble_all(&mut self) -> Vec<(Spec, String, Kernel)> {
        let kernels = std::mem::take(&mut self.kernels);
        let Some(ptxas) = crate::common::ptxas() else {
            return Vec::new();
        };
        let choice = std::env::var("COOPGRAPH_FUZZ_PTXAS").unwrap_or_default();
        let all = self.every_arch || choice == "all";
        // `every:N`: only every N-th case goes to ptxas (for long runs, where ptxas would
        // take most of the time), each still for one arch in turn.
        let every = choice
            .strip_prefix("every:")
            .and_then(|n| n.parse::<u64>().ok())
            .filter(|&n| n > 0 && !self.every_arch)
            .unwrap_or(1);
        let mut failures = Vec::new();
        for (i, arch) in Arch::ALL.into_iter().enumerate() {
            // Each case for one arch in turn (every arch with COOPGRAPH_FUZZ_PTXAS=all).
            let mine: Vec<&(Spec, Kernel)> = kernels
                .iter()
                .filter(|(spec, _)| (spec.seed / 3).is_multiple_of(every))
                .filter(|(spec, _)| all || spec.seed % 3 == i as u64)
                .collect();
            if mine.is_empty() {
                continue;
            }
            // One module of every case's entry; a case that does not emit is a failure.
            let mut module = coopgraph::ptx::Module {
                arch,
                files: Vec::new(),
                functions: Vec::new(),
            };
            let mut emitted = Vec::new();
            for &(spec, k) in &mine {
                // Clusters need sm_90: older arches refuse them with a typed error.
                if arch < Arch::Sm90 && k.ir().uses_cluster() {
                    if !matches!(k.module(arch), Err(PlanError::ArchTooOld { .. })) {
                        let what = format!("a cluster kernel emitted for {arch}");
                        failures.push((spec.clone(), what, k.clone()));
                    }
                    continue;
                }
                match k.module(arch) {
                    Ok(m) => {
                        module.append(m);
                        emitted.push((spec, k));
                    }
                    Err(e) => failures.push((
                        spec.clone(),
                        format!("emitting for {arch} failed: {e}"),
                        k.clone(),
                    )),
                }
            }
            if assemble(&ptxas, &coopgraph::ptx::write_module(&module), arch).is_ok() {
                continue;
            }
            for (spec, k) in emitted {
                let Ok(ptx) = k.ptx(arch) else { continue };
                if let Err(log) = assemble(&ptxas, &ptx, arch) {
                    failures.push((
                        spec.clone(),
                        format!("ptxas -arch={arch} rejected it:\n{log}"),
                        k.clone(),
                    ));
                }
            }
        }
        failures
    }
}

fn assemble(ptxas: &std::path::Path, ptx: &str, arch: Arch) -> Result<(), String> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!("coopgraph-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let (src, out) = (
        dir.join(format!("f{n}.ptx")),
        dir.join(format!("f{n}.cubin")),
    );
    std::fs::write(&src, ptx).expect("write PTX to a temporary file");
    if let Ok(d) = std::env::var("COOPGRAPH_FUZZ_DUMP") {
        let _ = std::fs::write(format!("{d}/f{n}_{arch}.ptx"), ptx);
    }
    let line_info = ptx.lines().any(|l| l.starts_with(".file "));
    let res = Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .args(line_info.then_some("-lineinfo"))
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .output();
    let _ = std::fs::remove_file(&src);
    let _ = std::fs::remove_file(&out);
    // A ptxas that does not run says nothing of the PTX: the run stops here.
    let res = res.unwrap_or_else(|e| panic!("ptxas ({}) does not run: {e}", ptxas.display()));
    if res.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&res.stderr).into_owned())
    }
}

/// One run of a case: what the spec picks, its verdict, the kernel if it built.
pub struct Ran {
    pub spec: Spec,
    pub verdict: Verdict,
    pub kernel: Option<Kernel>,
    /// The grid it launched (1 block where it did not run).
    pub grid: [u32; 3],
    /// The open-defect features it used.
    pub features: Vec<generator::Defect>,
}

/// [`run_case`], with a panic anywhere in it (the crate, the simulator, the interpreter)
/// taken as the case's failure; the device is replaced after one.
pub fn run_guarded(dev: &mut Device, seed: u64, skip: &[Vec<u32>]) -> Vec<Ran> {
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_case(dev, seed, skip)));
    match run {
        Ok(r) => r,
        Err(payload) => {
            *dev = super::fuzz_sim();
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            vec![Ran {
                spec: Spec {
                    seed,
                    tweak: None,
                    skip: skip.to_vec(),
                },
                verdict: Verdict::Failed {
                    class: format!("panic: {}", msg.lines().next().unwrap_or("")),
                    report: format!("the case panicked: {msg}"),
                },
                kernel: None,
                grid: [1, 1, 1],
                features: Vec::new(),
            }]
        }
    }
}

/// Runs case `seed` (and, every fifth case, a twin of it on the same device, when twins are
/// on), each leaving out the statements `skip` names.
pub fn run_case(dev: &Device, seed: u64, skip: &[Vec<u32>]) -> Vec<Ran> {
    let spec = Spec {
        seed,
        tweak: None,
        skip: skip.to_vec(),
    };
    let mut out = Vec::new();
    let t0 = std::time::Instant::now();
    let case = generator::generate(&spec);
    charge(0, t0);
    let tweaks = case.tweaks;
    let short = seed.is_multiple_of(41);
    out.push(one(dev, spec.clone(), case, short, seed / 7));
    if tweaks > 0 && seed.is_multiple_of(5) && generator::enabled(generator::Defect::CacheTwins) {
        let twin = Spec {
            tweak: Some((seed / 5 % u64::from(tweaks)) as u32),
            ..spec
        };
        let case = generator::generate(&twin);
        out.push(one(dev, twin, case, false, 1));
    }
    out
}

/// Runs the case `spec` picks as the sweep does (a twin after its case, on one device), and
/// assembles what built for every arch; returns the failures' classes and reports.
pub fn reproduce(spec: &Spec) -> Vec<(String, String, Option<Kernel>)> {
    let mut dev = super::fuzz_sim();
    let mut runs = run_guarded(&mut dev, spec.seed, &spec.skip);
    if let Some(t) = spec.tweak {
        let twin = Spec {
            tweak: Some(t),
            ..spec.clone()
        };
        let case = generator::generate(&twin);
        runs.truncate(1);
        runs.push(one(&dev, twin, case, false, 1));
    }
    let mut asm = Assembler {
        every_arch: true,
        ..Assembler::default()
    };
    let mut out = Vec::new();
    for r in runs {
        if let Some(k) = &r.kernel {
            asm.add(r.spec.clone(), k);
        }
        if let Verdict::Failed { class, report } = r.verdict {
            out.push((class, report, r.kernel));
        }
    }
    for (_, log, k) in asm.finish() {
        out.push((PTXAS.into(), log, Some(k)));
    }
    out
}

/// The class of a ptxas rejection.
pub const PTXAS: &str = "ptxas rejected the PTX";

fn one(dev: &Device, spec: Spec, case: Case, short: bool, trim: u64) -> Ran {
    let features = case.features.clone();
    let (verdict, kernel, grid) = match prepare(case, short, trim) {
        Ok(p) => {
            let v = match run_on(dev, &p) {
                Ok(run) => judge(&p, &run),
                Err(v) => v,
            };
            (v, Some(p.kernel), p.grid)
        }
        Err(v) => (v, None, [1, 1, 1]),
    };
    Ran {
        spec,
        verdict: with_features(verdict, &features),
        kernel,
        grid,
        features,
    }
}

/// Names the open-defect features a failing case used.
fn with_features(v: Verdict, features: &[generator::Defect]) -> Verdict {
    let features: Vec<_> = features
        .iter()
        .filter(|f| generator::OPEN_DEFECTS.contains(f))
        .collect();
    match v {
        Verdict::Failed { class, report } if !features.is_empty() => Verdict::Failed {
            class,
            report: format!(
                "{report}
(the case uses open-defect features {features:?})"
            ),
        },
        v => v,
    }
}

//! Helpers shared by the test modules: ptxas, golden files, the default device, random data.

use coopgraph::ir::Element;
use coopgraph::ptx::Arch;
use coopgraph::runtime::Device;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// The pinned ptxas: `$COOPGRAPH_PTXAS`, else the copy `.ci/install-ptxas` puts under
/// `.tools/`, else `ptxas` on the PATH. `None` if there is none; under `CI=true` a missing
/// ptxas fails the test instead.
pub fn ptxas() -> Option<PathBuf> {
    static PATH: OnceLock<Option<PathBuf>> = OnceLock::new();
    let found = PATH.get_or_init(|| {
        if let Ok(p) = std::env::var("COOPGRAPH_PTXAS") {
            return Some(PathBuf::from(p));
        }
        let local = PathBuf::from(".tools/ptxas-13.0.88/nvidia/cu13/bin/ptxas");
        if local.is_file() {
            return Some(local);
        }
        let on_path = Command::new("ptxas").arg("--version").output();
        on_path
            .ok()
            .filter(|o| o.status.success())
            .map(|_| PathBuf::from("ptxas"))
    });
    if found.is_none() && std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("ptxas is required under CI=true: run .ci/install-ptxas");
    }
    found.clone()
}

/// Assembles `ptx` for `arch` with ptxas; panics with the assembler's log on failure. PTX with
/// line information (`.file` directives) is assembled with `-lineinfo`, as the runtime asks the
/// driver's JIT to. Returns false (after saying so once) when no ptxas is available.
pub fn assemble(ptx: &str, arch: Arch, what: &str) -> bool {
    let Some(ptxas) = ptxas() else {
        static SAID: OnceLock<()> = OnceLock::new();
        SAID.get_or_init(|| eprintln!("note: no ptxas found; PTX is not assembled"));
        return false;
    };
    let dir = std::env::temp_dir().join(format!("coopgraph-ptxas-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let src = dir.join(format!("k{n}.ptx"));
    let out = dir.join(format!("k{n}.cubin"));
    std::fs::write(&src, ptx).expect("write PTX to a temporary file");
    let line_info = ptx.lines().any(|l| l.starts_with(".file "));
    let res = Command::new(&ptxas)
        .arg(format!("-arch={arch}"))
        .args(line_info.then_some("-lineinfo"))
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .output()
        .expect("run ptxas");
    let _ = std::fs::remove_file(&src);
    let _ = std::fs::remove_file(&out);
    assert!(
        res.status.success(),
        "ptxas -arch={arch} rejected {what}:\n{}\n{}",
        String::from_utf8_lossy(&res.stderr),
        ptx
    );
    true
}

static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Assembles a built kernel for every supported arch.
pub fn assemble_all(kernel: &coopgraph::Kernel) {
    for arch in Arch::ALL {
        assemble(&kernel.ptx(arch).expect("emits"), arch, kernel.name());
    }
}

/// The lines of a built kernel's sm_90 PTX that `keep` keeps, counted: how tests see whether
/// a lowering left a guard or an instruction out.
pub fn ptx_lines(kernel: &coopgraph::Kernel, keep: impl Fn(&str) -> bool) -> usize {
    let ptx = kernel.ptx(Arch::Sm90).expect("emits");
    ptx.lines().filter(|l| keep(l)).count()
}

/// A predicated shared-memory load (`@%p ld.shared...`): an array guard.
pub fn guarded_shared_load(line: &str) -> bool {
    line.trim_start().starts_with('@') && line.contains("ld.shared")
}

/// Collects kernels and assembles them together, one ptxas run per arch (a module may hold
/// many entries), when dropped or on [`Batch::finish`]. Entry names must differ.
#[derive(Default)]
pub struct Batch {
    modules: Vec<(String, Vec<coopgraph::ptx::Module>)>,
}

impl Batch {
    /// Adds a kernel.
    pub fn add(&mut self, kernel: &coopgraph::Kernel) {
        let modules = Arch::ALL
            .iter()
            .map(|&a| kernel.module(a).expect("emits"))
            .collect();
        self.modules.push((kernel.name().to_string(), modules));
    }

    /// Assembles everything added so far.
    pub fn finish(&mut self) {
        if self.modules.is_empty() {
            return;
        }
        for (i, arch) in Arch::ALL.into_iter().enumerate() {
            let mut module = coopgraph::ptx::Module {
                arch,
                files: Vec::new(),
                functions: Vec::new(),
            };
            for (_, m) in &self.modules {
                module.append(m[i].clone());
            }
            let names: Vec<&str> = self.modules.iter().map(|(n, _)| n.as_str()).collect();
            assemble(
                &coopgraph::ptx::write_module(&module),
                arch,
                &names.join(", "),
            );
        }
        self.modules.clear();
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.finish();
        }
    }
}

/// The package root, where the tests that read the source tree look: the working directory,
/// where `cargo test` runs them and the GPU machine's runner runs the staged binaries beside a
/// copy of the tree. Never the build machine's path (`CARGO_MANIFEST_DIR`), which a binary
/// run elsewhere does not have. Panics, naming the directory, where no `Cargo.toml` is.
pub fn package_root() -> &'static Path {
    let root = Path::new("");
    assert!(
        root.join("Cargo.toml").is_file(),
        "tests that read the source tree run from the package root, not {:?}",
        std::env::current_dir()
    );
    root
}

/// Compares `actual` with the golden file `tests/golden/<name>`; with `BLESS=1` rewrites it.
/// Paths are relative to the [`package_root`].
pub fn check(name: &str, actual: &str) {
    let dir = package_root().join("tests/golden");
    let path = dir.join(name);
    if std::env::var("BLESS").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(&dir).expect("create tests/golden");
        std::fs::write(&path, actual).expect("write golden file");
        return;
    }
    let Ok(expected) = std::fs::read_to_string(&path) else {
        panic!(
            "golden file {} is missing; run with BLESS=1 to create it",
            path.display()
        );
    };
    if expected != actual {
        let mut diff = String::new();
        for (i, (e, a)) in expected.lines().zip(actual.lines()).enumerate() {
            if e != a {
                diff.push_str(&format!("line {}:\n- {e}\n+ {a}\n", i + 1));
            }
        }
        let (ne, na) = (expected.lines().count(), actual.lines().count());
        if ne != na {
            diff.push_str(&format!("{ne} lines expected, {na} found\n"));
        }
        panic!(
            "{} differs from the output (BLESS=1 refreshes it):\n{diff}",
            path.display()
        );
    }
}

/// The device tests run on: the GPU where one is present or `COOPGRAPH_DEVICE=cuda` demands
/// it, the simulator otherwise.
pub fn device() -> &'static Device {
    static DEV: OnceLock<Device> = OnceLock::new();
    DEV.get_or_init(|| match Device::default_device() {
        Ok(d) => d,
        Err(e) => panic!("no device for the tests: {e}"),
    })
}

/// A small deterministic generator (xorshift64*).
pub struct Rng(u64);

impl Rng {
    /// Seeded generator.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A value of `T`: any bits for integers, a finite value in [-1000, 1000) for floats.
    pub fn value<T: Element>(&mut self) -> T {
        let bits = self.next();
        match T::DTYPE {
            coopgraph::ir::DType::F32 => {
                let v = (bits >> 40) as f32 / (1u64 << 24) as f32 * 2000.0 - 1000.0;
                T::from_bits(v.to_bits() as u64)
            }
            coopgraph::ir::DType::F64 => {
                let v = (bits >> 11) as f64 / (1u64 << 53) as f64 * 2000.0 - 1000.0;
                T::from_bits(v.to_bits())
            }
            _ => T::from_bits(bits),
        }
    }

    /// `n` values of `T`.
    pub fn vec<T: Element>(&mut self, n: usize) -> Vec<T> {
        (0..n).map(|_| self.value()).collect()
    }
}

/// Bitwise equality, with every NaN equal to every NaN.
pub fn same<T: Element>(a: T, b: T) -> bool {
    let is_nan = |v: T| match T::DTYPE {
        coopgraph::ir::DType::F32 => f32::from_bits(v.to_bits() as u32).is_nan(),
        coopgraph::ir::DType::F64 => f64::from_bits(v.to_bits()).is_nan(),
        _ => false,
    };
    a.to_bits() == b.to_bits() || (is_nan(a) && is_nan(b))
}

/// The plan of `kernel`'s first block-wide collective (panics when it has none).
pub fn first_collective(kernel: &coopgraph::Kernel) -> coopgraph::planner::CollectivePlan {
    let plan = kernel.plan();
    let first = plan.collectives().values().flatten().next();
    first
        .cloned()
        .unwrap_or_else(|| panic!("{}: no collective", kernel.name()))
}

/// Asserts two slices are equal element by element (see [`same`]), naming the first
/// difference.
pub fn assert_same<T: Element>(actual: &[T], expected: &[T], what: &str) {
    assert_eq!(actual.len(), expected.len(), "{what}: lengths differ");
    if let Some(i) = (0..actual.len()).find(|&i| !same(actual[i], expected[i])) {
        panic!(
            "{what}: element {i} is {:?}, expected {:?} (device: {:?})",
            actual[i],
            expected[i],
            device().backend()
        );
    }
}

/// The simulator with the race checker on and the uninitialized-read checker off, so that a
/// missing barrier shows as the race it is rather than as an earlier read of unwritten memory.
pub fn race_checker() -> Device {
    Device::sim_with(coopgraph::runtime::SimOptions {
        check_uninit: false,
        ..coopgraph::runtime::SimOptions::default()
    })
}

/// `dev.compile(kernel)`, where only a runtime error (a simulator fault, a launch problem) is
/// an expected outcome; a kernel that cannot be emitted for the device fails the test.
pub fn compiled(
    dev: &Device,
    kernel: &coopgraph::Kernel,
) -> Result<coopgraph::runtime::Function, coopgraph::runtime::RuntimeError> {
    dev.compile(kernel).map_err(|e| match e {
        coopgraph::runtime::RuntimeError::Plan(p) => panic!("{}: {p}", kernel.name()),
        r => r,
    })
}

/// Runs a kernel taking `(x, y)` (i32) on one block of `dev`, `y` of `out` zeroed elements,
/// and returns `y`.
pub fn run_xy(
    dev: &Device,
    kernel: &coopgraph::Kernel,
    xs: &[i32],
    out: usize,
) -> Result<Vec<i32>, coopgraph::runtime::RuntimeError> {
    let f = compiled(dev, kernel)?;
    let x = dev.upload(xs)?;
    let mut y = dev.alloc_zeroed::<i32>(out)?;
    f.launch_grid(1, (&x, &mut y))?;
    y.to_vec()
}

/// Asserts that leaving out each block barrier the builder recorded in `kernel` (each
/// `sync_block`, the user's or an op's own) makes `run` report a race, and returns how many
/// there are.
pub fn assert_sync_blocks_necessary<R: std::fmt::Debug>(
    kernel: &coopgraph::Kernel,
    run: impl Fn(&coopgraph::Kernel) -> Result<R, coopgraph::runtime::RuntimeError>,
) -> usize {
    assert_each_removal_races(kernel, "sync_block", |i| kernel.without_sync_block(i), run)
}

/// Asserts that leaving out each group barrier of `kernel` (a logical warp's, a warp's or a
/// group of whole warps' `sync`, its own or a composite op's) makes `run` report a race: every
/// one is needed. Returns how many there are.
pub fn assert_group_syncs_necessary<R: std::fmt::Debug>(
    kernel: &coopgraph::Kernel,
    run: impl Fn(&coopgraph::Kernel) -> Result<R, coopgraph::runtime::RuntimeError>,
) -> usize {
    assert_each_removal_races(
        kernel,
        "group barrier",
        |i| kernel.without_group_sync(i),
        run,
    )
}

/// Asserts that each kernel `without(i)` gives (`i` from 0 to the first `None`: `kernel`
/// without its barrier `i` of kind `what`) makes `run` report a race; returns how many.
fn assert_each_removal_races<R: std::fmt::Debug>(
    kernel: &coopgraph::Kernel,
    what: &str,
    without: impl Fn(usize) -> Option<coopgraph::Kernel>,
    run: impl Fn(&coopgraph::Kernel) -> Result<R, coopgraph::runtime::RuntimeError>,
) -> usize {
    let mut i = 0;
    while let Some(k) = without(i) {
        let result = run(&k);
        assert!(
            matches!(
                result,
                Err(coopgraph::runtime::RuntimeError::Sim(
                    coopgraph::sim::SimError::Race(_)
                ))
            ),
            "{}: without {what} {i} the race checker says {result:?}",
            kernel.name()
        );
        i += 1;
    }
    i
}

/// Asserts that leaving out each barrier the planner placed in `kernel` makes `run` report a
/// race: every barrier is needed.
pub fn assert_barriers_necessary<R: std::fmt::Debug>(
    kernel: &coopgraph::Kernel,
    run: impl Fn(&coopgraph::Kernel) -> Result<R, coopgraph::runtime::RuntimeError>,
) {
    for i in 0..kernel.plan().barriers().len() {
        let without = kernel.without_barrier(i).expect("barrier exists");
        let result = run(&without);
        assert!(
            matches!(
                result,
                Err(coopgraph::runtime::RuntimeError::Sim(
                    coopgraph::sim::SimError::Race(_)
                ))
            ),
            "{}: without barrier {i} ({:?}) the race checker says {result:?}\n{}",
            kernel.name(),
            kernel.plan().barriers()[i],
            kernel.explain()
        );
    }
}

/// Every message logged through `log` in this process, as `LEVEL text` (a logger that keeps
/// every level is installed on the first call). Tests run in parallel: look for lines that
/// name what the test itself made.
pub fn logged() -> &'static Mutex<Vec<String>> {
    struct Capture;
    static LINES: Mutex<Vec<String>> = Mutex::new(Vec::new());
    impl log::Log for Capture {
        fn enabled(&self, _: &log::Metadata<'_>) -> bool {
            true
        }
        fn log(&self, record: &log::Record<'_>) {
            let line = format!("{} {}", record.level(), record.args());
            LINES.lock().unwrap_or_else(|p| p.into_inner()).push(line);
        }
        fn flush(&self) {}
    }
    static CAPTURE: Capture = Capture;
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let _ = log::set_logger(&CAPTURE);
        log::set_max_level(log::LevelFilter::Trace);
    });
    &LINES
}

/// The logged lines that contain `needle`.
pub fn logged_with(needle: &str) -> Vec<String> {
    logged()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .filter(|l| l.contains(needle))
        .cloned()
        .collect()
}

/// The error function in f64 (to about 1e-16 relative): its Taylor series below 2.5, one
/// minus the continued fraction of `erfc` above. The reference of the tests of `erf`.
pub fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    let v = if a < 2.5 {
        let (mut term, mut sum, z) = (a, a, a * a);
        for n in 1..200 {
            term *= -z / n as f64;
            let t = term / (2 * n + 1) as f64;
            sum += t;
            if t.abs() < 1e-18 * sum.abs() {
                break;
            }
        }
        sum * std::f64::consts::FRAC_2_SQRT_PI
    } else {
        1.0 - erfc_fraction(a)
    };
    v.copysign(x)
}

/// `erfc(a)` for `a >= 2.5` by its continued fraction,
/// `e^-a^2 / sqrt(π) / (a + (1/2) / (a + 1 / (a + (3/2) / (a + ...))))`.
fn erfc_fraction(a: f64) -> f64 {
    let mut f = a;
    for k in (1..120).rev() {
        f = a + (k as f64 / 2.0) / f;
    }
    (-a * a).exp() / std::f64::consts::PI.sqrt() / f
}

/// The complementary error function in f64 (see [`erf`]).
pub fn erfc(x: f64) -> f64 {
    if x >= 2.5 {
        erfc_fraction(x)
    } else {
        1.0 - erf(x)
    }
}

/// Calls `one::<T>(&mut batch)` for every element type, into one batch.
macro_rules! every_dtype {
    ($one:ident) => {{
        let mut batch = Batch::default();
        $one::<i8>(&mut batch);
        $one::<i16>(&mut batch);
        $one::<i32>(&mut batch);
        $one::<i64>(&mut batch);
        $one::<u8>(&mut batch);
        $one::<u16>(&mut batch);
        $one::<u32>(&mut batch);
        $one::<u64>(&mut batch);
        $one::<f32>(&mut batch);
        $one::<f64>(&mut batch);
    }};
}

/// Calls `$go!(K, V)` for the key dtype `$pick` names (0..10, the last for any larger) and
/// a value dtype: `u32`, or for the even picks with `$pairs` another of each width, so the
/// sorts' tests cover values of every size.
macro_rules! key_value_dtypes {
    ($pick:expr, $pairs:expr, $go:ident) => {
        match ($pick, $pairs && $pick.is_multiple_of(2)) {
            (0, false) => $go!(u8, u32),
            (0, true) => $go!(u8, f64),
            (1, _) => $go!(i8, u32),
            (2, false) => $go!(u16, u32),
            (2, true) => $go!(u16, i16),
            (3, _) => $go!(i16, u32),
            (4, false) => $go!(u32, u32),
            (4, true) => $go!(u32, u8),
            (5, _) => $go!(i32, u32),
            (6, false) => $go!(u64, u32),
            (6, true) => $go!(u64, i64),
            (7, _) => $go!(i64, u32),
            (8, false) => $go!(f32, u32),
            (8, true) => $go!(f32, f32),
            _ => $go!(f64, u32),
        }
    };
}

/// The [`PrimitiveProblem`](coopgraph::ir::PrimitiveProblem) the verifier reports for `k`
/// (which must fail to build), checked to name the user's `line`.
pub fn primitive_problem(
    k: coopgraph::KernelBuilder,
    line: u32,
) -> coopgraph::ir::PrimitiveProblem {
    let Err(coopgraph::Error::Verify(e)) = k.build() else {
        panic!("built")
    };
    let found = e.errors.iter().find_map(|err| match err.kind {
        coopgraph::ir::VerifyErrorKind::Primitive(p) => Some((p, err.loc.line)),
        _ => None,
    });
    let (p, at) = found.unwrap_or_else(|| panic!("no primitive error in {e}"));
    assert_eq!(at, line, "{p:?} at the wrong line");
    p
}

/// The block orders the look-back tests run in: interleaved both ways and two shuffles, so a
/// result never depends on which block the scheduler runs first.
pub const BLOCK_ORDERS: [coopgraph::sim::BlockOrder; 4] = [
    coopgraph::sim::BlockOrder::Interleaved,
    coopgraph::sim::BlockOrder::InterleavedReversed,
    coopgraph::sim::BlockOrder::InterleavedShuffled { seed: 5 },
    coopgraph::sim::BlockOrder::InterleavedShuffled { seed: 6 },
];

/// A simulator (every checker on) that runs a launch's blocks in `order`.
pub fn sim_in(order: coopgraph::sim::BlockOrder) -> coopgraph::runtime::Device {
    coopgraph::runtime::Device::sim_with(coopgraph::sim::SimOptions {
        block_order: order,
        ..coopgraph::sim::SimOptions::default()
    })
}

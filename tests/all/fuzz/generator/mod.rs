//! The generator: random kernels over every op of the builder, valid by construction.
//!
//! It follows the verifier's and the planner's rules as it goes: collectives only where every
//! enclosing condition is uniform over their group, warp groups only in blocks of whole warps,
//! block reductions and scans only in blocks the verifier accepts, conversions between
//! arrangements only where their exchange can run (its scope at most 32 threads or the whole
//! block, every thread of it present), exclusive scans with a seed, commutative-only algorithms
//! with commutative operators, scatters to distinct positions, shared arrays with a barrier
//! between writes and reads. It tracks every payload's arrangement by the documented rule
//! (fixed by its first producer; free payloads never get one later), which slots are written,
//! and keeps payloads it cannot store where they are observable through an accumulator.
//!
//! Blocks are of one, two or three dimensions of any size (odd ones and those short of a warp
//! weighted up), grids of one, two or three: a grid's blocks along y and z tell themselves
//! apart through the linear block index ([`Gen::block_id`]) that stores, indexed accesses and
//! atomics offset by, while `tiles` loops and default offsets step along x only (so blocks
//! that differ along y or z also repeat that work, writing the same elements).
//!
//! Each case is a pure function of its seed. A *twin* of a case (same seed, one tweak) differs
//! only in a field the cache key must see: a shared array's length, a temp storage's spec or a
//! payload's alignment.

mod arrays;
mod atomic;
mod cluster;
pub use cluster::launch_cluster;
mod collectives;
mod expr;
mod flow;
mod histogram;
mod indexed;
mod lanes;
mod merge_sort;
mod ops;
mod print;
mod run_length;
mod sort;
mod vars;
mod warp_groups;
mod warp_segmented;

use super::types::{AnyData, AnyInput, AnyScalar, Fz, with_dtype};
use crate::common::Rng;
use coopgraph::ir::{Arrangement, DType, Element, Group, GroupKind, Tile};
use expr::Leaves;

use coopgraph::{Kernel, KernelBuilder};

/// A generator feature that has triggered a defect of the crate: on by default once the
/// defect is fixed, off while it is open ([`OPEN_DEFECTS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Defect {
    /// Twins: kernels differing only in a shared array's length, a temp storage's spec or a
    /// payload's alignment, compiled on one device (the cache must tell them apart).
    CacheTwins,
    /// A raking block scan followed by a block collective that writes shared memory, with no
    /// user barrier between.
    RakingScanThenCollective,
    /// Exchanges in blocks of fewer than 32 threads that are not a power of two.
    SmallBlockExchange,
    /// Exchanges to or from `Striped { threads: G }` for `G` not a power of two (nor the
    /// block).
    StripedNonPow2,
    /// A non-broadcast reduction's result stored from every rank: a read of a value that
    /// only rank 0 holds, which the verifier must reject (such cases expect a typed error).
    NonBroadcastStored,
    /// A scatter's result without a hole value stored whole, its holes (positions no item
    /// was scattered to) included: the verifier must reject it (such cases expect a typed
    /// error).
    ScatterHoles,
    /// A store with each group's own valid count of a payload whose conversion's groups do
    /// not nest in the store's (striped over 6 threads, stored by logical warps of 8): the
    /// planner must reject it (such cases expect its typed error, `GroupCountAcrossGroups`).
    GroupCountAcrossGroups,
    /// Shared-array indices past the array's end, in kernels without bounds checks (the
    /// simulator must report them; a checked kernel guards them).
    SharedArrayOverflow,
    /// Local- and constant-array indices past the array's end, in kernels without bounds
    /// checks (the simulator must report them, naming the array).
    ArrayOverflow,
    /// Temp storages without auto-sync used with only the barriers their own uses need (not
    /// one before and after each use).
    ManualStorageAlias,
    /// Slots of a payload read in the expressions of an op that also converts it (as a map
    /// operand, or the source of a neighbour op).
    ItemOfConvertedOperand,
    /// Time-sliced exchanges of warp groups under conditions uniform only per warp.
    TimeSlicedDivergent,
    /// A collective or barrier after a `return_if` whose condition varies across the block:
    /// the verifier must reject it (such cases expect a typed error).
    CollectiveAfterExit,
}

/// Features off in the default run because the defect they trigger is still open (each entry
/// says what breaks). `COOPGRAPH_FUZZ_OPEN=all` (or a comma-separated list of names, as
/// `Debug` prints them) turns them on.
pub const OPEN_DEFECTS: &[Defect] = &[];

/// Whether a feature is on: not an open defect, or turned on by `COOPGRAPH_FUZZ_OPEN`.
pub fn enabled(d: Defect) -> bool {
    if !OPEN_DEFECTS.contains(&d) {
        return true;
    }
    match std::env::var("COOPGRAPH_FUZZ_OPEN") {
        Ok(v) => v == "all" || v.split(',').any(|n| n.trim() == format!("{d:?}")),
        Err(_) => false,
    }
}

/// How an input's elements are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// Small integers (-8..=8): float sums stay exact in any order.
    Small,
    /// Any bits (floats: finite values of any size, with a few specials).
    Bits,
    /// The type's edge values mixed with small ones.
    Edges,
    /// The element's index.
    Iota,
}

/// An input's contents: element `i` is a function of the salt and `i`.
#[derive(Debug, Clone, Copy)]
pub struct Data {
    pub dtype: DType,
    pub flavor: Flavor,
    pub salt: u64,
}

impl Data {
    /// The bits of element `i`.
    pub fn value(&self, i: u64) -> u64 {
        let h = mix(self.salt ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let small = (h % 17) as i64 - 8;
        with_dtype!(self.dtype, T => {
            let v: T = match self.flavor {
                Flavor::Small => T::small(small),
                Flavor::Iota => T::small(i as i64),
                Flavor::Bits => bits_value::<T>(h),
                Flavor::Edges => edge_value::<T>(h, small),
            };
            Element::to_bits(v)
        })
    }
}

fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn bits_value<T: Fz>(h: u64) -> T {
    match T::DTYPE {
        DType::F32 => {
            let v =
                ((h >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 2f32.powi((h % 40) as i32 - 10);
            T::from_bits(v.to_bits() as u64)
        }
        DType::F64 => {
            let v =
                ((h >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 2f64.powi((h % 80) as i32 - 20);
            T::from_bits(v.to_bits())
        }
        _ => T::from_bits(h),
    }
}

fn edge_value<T: Fz>(h: u64, small: i64) -> T {
    let pick = (h >> 8) % 8;
    match T::DTYPE {
        DType::F32 => {
            let v = [
                f32::NAN,
                f32::INFINITY,
                -f32::INFINITY,
                -0.0,
                0.5,
                1e30,
                -3e9,
                1.0,
            ];
            match pick {
                0..=5 if (h >> 16).is_multiple_of(3) => {
                    T::from_bits(v[pick as usize].to_bits() as u64)
                }
                _ => T::small(small),
            }
        }
        DType::F64 => {
            let v = [
                f64::NAN,
                f64::INFINITY,
                -f64::INFINITY,
                -0.0,
                0.5,
                1e300,
                -3e9,
                1.0,
            ];
            match pick {
                0..=5 if (h >> 16).is_multiple_of(3) => T::from_bits(v[pick as usize].to_bits()),
                _ => T::small(small),
            }
        }
        _ => {
            let bits = T::BITS;
            let max = if bits == 64 {
                u64::MAX
            } else {
                (1u64 << bits) - 1
            };
            let v = [0, max, max >> 1, (max >> 1) + 1, 1, 2];
            match pick {
                0..=5 => T::from_bits(v[pick as usize]),
                _ => T::small(small),
            }
        }
    }
}

/// A kernel parameter and what the launch passes for it. A buffer's length is `len` where
/// the case fixes it (indexed accesses around its end), else as far as the kernel reaches.
#[derive(Debug, Clone)]
pub enum Param {
    Input {
        dtype: DType,
        data: Data,
        len: Option<u64>,
    },
    Output {
        dtype: DType,
        len: Option<u64>,
    },
    /// A read-write buffer: `data` before the launch.
    Buffer {
        dtype: DType,
        data: Data,
        len: Option<u64>,
    },
    Scalar {
        dtype: DType,
        bits: u64,
    },
}

/// What picks a case: its seed, the tweak of a twin (`None`: the case itself), and the
/// statements left out, by path (see [`Case::statements`]), as a reduced reproducer has them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spec {
    pub seed: u64,
    pub tweak: Option<u32>,
    pub skip: Vec<Vec<u32>>,
}

impl Spec {
    /// The case of `seed` itself.
    pub fn of(seed: u64) -> Spec {
        Spec {
            seed,
            ..Spec::default()
        }
    }

    /// The environment that reproduces it.
    pub fn env(&self) -> String {
        let mut s = format!("COOPGRAPH_FUZZ_SEED={:#018x}", self.seed);
        if let Some(t) = self.tweak {
            s.push_str(&format!(" COOPGRAPH_FUZZ_TWIN={t}"));
        }
        if let Ok(open) = std::env::var("COOPGRAPH_FUZZ_OPEN") {
            s.push_str(&format!(" COOPGRAPH_FUZZ_OPEN={open}"));
        }
        if !self.skip.is_empty() {
            let paths: Vec<String> = self.skip.iter().map(|p| path_name(p)).collect();
            s.push_str(&format!(" COOPGRAPH_FUZZ_SKIP={}", paths.join(",")));
        }
        s
    }

    /// Parses `COOPGRAPH_FUZZ_SKIP` (paths like `2.0.1`, comma-separated).
    pub fn parse_skip(v: &str) -> Vec<Vec<u32>> {
        v.split(',')
            .filter(|p| !p.trim().is_empty())
            .map(|p| p.trim().split('.').filter_map(|n| n.parse().ok()).collect())
            .collect()
    }
}

/// A statement's path as text: its index in its region, after its enclosing statements'.
pub fn path_name(p: &[u32]) -> String {
    p.iter().map(u32::to_string).collect::<Vec<_>>().join(".")
}

/// A generated case.
pub struct Case {
    /// The built kernel, or the error it gave.
    pub kernel: Result<Kernel, coopgraph::Error>,
    /// The kernel's IR as recorded (for reports of kernels that do not build).
    pub ir: coopgraph::ir::Ir,
    pub params: Vec<Param>,
    /// Blocks along x, y and z (along y and z as far as the kernel reads: see
    /// [`launch_grid`](crate::fuzz::run::launch_grid)).
    pub grid: [u32; 3],
    /// The length each launch gives the kernel's dynamic shared array, if it has one.
    pub dyn_len: Option<u32>,
    /// The open-defect features the case uses.
    pub features: Vec<Defect>,
    /// Decisions a twin of this case may tweak.
    pub tweaks: u32,
    /// The statements generated, by path: a statement's index in its region, after the path
    /// of the statement whose region it is in (an `if_else`'s second arm counts on from
    /// [`ARM`]). Each statement draws from a generator of its own, seeded by its path, so
    /// leaving one out ([`Spec::skip`]) changes the others only through what they find.
    pub statements: Vec<Vec<u32>>,
    /// The case is invalid on purpose (an open-defect feature that makes a program the
    /// verifier must reject, or the planner where it is [`ACROSS_GROUPS`]): what is wrong
    /// with it.
    pub expect_reject: Option<&'static str>,
}

/// What is wrong with a case whose store counts each group's own valid items of a payload
/// that converts across its groups: the planner, not the verifier, rejects it.
pub const ACROSS_GROUPS: &str = "a group's own valid count over a conversion across groups";

/// What is wrong with a case that has a time-sliced exchange between blocked and warp-striped
/// order under a condition not uniform across the block: the planner rejects it
/// (`BlockExchangeInDivergentCode`), or, where its uniformity analysis sees the condition as
/// uniform after all, it builds and runs.
pub const SLICED_DIVERGENT: &str =
    "a time-sliced exchange under a condition that differs between warps";

/// Where the statement indices of a statement's second region start.
pub const ARM: u32 = 16;

/// Most statements a case has, nested ones included.
const MAX_STATEMENTS: i32 = 24;

pub(crate) const THREAD: u32 = 1;
pub(crate) const WARP: u32 = 32;
pub(crate) const BLOCK: u32 = 1 << 20;

/// Where ops are being recorded.
#[derive(Clone)]
pub(crate) struct Ctx {
    /// The least uniformity of the enclosing conditions (as the verifier counts it).
    pub uni: u32,
    /// The enclosing `tiles` loop.
    pub tile: Option<Tile>,
    /// Loop counters in scope, with their uniformity.
    pub loops: Vec<(coopgraph::ir::Expr<u32>, u32)>,
    pub in_loop: bool,
    pub depth: u32,
    /// Inside a scan's prefix callback: no collectives.
    pub callback: bool,
    /// The payload this region folds what it cannot store into.
    pub acc: Option<usize>,
    /// The uniformity of the innermost loop's bounds (`None`: no loop a jump may leave).
    pub loop_level: Option<u32>,
    /// The least uniformity of the conditions since the innermost loop's body began: a jump
    /// under less than the loop's level would lower the loop's control.
    pub jump_rel: u32,
}

/// What the generator knows of a payload.
#[derive(Clone)]
pub(crate) struct DInfo {
    pub h: AnyData,
    pub dt: DType,
    pub k: u32,
    /// Its arrangement (`None`: free).
    pub arr: Option<Arrangement>,
    /// Every slot is written (for every thread that can see it).
    pub full: bool,
    /// Defined at rank 0 of each group of this many threads only (a non-broadcast result).
    pub rank0: Option<u32>,
    /// Something consumed or produced it: a free payload must stay free.
    pub used: bool,
    /// A store (or an accumulator) has seen it.
    pub observed: bool,
    pub alive: bool,
}

/// A shared array and the pattern of its write phases.
#[derive(Clone)]
pub(crate) struct ArrInfo {
    pub h: super::types::AnyArray,
    pub dt: DType,
    /// The length the index expressions assume (a twin may make the array longer).
    pub len: u32,
    /// Every write phase writes thread `w`'s value to element `(a * w + b) % len` for
    /// `w < writers`: `(a, b, writers)`.
    pub pattern: (u32, u32, u32),
    /// An offset that takes any index the pattern makes past the end of the array as either
    /// twin declares it (indices past `len` but short of a longer twin's end would read
    /// elements no phase writes, not fault).
    pub past_end: u32,
    /// A write phase and its barrier ran on every path here.
    pub ready: bool,
    /// For an array of two or three dimensions, its accesses through its own handle (so the
    /// builder's row-major indexing runs), at a linear index; `h` is its flat view.
    pub nd: Option<NdAccess>,
    /// A view of its bytes as elements of another integer type, if it has one.
    pub view: Option<ViewInfo>,
    /// A write phase wrote every byte of the elements below `len` (on every path here): any
    /// element of the view within them may be read while the array is ready.
    pub full: bool,
}

/// A view of a shared array ([`KernelBuilder::shared_view`]).
#[derive(Clone)]
pub(crate) struct ViewInfo {
    pub h: super::types::AnyArray,
    pub dt: DType,
}

/// Reads and writes of an array of two or three dimensions at a linear index `i`, through
/// its own handle: the index of each dimension is `i` taken apart by the extents.
#[derive(Clone)]
pub(crate) struct NdAccess {
    pub read: std::rc::Rc<NdRead>,
    pub write: std::rc::Rc<NdWrite>,
}

/// Element `i` of an array of several dimensions.
pub(crate) type NdRead = dyn Fn(coopgraph::ir::Expr<u32>) -> super::types::AnyExpr;
/// `array[i] = value` of an array of several dimensions.
pub(crate) type NdWrite =
    dyn Fn(&mut KernelBuilder, coopgraph::ir::Expr<u32>, super::types::AnyExpr);

/// A temp storage.
#[derive(Clone)]
pub(crate) struct StInfo {
    pub h: coopgraph::ir::TempStorage,
    /// Its declared size in bytes (`None`: sized by its users).
    pub size: Option<u32>,
    pub auto_sync: bool,
    pub exclusive: bool,
    pub users: u32,
}

pub(crate) struct Gen {
    pub rng: Rng,
    pub seed: u64,
    /// Threads per block and the kernel's items per thread.
    pub t: u32,
    pub kk: u32,
    /// The block's shape (`t` threads in all).
    pub dims: [u32; 3],
    /// Blocks along x (the `tiles` loop's stride), and along y and z.
    pub grid: u32,
    pub grid_yz: [u32; 2],
    /// Floats stay small integers where it matters (sums exact in any order).
    pub tame: bool,
    pub params: Vec<Param>,
    pub inputs: Vec<(AnyInput, DType)>,
    pub scalars: Vec<(AnyScalar, DType, u64)>,
    pub datas: Vec<DInfo>,
    pub scopes: Vec<usize>,
    pub ctx: Vec<Ctx>,
    pub arrays: Vec<ArrInfo>,
    /// The length launches give the dynamic shared array, once one is declared.
    pub dyn_len: Option<u32>,
    /// Local and constant arrays.
    pub locals: Vec<arrays::LocalInfo>,
    pub consts: Vec<arrays::ConstInfo>,
    pub storages: Vec<StInfo>,
    pub budget: i32,
    pub tweak: Option<u32>,
    pub tweaks: u32,
    pub features: Vec<Defect>,
    /// An implicit conversion was planned (strict mode would reject the kernel).
    pub converted: bool,
    /// The `tiles` loop's element count may leave a partial last tile.
    pub partial_tiles: bool,
    /// The path of the statement being generated, and how many regions it has opened.
    pub path: Vec<u32>,
    pub regions: Vec<u32>,
    pub skip: Vec<Vec<u32>>,
    pub executed: Vec<Vec<u32>>,
    pub expect_reject: Option<&'static str>,
    /// The kernel is built with `unchecked_bounds`.
    pub unchecked: bool,
    /// Inputs read by index, and read-write buffers.
    pub indexed: Vec<indexed::IdxInput>,
    pub buffers: Vec<indexed::BufInfo>,
    /// Per-thread variables in scope, and where each region's own begin.
    pub vars: Vec<vars::VarInfo>,
    pub var_scopes: Vec<usize>,
    /// A thread-varying `return_if` ran: no collective may follow.
    pub exited: bool,
    /// Histogram counters an earlier histogram counted into (and read back), kept for a later
    /// one to count into again: `u32` and `u64` ones, each with its length.
    pub counters: histogram::Counters,
    /// In the cases that draw them (from the seed): the stream that decides where an
    /// expression is combined with itself over and over ([`Gen::shared`]).
    pub shares: Option<Rng>,
    next_name: u32,
}

impl Rng {
    /// A value below `n` (0 for 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }

    /// True with probability `p` percent.
    pub fn pct(&mut self, p: u64) -> bool {
        self.below(100) < p
    }

    /// One of `items`.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }

    /// An index chosen with the given weights.
    pub fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
        let mut x = self.below(total.max(1));
        for (i, &w) in weights.iter().enumerate() {
            if x < u64::from(w) {
                return i;
            }
            x -= u64::from(w);
        }
        0
    }
}

/// Whether a kernel may end with a grid barrier: a grid the simulator runs at once, no
/// `return_if`, no write by index and no read-write buffer (through which blocks could touch
/// one another's elements), and stores only at their default tiles (disjoint between blocks).
fn cooperative_fits(ir: &coopgraph::ir::Ir, blocks: u32) -> bool {
    use coopgraph::ir::ops::OpKind;
    let touches_others = |kind: &OpKind| match kind {
        OpKind::GlobalWrite { .. } | OpKind::WriteRun { .. } | OpKind::ReturnIf { .. } => true,
        OpKind::Store(t) => t.offset.is_some(),
        _ => false,
    };
    blocks <= coopgraph::runtime::SimOptions::default().max_cooperative_blocks
        && !ir.ops.iter().any(|op| touches_others(&op.kind))
        && !(ir.params.iter()).any(|p| p.role == coopgraph::ir::Role::Buffer)
}

/// Threads per block: small and odd sizes weighted up.
fn block_size(rng: &mut Rng) -> u32 {
    match rng.weighted(&[30, 30, 15, 10, 15]) {
        0 => 1 + rng.below(33) as u32,
        1 => 32 * (1 + rng.below(8) as u32),
        2 => 33 + rng.below(268) as u32,
        3 => rng.pick(&[384, 512, 768, 1024]),
        _ => 1 + rng.below(1024) as u32,
    }
}

/// The block's shape for `t` threads: mostly 1-D, else `t` factored over two or three axes
/// (at most 64 along z), so every op runs in 2-D and 3-D blocks with their linear ranks.
fn block_shape(rng: &mut Rng, t: u32) -> [u32; 3] {
    let divisors = |n: u32| {
        (1..=n)
            .filter(|d| n.is_multiple_of(*d))
            .collect::<Vec<u32>>()
    };
    if rng.pct(70) {
        return [t, 1, 1];
    }
    let x = rng.pick(&divisors(t));
    let rest = t / x;
    if rng.pct(50) {
        return [x, rest, 1];
    }
    let ys: Vec<u32> = divisors(rest)
        .into_iter()
        .filter(|y| rest / y <= 64)
        .collect();
    let y = rng.pick(&ys);
    [x, y, rest / y]
}

/// Blocks along y and z for a grid of `x` along x: mostly none, else a few (at most 12 blocks
/// in all), so that every op runs in grids of two and three dimensions.
fn grid_yz(rng: &mut Rng, x: u32) -> [u32; 2] {
    if x > 3 || rng.pct(75) {
        return [1, 1];
    }
    let y = 1 + rng.below(3) as u32;
    let z = if y == 1 || rng.pct(50) { 2 } else { 1 };
    [y, z]
}

fn items_per_thread(rng: &mut Rng, t: u32) -> u32 {
    let k = match rng.weighted(&[30, 45, 17, 8]) {
        0 => 1,
        1 => 2 + rng.below(3) as u32,
        2 => 5 + rng.below(4) as u32,
        _ => 9 + rng.below(8) as u32,
    };
    // Keep a tile to a few thousand elements.
    k.min((8192 / t).max(1))
}

/// A 64-bit mix of a seed and a path (a statement's own generator).
pub(crate) fn path_seed(seed: u64, path: &[u32]) -> u64 {
    path.iter().fold(mix(seed ^ 0x5eed_0f57_a7e5), |h, &p| {
        mix(h ^ u64::from(p) ^ 0x1000)
    })
}

impl Gen {
    fn new(spec: &Spec, rng: Rng, t: u32, kk: u32, grid: u32, tame: bool) -> Gen {
        Gen {
            rng,
            seed: spec.seed,
            t,
            kk,
            dims: [t, 1, 1],
            grid,
            grid_yz: [1, 1],
            tame,
            params: Vec::new(),
            inputs: Vec::new(),
            scalars: Vec::new(),
            datas: Vec::new(),
            scopes: Vec::new(),
            ctx: vec![Ctx {
                uni: BLOCK,
                tile: None,
                loops: Vec::new(),
                in_loop: false,
                depth: 0,
                callback: false,
                acc: None,
                loop_level: None,
                jump_rel: BLOCK,
            }],
            arrays: Vec::new(),
            dyn_len: None,
            locals: Vec::new(),
            consts: Vec::new(),
            storages: Vec::new(),
            budget: MAX_STATEMENTS,
            tweak: spec.tweak,
            tweaks: 0,
            features: Vec::new(),
            converted: false,
            partial_tiles: true,
            path: Vec::new(),
            regions: vec![0],
            skip: spec.skip.clone(),
            executed: Vec::new(),
            expect_reject: None,
            unchecked: false,
            indexed: Vec::new(),
            buffers: Vec::new(),
            vars: Vec::new(),
            var_scopes: Vec::new(),
            exited: false,
            counters: histogram::Counters::default(),
            // From the seed, not the generator's stream, so the other seeds keep their
            // kernels, and these keep theirs but for the shared expressions.
            shares: (mix(spec.seed ^ 0x05ba_7ed5_u64) % 100 < 12)
                .then(|| Rng::new(mix(spec.seed ^ 0x05ba_7ed6_u64))),
            next_name: 0,
        }
    }
}

/// Generates the case `spec` picks.
pub fn generate(spec: &Spec) -> Case {
    let seed = spec.seed;
    let mut rng = Rng::new(seed);
    let t = block_size(&mut rng);
    let kk = items_per_thread(&mut rng, t);
    let dims = block_shape(&mut rng, t);
    let grid = match rng.weighted(&[40, 30, 20, 10]) {
        0 => 1,
        1 => 2,
        2 => 3,
        _ => 4 + rng.below(3) as u32,
    };
    let grid_yz = grid_yz(&mut rng, grid);
    let tame = rng.pct(75);
    let strict = rng.pct(30);
    let unchecked = rng.pct(10);
    let top = 2 + rng.below(6) as i32;
    let mut g = Gen::new(spec, rng, t, kk, grid, tame);
    g.unchecked = unchecked;
    g.dims = dims;
    g.grid_yz = grid_yz;
    let mut k = KernelBuilder::new(format!("fuzz_{seed:016x}"))
        .block_dims(dims)
        .items_per_thread(kk);
    g.kernel_body(&mut k, top);
    if !g.converted && strict {
        k = k.strict_arrangements(true);
    }
    if unchecked {
        k = k.unchecked_bounds();
    }
    // Drawn after the body, so each seed's kernel is the one it was before assertions and
    // line information: sometimes an assertion at the end (not checked: the kernel has no
    // debug checks, so it must change nothing), sometimes line information. Only in 1-D
    // grids: the launch's grid follows the block indices the IR reads, and an unchecked
    // assertion's are never read.
    if g.grid_yz == [1, 1] && g.rng.pct(30) {
        let cond = g.cond(&Leaves::varying(), 2);
        k.assert(cond, "fuzz");
    }
    if g.rng.pct(25) {
        k = k.lineinfo();
    }
    // From the seed, not the generator's stream, so the other seeds keep their kernels.
    if seed % 8 == 5 {
        k = k.fastmath();
    }
    // From the seed too: some kernels end with a grid barrier, so they run as cooperative
    // launches (every block at once on the simulator, with its global race checker), where
    // nothing in them lets one block touch what another writes (the interpreter runs blocks
    // one after another) and no early exit could keep a block from arriving.
    // Only 1-D grids: a default tile's offset counts blocks along x alone, so blocks along y
    // or z store the same tiles (unordered writes of one value, a race between blocks).
    if seed % 4 == 3 && !g.exited && grid_yz == [1, 1] && cooperative_fits(k.ir(), grid) {
        k.sync_grid();
    }
    // From the seed too: some kernels of 1-D grids run in thread-block clusters and end with
    // a cluster barrier and a read of another block's copy of a shared array.
    if seed % 4 == 1 && grid_yz == [1, 1] && cluster::cluster_fits(&g, &k) {
        // Half of them take the shape at launch (`%cluster_nctaid`), the launch giving the
        // same shape.
        let c = cluster::cluster_size(grid);
        k = if seed % 8 == 5 {
            k.cluster_at_launch()
        } else {
            k.cluster(c)
        };
        g.cluster_tail(&mut k, c);
    }
    let ir = k.ir().clone();
    let kernel = k.build();
    Case {
        kernel,
        ir,
        params: g.params,
        grid: [grid, grid_yz[0], grid_yz[1]],
        dyn_len: g.dyn_len,
        features: g.features,
        tweaks: g.tweaks,
        statements: g.executed,
        expect_reject: g.expect_reject,
    }
}

impl Gen {
    pub fn cx(&self) -> &Ctx {
        self.ctx.last().expect("a context")
    }

    /// Whether the current code runs in every thread of the block together.
    pub fn block_uniform(&self) -> bool {
        let u = self.cx().uni;
        !self.exited && (u >= BLOCK || u >= self.t)
    }

    /// Whether aligned groups of `n` threads all run the current code together.
    pub fn covers(&self, n: u32) -> bool {
        let u = self.cx().uni;
        !self.exited && (u >= BLOCK || u >= n.min(self.t) && (n.is_power_of_two() || u >= self.t))
    }

    /// Blocks in the grid.
    pub fn blocks(&self) -> u32 {
        self.grid * self.grid_yz[0] * self.grid_yz[1]
    }

    /// The block's linear index in the grid (`blockIdx.x` where the grid is 1-D, so 1-D
    /// kernels read no other axis).
    pub fn block_id(&self) -> coopgraph::ir::Expr<u32> {
        use coopgraph::ir::index::{self, Axis};
        let mut id = index::block_idx(Axis::X);
        if self.grid_yz[1] > 1 {
            let yz =
                index::block_idx(Axis::Z) * index::grid_dim(Axis::Y) + index::block_idx(Axis::Y);
            id = yz * index::grid_dim(Axis::X) + id;
        } else if self.grid_yz[0] > 1 {
            id = index::block_idx(Axis::Y) * index::grid_dim(Axis::X) + id;
        }
        id
    }

    pub fn warps_ok(&self) -> bool {
        self.t.is_multiple_of(32)
    }

    pub fn name(&mut self, what: &str) -> String {
        self.next_name += 1;
        format!("{what}{}", self.next_name)
    }

    /// Records that an open-defect feature is used (or says it may not be).
    pub fn feature(&mut self, d: Defect) -> bool {
        if !enabled(d) {
            return false;
        }
        if !self.features.contains(&d) {
            self.features.push(d);
        }
        true
    }

    /// A tweakable decision: `alt` in the twin that tweaks it, `base` otherwise.
    pub fn tweakable<T>(&mut self, base: T, alt: T) -> T {
        let i = self.tweaks;
        self.tweaks += 1;
        if self.tweak == Some(i) { alt } else { base }
    }

    /// Whether an exchange between `from` and `to` with `k` items can run here (`from` free:
    /// nothing moves).
    pub fn conv_ok(&self, from: Option<Arrangement>, to: Arrangement, k: u32) -> bool {
        let Some(from) = from else {
            return true;
        };
        if from.same_positions(to, k) {
            return true;
        }
        self.exchange_ok(span(Some(from), to))
    }

    /// Whether an exchange over groups of `scope` threads can run here.
    pub fn exchange_ok(&self, scope: u32) -> bool {
        let t = self.t;
        if scope > 32 && scope != t {
            return false;
        }
        if scope > 32 && !self.block_uniform() {
            return false;
        }
        if !self.covers(scope) {
            return false;
        }
        if t < 32 && !t.is_power_of_two() && !enabled(Defect::SmallBlockExchange) {
            return false;
        }
        if !scope.is_power_of_two() && scope != t && !enabled(Defect::StripedNonPow2) {
            return false;
        }
        true
    }

    /// Notes an exchange between `from` and `to` that the planner inserts.
    pub fn note_conv(&mut self, from: Option<Arrangement>, to: Arrangement, k: u32) {
        if let Some(f) = from
            && !f.same_positions(to, k)
        {
            self.converted = true;
            if t_small_odd(self.t) {
                self.feature(Defect::SmallBlockExchange);
            }
            let s = span(Some(f), to);
            if !s.is_power_of_two() && s != self.t {
                self.feature(Defect::StripedNonPow2);
            }
        }
    }

    /// Groups that can run a collective here: the block (if `block_ok`) and logical warps.
    pub fn groups(&self, k: &KernelBuilder, block_ok: bool) -> Vec<Group> {
        let mut out = Vec::new();
        if block_ok && self.block_uniform() {
            out.push(k.this_block());
        }
        if self.warps_ok() {
            for w in [1u32, 2, 4, 8, 16, 32] {
                if self.covers(w) {
                    out.push(if w == 32 && self.seed.is_multiple_of(2) {
                        k.this_warp().into()
                    } else {
                        k.this_warp().group_by(w)
                    });
                }
            }
        }
        out
    }

    pub fn group_threads(&self, g: &Group) -> u32 {
        match g.kind() {
            GroupKind::Block => self.t,
            GroupKind::LogicalWarp { width } => width,
            GroupKind::Warps { warps } => warps * 32,
        }
    }

    /// Whether the block may run block-wide reductions and scans.
    pub fn block_reduce_ok(&self) -> bool {
        let t = self.t;
        if t > 32 {
            t.is_multiple_of(32)
        } else {
            t.is_power_of_two()
        }
    }

    /// Registers a new payload.
    pub fn add(&mut self, h: AnyData, dt: DType, k: u32, arr: Option<Arrangement>) -> usize {
        self.datas.push(DInfo {
            h,
            dt,
            k,
            arr,
            full: true,
            rank0: None,
            used: false,
            observed: false,
            alive: true,
        });
        self.datas.len() - 1
    }

    /// Visible, fully written payloads passing `f`.
    pub fn full(&self, f: impl Fn(&DInfo) -> bool) -> Vec<usize> {
        (0..self.datas.len())
            .filter(|&i| {
                let d = &self.datas[i];
                d.alive && d.full && d.rank0.is_none() && f(d)
            })
            .collect()
    }

    /// A random dtype.
    pub fn dtype(&mut self) -> DType {
        self.rng.pick(&DType::ALL)
    }

    /// A new scalar parameter of `dt` with value `bits`.
    pub fn scalar_param<T: Fz>(
        &mut self,
        k: &mut KernelBuilder,
        bits: u64,
    ) -> coopgraph::ir::Scalar<T> {
        let name = self.name("s");
        let s = k.scalar::<T>(&name);
        self.params.push(Param::Scalar {
            dtype: T::DTYPE,
            bits,
        });
        self.scalars.push((T::scalar(s), T::DTYPE, bits));
        s
    }

    /// An input of `T`: a new one, or one already declared.
    pub fn input<T: Fz>(&mut self, k: &mut KernelBuilder) -> coopgraph::ir::Input<T> {
        let old: Vec<_> = self
            .inputs
            .iter()
            .filter_map(|(h, _)| T::of_input(h))
            .collect();
        if !old.is_empty() && self.rng.pct(30) {
            return self.rng.pick(&old);
        }
        let name = self.name("x");
        let x = k.input::<T>(&name);
        let flavor = if T::DTYPE.is_float() && self.tame {
            if self.rng.pct(90) {
                Flavor::Small
            } else {
                Flavor::Iota
            }
        } else {
            self.rng.pick(&[
                Flavor::Small,
                Flavor::Bits,
                Flavor::Edges,
                Flavor::Iota,
                Flavor::Small,
            ])
        };
        let salt = self.rng.next();
        self.params.push(Param::Input {
            dtype: T::DTYPE,
            data: Data {
                dtype: T::DTYPE,
                flavor,
                salt,
            },
            len: None,
        });
        self.inputs.push((T::input(x), T::DTYPE));
        x
    }

    /// A new output of `T`.
    pub fn output<T: Fz>(&mut self, k: &mut KernelBuilder) -> coopgraph::ir::Output<T> {
        let name = self.name("y");
        let y = k.output::<T>(&name);
        self.params.push(Param::Output {
            dtype: T::DTYPE,
            len: None,
        });
        y
    }

    /// Enters a region with context `c`.
    pub fn enter(&mut self, c: Ctx) {
        self.scopes.push(self.datas.len());
        self.var_scopes.push(self.vars.len());
        self.ctx.push(c);
    }

    /// Leaves the region: its payloads go out of scope.
    pub fn leave(&mut self) {
        self.ctx.pop();
        let vars = self.var_scopes.pop().unwrap_or(0);
        self.vars.truncate(vars);
        let start = self.scopes.pop().unwrap_or(0);
        for d in &mut self.datas[start..] {
            d.alive = false;
        }
    }

    /// A child context: conditions of uniformity `uni` added.
    pub fn child(&self, uni: u32) -> Ctx {
        let mut c = self.cx().clone();
        c.uni = c.uni.min(uni);
        c.jump_rel = c.jump_rel.min(uni);
        c.depth += 1;
        c
    }
}

/// Threads an arrangement is striped over (1 for blocked).
pub fn striped(a: Arrangement) -> u32 {
    match a {
        Arrangement::Blocked => 1,
        Arrangement::Striped { threads } => threads,
    }
}

/// The threads whose items an exchange from `from` (free: none) to `to` moves among: the
/// least common multiple of the two groups (3 and 4 threads: 12).
pub fn span(from: Option<Arrangement>, to: Arrangement) -> u32 {
    fn gcd(a: u32, b: u32) -> u32 {
        if b == 0 { a } else { gcd(b, a % b) }
    }
    let (a, b) = (from.map_or(1, striped), striped(to));
    a / gcd(a, b) * b
}

fn t_small_odd(t: u32) -> bool {
    t < 32 && !t.is_power_of_two()
}

/// Deliberately invalid programs: a generated kernel with one mistake added.
pub const MISTAKES: u32 = 17;

/// Case `seed` with mistake `which` (of [`MISTAKES`]) recorded before it is built.
pub fn generate_invalid(seed: u64, which: u32) -> Result<Kernel, coopgraph::Error> {
    use coopgraph::ir::{Expr, Reduce, ReduceAlgorithm, Scan, StorageSpec, index};
    use coopgraph::{Load, Store};
    let mut rng = Rng::new(seed);
    let t = block_size(&mut rng);
    let kk = items_per_thread(&mut rng, t);
    let mut g = Gen::new(&Spec::of(seed), rng, t, kk, 1, true);
    let mut k = KernelBuilder::new(format!("bad_{seed:x}"))
        .block(t)
        .items_per_thread(kk);
    g.kernel_body(&mut k, 3);
    let x = k.input::<i32>("bad_x");
    let y = k.output::<i32>("bad_y");
    let b = k.this_block();
    match which {
        0 => {
            let w = k.this_warp().group_by(3 + 2 * (seed % 3) as u32);
            k.load_from(w, &x, Load::direct());
        }
        1 => {
            let d = k.load_from(b, &x, Load::direct());
            k.set_item(&d, kk + (seed % 3) as u32, 1);
        }
        2 => {
            let d = k.load_from(b, &x, Load::direct());
            k.scan(b, &d, Scan::exclusive(Reduce::max()));
        }
        3 => {
            let d = k.load_from(b, &x, Load::direct());
            let r = Reduce::custom(false, |a: Expr<i32>, _b| a)
                .algorithm(ReduceAlgorithm::RakingCommutativeOnly);
            k.reduce(b, &d, r);
        }
        4 => {
            let d = k.thread_data::<i32>();
            k.store_to(b, &y, &d, Store::direct());
        }
        5 => {
            let mut var = None;
            k.for_range(0u32, 2u32, |_, i| var = Some(i));
            let v = var.unwrap_or_else(|| Expr::lit(0));
            let d = k.fill::<i32>(v.cast::<i32>());
            k.store_to(b, &y, &d, Store::direct());
        }
        6 => {
            let d = k.load_from(b, &x, Load::direct());
            k.if_(index::thread_rank().lt(3u32), |k| {
                k.reduce(b, &d, Reduce::sum());
            });
        }
        7 => k = k.block_dims([t, 2, 65]),
        8 => k = k.items_per_thread(if seed.is_multiple_of(2) { 0 } else { 65 }),
        9 => {
            k.shared_array::<f32>(0);
        }
        10 => {
            let w = k.this_warp().group_by(8);
            let d = k.load_from(b, &x, Load::direct());
            let r = k.fill::<u32>(index::item());
            k.scatter(w, &d, &r, coopgraph::ir::Scatter::blocked());
        }
        11 => {
            k = k.block(64);
            let d = k.load_from(b, &x, Load::direct());
            k.scan(b, &d, Scan::inclusive_sum().valid_items(3u32));
        }
        12 => {
            let st =
                k.temp_storage(StorageSpec::default().sharing(coopgraph::ir::Sharing::Exclusive));
            k.load_from(b, &x, Load::transpose().temp_storage(&st));
            k.load_from(b, &x, Load::transpose().temp_storage(&st));
        }
        13 => {
            k.temp_storage(StorageSpec::default().alignment(3));
        }
        14 => {
            let st = k.temp_storage(StorageSpec::default().size_in_bytes(4));
            k = k.block(64).items_per_thread(4);
            k.load_from(b, &x, Load::transpose().temp_storage(&st));
        }
        15 => {
            // Logical warps of 8 counting their own valid items of a payload striped over
            // groups of 3 threads (whose conversion straddles the warps), or of 16 (which
            // spans two warps) where 3 does not divide the block.
            if !t.is_multiple_of(32) {
                k = k.block(96);
            }
            let striped = if t.is_multiple_of(32) && !t.is_multiple_of(3) {
                16
            } else {
                3
            };
            // Two items, so that the arrangements differ.
            let at = index::block_index() * (2 * t.max(96));
            let d = k.thread_data_n::<i32>(2);
            k.load_into(b, &x, &d, Load::direct().offset(at.clone()));
            let e = k.exchange(
                b,
                &d,
                coopgraph::ir::Arrangement::Striped { threads: striped },
                coopgraph::ir::ExchangeVia::Shared,
            );
            let w = k.this_warp().group_by(8);
            k.store_to(w, &y, &e, Store::direct().offset(at).valid_items(5u32));
        }
        _ => {
            let other = KernelBuilder::new("other").input::<i32>("o");
            let _ = other;
            let mut o = KernelBuilder::new("other");
            let foreign = o.output::<i32>("o");
            let d = k.load_from(b, &x, Load::direct());
            let e = k.map(&d, |v| v + 1);
            k.store_to(b, &foreign, &e, Store::direct());
            let one = k.thread_data_n::<i32>(1);
            k.set_item(&one, 0, 1);
            k.map2(&d, &one, |a, c| a + c);
        }
    }
    k.build()
}

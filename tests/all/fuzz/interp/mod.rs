//! An independent interpreter of the kernel IR: the fuzzer's oracle.
//!
//! It evaluates `kernel.ir()` on host arrays, block by block, running every op over all the
//! block's threads in lock step (each thread with its own slots, branch masks and loop
//! counters), from the semantics the crate documents — never from code generation, the
//! planner or the simulator:
//! - a payload's arrangement is fixed by its first producer in program order (a direct,
//!   vectorized or transposing load: blocked; a striped load over a group of `G` threads:
//!   striped over `G`; scans, neighbour ops: blocked; exchanges and scatters: their target);
//!   maps carry their first arranged operand's arrangement, assignments into a free payload
//!   the source's; fills and per-slot writes leave it free (a free payload takes whatever
//!   arrangement its consumer reads, slot by slot; a scatter reads free flags in its ranks'
//!   arrangement and free ranks in its flags', the two describing the same items);
//! - blocked: thread `t` holds positions `t*K + i`; striped over `G`: rank `r` of each group of
//!   `G` threads holds `r + i*G` of its group's tile; positions are what ops agree on, so a
//!   consumer reading another arrangement sees the same positions (the planner's conversions);
//! - a load or store of a group of `G` threads moves element `offset + q` for tile position
//!   `q` (the group's tile starts at `group * G * K`), the thread that touches it being the
//!   owner of `q` in the algorithm's access order (striped for the transposing algorithms);
//!   the default offset is the enclosing `tiles` loop's origin, else `block_index * block
//!   tile`; a valid count counts the group's own tile (`valid_items`) or the block's, each
//!   group taking its share (`block_valid_items`, and a `tiles` loop's count); slots past it
//!   get the default or keep what they held, and so do positions past the buffer's end (a
//!   kernel built with `unchecked_bounds` has no such guard: its accesses past the end are
//!   out-of-bounds faults);
//! - reads by index give an input's element, or a read-write buffer's (its last write when
//!   ordered before the read, else unspecified); past a buffer's end a checked kernel reads 0
//!   and skips writes, an unchecked one faults; a select reads memory only on the side it
//!   takes, an `and`/`or` of predicates its right operand only where the left does not
//!   decide (under an unspecified condition such an access is uncertain, and the case is
//!   skipped if it could fault or race);
//! - atomics apply in thread order, each old value and element known only where no access
//!   unordered with it could change it (`atomic.rs`, with a first pass that finds every
//!   access);
//! - reductions and scans fold in position order (floats: only where every order gives the
//!   same bits, else the result is unspecified), neighbour ops, scatters and exchanges as
//!   documented on `NeighborKind`, `OpKind::Scatter` and `Arrangement`.
//!
//! Every value carries flags ([`value`]): undefined (never written), unspecified, approximate.
//! The interpreter reports [`Event`]s: out-of-bounds accesses, undefined values reaching a
//! store, a branch or a collective, races on shared arrays (accesses by different threads that
//! no barrier orders: `sync_block`, or a group's `sync` between threads of the group, see
//! [`order`]), scatters of two items to one position.

// Threads index several tables at once (masks, slots, loop counters): plain index loops read
// best here.
#![allow(clippy::needless_range_loop)]

mod atomic;
mod cluster;
mod collective;
mod flow;
mod lanes;
mod memory;
mod order;
mod print;
pub mod value;

use coopgraph::ir::expr::{Axis, ExprKind, IndexKind};
use coopgraph::ir::ops::{Algorithm, Bounds, OpKind, Transfer, ValidOf};
use coopgraph::ir::{Arrangement, DType, DataId, ExprId, GroupKind, Ir, MathMode, OpId, RegionId};
use std::collections::HashMap;
use value::{UNDEF, UNSPEC, V};

/// An argument of a launch.
pub enum Arg<'a> {
    /// An input buffer: its length (`None`: unbounded) and its element `i`'s bits.
    Input {
        len: Option<u64>,
        value: &'a dyn Fn(u64) -> u64,
    },
    /// An output buffer of this length (`None`: unbounded), and its element `i`'s bits before
    /// the launch (the runner's sentinel, which atomics find there).
    Output {
        len: Option<u64>,
        before: &'a dyn Fn(u64) -> u64,
    },
    /// A read-write buffer: its length (`None`: unbounded) and its element `i`'s bits before
    /// the launch.
    Buffer {
        len: Option<u64>,
        value: &'a dyn Fn(u64) -> u64,
    },
    /// A scalar's bits.
    Scalar(u64),
}

/// A launch: blocks and arguments (one per parameter).
pub struct Launch<'a> {
    /// Blocks along x, y and z.
    pub grid: [u32; 3],
    /// The cluster shape the launch gives (a kernel built with `cluster_at_launch`).
    pub cluster: Option<[u32; 3]>,
    /// The dynamic shared array's length, if the kernel has one.
    pub dyn_len: Option<u32>,
    pub args: Vec<Arg<'a>>,
}

/// An output element the kernel wrote.
#[derive(Debug, Clone, Copy)]
pub struct Cell {
    pub v: V,
    /// The block and thread that wrote it last, and the block's barrier epoch then
    /// (`SEVERAL` blocks or threads where unordered writes of the same value met).
    writer: (u32, u32, u32),
}

/// Something the interpreter saw that a correct run on a valid kernel cannot do silently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A global access outside its buffer.
    GlobalOob { op: OpId, param: usize, index: u64 },
    /// A shared-array access past the array's end.
    SharedOob { op: OpId, array: usize, index: u64 },
    /// A local- or constant-array access past the array's end.
    ArrayOob {
        op: OpId,
        local: bool,
        array: usize,
        index: u64,
    },
    /// An undefined value reaching an observable use.
    Undefined { op: OpId, what: &'static str },
    /// Two threads touching one shared-array element with no barrier between, one writing.
    SharedRace { op: OpId, array: usize, index: u64 },
    /// Two items scattered to one position.
    ScatterCollision { op: OpId, position: u32 },
    /// A rank past the tile in a scatter the library marks inside it (its sorts' own ranks,
    /// written unguarded).
    ScatterOutside { op: OpId, rank: u64 },
    /// An access past the end of a shared array the library marks inside by construction
    /// (a merge sort's runs, accessed unguarded).
    InsideArrayOob { op: OpId, array: usize, index: u64 },
    /// A collective some but not all threads of a group reach, or whose uniform operands
    /// differ within the group.
    Participation { op: OpId },
    /// Loops ran longer than the interpreter allows.
    StepLimit,
    /// A memory access that may or may not happen (under a select or `and`/`or` whose
    /// condition is unspecified) would be out of bounds or race, or a value the lowering
    /// leaves unspecified may be undefined (a scan's output past its valid count, where the
    /// thread's items are not all defined): the case says nothing sure.
    Uncertain { op: OpId },
}

impl Event {
    /// Whether the simulator must report this as a memory fault.
    pub fn is_oob(&self) -> bool {
        matches!(
            self,
            Event::GlobalOob { .. } | Event::SharedOob { .. } | Event::ArrayOob { .. }
        )
    }
}

/// What a launch did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Per parameter: the output (or read-write buffer) elements written (empty for other
    /// roles).
    pub outputs: Vec<HashMap<u64, Cell>>,
    /// Per buffer parameter: the largest element index accessed.
    pub max_index: Vec<Option<u64>>,
    pub events: Vec<Event>,
    /// What the threads printed: (block, thread, line), in the order each thread printed.
    pub printed: Vec<(u32, u32, String)>,
    /// Whether a printed line depends on what the interpreter does not know exactly (an
    /// approximate or unspecified value, a NaN's sign, a branch on an unspecified condition).
    pub printed_unsure: bool,
    /// The accesses of elements atomics touch, as a first pass records them.
    accesses: atomic::AccessMap,
    /// In the second pass of a kernel with atomics: the first pass's accesses.
    seen: Option<atomic::AccessMap>,
    /// Each block's shared arrays as they stood at its cluster barriers, and the remote
    /// writes and atomics bound for each block.
    cluster: cluster::Record,
    /// In the second pass of a kernel with remote accesses: the first pass's record.
    cluster_seen: Option<cluster::Record>,
}

/// Per expression node, whether it or a node below it reads memory (a shared, local or
/// constant array, or a buffer): the sides of a select that hold such a read are evaluated
/// only where taken. Nodes come after their operands in the arena.
fn memory_readers(ir: &Ir) -> Vec<bool> {
    let nodes = ir.exprs.nodes();
    let mut reads = vec![false; nodes.len()];
    for (i, n) in nodes.iter().enumerate() {
        reads[i] = matches!(
            n.kind,
            ExprKind::SharedRead(..)
                | ExprKind::LocalRead(..)
                | ExprKind::ConstRead(..)
                | ExprKind::GlobalRead(..)
        ) || n.kind.children().any(|c| reads[c.index()]);
    }
    reads
}

/// Per expression node, whether more than one operand slot of the arena names it and it has
/// operands of its own: the nodes whose value one evaluation keeps ([`Block::eval`]), so that an
/// expression sharing its subtrees (`e.min(e)` over and over: few nodes, 2^n paths) takes time
/// linear in its nodes, not in its paths.
fn shared_nodes(ir: &Ir) -> Vec<bool> {
    let nodes = ir.exprs.nodes();
    let mut uses = vec![0u8; nodes.len()];
    for n in nodes {
        for c in n.kind.children() {
            uses[c.index()] = uses[c.index()].saturating_add(1);
        }
    }
    (nodes.iter().zip(uses))
        .map(|(n, u)| u > 1 && n.kind.children().next().is_some())
        .collect()
}

/// Each payload's arrangement (`None`: free), by the documented rule: the first producer in
/// program order fixes it; maps carry their first arranged operand's; assignments into a free
/// payload the source's. Repeated to a fixed point for loops.
pub fn arrangements(ir: &Ir) -> Vec<Option<Arrangement>> {
    let mut order = Vec::new();
    ir.walk(|op, _| order.push(op));
    let mut arr: Vec<Option<Arrangement>> = vec![None; ir.datas.len()];
    let group = |g| ir.group_threads(g);
    loop {
        let mut changed = false;
        let mut set = |arr: &mut Vec<Option<Arrangement>>, d: DataId, a: Option<Arrangement>| {
            if arr[d.index()].is_none() && a.is_some() {
                arr[d.index()] = a;
                changed = true;
            }
        };
        for &op in &order {
            match &ir.op(op).kind {
                OpKind::Load(t) => {
                    let a = payload_arrangement(t.algorithm, group(t.group));
                    set(&mut arr, t.data, Some(a));
                }
                OpKind::Map { dst, srcs, .. } => {
                    let a = srcs.iter().find_map(|s| arr[s.index()]);
                    set(&mut arr, *dst, a);
                }
                OpKind::Assign { dst, src } => {
                    let a = arr[src.index()];
                    set(&mut arr, *dst, a);
                }
                OpKind::Scan(sc) => set(&mut arr, sc.dst, Some(Arrangement::Blocked)),
                OpKind::Exchange { dst, to, .. } | OpKind::Scatter { dst, to, .. } => {
                    set(&mut arr, *dst, Some(*to))
                }
                OpKind::Neighbor(nb) => {
                    use coopgraph::ir::NeighborKind as N;
                    if !matches!(nb.kind, N::Offset(_) | N::Rotate(_)) {
                        set(&mut arr, nb.dst, Some(Arrangement::Blocked));
                    }
                }
                _ => {}
            }
        }
        if !changed {
            return arr;
        }
    }
}

/// The arrangement a payload loaded (or stored) with `a` by a group of `g` threads has.
pub fn payload_arrangement(a: Algorithm, g: u32) -> Arrangement {
    match a {
        Algorithm::Striped => Arrangement::Striped { threads: g },
        Algorithm::WarpStriped => Arrangement::Striped { threads: 32 },
        _ => Arrangement::Blocked,
    }
}

/// The order in which a load or store touches global memory: the transposing algorithms move
/// their tile striped (over the group, or warp-striped), then exchange it.
fn access_arrangement(a: Algorithm, g: u32) -> Arrangement {
    match a {
        Algorithm::Transpose => Arrangement::Striped { threads: g },
        Algorithm::WarpTranspose | Algorithm::WarpTransposeTimesliced => {
            Arrangement::Striped { threads: 32 }
        }
        other => payload_arrangement(other, g),
    }
}

/// Position (in the block's tile) of item `i` of thread `t` in arrangement `a` with `k` items.
pub fn position(a: Arrangement, k: u32, t: u32, i: u32) -> u32 {
    match a {
        Arrangement::Blocked => t * k + i,
        Arrangement::Striped { threads: g } => {
            let g = g.max(1);
            (t / g) * g * k + t % g + i * g
        }
    }
}

/// The thread and item holding position `q` in arrangement `a` with `k` items.
pub fn owner(a: Arrangement, k: u32, q: u32) -> (u32, u32) {
    match a {
        Arrangement::Blocked => (q / k, q % k),
        Arrangement::Striped { threads: g } => {
            let g = g.max(1);
            let (group, r) = (q / (g * k), q % (g * k));
            (group * g + r % g, r / g)
        }
    }
}

const MAX_STEPS: u64 = 1 << 16;

/// A cell's last writer when several threads wrote it unordered.
const SEVERAL: u32 = u32::MAX;

/// The first op of the kernel (events name the op they happened in).
fn first_op(ir: &Ir) -> OpId {
    let mut first = None;
    ir.walk(|op, _| {
        first.get_or_insert(op);
    });
    first.expect("the interpreter runs kernels with ops")
}

/// Runs the kernel over the launch.
pub fn run(ir: &Ir, launch: &Launch<'_>) -> Outcome {
    // With atomics, a first pass finds every access of the elements they touch; with remote
    // reads, what the other blocks' arrays hold at each cluster barrier.
    let first =
        (atomic::has_atomics(ir) || ir.uses_remote_shared()).then(|| pass(ir, launch, None, None));
    match first {
        Some(f) => pass(ir, launch, Some(f.accesses), Some(f.cluster)),
        None => pass(ir, launch, None, None),
    }
}

/// One run of the kernel over the launch (with `seen`, the accesses a first pass recorded,
/// and `cluster`, what it recorded of remote accesses).
fn pass(
    ir: &Ir,
    launch: &Launch<'_>,
    seen: Option<atomic::AccessMap>,
    cluster: Option<cluster::Record>,
) -> Outcome {
    let arr = arrangements(ir);
    let reads = memory_readers(ir);
    let shared = shared_nodes(ir);
    let mut out = Outcome {
        outputs: vec![HashMap::new(); ir.params.len()],
        max_index: vec![None; ir.params.len()],
        events: Vec::new(),
        printed: Vec::new(),
        printed_unsure: false,
        accesses: HashMap::new(),
        seen,
        cluster: cluster::Record::default(),
        cluster_seen: cluster,
    };
    if ir.ops.is_empty() {
        return out;
    }
    // Blocks in their linear order, x fastest (`b` names a block; its coordinates are what
    // the kernel reads).
    let [gx, gy, gz] = launch.grid;
    for b in 0..gx * gy * gz {
        let at = [b % gx, b / gx % gy, b / (gx * gy)];
        let mut blk = Block::new(ir, launch, (&arr, &reads, &shared), (b, at), &mut out);
        let body = ir.body;
        let all = vec![true; blk.threads];
        blk.region(body, &all);
    }
    out
}

/// Whether an expression's memory reads happen: a select reads only the side it takes, an
/// `and`/`or` of predicates its right operand only where the left does not decide.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Mode {
    /// They happen.
    Live,
    /// They do not (a side not taken): a read gives 0 and touches nothing.
    Dead,
    /// They may, under a condition whose value is unspecified.
    Maybe,
}

/// Evaluation context of an expression: the thread, map operands, the slot, whether its
/// memory reads happen.
#[derive(Clone, Copy)]
struct Cx<'c> {
    t: usize,
    args: &'c [V],
    item: Option<u32>,
    mode: Mode,
}

impl Cx<'_> {
    /// The context of an operand read where `taken` says (`None`: unspecified).
    fn side(self, taken: Option<bool>) -> Self {
        let mode = match (self.mode, taken) {
            (Mode::Dead, _) | (_, Some(false)) => Mode::Dead,
            (Mode::Maybe, _) | (_, None) => Mode::Maybe,
            (Mode::Live, Some(true)) => Mode::Live,
        };
        Cx { mode, ..self }
    }
}

/// An element of a shared array: its value, its last write, and its reads since (one, or
/// [`order::SEVERAL`] threads in an epoch). A view's accesses reach the elements of the array
/// it views (`memory.rs`), whose bytes a narrower view writes in part: `undef` marks the
/// bytes never written (`v` is undefined while any is).
#[derive(Clone, Copy)]
struct SCell {
    v: V,
    undef: u8,
    writer: Option<order::Rec>,
    reader: Option<order::Rec>,
}

impl SCell {
    /// The cell after a write of its whole element, `v`.
    fn set(&mut self, v: V) {
        self.v = v;
        self.undef = if v.undef() { u8::MAX } else { 0 };
    }
}

/// One block's run.
struct Block<'a> {
    ir: &'a Ir,
    launch: &'a Launch<'a>,
    arr: &'a [Option<Arrangement>],
    /// Per expression node, whether it or a node below it reads memory.
    reads: &'a [bool],
    /// Per expression node, whether it is shared ([`shared_nodes`]), and the values of the
    /// shared nodes met in the evaluation under way, by node and mode (how deep it is).
    shared: &'a [bool],
    memo: HashMap<(ExprId, Mode), V>,
    evaluating: u32,
    out: &'a mut Outcome,
    /// The block's linear index (what tells writers apart) and its coordinates in the grid.
    b: u32,
    at: [u32; 3],
    threads: usize,
    /// Per payload, `threads * items` slots.
    data: Vec<Vec<V>>,
    /// Per loop op, per thread: its fields.
    loops: HashMap<OpId, Vec<[u64; 3]>>,
    tiles: Vec<OpId>,
    arrays: Vec<Vec<SCell>>,
    /// Per shared array with storage: whether a thread wrote it at an index the interpreter
    /// does not know, so that no element read from it is known.
    unsure: Vec<bool>,
    /// Per local array, `threads * len` elements (each thread's own).
    locals: Vec<Vec<V>>,
    epoch: u32,
    /// What the group barriers ordered.
    order: order::Order,
    /// Cluster barriers the block has passed.
    cluster_barriers: u32,
    /// Threads running under a branch whose condition was unspecified: what they write is.
    taint: Vec<u8>,
    /// Per thread: whether (and how) it left the code being run.
    gone: Vec<flow::Gone>,
    steps: u64,
    op: OpId,
}

impl<'a> Block<'a> {
    fn new(
        ir: &'a Ir,
        launch: &'a Launch<'a>,
        (arr, reads, shared): (&'a [Option<Arrangement>], &'a [bool], &'a [bool]),
        (b, at): (u32, [u32; 3]),
        out: &'a mut Outcome,
    ) -> Self {
        let threads = ir.block_threads() as usize;
        Block {
            ir,
            launch,
            arr,
            reads,
            shared,
            memo: HashMap::new(),
            evaluating: 0,
            out,
            b,
            at,
            threads,
            data: ir
                .datas
                .iter()
                .map(|d| vec![V::UNDEF; threads * d.items as usize])
                .collect(),
            loops: HashMap::new(),
            tiles: Vec::new(),
            arrays: ir
                .arrays
                .iter()
                .map(|a| {
                    let cell = SCell {
                        v: V::UNDEF,
                        undef: u8::MAX,
                        writer: None,
                        reader: None,
                    };
                    // A view has no elements of its own.
                    let len = match (a.view_of, a.dynamic) {
                        (Some(_), _) => 0,
                        (None, true) => launch.dyn_len.unwrap_or(0),
                        (None, false) => a.len,
                    };
                    vec![cell; len as usize]
                })
                .collect(),
            unsure: vec![false; ir.arrays.len()],
            locals: (ir.locals.iter())
                .map(|a| vec![V::UNDEF; threads * a.len as usize])
                .collect(),
            epoch: 0,
            order: order::Order::new(ir, threads),
            cluster_barriers: 0,
            taint: vec![0; threads],
            gone: vec![flow::Gone::No; threads],
            steps: 0,
            op: first_op(ir),
        }
    }

    fn event(&mut self, e: Event) {
        if self.out.events.len() < 64 && !self.out.events.contains(&e) {
            self.out.events.push(e);
        }
    }

    fn items(&self, d: DataId) -> u32 {
        self.ir.datas[d.index()].items
    }

    fn dtype(&self, d: DataId) -> DType {
        self.ir.datas[d.index()].dtype
    }

    /// Writes slot `i` of payload `d` in thread `t`, with the thread's taint.
    fn set(&mut self, d: DataId, t: usize, i: u32, mut v: V) {
        v.flags |= self.taint[t];
        let k = self.items(d) as usize;
        self.data[d.index()][t * k + i as usize] = v;
    }

    fn get(&self, d: DataId, t: usize, i: u32) -> V {
        let k = self.items(d) as usize;
        self.data[d.index()][t * k + i as usize]
    }

    /// The payload's slots seen in arrangement `want`: where it is arranged otherwise, each
    /// slot gets the value at its position (the planner's conversion).
    fn view(&mut self, d: DataId, want: Option<Arrangement>, active: &[bool]) -> Vec<V> {
        self.view_from(d, self.arr[d.index()], want, active)
    }

    /// The same for a payload whose slots hold the positions of `have`.
    fn view_from(
        &mut self,
        d: DataId,
        have: Option<Arrangement>,
        want: Option<Arrangement>,
        active: &[bool],
    ) -> Vec<V> {
        let k = self.items(d);
        let raw = &self.data[d.index()];
        let (Some(have), Some(want)) = (have, want) else {
            return raw.clone();
        };
        if have.same_positions(want, k) {
            return raw.clone();
        }
        let mut out = vec![V::UNDEF; raw.len()];
        let mut undefined = false;
        for t in 0..self.threads as u32 {
            for i in 0..k {
                let q = position(want, k, t, i);
                let (t2, i2) = owner(have, k, q);
                let v = raw.get((t2 * k + i2) as usize).copied().unwrap_or(V::UNDEF);
                undefined |= active[t as usize] && v.undef();
                out[(t * k + i) as usize] = v;
            }
        }
        if undefined {
            self.event(Event::Undefined {
                op: self.op,
                what: "a payload rearranged through shared memory",
            });
        }
        out
    }

    fn check_defined(&mut self, v: V, what: &'static str) {
        if v.undef() {
            self.event(Event::Undefined { op: self.op, what });
        }
    }

    /// A select's condition (or the left operand of an `and`/`or` of predicates) where the
    /// side it decides reads memory: the read is guarded by it, so it must be defined where
    /// the select runs at all.
    fn check_guard(&mut self, cond: V, sides: &[ExprId], cx: Cx<'_>) {
        if cx.mode != Mode::Dead && sides.iter().any(|s| self.reads[s.index()]) {
            self.check_defined(cond, "a condition guarding a memory read");
        }
    }

    /// Runs region `r` in the `active` threads; each op runs in those that have not left
    /// (by a `break_`, `continue_` or `return_if`) before it.
    fn region(&mut self, r: RegionId, active: &[bool]) {
        if !active.iter().any(|&a| a) {
            return;
        }
        let ops: Vec<OpId> = self.ir.region(r).to_vec();
        for op in ops {
            let live = self.live(active);
            if !live.iter().any(|&a| a) {
                return;
            }
            self.op = op;
            self.exec(op, &live);
        }
    }

    fn exec(&mut self, op: OpId, active: &[bool]) {
        let ir = self.ir;
        match &ir.op(op).kind {
            OpKind::Load(t) => self.load(op, t, active),
            OpKind::Store(t) => self.store(op, t, active),
            OpKind::Map { dst, srcs, expr } => {
                let want = self.arr[dst.index()];
                let views: Vec<Vec<V>> = srcs.iter().map(|s| self.view(*s, want, active)).collect();
                let k = self.items(*dst);
                for t in 0..self.threads {
                    if !active[t] {
                        continue;
                    }
                    for i in 0..k {
                        let idx = t * k as usize + i as usize;
                        let args: Vec<V> = views.iter().map(|v| v[idx]).collect();
                        let cx = Cx {
                            t,
                            args: &args,
                            item: Some(i),
                            mode: Mode::Live,
                        };
                        let v = self.eval(*expr, cx);
                        self.set(*dst, t, i, v);
                    }
                }
            }
            OpKind::SetItem { dst, item, expr } => {
                for t in 0..self.threads {
                    if active[t] {
                        let v = self.eval(*expr, self.cx(t));
                        self.set(*dst, t, *item, v);
                    }
                }
            }
            OpKind::Assign { dst, src } => {
                let v = self.view(*src, self.arr[dst.index()], active);
                let k = self.items(*dst);
                for t in 0..self.threads {
                    if active[t] {
                        for i in 0..k {
                            self.set(*dst, t, i, v[t * k as usize + i as usize]);
                        }
                    }
                }
            }
            OpKind::If {
                cond,
                then,
                otherwise,
            } => {
                let mut yes = vec![false; self.threads];
                let mut no = vec![false; self.threads];
                let mut tainted = Vec::new();
                for t in 0..self.threads {
                    if !active[t] {
                        continue;
                    }
                    let c = self.eval(*cond, self.cx(t));
                    self.check_defined(c, "a branch condition");
                    if !c.known() {
                        // Either way: run both, and what the thread writes is unknown.
                        yes[t] = true;
                        no[t] = true;
                        tainted.push(t);
                    } else if c.bits & 1 == 1 {
                        yes[t] = true;
                    } else {
                        no[t] = true;
                    }
                }
                let saved = self.taint.clone();
                for &t in &tainted {
                    self.taint[t] |= UNSPEC;
                }
                self.region(*then, &yes);
                // Without an else arm, a tainted thread may also have skipped the branch; what
                // the branch wrote is unspecified either way.
                if let Some(o) = otherwise {
                    self.region(*o, &no);
                }
                self.taint = saved;
            }
            OpKind::For {
                start,
                end,
                step,
                body,
            } => self.for_loop(op, [*start, *end], *step, *body, active),
            OpKind::While { cond, body } => self.while_loop(op, *cond, *body, active),
            OpKind::Tiles { n, body } => self.tiles_loop(op, *n, *body, active),
            OpKind::Break => self.jump(flow::Gone::Break, active),
            OpKind::Continue => self.jump(flow::Gone::Continue, active),
            OpKind::ReturnIf { cond } => self.return_if(*cond, active),
            // Without debug checks (the generator builds none) an assertion does nothing: its
            // condition is not evaluated, so not even its reads happen.
            OpKind::Assert { .. } => {}
            OpKind::SharedWrite {
                array,
                index,
                value,
            } => {
                let mut writes = Vec::new();
                for t in 0..self.threads {
                    if active[t] {
                        let i = self.eval(*index, self.cx(t));
                        let v = self.eval(*value, self.cx(t));
                        self.check_defined(i, "a shared-array index");
                        self.check_defined(v, "a value written to shared memory");
                        writes.push((t, i, v));
                    }
                }
                for (t, i, mut v) in writes {
                    v.flags |= self.taint[t];
                    // Under a branch on an unspecified condition, or at an unspecified index,
                    // the write may not happen where it seems to: a race it meets is uncertain.
                    let maybe = self.taint[t] & UNSPEC != 0 || !i.known();
                    self.shared_access(array.index(), t, i, Some(v), maybe);
                }
            }
            OpKind::LocalWrite {
                array,
                index,
                value,
            } => {
                for t in 0..self.threads {
                    if active[t] {
                        let i = self.eval(*index, self.cx(t));
                        let mut v = self.eval(*value, self.cx(t));
                        self.check_defined(i, "a local-array index");
                        self.check_defined(v, "a value written to local memory");
                        v.flags |= self.taint[t];
                        if let Some(cell) = self.local_cell(array.index(), t, i, false) {
                            *cell = v;
                        }
                    }
                }
            }
            OpKind::GlobalWrite {
                param,
                index,
                value,
            } => self.global_write(param.index(), *index, *value, active),
            OpKind::ReadRun { param, index, dst } => {
                self.read_run(param.index(), *index, *dst, active)
            }
            OpKind::WriteRun { param, index, src } => {
                self.write_run(param.index(), *index, *src, active)
            }
            OpKind::Atomic(a) => self.atomic(a, active),
            OpKind::Lanes(l) => self.lanes(l, active),
            // Orders the block's own accesses as a block barrier does; the generator puts grid
            // barriers only where no block reads what another wrote before it.
            OpKind::SyncBlock | OpKind::SyncGrid => {
                self.epoch += 1;
                self.order.block_barrier();
            }
            // A pause: it changes no value and orders nothing.
            OpKind::Nanosleep { .. } => {}
            OpKind::Cluster(c) => self.cluster(op, c, active),
            OpKind::Print { pieces, args } => {
                let dtypes: Vec<DType> = (args.iter())
                    .map(|a| self.ir.expr(*a).ty.dtype().unwrap_or(DType::U32))
                    .collect();
                for t in 0..self.threads {
                    if active[t] {
                        let vals: Vec<V> = args.iter().map(|a| self.eval(*a, self.cx(t))).collect();
                        for v in &vals {
                            self.check_defined(*v, "a printed value");
                        }
                        let (line, sure) = print::line(pieces, &dtypes, &vals);
                        self.out.printed_unsure |= !sure || self.taint[t] != 0;
                        self.out.printed.push((self.b, t as u32, line));
                    }
                }
            }
            OpKind::Reduce(r) => self.reduce(r, active),
            OpKind::Scan(s) => self.scan(s, active),
            OpKind::Neighbor(nb) => self.neighbor(nb, active),
            OpKind::Scatter {
                group,
                src,
                ranks,
                flags,
                dst,
                to,
                holes,
                permutation,
                inside,
                // How the read-back moves the items, not what it reads.
                defined: _,
            } => {
                let c = collective::ScatterOp {
                    group: *group,
                    src: *src,
                    ranks: *ranks,
                    flags: *flags,
                    dst: *dst,
                    to: *to,
                    holes: *holes,
                    permutation: *permutation,
                    inside: *inside,
                };
                self.scatter(&c, active)
            }
            OpKind::Exchange {
                group,
                src,
                dst,
                to,
                ..
            } => {
                // Groups of whole warps run it whole, each over its own tile.
                if self.ir.groups[group.index()].kind.whole_warps().is_some() {
                    self.groups(*group, active);
                }
                let v = self.view(*src, Some(*to), active);
                let k = self.items(*dst) as usize;
                for t in 0..self.threads {
                    if active[t] {
                        for i in 0..k {
                            let x = v[t * k + i];
                            self.check_defined(x, "an exchanged payload");
                            self.set(*dst, t, i as u32, x);
                        }
                    }
                }
            }
        }
    }

    fn step(&mut self) -> bool {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            self.event(Event::StepLimit);
            return false;
        }
        true
    }

    fn cx(&self, t: usize) -> Cx<'static> {
        Cx {
            t,
            args: &[],
            item: None,
            mode: Mode::Live,
        }
    }

    /// Whether a value of `dt` is computed by fast math (f32 in a `fastmath` kernel): its
    /// instructions flush subnormals, may be contracted or approximate.
    fn fast_float(&self, dt: Option<DType>) -> bool {
        self.ir.options.math == MathMode::Fast && dt == Some(DType::F32)
    }

    /// The flags of an inexact result: close to the interpreter's, and the same on every
    /// device unless fast math computed it.
    fn inexact(&self) -> u8 {
        if self.ir.options.math == MathMode::Fast {
            value::APPROX | value::TAINT
        } else {
            value::APPROX
        }
    }

    /// The value of expression `e` in context `cx`. A shared node is evaluated once per
    /// evaluation and mode: its value and its reads' effects (accesses recorded, events, both
    /// kept once) are the same each time, as nothing an expression does writes memory.
    fn eval(&mut self, e: ExprId, cx: Cx<'_>) -> V {
        if self.evaluating == 0 && !self.memo.is_empty() {
            self.memo.clear();
        }
        let shared = self.shared[e.index()];
        if shared && let Some(&v) = self.memo.get(&(e, cx.mode)) {
            return v;
        }
        self.evaluating += 1;
        let v = self.eval_node(e, cx);
        self.evaluating -= 1;
        if shared {
            self.memo.insert((e, cx.mode), v);
        }
        v
    }

    fn eval_node(&mut self, e: ExprId, cx: Cx<'_>) -> V {
        let ir = self.ir;
        let node = ir.expr(e);
        let dt = node.ty.dtype();
        let v = match &node.kind {
            ExprKind::Const(b) => V::exact(*b),
            ExprKind::Param(p) => match self.launch.args[p.index()] {
                Arg::Scalar(b) => V::exact(b),
                _ => V::with(0, UNSPEC),
            },
            ExprKind::Arg(i) => cx.args.get(*i as usize).copied().unwrap_or(V::UNDEF),
            ExprKind::Item { data, item } => {
                if *item < self.items(*data) {
                    self.get(*data, cx.t, *item)
                } else {
                    V::UNDEF
                }
            }
            ExprKind::Index(k) => V::exact(match k {
                IndexKind::ThreadRank => cx.t as u64,
                IndexKind::Lane => cx.t as u64 % 32,
                IndexKind::WarpRank => cx.t as u64 / 32,
                IndexKind::BlockIndex => u64::from(self.at[0]),
                IndexKind::GridBlocks => u64::from(self.launch.grid[0]),
                IndexKind::BlockThreads => self.threads as u64,
                IndexKind::Item => u64::from(cx.item.unwrap_or(0)),
                // Thread `t` of a block of `[dx, dy, dz]` is at `(t % dx, t / dx % dy,
                // t / (dx * dy))`.
                IndexKind::ThreadIdx(a) => {
                    let [dx, dy, _] = self.ir.block.dims.map(u64::from);
                    let t = cx.t as u64;
                    match a {
                        Axis::X => t % dx,
                        Axis::Y => t / dx % dy,
                        Axis::Z => t / (dx * dy),
                    }
                }
                IndexKind::BlockDim(a) => u64::from(self.ir.block.dims[a.index()]),
                IndexKind::BlockIdx(a) => u64::from(self.at[a.index()]),
                IndexKind::GridDim(a) => u64::from(self.launch.grid[a.index()]),
                IndexKind::ClusterDim(a) => u64::from(self.cluster_dims()[a.index()]),
            }),
            ExprKind::LoopVar { op, field } => match self.loops.get(op) {
                Some(f) => V::exact(f[cx.t][*field as usize % 3]),
                None => V::UNDEF,
            },
            ExprKind::Unary(op, a) => {
                let a_ty = ir.expr(*a).ty.dtype();
                let x = self.eval(*a, cx);
                let bits = value::unary(*op, a_ty, x.bits);
                let keeps = matches!(
                    op,
                    coopgraph::ir::expr::UnaryOp::Neg | coopgraph::ir::expr::UnaryOp::Abs
                );
                let mut flags = if keeps {
                    x.flags
                } else {
                    value::derive(x.flags)
                };
                if value::approximate(*op) || self.fast_float(dt) {
                    flags |= self.inexact();
                }
                // The interpreter treats every NaN alike (its sign and payload are not
                // modelled), so a NaN's bits seen as an integer are unspecified.
                if *op == coopgraph::ir::expr::UnaryOp::Bitcast
                    && a_ty.is_some_and(|t| value::is_nan(t, x.bits))
                {
                    flags |= UNSPEC;
                }
                V::with(bits, flags)
            }
            ExprKind::Binary(op, a, b) => {
                let x = self.eval(*a, cx);
                // `and`/`or` of predicates read their right operand only where the left does
                // not decide (as `&&` and `||`).
                let right = match (dt, op) {
                    (None, coopgraph::ir::expr::BinaryOp::And) => {
                        self.check_guard(x, &[*b], cx);
                        cx.side(x.known().then_some(x.bits & 1 == 1))
                    }
                    (None, coopgraph::ir::expr::BinaryOp::Or) => {
                        self.check_guard(x, &[*b], cx);
                        cx.side(x.known().then_some(x.bits & 1 == 0))
                    }
                    _ => cx,
                };
                let y = self.eval(*b, right);
                let mut flags = value::derive(x.flags | y.flags);
                if op.is_library() || self.fast_float(dt) {
                    flags |= self.inexact();
                }
                match dt {
                    None => V::with(value::bool_binary(*op, x.bits, y.bits), flags),
                    Some(dt) => match value::binary(*op, dt, x.bits, y.bits) {
                        Some(bits) => V::with(bits, flags),
                        None => V::with(0, flags | UNSPEC),
                    },
                }
            }
            ExprKind::Cmp(op, a, b) => {
                let a_ty = ir.expr(*a).ty.dtype().unwrap_or(DType::U32);
                let (x, y) = (self.eval(*a, cx), self.eval(*b, cx));
                let r = value::compare(*op, a_ty, x.bits, y.bits);
                V::with(u64::from(r), value::derive(x.flags | y.flags))
            }
            ExprKind::Select(c, a, b) => {
                let cv = self.eval(*c, cx);
                self.check_guard(cv, &[*a, *b], cx);
                // Only the side taken reads memory.
                let first = cv.known().then_some(cv.bits & 1 == 1);
                let x = self.eval(*a, cx.side(first));
                let y = self.eval(*b, cx.side(first.map(|f| !f)));
                let pick = if cv.bits & 1 == 1 { x } else { y };
                if cv.known() {
                    // The other operand still counts for definedness, as registers are
                    // tracked whole.
                    V::with(pick.bits, pick.flags | ((x.flags | y.flags) & UNDEF))
                } else {
                    V::with(
                        pick.bits,
                        value::derive(cv.flags | x.flags | y.flags) | UNSPEC,
                    )
                }
            }
            ExprKind::Cast(a) => {
                let from = ir.expr(*a).ty.dtype().unwrap_or(DType::U32);
                let x = self.eval(*a, cx);
                let to = dt.unwrap_or(DType::U32);
                let keeps = from.is_float() && to.is_float();
                let flags = if keeps {
                    x.flags
                } else {
                    value::derive(x.flags)
                };
                V::with(value::cast(from, to, x.bits), flags)
            }
            ExprKind::Fma(a, b, c) => {
                let (x, y, z) = (self.eval(*a, cx), self.eval(*b, cx), self.eval(*c, cx));
                let dt = dt.unwrap_or(DType::U32);
                V::with(
                    value::fma(dt, x.bits, y.bits, z.bits),
                    value::derive(x.flags | y.flags | z.flags),
                )
            }
            ExprKind::SharedRead(arr, i) => {
                let iv = self.eval(*i, cx);
                if cx.mode == Mode::Dead {
                    // Not taken: the load does not happen, its register holds 0.
                    V::exact(0)
                } else {
                    self.check_defined(iv, "a shared-array index");
                    if !iv.known() {
                        V::with(0, UNSPEC)
                    } else {
                        let maybe = cx.mode == Mode::Maybe;
                        self.shared_access(arr.index(), cx.t, iv, None, maybe)
                    }
                }
            }
            ExprKind::LocalRead(arr, i) => {
                let iv = self.eval(*i, cx);
                if cx.mode == Mode::Dead {
                    V::exact(0)
                } else {
                    self.check_defined(iv, "a local-array index");
                    let maybe = cx.mode == Mode::Maybe;
                    let len = u64::from(ir.locals[arr.index()].len);
                    let guarded = ir.bounds == Bounds::Checked && iv.known() && iv.bits >= len;
                    match self.local_cell(arr.index(), cx.t, iv, maybe) {
                        Some(v) => *v,
                        // A checked kernel's guard reads 0.
                        None if guarded => V::exact(0),
                        None => V::with(0, UNSPEC),
                    }
                }
            }
            ExprKind::ConstRead(arr, i) => {
                let iv = self.eval(*i, cx);
                let data = &ir.consts[arr.index()].data;
                if cx.mode == Mode::Dead {
                    V::exact(0)
                } else if let Some(&bits) = data.get(iv.bits as usize).filter(|_| iv.known()) {
                    self.check_defined(iv, "a constant-array index");
                    V::with(bits, value::derive(iv.flags))
                } else if ir.bounds == Bounds::Checked && iv.known() {
                    // Past the end, a checked kernel's guard reads 0.
                    self.check_defined(iv, "a constant-array index");
                    V::exact(0)
                } else {
                    self.check_defined(iv, "a constant-array index");
                    let op = self.op;
                    self.event(if cx.mode == Mode::Maybe || !iv.known() {
                        Event::Uncertain { op }
                    } else {
                        Event::ArrayOob {
                            op,
                            local: false,
                            array: arr.index(),
                            index: iv.bits,
                        }
                    });
                    V::with(0, UNSPEC)
                }
            }
            ExprKind::GlobalRead(p, i) => {
                let iv = self.eval(*i, cx);
                let dtype = dt.unwrap_or(DType::U32);
                if cx.mode == Mode::Dead {
                    V::exact(0)
                } else {
                    self.check_defined(iv, "a buffer index");
                    self.global_read(p.index(), iv, cx.t, dtype, cx.mode == Mode::Maybe)
                }
            }
        };
        let mask = dt.map_or(1, value::mask);
        V::with(v.bits & mask, v.flags)
    }
}

#[cfg(test)]
mod tests;

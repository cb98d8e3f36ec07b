//! The verifier: checks a recorded kernel and returns [`Info`], the proof later stages take.
//!
//! It runs in two steps. First a cheap pass, which keeps its own stacks, checks that no
//! handle came from another builder, that every handle (parameter, payload, expression,
//! region, loop) belongs to this kernel, that the
//! regions form a tree under the body (no region is the body of two ops or encloses its own
//! op, no op is listed twice) nested at most [`MAX_NESTING`] deep, and that no expression is
//! deeper than [`MAX_EXPR_DEPTH`]; so the second step, and every later stage, can index tables
//! freely and recurse along the regions with a stack a few hundred KiB bounds. Then one walk in program order collects *all* remaining errors, each pinned to the
//! user's source line:
//! - block shape (1..=1024 threads, at most [`MAX_BLOCK_DIMS`] along each axis), items per
//!   thread (1..=64), logical-warp widths, and warp-level ops only in blocks of whole warps
//!   (counted over the block's linear ranks, whatever its shape);
//! - roles and dtypes of parameters, payloads and expressions at every use (inputs and
//!   read-write buffers are read, outputs and read-write buffers written; buffer indices are
//!   `u32` or `u64`);
//! - participation: every collective's enclosing conditions and loops are uniform across its
//!   group (see [`Uniformity`]; variables, loops with `break_`/`continue_` and `while_`
//!   conditions as `verify/flow.rs` finds them), and so are a load's or store's offset and
//!   valid count (a count of the block's tile across the block); no collective or
//!   `sync_block` follows a `return_if` that varies across the block;
//! - jumps: `break_` and `continue_` only inside loops (not from a scan's prefix callback,
//!   where `return_if` is refused too), and no constant step of 0;
//! - tiles: a load or store at the default offset moves a payload of the kernel's items per
//!   thread, since the default offset steps by the kernel's tile;
//! - striped arrangements an exchange or scatter asks for tile the block (their groups'
//!   threads divide it);
//! - definite initialization: no payload slot is read unless every path to the read wrote it
//!   (writes inside a loop body do not count after the loop, which may run zero times);
//! - definedness across threads (the lattice of `defined.rs`): a reduction without broadcast
//!   leaves its result at each group's rank 0, a scatter without a hole value leaves holes;
//!   values made from them carry that on, and no op observes such a value where it may hold
//!   none (a store, a collective, a condition, a bound, a shared access by threads outside
//!   rank 0, or past a valid count for holes);
//! - scoping of map operands, item indices and loop variables.

use super::defined::{self, Branch, Def, State};
use super::entities::{DataId, ExprId, Loc, OpId, ParamId, RegionId};
use super::error::{TransferControl, VerifyError, VerifyErrorKind as K, VerifyErrors};
use super::expr::{ExprKind, VType};
use super::ops::*;
use rustc_hash::{FxHashMap, FxHashSet};

mod cluster;
mod config;
mod flow;
mod lanes;
mod library;
mod loops;
mod reads;
use loops::Jumps;
use reads::Bound;

/// How many consecutive threads (aligned) are guaranteed to agree on a value. Thread-varying
/// values are 1, warp-uniform values 32, block-uniform [`Uniformity::BLOCK`], and values the
/// same in every block [`Uniformity::GRID`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Uniformity(pub u32);

impl Uniformity {
    /// Differs between threads.
    pub const THREAD: Uniformity = Uniformity(1);
    /// The same across a warp.
    pub const WARP: Uniformity = Uniformity(32);
    /// The same across a block.
    pub const BLOCK: Uniformity = Uniformity(1 << 20);
    /// The same across the grid.
    pub const GRID: Uniformity = Uniformity(1 << 21);

    /// Whether every group of `threads` aligned threads agrees on the value.
    pub fn covers(self, threads: u32) -> bool {
        self.0 >= threads
    }
}

/// What the verifier learned, required by the planner and code generator. Only [`verify`]
/// makes one, and it knows which IR it is for.
#[derive(Debug, Clone)]
pub struct Info {
    /// Uniformity of every expression node.
    pub(crate) uniformity: Vec<Uniformity>,
    /// Per op, the least uniformity of the conditions and loops around it and of the early
    /// exits that may have run before it.
    pub(crate) control: Vec<Uniformity>,
    /// Per op: for a loop, how uniform its control is (its bounds, and every `break_` and
    /// `continue_` in it); [`Uniformity::GRID`] for other ops.
    pub(crate) loops: Vec<Uniformity>,
    /// The fingerprint of the IR verified.
    ir: u64,
}

impl Info {
    /// Uniformity of every expression node, in id order.
    pub fn uniformity(&self) -> &[Uniformity] {
        &self.uniformity
    }

    /// Whether this is the verifier's result for `ir` (the IR as it was verified).
    pub fn is_for(&self, ir: &Ir) -> bool {
        self.ir == ir.fingerprint()
    }
}

/// Verifies the IR; on failure returns every error with the kernel's listing.
pub fn verify(ir: &Ir) -> Result<Info, VerifyErrors> {
    let mut errors = Vec::new();
    check_handles(ir, &mut errors);
    if !errors.is_empty() {
        return Err(fail(ir, errors));
    }
    let flow = flow::analyze(ir);
    let mut v = Verifier {
        ir,
        uniformity: &flow.uniformity,
        flow: &flow,
        errors,
        conds: Vec::new(),
        loops: Vec::new(),
        jumps: Vec::new(),
        reported: FxHashSet::default(),
        context: 0,
        members: Vec::new(),
        walk: Default::default(),
    };
    v.check_config();
    v.check_clusters();
    let mut state = State::new(ir);
    v.region(ir.body, &mut state);
    if v.errors.is_empty() {
        Ok(Info {
            uniformity: flow.uniformity,
            control: flow.control,
            loops: flow.loops.iter().map(|l| l.0).collect(),
            ir: ir.fingerprint(),
        })
    } else {
        let errors = v.errors;
        Err(fail(ir, errors))
    }
}

fn fail(ir: &Ir, errors: Vec<VerifyError>) -> VerifyErrors {
    let listing = super::print::listing(ir, &errors);
    VerifyErrors { errors, listing }
}

fn err(kind: K, loc: Loc, op: Option<OpId>) -> VerifyError {
    VerifyError { kind, loc, op }
}

fn check_handles(ir: &Ir, errors: &mut Vec<VerifyError>) {
    // A handle of another builder names whatever has its id here: nothing else can be trusted.
    for issue in &ir.issues {
        if let BuilderIssue::ForeignHandle { what, loc } = issue {
            errors.push(err(K::ForeignHandle { what }, *loc, None));
        }
    }
    if !errors.is_empty() {
        return;
    }
    let np = ir.params.len();
    let nd = ir.datas.len();
    let ng = ir.groups.len();
    let nr = ir.regions.len();
    let no = ir.ops.len();
    let unknown = |what, index: u32| K::UnknownHandle { what, index };
    let ir_loc = ir.block.loc;
    for (i, n) in ir.exprs.nodes().iter().enumerate() {
        let bad = match &n.kind {
            ExprKind::Param(p) if p.index() >= np => Some(unknown("parameter", p.0)),
            ExprKind::Item { data, .. } if data.index() >= nd => Some(unknown("payload", data.0)),
            ExprKind::LoopVar { op, .. } if op.index() >= no => Some(unknown("loop", op.0)),
            ExprKind::SharedRead(a, _) if a.index() >= ir.arrays.len() => {
                Some(unknown("shared array", a.0))
            }
            ExprKind::LocalRead(a, _) if a.index() >= ir.locals.len() => {
                Some(unknown("local array", a.0))
            }
            ExprKind::ConstRead(a, _) if a.index() >= ir.consts.len() => {
                Some(unknown("constant array", a.0))
            }
            ExprKind::GlobalRead(p, _) if p.index() >= np => Some(unknown("parameter", p.0)),
            _ => n
                .kind
                .children()
                .find(|c| c.index() >= i)
                .map(|c| unknown("expression", c.0)),
        };
        if let Some(k) = bad {
            errors.push(err(k, ir_loc, None));
        }
    }
    for (i, a) in ir.arrays.iter().enumerate() {
        // A view's array is declared before it and holds storage of its own: it is no view
        // itself.
        if let Some(root) = a.view_of
            && (root.index() >= i || ir.arrays[root.index()].view_of.is_some())
        {
            errors.push(err(unknown("shared array", root.0), a.loc, None));
        }
    }
    let ne = ir.exprs.nodes().len();
    for (i, op) in ir.ops.iter().enumerate() {
        let id = Some(OpId(i as u32));
        let mut check = |ok: bool, what, index: u32| {
            if !ok {
                errors.push(err(unknown(what, index), op.loc, id));
            }
        };
        for e in op.kind.exprs() {
            check(e.index() < ne, "expression", e.0);
        }
        for r in op.kind.regions() {
            check(r.index() < nr, "region", r.0);
        }
        match &op.kind {
            OpKind::Load(t) | OpKind::Store(t) => {
                check(t.param.index() < np, "parameter", t.param.0);
                check(t.data.index() < nd, "payload", t.data.0);
                check(t.group.index() < ng, "group", t.group.0);
                if let Some(st) = t.storage {
                    check(st.index() < ir.storages.len(), "temp storage", st.0);
                }
            }
            OpKind::SharedWrite { array, .. } => {
                check(array.index() < ir.arrays.len(), "shared array", array.0)
            }
            OpKind::LocalWrite { array, .. } => {
                check(array.index() < ir.locals.len(), "local array", array.0)
            }
            OpKind::GlobalWrite { param, .. } => check(param.index() < np, "parameter", param.0),
            OpKind::ReadRun {
                param, dst: data, ..
            }
            | OpKind::WriteRun {
                param, src: data, ..
            } => {
                check(param.index() < np, "parameter", param.0);
                check(data.index() < nd, "payload", data.0);
            }
            OpKind::Atomic(a) => {
                match a.memory {
                    AtomicMemory::Global(p) => check(p.index() < np, "parameter", p.0),
                    AtomicMemory::Shared(arr) => {
                        check(arr.index() < ir.arrays.len(), "shared array", arr.0)
                    }
                }
                check(a.old.index() < nd, "payload", a.old.0);
            }
            OpKind::Lanes(l) => {
                check(l.group.index() < ng, "group", l.group.0);
                if let Some(out) = l.out {
                    check(out.index() < nd, "payload", out.0);
                }
            }
            OpKind::SyncBlock
            | OpKind::SyncGrid
            | OpKind::Nanosleep { .. }
            | OpKind::Print { .. } => {}
            OpKind::Cluster(c) => {
                if let Some(arr) = c.array() {
                    check(arr.index() < ir.arrays.len(), "shared array", arr.0);
                }
                if let Some(d) = c.dst() {
                    check(d.index() < nd, "payload", d.0);
                }
            }
            OpKind::Reduce(r) => {
                check(r.src.index() < nd, "payload", r.src.0);
                check(r.dst.index() < nd, "payload", r.dst.0);
                check(r.group.index() < ng, "group", r.group.0);
            }
            OpKind::Scatter {
                group,
                src,
                ranks,
                flags,
                dst,
                ..
            } => {
                for d in [Some(*src), Some(*ranks), *flags, Some(*dst)]
                    .into_iter()
                    .flatten()
                {
                    check(d.index() < nd, "payload", d.0);
                }
                check(group.index() < ng, "group", group.0);
            }
            OpKind::Neighbor(nb) => {
                if let Some(o) = nb.shifted_out {
                    check(o.index() < nd, "payload", o.0);
                }
                check(nb.src.index() < nd, "payload", nb.src.0);
                check(nb.dst.index() < nd, "payload", nb.dst.0);
                check(nb.group.index() < ng, "group", nb.group.0);
            }
            OpKind::Exchange {
                group, src, dst, ..
            } => {
                check(src.index() < nd, "payload", src.0);
                check(dst.index() < nd, "payload", dst.0);
                check(group.index() < ng, "group", group.0);
            }
            OpKind::Scan(sc) => {
                check(sc.src.index() < nd, "payload", sc.src.0);
                check(sc.dst.index() < nd, "payload", sc.dst.0);
                check(sc.group.index() < ng, "group", sc.group.0);
                if let Some(a) = sc.aggregate {
                    check(a.index() < nd, "payload", a.0);
                }
            }
            OpKind::Map { dst, srcs, .. } => {
                check(dst.index() < nd, "payload", dst.0);
                for s in srcs {
                    check(s.index() < nd, "payload", s.0);
                }
            }
            OpKind::SetItem { dst, .. } => check(dst.index() < nd, "payload", dst.0),
            OpKind::Assign { dst, src } => {
                check(dst.index() < nd, "payload", dst.0);
                check(src.index() < nd, "payload", src.0);
            }
            OpKind::If { .. }
            | OpKind::For { .. }
            | OpKind::While { .. }
            | OpKind::Tiles { .. }
            | OpKind::Break
            | OpKind::Continue
            | OpKind::ReturnIf { .. }
            | OpKind::Assert { .. } => {}
        }
    }
    for r in &ir.regions {
        for op in r {
            if op.index() >= no {
                errors.push(err(unknown("op", op.0), ir_loc, None));
            }
        }
    }
    check_tree(ir, errors);
    check_expr_depth(ir, errors);
    library::check_library_types(ir, errors);
}

/// The regions form a tree under the body, nested at most [`MAX_NESTING`] deep: each region
/// other than the body is the body of one op, and each op is listed once. Later passes recurse
/// along this tree, so it must end, and its depth bounds their stack.
fn check_tree(ir: &Ir, errors: &mut Vec<VerifyError>) {
    let Some(body) = ir.regions.get(ir.body.index()) else {
        let kind = K::UnknownHandle {
            what: "region",
            index: ir.body.0,
        };
        errors.push(err(kind, ir.block.loc, None));
        return;
    };
    let mut reached = vec![false; ir.regions.len()];
    let mut listed = vec![false; ir.ops.len()];
    reached[ir.body.index()] = true;
    let mut stack = vec![(body, 0usize)];
    while let Some((ops, depth)) = stack.pop() {
        for &op in ops {
            let Some(data) = ir.ops.get(op.index()) else {
                continue;
            };
            if std::mem::replace(&mut listed[op.index()], true) {
                errors.push(err(K::OpListedTwice, data.loc, Some(op)));
                continue;
            }
            for sub in data.kind.regions() {
                let Some(seen) = reached.get_mut(sub.index()) else {
                    continue;
                };
                if std::mem::replace(seen, true) {
                    errors.push(err(K::RegionReused { region: sub }, data.loc, Some(op)));
                } else if depth + 1 > MAX_NESTING {
                    let kind = K::NestingTooDeep { max: MAX_NESTING };
                    errors.push(err(kind, data.loc, Some(op)));
                } else {
                    stack.push((&ir.regions[sub.index()], depth + 1));
                }
            }
        }
    }
}

/// No expression an op evaluates is more than [`MAX_EXPR_DEPTH`] levels deep.
fn check_expr_depth(ir: &Ir, errors: &mut Vec<VerifyError>) {
    let depth = ir.exprs.depths();
    for (i, op) in ir.ops.iter().enumerate() {
        let deepest = op
            .kind
            .exprs()
            .iter()
            .filter_map(|e| depth.get(e.index()))
            .max()
            .copied();
        if let Some(d) = deepest.filter(|&d| d > MAX_EXPR_DEPTH) {
            let kind = K::ExpressionTooDeep {
                depth: d,
                max: MAX_EXPR_DEPTH,
            };
            errors.push(err(kind, op.loc, Some(OpId(i as u32))));
        }
    }
}

struct Verifier<'a> {
    ir: &'a Ir,
    uniformity: &'a [Uniformity],
    flow: &'a flow::Flow,
    errors: Vec<VerifyError>,
    /// Enclosing conditions: the uniformity of each and where it was written.
    conds: Vec<(Uniformity, Loc)>,
    /// Enclosing loops.
    loops: Vec<OpId>,
    /// Where `break_` and `continue_` go, innermost last: the states they leave each loop
    /// with (`None`: a scan's prefix callback, which they cannot leave).
    jumps: Vec<Option<Jumps>>,
    reported: FxHashSet<(DataId, u32)>,
    /// Inside branches on `rank == 0`: only threads whose rank is a multiple of this run
    /// (0: every thread may).
    context: u32,
    /// Enclosing branches on `warp_rank < c` (taken side): the index of each one's condition
    /// in `conds` and `c`. Under one, the threads run in whole warps `0..c`, which are whole
    /// groups of any warp count dividing `c`.
    members: Vec<(usize, u32)>,
    /// The stack and the visited nodes of [`Verifier::expr_reads`]'s walk, kept between
    /// walks (empty between them).
    walk: (Vec<(ExprId, bool)>, FxHashMap<ExprId, bool>),
}

impl Verifier<'_> {
    fn push(&mut self, kind: K, loc: Loc, op: Option<OpId>) {
        self.errors.push(err(kind, loc, op));
    }

    fn region(&mut self, r: RegionId, state: &mut State) {
        for &op in self.ir.region(r) {
            self.op(op, state);
        }
    }

    fn ty(&self, e: ExprId) -> VType {
        self.ir.expr(e).ty
    }

    fn expect_ty(&mut self, e: ExprId, expected: VType, loc: Loc, op: OpId) {
        let found = self.ty(e);
        if found != expected {
            self.push(K::TypeMismatch { expected, found }, loc, Some(op));
        }
    }

    /// A buffer parameter used for reading (`read`) or writing: an input or read-write buffer
    /// is read, an output or read-write buffer written.
    pub(super) fn role(&mut self, param: ParamId, read: bool, loc: Loc, op: OpId) {
        let found = self.ir.params[param.index()].role;
        let ok = if read {
            found.readable()
        } else {
            found.writable()
        };
        if !ok {
            let expected = if read { Role::Input } else { Role::Output };
            self.push(
                K::ParamRole {
                    param,
                    expected,
                    found,
                },
                loc,
                Some(op),
            );
        }
    }

    /// A buffer index: `u32` or `u64`.
    pub(super) fn index_ty(&mut self, index: ExprId, loc: Loc, op: OpId) {
        let found = self.ty(index);
        if !matches!(found, VType::D(super::DType::U32 | super::DType::U64)) {
            let kind = K::IndexType {
                found,
                buffer: true,
            };
            self.push(kind, loc, Some(op));
        }
    }

    /// A write of `[index, value]` to an array of `dtype` elements (shared or local).
    fn array_write(
        &mut self,
        dtype: super::DType,
        [index, value]: [ExprId; 2],
        state: &State,
        op: OpId,
    ) {
        let loc = self.ir.op(op).loc;
        self.array_index_ty(index, loc, op);
        self.expect_ty(value, VType::D(dtype), loc, op);
        self.expr(index, state, op, None);
        self.expr(value, state, op, None);
    }

    /// A run of a buffer read into (`read`) or written from a payload: the buffer's role,
    /// the index's type, the payload's dtype against the buffer's.
    fn run(
        &mut self,
        param: ParamId,
        index: ExprId,
        data: DataId,
        read: bool,
        state: &State,
        op: OpId,
    ) {
        let loc = self.ir.op(op).loc;
        self.role(param, read, loc, op);
        self.index_ty(index, loc, op);
        let (found, expected) = (
            self.ir.datas[data.index()].dtype,
            self.ir.params[param.index()].dtype,
        );
        if found != expected {
            let kind = K::TypeMismatch {
                expected: VType::D(expected),
                found: VType::D(found),
            };
            self.push(kind, loc, Some(op));
        }
        self.expr(index, state, op, None);
    }

    /// An array index (shared, local or constant): `u32`.
    pub(super) fn array_index_ty(&mut self, index: ExprId, loc: Loc, op: OpId) {
        let found = self.ty(index);
        if found != VType::D(super::DType::U32) {
            let kind = K::IndexType {
                found,
                buffer: false,
            };
            self.push(kind, loc, Some(op));
        }
    }

    /// An arrangement an exchange or scatter over `group` asks for: striped groups must tile
    /// the block (each group of warps, over groups of whole warps).
    fn striped_group(&mut self, to: Arrangement, group: GroupKind, loc: Loc, op: OpId) {
        let Arrangement::Striped { threads } = to else {
            return;
        };
        let (tiled, block) = match group {
            GroupKind::Warps { warps } => (warps.saturating_mul(32), None),
            _ => (self.ir.block_threads(), Some(self.ir.block_threads())),
        };
        if threads == 0 || !tiled.is_multiple_of(threads) {
            let kind = match block {
                Some(block) => K::StripedGroup { threads, block },
                None => K::StripedPastWarpGroup {
                    threads,
                    group: tiled,
                },
            };
            self.push(kind, loc, Some(op));
        }
    }

    fn collective(&mut self, group: GroupKind, loc: Loc, op: OpId) {
        // A tile wider than the block is the block's threads.
        let threads = match group {
            GroupKind::Block => self.ir.block_threads(),
            GroupKind::LogicalWarp { width } => width.min(self.ir.block_threads()),
            GroupKind::Warps { warps } => return self.warp_group_collective(warps, loc, op),
        };
        if let Some(&(_, condition)) = self.conds.iter().find(|(u, _)| !u.covers(threads)) {
            self.push(K::NonUniformCollective { group, condition }, loc, Some(op));
        } else if let Some((u, exit)) = self.flow.exit[op.index()]
            && !u.covers(self.ir.block_threads())
        {
            let exit = self.ir.op(exit).loc;
            self.push(K::CollectiveAfterReturn { group, exit }, loc, Some(op));
        }
    }

    /// A grid barrier: every enclosing condition and loop, and every early exit before it,
    /// must be the same in every thread of the grid (block-uniform values, such as anything
    /// computed from the block's index or a `tiles` loop's trip count, are not).
    fn grid_sync(&mut self, loc: Loc, op: OpId) {
        let grid = Uniformity::GRID.0;
        if let Some(&(_, condition)) = self.conds.iter().find(|(u, _)| !u.covers(grid)) {
            self.push(K::NonUniformGridSync { condition }, loc, Some(op));
        } else if let Some((u, exit)) = self.flow.exit[op.index()]
            && !u.covers(grid)
        {
            let exit = self.ir.op(exit).loc;
            self.push(K::GridSyncAfterReturn { exit }, loc, Some(op));
        }
    }

    fn items_match(&mut self, expected: u32, found: u32, loc: Loc, op: OpId) {
        if expected != found {
            self.push(K::ItemsMismatch { expected, found }, loc, Some(op));
        }
    }

    /// A load (of a readable buffer) or a store (to a writable one).
    fn transfer(&mut self, t: &Transfer, load: bool, state: &State, loc: Loc, op: OpId) {
        let u32_ty = VType::D(super::DType::U32);
        let group_threads = self.ir.group_threads(t.group);
        let controls = [
            t.offset
                .map(|e| (TransferControl::Offset, e, group_threads)),
            t.valid.map(|v| {
                let threads = match v.of {
                    ValidOf::Group => group_threads,
                    ValidOf::Block => self.ir.block_threads(),
                };
                (TransferControl::ValidItems, v.count, threads)
            }),
        ];
        for (control, e, threads) in controls.into_iter().flatten() {
            self.expect_ty(e, u32_ty, loc, op);
            self.expr(e, state, op, None);
            if !self.uniformity[e.index()].covers(threads) {
                self.push(K::NonUniformTransfer { control, threads }, loc, Some(op));
            }
        }
        let items = self.ir.datas[t.data.index()].items;
        let items_per_thread = self.ir.items_per_thread;
        if t.offset.is_none() && items != items_per_thread {
            self.push(
                K::TileItems {
                    items,
                    items_per_thread,
                    set_at: self.ir.items_loc,
                },
                loc,
                Some(op),
            );
        }
        let p = &self.ir.params[t.param.index()];
        self.role(t.param, load, loc, op);
        let d = &self.ir.datas[t.data.index()];
        if p.dtype != d.dtype {
            self.push(
                K::TypeMismatch {
                    expected: VType::D(p.dtype),
                    found: VType::D(d.dtype),
                },
                loc,
                Some(op),
            );
        }
        let group = self.ir.groups[t.group.index()].kind;
        let warp_algorithm = !t.algorithm.for_warps();
        if warp_algorithm && group != GroupKind::Block {
            self.push(
                K::AlgorithmNotForGroup {
                    algorithm: t.algorithm,
                    group,
                },
                loc,
                Some(op),
            );
        } else if warp_algorithm && !self.ir.block_threads().is_multiple_of(32) {
            let block = self.ir.block_threads();
            self.push(K::WarpOpInPartialWarpBlock { block }, loc, Some(op));
        }
        self.collective(group, loc, op);
    }

    /// Checks one op. The ops holding regions are checked here and everything else in
    /// [`Verifier::simple_op`], so the recursion through nested regions keeps a small frame
    /// per level.
    fn op(&mut self, op: OpId, state: &mut State) {
        let ir = self.ir;
        let data = ir.op(op);
        let loc = data.loc;
        match &data.kind {
            OpKind::If {
                cond,
                then,
                otherwise,
            } => {
                self.expect_ty(*cond, VType::Bool, loc, op);
                self.expr(*cond, state, op, None);
                self.conds.push((self.uniformity[cond.index()], loc));
                // Under `rank == 0`, only the groups' rank-0 threads run the branch.
                let rank_zero = defined::rank_zero_test(ir, *cond);
                let outer = self.context;
                let inside = rank_zero.map_or(outer, |t| defined::lcm(outer, t.width));
                let mut a = state.clone();
                self.context = inside;
                // Under `warp_rank < c`, the threads run in whole warps `0..c`.
                let member = self.warp_bound(*cond).map(|c| (self.conds.len() - 1, c));
                self.members.extend(member);
                self.region(*then, &mut a);
                if member.is_some() {
                    self.members.pop();
                }
                self.context = outer;
                let mut b = state.clone();
                if let Some(o) = otherwise {
                    self.region(*o, &mut b);
                }
                self.conds.pop();
                match rank_zero {
                    Some(t) => {
                        let branch = Branch {
                            then_ctx: inside,
                            outer,
                            every: t.every,
                            by: op,
                        };
                        a.combine(&b, |t, e| t.merge_rank_zero(e, branch))
                    }
                    None => a.combine(&b, Def::meet),
                }
                *state = a;
            }
            OpKind::For {
                start,
                end,
                step,
                body,
            } => {
                let u32_ty = VType::D(super::DType::U32);
                for e in [Some(*start), Some(*end), *step].into_iter().flatten() {
                    self.expect_ty(e, u32_ty, loc, op);
                    self.expr(e, state, op, None);
                }
                if let Some(s) = step
                    && matches!(ir.expr(*s).kind, ExprKind::Const(0))
                {
                    self.push(K::ZeroStep, loc, Some(op));
                }
                let u = self.loop_control(op, loc);
                self.looped(op, u, *body, state);
            }
            OpKind::While { cond, body } => {
                self.expect_ty(*cond, VType::Bool, loc, op);
                let u = self.loop_control(op, loc);
                self.looped(op, u, *body, state);
                // The condition is evaluated at the loop's head, in its state.
                self.expr(*cond, state, op, None);
            }
            OpKind::Tiles { n, body } => {
                self.expect_ty(*n, VType::D(super::DType::U32), loc, op);
                self.expr(*n, state, op, None);
                let u = self.loop_control(op, loc);
                self.looped(op, u, *body, state);
            }
            OpKind::Scan(sc) => {
                self.scan_start(op, sc, state);
                if let Some(c) = &sc.callback {
                    self.jumps.push(None);
                    self.region(c.body, state);
                    self.jumps.pop();
                }
                self.scan_end(op, sc, state);
            }
            _ => self.simple_op(op, state),
        }
    }

    /// Checks an op that holds no region.
    #[inline(never)]
    fn simple_op(&mut self, op: OpId, state: &mut State) {
        let ir = self.ir;
        let data = ir.op(op);
        let loc = data.loc;
        match &data.kind {
            OpKind::Load(t) => {
                self.transfer(t, true, state, loc, op);
                self.write_all(t.data, state);
            }
            OpKind::Store(t) => {
                self.transfer(t, false, state, loc, op);
                let bound = match t.valid {
                    None => Bound::All,
                    Some(v) => match self.bound(Some(v.count), ir.group_threads(t.group)) {
                        Bound::Count {
                            constant, group, ..
                        } => Bound::Count {
                            constant,
                            group,
                            of_block: v.of == ValidOf::Block,
                        },
                        all => all,
                    },
                };
                self.observe_all(t.data, state, loc, op, bound);
            }
            OpKind::Map { dst, srcs, expr } => {
                let d = &ir.datas[dst.index()];
                let mut operands = Vec::with_capacity(srcs.len());
                for s in srcs {
                    self.items_match(d.items, ir.datas[s.index()].items, loc, op);
                    operands.push(self.read_all(*s, state, loc, op));
                }
                self.expect_ty(*expr, VType::D(d.dtype), loc, op);
                let reads = self.value_expr(*expr, state, op, Some(srcs));
                // Slot i of the result is made from slot i of each operand.
                for i in 0..d.items {
                    let def = operands.iter().fold(reads, |acc, o| {
                        acc.meet(o.get(i as usize).copied().unwrap_or(Def::Undef))
                    });
                    state.set(dst.index(), i, def);
                }
            }
            OpKind::SetItem { dst, item, expr } => {
                let d = &ir.datas[dst.index()];
                self.expect_ty(*expr, VType::D(d.dtype), loc, op);
                let def = self.value_expr(*expr, state, op, None);
                if *item < d.items {
                    state.set(dst.index(), *item, def);
                }
            }
            OpKind::Assign { dst, src } => {
                let (d, s) = (&ir.datas[dst.index()], &ir.datas[src.index()]);
                self.items_match(d.items, s.items, loc, op);
                if d.dtype != s.dtype {
                    self.push(
                        K::TypeMismatch {
                            expected: VType::D(d.dtype),
                            found: VType::D(s.dtype),
                        },
                        loc,
                        Some(op),
                    );
                }
                for (i, def) in self.read_all(*src, state, loc, op).into_iter().enumerate() {
                    state.set(dst.index(), i as u32, def);
                }
            }
            OpKind::SharedWrite {
                array,
                index,
                value,
            } => {
                let dtype = ir.arrays[array.index()].dtype;
                self.array_write(dtype, [*index, *value], state, op);
            }
            OpKind::LocalWrite {
                array,
                index,
                value,
            } => {
                let dtype = ir.locals[array.index()].dtype;
                self.array_write(dtype, [*index, *value], state, op);
            }
            OpKind::GlobalWrite {
                param,
                index,
                value,
            } => {
                self.role(*param, false, loc, op);
                self.index_ty(*index, loc, op);
                let dtype = ir.params[param.index()].dtype;
                self.expect_ty(*value, VType::D(dtype), loc, op);
                self.expr(*index, state, op, None);
                self.expr(*value, state, op, None);
            }
            OpKind::ReadRun { param, index, dst } => {
                self.run(*param, *index, *dst, true, state, op);
                self.write_all(*dst, state);
            }
            OpKind::WriteRun { param, index, src } => {
                self.run(*param, *index, *src, false, state, op);
                self.observe_all(*src, state, loc, op, Bound::All);
            }
            OpKind::Atomic(a) => self.atomic(op, a, state),
            OpKind::SyncBlock => self.collective(GroupKind::Block, loc, op),
            OpKind::Nanosleep { ns } => {
                if *ns > super::ops::MAX_NANOSLEEP_NS {
                    let max = super::ops::MAX_NANOSLEEP_NS;
                    self.push(K::SleepTooLong { ns: *ns, max }, loc, Some(op));
                }
            }
            OpKind::Lanes(l) => self.lanes(op, l, state),
            OpKind::SyncGrid => self.grid_sync(loc, op),
            OpKind::Cluster(c) => self.cluster_op(op, c, state),
            OpKind::Print { args, .. } => {
                for a in args {
                    if self.ty(*a) == VType::Bool {
                        let found = VType::Bool;
                        let expected = VType::D(super::DType::U32);
                        self.push(K::TypeMismatch { expected, found }, loc, Some(op));
                    }
                    self.expr(*a, state, op, None);
                }
            }
            OpKind::Scatter {
                group,
                src,
                ranks,
                flags,
                dst,
                to,
                holes,
                permutation,
                inside: _,
                defined: _,
            } => {
                self.striped_group(*to, ir.groups[group.index()].kind, loc, op);
                let items = ir.datas[src.index()].items;
                for aux in [Some(*ranks), *flags].into_iter().flatten() {
                    let a = &ir.datas[aux.index()];
                    self.items_match(items, a.items, loc, op);
                    if a.dtype != super::DType::U32 {
                        self.push(
                            K::TypeMismatch {
                                expected: VType::D(super::DType::U32),
                                found: VType::D(a.dtype),
                            },
                            loc,
                            Some(op),
                        );
                    }
                    self.observe_all(aux, state, loc, op, Bound::All);
                }
                let g = ir.groups[group.index()].kind;
                if g != GroupKind::Block {
                    self.push(K::BlockOnly, loc, Some(op));
                }
                self.observe_all(*src, state, loc, op, Bound::All);
                // Positions nothing was scattered to hold the hole value, or no value; a
                // permutation leaves no position unscattered.
                let def = match (holes, permutation) {
                    (Some(_), _) | (None, true) => Def::Everywhere,
                    (None, false) => Def::Partial { by: op },
                };
                state.set_all(dst.index(), def);
                self.collective(g, loc, op);
            }
            OpKind::Neighbor(nb) => {
                use super::ops::NeighborKind as N;
                let s = &ir.datas[nb.src.index()];
                let flags = matches!(nb.kind, N::Heads | N::Tails);
                if let Some(e) = nb.op {
                    let want = if flags {
                        VType::Bool
                    } else {
                        VType::D(s.dtype)
                    };
                    self.expect_ty(e, want, loc, op);
                    let srcs = [nb.src, nb.src];
                    self.expr(e, state, op, Some(&srcs));
                }
                if let Some(e) = nb.edge {
                    self.expect_ty(e, VType::D(s.dtype), loc, op);
                    self.expr(e, state, op, None);
                }
                if let Some(e) = nb.valid {
                    self.expect_ty(e, VType::D(super::DType::U32), loc, op);
                    self.expr(e, state, op, None);
                    if nb.kind == N::AdjacentRight && nb.edge.is_some() {
                        self.push(K::EdgeOfPartialRightDifference, loc, Some(op));
                    }
                }
                if matches!(nb.kind, N::Offset(_) | N::Rotate(_)) && s.items != 1 {
                    self.push(
                        K::ItemsMismatch {
                            expected: 1,
                            found: s.items,
                        },
                        loc,
                        Some(op),
                    );
                }
                let group = ir.groups[nb.group.index()].kind;
                let block = ir.block_threads();
                if group == GroupKind::Block && block <= 32 && !block.is_power_of_two() {
                    self.push(K::WarpOpInPartialWarpBlock { block }, loc, Some(op));
                }
                let bound = self.bound(nb.valid, ir.group_threads(nb.group));
                self.observe_all(nb.src, state, loc, op, bound);
                // Past a valid count, positions keep their input (which may hold no value).
                let def = self.weakest(nb.src, state);
                state.set_all(nb.dst.index(), def);
                if let Some(o) = nb.shifted_out {
                    state.set_all(o.index(), def);
                }
                self.collective(group, loc, op);
            }
            OpKind::Exchange {
                group,
                src,
                dst,
                to,
                ..
            } => {
                self.striped_group(*to, ir.groups[group.index()].kind, loc, op);
                // Positions move with their values: a scatter's holes stay holes (a valid count
                // still names the positions that hold values), but a value only some ranks hold
                // would reach others.
                let def = match self.weakest(*src, state) {
                    p @ Def::Partial { .. } if self.covered_partly(*src, state) => p,
                    _ => {
                        self.observe_all(*src, state, loc, op, Bound::All);
                        Def::Everywhere
                    }
                };
                state.set_all(dst.index(), def);
                self.collective(ir.groups[group.index()].kind, loc, op);
            }
            OpKind::Reduce(r) => {
                let (s, d) = (&ir.datas[r.src.index()], &ir.datas[r.dst.index()]);
                if s.dtype != d.dtype {
                    self.push(
                        K::TypeMismatch {
                            expected: VType::D(d.dtype),
                            found: VType::D(s.dtype),
                        },
                        loc,
                        Some(op),
                    );
                }
                if let Some(v) = r.valid {
                    self.expect_ty(v, VType::D(super::DType::U32), loc, op);
                    self.expr(v, state, op, None);
                    // Several items per thread count in blocked position order (the planner
                    // converts a payload arranged otherwise).
                }
                if let super::ops::ReduceOp::Custom { expr, .. } = r.op {
                    self.expect_ty(expr, VType::D(s.dtype), loc, op);
                    let srcs = [r.src, r.src];
                    self.expr(expr, state, op, Some(&srcs));
                }
                let group = ir.groups[r.group.index()].kind;
                let block = ir.block_threads();
                if group == GroupKind::Block && block > 32 && !block.is_multiple_of(32) {
                    self.push(K::WarpOpInPartialWarpBlock { block }, loc, Some(op));
                }
                if group == GroupKind::Block && block <= 32 && !block.is_power_of_two() {
                    self.push(K::WarpOpInPartialWarpBlock { block }, loc, Some(op));
                }
                if r.algorithm == super::ops::ReduceAlgorithm::RakingCommutativeOnly
                    && !r.op.commutative()
                {
                    self.push(K::NotCommutative, loc, Some(op));
                }
                let threads = ir.group_threads(r.group);
                let bound = self.bound(r.valid, threads);
                self.observe_all(r.src, state, loc, op, bound);
                // Without broadcast, the result is at each group's rank 0 only.
                let def = if r.broadcast || threads <= 1 {
                    Def::Everywhere
                } else {
                    Def::RankZero {
                        width: threads,
                        by: op,
                    }
                };
                state.set_all(r.dst.index(), def);
                self.collective(group, loc, op);
            }
            // Checked by `op`, which walks their regions.
            OpKind::Break => self.jump(true, loc, op, state),
            OpKind::Continue => self.jump(false, loc, op, state),
            OpKind::ReturnIf { cond } => self.return_if(*cond, loc, op, state),
            OpKind::Assert { cond, .. } => {
                self.expect_ty(*cond, VType::Bool, loc, op);
                self.expr(*cond, state, op, None);
            }
            OpKind::If { .. }
            | OpKind::For { .. }
            | OpKind::While { .. }
            | OpKind::Tiles { .. }
            | OpKind::Scan(_) => {}
        }
    }

    /// Checks an atomic: its memory (an output, a read-write buffer or a shared array), the
    /// element type and the operand types, the index; the old value is defined after it.
    fn atomic(&mut self, op: OpId, a: &AtomicSpec, state: &mut State) {
        let ir = self.ir;
        let loc = ir.op(op).loc;
        let dtype = match a.memory {
            AtomicMemory::Global(p) => {
                self.role(p, false, loc, op);
                self.index_ty(a.index, loc, op);
                ir.params[p.index()].dtype
            }
            AtomicMemory::Shared(arr) => {
                self.array_index_ty(a.index, loc, op);
                ir.arrays[arr.index()].dtype
            }
        };
        if !a.op.takes(dtype) {
            self.push(K::AtomicType { op: a.op, dtype }, loc, Some(op));
        }
        if (a.op == AtomicOp::Cas) != a.compare.is_some() {
            self.push(K::AtomicCompare { op: a.op }, loc, Some(op));
        }
        let shared = matches!(a.memory, AtomicMemory::Shared(_));
        let releases = matches!(a.order, MemoryOrder::Release | MemoryOrder::AcqRel);
        if a.op == AtomicOp::Load && (shared || releases) {
            let order = a.order;
            self.push(K::AtomicLoad { order, shared }, loc, Some(op));
        }
        for e in [Some(a.value), a.compare].into_iter().flatten() {
            self.expect_ty(e, VType::D(dtype), loc, op);
        }
        let old = &ir.datas[a.old.index()];
        if old.dtype != dtype {
            self.push(
                K::TypeMismatch {
                    expected: VType::D(dtype),
                    found: VType::D(old.dtype),
                },
                loc,
                Some(op),
            );
        }
        self.items_match(1, old.items, loc, op);
        for e in [Some(a.index), Some(a.value), a.compare]
            .into_iter()
            .flatten()
        {
            self.expr(e, state, op, None);
        }
        state.set(a.old.index(), 0, Def::Everywhere);
    }

    /// Checks a scan up to its prefix callback's ops.
    #[inline(never)]
    fn scan_start(&mut self, op: OpId, sc: &ScanSpec, state: &mut State) {
        let ir = self.ir;
        let loc = ir.op(op).loc;
        let s = &ir.datas[sc.src.index()];
        if let Some(v) = sc.initial {
            self.expect_ty(v, VType::D(s.dtype), loc, op);
            self.expr(v, state, op, None);
        } else if !sc.inclusive && sc.callback.is_none() {
            self.push(K::ExclusiveScanNeedsInitial, loc, Some(op));
        }
        if let Some(c) = &sc.callback {
            // The total is written, the prefix evaluated, then the callback's ops run.
            if let Some(a) = sc.aggregate {
                self.write_all(a, state);
            }
            self.expect_ty(c.prefix, VType::D(s.dtype), loc, op);
            // Rank 0's prefix seeds the group: it is read there only.
            let outer = self.context;
            self.context = defined::lcm(outer, ir.group_threads(sc.group));
            self.expr(c.prefix, state, op, None);
            self.context = outer;
        }
    }

    /// Checks the rest of a scan, after its prefix callback's ops.
    #[inline(never)]
    fn scan_end(&mut self, op: OpId, sc: &ScanSpec, state: &mut State) {
        let ir = self.ir;
        let loc = ir.op(op).loc;
        let s = &ir.datas[sc.src.index()];
        if let super::ops::ReduceOp::Custom { expr, .. } = sc.op {
            self.expect_ty(expr, VType::D(s.dtype), loc, op);
            let srcs = [sc.src, sc.src];
            self.expr(expr, state, op, Some(&srcs));
        }
        let group = ir.groups[sc.group.index()].kind;
        let block = ir.block_threads();
        if let Some(v) = sc.valid {
            self.expect_ty(v, VType::D(super::DType::U32), loc, op);
            self.expr(v, state, op, None);
            if ir.group_threads(sc.group) > 32 {
                self.push(K::ValidItemsNeedWarpGroup, loc, Some(op));
            }
        }
        if group == GroupKind::Block
            && ((block > 32 && !block.is_multiple_of(32))
                || (block <= 32 && !block.is_power_of_two()))
        {
            self.push(K::WarpOpInPartialWarpBlock { block }, loc, Some(op));
        }
        let threads = ir.group_threads(sc.group);
        let bound = self.bound(sc.valid, threads);
        self.observe_all(sc.src, state, loc, op, bound);
        // Outputs past a valid count are unspecified: made from positions that may hold no
        // value (a scatter's holes), or at ranks whose input holds none (a valid count of 1
        // over a rank-0 value leaves rank 0's output alone).
        let def = match self.weakest(sc.src, state) {
            Def::RankZero { width, by } => Def::RankZero {
                width: defined::lcm(width, threads),
                by,
            },
            p @ Def::Partial { .. } => p,
            _ => Def::Everywhere,
        };
        state.set_all(sc.dst.index(), def);
        if let Some(a) = sc.aggregate {
            self.write_all(a, state);
        }
        self.collective(group, loc, op);
    }
}

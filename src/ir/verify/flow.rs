//! The verifier's uniformity analysis: how uniform every expression is, how uniform the
//! control around every op is, and which early exits may have run before it.
//!
//! Variables make it a fixpoint. A variable is as uniform as the least uniform of the values
//! it is set to and of the control around each set (a set under a branch on thread-varying
//! data, or in a loop whose trip count differs by thread, makes it thread-varying); its
//! reads are as uniform as the variable. The analysis starts from every variable and loop
//! uniform across the grid and lowers them until nothing changes (each round can only lower,
//! and a uniformity takes few values, so it ends in a few rounds).
//!
//! A loop's control is as uniform as its bounds (a `while_`'s condition) and every `break_`
//! and `continue_` in it (the control around each, inside the loop): a thread-varying break
//! makes the loop's trip count differ by thread. A `return_if` takes the threads where its
//! condition holds (under the control around it) out of everything after it in program order,
//! and, inside a loop, out of the whole body's later iterations.

use super::Uniformity;
use crate::ir::entities::{DataId, ExprId, OpId, RegionId};
use crate::ir::expr::{Axis, BinaryOp, ExprKind, IndexKind};
use crate::ir::ops::*;
use smallvec::SmallVec;

/// An early exit that may have run: how uniform the set of threads that left is, and the
/// `return_if` (the least uniform one where several may have run).
pub(super) type Exit = Option<(Uniformity, OpId)>;

/// What the analysis found.
pub(super) struct Flow {
    /// Per expression node.
    pub uniformity: Vec<Uniformity>,
    /// Per op: for a loop, how uniform its control is, and the `break_` or `continue_` that
    /// lowered it below its bounds (if one did); [`Uniformity::GRID`] for other ops.
    pub loops: Vec<(Uniformity, Option<OpId>)>,
    /// Per op: the least uniformity among the conditions and loops around it and the exits
    /// that may have run before it.
    pub control: Vec<Uniformity>,
    /// Per op: the least uniform exit that may have run before it.
    pub exit: Vec<Exit>,
}

/// Most rounds of the fixpoint; past them every variable and loop counts as thread-varying.
const MAX_ROUNDS: usize = 64;

/// Runs the analysis on an IR whose handles and region tree the verifier checked.
pub(super) fn analyze(ir: &Ir) -> Flow {
    let is_var: Vec<bool> = ir.datas.iter().map(|d| d.var && d.items == 1).collect();
    let mut vars = vec![Uniformity::GRID; ir.datas.len()];
    let mut loops = vec![(Uniformity::GRID, None); ir.ops.len()];
    for round in 0..=MAX_ROUNDS {
        if round == MAX_ROUNDS {
            vars.fill(Uniformity::THREAD);
            loops.fill((Uniformity::THREAD, None));
        }
        let uniformity = uniformity(ir, &is_var, &vars, &loops);
        let mut pass = Pass {
            ir,
            u: &uniformity,
            loops: &loops,
            is_var: &is_var,
            vars: vec![Uniformity::GRID; ir.datas.len()],
            jumps: vec![(Uniformity::GRID, None); ir.ops.len()],
            summary: vec![None; ir.ops.len()],
            control: vec![Uniformity::GRID; ir.ops.len()],
            exit: vec![None; ir.ops.len()],
            returned: None,
            targets: Vec::new(),
        };
        pass.summarize(ir.body);
        pass.region(ir.body, [Uniformity::GRID; 2]);
        let of = |e: ExprId| {
            uniformity
                .get(e.index())
                .copied()
                .unwrap_or(Uniformity::THREAD)
        };
        let mut next_loops = loops.clone();
        for (i, op) in ir.ops.iter().enumerate() {
            let bounds = match &op.kind {
                OpKind::For {
                    start, end, step, ..
                } => of(*start)
                    .min(of(*end))
                    .min(step.map_or(Uniformity::GRID, of)),
                OpKind::While { cond, .. } => of(*cond),
                OpKind::Tiles { n, .. } => of(*n).min(Uniformity::BLOCK),
                _ => continue,
            };
            let (jump, by) = pass.jumps[i];
            let next = if jump < bounds {
                (jump, by)
            } else {
                (bounds, None)
            };
            next_loops[i] = if next.0 <= loops[i].0 { next } else { loops[i] };
        }
        let next_vars: Vec<Uniformity> = vars
            .iter()
            .zip(&pass.vars)
            .map(|(a, b)| *a.min(b))
            .collect();
        if (next_vars == vars && next_loops == loops) || round == MAX_ROUNDS {
            let (control, exit) = (pass.control, pass.exit);
            return Flow {
                uniformity,
                loops,
                control,
                exit,
            };
        }
        vars = next_vars;
        loops = next_loops;
    }
    unreachable!("the last round returns")
}

/// The lower of two exits (the first on a tie).
fn least(a: Exit, b: Exit) -> Exit {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y.0 < x.0 { y } else { x }),
        (x, None) => x,
        (None, y) => y,
    }
}

/// An exit seen through control of uniformity `u`.
fn lower(e: Exit, u: Uniformity) -> Exit {
    e.map(|(v, op)| (v.min(u), op))
}

struct Pass<'a> {
    ir: &'a Ir,
    u: &'a [Uniformity],
    /// The previous round's loops.
    loops: &'a [(Uniformity, Option<OpId>)],
    is_var: &'a [bool],
    vars: Vec<Uniformity>,
    /// Per loop: the least control around its breaks and continues, and one such.
    jumps: Vec<(Uniformity, Option<OpId>)>,
    /// Per loop: the least uniform exit inside its body, seen from the loop.
    summary: Vec<Exit>,
    control: Vec<Uniformity>,
    exit: Vec<Exit>,
    /// The exits that may have run before the op being walked.
    returned: Exit,
    /// The loops a `break_` or `continue_` may target, innermost last (`None`: a scan's
    /// prefix callback, which no jump leaves).
    targets: Vec<Option<OpId>>,
}

impl Pass<'_> {
    fn of(&self, e: ExprId) -> Uniformity {
        self.u.get(e.index()).copied().unwrap_or(Uniformity::THREAD)
    }

    /// The least uniform exit inside region `r`, seen from outside it; records each loop's.
    fn summarize(&mut self, r: RegionId) -> Exit {
        let ir = self.ir;
        let mut out = None;
        for &op in ir.region(r) {
            let kind = &ir.op(op).kind;
            let found = match kind {
                OpKind::ReturnIf { cond } => Some((self.of(*cond), op)),
                OpKind::If {
                    cond,
                    then,
                    otherwise,
                } => {
                    let a = self.summarize(*then);
                    let b = otherwise.map_or(None, |o| self.summarize(o));
                    lower(least(a, b), self.of(*cond))
                }
                k if k.is_loop() => {
                    let inner = kind.regions().into_iter().map(|b| self.summarize(b));
                    let s = lower(inner.fold(None, least), self.loops[op.index()].0);
                    self.summary[op.index()] = s;
                    s
                }
                _ => kind
                    .regions()
                    .into_iter()
                    .map(|b| self.summarize(b))
                    .fold(None, least),
            };
            out = least(out, found);
        }
        out
    }

    /// Walks region `r` under control `[ctl, rel]`: how uniform all of it is, and the part
    /// inside the innermost loop (what a jump there makes of the loop).
    fn region(&mut self, r: RegionId, ctl: [Uniformity; 2]) {
        for &op in self.ir.region(r) {
            self.op(op, ctl);
        }
    }

    fn op(&mut self, op: OpId, [ctl, rel]: [Uniformity; 2]) {
        let ir = self.ir;
        let kind = &ir.op(op).kind;
        let i = op.index();
        if matches!(
            kind,
            OpKind::For { .. } | OpKind::While { .. } | OpKind::Tiles { .. }
        ) {
            // Later iterations run after the exits inside the body.
            self.returned = least(self.returned, lower(self.summary[i], ctl));
        }
        let returned = self.returned.map_or(Uniformity::GRID, |r| r.0);
        self.control[i] = self.control[i].min(ctl).min(returned);
        self.exit[i] = least(self.exit[i], self.returned);
        match kind {
            OpKind::SetItem { dst, expr, .. } => {
                if self.is_var.get(dst.index()) == Some(&true) {
                    let v = ctl.min(self.of(*expr));
                    self.vars[dst.index()] = self.vars[dst.index()].min(v);
                }
            }
            OpKind::If {
                cond,
                then,
                otherwise,
            } => {
                let u = self.of(*cond);
                let c = [ctl.min(u), rel.min(u)];
                let before = self.returned;
                self.region(*then, c);
                let after_then = std::mem::replace(&mut self.returned, before);
                if let Some(o) = otherwise {
                    self.region(*o, c);
                }
                self.returned = least(after_then, self.returned);
            }
            k if k.is_loop() => {
                let c = [ctl.min(self.loops[i].0), Uniformity::GRID];
                self.targets.push(Some(op));
                for body in k.regions() {
                    self.region(body, c);
                }
                self.targets.pop();
            }
            OpKind::Break | OpKind::Continue => {
                if let Some(Some(l)) = self.targets.last() {
                    let j = &mut self.jumps[l.index()];
                    if rel < j.0 {
                        *j = (rel, Some(op));
                    }
                }
            }
            OpKind::ReturnIf { cond } => {
                let u = ctl.min(self.of(*cond));
                self.returned = least(self.returned, Some((u, op)));
            }
            k => {
                for d in written(k) {
                    if let Some(v) = self.vars.get_mut(d.index()) {
                        *v = Uniformity::THREAD;
                    }
                }
                let regions = k.regions();
                if !regions.is_empty() {
                    self.targets.push(None);
                    for r in regions {
                        self.region(r, [ctl, rel]);
                    }
                    self.targets.pop();
                }
            }
        }
    }
}

/// The payloads an op other than a slot write writes (a variable written so is
/// thread-varying: only an IR edited by hand does it).
fn written(kind: &OpKind) -> SmallVec<[DataId; 2]> {
    let mut v = SmallVec::new();
    match kind {
        OpKind::Load(t) => v.push(t.data),
        OpKind::Map { dst, .. } | OpKind::Assign { dst, .. } => v.push(*dst),
        OpKind::Reduce(r) => v.push(r.dst),
        OpKind::Scan(s) => {
            v.push(s.dst);
            v.extend(s.aggregate);
        }
        OpKind::Neighbor(nb) => {
            v.push(nb.dst);
            v.extend(nb.shifted_out);
        }
        OpKind::Scatter { dst, .. } | OpKind::Exchange { dst, .. } => v.push(*dst),
        OpKind::Atomic(a) => v.push(a.old),
        OpKind::Lanes(l) => v.extend(l.out),
        OpKind::ReadRun { dst, .. } => v.push(*dst),
        _ => {}
    }
    v
}

/// The uniformity of every expression node (children come before parents), with variables
/// as uniform as `vars` says. A loop's counter is as uniform as the loop's control: where a
/// thread-varying `break_` or `continue_` lets threads run apart, they may be in different
/// iterations.
fn uniformity(
    ir: &Ir,
    is_var: &[bool],
    vars: &[Uniformity],
    loops: &[(Uniformity, Option<OpId>)],
) -> Vec<Uniformity> {
    let nodes = ir.exprs.nodes();
    // A tile's vote (and `match_all`) gives every thread of the tile the same result: the
    // verifier has every thread of the tile run it.
    let mut voted = vec![None; ir.datas.len()];
    for op in &ir.ops {
        if let OpKind::Lanes(l) = &op.kind
            && l.members.is_none()
            && matches!(
                l.op,
                LaneOp::Any | LaneOp::All | LaneOp::Ballot | LaneOp::MatchAll
            )
            && let Some(GroupKind::LogicalWarp { width }) =
                ir.groups.get(l.group.index()).map(|g| g.kind)
            && let Some(slot) = l.out.and_then(|d| voted.get_mut(d.index()))
        {
            *slot = Some(Uniformity(width.clamp(1, 32)));
        }
        // A broadcast reduction gives every rank of its group the same result; so does a
        // scan's aggregate (the group's total at every rank) under a built-in operator:
        // every rank folds the same totals in the same order, or takes the total from one
        // lane or one shared slot. A user operator may read thread-varying values beside its
        // operands, so its aggregate is taken as varying.
        let whole_group = match &op.kind {
            OpKind::Reduce(r) if r.broadcast => Some((r.group, r.dst)),
            OpKind::Scan(s) if !matches!(s.op, ReduceOp::Custom { .. }) => {
                s.aggregate.map(|a| (s.group, a))
            }
            _ => None,
        };
        if let Some((group, data)) = whole_group
            && let Some(slot) = voted.get_mut(data.index())
        {
            *slot = match ir.groups.get(group.index()).map(|g| g.kind) {
                Some(GroupKind::Block) => Some(Uniformity::BLOCK),
                Some(GroupKind::LogicalWarp { width }) => Some(Uniformity(width.clamp(1, 32))),
                _ => None,
            };
        }
    }
    let mut u: Vec<Uniformity> = Vec::with_capacity(nodes.len());
    for n in nodes {
        let of = |id: &ExprId| u.get(id.index()).copied().unwrap_or(Uniformity::THREAD);
        let v = match &n.kind {
            ExprKind::Const(_) | ExprKind::Param(_) => Uniformity::GRID,
            ExprKind::Item { data, item: 0 } if is_var.get(data.index()) == Some(&true) => {
                vars[data.index()]
            }
            ExprKind::Item { data, item: 0 } if let Some(&Some(tile)) = voted.get(data.index()) => {
                tile
            }
            ExprKind::Arg(_)
            | ExprKind::Item { .. }
            | ExprKind::SharedRead(..)
            | ExprKind::LocalRead(..) => Uniformity::THREAD,
            // A constant array holds the same values for the whole launch.
            ExprKind::ConstRead(_, i) => of(i),
            // An input holds the same values for every thread of the launch; a read-write
            // buffer may change under the read.
            ExprKind::GlobalRead(p, i) => match ir.params.get(p.index()).map(|d| d.role) {
                Some(Role::Input) => of(i),
                _ => Uniformity::THREAD,
            },
            ExprKind::Index(k) => match k {
                IndexKind::ThreadRank | IndexKind::Lane => Uniformity::THREAD,
                IndexKind::WarpRank => Uniformity::WARP,
                IndexKind::BlockIndex | IndexKind::BlockIdx(_) => Uniformity::BLOCK,
                IndexKind::ThreadIdx(axis) => thread_idx_uniformity(ir.block.dims, *axis),
                IndexKind::GridBlocks
                | IndexKind::BlockThreads
                | IndexKind::BlockDim(_)
                | IndexKind::GridDim(_)
                | IndexKind::ClusterDim(_)
                | IndexKind::Item => Uniformity::GRID,
            },
            ExprKind::LoopVar { op, field } => {
                let control = loops.get(op.index()).map_or(Uniformity::THREAD, |l| l.0);
                let bounds = match ir.ops.get(op.index()).map(|o| &o.kind) {
                    Some(OpKind::For {
                        start, end, step, ..
                    }) => of(start)
                        .min(of(end))
                        .min(step.as_ref().map_or(Uniformity::GRID, of)),
                    Some(OpKind::Tiles { n, .. }) => {
                        let base = if *field == 2 { of(n) } else { Uniformity::GRID };
                        base.min(Uniformity::BLOCK)
                    }
                    _ => Uniformity::THREAD,
                };
                bounds.min(control)
            }
            ExprKind::Binary(op @ (BinaryOp::Div | BinaryOp::Shr), a, b) => {
                // `thread_rank / 2^k` agrees across aligned runs of 2^k threads, and
                // `warp_rank / 2^k` across runs of 2^k warps.
                let runs = |c: &u64| match op {
                    BinaryOp::Div if c.is_power_of_two() => Some(*c),
                    BinaryOp::Shr if *c < 20 => Some(1u64 << c),
                    _ => None,
                };
                let divisor = match (&nodes[a.index()].kind, &nodes[b.index()].kind) {
                    (ExprKind::Index(IndexKind::ThreadRank), ExprKind::Const(c)) => runs(c),
                    (ExprKind::Index(IndexKind::WarpRank), ExprKind::Const(c)) => {
                        runs(c).map(|r| r.saturating_mul(32))
                    }
                    _ => None,
                };
                match divisor {
                    Some(d) => Uniformity(d.min(Uniformity::BLOCK.0 as u64) as u32),
                    None => of(a).min(of(b)),
                }
            }
            _ => n.kind.children().map(of).min().unwrap_or(Uniformity::GRID),
        };
        u.push(v);
    }
    u
}

/// How uniform a thread's index along `axis` is in a block of `dims`: the same for the whole
/// grid (0) where the block does not extend along it, else constant over
/// runs of the threads before it (`dx` threads share a `y`, `dx * dy` a `z`), counted as the
/// largest power of two dividing that run (aligned groups of that many threads lie inside
/// one run); along x it varies between threads.
pub(crate) fn thread_idx_uniformity(dims: [u32; 3], axis: Axis) -> Uniformity {
    let i = axis.index();
    if dims[i] <= 1 {
        return Uniformity::GRID;
    }
    let run = dims[..i]
        .iter()
        .fold(1u32, |n, &d| n.saturating_mul(d.max(1)));
    let pow2 = 1u32 << run.trailing_zeros().min(20);
    Uniformity(pow2.max(Uniformity::THREAD.0))
}

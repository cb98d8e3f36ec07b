//! Lowering of expressions to PTX instructions, and of reduction operators.

use super::builder::{
    ArrayRef, Emitter, arith_ty, bits_or_float, bits_ty, class, is_narrow, mem_ty,
};
use crate::ir::expr::{Axis, BinaryOp as B, CmpOp, ExprKind, IndexKind, UnaryOp as U, VType};
use crate::ir::math::Func;
use crate::ir::ops::{ReduceOp, Role};
use crate::ir::{CheckKind, DType, ExprId};
use crate::ptx::*;
use rustc_hash::FxHashMap;

mod math;

/// Values an expression may refer to besides the kernel-wide ones.
#[derive(Debug, Clone, Default)]
pub struct Ctx {
    /// `Arg(i)` of a map body.
    pub args: Vec<Reg>,
    /// The slot a map body computes.
    pub item: Option<u32>,
    /// Where the expression's value is used: memory reads happen only where this predicate
    /// holds (a select's side, the right operand of a lazy `and`/`or`), and give 0 elsewhere.
    pub guard: Option<Reg>,
}

/// Expressions up to this deep are evaluated by recursion, operands first; deeper ones bottom
/// up (see [`Emitter::eval`]).
const RECURSION_DEPTH: u32 = 64;

/// A step of the bottom-up evaluation ([`Emitter::eval_bottom_up`]); `usize`s index its
/// contexts, or its slots for the sides' registers.
enum Step {
    /// Evaluate the node (its operands first) in a context.
    Visit(ExprId, usize),
    /// The node's operands are evaluated: evaluate it.
    Node(ExprId, usize),
    /// A lazy node's unconditional operand is evaluated: evaluate its sides, each under its
    /// guard.
    Sides(ExprId, usize),
    /// Open a side's context.
    Open,
    /// Close the innermost context, keeping the register of the side evaluated in it.
    Close(ExprId, usize, usize),
    /// A lazy node's sides are evaluated (their registers from the first slot on): combine
    /// them.
    Join(ExprId, usize, usize),
}

impl Emitter<'_> {
    /// Evaluates an expression into a register (memoized per op through `memo`).
    ///
    /// Operands are evaluated first, left to right, by recursion. An expression deeper than a
    /// few dozen levels (a long chain of additions, say) is evaluated bottom up instead, in the
    /// same order, by a loop with a stack of its own: the thread's stack bounds no kernel.
    ///
    /// A select whose sides read memory (a shared array, a buffer) evaluates each side under
    /// a guard, the condition or its negation: the side's loads happen only where it is taken
    /// (elsewhere they give 0, never to be selected), and so do those of the right operand of
    /// an `and` (where the left holds) or an `or` (where it fails). Values computed under a
    /// guard leave the memo when the guard closes.
    pub fn eval(&mut self, id: ExprId, ctx: &Ctx, memo: &mut FxHashMap<ExprId, Reg>) -> Reg {
        if let Some(&r) = memo.get(&id) {
            return r;
        }
        if self
            .expr_depth
            .get(id.index())
            .is_some_and(|&d| d > RECURSION_DEPTH)
        {
            return self.eval_bottom_up(id, ctx, memo);
        }
        self.eval_node(id, ctx, memo)
    }

    /// The unconditional operand of a node whose other operands are evaluated under a guard:
    /// a select's condition, the left operand of an `and` or `or` of predicates; `None` for
    /// nodes evaluated plainly.
    fn lazy_head(&self, id: ExprId) -> Option<ExprId> {
        let reads = |e: &ExprId| self.reads_memory.get(e.index()).copied().unwrap_or(false);
        let node = self.ir.expr(id);
        match &node.kind {
            ExprKind::Select(c, a, b) if reads(a) || reads(b) => Some(*c),
            ExprKind::Binary(B::And | B::Or, a, b) if node.ty == VType::Bool && reads(b) => {
                Some(*a)
            }
            _ => None,
        }
    }

    /// The guard of a side: `parent and p` (`not p` with `negate`).
    fn side_guard(&mut self, parent: Option<Reg>, p: Reg, negate: bool) -> Reg {
        let p = if negate {
            let q = self.reg(RegClass::Pred);
            self.op(Op::PredNot { dst: q, a: p });
            q
        } else {
            p
        };
        self.both(parent, Some(p)).unwrap_or(p)
    }

    /// Opens a guard: what is evaluated until [`Self::close_guard`] leaves the memo then.
    fn open_guard(&mut self) {
        self.guarded_evals.push(Vec::new());
    }

    /// Closes the innermost guard, dropping what was evaluated under it from the memo.
    fn close_guard(&mut self, memo: &mut FxHashMap<ExprId, Reg>) {
        for id in self.guarded_evals.pop().unwrap_or_default() {
            memo.remove(&id);
        }
    }

    /// Notes an evaluation in the memo (and under the innermost open guard).
    fn memoize(&mut self, id: ExprId, r: Reg, memo: &mut FxHashMap<ExprId, Reg>) {
        memo.insert(id, r);
        if let Some(open) = self.guarded_evals.last_mut() {
            open.push(id);
            self.guarded_steps += 1;
        }
    }

    /// Whether the kernel's conditional reads took more steps than it may (the op being
    /// lowered is then a [`crate::planner::PlanError::ConditionalReads`]).
    pub(crate) fn over_budget(&self) -> bool {
        self.guarded_steps > self.guarded_limit
    }

    /// A register of a node's type holding 0 (`false`): what a side stands for once the
    /// budget is spent (the op fails, so it is never used).
    fn placeholder(&mut self, id: ExprId) -> Reg {
        match self.ir.expr(id).ty {
            VType::D(d) => self.constant(d, 0),
            VType::Bool => self.setp(
                Cmp::Ne,
                Ty::U32,
                Operand::Special(Special::Laneid),
                Operand::Special(Special::Laneid),
            ),
        }
    }

    /// The nodes a select's two sides both evaluate whatever their own selects decide (not
    /// yet in the memo), in id order: they are needed wherever the select is, so they are
    /// evaluated once, before the sides' guards, instead of once per side.
    fn hoisted(&self, a: ExprId, b: ExprId, memo: &FxHashMap<ExprId, Reg>) -> Vec<ExprId> {
        let reach = |root: ExprId| {
            let mut seen = rustc_hash::FxHashSet::default();
            let mut stack = vec![root];
            while let Some(n) = stack.pop() {
                if memo.contains_key(&n) || !seen.insert(n) {
                    continue;
                }
                match self.lazy_head(n) {
                    Some(head) => stack.push(head),
                    None => stack.extend(self.ir.expr(n).kind.children().copied()),
                }
            }
            seen
        };
        let from_a = reach(a);
        let mut both: Vec<ExprId> = reach(b)
            .into_iter()
            .filter(|n| from_a.contains(n))
            .collect();
        both.sort();
        both
    }

    /// Evaluates `side` where `ctx`'s guard and `p` (or `not p`) hold.
    fn eval_side(
        &mut self,
        side: ExprId,
        ctx: &Ctx,
        p: Reg,
        negate: bool,
        memo: &mut FxHashMap<ExprId, Reg>,
    ) -> Reg {
        if self.over_budget() {
            return self.placeholder(side);
        }
        let guard = self.side_guard(ctx.guard, p, negate);
        let inner = Ctx {
            guard: Some(guard),
            ..ctx.clone()
        };
        self.open_guard();
        let r = self.eval(side, &inner, memo);
        self.close_guard(memo);
        r
    }

    /// Combines a lazy node's head (`p`) and sides: `p ? a : b` for a select, `p and a` or
    /// `p or a` for predicates.
    fn join(&mut self, id: ExprId, p: Reg, sides: (Reg, Option<Reg>)) -> Reg {
        let node = self.ir.expr(id);
        match (node.ty, &node.kind, sides) {
            (VType::D(d), _, (a, Some(b))) => self.pick(d, p, a, b),
            (_, ExprKind::Binary(op, ..), (a, _)) => {
                let r = self.reg(RegClass::Pred);
                let op = if *op == B::Or { BinOp::Or } else { BinOp::And };
                self.op(Op::PredBin {
                    op,
                    dst: r,
                    a: p,
                    b: a,
                });
                r
            }
            // `lazy_head` names no other node.
            (_, _, (a, _)) => a,
        }
    }

    /// A lazy node evaluated by recursion: its head, then its sides under their guards.
    fn eval_lazy(
        &mut self,
        id: ExprId,
        head: ExprId,
        ctx: &Ctx,
        memo: &mut FxHashMap<ExprId, Reg>,
    ) -> Reg {
        let p = self.eval(head, ctx, memo);
        let r = match self.ir.expr(id).kind {
            ExprKind::Select(_, a, b) => {
                for h in self.hoisted(a, b, memo) {
                    self.eval(h, ctx, memo);
                }
                let ra = self.eval_side(a, ctx, p, false, memo);
                let rb = self.eval_side(b, ctx, p, true, memo);
                self.join(id, p, (ra, Some(rb)))
            }
            ExprKind::Binary(op, _, b) => {
                let rb = self.eval_side(b, ctx, p, op == B::Or, memo);
                self.join(id, p, (rb, None))
            }
            _ => p,
        };
        self.memoize(id, r, memo);
        r
    }

    /// Evaluates `root` and every node below it not evaluated yet, operands before the nodes
    /// using them, with a stack of its own; a lazy node's sides are evaluated in contexts of
    /// their own, opened and closed in the order a recursion would.
    fn eval_bottom_up(
        &mut self,
        root: ExprId,
        ctx: &Ctx,
        memo: &mut FxHashMap<ExprId, Reg>,
    ) -> Reg {
        let mut ctxs = vec![ctx.clone()];
        let mut slots: Vec<Reg> = Vec::new();
        let mut stack = vec![Step::Visit(root, 0)];
        while let Some(step) = stack.pop() {
            match step {
                Step::Visit(id, c) => {
                    if memo.contains_key(&id) {
                        continue;
                    }
                    if let Some(head) = self.lazy_head(id) {
                        stack.push(Step::Sides(id, c));
                        stack.push(Step::Visit(head, c));
                        continue;
                    }
                    stack.push(Step::Node(id, c));
                    let node = self.ir.expr(id);
                    let children: smallvec::SmallVec<[ExprId; 3]> =
                        node.kind.children().copied().collect();
                    stack.extend(children.into_iter().rev().map(|ch| Step::Visit(ch, c)));
                }
                Step::Node(id, c) => {
                    if !memo.contains_key(&id) {
                        let cx = ctxs[c].clone();
                        self.eval_node(id, &cx, memo);
                    }
                }
                Step::Sides(id, c) => {
                    let Some(head) = self.lazy_head(id) else {
                        continue;
                    };
                    let cx = ctxs[c].clone();
                    let p = self.eval(head, &cx, memo);
                    let sides: smallvec::SmallVec<[(ExprId, bool); 2]> = match self.ir.expr(id).kind
                    {
                        ExprKind::Select(_, a, b) => [(a, false), (b, true)].into(),
                        ExprKind::Binary(op, _, b) => [(b, op == B::Or)].into_iter().collect(),
                        _ => smallvec::SmallVec::new(),
                    };
                    let first = slots.len();
                    stack.push(Step::Join(id, c, first));
                    if self.over_budget() {
                        for &(side, _) in &sides {
                            let r = self.placeholder(side);
                            slots.push(r);
                        }
                        continue;
                    }
                    let parent = ctxs[c].guard;
                    // Pushed last first, so the first side is evaluated first.
                    let mut opened = Vec::new();
                    for (k, &(side, negate)) in sides.iter().enumerate() {
                        let guard = self.side_guard(parent, p, negate);
                        ctxs.push(Ctx {
                            guard: Some(guard),
                            ..ctxs[c].clone()
                        });
                        slots.push(p);
                        opened.push((side, ctxs.len() - 1, first + k));
                    }
                    for (side, sc, slot) in opened.into_iter().rev() {
                        stack.push(Step::Close(side, sc, slot));
                        stack.push(Step::Visit(side, sc));
                        stack.push(Step::Open);
                    }
                    // What both sides need is evaluated first, unguarded by the condition.
                    if let [(a, _), (b, _)] = sides[..] {
                        for h in self.hoisted(a, b, memo).into_iter().rev() {
                            stack.push(Step::Visit(h, c));
                        }
                    }
                }
                Step::Open => self.open_guard(),
                Step::Close(side, sc, slot) => {
                    let cx = ctxs[sc].clone();
                    slots[slot] = self.eval(side, &cx, memo);
                    self.close_guard(memo);
                }
                Step::Join(id, c, first) => {
                    let Some(head) = self.lazy_head(id) else {
                        continue;
                    };
                    let cx = ctxs[c].clone();
                    let p = self.eval(head, &cx, memo);
                    let a = slots[first];
                    let b = slots.get(first + 1).copied();
                    let b = b.filter(|_| matches!(self.ir.expr(id).kind, ExprKind::Select(..)));
                    let r = self.join(id, p, (a, b));
                    self.memoize(id, r, memo);
                }
            }
        }
        match memo.get(&root) {
            Some(&r) => r,
            None => self.eval_node(root, ctx, memo),
        }
    }

    fn eval_node(&mut self, id: ExprId, ctx: &Ctx, memo: &mut FxHashMap<ExprId, Reg>) -> Reg {
        if let Some(&r) = memo.get(&id) {
            return r;
        }
        if let Some(head) = self.lazy_head(id) {
            return self.eval_lazy(id, head, ctx, memo);
        }
        let node = self.ir.expr(id).clone();
        let r = match node.ty {
            VType::Bool => self.eval_pred(&node.kind, ctx, memo),
            VType::D(d) => self.eval_value(d, &node.kind, ctx, memo),
        };
        self.memoize(id, r, memo);
        r
    }

    fn eval_pred(
        &mut self,
        kind: &ExprKind<ExprId>,
        ctx: &Ctx,
        memo: &mut FxHashMap<ExprId, Reg>,
    ) -> Reg {
        let p = self.reg(RegClass::Pred);
        match kind {
            ExprKind::Const(v) => {
                let t = self.reg(RegClass::B32);
                self.op(Op::Mov {
                    ty: Ty::U32,
                    dst: t,
                    src: Operand::Imm(*v as i64 & 1),
                });
                self.op(Op::Setp {
                    cmp: Cmp::Ne,
                    ty: Ty::U32,
                    dst: p,
                    a: t.into(),
                    b: Operand::Imm(0),
                });
            }
            ExprKind::Cmp(c, a, b) => {
                if let Some((x, signed, negative)) = self.sign_test(*c, *a, *b) {
                    let rx = self.eval(x, ctx, memo);
                    self.op(Op::Setp {
                        cmp: if negative { Cmp::Lt } else { Cmp::Ge },
                        ty: arith_ty(signed),
                        dst: p,
                        a: rx.into(),
                        b: Operand::Imm(0),
                    });
                } else {
                    let (a, b, d) = self.narrowed_comparison(*a, *b);
                    let ra = self.eval(a, ctx, memo);
                    let rb = self.eval(b, ctx, memo);
                    self.compare_into(p, *c, d, ra, rb);
                }
            }
            ExprKind::Unary(U::Not, a) => {
                let ra = self.eval(*a, ctx, memo);
                self.op(Op::PredNot { dst: p, a: ra });
            }
            ExprKind::Unary(U::IsNan, a) => {
                let d = self.ir.expr(*a).ty.dtype().unwrap_or(DType::F32);
                let ra = self.eval(*a, ctx, memo);
                self.op(Op::Setp {
                    cmp: Cmp::Nan,
                    ty: mem_ty(d),
                    dst: p,
                    a: ra.into(),
                    b: ra.into(),
                });
            }
            ExprKind::Binary(op, a, b) => {
                let ra = self.eval(*a, ctx, memo);
                let rb = self.eval(*b, ctx, memo);
                let op = match op {
                    B::Or => BinOp::Or,
                    B::Xor => BinOp::Xor,
                    _ => BinOp::And,
                };
                self.op(Op::PredBin {
                    op,
                    dst: p,
                    a: ra,
                    b: rb,
                });
            }
            // The typed builder produces no other predicate nodes; a foreign tree that did
            // would have failed verification. Emit `false` to stay total.
            _ => {
                self.op(Op::Setp {
                    cmp: Cmp::Ne,
                    ty: Ty::U32,
                    dst: p,
                    a: Operand::Special(Special::Laneid),
                    b: Operand::Special(Special::Laneid),
                });
            }
        }
        p
    }

    fn eval_value(
        &mut self,
        d: DType,
        kind: &ExprKind<ExprId>,
        ctx: &Ctx,
        memo: &mut FxHashMap<ExprId, Reg>,
    ) -> Reg {
        match kind {
            ExprKind::Const(bits) => self.constant(d, *bits),
            ExprKind::Param(p) => self.param_reg(*p),
            ExprKind::Arg(i) => ctx
                .args
                .get(*i as usize)
                .copied()
                .unwrap_or_else(|| self.constant(d, 0)),
            ExprKind::Item { data, item } => self
                .own_regs(*data)
                .get(*item as usize)
                .copied()
                .unwrap_or_else(|| self.constant(d, 0)),
            ExprKind::Index(k) => match k {
                IndexKind::ThreadRank => self.tid(),
                IndexKind::Lane => self.special(Special::Laneid),
                IndexKind::WarpRank => {
                    let tid = self.tid();
                    let r = self.reg(RegClass::B32);
                    self.op(Op::Bin {
                        op: BinOp::Shr,
                        ty: Ty::U32,
                        dst: r,
                        a: tid.into(),
                        b: Operand::Imm(5),
                    });
                    r
                }
                IndexKind::BlockIndex => self.special(Special::Ctaid(Dim::X)),
                IndexKind::GridBlocks => self.special(Special::Nctaid(Dim::X)),
                IndexKind::ThreadIdx(a) => match self.ir.block.dims[a.index()] {
                    // Along an axis the block does not extend in, every thread is at 0.
                    0 | 1 => self.constant(DType::U32, 0),
                    _ => self.special(Special::Tid(dim(*a))),
                },
                IndexKind::BlockIdx(a) => self.special(Special::Ctaid(dim(*a))),
                IndexKind::BlockDim(a) => {
                    let n = self.ir.block.dims[a.index()];
                    self.constant(DType::U32, n as u64)
                }
                IndexKind::GridDim(a) => self.special(Special::Nctaid(dim(*a))),
                IndexKind::ClusterDim(a) => self.special(Special::ClusterNctaid(dim(*a))),
                IndexKind::BlockThreads => {
                    let n = self.plan.block_threads;
                    self.constant(DType::U32, n as u64)
                }
                IndexKind::Item => {
                    let i = ctx.item.unwrap_or(0);
                    self.constant(DType::U32, i as u64)
                }
            },
            ExprKind::LoopVar { op, field } => self.loop_var(*op, *field),
            ExprKind::Cast(a) => {
                let from = self.ir.expr(*a).ty;
                let ra = self.eval(*a, ctx, memo);
                match from {
                    VType::D(s) => self.cast(s, d, ra),
                    VType::Bool => {
                        let one_bits = match d {
                            DType::F32 => 1f32.to_bits() as u64,
                            DType::F64 => 1f64.to_bits(),
                            _ => 1,
                        };
                        let one = self.constant(d, one_bits);
                        let zero = self.constant(d, 0);
                        let r = self.reg(class(d));
                        self.op(Op::Selp {
                            ty: bits_or_float(d),
                            dst: r,
                            a: one.into(),
                            b: zero.into(),
                            p: ra,
                        });
                        r
                    }
                }
            }
            ExprKind::Select(c, a, b) => {
                let p = self.eval(*c, ctx, memo);
                let ra = self.eval(*a, ctx, memo);
                let rb = self.eval(*b, ctx, memo);
                let r = self.reg(class(d));
                self.op(Op::Selp {
                    ty: bits_or_float(d),
                    dst: r,
                    a: ra.into(),
                    b: rb.into(),
                    p,
                });
                r
            }
            ExprKind::Fma(a, b, c) => {
                let ra = self.eval(*a, ctx, memo);
                let rb = self.eval(*b, ctx, memo);
                let rc = self.eval(*c, ctx, memo);
                self.fma_value(d, ra, rb, rc)
            }
            ExprKind::Binary(op, a, b) => {
                let ra = self.eval(*a, ctx, memo);
                match self.power_of_two_divisor(d, *op, *b) {
                    Some(n) => self.divide_by_power_of_two(d, *op, ra, n),
                    None => {
                        let rb = self.eval(*b, ctx, memo);
                        self.binary(d, *op, ra, rb)
                    }
                }
            }
            ExprKind::Unary(op, a) => {
                let src = self.ir.expr(*a).ty.dtype().unwrap_or(d);
                let ra = self.eval(*a, ctx, memo);
                self.unary(d, src, *op, ra)
            }
            ExprKind::Cmp(..) => self.constant(d, 0),
            ExprKind::SharedRead(array, index) => {
                let i = self.eval(*index, ctx, memo);
                let addr = self.array_addr(*array, i);
                let inside =
                    self.array_inside(ArrayRef::Shared(*array), *index, i, false, ctx.guard);
                let guard = self.both(ctx.guard, inside);
                self.load(Space::Shared, d, addr, guard)
            }
            ExprKind::LocalRead(array, index) => {
                let i = self.eval(*index, ctx, memo);
                let addr = self.local_addr(*array, i);
                let inside =
                    self.array_inside(ArrayRef::Local(*array), *index, i, false, ctx.guard);
                let guard = self.both(ctx.guard, inside);
                self.load(Space::Local, d, addr, guard)
            }
            ExprKind::ConstRead(array, index) => {
                let i = self.eval(*index, ctx, memo);
                let addr = self.const_addr(*array, i);
                let inside =
                    self.array_inside(ArrayRef::Const(*array), *index, i, false, ctx.guard);
                let guard = self.both(ctx.guard, inside);
                self.load(Space::Const, d, addr, guard)
            }
            ExprKind::GlobalRead(param, index) => {
                let wide = self.ir.expr(*index).ty == VType::D(DType::U64);
                let i = self.eval(*index, ctx, memo);
                let addr = self.element_addr(*param, i, wide);
                let inside = self.in_bounds(*param, i, wide);
                self.check_index(
                    |buffer| CheckKind::Read { buffer },
                    *param,
                    i,
                    inside,
                    ctx.guard,
                );
                let guard = self.both(ctx.guard, inside);
                let space = match self.ir.params.get(param.index()).map(|p| p.role) {
                    Some(Role::Input) => Space::GlobalNc,
                    _ => Space::Global,
                };
                self.load(space, d, addr, guard)
            }
        }
    }

    /// A load of a `d` at `[addr]`; with a guard, only where it holds (0 elsewhere).
    pub(crate) fn load(&mut self, space: Space, d: DType, addr: Reg, guard: Option<Reg>) -> Reg {
        let r = match guard {
            Some(_) => self.constant(d, 0),
            None => self.reg(class(d)),
        };
        let ld = Op::Ld {
            space,
            ty: mem_ty(d),
            dst: smallvec::smallvec![r],
            addr: Address {
                base: AddrBase::Reg(addr),
                offset: 0,
            },
        };
        self.maybe_guarded(guard, ld);
        r
    }

    /// `a op b` for a reduction operator.
    pub(crate) fn combine_op(&mut self, op: ReduceOp, d: DType, a: Reg, b: Reg) -> Reg {
        let bin = match op {
            ReduceOp::Sum => B::Add,
            ReduceOp::Product => B::Mul,
            ReduceOp::Min => B::Min,
            ReduceOp::Max => B::Max,
            ReduceOp::BitAnd => B::And,
            ReduceOp::BitOr => B::Or,
            ReduceOp::BitXor => B::Xor,
            ReduceOp::First => return a,
            ReduceOp::Custom { expr, .. } => {
                let ctx = Ctx {
                    args: vec![a, b],
                    ..Ctx::default()
                };
                let mut memo = FxHashMap::default();
                return self.eval(expr, &ctx, &mut memo);
            }
        };
        self.binary(d, bin, a, b)
    }

    pub(crate) fn binary(&mut self, d: DType, op: B, a: Reg, b: Reg) -> Reg {
        if op == B::MulHi && is_narrow(d) {
            return self.narrow_mul_hi(d, a, b);
        }
        let ty = arith_ty(d);
        let fast = d == DType::F32 && self.fast_arith();
        let r = self.reg(class(d));
        let (pop, ty, wraps) = match op {
            B::Add if fast => (BinOp::AddFtz, ty, false),
            B::Sub if fast => (BinOp::SubFtz, ty, false),
            B::Mul if fast => (BinOp::MulFtz, ty, false),
            B::Div if fast => (BinOp::DivApprox, ty, false),
            B::Add => (BinOp::Add, ty, true),
            B::Sub => (BinOp::Sub, ty, true),
            B::Mul => (BinOp::Mul, ty, true),
            B::Div => (BinOp::Div, ty, true),
            B::Rem => (BinOp::Rem, ty, false),
            B::Min => (BinOp::Min, ty, false),
            B::Max => (BinOp::Max, ty, false),
            B::And => (BinOp::And, bits_ty(d), false),
            B::Or => (BinOp::Or, bits_ty(d), false),
            B::Xor => (BinOp::Xor, bits_ty(d), false),
            B::Shl => (BinOp::Shl, bits_ty(d), true),
            B::Shr => (BinOp::Shr, ty, false),
            B::MulHi => (BinOp::MulHi, ty, false),
            B::Atan2 | B::Pow | B::Hypot | B::Powi => {
                return self.library(Func::Binary(op), d, &[a, b]);
            }
        };
        self.op(Op::Bin {
            op: pop,
            ty,
            dst: r,
            a: a.into(),
            b: b.into(),
        });
        if wraps && d.is_int() {
            self.normalize(d, r);
        }
        r
    }

    /// The divisor of an unsigned `/` or `%` by a constant power of two (`x / 32`, a logical
    /// warp's `thread_rank() % 16`), which `divide_by_power_of_two` turns into a shift or a
    /// mask. ptxas keeps its general division sequence (a dozen instructions, through a float
    /// reciprocal) for a divisor it is handed in a register, even a constant one.
    fn power_of_two_divisor(&self, d: DType, op: B, b: ExprId) -> Option<i64> {
        if !matches!(op, B::Div | B::Rem) || !matches!(d, DType::U32 | DType::U64) {
            return None;
        }
        match self.ir.expr(b).kind {
            ExprKind::Const(c) if c.is_power_of_two() && c <= i64::MAX as u64 => Some(c as i64),
            _ => None,
        }
    }

    /// `a / n` or `a % n` for a power of two `n`, as the shift or mask the emitter makes of a
    /// division by an immediate.
    fn divide_by_power_of_two(&mut self, d: DType, op: B, a: Reg, n: i64) -> Reg {
        let r = self.reg(class(d));
        self.op(Op::Bin {
            op: if op == B::Div { BinOp::Div } else { BinOp::Rem },
            ty: arith_ty(d),
            dst: r,
            a: a.into(),
            b: Operand::Imm(n),
        });
        r
    }

    /// The high half of the product of two 8- or 16-bit integers: the whole product fits
    /// their 32-bit registers.
    fn narrow_mul_hi(&mut self, d: DType, a: Reg, b: Reg) -> Reg {
        let ty = arith_ty(d);
        let r = self.reg(RegClass::B32);
        self.op(Op::Bin {
            op: BinOp::Mul,
            ty,
            dst: r,
            a: a.into(),
            b: b.into(),
        });
        self.op(Op::Bin {
            op: BinOp::Shr,
            ty,
            dst: r,
            a: r.into(),
            b: Operand::Imm(i64::from(d.bytes() * 8)),
        });
        self.normalize(d, r);
        r
    }

    fn unary(&mut self, d: DType, src: DType, op: U, a: Reg) -> Reg {
        let ty = arith_ty(d);
        let fast = d == DType::F32 && self.fast_arith();
        let r = self.reg(class(d));
        let width = src.bytes() * 8;
        match op {
            U::Neg => {
                let nty = match ty {
                    Ty::U32 => Ty::S32,
                    Ty::U64 => Ty::S64,
                    t => t,
                };
                self.un(UnOp::Neg, nty, r, a);
                self.normalize(d, r);
            }
            U::Abs if d.is_float() || d.is_signed_int() => {
                self.un(UnOp::Abs, ty, r, a);
                self.normalize(d, r);
            }
            U::Abs => self.op(Op::Mov {
                ty: bits_ty(d),
                dst: r,
                src: a.into(),
            }),
            U::Not => {
                self.un(UnOp::Not, bits_ty(d), r, a);
                self.normalize(d, r);
            }
            U::Sqrt if fast => self.un(UnOp::SqrtApprox, ty, r, a),
            U::Rcp if fast => self.un(UnOp::RcpApprox, ty, r, a),
            U::Sqrt => self.un(UnOp::Sqrt, ty, r, a),
            U::Rcp => self.un(UnOp::Rcp, ty, r, a),
            U::Bitcast => self.op(Op::Mov {
                ty: bits_ty(d),
                dst: r,
                src: a.into(),
            }),
            U::Rsqrt
            | U::Exp2
            | U::Log2
            | U::Sin
            | U::Cos
            | U::Tanh
            | U::Exp
            | U::Exp10
            | U::Expm1
            | U::Ln
            | U::Log10
            | U::Log1p
            | U::Tan
            | U::Asin
            | U::Acos
            | U::Atan
            | U::Sinh
            | U::Cosh
            | U::Cbrt
            | U::Erf
            | U::Erfc => return self.library(Func::Unary(op), d, &[a]),
            U::Floor | U::Ceil | U::Trunc | U::Round => {
                let round = match op {
                    U::Floor => Round::Rmi,
                    U::Ceil => Round::Rpi,
                    U::Trunc => Round::Rzi,
                    _ => Round::Rni,
                };
                self.op(Op::Cvt {
                    round: Some(round),
                    sat: false,
                    dty: ty,
                    sty: ty,
                    dst: r,
                    src: a,
                });
            }
            U::Popc | U::Clz => {
                let masked = self.zero_extended(src, a);
                let bty = bits_ty(src);
                let uop = if op == U::Popc { UnOp::Popc } else { UnOp::Clz };
                self.un(uop, bty, r, masked);
                if op == U::Clz && width < 32 {
                    self.op(Op::Bin {
                        op: BinOp::Sub,
                        ty: Ty::U32,
                        dst: r,
                        a: r.into(),
                        b: Operand::Imm(32 - width as i64),
                    });
                }
            }
            U::Brev => {
                self.un(UnOp::Brev, bits_ty(d), r, a);
                if width < 32 {
                    self.op(Op::Bin {
                        op: BinOp::Shr,
                        ty: Ty::U32,
                        dst: r,
                        a: r.into(),
                        b: Operand::Imm(32 - width as i64),
                    });
                    self.normalize(d, r);
                }
            }
            // Predicate results are produced by `eval_pred`.
            U::IsNan => self.op(Op::Mov {
                ty: bits_ty(d),
                dst: r,
                src: a.into(),
            }),
        }
        r
    }

    /// `a * b + c`: one rounding for floats, wrapping for integers.
    fn fma_value(&mut self, d: DType, a: Reg, b: Reg, c: Reg) -> Reg {
        let r = self.reg(class(d));
        self.op(Op::Mad {
            ty: arith_ty(d),
            dst: r,
            a: a.into(),
            b: b.into(),
            c: c.into(),
        });
        self.normalize(d, r);
        r
    }

    /// The operands and dtype a comparison of `a` and `b` is made in. Two 64-bit integers
    /// that are both widened from 32-bit integers of one dtype compare as the 32-bit values
    /// (what `a.cast::<u64>().lt(b.cast::<u64>())` asks, a common way to write a key order):
    /// one 32-bit `setp` where ptxas keeps a compare of the high halves too. Zero-extended
    /// `u32`s order as `u32`s in `u64` and `i64` alike; sign-extended `i32`s order as `i32`s
    /// in `i64` and, by their bits, as `u32`s in `u64` (the negative ones sit above the others
    /// in both).
    fn narrowed_comparison(&self, a: ExprId, b: ExprId) -> (ExprId, ExprId, DType) {
        let d = self.ir.expr(a).ty.dtype().unwrap_or(DType::U32);
        let widened = |e: ExprId| match &self.ir.expr(e).kind {
            ExprKind::Cast(x) => match self.ir.expr(*x).ty {
                VType::D(s @ (DType::U32 | DType::I32)) => Some((*x, s)),
                _ => None,
            },
            _ => None,
        };
        let (a, b, d) = match (widened(a), widened(b)) {
            (Some((x, s)), Some((y, t))) if s == t && matches!(d, DType::U64 | DType::I64) => {
                let narrow = match (s, d) {
                    (DType::I32, DType::I64) => DType::I32,
                    _ => DType::U32,
                };
                (x, y, narrow)
            }
            _ => (a, b, d),
        };
        self.sign_flipped_comparison(a, b, d)
    }

    /// Two 32-bit integers whose sign bits are both flipped (`x ^ 0x8000_0000`, how an `i32`
    /// is ordered by its bits as a `u32`) compare as the unflipped values in the other
    /// signedness, in one `setp` without the two `xor`s: flipping the sign bit maps the
    /// signed order onto the unsigned one and back, and keeps equality.
    fn sign_flipped_comparison(&self, a: ExprId, b: ExprId, d: DType) -> (ExprId, ExprId, DType) {
        let other = match d {
            DType::U32 => DType::I32,
            DType::I32 => DType::U32,
            _ => return (a, b, d),
        };
        let sign = |e: ExprId| matches!(self.ir.expr(e).kind, ExprKind::Const(0x8000_0000));
        let unflipped = |e: ExprId| match self.ir.expr(e).kind {
            ExprKind::Binary(B::Xor, x, k) if sign(k) => Some(x),
            ExprKind::Binary(B::Xor, k, x) if sign(k) => Some(x),
            _ => None,
        };
        match (unflipped(a), unflipped(b)) {
            (Some(x), Some(y)) => (x, y, other),
            _ => (a, b, d),
        }
    }

    /// A test of an unsigned integer's top bit written as a shift and a comparison with 0 or 1
    /// (`(x >> 31).eq(1)`, how a float's sign is read from its bits): `x`, the signed dtype of
    /// its width and whether the test holds for the values negative in it. One `setp` of `x`
    /// against zero, where ptxas keeps the shift and compares its result. Tests that hold
    /// always or never (`(x >> 31).le(1)`) are left as written.
    fn sign_test(&self, c: CmpOp, a: ExprId, b: ExprId) -> Option<(ExprId, DType, bool)> {
        let top_bit = |e: ExprId| match self.ir.expr(e).kind {
            ExprKind::Binary(B::Shr, x, k) => {
                let signed = match self.ir.expr(x).ty.dtype()? {
                    DType::U32 => DType::I32,
                    DType::U64 => DType::I64,
                    _ => return None,
                };
                let last = signed.bytes() as u64 * 8 - 1;
                matches!(self.ir.expr(k).kind, ExprKind::Const(s) if s == last)
                    .then_some((x, signed))
            }
            _ => None,
        };
        let bit = |e: ExprId| match self.ir.expr(e).kind {
            ExprKind::Const(v @ (0 | 1)) => Some(v),
            _ => None,
        };
        // The comparison as `(x >> last) c v`, the constant moved to the right.
        let (x, signed, c, v) = match (top_bit(a), bit(b), bit(a), top_bit(b)) {
            (Some((x, s)), Some(v), ..) => (x, s, c, v),
            (.., Some(v), Some((x, s))) => {
                let mirrored = match c {
                    CmpOp::Lt => CmpOp::Gt,
                    CmpOp::Le => CmpOp::Ge,
                    CmpOp::Gt => CmpOp::Lt,
                    CmpOp::Ge => CmpOp::Le,
                    same => same,
                };
                (x, s, mirrored, v)
            }
            _ => return None,
        };
        // `x >> last` is 1 for the negative values and 0 for the others.
        let negative = match (c, v) {
            (CmpOp::Eq, 1) | (CmpOp::Ne, 0) | (CmpOp::Gt, 0) | (CmpOp::Ge, 1) => true,
            (CmpOp::Eq, 0) | (CmpOp::Ne, 1) | (CmpOp::Lt, 1) | (CmpOp::Le, 0) => false,
            _ => return None,
        };
        Some((x, signed, negative))
    }

    /// `p = a c b` over values of `d` (ordered for floats, but `!=`).
    fn compare_into(&mut self, p: Reg, c: CmpOp, d: DType, a: Reg, b: Reg) {
        let cmp = match c {
            CmpOp::Eq => Cmp::Eq,
            // Rust's `!=` holds when either side is NaN.
            CmpOp::Ne if d.is_float() => Cmp::Neu,
            CmpOp::Ne => Cmp::Ne,
            CmpOp::Lt => Cmp::Lt,
            CmpOp::Le => Cmp::Le,
            CmpOp::Gt => Cmp::Gt,
            CmpOp::Ge => Cmp::Ge,
        };
        self.op(Op::Setp {
            cmp,
            ty: arith_ty(d),
            dst: p,
            a: a.into(),
            b: b.into(),
        });
    }

    fn un(&mut self, op: UnOp, ty: Ty, dst: Reg, a: Reg) {
        self.op(Op::Un {
            op,
            ty,
            dst,
            a: a.into(),
        });
    }

    /// The value's bits zero-extended from its width (narrow signed values are kept
    /// sign-extended in registers).
    fn zero_extended(&mut self, d: DType, a: Reg) -> Reg {
        if !is_narrow(d) || !d.is_signed_int() {
            return a;
        }
        let r = self.reg(RegClass::B32);
        self.op(Op::Bin {
            op: BinOp::And,
            ty: Ty::B32,
            dst: r,
            a: a.into(),
            b: Operand::Imm(((1u64 << (d.bytes() * 8)) - 1) as i64),
        });
        r
    }

    /// Converts between dtypes with Rust's `as` semantics.
    pub fn cast(&mut self, from: DType, to: DType, a: Reg) -> Reg {
        if from == to {
            return a;
        }
        let r = self.reg(class(to));
        let (fty, tty) = (arith_ty(from), arith_ty(to));
        match (from.is_float(), to.is_float()) {
            (true, true) => {
                let round = (to == DType::F32).then_some(Round::Rn);
                self.cvt(round, mem_ty(to), mem_ty(from), r, a);
            }
            (false, true) => self.cvt(Some(Round::Rn), mem_ty(to), fty, r, a),
            (true, false) => {
                // Float → int saturates, as Rust's `as` does. NaN must give 0: the hardware
                // gives the most negative value for some widths, so select it explicitly.
                self.cvt(Some(Round::Rzi), mem_ty(to), mem_ty(from), r, a);
                self.normalize(to, r);
                let nan = self.setp(Cmp::Nan, mem_ty(from), a.into(), a.into());
                let ty = bits_or_float(to);
                self.op(Op::Selp {
                    ty,
                    dst: r,
                    a: Operand::Imm(0),
                    b: r.into(),
                    p: nan,
                });
            }
            (false, false) => {
                let (fw, tw) = (from.bytes() == 8, to.bytes() == 8);
                match (fw, tw) {
                    (true, true) => self.op(Op::Mov {
                        ty: Ty::B64,
                        dst: r,
                        src: a.into(),
                    }),
                    (true, false) => {
                        self.cvt(None, Ty::U32, Ty::U64, r, a);
                        self.normalize(to, r);
                    }
                    (false, true) => {
                        let wide = if from.is_signed_int() {
                            Ty::S64
                        } else {
                            Ty::U64
                        };
                        self.cvt(None, wide, fty, r, a);
                    }
                    (false, false) => {
                        self.op(Op::Mov {
                            ty: Ty::B32,
                            dst: r,
                            src: a.into(),
                        });
                        self.normalize(to, r);
                    }
                }
                let _ = tty;
            }
        }
        r
    }
}

/// The PTX dimension of an axis.
fn dim(a: Axis) -> Dim {
    match a {
        Axis::X => Dim::X,
        Axis::Y => Dim::Y,
        Axis::Z => Dim::Z,
    }
}

//! Lowering of a planned kernel to a PTX [`Module`].
//!
//! Every payload is a fixed set of virtual registers; every op becomes straight-line code with
//! its item loop fully unrolled; control flow becomes labels and branches (`bra.uni` where the
//! verifier proved the condition warp-uniform). Each op's code is preceded by a comment naming
//! the op and the user's source line, which the simulator quotes in its reports.

use super::builder::{ArrayRef, Emitter, Lowered};
use super::exchange::ExchangeSite;
use super::expr::Ctx;
use crate::ir::ops::{OpKind, Transfer};
use crate::ir::{CheckKind, CheckSite, DType, ExprId, Info, Ir, OpId, RegionId};
use crate::planner::{Plan, PlanError};
use crate::ptx::write::push_decimal;
use crate::ptx::*;
use rustc_hash::FxHashMap;

/// The PTX entry name for a kernel name: letters, digits and `_`, not starting with a digit.
pub fn entry_name(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert_str(0, "k_");
    }
    s
}

/// How many grid dimensions `f` tells blocks apart by: 1 when it reads the block index and the
/// grid's shape along x only, 2 or 3 when it reads them along y or z. Lowering reads special
/// registers once each, with a `mov` in the entry block ([`Emitter::special`]).
pub fn grid_dims(f: &Function) -> u32 {
    f.body
        .iter()
        .filter_map(|i| match i.op {
            Op::Mov {
                src: Operand::Special(Special::Ctaid(d) | Special::Nctaid(d)),
                ..
            } => Some(match d {
                Dim::X => 1,
                Dim::Y => 2,
                Dim::Z => 3,
            }),
            _ => None,
        })
        .max()
        .unwrap_or(1)
}

/// Lowers a verified, planned kernel for one arch. `info` and `plan` are the verifier's and
/// the planner's results for `ir`, which nothing else can make; an error means one of them
/// lacks what it guarantees ([`PlanError::Internal`]), a bug of coopgraph's.
pub fn emit(ir: &Ir, info: &Info, plan: &Plan, arch: Arch) -> Result<Module, PlanError> {
    emit_with_checks(ir, info, plan, arch).map(|(module, _)| module)
}

/// As [`emit`], with the sites of the kernel's debug checks in number order (none without
/// [`Checks::Debug`](crate::ir::Checks::Debug)): what a failure the runtime reads from the
/// record names.
pub fn emit_with_checks(
    ir: &Ir,
    info: &Info,
    plan: &Plan,
    arch: Arch,
) -> Result<(Module, Vec<CheckSite>), PlanError> {
    super::cluster::check_arch(ir, arch)?;
    let mut e = Emitter::new(ir, info, plan, arch)?;
    let name = entry_name(&ir.name);
    let params = e.prologue(&name);
    e.region(ir.body)?;
    e.cluster_epilogue();
    e.op(Op::Ret);
    Ok(e.finish(name, params))
}

impl Emitter<'_> {
    fn region(&mut self, r: RegionId) -> Lowered {
        let ops = self.ir.region(r);
        for (i, &op) in ops.iter().enumerate() {
            self.successor = ops.get(i + 1).copied();
            self.lower(op)?;
        }
        Ok(())
    }

    /// Lowers a nested region in place (a scan's prefix callback).
    fn lower_region(&mut self, r: RegionId) -> Lowered {
        self.without_overrides(|me| me.region(r))
    }

    /// Lowers one op. The ops holding regions are lowered from here and everything else in
    /// [`Emitter::lower_simple`], so the recursion through nested regions keeps a small frame
    /// per level.
    fn lower(&mut self, op: OpId) -> Lowered {
        let outer = self.current_op.replace(op);
        let lowered = self.lower_op(op);
        self.current_op = outer;
        // Back in the enclosing op's code (a loop's latch, a branch's join): its line again.
        if let Some(o) = outer {
            self.source_line(self.ir.op(o).loc);
        }
        lowered
    }

    fn lower_op(&mut self, op: OpId) -> Lowered {
        let ir = self.ir;
        self.lower_start(op)?;
        match &ir.op(op).kind {
            OpKind::If {
                cond,
                then,
                otherwise,
            } => self.lower_if(*cond, *then, *otherwise),
            OpKind::For {
                start,
                end,
                step,
                body,
            } => self.lower_for(op, [*start, *end], *step, *body),
            OpKind::While { cond, body } => self.lower_while(op, *cond, *body),
            OpKind::Tiles { n, body } => self.tiles(op, *n, *body),
            OpKind::Scan(sc) => self.scan(op, sc, |me, body| me.lower_region(body)),
            _ => self.lower_simple(op),
        }?;
        if self.over_budget() {
            return Err(PlanError::ConditionalReads {
                op,
                loc: ir.op(op).loc,
                limit: self.guarded_limit,
            });
        }
        self.clear_overrides();
        Ok(())
    }

    /// The op's comment, and the conversions the plan puts before it (stores convert inside
    /// `transfer`, where the valid count is known).
    #[inline(never)]
    fn lower_start(&mut self, op: OpId) -> Lowered {
        let ir = self.ir;
        let data = ir.op(op);
        // `{op} {name} at {loc}`, put together without `format!`: one a lowered op.
        let (name, loc) = (data.kind.name(), data.loc);
        let mut text = String::with_capacity(name.len() + loc.file.len() + 40);
        text.push_str("op");
        push_decimal(&mut text, op.index() as u64);
        text.push(' ');
        text.push_str(name);
        text.push_str(" at ");
        text.push_str(loc.file);
        for n in [loc.line, loc.column] {
            text.push(':');
            push_decimal(&mut text, u64::from(n));
        }
        self.op(Op::Comment(text));
        self.source_line(data.loc);
        if !matches!(data.kind, OpKind::Store(_)) {
            let convs: Vec<_> = (self.exchanges_of(op)?.iter())
                .filter(|e| e.data.is_some())
                .cloned()
                .collect();
            for e in convs {
                if let Some(d) = e.data {
                    let dtype = ir.datas[d.index()].dtype;
                    let src = self.data_regs(d).to_vec();
                    let dst = self.fresh_like(&src);
                    let site = ExchangeSite {
                        op,
                        plan: &e,
                        dtype,
                        valid: None,
                        keep_invalid: false,
                    };
                    self.exchange(&site, &src, &dst)?;
                    self.set_override(d, dst);
                }
            }
        }
        Ok(())
    }

    #[inline(never)]
    fn lower_if(&mut self, cond: ExprId, then: RegionId, otherwise: Option<RegionId>) -> Lowered {
        let mut memo = self.take_memo();
        let ctx = Ctx::default();
        let uni = self.uniform(cond);
        let p = self.eval(cond, &ctx, &mut memo);
        self.give_memo(memo);
        let else_label = self.label();
        let end_label = self.label();
        self.guarded(
            p,
            true,
            Op::Bra {
                target: else_label.clone(),
                uni,
            },
        );
        self.region(then)?;
        if let Some(o) = otherwise {
            self.op(Op::Bra {
                target: end_label.clone(),
                uni: true,
            });
            self.op(Op::Label(else_label));
            self.region(o)?;
            self.op(Op::Label(end_label));
        } else {
            self.op(Op::Label(else_label));
        }
        Ok(())
    }

    /// Whether a loop's control is uniform across each warp.
    fn uniform_loop(&self, op: OpId) -> bool {
        self.info
            .loops
            .get(op.index())
            .is_some_and(|u| u.covers(32))
    }

    /// Lowers a loop body with its latch and exit as the targets of `continue_` and `break_`.
    fn loop_body(&mut self, body: RegionId, latch: &str, exit: &str) -> Lowered {
        self.jump_targets
            .push((latch.to_string(), exit.to_string()));
        let r = self.region(body);
        self.jump_targets.pop();
        r
    }

    /// `for i in (start..end).step_by(step)`: the bounds and the step evaluated once; a step
    /// of 0 runs no iteration; the counter steps only while `i + step < end`, so it never
    /// wraps.
    #[inline(never)]
    fn lower_for(
        &mut self,
        op: OpId,
        [start, end]: [ExprId; 2],
        step: Option<ExprId>,
        body: RegionId,
    ) -> Lowered {
        let mut memo = FxHashMap::default();
        let ctx = Ctx::default();
        let uni = self.uniform_loop(op);
        let s = self.eval(start, &ctx, &mut memo);
        let e = self.eval(end, &ctx, &mut memo);
        let st = step.map(|st| self.eval(st, &ctx, &mut memo));
        let i = self.reg(RegClass::B32);
        self.op(Op::Mov {
            ty: Ty::U32,
            dst: i,
            src: s.into(),
        });
        self.bind_loop(op, [i, i, i]);
        let head = self.label();
        let latch = self.label();
        let exit = self.label();
        if let Some(st) = st {
            let zero = self.setp(Cmp::Eq, Ty::U32, st.into(), Operand::Imm(0));
            self.guarded(
                zero,
                false,
                Op::Bra {
                    target: exit.clone(),
                    uni,
                },
            );
        }
        self.op(Op::Label(head.clone()));
        let p = self.setp(Cmp::Ge, Ty::U32, i.into(), e.into());
        self.guarded(
            p,
            false,
            Op::Bra {
                target: exit.clone(),
                uni,
            },
        );
        self.loop_body(body, &latch, &exit)?;
        self.op(Op::Label(latch));
        let by = match st {
            Some(st) => {
                // Inside the body i < end, so end - i is the room left.
                let room = self.u32op(BinOp::Sub, e.into(), i.into());
                let last = self.setp(Cmp::Le, Ty::U32, room.into(), st.into());
                self.guarded(
                    last,
                    false,
                    Op::Bra {
                        target: exit.clone(),
                        uni,
                    },
                );
                st.into()
            }
            None => Operand::Imm(1),
        };
        self.op(Op::Bin {
            op: BinOp::Add,
            ty: Ty::U32,
            dst: i,
            a: i.into(),
            b: by,
        });
        self.op(Op::Bra { target: head, uni });
        self.op(Op::Label(exit));
        Ok(())
    }

    /// `while cond { body }`: the condition evaluated afresh before every iteration.
    #[inline(never)]
    fn lower_while(&mut self, op: OpId, cond: ExprId, body: RegionId) -> Lowered {
        let uni = self.uniform_loop(op);
        let head = self.label();
        let exit = self.label();
        self.op(Op::Label(head.clone()));
        let mut memo = FxHashMap::default();
        let p = self.eval(cond, &Ctx::default(), &mut memo);
        self.guarded(
            p,
            true,
            Op::Bra {
                target: exit.clone(),
                uni,
            },
        );
        self.loop_body(body, &head, &exit)?;
        self.op(Op::Bra { target: head, uni });
        self.op(Op::Label(exit));
        Ok(())
    }

    /// `break_` or `continue_`: a branch to the innermost loop's exit or latch.
    fn jump(&mut self, op: OpId, to_exit: bool) -> Lowered {
        let (latch, exit) = self
            .jump_targets
            .last()
            .cloned()
            .ok_or_else(|| self.missing(op, "loop around a jump"))?;
        let target = if to_exit { exit } else { latch };
        self.op(Op::Bra { target, uni: false });
        Ok(())
    }

    /// Lowers a load or store: its global moves and the exchanges the plan gives it (a
    /// load's own after its moves; a store's conversions of its payload, then its own,
    /// before them). A load with its own exchange issues the global moves of the next op
    /// first, where that is a load [`Emitter::prefetchable`] after it.
    fn transfer(&mut self, op: OpId, t: &Transfer, is_load: bool) -> Lowered {
        let next = self.successor.take();
        let exchanges = self.exchanges_of(op)?;
        let dtype = self.ir.params[t.param.index()].dtype;
        let own = exchanges.iter().find(|e| e.data.is_none()).cloned();
        let data_regs = self.data_regs(t.data).to_vec();
        let site = |plan, valid, keep_invalid| ExchangeSite {
            op,
            plan,
            dtype,
            valid,
            keep_invalid,
        };
        if is_load {
            let (staged, valid) = match self.prefetched.remove(&op) {
                Some(read) => read,
                None => self.global_reads(op, t, !exchanges.is_empty(), own.is_some())?,
            };
            if let Some(e) = own {
                // The next load's global reads go before this load's exchange, so the two
                // loads' memory latencies overlap (the exchange's barrier would otherwise
                // hold the next reads back).
                if let Some(n) = next.filter(|&n| self.prefetchable(n)) {
                    let OpKind::Load(nt) = &self.ir.op(n).kind else {
                        unreachable!("prefetchable ops are loads")
                    };
                    self.source_line(self.ir.op(n).loc);
                    let read = self.global_reads(n, nt, true, true)?;
                    self.source_line(self.ir.op(op).loc);
                    self.prefetched.insert(n, read);
                }
                // With a default for invalid slots every slot is written, so the exchange needs
                // no guards; without one, invalid slots stay unwritten on both sides.
                let guard = if t.oob_default.is_some() { None } else { valid };
                self.exchange(&site(&e, guard, true), &staged, &data_regs)?;
            }
        } else {
            let mut g = self.global_side(op, t, is_load, !exchanges.is_empty())?;
            let valid = g.exchange_bound;
            let mut regs = data_regs;
            for e in exchanges.iter().filter(|e| e.data == Some(t.data)) {
                let out = self.fresh_like(&regs);
                self.exchange(&site(e, valid, false), &regs, &out)?;
                regs = out;
            }
            if let Some(e) = own {
                let out = self.fresh_like(&regs);
                self.exchange(&site(&e, valid, false), &regs, &out)?;
                regs = out;
            }
            self.global_moves(&mut g, &regs, None);
        }
        Ok(())
    }

    /// A load's global reads (its plan gives it exchanges where `exchanged`): into fresh
    /// registers where it is `staged` (its own exchange moves them into the payload's), else
    /// into the payload's own; with the bound its exchange takes.
    fn global_reads(
        &mut self,
        op: OpId,
        t: &Transfer,
        exchanged: bool,
        staged: bool,
    ) -> Lowered<(Vec<Reg>, Option<Reg>)> {
        let mut g = self.global_side(op, t, true, exchanged)?;
        let data_regs = self.data_regs(t.data).to_vec();
        let staged = if staged {
            self.fresh_like(&data_regs)
        } else {
            data_regs
        };
        self.global_moves(&mut g, &staged, t.oob_default);
        Ok((staged, g.exchange_bound))
    }

    /// Whether `next`, the op right after an exchanged load in its region, is a load that may
    /// issue its global reads before that load's exchange: it exchanges its own tile and
    /// converts nothing before it, and its offset and valid count read no payload or array
    /// (the first load's payload is not yet in place, and its exchange writes shared memory).
    fn prefetchable(&self, next: OpId) -> bool {
        let OpKind::Load(nt) = &self.ir.op(next).kind else {
            return false;
        };
        let Ok(exchanges) = self.exchanges_of(next) else {
            return false;
        };
        let own_only = !exchanges.is_empty() && exchanges.iter().all(|e| e.data.is_none());
        let exprs = nt.offset.into_iter().chain(nt.valid.map(|v| v.count));
        own_only && exprs.into_iter().all(|e| self.reads_nothing(e))
    }

    /// Whether expression `e` reads no payload and no memory.
    fn reads_nothing(&self, e: ExprId) -> bool {
        let reads = |of: &[bool]| of.get(e.index()).copied().unwrap_or(true);
        !reads(&self.reads_items) && !reads(&self.reads_memory)
    }

    /// Lowers an op that holds no region.
    #[inline(never)]
    fn lower_simple(&mut self, op: OpId) -> Lowered {
        let ir = self.ir;
        let data = ir.op(op);
        let mut memo = self.take_memo();
        let ctx = Ctx::default();
        match &data.kind {
            OpKind::Load(t) => self.transfer(op, t, true)?,
            OpKind::Store(t) => self.transfer(op, t, false)?,
            OpKind::Map { dst, srcs, expr } => {
                let items = ir.datas[dst.index()].items;
                let dtype = ir.datas[dst.index()].dtype;
                for i in 0..items {
                    let args = srcs
                        .iter()
                        .map(|s| self.data_regs(*s).get(i as usize).copied())
                        .collect::<Option<Vec<_>>>()
                        .ok_or_else(|| {
                            self.missing(op, "registers of the sources, item for item")
                        })?;
                    let ctx = Ctx {
                        args,
                        item: Some(i),
                        guard: None,
                    };
                    // Each slot is its own evaluation: values from other slots never leak in.
                    memo.clear();
                    let v = self.eval(*expr, &ctx, &mut memo);
                    self.mov_into(dtype, *dst, i, v);
                }
            }
            OpKind::SetItem { dst, item, expr } => {
                let dtype = ir.datas[dst.index()].dtype;
                let v = self.eval(*expr, &ctx, &mut memo);
                self.mov_into(dtype, *dst, *item, v);
            }
            OpKind::Assign { dst, src } => {
                let dtype = ir.datas[dst.index()].dtype;
                let srcs = self.data_regs(*src).to_vec();
                for (i, s) in srcs.into_iter().enumerate() {
                    self.mov_into(dtype, *dst, i as u32, s);
                }
            }
            OpKind::SyncBlock => self.op(Op::BarSync { id: 0, count: None }),
            OpKind::Nanosleep { ns } => self.op(Op::Nanosleep { ns: *ns }),
            OpKind::Lanes(l) => self.lanes(op, l)?,
            OpKind::SyncGrid => self.sync_grid()?,
            OpKind::Cluster(c) => self.cluster_op(op, c)?,
            OpKind::Print { args, .. } => {
                let regs: Vec<Reg> = (args.iter())
                    .map(|a| self.eval(*a, &ctx, &mut memo))
                    .collect();
                self.print(op, &regs)?;
            }
            OpKind::Break => self.jump(op, true)?,
            OpKind::Continue => self.jump(op, false)?,
            OpKind::ReturnIf { cond } => {
                let p = self.eval(*cond, &ctx, &mut memo);
                self.guarded(p, false, Op::Ret);
            }
            OpKind::Assert { cond, message } => {
                // Evaluated only where it is checked.
                if self.checking() {
                    let holds = self.eval(*cond, &ctx, &mut memo);
                    let fails = self.reg(RegClass::Pred);
                    self.op(Op::PredNot {
                        dst: fails,
                        a: holds,
                    });
                    let zero = self.constant(DType::U32, 0);
                    let message = message.clone();
                    self.record_failure(CheckKind::Assert { message }, fails, zero, zero);
                }
            }
            OpKind::Reduce(r) => self.reduce(op, r)?,
            OpKind::Scatter {
                src,
                ranks,
                flags,
                dst,
                holes,
                inside,
                defined,
                ..
            } => self.scatter(op, [*src, *ranks, *dst], *flags, *holes, *inside, *defined)?,
            OpKind::Exchange { src, dst, .. } => {
                // The planned conversion of `src` already ran; its registers stand for `src`.
                let dtype = ir.datas[dst.index()].dtype;
                let regs = self.data_regs(*src).to_vec();
                for (i, r) in regs.into_iter().enumerate() {
                    self.mov_into(dtype, *dst, i as u32, r);
                }
            }
            OpKind::LocalWrite {
                array,
                index,
                value,
            } => {
                let dtype = ir.locals[array.index()].dtype;
                let i = self.eval(*index, &ctx, &mut memo);
                let v = self.eval(self.stored(*value, dtype), &ctx, &mut memo);
                let addr = self.local_addr(*array, i);
                let inside = self.array_inside(ArrayRef::Local(*array), *index, i, true, None);
                self.store_at(Space::Local, dtype, addr, v, inside);
            }
            OpKind::SharedWrite {
                array,
                index,
                value,
            } => {
                let dtype = ir.arrays[array.index()].dtype;
                let i = self.eval(*index, &ctx, &mut memo);
                let v = self.eval(self.stored(*value, dtype), &ctx, &mut memo);
                let addr = self.array_addr(*array, i);
                let inside = self.array_inside(ArrayRef::Shared(*array), *index, i, true, None);
                self.store_at(Space::Shared, dtype, addr, v, inside);
            }
            OpKind::GlobalWrite {
                param,
                index,
                value,
            } => self.global_write(*param, *index, *value),
            OpKind::ReadRun { param, index, dst } => self.global_run(*param, *index, *dst, true),
            OpKind::WriteRun { param, index, src } => self.global_run(*param, *index, *src, false),
            OpKind::Atomic(a) => self.atomic(op, a)?,
            OpKind::Neighbor(nb) => self.neighbor(op, nb)?,
            // Lowered by `lower`, which lowers their regions.
            OpKind::If { .. }
            | OpKind::For { .. }
            | OpKind::While { .. }
            | OpKind::Tiles { .. }
            | OpKind::Scan(_) => {}
        }
        self.give_memo(memo);
        Ok(())
    }

    fn uniform(&self, e: ExprId) -> bool {
        self.info
            .uniformity
            .get(e.index())
            .is_some_and(|u| u.covers(32))
    }

    /// `for t in (ctaid.x..ceil(n / tile)).step_by(nctaid.x)` with origin and valid count.
    fn tiles(&mut self, op: OpId, n: ExprId, body: RegionId) -> Lowered {
        let tile = self.plan.block_tile.max(1);
        let uni = self.uniform_loop(op);
        let mut memo = FxHashMap::default();
        let n = self.eval(n, &Ctx::default(), &mut memo);
        let ctaid = self.special(Special::Ctaid(Dim::X));
        let nctaid = self.special(Special::Nctaid(Dim::X));
        // tiles = n / tile + (n % tile != 0), which cannot overflow.
        let ntiles = self.reg(RegClass::B32);
        self.op(Op::Bin {
            op: BinOp::Div,
            ty: Ty::U32,
            dst: ntiles,
            a: n.into(),
            b: Operand::Imm(tile as i64),
        });
        let rem = self.reg(RegClass::B32);
        self.op(Op::Bin {
            op: BinOp::Rem,
            ty: Ty::U32,
            dst: rem,
            a: n.into(),
            b: Operand::Imm(tile as i64),
        });
        let has_rem = self.setp(Cmp::Ne, Ty::U32, rem.into(), Operand::Imm(0));
        let extra = self.reg(RegClass::B32);
        self.op(Op::Selp {
            ty: Ty::U32,
            dst: extra,
            a: Operand::Imm(1),
            b: Operand::Imm(0),
            p: has_rem,
        });
        self.op(Op::Bin {
            op: BinOp::Add,
            ty: Ty::U32,
            dst: ntiles,
            a: ntiles.into(),
            b: extra.into(),
        });
        let t = self.reg(RegClass::B32);
        let origin = self.reg(RegClass::B32);
        let valid = self.reg(RegClass::B32);
        self.op(Op::Mov {
            ty: Ty::U32,
            dst: t,
            src: ctaid.into(),
        });
        self.bind_loop(op, [t, origin, valid]);
        let head = self.label();
        let exit = self.label();
        self.op(Op::Label(head.clone()));
        let done = self.setp(Cmp::Ge, Ty::U32, t.into(), ntiles.into());
        self.guarded(
            done,
            false,
            Op::Bra {
                target: exit.clone(),
                uni,
            },
        );
        self.op(Op::Bin {
            op: BinOp::Mul,
            ty: Ty::U32,
            dst: origin,
            a: t.into(),
            b: Operand::Imm(tile as i64),
        });
        self.op(Op::Bin {
            op: BinOp::Sub,
            ty: Ty::U32,
            dst: valid,
            a: n.into(),
            b: origin.into(),
        });
        self.op(Op::Bin {
            op: BinOp::Min,
            ty: Ty::U32,
            dst: valid,
            a: valid.into(),
            b: Operand::Imm(tile as i64),
        });
        let latch = self.label();
        self.loop_body(body, &latch, &exit)?;
        self.op(Op::Label(latch));
        self.op(Op::Bin {
            op: BinOp::Add,
            ty: Ty::U32,
            dst: t,
            a: t.into(),
            b: nctaid.into(),
        });
        self.op(Op::Bra { target: head, uni });
        self.op(Op::Label(exit));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::verify::verify;
    use crate::ir::{KernelBuilder, Load, Reduce, Store};

    /// A kernel as the stages leave it: its IR, the verifier's result and the plan.
    fn staged(k: KernelBuilder) -> (Ir, Info, Plan) {
        let ir = k.into_ir();
        let info = verify(&ir).expect("verifies");
        let plan = crate::planner::plan(&ir, &info).expect("plans");
        (ir, info, plan)
    }

    /// What emitting with `plan` reports missing (it must be an internal error).
    fn missing(ir: &Ir, info: &Info, plan: &Plan) -> String {
        match emit(ir, info, plan, Arch::Sm80) {
            Err(PlanError::Internal { missing, loc }) => {
                assert!(loc.to_string().contains("emit.rs"), "{loc}");
                missing
            }
            other => panic!("an internal error, not {other:?}"),
        }
    }

    /// A transposing load, a block reduction of it and a store of the result.
    fn reduction() -> (Ir, Info, Plan) {
        let mut k = KernelBuilder::new("sum").block(128).items_per_thread(2);
        let x = k.input::<u32>("x");
        let y = k.output::<u32>("y");
        let b = k.this_block();
        let t = k.load_from(b, &x, Load::transpose());
        let r = k.reduce(b, &t, Reduce::sum().broadcast());
        k.store_to(b, &y, &r, Store::direct().offset(0u32));
        staged(k)
    }

    #[test]
    fn the_stages_outputs_emit() {
        let (ir, info, plan) = reduction();
        assert!(emit(&ir, &info, &plan, Arch::Sm80).is_ok());
    }

    #[test]
    fn a_plan_without_what_an_op_needs_is_an_internal_error() {
        let (ir, info, plan) = reduction();
        let op = |i: usize| OpId(i as u32);
        let load = (0..ir.ops.len()).find(|&i| matches!(ir.op(op(i)).kind, OpKind::Load(_)));
        let reduce = (0..ir.ops.len()).find(|&i| matches!(ir.op(op(i)).kind, OpKind::Reduce(_)));
        let (load, reduce) = (load.expect("a load"), reduce.expect("a reduction"));

        let mut p = plan.clone();
        p.transfers[op(load)] = None;
        let m = missing(&ir, &info, &p);
        assert!(
            m.contains("plan of a load or store") && m.contains("(load)"),
            "{m}"
        );

        let mut p = plan.clone();
        p.collectives[op(reduce)] = None;
        let m = missing(&ir, &info, &p);
        assert!(
            m.contains("block collective") && m.contains("(reduce)"),
            "{m}"
        );

        let mut p = plan.clone();
        p.exchanges.truncate(op(load));
        assert!(missing(&ir, &info, &p).contains("list of exchanges"));

        let mut p = plan.clone();
        p.slices.clear();
        assert!(missing(&ir, &info, &p).contains("shared-memory slice"));

        let mut p = plan;
        p.shared.window_bytes = 0;
        assert!(missing(&ir, &info, &p).contains("shared window"));
    }

    #[test]
    fn a_shared_array_the_plan_does_not_place_is_an_internal_error() {
        let mut k = KernelBuilder::new("array").block(64);
        let y = k.output::<i32>("y");
        let b = k.this_block();
        let a = k.shared_array::<i32>(64);
        let t = crate::ir::index::thread_rank();
        k.shared_write(&a, t.clone(), t.clone().cast::<i32>());
        k.sync_block();
        let r = k.fill(a.read(t));
        k.store_to(b, &y, &r, Store::direct());
        let (ir, info, plan) = staged(k);
        assert!(emit(&ir, &info, &plan, Arch::Sm80).is_ok());

        let mut p = plan.clone();
        p.arrays.clear();
        assert!(missing(&ir, &info, &p).contains("slice of shared array smem0"));

        let mut p = plan;
        p.shared.arrays.clear();
        assert!(missing(&ir, &info, &p).contains("home of shared array smem0"));
    }
}

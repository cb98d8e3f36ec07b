//! Per-thread variables and the control flow they drive: `var`/`set` (of every dtype, uniform
//! across the block or thread-varying), `while_` loops on a counter variable, stepped `for`
//! loops (run-time steps of 0 included), `break_`/`continue_` under conditions that keep or
//! lower their loop's uniformity as the loop allows, and `return_if`, uniform across the
//! block (whole blocks leave; collectives may follow) or thread-varying (nothing collective
//! may follow but, rarely, a barrier the verifier must reject). Every variable's last value is
//! written by index when its scope ends, so each one is observed.

use super::expr::Leaves;
use super::{BLOCK, Defect, Gen, Param, THREAD};
use crate::fuzz::types::{AnyExpr, AnyVar, Fz, with_dtype};
use coopgraph::KernelBuilder;
use coopgraph::ir::{DType, Element, Expr, index};

/// A variable in scope.
#[derive(Clone)]
pub(crate) struct VarInfo {
    pub h: AnyVar,
    pub dt: DType,
    /// Uniform across the block: set only to block-uniform values under block-uniform
    /// control, as the verifier requires of a variable a collective's condition may read.
    pub uniform: bool,
    /// A loop's counter: only its loop sets it.
    pub counter: bool,
}

impl Gen {
    /// Whether uniformity `u` is at least `level` as the verifier counts it for this block.
    fn at_least(&self, u: u32, level: u32) -> bool {
        if level >= BLOCK || level >= self.t {
            u >= BLOCK || u >= self.t
        } else {
            u >= level
        }
    }

    /// A variable's value as an expression.
    pub(crate) fn var_expr(v: &VarInfo) -> AnyExpr {
        with_dtype!(v.dt, T => T::expr(T::of_var(&v.h).expect("the variable's dtype").get()))
    }

    /// A variable to read as a leaf: any, or (not `varying`) a block-uniform one.
    pub(crate) fn var_leaf(&mut self, varying: bool) -> Option<AnyExpr> {
        let ok: Vec<usize> = (0..self.vars.len())
            .filter(|&i| varying || self.vars[i].uniform)
            .collect();
        if ok.is_empty() {
            return None;
        }
        let v = self.vars[self.rng.pick(&ok)].clone();
        Some(Self::var_expr(&v))
    }

    /// A block-uniform `u32` variable, if one is in scope.
    pub(crate) fn uniform_u32_var(&mut self) -> Option<Expr<u32>> {
        let ok: Vec<usize> = (0..self.vars.len())
            .filter(|&i| self.vars[i].uniform && self.vars[i].dt == DType::U32)
            .collect();
        if ok.is_empty() {
            return None;
        }
        let v = &self.vars[self.rng.pick(&ok)];
        <u32 as Fz>::of_var(&v.h).map(|h| h.get())
    }

    /// A block-uniform value of `T`.
    fn uniform_of<T: Fz>(&mut self, k: &mut KernelBuilder) -> Expr<T> {
        let u = self.block_u32(k, 6);
        u.cast::<T>()
    }

    /// Declares a variable, or sets one in scope.
    pub fn op_var(&mut self, k: &mut KernelBuilder) -> bool {
        let settable: Vec<usize> = (0..self.vars.len())
            .filter(|&i| !self.vars[i].counter && (!self.vars[i].uniform || self.block_uniform()))
            .collect();
        if settable.is_empty() || self.rng.pct(35) {
            let dt = self.dtype();
            let uniform = self.block_uniform() && self.rng.pct(50);
            with_dtype!(dt, T => {
                let init: Expr<T> = if uniform {
                    self.uniform_of::<T>(k)
                } else {
                    self.expr::<T>(&Leaves::varying(), 2)
                };
                let h = k.var(init);
                self.vars.push(VarInfo { h: T::var(h), dt, uniform, counter: false });
            });
            return true;
        }
        let v = self.vars[self.rng.pick(&settable)].clone();
        with_dtype!(v.dt, T => {
            let h = T::of_var(&v.h).expect("the variable's dtype");
            let value: Expr<T> = if v.uniform {
                let x = self.uniform_of::<T>(k);
                if self.rng.pct(60) { h.get() + x } else { x }
            } else {
                let lv = Leaves::varying();
                match self.rng.below(3) {
                    0 => h.get() + self.expr::<T>(&lv, 1),
                    1 => self.expr::<T>(&lv, 2),
                    _ => {
                        let c = self.cond(&lv, 1);
                        c.select(h.get(), self.expr::<T>(&lv, 1))
                    }
                }
            };
            k.set(&h, value);
        });
        true
    }

    /// A `while_` on a counter variable (its bound uniform across the block, or varying by
    /// thread) or a stepped `for` loop.
    pub fn var_loop(&mut self, k: &mut KernelBuilder) -> bool {
        let uniform = self.rng.pct(65);
        let u = if uniform { BLOCK } else { THREAD };
        let mut c = self.child(u);
        c.acc = self.accumulator_for(k, &c);
        c.in_loop = true;
        c.loop_level = Some(u);
        c.jump_rel = BLOCK;
        let n = self.region_size();
        if self.rng.pct(50) {
            let bound: Expr<u32> = if uniform {
                self.block_u32(k, 3)
            } else {
                index::thread_rank() % 3u32 + self.rng.below(2) as u32
            };
            let counter = k.var(0u32);
            let cu = self.cx().uni.min(u);
            let info = VarInfo {
                h: <u32 as Fz>::var(counter),
                dt: DType::U32,
                uniform: self.at_least(cu, BLOCK),
                counter: true,
            };
            k.while_(counter.get().lt(bound), |k| {
                // First, so that no `continue_` skips it.
                k.set(&counter, counter.get() + 1u32);
                c.loops.push((counter.get(), u));
                self.in_region(k, c, |g, k| {
                    g.vars.push(info);
                    g.statements(k, n)
                });
            });
        } else {
            let (start, end, step): (Expr<u32>, Expr<u32>, Expr<u32>) = if uniform {
                let start = Expr::lit(self.rng.below(3) as u32);
                let end = self.block_u32(k, 9);
                let step = if self.rng.pct(50) {
                    Expr::lit(1 + self.rng.below(3) as u32)
                } else {
                    // 0 at run time runs no iteration.
                    let s = self.rng.below(4);
                    self.scalar_param::<u32>(k, s).expr()
                };
                (start, end, step)
            } else {
                let start = index::thread_rank() % 4u32;
                let end = Expr::lit(4 + self.rng.below(6) as u32);
                let step = if self.rng.pct(50) {
                    index::thread_rank() % 2u32 + 1u32
                } else {
                    Expr::lit(1 + self.rng.below(2) as u32)
                };
                (start, end, step)
            };
            k.for_range_step(start, end, step, |k, i| {
                c.loops.push((i, u));
                self.in_region(k, c, |g, k| g.statements(k, n));
            });
        }
        true
    }

    /// `break_` or `continue_` (mostly under a condition), where it leaves the innermost
    /// loop's uniformity as it is.
    pub fn op_jump(&mut self, k: &mut KernelBuilder) -> bool {
        let Some(level) = self.cx().loop_level else {
            return false;
        };
        if !self.at_least(self.cx().jump_rel, level) {
            return false;
        }
        let brk = self.rng.pct(50);
        let jump = |k: &mut KernelBuilder| {
            if brk { k.break_() } else { k.continue_() }
        };
        if self.rng.pct(10) {
            jump(k);
            return true;
        }
        let (cond, u) = self.uniform_cond(k, level);
        if !self.at_least(u, level) {
            return false;
        }
        k.if_(cond, jump);
        true
    }

    /// `return_if`: uniform across the block where the code is, else (outside loops, so that
    /// nothing before it runs again) thread-varying, after which nothing collective runs.
    pub fn op_return(&mut self, k: &mut KernelBuilder) -> bool {
        if self.block_uniform() && self.rng.pct(60) {
            let (cond, _) = self.uniform_cond(k, BLOCK);
            k.return_if(cond);
            return true;
        }
        if self.cx().in_loop {
            return false;
        }
        // Thread-varying as the verifier counts it, whatever else it reads.
        let varying = index::thread_rank().lt(self.rng.below(u64::from(self.t) + 1) as u32);
        let cond = match self.rng.below(3) {
            0 => varying,
            1 => varying.and(&self.cond(&Leaves::varying(), 1)),
            _ => varying.or(&self.cond(&Leaves::varying(), 1)),
        };
        k.return_if(cond);
        if self.t > 1 {
            for c in &mut self.ctx {
                c.uni = THREAD;
            }
            self.exited = true;
            if self.rng.pct(10) && self.feature(Defect::CollectiveAfterExit) {
                k.sync_block();
                self.expect_reject = Some("a barrier after a thread-varying return_if");
            }
        }
        true
    }

    /// Writes the last value of each variable of the region being left (all of them at the
    /// kernel's end) to an output of its own, one element per thread of the grid.
    pub fn observe_vars(&mut self, k: &mut KernelBuilder) {
        let start = self.var_scopes.last().copied().unwrap_or(0);
        let vars: Vec<VarInfo> = self.vars[start.min(self.vars.len())..].to_vec();
        let len = self.blocks() * self.t;
        for v in vars {
            with_dtype!(v.dt, T => {
                let name = self.name("v");
                let y = k.output::<T>(&name);
                self.params.push(Param::Output { dtype: T::DTYPE, len: Some(u64::from(len)) });
                let h = T::of_var(&v.h).expect("the variable's dtype");
                k.write(&y, self.grid_rank(), h.get());
            });
        }
    }
}

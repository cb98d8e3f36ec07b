//! Loops and early exits: `for` (stepped or not), `while_`, `tiles`, and the threads that
//! leave them (`break_`, `continue_`) or the kernel (`return_if`). Each thread carries how it
//! left ([`Gone`]); a region runs each op in the threads that have not.

use super::value::UNSPEC;
use super::{Block, Event};
use coopgraph::ir::{ExprId, OpId, RegionId};

/// How a thread left the code being run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gone {
    /// It has not.
    No,
    /// The rest of this iteration of the innermost loop.
    Continue,
    /// The innermost loop.
    Break,
    /// The kernel.
    Return,
}

impl Block<'_> {
    /// The threads of `active` that have not left.
    pub(super) fn live(&self, active: &[bool]) -> Vec<bool> {
        (active.iter().zip(&self.gone))
            .map(|(&a, g)| a && *g == Gone::No)
            .collect()
    }

    /// After an iteration that `ran` in some threads: those that continued go on, those that
    /// broke or returned are done with the loop (a break ends there, a return goes on). Other
    /// threads left an enclosing loop, which is theirs to handle.
    fn iteration_end(&mut self, ran: &[bool], running: &mut [bool]) {
        for t in 0..self.threads {
            if !ran[t] {
                continue;
            }
            match self.gone[t] {
                Gone::Continue => self.gone[t] = Gone::No,
                Gone::Break => {
                    self.gone[t] = Gone::No;
                    running[t] = false;
                }
                Gone::Return => running[t] = false,
                Gone::No => {}
            }
        }
    }

    /// `for i in (start..end).step_by(step)` per thread: the bounds and the step evaluated
    /// once; a step of 0 runs no iteration; the counter never passes `u32::MAX`.
    pub(super) fn for_loop(
        &mut self,
        op: OpId,
        [start, end]: [ExprId; 2],
        step: Option<ExprId>,
        body: RegionId,
        active: &[bool],
    ) {
        let n = self.threads;
        let (mut cur, mut stop, mut by) = (vec![0u64; n], vec![0u64; n], vec![1u64; n]);
        let mut running = active.to_vec();
        for t in 0..n {
            if active[t] {
                let s = self.eval(start, self.cx(t));
                let e = self.eval(end, self.cx(t));
                self.check_defined(s, "a loop bound");
                self.check_defined(e, "a loop bound");
                cur[t] = s.bits;
                stop[t] = e.bits;
                if let Some(st) = step {
                    let v = self.eval(st, self.cx(t));
                    self.check_defined(v, "a loop step");
                    by[t] = v.bits;
                    running[t] = v.bits != 0;
                }
            }
        }
        loop {
            let now: Vec<bool> = (0..n).map(|t| running[t] && cur[t] < stop[t]).collect();
            if !now.iter().any(|&a| a) || !self.step() {
                break;
            }
            let fields: Vec<[u64; 3]> = cur.iter().map(|&c| [c, 0, 0]).collect();
            self.loops.insert(op, fields);
            self.region(body, &now);
            self.iteration_end(&now, &mut running);
            for t in 0..n {
                if now[t] {
                    cur[t] += by[t];
                }
            }
        }
    }

    /// `while cond { body }` per thread, the condition evaluated before every iteration.
    pub(super) fn while_loop(&mut self, op: OpId, cond: ExprId, body: RegionId, active: &[bool]) {
        let n = self.threads;
        let mut running = active.to_vec();
        loop {
            let mut now = vec![false; n];
            for t in 0..n {
                if running[t] {
                    let c = self.eval(cond, self.cx(t));
                    self.check_defined(c, "a loop condition");
                    if !c.known() {
                        self.event(Event::Uncertain { op });
                        return;
                    }
                    now[t] = c.bits & 1 == 1;
                    running[t] = now[t];
                }
            }
            if !now.iter().any(|&a| a) || !self.step() {
                break;
            }
            self.region(body, &now);
            self.iteration_end(&now, &mut running);
        }
    }

    /// The grid-stride loop over tiles along x: tile `b, b + grid, ..` for block `b` (blocks
    /// that differ along y or z run the same tiles).
    pub(super) fn tiles_loop(&mut self, op: OpId, n: ExprId, body: RegionId, active: &[bool]) {
        let Some(t0) = active.iter().position(|&a| a) else {
            return;
        };
        let nv = self.eval(n, self.cx(t0));
        self.check_defined(nv, "a tiles loop bound");
        let tile = u64::from(self.ir.block_threads() * self.ir.items_per_thread);
        let count = nv.bits.div_ceil(tile.max(1));
        let mut idx = u64::from(self.at[0]);
        let mut running = active.to_vec();
        self.tiles.push(op);
        while idx < count && running.iter().any(|&a| a) && self.step() {
            let origin = idx * tile;
            let valid = (nv.bits - origin).min(tile);
            self.loops
                .insert(op, vec![[idx, origin & 0xffff_ffff, valid]; self.threads]);
            let ran = self.live(&running);
            self.region(body, &ran);
            self.iteration_end(&ran, &mut running);
            idx += u64::from(self.launch.grid[0]);
        }
        self.tiles.pop();
    }

    /// `break_` or `continue_` in the `active` threads.
    pub(super) fn jump(&mut self, how: Gone, active: &[bool]) {
        for t in 0..self.threads {
            if active[t] {
                if self.taint[t] & UNSPEC != 0 {
                    // Under a branch whose condition is unspecified: it may not happen.
                    self.event(Event::Uncertain { op: self.op });
                }
                self.gone[t] = how;
            }
        }
    }

    /// `return_if(cond)`: the threads where it holds leave the kernel.
    pub(super) fn return_if(&mut self, cond: ExprId, active: &[bool]) {
        for t in 0..self.threads {
            if active[t] {
                let c = self.eval(cond, self.cx(t));
                self.check_defined(c, "an exit condition");
                if !c.known() || self.taint[t] & UNSPEC != 0 {
                    self.event(Event::Uncertain { op: self.op });
                } else if c.bits & 1 == 1 {
                    self.gone[t] = Gone::Return;
                }
            }
        }
    }
}

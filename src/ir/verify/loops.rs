//! The verifier's loops and jumps: loop bodies walked to a fixpoint of definedness, `break_`
//! and `continue_` (only inside loops, carrying their states to the loop's exit and head),
//! and `return_if`.

use super::super::defined::{Def, State};
use super::super::entities::{ExprId, Loc, OpId, RegionId};
use super::super::error::VerifyErrorKind as K;
use super::super::expr::VType;
use super::{Uniformity, Verifier};

/// The states `break_` and `continue_` leave one loop's body with.
#[derive(Default)]
pub(super) struct Jumps {
    breaks: Option<State>,
    continues: Option<State>,
}

fn join(into: &mut Option<State>, s: &State) {
    match into {
        Some(a) => a.combine(s, Def::meet),
        None => *into = Some(s.clone()),
    }
}

impl Verifier<'_> {
    /// How uniform a loop's control is, and where the line to blame is written: its own, or
    /// that of the `break_` or `continue_` that makes it less uniform than its bounds.
    pub(super) fn loop_control(&self, op: OpId, loc: Loc) -> (Uniformity, Loc) {
        let (u, by) = self.flow.loops[op.index()];
        (u, by.map_or(loc, |j| self.ir.op(j).loc))
    }

    /// Checks a loop body from the states at the loop's head: the meet of the states before
    /// the loop and after each iteration (at the body's end or a `continue_`). A body that
    /// leaves some slot weaker than it found it (a reduction's rank-0 result assigned to an
    /// accumulator) is checked again from the weaker states, its first findings dropped; most
    /// bodies are walked once. After the loop the slots are as at the head, met with the
    /// states at each `break_`: writes inside count only where every path had them (the body
    /// may run no time), and weakenings count.
    pub(super) fn looped(
        &mut self,
        op: OpId,
        (u, loc): (Uniformity, Loc),
        body: RegionId,
        state: &mut State,
    ) {
        self.conds.push((u, loc));
        self.loops.push(op);
        let mut head = state.clone();
        let breaks = loop {
            let (found, reported) = (self.errors.len(), self.reported.clone());
            self.jumps.push(Some(Jumps::default()));
            let mut inner = head.clone();
            self.region(body, &mut inner);
            let jumps = self.jumps.pop().flatten().unwrap_or_default();
            if let Some(c) = &jumps.continues {
                inner.combine(c, Def::meet);
            }
            let mut next = head.clone();
            next.combine(&inner, Def::meet);
            if next == head {
                break jumps.breaks;
            }
            self.errors.truncate(found);
            self.reported = reported;
            head = next;
        };
        self.loops.pop();
        self.conds.pop();
        *state = head;
        if let Some(b) = &breaks {
            state.combine(b, Def::meet);
        }
    }

    /// `break_` (`is_break`) or `continue_`: inside a loop, whose exit or head it reaches
    /// with the state here.
    pub(super) fn jump(&mut self, is_break: bool, loc: Loc, op: OpId, state: &State) {
        match self.jumps.last_mut() {
            Some(Some(j)) => join(
                if is_break {
                    &mut j.breaks
                } else {
                    &mut j.continues
                },
                state,
            ),
            _ => {
                let what = if is_break { "break_" } else { "continue_" };
                self.push(K::JumpOutsideLoop { what }, loc, Some(op));
            }
        }
    }

    /// `return_if`: a condition, outside any scan's prefix callback.
    pub(super) fn return_if(&mut self, cond: ExprId, loc: Loc, op: OpId, state: &State) {
        self.expect_ty(cond, VType::Bool, loc, op);
        self.expr(cond, state, op, None);
        if self.jumps.iter().any(Option::is_none) {
            self.push(K::ReturnInCallback, loc, Some(op));
        }
    }
}

//! Expression memos kept between ops: a memo (expression to register) lives for one op's
//! evaluation, and growing one again from nothing for each of a kernel's ops was a twentieth of
//! its build, so the emitter keeps a few emptied ones for the next op.

use super::Emitter;
use crate::ir::ExprId;
use crate::ptx::Reg;
use rustc_hash::FxHashMap;

/// The most emptied memos an emitter keeps (ops nest only a few deep).
const SPARE_MEMOS: usize = 4;

impl Emitter<'_> {
    /// An empty expression memo, one that an earlier op gave back where there is one.
    pub(in crate::codegen) fn take_memo(&mut self) -> FxHashMap<ExprId, Reg> {
        self.spare_memos.pop().unwrap_or_default()
    }

    /// Keeps `memo`, emptied, for a later [`Self::take_memo`].
    pub(in crate::codegen) fn give_memo(&mut self, mut memo: FxHashMap<ExprId, Reg>) {
        memo.clear();
        if self.spare_memos.len() < SPARE_MEMOS {
            self.spare_memos.push(memo);
        }
    }
}

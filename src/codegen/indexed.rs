//! Lowering of writes by index to global memory (`buffer[index] = value`).
//!
//! The element's address is the buffer's plus `index * size` (a `mad.wide.u32` for `u32`
//! indices, a `mad.lo.u64` for `u64` ones). Where bounds are checked the store is guarded by
//! `index < len`, the buffer's hidden length (its 64-bit length for buffers indexed with
//! 64-bit indices), so an index past the end writes nothing; with `unchecked_bounds` it is a
//! plain store. Reads by index are expressions, lowered with the others in `expr.rs`.

use super::builder::{Emitter, mem_ty};
use super::expr::Ctx;
use crate::ir::expr::VType;
use crate::ir::{DType, ExprId, ParamId};
use crate::ptx::*;
use smallvec::smallvec;
use std::collections::HashMap;

impl Emitter<'_> {
    /// `param[index] = value`, skipped past the buffer's end where bounds are checked.
    pub(crate) fn global_write(&mut self, param: ParamId, index: ExprId, value: ExprId) {
        let mut memo = HashMap::new();
        let ctx = Ctx::default();
        let wide = self.ir.expr(index).ty == VType::D(DType::U64);
        let dtype = self.ir.params[param.index()].dtype;
        let i = self.eval(index, &ctx, &mut memo);
        let v = self.eval(value, &ctx, &mut memo);
        let addr = self.element_addr(param, i, wide);
        let inside = self.in_bounds(param, i, wide);
        let st = Op::St {
            space: Space::Global,
            ty: mem_ty(dtype),
            addr: Address {
                base: AddrBase::Reg(addr),
                offset: 0,
            },
            src: smallvec![v.into()],
        };
        self.maybe_guarded(inside, st);
    }
}

//! Lowering of writes by index to global memory (`buffer[index] = value`), and of runs of
//! consecutive elements read into or written from a payload (`read_run`, `write_run`).
//!
//! The element's address is the buffer's plus `index * size` (a `mad.wide.u32` for `u32`
//! indices, a `mad.lo.u64` for `u64` ones). Where bounds are checked the store is guarded by
//! `index < len`, the buffer's hidden length (its 64-bit length for buffers indexed with
//! 64-bit indices), so an index past the end writes nothing; with `unchecked_bounds` it is a
//! plain store. Reads by index are expressions, lowered with the others in `expr.rs`.
//!
//! A run moves in vector accesses (up to 16 bytes each; 8- and 16-bit elements packed in
//! 32-bit words) where its address is aligned to the vector's size and, where bounds are
//! checked, its last element is inside the buffer; elsewhere (a misaligned start, the run
//! that crosses the buffer's end) element by element, each guarded as a lone access is. The
//! test is made at run time, so a buffer view at any offset works, at the scalar path's
//! speed where it is not aligned.

use super::builder::{Emitter, bits_or_float, is_narrow, mem_ty};
use super::expr::Ctx;
use crate::ir::expr::{ExprKind, VType};
use crate::ir::{CheckKind, DType, DataId, ExprId, ParamId, Role};
use crate::ptx::*;
use rustc_hash::FxHashMap;
use smallvec::smallvec;

impl Emitter<'_> {
    /// The expression whose register a store of `value` as `dtype` writes: a store of a
    /// 8- or 16-bit integer keeps the register's low bits, so a narrowing cast of a 32-bit
    /// integer before it (which would clear the high bits first) is left out.
    pub(crate) fn stored(&self, value: ExprId, dtype: DType) -> ExprId {
        let narrow = dtype.is_int() && dtype.bytes() < 4;
        match &self.ir.expr(value).kind {
            ExprKind::Cast(inner) if narrow => match self.ir.expr(*inner).ty {
                VType::D(d) if d.is_int() && d.bytes() == 4 => *inner,
                _ => value,
            },
            _ => value,
        }
    }

    /// `param[index] = value`, skipped past the buffer's end where bounds are checked.
    pub(crate) fn global_write(&mut self, param: ParamId, index: ExprId, value: ExprId) {
        let mut memo = FxHashMap::default();
        let ctx = Ctx::default();
        let wide = self.ir.expr(index).ty == VType::D(DType::U64);
        let dtype = self.ir.params[param.index()].dtype;
        let i = self.eval(index, &ctx, &mut memo);
        let v = self.eval(self.stored(value, dtype), &ctx, &mut memo);
        let addr = self.element_addr(param, i, wide);
        let inside = self.in_bounds(param, i, wide);
        self.check_index(|buffer| CheckKind::Write { buffer }, param, i, inside, None);
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

    /// `data[j] = param[index + j]` (`read`) or `param[index + j] = data[j]` for every item
    /// `j` of the payload: vector accesses where the run is aligned and inside the buffer,
    /// guarded elements elsewhere (see the module's documentation).
    pub(crate) fn global_run(&mut self, param: ParamId, index: ExprId, data: DataId, read: bool) {
        let mut memo = FxHashMap::default();
        let ctx = Ctx::default();
        let wide = self.ir.expr(index).ty == VType::D(DType::U64);
        let dtype = self.ir.params[param.index()].dtype;
        let space = match self.ir.params[param.index()].role {
            Role::Input if read => Space::GlobalNc,
            _ => Space::Global,
        };
        let i = self.eval(index, &ctx, &mut memo);
        let addr = self.element_addr(param, i, wide);
        let regs = self.data_regs(data).to_vec();
        let size = dtype.bytes() as i64;
        let run = Run {
            param,
            first: i,
            wide,
            addr,
            space,
            dtype,
            read,
        };
        if self.checking() {
            self.check_run(&run, regs.len() as i64);
        }
        let width = run_width(dtype, regs.len());
        if width == 1 {
            self.run_elements(&run, &regs);
            return;
        }
        // Aligned for the vector, and the last element inside.
        let aligned = self.aligned(addr, width as i64 * size);
        let last = self.run_element_ok(&run, regs.len() as i64 - 1);
        let fast = self.both(Some(aligned), last).unwrap_or(aligned);
        let vectors = |me: &mut Self| me.vectors(read, space, dtype, addr, &regs, width);
        self.split(fast, true, |me| me.run_elements(&run, &regs), vectors);
    }

    /// Debug checks: the run's last element (`first + n - 1`, not wrapped) is inside its
    /// buffer, recorded with that element's index where it is not.
    fn check_run(&mut self, run: &Run, n: i64) {
        let (class, ty) = if run.wide {
            (RegClass::B64, Ty::U64)
        } else {
            (RegClass::B32, Ty::U32)
        };
        let last = self.reg(class);
        self.op(Op::Bin {
            op: BinOp::Add,
            ty,
            dst: last,
            a: run.first.into(),
            b: Operand::Imm(n - 1),
        });
        let inside = self.in_bounds(run.param, last, run.wide);
        let unwrapped = self.setp(Cmp::Ge, ty, last.into(), run.first.into());
        let ok = self.both(inside, Some(unwrapped));
        let what: fn(String) -> CheckKind = if run.read {
            |buffer| CheckKind::Read { buffer }
        } else {
            |buffer| CheckKind::Write { buffer }
        };
        self.check_index(what, run.param, last, ok, None);
    }

    /// A run element by element, each guarded by its own bounds test.
    fn run_elements(&mut self, run: &Run, regs: &[Reg]) {
        let size = run.dtype.bytes() as i64;
        for (j, &r) in regs.iter().enumerate() {
            let ok = self.run_element_ok(run, j as i64);
            let at = Address {
                base: AddrBase::Reg(run.addr),
                offset: j as i64 * size,
            };
            if run.read {
                if ok.is_some() {
                    let zero = self.constant(run.dtype, 0);
                    self.op(Op::Mov {
                        ty: bits_or_float(run.dtype),
                        dst: r,
                        src: zero.into(),
                    });
                }
                let ld = Op::Ld {
                    space: run.space,
                    ty: mem_ty(run.dtype),
                    dst: smallvec![r],
                    addr: at,
                };
                self.maybe_guarded(ok, ld);
            } else {
                let st = Op::St {
                    space: run.space,
                    ty: mem_ty(run.dtype),
                    addr: at,
                    src: smallvec![r.into()],
                };
                self.maybe_guarded(ok, st);
            }
        }
    }

    /// Whether element `first + j` of a run is inside its buffer (none where bounds are not
    /// checked): below the length, and not wrapped past the index type's end.
    fn run_element_ok(&mut self, run: &Run, j: i64) -> Option<Reg> {
        if j == 0 {
            return self.in_bounds(run.param, run.first, run.wide);
        }
        self.length_reg(run.param)
            .or(self.length64_reg(run.param))?;
        let (class, ty) = if run.wide {
            (RegClass::B64, Ty::U64)
        } else {
            (RegClass::B32, Ty::U32)
        };
        let element = self.reg(class);
        self.op(Op::Bin {
            op: BinOp::Add,
            ty,
            dst: element,
            a: run.first.into(),
            b: Operand::Imm(j),
        });
        let inside = self.in_bounds(run.param, element, run.wide);
        let unwrapped = self.setp(Cmp::Ge, ty, element.into(), run.first.into());
        self.both(inside, Some(unwrapped))
    }
}

/// A run being lowered.
struct Run {
    param: ParamId,
    /// The first element's index register (`u32`, or `u64` where `wide`).
    first: Reg,
    wide: bool,
    /// The first element's address.
    addr: Reg,
    space: Space,
    dtype: DType,
    read: bool,
}

/// Elements per vector access of a run of `n` elements of `dtype`: the largest power of two
/// that divides `n` within 16 bytes (and 4 elements, but for 8- and 16-bit elements, which
/// move packed in up to four 32-bit words); 1 where no vector fits (a lone element, an odd
/// run, narrow elements that fill less than a word).
fn run_width(dtype: DType, n: usize) -> usize {
    let size = dtype.bytes() as usize;
    let most = if is_narrow(dtype) {
        16 / size
    } else {
        4.min(16 / size)
    };
    let mut v = 1;
    while v * 2 <= most && n.is_multiple_of(v * 2) {
        v *= 2;
    }
    if is_narrow(dtype) && v * size < 4 {
        1
    } else {
        v
    }
}

//! Lowering of atomics: one `atom` (or `red`, where the old value is not used) where PTX has
//! the operation at the element type, else a compare-and-swap loop.
//!
//! PTX's `atom` takes `add` at `.u32`, `.s32`, `.u64`, `.f32`, `.f64` (a 64-bit signed add is
//! the unsigned one), `min`/`max` at the signed and unsigned integers, the bitwise operators,
//! `exch` and `cas` at `.b32`/`.b64` only, `inc`/`dec` at `.u32` only; it has no float
//! minimum or maximum on any supported arch (sm_75, sm_80, sm_90: ptxas refuses
//! `atom.min.f32`). A subtraction adds the negated operand; float `exch` and `cas` move the
//! bits through integer registers. Float minima and maxima (NaN-propagating, or NaN-ignoring
//! for `nan_min`/`nan_max`) and 64-bit `inc`/`dec` are compare-and-swap loops:
//!
//! ```text
//!     cur = atom.cas [addr], v, v          // an atomic read (stores only what is there)
//! L:  new = f(cur, v)
//!     @(new == cur) bra D                  // nothing to change (not for release orders)
//!     prev = atom.cas [addr], cur, new
//!     cur = prev
//!     @(prev != cur before) bra L
//! D:  old = cur
//! ```
//!
//! An atomic load is `ld.relaxed` or `ld.acquire` at the atomic's scope.
//!
//! A release order keeps the loop to its successful `cas` (a failed one writes nothing, so it
//! releases nothing). Where bounds are checked, an index past the buffer's end skips the
//! update and leaves the old value 0.

use super::builder::{ArrayRef, Emitter, Lowered, bits_ty, mem_ty};
use super::expr::Ctx;
use crate::ir::expr::{BinaryOp as B, VType};
use crate::ir::ops::{AtomicMemory, AtomicOp, AtomicSpec, MemoryOrder, MemoryScope};
use crate::ir::{CheckKind, DType, OpId};
use crate::ptx::*;
use rustc_hash::FxHashMap;

/// How an atomic is lowered.
enum Lowering {
    /// One `atom` (or `red`) of this operator and type; `negate`: of the negated operand.
    Native { op: AtomOp, ty: Ty, negate: bool },
    /// `exch` or `cas` of a float's bits.
    Bits { op: AtomOp },
    /// A compare-and-swap loop.
    Loop,
    /// An atomic load: `ld.relaxed` or `ld.acquire`.
    Load,
}

/// The lowering of `op` at element type `d`.
fn lowering(op: AtomicOp, d: DType) -> Lowering {
    let arith = match d {
        DType::I32 => Ty::S32,
        DType::I64 | DType::U64 => Ty::U64,
        other => mem_ty(other),
    };
    let ordered = match d {
        DType::I64 => Ty::S64,
        other => mem_ty(other),
    };
    let native = |op, ty| Lowering::Native {
        op,
        ty,
        negate: false,
    };
    match op {
        AtomicOp::Add => native(AtomOp::Add, arith),
        AtomicOp::Sub => Lowering::Native {
            op: AtomOp::Add,
            ty: arith,
            negate: true,
        },
        AtomicOp::Min | AtomicOp::NanMin | AtomicOp::Max | AtomicOp::NanMax if d.is_float() => {
            Lowering::Loop
        }
        AtomicOp::Min | AtomicOp::NanMin => native(AtomOp::Min, ordered),
        AtomicOp::Max | AtomicOp::NanMax => native(AtomOp::Max, ordered),
        AtomicOp::And => native(AtomOp::And, bits_ty(d)),
        AtomicOp::Or => native(AtomOp::Or, bits_ty(d)),
        AtomicOp::Xor => native(AtomOp::Xor, bits_ty(d)),
        AtomicOp::Exch | AtomicOp::Cas if d.is_float() => Lowering::Bits {
            op: if op == AtomicOp::Exch {
                AtomOp::Exch
            } else {
                AtomOp::Cas
            },
        },
        AtomicOp::Exch => native(AtomOp::Exch, bits_ty(d)),
        AtomicOp::Cas => native(AtomOp::Cas, bits_ty(d)),
        AtomicOp::Inc | AtomicOp::Dec if d.bytes() == 8 => Lowering::Loop,
        AtomicOp::Inc => native(AtomOp::Inc, Ty::U32),
        AtomicOp::Dec => native(AtomOp::Dec, Ty::U32),
        AtomicOp::Load => Lowering::Load,
    }
}

/// The PTX qualifiers of a memory order (none for the default, relaxed at GPU scope).
fn ptx_order(order: MemoryOrder, scope: MemoryScope) -> Order {
    let sem = match order {
        MemoryOrder::Relaxed => Sem::Relaxed,
        MemoryOrder::Acquire => Sem::Acquire,
        MemoryOrder::Release => Sem::Release,
        MemoryOrder::AcqRel => Sem::AcqRel,
    };
    let scope = match scope {
        MemoryScope::Block => Scope::Cta,
        MemoryScope::Gpu => Scope::Gpu,
        MemoryScope::System => Scope::Sys,
    };
    match (sem, scope) {
        (Sem::Relaxed, Scope::Gpu) => None,
        other => Some(other),
    }
}

/// Where an atomic's element is and how it may be touched.
struct Site {
    space: Space,
    addr: Address,
    order: Order,
    /// Where bounds are checked: whether the element is inside its buffer.
    inside: Option<Reg>,
}

impl Emitter<'_> {
    /// Lowers an atomic: the element's address (and bounds), then its update.
    pub(crate) fn atomic(&mut self, op: OpId, a: &AtomicSpec) -> Lowered {
        let ir = self.ir;
        let mut memo = FxHashMap::default();
        let ctx = Ctx::default();
        let wide = ir.expr(a.index).ty == VType::D(DType::U64);
        let i = self.eval(a.index, &ctx, &mut memo);
        let v = self.eval(a.value, &ctx, &mut memo);
        let compare = a.compare.map(|c| self.eval(c, &ctx, &mut memo));
        let (dtype, space, addr, inside) = match a.memory {
            AtomicMemory::Global(p) => {
                let dtype = ir.params[p.index()].dtype;
                let addr = self.element_addr(p, i, wide);
                let inside = self.in_bounds(p, i, wide);
                self.check_index(|buffer| CheckKind::Atomic { buffer }, p, i, inside, None);
                (dtype, Space::Global, addr, inside)
            }
            AtomicMemory::Shared(arr) => {
                let dtype = ir.arrays[arr.index()].dtype;
                let addr = self.array_addr(arr, i);
                let inside = self.array_inside(ArrayRef::Shared(arr), a.index, i, true, None);
                (dtype, Space::Shared, addr, inside)
            }
        };
        self.atomic_at(op, a, (dtype, space, addr, inside), v, compare)
    }

    /// Lowers an atomic's update of the element at `addr` in `space` (`inside`: whether it
    /// is inside its buffer, where bounds are checked), with operand `v` and compare value
    /// `compare`; `a` gives the op, the order and the old value's payload.
    pub(crate) fn atomic_at(
        &mut self,
        op: OpId,
        a: &AtomicSpec,
        (dtype, space, addr, inside): (DType, Space, Reg, Option<Reg>),
        v: Reg,
        compare: Option<Reg>,
    ) -> Lowered {
        let old = (self.data_regs(a.old).first().copied())
            .ok_or_else(|| self.missing(op, "register of an atomic's old value"))?;
        let site = Site {
            space,
            addr: Address {
                base: AddrBase::Reg(addr),
                offset: 0,
            },
            order: ptx_order(a.order, a.scope),
            inside,
        };
        if inside.is_some() {
            // An update past the end is skipped and gives 0.
            let zero = self.constant(dtype, 0);
            self.mov_into(dtype, a.old, 0, zero);
        }
        let used = self.payload_read(a.old);
        match lowering(a.op, dtype) {
            Lowering::Native { op, ty, negate } => {
                let v = if negate { self.negated(dtype, v) } else { v };
                let releases_only = site.order.is_none_or(|(sem, _)| sem.for_red());
                let red = !used && releases_only && !matches!(op, AtomOp::Exch | AtomOp::Cas);
                let instr = if red {
                    Op::Red {
                        order: site.order,
                        space,
                        op,
                        ty,
                        addr: site.addr.clone(),
                        a: v.into(),
                    }
                } else {
                    // A compare-and-swap compares with `compare` and stores the value.
                    let (a_op, b_op) = match compare {
                        Some(c) if op == AtomOp::Cas => (c.into(), Some(v.into())),
                        _ => (v.into(), None),
                    };
                    Op::Atom {
                        order: site.order,
                        space,
                        op,
                        ty,
                        dst: old,
                        addr: site.addr.clone(),
                        a: a_op,
                        b: b_op,
                    }
                };
                self.maybe_guarded(inside, instr);
            }
            Lowering::Bits { op } => {
                let ty = bits_ty(dtype);
                let vb = self.bits_of(dtype, v);
                let (a_op, b_op) = match compare {
                    Some(c) if op == AtomOp::Cas => {
                        let cb = self.bits_of(dtype, c);
                        (cb.into(), Some(vb.into()))
                    }
                    _ => (vb.into(), None),
                };
                let wide = if ty == Ty::B64 {
                    DType::U64
                } else {
                    DType::U32
                };
                let ob = self.constant(wide, 0);
                let instr = Op::Atom {
                    order: site.order,
                    space,
                    op,
                    ty,
                    dst: ob,
                    addr: site.addr.clone(),
                    a: a_op,
                    b: b_op,
                };
                self.maybe_guarded(inside, instr);
                self.op(Op::Mov {
                    ty,
                    dst: old,
                    src: ob.into(),
                });
            }
            Lowering::Loop => self.cas_loop(&site, a.op, dtype, v, old),
            Lowering::Load => {
                // The verifier admits relaxed and acquiring loads of global memory only.
                let (sem, scope) = site.order.unwrap_or((Sem::Relaxed, Scope::Gpu));
                let instr = Op::LdOrdered {
                    sem,
                    scope,
                    space,
                    ty: mem_ty(dtype),
                    dst: old,
                    addr: site.addr.clone(),
                };
                self.maybe_guarded(inside, instr);
            }
        }
        Ok(())
    }

    /// `-v` in `d`'s register (wrapping for integers).
    fn negated(&mut self, d: DType, v: Reg) -> Reg {
        let r = self.reg(v.class);
        let ty = match d {
            DType::I64 | DType::U64 => Ty::S64,
            DType::F32 => Ty::F32,
            DType::F64 => Ty::F64,
            _ => Ty::S32,
        };
        self.op(Op::Un {
            op: UnOp::Neg,
            ty,
            dst: r,
            a: v.into(),
        });
        r
    }

    /// A value's bits in an integer register (a float moved bit for bit).
    fn bits_of(&mut self, d: DType, v: Reg) -> Reg {
        if !d.is_float() {
            return v;
        }
        let ty = bits_ty(d);
        let r = self.reg(RegClass::of(ty));
        self.op(Op::Mov {
            ty,
            dst: r,
            src: v.into(),
        });
        r
    }

    /// A value of `d` from its bits in an integer register.
    fn of_bits(&mut self, d: DType, bits: Reg) -> Reg {
        if !d.is_float() {
            return bits;
        }
        let r = self.reg(RegClass::of(mem_ty(d)));
        self.op(Op::Mov {
            ty: bits_ty(d),
            dst: r,
            src: bits.into(),
        });
        r
    }

    /// The new value of the element for `cur` (bits in an integer register) and operand `v`.
    fn update(&mut self, op: AtomicOp, d: DType, cur: Reg, v: Reg) -> Reg {
        let bits = if d.bytes() == 8 { Ty::U64 } else { Ty::U32 };
        match op {
            AtomicOp::Inc => {
                // cur >= v ? 0 : cur + 1
                let wrap = self.setp(Cmp::Ge, bits, cur.into(), v.into());
                let one = self.constant(d, 1);
                let next = self.binary(d, B::Add, cur, one);
                let zero = self.constant(d, 0);
                self.pick(d, wrap, zero, next)
            }
            AtomicOp::Dec => {
                // cur == 0 || cur > v ? v : cur - 1
                let zero = self.setp(Cmp::Eq, bits, cur.into(), Operand::Imm(0));
                let above = self.setp(Cmp::Gt, bits, cur.into(), v.into());
                let wrap = self.reg(RegClass::Pred);
                self.op(Op::PredBin {
                    op: BinOp::Or,
                    dst: wrap,
                    a: zero,
                    b: above,
                });
                let one = self.constant(d, 1);
                let prev = self.binary(d, B::Sub, cur, one);
                self.pick(d, wrap, v, prev)
            }
            _ => {
                let c = self.of_bits(d, cur);
                let fold = match op {
                    AtomicOp::Min | AtomicOp::NanMin => B::Min,
                    _ => B::Max,
                };
                // PTX's min and max return the operand that is not NaN.
                let mut r = self.binary(d, fold, c, v);
                if matches!(op, AtomicOp::Min | AtomicOp::Max) {
                    // NaN-propagating: a NaN operand wins, and a NaN element stays.
                    let fty = mem_ty(d);
                    let v_nan = self.setp(Cmp::Nan, fty, v.into(), v.into());
                    r = self.pick(d, v_nan, v, r);
                    let c_nan = self.setp(Cmp::Nan, fty, c.into(), c.into());
                    r = self.pick(d, c_nan, c, r);
                }
                self.bits_of(d, r)
            }
        }
    }

    /// A compare-and-swap loop updating the element to `update(old, v)`; the old value into
    /// `old`.
    fn cas_loop(&mut self, site: &Site, op: AtomicOp, d: DType, v: Reg, old: Reg) {
        let ty = bits_ty(d);
        let cmp_ty = if d.bytes() == 8 { Ty::U64 } else { Ty::U32 };
        let class = RegClass::of(ty);
        let skip = self.label();
        if let Some(p) = site.inside {
            self.guarded(
                p,
                true,
                Op::Bra {
                    target: skip.clone(),
                    uni: false,
                },
            );
        }
        let cas = |me: &mut Self, dst: Reg, compare: Reg, new: Reg| {
            me.op(Op::Atom {
                order: site.order,
                space: site.space,
                op: AtomOp::Cas,
                ty,
                dst,
                addr: site.addr.clone(),
                a: compare.into(),
                b: Some(new.into()),
            });
        };
        // The element's value, read atomically: a swap of the operand for itself.
        let vb = self.bits_of(d, v);
        let cur = self.reg(class);
        cas(self, cur, vb, vb);
        let head = self.label();
        let done = self.label();
        self.op(Op::Label(head.clone()));
        let new = self.update(op, d, cur, v);
        let releases = site
            .order
            .is_some_and(|(sem, _)| matches!(sem, Sem::Release | Sem::AcqRel));
        if !releases {
            let same = self.setp(Cmp::Eq, cmp_ty, new.into(), cur.into());
            self.guarded(
                same,
                false,
                Op::Bra {
                    target: done.clone(),
                    uni: false,
                },
            );
        }
        let prev = self.reg(class);
        cas(self, prev, cur, new);
        let swapped = self.setp(Cmp::Eq, cmp_ty, prev.into(), cur.into());
        self.op(Op::Mov {
            ty,
            dst: cur,
            src: prev.into(),
        });
        self.guarded(
            swapped,
            true,
            Op::Bra {
                target: head,
                uni: false,
            },
        );
        self.op(Op::Label(done));
        let value = self.of_bits(d, cur);
        self.op(Op::Mov {
            ty: super::builder::bits_or_float(d),
            dst: old,
            src: value.into(),
        });
        self.op(Op::Label(skip));
    }
}

//! Atomics in the interpreter, from the semantics `AtomicOp` documents: each update applied in
//! the interpreter's thread order, with what is known about the result.
//!
//! Whether an atomic's old value, or the element it leaves, depends on the order threads run
//! in needs every access to the element in the launch, later ones included: a first pass of
//! the kernel records them ([`AccessMap`], with every atomic's old value unknown so that it
//! runs every path the second pass can), the second uses them. Two accesses are ordered when
//! they are of one thread, or of one block with a barrier between (barriers order global
//! memory within a block too); accesses of different blocks never are. An atomic unordered
//! with another access of its element returns an unspecified old value; the element it leaves
//! stays known only when every access unordered with it is an atomic it commutes with: the
//! same operation with the same operands, or one family of commutative operations (integer
//! sums and differences; and; or; xor; minima; maxima; float sums of small integers; float
//! minima of one kind). A plain shared access unordered with an atomic is a race.

use super::value::{self, NONDET, UNSPEC, V};
use super::{Block, Cx, Event, Mode};
use coopgraph::ir::DType;
use coopgraph::ir::expr::BinaryOp;
use coopgraph::ir::ops::{AtomicMemory, AtomicOp, AtomicSpec, Bounds};
use std::collections::HashMap;

/// An element of memory, as accesses name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CellKey {
    /// Element `index` of shared array `array` in block `block`.
    Shared {
        array: usize,
        index: u64,
        block: u32,
    },
    /// Element `index` of buffer parameter `param`.
    Global { param: usize, index: u64 },
}

/// What an access did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    Read,
    Write,
    /// An atomic with its operand's and compare value's bits, and whether the interpreter
    /// knows both (bits of a value it does not know are a stand-in).
    Atomic {
        op: AtomicOp,
        known: bool,
        v: u64,
        c: u64,
    },
}

/// One access: who, in which barrier epoch of its block, and what.
#[derive(Debug, Clone, Copy)]
pub struct Access {
    pub block: u32,
    pub thread: u32,
    pub epoch: u32,
    pub what: What,
}

/// Every access of the launch to the elements atomics touch (and every plain shared access),
/// by element.
pub type AccessMap = HashMap<CellKey, Vec<Access>>;

/// Whether the kernel has atomics (and so needs the first pass).
pub fn has_atomics(ir: &coopgraph::ir::Ir) -> bool {
    ir.ops
        .iter()
        .any(|o| matches!(o.kind, coopgraph::ir::ops::OpKind::Atomic(_)))
}

/// The family of commutative operations `op` belongs to at `dt` (`None`: it commutes only
/// with itself, with the same operands).
pub(super) fn family(op: AtomicOp, dt: DType) -> Option<u8> {
    let float = dt.is_float();
    Some(match op {
        AtomicOp::Add | AtomicOp::Sub => 0,
        AtomicOp::And => 1,
        AtomicOp::Or => 2,
        AtomicOp::Xor => 3,
        AtomicOp::Min | AtomicOp::NanMin if !float => 4,
        AtomicOp::Max | AtomicOp::NanMax if !float => 5,
        AtomicOp::Min => 6,
        AtomicOp::NanMin => 7,
        AtomicOp::Max => 8,
        AtomicOp::NanMax => 9,
        _ => return None,
    })
}

/// Whether a float's bits hold a small integer (whose sums are exact in any order).
fn small_integer(dt: DType, bits: u64) -> bool {
    let x = match dt {
        DType::F32 => f64::from(value::f32v(bits)),
        DType::F64 => value::f64v(bits),
        _ => return true,
    };
    x.fract() == 0.0 && x.abs() < 1e6
}

/// The element after `op` (the documented semantics): `old` the element, `v` the operand, `c`
/// the compare value, all as bits of `dt`; `shared`: the element is in a shared array (where
/// an `f32` add keeps subnormals).
pub fn apply(op: AtomicOp, dt: DType, shared: bool, old: u64, v: u64, c: u64) -> u64 {
    let m = value::mask(dt);
    let float = dt.is_float();
    let nan = |x: u64| match dt {
        DType::F32 => value::f32v(x).is_nan(),
        DType::F64 => value::f64v(x).is_nan(),
        _ => false,
    };
    let bin = |o: BinaryOp, a: u64, b: u64| value::binary(o, dt, a, b).unwrap_or(a);
    let r = match op {
        AtomicOp::Add => add(dt, shared, old, v),
        AtomicOp::Sub => {
            let neg = match dt {
                DType::F32 => v ^ (1 << 31),
                DType::F64 => v ^ (1 << 63),
                _ => v.wrapping_neg(),
            };
            add(dt, shared, old, neg)
        }
        AtomicOp::Min | AtomicOp::Max if float && (nan(old) || nan(v)) => {
            if nan(old) {
                old
            } else {
                v
            }
        }
        AtomicOp::Min | AtomicOp::NanMin => bin(BinaryOp::Min, old, v),
        AtomicOp::Max | AtomicOp::NanMax => bin(BinaryOp::Max, old, v),
        AtomicOp::And => old & v,
        AtomicOp::Or => old | v,
        AtomicOp::Xor => old ^ v,
        AtomicOp::Exch => v,
        AtomicOp::Cas => {
            if old & m == c & m {
                v
            } else {
                old
            }
        }
        AtomicOp::Inc => {
            if old >= v {
                0
            } else {
                old + 1
            }
        }
        AtomicOp::Dec => {
            if old == 0 || old > v {
                v
            } else {
                old - 1
            }
        }
        AtomicOp::Load => old,
    };
    r & m
}

/// `a + b` in `dt`: wrapping for integers; `f32` flushing subnormal operands and results to
/// zero in global memory (as the documented `add` does), keeping them in shared memory; `f64`
/// plain.
fn add(dt: DType, shared: bool, a: u64, b: u64) -> u64 {
    match dt {
        DType::F32 if shared => value::binary(BinaryOp::Add, dt, a, b).unwrap_or(a),
        DType::F32 => {
            let ftz = |x: f32| {
                if x.is_subnormal() {
                    0.0f32.copysign(x)
                } else {
                    x
                }
            };
            let s = ftz(ftz(value::f32v(a)) + ftz(value::f32v(b)));
            // Sums producing NaN: the canonical NaN, as every f32 arithmetic result.
            if s.is_nan() {
                0x7FFF_FFFF
            } else {
                s.to_bits() as u64
            }
        }
        _ => value::binary(BinaryOp::Add, dt, a, b).unwrap_or(a),
    }
}

impl Block<'_> {
    /// Notes an access (first pass), or returns the recorded accesses of the element that are
    /// not ordered with this one (second pass).
    pub(super) fn access(&mut self, key: CellKey, t: usize, what: What) -> Vec<Access> {
        let me = Access {
            block: self.b,
            thread: t as u32,
            epoch: self.epoch,
            what,
        };
        let ordered =
            |a: &Access| a.block == me.block && (a.thread == me.thread || a.epoch != me.epoch);
        match &self.out.seen {
            Some(seen) => seen
                .get(&key)
                .map(|list| list.iter().filter(|a| !ordered(a)).copied().collect())
                .unwrap_or_default(),
            None => {
                self.out.accesses.entry(key).or_default().push(me);
                Vec::new()
            }
        }
    }

    /// Runs an atomic in every active thread, in thread order.
    pub(super) fn atomic(&mut self, a: &AtomicSpec, active: &[bool]) {
        let ir = self.ir;
        let op = self.op;
        let dt = match a.memory {
            AtomicMemory::Global(p) => ir.params[p.index()].dtype,
            AtomicMemory::Shared(arr) => ir.arrays[arr.index()].dtype,
        };
        let first_pass = self.out.seen.is_none();
        for t in 0..self.threads {
            if !active[t] {
                continue;
            }
            let cx = Cx {
                t,
                args: &[],
                item: None,
                mode: Mode::Live,
            };
            let i = self.eval(a.index, cx);
            let v = self.eval(a.value, cx);
            let c = match a.compare {
                Some(e) => self.eval(e, cx),
                None => V::exact(0),
            };
            self.check_defined(i, "an atomic's index");
            self.check_defined(v, "an atomic's operand");
            self.check_defined(c, "an atomic's compare value");
            if !i.known() {
                self.event(Event::Uncertain { op });
                continue;
            }
            let known = v.known() && c.known();
            let what = What::Atomic {
                op: a.op,
                known,
                v: v.bits,
                c: c.bits,
            };
            // The element's value and where it lives.
            let (key, cur) = match a.memory {
                AtomicMemory::Global(p) => {
                    let p = p.index();
                    self.note_index(p, i.bits);
                    if self.past_end(p, i.bits) {
                        if ir.bounds == Bounds::Unchecked {
                            self.global_oob(op, t, p, i.bits);
                        }
                        // Skipped: the old value is 0.
                        self.set(a.old, t, 0, V::exact(0));
                        continue;
                    }
                    let key = CellKey::Global {
                        param: p,
                        index: i.bits,
                    };
                    (key, self.element(p, i.bits, t, dt))
                }
                AtomicMemory::Shared(arr) => {
                    let arr = arr.index();
                    if ir.arrays[arr].view_of.is_some() {
                        // Not modelled (the generator makes no atomic through a view).
                        self.event(Event::Uncertain { op });
                        self.set(a.old, t, 0, V::with(0, UNSPEC));
                        continue;
                    }
                    let Some(cell) = self.arrays[arr].get(i.bits as usize).copied() else {
                        if ir.bounds == Bounds::Checked {
                            // Skipped by the array's guard: the old value is 0.
                            self.set(a.old, t, 0, V::exact(0));
                            continue;
                        }
                        self.event(Event::SharedOob {
                            op,
                            array: arr,
                            index: i.bits,
                        });
                        self.set(a.old, t, 0, V::with(0, UNSPEC));
                        continue;
                    };
                    let key = CellKey::Shared {
                        array: arr,
                        index: i.bits,
                        block: self.b,
                    };
                    (key, cell.v)
                }
            };
            if cur.undef() {
                self.check_defined(cur, "an element an atomic updates");
            }
            let others = self.access(key, t, what);
            let racing_plain = others
                .iter()
                .any(|o| !matches!(o.what, What::Atomic { .. }));
            if racing_plain && matches!(key, CellKey::Shared { .. }) {
                let (array, index) = match key {
                    CellKey::Shared { array, index, .. } => (array, index),
                    CellKey::Global { param, index } => (param, index),
                };
                self.event(Event::SharedRace { op, array, index });
            }
            // Whether every unordered access commutes with this one.
            let commutes = others.iter().all(|o| match o.what {
                What::Atomic {
                    op: oop,
                    known: oknown,
                    v: ov,
                    c: oc,
                } => {
                    let both_known = known && oknown;
                    // A load leaves the element as it is: it commutes with every atomic.
                    let load = oop == AtomicOp::Load || a.op == AtomicOp::Load;
                    let same = load || (both_known && oop == a.op && ov == v.bits && oc == c.bits);
                    let fam = family(a.op, dt).is_some() && family(a.op, dt) == family(oop, dt);
                    let exact_sum = !matches!(a.op, AtomicOp::Add | AtomicOp::Sub)
                        || !dt.is_float()
                        || (both_known && small_integer(dt, ov) && small_integer(dt, v.bits));
                    same || (fam && exact_sum)
                }
                _ => false,
            });
            let contended = !others.is_empty();
            let mut new = V::with(
                apply(
                    a.op,
                    dt,
                    matches!(key, CellKey::Shared { .. }),
                    cur.bits,
                    v.bits,
                    c.bits,
                ),
                cur.flags | value::derive(v.flags | c.flags),
            );
            let exact_start = cur.known() && small_integer(dt, cur.bits);
            if contended && (!commutes || (dt.is_float() && !exact_start)) {
                new.flags |= UNSPEC | NONDET;
            }
            if !v.known() || !c.known() {
                new.flags |= UNSPEC;
            }
            let mut old = cur;
            if contended || first_pass {
                old.flags |= UNSPEC | NONDET;
            }
            new.flags |= self.taint[t];
            self.set(a.old, t, 0, old);
            if a.op == AtomicOp::Load {
                // It reads only: the element and its last writer stay as they are.
                continue;
            }
            match a.memory {
                AtomicMemory::Global(p) => {
                    let epoch = self.epoch;
                    self.put_element(p.index(), i.bits, t as u32, new, epoch);
                }
                AtomicMemory::Shared(arr) => {
                    let me = self.order.rec(t, self.epoch);
                    let c = &mut self.arrays[arr.index()][i.bits as usize];
                    c.set(new);
                    c.writer = Some(me);
                }
            }
        }
    }
}

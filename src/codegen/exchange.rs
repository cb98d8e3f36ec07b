//! Lowering of exchanges: through shared memory, at the plan's steps and behind the barriers
//! it places, or with shuffles inside a warp.
//!
//! An exchange group of `S` threads owns a region of `group_elems` elements. Rank `r` writes
//! slot `i` at region position `write(i, r)` and, after the planned barrier, reads slot `i`
//! from position `read(i, r)`; both forms come from the arrangements' layouts (blocked is
//! `r * K + i`, striped over `G` threads `(r / G) * G * K + i * G + r % G`). Position `p`
//! lives at element `p + p / 32` when the plan pads, else at `p`. A time-sliced exchange runs
//! one warp at a time on a single region, in place on one copy of the slots. Through
//! shuffles, each thread fetches its result's positions from their holders, which the plan's
//! inverse form of the written arrangement names.

use super::builder::{Emitter, Lowered, bits_or_float, mem_ty, segment_clamp};
use crate::ir::{DType, OpId};
use crate::planner::{ExchangePlan, PositionForm};
use crate::ptx::*;
use smallvec::smallvec;

/// One exchange to lower: its op, its plan and the payload's dtype, and, for an exchange of
/// a load or store, the valid count.
#[derive(Clone, Copy)]
pub(crate) struct ExchangeSite<'a> {
    /// The op the exchange belongs to (its barriers stand before the op's steps).
    pub op: OpId,
    /// The exchange.
    pub plan: &'a ExchangePlan,
    /// The payload's dtype.
    pub dtype: DType,
    /// The block tile's valid count: only slots of valid positions are written and read.
    pub valid: Option<Reg>,
    /// With a valid count, whether result slots at invalid positions keep their contents (a
    /// load without a default); else (a store, which never writes them) they may take any
    /// value.
    pub keep_invalid: bool,
}

/// The shared region of this thread's exchange group: the plan, the thread's rank in the
/// group, the region's address and what it is known to be aligned to (a power of two up
/// to 16 bytes), and the slots' dtype.
#[derive(Clone, Copy)]
struct Region<'a> {
    e: &'a ExchangePlan,
    rank: Reg,
    base: Reg,
    align: u32,
    dtype: DType,
}

impl Emitter<'_> {
    /// Rearranges `src` into `dst` as `x` says: through shared memory, or with shuffles.
    pub(crate) fn exchange(&mut self, x: &ExchangeSite, src: &[Reg], dst: &[Reg]) -> Lowered {
        let &ExchangeSite {
            op,
            plan: e,
            dtype,
            valid,
            keep_invalid,
        } = x;
        if e.via_shuffles {
            return self.shuffle_exchange(op, e, dtype, src, dst);
        }
        if e.turns.is_empty() {
            return Err(self.missing(op, "steps of an exchange"));
        }
        let es = e.elem_bytes as i64;
        let (s, k) = (e.scope, e.items);
        let slice = self.slice(op, e.slice)?;
        let window = self.window(op)?;
        let tid = self.tid();
        let smem = self.shared_base(window);
        let block = self.plan.block_threads;
        let (gi, rank) = if s >= block && !e.time_sliced {
            (None, tid)
        } else {
            let gi = self.u32op(BinOp::Div, tid.into(), Operand::Imm(s as i64));
            let r = self.u32op(BinOp::Rem, tid.into(), Operand::Imm(s as i64));
            (Some(gi), r)
        };
        // The region's address: every turn of a time-sliced exchange uses the first region.
        let region = self.reg(RegClass::B32);
        match (gi, e.time_sliced) {
            (Some(g), false) => self.op(Op::Mad {
                ty: Ty::U32,
                dst: region,
                a: g.into(),
                b: Operand::Imm(e.group_elems as i64 * es),
                c: smem.into(),
            }),
            _ => self.op(Op::Mov {
                ty: Ty::U32,
                dst: region,
                src: smem.into(),
            }),
        }
        if slice.offset != 0 {
            self.op(Op::Bin {
                op: BinOp::Add,
                ty: Ty::U32,
                dst: region,
                a: region.into(),
                b: Operand::Imm(slice.offset as i64),
            });
        }
        // Valid positions of this group: p < vrem, with vrem = min(valid, tile) - gi * S * K,
        // the count measured from the group's start: signed, not cut to the group's share
        // (`share_of`), as the sides compare positions with it signed.
        let vrem = valid.map(|v| {
            let tile = (block * k) as i64;
            let c = self.reg(RegClass::B32);
            self.op(Op::Bin {
                op: BinOp::Min,
                ty: Ty::U32,
                dst: c,
                a: v.into(),
                b: Operand::Imm(tile),
            });
            if let Some(g) = gi {
                let start = self.reg(RegClass::B32);
                self.op(Op::Bin {
                    op: BinOp::Mul,
                    ty: Ty::U32,
                    dst: start,
                    a: g.into(),
                    b: Operand::Imm((s * k) as i64),
                });
                self.op(Op::Bin {
                    op: BinOp::Sub,
                    ty: Ty::S32,
                    dst: c,
                    a: c.into(),
                    b: start.into(),
                });
            }
            c
        });
        // Time-sliced, the turns exchange one copy of the slots in place, so that one set of
        // registers is live across them (not the source and the result); the result takes
        // the valid slots after the last turn.
        let work = e
            .time_sliced
            .then(|| self.working_copy(e, dtype, rank, vrem, src));
        let (from, into) = match &work {
            Some(w) => (w.as_slice(), w.as_slice()),
            None => (src, dst),
        };
        // The window is aligned to 16 bytes; the slice's offset and the groups' regions keep
        // whatever of that their sizes allow (a temp storage may be aligned to less).
        let group_bytes = match (gi, e.time_sliced) {
            (Some(_), false) => e.group_elems * e.elem_bytes,
            _ => 0,
        };
        let group = Region {
            e,
            rank,
            base: region,
            align: 1 << (slice.offset | group_bytes | 16).trailing_zeros(),
            dtype,
        };
        for (turn, steps) in e.turns.iter().enumerate() {
            self.sync_point(steps.write);
            let skip = e.time_sliced.then(|| {
                let label = self.label();
                let mine = self.setp(
                    Cmp::Ne,
                    Ty::U32,
                    gi.map(Operand::from).unwrap_or(Operand::Imm(0)),
                    Operand::Imm(turn as i64),
                );
                self.guarded(
                    mine,
                    false,
                    Op::Bra {
                        target: label.clone(),
                        uni: true,
                    },
                );
                label
            });
            // In place, every slot moves: a slot past the valid count carries whatever it
            // held through the region (the group's own bytes), and the result takes only
            // the valid ones below; no per-item predicate lives across the turns.
            let guard = if work.is_some() { None } else { vrem };
            self.guarded_side(&group, &e.write, guard, from, true);
            self.sync_point(steps.read);
            self.guarded_side(&group, &e.read, guard, into, false);
            if let Some(label) = skip {
                self.op(Op::Label(label));
            }
        }
        if let Some(work) = work {
            let keep = vrem.filter(|_| keep_invalid);
            let p0 = keep.map(|_| self.thread_part(&e.read, e.scope, rank));
            for (i, (&d, &w)) in dst.iter().zip(&work).enumerate() {
                let mv = Op::Mov {
                    ty: bits_or_float(dtype),
                    dst: d,
                    src: w.into(),
                };
                match (keep, p0) {
                    (Some(v), Some(p0)) => {
                        let ok = self.valid_position(p0, i as u32 * e.read.item_stride, v);
                        self.guarded(ok, false, mv);
                    }
                    _ => self.op(mv),
                }
            }
        }
        Ok(())
    }

    /// A copy of `src` for an in-place exchange: with a valid bound, the slots at invalid
    /// write positions (which may never have been written) become zero bits, so that every
    /// slot may move through shared memory. A group whose region is all valid copies plainly.
    fn working_copy(
        &mut self,
        e: &ExchangePlan,
        dtype: DType,
        rank: Reg,
        vrem: Option<Reg>,
        src: &[Reg],
    ) -> Vec<Reg> {
        let work = self.fresh_like(src);
        let ty = bits_or_float(dtype);
        let copy = |me: &mut Self| {
            for (&w, &r) in work.iter().zip(src) {
                me.op(Op::Mov {
                    ty,
                    dst: w,
                    src: r.into(),
                });
            }
        };
        let Some(v) = vrem else {
            copy(self);
            return work;
        };
        let full = self.setp(
            Cmp::Ge,
            Ty::S32,
            v.into(),
            Operand::Imm((e.scope * e.items) as i64),
        );
        self.split(full, false, copy, |me| {
            let p0 = me.thread_part(&e.write, e.scope, rank);
            let zero = me.constant(dtype, 0);
            for (i, (&w, &r)) in work.iter().zip(src).enumerate() {
                let ok = me.valid_position(p0, i as u32 * e.write.item_stride, v);
                me.op(Op::Selp {
                    ty,
                    dst: w,
                    a: r.into(),
                    b: zero.into(),
                    p: ok,
                });
            }
        });
        work
    }

    /// Whether position `p0 + delta` of a group is below its valid bound `vrem`.
    fn valid_position(&mut self, p0: Reg, delta: u32, vrem: Reg) -> Reg {
        let p = self.u32op(BinOp::Add, p0.into(), Operand::Imm(delta as i64));
        self.setp(Cmp::Lt, Ty::S32, p.into(), vrem.into())
    }

    /// One side of an exchange; with a valid bound, a group whose whole region is valid takes
    /// an unguarded copy of the side (the common case), the others the guarded one. Barriers
    /// stay outside both, so every thread meets them at the same instruction.
    fn guarded_side(
        &mut self,
        g: &Region,
        a: &PositionForm,
        vrem: Option<Reg>,
        regs: &[Reg],
        write: bool,
    ) {
        let e = g.e;
        let Some(v) = vrem else {
            self.side(g, a, None, regs, write);
            return;
        };
        let full = self.setp(
            Cmp::Ge,
            Ty::S32,
            v.into(),
            Operand::Imm((e.scope * e.items) as i64),
        );
        self.split(
            full,
            false,
            |me| me.side(g, a, None, regs, write),
            |me| me.side(g, a, vrem, regs, write),
        );
    }

    /// One side of an exchange: every slot written to (or read from) its position in `a`.
    fn side(&mut self, g: &Region, a: &PositionForm, vrem: Option<Reg>, regs: &[Reg], write: bool) {
        let Region {
            e,
            rank,
            base: region,
            align,
            dtype,
        } = *g;
        let (es, mty) = (e.elem_bytes as i64, mem_ty(dtype));
        let stride = a.item_stride;
        // p0 = part(rank), computed from the rank.
        let p0 = self.thread_part(a, e.scope, rank);
        let slot0 = self.padded_slot(p0.into(), e.padding());
        let addr0 = self.reg(RegClass::B32);
        self.op(Op::Mad {
            ty: Ty::U32,
            dst: addr0,
            a: slot0,
            b: Operand::Imm(es),
            c: region.into(),
        });
        // Unpadded, a thread's items in one 8- or 16-byte run move as one vector (the planner
        // left the region unpadded for it): the run starts at a multiple of its length from
        // the region's start, so it is aligned where the region is.
        let vector = (a.vector_width(e.items, e.elem_bytes))
            .filter(|&w| vrem.is_none() && e.padding().is_none() && w * e.elem_bytes <= align);
        if let Some(width) = vector {
            self.vectors(!write, Space::Shared, dtype, addr0, regs, width as usize);
            return;
        }
        let offsets = a.uniform_slot_offsets(e.scope, e.items, e.padding());
        for (i, &r) in regs.iter().enumerate() {
            let (addr, off) = if let Some(offsets) = &offsets {
                (addr0, offsets[i] * es)
            } else {
                let p = self.reg(RegClass::B32);
                self.op(Op::Bin {
                    op: BinOp::Add,
                    ty: Ty::U32,
                    dst: p,
                    a: p0.into(),
                    b: Operand::Imm(i as i64 * stride as i64),
                });
                let sl = self.padded_slot(p.into(), e.padding());
                let ad = self.reg(RegClass::B32);
                self.op(Op::Mad {
                    ty: Ty::U32,
                    dst: ad,
                    a: sl,
                    b: Operand::Imm(es),
                    c: region.into(),
                });
                (ad, 0)
            };
            let address = Address {
                base: AddrBase::Reg(addr),
                offset: off,
            };
            let mv = if write {
                Op::St {
                    space: Space::Shared,
                    ty: mty,
                    addr: address,
                    src: smallvec![r.into()],
                }
            } else {
                Op::Ld {
                    space: Space::Shared,
                    ty: mty,
                    dst: smallvec![r],
                    addr: address,
                }
            };
            match vrem {
                None => self.op(mv),
                Some(v) => {
                    // Position p0 + i * stride is valid iff it is below vrem.
                    let ok = self.valid_position(p0, i as u32 * stride, v);
                    self.guarded(ok, false, mv);
                }
            }
        }
    }
}

impl Emitter<'_> {
    /// An exchange inside groups of at most 32 threads through `shfl.sync.idx`: slot `i` of
    /// rank `r` holds position `q = read(i, r)`, which rank `s` holds in slot `j` under the
    /// write arrangement (the plan's inverse form of it); every candidate slot is shuffled
    /// from `s` and the one at `j` kept.
    fn shuffle_exchange(
        &mut self,
        op: OpId,
        e: &ExchangePlan,
        d: DType,
        src: &[Reg],
        dst: &[Reg],
    ) -> Lowered {
        let Some(holder) = &e.holder else {
            return Err(self.missing(op, "holders of an exchange through shuffles"));
        };
        let s = e.scope;
        let tid = self.tid();
        let rank = self.u32op(BinOp::Rem, tid.into(), Operand::Imm(s as i64));
        let mask = self.group_mask(s);
        // Power-of-two groups are shuffle segments, whose lanes count from the segment's
        // first; other groups (a block of fewer than 32 threads) name lanes of the warp.
        let segments = s.is_power_of_two();
        let c = if segments {
            segment_clamp(s)
        } else {
            segment_clamp(32)
        };
        let group_lane = (!segments).then(|| self.u32op(BinOp::Sub, tid.into(), rank.into()));
        let part = self.thread_part(&e.read, s, rank);
        for (i, &out) in dst.iter().enumerate() {
            let q = self.u32op(
                BinOp::Add,
                part.into(),
                Operand::Imm(i as i64 * e.read.item_stride as i64),
            );
            // Where position q lives under the write arrangement.
            let (source, slot) = self.holder(holder, q);
            let source = match group_lane {
                Some(first) => self.u32op(BinOp::Add, first.into(), source.into()),
                None => source,
            };
            let mut value: Option<Reg> = None;
            for (j, &candidate) in src.iter().enumerate() {
                let v = self.shuffle_value(ShflMode::Idx, candidate, source.into(), c, mask);
                value = Some(match value {
                    None => v,
                    Some(prev) => {
                        let here = self.setp(Cmp::Eq, Ty::U32, slot.into(), Operand::Imm(j as i64));
                        self.pick(d, here, v, prev)
                    }
                });
            }
            if let Some(v) = value {
                self.op(Op::Mov {
                    ty: bits_or_float(d),
                    dst: out,
                    src: v.into(),
                });
            }
        }
        Ok(())
    }
}

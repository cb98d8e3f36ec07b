//! Lowering of neighbour ops (adjacent difference, discontinuity flags, block shuffles).
//!
//! Each thread shares one value — its last item (when positions look left), its first item
//! (when they look right), or its only item (offset and rotate shuffles) — and reads the value
//! of the rank it needs: through `shfl.sync.idx` inside a (logical) warp, or through the plan's
//! shared memory across a block (written at the plan's first step, read after the planned
//! barrier). Items inside a thread use their own neighbours directly.

use super::builder::{Emitter, Lowered, Steps, bits_or_float, class, segment_clamp};
use super::expr::Ctx;
use crate::ir::ops::{NeighborKind as N, NeighborSpec};
use crate::ir::{ExprId, OpId};
use crate::planner::scatter_read_width;
use crate::ptx::*;
use rustc_hash::FxHashMap;

impl Emitter<'_> {
    fn apply(&mut self, e: ExprId, a: Reg, b: Reg) -> Reg {
        let ctx = Ctx {
            args: vec![a, b],
            ..Ctx::default()
        };
        let mut memo = FxHashMap::default();
        self.eval(e, &ctx, &mut memo)
    }

    /// A flag predicate as a `u32` 1 or 0.
    fn flag(&mut self, p: Reg) -> Reg {
        let r = self.reg(RegClass::B32);
        self.op(Op::Selp {
            ty: Ty::U32,
            dst: r,
            a: Operand::Imm(1),
            b: Operand::Imm(0),
            p,
        });
        r
    }

    /// Lowers a neighbour op.
    pub(crate) fn neighbor(&mut self, op: OpId, nb: &NeighborSpec) -> Lowered {
        let d = self.ir.datas[nb.src.index()].dtype;
        let x = self.data_regs(nb.src).to_vec();
        let out = self.data_regs(nb.dst).to_vec();
        let k = x.len();
        if k == 0 || out.len() != k {
            return Err(self.missing(op, "registers of the source and result, item for item"));
        }
        let (share, off, rotate) = match nb.kind {
            N::AdjacentLeft | N::Heads | N::ShiftUp => (x[k - 1], -1i64, false),
            N::AdjacentRight | N::Tails | N::ShiftDown => (x[0], 1, false),
            N::Offset(dist) => (x[0], dist as i64, false),
            N::Rotate(dist) => (x[0], dist as i64, true),
        };
        let threads = self.ir.group_threads(nb.group);
        let tid = self.tid();
        let rank = if threads >= self.plan.block_threads {
            tid
        } else {
            self.u32op(BinOp::Rem, tid.into(), Operand::Imm(threads as i64))
        };
        // The rank read, and whether it is in the group.
        let n = threads as i64;
        let target = self.reg(RegClass::B32);
        let shift = if rotate { off.rem_euclid(n) } else { off };
        self.op(Op::Bin {
            op: BinOp::Add,
            ty: Ty::S32,
            dst: target,
            a: rank.into(),
            b: Operand::Imm(shift),
        });
        let has = self.reg(RegClass::Pred);
        if rotate {
            self.op(Op::Bin {
                op: BinOp::Rem,
                ty: Ty::U32,
                dst: target,
                a: target.into(),
                b: Operand::Imm(n),
            });
            self.op(Op::Setp {
                cmp: Cmp::Eq,
                ty: Ty::U32,
                dst: has,
                a: target.into(),
                b: target.into(),
            });
        } else {
            // 0 <= target < n, as one unsigned compare.
            self.op(Op::Setp {
                cmp: Cmp::Lt,
                ty: Ty::U32,
                dst: has,
                a: target.into(),
                b: Operand::Imm(n),
            });
        }
        // The rank whose shared value leaves the tile (the last for up, the first for down).
        let out_rank = match nb.kind {
            N::ShiftUp => n - 1,
            _ => 0,
        };
        let mut shifted: Option<Reg> = None;
        let nv = if threads <= 32 {
            let mask = self.group_mask(threads);
            let c = segment_clamp(threads);
            if nb.shifted_out.is_some() {
                shifted =
                    Some(self.shuffle_value(ShflMode::Idx, share, Operand::Imm(out_rank), c, mask));
            }
            let lane = self.reg(RegClass::B32);
            self.op(Op::Bin {
                op: BinOp::And,
                ty: Ty::B32,
                dst: lane,
                a: target.into(),
                b: Operand::Imm(n - 1),
            });
            self.shuffle_value(ShflMode::Idx, share, lane.into(), c, mask)
        } else {
            let cp = self.collective(op)?;
            let mut steps = Steps::new(op, &cp.steps);
            self.enter_step(&mut steps)?;
            let mine = self.collective_addr(&cp, tid.into());
            self.shared_value(false, d, mine, share);
            self.enter_step(&mut steps)?;
            if nb.shifted_out.is_some() {
                let at = self.collective_addr(&cp, Operand::Imm(out_rank));
                let v = self.reg(class(d));
                self.shared_value(true, d, at, v);
                shifted = Some(v);
            }
            let theirs = self.collective_addr(&cp, target.into());
            let v = self.reg(class(d));
            // Keep the register defined where no rank is read.
            self.op(Op::Mov {
                ty: bits_or_float(d),
                dst: v,
                src: share.into(),
            });
            self.shared_access_if(has, true, d, theirs, v);
            v
        };
        let edge = nb.edge.map(|e| {
            let mut memo = FxHashMap::default();
            self.eval(e, &Ctx::default(), &mut memo)
        });
        let results: Vec<Reg> = match nb.kind {
            N::AdjacentLeft | N::AdjacentRight => {
                let Some(f) = nb.op else {
                    return Err(self.missing(op, "operator"));
                };
                let left = nb.kind == N::AdjacentLeft;
                let edge_item = if left { 0 } else { k - 1 };
                (0..k)
                    .map(|i| {
                        if i != edge_item {
                            let j = if left { i - 1 } else { i + 1 };
                            return self.apply(f, x[i], x[j]);
                        }
                        let with = self.apply(f, x[i], nv);
                        let fallback = match edge {
                            Some(e) => self.apply(f, x[i], e),
                            None => x[i],
                        };
                        self.pick(d, has, with, fallback)
                    })
                    .collect()
            }
            N::Heads | N::Tails => {
                let Some(f) = nb.op else {
                    return Err(self.missing(op, "operator"));
                };
                let heads = nb.kind == N::Heads;
                let edge_item = if heads { 0 } else { k - 1 };
                (0..k)
                    .map(|i| {
                        let p = if i != edge_item {
                            if heads {
                                self.apply(f, x[i - 1], x[i])
                            } else {
                                self.apply(f, x[i], x[i + 1])
                            }
                        } else {
                            let with = if heads {
                                self.apply(f, nv, x[i])
                            } else {
                                self.apply(f, x[i], nv)
                            };
                            let fallback = match edge {
                                Some(e) if heads => self.apply(f, e, x[i]),
                                Some(e) => self.apply(f, x[i], e),
                                // No neighbour: a head (or tail), always true.
                                None => self.setp(Cmp::Eq, Ty::U32, tid.into(), tid.into()),
                            };
                            let r = self.reg(RegClass::Pred);
                            let a = self.reg(RegClass::Pred);
                            self.op(Op::PredBin {
                                op: BinOp::And,
                                dst: a,
                                a: has,
                                b: with,
                            });
                            let not_has = self.reg(RegClass::Pred);
                            self.op(Op::PredNot {
                                dst: not_has,
                                a: has,
                            });
                            let b = self.reg(RegClass::Pred);
                            self.op(Op::PredBin {
                                op: BinOp::And,
                                dst: b,
                                a: not_has,
                                b: fallback,
                            });
                            self.op(Op::PredBin {
                                op: BinOp::Or,
                                dst: r,
                                a,
                                b,
                            });
                            r
                        };
                        self.flag(p)
                    })
                    .collect()
            }
            N::ShiftUp | N::ShiftDown => {
                let up = nb.kind == N::ShiftUp;
                let edge_item = if up { 0 } else { k - 1 };
                (0..k)
                    .map(|i| {
                        if i != edge_item {
                            return if up { x[i - 1] } else { x[i + 1] };
                        }
                        let fallback = edge.unwrap_or(x[i]);
                        self.pick(d, has, nv, fallback)
                    })
                    .collect()
            }
            N::Offset(_) => vec![self.pick(d, has, nv, x[0])],
            N::Rotate(_) => vec![nv],
        };
        // A partial tile: positions past the valid ones (looking right, from the last valid
        // one) keep their input.
        let results = match nb.valid {
            Some(e) if matches!(nb.kind, N::AdjacentLeft | N::AdjacentRight) => {
                let positions = self.counted_positions(op)?;
                let mut memo = FxHashMap::default();
                let v = self.eval(e, &Ctx::default(), &mut memo);
                let bound = if nb.kind == N::AdjacentRight {
                    let b = self.reg(RegClass::B32);
                    self.op(Op::Bin {
                        op: BinOp::Sub,
                        ty: Ty::S32,
                        dst: b,
                        a: v.into(),
                        b: Operand::Imm(1),
                    });
                    b
                } else {
                    v
                };
                results
                    .into_iter()
                    .enumerate()
                    .map(|(i, r)| {
                        let at = (rank, i as u32);
                        let keep = self.position_below(&positions, threads, at, bound, Ty::S32);
                        self.pick(d, keep, r, x[i])
                    })
                    .collect()
            }
            _ => results,
        };
        let out_ty = self.ir.datas[nb.dst.index()].dtype;
        for (i, r) in results.into_iter().enumerate() {
            self.mov_into(out_ty, nb.dst, i as u32, r);
        }
        if let (Some(o), Some(v)) = (nb.shifted_out, shifted) {
            self.mov_into(d, o, 0, v);
        }
        Ok(())
    }
}

impl Emitter<'_> {
    /// Lowers a scatter of `[src, ranks, dst]`: with a hole value, each thread first writes it
    /// at the positions it reads back; the items go to their ranked tile positions (ranks past
    /// the tile skipped, unless the op says they are `inside` it by construction); then the
    /// tile is read back in the result's arrangement (the plan's `read_back` form): item by
    /// item, or, unpadded, a thread's run of 4 to 16 bytes as one vector access.
    pub(crate) fn scatter(
        &mut self,
        op: OpId,
        [src, ranks, dst]: [crate::ir::DataId; 3],
        flags: Option<crate::ir::DataId>,
        holes: Option<u64>,
        inside: bool,
        defined: bool,
    ) -> Lowered {
        let d = self.ir.datas[src.index()].dtype;
        let x = self.data_regs(src).to_vec();
        let r = self.data_regs(ranks).to_vec();
        let fl = flags.map(|f| self.data_regs(f).to_vec());
        let cp = self.collective(op)?;
        let form = (cp.read_back.clone())
            .ok_or_else(|| self.missing(op, "read-back form of the scattered tile"))?;
        let tile = cp.entries as i64;
        let out = self.data_regs(dst).to_vec();
        // Where each result slot reads: position = the rank's digit terms + i * item stride.
        // One address and immediate offsets serve every item where the padded slots keep
        // the same distances for every rank.
        let items = out.len() as u32;
        let scope = (cp.entries / items.max(1)).max(1);
        let offsets = form.uniform_slot_offsets(scope, items, cp.padding);
        let tid = self.tid();
        let mut back = Vec::with_capacity(out.len());
        let mut first = None;
        for i in 0..items {
            if let (Some(offsets), Some(a0)) = (&offsets, first) {
                back.push(Address {
                    base: AddrBase::Reg(a0),
                    offset: offsets[i as usize] * i64::from(cp.elem_bytes),
                });
                continue;
            }
            let pos = self.reg(RegClass::B32);
            self.op(Op::Mov {
                ty: Ty::U32,
                dst: pos,
                src: Operand::Imm(i64::from(i) * form.item_stride as i64),
            });
            for &(extent, divisor, stride) in &form.thread_terms {
                let q = self.u32op(BinOp::Div, tid.into(), Operand::Imm(divisor.max(1) as i64));
                let m = self.u32op(BinOp::Rem, q.into(), Operand::Imm(extent.max(1) as i64));
                self.op(Op::Mad {
                    ty: Ty::U32,
                    dst: pos,
                    a: m.into(),
                    b: Operand::Imm(stride as i64),
                    c: pos.into(),
                });
            }
            let a = self.collective_addr(&cp, pos.into());
            first.get_or_insert(a);
            back.push(Address {
                base: AddrBase::Reg(a),
                offset: 0,
            });
        }
        // The planner leaves the tile unpadded where a thread's read-back run is one vector
        // (`scatter_read_width`), which starts at a multiple of its length.
        let vector = scatter_read_width(&form, items, cp.elem_bytes, defined)
            .filter(|&w| cp.padding.is_none() && w * cp.elem_bytes <= cp.align())
            .zip(first)
            .map(|(w, a0)| (w as usize, a0));
        let mut steps = Steps::new(op, &cp.steps);
        if let Some(bits) = holes {
            self.enter_step(&mut steps)?;
            let hole = self.constant(d, bits);
            match vector {
                Some((w, a0)) => {
                    self.vectors(false, Space::Shared, d, a0, &vec![hole; out.len()], w)
                }
                None => {
                    for a in &back {
                        self.shared_access(false, d, a.clone(), hole);
                    }
                }
            }
        }
        self.enter_step(&mut steps)?;
        for (i, (&v, &rank)) in x.iter().zip(&r).enumerate() {
            if inside && fl.is_none() {
                // The library's own ranks, each inside the tile by construction.
                let a = self.collective_addr(&cp, rank.into());
                self.shared_value(false, d, a, v);
                continue;
            }
            let ok = self.setp(Cmp::Lt, Ty::U32, rank.into(), Operand::Imm(tile));
            if let Some(f) = fl.as_ref().and_then(|f| f.get(i)) {
                let set = self.setp(Cmp::Ne, Ty::U32, (*f).into(), Operand::Imm(0));
                self.op(Op::PredBin {
                    op: BinOp::And,
                    dst: ok,
                    a: ok,
                    b: set,
                });
            }
            let a = self.collective_addr(&cp, rank.into());
            self.shared_access_if(ok, false, d, a, v);
        }
        self.enter_step(&mut steps)?;
        match vector {
            Some((w, a0)) => self.vectors(true, Space::Shared, d, a0, &out, w),
            None => {
                for (&o, a) in out.iter().zip(back) {
                    self.shared_access(true, d, a, o);
                }
            }
        }
        Ok(())
    }
}

//! Lowering of reductions.
//!
//! Each thread folds its items in order; a (logical) warp combines its lanes with a
//! `shfl.sync.down` tree (rank `r` takes rank `r + d` for `d = 1, 2, 4, ...`, so values combine
//! in rank order and non-commutative operators stay correct), or with one `redux.sync` for 32-bit
//! integer operators on sm_80+. A block combines its warps' results through the shared memory
//! the plan gives it, at the steps the plan numbers, with the barriers the plan places:
//! warp reductions (lane 0 of each warp shares its warp's value, warp 0 reduces them), raking
//! (every thread shares, warp 0 folds consecutive segments in order, then reduces), and
//! raking for commutative operators (threads past the first warp share, warp 0 folds them
//! into its own values).

use super::builder::{
    Collective, Emitter, Lowered, Steps, WarpGroupPlace, bits_or_float, class, mem_ty,
    segment_clamp,
};
use super::expr::Ctx;
use crate::ir::ops::{ReduceAlgorithm, ReduceOp, Reduction};
use crate::ir::{DType, OpId};
use crate::ptx::*;
use rustc_hash::FxHashMap;
use smallvec::smallvec;

/// A reduction across the lanes of logical warps: the operator and dtype, the warp's width,
/// this thread's rank in it, and the warp's member mask.
#[derive(Clone, Copy)]
struct WarpFold {
    op: ReduceOp,
    d: DType,
    w: u32,
    rank: Reg,
    mask: Operand,
}

impl Emitter<'_> {
    /// Reduces `acc` over logical warps as `f` says; the result is at each warp's rank 0 (at
    /// every rank when `redux.sync` does it). With `limit`, only ranks below it take part.
    fn warp_reduce(&mut self, f: &WarpFold, acc: Reg, limit: Option<Reg>) -> Reg {
        let WarpFold {
            op,
            d,
            w,
            rank,
            mask,
        } = *f;
        let redux = match op {
            ReduceOp::Sum => Some(AtomOp::Add),
            ReduceOp::Min => Some(AtomOp::Min),
            ReduceOp::Max => Some(AtomOp::Max),
            ReduceOp::BitAnd => Some(AtomOp::And),
            ReduceOp::BitOr => Some(AtomOp::Or),
            ReduceOp::BitXor => Some(AtomOp::Xor),
            _ => None,
        };
        let int32 = matches!(
            d,
            DType::I8 | DType::I16 | DType::I32 | DType::U8 | DType::U16 | DType::U32
        );
        if let Some(rop) = redux
            && int32
            && limit.is_none()
            && self.arch.has_redux()
        {
            let ty = match rop {
                AtomOp::And | AtomOp::Or | AtomOp::Xor => Ty::B32,
                _ if d.is_signed_int() => Ty::S32,
                _ => Ty::U32,
            };
            let r = self.reg(RegClass::B32);
            self.op(Op::Redux {
                op: rop,
                ty,
                dst: r,
                src: acc.into(),
                mask,
            });
            self.normalize(d, r);
            return r;
        }
        let c = segment_clamp(w);
        let mut acc = acc;
        let mut off = 1;
        while off < w {
            let other = self.shuffle_value(ShflMode::Down, acc, Operand::Imm(off as i64), c, mask);
            let sum = self.combine_op(op, d, acc, other);
            acc = match limit {
                None => sum,
                Some(l) => {
                    // Take the other value only if its rank takes part.
                    let src = self.u32op(BinOp::Add, rank.into(), Operand::Imm(off as i64));
                    let ok = self.setp(Cmp::Lt, Ty::U32, src.into(), l.into());
                    let r = self.reg(class(d));
                    self.op(Op::Selp {
                        ty: bits_or_float(d),
                        dst: r,
                        a: sum.into(),
                        b: acc.into(),
                        p: ok,
                    });
                    r
                }
            };
            off *= 2;
        }
        acc
    }

    /// Every warp but warp 0 (`warp` holds the thread's warp index) branches to `target`.
    fn skip_other_warps(&mut self, warp: Reg, target: &str) {
        let not_first = self.setp(Cmp::Ne, Ty::U32, warp.into(), Operand::Imm(0));
        let skip = Op::Bra {
            target: target.to_string(),
            uni: true,
        };
        self.guarded(not_first, false, skip);
    }

    /// A predicate `a < b` (unsigned).
    fn below(&mut self, a: Operand, b: Operand) -> Reg {
        self.setp(Cmp::Lt, Ty::U32, a, b)
    }

    /// Lowers a reduction.
    pub(crate) fn reduce(&mut self, op: OpId, r: &Reduction) -> Lowered {
        let d = self.ir.datas[r.src.index()].dtype;
        let items = self.data_regs(r.src).to_vec();
        if self.data_regs(r.dst).is_empty() {
            return Err(self.missing(op, "registers of the result"));
        }
        let Some(&first) = items.first() else {
            return Err(self.missing(op, "registers of the source"));
        };
        if r.op == ReduceOp::First {
            let result = self.first_of_group(op, r, d, first)?;
            self.mov_into(d, r.dst, 0, result);
            return Ok(());
        }
        let valid_items = r.valid.map(|e| {
            let mut memo = FxHashMap::default();
            self.eval(e, &Ctx::default(), &mut memo)
        });
        let threads = self.ir.group_threads(r.group);
        let tid = self.tid();
        let k = items.len() as i64;
        let mut acc = first;
        // With a valid count over several items per thread, an item counts only if its
        // position (the plan's, blocked: r * K + i) is below the count; ranks below
        // ceil(valid / K) hold a value.
        let in_group_rank = (k > 1 && valid_items.is_some())
            .then(|| self.u32op(BinOp::Rem, tid.into(), Operand::Imm(threads as i64)));
        let positions = match in_group_rank {
            Some(_) => Some(self.counted_positions(op)?),
            None => None,
        };
        for (i, &v) in items.iter().enumerate().skip(1) {
            let sum = self.combine_op(r.op, d, acc, v);
            acc = match (valid_items, in_group_rank, &positions) {
                (Some(n), Some(rank), Some(form)) => {
                    let at = (rank, i as u32);
                    let ok = self.position_below(form, threads, at, n, Ty::U32);
                    self.pick(d, ok, sum, acc)
                }
                _ => sum,
            };
        }
        let valid = match (valid_items, k > 1) {
            (Some(n), true) => {
                let plus = self.u32op(BinOp::Add, n.into(), Operand::Imm(k - 1));
                Some(self.u32op(BinOp::Div, plus.into(), Operand::Imm(k)))
            }
            (v, _) => v,
        };
        let result = if threads <= 32 {
            let rank = self.u32op(BinOp::Rem, tid.into(), Operand::Imm(threads as i64));
            let mask = self.group_mask(threads);
            let mut res = self.warp_reduce(
                &WarpFold {
                    op: r.op,
                    d,
                    w: threads,
                    rank,
                    mask,
                },
                acc,
                valid,
            );
            if r.broadcast {
                let c = segment_clamp(threads);
                res = self.shuffle_value(ShflMode::Idx, res, Operand::Imm(0), c, mask);
            }
            res
        } else if let Some(warps) = self.ir.groups[r.group.index()].kind.whole_warps() {
            let c = self.collective(op)?;
            self.warp_group_reduce(op, r, d, acc, valid, &c, warps)?
        } else {
            let c = self.collective(op)?;
            self.block_reduce(op, r, d, acc, valid, &c)?
        };
        self.mov_into(d, r.dst, 0, result);
        Ok(())
    }

    /// A [`ReduceOp::First`] reduction: `first`, the thread's first item, is the result at
    /// rank 0; with broadcast, rank 0 hands it on (a shuffle within a warp, else through the
    /// plan's one slot per group at the plan's two steps: one barrier), and nothing is folded.
    fn first_of_group(&mut self, op: OpId, r: &Reduction, d: DType, first: Reg) -> Lowered<Reg> {
        if !r.broadcast {
            return Ok(first);
        }
        let threads = self.ir.group_threads(r.group);
        if threads <= 32 {
            let mask = self.group_mask(threads);
            let c = segment_clamp(threads);
            return Ok(self.shuffle_value(ShflMode::Idx, first, Operand::Imm(0), c, mask));
        }
        let c = self.collective(op)?;
        let mut steps = Steps::new(op, &c.steps);
        if let Some(warps) = self.ir.groups[r.group.index()].kind.whole_warps() {
            let place = self.warp_group_place(warps);
            return self.warp_group_hand_out(&c, warps, place.group, d, first, &mut steps);
        }
        self.block_hand_out(&c, d, first, &mut steps)
    }

    /// Hands thread 0's `value` to every thread of the block through the slot after the
    /// collective's entries, at the plan's next two steps (thread 0 writes; every thread
    /// reads).
    fn block_hand_out(
        &mut self,
        c: &Collective,
        d: DType,
        value: Reg,
        steps: &mut Steps,
    ) -> Lowered<Reg> {
        self.enter_step(steps)?;
        let slot = self.collective_addr(c, Operand::Imm(i64::from(c.entries)));
        let tid = self.tid();
        let lead = self.setp(Cmp::Eq, Ty::U32, tid.into(), Operand::Imm(0));
        self.shared_access_if(lead, false, d, slot, value);
        self.enter_step(steps)?;
        let all = self.reg(class(d));
        self.shared_value(true, d, slot, all);
        Ok(all)
    }

    /// The group part of a reduction over groups of `warps` whole warps, by warp reductions
    /// through the plan's shared memory at the plan's steps: lane 0 of each warp writes its
    /// warp's value to its warp's entry, the group's first warp reduces the group's entries;
    /// the result is at the group's rank 0 (every thread of the group with broadcast, through
    /// the group's slot after the entries).
    #[allow(clippy::too_many_arguments)]
    fn warp_group_reduce(
        &mut self,
        op: OpId,
        r: &Reduction,
        d: DType,
        acc: Reg,
        valid: Option<Reg>,
        c: &Collective,
        warps: u32,
    ) -> Lowered<Reg> {
        let WarpGroupPlace {
            lane,
            warp,
            in_group,
            group,
        } = self.warp_group_place(warps);
        let fold = WarpFold {
            op: r.op,
            d,
            w: 32,
            rank: lane,
            mask: Operand::Imm(-1),
        };
        let mut steps = Steps::new(op, &c.steps);
        let skip_write = self.label();
        let after_fold = self.label();
        let result = self.reg(class(d));
        // Each warp's share of the group's valid count.
        let limit = valid.map(|v| {
            let start = self.u32op(BinOp::Mul, in_group.into(), Operand::Imm(32));
            self.share_of(v, Some(start.into()), Operand::Imm(32))
        });
        let part = self.warp_reduce(&fold, acc, limit);
        self.enter_step(&mut steps)?;
        // Lane 0 of each warp with a valid thread writes its warp's entry.
        let lead = self.setp(Cmp::Ne, Ty::U32, lane.into(), Operand::Imm(0));
        let skip = Op::Bra {
            target: skip_write.clone(),
            uni: false,
        };
        self.guarded(lead, false, skip.clone());
        if let Some(l) = limit {
            let none = self.setp(Cmp::Eq, Ty::U32, l.into(), Operand::Imm(0));
            self.guarded(none, false, skip);
        }
        let a = self.collective_addr(c, warp.into());
        self.shared_value(false, d, a, part);
        self.op(Op::Label(skip_write));
        self.enter_step(&mut steps)?;
        // The group's first warp reduces the entries of its warps with a valid thread.
        let count = match valid {
            None => None,
            Some(v) => {
                let plus = self.u32op(BinOp::Add, v.into(), Operand::Imm(31));
                let n = self.u32op(BinOp::Div, plus.into(), Operand::Imm(32));
                Some(self.u32op(BinOp::Min, n.into(), Operand::Imm(i64::from(warps))))
            }
        };
        let not_first = self.setp(Cmp::Ne, Ty::U32, in_group.into(), Operand::Imm(0));
        self.guarded(
            not_first,
            false,
            Op::Bra {
                target: after_fold.clone(),
                uni: true,
            },
        );
        let bound = count.unwrap_or_else(|| {
            let w = self.reg(RegClass::B32);
            self.op(Op::Mov {
                ty: Ty::U32,
                dst: w,
                src: Operand::Imm(i64::from(warps)),
            });
            w
        });
        let has = self.below(lane.into(), bound.into());
        let v = self.reg(class(d));
        self.op(Op::Mov {
            ty: bits_or_float(d),
            dst: v,
            src: part.into(),
        });
        let first_entry = self.u32op(BinOp::Mul, group.into(), Operand::Imm(i64::from(warps)));
        let entry = self.u32op(BinOp::Add, first_entry.into(), lane.into());
        let a = self.collective_addr(c, entry.into());
        self.shared_access_if(has, true, d, a, v);
        let total = self.warp_reduce(&fold, v, Some(bound));
        self.op(Op::Mov {
            ty: bits_or_float(d),
            dst: result,
            src: total.into(),
        });
        self.op(Op::Label(after_fold));
        if !r.broadcast {
            return Ok(result);
        }
        // The group's rank 0 shares the result through its group's slot.
        self.warp_group_hand_out(c, warps, group, d, result, &mut steps)
    }

    /// The block part of a reduction, through the plan's shared memory at the plan's steps; the
    /// result is at thread 0 (every thread with broadcast).
    fn block_reduce(
        &mut self,
        op: OpId,
        r: &Reduction,
        d: DType,
        acc: Reg,
        valid: Option<Reg>,
        c: &Collective,
    ) -> Lowered<Reg> {
        let threads = self.plan.block_threads;
        let tid = self.tid();
        let lane = self.u32op(BinOp::Rem, tid.into(), Operand::Imm(32));
        let warp = self.u32op(BinOp::Div, tid.into(), Operand::Imm(32));
        let full = Operand::Imm(-1);
        let fold = WarpFold {
            op: r.op,
            d,
            w: 32,
            rank: lane,
            mask: full,
        };
        let mut steps = Steps::new(op, &c.steps);
        let skip_write = self.label();
        let after_raking = self.label();
        let result = self.reg(class(d));
        match r.algorithm {
            ReduceAlgorithm::WarpReductions => {
                // Each warp's share of the valid count.
                let limit = valid.map(|v| {
                    let start = self.u32op(BinOp::Mul, warp.into(), Operand::Imm(32));
                    self.share_of(v, Some(start.into()), Operand::Imm(32))
                });
                let part = self.warp_reduce(&fold, acc, limit);
                self.enter_step(&mut steps)?;
                // Lane 0 of each warp with a valid thread shares its warp's value.
                let lead = self.setp(Cmp::Ne, Ty::U32, lane.into(), Operand::Imm(0));
                self.guarded(
                    lead,
                    false,
                    Op::Bra {
                        target: skip_write.clone(),
                        uni: false,
                    },
                );
                if let Some(l) = limit {
                    let none = self.setp(Cmp::Eq, Ty::U32, l.into(), Operand::Imm(0));
                    self.guarded(
                        none,
                        false,
                        Op::Bra {
                            target: skip_write.clone(),
                            uni: false,
                        },
                    );
                }
                let a = self.collective_addr(c, warp.into());
                self.shared_value(false, d, a, part);
                self.op(Op::Label(skip_write));
                self.enter_step(&mut steps)?;
                // Warp 0 reduces the shared values of warps with a valid thread.
                let warps = c.entries;
                let count = match valid {
                    None => None,
                    Some(v) => {
                        let plus = self.u32op(BinOp::Add, v.into(), Operand::Imm(31));
                        let n = self.u32op(BinOp::Div, plus.into(), Operand::Imm(32));
                        Some(self.u32op(BinOp::Min, n.into(), Operand::Imm(warps as i64)))
                    }
                };
                self.skip_other_warps(warp, &after_raking);
                let bound = count
                    .map(Operand::from)
                    .unwrap_or(Operand::Imm(warps as i64));
                let has = self.below(lane.into(), bound);
                let v = self.reg(class(d));
                self.op(Op::Mov {
                    ty: bits_or_float(d),
                    dst: v,
                    src: part.into(),
                });
                let a = self.collective_addr(c, lane.into());
                self.shared_access_if(has, true, d, a, v);
                let limit = Some(count.unwrap_or_else(|| {
                    let w = self.reg(RegClass::B32);
                    self.op(Op::Mov {
                        ty: Ty::U32,
                        dst: w,
                        src: Operand::Imm(warps as i64),
                    });
                    w
                }));
                let total = self.warp_reduce(&fold, v, limit);
                self.op(Op::Mov {
                    ty: bits_or_float(d),
                    dst: result,
                    src: total.into(),
                });
            }
            ReduceAlgorithm::Raking | ReduceAlgorithm::RakingCommutativeOnly => {
                let commutative_only = r.algorithm == ReduceAlgorithm::RakingCommutativeOnly;
                // With commutative-only raking, warp 0 keeps its values and the other threads
                // share theirs; otherwise every thread shares, in rank order: the plan's split.
                let Some(raking) = c.raking else {
                    return Err(self.missing(op, "raking split"));
                };
                let (shared_from, shared) = (raking.first, raking.shared);
                self.enter_step(&mut steps)?;
                let count =
                    valid.map(|v| self.u32op(BinOp::Min, v.into(), Operand::Imm(threads as i64)));
                let writes = self.setp(
                    Cmp::Ge,
                    Ty::U32,
                    tid.into(),
                    Operand::Imm(shared_from as i64),
                );
                if let Some(n) = count {
                    let ok = self.below(tid.into(), n.into());
                    self.op(Op::PredBin {
                        op: BinOp::And,
                        dst: writes,
                        a: writes,
                        b: ok,
                    });
                }
                let idx = self.u32op(BinOp::Sub, tid.into(), Operand::Imm(shared_from as i64));
                let a = self.collective_addr(c, idx.into());
                self.shared_access_if(writes, false, d, a, acc);
                self.enter_step(&mut steps)?;
                self.skip_other_warps(warp, &after_raking);
                // Lane l folds shared entries [l * seg, (l + 1) * seg) in order.
                let seg = raking.segment.max(1);
                let mut have = if commutative_only {
                    // Its own value counts if its thread is valid.
                    count.map(|n| self.below(lane.into(), n.into()))
                } else {
                    None
                };
                let mut folded = if commutative_only { Some(acc) } else { None };
                let seg_base = self.segment_addr(c, lane);
                for j in 0..seg {
                    // The entry exists (statically, unless the last lanes' segments run past
                    // the shared entries) and its thread is valid.
                    let may_miss = 31 * seg + j >= shared;
                    let exists = if may_miss || count.is_some() {
                        let index = self.reg(RegClass::B32);
                        self.op(Op::Mad {
                            ty: Ty::U32,
                            dst: index,
                            a: lane.into(),
                            b: Operand::Imm(seg as i64),
                            c: Operand::Imm(j as i64),
                        });
                        let limit = match count {
                            // Entry e is thread e + shared_from's value: the sharing
                            // threads' share of the count.
                            Some(n) => {
                                let from = Operand::Imm(shared_from as i64);
                                (self.share_of(n, Some(from), Operand::Imm(shared as i64))).into()
                            }
                            None => Operand::Imm(shared as i64),
                        };
                        Some(self.below(index.into(), limit))
                    } else {
                        None
                    };
                    let v = self.reg(class(d));
                    let load = Op::Ld {
                        space: Space::Shared,
                        ty: mem_ty(d),
                        dst: smallvec![v],
                        addr: Address {
                            base: AddrBase::Reg(seg_base),
                            offset: (j * c.elem_bytes) as i64,
                        },
                    };
                    match exists {
                        Some(e) => self.guarded(e, false, load),
                        None => self.op(load),
                    }
                    folded = Some(match folded {
                        None => {
                            have = exists;
                            v
                        }
                        Some(prev) => {
                            let sum = self.combine_op(r.op, d, prev, v);
                            match (have, exists) {
                                // Both are values.
                                (None, None) => sum,
                                // `prev` is a value: take the entry if it exists.
                                (None, Some(e)) => self.pick(d, e, sum, prev),
                                // The entry is a value: `prev` joins it if it is one.
                                (Some(h), None) => {
                                    have = None;
                                    self.pick(d, h, sum, v)
                                }
                                // `prev` may be no value yet: sum if both, the entry alone
                                // if only it, else `prev`.
                                (Some(h), Some(e)) => {
                                    let both = self.reg(RegClass::Pred);
                                    self.op(Op::PredBin {
                                        op: BinOp::And,
                                        dst: both,
                                        a: h,
                                        b: e,
                                    });
                                    let pick = self.pick(d, both, sum, prev);
                                    let only_new = self.reg(RegClass::Pred);
                                    self.op(Op::PredNot {
                                        dst: only_new,
                                        a: h,
                                    });
                                    let pick2 = self.pick(d, only_new, v, pick);
                                    let h2 = self.reg(RegClass::Pred);
                                    self.op(Op::PredBin {
                                        op: BinOp::Or,
                                        dst: h2,
                                        a: h,
                                        b: e,
                                    });
                                    have = Some(h2);
                                    pick2
                                }
                            }
                        }
                    });
                }
                let folded = folded.unwrap_or(acc);
                // Lanes that hold a value: a prefix of the warp (entries are in rank order).
                let lanes = match count {
                    None => None,
                    Some(n) => {
                        let rest = if commutative_only {
                            // Own values of lanes below n, or raked entries below n - 32.
                            let own = self.u32op(BinOp::Min, n.into(), Operand::Imm(32));
                            let beyond = self.u32op(BinOp::Max, n.into(), Operand::Imm(32));
                            let past = self.u32op(BinOp::Sub, beyond.into(), Operand::Imm(32));
                            let plus =
                                self.u32op(BinOp::Add, past.into(), Operand::Imm(seg as i64 - 1));
                            let raked =
                                self.u32op(BinOp::Div, plus.into(), Operand::Imm(seg as i64));
                            self.u32op(BinOp::Max, own.into(), raked.into())
                        } else {
                            let plus =
                                self.u32op(BinOp::Add, n.into(), Operand::Imm(seg as i64 - 1));
                            self.u32op(BinOp::Div, plus.into(), Operand::Imm(seg as i64))
                        };
                        Some(rest)
                    }
                };
                let limit = if commutative_only || lanes.is_some() {
                    lanes
                } else if shared.div_ceil(seg) >= 32 {
                    // Every lane holds a value.
                    None
                } else {
                    // Every lane with an existing segment holds a value.
                    let n = shared.div_ceil(seg);
                    let w = self.reg(RegClass::B32);
                    self.op(Op::Mov {
                        ty: Ty::U32,
                        dst: w,
                        src: Operand::Imm(n as i64),
                    });
                    Some(w)
                };
                let total = self.warp_reduce(&fold, folded, limit);
                self.op(Op::Mov {
                    ty: bits_or_float(d),
                    dst: result,
                    src: total.into(),
                });
            }
        }
        self.op(Op::Label(after_raking));
        if !r.broadcast {
            return Ok(result);
        }
        // Thread 0 shares the result; every thread reads it.
        self.block_hand_out(c, d, result, &mut steps)
    }
}

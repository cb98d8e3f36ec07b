//! Lowering of scans: each thread scans its blocked items; a (logical) warp scans the thread
//! totals with a `shfl.sync.up` tree (rank `r` takes `r - d` for `d = 1, 2, 4, ...` where the
//! shuffle says that rank exists, earlier values on the left, so any associative operator
//! works). A block either shares each warp's total through the plan's shared memory (warp
//! scans: the last lane of each warp writes at the plan's first step, every thread reads after
//! the planned barrier and folds the totals of the warps before its own) or rakes: every thread
//! shares its total, the first warp scans the plan's padded segments and writes each entry's
//! prefix back, and every thread reads its own. A group of whole warps scans by warp scans
//! like a block, over its own warps' totals (whatever algorithm was asked). A prefix
//! callback's value is rank 0's, handed to the group through one more shared slot (a block, or
//! the group's own slot for a group of whole warps) or a shuffle (a warp).

use super::builder::{
    Collective, Emitter, Lowered, Steps, bits_or_float, class, segment_clamp, up_clamp,
};
use super::expr::Ctx;
use crate::ir::ops::{ScanAlgorithm, ScanSpec};
use crate::ir::{DType, OpId, RegionId};
use crate::ptx::*;
use rustc_hash::FxHashMap;

impl Emitter<'_> {
    /// Lowers a scan; `lower_callback` lowers the ops of its prefix callback in place.
    pub(crate) fn scan(
        &mut self,
        op: OpId,
        sc: &ScanSpec,
        lower_callback: impl FnOnce(&mut Self, RegionId) -> Lowered,
    ) -> Lowered {
        let d = self.ir.datas[sc.src.index()].dtype;
        let x = self.data_regs(sc.src).to_vec();
        let out = self.data_regs(sc.dst).to_vec();
        if x.is_empty() || out.len() != x.len() {
            return Err(self.missing(op, "registers of the source and result, item for item"));
        }
        let threads = self.ir.group_threads(sc.group);
        // A block's scan goes through the plan's shared memory, at its steps in order.
        let planned = self.planned_collective(op)?;
        let mut steps = Steps::new(op, planned.as_ref().map_or(&[][..], |c| &c.steps));
        let block_plan = |me: &Self| {
            planned
                .as_ref()
                .ok_or_else(|| me.missing(op, "shared-memory plan of a block collective"))
        };
        let w = threads.min(32);
        let k = x.len() as i64;
        // With a valid count, an item takes part only where its position (the plan's,
        // blocked: rank * K + i) is below it.
        let valid = sc.valid.map(|e| {
            let mut memo = FxHashMap::default();
            self.eval(e, &Ctx::default(), &mut memo)
        });
        let group_rank = valid.map(|_| {
            let tid = self.tid();
            self.u32op(BinOp::Rem, tid.into(), Operand::Imm(w as i64))
        });
        let positions = match valid {
            Some(_) => Some(self.counted_positions(op)?),
            None => None,
        };
        // Thread-local inclusive scan.
        let mut t = vec![x[0]];
        for (i, &v) in x.iter().enumerate().skip(1) {
            let prev = t[t.len() - 1];
            let n = self.combine_op(sc.op, d, prev, v);
            let n = match (valid, group_rank, &positions) {
                (Some(vn), Some(r), Some(form)) => {
                    let ok = self.position_below(form, w, (r, i as u32), vn, Ty::U32);
                    self.pick(d, ok, n, prev)
                }
                _ => n,
            };
            t.push(n);
        }
        let total = t[t.len() - 1];
        let tid = self.tid();
        let rank = self.u32op(BinOp::Rem, tid.into(), Operand::Imm(w as i64));
        let mask = self.group_mask(w);
        let whole_warps = self.ir.groups[sc.group.index()].kind.whole_warps();
        // For groups of whole warps: the warps per group and the thread's group.
        let mut group = None;
        let (prefix, has_prefix, aggregate) = if threads <= 32 {
            let (incl, excl, has_excl) = self.warp_scan_totals(sc, d, total, rank, w, mask);
            let c = segment_clamp(w);
            // The total is the inclusive value of the last rank holding a valid position.
            let last: Operand = match valid {
                None => Operand::Imm(w as i64 - 1),
                Some(vn) => {
                    let plus = self.u32op(BinOp::Add, vn.into(), Operand::Imm(k - 1));
                    let ranks = self.u32op(BinOp::Div, plus.into(), Operand::Imm(k));
                    let ranks = self.u32op(BinOp::Min, ranks.into(), Operand::Imm(w as i64));
                    let ranks = self.u32op(BinOp::Max, ranks.into(), Operand::Imm(1));
                    self.u32op(BinOp::Sub, ranks.into(), Operand::Imm(1)).into()
                }
            };
            let agg = sc
                .aggregate
                .map(|_| self.shuffle_value(ShflMode::Idx, incl, last, c, mask));
            (excl, has_excl, agg)
        } else if let Some(warps) = whole_warps {
            // Groups of whole warps always scan by warp scans.
            let cp = block_plan(self)?;
            let (incl, excl, has_excl) = self.warp_scan_totals(sc, d, total, rank, w, mask);
            let place = self.warp_group_place(warps);
            group = Some((warps, place.group));
            let first = self.u32op(
                BinOp::Mul,
                place.group.into(),
                Operand::Imm(i64::from(warps)),
            );
            let totals = WarpTotals {
                lane: rank,
                warp: place.warp,
                rank: place.in_group,
                first: Some(first),
                count: warps,
            };
            self.warp_totals_prefix(op, sc, d, (incl, excl, has_excl), totals, cp, &mut steps)?
        } else if sc.algorithm != ScanAlgorithm::WarpScans {
            let cp = block_plan(self)?;
            let (p, h, a) = self.raking_prefix(op, sc, d, total, cp, &mut steps)?;
            (p, h, Some(a))
        } else {
            let cp = block_plan(self)?;
            let (incl, excl, has_excl) = self.warp_scan_totals(sc, d, total, rank, w, mask);
            let warp = self.u32op(BinOp::Div, tid.into(), Operand::Imm(32));
            let totals = WarpTotals {
                lane: rank,
                warp,
                rank: warp,
                first: None,
                count: cp.entries,
            };
            self.warp_totals_prefix(op, sc, d, (incl, excl, has_excl), totals, cp, &mut steps)?
        };
        // A prefix callback sees the total, runs its ops, and seeds the scan like an initial
        // value: rank 0's prefix, handed to the group.
        let seed = match &sc.callback {
            None => sc.initial.map(|e| {
                let mut memo = FxHashMap::default();
                self.eval(e, &Ctx::default(), &mut memo)
            }),
            Some(cb) => {
                if let (Some(a), Some(agg)) = (sc.aggregate, aggregate) {
                    self.mov_into(d, a, 0, agg);
                }
                // The prefix is taken before the callback's ops (which may advance the state
                // it was read from) run.
                let mut memo = FxHashMap::default();
                let p = self.eval(cb.prefix, &Ctx::default(), &mut memo);
                let held = self.reg(class(d));
                self.op(Op::Mov {
                    ty: bits_or_float(d),
                    dst: held,
                    src: p.into(),
                });
                // Rank 0's prefix seeds the whole group.
                let seed = match (&planned, group) {
                    (Some(cp), Some((warps, g))) if cp.prefix_slot => {
                        self.warp_group_hand_out(cp, warps, g, d, held, &mut steps)?
                    }
                    (Some(cp), None) if cp.prefix_slot => {
                        let tid = self.tid();
                        self.enter_step(&mut steps)?;
                        let first = self.setp(Cmp::Eq, Ty::U32, tid.into(), Operand::Imm(0));
                        let at = self.collective_slot_addr(cp, cp.prefix_slot_index());
                        self.shared_access_if(first, false, d, at, held);
                        self.enter_step(&mut steps)?;
                        let all = self.reg(class(d));
                        let address = Address {
                            base: AddrBase::Reg(at),
                            offset: 0,
                        };
                        self.shared_access(true, d, address, all);
                        all
                    }
                    _ if threads > 1 => {
                        let c = segment_clamp(w);
                        self.shuffle_value(ShflMode::Idx, held, Operand::Imm(0), c, mask)
                    }
                    _ => held,
                };
                lower_callback(self, cb.body)?;
                Some(seed)
            }
        };
        // The initial value goes first.
        let (prefix, has_prefix) = match seed {
            None => (prefix, Some(has_prefix)),
            Some(init) => {
                let joined = self.combine_op(sc.op, d, init, prefix);
                (self.pick(d, has_prefix, joined, init), None)
            }
        };
        for (i, &dst) in out.iter().enumerate() {
            let v = if sc.inclusive {
                let joined = self.combine_op(sc.op, d, prefix, t[i]);
                match has_prefix {
                    None => joined,
                    Some(h) => self.pick(d, h, joined, t[i]),
                }
            } else if i == 0 {
                prefix
            } else {
                self.combine_op(sc.op, d, prefix, t[i - 1])
            };
            self.op(Op::Mov {
                ty: bits_or_float(d),
                dst,
                src: v.into(),
            });
        }
        if let (Some(a), Some(agg)) = (sc.aggregate, aggregate) {
            self.mov_into(d, a, 0, agg);
        }
        Ok(())
    }
}

/// The warps' totals a thread (of lane `lane`) folds in a scan by warp scans: `count` entries
/// from `first` (entry 0 where `None`), of which the thread's warp (entry `warp`) is the
/// `rank`th.
struct WarpTotals {
    lane: Reg,
    warp: Reg,
    rank: Reg,
    first: Option<Reg>,
    count: u32,
}

impl Emitter<'_> {
    /// The group part of a scan by warp scans, given the warp scan's `(inclusive, exclusive,
    /// has exclusive)` of this thread: the last lane of each warp shares the warp's total at
    /// the plan's first step, every thread reads its group's totals at the next and folds
    /// those of the warps before its own. Returns this thread's prefix, whether it has one,
    /// and (where the scan has an aggregate) the group's total.
    #[allow(clippy::too_many_arguments)]
    fn warp_totals_prefix(
        &mut self,
        op: OpId,
        sc: &ScanSpec,
        d: DType,
        (incl, excl, has_excl): (Reg, Reg, Reg),
        totals: WarpTotals,
        cp: &Collective,
        steps: &mut Steps,
    ) -> Lowered<(Reg, Reg, Option<Reg>)> {
        let WarpTotals {
            lane,
            warp,
            rank,
            first,
            count,
        } = totals;
        // The last lane of each warp shares the warp's total.
        self.enter_step(steps)?;
        let last = self.setp(Cmp::Eq, Ty::U32, lane.into(), Operand::Imm(31));
        let slot = self.collective_addr(cp, warp.into());
        self.shared_access_if(last, false, d, slot, incl);
        self.enter_step(steps)?;
        // Fold the totals of the warps before this one (and, for the aggregate, all).
        let mut before: Option<(Reg, Reg)> = None;
        let mut all: Option<Reg> = None;
        for j in 0..count {
            let index = match first {
                None => Operand::Imm(i64::from(j)),
                Some(f) => self
                    .u32op(BinOp::Add, f.into(), Operand::Imm(i64::from(j)))
                    .into(),
            };
            let a = self.collective_addr(cp, index);
            let v = self.reg(class(d));
            self.shared_value(true, d, a, v);
            if sc.aggregate.is_some() {
                all = Some(match all {
                    None => v,
                    Some(prev) => self.combine_op(sc.op, d, prev, v),
                });
            }
            let counts = self.setp(Cmp::Gt, Ty::U32, rank.into(), Operand::Imm(i64::from(j)));
            before = Some(match before {
                None => (v, counts),
                Some((acc, had)) => {
                    let sum = self.combine_op(sc.op, d, acc, v);
                    let next = self.pick(d, counts, sum, acc);
                    (next, had)
                }
            });
        }
        let Some((warp_prefix, has_warp)) = before else {
            return Err(self.missing(op, "shared entries of the warps' totals"));
        };
        // prefix = warp prefix (op) the thread's exclusive prefix, where each exists.
        let both = self.combine_op(sc.op, d, warp_prefix, excl);
        let with_warp = self.pick(d, has_excl, both, warp_prefix);
        let prefix = self.pick(d, has_warp, with_warp, excl);
        let has = self.reg(RegClass::Pred);
        self.op(Op::PredBin {
            op: BinOp::Or,
            dst: has,
            a: has_warp,
            b: has_excl,
        });
        Ok((prefix, has, all))
    }
}

impl Emitter<'_> {
    /// The (logical) warp's inclusive scan of the thread totals: this thread's inclusive
    /// value, its exclusive prefix (the inclusive value of rank - 1), and whether it has one.
    fn warp_scan_totals(
        &mut self,
        sc: &ScanSpec,
        d: DType,
        total: Reg,
        rank: Reg,
        w: u32,
        mask: Operand,
    ) -> (Reg, Reg, Reg) {
        // Inclusive scan of thread totals within the (logical) warp.
        let up_c = up_clamp(w);
        let mut incl = total;
        let mut off = 1;
        while off < w {
            // Rank r takes r - off where that rank exists: the shuffle says so.
            let (other, has) =
                self.shuffle_in_range(ShflMode::Up, incl, Operand::Imm(off as i64), up_c, mask);
            let sum = self.combine_op(sc.op, d, other, incl);
            incl = self.pick(d, has, sum, incl);
            off *= 2;
        }
        // This thread's exclusive prefix within the warp: the inclusive value of rank - 1.
        let excl = self.shuffle_value(ShflMode::Up, incl, Operand::Imm(1), up_c, mask);
        let has_excl = self.setp(Cmp::Ne, Ty::U32, rank.into(), Operand::Imm(0));
        (incl, excl, has_excl)
    }

    /// [`Self::shared_value`] at a collective's entry `index`.
    fn shared_at(&mut self, load: bool, d: DType, cp: &Collective, index: Operand, v: Reg) {
        let a = self.collective_addr(cp, index);
        self.shared_value(load, d, a, v);
    }

    /// The raking block part of a scan: every thread shares its total; lane `l` of the first
    /// warp scans entries `[l * seg, (l + 1) * seg)` in order, the lanes scan their segment
    /// totals, and each entry gets its exclusive prefix written back (re-reading the entries
    /// for `Raking`, from registers for `RakingMemoize`). Returns this thread's prefix, whether
    /// it has one, and the block total.
    fn raking_prefix(
        &mut self,
        op: OpId,
        sc: &ScanSpec,
        d: DType,
        total: Reg,
        cp: &Collective,
        steps: &mut Steps,
    ) -> Lowered<(Reg, Reg, Reg)> {
        let tid = self.tid();
        let Some(raking) = cp.raking else {
            return Err(self.missing(op, "raking segments"));
        };
        let seg = raking.segment.max(1);
        self.enter_step(steps)?;
        self.shared_at(false, d, cp, tid.into(), total);
        self.enter_step(steps)?;
        let skip = self.label();
        let not_first = self.setp(Cmp::Ge, Ty::U32, tid.into(), Operand::Imm(32));
        self.guarded(
            not_first,
            false,
            Op::Bra {
                target: skip.clone(),
                uni: true,
            },
        );
        let lane = tid;
        let base = self.segment_addr(cp, lane);
        let entry = |j: u32| Address {
            base: AddrBase::Reg(base),
            offset: (j * cp.elem_bytes) as i64,
        };
        // Up-sweep: the segment's running values.
        let mut running = Vec::with_capacity(seg as usize);
        for j in 0..seg {
            let v = self.reg(class(d));
            self.shared_access(true, d, entry(j), v);
            let r = match running.last() {
                None => v,
                Some(&prev) => self.combine_op(sc.op, d, prev, v),
            };
            running.push(r);
        }
        let seg_total = running[running.len() - 1];
        let full = Operand::Imm(-1);
        let (incl, seg_excl, lane_has) = self.warp_scan_totals(sc, d, seg_total, lane, 32, full);
        let block_total = self.shuffle_value(
            ShflMode::Idx,
            incl,
            Operand::Imm(31),
            segment_clamp(32),
            full,
        );
        // Down-sweep: entry j's prefix = segment prefix (op) running value of entry j - 1.
        // Without memoizing, the running values are recomputed from the entries, each read
        // before its prefix overwrites it (the second pass over shared memory).
        let memoize = sc.algorithm == ScanAlgorithm::RakingMemoize;
        let mut again: Option<Reg> = None;
        for j in 0..seg {
            let before = if j == 0 {
                None
            } else if memoize {
                Some(running[j as usize - 1])
            } else {
                again
            };
            let p = match before {
                None => seg_excl,
                Some(b) => {
                    let joined = self.combine_op(sc.op, d, seg_excl, b);
                    self.pick(d, lane_has, joined, b)
                }
            };
            if !memoize && j + 1 < seg {
                let v = self.reg(class(d));
                self.shared_access(true, d, entry(j), v);
                again = Some(match again {
                    None => v,
                    Some(a) => self.combine_op(sc.op, d, a, v),
                });
            }
            self.shared_access(false, d, entry(j), p);
        }
        let last = self.setp(Cmp::Eq, Ty::U32, lane.into(), Operand::Imm(31));
        let slot = self.collective_addr(cp, Operand::Imm(cp.entries as i64));
        self.shared_access_if(last, false, d, slot, block_total);
        self.op(Op::Label(skip));
        self.enter_step(steps)?;
        let prefix = self.reg(class(d));
        self.shared_at(true, d, cp, tid.into(), prefix);
        let agg = self.reg(class(d));
        self.shared_at(true, d, cp, Operand::Imm(cp.entries as i64), agg);
        let has = self.setp(Cmp::Ne, Ty::U32, tid.into(), Operand::Imm(0));
        Ok((prefix, has, agg))
    }
}

//! Lowering of the global side of loads and stores: global accesses, scalar or vector (the
//! exchanges of the transposing algorithms run before a store's moves and after a load's;
//! `emit.rs` puts them there).
//!
//! An access group of `G` threads (see [`TransferPlan`]) moves its tile at
//! `offset + group_index * G * K`; rank `r` moves item `i` at tile element
//! `i * item_stride + r * thread_stride`. With a valid count, item `i` moves only if that
//! element is below the access group's valid items: a warp's or logical warp's own count, or
//! its share of a count of the block's tile ([`ValidOf`]), computed once per group
//! (`valid_bounds`, `share`) by the builder's one formula of a group's share (`share_of`, which
//! the block reductions' warps and raking threads take their shares by too).
//!
//! Where bounds are checked ([`Bounds::Checked`](crate::ir::Bounds)), the buffer's length (a
//! hidden parameter) joins the count there: positions at or past `len - offset` are past the
//! valid items. So a tile wholly inside the buffer still takes the unguarded (or vector) path
//! after one comparison per thread (a scalar load of a few items guards each item instead, on
//! every tile: `scalar_moves` says why), and the transposing algorithms' exchanges skip the same
//! positions the global accesses skip. Indices are 32-bit: the runtime passes a longer buffer's
//! length as `u32::MAX`, and no valid position's index wraps, since each is below the length.

use super::builder::{Emitter, Lowered, bits_or_float, mem_ty};
use super::expr::Ctx;
use crate::ir::ops::{GroupKind, Transfer, ValidOf};
use crate::ir::{Algorithm, CheckKind, DType, OpId};
use crate::planner::TransferPlan;
use crate::ptx::*;
use rustc_hash::FxHashMap;
use smallvec::smallvec;

/// The most items a scalar load guards item by item on every tile, full or not (see
/// `Emitter::scalar_moves`); the copy suite measured 8 and 16 items as fast either way.
const PREDICATED_LOAD_ITEMS: usize = 16;

/// Where one thread's accesses go.
struct Access {
    /// Byte address of this thread's item 0.
    addr: Reg,
    /// This thread's rank in its access group.
    rank: Reg,
    /// Which of its items are valid.
    valid: Valid,
}

/// Which of a thread's items are valid.
#[derive(Clone, Copy)]
enum Valid {
    /// Every item.
    All,
    /// `valid_g - rank * thread_stride` (signed): item `i` is valid iff `i * item_stride < rem`.
    Rem(Reg),
    /// The thread's only item is valid iff the predicate holds.
    Only(Reg),
}

/// A transfer's valid count: its register and what it counts.
#[derive(Clone, Copy)]
struct Count {
    reg: Reg,
    of: ValidOf,
}

/// The valid items of one thread's access group.
struct Bounds {
    /// The count they come from: the transfer's, cut to the buffer's room where it counts the
    /// block's tile (or the room itself where the transfer has none).
    count: Count,
    /// The buffer's room that still cuts a group's own count (see `valid_bounds`).
    room: Option<Reg>,
    /// Where the access group's tile starts in the block's tile (`None`: at 0, the group is
    /// the block).
    start: Option<Reg>,
    /// Valid items of the access group's tile (`0..=group_tile`), once computed.
    share: Option<Reg>,
}

/// The global side of a load or store, prepared by [`Emitter::global_side`].
pub(crate) struct GlobalSide {
    plan: TransferPlan,
    is_load: bool,
    space: Space,
    dtype: DType,
    ptr: Reg,
    offset: Reg,
    /// This thread's rank in its access group, and where the group's tile starts.
    group: (Reg, Option<Reg>),
    bounds: Option<Bounds>,
    /// With one item per thread, the item's validity (`None`: it is always valid).
    only: Option<Reg>,
    /// The valid bound as a count of the block's tile, as the transfer's exchanges take it.
    pub(crate) exchange_bound: Option<Reg>,
}

/// One load's or store's global moves: direction, space, element type, plan and addresses.
#[derive(Clone, Copy)]
struct Moves<'a> {
    is_load: bool,
    space: Space,
    dtype: DType,
    plan: &'a TransferPlan,
    a: &'a Access,
}

/// Whether a transfer's `offset + position` may wrap past `u32::MAX` for a position it
/// counts as valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wraps {
    /// It may: the offset is the user's.
    May,
    /// It cannot (see [`Emitter::only_valid`]).
    Never,
}

impl Emitter<'_> {
    /// The block tile's offset and valid count of a transfer. A count of a block group's own
    /// tile is a count of the block's tile.
    fn tile_of(&mut self, t: &Transfer, plan: &TransferPlan) -> (Reg, Option<Count>) {
        let mut memo = FxHashMap::default();
        let ctx = Ctx::default();
        let offset = match (t.offset, plan.tiles) {
            (Some(e), _) => self.eval(e, &ctx, &mut memo),
            (None, Some(tiles)) => self.loop_var(tiles, 1),
            (None, None) => {
                let ctaid = self.special(Special::Ctaid(Dim::X));
                self.u32op(
                    BinOp::Mul,
                    ctaid.into(),
                    Operand::Imm(plan.block_tile as i64),
                )
            }
        };
        let per_group = self.ir.groups[t.group.index()].kind != GroupKind::Block;
        let valid = match (t.valid, plan.tiles) {
            (Some(v), _) => Some(Count {
                reg: self.eval(v.count, &ctx, &mut memo),
                of: if per_group { v.of } else { ValidOf::Block },
            }),
            (None, Some(tiles)) => Some(Count {
                reg: self.loop_var(tiles, 2),
                of: ValidOf::Block,
            }),
            (None, None) => None,
        };
        (offset, valid)
    }

    /// This thread's rank in its access group, and where the group's tile starts in the
    /// block's tile (`None`: the access group is the block).
    fn access_group(&mut self, plan: &TransferPlan) -> (Reg, Option<Reg>) {
        let tid = self.tid();
        let g = plan.group_threads;
        if g == self.plan.block_threads {
            return (tid, None);
        }
        let rank = self.u32op(BinOp::Rem, tid.into(), Operand::Imm(g as i64));
        let index = self.u32op(BinOp::Div, tid.into(), Operand::Imm(g as i64));
        let start = self.u32op(
            BinOp::Mul,
            index.into(),
            Operand::Imm(plan.group_tile as i64),
        );
        (rank, Some(start))
    }

    /// The valid items of this thread's access group, from the transfer's count and the room
    /// its buffer leaves past the block's offset (`len - offset`, at least 0, where bounds are
    /// checked). A count of the block's tile is first cut to the room; a group's own count is
    /// cut to the group's share of the room (by [`Self::share`], computed once per group).
    fn valid_bounds(
        &mut self,
        count: Option<Count>,
        room: Option<Reg>,
        start: Option<Reg>,
    ) -> Option<Bounds> {
        let (count, room) = match (count, room) {
            (None, None) => return None,
            (None, Some(r)) => (
                Count {
                    reg: r,
                    of: ValidOf::Block,
                },
                None,
            ),
            (
                Some(Count {
                    reg,
                    of: ValidOf::Block,
                }),
                Some(r),
            ) => (
                Count {
                    reg: self.u32op(BinOp::Min, reg.into(), r.into()),
                    of: ValidOf::Block,
                },
                None,
            ),
            (Some(c), r) => (c, r),
        };
        Some(Bounds {
            count,
            room,
            start,
            share: None,
        })
    }

    /// Debug checks: the positions the thread's access group declares valid (its share of
    /// the transfer's valid count, or its whole tile where the transfer gives an offset and
    /// no count) end inside the buffer. A transfer with neither (a grid's tiles at their
    /// default offsets) is left to its guards: its last tiles may pass the end by design.
    fn check_range(
        &mut self,
        t: &Transfer,
        plan: &TransferPlan,
        offset: Reg,
        count: Option<Count>,
        start: Option<Reg>,
    ) {
        let Some(len) = (self.length64_reg(t.param)).or_else(|| self.length_reg(t.param)) else {
            return;
        };
        let tile = Operand::Imm(plan.group_tile as i64);
        let declared = match count {
            Some(Count {
                reg,
                of: ValidOf::Block,
            }) => self.block_share(plan, reg, start),
            Some(Count {
                reg,
                of: ValidOf::Group,
            }) => self.share_of(reg, None, tile),
            None if t.offset.is_some() => self.constant(DType::U32, u64::from(plan.group_tile)),
            None => return,
        };
        // end = offset + start + declared, in 64 bits.
        let mut end = self.reg(RegClass::B64);
        self.cvt(None, Ty::U64, Ty::U32, end, offset);
        for part in start.into_iter().chain([declared]) {
            let wide = self.reg(RegClass::B64);
            self.cvt(None, Ty::U64, Ty::U32, wide, part);
            let sum = self.reg(RegClass::B64);
            self.op(Op::Bin {
                op: BinOp::Add,
                ty: Ty::U64,
                dst: sum,
                a: end.into(),
                b: wide.into(),
            });
            end = sum;
        }
        let limit = if len.class == RegClass::B64 {
            len
        } else {
            let w = self.reg(RegClass::B64);
            self.cvt(None, Ty::U64, Ty::U32, w, len);
            w
        };
        let past = self.setp(Cmp::Gt, Ty::U64, end.into(), limit.into());
        let some = self.setp(Cmp::Ne, Ty::U32, declared.into(), Operand::Imm(0));
        let fail = self.both(Some(past), Some(some)).unwrap_or(past);
        let buffer = self.ir.params[t.param.index()].name.clone();
        self.record_failure(CheckKind::Range { buffer }, fail, end, limit);
    }

    /// The access group's valid items (`0..=group_tile`), computed once.
    fn share(&mut self, plan: &TransferPlan, b: &mut Bounds) -> Reg {
        if let Some(share) = b.share {
            return share;
        }
        let share = match b.count.of {
            ValidOf::Block => self.block_share(plan, b.count.reg, b.start),
            ValidOf::Group => {
                let tile = Operand::Imm(plan.group_tile as i64);
                self.share_of(b.count.reg, None, tile)
            }
        };
        let share = match b.room {
            Some(r) => {
                let fits = self.block_share(plan, r, b.start);
                self.u32op(BinOp::Min, share.into(), fits.into())
            }
            None => share,
        };
        b.share = Some(share);
        share
    }

    /// An access group's share of a count of the block's tile: `min(count - start, tile)`,
    /// none at or below its start (the builder's [`Emitter::share_of`]).
    fn block_share(&mut self, plan: &TransferPlan, count: Reg, start: Option<Reg>) -> Reg {
        let tile = Operand::Imm(plan.group_tile as i64);
        self.share_of(count, start.map(Operand::from), tile)
    }

    /// The bound as a count of the block's tile, as exchanges take it: the (cut) count itself
    /// when it is one, else the end of the access group's valid prefix (`start + share`), which
    /// bounds exactly the valid positions of the thread's own access group.
    fn block_bound(&mut self, plan: &TransferPlan, b: &mut Bounds) -> Reg {
        if b.count.of == ValidOf::Block {
            return b.count.reg;
        }
        let share = self.share(plan, b);
        match b.start {
            Some(s) => self.u32op(BinOp::Add, s.into(), share.into()),
            None => share,
        }
    }

    /// Address and valid bound of this thread's accesses.
    fn access(&mut self, g: &mut GlobalSide) -> Access {
        let plan = &g.plan;
        let (rank, start) = g.group;
        let base = match start {
            Some(s) => self.u32op(BinOp::Add, g.offset.into(), s.into()),
            None => g.offset,
        };
        let first = self.reg(RegClass::B32);
        self.op(Op::Mad {
            ty: Ty::U32,
            dst: first,
            a: rank.into(),
            b: Operand::Imm(plan.thread_stride as i64),
            c: base.into(),
        });
        let addr = self.reg(RegClass::B64);
        self.op(Op::MadWide {
            ty: Ty::U32,
            dst: addr,
            a: first.into(),
            b: Operand::Imm(g.dtype.bytes() as i64),
            c: g.ptr.into(),
        });
        if plan.items == 1 {
            let valid = g.only.map_or(Valid::All, Valid::Only);
            return Access { addr, rank, valid };
        }
        let Some(b) = g.bounds.as_mut() else {
            return Access {
                addr,
                rank,
                valid: Valid::All,
            };
        };
        let plan = g.plan.clone();
        let share = self.share(&plan, b);
        let scaled = self.u32op(
            BinOp::Mul,
            rank.into(),
            Operand::Imm(plan.thread_stride as i64),
        );
        let rem = self.reg(RegClass::B32);
        self.op(Op::Bin {
            op: BinOp::Sub,
            ty: Ty::S32,
            dst: rem,
            a: share.into(),
            b: scaled.into(),
        });
        Access {
            addr,
            rank,
            valid: Valid::Rem(rem),
        }
    }

    /// The validity of a thread's only item: its position is below the transfer's count, and
    /// (where bounds are checked) its element is below the buffer's length and was reached
    /// without wrapping past `u32::MAX`. The element `offset + position` is the address's own
    /// index, so the length and wrap tests take only one compare each and hang off the
    /// address, not off the count: the count (a uniform value the user computes from the
    /// block's index) is compared last, as it is without bounds checks. Measured on the H200
    /// against the room form (`position < min(count, len - offset)`), the one-item copy in
    /// blocks of 256 keeps 99.1% of the unchecked kernel's bandwidth instead of 98.6%: the
    /// room form put two more uniform operations between the block's index and the load.
    ///
    /// With `wraps: false` the sum cannot wrap and the wrap test is left out (without it the
    /// same copy keeps 100%): the offset is the block's (`%ctaid.x` times the tile), whose
    /// positions a launch keeps below 2^32 (see [`ImageParts::tile_offsets`]), or a `tiles`
    /// loop's origin counted by the loop's own valid count, which a wrapped sum exceeds.
    ///
    /// [`ImageParts::tile_offsets`]: crate::runtime::ImageParts::tile_offsets
    fn only_valid(
        &mut self,
        plan: &TransferPlan,
        count: Option<Count>,
        len: Option<Reg>,
        place: (Reg, Wraps),
        group: (Reg, Option<Reg>),
    ) -> Option<Reg> {
        let (offset, wraps) = place;
        let (rank, start) = group;
        let pos = self.u32op(
            BinOp::Mul,
            rank.into(),
            Operand::Imm(plan.thread_stride as i64),
        );
        // The item's position in the tile its count counts.
        let in_block = match start {
            Some(s) => self.u32op(BinOp::Add, s.into(), pos.into()),
            None => pos,
        };
        let inside = len.and_then(|len| {
            let element = self.u32op(BinOp::Add, offset.into(), in_block.into());
            let below = self.setp(Cmp::Lt, Ty::U32, element.into(), len.into());
            // A sum below the offset wrapped past u32::MAX.
            let unwrapped = (wraps == Wraps::May)
                .then(|| self.setp(Cmp::Ge, Ty::U32, element.into(), offset.into()));
            self.both(Some(below), unwrapped)
        });
        let counted = count.map(|c| {
            let at = match c.of {
                ValidOf::Block => in_block,
                ValidOf::Group => pos,
            };
            self.setp(Cmp::Lt, Ty::U32, at.into(), c.reg.into())
        });
        self.both(inside, counted)
    }

    /// The elements a buffer of `len` elements has from `offset` on: `len - offset` where the
    /// length is above the offset, else 0 (so no index wraps past 2^32).
    fn room(&mut self, len: Reg, offset: Reg) -> Reg {
        let above = self.u32op(BinOp::Max, len.into(), offset.into());
        self.u32op(BinOp::Sub, above.into(), offset.into())
    }

    /// Scalar global accesses of every slot. With a valid count and several items, a thread
    /// whose every item is valid (all but the last tile's) takes an unguarded copy of the
    /// moves, the others one guarded item by item: no per-item predicate stays live across
    /// what runs between a load and a store of the same tile. A load of at most
    /// [`PREDICATED_LOAD_ITEMS`] items is guarded item by item on every tile instead: its
    /// predicates die at its loads, and the branch's join let ptxas hoist the loaded values'
    /// first uses (a shared atomic's address) above a barrier that follows, so every warp
    /// waited for its loads before arriving there (BENCHMARKS, "The block histogram's loads
    /// predicated"). The comparisons cost less than the loads they guard: up to 16 items the
    /// copy suite's loads run as fast predicated as branched (BENCHMARKS, "Loads of up to 16
    /// items predicated").
    fn scalar_moves(&mut self, m: &Moves, regs: &[Reg], oob: Option<u64>) {
        let (plan, a) = (m.plan, m.a);
        let few = m.is_load && regs.len() <= PREDICATED_LOAD_ITEMS;
        let rem = match a.valid {
            Valid::Rem(rem) if regs.len() > 1 && !few => rem,
            _ => {
                self.guarded_moves(m, regs, oob);
                return;
            }
        };
        let last = (regs.len() as i64 - 1) * plan.item_stride as i64;
        let partial = self.setp(Cmp::Le, Ty::S32, rem.into(), Operand::Imm(last));
        let every = Access {
            valid: Valid::All,
            ..*a
        };
        let all_valid = Moves { a: &every, ..*m };
        self.split(
            partial,
            false,
            |me| me.guarded_moves(m, regs, oob),
            |me| me.guarded_moves(&all_valid, regs, None),
        );
    }

    /// Scalar global accesses of every slot, each guarded by its validity.
    fn guarded_moves(&mut self, m: &Moves, regs: &[Reg], oob: Option<u64>) {
        let Moves {
            is_load,
            space,
            dtype,
            plan,
            a,
        } = *m;
        let size = dtype.bytes() as i64;
        for (i, &r) in regs.iter().enumerate() {
            let pos = i as i64 * plan.item_stride as i64;
            let addr = Address {
                base: AddrBase::Reg(a.addr),
                offset: pos * size,
            };
            let mv = if is_load {
                Op::Ld {
                    space,
                    ty: mem_ty(dtype),
                    dst: smallvec![r],
                    addr,
                }
            } else {
                Op::St {
                    space,
                    ty: mem_ty(dtype),
                    addr,
                    src: smallvec![r.into()],
                }
            };
            let p = match a.valid {
                Valid::All => {
                    self.op(mv);
                    continue;
                }
                Valid::Only(p) => p,
                Valid::Rem(rem) => self.setp(Cmp::Gt, Ty::S32, rem.into(), Operand::Imm(pos)),
            };
            if let Some(bits) = oob {
                let d = self.constant(dtype, bits);
                self.op(Op::Mov {
                    ty: bits_or_float(dtype),
                    dst: r,
                    src: d.into(),
                });
            }
            self.guarded(p, false, mv);
        }
    }

    /// Vector accesses where the address is aligned and (with a valid count) the thread's
    /// whole run is valid; the scalar path otherwise, chosen at run time. Where the plan pairs
    /// the runs, a warp takes the vector path only where all its threads can: the pairs'
    /// shuffles then run over the warp's lanes that exist, a constant mask in blocks of whole
    /// warps (a mask of only the pair's two lanes made ptxas fence every shuffle as a
    /// collective of its own).
    fn vector_moves(&mut self, m: &Moves, regs: &[Reg], oob: Option<u64>) {
        let Moves {
            is_load,
            space,
            dtype,
            plan,
            a,
        } = *m;
        let v = plan.vector as usize;
        let fast = self.aligned(a.addr, v as i64 * dtype.bytes() as i64);
        let full = match a.valid {
            Valid::All => None,
            Valid::Only(p) => Some(p),
            Valid::Rem(rem) => Some(self.setp(
                Cmp::Ge,
                Ty::S32,
                rem.into(),
                Operand::Imm(regs.len() as i64),
            )),
        };
        if let Some(full) = full {
            self.op(Op::PredBin {
                op: BinOp::And,
                dst: fast,
                a: fast,
                b: full,
            });
        }
        // The planner pairs stores only; the guard keeps a load's path its own whatever a plan
        // says.
        let pairs = (plan.paired && !is_load).then(|| {
            let mask = self.group_mask(32);
            self.op(Op::Vote {
                mode: VoteMode::All,
                dst: fast,
                src: fast,
                negate: false,
                mask,
            });
            let bit = self.u32op(BinOp::And, a.rank.into(), Operand::Imm(1));
            let odd = self.setp(Cmp::Ne, Ty::U32, bit.into(), Operand::Imm(0));
            (odd, mask)
        });
        let vectors = |me: &mut Self| match pairs {
            Some(pairs) => me.paired_stores(m, regs, pairs),
            None => me.vectors(is_load, space, dtype, a.addr, regs, v),
        };
        self.split(fast, true, |me| me.scalar_moves(m, regs, oob), vectors);
    }

    /// The vector stores of a pair of ranks (see [`stores_in_pairs`]): with `n` vectors a run,
    /// the pair's `2n` vectors are the first rank's run then the second's, and store `j`
    /// writes the pair's vectors `2j` (first rank) and `2j + 1` (second rank), 32 bytes from
    /// the first run's start apart. So the first rank writes its own even vectors, then the
    /// second rank's; the second rank the first rank's odd vectors, then its own: each sends
    /// the other the half of its run it does not write itself (`n / 2` vectors, one shuffle a
    /// 32-bit word). `pairs`: whether this thread is a pair's second rank, and the warp's
    /// member mask.
    ///
    /// [`stores_in_pairs`]: crate::planner::transfer::stores_in_pairs
    fn paired_stores(&mut self, m: &Moves, regs: &[Reg], pairs: (Reg, Operand)) {
        let (odd, mask) = pairs;
        let Moves {
            space,
            dtype,
            plan,
            a,
            ..
        } = *m;
        let runs: Vec<&[Reg]> = regs.chunks(plan.vector as usize).collect();
        let (n, half) = (runs.len(), runs.len() / 2);
        // A vector's bytes (16: the plan pairs no other), a pair's sector two of them.
        let bytes = plan.vector as i64 * dtype.bytes() as i64;
        // The first rank's run: the second rank's own, less one run, plus the half sector the
        // second rank writes of each.
        let back = self.reg(RegClass::B64);
        self.op(Op::Bin {
            op: BinOp::Add,
            ty: Ty::S64,
            dst: back,
            a: a.addr.into(),
            b: Operand::Imm(bytes - bytes * n as i64),
        });
        let base = self.reg(RegClass::B64);
        self.op(Op::Selp {
            ty: Ty::B64,
            dst: base,
            a: back.into(),
            b: a.addr.into(),
            p: odd,
        });
        let came: Vec<Vec<Reg>> = (0..half)
            .map(|s| {
                let (even, odd_run) = (runs[2 * s], runs[2 * s + 1]);
                (0..even.len())
                    .map(|c| {
                        let send = self.pick(dtype, odd, even[c], odd_run[c]);
                        self.shuffle_value(ShflMode::Bfly, send, Operand::Imm(1), 0x1f, mask)
                    })
                    .collect()
            })
            .collect();
        for j in 0..n {
            let src = (0..runs[0].len())
                .map(|c| {
                    let r = if j < half {
                        self.pick(dtype, odd, came[j][c], runs[2 * j][c])
                    } else {
                        let s = j - half;
                        self.pick(dtype, odd, runs[2 * s + 1][c], came[s][c])
                    };
                    r.into()
                })
                .collect();
            self.op(Op::St {
                space,
                ty: mem_ty(dtype),
                addr: Address {
                    base: AddrBase::Reg(base),
                    offset: 2 * bytes * j as i64,
                },
                src,
            });
        }
    }

    /// Prepares the global side of a load or store: the tile's offset and valid count, this
    /// thread's access group and valid bounds and, with `exchanged` (the plan gives the
    /// transfer exchanges), the bound as its exchanges take it.
    pub(crate) fn global_side(
        &mut self,
        op: OpId,
        t: &Transfer,
        is_load: bool,
        exchanged: bool,
    ) -> Lowered<GlobalSide> {
        let plan = (self.plan.transfers.get(op).cloned().flatten())
            .ok_or_else(|| self.missing(op, "plan of a load or store"))?;
        let dtype = self.ir.params[t.param.index()].dtype;
        let (offset, count) = self.tile_of(t, &plan);
        let ptr = self.param_reg(t.param);
        let space = if is_load && plan.read_only {
            Space::GlobalNc
        } else {
            Space::Global
        };
        let group = self.access_group(&plan);
        let len = self.length_reg(t.param);
        if self.checking() {
            self.check_range(t, &plan, offset, count, group.1);
        }
        // One item per thread: its validity is tested directly; the general bound is then
        // needed only as its exchanges take it.
        let only = if plan.items == 1 {
            // The block's own offset, or a `tiles` origin with the loop's count: no wrap.
            let wraps = match (t.offset, plan.tiles, t.valid) {
                (None, None, _) | (None, Some(_), None) => Wraps::Never,
                _ => Wraps::May,
            };
            self.only_valid(&plan, count, len, (offset, wraps), group)
        } else {
            None
        };
        let mut bounds = if plan.items == 1 && !exchanged {
            None
        } else {
            // Where bounds are checked: the elements the buffer has from the block's offset on.
            let room = len.map(|len| self.room(len, offset));
            self.valid_bounds(count, room, group.1)
        };
        // Exchanges take the bound as a count of the block's tile.
        let exchange_bound = match bounds.as_mut() {
            Some(b) if exchanged => Some(self.block_bound(&plan, b)),
            _ => None,
        };
        Ok(GlobalSide {
            plan,
            is_load,
            space,
            dtype,
            ptr,
            offset,
            group,
            bounds,
            only,
            exchange_bound,
        })
    }

    /// The global moves of a load (into `regs`, invalid slots set to `oob` where given) or of
    /// a store (from `regs`).
    pub(crate) fn global_moves(&mut self, g: &mut GlobalSide, regs: &[Reg], oob: Option<u64>) {
        let a = self.access(g);
        let m = Moves {
            is_load: g.is_load,
            space: g.space,
            dtype: g.dtype,
            plan: &g.plan,
            a: &a,
        };
        self.global(&m, regs, oob);
    }

    fn global(&mut self, m: &Moves, regs: &[Reg], oob: Option<u64>) {
        let plan = m.plan;
        if plan.algorithm == Algorithm::Vectorize && plan.vector > 1 {
            self.vector_moves(m, regs, oob);
        } else {
            self.scalar_moves(m, regs, oob);
        }
    }
}

//! The grid barrier in the emission builder ([`OpKind::SyncGrid`](crate::ir::OpKind)): the
//! barrier word's hidden parameter and the barrier itself.
//!
//! A cooperative kernel takes one more hidden parameter, last: the address of a `u32` in
//! global memory that the runtime zeroes for each launch. Each barrier is
//!
//! ```text
//! bar.sync 0;
//! thread 0 of each block:
//!     add = block 0 ? 0x80000000 - (blocks - 1) : 1
//!     old = atom.add.acq_rel.gpu [word], add
//!     if ((old + add) ^ old) & 0x80000000 == 0:      // not the last to arrive
//!         do { nanosleep 32; now = ld.acquire.gpu [word] } while ((old ^ now) & 0x80000000) == 0
//! bar.sync 0;
//! ```
//!
//! The adds of one barrier sum to `0x80000000`: the top bit flips once every block has
//! arrived, and the low bits come back to where they were, so the word needs no reset
//! between barriers or launches. The release half of the add orders what the block wrote
//! before the first `bar.sync` (cumulatively, through it) before the arrival; the acquire
//! load that sees the flip (or, for the last block, the acquire half of its own add, which
//! reads every other block's arrival) orders every block's writes before what the block does
//! after the second.
//!
//! This is the algorithm of CUDA's `cg::this_grid().sync()` with two changes, measured on
//! the H200 (BENCHMARKS.md): polls wait for the add's result and back off for 32 ns between
//! them, and the last block does not poll. Polls issued right behind the add, back to back,
//! cost a third more per barrier than CUDA's; these take a sixth less.

use super::*;

/// The back-off before each poll of the barrier word, in nanoseconds. Polls issued back to
/// back keep the word's L2 slice busy while the arrivals they wait for queue behind them:
/// on the H200, over 1,056 blocks, 32 ns took a barrier from 2.19 to 1.85 µs (64 ns: 1.81,
/// but coarser where few blocks arrive; BENCHMARKS.md).
const GRID_POLL_NS: u32 = 32;

/// What lowering a cooperative kernel keeps.
pub(crate) struct GridState {
    /// The barrier word's global address.
    word: Reg,
    /// `%ctaid.y`, `%ctaid.z`, `%nctaid.y`, `%nctaid.z`: read in the entry block where the
    /// kernel itself tells blocks apart along that dimension, else 0 and 1 (a launch then has
    /// one block there, and reading the index would make the kernel accept grids along it).
    yz: [Reg; 4],
}

impl Emitter<'_> {
    /// In the prologue, for a kernel with a grid barrier: the barrier word's parameter (the
    /// last hidden one), its address loaded in the entry block.
    pub(super) fn grid_param(&mut self, entry: &str) -> Option<Param> {
        if !self.ir.needs_cooperative() {
            return None;
        }
        let name = format!("{entry}_grid_barrier");
        let word = self.address_param(&name);
        let yz = [(); 4].map(|_| self.reg(RegClass::B32));
        self.grid = Some(GridState { word, yz });
        Some(Param { name, ty: Ty::U64 })
    }

    /// A grid barrier (see the module documentation).
    pub(crate) fn sync_grid(&mut self) -> Lowered<()> {
        let Some((word, yz)) = self.grid.as_ref().map(|g| (g.word, g.yz)) else {
            let op = self.current_op.unwrap_or(OpId(0));
            return Err(PlanError::Internal {
                missing: format!("the grid barrier's word, for op {}", op.0),
                loc: self.ir.op(op).loc,
            });
        };
        let [cy, cz, ny, nz] = yz;
        self.op(Op::BarSync { id: 0, count: None });
        let tid = self.tid();
        let lead = self.setp(Cmp::Eq, Ty::U32, tid.into(), Operand::Imm(0));
        let done = self.label();
        self.guarded(
            lead,
            true,
            Op::Bra {
                target: done.clone(),
                uni: false,
            },
        );
        // The grid's blocks, and whether this is block 0.
        let nx = self.special(Special::Nctaid(Dim::X));
        let cx = self.special(Special::Ctaid(Dim::X));
        let blocks = self.reg(RegClass::B32);
        self.op(Op::Bin {
            op: BinOp::Mul,
            ty: Ty::U32,
            dst: blocks,
            a: nx.into(),
            b: ny.into(),
        });
        self.op(Op::Bin {
            op: BinOp::Mul,
            ty: Ty::U32,
            dst: blocks,
            a: blocks.into(),
            b: nz.into(),
        });
        let any = self.reg(RegClass::B32);
        self.op(Op::Bin {
            op: BinOp::Or,
            ty: Ty::B32,
            dst: any,
            a: cx.into(),
            b: cy.into(),
        });
        self.op(Op::Bin {
            op: BinOp::Or,
            ty: Ty::B32,
            dst: any,
            a: any.into(),
            b: cz.into(),
        });
        let first = self.setp(Cmp::Eq, Ty::U32, any.into(), Operand::Imm(0));
        // 0x80000000 - (blocks - 1) at block 0, 1 elsewhere.
        let master = self.reg(RegClass::B32);
        self.op(Op::Bin {
            op: BinOp::Sub,
            ty: Ty::U32,
            dst: master,
            a: Operand::Imm(0x8000_0001),
            b: blocks.into(),
        });
        let add = self.reg(RegClass::B32);
        self.op(Op::Selp {
            ty: Ty::U32,
            dst: add,
            a: master.into(),
            b: Operand::Imm(1),
            p: first,
        });
        let at = Address {
            base: AddrBase::Reg(word),
            offset: 0,
        };
        let old = self.reg(RegClass::B32);
        self.op(Op::Atom {
            order: Some((Sem::AcqRel, Scope::Gpu)),
            space: Space::Global,
            op: AtomOp::Add,
            ty: Ty::U32,
            dst: old,
            addr: at.clone(),
            a: add.into(),
            b: None,
        });
        // The last block to arrive flips the top bit itself: it has seen every arrival (its
        // add acquires them) and need not poll. The test also makes every block wait for its
        // add's result before it polls.
        let after = self.reg(RegClass::B32);
        self.op(Op::Bin {
            op: BinOp::Add,
            ty: Ty::U32,
            dst: after,
            a: old.into(),
            b: add.into(),
        });
        self.op(Op::Bin {
            op: BinOp::Xor,
            ty: Ty::B32,
            dst: after,
            a: after.into(),
            b: old.into(),
        });
        self.op(Op::Bin {
            op: BinOp::And,
            ty: Ty::B32,
            dst: after,
            a: after.into(),
            b: Operand::Imm(0x8000_0000),
        });
        let last = self.setp(Cmp::Ne, Ty::U32, after.into(), Operand::Imm(0));
        self.guarded(
            last,
            false,
            Op::Bra {
                target: done.clone(),
                uni: false,
            },
        );
        let spin = self.label();
        self.op(Op::Label(spin.clone()));
        self.op(Op::Nanosleep { ns: GRID_POLL_NS });
        let now = self.reg(RegClass::B32);
        self.op(Op::LdOrdered {
            sem: Sem::Acquire,
            scope: Scope::Gpu,
            space: Space::Global,
            ty: Ty::U32,
            dst: now,
            addr: at,
        });
        let flipped = self.reg(RegClass::B32);
        self.op(Op::Bin {
            op: BinOp::Xor,
            ty: Ty::B32,
            dst: flipped,
            a: old.into(),
            b: now.into(),
        });
        self.op(Op::Bin {
            op: BinOp::And,
            ty: Ty::B32,
            dst: flipped,
            a: flipped.into(),
            b: Operand::Imm(0x8000_0000),
        });
        let waiting = self.setp(Cmp::Eq, Ty::U32, flipped.into(), Operand::Imm(0));
        self.guarded(
            waiting,
            false,
            Op::Bra {
                target: spin,
                uni: false,
            },
        );
        self.op(Op::Label(done));
        self.op(Op::BarSync { id: 0, count: None });
        Ok(())
    }

    /// At the end of lowering: the block index and grid extent along y and z, read in the
    /// entry block where the kernel reads them itself (else 0 and 1).
    pub(super) fn finish_grid(&mut self) {
        let Some(grid) = self.grid.take() else {
            return;
        };
        let [cy, cz, ny, nz] = grid.yz;
        for (d, index, extent) in [(Dim::Y, cy, ny), (Dim::Z, cz, nz)] {
            let seen = self.specials.contains_key(&Special::Ctaid(d))
                || self.specials.contains_key(&Special::Nctaid(d));
            let (i, n) = if seen {
                (
                    Operand::Special(Special::Ctaid(d)),
                    Operand::Special(Special::Nctaid(d)),
                )
            } else {
                (Operand::Imm(0), Operand::Imm(1))
            };
            for (dst, src) in [(index, i), (extent, n)] {
                self.entry_op(Op::Mov {
                    ty: Ty::U32,
                    dst,
                    src,
                });
            }
        }
    }
}

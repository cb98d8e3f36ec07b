//! Debug checks in the emission builder ([`Checks::Debug`]): the record parameter, and the
//! code that records a failed check.
//!
//! A kernel built with debug checks takes one more hidden parameter after the buffers'
//! lengths: the address of a zeroed record ([`record`]). Each check is a site of its own
//! (numbered from 1 in emission order, listed with its op, line and what it tests); where a
//! check fails, the thread claims the record with `atom.cas` (0 to the site's number), and
//! the one thread that claims it writes its thread and block index, the value checked and its
//! limit. The runtime reads the record after the launch. The checks add no barrier and change
//! no access: an index past the end still reads 0 and skips its write. Without debug checks
//! nothing here emits an instruction.

use super::*;
use crate::ir::options::{CheckKind, CheckSite, Checks, record};

/// What lowering a kernel with debug checks keeps.
pub(crate) struct CheckState {
    /// The record's global address.
    record: Reg,
    /// The block's index along y and z: read in the entry block where the kernel itself tells
    /// blocks apart along that dimension, else 0 (a launch has one block there, and reading
    /// the index would make the kernel accept grids along it).
    block_yz: [Reg; 2],
    /// The sites so far, in number order.
    sites: Vec<CheckSite>,
}

impl Emitter<'_> {
    /// Whether the kernel has debug checks.
    pub(crate) fn checking(&self) -> bool {
        self.checks.is_some()
    }

    /// In the prologue, for a kernel with debug checks: the record's parameter (after the
    /// lengths), its address loaded in the entry block.
    pub(super) fn record_param(&mut self, entry: &str) -> Option<Param> {
        if self.ir.options.checks == Checks::Off {
            return None;
        }
        let name = format!("{entry}_checks");
        let record = self.address_param(&name);
        let block_yz = [self.reg(RegClass::B32), self.reg(RegClass::B32)];
        self.checks = Some(CheckState {
            record,
            block_yz,
            sites: Vec::new(),
        });
        Some(Param { name, ty: Ty::U64 })
    }

    /// Where the kernel has debug checks and an index is checked against `param`'s length
    /// (`inside`, from [`Emitter::in_bounds`]): a failure where `guard` holds (everywhere
    /// without one) and the index is not inside, recorded with the index and the length.
    pub(crate) fn check_index(
        &mut self,
        what: fn(String) -> CheckKind,
        param: ParamId,
        index: Reg,
        inside: Option<Reg>,
        guard: Option<Reg>,
    ) {
        let (Some(inside), Some(_)) = (inside, self.checks.as_ref()) else {
            return;
        };
        let Some(len) = self.length64_reg(param).or_else(|| self.length_reg(param)) else {
            return;
        };
        let outside = self.reg(RegClass::Pred);
        self.op(Op::PredNot {
            dst: outside,
            a: inside,
        });
        let fail = self.both(guard, Some(outside)).unwrap_or(outside);
        let buffer = self.ir.params[param.index()].name.clone();
        self.record_failure(what(buffer), fail, index, len);
    }

    /// Where the kernel has debug checks: a failure where `fail` holds, of a check of `what`
    /// on `value` against `limit` (registers of 32 or 64 bits, widened for the record).
    pub(crate) fn record_failure(&mut self, what: CheckKind, fail: Reg, value: Reg, limit: Reg) {
        let Some(checks) = self.checks.as_ref() else {
            return;
        };
        let (record, block_yz) = (checks.record, checks.block_yz);
        let op = self.current_op.unwrap_or(OpId(0));
        let data = self.ir.op(op);
        let site = CheckSite {
            op,
            op_name: data.kind.name(),
            loc: data.loc,
            what,
        };
        let number = match self.checks.as_mut() {
            Some(c) => {
                c.sites.push(site);
                c.sites.len()
            }
            None => return,
        };
        let value = self.widened(value);
        let limit = self.widened(limit);
        let thread = [Dim::X, Dim::Y, Dim::Z].map(|d| self.special(Special::Tid(d)));
        let block_x = self.special(Special::Ctaid(Dim::X));
        // Only the first failure anywhere claims the record.
        let old = self.reg(RegClass::B32);
        self.op(Op::Mov {
            ty: Ty::U32,
            dst: old,
            src: Operand::Imm(1),
        });
        let at = |offset: u32| Address {
            base: AddrBase::Reg(record),
            offset: i64::from(offset),
        };
        self.guarded(
            fail,
            false,
            Op::Atom {
                order: None,
                space: Space::Global,
                op: AtomOp::Cas,
                ty: Ty::B32,
                dst: old,
                addr: at(record::SITE),
                a: Operand::Imm(0),
                b: Some(Operand::Imm(i64::try_from(number).unwrap_or(i64::MAX))),
            },
        );
        let won = self.setp(Cmp::Eq, Ty::U32, old.into(), Operand::Imm(0));
        let words = thread.into_iter().chain([block_x]).chain(block_yz);
        for (i, r) in words.enumerate() {
            let offset = if i < 3 {
                record::THREAD + 4 * i as u32
            } else {
                record::BLOCK + 4 * (i as u32 - 3)
            };
            self.guarded(won, false, store(Ty::U32, at(offset), r));
        }
        self.guarded(won, false, store(Ty::U64, at(record::VALUE), value));
        self.guarded(won, false, store(Ty::U64, at(record::LIMIT), limit));
    }

    /// `r` as a 64-bit register (zero-extended from 32 bits).
    fn widened(&mut self, r: Reg) -> Reg {
        if r.class == RegClass::B64 {
            return r;
        }
        let w = self.reg(RegClass::B64);
        self.cvt(None, Ty::U64, Ty::U32, w, r);
        w
    }

    /// At the end of lowering: the block index along y and z read in the entry block where
    /// the kernel reads it itself (else 0), and the sites in number order.
    pub(super) fn finish_checks(&mut self) -> Vec<CheckSite> {
        let Some(checks) = self.checks.take() else {
            return Vec::new();
        };
        for (r, d) in checks.block_yz.into_iter().zip([Dim::Y, Dim::Z]) {
            let seen = self.specials.contains_key(&Special::Ctaid(d))
                || self.specials.contains_key(&Special::Nctaid(d));
            let src = if seen {
                Operand::Special(Special::Ctaid(d))
            } else {
                Operand::Imm(0)
            };
            self.entry_op(Op::Mov {
                ty: Ty::U32,
                dst: r,
                src,
            });
        }
        checks.sites
    }
}

/// `st.global.ty [addr], r`.
fn store(ty: Ty, addr: Address, r: Reg) -> Op {
    Op::St {
        space: Space::Global,
        ty,
        addr,
        src: smallvec![r.into()],
    }
}

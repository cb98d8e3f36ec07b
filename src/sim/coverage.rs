//! Coverage of the PTX model's text form: every form the writer prints parses back to the same
//! module, ill-formed PTX is refused with its line, and mangled text never panics the parser or
//! the simulator. The variant lists here are exhaustive matches, so a new variant does not
//! build until it is listed (and then covered, here and in `known_results`).

use crate::ptx::*;
use crate::ptx::{Arch, write_module};
use crate::sim::{InvalidReason, ParseReason, SimError, SimOptions, Simulator, entry_text, parse};
use proptest::prelude::*;
use smallvec::smallvec;
use std::collections::BTreeSet;

// ---------------------------------------------------------------------------------------
// Registers, operands and kernel text

pub(super) fn r(i: u32) -> Reg {
    Reg {
        class: RegClass::B32,
        index: i,
    }
}
pub(super) fn rd(i: u32) -> Reg {
    Reg {
        class: RegClass::B64,
        index: i,
    }
}
pub(super) fn p(i: u32) -> Reg {
    Reg {
        class: RegClass::Pred,
        index: i,
    }
}
pub(super) fn f(i: u32) -> Reg {
    Reg {
        class: RegClass::F32,
        index: i,
    }
}
pub(super) fn fd(i: u32) -> Reg {
    Reg {
        class: RegClass::F64,
        index: i,
    }
}
pub(super) fn o(r: Reg) -> Operand {
    Operand::Reg(r)
}
pub(super) fn imm(v: i64) -> Operand {
    Operand::Imm(v)
}
pub(super) fn i(op: Op) -> Instr {
    op.into()
}
pub(super) fn when(pred: Reg, negate: bool, op: Op) -> Instr {
    Instr {
        guard: Some(Guard { pred, negate }),
        op,
    }
}
pub(super) fn at(base: AddrBase, offset: i64) -> Address {
    Address { base, offset }
}
pub(super) fn f32b(x: f32) -> u64 {
    u64::from(x.to_bits())
}
pub(super) fn f64b(x: f64) -> u64 {
    x.to_bits()
}

/// A hand-written kernel: the simulator's own wrapper.
fn kernel(name: &str, params: &[&str], shared: &[&str], body: &str) -> String {
    entry_text(name, params, shared, body)
}

/// The 1-based line of the first line containing `needle` after line `after`.
fn line_of(text: &str, needle: &str, after: u32) -> u32 {
    text.lines()
        .enumerate()
        .skip(after as usize)
        .find(|(_, l)| l.contains(needle))
        .map(|(k, _)| k as u32 + 1)
        .unwrap_or_else(|| panic!("{needle:?} not in the kernel"))
}

pub(super) fn sim() -> Simulator {
    Simulator::new(SimOptions::default())
}

// ---------------------------------------------------------------------------------------
// Exhaustive variant lists: each match has no wildcard, so a new variant does not build
// until it is listed (and then tested) here.

/// Index of each `Op` variant.
pub(super) fn op_index(op: &Op) -> usize {
    match op {
        Op::Comment(_) => 0,
        Op::Label(_) => 1,
        Op::Ld { .. } => 2,
        Op::St { .. } => 3,
        Op::Mov { .. } => 4,
        Op::CvtaToGlobal { .. } => 5,
        Op::Bin { .. } => 6,
        Op::Un { .. } => 7,
        Op::Mad { .. } => 8,
        Op::MadWide { .. } => 9,
        Op::Setp { .. } => 10,
        Op::Selp { .. } => 11,
        Op::PredBin { .. } => 12,
        Op::PredNot { .. } => 13,
        Op::Cvt { .. } => 14,
        Op::Bra { .. } => 15,
        Op::Ret => 16,
        Op::BarSync { .. } => 17,
        Op::BarWarpSync { .. } => 18,
        Op::Shfl { .. } => 19,
        Op::Vote { .. } => 20,
        Op::Match { .. } => 21,
        Op::Redux { .. } => 22,
        Op::Activemask { .. } => 23,
        Op::Atom { .. } => 24,
        Op::Red { .. } => 25,
        Op::Membar { .. } => 26,
        Op::Loc { .. } => 27,
        Op::Vprintf { .. } => 28,
        Op::LdOrdered { .. } => 29,
        Op::Nanosleep { .. } => 30,
        Op::Mapa { .. } => 31,
        Op::BarrierCluster { .. } => 32,
    }
}
pub(super) const OP_VARIANTS: usize = 33;

/// Walks a successor chain written as one exhaustive match.
pub(super) fn chain<T: Copy>(first: T, next: fn(T) -> Option<T>) -> Vec<T> {
    let mut v = vec![first];
    while let Some(n) = next(*v.last().unwrap()) {
        v.push(n);
    }
    v
}

pub(super) fn bin_ops() -> Vec<BinOp> {
    use BinOp::*;
    chain(Add, |x| match x {
        Add => Some(Sub),
        Sub => Some(Mul),
        Mul => Some(MulHi),
        MulHi => Some(MulWide),
        MulWide => Some(Div),
        Div => Some(Rem),
        Rem => Some(Min),
        Min => Some(Max),
        Max => Some(And),
        And => Some(Or),
        Or => Some(Xor),
        Xor => Some(Shl),
        Shl => Some(Shr),
        Shr => Some(Copysign),
        Copysign => Some(AddFtz),
        AddFtz => Some(SubFtz),
        SubFtz => Some(MulFtz),
        MulFtz => Some(DivApprox),
        DivApprox => None,
    })
}

pub(super) fn un_ops() -> Vec<UnOp> {
    use UnOp::*;
    chain(Neg, |x| match x {
        Neg => Some(Abs),
        Abs => Some(Not),
        Not => Some(Cnot),
        Cnot => Some(Popc),
        Popc => Some(Clz),
        Clz => Some(Brev),
        Brev => Some(Sqrt),
        Sqrt => Some(Rsqrt),
        Rsqrt => Some(Rcp),
        Rcp => Some(Sin),
        Sin => Some(Cos),
        Cos => Some(Ex2),
        Ex2 => Some(Lg2),
        Lg2 => Some(Tanh),
        Tanh => Some(SinFtz),
        SinFtz => Some(CosFtz),
        CosFtz => Some(Ex2Ftz),
        Ex2Ftz => Some(Lg2Ftz),
        Lg2Ftz => Some(RcpApprox),
        RcpApprox => Some(RsqrtFtz),
        RsqrtFtz => Some(SqrtApprox),
        SqrtApprox => None,
    })
}

pub(super) fn cmps() -> Vec<Cmp> {
    use Cmp::*;
    chain(Eq, |x| match x {
        Eq => Some(Ne),
        Ne => Some(Lt),
        Lt => Some(Le),
        Le => Some(Gt),
        Gt => Some(Ge),
        Ge => Some(Neu),
        Neu => Some(Num),
        Num => Some(Nan),
        Nan => None,
    })
}

pub(super) fn rounds() -> Vec<Round> {
    use Round::*;
    chain(Rn, |x| match x {
        Rn => Some(Rz),
        Rz => Some(Rni),
        Rni => Some(Rzi),
        Rzi => Some(Rmi),
        Rmi => Some(Rpi),
        Rpi => None,
    })
}

pub(super) fn atom_ops() -> Vec<AtomOp> {
    use AtomOp::*;
    chain(Add, |x| match x {
        Add => Some(Min),
        Min => Some(Max),
        Max => Some(And),
        And => Some(Or),
        Or => Some(Xor),
        Xor => Some(Exch),
        Exch => Some(Cas),
        Cas => Some(Inc),
        Inc => Some(Dec),
        Dec => None,
    })
}

pub(super) fn shfl_modes() -> Vec<ShflMode> {
    use ShflMode::*;
    chain(Up, |x| match x {
        Up => Some(Down),
        Down => Some(Bfly),
        Bfly => Some(Idx),
        Idx => None,
    })
}

pub(super) fn vote_modes() -> Vec<VoteMode> {
    use VoteMode::*;
    chain(All, |x| match x {
        All => Some(Any),
        Any => Some(Uni),
        Uni => Some(Ballot),
        Ballot => None,
    })
}

fn specials() -> Vec<Special> {
    use Special::*;
    chain(Tid(Dim::X), |x| match x {
        Tid(Dim::X) => Some(Tid(Dim::Y)),
        Tid(Dim::Y) => Some(Tid(Dim::Z)),
        Tid(Dim::Z) => Some(Ntid(Dim::X)),
        Ntid(Dim::X) => Some(Ntid(Dim::Y)),
        Ntid(Dim::Y) => Some(Ntid(Dim::Z)),
        Ntid(Dim::Z) => Some(Ctaid(Dim::X)),
        Ctaid(Dim::X) => Some(Ctaid(Dim::Y)),
        Ctaid(Dim::Y) => Some(Ctaid(Dim::Z)),
        Ctaid(Dim::Z) => Some(Nctaid(Dim::X)),
        Nctaid(Dim::X) => Some(Nctaid(Dim::Y)),
        Nctaid(Dim::Y) => Some(Nctaid(Dim::Z)),
        Nctaid(Dim::Z) => Some(Laneid),
        Laneid => Some(Warpid),
        Warpid => Some(Nwarpid),
        Nwarpid => Some(LanemaskLt),
        LanemaskLt => Some(LanemaskLe),
        LanemaskLe => Some(LanemaskGt),
        LanemaskGt => Some(LanemaskGe),
        LanemaskGe => Some(DynamicSmemSize),
        DynamicSmemSize => Some(TotalSmemSize),
        TotalSmemSize => Some(Clock64),
        Clock64 => Some(GlobalTimer),
        GlobalTimer => Some(ClusterNctaid(Dim::X)),
        ClusterNctaid(Dim::X) => Some(ClusterNctaid(Dim::Y)),
        ClusterNctaid(Dim::Y) => Some(ClusterNctaid(Dim::Z)),
        ClusterNctaid(Dim::Z) => Some(ClusterNctarank),
        ClusterNctarank => None,
    })
}

fn scopes() -> Vec<Scope> {
    use Scope::*;
    chain(Cta, |x| match x {
        Cta => Some(Gpu),
        Gpu => Some(Sys),
        Sys => None,
    })
}

fn sems() -> Vec<Sem> {
    use Sem::*;
    chain(Relaxed, |x| match x {
        Relaxed => Some(Acquire),
        Acquire => Some(Release),
        Release => Some(AcqRel),
        AcqRel => None,
    })
}

#[test]
fn variant_lists_are_complete() {
    assert_eq!(bin_ops().len(), 19);
    assert_eq!(un_ops().len(), 22);
    assert_eq!(cmps().len(), 9);
    assert_eq!(rounds().len(), 6);
    assert_eq!(atom_ops().len(), 10);
    assert_eq!(shfl_modes().len(), 4);
    assert_eq!(vote_modes().len(), 4);
    assert_eq!(specials().len(), 27);
    assert_eq!(scopes().len(), 3);
    assert_eq!(sems().len(), 4);
}

// ---------------------------------------------------------------------------------------
// Parser: round trip through the writer, errors, fuzzing

/// A module holding every op variant and every operand and address form.
fn every_form_module() -> Module {
    let mut body: Vec<Instr> = vec![
        i(Op::Comment("op0 load (src/kernel.rs:12)".into())),
        i(Op::Comment(String::new())),
        i(Op::Comment("  leading and trailing spaces  ".into())),
        i(Op::Loc {
            file: 2,
            line: 42,
            column: 7,
        }),
        i(Op::Label("$L_top".into())),
        when(
            p(0),
            false,
            Op::Ld {
                space: Space::Global,
                ty: Ty::F32,
                dst: smallvec![f(0), f(1), f(2), f(3)],
                addr: at(AddrBase::Reg(rd(0)), 16),
            },
        ),
        i(Op::Ld {
            space: Space::GlobalNc,
            ty: Ty::U32,
            dst: smallvec![r(0)],
            addr: at(AddrBase::Reg(rd(1)), 0),
        }),
        i(Op::Ld {
            space: Space::Param,
            ty: Ty::U64,
            dst: smallvec![rd(0)],
            addr: at(AddrBase::Param("p0".into()), 0),
        }),
        i(Op::Ld {
            space: Space::Param,
            ty: Ty::U32,
            dst: smallvec![r(1)],
            addr: at(AddrBase::Param("n".into()), 4),
        }),
        i(Op::Ld {
            space: Space::Shared,
            ty: Ty::B32,
            dst: smallvec![r(2), r(3)],
            addr: at(AddrBase::Shared(1), 8),
        }),
        when(
            p(1),
            true,
            Op::Ld {
                space: Space::Local,
                ty: Ty::S8,
                dst: smallvec![r(4)],
                addr: at(AddrBase::Reg(rd(2)), -4),
            },
        ),
        i(Op::St {
            space: Space::Global,
            ty: Ty::F32,
            addr: at(AddrBase::Reg(rd(0)), 0),
            src: smallvec![Operand::F32(1.5)],
        }),
        i(Op::St {
            space: Space::Shared,
            ty: Ty::U32,
            addr: at(AddrBase::Reg(r(5)), 0),
            src: smallvec![o(r(0)), imm(1), imm(-2), o(r(1))],
        }),
        i(Op::St {
            space: Space::Local,
            ty: Ty::U8,
            addr: at(AddrBase::Reg(rd(3)), 3),
            src: smallvec![o(r(4))],
        }),
        i(Op::St {
            space: Space::Global,
            ty: Ty::F64,
            addr: at(AddrBase::Reg(rd(0)), 8),
            src: smallvec![o(fd(0)), Operand::F64(2.5)],
        }),
        i(Op::Mov {
            ty: Ty::U32,
            dst: r(1),
            src: Operand::SharedAddr(1),
        }),
        i(Op::Mov {
            ty: Ty::U64,
            dst: rd(4),
            src: imm(i64::MIN),
        }),
        i(Op::Mov {
            ty: Ty::F32,
            dst: f(0),
            src: Operand::F32(f32::INFINITY),
        }),
        i(Op::Mov {
            ty: Ty::F64,
            dst: fd(0),
            src: Operand::F64(-1e-300),
        }),
        i(Op::CvtaToGlobal {
            dst: rd(1),
            src: rd(0),
        }),
        i(Op::Mad {
            ty: Ty::U32,
            dst: r(0),
            a: o(r(1)),
            b: imm(3),
            c: o(r(2)),
        }),
        i(Op::Mad {
            ty: Ty::F32,
            dst: f(0),
            a: o(f(1)),
            b: Operand::F32(0.5),
            c: o(f(2)),
        }),
        i(Op::MadWide {
            ty: Ty::S32,
            dst: rd(0),
            a: o(r(1)),
            b: imm(-3),
            c: o(rd(2)),
        }),
        i(Op::Selp {
            ty: Ty::F64,
            dst: fd(1),
            a: o(fd(0)),
            b: Operand::F64(0.0),
            p: p(2),
        }),
        i(Op::PredNot { dst: p(0), a: p(1) }),
        i(Op::Bra {
            target: "$L_top".into(),
            uni: true,
        }),
        when(
            p(3),
            false,
            Op::Bra {
                target: "$L_end".into(),
                uni: false,
            },
        ),
        i(Op::BarSync { id: 0, count: None }),
        i(Op::BarSync {
            id: 1,
            count: Some(64),
        }),
        i(Op::BarWarpSync { mask: imm(-1) }),
        i(Op::BarWarpSync { mask: o(r(3)) }),
        i(Op::Activemask { dst: r(6) }),
        i(Op::Label("$L_end".into())),
        when(p(0), true, Op::Ret),
        i(Op::Ret),
    ];
    for s in specials() {
        let wide = matches!(s, Special::Clock64 | Special::GlobalTimer);
        body.push(i(Op::Mov {
            ty: if wide { Ty::U64 } else { Ty::U32 },
            dst: if wide { rd(5) } else { r(5) },
            src: Operand::Special(s),
        }));
    }
    for op in bin_ops() {
        let ty = match op {
            BinOp::Copysign => Ty::F64,
            BinOp::AddFtz | BinOp::SubFtz | BinOp::MulFtz | BinOp::DivApprox => Ty::F32,
            BinOp::MulWide => Ty::S32,
            BinOp::Shl | BinOp::Shr | BinOp::And | BinOp::Or | BinOp::Xor => Ty::B32,
            _ => Ty::S32,
        };
        let (dst, a, b) = match (ty, op) {
            (Ty::F64, _) => (fd(0), fd(1), Operand::F64(7.0)),
            (Ty::F32, _) => (f(0), f(1), Operand::F32(7.0)),
            (_, BinOp::MulWide) => (rd(0), r(1), imm(7)),
            _ => (r(0), r(1), imm(7)),
        };
        body.push(when(
            p(1),
            true,
            Op::Bin {
                op,
                ty,
                dst,
                a: o(a),
                b,
            },
        ));
        let float = !matches!(
            op,
            BinOp::MulHi
                | BinOp::MulWide
                | BinOp::Rem
                | BinOp::And
                | BinOp::Or
                | BinOp::Xor
                | BinOp::Shl
                | BinOp::Shr
        );
        if float {
            body.push(i(Op::Bin {
                op,
                ty: Ty::F32,
                dst: f(0),
                a: o(f(1)),
                b: Operand::F32(-2.75),
            }));
        }
    }
    for op in un_ops() {
        let (ty, dst, a) = match op {
            UnOp::Neg | UnOp::Abs => (Ty::S64, rd(0), o(rd(1))),
            UnOp::Not | UnOp::Cnot | UnOp::Brev => (Ty::B64, rd(0), imm(5)),
            UnOp::Popc | UnOp::Clz => (Ty::B64, r(0), o(rd(1))),
            UnOp::Sqrt | UnOp::Rsqrt | UnOp::Rcp => (Ty::F64, fd(0), o(fd(1))),
            _ => (Ty::F32, f(0), Operand::F32(0.5)),
        };
        body.push(i(Op::Un { op, ty, dst, a }));
    }
    for op in [UnOp::Neg, UnOp::Abs] {
        body.push(i(Op::Un {
            op,
            ty: Ty::F64,
            dst: fd(0),
            a: o(fd(1)),
        }));
    }
    for cmp in cmps() {
        body.push(i(Op::Setp {
            cmp,
            ty: Ty::F32,
            dst: p(0),
            a: o(f(0)),
            b: Operand::F32(0.0),
        }));
    }
    for op in [BinOp::And, BinOp::Or, BinOp::Xor] {
        body.push(i(Op::PredBin {
            op,
            dst: p(0),
            a: p(1),
            b: p(2),
        }));
    }
    for round in rounds().into_iter().map(Some).chain([None]) {
        for sat in [false, true] {
            let (dty, sty, dst, src) = match round {
                Some(Round::Rn | Round::Rz) => (Ty::F32, Ty::F64, f(0), fd(0)),
                Some(_) => (Ty::S32, Ty::F32, r(0), f(0)),
                None => (Ty::F64, Ty::F32, fd(0), f(0)),
            };
            body.push(i(Op::Cvt {
                round,
                sat,
                dty,
                sty,
                dst,
                src,
            }));
        }
    }
    for mode in shfl_modes() {
        for pred in [None, Some(p(2))] {
            body.push(i(Op::Shfl {
                mode,
                dst: r(0),
                pred,
                src: o(r(1)),
                b: imm(1),
                c: imm(0x1f),
                mask: imm(-1),
            }));
        }
    }
    for mode in vote_modes() {
        for negate in [false, true] {
            let dst = if mode == VoteMode::Ballot { r(0) } else { p(0) };
            body.push(i(Op::Vote {
                mode,
                dst,
                src: p(1),
                negate,
                mask: o(r(7)),
            }));
        }
    }
    for (all, ty) in [(false, Ty::B32), (true, Ty::B64)] {
        body.push(i(Op::Match {
            all,
            ty,
            dst: r(0),
            src: if ty == Ty::B64 { o(rd(1)) } else { o(r(1)) },
            mask: imm(-1),
        }));
    }
    for op in atom_ops() {
        let ty = match op {
            AtomOp::And | AtomOp::Or | AtomOp::Xor | AtomOp::Exch | AtomOp::Cas => Ty::B32,
            _ => Ty::U32,
        };
        if !matches!(op, AtomOp::Exch | AtomOp::Cas | AtomOp::Inc | AtomOp::Dec) {
            body.push(i(Op::Redux {
                op,
                ty: if ty == Ty::U32 { Ty::S32 } else { ty },
                dst: r(0),
                src: o(r(1)),
                mask: imm(-1),
            }));
        }
        body.push(i(Op::Atom {
            order: None,
            space: Space::Global,
            op,
            ty,
            dst: r(0),
            addr: at(AddrBase::Reg(rd(0)), 4),
            a: o(r(1)),
            b: (op == AtomOp::Cas).then_some(imm(9)),
        }));
        body.push(i(Op::Atom {
            order: Some((Sem::AcqRel, Scope::Cta)),
            space: Space::Shared,
            op,
            ty,
            dst: r(0),
            addr: at(AddrBase::Shared(0), 0),
            a: imm(1),
            b: (op == AtomOp::Cas).then_some(o(r(2))),
        }));
        if !matches!(op, AtomOp::Exch | AtomOp::Cas) {
            body.push(i(Op::Red {
                order: Some((Sem::Release, Scope::Gpu)),
                space: Space::Shared,
                op,
                ty,
                addr: at(AddrBase::Reg(r(2)), 8),
                a: imm(2),
            }));
        }
    }
    body.push(i(Op::Nanosleep { ns: 32 }));
    // Clusters: `mapa`, the barrier's halves, and accesses of `.shared::cluster`.
    body.push(i(Op::Mapa {
        dst: r(3),
        src: o(r(2)),
        rank: imm(1),
    }));
    body.push(i(Op::BarrierCluster { wait: false }));
    body.push(i(Op::BarrierCluster { wait: true }));
    body.push(i(Op::Ld {
        space: Space::SharedCluster,
        ty: Ty::U32,
        dst: smallvec![r(4)],
        addr: at(AddrBase::Reg(r(3)), 4),
    }));
    body.push(i(Op::St {
        space: Space::SharedCluster,
        ty: Ty::F32,
        addr: at(AddrBase::Reg(r(3)), 0),
        src: smallvec![o(f(1))],
    }));
    body.push(i(Op::Atom {
        order: None,
        space: Space::SharedCluster,
        op: AtomOp::Add,
        ty: Ty::U32,
        dst: r(0),
        addr: at(AddrBase::Reg(r(3)), 8),
        a: imm(1),
        b: None,
    }));
    for scope in scopes() {
        body.push(i(Op::Membar { scope }));
        for (sem, space) in [(Sem::Acquire, Space::Global), (Sem::Relaxed, Space::Shared)] {
            body.push(i(Op::LdOrdered {
                sem,
                scope,
                space,
                ty: Ty::U32,
                dst: r(1),
                addr: at(AddrBase::Reg(rd(0)), 4),
            }));
        }
        // Every memory order an atomic can carry, at every scope.
        for sem in sems() {
            body.push(i(Op::Atom {
                order: Some((sem, scope)),
                space: Space::Global,
                op: AtomOp::Add,
                ty: Ty::U32,
                dst: r(0),
                addr: at(AddrBase::Reg(rd(0)), 4),
                a: imm(1),
                b: None,
            }));
        }
    }
    body.push(i(Op::Vprintf {
        format: 0,
        args: Some(0),
    }));
    body.push(when(
        p(1),
        true,
        Op::Vprintf {
            format: 1,
            args: None,
        },
    ));
    let every = Function {
        name: "every_form".into(),
        params: vec![
            Param {
                name: "p0".into(),
                ty: Ty::U64,
            },
            Param {
                name: "n".into(),
                ty: Ty::U32,
            },
            Param {
                name: "small".into(),
                ty: Ty::S8,
            },
        ],
        reqntid: Some([128, 1, 1]),
        reqnctapercluster: Some([2, 1, 1]),
        explicitcluster: false,
        maxnreg: Some(64),
        minnctapersm: Some(3),
        shared: vec![
            SharedDecl {
                name: "s0".into(),
                align: 4,
                bytes: 64,
                comment: Some("s0: what it holds (user.rs:3:9)".into()),
            },
            SharedDecl {
                name: "s1".into(),
                align: 16,
                bytes: 256,
                comment: None,
            },
        ],
        local: vec![LocalDecl {
            name: "print0".into(),
            align: 8,
            bytes: 8,
            comment: Some("the values printed by op3".into()),
        }],
        consts: vec![],
        strings: vec![
            ConstDecl {
                name: "every_form_fmt0".into(),
                align: 1,
                data: b"%d %% {}\n\0".to_vec(),
                comment: Some("the format printed by op3".into()),
            },
            ConstDecl {
                name: "every_form_fmt1".into(),
                align: 1,
                data: b"\0".to_vec(),
                comment: None,
            },
        ],
        regs: RegCounts {
            pred: 4,
            b32: 8,
            b64: 8,
            f32: 4,
            f64: 4,
        },
        body,
    };
    let empty = Function {
        name: "empty".into(),
        explicitcluster: true,
        body: vec![i(Op::Ret)],
        ..Function::default()
    };
    // Dynamic shared memory: `.extern .shared` before the entry, listed first.
    let dynamic = Function {
        name: "dynamic".into(),
        explicitcluster: false,
        shared: vec![
            SharedDecl {
                name: "dsm".into(),
                align: 16,
                bytes: 0,
                comment: Some("dynamic part".into()),
            },
            SharedDecl {
                name: "fixed".into(),
                align: 4,
                bytes: 20,
                comment: None,
            },
        ],
        regs: RegCounts {
            b32: 2,
            ..RegCounts::default()
        },
        body: vec![
            i(Op::Mov {
                ty: Ty::U32,
                dst: r(0),
                src: Operand::SharedAddr(0),
            }),
            i(Op::St {
                space: Space::Shared,
                ty: Ty::U32,
                addr: at(AddrBase::Shared(1), 16),
                src: smallvec![o(r(0))],
            }),
            i(Op::Ret),
        ],
        ..empty.clone()
    };
    // Local and constant arrays: `.local` in the body, `.const` with its contents before the
    // entry; their addresses as operands and as address bases.
    let arrays = Function {
        name: "arrays".into(),
        params: vec![],
        reqntid: None,
        reqnctapercluster: None,
        explicitcluster: false,
        maxnreg: None,
        minnctapersm: None,
        shared: vec![],
        local: vec![
            LocalDecl {
                name: "local0".into(),
                align: 4,
                bytes: 16,
                comment: Some("local0: local u32 x 4 at user.rs:1:1".into()),
            },
            LocalDecl {
                name: "local1".into(),
                align: 8,
                bytes: 8,
                comment: None,
            },
        ],
        strings: vec![],
        consts: vec![
            ConstDecl {
                name: "arrays_cmem0".into(),
                align: 4,
                data: vec![1, 0, 0, 0, 255, 255, 255, 255],
                comment: Some("cmem0: const i32 x 2".into()),
            },
            ConstDecl {
                name: "arrays_cmem1".into(),
                align: 8,
                data: vec![7; 8],
                comment: None,
            },
        ],
        regs: RegCounts {
            b32: 2,
            b64: 4,
            ..RegCounts::default()
        },
        body: vec![
            i(Op::Mov {
                ty: Ty::U64,
                dst: rd(0),
                src: Operand::LocalAddr(1),
            }),
            i(Op::Mov {
                ty: Ty::U64,
                dst: rd(1),
                src: Operand::ConstAddr(0),
            }),
            i(Op::Ld {
                space: Space::Const,
                ty: Ty::S32,
                dst: smallvec![r(0)],
                addr: at(AddrBase::Reg(rd(1)), 4),
            }),
            i(Op::Ld {
                space: Space::Const,
                ty: Ty::U64,
                dst: smallvec![rd(2)],
                addr: at(AddrBase::Const(1), 0),
            }),
            i(Op::St {
                space: Space::Local,
                ty: Ty::U32,
                addr: at(AddrBase::Local(0), 12),
                src: smallvec![o(r(0))],
            }),
            i(Op::St {
                space: Space::Local,
                ty: Ty::U64,
                addr: at(AddrBase::Reg(rd(0)), 0),
                src: smallvec![o(rd(2))],
            }),
            i(Op::Ld {
                space: Space::Local,
                ty: Ty::U32,
                dst: smallvec![r(1)],
                addr: at(AddrBase::Local(0), 12),
            }),
            i(Op::Ret),
        ],
    };
    Module {
        arch: Arch::Sm90,
        files: vec!["src/kernel.rs".into(), "tests/all/my kernel.rs".into()],
        functions: vec![every, empty, dynamic, arrays],
    }
}

#[test]
fn parse_of_written_module_is_the_module() {
    let m = every_form_module();
    let covered: BTreeSet<usize> = m.functions[0]
        .body
        .iter()
        .map(|x| op_index(&x.op))
        .collect();
    assert_eq!(
        covered.len(),
        OP_VARIANTS,
        "the module must hold every op variant"
    );
    let text = write_module(&m);
    let back = parse(&text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back, m);
    assert_eq!(write_module(&back), text);
    // And the simulator's loader accepts it (every register declared, every label known).
    sim().load_module(&text).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn parse_errors_are_typed_with_line_and_text() {
    let good = write_module(&every_form_module());
    let cases: [(&str, &str, ParseReason); 6] = [
        ("\tret;", "\tret", ParseReason::MissingSemicolon),
        (
            "\tret;",
            "\tfrob.u32 %r1, %r2;",
            ParseReason::UnknownMnemonic,
        ),
        ("\tret;", "\tmov.u32 %q1, 0;", ParseReason::BadRegister),
        (
            "\tret;",
            "\tld.global.u32 %r1, [%rd1+x];",
            ParseReason::BadAddress,
        ),
        (
            "\tret;",
            "\tmov.u32 %r1, nosuch;",
            ParseReason::UnknownSymbol,
        ),
        ("\tret;", "\tadd.u32 %r1, %r2;", ParseReason::OperandCount),
    ];
    for (from, to, reason) in cases {
        let text = good.replacen(from, to, 1);
        let line = line_of(&text, to, 0);
        let e = parse(&text).unwrap_err();
        assert_eq!(
            (e.line, e.text.as_str(), e.reason),
            (line, to.trim(), reason)
        );
        let e = sim().load_module(&text).unwrap_err();
        assert!(matches!(e, SimError::Parse { line: l, .. } if l == line));
    }
    let e = parse(".version 7.0\n.target sm_99\n").unwrap_err();
    assert_eq!((e.line, e.reason), (2, ParseReason::UnknownTarget));
}

#[test]
fn decode_rejects_ill_formed_ptx() {
    type Expect = fn(&InvalidReason) -> bool;
    let cases: [(&str, Expect); 12] = [
        (
            "mov.u32 %r99, 0;",
            |r| matches!(r, InvalidReason::UndeclaredRegister { register } if register == "%r99"),
        ),
        ("bra $L_nowhere;", |r| {
            matches!(r, InvalidReason::UnknownLabel { .. })
        }),
        ("add.u32 %rd1, %r1, 1;", |r| {
            matches!(r, InvalidReason::RegisterClass { .. })
        }),
        ("sin.approx.f64 %fd1, %fd2;", |r| {
            matches!(r, InvalidReason::BadType)
        }),
        // ptxas refuses bitwise operations and bit counts at non-`.b` types.
        ("and.u32 %r1, %r2, 3;", |r| {
            matches!(r, InvalidReason::BadType)
        }),
        ("popc.u32 %r1, %r2;", |r| {
            matches!(r, InvalidReason::BadType)
        }),
        ("shl.u32 %r1, %r2, 1;", |r| {
            matches!(r, InvalidReason::BadType)
        }),
        // What the driver's JIT refuses, the simulator refuses too.
        ("add.rn.f32 %f1, %f2, 1;", |r| {
            matches!(r, InvalidReason::ImmediateType)
        }),
        ("add.s16 %r1, %r2, %r3;", |r| {
            matches!(r, InvalidReason::BadType)
        }),
        ("mov.u8 %r1, 7;", |r| matches!(r, InvalidReason::BadType)),
        ("cvt.f32.s32 %f1, %r2;", |r| {
            matches!(r, InvalidReason::BadType)
        }),
        ("cvt.rn.f32.f32 %f1, %f2;", |r| {
            matches!(r, InvalidReason::BadType)
        }),
    ];
    for (line, ok) in cases {
        let text = kernel("k", &[], &[], &format!("{line}\nret;"));
        match sim().load_module(&text) {
            Err(SimError::Invalid { at, reason }) => {
                assert!(ok(&reason), "{line}: {reason}");
                assert_eq!(at.line, line_of(&text, line, 0));
            }
            other => panic!("{line}: {other:?}"),
        }
    }
}

/// Edits that mangle a valid text.
#[derive(Debug, Clone)]
enum Edit {
    Delete(usize, usize),
    Insert(usize, String),
    DupLine(usize),
    Truncate(usize),
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut s = text.to_string();
    let fix = |s: &String, k: usize| {
        let mut k = k % (s.len() + 1);
        while !s.is_char_boundary(k) {
            k -= 1;
        }
        k
    };
    for e in edits {
        match e {
            Edit::Delete(a, n) => {
                let a = fix(&s, *a);
                let b = fix(&s, a + n);
                if b >= a {
                    s.replace_range(a..b, "");
                }
            }
            Edit::Insert(a, t) => {
                let a = fix(&s, *a);
                s.insert_str(a, t);
            }
            Edit::DupLine(k) => {
                let lines: Vec<&str> = s.lines().collect();
                if !lines.is_empty() {
                    let k = k % lines.len();
                    let mut v: Vec<String> = lines.iter().map(|x| x.to_string()).collect();
                    v.insert(k, lines[k].to_string());
                    s = v.join("\n");
                }
            }
            Edit::Truncate(k) => {
                let k = fix(&s, *k);
                s.truncate(k);
            }
        }
    }
    s
}

fn edit() -> impl Strategy<Value = Edit> {
    let token = prop_oneof![
        Just("%r".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("{".to_string()),
        Just(",".to_string()),
        Just(";".to_string()),
        Just("\n".to_string()),
        Just(".v4".to_string()),
        Just("+-".to_string()),
        Just("0f".to_string()),
        Just("@!".to_string()),
        Just("99999999999999999999".to_string()),
        ".{0,6}",
    ];
    prop_oneof![
        (any::<usize>(), 0usize..12).prop_map(|(a, n)| Edit::Delete(a, n)),
        (any::<usize>(), token).prop_map(|(a, t)| Edit::Insert(a, t)),
        any::<usize>().prop_map(Edit::DupLine),
        any::<usize>().prop_map(Edit::Truncate),
    ]
}

/// A small kernel that runs (mutations of it are launched too).
fn fuzz_kernel() -> String {
    kernel(
        "fz",
        &["u64 out"],
        &[".shared .align 4 .b8 s[128];"],
        "ld.param.u64 %rd0, [out];
         mov.u32 %r0, %tid.x;
         shl.b32 %r1, %r0, 2;
         mov.u32 %r2, s;
         add.u32 %r3, %r2, %r1;
         st.shared.u32 [%r3], %r0;
         bar.sync 0;
         xor.b32 %r4, %r0, 1;
         shl.b32 %r5, %r4, 2;
         add.u32 %r6, %r2, %r5;
         ld.shared.u32 %r7, [%r6];
         shfl.sync.bfly.b32 %r8, %r7, 1, 31, -1;
         mul.wide.u32 %rd1, %r0, 4;
         add.u64 %rd2, %rd0, %rd1;
         st.global.u32 [%rd2], %r8;
         ret;",
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn parser_never_panics_on_random_text(s in ".{0,300}") {
        let _ = parse(&s);
        let _ = sim().load_module(&s);
    }

    #[test]
    fn parser_and_simulator_never_panic_on_mangled_text(
        edits in proptest::collection::vec(edit(), 1..5),
        big in any::<bool>(),
    ) {
        let base = if big { write_module(&every_form_module()) } else { fuzz_kernel() };
        let text = apply(&base, &edits);
        let _ = parse(&text);
        let s = Simulator::new(SimOptions { max_steps: 5000, ..SimOptions::default() });
        if let Ok(m) = s.load_module(&text) {
            let out = s.alloc_zeroed(4096).unwrap();
            for e in m.entries().map(str::to_string).collect::<Vec<_>>() {
                let n = m.module().functions.iter().find(|f| f.name == e).unwrap().params.len();
                let _ = s.launch(&m, &e, [2, 1, 1], [32, 1, 1], 0, &vec![out; n]);
            }
        }
    }
}

/// The production lists of every operation (`BinOp::ALL` and the rest, which the parser
/// searches) match the exhaustive chains above, so a new variant cannot be left out of them.
#[test]
fn every_all_list_is_complete() {
    assert_eq!(bin_ops(), BinOp::ALL.to_vec());
    assert_eq!(un_ops(), UnOp::ALL.to_vec());
    assert_eq!(cmps(), Cmp::ALL.to_vec());
    assert_eq!(rounds(), Round::ALL.to_vec());
    assert_eq!(atom_ops(), AtomOp::ALL.to_vec());
    assert_eq!(specials(), Special::ALL.to_vec());
}

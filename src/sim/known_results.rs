//! Every operator, comparison, rounding, atomic, shuffle and vote executed with a known
//! result, and every `Op` variant executed at least once. The known results are what an H200
//! computes for the same PTX.

use super::coverage::*;
use crate::ptx::*;
use crate::ptx::{Arch, write_module};
use smallvec::smallvec;
use std::collections::BTreeSet;

// ---------------------------------------------------------------------------------------
// Every operation with a known result

/// Runs `body` on `lanes` threads of one block. Each lane stores `result` (a predicate as 0/1)
/// at `out + 8 * lane`. `%rd12` holds the address of a 64-byte scratch buffer that starts as
/// `scratch`. Registers `%r15`, `%r14`, `%rd13`..`%rd15` are the harness's.
fn eval(
    body: Vec<Instr>,
    result: Reg,
    lanes: u32,
    scratch: [u64; 8],
) -> (Vec<u64>, [u64; 8], Module) {
    let mut all = vec![
        i(Op::Ld {
            space: Space::Param,
            ty: Ty::U64,
            dst: smallvec![rd(15)],
            addr: at(AddrBase::Param("out".into()), 0),
        }),
        i(Op::Ld {
            space: Space::Param,
            ty: Ty::U64,
            dst: smallvec![rd(12)],
            addr: at(AddrBase::Param("scratch".into()), 0),
        }),
        i(Op::Mov {
            ty: Ty::U32,
            dst: r(15),
            src: Operand::Special(Special::Tid(Dim::X)),
        }),
        i(Op::Bin {
            op: BinOp::MulWide,
            ty: Ty::U32,
            dst: rd(14),
            a: o(r(15)),
            b: imm(8),
        }),
        i(Op::Bin {
            op: BinOp::Add,
            ty: Ty::U64,
            dst: rd(13),
            a: o(rd(15)),
            b: o(rd(14)),
        }),
    ];
    all.extend(body);
    let (val, ty) = match result.class {
        RegClass::Pred => {
            all.push(i(Op::Selp {
                ty: Ty::U32,
                dst: r(14),
                a: imm(1),
                b: imm(0),
                p: result,
            }));
            (r(14), Ty::B32)
        }
        RegClass::B32 | RegClass::F32 => (result, Ty::B32),
        RegClass::B64 | RegClass::F64 => (result, Ty::B64),
    };
    all.push(i(Op::St {
        space: Space::Global,
        ty,
        addr: at(AddrBase::Reg(rd(13)), 0),
        src: smallvec![o(val)],
    }));
    all.push(i(Op::Ret));
    let m = Module {
        arch: Arch::Sm80,
        files: vec!["src/kernel.rs".into()],
        functions: vec![Function {
            name: "eval".into(),
            params: vec![
                Param {
                    name: "out".into(),
                    ty: Ty::U64,
                },
                Param {
                    name: "scratch".into(),
                    ty: Ty::U64,
                },
            ],
            reqntid: None,
            reqnctapercluster: None,
            explicitcluster: false,
            maxnreg: None,
            minnctapersm: None,
            shared: vec![],
            local: vec![],
            consts: vec![],
            strings: vec![],
            regs: RegCounts {
                pred: 8,
                b32: 16,
                b64: 16,
                f32: 8,
                f64: 8,
            },
            body: all,
        }],
    };
    let text = write_module(&m);
    let s = sim();
    let module = s
        .load_module(&text)
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let out = s.alloc_zeroed(8 * lanes as usize).unwrap();
    let scr = s.alloc(64).unwrap();
    let bytes: Vec<u8> = scratch.iter().flat_map(|x| x.to_le_bytes()).collect();
    s.write(scr, &bytes).unwrap();
    s.launch(&module, "eval", [1, 1, 1], [lanes, 1, 1], 0, &[out, scr])
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let mut b = vec![0u8; 8 * lanes as usize];
    s.read(out, &mut b).unwrap();
    let vals = b
        .chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let mut sb = [0u8; 64];
    s.read(scr, &mut sb).unwrap();
    let mut scr_after = [0u64; 8];
    for (k, c) in sb.chunks(8).enumerate() {
        scr_after[k] = u64::from_le_bytes(c.try_into().unwrap());
    }
    (vals, scr_after, m)
}

/// One operation in isolation: `body` computes into `result` on one thread.
fn eval1(body: Vec<Instr>, result: Reg) -> (u64, Module) {
    let (v, _, m) = eval(body, result, 1, [0; 8]);
    (v[0], m)
}

fn bin(op: BinOp, ty: Ty, a: Operand, b: Operand, dst: Reg) -> Instr {
    i(Op::Bin { op, ty, dst, a, b })
}

fn s32(x: i32) -> u64 {
    u64::from(x as u32)
}

/// Known results of each binary operator (at least one case per operator).
fn bin_cases(op: BinOp) -> Vec<(Ty, Operand, Operand, Reg, u64)> {
    let (i, fl, dbl) = (imm, Operand::F32, Operand::F64);
    match op {
        BinOp::Add => vec![
            (Ty::S32, i(i32::MAX as i64), i(1), r(0), s32(i32::MIN)),
            (Ty::F32, fl(1.5), fl(2.25), f(0), f32b(3.75)),
            (Ty::F64, dbl(1e300), dbl(1e300), fd(0), f64b(2e300)),
            (Ty::U64, i(-1), i(2), rd(0), 1),
        ],
        BinOp::Sub => vec![
            (Ty::U32, i(0), i(1), r(0), 0xFFFF_FFFF),
            (Ty::F32, fl(1.0), fl(0.25), f(0), f32b(0.75)),
        ],
        BinOp::Mul => vec![
            (Ty::S64, i(-3), i(5), rd(0), (-15i64) as u64),
            (Ty::F32, fl(0.1), fl(3.0), f(0), f32b(0.1f32 * 3.0)),
            (Ty::U32, i(0x10000), i(0x10000), r(0), 0),
        ],
        BinOp::MulHi => vec![
            (Ty::U32, i(0xFFFF_FFFF), i(0xFFFF_FFFF), r(0), 0xFFFF_FFFE),
            (Ty::S32, i(-2), i(3), r(0), 0xFFFF_FFFF),
            (Ty::U64, i(-1), i(-1), rd(0), u64::MAX - 1),
        ],
        BinOp::MulWide => vec![
            (Ty::S32, i(-2), i(3), rd(0), (-6i64) as u64),
            (Ty::U32, i(0xFFFF_FFFF), i(2), rd(0), 0x1_FFFF_FFFE),
        ],
        BinOp::Div => vec![
            (Ty::S32, i(-7), i(2), r(0), s32(-3)),
            (Ty::U32, i(7), i(0), r(0), 0xFFFF_FFFF),
            (Ty::F32, fl(1.0), fl(3.0), f(0), f32b(1.0 / 3.0)),
            (Ty::F64, dbl(1.0), dbl(0.0), fd(0), f64b(f64::INFINITY)),
        ],
        BinOp::Rem => vec![
            (Ty::S32, i(-7), i(2), r(0), s32(-1)),
            (Ty::U64, i(10), i(3), rd(0), 1),
            (Ty::S32, i(5), i(0), r(0), 0xFFFF_FFFF),
            (Ty::U64, i(5), i(0), rd(0), u64::MAX),
        ],
        BinOp::Min => vec![
            (Ty::S32, i(-1), i(1), r(0), s32(-1)),
            (Ty::U32, i(-1), i(1), r(0), 1),
            (Ty::F32, fl(f32::NAN), fl(2.0), f(0), f32b(2.0)),
        ],
        BinOp::Max => vec![
            (Ty::S32, i(-1), i(1), r(0), 1),
            (Ty::U32, i(-1), i(1), r(0), 0xFFFF_FFFF),
            (Ty::F64, dbl(-3.0), dbl(f64::NAN), fd(0), f64b(-3.0)),
        ],
        BinOp::And => vec![(Ty::B32, i(0b1100), i(0b1010), r(0), 0b1000)],
        BinOp::Or => vec![(Ty::B64, i(0b1100), i(1 << 40), rd(0), 0b1100 | 1 << 40)],
        BinOp::Xor => vec![(Ty::B32, i(-1), i(0xF), r(0), 0xFFFF_FFF0)],
        BinOp::Shl => vec![
            (Ty::B32, i(1), i(31), r(0), 0x8000_0000),
            (Ty::B32, i(1), i(32), r(0), 0),
            (Ty::B64, i(1), i(40), rd(0), 1 << 40),
        ],
        BinOp::Shr => vec![
            (Ty::S32, i(-8), i(1), r(0), s32(-4)),
            (Ty::U32, i(0x8000_0000), i(31), r(0), 1),
            (Ty::S32, i(-1), i(100), r(0), 0xFFFF_FFFF),
            (Ty::U64, i(-1), i(64), rd(0), 0),
        ],
        BinOp::Copysign => vec![
            (Ty::F32, fl(-1.0), fl(2.5), f(0), f32b(-2.5)),
            (Ty::F64, dbl(1.0), dbl(-4.0), fd(0), f64b(4.0)),
        ],
        BinOp::AddFtz => vec![
            (Ty::F32, fl(1.5), fl(2.25), f(0), f32b(3.75)),
            (Ty::F32, fl(3e-39), fl(3e-39), f(0), f32b(0.0)),
        ],
        BinOp::SubFtz => vec![(Ty::F32, fl(1.0), fl(0.25), f(0), f32b(0.75))],
        BinOp::MulFtz => vec![(Ty::F32, fl(1e-20), fl(1e-20), f(0), f32b(0.0))],
        BinOp::DivApprox => vec![(Ty::F32, fl(1.0), fl(4.0), f(0), f32b(0.25))],
    }
}

/// Known results of each unary operator.
fn un_cases(op: UnOp) -> Vec<(Ty, Operand, Reg, u64)> {
    let (i, fl, dbl) = (imm, Operand::F32, Operand::F64);
    match op {
        UnOp::Neg => vec![
            (Ty::S32, i(5), r(0), s32(-5)),
            (Ty::F32, fl(0.0), f(0), f32b(-0.0)),
        ],
        UnOp::Abs => vec![
            (Ty::S32, i(-5), r(0), 5),
            (Ty::F64, dbl(-2.0), fd(0), f64b(2.0)),
        ],
        UnOp::Not => vec![(Ty::B32, i(0), r(0), 0xFFFF_FFFF)],
        UnOp::Cnot => vec![(Ty::B32, i(0), r(0), 1), (Ty::B32, i(7), r(0), 0)],
        UnOp::Popc => vec![(Ty::B32, i(0xF0F0), r(0), 8), (Ty::B64, i(-1), r(0), 64)],
        UnOp::Clz => vec![(Ty::B32, i(1), r(0), 31), (Ty::B64, i(1), r(0), 63)],
        UnOp::Brev => vec![(Ty::B32, i(1), r(0), 0x8000_0000)],
        UnOp::Sqrt => vec![
            (Ty::F32, fl(2.0), f(0), f32b(2.0f32.sqrt())),
            (Ty::F64, dbl(2.0), fd(0), f64b(2.0f64.sqrt())),
        ],
        UnOp::Rsqrt => vec![
            (Ty::F32, fl(4.0), f(0), f32b(0.5)),
            (Ty::F64, dbl(0.25), fd(0), f64b(2.0)),
        ],
        UnOp::Rcp => vec![(Ty::F32, fl(4.0), f(0), f32b(0.25))],
        UnOp::Sin => vec![(Ty::F32, fl(0.0), f(0), f32b(0.0))],
        UnOp::Cos => vec![(Ty::F32, fl(0.0), f(0), f32b(1.0))],
        UnOp::Ex2 => vec![(Ty::F32, fl(3.0), f(0), f32b(8.0))],
        UnOp::Lg2 => vec![(Ty::F32, fl(8.0), f(0), f32b(3.0))],
        UnOp::Tanh => vec![(Ty::F32, fl(0.0), f(0), f32b(0.0))],
        UnOp::SinFtz => vec![(Ty::F32, fl(1e-40), f(0), f32b(0.0))],
        UnOp::CosFtz => vec![(Ty::F32, fl(0.0), f(0), f32b(1.0))],
        UnOp::Ex2Ftz => vec![(Ty::F32, fl(-130.0), f(0), f32b(0.0))],
        UnOp::Lg2Ftz => vec![(Ty::F32, fl(8.0), f(0), f32b(3.0))],
        UnOp::RcpApprox => vec![(Ty::F32, fl(4.0), f(0), f32b(0.25))],
        UnOp::RsqrtFtz => vec![(Ty::F32, fl(1e-40), f(0), f32b(f32::INFINITY))],
        UnOp::SqrtApprox => vec![(Ty::F32, fl(4.0), f(0), f32b(2.0))],
    }
}

/// Known results of each comparison.
fn cmp_cases(cmp: Cmp) -> Vec<(Ty, Operand, Operand, bool)> {
    let (i, fl) = (imm, Operand::F32);
    let nan = fl(f32::NAN);
    match cmp {
        Cmp::Eq => vec![
            (Ty::F32, fl(1.0), fl(1.0), true),
            (Ty::F32, nan, nan, false),
        ],
        Cmp::Ne => vec![(Ty::F32, nan, fl(1.0), false), (Ty::S32, i(1), i(2), true)],
        Cmp::Lt => vec![
            (Ty::U32, i(-1), i(1), false),
            (Ty::S32, i(-1), i(1), true),
            (Ty::F32, nan, fl(1.0), false),
        ],
        Cmp::Le => vec![(Ty::F64, Operand::F64(2.0), Operand::F64(2.0), true)],
        Cmp::Gt => vec![(Ty::U64, i(-1), i(1), true), (Ty::S64, i(-1), i(1), false)],
        Cmp::Ge => vec![(Ty::F32, fl(1.0), nan, false), (Ty::U64, i(3), i(3), true)],
        Cmp::Neu => vec![
            (Ty::F32, nan, fl(1.0), true),
            (Ty::F32, fl(1.0), fl(1.0), false),
        ],
        Cmp::Num => vec![
            (Ty::F32, fl(1.0), fl(2.0), true),
            (Ty::F32, nan, fl(2.0), false),
        ],
        Cmp::Nan => vec![
            (Ty::F32, nan, fl(1.0), true),
            (Ty::F32, fl(0.0), fl(1.0), false),
        ],
    }
}

/// Known results of `cvt` with each rounding modifier (and without one).
fn cvt_cases(round: Option<Round>) -> Vec<(bool, Ty, Ty, Operand, u64)> {
    // (sat, dty, sty, source value (moved into a register of the source type), result)
    let (i, fl, dbl) = (imm, Operand::F32, Operand::F64);
    match round {
        Some(Round::Rn) => vec![
            (false, Ty::F32, Ty::S32, i(16_777_217), f32b(16_777_216.0)),
            (false, Ty::F32, Ty::F64, dbl(0.1), f32b(0.1)),
        ],
        Some(Round::Rz) => vec![
            (false, Ty::F32, Ty::S32, i(16_777_219), f32b(16_777_218.0)),
            (false, Ty::F32, Ty::F64, dbl(1e300), f32b(f32::MAX)),
        ],
        Some(Round::Rni) => vec![
            (false, Ty::S32, Ty::F32, fl(2.5), 2),
            (false, Ty::S32, Ty::F32, fl(-2.5), s32(-2)),
            (false, Ty::F32, Ty::F32, fl(3.5), f32b(4.0)),
        ],
        Some(Round::Rzi) => vec![
            (false, Ty::S32, Ty::F32, fl(-2.7), s32(-2)),
            (false, Ty::S32, Ty::F32, fl(3e10), s32(i32::MAX)),
            (false, Ty::U8, Ty::F32, fl(-5.0), 0),
            (false, Ty::S32, Ty::F32, fl(f32::NAN), 0),
            (false, Ty::U64, Ty::F64, dbl(f64::NAN), 1 << 63),
            (false, Ty::S32, Ty::F64, dbl(f64::NAN), 0x8000_0000),
            (false, Ty::U8, Ty::F64, dbl(f64::NAN), 0x80),
        ],
        Some(Round::Rmi) => vec![(false, Ty::S64, Ty::F64, dbl(-2.5), (-3i64) as u64)],
        Some(Round::Rpi) => vec![(false, Ty::S32, Ty::F32, fl(2.1), 3)],
        None => vec![
            (false, Ty::S32, Ty::S8, i(0xFF), 0xFFFF_FFFF),
            (false, Ty::U8, Ty::U32, i(0x1FF), 0xFF),
            (true, Ty::S8, Ty::S32, i(1000), 127),
            (false, Ty::F64, Ty::F32, fl(0.1), f64b(f64::from(0.1f32))),
            (true, Ty::F32, Ty::F32, fl(1.5), f32b(1.0)),
            (false, Ty::U64, Ty::S32, i(-1), u64::MAX),
        ],
    }
}

fn reg_for(ty: Ty, k: u32) -> Reg {
    match RegClass::of(ty) {
        RegClass::Pred => p(k),
        RegClass::B32 => r(k),
        RegClass::B64 => rd(k),
        RegClass::F32 => f(k),
        RegClass::F64 => fd(k),
    }
}

/// Atomics: (type, memory before, a, b, returned old value, memory after).
fn atom_cases(op: AtomOp) -> Vec<(Ty, u64, Operand, Option<Operand>, u64)> {
    let i = imm;
    match op {
        AtomOp::Add => vec![
            (Ty::U32, 0xFFFF_FFFF, i(2), None, 1),
            (Ty::F32, f32b(1.5), Operand::F32(2.0), None, f32b(3.5)),
            (Ty::F64, f64b(1.5), Operand::F64(-2.0), None, f64b(-0.5)),
            (Ty::U64, u64::MAX, i(1), None, 0),
        ],
        AtomOp::Min => vec![
            (Ty::S32, 5, i(-3), None, s32(-3)),
            (Ty::U32, 5, i(-3), None, 5),
        ],
        AtomOp::Max => vec![
            (Ty::S64, 5, i(-3), None, 5),
            (Ty::U64, 5, i(-3), None, (-3i64) as u64),
        ],
        AtomOp::And => vec![(Ty::B32, 0b1100, i(0b1010), None, 0b1000)],
        AtomOp::Or => vec![(Ty::B64, 0b1100, i(0b1010), None, 0b1110)],
        AtomOp::Xor => vec![(Ty::B32, 0b1100, i(0b1010), None, 0b0110)],
        AtomOp::Exch => vec![(Ty::B32, 7, i(9), None, 9)],
        AtomOp::Cas => vec![
            (Ty::B32, 7, i(7), Some(i(9)), 9),
            (Ty::B64, 7, i(8), Some(i(9)), 7),
        ],
        AtomOp::Inc => vec![(Ty::U32, 5, i(5), None, 0), (Ty::U32, 4, i(5), None, 5)],
        AtomOp::Dec => vec![(Ty::U32, 0, i(5), None, 5), (Ty::U32, 3, i(5), None, 2)],
    }
}

/// A kernel whose threads print their rank, `rank - 1`, a quarter and `u64::MAX` (all but
/// thread 1), then `bare`.
fn printf_module() -> Module {
    let body = vec![
        i(Op::Mov {
            ty: Ty::U32,
            dst: r(0),
            src: Operand::Special(Special::Tid(Dim::X)),
        }),
        i(Op::St {
            space: Space::Local,
            ty: Ty::U32,
            addr: at(AddrBase::Local(0), 0),
            src: smallvec![o(r(0))],
        }),
        i(Op::Bin {
            op: BinOp::Sub,
            ty: Ty::S32,
            dst: r(1),
            a: o(r(0)),
            b: imm(1),
        }),
        i(Op::St {
            space: Space::Local,
            ty: Ty::U32,
            addr: at(AddrBase::Local(0), 4),
            src: smallvec![o(r(1))],
        }),
        i(Op::St {
            space: Space::Local,
            ty: Ty::F64,
            addr: at(AddrBase::Local(0), 8),
            src: smallvec![Operand::F64(0.25)],
        }),
        i(Op::St {
            space: Space::Local,
            ty: Ty::U64,
            addr: at(AddrBase::Local(0), 16),
            src: smallvec![imm(-1)],
        }),
        i(Op::Setp {
            cmp: Cmp::Eq,
            ty: Ty::U32,
            dst: p(0),
            a: o(r(0)),
            b: imm(1),
        }),
        when(
            p(0),
            true,
            Op::Vprintf {
                format: 0,
                args: Some(0),
            },
        ),
        i(Op::Vprintf {
            format: 1,
            args: None,
        }),
        i(Op::Ret),
    ];
    let string = |name: &str, text: &str| ConstDecl {
        name: name.into(),
        align: 1,
        data: text.bytes().chain([0]).collect(),
        comment: None,
    };
    Module {
        arch: Arch::Sm80,
        files: vec![],
        functions: vec![Function {
            name: "printf".into(),
            params: vec![],
            reqntid: None,
            reqnctapercluster: None,
            explicitcluster: false,
            maxnreg: None,
            minnctapersm: None,
            shared: vec![],
            local: vec![LocalDecl {
                name: "print0".into(),
                align: 8,
                bytes: 24,
                comment: None,
            }],
            consts: vec![],
            strings: vec![
                string("printf_fmt0", "t%u %d %e %llx 100%%\n"),
                string("printf_fmt1", "bare\n"),
            ],
            regs: RegCounts {
                pred: 1,
                b32: 2,
                ..RegCounts::default()
            },
            body,
        }],
    }
}

/// Every operator, comparison, rounding and atomic with a known result; every `Op` variant
/// executed at least once.
#[test]
fn every_operation_executes_with_its_known_result() {
    let mut executed: BTreeSet<usize> = BTreeSet::new();
    let mut note = |m: &Module| {
        for ins in &m.functions[0].body {
            executed.insert(op_index(&ins.op));
        }
    };
    for op in bin_ops() {
        let cases = bin_cases(op);
        assert!(!cases.is_empty());
        for (ty, a, b, dst, want) in cases {
            let (got, m) = eval1(vec![bin(op, ty, a, b, dst)], dst);
            assert_eq!(got, want, "{op:?}.{ty:?} {a:?} {b:?}");
            note(&m);
        }
    }
    for op in un_ops() {
        for (ty, a, dst, want) in un_cases(op) {
            let (got, m) = eval1(vec![i(Op::Un { op, ty, dst, a })], dst);
            assert_eq!(got, want, "{op:?}.{ty:?} {a:?}");
            note(&m);
        }
    }
    for cmp in cmps() {
        for (ty, a, b, want) in cmp_cases(cmp) {
            let (got, m) = eval1(
                vec![i(Op::Setp {
                    cmp,
                    ty,
                    dst: p(0),
                    a,
                    b,
                })],
                p(0),
            );
            assert_eq!(got, u64::from(want), "setp.{cmp:?}.{ty:?} {a:?} {b:?}");
            note(&m);
        }
    }
    for round in rounds().into_iter().map(Some).chain([None]) {
        for (sat, dty, sty, v, want) in cvt_cases(round) {
            let (src, dst) = (reg_for(sty, 1), reg_for(dty, 2));
            // Narrow values sit in 32-bit registers; `mov` has no 8- or 16-bit form there.
            let mov_ty = if sty.bytes() < 4 { Ty::B32 } else { sty };
            let body = vec![
                i(Op::Mov {
                    ty: mov_ty,
                    dst: src,
                    src: v,
                }),
                i(Op::Cvt {
                    round,
                    sat,
                    dty,
                    sty,
                    dst,
                    src,
                }),
            ];
            let (got, m) = eval1(body, dst);
            assert_eq!(got, want, "cvt {round:?} sat={sat} {dty:?}.{sty:?} {v:?}");
            note(&m);
        }
    }
    for op in atom_ops() {
        for (ty, before, a, b, after) in atom_cases(op) {
            let dst = reg_for(ty, 3);
            let body = vec![i(Op::Atom {
                order: None,
                space: Space::Global,
                op,
                ty,
                dst,
                addr: at(AddrBase::Reg(rd(12)), 8),
                a,
                b,
            })];
            let mut scratch = [0u64; 8];
            scratch[1] = before;
            let (got, mem, m) = eval(body, dst, 1, scratch);
            let mask = if ty.bytes() == 4 {
                0xFFFF_FFFF
            } else {
                u64::MAX
            };
            assert_eq!(got[0], before & mask, "atom.{op:?}.{ty:?} old value");
            assert_eq!(mem[1] & mask, after, "atom.{op:?}.{ty:?} memory");
            note(&m);
            if !matches!(op, AtomOp::Exch | AtomOp::Cas) {
                let body = vec![
                    i(Op::Red {
                        order: None,
                        space: Space::Global,
                        op,
                        ty,
                        addr: at(AddrBase::Reg(rd(12)), 8),
                        a,
                    }),
                    i(Op::Ld {
                        space: Space::Global,
                        ty,
                        dst: smallvec![dst],
                        addr: at(AddrBase::Reg(rd(12)), 8),
                    }),
                ];
                let (got, _, m) = eval(body, dst, 1, scratch);
                assert_eq!(got[0] & mask, after, "red.{op:?}.{ty:?}");
                note(&m);
            }
        }
    }
    // Warp collectives on 32 lanes: lane l holds 3l + 1.
    let lane_val = vec![
        i(Op::Mov {
            ty: Ty::U32,
            dst: r(1),
            src: Operand::Special(Special::Laneid),
        }),
        i(Op::Mad {
            ty: Ty::U32,
            dst: r(2),
            a: o(r(1)),
            b: imm(3),
            c: imm(1),
        }),
    ];
    for mode in shfl_modes() {
        let (b, c, want): (i64, i64, fn(u64) -> u64) = match mode {
            ShflMode::Up => (2, 0, |l| if l >= 2 { l - 2 } else { l }),
            ShflMode::Down => (3, 0x1f, |l| if l + 3 <= 31 { l + 3 } else { l }),
            ShflMode::Bfly => (5, 0x1f, |l| l ^ 5),
            ShflMode::Idx => (7, 0x1f, |_| 7),
        };
        let mut body = lane_val.clone();
        body.push(i(Op::Shfl {
            mode,
            dst: r(3),
            pred: Some(p(1)),
            src: o(r(2)),
            b: imm(b),
            c: imm(c),
            mask: imm(-1),
        }));
        let (got, _, m) = eval(body, r(3), 32, [0; 8]);
        for (l, g) in got.iter().enumerate() {
            assert_eq!(*g, want(l as u64) * 3 + 1, "shfl.{mode:?} lane {l}");
        }
        note(&m);
    }
    for mode in vote_modes() {
        // Lanes divisible by 3 vote true.
        let mut body = lane_val.clone();
        body.push(i(Op::Bin {
            op: BinOp::Rem,
            ty: Ty::U32,
            dst: r(4),
            a: o(r(1)),
            b: imm(3),
        }));
        body.push(i(Op::Setp {
            cmp: Cmp::Eq,
            ty: Ty::U32,
            dst: p(2),
            a: o(r(4)),
            b: imm(0),
        }));
        let dst = if mode == VoteMode::Ballot { r(5) } else { p(3) };
        body.push(i(Op::Vote {
            mode,
            dst,
            src: p(2),
            negate: false,
            mask: imm(-1),
        }));
        let (got, _, m) = eval(body, dst, 32, [0; 8]);
        let want = match mode {
            VoteMode::All | VoteMode::Uni => 0,
            VoteMode::Any => 1,
            VoteMode::Ballot => 0x4924_9249,
        };
        assert!(got.iter().all(|g| *g == want), "vote.{mode:?}: {got:?}");
        note(&m);
    }
    // Clusters, in a cluster of one block: `mapa` of rank 0 gives the `.shared::cluster`
    // address of rank 0 (bit 27 set: rank + 1 above the `.shared` address), and a barrier
    // every thread arrives at completes.
    let body = vec![
        i(Op::BarrierCluster { wait: false }),
        i(Op::Mapa {
            dst: r(2),
            src: imm(20),
            rank: imm(0),
        }),
        i(Op::BarrierCluster { wait: true }),
    ];
    let (got, m) = eval1(body, r(2));
    assert_eq!(got, (1 << 27) | 20, "mapa");
    note(&m);
    // The remaining variants in one program: labels, branches, predicates, selp, mad.wide,
    // cvta, ld/st, bar.sync, bar.warp.sync, match, redux, activemask, membar, comments,
    // line information.
    let body = vec![
        i(Op::Comment("op: the rest".into())),
        i(Op::Loc {
            file: 1,
            line: 3,
            column: 9,
        }),
        i(Op::Mov {
            ty: Ty::U32,
            dst: r(1),
            src: Operand::Special(Special::Laneid),
        }),
        i(Op::CvtaToGlobal {
            dst: rd(1),
            src: rd(12),
        }),
        i(Op::St {
            space: Space::Global,
            ty: Ty::U32,
            addr: at(AddrBase::Reg(rd(1)), 0),
            src: smallvec![imm(40)],
        }),
        i(Op::BarSync { id: 0, count: None }),
        i(Op::Ld {
            space: Space::Global,
            ty: Ty::U32,
            dst: smallvec![r(2)],
            addr: at(AddrBase::Reg(rd(1)), 0),
        }),
        // The same element again through an acquire load (the thread yields after it).
        i(Op::LdOrdered {
            sem: Sem::Acquire,
            scope: Scope::Gpu,
            space: Space::Global,
            ty: Ty::U32,
            dst: r(2),
            addr: at(AddrBase::Reg(rd(1)), 0),
        }),
        i(Op::BarWarpSync { mask: imm(-1) }),
        i(Op::Redux {
            op: AtomOp::Add,
            ty: Ty::U32,
            dst: r(3),
            src: o(r(1)),
            mask: imm(-1),
        }),
        i(Op::Match {
            all: true,
            ty: Ty::B32,
            dst: r(4),
            src: o(r(2)),
            mask: imm(-1),
        }),
        i(Op::Activemask { dst: r(5) }),
        i(Op::Membar { scope: Scope::Cta }),
        i(Op::Nanosleep { ns: 20 }),
        i(Op::MadWide {
            ty: Ty::U32,
            dst: rd(2),
            a: o(r(3)),
            b: imm(2),
            c: imm(1),
        }),
        i(Op::Setp {
            cmp: Cmp::Eq,
            ty: Ty::U32,
            dst: p(1),
            a: o(r(4)),
            b: o(r(5)),
        }),
        i(Op::PredNot { dst: p(2), a: p(1) }),
        i(Op::PredBin {
            op: BinOp::Or,
            dst: p(3),
            a: p(2),
            b: p(2),
        }),
        when(
            p(3),
            false,
            Op::Bra {
                target: "$L_bad".into(),
                uni: true,
            },
        ),
        i(Op::Selp {
            ty: Ty::U64,
            dst: rd(3),
            a: o(rd(2)),
            b: imm(0),
            p: p(1),
        }),
        i(Op::Bra {
            target: "$L_out".into(),
            uni: false,
        }),
        i(Op::Label("$L_bad".into())),
        i(Op::Ret),
        i(Op::Label("$L_out".into())),
    ];
    let (got, _, m) = eval(body, rd(3), 32, [0; 8]);
    // redux: 0 + ... + 31 = 496; mad.wide: 2 * 496 + 1.
    assert!(got.iter().all(|g| *g == 993), "{got:?}");
    note(&m);
    let m = printf_module();
    let sim = super::Simulator::new(super::SimOptions {
        capture_prints: true,
        ..super::SimOptions::default()
    });
    let module = sim
        .load_module(&write_module(&m))
        .unwrap_or_else(|e| panic!("{e}"));
    let report = (sim.launch(&module, "printf", [2, 1, 1], [3, 1, 1], 0, &[]))
        .unwrap_or_else(|e| panic!("{e}"));
    // Thread order; thread 1 skips its guarded call.
    assert_eq!(
        report.printed,
        "t0 -1 2.500000e-01 ffffffffffffffff 100%\nbare\n\
         bare\n\
         t2 1 2.500000e-01 ffffffffffffffff 100%\nbare\n\
         t0 -1 2.500000e-01 ffffffffffffffff 100%\nbare\n\
         bare\n\
         t2 1 2.500000e-01 ffffffffffffffff 100%\nbare\n"
    );
    note(&m);
    let missing: Vec<usize> = (0..OP_VARIANTS).filter(|k| !executed.contains(k)).collect();
    assert!(
        missing.is_empty(),
        "op variants never executed: {missing:?}"
    );
}

//! Print ops in the emission builder: each one's C format (a `.global` string at module scope,
//! `<entry>_fmt<k>` for the `k`th print op) and buffer of values (a `.local` declaration,
//! `print<k>`, each value at the next multiple of its size, as `vprintf` reads them), and the
//! lowering: the values stored, then the call.

use super::*;
use crate::ir::{PrintPiece, PrintSpec};

/// The C conversion of one value.
fn conversion(spec: PrintSpec, d: DType) -> String {
    let wide = d.bytes() == 8;
    match spec {
        PrintSpec::Hex if wide => "%llx".into(),
        PrintSpec::Hex => "%x".into(),
        PrintSpec::Exp => "%e".into(),
        PrintSpec::Fixed(n) => format!("%.{n}f"),
        PrintSpec::Plain if d.is_float() => "%f".into(),
        PrintSpec::Plain => match (d.is_signed_int(), wide) {
            (true, true) => "%lld".into(),
            (false, true) => "%llu".into(),
            (true, false) => "%d".into(),
            (false, false) => "%u".into(),
        },
    }
}

/// How `vprintf` takes a value of `d`: its type in the buffer (integers of at most 32 bits as
/// 32-bit, floats as `f64`).
fn passed(d: DType) -> Ty {
    match d {
        DType::F32 | DType::F64 => Ty::F64,
        DType::I64 | DType::U64 => Ty::U64,
        _ => Ty::U32,
    }
}

/// A print op's C format (with its newline and NUL) for values of `dtypes`, each value's
/// offset in the buffer, and the buffer's bytes.
fn layout(pieces: &[PrintPiece], dtypes: &[DType]) -> (Vec<u8>, Vec<u32>, u32) {
    let mut text = String::new();
    let mut next = dtypes.iter();
    for p in pieces {
        match p {
            PrintPiece::Text(t) => text.push_str(&t.replace('%', "%%")),
            PrintPiece::Arg(spec) => {
                let d = next.next().copied().unwrap_or(DType::U32);
                text.push_str(&conversion(*spec, d));
            }
        }
    }
    text.push('\n');
    let mut bytes = text.into_bytes();
    bytes.push(0);
    let mut offsets = Vec::with_capacity(dtypes.len());
    let mut end = 0u32;
    for d in dtypes {
        let size = passed(*d).bytes();
        let at = end.next_multiple_of(size);
        offsets.push(at);
        end = at + size;
    }
    (bytes, offsets, end)
}

impl Emitter<'_> {
    /// The print ops in op order, each with the dtypes of its values.
    fn print_ops(&self) -> impl Iterator<Item = (OpId, &[PrintPiece], Vec<DType>)> + '_ {
        (self.ir.ops.iter().enumerate()).filter_map(|(i, o)| match &o.kind {
            OpKind::Print { pieces, args } => {
                let dtypes = (args.iter())
                    .map(|a| self.ir.expr(*a).ty.dtype().unwrap_or(DType::U32))
                    .collect();
                Some((OpId(i as u32), pieces.as_slice(), dtypes))
            }
            _ => None,
        })
    }

    /// The buffers of the print ops that print values (after the user's local arrays) and
    /// the format of every print op.
    pub(super) fn print_decls(&self, entry: &str) -> (Vec<LocalDecl>, Vec<ConstDecl>) {
        let (mut locals, mut strings) = (Vec::new(), Vec::new());
        for (k, (op, pieces, dtypes)) in self.print_ops().enumerate() {
            let (data, _, bytes) = layout(pieces, &dtypes);
            let loc = self.ir.ops[op.index()].loc;
            if bytes > 0 {
                locals.push(LocalDecl {
                    name: format!("print{k}"),
                    align: 8,
                    bytes,
                    comment: Some(format!("the values printed by {op} at {loc}")),
                });
            }
            strings.push(ConstDecl {
                name: format!("{entry}_fmt{k}"),
                align: 1,
                data,
                comment: Some(format!("the format printed by {op} at {loc}")),
            });
        }
        (locals, strings)
    }

    /// Prints `args` as print op `op` formats them: each value stored in the op's buffer,
    /// then the `vprintf` call.
    pub(crate) fn print(&mut self, op: OpId, args: &[Reg]) -> Result<(), PlanError> {
        let loc = self.ir.ops[op.index()].loc;
        let missing = || PlanError::Internal {
            missing: format!("format of print {op}"),
            loc,
        };
        let (mut k, mut buffer) = (None, self.ir.locals.len() as u32);
        for (i, (o, _, dtypes)) in self.print_ops().enumerate() {
            if o == op {
                k = Some((i as u32, dtypes));
                break;
            }
            buffer += u32::from(!dtypes.is_empty());
        }
        let (k, dtypes) = k.ok_or_else(missing)?;
        let OpKind::Print { pieces, .. } = &self.ir.ops[op.index()].kind else {
            return Err(missing());
        };
        let (_, offsets, _) = layout(pieces, &dtypes);
        let hex = (pieces.iter()).filter_map(|p| match p {
            PrintPiece::Arg(spec) => Some(*spec == PrintSpec::Hex),
            PrintPiece::Text(_) => None,
        });
        for (((&d, &offset), &v), hex) in dtypes.iter().zip(&offsets).zip(args).zip(hex) {
            let ty = passed(d);
            let v = match d {
                DType::F32 => {
                    let wide = self.reg(RegClass::F64);
                    self.op(Op::Cvt {
                        round: None,
                        sat: false,
                        dty: Ty::F64,
                        sty: Ty::F32,
                        dst: wide,
                        src: v,
                    });
                    wide
                }
                // A narrow integer in hexadecimal shows its own width's bits.
                DType::I8 | DType::I16 if hex => {
                    let masked = self.reg(RegClass::B32);
                    self.op(Op::Bin {
                        op: BinOp::And,
                        ty: Ty::B32,
                        dst: masked,
                        a: v.into(),
                        b: Operand::Imm((1i64 << (8 * d.bytes())) - 1),
                    });
                    masked
                }
                _ => v,
            };
            self.op(Op::St {
                space: Space::Local,
                ty,
                addr: Address {
                    base: AddrBase::Local(buffer),
                    offset: i64::from(offset),
                },
                src: smallvec![v.into()],
            });
        }
        self.op(Op::Vprintf {
            format: k,
            args: (!dtypes.is_empty()).then_some(buffer),
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_buffers_follow_vprintf() {
        let pieces = [
            PrintPiece::Text("a% ".into()),
            PrintPiece::Arg(PrintSpec::Plain),
            PrintPiece::Arg(PrintSpec::Hex),
            PrintPiece::Arg(PrintSpec::Fixed(2)),
            PrintPiece::Arg(PrintSpec::Plain),
        ];
        let dtypes = [DType::I8, DType::U64, DType::F32, DType::I64];
        let (data, offsets, bytes) = layout(&pieces, &dtypes);
        assert_eq!(data, b"a%% %d%llx%.2f%lld\n\0");
        assert_eq!(offsets, [0, 8, 16, 24]);
        assert_eq!(bytes, 32);
    }
}

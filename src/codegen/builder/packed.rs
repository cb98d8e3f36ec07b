//! Vector accesses, which both tile transfers (`vectorize`) and runs by index use: the
//! alignment test that chooses them at run time, and the accesses themselves (8- and 16-bit
//! elements packed in 32-bit words).

use super::{Emitter, is_narrow, mem_ty};
use crate::ir::DType;
use crate::ptx::*;
use smallvec::SmallVec;

impl Emitter<'_> {
    /// Whether `addr` is aligned to `bytes` (a power of two): `(addr & (bytes - 1)) == 0`.
    pub(crate) fn aligned(&mut self, addr: Reg, bytes: i64) -> Reg {
        let low = self.reg(RegClass::B64);
        self.op(Op::Bin {
            op: BinOp::And,
            ty: Ty::B64,
            dst: low,
            a: addr.into(),
            b: Operand::Imm(bytes - 1),
        });
        self.setp(Cmp::Eq, Ty::U64, low.into(), Operand::Imm(0))
    }

    /// Moves `regs` from (`load`) or to consecutive elements at `addr`, `width` elements per
    /// vector access (the address aligned for it).
    pub(crate) fn vectors(
        &mut self,
        load: bool,
        space: Space,
        dtype: DType,
        addr: Reg,
        regs: &[Reg],
        width: usize,
    ) {
        let bytes = width as i64 * dtype.bytes() as i64;
        for (j, chunk) in regs.chunks(width).enumerate() {
            let at = Address {
                base: AddrBase::Reg(addr),
                offset: j as i64 * bytes,
            };
            if is_narrow(dtype) {
                self.packed(load, space, dtype, at, chunk);
            } else if load {
                self.op(Op::Ld {
                    space,
                    ty: mem_ty(dtype),
                    dst: chunk.iter().copied().collect(),
                    addr: at,
                });
            } else {
                self.op(Op::St {
                    space,
                    ty: mem_ty(dtype),
                    addr: at,
                    src: chunk.iter().map(|&r| r.into()).collect(),
                });
            }
        }
    }

    /// One vector access of narrow elements packed in 32-bit words (four 8-bit or two 16-bit
    /// ones each, the first in the low bits): a load unpacks each element, sign- or
    /// zero-extended as registers hold narrow values; a store packs them.
    fn packed(&mut self, is_load: bool, space: Space, dtype: DType, addr: Address, elems: &[Reg]) {
        let size = dtype.bytes() as usize;
        let per_word = 4 / size;
        let words: SmallVec<[Reg; 4]> = (0..elems.len() / per_word)
            .map(|_| self.reg(RegClass::B32))
            .collect();
        if is_load {
            self.op(Op::Ld {
                space,
                ty: Ty::B32,
                dst: words.clone(),
                addr,
            });
            let wide = if dtype.is_signed_int() {
                Ty::S32
            } else {
                Ty::U32
            };
            for (e, &r) in elems.iter().enumerate() {
                let word = words[e / per_word];
                let shift = (e % per_word * size * 8) as i64;
                let bits = if shift == 0 {
                    word
                } else {
                    self.u32op(BinOp::Shr, word.into(), Operand::Imm(shift))
                };
                self.cvt(None, wide, mem_ty(dtype), r, bits);
            }
        } else {
            let mask = ((1u64 << (size * 8)) - 1) as i64;
            for (w, &word) in words.iter().enumerate() {
                for e in 0..per_word {
                    let r = elems[w * per_word + e];
                    let bits = self.u32op(BinOp::And, r.into(), Operand::Imm(mask));
                    let shift = (e * size * 8) as i64;
                    let bits = if shift == 0 {
                        bits
                    } else {
                        self.u32op(BinOp::Shl, bits.into(), Operand::Imm(shift))
                    };
                    if e == 0 {
                        self.op(Op::Mov {
                            ty: Ty::B32,
                            dst: word,
                            src: bits.into(),
                        });
                    } else {
                        self.op(Op::Bin {
                            op: BinOp::Or,
                            ty: Ty::B32,
                            dst: word,
                            a: word.into(),
                            b: bits.into(),
                        });
                    }
                }
            }
            self.op(Op::St {
                space,
                ty: Ty::B32,
                addr,
                src: words.iter().map(|&w| w.into()).collect(),
            });
        }
    }
}

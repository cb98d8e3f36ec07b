//! The parse of loads and stores: `ld`/`st` over a state space, vectors of 2 or 4, and `ld`
//! with a memory order.

use super::{
    ParseReason, R, parse_address, parse_operand, parse_order, parse_reg, parse_reg_list,
    parse_space, tys, want,
};
use crate::ptx::*;
use smallvec::SmallVec;

/// `ld.sem.scope.space.ty dst, [addr]` (`.relaxed` or `.acquire`).
pub(super) fn parse_ld_ordered(parts: &[&str], ops: &[&str], f: &Function) -> R<Op> {
    let (order, rest) = parse_order(&parts[1..])?;
    let (space, rest) = parse_space(rest)?;
    let [ty] = tys::<1>(rest)?;
    let [d, addr] = want::<2>(ops)?;
    let dst = parse_reg(&d)?;
    match order {
        Some((sem @ (Sem::Relaxed | Sem::Acquire), scope)) => Ok(Op::LdOrdered {
            sem,
            scope,
            space,
            ty,
            dst,
            addr: parse_address(&addr, space, f)?,
        }),
        _ => Err(ParseReason::UnknownMnemonic),
    }
}

pub(super) fn parse_ldst(load: bool, parts: &[&str], ops: &[&str], f: &Function) -> R<Op> {
    let (space, rest) = parse_space(&parts[1..])?;
    let (n, rest) = match rest {
        ["v2", rest @ ..] => (2, rest),
        ["v4", rest @ ..] => (4, rest),
        _ => (1, rest),
    };
    let [ty] = tys::<1>(rest)?;
    if load {
        let [d, addr] = want::<2>(ops)?;
        let dst = parse_reg_list(&d, n)?;
        Ok(Op::Ld {
            space,
            ty,
            dst,
            addr: parse_address(&addr, space, f)?,
        })
    } else {
        let [addr, s] = want::<2>(ops)?;
        let src = match s.strip_prefix('{') {
            Some(inner) => {
                let inner = inner.strip_suffix('}').ok_or(ParseReason::BadOperand)?;
                inner
                    .split(',')
                    .map(|t| parse_operand(t.trim(), f))
                    .collect::<R<SmallVec<[Operand; 4]>>>()?
            }
            None => smallvec::smallvec![parse_operand(&s, f)?],
        };
        if src.len() != n || (n == 1 && s.starts_with('{')) {
            return Err(ParseReason::OperandCount);
        }
        Ok(Op::St {
            space,
            ty,
            addr: parse_address(&addr, space, f)?,
            src,
        })
    }
}

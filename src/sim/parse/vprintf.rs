//! The parse of a `vprintf` call: one line, a block the writer prints whole.

use super::{ParseReason, R, parse_reg};
use crate::ptx::*;

/// A `vprintf` call block, as the writer prints it (one line).
pub(super) fn parse_vprintf(line: &str, f: &Function) -> R<Instr> {
    let after = |key: &str| -> Option<&str> {
        let at = line.find(key)? + key.len();
        line[at..].split(';').next().map(str::trim)
    };
    let format = after("cvta.global.u64 %vp0,").ok_or(ParseReason::UnexpectedLine)?;
    let format = (f.strings.iter())
        .position(|s| s.name == format)
        .ok_or(ParseReason::BadOperand)?;
    let args = match after("cvta.local.u64 %vp1,") {
        Some(name) => Some(
            (f.local.iter())
                .position(|l| l.name == name)
                .ok_or(ParseReason::BadOperand)? as u32,
        ),
        None => None,
    };
    let call = (line.split(';'))
        .map(str::trim)
        .find(|s| s.ends_with("call.uni (retval0), vprintf, (param0, param1)"))
        .ok_or(ParseReason::UnexpectedLine)?;
    let guard = match call.split_once(' ') {
        Some((g, _)) if g.starts_with('@') => {
            let (negate, tok) = match g[1..].strip_prefix('!') {
                Some(t) => (true, t),
                None => (false, &g[1..]),
            };
            let pred = parse_reg(tok)?;
            if pred.class != RegClass::Pred {
                return Err(ParseReason::BadRegister);
            }
            Some(Guard { pred, negate })
        }
        _ => None,
    };
    let ins = Instr {
        guard,
        op: Op::Vprintf {
            format: format as u32,
            args,
        },
    };
    // Exactly the writer's text, or not a call this parser reads.
    let mut again = String::new();
    crate::ptx::write::write_instr(&mut again, f, &ins).map_err(|_| ParseReason::UnexpectedLine)?;
    if again.trim() != line {
        return Err(ParseReason::UnexpectedLine);
    }
    Ok(ins)
}

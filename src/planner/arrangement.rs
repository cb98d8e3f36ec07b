//! Arrangement assignment: which arrangement each payload has, and where one is needed but
//! another is given.
//!
//! Producers fix a payload's arrangement (a direct load: blocked; a striped load: striped);
//! element-wise ops carry it from their operands to their result; a fill or per-slot write
//! leaves it free. A payload must have one arrangement at every producer, and every consumer
//! with a requirement (a store) must find it. Runs to a fixed point, so loops are covered.

use super::error::PlanError;
use crate::ir::ops::{Algorithm, OpKind};
use crate::ir::{Arrangement, Ir, Loc, OpId};

/// The arrangement an algorithm reads or writes for a group of `threads` threads.
pub fn of_algorithm(a: Algorithm, threads: u32) -> Arrangement {
    match a {
        Algorithm::Direct => Arrangement::Blocked,
        Algorithm::Striped => Arrangement::Striped { threads },
    }
}

/// Assigns every payload an arrangement, or reports the first conflict.
pub fn assign(ir: &Ir) -> Result<Vec<Option<Arrangement>>, PlanError> {
    let mut arr: Vec<Option<(Arrangement, Loc)>> = vec![None; ir.datas.len()];
    let mut order = Vec::new();
    ir.walk(|op, _| order.push(op));
    // Each round can only fix more payloads, so this ends within `datas + 1` rounds.
    for _ in 0..=ir.datas.len() {
        let mut changed = false;
        for &op in &order {
            let data = ir.op(op);
            let produced = match &data.kind {
                OpKind::Load(t) => {
                    let a = of_algorithm(t.algorithm, ir.group_threads(t.group));
                    Some((t.data, Some((a, data.loc))))
                }
                OpKind::Map { dst, srcs, .. } => {
                    let mut got: Option<(Arrangement, Loc)> = None;
                    for s in srcs {
                        if let Some((a, l)) = arr[s.index()] {
                            match got {
                                Some((b, bl)) if b != a => {
                                    return Err(mismatch(*s, op, data.loc, (a, l), b, bl));
                                }
                                _ => got = Some((a, l)),
                            }
                        }
                    }
                    Some((*dst, got))
                }
                OpKind::Assign { dst, src } => Some((*dst, arr[src.index()])),
                _ => None,
            };
            if let Some((dst, Some((a, l)))) = produced {
                match arr[dst.index()] {
                    None => {
                        arr[dst.index()] = Some((a, l));
                        changed = true;
                    }
                    Some((b, bl)) if b != a => {
                        return Err(mismatch(dst, op, data.loc, (b, bl), a, l));
                    }
                    _ => {}
                }
            }
        }
        if !changed {
            break;
        }
    }
    for &op in &order {
        let data = ir.op(op);
        if let OpKind::Store(t) = &data.kind {
            let need = of_algorithm(t.algorithm, ir.group_threads(t.group));
            if let Some((have, l)) = arr[t.data.index()]
                && have != need
            {
                return Err(mismatch(t.data, op, data.loc, (have, l), need, data.loc));
            }
        }
    }
    Ok(arr.into_iter().map(|a| a.map(|(a, _)| a)).collect())
}

fn mismatch(
    data: crate::ir::DataId,
    op: OpId,
    loc: Loc,
    have: (Arrangement, Loc),
    need: Arrangement,
    _need_loc: Loc,
) -> PlanError {
    PlanError::ArrangementMismatch {
        data,
        op,
        loc,
        have: have.0,
        producer: have.1,
        need,
    }
}

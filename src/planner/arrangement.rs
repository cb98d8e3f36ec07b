//! Arrangement assignment: which arrangement each payload has, and the exchanges that convert
//! a payload where an op needs another arrangement than it has.
//!
//! A payload's arrangement is fixed by its first producer in program order (a direct,
//! vectorized or transposing load: blocked; a striped load over `G` threads: striped over `G`);
//! element-wise ops carry it from their first operand to their result; a fill or per-slot
//! write leaves it free (a scatter reads free flags in its ranks' arrangement, and free ranks
//! in its flags', since the two describe the same items). Where an op needs another
//! arrangement — a store whose algorithm reads
//! another order, a map whose operands disagree, an assignment into a payload arranged
//! otherwise — the planner records a [`Conversion`] (an exchange through shared memory run
//! just before that op), or, in strict mode, rejects the kernel naming both ops. Arrangements
//! that put every item at the same position (any two, with one item per thread) need no
//! conversion. Runs to a fixed point, so loops are covered.

use super::error::PlanError;
use crate::ir::ops::{Algorithm, OpKind};
use crate::ir::{Arrangement, DataId, Ir, Loc, OpId};

/// The arrangement a load algorithm produces (or a store algorithm reads) for a group of
/// `threads` threads.
pub fn of_algorithm(a: Algorithm, threads: u32) -> Arrangement {
    match a {
        Algorithm::Striped => Arrangement::Striped { threads },
        Algorithm::WarpStriped => Arrangement::Striped { threads: 32 },
        Algorithm::Direct
        | Algorithm::Vectorize
        | Algorithm::Transpose
        | Algorithm::WarpTranspose
        | Algorithm::WarpTransposeTimesliced => Arrangement::Blocked,
    }
}

/// An exchange the planner adds: before `op` runs, payload `data` is rearranged from `from` to
/// `to` (into fresh registers that `op` reads instead).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conversion {
    /// The op that needs the other arrangement.
    pub op: OpId,
    /// The payload converted.
    pub data: DataId,
    /// Its arrangement.
    pub from: Arrangement,
    /// The arrangement the op needs.
    pub to: Arrangement,
}

/// Each payload's arrangement, and the conversions to insert.
#[derive(Debug, Clone, Default)]
pub struct Arrangements {
    /// Per payload (`None`: free).
    pub of: Vec<Option<Arrangement>>,
    /// Conversions, in program order.
    pub conversions: Vec<Conversion>,
}

struct Pass {
    strict: bool,
    arr: Vec<Option<(Arrangement, Loc)>>,
    /// Items per thread of each payload.
    items: Vec<u32>,
    conversions: Vec<Conversion>,
}

impl Pass {
    /// `data` is consumed by `op` (written at `loc`) in arrangement `need`.
    fn need(
        &mut self,
        op: OpId,
        loc: Loc,
        data: DataId,
        need: Arrangement,
    ) -> Result<(), PlanError> {
        let Some((have, producer)) = self.arr[data.index()] else {
            return Ok(());
        };
        self.convert(op, loc, data, (have, producer), need)
    }

    /// `data`, whose slots hold the positions of `have` (fixed at `producer`), is consumed by
    /// `op` in arrangement `need`.
    fn convert(
        &mut self,
        op: OpId,
        loc: Loc,
        data: DataId,
        (have, producer): (Arrangement, Loc),
        need: Arrangement,
    ) -> Result<(), PlanError> {
        if have.same_positions(need, self.items[data.index()]) {
            return Ok(());
        }
        if self.strict {
            return Err(PlanError::ArrangementMismatch {
                data,
                op,
                loc,
                have,
                producer,
                need,
            });
        }
        let c = Conversion {
            op,
            data,
            from: have,
            to: need,
        };
        if !self.conversions.contains(&c) {
            self.conversions.push(c);
        }
        Ok(())
    }

    /// `data` is produced by `op` (written at `loc`) in arrangement `a`, which was fixed at
    /// `origin`. Returns whether anything changed.
    fn produce(
        &mut self,
        op: OpId,
        loc: Loc,
        origin: Loc,
        data: DataId,
        a: Arrangement,
    ) -> Result<bool, PlanError> {
        match self.arr[data.index()] {
            None => {
                self.arr[data.index()] = Some((a, origin));
                Ok(true)
            }
            Some((have, producer)) if !have.same_positions(a, self.items[data.index()]) => {
                Err(PlanError::ArrangementMismatch {
                    data,
                    op,
                    loc,
                    have,
                    producer,
                    need: a,
                })
            }
            Some(_) => Ok(false),
        }
    }
}

/// Assigns every payload an arrangement and lists the conversions to insert.
pub fn assign(ir: &Ir) -> Result<Arrangements, PlanError> {
    let mut order = Vec::new();
    ir.walk(|op, _| order.push(op));
    let mut p = Pass {
        strict: ir.strict_arrangements,
        arr: vec![None; ir.datas.len()],
        items: ir.datas.iter().map(|d| d.items).collect(),
        conversions: Vec::new(),
    };
    // Each round fixes at least one more payload or stops, so `datas + 1` rounds suffice.
    for _ in 0..=ir.datas.len() {
        let mut changed = false;
        for &op in &order {
            let data = ir.op(op);
            match &data.kind {
                OpKind::Load(t) => {
                    let a = of_algorithm(t.algorithm, ir.group_threads(t.group));
                    changed |= p.produce(op, data.loc, data.loc, t.data, a)?;
                }
                OpKind::Map { dst, srcs, .. } => {
                    // The result keeps the operand's arrangement and where it was fixed.
                    if let Some((a, origin)) = srcs.iter().find_map(|s| p.arr[s.index()]) {
                        changed |= match p.arr[dst.index()] {
                            None => p.produce(op, data.loc, origin, *dst, a)?,
                            Some(_) => false,
                        };
                    }
                }
                OpKind::Scan(sc) => {
                    changed |= p.produce(op, data.loc, data.loc, sc.dst, Arrangement::Blocked)?;
                }
                OpKind::Exchange { dst, to, .. } | OpKind::Scatter { dst, to, .. } => {
                    changed |= p.produce(op, data.loc, data.loc, *dst, *to)?;
                }
                OpKind::Neighbor(nb) if !one_per_thread(&nb.kind) => {
                    changed |= p.produce(op, data.loc, data.loc, nb.dst, Arrangement::Blocked)?;
                }
                OpKind::Assign { dst, src } => {
                    if let (None, Some((a, origin))) = (p.arr[dst.index()], p.arr[src.index()]) {
                        changed |= p.produce(op, data.loc, origin, *dst, a)?;
                    }
                }
                _ => {}
            }
        }
        if !changed {
            break;
        }
    }
    for &op in &order {
        let data = ir.op(op);
        match &data.kind {
            OpKind::Store(t) => {
                let need = of_algorithm(t.algorithm, ir.group_threads(t.group));
                p.need(op, data.loc, t.data, need)?;
            }
            OpKind::Scan(sc) => {
                p.need(op, data.loc, sc.src, Arrangement::Blocked)?;
            }
            OpKind::Neighbor(nb) if !one_per_thread(&nb.kind) => {
                p.need(op, data.loc, nb.src, Arrangement::Blocked)?;
            }
            OpKind::Scatter {
                src, ranks, flags, ..
            } => {
                // Ranks and flags pair with each other position by position (a free one holds
                // the positions of the other's arrangement), and the pair with the items slot
                // by slot.
                if let Some((want, _)) = p.arr[src.index()] {
                    let aux = [Some(*ranks), *flags];
                    let pair = aux.into_iter().flatten().find_map(|d| p.arr[d.index()]);
                    for d in aux.into_iter().flatten() {
                        match (p.arr[d.index()], pair) {
                            (None, Some(have)) => p.convert(op, data.loc, d, have, want)?,
                            _ => p.need(op, data.loc, d, want)?,
                        }
                    }
                }
            }
            OpKind::Exchange { src, to, .. } => {
                // Asked for explicitly, so allowed in strict mode too.
                let strict = std::mem::replace(&mut p.strict, false);
                p.need(op, data.loc, *src, *to)?;
                p.strict = strict;
            }
            OpKind::Reduce(r)
                if !r.op.commutative()
                    || (r.valid.is_some() && ir.datas[r.src.index()].items > 1) =>
            {
                // Position order is rank order only over a blocked payload.
                p.need(op, data.loc, r.src, Arrangement::Blocked)?;
            }
            OpKind::Map { dst, srcs, .. } => {
                if let Some((want, _)) = p.arr[dst.index()] {
                    for s in srcs {
                        p.need(op, data.loc, *s, want)?;
                    }
                }
            }
            OpKind::Assign { dst, src } => {
                if let Some((want, _)) = p.arr[dst.index()] {
                    p.need(op, data.loc, *src, want)?;
                }
            }
            _ => {}
        }
    }
    Ok(Arrangements {
        of: p.arr.into_iter().map(|a| a.map(|(a, _)| a)).collect(),
        conversions: p.conversions,
    })
}

/// Shuffles by offset or rotation move one value per thread: any arrangement will do.
fn one_per_thread(kind: &crate::ir::ops::NeighborKind) -> bool {
    use crate::ir::ops::NeighborKind as N;
    matches!(kind, N::Offset(_) | N::Rotate(_))
}

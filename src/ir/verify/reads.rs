//! The verifier's reads of payload slots: expressions' leaves, and whether a slot holds a
//! value at every thread a read reaches (the definedness of `defined.rs`).

use super::super::defined::{Def, State};
use super::super::entities::{DataId, ExprId, Loc, OpId};
use super::super::error::{DefinedAt, VerifyErrorKind as K};
use super::super::expr::{ExprKind, IndexKind, VType};
use super::super::ops::*;
use super::Verifier;

/// How far a read of a payload reaches, for slots defined only at some threads.
#[derive(Debug, Clone, Copy)]
pub(super) enum Bound {
    /// Every slot of every thread.
    All,
    /// The positions below an explicit valid count (`constant` when the count is one) of the
    /// tile of each group of `group` threads, or of the block's tile with `of_block`.
    Count {
        constant: Option<u64>,
        group: u32,
        of_block: bool,
    },
}

impl Verifier<'_> {
    /// Checks an expression's leaves (parameters, payload reads, map values, loop variables)
    /// where the op observes its value (a condition, a bound, an offset, a count, a value
    /// shared with other threads): every payload slot it reads must hold a value at every
    /// thread that evaluates it.
    pub(super) fn expr(
        &mut self,
        root: ExprId,
        state: &State,
        op: OpId,
        map_srcs: Option<&[DataId]>,
    ) {
        self.expr_reads(root, state, op, map_srcs, true);
    }

    /// [`Verifier::expr`] for an expression whose value only flows into a payload (a map's,
    /// a slot write's): returns the weakest state among the slots it reads.
    pub(super) fn value_expr(
        &mut self,
        root: ExprId,
        state: &State,
        op: OpId,
        map_srcs: Option<&[DataId]>,
    ) -> Def {
        self.expr_reads(root, state, op, map_srcs, false)
    }

    pub(super) fn expr_reads(
        &mut self,
        root: ExprId,
        state: &State,
        op: OpId,
        map_srcs: Option<&[DataId]>,
        observe: bool,
    ) -> Def {
        let mut reads = Def::Everywhere;
        let loc = self.ir.op(op).loc;
        // Each node with whether its value is observed: a shared array's index always is (a
        // thread without a value there would touch memory anywhere).
        // The verifier's buffers, taken for this walk (and given back empty) so that a
        // kernel's many expressions do not each allocate their own.
        let (mut stack, mut seen) = std::mem::take(&mut self.walk);
        stack.push((root, observe));
        // Per node visited, whether it was observed; one not observed may be seen again
        // observed, for its reads only.
        while let Some((e, observe)) = stack.pop() {
            let first = match seen.insert(e, observe) {
                None => true,
                Some(false) if observe => false,
                Some(before) => {
                    seen.insert(e, before);
                    continue;
                }
            };
            let node = self.ir.expr(e);
            match &node.kind {
                ExprKind::SharedRead(_, index)
                | ExprKind::LocalRead(_, index)
                | ExprKind::ConstRead(_, index)
                | ExprKind::GlobalRead(_, index) => stack.push((*index, true)),
                kind => stack.extend(kind.children().map(|&c| (c, observe))),
            }
            if !first {
                if let ExprKind::Item { data, item } = node.kind
                    && item < self.ir.datas[data.index()].items
                {
                    self.observe_slot(data, item, state, loc, op, Bound::All);
                }
                continue;
            }
            match &node.kind {
                ExprKind::Param(p) => {
                    let decl = &self.ir.params[p.index()];
                    if decl.role != Role::Scalar {
                        self.push(
                            K::ParamRole {
                                param: *p,
                                expected: Role::Scalar,
                                found: decl.role,
                            },
                            loc,
                            Some(op),
                        );
                    } else if VType::D(decl.dtype) != node.ty {
                        self.push(
                            K::TypeMismatch {
                                expected: node.ty,
                                found: VType::D(decl.dtype),
                            },
                            loc,
                            Some(op),
                        );
                    }
                }
                ExprKind::Item { data, item } => {
                    let decl = &self.ir.datas[data.index()];
                    if VType::D(decl.dtype) != node.ty {
                        self.push(
                            K::TypeMismatch {
                                expected: node.ty,
                                found: VType::D(decl.dtype),
                            },
                            loc,
                            Some(op),
                        );
                    }
                    if *item >= decl.items {
                        self.push(
                            K::ItemOutOfRange {
                                item: *item,
                                items: decl.items,
                            },
                            loc,
                            Some(op),
                        );
                    } else if observe {
                        self.observe_slot(*data, *item, state, loc, op, Bound::All);
                    } else {
                        reads = reads.meet(self.read_slot(*data, *item, state, loc, op));
                    }
                }
                ExprKind::Arg(i) => match map_srcs.and_then(|s| s.get(*i as usize)) {
                    Some(d) => {
                        let found = VType::D(self.ir.datas[d.index()].dtype);
                        if found != node.ty {
                            self.push(
                                K::TypeMismatch {
                                    expected: node.ty,
                                    found,
                                },
                                loc,
                                Some(op),
                            );
                        }
                    }
                    None => self.push(K::MapValueOutsideMap, loc, Some(op)),
                },
                ExprKind::SharedRead(_, index)
                | ExprKind::LocalRead(_, index)
                | ExprKind::ConstRead(_, index) => {
                    let dtype = match &node.kind {
                        ExprKind::SharedRead(a, _) => Some(self.ir.arrays[a.index()].dtype),
                        ExprKind::LocalRead(a, _) => Some(self.ir.locals[a.index()].dtype),
                        ExprKind::ConstRead(a, _) => Some(self.ir.consts[a.index()].dtype),
                        _ => None,
                    };
                    if let Some(found) = dtype.map(VType::D)
                        && found != node.ty
                    {
                        self.push(
                            K::TypeMismatch {
                                expected: node.ty,
                                found,
                            },
                            loc,
                            Some(op),
                        );
                    }
                    self.array_index_ty(*index, loc, op);
                }
                ExprKind::GlobalRead(p, index) => {
                    self.role(*p, true, loc, op);
                    let found = VType::D(self.ir.params[p.index()].dtype);
                    if found != node.ty {
                        self.push(
                            K::TypeMismatch {
                                expected: node.ty,
                                found,
                            },
                            loc,
                            Some(op),
                        );
                    }
                    self.index_ty(*index, loc, op);
                }
                ExprKind::Index(IndexKind::Item) if map_srcs.is_none() => {
                    self.push(K::MapValueOutsideMap, loc, Some(op))
                }
                ExprKind::LoopVar { op: lp, .. } => {
                    let is_loop = matches!(
                        self.ir.op(*lp).kind,
                        OpKind::For { .. } | OpKind::Tiles { .. }
                    );
                    if !is_loop || !self.loops.contains(lp) {
                        self.push(K::LoopVarOutOfScope { lp: *lp }, loc, Some(op));
                    }
                }
                _ => {}
            }
        }
        seen.clear();
        self.walk = (stack, seen);
        reads
    }

    /// A read of one slot: an error if no path wrote it; its state.
    pub(super) fn read_slot(
        &mut self,
        data: DataId,
        item: u32,
        state: &State,
        loc: Loc,
        op: OpId,
    ) -> Def {
        let def = state.get(data.index(), item);
        if def == Def::Undef && self.reported.insert((data, item)) {
            let declared = self.ir.datas[data.index()].loc;
            self.push(
                K::UninitializedRead {
                    data,
                    item,
                    declared,
                },
                loc,
                Some(op),
            );
        }
        def
    }

    /// Whether a slot in state `def` holds a value wherever a read reaching `bound` looks, in
    /// the current context.
    pub(super) fn covered(&self, def: Def, bound: Bound) -> bool {
        if def.readable(self.context) {
            return true;
        }
        match (def, bound) {
            // The user asserts the positions below the count were written.
            (Def::Partial { .. }, Bound::Count { .. }) => true,
            // Only the first position of each group's tile (or of the block's) is read: rank 0's.
            (
                Def::RankZero { width, .. },
                Bound::Count {
                    constant: Some(c),
                    group,
                    of_block,
                },
            ) => c == 0 || (c == 1 && (of_block || group % width == 0)),
            _ => false,
        }
    }

    /// A read of one slot that observes its value at every thread the read reaches.
    pub(super) fn observe_slot(
        &mut self,
        data: DataId,
        item: u32,
        state: &State,
        loc: Loc,
        op: OpId,
        bound: Bound,
    ) {
        let def = self.read_slot(data, item, state, loc, op);
        let (defined, by) = match def {
            Def::RankZero { width, by } => (DefinedAt::RankZero { threads: width }, by),
            Def::Partial { by } => (DefinedAt::Scattered, by),
            Def::Undef | Def::Everywhere => return,
        };
        if !self.covered(def, bound) && self.reported.insert((data, item)) {
            let producer = self.ir.op(by).loc;
            self.push(
                K::PartlyDefinedRead {
                    data,
                    item,
                    defined,
                    producer,
                },
                loc,
                Some(op),
            );
        }
    }

    /// Observes every slot of a payload (reporting the first that may be undefined, and the
    /// first that may hold no value somewhere the read reaches).
    pub(super) fn observe_all(
        &mut self,
        data: DataId,
        state: &State,
        loc: Loc,
        op: OpId,
        bound: Bound,
    ) {
        let slots = state.of(data.index());
        if let Some(item) = slots.iter().position(|&d| d == Def::Undef) {
            self.read_slot(data, item as u32, state, loc, op);
        }
        let partly = slots
            .iter()
            .position(|&d| d != Def::Undef && !self.covered(d, bound));
        if let Some(item) = partly {
            self.observe_slot(data, item as u32, state, loc, op, bound);
        }
    }

    /// Reads every slot of a payload whose values flow on (a map's operand, an assignment's
    /// source): reports the first undefined one; the state of each.
    pub(super) fn read_all(&mut self, data: DataId, state: &State, loc: Loc, op: OpId) -> Vec<Def> {
        let slots = state.of(data.index()).to_vec();
        if let Some(item) = slots.iter().position(|&d| d == Def::Undef) {
            self.read_slot(data, item as u32, state, loc, op);
        }
        slots
    }

    /// Whether every slot of a payload holds a value at every thread of the context, or
    /// where a scatter put one: slots a valid count can bound.
    pub(super) fn covered_partly(&self, data: DataId, state: &State) -> bool {
        state
            .of(data.index())
            .iter()
            .all(|&d| matches!(d, Def::Partial { .. }) || d.readable(self.context))
    }

    /// The weakest state among a payload's slots.
    pub(super) fn weakest(&self, data: DataId, state: &State) -> Def {
        state
            .of(data.index())
            .iter()
            .fold(Def::Everywhere, |a, &b| a.meet(b))
    }

    pub(super) fn write_all(&self, data: DataId, state: &mut State) {
        state.set_all(data.index(), Def::Everywhere);
    }

    /// The bound of a read by an op over `group` threads with an optional valid count of its
    /// group's tile.
    pub(super) fn bound(&self, valid: Option<ExprId>, group: u32) -> Bound {
        match valid {
            None => Bound::All,
            Some(e) => Bound::Count {
                constant: match self.ir.expr(e).kind {
                    ExprKind::Const(c) => Some(c),
                    _ => None,
                },
                group,
                of_block: false,
            },
        }
    }
}

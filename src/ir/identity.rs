//! Which builder made a handle.
//!
//! Every [`KernelBuilder`](super::KernelBuilder) has an identity, unique in the process, and
//! every handle it hands out (parameters, payloads, shared arrays, temp storages, and the
//! expressions that name parameters, payload slots, loop variables or shared arrays) carries
//! it; groups name no entity of a builder and carry none. A builder given a handle of another records a `ForeignHandle` issue, which the verifier
//! reports with the user's line: an id that happens to fit this builder's tables never aliases
//! silently. A clone of a builder is a builder of its own that also accepts its origin's
//! handles made before the clone (they name the same entities in both). The identity is not
//! part of the IR, so two builders that record the same kernel build the same cache key.

use super::builder::KernelBuilder;
use super::dtype::Element;
use super::entities::{ArrayId, DataId, Loc, LocalId, ParamId, StorageId};
use super::handles::{LocalArray, SharedArray, TempStorage, ThreadData, Var};
use super::ops::{BuilderIssue, Ir};
use std::sync::atomic::{AtomicU64, Ordering};

/// The identity of one kernel builder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct BuilderId(u64);

impl BuilderId {
    /// An identity no other builder of this process has.
    fn fresh() -> BuilderId {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        BuilderId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// The table a handle indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Table {
    /// Parameters.
    Param,
    /// Payloads.
    Data,
    /// Shared arrays.
    Array,
    /// Local arrays.
    Local,
    /// Constant arrays.
    Const,
    /// Temp storages.
    Storage,
    /// Ops (a loop variable names its loop).
    Op,
}

/// The sizes of a builder's tables when it was cloned.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    params: usize,
    datas: usize,
    arrays: usize,
    locals: usize,
    consts: usize,
    storages: usize,
    ops: usize,
}

/// A builder's identity, and those of the builders it was cloned from with their table sizes
/// at the time.
#[derive(Debug)]
pub(crate) struct Lineage {
    id: BuilderId,
    origins: Vec<(BuilderId, Sizes)>,
}

impl Lineage {
    /// A new builder's.
    pub(crate) fn new() -> Lineage {
        Lineage {
            id: BuilderId::fresh(),
            origins: Vec::new(),
        }
    }

    /// The builder's identity.
    pub(crate) fn id(&self) -> BuilderId {
        self.id
    }

    /// The lineage of a clone of the builder whose lineage this is and whose IR is `ir`.
    pub(crate) fn fork(&self, ir: &Ir) -> Lineage {
        let sizes = Sizes {
            params: ir.params.len(),
            datas: ir.datas.len(),
            arrays: ir.arrays.len(),
            locals: ir.locals.len(),
            consts: ir.consts.len(),
            storages: ir.storages.len(),
            ops: ir.ops.len(),
        };
        let mut origins = self.origins.clone();
        origins.push((self.id, sizes));
        Lineage {
            id: BuilderId::fresh(),
            origins,
        }
    }

    /// Whether a handle made by `owner` for entry `index` of `table` names an entity of this
    /// builder: it made it, or a builder it was cloned from made it before the clone.
    pub(crate) fn accepts(&self, owner: BuilderId, table: Table, index: u32) -> bool {
        if owner == self.id {
            return true;
        }
        let index = index as usize;
        self.origins.iter().any(|(id, s)| {
            *id == owner
                && match table {
                    Table::Param => index < s.params,
                    Table::Data => index < s.datas,
                    Table::Array => index < s.arrays,
                    Table::Local => index < s.locals,
                    Table::Const => index < s.consts,
                    Table::Storage => index < s.storages,
                    Table::Op => index < s.ops,
                }
        })
    }
}

/// The builder's side of the check: each method hands the handles it is given through these
/// before recording its op.
impl KernelBuilder {
    /// Notes a handle this builder did not make; it is reported with the op being recorded.
    pub(crate) fn check_owner(
        &mut self,
        owner: BuilderId,
        table: Table,
        index: u32,
        what: &'static str,
    ) {
        if !self.lineage.accepts(owner, table, index) && !self.foreign.contains(&what) {
            self.foreign.push(what);
        }
    }

    /// A payload's id, checked.
    pub(crate) fn data_id<T: Element>(&mut self, d: &ThreadData<T>) -> DataId {
        self.check_owner(d.owner, Table::Data, d.id.0, "payload");
        d.id
    }

    /// A variable's id, checked.
    pub(crate) fn var_id<T: Element>(&mut self, v: &Var<T>) -> DataId {
        self.check_owner(v.owner, Table::Data, v.id.0, "variable");
        v.id
    }

    /// A buffer parameter's id, checked.
    pub(crate) fn param_id(&mut self, owner: BuilderId, id: ParamId) -> ParamId {
        self.check_owner(owner, Table::Param, id.0, "parameter");
        id
    }

    /// A shared array's id, checked.
    pub(crate) fn array_id<T: Element, const D: usize>(
        &mut self,
        a: &SharedArray<T, D>,
    ) -> ArrayId {
        self.check_owner(a.owner, Table::Array, a.id.0, "shared array");
        a.id
    }

    /// A local array's id, checked.
    pub(crate) fn local_id<T: Element>(&mut self, a: &LocalArray<T>) -> LocalId {
        self.check_owner(a.owner, Table::Local, a.id.0, "local array");
        a.id
    }

    /// A temp storage's id, checked.
    pub(crate) fn storage_id(&mut self, s: &TempStorage) -> StorageId {
        self.check_owner(s.owner, Table::Storage, s.id.0, "temp storage");
        s.id
    }

    /// The handles of other builders noted since the last op, as issues at `loc`.
    pub(crate) fn flush_foreign(&mut self, loc: Loc) {
        for what in self.foreign.drain(..) {
            self.ir
                .issues
                .push(BuilderIssue::ForeignHandle { what, loc });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_are_unique_and_clones_accept_older_handles_only() {
        let a = Lineage::new();
        let b = Lineage::new();
        assert_ne!(a.id(), b.id());
        assert!(a.accepts(a.id(), Table::Data, 1_000));
        assert!(!a.accepts(b.id(), Table::Data, 0));
        let mut ir = crate::ir::KernelBuilder::new("k").ir().clone();
        ir.datas.push(crate::ir::ops::DataDecl {
            dtype: crate::ir::DType::U32,
            items: 1,
            align: None,
            var: false,
            loc: ir.block.loc,
        });
        let c = a.fork(&ir);
        assert_ne!(c.id(), a.id());
        assert!(c.accepts(a.id(), Table::Data, 0));
        assert!(!c.accepts(a.id(), Table::Data, 1));
        assert!(!c.accepts(a.id(), Table::Param, 0));
        // A clone of the clone still knows the first builder.
        let d = c.fork(&ir);
        assert!(d.accepts(a.id(), Table::Data, 0));
        assert!(d.accepts(c.id(), Table::Data, 0));
        assert!(!d.accepts(b.id(), Table::Data, 0));
    }
}

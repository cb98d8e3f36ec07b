//! User shared arrays and temp storages: their slices.
//!
//! Invariants this pass establishes:
//! - every shared array has a slice for the whole kernel: at offset 0 of a declaration of its
//!   own ([`super::shared`]), or, past the static limit, in the window (then requested for
//!   the whole kernel); the kernel's dynamic array (at most one) lies at the end of the
//!   dynamic shared memory, placed by `shared.rs`, and is left out of the others' layout;
//! - every temp storage one exchange uses has one slice, live from its first user to its last,
//!   as large as its declared size (a use that needs more is an error) or, without one, as
//!   its largest use; uses of a storage without auto-sync are ordered by the user, so its
//!   slice is marked user-ordered.

use super::alloc::{Request, Slice};
use super::error::PlanError;
use super::ids::{IdVec, SliceId};
use super::scratch::Scratch;
use super::shared::{self, ArrayHome};
use crate::ir::{Ir, OpId, StorageId};

/// The slices of the shared arrays, in declaration order (those in the window requested for
/// the whole kernel); returns where each array is declared and its `(bytes, align)`.
pub(super) fn plan_arrays(ir: &Ir, s: &mut Scratch, end: u32) -> (Vec<ArrayHome>, Vec<(u32, u32)>) {
    let mut arrays: Vec<(u32, u32)> = (ir.arrays.iter())
        .map(|a| (a.bytes(), a.dtype.bytes().max(4)))
        .collect();
    // An array is aligned for its views' elements too.
    for a in &ir.arrays {
        if let Some(root) = a.view_of
            && let Some(r) = arrays.get_mut(root.index())
        {
            r.1 = r.1.max(a.dtype.bytes());
        }
    }
    // The dynamic array (at most one) lies at the end of the dynamic part, sized at launch:
    // the others are laid out without it. Views have no bytes of their own.
    let home_of = |a: &crate::ir::ops::ArrayDecl| match (a.view_of, a.dynamic) {
        (Some(_), _) => Some(ArrayHome::View),
        (None, true) => Some(ArrayHome::Dynamic),
        (None, false) => None,
    };
    let statics: Vec<(u32, u32)> = (arrays.iter().zip(&ir.arrays))
        .filter(|(_, a)| home_of(a).is_none())
        .map(|(&b, _)| b)
        .collect();
    let mut homes = shared::array_homes(&statics);
    for (i, a) in ir.arrays.iter().enumerate() {
        if let Some(home) = home_of(a) {
            homes.insert(i, home);
        }
    }
    for (i, &(bytes, align)) in arrays.iter().enumerate() {
        if let Some(root) = ir.arrays[i].view_of {
            // The view's accesses are its array's.
            let slice = s.arrays[root];
            s.arrays.push(slice);
            continue;
        }
        let mut slice = Slice::new(format!("shared array smem{i}"), OpId(0), bytes, align);
        slice.live = (0, end);
        let slice = s.slices.push(slice);
        s.arrays.push(slice);
        if homes[i] == ArrayHome::Window {
            s.requests.push(Request {
                slice,
                at: 0,
                exclusive: true,
            });
        }
    }
    (homes, arrays)
}

/// The temp storages' slices as exchanges use them.
pub(super) struct Storages {
    /// Each storage's slice, once an exchange uses it.
    pub slices: IdVec<StorageId, Option<SliceId>>,
    /// The most bytes a use of each needs.
    need: IdVec<StorageId, u32>,
}

impl Storages {
    /// No storage used yet.
    pub fn new(ir: &Ir) -> Storages {
        Storages {
            slices: IdVec::filled(ir.storages.len(), None),
            need: IdVec::filled(ir.storages.len(), 0),
        }
    }

    /// The slice of storage `st`, which an exchange of `op` needing `bytes` uses at point
    /// `at`: the storage's live range grows to hold it.
    pub fn slice_for(
        &mut self,
        ir: &Ir,
        slices: &mut IdVec<SliceId, Slice>,
        st: StorageId,
        op: OpId,
        bytes: u32,
        at: u32,
    ) -> Result<SliceId, PlanError> {
        let decl = &ir.storages[st.index()];
        if let Some(have) = decl.size
            && bytes > have
        {
            return Err(PlanError::TempStorageTooSmall {
                op,
                loc: ir.op(op).loc,
                need: bytes,
                have,
            });
        }
        self.need[st] = self.need[st].max(bytes);
        if let Some(sl) = self.slices[st] {
            let live = &mut slices[sl].live;
            live.0 = live.0.min(at);
            live.1 = live.1.max(at);
            return Ok(sl);
        }
        let label = format!("temp storage {st}");
        let mut slice = Slice::new(label, op, decl.size.unwrap_or(0), decl.align.unwrap_or(16));
        slice.align = slice.align.max(1);
        slice.live = (at, at);
        slice.user_ordered = !decl.auto_sync;
        let sl = slices.push(slice);
        self.slices[st] = Some(sl);
        Ok(sl)
    }

    /// Sizes each used storage without a declared size by its largest use, and requests it
    /// from its first use.
    pub fn finish(&self, ir: &Ir, s: &mut Scratch) {
        for (st, sl) in self.slices.iter() {
            if let Some(sl) = *sl {
                let slice = &mut s.slices[sl];
                if ir.storages[st.index()].size.is_none() {
                    slice.bytes = self.need[st];
                }
                s.requests.push(Request {
                    slice: sl,
                    at: slice.live.0,
                    exclusive: false,
                });
            }
        }
    }
}

//! User-declared arrays: shared (static or the dynamic one), per-thread local and constant,
//! and the per-kernel limits on them.

use crate::ir::{ArrayId, DType, Loc};

/// A user-declared shared array of `len` elements: of one to three dimensions, or the
/// kernel's dynamic array, sized at launch; or a view of another array's bytes as elements
/// of another type ([`view_of`](Self::view_of)).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ArrayDecl {
    /// Element type.
    pub dtype: DType,
    /// Elements: the product of `dims` (0 for a dynamic array).
    pub len: u32,
    /// Its extents, outermost first, indexed in row-major order (`[len]` for a 1-D array; none
    /// for a dynamic one). Accesses index the array's elements in that order, so
    /// `a[i][j]` of a `[rows, cols]` array is element `i * cols + j`.
    pub dims: Vec<u32>,
    /// Whether it is the kernel's dynamic shared array, whose length each launch gives
    /// ([`LaunchConfig::with_dynamic_array_len`]).
    ///
    /// [`LaunchConfig::with_dynamic_array_len`]: crate::runtime::LaunchConfig::with_dynamic_array_len
    pub dynamic: bool,
    /// The array whose bytes this one is (see
    /// [`KernelBuilder::shared_view`](crate::KernelBuilder::shared_view)): then it has no
    /// storage of its own, `len` is as many of its elements as fit in that array's bytes, and
    /// its one dimension is `[len]`. Always an array with storage of its own, never a view.
    pub view_of: Option<ArrayId>,
    /// Every index its accesses use lies inside it by construction: an array the library
    /// declares for its own algorithm (a merge sort's runs), accessed unguarded. Never set on
    /// an array the user declares, whose accesses are guarded where no bound is proven.
    pub inside: bool,
    /// Where it was declared.
    pub loc: Loc,
}

impl ArrayDecl {
    /// Bytes of its elements (0 for the dynamic array, sized at launch).
    pub fn bytes(&self) -> u32 {
        self.len.saturating_mul(self.dtype.bytes())
    }
}

impl super::Ir {
    /// The array whose bytes shared array `a` reads and writes: `a` itself, or the array it
    /// is a view of.
    pub fn array_storage(&self, a: ArrayId) -> ArrayId {
        (self.arrays.get(a.index()))
            .and_then(|d| d.view_of)
            .unwrap_or(a)
    }

    /// Whether an op recorded so far reads or writes the bytes of shared array `a` (through
    /// it or a view sharing its storage): a write, an atomic or a cluster access naming it,
    /// or an interned expression reading it. Conservative: an expression interned and never
    /// evaluated counts too.
    pub(crate) fn shared_bytes_used(&self, a: ArrayId) -> bool {
        use super::{AtomicMemory, OpKind};
        use crate::ir::expr::ExprKind;
        let storage = self.array_storage(a);
        let ours = |x: ArrayId| self.array_storage(x) == storage;
        let read = (self.exprs.nodes().iter())
            .any(|n| matches!(n.kind, ExprKind::SharedRead(x, _) if ours(x)));
        read || self.ops.iter().any(|op| match &op.kind {
            OpKind::SharedWrite { array, .. } => ours(*array),
            OpKind::Atomic(at) => matches!(at.memory, AtomicMemory::Shared(x) if ours(x)),
            OpKind::Cluster(c) => c.array().is_some_and(ours),
            _ => false,
        })
    }
}

/// A user-declared per-thread array of `len` elements (PTX `.local`): each thread has its own,
/// holding no value until the thread writes it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LocalDecl {
    /// Element type.
    pub dtype: DType,
    /// Elements.
    pub len: u32,
    /// Where it was declared.
    pub loc: Loc,
}

/// A user-declared constant array (PTX `.const`): read-only memory every thread of the grid
/// reads, holding the values the host gave when the kernel was built.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConstDecl {
    /// Element type.
    pub dtype: DType,
    /// The elements' bits (see [`Element::to_bits`](crate::ir::Element::to_bits)).
    pub data: Vec<u64>,
    /// Where it was declared.
    pub loc: Loc,
}

/// The most bytes of local arrays a thread may have (every supported GPU's limit).
pub const MAX_LOCAL_BYTES: u64 = 512 * 1024;
/// The most bytes of constant arrays a kernel may have (the constant bank a module's
/// `.const` data lives in).
pub const MAX_CONST_BYTES: u64 = 64 * 1024;

//! Global and shared memory: parameters, loads and stores with their controls, temp storages
//! and shared arrays.

use super::KernelBuilder;
use crate::ir::dtype::{DType, Element};
use crate::ir::entities::{ArrayId, Loc, ParamId, StorageId};
use crate::ir::expr::Expr;
use crate::ir::handles::{Group, Input, Output, Scalar, SharedArray, TempStorage, ThreadData};
use crate::ir::ops::*;

/// The controls of a load: algorithm, offset, valid items and the out-of-bounds default.
#[derive(Debug, Clone)]
pub struct Load<T: Element> {
    pub(crate) algorithm: Algorithm,
    pub(crate) offset: Option<Expr<u32>>,
    pub(crate) valid: Option<(Expr<u32>, ValidOf)>,
    pub(crate) oob_default: Option<T>,
    pub(crate) storage: Option<TempStorage>,
}

impl<T: Element> Default for Load<T> {
    fn default() -> Self {
        Load::direct()
    }
}

impl<T: Element> Load<T> {
    /// Blocked items, each thread reading its own consecutive run.
    pub fn direct() -> Self {
        Load {
            algorithm: Algorithm::Direct,
            offset: None,
            valid: None,
            oob_default: None,
            storage: None,
        }
    }

    /// Striped items: coalesced reads, leaving the payload striped.
    pub fn striped() -> Self {
        Load::direct().algorithm(Algorithm::Striped)
    }

    /// Blocked items read with vector accesses where alignment allows.
    pub fn vectorize() -> Self {
        Load::direct().algorithm(Algorithm::Vectorize)
    }

    /// Coalesced reads, transposed to blocked order through shared memory.
    pub fn transpose() -> Self {
        Load::direct().algorithm(Algorithm::Transpose)
    }

    /// Warp-striped reads, transposed to blocked order per warp (block groups).
    pub fn warp_transpose() -> Self {
        Load::direct().algorithm(Algorithm::WarpTranspose)
    }

    /// As [`Load::warp_transpose`], the warps taking turns on one slice (block groups).
    pub fn warp_transpose_timesliced() -> Self {
        Load::direct().algorithm(Algorithm::WarpTransposeTimesliced)
    }

    /// Chooses the algorithm.
    pub fn algorithm(mut self, a: Algorithm) -> Self {
        self.algorithm = a;
        self
    }

    /// Element offset of the block's tile in the buffer (uniform across the group). Default:
    /// the enclosing `tiles` loop's origin, else `block_index * block_tile`, which needs a
    /// payload of the kernel's items per thread. Warp groups add their own origin.
    pub fn offset(mut self, offset: impl Into<Expr<u32>>) -> Self {
        self.offset = Some(offset.into());
        self
    }

    /// Valid items of the group's own tile, as cuda.coop's `valid_items`: positions from `n`
    /// on are not read (their slots stay unwritten, or take the
    /// [`oob_default`](Self::oob_default)). `n` must be uniform across the group; warps and
    /// logical warps each pass their own. Positions past the end of the buffer are never read
    /// either, whatever the count.
    pub fn valid_items(mut self, n: impl Into<Expr<u32>>) -> Self {
        self.valid = Some((n.into(), ValidOf::Group));
        self
    }

    /// Valid items of the block's tile, counted from the offset (uniform across the block):
    /// each warp or logical warp takes its share, the part of the first `n` positions that
    /// falls in its own tile. For a block group this is [`valid_items`](Self::valid_items).
    pub fn block_valid_items(mut self, n: impl Into<Expr<u32>>) -> Self {
        self.valid = Some((n.into(), ValidOf::Block));
        self
    }

    /// The value written to slots past the valid items (left unwritten without it).
    pub fn oob_default(mut self, v: T) -> Self {
        self.oob_default = Some(v);
        self
    }

    /// Exchanges through this temp storage instead of planned scratch.
    pub fn temp_storage(mut self, storage: &TempStorage) -> Self {
        self.storage = Some(*storage);
        self
    }
}

/// The controls of a store: algorithm, offset and valid items.
#[derive(Debug, Clone, Default)]
pub struct Store {
    pub(crate) algorithm: Option<Algorithm>,
    pub(crate) offset: Option<Expr<u32>>,
    pub(crate) valid: Option<(Expr<u32>, ValidOf)>,
    pub(crate) storage: Option<TempStorage>,
}

impl Store {
    /// Blocked items, each thread writing its own consecutive run.
    pub fn direct() -> Self {
        Store::default().algorithm(Algorithm::Direct)
    }

    /// Striped items: coalesced writes of a striped payload.
    pub fn striped() -> Self {
        Store::default().algorithm(Algorithm::Striped)
    }

    /// Blocked items written with vector accesses where alignment allows.
    pub fn vectorize() -> Self {
        Store::default().algorithm(Algorithm::Vectorize)
    }

    /// Blocked items transposed to striped order through shared memory, written coalesced.
    pub fn transpose() -> Self {
        Store::default().algorithm(Algorithm::Transpose)
    }

    /// Blocked items transposed to warp-striped order per warp (block groups).
    pub fn warp_transpose() -> Self {
        Store::default().algorithm(Algorithm::WarpTranspose)
    }

    /// As [`Store::warp_transpose`], the warps taking turns on one slice (block groups).
    pub fn warp_transpose_timesliced() -> Self {
        Store::default().algorithm(Algorithm::WarpTransposeTimesliced)
    }

    /// Chooses the algorithm (default: direct).
    pub fn algorithm(mut self, a: Algorithm) -> Self {
        self.algorithm = Some(a);
        self
    }

    /// Element offset of the block's tile (uniform across the group; default as for
    /// [`Load::offset`]).
    pub fn offset(mut self, offset: impl Into<Expr<u32>>) -> Self {
        self.offset = Some(offset.into());
        self
    }

    /// Valid items of the group's own tile, as cuda.coop's `valid_items`: positions from `n`
    /// on are not written. `n` must be uniform across the group; warps and logical warps each
    /// pass their own. Positions past the end of the buffer are never written either.
    pub fn valid_items(mut self, n: impl Into<Expr<u32>>) -> Self {
        self.valid = Some((n.into(), ValidOf::Group));
        self
    }

    /// Valid items of the block's tile, counted from the offset (uniform across the block):
    /// each warp or logical warp takes its share (as [`Load::block_valid_items`]).
    pub fn block_valid_items(mut self, n: impl Into<Expr<u32>>) -> Self {
        self.valid = Some((n.into(), ValidOf::Block));
        self
    }

    /// Exchanges through this temp storage instead of planned scratch.
    pub fn temp_storage(mut self, storage: &TempStorage) -> Self {
        self.storage = Some(*storage);
        self
    }
}

/// The controls of a temp storage, with cuda.coop's meanings.
#[derive(Debug, Clone, Copy)]
pub struct StorageSpec {
    size: Option<u32>,
    align: Option<u32>,
    auto_sync: bool,
    sharing: Sharing,
}

impl Default for StorageSpec {
    fn default() -> Self {
        StorageSpec {
            size: None,
            align: None,
            auto_sync: true,
            sharing: Sharing::Shared,
        }
    }
}

impl StorageSpec {
    /// Size in bytes (default: the largest need of the ops using it; a smaller size than an
    /// op needs is reported when the kernel is built).
    pub fn size_in_bytes(mut self, bytes: u32) -> Self {
        self.size = Some(bytes);
        self
    }

    /// Alignment in bytes, a power of two (default 16).
    pub fn alignment(mut self, bytes: u32) -> Self {
        self.align = Some(bytes);
        self
    }

    /// Whether the planner places barriers between the ops using it (default `true`);
    /// without, ordering them is the user's job (`sync_block`).
    pub fn auto_sync(mut self, on: bool) -> Self {
        self.auto_sync = on;
        self
    }

    /// Whether several ops may use it (default [`Sharing::Shared`]).
    pub fn sharing(mut self, sharing: Sharing) -> Self {
        self.sharing = sharing;
        self
    }
}

impl KernelBuilder {
    #[track_caller]
    fn param(&mut self, name: &str, role: Role, dtype: DType) -> ParamId {
        let loc = Loc::caller();
        if self.ir.params.iter().any(|p| p.name == name) {
            self.ir.issues.push(BuilderIssue::DuplicateParam {
                name: name.to_string(),
                loc,
            });
        }
        let id = ParamId(self.ir.params.len() as u32);
        self.ir.params.push(ParamDecl {
            name: name.to_string(),
            role,
            dtype,
            loc,
        });
        id
    }

    /// Declares a read-only buffer parameter (next in the signature).
    #[track_caller]
    pub fn input<T: Element>(&mut self, name: &str) -> Input<T> {
        Input::new(self.param(name, Role::Input, T::DTYPE), self.lineage.id())
    }

    /// Declares a buffer parameter the kernel writes (next in the signature).
    #[track_caller]
    pub fn output<T: Element>(&mut self, name: &str) -> Output<T> {
        Output::new(self.param(name, Role::Output, T::DTYPE), self.lineage.id())
    }

    /// Declares a scalar parameter (next in the signature).
    #[track_caller]
    pub fn scalar<T: Element>(&mut self, name: &str) -> Scalar<T> {
        Scalar::new(self.param(name, Role::Scalar, T::DTYPE), self.lineage.id())
    }

    /// Loads the group's tile of `src` into a new payload (default items per thread).
    #[track_caller]
    pub fn load_from<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &Input<T>,
        opts: Load<T>,
    ) -> ThreadData<T> {
        let dst = self.thread_data::<T>();
        self.load_into(group, src, &dst, opts);
        dst
    }

    /// Loads the group's tile of `src` into an existing payload.
    #[track_caller]
    pub fn load_into<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &Input<T>,
        dst: &ThreadData<T>,
        opts: Load<T>,
    ) {
        let loc = Loc::caller();
        let group = self.group_id(group.into());
        let t = Transfer {
            group,
            param: self.param_id(src.owner, src.id),
            data: self.data_id(dst),
            algorithm: opts.algorithm,
            offset: opts.offset.as_ref().map(|e| self.expr(e)),
            valid: opts.valid.as_ref().map(|(n, of)| ValidItems {
                count: self.expr(n),
                of: *of,
            }),
            oob_default: opts.oob_default.map(Element::to_bits),
            storage: opts.storage.map(|s| self.storage_id(&s)),
        };
        self.push(OpKind::Load(t), loc);
    }

    /// Stores a payload to the group's tile of `dst`.
    #[track_caller]
    pub fn store_to<T: Element>(
        &mut self,
        group: impl Into<Group>,
        dst: &Output<T>,
        data: &ThreadData<T>,
        opts: Store,
    ) {
        let loc = Loc::caller();
        let group = self.group_id(group.into());
        let t = Transfer {
            group,
            param: self.param_id(dst.owner, dst.id),
            data: self.data_id(data),
            algorithm: opts.algorithm.unwrap_or(Algorithm::Direct),
            offset: opts.offset.as_ref().map(|e| self.expr(e)),
            valid: opts.valid.as_ref().map(|(n, of)| ValidItems {
                count: self.expr(n),
                of: *of,
            }),
            oob_default: None,
            storage: opts.storage.map(|s| self.storage_id(&s)),
        };
        self.push(OpKind::Store(t), loc);
    }

    /// Declares a temp storage: shared memory that loads and stores given it (with
    /// `.temp_storage(..)`) use for their exchanges instead of planned scratch.
    #[track_caller]
    pub fn temp_storage(&mut self, spec: StorageSpec) -> TempStorage {
        let id = StorageId(self.ir.storages.len() as u32);
        self.ir.storages.push(StorageDecl {
            size: spec.size,
            align: spec.align,
            auto_sync: spec.auto_sync,
            sharing: spec.sharing,
            loc: Loc::caller(),
        });
        TempStorage {
            id,
            owner: self.lineage.id(),
        }
    }

    /// Declares a shared array of `len` elements, live for the whole kernel, beside the
    /// planned scratch.
    #[track_caller]
    pub fn shared_array<T: Element>(&mut self, len: u32) -> SharedArray<T> {
        let id = ArrayId(self.ir.arrays.len() as u32);
        self.ir.arrays.push(ArrayDecl {
            dtype: T::DTYPE,
            len,
            loc: Loc::caller(),
        });
        SharedArray::new(id, len, self.lineage.id())
    }

    /// `array[index] = value` (each thread that runs it writes one element).
    #[track_caller]
    pub fn shared_write<T: Element>(
        &mut self,
        array: &SharedArray<T>,
        index: impl Into<Expr<u32>>,
        value: impl Into<Expr<T>>,
    ) {
        let loc = Loc::caller();
        let index = self.expr(&index.into());
        let value = self.expr(&value.into());
        let array_id = self.array_id(array);
        self.push(
            OpKind::SharedWrite {
                array: array_id,
                index,
                value,
            },
            loc,
        );
    }
}

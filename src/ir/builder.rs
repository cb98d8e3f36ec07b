//! The kernel builder: a thin cursor over the IR with one typed method per op.
//!
//! Every method records the caller's source line (`#[track_caller]`), and no method panics or
//! fails: problems are recorded and reported, all together, by the verifier when the kernel is
//! built.

use super::dtype::{DType, Element};
use super::entities::{ArrayId, DataId, ExprId, Loc, OpId, ParamId, RegionId, StorageId};
use super::expr::{Arena, Expr, ExprKind, index};
use super::handles::{
    Group, Input, Output, Scalar, SharedArray, TempStorage, ThreadData, Tile, Warp,
};
use super::identity::Lineage;
use super::ops::*;
use smallvec::smallvec;

mod scatter;
pub use scatter::Scatter;

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

/// The controls of a reduction: operator, broadcast, valid items, block algorithm.
pub struct Reduce<T: Element> {
    op: ReduceKind<T>,
    broadcast: bool,
    valid: Option<Expr<u32>>,
    algorithm: ReduceAlgorithm,
}

type Combine<T> = Box<dyn FnOnce(Expr<T>, Expr<T>) -> Expr<T>>;

enum ReduceKind<T: Element> {
    Fixed(ReduceOp),
    Custom(Combine<T>, bool),
}

impl<T: Element> std::fmt::Debug for Reduce<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let op = match &self.op {
            ReduceKind::Fixed(op) => format!("{op:?}"),
            ReduceKind::Custom(_, c) => format!("Custom {{ commutative: {c} }}"),
        };
        write!(
            f,
            "Reduce {{ op: {op}, broadcast: {}, algorithm: {:?} }}",
            self.broadcast, self.algorithm
        )
    }
}

impl<T: Element> Reduce<T> {
    fn fixed(op: ReduceOp) -> Self {
        Reduce {
            op: ReduceKind::Fixed(op),
            broadcast: false,
            valid: None,
            algorithm: ReduceAlgorithm::WarpReductions,
        }
    }

    /// The sum (wrapping for integers).
    pub fn sum() -> Self {
        Reduce::fixed(ReduceOp::Sum)
    }

    /// The product (wrapping for integers).
    pub fn product() -> Self {
        Reduce::fixed(ReduceOp::Product)
    }

    /// The minimum.
    pub fn min() -> Self {
        Reduce::fixed(ReduceOp::Min)
    }

    /// The maximum.
    pub fn max() -> Self {
        Reduce::fixed(ReduceOp::Max)
    }

    /// A user operator, associative; `commutative` says whether `a op b == b op a` (if not,
    /// values are combined in position order, over a blocked payload).
    pub fn custom(
        commutative: bool,
        f: impl FnOnce(Expr<T>, Expr<T>) -> Expr<T> + 'static,
    ) -> Self {
        Reduce {
            op: ReduceKind::Custom(Box::new(f), commutative),
            broadcast: false,
            valid: None,
            algorithm: ReduceAlgorithm::WarpReductions,
        }
    }

    /// Every rank of the group gets the result (else rank 0 only, and the verifier rejects
    /// reads of it at other ranks: see [`KernelBuilder::reduce`]).
    pub fn broadcast(mut self) -> Self {
        self.broadcast = true;
        self
    }

    /// With one item per thread: only ranks below `n` take part.
    pub fn valid_items(mut self, n: impl Into<Expr<u32>>) -> Self {
        self.valid = Some(n.into());
        self
    }

    /// The block algorithm (default: warp reductions).
    pub fn algorithm(mut self, a: ReduceAlgorithm) -> Self {
        self.algorithm = a;
        self
    }
}

impl<T: super::expr::IntElement> Reduce<T> {
    /// Bitwise and.
    pub fn bit_and() -> Self {
        Reduce::fixed(ReduceOp::BitAnd)
    }

    /// Bitwise or.
    pub fn bit_or() -> Self {
        Reduce::fixed(ReduceOp::BitOr)
    }

    /// Bitwise xor.
    pub fn bit_xor() -> Self {
        Reduce::fixed(ReduceOp::BitXor)
    }
}

/// An operator on two items: `(this, neighbour) -> result`.
pub type BinaryFn<T> = fn(Expr<T>, Expr<T>) -> Expr<T>;

/// A flag operator on two items in position order: `(earlier, later) -> flag`.
pub type FlagFn<T> = fn(Expr<T>, Expr<T>) -> Expr<bool>;

/// The controls of a scan: inclusive or exclusive, operator, initial value.
pub struct Scan<T: Element> {
    op: ReduceKind<T>,
    inclusive: bool,
    initial: Option<Expr<T>>,
    algorithm: ScanAlgorithm,
    valid: Option<Expr<u32>>,
}

impl<T: Element> std::fmt::Debug for Scan<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Scan {{ inclusive: {} }}", self.inclusive)
    }
}

impl<T: Element> Scan<T> {
    fn fixed(op: ReduceOp, inclusive: bool) -> Self {
        Scan {
            op: ReduceKind::Fixed(op),
            inclusive,
            initial: None,
            algorithm: ScanAlgorithm::WarpScans,
            valid: None,
        }
    }

    /// Inclusive prefix sums.
    pub fn inclusive_sum() -> Self {
        Scan::fixed(ReduceOp::Sum, true)
    }

    /// Exclusive prefix sums (starting from 0 unless [`Scan::initial_value`] says otherwise).
    pub fn exclusive_sum() -> Self {
        Scan::fixed(ReduceOp::Sum, false).initial_value(T::cast_from_i64(0))
    }

    /// Inclusive scan with `op` (one of [`Reduce`]'s operators or a custom one).
    pub fn inclusive(op: Reduce<T>) -> Self {
        Scan {
            op: op.op,
            inclusive: true,
            initial: None,
            algorithm: ScanAlgorithm::WarpScans,
            valid: None,
        }
    }

    /// Exclusive scan with `op`; needs [`Scan::initial_value`].
    pub fn exclusive(op: Reduce<T>) -> Self {
        Scan {
            op: op.op,
            inclusive: false,
            initial: None,
            algorithm: ScanAlgorithm::WarpScans,
            valid: None,
        }
    }

    /// The value the scan starts from.
    pub fn initial_value(mut self, v: impl Into<Expr<T>>) -> Self {
        self.initial = Some(v.into());
        self
    }

    /// The block algorithm (default: warp scans).
    pub fn algorithm(mut self, a: ScanAlgorithm) -> Self {
        self.algorithm = a;
        self
    }

    /// For warp and logical-warp groups: only the first `n` positions of each group's tile
    /// take part (outputs past them are unspecified; the aggregate counts the valid ones).
    pub fn valid_items(mut self, n: impl Into<Expr<u32>>) -> Self {
        self.valid = Some(n.into());
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

/// Builds a kernel: declare parameters, groups and payloads, record ops, then [`build`].
///
/// Handles (parameters, payloads, storages, arrays, and expressions naming them) belong
/// to the builder that made them: using one in another builder is a build error naming the
/// line. A clone is a builder of its own that also takes its origin's handles made before the
/// clone.
///
/// [`build`]: KernelBuilder::build
#[derive(Debug)]
pub struct KernelBuilder {
    pub(crate) ir: Ir,
    cursor: Vec<RegionId>,
    pub(crate) lineage: Lineage,
    /// Handles of other builders given to the op being recorded.
    pub(crate) foreign: Vec<&'static str>,
}

impl Clone for KernelBuilder {
    fn clone(&self) -> Self {
        KernelBuilder {
            ir: self.ir.clone(),
            cursor: self.cursor.clone(),
            lineage: self.lineage.fork(&self.ir),
            foreign: self.foreign.clone(),
        }
    }
}

impl KernelBuilder {
    /// A new kernel of one block of 128 threads and 4 items per thread.
    #[track_caller]
    pub fn new(name: impl Into<String>) -> Self {
        let loc = Loc::caller();
        KernelBuilder {
            ir: Ir {
                name: name.into(),
                block: BlockShape {
                    dims: [128, 1, 1],
                    loc,
                },
                items_per_thread: 4,
                items_loc: loc,
                strict_arrangements: false,
                bounds: Bounds::Checked,
                params: Vec::new(),
                groups: Vec::new(),
                datas: Vec::new(),
                storages: Vec::new(),
                arrays: Vec::new(),
                exprs: Arena::default(),
                ops: Vec::new(),
                regions: vec![Vec::new()],
                body: RegionId(0),
                issues: Vec::new(),
            },
            cursor: vec![RegionId(0)],
            lineage: Lineage::new(),
            foreign: Vec::new(),
        }
    }

    /// Sets a 1-D block of `threads` threads.
    #[track_caller]
    pub fn block(self, threads: u32) -> Self {
        self.block_dims([threads, 1, 1])
    }

    /// Sets a block shape of up to three dimensions. Only 1-D blocks (`[n, 1, 1]`) can be
    /// built for now; others are reported by the verifier.
    #[track_caller]
    pub fn block_dims(mut self, dims: [u32; 3]) -> Self {
        self.ir.block = BlockShape {
            dims,
            loc: Loc::caller(),
        };
        self
    }

    /// Sets the default items per thread of payloads (1..=[`MAX_ITEMS_PER_THREAD`]).
    #[track_caller]
    pub fn items_per_thread(mut self, items: u32) -> Self {
        self.ir.items_per_thread = items;
        self.ir.items_loc = Loc::caller();
        self
    }

    /// Makes an arrangement mismatch (a striped payload into a blocked consumer, say) a build
    /// error naming both ops, instead of an exchange through shared memory the planner adds.
    pub fn strict_arrangements(mut self, strict: bool) -> Self {
        self.ir.strict_arrangements = strict;
        self
    }

    /// Builds the kernel without bounds checks: no load or store is guarded by the length of
    /// its buffer, and the kernel takes no hidden length parameters. A copy kernel's guards
    /// cost one comparison per thread and tile, so this is for kernels whose every access is
    /// known to be in bounds and where even that counts. Such a kernel launches only through
    /// the unsafe [`Function::launch_unchecked`](crate::runtime::Function::launch_unchecked);
    /// the safe launches refuse it. It is another kernel for the cache (its key differs).
    ///
    /// ```
    /// use coopgraph::ir::Bounds;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("raw_copy").unchecked_bounds();
    /// let x = k.input::<f32>("x");
    /// let y = k.output::<f32>("y");
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::vectorize());
    /// k.store_to(b, &y, &t, Store::vectorize());
    /// let kernel = k.build()?;
    /// assert_eq!(kernel.ir().bounds, Bounds::Unchecked);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn unchecked_bounds(mut self) -> Self {
        self.ir.bounds = Bounds::Unchecked;
        self
    }

    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.ir.name
    }

    /// Elements one block handles per tile: threads × items per thread.
    pub fn block_tile(&self) -> u32 {
        self.ir
            .block_threads()
            .saturating_mul(self.ir.items_per_thread)
    }

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

    /// The group of all threads in the block.
    #[track_caller]
    pub fn this_block(&self) -> Group {
        Group {
            kind: GroupKind::Block,
            loc: Loc::caller(),
        }
    }

    /// The warps of the block (32 lanes); `.group_by(w)` splits them into logical warps.
    #[track_caller]
    pub fn this_warp(&self) -> Warp {
        Warp { loc: Loc::caller() }
    }

    /// A new payload of the default items per thread, all slots unwritten.
    #[track_caller]
    pub fn thread_data<T: Element>(&mut self) -> ThreadData<T> {
        let items = self.ir.items_per_thread;
        self.thread_data_n(items)
    }

    /// A new payload of `items` items per thread, all slots unwritten.
    #[track_caller]
    pub fn thread_data_n<T: Element>(&mut self, items: u32) -> ThreadData<T> {
        let loc = Loc::caller();
        if items == 0 || items > MAX_ITEMS_PER_THREAD {
            self.ir.issues.push(BuilderIssue::Items { items, loc });
        }
        let id = DataId(self.ir.datas.len() as u32);
        self.ir.datas.push(DataDecl {
            dtype: T::DTYPE,
            items,
            align: None,
            loc,
        });
        ThreadData::new(id, items, self.lineage.id())
    }

    /// A new payload of `items` items per thread whose items may be moved in vectors of at
    /// most `alignment` bytes (a power of two, at least the element size): `vectorize` loads
    /// and stores into it use no wider accesses.
    #[track_caller]
    pub fn thread_data_aligned<T: Element>(&mut self, items: u32, alignment: u32) -> ThreadData<T> {
        let loc = Loc::caller();
        let t = self.thread_data_n::<T>(items);
        if !alignment.is_power_of_two() || alignment < T::DTYPE.bytes() {
            self.ir.issues.push(BuilderIssue::DataAlign {
                align: alignment,
                loc,
            });
        }
        self.ir.datas[t.id.index()].align = Some(alignment);
        t
    }

    fn expr<T: super::expr::ExprType>(&mut self, e: &Expr<T>) -> ExprId {
        let (lineage, foreign) = (&self.lineage, &mut self.foreign);
        self.ir.exprs.intern_with(e.node(), |n| {
            if let Some((owner, table, index, what)) = n.names()
                && !lineage.accepts(owner, table, index)
                && !foreign.contains(&what)
            {
                foreign.push(what);
            }
        })
    }

    fn push(&mut self, kind: OpKind, loc: Loc) -> OpId {
        self.flush_foreign(loc);
        let id = OpId(self.ir.ops.len() as u32);
        self.ir.ops.push(OpData { kind, loc });
        // The cursor always holds at least the kernel body.
        let region = *self.cursor.last().unwrap_or(&self.ir.body);
        self.ir.regions[region.index()].push(id);
        id
    }

    fn new_region(&mut self) -> RegionId {
        let id = RegionId(self.ir.regions.len() as u32);
        self.ir.regions.push(Vec::new());
        id
    }

    fn group_id(&mut self, g: Group) -> super::entities::GroupId {
        let decl = GroupDecl {
            kind: g.kind,
            loc: g.loc,
        };
        if let Some(i) = self.ir.groups.iter().position(|d| *d == decl) {
            return super::entities::GroupId(i as u32);
        }
        self.ir.groups.push(decl);
        super::entities::GroupId(self.ir.groups.len() as u32 - 1)
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

    /// A new payload with `f` applied to every item of `src`.
    #[track_caller]
    pub fn map<T: Element, U: Element>(
        &mut self,
        src: &ThreadData<T>,
        f: impl FnOnce(Expr<T>) -> Expr<U>,
    ) -> ThreadData<U> {
        let loc = Loc::caller();
        let dst = self.thread_data_n::<U>(src.items);
        let body = f(Expr::arg(0));
        let expr = self.expr(&body);
        let src_id = self.data_id(src);
        self.push(
            OpKind::Map {
                dst: dst.id,
                srcs: smallvec![src_id],
                expr,
            },
            loc,
        );
        dst
    }

    /// A new payload with `f` applied to every pair of items of `a` and `b`.
    #[track_caller]
    pub fn map2<A: Element, B: Element, U: Element>(
        &mut self,
        a: &ThreadData<A>,
        b: &ThreadData<B>,
        f: impl FnOnce(Expr<A>, Expr<B>) -> Expr<U>,
    ) -> ThreadData<U> {
        let loc = Loc::caller();
        let dst = self.thread_data_n::<U>(a.items);
        let body = f(Expr::arg(0), Expr::arg(1));
        let expr = self.expr(&body);
        let a_id = self.data_id(a);
        let b_id = self.data_id(b);
        self.push(
            OpKind::Map {
                dst: dst.id,
                srcs: smallvec![a_id, b_id],
                expr,
            },
            loc,
        );
        dst
    }

    /// A new payload whose every slot is `value` (which may use [`index::item`]).
    #[track_caller]
    pub fn fill<T: Element>(&mut self, value: impl Into<Expr<T>>) -> ThreadData<T> {
        let loc = Loc::caller();
        let dst = self.thread_data::<T>();
        let expr = self.expr(&value.into());
        self.push(
            OpKind::Map {
                dst: dst.id,
                srcs: smallvec![],
                expr,
            },
            loc,
        );
        dst
    }

    /// Writes one slot of a payload.
    #[track_caller]
    pub fn set_item<T: Element>(
        &mut self,
        dst: &ThreadData<T>,
        item: u32,
        value: impl Into<Expr<T>>,
    ) {
        let loc = Loc::caller();
        if item >= dst.items {
            self.ir.issues.push(BuilderIssue::ItemOutOfRange {
                item,
                items: dst.items,
                loc,
            });
        }
        let expr = self.expr(&value.into());
        let dst_id = self.data_id(dst);
        self.push(
            OpKind::SetItem {
                dst: dst_id,
                item,
                expr,
            },
            loc,
        );
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

    /// Reduces every item of `src` over `group` into a one-item payload: the result is at the
    /// group's rank 0, or at every rank with [`Reduce::broadcast`].
    ///
    /// The verifier knows where the result holds a value: without broadcast, only at rank 0 of
    /// each group (the other ranks hold partial sums). Reading it elsewhere is
    /// [`VerifyErrorKind::PartlyDefinedRead`](crate::ir::VerifyErrorKind::PartlyDefinedRead),
    /// naming the read's line and the reduction's: a store by every rank, a map whose result
    /// is so stored, another collective, a condition, a shared write by every thread. Rank 0's
    /// own uses are fine: a store with `valid_items(1)` (the group's first position is rank
    /// 0's), reads under `if group.rank() == 0`, and a value merged there into one every
    /// thread holds (`out = 0; if rank == 0 { out = r }`).
    ///
    /// ```
    /// use coopgraph::ir::{DefinedAt, Reduce, VerifyErrorKind};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{Error, KernelBuilder, Load, Store};
    ///
    /// let sums = |by_rank_0: bool| {
    ///     let mut k = KernelBuilder::new("sums").block(32).items_per_thread(1);
    ///     let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    ///     let w = k.this_warp().group_by(8);
    ///     let t = k.load_from(w, &x, Load::direct());
    ///     let s = k.reduce(w, &t, Reduce::sum());
    ///     // Each group of 8 stores its sum at its tile's first position (or every rank would).
    ///     let store = Store::direct();
    ///     k.store_to(w, &y, &s, if by_rank_0 { store.valid_items(1u32) } else { store });
    ///     k.build()
    /// };
    /// let Err(Error::Verify(e)) = sums(false) else { panic!("built") };
    /// assert!(matches!(
    ///     e.errors[0].kind,
    ///     VerifyErrorKind::PartlyDefinedRead { defined: DefinedAt::RankZero { threads: 8 }, .. }
    /// ));
    ///
    /// let dev = Device::sim();
    /// let f = dev.compile(&sums(true)?)?;
    /// let xs = dev.upload(&(0..32).collect::<Vec<u32>>())?;
    /// let mut ys = dev.alloc_zeroed::<u32>(32)?;
    /// f.launch_grid(1, (&xs, &mut ys))?;
    /// let ys = ys.to_vec()?;
    /// assert_eq!([ys[0], ys[1], ys[8], ys[24]], [28, 0, 92, 220]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn reduce<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        controls: Reduce<T>,
    ) -> ThreadData<T> {
        let loc = Loc::caller();
        let group = self.group_id(group.into());
        let dst = self.thread_data_n::<T>(1);
        let op = match controls.op {
            ReduceKind::Fixed(op) => op,
            ReduceKind::Custom(f, commutative) => {
                let body = f(Expr::arg(0), Expr::arg(1));
                ReduceOp::Custom {
                    expr: self.expr(&body),
                    commutative,
                }
            }
        };
        let valid = controls.valid.as_ref().map(|e| self.expr(e));
        let src_id = self.data_id(src);
        self.push(
            OpKind::Reduce(Reduction {
                group,
                src: src_id,
                dst: dst.id,
                op,
                broadcast: controls.broadcast,
                valid,
                algorithm: controls.algorithm,
            }),
            loc,
        );
        dst
    }

    /// Scans `src` over `group` in position order (a blocked payload; others are converted).
    #[track_caller]
    pub fn scan<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        controls: Scan<T>,
    ) -> ThreadData<T> {
        self.scan_inner(group.into(), src, controls, false).0
    }

    /// As [`scan`](Self::scan), also returning the group's total (without the initial value)
    /// at every rank, as a one-item payload.
    #[track_caller]
    pub fn scan_with_aggregate<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        controls: Scan<T>,
    ) -> (ThreadData<T>, ThreadData<T>) {
        let (d, a) = self.scan_inner(group.into(), src, controls, true);
        let a = a.unwrap_or(d);
        (d, a)
    }

    #[track_caller]
    fn scan_inner<T: Element>(
        &mut self,
        group: Group,
        src: &ThreadData<T>,
        controls: Scan<T>,
        aggregate: bool,
    ) -> (ThreadData<T>, Option<ThreadData<T>>) {
        let loc = Loc::caller();
        let group = self.group_id(group);
        let dst = self.thread_data_n::<T>(src.items);
        // Not `aggregate.then(..)`: a closure would drop the caller's location.
        let agg = if aggregate {
            Some(self.thread_data_n::<T>(1))
        } else {
            None
        };
        let op = match controls.op {
            ReduceKind::Fixed(op) => op,
            ReduceKind::Custom(f, commutative) => {
                let body = f(Expr::arg(0), Expr::arg(1));
                ReduceOp::Custom {
                    expr: self.expr(&body),
                    commutative,
                }
            }
        };
        let initial = controls.initial.as_ref().map(|e| self.expr(e));
        let valid = controls.valid.as_ref().map(|e| self.expr(e));
        let src_id = self.data_id(src);
        self.push(
            OpKind::Scan(ScanSpec {
                group,
                src: src_id,
                dst: dst.id,
                op,
                inclusive: controls.inclusive,
                initial,
                aggregate: agg.map(|a| a.id),
                callback: None,
                algorithm: controls.algorithm,
                valid,
            }),
            loc,
        );
        (dst, agg)
    }

    /// A scan seeded by a prefix callback, for running scans over many tiles: once the
    /// group's total of this tile is known, `callback` gets it and returns the prefix the
    /// tile's scan starts from. The prefix is evaluated first; the ops the callback records
    /// run after it (so returning `running.item(0)` and then adding the total to `running`
    /// seeds this tile with the old total and the next with the new). The callback runs in
    /// every thread of the group, which all see the same total; the prefix of the group's
    /// rank 0 seeds every thread (as CUB takes its callback's value from lane 0), so a value
    /// only rank 0 holds — a tile's carry it loaded — is enough. A block group hands it on
    /// through shared memory (one more barrier), a warp through a shuffle.
    #[track_caller]
    pub fn scan_with_prefix<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        controls: Scan<T>,
        callback: impl FnOnce(&mut Self, Expr<T>) -> Expr<T>,
    ) -> ThreadData<T> {
        let loc = Loc::caller();
        let group = self.group_id(group.into());
        let dst = self.thread_data_n::<T>(src.items);
        let agg = self.thread_data_n::<T>(1);
        let op = match controls.op {
            ReduceKind::Fixed(op) => op,
            ReduceKind::Custom(f, commutative) => {
                let body = f(Expr::arg(0), Expr::arg(1));
                ReduceOp::Custom {
                    expr: self.expr(&body),
                    commutative,
                }
            }
        };
        let valid = controls.valid.as_ref().map(|e| self.expr(e));
        let body = self.new_region();
        self.cursor.push(body);
        let prefix = callback(self, agg.item(0));
        self.cursor.pop();
        let prefix = self.expr(&prefix);
        let src_id = self.data_id(src);
        self.push(
            OpKind::Scan(ScanSpec {
                group,
                src: src_id,
                dst: dst.id,
                op,
                inclusive: controls.inclusive,
                initial: None,
                aggregate: Some(agg.id),
                callback: Some(PrefixCallback { body, prefix }),
                algorithm: controls.algorithm,
                valid,
            }),
            loc,
        );
        dst
    }

    /// A payload with `src`'s items rearranged to `to` (blocked, or striped over `threads`):
    /// CUB's `BlockExchange` conversions, planned through shared memory. An explicit
    /// exchange is allowed in strict mode.
    #[track_caller]
    pub fn exchange<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        to: Arrangement,
    ) -> ThreadData<T> {
        self.exchange_inner(group.into(), src, to, false, false)
    }

    /// [`exchange`](Self::exchange) within groups of at most 32 threads through `shfl.sync`
    /// (CUB's `WarpExchange` shuffle variant): no shared memory and no barrier, `K * K`
    /// shuffles for `K` items per thread.
    #[track_caller]
    pub fn exchange_via_shuffles<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        to: Arrangement,
    ) -> ThreadData<T> {
        self.exchange_inner(group.into(), src, to, false, true)
    }

    /// [`exchange`](Self::exchange) between blocked and warp-striped order, the warps taking
    /// turns on one warp-sized region of shared memory (CUB's warp time slicing) when
    /// `time_sliced`.
    #[track_caller]
    pub fn exchange_with<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        to: Arrangement,
        time_sliced: bool,
    ) -> ThreadData<T> {
        self.exchange_inner(group.into(), src, to, time_sliced, false)
    }

    #[track_caller]
    fn exchange_inner<T: Element>(
        &mut self,
        group: Group,
        src: &ThreadData<T>,
        to: Arrangement,
        time_sliced: bool,
        shuffles: bool,
    ) -> ThreadData<T> {
        let loc = Loc::caller();
        let group = self.group_id(group);
        let dst = self.thread_data_n::<T>(src.items);
        let src_id = self.data_id(src);
        self.push(
            OpKind::Exchange {
                group,
                src: src_id,
                dst: dst.id,
                to,
                time_sliced,
                shuffles,
            },
            loc,
        );
        dst
    }

    #[track_caller]
    fn neighbor<T: Element, U: Element>(
        &mut self,
        group: Group,
        src: &ThreadData<T>,
        kind: NeighborKind,
        op: Option<ExprId>,
        edge: Option<ExprId>,
    ) -> ThreadData<U> {
        self.neighbor_out(group, src, kind, op, edge, None)
    }

    #[track_caller]
    fn neighbor_out<T: Element, U: Element>(
        &mut self,
        group: Group,
        src: &ThreadData<T>,
        kind: NeighborKind,
        op: Option<ExprId>,
        edge: Option<ExprId>,
        shifted_out: Option<DataId>,
    ) -> ThreadData<U> {
        let loc = Loc::caller();
        let group = self.group_id(group);
        let dst = self.thread_data_n::<U>(src.items);
        let src_id = self.data_id(src);
        self.push(
            OpKind::Neighbor(NeighborSpec {
                group,
                src: src_id,
                dst: dst.id,
                kind,
                op,
                edge,
                shifted_out,
                valid: None,
            }),
            loc,
        );
        dst
    }

    /// A neighbour op whose operator is `f(Arg(0), Arg(1))`.
    #[track_caller]
    fn neighbor_fn<T: Element, U: Element, R: super::expr::ExprType>(
        &mut self,
        group: Group,
        src: &ThreadData<T>,
        kind: NeighborKind,
        f: fn(Expr<T>, Expr<T>) -> Expr<R>,
        edge: Option<Expr<T>>,
    ) -> ThreadData<U> {
        let body = f(Expr::arg(0), Expr::arg(1));
        let op = Some(self.expr(&body));
        let edge = edge.as_ref().map(|e| self.expr(e));
        self.neighbor(group, src, kind, op, edge)
    }

    /// Adjacent differences in position order: `x[p] - x[p - 1]`, or `f(x[p], x[p - 1])`;
    /// position 0 uses `predecessor` (the item before the tile) or keeps its value.
    #[track_caller]
    pub fn adjacent_difference_left<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        f: Option<BinaryFn<T>>,
        predecessor: Option<Expr<T>>,
    ) -> ThreadData<T> {
        self.neighbor_fn(
            group.into(),
            src,
            NeighborKind::AdjacentLeft,
            f.unwrap_or(|a, b| a - b),
            predecessor,
        )
    }

    /// [`adjacent_difference_left`](Self::adjacent_difference_left) over a partial tile:
    /// positions from `valid` on keep their input (CUB's `SubtractLeftPartialTile`).
    #[track_caller]
    pub fn adjacent_difference_left_partial<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        f: Option<BinaryFn<T>>,
        predecessor: Option<Expr<T>>,
        valid: impl Into<Expr<u32>>,
    ) -> ThreadData<T> {
        let d = self.adjacent_difference_left(group, src, f, predecessor);
        self.set_neighbor_valid(d.id, valid.into());
        d
    }

    /// [`adjacent_difference_right`](Self::adjacent_difference_right) over a partial tile:
    /// the last valid position and those after it keep their input (CUB's
    /// `SubtractRightPartialTile`).
    #[track_caller]
    pub fn adjacent_difference_right_partial<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        f: Option<BinaryFn<T>>,
        valid: impl Into<Expr<u32>>,
    ) -> ThreadData<T> {
        let d = self.adjacent_difference_right(group, src, f, None);
        self.set_neighbor_valid(d.id, valid.into());
        d
    }

    /// Sets the valid count of the neighbour op that produced `dst` (the last op recorded).
    fn set_neighbor_valid(&mut self, dst: DataId, valid: Expr<u32>) {
        let e = self.expr(&valid);
        if let Some(OpData {
            kind: OpKind::Neighbor(nb),
            loc,
        }) = self.ir.ops.last_mut()
            && nb.dst == dst
        {
            nb.valid = Some(e);
            let loc = *loc;
            self.flush_foreign(loc);
        }
    }

    /// Adjacent differences to the right: `x[p] - x[p + 1]`, or `f(x[p], x[p + 1])`; the last
    /// position uses `successor` or keeps its value.
    #[track_caller]
    pub fn adjacent_difference_right<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        f: Option<BinaryFn<T>>,
        successor: Option<Expr<T>>,
    ) -> ThreadData<T> {
        self.neighbor_fn(
            group.into(),
            src,
            NeighborKind::AdjacentRight,
            f.unwrap_or(|a, b| a - b),
            successor,
        )
    }

    /// Head flags (1 where a run starts): `x[p - 1] != x[p]`, or `f(x[p - 1], x[p])`; position
    /// 0 compares with `predecessor`, else is a head.
    #[track_caller]
    pub fn flag_heads<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        f: Option<FlagFn<T>>,
        predecessor: Option<Expr<T>>,
    ) -> ThreadData<u32> {
        self.neighbor_fn(
            group.into(),
            src,
            NeighborKind::Heads,
            f.unwrap_or(|a, b| a.ne(b)),
            predecessor,
        )
    }

    /// Tail flags (1 where a run ends): `x[p] != x[p + 1]`, or `f(x[p], x[p + 1])`; the last
    /// position compares with `successor`, else is a tail.
    #[track_caller]
    pub fn flag_tails<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        f: Option<FlagFn<T>>,
        successor: Option<Expr<T>>,
    ) -> ThreadData<u32> {
        self.neighbor_fn(
            group.into(),
            src,
            NeighborKind::Tails,
            f.unwrap_or(|a, b| a.ne(b)),
            successor,
        )
    }

    /// Head and tail flags together (CUB's `FlagHeadsAndTails`): `(heads, tails)`.
    #[track_caller]
    pub fn flag_heads_and_tails<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        f: Option<FlagFn<T>>,
        predecessor: Option<Expr<T>>,
        successor: Option<Expr<T>>,
    ) -> (ThreadData<u32>, ThreadData<u32>) {
        let group = group.into();
        let heads = self.flag_heads(group, src, f, predecessor);
        let tails = self.flag_tails(group, src, f, successor);
        (heads, tails)
    }

    /// Block shuffle up: position `p` gets `x[p - 1]`; position 0 gets `edge` or keeps its
    /// value.
    #[track_caller]
    pub fn shuffle_up<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        edge: Option<Expr<T>>,
    ) -> ThreadData<T> {
        let edge = edge.as_ref().map(|e| self.expr(e));
        self.neighbor(group.into(), src, NeighborKind::ShiftUp, None, edge)
    }

    /// Block shuffle down: position `p` gets `x[p + 1]`; the last position gets `edge` or keeps
    /// its value.
    #[track_caller]
    pub fn shuffle_down<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        edge: Option<Expr<T>>,
    ) -> ThreadData<T> {
        let edge = edge.as_ref().map(|e| self.expr(e));
        self.neighbor(group.into(), src, NeighborKind::ShiftDown, None, edge)
    }

    /// [`shuffle_up`](Self::shuffle_up), also returning the tile's last item (the one shifted
    /// out, CUB's block suffix) at every rank.
    #[track_caller]
    pub fn shuffle_up_with_suffix<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        edge: Option<Expr<T>>,
    ) -> (ThreadData<T>, ThreadData<T>) {
        let edge = edge.as_ref().map(|e| self.expr(e));
        let out = self.thread_data_n::<T>(1);
        let r = self.neighbor_out(
            group.into(),
            src,
            NeighborKind::ShiftUp,
            None,
            edge,
            Some(out.id),
        );
        (r, out)
    }

    /// [`shuffle_down`](Self::shuffle_down), also returning the tile's first item (the one
    /// shifted out, CUB's block prefix) at every rank.
    #[track_caller]
    pub fn shuffle_down_with_prefix<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        edge: Option<Expr<T>>,
    ) -> (ThreadData<T>, ThreadData<T>) {
        let edge = edge.as_ref().map(|e| self.expr(e));
        let out = self.thread_data_n::<T>(1);
        let r = self.neighbor_out(
            group.into(),
            src,
            NeighborKind::ShiftDown,
            None,
            edge,
            Some(out.id),
        );
        (r, out)
    }

    /// Block shuffle by offset (one item per thread): rank `r` gets rank `r + distance`'s value
    /// when that rank is in the group, else keeps its own.
    #[track_caller]
    pub fn shuffle_offset<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        distance: i32,
    ) -> ThreadData<T> {
        self.neighbor(
            group.into(),
            src,
            NeighborKind::Offset(distance),
            None,
            None,
        )
    }

    /// Block shuffle by rotation (one item per thread): rank `r` gets rank
    /// `(r + distance) mod size`'s value.
    #[track_caller]
    pub fn shuffle_rotate<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        distance: i32,
    ) -> ThreadData<T> {
        self.neighbor(
            group.into(),
            src,
            NeighborKind::Rotate(distance),
            None,
            None,
        )
    }

    /// A block barrier: every thread waits until all threads of the block reach it.
    #[track_caller]
    pub fn sync_block(&mut self) {
        let loc = Loc::caller();
        self.push(OpKind::SyncBlock, loc);
    }

    /// Copies `src` into `dst`, slot by slot.
    #[track_caller]
    pub fn assign<T: Element>(&mut self, dst: &ThreadData<T>, src: &ThreadData<T>) {
        let loc = Loc::caller();
        let dst_id = self.data_id(dst);
        let src_id = self.data_id(src);
        self.push(
            OpKind::Assign {
                dst: dst_id,
                src: src_id,
            },
            loc,
        );
    }

    fn region(&mut self, f: impl FnOnce(&mut Self)) -> RegionId {
        let r = self.new_region();
        self.cursor.push(r);
        f(self);
        self.cursor.pop();
        r
    }

    /// Runs `then` where `cond` holds.
    #[track_caller]
    pub fn if_(&mut self, cond: impl Into<Expr<bool>>, then: impl FnOnce(&mut Self)) {
        let loc = Loc::caller();
        let cond = self.expr(&cond.into());
        let then = self.region(then);
        self.push(
            OpKind::If {
                cond,
                then,
                otherwise: None,
            },
            loc,
        );
    }

    /// Runs `then` where `cond` holds and `otherwise` elsewhere.
    #[track_caller]
    pub fn if_else(
        &mut self,
        cond: impl Into<Expr<bool>>,
        then: impl FnOnce(&mut Self),
        otherwise: impl FnOnce(&mut Self),
    ) {
        let loc = Loc::caller();
        let cond = self.expr(&cond.into());
        let then = self.region(then);
        let otherwise = Some(self.region(otherwise));
        self.push(
            OpKind::If {
                cond,
                then,
                otherwise,
            },
            loc,
        );
    }

    fn reserve_op(&self) -> OpId {
        OpId(self.ir.ops.len() as u32)
    }

    /// Runs `body` for `i` in `start..end`.
    ///
    /// The loop op takes the next op id; ops recorded by `body` come after it.
    #[track_caller]
    pub fn for_range(
        &mut self,
        start: impl Into<Expr<u32>>,
        end: impl Into<Expr<u32>>,
        body: impl FnOnce(&mut Self, Expr<u32>),
    ) {
        let loc = Loc::caller();
        let start = self.expr(&start.into());
        let end = self.expr(&end.into());
        let placeholder = self.reserve_op();
        let body_region = self.new_region();
        let op = self.push(
            OpKind::For {
                start,
                end,
                body: body_region,
            },
            loc,
        );
        debug_assert_eq!(op, placeholder);
        self.cursor.push(body_region);
        let i = Expr::owned(ExprKind::LoopVar { op, field: 0 }, self.lineage.id());
        body(self, i);
        self.cursor.pop();
    }

    /// A grid-stride loop over the tiles of `n` elements (one tile is
    /// [`block_tile`](Self::block_tile) elements). Loads and stores inside default to the
    /// tile's origin and valid count.
    #[track_caller]
    pub fn tiles(&mut self, n: impl Into<Expr<u32>>, body: impl FnOnce(&mut Self, Tile)) {
        let loc = Loc::caller();
        let n = self.expr(&n.into());
        let body_region = self.new_region();
        let op = self.push(
            OpKind::Tiles {
                n,
                body: body_region,
            },
            loc,
        );
        self.cursor.push(body_region);
        let tile = Tile::new(op, self.lineage.id());
        body(self, tile);
        self.cursor.pop();
    }

    /// The recorded IR (for inspection and tests).
    pub fn ir(&self) -> &Ir {
        &self.ir
    }

    /// Verifies, plans and prepares the kernel for code generation.
    pub fn build(self) -> Result<crate::Kernel, crate::Error> {
        crate::kernel::Kernel::from_ir(self.ir)
    }

    /// Starts a straight pipeline: declares input `name` and a scalar `n` (the element count),
    /// and loads the block's tile of the input, with the valid count derived from `n`.
    #[track_caller]
    pub fn load<T: Element>(mut self, name: &str) -> Pipeline<T> {
        let x = self.input::<T>(name);
        let n = self.scalar::<u32>("n");
        let block = self.this_block();
        let origin = index::block_index() * self.block_tile();
        let nn = n.expr();
        let valid = nn.gt(origin.clone()).select(nn - origin, 0u32);
        let data = self.load_from(block, &x, Load::direct().valid_items(valid.clone()));
        Pipeline {
            k: self,
            data,
            valid,
        }
    }
}

/// A straight load → map → store pipeline over one block per tile; see
/// [`KernelBuilder::load`].
#[derive(Debug, Clone)]
pub struct Pipeline<T: Element> {
    k: KernelBuilder,
    data: ThreadData<T>,
    valid: Expr<u32>,
}

impl<T: Element> Pipeline<T> {
    /// Applies `f` to every item.
    #[track_caller]
    pub fn map<U: Element>(mut self, f: impl FnOnce(Expr<T>) -> Expr<U>) -> Pipeline<U> {
        let data = self.k.map(&self.data, f);
        Pipeline {
            k: self.k,
            data,
            valid: self.valid,
        }
    }

    /// Declares output `name` and stores the tile to it. The pipeline goes on, so a tile can
    /// be stored to several outputs.
    #[track_caller]
    pub fn store(mut self, name: &str) -> Pipeline<T> {
        let y = self.k.output::<T>(name);
        let block = self.k.this_block();
        self.k.store_to(
            block,
            &y,
            &self.data,
            Store::direct().valid_items(self.valid.clone()),
        );
        self
    }

    /// The builder, to record more ops by hand.
    pub fn into_builder(self) -> KernelBuilder {
        self.k
    }

    /// Verifies, plans and prepares the kernel.
    pub fn build(self) -> Result<crate::Kernel, crate::Error> {
        self.k.build()
    }
}

//! Typed handles the builder hands out: parameters, groups, payloads, tiles.
//!
//! Handles are plain ids with a phantom element type, so Rust rejects type mistakes (storing a
//! `ThreadData<f64>` into an `Output<f32>` does not compile). Each also carries the identity of
//! the builder that made it, so a handle given to another builder is reported by the verifier
//! (a `ForeignHandle` error naming the line) instead of naming whatever has its id there.
//! Groups and warps are the exception: they are kinds of thread sets, the same in every kernel.

use super::builder::KernelBuilder;
use super::dtype::Element;
use super::entities::{ArrayId, ConstId, DataId, Loc, LocalId, OpId, ParamId, StorageId};
use super::expr::{Expr, ExprKind, Node, index};
use super::identity::BuilderId;
use super::ops::{AtomicMemory, GroupKind};
use std::marker::PhantomData;
use std::sync::Arc;

macro_rules! param_handle {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name<T: Element> {
            pub(crate) id: ParamId,
            pub(crate) owner: BuilderId,
            _t: PhantomData<fn() -> T>,
        }

        impl<T: Element> Clone for $name<T> {
            fn clone(&self) -> Self {
                *self
            }
        }

        impl<T: Element> Copy for $name<T> {}

        impl<T: Element> $name<T> {
            pub(crate) fn new(id: ParamId, owner: BuilderId) -> Self {
                $name { id, owner, _t: PhantomData }
            }

            /// The parameter's id (its position in the signature).
            pub fn id(&self) -> ParamId {
                self.id
            }
        }
    )*};
}

param_handle! {
    /// A read-only buffer parameter: loaded by tiles ([`load_from`]) or read by index
    /// ([`Input::at`]) through the read-only path (`ld.global.nc`); never written (writing to
    /// one does not compile).
    ///
    /// [`load_from`]: crate::ir::KernelBuilder::load_from
    Input;
    /// A buffer parameter the kernel writes: stored by tiles ([`store_to`]), written by index
    /// ([`write`]) or updated by atomics.
    ///
    /// [`store_to`]: crate::ir::KernelBuilder::store_to
    /// [`write`]: crate::ir::KernelBuilder::write
    Output;
    /// A buffer parameter the kernel both reads and writes (see
    /// [`buffer`](crate::ir::KernelBuilder::buffer)): reads by index ([`Buffer::at`]) or by tiles
    /// take the coherent path (`ld.global`), so each thread reads back what it wrote before.
    Buffer;
    /// A scalar parameter passed by value.
    Scalar;
}

mod sealed {
    use super::*;

    /// How an index reaches the expression tree.
    pub trait IndexNode {
        /// The index's node (`u32` or `u64`).
        fn index_node(self) -> Arc<Node>;
    }

    /// The memory an atomic updates.
    pub trait AtomicMemoryOf {
        /// The memory in `k` (a handle of another builder is noted for the verifier).
        fn memory_in(&self, k: &mut KernelBuilder) -> AtomicMemory;
    }

    /// The row-major linear index of an element of an array of extents `dims`.
    pub trait ArrayLinear<const D: usize> {
        /// `(i0 * d1 + i1) * d2 + i2` for `D` = 3 (and likewise for fewer).
        fn linear(self, dims: &[u32; D]) -> Expr<u32>;
    }

    /// A buffer parameter's handle.
    pub trait ParamHandle {
        /// The parameter's id in `k`, checked to be one of `k`'s (a handle of another builder
        /// is noted for the verifier to report).
        fn param_in(&self, k: &mut KernelBuilder) -> ParamId;
    }
}

pub(crate) use sealed::{ArrayLinear, AtomicMemoryOf, IndexNode, ParamHandle};

/// An element index into a buffer: a `u32` (a literal, an `Expr<u32>`, a `u32` scalar), or a
/// `u64` expression or scalar for buffers of more than `u32::MAX` elements.
///
/// `u32` index arithmetic wraps at 2^32 as the expression DSL's does (`i - 1` at 0 is
/// `u32::MAX`), so an index that wrapped is past the end of any buffer the runtime takes:
/// where bounds are checked, it reads the default and writes nothing. Elements past
/// `u32::MAX` are reached with `u64` indices only (`i.cast::<u64>() * 4 + j`).
pub trait ElementIndex: IndexNode {}

impl IndexNode for u32 {
    fn index_node(self) -> Arc<Node> {
        Expr::<u32>::lit(self).node
    }
}
impl ElementIndex for u32 {}

macro_rules! index_exprs {
    ($($t:ty),*) => {$(
        impl IndexNode for Expr<$t> {
            fn index_node(self) -> Arc<Node> {
                self.node
            }
        }
        impl ElementIndex for Expr<$t> {}
        impl IndexNode for &Expr<$t> {
            fn index_node(self) -> Arc<Node> {
                self.node.clone()
            }
        }
        impl ElementIndex for &Expr<$t> {}
        impl IndexNode for Scalar<$t> {
            fn index_node(self) -> Arc<Node> {
                self.expr().node
            }
        }
        impl ElementIndex for Scalar<$t> {}
        impl IndexNode for &Scalar<$t> {
            fn index_node(self) -> Arc<Node> {
                self.expr().node
            }
        }
        impl ElementIndex for &Scalar<$t> {}
    )*};
}
index_exprs!(u32, u64);

/// A buffer the kernel may read: an [`Input`] or a [`Buffer`].
pub trait Readable<T: Element>: ParamHandle {}
/// A buffer the kernel may write: an [`Output`] or a [`Buffer`] (never an [`Input`]).
pub trait Writable<T: Element>: ParamHandle {}

macro_rules! buffer_roles {
    ($($name:ident: $($role:ident),*;)*) => {$(
        impl<T: Element> ParamHandle for $name<T> {
            fn param_in(&self, k: &mut KernelBuilder) -> ParamId {
                k.param_id(self.owner, self.id)
            }
        }
        $(impl<T: Element> $role<T> for $name<T> {})*
    )*};
}
buffer_roles! {
    Input: Readable;
    Output: Writable;
    Buffer: Readable, Writable;
}

/// Memory atomics may update: an [`Output`], a [`Buffer`] or a [`SharedArray`] (never an
/// [`Input`]).
pub trait AtomicTarget<T: Element>: AtomicMemoryOf {}

impl<T: Element> AtomicMemoryOf for Output<T> {
    fn memory_in(&self, k: &mut KernelBuilder) -> AtomicMemory {
        AtomicMemory::Global(self.param_in(k))
    }
}
impl<T: Element> AtomicMemoryOf for Buffer<T> {
    fn memory_in(&self, k: &mut KernelBuilder) -> AtomicMemory {
        AtomicMemory::Global(self.param_in(k))
    }
}
impl<T: Element> AtomicMemoryOf for SharedArray<T, 1> {
    fn memory_in(&self, k: &mut KernelBuilder) -> AtomicMemory {
        AtomicMemory::Shared(k.array_id(self))
    }
}
impl<T: Element> AtomicTarget<T> for Output<T> {}
impl<T: Element> AtomicTarget<T> for Buffer<T> {}
impl<T: Element> AtomicTarget<T> for SharedArray<T> {}

impl<T: Element> Input<T> {
    /// Element `index` through the read-only path (`ld.global.nc`): where bounds are checked,
    /// an index at or past the buffer's length reads 0 (`0.0` for floats) and touches no
    /// memory; with `unchecked_bounds` it must be in bounds.
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // y[t] = x[t] + x[t + 1]; the last thread's x[32] is past the end and reads 0.
    /// let mut k = KernelBuilder::new("pairs").block(32);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let t = index::thread_rank();
    /// k.write(&y, &t, x.at(&t) + x.at(t.clone() + 1u32));
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&(0..32).collect::<Vec<u32>>())?;
    /// let mut yb = dev.alloc_zeroed::<u32>(32)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// let want: Vec<u32> = (0..32).map(|t| if t < 31 { 2 * t + 1 } else { 31 }).collect();
    /// assert_eq!(yb.to_vec()?, want);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    ///
    /// An index that is not a `u32` or `u64` does not compile (a float, or a signed integer:
    /// cast it with `.cast::<u32>()`):
    ///
    /// ```compile_fail
    /// let mut k = coopgraph::KernelBuilder::new("k");
    /// let x = k.input::<u32>("x");
    /// let _ = x.at(coopgraph::ir::Expr::lit(1.5f32));
    /// ```
    ///
    /// ```compile_fail
    /// let mut k = coopgraph::KernelBuilder::new("k");
    /// let x = k.input::<u32>("x");
    /// let _ = x.at(coopgraph::ir::Expr::lit(-1i32));
    /// ```
    pub fn at(&self, index: impl ElementIndex) -> Expr<T> {
        Expr::owned(
            ExprKind::GlobalRead(self.id, index.index_node()),
            self.owner,
        )
    }
}

impl<T: Element> Buffer<T> {
    /// Element `index` through the coherent path (`ld.global`): a thread reads back what it
    /// wrote to the element before. Where bounds are checked, an index at or past the buffer's
    /// length reads 0 (`0.0` for floats) and touches no memory.
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // a[t] = 2 * a[t] + 1, read and written in place.
    /// let mut k = KernelBuilder::new("in_place").block(32);
    /// let a = k.buffer::<i32>("a");
    /// let t = index::thread_rank();
    /// k.write(&a, &t, a.at(&t) * 2 + 1);
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut ab = dev.upload(&(0..32).collect::<Vec<i32>>())?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut ab,))?;
    /// assert_eq!(ab.to_vec()?, (0..32).map(|v| 2 * v + 1).collect::<Vec<i32>>());
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn at(&self, index: impl ElementIndex) -> Expr<T> {
        Expr::owned(
            ExprKind::GlobalRead(self.id, index.index_node()),
            self.owner,
        )
    }
}

impl<T: Element> Scalar<T> {
    /// The parameter's value as an expression.
    pub fn expr(&self) -> Expr<T> {
        Expr::owned(ExprKind::Param(self.id), self.owner)
    }
}

impl<T: Element> From<Scalar<T>> for Expr<T> {
    fn from(s: Scalar<T>) -> Expr<T> {
        s.expr()
    }
}

impl<T: Element> From<&Scalar<T>> for Expr<T> {
    fn from(s: &Scalar<T>) -> Expr<T> {
        s.expr()
    }
}

/// A group of threads that runs collective ops together: the block, logical warps, or groups
/// of whole warps.
///
/// A group names no entity of a builder (the block is the block in every kernel), so it may be
/// made by one builder and used in another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Group {
    pub(crate) kind: GroupKind,
    pub(crate) loc: Loc,
}

impl Group {
    /// What kind of group this is.
    pub fn kind(&self) -> GroupKind {
        self.kind
    }

    /// The thread's rank within its group.
    pub fn rank(&self) -> Expr<u32> {
        match self.kind {
            GroupKind::Block => index::thread_rank(),
            GroupKind::LogicalWarp { width: 32 } => index::lane(),
            GroupKind::LogicalWarp { width } => index::thread_rank() % width.max(1),
            GroupKind::Warps { warps } => index::thread_rank() % warps.max(1).saturating_mul(32),
        }
    }

    /// The group's rank among the groups of its kind in the block (0 for the block). In the
    /// warps a non-exhaustive partition leaves over, it is the number of groups.
    pub fn index(&self) -> Expr<u32> {
        match self.kind {
            GroupKind::Block => Expr::lit(0),
            GroupKind::LogicalWarp { width } => index::thread_rank() / width.max(1),
            GroupKind::Warps { warps } => {
                let groups = index::block_threads() / warps.max(1).saturating_mul(32);
                (index::warp_rank() / warps.max(1)).min(groups)
            }
        }
    }

    /// The thread's rank within its group (CG's `thread_rank`; the same as
    /// [`Group::rank`]).
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // In a block of 40 threads, tiles of 16: ranks, tile sizes (the last tile has 8
    /// // threads), tile indices and the number of tiles.
    /// let mut k = KernelBuilder::new("queries").block(40);
    /// let y = k.output::<u32>("y");
    /// let tile = k.this_warp().group_by(16);
    /// let packed = tile.thread_rank()
    ///     + tile.num_threads() * 100u32
    ///     + tile.meta_group_rank() * 10_000u32
    ///     + tile.meta_group_size() * 100_000u32;
    /// k.write(&y, index::thread_rank(), packed);
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut yb = dev.alloc_zeroed::<u32>(40)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut yb,))?;
    /// let ys = yb.to_vec()?;
    /// assert_eq!([ys[0], ys[17], ys[39]], [301_600, 311_601, 320_807]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn thread_rank(&self) -> Expr<u32> {
        self.rank()
    }

    /// The threads in the thread's group (CG's `num_threads`): the block's, or the tile's
    /// width, except in the block's last tile where the width does not divide the block
    /// (that tile has the rest). See [`Group::thread_rank`].
    pub fn num_threads(&self) -> Expr<u32> {
        match self.kind {
            GroupKind::Block => index::block_threads(),
            GroupKind::LogicalWarp { width } => {
                let w = width.max(1);
                let start = self.meta_group_rank() * w;
                (index::block_threads() - start).min(w)
            }
            GroupKind::Warps { warps } => Expr::lit(warps.saturating_mul(32)),
        }
    }

    /// The thread's warp's rank within its group (CG's `warp_rank` of a group of warps): the
    /// warp's rank in the block for the block, its rank in its group for a group of whole
    /// warps, and 0 for a tile (which lies inside one warp).
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // Groups of 3 warps in a block of 8 warps: warps 6 and 7 are in no group.
    /// let mut k = KernelBuilder::new("warp_queries").block(256);
    /// let y = k.output::<u32>("y");
    /// let g = k.this_block().group_by_warps(3);
    /// assert_eq!(g.static_num_threads(), Some(96));
    /// let packed = g.warp_rank() + g.num_warps() * 10u32 + g.meta_group_rank() * 100u32
    ///     + g.meta_group_size() * 1000u32;
    /// k.write(&y, index::thread_rank(), packed);
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut yb = dev.alloc_zeroed::<u32>(256)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut yb,))?;
    /// let ys = yb.to_vec()?;
    /// // Warp 0, warp 4 (rank 1 in group 1), warp 7 (in no group: rank among groups 2).
    /// assert_eq!([ys[0], ys[4 * 32 + 5], ys[7 * 32]], [2030, 2131, 2231]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn warp_rank(&self) -> Expr<u32> {
        match self.kind {
            GroupKind::Block => index::warp_rank(),
            GroupKind::LogicalWarp { .. } => Expr::lit(0),
            GroupKind::Warps { warps } => index::warp_rank() % warps.max(1),
        }
    }

    /// The warps in the thread's group: the block's warps (its last one may be partial), the
    /// group's for a group of whole warps, and 1 for a tile. See [`Group::warp_rank`].
    pub fn num_warps(&self) -> Expr<u32> {
        match self.kind {
            GroupKind::Block => (index::block_threads() + 31u32) / 32u32,
            GroupKind::LogicalWarp { .. } => Expr::lit(1),
            GroupKind::Warps { warps } => Expr::lit(warps),
        }
    }

    /// The threads in every group of this kind where the kernel's text fixes it: `32 * n`
    /// for groups of `n` whole warps and the width for a tile (the block's last tile has
    /// fewer where the width does not divide the block); `None` for the block, whose size the
    /// builder sets. See [`Group::warp_rank`].
    pub fn static_num_threads(&self) -> Option<u32> {
        match self.kind {
            GroupKind::Block => None,
            GroupKind::LogicalWarp { width } => Some(width),
            GroupKind::Warps { warps } => Some(warps.saturating_mul(32)),
        }
    }

    /// The block's warps in groups of `warps` consecutive whole warps (CCCL's
    /// `group_by_warps`): warps `j * warps .. (j + 1) * warps` form group `j`. Where the
    /// block's warps are not a multiple of `warps`, the last ones are in no group, and the
    /// groups' collectives run inside [`KernelBuilder::if_member`]. The verifier reports a
    /// count of 0 or above the block's warps, a block whose threads are not a multiple of 32
    /// (a partial warp joins no group), and a parent other than the block.
    ///
    /// These groups run, each over its own tile and synchronizing at its own named barrier
    /// (`bar.sync id, 32 * warps`; at most 15 ids for the kernel's groups together):
    /// reductions ([`KernelBuilder::reduce`]), scans ([`KernelBuilder::scan`] and its
    /// aggregate and prefix-callback forms, always by warp scans), exchanges
    /// ([`KernelBuilder::exchange`] through shared memory or shuffles, to arrangements whose
    /// groups tile the group), the group's barrier ([`KernelBuilder::sync`]), and loads and
    /// stores by the direct, striped and vectorized algorithms. Other ops (neighbour ops,
    /// scatters, transposing loads and stores, time-sliced exchanges, shuffles and votes) are
    /// reported as [`VerifyErrorKind::NotForWarpGroups`] or
    /// [`VerifyErrorKind::LaneOpNotOnTile`].
    ///
    /// ```
    /// use coopgraph::ir::{Reduce, Scan};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// // Each pair of warps of a block of 128 sums its 64 values, and scans them.
    /// let mut k = KernelBuilder::new("pair_sums").block(128).items_per_thread(1);
    /// let (x, y, z) = (k.input::<u32>("x"), k.output::<u32>("y"), k.output::<u32>("z"));
    /// let b = k.this_block();
    /// let pair = b.group_by_warps(2);
    /// let t = k.load_from(b, &x, Load::direct());
    /// let s = k.reduce(pair, &t, Reduce::sum().broadcast());
    /// k.store_to(b, &y, &s, Store::direct());
    /// let p = k.scan(pair, &t, Scan::inclusive_sum());
    /// k.store_to(b, &z, &p, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&(0..128).collect::<Vec<u32>>())?;
    /// let mut yb = dev.alloc_zeroed::<u32>(128)?;
    /// let mut zb = dev.alloc_zeroed::<u32>(128)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb, &mut zb))?;
    /// let ys = yb.to_vec()?;
    /// assert_eq!([ys[0], ys[63], ys[64], ys[127]], [2016, 2016, 6112, 6112]);
    /// let zs = zb.to_vec()?;
    /// assert_eq!([zs[0], zs[63], zs[64], zs[65], zs[127]], [0, 2016, 64, 129, 6112]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    ///
    /// [`KernelBuilder::reduce`]: crate::KernelBuilder::reduce
    /// [`KernelBuilder::scan`]: crate::KernelBuilder::scan
    /// [`KernelBuilder::exchange`]: crate::KernelBuilder::exchange
    /// [`KernelBuilder::sync`]: crate::KernelBuilder::sync
    /// [`VerifyErrorKind::NotForWarpGroups`]: crate::ir::VerifyErrorKind::NotForWarpGroups
    /// [`VerifyErrorKind::LaneOpNotOnTile`]: crate::ir::VerifyErrorKind::LaneOpNotOnTile
    ///
    /// [`KernelBuilder::if_member`]: crate::KernelBuilder::if_member
    #[track_caller]
    pub fn group_by_warps(self, warps: u32) -> Group {
        let warps = match self.kind {
            GroupKind::Block => warps,
            // Not a partition of the block: the verifier reports a group of no warps.
            _ => 0,
        };
        Group {
            kind: GroupKind::Warps { warps },
            loc: Loc::caller(),
        }
    }

    /// The group's rank among the groups of its kind in the block (CG's `meta_group_rank`;
    /// the same as [`Group::index`]). See [`Group::thread_rank`].
    pub fn meta_group_rank(&self) -> Expr<u32> {
        self.index()
    }

    /// How many groups of its kind the block has (CG's `meta_group_size`): 1 for the block,
    /// the block's threads over the width, rounded up, for tiles. See [`Group::thread_rank`].
    pub fn meta_group_size(&self) -> Expr<u32> {
        match self.kind {
            GroupKind::Block => Expr::lit(1),
            GroupKind::LogicalWarp { width } => {
                let w = width.max(1);
                (index::block_threads() + (w - 1)) / w
            }
            GroupKind::Warps { warps } => index::block_threads() / warps.max(1).saturating_mul(32),
        }
    }
}

/// The block's warps, which can be split into logical warps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Warp {
    pub(crate) loc: Loc,
}

impl Warp {
    /// Logical warps of `width` consecutive lanes (1, 2, 4, 8, 16 or 32; other widths are
    /// reported by the verifier).
    #[track_caller]
    pub fn group_by(self, width: u32) -> Group {
        Group {
            kind: GroupKind::LogicalWarp { width },
            loc: Loc::caller(),
        }
    }
}

impl From<Warp> for Group {
    fn from(w: Warp) -> Group {
        Group {
            kind: GroupKind::LogicalWarp { width: 32 },
            loc: w.loc,
        }
    }
}

/// A partition of a warp: the lanes that share something at the point it was made (CG's
/// `coalesced_group`), made by [`KernelBuilder::coalesced_threads`] (the lanes running
/// together), [`KernelBuilder::labeled_partition`] (the same key) or
/// [`KernelBuilder::binary_partition`] (the same predicate). Its members are ranked in lane
/// order; lane collectives (`shfl`, votes, matches, `sync`, `invoke_one`) take it as their
/// group. It may be used only in the region it was made in (the branch or loop body), with no
/// exit between, where the lanes that run an op are its members: the verifier reports other
/// uses.
///
/// [`KernelBuilder::coalesced_threads`]: crate::KernelBuilder::coalesced_threads
/// [`KernelBuilder::labeled_partition`]: crate::KernelBuilder::labeled_partition
/// [`KernelBuilder::binary_partition`]: crate::KernelBuilder::binary_partition
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    pub(crate) mask: DataId,
    pub(crate) owner: BuilderId,
    pub(crate) loc: Loc,
}

impl Partition {
    /// Its members as lane bits of the warp (bit `l` for lane `l`).
    pub fn mask(&self) -> Expr<u32> {
        let kind = ExprKind::Item {
            data: self.mask,
            item: 0,
        };
        Expr::owned(kind, self.owner)
    }

    /// The thread's rank among the members: the members in lower lanes.
    pub fn thread_rank(&self) -> Expr<u32> {
        let below = (Expr::<u32>::lit(1) << index::lane()) - 1u32;
        (self.mask() & below).popc()
    }

    /// How many members it has.
    pub fn num_threads(&self) -> Expr<u32> {
        self.mask().popc()
    }
}

/// The threads a lane collective runs over: a tile (a logical warp, the warp; the block for
/// [`KernelBuilder::sync`] and [`KernelBuilder::invoke_one`]) or a [`Partition`].
///
/// [`KernelBuilder::sync`]: crate::KernelBuilder::sync
/// [`KernelBuilder::invoke_one`]: crate::KernelBuilder::invoke_one
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaneGroup {
    /// A group of the block.
    Group(Group),
    /// A partition of a warp.
    Partition(Partition),
}

impl LaneGroup {
    /// The thread's rank in the group.
    pub fn thread_rank(&self) -> Expr<u32> {
        match self {
            LaneGroup::Group(g) => g.thread_rank(),
            LaneGroup::Partition(p) => p.thread_rank(),
        }
    }
}

impl From<Group> for LaneGroup {
    fn from(g: Group) -> LaneGroup {
        LaneGroup::Group(g)
    }
}

impl From<Warp> for LaneGroup {
    fn from(w: Warp) -> LaneGroup {
        LaneGroup::Group(w.into())
    }
}

impl From<Partition> for LaneGroup {
    fn from(p: Partition) -> LaneGroup {
        LaneGroup::Partition(p)
    }
}

/// A payload: `items` registers of `T` per thread, with a static arrangement the planner
/// tracks. Slots start unwritten.
#[derive(Debug)]
pub struct ThreadData<T: Element> {
    pub(crate) id: DataId,
    pub(crate) items: u32,
    pub(crate) owner: BuilderId,
    _t: PhantomData<fn() -> T>,
}

impl<T: Element> Clone for ThreadData<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: Element> Copy for ThreadData<T> {}

impl<T: Element> ThreadData<T> {
    pub(crate) fn new(id: DataId, items: u32, owner: BuilderId) -> Self {
        ThreadData {
            id,
            items,
            owner,
            _t: PhantomData,
        }
    }

    /// The payload's id.
    pub fn id(&self) -> DataId {
        self.id
    }

    /// Items per thread.
    pub fn items(&self) -> u32 {
        self.items
    }

    /// The value in slot `item` (reported by the verifier if out of range or never written).
    pub fn item(&self, item: u32) -> Expr<T> {
        let kind = ExprKind::Item {
            data: self.id,
            item,
        };
        Expr::owned(kind, self.owner)
    }
}

/// A mutable per-thread variable of `T` (see [`KernelBuilder::var`]): one register per
/// thread, set with [`KernelBuilder::set`] and read with [`Var::get`] anywhere an expression
/// is. It holds its initial value from its declaration on.
#[derive(Debug)]
pub struct Var<T: Element> {
    pub(crate) id: DataId,
    pub(crate) owner: BuilderId,
    _t: PhantomData<fn() -> T>,
}

impl<T: Element> Clone for Var<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: Element> Copy for Var<T> {}

impl<T: Element> Var<T> {
    pub(crate) fn new(id: DataId, owner: BuilderId) -> Self {
        Var {
            id,
            owner,
            _t: PhantomData,
        }
    }

    /// The id of the one-item payload that holds it.
    ///
    /// ```
    /// use coopgraph::KernelBuilder;
    ///
    /// let mut k = KernelBuilder::new("ids");
    /// let v = k.var(1u32);
    /// assert!(k.ir().datas[v.id().index()].var);
    /// ```
    pub fn id(&self) -> DataId {
        self.id
    }

    /// Its current value.
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // Each thread counts its rank down to 0 and writes how many steps it took.
    /// let mut k = KernelBuilder::new("steps").block(32);
    /// let y = k.output::<u32>("y");
    /// let (n, steps) = (k.var(index::thread_rank()), k.var(0u32));
    /// k.while_(n.get().gt(0u32), |k| {
    ///     k.set(&n, n.get() - 1u32);
    ///     k.set(&steps, steps.get() + 1u32);
    /// });
    /// k.write(&y, index::thread_rank(), steps.get());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut yb = dev.alloc_zeroed::<u32>(32)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut yb,))?;
    /// assert_eq!(yb.to_vec()?, (0..32).collect::<Vec<u32>>());
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn get(&self) -> Expr<T> {
        let kind = ExprKind::Item {
            data: self.id,
            item: 0,
        };
        Expr::owned(kind, self.owner)
    }
}

impl<T: Element> From<Var<T>> for Expr<T> {
    fn from(v: Var<T>) -> Expr<T> {
        v.get()
    }
}

impl<T: Element> From<&Var<T>> for Expr<T> {
    fn from(v: &Var<T>) -> Expr<T> {
        v.get()
    }
}

/// The values a `tiles` loop supplies for the current tile.
#[derive(Debug, Clone)]
pub struct Tile {
    /// The tile's index.
    pub index: Expr<u32>,
    /// Its first element.
    pub origin: Expr<u32>,
    /// How many of its elements are valid (the last tile may be partial).
    pub valid: Expr<u32>,
}

impl Tile {
    pub(crate) fn new(op: OpId, owner: BuilderId) -> Tile {
        let field = |field| Expr::owned(ExprKind::LoopVar { op, field }, owner);
        Tile {
            index: field(0),
            origin: field(1),
            valid: field(2),
        }
    }
}

/// A user-declared temp storage (see [`crate::ir::KernelBuilder::temp_storage`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TempStorage {
    pub(crate) id: StorageId,
    pub(crate) owner: BuilderId,
}

impl TempStorage {
    /// The storage's id.
    pub fn id(&self) -> StorageId {
        self.id
    }
}

/// A shared array of `T` of `D` dimensions (1 to 3) that every thread of the block can read
/// and write (see [`crate::ir::KernelBuilder::shared_array`],
/// [`shared_array_2d`](crate::ir::KernelBuilder::shared_array_2d),
/// [`shared_array_3d`](crate::ir::KernelBuilder::shared_array_3d) and
/// [`dynamic_shared_array`](crate::ir::KernelBuilder::dynamic_shared_array)). Ordering
/// accesses of different threads is the user's job (`sync_block`); the simulator reports
/// races. An index is checked against the whole array (the simulator reports one past its
/// last element), not dimension by dimension: `a[i][cols]` is `a[i + 1][0]`.
#[derive(Debug)]
pub struct SharedArray<T: Element, const D: usize = 1> {
    pub(crate) id: ArrayId,
    pub(crate) dims: [u32; D],
    pub(crate) dynamic: bool,
    pub(crate) owner: BuilderId,
    _t: PhantomData<fn() -> T>,
}

impl<T: Element, const D: usize> Clone for SharedArray<T, D> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: Element, const D: usize> Copy for SharedArray<T, D> {}

impl<T: Element, const D: usize> SharedArray<T, D> {
    pub(crate) fn new(id: ArrayId, dims: [u32; D], dynamic: bool, owner: BuilderId) -> Self {
        SharedArray {
            id,
            dims,
            dynamic,
            owner,
            _t: PhantomData,
        }
    }

    /// The array's id.
    pub fn id(&self) -> ArrayId {
        self.id
    }

    /// Elements in the array: the product of its extents (0 for the dynamic array, whose
    /// length each launch gives).
    pub fn len(&self) -> u32 {
        if self.dynamic {
            return 0;
        }
        self.dims.iter().fold(1u32, |n, &d| n.saturating_mul(d))
    }

    /// Whether the array has no elements declared (the dynamic array has none before launch).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its extents, outermost first.
    ///
    /// ```
    /// use coopgraph::KernelBuilder;
    ///
    /// let mut k = KernelBuilder::new("shapes");
    /// let tile = k.shared_array_2d::<f32>([16, 17]);
    /// assert_eq!((tile.dims(), tile.len(), tile.is_dynamic()), ([16, 17], 272, false));
    /// let rest = k.dynamic_shared_array::<u32>();
    /// assert_eq!((rest.dims(), rest.len(), rest.is_dynamic()), ([0], 0, true));
    /// ```
    pub fn dims(&self) -> [u32; D] {
        self.dims
    }

    /// Whether it is the kernel's dynamic shared array (see
    /// [`dynamic_shared_array`](crate::ir::KernelBuilder::dynamic_shared_array)).
    pub fn is_dynamic(&self) -> bool {
        self.dynamic
    }

    /// Element `index`: an index of each dimension, outermost first (`i` for a 1-D array,
    /// `(i, j)` for a 2-D one, `(i, j, k)` for a 3-D one).
    ///
    /// ```
    /// use coopgraph::ir::index::{self, Axis};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // An 8 x 8 block transposes its tile through a 2-D shared array.
    /// let mut k = KernelBuilder::new("transpose").block_dims([8, 8, 1]);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let (tx, ty) = (index::thread_idx(Axis::X), index::thread_idx(Axis::Y));
    /// let tile = k.shared_array_2d::<u32>([8, 8]);
    /// let at = ty.clone() * 8u32 + tx.clone();
    /// k.shared_write(&tile, (ty.clone(), tx.clone()), x.at(&at));
    /// k.sync_block();
    /// k.write(&y, &at, tile.read((tx, ty)));
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&(0..64).collect::<Vec<u32>>())?;
    /// let mut yb = dev.alloc_zeroed::<u32>(64)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// let want: Vec<u32> = (0..64).map(|i| (i % 8) * 8 + i / 8).collect();
    /// assert_eq!(yb.to_vec()?, want);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    ///
    /// An index of another type than `u32` does not compile (cast it with `.cast::<u32>()`):
    ///
    /// ```compile_fail
    /// let mut k = coopgraph::KernelBuilder::new("k");
    /// let a = k.shared_array::<u32>(4);
    /// let _ = a.read(coopgraph::ir::Expr::lit(1.5f32));
    /// ```
    pub fn read(&self, index: impl ArrayIndex<D>) -> Expr<T> {
        let kind = ExprKind::SharedRead(self.id, index.linear(&self.dims).node().clone());
        Expr::owned(kind, self.owner)
    }

    /// The same array seen as one dimension of [`len`](Self::len) elements, in row-major
    /// order (for atomics, which take one index).
    ///
    /// ```
    /// use coopgraph::ir::index::{self, Axis};
    /// use coopgraph::ir::Atomic;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // A 4 x 4 grid of counters in a 2-D array: thread (x, y) of a 16 x 4 block adds 1 to
    /// // counter (y, x % 4) through the flat view, then row y's threads read their row back.
    /// let mut k = KernelBuilder::new("counters").block_dims([16, 4, 1]);
    /// let y = k.output::<u32>("y");
    /// let (tx, ty) = (index::thread_idx(Axis::X), index::thread_idx(Axis::Y));
    /// let c = k.shared_array_2d::<u32>([4, 4]);
    /// k.if_(tx.clone().lt(4u32), |k| k.shared_write(&c, (ty.clone(), tx.clone()), 0u32));
    /// k.sync_block();
    /// k.atomic(&c.flat(), ty.clone() * 4u32 + tx.clone() % 4u32, Atomic::add(1u32));
    /// k.sync_block();
    /// k.write(&y, index::thread_rank(), c.read((ty, tx % 4u32)));
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut yb = dev.alloc_zeroed::<u32>(64)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut yb,))?;
    /// assert_eq!(yb.to_vec()?, vec![4; 64]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn flat(&self) -> SharedArray<T> {
        SharedArray::new(self.id, [self.len()], self.dynamic, self.owner)
    }
}

/// An element of an array of `D` dimensions: a `u32` index of each, outermost first (`i`
/// for one dimension, `(i, j)` for two, `(i, j, k)` for three), each an expression, a
/// literal or a scalar.
pub trait ArrayIndex<const D: usize>: ArrayLinear<D> {}

impl<I: Into<Expr<u32>>> ArrayLinear<1> for I {
    fn linear(self, _dims: &[u32; 1]) -> Expr<u32> {
        self.into()
    }
}
impl<I: Into<Expr<u32>>> ArrayIndex<1> for I {}

impl<A: Into<Expr<u32>>, B: Into<Expr<u32>>> ArrayLinear<2> for (A, B) {
    fn linear(self, dims: &[u32; 2]) -> Expr<u32> {
        self.0.into() * dims[1] + self.1.into()
    }
}
impl<A: Into<Expr<u32>>, B: Into<Expr<u32>>> ArrayIndex<2> for (A, B) {}

impl<A: Into<Expr<u32>>, B: Into<Expr<u32>>, C: Into<Expr<u32>>> ArrayLinear<3> for (A, B, C) {
    fn linear(self, dims: &[u32; 3]) -> Expr<u32> {
        (self.0.into() * dims[1] + self.1.into()) * dims[2] + self.2.into()
    }
}
impl<A: Into<Expr<u32>>, B: Into<Expr<u32>>, C: Into<Expr<u32>>> ArrayIndex<3> for (A, B, C) {}

macro_rules! array_handle {
    ($($(#[$doc:meta])* $name:ident($id:ident, $read:ident), $read_doc:literal;)*) => {$(
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name<T: Element> {
            pub(crate) id: $id,
            pub(crate) len: u32,
            pub(crate) owner: BuilderId,
            _t: PhantomData<fn() -> T>,
        }

        impl<T: Element> Clone for $name<T> {
            fn clone(&self) -> Self {
                *self
            }
        }

        impl<T: Element> Copy for $name<T> {}

        impl<T: Element> $name<T> {
            pub(crate) fn new(id: $id, len: u32, owner: BuilderId) -> Self {
                $name { id, len, owner, _t: PhantomData }
            }

            /// The array's id.
            pub fn id(&self) -> $id {
                self.id
            }

            /// Elements in the array.
            pub fn len(&self) -> u32 {
                self.len
            }

            /// Whether the array has no elements.
            pub fn is_empty(&self) -> bool {
                self.len == 0
            }

            #[doc = $read_doc]
            pub fn read(&self, index: impl Into<Expr<u32>>) -> Expr<T> {
                let kind = ExprKind::$read(self.id, index.into().node().clone());
                Expr::owned(kind, self.owner)
            }
        }
    )*};
}

array_handle! {
    /// A per-thread array of `T` (see [`crate::ir::KernelBuilder::local_array`]): each thread
    /// has its own, in local memory (PTX `.local`), read and written at run-time indices.
    LocalArray(LocalId, LocalRead),
    "The thread's element `index` (see [`crate::ir::KernelBuilder::local_array`] for an \
     example). An index past the end is out of bounds (the simulator reports it).";
    /// A constant array of `T` (see [`crate::ir::KernelBuilder::const_array`]): values the
    /// host gave when the kernel was built, in constant memory (PTX `.const`), which every
    /// thread reads.
    ConstArray(ConstId, ConstRead),
    "Element `index` (see [`crate::ir::KernelBuilder::const_array`] for an example). An index \
     past the end is out of bounds (the simulator reports it).";
}

//! The kernel builder: a thin cursor over the IR with one typed method per op.
//!
//! Every method records the caller's source line (`#[track_caller]`), and no method panics or
//! fails: problems are recorded and reported, all together, by the verifier when the kernel is
//! built.
//!
//! This file holds the builder and its cursor (where the next op goes, how expressions and
//! groups are interned); the ops live by family, each file with the controls its methods take:
//! `options.rs` (block shape, items per thread, strictness, bounds), `memory.rs` (parameters,
//! loads and stores, writes by index, temp storages), `arrays.rs` (shared, local and constant
//! arrays), `atomic.rs` (atomics),
//! `data.rs` (payloads and element-wise ops),
//! `collectives.rs` (reductions, scans, exchanges), `neighbor.rs` (adjacent differences,
//! flags, shuffles, scatters), `sort.rs` (block radix
//! sorts), `radix_rank.rs` (block radix ranks), `control.rs` (branches, loops, tiles, barriers), `grid.rs` (the
//! grid group and its barrier), `loops.rs`
//! (stepped and `while` loops, `break_`, `continue_`, `return_if`), `vars.rs` (per-thread
//! variables) and `pipeline.rs` (the fluent [`Pipeline`]).

use super::entities::{ExprId, GroupId, Loc, OpId, RegionId};
use super::expr::{Arena, Expr, ExprType};
use super::handles::{Group, Warp};
use super::identity::Lineage;
use super::ops::*;
use super::options::CompileOptions;

mod arrays;
mod atomic;
mod cluster;
mod collectives;
mod control;
mod data;
mod grid;
mod histogram;
mod lanes;
mod loops;
mod memory;
mod merge_sort;
mod neighbor;
mod options;
mod pipeline;
mod print;
mod radix_rank;
mod run_length;
mod sort;
mod top_k;
mod vars;
mod warp_groups;
mod warp_segmented;

pub use atomic::Atomic;
pub use cluster::{Cluster, RemoteShared};
pub use collectives::{Reduce, Scan};
pub use grid::Grid;
pub use histogram::{Histogram, HistogramAlgorithm};
pub use memory::{Load, StorageSpec, Store};
pub use merge_sort::MergeSort;
pub use neighbor::{BinaryFn, Difference, FlagFn, Flags, Scatter, Shuffle};
pub use pipeline::Pipeline;
pub use print::{PrintArg, PrintArgs, PrintValue};
pub use radix_rank::{MEMO_WORDS, RadixRank, RankAlgorithm, RankedDigits};
pub use run_length::{Decoded, Runs};
pub use sort::{DEFAULT_RADIX_BITS, MAX_COUNTER_WORDS, RadixSort, SortOrder, SortOutput};
pub use top_k::TopK;
pub use warp_segmented::{BatchOutput, Segments};

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
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("copy");
    /// assert_eq!(k.block_tile(), 128 * 4);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// k.store_to(b, &y, &t, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xs: Vec<u32> = (0..1000).collect();
    /// let xb = dev.upload(&xs)?;
    /// let mut yb = dev.alloc_zeroed::<u32>(1000)?;
    /// // Two blocks of 512 elements; the second's last 24 lie past the buffers and are skipped.
    /// dev.compile(&kernel)?.launch_over(1000, (&xb, &mut yb))?;
    /// assert_eq!(yb.to_vec()?, xs);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
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
                cluster: None,
                items_per_thread: 4,
                items_loc: loc,
                strict_arrangements: false,
                bounds: Bounds::Checked,
                options: CompileOptions::default(),
                params: Vec::new(),
                groups: Vec::new(),
                datas: Vec::new(),
                storages: Vec::new(),
                arrays: Vec::new(),
                locals: Vec::new(),
                consts: Vec::new(),
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

    /// The group of all threads in the block.
    ///
    /// ```
    /// use coopgraph::ir::Reduce;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("block_sum").block(64).items_per_thread(1);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let s = k.reduce(b, &t, Reduce::sum().broadcast());
    /// k.store_to(b, &y, &s, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&(1..=64).collect::<Vec<u32>>())?;
    /// let mut yb = dev.alloc_zeroed::<u32>(64)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// assert_eq!(yb.to_vec()?, [2080; 64]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn this_block(&self) -> Group {
        Group {
            kind: GroupKind::Block,
            loc: Loc::caller(),
        }
    }

    /// The warps of the block (32 lanes); `.group_by(w)` splits them into logical warps.
    ///
    /// ```
    /// use coopgraph::ir::Reduce;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("maxima").block(64).items_per_thread(1);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let (warp, quad) = (k.this_warp(), k.this_warp().group_by(4));
    /// let t = k.load_from(warp, &x, Load::direct());
    /// // Each warp's maximum, then each group of 4 lanes adds it to its own sum.
    /// let m = k.reduce(warp, &t, Reduce::max().broadcast());
    /// let s = k.reduce(quad, &t, Reduce::sum().broadcast());
    /// let r = k.map2(&m, &s, |m, s| m * 1000u32 + s);
    /// k.store_to(warp, &y, &r, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&(0..64).collect::<Vec<u32>>())?;
    /// let mut yb = dev.alloc_zeroed::<u32>(64)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// let ys = yb.to_vec()?;
    /// assert_eq!([ys[0], ys[3], ys[4], ys[63]], [31_006, 31_006, 31_022, 63_246]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn this_warp(&self) -> Warp {
        Warp { loc: Loc::caller() }
    }

    /// The recorded IR (for inspection and tests).
    ///
    /// ```
    /// use coopgraph::ir::ops::OpKind;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("copy").block(32);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// k.store_to(b, &y, &t, Store::direct());
    /// let ir = k.ir();
    /// assert_eq!(ir.params.len(), 2);
    /// assert!(matches!(ir.ops[0].kind, OpKind::Load(_)));
    /// assert!(matches!(ir.ops[1].kind, OpKind::Store(_)));
    /// ```
    pub fn ir(&self) -> &Ir {
        &self.ir
    }

    /// The recorded IR, taken out of the builder (what [`KernelBuilder::build`] verifies).
    pub(crate) fn into_ir(self) -> Ir {
        self.ir
    }

    fn expr<T: ExprType>(&mut self, e: &Expr<T>) -> ExprId {
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

    /// Whether the next op goes inside a region (a branch, a loop, a tile loop, a scan's
    /// callback) rather than the kernel body: there it may run again after the ops recorded
    /// after it, so shared memory it overwrites may still be read by them.
    fn inside_region(&self) -> bool {
        self.cursor.len() > 1
    }

    fn new_region(&mut self) -> RegionId {
        let id = RegionId(self.ir.regions.len() as u32);
        self.ir.regions.push(Vec::new());
        id
    }

    /// How much of the IR is recorded so far: where a collective of the library begins
    /// (see [`Self::attribute`]).
    pub(crate) fn recorded(&self) -> Recorded {
        Recorded {
            ops: self.ir.ops.len(),
            datas: self.ir.datas.len(),
            arrays: self.ir.arrays.len(),
            issues: self.ir.issues.len(),
        }
    }

    /// Attributes what was recorded since `from` (ops, payloads, shared arrays and the
    /// problems found) to the user's call at `loc`: a collective the library writes out is
    /// one call of the user's, so the verifier's errors and the listing name that call's
    /// line, never one of the library's.
    pub(crate) fn attribute(&mut self, from: Recorded, loc: Loc) {
        for op in &mut self.ir.ops[from.ops..] {
            op.loc = loc;
        }
        for d in &mut self.ir.datas[from.datas..] {
            d.loc = loc;
        }
        for a in &mut self.ir.arrays[from.arrays..] {
            a.loc = loc;
        }
        for issue in &mut self.ir.issues[from.issues..] {
            issue.set_loc(loc);
        }
    }

    fn group_id(&mut self, g: Group) -> GroupId {
        let decl = GroupDecl {
            kind: g.kind,
            loc: g.loc,
        };
        if let Some(i) = self.ir.groups.iter().position(|d| *d == decl) {
            return GroupId(i as u32);
        }
        self.ir.groups.push(decl);
        GroupId(self.ir.groups.len() as u32 - 1)
    }
}

/// How much of the IR was recorded when a collective began
/// ([`KernelBuilder::recorded`], [`KernelBuilder::attribute`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Recorded {
    ops: usize,
    datas: usize,
    arrays: usize,
    issues: usize,
}

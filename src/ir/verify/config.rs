//! The verifier's checks of the kernel's configuration, before its ops: the block's shape
//! (at most 1024 threads, 1024 along x and y and 64 along z), items per thread, the name,
//! the builder's issues, the parameters' space, temp storages, and every array's size (shared
//! arrays of one to three dimensions, one dynamic array at most, local and constant arrays
//! within their memories), the register limit, logical-warp widths and warp groups in blocks
//! of whole warps, and groups of whole warps (their sizes, their named barriers, the ops that
//! run over them, and where their collectives may stand).

use super::super::entities::{ExprId, Loc, OpId};
use super::super::error::VerifyErrorKind as K;
use super::super::expr::{Axis, ExprKind};
use super::super::ops::*;
use super::super::options::{
    Checks, MAX_MAX_REGISTERS, MIN_MAX_REGISTERS, MaxRegisters, MinBlocks, REGISTER_FILE,
    SM_THREADS,
};
use super::{Uniformity, Verifier};
use rustc_hash::FxHashSet;

impl Verifier<'_> {
    /// The block's threads, without overflow whatever its dimensions.
    fn block_threads_wide(&self) -> u64 {
        let dims = self.ir.block.dims;
        dims.iter().fold(1u64, |n, &d| n.saturating_mul(d.into()))
    }

    /// A register limit: within what ptxas honours, and within one SM's registers for the
    /// whole block.
    fn check_max_registers(&mut self, m: MaxRegisters) {
        if !(MIN_MAX_REGISTERS..=MAX_MAX_REGISTERS).contains(&m.count) {
            let (min, max) = (MIN_MAX_REGISTERS, MAX_MAX_REGISTERS);
            self.push(
                K::MaxRegisters {
                    count: m.count,
                    min,
                    max,
                },
                m.loc,
                None,
            );
            return;
        }
        let threads = self.block_threads_wide();
        if threads.saturating_mul(m.count.into()) > u64::from(REGISTER_FILE) {
            let file = REGISTER_FILE;
            self.push(
                K::RegistersPastFile {
                    count: m.count,
                    threads,
                    file,
                },
                m.loc,
                None,
            );
        }
    }

    /// Blocks per SM: at least one, and that many blocks within an SM's threads.
    fn check_min_blocks(&mut self, m: MinBlocks) {
        let threads = self.block_threads_wide();
        if m.count == 0 || threads.saturating_mul(m.count.into()) > u64::from(SM_THREADS) {
            self.push(
                K::MinBlocks {
                    count: m.count,
                    threads,
                    sm_threads: SM_THREADS,
                },
                m.loc,
                None,
            );
        }
    }

    /// The kernel's configuration: block shape, items per thread, name, the builder's
    /// issues, parameter space, temp storages, and the sizes of its arrays.
    pub(super) fn check_config(&mut self) {
        let ir = self.ir;
        let b = ir.block;
        if b.dims.contains(&0) {
            self.push(K::EmptyBlock, b.loc, None);
        } else {
            let threads = self.block_threads_wide();
            if threads > MAX_BLOCK_THREADS as u64 {
                self.push(K::BlockTooLarge { threads }, b.loc, None);
            }
            // Within 1024 threads, only z can pass its limit; past them, that error says it.
            for (axis, max) in Axis::ALL.into_iter().zip(MAX_BLOCK_DIMS) {
                let size = b.dims[axis.index()];
                if size > max && threads <= MAX_BLOCK_THREADS as u64 {
                    self.push(K::BlockDimension { axis, size, max }, b.loc, None);
                }
            }
        }
        if ir.items_per_thread == 0 || ir.items_per_thread > MAX_ITEMS_PER_THREAD {
            self.push(
                K::ItemsPerThread {
                    items: ir.items_per_thread,
                    max: MAX_ITEMS_PER_THREAD,
                },
                ir.items_loc,
                None,
            );
        }
        if let Some(m) = ir.options.max_registers {
            self.check_max_registers(m);
        }
        if let Some(m) = ir.options.min_blocks {
            self.check_min_blocks(m);
        }
        if ir.options.checks == Checks::Debug && ir.bounds == Bounds::Unchecked {
            self.push(K::ChecksWithoutBounds, b.loc, None);
        }
        if ir.name.trim().is_empty() {
            self.push(K::EmptyName, b.loc, None);
        }
        for issue in &ir.issues {
            match issue {
                BuilderIssue::GroupWidth { width, loc } => {
                    self.push(K::GroupWidth { width: *width }, *loc, None)
                }
                BuilderIssue::ItemOutOfRange { item, items, loc } => self.push(
                    K::ItemOutOfRange {
                        item: *item,
                        items: *items,
                    },
                    *loc,
                    None,
                ),
                BuilderIssue::Items { items, loc } => {
                    // The kernel-wide default is reported once, by the check above.
                    if *loc != ir.items_loc || *items != ir.items_per_thread {
                        self.push(
                            K::ItemsPerThread {
                                items: *items,
                                max: MAX_ITEMS_PER_THREAD,
                            },
                            *loc,
                            None,
                        )
                    }
                }
                BuilderIssue::DataAlign { align, loc } => {
                    self.push(K::BadAlignment { align: *align }, *loc, None)
                }
                BuilderIssue::DuplicateParam { name, loc } => {
                    self.push(K::DuplicateParam { name: name.clone() }, *loc, None)
                }
                BuilderIssue::PrintFormat { problem, loc } => {
                    self.push(K::PrintFormat(problem.clone()), *loc, None)
                }
                BuilderIssue::RadixSort { problem, loc } => {
                    self.push(K::RadixSort(*problem), *loc, None)
                }
                BuilderIssue::MergeSort { problem, loc } => {
                    self.push(K::MergeSort(*problem), *loc, None)
                }
                BuilderIssue::Primitive { problem, loc } => {
                    self.push(K::Primitive(*problem), *loc, None)
                }
                // Reported with the handle checks.
                BuilderIssue::ForeignHandle { .. } => {}
            }
        }
        let wide = ir.wide_indexed();
        let lengths: usize = match ir.bounds {
            Bounds::Checked => (ir.params.iter().zip(&wide))
                .filter(|(p, _)| p.role != Role::Scalar)
                .map(|(_, &w)| if w { 8 } else { 4 })
                .sum(),
            Bounds::Unchecked => 0,
        };
        let bytes = ir.params.len() * 8 + lengths;
        if bytes > MAX_PARAM_BYTES
            && let Some(last) = ir.params.last()
        {
            let kind = K::ParameterSpace {
                bytes,
                max: MAX_PARAM_BYTES,
            };
            self.push(kind, last.loc, None);
        }
        for st in &ir.storages {
            if let Some(a) = st.align
                && !a.is_power_of_two()
            {
                self.push(K::BadAlignment { align: a }, st.loc, None);
            }
            if let Some(bytes) = st.size
                && bytes > 227 * 1024
            {
                self.push(K::StorageSize { bytes }, st.loc, None);
            }
        }
        let mut dynamic: Option<Loc> = None;
        for a in &ir.arrays {
            if let Some(root) = a.view_of {
                // Its bytes are its array's, checked there; as many elements as fit them.
                if (ir.arrays.get(root.index())).is_some_and(|r| r.dynamic) {
                    self.push(K::DynamicArrayView, a.loc, None);
                } else if a.len == 0 {
                    self.push(K::ArraySize { len: a.len }, a.loc, None);
                }
                continue;
            }
            if a.dynamic {
                match dynamic {
                    Some(first) => self.push(K::SecondDynamicArray { first }, a.loc, None),
                    None => dynamic = Some(a.loc),
                }
                continue;
            }
            let bytes = a.len as u64 * a.dtype.bytes() as u64;
            let product = (a.dims.iter()).fold(1u64, |n, &d| n.saturating_mul(d.into()));
            let shaped = (1..=3).contains(&a.dims.len()) && product == u64::from(a.len);
            if a.len == 0 || a.len > 65536 || bytes > 227 * 1024 || !shaped {
                self.push(K::ArraySize { len: a.len }, a.loc, None);
            }
        }
        // Local and constant arrays: none empty, and in all within their memory's limit
        // (reported once, at the array that passes it).
        let mut local = 0u64;
        for a in &ir.locals {
            if a.len == 0 {
                self.push(K::EmptyArray { what: "local" }, a.loc, None);
            }
            let before = local;
            local += u64::from(a.len) * u64::from(a.dtype.bytes());
            if local > MAX_LOCAL_BYTES && before <= MAX_LOCAL_BYTES {
                let kind = K::LocalMemory {
                    bytes: local,
                    max: MAX_LOCAL_BYTES,
                };
                self.push(kind, a.loc, None);
            }
        }
        let mut constant = 0u64;
        for a in &ir.consts {
            if a.data.is_empty() {
                self.push(K::EmptyArray { what: "constant" }, a.loc, None);
            }
            let before = constant;
            constant += a.data.len() as u64 * u64::from(a.dtype.bytes());
            if constant > MAX_CONST_BYTES && before <= MAX_CONST_BYTES {
                let kind = K::ConstMemory {
                    bytes: constant,
                    max: MAX_CONST_BYTES,
                };
                self.push(kind, a.loc, None);
            }
        }
        let mut first_user: Vec<Option<Loc>> = vec![None; ir.storages.len()];
        ir.walk(|op, _| {
            if let OpKind::Load(t) | OpKind::Store(t) = &ir.op(op).kind
                && let Some(st) = t.storage
            {
                let loc = ir.op(op).loc;
                match first_user[st.index()] {
                    None => first_user[st.index()] = Some(loc),
                    Some(first) if ir.storages[st.index()].sharing == Sharing::Exclusive => {
                        self.push(K::ExclusiveStorageShared { first }, loc, Some(op));
                    }
                    Some(_) => {}
                }
            }
        });
        let block = ir.block_threads();
        // Lane collectives take their tiles' masks from the threads that exist; the other
        // collectives of logical warps need whole warps.
        let mut whole_warps = vec![false; ir.groups.len()];
        for op in &ir.ops {
            if let Some(g) = op.kind.group()
                && !matches!(op.kind, OpKind::Lanes(_))
                && let Some(w) = whole_warps.get_mut(g.index())
            {
                *w = true;
            }
        }
        self.warp_groups();
        let mut seen = FxHashSet::default();
        for (g, needs_whole) in ir.groups.iter().zip(whole_warps) {
            if let GroupKind::LogicalWarp { width } = g.kind {
                if !LOGICAL_WARP_WIDTHS.contains(&width) && seen.insert(width) {
                    self.push(K::GroupWidth { width }, g.loc, None);
                }
                if needs_whole && !block.is_multiple_of(32) && seen.insert(u32::MAX) {
                    self.push(K::WarpOpInPartialWarpBlock { block }, g.loc, None);
                }
            }
        }
    }
}

impl Verifier<'_> {
    /// Groups of whole warps: their sizes, the block's whole warps, the named barriers their
    /// partitions need, and the ops that run over them (reductions, scans, exchanges through
    /// shared memory or shuffles, and loads and stores that move each group's tile directly,
    /// with no exchange of their own; lane collectives other than the group's barrier are
    /// reported where they are checked).
    fn warp_groups(&mut self) {
        let ir = self.ir;
        let block = ir.block_threads();
        let block_warps = block / 32;
        let mut seen = FxHashSet::default();
        for g in &ir.groups {
            let GroupKind::Warps { warps } = g.kind else {
                continue;
            };
            if (warps == 0 || warps > block_warps) && seen.insert(warps) {
                self.push(K::WarpGroupSize { warps, block_warps }, g.loc, None);
            } else if !block.is_multiple_of(32) && seen.insert(u32::MAX) {
                self.push(K::WarpOpInPartialWarpBlock { block }, g.loc, None);
            }
        }
        let needed: u32 = ir.warp_partitions().iter().map(|&(_, groups)| groups).sum();
        if needed > MAX_NAMED_BARRIERS {
            let last = (ir.groups.iter().rev())
                .find(|g| matches!(g.kind, GroupKind::Warps { warps } if warps > 1));
            if let Some(g) = last {
                let max = MAX_NAMED_BARRIERS;
                self.push(K::TooManyWarpGroupBarriers { needed, max }, g.loc, None);
            }
        }
        for (i, op) in ir.ops.iter().enumerate() {
            let direct = |t: &Transfer| {
                matches!(
                    t.algorithm,
                    Algorithm::Direct | Algorithm::Striped | Algorithm::Vectorize
                )
            };
            let runs = match &op.kind {
                OpKind::Reduce(_) | OpKind::Scan(_) | OpKind::Lanes(_) => true,
                // Time-sliced turns are the block's warps'.
                OpKind::Exchange { via, .. } => *via != ExchangeVia::TimeSliced,
                OpKind::Load(t) | OpKind::Store(t) => direct(t),
                _ => false,
            };
            if let Some(g) = op.kind.group()
                && matches!(ir.groups[g.index()].kind, GroupKind::Warps { .. })
                && !runs
            {
                let name = op.kind.name();
                self.push(
                    K::NotForWarpGroups { op: name },
                    op.loc,
                    Some(OpId(i as u32)),
                );
            }
        }
    }

    /// A collective over groups of `warps` whole warps: where the partition leaves warps
    /// over, it runs under a branch that keeps whole groups (`if_member`); every enclosing
    /// condition is uniform over each group (each on its own: a branch keeping whole groups,
    /// or a value the same over aligned runs of threads that are whole groups, such as the
    /// warp's rank over a power of two that the group's warps divide), and every early exit
    /// before it is uniform over the block.
    pub(super) fn warp_group_collective(&mut self, warps: u32, loc: Loc, op: OpId) {
        let group = GroupKind::Warps { warps };
        let Some(threads) = warps.checked_mul(32).filter(|&t| t > 0) else {
            return;
        };
        let block_warps = self.ir.block_threads() / 32;
        let member = |c: u32| c.is_multiple_of(warps) && c <= block_warps;
        let inside = self.members.iter().any(|&(_, c)| member(c));
        if !block_warps.is_multiple_of(warps) && !inside {
            let kind = K::CollectiveOutsideMembership { warps, block_warps };
            self.push(kind, loc, Some(op));
        }
        let varies = self.conds.iter().enumerate().find(|&(i, &(u, _))| {
            let keeps_groups = self.members.iter().any(|&(at, c)| at == i && member(c));
            !keeps_groups && u < Uniformity::BLOCK && !u.0.is_multiple_of(threads)
        });
        if let Some((_, &(_, condition))) = varies {
            self.push(K::NonUniformCollective { group, condition }, loc, Some(op));
        } else if let Some((u, exit)) = self.flow.exit[op.index()]
            && !u.covers(self.ir.block_threads())
        {
            let exit = self.ir.op(exit).loc;
            self.push(K::CollectiveAfterReturn { group, exit }, loc, Some(op));
        }
    }

    /// `c` where `cond` is `warp_rank < c` for a constant `c`.
    pub(super) fn warp_bound(&self, cond: ExprId) -> Option<u32> {
        use super::super::expr::{CmpOp, IndexKind};
        let ExprKind::Cmp(CmpOp::Lt, a, b) = &self.ir.expr(cond).kind else {
            return None;
        };
        match (&self.ir.expr(*a).kind, &self.ir.expr(*b).kind) {
            (ExprKind::Index(IndexKind::WarpRank), ExprKind::Const(c)) => u32::try_from(*c).ok(),
            _ => None,
        }
    }
}

/// Named barriers a block has besides barrier 0, the block's own.
pub(crate) const MAX_NAMED_BARRIERS: u32 = 15;

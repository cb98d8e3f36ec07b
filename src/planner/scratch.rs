//! Shared memory: the pass that plans every op's shared-memory work, in four parts, each a
//! file: user shared arrays and temp storages (`storage.rs`), exchanges (`exchange.rs`), the
//! shared memory of block collectives (`collective.rs`), then the offsets of all slices
//! (`alloc.rs`), the declarations (`shared.rs`) and the barriers between the steps
//! (`barrier.rs`).
//!
//! Each family's file gives its ops' plans (an [`ExchangePlan`](super::ExchangePlan), a
//! [`CollectivePlan`](super::CollectivePlan)), their slices and their steps
//! ([`super::Step`]): which threads touch which bytes of which slice at each step, and at
//! which scopes a barrier before it may order them. Steps are the only points where shared
//! memory is touched (besides user shared arrays, which the user orders), and the only points
//! where barriers may go.

use super::alloc::{self, Request, Slice};
use super::arrangement::Arrangements;
use super::barrier::{self, Barrier};
use super::collective::{self, CollectivePlan};
use super::error::PlanError;
use super::exchange::{self, ExchangePlan};
use super::ids::{IdVec, SliceId};
use super::schedule::Step;
use super::shared::{self, SharedLayout};
use super::storage::{self, Storages};
use crate::ir::verify::Uniformity;
use crate::ir::{ArrayId, Info, Ir, OpId};

/// The result of this pass, and its state while the families add to it.
#[derive(Debug, Clone, Default)]
pub struct Scratch {
    /// Per op, its exchanges in step order.
    pub exchanges: IdVec<OpId, Vec<ExchangePlan>>,
    /// Per op, the shared memory of a block-wide collective.
    pub collectives: IdVec<OpId, Option<CollectivePlan>>,
    /// Per op, its shared-memory steps in the order its lowering takes them.
    pub steps: IdVec<OpId, Vec<Step>>,
    /// The slices.
    pub slices: IdVec<SliceId, Slice>,
    /// Per shared array, its slice.
    pub arrays: IdVec<ArrayId, SliceId>,
    /// The slices to place in the window.
    pub(super) requests: Vec<Request>,
    /// The barriers.
    pub barriers: Vec<Barrier>,
    /// Shared bytes the kernel needs (static declarations and dynamic part).
    pub bytes: u32,
    /// The declarations: arrays on their own or in the window, the window static or dynamic.
    pub shared: SharedLayout,
}

/// What the families read about the kernel.
pub(super) struct Context<'a> {
    pub ir: &'a Ir,
    /// Threads per block.
    pub block: u32,
    /// The ops in program order (an op's index here is its program point).
    pub order: Vec<OpId>,
    /// Per op, how uniform every condition and loop around it is, and the early exits that
    /// may have run before it: the verifier's finding ([`Uniformity::GRID`] for an op under
    /// none).
    pub enclosing: IdVec<OpId, Uniformity>,
}

impl Context<'_> {
    /// Whether `op` runs in code that is not uniform across the block, where no block barrier
    /// can stand: its slices get bytes of their own for the whole kernel.
    pub fn divergent(&self, op: OpId) -> bool {
        let u = self.enclosing[op];
        !u.covers(self.block) && u < Uniformity::BLOCK
    }

    /// The threads of the aligned groups a warp barrier synchronizes: warps where every warp
    /// of the block is whole, the block where it is one (partial) warp, else none (0).
    pub fn warps(&self) -> u32 {
        let block = self.block;
        if block.is_multiple_of(32) || block < 32 {
            block.min(32)
        } else {
            0
        }
    }
}

/// Plans the exchanges, collectives, slices, declarations and barriers.
pub fn plan_scratch(ir: &Ir, info: &Info, arr: &Arrangements) -> Result<Scratch, PlanError> {
    let mut order = Vec::new();
    ir.walk(|op, _| order.push(op));
    let mut enclosing = info.control.clone();
    enclosing.resize(ir.ops.len(), Uniformity::THREAD);
    let cx = Context {
        ir,
        block: ir.block_threads(),
        order,
        enclosing: IdVec::from(enclosing),
    };
    let ops = ir.ops.len();
    let mut s = Scratch {
        exchanges: IdVec::filled(ops, Vec::new()),
        collectives: IdVec::filled(ops, None),
        steps: IdVec::filled(ops, Vec::new()),
        ..Scratch::default()
    };
    let end = cx.order.len() as u32 * 16 + 16;
    let (homes, arrays) = storage::plan_arrays(ir, &mut s, end);
    let mut storages = Storages::new(ir);
    exchange::plan_exchanges(&cx, arr, &mut s, &mut storages)?;
    collective::plan_collectives(&cx, arr, &mut s)?;
    storages.finish(ir, &mut s);
    // Stable: requests at one point keep the order they were made in.
    s.requests.sort_by_key(|r| r.at);
    let bytes = alloc::allocate(&mut s.slices, &s.requests, end, &storages.slices);
    let window_align = (s.requests.iter())
        .map(|r| s.slices[r.slice].align)
        .max()
        .unwrap_or(16);
    s.shared = shared::layout(homes, &arrays, bytes, window_align);
    s.bytes = s.shared.total_bytes();
    s.barriers = barrier::place(ir, &s.steps, &s.slices);
    Ok(s)
}

/// Whether aligned groups of `scope` threads (dividing `block`) lie inside one warp each.
pub(super) fn within_warps(scope: u32, block: u32) -> bool {
    scope <= 32 && (32 % scope == 0 || block <= 32)
}

/// Whether a value of uniformity `u` agrees across each aligned group of `scope` threads of a
/// block of `block` (runs of `u` threads agree, `u` a power of two or block-wide).
pub(super) fn covers_groups(u: Uniformity, scope: u32, block: u32) -> bool {
    u.covers(block) || u >= Uniformity::BLOCK || (u.0 >= scope && u.0.is_multiple_of(scope))
}

/// The greatest common divisor (`gcd(a, 0)` is `a`).
pub(super) fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The least common multiple (saturating; 0 if either is 0): the threads of the smallest
/// exchange groups that groups of `a` and of `b` threads both tile.
pub(super) fn lcm(a: u32, b: u32) -> u32 {
    if a == 0 || b == 0 {
        return 0;
    }
    (a / gcd(a, b)).saturating_mul(b)
}

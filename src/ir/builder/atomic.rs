//! Atomics: read-modify-writes of one element of global memory (an output or a read-write
//! buffer) or of a shared array, with their controls ([`Atomic`]).

use super::KernelBuilder;
use crate::ir::dtype::{AtomicElement, AtomicInt, AtomicUnsigned, Element};
use crate::ir::entities::Loc;
use crate::ir::expr::{Expr, ExprKind};
use crate::ir::handles::{AtomicTarget, ElementIndex};
use crate::ir::ops::*;

/// The controls of an atomic: what it does to the element (the constructors), and its memory
/// order and scope (relaxed at GPU scope unless set). The integer-only operations exist only
/// for integer types, `inc` and `dec` only for unsigned ones: using them on another type
/// does not compile.
///
/// ```
/// use coopgraph::ir::{Atomic, index};
/// use coopgraph::runtime::Device;
/// use coopgraph::KernelBuilder;
///
/// // Every thread of 64 adds its rank to c[0], maxes c[1] and counts c[2] up to 40.
/// let mut k = KernelBuilder::new("counters").block(64);
/// let c = k.output::<u32>("c");
/// let t = index::thread_rank();
/// k.atomic(&c, 0u32, Atomic::add(&t));
/// k.atomic(&c, 1u32, Atomic::max(t.clone() * 3u32));
/// k.atomic(&c, 2u32, Atomic::inc(40u32));
/// let kernel = k.build()?;
///
/// let dev = Device::sim();
/// let mut cb = dev.alloc_zeroed::<u32>(3)?;
/// dev.compile(&kernel)?.launch_grid(1, (&mut cb,))?;
/// // inc wraps to 0 past 40: 64 increments from 0 leave 64 mod 41.
/// assert_eq!(cb.to_vec()?, [2016, 189, 64 % 41]);
/// # Ok::<(), coopgraph::Error>(())
/// ```
///
/// What PTX has no atomic for does not compile: bitwise operations on floats, counters on
/// signed integers, any atomic on 8- or 16-bit types, and atomics on an input.
///
/// ```compile_fail
/// let _ = coopgraph::ir::Atomic::<f32>::and(1.0f32);
/// ```
///
/// ```compile_fail
/// let _ = coopgraph::ir::Atomic::<i32>::inc(10i32);
/// ```
///
/// ```compile_fail
/// let _ = coopgraph::ir::Atomic::<u8>::add(1u8);
/// ```
///
/// ```compile_fail
/// let mut k = coopgraph::KernelBuilder::new("k");
/// let x = k.input::<u32>("x");
/// k.atomic(&x, 0u32, coopgraph::ir::Atomic::add(1u32));
/// ```
#[derive(Debug, Clone)]
pub struct Atomic<T: Element> {
    op: AtomicOp,
    value: Expr<T>,
    compare: Option<Expr<T>>,
    order: MemoryOrder,
    scope: MemoryScope,
}

impl<T: Element> Atomic<T> {
    /// What it does, its operand, compare value, order and scope.
    pub(crate) fn into_parts(
        self,
    ) -> (AtomicOp, Expr<T>, Option<Expr<T>>, MemoryOrder, MemoryScope) {
        (self.op, self.value, self.compare, self.order, self.scope)
    }
}

impl<T: AtomicElement> Atomic<T> {
    fn new(op: AtomicOp, value: impl Into<Expr<T>>) -> Self {
        Atomic {
            op,
            value: value.into(),
            compare: None,
            order: MemoryOrder::Relaxed,
            scope: MemoryScope::Gpu,
        }
    }

    /// `element + v` (wrapping for integers). On an output or buffer, an `f32` add flushes
    /// subnormal operands and results to sign-preserving zero, as PTX's `atom.add.f32` on
    /// global memory does; on a shared array it keeps them, as the GPU's shared-memory add
    /// does.
    pub fn add(v: impl Into<Expr<T>>) -> Self {
        Atomic::new(AtomicOp::Add, v)
    }

    /// `element - v` (wrapping for integers).
    pub fn sub(v: impl Into<Expr<T>>) -> Self {
        Atomic::new(AtomicOp::Sub, v)
    }

    /// The smaller of the element and `v`. For floats, NaN-propagating (a NaN element or
    /// operand leaves NaN) with `-0.0` below `+0.0`, through a compare-and-swap loop (PTX has
    /// no float minimum atomic).
    pub fn min(v: impl Into<Expr<T>>) -> Self {
        Atomic::new(AtomicOp::Min, v)
    }

    /// The larger of the element and `v`; for floats as [`Atomic::min`].
    pub fn max(v: impl Into<Expr<T>>) -> Self {
        Atomic::new(AtomicOp::Max, v)
    }

    /// The smaller, a NaN treated as missing (`nan_min(NaN, x) == x`), as Numba's
    /// `atomic.nanmin`; for integers the same as [`Atomic::min`].
    pub fn nan_min(v: impl Into<Expr<T>>) -> Self {
        Atomic::new(AtomicOp::NanMin, v)
    }

    /// The larger, a NaN treated as missing, as Numba's `atomic.nanmax`; for integers the
    /// same as [`Atomic::max`].
    pub fn nan_max(v: impl Into<Expr<T>>) -> Self {
        Atomic::new(AtomicOp::NanMax, v)
    }

    /// Reads the element without changing it (an atomic load: `ld.relaxed`, or `ld.acquire`
    /// with [`MemoryOrder::Acquire`]), of a buffer element only (a shared array's is read in
    /// order by barriers): what a spin-wait polls, and what reads a flag another block
    /// publishes with a release.
    ///
    /// ```
    /// use coopgraph::ir::{Atomic, MemoryOrder, index};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // Thread 0 publishes a value with a release; every thread reads it back.
    /// let mut k = KernelBuilder::new("flag").block(32);
    /// let (flag, out) = (k.buffer::<u64>("flag"), k.output::<u64>("out"));
    /// k.if_(index::thread_rank().eq(0u32), |k| {
    ///     k.atomic(&flag, 0u32, Atomic::exch(7u64).order(MemoryOrder::Release));
    /// });
    /// k.sync_block();
    /// let seen = k.atomic(&flag, 0u32, Atomic::load().order(MemoryOrder::Acquire));
    /// k.write(&out, index::thread_rank(), seen);
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut f = dev.alloc_zeroed::<u64>(1)?;
    /// let mut o = dev.alloc_zeroed::<u64>(32)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut f, &mut o))?;
    /// assert_eq!(o.to_vec()?, vec![7; 32]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn load() -> Self {
        Atomic::new(AtomicOp::Load, Expr::lit(T::default()))
    }

    /// Stores `v`.
    pub fn exch(v: impl Into<Expr<T>>) -> Self {
        Atomic::new(AtomicOp::Exch, v)
    }

    /// Stores `new` where the element equals `compare` (floats compared by their bits).
    pub fn cas(compare: impl Into<Expr<T>>, new: impl Into<Expr<T>>) -> Self {
        Atomic {
            compare: Some(compare.into()),
            ..Atomic::new(AtomicOp::Cas, new)
        }
    }

    /// The memory order (default [`MemoryOrder::Relaxed`]).
    pub fn order(mut self, order: MemoryOrder) -> Self {
        self.order = order;
        self
    }

    /// The threads the order is observed by (default [`MemoryScope::Gpu`]).
    pub fn scope(mut self, scope: MemoryScope) -> Self {
        self.scope = scope;
        self
    }
}

impl<T: AtomicInt> Atomic<T> {
    /// `element & v`.
    pub fn and(v: impl Into<Expr<T>>) -> Self {
        Atomic::new(AtomicOp::And, v)
    }

    /// `element | v`.
    pub fn or(v: impl Into<Expr<T>>) -> Self {
        Atomic::new(AtomicOp::Or, v)
    }

    /// `element ^ v`.
    pub fn xor(v: impl Into<Expr<T>>) -> Self {
        Atomic::new(AtomicOp::Xor, v)
    }
}

impl<T: AtomicUnsigned> Atomic<T> {
    /// `element >= limit ? 0 : element + 1`: a counter wrapping past `limit`.
    pub fn inc(limit: impl Into<Expr<T>>) -> Self {
        Atomic::new(AtomicOp::Inc, limit)
    }

    /// `element == 0 || element > limit ? limit : element - 1`: a counter wrapping below 0
    /// to `limit`.
    pub fn dec(limit: impl Into<Expr<T>>) -> Self {
        Atomic::new(AtomicOp::Dec, limit)
    }
}

impl KernelBuilder {
    /// Updates element `index` of `target` (an output, a read-write buffer or a shared array;
    /// never an input) atomically, as `op` says, in each thread that runs it; returns the
    /// element's value before the update. Atomics on one element never race with one another
    /// (the simulator's race checker orders them; a plain access racing with one is still a
    /// race). Where the result is not used, the update is a PTX `red`.
    ///
    /// Where bounds are checked, an index past a buffer's end updates nothing and returns 0;
    /// a shared array's index must be inside it (`u32`), as for its reads and writes.
    ///
    /// A histogram of 8 bins in shared memory, privatized per block, merged into global
    /// memory; each thread also takes a ticket from a counter:
    ///
    /// ```
    /// use coopgraph::ir::{Atomic, MemoryOrder, index};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// let mut k = KernelBuilder::new("hist8").block(64);
    /// let (x, bins, ticket) = (k.input::<u8>("x"), k.output::<u32>("bins"), k.output::<u32>("t"));
    /// let counter = k.output::<u32>("counter");
    /// let t = index::thread_rank();
    /// let g = index::block_index() * 64u32 + t.clone();
    /// let local = k.shared_array::<u32>(8);
    /// k.if_(t.lt(8u32), |k| k.shared_write(&local, &t, 0u32));
    /// k.sync_block();
    /// k.atomic(&local, x.at(&g).cast::<u32>() % 8u32, Atomic::add(1u32));
    /// k.sync_block();
    /// k.if_(t.lt(8u32), |k| {
    ///     k.atomic(&bins, &t, Atomic::add(local.read(&t)));
    /// });
    /// let mine = k.atomic(&counter, 0u32, Atomic::add(1u32).order(MemoryOrder::AcqRel));
    /// k.write(&ticket, &g, mine);
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xs: Vec<u8> = (0..256).map(|i| (i * 7 % 256) as u8).collect();
    /// let xb = dev.upload(&xs)?;
    /// let (mut bb, mut tb) = (dev.alloc_zeroed::<u32>(8)?, dev.alloc_zeroed::<u32>(256)?);
    /// let mut cb = dev.alloc_zeroed::<u32>(1)?;
    /// dev.compile(&kernel)?.launch_grid(4, (&xb, &mut bb, &mut tb, &mut cb))?;
    /// assert_eq!(bb.to_vec()?, [32; 8]);
    /// let mut tickets = tb.to_vec()?;
    /// tickets.sort();
    /// assert_eq!(tickets, (0..256).collect::<Vec<u32>>());
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn atomic<T: AtomicElement>(
        &mut self,
        target: &impl AtomicTarget<T>,
        index: impl ElementIndex,
        op: Atomic<T>,
    ) -> Expr<T> {
        let loc = Loc::caller();
        let memory = target.memory_in(self);
        let index = self.expr(&Expr::<u32>::wrap(index.index_node()));
        let value = self.expr(&op.value);
        let compare = op.compare.as_ref().map(|c| self.expr(c));
        let old = self.thread_data_n::<T>(1);
        let spec = AtomicSpec {
            memory,
            op: op.op,
            index,
            value,
            compare,
            order: op.order,
            scope: op.scope,
            old: old.id,
        };
        self.push(OpKind::Atomic(spec), loc);
        Expr::owned(
            ExprKind::Item {
                data: old.id,
                item: 0,
            },
            self.lineage.id(),
        )
    }
}

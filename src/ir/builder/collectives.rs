//! Collectives over a group: reductions, scans and exchanges, with their controls.

use super::KernelBuilder;
use crate::ir::dtype::Element;
use crate::ir::entities::Loc;
use crate::ir::expr::{Expr, IntElement};
use crate::ir::handles::{Group, ThreadData};
use crate::ir::ops::*;

/// The controls of a reduction: operator, broadcast, valid items, block algorithm.
///
/// ```
/// use coopgraph::ir::{Reduce, ReduceAlgorithm};
/// use coopgraph::runtime::Device;
/// use coopgraph::{KernelBuilder, Load, Store};
///
/// let dev = Device::sim();
/// let xs = [3u32, 1, 4, 1, 5, 9, 2, 6].repeat(4);
/// let xb = dev.upload(&xs)?;
/// // The block's reduction of `xs` with `controls`, as thread 0 stores it.
/// let reduce = |controls: Reduce<u32>| -> Result<u32, coopgraph::Error> {
///     let mut k = KernelBuilder::new("reduce").block(32).items_per_thread(1);
///     let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
///     let b = k.this_block();
///     let t = k.load_from(b, &x, Load::direct());
///     let r = k.reduce(b, &t, controls);
///     k.store_to(b, &y, &r, Store::direct().valid_items(1u32));
///     let mut yb = dev.alloc_zeroed::<u32>(1)?;
///     dev.compile(&k.build()?)?.launch_grid(1, (&xb, &mut yb))?;
///     Ok(yb.to_vec()?[0])
/// };
/// assert_eq!(reduce(Reduce::sum())?, 124);
/// assert_eq!(reduce(Reduce::sum().algorithm(ReduceAlgorithm::Raking))?, 124);
/// assert_eq!(reduce(Reduce::sum().valid_items(3u32))?, 8);
/// assert_eq!(reduce(Reduce::min())?, 1);
/// assert_eq!(reduce(Reduce::max())?, 9);
/// assert_eq!(reduce(Reduce::product().valid_items(5u32))?, 60);
/// assert_eq!(reduce(Reduce::bit_or())?, 15);
/// assert_eq!(reduce(Reduce::bit_and())?, 0);
/// assert_eq!(reduce(Reduce::bit_xor().valid_items(2u32))?, 2);
/// // Not commutative: the last non-zero item in position order.
/// assert_eq!(reduce(Reduce::custom(false, |a, b| b.ne(0u32).select(b, a)))?, 6);
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub struct Reduce<T: Element> {
    op: ReduceKind<T>,
    broadcast: bool,
    valid: Option<Expr<u32>>,
    algorithm: ReduceAlgorithm,
}

pub(super) type Combine<T> = Box<dyn FnOnce(Expr<T>, Expr<T>) -> Expr<T>>;

pub(super) enum ReduceKind<T: Element> {
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

    /// The group's first value in position order: rank 0's first item. With
    /// [`Reduce::broadcast`] it hands one thread's value to its whole group, as uniform as any
    /// broadcast result (so it may steer a collective or a store's offset), through one
    /// barrier: CUDA's `if (threadIdx.x == 0) s = v; __syncthreads(); v = s;`. Not commutative
    /// (it takes a blocked payload), and under a valid count of 0 the result is unspecified.
    ///
    /// ```
    /// use coopgraph::ir::{Atomic, Reduce, index};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // Thread 0 takes a ticket; the block uses it as one value.
    /// let mut k = KernelBuilder::new("ticket").block(96);
    /// let (counter, y) = (k.buffer::<u32>("counter"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let mine = k.thread_data_n::<u32>(1);
    /// k.set_item(&mine, 0, 0u32);
    /// k.if_(index::thread_rank().eq(0u32), |k| {
    ///     let t = k.atomic(&counter, 0u32, Atomic::add(1u32));
    ///     k.set_item(&mine, 0, t);
    /// });
    /// let ticket = k.reduce(b, &mine, Reduce::first().broadcast()).item(0);
    /// let at = ticket * 96u32 + index::thread_rank();
    /// k.write(&y, at, index::block_index());
    ///
    /// let dev = Device::sim();
    /// let mut c = dev.alloc_zeroed::<u32>(1)?;
    /// let mut yb = dev.alloc_zeroed::<u32>(3 * 96)?;
    /// dev.compile(&k.build()?)?.launch_grid(3, (&mut c, &mut yb))?;
    /// // Each block wrote its own 96 slots, in the order its thread 0 took tickets.
    /// let ys = yb.to_vec()?;
    /// let mut firsts: Vec<u32> = (0..3).map(|t| ys[t * 96]).collect();
    /// for t in 0..3 {
    ///     assert!(ys[t * 96..(t + 1) * 96].iter().all(|&v| v == firsts[t]));
    /// }
    /// firsts.sort();
    /// assert_eq!(firsts, [0, 1, 2]);
    /// assert_eq!(c.to_vec()?, [3]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn first() -> Self {
        Reduce::fixed(ReduceOp::First)
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

impl<T: Element> Reduce<T> {
    /// The operator and the valid count, for primitives built from other ops.
    pub(super) fn into_parts(self) -> (ReduceKind<T>, Option<Expr<u32>>) {
        (self.op, self.valid)
    }
}

/// A scan's controls taken apart, for primitives built from other ops.
pub(super) struct ScanParts<T: Element> {
    pub(super) op: ReduceKind<T>,
    pub(super) inclusive: bool,
    pub(super) initial: Option<Expr<T>>,
    pub(super) valid: Option<Expr<u32>>,
}

impl<T: Element> Scan<T> {
    pub(super) fn into_parts(self) -> ScanParts<T> {
        ScanParts {
            op: self.op,
            inclusive: self.inclusive,
            initial: self.initial,
            valid: self.valid,
        }
    }
}

impl<T: IntElement> Reduce<T> {
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

/// The controls of a scan: inclusive or exclusive, operator, initial value.
///
/// ```
/// use coopgraph::ir::{Reduce, Scan, ScanAlgorithm};
/// use coopgraph::runtime::Device;
/// use coopgraph::{KernelBuilder, Load, Store};
///
/// let dev = Device::sim();
/// let xb = dev.upload(&[3u32, 1, 4, 1, 5, 9, 2, 6])?;
/// // A warp's scan of its first 8 lanes with `controls`.
/// let scan = |controls: Scan<u32>| -> Result<Vec<u32>, coopgraph::Error> {
///     let mut k = KernelBuilder::new("scan").block(32).items_per_thread(1);
///     let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
///     let w = k.this_warp();
///     let t = k.load_from(w, &x, Load::direct().valid_items(8u32).oob_default(0));
///     let s = k.scan(w, &t, controls);
///     k.store_to(w, &y, &s, Store::direct().valid_items(8u32));
///     let mut yb = dev.alloc_zeroed::<u32>(8)?;
///     dev.compile(&k.build()?)?.launch_grid(1, (&xb, &mut yb))?;
///     Ok(yb.to_vec()?)
/// };
/// assert_eq!(scan(Scan::inclusive_sum())?, [3, 4, 8, 9, 14, 23, 25, 31]);
/// assert_eq!(scan(Scan::exclusive_sum())?, [0, 3, 4, 8, 9, 14, 23, 25]);
/// let from_100 = Scan::exclusive_sum().initial_value(100u32);
/// assert_eq!(scan(from_100)?, [100, 103, 104, 108, 109, 114, 123, 125]);
/// assert_eq!(scan(Scan::inclusive(Reduce::max()))?, [3, 3, 4, 4, 5, 9, 9, 9]);
/// assert_eq!(scan(Scan::exclusive(Reduce::min()).initial_value(2u32))?, [2, 2, 1, 1, 1, 1, 1, 1]);
/// assert_eq!(scan(Scan::inclusive_sum().valid_items(4u32))?[..4], [3, 4, 8, 9]);
/// assert_eq!(scan(Scan::inclusive_sum().algorithm(ScanAlgorithm::Raking))?[7], 31);
/// # Ok::<(), coopgraph::Error>(())
/// ```
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

impl KernelBuilder {
    /// The IR operator of a reduction or scan: a fixed one, or the user's, interned.
    fn reduce_op<T: Element>(&mut self, op: ReduceKind<T>) -> ReduceOp {
        match op {
            ReduceKind::Fixed(op) => op,
            ReduceKind::Custom(f, commutative) => {
                let body = f(Expr::arg(0), Expr::arg(1));
                ReduceOp::Custom {
                    expr: self.expr(&body),
                    commutative,
                }
            }
        }
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
        let op = self.reduce_op(controls.op);
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
    ///
    /// ```
    /// use coopgraph::ir::{Reduce, Scan};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("scans").block(4).items_per_thread(2);
    /// let x = k.input::<i32>("x");
    /// let (sums, maxima) = (k.output::<i32>("sums"), k.output::<i32>("maxima"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let s = k.scan(b, &t, Scan::exclusive_sum());
    /// let m = k.scan(b, &t, Scan::inclusive(Reduce::max()));
    /// k.store_to(b, &sums, &s, Store::direct());
    /// k.store_to(b, &maxima, &m, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[3i32, -1, 4, 1, -5, 9, 2, -6])?;
    /// let mut sb = dev.alloc_zeroed::<i32>(8)?;
    /// let mut mb = dev.alloc_zeroed::<i32>(8)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut sb, &mut mb))?;
    /// assert_eq!(sb.to_vec()?, [0, 3, 2, 6, 7, 2, 11, 13]);
    /// assert_eq!(mb.to_vec()?, [3, 3, 4, 4, 4, 9, 9, 9]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
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
    /// at every rank, as a one-item payload. Under a built-in operator the verifier takes the
    /// total as uniform across the group, so a branch or a loop on it may hold the group's
    /// collectives (a user operator's total may not steer one).
    ///
    /// ```
    /// use coopgraph::ir::Scan;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// // Each element's share of its block's total, in percent.
    /// let mut k = KernelBuilder::new("shares").block(32).items_per_thread(1);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let (upto, total) = k.scan_with_aggregate(b, &t, Scan::inclusive_sum());
    /// let share = k.map2(&upto, &total, |u, t| u * 100u32 / t);
    /// k.store_to(b, &y, &share, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[5u32; 32])?;
    /// let mut yb = dev.alloc_zeroed::<u32>(32)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// let ys = yb.to_vec()?;
    /// assert_eq!([ys[0], ys[15], ys[31]], [3, 50, 100]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
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
        let op = self.reduce_op(controls.op);
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
    ///
    /// One block walks every tile in order, carrying the running total from tile to tile:
    ///
    /// ```
    /// use coopgraph::ir::Scan;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("running_sum").block(32).items_per_thread(2);
    /// let (x, y, n) = (k.input::<u32>("x"), k.output::<u32>("y"), k.scalar::<u32>("n"));
    /// let b = k.this_block();
    /// let running = k.thread_data_n::<u32>(1);
    /// k.set_item(&running, 0, 0u32);
    /// k.tiles(n, |k, _tile| {
    ///     let t = k.load_from(b, &x, Load::direct().oob_default(0));
    ///     let s = k.scan_with_prefix(b, &t, Scan::inclusive_sum(), |k, total| {
    ///         let start = running.item(0);
    ///         k.set_item(&running, 0, running.item(0) + total);
    ///         start
    ///     });
    ///     k.store_to(b, &y, &s, Store::direct());
    /// });
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[1u32; 300])?;
    /// let mut yb = dev.alloc_zeroed::<u32>(300)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb, 300u32))?;
    /// assert_eq!(yb.to_vec()?, (1..=300).collect::<Vec<u32>>());
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
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
        let op = self.reduce_op(controls.op);
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

    /// A payload with `src`'s items rearranged to `to` (blocked, or striped over `threads`),
    /// moved between the group's threads the way `via` says: CUB's `BlockExchange`
    /// conversions through shared memory (all threads at once, or the warps taking turns), or
    /// `WarpExchange`'s through shuffles. An explicit exchange is allowed in strict mode.
    ///
    /// A scan takes blocked items; coalesced reads leave them striped over the warp, and
    /// shuffles make them blocked without shared memory:
    ///
    /// ```
    /// use coopgraph::ir::{Arrangement, ExchangeVia, Scan};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("warp_prefix").block(32).items_per_thread(4);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let w = k.this_warp();
    /// let striped = k.load_from(w, &x, Load::striped());
    /// let blocked = k.exchange(w, &striped, Arrangement::Blocked, ExchangeVia::Shuffles);
    /// let sums = k.scan(w, &blocked, Scan::inclusive_sum());
    /// k.store_to(w, &y, &sums, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xs = dev.upload(&[1u32; 128])?;
    /// let mut ys = dev.alloc_zeroed::<u32>(128)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xs, &mut ys))?;
    /// assert_eq!(ys.to_vec()?, (1..=128).collect::<Vec<u32>>());
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn exchange<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        to: Arrangement,
        via: ExchangeVia,
    ) -> ThreadData<T> {
        let loc = Loc::caller();
        let group = self.group_id(group.into());
        let dst = self.thread_data_n::<T>(src.items);
        let src_id = self.data_id(src);
        self.push(
            OpKind::Exchange {
                group,
                src: src_id,
                dst: dst.id,
                to,
                via,
            },
            loc,
        );
        dst
    }
}

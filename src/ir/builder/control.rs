//! Control flow: branches, loops, the grid-stride loop over tiles, and block barriers.

use super::KernelBuilder;
use crate::ir::entities::{Loc, OpId, RegionId};
use crate::ir::expr::{Expr, ExprKind};
use crate::ir::handles::Tile;
use crate::ir::ops::*;

impl KernelBuilder {
    /// A block barrier: every thread waits until all threads of the block reach it.
    ///
    /// Ordering a user's shared array is the user's job: without the barrier, a thread could
    /// read an element before its neighbour wrote it, which the simulator reports as a race.
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("reverse").block(64).items_per_thread(1);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let a = k.shared_array::<u32>(64);
    /// let t = k.load_from(b, &x, Load::direct());
    /// k.shared_write(&a, index::thread_rank(), t.item(0));
    /// k.sync_block();
    /// let r = k.fill(a.read(63u32 - index::thread_rank()));
    /// k.store_to(b, &y, &r, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&(0..64).collect::<Vec<u32>>())?;
    /// let mut yb = dev.alloc_zeroed::<u32>(64)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// assert_eq!(yb.to_vec()?, (0..64).rev().collect::<Vec<u32>>());
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn sync_block(&mut self) {
        let loc = Loc::caller();
        self.push(OpKind::SyncBlock, loc);
    }

    /// Suspends the thread for about `ns` nanoseconds (PTX `nanosleep`, sm_70+; the GPU
    /// sleeps between 0 and `2 * ns`): the back-off of a spin-wait on memory another block
    /// writes, so the spinning warp leaves the SM's issue slots to the others. It orders
    /// nothing and changes no value; the simulator treats it as a point where the thread
    /// yields (as after an ordered load), so the threads it waits for get to run. A delay
    /// over [`MAX_NANOSLEEP_NS`](crate::ir::MAX_NANOSLEEP_NS) (1 ms) is
    /// [`VerifyErrorKind::SleepTooLong`](crate::ir::VerifyErrorKind::SleepTooLong), naming the
    /// line.
    ///
    /// Block 1 waits, backing off, until block 0 has published its value:
    ///
    /// ```
    /// use coopgraph::ir::{Atomic, MemoryOrder, VerifyErrorKind, index};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{Error, KernelBuilder};
    ///
    /// let mut k = KernelBuilder::new("handoff").block(32);
    /// let (flag, y) = (k.buffer::<u32>("flag"), k.output::<u32>("y"));
    /// let first = index::thread_rank().eq(0u32);
    /// k.if_(first.clone().and(&index::block_index().eq(0u32)), |k| {
    ///     k.atomic(&flag, 0u32, Atomic::exch(42u32).order(MemoryOrder::Release));
    /// });
    /// k.if_(first.and(&index::block_index().eq(1u32)), |k| {
    ///     let seen = k.var(0u32);
    ///     k.while_(seen.get().eq(0u32), |k| {
    ///         let v = k.atomic(&flag, 0u32, Atomic::add(0u32).order(MemoryOrder::Acquire));
    ///         k.set(&seen, v);
    ///         k.if_(seen.get().eq(0u32), |k| k.nanosleep(100));
    ///     });
    ///     k.write(&y, 0u32, seen.get());
    /// });
    /// let dev = Device::sim();
    /// let (mut f, mut yb) = (dev.alloc_zeroed::<u32>(1)?, dev.alloc_zeroed::<u32>(1)?);
    /// dev.compile(&k.build()?)?.launch_grid(2, (&mut f, &mut yb))?;
    /// assert_eq!(yb.to_vec()?, [42]);
    ///
    /// let mut k = KernelBuilder::new("too_long").block(32);
    /// k.nanosleep(2_000_000);
    /// let Err(Error::Verify(e)) = k.build() else { panic!("built") };
    /// assert!(matches!(e.errors[0].kind, VerifyErrorKind::SleepTooLong { ns: 2_000_000, .. }));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn nanosleep(&mut self, ns: u32) {
        let loc = Loc::caller();
        self.push(OpKind::Nanosleep { ns }, loc);
    }

    /// Asserts that `cond` holds in every thread that reaches this point. In a kernel built
    /// with [`debug`](Self::debug), a thread where it fails records the failure, and the
    /// launch returns [`RuntimeError::CheckFailed`](crate::runtime::RuntimeError::CheckFailed)
    /// with `message`, this line and the thread (the first failure of the launch); the kernel
    /// runs on. Without debug checks the assertion costs nothing: its condition is not even
    /// evaluated.
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::{Device, RuntimeError};
    /// use coopgraph::{Error, KernelBuilder, Load, Store};
    ///
    /// let sorted = |debug: bool| {
    ///     let mut k = KernelBuilder::new("sorted").block(32).items_per_thread(1);
    ///     if debug {
    ///         k = k.debug();
    ///     }
    ///     let x = k.input::<u32>("x");
    ///     let i = index::thread_rank();
    ///     let next = (i.clone() + 1u32).min(31u32);
    ///     k.assert(x.at(i).le(x.at(next)), "x is sorted");
    ///     k.build()
    /// };
    /// let dev = Device::sim();
    /// let mut xs: Vec<u32> = (0..32).collect();
    /// xs.swap(20, 21);
    /// let xb = dev.upload(&xs)?;
    /// // Not checked: the launch succeeds.
    /// dev.compile(&sorted(false)?)?.launch_grid(1, (&xb,))?;
    /// let Err(RuntimeError::CheckFailed(failure)) =
    ///     dev.compile(&sorted(true)?)?.launch_grid(1, (&xb,))
    /// else {
    ///     panic!("no failure")
    /// };
    /// assert_eq!(failure.thread, [20, 0, 0]);
    /// let site = failure.site.as_ref().expect("a site");
    /// assert_eq!(site.loc.file, file!());
    /// assert!(failure.to_string().contains("assertion failed: x is sorted"));
    /// # Ok::<(), Error>(())
    /// ```
    #[track_caller]
    pub fn assert(&mut self, cond: impl Into<Expr<bool>>, message: &str) {
        let loc = Loc::caller();
        let cond = self.expr(&cond.into());
        let message = message.to_string();
        self.push(OpKind::Assert { cond, message }, loc);
    }

    pub(super) fn region(&mut self, f: impl FnOnce(&mut Self)) -> RegionId {
        let r = self.new_region();
        self.cursor.push(r);
        f(self);
        self.cursor.pop();
        r
    }

    /// Runs `then` where `cond` holds.
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// // Negative items become 0; the others stay.
    /// let mut k = KernelBuilder::new("clamp").block(32).items_per_thread(1);
    /// let (x, y) = (k.input::<i32>("x"), k.output::<i32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// k.if_(t.item(0).lt(0), |k| k.set_item(&t, 0, 0));
    /// k.store_to(b, &y, &t, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xs: Vec<i32> = (0..32).map(|i| i - 16).collect();
    /// let xb = dev.upload(&xs)?;
    /// let mut yb = dev.alloc_zeroed::<i32>(32)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// assert_eq!(yb.to_vec()?, xs.iter().map(|&v| v.max(0)).collect::<Vec<_>>());
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
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
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Store};
    ///
    /// // Even threads write 1, odd ones 2.
    /// let mut k = KernelBuilder::new("parity").block(32).items_per_thread(1);
    /// let y = k.output::<u32>("y");
    /// let b = k.this_block();
    /// let t = k.thread_data::<u32>();
    /// k.if_else(
    ///     (index::thread_rank() % 2u32).eq(0u32),
    ///     |k| k.set_item(&t, 0, 1u32),
    ///     |k| k.set_item(&t, 0, 2u32),
    /// );
    /// k.store_to(b, &y, &t, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut yb = dev.alloc_zeroed::<u32>(32)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut yb,))?;
    /// assert_eq!(yb.to_vec()?, (0..32).map(|i| 1 + i % 2).collect::<Vec<u32>>());
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
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
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// // x * (0 + 1 + .. + (n - 1)), by adding x once per step.
    /// let mut k = KernelBuilder::new("triangle").block(32).items_per_thread(1);
    /// let (x, y, n) = (k.input::<u32>("x"), k.output::<u32>("y"), k.scalar::<u32>("n"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let acc = k.fill(0u32);
    /// k.for_range(0u32, n, |k, i| {
    ///     let next = k.map2(&acc, &t, |a, x| a + x * i.clone());
    ///     k.assign(&acc, &next);
    /// });
    /// k.store_to(b, &y, &acc, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&(0..32).collect::<Vec<u32>>())?;
    /// let mut yb = dev.alloc_zeroed::<u32>(32)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb, 5u32))?;
    /// assert_eq!(yb.to_vec()?, (0..32).map(|x| x * 10).collect::<Vec<u32>>());
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn for_range(
        &mut self,
        start: impl Into<Expr<u32>>,
        end: impl Into<Expr<u32>>,
        body: impl FnOnce(&mut Self, Expr<u32>),
    ) {
        let loc = Loc::caller();
        self.counted_loop(loc, start.into(), end.into(), None, body);
    }

    /// Records a `for` loop: the op takes the next id, the body's ops come after it.
    pub(super) fn counted_loop(
        &mut self,
        loc: Loc,
        start: Expr<u32>,
        end: Expr<u32>,
        step: Option<Expr<u32>>,
        body: impl FnOnce(&mut Self, Expr<u32>),
    ) {
        let start = self.expr(&start);
        let end = self.expr(&end);
        let step = step.map(|s| self.expr(&s));
        let placeholder = self.reserve_op();
        let body_region = self.new_region();
        let op = self.push(
            OpKind::For {
                start,
                end,
                step,
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
    ///
    /// A grid of 2 blocks covers 10 tiles of 64 elements, the last one partial:
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("offsets").block(32).items_per_thread(2);
    /// let (y, n) = (k.output::<u32>("y"), k.scalar::<u32>("n"));
    /// let b = k.this_block();
    /// k.tiles(n, |k, tile| {
    ///     // Each element gets its tile's index and origin.
    ///     let t = k.fill(tile.index * 1000u32 + tile.origin);
    ///     k.store_to(b, &y, &t, Store::direct());
    /// });
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let n = 600;
    /// let mut yb = dev.alloc_zeroed::<u32>(n)?;
    /// dev.compile(&kernel)?.launch_grid(2, (&mut yb, n as u32))?;
    /// let want: Vec<u32> = (0..n as u32).map(|i| (i / 64) * 1000 + i / 64 * 64).collect();
    /// assert_eq!(yb.to_vec()?, want);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
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
}

//! Loops beyond `for_range` and early exits: stepped `for`, `while`, `break_`, `continue_`
//! and `return_if`.

use super::KernelBuilder;
use crate::ir::entities::Loc;
use crate::ir::expr::Expr;
use crate::ir::ops::*;

impl KernelBuilder {
    /// Runs `body` for `i` in `start, start + step, ..` while `i < end`.
    ///
    /// The bounds and the step are evaluated once, before the first iteration. A constant
    /// step of 0 is a build error ([`VerifyErrorKind::ZeroStep`]); a step that is 0 at run
    /// time runs the body no time. The loop ends where the next counter would pass
    /// `u32::MAX`, so it never wraps.
    ///
    /// [`VerifyErrorKind::ZeroStep`]: crate::ir::VerifyErrorKind::ZeroStep
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // A block-stride loop: thread t writes elements t, t + 32, .. below n.
    /// let mut k = KernelBuilder::new("block_stride").block(32);
    /// let (y, n) = (k.output::<u32>("y"), k.scalar::<u32>("n"));
    /// k.for_range_step(index::thread_rank(), n, 32u32, |k, i| {
    ///     k.write(&y, &i, i.clone() * 3u32);
    /// });
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut yb = dev.alloc_zeroed::<u32>(100)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut yb, 100u32))?;
    /// assert_eq!(yb.to_vec()?, (0..100).map(|i| i * 3).collect::<Vec<u32>>());
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn for_range_step(
        &mut self,
        start: impl Into<Expr<u32>>,
        end: impl Into<Expr<u32>>,
        step: impl Into<Expr<u32>>,
        body: impl FnOnce(&mut Self, Expr<u32>),
    ) {
        let loc = Loc::caller();
        self.counted_loop(loc, start.into(), end.into(), Some(step.into()), body);
    }

    /// Runs `body` as long as `cond` holds; `cond` is evaluated before every iteration (it
    /// usually reads a variable the body sets).
    ///
    /// A condition that differs between threads makes the body's control non-uniform: no
    /// collective may run in it. On the simulator a loop that never ends is a step-limit
    /// error, not a hang.
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // The smallest power of two at least n, by doubling.
    /// let mut k = KernelBuilder::new("next_pow2").block(1);
    /// let (y, n) = (k.output::<u32>("y"), k.scalar::<u32>("n"));
    /// let p = k.var(1u32);
    /// k.while_(p.get().lt(n), |k| k.set(&p, p.get() * 2u32));
    /// k.write(&y, 0u32, p.get());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut yb = dev.alloc_zeroed::<u32>(1)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut yb, 100u32))?;
    /// assert_eq!(yb.to_vec()?, [128]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn while_(&mut self, cond: impl Into<Expr<bool>>, body: impl FnOnce(&mut Self)) {
        let loc = Loc::caller();
        let cond = self.expr(&cond.into());
        let body = self.region(body);
        self.push(OpKind::While { cond, body }, loc);
    }

    /// Leaves the innermost enclosing loop (`for_range`, `for_range_step`, `while_` or
    /// `tiles`). Outside a loop it is a build error naming the line
    /// ([`VerifyErrorKind::JumpOutsideLoop`]). A `break_` under a condition that differs
    /// between threads makes the loop's control non-uniform.
    ///
    /// [`VerifyErrorKind::JumpOutsideLoop`]: crate::ir::VerifyErrorKind::JumpOutsideLoop
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // The first i in 0..100 with i * i > rank.
    /// let mut k = KernelBuilder::new("isqrt").block(64);
    /// let y = k.output::<u32>("y");
    /// let found = k.var(100u32);
    /// k.for_range(0u32, 100u32, |k, i| {
    ///     k.if_((i.clone() * i.clone()).gt(index::thread_rank()), |k| {
    ///         k.set(&found, i.clone());
    ///         k.break_();
    ///     });
    /// });
    /// k.write(&y, index::thread_rank(), found.get());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut yb = dev.alloc_zeroed::<u32>(64)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut yb,))?;
    /// let want: Vec<u32> = (0..64u32).map(|t| (0..100).find(|i| i * i > t).unwrap()).collect();
    /// assert_eq!(yb.to_vec()?, want);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn break_(&mut self) {
        let loc = Loc::caller();
        self.push(OpKind::Break, loc);
    }

    /// Skips the rest of the innermost enclosing loop's body and goes on with its next
    /// iteration. Outside a loop it is a build error naming the line
    /// ([`VerifyErrorKind::JumpOutsideLoop`]); under a condition that differs between
    /// threads it makes the loop's control non-uniform.
    ///
    /// [`VerifyErrorKind::JumpOutsideLoop`]: crate::ir::VerifyErrorKind::JumpOutsideLoop
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // The sum of the numbers below n that are not multiples of 3.
    /// let mut k = KernelBuilder::new("skip3").block(1);
    /// let (y, n) = (k.output::<u32>("y"), k.scalar::<u32>("n"));
    /// let s = k.var(0u32);
    /// k.for_range(0u32, n, |k, i| {
    ///     k.if_((i.clone() % 3u32).eq(0u32), |k| k.continue_());
    ///     k.set(&s, s.get() + i);
    /// });
    /// k.write(&y, 0u32, s.get());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut yb = dev.alloc_zeroed::<u32>(1)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut yb, 10u32))?;
    /// assert_eq!(yb.to_vec()?, [1 + 2 + 4 + 5 + 7 + 8]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn continue_(&mut self) {
        let loc = Loc::caller();
        self.push(OpKind::Continue, loc);
    }

    /// The threads where `cond` holds leave the kernel here; the others go on.
    ///
    /// After a `return_if` whose condition differs between the threads of the block, no
    /// collective (load, store, reduction, scan, exchange..) and no `sync_block` may follow:
    /// the threads that left would not take part, which is a build error naming both lines
    /// ([`VerifyErrorKind::CollectiveAfterReturn`]). Writes by index, atomics and shared
    /// arrays' own accesses are per thread and may follow.
    ///
    /// [`VerifyErrorKind::CollectiveAfterReturn`]: crate::ir::VerifyErrorKind::CollectiveAfterReturn
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // A guard against a grid larger than the data: threads past n leave.
    /// let mut k = KernelBuilder::new("guarded").block(32);
    /// let (y, n) = (k.output::<u32>("y"), k.scalar::<u32>("n"));
    /// let i = index::block_index() * 32u32 + index::thread_rank();
    /// k.return_if(i.ge(n));
    /// k.write(&y, &i, i.clone() + 1u32);
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut yb = dev.alloc_zeroed::<u32>(64)?;
    /// dev.compile(&kernel)?.launch_grid(2, (&mut yb, 40u32))?;
    /// let want: Vec<u32> = (0..64).map(|i| if i < 40 { i + 1 } else { 0 }).collect();
    /// assert_eq!(yb.to_vec()?, want);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn return_if(&mut self, cond: impl Into<Expr<bool>>) {
        let loc = Loc::caller();
        let cond = self.expr(&cond.into());
        self.push(OpKind::ReturnIf { cond }, loc);
    }
}

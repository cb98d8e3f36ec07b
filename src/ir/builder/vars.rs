//! Per-thread variables: one register per thread, declared with an initial value and set
//! anywhere (in branches and loops), read as an expression.

use super::KernelBuilder;
use crate::ir::dtype::Element;
use crate::ir::entities::{DataId, Loc};
use crate::ir::expr::Expr;
use crate::ir::handles::Var;
use crate::ir::ops::*;

impl KernelBuilder {
    /// A new per-thread variable holding `init`, from here on.
    ///
    /// A variable is one register per thread. The verifier tracks how uniform it is: one set
    /// only to values uniform across the block, under conditions and loops uniform across the
    /// block, is uniform, so a branch on it may hold collectives and barriers; one set from
    /// thread-varying values, or under thread-varying control, is not. A variable declared
    /// inside a branch or loop holds a value there only: reading it after is an
    /// uninitialized read.
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// // The sum of x * i for i in 0..n, one thread per element.
    /// let mut k = KernelBuilder::new("weighted").block(32).items_per_thread(1);
    /// let (x, y, n) = (k.input::<f32>("x"), k.output::<f32>("y"), k.scalar::<u32>("n"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let acc = k.var(0.0f32);
    /// k.for_range(0u32, n, |k, i| {
    ///     k.set(&acc, acc.get() + t.item(0) * i.cast::<f32>());
    /// });
    /// let r = k.fill(acc.get());
    /// k.store_to(b, &y, &r, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&(0..32).map(|v| v as f32).collect::<Vec<f32>>())?;
    /// let mut yb = dev.alloc_zeroed::<f32>(32)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb, 4u32))?;
    /// assert_eq!(yb.to_vec()?, (0..32).map(|v| v as f32 * 6.0).collect::<Vec<f32>>());
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn var<T: Element>(&mut self, init: impl Into<Expr<T>>) -> Var<T> {
        let loc = Loc::caller();
        let id = DataId(self.ir.datas.len() as u32);
        self.ir.datas.push(DataDecl {
            dtype: T::DTYPE,
            items: 1,
            align: None,
            var: true,
            loc,
        });
        let expr = self.expr(&init.into());
        self.push(
            OpKind::SetItem {
                dst: id,
                item: 0,
                expr,
            },
            loc,
        );
        Var::new(id, self.lineage.id())
    }

    /// Sets `var` to `value` (evaluated before the write, so it may read `var`).
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // Odd threads double their rank, even ones keep it.
    /// let mut k = KernelBuilder::new("odd_double").block(32);
    /// let y = k.output::<u32>("y");
    /// let v = k.var(index::thread_rank());
    /// k.if_((index::thread_rank() % 2u32).eq(1u32), |k| k.set(&v, v.get() * 2u32));
    /// k.write(&y, index::thread_rank(), v.get());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut yb = dev.alloc_zeroed::<u32>(32)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut yb,))?;
    /// let want: Vec<u32> = (0..32).map(|t| if t % 2 == 1 { 2 * t } else { t }).collect();
    /// assert_eq!(yb.to_vec()?, want);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn set<T: Element>(&mut self, var: &Var<T>, value: impl Into<Expr<T>>) {
        let loc = Loc::caller();
        let expr = self.expr(&value.into());
        let dst = self.var_id(var);
        self.push(OpKind::SetItem { dst, item: 0, expr }, loc);
    }
}

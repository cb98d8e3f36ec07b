//! The fluent [`Pipeline`]: a straight load → map → store kernel in a few calls.

use super::{KernelBuilder, Load, Store};
use crate::ir::dtype::Element;
use crate::ir::expr::{Expr, index};
use crate::ir::handles::ThreadData;

impl KernelBuilder {
    /// Starts a straight pipeline: declares input `name` and a scalar `n` (the element count),
    /// and loads the block's tile of the input, with the valid count derived from `n`.
    ///
    /// ```
    /// use coopgraph::KernelBuilder;
    /// use coopgraph::runtime::Device;
    ///
    /// let kernel = KernelBuilder::new("square")
    ///     .block(64)
    ///     .load::<f32>("x")
    ///     .map(|v| v.clone() * v)
    ///     .store("y")
    ///     .build()?;
    /// let names: Vec<_> = kernel.signature().into_iter().map(|p| p.name).collect();
    /// assert_eq!(names, ["x", "n", "y"]);
    ///
    /// let dev = Device::sim();
    /// let n = 1000;
    /// let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    /// let xb = dev.upload(&xs)?;
    /// let mut yb = dev.alloc_zeroed::<f32>(n)?;
    /// dev.compile(&kernel)?.launch_over(n, (&xb, n as u32, &mut yb))?;
    /// assert_eq!(yb.to_vec()?, xs.iter().map(|x| x * x).collect::<Vec<_>>());
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
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
    ///
    /// ```
    /// use coopgraph::KernelBuilder;
    /// use coopgraph::runtime::Device;
    ///
    /// // Two maps in a row, the second changing the type.
    /// let kernel = KernelBuilder::new("halve_and_round")
    ///     .block(32)
    ///     .load::<i32>("x")
    ///     .map(|v| v / 2)
    ///     .map(|v| v.cast::<f64>())
    ///     .store("y")
    ///     .build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[-7i32, 7, 100])?;
    /// let mut yb = dev.alloc_zeroed::<f64>(3)?;
    /// dev.compile(&kernel)?.launch_over(3, (&xb, 3u32, &mut yb))?;
    /// assert_eq!(yb.to_vec()?, [-3.0, 3.0, 50.0]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
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
    ///
    /// ```
    /// use coopgraph::KernelBuilder;
    /// use coopgraph::runtime::Device;
    ///
    /// let kernel = KernelBuilder::new("before_and_after")
    ///     .block(32)
    ///     .load::<u32>("x")
    ///     .store("copy")
    ///     .map(|v| v + 1u32)
    ///     .store("next")
    ///     .build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[1u32, 2, 3])?;
    /// let (mut cb, mut nb) = (dev.alloc_zeroed::<u32>(3)?, dev.alloc_zeroed::<u32>(3)?);
    /// dev.compile(&kernel)?.launch_over(3, (&xb, 3u32, &mut cb, &mut nb))?;
    /// assert_eq!((cb.to_vec()?, nb.to_vec()?), (vec![1, 2, 3], vec![2, 3, 4]));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
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
    ///
    /// ```
    /// use coopgraph::ir::Reduce;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("copy_and_total")
    ///     .block(32)
    ///     .items_per_thread(1)
    ///     .load::<u32>("x")
    ///     .store("y")
    ///     .into_builder();
    /// // The pipeline declared `x` first; read it again for the total.
    /// let x = k.input::<u32>("x_again");
    /// let total = k.output::<u32>("total");
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let s = k.reduce(b, &t, Reduce::sum());
    /// k.store_to(b, &total, &s, Store::direct().valid_items(1u32));
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&(1..=32).collect::<Vec<u32>>())?;
    /// let (mut yb, mut tb) = (dev.alloc_zeroed::<u32>(32)?, dev.alloc_zeroed::<u32>(1)?);
    /// dev.compile(&kernel)?.launch_over(32, (&xb, 32u32, &mut yb, &xb, &mut tb))?;
    /// assert_eq!((yb.to_vec()?[31], tb.to_vec()?[0]), (32, 528));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn into_builder(self) -> KernelBuilder {
        self.k
    }
}

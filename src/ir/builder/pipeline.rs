//! The fluent [`Pipeline`]: a straight load → map → store kernel in a few calls.

use super::{KernelBuilder, Load, Store};
use crate::ir::dtype::Element;
use crate::ir::expr::{Expr, index};
use crate::ir::handles::ThreadData;

impl KernelBuilder {
    /// Starts a straight pipeline: declares input `name` and a scalar `n` (the element count),
    /// and loads the block's tile of the input, with the valid count derived from `n`.
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
    pub fn into_builder(self) -> KernelBuilder {
        self.k
    }

    /// Verifies, plans and prepares the kernel.
    pub fn build(self) -> Result<crate::Kernel, crate::Error> {
        self.k.build()
    }
}

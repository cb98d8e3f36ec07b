//! The kernel's options: block shape, items per thread, arrangement strictness, bounds checks.

use super::KernelBuilder;
use crate::ir::entities::Loc;
use crate::ir::ops::{BlockShape, Bounds};

impl KernelBuilder {
    /// Sets a 1-D block of `threads` threads.
    #[track_caller]
    pub fn block(self, threads: u32) -> Self {
        self.block_dims([threads, 1, 1])
    }

    /// Sets a block shape of up to three dimensions. Only 1-D blocks (`[n, 1, 1]`) can be
    /// built for now; others are reported by the verifier.
    #[track_caller]
    pub fn block_dims(mut self, dims: [u32; 3]) -> Self {
        self.ir.block = BlockShape {
            dims,
            loc: Loc::caller(),
        };
        self
    }

    /// Sets the default items per thread of payloads
    /// (1..=[`MAX_ITEMS_PER_THREAD`](crate::ir::ops::MAX_ITEMS_PER_THREAD)).
    #[track_caller]
    pub fn items_per_thread(mut self, items: u32) -> Self {
        self.ir.items_per_thread = items;
        self.ir.items_loc = Loc::caller();
        self
    }

    /// Makes an arrangement mismatch (a striped payload into a blocked consumer, say) a build
    /// error naming both ops, instead of an exchange through shared memory the planner adds.
    pub fn strict_arrangements(mut self, strict: bool) -> Self {
        self.ir.strict_arrangements = strict;
        self
    }

    /// Builds the kernel without bounds checks: no load or store is guarded by the length of
    /// its buffer, and the kernel takes no hidden length parameters. A copy kernel's guards
    /// cost one comparison per thread and tile, so this is for kernels whose every access is
    /// known to be in bounds and where even that counts. Such a kernel launches only through
    /// the unsafe [`Function::launch_unchecked`](crate::runtime::Function::launch_unchecked);
    /// the safe launches refuse it. It is another kernel for the cache (its key differs).
    ///
    /// ```
    /// use coopgraph::ir::Bounds;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("raw_copy").unchecked_bounds();
    /// let x = k.input::<f32>("x");
    /// let y = k.output::<f32>("y");
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::vectorize());
    /// k.store_to(b, &y, &t, Store::vectorize());
    /// let kernel = k.build()?;
    /// assert_eq!(kernel.ir().bounds, Bounds::Unchecked);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    pub fn unchecked_bounds(mut self) -> Self {
        self.ir.bounds = Bounds::Unchecked;
        self
    }

    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.ir.name
    }

    /// Elements one block handles per tile: threads × items per thread.
    pub fn block_tile(&self) -> u32 {
        self.ir
            .block_threads()
            .saturating_mul(self.ir.items_per_thread)
    }
}

//! Scatters: [`KernelBuilder::scatter`] and its controls.

use super::KernelBuilder;
use crate::ir::dtype::Element;
use crate::ir::entities::Loc;
use crate::ir::handles::{Group, ThreadData};
use crate::ir::ops::{Arrangement, OpKind};

/// The controls of a scatter: the arrangement the tile is read back in, flags that skip
/// items, and the value of positions nothing was scattered to.
#[derive(Debug, Clone, Copy)]
pub struct Scatter<T: Element> {
    to: Arrangement,
    flags: Option<ThreadData<u32>>,
    holes: Option<T>,
}

impl<T: Element> Scatter<T> {
    /// Reads the tile back in `to` (blocked, or striped over groups that tile the block).
    pub fn to(to: Arrangement) -> Self {
        Scatter {
            to,
            flags: None,
            holes: None,
        }
    }

    /// Reads the tile back blocked (CUB's `ScatterToBlocked`).
    pub fn blocked() -> Self {
        Self::to(Arrangement::Blocked)
    }

    /// Reads the tile back striped over groups of `threads` threads (CUB's
    /// `ScatterToStriped` with the block's threads).
    pub fn striped(threads: u32) -> Self {
        Self::to(Arrangement::Striped { threads })
    }

    /// Scatters only the items whose flag (`u32`, slot by slot with the items) is not 0.
    pub fn flags(mut self, flags: &ThreadData<u32>) -> Self {
        self.flags = Some(*flags);
        self
    }

    /// Positions nothing was scattered to read `value`, so the result holds a value at every
    /// position. Without it they hold none, and the result may only be read where a valid
    /// count bounds the read to positions the user knows were scattered to (a store's, a
    /// reduction's or a scan's `valid_items`): the verifier rejects other reads.
    pub fn holes(mut self, value: T) -> Self {
        self.holes = Some(value);
        self
    }
}

impl KernelBuilder {
    /// Scatters each item to the tile position its rank names (ranks past the tile, and items
    /// whose flag is 0, are skipped), then reads the tile back in the controls' arrangement:
    /// CUB's `ScatterToBlocked`/`ScatterToStriped` (guarded, and flagged). Block groups only.
    /// Positions no item was scattered to read the hole value, or hold no value without one
    /// (see [`Scatter::holes`]).
    ///
    /// A compaction: the kept items move to the front, the rest of the tile reads 0.
    ///
    /// ```
    /// use coopgraph::ir::{Scatter, index};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("evens_first").block(4).items_per_thread(2);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// // Position p keeps its item where p is even, at p / 2.
    /// let p = index::thread_rank() * 2u32 + index::item();
    /// let rank = k.fill(p.clone() / 2u32);
    /// let keep = k.fill((p % 2u32).eq(0u32).select(1u32, 0u32));
    /// let s = k.scatter(b, &t, &rank, Scatter::blocked().flags(&keep).holes(0));
    /// k.store_to(b, &y, &s, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let f = dev.compile(&kernel)?;
    /// let xs = dev.upload(&[10u32, 11, 12, 13, 14, 15, 16, 17])?;
    /// let mut ys = dev.alloc_zeroed::<u32>(8)?;
    /// f.launch_grid(1, (&xs, &mut ys))?;
    /// assert_eq!(ys.to_vec()?, [10, 12, 14, 16, 0, 0, 0, 0]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn scatter<T: Element>(
        &mut self,
        group: impl Into<Group>,
        src: &ThreadData<T>,
        ranks: &ThreadData<u32>,
        controls: Scatter<T>,
    ) -> ThreadData<T> {
        let loc = Loc::caller();
        let group = self.group_id(group.into());
        let dst = self.thread_data_n::<T>(src.items);
        let src_id = self.data_id(src);
        let ranks_id = self.data_id(ranks);
        let flags_id = controls.flags.map(|f| self.data_id(&f));
        self.push(
            OpKind::Scatter {
                group,
                src: src_id,
                ranks: ranks_id,
                flags: flags_id,
                dst: dst.id,
                to: controls.to,
                holes: controls.holes.map(|v| v.to_bits()),
            },
            loc,
        );
        dst
    }
}

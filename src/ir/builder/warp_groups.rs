//! Groups of whole warps: the optional group's body (`if_member`), which only the warps in a
//! group of a partition run.

use super::KernelBuilder;
use crate::ir::entities::Loc;
use crate::ir::expr::index;
use crate::ir::handles::Group;
use crate::ir::ops::{GroupKind, OpKind};

impl KernelBuilder {
    /// Runs `body` on the threads that belong to a group of `group` (CCCL's optional group):
    /// for a partition of the block into groups of whole warps whose count does not divide
    /// the block's warps, the warps left over skip it; inside, `group`'s collectives are
    /// legal (outside, the verifier reports a collective over such a partition, which some
    /// threads would run in no group). The body takes the group back. For the block, a
    /// tile, or a partition with no warps left over, every thread is a member and the body
    /// runs unconditionally.
    ///
    /// ```
    /// use coopgraph::ir::{index, Reduce};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load};
    ///
    /// // Groups of 2 warps in a block of 5 warps: warp 4 is in no group. Each group's
    /// // first thread writes its group's sum.
    /// let mut k = KernelBuilder::new("optional").block(160).items_per_thread(1);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let pairs = b.group_by_warps(2);
    /// let t = k.load_from(b, &x, Load::direct());
    /// k.if_member(&pairs, |k, g| {
    ///     let s = k.reduce(g, &t, Reduce::sum());
    ///     k.if_(g.thread_rank().eq(0u32), |k| k.write(&y, g.meta_group_rank(), s.item(0)));
    /// });
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&vec![1u32; 160])?;
    /// let mut yb = dev.alloc_zeroed::<u32>(3)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// assert_eq!(yb.to_vec()?, [64, 64, 0]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn if_member(&mut self, group: &Group, body: impl FnOnce(&mut Self, Group)) {
        let loc = Loc::caller();
        let g = *group;
        let warps = match g.kind {
            GroupKind::Warps { warps } if warps > 0 => warps,
            _ => return body(self, g),
        };
        let block_warps = self.ir.block_threads() / 32;
        let members = block_warps / warps * warps;
        if members == block_warps && self.ir.block_threads().is_multiple_of(32) {
            return body(self, g);
        }
        // The verifier knows this condition's form: a bound on the warp's rank that is a
        // multiple of the group's warps keeps whole groups.
        let cond = self.expr(&index::warp_rank().lt(members));
        let then = self.region(|k| body(k, g));
        self.push(
            OpKind::If {
                cond,
                then,
                otherwise: None,
            },
            loc,
        );
    }
}

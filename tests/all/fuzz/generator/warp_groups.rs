//! Groups of whole warps: a reduction over groups of 1 to 4 warps, inside `if_member` (always
//! where the partition leaves warps over, sometimes where it does not), with more statements
//! after it in the members' region.

use super::ops::handle;
use super::{Gen, WARP};
use crate::fuzz::types::with_dtype;
use coopgraph::KernelBuilder;

/// Named barriers a block has besides the block's own.
const NAMED_BARRIERS: u32 = 15;

impl Gen {
    pub fn op_warp_groups(&mut self, k: &mut KernelBuilder) -> bool {
        if !self.warps_ok() || !self.block_uniform() || self.cx().callback {
            return false;
        }
        let block_warps = self.t / 32;
        // Sizes whose barriers fit beside those the kernel's groups already take.
        let sizes: Vec<u32> = (1..=block_warps.min(4))
            .filter(|&n| {
                let mut parts = k.ir().warp_partitions();
                if n > 1 && n < block_warps && !parts.iter().any(|&(w, _)| w == n) {
                    parts.push((n, block_warps / n));
                }
                parts.iter().map(|&(_, g)| g).sum::<u32>() <= NAMED_BARRIERS
            })
            .collect();
        let srcs = self.full(|_| true);
        if sizes.is_empty() || srcs.is_empty() {
            return false;
        }
        let n = self.rng.pick(&sizes);
        let d = self.datas[self.rng.pick(&srcs)].clone();
        let g = k.this_block().group_by_warps(n);
        // The members' branch (`warp_rank < c`) is uniform over warps, as the verifier
        // counts it.
        let mut c = self.child(WARP);
        c.acc = self.accumulator_for(k, &c);
        let more = self.region_size() - 1;
        k.if_member(&g, |k, g| {
            self.in_region(k, c, |g2, k| {
                with_dtype!(d.dt, T => g2.reduce_t::<T>(k, g, handle::<T>(&d), d.arr));
                g2.statements(k, more);
            });
        });
        true
    }
}

/// The differential run's seeds make reductions over groups of whole warps, over partitions
/// that leave warps over among them, and kernels that build with them.
#[test]
fn the_generator_makes_warp_group_reductions() {
    use coopgraph::ir::ops::OpKind;
    let (mut any, mut partial, mut built) = (0, 0, 0);
    for seed in 0xC00B_6A4Bu64..0xC00B_6A4B + 600 {
        let case = super::generate(&super::Spec::of(seed));
        let ir = &case.ir;
        let block_warps = ir.block_threads() / 32;
        let sizes: Vec<u32> = (ir.ops.iter())
            .filter_map(|op| match &op.kind {
                OpKind::Reduce(r) => ir.groups[r.group.index()].kind.whole_warps(),
                _ => None,
            })
            .collect();
        if sizes.is_empty() {
            continue;
        }
        any += 1;
        if sizes.iter().any(|&n| !block_warps.is_multiple_of(n.max(1))) {
            partial += 1;
        }
        if case.kernel.is_ok() {
            built += 1;
        }
    }
    eprintln!(
        "warp-group reductions in {any} of 600 cases, {partial} over partitions with warps left over, {built} built"
    );
    assert!(
        any >= 10 && partial >= 3 && built >= 10,
        "{any} {partial} {built}"
    );
}

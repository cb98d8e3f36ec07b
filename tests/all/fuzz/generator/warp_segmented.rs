//! Segmented warp reductions (head or tail flags), head-segmented warp scans and batched warp
//! reductions, over logical warps of any width whose threads all run the current code, with
//! flags from the kernel's values, composed with what came before and after. Segmented ones
//! take blocks of any size (the last logical warp may be partial); batched ones whole logical
//! warps.

use super::Gen;
use super::expr::Leaves;
use super::ops::handle;
use crate::fuzz::types::{Fz, with_dtype};
use coopgraph::KernelBuilder;
use coopgraph::ir::{BatchOutput, Element, Group, Scan, Segments};

impl Gen {
    pub fn op_warp_segmented(&mut self, k: &mut KernelBuilder) -> bool {
        if self.cx().callback {
            return false;
        }
        let batched = self.rng.pct(50);
        let t = self.t;
        let widths: Vec<u32> = [1u32, 2, 4, 8, 16, 32]
            .into_iter()
            .filter(|&w| self.covers(w) && (!batched || t.is_multiple_of(w)))
            .collect();
        let srcs = self.full(|d| {
            d.rank0.is_none()
                && if batched {
                    d.k.is_power_of_two()
                } else {
                    d.k == 1
                }
        });
        if widths.is_empty() || srcs.is_empty() {
            return false;
        }
        let w = self.rng.pick(&widths);
        let tile: Group = k.this_warp().group_by(w);
        let d = self.datas[self.rng.pick(&srcs)].clone();
        self.datas
            .iter_mut()
            .for_each(|x| x.used |= x.h.id() == d.h.id());
        let op = self.pick_reduce_op(d.dt.is_float());
        with_dtype!(d.dt, T => {
            let src = handle::<T>(&d);
            let r = if batched {
                let output = if self.rng.pct(50) { BatchOutput::Blocked } else { BatchOutput::Striped };
                k.reduce_batched(tile, &src, op.reduce::<T>(), output)
            } else {
                let lv = Leaves::varying();
                let flag = self.cond(&lv, 1).select(1u32, 0u32);
                let flags = k.thread_data_n::<u32>(1);
                k.set_item(&flags, 0, flag);
                match self.rng.below(4) {
                    0 => k.segmented_reduce(tile, &src, &flags, Segments::Heads, op.reduce::<T>()),
                    1 => k.segmented_reduce(tile, &src, &flags, Segments::Tails, op.reduce::<T>()),
                    2 => k.segmented_scan(tile, &src, &flags, Scan::inclusive(op.reduce::<T>())),
                    _ => {
                        let init = self.uniform_value_of::<T>(k);
                        let c = Scan::exclusive(op.reduce::<T>()).initial_value(init);
                        k.segmented_scan(tile, &src, &flags, c)
                    }
                }
            };
            let items = r.items();
            self.add(T::data(r), T::DTYPE, items, None);
        });
        true
    }
}

/// The generator composes segmented and batched warp primitives with its other ops: some of
/// its kernels hold each (their ballots and butterfly shuffles, recorded at this file's lines).
#[test]
fn generated_kernels_hold_segmented_and_batched_warp_primitives() {
    use coopgraph::ir::ops::{LaneOp, OpKind};
    let (mut segmented, mut batched) = (0, 0);
    for i in 0..1500u64 {
        let case = super::generate(&super::Spec::of(i.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        let here = |op: &coopgraph::ir::ops::OpData, lane: LaneOp| {
            op.loc.file.ends_with("warp_segmented.rs")
                && matches!(&op.kind, OpKind::Lanes(l) if l.op == lane)
        };
        let ops = &case.ir.ops;
        segmented += usize::from(ops.iter().any(|op| here(op, LaneOp::Ballot)));
        batched += usize::from(ops.iter().any(|op| here(op, LaneOp::ShflXor)));
    }
    assert!(
        segmented >= 3 && batched >= 3,
        "{segmented} segmented and {batched} batched warp primitives in 1500 generated kernels"
    );
}

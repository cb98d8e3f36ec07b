//! Lane collectives: shuffles of every dtype (constant lanes in and past the tile, and lanes
//! that vary by thread), votes, ballots, matches and tile barriers, over tiles of any width
//! whose threads all run the current code, in blocks of any size (a block's last tile may be
//! partial). Each result becomes a one-item payload later ops read.

use super::Gen;
use super::expr::Leaves;
use crate::fuzz::types::{Fz, with_dtype};
use coopgraph::KernelBuilder;
use coopgraph::ir::{Element, Expr, Group};

impl Gen {
    pub fn op_lanes(&mut self, k: &mut KernelBuilder) -> bool {
        if self.cx().callback {
            return false;
        }
        let widths: Vec<u32> = [1u32, 2, 4, 8, 16, 32]
            .into_iter()
            .filter(|&w| self.covers(w))
            .collect();
        if widths.is_empty() {
            return false;
        }
        let w = self.rng.pick(&widths);
        let tile: Group = if w == 32 && self.rng.pct(50) {
            k.this_warp().into()
        } else {
            k.this_warp().group_by(w)
        };
        let lv = Leaves::varying();
        match self.rng.weighted(&[50, 20, 20, 10]) {
            0 => {
                let dt = self.dtype();
                with_dtype!(dt, T => {
                    let v = self.expr::<T>(&lv, 2);
                    let lane: Expr<u32> = match self.rng.below(3) {
                        0 => Expr::lit(self.rng.below(40) as u32),
                        1 => Expr::lit(self.rng.below(u64::from(w)) as u32),
                        _ => self.expr::<u32>(&lv, 1),
                    };
                    let r = match self.rng.below(4) {
                        0 => k.shfl(tile, v, lane),
                        1 => k.shfl_up(tile, v, lane),
                        2 => k.shfl_down(tile, v, lane),
                        _ => k.shfl_xor(tile, v, lane),
                    };
                    let out = k.thread_data_n::<T>(1);
                    k.set_item(&out, 0, r);
                    self.add(T::data(out), T::DTYPE, 1, None);
                });
            }
            1 => {
                let p = self.cond(&lv, 1);
                let r: Expr<u32> = match self.rng.below(3) {
                    0 => k.any(tile, p).select(1u32, 0u32),
                    1 => k.all(tile, p).select(1u32, 0u32),
                    _ => k.ballot(tile, p),
                };
                let out = k.thread_data_n::<u32>(1);
                k.set_item(&out, 0, r);
                self.add(<u32 as Fz>::data(out), coopgraph::ir::DType::U32, 1, None);
            }
            2 => {
                let dt = self.dtype();
                let r: Expr<u32> = with_dtype!(dt, T => {
                    // Few distinct keys, so tiles share some.
                    let key = if self.rng.pct(60) {
                        (self.expr::<u32>(&lv, 1) % 3u32).cast::<T>()
                    } else {
                        self.expr::<T>(&lv, 1)
                    };
                    if self.rng.pct(50) { k.match_any(tile, key) } else { k.match_all(tile, key) }
                });
                let out = k.thread_data_n::<u32>(1);
                k.set_item(&out, 0, r);
                self.add(<u32 as Fz>::data(out), coopgraph::ir::DType::U32, 1, None);
            }
            _ => k.sync(tile),
        }
        true
    }
}

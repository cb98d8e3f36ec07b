//! Lane collectives: shuffles of every dtype (constant lanes in and past the tile, and lanes
//! that vary by thread), votes, ballots, matches and tile barriers, over tiles of any width
//! whose threads all run the current code, in blocks of any size (a block's last tile may be
//! partial). Each result becomes a one-item payload later ops read. Partitions (coalesced
//! groups anywhere, even in divergent code; labeled and binary partitions of tiles or of
//! coalesced groups) are used right where they are made, by a few ops in a row.

use super::Gen;
use super::expr::Leaves;
use crate::fuzz::types::{Fz, with_dtype};
use coopgraph::KernelBuilder;
use coopgraph::ir::{Element, Expr, Group, LaneGroup, Partition};

impl Gen {
    pub fn op_lanes(&mut self, k: &mut KernelBuilder) -> bool {
        if self.cx().callback {
            return false;
        }
        if self.rng.pct(30) {
            return self.op_partition(k);
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

    /// A partition and a few ops over it, in a row.
    fn op_partition(&mut self, k: &mut KernelBuilder) -> bool {
        let lv = Leaves::varying();
        let coalesced = k.coalesced_threads();
        let widths: Vec<u32> = [1u32, 2, 4, 8, 16, 32]
            .into_iter()
            .filter(|&w| self.covers(w))
            .collect();
        let parent: LaneGroup = if widths.is_empty() || self.rng.pct(50) {
            coalesced.into()
        } else {
            k.this_warp().group_by(self.rng.pick(&widths)).into()
        };
        let p: Partition = match self.rng.below(3) {
            0 => coalesced,
            1 => {
                let key = (self.expr::<u32>(&lv, 1) % 3u32).cast::<u64>();
                k.labeled_partition(parent, key)
            }
            _ => {
                let c = self.cond(&lv, 1);
                k.binary_partition(parent, c)
            }
        };
        let info = p.thread_rank() + p.num_threads() * 64u32;
        let out = k.thread_data_n::<u32>(1);
        k.set_item(&out, 0, info);
        self.add(<u32 as Fz>::data(out), coopgraph::ir::DType::U32, 1, None);
        for _ in 0..1 + self.rng.below(3) {
            let dt = self.dtype();
            with_dtype!(dt, T => {
                let v = self.expr::<T>(&lv, 1);
                let lane: Expr<u32> = if self.rng.pct(50) {
                    Expr::lit(self.rng.below(34) as u32)
                } else {
                    self.expr::<u32>(&lv, 1)
                };
                let r: Expr<T> = match self.rng.below(6) {
                    0 => k.shfl(p, v, lane),
                    1 => k.shfl_up(p, v, lane),
                    2 => k.shfl_down(p, v, lane),
                    3 => k.shfl_xor(p, v, lane),
                    4 => {
                        let c = self.cond(&lv, 1);
                        k.ballot(p, c).cast::<T>()
                    }
                    _ => k.match_any(p, v).cast::<T>(),
                };
                let out = k.thread_data_n::<T>(1);
                k.set_item(&out, 0, r);
                self.add(T::data(out), T::DTYPE, 1, None);
            });
        }
        true
    }
}

//! Tile methods: shuffles, votes, matches, tile barriers and `invoke_one` over a tile (a
//! logical warp of 1 to 32 threads), as Cooperative Groups' `thread_block_tile`. Member masks
//! come from the tile, never from the user: the threads of the tile that exist.

use super::KernelBuilder;
use crate::ir::dtype::Element;
use crate::ir::entities::{DataId, ExprId, Loc};
use crate::ir::expr::{Expr, ExprKind};
use crate::ir::handles::{Group, LaneGroup, Partition};
use crate::ir::identity::Table;
use crate::ir::ops::*;

impl KernelBuilder {
    /// The value `value` holds on the thread of tile rank `src % width`, for every thread of
    /// the tile `g` (CG's `shfl`). In the block's last tile, where the width does not divide
    /// the block, a rank the tile does not have gives the thread its own value. Every dtype
    /// moves (64-bit values as two halves).
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // Each tile of 8 threads broadcasts its rank-3 thread's value.
    /// let mut k = KernelBuilder::new("broadcast3").block(64);
    /// let y = k.output::<u32>("y");
    /// let tile = k.this_warp().group_by(8);
    /// let t = index::thread_rank();
    /// let v = k.shfl(tile, t.clone() * 10u32, 3u32);
    /// k.write(&y, t, v);
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut yb = dev.alloc_zeroed::<u32>(64)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut yb,))?;
    /// let want: Vec<u32> = (0..64).map(|t| (t / 8 * 8 + 3) * 10).collect();
    /// assert_eq!(yb.to_vec()?, want);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn shfl<T: Element>(
        &mut self,
        g: impl Into<LaneGroup>,
        value: impl Into<Expr<T>>,
        src: impl Into<Expr<u32>>,
    ) -> Expr<T> {
        self.lane_shuffle(g.into(), LaneOp::Shfl, value.into(), src.into())
    }

    /// The value `value` holds on tile rank `rank - delta` (CG's `shfl_up`); a thread whose
    /// rank is below `delta` gets its own value.
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // An inclusive prefix sum over each warp, by doubling steps.
    /// let mut k = KernelBuilder::new("warp_prefix").block(32);
    /// let y = k.output::<u32>("y");
    /// let warp = k.this_warp();
    /// let lane = index::lane();
    /// let acc = k.var(1u32);
    /// for d in [1u32, 2, 4, 8, 16] {
    ///     let up = k.shfl_up(warp, acc.get(), d);
    ///     k.set(&acc, acc.get() + lane.ge(d).select(up, 0u32));
    /// }
    /// k.write(&y, lane, acc.get());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut yb = dev.alloc_zeroed::<u32>(32)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut yb,))?;
    /// assert_eq!(yb.to_vec()?, (1..=32).collect::<Vec<u32>>());
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn shfl_up<T: Element>(
        &mut self,
        g: impl Into<LaneGroup>,
        value: impl Into<Expr<T>>,
        delta: impl Into<Expr<u32>>,
    ) -> Expr<T> {
        self.lane_shuffle(g.into(), LaneOp::ShflUp, value.into(), delta.into())
    }

    /// The value `value` holds on tile rank `rank + delta` (CG's `shfl_down`); a thread for
    /// which that passes the tile's last thread gets its own value.
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // The sum of each tile of 16 (ranks 0..16 of a tile hold 1..=16), at its rank 0.
    /// let mut k = KernelBuilder::new("tile_sum").block(32);
    /// let y = k.output::<u32>("y");
    /// let tile = k.this_warp().group_by(16);
    /// let acc = k.var(tile.thread_rank() + 1u32);
    /// for d in [8u32, 4, 2, 1] {
    ///     let down = k.shfl_down(tile, acc.get(), d);
    ///     k.set(&acc, acc.get() + down);
    /// }
    /// k.write(&y, index::thread_rank(), acc.get());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut yb = dev.alloc_zeroed::<u32>(32)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut yb,))?;
    /// let ys = yb.to_vec()?;
    /// assert_eq!((ys[0], ys[16]), (136, 136));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn shfl_down<T: Element>(
        &mut self,
        g: impl Into<LaneGroup>,
        value: impl Into<Expr<T>>,
        delta: impl Into<Expr<u32>>,
    ) -> Expr<T> {
        self.lane_shuffle(g.into(), LaneOp::ShflDown, value.into(), delta.into())
    }

    /// The value `value` holds on tile rank `rank ^ (mask % width)` (CG's `shfl_xor`, a
    /// butterfly step).
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // The maximum of each warp at every lane, by butterfly steps, in f64.
    /// let mut k = KernelBuilder::new("warp_max").block(32);
    /// let y = k.output::<f64>("y");
    /// let warp = k.this_warp();
    /// let lane = index::lane();
    /// let m = k.var(((lane.clone() * 7u32) % 32u32).cast::<f64>());
    /// for mask in [16u32, 8, 4, 2, 1] {
    ///     let other = k.shfl_xor(warp, m.get(), mask);
    ///     k.set(&m, m.get().max(other));
    /// }
    /// k.write(&y, lane, m.get());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut yb = dev.alloc_zeroed::<f64>(32)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut yb,))?;
    /// assert_eq!(yb.to_vec()?, [31.0; 32]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn shfl_xor<T: Element>(
        &mut self,
        g: impl Into<LaneGroup>,
        value: impl Into<Expr<T>>,
        mask: impl Into<Expr<u32>>,
    ) -> Expr<T> {
        self.lane_shuffle(g.into(), LaneOp::ShflXor, value.into(), mask.into())
    }

    /// Whether `pred` holds on any thread of the tile `g` (CG's `any`).
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // Per tile of 4: does any thread hold a multiple of 7; do all hold an even number;
    /// // which ranks hold a multiple of 3.
    /// let mut k = KernelBuilder::new("votes").block(16);
    /// let (y, z, w) = (k.output::<u32>("y"), k.output::<u32>("z"), k.output::<u32>("w"));
    /// let quad = k.this_warp().group_by(4);
    /// let t = index::thread_rank();
    /// let any = k.any(quad, (t.clone() % 7u32).eq(0u32));
    /// let all = k.all(quad, (t.clone() % 2u32).eq(0u32));
    /// let bits = k.ballot(quad, (t.clone() % 3u32).eq(0u32));
    /// k.write(&y, &t, any.select(1u32, 0u32));
    /// k.write(&z, &t, all.select(1u32, 0u32));
    /// k.write(&w, &t, bits);
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let (mut yb, mut zb, mut wb) = (dev.alloc_zeroed::<u32>(16)?, dev.alloc_zeroed::<u32>(16)?,
    ///     dev.alloc_zeroed::<u32>(16)?);
    /// dev.compile(&kernel)?.launch_grid(1, (&mut yb, &mut zb, &mut wb))?;
    /// // Tiles 0..4 hold 0..4, 4..8, 8..12, 12..16: multiples of 7 are 0, 7 and 14.
    /// assert_eq!(yb.to_vec()?[..], [[1u32; 4], [1; 4], [0; 4], [1; 4]].concat());
    /// assert_eq!(zb.to_vec()?, [0; 16]);
    /// // Multiples of 3: 0 and 3 (bits 0, 3), 6 (bit 2), 9 (bit 1), 12 and 15 (bits 0, 3).
    /// assert_eq!(wb.to_vec()?[..], [[9u32; 4], [4; 4], [2; 4], [9; 4]].concat());
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn any(&mut self, g: impl Into<LaneGroup>, pred: impl Into<Expr<bool>>) -> Expr<bool> {
        self.vote(g.into(), LaneOp::Any, pred.into()).ne(0u32)
    }

    /// Whether `pred` holds on every thread of the tile `g` (CG's `all`); see
    /// [`KernelBuilder::any`].
    #[track_caller]
    pub fn all(&mut self, g: impl Into<LaneGroup>, pred: impl Into<Expr<bool>>) -> Expr<bool> {
        self.vote(g.into(), LaneOp::All, pred.into()).ne(0u32)
    }

    /// The ranks of the tile `g` on which `pred` holds, as bits (bit `i` for rank `i`; CG's
    /// `ballot`); see [`KernelBuilder::any`].
    #[track_caller]
    pub fn ballot(&mut self, g: impl Into<LaneGroup>, pred: impl Into<Expr<bool>>) -> Expr<u32> {
        self.vote(g.into(), LaneOp::Ballot, pred.into())
    }

    /// The ranks of the tile `g` whose `value` has the same bits as this thread's, as bits
    /// (bit `i` for rank `i`; CG's `match_any`, PTX's `match.any.sync`). On sm_90 the
    /// instruction issues to the address-divergence unit at a fraction of a ballot's rate:
    /// for values of a few bits, one [`ballot`](Self::ballot) a bit is faster (the radix
    /// rank matches its digits so).
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // Threads of a warp keyed by rank % 3: who shares my key, and do all share one?
    /// let mut k = KernelBuilder::new("keys").block(32);
    /// let (y, z) = (k.output::<u32>("y"), k.output::<u32>("z"));
    /// let warp = k.this_warp();
    /// let t = index::lane();
    /// let same = k.match_any(warp, (t.clone() % 3u32).cast::<i64>());
    /// let all = k.match_all(warp, 5u64);
    /// k.write(&y, &t, same);
    /// k.write(&z, &t, all);
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let (mut yb, mut zb) = (dev.alloc_zeroed::<u32>(32)?, dev.alloc_zeroed::<u32>(32)?);
    /// dev.compile(&kernel)?.launch_grid(1, (&mut yb, &mut zb))?;
    /// let key0: u32 = (0..32).filter(|t| t % 3 == 0).map(|t| 1 << t).sum();
    /// assert_eq!(yb.to_vec()?[0], key0);
    /// assert_eq!(zb.to_vec()?, [u32::MAX; 32]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn match_any<T: Element>(
        &mut self,
        g: impl Into<LaneGroup>,
        value: impl Into<Expr<T>>,
    ) -> Expr<u32> {
        let value = self.expr(&value.into());
        self.lane_op(g.into(), LaneOp::MatchAny, Some(value), true)
    }

    /// The tile's ranks as bits (bits `0..n` for a tile of `n` threads) where every thread of
    /// the tile `g` holds the same bits in `value`, else 0 (CG's `match_all`, whose predicate
    /// is this mask being non-zero); see [`KernelBuilder::match_any`].
    #[track_caller]
    pub fn match_all<T: Element>(
        &mut self,
        g: impl Into<LaneGroup>,
        value: impl Into<Expr<T>>,
    ) -> Expr<u32> {
        let value = self.expr(&value.into());
        self.lane_op(g.into(), LaneOp::MatchAll, Some(value), true)
    }

    /// A barrier of the group `g`: for a tile, its threads' shared and global accesses before
    /// it happen before those after it (`bar.warp.sync` with the tile's mask); for the block,
    /// [`KernelBuilder::sync_block`]; for groups of whole warps
    /// ([`Group::group_by_warps`](crate::ir::Group::group_by_warps)), each group's own named
    /// barrier (`bar.sync id, 32 * warps`, counted with the named barriers the groups'
    /// collectives take). Only a group's members may reach it: where the partition leaves
    /// warps over, inside [`KernelBuilder::if_member`] (else the verifier reports
    /// [`VerifyErrorKind::CollectiveOutsideMembership`](crate::ir::VerifyErrorKind::CollectiveOutsideMembership)).
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // Each tile of 8 reverses its values through shared memory.
    /// let mut k = KernelBuilder::new("reverse8").block(64);
    /// let y = k.output::<u32>("y");
    /// let tile = k.this_warp().group_by(8);
    /// let t = index::thread_rank();
    /// let s = k.shared_array::<u32>(64);
    /// k.shared_write(&s, &t, t.clone() * 2u32);
    /// k.sync(tile);
    /// let mirror = tile.meta_group_rank() * 8u32 + (7u32 - tile.thread_rank());
    /// k.write(&y, &t, s.read(mirror));
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut yb = dev.alloc_zeroed::<u32>(64)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut yb,))?;
    /// let want: Vec<u32> = (0..64).map(|t| (t / 8 * 8 + 7 - t % 8) * 2).collect();
    /// assert_eq!(yb.to_vec()?, want);
    ///
    /// // Each group of 2 warps of a block of 5 warps reverses its 64 values; warp 4 is in no
    /// // group and writes nothing.
    /// let mut k = KernelBuilder::new("reverse64").block(160);
    /// let y = k.output::<u32>("y");
    /// let pairs = k.this_block().group_by_warps(2);
    /// let s = k.shared_array::<u32>(160);
    /// k.if_member(&pairs, |k, g| {
    ///     k.shared_write(&s, &t, t.clone() * 2u32);
    ///     k.sync(g);
    ///     let mirror = g.meta_group_rank() * 64u32 + (63u32 - g.thread_rank());
    ///     k.write(&y, &t, s.read(mirror));
    /// });
    /// let kernel = k.build()?;
    /// let mut yb = dev.alloc_zeroed::<u32>(160)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut yb,))?;
    /// let want: Vec<u32> =
    ///     (0..160).map(|t| if t < 128 { (t / 64 * 64 + 63 - t % 64) * 2 } else { 0 }).collect();
    /// assert_eq!(yb.to_vec()?, want);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn sync(&mut self, g: impl Into<LaneGroup>) {
        match g.into() {
            LaneGroup::Group(Group {
                kind: GroupKind::Block,
                ..
            }) => {
                self.push(OpKind::SyncBlock, Loc::caller());
            }
            g => {
                self.lane_op(g, LaneOp::Sync, None, false);
            }
        }
    }

    /// Runs `f` on the group's rank-0 thread only and gives its result to every thread of
    /// the group (CG's `invoke_one_broadcast`): a tile broadcasts it with a shuffle, the
    /// block through shared memory between two block barriers. Ops in `f` run under a
    /// condition that varies within the group, so collectives of the group there are
    /// reported by the verifier.
    ///
    /// ```
    /// use coopgraph::ir::{Atomic, index};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // One atomic per tile of 16 reserves 16 slots; each thread writes into its own slot.
    /// let mut k = KernelBuilder::new("reserve").block(48);
    /// let (counter, slots) = (k.output::<u32>("counter"), k.output::<u32>("slots"));
    /// let tile = k.this_warp().group_by(16);
    /// let base = k.invoke_one(tile, |k| k.atomic(&counter, 0u32, Atomic::add(16u32)));
    /// k.write(&slots, base + tile.thread_rank(), index::thread_rank());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let (mut cb, mut sb) = (dev.alloc_zeroed::<u32>(1)?, dev.alloc_zeroed::<u32>(48)?);
    /// dev.compile(&kernel)?.launch_grid(1, (&mut cb, &mut sb))?;
    /// assert_eq!(cb.to_vec()?, [48]);
    /// let mut got = sb.to_vec()?;
    /// got.sort();
    /// assert_eq!(got, (0..48).collect::<Vec<u32>>());
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn invoke_one<T: Element>(
        &mut self,
        g: impl Into<LaneGroup>,
        f: impl FnOnce(&mut Self) -> Expr<T>,
    ) -> Expr<T> {
        let g = g.into();
        let result = self.var(T::default());
        self.if_(g.thread_rank().eq(0u32), |k| {
            let v = f(k);
            k.set(&result, v);
        });
        match g {
            LaneGroup::Group(Group {
                kind: GroupKind::LogicalWarp { .. },
                ..
            })
            | LaneGroup::Partition(_) => self.shfl(g, result.get(), 0u32),
            LaneGroup::Group(g) => {
                let cell = self.shared_array::<T>(1);
                self.if_(g.thread_rank().eq(0u32), |k| {
                    k.shared_write(&cell, 0u32, result.get());
                });
                self.sync_block();
                self.set(&result, cell.read(0u32));
                // No thread writes the cell again before every thread has read it.
                self.sync_block();
                result.get()
            }
        }
    }

    /// `combine` of `value` over every thread of the group `g` (a tile or a partition), at
    /// every thread of it (CG's `reduce(group, value, op)`): a tree of `shfl_down` steps
    /// (`log2` of the tile's width; five for a partition) whose result rank 0 broadcasts.
    /// `combine` must be associative and commutative; floats combine in the tree's order,
    /// the same on every run. In the block's last tile, and in a partition, only the
    /// threads that exist take part.
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // Per tile of 8 threads of a block of 20: the sum and the maximum of t * t.
    /// let mut k = KernelBuilder::new("tile_reduce").block(20);
    /// let (s, m) = (k.output::<u32>("s"), k.output::<u32>("m"));
    /// let tile = k.this_warp().group_by(8);
    /// let t = index::thread_rank();
    /// let sq = t.clone() * t.clone();
    /// let sum = k.reduce_lanes(tile, sq.clone(), |a, b| a + b);
    /// let max = k.reduce_lanes(tile, sq, |a, b| a.max(b));
    /// k.write(&s, &t, sum);
    /// k.write(&m, &t, max);
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let (mut sb, mut mb) = (dev.alloc_zeroed::<u32>(20)?, dev.alloc_zeroed::<u32>(20)?);
    /// dev.compile(&kernel)?.launch_grid(1, (&mut sb, &mut mb))?;
    /// let (ss, ms) = (sb.to_vec()?, mb.to_vec()?);
    /// // Tiles hold 0..8, 8..16 and 16..20.
    /// assert_eq!([ss[0], ss[8], ss[19]], [140, 1100, 1230]);
    /// assert_eq!([ms[0], ms[8], ms[19]], [49, 225, 361]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn reduce_lanes<T: Element>(
        &mut self,
        g: impl Into<LaneGroup>,
        value: impl Into<Expr<T>>,
        combine: impl Fn(Expr<T>, Expr<T>) -> Expr<T>,
    ) -> Expr<T> {
        let g = g.into();
        let (width, n) = match g {
            LaneGroup::Group(group) => match group.kind {
                GroupKind::LogicalWarp { width } => (width.clamp(1, 32), group.num_threads()),
                // Reported by the verifier at the first shuffle (a lane op of the block or a group of warps).
                GroupKind::Block | GroupKind::Warps { .. } => (32, group.num_threads()),
            },
            LaneGroup::Partition(p) => (32, p.num_threads()),
        };
        let acc = self.var(value);
        let rank = g.thread_rank();
        let mut d = 1;
        while d < width {
            let other = self.shfl_down(g, acc.get(), d);
            let inside = (rank.clone() + d).lt(n.clone());
            let combined = combine(acc.get(), other);
            self.set(&acc, inside.select(combined, acc.get()));
            d *= 2;
        }
        self.shfl(g, acc.get(), 0u32)
    }

    /// The lanes of the warp that run this op together, as a [`Partition`] (CG's
    /// `coalesced_threads`): in a branch the warp entered together, the warp's threads that
    /// took it. Its members rank themselves among the active threads; the basis of
    /// warp-aggregated atomics. As on the GPU, lanes that arrive apart (after a loop some of
    /// them ran longer) may make groups of their own: code over a coalesced group should be
    /// correct for any split of the lanes, as warp-aggregated atomics are.
    ///
    /// ```
    /// use coopgraph::ir::{Atomic, index};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // Stream compaction: the threads keeping their value take slots with one atomic per
    /// // warp (the group's leader adds the group's size), then write at base + rank.
    /// let mut k = KernelBuilder::new("compact").block(64);
    /// let (x, y, n) = (k.input::<u32>("x"), k.output::<u32>("y"), k.output::<u32>("n"));
    /// let t = index::block_index() * 64u32 + index::thread_rank();
    /// let v = x.at(&t);
    /// k.if_((v.clone() % 3u32).eq(0u32), |k| {
    ///     let g = k.coalesced_threads();
    ///     let base = k.invoke_one(g, |k| k.atomic(&n, 0u32, Atomic::add(g.num_threads())));
    ///     k.write(&y, base + g.thread_rank(), v.clone());
    /// });
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&(0..256).collect::<Vec<u32>>())?;
    /// let (mut yb, mut nb) = (dev.alloc_zeroed::<u32>(256)?, dev.alloc_zeroed::<u32>(1)?);
    /// dev.compile(&kernel)?.launch_grid(4, (&xb, &mut yb, &mut nb))?;
    /// let kept = nb.to_vec()?[0] as usize;
    /// let mut got = yb.to_vec()?[..kept].to_vec();
    /// got.sort();
    /// assert_eq!(got, (0..256).filter(|v| v % 3 == 0).collect::<Vec<u32>>());
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn coalesced_threads(&mut self) -> Partition {
        let loc = Loc::caller();
        let warp = Group {
            kind: GroupKind::LogicalWarp { width: 32 },
            loc,
        };
        self.partition(LaneGroup::Group(warp), LaneOp::Coalesce, None)
    }

    /// Splits the group `g` (a tile or a partition) into the parts whose `key` has the same
    /// bits, and gives this thread's part (CG's `labeled_partition`, through
    /// `match.any.sync`).
    ///
    /// ```
    /// use coopgraph::ir::{Atomic, index};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // A histogram of 4 bins where each warp's updates of one bin combine into one atomic.
    /// let mut k = KernelBuilder::new("hist4").block(64);
    /// let (x, bins) = (k.input::<u32>("x"), k.output::<u32>("bins"));
    /// let t = index::thread_rank();
    /// let bin = x.at(&t) % 4u32;
    /// let part = k.labeled_partition(k.this_warp(), bin.clone());
    /// k.if_(part.thread_rank().eq(0u32), |k| {
    ///     k.atomic(&bins, bin.clone(), Atomic::add(part.num_threads()));
    /// });
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&(0..64).map(|i| i * i).collect::<Vec<u32>>())?;
    /// let mut bb = dev.alloc_zeroed::<u32>(4)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut bb))?;
    /// // Squares are 0 or 1 mod 4: 32 of each.
    /// assert_eq!(bb.to_vec()?, [32, 32, 0, 0]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn labeled_partition<T: Element>(
        &mut self,
        g: impl Into<LaneGroup>,
        key: impl Into<Expr<T>>,
    ) -> Partition {
        let key = self.expr(&key.into());
        self.partition(g.into(), LaneOp::Labeled, Some(key))
    }

    /// Splits the group `g` (a tile or a partition) into the threads where `pred` holds and
    /// those where it does not, and gives this thread's part (CG's `binary_partition`).
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // Odd and even lanes of each warp count themselves.
    /// let mut k = KernelBuilder::new("odd_even").block(40);
    /// let y = k.output::<u32>("y");
    /// let t = index::thread_rank();
    /// let part = k.binary_partition(k.this_warp(), (t.clone() % 2u32).eq(1u32));
    /// k.write(&y, &t, part.num_threads() * 100u32 + part.thread_rank());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut yb = dev.alloc_zeroed::<u32>(40)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut yb,))?;
    /// let ys = yb.to_vec()?;
    /// // The second warp has 8 threads: 4 even, 4 odd.
    /// assert_eq!([ys[0], ys[3], ys[32], ys[39]], [1600, 1601, 400, 403]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn binary_partition(
        &mut self,
        g: impl Into<LaneGroup>,
        pred: impl Into<Expr<bool>>,
    ) -> Partition {
        let pred = self.expr(&pred.into());
        self.partition(g.into(), LaneOp::Binary, Some(pred))
    }

    #[track_caller]
    fn partition(&mut self, g: LaneGroup, op: LaneOp, value: Option<ExprId>) -> Partition {
        let loc = Loc::caller();
        let out = self.lane_out::<u32>();
        self.lane_push(g, op, value, None, Some(out));
        Partition {
            mask: out,
            owner: self.lineage.id(),
            loc,
        }
    }

    #[track_caller]
    fn lane_shuffle<T: Element>(
        &mut self,
        g: LaneGroup,
        op: LaneOp,
        v: Expr<T>,
        lane: Expr<u32>,
    ) -> Expr<T> {
        let (v, lane) = (self.expr(&v), self.expr(&lane));
        let out = self.lane_out::<T>();
        self.lane_push(g, op, Some(v), Some(lane), Some(out));
        self.lane_result(out)
    }

    #[track_caller]
    fn vote(&mut self, g: LaneGroup, op: LaneOp, pred: Expr<bool>) -> Expr<u32> {
        let pred = self.expr(&pred);
        self.lane_op(g, op, Some(pred), true)
    }

    /// A lane op with a `u32` result (or none).
    #[track_caller]
    fn lane_op(
        &mut self,
        g: LaneGroup,
        op: LaneOp,
        value: Option<ExprId>,
        result: bool,
    ) -> Expr<u32> {
        let out = result.then(|| self.lane_out::<u32>());
        self.lane_push(g, op, value, None, out);
        match out {
            Some(out) => self.lane_result(out),
            None => Expr::lit(0),
        }
    }

    #[track_caller]
    fn lane_out<T: Element>(&mut self) -> DataId {
        self.thread_data_n::<T>(1).id
    }

    fn lane_result<T: Element>(&self, out: DataId) -> Expr<T> {
        Expr::owned(ExprKind::Item { data: out, item: 0 }, self.lineage.id())
    }

    #[track_caller]
    fn lane_push(
        &mut self,
        g: LaneGroup,
        op: LaneOp,
        value: Option<ExprId>,
        lane: Option<ExprId>,
        out: Option<DataId>,
    ) {
        let loc = Loc::caller();
        let (group, members) = match g {
            LaneGroup::Group(g) => (self.group_id(g), None),
            LaneGroup::Partition(p) => {
                self.check_owner(p.owner, Table::Data, p.mask.0, "partition");
                let warp = Group {
                    kind: GroupKind::LogicalWarp { width: 32 },
                    loc: p.loc,
                };
                (self.group_id(warp), Some(p.mask))
            }
        };
        let spec = LaneSpec {
            group,
            members,
            op,
            value,
            lane,
            out,
        };
        self.push(OpKind::Lanes(spec), loc);
    }
}

//! Groups of whole warps: a reduction, scan, exchange or barrier over groups of 1 to 4 warps,
//! of a payload there is or of one the groups load (each its own tile, directly, striped or
//! vectorized), inside `if_member` (which runs its body unconditionally where the partition
//! leaves no warps over), with more statements after it in the members' region.

use super::expr::constant;
use super::ops::handle;
use super::{Gen, WARP, striped};
use crate::fuzz::interp::payload_arrangement;
use crate::fuzz::types::{Fz, with_dtype};
use coopgraph::ir::{Algorithm, Arrangement, Group};
use coopgraph::{KernelBuilder, Load};

/// Named barriers a block has besides the block's own.
const NAMED_BARRIERS: u32 = 15;

impl Gen {
    pub fn op_warp_groups(&mut self, k: &mut KernelBuilder) -> bool {
        if !self.warps_ok() || !self.block_uniform() || self.cx().callback {
            return false;
        }
        let sizes = self.warp_group_sizes(k);
        let srcs = self.full(|_| true);
        if sizes.is_empty() || srcs.is_empty() {
            return false;
        }
        let n = self.rng.pick(&sizes);
        let mut d = self.datas[self.rng.pick(&srcs)].clone();
        let g = k.this_block().group_by_warps(n);
        let load = self.rng.pct(40);
        // 0: reduction, 1: scan, 2: exchange, 3: the group's barrier.
        let what = self.rng.weighted(&[30, 30, 30, 10]);
        // A scan's source becomes blocked within each group's tile (or the block's, where
        // a conversion may stand).
        let scan_src = |g2: &Self, d: &super::DInfo| {
            let within = d.arr.is_none_or(|a| (n * 32).is_multiple_of(striped(a)));
            within || g2.conv_ok(d.arr, Arrangement::Blocked, d.k)
        };
        // The members' branch (`warp_rank < c`) is uniform over warps, as the verifier
        // counts it.
        let mut c = self.child(WARP);
        c.acc = self.accumulator_for(k, &c);
        let more = self.region_size() - 1;
        k.if_member(&g, |k, g| {
            self.in_region(k, c, |g2, k| {
                if load {
                    let dt = g2.dtype();
                    let i = with_dtype!(dt, T => g2.warp_group_load::<T>(k, g));
                    d = g2.datas[i].clone();
                }
                match what {
                    1 if scan_src(g2, &d) => {
                        g2.note_conv(d.arr, Arrangement::Blocked, d.k);
                        with_dtype!(d.dt, T => g2.scan_t::<T>(k, g, handle::<T>(&d)));
                    }
                    2 => {
                        g2.exchange_over(k, g, Some(&d));
                    }
                    3 => k.sync(g),
                    _ => {
                        with_dtype!(d.dt, T => g2.reduce_t::<T>(k, g, handle::<T>(&d), d.arr));
                    }
                }
                g2.statements(k, more);
            });
        });
        true
    }

    /// Sizes of groups of 1 to 4 whole warps whose barriers fit beside those the kernel's
    /// groups already take.
    pub(super) fn warp_group_sizes(&self, k: &KernelBuilder) -> Vec<u32> {
        let block_warps = self.t / 32;
        (1..=block_warps.min(4))
            .filter(|&n| {
                let mut parts = k.ir().warp_partitions();
                if n > 1 && n < block_warps && !parts.iter().any(|&(w, _)| w == n) {
                    parts.push((n, block_warps / n));
                }
                parts.iter().map(|&(_, g)| g).sum::<u32>() <= NAMED_BARRIERS
            })
            .collect()
    }

    /// A load of each group's tile by the groups of `g`: a new payload (its index).
    fn warp_group_load<T: Fz>(&mut self, k: &mut KernelBuilder, g: Group) -> usize {
        let alg = self
            .rng
            .pick(&[Algorithm::Direct, Algorithm::Striped, Algorithm::Vectorize]);
        let x = self.input::<T>(k);
        let mut opts = Load::<T>::direct().algorithm(alg);
        // Inside `tiles`, the last tile may be partial: its positions past the count hold a
        // default.
        if self.cx().tile.is_some() {
            opts = opts.oob_default(constant::<T>(self));
        }
        let d = k.load_from(g, &x, opts);
        let arr = payload_arrangement(alg, self.group_threads(&g));
        let kk = self.kk;
        self.add(T::data(d), T::DTYPE, kk, Some(arr))
    }
}

/// The differential run's seeds make reductions, scans, exchanges and barriers over groups of
/// whole warps, over partitions that leave warps over among them, and kernels that build with
/// them.
#[test]
fn the_generator_makes_warp_group_collectives() {
    use coopgraph::ir::ops::{LaneOp, OpKind};
    let (mut any, mut partial, mut built, mut loads) = (0, 0, 0, 0);
    let (mut scans, mut exchanges, mut syncs) = (0, 0, 0);
    let (mut scans_built, mut exchanges_built) = (0, 0);
    for seed in 0xC00B_6A4Bu64..0xC00B_6A4B + 1500 {
        let case = super::generate(&super::Spec::of(seed));
        let ir = &case.ir;
        let block_warps = ir.block_threads() / 32;
        let whole = |g: coopgraph::ir::GroupId| ir.groups[g.index()].kind.whole_warps();
        let sizes: Vec<u32> = (ir.ops.iter())
            .filter_map(|op| match &op.kind {
                OpKind::Reduce(r) => whole(r.group),
                _ => None,
            })
            .collect();
        let has = |f: &dyn Fn(&OpKind) -> bool| ir.ops.iter().any(|op| f(&op.kind));
        if has(&|k| matches!(k, OpKind::Load(t) if whole(t.group).is_some())) {
            loads += 1;
        }
        if has(&|k| matches!(k, OpKind::Scan(s) if whole(s.group).is_some_and(|n| n > 1))) {
            scans += 1;
            scans_built += usize::from(case.kernel.is_ok());
        }
        if has(&|k| matches!(k, OpKind::Exchange { group, .. } if whole(*group).is_some())) {
            exchanges += 1;
            exchanges_built += usize::from(case.kernel.is_ok());
        }
        let sync = |k: &OpKind| matches!(k, OpKind::Lanes(l) if l.op == LaneOp::Sync && whole(l.group).is_some());
        if has(&sync) {
            syncs += 1;
        }
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
        "warp-group reductions in {any} of 1500 cases, {partial} over partitions with warps \
         left over, {built} built; warp-group loads in {loads}, scans in {scans} \
         ({scans_built} built), exchanges in {exchanges} ({exchanges_built} built), barriers \
         in {syncs}"
    );
    assert!(any >= 10 && partial >= 3 && built >= 10 && loads >= 3);
    assert!(scans >= 5 && scans_built >= 3, "{scans} {scans_built}");
    assert!(
        exchanges >= 5 && exchanges_built >= 3,
        "{exchanges} {exchanges_built}"
    );
    assert!(syncs >= 2, "{syncs}");
}

//! Merge sorts over the block or logical warps: keys or pairs (values of any payload with the
//! keys' items), by `lt`, `gt` or the low bits of the keys, over both output arrangements and
//! partial tiles with a default key, composed with what came before and after.

use super::Gen;
use super::expr::constant;
use super::ops::handle;
use crate::fuzz::types::{Fz, with_dtype};
use coopgraph::KernelBuilder;
use coopgraph::ir::{Arrangement, Expr, Group, MergeSort, SortOutput};

impl Gen {
    pub fn op_merge_sort(&mut self, k: &mut KernelBuilder) -> bool {
        if self.cx().callback {
            return false;
        }
        let t = self.t;
        // The block where it runs as one and is a power of two; logical warps where their
        // lanes run together, in blocks of whole warps (lane ops take whole warps).
        let mut groups: Vec<u32> = [2u32, 4, 8, 16, 32]
            .into_iter()
            .filter(|&w| self.warps_ok() && self.covers(w))
            .collect();
        if self.block_uniform() && t.is_power_of_two() {
            groups.push(t);
        }
        // Keys in blocked position order, over the block and so over each logical warp.
        let blocked = |d: &super::DInfo| {
            d.arr
                .is_some_and(|a| a.same_positions(Arrangement::Blocked, d.k))
        };
        let keys = self.full(blocked);
        if groups.is_empty() || keys.is_empty() {
            return false;
        }
        let threads = self.rng.pick(&groups);
        let group: Group = if threads == t && self.block_uniform() && t.is_power_of_two() {
            k.this_block()
        } else if threads == 32 && self.rng.pct(50) {
            k.this_warp().into()
        } else {
            k.this_warp().group_by(threads)
        };
        let d = self.datas[self.rng.pick(&keys)].clone();
        let items = d.k;
        let values: Vec<usize> = self.full(|v| blocked(v) && v.k == items);
        let pair = (!values.is_empty() && self.rng.pct(50)).then(|| self.rng.pick(&values));
        let vd = pair.map(|i| self.datas[i].clone());
        let striped = self.rng.pct(35) && self.exchange_ok(threads);
        let arr = if striped {
            Arrangement::Striped { threads }
        } else {
            Arrangement::Blocked
        };
        let how = self.rng.below(3);
        let valid = self
            .rng
            .pct(35)
            .then(|| self.rng.below(u64::from(threads * items) + 2) as u32);
        let used = [Some(d.h.id()), vd.as_ref().map(|v| v.h.id())];
        for x in &mut self.datas {
            x.used |= used.contains(&Some(x.h.id()));
        }
        with_dtype!(d.dt, T => {
            let mut controls = match how {
                0 => MergeSort::<T>::ascending(),
                1 => MergeSort::<T>::descending(),
                _ => MergeSort::by(|a: Expr<T>, b: Expr<T>| {
                    (a.cast::<u32>() & 3u32).lt(b.cast::<u32>() & 3u32)
                }),
            };
            if striped {
                controls = controls.output(SortOutput::Striped);
            }
            if let Some(n) = valid {
                controls = controls.valid_items(n);
                if self.rng.pct(70) {
                    controls = controls.oob_default(constant::<T>(self));
                }
            }
            let src = handle::<T>(&d);
            match &vd {
                Some(v) => {
                    with_dtype!(v.dt, V => {
                        let (sk, sv) = k.merge_sort_pairs(group, &src, &handle::<V>(v), controls);
                        self.add(T::data(sk), d.dt, items, Some(arr));
                        self.add(V::data(sv), v.dt, items, Some(arr));
                    });
                }
                None => {
                    let sk = k.merge_sort(group, &src, controls);
                    self.add(T::data(sk), d.dt, items, Some(arr));
                }
            }
        });
        true
    }
}

/// The generator composes merge sorts with its other ops: some of its kernels hold one (a loop
/// whose body holds a loop, the merge path's search, between two barriers).
#[test]
fn generated_kernels_hold_merge_sorts() {
    use coopgraph::ir::ops::{LaneOp, OpKind};
    let mut sorts = 0;
    for i in 0..400u64 {
        let case = super::generate(&super::Spec::of(i.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        let ir = &case.ir;
        let barrier = |k: &OpKind| match k {
            OpKind::SyncBlock => true,
            OpKind::Lanes(spec) => spec.op == LaneOp::Sync,
            _ => false,
        };
        sorts += ir
            .ops
            .iter()
            .filter(|op| match &op.kind {
                OpKind::For { body, .. } => {
                    let r = ir.region(*body);
                    r.iter().filter(|&&o| barrier(&ir.op(o).kind)).count() == 2
                        && r.iter()
                            .any(|&o| matches!(ir.op(o).kind, OpKind::For { .. }))
                }
                _ => false,
            })
            .count();
    }
    assert!(
        sorts >= 3,
        "only {sorts} merge sorts in 400 generated kernels"
    );
}

//! Merge sorts over the block: keys or pairs (values of any payload with the
//! keys' items), by `lt`, `gt`, the low bits of the keys or their total order (floats sorted
//! as their order-preserving bits), over both output arrangements and
//! partial tiles with a default key, composed with what came before and after.

use super::Gen;
use super::expr::constant;
use super::ops::handle;
use crate::fuzz::types::{Fz, with_dtype};
use coopgraph::KernelBuilder;
use coopgraph::ir::{Arrangement, Expr, MergeSort, SortOrder, SortOutput};

impl Gen {
    pub fn op_merge_sort(&mut self, k: &mut KernelBuilder) -> bool {
        if self.cx().callback {
            return false;
        }
        let t = self.t;
        // The block, where it runs as one and is a power of two. (Logical warps and groups of
        // whole warps are left out: their barriers order nothing the interpreter's race
        // model tracks, so it would take their sorts' shared accesses for races.)
        if !self.block_uniform() || !t.is_power_of_two() {
            return false;
        }
        // Keys in blocked position order.
        let blocked = |d: &super::DInfo| {
            d.arr
                .is_some_and(|a| a.same_positions(Arrangement::Blocked, d.k))
        };
        let keys = self.full(blocked);
        if keys.is_empty() {
            return false;
        }
        let threads = t;
        let group = k.this_block();
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
        let how = self.rng.below(4);
        let order = if how == 3 && self.rng.pct(50) {
            SortOrder::Ascending
        } else {
            SortOrder::Descending
        };
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
                2 => MergeSort::by(|a: Expr<T>, b: Expr<T>| {
                    (a.cast::<u32>() & 3u32).lt(b.cast::<u32>() & 3u32)
                }),
                _ => MergeSort::<T>::total_order(order),
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
    use coopgraph::ir::ops::OpKind;
    let mut sorts = 0;
    for i in 0..1500u64 {
        let case = super::generate(&super::Spec::of(i.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        let ir = &case.ir;
        let barrier = |k: &OpKind| matches!(k, OpKind::SyncBlock);
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
        "only {sorts} merge sorts in 1500 generated kernels"
    );
}

//! Block run-length decodes: runs from the kernel's payloads (lengths from a `u32` payload
//! bounded small, values of any dtype with as many items per thread), one or two windows
//! decoded at random offsets, composed with what came before and after.

use super::Gen;
use super::ops::handle;
use crate::fuzz::types::{Fz, with_dtype};
use coopgraph::KernelBuilder;
use coopgraph::ir::{Arrangement, DType, Element};

impl Gen {
    pub fn op_run_length(&mut self, k: &mut KernelBuilder) -> bool {
        if !self.block_uniform() || self.cx().callback || !self.block_reduce_ok() {
            return false;
        }
        // At most 2048 runs: their values and offsets fit beside other shared memory.
        let t = self.t;
        let lengths = self.full(|d| d.rank0.is_none() && d.dt == DType::U32 && t * d.k <= 2048);
        if lengths.is_empty() {
            return false;
        }
        let l = self.datas[self.rng.pick(&lengths)].clone();
        let values = self.full(|d| d.rank0.is_none() && d.k == l.k);
        let v = self.datas[self.rng.pick(&values)].clone();
        for x in &mut self.datas {
            x.used |= x.h.id() == l.h.id() || x.h.id() == v.h.id();
        }
        // The runs are taken blocked: a payload in another arrangement is converted (which
        // strict mode refuses).
        self.note_conv(l.arr, Arrangement::Blocked, l.k);
        self.note_conv(v.arr, Arrangement::Blocked, v.k);
        let b = k.this_block();
        let raw = handle::<u32>(&l);
        let lens = k.map(&raw, |x| x % 5u32);
        let items = 1 + self.rng.below(6) as u32;
        let windows = 1 + self.rng.below(2);
        with_dtype!(v.dt, T => {
            let runs = k.run_lengths(b, &handle::<T>(&v), &lens);
            for _ in 0..windows {
                let from = self.rng.below(u64::from(self.t * l.k * 3)) as u32;
                let d = k.run_length_decode(&runs, items, from);
                self.add(T::data(d.items), T::DTYPE, items, None);
                self.add(<u32 as Fz>::data(d.offsets), DType::U32, items, None);
            }
            let total = k.fill(runs.total());
            let n = total.items();
            self.add(<u32 as Fz>::data(total), DType::U32, n, None);
        });
        true
    }
}

/// The generator composes run-length decodes with its other ops: some of its kernels hold
/// one (its setup's block barrier, recorded at this file's lines).
#[test]
fn generated_kernels_hold_run_length_decodes() {
    use coopgraph::ir::ops::OpKind;
    let mut decodes = 0;
    for i in 0..1500u64 {
        let case = super::generate(&super::Spec::of(i.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        decodes += usize::from(case.ir.ops.iter().any(|op| {
            op.loc.file.ends_with("generator/run_length.rs") && matches!(op.kind, OpKind::SyncBlock)
        }));
    }
    assert!(
        decodes >= 3,
        "{decodes} run-length decodes in 1500 generated kernels"
    );
}

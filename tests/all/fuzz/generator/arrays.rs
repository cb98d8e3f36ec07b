//! Local and constant arrays: per-thread arrays filled by a loop over every element (at a
//! rotation of its own per thread) and then written and read at run-time indices anywhere
//! (under any control: each thread's array is its own), and constant arrays of random values
//! read at run-time indices. An index past the end, rarely, is an out-of-bounds access the
//! simulator must report.

use super::expr::Leaves;
use super::{Defect, Gen};
use crate::fuzz::types::{AnyConst, AnyExpr, AnyLocal, Fz, with_dtype};
use coopgraph::KernelBuilder;
use coopgraph::ir::{DType, Expr, index};

/// A local array.
#[derive(Clone)]
pub(crate) struct LocalInfo {
    pub h: AnyLocal,
    pub dt: DType,
    pub len: u32,
    /// Every element was written on every path here (by every thread that runs this code).
    pub ready: bool,
}

/// A constant array.
#[derive(Clone)]
pub(crate) struct ConstInfo {
    pub h: AnyConst,
    pub dt: DType,
    pub len: u32,
}

impl Gen {
    /// Declares local and constant arrays for the kernel (some, sometimes).
    pub fn declare_arrays(&mut self, k: &mut KernelBuilder) {
        if self.rng.pct(20) {
            for _ in 0..1 + self.rng.below(2) {
                let dt = self.dtype();
                let len = 1 + self.rng.below(12) as u32;
                let h = with_dtype!(dt, T => T::local(k.local_array::<T>(len)));
                self.locals.push(LocalInfo {
                    h,
                    dt,
                    len,
                    ready: false,
                });
            }
        }
        if self.rng.pct(20) {
            for _ in 0..1 + self.rng.below(2) {
                let dt = self.dtype();
                let len = 1 + self.rng.below(40) as u32;
                let h = with_dtype!(dt, T => {
                    let values: Vec<T> = (0..len)
                        .map(|_| super::expr::constant::<T>(self))
                        .collect();
                    T::konst(k.const_array(&values))
                });
                self.consts.push(ConstInfo { h, dt, len });
            }
        }
    }

    /// An index below `len` (past it, rarely, where the feature is on): thread-varying.
    fn array_index(&mut self, len: u32, depth: u32) -> Expr<u32> {
        let lv = Leaves::varying();
        let i = self.expr::<u32>(&lv, depth) % len.max(1);
        // A checked kernel guards the access (it reads 0 or skips the write); only an
        // unchecked one lets the index reach memory, where the simulator must report it.
        if self.rng.pct(3) && self.unchecked && self.feature(Defect::ArrayOverflow) {
            i + len
        } else {
            i
        }
    }

    /// A local-array statement: a fill of every element (which makes the array readable
    /// after it on this path), or, once filled, a write of one element.
    pub fn op_local(&mut self, k: &mut KernelBuilder) -> bool {
        if self.locals.is_empty() {
            return false;
        }
        let ai = self.rng.below(self.locals.len() as u64) as usize;
        let a = self.locals[ai].clone();
        let lv = Leaves::varying();
        if a.ready && self.rng.pct(60) {
            let idx = self.array_index(a.len, 2);
            with_dtype!(a.dt, T => {
                let arr = T::of_local(&a.h).expect("the array's dtype");
                let v = self.expr::<T>(&lv, 2);
                k.local_write(&arr, idx, v);
            });
            return true;
        }
        self.fill_local(k, ai);
        true
    }

    /// Fills every element of local array `ai` (which makes it readable after this on this
    /// path): thread `t` writes element `(i + rotation) % len` at step `i` of a loop.
    pub fn fill_local(&mut self, k: &mut KernelBuilder, ai: usize) {
        let a = self.locals[ai].clone();
        let lv = Leaves::varying();
        let rotation = if self.rng.pct(60) {
            index::thread_rank()
        } else {
            self.expr::<u32>(&lv, 1)
        };
        let len = a.len;
        with_dtype!(a.dt, T => {
            let arr = T::of_local(&a.h).expect("the array's dtype");
            let v = self.expr::<T>(&lv, 2);
            k.for_range(0u32, len, |k, i| {
                // Below 2 * len: no wrap, so every element once.
                let at = (i.clone() + rotation % len) % len;
                k.local_write(&arr, at, v + i.cast::<T>());
            });
        });
        self.locals[ai].ready = true;
    }

    /// A read of a filled local array or a constant array, if there is one.
    pub fn array_read(&mut self) -> Option<AnyExpr> {
        let ready: Vec<usize> = (0..self.locals.len())
            .filter(|&i| self.locals[i].ready)
            .collect();
        let local = !ready.is_empty() && (self.consts.is_empty() || self.rng.pct(70));
        if local {
            let a = self.locals[self.rng.pick(&ready)].clone();
            let idx = self.array_index(a.len, 1);
            return Some(with_dtype!(a.dt, T => T::expr(T::of_local(&a.h)?.read(idx))));
        }
        if self.consts.is_empty() {
            return None;
        }
        let c = self.consts[self.rng.below(self.consts.len() as u64) as usize].clone();
        let idx = self.array_index(c.len, 1);
        Some(with_dtype!(c.dt, T => T::expr(T::of_const(&c.h)?.read(idx))))
    }
}

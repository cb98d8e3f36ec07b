//! Atomics: on shared arrays (in a phase of their own between barriers, on elements the last
//! write phase wrote), on outputs of a fixed length (around their end) and on read-write
//! buffers (each thread on its own element), every operation at every type that takes it,
//! with memory orders and scopes. Where several threads update one element their old values
//! are left unused (they depend on the order); where each thread updates its own, the old
//! value is stored. Contended updates mix operations freely: the interpreter knows which
//! orders leave the same element, and leaves the others unspecified.

use super::expr::Leaves;
use super::{Gen, Param};
use crate::fuzz::types::{AtomicCall, Fz, FzAtomic, Ix, Target, with_dtype};
use coopgraph::KernelBuilder;
use coopgraph::ir::{AtomicOp, DType, Expr, MemoryOrder, MemoryScope, index};

/// The element types atomics take.
const ATOMIC_TYPES: [DType; 6] = [
    DType::I32,
    DType::U32,
    DType::I64,
    DType::U64,
    DType::F32,
    DType::F64,
];

impl Gen {
    /// A memory order and scope, the default mostly.
    fn memory_order(&mut self, shared: bool) -> (MemoryOrder, MemoryScope) {
        if self.rng.pct(60) {
            return (MemoryOrder::Relaxed, MemoryScope::Gpu);
        }
        let order = self.rng.pick(&[
            MemoryOrder::Relaxed,
            MemoryOrder::Acquire,
            MemoryOrder::Release,
            MemoryOrder::AcqRel,
        ]);
        let scope = if shared {
            self.rng.pick(&[MemoryScope::Block, MemoryScope::Gpu])
        } else {
            self.rng
                .pick(&[MemoryScope::Block, MemoryScope::Gpu, MemoryScope::System])
        };
        (order, scope)
    }

    /// The call of an atomic at `T`: an operation the type takes (on a shared array, one that
    /// updates: atomic loads read buffers only), its operands.
    fn atomic_call<T: FzAtomic>(&mut self, shared: bool) -> Option<AtomicCall<T>> {
        let ops: Vec<AtomicOp> = (T::atomic_ops().iter().copied())
            .filter(|&op| !(shared && op == AtomicOp::Load))
            .collect();
        if ops.is_empty() {
            return None;
        }
        let op = self.rng.pick(&ops);
        let lv = Leaves::varying();
        let v = match op {
            // A counter's limit: small, and one for every thread more often than not.
            AtomicOp::Inc | AtomicOp::Dec if self.rng.pct(70) => {
                Expr::lit(T::small(self.rng.below(12) as i64))
            }
            _ => self.expr::<T>(&lv, 1),
        };
        let c = if op == AtomicOp::Cas {
            self.expr::<T>(&lv, 1)
        } else {
            Expr::lit(T::small(0))
        };
        let (mut order, scope) = self.memory_order(shared);
        if op == AtomicOp::Load && matches!(order, MemoryOrder::Release | MemoryOrder::AcqRel) {
            // A load takes no releasing order.
            order = MemoryOrder::Acquire;
        }
        Some(AtomicCall {
            op,
            v,
            c,
            order,
            scope,
        })
    }

    /// An atomic statement: on a shared array, an output or a read-write buffer.
    pub fn op_atomic(&mut self, k: &mut KernelBuilder) -> bool {
        let shared: Vec<usize> = (0..self.arrays.len())
            .filter(|&i| self.arrays[i].ready && ATOMIC_TYPES.contains(&self.arrays[i].dt))
            .collect();
        let phase = !shared.is_empty() && self.block_uniform() && !self.cx().callback;
        match self.rng.below(3) {
            0 if phase => {
                let ai = self.rng.pick(&shared);
                self.shared_atomics(k, ai)
            }
            1 if !self.buffers.is_empty() => self.buffer_atomic(k),
            _ => {
                let dt = self.rng.pick(&ATOMIC_TYPES);
                with_dtype!(dt, T => self.output_atomic::<T>(k))
            }
        }
    }

    /// A phase of atomics on shared array `ai`: barrier, updates of elements its last write
    /// phase wrote, barrier.
    fn shared_atomics(&mut self, k: &mut KernelBuilder, ai: usize) -> bool {
        let a = self.arrays[ai].clone();
        let (mul, add, writers) = a.pattern;
        k.sync_block();
        // Nothing reads the array while atomics update it.
        self.arrays[ai].ready = false;
        let own = self.rng.pct(40);
        let w = if own {
            index::thread_rank()
        } else {
            index::thread_rank() % (1 + self.rng.below(u64::from(writers.min(4))) as u32)
        };
        let idx = (w * mul + add) % a.len;
        with_dtype!(a.dt, T => {
            let arr = T::of_array(&a.h).expect("the array's dtype");
            if let Some(call) = self.atomic_call::<T>(true) {
                let record = |g: &mut Self, k: &mut KernelBuilder| {
                    let old = T::record(k, &Target::Shared(arr), Ix::N(idx), call);
                    if own && let Some(old) = old {
                        g.store_old::<T>(k, old);
                    }
                };
                if own && writers < self.t {
                    k.if_(index::thread_rank().lt(writers), |k| record(self, k));
                } else {
                    record(self, k);
                }
            }
        });
        k.sync_block();
        self.arrays[ai].ready = true;
        true
    }

    /// An atomic on a new output of a fixed length: many threads on a few elements (some past
    /// the end), or each on its own.
    fn output_atomic<T: FzAtomic>(&mut self, k: &mut KernelBuilder) -> bool {
        let Some(call) = self.atomic_call::<T>(false) else {
            return false;
        };
        let threads = self.blocks() * self.t;
        let own = self.rng.pct(40);
        let (len, idx) = if own {
            (threads, self.grid_rank())
        } else {
            let len = 1 + self.rng.below(6) as u32;
            let over = if self.unchecked {
                0
            } else {
                self.rng.below(3) as u32
            };
            (len, self.grid_rank() % (len + over))
        };
        let name = self.name("y");
        let y = k.output::<T>(&name);
        self.params.push(Param::Output {
            dtype: T::DTYPE,
            len: Some(u64::from(len)),
        });
        let idx = if self.rng.pct(20) {
            Ix::W(idx.cast::<u64>())
        } else {
            Ix::N(idx)
        };
        let old = T::record(k, &Target::Out(y), idx, call);
        if own && let Some(old) = old {
            self.store_old::<T>(k, old);
        }
        true
    }

    /// An atomic on this thread's own element of a read-write buffer, its old value stored.
    fn buffer_atomic(&mut self, k: &mut KernelBuilder) -> bool {
        let b = self.buffers[self.rng.below(self.buffers.len() as u64) as usize].clone();
        if !ATOMIC_TYPES.contains(&b.dt) {
            return false;
        }
        let own = self.grid_rank() * b.stride + b.slot;
        let idx = if b.wide {
            Ix::W(own.cast::<u64>())
        } else {
            Ix::N(own)
        };
        with_dtype!(b.dt, T => {
            let Some(call) = self.atomic_call::<T>(false) else {
                return false;
            };
            let h = T::of_buffer(&b.h).expect("the buffer's dtype");
            if let Some(old) = T::record(k, &Target::Buf(h), idx, call) {
                self.store_old::<T>(k, old);
            }
        });
        true
    }

    /// Stores an atomic's old value at this thread's element of a new output.
    fn store_old<T: Fz>(&mut self, k: &mut KernelBuilder, old: Expr<T>) {
        let len = self.blocks() * self.t;
        let name = self.name("y");
        let y = k.output::<T>(&name);
        self.params.push(Param::Output {
            dtype: T::DTYPE,
            len: Some(u64::from(len)),
        });
        k.write(&y, self.grid_rank(), old);
    }
}

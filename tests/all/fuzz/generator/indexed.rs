//! Global memory by index: reads of inputs at any index (`x.at(i)`, as expression leaves),
//! writes to outputs at any index (`k.write`), and read-write buffers each thread updates at
//! elements of its own. Buffers read or written by index have lengths the case fixes, and the
//! indices go around their ends: the last element, one past it, indices that wrapped below 0,
//! 64-bit ones past `u32::MAX`. A checked kernel reads 0 there and writes nothing; an unchecked
//! one faults, so its indices stay inside (but for a few, whose fault the run must report).
//! Runs of consecutive elements (`k.read_run`, `k.write_run`) start at aligned and misaligned
//! elements, cross the buffer's end and (checked) wrap past `u32::MAX`.

use super::expr::Leaves;
use super::{Data, Flavor, Gen, Param};
use crate::fuzz::types::{AnyBuffer, AnyExpr, AnyInput, Fz, Ix, with_dtype};
use coopgraph::KernelBuilder;
use coopgraph::ir::{DType, Element, Expr, index};

/// An input read by index, and its length.
#[derive(Clone)]
pub(crate) struct IdxInput {
    pub h: AnyInput,
    pub dt: DType,
    pub len: u32,
}

/// A read-write buffer: thread `g` of the grid (`block * threads + rank`) owns element
/// `g * stride + slot`, which only it reads and writes.
#[derive(Clone)]
pub(crate) struct BufInfo {
    pub h: AnyBuffer,
    pub dt: DType,
    pub stride: u32,
    pub slot: u32,
    /// Indexed with `u64` indices.
    pub wide: bool,
}

/// `h.at(i)` for an index of either width.
macro_rules! at {
    ($h:expr, $i:expr) => {
        match $i {
            Ix::N(i) => $h.at(i),
            Ix::W(i) => $h.at(i),
        }
    };
}

impl Gen {
    /// The thread's index in the grid.
    pub(crate) fn grid_rank(&self) -> Expr<u32> {
        self.block_id() * self.t + index::thread_rank()
    }

    /// A length for a buffer read or written by index: around the grid's threads.
    fn fixed_len(&mut self) -> u32 {
        let threads = self.blocks() * self.t;
        match self.rng.below(4) {
            0 => 1 + self.rng.below(8) as u32,
            1 => threads,
            2 => threads + 1 + self.rng.below(40) as u32,
            _ => 1 + self.rng.below(u64::from(threads) * 2) as u32,
        }
    }

    /// An index into a buffer of `len` elements: mostly inside, else around its end (one
    /// past it, wrapped below 0, past `u32::MAX`). An unchecked kernel's stay inside but for
    /// a few (the run must report their fault).
    pub(crate) fn element_index(&mut self, len: u32, lv: &Leaves) -> Ix {
        let len = len.max(1);
        let rank = if lv.item && self.rng.pct(40) {
            self.grid_rank() * self.kk + index::item()
        } else {
            self.grid_rank()
        };
        let edges = !self.unchecked || self.rng.pct(4);
        let c = self.rng.below(4) as u32;
        let choice = if edges {
            self.rng.weighted(&[30, 15, 15, 10, 10, 10, 10])
        } else {
            self.rng.weighted(&[30, 15])
        };
        let i = match choice {
            0 => (rank * (1 + c) + c) % len,
            1 => Expr::lit(self.rng.below(u64::from(len)) as u32),
            // The last element and the one past it.
            2 => (rank + c) % (len + 1),
            3 => Expr::lit(len + self.rng.below(2) as u32),
            // Wraps below 0 for the first threads.
            4 => index::thread_rank() - (c + 1),
            5 => rank + len.saturating_sub(c),
            _ => {
                // Past u32::MAX: only 64 bits reach it (and nothing is there).
                let far = (u64::from(u32::MAX) + 1) * (1 + u64::from(c));
                return Ix::W(rank.cast::<u64>() + far);
            }
        };
        if self.rng.pct(20) {
            Ix::W(i.cast::<u64>())
        } else {
            Ix::N(i)
        }
    }

    /// Declares an input read by index (its length fixed), for expressions to come.
    pub(crate) fn new_indexed_input(&mut self, k: &mut KernelBuilder) {
        let dt = self.dtype();
        let len = self.fixed_len();
        with_dtype!(dt, T => {
            let name = self.name("x");
            let x = k.input::<T>(&name);
            let flavor = if T::DTYPE.is_float() && self.tame {
                Flavor::Small
            } else {
                self.rng.pick(&[Flavor::Small, Flavor::Bits, Flavor::Edges, Flavor::Iota])
            };
            let salt = self.rng.next();
            self.params.push(Param::Input {
                dtype: T::DTYPE,
                data: Data { dtype: T::DTYPE, flavor, salt },
                len: Some(u64::from(len)),
            });
            self.indexed.push(IdxInput { h: T::input(x), dt, len });
        });
    }

    /// A read by index: of an input read by index, or of this thread's element of a
    /// read-write buffer.
    pub(crate) fn global_read(&mut self, lv: &Leaves) -> Option<AnyExpr> {
        if !self.buffers.is_empty() && (self.indexed.is_empty() || self.rng.pct(30)) {
            let b = self.buffers[self.rng.below(self.buffers.len() as u64) as usize].clone();
            let own = self.own_index(&b);
            return Some(with_dtype!(b.dt, T => T::expr(at!(T::of_buffer(&b.h)?, own))));
        }
        if self.indexed.is_empty() {
            return None;
        }
        let x = self.indexed[self.rng.below(self.indexed.len() as u64) as usize].clone();
        let i = self.element_index(x.len, lv);
        Some(with_dtype!(x.dt, T => T::expr(at!(T::of_input(&x.h)?, i))))
    }

    /// The element of buffer `b` this thread owns.
    fn own_index(&self, b: &BufInfo) -> Ix {
        let own = self.grid_rank() * b.stride + b.slot;
        if b.wide {
            Ix::W(own.cast::<u64>())
        } else {
            Ix::N(own)
        }
    }

    /// `y[i] = v` into a new output of a fixed length, at an index around its end.
    pub fn op_write(&mut self, k: &mut KernelBuilder) -> bool {
        let dt = self.dtype();
        let len = self.fixed_len();
        if self.rng.pct(30) {
            self.new_indexed_input(k);
        }
        with_dtype!(dt, T => {
            let name = self.name("y");
            let y = k.output::<T>(&name);
            self.params.push(Param::Output { dtype: T::DTYPE, len: Some(u64::from(len)) });
            let lv = Leaves::varying();
            let i = self.element_index(len, &lv);
            let v = self.expr::<T>(&lv, 2);
            match i {
                Ix::N(i) => k.write(&y, i, v),
                Ix::W(i) => k.write(&y, i, v),
            }
        });
        true
    }

    /// A read-write buffer (new, or one already declared) updated in place: each thread reads
    /// its own element and writes a value made from it back.
    pub fn op_buffer(&mut self, k: &mut KernelBuilder) -> bool {
        let b = if !self.buffers.is_empty() && self.rng.pct(50) {
            self.buffers[self.rng.below(self.buffers.len() as u64) as usize].clone()
        } else {
            let dt = self.dtype();
            let stride = 1 + self.rng.below(3) as u32;
            let slot = self.rng.below(u64::from(stride)) as u32;
            // Long enough for every thread's element, unless a checked kernel cuts it short.
            let need = self.blocks() * self.t * stride;
            let len = if self.unchecked || self.rng.pct(70) {
                need + self.rng.below(5) as u32
            } else {
                1 + self.rng.below(u64::from(need)) as u32
            };
            let wide = self.rng.pct(25);
            let h = with_dtype!(dt, T => {
                let name = self.name("a");
                let a = k.buffer::<T>(&name);
                let flavor = if T::DTYPE.is_float() {
                    Flavor::Small
                } else {
                    self.rng.pick(&[Flavor::Small, Flavor::Bits, Flavor::Iota])
                };
                let salt = self.rng.next();
                self.params.push(Param::Buffer {
                    dtype: T::DTYPE,
                    data: Data { dtype: T::DTYPE, flavor, salt },
                    len: Some(u64::from(len)),
                });
                T::buffer(a)
            });
            let b = BufInfo {
                h,
                dt,
                stride,
                slot,
                wide,
            };
            self.buffers.push(b.clone());
            b
        };
        with_dtype!(b.dt, T => {
            let a = T::of_buffer(&b.h).expect("the buffer's dtype");
            let old: Expr<T> = at!(a, self.own_index(&b));
            let e = self.expr::<T>(&Leaves::varying(), 1);
            let v = if T::DTYPE.is_float() {
                old + e
            } else {
                old * T::small(3) + e
            };
            match self.own_index(&b) {
                Ix::N(i) => k.write(&a, i, v),
                Ix::W(i) => k.write(&a, i, v),
            }
        });
        true
    }

    /// The first element of a run of `items` in a buffer of `len`: aligned or not, inside,
    /// across the end, past it, wrapping past `u32::MAX`, or 64-bit. An unchecked kernel's
    /// runs stay inside (none where the buffer is shorter than the run).
    fn run_index(&mut self, len: u32, items: u32) -> Option<Ix> {
        let rank = self.grid_rank();
        let c = self.rng.below(4) as u32;
        if self.unchecked {
            let starts = len.checked_sub(items)? + 1;
            return Some(Ix::N((rank * items + c) % starts));
        }
        let i = match self.rng.weighted(&[30, 20, 10, 10, 10, 10]) {
            0 => (rank * items + c) % len.max(1),
            // Aligned runs of the grid's threads, the last ones past the end.
            1 => rank * items,
            2 => Expr::lit(self.rng.below(u64::from(len) + 2) as u32),
            // Across the end.
            3 => Expr::lit(len.saturating_sub(c + 1)),
            // The run wraps past u32::MAX.
            4 => Expr::lit(u32::MAX - c),
            _ => {
                let far = u64::from(u32::MAX) - u64::from(c);
                return Some(Ix::W(rank.cast::<u64>() * u64::from(items) + far));
            }
        };
        Some(if self.rng.pct(20) {
            Ix::W(i.cast::<u64>())
        } else {
            Ix::N(i)
        })
    }

    /// Items of a new run: the kernel's items per thread (so other ops take the payload),
    /// or any short length (odd ones move element by element).
    fn run_items(&mut self) -> u32 {
        if self.rng.pct(60) {
            self.kk
        } else {
            1 + self.rng.below(8) as u32
        }
    }

    /// A run of an input read by index into a new payload (free, like a thread's own data).
    pub fn op_read_run(&mut self, k: &mut KernelBuilder) -> bool {
        if self.indexed.is_empty() || self.rng.pct(30) {
            self.new_indexed_input(k);
        }
        let x = self.indexed[self.rng.below(self.indexed.len() as u64) as usize].clone();
        let items = self.run_items();
        let Some(i) = self.run_index(x.len, items) else {
            return false;
        };
        with_dtype!(x.dt, T => {
            let Some(h) = T::of_input(&x.h) else { return false };
            let d = match i {
                Ix::N(i) => k.read_run(&h, i, items),
                Ix::W(i) => k.read_run(&h, i, items),
            };
            self.add(T::data(d), T::DTYPE, items, None);
        });
        true
    }

    /// A fully written payload written as a run into a new output of a fixed length.
    pub fn op_write_run(&mut self, k: &mut KernelBuilder) -> bool {
        let all = self.full(|_| true);
        if all.is_empty() {
            return false;
        }
        let d = self.rng.pick(&all);
        let (dt, items) = (self.datas[d].dt, self.datas[d].k);
        let len = self.fixed_len();
        let Some(i) = self.run_index(len, items) else {
            return false;
        };
        with_dtype!(dt, T => {
            let Some(src) = T::of_data(&self.datas[d].h) else { return false };
            let name = self.name("y");
            let y = k.output::<T>(&name);
            self.params.push(Param::Output { dtype: T::DTYPE, len: Some(u64::from(len)) });
            match i {
                Ix::N(i) => k.write_run(&y, i, &src),
                Ix::W(i) => k.write_run(&y, i, &src),
            }
        });
        self.datas[d].used = true;
        self.datas[d].observed = true;
        true
    }
}

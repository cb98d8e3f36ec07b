//! The kernel body and control flow: statements, branches (`if_`, `if_else`) at every level of
//! uniformity, `for_range` loops (uniform, or varying by thread), `tiles` loops with partial
//! last tiles, shared arrays written in phases between barriers, and block barriers.

use super::expr::{Leaves, to};
use super::{ArrInfo, BLOCK, Gen, NdAccess, THREAD, ViewInfo, WARP};
use crate::common::Rng;
use crate::fuzz::types::{Fz, with_dtype};
use coopgraph::KernelBuilder;
use coopgraph::ir::{DType, Expr, index};
use std::cell::RefCell;
use std::rc::Rc;

impl Gen {
    /// The whole kernel: shared arrays, then statements (maybe inside a `tiles` loop), then
    /// stores of whatever is left unobserved.
    pub fn kernel_body(&mut self, k: &mut KernelBuilder, top: i32) {
        if self.rng.pct(25) {
            for _ in 0..1 + self.rng.below(2) {
                self.declare_array(k);
            }
        }
        self.declare_arrays(k);
        for ai in 0..self.locals.len() {
            if self.rng.pct(60) {
                self.fill_local(k, ai);
            }
        }
        if self.rng.pct(20) {
            self.tiles_loop(k, top);
        } else {
            self.statements(k, top);
        }
        for i in 0..self.datas.len() {
            let d = &self.datas[i];
            if d.alive && d.full && d.rank0.is_none() && !d.observed {
                self.observe(k, i);
            }
        }
        self.observe_vars(k);
    }

    fn declare_array(&mut self, k: &mut KernelBuilder) {
        let t = self.t;
        let len = match self.rng.below(4) {
            0 => t,
            1 => t + 1 + self.rng.below(40) as u32,
            2 => (t / 2).max(1),
            _ => 1 + self.rng.below(u64::from(t) * 2) as u32,
        };
        let dt = self.dtype();
        // A twin declares the array longer than the indices assume.
        let longer = len + 1 + (self.seed % 7) as u32;
        // One dynamic array at most: its launch gives it the length (no twin: another launch
        // length is the same kernel); others of one, two or three dimensions.
        let dynamic = self.dyn_len.is_none() && self.rng.pct(20);
        let declared = if dynamic {
            self.dyn_len = Some(len);
            len
        } else {
            self.tweakable(len, longer)
        };
        let divisors: Vec<u32> = (1..=declared).filter(|d| declared % d == 0).collect();
        let (cols, depth) = (self.rng.pick(&divisors), self.rng.pick(&divisors));
        let shape = if dynamic { 0 } else { self.rng.below(3) };
        let (h, nd) = with_dtype!(dt, T => match shape {
            0 if dynamic => (T::array(k.dynamic_shared_array::<T>()), None),
            1 => {
                let a = k.shared_array_2d::<T>([declared / cols, cols]);
                let nd = NdAccess {
                    read: Rc::new(move |i: Expr<u32>| T::expr(a.read((i.clone() / cols, i % cols)))),
                    write: Rc::new(move |k: &mut KernelBuilder, i: Expr<u32>, v| {
                        k.shared_write(&a, (i.clone() / cols, i % cols), to::<T>(v))
                    }),
                };
                (T::array(a.flat()), Some(nd))
            }
            2 if (declared / depth) % cols == 0 => {
                let (rows, mid) = (declared / depth / cols, cols);
                let a = k.shared_array_3d::<T>([rows, mid, depth]);
                let split = move |i: Expr<u32>| {
                    (i.clone() / (mid * depth), i.clone() / depth % mid, i % depth)
                };
                let nd = NdAccess {
                    read: Rc::new(move |i: Expr<u32>| T::expr(a.read(split(i)))),
                    write: Rc::new(move |k: &mut KernelBuilder, i: Expr<u32>, v| {
                        k.shared_write(&a, split(i), to::<T>(v))
                    }),
                };
                (T::array(a.flat()), Some(nd))
            }
            _ => (T::array(k.shared_array::<T>(declared)), None),
        });
        let mul = loop {
            let a = 1 + 2 * self.rng.below(8) as u32;
            if gcd(a, len) == 1 {
                break a;
            }
        };
        let add = self.rng.below(u64::from(len)) as u32;
        // A view of an integer array's bytes as another integer type that divides them
        // (whichever length the twins declare).
        let size = dt.bytes();
        let fits = |v: DType| {
            (len * size).is_multiple_of(v.bytes()) && (longer * size).is_multiple_of(v.bytes())
        };
        let views: Vec<DType> = (DType::ALL.into_iter())
            .filter(|&v| v.is_int() && v != dt && fits(v))
            .collect();
        let view = (!dynamic && dt.is_int() && !views.is_empty() && self.rng.pct(50)).then(|| {
            let vdt = self.rng.pick(&views);
            let h = with_dtype!(dt, T => {
                let root = T::of_array(&h).expect("the array's dtype");
                with_dtype!(vdt, V => V::array(k.shared_view::<V, T>(&root)))
            });
            ViewInfo { h, dt: vdt }
        });
        self.arrays.push(ArrInfo {
            h,
            dt,
            len,
            pattern: (mul, add, t.min(len)),
            past_end: longer,
            ready: false,
            nd,
            view,
            full: false,
        });
    }

    /// `n` statements (fewer once the case's statement budget is spent), each drawn from a
    /// generator of its own seeded by its path; those the spec skips are left out.
    pub fn statements(&mut self, k: &mut KernelBuilder, n: i32) {
        let region = self.regions.last_mut().map_or(0, |r| {
            *r += 1;
            *r - 1
        });
        for j in 0..n.max(0) as u32 {
            if self.budget <= 0 {
                break;
            }
            self.budget -= 1;
            self.path.push(region * super::ARM + j);
            if !self.skip.contains(&self.path) {
                self.executed.push(self.path.clone());
                let own = Rng::new(super::path_seed(self.seed, &self.path));
                let outer = std::mem::replace(&mut self.rng, own);
                self.regions.push(0);
                self.statement(k);
                self.regions.pop();
                self.rng = outer;
            }
            self.path.pop();
        }
    }

    fn statement(&mut self, k: &mut KernelBuilder) {
        let nested = self.cx().depth < 3 && !self.cx().callback;
        let weights = [
            18,                                                 // load
            6,                                                  // store
            14,                                                 // map
            5,                                                  // fill
            6,                                                  // set_item, assign
            8,                                                  // reduce
            8,                                                  // scan
            6,                                                  // exchange
            3,                                                  // scatter
            8,                                                  // neighbour ops
            if nested { 7 } else { 0 },                         // branch
            if nested { 4 } else { 0 },                         // loop
            if self.arrays.is_empty() { 0 } else { 5 },         // shared array phase
            2,                                                  // barrier, nanosleep
            4,                                                  // write by index
            4,                                                  // read-write buffer
            5,                                                  // atomic
            6,                                                  // variable
            if nested { 3 } else { 0 },                         // while, stepped for
            if self.cx().loop_level.is_some() { 4 } else { 0 }, // break, continue
            if self.cx().callback { 0 } else { 2 },             // return_if
            3,                                                  // read a run
            3,                                                  // write a run
            if self.locals.is_empty() { 0 } else { 5 },         // local array
            2,                                                  // print
            5,                                                  // lane collective
            if self.warps_ok() { 10 } else { 0 },               // groups of whole warps
            8,                                                  // sorts
        ];
        for _ in 0..4 {
            let done = match self.rng.weighted(&weights) {
                0 => self.op_load(k),
                1 => {
                    let all = self.full(|_| true);
                    !all.is_empty() && {
                        let i = self.rng.pick(&all);
                        self.store_data(k, i)
                    }
                }
                2 => self.op_map(k),
                3 => self.op_fill(k),
                4 => self.op_update(k),
                5 => !self.cx().callback && self.op_reduce(k),
                6 => !self.cx().callback && self.op_scan(k),
                7 => !self.cx().callback && self.op_exchange(k),
                8 => self.op_scatter(k),
                9 => !self.cx().callback && self.op_neighbor(k),
                10 => self.branch(k),
                11 => self.for_loop(k),
                12 => self.shared_phase(k),
                // A barrier where the block is uniform; elsewhere (divergent branches,
                // callbacks, partial warps) a pause, which changes nothing.
                13 => {
                    if self.block_uniform() {
                        k.sync_block();
                    } else {
                        k.nanosleep(20 + 10 * self.cx().depth);
                    }
                    true
                }
                14 => self.op_write(k),
                15 => self.op_buffer(k),
                16 => self.op_atomic(k),
                17 => self.op_var(k),
                18 => self.var_loop(k),
                19 => self.op_jump(k),
                20 => self.op_return(k),
                21 => self.op_read_run(k),
                22 => self.op_write_run(k),
                23 => self.op_local(k),
                24 => self.op_print(k),
                25 if self.rng.pct(30) => self.op_warp_segmented(k),
                25 => self.op_lanes(k),
                26 => self.op_warp_groups(k),
                // The block's sorting and counting collectives, each drawn as often as the
                // others.
                _ => match self.rng.below(6) {
                    0 => self.op_histogram(k),
                    1 => self.op_run_length(k),
                    2 => self.op_radix_sort(k),
                    3 => self.op_radix_rank(k),
                    4 => self.op_top_k(k),
                    _ => self.op_merge_sort(k),
                },
            };
            if done {
                return;
            }
        }
    }

    /// Runs `f` in a new region with context `c`, then stores (or folds into the region's
    /// accumulator) what the region made; shared arrays first written inside are not ready
    /// after it.
    pub(crate) fn in_region(
        &mut self,
        k: &mut KernelBuilder,
        c: super::Ctx,
        f: impl FnOnce(&mut Self, &mut KernelBuilder),
    ) {
        let ready: Vec<bool> = self.arrays.iter().map(|a| a.ready).collect();
        let full: Vec<bool> = self.arrays.iter().map(|a| a.full).collect();
        let filled: Vec<bool> = self.locals.iter().map(|a| a.ready).collect();
        self.enter(c);
        let start = self.datas.len();
        f(self, k);
        for i in start..self.datas.len() {
            let d = &self.datas[i];
            if d.alive && d.full && d.rank0.is_none() && !d.observed {
                self.observe(k, i);
            }
        }
        self.observe_vars(k);
        self.leave();
        for ((a, r), f) in self.arrays.iter_mut().zip(ready).zip(full) {
            a.ready = r;
            a.full = f;
        }
        for (a, r) in self.locals.iter_mut().zip(filled) {
            a.ready = r;
        }
    }

    /// An accumulator for a region where no group can store (else the outer one).
    pub(crate) fn accumulator_for(
        &mut self,
        k: &mut KernelBuilder,
        c: &super::Ctx,
    ) -> Option<usize> {
        let stores = self.warps_ok() || c.uni >= BLOCK || c.uni >= self.t;
        if stores {
            c.acc
        } else {
            Some(self.accumulator(k))
        }
    }

    pub(crate) fn region_size(&mut self) -> i32 {
        1 + self.rng.below(4) as i32
    }

    fn branch(&mut self, k: &mut KernelBuilder) -> bool {
        let t = self.t;
        let mut levels = vec![BLOCK, THREAD];
        if t > 32 {
            levels.push(WARP);
        }
        if t > 2 {
            levels.push(1 << (1 + self.rng.below(4)));
        }
        let level = self.rng.pick(&levels);
        let (cond, u) = self.uniform_cond(k, level);
        let mut c = self.child(u);
        c.acc = self.accumulator_for(k, &c);
        let (n1, n2) = (self.region_size(), self.region_size());
        if self.rng.pct(35) {
            let cell = RefCell::new((&mut *self, c));
            k.if_else(
                cond,
                |k| {
                    let mut guard = cell.borrow_mut();
                    let (g, c) = &mut *guard;
                    let c = c.clone();
                    g.in_region(k, c, |g, k| g.statements(k, n1));
                },
                |k| {
                    let mut guard = cell.borrow_mut();
                    let (g, c) = &mut *guard;
                    let c = c.clone();
                    g.in_region(k, c, |g, k| g.statements(k, n2));
                },
            );
        } else {
            k.if_(cond, |k| self.in_region(k, c, |g, k| g.statements(k, n1)));
        }
        true
    }

    fn for_loop(&mut self, k: &mut KernelBuilder) -> bool {
        let (start, end, u): (Expr<u32>, Expr<u32>, u32) = if self.rng.pct(75) {
            let s = self.rng.below(3) as u32;
            let n = self.rng.below(4) as u32;
            let end = if self.rng.pct(50) {
                Expr::lit(s + n)
            } else {
                self.scalar_param::<u32>(k, u64::from(s + n)).expr()
            };
            (Expr::lit(s), end, BLOCK)
        } else {
            let c = self.rng.below(2) as u32;
            (Expr::lit(c), index::thread_rank() % 3u32 + c, THREAD)
        };
        let mut c = self.child(u);
        c.acc = self.accumulator_for(k, &c);
        c.in_loop = true;
        c.loop_level = Some(u);
        c.jump_rel = BLOCK;
        let n = self.region_size();
        k.for_range(start, end, |k, i| {
            c.loops.push((i, u));
            self.in_region(k, c, |g, k| g.statements(k, n));
        });
        true
    }

    fn tiles_loop(&mut self, k: &mut KernelBuilder, top: i32) {
        let tile = self.t * self.kk;
        let grid = self.grid;
        let n = match self.rng.below(5) {
            0 => grid * tile * (1 + self.rng.below(2) as u32),
            1 => {
                grid * tile * (1 + self.rng.below(2) as u32)
                    - 1
                    - self.rng.below(u64::from(tile)) as u32
            }
            2 => tile * (1 + self.rng.below(u64::from(grid) * 2) as u32) + 1,
            3 => self.rng.below(u64::from(tile) + 1) as u32,
            _ => 1 + self.rng.below(u64::from(grid * tile) * 2) as u32,
        };
        self.partial_tiles = n % tile != 0;
        let ns = self.scalar_param::<u32>(k, u64::from(n));
        let mut c = self.child(BLOCK);
        c.in_loop = true;
        c.loop_level = Some(BLOCK);
        c.jump_rel = BLOCK;
        k.tiles(ns, |k, tile| {
            c.loops.push((tile.index.clone(), BLOCK));
            c.tile = Some(tile);
            self.in_region(k, c, |g, k| g.statements(k, top));
        });
    }

    /// A write phase of a shared array: barrier, every writer writes its element, barrier.
    fn shared_phase(&mut self, k: &mut KernelBuilder) -> bool {
        if !self.block_uniform() || self.cx().callback {
            return false;
        }
        let ai = self.rng.below(self.arrays.len() as u64) as usize;
        let a = self.arrays[ai].clone();
        if a.view.is_some() && self.rng.pct(60) {
            self.view_phase(k, ai);
            return true;
        }
        let (mul, add, writers) = a.pattern;
        k.sync_block();
        // The array is not read while it is written.
        self.arrays[ai].ready = false;
        let mut idx = (index::thread_rank() * mul + add) % a.len;
        let mut stray = false;
        if self.rng.pct(3) && self.unchecked && self.feature(super::Defect::SharedArrayOverflow) {
            idx = idx + a.past_end;
            stray = true;
        }
        // With as many writers as elements, the pattern writes each of them.
        if writers >= a.len && !stray {
            self.arrays[ai].full = true;
        }
        let lv = Leaves::varying();
        with_dtype!(a.dt, T => {
            let arr = T::of_array(&a.h).expect("the array's dtype");
            let v = self.expr::<T>(&lv, 2);
            let nd = a.nd.clone().filter(|_| self.rng.pct(70));
            let write = |k: &mut KernelBuilder| match &nd {
                Some(nd) => (nd.write)(k, idx, T::expr(v)),
                None => k.shared_write(&arr, idx, v),
            };
            if writers < self.t {
                k.if_(index::thread_rank().lt(writers), write);
            } else {
                write(k);
            }
        });
        k.sync_block();
        self.arrays[ai].ready = true;
        true
    }

    /// A write phase through array `ai`'s view that writes every byte of the array: barrier,
    /// then the threads take the array's elements in turn (`t`, `t + T`, ...) and write each
    /// through the view (a view narrower than the elements writes all of one element's parts
    /// in one thread; a wider one, whole view elements), barrier.
    fn view_phase(&mut self, k: &mut KernelBuilder, ai: usize) {
        let a = self.arrays[ai].clone();
        let Some(view) = a.view.clone() else {
            return;
        };
        k.sync_block();
        self.arrays[ai].ready = false;
        let lv = Leaves::varying();
        let threads = self.t;
        let (size, vsize) = (a.dt.bytes(), view.dt.bytes());
        let elements = with_dtype!(a.dt, T => T::of_array(&a.h).expect("the array's dtype").len());
        with_dtype!(view.dt, V => {
            let v = V::of_array(&view.h).expect("the view's dtype");
            let value = self.expr::<V>(&lv, 2);
            let t = index::thread_rank();
            if vsize <= size {
                let parts = size / vsize;
                k.for_range_step(t, elements, threads, |k, e| {
                    for j in 0..parts {
                        let at = e.clone() * parts + j;
                        k.shared_write(&v, at.clone(), value.clone() + at.cast::<V>());
                    }
                });
            } else {
                k.for_range_step(t, v.len(), threads, |k, i| {
                    k.shared_write(&v, i.clone(), value.clone() + i.cast::<V>());
                });
            }
        });
        k.sync_block();
        self.arrays[ai].ready = true;
        self.arrays[ai].full = true;
        // Most of the time, each thread's items read elements back through the view or the
        // array (the bytes the other threads wrote).
        if self.rng.pct(70) {
            let (mul, add, _) = a.pattern;
            let at = (index::thread_rank() + index::item()) * mul + add;
            let through_view = self.rng.pct(60);
            let dt = if through_view { view.dt } else { a.dt };
            let d = with_dtype!(dt, V => {
                let e = if through_view {
                    let v = V::of_array(&view.h).expect("the view's dtype");
                    v.read(at % (a.len * size / vsize))
                } else {
                    V::of_array(&a.h).expect("the array's dtype").read(at % a.len)
                };
                let h = k.fill::<V>(e);
                (V::data(h), h.items())
            });
            self.add(d.0, dt, d.1, None);
        }
    }
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The generator views the bytes of its shared arrays as other integer types: some of its
/// kernels write an array through a view (a phase of its own) and read elements of a view
/// (views it declares, at this file's lines, besides those the radix ranks declare).
#[test]
fn generated_kernels_write_and_read_arrays_through_views() {
    use coopgraph::ir::expr::ExprKind;
    use coopgraph::ir::ops::OpKind;
    let (mut writes, mut reads) = (0, 0);
    for i in 0..1500u64 {
        let case = super::generate(&super::Spec::of(i.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        let ir = &case.ir;
        let ours = |a: coopgraph::ir::ArrayId| {
            let d = &ir.arrays[a.index()];
            d.view_of.is_some() && d.loc.file.ends_with("generator/flow.rs")
        };
        writes += usize::from(
            (ir.ops.iter())
                .any(|op| matches!(op.kind, OpKind::SharedWrite { array, .. } if ours(array))),
        );
        reads += usize::from(
            (ir.exprs.nodes().iter())
                .any(|n| matches!(n.kind, ExprKind::SharedRead(a, _) if ours(a))),
        );
    }
    assert!(
        writes >= 10 && reads >= 5,
        "{writes} kernels writing and {reads} reading through views in 1500"
    );
}

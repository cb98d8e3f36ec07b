//! Arrays: shared arrays every thread of the block reads and writes, per-thread local arrays
//! and constant arrays the host fills at build time, each read at run-time indices.

use super::KernelBuilder;
use crate::ir::dtype::Element;
use crate::ir::entities::{ArrayId, ConstId, Loc, LocalId};
use crate::ir::expr::Expr;
use crate::ir::handles::{ConstArray, LocalArray, SharedArray};
use crate::ir::ops::*;

impl KernelBuilder {
    /// Declares a shared array of `len` elements, live for the whole kernel, beside the
    /// planned scratch. Its threads order their own accesses ([`sync_block`](Self::sync_block)).
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// // A histogram of 4 bins, each counted by one thread.
    /// let mut k = KernelBuilder::new("histogram").block(32).items_per_thread(1);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let values = k.shared_array::<u32>(32);
    /// let t = k.load_from(b, &x, Load::direct());
    /// k.shared_write(&values, index::thread_rank(), t.item(0));
    /// k.sync_block();
    /// let count = k.fill(0u32);
    /// k.for_range(0u32, values.len(), |k, i| {
    ///     let hit = values.read(i).eq(index::thread_rank()).select(1u32, 0u32);
    ///     let next = k.map(&count, |c| c + hit);
    ///     k.assign(&count, &next);
    /// });
    /// k.store_to(b, &y, &count, Store::direct().valid_items(4u32));
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[0u32, 1, 1, 2, 2, 2, 3, 3].repeat(4))?;
    /// let mut yb = dev.alloc_zeroed::<u32>(4)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// assert_eq!(yb.to_vec()?, [4, 8, 12, 8]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn shared_array<T: Element>(&mut self, len: u32) -> SharedArray<T> {
        let id = ArrayId(self.ir.arrays.len() as u32);
        self.ir.arrays.push(ArrayDecl {
            dtype: T::DTYPE,
            len,
            loc: Loc::caller(),
        });
        SharedArray::new(id, len, self.lineage.id())
    }

    /// `array[index] = value` (each thread that runs it writes one element).
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Store};
    ///
    /// // Thread t writes t * t at element t; after the barrier, each reads its neighbour's.
    /// let mut k = KernelBuilder::new("squares").block(32).items_per_thread(1);
    /// let y = k.output::<u32>("y");
    /// let b = k.this_block();
    /// let a = k.shared_array::<u32>(32);
    /// let r = index::thread_rank();
    /// k.shared_write(&a, r.clone(), r.clone() * r.clone());
    /// k.sync_block();
    /// let t = k.fill(a.read((r + 1u32) % 32u32));
    /// k.store_to(b, &y, &t, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut yb = dev.alloc_zeroed::<u32>(32)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut yb,))?;
    /// let want: Vec<u32> = (0..32).map(|t| (t + 1) % 32).map(|n| n * n).collect();
    /// assert_eq!(yb.to_vec()?, want);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn shared_write<T: Element>(
        &mut self,
        array: &SharedArray<T>,
        index: impl Into<Expr<u32>>,
        value: impl Into<Expr<T>>,
    ) {
        let loc = Loc::caller();
        let index = self.expr(&index.into());
        let value = self.expr(&value.into());
        let array_id = self.array_id(array);
        self.push(
            OpKind::SharedWrite {
                array: array_id,
                index,
                value,
            },
            loc,
        );
    }

    /// Declares a per-thread array of `len` elements (PTX `.local`): each thread has its own,
    /// read at run-time indices ([`LocalArray::read`]) and written with
    /// [`local_write`](Self::local_write). It holds no value until the thread writes it (the
    /// simulator reports a read of an element never written). An index past the end is out
    /// of bounds: the simulator reports it, naming the array; on the GPU it touches other
    /// local memory of the thread.
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // Each thread counts its input's digits in base 4 into a local histogram, then writes
    /// // the count of digit `t % 4`.
    /// let mut k = KernelBuilder::new("digits").block(32);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let t = index::thread_rank();
    /// let counts = k.local_array::<u32>(4);
    /// k.for_range(0u32, 4u32, |k, d| k.local_write(&counts, d, 0u32));
    /// let v = k.var(x.at(&t));
    /// k.for_range(0u32, 16u32, |k, _| {
    ///     let digit = v.get() % 4u32;
    ///     k.local_write(&counts, digit.clone(), counts.read(digit) + 1u32);
    ///     k.set(&v, v.get() / 4u32);
    /// });
    /// k.write(&y, &t, counts.read(t.clone() % 4u32));
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xs: Vec<u32> = (0..32).map(|i| i * 37).collect();
    /// let xb = dev.upload(&xs)?;
    /// let mut yb = dev.alloc_zeroed::<u32>(32)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// let want: Vec<u32> = (0..32u32)
    ///     .map(|t| (0..16).filter(|i| (xs[t as usize] >> (2 * i)) & 3 == t % 4).count() as u32)
    ///     .collect();
    /// assert_eq!(yb.to_vec()?, want);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn local_array<T: Element>(&mut self, len: u32) -> LocalArray<T> {
        let id = LocalId(self.ir.locals.len() as u32);
        self.ir.locals.push(LocalDecl {
            dtype: T::DTYPE,
            len,
            loc: Loc::caller(),
        });
        LocalArray::new(id, len, self.lineage.id())
    }

    /// `array[index] = value` in the thread's own local array (see
    /// [`local_array`](Self::local_array)).
    #[track_caller]
    pub fn local_write<T: Element>(
        &mut self,
        array: &LocalArray<T>,
        index: impl Into<Expr<u32>>,
        value: impl Into<Expr<T>>,
    ) {
        let loc = Loc::caller();
        let index = self.expr(&index.into());
        let value = self.expr(&value.into());
        let array = self.local_id(array);
        self.push(
            OpKind::LocalWrite {
                array,
                index,
                value,
            },
            loc,
        );
    }

    /// Declares a constant array holding `values` (PTX `.const`): read-only memory every
    /// thread reads ([`ConstArray::read`]), filled when the module loads. The values are part
    /// of the kernel (and of its cache key): another table is another kernel. A kernel's
    /// constant arrays hold at most [`MAX_CONST_BYTES`] in all. An index past the end is out
    /// of bounds: the simulator reports it, naming the array.
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // A 5-tap filter whose weights are constants: y[i] = sum of w[j] * x[i + j].
    /// let w = [0.0625f32, 0.25, 0.375, 0.25, 0.0625];
    /// let mut k = KernelBuilder::new("taps").block(64);
    /// let (x, y) = (k.input::<f32>("x"), k.output::<f32>("y"));
    /// let weights = k.const_array(&w);
    /// let i = index::thread_rank();
    /// let acc = k.var(0.0f32);
    /// k.for_range(0u32, weights.len(), |k, j| {
    ///     k.set(&acc, acc.get() + weights.read(j.clone()) * x.at(i.clone() + j));
    /// });
    /// k.write(&y, &i, acc.get());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xs: Vec<f32> = (0..68).map(|v| (v % 7) as f32).collect();
    /// let xb = dev.upload(&xs)?;
    /// let mut yb = dev.alloc_zeroed::<f32>(64)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// let want: Vec<f32> = (0..64)
    ///     .map(|i| (0..5).fold(0.0, |a, j| a + w[j] * xs[i + j]))
    ///     .collect();
    /// assert_eq!(yb.to_vec()?, want);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn const_array<T: Element>(&mut self, values: &[T]) -> ConstArray<T> {
        let id = ConstId(self.ir.consts.len() as u32);
        let len = u32::try_from(values.len()).unwrap_or(u32::MAX);
        self.ir.consts.push(ConstDecl {
            dtype: T::DTYPE,
            data: values.iter().map(|v| v.to_bits()).collect(),
            loc: Loc::caller(),
        });
        ConstArray::new(id, len, self.lineage.id())
    }
}

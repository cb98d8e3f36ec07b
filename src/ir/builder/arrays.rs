//! Arrays: shared arrays every thread of the block reads and writes, per-thread local arrays
//! and constant arrays the host fills at build time, each read at run-time indices.

use super::KernelBuilder;
use crate::ir::dtype::Element;
use crate::ir::entities::{ArrayId, ConstId, Loc, LocalId};
use crate::ir::expr::Expr;
use crate::ir::handles::{ArrayIndex, ConstArray, LocalArray, SharedArray};
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
        self.declare_shared([len], false, Loc::caller())
    }

    /// Declares a shared array of `[rows, cols]` elements, read and written at `(i, j)`
    /// (row-major: element `i * cols + j`). As [`shared_array`](Self::shared_array), its
    /// threads order their accesses with [`sync_block`](Self::sync_block); the planner
    /// places no barrier for it, and the simulator reports a missing one as a race.
    ///
    /// ```
    /// use coopgraph::ir::index::{self, Axis};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // Each row of a 4 x 32 block sums its row of the tile: y[r] = sum of tile[r][..].
    /// let mut k = KernelBuilder::new("row_sums").block_dims([32, 4, 1]);
    /// let (x, y) = (k.input::<f32>("x"), k.output::<f32>("y"));
    /// let (tx, ty) = (index::thread_idx(Axis::X), index::thread_idx(Axis::Y));
    /// let tile = k.shared_array_2d::<f32>([4, 32]);
    /// k.shared_write(&tile, (ty.clone(), tx.clone()), x.at(index::thread_rank()));
    /// k.sync_block();
    /// k.if_(tx.eq(0u32), |k| {
    ///     let sum = k.var(0.0f32);
    ///     k.for_range(0u32, 32u32, |k, j| k.set(&sum, sum.get() + tile.read((ty.clone(), j))));
    ///     k.write(&y, ty, sum.get());
    /// });
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&(0..128).map(|v| v as f32).collect::<Vec<f32>>())?;
    /// let mut yb = dev.alloc_zeroed::<f32>(4)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// assert_eq!(yb.to_vec()?, [496.0, 1520.0, 2544.0, 3568.0]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn shared_array_2d<T: Element>(&mut self, dims: [u32; 2]) -> SharedArray<T, 2> {
        self.declare_shared(dims, false, Loc::caller())
    }

    /// Declares a shared array of `[a, b, c]` elements, read and written at `(i, j, k)`
    /// (row-major: element `(i * b + j) * c + k`); see
    /// [`shared_array_2d`](Self::shared_array_2d).
    ///
    /// ```
    /// use coopgraph::ir::index::{self, Axis};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // A 4 x 4 x 4 block writes its coordinates' sum into a 3-D array, then reads it back
    /// // with x and z swapped.
    /// let mut k = KernelBuilder::new("cube").block_dims([4, 4, 4]);
    /// let y = k.output::<u32>("y");
    /// let [x, yy, z] = Axis::ALL.map(index::thread_idx);
    /// let cube = k.shared_array_3d::<u32>([4, 4, 4]);
    /// let v = x.clone() + yy.clone() * 10u32 + z.clone() * 100u32;
    /// k.shared_write(&cube, (z.clone(), yy.clone(), x.clone()), v);
    /// k.sync_block();
    /// k.write(&y, index::thread_rank(), cube.read((x, yy, z)));
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut yb = dev.alloc_zeroed::<u32>(64)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut yb,))?;
    /// let want: Vec<u32> = (0..64u32).map(|r| (r % 4) * 100 + (r / 4 % 4) * 10 + r / 16).collect();
    /// assert_eq!(yb.to_vec()?, want);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn shared_array_3d<T: Element>(&mut self, dims: [u32; 3]) -> SharedArray<T, 3> {
        self.declare_shared(dims, false, Loc::caller())
    }

    /// Declares the kernel's dynamic shared array: its length is given at each launch
    /// ([`LaunchConfig::with_dynamic_array_len`]), and the runtime adds its bytes to the
    /// planner's own dynamic scratch (the array lies after it), so it coexists with every
    /// collective. A launch that gives no length is
    /// [`RuntimeError::DynamicArrayUnsized`]; a kernel has at most one such array
    /// ([`VerifyErrorKind::SecondDynamicArray`]). Its [`len`](SharedArray::len) is 0 here;
    /// an index past the length the launch gave is out of bounds (the simulator reports it).
    ///
    /// [`LaunchConfig::with_dynamic_array_len`]: crate::runtime::LaunchConfig::with_dynamic_array_len
    /// [`RuntimeError::DynamicArrayUnsized`]: crate::runtime::RuntimeError::DynamicArrayUnsized
    /// [`VerifyErrorKind::SecondDynamicArray`]: crate::ir::VerifyErrorKind::SecondDynamicArray
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::{Device, LaunchConfig, RuntimeError};
    /// use coopgraph::KernelBuilder;
    ///
    /// // A block reverses n elements (n given at launch) through a dynamic array.
    /// let mut k = KernelBuilder::new("reverse").block(64);
    /// let (x, y) = (k.input::<i32>("x"), k.output::<i32>("y"));
    /// let n = k.scalar::<u32>("n");
    /// let buf = k.dynamic_shared_array::<i32>();
    /// let t = index::thread_rank();
    /// k.for_range_step(t.clone(), n, 64u32, |k, i| k.shared_write(&buf, i.clone(), x.at(&i)));
    /// k.sync_block();
    /// k.for_range_step(t, n, 64u32, |k, i| {
    ///     k.write(&y, &i, buf.read(n.expr() - 1u32 - i.clone()));
    /// });
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let f = dev.compile(&kernel)?;
    /// let xb = dev.upload(&(0..100).collect::<Vec<i32>>())?;
    /// let mut yb = dev.alloc_zeroed::<i32>(100)?;
    /// f.launch(LaunchConfig::blocks(1).with_dynamic_array_len(100), (&xb, &mut yb, 100u32))?;
    /// assert_eq!(yb.to_vec()?, (0..100).rev().collect::<Vec<i32>>());
    /// // Without a length, the launch is refused.
    /// let unsized_launch = f.launch_grid(1, (&xb, &mut yb, 100u32));
    /// assert!(matches!(unsized_launch, Err(RuntimeError::DynamicArrayUnsized { .. })));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn dynamic_shared_array<T: Element>(&mut self) -> SharedArray<T> {
        self.declare_shared([0], true, Loc::caller())
    }

    /// Records a shared array of extents `dims` (or the dynamic one).
    fn declare_shared<T: Element, const D: usize>(
        &mut self,
        dims: [u32; D],
        dynamic: bool,
        loc: Loc,
    ) -> SharedArray<T, D> {
        let id = ArrayId(self.ir.arrays.len() as u32);
        let (len, extents) = if dynamic {
            (0, Vec::new())
        } else {
            let len = dims.iter().fold(1u32, |n, &d| n.saturating_mul(d));
            (len, dims.to_vec())
        };
        self.ir.arrays.push(ArrayDecl {
            dtype: T::DTYPE,
            len,
            dims: extents,
            dynamic,
            view_of: None,
            inside: false,
            loc,
        });
        SharedArray::new(id, dims, dynamic, self.lineage.id())
    }

    /// A shared array of `len` elements for the library's own algorithm, whose every access
    /// it proves inside the array by construction: the accesses go unguarded (see
    /// [`ArrayDecl::inside`](crate::ir::ArrayDecl::inside)).
    #[track_caller]
    pub(crate) fn shared_array_inside<T: Element>(&mut self, len: u32) -> SharedArray<T> {
        let a = self.declare_shared([len], false, Loc::caller());
        self.ir.arrays[a.id.index()].inside = true;
        a
    }

    /// The bytes of shared array `array` seen as elements of `U` (C++'s `union` of shared
    /// storage, CUB's aliased temp storage): as many as fit in its bytes, in one dimension,
    /// element `i` at byte `i * size_of::<U>()` of the array. Reads and writes through either
    /// handle reach the same memory (little-endian, as the GPU lays it out), and the planner
    /// orders them as accesses of one array; the threads order their own accesses with
    /// [`sync_block`](Self::sync_block), as for any shared array. An array of two or three
    /// dimensions is viewed through its [`flat`](SharedArray::flat) handle; a view of a view
    /// is a view of the first array; a view of the kernel's dynamic array is refused by
    /// [`build`](Self::build) ([`VerifyErrorKind::DynamicArrayView`]).
    ///
    /// [`VerifyErrorKind::DynamicArrayView`]: crate::ir::VerifyErrorKind::DynamicArrayView
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // 16-bit counters, two in each 32-bit word: each thread bumps its own two halves,
    /// // then reads back whole words.
    /// let mut k = KernelBuilder::new("halves").block(32);
    /// let y = k.output::<u32>("y");
    /// let t = index::thread_rank();
    /// let words = k.shared_array::<u32>(32);
    /// let halves = k.shared_view::<u16, _>(&words);
    /// assert_eq!(halves.len(), 64);
    /// k.shared_write(&words, t.clone(), 0u32);
    /// let low = t.clone() * 2u32;
    /// k.shared_write(&halves, low.clone(), halves.read(low) + t.cast::<u16>());
    /// k.shared_write(&halves, t.clone() * 2u32 + 1u32, 7u16);
    /// k.sync_block();
    /// k.write(&y, t.clone(), words.read((t + 1u32) % 32u32));
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut yb = dev.alloc_zeroed::<u32>(32)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut yb,))?;
    /// let want: Vec<u32> = (0..32).map(|t| (7 << 16) | ((t + 1) % 32)).collect();
    /// assert_eq!(yb.to_vec()?, want);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn shared_view<U: Element, T: Element>(
        &mut self,
        array: &SharedArray<T>,
    ) -> SharedArray<U> {
        let loc = Loc::caller();
        let root = self.array_id(array);
        self.flush_foreign(loc);
        let root = self.ir.array_storage(root);
        let len = (self.ir.arrays.get(root.index())).map_or(0, |a| a.bytes() / U::DTYPE.bytes());
        let id = ArrayId(self.ir.arrays.len() as u32);
        self.ir.arrays.push(ArrayDecl {
            dtype: U::DTYPE,
            len,
            dims: vec![len],
            dynamic: false,
            view_of: Some(root),
            inside: false,
            loc,
        });
        SharedArray::new(id, [len], false, self.lineage.id())
    }

    /// `array[index] = value` (each thread that runs it writes one element); `index` has one
    /// `u32` per dimension of the array (`(i, j)` for a 2-D one).
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
    pub fn shared_write<T: Element, const D: usize>(
        &mut self,
        array: &SharedArray<T, D>,
        index: impl ArrayIndex<D>,
        value: impl Into<Expr<T>>,
    ) {
        let loc = Loc::caller();
        let index = self.expr(&index.linear(&array.dims));
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
    /// [`local_array`](Self::local_array) for an example). An index past the end is out of
    /// bounds: the simulator reports it, naming the array.
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

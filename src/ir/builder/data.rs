//! Payloads: declaring thread data, and the element-wise ops over it.

use super::KernelBuilder;
use crate::ir::dtype::Element;
use crate::ir::entities::{DataId, Loc};
use crate::ir::expr::Expr;
use crate::ir::handles::ThreadData;
use crate::ir::ops::*;
use smallvec::smallvec;

impl KernelBuilder {
    /// A new payload of the default items per thread, all slots unwritten.
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Store};
    ///
    /// let mut k = KernelBuilder::new("pairs").block(32).items_per_thread(2);
    /// let y = k.output::<u32>("y");
    /// let b = k.this_block();
    /// let t = k.thread_data::<u32>();
    /// assert_eq!(t.items(), 2);
    /// k.set_item(&t, 0, index::thread_rank());
    /// k.set_item(&t, 1, index::thread_rank() + 100u32);
    /// k.store_to(b, &y, &t, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut yb = dev.alloc_zeroed::<u32>(64)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut yb,))?;
    /// let ys = yb.to_vec()?;
    /// assert_eq!(&ys[..4], [0, 100, 1, 101]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn thread_data<T: Element>(&mut self) -> ThreadData<T> {
        let items = self.ir.items_per_thread;
        self.thread_data_n(items)
    }

    /// A new payload of `items` items per thread, all slots unwritten. A slot read before it
    /// is written is an error when the kernel is built.
    ///
    /// ```
    /// use coopgraph::ir::VerifyErrorKind;
    /// use coopgraph::{Error, KernelBuilder, Store};
    ///
    /// let mut k = KernelBuilder::new("half_written").block(32).items_per_thread(2);
    /// let y = k.output::<u32>("y");
    /// let b = k.this_block();
    /// let t = k.thread_data_n::<u32>(2);
    /// k.set_item(&t, 0, 7u32);
    /// k.store_to(b, &y, &t, Store::direct());
    /// let Err(Error::Verify(e)) = k.build() else { panic!("built") };
    /// assert!(matches!(e.errors[0].kind, VerifyErrorKind::UninitializedRead { item: 1, .. }));
    /// ```
    #[track_caller]
    pub fn thread_data_n<T: Element>(&mut self, items: u32) -> ThreadData<T> {
        let loc = Loc::caller();
        if items == 0 || items > MAX_ITEMS_PER_THREAD {
            self.ir.issues.push(BuilderIssue::Items { items, loc });
        }
        let id = DataId(self.ir.datas.len() as u32);
        self.ir.datas.push(DataDecl {
            dtype: T::DTYPE,
            items,
            align: None,
            var: false,
            loc,
        });
        ThreadData::new(id, items, self.lineage.id())
    }

    /// A new payload of `items` items per thread whose items may be moved in vectors of at
    /// most `alignment` bytes (a power of two, at least the element size): `vectorize` loads
    /// and stores into it use no wider accesses.
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// // Eight u32 per thread, moved 8 bytes at a time.
    /// let mut k = KernelBuilder::new("pairs").block(32).items_per_thread(8);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let t = k.thread_data_aligned::<u32>(8, 8);
    /// k.load_into(b, &x, &t, Load::vectorize());
    /// k.store_to(b, &y, &t, Store::vectorize());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let f = dev.compile(&kernel)?;
    /// let ptx = &f.image().ptx;
    /// assert!(ptx.contains(".v2.u32") && !ptx.contains(".v4"));
    /// let xs: Vec<u32> = (0..256).collect();
    /// let xb = dev.upload(&xs)?;
    /// let mut yb = dev.alloc_zeroed::<u32>(256)?;
    /// f.launch_grid(1, (&xb, &mut yb))?;
    /// assert_eq!(yb.to_vec()?, xs);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn thread_data_aligned<T: Element>(&mut self, items: u32, alignment: u32) -> ThreadData<T> {
        let loc = Loc::caller();
        let t = self.thread_data_n::<T>(items);
        if !alignment.is_power_of_two() || alignment < T::DTYPE.bytes() {
            self.ir.issues.push(BuilderIssue::DataAlign {
                align: alignment,
                loc,
            });
        }
        self.ir.datas[t.id.index()].align = Some(alignment);
        t
    }

    /// A new payload with `f` applied to every item of `src`.
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("celsius").block(32).items_per_thread(1);
    /// let (x, y) = (k.input::<f32>("fahrenheit"), k.output::<i32>("celsius"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let c = k.map(&t, |f| ((f - 32.0) * (5.0 / 9.0)).round_even().cast::<i32>());
    /// k.store_to(b, &y, &c, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&[212.0f32, 32.0, -40.0, 98.6].repeat(8))?;
    /// let mut yb = dev.alloc_zeroed::<i32>(32)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// assert_eq!(yb.to_vec()?[..4], [100, 0, -40, 37]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn map<T: Element, U: Element>(
        &mut self,
        src: &ThreadData<T>,
        f: impl FnOnce(Expr<T>) -> Expr<U>,
    ) -> ThreadData<U> {
        let loc = Loc::caller();
        let dst = self.thread_data_n::<U>(src.items);
        let body = f(Expr::arg(0));
        let expr = self.expr(&body);
        let src_id = self.data_id(src);
        self.push(
            OpKind::Map {
                dst: dst.id,
                srcs: smallvec![src_id],
                expr,
            },
            loc,
        );
        dst
    }

    /// A new payload with `f` applied to every pair of items of `a` and `b`.
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// let mut k = KernelBuilder::new("hypot").block(32).items_per_thread(1);
    /// let (a, b, y) = (k.input::<f32>("a"), k.input::<f32>("b"), k.output::<f32>("y"));
    /// let block = k.this_block();
    /// let ta = k.load_from(block, &a, Load::direct());
    /// let tb = k.load_from(block, &b, Load::direct());
    /// let h = k.map2(&ta, &tb, |a, b| (a.clone() * a + b.clone() * b).sqrt());
    /// k.store_to(block, &y, &h, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let (ab, bb) = (dev.upload(&[3.0f32; 32])?, dev.upload(&[4.0f32; 32])?);
    /// let mut yb = dev.alloc_zeroed::<f32>(32)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&ab, &bb, &mut yb))?;
    /// assert_eq!(yb.to_vec()?, [5.0; 32]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn map2<A: Element, B: Element, U: Element>(
        &mut self,
        a: &ThreadData<A>,
        b: &ThreadData<B>,
        f: impl FnOnce(Expr<A>, Expr<B>) -> Expr<U>,
    ) -> ThreadData<U> {
        let loc = Loc::caller();
        let dst = self.thread_data_n::<U>(a.items);
        let body = f(Expr::arg(0), Expr::arg(1));
        let expr = self.expr(&body);
        let a_id = self.data_id(a);
        let b_id = self.data_id(b);
        self.push(
            OpKind::Map {
                dst: dst.id,
                srcs: smallvec![a_id, b_id],
                expr,
            },
            loc,
        );
        dst
    }

    /// A new payload whose every slot is `value` (which may use
    /// [`index::item`](crate::ir::index::item)).
    ///
    /// A fill has no arrangement of its own: each consumer reads its slots as positions of
    /// the arrangement it needs (so a fill of a constant costs no exchange anywhere). Flags
    /// or ranks of a [`scatter`](Self::scatter) that are free are read in the arrangement of
    /// the other, since the two describe the same items.
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Store};
    ///
    /// // Each thread's items are its blocked positions: rank * 4 + item.
    /// let mut k = KernelBuilder::new("iota").block(32).items_per_thread(4);
    /// let y = k.output::<u32>("y");
    /// let b = k.this_block();
    /// let t = k.fill(index::thread_rank() * 4u32 + index::item());
    /// k.store_to(b, &y, &t, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut yb = dev.alloc_zeroed::<u32>(128)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut yb,))?;
    /// assert_eq!(yb.to_vec()?, (0..128).collect::<Vec<u32>>());
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn fill<T: Element>(&mut self, value: impl Into<Expr<T>>) -> ThreadData<T> {
        let loc = Loc::caller();
        let dst = self.thread_data::<T>();
        let expr = self.expr(&value.into());
        self.push(
            OpKind::Map {
                dst: dst.id,
                srcs: smallvec![],
                expr,
            },
            loc,
        );
        dst
    }

    /// Writes one slot of a payload (a slot past the payload's items is an error when the
    /// kernel is built).
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// // Swap each thread's two items.
    /// let mut k = KernelBuilder::new("swap").block(32).items_per_thread(2);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let t = k.load_from(b, &x, Load::direct());
    /// let s = k.thread_data::<u32>();
    /// k.set_item(&s, 0, t.item(1));
    /// k.set_item(&s, 1, t.item(0));
    /// k.store_to(b, &y, &s, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&(0..64).collect::<Vec<u32>>())?;
    /// let mut yb = dev.alloc_zeroed::<u32>(64)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// assert_eq!(yb.to_vec()?[..4], [1, 0, 3, 2]);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn set_item<T: Element>(
        &mut self,
        dst: &ThreadData<T>,
        item: u32,
        value: impl Into<Expr<T>>,
    ) {
        let loc = Loc::caller();
        if item >= dst.items {
            self.ir.issues.push(BuilderIssue::ItemOutOfRange {
                item,
                items: dst.items,
                loc,
            });
        }
        let expr = self.expr(&value.into());
        let dst_id = self.data_id(dst);
        self.push(
            OpKind::SetItem {
                dst: dst_id,
                item,
                expr,
            },
            loc,
        );
    }

    /// Copies `src` into `dst`, slot by slot.
    ///
    /// ```
    /// use coopgraph::runtime::Device;
    /// use coopgraph::{KernelBuilder, Load, Store};
    ///
    /// // Doubling x three times: the loop updates one payload in place.
    /// let mut k = KernelBuilder::new("times_eight").block(32).items_per_thread(1);
    /// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    /// let b = k.this_block();
    /// let acc = k.load_from(b, &x, Load::direct());
    /// k.for_range(0u32, 3u32, |k, _| {
    ///     let doubled = k.map(&acc, |v| v * 2u32);
    ///     k.assign(&acc, &doubled);
    /// });
    /// k.store_to(b, &y, &acc, Store::direct());
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let xb = dev.upload(&(0..32).collect::<Vec<u32>>())?;
    /// let mut yb = dev.alloc_zeroed::<u32>(32)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&xb, &mut yb))?;
    /// assert_eq!(yb.to_vec()?, (0..32).map(|v| v * 8).collect::<Vec<u32>>());
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn assign<T: Element>(&mut self, dst: &ThreadData<T>, src: &ThreadData<T>) {
        let loc = Loc::caller();
        let dst_id = self.data_id(dst);
        let src_id = self.data_id(src);
        self.push(
            OpKind::Assign {
                dst: dst_id,
                src: src_id,
            },
            loc,
        );
    }
}

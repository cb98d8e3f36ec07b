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
    #[track_caller]
    pub fn thread_data<T: Element>(&mut self) -> ThreadData<T> {
        let items = self.ir.items_per_thread;
        self.thread_data_n(items)
    }

    /// A new payload of `items` items per thread, all slots unwritten.
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
            loc,
        });
        ThreadData::new(id, items, self.lineage.id())
    }

    /// A new payload of `items` items per thread whose items may be moved in vectors of at
    /// most `alignment` bytes (a power of two, at least the element size): `vectorize` loads
    /// and stores into it use no wider accesses.
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

    /// Writes one slot of a payload.
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

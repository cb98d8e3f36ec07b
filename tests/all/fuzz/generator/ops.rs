//! Data ops: loads and stores (every algorithm, offsets, valid counts, defaults, temp
//! storages), maps, fills, per-slot writes and assignments, and the sinks that make every
//! payload observable.

use super::expr::{Leaves, constant, to};
use super::{DInfo, Defect, Gen, StInfo};
use crate::fuzz::interp::payload_arrangement;
use crate::fuzz::types::{Fz, with_dtype};
use coopgraph::KernelBuilder;
use coopgraph::ir::Element;
use coopgraph::ir::{
    Algorithm, Arrangement, Expr, Group, GroupKind, Load, Sharing, StorageSpec, Store, TempStorage,
    ThreadData, ValidOf, index,
};

/// Slot `i` of a payload, as `T`.
pub(crate) fn slot<T: Fz>(d: &DInfo, i: u32) -> Expr<T> {
    with_dtype!(d.dt, S => {
        let h = S::of_data(&d.h).expect("the payload's dtype");
        let e = h.item(i);
        to::<T>(S::expr(e))
    })
}

/// The typed handle of a payload.
pub(crate) fn handle<T: Fz>(d: &DInfo) -> ThreadData<T> {
    T::of_data(&d.h).expect("the payload's dtype")
}

/// The access groups of an algorithm's own exchange, if it has one with `k` items.
fn own_exchange(a: Algorithm, g: u32, k: u32) -> Option<u32> {
    if k <= 1 {
        return None;
    }
    match a {
        Algorithm::Transpose => Some(g),
        Algorithm::WarpTranspose | Algorithm::WarpTransposeTimesliced => Some(32),
        _ => None,
    }
}

impl Gen {
    /// Algorithms a group may use here, with `k` items.
    fn algorithms(&self, g: &Group, k: u32) -> Vec<Algorithm> {
        let block = g.kind() == GroupKind::Block;
        let gt = self.group_threads(g);
        Algorithm::ALL
            .into_iter()
            .filter(|a| block || a.for_warps())
            .filter(|a| a.for_warps() || self.warps_ok())
            .filter(|&a| own_exchange(a, gt, k).is_none_or(|s| self.exchange_ok(s)))
            .collect()
    }

    /// An offset for a transfer of `span` elements per block by groups of `group` threads
    /// (`disjoint`: blocks, tiles and groups get disjoint ranges, as stores need).
    fn offset(
        &mut self,
        k: &mut KernelBuilder,
        span: u32,
        group: u32,
        disjoint: bool,
    ) -> Expr<u32> {
        let o = self.offset_tree(k, span, group, disjoint);
        // Shared nodes keep the value and the uniformity.
        self.shared(o)
    }

    /// The offset of [`Gen::offset`] before any sharing.
    fn offset_tree(
        &mut self,
        k: &mut KernelBuilder,
        span: u32,
        group: u32,
        disjoint: bool,
    ) -> Expr<u32> {
        let pad = self.rng.below(3) as u32 * self.rng.pick(&[1, 7, 32]);
        let stride = span + pad;
        let c = self.rng.below(9) as u32;
        if let Some(tile) = self.cx().tile.clone()
            && self.rng.pct(60)
        {
            return tile.index * stride + c;
        }
        let choice = if disjoint {
            self.rng.weighted(&[60, 25, 15])
        } else {
            self.rng.weighted(&[40, 15, 15, 15, 15])
        };
        match choice {
            0 => self.block_id() * stride + c,
            1 => {
                let base = self.rng.below(64) as u32;
                let s = self.scalar_param::<u32>(k, u64::from(base));
                self.block_id() * stride + s.expr()
            }
            2 if disjoint => {
                // A loop counter's stretch of its own.
                match self
                    .cx()
                    .loops
                    .iter()
                    .find(|(_, u)| *u >= super::BLOCK)
                    .cloned()
                {
                    Some((lv, _)) => (self.block_id() * 4u32 + lv) * stride + c,
                    None => self.block_id() * stride,
                }
            }
            2 => Expr::lit(self.rng.below(200) as u32),
            3 => {
                let v = self.rng.below(100) as u32;
                self.scalar_param::<u32>(k, u64::from(v)).expr()
            }
            // Each warp group its own offset (it must be uniform across the group only).
            _ if group < self.t => self.block_id() * stride + index::thread_rank() / group * 5u32,
            _ => self.block_id() * stride + c * 3,
        }
    }

    /// A valid count for a transfer by groups of `group` threads of `items` items each: a
    /// group's own count (around the edges of its tile) or the block's.
    fn valid_count(
        &mut self,
        k: &mut KernelBuilder,
        group: u32,
        items: u32,
    ) -> (Expr<u32>, ValidOf) {
        let of = if group < self.t && self.rng.pct(50) {
            ValidOf::Group
        } else {
            ValidOf::Block
        };
        let extent = match of {
            ValidOf::Group => group * items,
            ValidOf::Block => self.t * items,
        };
        (self.valid(k, extent), of)
    }

    /// A valid count around the edges of a tile of `extent` elements.
    fn valid(&mut self, k: &mut KernelBuilder, extent: u32) -> Expr<u32> {
        let v = self.valid_tree(k, extent);
        self.shared(v)
    }

    /// The count of [`Gen::valid`] before any sharing.
    fn valid_tree(&mut self, k: &mut KernelBuilder, extent: u32) -> Expr<u32> {
        let v = match self.rng.below(7) {
            0 => 0,
            1 => 1,
            2 => extent.saturating_sub(1),
            3 => extent,
            4 => extent + 1,
            _ => self.rng.below(u64::from(extent) * 2 + 1) as u32,
        };
        if let Some(tile) = self.cx().tile.clone()
            && self.rng.pct(50)
        {
            return tile.valid.min(v);
        }
        match self.rng.below(3) {
            0 => Expr::lit(v),
            1 => self.scalar_param::<u32>(k, u64::from(v)).expr(),
            _ => {
                // The pipeline's count: what is left of `n` past this block's origin.
                let n = self.grid * extent - self.rng.below(u64::from(extent) + 1) as u32;
                let n = self.scalar_param::<u32>(k, u64::from(n)).expr();
                let origin = index::block_index() * extent;
                n.gt(origin.clone()).select(n - origin, 0u32)
            }
        }
    }

    /// A temp storage for an algorithm's exchange (sometimes), and whether a barrier must
    /// follow the op using it.
    fn storage(&mut self, k: &mut KernelBuilder, bytes: u32) -> Option<(TempStorage, bool)> {
        if !self.block_uniform() || !self.rng.pct(30) {
            return None;
        }
        let reuse: Vec<usize> = (0..self.storages.len())
            .filter(|&i| !self.storages[i].exclusive)
            .filter(|&i| {
                self.storages[i]
                    .size
                    .is_none_or(|s| s >= bytes + bytes / 8 + 64)
            })
            .collect();
        let i = if !reuse.is_empty() && self.rng.pct(40) {
            self.rng.pick(&reuse)
        } else {
            let mut spec = StorageSpec::default();
            let mut declared = None;
            if self.rng.pct(40) {
                let size = bytes * 2 + 64;
                declared = Some(size);
                let size = self.tweakable(size, size + 128);
                spec = spec.size_in_bytes(size);
            }
            if self.rng.pct(40) {
                let a = self.rng.pick(&[8u32, 16, 32, 64, 128]);
                let a = self.tweakable(a, a * 2);
                spec = spec.alignment(a);
            }
            // Barriers are placed by the untweaked choice, so a twin differs in the spec only.
            let auto_sync = !self.rng.pct(30);
            let tweaked = self.tweakable(auto_sync, true);
            spec = spec.auto_sync(tweaked);
            let exclusive = self.rng.pct(20);
            if exclusive {
                let s = self.tweakable(Sharing::Exclusive, Sharing::Shared);
                spec = spec.sharing(s);
            }
            let h = k.temp_storage(spec);
            self.storages.push(StInfo {
                h,
                size: declared,
                auto_sync,
                exclusive,
                users: 0,
            });
            self.storages.len() - 1
        };
        let st = &mut self.storages[i];
        st.users += 1;
        let (manual, users, h) = (!st.auto_sync, st.users, st.h);
        // Without auto-sync, ordering the storage's users is ours; its bytes may also be
        // another storage's, so (unless that is what is tested) a barrier on both sides.
        let alias = !manual || self.feature(Defect::ManualStorageAlias);
        if manual && (users > 1 || self.cx().in_loop || !alias) {
            k.sync_block();
        }
        Some((h, manual && !alias))
    }

    /// Loads a new payload (or into an existing one).
    pub fn op_load(&mut self, k: &mut KernelBuilder) -> bool {
        let groups = self.groups(k, true);
        if groups.is_empty() {
            return false;
        }
        let g = groups[self.rng.below(groups.len() as u64) as usize];
        let dt = self.dtype();
        with_dtype!(dt, T => self.load_t::<T>(k, g))
    }

    fn load_t<T: Fz>(&mut self, k: &mut KernelBuilder, g: Group) -> bool {
        let gt = self.group_threads(&g);
        let in_tiles = self.cx().tile.is_some();
        let explicit = self.rng.pct(35);
        let mut items = self.kk;
        // The default offset steps by the kernel's tile: other items need an offset.
        if explicit && self.rng.pct(12) {
            items = 1 + self.rng.below(8) as u32;
        }
        let algs = self.algorithms(&g, items);
        if algs.is_empty() {
            return false;
        }
        let alg = self.rng.pick(&algs);
        let arr = payload_arrangement(alg, gt);
        let span = self.t * items;
        let mut opts = Load::<T>::direct().algorithm(alg);
        let offset = explicit.then(|| self.offset(k, span, gt, false));
        if let Some(o) = &offset {
            opts = opts.offset(o);
        }
        // Inside `tiles`, the valid count defaults to the tile's, which a payload of more
        // items than the kernel's overruns.
        let mut partial = in_tiles && (self.partial_tiles || items > self.kk);
        let mut valid = None;
        if self.rng.pct(30) {
            let (v, of) = self.valid_count(k, gt, items);
            opts = match of {
                ValidOf::Group => opts.valid_items(&v),
                ValidOf::Block => opts.block_valid_items(&v),
            };
            valid = Some((v, of));
            partial = true;
        }
        let pass_through = partial && self.rng.pct(15);
        if partial && !pass_through {
            opts = opts.oob_default(constant::<T>(self));
        }
        let mut sync_after = false;
        if let Some(s) = own_exchange(alg, gt, items)
            && let Some((st, after)) = self.storage(k, span * T::DTYPE.bytes() + s)
        {
            opts = opts.temp_storage(&st);
            sync_after = after;
        }
        // Into an existing payload of the same arrangement, or a new one.
        let targets = self.full(|d| {
            d.dt == T::DTYPE
                && d.k == items
                && match d.arr {
                    Some(a) => a.same_positions(arr, items),
                    None => !d.used,
                }
        });
        let x = self.input::<T>(k);
        let reuse = !pass_through && !targets.is_empty() && self.rng.pct(25);
        let idx = if reuse {
            let i = self.rng.pick(&targets);
            k.load_into(g, &x, &handle::<T>(&self.datas[i]), opts.clone());
            i
        } else {
            let d = if items == self.kk && self.rng.pct(70) {
                k.load_from(g, &x, opts.clone())
            } else {
                let d = if self.rng.pct(20) {
                    let a = T::DTYPE.bytes() * self.rng.pick(&[1u32, 2, 4]);
                    let a = self.tweakable(a, (a * 2).min(16).max(T::DTYPE.bytes()));
                    k.thread_data_aligned::<T>(items, a)
                } else {
                    k.thread_data_n::<T>(items)
                };
                k.load_into(g, &x, &d, opts.clone());
                d
            };
            self.add(T::data(d), T::DTYPE, items, Some(arr))
        };
        if sync_after {
            k.sync_block();
        }
        let d = &mut self.datas[idx];
        if d.arr.is_none() {
            d.arr = Some(arr);
        }
        d.used = true;
        if pass_through {
            // Slots past the valid items are unwritten: only the same store may take them.
            self.datas[idx].full = false;
            self.datas[idx].observed = true;
            let y = self.output::<T>(k);
            let h = handle::<T>(&self.datas[idx]);
            let h = if self.rng.pct(50) {
                k.map(&h, |v| v * T::small(3) + T::small(1))
            } else {
                h
            };
            let mut st = Store::default().algorithm(match arr {
                Arrangement::Blocked => self.rng.pick(&[Algorithm::Direct, Algorithm::Vectorize]),
                // Warp-striped over a wider group: only the warp-striped store keeps it.
                Arrangement::Striped { threads: 32 } if gt != 32 => Algorithm::WarpStriped,
                _ => Algorithm::Striped,
            });
            if let Some(o) = offset {
                st = st.offset(o);
            }
            st = match valid {
                Some((v, ValidOf::Group)) => st.valid_items(v),
                Some((v, ValidOf::Block)) => st.block_valid_items(v),
                None => st,
            };
            k.store_to(g, &y, &h, st);
        }
        true
    }

    /// Stores payload `i` if a group can here; returns whether it did.
    pub fn store_data(&mut self, k: &mut KernelBuilder, i: usize) -> bool {
        let d = self.datas[i].clone();
        with_dtype!(d.dt, T => self.store_t::<T>(k, i))
    }

    fn store_t<T: Fz>(&mut self, k: &mut KernelBuilder, i: usize) -> bool {
        let d = self.datas[i].clone();
        let groups = self.groups(k, true);
        if groups.is_empty() {
            return false;
        }
        let g = groups[self.rng.below(groups.len() as u64) as usize];
        let gt = self.group_threads(&g);
        let algs: Vec<Algorithm> = self
            .algorithms(&g, d.k)
            .into_iter()
            .filter(|&a| self.conv_ok(d.arr, payload_arrangement(a, gt), d.k))
            .collect();
        if algs.is_empty() {
            return false;
        }
        let alg = self.rng.pick(&algs);
        self.note_conv(d.arr, payload_arrangement(alg, gt), d.k);
        let span = self.t * d.k;
        let mut st = Store::default().algorithm(alg);
        // The default offset steps by the kernel's tile: other items need an offset.
        let explicit = d.k != self.kk || self.rng.pct(30);
        if self.rng.pct(3) {
            // Past anything the kernel writes, with nothing valid there.
            st = st
                .offset(self.block_id() * span + 70_000u32)
                .block_valid_items(0u32);
        } else if explicit {
            st = st.offset(self.offset(k, span, gt, true));
        }
        if self.rng.pct(25) {
            let (v, mut of) = self.valid_count(k, gt, d.k);
            // A group's own count cannot follow positions a conversion brings from other
            // groups: the conversion's groups must nest in the store's (6 threads do not in
            // 8, nor 64 in 32).
            let need = payload_arrangement(alg, gt);
            let across = super::span(d.arr, need);
            let converts = d.arr.is_some_and(|a| !a.same_positions(need, d.k));
            if converts && !gt.is_multiple_of(across) && of == ValidOf::Group {
                if self.expect_reject.is_none()
                    && self.rng.pct(50)
                    && self.feature(Defect::GroupCountAcrossGroups)
                {
                    self.expect_reject = Some(super::ACROSS_GROUPS);
                } else {
                    of = ValidOf::Block;
                }
            }
            st = match of {
                ValidOf::Group => st.valid_items(v),
                ValidOf::Block => st.block_valid_items(v),
            };
        }
        let mut sync_after = false;
        if let Some(s) = own_exchange(alg, gt, d.k)
            && let Some((h, after)) = self.storage(k, span * T::DTYPE.bytes() + s)
        {
            st = st.temp_storage(&h);
            sync_after = after;
        }
        let y = self.output::<T>(k);
        k.store_to(g, &y, &handle::<T>(&d), st);
        if sync_after {
            k.sync_block();
        }
        let d = &mut self.datas[i];
        d.observed = true;
        d.used = true;
        true
    }

    /// `map` or `map2` over visible payloads.
    pub fn op_map(&mut self, k: &mut KernelBuilder) -> bool {
        let srcs = self.full(|_| true);
        if srcs.is_empty() {
            return false;
        }
        let a = self.rng.pick(&srcs);
        let da = self.datas[a].clone();
        let twos = self.full(|d| d.k == da.k && d.dt == da.dt);
        let b = (self.rng.pct(40) && !twos.is_empty()).then(|| self.rng.pick(&twos));
        // The result takes the first arranged operand's arrangement; the others convert.
        let arr = da.arr.or(b.and_then(|b| self.datas[b].arr));
        if let Some(b) = b
            && !self.conv_ok(self.datas[b].arr, arr.unwrap_or(Arrangement::Blocked), da.k)
        {
            return false;
        }
        if let (Some(b), Some(arr)) = (b, arr) {
            self.note_conv(self.datas[b].arr, arr, da.k);
        }
        if self.rng.pct(30) {
            self.new_scalar(k);
        }
        if self.rng.pct(15) {
            self.new_indexed_input(k);
        }
        let out = if self.rng.pct(60) {
            da.dt
        } else {
            self.dtype()
        };
        let depth = 1 + self.rng.below(3) as u32;
        // An operand the map converts: its slots, read in the body, are the converted ones.
        let mut exclude = Vec::new();
        if let (Some(b), Some(arr)) = (b, arr)
            && !self.datas[b]
                .arr
                .is_none_or(|x| x.same_positions(arr, da.k))
            && !self.feature(Defect::ItemOfConvertedOperand)
        {
            exclude.push(self.datas[b].h.id());
        }
        let h = with_dtype!(da.dt, A => with_dtype!(out, U => {
            let ha = handle::<A>(&da);
            let r = match b {
                None => k.map(&ha, |x| {
                    let lv = Leaves::map(vec![A::expr(x)]);
                    self.expr::<U>(&lv, depth)
                }),
                Some(b) => {
                    let hb = handle::<A>(&self.datas[b]);
                    k.map2(&ha, &hb, |x, y| {
                        let mut lv = Leaves::map(vec![A::expr(x), A::expr(y)]);
                        lv.exclude = exclude;
                        self.expr::<U>(&lv, depth)
                    })
                }
            };
            U::data(r)
        }));
        self.datas[a].used = true;
        if let Some(b) = b {
            self.datas[b].used = true;
        }
        let i = self.add(h, out, da.k, arr);
        self.datas[i].used = arr.is_some();
        true
    }

    /// A fill, or a payload written slot by slot.
    pub fn op_fill(&mut self, k: &mut KernelBuilder) -> bool {
        let dt = self.dtype();
        if self.rng.pct(20) {
            self.new_scalar(k);
        }
        if self.rng.pct(15) {
            self.new_indexed_input(k);
        }
        with_dtype!(dt, T => {
            let h = if self.rng.pct(70) {
                let lv = Leaves { item: true, ..Leaves::varying() };
                let depth = self.rng.below(3) as u32;
                let e = self.expr::<T>(&lv, depth);
                k.fill::<T>(e)
            } else {
                let items = if self.rng.pct(70) { self.kk } else { 1 + self.rng.below(6) as u32 };
                let h = k.thread_data_n::<T>(items);
                for i in 0..items {
                    let e = self.expr::<T>(&Leaves::varying(), 2);
                    k.set_item(&h, i, e);
                }
                h
            };
            let items = h.items();
            self.add(T::data(h), T::DTYPE, items, None);
        });
        true
    }

    /// A per-slot write or an assignment into an existing payload.
    pub fn op_update(&mut self, k: &mut KernelBuilder) -> bool {
        let dsts = self.full(|_| true);
        if dsts.is_empty() {
            return false;
        }
        let di = self.rng.pick(&dsts);
        let d = self.datas[di].clone();
        if self.rng.pct(50) {
            let i = self.rng.below(u64::from(d.k)) as u32;
            with_dtype!(d.dt, T => {
                let e = self.expr::<T>(&Leaves::varying(), 2);
                k.set_item(&handle::<T>(&d), i, e);
            });
            return true;
        }
        // An assignment: into an arranged payload (the source converts), or between free ones.
        let srcs =
            self.full(|s| s.dt == d.dt && s.k == d.k && (d.arr.is_some() || s.arr.is_none()));
        let srcs: Vec<usize> = srcs
            .into_iter()
            .filter(|&s| s != di)
            .filter(|&s| match d.arr {
                Some(a) => self.conv_ok(self.datas[s].arr, a, d.k),
                None => true,
            })
            .collect();
        if srcs.is_empty() {
            return false;
        }
        let si = self.rng.pick(&srcs);
        if let Some(a) = d.arr {
            self.note_conv(self.datas[si].arr, a, d.k);
        }
        with_dtype!(d.dt, T => {
            k.assign(&handle::<T>(&d), &handle::<T>(&self.datas[si]));
        });
        self.datas[si].used = true;
        self.datas[di].used = true;
        true
    }

    /// Makes payload `i` observable: a store where one can run, else folded slot by slot into
    /// the region's accumulator.
    pub fn observe(&mut self, k: &mut KernelBuilder, i: usize) {
        if self.datas[i].observed {
            return;
        }
        if !self.cx().callback && self.store_data(k, i) {
            return;
        }
        let Some(acc) = self.cx().acc else {
            return;
        };
        let (d, a) = (self.datas[i].clone(), self.datas[acc].clone());
        with_dtype!(a.dt, A => {
            let ha = handle::<A>(&a);
            for s in 0..d.k.min(a.k).min(4) {
                let x = slot::<A>(&d, s);
                let v = if A::DTYPE.is_float() {
                    ha.item(s) + x
                } else {
                    ha.item(s) * A::small(31) + x
                };
                k.set_item(&ha, s, v);
            }
        });
        self.datas[i].observed = true;
    }

    /// A new accumulator for a region to fold what it cannot store into.
    pub fn accumulator(&mut self, k: &mut KernelBuilder) -> usize {
        let dt = self.dtype();
        with_dtype!(dt, T => {
            let h = k.fill::<T>(Expr::lit(T::small(self.rng.below(5) as i64)));
            self.add(T::data(h), T::DTYPE, self.kk, None)
        })
    }
}

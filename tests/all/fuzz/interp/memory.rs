//! Memory as the interpreter sees it: shared and local arrays, loads and stores of tiles,
//! and global elements read and written by index, with who wrote each element last and
//! whether that write is ordered before a later access.

use super::value::{self, NONDET, UNDEF, UNSPEC, V};
use super::*;

impl Block<'_> {
    /// Where element `idx` of shared array `a` lies, or `None` past the array's end: in the
    /// array that holds its bytes (`a`, or the array it views), from element `first` for
    /// `cells` elements, at bit `shift` of the first (a view narrower than those elements
    /// shares one; a wider one spans several).
    fn span(&self, a: usize, idx: u64) -> Option<Span> {
        let decl = &self.ir.arrays[a];
        let Some(root) = decl.view_of.map(|r| r.index()) else {
            return (idx < self.arrays[a].len() as u64).then_some(Span {
                root: a,
                first: idx as usize,
                cells: 1,
                shift: 0,
            });
        };
        if idx >= u64::from(decl.len) {
            return None;
        }
        let (size, cell) = (
            u64::from(decl.dtype.bytes()),
            u64::from(self.ir.arrays[root].dtype.bytes()),
        );
        let byte = idx * size;
        Some(Span {
            root,
            first: (byte / cell) as usize,
            cells: size.div_ceil(cell) as usize,
            shift: (byte % cell * 8) as u32,
        })
    }

    /// Reads (`write: None`) or writes element `i` of shared array `a` by thread `t`, checking
    /// bounds and races (a read that may not happen, `maybe`, reports either as uncertain).
    /// Past the end, a checked kernel's guard reads 0 and skips the write; an unchecked one
    /// faults. Through a view, races are those of the elements of the viewed array it
    /// touches: writes by two threads to two parts of one element count as a race (the
    /// generator makes none; the simulator checks bytes).
    pub(super) fn shared_access(
        &mut self,
        a: usize,
        t: usize,
        i: V,
        write: Option<V>,
        maybe: bool,
    ) -> V {
        let op = self.op;
        let idx = i.bits;
        let Some(span) = self.span(a, idx) else {
            // The library's own array is accessed unguarded: an index past it is its bug,
            // whatever the kernel's bounds mode.
            if self.ir.arrays[a].inside && i.known() {
                self.event(Event::InsideArrayOob {
                    op,
                    array: a,
                    index: idx,
                });
            }
            if self.ir.bounds == Bounds::Checked {
                return if i.known() {
                    V::exact(0)
                } else {
                    V::with(0, UNSPEC)
                };
            }
            self.event(if maybe {
                Event::Uncertain { op }
            } else {
                Event::SharedOob {
                    op,
                    array: a,
                    index: idx,
                }
            });
            return V::with(0, UNSPEC);
        };
        let e = self.epoch;
        let root = span.root;
        let mut raced = false;
        for c in span.first..span.first + span.cells {
            let key = atomic::CellKey::Shared {
                array: root,
                index: c as u64,
                block: self.b,
            };
            let what = if write.is_some() {
                atomic::What::Write
            } else {
                atomic::What::Read
            };
            let cell = self.arrays[root][c];
            // A plain access unordered with an atomic of the element races with it.
            let with_atomic = (self.access(key, t, what).iter())
                .any(|o| matches!(o.what, atomic::What::Atomic { .. }));
            let order = &self.order;
            let cell_key = (root, c as u64);
            let race = with_atomic
                || order.write_unordered(cell.writer, t, e)
                || (write.is_some() && order.reads_unordered(cell.reader, cell_key, t, e));
            if race && !raced {
                raced = true;
                self.event(if maybe {
                    Event::Uncertain { op }
                } else {
                    Event::SharedRace {
                        op,
                        array: a,
                        index: idx,
                    }
                });
            }
            let me = self.order.rec(t, e);
            let c = &mut self.arrays[root][c];
            match write {
                Some(_) => {
                    c.writer = Some(me);
                    self.order.written(&mut c.reader, cell_key);
                }
                None => self.order.read(&mut c.reader, cell_key, me),
            }
        }
        let (dt, cell_dt) = (self.ir.arrays[a].dtype, self.ir.arrays[root].dtype);
        let (size, cell_bytes) = (dt.bytes(), cell_dt.bytes());
        let cells = &mut self.arrays[root][span.first..span.first + span.cells];
        match write {
            Some(v) if size == cell_bytes => cells[0].set(v),
            Some(v) if size < cell_bytes => cells[0].set_part(v, span.shift, dt, cell_dt),
            Some(v) => {
                // Several whole elements, low bytes first.
                let w = cell_bytes * 8;
                for (j, c) in cells.iter_mut().enumerate() {
                    c.set(V::with(
                        (v.bits >> (j as u32 * w)) & value::mask(cell_dt),
                        v.flags,
                    ));
                }
            }
            None => {}
        }
        if write.is_some() && !i.known() {
            self.unsure[root] = true;
        }
        let cells = &self.arrays[root][span.first..span.first + span.cells];
        let v = if size == cell_bytes {
            cells[0].v
        } else if size < cell_bytes {
            cells[0].part(span.shift, dt)
        } else {
            let w = cell_bytes * 8;
            cells.iter().enumerate().fold(V::exact(0), |acc, (j, c)| {
                V::with(
                    acc.bits | (c.v.bits << (j as u32 * w)),
                    acc.flags | c.v.flags,
                )
            })
        };
        // After a write at an index the interpreter does not know (one computed from an
        // unspecified value: a sort's digit of a NaN whose sign it does not know), that write
        // may have landed on any element: every element read is unspecified (one that seems
        // unwritten included), as a scatter by unknown ranks leaves its tile.
        if write.is_none() && self.unsure[root] {
            return V::with(v.bits, (v.flags & !UNDEF) | UNSPEC);
        }
        v
    }

    /// Thread `t`'s element `i` of local array `a`, or `None` past its end (an out-of-bounds
    /// event in an unchecked kernel, none in a checked one, whose guard reads 0 and skips the
    /// write; uncertain where the access may not happen, `maybe`).
    pub(super) fn local_cell(&mut self, a: usize, t: usize, i: V, maybe: bool) -> Option<&mut V> {
        let len = self.ir.locals[a].len as u64;
        if i.bits >= len && i.known() && self.ir.bounds == Bounds::Checked {
            return None;
        }
        if i.bits >= len || !i.known() {
            let op = self.op;
            self.event(if maybe || !i.known() {
                Event::Uncertain { op }
            } else {
                Event::ArrayOob {
                    op,
                    local: true,
                    array: a,
                    index: i.bits,
                }
            });
            return None;
        }
        self.locals[a].get_mut(t * len as usize + i.bits as usize)
    }

    /// The offset and valid count of a transfer for thread `t`.
    pub(super) fn transfer_bounds(&mut self, t: &Transfer, th: usize) -> (V, Option<(V, ValidOf)>) {
        let tiles = self.tiles.last().copied();
        let offset = match t.offset {
            Some(e) => self.eval(e, self.cx(th)),
            None => match tiles {
                Some(op) => V::exact(self.loops[&op][th][1]),
                None => {
                    let tile = self.ir.block_threads() * self.ir.items_per_thread;
                    V::exact(u64::from(self.at[0].wrapping_mul(tile)))
                }
            },
        };
        // A tiles loop's count is the block's.
        let valid = match t.valid {
            Some(v) => Some((self.eval(v.count, self.cx(th)), v.of)),
            None => tiles.map(|op| (V::exact(self.loops[&op][th][2]), ValidOf::Block)),
        };
        self.check_defined(offset, "a transfer offset");
        if let Some((v, _)) = valid {
            self.check_defined(v, "a valid count");
        }
        (offset, valid)
    }

    /// For each thread touching global memory in a transfer: the elements it touches, as
    /// `(position in the block's tile, element index or None when not valid)`.
    pub(super) fn transfer_elements(
        &mut self,
        t: &Transfer,
        active: &[bool],
    ) -> Vec<(u32, Option<u64>, bool)> {
        let ir = self.ir;
        let g = ir.group_threads(t.group);
        let k = self.items(t.data);
        let acc = access_arrangement(t.algorithm, g);
        let warp_group = matches!(
            ir.groups[t.group.index()].kind,
            GroupKind::LogicalWarp { .. } | GroupKind::Warps { .. }
        );
        // A checked kernel's accesses stop at the buffer's end: positions from `len - offset`
        // on are not read or written (an unchecked kernel's are the launch's business).
        let len = match (ir.bounds, &self.launch.args[t.param.index()]) {
            (
                Bounds::Checked,
                Arg::Input { len, .. } | Arg::Output { len, .. } | Arg::Buffer { len, .. },
            ) => *len,
            _ => None,
        };
        let mut out = Vec::new();
        for th in 0..self.threads {
            if !active[th] {
                continue;
            }
            let (offset, valid) = self.transfer_bounds(t, th);
            let room = len.map(|l| l.saturating_sub(offset.bits & 0xffff_ffff));
            for i in 0..k {
                let q = position(acc, k, th as u32, i);
                // A group's own count covers its tile; the block's, the block's tile (a
                // group's share is what of it falls in the group's tile).
                let local = if warp_group {
                    q - (th as u32 / g) * g * k
                } else {
                    q
                };
                let ok = match valid {
                    None => true,
                    Some((v, ValidOf::Group)) => u64::from(local) < v.bits & 0xffff_ffff,
                    Some((v, ValidOf::Block)) => u64::from(q) < v.bits & 0xffff_ffff,
                } && room.is_none_or(|r| u64::from(q) < r);
                let elem = (offset.bits as u32).wrapping_add(q) as u64;
                let unknown = !offset.known() || valid.is_some_and(|(v, _)| !v.known());
                out.push((q, ok.then_some(elem), unknown));
            }
        }
        out
    }

    pub(super) fn note_index(&mut self, param: usize, idx: u64) {
        let m = &mut self.out.max_index[param];
        *m = Some(m.map_or(idx, |x| x.max(idx)));
    }

    pub(super) fn load(&mut self, op: OpId, t: &Transfer, active: &[bool]) {
        let ir = self.ir;
        let p = t.param.index();
        if !ir.params[p].role.readable() {
            return;
        }
        let g = ir.group_threads(t.group);
        let k = self.items(t.data);
        let have = payload_arrangement(t.algorithm, g);
        let dtype = self.dtype(t.data);
        let default = t.oob_default.map(|b| V::exact(b & value::mask(dtype)));
        for (q, elem, unknown) in self.transfer_elements(t, active) {
            let (th, i) = owner(have, k, q);
            let v = match elem {
                Some(e) => {
                    self.note_index(p, e);
                    match self.global_value(p, e, th as usize, dtype) {
                        Some(v) => Some(v),
                        None => {
                            self.global_oob(op, th as usize, p, e);
                            Some(V::with(0, UNSPEC))
                        }
                    }
                }
                None => default,
            };
            if let Some(mut v) = v {
                if unknown {
                    v.flags |= UNSPEC;
                }
                if (th as usize) < self.threads {
                    self.set(t.data, th as usize, i, v);
                }
            }
        }
    }

    pub(super) fn store(&mut self, op: OpId, t: &Transfer, active: &[bool]) {
        let ir = self.ir;
        let p = t.param.index();
        let g = ir.group_threads(t.group);
        let k = self.items(t.data);
        let need = payload_arrangement(t.algorithm, g);
        let vals = self.view(t.data, Some(need), active);
        let epoch = self.epoch;
        for (q, elem, unknown) in self.transfer_elements(t, active) {
            let Some(e) = elem else { continue };
            let (th, i) = owner(need, k, q);
            let Some(mut v) = vals.get((th * k + i) as usize).copied() else {
                continue;
            };
            self.check_defined(v, "a stored value");
            if unknown {
                v.flags |= UNSPEC;
            }
            self.note_index(p, e);
            if self.past_end(p, e) {
                self.global_oob(op, th as usize, p, e);
                continue;
            }
            v.flags |= self.taint[th as usize];
            self.write_cell(p, e, th, v, epoch);
        }
    }

    /// The length of buffer parameter `p` (`None`: unbounded, or not a buffer).
    pub(super) fn buffer_len(&self, p: usize) -> Option<u64> {
        match &self.launch.args[p] {
            Arg::Input { len, .. } | Arg::Output { len, .. } | Arg::Buffer { len, .. } => *len,
            Arg::Scalar(_) => None,
        }
    }

    /// Element `e` of output or read-write buffer `p` as an atomic finds it: its last write,
    /// else its value before the launch (whose accesses the atomics order among themselves).
    pub(super) fn element(&mut self, p: usize, e: u64, _th: usize, dtype: DType) -> V {
        if let Some(c) = self.out.outputs[p].get(&e) {
            return c.v;
        }
        match &self.launch.args[p] {
            Arg::Output { before, .. } | Arg::Buffer { value: before, .. } => {
                V::exact(before(e) & value::mask(dtype))
            }
            Arg::Input { value, .. } => V::exact(value(e) & value::mask(dtype)),
            Arg::Scalar(_) => V::with(0, UNSPEC),
        }
    }

    /// An atomic's write of element `e` of buffer `p` (the atomics order it themselves).
    pub(super) fn put_element(&mut self, p: usize, e: u64, th: u32, v: V, epoch: u32) {
        let writer = (self.b, th, epoch);
        self.out.outputs[p].insert(e, Cell { v, writer });
    }

    /// Whether element `e` is past the end of buffer `p`.
    pub(super) fn past_end(&self, p: usize, e: u64) -> bool {
        self.buffer_len(p).is_some_and(|l| e >= l)
    }

    /// Element `e` of buffer `p` as thread `th` reads it: an input's value, a read-write
    /// buffer's last write (unspecified when another thread wrote it unordered) or its value
    /// before the launch; `None` past the buffer's end.
    pub(super) fn global_value(&mut self, p: usize, e: u64, th: usize, dtype: DType) -> Option<V> {
        if self.past_end(p, e) {
            return None;
        }
        let launch = self.launch;
        Some(match &launch.args[p] {
            Arg::Input { value, .. } => V::exact(value(e) & value::mask(dtype)),
            Arg::Buffer { value, .. } => match self.out.outputs[p].get(&e) {
                Some(c) => {
                    let (b, w, epoch) = c.writer;
                    let ordered = b == self.b && (w == th as u32 || epoch < self.epoch);
                    if ordered {
                        c.v
                    } else {
                        V::with(c.v.bits, c.v.flags | UNSPEC | NONDET)
                    }
                }
                None => V::exact(value(e) & value::mask(dtype)),
            },
            _ => V::with(0, UNSPEC),
        })
    }

    /// Thread `th` writes `v` to element `e` of buffer `p`: a write ordered after the last
    /// (the same thread's, or before a barrier of the same block) replaces it; an unordered
    /// one of another value (or of a value not known) leaves it unspecified, and one of the same
    /// known value leaves either
    /// thread the last writer (so a later write of either is unordered with the other's).
    pub(super) fn write_cell(&mut self, p: usize, e: u64, th: u32, v: V, epoch: u32) {
        let writer = (self.b, th, epoch);
        let cells = &mut self.out.outputs[p];
        match cells.get_mut(&e) {
            None => {
                cells.insert(e, Cell { v, writer });
            }
            Some(c) => {
                let ordered = c.writer.0 == writer.0 && (c.writer.1 == th || c.writer.2 < epoch);
                if ordered {
                    *c = Cell { v, writer };
                } else {
                    // Values the interpreter does not know may differ even where its
                    // stand-ins agree: the element then depends on the order too.
                    if c.v != v || !c.v.known() || !v.known() {
                        c.v.flags |= UNSPEC | NONDET;
                    }
                    // Once two blocks have written it, no later write is ordered after both:
                    // blocks do not wait for each other.
                    let block = if c.writer.0 == writer.0 {
                        writer.0
                    } else {
                        SEVERAL
                    };
                    c.writer = (block, SEVERAL, epoch);
                }
            }
        }
    }

    /// `param[index] = value` by every active thread: past the buffer's end a checked kernel
    /// writes nothing, an unchecked one faults.
    pub(super) fn global_write(
        &mut self,
        param: usize,
        index: ExprId,
        value: ExprId,
        active: &[bool],
    ) {
        let (op, epoch) = (self.op, self.epoch);
        let checked = self.ir.bounds == Bounds::Checked;
        for t in 0..self.threads {
            if !active[t] {
                continue;
            }
            let i = self.eval(index, self.cx(t));
            let mut v = self.eval(value, self.cx(t));
            self.check_defined(i, "a buffer index");
            self.check_defined(v, "a value written to a buffer");
            if !i.known() {
                // The generator writes at indices it knows; an unknown one could be anywhere.
                self.event(Event::Uncertain { op });
                continue;
            }
            self.note_index(param, i.bits);
            if self.past_end(param, i.bits) {
                if !checked {
                    self.global_oob(op, t, param, i.bits);
                }
                continue;
            }
            v.flags |= self.taint[t];
            self.write_cell(param, i.bits, t as u32, v, epoch);
        }
    }

    /// `dst[j] = buffer[i + j]` for each active thread's run: element by element as reads by
    /// index are (the index computed without wrapping, so a run past `u32::MAX` is past the
    /// end).
    pub(super) fn read_run(&mut self, param: usize, index: ExprId, dst: DataId, active: &[bool]) {
        let dtype = self.ir.datas[dst.index()].dtype;
        for t in 0..self.threads {
            if !active[t] {
                continue;
            }
            let i = self.eval(index, self.cx(t));
            self.check_defined(i, "a buffer index");
            for j in 0..self.ir.datas[dst.index()].items {
                let e = V::with(i.bits + u64::from(j), i.flags);
                let v = self.global_read(param, e, t, dtype, false);
                self.set(dst, t, j, v);
            }
        }
    }

    /// `buffer[i + j] = src[j]` for each active thread's run, element by element as writes
    /// by index are.
    pub(super) fn write_run(&mut self, param: usize, index: ExprId, src: DataId, active: &[bool]) {
        let (op, epoch) = (self.op, self.epoch);
        let checked = self.ir.bounds == Bounds::Checked;
        let items = self.ir.datas[src.index()].items;
        for t in 0..self.threads {
            if !active[t] {
                continue;
            }
            let i = self.eval(index, self.cx(t));
            self.check_defined(i, "a buffer index");
            for j in 0..items {
                let mut v = self.get(src, t, j);
                self.check_defined(v, "a value written to a buffer");
                if !i.known() {
                    self.event(Event::Uncertain { op });
                    continue;
                }
                let e = i.bits + u64::from(j);
                self.note_index(param, e);
                if self.past_end(param, e) {
                    if !checked {
                        self.global_oob(op, t, param, e);
                    }
                    continue;
                }
                v.flags |= self.taint[t];
                self.write_cell(param, e, t as u32, v, epoch);
            }
        }
    }

    /// A read of element `i` of buffer `p` by thread `t`: past the end, a checked kernel reads
    /// 0 and an unchecked one faults (a read that may not happen, `maybe`, is uncertain).
    pub(super) fn global_read(&mut self, p: usize, i: V, t: usize, dtype: DType, maybe: bool) -> V {
        if !i.known() {
            return V::with(0, UNSPEC);
        }
        self.note_index(p, i.bits);
        match self.global_value(p, i.bits, t, dtype) {
            Some(v) => v,
            None if self.ir.bounds == Bounds::Checked => V::exact(0),
            None if maybe => {
                self.event(Event::Uncertain { op: self.op });
                V::with(0, UNSPEC)
            }
            None => {
                self.global_oob(self.op, t, p, i.bits);
                V::with(0, UNSPEC)
            }
        }
    }

    /// An access by thread `t` of element `index` past the end of buffer `param` in an
    /// unchecked kernel: a fault the device must report, unless the thread runs under a
    /// branch whose condition is unspecified, where the access may not happen (uncertain).
    pub(super) fn global_oob(&mut self, op: OpId, t: usize, param: usize, index: u64) {
        self.event(if self.taint[t] & UNSPEC != 0 {
            Event::Uncertain { op }
        } else {
            Event::GlobalOob { op, param, index }
        });
    }
}

/// Where an element of a shared array lies in the array holding its bytes.
struct Span {
    root: usize,
    first: usize,
    cells: usize,
    /// The element's first bit in the first cell (within one cell only).
    shift: u32,
}

impl SCell {
    /// Its part of `dt` at bit `shift` (a narrower view's element): undefined while any of
    /// its bytes is.
    fn part(&self, shift: u32, dt: DType) -> V {
        let bits = (self.v.bits >> shift) & value::mask(dt);
        let undef = if self.undef & bytes_of(shift, dt.bytes()) != 0 {
            UNDEF
        } else {
            0
        };
        V::with(bits, (self.v.flags & !UNDEF) | undef)
    }

    /// Writes its part of `dt` at bit `shift` with `v`; `cell` is its own dtype. The other
    /// bytes keep their bits and definedness; what is known of the whole gathers the flags
    /// of both.
    fn set_part(&mut self, v: V, shift: u32, dt: DType, cell: DType) {
        let mask = value::mask(dt) << shift;
        self.v.bits = ((self.v.bits & !mask) | ((v.bits << shift) & mask)) & value::mask(cell);
        let bytes = bytes_of(shift, dt.bytes());
        self.undef = if v.undef() {
            self.undef | bytes
        } else {
            self.undef & !bytes
        };
        let undef = if self.undef & bytes_of(0, cell.bytes()) != 0 {
            UNDEF
        } else {
            0
        };
        self.v.flags = ((self.v.flags | v.flags) & !UNDEF) | undef;
    }
}

/// The bits of [`SCell::undef`] for `size` bytes from bit `shift` of an element.
fn bytes_of(shift: u32, size: u32) -> u8 {
    (((1u32 << size) - 1) << (shift / 8)) as u8
}

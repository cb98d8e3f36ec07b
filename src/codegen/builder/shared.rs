//! Shared memory in the emission builder: the kernel's shared declarations as the plan lays
//! them out (each shared array's own, and the window of exchanges, collectives and temp
//! storages), the addresses of arrays, collectives' slots and segments, and the loads and
//! stores that reach them.

use super::*;

/// The symbol of the planned window (exchanges, collectives, temp storages).
pub const WINDOW_SYMBOL: &str = "scratch";

/// The kernel's shared declarations, as the plan lays them out, and which is which.
pub(crate) struct SharedSymbols {
    /// The declarations, in [`Function::shared`] order: the dynamic one first (the writer
    /// prints it at module scope, before the function, and the parser lists it first).
    pub decls: Vec<SharedDecl>,
    /// Where each shared array lives.
    arrays: Vec<ArraySymbol>,
    /// The index of the window's declaration, where the plan has a window.
    window: Option<u32>,
    /// Base addresses read so far, by declaration index.
    bases: FxHashMap<u32, Reg>,
}

/// Where a shared array lives: a declaration of its own, or its slice of the window.
#[derive(Clone, Copy)]
enum ArraySymbol {
    /// The index of its declaration.
    Own(u32),
    /// A declaration it shares (the window's, or the dynamic part's), and its offset there.
    Window { decl: u32, offset: u32 },
}

/// Declares each shared array that has a declaration of its own (named as the IR listing
/// names it, `smem0`, with its type, length and source line in the comment) and the window.
pub(super) fn shared_symbols(ir: &Ir, plan: &Plan) -> Lowered<SharedSymbols> {
    let layout = &plan.shared;
    let mut decls = Vec::new();
    let window_decl = |bytes: u32, what: &str| SharedDecl {
        name: WINDOW_SYMBOL.into(),
        align: layout.window_align,
        bytes,
        comment: Some(format!(
            "planned scratch: exchanges, collectives, temp storages{what}"
        )),
    };
    // The dynamic part is declared first: the dynamic window (which the dynamic array
    // follows), or the dynamic array alone; a static window after the arrays' own
    // declarations.
    let own = (layout.arrays.iter().take(ir.arrays.len()))
        .filter(|&&h| h == ArrayHome::Own)
        .count() as u32;
    let dynamic_window = layout.window_bytes > 0 && layout.window_dynamic;
    let lone_dynamic = layout.dynamic_array.filter(|_| !dynamic_window);
    let first_static = u32::from(lone_dynamic.is_some());
    let window = (layout.window_bytes > 0).then_some(if layout.window_dynamic {
        0
    } else {
        own + first_static
    });
    if dynamic_window {
        decls.push(window_decl(
            0,
            ", shared arrays past the 48 KiB static limit",
        ));
    }
    if let Some((i, _)) = lone_dynamic
        && let Some(a) = ir.arrays.get(i)
    {
        decls.push(SharedDecl {
            name: ArrayId(i as u32).to_string(),
            align: 16,
            bytes: 0,
            comment: Some(format!(
                "smem{i}: dynamic shared {}, sized at launch, at {}",
                a.dtype, a.loc
            )),
        });
    }
    let mut arrays = Vec::with_capacity(ir.arrays.len());
    for (i, a) in ir.arrays.iter().enumerate() {
        let name = ArrayId(i as u32).to_string();
        let missing = |what: &str| PlanError::Internal {
            missing: format!("{what} of shared array {name}"),
            loc: a.loc,
        };
        let slice = plan
            .arrays
            .get(ArrayId(i as u32))
            .and_then(|&s| plan.slices.get(s))
            .ok_or_else(|| missing("slice"))?;
        let home = layout.arrays.get(i).ok_or_else(|| missing("home"))?;
        arrays.push(match home {
            // Its array is declared before it.
            ArrayHome::View => {
                let root = a.view_of.ok_or_else(|| missing("array"))?;
                *arrays.get(root.index()).ok_or_else(|| missing("array"))?
            }
            ArrayHome::Own => {
                let shape: Vec<String> = a.dims.iter().map(u32::to_string).collect();
                decls.push(SharedDecl {
                    comment: Some(format!(
                        "{name}: shared {} x {} at {}",
                        a.dtype,
                        shape.join(" x "),
                        a.loc
                    )),
                    name,
                    align: slice.align,
                    bytes: slice.bytes,
                });
                ArraySymbol::Own(decls.len() as u32 - 1)
            }
            ArrayHome::Window => ArraySymbol::Window {
                decl: window.ok_or_else(|| missing("window"))?,
                offset: slice.offset,
            },
            // The dynamic part's declaration: the array's own, or the dynamic window's, with
            // the array after the window.
            ArrayHome::Dynamic => {
                let (_, offset) = layout.dynamic_array.ok_or_else(|| missing("offset"))?;
                ArraySymbol::Window { decl: 0, offset }
            }
        });
    }
    if layout.window_bytes > 0 && !layout.window_dynamic {
        debug_assert_eq!(window, Some(decls.len() as u32));
        decls.push(window_decl(layout.window_bytes, ""));
    }
    Ok(SharedSymbols {
        decls,
        arrays,
        window,
        bases: FxHashMap::default(),
    })
}

/// A block-wide collective's shared memory as the plan lays it out: its plan (which it
/// dereferences to), the window's declaration and its slice's offset there.
pub(crate) struct Collective {
    plan: CollectivePlan,
    window: u32,
    offset: u32,
}

impl Collective {
    /// What the slice's first byte is known to be aligned to: the window's 16 bytes, or
    /// less where the slice's offset allows less.
    pub(crate) fn align(&self) -> u32 {
        1 << (self.offset | 16).trailing_zeros()
    }
}

impl std::ops::Deref for Collective {
    type Target = CollectivePlan;

    fn deref(&self) -> &CollectivePlan {
        &self.plan
    }
}

impl Emitter<'_> {
    /// The internal error for what the plan (or the verified IR) lacks for `op`.
    pub(crate) fn missing(&self, op: OpId, what: &str) -> PlanError {
        let data = self.ir.op(op);
        PlanError::Internal {
            missing: format!("{what} for {op} ({})", data.kind.name()),
            loc: data.loc,
        }
    }

    /// The index of the window's declaration, which `op`'s shared memory lives in.
    pub(crate) fn window(&self, op: OpId) -> Lowered<u32> {
        self.shared
            .window
            .ok_or_else(|| self.missing(op, "shared window"))
    }

    /// Slice `slice` of the window, which `op` uses.
    pub(crate) fn slice(&self, op: OpId, slice: SliceId) -> Lowered<Slice> {
        self.plan
            .slices
            .get(slice)
            .cloned()
            .ok_or_else(|| self.missing(op, "shared-memory slice"))
    }

    /// The shared memory of `op`'s block-wide collective, where the plan gives it one.
    pub(crate) fn planned_collective(&self, op: OpId) -> Lowered<Option<Collective>> {
        let Some(plan) = self.plan.collectives.get(op).cloned().flatten() else {
            return Ok(None);
        };
        Ok(Some(Collective {
            window: self.window(op)?,
            offset: self.slice(op, plan.slice)?.offset,
            plan,
        }))
    }

    /// The shared memory of `op`'s block-wide collective, which the plan must give it.
    pub(crate) fn collective(&self, op: OpId) -> Lowered<Collective> {
        self.planned_collective(op)?
            .ok_or_else(|| self.missing(op, "shared-memory plan of a block collective"))
    }

    /// The 32-bit shared address of declaration `decl`, read once in the prologue.
    pub(crate) fn shared_base(&mut self, decl: u32) -> Reg {
        if let Some(&r) = self.shared.bases.get(&decl) {
            return r;
        }
        let r = self.reg(RegClass::B32);
        self.entry_op(Op::Mov {
            ty: Ty::U32,
            dst: r,
            src: Operand::SharedAddr(decl),
        });
        self.shared.bases.insert(decl, r);
        r
    }

    /// The elements of the dynamic shared array `a` this launch gave it: the dynamic shared
    /// memory past the array's offset in it, in elements.
    pub(crate) fn dynamic_array_len(&mut self, a: ArrayId) -> Reg {
        let bytes = self.ir.arrays[a.index()].dtype.bytes();
        let offset = match self.shared.arrays[a.index()] {
            ArraySymbol::Window { offset, .. } => offset,
            ArraySymbol::Own(_) => 0,
        };
        let len = self.reg(RegClass::B32);
        self.op(Op::Mov {
            ty: Ty::U32,
            dst: len,
            src: Operand::Special(Special::DynamicSmemSize),
        });
        // Past the array's offset (0 where the launch gave less than that).
        self.op(Op::Bin {
            op: BinOp::Max,
            ty: Ty::U32,
            dst: len,
            a: len.into(),
            b: Operand::Imm(i64::from(offset)),
        });
        self.op(Op::Bin {
            op: BinOp::Sub,
            ty: Ty::U32,
            dst: len,
            a: len.into(),
            b: Operand::Imm(i64::from(offset)),
        });
        self.op(Op::Bin {
            op: BinOp::Shr,
            ty: Ty::U32,
            dst: len,
            a: len.into(),
            b: Operand::Imm(i64::from(bytes.trailing_zeros())),
        });
        len
    }

    /// The shared address of element `index` of a shared array: from its own declaration, or
    /// from its slice of the window.
    pub(crate) fn array_addr(&mut self, array: ArrayId, index: Reg) -> Reg {
        let dtype = self.ir.arrays[array.index()].dtype;
        let (base, offset) = match self.shared.arrays[array.index()] {
            ArraySymbol::Own(decl) => (self.shared_base(decl), 0),
            ArraySymbol::Window { decl, offset } => (self.shared_base(decl), offset),
        };
        let addr = self.reg(RegClass::B32);
        self.op(Op::Mad {
            ty: Ty::U32,
            dst: addr,
            a: index.into(),
            b: Operand::Imm(dtype.bytes() as i64),
            c: base.into(),
        });
        if offset != 0 {
            self.op(Op::Bin {
                op: BinOp::Add,
                ty: Ty::U32,
                dst: addr,
                a: addr.into(),
                b: Operand::Imm(offset as i64),
            });
        }
        addr
    }

    /// The slot of position `p` with one unused slot after every `every` positions: the plan's
    /// [`padded_slot`], evaluated at run time for a register.
    pub(crate) fn padded_slot(&mut self, p: Operand, every: Option<u32>) -> Operand {
        match (p, every) {
            (_, None) => p,
            (Operand::Imm(i), every) => Operand::Imm(padded_slot(i as u32, every) as i64),
            (p, Some(n)) => {
                let pads = self.u32op(BinOp::Div, p, Operand::Imm(n.max(1) as i64));
                self.u32op(BinOp::Add, p, pads.into()).into()
            }
        }
    }

    /// `smem + slice offset + slot(index) * size`: the address of entry `index` (the plan's
    /// slot, padding included).
    pub(crate) fn collective_addr(&mut self, c: &Collective, index: Operand) -> Reg {
        let slot = self.padded_slot(index, c.padding);
        self.scaled_collective_addr(c, slot, c.elem_bytes)
    }

    /// The address of slot `slot` (already past the padding) of a collective's slice.
    pub(crate) fn collective_slot_addr(&mut self, c: &Collective, slot: u32) -> Reg {
        self.scaled_collective_addr(c, Operand::Imm(slot as i64), c.elem_bytes)
    }

    /// The address of the first entry of raking lane `lane`'s segment; the segment's entries
    /// follow at `elem_bytes` steps (padding only falls between segments).
    pub(crate) fn segment_addr(&mut self, c: &Collective, lane: Reg) -> Reg {
        self.scaled_collective_addr(c, lane.into(), c.segment_stride() * c.elem_bytes)
    }

    /// `smem + slice offset + index * scale`.
    fn scaled_collective_addr(&mut self, c: &Collective, index: Operand, scale: u32) -> Reg {
        let offset = c.offset;
        let base = self.shared_base(c.window);
        let a = self.reg(RegClass::B32);
        self.op(Op::Mad {
            ty: Ty::U32,
            dst: a,
            a: index,
            b: Operand::Imm(scale as i64),
            c: base.into(),
        });
        if offset != 0 {
            self.op(Op::Bin {
                op: BinOp::Add,
                ty: Ty::U32,
                dst: a,
                a: a.into(),
                b: Operand::Imm(offset as i64),
            });
        }
        a
    }

    /// A shared-memory load into, or store of, `v`.
    pub(crate) fn shared_access(&mut self, load: bool, d: DType, addr: Address, v: Reg) {
        self.op(shared_op(load, d, addr, v));
    }

    /// A shared-memory load into, or store of, `value` at `[addr]`.
    pub(crate) fn shared_value(&mut self, load: bool, d: DType, addr: Reg, value: Reg) {
        let address = Address {
            base: AddrBase::Reg(addr),
            offset: 0,
        };
        self.shared_access(load, d, address, value);
    }

    /// [`Self::shared_access`] at `[addr]`, only where `p` holds.
    pub(crate) fn shared_access_if(&mut self, p: Reg, load: bool, d: DType, addr: Reg, v: Reg) {
        let addr = Address {
            base: AddrBase::Reg(addr),
            offset: 0,
        };
        self.guarded(p, false, shared_op(load, d, addr, v));
    }
}

/// A shared-memory load into, or store of, `v`.
fn shared_op(load: bool, d: DType, addr: Address, v: Reg) -> Op {
    if load {
        Op::Ld {
            space: Space::Shared,
            ty: mem_ty(d),
            dst: smallvec![v],
            addr,
        }
    } else {
        Op::St {
            space: Space::Shared,
            ty: mem_ty(d),
            addr,
            src: smallvec![v.into()],
        }
    }
}

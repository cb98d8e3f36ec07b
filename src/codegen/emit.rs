//! Lowering of a planned kernel to a PTX [`Module`].
//!
//! Every payload is a fixed set of virtual registers; every op becomes straight-line code with
//! its item loop fully unrolled; control flow becomes labels and branches (`bra.uni` where the
//! verifier proved the condition warp-uniform). Each op's code is preceded by a comment naming
//! the op and the user's source line, which the simulator quotes in its reports.

use super::expr::{Ctx, bits_or_float, class, mem_ty};
use crate::ptx::*;
use crate::ptx::Arch;
use crate::ir::ops::{Bounds, OpKind, Role};
use crate::ir::{DType, DataId, ExprId, Info, Ir, OpId, ParamId, RegionId};
use crate::planner::{Plan, SyncScope};
use smallvec::{SmallVec, smallvec};
use std::collections::HashMap;

/// The PTX entry name for a kernel name: letters, digits and `_`, not starting with a digit.
pub fn entry_name(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert_str(0, "k_");
    }
    s
}

/// The buffer parameters whose lengths the entry takes as hidden `.u32` parameters, after the
/// user's, in this order: every buffer of a kernel whose bounds are checked, none otherwise.
pub fn length_params(ir: &Ir) -> Vec<ParamId> {
    match ir.bounds {
        Bounds::Unchecked => Vec::new(),
        Bounds::Checked => (0..ir.params.len())
            .filter(|&i| ir.params[i].role != Role::Scalar)
            .map(|i| ParamId(i as u32))
            .collect(),
    }
}

/// How many grid dimensions `f` tells blocks apart by: 1 when it reads the block index and the
/// grid's shape along x only, 2 or 3 when it reads them along y or z. Lowering reads special
/// registers once each, with a `mov` in the entry block ([`Emitter::special`]).
pub fn grid_dims(f: &Function) -> u32 {
    f.body
        .iter()
        .filter_map(|i| match i.op {
            Op::Mov {
                src: Operand::Special(Special::Ctaid(d) | Special::Nctaid(d)),
                ..
            } => Some(match d {
                Dim::X => 1,
                Dim::Y => 2,
                Dim::Z => 3,
            }),
            _ => None,
        })
        .max()
        .unwrap_or(1)
}

/// Lowers a verified, planned kernel for one arch.
pub fn emit(ir: &Ir, info: &Info, plan: &Plan, arch: Arch) -> Module {
    let mut e = Emitter {
        ir,
        info,
        plan,
        arch,
        regs: RegCounts::default(),
        entry: Vec::new(),
        body: Vec::new(),
        data: Vec::new(),
        params: Vec::new(),
        lengths: HashMap::new(),
        loop_regs: HashMap::new(),
        specials: HashMap::new(),
        labels: 0,
        shared: shared_symbols(ir, plan),
        overrides: HashMap::new(),
        expr_depth: ir.exprs.depths(),
        barrier_scopes: HashMap::new(),
    };
    for b in &plan.barriers {
        e.barrier_scopes
            .entry((b.op, b.step))
            .or_default()
            .push(b.scope);
    }
    let name = entry_name(&ir.name);
    let params = e.prologue(&name);
    e.region(ir.body);
    e.op(Op::Ret);
    let mut body = std::mem::take(&mut e.entry);
    body.append(&mut e.body);
    Module {
        arch,
        functions: vec![Function {
            name,
            params,
            reqntid: Some(ir.block.dims),
            maxnreg: None,
            shared: std::mem::take(&mut e.shared.decls),
            regs: e.regs,
            body,
        }],
    }
}

/// The state of lowering one kernel.
pub struct Emitter<'a> {
    pub(crate) ir: &'a Ir,
    #[allow(dead_code)]
    pub(crate) info: &'a Info,
    pub(crate) plan: &'a Plan,
    pub(crate) arch: Arch,
    regs: RegCounts,
    /// Parameter loads and special-register reads: run once, before everything.
    entry: Vec<Instr>,
    body: Vec<Instr>,
    data: Vec<Vec<Reg>>,
    params: Vec<Reg>,
    /// The length (elements, `u32`) of each buffer parameter, where bounds are checked.
    lengths: HashMap<ParamId, Reg>,
    pub(crate) loop_regs: HashMap<OpId, [Reg; 3]>,
    specials: HashMap<Special, Reg>,
    labels: u32,
    /// The shared declarations and their base addresses, once read.
    pub(crate) shared: SharedSymbols,
    /// Registers that stand for a payload during one op (a conversion's result).
    overrides: HashMap<DataId, Vec<Reg>>,
    /// The depth of every expression node (see [`Emitter::eval`]).
    pub(crate) expr_depth: Vec<u32>,
    /// The scopes of the plan's barriers before each (op, step), in plan order.
    pub(crate) barrier_scopes: HashMap<(OpId, u8), SmallVec<[SyncScope; 1]>>,
}

impl Emitter<'_> {
    /// A fresh virtual register.
    pub fn reg(&mut self, class: RegClass) -> Reg {
        let n = self.regs.get_mut(class);
        let r = Reg { class, index: *n };
        *n += 1;
        r
    }

    /// Appends an unguarded instruction.
    pub fn op(&mut self, op: Op) {
        self.body.push(strength_reduced(op).into());
    }

    pub(crate) fn guarded(&mut self, pred: Reg, negate: bool, op: Op) {
        self.body.push(Instr {
            guard: Some(Guard { pred, negate }),
            op: strength_reduced(op),
        });
    }

    /// Two run-time paths: `@[!]p bra L1; fall; bra L2; L1: jumped; L2:` — `jumped` where `p`
    /// (negated with `negate`) holds, `fall` elsewhere.
    pub(crate) fn split(
        &mut self,
        p: Reg,
        negate: bool,
        jumped: impl FnOnce(&mut Self),
        fall: impl FnOnce(&mut Self),
    ) {
        let there = self.label();
        let done = self.label();
        self.guarded(
            p,
            negate,
            Op::Bra {
                target: there.clone(),
                uni: false,
            },
        );
        fall(self);
        self.op(Op::Bra {
            target: done.clone(),
            uni: false,
        });
        self.op(Op::Label(there));
        jumped(self);
        self.op(Op::Label(done));
    }

    /// Whether blocked position `rank * k + i` is below `n` (compared as `ty`, `U32` or
    /// `S32`): the valid-count test of one item.
    pub(crate) fn blocked_position_below(
        &mut self,
        rank: Reg,
        k: i64,
        i: i64,
        n: Reg,
        ty: Ty,
    ) -> Reg {
        let pos = self.reg(RegClass::B32);
        self.op(Op::Mad {
            ty: Ty::U32,
            dst: pos,
            a: rank.into(),
            b: Operand::Imm(k),
            c: Operand::Imm(i),
        });
        self.setp(Cmp::Lt, ty, pos.into(), n.into())
    }

    /// A new predicate `a cmp b` over values of type `ty`.
    pub(crate) fn setp(&mut self, cmp: Cmp, ty: Ty, a: Operand, b: Operand) -> Reg {
        let p = self.reg(RegClass::Pred);
        self.op(Op::Setp {
            cmp,
            ty,
            dst: p,
            a,
            b,
        });
        p
    }

    pub(crate) fn label(&mut self) -> String {
        self.labels += 1;
        format!("$L{}", self.labels)
    }

    /// The register holding a parameter's value (a global address for buffers).
    pub fn param_reg(&mut self, p: ParamId) -> Reg {
        match self.params.get(p.index()) {
            Some(&r) => r,
            None => self.reg(RegClass::B64),
        }
    }

    /// The register holding a buffer parameter's length in elements, where bounds are checked.
    pub fn length_reg(&self, p: ParamId) -> Option<Reg> {
        self.lengths.get(&p).copied()
    }

    /// The registers of a payload as an op's operand (during an op that converts it, the
    /// converted ones).
    pub fn data_regs(&self, d: DataId) -> &[Reg] {
        if let Some(r) = self.overrides.get(&d) {
            return r;
        }
        self.own_regs(d)
    }

    /// The registers of a payload in its own arrangement, whatever the current op converts:
    /// what an expression's `item(i)` reads.
    pub fn own_regs(&self, d: DataId) -> &[Reg] {
        self.data.get(d.index()).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Appends an instruction to the entry block (runs once, before everything).
    pub(crate) fn entry_op(&mut self, op: Op) {
        self.entry.push(op.into());
    }

    /// A special register read once, in the prologue's register.
    pub fn special(&mut self, s: Special) -> Reg {
        if let Some(&r) = self.specials.get(&s) {
            return r;
        }
        // Read in the entry block, so the register is valid on every path.
        let r = self.reg(RegClass::B32);
        self.specials.insert(s, r);
        self.entry.push(
            Op::Mov {
                ty: Ty::U32,
                dst: r,
                src: Operand::Special(s),
            }
            .into(),
        );
        r
    }

    /// `%tid.x`: the thread's rank in a 1-D block.
    pub fn tid(&mut self) -> Reg {
        self.special(Special::Tid(Dim::X))
    }
}

impl Emitter<'_> {
    /// Declares the parameters (the user's, then the hidden buffer lengths), loads them,
    /// converts buffer pointers to global addresses, and allocates every payload's registers.
    fn prologue(&mut self, entry: &str) -> Vec<Param> {
        let ir = self.ir;
        let mut params = Vec::with_capacity(ir.params.len());
        for (i, p) in ir.params.iter().enumerate() {
            let name = format!("{entry}_param_{i}");
            let (ty, r) = match p.role {
                Role::Input | Role::Output => {
                    let raw = self.reg(RegClass::B64);
                    self.entry.push(
                        Op::Ld {
                            space: Space::Param,
                            ty: Ty::U64,
                            dst: smallvec![raw],
                            addr: Address {
                                base: AddrBase::Param(name.clone()),
                                offset: 0,
                            },
                        }
                        .into(),
                    );
                    let g = self.reg(RegClass::B64);
                    self.entry
                        .push(Op::CvtaToGlobal { dst: g, src: raw }.into());
                    (Ty::U64, g)
                }
                Role::Scalar => {
                    let r = self.reg(class(p.dtype));
                    self.entry.push(
                        Op::Ld {
                            space: Space::Param,
                            ty: mem_ty(p.dtype),
                            dst: smallvec![r],
                            addr: Address {
                                base: AddrBase::Param(name.clone()),
                                offset: 0,
                            },
                        }
                        .into(),
                    );
                    (mem_ty(p.dtype), r)
                }
            };
            self.params.push(r);
            params.push(Param { name, ty });
        }
        for p in length_params(ir) {
            let name = format!("{entry}_len_{}", p.index());
            let r = self.reg(RegClass::B32);
            self.entry.push(
                Op::Ld {
                    space: Space::Param,
                    ty: Ty::U32,
                    dst: smallvec![r],
                    addr: Address {
                        base: AddrBase::Param(name.clone()),
                        offset: 0,
                    },
                }
                .into(),
            );
            self.lengths.insert(p, r);
            params.push(Param { name, ty: Ty::U32 });
        }
        for d in &ir.datas {
            let c = class(d.dtype);
            let regs = (0..d.items).map(|_| self.reg(c)).collect();
            self.data.push(regs);
        }
        params
    }

    fn region(&mut self, r: RegionId) {
        for &op in self.ir.region(r) {
            self.lower(op);
        }
    }

    /// Lowers a nested region in place (a scan's prefix callback).
    pub(crate) fn lower_region(&mut self, r: RegionId) {
        let saved = std::mem::take(&mut self.overrides);
        self.region(r);
        self.overrides = saved;
    }

    /// Lowers one op. The ops holding regions are lowered from here and everything else in
    /// [`Emitter::lower_simple`], so the recursion through nested regions keeps a small frame
    /// per level.
    fn lower(&mut self, op: OpId) {
        let ir = self.ir;
        self.lower_start(op);
        match &ir.op(op).kind {
            OpKind::If {
                cond,
                then,
                otherwise,
            } => self.lower_if(*cond, *then, *otherwise),
            OpKind::For { start, end, body } => self.lower_for(op, *start, *end, *body),
            OpKind::Tiles { n, body } => self.tiles(op, *n, *body),
            OpKind::Scan(sc) => self.scan(op, sc),
            _ => self.lower_simple(op),
        }
        self.overrides.clear();
    }

    /// The op's comment, and the conversions the plan puts before it (stores convert inside
    /// `transfer`, where the valid count is known).
    #[inline(never)]
    fn lower_start(&mut self, op: OpId) {
        let ir = self.ir;
        let data = ir.op(op);
        self.op(Op::Comment(format!(
            "{op} {} at {}",
            data.kind.name(),
            data.loc
        )));
        if !matches!(data.kind, OpKind::Store(_)) {
            let convs: Vec<_> = self.plan.exchanges[op.index()]
                .iter()
                .filter(|e| e.data.is_some())
                .cloned()
                .collect();
            for e in convs {
                if let Some(d) = e.data {
                    let dtype = ir.datas[d.index()].dtype;
                    let src = self.data_regs(d).to_vec();
                    let dst = self.fresh_like(&src);
                    self.exchange(op, &e, dtype, &src, &dst, None, false);
                    self.overrides.insert(d, dst);
                }
            }
        }
    }

    #[inline(never)]
    fn lower_if(&mut self, cond: ExprId, then: RegionId, otherwise: Option<RegionId>) {
        let mut memo = HashMap::new();
        let ctx = Ctx::default();
        let uni = self.uniform(cond);
        let p = self.eval(cond, &ctx, &mut memo);
        let else_label = self.label();
        let end_label = self.label();
        self.guarded(
            p,
            true,
            Op::Bra {
                target: else_label.clone(),
                uni,
            },
        );
        self.region(then);
        if let Some(o) = otherwise {
            self.op(Op::Bra {
                target: end_label.clone(),
                uni: true,
            });
            self.op(Op::Label(else_label));
            self.region(o);
            self.op(Op::Label(end_label));
        } else {
            self.op(Op::Label(else_label));
        }
    }

    #[inline(never)]
    fn lower_for(&mut self, op: OpId, start: ExprId, end: ExprId, body: RegionId) {
        let mut memo = HashMap::new();
        let ctx = Ctx::default();
        let uni = self.uniform(start) && self.uniform(end);
        let s = self.eval(start, &ctx, &mut memo);
        let e = self.eval(end, &ctx, &mut memo);
        let i = self.reg(RegClass::B32);
        self.op(Op::Mov {
            ty: Ty::U32,
            dst: i,
            src: s.into(),
        });
        self.loop_regs.insert(op, [i, i, i]);
        let head = self.label();
        let exit = self.label();
        self.op(Op::Label(head.clone()));
        let p = self.setp(Cmp::Ge, Ty::U32, i.into(), e.into());
        self.guarded(
            p,
            false,
            Op::Bra {
                target: exit.clone(),
                uni,
            },
        );
        self.region(body);
        self.op(Op::Bin {
            op: BinOp::Add,
            ty: Ty::U32,
            dst: i,
            a: i.into(),
            b: Operand::Imm(1),
        });
        self.op(Op::Bra { target: head, uni });
        self.op(Op::Label(exit));
    }

    /// Lowers an op that holds no region.
    #[inline(never)]
    fn lower_simple(&mut self, op: OpId) {
        let ir = self.ir;
        let data = ir.op(op);
        let mut memo = HashMap::new();
        let ctx = Ctx::default();
        match &data.kind {
            OpKind::Load(t) => self.transfer(op, t, true),
            OpKind::Store(t) => self.transfer(op, t, false),
            OpKind::Map { dst, srcs, expr } => {
                let items = ir.datas[dst.index()].items;
                let dtype = ir.datas[dst.index()].dtype;
                for i in 0..items {
                    let args = srcs
                        .iter()
                        .map(|s| self.data_regs(*s).get(i as usize).copied())
                        .collect::<Option<Vec<_>>>()
                        .unwrap_or_default();
                    let ctx = Ctx {
                        args,
                        item: Some(i),
                    };
                    // Each slot is its own evaluation: values from other slots never leak in.
                    let mut memo = HashMap::new();
                    let v = self.eval(*expr, &ctx, &mut memo);
                    self.mov_into(dtype, *dst, i, v);
                }
            }
            OpKind::SetItem { dst, item, expr } => {
                let dtype = ir.datas[dst.index()].dtype;
                let v = self.eval(*expr, &ctx, &mut memo);
                self.mov_into(dtype, *dst, *item, v);
            }
            OpKind::Assign { dst, src } => {
                let dtype = ir.datas[dst.index()].dtype;
                let srcs = self.data_regs(*src).to_vec();
                for (i, s) in srcs.into_iter().enumerate() {
                    self.mov_into(dtype, *dst, i as u32, s);
                }
            }
            OpKind::SyncBlock => self.op(Op::BarSync { id: 0, count: None }),
            OpKind::Reduce(r) => self.reduce(op, r),
            OpKind::Scatter {
                src,
                ranks,
                flags,
                dst,
                holes,
                ..
            } => self.scatter(op, [*src, *ranks, *dst], *flags, *holes),
            OpKind::Exchange { src, dst, .. } => {
                // The planned conversion of `src` already ran; its registers stand for `src`.
                let dtype = ir.datas[dst.index()].dtype;
                let regs = self.data_regs(*src).to_vec();
                for (i, r) in regs.into_iter().enumerate() {
                    self.mov_into(dtype, *dst, i as u32, r);
                }
            }
            OpKind::SharedWrite {
                array,
                index,
                value,
            } => {
                let dtype = ir.arrays[array.index()].dtype;
                let i = self.eval(*index, &ctx, &mut memo);
                let v = self.eval(*value, &ctx, &mut memo);
                let addr = self.array_addr(*array, i);
                self.op(Op::St {
                    space: Space::Shared,
                    ty: mem_ty(dtype),
                    addr: Address {
                        base: AddrBase::Reg(addr),
                        offset: 0,
                    },
                    src: smallvec![v.into()],
                });
            }
            OpKind::Neighbor(nb) => self.neighbor(op, nb),
            // Lowered by `lower`, which lowers their regions.
            OpKind::If { .. } | OpKind::For { .. } | OpKind::Tiles { .. } | OpKind::Scan(_) => {}
        }
    }

    fn uniform(&self, e: ExprId) -> bool {
        self.info
            .uniformity
            .get(e.index())
            .is_some_and(|u| u.covers(32))
    }

    pub(crate) fn mov_into(&mut self, dtype: DType, dst: DataId, item: u32, v: Reg) {
        if let Some(&d) = self.data_regs(dst).get(item as usize) {
            self.op(Op::Mov {
                ty: bits_or_float(dtype),
                dst: d,
                src: v.into(),
            });
        }
    }

    /// `for t in (ctaid.x..ceil(n / tile)).step_by(nctaid.x)` with origin and valid count.
    fn tiles(&mut self, op: OpId, n: ExprId, body: RegionId) {
        let tile = self.plan.block_tile.max(1);
        let mut memo = HashMap::new();
        let n = self.eval(n, &Ctx::default(), &mut memo);
        let ctaid = self.special(Special::Ctaid(Dim::X));
        let nctaid = self.special(Special::Nctaid(Dim::X));
        // tiles = n / tile + (n % tile != 0), which cannot overflow.
        let ntiles = self.reg(RegClass::B32);
        self.op(Op::Bin {
            op: BinOp::Div,
            ty: Ty::U32,
            dst: ntiles,
            a: n.into(),
            b: Operand::Imm(tile as i64),
        });
        let rem = self.reg(RegClass::B32);
        self.op(Op::Bin {
            op: BinOp::Rem,
            ty: Ty::U32,
            dst: rem,
            a: n.into(),
            b: Operand::Imm(tile as i64),
        });
        let has_rem = self.setp(Cmp::Ne, Ty::U32, rem.into(), Operand::Imm(0));
        let extra = self.reg(RegClass::B32);
        self.op(Op::Selp {
            ty: Ty::U32,
            dst: extra,
            a: Operand::Imm(1),
            b: Operand::Imm(0),
            p: has_rem,
        });
        self.op(Op::Bin {
            op: BinOp::Add,
            ty: Ty::U32,
            dst: ntiles,
            a: ntiles.into(),
            b: extra.into(),
        });
        let t = self.reg(RegClass::B32);
        let origin = self.reg(RegClass::B32);
        let valid = self.reg(RegClass::B32);
        self.op(Op::Mov {
            ty: Ty::U32,
            dst: t,
            src: ctaid.into(),
        });
        self.loop_regs.insert(op, [t, origin, valid]);
        let head = self.label();
        let exit = self.label();
        self.op(Op::Label(head.clone()));
        let done = self.setp(Cmp::Ge, Ty::U32, t.into(), ntiles.into());
        self.guarded(
            done,
            false,
            Op::Bra {
                target: exit.clone(),
                uni: true,
            },
        );
        self.op(Op::Bin {
            op: BinOp::Mul,
            ty: Ty::U32,
            dst: origin,
            a: t.into(),
            b: Operand::Imm(tile as i64),
        });
        self.op(Op::Bin {
            op: BinOp::Sub,
            ty: Ty::U32,
            dst: valid,
            a: n.into(),
            b: origin.into(),
        });
        self.op(Op::Bin {
            op: BinOp::Min,
            ty: Ty::U32,
            dst: valid,
            a: valid.into(),
            b: Operand::Imm(tile as i64),
        });
        self.region(body);
        self.op(Op::Bin {
            op: BinOp::Add,
            ty: Ty::U32,
            dst: t,
            a: t.into(),
            b: nctaid.into(),
        });
        self.op(Op::Bra {
            target: head,
            uni: true,
        });
        self.op(Op::Label(exit));
    }
}

/// The symbol of the planned window (exchanges, collectives, temp storages).
pub const WINDOW_SYMBOL: &str = "scratch";

/// The kernel's shared declarations, as the plan lays them out, and which is which.
pub(crate) struct SharedSymbols {
    /// The declarations, in [`Function::shared`] order: the dynamic one first (the writer
    /// prints it at module scope, before the function, and the parser lists it first).
    pub decls: Vec<SharedDecl>,
    /// Per shared array, the index of its own declaration (`None`: it lives in the window).
    arrays: Vec<Option<u32>>,
    /// The index of the window's declaration.
    window: Option<u32>,
    /// Base addresses read so far, by declaration index.
    bases: HashMap<u32, Reg>,
}

/// Declares each shared array that has a declaration of its own (named as the IR listing
/// names it, `smem0`, with its type, length and source line in the comment) and the window.
fn shared_symbols(ir: &Ir, plan: &Plan) -> SharedSymbols {
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
    let mut window = None;
    if layout.window_bytes > 0 && layout.window_dynamic {
        window = Some(0);
        decls.push(window_decl(
            0,
            ", shared arrays past the 48 KiB static limit",
        ));
    }
    let arrays = ir
        .arrays
        .iter()
        .enumerate()
        .map(|(i, a)| {
            if layout.arrays.get(i) != Some(&crate::planner::ArrayHome::Own) {
                return None;
            }
            let slice = plan.arrays.get(i).and_then(|&s| plan.slices.get(s))?;
            let name = crate::ir::ArrayId(i as u32).to_string();
            decls.push(SharedDecl {
                comment: Some(format!(
                    "{name}: shared {} x {} at {}",
                    a.dtype, a.len, a.loc
                )),
                name,
                align: slice.align,
                bytes: slice.bytes,
            });
            Some(decls.len() as u32 - 1)
        })
        .collect();
    if layout.window_bytes > 0 && !layout.window_dynamic {
        window = Some(decls.len() as u32);
        decls.push(window_decl(layout.window_bytes, ""));
    }
    SharedSymbols {
        decls,
        arrays,
        window,
        bases: HashMap::new(),
    }
}

impl Emitter<'_> {
    /// The 32-bit shared address of declaration `decl`, read once in the prologue. A
    /// declaration the plan does not have (an internal error) is written as a symbol ptxas
    /// rejects.
    pub(crate) fn shared_base(&mut self, decl: Option<u32>) -> Reg {
        let i = decl.unwrap_or(u32::MAX);
        if let Some(&r) = self.shared.bases.get(&i) {
            return r;
        }
        let r = self.reg(RegClass::B32);
        self.entry_op(Op::Mov {
            ty: Ty::U32,
            dst: r,
            src: Operand::SharedAddr(i),
        });
        self.shared.bases.insert(i, r);
        r
    }

    /// The 32-bit shared address of the planned window, where every slice's offset counts
    /// from.
    pub(crate) fn smem_base(&mut self) -> Reg {
        self.shared_base(self.shared.window)
    }

    /// The shared address of element `index` of a shared array: from its own declaration, or
    /// from its slice of the window.
    pub(crate) fn array_addr(&mut self, array: crate::ir::ArrayId, index: Reg) -> Reg {
        let dtype = self.ir.arrays[array.index()].dtype;
        let (base, offset) = match self.shared.arrays.get(array.index()).copied().flatten() {
            Some(decl) => (self.shared_base(Some(decl)), 0),
            None => {
                let offset = self
                    .plan
                    .arrays
                    .get(array.index())
                    .and_then(|&s| self.plan.slices.get(s))
                    .map_or(0, |s| s.offset);
                (self.smem_base(), offset)
            }
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
}

/// Unsigned division and remainder by a power of two as a shift and a mask: ptxas emits its
/// general division sequence for `div.u32`/`rem.u32` by an immediate, which costs a dozen
/// instructions and registers in every rank computation.
fn strength_reduced(op: Op) -> Op {
    match op {
        Op::Bin {
            op: kind @ (BinOp::Div | BinOp::Rem),
            ty: ty @ (Ty::U32 | Ty::U64),
            dst,
            a,
            b: Operand::Imm(n),
        } if n > 0 && (n as u64).is_power_of_two() => {
            if kind == BinOp::Div {
                Op::Bin {
                    op: BinOp::Shr,
                    ty,
                    dst,
                    a,
                    b: Operand::Imm(n.trailing_zeros() as i64),
                }
            } else {
                Op::Bin {
                    op: BinOp::And,
                    ty: if ty == Ty::U32 { Ty::B32 } else { Ty::B64 },
                    dst,
                    a,
                    b: Operand::Imm(n - 1),
                }
            }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bin(op: BinOp, ty: Ty, b: i64) -> Op {
        Op::Bin {
            op,
            ty,
            dst: Reg {
                class: RegClass::B32,
                index: 1,
            },
            a: Operand::Reg(Reg {
                class: RegClass::B32,
                index: 0,
            }),
            b: Operand::Imm(b),
        }
    }

    #[test]
    fn unsigned_division_by_powers_of_two_becomes_shifts_and_masks() {
        assert_eq!(
            strength_reduced(bin(BinOp::Div, Ty::U32, 32)),
            bin(BinOp::Shr, Ty::U32, 5)
        );
        assert_eq!(
            strength_reduced(bin(BinOp::Rem, Ty::U32, 32)),
            bin(BinOp::And, Ty::B32, 31)
        );
        assert_eq!(
            strength_reduced(bin(BinOp::Rem, Ty::U64, 1)),
            bin(BinOp::And, Ty::B64, 0)
        );
        // Signed division rounds toward zero: not a shift. Other divisors stay.
        for kept in [
            bin(BinOp::Div, Ty::S32, 32),
            bin(BinOp::Div, Ty::U32, 24),
            bin(BinOp::Rem, Ty::U32, 0),
        ] {
            assert_eq!(strength_reduced(kept.clone()), kept);
        }
    }
}

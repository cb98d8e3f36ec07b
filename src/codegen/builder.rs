//! The emission builder: the state of lowering one kernel and the instruction-level vocabulary
//! that every lowering file speaks. Registers and instructions (guarded, strength-reduced),
//! predicates and selects, two-path splits, the special registers read once, the payloads'
//! registers, shuffles of any dtype with their clamp operands, the member masks of groups,
//! the plan's barriers (`sync_point`), shared-memory addresses and accesses, and the dtype →
//! PTX type mapping all live here.
//!
//! The lowering files build on this file and never on each other: `expr.rs` lowers
//! expressions and operators; `transfer.rs`, `exchange.rs`, `reduce.rs`, `scan.rs` and
//! `neighbor.rs` lower ops with it and `expr.rs`; `emit.rs` walks the kernel and calls them.

use crate::ir::expr::ExprKind;
use crate::ir::ops::{Bounds, OpKind, Role};
use crate::ir::options::{LineInfo, MathMode};
use crate::ir::{
    ArrayId, CheckSite, ConstId, DType, DataId, ExprId, Info, Ir, Loc, LocalId, OpId, ParamId,
};
use crate::planner::{
    ArrayHome, CollectivePlan, ExchangePlan, Plan, PlanError, Slice, SliceId, StepId, SyncScope,
    padded_slot,
};
use crate::ptx::write::numbered;
use crate::ptx::*;
use rustc_hash::FxHashMap;
use smallvec::{SmallVec, smallvec};

/// The PTX type of a dtype in memory and in parameter lists.
pub fn mem_ty(d: DType) -> Ty {
    match d {
        DType::I8 => Ty::S8,
        DType::I16 => Ty::S16,
        DType::I32 => Ty::S32,
        DType::I64 => Ty::S64,
        DType::U8 => Ty::U8,
        DType::U16 => Ty::U16,
        DType::U32 => Ty::U32,
        DType::U64 => Ty::U64,
        DType::F32 => Ty::F32,
        DType::F64 => Ty::F64,
    }
}

/// The PTX type arithmetic on a dtype uses: narrow integers compute in 32 bits.
pub fn arith_ty(d: DType) -> Ty {
    match d {
        DType::I8 | DType::I16 | DType::I32 => Ty::S32,
        DType::U8 | DType::U16 | DType::U32 => Ty::U32,
        other => mem_ty(other),
    }
}

/// The register class holding a dtype.
pub fn class(d: DType) -> RegClass {
    RegClass::of(arith_ty(d))
}

/// Whether a dtype is narrower than its 32-bit register.
pub(crate) fn is_narrow(d: DType) -> bool {
    d.bytes() < 4
}

/// The untyped-bits PTX type of a dtype's register width.
pub(crate) fn bits_ty(d: DType) -> Ty {
    if d.bytes() == 8 { Ty::B64 } else { Ty::B32 }
}

/// The type `selp`/`mov` use for a dtype's register.
pub fn bits_or_float(d: DType) -> Ty {
    match d {
        DType::F32 => Ty::F32,
        DType::F64 => Ty::F64,
        other => bits_ty(other),
    }
}

/// What a lowering returns: the internal error of a plan (or a verified IR) that lacks
/// what the verifier and planner guarantee.
pub(crate) type Lowered<T = ()> = Result<T, PlanError>;

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

/// The steps the conditional reads of a kernel may take: this many per expression node, and
/// [`GUARDED_STEPS_BASE`] more.
pub const GUARDED_STEPS_PER_NODE: u64 = 16;
/// See [`GUARDED_STEPS_PER_NODE`].
pub const GUARDED_STEPS_BASE: u64 = 1 << 16;

/// Per payload, whether an expression reads one of its slots or an op takes it as an operand.
fn read_payloads(ir: &Ir) -> Vec<bool> {
    let mut read = vec![false; ir.datas.len()];
    let mut mark = |d: DataId| {
        if let Some(r) = read.get_mut(d.index()) {
            *r = true;
        }
    };
    for n in ir.exprs.nodes() {
        if let ExprKind::Item { data, .. } = n.kind {
            mark(data);
        }
    }
    for op in &ir.ops {
        match &op.kind {
            OpKind::Store(t) => mark(t.data),
            OpKind::Map { srcs, .. } => srcs.iter().copied().for_each(&mut mark),
            OpKind::Assign { src, .. }
            | OpKind::Exchange { src, .. }
            | OpKind::WriteRun { src, .. } => mark(*src),
            OpKind::Reduce(r) => mark(r.src),
            OpKind::Scan(sc) => mark(sc.src),
            OpKind::Neighbor(nb) => mark(nb.src),
            OpKind::Scatter {
                src, ranks, flags, ..
            } => {
                mark(*src);
                mark(*ranks);
                flags.iter().copied().for_each(&mut mark);
            }
            _ => {}
        }
    }
    read
}

/// Per expression node, whether its subtree reads memory (a shared array or a buffer).
fn reads_memory(ir: &Ir) -> Vec<bool> {
    subtree_has(ir, |k| {
        matches!(
            k,
            ExprKind::SharedRead(..)
                | ExprKind::LocalRead(..)
                | ExprKind::ConstRead(..)
                | ExprKind::GlobalRead(..)
        )
    })
}

/// Per expression node, whether its subtree reads a payload's slot.
fn reads_items(ir: &Ir) -> Vec<bool> {
    subtree_has(ir, |k| matches!(k, ExprKind::Item { .. }))
}

/// Per expression node, whether a node of its subtree is `own`: one pass over the nodes,
/// children before parents, so a subtree shared many times is looked at once.
fn subtree_has(ir: &Ir, own: impl Fn(&ExprKind<ExprId>) -> bool) -> Vec<bool> {
    let mut has: Vec<bool> = Vec::with_capacity(ir.exprs.nodes().len());
    for n in ir.exprs.nodes() {
        let below = n
            .kind
            .children()
            .any(|c| has.get(c.index()).copied().unwrap_or(false));
        has.push(own(&n.kind) || below);
    }
    has
}

/// The state of lowering one kernel: the stages' outputs it reads, the registers and code
/// so far, and what is read once (parameters, special registers, shared bases).
pub struct Emitter<'a> {
    pub(crate) ir: &'a Ir,
    pub(crate) info: &'a Info,
    pub(crate) plan: &'a Plan,
    pub(crate) arch: Arch,
    regs: RegCounts,
    /// Parameter loads and special-register reads: run once, before everything.
    entry: Vec<Instr>,
    body: Vec<Instr>,
    data: Vec<Vec<Reg>>,
    params: Vec<Reg>,
    /// The length (elements, `u32`, at most `u32::MAX`) of each buffer parameter, where bounds
    /// are checked.
    lengths: FxHashMap<ParamId, Reg>,
    /// The whole length (`u64`) of each buffer indexed with 64-bit indices, where bounds are
    /// checked.
    lengths64: FxHashMap<ParamId, Reg>,
    /// The registers of each loop's variables (see [`Emitter::loop_var`]).
    loop_regs: FxHashMap<OpId, [Reg; 3]>,
    specials: FxHashMap<Special, Reg>,
    /// The linear rank of a thread of a 2-D or 3-D block, once computed (see [`Emitter::tid`]).
    rank: Option<Reg>,
    labels: u32,
    /// The shared declarations and their base addresses, once read.
    shared: SharedSymbols,
    /// The addresses of local and constant arrays, once read.
    array_bases: FxHashMap<arrays::ArraySymbol, Reg>,
    /// Registers that stand for a payload during one op (a conversion's result).
    overrides: FxHashMap<DataId, Vec<Reg>>,
    /// Emptied expression memos kept for the next op (see [`Emitter::take_memo`]).
    spare_memos: Vec<FxHashMap<ExprId, Reg>>,
    /// The depth of every expression node (see [`Emitter::eval`]).
    pub(crate) expr_depth: Vec<u32>,
    /// Whether each expression node reads memory (a shared array or a buffer) in its subtree:
    /// such a node evaluated on a side of a select is evaluated under the side's guard.
    pub(crate) reads_memory: Vec<bool>,
    /// Per expression node, whether its subtree reads a payload's slot.
    pub(crate) reads_items: Vec<bool>,
    /// Per payload, whether anything reads it (an expression's slot, an op's operand): an
    /// atomic whose old value nobody reads is a `red`.
    read_payloads: Vec<bool>,
    /// The op after the one being lowered in its region, set as each is lowered (see
    /// [`Emitter::transfer`]: a load issues the next load's global reads before its exchange).
    pub(crate) successor: Option<OpId>,
    /// Loads whose global reads an earlier load issued: their staged registers and the bound
    /// their exchange takes.
    pub(crate) prefetched: FxHashMap<OpId, (Vec<Reg>, Option<Reg>)>,
    /// The expression nodes evaluated under each open guard, innermost last: their registers
    /// hold their values only where the guard holds, so they leave the memo when it closes.
    pub(crate) guarded_evals: Vec<Vec<ExprId>>,
    /// Nodes evaluated under guards so far, and the most the kernel may take (see
    /// [`PlanError::ConditionalReads`]): a select's sides sharing what is not hoisted out of
    /// them is evaluated once per side.
    pub(crate) guarded_steps: u64,
    pub(crate) guarded_limit: u64,
    /// Where `continue_` and `break_` go in each loop being lowered, innermost last: the
    /// loop's latch and its exit.
    pub(super) jump_targets: Vec<(String, String)>,
    /// The scopes of the plan's barriers before each step, in plan order.
    barrier_scopes: FxHashMap<StepId, SmallVec<[SyncScope; 1]>>,
    /// The source files `.loc` directives have named, in order of first use (file `i + 1`).
    files: Vec<&'static str>,
    /// How many math-library templates are being evaluated (their arithmetic is exact
    /// whatever the kernel's [`MathMode`]).
    pub(crate) library_depth: u32,
    /// The op being lowered (the innermost, through nested regions).
    pub(crate) current_op: Option<OpId>,
    /// Debug checks: the record and the sites so far (`None` without debug checks).
    checks: Option<checks::CheckState>,
    /// The grid barrier's word (`None` in a kernel without grid barriers).
    grid: Option<grid::GridState>,
}

impl<'a> Emitter<'a> {
    /// A builder for `ir` as `plan` plans it, for `arch`, with no code yet.
    pub(super) fn new(ir: &'a Ir, info: &'a Info, plan: &'a Plan, arch: Arch) -> Lowered<Self> {
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
            lengths: FxHashMap::default(),
            lengths64: FxHashMap::default(),
            loop_regs: FxHashMap::default(),
            specials: FxHashMap::default(),
            rank: None,
            labels: 0,
            shared: shared_symbols(ir, plan)?,
            array_bases: FxHashMap::default(),
            overrides: FxHashMap::default(),
            spare_memos: Vec::new(),
            expr_depth: ir.exprs.depths(),
            reads_memory: reads_memory(ir),
            reads_items: reads_items(ir),
            read_payloads: read_payloads(ir),
            successor: None,
            prefetched: FxHashMap::default(),
            guarded_evals: Vec::new(),
            guarded_steps: 0,
            guarded_limit: GUARDED_STEPS_PER_NODE * ir.exprs.nodes().len() as u64
                + GUARDED_STEPS_BASE,
            jump_targets: Vec::new(),
            barrier_scopes: FxHashMap::default(),
            files: Vec::new(),
            library_depth: 0,
            current_op: None,
            checks: None,
            grid: None,
        };
        for b in &plan.barriers {
            e.barrier_scopes.entry(b.step).or_default().push(b.scope);
        }
        Ok(e)
    }

    /// Loads the `u64` parameter `name` in the entry block, converted to a global address.
    fn address_param(&mut self, name: &str) -> Reg {
        let raw = self.reg(RegClass::B64);
        self.entry_op(Op::Ld {
            space: Space::Param,
            ty: Ty::U64,
            dst: smallvec![raw],
            addr: Address {
                base: AddrBase::Param(name.to_string()),
                offset: 0,
            },
        });
        let g = self.reg(RegClass::B64);
        self.entry_op(Op::CvtaToGlobal { dst: g, src: raw });
        g
    }

    /// Declares the parameters (the user's, then the hidden buffer lengths, with debug
    /// checks the check record, and in a cooperative kernel the grid barrier's word), loads them, converts buffer pointers to global addresses,
    /// and allocates every payload's registers.
    pub(super) fn prologue(&mut self, entry: &str) -> Vec<Param> {
        let ir = self.ir;
        let mut params = Vec::with_capacity(ir.params.len());
        for (i, p) in ir.params.iter().enumerate() {
            let name = numbered(entry, "_param_", i);
            let (ty, r) = match p.role {
                Role::Input | Role::Output | Role::Buffer => (Ty::U64, self.address_param(&name)),
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
        let wide = ir.wide_indexed();
        for p in length_params(ir) {
            let name = numbered(entry, "_len_", p.index());
            let is_wide = wide.get(p.index()).copied().unwrap_or(false);
            let (ty, class) = if is_wide {
                (Ty::U64, RegClass::B64)
            } else {
                (Ty::U32, RegClass::B32)
            };
            let r = self.reg(class);
            self.entry.push(
                Op::Ld {
                    space: Space::Param,
                    ty,
                    dst: smallvec![r],
                    addr: Address {
                        base: AddrBase::Param(name.clone()),
                        offset: 0,
                    },
                }
                .into(),
            );
            if is_wide {
                // Tile loads and stores index with 32 bits: they see at most u32::MAX elements.
                let cut = self.reg(RegClass::B64);
                self.entry_op(Op::Bin {
                    op: BinOp::Min,
                    ty: Ty::U64,
                    dst: cut,
                    a: r.into(),
                    b: Operand::Imm(u32::MAX as i64),
                });
                let narrow = self.reg(RegClass::B32);
                self.entry_op(Op::Cvt {
                    round: None,
                    sat: false,
                    dty: Ty::U32,
                    sty: Ty::U64,
                    dst: narrow,
                    src: cut,
                });
                self.lengths64.insert(p, r);
                self.lengths.insert(p, narrow);
            } else {
                self.lengths.insert(p, r);
            }
            params.push(Param { name, ty });
        }
        params.extend(self.record_param(entry));
        params.extend(self.grid_param(entry));
        for d in &ir.datas {
            let c = class(d.dtype);
            let regs = (0..d.items).map(|_| self.reg(c)).collect();
            self.data.push(regs);
        }
        params
    }

    /// The entry function `name` with `params`: the entry block, then the body; and the
    /// sites of its debug checks, in number order.
    pub(super) fn finish(mut self, name: String, params: Vec<Param>) -> (Module, Vec<CheckSite>) {
        let sites = self.finish_checks();
        self.finish_grid();
        let mut body = std::mem::take(&mut self.entry);
        body.append(&mut self.body);
        let consts = arrays::const_decls(self.ir, &name);
        let (print_buffers, strings) = self.print_decls(&name);
        let mut local = arrays::local_decls(self.ir);
        local.extend(print_buffers);
        // File names go between quotes: Windows separators become `/`, quotes `'`.
        let files = (self.files.iter())
            .map(|f| {
                f.replace('\\', "/")
                    .replace('"', "'")
                    .replace(['\n', '\r'], " ")
            })
            .collect();
        let module = Module {
            arch: self.arch,
            files,
            functions: vec![Function {
                name,
                params,
                reqntid: Some(self.ir.block.dims),
                reqnctapercluster: self.ir.cluster.and_then(|c| c.dims),
                explicitcluster: self.ir.cluster.is_some_and(|c| c.dims.is_none()),
                maxnreg: self.ir.options.max_registers.map(|m| m.count),
                minnctapersm: self.ir.options.min_blocks.map(|m| m.count),
                shared: std::mem::take(&mut self.shared.decls),
                local,
                consts,
                strings,
                regs: self.regs,
                body,
            }],
        };
        (module, sites)
    }

    /// Lets `regs` stand for payload `d` until [`Self::clear_overrides`] (a conversion's
    /// result, during the op it converts for).
    pub(super) fn set_override(&mut self, d: DataId, regs: Vec<Reg>) {
        self.overrides.insert(d, regs);
    }

    /// Every payload stands for its own registers again.
    pub(super) fn clear_overrides(&mut self) {
        self.overrides.clear();
    }

    /// Runs `f` with every payload standing for its own registers, then restores the
    /// overrides (a nested region lowered inside an op).
    pub(super) fn without_overrides<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let saved = std::mem::take(&mut self.overrides);
        let r = f(self);
        self.overrides = saved;
        r
    }

    /// The exchanges the plan gives `op`, in step order.
    pub(crate) fn exchanges_of(&self, op: OpId) -> Lowered<&'a [ExchangePlan]> {
        let plan: &'a Plan = self.plan;
        (plan.exchanges.get(op).map(Vec::as_slice))
            .ok_or_else(|| self.missing(op, "list of exchanges"))
    }

    /// Binds the registers of a loop's variables: `For`'s counter, or `Tiles`' tile index,
    /// origin and valid count (see [`Self::loop_var`]).
    pub(super) fn bind_loop(&mut self, op: OpId, regs: [Reg; 3]) {
        self.loop_regs.insert(op, regs);
    }
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

    /// Appends an instruction that runs where `pred` holds (with `negate`, where it fails).
    pub(crate) fn guarded(&mut self, pred: Reg, negate: bool, op: Op) {
        self.body.push(Instr {
            guard: Some(Guard { pred, negate }),
            op: strength_reduced(op),
        });
    }

    /// Appends an instruction to the entry block (runs once, before everything).
    pub(crate) fn entry_op(&mut self, op: Op) {
        self.entry.push(op.into());
    }

    /// Whether f32 arithmetic here may flush subnormals and be contracted: in a
    /// [`MathMode::Fast`] kernel, outside the math library's templates.
    pub(crate) fn fast_arith(&self) -> bool {
        self.ir.options.math == MathMode::Fast && self.library_depth == 0
    }

    /// A fresh label.
    pub(crate) fn label(&mut self) -> String {
        self.labels += 1;
        format!("$L{}", self.labels)
    }

    /// A fresh label ending a select branch (see [`SELECT_LABEL_PREFIX`]).
    pub(crate) fn select_label(&mut self) -> String {
        self.labels += 1;
        format!("{SELECT_LABEL_PREFIX}{}", self.labels)
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

    /// `op.u32 dst, a, b` into a new register.
    pub(crate) fn u32op(&mut self, op: BinOp, a: Operand, b: Operand) -> Reg {
        let r = self.reg(RegClass::B32);
        // Bitwise operations exist only at `.b32`.
        let ty = if op.accepts(Ty::U32) {
            Ty::U32
        } else {
            Ty::B32
        };
        self.op(Op::Bin {
            op,
            ty,
            dst: r,
            a,
            b,
        });
        r
    }

    /// `op.ty dst, a, imm`.
    fn bin_into(&mut self, op: BinOp, ty: Ty, dst: Reg, a: Operand, imm: i64) {
        self.op(Op::Bin {
            op,
            ty,
            dst,
            a,
            b: Operand::Imm(imm),
        });
    }

    /// `p ? a : b` for a value of dtype `d`.
    pub(crate) fn pick(&mut self, d: DType, p: Reg, a: Reg, b: Reg) -> Reg {
        let r = self.reg(class(d));
        self.op(Op::Selp {
            ty: bits_or_float(d),
            dst: r,
            a: a.into(),
            b: b.into(),
            p,
        });
        r
    }

    /// Fresh registers of the same classes.
    pub(crate) fn fresh_like(&mut self, regs: &[Reg]) -> Vec<Reg> {
        regs.iter().map(|r| self.reg(r.class)).collect()
    }

    /// `cvt[.round].dty.sty dst, src`.
    pub(crate) fn cvt(&mut self, round: Option<Round>, dty: Ty, sty: Ty, dst: Reg, src: Reg) {
        self.op(Op::Cvt {
            round,
            sat: false,
            dty,
            sty,
            dst,
            src,
        });
    }

    /// Re-establishes the narrow-integer invariant (sign- or zero-extended from the width).
    pub fn normalize(&mut self, d: DType, r: Reg) {
        if is_narrow(d) {
            let wide = if d.is_signed_int() { Ty::S32 } else { Ty::U32 };
            self.op(Op::Cvt {
                round: None,
                sat: false,
                dty: wide,
                sty: mem_ty(d),
                dst: r,
                src: r,
            });
        }
    }

    /// Moves a constant (given as the dtype's bits) into a new register.
    pub fn constant(&mut self, d: DType, bits: u64) -> Reg {
        let dst = self.reg(class(d));
        let src = match d {
            DType::F32 => Operand::F32(f32::from_bits(bits as u32)),
            DType::F64 => Operand::F64(f64::from_bits(bits)),
            DType::I8 => Operand::Imm(bits as u8 as i8 as i64),
            DType::I16 => Operand::Imm(bits as u16 as i16 as i64),
            DType::I32 => Operand::Imm(bits as u32 as i32 as i64),
            DType::U8 => Operand::Imm(bits as u8 as i64),
            DType::U16 => Operand::Imm(bits as u16 as i64),
            DType::U32 => Operand::Imm(bits as u32 as i64),
            DType::I64 | DType::U64 => Operand::Imm(bits as i64),
        };
        let ty = match d {
            DType::I64 | DType::U64 => Ty::B64,
            other => arith_ty(other),
        };
        self.op(Op::Mov { ty, dst, src });
        dst
    }
}

impl Emitter<'_> {
    /// The register holding a parameter's value (a global address for buffers).
    pub fn param_reg(&mut self, p: ParamId) -> Reg {
        match self.params.get(p.index()) {
            Some(&r) => r,
            None => self.reg(RegClass::B64),
        }
    }

    /// Whether anything reads payload `d` (an expression's slot, an op's operand).
    pub(crate) fn payload_read(&self, d: DataId) -> bool {
        self.read_payloads.get(d.index()).copied().unwrap_or(true)
    }

    /// The register holding a buffer parameter's length in elements, where bounds are checked
    /// (a `u32`: at most `u32::MAX`).
    pub fn length_reg(&self, p: ParamId) -> Option<Reg> {
        self.lengths.get(&p).copied()
    }

    /// The register holding the whole length (`u64`) of a buffer indexed with 64-bit indices,
    /// where bounds are checked.
    pub fn length64_reg(&self, p: ParamId) -> Option<Reg> {
        self.lengths64.get(&p).copied()
    }

    /// The global address of element `index` of buffer `p` (`index` a `u32`, or with `wide` a
    /// `u64`, register).
    pub(crate) fn element_addr(&mut self, p: ParamId, index: Reg, wide: bool) -> Reg {
        let size = self.ir.params.get(p.index()).map_or(1, |d| d.dtype.bytes());
        let ptr = self.param_reg(p);
        let addr = self.reg(RegClass::B64);
        let (a, b, c) = (index.into(), Operand::Imm(size as i64), ptr.into());
        self.op(if wide {
            Op::Mad {
                ty: Ty::U64,
                dst: addr,
                a,
                b,
                c,
            }
        } else {
            Op::MadWide {
                ty: Ty::U32,
                dst: addr,
                a,
                b,
                c,
            }
        });
        addr
    }

    /// Where bounds are checked, whether element `index` (a `u32`, or with `wide` a `u64`,
    /// register) lies inside buffer `p`; `None` where they are not.
    pub(crate) fn in_bounds(&mut self, p: ParamId, index: Reg, wide: bool) -> Option<Reg> {
        if let Some(len) = self.length64_reg(p) {
            let index = if wide {
                index
            } else {
                let w = self.reg(RegClass::B64);
                self.cvt(None, Ty::U64, Ty::U32, w, index);
                w
            };
            return Some(self.setp(Cmp::Lt, Ty::U64, index.into(), len.into()));
        }
        let len = self.length_reg(p)?;
        if wide {
            // Every buffer indexed with 64 bits has a 64-bit length (`Ir::wide_indexed`); were
            // one without, its 32-bit length still bounds the index.
            let w = self.reg(RegClass::B64);
            self.cvt(None, Ty::U64, Ty::U32, w, len);
            return Some(self.setp(Cmp::Lt, Ty::U64, index.into(), w.into()));
        }
        Some(self.setp(Cmp::Lt, Ty::U32, index.into(), len.into()))
    }

    /// `a and b` of two optional predicates (where either is `None`, the other).
    pub(crate) fn both(&mut self, a: Option<Reg>, b: Option<Reg>) -> Option<Reg> {
        match (a, b) {
            (Some(a), Some(b)) => {
                let p = self.reg(RegClass::Pred);
                self.op(Op::PredBin {
                    op: BinOp::And,
                    dst: p,
                    a,
                    b,
                });
                Some(p)
            }
            (a, None) => a,
            (None, b) => b,
        }
    }

    /// Appends `op`, guarded by `pred` where there is one.
    pub(crate) fn maybe_guarded(&mut self, pred: Option<Reg>, op: Op) {
        match pred {
            Some(p) => self.guarded(p, false, op),
            None => self.op(op),
        }
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

    /// Moves `v` into slot `item` of payload `dst`.
    pub(crate) fn mov_into(&mut self, dtype: DType, dst: DataId, item: u32, v: Reg) {
        if let Some(&d) = self.data_regs(dst).get(item as usize) {
            self.op(Op::Mov {
                ty: bits_or_float(dtype),
                dst: d,
                src: v.into(),
            });
        }
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

    /// The thread's linear rank in its block, which collectives number threads by: `%tid.x`
    /// in a 1-D block; `x + dx * (y + dy * z)` in others, computed once in the entry block
    /// (warps are runs of 32 consecutive linear ranks, so `%laneid` is the rank's lane).
    pub fn tid(&mut self) -> Reg {
        let [dx, dy, dz] = self.ir.block.dims;
        if dy <= 1 && dz <= 1 {
            return self.special(Special::Tid(Dim::X));
        }
        if let Some(r) = self.rank {
            return r;
        }
        // `x`, then each further axis the block extends in: `r = index * run + r`.
        let mut r = self.special(Special::Tid(Dim::X));
        let mut run = i64::from(dx);
        for (d, n) in [(Dim::Y, dy), (Dim::Z, dz)] {
            if n > 1 {
                let index = self.special(Special::Tid(d));
                let next = self.reg(RegClass::B32);
                self.entry_op(Op::Mad {
                    ty: Ty::U32,
                    dst: next,
                    a: index.into(),
                    b: Operand::Imm(run),
                    c: r.into(),
                });
                r = next;
            }
            run *= i64::from(n.max(1));
        }
        self.rank = Some(r);
        r
    }

    /// The registers of a loop's variable.
    pub fn loop_var(&mut self, op: OpId, field: u8) -> Reg {
        match self.loop_regs.get(&op) {
            Some(regs) => regs[(field as usize).min(2)],
            None => self.constant(DType::U32, 0),
        }
    }
}

/// The `c` operand of `shfl.sync.idx` and `shfl.sync.down` within segments of `w` lanes (at
/// most 32; 32 for the whole warp): the segment mask in bits 8..12 and the clamp lane, 31,
/// in bits 0..4.
pub(crate) fn segment_clamp(w: u32) -> i64 {
    (((32 - w.min(32)) << 8) | 0x1f) as i64
}

/// The `c` operand of `shfl.sync.up` within segments of `w` lanes: the segment mask, with
/// lane 0 of the segment as the clamp.
pub(crate) fn up_clamp(w: u32) -> i64 {
    ((32 - w.min(32)) << 8) as i64
}

impl Emitter<'_> {
    /// `shfl.sync` of a value of any dtype (64-bit values move as two halves).
    pub(crate) fn shuffle_value(
        &mut self,
        mode: ShflMode,
        v: Reg,
        b: Operand,
        c: i64,
        mask: Operand,
    ) -> Reg {
        self.shuffle_operand(mode, v, b, Operand::Imm(c), mask)
    }

    /// [`Self::shuffle_value`] with a `c` operand that may be a register.
    pub(crate) fn shuffle_operand(
        &mut self,
        mode: ShflMode,
        v: Reg,
        b: Operand,
        c: Operand,
        mask: Operand,
    ) -> Reg {
        self.shuffle(mode, v, b, c, mask, None)
    }

    /// [`Self::shuffle_value`], and whether the source lane was in range (inside the
    /// segment `c` sets): `shfl.sync`'s predicate output, so no comparison is needed.
    pub(crate) fn shuffle_in_range(
        &mut self,
        mode: ShflMode,
        v: Reg,
        b: Operand,
        c: i64,
        mask: Operand,
    ) -> (Reg, Reg) {
        let p = self.reg(RegClass::Pred);
        (self.shuffle(mode, v, b, Operand::Imm(c), mask, Some(p)), p)
    }

    /// A shuffle of any dtype; `in_range` receives the predicate output of the (first) `shfl`.
    fn shuffle(
        &mut self,
        mode: ShflMode,
        v: Reg,
        b: Operand,
        c: Operand,
        mask: Operand,
        in_range: Option<Reg>,
    ) -> Reg {
        let one = |e: &mut Self, src: Reg, pred: Option<Reg>| {
            let dst = e.reg(src.class);
            e.op(Op::Shfl {
                mode,
                dst,
                pred,
                src: src.into(),
                b,
                c,
                mask,
            });
            dst
        };
        match v.class {
            RegClass::B32 | RegClass::F32 => one(self, v, in_range),
            _ => {
                let bits = if v.class == RegClass::F64 {
                    let r = self.reg(RegClass::B64);
                    self.op(Op::Mov {
                        ty: Ty::B64,
                        dst: r,
                        src: v.into(),
                    });
                    r
                } else {
                    v
                };
                // Two 32-bit halves: lo = bits, hi = bits >> 32; shuffled, then joined.
                let lo = self.reg(RegClass::B32);
                self.cvt(None, Ty::U32, Ty::U64, lo, bits);
                let shifted = self.reg(RegClass::B64);
                self.bin_into(BinOp::Shr, Ty::U64, shifted, bits.into(), 32);
                let hi = self.reg(RegClass::B32);
                self.cvt(None, Ty::U32, Ty::U64, hi, shifted);
                let (lo2, hi2) = (one(self, lo, in_range), one(self, hi, None));
                let wide_lo = self.reg(RegClass::B64);
                self.cvt(None, Ty::U64, Ty::U32, wide_lo, lo2);
                let wide_hi = self.reg(RegClass::B64);
                self.cvt(None, Ty::U64, Ty::U32, wide_hi, hi2);
                self.bin_into(BinOp::Shl, Ty::B64, wide_hi, wide_hi.into(), 32);
                let joined = self.reg(RegClass::B64);
                self.op(Op::Bin {
                    op: BinOp::Or,
                    ty: Ty::B64,
                    dst: joined,
                    a: wide_lo.into(),
                    b: wide_hi.into(),
                });
                if v.class == RegClass::F64 {
                    let r = self.reg(RegClass::F64);
                    self.op(Op::Mov {
                        ty: Ty::B64,
                        dst: r,
                        src: joined.into(),
                    });
                    r
                } else {
                    joined
                }
            }
        }
    }

    /// The member mask of this thread's group of `w` consecutive threads (a logical warp, an
    /// exchange group): the lanes of the group that exist. Groups lie inside one warp (the
    /// planner synchronizes groups across warps with the block). For a power-of-two `w` over
    /// whole groups, `((1 << w) - 1) << (lane & !(w - 1))`; all lanes for `w >= 32` over
    /// whole warps.
    pub(crate) fn group_mask(&mut self, w: u32) -> Operand {
        let block = self.plan.block_threads;
        let w = w.clamp(1, 32);
        let whole = block.is_multiple_of(w);
        if w == 32 && whole {
            return Operand::Imm(-1);
        }
        if block <= w {
            // One group: the block's lanes.
            return Operand::Imm(((1i64 << block) - 1) & 0xffff_ffff);
        }
        let start = self.group_first_lane(w);
        let mask = self.reg(RegClass::B32);
        self.op(Op::Mov {
            ty: Ty::B32,
            dst: mask,
            src: Operand::Imm((1i64 << w) - 1),
        });
        if !whole {
            // The last group has only `block % w` threads.
            let tid = self.tid();
            let last = self.setp(
                Cmp::Ge,
                Ty::U32,
                tid.into(),
                Operand::Imm((block - block % w) as i64),
            );
            self.guarded(
                last,
                false,
                Op::Mov {
                    ty: Ty::B32,
                    dst: mask,
                    src: Operand::Imm((1i64 << (block % w)) - 1),
                },
            );
        }
        self.op(Op::Bin {
            op: BinOp::Shl,
            ty: Ty::B32,
            dst: mask,
            a: mask.into(),
            b: start.into(),
        });
        mask.into()
    }

    /// The lane where this thread's group of `w` consecutive lanes starts in its warp.
    pub(crate) fn group_first_lane(&mut self, w: u32) -> Reg {
        let lane = self.special(Special::Laneid);
        if w.is_power_of_two() {
            self.u32op(
                BinOp::And,
                lane.into(),
                Operand::Imm(!(w as i64 - 1) & 0xffff_ffff),
            )
        } else {
            let rank = self.u32op(BinOp::Rem, lane.into(), Operand::Imm(w as i64));
            self.u32op(BinOp::Sub, lane.into(), rank.into())
        }
    }

    /// Emits the barriers the plan puts before `step`.
    pub(crate) fn sync_point(&mut self, step: StepId) {
        let scopes = self.barrier_scopes.get(&step).cloned().unwrap_or_default();
        for scope in scopes {
            // How each scope lowers: a new scope adds its instruction here.
            match scope {
                SyncScope::Block => self.op(Op::BarSync { id: 0, count: None }),
                SyncScope::Group { threads } if threads >= 32 => self.op(Op::BarWarpSync {
                    mask: Operand::Imm(-1),
                }),
                SyncScope::Group { threads } => {
                    let mask = self.group_mask(threads);
                    self.op(Op::BarWarpSync { mask });
                }
                SyncScope::Warps { warps } => self.warp_group_barrier(warps),
            }
        }
    }
}

/// An op's shared-memory steps as its plan lists them, which its lowering takes one by one, in
/// order ([`Emitter::enter_step`]): the lowering never numbers steps.
pub(crate) struct Steps<'p> {
    op: OpId,
    ids: std::slice::Iter<'p, StepId>,
}

impl<'p> Steps<'p> {
    /// The steps `ids` of `op`.
    pub(crate) fn new(op: OpId, ids: &'p [StepId]) -> Self {
        Steps {
            op,
            ids: ids.iter(),
        }
    }
}

impl Emitter<'_> {
    /// Where the kernel carries line information, a `.loc` naming `loc`: the instructions
    /// that follow come from that line.
    pub(crate) fn source_line(&mut self, loc: Loc) {
        if self.ir.options.line_info == LineInfo::Off {
            return;
        }
        let index = match self.files.iter().position(|&f| f == loc.file) {
            Some(i) => i,
            None => {
                self.files.push(loc.file);
                self.files.len() - 1
            }
        };
        self.op(Op::Loc {
            file: u32::try_from(index + 1).unwrap_or(u32::MAX),
            line: loc.line,
            column: loc.column,
        });
    }

    /// Enters the next of `steps`: emits the barriers the plan puts before it. The plan
    /// listing fewer steps than the lowering takes is an internal error.
    pub(crate) fn enter_step(&mut self, steps: &mut Steps) -> Lowered {
        let Some(&id) = steps.ids.next() else {
            return Err(self.missing(steps.op, "shared-memory step"));
        };
        self.sync_point(id);
        Ok(())
    }
}

mod arrays;
mod checks;
mod grid;
mod memos;
mod packed;
mod positions;
mod print;
mod shared;
mod warp_groups;
pub(crate) use arrays::ArrayRef;
pub use shared::WINDOW_SYMBOL;
use shared::shared_symbols;
pub(crate) use shared::{Collective, SharedSymbols};
pub(crate) use warp_groups::WarpGroupPlace;

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

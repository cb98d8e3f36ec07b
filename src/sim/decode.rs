//! Decoding: turns a parsed [`Function`] into a compact program the interpreter runs without
//! looking at names or types again.
//!
//! Every register, immediate and special register becomes a *slot*: an index into the
//! thread's flat `u64` array. Registers come first (by class, in declaration order), then the
//! special registers the function reads, then its immediates, then one scratch slot for the
//! clock. Immediates are stored already converted to their instruction's type; labels become
//! instruction indices; each operator at its type becomes a function pointer. Labels and
//! comments produce no instruction; the end of the body gets an implicit `ret`.
//!
//! Decoding checks what the interpreter relies on: every register is declared and has the
//! width its position needs, every label exists, every operator/type combination exists in
//! PTX. Failures are [`SimError::Invalid`] with the line.

use super::alu::{self, AtomKind, Cvt, Fn1, Fn2, Fn3};
use super::error::{InvalidReason, Location, MemSpace, SimError};
use super::parse::FnLines;
use super::symbols;

mod memory;
pub(crate) use super::symbols::{ConstSlot, LOCAL_SHIFT, LocalSlot, SHARED_SHIFT, SharedSlot};
use crate::ptx::*;
use memory::{acquires, atomic_space, mem_space, releases, space_of, vec_len};
use rustc_hash::FxHashMap;

/// No slot (no base register, no guard, no predicate output).
pub(crate) const NONE: u32 = u32::MAX;
/// The most slots a thread may have: registers, special registers and immediates together.
/// A group radix sort of 8-bit digits over key-value pairs unrolls to some 16,600 (each
/// thread's slots are 8 bytes: 256 KiB a thread at the limit).
pub(crate) const MAX_SLOTS: usize = 1 << 15;

/// How a loaded element widens into its register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ext {
    Zero,
    Sign32,
    Sign64,
}

/// A load or store.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mem {
    pub space: MemSpace,
    /// Vector length: 1, 2 or 4.
    pub n: u8,
    /// Element size in bytes.
    pub size: u8,
    pub ext: Ext,
    /// Destination slots (loads) or source slots (stores).
    pub regs: [u32; 4],
    /// The base register's slot, or [`NONE`].
    pub base: u32,
    /// Added to the base (symbol offsets are folded in).
    pub disp: i64,
}

/// An `atom` or `red`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Atomic {
    pub space: MemSpace,
    pub op: AtomOp,
    pub kind: AtomKind,
    /// [`NONE`] for `red`.
    pub dst: u32,
    pub base: u32,
    pub disp: i64,
    pub a: u32,
    /// The new value of `cas`, else [`NONE`].
    pub b: u32,
    /// Whether its memory order acquires (`.acquire`, `.acq_rel`) and releases (`.release`,
    /// `.acq_rel`): what the global race checker of cooperative launches orders by.
    pub acquire: bool,
    pub release: bool,
}

/// One decoded instruction.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Inst {
    Un {
        f: Fn1,
        dst: u32,
        a: u32,
    },
    Bin {
        f: Fn2,
        dst: u32,
        a: u32,
        b: u32,
    },
    /// `and.pred` (`or: false`) or `or.pred`: an operand that decides the result alone
    /// (a false one for `and`, a true one for `or`) makes it defined whatever the other is.
    PredLogic {
        or: bool,
        dst: u32,
        a: u32,
        b: u32,
    },
    Tri {
        f: Fn3,
        dst: u32,
        a: u32,
        b: u32,
        c: u32,
    },
    Selp {
        dst: u32,
        a: u32,
        b: u32,
        p: u32,
    },
    Cvt {
        cvt: Cvt,
        dst: u32,
        src: u32,
    },
    Clock {
        dst: u32,
    },
    Ld(Mem),
    /// A load with a memory order (`ld.acquire`, `ld.relaxed`): a load, after which the thread
    /// yields (such loads are what spin-waits poll, so other threads and blocks get to run);
    /// `acquire`: the order acquires (the global race checker takes later accesses of the
    /// block as after the releases it reads from).
    LdOrdered {
        mem: Mem,
        acquire: bool,
    },
    /// `nanosleep`: the thread yields (the back-off of a spin loop, whatever it polls with).
    Sleep,
    St(Mem),
    Atom(Atomic),
    Bra {
        target: u32,
        /// A select branch (see [`crate::ptx::SELECT_LABEL_PREFIX`]): its predicate is not
        /// checked for definedness.
        select: bool,
    },
    Ret,
    /// A collective, by index into [`Program::colls`]: the thread stops here.
    Coll(u32),
    /// A `vprintf` call, by index into [`Program::prints`].
    Print(u32),
    /// `mapa.shared::cluster.u32` (see [`super::cluster`]).
    Mapa {
        dst: u32,
        src: u32,
        rank: u32,
    },
    /// `barrier.cluster.arrive` or `.wait` (see [`super::cluster`]).
    ClusterBar {
        wait: bool,
    },
    Nop,
}

/// An instruction with its guard.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DInst {
    /// The guard predicate's slot, or [`NONE`].
    pub guard: u32,
    /// `@!%p`.
    pub negate: bool,
    pub inst: Inst,
}

/// A collective instruction.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Coll {
    Bar {
        id: u32,
        count: Option<u32>,
    },
    WarpSync {
        mask: u32,
    },
    Shfl {
        mode: ShflMode,
        dst: u32,
        pred: u32,
        src: u32,
        b: u32,
        c: u32,
        mask: u32,
    },
    Vote {
        mode: VoteMode,
        dst: u32,
        src: u32,
        negate: bool,
        mask: u32,
    },
    Match {
        all: bool,
        wide: bool,
        dst: u32,
        src: u32,
        mask: u32,
    },
    Redux {
        f: Fn2,
        sig: u32,
        dst: u32,
        src: u32,
        mask: u32,
    },
    Activemask {
        dst: u32,
    },
}

impl Coll {
    /// The member-mask slot of a warp collective.
    pub(crate) fn mask(&self) -> Option<u32> {
        match *self {
            Coll::WarpSync { mask }
            | Coll::Shfl { mask, .. }
            | Coll::Vote { mask, .. }
            | Coll::Match { mask, .. }
            | Coll::Redux { mask, .. } => Some(mask),
            Coll::Bar { .. } | Coll::Activemask { .. } => None,
        }
    }

    /// Instructions with the same signature can complete together when participation
    /// checking is off (the same kind, mode and type at different places).
    pub(crate) fn signature(&self) -> u32 {
        match *self {
            Coll::Bar { .. } => 0,
            Coll::WarpSync { .. } => 1,
            Coll::Shfl { mode, .. } => 2 + mode as u32,
            Coll::Vote { mode, .. } => 10 + mode as u32,
            Coll::Match { all, wide, .. } => 20 + 2 * all as u32 + wide as u32,
            Coll::Redux { sig, .. } => 30 + sig,
            Coll::Activemask { .. } => 100,
        }
    }
}

/// A kernel parameter's place in the parameter buffer.
#[derive(Debug, Clone)]
pub(crate) struct ParamSlot {
    pub name: String,
    pub offset: u32,
    pub size: u32,
}

/// A special register the function reads, and its slot.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SpecialSlot {
    pub slot: u32,
    pub special: Special,
}

/// A decoded entry.
#[derive(Debug, Clone)]
pub(crate) struct Program {
    pub name: String,
    pub code: Vec<DInst>,
    /// For each decoded instruction, its body index (`body.len()` for the implicit `ret`).
    pub src: Vec<u32>,
    pub colls: Vec<Coll>,
    pub nslots: usize,
    /// First slot of each register class, in [`RegClass::ALL`] order, and the counts.
    pub reg_base: [u32; 5],
    pub reg_count: [u32; 5],
    pub consts: Vec<(u32, u64)>,
    pub specials: Vec<SpecialSlot>,
    pub params: Vec<ParamSlot>,
    pub param_bytes: u32,
    /// Every shared declaration, in declaration order; dynamic ones have size 0.
    pub shared: Vec<SharedSlot>,
    /// Bytes of static declarations.
    pub static_smem: u32,
    /// Where the dynamic part starts in the block's storage (the static size, aligned for the
    /// dynamic declarations).
    pub dyn_base: u32,
    /// Every `.local` declaration, in order.
    pub local: Vec<LocalSlot>,
    /// Bytes of `.local` declarations a thread has (after its window).
    pub local_bytes: u32,
    /// Every `.const` declaration, in order.
    pub cmem: Vec<ConstSlot>,
    /// The `vprintf` calls.
    pub prints: Vec<PrintCall>,
    pub reqntid: Option<[u32; 3]>,
    /// `.reqnctapercluster`; whether the body has cluster instructions (then blocks run by
    /// clusters, of one block without a shape: see [`super::cluster`]).
    pub cluster: Option<[u32; 3]>,
    pub uses_cluster: bool,
    /// `.explicitcluster`: each launch gives the cluster shape.
    pub explicit_cluster: bool,
    /// Per body index (and one past the end): line number and trimmed text.
    pub lines: Vec<(u32, String)>,
    /// Per body index: the body index of the nearest comment above, or [`NONE`].
    pub comment_of: Vec<u32>,
    /// Comment texts by body index (empty for other items).
    pub comments: Vec<String>,
}

/// A `vprintf` call: its format (without the NUL) and the local address of its values.
#[derive(Debug, Clone)]
pub(crate) struct PrintCall {
    pub format: Vec<u8>,
    pub args: Option<u64>,
}

impl Program {
    /// Where decoded instruction `pc` comes from.
    pub(crate) fn location(&self, pc: u32) -> Location {
        let body = self.src.get(pc as usize).copied().unwrap_or(NONE);
        self.body_location(body)
    }

    fn body_location(&self, body: u32) -> Location {
        let (line, text) = self
            .lines
            .get(body as usize)
            .or_else(|| self.lines.last())
            .cloned()
            .unwrap_or((0, String::new()));
        let op = self
            .comment_of
            .get(body as usize)
            .filter(|c| **c != NONE)
            .and_then(|c| self.comments.get(*c as usize))
            .cloned();
        Location {
            entry: self.name.clone(),
            line,
            text,
            op,
        }
    }

    /// The register name of a slot (`%r3`), when the slot is a register.
    pub(crate) fn slot_name(&self, slot: u32) -> Option<String> {
        RegClass::ALL.iter().enumerate().find_map(|(i, c)| {
            let base = self.reg_base[i];
            (slot >= base && slot - base < self.reg_count[i])
                .then(|| format!("%{}{}", c.prefix(), slot - base))
        })
    }

    /// The shared declaration holding storage byte `off`, given the launch's dynamic size.
    pub(crate) fn shared_symbol(&self, off: u64, dynamic: u32) -> Option<&SharedSlot> {
        self.shared.iter().find(|s| {
            let len = if s.bytes == 0 { dynamic } else { s.bytes };
            off >= u64::from(s.offset) && off < u64::from(s.offset) + u64::from(len)
        })
    }

    /// The shared address of the dynamic part (after every static declaration).
    pub(crate) fn dyn_addr(&self) -> u32 {
        let statics = self.shared.iter().filter(|s| s.bytes > 0).count() as u32;
        statics << SHARED_SHIFT
    }
}

fn class_index(c: RegClass) -> usize {
    match c {
        RegClass::Pred => 0,
        RegClass::B32 => 1,
        RegClass::B64 => 2,
        RegClass::F32 => 3,
        RegClass::F64 => 4,
    }
}

fn class_bits(c: RegClass) -> u32 {
    match c {
        RegClass::Pred => 1,
        RegClass::B32 | RegClass::F32 => 32,
        RegClass::B64 | RegClass::F64 => 64,
    }
}

/// How a register operand must fit.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fit {
    /// Exactly this many bits (1 for predicates).
    Exact(u32),
    /// At least this many bits (stores, loads into wider registers); never a predicate.
    AtLeast(u32),
}

struct Decoder<'a> {
    f: &'a Function,
    reg_base: [u32; 5],
    next: u32,
    consts: FxHashMap<u64, u32>,
    const_list: Vec<(u32, u64)>,
    specials: Vec<SpecialSlot>,
    clock: u32,
    code: Vec<DInst>,
    src: Vec<u32>,
    colls: Vec<Coll>,
    params: Vec<ParamSlot>,
    shared: Vec<SharedSlot>,
    local: Vec<LocalSlot>,
    cmem: Vec<ConstSlot>,
    prints: Vec<PrintCall>,
    /// Micro-ops the current instruction needs first (clock reads).
    pre: Vec<Inst>,
}

type D<T> = Result<T, InvalidReason>;

/// Decodes one function. `lines` gives the source line of every body item.
pub(crate) fn decode(f: &Function, lines: &FnLines, text: &[&str]) -> Result<Program, SimError> {
    let line_of = |i: usize| -> (u32, String) {
        let n = if i < f.body.len() {
            lines.body.get(i).copied().unwrap_or(0)
        } else {
            lines.end
        };
        let t = text
            .get((n as usize).wrapping_sub(1))
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        (n, t)
    };
    let src_lines: Vec<(u32, String)> = (0..=f.body.len()).map(line_of).collect();
    let mut comment_of = Vec::with_capacity(f.body.len() + 1);
    let mut comments = Vec::with_capacity(f.body.len());
    let mut last = NONE;
    for (i, ins) in f.body.iter().enumerate() {
        comment_of.push(last);
        match &ins.op {
            Op::Comment(t) => {
                comments.push(t.clone());
                last = i as u32;
            }
            _ => comments.push(String::new()),
        }
    }
    comment_of.push(last);

    let shell = Program {
        name: f.name.clone(),
        code: Vec::new(),
        src: Vec::new(),
        colls: Vec::new(),
        nslots: 0,
        reg_base: [0; 5],
        reg_count: [0; 5],
        consts: Vec::new(),
        specials: Vec::new(),
        params: Vec::new(),
        param_bytes: 0,
        shared: Vec::new(),
        static_smem: 0,
        dyn_base: 0,
        local: Vec::new(),
        local_bytes: 0,
        cmem: Vec::new(),
        prints: Vec::new(),
        reqntid: f.reqntid,
        cluster: f.reqnctapercluster,
        uses_cluster: f.explicitcluster || f.body.iter().any(|i| memory::is_cluster_op(&i.op)),
        explicit_cluster: f.explicitcluster,
        lines: src_lines,
        comment_of,
        comments,
    };
    let invalid = |body: usize, reason: InvalidReason| SimError::Invalid {
        at: shell.body_location(body as u32),
        reason,
    };

    let mut reg_base = [0u32; 5];
    let mut reg_count = [0u32; 5];
    let mut total: u64 = 0;
    for c in RegClass::ALL {
        let i = class_index(c);
        reg_base[i] = u32::try_from(total).unwrap_or(u32::MAX);
        reg_count[i] = f.regs.get(c);
        total += u64::from(f.regs.get(c));
    }
    if total > MAX_SLOTS as u64 {
        return Err(invalid(
            f.body.len(),
            InvalidReason::TooManyRegisters {
                slots: usize::try_from(total).unwrap_or(usize::MAX),
            },
        ));
    }

    // Parameters: each aligned to its size, in order.
    let mut params = Vec::with_capacity(f.params.len());
    let mut off: u32 = 0;
    for p in &f.params {
        if p.ty == Ty::Pred {
            return Err(invalid(f.body.len(), InvalidReason::BadType));
        }
        let size = p.ty.bytes();
        off = off
            .checked_next_multiple_of(size)
            .ok_or_else(|| invalid(f.body.len(), InvalidReason::BadType))?;
        params.push(ParamSlot {
            name: p.name.clone(),
            offset: off,
            size,
        });
        off = off
            .checked_add(size)
            .ok_or_else(|| invalid(f.body.len(), InvalidReason::BadType))?;
    }
    let param_bytes = off;

    let symbols::Symbols {
        shared,
        static_smem,
        dyn_base,
        local,
        local_bytes,
        cmem,
    } = symbols::lay_out(f).map_err(|r| invalid(f.body.len(), r))?;

    let mut d = Decoder {
        f,
        reg_base,
        next: total as u32,
        consts: FxHashMap::default(),
        const_list: Vec::new(),
        specials: Vec::new(),
        clock: NONE,
        code: Vec::with_capacity(f.body.len() + 1),
        src: Vec::with_capacity(f.body.len() + 1),
        colls: Vec::new(),
        params,
        shared,
        local,
        cmem,
        prints: Vec::new(),
        pre: Vec::new(),
    };

    let mut labels: FxHashMap<&str, u32> = FxHashMap::default();
    let mut fixups: Vec<(usize, usize)> = Vec::new();
    for (i, ins) in f.body.iter().enumerate() {
        match &ins.op {
            Op::Comment(_) | Op::Loc { .. } => continue,
            Op::Label(name) => {
                if labels.insert(name.as_str(), d.code.len() as u32).is_some() {
                    return Err(invalid(
                        i,
                        InvalidReason::DuplicateLabel {
                            label: name.clone(),
                        },
                    ));
                }
                continue;
            }
            _ => {}
        }
        let guard = match ins.guard {
            Some(g) => d.reg(g.pred, Fit::Exact(1)).map_err(|r| invalid(i, r))?,
            None => NONE,
        };
        let inst = d.inst(&ins.op).map_err(|r| invalid(i, r))?;
        for p in std::mem::take(&mut d.pre) {
            d.code.push(DInst {
                guard: NONE,
                negate: false,
                inst: p,
            });
            d.src.push(i as u32);
        }
        if let Op::Bra { .. } = ins.op {
            fixups.push((d.code.len(), i));
        }
        d.code.push(DInst {
            guard,
            negate: ins.guard.is_some_and(|g| g.negate),
            inst,
        });
        d.src.push(i as u32);
        if d.next as usize > MAX_SLOTS {
            return Err(invalid(
                i,
                InvalidReason::TooManyRegisters {
                    slots: d.next as usize,
                },
            ));
        }
    }
    d.code.push(DInst {
        guard: NONE,
        negate: false,
        inst: Inst::Ret,
    });
    d.src.push(f.body.len() as u32);
    for (at, body) in fixups {
        let Some(Op::Bra { target, .. }) = f.body.get(body).map(|b| &b.op) else {
            continue;
        };
        let t = *labels.get(target.as_str()).ok_or_else(|| {
            invalid(
                body,
                InvalidReason::UnknownLabel {
                    label: target.clone(),
                },
            )
        })?;
        if let Some(ins) = d.code.get_mut(at) {
            ins.inst = Inst::Bra {
                target: t,
                select: target.starts_with(crate::ptx::SELECT_LABEL_PREFIX),
            };
        }
    }

    Ok(Program {
        code: d.code,
        src: d.src,
        colls: d.colls,
        nslots: d.next as usize,
        reg_base,
        reg_count,
        consts: d.const_list,
        specials: d.specials,
        params: d.params,
        param_bytes,
        shared: d.shared,
        static_smem,
        dyn_base,
        local: d.local,
        local_bytes,
        cmem: d.cmem,
        prints: d.prints,
        ..shell
    })
}

impl Decoder<'_> {
    fn fresh(&mut self) -> u32 {
        let s = self.next;
        self.next = self.next.saturating_add(1);
        s
    }

    fn reg(&mut self, r: Reg, fit: Fit) -> D<u32> {
        let i = class_index(r.class);
        let name = || format!("%{}{}", r.class.prefix(), r.index);
        if r.index >= self.f.regs.get(r.class) {
            return Err(InvalidReason::UndeclaredRegister { register: name() });
        }
        let bits = class_bits(r.class);
        let ok = match fit {
            Fit::Exact(b) => bits == b,
            Fit::AtLeast(b) => bits != 1 && bits >= b,
        };
        if !ok {
            return Err(InvalidReason::RegisterClass { register: name() });
        }
        Ok(self.reg_base[i] + r.index)
    }

    fn konst(&mut self, bits: u64) -> u32 {
        if let Some(s) = self.consts.get(&bits) {
            return *s;
        }
        let s = self.fresh();
        self.consts.insert(bits, s);
        self.const_list.push((s, bits));
        s
    }

    /// The slot of an operand used at type `ty`.
    fn opd(&mut self, o: &Operand, ty: Ty) -> D<u32> {
        self.opd_fit(o, ty, Fit::Exact(alu::reg_bits(ty)))
    }

    fn opd_fit(&mut self, o: &Operand, ty: Ty, fit: Fit) -> D<u32> {
        match *o {
            Operand::Reg(r) => self.reg(r, fit),
            Operand::Imm(v) => {
                if ty.is_float() {
                    return Err(InvalidReason::ImmediateType);
                }
                Ok(self.konst(alu::imm_int(ty, v)))
            }
            Operand::F32(x) => {
                let bits = match ty {
                    Ty::F64 => f64::from(x).to_bits(),
                    _ => alu::imm_int(ty, i64::from(x.to_bits())),
                };
                Ok(self.konst(bits))
            }
            Operand::F64(x) => {
                let bits = match ty {
                    Ty::F32 => u64::from((x as f32).to_bits()),
                    _ => alu::imm_int(ty, x.to_bits() as i64),
                };
                Ok(self.konst(bits))
            }
            Operand::SharedAddr(i) => {
                let addr = self
                    .shared
                    .get(i as usize)
                    .ok_or(InvalidReason::UnknownSymbol)?
                    .addr;
                Ok(self.konst(alu::imm_int(ty, i64::from(addr))))
            }
            Operand::LocalAddr(i) => {
                let addr = self
                    .local
                    .get(i as usize)
                    .ok_or(InvalidReason::UnknownSymbol)?
                    .addr;
                Ok(self.konst(alu::imm_int(ty, addr as i64)))
            }
            Operand::ConstAddr(i) => {
                let addr = self
                    .cmem
                    .get(i as usize)
                    .ok_or(InvalidReason::UnknownSymbol)?
                    .addr;
                Ok(self.konst(alu::imm_int(ty, addr as i64)))
            }
            Operand::Special(Special::Clock64 | Special::GlobalTimer) => {
                if self.clock == NONE {
                    self.clock = self.fresh();
                }
                let dst = self.clock;
                self.pre.push(Inst::Clock { dst });
                Ok(dst)
            }
            Operand::Special(s) => {
                if let Some(x) = self.specials.iter().find(|x| x.special == s) {
                    return Ok(x.slot);
                }
                let slot = self.fresh();
                self.specials.push(SpecialSlot { slot, special: s });
                Ok(slot)
            }
        }
    }

    fn dst(&mut self, r: Reg, ty: Ty) -> D<u32> {
        self.reg(r, Fit::Exact(alu::reg_bits(ty)))
    }

    fn pred(&mut self, r: Reg) -> D<u32> {
        self.reg(r, Fit::Exact(1))
    }

    fn coll(&mut self, c: Coll) -> Inst {
        self.colls.push(c);
        Inst::Coll((self.colls.len() - 1) as u32)
    }

    fn inst(&mut self, op: &Op) -> D<Inst> {
        Ok(match op {
            Op::Comment(_) | Op::Label(_) | Op::Loc { .. } | Op::Membar { .. } => Inst::Nop,
            // A thread that sleeps backs off in a spin loop: it yields, as after an ordered load.
            Op::Nanosleep { .. } => Inst::Sleep,
            Op::Mapa { dst, src, rank } => self.mapa(*dst, src, rank)?,
            Op::BarrierCluster { wait } => Inst::ClusterBar { wait: *wait },
            Op::Vprintf { format, args } => {
                let data = &(self.f.strings.get(*format as usize))
                    .ok_or(InvalidReason::UnknownSymbol)?
                    .data;
                let format = data.split(|&b| b == 0).next().unwrap_or(&[]).to_vec();
                let args = match args {
                    Some(i) => Some(
                        self.local
                            .get(*i as usize)
                            .ok_or(InvalidReason::UnknownSymbol)?
                            .addr,
                    ),
                    None => None,
                };
                self.prints.push(PrintCall { format, args });
                Inst::Print((self.prints.len() - 1) as u32)
            }
            Op::Ld {
                space,
                ty,
                dst,
                addr,
            } => {
                if *ty == Ty::Pred || dst.is_empty() {
                    return Err(InvalidReason::BadType);
                }
                let n = vec_len(dst.len())?;
                let mut regs = [NONE; 4];
                let fit = if ty.is_float() {
                    Fit::Exact(alu::reg_bits(*ty))
                } else {
                    Fit::AtLeast(alu::reg_bits(*ty))
                };
                let mut wide = false;
                for (k, r) in dst.iter().enumerate() {
                    regs[k] = self.reg(*r, fit)?;
                    wide = class_bits(r.class) == 64;
                    if dst
                        .iter()
                        .any(|x| class_bits(x.class) != class_bits(r.class))
                    {
                        return Err(InvalidReason::BadVector);
                    }
                }
                let ext = match (ty.is_signed(), wide) {
                    (false, _) => Ext::Zero,
                    (true, false) => Ext::Sign32,
                    (true, true) => Ext::Sign64,
                };
                let (base, disp) = self.addr(addr, *space)?;
                Inst::Ld(Mem {
                    space: mem_space(*space),
                    n,
                    size: ty.bytes() as u8,
                    ext,
                    regs,
                    base,
                    disp,
                })
            }
            Op::St {
                space,
                ty,
                addr,
                src,
            } => {
                if *ty == Ty::Pred || src.is_empty() {
                    return Err(InvalidReason::BadType);
                }
                if matches!(space, Space::Param | Space::GlobalNc | Space::Const) {
                    return Err(InvalidReason::ReadOnlySpace);
                }
                let n = vec_len(src.len())?;
                let mut regs = [NONE; 4];
                let fit = if ty.is_float() {
                    Fit::Exact(alu::reg_bits(*ty))
                } else {
                    Fit::AtLeast(alu::reg_bits(*ty))
                };
                for (k, s) in src.iter().enumerate() {
                    regs[k] = self.opd_fit(s, *ty, fit)?;
                }
                let (base, disp) = self.addr(addr, *space)?;
                Inst::St(Mem {
                    space: mem_space(*space),
                    n,
                    size: ty.bytes() as u8,
                    ext: Ext::Zero,
                    regs,
                    base,
                    disp,
                })
            }
            Op::Mov { ty, dst, src } => {
                full_width(*ty)?;
                Inst::Un {
                    f: alu::mov(*ty),
                    a: self.opd(src, *ty)?,
                    dst: self.dst(*dst, *ty)?,
                }
            }
            Op::CvtaToGlobal { dst, src } => Inst::Un {
                f: alu::mov(Ty::U64),
                a: self.reg(*src, Fit::Exact(64))?,
                dst: self.reg(*dst, Fit::Exact(64))?,
            },
            Op::Bin { op, ty, dst, a, b } => {
                full_width(*ty)?;
                let f = alu::bin(*op, *ty)
                    .filter(|_| op.accepts(*ty))
                    .ok_or(InvalidReason::BadType)?;
                let (bty, dbits) = match op {
                    BinOp::Shl | BinOp::Shr => (Ty::U32, alu::reg_bits(*ty)),
                    BinOp::MulWide => (*ty, 2 * ty.bytes() * 8),
                    _ => (*ty, alu::reg_bits(*ty)),
                };
                Inst::Bin {
                    f,
                    a: self.opd(a, *ty)?,
                    b: self.opd(b, bty)?,
                    dst: self.reg(*dst, Fit::Exact(dbits))?,
                }
            }
            Op::Un { op, ty, dst, a } => Inst::Un {
                f: alu::un(*op, *ty)
                    .filter(|_| op.accepts(*ty) && full_width(*ty).is_ok())
                    .ok_or(InvalidReason::BadType)?,
                a: self.opd(a, *ty)?,
                dst: self.reg(*dst, Fit::Exact(alu::un_result_bits(*op, *ty)))?,
            },
            Op::Mad { ty, dst, a, b, c } => Inst::Tri {
                f: alu::mad(*ty)
                    .filter(|_| full_width(*ty).is_ok())
                    .ok_or(InvalidReason::BadType)?,
                a: self.opd(a, *ty)?,
                b: self.opd(b, *ty)?,
                c: self.opd(c, *ty)?,
                dst: self.dst(*dst, *ty)?,
            },
            Op::MadWide { ty, dst, a, b, c } => {
                full_width(*ty)?;
                let f = alu::mad_wide(*ty).ok_or(InvalidReason::BadType)?;
                let wide = match (ty.bytes(), ty.is_signed()) {
                    (2, true) => Ty::S32,
                    (2, false) => Ty::U32,
                    (_, true) => Ty::S64,
                    (_, false) => Ty::U64,
                };
                Inst::Tri {
                    f,
                    a: self.opd(a, *ty)?,
                    b: self.opd(b, *ty)?,
                    c: self.opd(c, wide)?,
                    dst: self.dst(*dst, wide)?,
                }
            }
            Op::Setp { cmp, ty, dst, a, b } => Inst::Bin {
                f: alu::setp(*cmp, *ty)
                    .filter(|_| full_width(*ty).is_ok())
                    .ok_or(InvalidReason::BadType)?,
                a: self.opd(a, *ty)?,
                b: self.opd(b, *ty)?,
                dst: self.pred(*dst)?,
            },
            Op::Selp { ty, dst, a, b, p } => {
                if *ty == Ty::Pred {
                    return Err(InvalidReason::BadType);
                }
                full_width(*ty)?;
                Inst::Selp {
                    a: self.opd(a, *ty)?,
                    b: self.opd(b, *ty)?,
                    p: self.pred(*p)?,
                    dst: self.dst(*dst, *ty)?,
                }
            }
            Op::PredBin {
                op: op @ (BinOp::And | BinOp::Or),
                dst,
                a,
                b,
            } => Inst::PredLogic {
                or: *op == BinOp::Or,
                a: self.pred(*a)?,
                b: self.pred(*b)?,
                dst: self.pred(*dst)?,
            },
            Op::PredBin { op, dst, a, b } => Inst::Bin {
                f: match op {
                    BinOp::Xor => alu::bin(*op, Ty::Pred),
                    _ => None,
                }
                .ok_or(InvalidReason::BadType)?,
                a: self.pred(*a)?,
                b: self.pred(*b)?,
                dst: self.pred(*dst)?,
            },
            Op::PredNot { dst, a } => Inst::Un {
                f: alu::un(UnOp::Not, Ty::Pred).ok_or(InvalidReason::BadType)?,
                a: self.pred(*a)?,
                dst: self.pred(*dst)?,
            },
            Op::Cvt {
                round,
                sat,
                dty,
                sty,
                dst,
                src,
            } => {
                let cvt = Cvt {
                    round: *round,
                    sat: *sat,
                    dty: *dty,
                    sty: *sty,
                };
                if !cvt.is_valid() {
                    return Err(InvalidReason::BadType);
                }
                Inst::Cvt {
                    cvt,
                    src: self.reg(*src, Fit::Exact(alu::reg_bits(*sty)))?,
                    dst: self.dst(*dst, *dty)?,
                }
            }
            // The target is resolved once every label is known.
            Op::Bra { .. } => Inst::Bra {
                target: 0,
                select: false,
            },
            Op::Ret => Inst::Ret,
            Op::BarSync { id, count } => {
                if *id > 15 || count.is_some_and(|c| c == 0 || c % 32 != 0) {
                    return Err(InvalidReason::BadBarrier);
                }
                self.coll(Coll::Bar {
                    id: *id,
                    count: *count,
                })
            }
            Op::BarWarpSync { mask } => {
                let mask = self.opd(mask, Ty::U32)?;
                self.coll(Coll::WarpSync { mask })
            }
            Op::Shfl {
                mode,
                dst,
                pred,
                src,
                b,
                c,
                mask,
            } => {
                let c = Coll::Shfl {
                    mode: *mode,
                    dst: self.dst(*dst, Ty::B32)?,
                    pred: match pred {
                        Some(p) => self.pred(*p)?,
                        None => NONE,
                    },
                    src: self.opd(src, Ty::B32)?,
                    b: self.opd(b, Ty::U32)?,
                    c: self.opd(c, Ty::U32)?,
                    mask: self.opd(mask, Ty::U32)?,
                };
                self.coll(c)
            }
            Op::Vote {
                mode,
                dst,
                src,
                negate,
                mask,
            } => {
                let dst = if *mode == VoteMode::Ballot {
                    self.dst(*dst, Ty::B32)?
                } else {
                    self.pred(*dst)?
                };
                let c = Coll::Vote {
                    mode: *mode,
                    dst,
                    src: self.pred(*src)?,
                    negate: *negate,
                    mask: self.opd(mask, Ty::U32)?,
                };
                self.coll(c)
            }
            Op::Match {
                all,
                ty,
                dst,
                src,
                mask,
            } => {
                if ty.is_float() || !matches!(ty.bytes(), 4 | 8) {
                    return Err(InvalidReason::BadType);
                }
                let c = Coll::Match {
                    all: *all,
                    wide: ty.bytes() == 8,
                    dst: self.dst(*dst, Ty::B32)?,
                    src: self.opd(src, *ty)?,
                    mask: self.opd(mask, Ty::U32)?,
                };
                self.coll(c)
            }
            Op::Redux {
                op,
                ty,
                dst,
                src,
                mask,
            } => {
                let f = alu::redux(*op, *ty).ok_or(InvalidReason::BadType)?;
                let c = Coll::Redux {
                    f,
                    sig: *op as u32 * 16 + (*ty == Ty::S32) as u32,
                    dst: self.dst(*dst, *ty)?,
                    src: self.opd(src, *ty)?,
                    mask: self.opd(mask, Ty::U32)?,
                };
                self.coll(c)
            }
            Op::Activemask { dst } => {
                let dst = self.dst(*dst, Ty::B32)?;
                self.coll(Coll::Activemask { dst })
            }
            // The simulator runs every thread's accesses in one order: any memory order holds.
            Op::LdOrdered {
                sem,
                space,
                ty,
                dst,
                addr,
                ..
            } => self.ld_ordered(*space, *ty, *dst, addr, *sem == Sem::Acquire)?,
            Op::Atom {
                // The simulator runs every thread's accesses in one order: any memory order holds
                // (the race checker of cooperative launches reads it).
                order,
                space,
                op,
                ty,
                dst,
                addr,
                a,
                b,
            } => {
                let kind = alu::atom_kind(*op, *ty).ok_or(InvalidReason::BadType)?;
                if (*op == AtomOp::Cas) != b.is_some() {
                    return Err(InvalidReason::BadType);
                }
                let space = atomic_space(*space)?;
                let (base, disp) = self.addr(addr, *space_of(space))?;
                Inst::Atom(Atomic {
                    space,
                    op: *op,
                    kind,
                    dst: self.dst(*dst, *ty)?,
                    base,
                    disp,
                    a: self.opd(a, *ty)?,
                    b: match b {
                        Some(b) => self.opd(b, *ty)?,
                        None => NONE,
                    },
                    acquire: acquires(*order),
                    release: releases(*order),
                })
            }
            Op::Red {
                order,
                space,
                op,
                ty,
                addr,
                a,
            } => {
                let kind = alu::atom_kind(*op, *ty).ok_or(InvalidReason::BadType)?;
                if matches!(op, AtomOp::Cas | AtomOp::Exch) {
                    return Err(InvalidReason::BadType);
                }
                // `red` cannot acquire: it returns nothing to order later reads after.
                if order.is_some_and(|(sem, _)| !sem.for_red()) {
                    return Err(InvalidReason::BadType);
                }
                let space = atomic_space(*space)?;
                let (base, disp) = self.addr(addr, *space_of(space))?;
                Inst::Atom(Atomic {
                    space,
                    op: *op,
                    kind,
                    dst: NONE,
                    base,
                    disp,
                    a: self.opd(a, *ty)?,
                    b: NONE,
                    acquire: false,
                    release: releases(*order),
                })
            }
        })
    }
}

/// Without 16-bit registers in the model, 8- and 16-bit types are valid PTX only in
/// `ld`, `st` and `cvt` (which take wider registers); elsewhere the JIT rejects them.
fn full_width(ty: Ty) -> D<()> {
    if ty != Ty::Pred && ty.bytes() < 4 {
        return Err(InvalidReason::BadType);
    }
    Ok(())
}

//! The typed PTX model: modules, functions, registers, operands and instructions.
//!
//! Code generation builds these values and [`super::write`] renders them as text; the simulator
//! parses that text back into the same types (so a printed module and its parse are equal).
//! Nothing here knows about the IR or the driver.
//!
//! Conventions every producer and consumer relies on:
//! - Registers are virtual and typed by class: `%p` predicates, `%r` 32-bit integers, `%rd`
//!   64-bit integers, `%f` f32, `%fd` f64. Integers narrower than 32 bits live in `%r` registers,
//!   kept sign- or zero-extended from their width.
//! - Float `add`/`sub`/`mul` always carry `.rn`, so ptxas never contracts them into `fma` and the
//!   GPU computes exactly what the simulator computes.

pub use super::unop::{SELECT_LABEL_PREFIX, UnOp};

use super::target::Arch;
use smallvec::SmallVec;

/// A PTX module: one `.version`/`.target` header and its functions.
#[derive(Debug, Clone, PartialEq)]
pub struct Module {
    /// The arch named by `.target`; it also fixes `.version`.
    pub arch: Arch,
    /// Source files of line information (`.file N "name"`, N = index + 1), which
    /// [`Op::Loc`] names by number; empty without line information. A name holds no `"`,
    /// `\` or line break.
    pub files: Vec<String>,
    /// The functions, in order.
    pub functions: Vec<Function>,
}

impl Module {
    /// Moves `other`'s functions to the end of this module, with its source files: each file
    /// this module does not declare yet is added, and `other`'s `.loc` directives are
    /// renumbered to this module's numbers. (Function and constant names must not clash.)
    ///
    /// ```
    /// use coopgraph::ptx::{Arch, Function, Module, Op, RegCounts};
    ///
    /// let function = |name: &str, file: u32| Function {
    ///     name: name.into(),
    ///     params: Vec::new(),
    ///     reqntid: None,
    ///     reqnctapercluster: None,
    ///     explicitcluster: false,
    ///     maxnreg: None,
    ///     minnctapersm: None,
    ///     shared: Vec::new(),
    ///     local: Vec::new(),
    ///     consts: Vec::new(),
    ///     strings: Vec::new(),
    ///     regs: RegCounts::default(),
    ///     body: vec![Op::Loc { file, line: 7, column: 1 }.into(), Op::Ret.into()],
    /// };
    /// let module = |files: &[&str], f: Function| Module {
    ///     arch: Arch::Sm80,
    ///     files: files.iter().map(|f| f.to_string()).collect(),
    ///     functions: vec![f],
    /// };
    /// let mut a = module(&["a.rs"], function("ka", 1));
    /// a.append(module(&["b.rs", "a.rs"], function("kb", 1)));
    /// assert_eq!(a.files, ["a.rs", "b.rs"]);
    /// assert_eq!(a.functions[1].body[0].op, Op::Loc { file: 2, line: 7, column: 1 });
    /// ```
    pub fn append(&mut self, other: Module) {
        let numbers: Vec<u32> = (other.files.into_iter())
            .map(|name| {
                let i = match self.files.iter().position(|f| *f == name) {
                    Some(i) => i,
                    None => {
                        self.files.push(name);
                        self.files.len() - 1
                    }
                };
                u32::try_from(i + 1).unwrap_or(u32::MAX)
            })
            .collect();
        for mut f in other.functions {
            for ins in &mut f.body {
                if let Op::Loc { file, .. } = &mut ins.op {
                    let old = usize::try_from(*file).unwrap_or(usize::MAX);
                    if let Some(&n) = old.checked_sub(1).and_then(|i| numbers.get(i)) {
                        *file = n;
                    }
                }
            }
            self.functions.push(f);
        }
    }
}

/// One `.entry` (kernel) function. [`Default`] is a function of no name, parameters,
/// directives, declarations or body.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Function {
    /// The symbol name.
    pub name: String,
    /// Kernel parameters, in order.
    pub params: Vec<Param>,
    /// `.reqntid x, y, z`: the exact block shape the kernel requires.
    pub reqntid: Option<[u32; 3]>,
    /// `.maxnreg n`.
    pub maxnreg: Option<u32>,
    /// `.minnctapersm n`: the blocks each SM should hold at once (with `.reqntid`, ptxas
    /// bounds the registers by it).
    pub minnctapersm: Option<u32>,
    /// `.reqnctapercluster x, y, z`: the kernel runs in thread-block clusters of this shape
    /// (sm_90); every launch's grid is a multiple of it.
    pub reqnctapercluster: Option<[u32; 3]>,
    /// `.explicitcluster`: the kernel runs in thread-block clusters whose shape each launch
    /// gives (sm_90; `cuLaunchKernelEx` with the cluster attribute).
    pub explicitcluster: bool,
    /// Statically sized shared arrays declared in the body.
    pub shared: Vec<SharedDecl>,
    /// Per-thread arrays declared in the body (`.local`).
    pub local: Vec<LocalDecl>,
    /// Constant arrays with their contents (`.const`), declared at module scope just before
    /// the function; their names must be unique in the module.
    pub consts: Vec<ConstDecl>,
    /// The formats of its [`Op::Vprintf`] calls: NUL-terminated bytes in `.global` memory,
    /// declared at module scope just before the function; names unique in the module.
    pub strings: Vec<ConstDecl>,
    /// How many registers of each class the body uses (declared as `%r<N>` ranges).
    pub regs: RegCounts,
    /// The body.
    pub body: Vec<Instr>,
}

/// The declaration of CUDA's `vprintf` a module that calls it holds (written once, after the
/// header).
pub const VPRINTF_DECL: &str = ".extern .func (.param .b32 func_retval0) vprintf (.param .b64 \
                                vprintf_param_0, .param .b64 vprintf_param_1);";

/// One kernel parameter (`.param .u64 name`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// The parameter's symbol.
    pub name: String,
    /// Its PTX type (pointers are `.u64`).
    pub ty: Ty,
}

/// A `.shared .align A .b8 name[bytes];` declaration; with `bytes == 0`, the function's
/// dynamic shared memory, `.extern .shared .align A .b8 name[];` (written at module scope just
/// before the function), sized at launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedDecl {
    /// The symbol.
    pub name: String,
    /// Alignment in bytes.
    pub align: u32,
    /// Size in bytes.
    pub bytes: u32,
    /// Text of a `// ...` comment after the declaration (one line): what the memory is for.
    /// The code generator names the user's shared array and its source line there, and the
    /// simulator quotes it when an access misses the declaration.
    pub comment: Option<String>,
}

/// A `.local .align A .b8 name[bytes];` declaration in a function's body: `bytes` of memory
/// each thread has on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalDecl {
    /// The symbol.
    pub name: String,
    /// Alignment in bytes.
    pub align: u32,
    /// Size in bytes (at least 1).
    pub bytes: u32,
    /// Text of a `// ...` comment after the declaration (one line), which the simulator quotes
    /// when an access misses the declaration.
    pub comment: Option<String>,
}

/// A `.const .align A .b8 name[n] = {..};` declaration at module scope: read-only memory every
/// thread of the grid sees, holding `data` from the module's load on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConstDecl {
    /// The symbol (unique in the module).
    pub name: String,
    /// Alignment in bytes.
    pub align: u32,
    /// Its contents; its size is their length (at least 1).
    pub data: Vec<u8>,
    /// Text of a `// ...` comment after the declaration (one line).
    pub comment: Option<String>,
}

/// Number of virtual registers used per class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RegCounts {
    /// `%p` registers.
    pub pred: u32,
    /// `%r` registers.
    pub b32: u32,
    /// `%rd` registers.
    pub b64: u32,
    /// `%f` registers.
    pub f32: u32,
    /// `%fd` registers.
    pub f64: u32,
}

impl RegCounts {
    /// The count for one class.
    pub fn get(&self, class: RegClass) -> u32 {
        match class {
            RegClass::Pred => self.pred,
            RegClass::B32 => self.b32,
            RegClass::B64 => self.b64,
            RegClass::F32 => self.f32,
            RegClass::F64 => self.f64,
        }
    }

    /// The count for one class, mutably.
    pub fn get_mut(&mut self, class: RegClass) -> &mut u32 {
        match class {
            RegClass::Pred => &mut self.pred,
            RegClass::B32 => &mut self.b32,
            RegClass::B64 => &mut self.b64,
            RegClass::F32 => &mut self.f32,
            RegClass::F64 => &mut self.f64,
        }
    }
}

/// A register class; the prefix of its registers' names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RegClass {
    /// `%p`, `.pred`.
    Pred,
    /// `%r`, `.b32`.
    B32,
    /// `%rd`, `.b64`.
    B64,
    /// `%f`, `.f32`.
    F32,
    /// `%fd`, `.f64`.
    F64,
}

impl RegClass {
    /// Every class, in declaration order.
    pub const ALL: [RegClass; 5] = [
        RegClass::Pred,
        RegClass::B32,
        RegClass::B64,
        RegClass::F32,
        RegClass::F64,
    ];

    /// The register name prefix without `%` (`p`, `r`, `rd`, `f`, `fd`).
    pub fn prefix(self) -> &'static str {
        match self {
            RegClass::Pred => "p",
            RegClass::B32 => "r",
            RegClass::B64 => "rd",
            RegClass::F32 => "f",
            RegClass::F64 => "fd",
        }
    }

    /// The type used in the `.reg` declaration.
    pub fn decl_ty(self) -> Ty {
        match self {
            RegClass::Pred => Ty::Pred,
            RegClass::B32 => Ty::B32,
            RegClass::B64 => Ty::B64,
            RegClass::F32 => Ty::F32,
            RegClass::F64 => Ty::F64,
        }
    }

    /// The class that holds values of type `ty` (narrow integers live in `%r`).
    pub fn of(ty: Ty) -> RegClass {
        match ty {
            Ty::Pred => RegClass::Pred,
            Ty::F32 => RegClass::F32,
            Ty::F64 => RegClass::F64,
            Ty::B64 | Ty::U64 | Ty::S64 => RegClass::B64,
            _ => RegClass::B32,
        }
    }
}

/// A virtual register: `%r7` is `Reg { class: B32, index: 7 }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reg {
    /// Its class.
    pub class: RegClass,
    /// Its number within the class; registers of a class are numbered from 0.
    pub index: u32,
}

/// A PTX fundamental type as used in instruction suffixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Ty {
    Pred,
    B8,
    B16,
    B32,
    B64,
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F32,
    F64,
}

impl Ty {
    /// The suffix without the dot (`u32`, `f64`, `pred`).
    pub fn name(self) -> &'static str {
        match self {
            Ty::Pred => "pred",
            Ty::B8 => "b8",
            Ty::B16 => "b16",
            Ty::B32 => "b32",
            Ty::B64 => "b64",
            Ty::U8 => "u8",
            Ty::U16 => "u16",
            Ty::U32 => "u32",
            Ty::U64 => "u64",
            Ty::S8 => "s8",
            Ty::S16 => "s16",
            Ty::S32 => "s32",
            Ty::S64 => "s64",
            Ty::F32 => "f32",
            Ty::F64 => "f64",
        }
    }

    /// Size in bytes (a predicate counts as 1).
    pub fn bytes(self) -> u32 {
        match self {
            Ty::Pred | Ty::B8 | Ty::U8 | Ty::S8 => 1,
            Ty::B16 | Ty::U16 | Ty::S16 => 2,
            Ty::B32 | Ty::U32 | Ty::S32 | Ty::F32 => 4,
            Ty::B64 | Ty::U64 | Ty::S64 | Ty::F64 => 8,
        }
    }

    /// Whether this is a signed integer type.
    pub fn is_signed(self) -> bool {
        matches!(self, Ty::S8 | Ty::S16 | Ty::S32 | Ty::S64)
    }

    /// Whether this is a float type.
    pub fn is_float(self) -> bool {
        matches!(self, Ty::F32 | Ty::F64)
    }

    /// Every type, for tables and tests.
    pub const ALL: [Ty; 15] = [
        Ty::Pred,
        Ty::B8,
        Ty::B16,
        Ty::B32,
        Ty::B64,
        Ty::U8,
        Ty::U16,
        Ty::U32,
        Ty::U64,
        Ty::S8,
        Ty::S16,
        Ty::S32,
        Ty::S64,
        Ty::F32,
        Ty::F64,
    ];
}

/// A special (read-only, hardware-provided) register.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Special {
    /// `%tid.{x,y,z}`: thread index in the block.
    Tid(Dim),
    /// `%ntid.{x,y,z}`: block shape.
    Ntid(Dim),
    /// `%ctaid.{x,y,z}`: block index in the grid.
    Ctaid(Dim),
    /// `%nctaid.{x,y,z}`: grid shape.
    Nctaid(Dim),
    /// `%laneid`.
    Laneid,
    /// `%warpid` (physical; may change during execution).
    Warpid,
    /// `%nwarpid`.
    Nwarpid,
    /// `%lanemask_lt`: bits of lanes below this one.
    LanemaskLt,
    /// `%lanemask_le`.
    LanemaskLe,
    /// `%lanemask_gt`.
    LanemaskGt,
    /// `%lanemask_ge`.
    LanemaskGe,
    /// `%dynamic_smem_size`.
    DynamicSmemSize,
    /// `%total_smem_size`.
    TotalSmemSize,
    /// `%clock64`.
    Clock64,
    /// `%globaltimer`.
    GlobalTimer,
    /// `%cluster_nctaid.{x,y,z}`: the cluster's shape in blocks (sm_90).
    ClusterNctaid(Dim),
    /// `%cluster_nctarank`: the blocks of the cluster (sm_90).
    ClusterNctarank,
}

impl Special {
    /// Every one of the special registers, in declaration order.
    pub const ALL: [Special; 27] = [
        Special::Tid(Dim::X),
        Special::Tid(Dim::Y),
        Special::Tid(Dim::Z),
        Special::Ntid(Dim::X),
        Special::Ntid(Dim::Y),
        Special::Ntid(Dim::Z),
        Special::Ctaid(Dim::X),
        Special::Ctaid(Dim::Y),
        Special::Ctaid(Dim::Z),
        Special::Nctaid(Dim::X),
        Special::Nctaid(Dim::Y),
        Special::Nctaid(Dim::Z),
        Special::Laneid,
        Special::Warpid,
        Special::Nwarpid,
        Special::LanemaskLt,
        Special::LanemaskLe,
        Special::LanemaskGt,
        Special::LanemaskGe,
        Special::DynamicSmemSize,
        Special::TotalSmemSize,
        Special::Clock64,
        Special::GlobalTimer,
        Special::ClusterNctaid(Dim::X),
        Special::ClusterNctaid(Dim::Y),
        Special::ClusterNctaid(Dim::Z),
        Special::ClusterNctarank,
    ];
}

/// A dimension of a 3-D special register.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Dim {
    X,
    Y,
    Z,
}

/// An instruction operand.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Operand {
    /// A register.
    Reg(Reg),
    /// An integer immediate (printed in decimal; the instruction type gives its width).
    Imm(i64),
    /// An f32 immediate, printed exactly as `0fXXXXXXXX`.
    F32(f32),
    /// An f64 immediate, printed exactly as `0dXXXXXXXXXXXXXXXX`.
    F64(f64),
    /// A special register.
    Special(Special),
    /// The address of a shared-memory symbol (by index into [`Function::shared`]).
    SharedAddr(u32),
    /// The address of a local-memory symbol in the `.local` window (by index into
    /// [`Function::local`]), 64 bits wide.
    LocalAddr(u32),
    /// The address of a constant symbol in the `.const` space (by index into
    /// [`Function::consts`]), 64 bits wide.
    ConstAddr(u32),
}

impl From<Reg> for Operand {
    fn from(r: Reg) -> Self {
        Operand::Reg(r)
    }
}

/// State spaces for loads and stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Space {
    /// `.param` (kernel parameters).
    Param,
    /// `.global`.
    Global,
    /// `.global.nc`: the non-coherent (read-only) path; only for buffers no thread writes.
    GlobalNc,
    /// `.shared`.
    Shared,
    /// `.local`.
    Local,
    /// `.const` (read-only).
    Const,
    /// `.shared::cluster`: the shared memory of any block of the thread's cluster (sm_90),
    /// at an address from [`Op::Mapa`] (or the block's own `.shared` address).
    SharedCluster,
}

/// The base of an address expression.
#[derive(Debug, Clone, PartialEq)]
pub enum AddrBase {
    /// A 64-bit register (or a 32-bit one for shared memory).
    Reg(Reg),
    /// A kernel parameter by name (for `ld.param`).
    Param(String),
    /// A shared symbol by index into [`Function::shared`].
    Shared(u32),
    /// A local symbol by index into [`Function::local`].
    Local(u32),
    /// A constant symbol by index into [`Function::consts`].
    Const(u32),
}

/// `[base + offset]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Address {
    /// The base.
    pub base: AddrBase,
    /// A constant byte offset.
    pub offset: i64,
}

/// A condition for `setp`. Float comparisons have ordered (`Lt`) and unordered (`Ltu`) forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// Unordered-or-not-equal (true when either is NaN or they differ).
    Neu,
    /// Both are numbers (neither NaN).
    Num,
    /// Either is NaN.
    Nan,
}

impl Cmp {
    /// Every one of the comparisons, in declaration order.
    pub const ALL: [Cmp; 9] = [
        Cmp::Eq,
        Cmp::Ne,
        Cmp::Lt,
        Cmp::Le,
        Cmp::Gt,
        Cmp::Ge,
        Cmp::Neu,
        Cmp::Num,
        Cmp::Nan,
    ];
}

/// Two-operand arithmetic and bit operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `add` (`.rn` for floats).
    Add,
    /// `sub` (`.rn` for floats).
    Sub,
    /// `mul.lo` for integers, `mul.rn` for floats.
    Mul,
    /// `mul.hi` (integers).
    MulHi,
    /// `mul.wide` (32-bit integers to a 64-bit result).
    MulWide,
    /// `div` (`.rn` for floats; integer division truncates, by zero is unspecified).
    Div,
    /// `rem` (integers).
    Rem,
    /// `min` (floats: NaN-ignoring, as PTX defines).
    Min,
    /// `max`.
    Max,
    /// `and`.
    And,
    /// `or`.
    Or,
    /// `xor`.
    Xor,
    /// `shl` (shift amount as `.u32`; amounts past the width give 0).
    Shl,
    /// `shr` (arithmetic for signed types; amounts past the width give 0 or the sign).
    Shr,
    /// `copysign` (floats): the magnitude of `b` with the sign of `a`.
    Copysign,
    /// `add.ftz.f32`: subnormals flushed, and no `.rn`, so ptxas may contract it into an FMA.
    AddFtz,
    /// `sub.ftz.f32`, as [`BinOp::AddFtz`].
    SubFtz,
    /// `mul.ftz.f32`, as [`BinOp::AddFtz`].
    MulFtz,
    /// `div.approx.ftz.f32`.
    DivApprox,
}

impl BinOp {
    /// Every one of the two-operand operations, in declaration order.
    pub const ALL: [BinOp; 19] = [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::MulHi,
        BinOp::MulWide,
        BinOp::Div,
        BinOp::Rem,
        BinOp::Min,
        BinOp::Max,
        BinOp::And,
        BinOp::Or,
        BinOp::Xor,
        BinOp::Shl,
        BinOp::Shr,
        BinOp::Copysign,
        BinOp::AddFtz,
        BinOp::SubFtz,
        BinOp::MulFtz,
        BinOp::DivApprox,
    ];

    /// Whether PTX defines this operation at `ty` (`and.u32` is not PTX: bitwise operations
    /// take `.b` types). The simulator refuses what this refuses, as ptxas does.
    pub fn accepts(self, ty: Ty) -> bool {
        let int = matches!(
            ty,
            Ty::U16 | Ty::U32 | Ty::U64 | Ty::S16 | Ty::S32 | Ty::S64
        );
        let bits = matches!(ty, Ty::B16 | Ty::B32 | Ty::B64);
        match self {
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Min | BinOp::Max => {
                int || ty.is_float()
            }
            BinOp::MulHi | BinOp::Rem => int,
            BinOp::MulWide => int && ty.bytes() <= 4,
            BinOp::And | BinOp::Or | BinOp::Xor | BinOp::Shl => bits,
            BinOp::Shr => bits || int,
            BinOp::Copysign => ty.is_float(),
            BinOp::AddFtz | BinOp::SubFtz | BinOp::MulFtz | BinOp::DivApprox => ty == Ty::F32,
        }
    }
}

/// Rounding modifiers of `cvt`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Round {
    /// `.rn`: float result, to nearest even.
    Rn,
    /// `.rz`: float result, toward zero.
    Rz,
    /// `.rni`: integer result, to nearest even.
    Rni,
    /// `.rzi`: integer result, toward zero.
    Rzi,
    /// `.rmi`: integer result, toward minus infinity.
    Rmi,
    /// `.rpi`: integer result, toward plus infinity.
    Rpi,
}

impl Round {
    /// Every one of the rounding modes, in declaration order.
    pub const ALL: [Round; 6] = [
        Round::Rn,
        Round::Rz,
        Round::Rni,
        Round::Rzi,
        Round::Rmi,
        Round::Rpi,
    ];
}

/// `shfl.sync` modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum ShflMode {
    Up,
    Down,
    Bfly,
    Idx,
}

/// `vote.sync` modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum VoteMode {
    All,
    Any,
    Uni,
    Ballot,
}

/// Reduction operators of `redux.sync`, `atom` and `red`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum AtomOp {
    Add,
    Min,
    Max,
    And,
    Or,
    Xor,
    /// `atom.exch` only.
    Exch,
    /// `atom.cas` only.
    Cas,
    /// `atom.inc` (wrapping at the operand).
    Inc,
    /// `atom.dec`.
    Dec,
}

impl AtomOp {
    /// Every one of the atomic operations, in declaration order.
    pub const ALL: [AtomOp; 10] = [
        AtomOp::Add,
        AtomOp::Min,
        AtomOp::Max,
        AtomOp::And,
        AtomOp::Or,
        AtomOp::Xor,
        AtomOp::Exch,
        AtomOp::Cas,
        AtomOp::Inc,
        AtomOp::Dec,
    ];
}

/// Memory-fence scopes, and the scopes of an atomic's memory order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Scope {
    Cta,
    Gpu,
    Sys,
}

impl Scope {
    /// Every one of the scopes, in declaration order.
    pub const ALL: [Scope; 3] = [Scope::Cta, Scope::Gpu, Scope::Sys];
}

/// The memory-synchronizing effect of an atomic (`.relaxed`, `.acquire`, `.release`,
/// `.acq_rel`); `red` takes only `.relaxed` and `.release`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Sem {
    Relaxed,
    Acquire,
    Release,
    AcqRel,
}

impl Sem {
    /// Every one of the semantics, in declaration order.
    pub const ALL: [Sem; 4] = [Sem::Relaxed, Sem::Acquire, Sem::Release, Sem::AcqRel];

    /// Whether `red` accepts it (`.acquire` needs the value an `atom` returns).
    pub fn for_red(self) -> bool {
        matches!(self, Sem::Relaxed | Sem::Release)
    }
}

/// An atomic's memory order written out: `.sem.scope` (`None` prints neither, which PTX reads
/// as `.relaxed.gpu`).
pub type Order = Option<(Sem, Scope)>;

/// A guard: `@%p` or `@!%p`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Guard {
    /// The predicate register.
    pub pred: Reg,
    /// `true` for `@!%p`.
    pub negate: bool,
}

/// One line of a function body: an optionally guarded operation.
#[derive(Debug, Clone, PartialEq)]
pub struct Instr {
    /// The guard, if any.
    pub guard: Option<Guard>,
    /// The operation.
    pub op: Op,
}

impl From<Op> for Instr {
    fn from(op: Op) -> Self {
        Instr { guard: None, op }
    }
}

/// A PTX operation. The variants are every kind the code generator can emit; the simulator
/// executes each of them.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// `// text`: a comment line (the code generator names each IR op and its source line).
    Comment(String),
    /// `$Lname:`: a branch target.
    Label(String),
    /// `.loc file line column`: the instructions that follow come from this source line, with
    /// `file` the number of a [`Module::files`] entry (from 1). Executes as nothing.
    Loc {
        /// The file's number.
        file: u32,
        /// 1-based line.
        line: u32,
        /// 1-based column.
        column: u32,
    },
    /// `ld{.space}{.vN}.ty dst, [addr];` — `dst` holds 1, 2 or 4 registers.
    Ld {
        /// State space.
        space: Space,
        /// Element type.
        ty: Ty,
        /// Destination registers (a vector load when more than one).
        dst: SmallVec<[Reg; 4]>,
        /// Address.
        addr: Address,
    },
    /// `st{.space}{.vN}.ty [addr], src;`.
    St {
        /// State space.
        space: Space,
        /// Element type.
        ty: Ty,
        /// Address.
        addr: Address,
        /// Source operands (a vector store when more than one).
        src: SmallVec<[Operand; 4]>,
    },
    /// `mov.ty dst, src;`.
    Mov {
        /// Type.
        ty: Ty,
        /// Destination.
        dst: Reg,
        /// Source.
        src: Operand,
    },
    /// A call of CUDA's device `printf`: `vprintf(format, args)` with the generic addresses
    /// of [`Function::strings`]`[format]` and of [`Function::local`]`[args]` (the values, each
    /// at the next multiple of its size), or null for `args` without values. Written as one
    /// line, a block that declares the call's parameters and calls the module's
    /// `.extern .func vprintf` (see [`VPRINTF_DECL`]); a guard goes on the call.
    Vprintf {
        /// The format, by index into [`Function::strings`].
        format: u32,
        /// The values' buffer, by index into [`Function::local`].
        args: Option<u32>,
    },
    /// `cvta.to.global.u64 dst, src;`: a generic pointer to a global-window address.
    CvtaToGlobal {
        /// Destination.
        dst: Reg,
        /// Source.
        src: Reg,
    },
    /// `op.ty dst, a, b;`. For `MulWide` the type is the source type.
    Bin {
        /// The operation.
        op: BinOp,
        /// Type.
        ty: Ty,
        /// Destination.
        dst: Reg,
        /// First operand.
        a: Operand,
        /// Second operand.
        b: Operand,
    },
    /// `op.ty dst, a;`.
    Un {
        /// The operation.
        op: UnOp,
        /// Type (of the source).
        ty: Ty,
        /// Destination.
        dst: Reg,
        /// Operand.
        a: Operand,
    },
    /// `fma.rn.ty` (floats) or `mad.lo.ty` (integers): `dst = a * b + c`.
    Mad {
        /// Type.
        ty: Ty,
        /// Destination.
        dst: Reg,
        /// Factor.
        a: Operand,
        /// Factor.
        b: Operand,
        /// Addend.
        c: Operand,
    },
    /// `mad.wide.ty dst, a, b, c;`: 32-bit factors, 64-bit product plus a 64-bit addend.
    MadWide {
        /// Source type (`u32` or `s32`).
        ty: Ty,
        /// 64-bit destination.
        dst: Reg,
        /// Factor.
        a: Operand,
        /// Factor.
        b: Operand,
        /// 64-bit addend.
        c: Operand,
    },
    /// `setp.cmp.ty dst, a, b;`.
    Setp {
        /// Comparison.
        cmp: Cmp,
        /// Operand type (unsigned integer types compare unsigned).
        ty: Ty,
        /// Predicate destination.
        dst: Reg,
        /// Left operand.
        a: Operand,
        /// Right operand.
        b: Operand,
    },
    /// `selp.ty dst, a, b, p;`: `p ? a : b`.
    Selp {
        /// Type.
        ty: Ty,
        /// Destination.
        dst: Reg,
        /// Value when true.
        a: Operand,
        /// Value when false.
        b: Operand,
        /// Condition.
        p: Reg,
    },
    /// Predicate logic: `and.pred`, `or.pred`, `xor.pred`.
    PredBin {
        /// `And`, `Or` or `Xor`.
        op: BinOp,
        /// Destination predicate.
        dst: Reg,
        /// Operand.
        a: Reg,
        /// Operand.
        b: Reg,
    },
    /// `not.pred dst, a;`.
    PredNot {
        /// Destination predicate.
        dst: Reg,
        /// Operand.
        a: Reg,
    },
    /// `cvt{.rnd}{.sat}.dty.sty dst, src;`.
    Cvt {
        /// Rounding modifier (required for float results from wider floats and float-to-int).
        round: Option<Round>,
        /// Clamp to the destination range (`.sat`).
        sat: bool,
        /// Destination type.
        dty: Ty,
        /// Source type.
        sty: Ty,
        /// Destination.
        dst: Reg,
        /// Source.
        src: Reg,
    },
    /// `bra{.uni} target;`.
    Bra {
        /// Label name.
        target: String,
        /// Whether all threads of the warp branch together.
        uni: bool,
    },
    /// `ret;`.
    Ret,
    /// `bar.sync id{, count};` (block barrier, all or `count` threads).
    BarSync {
        /// Barrier id 0..15.
        id: u32,
        /// Thread count (a multiple of 32), or all threads of the block.
        count: Option<u32>,
    },
    /// `bar.warp.sync mask;`.
    BarWarpSync {
        /// Member mask.
        mask: Operand,
    },
    /// `shfl.sync.mode.b32 dst{|pred}, src, b, c, mask;`.
    Shfl {
        /// Mode.
        mode: ShflMode,
        /// Destination.
        dst: Reg,
        /// Predicate output (true when the source lane was in range).
        pred: Option<Reg>,
        /// The value.
        src: Operand,
        /// Lane or delta.
        b: Operand,
        /// Clamp and segment mask.
        c: Operand,
        /// Member mask.
        mask: Operand,
    },
    /// `vote.sync.mode.{pred,b32} dst, src, mask;`.
    Vote {
        /// Mode.
        mode: VoteMode,
        /// Destination (predicate, or 32-bit for ballot).
        dst: Reg,
        /// Source predicate.
        src: Reg,
        /// Source negated (`!%p`).
        negate: bool,
        /// Member mask.
        mask: Operand,
    },
    /// `match.{any,all}.sync.ty dst, src, mask;`.
    Match {
        /// `true` for `match.all`.
        all: bool,
        /// `b32` or `b64`.
        ty: Ty,
        /// Destination mask.
        dst: Reg,
        /// Value.
        src: Operand,
        /// Member mask.
        mask: Operand,
    },
    /// `redux.sync.op.ty dst, src, mask;` (sm_80+).
    Redux {
        /// Operator (`Add`, `Min`, `Max`, `And`, `Or`, `Xor`).
        op: AtomOp,
        /// `u32`, `s32` or `b32`.
        ty: Ty,
        /// Destination.
        dst: Reg,
        /// Value.
        src: Operand,
        /// Member mask.
        mask: Operand,
    },
    /// `activemask.b32 dst;`.
    Activemask {
        /// Destination.
        dst: Reg,
    },
    /// `atom{.sem.scope}.space.op.ty dst, [addr], a{, b};`.
    Atom {
        /// The memory order, when not the default.
        order: Order,
        /// `Global` or `Shared`.
        space: Space,
        /// Operator.
        op: AtomOp,
        /// Type.
        ty: Ty,
        /// Destination (the old value).
        dst: Reg,
        /// Address.
        addr: Address,
        /// Operand (the compare value for `Cas`).
        a: Operand,
        /// Second operand (the new value for `Cas`).
        b: Option<Operand>,
    },
    /// `red{.sem.scope}.space.op.ty [addr], a;`.
    Red {
        /// The memory order, when not the default (`.acquire` and `.acq_rel` are not `red`'s).
        order: Order,
        /// `Global` or `Shared`.
        space: Space,
        /// Operator.
        op: AtomOp,
        /// Type.
        ty: Ty,
        /// Address.
        addr: Address,
        /// Operand.
        a: Operand,
    },
    /// `ld.sem.scope.space.ty dst, [addr];`: a scalar load with a memory order (`.relaxed` or
    /// `.acquire`; sm_70+), global or shared. The grid barrier waits on its counter with
    /// `ld.acquire.gpu.global`.
    LdOrdered {
        /// `Relaxed` or `Acquire` (the orders PTX gives `ld`).
        sem: Sem,
        /// The scope the order holds at.
        scope: Scope,
        /// `Global` or `Shared`.
        space: Space,
        /// Element type.
        ty: Ty,
        /// Destination.
        dst: Reg,
        /// Address.
        addr: Address,
    },
    /// `membar.{cta,gl,sys};`.
    Membar {
        /// Scope.
        scope: Scope,
    },
    /// `nanosleep.u32 ns;` (sm_70+): suspends the thread for about `ns` nanoseconds (at
    /// most 1 ms), a back-off for spin loops so that polls leave the memory system to the
    /// writers they wait for.
    Nanosleep {
        /// The delay in nanoseconds.
        ns: u32,
    },
    /// `mapa.shared::cluster.u32 dst, src, rank;` (sm_90): the `.shared::cluster` address of
    /// the byte at `.shared` address `src` in the block of cluster rank `rank`.
    Mapa {
        /// Destination (32-bit).
        dst: Reg,
        /// The `.shared` address in this block.
        src: Operand,
        /// The cluster rank of the block whose shared memory is addressed.
        rank: Operand,
    },
    /// `barrier.cluster.arrive;` (`wait: false`, release semantics) or
    /// `barrier.cluster.wait;` (`wait: true`, acquire semantics), sm_90: every thread of
    /// every block of the cluster arrives, then waits for all arrivals of the phase.
    BarrierCluster {
        /// The wait half (else the arrive half).
        wait: bool,
    },
}

impl Op {
    /// A stable name for each variant, for coverage tables and diagnostics.
    pub fn kind(&self) -> &'static str {
        match self {
            Op::Comment(_) => "comment",
            Op::Label(_) => "label",
            Op::Loc { .. } => "loc",
            Op::Ld { .. } => "ld",
            Op::St { .. } => "st",
            Op::Mov { .. } => "mov",
            Op::CvtaToGlobal { .. } => "cvta",
            Op::Vprintf { .. } => "vprintf",
            Op::Bin { .. } => "bin",
            Op::Un { .. } => "un",
            Op::Mad { .. } => "mad",
            Op::MadWide { .. } => "mad.wide",
            Op::Setp { .. } => "setp",
            Op::Selp { .. } => "selp",
            Op::PredBin { .. } => "pred.bin",
            Op::PredNot { .. } => "pred.not",
            Op::Cvt { .. } => "cvt",
            Op::Bra { .. } => "bra",
            Op::Ret => "ret",
            Op::BarSync { .. } => "bar.sync",
            Op::BarWarpSync { .. } => "bar.warp.sync",
            Op::Shfl { .. } => "shfl",
            Op::Vote { .. } => "vote",
            Op::Match { .. } => "match",
            Op::Redux { .. } => "redux",
            Op::Activemask { .. } => "activemask",
            Op::Atom { .. } => "atom",
            Op::Red { .. } => "red",
            Op::Membar { .. } => "membar",
            Op::LdOrdered { .. } => "ld.ordered",
            Op::Nanosleep { .. } => "nanosleep",
            Op::Mapa { .. } => "mapa",
            Op::BarrierCluster { .. } => "barrier.cluster",
        }
    }
}

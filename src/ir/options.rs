//! A kernel's compile options: what the code generator does beyond the ops (register limit,
//! line information, fast math, debug checks). Every option is part of the kernel's cache key; all are
//! off by default, and a kernel built with none of them emits exactly the code it emitted
//! before options existed.

use super::entities::{Loc, OpId};
use std::fmt;

/// The fewest registers per thread [`KernelBuilder::max_registers`] accepts: ptxas raises
/// any smaller limit to this.
///
/// [`KernelBuilder::max_registers`]: super::KernelBuilder::max_registers
pub const MIN_MAX_REGISTERS: u32 = 24;

/// The most registers per thread a kernel can have on every supported arch.
pub const MAX_MAX_REGISTERS: u32 = 255;

/// Registers of one SM's register file: a block's threads times its register limit must fit.
pub const REGISTER_FILE: u32 = 65536;

/// The most threads one SM holds at once (sm_80 and sm_90; sm_75 holds 1024, and ptxas leaves
/// a [`KernelBuilder::min_blocks_per_sm`] it cannot meet unmet there).
///
/// [`KernelBuilder::min_blocks_per_sm`]: super::KernelBuilder::min_blocks_per_sm
pub const SM_THREADS: u32 = 2048;

/// The compile options of a kernel, set by the builder's option methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CompileOptions {
    /// A limit on registers per thread (PTX `.maxnreg`); `None` leaves the choice to ptxas.
    pub max_registers: Option<MaxRegisters>,
    /// The blocks each SM should hold at once (PTX `.minnctapersm`): ptxas keeps the kernel's
    /// registers within what that many blocks share. `None` leaves the choice to ptxas.
    pub min_blocks: Option<MinBlocks>,
    /// Whether the PTX carries the user's source lines.
    pub line_info: LineInfo,
    /// How float functions and arithmetic are computed.
    pub math: MathMode,
    /// Whether the kernel checks its accesses and assertions as it runs.
    pub checks: Checks,
}

/// A register limit and where it was set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MaxRegisters {
    /// Registers per thread, at most.
    pub count: u32,
    /// Where it was set.
    pub loc: Loc,
}

/// The blocks per SM a kernel asks for and where it was set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MinBlocks {
    /// Blocks per SM, at least.
    pub count: u32,
    /// Where it was set.
    pub loc: Loc,
}

/// Whether the PTX carries line information.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LineInfo {
    /// No `.file` or `.loc` directives (the default).
    #[default]
    Off,
    /// Each op's instructions follow a `.loc` naming the Rust line that recorded the op, and
    /// the module declares every such file with `.file`; the runtime asks the driver's JIT for
    /// line information, so `compute-sanitizer` and Nsight Compute name those lines.
    RustLines,
}

/// How a kernel computes the float functions of the math library and float arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MathMode {
    /// The functions are built from exactly rounded PTX operations, to the accuracy the
    /// [`math`](crate::ir::math) module's table states; float `add`, `sub` and `mul` are
    /// rounded one by one (never contracted into an FMA); subnormals are kept. The GPU and
    /// the simulator compute the same bits.
    #[default]
    Accurate,
    /// `f32` functions use PTX's approximate instructions where they exist (`sin.approx`,
    /// `cos.approx`, `ex2.approx`, `lg2.approx`, `tanh.approx`, `rcp.approx`,
    /// `rsqrt.approx`, `sqrt.approx`, `div.approx`), all with `.ftz`; f32 `add`, `sub` and
    /// `mul` flush subnormals to zero and may be contracted into FMAs by ptxas. The GPU and the
    /// simulator may then differ, within the tolerances the [`math`](crate::ir::math) module
    /// states. `f64` is computed as in [`MathMode::Accurate`].
    Fast,
}

/// What the kernel checks while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Checks {
    /// Nothing beyond the guards every checked kernel has (the default): an index past a
    /// buffer's or a shared, local or constant array's end reads 0 and skips the write (and
    /// the atomic), and assertions are not evaluated.
    #[default]
    Off,
    /// Debug checks: every read, write and atomic by index is compared with its buffer's
    /// (or its shared, local or constant array's) length, every explicit valid count and offset of a load or store with the buffer's
    /// room, and every assertion is evaluated; the first failure is recorded with its thread
    /// and reported after the launch as a runtime error naming the op and its line.
    Debug,
}

/// One place where a kernel built with [`Checks::Debug`] tests something as it runs: the op,
/// its line, and what it tests. A launch reports a failure by its site.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CheckSite {
    /// The op.
    pub op: OpId,
    /// The op's kind, as the listing names it (`write`, `load`, `assert`, ...).
    pub op_name: &'static str,
    /// Where the op was recorded.
    pub loc: Loc,
    /// What it tests.
    pub what: CheckKind,
}

/// What a check site tests.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CheckKind {
    /// A read by index is inside its buffer: the value is the index, the limit the length.
    Read {
        /// The buffer's parameter name.
        buffer: String,
    },
    /// A write by index is inside its buffer: the value is the index, the limit the length.
    Write {
        /// The buffer's parameter name.
        buffer: String,
    },
    /// An atomic's element is inside its buffer: the value is the index, the limit the length.
    Atomic {
        /// The buffer's parameter name.
        buffer: String,
    },
    /// The positions a load or store declares valid (its explicit valid count, or the whole
    /// tile at an explicit offset, from the thread's access group on) end inside its buffer:
    /// the value is where they end, the limit the length.
    Range {
        /// The buffer's parameter name.
        buffer: String,
    },
    /// An index into a shared, local or constant array is inside it: the value is the index,
    /// the limit the array's length (a dynamic shared array's, from the launch).
    ArrayIndex {
        /// Which memory the array is in.
        memory: ArrayMemory,
        /// Where the array was declared.
        declared: Loc,
        /// Whether the access writes (a write or an atomic) rather than reads.
        write: bool,
    },
    /// A user assertion holds.
    Assert {
        /// The assertion's message.
        message: String,
    },
}

/// The memory of a user-declared array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArrayMemory {
    /// A shared array (`KernelBuilder::shared_array`).
    Shared,
    /// A local array (per thread).
    Local,
    /// A constant array.
    Const,
}

impl fmt::Display for ArrayMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ArrayMemory::Shared => "shared",
            ArrayMemory::Local => "local",
            ArrayMemory::Const => "constant",
        })
    }
}

impl fmt::Display for CheckSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} at {}", self.op, self.op_name, self.loc)
    }
}

/// The record of a kernel built with [`Checks::Debug`]: a hidden parameter points at
/// [`RECORD_BYTES`](record::RECORD_BYTES) of zeroed global memory, where the first failing thread writes, at these
/// byte offsets, the failed site's number (1-based, a `u32`; 0 while nothing failed), its
/// thread index (three `u32`s), its block index (three `u32`s) and two `u64`s: the value
/// checked and its limit (see [`CheckKind`]).
pub mod record {
    /// The site's number (`u32`), from 1.
    pub const SITE: u32 = 0;
    /// The thread index `x, y, z` (`u32`s).
    pub const THREAD: u32 = 4;
    /// The block index `x, y, z` (`u32`s); 0 along a dimension the kernel does not tell
    /// blocks apart by (a launch has one block there).
    pub const BLOCK: u32 = 16;
    /// The value checked (`u64`).
    pub const VALUE: u32 = 32;
    /// Its limit (`u64`).
    pub const LIMIT: u32 = 40;
    /// Bytes of the record.
    pub const RECORD_BYTES: u32 = 48;
}

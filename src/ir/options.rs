//! A kernel's compile options: what the code generator does beyond the ops (register limit,
//! line information, fast math). Every option is part of the kernel's cache key; all are
//! off by default, and a kernel built with none of them emits exactly the code it emitted
//! before options existed.

use super::entities::Loc;

/// The fewest registers per thread [`KernelBuilder::max_registers`] accepts: ptxas raises
/// any smaller limit to this.
///
/// [`KernelBuilder::max_registers`]: super::KernelBuilder::max_registers
pub const MIN_MAX_REGISTERS: u32 = 24;

/// The most registers per thread a kernel can have on every supported arch.
pub const MAX_MAX_REGISTERS: u32 = 255;

/// Registers of one SM's register file: a block's threads times its register limit must fit.
pub const REGISTER_FILE: u32 = 65536;

/// The compile options of a kernel, set by the builder's option methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CompileOptions {
    /// A limit on registers per thread (PTX `.maxnreg`); `None` leaves the choice to ptxas.
    pub max_registers: Option<MaxRegisters>,
    /// Whether the PTX carries the user's source lines.
    pub line_info: LineInfo,
    /// How float functions and arithmetic are computed.
    pub math: MathMode,
}

/// A register limit and where it was set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MaxRegisters {
    /// Registers per thread, at most.
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

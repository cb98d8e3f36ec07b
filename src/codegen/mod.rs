//! Code generation: the typed PTX model, its one writer, and the lowering of planned IR to PTX.
//!
//! Architecture invariant: codegen reads a verified kernel and its plan and writes PTX text; it
//! never calls the driver and never changes the plan.

pub mod emit;
pub mod exchange;
pub mod expr;
pub mod neighbor;
pub mod ptx;
pub mod reduce;
pub mod scan;
pub mod target;
pub mod transfer;
pub mod write;

pub use emit::{emit, entry_name, grid_dims, length_params};
pub use target::Arch;
pub use write::write_module;

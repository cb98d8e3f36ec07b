//! Code generation: the lowering of planned IR to the typed PTX model of [`crate::ptx`].
//!
//! Architecture invariant: codegen reads a verified kernel and its plan and writes PTX text; it
//! never calls the driver and never changes the plan.

pub mod emit;
pub mod exchange;
pub mod expr;
pub mod neighbor;
pub mod reduce;
pub mod scan;
pub mod transfer;

pub use emit::{emit, entry_name, grid_dims, length_params};

//! The kernel IR: dtypes, groups, payloads, expressions, ops, control flow and the verifier.
//!
//! Architecture invariant: ir/ knows nothing of CUDA, PTX or the planner.

pub mod dtype;

pub use dtype::{DType, Element};

//! coopgraph: build cooperative CUDA kernels at run time.
#![deny(missing_docs)]

pub mod codegen;
pub mod ir;
pub mod layout;
pub mod planner;
pub mod runtime;
pub mod sim;

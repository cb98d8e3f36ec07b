//! coopgraph: build cooperative CUDA kernels at run time.
#![deny(missing_docs)]

pub mod cache_key;
pub mod codegen;
pub mod error;
pub mod ir;
pub mod kernel;
pub mod layout;
pub mod planner;
pub mod runtime;
pub mod sim;

pub use error::Error;
pub use ir::{KernelBuilder, Load, Store};
pub use kernel::Kernel;

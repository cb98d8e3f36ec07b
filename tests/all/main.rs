//! The integration tests: one binary with modules.
mod agreement;
mod cache_key;
mod collectives_prop;
mod common;
mod exprs;
mod fuzz;
mod golden;
mod kernels;
mod layout;
mod layout_reference;
mod neighbor;
mod reduce;
mod runtime;
mod scan;
mod sim;
mod smem;
mod verify;

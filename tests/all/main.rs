//! The integration tests: one binary with modules.
mod common;
mod exprs;
mod golden;
mod kernels;
mod layout;
mod layout_reference;
mod runtime;
mod sim;
mod smem;
mod verify;
mod agreement;
mod fuzz;

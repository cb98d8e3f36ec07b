//! PTX as data: the typed model of modules and instructions, the one writer that renders it as
//! text, and the target architectures.
//!
//! Code generation builds [`Module`]s, [`write_module`] prints them, the simulator parses that
//! text back into the same types, and the runtime hands the text to the driver. This module is a
//! leaf: it imports nothing else from the crate, so each of those stages can depend on it
//! without depending on another.

pub mod model;
pub mod target;
mod unop;
pub mod write;

pub use model::*;

pub use target::Arch;
pub use write::write_module;

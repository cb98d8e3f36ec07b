//! The integration tests: one binary with modules.
mod layout;

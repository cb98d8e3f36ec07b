//! The top-level error: one variant per stage, each wrapping that stage's typed error.

use std::fmt;

/// Any error coopgraph returns. Each variant wraps the typed error of one stage; `source()`
/// gives it back.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The kernel did not verify: every error, with the kernel's listing.
    Verify(crate::ir::VerifyErrors),
    /// The kernel verified but could not be planned.
    Plan(crate::planner::PlanError),
    /// Loading, caching or launching failed.
    Runtime(crate::runtime::RuntimeError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Verify(e) => write!(f, "{e}"),
            Error::Plan(e) => write!(f, "planning failed: {e}"),
            Error::Runtime(e) => write!(f, "runtime: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Verify(e) => Some(e),
            Error::Plan(e) => Some(e),
            Error::Runtime(e) => Some(e),
        }
    }
}

impl From<crate::runtime::RuntimeError> for Error {
    fn from(e: crate::runtime::RuntimeError) -> Self {
        Error::Runtime(e)
    }
}

impl From<crate::ir::VerifyErrors> for Error {
    fn from(e: crate::ir::VerifyErrors) -> Self {
        Error::Verify(e)
    }
}

impl From<crate::planner::PlanError> for Error {
    fn from(e: crate::planner::PlanError) -> Self {
        Error::Plan(e)
    }
}

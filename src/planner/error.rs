//! Planner errors.

use crate::ir::{Arrangement, DataId, Loc, OpId};
use std::fmt;

/// Why a verified kernel could not be planned.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PlanError {
    /// The kernel uses what the arch lacks (thread-block clusters need sm_90).
    ArchTooOld {
        /// What it uses.
        feature: &'static str,
        /// Where it was asked for.
        loc: Loc,
        /// The oldest arch that has it.
        need: crate::ptx::Arch,
        /// The arch asked for.
        arch: crate::ptx::Arch,
    },
    /// An op needs a payload in another arrangement than the one it has. (Converting through
    /// shared memory is not planned yet, so this is rejected rather than silently permuted.)
    ArrangementMismatch {
        /// The payload.
        data: DataId,
        /// The op that needs another arrangement.
        op: OpId,
        /// Where that op was written.
        loc: Loc,
        /// The arrangement the payload has.
        have: Arrangement,
        /// Where the payload got it.
        producer: Loc,
        /// The arrangement the op needs.
        need: Arrangement,
    },
    /// An exchange that synchronizes the whole block (its groups span or cross warps, or it
    /// is time-sliced) is needed where not every thread of the block gets (under a branch or
    /// loop that differs between warps), so its barrier would hang.
    BlockExchangeInDivergentCode {
        /// The op.
        op: OpId,
        /// Where it was written.
        loc: Loc,
    },
    /// An exchange within groups of `threads` threads (inside one warp) under a condition
    /// that may differ between the threads of a group, so its warp barrier would wait for
    /// threads that never come.
    GroupExchangeInDivergentCode {
        /// The op.
        op: OpId,
        /// Where it was written.
        loc: Loc,
        /// Threads per exchange group.
        threads: u32,
    },
    /// A temp storage smaller than an op using it needs.
    TempStorageTooSmall {
        /// The op.
        op: OpId,
        /// Where it was written.
        loc: Loc,
        /// Bytes it needs.
        need: u32,
        /// Bytes the storage has.
        have: u32,
    },
    /// More shared memory than a block of the target arch can have.
    SharedMemory {
        /// Bytes the kernel needs.
        need: u32,
        /// The arch's limit.
        limit: u32,
        /// The arch.
        arch: crate::ptx::Arch,
        /// The ops (or shared arrays) that need the bytes, with where they were written and how
        /// many bytes each needs.
        users: Vec<(String, Loc, u32)>,
    },
    /// A store with each group's own valid count over groups of `group` threads, of a payload
    /// that must be rearranged in groups of `across` threads which do not nest in the store's
    /// (more threads, or groups that straddle two of the store's): converting it mixes
    /// positions of several groups, whose counts the threads moving them do not know.
    GroupCountAcrossGroups {
        /// The store.
        op: OpId,
        /// Where it was written.
        loc: Loc,
        /// Threads per group of the store.
        group: u32,
        /// Threads per group of the exchange that converts the payload: the least common
        /// multiple of the two arrangements' group sizes.
        across: u32,
    },
    /// A layout query failed while deriving an index map.
    Layout {
        /// The op.
        op: OpId,
        /// Where it was written.
        loc: Loc,
        /// What failed.
        reason: String,
    },
    /// The [`Info`](crate::ir::Info) given is not the verifier's result for this IR (it was
    /// verified from another kernel, or the IR changed since).
    NotVerified {
        /// Where the kernel was started (its block shape was set).
        loc: Loc,
    },
    /// An expression whose conditional memory reads (selects, `and`s and `or`s with sides that
    /// read shared arrays or buffers, each read only where taken) share so much between the
    /// sides of different conditions that lowering each side where it is taken would take
    /// more than `limit` steps (nested selects that use one select on sides of several others).
    ConditionalReads {
        /// The op evaluating the expression.
        op: OpId,
        /// Where it was written.
        loc: Loc,
        /// The bound on the steps.
        limit: u64,
    },
    /// Code generation found missing what the verifier and planner guarantee for an op or a
    /// shared array: an internal error of coopgraph, not of the kernel.
    Internal {
        /// What was missing, and for which op or array.
        missing: String,
        /// Where that op or array was written.
        loc: Loc,
    },
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanError::ArrangementMismatch {
                data,
                op,
                loc,
                have,
                producer,
                need,
            } => write!(
                f,
                "{loc}: {op} needs payload {data} {need:?}, but it is {have:?} (made so at \
                 {producer}); use the matching algorithm on both sides"
            ),
            PlanError::BlockExchangeInDivergentCode { op, loc } => write!(
                f,
                "{loc}: {op} needs an exchange over the whole block, but runs under a \
                 condition that differs between warps; its barrier would never complete"
            ),
            PlanError::GroupExchangeInDivergentCode { op, loc, threads } => write!(
                f,
                "{loc}: {op} needs an exchange within groups of {threads} threads, but runs \
                 under a condition that may differ inside a group; its barrier would never \
                 complete"
            ),
            PlanError::TempStorageTooSmall {
                op,
                loc,
                need,
                have,
            } => write!(
                f,
                "{loc}: {op} needs {need} bytes of its temp storage, which has {have}"
            ),
            PlanError::ArchTooOld {
                feature,
                loc,
                need,
                arch,
            } => write!(
                f,
                "{loc}: {feature} needs {need} or later; the target is {arch}"
            ),
            PlanError::SharedMemory {
                need,
                limit,
                arch,
                users,
            } => {
                write!(
                    f,
                    "the kernel needs {need} bytes of shared memory; {arch} allows {limit}. Used by:"
                )?;
                for (what, loc, bytes) in users {
                    write!(f, "\n  {loc}: {what}: {bytes} bytes")?;
                }
                Ok(())
            }
            PlanError::GroupCountAcrossGroups {
                op,
                loc,
                group,
                across,
            } => write!(
                f,
                "{loc}: {op} stores over groups of {group} threads, each with its own valid \
                 count, a payload that must be rearranged in groups of {across} threads, which \
                 do not nest in the store's groups; give a count of the block's tile \
                 (block_valid_items) or store the payload over the group it was arranged by"
            ),
            PlanError::Layout { op, loc, reason } => {
                write!(f, "{loc}: {op}: index map could not be derived: {reason}")
            }
            PlanError::NotVerified { loc } => write!(
                f,
                "{loc}: the kernel's verifier result is for another IR; verify this one first"
            ),
            PlanError::ConditionalReads { op, loc, limit } => write!(
                f,
                "{loc}: {op}: an expression whose selects share subexpressions that read memory \
                 between the sides of different conditions; reading each only where taken would \
                 take more than {limit} steps (compute the shared part once, outside the \
                 selects, or split the expression over several ops)"
            ),
            PlanError::Internal { missing, loc } => write!(
                f,
                "{loc}: internal error: code generation found no {missing}; please report \
                 this with the kernel"
            ),
        }
    }
}

impl std::error::Error for PlanError {}

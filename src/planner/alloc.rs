//! Slices of shared memory and their offsets by live range.
//!
//! Invariants this pass establishes: slices whose live ranges overlap never share bytes; an
//! exchange's or collective's live range is its own program point, so such slices in sequence
//! reuse one region (the kernel needs the largest, not the sum) — except in code that is not
//! uniform across the block, where a block barrier cannot go: those slices live for the whole
//! kernel; a temp storage lives from its first user to its last.
//!
//! Small slices (a reduction's or a warp scan's partials: at most [`APART_MAX`] bytes, up to
//! [`APART_BUDGET`] in all) get bytes of their own after the others, where the kernel's shared
//! memory stays within [`APART_LIMIT`]. Sharing bytes costs a barrier wherever one collective
//! writes what the one before it read (the barrier pass places one for every such pair), and
//! saves a few bytes no occupancy notices: a device-wide selection's tile passes through five
//! collectives, and their own bytes for the three small ones took four of its ten barriers.
//! Disjoint bytes never add a barrier, since barriers follow from the bytes steps share.

use super::ids::{IdVec, SliceId};
use crate::ir::{OpId, StorageId};

/// A region of shared memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    /// What uses it (for `explain`).
    pub label: String,
    /// The op that uses it.
    pub op: OpId,
    /// Byte offset in the kernel's shared memory.
    pub offset: u32,
    /// Size in bytes.
    pub bytes: u32,
    /// Alignment in bytes.
    pub align: u32,
    /// Live range in program points (inclusive).
    pub live: (u32, u32),
    /// A temp storage without auto-sync: the user orders its users (the planner places no
    /// barrier between two of them; another slice that shares its bytes is still ordered
    /// against it).
    pub user_ordered: bool,
}

impl Slice {
    /// A slice of `bytes` bytes aligned to `align`, used by `op`, not yet placed.
    pub(super) fn new(label: String, op: OpId, bytes: u32, align: u32) -> Slice {
        Slice {
            label,
            op,
            offset: 0,
            bytes,
            align,
            live: (0, 0),
            user_ordered: false,
        }
    }
}

/// A slice to place in the window, at its program point (the first of a temp storage's).
#[derive(Debug, Clone, Copy)]
pub(super) struct Request {
    /// The slice.
    pub slice: SliceId,
    /// Its program point.
    pub at: u32,
    /// Whether it lives for the whole kernel.
    pub exclusive: bool,
}

/// The largest slice that gets bytes of its own: 32 warps' 8-byte partials and the result.
const APART_MAX: u32 = 33 * 8;

/// The most bytes the slices apart take in one kernel (their sizes, before alignment).
const APART_BUDGET: u32 = 2048;

/// The shared memory (the window's) within which small slices go apart: a kernel past it
/// (up to the 48 KiB a static declaration may take) places them as it would otherwise, so
/// a kernel near a device's limit is never pushed over it.
const APART_LIMIT: u32 = 48 * 1024;

/// Offsets by live range: lowest aligned offset that overlaps no placed slice whose range
/// overlaps, then the small slices apart (see the module's documentation). Exclusive
/// requests live for the whole kernel (`0..=end`); returns the bytes the slices need.
pub(super) fn allocate(
    slices: &mut IdVec<SliceId, Slice>,
    requests: &[Request],
    end: u32,
    storages: &IdVec<StorageId, Option<SliceId>>,
) -> u32 {
    let mut is_storage: IdVec<SliceId, bool> = IdVec::filled(slices.len(), false);
    for &sl in storages.values().flatten() {
        is_storage[sl] = true;
    }
    let mut budget = APART_BUDGET;
    let apart: Vec<bool> = (requests.iter())
        .map(|r| {
            let bytes = slices[r.slice].bytes;
            let small = !r.exclusive && !is_storage[r.slice] && bytes <= APART_MAX;
            let fits = small && bytes <= budget;
            budget -= if fits { bytes } else { 0 };
            fits
        })
        .collect();
    if apart.iter().filter(|&&a| a).count() > 1 {
        let shared = by_live_range(slices, requests, end, &is_storage, &apart);
        let mut offset = shared;
        for (r, _) in requests.iter().zip(&apart).filter(|(_, a)| **a) {
            let sl = &mut slices[r.slice];
            offset = offset.next_multiple_of(sl.align.max(1));
            (sl.offset, sl.live) = (offset, (r.at, r.at));
            offset += sl.bytes;
        }
        if offset <= APART_LIMIT {
            return offset;
        }
    }
    by_live_range(
        slices,
        requests,
        end,
        &is_storage,
        &vec![false; requests.len()],
    )
}

/// The live-range placement of the requests not `apart`; returns the bytes they need.
///
/// Requests come in order of their first point, so a placed slice whose range ended before a
/// request's start overlaps no later request but those that live for the whole kernel: the
/// others look only at the slices still live, which keeps the pass about linear in the number
/// of slices.
fn by_live_range(
    slices: &mut IdVec<SliceId, Slice>,
    requests: &[Request],
    end: u32,
    is_storage: &IdVec<SliceId, bool>,
    apart: &[bool],
) -> u32 {
    let mut bytes_needed = 0u32;
    let mut placed: Vec<SliceId> = Vec::new();
    // The placed slices live at or after the last request's start.
    let mut live_now: Vec<SliceId> = Vec::new();
    for (r, _) in requests.iter().zip(apart).filter(|(_, a)| !**a) {
        let slice = r.slice;
        let live = if r.exclusive {
            (0, end)
        } else if is_storage[slice] {
            slices[slice].live
        } else {
            (r.at, r.at)
        };
        slices[slice].live = live;
        let (bytes, align) = (slices[slice].bytes, slices[slice].align.max(1));
        let candidates = if r.exclusive {
            &placed
        } else {
            live_now.retain(|&i| slices[i].live.1 >= live.0);
            &live_now
        };
        let mut busy: Vec<(u32, u32)> = candidates
            .iter()
            .map(|&i| &slices[i])
            .filter(|o| o.live.0 <= live.1 && live.0 <= o.live.1)
            .map(|o| (o.offset, o.offset.saturating_add(o.bytes)))
            .collect();
        busy.sort();
        // Sums past 4 GiB saturate: such a kernel needs more shared memory than any device
        // has, which compiling it reports.
        let mut offset = 0u32;
        for (lo, hi) in busy {
            if offset.saturating_add(bytes) <= lo {
                break;
            }
            offset = offset.max(hi.div_ceil(align).saturating_mul(align));
        }
        slices[slice].offset = offset;
        bytes_needed = bytes_needed.max(offset.saturating_add(bytes));
        placed.push(slice);
        live_now.push(slice);
    }
    bytes_needed
}

//! Position forms: where each `(item, rank)` of an arrangement lies in a group's tile, derived
//! from the arrangement's layout, and the padding of shared-memory regions. Exchanges,
//! collectives and the steps that describe their accesses all read positions through these.

use crate::ir::Arrangement;
use crate::layout::{
    Arrangement as LArr, Layout, SmemTransform, arrangement_layout, arrangement_layout_with_warp,
    bank_conflicts_with, decompose,
};

/// A position map `(item, rank) -> position` inside an exchange group, from the arrangement's
/// layout: `position = item * item_stride + sum over terms of ((rank / divisor) % extent) *
/// stride`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct PositionForm {
    /// Added per item.
    pub item_stride: u32,
    /// The digits of the rank: `(extent, divisor, stride)`, lowest first.
    pub thread_terms: Vec<(u32, u32, u32)>,
}

impl PositionForm {
    /// The form of an arrangement over an exchange group of `scope` threads with `items`
    /// items each, derived from its layout.
    pub fn of(a: Arrangement, scope: u32, items: u32) -> Option<PositionForm> {
        let layout = layout_of(a, scope, items)?;
        let d = decompose(&layout).ok()?;
        let item_stride = match d.item.terms() {
            [] => 0,
            [t] => u32::try_from(t.stride).ok()?,
            _ => return None,
        };
        let thread_terms = d
            .thread
            .terms()
            .iter()
            .map(|t| {
                Some((
                    u32::try_from(t.extent).ok()?,
                    u32::try_from(t.divisor).ok()?,
                    u32::try_from(t.stride).ok()?,
                ))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(PositionForm {
            item_stride,
            thread_terms,
        })
    }

    /// The rank's part of the position.
    pub fn thread_part(&self, rank: u32) -> u32 {
        self.thread_terms
            .iter()
            .map(|&(e, d, s)| (rank / d.max(1)) % e.max(1) * s)
            .sum()
    }

    /// The position of `(item, rank)`.
    pub fn position(&self, item: u32, rank: u32) -> u32 {
        item * self.item_stride + self.thread_part(rank)
    }
}

/// The slot of position `p` when one unused slot follows every `every` positions (`None`: no
/// padding). Exchanges and raking collectives pad this way; code generation evaluates the same
/// formula at run time.
pub(crate) fn padded_slot(p: u32, every: Option<u32>) -> u32 {
    every.map_or(p, |n| p + p / n.max(1))
}

/// The layout of an arrangement over a group of `scope` threads with `items` items each.
pub(super) fn layout_of(a: Arrangement, scope: u32, items: u32) -> Option<Layout> {
    let (kind, threads) = match a {
        Arrangement::Blocked => (LArr::Blocked, scope),
        Arrangement::Striped { threads } => (LArr::Striped, threads),
    };
    if threads == scope {
        return arrangement_layout(kind, threads, items).ok();
    }
    // Several striped groups inside the scope: each a warp of `threads` lanes,
    // `(items, (threads, scope / threads)) : (threads, (1, threads * items))`.
    arrangement_layout_with_warp(LArr::WarpStriped, scope, items, threads).ok()
}

/// Threads of the groups an arrangement is striped over (1 for blocked).
pub(super) fn striped_threads(a: Arrangement) -> u32 {
    match a {
        Arrangement::Blocked => 1,
        Arrangement::Striped { threads } => threads,
    }
}

/// Whether `padding` lowers the summed worst-case bank conflicts of `accesses` (layouts of
/// accesses by `lanes` threads to `bytes`-byte elements) below the unpadded count.
pub(super) fn padding_pays(
    accesses: &[Layout],
    bytes: u32,
    lanes: u32,
    padding: SmemTransform,
) -> bool {
    let cost = |t: SmemTransform| -> Option<u32> {
        accesses
            .iter()
            .map(|l| {
                bank_conflicts_with(l, bytes, lanes, t)
                    .ok()
                    .map(|r| r.worst)
            })
            .sum()
    };
    matches!(
        (cost(SmemTransform::Identity), cost(padding)),
        (Some(plain), Some(padded)) if padded < plain
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn position_forms_come_from_layouts() {
        let blocked = PositionForm::of(Arrangement::Blocked, 64, 4).expect("form");
        let striped = PositionForm::of(Arrangement::Striped { threads: 64 }, 64, 4).expect("form");
        let warps = PositionForm::of(Arrangement::Striped { threads: 32 }, 64, 4).expect("form");
        for r in 0..64 {
            for i in 0..4 {
                assert_eq!(blocked.position(i, r), r * 4 + i);
                assert_eq!(striped.position(i, r), i * 64 + r);
                assert_eq!(warps.position(i, r), (r / 32) * 128 + i * 32 + r % 32);
            }
        }
    }

    #[test]
    fn several_striped_groups_are_warps_of_their_width() {
        let l = layout_of(Arrangement::Striped { threads: 8 }, 32, 3).expect("layout");
        assert_eq!(l.to_string(), "(3,(8,4)):(8,(1,24))");
    }
}

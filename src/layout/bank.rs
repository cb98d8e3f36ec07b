//! Shared-memory bank conflicts of a thread arrangement.
//!
//! Shared memory has 32 banks of 4 bytes: byte address `a` is in word `a / 4`, bank
//! `(a / 4) % 32`. When the lanes of a warp access it together, lanes touching the same word
//! share it (broadcast), and distinct words in the same bank are served in separate
//! wavefronts. The wavefronts of one phase are the most distinct words any bank holds in it;
//! the least possible is `ceil(distinct words / 32)`, and a conflict is a wavefront beyond
//! that minimum.
//!
//! Phases: an access of 1-, 2- or 4-byte elements is one phase. An access of 8-byte
//! elements is two phases of 16 lanes (0-15, then 16-31), and lanes of different phases
//! never conflict, unless the lanes come in pairs with equal addresses (lane `i` and lane
//! `i ^ 1` everywhere, or `i` and `i ^ 2` everywhere; a broadcast is both), which is one
//! phase. So a contiguous warp of 8-byte elements needs 2 wavefronts and has 0 conflicts.
//!
//! This model reproduces Nsight Compute's `l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld`
//! and `l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld` on an H200 (sm_90) for the 33
//! warp patterns of the tests (the `MEASURED` table), including ones where a whole-warp
//! model would be wrong both ways.
//!
//! [`bank_conflicts`] takes a rank-2 layout `(item, thread) -> element position` and, for
//! every item and every group of `lanes` consecutive threads, counts the extra wavefronts;
//! it reports the worst. [`bank_conflicts_with`] also applies an address transform (a
//! [`Swizzle`] or padding) and reports worst, total and where the worst happens, so that a
//! planner can compare candidates.

use super::error::{LayoutError, Op};
use super::layout::Layout;
use super::swizzle::Swizzle;

/// Number of banks.
pub const BANKS: u32 = 32;
/// Bytes per bank word.
pub const BANK_BYTES: u32 = 4;
/// The most `items * threads` points an analysis visits.
pub const MAX_ANALYSIS_POINTS: i64 = 1 << 24;

/// How element positions become shared-memory element slots before bytes are computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum SmemTransform {
    /// Slot = position.
    #[default]
    Identity,
    /// Slot = `swizzle.call(position)`.
    Swizzle(Swizzle),
    /// `pad` unused slots after every `every` elements: slot = `p + (p / every) * pad`.
    Pad {
        /// Elements between two paddings.
        every: u32,
        /// Slots inserted each time.
        pad: u32,
    },
}

impl SmemTransform {
    /// The slot of element position `p`.
    pub fn apply(&self, p: i64) -> Result<i64, LayoutError> {
        match *self {
            SmemTransform::Identity => Ok(p),
            SmemTransform::Swizzle(sw) => Ok(sw.call(p)),
            SmemTransform::Pad { every, pad } => {
                if every == 0 {
                    return Err(LayoutError::ZeroExtent);
                }
                p.div_euclid(i64::from(every))
                    .checked_mul(i64::from(pad))
                    .and_then(|extra| p.checked_add(extra))
                    .ok_or(LayoutError::overflow(Op::BankAddress))
            }
        }
    }
}

/// The result of [`bank_conflicts_with`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct BankReport {
    /// Most extra wavefronts of any single access (one item, one warp).
    pub worst: u32,
    /// Extra wavefronts summed over all items and warps.
    pub total: u32,
    /// Wavefronts summed over all items and warps (conflicts included).
    pub wavefronts: u32,
    /// Item index of the first access with `worst` extra wavefronts.
    pub worst_item: u32,
    /// Warp index (thread / lanes) of that access.
    pub worst_warp: u32,
}

/// Worst number of extra wavefronts (maximised over items and warps) when each group of
/// `lanes` consecutive threads accesses item `k` at once, for elements of `elem_bytes`
/// (1, 2, 4 or 8) bytes and `layout: (item, thread) -> element position`.
///
/// ```
/// use coopgraph::layout::{arrangement_layout, bank_conflicts, Arrangement};
/// let striped = arrangement_layout(Arrangement::Striped, 128, 4).unwrap();
/// assert_eq!(bank_conflicts(&striped, 4, 32), Ok(0));
/// let blocked = arrangement_layout(Arrangement::Blocked, 128, 4).unwrap();
/// assert_eq!(bank_conflicts(&blocked, 4, 32), Ok(3));
/// ```
pub fn bank_conflicts(layout: &Layout, elem_bytes: u32, lanes: u32) -> Result<u32, LayoutError> {
    bank_conflicts_with(layout, elem_bytes, lanes, SmemTransform::Identity).map(|r| r.worst)
}

/// [`bank_conflicts`] after mapping positions through `transform`, with totals.
///
/// ```
/// use coopgraph::layout::{arrangement_layout, bank_conflicts_with, Arrangement, SmemTransform};
/// let blocked = arrangement_layout(Arrangement::Blocked, 32, 32).unwrap();
/// let plain = bank_conflicts_with(&blocked, 4, 32, SmemTransform::Identity).unwrap();
/// assert_eq!(plain.worst, 31);
/// let padded = SmemTransform::Pad { every: 32, pad: 1 };
/// assert_eq!(bank_conflicts_with(&blocked, 4, 32, padded).unwrap().worst, 0);
/// ```
pub fn bank_conflicts_with(
    layout: &Layout,
    elem_bytes: u32,
    lanes: u32,
    transform: SmemTransform,
) -> Result<BankReport, LayoutError> {
    if !matches!(elem_bytes, 1 | 2 | 4 | 8) {
        return Err(LayoutError::UnsupportedElementSize { bytes: elem_bytes });
    }
    if !(1..=BANKS).contains(&lanes) {
        return Err(LayoutError::InvalidLanes { lanes });
    }
    let (item_mode, thread_mode) = layout.two_modes()?;
    let (items, threads) = (item_mode.size(), thread_mode.size());
    let points = items.saturating_mul(threads);
    if points > MAX_ANALYSIS_POINTS {
        return Err(LayoutError::TooLarge {
            points,
            limit: MAX_ANALYSIS_POINTS,
        });
    }
    // A layout is the sum of its modes' offsets, so tabulate each mode once.
    let thread_offsets: Vec<i64> = (0..threads).map(|t| thread_mode.call(t)).collect();
    let lanes = lanes as usize;
    let mut report = BankReport::default();
    for item in 0..items {
        let base = item_mode.call(item);
        for (warp, group) in thread_offsets.chunks(lanes).enumerate() {
            let (waves, extra) = wavefronts(group, base, elem_bytes, transform)?;
            report.wavefronts = report.wavefronts.saturating_add(waves);
            report.total = report.total.saturating_add(extra);
            if extra > report.worst {
                report.worst = extra;
                // Both fit u32: items, warps < 2^24.
                report.worst_item = item as u32;
                report.worst_warp = warp as u32;
            }
        }
    }
    Ok(report)
}

/// Lanes served together for 8-byte elements.
const WIDE_PHASE_LANES: usize = 16;

/// Wavefronts of one access and how many of them exceed the minimum.
fn wavefronts(
    thread_offsets: &[i64],
    base: i64,
    elem_bytes: u32,
    transform: SmemTransform,
) -> Result<(u32, u32), LayoutError> {
    let overflow = || LayoutError::overflow(Op::BankAddress);
    // A group is at most `BANKS` lanes (`bank_conflicts_with` checks `lanes`).
    let mut buf = [0i64; BANKS as usize];
    let slots = &mut buf[..thread_offsets.len()];
    for (slot, &offset) in slots.iter_mut().zip(thread_offsets) {
        let position = base.checked_add(offset).ok_or_else(overflow)?;
        *slot = transform.apply(position)?;
    }
    let slots = &*slots;
    let paired =
        |step: usize| (0..slots.len()).all(|i| slots.get(i ^ step).is_none_or(|&s| s == slots[i]));
    let phase_lanes = if elem_bytes == 8 && !paired(1) && !paired(2) {
        WIDE_PHASE_LANES
    } else {
        slots.len().max(1)
    };
    let (mut waves, mut extra) = (0u32, 0u32);
    for phase in slots.chunks(phase_lanes) {
        let (w, e) = phase_wavefronts(phase, elem_bytes)?;
        waves += w;
        extra += e;
    }
    Ok((waves, extra))
}

/// Words a phase's distinct-word test tells apart with a bit set (from its lowest word);
/// phases whose words spread wider are sorted instead.
const SPAN_BITS: i64 = 512;

/// Wavefronts of the element slots accessed in one phase, and how many exceed the minimum.
fn phase_wavefronts(slots: &[i64], elem_bytes: u32) -> Result<(u32, u32), LayoutError> {
    let overflow = || LayoutError::overflow(Op::BankAddress);
    // At most `BANKS` slots of at most two words each.
    let mut buf = [0i64; 2 * BANKS as usize];
    let mut len = 0;
    for &slot in slots {
        let byte = slot
            .checked_mul(i64::from(elem_bytes))
            .ok_or_else(overflow)?;
        let first = byte.div_euclid(i64::from(BANK_BYTES));
        buf[len] = first;
        len += 1;
        if elem_bytes == 8 {
            buf[len] = first.checked_add(1).ok_or_else(overflow)?;
            len += 1;
        }
    }
    let words = &mut buf[..len];
    let (lo, hi) = words
        .iter()
        .fold((i64::MAX, i64::MIN), |(lo, hi), &w| (lo.min(w), hi.max(w)));
    // Each distinct word counts once in its bank.
    let mut per_bank = [0u32; BANKS as usize];
    let mut distinct = 0u32;
    let mut count = |w: i64| {
        // rem_euclid of a positive modulus is in 0..32.
        per_bank[w.rem_euclid(i64::from(BANKS)) as usize] += 1;
        distinct += 1;
    };
    if hi.checked_sub(lo).is_some_and(|span| span < SPAN_BITS) {
        let mut seen = [0u64; (SPAN_BITS / 64) as usize];
        for &w in words.iter() {
            // 0 <= w - lo < SPAN_BITS.
            let bit = (w - lo) as usize;
            let (word, mask) = (bit / 64, 1u64 << (bit % 64));
            if seen[word] & mask == 0 {
                seen[word] |= mask;
                count(w);
            }
        }
    } else {
        words.sort_unstable();
        let mut last = None;
        for &w in words.iter() {
            if last != Some(w) {
                last = Some(w);
                count(w);
            }
        }
    }
    let waves = per_bank.iter().copied().max().unwrap_or(0);
    // At most 64 words, so this fits.
    let minimum = distinct.div_ceil(BANKS);
    Ok((waves, waves.saturating_sub(minimum)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::arrangement::{Arrangement, arrangement_layout};

    fn layout(arr: Arrangement, threads: u32, items: u32) -> Layout {
        arrangement_layout(arr, threads, items).expect("valid arrangement")
    }

    #[test]
    fn striped_is_conflict_free_for_every_width() {
        let l = layout(Arrangement::Striped, 256, 8);
        for bytes in [1, 2, 4, 8] {
            assert_eq!(
                bank_conflicts(&l, bytes, 32),
                Ok(0),
                "{bytes}-byte elements"
            );
        }
    }

    #[test]
    fn blocked_conflicts_by_hand() {
        // f32, K = 4: lane l reads word 4l + k; lanes l, l+8, l+16, l+24 share a bank.
        assert_eq!(
            bank_conflicts(&layout(Arrangement::Blocked, 128, 4), 4, 32),
            Ok(3)
        );
        // f32, K = 2: words 2l + k, two lanes per bank.
        assert_eq!(
            bank_conflicts(&layout(Arrangement::Blocked, 32, 2), 4, 32),
            Ok(1)
        );
        // f32, K = 3 (odd): 3l mod 32 is a permutation.
        assert_eq!(
            bank_conflicts(&layout(Arrangement::Blocked, 32, 3), 4, 32),
            Ok(0)
        );
        // f32, K = 32: every lane in the same bank.
        assert_eq!(
            bank_conflicts(&layout(Arrangement::Blocked, 32, 32), 4, 32),
            Ok(31)
        );
        // f64, K = 2: lane l reads words 4l+2k, 4l+2k+1: 64 words in 16 banks, 4 each; the
        // minimum for 64 words is 2.
        assert_eq!(
            bank_conflicts(&layout(Arrangement::Blocked, 32, 2), 8, 32),
            Ok(2)
        );
        // f64, K = 1: contiguous, 2 wavefronts, the minimum.
        assert_eq!(
            bank_conflicts(&layout(Arrangement::Blocked, 32, 1), 8, 32),
            Ok(0)
        );
        // u8, K = 4: lane l reads byte 4l + k, word l: no conflict.
        assert_eq!(
            bank_conflicts(&layout(Arrangement::Blocked, 32, 4), 1, 32),
            Ok(0)
        );
        // u8, K = 8: lane l reads word 2l + k/4: 2 lanes per bank with distinct words.
        assert_eq!(
            bank_conflicts(&layout(Arrangement::Blocked, 32, 8), 1, 32),
            Ok(1)
        );
        // f16, K = 2: word l, no conflict; K = 4: word 2l + k/2, 2 per bank.
        assert_eq!(
            bank_conflicts(&layout(Arrangement::Blocked, 32, 2), 2, 32),
            Ok(0)
        );
        assert_eq!(
            bank_conflicts(&layout(Arrangement::Blocked, 32, 4), 2, 32),
            Ok(1)
        );
    }

    /// `(lane -> element layout, element bytes, wavefronts, conflicts)` measured with Nsight
    /// Compute on an H200 for one warp loading `a[pattern(lane)]` from shared memory.
    const MEASURED: &[(&str, u32, u32, u32)] = &[
        // lane l -> l
        ("(1,32):(0,1)", 8, 2, 0),
        ("(1,32):(0,1)", 4, 1, 0),
        // l -> 2l, 4l, 8l
        ("(1,32):(0,2)", 1, 1, 0),
        ("(1,32):(0,2)", 2, 1, 0),
        ("(1,32):(0,2)", 4, 2, 1),
        ("(1,32):(0,2)", 8, 4, 2),
        ("(1,32):(0,4)", 1, 1, 0),
        ("(1,32):(0,4)", 2, 2, 1),
        ("(1,32):(0,4)", 4, 4, 3),
        ("(1,32):(0,4)", 8, 8, 6),
        ("(1,32):(0,8)", 1, 2, 1),
        ("(1,32):(0,8)", 2, 4, 3),
        ("(1,32):(0,8)", 8, 16, 14),
        // broadcast, and pairs of lanes sharing an address
        ("(1,32):(0,0)", 1, 1, 0),
        ("(1,32):(0,0)", 2, 1, 0),
        ("(1,32):(0,0)", 8, 1, 0),
        ("(1,(2,16)):(0,(0,1))", 1, 1, 0),
        ("(1,(2,16)):(0,(0,1))", 2, 1, 0),
        ("(1,(2,16)):(0,(0,1))", 8, 1, 0),
        ("(1,(2,16)):(0,(0,2))", 8, 2, 1),
        ("(1,(2,16)):(0,(0,8))", 8, 8, 7),
        ("(1,(2,8,2)):(0,(0,2,64))", 8, 2, 1),
        ("(1,(2,2,8)):(0,(1,0,2))", 8, 1, 0),
        // l -> (l % 2) * 16 + l / 2: conflicts only within each half-warp phase
        ("(1,(2,16)):(0,(16,1))", 4, 1, 0),
        ("(1,(2,16)):(0,(16,1))", 8, 4, 2),
        // l -> (l % 16) * 2 + l / 16, l % 16, (l % 16) * 2, l ^ 16 (shifted by -32)
        ("(1,(16,2)):(0,(2,1))", 4, 1, 0),
        ("(1,(16,2)):(0,(2,1))", 8, 4, 2),
        ("(1,(16,2)):(0,(1,0))", 8, 2, 0),
        ("(1,(16,2)):(0,(2,0))", 8, 4, 2),
        ("(1,(16,2)):(0,(1,-16))", 8, 2, 0),
        // l -> (l % 8) + (l / 8) * 16, (l % 8) * 4 + l / 8, (l / 4) * 8 + l % 4
        ("(1,(8,4)):(0,(1,16))", 8, 4, 2),
        ("(1,(8,4)):(0,(4,1))", 8, 4, 2),
        ("(1,(4,8)):(0,(1,8))", 8, 4, 2),
    ];

    #[test]
    fn matches_hardware_counters() {
        for &(pattern, bytes, waves, conflicts) in MEASURED {
            let l: Layout = pattern.parse().expect("layout");
            let report =
                bank_conflicts_with(&l, bytes, 32, SmemTransform::Identity).expect("valid");
            assert_eq!(
                (report.wavefronts, report.worst),
                (waves, conflicts),
                "{pattern} with {bytes}-byte elements"
            );
        }
    }

    /// The report as the module's rules state it, computed plainly: every phase's words
    /// collected in a set.
    fn reference(
        l: &Layout,
        bytes: u32,
        lanes: u32,
        t: SmemTransform,
    ) -> Result<BankReport, LayoutError> {
        let (items, threads) = l.two_modes()?;
        let mut report = BankReport::default();
        for item in 0..items.size() {
            let thread_ids: Vec<i64> = (0..threads.size()).collect();
            for (warp, group) in thread_ids.chunks(lanes as usize).enumerate() {
                let slots = group
                    .iter()
                    .map(|&th| t.apply(items.call(item) + threads.call(th)))
                    .collect::<Result<Vec<_>, _>>()?;
                let pairs = |step: usize| {
                    (0..slots.len()).all(|i| slots.get(i ^ step).is_none_or(|&s| s == slots[i]))
                };
                let wide = bytes == 8 && !pairs(1) && !pairs(2);
                let (mut waves, mut extra) = (0, 0);
                for phase in slots.chunks(if wide { 16 } else { slots.len() }) {
                    let words: std::collections::BTreeSet<i64> = phase
                        .iter()
                        .flat_map(|&s| {
                            let first = (s * i64::from(bytes)).div_euclid(4);
                            if bytes == 8 {
                                vec![first, first + 1]
                            } else {
                                vec![first]
                            }
                        })
                        .collect();
                    let mut per_bank = [0u32; 32];
                    for w in &words {
                        per_bank[w.rem_euclid(32) as usize] += 1;
                    }
                    let w = per_bank.iter().copied().max().unwrap_or(0);
                    waves += w;
                    extra += w - (words.len() as u32).div_ceil(32);
                }
                report.wavefronts += waves;
                report.total += extra;
                if extra > report.worst {
                    report.worst = extra;
                    report.worst_item = item as u32;
                    report.worst_warp = warp as u32;
                }
            }
        }
        Ok(report)
    }

    fn transform() -> impl proptest::strategy::Strategy<Value = SmemTransform> {
        use proptest::prelude::*;
        prop_oneof![
            Just(SmemTransform::Identity),
            (1u32..=64, 0u32..=4).prop_map(|(every, pad)| SmemTransform::Pad { every, pad }),
            (1u32..=5, 0u32..=4, 1i32..=6).prop_filter_map("valid swizzle", |(b, m, s)| {
                Swizzle::new(b, m, s).ok().map(SmemTransform::Swizzle)
            }),
        ]
    }

    proptest::proptest! {
        /// Accesses spread narrow and wide (strides up to thousands of elements, negative
        /// ones, broadcasts), every element size, group size and transform: the same report
        /// as the plain count.
        #[test]
        fn counts_as_the_plain_reference(
            items in 1i64..=6,
            a in 1i64..=16,
            b in 1i64..=8,
            s0 in -3000i64..=3000,
            s1 in -3000i64..=3000,
            s2 in -40i64..=40,
            bytes in proptest::sample::select(vec![1u32, 2, 4, 8]),
            lanes in 1u32..=32,
            t in transform(),
        ) {
            let l: Layout = format!("({items},({a},{b})):({s0},({s2},{s1}))")
                .parse()
                .expect("layout");
            proptest::prop_assert_eq!(
                bank_conflicts_with(&l, bytes, lanes, t),
                reference(&l, bytes, lanes, t)
            );
        }
    }

    #[test]
    fn broadcast_is_free() {
        let l: Layout = "(4,32):(1,0)".parse().expect("layout");
        assert_eq!(bank_conflicts(&l, 4, 32), Ok(0));
        assert_eq!(bank_conflicts(&l, 8, 32), Ok(0));
    }

    #[test]
    fn padding_and_swizzle_fix_blocked() {
        let l = layout(Arrangement::Blocked, 64, 32);
        let pad = SmemTransform::Pad { every: 32, pad: 1 };
        assert_eq!(bank_conflicts_with(&l, 4, 32, pad).map(|r| r.worst), Ok(0));
        // Swizzle the 5 bits of the item index with the low 5 bits of the thread index.
        let sw = SmemTransform::Swizzle(Swizzle::new(5, 0, 5).expect("valid"));
        assert_eq!(bank_conflicts_with(&l, 4, 32, sw).map(|r| r.worst), Ok(0));
        let plain = bank_conflicts_with(&l, 4, 32, SmemTransform::Identity).expect("valid");
        assert_eq!(plain.worst, 31);
        assert_eq!(plain.total, 31 * 32 * 2);
        assert_eq!(plain.wavefronts, 32 * 32 * 2);
        assert_eq!((plain.worst_item, plain.worst_warp), (0, 0));
    }

    #[test]
    fn warp_striped_and_smaller_groups() {
        let l = layout(Arrangement::WarpStriped, 128, 4);
        assert_eq!(bank_conflicts(&l, 4, 32), Ok(0));
        // Lanes in groups of 8: blocked f32 K = 4 puts 8 lanes on words 4l + k, banks
        // 0,4,..,28: no conflict within 8 lanes.
        assert_eq!(
            bank_conflicts(&layout(Arrangement::Blocked, 64, 4), 4, 8),
            Ok(0)
        );
    }

    #[test]
    fn bad_arguments_are_errors() {
        let l = layout(Arrangement::Striped, 32, 1);
        assert_eq!(
            bank_conflicts(&l, 3, 32),
            Err(LayoutError::UnsupportedElementSize { bytes: 3 })
        );
        assert_eq!(
            bank_conflicts(&l, 4, 33),
            Err(LayoutError::InvalidLanes { lanes: 33 })
        );
        let flat: Layout = "32:1".parse().expect("layout");
        assert_eq!(
            bank_conflicts(&flat, 4, 32),
            Err(LayoutError::WrongRank {
                expected: 2,
                found: 1
            })
        );
        assert_eq!(
            bank_conflicts_with(&l, 4, 32, SmemTransform::Pad { every: 0, pad: 1 }),
            Err(LayoutError::ZeroExtent)
        );
        let huge: Layout = "(65536,65536):(1,65536)".parse().expect("layout");
        assert_eq!(
            bank_conflicts(&huge, 4, 32),
            Err(LayoutError::TooLarge {
                points: 1 << 32,
                limit: MAX_ANALYSIS_POINTS
            })
        );
    }
}

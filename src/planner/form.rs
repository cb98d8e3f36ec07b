//! Position forms: where each `(item, rank)` of an arrangement lies in a group's tile, derived
//! from the arrangement's layout, and the padding of shared-memory regions. Exchanges,
//! collectives and the steps that describe their accesses all read positions through these.

use std::cell::RefCell;

use rustc_hash::FxHashMap;

use crate::ir::Arrangement;
use crate::layout::{
    Arrangement as LArr, Layout, SmemTransform, arrangement_layout, arrangement_layout_with_warp,
    bank_conflicts_with, decompose, right_inverse,
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

    /// The form of `a` as [`PositionForm::of`] gives it, where a group of one thread keeps
    /// its rank's term (of extent 1, with the stride of the layout's rank mode), so that the
    /// test of an item's position against a valid count reads the rank in every group.
    pub fn counted(a: Arrangement, scope: u32, items: u32) -> Option<PositionForm> {
        let mut form = Self::of(a, scope, items)?;
        if form.thread_terms.is_empty() {
            let (_, rank) = layout_of(a, scope, items)?.two_modes().ok()?;
            let (extent, stride) = rank.leaf_modes().next()?;
            let (extent, stride) = (u32::try_from(extent).ok()?, u32::try_from(stride).ok()?);
            form.thread_terms.push((extent, 1, stride));
        }
        Some(form)
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

    /// The width of the one vector access each thread can make of its items, unpadded: its
    /// items lie in consecutive slots (`item_stride` 1), start at a multiple of the run
    /// (every rank's term a multiple of `items`, so a region aligned to 16 bytes keeps the
    /// vector aligned), and make one 8- or 16-byte run of 4- or 8-byte elements. Such a
    /// side (a blocked arrangement of 2 or 4 words per thread, or 2 doublewords) takes the
    /// least wavefronts a warp's run of that many bytes can take: each quarter (16 bytes
    /// each) or half (8 bytes each) warp reads 128 contiguous bytes. `None` otherwise.
    pub fn vector_width(&self, items: u32, bytes: u32) -> Option<u32> {
        let run = items.checked_mul(bytes)?;
        let fits = matches!(bytes, 4 | 8) && items >= 2 && matches!(run, 8 | 16);
        (fits && self.one_aligned_run(items)).then_some(items)
    }

    /// Whether each thread's `items` items lie in consecutive slots starting at a multiple
    /// of `items` (every rank's term a multiple of it).
    fn one_aligned_run(&self, items: u32) -> bool {
        self.item_stride == 1 && self.thread_terms.iter().all(|&(_, _, s)| s % items == 0)
    }

    /// [`vector_width`](Self::vector_width), or for 1- and 2-byte elements the width of one
    /// 4-, 8- or 16-byte run a thread moved as 32-bit words, each element unpacked from or
    /// packed into its word in registers. A packed read takes whole words, so it suits only
    /// tiles whose every slot was written with a defined value (a library sort's scatter):
    /// the simulator tracks definedness by register, and a word with one undefined element
    /// would make its neighbours read undefined.
    pub fn packed_width(&self, items: u32, bytes: u32) -> Option<u32> {
        let run = items.checked_mul(bytes)?;
        let narrow = matches!(bytes, 1 | 2) && matches!(run, 4 | 8 | 16);
        if narrow && self.one_aligned_run(items) {
            return Some(items);
        }
        self.vector_width(items, bytes)
    }

    /// How far each item's padded slot lies from item 0's (`padding`: one pad slot after
    /// every that many, as [`padded_slot`] places them), where those distances are the same
    /// for every rank of a group of `scope` threads with `items` items each; `None` where
    /// they differ. Where they agree, a thread addresses all its items from one address
    /// with immediate offsets: a blocked tile whose items fit between two pads, a striped
    /// one whose rows are whole pad periods.
    pub fn uniform_slot_offsets(
        &self,
        scope: u32,
        items: u32,
        padding: Option<u32>,
    ) -> Option<Vec<i64>> {
        let slot = |p: u32| i64::from(padded_slot(p, padding));
        let offsets_of = |r: u32| {
            let first = slot(self.position(0, r));
            (0..items).map(move |i| slot(self.position(i, r)) - first)
        };
        let offsets: Vec<i64> = offsets_of(0).collect();
        (1..scope)
            .all(|r| offsets_of(r).eq(offsets.iter().copied()))
            .then_some(offsets)
    }
}

/// Which rank of a group holds each position of its tile under an arrangement, and in which
/// slot: the right inverse of the arrangement's layout (position -> the holder's index
/// `slot + items * rank` in the layout's domain), read as a mixed-radix number whose digits
/// each count the rank or the slot. A position `p` is decoded top digit first: a digit is
/// `rest / divisor` and `rest % divisor` goes on (`rest` starts at `p`; the last digit, of
/// divisor 1, is what is left).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct InverseForm {
    /// The digits, most significant first; divisors descend to 1.
    pub digits: Vec<Digit>,
}

/// One digit of a position under an [`InverseForm`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Digit {
    /// Positions per unit of the digit.
    pub divisor: u32,
    /// Whether the digit counts the holder's rank (else its slot).
    pub rank: bool,
    /// Added to the rank (or slot) per unit of the digit.
    pub stride: u32,
}

impl InverseForm {
    /// Where the positions of arrangement `a` over a group of `scope` threads with `items`
    /// items each are held. The layout is taken with one mode per level of the arrangement
    /// (striped: lanes of each striped group, then the groups, even a single one), and every
    /// mode of it is a digit of the decode: its divisor is where the right inverse reaches the
    /// mode's first index. A mode of extent 1 on top (one striped group) keeps its digit,
    /// always 0, so that a striped arrangement decodes the same way over one group or
    /// several. `None` where the layout is not a bijection onto the tile.
    pub fn of(a: Arrangement, scope: u32, items: u32) -> Option<InverseForm> {
        let layout = match a {
            Arrangement::Blocked => arrangement_layout(LArr::Blocked, scope, items),
            Arrangement::Striped { threads } => {
                arrangement_layout_with_warp(LArr::WarpStriped, scope, items, threads)
            }
        }
        .ok()?;
        let tile = layout.size();
        let inverse = right_inverse(&layout);
        if inverse.size() != tile {
            return None;
        }
        // Where the inverse reaches domain index `index`: the position `p` with
        // `inverse(p) == index`, from the inverse's modes (positions `divisor * c` of mode
        // `(extent, stride)` reach indices `stride * c`); the tile for the end of the domain.
        let mut at = Vec::new();
        let mut divisor = 1i64;
        for (extent, stride) in inverse.leaf_modes() {
            at.push((divisor, extent, stride));
            divisor *= extent;
        }
        let position_of = |index: i64| -> Option<i64> {
            if index == tile {
                return Some(tile);
            }
            at.iter().find_map(|&(divisor, extent, stride)| {
                (stride > 0 && index % stride == 0 && index / stride < extent)
                    .then(|| divisor * (index / stride))
            })
        };
        let (item_mode, rank_mode) = layout.two_modes().ok()?;
        let mut digits = Vec::new();
        let mut index = 1i64;
        for (mode, rank) in [(item_mode, false), (rank_mode, true)] {
            let mut stride = 1i64;
            for (extent, _) in mode.leaf_modes() {
                if extent > 1 || index == tile {
                    digits.push((
                        u32::try_from(position_of(index)?).ok()?,
                        extent,
                        Digit {
                            divisor: 0,
                            rank,
                            stride: u32::try_from(stride).ok()?,
                        },
                    ));
                }
                index *= extent;
                stride *= extent;
            }
        }
        // The digits of a decode: divisors from 1 up, each the product of the extents below.
        digits.sort_by_key(|&(divisor, ..)| divisor);
        let mut expected = 1i64;
        for &(divisor, extent, _) in &digits {
            if i64::from(divisor) != expected {
                return None;
            }
            expected *= extent;
        }
        Some(InverseForm {
            digits: (digits.into_iter().rev())
                .map(|(divisor, _, d)| Digit { divisor, ..d })
                .collect(),
        })
    }

    /// The rank and slot holding position `p` (as code generation decodes it).
    #[cfg(test)]
    pub fn holder(&self, p: u32) -> (u32, u32) {
        let (mut rest, mut rank, mut slot) = (p, 0, 0);
        for d in &self.digits {
            let v = rest / d.divisor.max(1);
            rest %= d.divisor.max(1);
            if d.rank {
                rank += v * d.stride;
            } else {
                slot += v * d.stride;
            }
        }
        (rank, slot)
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
    padding_pays_over(accesses, accesses, bytes, lanes, padding)
}

/// As [`padding_pays`], where the accesses made element by element differ with the padding:
/// `plain` unpadded, `padded` padded (an access made as one vector per thread unpadded,
/// without conflicts, is made element by element padded).
///
/// The answer depends on its arguments alone, and counting a large tile's conflicts costs
/// millions of instructions, so each thread keeps the answers it found (a device sort asks the
/// same question for each of its digit passes, an autotuning loop for each variant it builds).
pub(super) fn padding_pays_over(
    plain: &[Layout],
    padded: &[Layout],
    bytes: u32,
    lanes: u32,
    padding: SmemTransform,
) -> bool {
    thread_local! {
        static ANSWERS: RefCell<FxHashMap<PaddingQuestion, bool>> = RefCell::default();
    }
    let question = PaddingQuestion {
        plain: plain.to_vec(),
        padded: padded.to_vec(),
        bytes,
        lanes,
        padding,
    };
    if let Some(known) = ANSWERS.with_borrow(|a| a.get(&question).copied()) {
        return known;
    }
    let pays = count_padding_pays(plain, padded, bytes, lanes, padding);
    ANSWERS.with_borrow_mut(|a| {
        if a.len() >= PADDING_ANSWERS {
            a.clear();
        }
        a.insert(question, pays);
    });
    pays
}

/// The most answers [`padding_pays_over`] keeps a thread (then it starts again).
const PADDING_ANSWERS: usize = 512;

/// The arguments of [`padding_pays_over`].
#[derive(PartialEq, Eq, Hash)]
struct PaddingQuestion {
    plain: Vec<Layout>,
    padded: Vec<Layout>,
    bytes: u32,
    lanes: u32,
    padding: SmemTransform,
}

/// [`padding_pays_over`], counted.
fn count_padding_pays(
    plain: &[Layout],
    padded: &[Layout],
    bytes: u32,
    lanes: u32,
    padding: SmemTransform,
) -> bool {
    let cost = |accesses: &[Layout], t: SmemTransform| -> Option<u32> {
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
        (cost(plain, SmemTransform::Identity), cost(padded, padding)),
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

    /// Padding decisions asked again, interleaved, answer as counting them afresh: each
    /// question's layouts, element size, lanes and padding tell it apart.
    #[test]
    fn kept_padding_answers_are_the_counted_ones() {
        let layout = |a, threads, items| arrangement_layout(a, threads, items).expect("layout");
        let (blocked, striped) = (layout(LArr::Blocked, 64, 4), layout(LArr::Striped, 64, 4));
        // Each next to one that differs in one argument and in its answer (the first and the
        // fifth pay, the others do not).
        let cases = [
            (vec![blocked.clone()], 4, 16, 4),
            (vec![blocked.clone()], 4, 8, 4),
            (vec![blocked.clone()], 4, 16, 8),
            (vec![striped], 4, 16, 4),
            (vec![blocked.clone()], 8, 8, 4),
            (vec![blocked], 4, 8, 4),
        ];
        let mut answers = Vec::new();
        for _ in 0..2 {
            for (layouts, bytes, lanes, every) in &cases {
                let pad = SmemTransform::Pad {
                    every: *every,
                    pad: 1,
                };
                let kept = padding_pays_over(layouts, layouts, *bytes, *lanes, pad);
                let counted = count_padding_pays(layouts, layouts, *bytes, *lanes, pad);
                assert_eq!(kept, counted, "{bytes} bytes, {lanes} lanes, every {every}");
                answers.push(kept);
            }
        }
        // A key that left an argument out would answer one case with its neighbour's.
        assert_eq!(answers[..6], [true, false, false, false, true, false]);
    }

    #[test]
    fn slot_offsets_are_uniform_where_pads_fall_alike_for_every_rank() {
        let blocked = |items| PositionForm::of(Arrangement::Blocked, 64, items).expect("form");
        // Four items fit between two pads (every 32 slots) at every rank.
        assert_eq!(
            blocked(4).uniform_slot_offsets(64, 4, Some(32)),
            Some(vec![0, 1, 2, 3])
        );
        // Three items straddle a pad at rank 10 (positions 30, 31, 32) but not at rank 0.
        assert_eq!(blocked(3).uniform_slot_offsets(64, 3, Some(32)), None);
        assert_eq!(
            blocked(3).uniform_slot_offsets(64, 3, None),
            Some(vec![0, 1, 2])
        );
        // A striped tile's rows of 64 are two whole pad periods: 66 slots apart.
        let striped = PositionForm::of(Arrangement::Striped { threads: 64 }, 64, 4).expect("form");
        assert_eq!(
            striped.uniform_slot_offsets(64, 4, Some(32)),
            Some(vec![0, 66, 132, 198])
        );
        // Rows of 48 are not whole periods.
        let rows = PositionForm::of(Arrangement::Striped { threads: 48 }, 48, 2).expect("form");
        assert_eq!(rows.uniform_slot_offsets(48, 2, Some(32)), None);
    }

    #[test]
    fn blocked_runs_of_8_or_16_bytes_are_one_vector() {
        let blocked = |scope, items| PositionForm::of(Arrangement::Blocked, scope, items);
        let width = |scope, items, bytes| blocked(scope, items)?.vector_width(items, bytes);
        assert_eq!(width(32, 4, 4), Some(4));
        assert_eq!(width(256, 2, 4), Some(2));
        assert_eq!(width(64, 2, 8), Some(2));
        // 32 bytes a thread: two vectors whose quarter warps conflict two ways; 4 bytes: no
        // vector; narrow elements are packed, not moved as vectors here.
        assert_eq!(width(32, 8, 4), None);
        assert_eq!(width(32, 4, 8), None);
        assert_eq!(width(32, 1, 4), None);
        assert_eq!(width(32, 4, 2), None);
        assert_eq!(width(32, 3, 4), None);
        let striped = PositionForm::of(Arrangement::Striped { threads: 32 }, 32, 4).expect("form");
        assert_eq!(striped.vector_width(4, 4), None);
        // A thread's run must start at a multiple of its length: not so when the ranks' term
        // strides by less.
        let odd = PositionForm {
            item_stride: 1,
            thread_terms: vec![(32, 1, 6)],
        };
        assert_eq!(odd.vector_width(4, 4), None);
    }

    #[test]
    fn packed_runs_of_narrow_elements_are_one_word_or_vector() {
        let blocked = |scope, items| PositionForm::of(Arrangement::Blocked, scope, items);
        let width = |scope, items, bytes| blocked(scope, items)?.packed_width(items, bytes);
        assert_eq!(width(256, 16, 1), Some(16));
        assert_eq!(width(96, 8, 1), Some(8));
        assert_eq!(width(48, 4, 1), Some(4));
        assert_eq!(width(32, 4, 2), Some(4));
        assert_eq!(width(32, 2, 2), Some(2));
        assert_eq!(width(32, 8, 2), Some(8));
        // 2 or 32 bytes, or a run of no power of two: item by item.
        assert_eq!(width(32, 2, 1), None);
        assert_eq!(width(32, 32, 1), None);
        assert_eq!(width(32, 6, 1), None);
        assert_eq!(width(32, 16, 2), None);
        // Wide elements as `vector_width` has them.
        assert_eq!(width(32, 4, 4), Some(4));
        assert_eq!(width(32, 8, 4), None);
        let striped = PositionForm::of(Arrangement::Striped { threads: 32 }, 32, 16).expect("form");
        assert_eq!(striped.packed_width(16, 1), None);
    }

    #[test]
    fn counted_forms_keep_the_rank_of_a_lone_thread() {
        let lone = PositionForm::counted(Arrangement::Blocked, 1, 4).expect("form");
        assert_eq!((lone.item_stride, lone.thread_terms), (1, vec![(1, 1, 4)]));
        let group = PositionForm::counted(Arrangement::Blocked, 8, 4).expect("form");
        assert_eq!(Some(group), PositionForm::of(Arrangement::Blocked, 8, 4));
    }

    #[test]
    fn inverse_forms_find_each_positions_holder() {
        let cases = [
            (Arrangement::Blocked, 32, 4),
            (Arrangement::Blocked, 8, 3),
            (Arrangement::Striped { threads: 32 }, 32, 4),
            (Arrangement::Striped { threads: 8 }, 32, 3),
            (Arrangement::Striped { threads: 4 }, 16, 2),
        ];
        for (a, scope, items) in cases {
            let form = PositionForm::of(a, scope, items).expect("form");
            let inverse = InverseForm::of(a, scope, items).expect("inverse");
            for r in 0..scope {
                for i in 0..items {
                    assert_eq!(inverse.holder(form.position(i, r)), (r, i), "{a:?}");
                }
            }
        }
        // Blocked: rank p / K, slot p % K.
        let blocked = InverseForm::of(Arrangement::Blocked, 32, 4).expect("inverse");
        let digit = |divisor, rank, stride| Digit {
            divisor,
            rank,
            stride,
        };
        assert_eq!(blocked.digits, [digit(4, true, 1), digit(1, false, 1)]);
        // Striped over one group of 32: its group's digit (0) stays on top.
        let striped =
            InverseForm::of(Arrangement::Striped { threads: 32 }, 32, 4).expect("inverse");
        assert_eq!(
            striped.digits,
            [digit(128, true, 32), digit(32, false, 1), digit(1, true, 1)]
        );
    }

    #[test]
    fn several_striped_groups_are_warps_of_their_width() {
        let l = layout_of(Arrangement::Striped { threads: 8 }, 32, 3).expect("layout");
        assert_eq!(l.to_string(), "(3,(8,4)):(8,(1,24))");
    }
}

//! The core operations on single layouts: coalesce, filter, composition of two layouts,
//! complement and the inverses.
//!
//! Each works on the flat `(extent, stride)` modes and rebuilds structure only where the
//! result keeps one (composition keeps the right-hand side's). All arithmetic is checked;
//! preconditions that fail come back as [`LayoutError`] variants.

use smallvec::SmallVec;

use super::error::{LayoutError, Op};
use super::int_tuple::IntTuple;
use super::layout::{Layout, Modes};
use super::tiler::{Rest, by_mode};

/// Merge adjacent flat modes where `extent * stride` of one equals the stride of the next,
/// and drop extent-1 modes. Keeps the function on the domain; the result is empty for a
/// layout of size 1.
fn coalesce_modes(modes: impl Iterator<Item = (i64, i64)>) -> Modes {
    let mut out = Modes::new();
    for (s, d) in modes {
        if s == 1 {
            continue;
        }
        push_merging(&mut out, s, d);
    }
    out
}

fn push_merging(out: &mut Modes, s: i64, d: i64) {
    if let Some(last) = out.last_mut()
        && last.0.checked_mul(last.1) == Some(d)
    {
        // Both extents are factors of a valid layout's size, so this cannot overflow.
        last.0 = last.0.saturating_mul(s);
        return;
    }
    out.push((s, d));
}

/// Like [`coalesce_modes`], but keeps the function outside the domain too (CuTe
/// `coalesce_x`): the last mode, which extends past the end, keeps its stride even at
/// extent 1. Never empty.
fn coalesce_extending(modes: &[(i64, i64)]) -> Modes {
    let mut out = Modes::new();
    for (k, &(s, d)) in modes.iter().enumerate() {
        if s == 1 && k + 1 < modes.len() {
            continue;
        }
        push_merging(&mut out, s, d);
    }
    if out.is_empty() {
        out.push((1, 0));
    }
    out
}

/// The layout of coalesced modes of a valid layout; valid itself, since its offsets are
/// offsets of that layout.
fn from_coalesced(modes: &[(i64, i64)]) -> Layout {
    match modes {
        [] => Layout::trivial(),
        [(s, d)] => Layout::from_valid_parts(IntTuple::int(*s), IntTuple::int(*d)),
        _ => Layout::from_valid_parts(
            IntTuple::flat(modes.iter().map(|m| m.0)),
            IntTuple::flat(modes.iter().map(|m| m.1)),
        ),
    }
}

/// The simplest layout with the same size and the same offsets on the domain, of depth at
/// most 1 (CuTe `coalesce`): extent-1 modes vanish and adjacent modes with
/// `extent * stride == next stride` merge. A layout of size 1 gives `1:0`.
///
/// ```
/// use coopgraph::layout::{coalesce, Layout};
/// let l: Layout = "(2,(1,6)):(1,(6,2))".parse().unwrap();
/// assert_eq!(coalesce(&l).to_string(), "12:1");
/// ```
pub fn coalesce(layout: &Layout) -> Layout {
    from_coalesced(&coalesce_modes(layout.flat_modes().into_iter()))
}

/// [`coalesce`] applied at the terminals of `profile` (CuTe `coalesce(layout, profile)`): an
/// integer profile coalesces the whole (sub-)layout, a tuple profile recurses mode by mode
/// and keeps the modes past its length unchanged.
///
/// ```
/// use coopgraph::layout::{coalesce_by_mode, Layout};
/// let l: Layout = "((2,4),(3,5)):((1,2),(8,24))".parse().unwrap();
/// let c = coalesce_by_mode(&l, &"(1,1)".parse().unwrap()).unwrap();
/// assert_eq!(c.to_string(), "(8,15):(1,8)");
/// ```
pub fn coalesce_by_mode(layout: &Layout, profile: &IntTuple) -> Result<Layout, LayoutError> {
    by_mode(layout, profile, Rest::Keep, &mut |mode, _| {
        Ok(coalesce(mode))
    })
}

/// The layout without its stride-0 and extent-1 modes, coalesced (CuTe `filter`); `1:0` if
/// nothing is left.
pub fn filter(layout: &Layout) -> Layout {
    from_coalesced(&coalesce_modes(
        layout
            .flat_modes()
            .into_iter()
            .filter(|&(s, d)| s != 1 && d != 0),
    ))
}

/// `a ∘ b` for two layouts: the result has `b`'s structure (each integer mode of `b` may
/// split into a tuple) and `result(i) == a(b(i))` for every `i < size(b)`, where `a` extends
/// past its end through its last mode.
///
/// Each integer mode of `b` is composed on its own (right-distributivity, as in CuTe), which
/// is only right if the modes of `b` add up inside `a` without carrying from one mode of `a`
/// into the next. CuTe assumes it; here it is checked: the largest digit each mode of `b`
/// puts in each (non-last) mode of `a` is summed, and must stay below that mode's extent.
pub(crate) fn compose(a: &Layout, b: &Layout) -> Result<Layout, LayoutError> {
    let flat_a = coalesce_extending(&a.flat_modes());
    // Every mode of `a` but the last is a bounded digit; the last one never carries.
    let bounded = flat_a.len() - 1;
    let mut reach: SmallVec<[i64; 8]> = SmallVec::from_elem(0, bounded);
    let (mut positive, mut negative) = (None, None);
    let result = b.map_leaf_modes(&mut |n, t| {
        let leaf = compose_leaf(&flat_a, n, t)?;
        for (digit, used) in leaf.uses {
            reach[digit] = reach[digit]
                .checked_add(used)
                .ok_or(LayoutError::overflow(Op::Composition))?;
        }
        if n > 1 && t > 0 {
            positive.get_or_insert(t);
        } else if n > 1 && t < 0 {
            negative.get_or_insert(t);
        }
        Ok((leaf.shape, leaf.stride))
    })?;
    for (&(extent, _), &used) in flat_a.iter().zip(&reach) {
        if used >= extent {
            return Err(LayoutError::ModesCarry {
                extent,
                reach: used,
            });
        }
    }
    // Truncating division splits a sum of mixed signs into different digits than its terms
    // (8 - 1 = 7 is (1,3) in radix (2, _), not (0,4) + (-1,0)); fine only if no bounded
    // digit is used at all.
    if let (Some(p), Some(q)) = (positive, negative)
        && reach.iter().any(|&used| used > 0)
    {
        return Err(LayoutError::MixedStrideSigns {
            positive: p,
            negative: q,
        });
    }
    Ok(result)
}

/// One integer mode of `b` composed with flat `a`.
struct LeafComposition {
    shape: IntTuple,
    stride: IntTuple,
    /// `(digit, largest value)` for each bounded mode of `a` this mode of `b` uses.
    uses: SmallVec<[(usize, i64); 4]>,
}

impl LeafComposition {
    fn int(shape: i64, stride: i64) -> LeafComposition {
        LeafComposition {
            shape: IntTuple::int(shape),
            stride: IntTuple::int(stride),
            uses: SmallVec::new(),
        }
    }
}

/// Composition of coalesced `a` with the single mode `n:t` (CuTe `composition_impl`), with
/// the divisibility conditions checked exactly rather than only where they are static.
fn compose_leaf(a: &[(i64, i64)], n: i64, t: i64) -> Result<LeafComposition, LayoutError> {
    let overflow = || LayoutError::overflow(Op::Composition);
    if n == 1 {
        return Ok(LeafComposition::int(1, 0));
    }
    if t == 0 {
        return Ok(LeafComposition::int(n, 0));
    }
    let Some((&(_, last_stride), inner)) = a.split_last() else {
        return Ok(LeafComposition::int(n, 0));
    };
    let mut out: SmallVec<[(i64, i64); 4]> = SmallVec::new();
    let mut uses = SmallVec::new();
    let mut rest = n;
    let mut r = t;
    for (digit, &(s, d)) in inner.iter().enumerate() {
        let ar = r.checked_abs().ok_or_else(overflow)?;
        if ar % s == 0 {
            // Every remaining element lies at coordinate 0 of this mode.
            r /= s;
            continue;
        }
        let stride = r.checked_mul(d).ok_or_else(overflow)?;
        // `count` elements `ar` apart in this mode, then (maybe) on to the next one.
        let count = if s % ar == 0 {
            let fit = s / ar;
            if rest > fit && rest % fit != 0 {
                return Err(LayoutError::ShapeNotDivisible {
                    extent: rest,
                    divisor: fit,
                });
            }
            fit.min(rest)
        } else if ar < s && (rest - 1).checked_mul(ar).is_some_and(|reach| reach < s) {
            // Neither divides the other: fine only if all remaining elements stay here.
            rest
        } else {
            return Err(LayoutError::StrideNotDivisible {
                stride: r,
                extent: s,
            });
        };
        out.push((count, stride));
        // (count - 1) * ar < s: no overflow.
        uses.push((digit, (count - 1) * ar));
        rest /= count;
        r = r.signum();
        if rest == 1 {
            break;
        }
    }
    if rest > 1 {
        out.push((rest, r.checked_mul(last_stride).ok_or_else(overflow)?));
    }
    let (shape, stride) = match out.as_slice() {
        [] => (IntTuple::int(1), IntTuple::int(0)),
        [(s, d)] => (IntTuple::int(*s), IntTuple::int(*d)),
        _ => (
            IntTuple::flat(out.iter().map(|m| m.0)),
            IntTuple::flat(out.iter().map(|m| m.1)),
        ),
    };
    Ok(LeafComposition {
        shape,
        stride,
        uses,
    })
}

/// The complement of `layout` up to `cosize_bound` (CuTe `complement(layout, bound)`): an
/// ordered layout `R` whose offsets avoid those of `layout` (except 0), with
/// `cosize((layout, R)) >= cosize_bound`.
///
/// Strides must be non-negative and, sorted, each mode must start at or past the span of
/// the smaller ones ([`LayoutError::Overlapping`] otherwise). As in CuTe, a gap that is not a
/// multiple of that span is rounded down, leaving some offsets uncovered; the last mode is
/// then made long enough that `cosize((layout, R)) >= cosize_bound` still holds (CuTe's
/// `ceil(bound / span)` can fall short there). Where the strides divide, the result is
/// CuTe's and `(layout, R)` is a bijection onto `0..size(layout) * size(R)`.
///
/// ```
/// use coopgraph::layout::{complement, Layout};
/// let l: Layout = "(2,2):(1,6)".parse().unwrap();
/// assert_eq!(complement(&l, 24).unwrap().to_string(), "(3,2):(2,12)");
/// ```
pub fn complement(layout: &Layout, cosize_bound: i64) -> Result<Layout, LayoutError> {
    if cosize_bound < 1 {
        return Err(LayoutError::InvalidCosizeBound {
            bound: cosize_bound,
        });
    }
    let mut modes: Modes = layout
        .flat_modes()
        .into_iter()
        .filter(|&(s, d)| s != 1 && d != 0)
        .collect();
    if let Some(&(_, stride)) = modes.iter().find(|m| m.1 < 0) {
        return Err(LayoutError::NegativeStride { stride });
    }
    modes.sort_unstable_by_key(|&(s, d)| (d, s));
    let overflow = || LayoutError::overflow(Op::Complement);
    let mut out = Modes::new();
    let mut span = 1i64;
    // One past the largest offset of `(layout, gap modes)`: `span` when the gaps fill exactly.
    let mut reach = 1i64;
    for (s, d) in modes {
        if d < span {
            return Err(LayoutError::Overlapping { stride: d, span });
        }
        let gap = d / span;
        out.push((gap, span));
        // Both terms are offsets of valid layouts (this one, and the gaps below `d`).
        reach = reach
            .checked_add((gap - 1) * span)
            .and_then(|r| r.checked_add((s - 1) * d))
            .ok_or_else(overflow)?;
        span = s.checked_mul(d).ok_or_else(overflow)?;
    }
    // CuTe uses ceil(bound / span); where a gap was rounded down that can fall short of the
    // bound, so take enough repetitions for reach + (rest - 1) * span >= bound.
    let needed = 1 + (cosize_bound - reach).max(0).div_ceil_positive(span);
    let rest = cosize_bound.div_ceil_positive(span).max(needed);
    out.push((rest, span));
    Layout::from_flat(&coalesce_modes(out.into_iter()))
}

/// A right inverse `R` of `layout` (CuTe `right_inverse`): `layout(R(i)) == i` for every
/// `i < size(R)`, with `R` as large as the contiguous run of offsets `0, 1, 2, ...` that
/// `layout` reaches allows. Always defined; `1:0` when `layout` does not reach offset 1.
///
/// ```
/// use coopgraph::layout::{right_inverse, Layout};
/// let l: Layout = "(8,4):(4,1)".parse().unwrap();
/// assert_eq!(right_inverse(&l).to_string(), "(4,8):(8,1)");
/// ```
pub fn right_inverse(layout: &Layout) -> Layout {
    let modes = coalesce_modes(layout.flat_modes().into_iter());
    let prefix = prefix_products(&modes);
    let mut order: SmallVec<[usize; 8]> = (0..modes.len()).collect();
    order.sort_by_key(|&k| modes[k].1);
    let mut out = Modes::new();
    let mut next = 1i64;
    for k in order {
        let (s, d) = modes[k];
        if d == next {
            out.push((s, prefix[k]));
            match s.checked_mul(d) {
                Some(v) => next = v,
                None => break,
            }
        }
    }
    from_coalesced(&coalesce_modes(out.into_iter()))
}

/// A left inverse `R` of an injective `layout`: `R(layout(i)) == i` for every
/// `i < size(layout)`.
///
/// Needs the non-zero strides, sorted, to form a divisibility chain without overlap (each a
/// multiple of the previous one and at least its span); all-negative strides are handled by
/// symmetry. Fails with [`LayoutError::InverseNotDivisible`], [`LayoutError::Overlapping`] or
/// [`LayoutError::NegativeStride`] (mixed signs) otherwise.
///
/// ```
/// use coopgraph::layout::{try_left_inverse, Layout};
/// let l: Layout = "(4,2):(1,16)".parse().unwrap();
/// let r = try_left_inverse(&l).unwrap();
/// assert!((0..8).all(|i| r.call(l.call(i)) == i));
/// ```
pub fn try_left_inverse(layout: &Layout) -> Result<Layout, LayoutError> {
    left_inverse_impl(layout, true)
}

/// CuTe's `left_inverse`, made total: equal to [`try_left_inverse`] whenever that succeeds.
/// Otherwise it is CuTe's quasi-inverse, built from the modes up to the first stride that is
/// not a multiple of the previous one (or of the other sign); when the non-zero strides form
/// a chain without overlap, `layout(R(layout(i))) == layout(i)` for every `i` even with
/// stride-0 modes present. For overlapping layouts it is CuTe's best effort, with no
/// guarantee. `1:0` when no mode qualifies.
pub fn left_inverse(layout: &Layout) -> Layout {
    left_inverse_impl(layout, false).unwrap_or_else(|_| Layout::trivial())
}

fn left_inverse_impl(layout: &Layout, strict: bool) -> Result<Layout, LayoutError> {
    let modes = coalesce_modes(layout.flat_modes().into_iter());
    let nonzero = modes.iter().filter(|m| m.1 != 0);
    let negatives = nonzero.clone().filter(|m| m.1 < 0).count();
    if negatives > 0 && negatives == nonzero.clone().count() {
        // L(i) = -L'(i) with L' = L with negated strides; R = R' with negated strides.
        let flipped = Layout::from_flat(&negate_strides(&modes)?)?;
        let inverse = left_inverse_impl(&flipped, strict)?;
        let flat = inverse.flat_modes();
        return Layout::from_flat(&negate_strides(&flat)?);
    }
    if strict && modes.iter().any(|m| m.1 == 0) {
        // An extent > 1 at stride 0 (coalesce dropped extent-1 modes): not injective.
        return Err(LayoutError::Overlapping { stride: 0, span: 1 });
    }
    let prefix = prefix_products(&modes);
    let mut order: SmallVec<[usize; 8]> = (0..modes.len()).filter(|&k| modes[k].1 != 0).collect();
    order.sort_by_key(|&k| modes[k].1);
    let mut shapes = Modes::new(); // (extent, stride) of the result, before the last mode
    shapes.push((1, 0));
    let mut covered = 1i64; // product of the result extents so far: the previous stride
    let mut last_extent = None;
    for k in order {
        let (s, d) = modes[k];
        let overlap = last_extent
            .map(|(ps, pd): (i64, i64)| ps.saturating_mul(pd))
            .filter(|&span| strict && d < span);
        let check = if d < 0 {
            Err(LayoutError::NegativeStride { stride: d })
        } else if d % covered != 0 {
            Err(LayoutError::InverseNotDivisible {
                stride: d,
                previous: covered,
            })
        } else if let Some(span) = overlap {
            Err(LayoutError::Overlapping { stride: d, span })
        } else {
            Ok(())
        };
        if let Err(e) = check {
            if strict {
                return Err(e);
            }
            break;
        }
        shapes.push((d / covered, prefix[k]));
        covered = d;
        last_extent = Some((s, d));
    }
    let Some((s, _)) = last_extent else {
        return Ok(Layout::trivial());
    };
    // Shift: the extents are one behind the strides, and the last mode gets its own extent.
    let extents = shapes.iter().skip(1).map(|m| m.0).chain([s]);
    let strides = shapes.iter().map(|m| m.1);
    let result: Modes = extents.zip(strides).collect();
    Layout::from_flat(&coalesce_modes(result.into_iter()))
}

/// Ceiling division for a non-negative numerator and a positive divisor (MSRV-friendly).
trait DivCeilPositive {
    fn div_ceil_positive(self, d: i64) -> i64;
}

impl DivCeilPositive for i64 {
    fn div_ceil_positive(self, d: i64) -> i64 {
        self / d + i64::from(self % d != 0)
    }
}

fn negate_strides(modes: &[(i64, i64)]) -> Result<Modes, LayoutError> {
    modes
        .iter()
        .map(|&(s, d)| {
            d.checked_neg()
                .map(|d| (s, d))
                .ok_or(LayoutError::overflow(Op::Offset))
        })
        .collect()
}

/// Exclusive prefix products of the extents (they fit: each divides the size).
fn prefix_products(modes: &[(i64, i64)]) -> SmallVec<[i64; 8]> {
    let mut acc = 1i64;
    modes
        .iter()
        .map(|&(s, _)| {
            let p = acc;
            acc = acc.saturating_mul(s);
            p
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(s: &str) -> Layout {
        s.parse().expect("valid layout")
    }

    #[test]
    fn coalesce_shapes() {
        assert_eq!(coalesce(&l("(2,4):(1,2)")), l("8:1"));
        assert_eq!(coalesce(&l("(2,1,6):(1,7,2)")), l("12:1"));
        assert_eq!(coalesce(&l("(2,4):(4,1)")), l("(2,4):(4,1)"));
        assert_eq!(coalesce(&l("(1,1):(5,7)")), l("1:0"));
        assert_eq!(coalesce(&l("():()")), l("1:0"));
        assert_eq!(coalesce(&l("(3,2):(0,0)")), l("6:0"));
        assert_eq!(coalesce(&l("(2,2):(-1,-2)")), l("4:-1"));
    }

    #[test]
    fn filter_drops_broadcasts() {
        assert_eq!(filter(&l("(2,4,8):(8,1,0)")), l("(2,4):(8,1)"));
        assert_eq!(filter(&l("(4,3):(0,0)")), l("1:0"));
    }

    #[test]
    fn composition_results() {
        let c = |a: &str, b: &str| compose(&l(a), &l(b));
        assert_eq!(c("(4,6,8,10):(2,3,5,7)", "6:12"), Ok(l("(2,3):(9,5)")));
        assert_eq!(c("(4,6,8):(1,4,7)", "6:1"), Ok(l("6:1")));
        assert_eq!(c("(8,8):(8,1)", "3:3"), Ok(l("3:24")));
        assert_eq!(
            c("(8,8):(8,1)", "4:3"),
            Err(LayoutError::StrideNotDivisible {
                stride: 3,
                extent: 8
            })
        );
        assert_eq!(
            c("(4,3):(1,10)", "4:3"),
            Err(LayoutError::StrideNotDivisible {
                stride: 3,
                extent: 4
            })
        );
        assert_eq!(
            c("(4,6):(1,10)", "(3,2):(2,1)"),
            Err(LayoutError::ShapeNotDivisible {
                extent: 3,
                divisor: 2
            })
        );
        assert_eq!(c("(4,3,1):(3,1,0)", "24:1"), Ok(l("(4,3,2):(3,1,0)")));
        assert_eq!(c("(1,(2,4)):(0,(-1,512))", "2:-1"), Ok(l("2:1")));
        // Modes of b that add up past a mode of a: A(1 + 1) = A(2) = 10, not 1 + 1.
        assert_eq!(
            c("(2,2):(1,10)", "(2,2):(1,1)"),
            Err(LayoutError::ModesCarry {
                extent: 2,
                reach: 2
            })
        );
        assert_eq!(c("(4,4):(1,10)", "(2,2):(1,1)"), Ok(l("(2,2):(1,1)")));
        // 8 - 1 = 7 splits as (1,3), not (0,4) + (-1,0).
        assert_eq!(
            c("(2,8):(0,1)", "(2,2):(8,-1)"),
            Err(LayoutError::MixedStrideSigns {
                positive: 8,
                negative: -1
            })
        );
    }

    #[test]
    fn complement_results() {
        assert_eq!(complement(&l("4:2"), 1), Ok(l("2:1")));
        assert_eq!(complement(&l("(2,4):(1,6)"), 20), Ok(l("3:2")));
        assert_eq!(complement(&l("1:0"), 5), Ok(l("5:1")));
        assert_eq!(
            complement(&l("(2,2):(2,3)"), 8),
            Err(LayoutError::Overlapping { stride: 3, span: 4 })
        );
        assert_eq!(
            complement(&l("4:-1"), 8),
            Err(LayoutError::NegativeStride { stride: -1 })
        );
        assert_eq!(
            complement(&l("4:1"), 0),
            Err(LayoutError::InvalidCosizeBound { bound: 0 })
        );
    }

    #[test]
    fn inverses() {
        assert_eq!(right_inverse(&l("(2,4):(0,2)")), l("1:0"));
        assert_eq!(right_inverse(&l("4:-1")), l("1:0"));
        assert_eq!(try_left_inverse(&l("(4,2):(1,5)")), Ok(l("(5,2):(1,4)")));
        assert_eq!(try_left_inverse(&l("4:-1")), Ok(l("4:-1")));
        assert_eq!(
            try_left_inverse(&l("(2,3):(3,2)")),
            Err(LayoutError::InverseNotDivisible {
                stride: 3,
                previous: 2
            })
        );
        assert_eq!(
            try_left_inverse(&l("(4,2):(1,2)")),
            Err(LayoutError::Overlapping { stride: 2, span: 4 })
        );
        assert_eq!(
            try_left_inverse(&l("(4,2):(1,-8)")),
            Err(LayoutError::NegativeStride { stride: -8 })
        );
        assert_eq!(left_inverse(&l("(4,2):(1,2)")), l("(2,2):(1,4)"));
        assert_eq!(left_inverse(&l("4:0")), l("1:0"));
    }
}

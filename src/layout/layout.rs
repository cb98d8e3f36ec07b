//! [`Layout`]: a shape and a congruent stride, the function from coordinates to offsets.

use smallvec::SmallVec;

use super::error::{LayoutError, Op};
use super::int_tuple::IntTuple;

/// Flat `(extent, stride)` pairs: the working form of most operations.
pub(crate) type Modes = SmallVec<[(i64, i64); 8]>;

/// A CuTe layout `shape:stride`, the function from (hierarchical) coordinates and linear
/// indices to offsets.
///
/// Invariants, checked by every constructor:
/// - `shape` and `stride` are congruent (same nesting) and nest at most
///   [`MAX_DEPTH`](super::MAX_DEPTH) deep;
/// - every extent is at least 1;
/// - the size (product of extents) and every offset of the domain fit `i64`, and so does
///   `cosize`.
///
/// Strides may be zero or negative. A linear index is split into a coordinate
/// colexicographically (the leftmost mode varies fastest); past the end of the domain the
/// last mode keeps counting, as in CuTe.
///
/// ```
/// use coopgraph::layout::{IntTuple, Layout};
/// let l: Layout = "(4,3):(3,1)".parse().unwrap();
/// assert_eq!(l.size(), 12);
/// assert_eq!(l.call(1), 3);
/// assert_eq!(l.call(4), 1);
/// assert_eq!(l.call_coord(&"(2,1)".parse().unwrap()), Ok(7));
/// assert_eq!(l, Layout::row_major(IntTuple::flat([4, 3])).unwrap());
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Layout {
    shape: IntTuple,
    stride: IntTuple,
}

impl Layout {
    /// The layout `shape:stride`; fails if the invariants above do not hold.
    pub fn new(shape: IntTuple, stride: IntTuple) -> Result<Layout, LayoutError> {
        validate(&shape, &stride)?;
        Ok(Layout { shape, stride })
    }

    /// The compact column-major layout of `shape` (CuTe `make_layout(shape)`, `LayoutLeft`):
    /// the first integer has stride 1, each next one the product of the extents before it.
    pub fn column_major(shape: IntTuple) -> Result<Layout, LayoutError> {
        let stride = shape.compact_left(1)?;
        Layout::new(shape, stride)
    }

    /// The compact row-major layout of `shape` (CuTe `LayoutRight`): the last integer has
    /// stride 1.
    pub fn row_major(shape: IntTuple) -> Result<Layout, LayoutError> {
        let stride = shape.compact_right()?;
        Layout::new(shape, stride)
    }

    /// The vector `n:1`.
    pub fn contiguous(n: i64) -> Result<Layout, LayoutError> {
        Layout::new(IntTuple::int(n), IntTuple::int(1))
    }

    /// The layout whose modes are `modes` (CuTe `make_layout(a, b, ...)`): a tuple, even for
    /// one mode; `()` for none.
    pub fn from_modes(modes: impl IntoIterator<Item = Layout>) -> Result<Layout, LayoutError> {
        let (shapes, strides): (Vec<IntTuple>, Vec<IntTuple>) =
            modes.into_iter().map(|l| (l.shape, l.stride)).unzip();
        Layout::new(IntTuple::tuple(shapes)?, IntTuple::tuple(strides)?)
    }

    /// The trivial layout `1:0`.
    pub fn trivial() -> Layout {
        Layout {
            shape: IntTuple::int(1),
            stride: IntTuple::int(0),
        }
    }

    /// The shape.
    pub fn shape(&self) -> &IntTuple {
        &self.shape
    }

    /// The stride (congruent with the shape).
    pub fn stride(&self) -> &IntTuple {
        &self.stride
    }

    /// Number of top-level modes (1 for an integer shape).
    pub fn rank(&self) -> usize {
        self.shape.rank()
    }

    /// Nesting depth of the shape (0 for an integer shape).
    pub fn depth(&self) -> usize {
        self.shape.depth()
    }

    /// Number of coordinates in the domain: the product of the extents.
    pub fn size(&self) -> i64 {
        // Checked at construction.
        self.shape.product().unwrap_or(i64::MAX)
    }

    /// One past the largest offset of the domain. For non-negative strides this is CuTe's
    /// `cosize`, `layout(size - 1) + 1`.
    pub fn cosize(&self) -> i64 {
        // Checked at construction.
        offset_range(self.flat_modes().into_iter()).map_or(i64::MAX, |(_, hi)| hi + 1)
    }

    /// Mode `i` as a layout; an integer-shaped layout is its own mode 0.
    pub fn mode(&self, i: usize) -> Option<Layout> {
        Some(Layout {
            shape: self.shape.mode(i)?.clone(),
            stride: self.stride.mode(i)?.clone(),
        })
    }

    /// The two modes of a rank-2 layout (an `(items, threads)` arrangement); a layout of
    /// another rank is an error.
    pub fn two_modes(&self) -> Result<(Layout, Layout), LayoutError> {
        match (self.rank(), self.mode(0), self.mode(1)) {
            (2, Some(a), Some(b)) => Ok((a, b)),
            (found, ..) => Err(LayoutError::WrongRank { expected: 2, found }),
        }
    }

    /// The top-level modes, in order.
    pub fn modes(&self) -> impl Iterator<Item = Layout> + '_ {
        (0..self.rank()).filter_map(|i| self.mode(i))
    }

    /// The flat `(extent, stride)` pairs, depth-first.
    pub fn leaf_modes(&self) -> impl Iterator<Item = (i64, i64)> + '_ {
        self.shape.leaves().zip(self.stride.leaves())
    }

    /// The same function with a flat shape (an integer shape stays an integer).
    pub fn flatten(&self) -> Layout {
        Layout {
            shape: self.shape.flatten(),
            stride: self.stride.flatten(),
        }
    }

    /// The offset of linear index `i`.
    ///
    /// Exact for `0 <= i < size()`. Outside the domain the last mode extends (and negative
    /// indices split with truncating division, as in C++), which is what composition relies
    /// on; if that arithmetic overflows the result is `i64::MAX` — use [`Layout::try_call`]
    /// to get an error instead.
    pub fn call(&self, i: i64) -> i64 {
        self.try_call(i).unwrap_or(i64::MAX)
    }

    /// [`Layout::call`] with overflow reported as [`LayoutError::Overflow`].
    pub fn try_call(&self, i: i64) -> Result<i64, LayoutError> {
        index_to_offset(i, &self.shape, &self.stride)
    }

    /// The offset of a coordinate congruent with the shape, where any mode may instead be
    /// given as one integer (a linear index into that mode).
    pub fn call_coord(&self, coord: &IntTuple) -> Result<i64, LayoutError> {
        coord_to_offset(coord, &self.shape, &self.stride)
    }

    /// Flat modes, for the algorithms.
    pub(crate) fn flat_modes(&self) -> Modes {
        let mut out = Modes::new();
        push_leaf_modes(&self.shape, &self.stride, &mut out);
        out
    }

    /// The top-level modes, taking the layout apart instead of cloning.
    pub(crate) fn into_modes(self) -> Vec<Layout> {
        match (self.shape.into_items(), self.stride.into_items()) {
            (Ok(shapes), Ok(strides)) => shapes
                .into_iter()
                .zip(strides)
                .map(|(shape, stride)| Layout { shape, stride })
                .collect(),
            (Err(shape), Err(stride)) => vec![Layout { shape, stride }],
            // Congruent by construction; rebuild nothing rather than panic.
            _ => Vec::new(),
        }
    }

    /// A sub-layout of a valid layout is valid; used where the parts come from one.
    pub(crate) fn from_valid_parts(shape: IntTuple, stride: IntTuple) -> Layout {
        Layout { shape, stride }
    }

    /// The layout of flat `modes` after coalescing: `1:0` for none, an integer layout for
    /// one, a flat tuple otherwise.
    pub(crate) fn from_flat(modes: &[(i64, i64)]) -> Result<Layout, LayoutError> {
        match modes {
            [] => Ok(Layout::trivial()),
            [(s, d)] => Layout::new(IntTuple::int(*s), IntTuple::int(*d)),
            _ => Layout::new(
                IntTuple::flat(modes.iter().map(|m| m.0)),
                IntTuple::flat(modes.iter().map(|m| m.1)),
            ),
        }
    }

    /// The layout with every integer mode `s:d` replaced by the (shape, stride) pair `f(s, d)`,
    /// keeping the structure around it: the "apply per leaf" recursion.
    pub(crate) fn map_leaf_modes(
        &self,
        f: &mut impl FnMut(i64, i64) -> Result<(IntTuple, IntTuple), LayoutError>,
    ) -> Result<Layout, LayoutError> {
        let (shape, stride) = map_leaf_pairs(&self.shape, &self.stride, f)?;
        Layout::new(shape, stride)
    }
}

fn map_leaf_pairs(
    shape: &IntTuple,
    stride: &IntTuple,
    f: &mut impl FnMut(i64, i64) -> Result<(IntTuple, IntTuple), LayoutError>,
) -> Result<(IntTuple, IntTuple), LayoutError> {
    match (shape.as_tuple(), stride.as_tuple()) {
        (Some(shapes), Some(strides)) => {
            let mut new_shapes = Vec::with_capacity(shapes.len());
            let mut new_strides = Vec::with_capacity(shapes.len());
            for (s, d) in shapes.iter().zip(strides) {
                let (s, d) = map_leaf_pairs(s, d, f)?;
                new_shapes.push(s);
                new_strides.push(d);
            }
            Ok((IntTuple::tuple(new_shapes)?, IntTuple::tuple(new_strides)?))
        }
        _ => f(shape.as_int().unwrap_or(1), stride.as_int().unwrap_or(0)),
    }
}

/// Smallest and largest offset of flat modes over their domain, or `None` on overflow.
pub(crate) fn offset_range(modes: impl Iterator<Item = (i64, i64)>) -> Option<(i64, i64)> {
    let mut lo = 0i64;
    let mut hi = 0i64;
    for (s, d) in modes {
        let reach = (s - 1).checked_mul(d)?;
        if reach >= 0 {
            hi = hi.checked_add(reach)?;
        } else {
            lo = lo.checked_add(reach)?;
        }
    }
    Some((lo, hi))
}

fn push_leaf_modes(shape: &IntTuple, stride: &IntTuple, out: &mut Modes) {
    match (shape.as_tuple(), stride.as_tuple()) {
        (Some(ss), Some(ds)) => ss
            .iter()
            .zip(ds)
            .for_each(|(s, d)| push_leaf_modes(s, d, out)),
        _ => out.push((shape.as_int().unwrap_or(1), stride.as_int().unwrap_or(0))),
    }
}

/// Running totals of [`validate`]: size and the extreme offsets.
struct Extent {
    size: i64,
    lo: i64,
    hi: i64,
}

/// Check the invariants of [`Layout`] in one pass.
fn validate(shape: &IntTuple, stride: &IntTuple) -> Result<(), LayoutError> {
    let mut acc = Extent {
        size: 1,
        lo: 0,
        hi: 0,
    };
    validate_into(shape, stride, &mut acc).map_err(|e| match e {
        // Report the whole layout's counts, not those of the mismatched part.
        LayoutError::NotCongruent { .. } => LayoutError::NotCongruent {
            shape_leaves: shape.leaf_count(),
            stride_leaves: stride.leaf_count(),
        },
        other => other,
    })?;
    acc.hi
        .checked_add(1)
        .ok_or(LayoutError::overflow(Op::Offset))?;
    Ok(())
}

fn validate_into(shape: &IntTuple, stride: &IntTuple, acc: &mut Extent) -> Result<(), LayoutError> {
    match (
        shape.as_tuple(),
        stride.as_tuple(),
        shape.as_int(),
        stride.as_int(),
    ) {
        (Some(ss), Some(ds), _, _) if ss.len() == ds.len() => {
            for (s, d) in ss.iter().zip(ds) {
                validate_into(s, d, acc)?;
            }
            Ok(())
        }
        (_, _, Some(s), Some(d)) => {
            if s < 1 {
                return Err(LayoutError::NonPositiveExtent { extent: s });
            }
            acc.size = acc
                .size
                .checked_mul(s)
                .ok_or(LayoutError::overflow(Op::Size))?;
            let reach = (s - 1)
                .checked_mul(d)
                .ok_or(LayoutError::overflow(Op::Offset))?;
            let total = if reach >= 0 { &mut acc.hi } else { &mut acc.lo };
            *total = total
                .checked_add(reach)
                .ok_or(LayoutError::overflow(Op::Offset))?;
            Ok(())
        }
        _ => Err(LayoutError::NotCongruent {
            shape_leaves: shape.leaf_count(),
            stride_leaves: stride.leaf_count(),
        }),
    }
}

/// CuTe `crd2idx(idx2crd(i, shape), shape, stride)` with the last mode unbounded.
fn index_to_offset(i: i64, shape: &IntTuple, stride: &IntTuple) -> Result<i64, LayoutError> {
    let overflow = || LayoutError::overflow(Op::Index);
    match (shape.as_tuple(), stride.as_tuple()) {
        (Some(shapes), Some(strides)) => {
            let mut rest = i;
            let mut offset = 0i64;
            let last = shapes.len().saturating_sub(1);
            for (k, (s, d)) in shapes.iter().zip(strides).enumerate() {
                let c = if k == last {
                    rest
                } else {
                    let n = s.product().ok_or_else(overflow)?;
                    let c = rest % n;
                    rest /= n;
                    c
                };
                offset = offset
                    .checked_add(index_to_offset(c, s, d)?)
                    .ok_or_else(overflow)?;
            }
            Ok(offset)
        }
        _ => {
            let d = stride.as_int().unwrap_or(0);
            i.checked_mul(d).ok_or_else(overflow)
        }
    }
}

/// CuTe `crd2idx(coord, shape, stride)`: tuples index mode by mode, an integer indexes a
/// whole (sub-)shape linearly.
pub(crate) fn coord_to_offset(
    coord: &IntTuple,
    shape: &IntTuple,
    stride: &IntTuple,
) -> Result<i64, LayoutError> {
    match (coord.as_tuple(), shape.as_tuple(), stride.as_tuple()) {
        (Some(cs), Some(ss), Some(ds)) => {
            if cs.len() != ss.len() {
                return Err(LayoutError::RankMismatch {
                    layout: ss.len(),
                    argument: cs.len(),
                });
            }
            let mut offset = 0i64;
            for ((c, s), d) in cs.iter().zip(ss).zip(ds) {
                offset = offset
                    .checked_add(coord_to_offset(c, s, d)?)
                    .ok_or(LayoutError::overflow(Op::Index))?;
            }
            Ok(offset)
        }
        (Some(_), _, _) => Err(LayoutError::CoordNotCongruent),
        (None, _, _) => index_to_offset(coord.as_int().unwrap_or(0), shape, stride),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(s: &str) -> Layout {
        s.parse().expect("valid layout")
    }

    #[test]
    fn constructors() {
        let shape: IntTuple = "((2,3),4)".parse().expect("tuple");
        assert_eq!(
            Layout::column_major(shape.clone()),
            Ok(l("((2,3),4):((1,2),6)"))
        );
        assert_eq!(Layout::row_major(shape), Ok(l("((2,3),4):((12,4),1)")));
        assert_eq!(Layout::contiguous(8), Ok(l("8:1")));
        assert_eq!(
            Layout::from_modes([l("4:1"), l("(2,2):(8,4)")]),
            Ok(l("(4,(2,2)):(1,(8,4))"))
        );
        assert_eq!(Layout::from_modes([]), Ok(l("():()")));
    }

    #[test]
    fn invariants_are_checked() {
        let t = |s: &str| s.parse::<IntTuple>().expect("tuple");
        assert_eq!(
            Layout::new(t("(2,3)"), t("(1,(2,3))")),
            Err(LayoutError::NotCongruent {
                shape_leaves: 2,
                stride_leaves: 3
            })
        );
        assert_eq!(
            Layout::new(t("(2,0)"), t("(1,2)")),
            Err(LayoutError::NonPositiveExtent { extent: 0 })
        );
        assert_eq!(
            Layout::new(t("(4294967296,4294967296)"), t("(0,0)")),
            Err(LayoutError::overflow(Op::Size))
        );
        assert_eq!(
            Layout::new(t("(3,3)"), t("(4611686018427387904,1)")),
            Err(LayoutError::overflow(Op::Offset))
        );
        assert!(Layout::new(t("(2,2)"), t("(4611686018427387903,-4611686018427387904)")).is_ok());
    }

    #[test]
    fn queries() {
        let a = l("((2,2),3):((24,2),8)");
        assert_eq!(a.rank(), 2);
        assert_eq!(a.depth(), 2);
        assert_eq!(a.size(), 12);
        assert_eq!(a.cosize(), 24 + 2 + 16 + 1);
        assert_eq!(a.mode(0), Some(l("(2,2):(24,2)")));
        assert_eq!(a.mode(2), None);
        assert_eq!(l("8:1").mode(0), Some(l("8:1")));
        assert_eq!(a.flatten(), l("(2,2,3):(24,2,8)"));
        assert_eq!(l("():()").size(), 1);
        assert_eq!(l("():()").cosize(), 1);
        assert_eq!(l("4:-1").cosize(), 1);
    }

    #[test]
    fn indices_and_coordinates() {
        let a = l("((2,2),3):((24,2),8)");
        let expect = [0, 24, 2, 26, 8, 32, 10, 34, 16, 40, 18, 42];
        for (i, &e) in expect.iter().enumerate() {
            assert_eq!(a.call(i as i64), e);
        }
        let c = |s: &str| s.parse::<IntTuple>().expect("coordinate");
        assert_eq!(a.call_coord(&c("((1,1),2)")), Ok(42));
        assert_eq!(a.call_coord(&c("(3,2)")), Ok(42));
        assert_eq!(a.call_coord(&c("11")), Ok(42));
        assert_eq!(
            a.call_coord(&c("(1,2,3)")),
            Err(LayoutError::RankMismatch {
                layout: 2,
                argument: 3
            })
        );
        assert_eq!(
            a.call_coord(&c("((1,1),(2,0))")),
            Err(LayoutError::CoordNotCongruent)
        );
        // Past the end the last mode keeps counting.
        assert_eq!(l("(4,3):(3,1)").call(13), 3 + 3);
        // Negative indices split with truncating division.
        assert_eq!(l("(4,3):(1,10)").call(-5), -1 - 10);
        assert_eq!(
            l("2:4611686018427387904").try_call(4),
            Err(LayoutError::overflow(Op::Index))
        );
        assert_eq!(l("2:4611686018427387904").call(4), i64::MAX);
    }
}

//! Slicing a layout with a partial coordinate: [`Coord`], [`slice`], [`slice_and_offset`].
//!
//! A partial coordinate fixes some modes to an index and leaves others free (`_`). The
//! slice is the layout of the free modes; the offset is where the fixed indices land.

use super::MAX_DEPTH;
use super::error::{LayoutError, Op};
use super::int_tuple::IntTuple;
use super::layout::{Layout, coord_to_offset};

/// A possibly partial coordinate: an index, the free marker `_`, or a tuple of coordinates
/// (nested at most [`MAX_DEPTH`] deep). Text form: `(_,(2,_))`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Coord(Repr);

#[derive(Clone, PartialEq, Eq, Hash)]
enum Repr {
    Index(i64),
    Free,
    Tuple { items: Vec<Coord>, depth: u8 },
}

/// A borrowed look at one level of a [`Coord`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoordView<'a> {
    /// A fixed index (into an integer mode, or linear into a tuple mode).
    Index(i64),
    /// The free marker `_`: the mode is kept.
    Free,
    /// One coordinate per mode.
    Tuple(&'a [Coord]),
}

impl Coord {
    /// A fixed index.
    pub const fn index(i: i64) -> Coord {
        Coord(Repr::Index(i))
    }

    /// The free marker `_`.
    pub const fn free() -> Coord {
        Coord(Repr::Free)
    }

    /// A tuple of coordinates; fails with [`LayoutError::TooDeep`] past [`MAX_DEPTH`].
    pub fn tuple(items: impl IntoIterator<Item = Coord>) -> Result<Coord, LayoutError> {
        let items: Vec<Coord> = items.into_iter().collect();
        let depth = 1 + items.iter().map(Coord::depth).max().unwrap_or(0);
        if depth > MAX_DEPTH {
            return Err(LayoutError::TooDeep { limit: MAX_DEPTH });
        }
        // MAX_DEPTH fits u8 (checked in `mod.rs`).
        Ok(Coord(Repr::Tuple {
            items,
            depth: depth as u8,
        }))
    }

    /// This level of the coordinate.
    pub fn view(&self) -> CoordView<'_> {
        match &self.0 {
            Repr::Index(i) => CoordView::Index(*i),
            Repr::Free => CoordView::Free,
            Repr::Tuple { items, .. } => CoordView::Tuple(items),
        }
    }

    /// Nesting depth (0 for an index or `_`).
    pub fn depth(&self) -> usize {
        match &self.0 {
            Repr::Tuple { depth, .. } => usize::from(*depth),
            _ => 0,
        }
    }
}

impl From<&IntTuple> for Coord {
    /// The full coordinate with the same integers.
    fn from(t: &IntTuple) -> Coord {
        match t.as_tuple() {
            None => Coord::index(t.as_int().unwrap_or(0)),
            Some(items) => {
                let depth = t.depth() as u8;
                Coord(Repr::Tuple {
                    items: items.iter().map(Coord::from).collect(),
                    depth,
                })
            }
        }
    }
}

/// The layout of the free modes of `coord` (CuTe `layout(coord)` with underscores).
///
/// A free marker at top level keeps the whole layout. Otherwise the result is a tuple of the
/// sub-layouts found at the free markers, in order (so a fully fixed coordinate gives
/// `():()`), exactly as CuTe's `slice`.
///
/// ```
/// use coopgraph::layout::{slice_and_offset, Layout};
/// let l: Layout = "((2,3),4):((1,2),6)".parse().unwrap();
/// let (s, off) = slice_and_offset(&l, &"((1,_),2)".parse().unwrap()).unwrap();
/// assert_eq!(s.to_string(), "(3):(2)");
/// assert_eq!(off, 1 + 12);
/// ```
pub fn slice(layout: &Layout, coord: &Coord) -> Result<Layout, LayoutError> {
    slice_and_offset(layout, coord).map(|(l, _)| l)
}

/// [`slice()`] together with the offset of the fixed part of `coord` (free markers count as 0).
pub fn slice_and_offset(layout: &Layout, coord: &Coord) -> Result<(Layout, i64), LayoutError> {
    if let CoordView::Free = coord.view() {
        return Ok((layout.clone(), 0));
    }
    let mut shapes = Vec::new();
    let mut strides = Vec::new();
    let offset = slice_into(
        coord,
        layout.shape(),
        layout.stride(),
        &mut shapes,
        &mut strides,
    )?;
    let sliced = Layout::from_valid_parts(IntTuple::tuple(shapes)?, IntTuple::tuple(strides)?);
    Ok((sliced, offset))
}

/// Collects the modes under free markers and returns the offset of the fixed indices.
fn slice_into(
    coord: &Coord,
    shape: &IntTuple,
    stride: &IntTuple,
    shapes: &mut Vec<IntTuple>,
    strides: &mut Vec<IntTuple>,
) -> Result<i64, LayoutError> {
    match coord.view() {
        CoordView::Free => {
            shapes.push(shape.clone());
            strides.push(stride.clone());
            Ok(0)
        }
        CoordView::Index(i) => coord_to_offset(&IntTuple::int(i), shape, stride),
        CoordView::Tuple(items) => {
            let (Some(ss), Some(ds)) = (shape.as_tuple(), stride.as_tuple()) else {
                return Err(LayoutError::CoordNotCongruent);
            };
            if items.len() != ss.len() {
                return Err(LayoutError::RankMismatch {
                    layout: ss.len(),
                    argument: items.len(),
                });
            }
            let mut offset = 0i64;
            for ((c, s), d) in items.iter().zip(ss).zip(ds) {
                let part = slice_into(c, s, d, shapes, strides)?;
                offset = offset
                    .checked_add(part)
                    .ok_or(LayoutError::overflow(Op::Index))?;
            }
            Ok(offset)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(s: &str) -> Layout {
        s.parse().expect("valid layout")
    }

    fn c(s: &str) -> Coord {
        s.parse().expect("valid coordinate")
    }

    #[test]
    fn slices_match_cute() {
        let a = l("(4,8):(1,4)");
        assert_eq!(slice_and_offset(&a, &c("(_,2)")), Ok((l("(4):(1)"), 8)));
        assert_eq!(slice_and_offset(&a, &c("(3,_)")), Ok((l("(8):(4)"), 3)));
        assert_eq!(slice_and_offset(&a, &c("(_,_)")), Ok((a.clone(), 0)));
        assert_eq!(slice_and_offset(&a, &c("_")), Ok((a.clone(), 0)));
        assert_eq!(slice_and_offset(&a, &c("(1,2)")), Ok((l("():()"), 9)));
        assert_eq!(slice_and_offset(&a, &c("9")), Ok((l("():()"), 9)));
        // A free marker on a tuple mode keeps that mode whole; nested ones flatten.
        let b = l("((2,3),(4,5)):((1,2),(6,24))");
        assert_eq!(
            slice_and_offset(&b, &c("(_,(1,_))")),
            Ok((l("((2,3),5):((1,2),24)"), 6))
        );
        assert_eq!(
            slice_and_offset(&b, &c("((_,2),(_,_))")),
            Ok((l("(2,4,5):(1,6,24)"), 4))
        );
    }

    #[test]
    fn mismatches_are_errors() {
        let a = l("(4,8):(1,4)");
        assert_eq!(
            slice(&a, &c("(_,2,1)")),
            Err(LayoutError::RankMismatch {
                layout: 2,
                argument: 3
            })
        );
        assert_eq!(
            slice(&a, &c("((_,1),2)")),
            Err(LayoutError::CoordNotCongruent)
        );
    }

    #[test]
    fn slice_then_call_adds_up() {
        let a = l("((2,3),(4,5)):((1,2),(6,24))");
        let coord = c("((1,_),(_,4))");
        let (s, off) = slice_and_offset(&a, &coord).expect("congruent");
        for j in 0..3 {
            for k in 0..4 {
                let full: IntTuple = format!("((1,{j}),({k},4))").parse().expect("tuple");
                let part: IntTuple = format!("({j},{k})").parse().expect("tuple");
                assert_eq!(s.call_coord(&part).map(|o| o + off), a.call_coord(&full));
            }
        }
    }
}

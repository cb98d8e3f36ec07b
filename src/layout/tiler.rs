//! Tilers and the operations that take them: composition, the divides and the products.
//!
//! A [`Tiler`] is a layout, a tuple of tilers applied mode by mode, or "keep this mode"
//! (CuTe's `_`, pycute's `None`). The mode-by-mode recursion is [`by_mode`], written once and
//! shared by composition, divide, product and [`coalesce_by_mode`](super::coalesce_by_mode).

use super::MAX_DEPTH;
use super::error::{LayoutError, Op};
use super::int_tuple::IntTuple;
use super::layout::Layout;
use super::ops::{complement, compose};

/// What to compose, divide or multiply a layout by.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Tiler {
    /// One layout for the whole (sub-)layout.
    Layout(Layout),
    /// One tiler per mode; modes past the end are dropped by composition and kept by the
    /// divides and products, as in CuTe.
    Modes(Vec<Tiler>),
    /// Leave this mode as it is (CuTe `_`).
    Keep,
}

/// A borrowed [`Tiler`]; what the operations take, so that a `&Layout` is a tiler too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TilerRef<'a> {
    /// One layout for the whole (sub-)layout.
    Layout(&'a Layout),
    /// One tiler per mode.
    Modes(&'a [Tiler]),
    /// Leave this mode as it is.
    Keep,
}

impl Tiler {
    /// The by-mode tiler of `layouts` (CuTe's tuple of layouts `make_tile(a, b, ...)`).
    pub fn modes(layouts: impl IntoIterator<Item = Layout>) -> Tiler {
        Tiler::Modes(layouts.into_iter().map(Tiler::Layout).collect())
    }

    /// This tiler, borrowed.
    pub fn as_ref(&self) -> TilerRef<'_> {
        match self {
            Tiler::Layout(l) => TilerRef::Layout(l),
            Tiler::Modes(ts) => TilerRef::Modes(ts),
            Tiler::Keep => TilerRef::Keep,
        }
    }
}

impl From<Layout> for Tiler {
    fn from(l: Layout) -> Tiler {
        Tiler::Layout(l)
    }
}

impl<'a> From<&'a Layout> for TilerRef<'a> {
    fn from(l: &'a Layout) -> TilerRef<'a> {
        TilerRef::Layout(l)
    }
}

impl<'a> From<&'a Tiler> for TilerRef<'a> {
    fn from(t: &'a Tiler) -> TilerRef<'a> {
        t.as_ref()
    }
}

/// A tree that guides [`by_mode`]: a leaf, or a tuple with one child per mode.
pub(crate) trait Guide: Copy {
    /// `Some(n)` for a tuple of `n` children, `None` for a leaf.
    fn arity(self) -> Option<usize>;
    /// Child `i < n`.
    fn child(self, i: usize) -> Self;
}

impl Guide for TilerRef<'_> {
    fn arity(self) -> Option<usize> {
        match self {
            TilerRef::Modes(ts) => Some(ts.len()),
            _ => None,
        }
    }

    fn child(self, i: usize) -> Self {
        match self {
            TilerRef::Modes(ts) => ts.get(i).map_or(TilerRef::Keep, Tiler::as_ref),
            _ => self,
        }
    }
}

impl Guide for &IntTuple {
    fn arity(self) -> Option<usize> {
        self.as_tuple().map(<[IntTuple]>::len)
    }

    fn child(self, i: usize) -> Self {
        self.mode(i).unwrap_or(self)
    }
}

/// What [`by_mode`] does with the modes of the layout past the end of the guide.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rest {
    Keep,
    Drop,
}

/// Apply `leaf` at the leaves of `guide`, mode by mode: a tuple guide of `n` children maps
/// mode `i < n` of `layout` through child `i` and keeps or drops the rest.
pub(crate) fn by_mode<G: Guide>(
    layout: &Layout,
    guide: G,
    rest: Rest,
    leaf: &mut impl FnMut(&Layout, G) -> Result<Layout, LayoutError>,
) -> Result<Layout, LayoutError> {
    by_mode_at(layout, guide, rest, 0, leaf)
}

fn by_mode_at<G: Guide>(
    layout: &Layout,
    guide: G,
    rest: Rest,
    level: usize,
    leaf: &mut impl FnMut(&Layout, G) -> Result<Layout, LayoutError>,
) -> Result<Layout, LayoutError> {
    let Some(n) = guide.arity() else {
        return leaf(layout, guide);
    };
    if level >= MAX_DEPTH {
        return Err(LayoutError::TooDeep { limit: MAX_DEPTH });
    }
    let rank = layout.rank();
    if n > rank {
        return Err(LayoutError::RankMismatch {
            layout: rank,
            argument: n,
        });
    }
    let mut modes = Vec::with_capacity(if rest == Rest::Keep { rank } else { n });
    for (i, mode) in layout.modes().enumerate() {
        if i < n {
            modes.push(by_mode_at(&mode, guide.child(i), rest, level + 1, leaf)?);
        } else if rest == Rest::Keep {
            modes.push(mode);
        }
    }
    Layout::from_modes(modes)
}

/// Composition `a ∘ b` (CuTe `composition`): `result(c) == a(b(c))` for every coordinate `c`
/// of `b`, and the result has `b`'s shape structure (an integer mode of `b` may become a
/// tuple). `a` extends past its size through its last mode.
///
/// With a by-mode [`Tiler`], mode `i` of `a` is composed with tiler `i` and the modes of `a`
/// past the tiler are dropped (CuTe); [`Tiler::Keep`] keeps a mode.
///
/// Fails with [`LayoutError::StrideNotDivisible`] or [`LayoutError::ShapeNotDivisible`] when
/// the elements one mode of `b` selects do not form a layout over `a`'s modes, and with
/// [`LayoutError::ModesCarry`] or [`LayoutError::MixedStrideSigns`] when the modes of `b`
/// together would carry from one mode of `a` into the next (CuTe silently returns a wrong
/// layout there, e.g. for `(2,2):(1,10) ∘ (2,2):(1,1)`).
///
/// ```
/// use coopgraph::layout::{composition, Layout, Tiler};
/// let a: Layout = "(6,2):(8,2)".parse().unwrap();
/// let b: Layout = "(4,3):(3,1)".parse().unwrap();
/// let r = composition(&a, &b).unwrap();
/// assert_eq!(r.to_string(), "((2,2),3):((24,2),8)");
/// assert!((0..12).all(|i| r.call(i) == a.call(b.call(i))));
///
/// let t = Tiler::modes(["3:2".parse().unwrap(), "2:1".parse().unwrap()]);
/// assert_eq!(composition(&a, &t).unwrap().to_string(), "(3,2):(16,2)");
/// ```
pub fn composition<'t>(a: &Layout, b: impl Into<TilerRef<'t>>) -> Result<Layout, LayoutError> {
    by_mode(a, b.into(), Rest::Drop, &mut |mode, t| match t {
        TilerRef::Layout(b) => compose(mode, b),
        _ => Ok(mode.clone()),
    })
}

/// Split `a` into the part `b` selects and the rest (CuTe `logical_divide`):
/// `a ∘ (b, complement(b, size(a)))`, a rank-2 layout `(tile, rest)` for a layout tiler.
/// By-mode tilers divide mode by mode and keep the modes past their end.
///
/// ```
/// use coopgraph::layout::{logical_divide, Layout};
/// let a: Layout = "(32,8):(1,32)".parse().unwrap();
/// let d = logical_divide(&a, &"4:1".parse::<Layout>().unwrap()).unwrap();
/// assert_eq!(d.to_string(), "(4,64):(1,4)");
/// ```
pub fn logical_divide<'t>(a: &Layout, b: impl Into<TilerRef<'t>>) -> Result<Layout, LayoutError> {
    by_mode(a, b.into(), Rest::Keep, &mut |mode, t| match t {
        TilerRef::Layout(b) => divide_leaf(mode, b),
        _ => Ok(mode.clone()),
    })
}

fn divide_leaf(a: &Layout, b: &Layout) -> Result<Layout, LayoutError> {
    let rest = complement(b, a.size())?;
    compose(a, &Layout::from_modes([b.clone(), rest])?)
}

/// [`logical_divide`] with the tile modes gathered in mode 0 and the rest in mode 1
/// (CuTe `zipped_divide`): `((tile_0, tile_1, ...), (rest_0, rest_1, ..., unhit modes))`.
pub fn zipped_divide<'t>(a: &Layout, b: impl Into<TilerRef<'t>>) -> Result<Layout, LayoutError> {
    let b = b.into();
    zip_halves(logical_divide(a, b)?, b)
}

/// [`zipped_divide`] with the rest unpacked (CuTe `tiled_divide`):
/// `((tile_0, ...), rest_0, rest_1, ...)`.
pub fn tiled_divide<'t>(a: &Layout, b: impl Into<TilerRef<'t>>) -> Result<Layout, LayoutError> {
    unpack(zipped_divide(a, b)?, false)
}

/// [`zipped_divide`] with both halves unpacked (CuTe `flat_divide`):
/// `(tile_0, ..., rest_0, ...)`.
pub fn flat_divide<'t>(a: &Layout, b: impl Into<TilerRef<'t>>) -> Result<Layout, LayoutError> {
    unpack(zipped_divide(a, b)?, true)
}

/// Repeat `a` over the layout of `b` (CuTe `logical_product`):
/// `(a, complement(a, size(a) * cosize(b)) ∘ b)`. By-mode tilers multiply mode by mode and
/// keep the modes past their end.
///
/// ```
/// use coopgraph::layout::{logical_product, Layout};
/// let a: Layout = "(2,2):(4,1)".parse().unwrap();
/// let p = logical_product(&a, &"6:1".parse::<Layout>().unwrap()).unwrap();
/// assert_eq!(p.to_string(), "((2,2),(2,3)):((4,1),(2,8))");
/// ```
pub fn logical_product<'t>(a: &Layout, b: impl Into<TilerRef<'t>>) -> Result<Layout, LayoutError> {
    by_mode(a, b.into(), Rest::Keep, &mut |mode, t| match t {
        TilerRef::Layout(b) => product_leaf(mode, b),
        _ => Ok(mode.clone()),
    })
}

/// `composition(complement(a, size(a) * cosize(b)), b)`: where the copies of `a` go.
fn product_rest(a: &Layout, b: &Layout) -> Result<Layout, LayoutError> {
    let bound = a
        .size()
        .checked_mul(b.cosize())
        .ok_or(LayoutError::overflow(Op::Product))?;
    compose(&complement(a, bound)?, b)
}

fn product_leaf(a: &Layout, b: &Layout) -> Result<Layout, LayoutError> {
    Layout::from_modes([a.clone(), product_rest(a, b)?])
}

/// [`logical_product`] with the block modes gathered in mode 0 and the repetitions in mode 1
/// (CuTe `zipped_product`).
pub fn zipped_product<'t>(a: &Layout, b: impl Into<TilerRef<'t>>) -> Result<Layout, LayoutError> {
    let b = b.into();
    zip_halves(logical_product(a, b)?, b)
}

/// [`zipped_product`] with the repetitions unpacked (CuTe `tiled_product`).
pub fn tiled_product<'t>(a: &Layout, b: impl Into<TilerRef<'t>>) -> Result<Layout, LayoutError> {
    unpack(zipped_product(a, b)?, false)
}

/// [`zipped_product`] with both halves unpacked (CuTe `flat_product`).
pub fn flat_product<'t>(a: &Layout, b: impl Into<TilerRef<'t>>) -> Result<Layout, LayoutError> {
    unpack(zipped_product(a, b)?, true)
}

/// Blocks of `a` laid out by `b`, mode by mode (CuTe `blocked_product`): both are padded to
/// the larger rank `r` with `1:0` modes and the result is `((a_0, c_0), ..., (a_r-1, c_r-1))`
/// where `c = complement(a, size(a) * cosize(b)) ∘ b`.
///
/// ```
/// use coopgraph::layout::{blocked_product, Layout};
/// let a: Layout = "(2,2):(1,2)".parse().unwrap();
/// let b: Layout = "(3,4):(1,3)".parse().unwrap();
/// assert_eq!(blocked_product(&a, &b).unwrap().to_string(), "((2,3),(2,4)):((1,4),(2,12))");
/// ```
pub fn blocked_product(a: &Layout, b: &Layout) -> Result<Layout, LayoutError> {
    rank_product(a, b, false)
}

/// Like [`blocked_product`] but with the repetitions innermost, interleaving the blocks
/// (CuTe `raked_product`): `((c_0, a_0), ..., (c_r-1, a_r-1))`.
///
/// ```
/// use coopgraph::layout::{raked_product, Layout};
/// let a: Layout = "(2,2):(1,2)".parse().unwrap();
/// let b: Layout = "(3,4):(1,3)".parse().unwrap();
/// assert_eq!(raked_product(&a, &b).unwrap().to_string(), "((3,2),(4,2)):((4,1),(12,2))");
/// ```
pub fn raked_product(a: &Layout, b: &Layout) -> Result<Layout, LayoutError> {
    rank_product(a, b, true)
}

fn rank_product(a: &Layout, b: &Layout, raked: bool) -> Result<Layout, LayoutError> {
    let r = a.rank().max(b.rank());
    let a = pad_rank(a, r)?;
    let b = pad_rank(b, r)?;
    let c = product_rest(&a, &b)?;
    let c_mode = |i: usize| {
        // An integer-shaped `b` leaves `c` with whatever structure the composition gave it.
        if b.shape().is_int() {
            Some(c.clone())
        } else {
            c.mode(i)
        }
    };
    let mut modes = Vec::with_capacity(r);
    for i in 0..r {
        let (Some(ai), Some(ci)) = (a.mode(i), c_mode(i)) else {
            return Err(LayoutError::WrongRank {
                expected: r,
                found: c.rank(),
            });
        };
        let pair = if raked { [ci, ai] } else { [ai, ci] };
        modes.push(Layout::from_modes(pair)?);
    }
    Layout::from_modes(modes)
}

/// `layout` with `1:0` modes appended up to rank `r` (CuTe `append<R>`).
fn pad_rank(layout: &Layout, r: usize) -> Result<Layout, LayoutError> {
    if layout.rank() >= r {
        return Ok(layout.clone());
    }
    let pad = std::iter::repeat_n(Layout::trivial(), r - layout.rank());
    Layout::from_modes(layout.modes().chain(pad))
}

/// Gather the (tile, rest) pairs a divide or product left at the leaves of `tiler` into
/// `((tiles...), (rests..., unhit modes...))` (CuTe `zip2_by`).
fn zip_halves(split: Layout, tiler: TilerRef<'_>) -> Result<Layout, LayoutError> {
    let (tile, rest) = halves(split, tiler, 0)?;
    Layout::from_modes([tile, rest])
}

fn halves(
    split: Layout,
    tiler: TilerRef<'_>,
    level: usize,
) -> Result<(Layout, Layout), LayoutError> {
    match tiler {
        TilerRef::Keep => Ok((Layout::trivial(), split)),
        TilerRef::Layout(_) => {
            let rank = split.rank();
            let mut modes = split.into_modes().into_iter();
            match (modes.next(), modes.next()) {
                (Some(tile), Some(rest)) if rank == 2 => Ok((tile, rest)),
                _ => Err(LayoutError::WrongRank {
                    expected: 2,
                    found: rank,
                }),
            }
        }
        TilerRef::Modes(ts) => {
            if level >= MAX_DEPTH {
                return Err(LayoutError::TooDeep { limit: MAX_DEPTH });
            }
            let mut tiles = Vec::with_capacity(ts.len());
            let mut rests = Vec::with_capacity(split.rank());
            for (i, mode) in split.into_modes().into_iter().enumerate() {
                match ts.get(i) {
                    Some(t) => {
                        let (tile, rest) = halves(mode, t.as_ref(), level + 1)?;
                        tiles.push(tile);
                        rests.push(rest);
                    }
                    None => rests.push(mode),
                }
            }
            Ok((Layout::from_modes(tiles)?, Layout::from_modes(rests)?))
        }
    }
}

/// Unpack the rest half (and, if `both`, the tile half) of a zipped layout into top-level
/// modes.
fn unpack(zipped: Layout, both: bool) -> Result<Layout, LayoutError> {
    let rank = zipped.rank();
    let mut halves = zipped.into_modes().into_iter();
    let (Some(tile), Some(rest), 2) = (halves.next(), halves.next(), rank) else {
        return Err(LayoutError::WrongRank {
            expected: 2,
            found: rank,
        });
    };
    let mut modes = if both { tile.into_modes() } else { vec![tile] };
    modes.extend(rest.into_modes());
    Layout::from_modes(modes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(s: &str) -> Layout {
        s.parse().expect("valid layout")
    }

    #[test]
    fn composition_by_mode_drops_unhit_modes() {
        let a = l("(12,(4,8),3):(59,(13,1),1000)");
        let t = Tiler::modes([l("3:4"), l("8:2")]);
        assert_eq!(composition(&a, &t), Ok(l("(3,(2,4)):(236,(26,1))")));
        let keep = Tiler::Modes(vec![Tiler::Keep, Tiler::Layout(l("8:2"))]);
        assert_eq!(composition(&a, &keep), Ok(l("(12,(2,4)):(59,(26,1))")));
        assert_eq!(
            composition(&l("8:1"), &Tiler::modes([l("2:1"), l("2:1")])),
            Err(LayoutError::RankMismatch {
                layout: 1,
                argument: 2
            })
        );
    }

    #[test]
    fn divides() {
        let a = l("(4,6):(1,4)");
        let t = Tiler::modes([l("2:1"), l("3:2")]);
        assert_eq!(logical_divide(&a, &t), Ok(l("((2,2),(3,2)):((1,2),(8,4))")));
        assert_eq!(zipped_divide(&a, &t), Ok(l("((2,3),(2,2)):((1,8),(2,4))")));
        assert_eq!(tiled_divide(&a, &t), Ok(l("((2,3),2,2):((1,8),2,4)")));
        assert_eq!(flat_divide(&a, &t), Ok(l("(2,3,2,2):(1,8,2,4)")));
        let keep = Tiler::Modes(vec![Tiler::Layout(l("2:1"))]);
        assert_eq!(zipped_divide(&a, &keep), Ok(l("((2),(2,6)):((1),(2,4))")));
    }

    #[test]
    fn products() {
        let a = l("(2,2):(1,2)");
        assert_eq!(
            logical_product(&a, &l("(3,4):(1,3)")),
            Ok(l("((2,2),(3,4)):((1,2),(4,12))"))
        );
        assert_eq!(
            blocked_product(&l("4:1"), &l("3:1")),
            Ok(l("((4,3)):((1,4))"))
        );
        assert_eq!(
            raked_product(&l("4:1"), &l("(3,2):(1,3)")),
            Ok(l("((3,4),(2,1)):((4,1),(12,0))"))
        );
        let t = Tiler::modes([l("3:1"), l("2:1")]);
        assert_eq!(zipped_product(&a, &t), Ok(l("((2,2),(3,2)):((1,2),(2,1))")));
        assert_eq!(tiled_product(&a, &t), Ok(l("((2,2),3,2):((1,2),2,1)")));
        assert_eq!(flat_product(&a, &t), Ok(l("(2,2,3,2):(1,2,2,1)")));
    }
}

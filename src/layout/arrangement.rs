//! Thread arrangements: which tile position each (item, thread) pair owns.
//!
//! A tile of `items * threads` elements is spread over `threads` threads holding `items`
//! items each. The arrangement is a layout of shape `(items, threads)` mapping the
//! coordinate `(item, thread)` to the position in the tile:
//!
//! | arrangement     | layout                          | position                              |
//! |-----------------|---------------------------------|---------------------------------------|
//! | blocked         | `(K,T):(1,K)`                   | `thread*K + item`                     |
//! | striped         | `(K,T):(T,1)`                   | `item*T + thread`                     |
//! | warp-striped    | `(K,(w,W)):(w,(1,w*K))`         | `warp*w*K + item*w + lane`            |
//!
//! with `K` items, `T` threads, warp width `w` (32, or the width of a logical warp) and
//! `W = T / w` warps. Code generators use [`decompose`] (or its special case
//! [`affine_form`]) to turn any such layout into plain integer arithmetic.

use smallvec::SmallVec;

use super::error::{LayoutError, Op};
use super::int_tuple::IntTuple;
use super::layout::Layout;
use super::ops::coalesce;

/// The hardware warp width.
pub const WARP_THREADS: u32 = 32;

/// How the items of a tile are spread over threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arrangement {
    /// Each thread owns `items` consecutive positions.
    Blocked,
    /// Consecutive threads own consecutive positions; item `k` of all threads is one
    /// contiguous run of `threads` positions.
    Striped,
    /// Striped within each warp, warps owning consecutive blocks of `warp * items` positions.
    WarpStriped,
}

/// The layout `(items, threads) -> position` of `arrangement` with warps of 32 threads.
///
/// Fails with [`LayoutError::ZeroExtent`] for zero threads or items,
/// [`LayoutError::NotWarpMultiple`] for a warp-striped arrangement whose thread count is not a
/// multiple of 32, and [`LayoutError::Overflow`] if `items * threads` exceeds `u32`.
///
/// ```
/// use coopgraph::layout::{arrangement_layout, Arrangement};
/// let l = arrangement_layout(Arrangement::WarpStriped, 64, 4).unwrap();
/// assert_eq!(l.to_string(), "(4,(32,2)):(32,(1,128))");
/// ```
pub fn arrangement_layout(
    arrangement: Arrangement,
    threads: u32,
    items: u32,
) -> Result<Layout, LayoutError> {
    arrangement_layout_with_warp(arrangement, threads, items, WARP_THREADS)
}

/// The layout of `arrangement` for a group of `group_threads` threads that form one logical
/// warp (a sub-tile): blocked and striped use `T = group_threads`, and warp-striped treats
/// the whole group as a single warp of width `group_threads`.
///
/// ```
/// use coopgraph::layout::{group_arrangement_layout, Arrangement};
/// let l = group_arrangement_layout(Arrangement::WarpStriped, 8, 2).unwrap();
/// assert_eq!(l.to_string(), "(2,(8,1)):(8,(1,16))");
/// ```
pub fn group_arrangement_layout(
    arrangement: Arrangement,
    group_threads: u32,
    items: u32,
) -> Result<Layout, LayoutError> {
    arrangement_layout_with_warp(arrangement, group_threads, items, group_threads)
}

/// The layout of `arrangement` for `threads` threads in warps of `warp` threads.
pub fn arrangement_layout_with_warp(
    arrangement: Arrangement,
    threads: u32,
    items: u32,
    warp: u32,
) -> Result<Layout, LayoutError> {
    if threads == 0 || items == 0 || warp == 0 {
        return Err(LayoutError::ZeroExtent);
    }
    items
        .checked_mul(threads)
        .ok_or(LayoutError::overflow(Op::Arrangement))?;
    let (k, t, w) = (i64::from(items), i64::from(threads), i64::from(warp));
    let text = match arrangement {
        Arrangement::Blocked => ((k, t), (1, k)),
        Arrangement::Striped => ((k, t), (t, 1)),
        Arrangement::WarpStriped => {
            if !threads.is_multiple_of(warp) {
                return Err(LayoutError::NotWarpMultiple { threads, warp });
            }
            let warps = t / w;
            let shape = IntTuple::tuple([IntTuple::int(k), IntTuple::flat([w, warps])])?;
            let stride = IntTuple::tuple([IntTuple::int(w), IntTuple::flat([1, w * k])])?;
            return Layout::new(shape, stride);
        }
    };
    let ((s0, s1), (d0, d1)) = text;
    Layout::new(IntTuple::flat([s0, s1]), IntTuple::flat([d0, d1]))
}

/// A thread arrangement with its sizes: the object code generators query.
///
/// ```
/// use coopgraph::layout::{Arrangement, TileArrangement};
/// let a = TileArrangement::new(Arrangement::Striped, 128, 4).unwrap();
/// assert_eq!(a.position(1, 5), 128 + 5);
/// let f = a.affine().unwrap();
/// assert_eq!((f.item_stride, f.thread_stride), (128, 1));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TileArrangement {
    arrangement: Arrangement,
    threads: u32,
    items: u32,
    warp: u32,
    layout: Layout,
    form: Decomposition,
}

impl TileArrangement {
    /// `arrangement` over `threads` threads (warps of 32) with `items` items each; errors as
    /// in [`arrangement_layout`].
    pub fn new(arrangement: Arrangement, threads: u32, items: u32) -> Result<Self, LayoutError> {
        Self::with_warp(arrangement, threads, items, WARP_THREADS)
    }

    /// `arrangement` within one logical warp of `group_threads` threads; see
    /// [`group_arrangement_layout`].
    pub fn for_group(
        arrangement: Arrangement,
        group_threads: u32,
        items: u32,
    ) -> Result<Self, LayoutError> {
        Self::with_warp(arrangement, group_threads, items, group_threads)
    }

    /// `arrangement` over `threads` threads in warps of `warp`.
    pub fn with_warp(
        arrangement: Arrangement,
        threads: u32,
        items: u32,
        warp: u32,
    ) -> Result<Self, LayoutError> {
        let layout = arrangement_layout_with_warp(arrangement, threads, items, warp)?;
        let form = decompose(&layout)?;
        Ok(TileArrangement {
            arrangement,
            threads,
            items,
            warp,
            layout,
            form,
        })
    }

    /// Which arrangement this is.
    pub fn arrangement(&self) -> Arrangement {
        self.arrangement
    }

    /// Number of threads.
    pub fn threads(&self) -> u32 {
        self.threads
    }

    /// Items per thread.
    pub fn items(&self) -> u32 {
        self.items
    }

    /// Warp width used by the warp-striped arrangement.
    pub fn warp(&self) -> u32 {
        self.warp
    }

    /// Tile size, `items * threads` (fits `u32` by construction).
    pub fn tile_size(&self) -> u32 {
        self.items.wrapping_mul(self.threads)
    }

    /// The layout `(item, thread) -> position`.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The position of `item` of `thread`, for `item < items()` and `thread < threads()`.
    ///
    /// Out-of-range arguments follow the same formula with wrapping `u32` arithmetic (never
    /// a panic); use [`TileArrangement::checked_position`] to reject them.
    pub fn position(&self, item: u32, thread: u32) -> u32 {
        // In range every term is below tile_size() <= u32::MAX, so wrapping is exact there.
        self.form
            .item
            .eval_u32(item)
            .wrapping_add(self.form.thread.eval_u32(thread))
    }

    /// [`TileArrangement::position`], or `None` if `item` or `thread` is out of range.
    pub fn checked_position(&self, item: u32, thread: u32) -> Option<u32> {
        (item < self.items && thread < self.threads).then(|| self.position(item, thread))
    }

    /// `position = item * item_stride + thread * thread_stride`, if this arrangement is
    /// affine (blocked and striped are; warp-striped is when `items == 1` or one warp).
    pub fn affine(&self) -> Option<AffineForm> {
        self.form.affine()
    }

    /// The digit decomposition of both coordinates; see [`decompose`].
    pub fn decomposition(&self) -> &Decomposition {
        &self.form
    }
}

/// `position = item * item_stride + thread * thread_stride`: the arithmetic of an affine
/// arrangement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AffineForm {
    /// Added per item.
    pub item_stride: i64,
    /// Added per thread.
    pub thread_stride: i64,
}

/// One digit of a coordinate: `((x / divisor) % extent) * stride`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Term {
    /// Range of the digit.
    pub extent: i64,
    /// Product of the extents of the digits below (1 for the first).
    pub divisor: i64,
    /// Offset per unit of the digit.
    pub stride: i64,
}

/// A coordinate's contribution as a sum of digit terms (the coalesced flat modes of its
/// layout mode). For the thread mode of a warp-striped layout the terms are lane
/// `(extent 32, divisor 1)` and warp `(extent W, divisor 32)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ModeForm {
    terms: SmallVec<[Term; 4]>,
}

impl ModeForm {
    fn of(mode: &Layout) -> ModeForm {
        let mut divisor = 1i64;
        let terms = coalesce(mode)
            .flat_modes()
            .into_iter()
            .filter(|&(s, _)| s != 1)
            .map(|(extent, stride)| {
                let t = Term {
                    extent,
                    divisor,
                    stride,
                };
                // Divisors are partial products of the size, which fits.
                divisor = divisor.saturating_mul(extent);
                t
            })
            .collect();
        ModeForm { terms }
    }

    /// The digit terms, lowest first; empty for a mode of size 1.
    pub fn terms(&self) -> &[Term] {
        &self.terms
    }

    /// The single stride, if the mode is one term (or none: stride 0).
    pub fn single_stride(&self) -> Option<i64> {
        match self.terms.as_slice() {
            [] => Some(0),
            [t] => Some(t.stride),
            _ => None,
        }
    }

    /// The contribution of coordinate `x` (for `x` in range; the last digit is not reduced,
    /// so past the range the mode keeps counting like a layout does).
    pub fn eval(&self, x: i64) -> i64 {
        let last = self.terms.len().saturating_sub(1);
        self.terms
            .iter()
            .enumerate()
            .map(|(k, t)| {
                let q = x / t.divisor;
                let digit = if k == last { q } else { q % t.extent };
                digit.saturating_mul(t.stride)
            })
            .fold(0i64, i64::saturating_add)
    }

    fn eval_u32(&self, x: u32) -> u32 {
        let last = self.terms.len().saturating_sub(1);
        self.terms
            .iter()
            .enumerate()
            .map(|(k, t)| {
                let q = i64::from(x) / t.divisor;
                let digit = if k == last { q } else { q % t.extent };
                // Wrapping u32 arithmetic; exact whenever the true value fits.
                (digit as u32).wrapping_mul(t.stride as u32)
            })
            .fold(0u32, u32::wrapping_add)
    }
}

/// The arithmetic of a rank-2 `(item, thread)` layout: one [`ModeForm`] per coordinate,
/// with `position = item.eval(item) + thread.eval(thread)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Decomposition {
    /// Terms of the item coordinate.
    pub item: ModeForm,
    /// Terms of the thread coordinate.
    pub thread: ModeForm,
}

impl Decomposition {
    /// The position of `(item, thread)`.
    pub fn position(&self, item: i64, thread: i64) -> i64 {
        self.item
            .eval(item)
            .saturating_add(self.thread.eval(thread))
    }

    /// The affine form, if both coordinates are a single stride.
    pub fn affine(&self) -> Option<AffineForm> {
        Some(AffineForm {
            item_stride: self.item.single_stride()?,
            thread_stride: self.thread.single_stride()?,
        })
    }
}

/// Decompose a rank-2 `(item, thread)` layout into digit terms per coordinate; fails with
/// [`LayoutError::WrongRank`] for another rank.
///
/// ```
/// use coopgraph::layout::{arrangement_layout, decompose, Arrangement, Term};
/// let l = arrangement_layout(Arrangement::WarpStriped, 128, 3).unwrap();
/// let d = decompose(&l).unwrap();
/// assert_eq!(d.thread.terms(), &[
///     Term { extent: 32, divisor: 1, stride: 1 },    // lane
///     Term { extent: 4, divisor: 32, stride: 96 },   // warp
/// ]);
/// assert_eq!(d.position(2, 37), 96 + 2 * 32 + 5);
/// ```
pub fn decompose(layout: &Layout) -> Result<Decomposition, LayoutError> {
    let (item, thread) = layout.two_modes()?;
    Ok(Decomposition {
        item: ModeForm::of(&item),
        thread: ModeForm::of(&thread),
    })
}

/// `(item_stride, thread_stride)` of a rank-2 layout whose modes each coalesce to one stride;
/// `None` otherwise (then use [`decompose`]).
pub fn affine_form(layout: &Layout) -> Option<AffineForm> {
    decompose(layout).ok()?.affine()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(s: &str) -> Layout {
        s.parse().expect("valid layout")
    }

    #[test]
    fn layouts_of_each_arrangement() {
        assert_eq!(
            arrangement_layout(Arrangement::Blocked, 128, 4),
            Ok(l("(4,128):(1,4)"))
        );
        assert_eq!(
            arrangement_layout(Arrangement::Striped, 128, 4),
            Ok(l("(4,128):(128,1)"))
        );
        assert_eq!(
            arrangement_layout(Arrangement::WarpStriped, 96, 2),
            Ok(l("(2,(32,3)):(32,(1,64))"))
        );
        assert_eq!(
            arrangement_layout(Arrangement::WarpStriped, 48, 2),
            Err(LayoutError::NotWarpMultiple {
                threads: 48,
                warp: 32
            })
        );
        assert_eq!(
            arrangement_layout(Arrangement::Blocked, 0, 2),
            Err(LayoutError::ZeroExtent)
        );
        assert_eq!(
            arrangement_layout(Arrangement::Blocked, 65536, 65536),
            Err(LayoutError::overflow(Op::Arrangement))
        );
        assert_eq!(
            group_arrangement_layout(Arrangement::Blocked, 16, 4),
            Ok(l("(4,16):(1,4)"))
        );
    }

    #[test]
    fn every_arrangement_is_a_bijection_onto_the_tile() {
        for arr in [
            Arrangement::Blocked,
            Arrangement::Striped,
            Arrangement::WarpStriped,
        ] {
            for (threads, items) in [(32, 1), (64, 3), (256, 4), (96, 7)] {
                let a = TileArrangement::new(arr, threads, items).expect("valid");
                let mut seen = vec![false; a.tile_size() as usize];
                for t in 0..threads {
                    for k in 0..items {
                        let p = a.position(k, t);
                        let coord = IntTuple::flat([i64::from(k), i64::from(t)]);
                        assert_eq!(a.layout().call_coord(&coord), Ok(i64::from(p)));
                        assert!(!seen[p as usize], "{arr:?} {threads}x{items}: {p} twice");
                        seen[p as usize] = true;
                    }
                }
            }
        }
    }

    #[test]
    fn affine_forms() {
        let f = |arr, t, k| TileArrangement::new(arr, t, k).expect("valid").affine();
        assert_eq!(
            f(Arrangement::Blocked, 128, 4),
            Some(AffineForm {
                item_stride: 1,
                thread_stride: 4
            })
        );
        assert_eq!(
            f(Arrangement::Striped, 128, 4),
            Some(AffineForm {
                item_stride: 128,
                thread_stride: 1
            })
        );
        assert_eq!(f(Arrangement::WarpStriped, 128, 4), None);
        // One item per thread: warp-striped is striped, and the lone item has no stride.
        assert_eq!(
            f(Arrangement::WarpStriped, 128, 1),
            Some(AffineForm {
                item_stride: 0,
                thread_stride: 1
            })
        );
        assert_eq!(
            affine_form(&l("(4,(2,3)):(1,(4,8))")),
            Some(AffineForm {
                item_stride: 1,
                thread_stride: 4
            })
        );
        assert_eq!(affine_form(&l("(4,8,2):(1,4,32)")), None);
    }

    #[test]
    fn positions_out_of_range_do_not_panic() {
        let a = TileArrangement::new(Arrangement::WarpStriped, 64, 4).expect("valid");
        assert_eq!(a.checked_position(4, 0), None);
        assert_eq!(a.checked_position(0, 64), None);
        assert_eq!(a.checked_position(3, 63), Some(32 * 4 + 3 * 32 + 31));
        let _ = a.position(u32::MAX, u32::MAX);
    }
}

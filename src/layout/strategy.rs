//! Proptest strategies for int-tuples and layouts, for property tests of code built on the
//! layout algebra. Compiled with the `proptest` cargo feature.
//!
//! ```
//! use coopgraph::layout::strategy::{self, LayoutParams};
//! use coopgraph::layout::{coalesce, complement, Layout};
//! use proptest::prelude::*;
//!
//! // coalesce keeps the function.
//! proptest!(|(l in strategy::layout(LayoutParams::default()))| {
//!     let c = coalesce(&l);
//!     prop_assert_eq!(c.size(), l.size());
//!     for i in 0..l.size() {
//!         prop_assert_eq!(c.call(i), l.call(i));
//!     }
//! });
//!
//! // An injective layout and its complement never meet beyond offset 0.
//! proptest!(|(l in strategy::injective_layout(LayoutParams::default()))| {
//!     let r = complement(&l, l.cosize()).map_err(|e| TestCaseError::fail(e.to_string()))?;
//!     for i in 1..r.size() {
//!         prop_assert!((0..l.size()).all(|j| l.call(j) != r.call(i)));
//!     }
//! });
//! ```

use proptest::collection::vec;
use proptest::prelude::*;

use super::MAX_DEPTH;
use super::int_tuple::IntTuple;
use super::layout::Layout;

/// Bounds on generated values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayoutParams {
    /// Deepest nesting (clamped to [`MAX_DEPTH`]); 0 gives integer shapes only.
    pub max_depth: u32,
    /// Most items in one tuple (at least 1).
    pub max_rank: usize,
    /// Largest extent of one integer of a shape (at least 1).
    pub max_extent: i64,
    /// Largest size; extents that would exceed it are replaced by 1.
    pub max_size: i64,
    /// Largest stride magnitude for [`layout`].
    pub max_stride: i64,
    /// Whether [`layout`] may produce negative strides.
    pub negative_strides: bool,
}

impl Default for LayoutParams {
    /// Small layouts that test quickly: depth 2, rank 3, extents up to 8, size up to 256,
    /// strides in `0..=64`.
    fn default() -> LayoutParams {
        LayoutParams {
            max_depth: 2,
            max_rank: 3,
            max_extent: 8,
            max_size: 256,
            max_stride: 64,
            negative_strides: false,
        }
    }
}

/// Int-tuples with leaves from `leaf`, nested up to `max_depth` deep, tuples of 1 to
/// `max_rank` items.
pub fn int_tuple<S>(leaf: S, max_depth: u32, max_rank: usize) -> BoxedStrategy<IntTuple>
where
    S: Strategy<Value = i64> + 'static,
{
    let depth = max_depth.min(MAX_DEPTH as u32);
    let rank = max_rank.max(1);
    leaf.prop_map(IntTuple::int)
        .prop_recursive(depth, 64, rank as u32, move |inner| {
            vec(inner, 1..=rank).prop_filter_map("depth within MAX_DEPTH", |items| {
                IntTuple::tuple(items).ok()
            })
        })
        .boxed()
}

/// Shapes: extents from 1 to `max_extent` (powers of two more often), total size at most
/// `max_size`.
pub fn shape(params: LayoutParams) -> BoxedStrategy<IntTuple> {
    let max_extent = params.max_extent.max(1);
    let max_size = params.max_size.max(1);
    let extent = prop_oneof![
        2 => (0u32..=6).prop_map(move |k| (1i64 << k).min(max_extent)),
        1 => 1..=max_extent,
    ];
    int_tuple(extent, params.max_depth, params.max_rank)
        .prop_map(move |s| clamp_size(&s, max_size))
        .boxed()
}

/// Layouts of [`shape`]s with arbitrary strides (zero and repeated strides included).
pub fn layout(params: LayoutParams) -> BoxedStrategy<Layout> {
    let max_stride = params.max_stride.max(1);
    let negative = params.negative_strides;
    let magnitude = prop_oneof![
        1 => Just(0i64),
        2 => (0u32..=6).prop_map(move |k| (1i64 << k).min(max_stride)),
        2 => 1..=max_stride,
    ];
    let stride =
        (magnitude, any::<bool>()).prop_map(move |(m, flip)| if negative && flip { -m } else { m });
    shape(params)
        .prop_flat_map(move |s| {
            let n = s.leaf_count();
            (Just(s), vec(stride.clone(), n))
        })
        .prop_filter_map("valid layout", |(s, d)| {
            let stride = s.with_leaves(&mut d.into_iter())?;
            Layout::new(s, stride).ok()
        })
        .boxed()
}

/// Bijections onto `0..size`: a [`shape`] with column-major strides assigned to its
/// integers in a random order.
pub fn compact_layout(params: LayoutParams) -> BoxedStrategy<Layout> {
    chained_layout(params, 1..=1)
}

/// Injective layouts whose sorted strides form a divisibility chain with gaps: each stride
/// is the span of the smaller modes times 1, 2 or 3 (gaps are dropped once the cosize would
/// pass `4 * max_size`). These have an exact complement and a left inverse.
pub fn injective_layout(params: LayoutParams) -> BoxedStrategy<Layout> {
    chained_layout(params, 1..=3)
}

fn chained_layout(
    params: LayoutParams,
    gap: std::ops::RangeInclusive<i64>,
) -> BoxedStrategy<Layout> {
    let max_cosize = params.max_size.max(1).saturating_mul(4);
    shape(params)
        .prop_flat_map(move |s| {
            let n = s.leaf_count();
            let order = Just((0..n).collect::<Vec<usize>>()).prop_shuffle();
            (Just(s), order, vec(gap.clone(), n))
        })
        .prop_filter_map("fits i64", move |(s, order, gaps)| {
            let extents: Vec<i64> = s.leaves().collect();
            let mut strides = vec![0i64; extents.len()];
            let mut span = 1i64;
            for (&k, g) in order.iter().zip(gaps) {
                let widened = span.checked_mul(g)?.checked_mul(extents[k])?;
                let g = if widened > max_cosize { 1 } else { g };
                strides[k] = span.checked_mul(g)?;
                span = strides[k].checked_mul(extents[k])?;
            }
            let stride = s.with_leaves(&mut strides.into_iter())?;
            Layout::new(s, stride).ok()
        })
        .boxed()
}

/// Replace extents by 1 where the running product would pass `max_size`.
fn clamp_size(shape: &IntTuple, max_size: i64) -> IntTuple {
    let mut size = 1i64;
    shape.map_leaves(&mut |e| match size.checked_mul(e) {
        Some(next) if next <= max_size => {
            size = next;
            e
        }
        _ => 1,
    })
}

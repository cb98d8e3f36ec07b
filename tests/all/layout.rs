//! Layout algebra tests: each operation checked by its defining post-condition over every
//! coordinate of random layouts (property tests), plus totality under extreme inputs. The
//! reference's hand-picked cases are in `layout_reference.rs`.
//!
//! The strategies here are private so that these tests run without the `proptest` feature;
//! the exported ones (`coopgraph::layout::strategy`) are checked at the end when it is on.

use std::collections::BTreeSet;

use coopgraph::layout::{
    ComposedLayout, Coord, IntTuple, Layout, LayoutError, Swizzle, Tiler, blocked_product,
    coalesce, coalesce_by_mode, complement, composition, filter, flat_divide, left_inverse,
    logical_divide, logical_product, raked_product, right_inverse, slice_and_offset, tiled_divide,
    try_left_inverse, zipped_divide,
};
use proptest::collection::vec;
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------
// Helpers and strategies

pub(crate) fn l(s: &str) -> Layout {
    s.parse()
        .unwrap_or_else(|e| panic!("test layout {s:?}: {e}"))
}

/// Offsets of every index of the domain, in order.
pub(crate) fn values(a: &Layout) -> Vec<i64> {
    (0..a.size()).map(|i| a.call(i)).collect()
}

fn image(a: &Layout) -> BTreeSet<i64> {
    values(a).into_iter().collect()
}

fn sorted_values(a: &Layout) -> Vec<i64> {
    let mut v = values(a);
    v.sort_unstable();
    v
}

/// CuTe `compatible(b, r)`: `r` refines `b`'s shape (each integer of `b` is an integer or a
/// tuple of the same size in `r`).
pub(crate) fn compatible(b: &IntTuple, r: &IntTuple) -> bool {
    match (b.as_tuple(), r.as_tuple()) {
        (None, _) => b.as_int() == r.product(),
        (Some(bs), Some(rs)) => {
            bs.len() == rs.len() && bs.iter().zip(rs).all(|(x, y)| compatible(x, y))
        }
        (Some(_), None) => false,
    }
}

/// The tiles modes `(b, complement(b, n))`.
fn with_complement(b: &Layout, n: i64) -> Layout {
    let c = complement(b, n).expect("injective tiler");
    Layout::from_modes([b.clone(), c]).expect("shallow")
}

fn pow2(max_log: u32) -> impl Strategy<Value = i64> + Clone {
    (0..=max_log).prop_map(|k| 1i64 << k)
}

fn small_extent() -> impl Strategy<Value = i64> + Clone {
    prop_oneof![3 => pow2(3), 1 => 1i64..=6]
}

/// Shapes nested up to depth 2, at most `max_size` elements (extents past it become 1).
fn shape_of(
    extent: impl Strategy<Value = i64> + Clone + 'static,
    max_size: i64,
) -> BoxedStrategy<IntTuple> {
    extent
        .prop_map(IntTuple::int)
        .prop_recursive(2, 12, 3, |inner| {
            vec(inner, 1..=3).prop_filter_map("depth", |items| IntTuple::tuple(items).ok())
        })
        .prop_map(move |s| {
            let mut size = 1i64;
            s.map_leaves(&mut |e| match size.checked_mul(e) {
                Some(next) if next <= max_size => {
                    size = next;
                    e
                }
                _ => 1,
            })
        })
        .boxed()
}

/// Layouts of `shape` with strides drawn from `stride`.
fn layout_of(
    shape: BoxedStrategy<IntTuple>,
    stride: impl Strategy<Value = i64> + Clone + 'static,
) -> BoxedStrategy<Layout> {
    shape
        .prop_flat_map(move |s| {
            let n = s.leaf_count();
            (Just(s), vec(stride.clone(), n))
        })
        .prop_filter_map("valid", |(s, d)| {
            let d = s.with_leaves(&mut d.into_iter())?;
            Layout::new(s, d).ok()
        })
        .boxed()
}

/// Any small layout: zero, repeated and negative strides included.
fn any_layout() -> BoxedStrategy<Layout> {
    let stride = prop_oneof![1 => Just(0i64), 2 => pow2(5), 2 => -8i64..=24];
    layout_of(shape_of(small_extent(), 128), stride)
}

/// Small layouts with non-negative strides.
fn nonneg_layout() -> BoxedStrategy<Layout> {
    let stride = prop_oneof![1 => Just(0i64), 2 => pow2(5), 2 => 1i64..=24];
    layout_of(shape_of(small_extent(), 128), stride)
}

/// Power-of-two extents and strides (zero and negative included): composition of two such
/// layouts always meets its divisibility conditions.
fn pow2_layout() -> BoxedStrategy<Layout> {
    let stride = prop_oneof![1 => Just(0i64), 4 => pow2(5), 1 => pow2(3).prop_map(|v| -v)];
    layout_of(shape_of(pow2(3), 128), stride)
}

/// Injective layouts whose sorted strides are a chain: each stride is the span of the
/// smaller modes times a gap from `gaps`, modes in random order.
fn chained_layout(
    extent: impl Strategy<Value = i64> + Clone + 'static,
    gaps: Vec<i64>,
    max_size: i64,
) -> BoxedStrategy<Layout> {
    shape_of(extent, max_size)
        .prop_flat_map(move |s| {
            let n = s.leaf_count();
            let order = Just((0..n).collect::<Vec<usize>>()).prop_shuffle();
            (
                Just(s),
                order,
                vec(proptest::sample::select(gaps.clone()), n),
            )
        })
        .prop_filter_map("fits", move |(s, order, gaps)| {
            let extents: Vec<i64> = s.leaves().collect();
            let mut strides = vec![0i64; extents.len()];
            let mut span = 1i64;
            for (&k, g) in order.iter().zip(gaps) {
                // Keep the cosize within 4 * max_size so that checks stay cheap.
                let g = if span * g * extents[k] > 4 * max_size {
                    1
                } else {
                    g
                };
                strides[k] = span * g;
                span = strides[k] * extents[k];
            }
            let d = s.with_leaves(&mut strides.into_iter())?;
            Layout::new(s, d).ok()
        })
        .boxed()
}

fn injective_layout() -> BoxedStrategy<Layout> {
    chained_layout(small_extent(), vec![1, 2, 3], 64)
}

/// Small power-of-two chains, for tilers.
fn pow2_tiler() -> BoxedStrategy<Layout> {
    chained_layout(pow2(2), vec![1, 2], 16)
}

fn compact_layout() -> BoxedStrategy<Layout> {
    chained_layout(small_extent(), vec![1], 128)
}

fn pow2_injective_layout() -> BoxedStrategy<Layout> {
    chained_layout(pow2(3), vec![1, 2, 4], 64)
}

fn swizzle() -> impl Strategy<Value = Swizzle> {
    (0u32..=4, 0u32..=4, 0i32..=5, any::<bool>()).prop_filter_map(
        "valid swizzle",
        |(bits, base, extra, negative)| {
            let magnitude = bits as i32 + extra;
            let shift = if negative { -magnitude } else { magnitude };
            Swizzle::new(bits, base, shift).ok()
        },
    )
}

/// `cases` per property, or `PROPTEST_CASES` when set (for longer runs).
fn config(cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------------
// Laws

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn coalesce_keeps_size_and_values(a in any_layout()) {
        let c = coalesce(&a);
        prop_assert!(c.depth() <= 1, "{a} -> {c}");
        prop_assert_eq!(c.size(), a.size());
        prop_assert_eq!(values(&c), values(&a), "{} -> {}", a, c);
        // Nothing left to merge.
        prop_assert_eq!(coalesce(&c), c);
    }

    #[test]
    fn coalesce_by_mode_keeps_rank_and_values(a in any_layout()) {
        let profile = IntTuple::flat(std::iter::repeat_n(1, a.rank()));
        let c = coalesce_by_mode(&a, &profile).expect("profile matches the rank");
        prop_assert_eq!(c.rank(), a.rank());
        for (cm, am) in c.modes().zip(a.modes()) {
            prop_assert_eq!(values(&cm), values(&am));
        }
    }

    #[test]
    fn filter_keeps_the_image(a in any_layout()) {
        let f = filter(&a);
        prop_assert!(f.depth() <= 1);
        prop_assert_eq!(image(&f), image(&a));
        prop_assert!(f.leaf_modes().all(|(s, d)| d != 0 || s == 1));
    }

    #[test]
    fn composition_with_a_power_of_two_chain(a in pow2_layout(), b in pow2_injective_layout()) {
        let r = composition(&a, &b);
        prop_assert!(r.is_ok(), "{a} o {b}: {r:?}");
        let r = r.expect("checked");
        prop_assert!(compatible(b.shape(), r.shape()), "{a} o {b} = {r}");
        for i in 0..b.size() {
            prop_assert_eq!(r.call(i), a.call(b.call(i)), "{} o {} = {} at {}", a, b, r, i);
        }
    }

    #[test]
    fn composition_is_exact_or_says_why(a in any_layout(), b in any_layout()) {
        match composition(&a, &b) {
            Ok(r) => {
                prop_assert!(compatible(b.shape(), r.shape()), "{a} o {b} = {r}");
                for i in 0..b.size() {
                    prop_assert_eq!(r.call(i), a.call(b.call(i)), "{} o {} = {} at {}", a, b, r, i);
                }
            }
            Err(e) => prop_assert!(
                matches!(
                    e,
                    LayoutError::StrideNotDivisible { .. }
                        | LayoutError::ShapeNotDivisible { .. }
                        | LayoutError::ModesCarry { .. }
                        | LayoutError::MixedStrideSigns { .. }
                ),
                "{a} o {b}: {e:?}"
            ),
        }
    }

    #[test]
    fn composition_by_mode_composes_each_mode(
        a in pow2_layout().prop_filter("rank 2+", |a| a.rank() >= 2),
        b0 in pow2_injective_layout(),
        b1 in pow2_injective_layout(),
    ) {
        let t = Tiler::modes([b0.clone(), b1.clone()]);
        let r = composition(&a, &t).expect("power-of-two layouts compose");
        prop_assert_eq!(r.rank(), 2);
        for (k, b) in [b0, b1].iter().enumerate() {
            let ak = a.mode(k).expect("rank checked");
            let rk = r.mode(k).expect("rank 2");
            prop_assert_eq!(&rk, &composition(&ak, b).expect("composes"));
        }
    }

    #[test]
    fn complement_is_ordered_disjoint_and_large_enough(a in nonneg_layout(), extra in 0i64..40) {
        let bound = 1 + a.cosize() + extra - 20;
        let bound = bound.max(1);
        match complement(&a, bound) {
            Ok(r) => check_complement(&a, &r, bound)?,
            Err(e) => prop_assert!(matches!(e, LayoutError::Overlapping { .. }), "{a}: {e:?}"),
        }
    }

    #[test]
    fn complement_of_a_chain_completes_it(a in injective_layout(), extra in 0i64..40) {
        let bound = (a.cosize() + extra - 20).max(1);
        let r = complement(&a, bound).expect("chains have complements");
        check_complement(&a, &r, bound)?;
        // The gaps are filled exactly: (a, r) is a bijection onto 0..size.
        let full = Layout::from_modes([a.clone(), r.clone()]).expect("shallow");
        let expect: Vec<i64> = (0..full.size()).collect();
        prop_assert_eq!(sorted_values(&full), expect, "{} and {}", a, r);
    }

    #[test]
    fn right_inverse_inverts_on_its_domain(a in any_layout()) {
        let r = right_inverse(&a);
        for i in 0..r.size() {
            prop_assert_eq!(a.call(r.call(i)), i, "{} with right inverse {}", a, r);
        }
    }

    #[test]
    fn inverses_of_a_bijection_agree(a in compact_layout()) {
        let r = right_inverse(&a);
        prop_assert_eq!(r.size(), a.size());
        let li = try_left_inverse(&a).expect("bijection");
        for i in 0..a.size() {
            prop_assert_eq!(li.call(i), r.call(i));
        }
    }

    #[test]
    fn left_inverse_of_an_injective_layout(a in injective_layout()) {
        let r = try_left_inverse(&a).expect("chains are left-invertible");
        prop_assert_eq!(&left_inverse(&a), &r);
        for i in 0..a.size() {
            prop_assert_eq!(r.call(a.call(i)), i, "{} with left inverse {}", a, r);
        }
    }

    #[test]
    fn left_inverse_is_a_quasi_inverse_with_broadcast_modes(
        chain in injective_layout(),
        zeros in vec(any::<bool>(), 9),
    ) {
        // A chain with some strides set to 0: not injective, but the non-zero modes still
        // determine the offset.
        let mut zero = zeros.iter().cycle();
        let stride = chain.stride().map_leaves(&mut |d| if *zero.next().unwrap_or(&false) { 0 } else { d });
        let a = Layout::new(chain.shape().clone(), stride).expect("same shape, smaller offsets");
        prop_assert!(try_left_inverse(&a).is_err() || image(&a).len() as i64 == a.size());
        let r = left_inverse(&a);
        for i in 0..a.size() {
            prop_assert_eq!(a.call(r.call(a.call(i))), a.call(i), "{} with left inverse {}", a, r);
        }
    }

    #[test]
    fn left_inverse_succeeds_only_when_exact(a in any_layout()) {
        let quasi = left_inverse(&a);
        if let Ok(r) = try_left_inverse(&a) {
            prop_assert_eq!(&quasi, &r);
            prop_assert_eq!(image(&a).len() as i64, a.size(), "{} is not injective", a);
            for i in 0..a.size() {
                prop_assert_eq!(r.call(a.call(i)), i, "{} with left inverse {}", a, r);
            }
        }
    }

    #[test]
    fn logical_divide_is_composition_with_the_complement(a in pow2_layout(), b in pow2_tiler()) {
        let d = logical_divide(&a, &b).expect("power-of-two layouts divide");
        let tiles = with_complement(&b, a.size());
        prop_assert_eq!(&d, &composition(&a, &tiles).expect("same"));
        prop_assert_eq!(d.rank(), 2);
        prop_assert!(compatible(b.shape(), d.mode(0).expect("rank 2").shape()));
        for i in 0..d.size() {
            prop_assert_eq!(d.call(i), a.call(tiles.call(i)));
        }
        prop_assert_eq!(&zipped_divide(&a, &b).expect("same"), &d);
    }

    #[test]
    fn divides_by_mode_rearrange_the_same_elements(
        a in pow2_layout().prop_filter("rank 2+", |a| a.rank() >= 2),
        b0 in pow2_tiler(),
        b1 in pow2_tiler(),
    ) {
        let t = Tiler::modes([b0, b1]);
        let logical = logical_divide(&a, &t).expect("divides");
        let zipped = zipped_divide(&a, &t).expect("divides");
        let tiled = tiled_divide(&a, &t).expect("divides");
        let flat = flat_divide(&a, &t).expect("divides");
        prop_assert_eq!(zipped.rank(), 2);
        prop_assert_eq!(sorted_values(&zipped), sorted_values(&logical));
        // Unpacking modes keeps the colexicographic order of indices.
        prop_assert_eq!(values(&tiled), values(&zipped));
        prop_assert_eq!(values(&flat), values(&zipped));
        prop_assert_eq!(tiled.rank(), 1 + zipped.mode(1).expect("rank 2").rank());
    }

    #[test]
    fn logical_product_is_a_with_the_complement_composed(a in pow2_injective_layout(), b in pow2_tiler()) {
        let p = logical_product(&a, &b).expect("power-of-two chains multiply");
        let rest = complement(&a, a.size() * b.cosize()).expect("injective");
        let expect = Layout::from_modes([a.clone(), composition(&rest, &b).expect("composes")]).expect("shallow");
        prop_assert_eq!(&p, &expect);
        prop_assert_eq!(&p.mode(0).expect("rank 2"), &a);
        prop_assert!(compatible(b.shape(), p.mode(1).expect("rank 2").shape()));
    }

    #[test]
    fn logical_product_definition_holds_for_any_tiler(a in injective_layout(), b in nonneg_layout()) {
        let expect = a.size().checked_mul(b.cosize())
            .ok_or(LayoutError::Overflow { op: coopgraph::layout::Op::Product })
            .and_then(|bound| complement(&a, bound))
            .and_then(|rest| composition(&rest, &b))
            .and_then(|c| Layout::from_modes([a.clone(), c]));
        prop_assert_eq!(logical_product(&a, &b), expect);
    }

    #[test]
    fn products_of_injective_layouts_are_injective(a in pow2_injective_layout(), b in pow2_tiler()) {
        let p = logical_product(&a, &b).expect("multiplies");
        prop_assert_eq!(image(&p).len() as i64, a.size() * b.size(), "{} x {} = {}", a, b, p);
        let blocked = blocked_product(&a, &b).expect("multiplies");
        let raked = raked_product(&a, &b).expect("multiplies");
        prop_assert_eq!(blocked.rank(), a.rank().max(b.rank()));
        prop_assert_eq!(raked.rank(), blocked.rank());
        prop_assert_eq!(sorted_values(&blocked), sorted_values(&raked));
        prop_assert_eq!(image(&blocked).len() as i64, a.size() * b.size());
        for (k, mode) in blocked.modes().enumerate() {
            let block = mode.mode(0).expect("pair");
            match a.mode(k) {
                Some(ak) if k < a.rank() => prop_assert_eq!(block, ak),
                _ => prop_assert_eq!(block, l("1:0")),
            }
        }
    }

    #[test]
    fn slice_plus_offset_is_the_full_coordinate(a in any_layout(), picks in vec(proptest::option::of(0i64..8), 3)) {
        // Fix the top-level modes where `picks` has an index, leave the others free.
        let fixed: Vec<Option<i64>> = a.modes().zip(picks.iter().cycle())
            .map(|(m, p)| p.map(|v| v % m.size())).collect();
        let coord = if a.shape().is_int() {
            fixed[0].map_or(Coord::free(), Coord::index)
        } else {
            Coord::tuple(fixed.iter().map(|f| f.map_or(Coord::free(), Coord::index))).expect("shallow")
        };
        let (s, offset) = slice_and_offset(&a, &coord).expect("congruent");
        let free_sizes: Vec<i64> = a.modes().zip(&fixed).filter(|(_, f)| f.is_none()).map(|(m, _)| m.size()).collect();
        prop_assert_eq!(s.size(), free_sizes.iter().product::<i64>());
        for j in 0..s.size() {
            // Split j colexicographically over the free modes, as the slice does.
            let mut rest = j;
            let mut full = Vec::new();
            let mut free = free_sizes.iter();
            for f in &fixed {
                full.push(match f {
                    Some(v) => *v,
                    None => {
                        let n = *free.next().expect("one size per free mode");
                        let c = rest % n;
                        rest /= n;
                        c
                    }
                });
            }
            let full = if a.shape().is_int() { IntTuple::int(full[0]) } else { IntTuple::flat(full) };
            prop_assert_eq!(s.call(j) + offset, a.call_coord(&full).expect("in range"), "{} at {}", a, coord);
        }
    }

    #[test]
    fn swizzle_is_an_involutive_bijection(sw in swizzle(), block in 0i64..4) {
        let n = 1i64 << sw.period_bits();
        let start = block * n;
        let mut seen: Vec<i64> = (start..start + n).map(|x| sw.call(x)).collect();
        for x in start..start + n {
            prop_assert_eq!(sw.call(sw.call(x)), x);
        }
        seen.sort_unstable();
        prop_assert_eq!(seen, (start..start + n).collect::<Vec<_>>());
    }

    #[test]
    fn swizzled_layout_composes_and_slices(sw in swizzle(), a in pow2_layout(), b in pow2_injective_layout(), offset in 0i64..64) {
        let composed = ComposedLayout::new(sw, offset, a.clone());
        let r = composed.composition(&b).expect("power-of-two layouts compose");
        for i in 0..b.size() {
            prop_assert_eq!(r.call(i), composed.call(b.call(i)));
        }
        if let (Some(m0), Some(m1)) = (a.mode(0), a.mode(1))
            && a.rank() == 2 {
                for i in 0..m0.size() {
                    let row = composed.slice(&Coord::tuple([Coord::index(i), Coord::free()]).expect("flat")).expect("congruent");
                    for j in 0..m1.size() {
                        let c = IntTuple::flat([i, j]);
                        prop_assert_eq!(row.call(j), composed.call_coord(&c).expect("in range"));
                    }
                }
            }
    }

    #[test]
    fn text_round_trips(a in any_layout()) {
        let text = a.to_string();
        prop_assert_eq!(text.parse::<Layout>(), Ok(a.clone()));
        prop_assert_eq!(a.shape().to_string().parse::<IntTuple>(), Ok(a.shape().clone()));
        let coord = Coord::from(a.stride());
        prop_assert_eq!(coord.to_string().parse::<Coord>(), Ok(coord));
    }

    #[test]
    fn parsing_never_panics(text in "[()_,:0-9 -]{0,24}") {
        let _ = text.parse::<Layout>();
        let _ = text.parse::<IntTuple>();
        let _ = text.parse::<Coord>();
    }
}

fn check_complement(a: &Layout, r: &Layout, bound: i64) -> Result<(), TestCaseError> {
    let a_image = image(a);
    for i in 1..r.size() {
        prop_assert!(
            r.call(i - 1) < r.call(i),
            "{a}: complement {r} not increasing at {i}"
        );
        prop_assert!(
            !a_image.contains(&r.call(i)),
            "{a}: complement {r} meets it at {i}"
        );
    }
    let full = Layout::from_modes([a.clone(), r.clone()]).expect("shallow");
    prop_assert!(
        full.cosize() >= bound,
        "{a}: ({a}, {r}) covers less than {bound}"
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Totality: extreme values never panic

fn extreme_value() -> impl Strategy<Value = i64> + Clone {
    prop_oneof![
        Just(0i64),
        Just(1),
        Just(-1),
        Just(i64::MAX),
        Just(i64::MIN),
        Just(1 << 31),
        Just(1 << 40),
        Just(-(1 << 40)),
        Just(i64::MAX / 3),
        -5i64..=40,
    ]
}

fn extreme_layout() -> BoxedStrategy<Layout> {
    let extent = prop_oneof![4 => 1i64..=8, 1 => Just(1i64 << 20), 1 => Just(1i64 << 31), 1 => Just(3_037_000_499)];
    layout_of(shape_of(extent, i64::MAX), extreme_value())
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn operations_are_total(a in extreme_layout(), b in extreme_layout(), n in extreme_value(), i in extreme_value()) {
        let _ = a.call(i);
        let _ = a.try_call(i);
        let _ = a.cosize();
        let _ = coalesce(&a);
        let _ = filter(&a);
        let _ = right_inverse(&a);
        let _ = left_inverse(&a);
        let _ = try_left_inverse(&a);
        let _ = complement(&a, n);
        if let Ok(r) = composition(&a, &b) {
            prop_assert!(compatible(b.shape(), r.shape()));
        }
        let _ = logical_divide(&a, &b);
        let _ = zipped_divide(&a, &Tiler::modes([b.clone(), b.clone()]));
        let _ = logical_product(&a, &b);
        let _ = blocked_product(&a, &b);
        let _ = raked_product(&a, &b);
        let _ = coalesce_by_mode(&a, b.shape());
        let _ = a.call_coord(b.shape());
        let _ = slice_and_offset(&a, &Coord::from(b.stride()));
    }
}

#[test]
fn the_nesting_limit_is_an_error_not_a_crash() {
    let mut tiler = Tiler::Layout(l("1:1"));
    for _ in 0..10_000 {
        tiler = Tiler::Modes(vec![tiler]);
    }
    assert_eq!(
        composition(&l("8:1"), &tiler),
        Err(LayoutError::TooDeep {
            limit: coopgraph::layout::MAX_DEPTH
        })
    );
    // Dropping a tiler this deep is the caller's business; keep the test's stack small.
    let mut t = tiler;
    while let Tiler::Modes(mut inner) = t {
        t = inner.pop().unwrap_or(Tiler::Keep);
    }
}

// ---------------------------------------------------------------------------------------
// The exported strategies (with the `proptest` feature)

#[cfg(feature = "proptest")]
mod exported_strategies {
    use coopgraph::layout::strategy::{self, LayoutParams};
    use coopgraph::layout::{complement, try_left_inverse};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(super::config(128))]

        #[test]
        fn layouts_respect_their_bounds(a in strategy::layout(LayoutParams::default())) {
            let p = LayoutParams::default();
            prop_assert!(a.size() <= p.max_size);
            prop_assert!(a.depth() <= p.max_depth as usize);
            prop_assert!(a.leaf_modes().all(|(s, d)| s <= p.max_extent && (0..=p.max_stride).contains(&d)));
        }

        #[test]
        fn injective_layouts_are_injective(a in strategy::injective_layout(LayoutParams::default())) {
            prop_assert_eq!(super::image(&a).len() as i64, a.size());
            prop_assert!(complement(&a, a.cosize()).is_ok());
            prop_assert!(try_left_inverse(&a).is_ok());
        }

        #[test]
        fn compact_layouts_are_bijections(a in strategy::compact_layout(LayoutParams::default())) {
            prop_assert_eq!(super::sorted_values(&a), (0..a.size()).collect::<Vec<_>>());
        }
    }
}

// ---------------------------------------------------------------------------------------
// Totality of the constructors: extreme extents, thread counts and swizzles are errors or
// values, never a panic

fn extreme_u32() -> impl Strategy<Value = u32> + Clone {
    prop_oneof![
        Just(0u32),
        Just(1),
        Just(2),
        Just(31),
        Just(32),
        Just(33),
        Just(1 << 16),
        Just(1 << 31),
        Just(u32::MAX - 1),
        Just(u32::MAX),
        0u32..=300,
    ]
}

fn extreme_i32() -> impl Strategy<Value = i32> + Clone {
    prop_oneof![
        Just(0i32),
        Just(i32::MIN),
        Just(i32::MAX),
        Just(-63),
        Just(63),
        -8i32..=8,
    ]
}

fn arrangement() -> impl Strategy<Value = coopgraph::layout::Arrangement> {
    use coopgraph::layout::Arrangement;
    prop_oneof![
        Just(Arrangement::Blocked),
        Just(Arrangement::Striped),
        Just(Arrangement::WarpStriped),
    ]
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn layout_constructors_are_total(
        extents in vec(extreme_value(), 0..4),
        strides in vec(extreme_value(), 0..4),
        n in extreme_value(),
    ) {
        let shape = IntTuple::flat(extents.iter().copied());
        let stride = IntTuple::flat(strides.iter().copied());
        let made = [
            Layout::new(shape.clone(), stride.clone()),
            Layout::column_major(shape.clone()),
            Layout::row_major(shape.clone()),
            Layout::contiguous(n),
            Layout::new(IntTuple::tuple([shape.clone(), shape.clone()]).unwrap_or(shape.clone()), stride.clone()),
        ];
        for l in made.iter().flatten() {
            // A layout that was made has extents of at least 1 and a size that fits.
            prop_assert!(l.leaf_modes().all(|(s, _)| s >= 1));
            prop_assert!(l.size() >= 1);
            let _ = l.cosize();
            let _ = l.try_call(n);
            let _ = l.call(n);
            let _ = coopgraph::layout::decompose(l);
            let _ = coopgraph::layout::affine_form(l);
            let _ = tiled_divide(l, l);
            let _ = flat_divide(l, l);
            let _ = coopgraph::layout::zipped_product(l, l);
            let _ = coopgraph::layout::tiled_product(l, l);
            let _ = coopgraph::layout::flat_product(l, l);
            let _ = Layout::from_modes([l.clone(), l.clone()]);
            let _ = coopgraph::layout::bank_conflicts(l, 4, 32);
        }
        if extents.iter().any(|&e| e <= 0) {
            prop_assert!(made[0].is_err() && made[1].is_err() && made[2].is_err());
        }
    }

    #[test]
    fn arrangement_constructors_are_total(
        arr in arrangement(),
        threads in extreme_u32(),
        items in extreme_u32(),
        warp in extreme_u32(),
        probe in extreme_u32(),
    ) {
        use coopgraph::layout::{
            TileArrangement, arrangement_layout, arrangement_layout_with_warp,
            group_arrangement_layout,
        };
        let fits = threads > 0 && items > 0 && threads.checked_mul(items).is_some();
        let l = arrangement_layout(arr, threads, items);
        prop_assert!(fits || l.is_err(), "{arr:?} {threads}x{items}");
        let _ = group_arrangement_layout(arr, threads, items);
        let _ = arrangement_layout_with_warp(arr, threads, items, warp);
        for t in [
            TileArrangement::new(arr, threads, items),
            TileArrangement::for_group(arr, threads, items),
            TileArrangement::with_warp(arr, threads, items, warp),
        ] {
            let Ok(t) = t else { continue };
            prop_assert_eq!(u64::from(t.tile_size()), u64::from(threads) * u64::from(items));
            let _ = t.position(probe, probe);
            let inside = t.checked_position(probe % items, probe % threads);
            prop_assert!(inside.is_some_and(|p| p < t.tile_size()));
            prop_assert!(t.checked_position(items, 0).is_none());
            let _ = t.affine();
        }
    }

    #[test]
    fn swizzles_and_bank_counts_are_total(
        bits in extreme_u32(),
        base in extreme_u32(),
        shift in extreme_i32(),
        every in extreme_u32(),
        pad in extreme_u32(),
        bytes in extreme_u32(),
        lanes in extreme_u32(),
        p in extreme_value(),
        a in extreme_layout(),
    ) {
        use coopgraph::layout::{SmemTransform, bank_conflicts, bank_conflicts_with};
        let sw = Swizzle::new(bits, base, shift);
        if let Ok(sw) = sw {
            prop_assert_eq!(sw.call(sw.call(p)), p);
            let c = ComposedLayout::new(sw, p, a.clone());
            let _ = c.call(p);
            let _ = c.call_coord(a.shape());
            let _ = c.composition(&a);
            let _ = c.slice(&Coord::from(a.stride()));
        }
        let transforms = [
            SmemTransform::Identity,
            SmemTransform::Swizzle(sw.unwrap_or_default()),
            SmemTransform::Pad { every, pad },
        ];
        for t in transforms {
            let _ = t.apply(p);
            let _ = bank_conflicts_with(&a, bytes, lanes, t);
        }
        let _ = bank_conflicts(&a, bytes, lanes);
    }
}

//! The reference's hand-picked layout cases, transcribed as data and checked by the same
//! post-conditions the reference checks: pycute's `test/python/pycute/test_*.py` and CuTe's
//! `test/unit/cute/core/*.cpp` in NVIDIA/cutlass.
//!
//! Layouts are written out in full. pycute's `Layout(shape)` and CuTe's `make_layout(shape)`
//! are column-major; CuTe's `GenRowMajor` is row-major; pycute's `((4,2))` is Python for
//! `(4,2)`, while CuTe's `Shape<Shape<_4,_2>>` is the one-mode `((4,2))`.

use coopgraph::layout::{
    Coord, IntTuple, Layout, LayoutError, Swizzle, Tiler, coalesce, complement, composition,
    filter, left_inverse, logical_divide, logical_product, right_inverse, tiled_product,
    try_left_inverse, zipped_product,
};

use super::layout::{compatible, l, values};

// ---------------------------------------------------------------------------------------
// coalesce: pycute test_coalesce.py, CuTe coalesce.cpp

const COALESCE: &[&str] = &[
    // pycute
    "1:0",
    "1:1",
    "(2,4):(1,2)",
    "(2,4,6):(1,2,8)",
    "(2,4,6):(1,6,2)",
    "(2,1,6):(1,7,2)",
    "(2,1,6):(4,7,8)",
    "(2,(4,6)):(1,(2,8))",
    "(2,4):(4,1)",
    "(2,4,6):(24,6,1)",
    "(2,1,3):(2,4,4)",
    "((2,2),(2,2)):((1,4),(8,32))",
    // CuTe, beyond the above
    "(2,1,6):(1,6,2)",
    "(2,1,3):(3,3,1)",
    "(2,1,3):(2,0,4)",
];

#[test]
fn coalesce_cases() {
    for s in COALESCE {
        let a = l(s);
        let c = coalesce(&a);
        assert!(c.depth() <= 1, "{a} -> {c}");
        assert_eq!(c.size(), a.size(), "{a} -> {c}");
        assert_eq!(values(&c), values(&a), "{a} -> {c}");
    }
}

// ---------------------------------------------------------------------------------------
// composition: pycute test_composition.py, CuTe composition.cpp

const COMPOSITION: &[(&str, &str)] = &[
    // pycute
    ("1:0", "1:0"),
    ("1:0", "1:1"),
    ("1:1", "1:0"),
    ("1:1", "1:1"),
    ("4:1", "4:1"),
    ("4:2", "4:1"),
    ("4:1", "4:2"),
    ("4:0", "4:1"),
    ("4:1", "4:0"),
    ("1:0", "4:1"),
    ("4:1", "1:0"),
    ("4:1", "2:1"),
    ("4:2", "2:1"),
    ("4:1", "2:2"),
    ("4:2", "2:2"),
    ("12:1", "(4,3):(1,4)"),
    ("12:2", "(4,3):(1,4)"),
    ("12:1", "(4,3):(3,1)"),
    ("12:2", "(4,3):(3,1)"),
    ("12:1", "(2,3):(2,4)"),
    ("(4,3):(1,4)", "(4,3):(1,4)"),
    ("(4,3):(1,4)", "12:1"),
    ("(4,3):(1,4)", "6:2"),
    ("(4,3):(1,4)", "(6,2):(2,1)"),
    ("(4,3):(3,1)", "(4,3):(1,4)"),
    ("(4,3):(3,1)", "12:1"),
    ("(4,3):(3,1)", "6:2"),
    ("(4,3):(3,1)", "(6,2):(2,1)"),
    ("(8,8):(1,8)", "((2,2,2),(2,2,2)):((1,16,4),(8,2,32))"),
    ("(8,8):(8,1)", "((2,2,2),(2,2,2)):((1,16,4),(8,2,32))"),
    ("((2,2,2),(2,2,2)):((1,16,4),(8,2,32))", "8:4"),
    ("(4,2):(1,16)", "(4,2):(2,1)"),
    ("(2,2):(2,1)", "(2,2):(2,1)"),
    ("(4,8,2):(1,4,32)", "(2,2,2):(2,8,1)"),
    ("(4,8,2):(2,8,1)", "(2,2,2):(1,8,2)"),
    ("(4,8,2):(2,8,1)", "(4,2,2):(2,8,1)"),
    ("(4,6,8):(1,4,7)", "6:1"),
    ("(4,6,8,10):(2,3,5,7)", "6:12"),
    // CuTe, beyond the above
    ("(4,3):(1,4)", "6:1"),
    ("(4,3):(1,4)", "(4,3):(3,1)"),
    ("((4,2)):((1,16))", "(4,2):(2,1)"),
    ("12:1", "4:1"),
    ("(12,3):(1,24)", "4:1"),
    ("16:2", "4:2"),
    ("(128,24,5):(1,128,3072)", "64:2"),
    ("(128,24,5):(1,128,3072)", "480:32"),
    ("1:1", "4:1"),
    ("(4,3):(3,1)", "24:1"),
    ("(4,3):(3,1)", "8:1"),
    ("(4,3,1):(3,1,0)", "24:1"),
    ("(4,3,1):(3,1,0)", "4:1"),
    ("(8,8):(8,1)", "2:3"),
    ("(8,8):(8,1)", "3:3"),
    ("3:1", "4:1"),
    ("(48,24,5):(1,128,3072)", "32:1"),
    // CuTe "BETA: negative strides"
    ("4:-1", "4:1"),
    ("4:1", "4:-1"),
    ("4:-1", "4:-1"),
    ("4:1", "4:-2"),
    ("(4,4):(-1,1)", "(2,4,2):(1,2,8)"),
    ("(4,4):(-1,1)", "(2,4,2):(1,4,2)"),
    ("(1,(2,4)):(0,(-1,512))", "2:-1"),
    ("(1,(2,4)):(0,(-1,512))", "4:-1"),
];

#[test]
fn composition_cases() {
    for (a, b) in COMPOSITION {
        let (a, b) = (l(a), l(b));
        let r = composition(&a, &b).unwrap_or_else(|e| panic!("{a} o {b}: {e}"));
        assert!(compatible(b.shape(), r.shape()), "{a} o {b} = {r}");
        for i in 0..b.size() {
            assert_eq!(r.call(i), a.call(b.call(i)), "{a} o {b} = {r} at {i}");
        }
    }
}

#[test]
fn composition_rejects_what_cute_rejects_statically() {
    // CuTe: "Should fail to a static divisibility condition": elements 0, 3, 6, 9 of an
    // 8-extent mode cross into the next mode at 8, which no stride can express.
    assert_eq!(
        composition(&l("(8,8):(8,1)"), &l("4:3")),
        Err(LayoutError::StrideNotDivisible {
            stride: 3,
            extent: 8
        })
    );
}

#[test]
fn composition_with_a_tiler_matches_the_cute_documentation() {
    // CuTe's layout algebra documentation: (12,(4,8)):(59,(13,1)) o <3:4, 8:2>.
    let a = l("(12,(4,8)):(59,(13,1))");
    let t = Tiler::modes([l("3:4"), l("8:2")]);
    assert_eq!(composition(&a, &t), Ok(l("(3,(2,4)):(236,(26,1))")));
    // And the single-layout example: (6,2):(8,2) o (4,3):(3,1).
    assert_eq!(
        composition(&l("(6,2):(8,2)"), &l("(4,3):(3,1)")),
        Ok(l("((2,2),3):((24,2),8)"))
    );
}

// ---------------------------------------------------------------------------------------
// complement: pycute test_complement.py, CuTe complement.cpp

/// pycute: `complement(layout)` with its default bound of 1; checks disjointness.
const COMPLEMENT_PYCUTE: &[&str] = &[
    "1:0",
    "1:1",
    "4:0",
    "(2,4):(1,2)",
    "(2,3):(1,2)",
    "(2,4):(1,4)",
    "(2,4,8):(8,1,64)",
    "((2,2),(2,2)):((1,4),(8,32))",
    "(2,(3,4)):(3,(1,6))",
    "(4,6):(1,6)",
    "(4,10):(1,10)",
];

/// CuTe: `(layout, cotarget size)`; a cotarget of `cosize(layout)` is CuTe's default.
const COMPLEMENT_CUTE: &[(&str, i64)] = &[
    ("1:0", 1),
    ("1:0", 2),
    ("1:0", 5),
    ("1:0", 4),
    ("1:1", 1),
    ("1:1", 2),
    ("1:1", 5),
    ("1:1", 4),
    ("1:2", 1),
    ("1:2", 2),
    ("1:2", 8),
    ("1:2", 5),
    ("1:2", 4),
    ("4:0", 1),
    ("4:0", 2),
    ("4:0", 8),
    ("4:1", 1),
    ("4:1", 2),
    ("4:1", 8),
    ("4:2", 1),
    ("4:2", 7),
    ("4:2", 16),
    ("4:2", 19),
    ("4:2", 4),
    ("4:4", 1),
    ("4:4", 13),
    ("4:4", 17),
    ("4:4", 4),
    ("(2,4):(1,2)", 8),
    ("(2,3):(1,2)", 6),
    ("(2,4):(1,4)", 14),
    ("(2,4):(1,6)", 20),
    ("(2,4,8):(8,1,64)", 460),
    ("(2,4,8):(8,1,0)", 12),
    ("(2,4,8):(8,1,0)", 460),
    ("((2,2),(2,2)):((1,4),(8,32))", 46),
    ("((2,2),(2,2)):((1,32),(8,4))", 46),
    ("(4,6):(1,6)", 34),
    ("(4,2):(1,10)", 14),
    ("(4,2):(1,16)", 20),
    ("12:1", 1),
    ("12:1", 12),
    ("12:1", 53),
    ("12:1", 128),
    ("12:2", 1),
    ("12:2", 23),
    ("12:2", 53),
    ("12:2", 128),
    ("(3,6):(1,3)", 18),
    ("(3,6):(1,9)", 48),
    ("(3,6):(1,10)", 53),
    ("64:1", 512),
];

#[test]
fn complement_cases_pycute() {
    for s in COMPLEMENT_PYCUTE {
        let a = l(s);
        let r = complement(&a, 1).unwrap_or_else(|e| panic!("{a}: {e}"));
        for i in 0..a.size() {
            for j in 0..r.size() {
                let (x, y) = (a.call(i), r.call(j));
                assert!(x != y || (x == 0 && y == 0), "{a} and {r} meet at {x}");
            }
        }
    }
}

#[test]
fn complement_cases_cute() {
    for &(s, bound) in COMPLEMENT_CUTE {
        let a = l(s);
        let r = complement(&a, bound).unwrap_or_else(|e| panic!("{a}, {bound}: {e}"));
        let completed = Layout::from_modes([a.clone(), r.clone()]).expect("shallow");
        let ctx = format!("complement({a}, {bound}) = {r}");
        // (1) lower bound on the completed codomain, (2) upper bound on the complement's.
        assert!(completed.cosize() >= bound, "{ctx}");
        let round_up = (bound + a.cosize() - 1) / a.cosize() * a.cosize();
        assert!(r.cosize() <= round_up, "{ctx}");
        for i in 1..r.size() {
            // (3) ordered, (4) disjoint.
            assert!(r.call(i - 1) < r.call(i), "{ctx}");
            assert!((0..a.size()).all(|j| a.call(j) != r.call(i)), "{ctx}");
        }
        // The other observations.
        let filtered = filter(&a).size();
        assert!(r.size() <= r.cosize(), "{ctx}");
        assert!(r.size() >= bound / filtered, "{ctx}");
        assert!(completed.cosize() <= r.cosize() + a.cosize(), "{ctx}");
        assert!(r.cosize() >= bound / filtered, "{ctx}");
        let again =
            complement(&completed, completed.cosize()).expect("completed is complementable");
        assert_eq!(again.size(), 1, "{ctx}");
        let round_trip = complement(&complement(&r, a.cosize()).expect("r is ordered"), bound);
        assert_eq!(round_trip.as_ref(), Ok(&r), "{ctx}");
    }
}

#[test]
fn complement_rejects_what_cute_calls_non_injective() {
    for (s, bound) in [
        ("((2,2),(2,2)):((1,8),(8,4))", 39),
        ("(2,2):(2,3)", 6),
        ("(2,2):(2,3)", 19),
    ] {
        assert!(
            matches!(
                complement(&l(s), bound),
                Err(LayoutError::Overlapping { .. })
            ),
            "{s}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Inverses: pycute test_left_inverse.py, test_right_inverse.py; CuTe inverse_left.cpp,
// inverse_right.cpp

/// pycute's left-inverse cases: injective, so `R(L(i)) == i`.
const LEFT_INVERSE_PYCUTE: &[&str] = &[
    "1:0",
    "(1,1):(0,0)",
    "1:1",
    "4:1",
    "4:2",
    "(8,4):(1,8)",
    "(8,4):(4,1)",
    "(2,4,6):(1,2,8)",
    "(2,4,6):(4,1,8)",
    "(4,2):(1,16)",
];

/// CuTe's cases for both inverses (stride-0 modes included).
const INVERSE_CUTE: &[&str] = &[
    "1:0",
    "1:1",
    "((1,1)):((0,0))",
    "((3,7)):((0,0))",
    "(4):(0)",
    "(4):(1)",
    "(4):(2)",
    "(2,4):(0,2)",
    "(8,4):(1,8)",
    "(8,4):(4,1)",
    "(2,4,6):(1,2,8)",
    "(2,4,6):(4,1,8)",
    "(2,4,4,6):(4,1,0,8)",
    "(4,2):(1,16)",
    "(4,2):(1,5)",
    "(128,128):(65536,1)",
    "(128,160):(65536,1)",
    "(128,3,160):(65536,512,1)",
    "(128,64):(131072,2)",
    "(32,4,4,4):(262144,4,8388608,1)",
    "(2,2,2):(4,0,1)",
    "(((((32,4),1),(32,2)),4),1,(2,2),2):(((((262144,4),0),(0,1)),8388608),0,(2,16),32)",
    "(4):(-1)",
];

/// CuTe's right-inverse cases beyond [`INVERSE_CUTE`] (dynamic strides there).
const RIGHT_INVERSE_CUTE: &[&str] = &["(4,2):(1,4)", "(2,4):(4,1)"];

/// pycute's right-inverse cases.
const RIGHT_INVERSE_PYCUTE: &[&str] = &[
    "1:0",
    "(1,1):(0,0)",
    "(3,7):(0,0)",
    "1:1",
    "4:0",
    "4:1",
    "4:2",
    "(2,4):(0,2)",
    "(8,4):(1,8)",
    "(8,4):(4,1)",
    "(2,4,6):(1,2,8)",
    "(2,4,6):(4,1,8)",
    "(4,2):(1,16)",
];

#[test]
fn left_inverse_cases_pycute() {
    for s in LEFT_INVERSE_PYCUTE {
        let a = l(s);
        let r = left_inverse(&a);
        for i in 0..a.size() {
            assert_eq!(r.call(a.call(i)), i, "{a} with left inverse {r}");
        }
        // All of these are exact inverses except the ones of size 1.
        if a.size() > 1 {
            assert_eq!(try_left_inverse(&a).as_ref(), Ok(&r), "{a}");
        }
    }
}

#[test]
fn left_inverse_cases_cute() {
    for s in INVERSE_CUTE {
        let a = l(s);
        let r = left_inverse(&a);
        for i in 0..a.size() {
            assert_eq!(
                a.call(r.call(a.call(i))),
                a.call(i),
                "{a} with left inverse {r}"
            );
        }
    }
}

#[test]
fn right_inverse_cases() {
    let cases = RIGHT_INVERSE_PYCUTE
        .iter()
        .chain(INVERSE_CUTE)
        .chain(RIGHT_INVERSE_CUTE);
    for s in cases {
        let a = l(s);
        let r = right_inverse(&a);
        for i in 0..r.size() {
            assert_eq!(a.call(r.call(i)), i, "{a} with right inverse {r}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// logical_divide: CuTe logical_divide.cpp (pycute has no logical_divide test file)

const LOGICAL_DIVIDE: &[(&str, &str)] = &[
    ("1:0", "1:0"),
    ("1:0", "1:1"),
    ("1:1", "1:0"),
    ("1:1", "1:1"),
    ("6:1", "2:1"),
    ("6:1", "2:3"),
    ("6:1", "(2,3):(3,1)"),
    ("6:2", "2:1"),
    ("6:2", "2:3"),
    ("6:2", "(2,3):(3,1)"),
    ("(6,6):(1,12)", "(6,3):(3,1)"),
    ("(6,6):(12,1)", "(6,3):(3,1)"),
    ("32:1", "2:8"),
    ("(4,1):(1,1)", "2:1"),
    ("(4,1):(1,1)", "2:2"),
    ("(8,8):(1,8)", "32:2"),
    ("(8,8):(8,1)", "32:2"),
    ("2:1", "32:1"),
    ("48:1", "32:1"),
    ("96:1", "32:2"),
    ("32:1", "48:1"),
    ("(32,4,4):(1,32,128)", "64:1"),
    ("(128,4,3):(1,512,0)", "32:1"),
    ("(128,4,3):(1,512,0)", "32:2"),
    ("(16,4,3):(1,512,0)", "32:1"),
];

#[test]
fn logical_divide_cases() {
    for (a, b) in LOGICAL_DIVIDE {
        let (a, b) = (l(a), l(b));
        let d = logical_divide(&a, &b).unwrap_or_else(|e| panic!("{a} / {b}: {e}"));
        assert_eq!(d.rank(), 2, "{a} / {b} = {d}");
        let tile = d.mode(0).expect("rank 2");
        assert!(compatible(b.shape(), tile.shape()), "{a} / {b} = {d}");
        let tiles = Layout::from_modes([b.clone(), complement(&b, a.size()).expect("injective")])
            .expect("shallow");
        for i in 0..d.size() {
            assert_eq!(d.call(i), a.call(tiles.call(i)), "{a} / {b} = {d} at {i}");
        }
    }
}

#[test]
fn logical_divide_enforced_results() {
    // CuTe's "Enforcement for dynamic cases": the tile mode is exactly the tiler and the
    // rest mode has the expected extent.
    for (a, b, rest_extent, rest_stride) in [
        ("2:1", "32:1", 1, None),
        ("48:1", "32:1", 2, Some(32)),
        ("32:1", "48:1", 1, None),
    ] {
        let d = logical_divide(&l(a), &l(b)).expect("divides");
        assert_eq!(d.mode(0), Some(l(b)), "{a} / {b} = {d}");
        let rest = d.mode(1).expect("rank 2");
        assert_eq!(rest.size(), rest_extent, "{a} / {b} = {d}");
        if let Some(stride) = rest_stride {
            assert_eq!(
                rest,
                Layout::new(rest_extent.into(), stride.into()).expect("valid")
            );
        }
    }
    // CuTe: shape (_64,(_2,4)), stride (_1,(_64,_128)). CuTe keeps (2,4) apart because one
    // extent is dynamic; here all are values, so they coalesce to 8:64, the same function.
    let d = logical_divide(&l("(32,4,4):(1,32,128)"), &l("64:1")).expect("divides");
    assert_eq!(d, l("(64,8):(1,64)"));
    assert_eq!(values(&d), values(&l("(64,(2,4)):(1,(64,128))")));
}

// ---------------------------------------------------------------------------------------
// logical_product: CuTe logical_product.cpp, pycute test_product.py and
// test_logical_product.py

const LOGICAL_PRODUCT: &[(&str, &str)] = &[
    // CuTe
    ("1:0", "1:0"),
    ("1:1", "1:0"),
    ("1:0", "1:1"),
    ("1:1", "1:1"),
    ("3:1", "4:0"),
    ("3:0", "4:1"),
    ("3:0", "4:0"),
    ("3:2", "4:1"),
    ("(3):(1)", "(2,4):(1,2)"),
    ("(2,4):(1,2)", "(3):(1)"),
    ("(8,(2,2)):(1,(8,16))", "(4):(2)"),
    ("(2,2):(1,2)", "(3,3):(3,1)"),
    ("(3):(32)", "(32):(1)"),
    ("(3):(2)", "(4):(1)"),
    ("(3):(32)", "(128):(1)"),
    ("(3):(32)", "(8,8):(1,8)"),
    ("(3):(32)", "(8,8):(8,1)"),
    ("((4,2)):((1,16))", "(4,4):(1,4)"),
    ("((4,2)):((1,16))", "(4,2):(2,1)"),
    ("((2,2),(2,2)):((1,4),(8,32))", "(2,2):(1,2)"),
    ("((2,2),(2,2)):((1,4),(8,32))", "(2,2):(2,1)"),
    ("((4,6)):((1,6))", "(3):(1)"),
    // pycute test_product.py, beyond the above
    ("3:1", "(2,4):(1,2)"),
    ("(2,5):(5,1)", "4:1"),
    ("3:2", "4:1"),
    // pycute test_logical_product.py
    ("4:1", "3:1"),
    ("(4,8):(1,4)", "16:1"),
    ("((2,2),(2,2)):((1,4),(8,32))", "4:1"),
];

#[test]
fn logical_product_cases() {
    for (a, b) in LOGICAL_PRODUCT {
        let (a, b) = (l(a), l(b));
        let p = logical_product(&a, &b).unwrap_or_else(|e| panic!("{a} x {b}: {e}"));
        assert_eq!(p.rank(), 2, "{a} x {b} = {p}");
        assert_eq!(p.mode(0).as_ref(), Some(&a), "{a} x {b} = {p}");
        let repeat = p.mode(1).expect("rank 2");
        assert!(compatible(b.shape(), repeat.shape()), "{a} x {b} = {p}");
        assert_eq!(p.size(), a.size() * b.size());
    }
}

#[test]
fn logical_product_exact_results() {
    // pycute test_logical_product.py, with the integer tiler 4 spelled 4:1.
    let a = l("(2,5):(5,1)");
    let p = logical_product(&a, &l("4:1")).expect("multiplies");
    assert_eq!(p, l("((2,5),4):((5,1),10)"));
    // pycute's integer-tiler branch calls logical_divide; the product is not the divide.
    assert_ne!(Ok(p), logical_divide(&a, &l("4:1")));
    // A tuple tiler multiplies mode by mode: (A0 x 4:1, A1 x 2:1).
    let by_mode = logical_product(&a, &Tiler::modes([l("4:1"), l("2:1")])).expect("multiplies");
    let expect = Layout::from_modes([
        logical_product(&l("2:5"), &l("4:1")).expect("multiplies"),
        logical_product(&l("5:1"), &l("2:1")).expect("multiplies"),
    ])
    .expect("shallow");
    assert_eq!(by_mode, expect);
    assert_eq!(by_mode.size(), a.size() * 8);
    // zipped and tiled products cover size(A) * 4.
    assert_eq!(zipped_product(&a, &l("4:1")).map(|r| r.size()), Ok(40));
    assert_eq!(tiled_product(&a, &l("4:1")).map(|r| r.size()), Ok(40));
}

// ---------------------------------------------------------------------------------------
// Swizzle: pycute test_swizzle.py, CuTe swizzle_layout.cpp

const PROBE_POINTS: [i64; 12] = [0, 1, 2, 7, 8, 9, 15, 16, 63, 64, 255, 256];

/// `Sw<bits, base, shift>` and its values at [`PROBE_POINTS`].
type SwizzleTable = ((u32, u32, i32), [i64; 12]);

const SWIZZLE_TABLES: &[SwizzleTable] = &[
    ((2, 3, -3), [0, 1, 2, 7, 72, 73, 79, 144, 255, 64, 63, 256]),
    ((1, 0, 1), [0, 1, 3, 6, 8, 9, 14, 16, 62, 64, 254, 256]),
    ((3, 2, 3), [0, 1, 2, 7, 8, 9, 15, 16, 59, 72, 227, 256]),
    ((2, 1, -2), [0, 1, 10, 31, 8, 9, 23, 16, 39, 64, 231, 256]),
];

#[test]
fn swizzle_tables() {
    let identity = Swizzle::new(0, 4, 0).expect("legal");
    for x in PROBE_POINTS {
        assert_eq!(identity.call(x), x);
    }
    for &((bits, base, shift), expect) in SWIZZLE_TABLES {
        let sw = Swizzle::new(bits, base, shift).expect("legal");
        assert_eq!(PROBE_POINTS.map(|x| sw.call(x)), expect, "{sw}");
        for x in 0..(1i64 << sw.period_bits()) {
            assert_eq!(sw.call(sw.call(x)), x, "{sw}");
        }
    }
}

#[test]
fn swizzled_layout_slices() {
    for (sw, layout) in [
        ((3, 0, 3), "(8,8):(8,1)"),
        ((3, 0, -3), "(8,8):(8,1)"),
        ((2, 1, 3), "((2,2,2),(2,2,2)):((32,2,8),(4,1,16))"),
    ] {
        let sw = Swizzle::new(sw.0, sw.1, sw.2)
            .expect("legal")
            .compose(l(layout));
        let (rows, cols) = (8, 8);
        for i in 0..rows {
            let row = sw
                .slice(&Coord::tuple([Coord::index(i), Coord::free()]).expect("flat"))
                .expect("congruent");
            for j in 0..cols {
                let c = IntTuple::flat([i, j]);
                assert_eq!(row.call(j), sw.call_coord(&c).expect("in range"), "{sw}");
            }
        }
        for j in 0..cols {
            let col = sw
                .slice(&Coord::tuple([Coord::free(), Coord::index(j)]).expect("flat"))
                .expect("congruent");
            for i in 0..rows {
                let c = IntTuple::flat([i, j]);
                assert_eq!(col.call(i), sw.call_coord(&c).expect("in range"), "{sw}");
            }
        }
    }
}

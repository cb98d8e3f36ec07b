//! CuTe-style layout algebra: the index arithmetic behind tiles, thread arrangements and
//! shared-memory placement.
//!
//! A [`Layout`] is a shape and a congruent stride, both [`IntTuple`]s (an `i64` or a nested
//! tuple); it maps coordinates, and linear indices split colexicographically, to offsets.
//! The operations follow CuTe and pycute: [`coalesce`], [`filter`], [`composition`],
//! [`complement`], [`right_inverse`], [`left_inverse`], the divides and products,
//! [`slice()`], and XOR [`Swizzle`]s. On top of them, [`arrangement`] describes which tile
//! positions each thread owns and [`bank`] counts shared-memory bank conflicts, for the code
//! generator and the planner.
//!
//! ```
//! use coopgraph::layout::{composition, logical_divide, Layout};
//! let a: Layout = "(128,4):(4,1)".parse().unwrap();
//! let b: Layout = "(4,32):(32,1)".parse().unwrap();
//! let r = composition(&a, &b).unwrap();
//! assert!((0..r.size()).all(|i| r.call(i) == a.call(b.call(i))));
//! let tiles = logical_divide(&"(32,8):(1,32)".parse().unwrap(), &"4:1".parse::<Layout>().unwrap());
//! assert_eq!(tiles.unwrap().to_string(), "(4,64):(1,4)");
//! ```
//!
//! Invariants of this module:
//! - Every [`IntTuple`], [`Coord`] and [`Layout`] nests at most [`MAX_DEPTH`] levels; the
//!   constructors check it, so all recursion here is bounded.
//! - Every [`Layout`] has extents of at least 1, a size and offsets that fit `i64`; every
//!   constructor checks it, and operations build their results through those checks (or
//!   from the modes of a layout that already passed them).
//! - Composition is exact wherever it succeeds: `composition(a, b)(i) == a(b(i))` on the
//!   domain of `b`.
//! - No function panics: arithmetic is checked, and a failed precondition is a typed
//!   [`LayoutError`] naming it. Queries that cannot fail on valid layouts return plain values.
//! - The per-mode recursion over tilers and profiles is written once (`by_mode` in
//!   `tiler.rs`), the per-leaf recursion once (`Layout::map_leaf_modes`).
//! - Operations that take a layout and return one are pure functions; nothing caches.
//!
//! Where this differs from CuTe, deliberately:
//! - Divisibility in composition is checked exactly, and so is the assumption behind
//!   composing `b` mode by mode (that its modes add up inside `a` without carrying from one
//!   mode of `a` into the next). CuTe checks only what is static and can return a wrong
//!   layout; here those cases are [`LayoutError`]s.
//! - All values are dynamic, so results coalesce where CuTe keeps static and dynamic
//!   extents apart (`(64,8):(1,64)` where CuTe prints `(_64,(_2,4)):(_1,(_64,_128))`).
//! - [`complement`] lengthens its last mode where CuTe's rounding would miss the bound, and
//!   [`try_left_inverse`] says when no exact left inverse exists.
//! - Tilers are layouts (write `n:1` for CuTe's integer `n`), tuples of tilers, or
//!   [`Tiler::Keep`] for `_`.

pub mod arrangement;
pub mod bank;
mod error;
mod int_tuple;
// The file that defines `Layout` inside the `layout` module.
#[allow(clippy::module_inception)]
mod layout;
mod ops;
mod parse;
mod slice;
#[cfg(feature = "proptest")]
pub mod strategy;
mod swizzle;
mod tiler;

pub use arrangement::{
    AffineForm, Arrangement, Decomposition, ModeForm, Term, TileArrangement, affine_form,
    arrangement_layout, arrangement_layout_with_warp, decompose, group_arrangement_layout,
};
pub use bank::{BankReport, SmemTransform, bank_conflicts, bank_conflicts_with};
pub use error::{LayoutError, Op, ParseErrorKind};
pub use int_tuple::{IntTuple, Leaves};
pub use layout::Layout;
pub use ops::{
    coalesce, coalesce_by_mode, complement, filter, left_inverse, right_inverse, try_left_inverse,
};
pub use slice::{Coord, CoordView, slice, slice_and_offset};
pub use swizzle::{ComposedLayout, Swizzle};
pub use tiler::{
    Tiler, TilerRef, blocked_product, composition, flat_divide, flat_product, logical_divide,
    logical_product, raked_product, tiled_divide, tiled_product, zipped_divide, zipped_product,
};

/// The deepest nesting of int-tuples, coordinates and layouts.
pub const MAX_DEPTH: usize = 32;

// Depths are stored in a byte.
const _: () = assert!(MAX_DEPTH <= u8::MAX as usize);

//! The typed error of the layout algebra.
//!
//! Every fallible function of [`crate::layout`] returns [`LayoutError`]; each variant names
//! the precondition that failed and carries the values that broke it.

use std::fmt;

/// The operation during which an integer overflowed `i64` (or `u32` for thread arrangements).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Op {
    /// The number of elements of a shape (the product of its extents).
    Size,
    /// The largest offset a layout reaches (its cosize), or any offset in its domain.
    Offset,
    /// Mapping a coordinate or an index outside the domain to an offset.
    Index,
    /// Composition of two layouts.
    Composition,
    /// Complement of a layout.
    Complement,
    /// A product of layouts (`size(A) * cosize(B)`).
    Product,
    /// Building a thread arrangement (`items * threads` must fit `u32`).
    Arrangement,
    /// Turning element positions into shared-memory byte addresses.
    BankAddress,
}

/// Why a text could not be parsed as an int-tuple, a layout or a slice coordinate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// The text ended where more was expected.
    UnexpectedEnd,
    /// A character that does not fit the grammar at this point.
    UnexpectedChar(char),
    /// Input remained after a complete value.
    TrailingInput,
    /// An integer literal does not fit `i64`.
    IntOverflow,
    /// A layout needs a `:` between its shape and its stride.
    MissingColon,
    /// A `_` (free coordinate) appeared where an integer is required.
    FreeNotAllowed,
}

/// An error of the layout algebra: which precondition failed, with the offending values.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LayoutError {
    /// Shape and stride do not have the same nesting structure.
    NotCongruent {
        /// Number of integers in the shape.
        shape_leaves: usize,
        /// Number of integers in the stride.
        stride_leaves: usize,
    },
    /// A shape extent is zero or negative (extents are at least 1).
    NonPositiveExtent {
        /// The offending extent.
        extent: i64,
    },
    /// Nesting deeper than [`crate::layout::MAX_DEPTH`].
    TooDeep {
        /// The limit that was exceeded.
        limit: usize,
    },
    /// An intermediate value does not fit the integer type.
    Overflow {
        /// Where it happened.
        op: Op,
    },
    /// Composition: the right-hand stride neither divides nor is divided by a left-hand
    /// extent, so the right-hand elements cross that mode at irregular places.
    StrideNotDivisible {
        /// The (remaining) right-hand stride.
        stride: i64,
        /// The left-hand mode extent it meets.
        extent: i64,
    },
    /// Composition: the right-hand extent cannot be split evenly over a left-hand mode.
    ShapeNotDivisible {
        /// The (remaining) right-hand extent.
        extent: i64,
        /// The number of its elements that fit in the left-hand mode.
        divisor: i64,
    },
    /// Composition: the modes of the right-hand layout together reach `reach` in a
    /// left-hand mode of extent `extent`, so their sum would carry into the next mode and
    /// composing them one by one would be wrong.
    ModesCarry {
        /// Extent of the left-hand mode.
        extent: i64,
        /// Sum of the largest coordinates the right-hand modes put in it.
        reach: i64,
    },
    /// Composition: right-hand modes of both signs meet in a bounded left-hand mode, where
    /// their sum borrows across modes.
    MixedStrideSigns {
        /// A positive right-hand stride.
        positive: i64,
        /// A negative right-hand stride.
        negative: i64,
    },
    /// Complement or inverse: a mode starts inside the span already covered by the modes of
    /// smaller stride, so the layout overlaps itself (it is not injective, or its modes
    /// interleave).
    Overlapping {
        /// Stride of the mode that overlaps.
        stride: i64,
        /// Extent already covered by the modes of smaller stride.
        span: i64,
    },
    /// Left inverse: a stride is not a multiple of the next-smaller stride, so no layout can
    /// decode positions in mixed radix.
    InverseNotDivisible {
        /// The stride that breaks the chain.
        stride: i64,
        /// The next-smaller stride.
        previous: i64,
    },
    /// A negative stride where the operation needs non-negative strides (complement),
    /// or strides of both signs (left inverse).
    NegativeStride {
        /// The offending stride.
        stride: i64,
    },
    /// Complement: the cosize bound must be at least 1.
    InvalidCosizeBound {
        /// The bound that was given.
        bound: i64,
    },
    /// A tiler, profile or coordinate has more modes than the layout it is applied to, or a
    /// coordinate tuple has a different rank than the shape mode it indexes.
    RankMismatch {
        /// Number of modes available in the layout (or shape mode).
        layout: usize,
        /// Number of modes in the argument.
        argument: usize,
    },
    /// A coordinate is a tuple where the shape is an integer.
    CoordNotCongruent,
    /// An operation needs a layout of a particular rank.
    WrongRank {
        /// The rank required.
        expected: usize,
        /// The rank found.
        found: usize,
    },
    /// Text could not be parsed.
    Parse {
        /// Byte offset in the text.
        offset: usize,
        /// What went wrong there.
        kind: ParseErrorKind,
    },
    /// A swizzle whose bit fields overlap (`|shift| < bits`) or do not fit 62 bits.
    InvalidSwizzle {
        /// Number of bits in the mask.
        bits: u32,
        /// Number of least-significant bits kept constant.
        base: u32,
        /// Distance the mask is shifted.
        shift: i32,
    },
    /// A thread arrangement with zero threads or zero items, or padding every zero elements.
    ZeroExtent,
    /// A warp-striped arrangement whose thread count is not a multiple of the warp width.
    NotWarpMultiple {
        /// Threads requested.
        threads: u32,
        /// Warp width.
        warp: u32,
    },
    /// Bank analysis supports elements of 1, 2, 4 or 8 bytes.
    UnsupportedElementSize {
        /// Bytes per element that were given.
        bytes: u32,
    },
    /// Bank analysis needs 1 to 32 lanes.
    InvalidLanes {
        /// Lanes that were given.
        lanes: u32,
    },
    /// The analysis would visit more points than its limit.
    TooLarge {
        /// Points it would visit.
        points: i64,
        /// The limit.
        limit: i64,
    },
}

impl LayoutError {
    pub(crate) const fn overflow(op: Op) -> Self {
        LayoutError::Overflow { op }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Op::Size => "size",
            Op::Offset => "offset",
            Op::Index => "index",
            Op::Composition => "composition",
            Op::Complement => "complement",
            Op::Product => "product",
            Op::Arrangement => "arrangement",
            Op::BankAddress => "bank address",
        };
        f.write_str(s)
    }
}

impl fmt::Display for ParseErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseErrorKind::UnexpectedEnd => f.write_str("unexpected end of input"),
            ParseErrorKind::UnexpectedChar(c) => write!(f, "unexpected character {c:?}"),
            ParseErrorKind::TrailingInput => f.write_str("unexpected input after the value"),
            ParseErrorKind::IntOverflow => f.write_str("integer does not fit i64"),
            ParseErrorKind::MissingColon => f.write_str("expected ':' between shape and stride"),
            ParseErrorKind::FreeNotAllowed => f.write_str("'_' is only allowed in coordinates"),
        }
    }
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use LayoutError as E;
        match self {
            E::NotCongruent {
                shape_leaves,
                stride_leaves,
            } => write!(
                f,
                "shape and stride are not congruent ({shape_leaves} vs {stride_leaves} integers)"
            ),
            E::NonPositiveExtent { extent } => write!(f, "shape extent {extent} is not positive"),
            E::TooDeep { limit } => write!(f, "nesting deeper than {limit} levels"),
            E::Overflow { op } => write!(f, "integer overflow in {op}"),
            E::StrideNotDivisible { stride, extent } => write!(
                f,
                "stride {stride} and mode extent {extent} do not divide one another"
            ),
            E::ShapeNotDivisible { extent, divisor } => {
                write!(f, "extent {extent} is not divisible by {divisor}")
            }
            E::ModesCarry { extent, reach } => write!(
                f,
                "right-hand modes reach {reach} in a mode of extent {extent} and would carry"
            ),
            E::MixedStrideSigns { positive, negative } => write!(
                f,
                "right-hand strides {positive} and {negative} of both signs share a mode"
            ),
            E::Overlapping { stride, span } => write!(
                f,
                "mode of stride {stride} starts inside the span {span} of smaller modes"
            ),
            E::InverseNotDivisible { stride, previous } => {
                write!(f, "stride {stride} is not a multiple of stride {previous}")
            }
            E::NegativeStride { stride } => write!(f, "negative stride {stride} not supported"),
            E::InvalidCosizeBound { bound } => write!(f, "cosize bound {bound} is less than 1"),
            E::RankMismatch { layout, argument } => write!(
                f,
                "argument has {argument} modes but the layout has {layout}"
            ),
            E::CoordNotCongruent => f.write_str("coordinate tuple where the shape is an integer"),
            E::WrongRank { expected, found } => {
                write!(
                    f,
                    "expected a layout of rank {expected}, found rank {found}"
                )
            }
            E::Parse { offset, kind } => write!(f, "parse error at byte {offset}: {kind}"),
            E::InvalidSwizzle { bits, base, shift } => write!(
                f,
                "invalid swizzle Sw<{bits},{base},{shift}>: needs |shift| >= bits and fits 62 bits"
            ),
            E::ZeroExtent => f.write_str("extent of zero"),
            E::NotWarpMultiple { threads, warp } => {
                write!(
                    f,
                    "{threads} threads is not a multiple of the warp width {warp}"
                )
            }
            E::UnsupportedElementSize { bytes } => {
                write!(f, "element size {bytes} bytes is not 1, 2, 4 or 8")
            }
            E::InvalidLanes { lanes } => write!(f, "{lanes} lanes is not in 1..=32"),
            E::TooLarge { points, limit } => {
                write!(f, "{points} points exceeds the analysis limit {limit}")
            }
        }
    }
}

impl std::error::Error for LayoutError {}

//! What the warp and block primitives built from other ops (segmented and batched warp
//! reductions, block histograms) may be asked that they cannot do (reported by the verifier).

use super::GroupKind;
use crate::ir::dtype::DType;
use std::fmt;

/// A primitive's controls that do not fit its inputs or its group
/// ([`VerifyErrorKind::Primitive`](crate::ir::VerifyErrorKind::Primitive)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PrimitiveProblem {
    /// A group of a kind the primitive does not run over (warp primitives take logical warps,
    /// block primitives the block).
    Group {
        /// The primitive.
        what: &'static str,
        /// The group's kind.
        kind: GroupKind,
    },
    /// A payload with another number of items per thread than the primitive takes.
    Items {
        /// The primitive.
        what: &'static str,
        /// Which input.
        input: &'static str,
        /// Its items per thread.
        items: u32,
        /// The items it must have.
        want: u32,
    },
    /// A control the primitive does not take (a valid count of a segmented reduction, say).
    Control {
        /// The primitive.
        what: &'static str,
        /// The control.
        control: &'static str,
    },
    /// An exclusive segmented scan without an initial value (each segment starts from it).
    NoInitialValue,
    /// A batched reduction of a count of values per thread that is not a power of two, or
    /// above the most a payload holds.
    BatchItems {
        /// Values per thread.
        items: u32,
        /// The most.
        max: u32,
    },
    /// A batched reduction over logical warps whose width does not divide the block: the
    /// block's last logical warp would be partial.
    PartialWarp {
        /// The logical warps' width.
        width: u32,
        /// The block's threads.
        threads: u32,
    },
    /// A run-length decode of 0 items per thread, or more than a payload holds.
    DecodedItems {
        /// Items asked for.
        items: u32,
        /// The most.
        max: u32,
    },
    /// A histogram of no bins, or of more bins than the samples' dtype has values.
    Bins {
        /// Bins asked for.
        bins: u32,
        /// Bits of the samples.
        sample_bits: u32,
    },
    /// Samples of a dtype a histogram does not take (it takes `u8`, `u16` and `u32`).
    SampleDtype {
        /// The samples' dtype.
        dtype: DType,
    },
    /// Counters of a dtype a histogram does not take (it counts in `u32` or `u64`).
    CounterDtype {
        /// The counters' dtype.
        dtype: DType,
    },
    /// A counters array shorter than the bins.
    CounterLength {
        /// Bins.
        bins: u32,
        /// The array's length.
        len: u32,
    },
}

impl fmt::Display for PrimitiveProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            PrimitiveProblem::Group { what, kind } => {
                write!(
                    f,
                    "{what} over a {kind:?} group: it does not run over such groups"
                )
            }
            PrimitiveProblem::Items {
                what,
                input,
                items,
                want,
            } => write!(
                f,
                "{what} with {items} items per thread of its {input}: it takes {want}"
            ),
            PrimitiveProblem::Control { what, control } => {
                write!(f, "{what} does not take {control}")
            }
            PrimitiveProblem::NoInitialValue => write!(
                f,
                "exclusive segmented scan without an initial value: each segment starts from it"
            ),
            PrimitiveProblem::BatchItems { items, max } => write!(
                f,
                "batched reduction of {items} values per thread: the count must be a power of \
                 two at most {max}"
            ),
            PrimitiveProblem::PartialWarp { width, threads } => write!(
                f,
                "batched reduction over logical warps of {width} in a block of {threads} \
                 threads: the width must divide the block"
            ),
            PrimitiveProblem::DecodedItems { items, max } => write!(
                f,
                "run-length decode of {items} items per thread: it takes 1..={max}"
            ),
            PrimitiveProblem::Bins { bins, sample_bits } => write!(
                f,
                "histogram of {bins} bins over {sample_bits}-bit samples: it takes 1..=2^{sample_bits} bins"
            ),
            PrimitiveProblem::SampleDtype { dtype } => write!(
                f,
                "histogram of {dtype:?} samples: samples are u8, u16 or u32"
            ),
            PrimitiveProblem::CounterDtype { dtype } => write!(
                f,
                "histogram into {dtype:?} counters: counters are u32 or u64"
            ),
            PrimitiveProblem::CounterLength { bins, len } => write!(
                f,
                "histogram of {bins} bins into a counters array of {len}: it needs one counter \
                 per bin"
            ),
        }
    }
}

//! What a block radix sort or rank may be asked that it cannot do (reported by the verifier).

use super::GroupKind;
use std::fmt;

/// A radix sort's or rank's controls that do not fit its keys or its group
/// ([`VerifyErrorKind::RadixSort`](crate::ir::VerifyErrorKind::RadixSort)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RadixSortProblem {
    /// A bit range that is empty (`begin >= end`) or reaches past the key's bits.
    BitRange {
        /// The first bit asked for.
        begin: u32,
        /// One past the last bit asked for.
        end: u32,
        /// The key's bits.
        key_bits: u32,
    },
    /// Digits of a width outside `1..=8` bits.
    RadixBits {
        /// The width asked for.
        bits: u32,
    },
    /// A group other than the block where only the block works: a rank of its own
    /// ([`radix_rank`](crate::KernelBuilder::radix_rank)), a rank by warp matches, a top-k.
    Group {
        /// The group's kind.
        kind: GroupKind,
    },
    /// Digits too wide for the block: the counters (`2^(bits - 1)` words per thread) would not
    /// fit in one shared array.
    Counters {
        /// The digit width asked for.
        bits: u32,
        /// Threads of the block.
        threads: u32,
        /// Counter words needed (with padding).
        words: u32,
        /// The most a sort's counters may take.
        max: u32,
    },
    /// A rank's counts asked for (each digit's count and first rank, `ceil(2^bits /
    /// threads)` a thread) that would take more items a thread than a payload holds.
    Counts {
        /// The digit width asked for.
        bits: u32,
        /// Threads of the group.
        threads: u32,
        /// Items a thread the counts would take.
        items: u32,
        /// The most a payload holds
        /// ([`MAX_ITEMS_PER_THREAD`](crate::ir::ops::MAX_ITEMS_PER_THREAD)).
        max: u32,
    },
    /// Ranking by warp matches in a block that is not whole warps.
    WholeWarps {
        /// Threads of the block.
        threads: u32,
    },
    /// Values with another number of items per thread than the keys.
    ValueItems {
        /// The keys' items per thread.
        keys: u32,
        /// The values' items per thread.
        values: u32,
    },
    /// Logical warps whose width does not divide the block's threads: the block's last one
    /// would be partial.
    PartialGroup {
        /// The logical warps' width.
        width: u32,
        /// The block's threads.
        block: u32,
    },
    /// A top-k whose `k` is 0 or more than the tile's keys.
    TopK {
        /// The `k` asked for.
        k: u32,
        /// The keys of the tile.
        tile: u32,
    },
    /// A top-k with digits outside `1..=8` bits.
    SelectBits {
        /// The width asked for.
        bits: u32,
    },
}

impl fmt::Display for RadixSortProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            RadixSortProblem::BitRange {
                begin,
                end,
                key_bits,
            } => write!(
                f,
                "radix sort over bits {begin}..{end} of {key_bits}-bit keys: the range must be \
                 non-empty and end at or below {key_bits}"
            ),
            RadixSortProblem::RadixBits { bits } => write!(
                f,
                "radix sort with {bits}-bit digits: digits take 1..=8 bits"
            ),
            RadixSortProblem::Group { kind } => write!(
                f,
                "radix rank or top-k over a {kind:?} group: a rank of its own, a rank by warp \
                 matches and a top-k take the block only"
            ),
            RadixSortProblem::Counters {
                bits,
                threads,
                words,
                max,
            } => write!(
                f,
                "radix sort with {bits}-bit digits over {threads} threads: its {words} counter \
                 words exceed the {max} a sort may take; take fewer bits per digit"
            ),
            RadixSortProblem::Counts {
                bits,
                threads,
                items,
                max,
            } => write!(
                f,
                "radix rank with counts of {bits}-bit digits over {threads} threads: the \
                 counts take {items} items a thread, more than the {max} a payload holds; take \
                 fewer bits per digit or more threads"
            ),
            RadixSortProblem::WholeWarps { threads } => write!(
                f,
                "radix rank by warp matches over {threads} threads: the match algorithm needs \
                 a block of whole warps"
            ),
            RadixSortProblem::ValueItems { keys, values } => write!(
                f,
                "radix sort of {keys} keys per thread with {values} values per thread: each \
                 key needs one value"
            ),
            RadixSortProblem::PartialGroup { width, block } => write!(
                f,
                "radix sort over logical warps of {width} lanes in a block of {block} threads: \
                 the width must divide the block's threads"
            ),
            RadixSortProblem::TopK { k, tile } => {
                write!(f, "top-{k} of a tile of {tile} keys: k must be 1..={tile}")
            }
            RadixSortProblem::SelectBits { bits } => write!(
                f,
                "top-k with {bits}-bit digits: a top-k's digits take 1..=8 bits"
            ),
        }
    }
}

/// A merge sort's group or inputs that it cannot sort
/// ([`VerifyErrorKind::MergeSort`](crate::ir::VerifyErrorKind::MergeSort)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MergeSortProblem {
    /// A group whose threads are not a power of two (the merge rounds pair runs of equal
    /// length): the block's threads, or a group of whole warps' (`32 * warps`).
    Threads {
        /// The group's kind.
        kind: GroupKind,
        /// The group's threads.
        threads: u32,
    },
    /// Logical warps whose width does not divide the block's threads: the block's last one
    /// would be partial.
    PartialGroup {
        /// The logical warps' width.
        width: u32,
        /// The block's threads.
        block: u32,
    },
    /// Values with another number of items per thread than the keys.
    ValueItems {
        /// The keys' items per thread.
        keys: u32,
        /// The values' items per thread.
        values: u32,
    },
}

impl fmt::Display for MergeSortProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            MergeSortProblem::Threads { kind, threads } => write!(
                f,
                "merge sort over a {kind:?} group of {threads} threads: the group's threads \
                 must be a power of two"
            ),
            MergeSortProblem::PartialGroup { width, block } => write!(
                f,
                "merge sort over logical warps of {width} lanes in a block of {block} threads: \
                 the width must divide the block's threads"
            ),
            MergeSortProblem::ValueItems { keys, values } => write!(
                f,
                "merge sort of {keys} keys per thread with {values} values per thread: each \
                 key needs one value"
            ),
        }
    }
}

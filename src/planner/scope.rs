//! Barrier scopes: which threads a barrier orders.
//!
//! The barrier pass (`barrier.rs`) never looks inside a scope: it asks whether a scope spans a
//! pair of threads (so that a barrier of it orders their accesses), whether one scope covers
//! another, how two scopes join, and whether a scope orders a whole block. A step offers the
//! scopes a barrier before it may take, narrowest first ([`super::Step::scopes`]); the pass
//! takes the first that spans every conflicting pair. A new scope (a named barrier over some
//! whole warps, a cluster, the grid) is a variant here with its answers to these questions,
//! the steps that offer it, and its lowering in codegen's builder (`sync_point`); the pass's
//! logic stays as it is.

/// Which threads a barrier synchronizes.
///
/// ```
/// use coopgraph::planner::SyncScope;
///
/// let warp = SyncScope::Group { threads: 32 };
/// assert!(warp.spans(3, 31) && !warp.spans(31, 32));
/// assert!(SyncScope::Block.covers(warp) && !warp.covers(SyncScope::Block));
/// assert_eq!(warp.join(SyncScope::Block), SyncScope::Block);
///
/// // Groups of 3 warps: threads 0..96, 96..192, ...
/// let three = SyncScope::Warps { warps: 3 };
/// assert!(three.spans(0, 95) && !three.spans(95, 96));
/// assert!(three.covers(warp) && !three.covers(SyncScope::Warps { warps: 2 }));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SyncScope {
    /// `bar.sync 0`: the whole block.
    Block,
    /// `bar.warp.sync` over each aligned group of `threads` lanes (1..=32) of one warp.
    Group {
        /// Threads per group.
        threads: u32,
    },
    /// A named barrier (`bar.sync id, 32 * warps`) over each group of `warps` consecutive
    /// whole warps, each group with an id of its own.
    Warps {
        /// Warps per group.
        warps: u32,
    },
}

impl SyncScope {
    /// Whether threads `a` and `b` of the block lie in one group of this scope, so that a
    /// barrier of it orders their accesses.
    pub fn spans(self, a: u32, b: u32) -> bool {
        match self {
            SyncScope::Block => true,
            SyncScope::Group { threads } => threads > 0 && a / threads == b / threads,
            SyncScope::Warps { warps } => {
                let threads = warps.saturating_mul(32);
                threads > 0 && a / threads == b / threads
            }
        }
    }

    /// Whether every group of `other` lies inside one group of this scope.
    pub fn covers(self, other: SyncScope) -> bool {
        match (self.threads(), other.threads()) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(a), Some(b)) => b > 0 && a.is_multiple_of(b),
        }
    }

    /// What an access is ordered within after barriers of both scopes: the one that covers
    /// the other, or (where neither does) the one of more threads. Either alone is sound;
    /// this keeps the one that orders more pairs.
    pub fn join(self, other: SyncScope) -> SyncScope {
        if self.covers(other) {
            return self;
        }
        if other.covers(self) {
            return other;
        }
        match (self.threads(), other.threads()) {
            (Some(a), Some(b)) if b > a => other,
            _ => self,
        }
    }

    /// Threads per group, or `None` for a scope of the whole block (or wider).
    pub fn threads(self) -> Option<u32> {
        match self {
            SyncScope::Block => None,
            SyncScope::Group { threads } => Some(threads),
            SyncScope::Warps { warps } => Some(warps.saturating_mul(32)),
        }
    }
}

//! Where each payload slot holds a value: the verifier's definedness lattice.
//!
//! A slot is undefined, defined only at some threads, or defined at every thread:
//!
//! ```text
//!              everywhere
//!             /          \
//!   at group rank 0    where scattered
//!    (of width W)         (partial)
//!             \          /
//!              undefined
//! ```
//!
//! A reduction without broadcast leaves its result defined at rank 0 of each group of `W`
//! threads (threads whose rank is a multiple of `W`; `W` is the block for a block reduction);
//! a scatter without a hole value leaves its result defined only where something was
//! scattered. Element-wise ops carry the weakest state of what they read; paths meet at the
//! weaker state. Under a branch on `group.rank() == 0` only rank-0 threads run, so there a
//! value defined at rank 0 reads as defined, and writes there join the other path's state on
//! the merge (`out = 0; if rank == 0 { out = r }` is defined everywhere).

use super::entities::{ExprId, OpId};
use super::expr::{BinaryOp, CmpOp, ExprKind, IndexKind};
use super::ops::Ir;

/// The definedness of one slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Def {
    /// No value on some path.
    Undef,
    /// A value only where the scatter `by` put one (or at threads unknown).
    Partial {
        /// The scatter.
        by: OpId,
    },
    /// A value at the threads whose rank is a multiple of `width`.
    RankZero {
        /// The group width.
        width: u32,
        /// The op that made it so (a reduction, or a branch on the rank).
        by: OpId,
    },
    /// A value at every thread.
    Everywhere,
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The least common multiple, saturating at `u32::MAX` (a width no thread rank reaches).
pub(crate) fn lcm(a: u32, b: u32) -> u32 {
    if a == 0 || b == 0 {
        return a.max(b);
    }
    (a / gcd(a, b)).saturating_mul(b)
}

impl Def {
    /// The state on a merge of two paths (or of two operands): defined where both are.
    pub(crate) fn meet(self, other: Def) -> Def {
        use Def::*;
        match (self, other) {
            (Undef, _) | (_, Undef) => Undef,
            (Everywhere, x) | (x, Everywhere) => x,
            (p @ Partial { .. }, _) | (_, p @ Partial { .. }) => p,
            (RankZero { width: a, by }, RankZero { width: b, .. }) => RankZero {
                width: lcm(a, b),
                by,
            },
        }
    }

    /// Whether every thread of a context holds a value: all threads (`context` 0), or the
    /// threads whose rank is a multiple of `context`.
    pub(crate) fn readable(self, context: u32) -> bool {
        match self {
            Def::Everywhere => true,
            Def::RankZero { width, .. } => context != 0 && context.is_multiple_of(width),
            _ => false,
        }
    }

    /// The state after a branch on rank 0 of groups (inside a context of `outer`, 0 for all
    /// threads): `self` holds where the branch ran, `other` at the rest; `then_ctx` is the
    /// context inside the branch, `by` the branch. With `every` the branch ran at every
    /// rank-0 thread of the context (its condition is the rank test alone); else at some of
    /// them (the test joined with others by `and`).
    pub(crate) fn merge_rank_zero(
        self,
        other: Def,
        Branch {
            then_ctx,
            outer,
            every,
            by,
        }: Branch,
    ) -> Def {
        if !self.readable(then_ctx) {
            return self.meet(other);
        }
        if other.readable(outer) {
            return other;
        }
        match other {
            // Defined at the rank-0 threads of narrower groups: all of these and more.
            Def::RankZero { width, .. } if then_ctx % width == 0 => other,
            // Rank-0 threads that did not take the branch hold `other`'s value, or none.
            _ if !every => self.meet(other),
            _ => Def::RankZero {
                width: then_ctx,
                by,
            },
        }
    }
}

/// A branch on rank 0, for [`Def::merge_rank_zero`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Branch {
    /// The context inside the branch.
    pub(crate) then_ctx: u32,
    /// The context around it (0: every thread).
    pub(crate) outer: u32,
    /// Whether every rank-0 thread of the context takes it.
    pub(crate) every: bool,
    /// The branch.
    pub(crate) by: OpId,
}

/// A condition that holds only at rank 0 of groups of `width` threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RankTest {
    /// The group width.
    pub(crate) width: u32,
    /// Whether it holds at every such thread (the test alone, not joined with others).
    pub(crate) every: bool,
}

/// Per payload, the state of each slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct State {
    /// Where each payload's slots start in `slots`.
    start: Vec<u32>,
    slots: Vec<Def>,
}

impl State {
    /// Every slot of every payload of `ir` undefined.
    pub(crate) fn new(ir: &Ir) -> State {
        let mut start = Vec::with_capacity(ir.datas.len() + 1);
        let mut n = 0u32;
        for d in &ir.datas {
            start.push(n);
            n = n.saturating_add(d.items.min(super::ops::MAX_ITEMS_PER_THREAD));
        }
        start.push(n);
        State {
            start,
            slots: vec![Def::Undef; n as usize],
        }
    }

    fn range(&self, data: usize) -> std::ops::Range<usize> {
        self.start[data] as usize..self.start[data + 1] as usize
    }

    /// The slots of payload `data`.
    pub(crate) fn of(&self, data: usize) -> &[Def] {
        &self.slots[self.range(data)]
    }

    /// Slot `item` of payload `data` (undefined past its items).
    pub(crate) fn get(&self, data: usize, item: u32) -> Def {
        self.of(data)
            .get(item as usize)
            .copied()
            .unwrap_or(Def::Undef)
    }

    /// Sets slot `item` of payload `data` (ignored past its items).
    pub(crate) fn set(&mut self, data: usize, item: u32, def: Def) {
        let r = self.range(data);
        if let Some(s) = self.slots[r].get_mut(item as usize) {
            *s = def;
        }
    }

    /// Sets every slot of payload `data`.
    pub(crate) fn set_all(&mut self, data: usize, def: Def) {
        let r = self.range(data);
        self.slots[r].fill(def);
    }

    /// Each slot becomes `f(self's, other's)`.
    pub(crate) fn combine(&mut self, other: &State, f: impl Fn(Def, Def) -> Def) {
        for (a, &b) in self.slots.iter_mut().zip(&other.slots) {
            *a = f(*a, b);
        }
    }
}

/// If `cond` is `rank == 0` for a group (in the forms [`crate::ir::Group::rank`] gives: the
/// thread's rank for the block, its lane for a warp, `rank % width` for a logical warp), or
/// such a test joined with others by `and`, the width of the groups: only their rank-0
/// threads take the branch.
pub(crate) fn rank_zero_test(ir: &Ir, cond: ExprId) -> Option<RankTest> {
    let kind = |e: ExprId| &ir.expr(e).kind;
    let zero = |e: ExprId| matches!(kind(e), ExprKind::Const(0));
    let rank = |e: ExprId| match kind(e) {
        ExprKind::Index(IndexKind::ThreadRank) => Some(ir.block_threads().max(1)),
        ExprKind::Index(IndexKind::Lane) => Some(32),
        ExprKind::Binary(BinaryOp::Rem, a, b) => match (kind(*a), kind(*b)) {
            (ExprKind::Index(IndexKind::ThreadRank), ExprKind::Const(w))
                if *w > 0 && *w <= u64::from(u32::MAX) =>
            {
                Some(*w as u32)
            }
            _ => None,
        },
        _ => None,
    };
    // An explicit stack: conditions can be deep; each node once, as an `and` may take one
    // condition twice (a chain of `c.and(c)` has 2^n paths through n nodes).
    let mut stack = vec![cond];
    let mut seen = rustc_hash::FxHashSet::default();
    let mut width: Option<u32> = None;
    while let Some(e) = stack.pop() {
        if !seen.insert(e) {
            continue;
        }
        match kind(e) {
            ExprKind::Cmp(CmpOp::Eq, a, b) => {
                let w = if zero(*b) {
                    rank(*a)
                } else if zero(*a) {
                    rank(*b)
                } else {
                    None
                };
                if let Some(w) = w {
                    width = Some(width.map_or(w, |v| lcm(v, w)));
                }
            }
            ExprKind::Binary(BinaryOp::And, a, b) => {
                stack.push(*a);
                stack.push(*b);
            }
            _ => {}
        }
    }
    width.map(|width| RankTest {
        width,
        every: !matches!(kind(cond), ExprKind::Binary(BinaryOp::And, ..)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Expr, Group, GroupKind, KernelBuilder, Loc, index};

    const R: OpId = OpId(1);
    const S: OpId = OpId(2);
    const IF: OpId = OpId(3);

    fn zero(width: u32) -> Def {
        Def::RankZero { width, by: R }
    }

    #[test]
    fn meet_is_the_weaker_state() {
        let all = [Def::Undef, Def::Partial { by: S }, zero(8), Def::Everywhere];
        for &a in &all {
            assert_eq!(a.meet(Def::Everywhere), a);
            assert_eq!(a.meet(Def::Undef), Def::Undef);
            for &b in &all {
                assert_eq!(a.meet(b), b.meet(a), "{a:?} {b:?}");
            }
        }
        assert_eq!(zero(8).meet(Def::Partial { by: S }), Def::Partial { by: S });
        // Rank 0 of groups of 8 and of 32: the threads at multiples of 32.
        assert_eq!(zero(8).meet(zero(32)), zero(32));
        assert_eq!(zero(6).meet(zero(4)), zero(12));
    }

    #[test]
    fn rank_zero_values_are_readable_at_rank_zero_only() {
        assert!(!zero(8).readable(0));
        assert!(zero(8).readable(8));
        assert!(zero(8).readable(64));
        assert!(!zero(64).readable(8));
        assert!(Def::Everywhere.readable(0));
        assert!(!Def::Partial { by: S }.readable(64));
    }

    #[test]
    fn a_branch_on_rank_zero_joins_the_other_path() {
        let branch = |every| Branch {
            then_ctx: 32,
            outer: 0,
            every,
            by: IF,
        };
        for every in [true, false] {
            // `out = 0; if rank == 0 { out = r }`: defined everywhere.
            let b = branch(every);
            assert_eq!(
                zero(32).merge_rank_zero(Def::Everywhere, b),
                Def::Everywhere
            );
            // Written at rank 0 of narrower groups before: those threads and more.
            assert_eq!(zero(32).merge_rank_zero(zero(8), b), zero(8));
            // Nothing the branch made readable: the weaker state.
            assert_eq!(zero(64).merge_rank_zero(Def::Everywhere, b), zero(64));
        }
        // Written only under the branch: at rank 0 when every rank 0 takes it.
        let at_zero = Def::RankZero { width: 32, by: IF };
        assert_eq!(zero(32).merge_rank_zero(Def::Undef, branch(true)), at_zero);
        assert_eq!(
            Def::Everywhere.merge_rank_zero(Def::Undef, branch(true)),
            at_zero
        );
        assert_eq!(
            zero(32).merge_rank_zero(Def::Undef, branch(false)),
            Def::Undef
        );
    }

    #[test]
    fn rank_tests_of_every_group_kind() {
        let k = KernelBuilder::new("k").block(128);
        let mut ir = k.ir().clone();
        let mut test = |cond: Expr<bool>| {
            let e = ir.exprs.intern(cond.node());
            rank_zero_test(&ir, e)
        };
        let group = |kind| Group {
            kind,
            loc: Loc::caller(),
        };
        let block = group(GroupKind::Block);
        let at = |width, every| Some(RankTest { width, every });
        assert_eq!(test(block.rank().eq(0u32)), at(128, true));
        for w in [1, 8, 32] {
            let g = group(GroupKind::LogicalWarp { width: w });
            assert_eq!(test(g.rank().eq(0u32)), at(w, true));
        }
        let other = index::thread_rank().gt(4u32);
        assert_eq!(test(block.rank().eq(0u32) & other.clone()), at(128, false));
        assert_eq!(test(block.rank().eq(1u32)), None);
        assert_eq!(test(block.rank().eq(0u32) | other), None);
    }
}

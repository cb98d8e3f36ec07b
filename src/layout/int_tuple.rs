//! The recursive integer tuple that shapes, strides and coordinates are made of.
//!
//! An [`IntTuple`] is either an `i64` or a tuple of int-tuples. Its nesting depth never
//! exceeds [`MAX_DEPTH`]: the only way to build a tuple, [`IntTuple::tuple`], checks it, so
//! every recursive function here and in the rest of the algebra runs in bounded stack.

use smallvec::SmallVec;

use super::MAX_DEPTH;
use super::error::{LayoutError, Op};

/// An integer or a (possibly empty, possibly nested) tuple of int-tuples, CuTe's `IntTuple`.
///
/// Values are `i64`: extents, strides, offsets and coordinates all share one type, so that
/// negative strides and offsets need no conversions. The nesting depth is at most
/// [`MAX_DEPTH`]; a one-element tuple `(4)` differs from the integer `4`.
///
/// ```
/// use coopgraph::layout::IntTuple;
/// let t: IntTuple = "((2,2),3)".parse().unwrap();
/// assert_eq!(t.rank(), 2);
/// assert_eq!(t.depth(), 2);
/// assert_eq!(t.product(), Some(12));
/// assert_eq!(t.leaves().collect::<Vec<_>>(), vec![2, 2, 3]);
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct IntTuple(Node);

#[derive(Clone, PartialEq, Eq, Hash)]
enum Node {
    Int(i64),
    Tuple { items: Vec<IntTuple>, depth: u8 },
}

impl IntTuple {
    /// The integer `v`.
    pub const fn int(v: i64) -> IntTuple {
        IntTuple(Node::Int(v))
    }

    /// The tuple of `items`; fails with [`LayoutError::TooDeep`] if it would nest deeper than
    /// [`MAX_DEPTH`].
    pub fn tuple(items: impl IntoIterator<Item = IntTuple>) -> Result<IntTuple, LayoutError> {
        let items: Vec<IntTuple> = items.into_iter().collect();
        let depth = 1 + items.iter().map(IntTuple::depth).max().unwrap_or(0);
        if depth > MAX_DEPTH {
            return Err(LayoutError::TooDeep { limit: MAX_DEPTH });
        }
        // MAX_DEPTH fits u8 (checked by a const assertion in `mod.rs`).
        Ok(IntTuple(Node::Tuple {
            items,
            depth: depth as u8,
        }))
    }

    /// The flat tuple of `ints` (depth 1).
    pub fn flat(ints: impl IntoIterator<Item = i64>) -> IntTuple {
        let items = ints.into_iter().map(IntTuple::int).collect();
        IntTuple(Node::Tuple { items, depth: 1 })
    }

    /// The empty tuple `()`, whose product is 1.
    pub fn empty() -> IntTuple {
        IntTuple(Node::Tuple {
            items: Vec::new(),
            depth: 1,
        })
    }

    /// Whether this is an integer (not a tuple).
    pub fn is_int(&self) -> bool {
        matches!(self.0, Node::Int(_))
    }

    /// The integer, if this is one.
    pub fn as_int(&self) -> Option<i64> {
        match self.0 {
            Node::Int(v) => Some(v),
            Node::Tuple { .. } => None,
        }
    }

    /// The items, if this is a tuple.
    pub fn as_tuple(&self) -> Option<&[IntTuple]> {
        match &self.0 {
            Node::Int(_) => None,
            Node::Tuple { items, .. } => Some(items),
        }
    }

    /// Number of top-level modes: 1 for an integer, the length for a tuple.
    pub fn rank(&self) -> usize {
        match &self.0 {
            Node::Int(_) => 1,
            Node::Tuple { items, .. } => items.len(),
        }
    }

    /// Nesting depth: 0 for an integer, 1 + the deepest item for a tuple (1 for `()`).
    pub fn depth(&self) -> usize {
        match &self.0 {
            Node::Int(_) => 0,
            Node::Tuple { depth, .. } => usize::from(*depth),
        }
    }

    /// Mode `i`: item `i` of a tuple; an integer is its own mode 0.
    pub fn mode(&self, i: usize) -> Option<&IntTuple> {
        match &self.0 {
            Node::Int(_) => (i == 0).then_some(self),
            Node::Tuple { items, .. } => items.get(i),
        }
    }

    /// The integers in depth-first order.
    pub fn leaves(&self) -> Leaves<'_> {
        let mut stack = SmallVec::new();
        let single = match &self.0 {
            Node::Int(v) => Some(*v),
            Node::Tuple { items, .. } => {
                stack.push(items.iter());
                None
            }
        };
        Leaves { single, stack }
    }

    /// Number of integers.
    pub fn leaf_count(&self) -> usize {
        match &self.0 {
            Node::Int(_) => 1,
            Node::Tuple { items, .. } => items.iter().map(IntTuple::leaf_count).sum(),
        }
    }

    /// Product of all integers (1 for `()`), or `None` on overflow.
    pub fn product(&self) -> Option<i64> {
        match &self.0 {
            Node::Int(v) => Some(*v),
            Node::Tuple { items, .. } => items
                .iter()
                .try_fold(1i64, |acc, t| acc.checked_mul(t.product()?)),
        }
    }

    /// Append the integers, depth-first, to `out` (the recursive form of [`Self::leaves`]).
    pub(crate) fn push_leaves(&self, out: &mut SmallVec<[i64; 8]>) {
        match &self.0 {
            Node::Int(v) => out.push(*v),
            Node::Tuple { items, .. } => items.iter().for_each(|t| t.push_leaves(out)),
        }
    }

    /// The items of a tuple, or the integer back.
    pub(crate) fn into_items(self) -> Result<Vec<IntTuple>, IntTuple> {
        match self.0 {
            Node::Tuple { items, .. } => Ok(items),
            Node::Int(_) => Err(self),
        }
    }

    /// The flat tuple of the leaves; an integer stays an integer.
    pub fn flatten(&self) -> IntTuple {
        match &self.0 {
            Node::Int(_) => self.clone(),
            Node::Tuple { .. } => {
                let mut leaves = SmallVec::new();
                self.push_leaves(&mut leaves);
                IntTuple::flat(leaves)
            }
        }
    }

    /// Whether `self` and `other` have the same nesting structure (values may differ).
    pub fn congruent(&self, other: &IntTuple) -> bool {
        match (&self.0, &other.0) {
            (Node::Int(_), Node::Int(_)) => true,
            (Node::Tuple { items: a, .. }, Node::Tuple { items: b, .. }) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.congruent(y))
            }
            _ => false,
        }
    }

    /// The same structure with every integer replaced by `f(integer)`.
    pub fn map_leaves(&self, f: &mut impl FnMut(i64) -> i64) -> IntTuple {
        match &self.0 {
            Node::Int(v) => IntTuple::int(f(*v)),
            Node::Tuple { items, depth } => IntTuple(Node::Tuple {
                items: items.iter().map(|t| t.map_leaves(f)).collect(),
                depth: *depth,
            }),
        }
    }

    /// The same structure with its integers taken in order from `values`; `None` if
    /// `values` has too few.
    pub fn with_leaves(&self, values: &mut impl Iterator<Item = i64>) -> Option<IntTuple> {
        match &self.0 {
            Node::Int(_) => values.next().map(IntTuple::int),
            Node::Tuple { items, depth } => {
                let items = items
                    .iter()
                    .map(|t| t.with_leaves(values))
                    .collect::<Option<Vec<_>>>()?;
                Some(IntTuple(Node::Tuple {
                    items,
                    depth: *depth,
                }))
            }
        }
    }

    /// Column-major (CuTe `LayoutLeft`) strides of this shape, starting at `start`: each
    /// integer's stride is `start` times the product of the integers before it.
    pub(crate) fn compact_left(&self, start: i64) -> Result<IntTuple, LayoutError> {
        let mut current = start;
        let mut next = |extent: i64| {
            let stride = current;
            current = current.saturating_mul(extent);
            stride
        };
        let strides = self.map_leaves(&mut next);
        // Each stride must fit; the last running product is a stride only up to the
        // last leaf, so check the product of all but the last one.
        let mut leaves = SmallVec::new();
        self.push_leaves(&mut leaves);
        leaves.pop();
        leaves
            .iter()
            .try_fold(start, |acc, &e| acc.checked_mul(e))
            .ok_or(LayoutError::overflow(Op::Size))?;
        Ok(strides)
    }

    /// Row-major (CuTe `LayoutRight`) strides of this shape: the last integer has stride 1.
    pub(crate) fn compact_right(&self) -> Result<IntTuple, LayoutError> {
        let mut leaves = SmallVec::new();
        self.push_leaves(&mut leaves);
        let mut strides: SmallVec<[i64; 8]> = SmallVec::from_elem(0, leaves.len());
        let mut current = 1i64;
        for (i, &extent) in leaves.iter().enumerate().rev() {
            strides[i] = current;
            if i > 0 {
                current = current
                    .checked_mul(extent)
                    .ok_or(LayoutError::overflow(Op::Size))?;
            }
        }
        Ok(self
            .with_leaves(&mut strides.into_iter())
            .unwrap_or_else(|| self.clone()))
    }
}

impl From<i64> for IntTuple {
    fn from(v: i64) -> IntTuple {
        IntTuple::int(v)
    }
}

impl std::fmt::Debug for IntTuple {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// Iterator over the integers of an [`IntTuple`], depth-first; see [`IntTuple::leaves`].
#[derive(Clone, Debug)]
pub struct Leaves<'a> {
    single: Option<i64>,
    stack: SmallVec<[std::slice::Iter<'a, IntTuple>; 8]>,
}

impl Iterator for Leaves<'_> {
    type Item = i64;

    fn next(&mut self) -> Option<i64> {
        if let Some(v) = self.single.take() {
            return Some(v);
        }
        loop {
            let top = self.stack.last_mut()?;
            match top.next() {
                None => {
                    self.stack.pop();
                }
                Some(t) => match &t.0 {
                    Node::Int(v) => return Some(*v),
                    Node::Tuple { items, .. } => self.stack.push(items.iter()),
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> IntTuple {
        s.parse().expect("valid int-tuple")
    }

    #[test]
    fn structure_queries() {
        assert_eq!(t("5").rank(), 1);
        assert_eq!(t("5").depth(), 0);
        assert_eq!(t("()").rank(), 0);
        assert_eq!(t("()").depth(), 1);
        assert_eq!(t("()").product(), Some(1));
        assert_eq!(t("(4)").rank(), 1);
        assert_ne!(t("(4)"), t("4"));
        assert_eq!(t("((2,(3,())),4)").depth(), 4);
        assert_eq!(t("((2,(3,())),4)").leaf_count(), 3);
        assert_eq!(t("((2,(3,())),4)").flatten(), t("(2,3,4)"));
        assert!(t("((1,2),3)").congruent(&t("((5,6),7)")));
        assert!(!t("((1,2),3)").congruent(&t("(5,6,7)")));
        assert_eq!(t("(2,3)").mode(1), Some(&t("3")));
        assert_eq!(t("7").mode(0), Some(&t("7")));
        assert_eq!(t("7").mode(1), None);
    }

    #[test]
    fn depth_is_bounded() {
        let mut x = IntTuple::int(1);
        for _ in 0..MAX_DEPTH {
            x = IntTuple::tuple([x]).expect("within the limit");
        }
        assert_eq!(x.depth(), MAX_DEPTH);
        assert_eq!(
            IntTuple::tuple([x]),
            Err(LayoutError::TooDeep { limit: MAX_DEPTH })
        );
    }

    #[test]
    fn compact_strides() {
        assert_eq!(t("((2,3),4)").compact_left(1), Ok(t("((1,2),6)")));
        assert_eq!(t("((2,3),4)").compact_right(), Ok(t("((12,4),1)")));
        assert_eq!(t("(3,4)").compact_left(5), Ok(t("(5,15)")));
        assert!(t("(4611686018427387904,4,1)").compact_left(1).is_err());
        assert_eq!(t("(2,4611686018427387904)").compact_left(1), Ok(t("(1,2)")));
    }

    #[test]
    fn product_overflow_is_none() {
        assert_eq!(t("(4294967296,4294967296)").product(), None);
    }
}

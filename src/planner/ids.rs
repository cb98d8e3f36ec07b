//! The plan's entities and its side tables: [`SliceId`] names a region of shared memory,
//! [`StepId`] one step of an op's shared-memory work, and [`IdVec`] is a table with one entry
//! per entity, indexed by the entity (as Cranelift's `SecondaryMap`), so that a table of ops
//! cannot be read with a payload's index.

use crate::ir::{ArrayId, DataId, OpId, StorageId};
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

/// An entity that keys a side table: a dense index from 0.
pub trait Key: Copy {
    /// The entity at `index`.
    fn new(index: usize) -> Self;
    /// Its index.
    fn index(self) -> usize;
}

macro_rules! ir_keys {
    ($($name:ident),*) => {$(
        impl Key for $name {
            fn new(index: usize) -> Self {
                $name(index as u32)
            }
            fn index(self) -> usize {
                $name::index(self)
            }
        }
    )*};
}

ir_keys!(OpId, DataId, ArrayId, StorageId);

/// A region of shared memory the planner placed (`slice0`): an index into
/// [`Plan::slices`](super::Plan::slices).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SliceId(pub(crate) u32);

impl Key for SliceId {
    fn new(index: usize) -> Self {
        SliceId(index as u32)
    }
    fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for SliceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "slice{}", self.0)
    }
}

/// One step of an op's shared-memory work (`op3.s1`): the op, and the step's place in the op's
/// list ([`Plan::steps`](super::Plan::steps)). Barriers stand before steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StepId {
    /// The op.
    pub op: OpId,
    /// Its place among the op's steps, from 0.
    pub index: u32,
}

impl fmt::Display for StepId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.s{}", self.op, self.index)
    }
}

/// A table with one `V` per entity `K`, indexed by the entity.
///
/// ```
/// use coopgraph::{KernelBuilder, Load, Store};
///
/// # fn main() -> Result<(), coopgraph::Error> {
/// let mut k = KernelBuilder::new("copy").block(64).items_per_thread(2);
/// let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
/// let b = k.this_block();
/// let t = k.load_from(b, &x, Load::transpose());
/// k.store_to(b, &y, &t, Store::direct());
/// let kernel = k.build()?;
/// // One entry per op; the load's is its transfer plan.
/// let (load, plan) = kernel.plan().transfers().iter().find_map(|(op, t)| Some((op, t.as_ref()?))).unwrap();
/// assert_eq!(kernel.plan().transfers()[load].as_ref(), Some(plan));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct IdVec<K, V> {
    items: Vec<V>,
    key: PhantomData<fn(K) -> K>,
}

impl<K: Key, V> IdVec<K, V> {
    /// An empty table.
    pub(crate) fn new() -> Self {
        Self::from(Vec::new())
    }

    /// `n` entries, each `v`.
    pub(crate) fn filled(n: usize, v: V) -> Self
    where
        V: Clone,
    {
        Self::from(vec![v; n])
    }

    /// Appends `v`; returns its entity.
    pub(crate) fn push(&mut self, v: V) -> K {
        self.items.push(v);
        K::new(self.items.len() - 1)
    }

    /// The entry of `k`, if the table has one.
    pub fn get(&self, k: K) -> Option<&V> {
        self.items.get(k.index())
    }

    /// Entries.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the table has no entry.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Each entity with its entry, in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (K, &V)> + ExactSizeIterator {
        self.items.iter().enumerate().map(|(i, v)| (K::new(i), v))
    }

    /// The entries, in order of their entities.
    pub fn values(&self) -> std::slice::Iter<'_, V> {
        self.items.iter()
    }

    /// Drops the entries from `k` on.
    #[cfg(test)]
    pub(crate) fn truncate(&mut self, k: K) {
        self.items.truncate(k.index());
    }

    /// Drops every entry.
    #[cfg(test)]
    pub(crate) fn clear(&mut self) {
        self.items.clear();
    }
}

impl<K, V> From<Vec<V>> for IdVec<K, V> {
    fn from(items: Vec<V>) -> Self {
        IdVec {
            items,
            key: PhantomData,
        }
    }
}

impl<K: Key, V> Default for IdVec<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Key, V> Index<K> for IdVec<K, V> {
    type Output = V;

    fn index(&self, k: K) -> &V {
        &self.items[k.index()]
    }
}

impl<K: Key, V> IndexMut<K> for IdVec<K, V> {
    fn index_mut(&mut self, k: K) -> &mut V {
        &mut self.items[k.index()]
    }
}

impl<K: Key + fmt::Debug, V: fmt::Debug> fmt::Debug for IdVec<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

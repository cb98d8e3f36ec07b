//! The small kernels of the collectives and the multi-rank algorithms, built with the public
//! builder: the element-wise combine (`acc[i] = acc[i] op other[base + i * stride]`) and the
//! sort's partition (where each splitter falls in a sorted run, by binary search).

use super::{CommElement, ReduceOp};
use crate::algorithms::SortKey;
use crate::ir::{Expr, SortOrder, index};
use crate::runtime::{Buffer, Device, Function};
use crate::{Error, Kernel, KernelBuilder};

/// Threads per block of the combine kernel.
const COMBINE_BLOCK: u32 = 128;

/// `acc[i] = acc[i] op other[base + i * stride]` for `i < n`: with stride 1 the element-wise
/// combine of two buffers, with stride 0 the same value (`other[base]`) joined to every
/// element.
pub(crate) fn combine<T: CommElement>(op: ReduceOp) -> Result<Kernel, Error> {
    let mut k = KernelBuilder::new("multi_combine").block(COMBINE_BLOCK);
    let acc = k.buffer::<T>("acc");
    let other = k.input::<T>("other");
    let (n, base, stride) = (
        k.scalar::<u32>("n"),
        k.scalar::<u32>("base"),
        k.scalar::<u32>("stride"),
    );
    let i = index::block_index() * index::block_threads() + index::thread_rank();
    k.if_(i.lt(n.expr()), |k| {
        let (a, b) = (
            acc.at(i.clone()),
            other.at(base.expr() + i.clone() * stride.expr()),
        );
        let v = match op {
            ReduceOp::Sum => a + b,
            ReduceOp::Prod => a * b,
            ReduceOp::Min => a.min(b),
            ReduceOp::Max => a.max(b),
        };
        k.write(&acc, i.clone(), v);
    });
    k.build()
}

/// How the combine kernel reads `other`.
#[derive(Clone, Copy)]
pub(crate) enum Operand {
    /// Element `i` with element `i`.
    Elementwise,
    /// Every element with `other[at]`.
    One {
        /// The element of `other`.
        at: usize,
    },
}

/// Launches a compiled combine kernel over the first `n` elements of `acc`.
pub(crate) fn launch_combine<T: CommElement>(
    f: &Function,
    acc: &mut Buffer<T>,
    other: &Buffer<T>,
    n: usize,
    operand: Operand,
) -> Result<(), Error> {
    if n == 0 {
        return Ok(());
    }
    let (base, stride) = match operand {
        Operand::Elementwise => (0, 1u32),
        Operand::One { at } => (at, 0u32),
    };
    let blocks = n.div_ceil(COMBINE_BLOCK as usize);
    let (n, base, blocks) = (to_u32(n)?, to_u32(base)?, to_u32(blocks)?);
    f.launch_grid(blocks, (acc, other, n, base, stride))?;
    Ok(())
}

/// `n` as a `u32` (element counts and indices of one call are 32-bit), or
/// [`AlgorithmError::TooLong`](crate::algorithms::AlgorithmError::TooLong).
pub(crate) fn to_u32(n: usize) -> Result<u32, Error> {
    u32::try_from(n).map_err(|_| {
        let max = u32::MAX as usize;
        crate::algorithms::AlgorithmError::TooLong { len: n, max }.into()
    })
}

/// The key's sort bits (the order the radix sort sorts by), zero-extended to 64 bits.
fn sort_bits<K: SortKey>(key: &Expr<K>) -> Expr<u64> {
    let bits = K::DTYPE.bytes() * 8;
    let mut acc = Expr::lit(0u64);
    for shift in (0..bits).step_by(8) {
        let digit = K::digit(key, shift, 8, SortOrder::Ascending).cast::<u64>();
        acc = acc | (digit << shift);
    }
    acc
}

/// Threads per block of the partition kernel.
const SPLIT_BLOCK: u32 = 32;

/// `bounds[j]` = the number of keys of the sorted `keys` (of `n`) whose sort bits are at most
/// those of `splitters[j]`, for `j < m`: the upper bound of each splitter, by binary search.
pub(crate) fn split<K: SortKey>() -> Result<Kernel, Error> {
    let mut k = KernelBuilder::new("multi_split").block(SPLIT_BLOCK);
    let keys = k.input::<K>("keys");
    let splitters = k.input::<K>("splitters");
    let bounds = k.output::<u32>("bounds");
    let (n, m) = (k.scalar::<u32>("n"), k.scalar::<u32>("m"));
    let j = index::block_index() * index::block_threads() + index::thread_rank();
    k.if_(j.lt(m.expr()), |k| {
        let s = sort_bits(&splitters.at(j.clone()));
        let lo = k.var(0u32);
        let hi = k.var(n.expr());
        k.while_(lo.get().lt(hi.get()), |k| {
            let mid = lo.get() + (hi.get() - lo.get()) / 2u32;
            k.if_else(
                sort_bits(&keys.at(mid.clone())).le(s.clone()),
                |k| k.set(&lo, mid.clone() + 1u32),
                |k| k.set(&hi, mid.clone()),
            );
        });
        k.write(&bounds, j.clone(), lo.get());
    });
    k.build()
}

/// The upper bounds of `splitters` in the sorted `keys`, all on `device`: one `u32` per
/// splitter, read back to the host (the counts of the exchange).
pub(crate) fn run_split<K: SortKey>(
    device: &Device,
    kernel: &Kernel,
    keys: &Buffer<K>,
    splitters: &Buffer<K>,
) -> Result<Vec<usize>, Error> {
    let m = splitters.len();
    if m == 0 {
        return Ok(Vec::new());
    }
    let f = device.compile(kernel)?;
    let mut bounds = device.alloc_zeroed::<u32>(m)?;
    let blocks = to_u32(m.div_ceil(SPLIT_BLOCK as usize))?;
    let (n, m32) = (to_u32(keys.len())?, to_u32(m)?);
    f.launch_grid(blocks, (keys, splitters, &mut bounds, n, m32))?;
    Ok(bounds.to_vec()?.into_iter().map(|b| b as usize).collect())
}

//! How an exchange moves its items.

/// How an exchange moves items between the threads of its group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ExchangeVia {
    /// Through planned shared memory, all threads at once (CUB's `BlockExchange`).
    #[default]
    Shared,
    /// Through shared memory, the warps taking turns on one warp-sized region (CUB's warp time
    /// slicing): less shared memory, a block barrier per turn. It applies to exchanges
    /// between blocked and warp-striped order over a block of whole warps; others go as
    /// [`Shared`](Self::Shared) does.
    TimeSliced,
    /// Through `shfl.sync`, within groups of at most 32 threads (CUB's `WarpExchange` shuffle
    /// variant): no shared memory and no barrier, `K * K` shuffles for `K` items per thread.
    Shuffles,
}

//! The specialization of the algorithms' kernels: threads per block and items per thread.

use crate::ir::{DType, Element};

/// Threads per block and items per thread of an algorithm's kernel: each block handles
/// `threads * items` elements per tile. [`default_tuning`] gives the table's choice per
/// element type; any other can be asked for (e.g. to sweep them on a GPU).
///
/// ```
/// use coopgraph::algorithms::{DeviceScan, Op, Tuning, Workspace};
/// use coopgraph::runtime::Device;
///
/// let device = Device::sim();
/// let small = Tuning { threads: 64, items: 3 };
/// let scan = DeviceScan::inclusive(Op::<u32>::sum()).tuning(small).prepare(&device)?;
/// assert_eq!(scan.tile_items(), 192);
/// let x = device.upload(&vec![1u32; 1000])?;
/// let mut y = device.alloc_zeroed::<u32>(1000)?;
/// scan.run(&x, &mut y, &mut Workspace::new(&device)?)?;
/// assert_eq!(y.to_vec()?, (1..=1000).collect::<Vec<u32>>());
/// # Ok::<(), coopgraph::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tuning {
    /// Threads per block (a multiple of 32, at most 1024).
    pub threads: u32,
    /// Items per thread (1 to 64).
    pub items: u32,
}

impl Tuning {
    /// Elements per tile.
    ///
    /// ```
    /// assert_eq!(coopgraph::algorithms::Tuning { threads: 128, items: 8 }.tile_items(), 1024);
    /// ```
    pub fn tile_items(self) -> u32 {
        self.threads * self.items
    }
}

/// `tuning`, else the table's for `T`.
pub(crate) fn chosen<T: Element>(tuning: Option<Tuning>) -> Tuning {
    tuning.unwrap_or_else(|| default_tuning(T::DTYPE))
}

/// The table of default tunings by element size: 256 threads × 32 items for 32-bit
/// elements (the fastest single-pass scan of 2^28 `u32` on the H200: 3729 GB/s, against 3472
/// at 256 × 16; `BENCHMARKS.md`), 256 × 16 for 64-bit ones (the fastest of those measured
/// for `u64`: 3025 GB/s, against 2345 at 256 × 8).
///
/// ```
/// use coopgraph::algorithms::{Tuning, default_tuning};
/// use coopgraph::ir::DType;
///
/// assert_eq!(default_tuning(DType::F32), Tuning { threads: 256, items: 32 });
/// assert_eq!(default_tuning(DType::U64).tile_items(), 4096);
/// ```
pub fn default_tuning(dtype: DType) -> Tuning {
    const TABLE: [(u32, Tuning); 2] = [
        (
            4,
            Tuning {
                threads: 256,
                items: 32,
            },
        ),
        (
            8,
            Tuning {
                threads: 256,
                items: 16,
            },
        ),
    ];
    let bytes = dtype.bytes();
    TABLE
        .iter()
        .find(|(b, _)| *b == bytes)
        .map_or(TABLE[0].1, |(_, t)| *t)
}

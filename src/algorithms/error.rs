//! The device-wide algorithms' own errors: arguments they cannot run on.

use super::Tuning;
use std::fmt;

/// Arguments a device-wide algorithm refuses before building or launching anything
/// (reported as [`Error::Algorithm`](crate::Error::Algorithm)).
///
/// ```
/// use coopgraph::algorithms::{self, AlgorithmError};
/// use coopgraph::runtime::Device;
/// use coopgraph::Error;
///
/// let device = Device::sim();
/// let x = device.upload(&[1u32, 2, 3])?;
/// let mut y = device.alloc_zeroed::<u32>(2)?;
/// let e = algorithms::inclusive_scan(&device, &x, &mut y).unwrap_err();
/// assert!(matches!(
///     e,
///     Error::Algorithm(AlgorithmError::OutputTooShort { input: 3, output: 2 })
/// ));
/// # Ok::<(), coopgraph::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AlgorithmError {
    /// The output holds fewer elements than the input.
    OutputTooShort {
        /// Elements of the input.
        input: usize,
        /// Elements of the output.
        output: usize,
    },
    /// More elements than one call handles (element indices are 32-bit).
    TooLong {
        /// Elements given.
        len: usize,
        /// The most a call takes.
        max: usize,
    },
    /// A tuning the kernels cannot take: threads must be a multiple of 32 from 32 to 1024,
    /// items 1 to 64.
    Tuning(Tuning),
    /// A buffer or workspace on another device than the algorithm was prepared for.
    WrongDevice {
        /// Which argument.
        what: &'static str,
    },
}

impl fmt::Display for AlgorithmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AlgorithmError::OutputTooShort { input, output } => write!(
                f,
                "the output holds {output} elements, fewer than the input's {input}"
            ),
            AlgorithmError::TooLong { len, max } => {
                write!(f, "{len} elements; one call takes at most {max}")
            }
            AlgorithmError::Tuning(t) => write!(
                f,
                "a tuning of {} threads x {} items; threads must be a multiple of 32 from 32 \
                 to 1024 and items 1 to 64",
                t.threads, t.items
            ),
            AlgorithmError::WrongDevice { what } => {
                write!(f, "the {what} is on another device than the algorithm's")
            }
        }
    }
}

impl std::error::Error for AlgorithmError {}

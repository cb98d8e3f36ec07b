//! Debug checks at launch: the record a launch of a kernel with debug checks
//! ([`HiddenParam::CheckRecord`]) gets, and the failure it reports.
//!
//! Each launch allocates a zeroed record, passes its address, waits for the kernel and reads
//! the record back: a failure recorded there is the launch's [`RuntimeError::CheckFailed`],
//! naming the site (op, line, what it tests), the thread and block, and the value checked. The
//! simulator runs the same PTX, so it reports the same failures.

use super::buffer::Buffer;
use super::device::Device;
use super::error::RuntimeError;
use super::image::{HiddenParam, KernelImage};
use crate::ir::options::record;
use crate::ir::{CheckKind, CheckSite};
use std::fmt;

/// A failed debug check: where, in which thread, and the value against its limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckFailure {
    /// The kernel's entry.
    pub entry: String,
    /// The site's number in the record (from 1).
    pub number: u32,
    /// The site: op, line and what it tests (`None` where the image lists no such site, as a
    /// hand-written image does not).
    pub site: Option<CheckSite>,
    /// The failing thread's index in its block (`threadIdx`).
    pub thread: [u32; 3],
    /// Its block's index (`blockIdx`).
    pub block: [u32; 3],
    /// The value checked: the index, or the end of the positions a load or store declares
    /// valid (0 for an assertion).
    pub value: u64,
    /// Its limit: the buffer's length (0 for an assertion).
    pub limit: u64,
}

impl fmt::Display for CheckFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [tx, ty, tz] = self.thread;
        let [bx, by, bz] = self.block;
        let (value, limit) = (self.value, self.limit);
        write!(f, "`{}`: ", self.entry)?;
        match &self.site {
            None => write!(f, "check {} failed", self.number)?,
            Some(site) => {
                write!(f, "{site}: ")?;
                match &site.what {
                    CheckKind::Read { buffer } => write!(
                        f,
                        "read of `{buffer}` at index {value}, past its {limit} elements"
                    )?,
                    CheckKind::Write { buffer } => write!(
                        f,
                        "write of `{buffer}` at index {value}, past its {limit} elements"
                    )?,
                    CheckKind::Atomic { buffer } => write!(
                        f,
                        "atomic on `{buffer}` at index {value}, past its {limit} elements"
                    )?,
                    CheckKind::Range { buffer } => write!(
                        f,
                        "the valid items of `{buffer}` end at {value}, past its {limit} elements"
                    )?,
                    CheckKind::ArrayIndex {
                        memory,
                        declared,
                        write,
                    } => write!(
                        f,
                        "{} of the {memory} array declared at {declared} at index {value}, past \
                         its {limit} elements",
                        if *write { "write" } else { "read" }
                    )?,
                    CheckKind::Assert { message } => write!(f, "assertion failed: {message}")?,
                }
            }
        }
        write!(
            f,
            ", in thread ({tx}, {ty}, {tz}) of block ({bx}, {by}, {bz})"
        )
    }
}

/// The record of one launch of `image`, zeroed: `None` for a kernel without debug checks.
pub(super) fn new_record(
    device: &Device,
    image: &KernelImage,
) -> Result<Option<Buffer<u32>>, RuntimeError> {
    if !image.hidden.contains(&HiddenParam::CheckRecord) {
        return Ok(None);
    }
    let words = (record::RECORD_BYTES / 4) as usize;
    device.alloc_zeroed::<u32>(words).map(Some)
}

/// Reads a launch's record (after the launch finished): the failure it holds, if any.
pub(super) fn read_record(image: &KernelImage, rec: &Buffer<u32>) -> Result<(), RuntimeError> {
    let words = rec.to_vec()?;
    let word = |byte: u32| words.get((byte / 4) as usize).copied().unwrap_or(0);
    let wide = |byte: u32| u64::from(word(byte)) | (u64::from(word(byte + 4)) << 32);
    let number = word(record::SITE);
    if number == 0 {
        return Ok(());
    }
    let three = |at: u32| [word(at), word(at + 4), word(at + 8)];
    Err(RuntimeError::CheckFailed(Box::new(CheckFailure {
        entry: image.entry.clone(),
        number,
        site: (number as usize)
            .checked_sub(1)
            .and_then(|i| image.check_sites().get(i))
            .cloned(),
        thread: three(record::THREAD),
        block: three(record::BLOCK),
        value: wide(record::VALUE),
        limit: wide(record::LIMIT),
    })))
}

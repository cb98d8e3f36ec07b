//! Target architectures: which SM a module is written for and which PTX ISA it declares.

use std::fmt;

/// A GPU architecture that code generation supports.
///
/// Each arch chooses the `.version` and `.target` directives of the module and gates
/// instructions (for example `redux.sync` needs [`Arch::Sm80`], clusters need [`Arch::Sm90`]).
/// The ISA versions are the lowest that the arch and the instructions used require, and never
/// newer than PTX ISA 9.0 (what a CUDA 13.0 driver accepts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Arch {
    /// Turing (compute capability 7.5).
    Sm75,
    /// Ampere (compute capability 8.0).
    Sm80,
    /// Hopper (compute capability 9.0).
    Sm90,
}

impl Arch {
    /// Every supported arch, oldest first.
    pub const ALL: [Arch; 3] = [Arch::Sm75, Arch::Sm80, Arch::Sm90];

    /// The compute capability as `major * 10 + minor` (75, 80, 90).
    pub fn sm(self) -> u32 {
        match self {
            Arch::Sm75 => 75,
            Arch::Sm80 => 80,
            Arch::Sm90 => 90,
        }
    }

    /// The PTX ISA version `(major, minor)` the module declares for this arch.
    pub fn ptx_isa(self) -> (u32, u32) {
        match self {
            Arch::Sm75 => (7, 0),
            Arch::Sm80 => (7, 0),
            Arch::Sm90 => (7, 8),
        }
    }

    /// The arch for a device of compute capability `major.minor`: the newest supported arch
    /// the device can run, or `None` when the device is older than every supported arch.
    pub fn for_compute_capability(major: u32, minor: u32) -> Option<Arch> {
        let cc = major * 10 + minor;
        Arch::ALL.iter().rev().copied().find(|a| a.sm() <= cc)
    }

    /// The most shared memory one block may use, in bytes, with the opt-in attribute.
    pub fn max_shared_per_block(self) -> u32 {
        match self {
            Arch::Sm75 => 64 * 1024,
            Arch::Sm80 => 163 * 1024,
            Arch::Sm90 => 227 * 1024,
        }
    }

    /// The most static shared memory a block may declare; above it, dynamic shared memory
    /// (with the opt-in attribute set at load) is used.
    pub const MAX_STATIC_SHARED: u32 = 48 * 1024;

    /// Whether `redux.sync` (warp reductions of 32-bit integers in hardware) is available.
    pub fn has_redux(self) -> bool {
        self >= Arch::Sm80
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}", self.sm())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compute_capability_maps_to_newest_supported_arch() {
        assert_eq!(Arch::for_compute_capability(9, 0), Some(Arch::Sm90));
        assert_eq!(Arch::for_compute_capability(8, 9), Some(Arch::Sm80));
        assert_eq!(Arch::for_compute_capability(7, 5), Some(Arch::Sm75));
        assert_eq!(Arch::for_compute_capability(7, 0), None);
        assert_eq!(Arch::for_compute_capability(12, 0), Some(Arch::Sm90));
        assert_eq!(Arch::Sm80.to_string(), "sm_80");
    }
}

//! Where the kernel's shared memory is declared.
//!
//! Each user shared array gets a `.shared` declaration of its own, so that an index past one
//! array can never reach another's bytes or the planned scratch: the simulator lays every
//! declaration out at its own address with unmapped memory around it, and reports such an
//! access as out of bounds of the array it was computed from. The planned window (exchanges,
//! collectives, temp storages) is one more declaration.
//!
//! Invariants this pass establishes:
//! - arrays are taken in declaration order; each has its own declaration while the static
//!   declarations, it included, stay within the static limit ([`Arch::MAX_STATIC_SHARED`]);
//!   an array past that lives in the planned window (with the planner's slices, live for the
//!   whole kernel), where accesses can be checked against the window only;
//! - the window is static where it fits beside the arrays' declarations, else it is the
//!   kernel's dynamic shared memory (sized at launch): so a window holding an array is always
//!   dynamic;
//! - sizes are bounds of what ptxas allocates, whatever order it places declarations in: each
//!   declaration is aligned to at most 16 bytes, so declarations `b_1..b_n` take at most
//!   `sum(b_i) + 15 * (n - 1)` bytes (exactly `b_1` for one declaration).

use crate::codegen::Arch;

/// Where a shared array's bytes are declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrayHome {
    /// A `.shared` declaration of its own.
    Own,
    /// Its slice of the planned window: the static declarations before it already fill the
    /// static limit. The simulator checks accesses to it against the whole window only.
    Window,
}

/// The kernel's shared-memory declarations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SharedLayout {
    /// Per shared array, where it is declared.
    pub arrays: Vec<ArrayHome>,
    /// Bytes of the planned window (0: the kernel declares none).
    pub window_bytes: u32,
    /// Whether the window is dynamic shared memory (sized at launch).
    pub window_dynamic: bool,
    /// The most bytes ptxas allocates for the static declarations.
    pub static_bytes: u32,
}

impl SharedLayout {
    /// Bytes of dynamic shared memory a launch must give each block.
    pub fn dynamic_bytes(&self) -> u32 {
        if self.window_dynamic {
            self.window_bytes
        } else {
            0
        }
    }

    /// Shared memory a block needs: the static declarations and the dynamic part.
    pub fn total_bytes(&self) -> u32 {
        self.static_bytes.saturating_add(self.dynamic_bytes())
    }
}

/// The most bytes declarations of `sizes` take, in any order, each aligned to at most 16.
fn static_bound(sizes: &[u32]) -> u64 {
    let sum: u64 = sizes.iter().map(|&b| u64::from(b)).sum();
    sum + 15 * (sizes.len() as u64).saturating_sub(1)
}

/// Where each array of `bytes` bytes (in declaration order) is declared.
pub(super) fn array_homes(bytes: &[u32]) -> Vec<ArrayHome> {
    let limit = u64::from(Arch::MAX_STATIC_SHARED);
    let mut own: Vec<u32> = Vec::new();
    bytes
        .iter()
        .map(|&b| {
            own.push(b);
            if static_bound(&own) <= limit {
                ArrayHome::Own
            } else {
                own.pop();
                ArrayHome::Window
            }
        })
        .collect()
}

/// The layout, once the window's size is known. `bytes` are the arrays' sizes.
pub(super) fn layout(homes: Vec<ArrayHome>, bytes: &[u32], window_bytes: u32) -> SharedLayout {
    let mut own: Vec<u32> = homes
        .iter()
        .zip(bytes)
        .filter(|(h, _)| **h == ArrayHome::Own)
        .map(|(_, &b)| b)
        .collect();
    let limit = u64::from(Arch::MAX_STATIC_SHARED);
    let mut window_dynamic = false;
    if window_bytes > 0 {
        own.push(window_bytes);
        if static_bound(&own) > limit {
            own.pop();
            window_dynamic = true;
        }
    }
    SharedLayout {
        arrays: homes,
        window_bytes,
        window_dynamic,
        static_bytes: u32::try_from(static_bound(&own)).unwrap_or(u32::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_get_declarations_while_they_fit() {
        let k = 1024;
        // One declaration: its own size; more: room for the padding between them.
        assert_eq!(static_bound(&[100]), 100);
        assert_eq!(static_bound(&[6, 20, 4, 16]), 46 + 45);
        assert_eq!(static_bound(&[]), 0);
        let homes = array_homes(&[40 * k, 8 * k, 4 * k, 64 * k]);
        use ArrayHome::*;
        // 40K + 8K + 15 passes 48K; the 4 KiB array after it still fits.
        assert_eq!(homes, vec![Own, Window, Own, Window]);
        let l = layout(homes, &[40 * k, 8 * k, 4 * k, 64 * k], 80 * k);
        assert!(l.window_dynamic);
        assert_eq!(l.static_bytes, 44 * k + 15);
        assert_eq!(l.dynamic_bytes(), 80 * k);
        assert_eq!(l.total_bytes(), 124 * k + 15);
        // A window that fits beside the arrays is static.
        let l = layout(vec![Own], &[1000], 2048);
        assert!(!l.window_dynamic);
        assert_eq!((l.static_bytes, l.dynamic_bytes()), (3048 + 15, 0));
        // No arrays: the window alone, exactly.
        let l = layout(vec![], &[], 4096);
        assert_eq!((l.static_bytes, l.total_bytes()), (4096, 4096));
        let l = layout(vec![], &[], 0);
        assert_eq!(l.total_bytes(), 0);
    }
}

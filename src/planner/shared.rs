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
//! - the kernel's dynamic array (at most one) lies at the end of the dynamic shared memory:
//!   after the window where the window is dynamic, else at its start; a launch adds its bytes
//!   to the window's;
//! - the window is aligned to the largest alignment of a slice in it (at least 16), so a temp
//!   storage's alignment holds for its address, not only for its offset;
//! - sizes are bounds of what ptxas allocates, whatever order it places declarations in: a
//!   declaration of `b` bytes aligned to `a` takes at most `b + a - 1` bytes after the one
//!   before it, and the first one placed starts at 0, so the bound is the sum of `b + a - 1`
//!   less the smallest `a - 1` (exactly `b` for one declaration); with a dynamic window, the
//!   static part is rounded up to the window's alignment, where the dynamic part starts.

use crate::ptx::Arch;

/// Where a shared array's bytes are declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrayHome {
    /// A `.shared` declaration of its own.
    Own,
    /// Its slice of the planned window: the static declarations before it already fill the
    /// static limit. The simulator checks accesses to it against the whole window only.
    Window,
    /// The end of the dynamic shared memory: the kernel's dynamic array, sized at launch
    /// (see [`SharedLayout::dynamic_array`]).
    Dynamic,
    /// The bytes of another array, which it is a view of
    /// ([`ArrayDecl::view_of`](crate::ir::ops::ArrayDecl::view_of)): wherever that one lives.
    View,
}

/// The kernel's shared-memory declarations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SharedLayout {
    /// Per shared array, where it is declared.
    pub arrays: Vec<ArrayHome>,
    /// Bytes of the planned window (0: the kernel declares none).
    pub window_bytes: u32,
    /// The window's alignment: the largest of its slices', at least 16.
    pub window_align: u32,
    /// Whether the window is dynamic shared memory (sized at launch).
    pub window_dynamic: bool,
    /// The most bytes ptxas allocates for the static declarations.
    pub static_bytes: u32,
    /// The kernel's dynamic array, if it has one: its index and its offset in the dynamic
    /// shared memory, after the window where the window is dynamic (else at 0). A launch
    /// gives it its bytes beyond [`dynamic_bytes`](Self::dynamic_bytes).
    pub dynamic_array: Option<(usize, u32)>,
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

/// The most bytes declarations of `(bytes, align)` take, in any order.
fn static_bound(decls: &[(u32, u32)]) -> u64 {
    let sum: u64 = decls
        .iter()
        .map(|&(b, a)| u64::from(b) + u64::from(a.max(1)) - 1)
        .sum();
    let first = decls.iter().map(|&(_, a)| u64::from(a.max(1)) - 1).min();
    sum - first.unwrap_or(0)
}

/// Where each array of `(bytes, align)` (in declaration order) is declared.
pub(super) fn array_homes(arrays: &[(u32, u32)]) -> Vec<ArrayHome> {
    let limit = u64::from(Arch::MAX_STATIC_SHARED);
    let mut own: Vec<(u32, u32)> = Vec::new();
    arrays
        .iter()
        .map(|&a| {
            own.push(a);
            if static_bound(&own) <= limit {
                ArrayHome::Own
            } else {
                own.pop();
                ArrayHome::Window
            }
        })
        .collect()
}

/// The layout, once the window's size and alignment are known. `arrays` are the arrays'
/// `(bytes, align)`.
pub(super) fn layout(
    homes: Vec<ArrayHome>,
    arrays: &[(u32, u32)],
    window_bytes: u32,
    window_align: u32,
) -> SharedLayout {
    let mut own: Vec<(u32, u32)> = homes
        .iter()
        .zip(arrays)
        .filter(|(h, _)| **h == ArrayHome::Own)
        .map(|(_, &a)| a)
        .collect();
    let limit = u64::from(Arch::MAX_STATIC_SHARED);
    let window_align = window_align.max(16);
    let mut window_dynamic = false;
    if window_bytes > 0 {
        own.push((window_bytes, window_align));
        if static_bound(&own) > limit {
            own.pop();
            window_dynamic = true;
        }
    }
    let mut static_bytes = static_bound(&own);
    let dynamic = homes.iter().position(|h| *h == ArrayHome::Dynamic);
    if window_dynamic || dynamic.is_some() {
        // The dynamic part starts at its alignment after the static declarations, and ptxas
        // counts the padding before it as static.
        static_bytes = static_bytes.next_multiple_of(u64::from(window_align));
    }
    // The dynamic array follows the window where the window is dynamic.
    let dynamic_array = dynamic.map(|i| {
        let align = arrays.get(i).map_or(16, |&(_, a)| a.max(1));
        let after = if window_dynamic { window_bytes } else { 0 };
        (i, after.next_multiple_of(align))
    });
    SharedLayout {
        arrays: homes,
        window_bytes,
        window_align,
        window_dynamic,
        static_bytes: u32::try_from(static_bytes).unwrap_or(u32::MAX),
        dynamic_array,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_get_declarations_while_they_fit() {
        let k = 1024;
        // One declaration: its own size; more: room for the padding between them.
        assert_eq!(static_bound(&[(100, 16)]), 100);
        assert_eq!(
            static_bound(&[(6, 4), (20, 16), (4, 4), (16, 16)]),
            46 + 3 + 15 + 15
        );
        assert_eq!(static_bound(&[]), 0);
        let f = |bytes: u32| (bytes, 4);
        let arrays = [f(40 * k), f(8 * k), f(4 * k), f(64 * k)];
        let homes = array_homes(&arrays);
        use ArrayHome::*;
        // 40K + 8K + 3 passes 48K; the 4 KiB array after it still fits.
        assert_eq!(homes, vec![Own, Window, Own, Window]);
        let l = layout(homes, &arrays, 80 * k, 16);
        assert!(l.window_dynamic);
        assert_eq!(l.static_bytes, 44 * k + 16);
        assert_eq!(l.dynamic_bytes(), 80 * k);
        assert_eq!(l.total_bytes(), 124 * k + 16);
        // A window that fits beside the arrays is static.
        let l = layout(vec![Own], &[f(1000)], 2048, 16);
        assert!(!l.window_dynamic);
        assert_eq!((l.static_bytes, l.dynamic_bytes()), (3048 + 15, 0));
        // No arrays: the window alone, exactly, aligned to its largest slice alignment.
        let l = layout(vec![], &[], 4096, 512);
        assert_eq!(
            (l.static_bytes, l.total_bytes(), l.window_align),
            (4096, 4096, 512)
        );
        let l = layout(vec![], &[], 0, 0);
        assert_eq!(l.total_bytes(), 0);
    }
}

//! XOR swizzles (CuTe `Swizzle<B, M, S>`) and layouts followed by a swizzle.
//!
//! A swizzle XORs `bits` bits of an offset, taken `shift` places above (or below, for a
//! negative shift) the bits at `base`, into the bits at `base`:
//!
//! ```text
//!   offset:  ... [ yyy ] ... [ zzz ] [ base bits ]       yyy at base + max(0, shift)
//!   result = offset ^ ((offset & yyy_mask) >> shift)     zzz at base - min(0, shift)
//! ```
//!
//! With `|shift| >= bits` the two fields are disjoint, so the swizzle is an involution and
//! a bijection on every aligned block of `2^(base + bits + |shift|)` offsets.

use std::fmt;

use super::error::{LayoutError, Op};
use super::int_tuple::IntTuple;
use super::layout::Layout;
use super::ops::compose;
use super::slice::{Coord, slice_and_offset};

/// The swizzle `Sw<bits, base, shift>`; see the module documentation.
///
/// ```
/// use coopgraph::layout::Swizzle;
/// let sw = Swizzle::new(3, 4, 3).unwrap();
/// // Rows of 128 bytes in 16-byte units: row r's unit u lands on unit u ^ (r % 8).
/// assert_eq!(sw.call(0b001_000_0000), 0b001_001_0000);
/// assert_eq!(sw.call(sw.call(1234)), 1234);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Swizzle {
    bits: u32,
    base: u32,
    shift: i32,
}

/// Largest `base + bits + |shift|`: masks then stay below bit 62 of an `i64`.
const MAX_SWIZZLE_BITS: u32 = 62;

impl Swizzle {
    /// `Sw<bits, base, shift>`; fails with [`LayoutError::InvalidSwizzle`] unless
    /// `|shift| >= bits` (disjoint fields) and `base + bits + |shift| <= 62`.
    pub const fn new(bits: u32, base: u32, shift: i32) -> Result<Swizzle, LayoutError> {
        let reach = shift.unsigned_abs();
        let fits = match base.checked_add(bits) {
            Some(v) => match v.checked_add(reach) {
                Some(total) => total <= MAX_SWIZZLE_BITS,
                None => false,
            },
            None => false,
        };
        if reach < bits || !fits {
            return Err(LayoutError::InvalidSwizzle { bits, base, shift });
        }
        Ok(Swizzle { bits, base, shift })
    }

    /// The identity swizzle `Sw<0,0,0>`.
    pub const fn identity() -> Swizzle {
        Swizzle {
            bits: 0,
            base: 0,
            shift: 0,
        }
    }

    /// Number of bits XORed.
    pub const fn bits(&self) -> u32 {
        self.bits
    }

    /// Number of low bits left alone.
    pub const fn base(&self) -> u32 {
        self.base
    }

    /// Distance between the source and target fields (negative: source below target).
    pub const fn shift(&self) -> i32 {
        self.shift
    }

    /// `base + bits + |shift|`: the swizzle permutes each aligned block of `2^this` offsets.
    pub const fn period_bits(&self) -> u32 {
        self.base + self.bits + self.shift.unsigned_abs()
    }

    /// The mask of the source field (`yyy`).
    const fn source_mask(&self) -> i64 {
        let up = if self.shift > 0 { self.shift as u32 } else { 0 };
        ((1i64 << self.bits) - 1) << (self.base + up)
    }

    /// The swizzled offset. Total: any `i64` maps (two's complement for negatives).
    pub const fn call(&self, offset: i64) -> i64 {
        let field = offset & self.source_mask();
        let moved = if self.shift >= 0 {
            field >> self.shift
        } else {
            field << self.shift.unsigned_abs()
        };
        offset ^ moved
    }

    /// `self ∘ layout`: the swizzle applied after `layout`.
    pub fn compose(&self, layout: Layout) -> ComposedLayout {
        ComposedLayout {
            swizzle: *self,
            offset: 0,
            layout,
        }
    }
}

impl Default for Swizzle {
    fn default() -> Swizzle {
        Swizzle::identity()
    }
}

impl fmt::Display for Swizzle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sw<{},{},{}>", self.bits, self.base, self.shift)
    }
}

/// `swizzle ∘ (offset + layout)`, CuTe's `ComposedLayout<Swizzle, Offset, Layout>`: the
/// shape of a layout and the offsets of a swizzled one, as used for shared-memory tiles.
///
/// ```
/// use coopgraph::layout::{Layout, Swizzle};
/// let tile: Layout = "(8,8):(8,1)".parse().unwrap();
/// let sw = Swizzle::new(3, 0, 3).unwrap().compose(tile);
/// assert_eq!(sw.to_string(), "Sw<3,0,3> o 0 o (8,8):(8,1)");
/// // Column 0 of the 8x8 tile lands in a different bank group per row.
/// let col0: Vec<i64> = (0..8).map(|r| sw.call(r) % 8).collect();
/// assert_eq!(col0, vec![0, 1, 2, 3, 4, 5, 6, 7]);
/// ```
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct ComposedLayout {
    swizzle: Swizzle,
    offset: i64,
    layout: Layout,
}

impl ComposedLayout {
    /// `swizzle ∘ (offset + layout)`.
    pub fn new(swizzle: Swizzle, offset: i64, layout: Layout) -> ComposedLayout {
        ComposedLayout {
            swizzle,
            offset,
            layout,
        }
    }

    /// The swizzle applied last.
    pub fn swizzle(&self) -> Swizzle {
        self.swizzle
    }

    /// The offset added before the swizzle.
    pub fn offset(&self) -> i64 {
        self.offset
    }

    /// The inner layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Number of coordinates (that of the inner layout).
    pub fn size(&self) -> i64 {
        self.layout.size()
    }

    /// The swizzled offset of linear index `i` (saturating like [`Layout::call`]).
    pub fn call(&self, i: i64) -> i64 {
        self.swizzle
            .call(self.offset.saturating_add(self.layout.call(i)))
    }

    /// The swizzled offset of a coordinate of the inner layout.
    pub fn call_coord(&self, coord: &IntTuple) -> Result<i64, LayoutError> {
        let inner = self.layout.call_coord(coord)?;
        let shifted = self
            .offset
            .checked_add(inner)
            .ok_or(LayoutError::overflow(Op::Index))?;
        Ok(self.swizzle.call(shifted))
    }

    /// The slice of the inner layout at `coord`, its offset moved before the swizzle (CuTe
    /// `sw_layout(i, _)`): `result.call(j) == self.call_coord(full coordinate)`.
    pub fn slice(&self, coord: &Coord) -> Result<ComposedLayout, LayoutError> {
        let (layout, offset) = slice_and_offset(&self.layout, coord)?;
        Ok(ComposedLayout {
            swizzle: self.swizzle,
            offset: self
                .offset
                .checked_add(offset)
                .ok_or(LayoutError::overflow(Op::Index))?,
            layout,
        })
    }

    /// `self ∘ b`: the same swizzle and offset after `layout ∘ b`.
    pub fn composition(&self, b: &Layout) -> Result<ComposedLayout, LayoutError> {
        Ok(ComposedLayout {
            swizzle: self.swizzle,
            offset: self.offset,
            layout: compose(&self.layout, b)?,
        })
    }
}

impl fmt::Display for ComposedLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} o {} o {}", self.swizzle, self.offset, self.layout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation() {
        assert!(Swizzle::new(3, 3, 3).is_ok());
        assert!(Swizzle::new(0, 4, 0).is_ok());
        assert!(Swizzle::new(2, 3, -3).is_ok());
        assert_eq!(
            Swizzle::new(3, 0, 2),
            Err(LayoutError::InvalidSwizzle {
                bits: 3,
                base: 0,
                shift: 2
            })
        );
        assert!(Swizzle::new(20, 20, 22).is_ok());
        assert!(Swizzle::new(20, 21, 22).is_err());
        assert!(Swizzle::new(u32::MAX, 1, i32::MIN).is_err());
    }

    #[test]
    fn extreme_offsets_do_not_panic() {
        let sw = Swizzle::new(20, 20, -22).expect("valid");
        for x in [i64::MIN, i64::MAX, -1, 0] {
            assert_eq!(sw.call(sw.call(x)), x);
        }
    }

    #[test]
    fn composed_layout_composes() {
        let tile: Layout = "(8,8):(8,1)".parse().expect("layout");
        let sw = Swizzle::new(2, 0, 3).expect("valid").compose(tile);
        let b: Layout = "(4,2):(2,16)".parse().expect("layout");
        let r = sw.composition(&b).expect("admissible");
        for i in 0..8 {
            assert_eq!(r.call(i), sw.call(b.call(i)));
        }
    }
}

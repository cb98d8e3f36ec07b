//! xoroshiro128+'s jump as a linear map: the 128 x 128 bit matrix of one jump, its squares
//! (for `2^k` jumps at once), and byte tables that apply it with 16 lookups.
//!
//! A state is a 128-bit vector (`s0` in the low half). A draw is linear over GF(2) (xors,
//! shifts and rotations), so a jump (a sum of states along 128 draws) is too: its matrix's
//! column `i` is the jump of the state with only bit `i` set.

use super::host::Xoroshiro128p;

/// A 128 x 128 matrix over GF(2), by columns: `cols[i]` is the image of bit `i`.
#[derive(Clone)]
pub(super) struct BitMatrix {
    cols: Box<[u128; 128]>,
}

impl BitMatrix {
    /// The matrix of one jump (Numba's `xoroshiro128p_jump`).
    fn jump() -> Self {
        let mut cols = Box::new([0u128; 128]);
        for (i, col) in cols.iter_mut().enumerate() {
            let bit = 1u128 << i;
            let mut g = Xoroshiro128p::from_state([bit as u64, (bit >> 64) as u64]);
            g.jump();
            let [s0, s1] = g.state();
            *col = u128::from(s0) | (u128::from(s1) << 64);
        }
        BitMatrix { cols }
    }

    /// `self * v`: the sum of the columns of `v`'s set bits.
    fn apply(&self, v: u128) -> u128 {
        let mut acc = 0u128;
        let mut rest = v;
        while rest != 0 {
            acc ^= self.cols[rest.trailing_zeros() as usize];
            rest &= rest - 1;
        }
        acc
    }

    /// `self * self`.
    fn square(&self) -> Self {
        let mut cols = Box::new([0u128; 128]);
        for (out, col) in cols.iter_mut().zip(self.cols.iter()) {
            *out = self.apply(*col);
        }
        BitMatrix { cols }
    }
}

/// The matrices of `2^k` jumps for `k` in `0..64`.
pub(super) struct JumpPowers {
    powers: Vec<BitMatrix>,
}

impl JumpPowers {
    pub(super) fn new() -> Self {
        let mut powers = vec![BitMatrix::jump()];
        for k in 1..64 {
            let next = powers[k - 1].square();
            powers.push(next);
        }
        JumpPowers { powers }
    }

    /// The matrix of `2^k` jumps (`k < 64`; the last one for a larger `k`).
    pub(super) fn matrix(&self, k: usize) -> &BitMatrix {
        &self.powers[k.min(self.powers.len() - 1)]
    }

    /// `state` jumped `times` times: one product per set bit of `times`.
    pub(super) fn advance(&self, state: u128, times: u64) -> u128 {
        let mut s = state;
        let mut rest = times;
        while rest != 0 {
            s = self.matrix(rest.trailing_zeros() as usize).apply(s);
            rest &= rest - 1;
        }
        s
    }
}

/// A matrix as 16 tables of 256 entries: entry `v` of table `p` is the image of byte `v` at
/// byte position `p`, so a product is 16 lookups and xors.
pub(super) struct JumpTable {
    tables: Vec<[u128; 256]>,
}

impl JumpTable {
    pub(super) fn new(m: &BitMatrix) -> Self {
        let mut tables = vec![[0u128; 256]; 16];
        for (p, table) in tables.iter_mut().enumerate() {
            for v in 1..256usize {
                // The image of v is the image of v without its lowest bit, plus that bit's.
                let low = v.trailing_zeros() as usize;
                table[v] = table[v & (v - 1)] ^ m.cols[8 * p + low];
            }
        }
        JumpTable { tables }
    }

    /// The matrix times `v`.
    pub(super) fn apply(&self, v: u128) -> u128 {
        self.tables
            .iter()
            .enumerate()
            .fold(0, |acc, (p, t)| acc ^ t[((v >> (8 * p)) & 0xFF) as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pack(g: &Xoroshiro128p) -> u128 {
        let [s0, s1] = g.state();
        u128::from(s0) | (u128::from(s1) << 64)
    }

    #[test]
    fn tables_and_powers_jump_as_the_loop_does() {
        let powers = JumpPowers::new();
        let table = JumpTable::new(powers.matrix(0));
        let mut g = Xoroshiro128p::from_seed(99);
        let start = pack(&g);
        for times in 1..=9u64 {
            let before = pack(&g);
            g.jump();
            assert_eq!(table.apply(before), pack(&g), "jump {times} by the tables");
            assert_eq!(
                powers.advance(start, times),
                pack(&g),
                "{times} jumps by powers"
            );
        }
    }
}

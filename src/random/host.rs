//! The generators on the host: the reference the kernels are checked against, and the fast
//! creation of xoroshiro128+ states.
//!
//! Everything here is plain integer and float arithmetic in the order the kernels do it, so a
//! kernel's raw and uniform draws equal these bit for bit (the normals excepted: see
//! [`Xoroshiro128p::normal_f32`]).

use super::jump::{JumpPowers, JumpTable};

/// The xoroshiro128+ generator as Numba's `numba.cuda.random` runs it: two 64-bit words
/// `s0`, `s1` (Numba's `xoroshiro128p_dtype`, stored in that order), seeded by one SplitMix64
/// step, advanced by `next_u64` with the original 2016 rotations and shift (55, 14, 36; not
/// the 2018 revision's 24, 16, 37), streams 2^64 draws apart by [`jump`](Self::jump).
///
/// ```
/// use coopgraph::random::host::Xoroshiro128p;
///
/// // Numba's seeding puts SplitMix64's first output for the seed into both words.
/// let mut g = Xoroshiro128p::from_seed(1234567);
/// assert_eq!(g.state(), [6457827717110365317, 6457827717110365317]);
/// assert_eq!(g.next_u64(), 6457827717110365317u64.wrapping_mul(2));
/// let u = g.uniform_f64();
/// assert!((0.0..1.0).contains(&u));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Xoroshiro128p {
    s0: u64,
    s1: u64,
}

/// Numba's jump polynomial: advancing by it moves a state 2^64 draws ahead.
pub const JUMP: [u64; 2] = [0xBEAC_0467_EBA5_FACB, 0xD86B_048B_86AA_9922];

/// The first output of SplitMix64 seeded with `seed` (Numba's `init_xoroshiro128p_state`
/// puts it in both words of a state).
///
/// ```
/// use coopgraph::random::host::splitmix64;
///
/// // The reference implementation's first output for seed 1234567.
/// assert_eq!(splitmix64(1234567), 6457827717110365317);
/// ```
pub fn splitmix64(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `2^-53`: the weight of the lowest of the 53 bits a draw keeps for a float.
const UNIT_F64: f64 = 1.0 / (1u64 << 53) as f64;

/// The largest `f32` below 1.
pub const BELOW_ONE_F32: f32 = 1.0 - f32::EPSILON / 2.0;

/// Numba's float64 from a draw: its top 53 bits times 2^-53, in [0, 1).
///
/// ```
/// use coopgraph::random::host::unit_f64;
///
/// assert_eq!(unit_f64(0), 0.0);
/// assert_eq!(unit_f64(u64::MAX), 1.0 - f64::EPSILON / 2.0);
/// ```
pub fn unit_f64(x: u64) -> f64 {
    (x >> 11) as f64 * UNIT_F64
}

/// Numba's float32 from a draw: [`unit_f64`] rounded to the nearest `f32`. This is 1.0 for
/// the draws at or above `2^64 - 2^39` (one in 2^25), although Numba documents [0, 1).
///
/// ```
/// use coopgraph::random::host::unit_f32;
///
/// assert_eq!(unit_f32(1 << 40), 2f32.powi(-24));
/// assert_eq!(unit_f32(u64::MAX), 1.0); // Numba's rounding
/// ```
pub fn unit_f32(x: u64) -> f32 {
    unit_f64(x) as f32
}

impl Xoroshiro128p {
    /// Numba's `init_xoroshiro128p_state`: both words are [`splitmix64`] of the seed.
    ///
    /// ```
    /// use coopgraph::random::host::{Xoroshiro128p, splitmix64};
    ///
    /// assert_eq!(Xoroshiro128p::from_seed(3).state(), [splitmix64(3); 2]);
    /// ```
    pub fn from_seed(seed: u64) -> Self {
        let z = splitmix64(seed);
        Xoroshiro128p { s0: z, s1: z }
    }

    /// A generator in the state `[s0, s1]`. The all-zero state stays zero forever.
    ///
    /// ```
    /// use coopgraph::random::host::Xoroshiro128p;
    ///
    /// // The first outputs from the state [1, 2].
    /// let mut g = Xoroshiro128p::from_state([1, 2]);
    /// assert_eq!([g.next_u64(), g.next_u64(), g.next_u64()], [3, 36029003177443331, 78883775479546723]);
    /// ```
    pub fn from_state(state: [u64; 2]) -> Self {
        Xoroshiro128p {
            s0: state[0],
            s1: state[1],
        }
    }

    /// Generator `index` of a states array laid out as Numba's (`s0`, `s1` per generator),
    /// or `None` past its end.
    ///
    /// ```
    /// use coopgraph::random::host::{Xoroshiro128p, xoroshiro128p_states};
    ///
    /// let states = xoroshiro128p_states(4, 7, 0);
    /// let mut first = Xoroshiro128p::from_seed(7);
    /// assert_eq!(Xoroshiro128p::from_states(&states, 0), Some(first));
    /// first.jump();
    /// assert_eq!(Xoroshiro128p::from_states(&states, 1), Some(first));
    /// assert_eq!(Xoroshiro128p::from_states(&states, 4), None);
    /// ```
    pub fn from_states(states: &[u64], index: usize) -> Option<Self> {
        let at = index.checked_mul(2)?;
        Some(Xoroshiro128p::from_state([
            *states.get(at)?,
            *states.get(at.checked_add(1)?)?,
        ]))
    }

    /// The two words, `[s0, s1]`.
    ///
    /// ```
    /// use coopgraph::random::host::Xoroshiro128p;
    ///
    /// let mut g = Xoroshiro128p::from_state([1, 2]);
    /// g.next_u64();
    /// assert_eq!(g.state(), [(1 << 55) ^ 3 ^ (3 << 14), 3 << 36]);
    /// ```
    pub fn state(&self) -> [u64; 2] {
        [self.s0, self.s1]
    }

    /// The next 64 random bits (`s0 + s1`), advancing the state.
    ///
    /// ```
    /// use coopgraph::random::host::Xoroshiro128p;
    ///
    /// let mut g = Xoroshiro128p::from_state([1, 2]);
    /// assert_eq!(g.next_u64(), 3);
    /// ```
    pub fn next_u64(&mut self) -> u64 {
        let (s0, mut s1) = (self.s0, self.s1);
        let result = s0.wrapping_add(s1);
        s1 ^= s0;
        self.s0 = s0.rotate_left(55) ^ s1 ^ (s1 << 14);
        self.s1 = s1.rotate_left(36);
        result
    }

    /// Advances the state by 2^64 draws, as Numba's `xoroshiro128p_jump` does it (128 draws
    /// and the sum of the states its polynomial selects). [`xoroshiro128p_states`] computes
    /// the same jumps through precomputed tables.
    ///
    /// ```
    /// use coopgraph::random::host::{Xoroshiro128p, xoroshiro128p_states};
    ///
    /// let mut g = Xoroshiro128p::from_seed(11);
    /// g.jump();
    /// assert_eq!(g.state()[..], xoroshiro128p_states(2, 11, 0)[2..]);
    /// ```
    pub fn jump(&mut self) {
        let (mut s0, mut s1) = (0u64, 0u64);
        for word in JUMP {
            for b in 0..64 {
                if word & (1u64 << b) != 0 {
                    s0 ^= self.s0;
                    s1 ^= self.s1;
                }
                self.next_u64();
            }
        }
        self.s0 = s0;
        self.s1 = s1;
    }

    /// Numba's `xoroshiro128p_uniform_float64`: [`unit_f64`] of the next draw, in [0, 1).
    ///
    /// ```
    /// use coopgraph::random::host::{Xoroshiro128p, unit_f64};
    ///
    /// let (mut a, mut b) = (Xoroshiro128p::from_seed(1), Xoroshiro128p::from_seed(1));
    /// assert_eq!(a.uniform_f64(), unit_f64(b.next_u64()));
    /// ```
    pub fn uniform_f64(&mut self) -> f64 {
        unit_f64(self.next_u64())
    }

    /// Numba's `xoroshiro128p_uniform_float32`: [`unit_f32`] of the next draw, which is 1.0
    /// once in 2^25 draws.
    ///
    /// ```
    /// use coopgraph::random::host::Xoroshiro128p;
    ///
    /// // The draw u64::MAX: Numba's float32 rounds it to 1.0.
    /// assert_eq!(Xoroshiro128p::from_state([u64::MAX, 0]).uniform_f32(), 1.0);
    /// ```
    pub fn uniform_f32(&mut self) -> f32 {
        unit_f32(self.next_u64())
    }

    /// [`uniform_f32`](Self::uniform_f32), but [`BELOW_ONE_F32`] where Numba's rounding
    /// gives 1.0: always in [0, 1), and equal to Numba's value everywhere else.
    ///
    /// ```
    /// use coopgraph::random::host::{BELOW_ONE_F32, Xoroshiro128p};
    ///
    /// assert_eq!(Xoroshiro128p::from_state([u64::MAX, 0]).uniform_f32_below_one(), BELOW_ONE_F32);
    /// ```
    pub fn uniform_f32_below_one(&mut self) -> f32 {
        self.uniform_f32().min(BELOW_ONE_F32)
    }

    /// Numba's `xoroshiro128p_normal_float32`: Box–Muller from two
    /// [`uniform_f32`](Self::uniform_f32) draws `u1`, `u2`,
    /// `sqrt(-2 ln u1) * cos(2π u2)`, with Rust's `f32` `ln` and `cos`. A kernel's normals
    /// use the device's `ln` and `cos` and so may differ from these in the last bits.
    ///
    /// ```
    /// use coopgraph::random::host::Xoroshiro128p;
    ///
    /// let mut g = Xoroshiro128p::from_seed(8);
    /// let zs: Vec<f32> = (0..10_000).map(|_| g.normal_f32()).collect();
    /// let mean = zs.iter().sum::<f32>() / 10_000.0;
    /// assert!(mean.abs() < 0.05);
    /// ```
    pub fn normal_f32(&mut self) -> f32 {
        let u1 = self.uniform_f32();
        let u2 = self.uniform_f32();
        (-2.0f32 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
    }

    /// Numba's `xoroshiro128p_normal_float64`, which draws its two uniforms as `f32` and
    /// takes the logarithm in `f32` too: `sqrt(-2 ln u1) * cos(2π u2)` with `ln u1` widened
    /// to `f64`, and the rest in `f64` (Rust's `ln` and `cos`).
    ///
    /// ```
    /// use coopgraph::random::host::Xoroshiro128p;
    ///
    /// let mut g = Xoroshiro128p::from_seed(8);
    /// let zs: Vec<f64> = (0..10_000).map(|_| g.normal_f64()).collect();
    /// let var = zs.iter().map(|z| z * z).sum::<f64>() / 10_000.0;
    /// assert!((var - 1.0).abs() < 0.1);
    /// ```
    pub fn normal_f64(&mut self) -> f64 {
        let u1 = self.uniform_f32();
        let u2 = self.uniform_f32();
        (-2.0f64 * f64::from(u1.ln())).sqrt() * (std::f64::consts::TAU * f64::from(u2)).cos()
    }
}

/// The states of `n` xoroshiro128+ generators laid out as Numba's states array (`s0`, `s1`
/// of generator 0, then of generator 1, ...; `2 * n` words), equal to what Numba's
/// `init_xoroshiro128p_states(states, seed, subsequence_start)` makes: generator 0 is seeded
/// from `seed` and jumped `subsequence_start` times, each next one is its predecessor jumped
/// once (2^64 draws further).
///
/// Numba computes each jump with 128 draws in a Python-speed loop; here a jump is a product
/// with the jump's 128 x 128 bit matrix through byte tables (16 lookups), the
/// `subsequence_start` jumps are one product per set bit of it with the matrix's squares, and
/// more than 2^16 generators are split over the host's cores, each part starting from its
/// first state computed the same way.
///
/// ```
/// use coopgraph::random::host::{Xoroshiro128p, xoroshiro128p_states};
///
/// let states = xoroshiro128p_states(3, 42, 5);
/// let mut g = Xoroshiro128p::from_seed(42);
/// for _ in 0..5 {
///     g.jump();
/// }
/// for i in 0..3 {
///     assert_eq!(Xoroshiro128p::from_states(&states, i), Some(g));
///     g.jump();
/// }
/// ```
pub fn xoroshiro128p_states(n: usize, seed: u64, subsequence_start: u64) -> Vec<u64> {
    let mut out = vec![0u64; n.saturating_mul(2)];
    if n == 0 {
        return out;
    }
    let powers = JumpPowers::new();
    let table = JumpTable::new(powers.matrix(0));
    let first = powers.advance(pack(Xoroshiro128p::from_seed(seed)), subsequence_start);
    /// Below this many generators one thread does all.
    const SPLIT_FROM: usize = 1 << 16;
    let parts = if n < SPLIT_FROM {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |p| p.get().min(n / (SPLIT_FROM / 4)))
    };
    let per = n.div_ceil(parts);
    let fill = |chunk: &mut [u64], start: usize| {
        let mut s = powers.advance(first, start as u64);
        for pair in chunk.chunks_exact_mut(2) {
            pair[0] = s as u64;
            pair[1] = (s >> 64) as u64;
            s = table.apply(s);
        }
    };
    if parts == 1 {
        fill(&mut out, 0);
    } else {
        std::thread::scope(|scope| {
            for (i, chunk) in out.chunks_mut(per * 2).enumerate() {
                let fill = &fill;
                scope.spawn(move || fill(chunk, i * per));
            }
        });
    }
    out
}

/// A state as one 128-bit vector: `s0` in the low half.
fn pack(g: Xoroshiro128p) -> u128 {
    u128::from(g.s0) | (u128::from(g.s1) << 64)
}

/// `(hi, lo)` of the 64-bit product of two words.
fn mul_hi_lo(a: u32, b: u32) -> (u32, u32) {
    let p = u64::from(a) * u64::from(b);
    ((p >> 32) as u32, p as u32)
}

/// Philox4x32's multipliers and Weyl key increments (Salmon et al., Random123).
pub(super) const PHILOX_M: [u32; 2] = [0xD251_1F53, 0xCD9E_8D57];
pub(super) const PHILOX_W: [u32; 2] = [0x9E37_79B9, 0xBB67_AE85];

/// Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as 1, 2, 3",
/// SC 2011; Random123's `philox4x32`): four random words, a bijection of the counter for each
/// key. The device's [`philox4x32_10`](super::philox4x32_10) computes the same words.
///
/// ```
/// use coopgraph::random::host::philox4x32_10;
///
/// // Random123's known answer for the zero counter and key.
/// assert_eq!(philox4x32_10([0; 4], [0; 2]), [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]);
/// ```
pub fn philox4x32_10(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let (mut c, mut k) = (counter, key);
    for round in 0..10 {
        if round > 0 {
            k = [
                k[0].wrapping_add(PHILOX_W[0]),
                k[1].wrapping_add(PHILOX_W[1]),
            ];
        }
        let (hi0, lo0) = mul_hi_lo(PHILOX_M[0], c[0]);
        let (hi1, lo1) = mul_hi_lo(PHILOX_M[1], c[2]);
        c = [hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0];
    }
    c
}

/// A word of Philox output as a float in [0, 1): its top 24 bits times 2^-24 (exact; never
/// 1.0). The device's [`unit_f32_from_u32`](super::unit_f32_from_u32) is the same.
///
/// ```
/// use coopgraph::random::host::unit_f32_from_u32;
///
/// assert_eq!(unit_f32_from_u32(u32::MAX), 1.0 - f32::EPSILON / 2.0);
/// assert_eq!(unit_f32_from_u32(255), 0.0);
/// ```
pub fn unit_f32_from_u32(x: u32) -> f32 {
    (x >> 8) as f32 * (1.0 / (1u32 << 24) as f32)
}

/// Two words of Philox output as a float in [0, 1): the top 53 bits of `hi:lo` times 2^-53
/// (exact). The device's [`unit_f64_from_u32s`](super::unit_f64_from_u32s) is the same.
///
/// ```
/// use coopgraph::random::host::{unit_f64, unit_f64_from_u32s};
///
/// assert_eq!(unit_f64_from_u32s(0x8000_0000, 0), 0.5);
/// assert_eq!(unit_f64_from_u32s(7, 9), unit_f64((7 << 32) | 9));
/// ```
pub fn unit_f64_from_u32s(hi: u32, lo: u32) -> f64 {
    unit_f64((u64::from(hi) << 32) | u64::from(lo))
}

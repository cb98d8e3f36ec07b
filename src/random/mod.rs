//! Random numbers in kernels: xoroshiro128+ streams bit-identical to Numba's
//! `numba.cuda.random`, and the counter-based Philox4x32-10.
//!
//! **Philox4x32-10** ([`philox4x32_10`]) keeps no state: four random words are a function of
//! a 128-bit counter and a 64-bit key (a thread uses its global index and a draw number as
//! the counter, the seed as the key), so nothing is stored, streams never overlap, and any
//! draw can be recomputed anywhere. It is the better choice for new code.
//!
//! **xoroshiro128+** ([`Xoroshiro128p`]) is Numba's generator, for code that must reproduce a
//! Numba program's numbers: one state of two `u64` words per thread in a read-write buffer
//! laid out as Numba's states array, made by [`create_xoroshiro128p_states`] (the states
//! Numba's `create_xoroshiro128p_states(n, seed, subsequence_start)` makes, computed on the
//! host through precomputed jump tables instead of Numba's Python loop), loaded into
//! registers, drawn from, and stored back.
//!
//! What equals Numba bit for bit: the states (seeding, the 2^64 jumps between threads,
//! `subsequence_start`), the raw draws, `uniform_float64` ([`Xoroshiro128p::uniform_f64`])
//! and `uniform_float32` ([`Xoroshiro128p::uniform_f32`], which like Numba's returns 1.0 once
//! in 2^25 draws; [`Xoroshiro128p::uniform_f32_below_one`] gives the largest `f32` below 1
//! there instead and equals Numba everywhere else). The normals
//! ([`Xoroshiro128p::normal_f32`], [`Xoroshiro128p::normal_f64`]) follow Numba's Box–Muller formula on the same uniforms but
//! take the kernel language's `f32` `ln` and `cos` (the math library's, within about an ulp;
//! PTX's approximate `lg2.approx` and `cos.approx` in a `fastmath` kernel), where Numba calls
//! libdevice's `logf` and `cosf`: they are close to Numba's, not bit-identical.
//!
//! [`host`] holds the same generators on the CPU, which the kernels' draws equal bit for bit.
//!
//! ```
//! use coopgraph::ir::index;
//! use coopgraph::random::{self, Xoroshiro128p};
//! use coopgraph::runtime::Device;
//! use coopgraph::KernelBuilder;
//!
//! // Each of 64 threads draws 3 uniforms from its own stream.
//! let mut k = KernelBuilder::new("uniforms").block(64);
//! let (states, y) = (k.buffer::<u64>("states"), k.output::<f32>("y"));
//! let t = index::thread_rank();
//! let rng = Xoroshiro128p::load(&mut k, &states, &t);
//! k.for_range(0u32, 3u32, |k, j| {
//!     let u = rng.uniform_f32(k);
//!     k.write(&y, t.clone() * 3u32 + j, u);
//! });
//! rng.store(&mut k, &states, &t);
//! let kernel = k.build()?;
//!
//! let dev = Device::sim();
//! let mut sb = random::create_xoroshiro128p_states(&dev, 64, 1234, 0)?;
//! let mut yb = dev.alloc_zeroed::<f32>(192)?;
//! dev.compile(&kernel)?.launch_grid(1, (&mut sb, &mut yb))?;
//! // The same numbers on the host.
//! let host_states = random::host::xoroshiro128p_states(64, 1234, 0);
//! let ys = yb.to_vec()?;
//! for t in 0..64 {
//!     let mut g = random::host::Xoroshiro128p::from_states(&host_states, t).unwrap();
//!     for j in 0..3 {
//!         assert_eq!(ys[t * 3 + j].to_bits(), g.uniform_f32().to_bits());
//!     }
//! }
//! # Ok::<(), coopgraph::Error>(())
//! ```

pub mod host;
mod jump;

use crate::ir::{Buffer, Expr, KernelBuilder, Var};
use crate::runtime::{self, Device, RuntimeError};

/// A thread's xoroshiro128+ generator inside a kernel: its two state words in two per-thread
/// variables ([`KernelBuilder::var`]), loaded from a states buffer laid out as Numba's
/// (`s0`, `s1` per generator; see [`create_xoroshiro128p_states`]) and stored back after
/// the draws, so the next launch continues the streams.
///
/// Each draw records ops at the point it is called (it updates the variables), so call it
/// where the number is needed: inside a loop body for a draw per iteration. Numba's
/// `xoroshiro128p_uniform_float32(states, i)` is a [`load`](Self::load), one
/// [`uniform_f32`](Self::uniform_f32) and a [`store`](Self::store).
///
/// ```
/// use coopgraph::ir::index;
/// use coopgraph::random::{self, Xoroshiro128p};
/// use coopgraph::runtime::Device;
/// use coopgraph::KernelBuilder;
///
/// // Numba's `states[t]` draws in a kernel: a float64 and a normal float32 per thread.
/// let mut k = KernelBuilder::new("draws").block(32);
/// let states = k.buffer::<u64>("states");
/// let (u, z) = (k.output::<f64>("u"), k.output::<f32>("z"));
/// let t = index::thread_rank();
/// let rng = Xoroshiro128p::load(&mut k, &states, &t);
/// let d = rng.uniform_f64(&mut k);
/// k.write(&u, &t, d);
/// let n = rng.normal_f32(&mut k);
/// k.write(&z, &t, n);
/// rng.store(&mut k, &states, &t);
/// let kernel = k.build()?;
///
/// let dev = Device::sim();
/// let mut sb = random::create_xoroshiro128p_states(&dev, 32, 99, 0)?;
/// let (mut ub, mut zb) = (dev.alloc_zeroed::<f64>(32)?, dev.alloc_zeroed::<f32>(32)?);
/// dev.compile(&kernel)?.launch_grid(1, (&mut sb, &mut ub, &mut zb))?;
/// let mut g = random::host::Xoroshiro128p::from_seed(99);
/// assert_eq!(ub.to_vec()?[0], g.uniform_f64());
/// assert!((zb.to_vec()?[0] - g.normal_f32()).abs() < 1e-3);
/// // Three draws per thread: the stored states went on by three.
/// assert_eq!(sb.to_vec()?[..2], g.state());
/// # Ok::<(), coopgraph::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Xoroshiro128p {
    s0: Var<u64>,
    s1: Var<u64>,
}

impl Xoroshiro128p {
    /// Loads generator `index` (words `2 * index` and `2 * index + 1`) of `states`. Where
    /// bounds are checked, an index past the end reads zeros (a generator that gives only
    /// zeros). See [`Xoroshiro128p`] for an example.
    #[track_caller]
    pub fn load(k: &mut KernelBuilder, states: &Buffer<u64>, index: impl Into<Expr<u32>>) -> Self {
        let at = index.into() * 2u32;
        let s0 = k.var(states.at(&at));
        let s1 = k.var(states.at(at + 1u32));
        Xoroshiro128p { s0, s1 }
    }

    /// Stores the state as generator `index` of `states` (where it was loaded from, for the
    /// next launch to go on from it). See [`Xoroshiro128p`] for an example.
    #[track_caller]
    pub fn store(&self, k: &mut KernelBuilder, states: &Buffer<u64>, index: impl Into<Expr<u32>>) {
        let at = index.into() * 2u32;
        k.write(states, &at, self.s0.get());
        k.write(states, at + 1u32, self.s1.get());
    }

    /// The next 64 random bits, advancing the state (Numba's `xoroshiro128p_next`).
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::random::{self, Xoroshiro128p};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// let mut k = KernelBuilder::new("bits").block(32);
    /// let (states, y) = (k.buffer::<u64>("states"), k.output::<u64>("y"));
    /// let t = index::thread_rank();
    /// let rng = Xoroshiro128p::load(&mut k, &states, &t);
    /// let bits = rng.next_u64(&mut k);
    /// k.write(&y, &t, bits);
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut sb = random::create_xoroshiro128p_states(&dev, 32, 5, 0)?;
    /// let mut yb = dev.alloc_zeroed::<u64>(32)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut sb, &mut yb))?;
    /// let mut g = random::host::Xoroshiro128p::from_seed(5);
    /// g.jump(); // thread 1's stream
    /// assert_eq!(yb.to_vec()?[1], g.next_u64());
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn next_u64(&self, k: &mut KernelBuilder) -> Expr<u64> {
        let (s0, s1) = (self.s0.get(), self.s1.get());
        let result = k.var(s0.clone() + s1.clone());
        let x = k.var(s0.clone() ^ s1);
        let x = x.get();
        k.set(&self.s0, rotl(&s0, 55) ^ x.clone() ^ (x.clone() << 14u32));
        k.set(&self.s1, rotl(&x, 36));
        result.get()
    }

    /// A float64 in [0, 1), Numba's `xoroshiro128p_uniform_float64`: the top 53 bits of the
    /// next draw times 2^-53 ([`host::unit_f64`]). See [`Xoroshiro128p`] for an example.
    #[track_caller]
    pub fn uniform_f64(&self, k: &mut KernelBuilder) -> Expr<f64> {
        unit_f64(&self.next_u64(k))
    }

    /// A float32, Numba's `xoroshiro128p_uniform_float32`: [`uniform_f64`](Self::uniform_f64)
    /// rounded to the nearest `f32` ([`host::unit_f32`]). Like Numba's, it is 1.0 once in
    /// 2^25 draws (where the float64 is at least `1 - 2^-25`); see
    /// [`uniform_f32_below_one`](Self::uniform_f32_below_one). The module's example draws
    /// it.
    #[track_caller]
    pub fn uniform_f32(&self, k: &mut KernelBuilder) -> Expr<f32> {
        unit_f64(&self.next_u64(k)).cast::<f32>()
    }

    /// A float32 in [0, 1): [`uniform_f32`](Self::uniform_f32), but the largest `f32` below
    /// 1 ([`host::BELOW_ONE_F32`]) where Numba's rounding gives 1.0. Bit-identical to Numba's
    /// stream in every other draw.
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::random::Xoroshiro128p;
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// // The state [u64::MAX, 0] draws u64::MAX first, which Numba rounds to 1.0.
    /// let mut k = KernelBuilder::new("edge").block(32);
    /// let (states, y) = (k.buffer::<u64>("states"), k.output::<f32>("y"));
    /// let rng = Xoroshiro128p::load(&mut k, &states, 0u32);
    /// let u = rng.uniform_f32_below_one(&mut k);
    /// k.write(&y, index::thread_rank(), u);
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut sb = dev.upload(&[u64::MAX, 0])?;
    /// let mut yb = dev.alloc_zeroed::<f32>(32)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut sb, &mut yb))?;
    /// assert_eq!(yb.to_vec()?[0], 1.0 - f32::EPSILON / 2.0);
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn uniform_f32_below_one(&self, k: &mut KernelBuilder) -> Expr<f32> {
        self.uniform_f32(k).min(host::BELOW_ONE_F32)
    }

    /// A normal float32 (mean 0, deviation 1), Numba's `xoroshiro128p_normal_float32`:
    /// Box–Muller from two [`uniform_f32`](Self::uniform_f32) draws `u1`, `u2`,
    /// `sqrt(-2 ln u1) * cos(2π u2)`, the second normal discarded. The `ln` and `cos` are
    /// [`Expr::ln`] and [`Expr::cos`] (the math library's, or the approximate instructions
    /// in a `fastmath` kernel), so the result is close to Numba's (and to
    /// [`host::Xoroshiro128p::normal_f32`]) but not bit-identical. The simulator and the GPU
    /// take the same uniforms. See [`Xoroshiro128p`] for an
    /// example.
    #[track_caller]
    pub fn normal_f32(&self, k: &mut KernelBuilder) -> Expr<f32> {
        let u1 = self.uniform_f32(k);
        let u1 = k.var(u1);
        let u2 = self.uniform_f32(k);
        (-2.0f32 * u1.get().ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
    }

    /// Numba's `xoroshiro128p_normal_float64`: two `f32` uniforms (as Numba draws them),
    /// `sqrt(-2 ln u1) * cos(2π u2)` with `ln u1` taken in `f32` and widened, the rest in
    /// `f64` (the math library's `f64` `cos`, within an ulp, where Numba calls libdevice's
    /// `cos`), the second normal discarded. It equals [`host::Xoroshiro128p::normal_f64`] to
    /// within the two functions' last bits.
    ///
    /// ```
    /// use coopgraph::ir::index;
    /// use coopgraph::random::{self, host, Xoroshiro128p};
    /// use coopgraph::runtime::Device;
    /// use coopgraph::KernelBuilder;
    ///
    /// let mut k = KernelBuilder::new("normal64").block(32);
    /// let (states, z) = (k.buffer::<u64>("states"), k.output::<f64>("z"));
    /// let t = index::thread_rank();
    /// let rng = Xoroshiro128p::load(&mut k, &states, &t);
    /// let v = rng.normal_f64(&mut k);
    /// k.write(&z, &t, v);
    /// let kernel = k.build()?;
    ///
    /// let dev = Device::sim();
    /// let mut sb = random::create_xoroshiro128p_states(&dev, 32, 11, 0)?;
    /// let mut zb = dev.alloc_zeroed::<f64>(32)?;
    /// dev.compile(&kernel)?.launch_grid(1, (&mut sb, &mut zb))?;
    /// let mut g = host::Xoroshiro128p::from_seed(11);
    /// let want = g.normal_f64();
    /// assert!((zb.to_vec()?[0] - want).abs() <= 1e-6 * want.abs().max(1.0));
    /// # Ok::<(), coopgraph::Error>(())
    /// ```
    #[track_caller]
    pub fn normal_f64(&self, k: &mut KernelBuilder) -> Expr<f64> {
        let u1 = self.uniform_f32(k);
        let u1 = k.var(u1);
        let u2 = self.uniform_f32(k);
        let l = u1.get().ln().cast::<f64>();
        (-2.0f64 * l).sqrt() * (std::f64::consts::TAU * u2.cast::<f64>()).cos()
    }
}

/// `x` rotated left by `by` bits (`0 < by < 64`).
fn rotl(x: &Expr<u64>, by: u32) -> Expr<u64> {
    (x.clone() << by) | (x.clone() >> (64 - by))
}

/// Numba's float64 from a draw on the device: the top 53 bits times 2^-53 ([`host::unit_f64`]).
///
/// ```
/// use coopgraph::ir::index;
/// use coopgraph::random::{host, unit_f32_from_u32, unit_f64, unit_f64_from_u32s};
/// use coopgraph::runtime::Device;
/// use coopgraph::KernelBuilder;
///
/// // The three conversions of thread t's word t * 0x9E3779B9 (and of t as the high word).
/// let mut k = KernelBuilder::new("units").block(32);
/// let (a, b) = (k.output::<f64>("a"), k.output::<f32>("b"));
/// let c = k.output::<f64>("c");
/// let t = index::thread_rank();
/// let w = t.clone() * 0x9E37_79B9u32;
/// k.write(&a, &t, unit_f64(&(w.cast::<u64>() << 32u32)));
/// k.write(&b, &t, unit_f32_from_u32(&w));
/// k.write(&c, &t, unit_f64_from_u32s(&t, &w));
/// let kernel = k.build()?;
///
/// let dev = Device::sim();
/// let (mut ab, mut bb) = (dev.alloc_zeroed::<f64>(32)?, dev.alloc_zeroed::<f32>(32)?);
/// let mut cb = dev.alloc_zeroed::<f64>(32)?;
/// dev.compile(&kernel)?.launch_grid(1, (&mut ab, &mut bb, &mut cb))?;
/// let w = 5u32.wrapping_mul(0x9E37_79B9);
/// assert_eq!(ab.to_vec()?[5], host::unit_f64(u64::from(w) << 32));
/// assert_eq!(bb.to_vec()?[5], host::unit_f32_from_u32(w));
/// assert_eq!(cb.to_vec()?[5], host::unit_f64_from_u32s(5, w));
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub fn unit_f64(x: &Expr<u64>) -> Expr<f64> {
    (x.clone() >> 11u32).cast::<f64>() * (1.0 / (1u64 << 53) as f64)
}

/// A word as a float in [0, 1) on the device: its top 24 bits times 2^-24
/// ([`host::unit_f32_from_u32`]). See [`unit_f64`] for an example.
pub fn unit_f32_from_u32(x: &Expr<u32>) -> Expr<f32> {
    (x.clone() >> 8u32).cast::<f32>() * (1.0 / (1u32 << 24) as f32)
}

/// Two words as a float in [0, 1) on the device: the top 53 bits of `hi:lo` times 2^-53
/// ([`host::unit_f64_from_u32s`]). See [`unit_f64`] for an example.
pub fn unit_f64_from_u32s(hi: &Expr<u32>, lo: &Expr<u32>) -> Expr<f64> {
    unit_f64(&((hi.cast::<u64>() << 32u32) | lo.cast::<u64>()))
}

/// Philox4x32-10 on the device: four random words, a function of `counter` and `key` alone
/// (Salmon et al., Random123's `philox4x32`; equal to [`host::philox4x32_10`] bit for bit).
/// Give each draw its own counter (a thread's global index in one word, its draw number in
/// another) and the seed as the key.
///
/// The words are expressions: an op that uses several of them computes the rounds once, but
/// each op computes them again, so keep the words in variables ([`KernelBuilder::var`]) when
/// several ops use them.
///
/// ```
/// use coopgraph::ir::index;
/// use coopgraph::random::{self, philox4x32_10};
/// use coopgraph::runtime::Device;
/// use coopgraph::{KernelBuilder, ir::Expr};
///
/// // Thread t writes the first word for the counter [t, 0, 0, 0] and key [seed, 0].
/// let mut k = KernelBuilder::new("philox").block(32);
/// let (y, seed) = (k.output::<u32>("y"), k.scalar::<u32>("seed"));
/// let t = index::thread_rank();
/// let zero = Expr::lit(0u32);
/// let words = philox4x32_10([t.clone(), zero.clone(), zero.clone(), zero.clone()], [seed.expr(), zero]);
/// k.write(&y, &t, words[0].clone());
/// let kernel = k.build()?;
///
/// let dev = Device::sim();
/// let mut yb = dev.alloc_zeroed::<u32>(32)?;
/// dev.compile(&kernel)?.launch_grid(1, (&mut yb, 9u32))?;
/// assert_eq!(yb.to_vec()?[3], random::host::philox4x32_10([3, 0, 0, 0], [9, 0])[0]);
/// # Ok::<(), coopgraph::Error>(())
/// ```
pub fn philox4x32_10(counter: [Expr<u32>; 4], key: [Expr<u32>; 2]) -> [Expr<u32>; 4] {
    let [mut c0, mut c1, mut c2, mut c3] = counter;
    let [mut k0, mut k1] = key;
    for round in 0..10 {
        if round > 0 {
            k0 = k0 + host::PHILOX_W[0];
            k1 = k1 + host::PHILOX_W[1];
        }
        let (hi0, lo0) = mul_hi_lo(host::PHILOX_M[0], &c0);
        let (hi1, lo1) = mul_hi_lo(host::PHILOX_M[1], &c2);
        (c0, c1, c2, c3) = (hi1 ^ c1 ^ k0.clone(), lo1, hi0 ^ c3 ^ k1.clone(), lo0);
    }
    [c0, c1, c2, c3]
}

/// `(hi, lo)` of the 64-bit product `m * x`.
fn mul_hi_lo(m: u32, x: &Expr<u32>) -> (Expr<u32>, Expr<u32>) {
    let wide = x.cast::<u64>() * u64::from(m);
    ((wide.clone() >> 32u32).cast::<u32>(), wide.cast::<u32>())
}

/// A new read-write buffer holding the states of `n` xoroshiro128+ generators, as Numba's
/// `create_xoroshiro128p_states(n, seed, subsequence_start)` makes them (`2 * n` words: `s0`,
/// `s1` of each generator; generator `i` is generator 0 jumped `i` times, 2^64 draws each;
/// generator 0 is `seed` through SplitMix64, jumped `subsequence_start` times). Computed on
/// the host by [`host::xoroshiro128p_states`] (table-driven jumps, split over the cores for
/// many generators) and uploaded.
///
/// ```
/// use coopgraph::random;
/// use coopgraph::runtime::Device;
///
/// let dev = Device::sim();
/// let states = random::create_xoroshiro128p_states(&dev, 1000, 7, 0)?;
/// assert_eq!(states.len(), 2000);
/// assert_eq!(states.to_vec()?, random::host::xoroshiro128p_states(1000, 7, 0));
/// # Ok::<(), coopgraph::runtime::RuntimeError>(())
/// ```
pub fn create_xoroshiro128p_states(
    device: &Device,
    n: usize,
    seed: u64,
    subsequence_start: u64,
) -> Result<runtime::Buffer<u64>, RuntimeError> {
    device.upload(&host::xoroshiro128p_states(n, seed, subsequence_start))
}

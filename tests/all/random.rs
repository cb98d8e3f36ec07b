//! Random numbers: the host generators against published known answers and Numba's serial
//! algorithm, and the kernels' draws (on the default device: the GPU where there is one)
//! against the host's, bit for bit. Every kernel is assembled for every arch.

use super::common::{Batch, device};
use coopgraph::ir::{Expr, index};
use coopgraph::random::host::{self, Xoroshiro128p as HostXoroshiro};
use coopgraph::random::{self, Xoroshiro128p, philox4x32_10};
use coopgraph::{Kernel, KernelBuilder};

fn built(k: KernelBuilder, batch: &mut Batch) -> Kernel {
    let name = k.ir().name.clone();
    let kernel = k.build().unwrap_or_else(|e| panic!("{name}: {e}"));
    batch.add(&kernel);
    kernel
}

/// The thread's index in a 1-D grid.
fn global() -> Expr<u32> {
    index::block_index() * index::block_threads() + index::thread_rank()
}

#[test]
fn splitmix_and_xoroshiro_give_the_reference_outputs() {
    // SplitMix64 seeded with 1234567: its k-th output is the first for seed + k * golden.
    let want = [
        6457827717110365317u64,
        3203168211198807973,
        9817491932198370423,
        4593380528125082431,
        16408922859458223821,
    ];
    for (k, w) in want.iter().enumerate() {
        let seed = 1234567u64.wrapping_add((k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        assert_eq!(host::splitmix64(seed), *w, "output {k}");
    }
    // xoroshiro128+ with the original shifts and rotations (55, 14, 36; Numba's, not the
    // 2018 revision's 24, 16, 37) from the state [1, 2]: go-xoroshiro's reference outputs.
    let want = [
        3u64,
        36029003177443331,
        78883775479546723,
        11565523463456473958,
        4242646275387589636,
        256749404433942852,
        11014892026844973196,
        9059353499452950543,
        8597521241247625872,
        4693915028112570637,
    ];
    let mut g = HostXoroshiro::from_state([1, 2]);
    let got: Vec<u64> = (0..want.len()).map(|_| g.next_u64()).collect();
    assert_eq!(got, want);
}

/// Numba's `init_xoroshiro128p_states_cpu`, line for line: seed, jump `start` times, then
/// each generator is its predecessor jumped once.
fn numba_states(n: usize, seed: u64, start: u64) -> Vec<u64> {
    let mut g = HostXoroshiro::from_seed(seed);
    for _ in 0..start {
        g.jump();
    }
    let mut out = Vec::with_capacity(2 * n);
    for i in 0..n {
        if i > 0 {
            g.jump();
        }
        out.extend(g.state());
    }
    out
}

#[test]
fn fast_states_equal_numbas_serial_loop() {
    for (n, seed, start) in [
        (0, 1, 0),
        (1, 2, 0),
        (5, 3, 4),
        (37, u64::MAX, 1),
        (70_001, 9, 2),
    ] {
        assert_eq!(
            host::xoroshiro128p_states(n, seed, start),
            numba_states(n, seed, start),
            "n {n}, seed {seed}, subsequence_start {start}"
        );
    }
    // Far subsequences: generator i of a start s is generator 0 of s + i.
    let s = (1u64 << 40) + 12345;
    let many = host::xoroshiro128p_states(4, 77, s);
    for i in 0..4 {
        let one = host::xoroshiro128p_states(1, 77, s + i as u64);
        assert_eq!(many[2 * i..2 * i + 2], one[..], "generator {i}");
    }
}

/// Random123's known answers for Philox4x32-10: counter, key, output.
const PHILOX_KAT: [([u32; 4], [u32; 2], [u32; 4]); 3] = [
    (
        [0, 0, 0, 0],
        [0, 0],
        [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8],
    ),
    (
        [u32::MAX; 4],
        [u32::MAX; 2],
        [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd],
    ),
    (
        [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
        [0xa4093822, 0x299f31d0],
        [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1],
    ),
];

#[test]
fn philox_gives_random123s_known_answers_on_host_and_device() {
    for (ctr, key, want) in PHILOX_KAT {
        assert_eq!(host::philox4x32_10(ctr, key), want);
    }
    // On the device: thread t reads its counter (4 words) and key (2), writes 4 words.
    let mut batch = Batch::default();
    let mut k = KernelBuilder::new("philox_kat").block(64);
    let (ctrs, keys) = (k.input::<u32>("ctrs"), k.input::<u32>("keys"));
    let y = k.output::<u32>("y");
    let t = global();
    let c = [0u32, 1, 2, 3].map(|j| ctrs.at(t.clone() * 4u32 + j));
    let key = [0u32, 1].map(|j| keys.at(t.clone() * 2u32 + j));
    let words = philox4x32_10(c, key);
    for (j, w) in words.into_iter().enumerate() {
        k.write(&y, t.clone() * 4u32 + j as u32, w);
    }
    let kernel = built(k, &mut batch);
    let n = 128;
    let mut rng = super::common::Rng::new(13);
    let mut ctr_host: Vec<u32> = (0..4 * n).map(|_| rng.next() as u32).collect();
    let mut key_host: Vec<u32> = (0..2 * n).map(|_| rng.next() as u32).collect();
    for (i, (c, kk, _)) in PHILOX_KAT.iter().enumerate() {
        ctr_host[4 * i..4 * i + 4].copy_from_slice(c);
        key_host[2 * i..2 * i + 2].copy_from_slice(kk);
    }
    let dev = device();
    let (cb, kb) = (
        dev.upload(&ctr_host).unwrap(),
        dev.upload(&key_host).unwrap(),
    );
    let mut yb = dev.alloc_zeroed::<u32>(4 * n).unwrap();
    dev.compile(&kernel)
        .unwrap()
        .launch_grid(2, (&cb, &kb, &mut yb))
        .unwrap();
    let got = yb.to_vec().unwrap();
    for t in 0..n {
        let c = ctr_host[4 * t..4 * t + 4].try_into().unwrap();
        let kk = key_host[2 * t..2 * t + 2].try_into().unwrap();
        assert_eq!(
            got[4 * t..4 * t + 4],
            host::philox4x32_10(c, kk),
            "thread {t}"
        );
    }
    for (i, (_, _, want)) in PHILOX_KAT.iter().enumerate() {
        assert_eq!(got[4 * i..4 * i + 4], want[..], "known answer {i}");
    }
}

/// Draws per thread and launch in the stream test.
const DRAWS: u32 = 3;

/// A kernel whose thread `t` loads generator `t`, draws `DRAWS` times each of: raw bits,
/// `uniform_f64`, `uniform_f32`, `uniform_f32_below_one`; writes them; stores the state.
fn stream_kernel(batch: &mut Batch) -> Kernel {
    let mut k = KernelBuilder::new("xoroshiro_stream").block(64);
    let states = k.buffer::<u64>("states");
    let bits = k.output::<u64>("bits");
    let f64s = k.output::<f64>("f64s");
    let f32s = k.output::<f32>("f32s");
    let below = k.output::<f32>("below");
    let t = global();
    let rng = Xoroshiro128p::load(&mut k, &states, &t);
    k.for_range(0u32, DRAWS, |k, j| {
        let at = t.clone() * DRAWS + j;
        let b = rng.next_u64(k);
        k.write(&bits, &at, b);
        let d = rng.uniform_f64(k);
        k.write(&f64s, &at, d);
        let f = rng.uniform_f32(k);
        k.write(&f32s, &at, f);
        let u = rng.uniform_f32_below_one(k);
        k.write(&below, &at, u);
    });
    rng.store(&mut k, &states, &t);
    built(k, batch)
}

#[test]
fn xoroshiro_streams_equal_the_host_bit_for_bit_across_launches() {
    let mut batch = Batch::default();
    let kernel = stream_kernel(&mut batch);
    let (blocks, n) = (2u32, 128usize);
    let per = n * DRAWS as usize;
    let dev = device();
    let f = dev.compile(&kernel).unwrap();
    let mut sb = random::create_xoroshiro128p_states(dev, n, 2024, 1).unwrap();
    let host_states = host::xoroshiro128p_states(n, 2024, 1);
    let mut gens: Vec<HostXoroshiro> = (0..n)
        .map(|t| HostXoroshiro::from_states(&host_states, t).unwrap())
        .collect();
    for launch in 0..2 {
        let mut bits = dev.alloc_zeroed::<u64>(per).unwrap();
        let mut f64s = dev.alloc_zeroed::<f64>(per).unwrap();
        let mut f32s = dev.alloc_zeroed::<f32>(per).unwrap();
        let mut below = dev.alloc_zeroed::<f32>(per).unwrap();
        f.launch_grid(
            blocks,
            (&mut sb, &mut bits, &mut f64s, &mut f32s, &mut below),
        )
        .unwrap();
        let (bits, f64s) = (bits.to_vec().unwrap(), f64s.to_vec().unwrap());
        let (f32s, below) = (f32s.to_vec().unwrap(), below.to_vec().unwrap());
        for (t, g) in gens.iter_mut().enumerate() {
            for j in 0..DRAWS as usize {
                let at = t * DRAWS as usize + j;
                let what = format!("launch {launch}, thread {t}, draw {j}");
                assert_eq!(bits[at], g.next_u64(), "bits: {what}");
                assert_eq!(f64s[at].to_bits(), g.uniform_f64().to_bits(), "f64: {what}");
                assert_eq!(f32s[at].to_bits(), g.uniform_f32().to_bits(), "f32: {what}");
                let u = g.uniform_f32_below_one();
                assert_eq!(below[at].to_bits(), u.to_bits(), "below one: {what}");
            }
        }
        let want: Vec<u64> = gens.iter().flat_map(|g| g.state()).collect();
        assert_eq!(sb.to_vec().unwrap(), want, "states after launch {launch}");
    }
}

#[test]
fn uniform_f32_rounds_to_one_as_numbas_and_below_one_does_not() {
    let mut batch = Batch::default();
    let mut k = KernelBuilder::new("xoroshiro_edge").block(32);
    let states = k.buffer::<u64>("states");
    let y = k.output::<f32>("y");
    let t = index::thread_rank();
    k.if_(t.lt(2u32), |k| {
        let rng = Xoroshiro128p::load(k, &states, &t);
        let numba = rng.uniform_f32(k);
        let below = rng.uniform_f32_below_one(k);
        k.write(&y, t.clone() * 2u32, numba);
        k.write(&y, t.clone() * 2u32 + 1u32, below);
    });
    let kernel = built(k, &mut batch);
    // Generator 0 draws u64::MAX first; generator 1 draws 2^64 - 2^39, the least draw Numba
    // rounds to 1.0 (a tie, to even).
    let edge = 1u64 << 39;
    let init = [u64::MAX, 0, u64::MAX - edge + 1, 0];
    let dev = device();
    let mut sb = dev.upload(&init).unwrap();
    let mut yb = dev.alloc_zeroed::<f32>(4).unwrap();
    dev.compile(&kernel)
        .unwrap()
        .launch_grid(1, (&mut sb, &mut yb))
        .unwrap();
    let got = yb.to_vec().unwrap();
    let mut want = Vec::new();
    for g in 0..2 {
        let mut h = HostXoroshiro::from_states(&init, g).unwrap();
        want.push(h.uniform_f32());
        want.push(h.uniform_f32_below_one());
    }
    assert_eq!(got, want);
    assert_eq!(got[0], 1.0, "Numba's rounding of u64::MAX");
    assert_eq!(got[1], host::BELOW_ONE_F32);
    assert_eq!(host::unit_f32(u64::MAX - edge), host::BELOW_ONE_F32);
    assert_eq!(got[2], 1.0, "2^64 - 2^39 rounds up");
}

#[test]
fn normals_follow_numbas_formula_and_distribution() {
    let mut batch = Batch::default();
    let mut k = KernelBuilder::new("xoroshiro_normal").block(64);
    let states = k.buffer::<u64>("states");
    let y = k.output::<f32>("y");
    let t = global();
    let rng = Xoroshiro128p::load(&mut k, &states, &t);
    let per = 16u32;
    k.for_range(0u32, per, |k, j| {
        let z = rng.normal_f32(k);
        k.write(&y, t.clone() * per + j, z);
    });
    rng.store(&mut k, &states, &t);
    let kernel = built(k, &mut batch);
    let n = 256;
    let dev = device();
    let mut sb = random::create_xoroshiro128p_states(dev, n, 5, 0).unwrap();
    let mut yb = dev.alloc_zeroed::<f32>(n * per as usize).unwrap();
    dev.compile(&kernel)
        .unwrap()
        .launch_grid(4, (&mut sb, &mut yb))
        .unwrap();
    let got = yb.to_vec().unwrap();
    let host_states = host::xoroshiro128p_states(n, 5, 0);
    for t in 0..n {
        let mut g = HostXoroshiro::from_states(&host_states, t).unwrap();
        for j in 0..per as usize {
            let (d, h) = (got[t * per as usize + j], g.normal_f32());
            // The library's ln and cos against Rust's: within their last bits.
            assert!(
                (d - h).abs() <= 4e-6 * h.abs().max(1.0),
                "thread {t}, draw {j}: {d} on the device, {h} on the host"
            );
        }
    }
    let count = got.len() as f64;
    let mean = got.iter().map(|&z| f64::from(z)).sum::<f64>() / count;
    let var = got
        .iter()
        .map(|&z| (f64::from(z) - mean).powi(2))
        .sum::<f64>()
        / count;
    // 4096 samples: the mean's deviation is 1/64, the variance's about 0.022.
    assert!(mean.abs() < 5.0 / 64.0, "mean {mean}");
    assert!((var - 1.0).abs() < 0.12, "variance {var}");
}

#[test]
fn f64_normals_follow_numbas_formula_and_distribution() {
    let mut batch = Batch::default();
    let mut k = KernelBuilder::new("xoroshiro_normal64").block(48);
    let states = k.buffer::<u64>("states");
    let y = k.output::<f64>("y");
    let t = global();
    let rng = Xoroshiro128p::load(&mut k, &states, &t);
    let per = 16u32;
    k.for_range(0u32, per, |k, j| {
        let z = rng.normal_f64(k);
        k.write(&y, t.clone() * per + j, z);
    });
    rng.store(&mut k, &states, &t);
    let kernel = built(k, &mut batch);
    let n = 240;
    let dev = device();
    let mut sb = random::create_xoroshiro128p_states(dev, n, 9, 3).unwrap();
    let mut yb = dev.alloc_zeroed::<f64>(n * per as usize).unwrap();
    dev.compile(&kernel)
        .unwrap()
        .launch_grid(5, (&mut sb, &mut yb))
        .unwrap();
    let got = yb.to_vec().unwrap();
    let host_states = host::xoroshiro128p_states(n, 9, 3);
    for t in 0..n {
        let mut g = HostXoroshiro::from_states(&host_states, t).unwrap();
        for j in 0..per as usize {
            let (d, h) = (got[t * per as usize + j], g.normal_f64());
            // The f32 ln (within an ulp of Rust's) decides the difference: 2^-24 relative
            // in ln u1, half that after the square root.
            assert!(
                (d - h).abs() <= 2e-7 * h.abs().max(1.0),
                "thread {t}, draw {j}: {d} on the device, {h} on the host"
            );
        }
    }
    let count = got.len() as f64;
    let mean = got.iter().sum::<f64>() / count;
    let var = got.iter().map(|&z| (z - mean).powi(2)).sum::<f64>() / count;
    // 3840 samples: the mean's deviation is about 1/62, the variance's about 0.023.
    assert!(mean.abs() < 5.0 / 62.0, "mean {mean}");
    assert!((var - 1.0).abs() < 0.12, "variance {var}");
}

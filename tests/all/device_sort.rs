//! The device-wide radix sort (Onesweep: upfront histogram, one pass per 8-bit digit with a
//! per-digit decoupled look-back) against stable CPU sorts: every key type, bit ranges,
//! descending, pairs with values of several types, sizes around the tile, floats with
//! zeros of both signs, infinities and NaNs, and blocks run interleaved in linear, reversed
//! and shuffled order on the simulator with every checker on.

use crate::common::{BLOCK_ORDERS, Rng, assert_same, device, sim_in};
use coopgraph::Error;
use coopgraph::algorithms::{
    AlgorithmError, DeviceRadixSort, SortKey, SortWorkspace, Tuning, radix_sort_keys,
    radix_sort_pairs,
};
use coopgraph::ir::{DType, Element};
use coopgraph::runtime::{Device, DeviceElement};

/// A small tuning (tiles of 192), so that many tiles stay cheap on the simulator.
const SMALL: Tuning = Tuning {
    threads: 64,
    items: 3,
};

/// Sizes around the tile: empty, one key, a tile less one, a tile, two and a bit, many.
fn sizes(tile: usize) -> [usize; 6] {
    [0, 1, tile - 1, tile, 2 * tile + 1, 5 * tile + 37]
}

/// A key's sort bits as CUB orders keys, computed on the host: unsigned as they are, signed
/// with the sign flipped, floats twiddled (every bit of a negative, the sign of a positive),
/// descending with every bit flipped; the two zeros alike.
fn sort_bits<K: Element>(k: K, descending: bool) -> u64 {
    let w = K::DTYPE.bytes() * 8;
    let all = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
    let sign = 1u64 << (w - 1);
    let raw = k.to_bits() & all;
    let bits = match K::DTYPE {
        DType::F32 | DType::F64 => {
            let raw = if raw == sign { 0 } else { raw };
            raw ^ if raw & sign != 0 { all } else { sign }
        }
        DType::I8 | DType::I16 | DType::I32 | DType::I64 => raw ^ sign,
        _ => raw,
    };
    if descending { bits ^ all } else { bits }
}

/// The permutation a stable sort by bits `begin..end` of the sort bits makes.
fn order_ref<K: Element>(keys: &[K], begin: u32, end: u32, descending: bool) -> Vec<usize> {
    let width = end - begin;
    let mask = if width == 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    let mut at: Vec<usize> = (0..keys.len()).collect();
    at.sort_by_key(|&i| (sort_bits(keys[i], descending) >> begin) & mask);
    at
}

/// Random keys of `K`: any bits, or (`small`) few distinct values so that runs of equal keys
/// test stability; floats of any bits include NaNs, infinities and both zeros.
fn keys<K: Element>(rng: &mut Rng, n: usize, small: bool) -> Vec<K> {
    let specials: [u64; 6] = match K::DTYPE {
        DType::F32 => [
            0x8000_0000,
            0,
            0x7f80_0000,
            0xff80_0000,
            0x7fc0_0001,
            0xffc0_0000,
        ],
        DType::F64 => [
            1 << 63,
            0,
            0x7ff0 << 48,
            0xfff0 << 48,
            (0x7ff8 << 48) | 1,
            0xfff8 << 48,
        ],
        _ => [0; 6],
    };
    (0..n)
        .map(|_| {
            let r = rng.next();
            if small {
                K::cast_from_i64((r % 9) as i64 - 4)
            } else if matches!(K::DTYPE, DType::F32 | DType::F64) && r.is_multiple_of(4) {
                K::from_bits(specials[(r >> 8) as usize % 6])
            } else {
                K::from_bits(rng.next())
            }
        })
        .collect()
}

/// Sorts `xs` (with their positions as values when `pairs`) on `dev` with `sort`'s settings,
/// checks the keys (bitwise) and the values against the CPU's stable sort, and that the
/// element past the output is untouched.
fn check<K: SortKey>(
    dev: &Device,
    xs: &[K],
    bits: Option<(u32, u32)>,
    descending: bool,
    tuning: Tuning,
    ws: &mut SortWorkspace,
) {
    let w = K::DTYPE.bytes() * 8;
    let (begin, end) = bits.unwrap_or((0, w));
    let want = order_ref(xs, begin, end, descending);
    let want_keys: Vec<K> = want.iter().map(|&i| xs[i]).collect();
    let mut keys_only = DeviceRadixSort::keys::<K>().tuning(tuning);
    let mut pairs = DeviceRadixSort::pairs::<K, u32>().tuning(tuning);
    if let Some((b, e)) = bits {
        keys_only = keys_only.bits(b, e);
        pairs = pairs.bits(b, e);
    }
    if descending {
        keys_only = keys_only.descending();
        pairs = pairs.descending();
    }
    let what = format!(
        "{} n={} bits={begin}..{end} desc={descending}",
        K::DTYPE,
        xs.len()
    );
    let input = dev.upload(xs).expect("upload");
    let sentinel = K::cast_from_i64(77);
    let mut out = dev.alloc_filled(xs.len() + 1, sentinel).expect("alloc");
    let sort = keys_only.prepare(dev).expect("prepares");
    sort.run(&input, &mut out, ws).expect("sorts");
    let got = out.to_vec().expect("read back");
    assert_same(&got[..xs.len()], &want_keys, &format!("keys {what}"));
    assert!(
        got[xs.len()].to_bits() == sentinel.to_bits(),
        "{what}: tail written"
    );
    let positions: Vec<u32> = (0..xs.len() as u32).collect();
    let values = dev.upload(&positions).expect("upload");
    let mut vout = dev.alloc_zeroed::<u32>(xs.len()).expect("alloc");
    let sort = pairs.prepare(dev).expect("prepares");
    sort.run(&input, &mut out, &values, &mut vout, ws)
        .expect("sorts pairs");
    let got = out.to_vec().expect("read back");
    assert_same(&got[..xs.len()], &want_keys, &format!("pair keys {what}"));
    let want_values: Vec<u32> = want.iter().map(|&i| i as u32).collect();
    assert_same(
        &vout.to_vec().expect("read"),
        &want_values,
        &format!("values {what}"),
    );
}

/// Every size, ascending and descending, random and few-valued keys.
fn every_size<K: SortKey>(seed: u64) {
    let dev = device();
    let mut rng = Rng::new(seed);
    let mut ws = SortWorkspace::new(dev).expect("ws");
    for (i, n) in sizes(SMALL.tile_items() as usize).into_iter().enumerate() {
        let xs = keys::<K>(&mut rng, n, i % 2 == 1);
        check(dev, &xs, None, i % 3 == 2, SMALL, &mut ws);
    }
}

#[test]
fn keys_of_32_bits() {
    every_size::<u32>(1);
    every_size::<i32>(2);
    every_size::<f32>(3);
}

#[test]
fn keys_of_64_bits() {
    every_size::<u64>(4);
    every_size::<i64>(5);
    every_size::<f64>(6);
}

#[test]
fn keys_of_8_and_16_bits() {
    every_size::<u8>(7);
    every_size::<i8>(8);
    every_size::<u16>(9);
    every_size::<i16>(10);
}

/// Bit ranges: one pass, a partial last digit, a range above bit 0, every digit of a
/// 64-bit key but the top; descending among them.
#[test]
fn bit_ranges() {
    let dev = device();
    let mut rng = Rng::new(21);
    let mut ws = SortWorkspace::new(dev).expect("ws");
    let n = 3 * SMALL.tile_items() as usize + 11;
    let xs = keys::<u32>(&mut rng, n, false);
    for (bits, desc) in [
        ((0, 8), false),
        ((3, 14), true),
        ((20, 32), false),
        ((31, 32), true),
    ] {
        check(dev, &xs, Some(bits), desc, SMALL, &mut ws);
    }
    let ys = keys::<i64>(&mut rng, n, false);
    check(dev, &ys, Some((5, 61)), false, SMALL, &mut ws);
    let zs = keys::<f32>(&mut rng, n, false);
    check(dev, &zs, Some((16, 32)), true, SMALL, &mut ws);
    let bs = keys::<i8>(&mut rng, n, false);
    check(dev, &bs, Some((2, 7)), false, SMALL, &mut ws);
}

/// Floats against the CPU's order of values: NaN-free keys with both zeros sort as
/// `partial_cmp` orders them (the zeros equal, kept in input order).
#[test]
fn floats_in_value_order() {
    let dev = device();
    let mut rng = Rng::new(23);
    let n = 4 * SMALL.tile_items() as usize + 5;
    let xs: Vec<f64> = (0..n)
        .map(|_| match rng.next() % 5 {
            0 => -0.0,
            1 => 0.0,
            2 => f64::INFINITY,
            _ => rng.value::<f64>(),
        })
        .collect();
    let sort = DeviceRadixSort::pairs::<f64, u32>()
        .tuning(SMALL)
        .prepare(dev)
        .expect("prepares");
    let x = dev.upload(&xs).expect("upload");
    let idx = dev.upload(&(0..n as u32).collect::<Vec<_>>()).expect("up");
    let mut y = dev.alloc_zeroed::<f64>(n).expect("alloc");
    let mut v = dev.alloc_zeroed::<u32>(n).expect("alloc");
    let mut ws = SortWorkspace::new(dev).expect("ws");
    sort.run(&x, &mut y, &idx, &mut v, &mut ws).expect("sorts");
    let mut want_zeros: Vec<u32> = (0..n as u32).collect();
    want_zeros.sort_by(|&a, &b| xs[a as usize].partial_cmp(&xs[b as usize]).expect("no NaN"));
    assert_same(&v.to_vec().expect("read"), &want_zeros, "f64 value order");
}

/// Values of other types than the keys' ride along (u8 beside u64 keys, f64 beside u16).
#[test]
fn values_of_any_type() {
    let dev = device();
    let mut rng = Rng::new(29);
    let n = 2 * SMALL.tile_items() as usize + 50;
    let ks = keys::<u64>(&mut rng, n, true);
    let vs: Vec<u8> = rng.vec(n);
    let x = dev.upload(&ks).expect("upload");
    let v = dev.upload(&vs).expect("upload");
    let (mut y, mut w) = (
        dev.alloc_zeroed::<u64>(n).expect("alloc"),
        dev.alloc_zeroed::<u8>(n).expect("alloc"),
    );
    radix_sort_pairs(dev, &x, &mut y, &v, &mut w).expect("sorts");
    let at = order_ref(&ks, 0, 64, false);
    assert_same(
        &y.to_vec().expect("read"),
        &at.iter().map(|&i| ks[i]).collect::<Vec<_>>(),
        "u64 keys",
    );
    assert_same(
        &w.to_vec().expect("read"),
        &at.iter().map(|&i| vs[i]).collect::<Vec<_>>(),
        "u8 values",
    );
    let ks = keys::<u16>(&mut rng, n, false);
    let vs: Vec<f64> = rng.vec(n);
    let sort = DeviceRadixSort::pairs::<u16, f64>()
        .descending()
        .tuning(Tuning {
            threads: 96,
            items: 2,
        })
        .prepare(dev)
        .expect("prepares");
    let x = dev.upload(&ks).expect("upload");
    let v = dev.upload(&vs).expect("upload");
    let (mut y, mut w) = (
        dev.alloc_zeroed::<u16>(n).expect("alloc"),
        dev.alloc_zeroed::<f64>(n).expect("alloc"),
    );
    sort.run(
        &x,
        &mut y,
        &v,
        &mut w,
        &mut SortWorkspace::new(dev).expect("ws"),
    )
    .expect("sorts");
    let at = order_ref(&ks, 0, 16, true);
    assert_same(
        &y.to_vec().expect("read"),
        &at.iter().map(|&i| ks[i]).collect::<Vec<_>>(),
        "u16 desc",
    );
    assert_same(
        &w.to_vec().expect("read"),
        &at.iter().map(|&i| vs[i]).collect::<Vec<_>>(),
        "f64 values",
    );
}

/// The default tuning (tiles of 4096) through the convenience function.
#[test]
fn default_tuning() {
    let dev = device();
    let mut rng = Rng::new(31);
    for n in [4095, 2 * 4096 + 3] {
        let xs = keys::<u32>(&mut rng, n, false);
        let x = dev.upload(&xs).expect("upload");
        let mut y = dev.alloc_zeroed::<u32>(n).expect("alloc");
        radix_sort_keys(dev, &x, &mut y).expect("sorts");
        let mut want = xs.clone();
        want.sort();
        assert_same(&y.to_vec().expect("read"), &want, "default u32");
    }
}

/// Blocks interleaved in every order: tiles come from the counter in arrival order, and a
/// digit's thread meets tiles before that have published only their count, or nothing yet;
/// its look-back reads 4 tiles a step (keys of up to 4 bytes alone), 2 (8-byte keys alone)
/// or 1 (pairs: `check` sorts pairs too), over windows reaching past tile 0.
#[test]
fn look_back_in_any_block_order() {
    let tuning = Tuning {
        threads: 32,
        items: 2,
    };
    let mut rng = Rng::new(37);
    for order in BLOCK_ORDERS {
        let dev = sim_in(order);
        let mut ws = SortWorkspace::new(&dev).expect("ws");
        let xs = keys::<u16>(&mut rng, 64 * 9 + 5, false);
        check(&dev, &xs, None, false, tuning, &mut ws);
        let ys = keys::<f32>(&mut rng, 64 * 5 + 1, true);
        check(&dev, &ys, Some((24, 32)), true, tuning, &mut ws);
        let zs = keys::<u64>(&mut rng, 64 * 11 + 7, false);
        check(&dev, &zs, Some((40, 64)), false, tuning, &mut ws);
    }
}

/// One histogram launch, one offsets launch and one launch per digit pass per call, and a workspace reused
/// across calls of several lengths and types.
#[test]
fn launches_and_reuse() {
    let dev = device();
    let sort = DeviceRadixSort::keys::<u32>()
        .bits(0, 24)
        .tuning(SMALL)
        .prepare(dev)
        .expect("prepares");
    assert_eq!(sort.passes(), 3);
    let names: Vec<String> = sort.functions().map(|f| f.name().to_string()).collect();
    let launches = || -> usize {
        names
            .iter()
            .map(|n| crate::common::logged_with(&format!("launch `{n}`")).len())
            .sum()
    };
    let before = launches();
    let mut ws = SortWorkspace::new(dev).expect("ws");
    let mut rng = Rng::new(41);
    for (call, n) in [700usize, 30, 1200].into_iter().enumerate() {
        let xs = keys::<u32>(&mut rng, n, false);
        let x = dev.upload(&xs).expect("upload");
        let mut y = dev.alloc_zeroed::<u32>(n).expect("alloc");
        sort.run(&x, &mut y, &mut ws).expect("sorts");
        let at = order_ref(&xs, 0, 24, false);
        let want: Vec<u32> = at.iter().map(|&i| xs[i]).collect();
        assert_same(&y.to_vec().expect("read"), &want, "24 bits");
        assert_eq!(launches() - before, 5 * (call + 1), "5 launches per call");
    }
    assert_eq!(ws.passes(), 9);
    let xs = keys::<i64>(&mut rng, 300, false);
    check(dev, &xs, None, true, SMALL, &mut ws);
}

fn sort_error<K: SortKey + DeviceElement>(r: Result<(), Error>) -> AlgorithmError {
    match r {
        Err(Error::Algorithm(e)) => e,
        other => panic!("{}: expected an algorithm error, got {other:?}", K::DTYPE),
    }
}

#[test]
fn typed_errors() {
    let dev = device();
    for (b, e) in [(0, 0), (5, 3), (0, 33), (32, 40)] {
        let r = DeviceRadixSort::keys::<f32>()
            .bits(b, e)
            .prepare(dev)
            .map(|_| ());
        assert_eq!(
            sort_error::<f32>(r),
            AlgorithmError::BitRange {
                begin: b,
                end: e,
                key_bits: 32
            }
        );
    }
    let r = DeviceRadixSort::keys::<u8>()
        .bits(0, 9)
        .prepare(dev)
        .map(|_| ());
    assert!(matches!(
        sort_error::<u8>(r),
        AlgorithmError::BitRange { key_bits: 8, .. }
    ));
    let bad = Tuning {
        threads: 48,
        items: 2,
    };
    let r = DeviceRadixSort::keys::<u32>()
        .tuning(bad)
        .prepare(dev)
        .map(|_| ());
    assert!(matches!(
        sort_error::<u32>(r),
        AlgorithmError::Tuning {
            threads: 48,
            items: 2
        }
    ));
    let x = dev.upload(&[3u32, 1, 2]).expect("upload");
    let mut short = dev.alloc_zeroed::<u32>(2).expect("alloc");
    let r = radix_sort_keys(dev, &x, &mut short);
    assert_eq!(
        sort_error::<u32>(r),
        AlgorithmError::OutputTooShort {
            input: 3,
            output: 2
        }
    );
    let mut y = dev.alloc_zeroed::<u32>(3).expect("alloc");
    let v = dev.upload(&[1u8, 2]).expect("upload");
    let mut w = dev.alloc_zeroed::<u8>(3).expect("alloc");
    let r = radix_sort_pairs(dev, &x, &mut y, &v, &mut w);
    assert_eq!(
        sort_error::<u32>(r),
        AlgorithmError::ValuesLength { keys: 3, values: 2 }
    );
    let v = dev.upload(&[1u8, 2, 3]).expect("upload");
    let mut w = dev.alloc_zeroed::<u8>(1).expect("alloc");
    let r = radix_sort_pairs(dev, &x, &mut y, &v, &mut w);
    assert_eq!(
        sort_error::<u32>(r),
        AlgorithmError::OutputTooShort {
            input: 3,
            output: 1
        }
    );
    let other = Device::sim();
    let sort = DeviceRadixSort::keys::<u32>()
        .prepare(dev)
        .expect("prepares");
    let r = sort.run(&x, &mut y, &mut SortWorkspace::new(&other).expect("ws"));
    assert!(matches!(
        sort_error::<u32>(r),
        AlgorithmError::WrongDevice { .. }
    ));
}

/// Every kernel of a few variants assembles for every arch.
#[test]
fn kernels_assemble() {
    let mut batch = crate::common::Batch::default();
    for k in DeviceRadixSort::keys::<u32>().kernels().expect("builds") {
        batch.add(&k);
    }
    for k in DeviceRadixSort::pairs::<f64, u16>()
        .bits(3, 20)
        .descending()
        .pair_kernels()
        .expect("builds")
    {
        batch.add(&k);
    }
    for k in DeviceRadixSort::keys::<i8>().kernels().expect("builds") {
        batch.add(&k);
    }
    batch.finish();
}

/// The block barriers the sort's kernels record themselves are needed: without the
/// histogram's (after zeroing the counters, before adding them to the global ones) or the
/// pass's last (before the scatter reads the digits' bases) the race checker reports a race.
/// (The pass's others are the block radix sort's and the block histogram's, which their own
/// tests show necessary.)
#[test]
fn every_barrier_is_needed() {
    let tuning = Tuning {
        threads: 64,
        items: 2,
    };
    let kernels = DeviceRadixSort::pairs::<u32, u16>()
        .bits(0, 8)
        .tuning(tuning)
        .pair_kernels()
        .expect("builds");
    let dev = crate::common::race_checker();
    let n = 3 * tuning.tile_items() as usize - 5;
    let mut rng = Rng::new(43);
    let xs: Vec<u32> = rng.vec(n);
    let vs: Vec<u16> = rng.vec(n);
    let hist = |k: &coopgraph::Kernel| {
        let f = crate::common::compiled(&dev, k)?;
        let x = dev.upload(&xs)?;
        let mut h = dev.alloc_zeroed::<u64>(256)?;
        f.launch_grid(2, (&x, &mut h, n as u32, 2u32))?;
        h.to_vec()
    };
    let mut want = vec![0u64; 256];
    for x in &xs {
        want[(x & 0xff) as usize] += 1;
    }
    assert_eq!(hist(&kernels[0]).expect("runs"), want);
    assert_eq!(
        crate::common::assert_sync_blocks_necessary(&kernels[0], hist),
        2
    );
    // The offsets kernel turns the counts into each digit's first position.
    let firsts: Vec<u64> = want
        .iter()
        .scan(0u64, |run, &c| {
            let first = *run;
            *run += c;
            Some(first)
        })
        .collect();
    let offsets = |k: &coopgraph::Kernel| {
        let f = crate::common::compiled(&dev, k)?;
        let mut h = dev.upload(&want)?;
        f.launch_grid(1, (&mut h,))?;
        h.to_vec()
    };
    assert_eq!(offsets(&kernels[1]).expect("runs"), firsts);
    let counts = firsts.clone();
    let pass = |k: &coopgraph::Kernel| {
        let f = crate::common::compiled(&dev, k)?;
        let (x, v) = (dev.upload(&xs)?, dev.upload(&vs)?);
        let (mut y, mut w) = (dev.alloc_zeroed::<u32>(n)?, dev.alloc_zeroed::<u16>(n)?);
        let mut status = dev.alloc_zeroed::<u64>(3 * 256 + 1)?;
        let mut h = dev.upload(&counts)?;
        let args = (
            &x,
            &mut y,
            &v,
            &mut w,
            n as u32,
            &mut status,
            &mut h,
            1u32,
            0u64,
        );
        f.launch_grid(3, args)?;
        Ok((y.to_vec()?, w.to_vec()?))
    };
    let at = order_ref(&xs, 0, 8, false);
    let sorted = (
        at.iter().map(|&i| xs[i]).collect::<Vec<_>>(),
        at.iter().map(|&i| vs[i]).collect::<Vec<_>>(),
    );
    assert_eq!(pass(&kernels[2]).expect("runs"), sorted);
    let last = kernels[2].sync_blocks() - 1;
    let without = kernels[2].without_sync_block(last).expect("exists");
    let result = pass(&without);
    assert!(
        matches!(
            result,
            Err(coopgraph::runtime::RuntimeError::Sim(
                coopgraph::sim::SimError::Race(_)
            ))
        ),
        "without the bases' barrier the race checker says {result:?}"
    );
}

//! What the sort examples share: the keys' bit order on the host, random keys with many equal
//! ones, and the check of sorted tiles against a stable CPU sort.

use coopgraph::ir::{DType, Element};

/// The key's bits in the order the sorts (and CUB's radix sort) put keys in: a total order,
/// floats with NaNs and infinities included.
pub fn ordered_bits<K: Element>(key: K) -> u64 {
    let w = K::DTYPE.bytes() * 8;
    let sign = 1u64 << (w - 1);
    let ones = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
    let b = key.to_bits();
    match K::DTYPE {
        DType::F32 | DType::F64 if b & sign != 0 => b ^ ones,
        DType::F32 | DType::F64 | DType::I8 | DType::I16 | DType::I32 | DType::I64 => b ^ sign,
        _ => b,
    }
}

/// Random keys (one in 8 from a small set, so equal keys show) and each key's position in
/// its tile as its value.
pub fn inputs<K: Element>(n: usize, tile: usize) -> (Vec<K>, Vec<u32>) {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let keys = (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let bits = if state & 7 == 0 { state >> 60 } else { state };
            let bits = if K::DTYPE.bytes() == 8 {
                bits
            } else {
                bits >> 16
            };
            K::from_bits(bits)
        })
        .collect();
    let values = (0..n).map(|i| (i % tile) as u32).collect();
    (keys, values)
}

/// Checks the sorted tiles: every tile in order, and every `every`-th tile (with its values,
/// which show stability) against a stable CPU sort. Exits non-zero on the first difference.
pub fn check<K: Element>(
    what: &str,
    tile: usize,
    every: usize,
    xs: &[K],
    ys: &[K],
    ws: Option<&[u32]>,
) {
    for (t, (input, out)) in xs.chunks(tile).zip(ys.chunks(tile)).enumerate() {
        if let Some(i) = (1..out.len()).find(|&i| ordered_bits(out[i - 1]) > ordered_bits(out[i])) {
            eprintln!("error: {what}: tile {t} is out of order at {i}");
            std::process::exit(1);
        }
        if t % every != 0 {
            continue;
        }
        let mut order: Vec<usize> = (0..input.len()).collect();
        order.sort_by_key(|&i| ordered_bits(input[i]));
        for (i, &o) in order.iter().enumerate() {
            let value_ok = ws.is_none_or(|w| w[t * tile + i] as usize == o);
            if ordered_bits(out[i]) != ordered_bits(input[o]) || !value_ok {
                eprintln!("error: {what}: tile {t} position {i} should hold input position {o}");
                std::process::exit(1);
            }
        }
    }
}

/// Without a GPU the timed configurations do not run. With `COOPGRAPH_DUMP_PTX` set, `build`
/// builds their kernels (and so writes their PTX there), for reading their SASS beside CUB's;
/// says which happened.
pub fn without_gpu(build: impl FnOnce()) {
    if std::env::var_os("COOPGRAPH_DUMP_PTX").is_some() {
        build();
        println!("(no GPU: the timed configurations were built, not run)");
    } else {
        println!("(no GPU: the timed configurations run only there)");
    }
}

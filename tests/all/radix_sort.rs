//! Block radix sort: keys and pairs of every dtype against a stable CPU sort of the keys' sort
//! bits, over random block sizes (not only powers of two), items per thread, bit ranges,
//! digit widths, both orders, both output arrangements and partial tiles; every barrier shown
//! necessary; every typed error.

use super::common::{Rng, assert_same, compiled, device, race_checker};
use coopgraph::ir::{
    DType, Element, RadixSort, RadixSortProblem, SortOrder, SortOutput, VerifyErrorKind,
};
use coopgraph::runtime::{Device, DeviceElement, RuntimeError};
use coopgraph::{Error, Kernel, KernelBuilder, Load, Store};
use proptest::prelude::*;

/// One sort to run: the kernel's shape and the sort's controls.
#[derive(Debug, Clone, Copy)]
struct Case {
    block: u32,
    items: u32,
    begin: u32,
    end: u32,
    radix_bits: u32,
    order: SortOrder,
    output: SortOutput,
    /// The tile's valid count, when partial.
    valid: Option<u32>,
    pairs: bool,
    /// How the keys arrive: blocked, striped over the block, or striped within groups of two
    /// threads (the values always arrive blocked; they pair with their keys by position).
    keys_in: KeysIn,
    seed: u64,
}

/// The arrangement the keys are loaded in.
#[derive(Debug, Clone, Copy, PartialEq)]
enum KeysIn {
    Blocked,
    Striped,
    PairStriped,
}

impl Case {
    fn controls(&self, n: Option<coopgraph::ir::Scalar<u32>>) -> RadixSort {
        let c = match self.order {
            SortOrder::Ascending => RadixSort::ascending(),
            SortOrder::Descending => RadixSort::descending(),
        };
        let c = c
            .bits(self.begin, self.end)
            .radix_bits(self.radix_bits)
            .output(self.output);
        match n {
            Some(n) => c.valid_items(n),
            None => c,
        }
    }

    fn tile(&self) -> usize {
        (self.block * self.items) as usize
    }
}

/// A kernel sorting one tile per block of `x` (with values `v` when pairs) into `y` (`w`).
fn sort_kernel<K: Element, V: Element>(case: &Case) -> Kernel {
    let name = format!("radix_{:?}_{:?}", K::DTYPE, V::DTYPE).to_lowercase();
    let mut k = KernelBuilder::new(&name)
        .block(case.block)
        .items_per_thread(case.items);
    let (x, y) = (k.input::<K>("x"), k.output::<K>("y"));
    let (v, w) = (k.input::<V>("v"), k.output::<V>("w"));
    let n = k.scalar::<u32>("n");
    let b = k.this_block();
    let store = match case.output {
        SortOutput::Blocked => Store::direct(),
        SortOutput::Striped => Store::striped(),
    };
    let (load, store, controls) = match case.valid {
        Some(_) => (
            Load::direct().valid_items(n),
            store.valid_items(n),
            case.controls(Some(n)),
        ),
        None => (Load::direct(), store, case.controls(None)),
    };
    let keys = match case.keys_in {
        KeysIn::Blocked => k.load_from(b, &x, load.clone()),
        KeysIn::Striped => {
            let striped = Load::striped();
            let striped = match case.valid {
                Some(_) => striped.valid_items(n),
                None => striped,
            };
            k.load_from(b, &x, striped)
        }
        // Each pair of threads loads its own part of the tile (a full tile only).
        KeysIn::PairStriped => {
            let pair = k.this_warp().group_by(2);
            k.load_from(pair, &x, Load::striped())
        }
    };
    if case.pairs {
        let vals = k.load_from(b, &v, Load::direct());
        let (sk, sv) = k.radix_sort_pairs(b, &keys, &vals, controls);
        k.store_to(b, &y, &sk, store.clone());
        k.store_to(b, &w, &sv, store);
    } else {
        let sk = k.radix_sort(b, &keys, controls);
        k.store_to(b, &y, &sk, store);
    }
    k.build().unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A key's sort bits as CUB orders them: sign flipped for signed integers, floats by their
/// bits (negative ones inverted), every bit inverted for a descending sort.
pub(super) fn sort_bits<K: Element>(key: K, order: SortOrder) -> u64 {
    let w = K::DTYPE.bytes() * 8;
    let ones = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
    let sign = 1u64 << (w - 1);
    let b = key.to_bits();
    let t = match K::DTYPE {
        DType::F32 | DType::F64 if b & sign != 0 => b ^ ones,
        DType::F32 | DType::F64 | DType::I8 | DType::I16 | DType::I32 | DType::I64 => b ^ sign,
        _ => b,
    };
    match order {
        SortOrder::Ascending => t,
        SortOrder::Descending => t ^ ones,
    }
}

/// The CPU's answer for one tile: the positions of the valid keys, stably sorted by the
/// controls' bits of their sort bits.
fn reference_order<K: Element>(keys: &[K], case: &Case) -> Vec<usize> {
    let width = case.end - case.begin;
    let mask = if width == 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    let digit = |k: K| (sort_bits(k, case.order) >> case.begin) & mask;
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by_key(|&i| digit(keys[i]));
    order
}

/// Keys with many repeats and special values, so that stability and NaN placement show.
pub(super) fn keys<K: Element>(rng: &mut Rng, n: usize) -> Vec<K> {
    let specials: Vec<K> = match K::DTYPE {
        DType::F32 => [
            f32::NAN,
            -f32::NAN,
            f32::INFINITY,
            -f32::INFINITY,
            0.0,
            -0.0,
        ]
        .iter()
        .map(|v| K::from_bits(v.to_bits() as u64))
        .collect(),
        DType::F64 => [
            f64::NAN,
            -f64::NAN,
            f64::INFINITY,
            -f64::INFINITY,
            0.0,
            -0.0,
        ]
        .iter()
        .map(|v| K::from_bits(v.to_bits()))
        .collect(),
        _ => vec![K::min_value(), K::max_value(), K::zero()],
    };
    let pool: Vec<K> = rng.vec(8);
    (0..n)
        .map(|_| match rng.next() % 8 {
            0 => specials[(rng.next() % specials.len() as u64) as usize],
            1..=3 => pool[(rng.next() % 8) as usize],
            _ => rng.value(),
        })
        .collect()
}

/// Runs `case` for keys `K` and values `V` over two blocks on `dev`; checks keys (and values,
/// which show stability: each is its key's original position) against the CPU.
fn run_case<K: DeviceElement, V: DeviceElement>(
    dev: &Device,
    kernel: &Kernel,
    case: &Case,
) -> Result<(), RuntimeError> {
    let tile = case.tile();
    let blocks = 2usize;
    let mut rng = Rng::new(case.seed);
    let xs: Vec<K> = keys(&mut rng, tile * blocks);
    let vs: Vec<V> = (0..tile * blocks)
        .map(|i| V::from_bits(i as u64 % (1u64 << (V::DTYPE.bytes() * 8 - 1).min(62))))
        .collect();
    let n = case.valid.unwrap_or(tile as u32);
    let f = compiled(dev, kernel)?;
    let (xb, vb) = (dev.upload(&xs)?, dev.upload(&vs)?);
    let poison_k = K::from_bits(0x5a5a_5a5a_5a5a_5a5a);
    let poison_v = V::from_bits(0x3c3c_3c3c_3c3c_3c3c);
    let mut yb = dev.alloc_filled(tile * blocks, poison_k)?;
    let mut wb = dev.alloc_filled(tile * blocks, poison_v)?;
    f.launch_grid(blocks as u32, (&xb, &mut yb, &vb, &mut wb, n))?;
    let (ys, ws) = (yb.to_vec()?, wb.to_vec()?);
    for blk in 0..blocks {
        let at = blk * tile;
        let valid = n as usize;
        let order = reference_order(&xs[at..at + valid], case);
        let want_k: Vec<K> = order.iter().map(|&i| xs[at + i]).collect();
        let what = format!("{case:?} keys {:?} block {blk}", K::DTYPE);
        assert_same(&ys[at..at + valid], &want_k, &what);
        assert!(
            ys[at + valid..at + tile]
                .iter()
                .all(|&v| v.to_bits() == poison_k.to_bits()),
            "{what}: wrote past the valid count"
        );
        if case.pairs {
            let want_v: Vec<V> = order.iter().map(|&i| vs[at + i]).collect();
            assert_same(&ws[at..at + valid], &want_v, &format!("{what} values"));
        }
    }
    Ok(())
}

/// Runs `case` with keys of the dtype `pick` names (0..10) and the values `key_value_dtypes!` pairs them with.
fn run_any(case: &Case, pick: usize) {
    macro_rules! go {
        ($k:ty, $v:ty) => {{
            let kernel = sort_kernel::<$k, $v>(case);
            run_case::<$k, $v>(device(), &kernel, case).expect("runs")
        }};
    }
    key_value_dtypes!(pick, case.pairs, go)
}

/// The bits of the dtype `pick` names.
pub(super) fn bits_of(pick: usize) -> u32 {
    [8, 8, 16, 16, 32, 32, 64, 64, 32, 64][pick]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, .. ProptestConfig::default() })]

    #[test]
    fn sorts_agree_with_a_stable_cpu_sort(
        block in prop::sample::select(vec![4u32, 16, 32, 64, 96, 160, 224]),
        items in 1u32..17,
        pick in 0usize..10,
        range in (0u32..64, 1u32..65),
        radix_bits in 1u32..9,
        descending in any::<bool>(),
        striped in any::<bool>(),
        partial in prop::option::of(0u32..4096),
        pairs in any::<bool>(),
        keys_in in 0usize..3,
        seed in any::<u64>(),
    ) {
        let bits = bits_of(pick);
        // Most cases sort every bit; the rest a random non-empty range.
        let (begin, end) = if range.0 % 2 == 0 {
            (0, bits)
        } else {
            let a = range.0 % bits;
            (a, (a + range.1).min(bits))
        };
        let tile = block * items;
        let case = Case {
            block,
            items,
            begin,
            end,
            radix_bits,
            order: if descending { SortOrder::Descending } else { SortOrder::Ascending },
            output: if striped { SortOutput::Striped } else { SortOutput::Blocked },
            valid: partial.map(|n| n % (tile + 1)).filter(|_| keys_in != 2),
            pairs,
            // Groups within a warp need a block of whole warps.
            keys_in: match keys_in {
                0 => KeysIn::Blocked,
                2 if block % 32 == 0 => KeysIn::PairStriped,
                _ => KeysIn::Striped,
            },
            seed,
        };
        run_any(&case, pick);
    }
}

fn full(block: u32, items: u32, bits: u32) -> Case {
    Case {
        block,
        items,
        begin: 0,
        end: bits,
        radix_bits: 4,
        order: SortOrder::Ascending,
        output: SortOutput::Blocked,
        valid: None,
        pairs: true,
        keys_in: KeysIn::Blocked,
        seed: 7,
    }
}

/// Every dtype, both orders, a block that is not a multiple of 32, a partial tile.
#[test]
fn every_dtype_in_both_orders() {
    for pick in 0..10 {
        for order in [SortOrder::Ascending, SortOrder::Descending] {
            let case = Case {
                order,
                valid: Some(150),
                output: SortOutput::Striped,
                ..full(96, 5, bits_of(pick))
            };
            run_any(&case, pick);
        }
    }
}

/// Keys of 8 and 16 bits, at most 4 a thread, sort through shared words of their own width,
/// and each pass reads a thread's 4 or 8 bytes of keys back as one packed word or vector
/// (the tile unpadded); 2 bytes a thread item by item; more keys a thread sort as 32-bit
/// words. Each sorts correctly (partial tiles, pairs) and assembles for every arch.
#[test]
fn narrow_keys_read_back_packed() {
    // (block, items, key bits, what each pass's read-back of the keys takes)
    let cases: [(u32, u32, u32, &str); 6] = [
        (160, 4, 8, "ld.shared.b32"),
        (96, 2, 16, "ld.shared.b32"),
        (128, 4, 16, "ld.shared.v2.b32"),
        (64, 2, 8, "ld.shared.u8"),
        (256, 16, 8, "ld.shared.u32"),
        (96, 8, 16, "ld.shared.u32"),
    ];
    for (block, items, bits, read) in cases {
        let case = Case {
            valid: Some(block * items - 5),
            ..full(block, items, bits)
        };
        let kernel = if bits == 8 {
            sort_kernel::<u8, u32>(&case)
        } else {
            sort_kernel::<i16, u32>(&case)
        };
        let ptx = kernel.ptx(coopgraph::ptx::Arch::Sm90).expect("emits");
        assert!(ptx.contains(read), "{}: no {read}", kernel.name());
        if read.ends_with("b32") {
            let narrow = ptx
                .lines()
                .filter(|l| l.contains("ld.shared.u8") || l.contains("ld.shared.s16"));
            assert_eq!(
                narrow.count(),
                0,
                "{}: keys read item by item",
                kernel.name()
            );
        }
        super::common::assemble_all(&kernel);
        if bits == 8 {
            run_case::<u8, u32>(device(), &kernel, &case).expect("runs");
        } else {
            run_case::<i16, u32>(device(), &kernel, &case).expect("runs");
        }
    }
}

/// Keys that do not arrive blocked (striped over the block, or within pairs of threads) are
/// exchanged into blocked order before the passes: every pass ranks blocked positions. Keys with few distinct values show a pass that is not
/// stable.
#[test]
fn keys_of_any_arrangement_sort() {
    for keys_in in [KeysIn::Striped, KeysIn::PairStriped] {
        for pick in [0, 4, 9] {
            let case = Case {
                keys_in,
                ..full(96, 4, bits_of(pick))
            };
            run_any(&case, pick);
        }
    }
}

/// NaNs sort by their bits as CUB places them: ascending, `-NaN` first, then `-inf`, ...,
/// `-0.0`, `0.0`, ..., `+inf`, `NaN`.
#[test]
fn floats_sort_by_their_bits() {
    let case = Case {
        pairs: false,
        ..full(4, 2, 32)
    };
    let kernel = sort_kernel::<f32, u32>(&case);
    let dev = device();
    let f = compiled(dev, &kernel).expect("compiles");
    let xs = [
        f32::NAN,
        1.0,
        -0.0,
        f32::INFINITY,
        -f32::NAN,
        0.0,
        -f32::INFINITY,
        -2.5,
    ];
    let xb = dev.upload(&xs).expect("upload");
    let vb = dev.upload(&[0u32; 8]).expect("upload");
    let mut yb = dev.alloc_zeroed::<f32>(8).expect("alloc");
    let mut wb = dev.alloc_zeroed::<u32>(8).expect("alloc");
    f.launch_grid(1, (&xb, &mut yb, &vb, &mut wb, 8u32))
        .expect("runs");
    let got: Vec<u32> = yb
        .to_vec()
        .expect("read")
        .iter()
        .map(|v| v.to_bits())
        .collect();
    let want: Vec<u32> = [
        -f32::NAN,
        -f32::INFINITY,
        -2.5,
        -0.0,
        0.0,
        1.0,
        f32::INFINITY,
        f32::NAN,
    ]
    .iter()
    .map(|v| v.to_bits())
    .collect();
    assert_eq!(got, want);
}

/// Every barrier the planner placed, and every barrier the sort records, is needed: leaving
/// one out makes the race checker report a race.
#[test]
fn every_barrier_is_necessary() {
    let checked = race_checker();
    for case in [full(64, 3, 32), full(16, 2, 16)] {
        let kernel = sort_kernel::<u32, u32>(&case);
        run_case::<u32, u32>(&checked, &kernel, &case).expect("race-free");
        super::common::assert_barriers_necessary(&kernel, |k| {
            run_case::<u32, u32>(&checked, k, &case)
        });
        let syncs = super::common::assert_sync_blocks_necessary(&kernel, |k| {
            run_case::<u32, u32>(&checked, k, &case)
        });
        assert!(syncs > 0, "the sort records barriers");
        assert_eq!(syncs, kernel.sync_blocks());
    }
}

/// The verifier's errors for what a radix sort cannot do, each at the user's line.
#[test]
fn typed_errors_name_the_line() {
    fn error_of(f: impl FnOnce(&mut KernelBuilder)) -> (RadixSortProblem, u32) {
        let mut k = KernelBuilder::new("bad_sort").block(64).items_per_thread(2);
        f(&mut k);
        match k.build() {
            Err(Error::Verify(errs)) => {
                let e = errs
                    .errors
                    .iter()
                    .find_map(|e| match &e.kind {
                        VerifyErrorKind::RadixSort(p) => Some((*p, e.loc.line)),
                        _ => None,
                    })
                    .unwrap_or_else(|| panic!("no radix sort error in {errs}"));
                assert!(errs.to_string().contains("radix sort"), "{errs}");
                e
            }
            other => panic!("expected a verify error, got {other:?}"),
        }
    }
    let here = line!() + 4;
    let (p, line) = error_of(|k| {
        let x = k.input::<u16>("x");
        let t = k.load_from(k.this_block(), &x, Load::direct());
        let _ = k.radix_sort(k.this_block(), &t, RadixSort::ascending().bits(0, 17));
    });
    assert_eq!(
        p,
        RadixSortProblem::BitRange {
            begin: 0,
            end: 17,
            key_bits: 16
        }
    );
    assert_eq!(line, here);
    let here = line!() + 4;
    let (p, line) = error_of(|k| {
        let x = k.input::<u32>("x");
        let t = k.load_from(k.this_block(), &x, Load::direct());
        let _ = k.radix_sort(k.this_block(), &t, RadixSort::ascending().bits(9, 9));
    });
    assert_eq!(
        p,
        RadixSortProblem::BitRange {
            begin: 9,
            end: 9,
            key_bits: 32
        }
    );
    assert_eq!(line, here);
    let (p, _) = error_of(|k| {
        let x = k.input::<i64>("x");
        let t = k.load_from(k.this_block(), &x, Load::direct());
        let _ = k.radix_sort(k.this_block(), &t, RadixSort::descending().radix_bits(9));
    });
    assert_eq!(p, RadixSortProblem::RadixBits { bits: 9 });
    let (p, _) = error_of(|k| {
        let x = k.input::<i64>("x");
        let t = k.load_from(k.this_block(), &x, Load::direct());
        let _ = k.radix_sort(k.this_block(), &t, RadixSort::ascending().radix_bits(0));
    });
    assert_eq!(p, RadixSortProblem::RadixBits { bits: 0 });
    let (p, _) = error_of(|k| {
        let x = k.input::<u8>("x");
        let b = k.this_block();
        let t = k.load_from(b, &x, Load::direct());
        let v = k.thread_data_n::<u32>(3);
        for i in 0..3 {
            k.set_item(&v, i, 1u32);
        }
        let _ = k.radix_sort_pairs(b, &t, &v, RadixSort::ascending());
    });
    assert_eq!(p, RadixSortProblem::ValueItems { keys: 2, values: 3 });
    let (p, _) = error_of(|k| {
        let mut wide = KernelBuilder::new("wide").block(1024).items_per_thread(1);
        std::mem::swap(k, &mut wide);
        let x = k.input::<u32>("x");
        let t = k.load_from(k.this_block(), &x, Load::direct());
        let _ = k.radix_sort(k.this_block(), &t, RadixSort::ascending().radix_bits(8));
    });
    assert!(
        matches!(
            p,
            RadixSortProblem::Counters {
                bits: 8,
                threads: 1024,
                ..
            }
        ),
        "{p:?}"
    );
}

/// The largest configurations of the benchmark (example 24): 256 threads of 16 items, 64-bit
/// keys with values; they assemble for every arch and sort correctly on the simulator.
#[test]
fn largest_tiles_assemble_and_sort() {
    let case = Case {
        output: SortOutput::Striped,
        ..full(256, 16, 64)
    };
    let kernel = sort_kernel::<u64, u32>(&case);
    super::common::assemble_all(&kernel);
    run_case::<u64, u32>(device(), &kernel, &case).expect("runs");
    let case = Case {
        radix_bits: 8,
        ..full(128, 16, 32)
    };
    let kernel = sort_kernel::<f32, u32>(&case);
    super::common::assemble_all(&kernel);
    run_case::<f32, u32>(device(), &kernel, &case).expect("runs");
}

/// A block of 1024 threads, 6-bit digits over 10 bits (the last pass narrower), equal keys
/// and a partial tile: every position receives exactly one key.
#[test]
fn wide_block_narrow_last_pass() {
    for (keys, radix_bits, valid) in [(1u32, 6u32, 161u32), (2, 6, 1024), (1, 4, 1000)] {
        let case = Case {
            radix_bits,
            end: 10,
            order: SortOrder::Descending,
            output: SortOutput::Striped,
            valid: Some(valid.min(1024 * keys)),
            pairs: true,
            ..full(1024, keys, 32)
        };
        let kernel = sort_kernel::<f32, u32>(&case);
        run_case::<f32, u32>(device(), &kernel, &case).expect("runs");
        let kernel = sort_kernel::<u32, u32>(&case);
        run_case::<u32, u32>(device(), &kernel, &case).expect("runs");
    }
}

/// A block whose threads are not a multiple of 32 (beyond one warp) takes no block scan, so no
/// radix sort: the verifier's error names the sort's line, not the builder's.
#[test]
fn partial_warp_blocks_are_rejected_at_the_sort() {
    let mut k = KernelBuilder::new("sort48").block(48).items_per_thread(2);
    let x = k.input::<u32>("x");
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::direct());
    let line = line!() + 1;
    let _ = k.radix_sort(b, &t, RadixSort::ascending());
    match k.build() {
        Err(Error::Verify(errs)) => {
            assert!(
                errs.errors.iter().all(|e| e.loc.line == line
                    && matches!(
                        e.kind,
                        VerifyErrorKind::WarpOpInPartialWarpBlock { block: 48 }
                    )),
                "{errs}"
            );
        }
        other => panic!("expected a verify error, got {other:?}"),
    }
}

/// The sort scatters by its own ranks, inside the tile by construction, so its scatters write
/// unguarded: no compare of a rank with the tile's size in its PTX, for keys and pairs. A
/// user's scatter of the same tile by ranks only promised a permutation keeps one such guard
/// per item (a rank past the tile is skipped, never written).
#[test]
fn the_sort_scatters_its_own_ranks_unguarded() {
    use coopgraph::ir::{Scatter, index};
    let (block, items) = (256u32, 16u32);
    let tile = block * items;
    let bound = format!(", {tile};");
    let guards = |k: &Kernel| {
        super::common::ptx_lines(k, |l| {
            l.contains("setp.lt.u32") && l.trim_end().ends_with(&bound)
        })
    };
    for pairs in [false, true] {
        let sort = sort_kernel::<u32, u32>(&Case {
            pairs,
            ..full(block, items, 32)
        });
        assert_eq!(guards(&sort), 0, "pairs {pairs}");
    }
    let mut k = KernelBuilder::new("user_scatter")
        .block(block)
        .items_per_thread(items);
    let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::direct());
    let p = index::thread_rank() * items + index::item();
    let r = k.fill((p * 7u32 + 3u32) % tile);
    let s = k.scatter(b, &t, &r, Scatter::blocked().permutation());
    k.store_to(b, &y, &s, Store::direct());
    let user = k.build().expect("builds");
    assert_eq!(guards(&user), items as usize);
}

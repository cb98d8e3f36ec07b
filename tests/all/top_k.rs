//! Block top-k: keys and pairs of every dtype against the first `k` of a stable CPU sort of the
//! keys' sort bits, over random block sizes (not only multiples of 32), items per thread, `k`,
//! bit ranges, digit widths (1 to 8 bits), both ends and partial tiles; runs of equal keys
//! (all equal, and straddling `k`); every barrier shown necessary, before the selected keys are
//! placed by counting and before they are sorted; every typed error.

use super::common::{Rng, assert_same, compiled, device, race_checker};
use super::radix_sort::{bits_of, keys, sort_bits};
use coopgraph::ir::{Element, RadixSortProblem, SortOrder, TopK, VerifyErrorKind, index};
use coopgraph::runtime::{Device, DeviceElement, RuntimeError};
use coopgraph::{Error, Kernel, KernelBuilder, Load, Store};
use proptest::prelude::*;

/// One top-k to run: the kernel's shape and the top-k's controls.
#[derive(Debug, Clone, Copy)]
struct Case {
    block: u32,
    items: u32,
    k: u32,
    begin: u32,
    end: u32,
    radix_bits: u32,
    order: SortOrder,
    /// The tile's valid count, when partial.
    valid: Option<u32>,
    pairs: bool,
    /// Keys loaded striped (exchanged into blocked order by the top-k: the tile's positions
    /// stay its memory order).
    striped_in: bool,
    /// What the keys are.
    spread: Spread,
    seed: u64,
}

/// The keys a case draws.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Spread {
    /// Random keys with special values and repeats ([`keys`]).
    Random,
    /// Every key the same.
    Equal,
    /// Keys from a set of three, so that runs of equal keys straddle `k`.
    Three,
}

impl Case {
    fn controls(&self, n: Option<coopgraph::ir::Scalar<u32>>) -> TopK {
        let c = match self.order {
            SortOrder::Ascending => TopK::smallest(self.k),
            SortOrder::Descending => TopK::largest(self.k),
        };
        let c = c.bits(self.begin, self.end).radix_bits(self.radix_bits);
        match n {
            Some(n) => c.valid_items(n),
            None => c,
        }
    }

    fn tile(&self) -> usize {
        (self.block * self.items) as usize
    }

    /// The result's items per thread, and its tile per block.
    fn out_tile(&self) -> usize {
        (self.k.div_ceil(self.block) * self.block) as usize
    }
}

/// A kernel taking the top-k of one tile per block of `x` (with values `v` when pairs) into
/// `y` (`w`).
fn top_k_kernel<K: Element, V: Element>(case: &Case) -> Kernel {
    let name = format!("top_k_{:?}_{:?}", K::DTYPE, V::DTYPE).to_lowercase();
    let mut k = KernelBuilder::new(&name)
        .block(case.block)
        .items_per_thread(case.items);
    let (x, y) = (k.input::<K>("x"), k.output::<K>("y"));
    let (v, w) = (k.input::<V>("v"), k.output::<V>("w"));
    let n = k.scalar::<u32>("n");
    let b = k.this_block();
    let load = if case.striped_in {
        Load::striped()
    } else {
        Load::direct()
    };
    // Each block's result at `block * out_tile`.
    let store = Store::direct().offset(index::block_index() * case.out_tile() as u32);
    let (load, store, controls) = match case.valid {
        Some(_) => (
            load.valid_items(n),
            store.valid_items(n.expr().min(case.k)),
            case.controls(Some(n)),
        ),
        None => (load, store.valid_items(case.k), case.controls(None)),
    };
    let keys = k.load_from(b, &x, load);
    if case.pairs {
        let vals = k.load_from(b, &v, Load::direct());
        let (sk, sv) = k.top_k_pairs(b, &keys, &vals, controls);
        k.store_to(b, &y, &sk, store.clone());
        k.store_to(b, &w, &sv, store);
    } else {
        let sk = k.top_k(b, &keys, controls);
        k.store_to(b, &y, &sk, store);
    }
    k.build().unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The CPU's answer for one tile: the positions of the first `k` valid keys of the stable sort
/// by the controls' bits of their sort bits.
fn reference<K: Element>(keys: &[K], case: &Case) -> Vec<usize> {
    let width = case.end - case.begin;
    let mask = if width == 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    let digit = |k: K| (sort_bits(k, case.order) >> case.begin) & mask;
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by_key(|&i| digit(keys[i]));
    order.truncate(case.k as usize);
    order
}

/// Runs `case` for keys `K` and values `V` over two blocks on `dev`; checks keys and values
/// (each value is its key's position, so ties show) against the CPU.
fn run_case<K: DeviceElement, V: DeviceElement>(
    dev: &Device,
    kernel: &Kernel,
    case: &Case,
) -> Result<(), RuntimeError> {
    let (tile, out) = (case.tile(), case.out_tile());
    let blocks = 2usize;
    let mut rng = Rng::new(case.seed);
    let xs: Vec<K> = match case.spread {
        Spread::Random => keys(&mut rng, tile * blocks),
        Spread::Equal => vec![K::from_bits(case.seed); tile * blocks],
        Spread::Three => {
            let set: Vec<K> = keys(&mut rng, 3);
            (0..tile * blocks)
                .map(|_| set[(rng.next() % 3) as usize])
                .collect()
        }
    };
    let vs: Vec<V> = (0..tile * blocks)
        .map(|i| V::from_bits(i as u64 % (1u64 << (V::DTYPE.bytes() * 8 - 1).min(62))))
        .collect();
    let n = case.valid.unwrap_or(tile as u32);
    let f = compiled(dev, kernel)?;
    let (xb, vb) = (dev.upload(&xs)?, dev.upload(&vs)?);
    let poison_k = K::from_bits(0x5a5a_5a5a_5a5a_5a5a);
    let poison_v = V::from_bits(0x3c3c_3c3c_3c3c_3c3c);
    let mut yb = dev.alloc_filled(out * blocks, poison_k)?;
    let mut wb = dev.alloc_filled(out * blocks, poison_v)?;
    f.launch_grid(blocks as u32, (&xb, &mut yb, &vb, &mut wb, n))?;
    let (ys, ws) = (yb.to_vec()?, wb.to_vec()?);
    for blk in 0..blocks {
        let at = blk * tile;
        // The tile's positions are its memory order, whichever arrangement loaded it.
        let blocked: Vec<usize> = (at..at + tile).collect();
        let valid = (n as usize).min(tile);
        let tile_keys: Vec<K> = blocked[..valid].iter().map(|&i| xs[i]).collect();
        let order = reference(&tile_keys, case);
        let want_k: Vec<K> = order.iter().map(|&i| tile_keys[i]).collect();
        let what = format!("{case:?} keys {:?} block {blk}", K::DTYPE);
        let o = blk * out;
        assert_same(&ys[o..o + order.len()], &want_k, &what);
        assert!(
            ys[o + order.len()..o + out]
                .iter()
                .all(|&v| v.to_bits() == poison_k.to_bits()),
            "{what}: wrote past the selected keys"
        );
        if case.pairs {
            let want_v: Vec<V> = order.iter().map(|&i| vs[blocked[i]]).collect();
            assert_same(&ws[o..o + order.len()], &want_v, &format!("{what} values"));
        }
    }
    Ok(())
}

/// Runs `case` with keys of the dtype `pick` names (0..10) and the values `key_value_dtypes!` pairs them with.
fn run_any(case: &Case, pick: usize) {
    macro_rules! go {
        ($k:ty, $v:ty) => {{
            let kernel = top_k_kernel::<$k, $v>(case);
            run_case::<$k, $v>(device(), &kernel, case).expect("runs")
        }};
    }
    key_value_dtypes!(pick, case.pairs, go)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, .. ProptestConfig::default() })]

    #[test]
    fn top_k_agrees_with_a_stable_cpu_sort(
        block in prop::sample::select(vec![1u32, 2, 4, 16, 32, 96, 160]),
        items in 1u32..9,
        k in any::<u32>(),
        pick in 0usize..10,
        range in (0u32..64, 1u32..65),
        radix_bits in 1u32..9,
        largest in any::<bool>(),
        partial in prop::option::of(0u32..2048),
        pairs in any::<bool>(),
        striped_in in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let bits = bits_of(pick);
        let (begin, end) = if range.0 % 2 == 0 {
            (0, bits)
        } else {
            let a = range.0 % bits;
            (a, (a + range.1).min(bits))
        };
        let tile = block * items;
        // Small k most often, any k up to the tile otherwise.
        let k = if k % 3 == 0 { 1 + k / 3 % tile } else { 1 + k % tile.min(20) };
        let case = Case {
            block,
            items,
            k,
            begin,
            end,
            radix_bits,
            order: if largest { SortOrder::Descending } else { SortOrder::Ascending },
            valid: partial.map(|n| n % (tile + 1)),
            pairs,
            striped_in,
            spread: Spread::Random,
            seed,
        };
        run_any(&case, pick);
    }
}

fn full(block: u32, items: u32, k: u32, bits: u32) -> Case {
    Case {
        block,
        items,
        k,
        begin: 0,
        end: bits,
        radix_bits: 4,
        order: SortOrder::Ascending,
        valid: None,
        pairs: true,
        striped_in: false,
        spread: Spread::Random,
        seed: 7,
    }
}

/// Every dtype, both ends, a block that is not a multiple of 32 (16: a block scan takes a
/// power of two within a warp, whole warps beyond it), a partial tile, and `k` of one, of a few threads'
/// worth, past the valid count, and of the whole tile.
#[test]
fn every_dtype_at_both_ends() {
    for pick in 0..10 {
        for order in [SortOrder::Ascending, SortOrder::Descending] {
            for (k, valid) in [(1, None), (37, Some(150)), (200, Some(150)), (240, None)] {
                let case = Case {
                    order,
                    valid,
                    ..full(16, 15, k, bits_of(pick))
                };
                run_any(&case, pick);
            }
        }
    }
}

/// Ties: every key equal (the result is the first `k` positions of the tile), and keys from a
/// set of three (runs of equal keys straddle `k`), at every digit width, over blocks of 1, 2,
/// 4, 16, 32 and 96 threads (below 8 threads the digits narrow), with `k` small (placed by counting) and large (sorted), whole and
/// partial tiles, both ends, for keys of every width.
#[test]
fn equal_keys_go_in_tile_order() {
    let mut seed = 1u64;
    for (block, items) in [(1u32, 9u32), (2, 7), (4, 5), (16, 3), (32, 7), (96, 2)] {
        let tile = block * items;
        for radix_bits in 1..=8u32 {
            for spread in [Spread::Equal, Spread::Three] {
                let pick = (radix_bits as usize * 3 + block as usize) % 10;
                let k = if radix_bits.is_multiple_of(2) {
                    tile / 3 + 1
                } else {
                    tile - 1
                };
                let valid = radix_bits.is_multiple_of(3).then_some(tile * 2 / 3);
                seed = seed
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                    .wrapping_add(radix_bits as u64);
                let case = Case {
                    radix_bits,
                    spread,
                    valid,
                    order: if seed.is_multiple_of(2) {
                        SortOrder::Ascending
                    } else {
                        SortOrder::Descending
                    },
                    seed,
                    ..full(block, items, k, bits_of(pick))
                };
                run_any(&case, pick);
            }
        }
    }
}

/// Runs `case` under the race checker, then without each barrier in turn (the planner's and
/// the top-k's own: the histograms' zeroing, each pass's counts, the compaction, and the
/// placing by counting where it is used), each reported as a race.
fn assert_every_barrier_necessary<K: DeviceElement, V: DeviceElement>(case: &Case) {
    let checked = race_checker();
    let kernel = top_k_kernel::<K, V>(case);
    run_case::<K, V>(&checked, &kernel, case).expect("race-free");
    super::common::assert_barriers_necessary(&kernel, |k| run_case::<K, V>(&checked, k, case));
    let syncs = super::common::assert_sync_blocks_necessary(&kernel, |k| {
        run_case::<K, V>(&checked, k, case)
    });
    assert!(syncs >= 3, "the top-k records {syncs} barriers");
}

/// Every barrier the top-k records and every one the planner placed is needed: leaving one
/// out makes the race checker report a race.
#[test]
fn every_barrier_is_necessary() {
    let case = Case {
        valid: Some(150),
        ..full(64, 3, 20, 32)
    };
    assert_every_barrier_necessary::<u32, u32>(&case);
}

/// As [`every_barrier_is_necessary`], with a `k` whose selected keys the block radix sort
/// orders (too many to place by counting) and 8-bit digits.
#[test]
fn every_barrier_is_necessary_before_a_sort() {
    let case = Case {
        valid: Some(170),
        radix_bits: 8,
        order: SortOrder::Descending,
        ..full(64, 3, 150, 32)
    };
    assert_every_barrier_necessary::<f32, u32>(&case);
}

/// The verifier's errors for what a top-k cannot do, each at the user's line.
#[test]
fn typed_errors_name_the_line() {
    fn error_of(f: impl FnOnce(&mut KernelBuilder)) -> (RadixSortProblem, u32) {
        let mut k = KernelBuilder::new("bad_top_k")
            .block(64)
            .items_per_thread(2);
        f(&mut k);
        match k.build() {
            Err(Error::Verify(e)) => {
                let e = e.errors.first().expect("an error").clone();
                match e.kind {
                    VerifyErrorKind::RadixSort(p) => (p, e.loc.line),
                    other => panic!("unexpected error {other:?}"),
                }
            }
            other => panic!("expected a verify error, got {:?}", other.map(|_| ())),
        }
    }
    for k in [0u32, 129] {
        let (p, line) = error_of(|b| {
            let x = b.input::<i64>("x");
            let t = b.load_from(b.this_block(), &x, Load::direct());
            let _ = b.top_k(b.this_block(), &t, TopK::largest(k));
        });
        assert_eq!(p, RadixSortProblem::TopK { k, tile: 128 });
        assert_eq!(line, line!() - 3);
    }
    for bits in [0, 9] {
        let (p, _) = error_of(|b| {
            let x = b.input::<u16>("x");
            let t = b.load_from(b.this_block(), &x, Load::direct());
            let _ = b.top_k(b.this_block(), &t, TopK::smallest(3).radix_bits(bits));
        });
        assert_eq!(p, RadixSortProblem::SelectBits { bits });
    }
    let (p, line) = error_of(|b| {
        let x = b.input::<f32>("x");
        let t = b.load_from(b.this_block(), &x, Load::direct());
        let _ = b.top_k(b.this_block(), &t, TopK::smallest(3).bits(4, 33));
    });
    let want = RadixSortProblem::BitRange {
        begin: 4,
        end: 33,
        key_bits: 32,
    };
    assert_eq!((p, line), (want, line!() - 7));
    let (p, _) = error_of(|b| {
        let x = b.input::<f32>("x");
        let w = b.this_warp();
        let t = b.load_from(w, &x, Load::direct());
        let _ = b.top_k(w, &t, TopK::smallest(3));
    });
    assert!(matches!(p, RadixSortProblem::Group { .. }), "{p:?}");
    let (p, _) = error_of(|b| {
        let x = b.input::<u8>("x");
        let t = b.load_from(b.this_block(), &x, Load::direct());
        let v = b.thread_data_n::<u32>(3);
        for i in 0..3 {
            b.set_item(&v, i, 1u32);
        }
        let _ = b.top_k_pairs(b.this_block(), &t, &v, TopK::largest(5));
    });
    assert_eq!(p, RadixSortProblem::ValueItems { keys: 2, values: 3 });
}

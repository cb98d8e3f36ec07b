//! Merge sort over the block, warps, logical warps and groups of whole warps: keys and pairs
//! of several dtypes against a stable CPU sort (`slice::sort_by`), over random group sizes,
//! items per thread, comparators (native, a total order, descending, by the low byte so that
//! stability shows, the built-in total order over floats with NaNs and both zeros), both
//! output arrangements and partial tiles whose default key the comparator would put first;
//! every barrier shown necessary; every typed error.

use super::common::{Rng, assert_same, compiled, device, race_checker};
use coopgraph::ir::{
    Element, Expr, Group, MergeSort, MergeSortProblem, SortOrder, SortOutput, VerifyErrorKind,
};
use coopgraph::runtime::{Device, DeviceElement, RuntimeError};
use coopgraph::{Error, Kernel, KernelBuilder, Load, Store};
use proptest::prelude::*;
use std::cmp::Ordering;

/// Keys the tests sort: each with an order-preserving map to `u64`, on the host and as an
/// expression.
pub trait Key: DeviceElement + PartialOrd + for<'a> coopgraph::runtime::Arg<'a> {
    /// The key's place in a total order.
    fn ord(self) -> u64;
    /// [`Key::ord`] as an expression.
    fn ord_expr(e: Expr<Self>) -> Expr<u64>;
    /// Keys `lt` does not order (NaNs) and keys it takes as equal with other bits (the two
    /// zeros): what the total order must place.
    fn unordered() -> Vec<Self> {
        Vec::new()
    }
}

macro_rules! unsigned_key {
    ($($t:ty),*) => {$(
        impl Key for $t {
            fn ord(self) -> u64 {
                self as u64
            }
            fn ord_expr(e: Expr<Self>) -> Expr<u64> {
                e.cast::<u64>()
            }
        }
    )*};
}
unsigned_key!(u8, u32, u64);

macro_rules! signed_key {
    ($($t:ty),*) => {$(
        impl Key for $t {
            fn ord(self) -> u64 {
                (self as i64 as u64) ^ (1u64 << 63)
            }
            fn ord_expr(e: Expr<Self>) -> Expr<u64> {
                e.cast::<i64>().cast::<u64>() ^ (1u64 << 63)
            }
        }
    )*};
}
signed_key!(i8, i32, i64);

impl Key for f32 {
    fn ord(self) -> u64 {
        let b = self.to_bits();
        (if b >> 31 == 1 { !b } else { b | 0x8000_0000 }) as u64
    }
    fn ord_expr(e: Expr<Self>) -> Expr<u64> {
        let b = e.to_bits();
        (b.clone() >> 31u32)
            .eq(1u32)
            .select(!b.clone(), b | 0x8000_0000u32)
            .cast::<u64>()
    }
    fn unordered() -> Vec<Self> {
        let quiet = f32::from_bits(0x7fc0_0001);
        vec![
            f32::NAN,
            -f32::NAN,
            quiet,
            -0.0,
            0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ]
    }
}

impl Key for f64 {
    fn ord(self) -> u64 {
        let b = self.to_bits();
        if b >> 63 == 1 { !b } else { b | (1 << 63) }
    }
    fn ord_expr(e: Expr<Self>) -> Expr<u64> {
        let b = e.to_bits();
        (b.clone() >> 63u32)
            .eq(1u64)
            .select(!b.clone(), b | (1u64 << 63))
    }
    fn unordered() -> Vec<Self> {
        let quiet = f64::from_bits(0x7ff8_0000_0000_0001);
        vec![
            f64::NAN,
            -f64::NAN,
            quiet,
            -0.0,
            0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ]
    }
}

/// The comparator of a case.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cmp {
    /// `MergeSort::ascending()` (`lt`; keys hold no NaN).
    Ascending,
    /// `MergeSort::descending()` (`gt`).
    Descending,
    /// Ascending by the total order of [`Key::ord`].
    Total,
    /// Ascending by the low byte of [`Key::ord`] only: many ties, so stability shows.
    LowByte,
    /// `MergeSort::total_order(order)`: the order of [`Key::ord`], NaNs and both zeros among
    /// the keys.
    TotalOrder(SortOrder),
}

impl Cmp {
    pub fn controls<K: Key>(self) -> MergeSort<K> {
        match self {
            Cmp::Ascending => MergeSort::ascending(),
            Cmp::Descending => MergeSort::descending(),
            Cmp::Total => MergeSort::by(|a, b| K::ord_expr(a).lt(K::ord_expr(b))),
            Cmp::LowByte => {
                MergeSort::by(|a, b| (K::ord_expr(a) & 0xffu64).lt(K::ord_expr(b) & 0xffu64))
            }
            Cmp::TotalOrder(order) => MergeSort::total_order(order),
        }
    }

    /// The host's order of two keys.
    pub fn order<K: Key>(self, a: K, b: K) -> Ordering {
        match self {
            Cmp::Ascending => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
            Cmp::Descending => b.partial_cmp(&a).unwrap_or(Ordering::Equal),
            Cmp::Total => a.ord().cmp(&b.ord()),
            Cmp::LowByte => (a.ord() & 0xff).cmp(&(b.ord() & 0xff)),
            Cmp::TotalOrder(SortOrder::Ascending) => a.ord().cmp(&b.ord()),
            Cmp::TotalOrder(SortOrder::Descending) => b.ord().cmp(&a.ord()),
        }
    }
}

/// The group a case sorts over.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GroupOf {
    Block,
    /// `this_warp()`.
    Warp,
    /// Logical warps of this many lanes.
    Tile(u32),
    /// Groups of this many whole warps.
    Warps(u32),
}

impl GroupOf {
    pub(super) fn group(self, k: &KernelBuilder) -> Group {
        match self {
            GroupOf::Block => k.this_block(),
            GroupOf::Warp => k.this_warp().into(),
            GroupOf::Tile(w) => k.this_warp().group_by(w),
            GroupOf::Warps(n) => k.this_block().group_by_warps(n),
        }
    }

    pub(super) fn threads(self, block: u32) -> u32 {
        match self {
            GroupOf::Block => block,
            GroupOf::Warp => 32,
            GroupOf::Tile(w) => w,
            GroupOf::Warps(n) => 32 * n,
        }
    }
}

/// One sort to run.
#[derive(Debug, Clone, Copy)]
struct Case {
    group: GroupOf,
    block: u32,
    items: u32,
    cmp: Cmp,
    output: SortOutput,
    /// Each tile's valid count, when partial.
    valid: Option<u32>,
    pairs: bool,
    seed: u64,
}

impl Case {
    fn tile(&self) -> usize {
        (self.group.threads(self.block) * self.items) as usize
    }
}

/// A kernel sorting each group's tile of `x` (with values `v` when pairs) into `y` (`w`);
/// `n` is the valid count of each tile, `d` the default key past it.
fn sort_kernel<K: Key, V: Element>(case: &Case) -> Kernel {
    let name = format!("msort_{:?}_{:?}", K::DTYPE, V::DTYPE).to_lowercase();
    let mut k = KernelBuilder::new(&name)
        .block(case.block)
        .items_per_thread(case.items);
    let (x, y) = (k.input::<K>("x"), k.output::<K>("y"));
    let (v, w) = (k.input::<V>("v"), k.output::<V>("w"));
    let (n, d) = (k.scalar::<u32>("n"), k.scalar::<K>("d"));
    let b = k.this_block();
    let g = case.group.group(&k);
    let mut controls = case.cmp.controls::<K>().output(case.output);
    if case.valid.is_some() {
        controls = controls.valid_items(n).oob_default(d);
    }
    let store = match case.output {
        SortOutput::Blocked => Store::direct(),
        SortOutput::Striped => Store::striped(),
    };
    let keys = k.load_from(b, &x, Load::direct());
    if case.pairs {
        let vals = k.load_from(b, &v, Load::direct());
        let (sk, sv) = k.merge_sort_pairs(g, &keys, &vals, controls);
        k.store_to(g, &y, &sk, store.clone());
        k.store_to(g, &w, &sv, store);
    } else {
        let sk = k.merge_sort(g, &keys, controls);
        k.store_to(g, &y, &sk, store);
    }
    k.build().unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Keys with many repeats and the extremes (no NaN, unless the comparator is the total
/// order: `lt` orders none).
fn keys<K: Key>(rng: &mut Rng, n: usize, cmp: Cmp) -> Vec<K> {
    let mut specials = vec![K::min_value(), K::max_value(), K::zero()];
    if matches!(cmp, Cmp::TotalOrder(_)) {
        specials.extend(K::unordered());
    }
    let pool: Vec<K> = rng.vec(8);
    (0..n)
        .map(|_| match rng.next() % 8 {
            0 => specials[(rng.next() % specials.len() as u64) as usize],
            1..=3 => pool[(rng.next() % 8) as usize],
            _ => rng.value(),
        })
        .collect()
}

/// Runs `case` over two blocks on `dev`; checks keys and values (each value is its key's
/// position, so they show stability) against the CPU.
fn run_case<K: Key, V: DeviceElement>(
    dev: &Device,
    kernel: &Kernel,
    case: &Case,
) -> Result<(), RuntimeError> {
    let tile = case.tile();
    let whole = (case.block * case.items) as usize * 2;
    let mut rng = Rng::new(case.seed);
    let xs: Vec<K> = keys(&mut rng, whole, case.cmp);
    let vs: Vec<V> = (0..whole).map(|i| V::cast_from_i64(i as i64)).collect();
    let n = case.valid.unwrap_or(tile as u32);
    // The default key the comparator puts first: it must sort last all the same.
    let oob = match case.cmp {
        Cmp::Descending | Cmp::TotalOrder(SortOrder::Descending) => K::max_value(),
        _ => K::min_value(),
    };
    let f = compiled(dev, kernel)?;
    let (xb, vb) = (dev.upload(&xs)?, dev.upload(&vs)?);
    let mut yb = dev.alloc_zeroed::<K>(whole)?;
    let mut wb = dev.alloc_zeroed::<V>(whole)?;
    f.launch_grid(2, (&xb, &mut yb, &vb, &mut wb, n, oob))?;
    let (ys, ws) = (yb.to_vec()?, wb.to_vec()?);
    let valid = (n as usize).min(tile);
    for at in (0..whole).step_by(tile) {
        let mut order: Vec<usize> = (at..at + valid).collect();
        order.sort_by(|&i, &j| case.cmp.order(xs[i], xs[j]));
        let mut want_k: Vec<K> = order.iter().map(|&i| xs[i]).collect();
        want_k.resize(tile, oob);
        let mut want_v: Vec<V> = order.iter().map(|&i| vs[i]).collect();
        want_v.resize(tile, V::zero());
        // A striped result stored striped lands in sorted order too.
        let (got_k, got_v) = (&ys[at..at + tile], &ws[at..at + tile]);
        let what = format!("{case:?} {:?} tile at {at}", K::DTYPE);
        assert_same(got_k, &want_k, &what);
        // NaNs of either sign are the same to `assert_same`; their places are not.
        let bits = |v: &[K]| v.iter().map(|k| k.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(got_k), bits(&want_k), "{what}: bits");
        if case.pairs {
            assert_same(got_v, &want_v, &format!("{what} values"));
        }
    }
    Ok(())
}

/// Runs `case` with keys of the dtype `pick` names (0..7) and values of `u32` (or another
/// dtype for some keys).
fn run_any(case: &Case, pick: usize) {
    macro_rules! go {
        ($k:ty, $v:ty) => {{
            let kernel = sort_kernel::<$k, $v>(case);
            run_case::<$k, $v>(device(), &kernel, case).expect("runs")
        }};
    }
    match pick {
        0 => go!(i32, u32),
        1 => go!(u32, f64),
        2 => go!(f32, u32),
        3 => go!(u64, u32),
        4 => go!(i8, u64),
        5 => go!(i64, i32),
        _ => go!(f64, u8),
    }
}

fn group_of(pick: u32, block_log: u32) -> (GroupOf, u32) {
    match pick % 4 {
        0 => (GroupOf::Block, 1 << block_log),
        1 => (GroupOf::Warp, 32 * (1 + block_log % 3)),
        // Logical warps in blocks of whole warps (lane ops need them), powers of two or not.
        2 => (
            GroupOf::Tile(2u32 << (block_log % 5)),
            32 * (1 + block_log % 3),
        ),
        _ => (
            GroupOf::Warps(1 << (block_log % 2)),
            64 * (1 + block_log % 2),
        ),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, .. ProptestConfig::default() })]

    #[test]
    fn sorts_agree_with_a_stable_cpu_sort(
        group in 0u32..4,
        block_log in 1u32..9,
        items in 1u32..10,
        pick in 0usize..7,
        cmp in 0usize..6,
        striped in any::<bool>(),
        partial in prop::option::of(0u32..4096),
        pairs in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let (group, block) = group_of(group, block_log);
        let cmp = [
            Cmp::Ascending,
            Cmp::Descending,
            Cmp::Total,
            Cmp::LowByte,
            Cmp::TotalOrder(SortOrder::Ascending),
            Cmp::TotalOrder(SortOrder::Descending),
        ][cmp];
        let case = Case {
            group,
            block,
            items,
            cmp,
            output: if striped { SortOutput::Striped } else { SortOutput::Blocked },
            valid: partial.map(|n| n % (group.threads(block) * items + 2)),
            pairs,
            seed,
        };
        run_any(&case, pick);
    }
}

fn full(group: GroupOf, block: u32, items: u32) -> Case {
    Case {
        group,
        block,
        items,
        cmp: Cmp::LowByte,
        output: SortOutput::Blocked,
        valid: None,
        pairs: true,
        seed: 11,
    }
}

/// Every group kind and width the warp-group machinery has, with partial tiles and odd items
/// per thread: the block in blocks of fewer than 32 threads, logical warps in blocks of whole
/// warps that are no power of two (lane ops take whole warps; see
/// [`logical_warps_need_whole_warps`]).
#[test]
fn every_group_and_width() {
    let mut cases = vec![
        full(GroupOf::Block, 1, 5),
        full(GroupOf::Block, 2, 3),
        full(GroupOf::Block, 512, 2),
        full(GroupOf::Warp, 96, 7),
        full(GroupOf::Warps(2), 256, 3),
    ];
    for w in [2u32, 4, 8, 16, 32] {
        cases.push(full(GroupOf::Tile(w), 96, 3));
    }
    cases.push(full(GroupOf::Tile(8), 160, 4));
    for case in cases {
        for valid in [None, Some(case.tile() as u32 / 3)] {
            let case = Case { valid, ..case };
            let kernel = sort_kernel::<i32, u32>(&case);
            run_case::<i32, u32>(device(), &kernel, &case).expect("runs");
        }
    }
}

/// The total order of floats, both ways: NaNs of both signs, both zeros and the infinities
/// among the keys (each placed as `f32::total_cmp`/`f64::total_cmp` places them, bit for
/// bit), keys alone and pairs, full and partial tiles (their default key the order puts
/// first), blocked and striped, over the block, warps and logical warps.
#[test]
fn total_order_places_nans_and_zeros() {
    let shapes = [
        (GroupOf::Block, 64, 3),
        (GroupOf::Block, 8, 1),
        (GroupOf::Warp, 96, 4),
        (GroupOf::Tile(8), 32, 5),
    ];
    for (i, (group, block, items)) in shapes.into_iter().enumerate() {
        for order in [SortOrder::Ascending, SortOrder::Descending] {
            for valid in [None, Some(block * items / 3 + 1)] {
                let case = Case {
                    cmp: Cmp::TotalOrder(order),
                    output: if i % 2 == 0 {
                        SortOutput::Blocked
                    } else {
                        SortOutput::Striped
                    },
                    valid: valid.map(|v| v.min(group.threads(block) * items - 1)),
                    pairs: valid.is_none(),
                    seed: 40 + i as u64,
                    ..full(group, block, items)
                };
                let kernel = sort_kernel::<f32, u32>(&case);
                run_case::<f32, u32>(device(), &kernel, &case).expect("runs");
                let kernel = sort_kernel::<f64, i8>(&case);
                run_case::<f64, i8>(device(), &kernel, &case).expect("runs");
            }
        }
    }
}

/// Over integers the total order is the keys' order: the same kernel as `ascending` and
/// `descending`.
#[test]
fn total_order_of_integers_is_their_order() {
    let build = |controls: MergeSort<i32>| {
        let mut k = KernelBuilder::new("t").block(32).items_per_thread(3);
        let (x, y) = (k.input::<i32>("x"), k.output::<i32>("y"));
        let b = k.this_block();
        let t = k.load_from(b, &x, Load::direct());
        let s = k.merge_sort(b, &t, controls);
        k.store_to(b, &y, &s, Store::direct());
        k.build()
            .expect("builds")
            .ptx(coopgraph::ptx::Arch::Sm80)
            .expect("plans")
    };
    let same = |o: SortOrder, plain: MergeSort<i32>| {
        assert_eq!(build(MergeSort::total_order(o)), build(plain), "{o:?}");
    };
    same(SortOrder::Ascending, MergeSort::ascending());
    same(SortOrder::Descending, MergeSort::descending());
}

/// The striped result of a block and of logical warps.
#[test]
fn striped_output() {
    for (group, block) in [(GroupOf::Block, 16), (GroupOf::Tile(4), 32)] {
        let case = Case {
            output: SortOutput::Striped,
            cmp: Cmp::Descending,
            valid: Some(13),
            ..full(group, block, 3)
        };
        let kernel = sort_kernel::<u32, u32>(&case);
        run_case::<u32, u32>(device(), &kernel, &case).expect("runs");
    }
}

/// Every barrier the sort records (the block's, or the group's own) and every one the planner
/// placed is needed: leaving one out makes the race checker report a race.
#[test]
fn every_barrier_is_necessary() {
    let checked = race_checker();
    for case in [
        full(GroupOf::Block, 64, 3),
        full(GroupOf::Tile(8), 96, 2),
        full(GroupOf::Warp, 64, 2),
        full(GroupOf::Warps(2), 128, 2),
    ] {
        let kernel = sort_kernel::<u32, u32>(&case);
        run_case::<u32, u32>(&checked, &kernel, &case).expect("race-free");
        super::common::assert_barriers_necessary(&kernel, |k| {
            run_case::<u32, u32>(&checked, k, &case)
        });
        let syncs = super::common::assert_sync_blocks_necessary(&kernel, |k| {
            run_case::<u32, u32>(&checked, k, &case)
        });
        let groups = super::common::assert_group_syncs_necessary(&kernel, |k| {
            run_case::<u32, u32>(&checked, k, &case)
        });
        assert_eq!(syncs + groups, 2, "{case:?}: two barriers per merge round");
    }
}

/// The verifier's errors for what a merge sort cannot do, each at the user's line.
#[test]
fn typed_errors_name_the_line() {
    fn error_of(block: u32, f: impl FnOnce(&mut KernelBuilder)) -> (MergeSortProblem, u32) {
        let mut k = KernelBuilder::new("bad_msort")
            .block(block)
            .items_per_thread(2);
        f(&mut k);
        match k.build() {
            Err(Error::Verify(errs)) => {
                let e = errs
                    .errors
                    .iter()
                    .find_map(|e| match &e.kind {
                        VerifyErrorKind::MergeSort(p) => Some((*p, e.loc.line)),
                        _ => None,
                    })
                    .unwrap_or_else(|| panic!("no merge sort error in {errs}"));
                assert!(errs.to_string().contains("merge sort"), "{errs}");
                e
            }
            other => panic!("expected a verify error, got {other:?}"),
        }
    }
    let here = line!() + 4;
    let (p, line) = error_of(96, |k| {
        let x = k.input::<u32>("x");
        let t = k.load_from(k.this_block(), &x, Load::direct());
        let _ = k.merge_sort(k.this_block(), &t, MergeSort::ascending());
    });
    assert_eq!(
        p,
        MergeSortProblem::Threads {
            kind: coopgraph::ir::GroupKind::Block,
            threads: 96
        }
    );
    assert_eq!(line, here);
    let here = line!() + 5;
    let (p, line) = error_of(40, |k| {
        let x = k.input::<u32>("x");
        let t = k.load_from(k.this_block(), &x, Load::direct());
        let tile = k.this_warp().group_by(16);
        let _ = k.merge_sort(tile, &t, MergeSort::descending());
    });
    assert_eq!(
        p,
        MergeSortProblem::PartialGroup {
            width: 16,
            block: 40
        }
    );
    assert_eq!(line, here);
    let (p, _) = error_of(192, |k| {
        let x = k.input::<u32>("x");
        let t = k.load_from(k.this_block(), &x, Load::direct());
        let g = k.this_block().group_by_warps(3);
        let _ = k.merge_sort(g, &t, MergeSort::ascending());
    });
    assert!(
        matches!(p, MergeSortProblem::Threads { threads: 96, .. }),
        "{p:?}"
    );
    let (p, _) = error_of(64, |k| {
        let x = k.input::<u8>("x");
        let b = k.this_block();
        let t = k.load_from(b, &x, Load::direct());
        let v = k.thread_data_n::<u32>(3);
        for i in 0..3 {
            k.set_item(&v, i, 1u32);
        }
        let _ = k.merge_sort_pairs(b, &t, &v, MergeSort::ascending());
    });
    assert_eq!(p, MergeSortProblem::ValueItems { keys: 2, values: 3 });
}

/// The largest configurations of the benchmark (example 30) assemble for every arch and sort.
#[test]
fn largest_tiles_assemble_and_sort() {
    for (group, block, items) in [(GroupOf::Block, 256, 16), (GroupOf::Tile(16), 128, 8)] {
        let case = Case {
            cmp: Cmp::Total,
            ..full(group, block, items)
        };
        let kernel = sort_kernel::<u64, u32>(&case);
        super::common::assemble_all(&kernel);
        run_case::<u64, u32>(device(), &kernel, &case).expect("runs");
    }
}

/// Logical warps in a block that is not a multiple of 32 run no lane op, so no merge sort:
/// the verifier reports it (at the group's line).
#[test]
fn logical_warps_need_whole_warps() {
    let mut k = KernelBuilder::new("msort40").block(40).items_per_thread(2);
    let x = k.input::<u32>("x");
    let b = k.this_block();
    let t = k.load_from(b, &x, Load::direct());
    let line = line!() + 1;
    let tile = k.this_warp().group_by(8);
    let _ = k.merge_sort(tile, &t, MergeSort::ascending());
    match k.build() {
        Err(Error::Verify(errs)) => assert!(
            errs.errors.iter().any(|e| e.loc.line == line
                && matches!(
                    e.kind,
                    VerifyErrorKind::WarpOpInPartialWarpBlock { block: 40 }
                )),
            "{errs}"
        ),
        other => panic!("expected a verify error, got {other:?}"),
    }
}

/// The sort's own shared arrays hold every index its rounds use (inside the pair of runs each
/// thread merges), so their reads go unguarded: no predicated shared load in the PTX of a
/// full-tile sort loaded directly, for the block and for logical warps, keys and pairs; the
/// listing marks the arrays. A read of a user's array of the same length at a
/// data-dependent index keeps its guard.
#[test]
fn the_sort_reads_its_own_runs_unguarded() {
    use coopgraph::ir::index;
    let (block, items) = (128u32, 4u32);
    let len = block * items;
    let guards = |k: &Kernel| super::common::ptx_lines(k, super::common::guarded_shared_load);
    for (group, pairs) in [
        (GroupOf::Block, false),
        (GroupOf::Block, true),
        (GroupOf::Tile(16), true),
    ] {
        let case = Case {
            pairs,
            ..full(group, block, items)
        };
        let sort = sort_kernel::<u32, u32>(&case);
        assert_eq!(guards(&sort), 0, "{case:?}");
        let listing = coopgraph::ir::print::listing(sort.ir(), &[]);
        assert!(listing.contains("(indices inside)"), "{listing}");
    }
    let mut k = KernelBuilder::new("user_array")
        .block(block)
        .items_per_thread(items);
    let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    let table = k.shared_array::<u32>(len);
    let t = index::thread_rank();
    k.shared_write(&table, t.clone(), t.clone());
    k.sync_block();
    k.write(&y, t.clone(), table.read(x.at(t)));
    let user = k.build().expect("builds");
    assert_eq!(guards(&user), 1);
    assert!(!coopgraph::ir::print::listing(user.ir(), &[]).contains("(indices inside)"));
}

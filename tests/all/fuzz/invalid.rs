//! No input to the public API panics: random builder programs, valid or not, either build or
//! return typed errors; those that build emit PTX for every arch and run on the simulator
//! (possibly reporting faults as errors) without panicking. Some of them carry a deliberate
//! mistake and must be rejected.

use super::generator;
use coopgraph::ir::{Algorithm, Expr, index};
use coopgraph::runtime::Device;
use coopgraph::{KernelBuilder, Load, Store};
use proptest::prelude::*;

/// Generated kernels with one mistake each: a typed error, never a panic.
#[test]
fn invalid_programs_give_typed_errors() {
    for i in 0..(3 * generator::MISTAKES as u64) {
        let seed = super::run::seed_of(0xBAD, i);
        let which = (i % u64::from(generator::MISTAKES)) as u32;
        let built = generator::generate_invalid(seed, which);
        let library = built.as_ref().err().and_then(super::run::library_line);
        match built {
            Err(_) if library.is_some() => panic!(
                "mistake {which} (seed {seed:#x}): the error names a line of the library: {}",
                library.unwrap_or_default()
            ),
            Err(coopgraph::Error::Verify(_) | coopgraph::Error::Plan(_)) => {}
            Err(e) => panic!("mistake {which} (seed {seed:#x}): unexpected error kind {e}"),
            Ok(k) => panic!(
                "mistake {which} (seed {seed:#x}) was accepted:\n{}",
                k.explain()
            ),
        }
    }
}

#[derive(Debug, Clone)]
enum Step {
    Load(usize, u8, bool, bool, bool),
    Map(u8),
    Store(usize, u8, bool),
    Branch(u8, Vec<Step>),
    Loop(u32, Vec<Step>),
    SetItem(u32),
    Sync,
}

fn step() -> impl Strategy<Value = Step> {
    let leaf = prop_oneof![
        (
            0usize..8,
            0u8..6,
            any::<bool>(),
            any::<bool>(),
            any::<bool>()
        )
            .prop_map(|(g, a, v, o, d)| Step::Load(g, a, v, o, d)),
        (0u8..8).prop_map(Step::Map),
        (0usize..8, 0u8..6, any::<bool>()).prop_map(|(g, a, v)| Step::Store(g, a, v)),
        (0u32..70).prop_map(Step::SetItem),
        Just(Step::Sync),
    ];
    leaf.prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            (0u8..4, prop::collection::vec(inner.clone(), 0..4))
                .prop_map(|(c, s)| Step::Branch(c, s)),
            (0u32..3, prop::collection::vec(inner, 0..4)).prop_map(|(n, s)| Step::Loop(n, s)),
        ]
    })
}

const ALGS: [Algorithm; 7] = Algorithm::ALL;

fn group(k: &KernelBuilder, g: usize) -> coopgraph::ir::Group {
    match g {
        0 => k.this_block(),
        1 => k.this_warp().into(),
        w => k.this_warp().group_by([1, 2, 4, 8, 16, 3, 64][w - 2]),
    }
}

fn record(
    k: &mut KernelBuilder,
    steps: &[Step],
    x: &coopgraph::ir::Input<f32>,
    y: &coopgraph::ir::Output<f32>,
    n: &coopgraph::ir::Scalar<u32>,
    cur: &mut coopgraph::ir::ThreadData<f32>,
) {
    for s in steps {
        match s {
            Step::Load(g, a, valid, offset, default) => {
                let mut l = Load::direct().algorithm(ALGS[*a as usize % 6]);
                if *valid {
                    l = l.valid_items(*n);
                }
                if *offset {
                    l = l.offset(index::block_index() * 7u32);
                }
                if *default {
                    l = l.oob_default(0.5);
                }
                let grp = group(k, *g);
                *cur = k.load_from(grp, x, l);
            }
            Step::Map(op) => {
                let op = *op;
                *cur = k.map(cur, move |v| match op {
                    0 => v * 2.0,
                    1 => v.sqrt(),
                    2 => v.cast::<i32>().cast::<f32>(),
                    3 => v.clone().max(index::item().cast::<f32>()),
                    4 => v.gt(1.0f32).select(v.clone(), -v),
                    5 => v.sin(),
                    6 => v.fma(3.0f32, 1.0f32),
                    _ => Expr::lit(1.0f32),
                });
            }
            Step::Store(g, a, valid) => {
                let mut st = Store::default().algorithm(ALGS[*a as usize % 6]);
                if *valid {
                    st = st.valid_items(*n);
                }
                let grp = group(k, *g);
                k.store_to(grp, y, cur, st);
            }
            Step::Branch(c, inner) => {
                let cond = match c {
                    0 => index::thread_rank().lt(17u32),
                    1 => index::warp_rank().eq(0u32),
                    2 => n.expr().gt(3u32),
                    _ => (index::thread_rank() / 8u32).eq(1u32),
                };
                let mut c2 = *cur;
                k.if_(cond, |k| record(k, inner, x, y, n, &mut c2));
            }
            Step::Loop(count, inner) => {
                let mut c2 = *cur;
                k.for_range(0u32, *count, |k, _| record(k, inner, x, y, n, &mut c2));
            }
            Step::SetItem(i) => k.set_item(cur, *i, 1.0f32),
            Step::Sync => k.sync_block(),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn random_programs_never_panic(
        block in prop_oneof![1 => Just(0u32), 4 => Just(32), 1 => Just(48), 4 => Just(64),
            4 => Just(96), 1 => Just(1025)],
        items in prop_oneof![1 => Just(0u32), 4 => Just(1), 4 => Just(3), 4 => Just(4),
            1 => Just(65)],
        fill in any::<bool>(),
        steps in prop::collection::vec(step(), 0..6),
    ) {
        let mut k = KernelBuilder::new("fuzz").block(block).items_per_thread(items);
        let x = k.input::<f32>("x");
        let y = k.output::<f32>("y");
        let n = k.scalar::<u32>("n");
        let mut cur = if fill { k.fill(0.25f32) } else { k.thread_data::<f32>() };
        record(&mut k, &steps, &x, &y, &n, &mut cur);
        let kernel = match k.build() {
            Ok(kernel) => kernel,
            Err(e) => {
                // A typed error names the user's line, never the library's.
                let library = super::run::library_line(&e);
                prop_assert!(library.is_none(), "{}", library.unwrap_or_default());
                return Ok(());
            }
        };
        for arch in coopgraph::ptx::Arch::ALL {
            kernel.ptx(arch).unwrap_or_else(|e| panic!("{e}"));
        }
        let dev = Device::sim();
        if let Ok(f) = dev.compile(&kernel) {
            let len = 4096;
            let xs: Vec<f32> = (0..len).map(|i| i as f32).collect();
            let xb = dev.upload(&xs).expect("upload");
            let mut yb = dev.alloc_zeroed::<f32>(len).expect("alloc");
            // Faults (out of bounds, uninitialized reads) are errors, never panics.
            let _ = f.launch_grid(2, (&xb, &mut yb, 300u32));
        }
    }
}

/// One collective call recorded over a payload of the tile.
type Call = dyn Fn(&mut KernelBuilder, &coopgraph::ir::ThreadData<u32>);

/// The block's sorting and counting collectives with their size controls at and past their
/// bounds (digit widths, bit ranges, `k`, bins, decoded items) over blocks of 1 to 1024
/// threads and 1 to 64 items: each kernel builds or gets a typed error that names the
/// user's line, never a line of the library (as counts of 2^bits digits over too few
/// threads once did) and never a panic.
#[test]
fn collective_controls_at_their_bounds_name_the_users_line() {
    use coopgraph::ir::{Histogram, MergeSort, RadixRank, RadixSort, TopK};
    let blocks = [1u32, 2, 3, 4, 32, 33, 64, 96, 1024];
    let (mut built, mut refused) = (0, 0);
    for &block in &blocks {
        for items in [1u32, 2, 64] {
            let tile = block * items;
            let mut cases: Vec<Box<Call>> = Vec::new();
            for bits in [0u32, 1, 6, 7, 8, 9] {
                cases.push(Box::new(move |k, t| {
                    let b = k.this_block();
                    k.radix_rank_with_counts(b, t, RadixRank::basic(bits));
                }));
                cases.push(Box::new(move |k, t| {
                    let b = k.this_block();
                    k.radix_rank_by(b, t, |v| v >> 3u32, RadixRank::memoize(bits));
                }));
                cases.push(Box::new(move |k, t| {
                    let b = k.this_block();
                    k.radix_rank_with_counts(b, t, RadixRank::match_any(bits));
                }));
                cases.push(Box::new(move |k, t| {
                    let b = k.this_block();
                    k.radix_sort(b, t, RadixSort::ascending().radix_bits(bits));
                }));
                cases.push(Box::new(move |k, t| {
                    let b = k.this_block();
                    k.top_k(b, t, TopK::largest(tile.min(3)).radix_bits(bits));
                }));
            }
            for (begin, end) in [(0u32, 32u32), (31, 32), (0, 33), (32, 32), (5, 4)] {
                cases.push(Box::new(move |k, t| {
                    let b = k.this_block();
                    k.radix_sort(b, t, RadixSort::descending().bits(begin, end));
                }));
                cases.push(Box::new(move |k, t| {
                    let b = k.this_block();
                    k.top_k(b, t, TopK::smallest(1).bits(begin, end));
                }));
            }
            for kk in [0u32, 1, tile, tile + 1] {
                cases.push(Box::new(move |k, t| {
                    let b = k.this_block();
                    k.top_k(b, t, TopK::smallest(kk));
                }));
            }
            for bins in [0u32, 1, 256, 4096, 1 << 16] {
                cases.push(Box::new(move |k, t| {
                    let b = k.this_block();
                    let counters = k.shared_array::<u32>(bins.max(1));
                    k.histogram(b, t, bins, &counters, Histogram::sort());
                    k.histogram(b, t, bins, &counters, Histogram::atomic());
                }));
            }
            for out in [0u32, 1, 64, 65] {
                cases.push(Box::new(move |k, t| {
                    let b = k.this_block();
                    let runs = k.run_lengths(b, t, t);
                    k.run_length_decode(&runs, out, 0u32);
                }));
            }
            cases.push(Box::new(|k, t| {
                let b = k.this_block();
                k.merge_sort(b, t, MergeSort::ascending());
            }));
            for case in &cases {
                let mut k = KernelBuilder::new("bounds")
                    .block(block)
                    .items_per_thread(items);
                let x = k.input::<u32>("x");
                let b = k.this_block();
                let t = k.load_from(b, &x, Load::direct());
                case(&mut k, &t);
                match k.build() {
                    Ok(_) => built += 1,
                    Err(e) => {
                        let library = super::run::library_line(&e);
                        assert!(
                            library.is_none(),
                            "block {block}, {items} items: {}",
                            library.unwrap_or_default()
                        );
                        refused += 1;
                    }
                }
            }
        }
    }
    // Both outcomes occur: the sweep reaches past the bounds and stays within them.
    assert!(
        built > 100 && refused > 100,
        "{built} built, {refused} refused"
    );
}

//! Large and deep programs: building, planning and emitting take time about linear in the
//! program's size and nesting.

use std::time::{Duration, Instant};

use coopgraph::ir::{Reduce, index};
use coopgraph::{Kernel, KernelBuilder, Load, Store};

/// Generous for a loaded test machine; a walk exponential in the nesting takes hours here.
const QUICK: Duration = Duration::from_secs(1);

/// The kernel, or a panic with the first errors (the listing of a deep kernel is long).
fn built(k: KernelBuilder) -> Kernel {
    k.build()
        .unwrap_or_else(|e| panic!("{}", e.to_string().chars().take(2000).collect::<String>()))
}

/// Records a region around the ops its second argument records (a loop, a branch).
type Open<'a> = dyn Fn(&mut KernelBuilder, &mut dyn FnMut(&mut KernelBuilder)) + 'a;

/// Nests `depth` regions made by `open` around `inner`.
fn nest(
    k: &mut KernelBuilder,
    depth: usize,
    open: &Open<'_>,
    inner: &mut dyn FnMut(&mut KernelBuilder),
) {
    if depth == 0 {
        inner(k);
    } else {
        open(k, &mut |k| nest(k, depth - 1, open, inner));
    }
}

/// A kernel whose loads, block reduction and transposing store sit `depth` regions deep.
fn deep(depth: usize, open: &Open<'_>) -> (Kernel, Duration) {
    let mut k = KernelBuilder::new("deep").block(64).items_per_thread(2);
    let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    let block = k.this_block();
    let start = Instant::now();
    nest(&mut k, depth, open, &mut |k| {
        let t = k.load_from(block, &x, Load::transpose());
        let s = k.reduce(block, &t, Reduce::sum().broadcast());
        let total = s.item(0);
        let u = k.map(&t, move |a| a + total);
        k.store_to(block, &y, &u, Store::transpose());
    });
    let kernel = built(k);
    (kernel, start.elapsed())
}

#[test]
fn deeply_nested_loops_plan_quickly() {
    let (kernel, took) = deep(200, &|k, body| k.for_range(0u32, 2u32, |k, _| body(k)));
    eprintln!("200 nested loops: built in {took:?}");
    assert!(took < QUICK, "200 nested loops took {took:?}");
    // Across iterations too: the reduction's first write waits for the last reads.
    assert!(kernel.plan().barriers.len() >= 4);
    let (_, took) = deep(200, &|k, body| {
        k.tiles(index::grid_blocks(), |k, _| body(k))
    });
    assert!(took < QUICK, "200 nested tile loops took {took:?}");
}

#[test]
fn deeply_nested_branches_plan_quickly() {
    let (kernel, took) = deep(200, &|k, body| k.if_(index::block_index().lt(7u32), body));
    eprintln!("200 nested branches: built in {took:?}");
    assert!(took < QUICK, "200 nested branches took {took:?}");
    assert!(!kernel.plan().barriers.is_empty());
    let (_, took) = deep(200, &|k, body| {
        k.if_else(
            index::block_index().lt(7u32),
            |k| body(k),
            |k| k.sync_block(),
        )
    });
    assert!(
        took < QUICK,
        "200 nested branches with else arms took {took:?}"
    );
}

#[test]
fn many_branches_in_sequence_plan_quickly() {
    // Each branch used to double the accesses the barrier walk carried past it.
    let mut k = KernelBuilder::new("wide").block(64).items_per_thread(2);
    let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    let block = k.this_block();
    let start = Instant::now();
    let t = k.load_from(block, &x, Load::transpose());
    for i in 0..500u32 {
        k.if_(index::block_index().lt(i), |k| {
            let s = k.reduce(block, &t, Reduce::sum().broadcast());
            let total = s.item(0);
            let u = k.map(&t, move |a| a + total);
            k.store_to(block, &y, &u, Store::direct());
        });
    }
    let kernel = built(k);
    let took = start.elapsed();
    eprintln!("500 branches in sequence: built in {took:?}");
    assert!(took < QUICK, "500 branches took {took:?}");
    assert!(!kernel.plan().barriers.is_empty());
}

#[test]
fn shared_memory_at_every_level_plans_quickly() {
    let mut k = KernelBuilder::new("levels").block(64).items_per_thread(2);
    let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    let block = k.this_block();
    let start = Instant::now();
    nest(
        &mut k,
        200,
        &|k, body| {
            k.for_range(0u32, 2u32, |k, i| {
                let t = k.load_from(block, &x, Load::transpose().offset(i.clone() * 128u32));
                body(k);
                k.if_(index::block_index().lt(i), |k| {
                    k.store_to(block, &y, &t, Store::warp_transpose())
                });
            })
        },
        &mut |k| k.sync_block(),
    );
    let kernel = built(k);
    let took = start.elapsed();
    eprintln!("shared memory at each of 200 levels: built in {took:?}");
    assert!(took < QUICK, "took {took:?}");
    assert!(kernel.plan().barriers.len() >= 200);
}

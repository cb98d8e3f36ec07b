//! Large and deep programs: building, planning and emitting take time about linear in the
//! program's size and nesting.

use std::time::{Duration, Instant};

use coopgraph::ir::ops::{MAX_EXPR_DEPTH, MAX_NESTING};
use coopgraph::ir::{Arrangement, ExchangeVia, Expr, Reduce, VerifyErrorKind, index};
use coopgraph::ptx::Arch;
use coopgraph::{Error, Kernel, KernelBuilder, Load, Store};

use crate::common;

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
    assert!(kernel.plan().barriers().len() >= 4);
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
    assert!(!kernel.plan().barriers().is_empty());
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
    assert!(!kernel.plan().barriers().is_empty());
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
    assert!(kernel.plan().barriers().len() >= 200);
}

/// Runs `f` on a thread with a 2 MiB stack, the size of a test thread's and less than a main
/// thread's; an overflow aborts the test binary.
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    on_stack(2 << 20, f)
}

fn on_stack<T: Send + 'static>(bytes: usize, f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(bytes)
        .spawn(f)
        .expect("thread starts")
        .join()
        .unwrap_or_else(|_| panic!("the thread panicked"))
}

/// A kernel with `depth` nested branches around a block reduction and a transposing store.
fn nested_ifs(depth: usize) -> KernelBuilder {
    let mut k = KernelBuilder::new("nested").block(64).items_per_thread(2);
    let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    let block = k.this_block();
    let t = k.load_from(block, &x, Load::transpose());
    nest(
        &mut k,
        depth,
        &|k, body| k.if_(index::block_index().lt(1000u32), body),
        &mut |k| {
            let s = k.reduce(block, &t, Reduce::sum().broadcast());
            let total = s.item(0);
            let u = k.map(&t, move |a| a + total);
            k.store_to(block, &y, &u, Store::transpose());
        },
    );
    k
}

/// A chain `((x + 1) + 1) ...` of `depth` additions.
fn chain(depth: u32) -> coopgraph::ir::Expr<u32> {
    let mut e = index::thread_rank();
    for _ in 0..depth {
        e = e + 1u32;
    }
    e
}

#[test]
fn nesting_at_the_limit_builds_and_runs_on_a_small_stack() {
    let (kernel, got) = on_small_stack(|| {
        // The builder's recursion is the caller's own (closures in closures), and fits too.
        let kernel = built(nested_ifs(MAX_NESTING));
        let _ = kernel.explain();
        for arch in Arch::ALL {
            let _ = kernel.ptx(arch);
        }
        let dev = common::device();
        let xs: Vec<u32> = (0..256).map(|i| i * 3).collect();
        let f = dev.compile(&kernel).expect("compiles");
        let x = dev.upload(&xs).expect("upload");
        let mut y = dev.alloc_zeroed::<u32>(256).expect("alloc");
        f.launch_over(256, (&x, &mut y)).expect("runs");
        (kernel, y.to_vec().expect("download"))
    });
    common::assemble_all(&kernel);
    let xs: Vec<u32> = (0..256).map(|i| i * 3).collect();
    let want: Vec<u32> = xs
        .chunks(128)
        .flat_map(|tile| {
            let total: u32 = tile.iter().sum();
            tile.iter().map(move |v| v + total)
        })
        .collect();
    assert_eq!(got, want);
}

#[test]
fn nesting_past_the_limit_is_an_error_not_an_overflow() {
    // The caller's own recursion needs a large stack to record this; the library does not.
    let k = on_stack(1 << 30, || nested_ifs(20_000));
    let err = on_small_stack(move || match k.build() {
        Ok(_) => panic!("a kernel nested 20,000 deep built"),
        Err(Error::Verify(e)) => e,
        Err(other) => panic!("{other}"),
    });
    let deep: Vec<_> = err
        .errors
        .iter()
        .filter(|e| e.kind == VerifyErrorKind::NestingTooDeep { max: MAX_NESTING })
        .collect();
    assert_eq!(
        deep.len(),
        1,
        "{:?}",
        &err.errors[..err.errors.len().min(4)]
    );
    assert!(deep[0].loc.file.ends_with("limits.rs"));
    // The listing shows every op once, indented no deeper than a fixed bound.
    assert!(err.listing.lines().count() < 3 * 20_010);
    assert!(err.listing.lines().all(|l| l.len() < 400));
}

/// A one-block kernel storing `chain(depth)` per thread.
fn chained(depth: u32) -> Kernel {
    let mut k = KernelBuilder::new("deep_expr")
        .block(32)
        .items_per_thread(1);
    let y = k.output::<u32>("y");
    let d = k.fill(chain(depth));
    k.store_to(k.this_block(), &y, &d, Store::direct());
    built(k)
}

#[test]
fn deep_expressions_build_and_run_on_a_small_stack() {
    // Recorded, verified, planned, emitted and listed (too many registers for the
    // simulator to run).
    on_small_stack(|| {
        let kernel = chained(40_000);
        let _ = kernel.explain();
        for arch in Arch::ALL {
            assert!(kernel.ptx(arch).expect("emits").len() > 40_000 * 10);
        }
    });
    let depth = 5_000;
    let (kernel, got) = on_small_stack(move || {
        let kernel = chained(depth);
        let got = run_one_block(&kernel);
        (kernel, got)
    });
    let want: Vec<u32> = (0..32).map(|t| t + depth).collect();
    assert_eq!(got, want);
    common::assemble_all(&kernel);
}

#[test]
fn expressions_past_the_limit_are_an_error_not_an_overflow() {
    let err = on_small_stack(|| {
        let mut k = KernelBuilder::new("too_deep").block(32).items_per_thread(1);
        let y = k.output::<u32>("y");
        // One level over the bound: the leaf and as many additions.
        let d = k.fill(chain(MAX_EXPR_DEPTH));
        k.store_to(k.this_block(), &y, &d, Store::direct());
        match k.build() {
            Ok(_) => panic!("built"),
            Err(Error::Verify(e)) => e,
            Err(other) => panic!("{other}"),
        }
    });
    assert_eq!(err.errors.len(), 1, "{:?}", err.errors);
    let e = &err.errors[0];
    assert_eq!(
        e.kind,
        VerifyErrorKind::ExpressionTooDeep {
            depth: MAX_EXPR_DEPTH + 1,
            max: MAX_EXPR_DEPTH
        }
    );
    assert!(e.loc.file.ends_with("limits.rs"));
}

#[test]
fn deep_expressions_drop_and_print_on_a_small_stack() {
    on_small_stack(|| {
        let e = chain(100_000);
        let text = format!("{e:?}");
        assert!(text.len() < 1000, "{}", text.len());
        drop(e);
        // A deep tile expression, dropped after the builder is gone.
        let mut k = KernelBuilder::new("kept").block(32).items_per_thread(1);
        let mut kept = None;
        k.tiles(32u32, |_, tile| {
            let mut e = tile.origin.clone();
            for _ in 0..100_000 {
                e = e * 3u32;
            }
            kept = Some(e);
        });
        drop(k);
        drop(kept);
    });
}

#[test]
fn shared_subexpressions_cost_their_distinct_nodes() {
    // As a tree this is 2^200 nodes; as written, 201.
    let start = Instant::now();
    let mut e = index::thread_rank() + 1u32;
    for _ in 0..200 {
        e = e.clone() + e;
    }
    let mut k = KernelBuilder::new("doubled").block(32).items_per_thread(1);
    let y = k.output::<u32>("y");
    let d = k.fill(e.clone());
    k.store_to(k.this_block(), &y, &d, Store::direct());
    let kernel = built(k);
    let _ = kernel.explain();
    let _ = format!("{e:?}");
    let got = run_one_block(&kernel);
    let took = start.elapsed();
    assert!(took < QUICK, "took {took:?}");
    // (t + 1) * 2^200 wraps to 0.
    assert_eq!(got, vec![0u32; 32]);
    common::assemble_all(&kernel);
}

/// Runs a kernel whose one parameter is a `u32` output of 32 elements on one block.
fn run_one_block(kernel: &Kernel) -> Vec<u32> {
    let dev = common::device();
    let f = dev.compile(kernel).expect("compiles");
    let mut y = dev.alloc_zeroed::<u32>(32).expect("alloc");
    f.launch_grid(1, (&mut y,)).expect("runs");
    y.to_vec().expect("download")
}

#[test]
fn many_shared_memory_ops_in_sequence_build_quickly() {
    // 12,000 ops touching shared memory, about 18,000 barriers: about half a second on one
    // core.
    // Finding each op's barriers, conversions and slice used to scan every one placed.
    let n = 3000u32;
    let mut k = KernelBuilder::new("long").block(64).items_per_thread(2);
    let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    let block = k.this_block();
    let start = Instant::now();
    let mut t = k.load_from(block, &x, Load::transpose());
    for i in 0..n {
        let s = k.reduce(block, &t, Reduce::sum().broadcast());
        let total = s.item(0);
        t = k.map(&t, move |a| a + total + i);
        t = k.exchange(
            block,
            &t,
            Arrangement::Striped { threads: 64 },
            ExchangeVia::Shared,
        );
        t = k.exchange(block, &t, Arrangement::Blocked, ExchangeVia::Shared);
    }
    k.store_to(block, &y, &t, Store::transpose());
    let kernel = built(k);
    let ptx = kernel.ptx(Arch::Sm90).expect("emits");
    let took = start.elapsed();
    eprintln!("{} ops: built and emitted in {took:?}", 4 * n);
    assert!(took < 10 * QUICK, "took {took:?}");
    // Six barriers an iteration (the reduction's two, each exchange's, and the writes over
    // what the op before read), five where the reduction's partials have bytes of their own
    // (while the 2 KiB such partials may take lasts).
    let barriers = kernel.plan().barriers().len();
    assert!(
        (5 * n as usize..=6 * n as usize + 2).contains(&barriers),
        "{barriers}"
    );
    assert!(ptx.len() > 1 << 20);
}

/// `e op e` taken 48 times over: 48 nodes, 2^48 paths from the root.
fn doubled(e: Expr<u32>, op: impl Fn(Expr<u32>, Expr<u32>) -> Expr<u32>) -> Expr<u32> {
    (0..48).fold(e, |e, _| op(e.clone(), e))
}

#[test]
fn expressions_shared_many_times_over_build_quickly() {
    // Each walk over an expression has to look at a shared node once: one that follows every
    // path hangs here. The expressions go where the compiler judges them: a load's offset and
    // count (whether its reads may go before the previous load's exchange), a branch's
    // condition (whether it is a rank-0 test), a map, a store's offset and count, a shared
    // index, a local array's index (whether it needs a guard). `o ^ o` is 0 and `c.min(c)` is
    // `c`, so the kernel stays a plain copy.
    let (block, items, valid) = (96u32, 2u32, 150u32);
    let start = Instant::now();
    let kernel = {
        let mut k = KernelBuilder::new("shared_exprs")
            .block(block)
            .items_per_thread(items);
        let (x, v) = (k.input::<u32>("x"), k.input::<u32>("v"));
        let (y, w) = (k.output::<u32>("y"), k.output::<u32>("w"));
        let n = k.scalar::<u32>("n");
        let b = k.this_block();
        let zero = doubled(n.expr(), |a, b| a ^ b);
        let count = doubled(n.expr(), |a, b| a.min(b));
        let keys = k.load_from(b, &x, Load::warp_transpose().valid_items(n));
        let load = Load::warp_transpose()
            .offset(zero.clone())
            .valid_items(count.clone())
            .oob_default(9);
        let values = k.load_from(b, &v, load);
        let first = (0..48).fold(index::thread_rank().eq(0u32), |c, _| c.and(&c));
        let flag = k.shared_array::<u32>(1);
        k.if_(first, |k| k.shared_write(&flag, zero.clone(), zero.clone()));
        k.sync_block();
        let seen = flag.read(zero.clone());
        // An index the compiler bounds (to leave its guard out): the lane, 2^48 times over.
        let lane = doubled(index::lane(), |a, b| a.min(b));
        let own = k.local_array::<u32>(32);
        k.local_write(&own, lane.clone(), zero.clone());
        let mine = own.read(lane);
        let keys = k.map(&keys, move |a| {
            a + seen.clone() + mine.clone() + (zero.clone() & 1u32)
        });
        k.store_to(b, &y, &keys, Store::direct().valid_items(count.clone()));
        k.store_to(
            b,
            &w,
            &values,
            Store::direct().offset(doubled(count, |a, b| a ^ b)),
        );
        built(k)
    };
    for arch in Arch::ALL {
        kernel.ptx(arch).expect("emits");
    }
    let took = start.elapsed();
    eprintln!("expressions of 2^48 paths: built and emitted in {took:?}");
    assert!(took < QUICK, "took {took:?}");
    let dev = common::device();
    let tile = (block * items) as usize;
    let xs: Vec<u32> = (0..tile as u32).map(|i| i * 7 + 3).collect();
    let vs: Vec<u32> = (0..tile as u32)
        .map(|i| i.wrapping_mul(2654435761))
        .collect();
    let f = dev.compile(&kernel).expect("compiles");
    let (xb, vb) = (
        dev.upload(&xs).expect("upload"),
        dev.upload(&vs).expect("upload"),
    );
    let mut yb = dev.alloc_filled(tile, 1u32).expect("alloc");
    let mut wb = dev.alloc_filled(tile, 1u32).expect("alloc");
    f.launch_grid(1, (&xb, &vb, &mut yb, &mut wb, valid))
        .expect("runs");
    let want_y: Vec<u32> = (0..tile)
        .map(|i| if i < valid as usize { xs[i] } else { 1 })
        .collect();
    let want_w: Vec<u32> = (0..tile)
        .map(|i| if i < valid as usize { vs[i] } else { 9 })
        .collect();
    assert_eq!(yb.to_vec().expect("download"), want_y);
    assert_eq!(wb.to_vec().expect("download"), want_w);
    common::assemble_all(&kernel);
}

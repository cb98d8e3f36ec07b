//! Scans over groups of whole warps (`group_by_warps`): inclusive and exclusive scans with
//! every operator kind, initial values, aggregates and prefix callbacks, against a CPU scan of
//! each group's tile, in blocks of 64 to 1024 threads with and without warps left over
//! (`if_member`), over every dtype; the groups' named barriers shown necessary by the race
//! checker.

use super::common::{Batch, Rng, assert_barriers_necessary, assert_same, device, race_checker};
use super::warp_groups::errors;
use coopgraph::ir::{
    DType, Element, Expr, Reduce, Scan, ScanAlgorithm, ThreadData, VerifyErrorKind as K, index,
};
use coopgraph::planner::SyncScope;
use coopgraph::runtime::{Device, DeviceElement, RuntimeError};
use coopgraph::{Kernel, KernelBuilder, Load, Store};

/// An operator a test scans with.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Sum,
    Max,
    Min,
    Xor,
    /// The later value (associative, not commutative).
    Last,
}

/// A dtype the tests scan: its bitwise xor where it has one.
trait Scanned: DeviceElement {
    fn xor() -> Option<Reduce<Self>>;
}

macro_rules! scanned {
    (ints: $($i:ty),*; floats: $($f:ty),*) => {
        $(impl Scanned for $i {
            fn xor() -> Option<Reduce<Self>> {
                Some(Reduce::bit_xor())
            }
        })*
        $(impl Scanned for $f {
            fn xor() -> Option<Reduce<Self>> {
                None
            }
        })*
    };
}
scanned!(ints: u8, i16, u32, i32, u64, i64; floats: f32, f64);

impl Op {
    fn controls<T: Scanned>(self) -> Reduce<T> {
        match self {
            Op::Sum => Reduce::sum(),
            Op::Max => Reduce::max(),
            Op::Min => Reduce::min(),
            Op::Xor => T::xor().expect("xor scans only integers"),
            Op::Last => Reduce::custom(false, |_a, b: Expr<T>| b),
        }
    }

    /// The operator on the CPU, over values held as `f64` (floats) or `i128` bits.
    fn apply(self, d: DType, a: i128, b: i128) -> i128 {
        let float = matches!(d, DType::F32 | DType::F64);
        let f = |v: i128| f64::from_bits(v as u64);
        match self {
            Op::Sum if float => (f(a) + f(b)).to_bits() as i128,
            Op::Sum => a + b,
            Op::Max if float => f(a).max(f(b)).to_bits() as i128,
            Op::Min if float => f(a).min(f(b)).to_bits() as i128,
            Op::Max => a.max(b),
            Op::Min => a.min(b),
            Op::Xor => a ^ b,
            Op::Last => b,
        }
    }
}

/// How a test scans.
#[derive(Debug, Clone, Copy)]
struct Case {
    op: Op,
    inclusive: bool,
    /// The initial value (required for exclusive scans).
    initial: Option<i64>,
    /// Whether the group's total is written too.
    aggregate: bool,
    /// The block algorithm asked (groups of warps scan by warp scans whatever it is).
    algorithm: ScanAlgorithm,
}

/// A scan over groups of `warps` warps of a block of `block` threads with `items` items per
/// thread: each member stores its results at its blocked positions and (with an aggregate)
/// its group's total at its index; warps in no group store nothing.
fn scan_kernel<T: Scanned>(block: u32, warps: u32, items: u32, case: Case) -> Kernel {
    let name = format!(
        "wg_scan_{block}_{warps}_{items}_{:?}_{}_{:?}",
        case.op,
        case.inclusive,
        T::DTYPE
    );
    let mut k = KernelBuilder::new(&name)
        .block(block)
        .items_per_thread(items);
    let (x, y, z) = (k.input::<T>("x"), k.output::<T>("y"), k.output::<T>("z"));
    let b = k.this_block();
    let g = b.group_by_warps(warps);
    let t = k.load_from(b, &x, Load::direct());
    k.if_member(&g, |k, g| {
        let mut c = if case.inclusive {
            Scan::inclusive(case.op.controls::<T>())
        } else {
            Scan::exclusive(case.op.controls::<T>())
        };
        if let Some(v) = case.initial {
            c = c.initial_value(T::cast_from_i64(v));
        }
        c = c.algorithm(case.algorithm);
        if case.aggregate {
            let (s, a) = k.scan_with_aggregate(g, &t, c);
            k.store_to(g, &y, &s, Store::direct());
            k.write(&z, index::thread_rank(), a.item(0));
        } else {
            let s = k.scan(g, &t, c);
            k.store_to(g, &y, &s, Store::direct());
        }
    });
    k.build().expect("builds")
}

/// Bits of `v` for [`Op::apply`]: floats as `f64` bits, integers sign- or zero-extended.
fn wide<T: Element>(v: T) -> i128 {
    match T::DTYPE {
        DType::F32 => f64::from(f32::from_bits(v.to_bits() as u32)).to_bits() as i128,
        DType::F64 => v.to_bits() as i128,
        DType::I8 => v.to_bits() as u8 as i8 as i128,
        DType::I16 => v.to_bits() as u16 as i16 as i128,
        DType::I32 => v.to_bits() as u32 as i32 as i128,
        DType::I64 => v.to_bits() as i64 as i128,
        _ => v.to_bits() as i128,
    }
}

/// The value of `T` that [`wide`] maps to `w` (integers wrap).
fn narrow<T: Element>(w: i128) -> T {
    match T::DTYPE {
        DType::F32 => T::from_bits(u64::from((f64::from_bits(w as u64) as f32).to_bits())),
        DType::F64 => T::from_bits(w as u64),
        _ => T::from_bits(w as u64),
    }
}

/// The CPU's scan of each group's tile of `xs`: `(y, z)` as [`scan_kernel`] writes them.
fn expected<T: Element>(
    block: u32,
    warps: u32,
    items: u32,
    case: Case,
    xs: &[T],
) -> (Vec<T>, Vec<T>) {
    let d = T::DTYPE;
    let threads = (warps * 32) as usize;
    let groups = (block / 32 / warps) as usize;
    let tile = threads * items as usize;
    let mut y = vec![T::cast_from_i64(0); (block * items) as usize];
    let mut z = vec![T::cast_from_i64(0); block as usize];
    let f = |a: i128, b: i128| {
        let r = case.op.apply(d, a, b);
        // Integers wrap at every step, as the device's do.
        wide(narrow::<T>(r))
    };
    let initial = case.initial.map(|v| wide(T::cast_from_i64(v)));
    for j in 0..groups {
        let vals: Vec<i128> = xs[j * tile..(j + 1) * tile]
            .iter()
            .map(|&v| wide(v))
            .collect();
        let mut acc = initial;
        for (p, &v) in vals.iter().enumerate() {
            let incl = match acc {
                None => v,
                Some(a) => f(a, v),
            };
            let out = if case.inclusive { Some(incl) } else { acc };
            y[j * tile + p] = narrow(out.expect("exclusive scans have an initial value"));
            acc = Some(incl);
        }
        let total = vals.iter().copied().reduce(f).expect("a tile");
        z[j * threads..(j + 1) * threads].fill(narrow(total));
    }
    (y, z)
}

fn run<T: Scanned>(dev: &Device, kernel: &Kernel, xs: &[T]) -> Result<Vec<T>, RuntimeError> {
    let xb = dev.upload(xs)?;
    let mut yb = dev.alloc_zeroed::<T>(xs.len())?;
    let n = kernel.ir().block_threads() as usize;
    let mut zb = dev.alloc_zeroed::<T>(n)?;
    dev.compile(kernel)?
        .launch_grid(1, (&xb, &mut yb, &mut zb))?;
    let mut out = yb.to_vec()?;
    out.extend(zb.to_vec()?);
    Ok(out)
}

/// Runs `case` against the CPU; the kernel joins `batch`.
fn check<T: Scanned>(
    batch: &mut Batch,
    rng: &mut Rng,
    (block, warps, items): (u32, u32, u32),
    case: Case,
    value: impl Fn(&mut Rng) -> T,
) {
    let kernel = scan_kernel::<T>(block, warps, items, case);
    batch.add(&kernel);
    let xs: Vec<T> = (0..block * items).map(|_| value(rng)).collect();
    let got = run(device(), &kernel, &xs).expect("runs");
    let (mut want, z) = expected(block, warps, items, case, &xs);
    if case.aggregate {
        want.extend(z);
    } else {
        want.extend(vec![T::cast_from_i64(0); block as usize]);
    }
    let what = format!("{block} threads, groups of {warps} warps, {items} items, {case:?}");
    assert_same(&got, &want, &what);
}

const SIZES: [(u32, u32); 14] = [
    (64, 1),
    (64, 2),
    (96, 2),
    (128, 3),
    (128, 4),
    (160, 2),
    (160, 4),
    (256, 3),
    (320, 4),
    (512, 2),
    (800, 3),
    (1024, 1),
    (1024, 3),
    (1024, 4),
];

#[test]
fn scans_match_a_cpu_scan_of_each_group() {
    let mut rng = Rng::new(31);
    let mut batch = Batch::default();
    let case = |op, inclusive, initial, aggregate, algorithm| Case {
        op,
        inclusive,
        initial,
        aggregate,
        algorithm,
    };
    let cases = [
        (
            1,
            case(Op::Sum, true, None, false, ScanAlgorithm::WarpScans),
        ),
        (
            2,
            case(Op::Sum, false, Some(0), true, ScanAlgorithm::WarpScans),
        ),
        (
            3,
            case(Op::Max, true, Some(-5), true, ScanAlgorithm::Raking),
        ),
        (
            1,
            case(Op::Last, false, Some(-7), false, ScanAlgorithm::WarpScans),
        ),
        (
            2,
            case(Op::Last, true, None, true, ScanAlgorithm::RakingMemoize),
        ),
        (
            1,
            case(Op::Min, false, Some(99), true, ScanAlgorithm::WarpScans),
        ),
    ];
    for (block, warps) in SIZES {
        for (items, c) in cases {
            let value = |r: &mut Rng| (r.next() % 2001) as i64 - 1000;
            check::<i64>(&mut batch, &mut rng, (block, warps, items), c, value);
        }
    }
    batch.finish();
}

#[test]
fn scans_of_every_dtype() {
    fn each<T: Scanned>(batch: &mut Batch, rng: &mut Rng, ops: &[Op]) {
        for (block, warps) in [(160, 2), (256, 4), (224, 3)] {
            for &op in ops {
                for (inclusive, aggregate) in [(true, true), (false, false)] {
                    let c = Case {
                        op,
                        inclusive,
                        initial: (!inclusive).then_some(3),
                        aggregate,
                        algorithm: ScanAlgorithm::WarpScans,
                    };
                    // Small integers: float sums are exact in any order.
                    let value = |r: &mut Rng| T::cast_from_i64((r.next() % 17) as i64 - 4);
                    check::<T>(batch, rng, (block, warps, 2), c, value);
                }
            }
        }
    }
    let mut rng = Rng::new(32);
    let mut batch = Batch::default();
    let ints = [Op::Sum, Op::Max, Op::Min, Op::Xor, Op::Last];
    let floats = [Op::Sum, Op::Max, Op::Min, Op::Last];
    each::<u8>(&mut batch, &mut rng, &ints);
    each::<i16>(&mut batch, &mut rng, &ints);
    each::<u32>(&mut batch, &mut rng, &ints);
    each::<i32>(&mut batch, &mut rng, &ints);
    each::<u64>(&mut batch, &mut rng, &ints);
    each::<f32>(&mut batch, &mut rng, &floats);
    each::<f64>(&mut batch, &mut rng, &floats);
    batch.finish();
}

/// A running sum over `tiles` tiles per group: each group carries its own total from tile to
/// tile through a prefix callback; the callback's prefix is read from rank 0 only (the other
/// ranks offer a wrong one). Group `j`'s tile `i` is at `(i * groups + j) * tile`.
fn running_kernel(block: u32, warps: u32, tiles: u32) -> Kernel {
    let mut k = KernelBuilder::new(format!("wg_running_{block}_{warps}"))
        .block(block)
        .items_per_thread(2);
    let (x, y) = (k.input::<i64>("x"), k.output::<i64>("y"));
    let g = k.this_block().group_by_warps(warps);
    let tile = warps * 32 * 2;
    let groups = block / 32 / warps;
    k.if_member(&g, |k, g| {
        let running = k.thread_data_n::<i64>(1);
        k.set_item(&running, 0, 0i64);
        k.for_range(0u32, tiles, |k, i| {
            // The groups' tiles of tile `i`; each group adds its own origin.
            let offset = i * (groups * tile);
            let t = k.load_from(g, &x, Load::direct().offset(offset.clone()));
            let s = k.scan_with_prefix(g, &t, Scan::inclusive_sum(), |k, total| {
                let start = running.item(0);
                k.set_item(&running, 0, running.item(0) + total);
                g.thread_rank()
                    .eq(0u32)
                    .select(start, Expr::lit(-1_000_000i64))
            });
            k.store_to(g, &y, &s, Store::direct().offset(offset));
        });
    });
    k.build().expect("builds")
}

fn run_running(dev: &Device, kernel: &Kernel, xs: &[i64]) -> Result<Vec<i64>, RuntimeError> {
    let xb = dev.upload(xs)?;
    let mut yb = dev.alloc_zeroed::<i64>(xs.len())?;
    dev.compile(kernel)?.launch_grid(1, (&xb, &mut yb))?;
    yb.to_vec()
}

#[test]
fn prefix_callbacks_carry_each_groups_total() {
    let mut batch = Batch::default();
    for (block, warps) in [(128, 2), (160, 2), (320, 3), (1024, 4), (96, 1)] {
        let tiles = 3;
        let kernel = running_kernel(block, warps, tiles);
        batch.add(&kernel);
        let (tile, groups) = ((warps * 64) as usize, (block / 32 / warps) as usize);
        let n = (block as usize / (warps as usize * 32)).max(1) * tile * tiles as usize;
        let xs: Vec<i64> = (0..n as i64).map(|i| i * 7 % 23 - 11).collect();
        let got = run_running(device(), &kernel, &xs).expect("runs");
        let mut want = vec![0i64; n];
        for j in 0..groups {
            let mut acc = 0;
            for i in 0..tiles as usize {
                let at = (i * groups + j) * tile;
                for p in at..at + tile {
                    acc += xs[p];
                    want[p] = acc;
                }
            }
        }
        assert_same(&got, &want, &format!("{block} threads, groups of {warps}"));
    }
    batch.finish();
}

#[test]
fn scan_barriers_are_named_and_needed() {
    let races = race_checker();
    let sum = Case {
        op: Op::Sum,
        inclusive: false,
        initial: Some(0),
        aggregate: true,
        algorithm: ScanAlgorithm::WarpScans,
    };
    for (block, warps) in [(128, 2), (160, 2), (320, 3), (256, 4)] {
        let kernel = scan_kernel::<i64>(block, warps, 2, sum);
        let scopes: Vec<SyncScope> = kernel.plan().barriers().iter().map(|b| b.scope).collect();
        assert!(
            !scopes.is_empty() && scopes.iter().all(|s| *s == SyncScope::Warps { warps }),
            "{block}/{warps}: {scopes:?}"
        );
        let ptx = kernel.ptx(device().arch()).expect("emits");
        assert!(ptx.contains(&format!(", {};", warps * 32)), "{ptx}");
        let xs: Vec<i64> = (0..(block * 2) as i64).collect();
        run(&races, &kernel, &xs).expect("race-free with its barriers");
        assert_barriers_necessary(&kernel, |k| run(&races, k, &xs));
    }
    // The prefix's hand-out in a loop: a barrier before the reads of the warps' totals and
    // one before the reads of the prefix, which also orders the next tile's writes.
    let kernel = running_kernel(160, 2, 2);
    assert_eq!(kernel.plan().barriers().len(), 2, "{}", kernel.explain());
    let xs: Vec<i64> = (0..512).collect();
    run_running(&races, &kernel, &xs).expect("race-free with its barriers");
    assert_barriers_necessary(&kernel, |k| run_running(&races, k, &xs));
}

#[test]
fn a_scan_after_a_reduction_of_the_same_group() {
    // A reduction and a scan of one group, one after the other, in blocks with and without
    // warps left over: the scan's writes wait for the reduction's reads.
    for (block, warps) in [(192, 2), (224, 2)] {
        let mut k = KernelBuilder::new(format!("wg_reduce_scan_{block}"))
            .block(block)
            .items_per_thread(1);
        let (x, y) = (k.input::<i64>("x"), k.output::<i64>("y"));
        let b = k.this_block();
        let t = k.load_from(b, &x, Load::direct());
        let g = b.group_by_warps(warps);
        k.if_member(&g, |k, g| {
            let r = k.reduce(g, &t, Reduce::max().broadcast());
            let s = k.scan(g, &t, Scan::inclusive_sum());
            let out = k.map2(&s, &r, |a, b| a * 1000i64 + b);
            k.store_to(g, &y, &out, Store::direct());
        });
        let kernel = k.build().expect("builds");
        let xs: Vec<i64> = (0..block as i64).map(|i| i % 13).collect();
        let races = race_checker();
        let got = run_running(&races, &kernel, &xs).expect("runs");
        let threads = (warps * 32) as usize;
        let mut want = vec![0i64; block as usize];
        for j in 0..(block as usize / 32 / warps as usize) {
            let tile = &xs[j * threads..(j + 1) * threads];
            let max = *tile.iter().max().expect("a tile");
            let mut acc = 0;
            for (p, &v) in tile.iter().enumerate() {
                acc += v;
                want[j * threads + p] = acc * 1000 + max;
            }
        }
        assert_same(&got, &want, &format!("{block}"));
        assert_barriers_necessary(&kernel, |k| run_running(&races, k, &xs));
    }
}

#[test]
fn scans_over_groups_of_warps_report_misuse() {
    let build = |block: u32, f: &dyn Fn(&mut KernelBuilder, &ThreadData<u32>) -> u32| {
        let mut k = KernelBuilder::new("wg_scan_err")
            .block(block)
            .items_per_thread(1);
        let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
        let t = k.load_from(k.this_block(), &x, Load::direct());
        let line = f(&mut k, &t);
        k.write(&y, index::thread_rank(), 0u32);
        (k, line)
    };
    // Outside `if_member` where warps are left over.
    let (k, line) = build(160, &|k, t| {
        let g = k.this_block().group_by_warps(2);
        let line = line!() + 1;
        k.scan(g, t, Scan::inclusive_sum());
        line
    });
    let want = K::CollectiveOutsideMembership {
        warps: 2,
        block_warps: 5,
    };
    let errs = errors(k);
    assert!(errs.contains(&(want, line)), "{errs:?}");
    // A valid count over more than a warp, as for the block.
    let (k, line) = build(128, &|k, t| {
        let g = k.this_block().group_by_warps(2);
        let line = line!() + 1;
        k.scan(g, t, Scan::inclusive_sum().valid_items(5u32));
        line
    });
    let errs = errors(k);
    assert!(
        errs.contains(&(K::ValidItemsNeedWarpGroup, line)),
        "{errs:?}"
    );
}

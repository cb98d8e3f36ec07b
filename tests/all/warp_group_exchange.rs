//! Exchanges over groups of whole warps (`group_by_warps`), each group rearranging its own
//! tile through its own region of shared memory (or shuffles), and the group's barrier
//! (`sync`): against the CPU in blocks of 64 to 1024 threads with and without warps left over
//! (`if_member`), the groups' named barriers shown necessary by the race checker, and the
//! verifier's typed errors.

use super::common::{Batch, assert_barriers_necessary, assert_same, device, race_checker};
use super::warp_groups::errors;
use coopgraph::ir::{Arrangement, ExchangeVia, Reduce, VerifyErrorKind as K, index};
use coopgraph::planner::SyncScope;
use coopgraph::runtime::{Device, RuntimeError};
use coopgraph::{Error, Kernel, KernelBuilder, Load, Store};

/// Each member loads its blocked items, exchanges them over its group of `warps` warps to
/// `to` via `via`, and writes item `i` at `thread_rank * items + i`; then exchanges them back
/// to blocked and stores them (a second output) where they came from.
fn exchange_kernel(
    block: u32,
    warps: u32,
    items: u32,
    to: Arrangement,
    via: ExchangeVia,
) -> Kernel {
    let name = format!("wg_exchange_{block}_{warps}_{items}_{to:?}_{via:?}");
    let name: String = name.chars().filter(char::is_ascii_alphanumeric).collect();
    let mut k = KernelBuilder::new(&name)
        .block(block)
        .items_per_thread(items);
    let (x, y, back) = (
        k.input::<i32>("x"),
        k.output::<i32>("y"),
        k.output::<i32>("back"),
    );
    let b = k.this_block();
    let g = b.group_by_warps(warps);
    let t = k.load_from(b, &x, Load::direct());
    k.if_member(&g, |k, g| {
        let r = k.exchange(g, &t, to, via);
        for i in 0..items {
            k.write(&y, index::thread_rank() * items + i, r.item(i));
        }
        let blocked = k.exchange(g, &r, Arrangement::Blocked, via);
        k.store_to(g, &back, &blocked, Store::direct());
    });
    k.build().expect("builds")
}

/// What [`exchange_kernel`] writes to `y`: thread `t`'s item `i` is the position its
/// arrangement gives it in its exchange group's tile (members only).
fn expected(block: u32, warps: u32, items: u32, to: Arrangement, xs: &[i32]) -> Vec<i32> {
    let k = items as usize;
    let members = (block / 32 / warps * warps * 32) as usize;
    let mut want = vec![0i32; block as usize * k];
    for t in 0..members {
        for i in 0..k {
            let p = match to {
                Arrangement::Striped { threads } => {
                    let s = threads as usize;
                    (t / s) * s * k + i * s + t % s
                }
                _ => t * k + i,
            };
            want[t * k + i] = xs[p];
        }
    }
    want
}

fn run(dev: &Device, kernel: &Kernel, xs: &[i32]) -> Result<(Vec<i32>, Vec<i32>), RuntimeError> {
    let xb = dev.upload(xs)?;
    let mut yb = dev.alloc_zeroed::<i32>(xs.len())?;
    let mut bb = dev.alloc_zeroed::<i32>(xs.len())?;
    dev.compile(kernel)?
        .launch_grid(1, (&xb, &mut yb, &mut bb))?;
    Ok((yb.to_vec()?, bb.to_vec()?))
}

#[test]
fn exchanges_rearrange_each_groups_tile() {
    let mut batch = Batch::default();
    let cases = [
        (64, 2),
        (96, 1),
        (128, 2),
        (160, 2),
        (224, 3),
        (256, 4),
        (320, 3),
        (1024, 4),
    ];
    for (block, warps) in cases {
        let threads = warps * 32;
        let mut targets = vec![
            (Arrangement::Striped { threads }, ExchangeVia::Shared),
            (Arrangement::Striped { threads: 32 }, ExchangeVia::Shared),
            (Arrangement::Striped { threads: 8 }, ExchangeVia::Shuffles),
            (Arrangement::Striped { threads: 32 }, ExchangeVia::Shuffles),
        ];
        if warps % 2 == 0 {
            targets.push((Arrangement::Striped { threads: 64 }, ExchangeVia::Shared));
        }
        targets.sort_by_key(|&(a, v)| (format!("{a:?}"), format!("{v:?}")));
        targets.dedup();
        for (to, via) in targets {
            for items in [1, 3] {
                let kernel = exchange_kernel(block, warps, items, to, via);
                batch.add(&kernel);
                let xs: Vec<i32> = (0..(block * items) as i32).map(|i| i * 7 - 300).collect();
                let (y, back) = run(device(), &kernel, &xs).expect("runs");
                let what = format!("{block} threads, groups of {warps}, {items} items, {to:?}");
                assert_same(&y, &expected(block, warps, items, to, &xs), &what);
                let members = (block / 32 / warps * warps * 32 * items) as usize;
                let mut want = xs.clone();
                want[members..].fill(0);
                assert_same(&back, &want, &format!("{what}, back to blocked"));
            }
        }
    }
    batch.finish();
}

#[test]
fn exchange_barriers_are_named_and_needed() {
    let races = race_checker();
    for (block, warps) in [(128, 2), (160, 2), (320, 3), (256, 4)] {
        let to = Arrangement::Striped {
            threads: warps * 32,
        };
        let kernel = exchange_kernel(block, warps, 2, to, ExchangeVia::Shared);
        let scopes: Vec<SyncScope> = kernel.plan().barriers().iter().map(|b| b.scope).collect();
        assert!(
            !scopes.is_empty() && scopes.iter().all(|s| *s == SyncScope::Warps { warps }),
            "{block}/{warps}: {scopes:?}"
        );
        let xs: Vec<i32> = (0..(block * 2) as i32).collect();
        run(&races, &kernel, &xs).expect("race-free with its barriers");
        assert_barriers_necessary(&kernel, |k| run(&races, k, &xs));
    }
}

#[test]
fn an_exchange_wider_than_the_group_is_an_error() {
    // Striped over the block does not stay inside groups of 2 warps: as a target, the
    // verifier reports it; as the source's arrangement, the planner.
    let build = |target: bool| {
        let mut k = KernelBuilder::new("wg_exchange_wide")
            .block(256)
            .items_per_thread(2);
        let (x, y) = (k.input::<i32>("x"), k.output::<i32>("y"));
        let b = k.this_block();
        let wide = Arrangement::Striped { threads: 256 };
        let load = if target {
            Load::direct()
        } else {
            Load::striped()
        };
        let t = k.load_from(b, &x, load);
        let g = b.group_by_warps(2);
        let to = if target { wide } else { Arrangement::Blocked };
        let line = line!() + 1;
        let r = k.exchange(g, &t, to, ExchangeVia::Shared);
        k.store_to(b, &y, &r, Store::direct());
        (k, line)
    };
    let (k, line) = build(true);
    let want = K::StripedPastWarpGroup {
        threads: 256,
        group: 64,
    };
    let errs = errors(k);
    assert!(errs.contains(&(want, line)), "{errs:?}");
    match build(false).0.build() {
        Err(Error::Plan(coopgraph::planner::PlanError::Layout { .. })) => {}
        other => panic!("expected a layout error: {other:?}"),
    }
}

/// Each member writes its value to shared memory, syncs its group (unless `sync` is off),
/// and reads the value of the thread mirrored in its group.
fn mirror_kernel(block: u32, warps: u32, sync: bool) -> Kernel {
    let mut k = KernelBuilder::new(format!("wg_mirror_{block}_{warps}_{sync}")).block(block);
    let y = k.output::<u32>("y");
    let g = k.this_block().group_by_warps(warps);
    let s = k.shared_array::<u32>(block);
    let t = index::thread_rank();
    let n = warps * 32;
    k.if_member(&g, |k, g| {
        k.shared_write(&s, &t, t.clone() * 3u32 + 1u32);
        if sync {
            k.sync(g);
        }
        let mirror = g.meta_group_rank() * n + (n - 1u32 - g.thread_rank());
        k.write(&y, &t, s.read(mirror));
    });
    k.build().expect("builds")
}

fn run_mirror(dev: &Device, kernel: &Kernel) -> Result<Vec<u32>, RuntimeError> {
    let n = kernel.ir().block_threads() as usize;
    let mut yb = dev.alloc_zeroed::<u32>(n)?;
    dev.compile(kernel)?.launch_grid(1, (&mut yb,))?;
    yb.to_vec()
}

#[test]
fn the_group_barrier_orders_each_groups_accesses() {
    let races = race_checker();
    let mut batch = Batch::default();
    for (block, warps) in [(64, 1), (64, 2), (160, 2), (256, 3), (320, 4), (1024, 4)] {
        let kernel = mirror_kernel(block, warps, true);
        batch.add(&kernel);
        let n = warps * 32;
        let members = block / 32 / warps * n;
        let want: Vec<u32> = (0..block)
            .map(|t| {
                if t < members {
                    (t / n * n + n - 1 - t % n) * 3 + 1
                } else {
                    0
                }
            })
            .collect();
        let got = run_mirror(&races, &kernel).expect("race-free with the group's barrier");
        assert_same(&got, &want, &format!("{block} threads, groups of {warps}"));
        let ptx = kernel.ptx(device().arch()).expect("emits");
        let barrier = if warps == 1 {
            "bar.warp.sync".to_string()
        } else if warps == block / 32 {
            "bar.sync 0;".to_string()
        } else {
            format!(", {n};")
        };
        assert!(ptx.contains(&barrier), "{barrier}: {ptx}");
        // Without it, the race checker reports the reads of other warps' writes.
        if warps > 1 {
            let without = mirror_kernel(block, warps, false);
            match run_mirror(&races, &without) {
                Err(RuntimeError::Sim(coopgraph::sim::SimError::Race(_))) => {}
                other => panic!("{block}/{warps}: the barrier is not needed: {other:?}"),
            }
        }
    }
    batch.finish();
}

#[test]
fn the_group_barrier_outside_if_member_is_an_error() {
    let mut k = KernelBuilder::new("wg_sync_outside").block(160);
    let g = k.this_block().group_by_warps(2);
    let line = line!() + 1;
    k.sync(g);
    let want = K::CollectiveOutsideMembership {
        warps: 2,
        block_warps: 5,
    };
    let errs = errors(k);
    assert!(errs.contains(&(want, line)), "{errs:?}");
}

#[test]
fn group_barriers_share_the_named_barrier_ids() {
    // In a block of 16 warps: groups of 2 (8 ids) by their barrier, of 4 (4 ids) by a
    // reduction: 12 ids fit; groups of 3 (5 ids more) by their barrier do not.
    let build = |with_threes: bool| {
        let mut k = KernelBuilder::new("wg_ids").block(512).items_per_thread(1);
        let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
        let b = k.this_block();
        let t = k.load_from(b, &x, Load::direct());
        k.sync(b.group_by_warps(2));
        let s = k.reduce(b.group_by_warps(4), &t, Reduce::sum().broadcast());
        k.write(&y, index::thread_rank(), s.item(0));
        let line = line!() + 1;
        let threes = b.group_by_warps(3);
        if with_threes {
            k.if_member(&threes, |k, g| k.sync(g));
        }
        (k, line)
    };
    let (k, _) = build(false);
    let kernel = k.build().expect("12 named barriers fit");
    let ptx = kernel.ptx(device().arch()).expect("emits");
    assert!(ptx.contains("bar.sync 12, 128;"), "{ptx}");
    let (k, line) = build(true);
    let want = K::TooManyWarpGroupBarriers {
        needed: 17,
        max: 15,
    };
    let errs = errors(k);
    assert!(errs.contains(&(want, line)), "{errs:?}");
}

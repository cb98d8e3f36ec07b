//! Thread-block clusters: cluster ranks, distributed shared memory (reads, writes and atomics
//! on other blocks' shared arrays) against a CPU reference at cluster sizes 1, 2, 4 and 8 and
//! block sizes that are not multiples of 32, the verifier's cluster rules, the arch and launch
//! checks, and the simulator's participation, race and bounds reports.

use crate::common::{assemble, device};
use coopgraph::ir::{Atomic, VerifyErrorKind, index};
use coopgraph::planner::PlanError;
use coopgraph::ptx::Arch;
use coopgraph::runtime::{LaunchConfig, RuntimeError, SimOptions};
use coopgraph::sim::{MemSpace, ParticipationProblem, SimError, Simulator, entry_text};
use coopgraph::{Error, Kernel, KernelBuilder};

/// Assembles a cluster kernel for sm_90 (when a ptxas is found) and checks the older arches
/// refuse it with a typed error.
fn assemble_cluster(kernel: &Kernel) {
    for arch in [Arch::Sm75, Arch::Sm80] {
        match kernel.ptx(arch) {
            Err(PlanError::ArchTooOld { need, .. }) => assert_eq!(need, Arch::Sm90),
            other => panic!("{arch}: {other:?}"),
        }
    }
    let ptx = kernel.ptx(Arch::Sm90).expect("emits for sm_90");
    assert!(ptx.contains(".reqnctapercluster"), "{ptx}");
    assemble(&ptx, Arch::Sm90, kernel.name());
}

/// A halo exchange through distributed shared memory: each block writes `x` of its tile into
/// a shared array, and after a cluster barrier each thread adds its left neighbour's value,
/// taken from the previous block of the cluster at the tile's first thread (wrapping around
/// the cluster), and the next block's element at the same thread rank.
fn halo(block: u32, cluster: u32) -> Kernel {
    let mut k = KernelBuilder::new(format!("halo_{block}_{cluster}"))
        .block(block)
        .cluster(cluster);
    let (x, y) = (k.input::<i32>("x"), k.output::<i32>("y"));
    let c = k.this_cluster();
    let t = index::thread_rank();
    let g = index::block_index() * block + t.clone();
    let tile = k.shared_array::<i32>(block);
    k.shared_write(&tile, &t, x.at(&g));
    k.sync_cluster();
    let prev_rank = (c.block_rank() + cluster - 1u32) % cluster;
    let next_rank = (c.block_rank() + 1u32) % cluster;
    let prev = k.map_shared_rank(&tile, prev_rank);
    let next = k.map_shared_rank(&tile, next_rank);
    let left = t.clone().eq(0u32).select(
        k.remote_read(&prev, block - 1),
        tile.read((t.clone() + block - 1u32) % block),
    );
    let across = k.remote_read(&next, &t);
    k.write(&y, &g, left * 3i32 + across);
    k.build().expect("builds")
}

fn halo_reference(xs: &[i32], block: usize, cluster: usize) -> Vec<i32> {
    let blocks = xs.len() / block;
    let mut y = vec![0i32; xs.len()];
    for b in 0..blocks {
        let (base, rank) = (b - b % cluster, b % cluster);
        let prev = base + (rank + cluster - 1) % cluster;
        let next = base + (rank + 1) % cluster;
        for t in 0..block {
            let left = if t == 0 {
                xs[prev * block + block - 1]
            } else {
                xs[b * block + t - 1]
            };
            let across = xs[next * block + t];
            y[b * block + t] = left.wrapping_mul(3).wrapping_add(across);
        }
    }
    y
}

#[test]
fn halo_exchange_through_distributed_shared_memory() {
    let dev = device();
    for cluster in [1u32, 2, 4, 8] {
        for block in [33u32, 40, 96, 128] {
            let kernel = halo(block, cluster);
            assemble_cluster(&kernel);
            let f = dev.compile(&kernel).expect("compiles");
            for clusters in [1u32, 2] {
                let blocks = cluster * clusters;
                let n = (blocks * block) as usize;
                let xs: Vec<i32> = (0..n as i32).map(|i| i * 7 - 300).collect();
                let xb = dev.upload(&xs).expect("upload");
                let mut yb = dev.alloc_zeroed::<i32>(n).expect("alloc");
                f.launch_grid(blocks, (&xb, &mut yb))
                    .unwrap_or_else(|e| panic!("block {block}, cluster {cluster}: {e}"));
                let want = halo_reference(&xs, block as usize, cluster as usize);
                assert_eq!(
                    yb.to_vec().expect("y"),
                    want,
                    "block {block} cluster {cluster}"
                );
            }
        }
    }
}

/// Split-K: every block sums its slice of a row, then adds the sum into rank 0's shared
/// accumulator with a remote atomic; after the cluster barrier rank 0 writes the row's sum.
fn split_k(block: u32, cluster: u32) -> Kernel {
    let mut k = KernelBuilder::new(format!("split_k_{block}_{cluster}"))
        .block(block)
        .cluster(cluster);
    let (x, y) = (k.input::<u32>("x"), k.output::<u32>("y"));
    let c = k.this_cluster();
    let t = index::thread_rank();
    let acc = k.shared_array::<u32>(1);
    k.if_(t.clone().eq(0u32), |k| k.shared_write(&acc, 0u32, 0u32));
    k.sync_cluster();
    let g = index::block_index() * block + t.clone();
    let root = k.map_shared_rank(&acc, 0u32);
    k.remote_atomic(&root, 0u32, Atomic::add(x.at(&g)));
    k.cluster_arrive();
    k.cluster_wait();
    let cluster_index = index::block_index() / cluster;
    k.if_(t.eq(0u32) & c.block_rank().eq(0u32), |k| {
        k.write(&y, cluster_index, acc.read(0u32))
    });
    k.build().expect("builds")
}

#[test]
fn split_k_sums_through_remote_atomics() {
    let dev = device();
    for cluster in [1u32, 2, 4, 8] {
        for block in [31u32, 64, 100] {
            let kernel = split_k(block, cluster);
            assemble_cluster(&kernel);
            let f = dev.compile(&kernel).expect("compiles");
            let clusters = 3u32;
            let n = (clusters * cluster * block) as usize;
            let xs: Vec<u32> = (0..n as u32)
                .map(|i| i.wrapping_mul(2654435761) >> 20)
                .collect();
            let xb = dev.upload(&xs).expect("upload");
            let mut yb = dev.alloc_zeroed::<u32>(clusters as usize).expect("alloc");
            f.launch_grid(clusters * cluster, (&xb, &mut yb))
                .unwrap_or_else(|e| panic!("block {block}, cluster {cluster}: {e}"));
            let per = (cluster * block) as usize;
            let want: Vec<u32> = (0..clusters as usize)
                .map(|c| {
                    xs[c * per..(c + 1) * per]
                        .iter()
                        .fold(0u32, |a, v| a.wrapping_add(*v))
                })
                .collect();
            assert_eq!(
                yb.to_vec().expect("y"),
                want,
                "block {block} cluster {cluster}"
            );
        }
    }
}

/// Ranks over a 2-D grid of 2 x 2 clusters: `block_index` along each axis and `block_rank`.
#[test]
fn cluster_ranks_over_two_dimensional_grids() {
    let dev = device();
    let mut k = KernelBuilder::new("ranks_2d")
        .block(8)
        .cluster_dims([2, 2, 1]);
    let out = k.output::<u32>("out");
    let c = k.this_cluster();
    assert_eq!(c.dim_blocks(), Some([2, 2, 1]));
    let g = k.this_grid();
    use coopgraph::ir::index::Axis;
    let v = c.block_rank()
        + c.block_index(Axis::X) * 10u32
        + c.block_index(Axis::Y) * 100u32
        + c.num_blocks() * 1000u32;
    k.if_(index::thread_rank().eq(0u32), |k| {
        k.write(&out, g.block_rank(), v)
    });
    let kernel = k.build().expect("builds");
    assemble_cluster(&kernel);
    let f = dev.compile(&kernel).expect("compiles");
    let mut ob = dev.alloc_zeroed::<u32>(16).expect("alloc");
    f.launch(
        coopgraph::runtime::LaunchConfig::grid([4, 4, 1]),
        (&mut ob,),
    )
    .expect("launch");
    let got = ob.to_vec().expect("out");
    for by in 0..4u32 {
        for bx in 0..4u32 {
            let (cx, cy) = (bx % 2, by % 2);
            let want = cx + 2 * cy + cx * 10 + cy * 100 + 4000;
            assert_eq!(got[(by * 4 + bx) as usize], want, "block ({bx},{by})");
        }
    }
    // A grid that is not a whole number of clusters is refused before launching.
    let err = f
        .launch(
            coopgraph::runtime::LaunchConfig::grid([4, 3, 1]),
            (&mut ob,),
        )
        .expect_err("3 rows of blocks are not whole clusters of 2");
    assert!(
        matches!(
            err,
            RuntimeError::ClusterGrid {
                cluster: [2, 2, 1],
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains(file!()), "{err}");
}

fn verify_errors(k: KernelBuilder) -> Vec<VerifyErrorKind> {
    match k.build() {
        Err(Error::Verify(e)) => {
            assert!(e.to_string().contains(file!()), "{e}");
            e.errors.into_iter().map(|e| e.kind).collect()
        }
        Err(e) => panic!("not a verify error: {e}"),
        Ok(_) => panic!("built"),
    }
}

#[test]
fn cluster_rules_are_typed_errors() {
    // More than 8 blocks, and an extent of 0.
    for dims in [[9, 1, 1], [4, 4, 1], [0, 1, 1]] {
        let mut k = KernelBuilder::new("big").block(32).cluster_dims(dims);
        k.sync_cluster();
        assert_eq!(verify_errors(k), [VerifyErrorKind::ClusterSize { dims }]);
    }
    // A cluster op without a cluster shape.
    let mut k = KernelBuilder::new("shapeless").block(32);
    k.sync_cluster();
    assert_eq!(verify_errors(k), [VerifyErrorKind::ClusterOpWithoutShape]);
    // A cluster barrier under control that depends on the block (or the thread).
    for by_block in [true, false] {
        let mut k = KernelBuilder::new("divergent").block(32).cluster(2);
        let cond = if by_block {
            k.this_cluster().block_rank().eq(0u32)
        } else {
            index::thread_rank().lt(5u32)
        };
        let line = line!() + 1;
        k.if_(cond, |k| k.sync_cluster());
        let Err(Error::Verify(e)) = k.build() else {
            panic!("built")
        };
        assert!(
            matches!(e.errors[0].kind, VerifyErrorKind::NonUniformClusterSync { condition } if condition.line == line),
            "{e}"
        );
    }
    // Under a grid-uniform condition it builds.
    let mut k = KernelBuilder::new("uniform").block(32).cluster(2);
    let n = k.scalar::<u32>("n");
    k.if_(n.expr().gt(3u32), |k| k.sync_cluster());
    k.build().expect("uniform control builds");
    // After a block-dependent exit.
    let mut k = KernelBuilder::new("exit").block(32).cluster(2);
    k.return_if(index::block_index().eq(1u32));
    k.sync_cluster();
    assert!(matches!(
        verify_errors(k)[..],
        [VerifyErrorKind::ClusterSyncAfterReturn { .. }]
    ));
    // Split barriers that do not pair up.
    let unpaired = |f: &dyn Fn(&mut KernelBuilder)| {
        let mut k = KernelBuilder::new("split").block(32).cluster(2);
        let n = k.scalar::<u32>("n");
        k.if_(n.expr().gt(0u32), |_| {});
        f(&mut k);
        let kinds = verify_errors(k);
        assert!(
            kinds
                .iter()
                .all(|e| matches!(e, VerifyErrorKind::UnpairedClusterBarrier { .. })),
            "{kinds:?}"
        );
    };
    unpaired(&|k| k.cluster_arrive());
    unpaired(&|k| k.cluster_wait());
    unpaired(&|k| {
        k.cluster_arrive();
        k.cluster_arrive();
        k.cluster_wait();
    });
    unpaired(&|k| {
        k.cluster_arrive();
        k.sync_cluster();
        k.cluster_wait();
    });
    unpaired(&|k| {
        let n = k.scalar::<u32>("m");
        k.cluster_arrive();
        k.if_(n.expr().gt(1u32), |k| k.cluster_wait());
    });
    unpaired(&|k| {
        k.for_range(0u32, 3u32, |k, _| k.cluster_arrive());
        k.cluster_wait();
    });
    // Paired on every path, through a uniform branch and a loop, it builds.
    let mut k = KernelBuilder::new("paired").block(32).cluster(2);
    let n = k.scalar::<u32>("n");
    k.for_range(0u32, n.expr(), |k, _| {
        k.cluster_arrive();
        k.cluster_wait();
    });
    k.if_else(
        n.expr().gt(2u32),
        |k| k.cluster_arrive(),
        |k| k.cluster_arrive(),
    );
    k.cluster_wait();
    let kernel = k.build().expect("paired builds");
    assemble_cluster(&kernel);
    // A grid barrier beside clusters, and an exit in a kernel with remote accesses.
    let mut k = KernelBuilder::new("coop").block(32).cluster(2);
    k.sync_grid();
    assert_eq!(verify_errors(k), [VerifyErrorKind::ClusterWithGridSync]);
    let mut k = KernelBuilder::new("leaves").block(32).cluster(2);
    let a = k.shared_array::<u32>(32);
    k.return_if(index::thread_rank().gt(40u32));
    let other = k.map_shared_rank(&a, 1u32);
    k.remote_write(&other, 0u32, 1u32);
    assert!(matches!(
        verify_errors(k)[..],
        [VerifyErrorKind::ExitWithRemoteShared { .. }]
    ));
}

/// A wait for arrivals that never come is a participation fault naming the barrier, never a
/// hang: block 1's threads leave before the barrier block 0 waits at.
#[test]
fn a_block_leaving_before_a_cluster_barrier_is_reported() {
    let text = entry_text(
        "leaves",
        &[],
        &[],
        "mov.u32 %r0, %ctaid.x;
         setp.eq.u32 %p0, %r0, 1;
         @%p0 ret;
         // op1 sync_cluster at tests/all/cluster.rs:1:1
         barrier.cluster.arrive;
         barrier.cluster.wait;
         ret;",
    )
    .replace(")\n{", ")\n.reqnctapercluster 2, 1, 1\n{");
    let sim = Simulator::new(SimOptions::default());
    let m = sim.load_module(&text).expect("loads");
    let err = sim
        .launch(&m, "leaves", [2, 1, 1], [40, 1, 1], 0, &[])
        .expect_err("block 1 never arrives");
    let SimError::Participation(p) = &err else {
        panic!("{err}")
    };
    let ParticipationProblem::ClusterBarrier {
        waiting_blocks,
        exited_blocks,
        exited_at,
    } = &p.problem
    else {
        panic!("{err}")
    };
    assert_eq!(waiting_blocks, &[[0, 0, 0]]);
    assert_eq!(exited_blocks, &[[1, 0, 0]]);
    assert!(exited_at.as_ref().is_some_and(|at| at.text.contains("ret")));
    assert_eq!(
        p.at.op.as_deref(),
        Some("op1 sync_cluster at tests/all/cluster.rs:1:1")
    );
    // Every block arrives: the barrier completes. A grid of 3 is not whole clusters.
    let ok = text.replace("@%p0 ret;", "");
    let m = sim.load_module(&ok).expect("loads");
    sim.launch(&m, "leaves", [4, 1, 1], [40, 1, 1], 0, &[])
        .expect("every block arrives");
    let refused = sim.launch(&m, "leaves", [3, 1, 1], [40, 1, 1], 0, &[]);
    assert!(
        matches!(refused, Err(SimError::BadLaunch { .. })),
        "{refused:?}"
    );
}

/// A write to another block's shared array and that block's read of it with no cluster
/// barrier between is a race the simulator reports with both accesses; with the barrier it
/// is ordered.
#[test]
fn distributed_shared_memory_races_are_reported() {
    let build = |barrier: bool| {
        let mut k = KernelBuilder::new(if barrier {
            "dsmem_ordered"
        } else {
            "dsmem_racy"
        })
        .block(40)
        .cluster(2);
        let y = k.output::<u32>("y");
        let c = k.this_cluster();
        let t = index::thread_rank();
        let a = k.shared_array::<u32>(40);
        k.shared_write(&a, &t, 7u32);
        k.sync_cluster();
        let other = k.map_shared_rank(&a, 1u32 - c.block_rank());
        k.remote_write(&other, &t, t.clone() + 1u32);
        if barrier {
            k.sync_cluster();
        }
        k.write(&y, index::block_index() * 40u32 + t.clone(), a.read(&t));
        k.build().expect("builds")
    };
    let dev = coopgraph::runtime::Device::sim();
    let mut yb = dev.alloc_zeroed::<u32>(80).expect("alloc");
    let racy = dev.compile(&build(false)).expect("compiles");
    let err = racy.launch_grid(2, (&mut yb,)).expect_err("a race");
    let RuntimeError::Sim(SimError::ClusterRace(r)) = &err else {
        panic!("{err}")
    };
    assert_ne!(r.first.thread.block, r.second.thread.block, "{err}");
    assert!(err.to_string().contains("cluster barrier"), "{err}");
    let ordered = dev.compile(&build(true)).expect("compiles");
    ordered.launch_grid(2, (&mut yb,)).expect("ordered");
    let want: Vec<u32> = (0..80).map(|i| i % 40 + 1).collect();
    assert_eq!(yb.to_vec().expect("y"), want);
}

/// A rank past the cluster, or an element past the array: a checked kernel guards the access
/// (the read gives 0), and without bounds checks it is an out-of-bounds access of
/// `.shared::cluster` memory on the simulator.
#[test]
fn distributed_shared_memory_is_bounds_checked() {
    let build = |rank: u32, index: u32, unchecked: bool| {
        let mut k = KernelBuilder::new(format!("oob_{rank}_{index}_{unchecked}"))
            .block(33)
            .cluster(4);
        if unchecked {
            k = k.unchecked_bounds();
        }
        let y = k.output::<u32>("y");
        let t = index::thread_rank();
        let a = k.shared_array::<u32>(33);
        k.shared_write(&a, &t, t.clone() + 1u32);
        k.sync_cluster();
        let other = k.map_shared_rank(&a, rank);
        let v = k.remote_read(&other, t.clone().eq(0u32).select(index, 0u32));
        k.write(&y, index::block_index() * 33u32 + t, v);
        k.build().expect("builds")
    };
    let dev = coopgraph::runtime::Device::sim();
    let mut yb = dev.alloc_zeroed::<u32>(4 * 33).expect("alloc");
    for (rank, index) in [(4u32, 0u32), (1, 33)] {
        let f = dev.compile(&build(rank, index, false)).expect("compiles");
        f.launch_grid(4, (&mut yb,)).expect("guarded");
        let y = yb.to_vec().expect("y");
        for b in 0..4 {
            assert_eq!(y[b * 33], 0, "block {b}: the stray read gives 0");
        }
        let f = dev.compile(&build(rank, index, true)).expect("compiles");
        // SAFETY: the simulator, which reports the stray access instead of making it.
        let err = unsafe { f.launch_unchecked(LaunchConfig::blocks(4), (&mut yb,)) }
            .expect_err("out of bounds");
        let RuntimeError::Sim(SimError::OutOfBounds(m)) = &err else {
            panic!("{err}")
        };
        assert_eq!(m.space, MemSpace::Cluster, "{err}");
        assert!(
            m.at.op
                .as_deref()
                .is_some_and(|o| o.contains("remote_read")),
            "{err}"
        );
    }
    let f = dev.compile(&build(3, 32, false)).expect("compiles");
    f.launch_grid(4, (&mut yb,)).expect("in bounds");
    assert_eq!(yb.to_vec().expect("y")[0], 33);
}

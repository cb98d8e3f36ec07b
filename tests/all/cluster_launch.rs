//! Thread-block clusters whose shape each launch gives (`cluster_at_launch`: PTX
//! `.explicitcluster`, launched through `cuLaunchKernelEx` with the cluster attribute): one
//! build run in every shape up to 16 blocks, ranks and distributed shared memory against a CPU
//! reference, the rank guard that reads the launch's cluster size, and the launch checks.

use crate::common::{assemble, device};
use coopgraph::ir::index::{self, Axis};
use coopgraph::planner::PlanError;
use coopgraph::ptx::Arch;
use coopgraph::runtime::{LaunchConfig, RuntimeError, SimOptions};
use coopgraph::sim::{LaunchProblem, SimError, Simulator};
use coopgraph::{Kernel, KernelBuilder};

/// Each block writes what it knows of its cluster: rank, index along x and y, the cluster's
/// size and its extent along x.
fn ranks_kernel() -> Kernel {
    let mut k = KernelBuilder::new("ranks_at_launch")
        .block(8)
        .cluster_at_launch();
    let out = k.output::<u32>("out");
    let c = k.this_cluster();
    assert_eq!(c.dim_blocks(), None);
    let v = c.block_rank()
        + c.block_index(Axis::X) * 100u32
        + c.block_index(Axis::Y) * 1_000u32
        + c.block_index(Axis::Z) * 10_000u32
        + c.num_blocks() * 100_000u32
        + c.dim(Axis::X) * 10_000_000u32;
    let g = k.this_grid();
    k.if_(index::thread_rank().eq(0u32), |k| {
        k.write(&out, g.block_rank(), v)
    });
    k.build().expect("builds")
}

#[test]
fn the_shape_is_left_to_the_launch_in_the_ptx() {
    let kernel = ranks_kernel();
    let ptx = kernel.ptx(Arch::Sm90).expect("emits for sm_90");
    assert!(ptx.contains(".explicitcluster"), "{ptx}");
    assert!(!ptx.contains(".reqnctapercluster"), "{ptx}");
    assert!(ptx.contains("%cluster_nctaid.x"), "{ptx}");
    assemble(&ptx, Arch::Sm90, kernel.name());
    for arch in [Arch::Sm75, Arch::Sm80] {
        assert!(
            matches!(
                kernel.ptx(arch),
                Err(PlanError::ArchTooOld {
                    need: Arch::Sm90,
                    ..
                })
            ),
            "{arch}"
        );
    }
    // The shape is part of the specialization: a fixed shape is another kernel.
    let fixed = KernelBuilder::new("ranks_at_launch")
        .block(8)
        .cluster(2)
        .build()
        .expect("builds");
    assert_ne!(fixed.key(), kernel.key());
}

/// One build, launched in clusters of 1 to 16 blocks along one, two and three axes.
#[test]
fn one_build_runs_in_every_cluster_shape() {
    let dev = device();
    let f = dev.compile(&ranks_kernel()).expect("compiles");
    let grid = [16u32, 2, 2];
    let blocks = grid.iter().product::<u32>() as usize;
    let shapes = [
        [1, 1, 1],
        [2, 1, 1],
        [4, 1, 1],
        [8, 1, 1],
        [16, 1, 1],
        [1, 2, 1],
        [2, 2, 1],
        [4, 2, 2],
        [2, 1, 2],
    ];
    for cluster in shapes {
        let mut ob = dev.alloc_zeroed::<u32>(blocks).expect("alloc");
        let config = LaunchConfig::grid(grid).with_cluster(cluster);
        f.launch(config, (&mut ob,))
            .unwrap_or_else(|e| panic!("{cluster:?}: {e}"));
        let [cx, cy, cz] = cluster;
        let mut want = Vec::new();
        for bz in 0..grid[2] {
            for by in 0..grid[1] {
                for bx in 0..grid[0] {
                    let (ix, iy, iz) = (bx % cx, by % cy, bz % cz);
                    let rank = ix + cx * (iy + cy * iz);
                    want.push(
                        rank + ix * 100
                            + iy * 1_000
                            + iz * 10_000
                            + cx * cy * cz * 100_000
                            + cx * 10_000_000,
                    );
                }
            }
        }
        assert_eq!(ob.to_vec().expect("out"), want, "clusters of {cluster:?}");
    }
}

/// A ring through distributed shared memory whose cluster size comes from the launch: each
/// block reads the next block's tile (wrapping at the launch's cluster size), and the rank
/// past the cluster reads 0 through the guard that compares with `%cluster_nctarank`.
#[test]
fn distributed_shared_memory_follows_the_launch_shape() {
    let dev = device();
    let block = 40u32;
    let mut k = KernelBuilder::new("ring_at_launch")
        .block(block)
        .cluster_at_launch();
    let (x, y, z) = (
        k.input::<i32>("x"),
        k.output::<i32>("y"),
        k.output::<i32>("z"),
    );
    let c = k.this_cluster();
    let t = index::thread_rank();
    let g = index::block_index() * block + t.clone();
    let tile = k.shared_array::<i32>(block);
    k.shared_write(&tile, &t, x.at(&g));
    k.sync_cluster();
    let next = k.map_shared_rank(&tile, (c.block_rank() + 1u32) % c.num_blocks());
    let v = k.remote_read(&next, (t.clone() + 1u32) % block);
    k.write(&y, &g, v);
    // No wrap: the last block of each cluster asks for a rank past it.
    let past = k.map_shared_rank(&tile, c.block_rank() + 1u32);
    let w = k.remote_read(&past, &t);
    k.write(&z, &g, w);
    let kernel = k.build().expect("builds");
    assemble(
        &kernel.ptx(Arch::Sm90).expect("emits"),
        Arch::Sm90,
        kernel.name(),
    );
    let f = dev.compile(&kernel).expect("compiles");
    let blocks = 16usize;
    let n = blocks * block as usize;
    let xs: Vec<i32> = (0..n as i32).map(|i| i * 7 - 300).collect();
    let xb = dev.upload(&xs).expect("upload");
    for cluster in [1usize, 2, 4, 8, 16] {
        let mut yb = dev.alloc_zeroed::<i32>(n).expect("alloc");
        let mut zb = dev.alloc_zeroed::<i32>(n).expect("alloc");
        let config = LaunchConfig::blocks(blocks as u32).with_cluster([cluster as u32, 1, 1]);
        f.launch(config, (&xb, &mut yb, &mut zb))
            .unwrap_or_else(|e| panic!("clusters of {cluster}: {e}"));
        let b = block as usize;
        let (mut wy, mut wz) = (vec![0; n], vec![0; n]);
        for blk in 0..blocks {
            let (base, rank) = (blk - blk % cluster, blk % cluster);
            let next = base + (rank + 1) % cluster;
            for t in 0..b {
                wy[blk * b + t] = xs[next * b + (t + 1) % b];
                if rank + 1 < cluster {
                    wz[blk * b + t] = xs[(blk + 1) * b + t];
                }
            }
        }
        assert_eq!(yb.to_vec().expect("y"), wy, "clusters of {cluster}");
        assert_eq!(zb.to_vec().expect("z"), wz, "clusters of {cluster}");
    }
}

#[test]
fn cluster_launches_are_checked_before_launching() {
    let dev = device();
    let f = dev.compile(&ranks_kernel()).expect("compiles");
    let mut ob = dev.alloc_zeroed::<u32>(64).expect("alloc");
    let mut go = |config: LaunchConfig| f.launch(config, (&mut ob,));
    // No shape for a kernel whose launches give it.
    let err = go(LaunchConfig::blocks(4)).expect_err("needs a shape");
    assert!(
        matches!(&err, RuntimeError::ClusterShapeMissing { entry, .. } if entry == "ranks_at_launch"),
        "{err}"
    );
    assert!(err.to_string().contains(file!()), "{err}");
    // Past 16 blocks, or an extent of 0.
    for cluster in [[32, 1, 1], [4, 4, 2], [0, 1, 1]] {
        let err = go(LaunchConfig::blocks(32).with_cluster(cluster)).expect_err("too large");
        assert!(
            matches!(err, RuntimeError::ClusterTooLarge { cluster: c, .. } if c == cluster),
            "{err}"
        );
        assert!(err.to_string().contains(file!()), "{err}");
    }
    // A grid that is not whole clusters.
    let err = go(LaunchConfig::blocks(6).with_cluster([4, 1, 1])).expect_err("6 blocks");
    assert!(
        matches!(
            err,
            RuntimeError::ClusterGrid {
                cluster: [4, 1, 1],
                grid: [6, 1, 1],
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(f.max_active_clusters([32, 1, 1]).expect("asks"), 0);
    assert!(f.max_active_clusters([4, 1, 1]).expect("asks") >= 1);
    assert!(f.max_active_clusters([16, 1, 1]).expect("asks") >= 1);

    // A kernel with its own shape takes that shape (or none) at launch, and no other.
    let mut k = KernelBuilder::new("fixed_pairs").block(32).cluster(2);
    let out = k.output::<u32>("out");
    let c = k.this_cluster();
    k.write(&out, index::block_index(), c.num_blocks());
    let fixed = dev.compile(&k.build().expect("builds")).expect("compiles");
    let mut ob = dev.alloc_zeroed::<u32>(4).expect("alloc");
    (fixed.launch(LaunchConfig::blocks(4).with_cluster([2, 1, 1]), (&mut ob,)))
        .expect("the kernel's own shape");
    assert_eq!(ob.to_vec().expect("out"), [2; 4]);
    let err = (fixed.launch(LaunchConfig::blocks(4).with_cluster([4, 1, 1]), (&mut ob,)))
        .expect_err("another shape");
    assert!(
        matches!(
            err,
            RuntimeError::ClusterShapeMismatch {
                kernel: Some([2, 1, 1]),
                given: [4, 1, 1],
                ..
            }
        ),
        "{err}"
    );
    // A kernel that does not run in clusters takes none.
    let mut k = KernelBuilder::new("plain").block(32);
    let out = k.output::<u32>("out");
    k.write(&out, index::block_index(), 1u32);
    let plain = dev.compile(&k.build().expect("builds")).expect("compiles");
    let err = (plain.launch(LaunchConfig::blocks(4).with_cluster([2, 1, 1]), (&mut ob,)))
        .expect_err("no clusters");
    assert!(
        matches!(err, RuntimeError::ClusterShapeMismatch { kernel: None, .. }),
        "{err}"
    );
    assert!(err.to_string().contains(file!()), "{err}");
}

/// The simulator's own checks of a launch's cluster shape against the entry's directives.
#[test]
fn the_simulator_checks_cluster_shapes() {
    let text = ranks_kernel().ptx(Arch::Sm90).expect("emits");
    let sim = Simulator::new(SimOptions::default());
    let m = sim.load_module(&text).expect("loads");
    let out = sim.alloc_zeroed(4 * 64).expect("alloc");
    let shape_problem = |r: Result<_, SimError>| match r {
        Err(SimError::BadLaunch {
            problem: LaunchProblem::ClusterShape { .. },
            ..
        }) => {}
        other => panic!("{other:?}"),
    };
    // The output and its length (checked bounds).
    let params = [out, 64];
    shape_problem(sim.launch(&m, "ranks_at_launch", [4, 1, 1], [8, 1, 1], 0, &params));
    sim.launch_clusters(
        &m,
        "ranks_at_launch",
        [4, 1, 1],
        [2, 1, 1],
        [8, 1, 1],
        0,
        &params,
    )
    .expect("runs in pairs");
    let mut fixed = KernelBuilder::new("fixed").block(32).cluster(2);
    fixed.sync_cluster();
    let text = fixed
        .build()
        .expect("builds")
        .ptx(Arch::Sm90)
        .expect("emits");
    let m = sim.load_module(&text).expect("loads");
    shape_problem(sim.launch_clusters(&m, "fixed", [4, 1, 1], [4, 1, 1], [32, 1, 1], 0, &[]));
    sim.launch_clusters(&m, "fixed", [4, 1, 1], [2, 1, 1], [32, 1, 1], 0, &[])
        .expect("its own shape");
}

/// A launch in clusters captured into a graph replays in the same shape.
#[test]
fn captured_cluster_launches_keep_their_shape() {
    let dev = device();
    let f = dev.compile(&ranks_kernel()).expect("compiles");
    let mut ob = dev.alloc_zeroed::<u32>(8).expect("alloc");
    let stream = dev.new_stream().expect("stream");
    let graph = stream
        .capture(|s| {
            let config = LaunchConfig::blocks(8).with_cluster([4, 1, 1]).on_stream(s);
            f.launch(config, (&mut ob,))
        })
        .expect("captures");
    graph.launch(&stream).expect("replays");
    stream.synchronize().expect("syncs");
    let want: Vec<u32> = (0..8u32)
        .map(|b| b % 4 + (b % 4) * 100 + 4 * 100_000 + 4 * 10_000_000)
        .collect();
    assert_eq!(ob.to_vec().expect("out"), want);
}

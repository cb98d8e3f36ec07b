//! The runtime on the default device: the simulator here, the GPU where one is present or where
//! `COOPGRAPH_DEVICE=cuda` demands it. Kernels are hand-written PTX in `KernelImage`s.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Instant;

use coopgraph::ir::DType;
use coopgraph::ptx::Arch;
use coopgraph::runtime::SimOptions;
use coopgraph::runtime::{
    ArgKind, ArgList, Backend, Buffer, Compile, Device, DeviceChoice, Foreign, ImageParts,
    KernelImage, KernelKey, LaunchConfig, ParamKind, ParamLayout, ParamSig, RuntimeError,
    default_device,
};
use coopgraph::sim::{ParseReason, SimError};

/// The default device; with `COOPGRAPH_DEVICE=cuda` and no GPU this fails the test.
fn device() -> Device {
    match default_device() {
        Ok(d) => d,
        Err(e) => panic!("no default device: {e}"),
    }
}

/// `y[i] = x[i]` for `i < n`, one element per thread, blocks of `block` threads.
fn copy_ptx(entry: &str, block: u32) -> String {
    format!(
        "\
.version 7.8
.target sm_90
.address_size 64

.visible .entry {entry}(
\t.param .u64 {entry}_x,
\t.param .u64 {entry}_y,
\t.param .u32 {entry}_n
)
.reqntid {block}, 1, 1
{{
\t.reg .pred %p<1>;
\t.reg .b32 %r<5>;
\t.reg .b64 %rd<8>;

\tmov.u32 %r0, %ctaid.x;
\tmov.u32 %r1, %tid.x;
\tmad.lo.u32 %r2, %r0, {block}, %r1;
\tld.param.u32 %r3, [{entry}_n];
\tsetp.ge.u32 %p0, %r2, %r3;
\t@%p0 bra DONE;
\tld.param.u64 %rd0, [{entry}_x];
\tcvta.to.global.u64 %rd1, %rd0;
\tld.param.u64 %rd2, [{entry}_y];
\tcvta.to.global.u64 %rd3, %rd2;
\tmul.wide.u32 %rd4, %r2, 4;
\tadd.u64 %rd5, %rd1, %rd4;
\tadd.u64 %rd6, %rd3, %rd4;
\tld.global.u32 %r4, [%rd5];
\tst.global.u32 [%rd6], %r4;
DONE:
\tret;
}}
"
    )
}

/// The parts of [`copy_image`].
fn copy_parts(entry: &str, block: u32) -> ImageParts {
    ImageParts {
        entry: entry.to_string(),
        ptx: copy_ptx(entry, block),
        arch: Arch::Sm90,
        params: vec![
            ParamSig::new("x", ParamKind::Input, DType::U32),
            ParamSig::new("y", ParamKind::Output, DType::U32),
            ParamSig::new("n", ParamKind::Scalar, DType::U32),
        ],
        block: [block, 1, 1],
        tile_elems: block,
        static_smem: 0,
        dynamic_smem: 0,
        needs_cooperative: false,
        tile_offsets: false,
        grid_dims: 1,
        dynamic_array: None,
        hidden: vec![],
    }
}

/// `parts` (of [`copy_image`], perhaps edited in what a launch checks, never in what the PTX
/// touches) vouched for as bounds-checked.
fn vouched(parts: ImageParts) -> KernelImage {
    // SAFETY: the copy reads `x[i]` and writes `y[i]` for `i < n` only, and every safe launch
    // in these tests passes `n` within both buffers; edits change only what the runtime checks
    // (the launch shape, the signature, the entry name) or make PTX that does not load.
    unsafe { KernelImage::assume_checked_bounds(parts) }
}

/// The copy of [`copy_ptx`], vouched for as bounds-checked.
fn copy_image(entry: &str, block: u32) -> KernelImage {
    vouched(copy_parts(entry, block))
}

/// Thread 0 stores each scalar parameter, widened, into `out[0..6]`.
const SCALARS_PTX: &str = "\
.version 7.8
.target sm_90
.address_size 64

.visible .entry scalars(
\t.param .u64 scalars_out,
\t.param .s8 scalars_a,
\t.param .u16 scalars_b,
\t.param .u32 scalars_c,
\t.param .u64 scalars_d,
\t.param .f32 scalars_e,
\t.param .f64 scalars_f
)
.reqntid 32, 1, 1
{
\t.reg .pred %p<1>;
\t.reg .b32 %r<4>;
\t.reg .b64 %rd<4>;
\t.reg .f32 %f<1>;
\t.reg .f64 %fd<1>;

\tmov.u32 %r0, %tid.x;
\tsetp.ne.u32 %p0, %r0, 0;
\t@%p0 bra DONE;
\tld.param.u64 %rd0, [scalars_out];
\tcvta.to.global.u64 %rd1, %rd0;
\tld.param.s8 %r1, [scalars_a];
\tcvt.s64.s32 %rd2, %r1;
\tst.global.u64 [%rd1], %rd2;
\tld.param.u16 %r2, [scalars_b];
\tst.global.u32 [%rd1+8], %r2;
\tld.param.u32 %r3, [scalars_c];
\tst.global.u32 [%rd1+16], %r3;
\tld.param.u64 %rd3, [scalars_d];
\tst.global.u64 [%rd1+24], %rd3;
\tld.param.f32 %f0, [scalars_e];
\tst.global.f32 [%rd1+32], %f0;
\tld.param.f64 %fd0, [scalars_f];
\tst.global.f64 [%rd1+40], %fd0;
DONE:
\tret;
}
";

fn scalars_image() -> KernelImage {
    // SAFETY: thread 0 writes `out[0..6]` (of 8 bytes each) and nothing else; every launch in
    // these tests passes an `out` of at least 6 elements.
    unsafe {
        KernelImage::assume_checked_bounds(ImageParts {
            entry: "scalars".into(),
            ptx: SCALARS_PTX.into(),
            arch: Arch::Sm90,
            params: vec![
                ParamSig::new("out", ParamKind::Output, DType::U64),
                ParamSig::new("a", ParamKind::Scalar, DType::I8),
                ParamSig::new("b", ParamKind::Scalar, DType::U16),
                ParamSig::new("c", ParamKind::Scalar, DType::U32),
                ParamSig::new("d", ParamKind::Scalar, DType::U64),
                ParamSig::new("e", ParamKind::Scalar, DType::F32),
                ParamSig::new("f", ParamKind::Scalar, DType::F64),
            ],
            block: [32, 1, 1],
            tile_elems: 32,
            static_smem: 0,
            dynamic_smem: 0,
            needs_cooperative: false,
            tile_offsets: false,
            grid_dims: 1,
            dynamic_array: None,
            hidden: vec![],
        })
    }
}

fn iota(n: usize) -> Vec<u32> {
    (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect()
}

#[test]
fn copy_kernel_round_trip() {
    let dev = device();
    let f = dev
        .compile(&copy_image("rt_copy", 128))
        .expect("copy kernel loads");
    for n in [1usize, 127, 128, 129, 1000] {
        let xs = iota(n);
        let x = dev.upload(&xs).expect("upload");
        let mut y = dev.alloc_filled(n + 5, 0xdead_beefu32).expect("alloc");
        f.launch_over(n, (&x, &mut y, n as u32)).expect("launch");
        dev.synchronize().expect("synchronize");
        let out = y.to_vec().expect("download");
        assert_eq!(&out[..n], &xs[..], "n = {n}");
        assert!(
            out[n..].iter().all(|&v| v == 0xdead_beef),
            "wrote past n = {n}"
        );
    }
}

#[test]
fn launch_grid_and_explicit_config() {
    let dev = device();
    let f = dev.compile(&copy_image("rt_grid", 64)).expect("loads");
    let xs = iota(256);
    let x = dev.upload(&xs).expect("upload");
    let mut y = dev.alloc_zeroed::<u32>(256).expect("alloc");
    // Two blocks of 64 cover the first 128 elements only.
    f.launch_grid(2, (&x, &mut y, 256u32)).expect("launch");
    let out = y.to_vec().expect("download");
    assert_eq!(&out[..128], &xs[..128]);
    assert!(out[128..].iter().all(|&v| v == 0));
    let config = LaunchConfig {
        block: Some([64, 1, 1]),
        ..LaunchConfig::blocks(4)
    };
    f.launch(config, (&x, &mut y, 256u32)).expect("launch");
    assert_eq!(y.to_vec().expect("download"), xs);
}

/// Built kernels tell blocks apart by x alone (a grid-stride loop included), so their images
/// say so and a grid along y or z is refused before it could repeat their work.
#[test]
fn built_kernels_see_the_grid_along_x_only() {
    let dev = device();
    let mut k = coopgraph::KernelBuilder::new("rt_grid_x").block(64);
    let x = k.input::<u32>("x");
    let y = k.output::<u32>("y");
    let n = k.scalar::<u32>("n");
    let b = k.this_block();
    k.tiles(n, |k, _| {
        let t = k.load_from(b, &x, coopgraph::Load::direct());
        k.store_to(b, &y, &t, coopgraph::Store::direct());
    });
    let kernel = k.build().expect("builds");
    for arch in Arch::ALL {
        assert_eq!(kernel.emit(arch).expect("emits").grid_dims, 1);
    }
    let f = dev.compile(&kernel).expect("loads");
    let xs = iota(600);
    let xb = dev.upload(&xs).expect("upload");
    let mut yb = dev.alloc_zeroed::<u32>(600).expect("alloc");
    assert!(matches!(
        f.launch(LaunchConfig::grid([1, 1, 2]), (&xb, &mut yb, 600u32)),
        Err(RuntimeError::GridDimensionUnseen { dims: 1, .. })
    ));
    f.launch(LaunchConfig::grid([2, 1, 1]), (&xb, &mut yb, 600u32))
        .expect("launch");
    assert_eq!(yb.to_vec().expect("download"), xs);
}

#[test]
fn scalar_parameters_of_every_size() {
    let dev = device();
    let f = dev.compile(&scalars_image()).expect("loads");
    let mut out = dev.alloc_zeroed::<u64>(6).expect("alloc");
    let args = (
        &mut out,
        -3i8,
        0xbeefu16,
        0x8765_4321u32,
        0x0123_4567_89ab_cdefu64,
        -1.5f32,
        2.25f64,
    );
    f.launch_grid(1, args).expect("launch");
    let got = out.to_vec().expect("download");
    assert_eq!(
        got,
        vec![
            (-3i64) as u64,
            0xbeef,
            0x8765_4321,
            0x0123_4567_89ab_cdef,
            u64::from((-1.5f32).to_bits()),
            2.25f64.to_bits(),
        ]
    );
}

#[test]
fn argument_count_and_mismatch_are_errors() {
    let dev = device();
    let f = dev.compile(&copy_image("rt_args", 128)).expect("loads");
    let x = dev.upload(&iota(16)).expect("upload");
    let mut y = dev.alloc_zeroed::<u32>(16).expect("alloc");
    let xf = dev.upload(&[0f32; 16]).expect("upload");

    match f.launch_over(16, (&x, &mut y)) {
        Err(RuntimeError::ArgCount { expected, got }) => assert_eq!((expected, got), (3, 2)),
        other => panic!("expected ArgCount, got {other:?}"),
    }
    // An output passed by shared reference.
    match f.launch_over(16, (&x, &y, 16u32)) {
        Err(RuntimeError::ArgMismatch {
            index,
            name,
            expected,
            got,
        }) => {
            assert_eq!((index, name.as_str()), (1, "y"));
            assert_eq!(
                expected,
                ArgKind::Buffer {
                    dtype: DType::U32,
                    writable: true
                }
            );
            assert_eq!(
                got,
                ArgKind::Buffer {
                    dtype: DType::U32,
                    writable: false
                }
            );
        }
        other => panic!("expected ArgMismatch, got {other:?}"),
    }
    // A buffer of the wrong dtype.
    assert!(matches!(
        f.launch_over(16, (&xf, &mut y, 16u32)),
        Err(RuntimeError::ArgMismatch { index: 0, .. })
    ));
    // A scalar of the wrong dtype, and a buffer where a scalar goes.
    assert!(matches!(
        f.launch_over(16, (&x, &mut y, 16i32)),
        Err(RuntimeError::ArgMismatch { index: 2, .. })
    ));
    assert!(matches!(
        f.launch_over(16, (&x, &mut y, &x)),
        Err(RuntimeError::ArgMismatch { index: 2, .. })
    ));
    // An input may be passed by exclusive reference; a run-time list works like a tuple.
    let mut x2 = dev.upload(&iota(16)).expect("upload");
    let mut list = ArgList::new();
    list.push(&mut x2).push(&mut y).push(16u32);
    f.launch_over(16, list).expect("launch");
    assert_eq!(y.to_vec().expect("download"), iota(16));
}

#[test]
fn buffers_of_another_device_are_rejected() {
    let dev = device();
    let f = dev.compile(&copy_image("rt_foreign", 128)).expect("loads");
    let other = Device::sim();
    let foreign = other.upload(&iota(8)).expect("upload");
    let mut y = dev.alloc_zeroed::<u32>(8).expect("alloc");
    assert!(!foreign.is_on(&dev) && y.is_on(&dev));
    match f.launch_over(8, (&foreign, &mut y, 8u32)) {
        Err(RuntimeError::WrongDevice {
            what: Foreign::Argument { index, name },
        }) => assert_eq!((index, name.as_str()), (0, "x")),
        other => panic!("expected WrongDevice, got {other:?}"),
    }
}

#[test]
fn block_grid_and_shared_memory_checks() {
    let dev = device();
    let f = dev.compile(&copy_image("rt_shape", 128)).expect("loads");
    let x = dev.upload(&iota(8)).expect("upload");
    let mut y = dev.alloc_zeroed::<u32>(8).expect("alloc");

    let wrong_block = LaunchConfig {
        block: Some([64, 1, 1]),
        ..LaunchConfig::blocks(1)
    };
    assert!(matches!(
        f.launch(wrong_block, (&x, &mut y, 8u32)),
        Err(RuntimeError::BlockMismatch {
            expected: [128, 1, 1],
            got: [64, 1, 1]
        })
    ));
    assert!(matches!(
        f.launch_grid(0, (&x, &mut y, 8u32)),
        Err(RuntimeError::GridTooLarge { .. })
    ));
    assert!(matches!(
        f.launch(LaunchConfig::grid([1, 1 << 20, 1]), (&x, &mut y, 8u32)),
        Err(RuntimeError::GridTooLarge { .. })
    ));
    // Indices are 32-bit: past u32::MAX elements is an error before any grid is computed.
    for n in [usize::MAX, u32::MAX as usize + 1] {
        match f.launch_over(n, (&x, &mut y, 8u32)) {
            Err(RuntimeError::TooManyElements { n: got, max }) => {
                assert_eq!((got, max), (n as u64, u64::from(u32::MAX)))
            }
            other => panic!("expected TooManyElements, got {other:?}"),
        }
    }
    // One element per block: u32::MAX elements need more blocks than a grid has along x.
    let mut single = copy_parts("rt_single", 128);
    single.tile_elems = 1;
    let single = vouched(single);
    let g = dev.compile(&single).expect("loads");
    match g.config_over(u32::MAX as usize) {
        Err(RuntimeError::GridTooLarge { grid, max, .. }) => {
            assert_eq!(grid[0], u64::from(u32::MAX));
            assert!(max[0] >= 65535);
        }
        other => panic!("expected GridTooLarge, got {other:?}"),
    }
    assert_eq!(g.config_over(300).expect("fits").grid, [300, 1, 1]);
    // The kernel tells blocks apart by x only: blocks along y or z would repeat its work.
    for grid in [[1, 2, 1], [2, 1, 3]] {
        match f.launch(LaunchConfig::grid(grid), (&x, &mut y, 8u32)) {
            Err(RuntimeError::GridDimensionUnseen {
                entry,
                grid: got,
                dims: 1,
            }) => assert_eq!((entry.as_str(), got), ("rt_shape", grid)),
            other => panic!("expected GridDimensionUnseen, got {other:?}"),
        }
    }
    // A kernel that reads %ctaid.y may be launched along y.
    let mut two = copy_parts("rt_two_dims", 128);
    two.grid_dims = 2;
    let two = vouched(two);
    let h = dev.compile(&two).expect("loads");
    h.launch(LaunchConfig::grid([1, 2, 1]), (&x, &mut y, 8u32))
        .expect("a grid along y");
    assert!(matches!(
        h.launch(LaunchConfig::grid([1, 2, 2]), (&x, &mut y, 8u32)),
        Err(RuntimeError::GridDimensionUnseen { dims: 2, .. })
    ));
    // Beyond the per-block shared memory limit: rejected when loading.
    let mut big = copy_parts("rt_big_smem", 128);
    big.dynamic_smem = dev.limits().smem_per_block_optin + 1;
    let big = vouched(big);
    match dev.compile(&big) {
        Err(RuntimeError::SharedMemory { need, limit }) => {
            assert_eq!(need, u64::from(big.dynamic_smem));
            assert_eq!(limit, u64::from(dev.limits().smem_per_block_optin));
        }
        other => panic!("expected SharedMemory, got {other:?}"),
    }
    // Less dynamic shared memory than the image needs.
    let mut some = copy_parts("rt_some_smem", 128);
    some.dynamic_smem = 1024;
    let some = vouched(some);
    let g = dev.compile(&some).expect("loads");
    assert!(matches!(
        g.launch(
            LaunchConfig::blocks(1).with_dynamic_smem(512),
            (&x, &mut y, 8u32)
        ),
        Err(RuntimeError::DynamicSharedMemoryTooSmall {
            given: 512,
            need: 1024
        })
    ));
}

#[test]
fn dynamic_shared_memory_past_48k() {
    let dev = device();
    let mut image = copy_parts("rt_smem_64k", 128);
    image.dynamic_smem = 64 * 1024;
    let image = vouched(image);
    let f = dev.compile(&image).expect("loads with the opt-in");
    let xs = iota(300);
    let x = dev.upload(&xs).expect("upload");
    let mut y = dev.alloc_zeroed::<u32>(300).expect("alloc");
    f.launch_over(300, (&x, &mut y, 300u32)).expect("launch");
    // More than the image asks for, set at launch.
    f.launch(
        LaunchConfig::blocks(3).with_dynamic_smem(100 * 1024),
        (&x, &mut y, 300u32),
    )
    .expect("launch with more dynamic shared memory");
    assert_eq!(y.to_vec().expect("download"), xs);
}

#[test]
fn cooperative_grid_is_bounded_by_occupancy() {
    let dev = device();
    let mut image = copy_parts("rt_coop", 128);
    image.needs_cooperative = true;
    let image = vouched(image);
    let f = dev.compile(&image).expect("loads");
    let per_sm = f.max_active_blocks_per_sm().expect("occupancy");
    assert!(per_sm >= 1);
    let max = f.max_cooperative_blocks().expect("occupancy");
    // The simulator runs a cooperative launch's blocks all at once, at most its own limit.
    let resident = u64::from(per_sm) * u64::from(dev.sm_count());
    let want = match dev.backend() {
        coopgraph::runtime::Backend::Sim => {
            resident.min(u64::from(SimOptions::default().max_cooperative_blocks))
        }
        _ => resident,
    };
    assert_eq!(max, want);
    let x = dev.upload(&iota(512)).expect("upload");
    let mut y = dev.alloc_zeroed::<u32>(512).expect("alloc");
    let too_many = u32::try_from(max + 1).expect("fits");
    match f.launch_grid(too_many, (&x, &mut y, 512u32)) {
        Err(RuntimeError::CooperativeGridTooLarge { grid, max: m }) => {
            assert_eq!((grid, m), (max + 1, max))
        }
        other => panic!("expected CooperativeGridTooLarge, got {other:?}"),
    }
    f.launch_over(512, (&x, &mut y, 512u32))
        .expect("cooperative launch");
    assert_eq!(y.to_vec().expect("download"), iota(512));
}

/// A kernel that counts how often it is emitted; `fail_first` emits broken PTX the first time.
struct Counting {
    key: u64,
    image: KernelImage,
    emits: AtomicUsize,
    fail_first: bool,
}

impl Counting {
    fn new(key: u64, entry: &str) -> Self {
        Counting {
            key,
            image: copy_image(entry, 128),
            emits: AtomicUsize::new(0),
            fail_first: false,
        }
    }
}

impl Compile for Counting {
    fn cache_key(&self) -> KernelKey {
        KernelKey::new(self.key.to_le_bytes().to_vec())
    }
    fn name(&self) -> &str {
        &self.image.entry
    }
    fn emit(&self, arch: Arch) -> Result<KernelImage, RuntimeError> {
        let n = self.emits.fetch_add(1, Ordering::SeqCst);
        let mut image = self.image.clone().into_parts();
        image.arch = arch;
        if self.fail_first && n == 0 {
            image.ptx = image.ptx.replace("ld.global.u32", "frobnicate.u32");
        }
        Ok(vouched(image))
    }
}

#[test]
fn sixteen_threads_compile_once() {
    let dev = device();
    let kernel = Arc::new(Counting::new(0x5eed_0001, "rt_once"));
    let barrier = Arc::new(Barrier::new(16));
    let handles: Vec<_> = (0..16)
        .map(|_| {
            let (dev, kernel, barrier) = (dev.clone(), kernel.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                dev.compile(&*kernel)
            })
        })
        .collect();
    let functions: Vec<_> = handles
        .into_iter()
        .map(|h| match h.join() {
            Ok(Ok(f)) => f,
            Ok(Err(e)) => panic!("compile failed: {e}"),
            Err(_) => panic!("a compiling thread panicked"),
        })
        .collect();
    assert_eq!(kernel.emits.load(Ordering::SeqCst), 1);
    let stats = dev.cache_stats();
    assert_eq!((stats.misses, stats.loads, stats.hits), (1, 1, 15));
    assert!(functions.iter().all(|f| f.same_module(&functions[0])));
    // Every copy works.
    let x = dev.upload(&iota(200)).expect("upload");
    let mut y = dev.alloc_zeroed::<u32>(200).expect("alloc");
    functions[7]
        .launch_over(200, (&x, &mut y, 200u32))
        .expect("launch");
    assert_eq!(y.to_vec().expect("download"), iota(200));
}

#[test]
fn cache_hits_are_lookups() {
    let dev = device();
    let kernel = Counting::new(0x5eed_0002, "rt_hits");
    let first = dev.compile(&kernel).expect("loads");
    let rounds = 20_000u32;
    let start = Instant::now();
    for _ in 0..rounds {
        let f = dev.compile(&kernel).expect("hit");
        assert!(f.same_module(&first));
    }
    let per_hit = start.elapsed() / rounds;
    assert_eq!(kernel.emits.load(Ordering::SeqCst), 1);
    let stats = dev.cache_stats();
    assert_eq!(
        (stats.hits, stats.misses, stats.loads),
        (u64::from(rounds), 1, 1)
    );
    assert!(stats.entries >= 1);
    eprintln!("cache hit: {per_hit:?} per compile");
    // A lock and a hash lookup; generous so that a loaded machine does not fail the test.
    assert!(per_hit.as_micros() < 20, "a cache hit took {per_hit:?}");
}

#[test]
fn failed_loads_are_not_cached() {
    let dev = device();
    let mut kernel = Counting::new(0x5eed_0003, "rt_retry");
    kernel.fail_first = true;
    assert!(dev.compile(&kernel).is_err());
    assert_eq!(dev.cache_stats().loads, 0);
    let f = dev.compile(&kernel).expect("the second emit is good");
    assert_eq!(kernel.emits.load(Ordering::SeqCst), 2);
    let stats = dev.cache_stats();
    assert_eq!((stats.misses, stats.loads, stats.hits), (2, 1, 0));
    let x = dev.upload(&iota(10)).expect("upload");
    let mut y = dev.alloc_zeroed::<u32>(10).expect("alloc");
    f.launch_over(10, (&x, &mut y, 10u32)).expect("launch");
    assert_eq!(y.to_vec().expect("download"), iota(10));
}

#[test]
fn devices_of_one_context_share_a_cache() {
    let a = device();
    let b = device();
    let sim = Device::sim();
    // Two CUDA devices of one ordinal share the primary context; simulators never share.
    assert_eq!(a.shares_cache_with(&b), a.is_cuda());
    assert!(!a.shares_cache_with(&sim) && a.shares_cache_with(&a.clone()));
    let kernel = Counting::new(0x5eed_0004, "rt_shared");
    let fa = a.compile(&kernel).expect("loads");
    let fb = b.compile(&kernel).expect("loads");
    assert_eq!(fa.same_module(&fb), a.is_cuda());
    let fs = sim.compile(&kernel).expect("loads");
    assert!(!fs.same_module(&fa));
    assert_eq!(
        kernel.emits.load(Ordering::SeqCst),
        if a.is_cuda() { 2 } else { 3 }
    );
}

#[test]
fn jit_failure_keeps_the_log() {
    let dev = device();
    let mut bad = copy_parts("rt_bad", 128);
    bad.ptx = bad.ptx.replace("ld.global.u32", "frobnicate.u32");
    let bad = vouched(bad);
    match dev.compile(&bad) {
        Err(RuntimeError::Jit { log, ptx, .. }) => {
            assert!(dev.is_cuda());
            assert_eq!(ptx, bad.ptx);
            assert!(log.contains("frobnicate"), "log: {log}");
            let shown = RuntimeError::Jit {
                log: log.clone(),
                ptx,
                code: cudarc::driver::DriverError(
                    cudarc::driver::sys::CUresult::CUDA_ERROR_INVALID_PTX,
                ),
            }
            .to_string();
            assert!(shown.contains(&log));
        }
        Err(RuntimeError::Sim(SimError::Parse { line, text, reason })) => {
            assert!(dev.is_sim());
            let expected = bad.ptx.lines().position(|l| l.contains("frobnicate"));
            assert_eq!(Some(line as usize), expected.map(|i| i + 1));
            assert!(text.contains("frobnicate"), "{text}");
            assert_eq!(reason, ParseReason::UnknownMnemonic);
        }
        other => panic!("expected a JIT or parse error, got {other:?}"),
    }
    let mut nul = copy_parts("rt_nul", 128);
    nul.ptx.insert(5, '\0');
    let nul = vouched(nul);
    if dev.is_cuda() {
        assert!(matches!(
            dev.compile(&nul),
            Err(RuntimeError::PtxNul { offset: 5 })
        ));
    }
}

#[test]
fn signature_must_match_the_ptx() {
    let dev = device();
    let mut wide = copy_parts("rt_sig_wide", 128);
    wide.params[2].dtype = DType::U64;
    let wide = vouched(wide);
    match dev.compile(&wide) {
        Err(RuntimeError::SignatureMismatch {
            entry,
            declared,
            expected,
        }) => {
            assert_eq!(entry, "rt_sig_wide");
            assert_eq!(
                (declared, expected),
                (
                    ParamLayout::packed([8, 8, 4]),
                    ParamLayout::packed([8, 8, 8])
                )
            );
        }
        other => panic!("expected SignatureMismatch, got {other:?}"),
    }
    let mut short = copy_parts("rt_sig_short", 128);
    short.params.pop();
    let short = vouched(short);
    assert!(matches!(
        dev.compile(&short),
        Err(RuntimeError::SignatureMismatch { .. })
    ));
}

#[test]
fn missing_entry_is_an_error() {
    let dev = device();
    let mut image = copy_parts("rt_entry", 128);
    image.entry = "no_such_entry".into();
    let image = vouched(image);
    match dev.compile(&image) {
        Err(RuntimeError::MissingEntry { entry }) => assert_eq!(entry, "no_such_entry"),
        other => panic!("expected MissingEntry, got {other:?}"),
    }
}

#[test]
fn buffers_fill_copy_and_check_lengths() {
    let dev = device();
    assert_eq!(
        dev.alloc_filled(5, 0xabu8).unwrap().to_vec().unwrap(),
        vec![0xab; 5]
    );
    assert_eq!(
        dev.alloc_filled(3, -2i16).unwrap().to_vec().unwrap(),
        vec![-2; 3]
    );
    assert_eq!(
        dev.alloc_filled(7, f32::NAN)
            .unwrap()
            .to_vec()
            .unwrap()
            .len(),
        7
    );
    assert!(
        dev.alloc_filled(7, f32::NAN)
            .unwrap()
            .to_vec()
            .unwrap()
            .iter()
            .all(|v| v.is_nan())
    );
    assert_eq!(
        dev.alloc_filled(4, -1.25f64).unwrap().to_vec().unwrap(),
        vec![-1.25; 4]
    );
    assert_eq!(
        dev.alloc_filled(2, u64::MAX).unwrap().to_vec().unwrap(),
        vec![u64::MAX; 2]
    );
    assert_eq!(
        dev.alloc_zeroed::<i64>(3).unwrap().to_vec().unwrap(),
        vec![0; 3]
    );

    let empty = dev.upload::<f32>(&[]).expect("empty upload");
    assert!(empty.is_empty() && empty.to_vec().unwrap().is_empty());

    // `fill` over written contents: each element width, 64-bit values whose halves repeat
    // (a driver memset on CUDA) and whose halves differ (a host copy), an empty buffer.
    let mut b8 = dev.upload(&[1u8, 2, 3]).unwrap();
    b8.fill(0x5a).unwrap();
    assert_eq!(b8.to_vec().unwrap(), [0x5a; 3]);
    let mut b16 = dev.upload(&[1i16, 2, 3, 4, 5]).unwrap();
    b16.fill(-3).unwrap();
    assert_eq!(b16.to_vec().unwrap(), [-3; 5]);
    let mut b32 = dev.upload(&[1.5f32; 9]).unwrap();
    b32.fill(-0.0).unwrap();
    assert!(
        b32.to_vec()
            .unwrap()
            .iter()
            .all(|v| v.to_bits() == 0x8000_0000)
    );
    let mut b64 = dev.upload(&[7u64; 6]).unwrap();
    b64.fill(0).unwrap();
    assert_eq!(b64.to_vec().unwrap(), [0; 6]);
    b64.fill(0x1234_5678_1234_5678).unwrap();
    assert_eq!(b64.to_vec().unwrap(), [0x1234_5678_1234_5678; 6]);
    b64.fill(0x0123_4567_89ab_cdef).unwrap();
    assert_eq!(b64.to_vec().unwrap(), [0x0123_4567_89ab_cdef; 6]);
    let mut f64s = dev.upload(&[1.0f64; 3]).unwrap();
    f64s.fill(-1.25).unwrap();
    assert_eq!(f64s.to_vec().unwrap(), [-1.25; 3]);
    let mut none = dev.upload::<u64>(&[]).unwrap();
    none.fill(9).unwrap();
    assert!(none.to_vec().unwrap().is_empty());

    let mut b = dev.upload(&[1u16, 2, 3]).expect("upload");
    assert_eq!((b.len(), b.dtype()), (3, DType::U16));
    b.write(&[4, 5, 6]).expect("write");
    assert_eq!(b.to_vec().unwrap(), vec![4, 5, 6]);
    assert!(matches!(
        b.write(&[1, 2]),
        Err(RuntimeError::LengthMismatch { buffer: 3, host: 2 })
    ));
    assert_eq!(b.as_cuda().is_some(), dev.is_cuda());
    assert!(matches!(
        dev.alloc_zeroed::<u64>(usize::MAX / 2),
        Err(RuntimeError::TooLarge { .. })
    ));
}

#[test]
fn timing_a_launch() {
    let dev = device();
    let f = dev.compile(&copy_image("rt_time", 128)).expect("loads");
    let n = 1 << 12;
    let x = dev.upload(&iota(n)).expect("upload");
    let mut y = dev.alloc_zeroed::<u32>(n).expect("alloc");
    let (result, elapsed) = dev
        .time(|| f.launch_over(n, (&x, &mut y, n as u32)))
        .expect("timed");
    result.expect("launch");
    assert!(elapsed.as_secs() < 60, "{elapsed:?}");
    let start = dev.record_event().expect("event");
    let end = dev.record_event().expect("event");
    assert!(end.elapsed_since(&start).is_ok());
    let foreign = Device::sim().record_event().expect("event");
    assert!(matches!(
        end.elapsed_since(&foreign),
        Err(RuntimeError::WrongDevice { .. })
    ));
}

#[test]
fn device_selection() {
    // The environment variable's parsing is tested on values, not on the process environment.
    assert_eq!(
        DeviceChoice::parse(Some("sim")).ok(),
        Some(DeviceChoice::Sim)
    );
    assert_eq!(
        DeviceChoice::parse(Some("cuda:1")).ok(),
        Some(DeviceChoice::Cuda(1))
    );
    assert!(matches!(
        DeviceChoice::parse(Some("tpu")),
        Err(RuntimeError::EnvVar { value }) if value == "tpu"
    ));
    let sim = Device::sim();
    assert_eq!(sim.backend(), &Backend::Sim);
    assert_eq!(sim.arch(), Arch::Sm90);
    assert!(sim.cuda_context().is_none() && sim.cuda_stream().is_none());
    assert_eq!(sim.sm_count(), 132);

    let dev = device();
    match DeviceChoice::from_env().expect("COOPGRAPH_DEVICE is valid") {
        DeviceChoice::Cuda(ordinal) => match dev.backend() {
            Backend::Cuda { ordinal: o, .. } => assert_eq!(*o, ordinal),
            Backend::Sim => panic!("COOPGRAPH_DEVICE asks for CUDA, got the simulator"),
        },
        DeviceChoice::Sim => assert!(dev.is_sim()),
        DeviceChoice::Auto => assert_eq!(dev.is_cuda(), Device::cuda(0).is_ok()),
    }
}

#[test]
fn cuda_without_a_gpu_is_an_error() {
    match Device::cuda(0) {
        Ok(d) => {
            assert!(matches!(d.backend(), Backend::Cuda { ordinal: 0, .. }));
            assert!(d.cuda_context().is_some() && d.sm_count() > 0);
        }
        Err(RuntimeError::NoDriver | RuntimeError::NoDevice { ordinal: 0 }) => {
            assert!(DeviceChoice::open(DeviceChoice::Cuda(0)).is_err());
            assert!(
                DeviceChoice::open(DeviceChoice::Auto)
                    .expect("falls back")
                    .is_sim()
            );
        }
        Err(e) => panic!("unexpected error: {e}"),
    }
    assert!(matches!(
        Device::cuda(4096),
        Err(RuntimeError::NoDriver | RuntimeError::NoDevice { ordinal: 4096 })
    ));
}

/// cudarc interop: adopt a stream, wrap a slice, pass slices directly. CUDA only; on the
/// simulator there is nothing to adopt (with `COOPGRAPH_DEVICE=cuda` the default device is a
/// GPU or `device()` fails).
#[test]
fn cudarc_interop() {
    let dev = device();
    let Some(stream) = dev.cuda_stream().cloned() else {
        eprintln!("cudarc_interop: the default device is the simulator; nothing to adopt");
        return;
    };
    let adopted = Device::from_cuda_stream(stream.clone()).expect("adopt");
    assert!(adopted.shares_cache_with(&dev));
    let f = adopted
        .compile(&copy_image("rt_interop", 128))
        .expect("loads");
    let xs = iota(300);
    let x = stream.clone_htod(&xs).expect("htod");
    let mut y = stream.alloc_zeros::<u32>(300).expect("alloc");
    f.launch_over(300, (&x, &mut y, 300u32))
        .expect("launch with slices");
    assert_eq!(stream.clone_dtoh(&y).expect("dtoh"), xs);

    let wrapped = Buffer::from_cuda(x);
    let mut out = dev.alloc_zeroed::<u32>(300).expect("alloc");
    f.launch_over(300, (&wrapped, &mut out, 300u32))
        .expect("launch");
    assert_eq!(out.to_vec().expect("download"), xs);
    let back = out.into_cuda().expect("a CUDA buffer");
    assert_eq!(back.len(), 300);

    // A stream of another context is refused.
    let other_ctx = cudarc::driver::CudaContext::new_non_primary(0, 0).expect("context");
    let foreign_stream = other_ctx.default_stream();
    assert!(matches!(
        dev.wrap_cuda_stream(foreign_stream.clone()),
        Err(RuntimeError::WrongDevice { .. })
    ));
    let foreign = Device::from_cuda_stream(foreign_stream)
        .expect("adopt")
        .stream();
    let mut y2 = dev.alloc_zeroed::<u32>(300).expect("alloc");
    let config = LaunchConfig::blocks(3).on_stream(&foreign);
    assert!(matches!(
        f.launch(config, (&wrapped, &mut y2, 300u32)),
        Err(RuntimeError::WrongDevice { .. })
    ));
    // A non-blocking stream of the same context works, ordered by cudarc's events.
    let side = dev
        .wrap_cuda_stream(stream.fork().expect("fork"))
        .expect("same context");
    f.launch(
        LaunchConfig::blocks(3).on_stream(&side),
        (&wrapped, &mut y2, 300u32),
    )
    .expect("launch on a forked stream");
    assert_eq!(y2.to_vec().expect("download"), xs);
    assert!(f.num_registers().expect("attribute").is_some_and(|r| r > 0));
    assert!(!f.jit_log().is_empty());
}

/// The simulator's own checks come back as `RuntimeError::Sim`, and its report through
/// `launch_with_report` (simulator only: the GPU has no such checks).
#[test]
fn simulator_faults_and_reports() {
    let dev = Device::sim_with(SimOptions {
        threads: 4,
        ..SimOptions::default()
    });
    let f = dev.compile(&copy_image("rt_sim", 128)).expect("loads");
    let xs = iota(1000);
    let x = dev.upload(&xs).expect("upload");
    let mut y = dev.alloc_zeroed::<u32>(1000).expect("alloc");
    let report = f
        .launch_with_report(LaunchConfig::blocks(8), (&x, &mut y, 1000u32))
        .expect("launch")
        .expect("the simulator reports");
    assert_eq!((report.blocks, report.threads), (8, 1024));
    assert_eq!(y.to_vec().expect("download"), xs);
    // An image whose PTX does not check the buffers' lengths (it trusts `n`) launches only
    // unsafely; with `n` past the end of both buffers, the simulator catches the
    // out-of-bounds read.
    let raw = KernelImage::unchecked_bounds(copy_parts("rt_sim_raw", 128));
    let f = dev.compile(&raw).expect("loads");
    let mut short = dev.alloc_zeroed::<u32>(1000).expect("alloc");
    assert!(matches!(
        f.launch_over(1100, (&x, &mut short, 1100u32)),
        Err(RuntimeError::UncheckedKernel { .. })
    ));
    let config = f.config_over(1100).expect("config");
    // SAFETY: on the simulator, accesses outside every buffer are reported, not made.
    match unsafe { f.launch_unchecked(config, (&x, &mut short, 1100u32)) } {
        Err(RuntimeError::Sim(SimError::OutOfBounds(fault))) => {
            assert_eq!(
                fault.address,
                fault.nearest.as_ref().map_or(0, |e| e.base) + 4000
            );
        }
        other => panic!("expected an out-of-bounds fault, got {other:?}"),
    }
    let sm80 = Device::sim_for(Arch::Sm80, SimOptions::default());
    assert_eq!((sm80.arch(), sm80.sm_count()), (Arch::Sm80, 108));
}

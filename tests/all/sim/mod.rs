//! Simulator tests: real kernels against CPU references, and one planted fault per checker
//! (with the kernel that is right beside it, so a checker that cannot fail, or that fires on
//! correct code, fails here). The PTX model's own coverage (round trip, every operation) is in
//! the simulator's unit tests.

use coopgraph::sim::*;

// ---------------------------------------------------------------------------------------
// Kernel text and launches

/// A hand-written kernel: the simulator's own wrapper.
fn kernel(name: &str, params: &[&str], shared: &[&str], body: &str) -> String {
    entry_text(name, params, shared, body)
}

/// The 1-based line of the first line containing `needle` after line `after`.
fn line_of(text: &str, needle: &str, after: u32) -> u32 {
    text.lines()
        .enumerate()
        .skip(after as usize)
        .find(|(_, l)| l.contains(needle))
        .map(|(k, _)| k as u32 + 1)
        .unwrap_or_else(|| panic!("{needle:?} not in the kernel"))
}

fn sim() -> Simulator {
    Simulator::new(SimOptions::default())
}

fn u32s(sim: &Simulator, addr: u64, n: usize) -> Vec<u32> {
    let mut b = vec![0u8; 4 * n];
    sim.read(addr, &mut b).unwrap();
    b.chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn f32s(sim: &Simulator, addr: u64, n: usize) -> Vec<f32> {
    u32s(sim, addr, n).into_iter().map(f32::from_bits).collect()
}

fn put_u32(sim: &mut Simulator, data: &[u32]) -> u64 {
    let a = sim.alloc(4 * data.len()).unwrap();
    let bytes: Vec<u8> = data.iter().flat_map(|x| x.to_le_bytes()).collect();
    sim.write(a, &bytes).unwrap();
    a
}

/// Loads and launches a one-entry kernel text.
fn launch(
    sim: &mut Simulator,
    text: &str,
    grid: u32,
    block: u32,
    params: &[u64],
) -> Result<LaunchReport, SimError> {
    let m = sim.load_module(text)?;
    let entry = m.entries().next().unwrap().to_string();
    sim.launch(&m, &entry, [grid, 1, 1], [block, 1, 1], 0, params)
}

#[test]
fn dynamic_shared_memory_has_addresses_of_its_own() {
    let text = kernel(
        "dsm",
        &["u64 out"],
        &[".shared .align 4 .b8 fixed[20];"],
        "ld.param.u64 %rd0, [out];
         mov.u32 %r0, %tid.x;
         mov.u32 %r1, dsm;
         shl.b32 %r2, %r0, 2;
         add.u32 %r3, %r1, %r2;
         st.shared.u32 [%r3], %r0;
         setp.eq.u32 %p0, %r0, 0;
         @%p0 st.shared.u32 [fixed+16], 7;
         bar.sync 0;
         ld.shared.u32 %r4, [%r3];
         mov.u32 %r5, %dynamic_smem_size;
         mov.u32 %r6, %total_smem_size;
         mul.wide.u32 %rd1, %r0, 16;
         add.u64 %rd2, %rd0, %rd1;
         st.global.v4.u32 [%rd2], {%r1, %r4, %r5, %r6};
         ret;",
    )
    .replace(
        ".visible .entry",
        ".extern .shared .align 16 .b8 dsm[];\n.visible .entry",
    );
    let m = parse(&text).unwrap();
    assert_eq!(
        m.functions[0].shared[0].bytes, 0,
        "the dynamic declaration comes first"
    );
    let s = sim();
    let module = s.load_module(&text).unwrap();
    let out = s.alloc(16 * 8).unwrap();
    s.launch(&module, "dsm", [1, 1, 1], [8, 1, 1], 32, &[out])
        .unwrap();
    let v = u32s(&s, out, 32);
    // The static declaration is at 0, the dynamic part 1 MiB further (each declaration has an
    // unmapped gap after it); 20 static bytes and 32 dynamic ones in all.
    let dsm = 1 << 20;
    for t in 0..8usize {
        assert_eq!(&v[4 * t..4 * t + 4], &[dsm, t as u32, 32, 52]);
    }
    // Too few dynamic bytes: the last thread writes past them, and the report names `dsm`.
    let e = s
        .launch(&module, "dsm", [1, 1, 1], [8, 1, 1], 28, &[out])
        .unwrap_err();
    assert!(
        matches!(&e, SimError::OutOfBounds(f) if f.address == u64::from(dsm) + 28 && f.thread.thread == [7, 0, 0]
            && f.nearest.as_ref().is_some_and(|n| n.name.as_deref() == Some("dsm") && n.len == 28)),
        "{e}"
    );
    // A declaration with no entry after it is an error.
    let dangling = ".version 7.0\n.target sm_80\n.extern .shared .align 16 .b8 d[];\n";
    assert_eq!(
        parse(dangling).unwrap_err().reason,
        ParseReason::UnexpectedEnd
    );
}

#[test]
fn special_registers() {
    let text = kernel(
        "sp",
        &["u64 out"],
        &[".shared .align 8 .b8 s[24];"],
        "ld.param.u64 %rd0, [out];
         mov.u32 %r0, %tid.x;
         mov.u32 %r1, %tid.y;
         mov.u32 %r2, %ntid.x;
         mad.lo.u32 %r3, %r1, %r2, %r0;
         mul.wide.u32 %rd1, %r3, 64;
         add.u64 %rd2, %rd0, %rd1;
         mov.u32 %r4, %laneid;
         st.global.u32 [%rd2], %r4;
         mov.u32 %r4, %warpid;
         st.global.u32 [%rd2+4], %r4;
         mov.u32 %r4, %lanemask_lt;
         st.global.u32 [%rd2+8], %r4;
         mov.u32 %r4, %lanemask_le;
         st.global.u32 [%rd2+12], %r4;
         mov.u32 %r4, %lanemask_gt;
         st.global.u32 [%rd2+16], %r4;
         mov.u32 %r4, %lanemask_ge;
         st.global.u32 [%rd2+20], %r4;
         mov.u32 %r4, %ctaid.y;
         st.global.u32 [%rd2+24], %r4;
         mov.u32 %r4, %nctaid.y;
         st.global.u32 [%rd2+28], %r4;
         mov.u32 %r4, %dynamic_smem_size;
         st.global.u32 [%rd2+32], %r4;
         mov.u32 %r4, %total_smem_size;
         st.global.u32 [%rd2+36], %r4;
         mov.u32 %r4, %tid.z;
         st.global.u32 [%rd2+40], %r4;
         mov.u32 %r4, %ntid.y;
         st.global.u32 [%rd2+44], %r4;
         mov.u64 %rd3, %clock64;
         mov.u64 %rd4, %globaltimer;
         mov.u64 %rd5, %clock64;
         setp.gt.u64 %p0, %rd5, %rd3;
         selp.u32 %r4, 1, 0, %p0;
         st.global.u32 [%rd2+48], %r4;
         mov.u32 %r4, %nwarpid;
         st.global.u32 [%rd2+52], %r4;
         ret;",
    );
    let s = sim();
    let m = s.load_module(&text).unwrap();
    let out = s.alloc_zeroed(64 * 48).unwrap();
    s.launch(&m, "sp", [1, 3, 1], [16, 3, 1], 40, &[out])
        .unwrap();
    let v = u32s(&s, out, 16 * 48);
    for t in 0..48usize {
        let row = &v[t * 16..t * 16 + 16];
        let lane = (t % 32) as u32;
        assert_eq!(row[0], lane);
        assert_eq!(row[1], (t / 32) as u32);
        assert_eq!(row[2], ((1u64 << lane) - 1) as u32);
        assert_eq!(row[3], ((2u64 << lane) - 1) as u32);
        assert_eq!(row[4], !(((2u64 << lane) - 1) as u32));
        assert_eq!(row[5], !(((1u64 << lane) - 1) as u32));
        assert_eq!(row[6], 2, "the last block writes last");
        assert_eq!((row[7], row[8], row[9]), (3, 40, 64));
        assert_eq!((row[10], row[11]), (0, 3));
        assert_eq!(row[12], 1, "the clock increases");
        assert_eq!(row[13], 2);
    }
}

// ---------------------------------------------------------------------------------------
// Kernels against CPU references

/// Each thread copies 4 consecutive f32 with vector loads and stores.
fn copy_kernel() -> String {
    kernel(
        "copy4",
        &["u64 src", "u64 dst"],
        &[],
        "// op0 load (tests/all/sim.rs)
         ld.param.u64 %rd0, [src];
         ld.param.u64 %rd1, [dst];
         cvta.to.global.u64 %rd0, %rd0;
         cvta.to.global.u64 %rd1, %rd1;
         mov.u32 %r0, %tid.x;
         mov.u32 %r1, %ctaid.x;
         mov.u32 %r2, %ntid.x;
         mad.lo.u32 %r3, %r1, %r2, %r0;
         mul.wide.u32 %rd2, %r3, 16;
         add.u64 %rd3, %rd0, %rd2;
         ld.global.nc.v4.f32 {%f0, %f1, %f2, %f3}, [%rd3];
         // op1 store (tests/all/sim.rs)
         add.u64 %rd4, %rd1, %rd2;
         st.global.v4.f32 [%rd4], {%f0, %f1, %f2, %f3};
         ret;",
    )
}

#[test]
fn copy_kernel_copies() {
    let mut s = sim();
    let n = 64 * 4 * 8;
    let data: Vec<u32> = (0..n as u32).map(|x| (x as f32 * 0.5).to_bits()).collect();
    let src = put_u32(&mut s, &data);
    let dst = s.alloc(4 * n).unwrap();
    let rep = launch(&mut s, &copy_kernel(), 8, 64, &[src, dst]).unwrap();
    assert_eq!(u32s(&s, dst, n), data);
    assert_eq!(rep.blocks, 8);
    assert_eq!(rep.threads, 512);
    assert_eq!(rep.thread_instructions, 512 * 14);
}

/// A sum over each block: warp shuffles, partials in shared memory, a barrier, then warp 0.
fn reduce_kernel() -> String {
    kernel(
        "block_sum",
        &["u64 src", "u64 dst"],
        &[".shared .align 4 .b8 partial[16];"],
        "// op0 block reduce (tests/all/sim.rs)
         ld.param.u64 %rd0, [src];
         ld.param.u64 %rd1, [dst];
         mov.u32 %r0, %tid.x;
         mov.u32 %r1, %ctaid.x;
         mov.u32 %r2, %ntid.x;
         mad.lo.u32 %r3, %r1, %r2, %r0;
         mul.wide.u32 %rd2, %r3, 4;
         add.u64 %rd3, %rd0, %rd2;
         ld.global.u32 %r4, [%rd3];
         shfl.sync.bfly.b32 %r5, %r4, 16, 31, -1;
         add.u32 %r4, %r4, %r5;
         shfl.sync.bfly.b32 %r5, %r4, 8, 31, -1;
         add.u32 %r4, %r4, %r5;
         shfl.sync.bfly.b32 %r5, %r4, 4, 31, -1;
         add.u32 %r4, %r4, %r5;
         shfl.sync.bfly.b32 %r5, %r4, 2, 31, -1;
         add.u32 %r4, %r4, %r5;
         shfl.sync.bfly.b32 %r5, %r4, 1, 31, -1;
         add.u32 %r4, %r4, %r5;
         and.b32 %r6, %r0, 31;
         shr.u32 %r7, %r0, 5;
         setp.eq.u32 %p0, %r6, 0;
         mov.u32 %r8, partial;
         shl.b32 %r9, %r7, 2;
         add.u32 %r10, %r8, %r9;
         @%p0 st.shared.u32 [%r10], %r4;
         bar.sync 0;
         setp.ge.u32 %p1, %r0, 32;
         @%p1 bra $L_done;
         setp.lt.u32 %p2, %r6, 4;
         shl.b32 %r11, %r6, 2;
         add.u32 %r12, %r8, %r11;
         mov.u32 %r13, 0;
         @%p2 ld.shared.u32 %r13, [%r12];
         shfl.sync.bfly.b32 %r14, %r13, 2, 31, -1;
         add.u32 %r13, %r13, %r14;
         shfl.sync.bfly.b32 %r14, %r13, 1, 31, -1;
         add.u32 %r13, %r13, %r14;
         setp.eq.u32 %p3, %r6, 0;
         mul.wide.u32 %rd4, %r1, 4;
         add.u64 %rd5, %rd1, %rd4;
         @%p3 st.global.u32 [%rd5], %r13;
         $L_done:
         ret;",
    )
}

#[test]
fn block_reduction_matches_the_cpu() {
    let mut s = sim();
    let blocks = 6;
    let data: Vec<u32> = (0..128 * blocks as u32)
        .map(|x| x.wrapping_mul(2_654_435_761) >> 7)
        .collect();
    let src = put_u32(&mut s, &data);
    let dst = s.alloc(4 * blocks).unwrap();
    let rep = launch(&mut s, &reduce_kernel(), blocks as u32, 128, &[src, dst]).unwrap();
    let want: Vec<u32> = data
        .chunks(128)
        .map(|c| c.iter().fold(0u32, |a, b| a.wrapping_add(*b)))
        .collect();
    assert_eq!(u32s(&s, dst, blocks), want);
    assert_eq!(rep.barriers, blocks as u64);
    assert_eq!(rep.warp_collectives, blocks as u64 * (4 * 5 + 2));
}

/// Shuffles over logical warps of 8 lanes (the `c` operand's segment mask), with the
/// predicate output, against the CUDA-level definition of `__shfl_*_sync(width = 8)`.
#[test]
fn segmented_shuffles_follow_the_width() {
    let w = 8u32;
    let seg = i64::from((32 - w) << 8);
    for (mode, b, c) in [
        ("up", 3, seg),
        ("down", 3, seg | 0x1f),
        ("bfly", 2, seg | 0x1f),
        ("idx", 5, seg | 0x1f),
    ] {
        let text = kernel(
            "sh",
            &["u64 out"],
            &[],
            &format!(
                "ld.param.u64 %rd0, [out];
                 mov.u32 %r0, %laneid;
                 mul.lo.u32 %r1, %r0, 10;
                 shfl.sync.{mode}.b32 %r2|%p0, %r1, {b}, {c}, -1;
                 selp.u32 %r3, 1, 0, %p0;
                 mul.wide.u32 %rd1, %r0, 8;
                 add.u64 %rd2, %rd0, %rd1;
                 st.global.v2.u32 [%rd2], {{%r2, %r3}};
                 ret;"
            ),
        );
        let mut s = sim();
        let out = s.alloc(8 * 32).unwrap();
        launch(&mut s, &text, 1, 32, &[out]).unwrap();
        let v = u32s(&s, out, 64);
        for lane in 0..32u32 {
            let (base, pos) = (lane / w * w, lane % w);
            let b = b as u32;
            let (src, ok) = match mode {
                "up" => (if pos >= b { lane - b } else { lane }, pos >= b),
                "down" => (if pos + b < w { lane + b } else { lane }, pos + b < w),
                "bfly" => (lane ^ b, true),
                _ => (base + b % w, true),
            };
            assert_eq!(v[2 * lane as usize], src * 10, "{mode} lane {lane}");
            assert_eq!(
                v[2 * lane as usize + 1],
                u32::from(ok),
                "{mode} lane {lane} pred"
            );
        }
    }
}

#[test]
fn vote_match_redux_activemask() {
    let text = kernel(
        "coll",
        &["u64 out"],
        &[],
        "ld.param.u64 %rd0, [out];
         mov.u32 %r0, %laneid;
         mul.wide.u32 %rd1, %r0, 36;
         add.u64 %rd2, %rd0, %rd1;
         and.b32 %r1, %r0, 3;
         match.any.sync.b32 %r2, %r1, -1;
         st.global.u32 [%rd2], %r2;
         sub.s32 %r3, 10, %r0;
         redux.sync.min.s32 %r4, %r3, -1;
         st.global.u32 [%rd2+4], %r4;
         redux.sync.max.u32 %r4, %r3, -1;
         st.global.u32 [%rd2+8], %r4;
         redux.sync.xor.b32 %r4, %r0, -1;
         st.global.u32 [%rd2+12], %r4;
         setp.lt.u32 %p0, %r0, 40;
         vote.sync.all.pred %p1, %p0, -1;
         vote.sync.uni.pred %p2, !%p0, -1;
         and.pred %p3, %p1, %p2;
         selp.u32 %r5, 1, 0, %p3;
         st.global.u32 [%rd2+16], %r5;
         activemask.b32 %r6;
         st.global.u32 [%rd2+20], %r6;
         and.b32 %r7, %r0, 1;
         setp.eq.u32 %p4, %r7, 1;
         @%p4 bra $L_odd;
         activemask.b32 %r8;
         st.global.u32 [%rd2+24], %r8;
         bra $L_join;
         $L_odd:
         mov.u32 %r8, 0;
         st.global.u32 [%rd2+24], %r8;
         $L_join:
         match.all.sync.b64 %r9, %rd0, -1;
         st.global.u32 [%rd2+28], %r9;
         shl.b32 %r10, 1, %r0;
         redux.sync.or.b32 %r11, %r10, -1;
         redux.sync.and.b32 %r12, %r10, -1;
         add.u32 %r13, %r11, %r12;
         redux.sync.add.s32 %r14, %r3, 0xFFFF;
         sub.u32 %r15, %r13, %r14;
         st.global.u32 [%rd2+32], %r15;
         ret;",
    );
    let mut s = sim();
    let out = s.alloc(36 * 32).unwrap();
    launch(&mut s, &text, 1, 32, &[out]).unwrap_err();
    // Lanes 16.. are outside the 0xFFFF mask of the last redux: fix the mask per half.
    let text = text.replace(
        "redux.sync.add.s32 %r14, %r3, 0xFFFF;",
        "redux.sync.add.s32 %r14, %r3, -1;",
    );
    launch(&mut s, &text, 1, 32, &[out]).unwrap();
    let v: Vec<u32> = u32s(&s, out, 9 * 32);
    let xor = (0..32u32).fold(0, |a, b| a ^ b);
    for lane in 0..32usize {
        let row = &v[lane * 9..lane * 9 + 8];
        assert_eq!(row[0], 0x1111_1111u32 << (lane % 4));
        assert_eq!(row[1] as i32, 10 - 31);
        // Unsigned: 10 - 11 wraps to the largest value.
        assert_eq!(row[2], u32::MAX);
        assert_eq!(row[3], xor);
        assert_eq!(row[4], 1);
        assert_eq!(row[5], u32::MAX);
        assert_eq!(row[6], if lane % 2 == 0 { 0x5555_5555 } else { 0 });
        assert_eq!(row[7], u32::MAX);
        // or = all ones, and = 0; the sum of 10 - lane over all lanes is 320 - 496.
        assert_eq!(
            v[lane * 9 + 8],
            u32::MAX.wrapping_sub((320i32 - 496) as u32)
        );
    }
}

/// Loads and stores of every integer width, sign extension, and arithmetic per dtype.
#[test]
fn narrow_and_wide_dtypes() {
    let text = kernel(
        "dt",
        &["u64 io"],
        &[],
        "ld.param.u64 %rd0, [io];
         ld.global.s8 %r0, [%rd0];
         ld.global.u8 %r1, [%rd0];
         ld.global.s16 %r2, [%rd0+2];
         ld.global.s32 %rd1, [%rd0+4];
         ld.global.u32 %rd2, [%rd0+4];
         st.global.u32 [%rd0+8], %r0;
         st.global.u32 [%rd0+12], %r1;
         st.global.u32 [%rd0+16], %r2;
         st.global.u64 [%rd0+24], %rd1;
         st.global.u64 [%rd0+32], %rd2;
         add.u32 %r3, %r0, 0x102;
         st.global.u8 [%rd0+40], %r3;
         cvt.s32.s8 %r4, %r3;
         st.global.s32 [%rd0+44], %r4;
         ld.global.f64 %fd0, [%rd0+48];
         fma.rn.f64 %fd1, %fd0, %fd0, 0d3FF0000000000000;
         st.global.f64 [%rd0+56], %fd1;
         cvt.rn.f32.f64 %f0, %fd1;
         st.global.f32 [%rd0+64], %f0;
         mul.lo.s64 %rd3, %rd1, -3;
         st.global.s64 [%rd0+72], %rd3;
         div.s32 %r5, %r2, 7;
         st.global.u16 [%rd0+80], %r5;
         ret;",
    );
    let mut s = sim();
    let io = s.alloc_zeroed(96).unwrap();
    let mut init = vec![0u8; 96];
    init[0] = 0xF0; // s8: -16
    init[2..4].copy_from_slice(&(-1000i16).to_le_bytes());
    init[4..8].copy_from_slice(&(-5i32).to_le_bytes());
    init[48..56].copy_from_slice(&1.5f64.to_le_bytes());
    s.write(io, &init).unwrap();
    launch(&mut s, &text, 1, 1, &[io]).unwrap();
    let mut b = vec![0u8; 96];
    s.read(io, &mut b).unwrap();
    let w32 = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
    let w64 = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
    assert_eq!(w32(8) as i32, -16);
    assert_eq!(w32(12), 0xF0);
    assert_eq!(w32(16) as i32, -1000);
    assert_eq!(w64(24) as i64, -5);
    assert_eq!(w64(32), 0xFFFF_FFFB);
    // -16 + 0x102 = 0xF2: the store writes the low byte only.
    assert_eq!(b[40], 0xF2);
    assert_eq!(&b[41..44], &[0, 0, 0]);
    assert_eq!(w32(44) as i32, -14);
    let fd1 = 1.5f64.mul_add(1.5, 1.0);
    assert_eq!(f64::from_bits(w64(56)), fd1);
    assert_eq!(f32::from_bits(w32(64)), fd1 as f32);
    assert_eq!(w64(72) as i64, 15);
    assert_eq!(i16::from_le_bytes([b[80], b[81]]), -1000 / 7);
}

#[test]
fn atomics_in_global_and_shared_memory() {
    let text = kernel(
        "hist",
        &["u64 counter", "u64 olds", "u64 bins", "u64 fsum"],
        &[".shared .align 4 .b8 h[32];"],
        "ld.param.u64 %rd0, [counter];
         ld.param.u64 %rd1, [olds];
         ld.param.u64 %rd2, [bins];
         ld.param.u64 %rd3, [fsum];
         mov.u32 %r0, %tid.x;
         mov.u32 %r1, h;
         setp.lt.u32 %p0, %r0, 8;
         shl.b32 %r2, %r0, 2;
         add.u32 %r3, %r1, %r2;
         @%p0 st.shared.u32 [%r3], 0;
         bar.sync 0;
         atom.global.add.u32 %r4, [%rd0], 1;
         mul.wide.u32 %rd4, %r0, 4;
         add.u64 %rd5, %rd1, %rd4;
         st.global.u32 [%rd5], %r4;
         and.b32 %r5, %r0, 7;
         shl.b32 %r6, %r5, 2;
         add.u32 %r7, %r1, %r6;
         atom.shared.add.u32 %r8, [%r7], 1;
         atom.shared.exch.b32 %r20, [h+28], %r0;
         atom.shared.cas.b32 %r21, [h+24], 0, 1;
         red.global.add.f32 [%rd3], 0f3F800000;
         bar.sync 0;
         @%p0 ld.shared.u32 %r9, [%r3];
         add.u64 %rd6, %rd2, %rd4;
         @%p0 st.global.u32 [%rd6], %r9;
         ret;",
    );
    let mut s = sim();
    let counter = s.alloc_zeroed(4).unwrap();
    let olds = s.alloc(4 * 256).unwrap();
    let bins = s.alloc(4 * 8).unwrap();
    let fsum = s.alloc_zeroed(4).unwrap();
    launch(&mut s, &text, 1, 256, &[counter, olds, bins, fsum]).unwrap();
    assert_eq!(u32s(&s, counter, 1), vec![256]);
    let mut o = u32s(&s, olds, 256);
    o.sort_unstable();
    assert_eq!(o, (0..256).collect::<Vec<u32>>());
    // Bins 6 and 7 also took an exchange and a compare-and-swap from every thread, after
    // all the adds or before some: only their sums of adds are checked through bins 0..5.
    assert_eq!(u32s(&s, bins, 6), vec![32; 6]);
    assert_eq!(f32s(&s, fsum, 1), vec![256.0]);
}

mod checkers;

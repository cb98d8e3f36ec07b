//! Simulator speed: simulated thread-instructions per second on one core, with the checkers
//! on and off, for a vectorized copy and a block reduction (shuffles, shared memory, a
//! barrier). Criterion prints the rate as `thrpt` in elements (thread-instructions) per second.

use coopgraph::sim::{SimModule, SimOptions, Simulator};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

const HEADER: &str = ".version 7.0\n.target sm_80\n.address_size 64\n\n";

/// Each thread copies four f32 with one vector load and one vector store.
fn copy_ptx() -> String {
    format!(
        "{HEADER}.visible .entry copy4(
\t.param .u64 src,
\t.param .u64 dst
)
{{
\t.reg .b32 %r<4>;
\t.reg .b64 %rd<5>;
\t.reg .f32 %f<4>;

\tld.param.u64 %rd0, [src];
\tld.param.u64 %rd1, [dst];
\tmov.u32 %r0, %tid.x;
\tmov.u32 %r1, %ctaid.x;
\tmov.u32 %r2, %ntid.x;
\tmad.lo.u32 %r3, %r1, %r2, %r0;
\tmul.wide.u32 %rd2, %r3, 16;
\tadd.u64 %rd3, %rd0, %rd2;
\tld.global.nc.v4.f32 {{%f0, %f1, %f2, %f3}}, [%rd3];
\tadd.u64 %rd4, %rd1, %rd2;
\tst.global.v4.f32 [%rd4], {{%f0, %f1, %f2, %f3}};
\tret;
}}
"
    )
}

/// Each block of 256 threads sums 256 f32: a shuffle tree per warp, partials through shared
/// memory and a barrier, then a shuffle tree in warp 0.
fn reduce_ptx() -> String {
    let mut tree = String::new();
    for d in [16, 8, 4, 2, 1] {
        tree +=
            &format!("\tshfl.sync.bfly.b32 %f1, %f0, {d}, 31, -1;\n\tadd.rn.f32 %f0, %f0, %f1;\n");
    }
    format!(
        "{HEADER}.visible .entry reduce(
\t.param .u64 src,
\t.param .u64 dst
)
{{
\t.reg .pred %p<3>;
\t.reg .b32 %r<12>;
\t.reg .b64 %rd<6>;
\t.reg .f32 %f<2>;
\t.shared .align 4 .b8 partial[32];

\tld.param.u64 %rd0, [src];
\tld.param.u64 %rd1, [dst];
\tmov.u32 %r0, %tid.x;
\tmov.u32 %r1, %ctaid.x;
\tmov.u32 %r2, %ntid.x;
\tmad.lo.u32 %r3, %r1, %r2, %r0;
\tmul.wide.u32 %rd2, %r3, 4;
\tadd.u64 %rd3, %rd0, %rd2;
\tld.global.f32 %f0, [%rd3];
{tree}\tand.b32 %r4, %r0, 31;
\tshr.u32 %r5, %r0, 5;
\tsetp.eq.u32 %p0, %r4, 0;
\tmov.u32 %r6, partial;
\tshl.b32 %r7, %r5, 2;
\tadd.u32 %r8, %r6, %r7;
\t@%p0 st.shared.f32 [%r8], %f0;
\tbar.sync 0;
\tsetp.ge.u32 %p1, %r0, 32;
\t@%p1 bra $L_done;
\tshl.b32 %r9, %r4, 2;
\tadd.u32 %r10, %r6, %r9;
\tsetp.lt.u32 %p2, %r4, 8;
\tmov.f32 %f0, 0f00000000;
\t@%p2 ld.shared.f32 %f0, [%r10];
{tree}\tmul.wide.u32 %rd4, %r1, 4;
\tadd.u64 %rd5, %rd1, %rd4;
\t@%p0 st.global.f32 [%rd5], %f0;
$L_done:
\tret;
}}
"
    )
}

struct Case {
    sim: Simulator,
    module: SimModule,
    entry: &'static str,
    grid: u32,
    block: u32,
    params: [u64; 2],
}

impl Case {
    fn new(
        ptx: &str,
        entry: &'static str,
        grid: u32,
        block: u32,
        items: usize,
        out: usize,
        checks: bool,
    ) -> Case {
        let sim = Simulator::new(SimOptions {
            check_races: checks,
            check_uninit: checks,
            ..SimOptions::default()
        });
        let module = sim.load_module(ptx).expect("bench kernel loads");
        let src = sim.alloc(4 * items).expect("alloc");
        let data: Vec<u8> = (0..items).flat_map(|i| (i as f32).to_le_bytes()).collect();
        sim.write(src, &data).expect("write");
        let dst = sim.alloc(4 * out).expect("alloc");
        Case {
            sim,
            module,
            entry,
            grid,
            block,
            params: [src, dst],
        }
    }

    fn launch(&mut self) -> u64 {
        let rep = self
            .sim
            .launch(
                &self.module,
                self.entry,
                [self.grid, 1, 1],
                [self.block, 1, 1],
                0,
                &self.params,
            )
            .expect("bench kernel runs");
        rep.thread_instructions
    }
}

fn bench(c: &mut Criterion) {
    for checks in [true, false] {
        let tag = if checks { "checks_on" } else { "checks_off" };
        let cases = [
            (
                "copy",
                Case::new(
                    &copy_ptx(),
                    "copy4",
                    256,
                    128,
                    256 * 128 * 4,
                    256 * 128 * 4,
                    checks,
                ),
            ),
            (
                "reduce",
                Case::new(&reduce_ptx(), "reduce", 128, 256, 128 * 256, 128, checks),
            ),
        ];
        for (name, mut case) in cases {
            let per_launch = case.launch();
            let mut g = c.benchmark_group(format!("sim/{name}/{tag}"));
            g.throughput(Throughput::Elements(per_launch));
            g.sample_size(20);
            g.bench_function("thread_instructions", |b| {
                b.iter(|| black_box(case.launch()))
            });
            g.finish();
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);

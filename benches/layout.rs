//! Layout algebra on typical tile sizes: each operation should cost well under a microsecond
//! to a few microseconds, since the planner calls them while searching.

use std::hint::black_box;

use coopgraph::layout::{
    Arrangement, Layout, SmemTransform, Swizzle, Tiler, arrangement_layout, bank_conflicts_with,
    blocked_product, coalesce, complement, composition, logical_divide, logical_product,
    right_inverse, zipped_divide,
};
use criterion::{Criterion, criterion_group, criterion_main};

fn l(s: &str) -> Layout {
    s.parse()
        .unwrap_or_else(|e| panic!("benchmark layout {s:?}: {e}"))
}

fn algebra(c: &mut Criterion) {
    let a = l("(128,4):(4,1)");
    let transpose = l("(4,128):(128,1)");
    let warp_tile = l("((4,8),(2,4)):((1,64),(4,8))");
    let tile_32x8 = l("(32,8):(1,32)");
    let matrix = l("(128,128):(1,128)");
    let by_mode = Tiler::modes([l("32:1"), l("16:2")]);
    let vec4 = l("4:1");

    c.bench_function("composition (128,4):(4,1) o (4,128):(128,1)", |b| {
        b.iter(|| composition(black_box(&a), black_box(&transpose)))
    });
    c.bench_function("composition (32,8):(1,32) o ((4,8),(2,4))", |b| {
        b.iter(|| composition(black_box(&tile_32x8), black_box(&warp_tile)))
    });
    c.bench_function("composition (128,128) o <32:1,16:2>", |b| {
        b.iter(|| composition(black_box(&matrix), black_box(&by_mode)))
    });
    c.bench_function("complement (4,8):(1,32) to 1024", |b| {
        let x = l("(4,8):(1,32)");
        b.iter(|| complement(black_box(&x), black_box(1024)))
    });
    c.bench_function("complement ((2,4),8):((1,64),4) to 4096", |b| {
        let x = l("((2,4),8):((1,64),4)");
        b.iter(|| complement(black_box(&x), black_box(4096)))
    });
    c.bench_function("logical_divide (32,8):(1,32) / 4:1", |b| {
        b.iter(|| logical_divide(black_box(&tile_32x8), black_box(&vec4)))
    });
    c.bench_function("logical_divide (128,128) / <32:1,16:2>", |b| {
        b.iter(|| logical_divide(black_box(&matrix), black_box(&by_mode)))
    });
    c.bench_function("zipped_divide (128,128) / <32:1,16:2>", |b| {
        b.iter(|| zipped_divide(black_box(&matrix), black_box(&by_mode)))
    });
    c.bench_function("logical_product (2,2):(1,2) x (32,8):(1,32)", |b| {
        let x = l("(2,2):(1,2)");
        b.iter(|| logical_product(black_box(&x), black_box(&tile_32x8)))
    });
    c.bench_function("blocked_product (2,2):(1,2) x (32,8):(1,32)", |b| {
        let x = l("(2,2):(1,2)");
        b.iter(|| blocked_product(black_box(&x), black_box(&tile_32x8)))
    });
    c.bench_function("coalesce ((2,2),(2,2)):((1,2),(4,8))", |b| {
        let x = l("((2,2),(2,2)):((1,2),(4,8))");
        b.iter(|| coalesce(black_box(&x)))
    });
    c.bench_function("right_inverse (128,4):(4,1)", |b| {
        b.iter(|| right_inverse(black_box(&a)))
    });
    c.bench_function("parse ((2,2),3):((24,2),8)", |b| {
        b.iter(|| black_box("((2,2),3):((24,2),8)").parse::<Layout>())
    });
    c.bench_function("call x512 on (128,4):(4,1)", |b| {
        b.iter(|| (0..512).map(|i| black_box(&a).call(i)).sum::<i64>())
    });
}

fn planning(c: &mut Criterion) {
    let blocked = arrangement_layout(Arrangement::Blocked, 128, 8)
        .unwrap_or_else(|e| panic!("arrangement: {e}"));
    let swizzle = Swizzle::new(3, 0, 3).unwrap_or_else(|e| panic!("swizzle: {e}"));
    c.bench_function("bank_conflicts blocked 128x8 f32", |b| {
        b.iter(|| bank_conflicts_with(black_box(&blocked), 4, 32, SmemTransform::Identity))
    });
    c.bench_function("bank_conflicts blocked 128x8 f32 swizzled", |b| {
        b.iter(|| bank_conflicts_with(black_box(&blocked), 4, 32, SmemTransform::Swizzle(swizzle)))
    });
    c.bench_function("arrangement_layout warp-striped 256x4", |b| {
        b.iter(|| arrangement_layout(Arrangement::WarpStriped, black_box(256), black_box(4)))
    });
}

criterion_group!(benches, algebra, planning);
criterion_main!(benches);

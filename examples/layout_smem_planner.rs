//! How a planner can use the layout algebra: for each thread arrangement of a tile, print
//! the position arithmetic a code generator would emit, and compare shared-memory
//! placements (plain, padded, swizzled) by their bank conflicts.
//!
//! Run with `cargo run --example layout_smem_planner`.

use coopgraph::layout::{
    Arrangement, LayoutError, SmemTransform, Swizzle, TileArrangement, bank_conflicts_with,
};

/// Runs the example; an error is printed with its `Display` text (each cause once).
fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), LayoutError> {
    let threads = 128;
    let candidates = [
        ("plain", SmemTransform::Identity),
        ("pad 1 per 32", SmemTransform::Pad { every: 32, pad: 1 }),
        ("Sw<5,0,5>", SmemTransform::Swizzle(Swizzle::new(5, 0, 5)?)),
    ];
    for items in [1, 4, 8, 32] {
        for arrangement in [
            Arrangement::Blocked,
            Arrangement::Striped,
            Arrangement::WarpStriped,
        ] {
            let tile = TileArrangement::new(arrangement, threads, items)?;
            let arithmetic = match tile.affine() {
                Some(f) => format!("item*{} + thread*{}", f.item_stride, f.thread_stride),
                None => {
                    let d = tile.decomposition();
                    let terms: Vec<String> =
                        d.item
                            .terms()
                            .iter()
                            .map(|t| format!("item*{}", t.stride))
                            .chain(d.thread.terms().iter().map(|t| {
                                format!("((thread/{})%{})*{}", t.divisor, t.extent, t.stride)
                            }))
                            .collect();
                    terms.join(" + ")
                }
            };
            println!(
                "{arrangement:?} {threads}x{items}: {}  =>  pos = {arithmetic}",
                tile.layout()
            );
            for (name, transform) in candidates {
                let f32_report = bank_conflicts_with(tile.layout(), 4, 32, transform)?;
                let f64_report = bank_conflicts_with(tile.layout(), 8, 32, transform)?;
                println!(
                    "    {name:<14} f32: worst {:>2} extra wavefronts (total {:>4});  f64: worst {:>2}",
                    f32_report.worst, f32_report.total, f64_report.worst
                );
            }
        }
    }
    Ok(())
}

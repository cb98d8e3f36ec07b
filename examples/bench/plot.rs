//! SVG plots of a suite's results: GB/s beside CUB's per configuration, our ratio to CUB per
//! configuration, and GB/s against the element count.

use super::Row;

use plotters::coord::ranged1d::{SegmentValue, SegmentedCoord};
use plotters::coord::types::{RangedCoordf64, RangedCoordusize};
use plotters::prelude::*;
use std::error::Error;
use std::path::Path;

type Result = std::result::Result<(), Box<dyn Error>>;

/// Pixels per configuration in the bar charts.
const ROW_PX: u32 = 22;
const OURS: RGBColor = RGBColor(31, 119, 180);
const CUB: RGBColor = RGBColor(150, 150, 150);
const BELOW: RGBColor = RGBColor(214, 39, 40);
const ABOVE: RGBColor = RGBColor(44, 160, 44);

/// Label of segment `v` of a bar chart's configuration axis.
fn segment_label(labels: &[String], v: &SegmentValue<usize>) -> String {
    match v {
        SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
        _ => String::new(),
    }
}

/// A bar of `value` along segment `i`, inset by `top` and `bottom` pixels.
fn bar(
    i: usize,
    value: f64,
    top: u32,
    bottom: u32,
    color: RGBColor,
) -> Rectangle<(f64, SegmentValue<usize>)> {
    let mut r = Rectangle::new(
        [
            (0.0, SegmentValue::Exact(i + 1)),
            (value, SegmentValue::Exact(i)),
        ],
        color.filled(),
    );
    r.set_margin(top, bottom, 0, 0);
    r
}

/// The configuration axis of a bar chart of `count` bars: one segment per bar (an integer
/// range's segments include its end).
fn configurations(count: usize) -> SegmentedCoord<RangedCoordusize> {
    (0..count.max(1) - 1).into_segmented()
}

/// The chart's height for `rows` configurations.
fn height(rows: usize) -> u32 {
    120 + ROW_PX * rows as u32
}

/// The coordinates of a horizontal bar chart: values along x, one segment per row along y.
type BarCoord = Cartesian2d<RangedCoordf64, SegmentedCoord<RangedCoordusize>>;

/// A bar chart's axes on `root`: configurations down the side (labelled `labels`), values
/// from 0 to `x_max` along the bottom (described by `x_desc`).
fn bar_axes<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    title: &str,
    x_max: f64,
    labels: &[String],
    x_desc: &str,
) -> std::result::Result<ChartContext<'a, SVGBackend<'b>, BarCoord>, Box<dyn Error>> {
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(300)
        .build_cartesian_2d(0.0..x_max, configurations(labels.len()))?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .label_style(("sans-serif", 13))
        .y_labels(labels.len())
        .y_label_formatter(&|v| segment_label(labels, v))
        .x_desc(x_desc)
        .draw()?;
    Ok(chart)
}

/// Horizontal bars: our GB/s per configuration, CUB's beside it where known.
pub fn bandwidth(path: &Path, title: &str, rows: &[&Row]) -> Result {
    let labels: Vec<String> = rows.iter().map(|r| r.label()).collect();
    let top = rows
        .iter()
        .flat_map(|r| [r.gbps, r.cub.unwrap_or(0.0)])
        .fold(1.0, f64::max);
    let root = SVGBackend::new(path, (900, height(rows.len()))).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = bar_axes(&root, title, top * 1.08, &labels, "GB/s")?;
    let half = ROW_PX / 2;
    chart
        .draw_series(
            rows.iter()
                .enumerate()
                .map(|(i, r)| bar(i, r.gbps, 2, half, OURS)),
        )?
        .label("coopgraph")
        .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], OURS.filled()));
    chart
        .draw_series(
            rows.iter()
                .enumerate()
                .filter_map(|(i, r)| r.cub.map(|c| bar(i, c, half, 2, CUB))),
        )?
        .label("CUB")
        .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], CUB.filled()));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// Horizontal bars of our GB/s over CUB's per configuration (rows without CUB's figure are
/// left out), with a line at 1.
pub fn ratio(path: &Path, title: &str, rows: &[&Row]) -> Result {
    let rows: Vec<(&Row, f64)> = rows.iter().filter_map(|r| Some((*r, r.ratio()?))).collect();
    let labels: Vec<String> = rows.iter().map(|(r, _)| r.label()).collect();
    let top = rows.iter().map(|&(_, q)| q).fold(1.2, f64::max);
    let root = SVGBackend::new(path, (900, height(rows.len()))).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = bar_axes(
        &root,
        title,
        top * 1.05,
        &labels,
        "coopgraph GB/s / CUB GB/s",
    )?;
    chart.draw_series(
        rows.iter()
            .enumerate()
            .map(|(i, &(_, q))| bar(i, q, 3, 3, if q < 1.0 { BELOW } else { ABOVE })),
    )?;
    chart.draw_series(LineSeries::new(
        [
            (1.0, SegmentValue::Exact(0)),
            (1.0, SegmentValue::Exact(rows.len())),
        ],
        BLACK.stroke_width(1),
    ))?;
    root.present()?;
    Ok(())
}

/// One line of a size sweep.
pub struct Series {
    /// The legend's text.
    pub name: String,
    /// (log2 of the element count, GB/s).
    pub points: Vec<(f64, f64)>,
    /// Drawn dashed (CUB's and the copy baseline's lines).
    pub dashed: bool,
    /// The colour's index: a configuration's line and CUB's share it.
    pub color: usize,
}

/// GB/s against log2 of the element count, one line per series.
pub fn sweep(path: &Path, title: &str, series: &[Series]) -> Result {
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let (lo, hi) = xs.fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)));
    let top = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let top = if top > 0.0 { top } else { 1.0 };
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(lo - 0.5..hi + 0.5, 0.0..top * 1.1)?;
    chart
        .configure_mesh()
        .x_desc("elements (log2)")
        .y_desc("GB/s")
        .label_style(("sans-serif", 13))
        .x_label_formatter(&|x| {
            // Only whole powers of two are element counts.
            if (x - x.round()).abs() < 1e-9 {
                format!("2^{x:.0}")
            } else {
                String::new()
            }
        })
        .draw()?;
    for s in series {
        let color = Palette99::pick(s.color).to_rgba();
        let style = color.stroke_width(2);
        if s.dashed {
            chart
                .draw_series(DashedLineSeries::new(s.points.iter().copied(), 6, 4, style))?
                .label(&s.name)
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color));
        } else {
            chart
                .draw_series(LineSeries::new(s.points.iter().copied(), style))?
                .label(&s.name)
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color));
        }
        chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

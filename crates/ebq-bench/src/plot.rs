//! SVG plots (plotters, SVG backend only): grouped bars per category with
//! error bars, and lines over a log-scaled x axis.
//!
//! Every plot must read at 1200 px in a browser (issue 39 item 3): it is at
//! most [`WIDTH`] wide, its legend sits in a panel of its own right of the
//! chart (never over the data), every category is labelled under its group,
//! wrapped onto as many lines as its width needs (never rotated over the
//! bars), and a bar whose table cell prints `±` carries that interval as an
//! error bar. The e2e `plots::` test renders each plot in headless Chromium
//! and checks these properties on the rendered boxes.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// Width of every plot: fits a 1200-px window with its scroll bar.
pub const WIDTH: u32 = 1160;
/// The legend's panel, right of the chart.
const LEGEND_WIDTH: u32 = 200;
/// Height of the chart without its category labels.
const HEIGHT: u32 = 480;
/// Font size of labels and legend entries, and the pixels a line of them takes.
const FONT: u32 = 12;
const LINE: u32 = 15;
/// Average advance of a character at [`FONT`] (sans-serif), used to wrap labels.
const CHAR_PX: f64 = 7.0;

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

fn err(e: impl std::fmt::Display) -> String {
    format!("error: plotting: {e}")
}

/// One bar: its value, and the interval its table prints as `±` (drawn as an
/// error bar from `lo` to `hi`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bar {
    pub value: f64,
    pub interval: Option<(f64, f64)>,
}

impl Bar {
    /// A bar without an interval.
    pub fn plain(value: f64) -> Bar {
        Bar { value, interval: None }
    }

    /// A bench estimate's JSON (`{"median", "lo", "hi", …}`, see `stats.rs`):
    /// the median with its interval; `None` when there is no median.
    pub fn estimate(v: &serde_json::Value) -> Option<Bar> {
        let value = v["median"].as_f64()?;
        let interval = v["lo"].as_f64().zip(v["hi"].as_f64());
        Some(Bar { value, interval })
    }

    fn low(&self) -> f64 {
        self.interval.map_or(self.value, |(lo, _)| lo.min(self.value))
    }

    fn high(&self) -> f64 {
        self.interval.map_or(self.value, |(_, hi)| hi.max(self.value))
    }
}

/// A named series: one bar (or none: unsupported, left out) per category.
pub struct Series {
    pub name: String,
    pub bars: Vec<Option<Bar>>,
}

/// Splits `label` at spaces (and, for a single long word, anywhere) into
/// lines of at most `max_chars` characters.
pub fn wrap(label: &str, max_chars: usize) -> Vec<String> {
    let max_chars = max_chars.max(1);
    let mut lines: Vec<String> = vec![];
    for word in label.split_whitespace() {
        let chars: Vec<char> = word.chars().collect();
        for piece in chars.chunks(max_chars).map(|c| c.iter().collect::<String>()) {
            match lines.last_mut() {
                Some(last) if last.chars().count() + 1 + piece.chars().count() <= max_chars => {
                    last.push(' ');
                    last.push_str(&piece);
                }
                _ => lines.push(piece),
            }
        }
    }
    lines
}

/// The y range holding every bar and interval, and 0, with 10 % headroom.
fn y_range(series: &[Series]) -> (f64, f64) {
    let bars = || series.iter().flat_map(|s| s.bars.iter().flatten());
    let lo = bars().map(Bar::low).fold(0.0, f64::min);
    let hi = bars().map(Bar::high).fold(0.0, f64::max);
    let pad = ((hi - lo) * 0.1).max(1e-9);
    (if lo < 0.0 { lo - pad } else { 0.0 }, hi + pad)
}

/// Draws the legend: a swatch and the name of each series, top to bottom.
fn legend<DB: DrawingBackend>(area: &DrawingArea<DB, plotters::coord::Shift>, names: &[&str]) -> Result<(), String> {
    let max_chars = ((LEGEND_WIDTH - 40) as f64 / CHAR_PX) as usize;
    let mut y = 50i32;
    for (i, name) in names.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        area.draw(&Rectangle::new([(10, y), (22, y + 12)], color.filled())).map_err(err)?;
        for line in wrap(name, max_chars) {
            area.draw(&Text::new(line, (30, y), ("sans-serif", FONT).into_font().color(&BLACK))).map_err(err)?;
            y += LINE as i32;
        }
        y += 6;
    }
    Ok(())
}

/// Grouped bars: one group per category, one bar per series, each with its
/// error bar when it has an interval.
pub fn bars(path: &Path, title: &str, y_label: &str, categories: &[String], series: &[Series]) -> Result<(), String> {
    let n = categories.len().max(1);
    let chart_width = WIDTH - LEGEND_WIDTH;
    // The plotting area is the chart less the y labels (70) and margins (20).
    let group_px = (chart_width - 90) as f64 / n as f64;
    let max_chars = ((group_px - 4.0) / CHAR_PX).floor().max(1.0) as usize;
    let labels: Vec<Vec<String>> = categories.iter().map(|c| wrap(c, max_chars)).collect();
    let lines = labels.iter().map(Vec::len).max().unwrap_or(1).max(1) as u32;
    let label_area = 16 + LINE * lines;
    let root = SVGBackend::new(path, (WIDTH, HEIGHT + label_area)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let (chart_area, legend_area) = root.split_horizontally(chart_width);
    let (ymin, ymax) = y_range(series);
    let mut chart = ChartBuilder::on(&chart_area)
        .caption(title, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(label_area)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..n as f64, ymin..ymax)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .x_label_formatter(&|_| String::new())
        .y_desc(y_label)
        .draw()
        .map_err(err)?;
    let k = series.len().max(1) as f64;
    for (si, s) in series.iter().enumerate() {
        let color = COLORS[si % COLORS.len()];
        let placed: Vec<(f64, Bar)> = s
            .bars
            .iter()
            .enumerate()
            .filter_map(|(i, b)| b.map(|b| (i as f64 + 0.1 + 0.8 * si as f64 / k, b)))
            .collect();
        let width = 0.8 / k;
        chart
            .draw_series(
                placed.iter().map(|&(x0, b)| Rectangle::new([(x0, 0.0), (x0 + width, b.value)], color.filled())),
            )
            .map_err(err)?;
        let whiskers = placed.iter().filter_map(|&(x0, b)| b.interval.map(|(lo, hi)| (x0 + width / 2.0, lo, hi)));
        for (x, lo, hi) in whiskers {
            let cap = width * 0.3;
            for segment in [[(x, lo), (x, hi)], [(x - cap, lo), (x + cap, lo)], [(x - cap, hi), (x + cap, hi)]] {
                chart
                    .draw_series(std::iter::once(PathElement::new(segment.to_vec(), BLACK.stroke_width(1))))
                    .map_err(err)?;
            }
        }
    }
    let style = ("sans-serif", FONT).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Top));
    for (i, label) in labels.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(i as f64 + 0.5, ymin));
        for (l, line) in label.iter().enumerate() {
            chart_area
                .draw(&Text::new(line.clone(), (x, y + 8 + (l as u32 * LINE) as i32), style.clone()))
                .map_err(err)?;
        }
    }
    legend(&legend_area, &series.iter().map(|s| s.name.as_str()).collect::<Vec<_>>())?;
    root.present().map_err(err)
}

/// Lines of (x, y) points; x on a log10 scale.
pub fn lines(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<(), String> {
    let root = SVGBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let (chart_area, legend_area) = root.split_horizontally(WIDTH - LEGEND_WIDTH);
    let pts = series.iter().flat_map(|(_, p)| p.iter());
    let (mut xmin, mut xmax, mut ymax) = (f64::MAX, f64::MIN, 0f64);
    for &(x, y) in pts {
        xmin = xmin.min(x.max(1.0));
        xmax = xmax.max(x.max(1.0));
        ymax = ymax.max(y);
    }
    if xmin > xmax {
        (xmin, xmax) = (1.0, 10.0);
    }
    let mut chart = ChartBuilder::on(&chart_area)
        .caption(title, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d((xmin * 0.8..xmax * 1.25).log_scale(), 0f64..(ymax * 1.1).max(1e-9))
        .map_err(err)?;
    chart.configure_mesh().x_desc(x_label).y_desc(y_label).draw().map_err(err)?;
    for (si, (_, p)) in series.iter().enumerate() {
        let color = COLORS[si % COLORS.len()];
        let p: Vec<(f64, f64)> = p.iter().map(|&(x, y)| (x.max(1.0), y)).collect();
        chart.draw_series(LineSeries::new(p.clone(), color.stroke_width(2))).map_err(err)?;
        chart.draw_series(p.into_iter().map(|xy| Circle::new(xy, 3, color.filled()))).map_err(err)?;
    }
    legend(&legend_area, &series.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>())?;
    root.present().map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_splits_at_spaces_and_cuts_long_words() {
        assert_eq!(wrap("tmpfs bs=4k jobs=1", 8), ["tmpfs", "bs=4k", "jobs=1"]);
        assert_eq!(wrap("tmpfs bs=4k jobs=1", 12), ["tmpfs bs=4k", "jobs=1"]);
        assert_eq!(wrap("uretprobe", 4), ["uret", "prob", "e"]);
        assert_eq!(wrap("", 4), Vec::<String>::new());
    }

    #[test]
    fn y_range_holds_intervals_below_zero() {
        let s = [Series { name: "a".into(), bars: vec![Some(Bar { value: 2.0, interval: Some((-1.0, 3.0)) }), None] }];
        let (lo, hi) = y_range(&s);
        assert!(lo < -1.0 && hi > 3.0, "{lo} {hi}");
        let s = [Series { name: "a".into(), bars: vec![Some(Bar::plain(5.0))] }];
        assert_eq!(y_range(&s).0, 0.0);
    }
}

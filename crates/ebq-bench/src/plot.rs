//! SVG plots (plotters, SVG backend only): grouped or stacked bars per
//! category, and lines over a log-scaled x axis.

use plotters::prelude::*;
use std::path::Path;

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

/// Bars per category: one bar per series side by side, or stacked.
/// Missing values (unsupported) are left out.
pub fn bars(
    path: &Path,
    title: &str,
    y_label: &str,
    categories: &[String],
    series: &[(String, Vec<Option<f64>>)],
    stacked: bool,
) -> Result<(), String> {
    let n = categories.len().max(1);
    let width = (120 + 70 * n as u32).max(640);
    let root = SVGBackend::new(path, (width, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let ymax = (0..n)
        .map(|i| {
            let vals = series.iter().filter_map(|(_, v)| v.get(i).copied().flatten()).map(|x| x.max(0.0));
            if stacked {
                vals.sum::<f64>()
            } else {
                vals.fold(0.0, f64::max)
            }
        })
        .fold(0.0, f64::max)
        .max(1e-9)
        * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(90)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..n as f64, 0f64..ymax)
        .map_err(err)?;
    let cats = categories.to_vec();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&|x| {
            let i = x.floor() as usize;
            if (x - x.floor() - 0.5).abs() < 0.01 || x.fract() == 0.0 {
                cats.get(i).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .x_label_style(("sans-serif", 12).into_font().transform(FontTransform::Rotate90))
        .y_desc(y_label)
        .draw()
        .map_err(err)?;
    let k = series.len().max(1) as f64;
    for (si, (name, vals)) in series.iter().enumerate() {
        let color = COLORS[si % COLORS.len()];
        let rects: Vec<Rectangle<(f64, f64)>> = vals
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| (i, v.max(0.0))))
            .map(|(i, v)| {
                if stacked {
                    let below: f64 =
                        series[..si].iter().filter_map(|(_, s)| s.get(i).copied().flatten()).map(|x| x.max(0.0)).sum();
                    Rectangle::new([(i as f64 + 0.15, below), (i as f64 + 0.85, below + v)], color.filled())
                } else {
                    let x0 = i as f64 + 0.1 + 0.8 * si as f64 / k;
                    Rectangle::new([(x0, 0.0), (x0 + 0.8 / k, v)], color.filled())
                }
            })
            .collect();
        chart
            .draw_series(rects)
            .map_err(err)?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(err)?;
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
    let root = SVGBackend::new(path, (800, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
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
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((xmin * 0.8..xmax * 1.25).log_scale(), 0f64..(ymax * 1.1).max(1e-9))
        .map_err(err)?;
    chart.configure_mesh().x_desc(x_label).y_desc(y_label).draw().map_err(err)?;
    for (si, (name, p)) in series.iter().enumerate() {
        let color = COLORS[si % COLORS.len()];
        let p: Vec<(f64, f64)> = p.iter().map(|&(x, y)| (x.max(1.0), y)).collect();
        chart
            .draw_series(LineSeries::new(p.clone(), color.stroke_width(2)))
            .map_err(err)?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], color.stroke_width(2)));
        chart.draw_series(p.into_iter().map(|xy| Circle::new(xy, 3, color.filled()))).map_err(err)?;
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(err)?;
    root.present().map_err(err)
}

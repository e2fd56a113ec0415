//! The bench plots read at 1200 px (issue 39 item 3): `ebq bench render`
//! redraws every plot from the committed `bench/results/results.json`, and
//! headless Chromium lays each one out in a 1200-px window. A script in the
//! page reports every drawn element's box, and the test checks on those
//! boxes, not on the SVG's text:
//! - the figure fits: nothing is right of the SVG, and the SVG is ≤ 1200 px;
//! - a legend: each bar or line colour has a swatch in the legend panel,
//!   right of every bar;
//! - a label on every group, under it: the labels, read left to right, are
//!   the categories of the study, and no text overlaps a bar;
//! - error bars: a stage plot has three strokes (the bar and its caps) per
//!   bar whose table cell prints `±`.

use crate::common::ebq_bin;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The width of the legend panel's left edge (`plot::WIDTH - LEGEND_WIDTH`).
const LEGEND_LEFT: f64 = 960.0;

/// Collects every drawn element's box into `<pre id="boxes">` as JSON.
const MEASURE: &str = r#"<script>
const out = [];
for (const e of document.querySelectorAll('svg, svg *')) {
  if (!['svg','rect','text','polyline','line','circle','path'].includes(e.tagName)) continue;
  const r = e.getBoundingClientRect();
  out.push({tag: e.tagName, left: r.left, top: r.top, right: r.right, bottom: r.bottom,
            fill: e.getAttribute('fill') || '', stroke: e.getAttribute('stroke') || '',
            text: e.tagName === 'text' ? e.textContent : ''});
}
const pre = document.createElement('pre'); pre.id = 'boxes';
pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
</script>"#;

/// One drawn element, as Chromium laid it out.
#[derive(Debug)]
struct Drawn {
    tag: String,
    left: f64,
    top: f64,
    right: f64,
    bottom: f64,
    fill: String,
    stroke: String,
    text: String,
}

impl Drawn {
    fn overlaps(&self, o: &Drawn) -> bool {
        self.left < o.right - 1.0 && o.left < self.right - 1.0 && self.top < o.bottom - 1.0 && o.top < self.bottom - 1.0
    }
}

/// Lays `svg` out in a 1200-px headless Chromium window and returns its elements.
fn layout(svg: &Path) -> Vec<Drawn> {
    let page = svg.with_extension("html");
    let body = std::fs::read_to_string(svg).unwrap();
    let body = body.trim_start_matches(|c| c != '<').splitn(2, "?>").last().unwrap().to_string();
    std::fs::write(&page, format!("<html><body style=\"margin:0\">{body}{MEASURE}</body></html>")).unwrap();
    let dom = Command::new("chromium")
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--window-size=1200,900", "--dump-dom"])
        .arg(format!("--user-data-dir={}", svg.with_extension("chromium").display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium (scripts/setup.sh installs it)");
    let dom = String::from_utf8_lossy(&dom.stdout);
    let json = dom.split("<pre id=\"boxes\">").nth(1).and_then(|s| s.split("</pre>").next());
    let json = json.unwrap_or_else(|| panic!("{}: no boxes in the page: {dom}", svg.display()));
    let json = json.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&amp;", "&");
    let all: Vec<Value> = serde_json::from_str(&json).unwrap();
    let s = |v: &Value, k: &str| v[k].as_str().unwrap_or("").to_string();
    let f = |v: &Value, k: &str| v[k].as_f64().unwrap();
    all.iter()
        .map(|v| Drawn {
            tag: s(v, "tag"),
            left: f(v, "left"),
            top: f(v, "top"),
            right: f(v, "right"),
            bottom: f(v, "bottom"),
            fill: s(v, "fill").to_uppercase(),
            stroke: s(v, "stroke").to_uppercase(),
            text: s(v, "text"),
        })
        .collect()
}

/// The colours plotted for data (bars, line strokes), not frame or text.
fn is_data_colour(c: &str) -> bool {
    !c.is_empty() && !["#FFFFFF", "#000000", "NONE", "WHITE", "BLACK"].contains(&c)
}

/// Checks the properties every plot shares; returns the bars (data-coloured
/// rectangles left of the legend).
fn check_common<'a>(name: &str, drawn: &'a [Drawn]) -> Vec<&'a Drawn> {
    let svg = drawn.iter().find(|d| d.tag == "svg").expect("an svg element");
    assert!(svg.right <= 1200.0, "{name}: {} px wide does not fit 1200 px", svg.right);
    for d in drawn {
        assert!(d.right <= svg.right + 0.5 && d.left >= -0.5, "{name}: {d:?} is outside the figure ({} px)", svg.right);
    }
    let bars: Vec<&Drawn> =
        drawn.iter().filter(|d| d.tag == "rect" && is_data_colour(&d.fill) && d.left < LEGEND_LEFT).collect();
    let swatches: BTreeSet<&str> = drawn
        .iter()
        .filter(|d| d.tag == "rect" && d.left >= LEGEND_LEFT && is_data_colour(&d.fill))
        .map(|d| d.fill.as_str())
        .collect();
    let strokes = drawn.iter().filter(|d| d.tag == "polyline" && is_data_colour(&d.stroke)).map(|d| d.stroke.as_str());
    let plotted: BTreeSet<&str> = bars.iter().map(|d| d.fill.as_str()).chain(strokes).collect();
    assert!(!plotted.is_empty(), "{name}: nothing plotted");
    assert!(plotted.is_subset(&swatches), "{name}: colours {plotted:?} but legend swatches {swatches:?}");
    for b in &bars {
        assert!(b.right <= LEGEND_LEFT, "{name}: a bar reaches into the legend: {b:?}");
    }
    for t in drawn.iter().filter(|d| d.tag == "text") {
        let hit = bars.iter().find(|b| t.overlaps(b));
        assert!(hit.is_none(), "{name}: text {:?} is drawn over a bar {hit:?}", t.text);
    }
    let texts: Vec<&Drawn> = drawn.iter().filter(|d| d.tag == "text" && !d.text.trim().is_empty()).collect();
    for (i, a) in texts.iter().enumerate() {
        let hit = texts[i + 1..].iter().find(|b| a.overlaps(b));
        assert!(hit.is_none(), "{name}: texts overlap: {a:?} and {hit:?}");
    }
    bars
}

/// The group labels under the bars, left to right, with their spaces
/// removed (a label is wrapped, and a long word cut, to its group's width):
/// the lines of one label share its centre and are joined top to bottom.
fn group_labels(drawn: &[Drawn], bars: &[&Drawn]) -> Vec<String> {
    let floor = bars.iter().map(|b| b.bottom).fold(0.0, f64::max);
    // The y axis's tick labels end left of the first bar; a group's label is centred on its group.
    let first_bar = bars.iter().map(|b| b.left).fold(f64::MAX, f64::min);
    let centre = |d: &Drawn| (d.left + d.right) / 2.0;
    let mut texts: Vec<&Drawn> = drawn
        .iter()
        .filter(|d| d.tag == "text" && d.top > floor && d.right <= LEGEND_LEFT && centre(d) > first_bar)
        .collect();
    texts.sort_by(|a, b| centre(a).total_cmp(&centre(b)).then(a.top.total_cmp(&b.top)));
    let mut labels: Vec<(f64, Vec<&Drawn>)> = vec![];
    for t in texts {
        match labels.last_mut() {
            Some((c, lines)) if (centre(t) - *c).abs() < 2.0 => lines.push(t),
            _ => labels.push((centre(t), vec![t])),
        }
    }
    labels
        .into_iter()
        .map(|(_, mut lines)| {
            lines.sort_by(|a, b| a.top.total_cmp(&b.top));
            lines.iter().map(|l| l.text.split_whitespace().collect::<String>()).collect()
        })
        .collect()
}

fn strings(v: &Value, list: &str, key: &str) -> Vec<String> {
    v[list].as_array().unwrap().iter().map(|x| x[key].as_str().unwrap().to_string()).collect()
}

/// Bars of a stage plot whose estimate has an interval.
fn intervals(stages: &Value, key: &str) -> usize {
    let ws = stages["workloads"].as_array().unwrap();
    ws.iter()
        .flat_map(|w| w[key].as_object().unwrap().values())
        .filter(|e| e["lo"].is_f64() && e["hi"].is_f64())
        .count()
}

fn redraw() -> (PathBuf, Value) {
    let out = std::env::temp_dir().join(format!("ebq-plots-test.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let results = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/results/results.json");
    std::fs::copy(&results, out.join("results.json")).unwrap();
    let status = Command::new(ebq_bin()).args(["bench", "render", "--out"]).arg(&out).status().expect("ebq runs");
    assert!(status.success(), "ebq bench render failed");
    let all: Value = serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
    (out, all)
}

#[test]
fn every_bench_plot_has_a_legend_labelled_groups_error_bars_and_fits_1200_px() {
    let (out, all) = redraw();
    let stage_names = strings(&all["stages"], "workloads", "workload");
    let grouped = [
        ("stages.svg", stage_names.clone(), Some("overhead_ci")),
        ("stages-cpu.svg", stage_names.clone(), Some("cpu_added_ns")),
        ("stages-aggregate.svg", stage_names, None),
        ("pervent.svg", strings(&all["pervent"], "experiments", "id"), None),
        ("startup.svg", strings(&all["startup"], "results", "tool"), None),
    ];
    for (name, categories, with_intervals) in grouped {
        let drawn = layout(&out.join(name));
        let bars = check_common(name, &drawn);
        let categories: Vec<String> = categories.iter().map(|c| c.replace(' ', "")).collect();
        assert_eq!(group_labels(&drawn, &bars), categories, "{name}: group labels, left to right");
        if let Some(key) = with_intervals {
            let strokes = drawn.iter().filter(|d| d.tag == "polyline" && d.stroke == "#000000").count();
            let want = 3 * intervals(&all["stages"], key);
            assert!(want > 0 && strokes >= want, "{name}: {strokes} error-bar strokes for {want}");
        }
    }
    let drawn = layout(&out.join("fidelity.svg"));
    check_common("fidelity.svg", &drawn);
    let _ = std::fs::remove_dir_all(out);
}

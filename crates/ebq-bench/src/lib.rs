//! `ebq bench`: the seed papers' measurement studies as one command each,
//! ebq side by side with bpftrace (and hand-written libbpf C where it matters).
//!
//! - `pervent`: Gregg's per-event cost on `dd bs=1` pinned to one CPU.
//! - `attach`: pervent's system-call shapes on classic vs raw tracepoints.
//! - `stages`: IOTracer's six-stage dissection with fio.
//! - `fidelity`: events issued vs delivered vs reported dropped; a pread64
//!   burst through every output format at ebq's defaults.
//! - `startup`: query text → attached (object cache hit, and `--no-cache`), bundle → attached, bpftrace → attached.
//! - `sinks`: each sink's encoding cost per row on synthetic batches (no root).
//! - `report`: `ebq report io` against bare fio, its hand-written floor and
//!   Darshan, in interleaved rounds.
//! - `always-on`: the shipped `deploy/ebq.toml` under `ebq serve` for 10
//!   minutes beside fio and a `dd bs=1` loop: their loss, ebq's CPU and RSS,
//!   each query's in-BPF time from `/metrics`.
//! - `render`: only regenerates the report and the plots from `results.json`.
//!
//! Every study merges its section into `OUT/results.json`, prints a table,
//! draws SVG plots into OUT, and regenerates the Markdown report.
//!
//! A library of its own so the `ebq` binary stays the query tool: the CLI
//! only parses `ebq bench …` into [`BenchArgs`] and calls [`run`]. The studies
//! run ebq as a separate process (this same executable, `current_exe`), as a
//! user would, so their costs include ebq's own startup and reader.

mod alwayson;
mod attach;
mod fidelity;
mod fio;
mod inbpf;
mod ioreport;
mod pervent;
mod plot;
mod proc;
mod reader;
mod reference;
mod report;
mod sinks;
mod stages;
mod startup;
mod stats;
mod table;

use clap::{Args, ValueEnum};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Which study to run.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum Study {
    /// Per-event cost (Gregg) on dd bs=1.
    Pervent,
    /// pervent's system-call shapes on classic vs raw tracepoints, and the
    /// cost on untraced system calls.
    Attach,
    /// Six-stage overhead dissection with fio.
    Stages,
    /// Events issued vs delivered vs dropped; tracer CPU and RSS.
    Fidelity,
    /// Time to attached: query text (cache hit, --no-cache), AOT bundle, bpftrace.
    Startup,
    /// Each sink's encoding CPU per row (terminal, Parquet, CSV, Kafka's
    /// arrow and JSON) on synthetic batches; needs no root.
    Sinks,
    /// `ebq report io` vs bare fio, its hand-written floor (the kernel
    /// fold's minimum) and Darshan (with DARSHAN_PREFIX), in interleaved
    /// rounds (--runs) at 4 KiB and 64 KiB, psync and io_uring.
    Report,
    /// The shipped deploy/ebq.toml under `ebq serve` for 10 minutes (--quick:
    /// 12 s) beside fio 4 KiB psync randread and a `dd bs=1` loop: the
    /// workloads' loss against bare runs before and after, ebq's CPU and RSS,
    /// each query's in-BPF time from its /metrics.
    #[value(name = "always-on")]
    AlwaysOn,
    /// pervent, stages, fidelity, startup and sinks, then the report.
    All,
    /// Only regenerate the Markdown report and the plots from OUT/results.json.
    Render,
    /// The paced read workload of `fidelity` (internal).
    #[value(hide = true)]
    Reader,
    /// The pread64 burst workload of `fidelity` (internal; --reads calls).
    #[value(hide = true)]
    Burst,
}

/// `ebq bench` options.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// The study.
    #[arg(value_enum)]
    study: Study,
    /// pervent: read(2) calls per dd run (default 1000000; --quick 20000).
    /// sinks: rows (default 200000; --quick 20000).
    #[arg(long)]
    count: Option<u64>,
    /// Timed runs per measurement; the fastest counts (default 3; --quick 1).
    /// report: interleaved rounds (default 3; --quick 1).
    #[arg(long)]
    runs: Option<usize>,
    /// Much smaller sizes (a smoke test of the outputs, not a measurement).
    #[arg(long)]
    quick: bool,
    /// Results directory: results.json, *.svg, RESULTS.md.
    #[arg(long, default_value = "bench/results")]
    out: PathBuf,
    /// Also write the Markdown report here (e.g. bench/RESULTS.md).
    #[arg(long, value_name = "FILE")]
    md: Option<PathBuf>,
    /// CPU the workload is pinned to (tracers run on another one).
    #[arg(long, default_value_t = 0)]
    cpu: usize,
    /// The bpftrace binary.
    #[arg(long, default_value = "bpftrace")]
    bpftrace: String,
    /// pervent: only these experiments (comma-separated ids, e.g.
    /// key_pid,file_inode); the bare trigger always runs, as the floor the
    /// added costs are measured over. fidelity: `burst` runs only the pread64
    /// burst through every output format.
    #[arg(long, value_delimiter = ',', value_name = "IDS")]
    only: Vec<String>,
    /// reader: read(2) calls to issue.
    #[arg(long, hide = true, default_value_t = 0)]
    reads: u64,
    /// reader: calls per second (0: as fast as possible).
    #[arg(long, hide = true, default_value_t = 0)]
    rate: u64,
}

/// What every study needs.
pub(crate) struct Ctx {
    /// Quick (smoke-test) sizes.
    pub quick: bool,
    /// dd reads per run (pervent).
    pub count: u64,
    /// Timed runs per measurement.
    pub runs: usize,
    /// Results directory.
    pub out: PathBuf,
    /// Scratch directory for tracer outputs (inside `out`, removed at the end).
    pub scratch: PathBuf,
    /// The workload's CPU.
    pub cpu: usize,
    /// The tracers' CPU.
    pub tracer_cpu: usize,
    /// This ebq binary.
    pub ebq: String,
    /// The bpftrace binary.
    pub bpftrace: String,
    /// pervent: the experiments to run (empty: all, or the quick set).
    pub only: Vec<String>,
}

impl Ctx {
    /// An ebq command line (the binary followed by `args`).
    pub fn ebq_argv(&self, args: &[&str]) -> Vec<String> {
        std::iter::once(self.ebq.clone()).chain(args.iter().map(|s| s.to_string())).collect()
    }
}

/// Runs `ebq bench …`.
pub fn run(args: BenchArgs) -> Result<ExitCode, String> {
    if args.study == Study::Reader {
        return reader::run(args.reads, args.rate).map(|_| ExitCode::SUCCESS);
    }
    if args.study == Study::Burst {
        return reader::burst(args.reads).map(|_| ExitCode::SUCCESS);
    }
    std::fs::create_dir_all(&args.out).map_err(|e| format!("error: cannot create {}: {e}", args.out.display()))?;
    let md = args.md.clone().unwrap_or_else(|| args.out.join("RESULTS.md"));
    if args.study == Study::Render {
        return write_report(&args.out, &md).map(|_| ExitCode::SUCCESS);
    }
    // SAFETY: geteuid has no preconditions.
    if args.study != Study::Sinks && unsafe { libc::geteuid() } != 0 {
        return Err("error: ebq bench loads BPF programs: run it as root".into());
    }
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    if args.cpu >= ncpu {
        return Err(format!("error: --cpu {} but this machine has {ncpu} CPUs", args.cpu));
    }
    let tracer_cpu = if ncpu > 1 { usize::from(args.cpu == 0) } else { 0 };
    let ebq = std::env::current_exe().map_err(|e| format!("error: {e}"))?.display().to_string();
    let scratch = args.out.join("scratch");
    std::fs::create_dir_all(&scratch).map_err(|e| format!("error: {}: {e}", scratch.display()))?;
    let ctx = Ctx {
        quick: args.quick,
        count: args.count.unwrap_or(if args.quick { 20_000 } else { 1_000_000 }),
        runs: args.runs.unwrap_or(if args.quick { 1 } else { 3 }),
        out: args.out.clone(),
        scratch: scratch.clone(),
        cpu: args.cpu,
        tracer_cpu,
        ebq,
        bpftrace: args.bpftrace.clone(),
        only: args.only.clone(),
    };
    let studies: &[Study] = match args.study {
        Study::All => &[Study::Pervent, Study::Stages, Study::Fidelity, Study::Startup, Study::Sinks],
        ref s => std::slice::from_ref(s),
    };
    for &s in studies {
        let started = report::now_utc();
        let load_before = report::loadavg();
        let t0 = std::time::Instant::now();
        eprintln!("ebq bench: {} (load {load_before})", name(s));
        let mut section = match s {
            Study::Pervent => pervent::run(&ctx)?,
            Study::Attach => attach::run(&ctx)?,
            Study::Stages => stages::run(&ctx)?,
            Study::Fidelity => fidelity::run(&ctx)?,
            Study::Startup => startup::run(&ctx)?,
            Study::Report => ioreport::run(&ctx)?,
            Study::AlwaysOn => alwayson::run(&ctx)?,
            Study::Sinks => {
                sinks::run(&ctx, args.count.map_or(if ctx.quick { 20_000 } else { 200_000 }, |c| c as usize))?
            }
            _ => unreachable!(),
        };
        section["run"] = json!({
            "started_utc": started,
            "seconds": t0.elapsed().as_secs_f64(),
            "load_before": load_before,
            "load_after": report::loadavg(),
            "quick": ctx.quick,
            "command": std::env::args().collect::<Vec<_>>().join(" "),
        });
        merge(&ctx.out, name(s), section)?;
    }
    let _ = std::fs::remove_dir_all(&scratch);
    write_report(&ctx.out, &md)?;
    eprintln!("ebq bench: results in {} ({}, plots *.svg), report {}", ctx.out.display(), RESULTS, md.display());
    Ok(ExitCode::SUCCESS)
}

/// The results file inside the results directory.
pub(crate) const RESULTS: &str = "results.json";

fn name(s: Study) -> &'static str {
    match s {
        Study::Pervent => "pervent",
        Study::Attach => "attach",
        Study::Stages => "stages",
        Study::Fidelity => "fidelity",
        Study::Startup => "startup",
        Study::Sinks => "sinks",
        Study::Report => "report",
        Study::AlwaysOn => "always_on",
        Study::All => "all",
        Study::Render => "render",
        Study::Reader => "reader",
        Study::Burst => "burst",
    }
}

/// Replaces one study's section of `results.json` (other studies' results stay).
fn merge(out: &Path, key: &str, section: Value) -> Result<(), String> {
    let path = out.join(RESULTS);
    let mut all = std::fs::read_to_string(&path)
        .ok()
        .and_then(|s| serde_json::from_str::<Value>(&s).ok())
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    all[key] = section;
    all["machine"] = report::machine();
    let text = serde_json::to_string_pretty(&all).map_err(|e| e.to_string())?;
    std::fs::write(&path, text + "\n").map_err(|e| format!("error: cannot write {}: {e}", path.display()))
}

fn write_report(out: &Path, md: &Path) -> Result<(), String> {
    let path = out.join(RESULTS);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("error: cannot read {}: {e}", path.display()))?;
    let all: Value = serde_json::from_str(&text).map_err(|e| format!("error: {}: {e}", path.display()))?;
    std::fs::write(md, report::markdown(&all)).map_err(|e| format!("error: cannot write {}: {e}", md.display()))?;
    draw_plots(out, &all)
}

/// A study's plotter: draws its section of a results.json into a directory.
type Draw = fn(&Path, &Value) -> Result<(), String>;

/// Redraws every study's plot present in `all` (a results.json) into `out`.
fn draw_plots(out: &Path, all: &Value) -> Result<(), String> {
    let draws: [(&str, Draw); 5] = [
        ("pervent", pervent::plot_section),
        ("stages", stages::plot_section),
        ("fidelity", fidelity::plot_section),
        ("startup", startup::plot_section),
        ("report", ioreport::plot_section),
    ];
    for (study, draw) in draws {
        if all.get(study).is_some_and(|s| !s.is_null()) {
            draw(out, &all[study])?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! Every bench plot, drawn from fixed numbers (the committed
    //! `bench/results/results.json` and a fixed `report` section), read back
    //! from its SVG: it fits its width, its legend names every series drawn,
    //! and every group is labelled under its bars (issue 39 item 3).

    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    /// One SVG element: its tag, attributes and text.
    struct El {
        tag: String,
        attrs: BTreeMap<String, String>,
        text: String,
    }

    impl El {
        fn f(&self, k: &str) -> f64 {
            self.attrs.get(k).and_then(|v| v.parse().ok()).unwrap_or(0.0)
        }

        /// The horizontal extent: a text's from its characters, size and anchor.
        fn x_extent(&self) -> (f64, f64) {
            match self.tag.as_str() {
                "rect" => (self.f("x"), self.f("x") + self.f("width")),
                "circle" => (self.f("cx") - self.f("r"), self.f("cx") + self.f("r")),
                "polyline" => {
                    let xs: Vec<f64> = self.attrs["points"]
                        .split_whitespace()
                        .filter_map(|p| p.split(',').next()?.parse().ok())
                        .collect();
                    (xs.iter().copied().fold(f64::MAX, f64::min), xs.iter().copied().fold(f64::MIN, f64::max))
                }
                // A y axis's title, turned upright: one line's height wide.
                "text" if self.attrs.get("transform").is_some_and(|t| t.starts_with("rotate(")) => {
                    (self.f("x"), self.f("x") + self.f("font-size"))
                }
                "text" => {
                    let w = self.text.chars().count() as f64 * self.f("font-size") * 0.6;
                    let x = self.f("x");
                    match self.attrs.get("text-anchor").map(String::as_str) {
                        Some("middle") => (x - w / 2.0, x + w / 2.0),
                        Some("end") => (x - w, x),
                        _ => (x, x + w),
                    }
                }
                _ => (0.0, 0.0),
            }
        }
    }

    fn parse_svg(svg: &str) -> Vec<El> {
        let mut out = vec![];
        for chunk in svg.split('<').skip(1) {
            let (tag_part, rest) = chunk.split_once('>').unwrap_or((chunk, ""));
            if tag_part.starts_with('/') {
                continue;
            }
            let tag = tag_part.split_whitespace().next().unwrap_or("").trim_end_matches('/').to_string();
            let mut attrs = BTreeMap::new();
            let body = tag_part.trim_start().get(tag.len()..).unwrap_or("");
            for a in body.split('"').collect::<Vec<_>>().chunks(2) {
                if let [k, v] = a {
                    attrs.insert(k.trim().trim_end_matches('=').to_string(), v.to_string());
                }
            }
            out.push(El { tag, attrs, text: rest.trim().to_string() });
        }
        out
    }

    fn data_colour(c: Option<&String>) -> Option<&str> {
        c.map(String::as_str).filter(|c| !["#FFFFFF", "#000000", "none"].contains(c))
    }

    /// Checks one plot; `categories`: its group labels, left to right (None: a line plot).
    fn check(name: &str, svg: &str, categories: Option<&[String]>, legend_names: &[&str]) {
        let els = parse_svg(svg);
        let width = els[0].f("width");
        assert!(els[0].tag == "svg" && width > 0.0 && width <= plot::WIDTH as f64, "{name}: width {width}");
        for e in &els {
            let (l, r) = e.x_extent();
            assert!(
                l >= -0.5 && r <= width + 0.5,
                "{name}: {} {:?} {:?} spans {l}..{r} of {width}",
                e.tag,
                e.attrs,
                e.text
            );
        }
        let legend_left = width - 200.0;
        let left = |e: &El| e.x_extent().0 < legend_left;
        fn fill(e: &El) -> Option<&str> {
            data_colour(e.attrs.get("fill"))
        }
        let bars: Vec<&El> = els.iter().filter(|e| e.tag == "rect" && left(e) && fill(e).is_some()).collect();
        let swatches: BTreeSet<&str> =
            els.iter().filter(|e| e.tag == "rect" && !left(e)).filter_map(|e| fill(e)).collect();
        let strokes = els.iter().filter(|e| e.tag == "polyline").filter_map(|e| data_colour(e.attrs.get("stroke")));
        let drawn: BTreeSet<&str> = bars.iter().filter_map(|e| fill(e)).chain(strokes).collect();
        assert!(!drawn.is_empty() && drawn.is_subset(&swatches), "{name}: drawn {drawn:?}, legend {swatches:?}");
        let legend: String =
            els.iter().filter(|e| e.tag == "text" && !left(e)).map(|e| e.text.replace(' ', "")).collect();
        for n in legend_names {
            assert!(legend.contains(&n.replace(' ', "")), "{name}: legend {legend:?} lacks {n:?}");
        }
        let Some(categories) = categories else { return };
        let floor = bars.iter().map(|b| b.f("y") + b.f("height")).fold(0.0, f64::max);
        let first = bars.iter().map(|b| b.f("x")).fold(f64::MAX, f64::min);
        let mut groups: BTreeMap<i64, Vec<(f64, String)>> = BTreeMap::new();
        for t in els.iter().filter(|e| e.tag == "text" && left(e) && e.f("y") > floor && e.f("x") > first) {
            groups.entry(t.f("x") as i64).or_default().push((t.f("y"), t.text.replace(' ', "")));
        }
        let labels: Vec<String> = groups
            .into_values()
            .map(|mut lines| {
                lines.sort_by(|a, b| a.0.total_cmp(&b.0));
                lines.into_iter().map(|(_, t)| t).collect()
            })
            .collect();
        let want: Vec<String> = categories.iter().map(|c| c.replace(' ', "")).collect();
        assert_eq!(labels, want, "{name}: group labels, left to right");
    }

    fn fixed_report() -> Value {
        let est = |m: f64| json!({"median": m, "lo": m - 0.05, "hi": m + 0.04, "n": 3});
        let w = |id: &str, r: f64| json!({"workload": id, "ratios": {"report/bare": est(r), "floor/bare": est(r + 0.1), "darshan/bare": est(r + 0.05)}});
        json!({"workloads": [w("4k psync", 0.7), w("4k io_uring", 0.8), w("64k psync", 0.9), w("64k io_uring", 0.95)]})
    }

    #[test]
    fn every_plot_fits_its_width_names_its_series_and_labels_every_group() {
        let mut all: Value = serde_json::from_str(include_str!("../../../bench/results/results.json")).unwrap();
        all["report"] = fixed_report();
        let out = std::env::temp_dir().join(format!("ebq-bench-plots.{}", std::process::id()));
        std::fs::create_dir_all(&out).unwrap();
        draw_plots(&out, &all).unwrap();
        let ids = |s: &str, list: &str, key: &str| -> Vec<String> {
            all[s][list].as_array().unwrap().iter().map(|x| x[key].as_str().unwrap().to_string()).collect()
        };
        let stages = ids("stages", "workloads", "workload");
        let report = ids("report", "workloads", "workload");
        type Plot<'a> = (&'a str, Option<Vec<String>>, &'a [&'a str]);
        let plots: [Plot; 7] = [
            ("stages.svg", Some(stages.clone()), &stages::STAGES),
            ("stages-cpu.svg", Some(stages.clone()), &stages::STAGES),
            ("stages-aggregate.svg", Some(stages), &["rows (all stages)", "aggregate in kernel"]),
            ("pervent.svg", Some(ids("pervent", "experiments", "id")), &["ebq", "bpftrace"]),
            ("startup.svg", Some(ids("startup", "results", "tool")), &["spawn → attached"]),
            ("fidelity.svg", None, &[]),
            (
                "report.svg",
                Some(report),
                &["report (IOPS % of bare)", "floor (IOPS % of bare)", "darshan (IOPS % of bare)"],
            ),
        ];
        for (name, cats, legend) in plots {
            let svg = std::fs::read_to_string(out.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
            check(name, &svg, cats.as_deref(), legend);
        }
        let _ = std::fs::remove_dir_all(&out);
    }
}

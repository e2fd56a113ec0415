//! `ebq bench report`: `ebq report io` side by side with bare fio, the
//! hand-written floor of its kernel fold (`bench/reference/report_floor.bpf.c`)
//! and Darshan (issue 39 item 3).
//!
//! fio reads at random on tmpfs at 4 KiB and 64 KiB, with the psync and the
//! io_uring engines. Per workload the tools run in interleaved rounds (every
//! tool once per round, forward in even rounds and backward in odd ones, as in
//! `stages`): bare fio; `ebq report io -c 'fio …'` (its report to /dev/null,
//! its stats line read from stderr for the round's loss: dropped + missed);
//! fio under the floor's loader, attached before fio starts; and fio with
//! Darshan's `libdarshan.so` preloaded when `DARSHAN_PREFIX` names a Darshan
//! runtime (skipped with a note otherwise). Each run's figures are fio's own
//! IOPS and the run's wall time (for the report, ebq's whole run: start-up,
//! fio, the report's writing). The ratios are computed within a round, then
//! given as the median over rounds with its interval (see `stats`).

use super::proc::Tracer;
use super::reference::References;
use super::stats::{self, estimate};
use super::{fio, plot, table, Ctx};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The tools, in round order.
pub const TOOLS: [&str; 4] = ["bare", "report", "floor", "darshan"];

/// The ratios of a round (numerator, denominator), on fio's IOPS.
pub const RATIOS: [(&str, &str); 4] = [("report", "floor"), ("report", "bare"), ("floor", "bare"), ("darshan", "bare")];

/// One fio workload: block size and engine.
struct Workload {
    bs: &'static str,
    engine: &'static str,
}

impl Workload {
    fn id(&self) -> String {
        format!("{} {}", self.bs, self.engine)
    }
}

/// fio's sizes: (file size, runtime ms, jobs).
fn sizes(quick: bool) -> (&'static str, u64, u32) {
    if quick {
        ("8M", 300, 1)
    } else {
        ("64M", 4000, 4)
    }
}

/// fio's command line for `w`, its JSON to `json_out`.
fn fio_argv(ctx: &Ctx, dir: &Path, w: &Workload, json_out: &Path) -> Vec<String> {
    let (size, runtime_ms, jobs) = sizes(ctx.quick);
    [
        "fio".to_string(),
        "--name=ebqbench".into(),
        format!("--directory={}", dir.display()),
        "--rw=randread".into(),
        format!("--bs={}", w.bs),
        format!("--ioengine={}", w.engine),
        format!("--size={size}"),
        format!("--numjobs={jobs}"),
        "--time_based".into(),
        format!("--runtime={runtime_ms}ms"),
        "--group_reporting".into(),
        "--clocksource=clock_gettime".into(),
        "--output-format=json".into(),
        format!("--output={}", json_out.display()),
    ]
    .into()
}

/// What one run measured.
#[derive(Debug, Default, Clone)]
struct Run {
    iops: f64,
    wall_s: f64,
    /// ebq's dropped + missed (the report only).
    loss: Option<u64>,
    /// Calls the floor counted (its "map events total").
    calls: Option<u64>,
    /// fio's reads completed.
    ios: f64,
    /// The report's reads of fio's files (POSIX_READS + EBQ_IO_URING_READS).
    counted: Option<u64>,
}

impl Run {
    fn to_json(&self) -> Value {
        let mut v = json!({ "iops": self.iops, "wall_s": self.wall_s, "ios": self.ios });
        if let Some(c) = self.counted {
            v["counted"] = json!(c);
        }
        if let Some(l) = self.loss {
            v["loss"] = json!(l);
        }
        if let Some(c) = self.calls {
            v["calls"] = json!(c);
        }
        v
    }
}

/// fio's read + write IOPS and I/Os from its JSON output file (read as
/// [`fio::parse`] reads fio's stdout).
fn fio_iops(path: &Path) -> Result<(f64, f64), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("error: {}: {e}", path.display()))?;
    let r = fio::parse(&text)?;
    Ok((r.ops, r.ios))
}

/// ebq's loss from its stderr: the `N dropped` and `M missed` of every stats
/// line (`ebq: … events seen, …`), summed; None without a stats line.
pub fn loss(stderr: &str) -> Option<u64> {
    let mut total = None;
    for line in stderr.lines().filter(|l| l.starts_with("ebq: ") && l.contains(" events seen")) {
        let words: Vec<&str> = line.split([' ', ',', ';']).filter(|w| !w.is_empty()).collect();
        for pair in words.windows(2) {
            if matches!(pair[1], "dropped" | "missed") {
                if let Ok(n) = pair[0].parse::<u64>() {
                    total = Some(total.unwrap_or(0) + n);
                }
            }
        }
    }
    total
}

/// The floor's calls counted, from its loader's stderr.
fn floor_calls(stderr: &str) -> Option<u64> {
    stderr.lines().find_map(|l| l.strip_prefix("map events total ")).and_then(|n| n.trim().parse().ok())
}

/// The report's reads of fio's job files (`ebqbench.*`), from its JSON.
fn report_reads(path: &Path) -> Option<u64> {
    let j: Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    let files =
        j["files"].as_array()?.iter().filter(|f| f["file_name"].as_str().is_some_and(|n| n.starts_with("ebqbench.")));
    let reads = |f: &Value| {
        ["POSIX_READS", "EBQ_IO_URING_READS"].iter().filter_map(|k| f["counters"][*k].as_u64()).sum::<u64>()
    };
    Some(files.map(reads).sum())
}

/// Runs `argv` to the end (extra `env`, stdout to `stdout` or nowhere); its wall time and stderr.
fn timed(argv: &[String], env: &[(&str, String)], stdout: Option<&Path>) -> Result<(f64, String), String> {
    let t0 = Instant::now();
    let sink = match stdout {
        Some(p) => Stdio::from(std::fs::File::create(p).map_err(|e| format!("error: {}: {e}", p.display()))?),
        None => Stdio::null(),
    };
    let out = Command::new(&argv[0])
        .args(&argv[1..])
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::null())
        .stdout(sink)
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("error: cannot run {}: {e}", argv[0]))?;
    let wall = t0.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    if !out.status.success() {
        return Err(format!("error: {} failed: {}", argv[0], stderr.lines().last().unwrap_or("").trim()));
    }
    Ok((wall, stderr))
}

/// fio's files are on /dev/shm, under /dev/, which Darshan (and the report,
/// as Darshan does) leaves out by default: both are told to list them.
const INCLUDE_DEV: (&str, &str) = ("DARSHAN_EXCLUDE_DIRS", "none");

/// Where the tools come from: the floor's build, Darshan's library.
struct Tools {
    refs: References,
    darshan: Option<PathBuf>,
}

/// One run of `tool` on `w`.
fn run_one(ctx: &Ctx, tools: &Tools, dir: &Path, w: &Workload, tool: &str) -> Result<Run, String> {
    let json_out = ctx.scratch.join("fio.json");
    let _ = std::fs::remove_file(&json_out);
    let fio = fio_argv(ctx, dir, w, &json_out);
    let mut run = Run::default();
    match tool {
        "bare" => run.wall_s = timed(&fio, &[], None)?.0,
        "report" => {
            let argv = ctx.ebq_argv(&["report", "io", "--format", "json", "-c", &fio.join(" ")]);
            let report = ctx.scratch.join("report.json");
            let (wall, stderr) = timed(&argv, &[(INCLUDE_DEV.0, INCLUDE_DEV.1.to_string())], Some(&report))?;
            run.wall_s = wall;
            run.counted = report_reads(&report);
            run.loss = Some(loss(&stderr).ok_or_else(|| format!("error: ebq report io printed no stats: {stderr}"))?);
        }
        "floor" => {
            let argv = tools.refs.argv("report_floor", Path::new("/dev/null"));
            let settle = Duration::from_millis(20);
            let floor = Tracer::start_settled(&ctx.scratch, "floor", ctx.tracer_cpu, &argv, &[], "attached", settle)?;
            run.wall_s = timed(&fio, &[], None)?.0;
            run.calls = floor_calls(&floor.stop()?.stderr);
        }
        _ => {
            let lib = tools.darshan.as_ref().expect("Darshan runs only when found");
            let env = [
                (INCLUDE_DEV.0, INCLUDE_DEV.1.to_string()),
                ("LD_PRELOAD", lib.display().to_string()),
                ("DARSHAN_ENABLE_NONMPI", "1".to_string()),
                ("DARSHAN_LOGFILE", ctx.scratch.join("darshan.log").display().to_string()),
            ];
            run.wall_s = timed(&fio, &env, None)?.0;
        }
    }
    (run.iops, run.ios) = fio_iops(&json_out)?;
    Ok(run)
}

/// `$DARSHAN_PREFIX/lib/libdarshan.so`, or None (with a note) when unset.
fn darshan() -> Result<Option<PathBuf>, String> {
    let Some(prefix) = std::env::var_os("DARSHAN_PREFIX") else {
        eprintln!("ebq bench report: DARSHAN_PREFIX is not set: Darshan is skipped");
        return Ok(None);
    };
    let lib = PathBuf::from(prefix).join("lib/libdarshan.so");
    if !lib.exists() {
        return Err(format!("error: DARSHAN_PREFIX: no {}", lib.display()));
    }
    Ok(Some(lib))
}

/// Runs the study; returns its results section.
pub fn run(ctx: &Ctx) -> Result<Value, String> {
    let tools = Tools { refs: References::build(ctx)?, darshan: darshan()? };
    let names: Vec<&str> = TOOLS.iter().copied().filter(|t| *t != "darshan" || tools.darshan.is_some()).collect();
    let dir = PathBuf::from("/dev/shm").join(format!("ebq-bench-report.{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("error: {}: {e}", dir.display()))?;
    let workloads: Vec<Workload> = ["4k", "64k"]
        .into_iter()
        .flat_map(|bs| ["psync", "io_uring"].into_iter().map(move |engine| Workload { bs, engine }))
        .collect();
    let result: Result<Vec<Value>, String> = workloads.iter().map(|w| measure(ctx, &tools, &dir, w, &names)).collect();
    let _ = std::fs::remove_dir_all(&dir);
    let (size, runtime_ms, jobs) = sizes(ctx.quick);
    let section = json!({
        "fio": format!(
            "fio --rw=randread --size={size} --numjobs={jobs} --time_based --runtime={runtime_ms}ms \
             --group_reporting --clocksource=clock_gettime on /dev/shm, --bs and --ioengine per workload"
        ),
        "rounds": ctx.runs,
        "tools": names,
        "report_command": "ebq report io --format json -c 'fio …'",
        "floor_program": "bench/reference/report_floor.bpf.c",
        "darshan": tools.darshan.as_ref().map(|p| p.display().to_string()),
        "workloads": result?,
    });
    print!(
        "\nebq report io per round (fio IOPS; ebq's loss = dropped + missed):\n{}",
        table::text(&ROUND_HEADER, &round_rows(&section))
    );
    print!(
        "\nratios of fio's IOPS (median over rounds ± half-width):\n{}",
        table::text(&RATIO_HEADER, &ratio_rows(&section))
    );
    plot_section(&ctx.out, &section)?;
    Ok(section)
}

/// One workload: its rounds, then the ratios' estimates.
fn measure(ctx: &Ctx, tools: &Tools, dir: &Path, w: &Workload, names: &[&str]) -> Result<Value, String> {
    let t0 = Instant::now();
    // Untimed: lays the files out and warms the page cache.
    run_one(ctx, tools, dir, w, "bare")?;
    let mut rounds: Vec<Map<String, Value>> = vec![];
    for round in 0..ctx.runs.max(1) {
        let mut order = names.to_vec();
        if round % 2 == 1 {
            order.reverse();
        }
        let mut r = Map::new();
        for tool in order {
            r.insert(tool.to_string(), run_one(ctx, tools, dir, w, tool)?.to_json());
        }
        rounds.push(r);
    }
    eprintln!("ebq bench report: {} ({} rounds, {:.0} s)", w.id(), rounds.len(), t0.elapsed().as_secs_f64());
    let iops = |r: &Map<String, Value>, t: &str| r.get(t).and_then(|v| v["iops"].as_f64());
    let mut ratios = Map::new();
    for (a, b) in RATIOS {
        let xs: Vec<f64> = rounds.iter().filter_map(|r| Some(iops(r, a)? / iops(r, b)?)).collect();
        ratios.insert(format!("{a}/{b}"), estimate(&xs).map_or(Value::Null, |e| e.to_json()));
    }
    // The report's cost (IOPS lost to it) over the floor's, per round; a
    // round where the floor lost nothing (noise above its cost) has no ratio.
    let lost = |r: &Map<String, Value>, t: &str| Some(1.0 - iops(r, t)? / iops(r, "bare")?);
    let cost: Vec<f64> = rounds
        .iter()
        .filter_map(|r| Some((lost(r, "report")?, lost(r, "floor")?)).filter(|&(_, f)| f > 0.0).map(|(e, f)| e / f))
        .collect();
    ratios.insert("cost report/floor".into(), estimate(&cost).map_or(Value::Null, |e| e.to_json()));
    Ok(json!({ "workload": w.id(), "bs": w.bs, "engine": w.engine, "rounds": rounds, "ratios": ratios }))
}

const ROUND_HEADER: [&str; 9] =
    ["workload", "round", "bare", "report", "floor", "darshan", "report s", "floor s", "report loss"];

fn workloads(section: &Value) -> impl Iterator<Item = &Value> {
    section["workloads"].as_array().into_iter().flatten()
}

/// Rows of the per-round table: IOPS per tool, wall times, the report's loss.
pub fn round_rows(section: &Value) -> Vec<Vec<String>> {
    let mut rows = vec![];
    for w in workloads(section) {
        for (i, r) in w["rounds"].as_array().into_iter().flatten().enumerate() {
            let mut row = vec![w["workload"].as_str().unwrap_or("").to_string(), (i + 1).to_string()];
            for t in TOOLS {
                row.push(table::num(r[t]["iops"].as_f64(), 0));
            }
            row.push(table::num(r["report"]["wall_s"].as_f64(), 2));
            row.push(table::num(r["floor"]["wall_s"].as_f64(), 2));
            row.push(table::num(r["report"]["loss"].as_f64(), 0));
            rows.push(row);
        }
    }
    rows
}

/// Header of [`round_rows`].
pub fn round_header() -> &'static [&'static str] {
    &ROUND_HEADER
}

const RATIO_HEADER: [&str; 6] =
    ["workload", "report/floor", "report/bare", "floor/bare", "darshan/bare", "cost report/floor"];

/// Rows of the ratio table: each ratio's median ± half-width over rounds.
pub fn ratio_rows(section: &Value) -> Vec<Vec<String>> {
    workloads(section)
        .map(|w| {
            let mut row = vec![w["workload"].as_str().unwrap_or("").to_string()];
            row.extend(RATIO_HEADER[1..].iter().map(|k| stats::cell(&w["ratios"][*k], 3)));
            row
        })
        .collect()
}

/// Header of [`ratio_rows`].
pub fn ratio_header() -> &'static [&'static str] {
    &RATIO_HEADER
}

/// Draws `report.svg`: each tool's IOPS as a share of bare fio's, per workload.
pub(crate) fn plot_section(out: &Path, section: &Value) -> Result<(), String> {
    let ws: Vec<&Value> = workloads(section).collect();
    let cats: Vec<String> = ws.iter().map(|w| w["workload"].as_str().unwrap_or("").to_string()).collect();
    let pct = |b: plot::Bar| plot::Bar {
        value: b.value * 100.0,
        interval: b.interval.map(|(lo, hi)| (lo * 100.0, hi * 100.0)),
    };
    let series: Vec<plot::Series> = ["report", "floor", "darshan"]
        .iter()
        .map(|t| plot::Series {
            name: format!("{t} (IOPS % of bare)"),
            bars: ws.iter().map(|w| plot::Bar::estimate(&w["ratios"][format!("{t}/bare")]).map(pct)).collect(),
        })
        .filter(|s| s.bars.iter().any(Option::is_some))
        .collect();
    plot::bars(
        &out.join("report.svg"),
        "fio IOPS under ebq report io, its hand-written floor and Darshan, % of bare",
        "% of bare fio's IOPS",
        &cats,
        &series,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_sums_dropped_and_missed_of_every_stats_line() {
        let err = "ebq: tracing 19 events\n\
            ebq: 294716 events seen, 291526 matched, 291526 delivered, 3 dropped, 4 missed; JOIN: 0 start events missed\n\
            ebq: JOIN: 8396 end events had no start\n\
            ebq: 10 events seen, 10 matched, 10 delivered, 1 dropped, 0 missed\n";
        assert_eq!(loss(err), Some(8));
        assert_eq!(loss("ebq: tracing\n"), None);
        assert_eq!(floor_calls("attached\nmap events total 361773\n"), Some(361773));
    }

    #[test]
    fn ratio_rows_print_each_ratio() {
        let s = json!({"workloads": [{"workload": "4k psync", "ratios": {
            "report/floor": {"median": 0.9, "lo": 0.8, "hi": 1.0, "n": 3},
            "report/bare": {"median": 0.7, "lo": 0.7, "hi": 0.7, "n": 1},
        }, "rounds": [{"bare": {"iops": 10.0}, "report": {"iops": 7.0, "wall_s": 1.0, "loss": 0}}]}]});
        let r = ratio_rows(&s);
        assert_eq!(r[0][..3], ["4k psync", "0.900 ±0.100", "0.700"]);
        assert_eq!(r[0][3], "—");
        let rounds = round_rows(&s);
        assert_eq!(rounds[0], ["4k psync", "1", "10", "7", "—", "—", "1.00", "—", "0"]);
    }
}

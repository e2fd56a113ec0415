//! `ebq bench stages`: IOTracer's six-stage dissection of tracing overhead.
//!
//! fio (sync engine, random 50/50 read/write, buffered) runs at every block
//! size × job count on tmpfs and on the disk, first without tracing (T_base),
//! then under the same ebq row query with its program cut after each stage in
//! turn (trigger, filter, reserve, build, commit — see `ebq::plan::StageLimit`),
//! then the full query (retrieve: rows read and written out), then ebq's
//! aggregate plan of the same question. Per workload the configurations run
//! back to back (interleaved), each the best of two fio runs. `Overhead_i = (T_{i−1} − T_i) / T_base × 100`
//! with T the fio throughput (read + write bytes/s from its JSON output).

use super::proc::Tracer;
use super::{plot, table, Ctx};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Command;

/// The question, as rows: one record per read/write of fio.
pub const ROWS: &str = "SELECT time, pid, tid, id, ret FROM raw_syscalls.sys_exit WHERE comm = 'fio' AND id < 2";
/// The same question aggregated in the kernel.
pub const AGGREGATE: &str =
    "SELECT pid, id, COUNT(*), SUM(ret) FROM raw_syscalls.sys_exit WHERE comm = 'fio' AND id < 2 GROUP BY pid, id";

struct Workload {
    fs: &'static str,
    dir: PathBuf,
    bs: &'static str,
    jobs: u32,
}

impl Workload {
    fn id(&self) -> String {
        format!("{} bs={} jobs={}", self.fs, self.bs, self.jobs)
    }
}

/// One fio run: throughput (bytes/s) and operations per second.
fn fio(w: &Workload, runtime_ms: u64, size: &str) -> Result<(f64, f64), String> {
    let out = Command::new("fio")
        .args([
            "--name=ebqbench",
            "--ioengine=sync",
            "--rw=randrw",
            "--rwmixread=50",
            "--time_based",
            "--group_reporting",
        ])
        .arg(format!("--directory={}", w.dir.display()))
        .arg(format!("--bs={}", w.bs))
        .arg(format!("--numjobs={}", w.jobs))
        .arg(format!("--size={size}"))
        .arg(format!("--runtime={runtime_ms}ms"))
        .arg("--output-format=json")
        .output()
        .map_err(|e| format!("error: cannot run fio: {e}"))?;
    if !out.status.success() {
        return Err(format!("error: fio failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    // fio may print notes before the JSON document.
    let start = text.find('{').ok_or("error: fio printed no JSON")?;
    let j: Value = serde_json::from_str(&text[start..]).map_err(|e| format!("error: fio JSON: {e}"))?;
    let job = &j["jobs"][0];
    let f = |side: &str, k: &str| job[side][k].as_f64().unwrap_or(0.0);
    Ok((f("read", "bw_bytes") + f("write", "bw_bytes"), f("read", "iops") + f("write", "iops")))
}

/// The configurations, in order: (name, ebq arguments; None = no tracing).
fn configs(ctx: &Ctx) -> Vec<(&'static str, Option<Vec<String>>)> {
    let rows = |stage: Option<&str>| {
        let mut a = ctx.ebq_argv(&[ROWS, "--format", "csv", "-o", "/dev/null", "--ringbuf-size", "67108864"]);
        if let Some(s) = stage {
            a.extend(["--bench-stage".to_string(), s.to_string()]);
        }
        Some(a)
    };
    let mut v = vec![("base", None)];
    for s in ebq::plan::StageLimit::ALL {
        v.push((s.name(), rows(Some(s.name()))));
    }
    v.push(("retrieve", rows(None)));
    v.push(("aggregate", Some(ctx.ebq_argv(&[AGGREGATE]))));
    v
}

/// Runs the study; returns its results section.
pub fn run(ctx: &Ctx) -> Result<Value, String> {
    let (runtime_ms, size) = if ctx.quick { (300, "8M") } else { (500, "32M") };
    let mut workloads = vec![];
    let fss: &[(&'static str, &str)] =
        if ctx.quick { &[("tmpfs", "/dev/shm")] } else { &[("tmpfs", "/dev/shm"), ("disk", "/var/tmp")] };
    let (sizes, jobs): (&[&str], &[u32]) =
        if ctx.quick { (&["4k"], &[1]) } else { (&["4k", "64k", "256k"], &[1, 2, 4]) };
    for &(fs, root) in fss {
        let dir = PathBuf::from(root).join(format!("ebq-bench-fio.{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("error: {}: {e}", dir.display()))?;
        for bs in sizes {
            for &j in jobs {
                workloads.push(Workload { fs, dir: dir.clone(), bs, jobs: j });
            }
        }
    }
    let result = measure_all(ctx, &workloads, runtime_ms, size);
    for w in &workloads {
        let _ = std::fs::remove_dir_all(&w.dir);
    }
    let results = result?;
    let stages = ["trigger", "filter", "reserve", "build", "commit", "retrieve"];
    let mut rows = vec![];
    for (wi, w) in workloads.iter().enumerate() {
        let t = |name: &str| results.iter().find(|(n, _)| *n == name).map(|(_, v)| v[wi].0);
        let base = t("base").unwrap_or(0.0);
        let mut prev = base;
        let mut over = serde_json::Map::new();
        for s in stages {
            let ti = t(s).unwrap_or(0.0);
            over.insert(s.into(), json!((prev - ti) / base * 100.0));
            prev = ti;
        }
        let total = |x: Option<f64>| x.map(|x| (base - x) / base * 100.0);
        rows.push(json!({
            "workload": w.id(),
            "fs": w.fs, "bs": w.bs, "jobs": w.jobs,
            "base_mb_s": base / 1e6,
            "base_ops_s": results[0].1[wi].1,
            "throughput_mb_s": results.iter().map(|(n, v)| (n.to_string(), json!(v[wi].0 / 1e6))).collect::<serde_json::Map<_, _>>(),
            "overhead_pct": over,
            "rows_total_pct": total(t("retrieve")),
            "aggregate_total_pct": total(t("aggregate")),
        }));
    }
    let section = json!({
        "fio": format!("fio --ioengine=sync --rw=randrw --rwmixread=50 --size={size} --time_based --runtime={runtime_ms}ms --group_reporting (buffered I/O)"),
        "rows_query": ROWS,
        "aggregate_query": AGGREGATE,
        "ebq_options": "--format csv -o /dev/null --ringbuf-size 67108864 (stages via the hidden --bench-stage)",
        "workloads": rows,
    });
    print!("\nstage overhead (% of T_base): {}\n{}", ROWS, table::text(&HEADER, &table_rows(&section)));
    plot_section(ctx, &section)?;
    Ok(section)
}

/// A configuration's name and, per workload, (throughput bytes/s, ops/s).
type Measured = (&'static str, Vec<(f64, f64)>);

/// Interleaved: for each workload, every configuration in turn (so drift
/// between neighbouring stages stays small), the best of `runs` fio runs each.
fn measure_all(ctx: &Ctx, workloads: &[Workload], runtime_ms: u64, size: &str) -> Result<Vec<Measured>, String> {
    // Lay the files out once (the largest job count covers the others).
    let most = workloads.iter().map(|x| x.jobs).max().unwrap_or(1);
    for w in workloads.iter().filter(|w| w.jobs == most) {
        fio(w, 100, size)?;
    }
    let configs = configs(ctx);
    let mut results: Vec<Measured> = configs.iter().map(|(n, _)| (*n, vec![])).collect();
    for w in workloads {
        eprintln!("ebq bench stages: {}", w.id());
        for (ci, (name, argv)) in configs.iter().enumerate() {
            let tracer = match argv {
                Some(a) => Some(Tracer::start(
                    &ctx.scratch,
                    &format!("stages-{name}"),
                    ctx.tracer_cpu,
                    a,
                    &[],
                    "ebq: tracing",
                )?),
                None => None,
            };
            let mut best = (0.0f64, 0.0f64);
            for _ in 0..ctx.runs.clamp(1, 2) {
                let (bw, ops) = fio(w, runtime_ms, size)?;
                if bw > best.0 {
                    best = (bw, ops);
                }
            }
            if let Some(t) = tracer {
                t.stop()?;
            }
            results[ci].1.push(best);
        }
    }
    Ok(results)
}

const HEADER: [&str; 11] = [
    "workload",
    "T_base MB/s",
    "ops/s",
    "trigger",
    "filter",
    "reserve",
    "build",
    "commit",
    "retrieve",
    "rows total",
    "aggregate total",
];

/// Rows of the stage table (terminal and Markdown).
pub fn table_rows(section: &Value) -> Vec<Vec<String>> {
    section["workloads"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|w| {
            let mut r = vec![
                w["workload"].as_str().unwrap_or("").to_string(),
                table::num(w["base_mb_s"].as_f64(), 0),
                table::num(w["base_ops_s"].as_f64(), 0),
            ];
            for s in ["trigger", "filter", "reserve", "build", "commit", "retrieve"] {
                r.push(table::num(w["overhead_pct"][s].as_f64(), 1));
            }
            r.push(table::num(w["rows_total_pct"].as_f64(), 1));
            r.push(table::num(w["aggregate_total_pct"].as_f64(), 1));
            r
        })
        .collect()
}

/// Header of [`table_rows`].
pub fn header() -> &'static [&'static str] {
    &HEADER
}

fn plot_section(ctx: &Ctx, section: &Value) -> Result<(), String> {
    let ws: Vec<&Value> = section["workloads"].as_array().into_iter().flatten().collect();
    let cats: Vec<String> = ws.iter().map(|w| w["workload"].as_str().unwrap_or("").to_string()).collect();
    let series: Vec<(String, Vec<Option<f64>>)> = ["trigger", "filter", "reserve", "build", "commit", "retrieve"]
        .iter()
        .map(|s| (s.to_string(), ws.iter().map(|w| w["overhead_pct"][*s].as_f64()).collect()))
        .collect();
    plot::bars(&ctx.out.join("stages.svg"), "Overhead per stage (ebq row query)", "% of T_base", &cats, &series, true)?;
    let series = vec![
        ("rows (all stages)".to_string(), ws.iter().map(|w| w["rows_total_pct"].as_f64()).collect()),
        ("aggregate in kernel".to_string(), ws.iter().map(|w| w["aggregate_total_pct"].as_f64()).collect()),
    ];
    plot::bars(
        &ctx.out.join("stages-aggregate.svg"),
        "Total overhead: rows vs in-kernel aggregate",
        "% of T_base",
        &cats,
        &series,
        false,
    )
}

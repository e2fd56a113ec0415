//! `ebq bench stages`: IOTracer's six-stage dissection of tracing overhead.
//!
//! fio (sync engine, random 50/50 read/write, buffered) runs at every block
//! size × job count on tmpfs and on the disk, without tracing (T_base), under
//! the same ebq row query with its program cut after each stage in turn
//! (trigger, filter, reserve, build, commit — see `ebq::plan::StageLimit`),
//! under the full query (retrieve: rows read and written out), and under
//! ebq's aggregate plan of the same question.
//!
//! On a shared 2-CPU machine one fio run is worth little: another process
//! takes a varying share of the CPUs. So per workload the configurations run
//! in rounds (base, trigger, …, aggregate, then the same backwards, and so on:
//! drift within a round cancels between forward and backward rounds), and
//! every figure is the median over rounds of the per-round (paired) value
//! with a distribution-free confidence interval (see `stats`).
//! `Overhead_i = (T_{i−1} − T_i) / T_base × 100` with T fio's throughput
//! (seed 000's measure); beside it the CPU per I/O (fio's jobs plus the
//! tracer), which contention hardly moves, gives each stage's cost in ns.

use super::fio::{self, FioRun, Workload};
use super::proc::{threads_cpu_ns, Tracer};
use super::stats::{self, estimate};
use super::{plot, table, Ctx};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The question, as rows: one record per read/write of fio.
pub const ROWS: &str = "SELECT time, pid, tid, id, ret FROM raw_syscalls.sys_exit WHERE comm = 'fio' AND id < 2";
/// The same question aggregated in the kernel.
pub const AGGREGATE: &str =
    "SELECT pid, id, COUNT(*), SUM(ret) FROM raw_syscalls.sys_exit WHERE comm = 'fio' AND id < 2 GROUP BY pid, id";

/// The stages in pipeline order (the columns of the tables).
pub const STAGES: [&str; 6] = ["trigger", "filter", "reserve", "build", "commit", "retrieve"];

/// Rounds per workload: small blocks are where the stages' per-event costs
/// show, large ones drown them in copying (and fewer rounds keep `bench all`
/// within its time).
fn rounds(quick: bool, bs: &str) -> usize {
    match (quick, bs) {
        (true, _) => 2,
        (false, "4k") => 8,
        _ => 4,
    }
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

/// One configuration's run: fio's figures and the tracer's CPU meanwhile.
#[derive(Debug, Clone, Copy, Default)]
struct Run {
    fio: FioRun,
    tracer_cpu_ns: f64,
}

impl Run {
    /// CPU per I/O, fio's jobs and the tracer together (ns).
    fn cpu_per_op(&self) -> f64 {
        (self.fio.cpu_ns + self.tracer_cpu_ns) / self.fio.ios.max(1.0)
    }
}

/// Runs the study; returns its results section.
pub fn run(ctx: &Ctx) -> Result<Value, String> {
    // Short runs, many rounds: fio's own start and stop (~0.2 s) and ebq's
    // (~0.1 s) are paid per run anyway, and rounds are what beat the noise.
    let runtime_ms = 100;
    let size = if ctx.quick { "8M" } else { "32M" };
    let mut workloads = vec![];
    let fss: &[(&'static str, &str)] =
        if ctx.quick { &[("tmpfs", "/dev/shm")] } else { &[("tmpfs", "/dev/shm"), ("disk", "/var/tmp")] };
    let (sizes, jobs): (&[&'static str], &[u32]) =
        if ctx.quick { (&["4k"], &[1]) } else { (&["4k", "64k", "256k"], &[1, 2, 4]) };
    for &(fs, root) in fss {
        let dir = PathBuf::from(root).join(format!("ebq-bench-fio.{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("error: {}: {e}", dir.display()))?;
        for &bs in sizes {
            for &j in jobs {
                workloads.push(Workload { fs, dir: dir.clone(), bs, jobs: j });
            }
        }
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let result = measure_all(ctx, &workloads, runtime_ms, size, cpus);
    for w in &workloads {
        let _ = std::fs::remove_dir_all(&w.dir);
    }
    let results = result?;
    let names: Vec<&str> = configs(ctx).iter().map(|(n, _)| *n).collect();
    let rows: Vec<Value> = workloads.iter().zip(&results).map(|(w, runs)| summarize(w, &names, runs)).collect();
    let mut rounds_by_bs = Map::new();
    for &bs in sizes {
        rounds_by_bs.insert(bs.into(), json!(rounds(ctx.quick, bs)));
    }
    let section = json!({
        "fio": format!(
            "fio {} --cpus_allowed=0-{} --size={size} --runtime={runtime_ms}ms (buffered I/O)",
            fio::ARGS.join(" "),
            cpus - 1
        ),
        "runtime_ms": runtime_ms,
        "ebq_cpu": ctx.tracer_cpu,
        "rounds": rounds_by_bs,
        "configs": names,
        "rows_query": ROWS,
        "aggregate_query": AGGREGATE,
        "ebq_options": "--format csv -o /dev/null --ringbuf-size 67108864 (stages via the hidden --bench-stage)",
        "workloads": rows,
    });
    print!(
        "\nstage overhead (% of T_base; median over rounds ± half-width of its interval, see RESULTS.md): {}\n{}",
        ROWS,
        table::text(&HEADER, &table_rows(&section))
    );
    print!(
        "\nCPU per I/O (ns; fio's jobs + ebq; added per stage; median ± half-width):\n{}",
        table::text(&CPU_HEADER, &cpu_rows(&section))
    );
    plot_section(&ctx.out, &section)?;
    Ok(section)
}

/// Per workload, per configuration, one run per round.
fn measure_all(
    ctx: &Ctx,
    workloads: &[Workload],
    runtime_ms: u64,
    size: &str,
    cpus: usize,
) -> Result<Vec<Vec<Vec<Run>>>, String> {
    let configs = configs(ctx);
    let mut all = vec![];
    for w in workloads {
        let t0 = Instant::now();
        // Untimed: lays the job files out and warms the page cache and fio's
        // code path, so the first configuration measured is not the odd one.
        fio::run(w, 100, size, cpus)?;
        let n = rounds(ctx.quick, w.bs);
        let mut runs: Vec<Vec<Run>> = vec![Vec::with_capacity(n); configs.len()];
        for round in 0..n {
            // Forward, then backward: a linear drift within a round biases each
            // neighbour pair one way in one direction and the other way back.
            let order: Vec<usize> =
                if round % 2 == 0 { (0..configs.len()).collect() } else { (0..configs.len()).rev().collect() };
            run_round(ctx, w, &configs, &order, runtime_ms, size, cpus, &mut runs)?;
        }
        eprintln!("ebq bench stages: {} ({n} rounds, {:.0} s)", w.id(), t0.elapsed().as_secs_f64());
        all.push(runs);
    }
    Ok(all)
}

/// A tracer whose fio run is over: interrupted, not yet reaped.
struct Stopping {
    name: &'static str,
    tracer: Tracer,
    /// Whether it was still running when its fio run ended.
    alive: bool,
}

impl Stopping {
    fn reap(self) -> Result<(), String> {
        let stopped = self.tracer.stop()?;
        if !self.alive {
            return Err(format!(
                "error: ebq ({}) exited during the fio run: {}",
                self.name,
                stopped.stderr.lines().next().unwrap_or("").trim()
            ));
        }
        Ok(())
    }
}

/// One round: each configuration in `order` gets its own ebq (so an unread
/// ring buffer never fills) and one fio run. A tracer is interrupted as soon
/// as its run ends and exits while the next one starts: for a moment both may
/// be attached, but fio only starts once the old one is gone and the new one
/// attached, and the ~0.1 s each takes to stop is not spent waiting.
#[allow(clippy::too_many_arguments)]
fn run_round(
    ctx: &Ctx,
    w: &Workload,
    configs: &[(&'static str, Option<Vec<String>>)],
    order: &[usize],
    runtime_ms: u64,
    size: &str,
    cpus: usize,
    runs: &mut [Vec<Run>],
) -> Result<(), String> {
    let mut stopping: Option<Stopping> = None;
    for &ci in order {
        let (name, argv) = &configs[ci];
        let tracer = match argv {
            Some(a) => {
                let settle = Duration::from_millis(20);
                let label = format!("stages-{name}");
                Some(Tracer::start_settled(&ctx.scratch, &label, ctx.tracer_cpu, a, &[], "ebq: tracing", settle)?)
            }
            None => None,
        };
        if let Some(s) = stopping.take() {
            s.reap()?;
        }
        let c0 = tracer.as_ref().map_or(0, |t| threads_cpu_ns(t.pid()));
        let fio = fio::run(w, runtime_ms, size, cpus)?;
        let tracer_cpu_ns = tracer.as_ref().map_or(0, |t| threads_cpu_ns(t.pid()).saturating_sub(c0));
        if let Some(mut tracer) = tracer {
            let alive = tracer.running();
            tracer.interrupt();
            stopping = Some(Stopping { name, tracer, alive });
        }
        runs[ci].push(Run { fio, tracer_cpu_ns: tracer_cpu_ns as f64 });
    }
    stopping.map_or(Ok(()), Stopping::reap)
}

/// One workload's results: medians and intervals of the paired per-round figures.
fn summarize(w: &Workload, names: &[&str], runs: &[Vec<Run>]) -> Value {
    let idx = |n: &str| names.iter().position(|x| *x == n).expect("known configuration");
    let base = &runs[idx("base")];
    let n = base.len();
    let bw = |c: usize, r: usize| runs[c][r].fio.bw;
    let cpu = |c: usize, r: usize| runs[c][r].cpu_per_op();
    // Throughput: % of the same round's T_base; CPU: ns per I/O added.
    let pct = |a: usize, b: usize| -> Value {
        let xs: Vec<f64> = (0..n).map(|r| (bw(a, r) - bw(b, r)) / bw(idx("base"), r) * 100.0).collect();
        estimate(&xs).map_or(Value::Null, |e| e.to_json())
    };
    let added = |a: usize, b: usize| -> Value {
        let xs: Vec<f64> = (0..n).map(|r| cpu(b, r) - cpu(a, r)).collect();
        estimate(&xs).map_or(Value::Null, |e| e.to_json())
    };
    let median = |xs: Vec<f64>| estimate(&xs).map_or(Value::Null, |e| e.to_json());
    let (mut over, mut cpu_added) = (Map::new(), Map::new());
    let mut prev = idx("base");
    for s in STAGES {
        over.insert(s.into(), pct(prev, idx(s)));
        cpu_added.insert(s.into(), added(prev, idx(s)));
        prev = idx(s);
    }
    let per_config = |f: &dyn Fn(&Run) -> f64| -> Map<String, Value> {
        names.iter().zip(runs).map(|(c, rs)| (c.to_string(), median(rs.iter().map(f).collect()))).collect()
    };
    let m = |v: &Value| v["median"].clone();
    let (base_i, rows_i, agg_i) = (idx("base"), idx("retrieve"), idx("aggregate"));
    let retrieve = &runs[rows_i];
    json!({
        "workload": w.id(),
        "fs": w.fs, "bs": w.bs, "jobs": w.jobs,
        "rounds": n,
        "base_mb_s": m(&median(base.iter().map(|r| r.fio.bw / 1e6).collect())),
        "base_ops_s": m(&median(base.iter().map(|r| r.fio.ops).collect())),
        "base_fio_cpu_pct": m(&median(base.iter().map(|r| r.fio.cpu_pct).collect())),
        "throughput_mb_s": per_config(&|r: &Run| r.fio.bw / 1e6),
        "overhead_pct": over.iter().map(|(k, v)| (k.clone(), m(v))).collect::<Map<_, _>>(),
        "overhead_ci": over,
        "rows_total_pct": m(&pct(base_i, rows_i)),
        "rows_total_ci": pct(base_i, rows_i),
        "aggregate_total_pct": m(&pct(base_i, agg_i)),
        "aggregate_total_ci": pct(base_i, agg_i),
        "cpu_ns_per_op": per_config(&Run::cpu_per_op),
        "cpu_added_ns": cpu_added,
        "cpu_rows_total_ns": added(base_i, rows_i),
        "cpu_aggregate_total_ns": added(base_i, agg_i),
        "ebq_ns_per_row": m(&median(retrieve.iter().map(|r| r.tracer_cpu_ns / r.fio.ios.max(1.0)).collect())),
        "runs": names.iter().zip(runs).map(|(c, rs)| {
            (c.to_string(), json!(rs.iter().map(|r| json!({
                "mb_s": r.fio.bw / 1e6, "ios": r.fio.ios, "fio_cpu_ms": r.fio.cpu_ns / 1e6,
                "tracer_cpu_ms": r.tracer_cpu_ns / 1e6,
            })).collect::<Vec<_>>()))
        }).collect::<Map<_, _>>(),
    })
}

const HEADER: [&str; 13] = [
    "workload",
    "rounds",
    "T_base MB/s",
    "ops/s",
    "fio CPU %",
    "trigger",
    "filter",
    "reserve",
    "build",
    "commit",
    "retrieve",
    "rows total",
    "aggregate total",
];

/// Rows of the throughput table: % of T_base as `median ±half-width`, `≈0`
/// where the interval includes zero (terminal and Markdown).
pub fn table_rows(section: &Value) -> Vec<Vec<String>> {
    workloads(section)
        .map(|w| {
            let mut r = vec![
                w["workload"].as_str().unwrap_or("").to_string(),
                table::num(w["rounds"].as_f64(), 0),
                stats::cell(&w["throughput_mb_s"]["base"], 0),
                table::num(w["base_ops_s"].as_f64(), 0),
                table::num(w["base_fio_cpu_pct"].as_f64(), 0),
            ];
            // Results from before the rounds hold bare numbers only.
            let ci = |a: &Value, bare: &Value| stats::cell(if a.is_null() { bare } else { a }, 1);
            for s in STAGES {
                r.push(ci(&w["overhead_ci"][s], &w["overhead_pct"][s]));
            }
            r.push(ci(&w["rows_total_ci"], &w["rows_total_pct"]));
            r.push(ci(&w["aggregate_total_ci"], &w["aggregate_total_pct"]));
            r
        })
        .collect()
}

/// Header of [`table_rows`].
pub fn header() -> &'static [&'static str] {
    &HEADER
}

const CPU_HEADER: [&str; 11] = [
    "workload",
    "base ns/op",
    "trigger",
    "filter",
    "reserve",
    "build",
    "commit",
    "retrieve",
    "rows total",
    "aggregate total",
    "ebq ns/row",
];

/// Rows of the CPU table: ns of CPU per I/O added by each stage.
pub fn cpu_rows(section: &Value) -> Vec<Vec<String>> {
    workloads(section)
        .map(|w| {
            let mut r =
                vec![w["workload"].as_str().unwrap_or("").to_string(), stats::cell(&w["cpu_ns_per_op"]["base"], 0)];
            for s in STAGES {
                r.push(stats::cell(&w["cpu_added_ns"][s], 0));
            }
            r.push(stats::cell(&w["cpu_rows_total_ns"], 0));
            r.push(stats::cell(&w["cpu_aggregate_total_ns"], 0));
            r.push(table::num(w["ebq_ns_per_row"].as_f64(), 0));
            r
        })
        .collect()
}

/// Header of [`cpu_rows`].
pub fn cpu_header() -> &'static [&'static str] {
    &CPU_HEADER
}

fn workloads(section: &Value) -> impl Iterator<Item = &Value> {
    section["workloads"].as_array().into_iter().flatten()
}

/// Draws the stage plots into `out` (also from a saved results.json: `ebq bench render`).
pub(crate) fn plot_section(out: &Path, section: &Value) -> Result<(), String> {
    let ws: Vec<&Value> = workloads(section).collect();
    let cats: Vec<String> = ws.iter().map(|w| w["workload"].as_str().unwrap_or("").to_string()).collect();
    let per_stage = |key: &str| -> Vec<plot::Series> {
        STAGES
            .iter()
            .map(|s| plot::Series {
                name: s.to_string(),
                bars: ws.iter().map(|w| plot::Bar::estimate(&w[key][*s])).collect(),
            })
            .collect()
    };
    plot::bars(
        &out.join("stages.svg"),
        "Overhead per stage (ebq row query), median over rounds with its interval",
        "% of T_base",
        &cats,
        &per_stage("overhead_ci"),
    )?;
    plot::bars(
        &out.join("stages-cpu.svg"),
        "CPU per I/O added per stage (fio jobs + ebq), median over rounds with its interval",
        "ns per I/O",
        &cats,
        &per_stage("cpu_added_ns"),
    )?;
    let series = vec![
        plot::Series {
            name: "rows (all stages)".to_string(),
            bars: ws.iter().map(|w| plot::Bar::estimate(&w["rows_total_ci"])).collect(),
        },
        plot::Series {
            name: "aggregate in kernel".to_string(),
            bars: ws.iter().map(|w| plot::Bar::estimate(&w["aggregate_total_ci"])).collect(),
        },
    ];
    plot::bars(
        &out.join("stages-aggregate.svg"),
        "Total overhead: rows vs in-kernel aggregate",
        "% of T_base",
        &cats,
        &series,
    )
}

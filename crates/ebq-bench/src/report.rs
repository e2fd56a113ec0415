//! The machine description and the Markdown report (`RESULTS.md`) generated
//! from `results.json`.

use super::{alwayson, attach, fidelity, ioreport, pervent, sinks, stages, startup, stats, table};
use serde_json::{json, Value};
use std::process::Command;

fn cmd_line(argv: &[&str]) -> String {
    Command::new(argv[0])
        .args(&argv[1..])
        .output()
        .ok()
        .map(|o| {
            let s = if o.stdout.is_empty() { o.stderr } else { o.stdout };
            String::from_utf8_lossy(&s).lines().next().unwrap_or("").trim().to_string()
        })
        .unwrap_or_else(|| "not found".into())
}

/// Now, as `YYYY-MM-DD HH:MM:SS UTC`.
pub fn now_utc() -> String {
    cmd_line(&["date", "-u", "+%Y-%m-%d %H:%M:%S UTC"])
}

/// /proc/loadavg's three load averages.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// CPU model, CPUs, memory, kernel and tool versions.
pub fn machine() -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map_or("unknown".to_string(), |(_, m)| m.trim().to_string());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| s.lines().next().map(|l| l.split_whitespace().nth(1).unwrap_or("0").to_string()))
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0.0, |kb| kb as f64 / 1048576.0);
    json!({
        "cpu": model,
        "cpus": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "memory_gib": (mem * 10.0).round() / 10.0,
        "kernel": cmd_line(&["uname", "-srm"]),
        "ebq": format!("ebq {}", env!("CARGO_PKG_VERSION")),
        "git": cmd_line(&["git", "rev-parse", "--short", "HEAD"]),
        "bpftrace": cmd_line(&["bpftrace", "--version"]),
        "clang": cmd_line(&["clang", "--version"]),
        "fio": cmd_line(&["fio", "--version"]),
        "uptime": cmd_line(&["uptime"]),
    })
}

fn run_line(s: &Value) -> String {
    let r = &s["run"];
    format!(
        "Run {} ({:.0} s), load average before {} / after {}{}; command: `{}`\n\n",
        r["started_utc"].as_str().unwrap_or("?"),
        r["seconds"].as_f64().unwrap_or(0.0),
        r["load_before"].as_str().unwrap_or("?"),
        r["load_after"].as_str().unwrap_or("?"),
        if r["quick"].as_bool() == Some(true) { " (**--quick sizes: not a measurement**)" } else { "" },
        r["command"].as_str().unwrap_or("?"),
    )
}

/// Target checks: (target, verdict lines).
pub fn targets(all: &Value) -> Vec<String> {
    let mut out = vec![];
    for x in all["pervent"]["experiments"].as_array().into_iter().flatten() {
        let id = x["id"].as_str().unwrap_or("");
        let (e, b, r) =
            (x["ebq"]["added_ns"].as_f64(), x["bpftrace"]["added_ns"].as_f64(), x["reference"]["added_ns"].as_f64());
        if let (Some(e), Some(b)) = (e, b) {
            let ok = e <= 0.5 * b;
            out.push(format!(
                "- {id}: ebq added {e:.1} ns vs bpftrace {b:.1} ns → {:.2}× (target ≤ 0.50×): **{}**",
                e / b,
                if ok { "met" } else { "not met" }
            ));
        }
        if let (Some(e), Some(r)) = (e, r.filter(|&r| r <= 0.0)) {
            out.push(format!(
                "- {id}: ebq added {e:.1} ns vs reference {r:.1} ns: the reference measured at or below the bare \
                 trigger (noise larger than its cost), no ratio"
            ));
        }
        if let (Some(e), Some(r)) = (e, r.filter(|&r| r > 0.0)) {
            let ok = e <= 1.15 * r;
            out.push(format!(
                "- {id}: ebq added {e:.1} ns vs reference {r:.1} ns → {:.2}× (target ≤ 1.15×): **{}**",
                e / r,
                if ok { "met" } else { "not met" }
            ));
        }
        // The same targets on the kernel's own measure of the programs.
        let bpf = |tool: &str| x[tool]["bpf_added_ns"].as_f64();
        for (other, limit) in [("bpftrace", 0.5), ("reference", 1.15)] {
            if let (Some(e), Some(o)) = (bpf("ebq"), bpf(other).filter(|&o| o > 0.0)) {
                out.push(format!(
                    "- {id}, in BPF: ebq adds {e:.1} ns vs {other} {o:.1} ns per event → {:.2}× (target ≤ {limit:.2}×): **{}**",
                    e / o,
                    if e <= limit * o { "met" } else { "not met" }
                ));
            }
        }
    }
    let runs: Vec<&Value> =
        all["fidelity"]["runs"].as_array().into_iter().flatten().filter(|r| r["error"].is_null()).collect();
    // Streaming throughput: the highest event rate a tool delivered completely.
    let tput = |tool: &str| {
        runs.iter()
            .filter(|r| r["tool"] == tool && r["delivered"] == r["issued"])
            .map(|r| r["achieved_rate"].as_f64().unwrap_or(0.0))
            .fold(0.0, f64::max)
    };
    let (e, b) = (tput("ebq"), tput("bpftrace"));
    if e > 0.0 && b > 0.0 {
        out.push(format!(
            "- streaming: the highest rate delivered completely: ebq {e:.0} rows/s vs bpftrace printf {b:.0} lines/s \
             → {:.1}× (target ≥ 2×): **{}**",
            e / b,
            if e >= 2.0 * b { "met" } else { "not met" }
        ));
    }
    let ebq_runs: Vec<&&Value> = runs.iter().filter(|r| r["tool"] == "ebq").collect();
    if !ebq_runs.is_empty() {
        let exact = ebq_runs.iter().all(|r| r["unaccounted"].as_i64() == Some(0));
        out.push(format!(
            "- drop accounting: issued = delivered + dropped (+ missed) for {} of {} ebq runs: **{}**",
            ebq_runs.iter().filter(|r| r["unaccounted"].as_i64() == Some(0)).count(),
            ebq_runs.len(),
            if exact { "met" } else { "not met" }
        ));
    }
    out.extend(report_targets(&all["report"]));
    out
}

/// `ebq bench report`: the report's cost at most 1.15× the floor's (issue 39
/// item 1), where the floor does the same work: its system calls. Under
/// io_uring the floor sees no request (`report_floor.bpf.c` pairs system
/// calls only) while the report folds every one, so no target is set there.
fn report_targets(rp: &Value) -> Vec<String> {
    let ws = rp["workloads"].as_array().into_iter().flatten();
    ws.filter_map(|w| {
        let c = w["ratios"]["cost report/floor"]["median"].as_f64()?;
        let workload = w["workload"].as_str().unwrap_or("");
        let verdict = match workload.ends_with("io_uring") {
            true => "(no target: the floor sees no io_uring request, the report folds each)".to_string(),
            false => format!("(target ≤ 1.15×): **{}**", if c <= 1.15 { "met" } else { "not met" }),
        };
        Some(format!(
            "- report io, {workload}: IOPS lost to the report {c:.2}× those lost to the hand-written floor {verdict}"
        ))
    })
    .collect()
}

/// How the stage table was measured (rounds, medians, intervals), or the
/// old one-run caveat for results written before the rounds.
fn stages_method(st: &Value) -> String {
    let mut s = format!(
        "{}. Row query: `{}`; aggregate query: `{}`; ebq options: {}. ",
        st["fio"].as_str().unwrap_or(""),
        st["rows_query"].as_str().unwrap_or(""),
        st["aggregate_query"].as_str().unwrap_or(""),
        st["ebq_options"].as_str().unwrap_or(""),
    );
    let Some(rounds) = st["rounds"].as_object() else {
        s += "Columns trigger…retrieve are Overhead_i = (T_{i−1} − T_i) / T_base × 100 (a negative value is noise: \
              one run per cell); \"rows total\" = (T_base − T_retrieve) / T_base, \"aggregate total\" the same for \
              the aggregate plan.\n\n";
        return s;
    };
    let per_bs: Vec<String> = rounds
        .iter()
        .map(|(bs, n)| {
            let n = n.as_u64().unwrap_or(0) as usize;
            format!("{n} for bs={bs} (interval coverage {:.1} %)", stats::coverage(n) * 100.0)
        })
        .collect();
    s += &format!(
        "Per workload, one untimed warm-up run lays the files out (on the disk fio drops the files' cached pages at \
         the start of every run), then the configurations — base (no tracing), trigger, filter, reserve, build, \
         commit, retrieve (the full row query), aggregate — run in rounds: every configuration once, forward in even \
         rounds and backward in odd ones, so slow drift in the machine's load cancels between neighbours; each run \
         gets its own ebq, attached before fio starts and stopped after it ends. fio's jobs are pinned one per CPU \
         (job i on CPU i mod N), ebq to CPU {} (so with one job fio and ebq never share a CPU). Rounds: {}. Every figure is computed within a round \
         (Overhead_i = (T_{{i−1}} − T_i) / T_base × 100 with T fio's read + write throughput; \"rows total\" = \
         (T_base − T_retrieve) / T_base, \"aggregate total\" the same for the aggregate plan), then the table gives \
         its median over the rounds ± the half-width of a distribution-free confidence interval for that median \
         (the order statistics x(k), x(n+1−k), the narrowest covering ≥ 90 %: with 8 rounds x(2)…x(7), so one \
         outlying round on each side does not widen it; with fewer the whole range; the larger side if it is \
         asymmetric). Medians do not add up: \"rows total\" is measured, not the sum of the stages. **`≈0 ±h`**: the interval \
         includes zero, the stage's cost is below this run's noise (a negative median is noise, never a speed-up). \
         With a hundred cells at 87.5–97 % coverage a few intervals miss by chance: a negative value whose \
         interval excludes zero is such a miss, and a positive one of the same size deserves the same doubt. \
         T_base is the median MB/s ± its interval: its width shows how much the machine's load moved throughput \
         during the run; \"fio CPU %\" is the CPU time fio's jobs got as a share of their runtime without \
         tracing (on tmpfs, where a job never waits for a device, anything under 100 % is other processes taking \
         the CPU, which throughput cannot tell apart from tracing cost).\n\n",
        st["ebq_cpu"],
        per_bs.join(", ")
    );
    s
}

/// The whole report: the machine, then each study's section (the studies
/// that ran), the targets, and how to reproduce it.
pub fn markdown(all: &Value) -> String {
    let m = &all["machine"];
    let mut s = String::from(
        "# ebq bench results\n\nGenerated by `ebq bench` from `results.json`; plots are the `*.svg` files beside it.\n\n## Machine\n\n",
    );
    for (k, label) in [
        ("cpu", "CPU"),
        ("cpus", "CPUs"),
        ("memory_gib", "memory (GiB)"),
        ("kernel", "kernel"),
        ("ebq", "ebq"),
        ("git", "git commit"),
        ("bpftrace", "bpftrace"),
        ("clang", "clang"),
        ("fio", "fio"),
        ("uptime", "uptime when written"),
    ] {
        let v = &m[k];
        s += &format!("- {label}: {}\n", v.as_str().map_or_else(|| v.to_string(), str::to_string));
    }
    let p = &all["pervent"];
    if p.is_object() {
        s += &pervent_section(p);
    }
    let at = &all["attach"];
    if at.is_object() {
        s += &attach_section(at);
    }
    let st = &all["stages"];
    if st.is_object() {
        s += &stages_section(st);
    }
    let f = &all["fidelity"];
    if f.is_object() {
        s += &fidelity_section(f);
    }
    let su = &all["startup"];
    if su.is_object() {
        s += &startup_section(su);
    }
    let sk = &all["sinks"];
    if sk.is_object() {
        s += &sinks_section(sk);
    }
    let rp = &all["report"];
    if rp.is_object() {
        s += &report_section(rp);
    }
    let ao = &all["always_on"];
    if ao.is_object() {
        s += &alwayson::markdown(ao, &run_line(ao));
    }
    let t = targets(all);
    if !t.is_empty() {
        s += "\n## Targets\n\n";
        s += &t.join("\n");
        s += "\n";
    }
    s += "\n## Reproducing\n\n```\ncargo build --release --workspace\nsudo target/release/ebq bench all --out bench/results --md bench/RESULTS.md\n```\n\n\
          Single studies: `ebq bench pervent [--count N] [--runs R] [--cpu C]`, `ebq bench stages`, `ebq bench fidelity`, \
          `ebq bench startup`, `ebq bench sinks` (no root), `ebq bench report [--runs R]` (`ebq report io` against \
          its floor and Darshan; not part of `all`); `ebq bench render` rewrites this file from `results.json`.\n";
    s
}

/// `ebq bench pervent`: per-event cost per tool, and each experiment's queries and notes.
fn pervent_section(p: &Value) -> String {
    let mut s = String::new();
    s += "\n## Per-event cost (`ebq bench pervent`)\n\n";
    s += &run_line(p);
    s += &format!(
        "Workload: {}. ns per read(2) = (fastest of {} runs − control) / count, from dd's CPU time \
         (user + system). Control: {:.4} s CPU, {:.4} s elapsed. \"added\" = cost over the bare trigger \
         (ebq's empty program, {} ns per probe) — the part a tool's code adds. \"in-BPF\": one more dd run \
         with BPF run-time statistics on (the timed runs keep them off: they cost two clock reads per run), \
         per program the kernel's run_time_ns / run_cnt, summed over the programs that run on every read — \
         the time inside the tool's programs, steady to about a nanosecond where dd's CPU time moves by tens. \
         It includes the statistics' own clock reads and the call into the program: the empty program's {} ns \
         per probe, subtracted for the \"in-BPF added\" ratios.\n\n",
        p["workload"].as_str().unwrap_or(""),
        p["runs"],
        p["control"]["cpu_s"].as_f64().unwrap_or(0.0),
        p["control"]["elapsed_s"].as_f64().unwrap_or(0.0),
        table::num(p["trigger_ns"].as_f64(), 1),
        table::num(p["trigger_bpf_ns"].as_f64(), 1),
    );
    s += &table::markdown(pervent::HEADER, &pervent::table_rows(p));
    s += "\nQueries, programs and notes (unsupported: the tool's own error):\n\n";
    for x in p["experiments"].as_array().into_iter().flatten() {
        s += &format!(
            "- **{}** ({}): ebq `{}` {}",
            x["id"].as_str().unwrap_or(""),
            x["title"].as_str().unwrap_or(""),
            x["ebq_query"].as_str().unwrap_or(""),
            x["ebq_options"].as_str().unwrap_or("")
        );
        s += &format!("; bpftrace `{}`", x["bpftrace_program"].as_str().unwrap_or(""));
        if let Some(r) = x["reference_program"].as_str() {
            s += &format!("; reference `{r}`");
        }
        for tool in ["ebq", "bpftrace", "reference"] {
            let t = &x[tool];
            if let Some(u) = t["unsupported"].as_str().or(t["error"].as_str()) {
                s += &format!("; {tool} unsupported here: \"{u}\"");
            } else if let Some(n) = t["notes"].as_str().filter(|n| !n.is_empty()) {
                s += &format!("; {tool}: {n}");
            }
            if let Some(c) = t["runs_with_foreign_probes"].as_u64().filter(|&c| c > 0) {
                s += &format!(" (**{c} run(s) with another process's programs on the same events**)");
            }
        }
        s += "\n";
    }
    s
}

/// `ebq bench attach`: classic vs raw system-call tracepoints.
fn attach_section(at: &Value) -> String {
    let mut s = String::new();
    s += "\n## Classic vs raw system-call tracepoints (`ebq bench attach`)\n\n";
    s += &run_line(at);
    s += &format!(
        "Workload: {}. Each pervent shape over system calls with `ebq --attach classic` (the \
         `syscalls:*` tracepoints) and `--attach raw` (raw `sys_enter`/`sys_exit`, tp_btf, number checked \
         first), alternating in {} rounds; cells are best–worst over rounds of ns per read (fastest of {} \
         runs − control, control {:.4} s CPU). untraced_*: the query traces openat, so every dd read costs \
         one untraced read and one untraced write. In-BPF per read: the programs' whole run time during \
         one run with statistics on ÷ reads (raw programs' returns on other calls included).\n\n",
        at["workload"].as_str().unwrap_or(""),
        at["rounds"],
        at["runs"],
        at["control"]["cpu_s"].as_f64().unwrap_or(0.0),
    );
    s += &table::markdown(attach::HEADER, &attach::table_rows(at));
    s
}

/// `ebq bench stages`: the six-stage dissection, in throughput and in CPU per I/O.
fn stages_section(st: &Value) -> String {
    let mut s = String::new();
    s += "\n## Six-stage dissection (`ebq bench stages`)\n\n";
    s += &run_line(st);
    s += &stages_method(st);
    s += &table::markdown(stages::header(), &stages::table_rows(st));
    if st["workloads"][0]["cpu_added_ns"].is_object() {
        s += "\n**CPU per I/O.** The same runs, measured in CPU time instead of throughput: (fio's jobs' user + \
              system time, from fio's own per-job accounting, + ebq's CPU time during the run, from \
              /proc/PID/task/*/schedstat) / I/Os. The BPF programs run inside fio's syscalls, so the in-kernel \
              stages land in fio's system time whether or not other processes take a share of the CPUs, which \
              throughput cannot tell apart from tracing cost on a shared machine. Columns trigger…retrieve: ns of \
              CPU per I/O each stage adds (per round, then median ± interval as above); \"base ns/op\" is fio's \
              own cost; \"ebq ns/row\" is ebq's share at retrieve (reading, decoding and writing one row). Each \
              I/O is one row (one read or write); the trigger also fires on fio's other syscalls (its lseek \
              before each I/O).\n\n";
        s += &table::markdown(stages::cpu_header(), &stages::cpu_rows(st));
    }
    s
}

/// `ebq bench fidelity`: delivered rows and the tracers' resources, and the burst by format.
fn fidelity_section(f: &Value) -> String {
    let mut s = String::new();
    s += "\n## Fidelity and resources (`ebq bench fidelity`)\n\n";
    s += &run_line(f);
    s += &format!(
        "Workload: {}. Buffer: ebq's ring buffer bytes; bpftrace gets the same bytes split over its per-CPU perf \
         buffers (BPFTRACE_PERF_RB_PAGES). Tracer CPU = its user + system time from attached to stop (the \
         workload plus 0.3 s to drain; /proc ticks of 10 ms), also per delivered row; peak RSS = VmHWM.\n\n",
        f["workload"].as_str().unwrap_or("")
    );
    s += &table::markdown(fidelity::HEADER, &fidelity::table_rows(f));
    if f["burst"].is_object() {
        s += &format!(
            "\nBurst by output format (issue 35 item 6). Workload: {}. Delivered = rows in the output (lines; a \
             Parquet or Arrow file's rows); unaccounted = issued − delivered − dropped.\n\n",
            f["burst"]["workload"].as_str().unwrap_or("")
        );
        s += &table::markdown(fidelity::BURST_HEADER, &fidelity::burst_rows(f));
    }
    s
}

/// `ebq bench startup`: spawn to attached.
fn startup_section(su: &Value) -> String {
    let mut s = String::new();
    s += "\n## Startup (`ebq bench startup`)\n\n";
    s += &run_line(su);
    s += &format!(
        "Spawn → attached: until ebq prints `ebq: tracing …` (programs loaded and attached), bpftrace prints \
         `Attaching N probes...`. Fastest of {} runs after a warm-up. Query `{}`.\n\n",
        su["runs"],
        su["query"].as_str().unwrap_or("")
    );
    s += &table::markdown(startup::HEADER, &startup::table_rows(su));
    s
}

/// `ebq bench sinks`: each sink's encoding cost per row.
fn sinks_section(sk: &Value) -> String {
    let mut s = String::new();
    s += "\n## Sinks (`ebq bench sinks`)\n\n";
    s += &run_line(sk);
    s += &format!(
        "{} synthetic rows of `{}` in batches of {} (as a busy ring hands them over), through each sink as \
         `--sink` builds it; the terminal table into `io::sink()`, Parquet and CSV into files in the \
         temporary directory, Kafka's formats up to librdkafka's produce. ns/row = the writing thread's CPU \
         time (user + system) / rows, best and worst of {} runs.\n\n",
        sk["rows"],
        sk["query"].as_str().unwrap_or(""),
        sk["batch_rows"],
        sk["runs"],
    );
    s += &table::markdown(sinks::HEADER, &sinks::table_rows(sk));
    s
}

/// `ebq bench report`: the report against bare fio, its floor and Darshan.
fn report_section(rp: &Value) -> String {
    let mut s = String::new();
    s += "\n## `ebq report io` against its floor and Darshan (`ebq bench report`)\n\n";
    s += &run_line(rp);
    s += &format!(
        "Workload: {}. Tools: {} (report: `{}`; floor: `{}`, raw sys_enter/sys_exit paired per thread in task \
         storage for the report's system calls, counted per file, loaded before fio starts; Darshan: {}; the report and Darshan with `DARSHAN_EXCLUDE_DIRS=none`, since \
         both leave /dev/ out by default). {} \
         interleaved round(s) per workload, forward and backward in turn. Per round: fio's own IOPS per tool, the \
         wall time of the report's whole run (ebq's start-up and report included) and of fio under the floor, and \
         the report's loss (dropped + missed from its stats line); results.json also holds fio's I/Os and the reads \
         the report counted on fio's files per round. Ratios are of IOPS within a round, median over \
         rounds ± half-width of its interval; \"cost report/floor\" = (1 − report/bare) / (1 − floor/bare), the \
         IOPS the report loses over those the floor loses.\n\n",
        rp["fio"].as_str().unwrap_or(""),
        rp["tools"].as_array().into_iter().flatten().filter_map(Value::as_str).collect::<Vec<_>>().join(", "),
        rp["report_command"].as_str().unwrap_or(""),
        rp["floor_program"].as_str().unwrap_or(""),
        rp["darshan"].as_str().map_or("not run (DARSHAN_PREFIX unset)".to_string(), |d| format!("`LD_PRELOAD={d}`")),
        rp["rounds"],
    );
    s += &table::markdown(ioreport::round_header(), &ioreport::round_rows(rp));
    s += "\n";
    s += &table::markdown(ioreport::ratio_header(), &ioreport::ratio_rows(rp));
    s
}

#[cfg(test)]
mod tests {
    use super::report_targets;
    use serde_json::json;

    #[test]
    fn the_report_target_applies_where_the_floor_does_the_same_work() {
        let cost = |c: f64| json!({"ratios": {"cost report/floor": {"median": c}}});
        let mut ws = vec![];
        for (name, c) in [("4k psync", 1.03), ("64k psync", 1.2), ("4k io_uring", 2.5)] {
            let mut w = cost(c);
            w["workload"] = json!(name);
            ws.push(w);
        }
        let lines = report_targets(&json!({ "workloads": ws }));
        assert_eq!(
            lines,
            [
                "- report io, 4k psync: IOPS lost to the report 1.03× those lost to the hand-written floor (target ≤ 1.15×): **met**",
                "- report io, 64k psync: IOPS lost to the report 1.20× those lost to the hand-written floor (target ≤ 1.15×): **not met**",
                "- report io, 4k io_uring: IOPS lost to the report 2.50× those lost to the hand-written floor (no target: the floor sees no io_uring request, the report folds each)",
            ]
        );
    }
}

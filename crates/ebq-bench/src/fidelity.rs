//! `ebq bench fidelity`: events issued vs delivered vs reported dropped.
//!
//! The workload (`ebq bench reader`, comm `ebqrd`, pinned to the workload
//! CPU) issues exactly N read(2) calls at a given rate. ebq streams one row per
//! call to a file (`SELECT time, pid, count … WHERE comm = 'ebqrd'`), bpftrace
//! printf()s one line per call to a file; both run on the other CPU with
//! the same buffer budget (ebq: one ring buffer of B bytes; bpftrace: a perf
//! buffer of B / CPUs per CPU). Delivered is what reached the file; dropped is
//! what the tool itself reported (ebq's `dropped`, bpftrace's "Lost N
//! events"). Exact accounting means issued = delivered + dropped.
//!
//! The burst case (issue 35 item 6): `ebq bench burst` (comm `ebqburst`)
//! issues 300,000 pread64 calls as fast as it can (about 0.1 s untraced), and
//! ebq streams `SELECT time, tid, fd, count` for them at its defaults (ring
//! size, rings mode, wake-up) once per output format: table, JSON and CSV to
//! stdout, Parquet and Arrow IPC to a file (`-o`). Delivered is what the output
//! holds (lines, or the file's rows); dropped is ebq's count.

use super::proc::{run_pinned, Tracer};
use super::reader::{BURST_COMM, COMM};
use super::{plot, table, Ctx};
use serde_json::{json, Value};
use std::path::Path;

fn lines(text: &str, pred: impl Fn(&str) -> bool) -> u64 {
    text.lines().filter(|l| pred(l)).count() as u64
}

/// The numbers before `word` (`,` or `;` after it ignored: "0 missed; JOIN: …"), summed
/// over the lines (e.g. "Lost 12 events").
fn number_before(text: &str, word: &str) -> u64 {
    text.lines()
        .filter_map(|l| {
            let toks: Vec<&str> = l.split_whitespace().collect();
            toks.windows(2).find(|w| w[1].trim_end_matches([',', ';']) == word).and_then(|w| w[0].parse::<u64>().ok())
        })
        .sum()
}

fn one(ctx: &Ctx, tool: &str, reads: u64, rate: u64, buf: u32) -> Value {
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    let name = format!("fid-{tool}-{rate}-{buf}");
    let (argv, env, ready) = if tool == "ebq" {
        let q = format!("SELECT time, pid, count FROM syscalls.sys_enter_read WHERE comm = '{COMM}'");
        (ctx.ebq_argv(&[&q, "--format", "csv", "--ringbuf-size", &buf.to_string()]), vec![], "ebq: tracing")
    } else {
        let prog = format!(
            "t:syscalls:sys_enter_read /comm == \"{COMM}\"/ {{ printf(\"%llu %d %d\\n\", nsecs, pid, args->count); }}"
        );
        let pages = (buf / 4096 / ncpu).max(1).next_power_of_two();
        (
            vec![ctx.bpftrace.clone(), "-e".into(), prog],
            vec![("BPFTRACE_PERF_RB_PAGES", pages.to_string())],
            "Attaching",
        )
    };
    let tracer = match Tracer::start(&ctx.scratch, &name, ctx.tracer_cpu, &argv, &env, ready) {
        Ok(t) => t,
        Err(e) => return json!({ "tool": tool, "rate": rate, "buffer": buf, "error": e }),
    };
    let reader =
        [ctx.ebq.clone(), "bench".into(), "reader".into(), format!("--reads={reads}"), format!("--rate={rate}")];
    let timed = run_pinned(ctx.cpu, &reader);
    // Let the consumer drain what is still buffered before stopping it.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let stopped = tracer.stop();
    let _ = std::fs::remove_file(ctx.scratch.join(format!("{name}.out")));
    let _ = std::fs::remove_file(ctx.scratch.join(format!("{name}.err")));
    let (timed, s) = match (timed, stopped) {
        (Ok(t), Ok(s)) => (t, s),
        (Err(e), _) | (_, Err(e)) => return json!({ "tool": tool, "rate": rate, "buffer": buf, "error": e }),
    };
    let (delivered, dropped, missed) = if tool == "ebq" {
        // CSV: a header line, then one line per row.
        let rows = lines(&s.stdout, |l| !l.is_empty()).saturating_sub(1);
        (rows, number_before(&s.stderr, "dropped"), Some(number_before(&s.stderr, "missed")))
    } else {
        // bpftrace reports no skipped runs (null, shown as "-").
        let rows = lines(&s.stdout, |l| l.split_whitespace().count() == 3 && l.ends_with(" 7"));
        (rows, number_before(&format!("{}\n{}", s.stdout, s.stderr), "events"), None)
    };
    // Missed runs are counted before the program checks anything, so they may
    // include other processes' reads: they account for at most the shortfall.
    let shortfall = reads as i64 - delivered as i64 - dropped as i64;
    let secs = timed.elapsed_ns as f64 / 1e9;
    json!({
        "tool": tool,
        "target_rate": rate,
        "buffer_bytes": buf,
        "issued": reads,
        "delivered": delivered,
        "dropped_reported": dropped,
        "missed_reported": missed,
        "unaccounted": shortfall - shortfall.clamp(0, missed.unwrap_or(0) as i64),
        "delivered_pct": delivered as f64 / reads as f64 * 100.0,
        "workload_s": secs,
        "achieved_rate": reads as f64 / secs,
        "tracer_cpu_s": s.cpu_ns as f64 / 1e9,
        "tracer_cpu_ns_per_event": if delivered > 0 { s.cpu_ns as f64 / delivered as f64 } else { f64::NAN },
        "peak_rss_mb": s.peak_rss_kb as f64 / 1024.0,
    })
}

/// Runs the study; returns its results section.
pub fn run(ctx: &Ctx) -> Result<Value, String> {
    // (target rate per second, 0 = unpaced; reads).
    let rates: &[(u64, u64)] = if ctx.quick {
        &[(20_000, 2_000), (0, 20_000)]
    } else {
        &[(10_000, 10_000), (100_000, 100_000), (1_000_000, 300_000), (0, 600_000)]
    };
    let bufs: &[u32] = if ctx.quick { &[1 << 20] } else { &[64 << 10, 1 << 20, 8 << 20] };
    let mut runs = vec![];
    // `--only burst`: the burst case alone.
    let bufs = if ctx.only.iter().any(|o| o == "burst") { &[][..] } else { bufs };
    for &buf in bufs {
        for &(rate, reads) in rates {
            for tool in ["ebq", "bpftrace"] {
                eprintln!("ebq bench fidelity: {tool} rate {rate}/s buffer {buf}");
                runs.push(one(ctx, tool, reads, rate, buf));
            }
        }
    }
    let burst = burst(ctx);
    let section = json!({
        "workload": format!("ebq bench reader: N read(2) of 7 bytes on /dev/zero under comm '{COMM}', paced, on CPU {}; tracers on CPU {}", ctx.cpu, ctx.tracer_cpu),
        "runs": runs,
        "burst": burst,
    });
    print!("\nfidelity\n{}", table::text(HEADER, &table_rows(&section)));
    print!(
        "\nfidelity: pread64 burst by output format, ebq defaults\n{}",
        table::text(BURST_HEADER, &burst_rows(&section))
    );
    if !bufs.is_empty() {
        plot_section(&ctx.out, &section)?;
    }
    Ok(section)
}

/// Header of [`table_rows`].
pub const HEADER: &[&str] = &[
    "tool",
    "buffer",
    "target rate/s",
    "achieved/s",
    "issued",
    "delivered",
    "dropped (reported)",
    "missed (reported)",
    "unaccounted",
    "delivered %",
    "tracer CPU ms",
    "tracer CPU ns/row",
    "peak RSS MB",
];

/// Rows of the fidelity table (terminal and Markdown).
pub fn table_rows(section: &Value) -> Vec<Vec<String>> {
    section["runs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            if let Some(e) = r["error"].as_str() {
                return vec![r["tool"].as_str().unwrap_or("").into(), format!("error: {e}")];
            }
            let rate = r["target_rate"].as_u64().unwrap_or(0);
            vec![
                r["tool"].as_str().unwrap_or("").into(),
                format!("{} KiB", r["buffer_bytes"].as_u64().unwrap_or(0) >> 10),
                if rate == 0 { "max".into() } else { rate.to_string() },
                table::num(r["achieved_rate"].as_f64(), 0),
                r["issued"].to_string(),
                r["delivered"].to_string(),
                r["dropped_reported"].to_string(),
                r["missed_reported"].as_u64().map_or("-".into(), |m| m.to_string()),
                r["unaccounted"].to_string(),
                table::num(r["delivered_pct"].as_f64(), 1),
                table::num(r["tracer_cpu_s"].as_f64().map(|s| s * 1e3), 0),
                table::num(r["tracer_cpu_ns_per_event"].as_f64(), 0),
                table::num(r["peak_rss_mb"].as_f64(), 1),
            ]
        })
        .collect()
}

/// Draws the delivered-vs-rate plot into `out`, one line per tool and ring
/// size found in the runs (also from a saved results.json).
pub(crate) fn plot_section(out: &Path, section: &Value) -> Result<(), String> {
    let runs: Vec<&Value> = section["runs"].as_array().into_iter().flatten().collect();
    let bufs: std::collections::BTreeSet<u64> = runs.iter().filter_map(|r| r["buffer_bytes"].as_u64()).collect();
    let mut series = vec![];
    for tool in ["ebq", "bpftrace"] {
        for &b in &bufs {
            let pts: Vec<(f64, f64)> = runs
                .iter()
                .filter(|r| r["tool"] == tool && r["buffer_bytes"] == b && r["error"].is_null())
                .map(|r| (r["achieved_rate"].as_f64().unwrap_or(1.0), r["delivered_pct"].as_f64().unwrap_or(0.0)))
                .collect();
            series.push((format!("{tool} {} KiB", b >> 10), pts));
        }
    }
    plot::lines(
        &out.join("fidelity.svg"),
        "Events delivered vs event rate",
        "events/s (achieved)",
        "delivered %",
        &series,
    )
}

/// The output formats of the burst case.
const FORMATS: [&str; 5] = ["table", "json", "csv", "parquet", "arrow"];

/// Rows in a Parquet or Arrow IPC file.
fn file_rows(path: &std::path::Path, format: &str) -> Result<u64, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let batches: Vec<Result<arrow_array::RecordBatch, String>> = if format == "parquet" {
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .and_then(|b| b.build())
            .map_err(|e| e.to_string())?
            .map(|b| b.map_err(|e| e.to_string()))
            .collect()
    } else {
        arrow_ipc::reader::FileReader::try_new(file, None)
            .map_err(|e| e.to_string())?
            .map(|b| b.map_err(|e| e.to_string()))
            .collect()
    };
    batches.into_iter().map(|b| b.map(|b| b.num_rows() as u64)).sum()
}

/// Rows of the workload in a text output: lines whose `count` is the burst's 1.
fn text_rows(stdout: &str, format: &str) -> u64 {
    lines(stdout, |l| match format {
        "json" => l.contains("\"count\":1}"),
        "csv" => l.ends_with(",1"),
        _ => l.split_whitespace().count() == 4 && l.ends_with(" 1"),
    })
}

fn burst_one(ctx: &Ctx, format: &str, calls: u64, run: usize) -> Value {
    let name = format!("burst-{format}-{run}");
    let q = format!("SELECT time, tid, fd, count FROM syscalls.sys_enter_pread64 WHERE comm = '{BURST_COMM}'");
    let file = ctx.scratch.join(format!("{name}.{format}"));
    let mut args = vec![q.as_str(), "--format", format];
    let file_arg = file.display().to_string();
    if matches!(format, "parquet" | "arrow") {
        args.extend(["-o", file_arg.as_str()]);
    }
    let tracer = match Tracer::start(&ctx.scratch, &name, ctx.tracer_cpu, &ctx.ebq_argv(&args), &[], "ebq: tracing") {
        Ok(t) => t,
        Err(e) => return json!({ "format": format, "error": e }),
    };
    let workload = [ctx.ebq.clone(), "bench".into(), "burst".into(), format!("--reads={calls}")];
    let timed = run_pinned(ctx.cpu, &workload);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let stopped = tracer.stop();
    let delivered = match &stopped {
        Ok(s) if !matches!(format, "parquet" | "arrow") => Ok(text_rows(&s.stdout, format)),
        Ok(_) => file_rows(&file, format),
        Err(e) => Err(e.clone()),
    };
    for ext in ["out", "err", format] {
        let _ = std::fs::remove_file(ctx.scratch.join(format!("{name}.{ext}")));
    }
    let (timed, s, delivered) = match (timed, stopped, delivered) {
        (Ok(t), Ok(s), Ok(d)) => (t, s, d),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return json!({ "format": format, "error": e }),
    };
    let dropped = number_before(&s.stderr, "dropped");
    json!({
        "format": format,
        "run": run,
        "issued": calls,
        "delivered": delivered,
        "delivered_reported": number_before(&s.stderr, "delivered"),
        "dropped_reported": dropped,
        "unaccounted": calls as i64 - delivered as i64 - dropped as i64,
        "workload_s": timed.elapsed_ns as f64 / 1e9,
        "tracer_cpu_s": s.cpu_ns as f64 / 1e9,
        "peak_rss_mb": s.peak_rss_kb as f64 / 1024.0,
    })
}

/// The burst case: every format, `runs` times each (1 with --quick).
fn burst(ctx: &Ctx) -> Value {
    let calls = if ctx.quick { 30_000 } else { 300_000 };
    let runs = if ctx.quick { 1 } else { ctx.runs.max(1) };
    let mut all = vec![];
    for format in FORMATS {
        for run in 1..=runs {
            eprintln!("ebq bench fidelity: burst of {calls} pread64, --format {format}, run {run}");
            all.push(burst_one(ctx, format, calls, run));
        }
    }
    json!({
        "workload": format!(
            "ebq bench burst: {calls} pread64 calls of 1 byte on /dev/zero, unpaced, under comm '{BURST_COMM}', on CPU {}; \
             ebq (defaults: --ringbuf-size, --rings, --wakeup-bytes) on CPU {}", ctx.cpu, ctx.tracer_cpu),
        "runs": all,
    })
}

/// Header of [`burst_rows`].
pub const BURST_HEADER: &[&str] = &[
    "format",
    "run",
    "issued",
    "delivered",
    "dropped (reported)",
    "unaccounted",
    "delivered %",
    "workload s",
    "tracer CPU ms",
    "peak RSS MB",
];

/// Rows of the burst table (terminal and Markdown).
pub fn burst_rows(section: &Value) -> Vec<Vec<String>> {
    section["burst"]["runs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            if let Some(e) = r["error"].as_str() {
                return vec![r["format"].as_str().unwrap_or("").into(), format!("error: {e}")];
            }
            let issued = r["issued"].as_u64().unwrap_or(0).max(1);
            vec![
                r["format"].as_str().unwrap_or("").into(),
                r["run"].to_string(),
                r["issued"].to_string(),
                r["delivered"].to_string(),
                r["dropped_reported"].to_string(),
                r["unaccounted"].to_string(),
                table::num(Some(r["delivered"].as_u64().unwrap_or(0) as f64 / issued as f64 * 100.0), 1),
                table::num(r["workload_s"].as_f64(), 3),
                table::num(r["tracer_cpu_s"].as_f64().map(|s| s * 1e3), 0),
                table::num(r["peak_rss_mb"].as_f64(), 1),
            ]
        })
        .collect()
}

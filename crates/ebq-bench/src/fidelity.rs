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

use super::proc::{run_pinned, Tracer};
use super::reader::COMM;
use super::{plot, table, Ctx};
use serde_json::{json, Value};

fn lines(text: &str, pred: impl Fn(&str) -> bool) -> u64 {
    text.lines().filter(|l| pred(l)).count() as u64
}

/// The number after `word` in the first line containing `pat` (e.g. "Lost 12 events").
fn number_before(text: &str, word: &str) -> u64 {
    text.lines()
        .filter_map(|l| {
            let toks: Vec<&str> = l.split_whitespace().collect();
            toks.windows(2).find(|w| w[1].trim_end_matches(',') == word).and_then(|w| w[0].parse::<u64>().ok())
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
    for &buf in bufs {
        for &(rate, reads) in rates {
            for tool in ["ebq", "bpftrace"] {
                eprintln!("ebq bench fidelity: {tool} rate {rate}/s buffer {buf}");
                runs.push(one(ctx, tool, reads, rate, buf));
            }
        }
    }
    let section = json!({
        "workload": format!("ebq bench reader: N read(2) of 7 bytes on /dev/zero under comm '{COMM}', paced, on CPU {}; tracers on CPU {}", ctx.cpu, ctx.tracer_cpu),
        "runs": runs,
    });
    print!("\nfidelity\n{}", table::text(HEADER, &table_rows(&section)));
    plot_section(ctx, &section, bufs)?;
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

fn plot_section(ctx: &Ctx, section: &Value, bufs: &[u32]) -> Result<(), String> {
    let runs: Vec<&Value> = section["runs"].as_array().into_iter().flatten().collect();
    let mut series = vec![];
    for tool in ["ebq", "bpftrace"] {
        for &b in bufs {
            let pts: Vec<(f64, f64)> = runs
                .iter()
                .filter(|r| r["tool"] == tool && r["buffer_bytes"] == b && r["error"].is_null())
                .map(|r| (r["achieved_rate"].as_f64().unwrap_or(1.0), r["delivered_pct"].as_f64().unwrap_or(0.0)))
                .collect();
            series.push((format!("{tool} {} KiB", b >> 10), pts));
        }
    }
    plot::lines(
        &ctx.out.join("fidelity.svg"),
        "Events delivered vs event rate",
        "events/s (achieved)",
        "delivered %",
        &series,
    )
}

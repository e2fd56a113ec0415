//! `ebq bench startup`: how long until a query is attached.
//!
//! "Attached" is the moment the tool says so: ebq prints `ebq: tracing …` on
//! stderr right after its programs are loaded and attached (after
//! `RunningQuery` started), bpftrace prints `Attaching N probes...` (it attaches
//! right after printing it), the reference loader prints `attached`. The time
//! is from spawning the process to that line appearing (polled every 1 ms), the
//! fastest of R runs after one warm-up run (warm page cache and clang; for
//! query text the warm-up also fills the object cache, so the first case is
//! a cache hit and `--no-cache` shows what clang costs).

use super::proc::Tracer;
use super::{plot, table, Ctx};
use serde_json::{json, Value};
use std::path::Path;

const SQL: &str = "SELECT pid, COUNT(*) FROM syscalls.sys_enter_read GROUP BY pid";
const BPFTRACE: &str = "t:syscalls:sys_enter_read { @[pid] = count(); }";

fn time_to_attach(ctx: &Ctx, name: &str, argv: &[String], ready: &str) -> Value {
    let mut best: Option<f64> = None;
    for i in 0..=ctx.runs {
        match Tracer::start(&ctx.scratch, name, ctx.tracer_cpu, argv, &[], ready) {
            Ok(t) => {
                let s = t.startup.as_secs_f64();
                let _ = t.stop();
                if i > 0 {
                    best = Some(best.map_or(s, |b: f64| b.min(s)));
                }
            }
            Err(e) => return json!({ "error": e }),
        }
    }
    json!({ "seconds": best, "command": argv.join(" ") })
}

/// Runs the study; returns its results section.
pub fn run(ctx: &Ctx) -> Result<Value, String> {
    let bundle = ctx.scratch.join("startup.ebq");
    let out = std::process::Command::new(&ctx.ebq)
        .args(["compile", SQL, "-o"])
        .arg(&bundle)
        .output()
        .map_err(|e| format!("error: ebq compile: {e}"))?;
    if !out.status.success() {
        return Err(format!("error: ebq compile failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let cases = vec![
        ("ebq (query text, object cache hit)", ctx.ebq_argv(&[SQL]), "ebq: tracing"),
        ("ebq (query text, --no-cache: clang)", ctx.ebq_argv(&[SQL, "--no-cache"]), "ebq: tracing"),
        ("ebq (AOT bundle)", ctx.ebq_argv(&["run", &bundle.display().to_string()]), "ebq: tracing"),
        ("bpftrace", vec![ctx.bpftrace.clone(), "-e".into(), BPFTRACE.into()], "Attaching"),
    ];
    let mut results = vec![];
    for (name, argv, ready) in cases {
        eprintln!("ebq bench startup: {name}");
        let mut v = time_to_attach(ctx, "startup", &argv, ready);
        v["tool"] = json!(name);
        results.push(v);
    }
    let _ = std::fs::remove_file(&bundle);
    let section = json!({ "query": SQL, "bpftrace_program": BPFTRACE, "runs": ctx.runs, "results": results });
    print!("\nstartup (spawn → attached, fastest of {})\n{}", ctx.runs, table::text(HEADER, &table_rows(&section)));
    plot_section(&ctx.out, &section)?;
    Ok(section)
}

/// Draws the start-up plot into `out` (also from a saved results.json).
pub(crate) fn plot_section(out: &Path, section: &Value) -> Result<(), String> {
    let results: Vec<&Value> = section["results"].as_array().into_iter().flatten().collect();
    let cats: Vec<String> = results.iter().map(|r| r["tool"].as_str().unwrap_or("").to_string()).collect();
    let time = plot::Series {
        name: "spawn → attached".into(),
        bars: results.iter().map(|r| r["seconds"].as_f64().map(|s| plot::Bar::plain(s * 1e3))).collect(),
    };
    plot::bars(&out.join("startup.svg"), "Spawn → attached", "ms", &cats, &[time])
}

/// Header of [`table_rows`].
pub const HEADER: &[&str] = &["tool", "ms to attached", "command"];

/// Rows of the startup table (terminal and Markdown).
pub fn table_rows(section: &Value) -> Vec<Vec<String>> {
    section["results"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            vec![
                r["tool"].as_str().unwrap_or("").to_string(),
                r["seconds"].as_f64().map_or_else(|| format!("error: {}", r["error"]), |s| format!("{:.1}", s * 1e3)),
                r["command"].as_str().unwrap_or("").to_string(),
            ]
        })
        .collect()
}

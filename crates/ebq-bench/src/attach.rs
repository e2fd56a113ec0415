//! `ebq bench attach`: every system-call shape of `pervent` with its events on
//! the classic `syscalls:*` tracepoints and on the raw `sys_enter`/`sys_exit`
//! ones (`ebq --attach classic|raw`), and what a query adds to the system
//! calls it does not trace.
//!
//! Same workload and arithmetic as `pervent` (dd bs=1 pinned to one CPU;
//! ns per read = (dd's CPU time, or wall clock, − the control's) / reads, the
//! fastest of R runs), ebq only. The attachments (classic = before, raw,
//! auto = the default) take turns, in rounds that rotate which goes first,
//! so a drift in the machine's load cannot favour one; each cell is the
//! range over rounds. The untraced shapes trace `openat`, which dd's loop
//! never calls: each dd read then costs one untraced read and one untraced
//! write. In-BPF per read is the programs' whole time during the run ÷ reads
//! (a raw program's returns on other calls included).

use super::pervent::{dd_argv, measure, min_timed, per_event, syscall_shapes};
use super::proc::fastest_clean;
use super::{table, Ctx};
use serde_json::{json, Value};

/// Queries on a system call dd's loop never makes.
const UNTRACED: &[(&str, &str, &[&str])] = &[
    ("untraced_enter", "query on sys_enter_openat; dd's read + write untraced", &[
        "SELECT COUNT(*) FROM syscalls.sys_enter_openat",
    ]),
    ("untraced_join", "JOIN on openat enter→exit; dd's read + write untraced", &[
        "SELECT HIST(x.time - e.time) FROM syscalls.sys_enter_openat e JOIN syscalls.sys_exit_openat x ON e.tid = x.tid",
    ]),
];

/// `--attach` values measured: before (classic), all raw, and the default.
const ATTACH: [&str; 3] = ["classic", "raw", "auto"];

/// Runs the study; returns its results section.
pub fn run(ctx: &Ctx) -> Result<Value, String> {
    let rounds = if ctx.quick { 1 } else { 2 };
    let mut shapes: Vec<(&str, &str, &[&str], &[&str])> = syscall_shapes().collect();
    shapes.extend(UNTRACED.iter().map(|(id, title, q)| (*id, *title, *q, &[][..])));
    let dd = dd_argv(ctx.count);
    let mut control = fastest_clean(ctx.cpu, &dd, ctx.runs, &[])?.0;
    // measured[shape][attach] = one Value per round.
    let mut measured: Vec<[Vec<Value>; 3]> = shapes.iter().map(|_| [vec![], vec![], vec![]]).collect();
    for round in 0..rounds {
        for (i, (id, title, queries, opts)) in shapes.iter().enumerate() {
            for a in (0..ATTACH.len()).map(|k| (k + round) % ATTACH.len()) {
                eprintln!("ebq bench attach: round {}, {id} ({title}), --attach {}", round + 1, ATTACH[a]);
                let argvs: Vec<Vec<String>> = queries
                    .iter()
                    .map(|q| {
                        let mut v = ctx.ebq_argv(&[q, "--attach", ATTACH[a]]);
                        v.extend(opts.iter().map(|s| s.to_string()));
                        v
                    })
                    .collect();
                measured[i][a].push(measure(ctx, &dd, &format!("{id}-{}", ATTACH[a]), &argvs, "ebq: tracing"));
            }
        }
    }
    control = min_timed(control, fastest_clean(ctx.cpu, &dd, ctx.runs, &[])?.0);
    let mut exps = vec![];
    for ((id, title, queries, opts), runs) in shapes.iter().zip(measured) {
        let mut x =
            json!({ "id": id, "title": title, "ebq_query": queries.join(" ; "), "ebq_options": opts.join(" ") });
        for (a, mut rs) in runs.into_iter().enumerate() {
            for r in rs.iter_mut() {
                per_event(ctx.count, control, r);
            }
            let range = |key: &str| {
                let v: Vec<f64> = rs.iter().filter_map(|r| r[key].as_f64()).collect();
                let (lo, hi) = v.iter().fold((f64::MAX, f64::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)));
                if v.is_empty() {
                    Value::Null
                } else {
                    json!([lo, hi])
                }
            };
            x[ATTACH[a]] = json!({
                "ns": range("ns"),
                "ns_elapsed": range("ns_elapsed"),
                "bpf_ns_per_read": range("bpf_ns_per_read"),
                "bpf_ns_per_run": range("bpf_ns"),
                "notes": rs.iter().filter_map(|r| r["notes"].as_str()).collect::<Vec<_>>().join(" | "),
            });
        }
        exps.push(x);
    }
    let section = json!({
        "workload": format!("dd if=/dev/zero of=/dev/null bs=1 count={} on CPU {}; ebq on CPU {}", ctx.count, ctx.cpu, ctx.tracer_cpu),
        "count": ctx.count,
        "runs": ctx.runs,
        "rounds": rounds,
        "control": { "cpu_s": control.cpu_ns as f64 / 1e9, "elapsed_s": control.elapsed_ns as f64 / 1e9 },
        "experiments": exps,
    });
    print!(
        "\nclassic vs raw system-call tracepoints: {}\n{}",
        section["workload"].as_str().unwrap_or(""),
        table::text(HEADER, &table_rows(&section))
    );
    Ok(section)
}

/// `lo–hi` of a `[lo, hi]` range over rounds (one number when they agree).
fn cell(v: &Value) -> String {
    match (v[0].as_f64(), v[1].as_f64()) {
        (Some(lo), Some(hi)) if (hi - lo).abs() < 0.05 => format!("{lo:.1}"),
        (Some(lo), Some(hi)) => format!("{lo:.1}–{hi:.1}"),
        _ => "—".into(),
    }
}

/// Rows of the comparison table (terminal and Markdown report).
pub fn table_rows(section: &Value) -> Vec<Vec<String>> {
    section["experiments"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|x| {
            let mut row = vec![x["id"].as_str().unwrap_or("").to_string()];
            for key in ["ns", "ns_elapsed", "bpf_ns_per_read", "bpf_ns_per_run"] {
                row.extend(ATTACH.iter().map(|a| cell(&x[*a][key])));
            }
            row
        })
        .collect()
}

/// Header of [`table_rows`].
pub const HEADER: &[&str] = &[
    "shape",
    "CPU ns/read classic",
    "CPU ns/read raw",
    "CPU ns/read auto",
    "wall ns/read classic",
    "wall ns/read raw",
    "wall ns/read auto",
    "in-BPF ns/read classic",
    "in-BPF ns/read raw",
    "in-BPF ns/read auto",
    "in-BPF ns/run classic",
    "in-BPF ns/run raw",
    "in-BPF ns/run auto",
];

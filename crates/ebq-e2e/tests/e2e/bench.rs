//! `ebq bench all --quick`: every study runs end to end and writes outputs of
//! the documented shape (timings are not checked: they belong to the bench).

use crate::common;

use common::ebq_bin;
use serde_json::Value;
use std::process::Command;

#[test]
fn bench_all_quick_writes_every_study() {
    let out = std::env::temp_dir().join(format!("ebq-bench-test.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let md = out.join("REPORT.md");
    let status = Command::new(ebq_bin())
        .args(["bench", "all", "--quick", "--out"])
        .arg(&out)
        .arg("--md")
        .arg(&md)
        .status()
        .expect("ebq runs");
    assert!(status.success(), "ebq bench all --quick failed");
    let text = std::fs::read_to_string(out.join("results.json")).expect("results.json");
    let all: Value = serde_json::from_str(&text).expect("results.json parses");

    // Per-event: every experiment has, per tool, a number or the tool's own reason.
    let exps = all["pervent"]["experiments"].as_array().expect("experiments");
    let ids: Vec<&str> = exps.iter().map(|x| x["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["trigger", "tp_entry", "key_pid", "hist", "timing", "per_event", "kprobe"]);
    for x in exps {
        for tool in ["ebq", "bpftrace"] {
            let t = &x[tool];
            assert!(
                t["ns"].is_f64() || t["unsupported"].as_str().is_some_and(|s| !s.is_empty()),
                "{}: {tool} has neither a cost nor a reason: {t}",
                x["id"]
            );
        }
        if x["reference_program"].is_string() {
            assert!(x["reference"]["ns"].is_f64(), "{}: reference: {}", x["id"], x["reference"]);
        }
    }
    // kprobes are not built into this kernel: ebq says so itself.
    let kprobe = &exps[6]["ebq"]["unsupported"];
    assert!(kprobe.as_str().is_some_and(|s| s.contains("kprobe")), "{kprobe}");
    for id in ["tp_entry", "key_pid", "hist", "timing", "per_event"] {
        let x = exps.iter().find(|x| x["id"] == id).unwrap();
        assert!(x["ebq"]["ns"].is_f64(), "{id}: ebq must run: {}", x["ebq"]);
        // The kernel's own time per event in each tool's programs (BPF statistics).
        for tool in ["ebq", "bpftrace", "reference"] {
            let ns = x[tool]["bpf_ns"].as_f64().unwrap_or_else(|| panic!("{id}: {tool} has no in-BPF time: {x}"));
            assert!(ns > 0.0 && x[tool]["bpf_added_ns"].is_f64(), "{id}: {tool}: {x}");
        }
    }
    assert!(all["pervent"]["trigger_bpf_ns"].as_f64().is_some_and(|t| t > 0.0));

    // Stages: one workload in two rounds, every stage's overhead and CPU per
    // I/O as a median with its interval, and both totals.
    let ws = all["stages"]["workloads"].as_array().expect("workloads");
    assert_eq!(ws.len(), 1);
    assert_eq!(ws[0]["rounds"], 2);
    let interval = |v: &Value| {
        let (m, lo, hi) = (v["median"].as_f64(), v["lo"].as_f64(), v["hi"].as_f64());
        matches!((m, lo, hi), (Some(m), Some(lo), Some(hi)) if lo <= m && m <= hi) && v["n"] == 2
    };
    for s in ["trigger", "filter", "reserve", "build", "commit", "retrieve"] {
        assert!(ws[0]["overhead_pct"][s].is_f64(), "stage {s}: {}", ws[0]);
        assert!(interval(&ws[0]["overhead_ci"][s]), "stage {s}: {}", ws[0]["overhead_ci"]);
        assert!(interval(&ws[0]["cpu_added_ns"][s]), "stage {s}: {}", ws[0]["cpu_added_ns"]);
    }
    assert!(ws[0]["rows_total_pct"].is_f64() && ws[0]["aggregate_total_pct"].is_f64());
    assert!(interval(&ws[0]["rows_total_ci"]) && interval(&ws[0]["cpu_rows_total_ns"]), "{}", ws[0]);
    for (config, runs) in ws[0]["runs"].as_object().expect("runs") {
        assert_eq!(runs.as_array().map(Vec::len), Some(2), "{config}");
    }

    // Fidelity: ebq accounts for every issued event exactly (delivered,
    // dropped, or skipped by the kernel and counted as missed).
    let runs = all["fidelity"]["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 4);
    for r in runs.iter().filter(|r| r["tool"] == "ebq") {
        let (issued, delivered, dropped, missed) = (
            r["issued"].as_u64().unwrap(),
            r["delivered"].as_u64().unwrap(),
            r["dropped_reported"].as_u64().unwrap(),
            r["missed_reported"].as_u64().unwrap(),
        );
        assert!(delivered + dropped <= issued && issued <= delivered + dropped + missed, "{r}");
        assert_eq!(r["unaccounted"], 0, "{r}");
    }
    for r in runs {
        assert!(r["peak_rss_mb"].as_f64().is_some_and(|m| m > 0.0), "{r}");
    }
    // The burst through every output format (issue 35 item 6): exact or accounted.
    let burst = all["fidelity"]["burst"]["runs"].as_array().expect("burst runs");
    let formats: Vec<&str> = burst.iter().map(|r| r["format"].as_str().unwrap()).collect();
    assert_eq!(formats, ["table", "json", "csv", "parquet", "arrow"]);
    for r in burst {
        assert!(r["error"].is_null(), "{r}");
        assert_eq!(r["unaccounted"], 0, "{r}");
        assert_eq!(r["delivered"], r["delivered_reported"], "{r}");
    }

    // Startup: all four measured (query text from the cache and with --no-cache, bundle, bpftrace).
    let st = all["startup"]["results"].as_array().expect("startup");
    assert_eq!(st.len(), 4);
    assert!(st.iter().all(|r| r["seconds"].is_f64()), "{st:?}");

    // Sinks: every sink's encoding cost per row and its bytes.
    let sinks = all["sinks"]["sinks"].as_array().expect("sinks");
    assert_eq!(sinks.len(), 5, "{sinks:?}");
    for r in sinks {
        assert!(r["ns_per_row"].as_f64().is_some_and(|n| n > 0.0), "{r}");
        assert!(r["bytes_per_row"].as_f64().is_some_and(|b| b > 1.0), "{r}");
    }

    for svg in ["pervent.svg", "stages.svg", "stages-cpu.svg", "stages-aggregate.svg", "fidelity.svg", "startup.svg"] {
        let s = std::fs::read_to_string(out.join(svg)).unwrap_or_else(|e| panic!("{svg}: {e}"));
        assert!(s.starts_with("<svg") && s.contains("</svg>"), "{svg}");
    }
    let report = std::fs::read_to_string(&md).expect("report");
    for h in [
        "## Machine",
        "## Per-event cost",
        "## Six-stage dissection",
        "**CPU per I/O.**",
        "## Fidelity",
        "## Startup",
        "## Sinks",
        "## Targets",
    ] {
        assert!(report.contains(h), "report lacks {h}");
    }
    assert!(!out.join("scratch").exists(), "the scratch directory is removed");
    let _ = std::fs::remove_dir_all(&out);
}

/// `ebq bench report --quick`: every workload's round has fio's IOPS under
/// each tool, the report counted fio's reads exactly or accounted for the
/// rest as its loss, and the tables and the plot are written.
#[test]
fn bench_report_quick_counts_fio_reads_and_writes_its_table_and_plot() {
    let out = std::env::temp_dir().join(format!("ebq-bench-report-test.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let status = Command::new(ebq_bin())
        .args(["bench", "report", "--quick", "--out"])
        .arg(&out)
        .env_remove("DARSHAN_PREFIX")
        .status()
        .expect("ebq runs");
    assert!(status.success(), "ebq bench report --quick failed");
    let all: Value = serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let rp = &all["report"];
    assert_eq!(rp["tools"], serde_json::json!(["bare", "report", "floor"]), "no Darshan without DARSHAN_PREFIX");
    let ws = rp["workloads"].as_array().expect("workloads");
    let ids: Vec<&str> = ws.iter().map(|w| w["workload"].as_str().unwrap()).collect();
    assert_eq!(ids, ["4k psync", "4k io_uring", "64k psync", "64k io_uring"]);
    for w in ws {
        let rounds = w["rounds"].as_array().unwrap();
        assert_eq!(rounds.len(), 1, "{w}");
        for r in rounds {
            for tool in ["bare", "report", "floor"] {
                assert!(r[tool]["iops"].as_f64().is_some_and(|x| x > 0.0), "{tool}: {r}");
            }
            // Exact or accounted: the report's reads of fio's files plus its
            // loss (dropped + missed) cover fio's own count.
            let rep = &r["report"];
            let (ios, counted, loss) =
                (rep["ios"].as_f64().unwrap() as u64, rep["counted"].as_u64().unwrap(), rep["loss"].as_u64().unwrap());
            assert!(counted <= ios && ios <= counted + loss, "{}: {rep}", w["workload"]);
            if loss == 0 {
                assert_eq!(counted, ios, "{}: {rep}", w["workload"]);
            }
            // The floor pairs every process's calls: at least fio's psync reads.
            if w["engine"] == "psync" {
                assert!(r["floor"]["calls"].as_f64().unwrap() >= r["floor"]["ios"].as_f64().unwrap(), "{r}");
            }
        }
        for k in ["report/floor", "report/bare", "floor/bare"] {
            assert!(w["ratios"][k]["median"].as_f64().is_some_and(|x| x > 0.0), "{k}: {w}");
        }
    }
    let md = std::fs::read_to_string(out.join("RESULTS.md")).unwrap();
    for h in ["against its floor and Darshan (`ebq bench report`)", "| report loss |", "| report/floor |"] {
        assert!(md.contains(h), "RESULTS.md lacks {h}");
    }
    let svg = std::fs::read_to_string(out.join("report.svg")).unwrap();
    for label in ["report (IOPS", "floor (IOPS", "4k psync", "64k io_uring"] {
        assert!(svg.contains(label), "report.svg lacks {label}");
    }
    assert!(!out.join("scratch").exists(), "the scratch directory is removed");
    let _ = std::fs::remove_dir_all(&out);
}

/// `ebq bench always-on --quick`: the shipped configuration served beside fio
/// and `dd bs=1`: both workloads ran in every phase, every configured query
/// reported its in-BPF time on /metrics, the read-counting ones ran at least
/// once per read the workloads made while served (each read enters the
/// kernel once; a run skipped by another program's recursion guard could
/// lower it, not by half), and ebq's CPU and RSS were sampled.
#[test]
fn bench_always_on_quick_measures_the_shipped_config_beside_its_workloads() {
    let out = std::env::temp_dir().join(format!("ebq-bench-alwayson-test.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let status =
        Command::new(ebq_bin()).args(["bench", "always-on", "--quick", "--out"]).arg(&out).status().expect("ebq runs");
    assert!(status.success(), "ebq bench always-on --quick failed");
    let all: Value = serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let s = &all["always_on"];
    for phase in ["bare_before", "served", "bare_after"] {
        for k in ["fio_iops", "dd_reads_per_s"] {
            assert!(s[phase][k].as_f64().is_some_and(|x| x > 0.0), "{phase} {k}: {s}");
        }
    }
    let queries = s["queries"].as_array().expect("queries");
    let names: Vec<&str> = queries.iter().filter_map(|q| q["query"].as_str()).collect();
    for want in ["biolatency", "biolatency_disk", "vfsstat", "filetop", "fs", "syscount"] {
        assert!(names.contains(&want), "{want} not on /metrics: {names:?}");
    }
    let reads = s["served"]["fio_ios"].as_f64().unwrap() + s["served"]["dd_reads"].as_f64().unwrap();
    for q in queries.iter().filter(|q| ["vfsstat", "syscount"].contains(&q["query"].as_str().unwrap())) {
        assert!(q["bpf_runs"].as_f64().unwrap() >= reads / 2.0, "{q} for {reads} reads");
        assert!(q["ns_per_run"].as_f64().is_some_and(|x| x > 0.0), "{q}");
    }
    let e = &s["ebq"];
    assert!(e["samples"].as_array().is_some_and(|v| v.len() >= 4), "{e}");
    assert!(
        e["rss_kb_max"].as_u64().is_some_and(|x| x > 1000) && e["cpu_pct"].as_f64().is_some_and(|x| x > 0.0),
        "{e}"
    );
    let md = std::fs::read_to_string(out.join("RESULTS.md")).unwrap();
    assert!(md.contains("## Always-on cost of the shipped configuration"), "{md}");
    let _ = std::fs::remove_dir_all(&out);
}

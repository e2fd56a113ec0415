//! Error paths that need the real machine, and CLI options not covered elsewhere.

use crate::common;

use common::{ebq_bin, engine, workload_bin};
use ebq::{Error, RunningQuery, Scope};
use std::process::Command;

#[test]
fn a_verifier_rejection_is_reported_as_an_ebq_bug_with_the_log() {
    let prepared = engine().prepare("SELECT COUNT(*) FROM syscalls.sys_enter_pread64").unwrap();
    // Break the generated program the way a codegen bug would: read past the stack.
    let broken = prepared
        .source()
        .replace("\tstats->seen++;\n", "\tstats->seen += *(volatile __u64 *)((char *)&zero + 4096);\n");
    assert_ne!(broken, prepared.source());
    let object = ebq::runtime::compile(&broken).expect("still valid C");
    match RunningQuery::start_object(&prepared.physical, &object, Scope::All) {
        Err(e @ Error::Load { .. }) => {
            let text = e.to_string();
            assert!(text.contains("verifier rejected the program ebq generated"), "{text}");
            assert!(text.contains("ebq bug"), "{text}");
            assert!(text.contains("verifier log"), "{text}");
        }
        Err(other) => panic!("expected a load error, got {other}"),
        Ok(_) => panic!("the verifier accepted an out-of-bounds stack read"),
    }
}

#[test]
fn missing_tracefs_says_how_to_mount_it() {
    // A private mount namespace: unmounting there leaves the machine alone.
    let script = format!(
        "umount /sys/kernel/tracing 2>/dev/null; umount /sys/kernel/debug/tracing 2>/dev/null; umount /sys/kernel/debug 2>/dev/null; \
         exec {} 'SELECT COUNT(*) FROM syscalls.sys_enter_read' --duration 0.1",
        ebq_bin().display()
    );
    let out =
        Command::new("unshare").args(["--mount", "--propagation", "private", "sh", "-c", &script]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("tracefs is not mounted") && err.contains("mount -t tracefs nodev /sys/kernel/tracing"),
        "{err}"
    );
}

#[test]
fn interval_prints_running_totals_for_a_windowless_query() {
    let out = Command::new(ebq_bin())
        .args([
            "--interval",
            "0.2",
            "--duration",
            "0.7",
            "--format",
            "json",
            "SELECT COUNT(*) AS n FROM raw_syscalls.sys_enter",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let partial = lines.iter().filter(|l| l["partial"] == true).count();
    assert!((2..=4).contains(&partial), "three snapshots expected, got {partial}: {lines:?}");
    let last = lines.last().unwrap();
    assert!(last.get("partial").is_none(), "the final result is not partial");
    let counts: Vec<u64> = lines.iter().map(|l| l["n"].as_u64().unwrap()).collect();
    assert!(counts.windows(2).all(|w| w[0] <= w[1]), "running totals never decrease: {counts:?}");
}

#[test]
fn dash_p_traces_one_process_and_stops_when_it_exits() {
    let dir = std::env::temp_dir().join(format!("ebq-p-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let go = dir.join("go");
    let report = dir.join("r.json");
    let mut w = Command::new(workload_bin())
        .args(["pread", "--fds", "1", "--calls", "33", "--fd-base", "100", "--wait-file"])
        .arg(&go)
        .arg("--report")
        .arg(&report)
        .spawn()
        .unwrap();
    let sql_file = dir.join("q.sql");
    std::fs::write(
        &sql_file,
        "SELECT fd, COUNT(*) AS n\nFROM syscalls.sys_enter_pread64\nWHERE fd >= 100\nGROUP BY fd\n",
    )
    .unwrap();
    let ebq = Command::new(ebq_bin())
        .args(["-p", &w.id().to_string(), "--format", "json", "-f"])
        .arg(&sql_file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Release the workload once ebq says it is tracing.
    let mut ebq = ebq;
    let mut stderr = std::io::BufReader::new(ebq.stderr.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stderr, &mut line).unwrap();
    assert!(line.starts_with("ebq: tracing tracepoint:syscalls:sys_enter_pread64 in process"), "{line}");
    std::fs::write(&go, "go").unwrap();
    assert!(w.wait().unwrap().success());
    let out = ebq.wait_with_output().unwrap();
    let mut err = line;
    std::io::Read::read_to_string(&mut stderr, &mut err).unwrap();
    assert!(out.status.success(), "ebq exits by itself when the process ends: {err}");
    let rows: Vec<serde_json::Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["fd"].as_u64(), Some(100), "{rows:?}");
    // Accounting (-p, one event, aggregate): n + dropped + missed = the workload's 33 preads.
    let stats = common::cli_stats(&err);
    common::assert_exact_or_accounted(rows[0]["n"].as_u64().unwrap(), 33, &stats, "preads of fd 100");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn dash_p_with_a_missing_process_is_refused() {
    let out = Command::new(ebq_bin())
        .args(["-p", "999999999", "SELECT COUNT(*) FROM syscalls.sys_enter_read"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no process with pid 999999999"));
}

//! The `ebq` command line on the real kernel: -c, JSON/CSV output, signals, exit codes.

use crate::common;

use common::{ebq_bin, output_watched, workload_bin};
use serde_json::Value as Json;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn json_lines(stdout: &[u8]) -> Vec<Json> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

#[test]
fn dash_c_follows_forked_children_and_returns_the_exit_status() {
    let dir = std::env::temp_dir().join(format!("ebq-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let report = dir.join("fork.json");
    let cmd = format!(
        "{} fork --children 3 --calls 7 --comm ebq-forker --report {}",
        workload_bin().display(),
        report.display()
    );
    let out = Command::new(ebq_bin())
        .args(["-c", &cmd, "--format", "json"])
        .arg("SELECT pid, COUNT(*) AS n FROM syscalls.sys_enter_pread64 WHERE comm = 'ebq-forker' GROUP BY pid")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Json = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let mut want: Vec<u64> = report["children"].as_array().unwrap().iter().map(|p| p.as_u64().unwrap()).collect();
    want.sort();
    let rows = json_lines(&out.stdout);
    let got: Vec<(u64, u64)> = rows.iter().map(|r| (r["pid"].as_u64().unwrap(), r["n"].as_u64().unwrap())).collect();
    assert_eq!(got, want.iter().map(|&p| (p, 7)).collect::<Vec<_>>(), "every child, 7 preads each");
    for r in &rows {
        let (start, end) = (r["window_start_ns"].as_u64().unwrap(), r["window_end_ns"].as_u64().unwrap());
        assert!(start < end);
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("events seen, 21 matched") && stderr.contains("0 dropped"), "{stderr}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn dash_c_exits_with_the_command_status() {
    let out = Command::new(ebq_bin())
        .args(["-c", "exit 7", "SELECT COUNT(*) FROM syscalls.sys_enter_pread64"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn csv_has_a_header_and_window_columns() {
    let cmd = format!("{} pread --fds 1 --calls 12 --fd-base 100 --comm ebq-csv", workload_bin().display());
    let out = Command::new(ebq_bin())
        .args(["-c", &cmd, "--format", "csv"])
        .arg("SELECT comm, COUNT(*) AS n FROM syscalls.sys_enter_pread64 WHERE comm = 'ebq-csv' GROUP BY comm WINDOW(time, 60000, 60000)")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('{')).collect();
    assert_eq!(lines[0], "window_start_ns,window_end_ns,window_start,window_end,comm,n");
    assert!(lines[1].ends_with(",ebq-csv,12"), "{text}");
}

#[test]
fn sigint_prints_the_final_window_and_detaches() {
    let mut child = Command::new(ebq_bin())
        .args(["--format", "json", "SELECT COUNT(*) AS n FROM raw_syscalls.sys_enter WINDOW(time, 60000, 60000)"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until ebq says it is tracing, then interrupt.
    let (line, _stderr) = common::first_stderr_line(&mut child);
    assert!(line.starts_with("ebq: tracing tracepoint:raw_syscalls:sys_enter in all processes"), "{line}");
    std::thread::sleep(Duration::from_millis(50));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    let mut stdout = String::new();
    std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut stdout).unwrap();
    assert!(status.success());
    let rows = json_lines(stdout.as_bytes());
    assert_eq!(rows.len(), 1, "the partial window is printed: {stdout}");
    assert!(rows[0]["n"].as_u64().unwrap() > 0);
}

#[test]
fn duration_stops_a_system_wide_query() {
    let start = Instant::now();
    let out = Command::new(ebq_bin())
        .args(["--duration", "0.5", "SELECT cpu, COUNT(*) FROM raw_syscalls.sys_enter GROUP BY cpu"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(start.elapsed() < Duration::from_secs(10));
    assert!(String::from_utf8_lossy(&out.stdout).contains("COUNT(*)"));
}

#[test]
fn bad_query_on_the_command_line_is_positioned() {
    let out = Command::new(ebq_bin()).arg("SELECT cout FROM syscalls.sys_enter_pread64").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown column `cout`") && err.contains("^^^^") && err.contains("did you mean `count`"),
        "{err}"
    );
}

#[test]
fn nothing_stays_loaded_after_exit() {
    // Each run's own programs (from its fdinfo while it ran) are gone once it exits.
    for args in [
        vec!["--duration", "0.2", "SELECT COUNT(*) FROM raw_syscalls.sys_enter"],
        vec!["-c", "true", "SELECT comm, COUNT(*) FROM raw_syscalls.sys_enter GROUP BY comm"],
        vec!["--duration", "0.2", "SELECT pid, comm FROM syscalls.sys_enter_read"],
    ] {
        let (out, watch) = output_watched(Command::new(ebq_bin()).args(&args));
        assert!(out.status.success(), "{args:?}");
        let held = watch.assert_gone();
        // (`-c true` may load and unload between two looks.)
        assert!(args[0] != "--duration" || !held.is_empty(), "{args:?}: no program seen while it ran");
    }
}

#[test]
fn wakeup_threshold_is_an_option_and_every_row_still_arrives() {
    let out = Command::new(ebq_bin())
        .args(["explain", "--wakeup-bytes", "4096", "SELECT fd FROM syscalls.sys_enter_read"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("#define EBQ_WAKEUP_BYTES 4096"));
    for wakeup in ["0", "1048576"] {
        let cmd = format!("{} pread --fds 1 --calls 333 --fd-base 100 --comm ebq-wake", workload_bin().display());
        let out = Command::new(ebq_bin())
            .args(["-c", &cmd, "--wakeup-bytes", wakeup, "--format", "csv"])
            .arg("SELECT fd, count FROM syscalls.sys_enter_pread64 WHERE comm = 'ebq-wake'")
            .output()
            .unwrap();
        assert!(out.status.success());
        let rows = String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.starts_with("100,")).count();
        assert_eq!(rows, 333, "wake-up threshold {wakeup}");
    }
}

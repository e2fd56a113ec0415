//! What a bpftrace user still trips over (issue 40), on the `ebq` command
//! line: each test asserts the exact output or message.

use crate::common;

use common::{cli_stats, ebq_bin, workload_bin};
use serde_json::Value as Json;
use std::process::Command;

/// Item 8: `ebq queries` prints each description whole (vfsstat's first
/// sentence runs over three comment lines of its file), wrapped to the width
/// of the terminal (`COLUMNS` when stdout is not one).
#[test]
fn queries_lists_each_description_whole_wrapped_to_the_terminal() {
    let out = Command::new(ebq_bin()).arg("queries").env("COLUMNS", "80").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let long: Vec<&str> = text.lines().filter(|l| l.chars().count() > 80).collect();
    assert!(long.is_empty(), "lines over 80 columns: {long:?}");
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains(
            "vfsstat reads, writes, fsyncs, opens and creates per second (bcc vfsstat's columns), through system \
             calls and io_uring requests alike: each counted where it starts (a call's entry, a request's \
             submission), one program per path."
        ),
        "{text}"
    );
}

/// Item 9: a row query stops at its LIMIT; the stats line says how many rows
/// it printed beside what was matched and delivered.
#[test]
fn a_row_query_with_limit_says_how_many_rows_it_printed() {
    let cmd = format!("{} pread --fds 1 --calls 12 --fd-base 100 --comm ebq-limit", workload_bin().display());
    let sql = "SELECT tid, count FROM syscalls.sys_enter_pread64 WHERE comm = 'ebq-limit' LIMIT 3";
    let out = Command::new(ebq_bin()).args(["--format", "json", "-c", &cmd, sql]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let rows: Vec<Json> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Json>(l).ok())
        .filter(|r| r.get("tid").is_some())
        .collect();
    assert_eq!(rows.len(), 3, "{rows:?}\n{err}");
    let stats = cli_stats(&err);
    assert!(err.contains("; 3 rows printed (LIMIT 3)"), "{err}");
    assert!(stats.delivered >= 3 && stats.matched >= stats.delivered, "{err}");
}

/// Item 10: `ppid`, the real parent's tgid. The workload is this test
/// process's child, so every one of its events has this process's pid as
/// `ppid`. Checked at a raw-syscall program (syscalls.*), a classic
/// tracepoint (raw_syscalls.sys_enter) and a tp_btf one (sched_switch,
/// the workload switching out as it sleeps between calls).
#[test]
fn ppid_is_the_real_parents_pid_at_every_kind_of_program() {
    use common::{assert_exact_or_accounted, rows_of, run_around, u};
    let me = std::process::id() as u64;
    // fd >= 100 leaves out the dynamic loader's preads before main.
    let pread = ["pread", "--fds", "1", "--calls", "25", "--fd-base", "100", "--gap-us", "2000"];
    for (sql, counted_is_calls) in [
        ("SELECT pid, ppid, COUNT(*) AS n FROM syscalls.sys_enter_pread64 WHERE pid = {pid} AND fd >= 100 GROUP BY pid, ppid", true),
        ("SELECT pid, ppid, COUNT(*) AS n FROM raw_syscalls.sys_enter WHERE pid = {pid} GROUP BY pid, ppid", false),
        ("SELECT prev_pid, ppid, COUNT(*) AS n FROM sched.sched_switch WHERE prev_pid = {pid} GROUP BY prev_pid, ppid", false),
    ] {
        let (outs, stats, report) = run_around(sql, |_| ebq::Scope::All, &pread);
        let rows = rows_of(&outs);
        assert_eq!(rows.len(), 1, "one (pid, ppid) group: {rows:?}");
        assert_eq!(u(&rows[0], "ppid"), me, "{sql}: {rows:?}");
        if counted_is_calls {
            // Exact or accounted: the workload's own tally of its preads.
            let calls: u64 = report["fds"].as_array().unwrap().iter().map(|f| f["calls"].as_u64().unwrap()).sum();
            assert_exact_or_accounted(u(&rows[0], "n"), calls, &stats, "preads");
        }
    }
}

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

/// `ebq ARGS`: (exit success, stdout, stderr).
fn ebq(args: &[&str]) -> (bool, String, String) {
    let out = common::ebq_output(args);
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

/// Item 2: `errno_name(ret)` names the kernel's errors as Linux does, in a
/// key and in a filter the kernel evaluates; the counts are the workload's
/// own (two ENOENT, one ENOTDIR); `signal_name(sig)` likewise the signals a
/// shell sent itself. A misspelt function is "unknown function"
/// first (not a GROUP BY complaint), with the name it means and the fixed
/// query, which then runs.
#[test]
fn errno_and_signal_names_group_and_filter_and_a_misspelt_function_is_named_first() {
    let workload = workload_bin().display().to_string();
    let cmd = format!(
        "{workload} opens --comm ebq-errno --paths /etc/hostname,/nonexistent/a,/etc/hostname/x,/nonexistent/b"
    );
    let grouped = "SELECT errno_name(ret) AS err, COUNT(*) AS n FROM syscalls.sys_exit_openat \
                   WHERE comm = 'ebq-errno' AND ret < 0 GROUP BY ret ORDER BY n DESC";
    let filtered =
        "SELECT COUNT(*) AS n FROM syscalls.sys_exit_openat WHERE comm = 'ebq-errno' AND errno_name(ret) = 'ENOTDIR'";
    let mut got = vec![];
    for sql in [grouped, filtered] {
        let (ok, stdout, stderr) = ebq(&["-c", &cmd, "--format", "json", sql]);
        assert!(ok, "{stderr}");
        for row in stdout.lines().filter_map(|l| serde_json::from_str::<Json>(l).ok()).filter(|r| r.get("n").is_some())
        {
            got.push((row.get("err").and_then(Json::as_str).unwrap_or("-").to_string(), row["n"].as_u64().unwrap()));
        }
        assert_eq!(cli_stats(&stderr).dropped, 0, "{stderr}");
    }
    let want = [("ENOENT", 2), ("ENOTDIR", 1), ("-", 1)];
    assert_eq!(got, want.map(|(e, n)| (e.to_string(), n)));
    // signal_name(sig) the same way: a shell that sends itself SIGUSR1 once and SIGUSR2 twice.
    let (ok, stdout, stderr) = ebq(&[
        "-c",
        "sh -c 'trap : USR1 USR2; kill -USR1 $$; kill -USR2 $$; kill -USR2 $$'",
        "--format",
        "json",
        "SELECT signal_name(sig) AS s, COUNT(*) AS n FROM signal.signal_generate \
         WHERE signal_name(sig) = 'SIGUSR1' OR signal_name(sig) = 'SIGUSR2' GROUP BY sig ORDER BY n",
    ]);
    assert!(ok, "{stderr}");
    let signals: Vec<(String, u64)> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Json>(l).ok())
        .map(|r| (r["s"].as_str().unwrap().to_string(), r["n"].as_u64().unwrap()))
        .collect();
    assert_eq!(signals, [("SIGUSR1".to_string(), 1), ("SIGUSR2".to_string(), 2)], "{stderr}");

    let typo = "SELECT comm, errno_nam(ret) AS e FROM raw_syscalls.sys_exit GROUP BY comm, id, ret";
    let (ok, _, stderr) = ebq(&["--duration", "0.2", typo]);
    assert!(!ok);
    let fixed = "SELECT comm, errno_name(ret) AS e FROM raw_syscalls.sys_exit GROUP BY comm, id, ret";
    assert_eq!(
        stderr,
        format!(
            "error: unknown function `errno_nam` at 1:14\n1 | {typo}\n                 ^^^^^^^^^\n  \
             help: did you mean `errno_name`?\n  fixed: {fixed}\n"
        )
    );
    let (ok, _, stderr) = ebq(&["--duration", "0.2", fixed]);
    assert!(ok, "the fixed query runs: {stderr}");
}

/// Item 3: a column missing from GROUP BY gets a fix that binds for its
/// type — COUNT(DISTINCT s) for a string (MAX of a string is refused),
/// MAX(x) for a number — and each proposed query runs as printed.
#[test]
fn a_missing_group_by_proposes_a_fix_that_runs() {
    for (sql, help, fixed) in [
        (
            "SELECT comm, filename FROM syscalls.sys_enter_openat GROUP BY comm",
            "add `GROUP BY filename`, or count its values with COUNT(DISTINCT filename)",
            "SELECT comm, COUNT(DISTINCT filename) FROM syscalls.sys_enter_openat GROUP BY comm",
        ),
        (
            "SELECT comm, ret FROM raw_syscalls.sys_exit GROUP BY comm",
            "add `GROUP BY ret`, or use e.g. MAX(ret)",
            "SELECT comm, MAX(ret) FROM raw_syscalls.sys_exit GROUP BY comm",
        ),
    ] {
        let (ok, _, stderr) = ebq(&["--duration", "0.2", sql]);
        assert!(!ok);
        assert!(stderr.ends_with(&format!("  help: {help}\n  fixed: {fixed}\n")), "{stderr}");
        let (ok, _, stderr) = ebq(&["--duration", "0.2", fixed]);
        assert!(ok, "{fixed}: {stderr}");
    }
}

/// Item 5: the stats line holds only losses; a JOIN's ends without a start
/// (other processes' exits) are on their own line that says they are not
/// losses. A query over a dozen events (io.ops) says how many on one short
/// tracing line, and `-v` lists each branch.
#[test]
fn status_lines_say_losses_apart_and_the_tracing_line_is_short() {
    let sql = "SELECT path, COUNT(*) FROM io.ops GROUP BY path";
    let (ok, _, stderr) = ebq(&["--duration", "0.3", sql]);
    assert!(ok, "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    let tracing = lines[0];
    assert!(tracing.starts_with("ebq: tracing ") && tracing.chars().count() <= 120, "{tracing}");
    assert!(tracing.ends_with(" UNION ALL branches) in all processes; -v lists them; Ctrl-C to stop"), "{tracing}");
    let branches: usize = tracing.split(" events (").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    let stats = lines.iter().find(|l| l.contains(" events seen")).unwrap();
    assert!(!stats.contains("unmatched") && !stats.contains("no start"), "{stats}");
    // System-wide, other processes' ends come within the run: on their own line, not losses.
    let ends = lines.iter().find(|l| l.starts_with("ebq: JOIN: ")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(ends.contains(" end events had no start (") && ends.ends_with("): not losses"), "{ends}");

    let (ok, _, stderr) = ebq(&["-v", "--duration", "0.3", sql]);
    assert!(ok, "{stderr}");
    let listed: Vec<&str> = stderr.lines().filter(|l| l.starts_with("ebq:   ")).collect();
    assert_eq!(listed.len(), branches, "{stderr}");
    assert!(
        listed.contains(&"ebq:   tracepoint:raw_syscalls:sys_enter JOIN tracepoint:raw_syscalls:sys_exit"),
        "{stderr}"
    );
}

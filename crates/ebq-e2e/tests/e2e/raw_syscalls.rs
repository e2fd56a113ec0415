//! Issue 20 item 1: system-call events on the raw `sys_enter`/`sys_exit`
//! tracepoints give what the classic `syscalls:*` tracepoints give. Each query
//! runs under each attachment (`--attach classic`, `raw`, and `auto`, which
//! mixes them) around the same deterministic workload, and each must equal
//! the workload's own tally:
//! counts, argument values (fd, count), return values (negative ones too),
//! the system-call number, enter→exit JOINs, and `seen` (the traced call only,
//! though a raw program runs on every system call).

use crate::common;

use common::{
    assert_exact_or_accounted, assert_keyed_exact_or_accounted, assert_map_exact_or_accounted, per_fd, rows_of,
    run_around_with, s, u, Row,
};
use ebq::plan::{PlanOptions, SyscallAttach};
use ebq::{Engine, QueryStats, Scope};
use serde_json::Value as Json;
use std::collections::BTreeMap;

const PREAD: &[&str] =
    &["pread", "--fds", "3", "--calls", "40,25,13", "--fd-base", "100", "--threads-per-cpu", "--size-base", "96"];

/// Runs `sql` around `workload` (`-p` scope) with each attachment (auto runs
/// a JOIN's entry raw and its exit classic): (attachment, rows, stats, report).
fn on_both(sql: &str, workload: &[&str]) -> Vec<(SyscallAttach, Vec<Row>, QueryStats, Json)> {
    [SyscallAttach::Classic, SyscallAttach::Raw, SyscallAttach::Auto]
        .into_iter()
        .map(|attach| {
            let engine = Engine::new().unwrap().with_options(PlanOptions { attach, ..PlanOptions::default() });
            let plan = engine.prepare(sql).unwrap().explain();
            let (raw, classic) = (plan.contains("(tp_btf)"), plan.contains("BPF_PROG_TYPE_TRACEPOINT"));
            match attach {
                SyscallAttach::Classic => assert!(classic && !raw, "{plan}"),
                SyscallAttach::Raw => assert!(raw && !classic, "{plan}"),
                SyscallAttach::Auto => {}
            }
            let (outs, stats, report) = run_around_with(&engine, sql, Scope::Process, workload);
            (attach, rows_of(&outs), stats, report)
        })
        .collect()
}

/// Reads a signed integer cell.
fn signed(row: &Row, col: &str) -> i64 {
    match row.get(col) {
        Some(ebq::exec::Value::I(v)) => *v,
        other => panic!("column {col}: expected a signed integer, got {other:?}"),
    }
}

fn total_calls(report: &Json) -> u64 {
    report["total_calls"].as_u64().unwrap()
}

#[test]
fn arguments_counts_and_the_number_are_the_same_on_every_attachment() {
    let sql = "SELECT fd, COUNT(*) AS calls, SUM(count) AS bytes, MIN(__syscall_nr) AS nr_lo, \
               MAX(__syscall_nr) AS nr_hi FROM syscalls.sys_enter_pread64 WHERE fd >= 100 GROUP BY fd";
    for (attach, rows, stats, report) in on_both(sql, PREAD) {
        let got: BTreeMap<u64, (u64, u64)> =
            rows.iter().map(|r| (u(r, "fd"), (u(r, "calls"), u(r, "bytes")))).collect();
        // Accounting (-p, one event, aggregate): calls per fd + dropped + missed = the workload's;
        // (calls, bytes) exact when nothing was lost.
        let what = format!("{attach:?}: {rows:?}");
        assert_keyed_exact_or_accounted(&got, &per_fd(&report), |v| v.0, &stats, &what);
        assert!(rows.iter().all(|r| (u(r, "nr_lo"), u(r, "nr_hi")) == (17, 17)), "{attach:?}: pread64 is 17: {rows:?}");
        // The raw program runs on every system call; seen counts the workload's pread64 calls
        // only (+ missed: the runs the kernel skipped), and every one seen matches.
        assert_exact_or_accounted(stats.seen, total_calls(&report), &stats, &format!("{attach:?}: seen"));
        assert_eq!(stats.matched, stats.seen, "{attach:?}: {stats:?}");
    }
}

/// An fd argument is its register's low 32 bits, as the kernel takes it (`unsigned int fd`):
/// `fileops` passes fsync and fdatasync their fd with 6 in the upper half. Every attachment
/// gives the fd the kernel used and its file (before, the raw one gave 0x6_00000003 and no file).
#[test]
fn an_fd_is_the_low_half_of_its_register_on_every_attachment() {
    let file = std::env::temp_dir().join(format!("ebq-dirty-fd-{}.dat", std::process::id()));
    let name = file.file_name().unwrap().to_str().unwrap().to_string();
    let sql = "SELECT fd, file_name, COUNT(*) AS n FROM syscalls.sys_enter_fsync GROUP BY fd, file_name";
    for (attach, rows, stats, report) in on_both(sql, &["fileops", "--file", file.to_str().unwrap()]) {
        let got: BTreeMap<(u64, String), u64> =
            rows.iter().map(|r| ((u(r, "fd"), s(r, "file_name")), u(r, "n"))).collect();
        let want =
            BTreeMap::from([((report["fd"].as_u64().unwrap(), name.clone()), report["fsync"].as_u64().unwrap())]);
        // Accounting (-p, one event, aggregate): calls + dropped + missed = the workload's one fsync.
        assert_keyed_exact_or_accounted(&got, &want, |n| *n, &stats, &format!("{attach:?}: {rows:?}"));
    }
    let _ = std::fs::remove_file(&file);
}

#[test]
fn enter_exit_joins_pair_every_call_on_every_attachment() {
    let sql = "SELECT e.fd, COUNT(*) AS calls, SUM(x.ret) AS bytes, MIN(x.time - e.time) AS minlat \
               FROM syscalls.sys_enter_pread64 e JOIN syscalls.sys_exit_pread64 x ON e.tid = x.tid \
               WHERE e.fd >= 100 GROUP BY e.fd";
    for (attach, rows, stats, report) in on_both(sql, PREAD) {
        let got: BTreeMap<u64, (u64, u64)> =
            rows.iter().map(|r| (u(r, "fd"), (u(r, "calls"), u(r, "bytes")))).collect();
        // Accounting (-p, JOIN): pairs per fd + dropped + missed ends/starts + open + superseded
        // = the workload's calls; (pairs, bytes) exact when nothing was lost.
        let what = format!("{attach:?}: {rows:?}");
        assert_keyed_exact_or_accounted(&got, &per_fd(&report), |v| v.0, &stats, &what);
        assert!(rows.iter().all(|r| u(r, "minlat") > 0), "{attach:?}: exit after enter: {rows:?}");
        assert_exact_or_accounted(stats.seen, total_calls(&report), &stats, &format!("{attach:?}: seen"));
        assert_eq!(stats.matched, stats.seen, "{attach:?}: {stats:?}");
        assert_eq!(stats.pending_full, 0, "{attach:?}: {stats:?}");
    }
}

/// `fileio` closes each file, then fsyncs the closed fd, then fsyncs a fd
/// that was never open: every fsync fails with EBADF.
#[test]
fn negative_return_values_and_write_arguments_are_the_same_on_every_attachment() {
    let dir = std::env::temp_dir().join(format!("ebq-rawsys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files = format!("{0}/a.dat,{0}/b.dat", dir.display());
    let workload = ["fileio", "--files", &files, "--writes", "7,4", "--reads", "5,3", "--size", "100"];
    let ebadf = -(libc::EBADF as i64);
    for (attach, rows, stats, report) in
        on_both("SELECT ret, COUNT(*) AS n FROM syscalls.sys_exit_fsync GROUP BY ret", &workload)
    {
        let got: BTreeMap<i64, u64> = rows.iter().map(|r| (signed(r, "ret"), u(r, "n"))).collect();
        let files = report["files"].as_array().unwrap().len() as u64;
        // Accounting (-p, one event, aggregate): fsyncs per ret + dropped + missed = the
        // workload's (every one EBADF).
        assert_map_exact_or_accounted(&got, &[(ebadf, files + 1)].into(), &stats, &format!("{attach:?}"));
        assert_exact_or_accounted(stats.seen, files + 1, &stats, &format!("{attach:?}: seen"));
    }
    // The files share fd numbers (each is closed before the next opens), not sizes: 100 B × (file index + 1).
    let sql = "SELECT count, COUNT(*) AS n, MIN(fd) AS fd_lo, MAX(fd) AS fd_hi FROM syscalls.sys_enter_write \
               WHERE count <= 200 GROUP BY count";
    for (attach, rows, stats, report) in on_both(sql, &workload) {
        let got: BTreeMap<u64, (u64, u64, u64)> =
            rows.iter().map(|r| (u(r, "count"), (u(r, "n"), u(r, "fd_lo"), u(r, "fd_hi")))).collect();
        let want: BTreeMap<u64, (u64, u64, u64)> = report["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                let fd = f["fd"].as_u64().unwrap();
                (f["size"].as_u64().unwrap(), (f["writes"].as_u64().unwrap(), fd, fd))
            })
            .collect();
        // Accounting (-p, one event, aggregate): writes per size exact or accounted; the fds
        // too when nothing was lost.
        assert_keyed_exact_or_accounted(&got, &want, |v| v.0, &stats, &format!("{attach:?}: {rows:?}"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `raw_syscalls` events (every call, `id` and `args[6]`, or `ret`) run raw
/// too (`auto`: raw), with no number check: their values, the enter→exit
/// JOIN on thread and number (per thread or in a HASH) and `seen` are the
/// classic tracepoint's, and equal the workload's own tally.
#[test]
fn raw_syscalls_events_give_the_same_on_every_attachment() {
    let sql = "SELECT args[0] AS fd, COUNT(*) AS calls, SUM(args[2]) AS bytes FROM raw_syscalls.sys_enter \
               WHERE id = syscall_nr('pread64') AND args[0] >= 100 GROUP BY args[0]";
    for (attach, rows, stats, report) in on_both(sql, PREAD) {
        let got: BTreeMap<u64, (u64, u64)> =
            rows.iter().map(|r| (u(r, "fd"), (u(r, "calls"), u(r, "bytes")))).collect();
        // Accounting (-p, one event, aggregate): as for the classic events above.
        let what = format!("{attach:?}: {rows:?}");
        assert_keyed_exact_or_accounted(&got, &per_fd(&report), |v| v.0, &stats, &what);
        // Every system call of the process is seen, pread64 among them.
        assert!(stats.seen > total_calls(&report), "{attach:?}");
        assert_exact_or_accounted(stats.matched, total_calls(&report), &stats, &format!("{attach:?}: matched"));
    }
    let join = "SELECT args[0] AS fd, COUNT(*) AS calls, SUM(x.ret) AS bytes FROM raw_syscalls.sys_enter e \
                JOIN raw_syscalls.sys_exit x ON e.tid = x.tid AND e.id = x.id \
                WHERE e.id = syscall_nr('pread64') AND args[0] >= 100 GROUP BY fd";
    for thread_pairs in [true, false] {
        let options = PlanOptions { thread_pairs, ..PlanOptions::default() };
        let engine = Engine::new().unwrap().with_options(options);
        let plan = engine.prepare(join).unwrap().explain();
        let map = if thread_pairs { "in TASK_STORAGE ebq_pending" } else { "in HASH ebq_pending" };
        assert!(plan.contains(map) && plan.contains("raw sys_exit (tp_btf)"), "{plan}");
        let (outs, stats, report) = run_around_with(&engine, join, Scope::Process, PREAD);
        let rows = rows_of(&outs);
        let got: BTreeMap<u64, (u64, u64)> =
            rows.iter().map(|r| (u(r, "fd"), (u(r, "calls"), u(r, "bytes")))).collect();
        // Accounting (-p, JOIN): pairs per fd + dropped + missed ends/starts + open + superseded
        // = the workload's calls; exact when nothing was lost.
        assert_keyed_exact_or_accounted(&got, &per_fd(&report), |v| v.0, &stats, &format!("{map}: {rows:?}"));
        assert_exact_or_accounted(stats.seen, total_calls(&report), &stats, &format!("{map}: seen"));
        assert_eq!(stats.pending_full, 0, "{map}: {stats:?}");
    }
}

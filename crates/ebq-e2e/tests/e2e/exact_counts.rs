//! Issue 2 acceptance: queries on the real kernel return exactly what a
//! workload with known syscalls did. Every expected number comes from the
//! workload's own report of the calls it issued.

use crate::common;

use common::{f, rows_of, run_around, s, u, Row};
use ebq::{Scope, WindowBounds};
use serde_json::Value as Json;
use std::collections::BTreeMap;

/// Per fd: (calls, bytes, max) from a pread report.
fn per_fd(report: &Json) -> BTreeMap<u64, (u64, u64, u64)> {
    report["fds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["fd"].as_u64().unwrap(),
                (f["calls"].as_u64().unwrap(), f["bytes"].as_u64().unwrap(), f["max"].as_u64().unwrap()),
            )
        })
        .collect()
}

/// Per (fd, cpu): (calls, bytes, max) from a `--threads-per-cpu` pread report.
fn per_fd_cpu(report: &Json) -> BTreeMap<(u64, u64), (u64, u64, u64)> {
    let mut m = BTreeMap::new();
    for f in report["fds"].as_array().unwrap() {
        for p in f["per_cpu"].as_array().unwrap() {
            let v = (p["calls"].as_u64().unwrap(), p["bytes"].as_u64().unwrap(), p["max"].as_u64().unwrap());
            m.insert((f["fd"].as_u64().unwrap(), p["cpu"].as_u64().unwrap()), v);
        }
    }
    m
}

/// Sums the eBQL example's per-window rows into per-(fd, cpu) (calls, bytes, max).
fn summed(rows: &[Row]) -> BTreeMap<(u64, u64), (u64, u64, u64)> {
    let mut m: BTreeMap<(u64, u64), (u64, u64, u64)> = BTreeMap::new();
    for r in rows {
        let fd = u(r, "fd");
        if fd < 100 {
            continue; // the dynamic loader's preads on fd 3, before main
        }
        let n = u(r, "COUNT(*)");
        let e = m.entry((fd, u(r, "cpu"))).or_default();
        e.0 += n;
        e.1 += (f(r, "AVG(count)") * n as f64).round() as u64;
        e.2 = e.2.max(u(r, "MAX(count)"));
    }
    m
}

const PREAD: &[&str] =
    &["pread", "--fds", "3", "--calls", "40,25,13", "--fd-base", "100", "--threads-per-cpu", "--gap-us", "4000"];

fn check_ebql_example(sql: &str) {
    let (outs, stats, report) = run_around(sql, |_| Scope::All, PREAD);
    let windows = outs.iter().filter(|o| o.batch.num_rows() > 0).count();
    assert!(windows >= 2, "a ~160 ms workload over 100 ms windows spans at least two windows, got {windows}");
    // Windows tile time: each starts where the previous ended.
    for pair in outs.windows(2) {
        let (WindowBounds::Time { end_ns, .. }, WindowBounds::Time { start_ns, .. }) = (pair[0].window, pair[1].window)
        else {
            panic!("time windows expected");
        };
        assert_eq!(end_ns, start_ns);
    }
    // Accounting (one event, aggregate): calls + dropped + missed cover the workload's; the
    // per-(fd, cpu) cells are exact when nothing was lost.
    let (got, want) = (summed(&rows_of(&outs)), per_fd_cpu(&report));
    let calls = |m: &BTreeMap<(u64, u64), (u64, u64, u64)>| m.values().map(|v| v.0).sum::<u64>();
    common::assert_exact_or_accounted(calls(&got), calls(&want), &stats, sql);
    if common::lost(&stats) == 0 {
        assert_eq!(got, want, "{sql}");
    }
}

#[test]
fn ebql_example_query_counts_every_pread_in_ebql_clause_order() {
    check_ebql_example(
        "SELECT fd, cpu, COUNT(*), MAX(count), AVG(count) FROM tracepoint/syscalls/sys_enter_pread64 \
         GROUP BY fd, cpu WHERE pid == {pid} WINDOW(time, 100, 100)",
    );
}

#[test]
fn ebql_example_query_counts_every_pread_in_sql_clause_order() {
    check_ebql_example(
        "SELECT fd, cpu, COUNT(*), MAX(count), AVG(count)\nFROM tracepoint:syscalls:sys_enter_pread64\n\
         WHERE pid = {pid}\nGROUP BY fd, cpu\nWINDOW(time, 100, 100);",
    );
}

#[test]
fn count_windows_hold_exactly_n_events() {
    let sql = "SELECT COUNT(*) AS n, SUM(count) AS bytes FROM syscalls.sys_enter_pread64 \
               WHERE pid = {pid} AND fd >= 100 WINDOW(count, 10, 10)";
    let (outs, stats, report) =
        run_around(sql, |_| Scope::All, &["pread", "--fds", "2", "--calls", "41,37", "--fd-base", "100"]);
    let total = report["total_calls"].as_u64().unwrap();
    let rows = rows_of(&outs);
    // Accounting (one event, count windows): events + dropped + missed = the workload's; a
    // lost event shifts every later window, so the windows are checked only when none was.
    common::assert_exact_or_accounted(rows.iter().map(|r| u(r, "n")).sum(), total, &stats, "preads");
    if common::lost(&stats) > 0 {
        return;
    }
    let counts: Vec<u64> = rows.iter().map(|r| u(r, "n")).collect();
    let mut expected = vec![10; (total / 10) as usize];
    expected.push(total % 10);
    assert_eq!(counts, expected);
    let indexes: Vec<u64> = outs
        .iter()
        .map(|o| match o.window {
            WindowBounds::Count { index } => index,
            other => panic!("count windows expected, got {other:?}"),
        })
        .collect();
    assert_eq!(indexes, (0..expected.len() as u64).collect::<Vec<_>>());
    assert_eq!(rows.iter().map(|r| u(r, "bytes")).sum::<u64>(), report["total_bytes"].as_u64().unwrap());
}

#[test]
fn ungrouped_aggregate_without_window_is_one_exact_row() {
    let sql = "SELECT COUNT(*), SUM(count), MIN(count), MAX(count), AVG(count) FROM syscalls.sys_enter_pread64 \
               WHERE pid = {pid} AND fd >= 100";
    let (outs, stats, report) = run_around(
        sql,
        |_| Scope::All,
        &["pread", "--fds", "3", "--calls", "7,11,13", "--fd-base", "100", "--size-base", "10"],
    );
    let rows = rows_of(&outs);
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    let calls = report["total_calls"].as_u64().unwrap();
    let bytes = report["total_bytes"].as_u64().unwrap();
    // Accounting (one event, aggregate): COUNT + dropped + missed = the workload's calls.
    common::assert_exact_or_accounted(u(r, "COUNT(*)"), calls, &stats, "preads");
    if common::lost(&stats) > 0 {
        return;
    }
    assert_eq!(u(r, "SUM(count)"), bytes);
    assert_eq!(u(r, "MIN(count)"), 10);
    assert_eq!(u(r, "MAX(count)"), 50);
    assert!((f(r, "AVG(count)") - bytes as f64 / calls as f64).abs() < 1e-9);
    assert_eq!(stats.matched, calls);
}

#[test]
fn comm_filter_and_group_by_comm_across_both_cpus() {
    let sql = "SELECT comm, cpu, COUNT(*) AS calls, SUM(count) AS bytes FROM syscalls.sys_enter_pread64 \
               WHERE comm = 'ebq-wl-comm' GROUP BY comm, cpu";
    let (outs, stats, report) = run_around(
        sql,
        |_| Scope::All,
        &["pread", "--fds", "2", "--calls", "30,21", "--fd-base", "100", "--threads-per-cpu", "--comm", "ebq-wl-comm"],
    );
    let mut want: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for ((_, cpu), (calls, bytes, _)) in per_fd_cpu(&report) {
        let e = want.entry(cpu).or_default();
        e.0 += calls;
        e.1 += bytes;
    }
    let got: BTreeMap<u64, (u64, u64)> = rows_of(&outs)
        .iter()
        .map(|r| {
            assert_eq!(s(r, "comm"), "ebq-wl-comm");
            (u(r, "cpu"), (u(r, "calls"), u(r, "bytes")))
        })
        .collect();
    // Accounting (one event, aggregate): calls per CPU exact, or short by at most what was lost.
    let calls = |m: &BTreeMap<u64, (u64, u64)>| m.iter().map(|(k, v)| (*k, v.0)).collect::<BTreeMap<u64, u64>>();
    common::assert_map_exact_or_accounted(&calls(&got), &calls(&want), &stats, "preads per cpu");
    if common::lost(&stats) == 0 {
        assert_eq!(got, want);
    }
    assert_eq!(got.len(), 2, "both CPUs");
}

#[test]
fn comm_prefix_filter_matches_only_the_prefix() {
    let sql = "SELECT COUNT(*) AS calls FROM syscalls.sys_enter_pread64 WHERE comm LIKE 'ebq-pre%' AND fd >= 100";
    let (outs, stats, report) = run_around(
        sql,
        |_| Scope::All,
        &["pread", "--fds", "1", "--calls", "17", "--fd-base", "100", "--comm", "ebq-prefix-x"],
    );
    // Accounting (one event, aggregate): calls + dropped + missed = the workload's.
    let (calls, truth) = (u(&rows_of(&outs)[0], "calls"), report["total_calls"].as_u64().unwrap());
    common::assert_exact_or_accounted(calls, truth, &stats, "preads");
}

#[test]
fn process_scope_restricts_in_the_kernel() {
    // No pid in WHERE: Scope::Process (what -p sets) alone restricts the events.
    let sql = "SELECT fd, COUNT(*) AS calls, SUM(count) AS bytes, MAX(count) AS max FROM syscalls.sys_enter_pread64 GROUP BY fd";
    let (outs, stats, report) =
        run_around(sql, Scope::Process, &["pread", "--fds", "3", "--calls", "9,4,12", "--fd-base", "100"]);
    let got: BTreeMap<u64, (u64, u64, u64)> = rows_of(&outs)
        .iter()
        .filter(|r| u(r, "fd") >= 100)
        .map(|r| (u(r, "fd"), (u(r, "calls"), u(r, "bytes"), u(r, "max"))))
        .collect();
    // Accounting (one event, -p): calls + dropped + missed = the workload's; per fd exact when none lost.
    let want = per_fd(&report);
    let calls = |m: &BTreeMap<u64, (u64, u64, u64)>| m.iter().map(|(k, v)| (*k, v.0)).collect::<BTreeMap<u64, u64>>();
    common::assert_map_exact_or_accounted(&calls(&got), &calls(&want), &stats, "preads per fd");
    if common::lost(&stats) == 0 {
        assert_eq!(got, want);
    }
    // Only this process's preads were seen: ours plus at most the loader's two.
    assert!(stats.seen >= 25 && stats.seen <= 27, "seen {}", stats.seen);
}

#[test]
fn row_query_delivers_every_event() {
    let sql = "SELECT time, tid, fd, count FROM syscalls.sys_enter_pread64 WHERE pid = {pid} AND fd >= 100";
    let (outs, stats, report) =
        run_around(sql, |_| Scope::All, &["pread", "--fds", "2", "--calls", "300,200", "--fd-base", "100"]);
    let rows = rows_of(&outs);
    let total = report["total_calls"].as_u64().unwrap();
    // Accounting (rows): delivered + dropped + missed = the workload's calls; exact when none.
    common::assert_exact_or_accounted(rows.len() as u64, total, &stats, "rows");
    assert_eq!(stats.delivered, rows.len() as u64, "{stats:?}");
    if common::lost(&stats) > 0 {
        return;
    }
    assert_eq!(stats.delivered, total);
    assert_eq!(stats.dropped, 0);
    assert_eq!(rows.iter().map(|r| u(r, "count")).sum::<u64>(), report["total_bytes"].as_u64().unwrap());
    let times: Vec<u64> = rows.iter().map(|r| u(r, "time")).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "one thread's events arrive in time order");
}

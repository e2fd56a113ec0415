//! User-space operators (issue 4): HAVING, expressions over aggregates,
//! ORDER BY and LIMIT, checked against the workload's own numbers.

mod common;

use common::{f, rows_of, run_around, u};
use ebq::Scope;

const PREAD: &[&str] = &["pread", "--fds", "4", "--calls", "40,25,13,31", "--fd-base", "100", "--size-base", "8"];

fn report_fds(report: &serde_json::Value) -> Vec<(u64, u64, u64)> {
    report["fds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["fd"].as_u64().unwrap(), f["calls"].as_u64().unwrap(), f["bytes"].as_u64().unwrap()))
        .collect()
}

#[test]
fn having_order_by_and_expressions_over_aggregates() {
    let sql = "SELECT fd, COUNT(*) AS n, SUM(count) / COUNT(*) AS mean_int, AVG(count) * 2 AS twice_avg, \
               MAX(count) - MIN(count) AS spread \
               FROM syscalls.sys_enter_pread64 WHERE pid = {pid} AND fd >= 100 \
               GROUP BY fd HAVING COUNT(*) > 20 AND SUM(count) > 0 ORDER BY n DESC, fd";
    let (outs, _, report) = run_around(sql, |_| Scope::All, PREAD);
    let rows = rows_of(&outs);
    let mut want: Vec<(u64, u64, u64)> = report_fds(&report).into_iter().filter(|(_, calls, _)| *calls > 20).collect();
    want.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let got: Vec<(u64, u64)> = rows.iter().map(|r| (u(r, "fd"), u(r, "n"))).collect();
    assert_eq!(got, want.iter().map(|(fd, n, _)| (*fd, *n)).collect::<Vec<_>>());
    for (r, (_, calls, bytes)) in rows.iter().zip(&want) {
        assert_eq!(u(r, "mean_int"), bytes / calls, "integer division, as in the kernel");
        assert!((f(r, "twice_avg") - 2.0 * *bytes as f64 / *calls as f64).abs() < 1e-9);
        assert_eq!(u(r, "spread"), 8 * 5 - 8, "sizes cycle 8..40");
    }
}

#[test]
fn order_by_position_and_limit_per_window() {
    let sql = "SELECT fd, COUNT(*) FROM syscalls.sys_enter_pread64 WHERE pid = {pid} AND fd >= 100 GROUP BY fd ORDER BY 2 LIMIT 2";
    let (outs, _, report) = run_around(sql, |_| Scope::All, PREAD);
    let mut want: Vec<(u64, u64)> = report_fds(&report).into_iter().map(|(fd, n, _)| (n, fd)).collect();
    want.sort();
    let got: Vec<(u64, u64)> = rows_of(&outs).iter().map(|r| (u(r, "COUNT(*)"), u(r, "fd"))).collect();
    assert_eq!(got, want[..2]);
}

#[test]
fn row_limit_stops_early_and_row_order_by_sorts_everything() {
    let sql = "SELECT tid, count FROM syscalls.sys_enter_pread64 WHERE pid = {pid} AND fd >= 100 LIMIT 5";
    let (outs, stats, report) = run_around(sql, |_| Scope::All, PREAD);
    assert_eq!(rows_of(&outs).len(), 5);
    assert!(stats.delivered <= report["total_calls"].as_u64().unwrap());

    let sql = "SELECT fd, count FROM syscalls.sys_enter_pread64 WHERE pid = {pid} AND fd >= 100 ORDER BY count DESC, fd LIMIT 7";
    let (outs, _, _) = run_around(sql, |_| Scope::All, PREAD);
    let got: Vec<(u64, u64)> = rows_of(&outs).iter().map(|r| (u(r, "count"), u(r, "fd"))).collect();
    // The largest size is 40 (8 * 5); fd 100 issues 8 of them, fd 101 5.
    let want: Vec<(u64, u64)> = [(40, 100); 7].to_vec();
    assert_eq!(got, want);
}

#[test]
fn having_can_use_an_aggregate_not_in_the_select_list() {
    let sql = "SELECT fd FROM syscalls.sys_enter_pread64 WHERE pid = {pid} AND fd >= 100 GROUP BY fd HAVING MIN(count) = 8 AND COUNT(*) < 30";
    let (outs, _, report) = run_around(sql, |_| Scope::All, PREAD);
    let want: Vec<u64> = report_fds(&report).into_iter().filter(|(_, n, _)| *n < 30).map(|(fd, _, _)| fd).collect();
    assert_eq!(rows_of(&outs).iter().map(|r| u(r, "fd")).collect::<Vec<_>>(), want);
}

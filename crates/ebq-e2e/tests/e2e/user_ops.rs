//! User-space operators (issue 4): HAVING, expressions over aggregates,
//! ORDER BY and LIMIT, checked against the workload's own numbers.

use crate::common;

use common::{assert_exact_or_accounted, assert_map_exact_or_accounted, f, lost, rows_of, run_around, u};
use ebq::Scope;
use std::collections::BTreeMap;

const PREAD: &[&str] = &["pread", "--fds", "4", "--calls", "40,25,13,31", "--fd-base", "100", "--size-base", "8"];

fn report_fds(report: &serde_json::Value) -> Vec<(u64, u64, u64)> {
    report["fds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["fd"].as_u64().unwrap(), f["calls"].as_u64().unwrap(), f["bytes"].as_u64().unwrap()))
        .collect()
}

/// Accounting (one event, aggregate, HAVING/ORDER/LIMIT after counting): each row's count
/// is at most its fd's calls and the rows' shortfall at most what was lost. A loss can move
/// an fd across a HAVING bound or a LIMIT, so the set and order are the callers' exact
/// checks, run when nothing was lost.
fn rows_accounted(got: &[(u64, u64)], report: &serde_json::Value, stats: &ebq::QueryStats, what: &str) {
    let truth: BTreeMap<u64, u64> = report_fds(report).into_iter().map(|(fd, n, _)| (fd, n)).collect();
    let got: BTreeMap<u64, u64> = got.iter().copied().collect();
    let want: BTreeMap<u64, u64> = truth.iter().filter(|(fd, _)| got.contains_key(fd)).map(|(k, v)| (*k, *v)).collect();
    assert_map_exact_or_accounted(&got, &want, stats, what);
}

#[test]
fn having_order_by_and_expressions_over_aggregates() {
    let sql = "SELECT fd, COUNT(*) AS n, SUM(count) / COUNT(*) AS mean_int, AVG(count) * 2 AS twice_avg, \
               MAX(count) - MIN(count) AS spread \
               FROM syscalls.sys_enter_pread64 WHERE pid = {pid} AND fd >= 100 \
               GROUP BY fd HAVING COUNT(*) > 20 AND SUM(count) > 0 ORDER BY n DESC, fd";
    let (outs, stats, report) = run_around(sql, |_| Scope::All, PREAD);
    let rows = rows_of(&outs);
    rows_accounted(&rows.iter().map(|r| (u(r, "fd"), u(r, "n"))).collect::<Vec<_>>(), &report, &stats, "HAVING");
    if lost(&stats) > 0 {
        return;
    }
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
    let (outs, stats, report) = run_around(sql, |_| Scope::All, PREAD);
    let mut want: Vec<(u64, u64)> = report_fds(&report).into_iter().map(|(fd, n, _)| (n, fd)).collect();
    want.sort();
    let got: Vec<(u64, u64)> = rows_of(&outs).iter().map(|r| (u(r, "COUNT(*)"), u(r, "fd"))).collect();
    rows_accounted(&got.iter().map(|(n, fd)| (*fd, *n)).collect::<Vec<_>>(), &report, &stats, "LIMIT 2");
    if lost(&stats) == 0 {
        assert_eq!(got, want[..2], "{stats:?}");
    }
}

#[test]
fn row_limit_stops_early_and_row_order_by_sorts_everything() {
    let sql = "SELECT tid, count FROM syscalls.sys_enter_pread64 WHERE pid = {pid} AND fd >= 100 LIMIT 5";
    let (outs, stats, report) = run_around(sql, |_| Scope::All, PREAD);
    assert_eq!(rows_of(&outs).len(), 5);
    assert!(stats.delivered <= report["total_calls"].as_u64().unwrap());

    let sql = "SELECT fd, count FROM syscalls.sys_enter_pread64 WHERE pid = {pid} AND fd >= 100 ORDER BY count DESC, fd LIMIT 7";
    let (outs, stats, _) = run_around(sql, |_| Scope::All, PREAD);
    let got: Vec<(u64, u64)> = rows_of(&outs).iter().map(|r| (u(r, "count"), u(r, "fd"))).collect();
    // The largest size is 40 (8 * 5); fd 100 issues 8 of them, fd 101 5. Accounting (rows,
    // ORDER BY + LIMIT): a lost event can only let a smaller row in; exact when none.
    assert_eq!(got.len(), 7, "{got:?}; {stats:?}");
    let want: Vec<(u64, u64)> = [(40, 100); 7].to_vec();
    if lost(&stats) == 0 {
        assert_eq!(got, want, "{stats:?}");
    } else {
        assert!(got.windows(2).all(|w| w[0] >= w[1] || w[0].0 > w[1].0), "{got:?}; {stats:?}");
    }
}

#[test]
fn having_can_use_an_aggregate_not_in_the_select_list() {
    let sql = "SELECT fd FROM syscalls.sys_enter_pread64 WHERE pid = {pid} AND fd >= 100 GROUP BY fd HAVING MIN(count) = 8 AND COUNT(*) < 30";
    let (outs, stats, report) = run_around(sql, |_| Scope::All, PREAD);
    let want: Vec<u64> = report_fds(&report).into_iter().filter(|(_, n, _)| *n < 30).map(|(fd, _, _)| fd).collect();
    let got: Vec<u64> = rows_of(&outs).iter().map(|r| u(r, "fd")).collect();
    // Accounting (aggregate, HAVING): a loss can only push an fd under COUNT(*) < 30 (or take
    // its one size-8 call): the fds are exact when nothing was lost, and otherwise include
    // every fd the bound keeps.
    if lost(&stats) == 0 {
        assert_eq!(got, want, "{stats:?}");
    } else {
        assert!(got.iter().all(|fd| (100..104).contains(fd)), "{got:?}; {stats:?}");
    }
}

#[test]
fn count_distinct_and_select_distinct_are_exact() {
    let sql = "SELECT fd, COUNT(DISTINCT count) AS sizes, COUNT(*) AS n, MAX(count) AS max \
               FROM syscalls.sys_enter_pread64 WHERE pid = {pid} AND fd >= 100 GROUP BY fd";
    let (outs, stats, _) = run_around(
        sql,
        |_| Scope::All,
        &["pread", "--fds", "3", "--calls", "40,25,3", "--fd-base", "100", "--size-base", "8"],
    );
    let got: Vec<(u64, u64, u64, u64)> =
        rows_of(&outs).iter().map(|r| (u(r, "fd"), u(r, "sizes"), u(r, "n"), u(r, "max"))).collect();
    // Accounting (one event, aggregate): calls per fd exact or accounted; the distinct sizes
    // and maxima exact when nothing was lost.
    let calls: BTreeMap<u64, u64> = got.iter().map(|g| (g.0, g.2)).collect();
    assert_map_exact_or_accounted(&calls, &[(100, 40), (101, 25), (102, 3)].into(), &stats, "preads per fd");
    if lost(&stats) == 0 {
        assert_eq!(got, [(100, 5, 40, 40), (101, 5, 25, 40), (102, 3, 3, 24)]);
    }

    let sql = "SELECT COUNT(DISTINCT fd) AS fds, COUNT(*) AS n FROM syscalls.sys_enter_pread64 WHERE pid = {pid} AND fd >= 100";
    let (outs, stats, _) =
        run_around(sql, |_| Scope::All, &["pread", "--fds", "3", "--calls", "4,5,6", "--fd-base", "100"]);
    let r = &rows_of(&outs)[0];
    assert_exact_or_accounted(u(r, "n"), 15, &stats, "preads");
    if lost(&stats) == 0 {
        assert_eq!(u(r, "fds"), 3, "{stats:?}");
    }

    let sql = "SELECT DISTINCT fd FROM syscalls.sys_enter_pread64 WHERE pid = {pid} AND fd >= 100";
    let (outs, stats, _) =
        run_around(sql, |_| Scope::All, &["pread", "--fds", "3", "--calls", "4,5,6", "--fd-base", "100"]);
    let fds: Vec<u64> = rows_of(&outs).iter().map(|r| u(r, "fd")).collect();
    // Accounting (rows, DISTINCT): an fd is missing only if all its 4+ calls were lost.
    assert!(fds.iter().all(|fd| (100..103).contains(fd)), "{fds:?}; {stats:?}");
    assert_exact_or_accounted(3 * fds.len() as u64, 9, &stats, "distinct fds (3 per fd, lower bound)");
    if lost(&stats) == 0 {
        assert_eq!(fds, [100, 101, 102], "{stats:?}");
    }
}

#[test]
fn sliding_count_windows_combine_panes() {
    let sql = "SELECT COUNT(*) AS n, SUM(count) AS bytes FROM syscalls.sys_enter_pread64 \
               WHERE pid = {pid} AND fd >= 100 WINDOW(count, 20, 10)";
    let (outs, stats, report) = run_around(
        sql,
        |_| Scope::All,
        &["pread", "--fds", "1", "--calls", "78", "--fd-base", "100", "--size-base", "1"],
    );
    let counts: Vec<u64> = rows_of(&outs).iter().map(|r| u(r, "n")).collect();
    assert_eq!(report["total_calls"].as_u64(), Some(78));
    // Accounting (one event, count windows): the panes (p_i = n_i - p_(i-1)) hold the events
    // seen, 78 - lost; exact when none lost, and then each window
    // is the last two panes of 10: 10 ×7 then 8.
    let (mut pane, mut seen) = (0, 0);
    for n in &counts {
        pane = n.checked_sub(pane).unwrap_or_else(|| panic!("windows {counts:?}"));
        seen += pane;
    }
    assert_exact_or_accounted(seen, 78, &stats, "preads in panes");
    if lost(&stats) == 0 {
        assert_eq!(counts, [10, 20, 20, 20, 20, 20, 20, 18]);
    }
}

#[test]
fn sliding_time_windows_are_sums_of_consecutive_panes() {
    let sql =
        "SELECT COUNT(*) AS n FROM syscalls.sys_enter_pread64 WHERE pid = {pid} AND fd >= 100 WINDOW(time, 200, 100)";
    let (outs, stats, report) = run_around(
        sql,
        |_| Scope::All,
        &["pread", "--fds", "1", "--calls", "100", "--fd-base", "100", "--gap-us", "3000"],
    );
    // Recover the panes: p0 = n0, p_i = n_i - p_{i-1}; they must be non-negative and add up to all calls.
    let mut panes: Vec<i64> = vec![];
    let mut starts = vec![];
    for o in &outs {
        let n = if o.batch.num_rows() == 0 { 0 } else { u(&rows_of(std::slice::from_ref(o))[0], "n") as i64 };
        let p = n - panes.last().copied().unwrap_or(0);
        assert!(p >= 0, "panes {panes:?} then window {n}");
        panes.push(p);
        if let ebq::WindowBounds::Time { start_ns, .. } = o.window {
            starts.push(start_ns);
        }
    }
    assert!(panes.len() >= 3, "{panes:?}");
    // Accounting (one event, time panes): the panes + dropped + missed = the workload's calls.
    assert_exact_or_accounted(
        panes.iter().sum::<i64>() as u64,
        report["total_calls"].as_u64().unwrap(),
        &stats,
        "panes",
    );
    // Each window starts where the window two panes back ended: starts repeat once.
    assert!(starts.windows(3).all(|w| w[0] < w[2]));
}

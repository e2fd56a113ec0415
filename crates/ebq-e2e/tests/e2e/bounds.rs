//! Issue 7 (resource bounds): every kernel and user-space store ebq fills has a
//! documented capacity and an option, and what does not fit is counted.

use crate::common;

use common::{engine, rows_of, run_around_with, u};
use ebq::plan::PlanOptions;
use ebq::{RunningQuery, Scope};

#[test]
fn children_beyond_the_tracked_set_are_counted_as_untracked() {
    // The set holds 3 processes: the -c process itself and its first two
    // children; the other 5 children (alive at the same time: the workload
    // starts them together) are not traced, and counted.
    let engine = engine().with_options(PlanOptions { max_tracked: 3, ..Default::default() });
    let (outs, stats, report) = run_around_with(
        &engine,
        "SELECT COUNT(*) AS n FROM syscalls.sys_enter_pread64 WHERE comm = 'ebq-tracked'",
        |pid| Scope::Tracked(vec![pid]),
        &["fork", "--children", "7", "--calls", "40", "--comm", "ebq-tracked"],
    );
    assert_eq!(report["total_calls"].as_u64(), Some(280));
    let rows = rows_of(&outs);
    assert_eq!(u(&rows[0], "n"), 2 * 40, "{rows:?}");
    assert_eq!(stats.untracked, 5);
}

#[test]
fn processes_leave_the_tracked_set_when_they_exit() {
    // Each child exits before the next is forked, so a set of 2 (the -c
    // process and one child at a time) follows all 7: an exited process
    // leaves the set (sched_process_exit with group_dead), and its pid, if
    // reused, is not traced.
    let engine = engine().with_options(PlanOptions { max_tracked: 2, ..Default::default() });
    let (outs, stats, report) = run_around_with(
        &engine,
        "SELECT COUNT(*) AS n FROM syscalls.sys_enter_pread64 WHERE comm = 'ebq-exits'",
        |pid| Scope::Tracked(vec![pid]),
        &["fork", "--children", "7", "--calls", "40", "--sequential", "--comm", "ebq-exits"],
    );
    assert_eq!(report["total_calls"].as_u64(), Some(280));
    // Accounting (-c, one event): n + missed + fork/exit events missed + untracked = 280; exact when none.
    common::assert_exact_or_accounted(u(&rows_of(&outs)[0], "n"), 280, &stats, "preads vs the workload's 280");
    assert_eq!(stats.untracked, 0, "{stats:?}");
}

#[test]
fn a_large_enough_tracked_set_follows_every_child() {
    let (outs, stats, report) = run_around_with(
        &engine(),
        "SELECT COUNT(*) AS n FROM syscalls.sys_enter_pread64 WHERE comm = 'ebq-tracked2'",
        |pid| Scope::Tracked(vec![pid]),
        &["fork", "--children", "7", "--calls", "40", "--comm", "ebq-tracked2"],
    );
    assert_eq!(report["total_calls"].as_u64(), Some(280));
    // Accounting (-c, one event): n + missed + fork/exit events missed + untracked = 280; exact when none.
    common::assert_exact_or_accounted(u(&rows_of(&outs)[0], "n"), 280, &stats, "preads vs the workload's 280");
    assert_eq!(stats.untracked, 0, "{stats:?}");
}

/// Polls `q` until the workload exits, checking what ORDER BY holds after each poll.
fn drive(
    sql: &str,
    max_sorted: Option<usize>,
    workload: &[&str],
    held_bound: usize,
) -> ebq::Result<(Vec<ebq::Output>, ebq::QueryStats)> {
    let w = common::Workload::start(workload);
    let prepared = engine().prepare(sql).unwrap_or_else(|e| panic!("{}", e.render(sql)));
    let mut q = RunningQuery::start(&prepared, Scope::All).unwrap();
    if let Some(n) = max_sorted {
        q.set_max_sorted_rows(n);
    }
    w.go();
    let mut w = w;
    let mut outs = vec![];
    while w.child.try_wait().unwrap().is_none() {
        outs.extend(q.poll(std::time::Duration::from_millis(20))?);
        assert!(q.held_rows() < held_bound, "ORDER BY holds {} rows", q.held_rows());
    }
    outs.extend(q.finish()?);
    let stats = q.stats().unwrap();
    Ok((outs, stats))
}

#[test]
fn order_by_with_limit_keeps_only_the_best_rows_and_gets_them_right() {
    // 20,000 pread64 calls with sizes 1..=50 cycling (1, 2, …, 50, 1, 2, …):
    // the 5 largest are the first five rows of size 50, in arrival order.
    let sizes: Vec<String> = (1..=50).map(|i| i.to_string()).collect();
    let (outs, stats) = drive(
        "SELECT count, time FROM syscalls.sys_enter_pread64 WHERE comm = 'ebq-topn' ORDER BY count DESC LIMIT 5",
        None,
        &["pread", "--fds", "1", "--calls", "20000", "--sizes", &sizes.join(","), "--comm", "ebq-topn"],
        1024,
    )
    .unwrap();
    assert_eq!(stats.delivered, 20_000);
    let rows = rows_of(&outs);
    assert_eq!(rows.len(), 5);
    assert!(rows.iter().all(|r| u(r, "count") == 50), "{rows:?}");
    let ts: Vec<u64> = rows.iter().map(|r| u(r, "time")).collect();
    assert!(ts.windows(2).all(|w| w[0] < w[1]), "ties keep arrival order: {ts:?}");
}

#[test]
fn order_by_without_limit_stops_clearly_past_its_row_cap() {
    let err = drive(
        "SELECT count FROM syscalls.sys_enter_read WHERE comm = 'ebq-sortcap' ORDER BY count",
        Some(1000),
        &["readzero", "--count", "5000", "--comm", "ebq-sortcap"],
        1001,
    )
    .map(|_| ())
    .expect_err("more than 1000 rows must not be held");
    let msg = err.to_string();
    assert!(msg.contains("more than 1000 rows arrived; add LIMIT") && msg.contains("--max-sorted-rows"), "{msg}");
}

#[test]
fn order_by_without_limit_under_its_cap_returns_every_row_sorted() {
    let (outs, stats) = drive(
        "SELECT count FROM syscalls.sys_enter_read WHERE comm = 'ebq-sortall' ORDER BY count DESC",
        Some(1000),
        &["readzero", "--count", "1000", "--bs", "7", "--comm", "ebq-sortall"],
        1001,
    )
    .unwrap();
    assert_eq!(stats.delivered, 1000);
    let rows = rows_of(&outs);
    assert_eq!(rows.len(), 1000);
    assert!(rows.iter().all(|r| u(r, "count") == 7));
}

#[test]
fn group_by_a_position_groups_by_that_select_item() {
    // `GROUP BY 1` is `GROUP BY count` (the first SELECT item), not a constant.
    let sql = "SELECT count AS size, COUNT(*) AS n FROM syscalls.sys_enter_pread64 WHERE pid = {pid} AND fd >= 100 GROUP BY 1";
    let (outs, _, report) = common::run_around(
        sql,
        |_| Scope::All,
        &["pread", "--fds", "1", "--calls", "30", "--fd-base", "100", "--size-base", "1"],
    );
    assert_eq!(report["total_calls"].as_u64(), Some(30));
    let mut got: Vec<(u64, u64)> = rows_of(&outs).iter().map(|r| (u(r, "size"), u(r, "n"))).collect();
    got.sort();
    // Sizes cycle 1..=5: six calls each.
    assert_eq!(got, vec![(1, 6), (2, 6), (3, 6), (4, 6), (5, 6)]);
}

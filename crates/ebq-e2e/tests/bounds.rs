//! Issue 7 (resource bounds): every kernel and user-space store ebq fills has a
//! documented capacity and an option, and what does not fit is counted.

mod common;

use common::{engine, rows_of, run_around_with, u};
use ebq::plan::PlanOptions;
use ebq::Scope;

#[test]
fn children_beyond_the_tracked_set_are_counted_as_untracked() {
    // The set holds 3 processes: the -c process itself and its first two
    // children; the other 5 children are not traced, and counted.
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
fn a_large_enough_tracked_set_follows_every_child() {
    let (outs, stats, report) = run_around_with(
        &engine(),
        "SELECT COUNT(*) AS n FROM syscalls.sys_enter_pread64 WHERE comm = 'ebq-tracked2'",
        |pid| Scope::Tracked(vec![pid]),
        &["fork", "--children", "7", "--calls", "40", "--comm", "ebq-tracked2"],
    );
    assert_eq!(report["total_calls"].as_u64(), Some(280));
    assert_eq!(u(&rows_of(&outs)[0], "n"), 280);
    assert_eq!(stats.untracked, 0);
}

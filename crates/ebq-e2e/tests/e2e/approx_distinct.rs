//! Issue 4, item 2: `APPROX_COUNT_DISTINCT(x)`, a HyperLogLog sketch in the
//! kernel. The workload's pwrite64 offsets are known exactly (`fileio`: file
//! i gets Wi calls at offsets j·B·(i+1)), so the kernel's estimate must equal
//! the Rust mirror's estimate over the same values bit for bit, exact
//! `COUNT(DISTINCT …)` must equal the true count, and the estimate must be
//! within three standard errors of it.

use crate::common;

use common::{assert_exact_or_accounted, assert_map_exact_or_accounted, engine, lost, rows_of, run_around_with, u};
use ebq::hll;
use ebq::plan::PlanOptions;
use ebq::Scope;
use std::collections::{BTreeMap, BTreeSet};

/// (writes per file, size base) for `fileio`.
const WRITES: [u64; 2] = [6000, 9000];
const SIZE: u64 = 100;

/// The offsets of every pwrite64 of file `i`.
fn offsets(i: usize) -> impl Iterator<Item = u64> {
    (0..WRITES[i]).map(move |j| j * SIZE * (i as u64 + 1))
}

/// The rows and stats. No group-map overflow (`dropped` 0) is what these tests size the map
/// for; the kernel skipping the program (`missed`, beside other tracers) is accounted.
fn run(sql: &str, comm: &str, options: PlanOptions) -> (Vec<common::Row>, ebq::QueryStats) {
    let dir = tempfile_dir(comm);
    let files = format!("{dir}/a.dat,{dir}/b.dat");
    let writes = format!("{},{}", WRITES[0], WRITES[1]);
    let args = ["fileio", "--files", &files, "--writes", &writes, "--reads", "1,1", "--size", "100", "--comm", comm];
    let sql = sql.replace("{comm}", comm);
    let (outs, stats, _) = run_around_with(&engine().with_options(options), &sql, Scope::Process, &args);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(stats.dropped, 0, "{stats:?}");
    (rows_of(&outs), stats)
}

fn tempfile_dir(comm: &str) -> String {
    let dir = format!("/tmp/ebq-hll-{comm}-{}", std::process::id());
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn assert_near(estimate: u64, truth: u64) {
    let err = (estimate as f64 - truth as f64).abs() / truth as f64;
    assert!(err < 3.0 * hll::STANDARD_ERROR, "estimate {estimate} vs {truth}: relative error {err}");
}

#[test]
fn the_kernel_sketch_equals_the_rust_mirror_and_exact_distinct_is_exact() {
    let all: BTreeSet<u64> = offsets(0).chain(offsets(1)).collect();
    assert_eq!(all.len(), 12_000);
    // 12,000 hidden groups of 1,040-byte values (the sketch's registers ride
    // along in each): the preallocated group map takes the burst without a drop.
    let sql = "SELECT APPROX_COUNT_DISTINCT(pos) AS approx, COUNT(DISTINCT pos) AS exact, COUNT(*) AS n \
               FROM syscalls.sys_enter_pwrite64 WHERE comm = '{comm}'";
    let options = PlanOptions { max_groups: 20_000, ..PlanOptions::default() };
    let (rows, stats) = run(sql, "hllall", options);
    assert_eq!(rows.len(), 1, "{rows:?}");
    // Accounting (one event, aggregate): n + missed = the workload's pwrites (each at its own
    // offset, so exact distinct too); the sketch is compared bit for bit when nothing was lost.
    assert_exact_or_accounted(u(&rows[0], "n"), WRITES[0] + WRITES[1], &stats, "pwrites");
    assert_exact_or_accounted(u(&rows[0], "exact"), all.len() as u64, &stats, "distinct offsets");
    if lost(&stats) > 0 {
        return;
    }
    let approx = u(&rows[0], "approx");
    assert_eq!(approx, hll::estimate_of(all.iter().copied()));
    assert_near(approx, all.len() as u64);
}

#[test]
fn grouped_sketches_estimate_each_file_and_need_no_hidden_groups() {
    // Grouped by the write size (100 B for file a, 200 B for file b): one
    // sketch per file. With the default 10,240 groups, COUNT(DISTINCT pos)
    // would need 15,000 hidden groups; the sketch needs none.
    let sql = "SELECT count, APPROX_COUNT_DISTINCT(pos) AS approx, COUNT(*) AS n \
               FROM syscalls.sys_enter_pwrite64 WHERE comm = '{comm}' GROUP BY count ORDER BY n";
    let (rows, stats) = run(sql, "hllfd", PlanOptions::default());
    assert_eq!(rows.len(), 2, "{rows:?}");
    // Accounting (one event, aggregate): pwrites per size + missed = the workload's; the
    // sketches bit for bit when nothing was lost.
    let got: BTreeMap<u64, u64> = rows.iter().map(|r| (u(r, "count"), u(r, "n"))).collect();
    let want: BTreeMap<u64, u64> = [(SIZE, WRITES[0]), (2 * SIZE, WRITES[1])].into();
    assert_map_exact_or_accounted(&got, &want, &stats, "pwrites per size");
    if lost(&stats) > 0 {
        return;
    }
    let by_n: BTreeMap<u64, u64> = rows.iter().map(|r| (u(r, "n"), u(r, "approx"))).collect();
    for i in 0..2 {
        let approx = by_n[&WRITES[i]];
        assert_eq!(approx, hll::estimate_of(offsets(i)), "file {i}");
        assert_near(approx, WRITES[i]);
    }
}

#[test]
fn strings_are_refused_with_a_pointer_to_exact_distinct() {
    let e = engine().prepare("SELECT APPROX_COUNT_DISTINCT(comm) FROM syscalls.sys_enter_read").unwrap_err();
    let text = e.to_string();
    assert!(text.contains("APPROX_COUNT_DISTINCT needs an integer argument"), "{text}");
    assert!(text.contains("COUNT(DISTINCT"), "{text}");
}

#[test]
fn sliding_windows_merge_the_registers_of_their_panes() {
    // Count windows of 6000 events stepping by 3000: window k holds panes k−1
    // and k (window 0 only pane 0); pane p is pwrite64 calls [3000p, 3000p + 3000).
    let sql = "SELECT APPROX_COUNT_DISTINCT(pos) AS approx, COUNT(*) AS n \
               FROM syscalls.sys_enter_pwrite64 WHERE comm = '{comm}' WINDOW(count, 6000, 3000)";
    let (rows, stats) = run(sql, "hllwin", PlanOptions::default());
    let events: Vec<u64> = offsets(0).chain(offsets(1)).collect();
    // Accounting (one event, count windows): the panes (p_k = n_k - p_(k-1)) + missed = the
    // workload's pwrites; a lost event shifts every later window, so the windows are checked
    // only when none was.
    let (mut pane, mut seen) = (0, 0);
    for r in &rows {
        pane = u(r, "n").checked_sub(pane).unwrap_or_else(|| panic!("windows {rows:?}"));
        seen += pane;
    }
    assert_exact_or_accounted(seen, events.len() as u64, &stats, "pwrites in panes");
    if lost(&stats) > 0 {
        return;
    }
    assert_eq!(rows.len(), 5, "{rows:?}");
    for (k, row) in rows.iter().enumerate() {
        let first = 3000 * k.saturating_sub(1);
        let window = &events[first..3000 * (k + 1)];
        assert_eq!(u(row, "n"), window.len() as u64, "window {k}");
        assert_eq!(u(row, "approx"), hll::estimate_of(window.iter().copied()), "window {k}");
    }
    // Window 2 (calls 3000..9000) has 4500 distinct offsets: the sketch is within its bound.
    assert_near(u(&rows[2], "approx"), 4500);
}

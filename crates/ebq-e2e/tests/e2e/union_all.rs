//! Issue 14 items 5 and 6: a top-level `UNION ALL` of events feeding one
//! result — one program per branch, one group map. Ground truth: the fileio
//! workload's own report of its read() and write() calls, and (cachestat,
//! cachetop) a file of known size dropped from the page cache and read twice.

use crate::common;

use common::{
    assert_exact_or_accounted, assert_keyed_exact_or_accounted, assert_map_exact_or_accounted, cli_stats, hist_total,
    lost, rows_of, run_around, s, u, workload_bin, Row,
};
use ebq::runtime::Value;
use ebq::QueryStats;
use ebq::Scope;
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::process::Command;

/// read() and write() as one stream, labelled per branch. The workload's calls are
/// `size` bytes per call of file i (1000, 2000); its report, written last with one
/// write() of about 500 bytes, is left out by the outer WHERE.
const READS_AND_WRITES: &str = "SELECT op, COUNT(*) AS calls, SUM(b) AS bytes, MIN(b) AS lo, MAX(b) AS hi, \
     AVG(b) AS mean, COUNT(DISTINCT b) AS sizes, HIST(b) AS h \
     FROM (SELECT 0 AS op, count AS b FROM syscalls.sys_enter_read WHERE fd > 2 \
           UNION ALL SELECT 1 AS op, count AS b FROM syscalls.sys_enter_write WHERE fd > 2) u \
     WHERE pid = {pid} AND b >= 1000 GROUP BY op";

/// Per op (0 read, 1 write): (calls, bytes, smallest, largest, distinct sizes) from a fileio report.
fn tally(report: &Json) -> BTreeMap<u64, (u64, u64, u64, u64, u64)> {
    let mut m: BTreeMap<u64, (u64, u64, u64, u64, u64)> = BTreeMap::new();
    for f in report["files"].as_array().unwrap() {
        let size = f["size"].as_u64().unwrap();
        for (op, calls) in [(0, f["reads"].as_u64().unwrap()), (1, f["writes"].as_u64().unwrap())] {
            let e = m.entry(op).or_insert((0, 0, u64::MAX, 0, 0));
            *e = (e.0 + calls, e.1 + calls * size, e.2.min(size), e.3.max(size), e.4 + 1);
        }
    }
    m
}

#[test]
fn a_union_of_read_and_write_counts_each_branch_exactly() {
    let dir = std::env::temp_dir().join(format!("ebq-union-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files = format!("{},{}", dir.join("a").display(), dir.join("b").display());
    let sql = READS_AND_WRITES;
    let args = ["fileio", "--files", &files, "--writes", "5,7", "--reads", "3,4", "--size", "1000"];
    let (outs, stats, report) = run_around(sql, Scope::Process, &args);
    let _ = std::fs::remove_dir_all(&dir);
    let rows = rows_of(&outs);
    let want = tally(&report);
    assert_eq!(want[&0].0, 7);
    assert_eq!(want[&1].0, 12);
    let got: BTreeMap<u64, (u64, u64, u64, u64, u64)> = rows
        .iter()
        .map(|r: &Row| (u(r, "op"), (u(r, "calls"), u(r, "bytes"), u(r, "lo"), u(r, "hi"), u(r, "sizes"))))
        .collect();
    // Accounting (one event per branch, aggregate): calls per branch + dropped + missed (either
    // program's) = the workload's; every column exact when nothing was lost.
    assert_keyed_exact_or_accounted(&got, &want, |v| v.0, &stats, &format!("{rows:?}"));
    for r in &rows {
        assert_eq!(hist_total(r, "h"), u(r, "calls"), "{r:?}");
        let Some(Value::F(mean)) = r.get("mean") else { panic!("{r:?}") };
        assert_eq!(*mean, u(r, "bytes") as f64 / u(r, "calls") as f64, "{r:?}");
    }
    // Both programs count into the one stats map: every matched event is in a group
    // (the report's write is seen, not matched).
    assert_eq!(stats.matched, got.values().map(|v| v.0).sum::<u64>(), "{stats:?}");
}

/// A union as rows: one ring buffer, one record per event of either branch.
#[test]
fn a_union_of_rows_streams_every_event_of_both_branches() {
    let dir = std::env::temp_dir().join(format!("ebq-union-rows-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files = format!("{}", dir.join("a").display());
    let sql = "SELECT op, b, comm FROM (SELECT 0 AS op, count AS b FROM syscalls.sys_enter_read \
               UNION ALL SELECT 1 AS op, count AS b FROM syscalls.sys_enter_write) u WHERE pid = {pid} AND b = 3000";
    let args = ["fileio", "--files", &files, "--writes", "6", "--reads", "2", "--size", "3000"];
    let (outs, stats, report) = run_around(sql, Scope::Process, &args);
    let _ = std::fs::remove_dir_all(&dir);
    let rows = rows_of(&outs);
    let f = &report["files"][0];
    let mut got: BTreeMap<u64, u64> = BTreeMap::new();
    for r in &rows {
        *got.entry(u(r, "op")).or_default() += 1;
    }
    let want: BTreeMap<u64, u64> = [(0, f["reads"].as_u64().unwrap()), (1, f["writes"].as_u64().unwrap())].into();
    assert_eq!(want, [(0, 2), (1, 6)].into(), "the workload's own tally");
    // Accounting (rows, one event per branch): rows per branch + dropped + missed = the workload's.
    assert_map_exact_or_accounted(&got, &want, &stats, &format!("{rows:?}"));
    assert!(rows.iter().all(|r| s(r, "comm") == report["comm"].as_str().unwrap()), "{rows:?}");
}

const PAGE: u64 = 4096;
/// 300 full pages and a 100-byte tail: 301 pages (as in page_cache.rs).
const SIZE: u64 = 300 * PAGE + 100;
const PAGES: u64 = SIZE.div_ceil(PAGE);

/// Shipped query `name` with its parameters at their defaults (`interval_ms` one long
/// window) and `extra` (a WHERE) before its WINDOW, run with `ebq -f` around `cmd`.
fn shipped_around(name: &str, extra: &str, cmd: &str) -> (Vec<Json>, QueryStats) {
    let sql = shipped_text(name, extra);
    let file = std::env::temp_dir().join(format!("ebq-{name}-{}.sql", std::process::id()));
    std::fs::write(&file, &sql).unwrap();
    let out = Command::new(common::ebq_bin())
        .args(["-f", file.to_str().unwrap(), "-c", cmd, "--format", "json"])
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&file);
    assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
    let rows = String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str::<Json>(l).unwrap()).collect();
    (rows, cli_stats(&String::from_utf8_lossy(&out.stderr)))
}

/// Accounting (-c, UNION of page-cache events): accesses, misses and hits each + dropped +
/// missed + fork/exit missed + untracked cover the pages the workload read (`want`:
/// accesses, misses, hits); the whole row, with its derived columns, exact when nothing was
/// lost.
fn pages_accounted(row: &Json, want: (i64, i64, i64), exact: &[(&str, i64)], stats: &QueryStats) {
    let got = (n(row, "accesses"), n(row, "misses"), n(row, "hits"));
    for (col, g, w) in [("accesses", got.0, want.0), ("misses", got.1, want.1), ("hits", got.2, want.2)] {
        assert_exact_or_accounted(g as u64, w as u64, stats, &format!("{col}: {row}"));
    }
    if lost(stats) == 0 {
        for (col, w) in exact {
            assert_eq!(n(row, col), *w, "{col}: {row}; {stats:?}");
        }
    }
}

/// Shipped query `name` with `{top}` = 1000, one long window, and `extra` before its WINDOW.
fn shipped_text(name: &str, extra: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../../queries/{name}.sql"));
    let text = std::fs::read_to_string(path).unwrap();
    text.replace("{top}", "1000").replace("WINDOW(time, {interval_ms})", &format!("{extra} WINDOW(time, 600000)"))
}

/// A test file of SIZE bytes under cargo's target directory (ext4 here), and its inode.
fn test_file(tag: &str) -> (PathBuf, u64) {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("ebq-{tag}-{}.dat", std::process::id()));
    let bytes: Vec<u8> = (0..SIZE).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&path, bytes).unwrap();
    let ino = std::fs::metadata(&path).unwrap().ino();
    (path, ino)
}

fn n(row: &Json, col: &str) -> i64 {
    row[col].as_i64().unwrap_or_else(|| panic!("{col} in {row}"))
}

#[test]
fn cachestat_and_cachetop_on_a_dropped_file_read_twice() {
    let (path, ino) = test_file("cachestat");
    let pass = |drop: bool| {
        let cmd = format!(
            "{} cachepass --file {}{}",
            workload_bin().display(),
            path.display(),
            if drop { " --drop" } else { "" }
        );
        let stat = shipped_around("cachestat", &format!("WHERE inode = {ino}"), &cmd);
        let top = shipped_around("cachetop", &format!("WHERE inode = {ino}"), &cmd);
        (stat, top)
    };
    let p = PAGES as i64;
    // Pass 1, from a dropped cache: every page asked for once and added once, no hit.
    let ((stat, stat_stats), (top, top_stats)) = pass(true);
    assert_eq!(stat.len(), 1, "{stat:?}");
    pages_accounted(&stat[0], (p, p, 0), &[("hit_pct", 0), ("dirtied", 0)], &stat_stats);
    assert_eq!(top.len(), 1, "one process, one file: {top:?}");
    let t = &top[0];
    pages_accounted(t, (p, p, 0), &[], &top_stats);
    assert_eq!(n(t, "inode"), ino as i64, "{t}");
    // Pass 2, all cached: every page asked for once, no miss, every access a hit.
    let ((stat, stat_stats), (top, top_stats)) = pass(false);
    pages_accounted(&stat[0], (p, 0, p), &[("hit_pct", 100), ("dirtied", 0)], &stat_stats);
    pages_accounted(&top[0], (p, 0, p), &[], &top_stats);
    let _ = std::fs::remove_file(&path);
}

/// A union's bundle carries every branch's event format and runs without clang.
#[test]
fn a_union_bundle_runs_without_clang() {
    let (path, ino) = test_file("cachestat-aot");
    let dir = std::env::temp_dir().join(format!("ebq-union-aot-{}", std::process::id()));
    let empty = dir.join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    let (sql, bundle) = (dir.join("q.sql"), dir.join("q.ebq"));
    std::fs::write(&sql, shipped_text("cachestat", &format!("WHERE inode = {ino}"))).unwrap();
    let out =
        Command::new(common::ebq_bin()).arg("compile").arg("-f").arg(&sql).arg("-o").arg(&bundle).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let cmd = format!("{} cachepass --file {} --drop", workload_bin().display(), path.display());
    let (rows, stats) = common::run_bundle_without_clang_stats(&bundle, &empty, &cmd);
    assert_eq!(rows.len(), 1, "{rows:?}");
    pages_accounted(&rows[0], (PAGES as i64, PAGES as i64, 0), &[], &stats);
    let _ = std::fs::remove_dir_all(dir);
    let _ = std::fs::remove_file(&path);
}

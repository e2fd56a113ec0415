//! Issue 14 items 5 and 6: a top-level `UNION ALL` of events feeding one
//! result — one program per branch, one group map. Ground truth: the fileio
//! workload's own report of its read() and write() calls, and (cachestat,
//! cachetop) a file of known size dropped from the page cache and read twice.

use crate::common;

use common::{hist_total, rows_of, run_around, s, u, workload_bin, Row};
use ebq::runtime::Value;
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
    assert_eq!(got, want, "{rows:?}");
    for r in &rows {
        assert_eq!(hist_total(r, "h"), u(r, "calls"), "{r:?}");
        let Some(Value::F(mean)) = r.get("mean") else { panic!("{r:?}") };
        assert_eq!(*mean, u(r, "bytes") as f64 / u(r, "calls") as f64, "{r:?}");
    }
    // Both programs count into the one stats map: every matched event is in a group
    // (the report's write is seen, not matched).
    assert_eq!(stats.matched, want[&0].0 + want[&1].0, "{stats:?}");
    assert_eq!((stats.dropped, stats.missed), (0, 0), "{stats:?}");
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
    let count = |op: u64| rows.iter().filter(|r| u(r, "op") == op).count() as u64;
    assert_eq!((count(0), count(1)), (f["reads"].as_u64().unwrap(), f["writes"].as_u64().unwrap()), "{rows:?}");
    assert_eq!((count(0), count(1)), (2, 6));
    assert!(rows.iter().all(|r| s(r, "comm") == report["comm"].as_str().unwrap()), "{rows:?}");
    assert_eq!((stats.dropped, stats.missed), (0, 0), "{stats:?}");
}

const PAGE: u64 = 4096;
/// 300 full pages and a 100-byte tail: 301 pages (as in page_cache.rs).
const SIZE: u64 = 300 * PAGE + 100;
const PAGES: u64 = SIZE.div_ceil(PAGE);

/// Shipped query `name` with its parameters at their defaults (`interval_ms` one long
/// window) and `extra` (a WHERE) before its WINDOW, run with `ebq -f` around `cmd`.
fn shipped_around(name: &str, extra: &str, cmd: &str) -> Vec<Json> {
    let sql = shipped_text(name, extra);
    let file = std::env::temp_dir().join(format!("ebq-{name}-{}.sql", std::process::id()));
    std::fs::write(&file, &sql).unwrap();
    let out = Command::new(common::ebq_bin())
        .args(["-f", file.to_str().unwrap(), "-c", cmd, "--format", "json"])
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&file);
    assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str::<Json>(l).unwrap()).collect()
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
    // Pass 1, from a dropped cache: every page asked for once and added once, no hit.
    let (stat, top) = pass(true);
    assert_eq!(stat.len(), 1, "{stat:?}");
    let row = &stat[0];
    let got = (n(row, "accesses"), n(row, "misses"), n(row, "hits"), n(row, "hit_pct"), n(row, "dirtied"));
    assert_eq!(got, (PAGES as i64, PAGES as i64, 0, 0, 0), "{row}");
    assert_eq!(top.len(), 1, "one process, one file: {top:?}");
    let t = &top[0];
    assert_eq!((n(t, "accesses"), n(t, "misses"), n(t, "hits")), (PAGES as i64, PAGES as i64, 0), "{t}");
    assert_eq!(n(t, "inode"), ino as i64, "{t}");
    // Pass 2, all cached: every page asked for once, no miss, every access a hit.
    let (stat, top) = pass(false);
    let row = &stat[0];
    let got = (n(row, "accesses"), n(row, "misses"), n(row, "hits"), n(row, "hit_pct"), n(row, "dirtied"));
    assert_eq!(got, (PAGES as i64, 0, PAGES as i64, 100, 0), "{row}");
    let t = &top[0];
    assert_eq!((n(t, "accesses"), n(t, "misses"), n(t, "hits")), (PAGES as i64, 0, PAGES as i64), "{t}");
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
    let rows = common::run_bundle_without_clang(&bundle, &empty, &cmd);
    assert_eq!(rows.len(), 1, "{rows:?}");
    let got = (n(&rows[0], "accesses"), n(&rows[0], "misses"), n(&rows[0], "hits"));
    assert_eq!(got, (PAGES as i64, PAGES as i64, 0), "{rows:?}");
    let _ = std::fs::remove_dir_all(dir);
    let _ = std::fs::remove_file(&path);
}

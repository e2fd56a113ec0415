//! Issue 14 items 1 and 4: file columns at a mapped address — the file a user
//! page fault (`exceptions:page_fault_user`) or an `msync` range is in, found
//! in the kernel with `bpf_find_vma`, on any file system (tmpfs has no
//! filemap fault tracepoint of its own).
//!
//! Ground truth: `ebq-workload mmapwrite` stores one byte in each of N pages
//! of a fresh shared file mapping — N write faults, which the kernel serves a
//! page at a time — and calls msync M times; its report gives N, M and the
//! file's inode. io.ops' `mmap` row is checked against the same run.
//!
//! Run with `cargo test --release -p ebq-e2e --test e2e mapped_files:: -- --test-threads=1`.

use crate::common;

use common::{assert_exact_or_accounted, lost, rows_of, run_around, s, u, Row};
use ebq::{QueryStats, Scope};
use std::path::{Path, PathBuf};

const PAGES: u64 = 64;
const MSYNCS: u64 = 3;
const COMM: &str = "ebq-mmapw";

/// Runs `sql` around mmapwrite on a file in `dir`; returns the rows for that
/// file (by name) — none only when the stats report a loss (every event of it lost) —, the
/// file's inode from the workload's report, and the stats.
fn run(dir: &Path, sql: &str, tag: &str) -> (Option<Row>, u64, QueryStats) {
    let file: PathBuf = dir.join(format!("ebq-mmapw-{}-{tag}.dat", std::process::id()));
    let pages = PAGES.to_string();
    let msyncs = MSYNCS.to_string();
    let args = ["mmapwrite", "--file", file.to_str().unwrap(), "--pages", &pages, "--msyncs", &msyncs, "--comm", COMM];
    let (outs, stats, report) = run_around(sql, |_| Scope::All, &args);
    let _ = std::fs::remove_file(&file);
    let name = file.file_name().unwrap().to_str().unwrap();
    let rows = rows_of(&outs);
    let mut mine: Vec<Row> = rows.iter().filter(|r| s(r, "file_name") == name).cloned().collect();
    assert!(mine.len() == 1 || mine.is_empty() && lost(&stats) > 0, "one group for {name}: {rows:?}; {stats:?}");
    (mine.pop(), report["inode"].as_u64().unwrap(), stats)
}

fn faults_on(dir: &Path, fs_type: &str) {
    let sql = format!(
        "SELECT file_name, inode, fs_type, COUNT(*) AS faults FROM exceptions.page_fault_user \
         WHERE comm = '{COMM}' GROUP BY file_name, inode, fs_type"
    );
    let (r, inode, stats) = run(dir, &sql, fs_type);
    // Accounting (one event, aggregate): faults + dropped + missed = the workload's pages.
    assert_exact_or_accounted(r.as_ref().map_or(0, |r| u(r, "faults")), PAGES, &stats, "write faults");
    let Some(r) = r else { return };
    assert_eq!((u(&r, "inode"), s(&r, "fs_type")), (inode, fs_type.to_string()), "{r:?}");
}

#[test]
fn page_faults_name_the_tmpfs_file_they_write() {
    faults_on(Path::new("/dev/shm"), "tmpfs");
}

#[test]
fn page_faults_name_the_ext4_file_they_write() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    faults_on(dir, "ext4");
}

#[test]
fn msync_names_the_mapped_file_and_its_range() {
    let sql = format!(
        "SELECT file_name, inode, COUNT(*) AS calls, SUM(len) AS bytes FROM syscalls.sys_enter_msync \
         WHERE comm = '{COMM}' GROUP BY file_name, inode"
    );
    let (r, inode, stats) = run(Path::new("/dev/shm"), &sql, "msync");
    // Accounting (one event, aggregate): calls + dropped + missed = the workload's msyncs;
    // the bytes exact when nothing was lost.
    assert_exact_or_accounted(r.as_ref().map_or(0, |r| u(r, "calls")), MSYNCS, &stats, "msyncs");
    let Some(r) = r else { return };
    assert_eq!(u(&r, "inode"), inode, "{r:?}");
    if lost(&stats) == 0 {
        assert_eq!(u(&r, "bytes"), MSYNCS * PAGES * 4096, "{r:?}");
    }
}

/// io.ops' mmap branch: a file mapping is a `meta` row of its file with the
/// length mapped (the workload's ftruncate, also `meta`, moves no bytes).
#[test]
fn io_ops_counts_the_file_mapping_with_its_length() {
    let sql = format!(
        "SELECT file_name, inode, COUNT(*) AS calls, SUM(bytes) AS bytes, SUM(ret) AS ret, SUM(offset) AS offsets \
         FROM io.ops WHERE comm = '{COMM}' AND path = 'syscall' AND op = 'meta' AND bytes > 0 GROUP BY file_name, inode"
    );
    let (r, inode, stats) = run(Path::new("/dev/shm"), &sql, "mmap");
    // Accounting (JOIN, enter/exit pairs): the one mmap + dropped + missed ends/starts + open +
    // superseded = 1; its row exact when seen.
    assert_exact_or_accounted(r.as_ref().map_or(0, |r| u(r, "calls")), 1, &stats, "mmaps");
    let Some(r) = r else { return };
    let got = (u(&r, "calls"), u(&r, "bytes"), u(&r, "ret"), u(&r, "offsets"), u(&r, "inode"));
    assert_eq!(got, (1, PAGES * 4096, PAGES * 4096, 0, inode), "{r:?}");
}

/// io.ops' msync branch: a `sync` row of the mapped file, its offset the file
/// offset msync's address maps (`map_offset`: the mapping starts 16 pages into
/// the file), no bytes, the call's `ret`.
#[test]
fn io_ops_counts_msync_of_the_mapped_file_at_its_file_offset() {
    const SKIP: u64 = 16;
    let sql = format!(
        "SELECT file_name, inode, COUNT(*) AS calls, SUM(bytes) AS bytes, SUM(ret) AS ret, SUM(offset) AS offsets \
         FROM io.ops WHERE comm = '{COMM}' AND path = 'syscall' AND op = 'sync' GROUP BY file_name, inode"
    );
    let file = PathBuf::from(format!("/dev/shm/ebq-mmapw-{}-msync-at.dat", std::process::id()));
    let (pages, skip, msyncs) = (PAGES.to_string(), SKIP.to_string(), MSYNCS.to_string());
    let args = [
        "mmapwrite",
        "--file",
        file.to_str().unwrap(),
        "--pages",
        &pages,
        "--skip",
        &skip,
        "--msyncs",
        &msyncs,
        "--comm",
        COMM,
    ];
    let (outs, stats, report) = run_around(&sql, |_| Scope::All, &args);
    let _ = std::fs::remove_file(&file);
    let rows = rows_of(&outs);
    assert_eq!(rows.len(), 1, "{rows:?}; {stats:?}");
    let r = &rows[0];
    // Accounting (JOIN, enter/exit pairs): calls + dropped + missed ends/starts + open +
    // superseded = the workload's msyncs; each pair has the same offset, so the sum is exact
    // per call seen, and the whole row exact when nothing was lost.
    assert_exact_or_accounted(u(r, "calls"), MSYNCS, &stats, "msync pairs");
    let got = (u(r, "calls"), u(r, "bytes"), u(r, "ret"), u(r, "offsets"), u(r, "inode"));
    let want = (u(r, "calls"), 0, 0, u(r, "calls") * SKIP * 4096, report["inode"].as_u64().unwrap());
    assert_eq!(got, want, "{r:?}");
    if lost(&stats) == 0 {
        assert_eq!(u(r, "calls"), MSYNCS, "{stats:?}");
    }
    assert_eq!(s(r, "file_name"), file.file_name().unwrap().to_str().unwrap());
}

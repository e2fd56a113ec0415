//! Issue 14 items 4 and 5: the page cache and mmap through the shipped queries
//! cache-reads, cache-misses, cache-dirtied, mmap-faults and mmap-faultaround, on a
//! file of known size on ext4 (under cargo's target directory) dropped from the cache
//! with posix_fadvise(DONTNEED). Ground truth: the file's size in pages, and a tracefs
//! instance recording the same tracepoints, filtered on the file's inode.

use crate::common;

use common::{assert_exact_or_accounted, cli_stats, ebq_bin, lost, workload_bin};
use ebq::QueryStats;
use serde_json::Value as Json;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::process::Command;

const PAGE: u64 = 4096;
/// 300 full pages and a 100-byte tail: 301 pages.
const SIZE: u64 = 300 * PAGE + 100;
const PAGES: u64 = SIZE.div_ceil(PAGE);

/// A private file of SIZE bytes on the target directory's file system (ext4 here).
struct TestFile(PathBuf);

impl TestFile {
    fn new(tag: &str) -> TestFile {
        let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("ebq-pc-{tag}-{}.dat", std::process::id()));
        let bytes: Vec<u8> = (0..SIZE).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, bytes).unwrap();
        TestFile(path)
    }

    fn inode(&self) -> u64 {
        std::fs::metadata(&self.0).unwrap().ino()
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TestFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A tracefs instance recording `events` (CATEGORY/NAME) with one filter.
struct Instance {
    dir: PathBuf,
    events: Vec<&'static str>,
}

impl Instance {
    fn start(tag: &str, events: &[&'static str], filter: &str) -> Instance {
        let dir = PathBuf::from(format!("/sys/kernel/tracing/instances/ebq-pc-{tag}-{}", std::process::id()));
        std::fs::create_dir(&dir).expect("tracefs instance (scripts/setup.sh mounts tracefs)");
        let inst = Instance { dir, events: events.to_vec() };
        std::fs::write(inst.dir.join("buffer_size_kb"), "4096").unwrap();
        for ev in events {
            std::fs::write(inst.dir.join("events").join(ev).join("filter"), filter).unwrap();
            std::fs::write(inst.dir.join("events").join(ev).join("enable"), "1").unwrap();
        }
        inst
    }

    /// The recorded lines of event `name`, after `name: `.
    fn lines(&self, name: &str) -> Vec<String> {
        let text = std::fs::read_to_string(self.dir.join("trace")).unwrap();
        assert!(!text.contains("LOST"), "{text}");
        let tag = format!(" {name}: ");
        text.lines().filter_map(|l| l.split_once(&tag).map(|(_, rest)| rest.to_string())).collect()
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        for ev in &self.events {
            let _ = std::fs::write(self.dir.join("events").join(ev).join("enable"), "0");
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// `ebq-workload ARGS` as a shell command.
fn workload(args: &[&str]) -> String {
    format!("{} {}", workload_bin().display(), args.join(" "))
}

/// Runs shipped query `name` around `cmd` (scoped to it) and returns its rows for
/// `inode`, every window's, and its stats line.
fn shipped_rows(name: &str, cmd: &str, inode: u64) -> (Vec<Json>, QueryStats) {
    let out = Command::new(ebq_bin())
        .args(["run", name, "-c", cmd, "--format", "json", "--set", "top=1000"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
    let rows = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Json>(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .filter(|r| r["inode"].as_u64() == Some(inode))
        .collect();
    (rows, cli_stats(&String::from_utf8_lossy(&out.stderr)))
}

fn total(rows: &[Json], col: &str) -> u64 {
    rows.iter().map(|r| r[col].as_u64().unwrap_or_else(|| panic!("{col} in {r}"))).sum()
}

/// `key=A-B` or `key=A` in a trace line, as numbers.
fn field(line: &str, key: &str) -> (u64, u64) {
    let v = line.split_whitespace().find_map(|w| w.strip_prefix(key)).unwrap_or_else(|| panic!("{key} in {line}"));
    let (a, b) = v.split_once('-').unwrap_or((v, v));
    (a.parse().unwrap(), b.parse().unwrap())
}

/// One pass of `cachepass` (dropping the file first when `dropped`), run twice: once seen by
/// cache-reads, once by cache-misses (each run drops again when `dropped`): (lookups, pages
/// read, pages added),
/// each checked against the tracefs instance of its run, which is returned.
///
/// Accounting (-c, one event, aggregate): lookups and folios + dropped + missed + fork/exit
/// missed + untracked = the instance's lines (a filtered instance on the same tracepoint is
/// what makes this kernel skip BPF programs now and then); pages and bytes exact when
/// nothing was lost.
fn pass(file: &TestFile, dropped: bool) -> (u64, u64, u64) {
    let ino = file.inode();
    let mut args = vec!["cachepass", "--file", file.path()];
    if dropped {
        args.push("--drop");
    }
    let filter = format!("i_ino == {ino}");
    let events = ["filemap/mm_filemap_get_pages", "filemap/mm_filemap_add_to_page_cache"];

    let trace = Instance::start("reads", &events, &filter);
    let (reads, stats) = shipped_rows("cache-reads", &workload(&args), ino);
    let lookups = trace.lines("mm_filemap_get_pages");
    assert_exact_or_accounted(total(&reads, "lookups"), lookups.len() as u64, &stats, &format!("lookups: {reads:?}"));
    let traced_pages: u64 = lookups.iter().map(|l| field(l, "ofs=")).map(|(a, b)| (b + 1 - a) / PAGE).sum();
    if lost(&stats) == 0 {
        assert_eq!(total(&reads, "pages"), traced_pages, "{reads:?}");
    }
    drop(trace);

    let trace = Instance::start("misses", &events, &filter);
    let (misses, stats) = shipped_rows("cache-misses", &workload(&args), ino);
    let added = trace.lines("mm_filemap_add_to_page_cache");
    assert_exact_or_accounted(total(&misses, "folios"), added.len() as u64, &stats, &format!("folios: {misses:?}"));
    let traced_added: u64 = added.iter().map(|l| 1u64 << field(l, "order=").0).sum();
    if lost(&stats) == 0 {
        assert_eq!(total(&misses, "pages"), traced_added, "{misses:?}");
        assert_eq!(total(&misses, "bytes"), traced_added * PAGE, "{misses:?}");
    }
    // The kernel's own numbers (what ebq equals when nothing was lost) against the file's pages.
    (lookups.len() as u64, traced_pages, traced_added)
}

#[test]
fn a_dropped_file_read_twice_misses_every_page_once_then_hits_every_page() {
    let file = TestFile::new("twice");
    // Pass 1 from a dropped cache: every page read once, every page a miss.
    let (lookups, pages, misses) = pass(&file, true);
    assert_eq!((lookups, pages, misses), (PAGES, PAGES, PAGES));
    assert_eq!(pages - misses, 0, "hits");
    // Pass 2, all cached: every page read once, no miss, every read a hit.
    let (lookups, pages, misses) = pass(&file, false);
    assert_eq!((lookups, pages, misses), (PAGES, PAGES, 0));
    assert_eq!(pages - misses, PAGES, "hits");
}

/// Runs `mmaptouch --drop` under shipped query `name` with a tracefs instance recording
/// both fault tracepoints; checks that the recorded faults and fault-around ranges cover
/// exactly the file's pages; returns the rows, their stats and the instance.
fn touched(file: &TestFile, name: &str) -> (Vec<Json>, QueryStats, Instance) {
    let ino = file.inode();
    let events = ["filemap/mm_filemap_fault", "filemap/mm_filemap_map_pages"];
    let trace = Instance::start(name, &events, &format!("i_ino == {ino}"));
    let (rows, stats) = shipped_rows(name, &workload(&["mmaptouch", "--file", file.path(), "--drop"]), ino);
    let mut covered = vec![false; PAGES as usize];
    let faults = trace.lines("mm_filemap_fault").into_iter().map(|l| field(&l, "ofs="));
    let around = trace.lines("mm_filemap_map_pages").into_iter().map(|l| field(&l, "ofs="));
    for (a, b) in faults.map(|(a, _)| (a, a + PAGE - 1)).chain(around) {
        assert!(b < PAGES * PAGE, "page {} is beyond the file's {PAGES}", b / PAGE);
        (a / PAGE..=b / PAGE).for_each(|p| covered[p as usize] = true);
    }
    // Bytes brought into the mapping = bytes touched: every page of the file, nothing more.
    assert_eq!(covered.iter().filter(|c| **c).count() as u64, PAGES);
    (rows, stats, trace)
}

#[test]
fn mmap_faults_count_the_kernels_faults_in_pages_and_bytes() {
    let file = TestFile::new("faults");
    let (rows, stats, trace) = touched(&file, "mmap-faults");
    let faults = trace.lines("mm_filemap_fault").len() as u64;
    assert!(faults >= 1, "the first touch of a dropped file faults");
    // Accounting (-c, one event, aggregate): faults + lost = the instance's; a page each.
    assert_exact_or_accounted(total(&rows, "faults"), faults, &stats, &format!("faults: {rows:?}"));
    assert_eq!(total(&rows, "bytes"), total(&rows, "faults") * PAGE, "{rows:?}");
}

#[test]
fn mmap_faultaround_counts_the_kernels_ranges_and_the_pages_they_mapped() {
    let file = TestFile::new("around");
    let (rows, stats, trace) = touched(&file, "mmap-faultaround");
    let ranges: Vec<(u64, u64)> = trace.lines("mm_filemap_map_pages").iter().map(|l| field(l, "ofs=")).collect();
    let walked: u64 = ranges.iter().map(|(a, b)| (b + 1 - a) / PAGE).sum();
    // Accounting (-c, one event, aggregate): passes + lost = the instance's ranges; the pages
    // walked exact when nothing was lost.
    assert_exact_or_accounted(total(&rows, "passes"), ranges.len() as u64, &stats, &format!("passes: {rows:?}"));
    if lost(&stats) == 0 {
        assert_eq!(total(&rows, "walked"), walked, "{rows:?}");
    }
    // The faults' pages are the rest of the file (the io.ops test below checks the sum).
    let pages = total(&rows, "pages");
    assert!(pages <= PAGES.min(walked), "{rows:?}");
    assert_eq!(total(&rows, "bytes"), pages * PAGE, "{rows:?}");
}

/// The file's pages `mmaptouch` brought into its mapping, by io.ops' `mmap` path: (rows, bytes).
fn mmap_path(file: &TestFile, drop: bool, write: bool) -> (u64, u64) {
    let mut args = vec!["mmaptouch", "--file", file.path()];
    if drop {
        args.push("--drop");
    }
    if write {
        args.push("--write");
    }
    let sql = format!(
        "SELECT COUNT(*) AS ops, SUM(bytes) AS bytes FROM io.ops WHERE path = 'mmap' AND inode = {}",
        file.inode()
    );
    let out = Command::new(ebq_bin()).args([&sql, "-c", &workload(&args), "--format", "json"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let row: Json = serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    let (ops, bytes) = (row["ops"].as_u64().unwrap(), row["bytes"].as_u64().unwrap_or(0));
    // Accounting (-c, UNION of fault paths, rows of one or more pages): exact when nothing
    // was lost; otherwise a lost row (of unknown size: a folio, a fault-around range) can only
    // make the bytes fall short of the file's.
    let stats = cli_stats(&stderr);
    if lost(&stats) > 0 {
        eprintln!("exact or accounted: mmap path: {bytes} of {} bytes; {stats:?}", PAGES * PAGE);
        assert!(bytes <= PAGES * PAGE, "{bytes} bytes of a {PAGES}-page file; {stats:?}");
        return (ops, PAGES * PAGE);
    }
    (ops, bytes)
}

#[test]
fn io_ops_mmap_path_brings_in_every_page_whether_it_faulted_or_was_mapped_around() {
    // Dropped: faults read pages in and fault-around maps what readahead cached. Cached:
    // fault-around maps every page, the faulting ones included, and no filemap fault runs —
    // before pages_mapped, io.ops saw none of them. Either way each page of the file
    // (touched once each, `touched` checks it) is brought in once.
    let file = TestFile::new("mmap-path");
    let (ops, bytes) = mmap_path(&file, true, false);
    assert_eq!(bytes, PAGES * PAGE, "dropped: {ops} rows");
    let (ops, bytes) = mmap_path(&file, false, false);
    assert_eq!(bytes, PAGES * PAGE, "cached: {ops} rows");
    assert!(ops < PAGES, "cached: fault-around maps many pages a row ({ops} rows)");
}

#[test]
fn io_ops_mmap_path_counts_the_large_folios_write_faults_map_whole() {
    // A store to a page not yet mapped is a write fault, which takes no fault-around: its
    // filemap fault counts the page, and its finish maps the page's whole folio (Linux 6.11
    // on). The file was written in one call, so its cache holds large folios: fewer faults
    // than pages, and before the finish's rows (kmem:rss_stat) io.ops counted one page each.
    // Dropped first, the stores fault each page in (one row and its finish's, per folio read).
    let file = TestFile::new("mmap-write");
    let (ops, bytes) = mmap_path(&file, false, true);
    assert_eq!(bytes, PAGES * PAGE, "cached: {ops} rows");
    assert!(ops < PAGES, "cached: a finish maps a large folio's pages in one row ({ops} rows)");
    let (ops, bytes) = mmap_path(&file, true, true);
    assert_eq!(bytes, PAGES * PAGE, "dropped: {ops} rows");
}

#[test]
fn cache_dirtied_counts_the_kernels_dirtied_folios() {
    let file = TestFile::new("dirty");
    let ino = file.inode();
    std::fs::File::open(&file.0).unwrap().sync_all().unwrap();
    let trace = Instance::start("dirty", &["writeback/writeback_dirty_folio"], &format!("ino == {ino}"));
    // 16 page-sized writes at page-aligned offsets of the clean file.
    let cmd = format!("dd if=/dev/zero of={} bs=4096 count=16 conv=notrunc status=none", file.path());
    let (rows, stats) = shipped_rows("cache-dirtied", &cmd, ino);
    let dirtied = trace.lines("writeback_dirty_folio").len() as u64;
    assert!(dirtied >= 1, "writing a clean cached file dirties its folios");
    // Accounting (-c, one event, aggregate): folios + lost = the instance's.
    assert_exact_or_accounted(total(&rows, "folios"), dirtied, &stats, &format!("dirtied folios: {rows:?}"));
}

#[test]
fn cache_readahead_counts_the_kernels_windows_and_sizes() {
    let file = TestFile::new("readahead");
    let ino = file.inode();
    let trace = Instance::start("readahead", &["readahead/page_cache_ra_order"], &format!("i_ino == {ino}"));
    let (rows, stats) =
        shipped_rows("cache-readahead", &workload(&["cachepass", "--file", file.path(), "--drop"]), ino);
    let windows = trace.lines("page_cache_ra_order");
    assert!(!windows.is_empty(), "reading a dropped file reads ahead");
    let sum = |key: &str| windows.iter().map(|l| field(l, key).0).sum::<u64>();
    // Accounting (-c, one event, aggregate): windows + lost = the instance's; their sizes
    // exact when nothing was lost.
    assert_exact_or_accounted(total(&rows, "windows"), windows.len() as u64, &stats, &format!("windows: {rows:?}"));
    if lost(&stats) == 0 {
        assert_eq!(total(&rows, "pages"), sum("size="), "{rows:?}");
        assert_eq!(total(&rows, "async_pages"), sum("async_size="), "{rows:?}");
    }
    // Readahead asks for at least the file: every page of it is read ahead.
    assert!(sum("size=") >= PAGES, "{windows:?}");
}

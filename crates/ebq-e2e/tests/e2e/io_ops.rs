//! Issue 14 item 6: the built-in view `io.ops` (system-call path), inlined
//! into a query and run over `ebq-workload fileio`, whose own report is the
//! ground truth: per data file, reads (read + pread64 [+ preadv2]), writes
//! (write + pwrite64 [+ pwritev2]), their bytes, one lseek and one close.
//!
//! Run with `cargo test --release -p ebq-e2e --test e2e io_ops:: -- --test-threads=1`.

use crate::common;

use common::{
    assert_exact_or_accounted, assert_keyed_exact_or_accounted, assert_map_exact_or_accounted, rows_of, run_around, s,
    u,
};
use ebq::Scope;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// io.ops `op` values (crates/ebq-front/src/catalog/views/io_ops.sql).
const READ: &str = "read";
const WRITE: &str = "write";
const SYNC: &str = "sync";
const OPEN: &str = "open";
const CLOSE: &str = "close";
const SEEK: &str = "seek";
const META: &str = "meta";

fn check(v2: bool) {
    let dir = std::env::temp_dir().join(format!("ebq-ioops-{}-{v2}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (f1, f2) = (dir.join("f1"), dir.join("f2"));
    let files = format!("{},{}", f1.display(), f2.display());
    let comm = if v2 { "ebq-ioops-v2" } else { "ebq-ioops" };
    let mut args = vec!["fileio", "--files", &files, "--writes", "5,7", "--reads", "3,4", "--size", "1000"];
    args.extend(["--comm", comm]);
    if v2 {
        args.push("--v2");
    }
    let sql = format!(
        "SELECT op, file_name, COUNT(*) AS n, SUM(bytes) AS bytes FROM io.ops \
         WHERE comm = '{comm}' GROUP BY op, file_name"
    );
    let (outs, stats, report) = run_around(&sql, |_| Scope::All, &args);
    let _ = std::fs::remove_dir_all(&dir);
    let rows = rows_of(&outs);
    let got: BTreeMap<(String, String), (u64, u64)> =
        rows.iter().map(|r| ((s(r, "op"), s(r, "file_name")), (u(r, "n"), u(r, "bytes")))).collect();
    for f in report["files"].as_array().unwrap() {
        let name = Path::new(f["path"].as_str().unwrap()).file_name().unwrap().to_str().unwrap().to_string();
        let size = f["size"].as_u64().unwrap();
        let reads = f["reads"].as_u64().unwrap() + f["preads"].as_u64().unwrap() + f["preadv2s"].as_u64().unwrap();
        let writes = f["writes"].as_u64().unwrap() + f["pwrites"].as_u64().unwrap() + f["pwritev2s"].as_u64().unwrap();
        let mine: BTreeMap<_, _> = got.iter().filter(|((_, n), _)| *n == name).map(|(k, v)| (k.clone(), *v)).collect();
        let want: BTreeMap<(String, String), (u64, u64)> = [
            ((READ.to_string(), name.clone()), (reads, reads * size)),
            ((WRITE.to_string(), name.clone()), (writes, writes * size)),
            // An open's row names the file of the fd it returned.
            ((OPEN.to_string(), name.clone()), (f["opens"].as_u64().unwrap(), 0)),
            ((CLOSE.to_string(), name.clone()), (1, 0)),
            ((SEEK.to_string(), name.clone()), (1, 0)),
        ]
        .into_iter()
        .collect();
        // Accounting (JOIN, enter/exit pairs): calls per op + dropped + missed ends/starts + open +
        // superseded cover the workload's tally; (calls, bytes) exact when nothing was lost.
        assert_keyed_exact_or_accounted(&mine, &want, |v| v.0, &stats, &format!("{name}: {rows:?}"));
    }
}

#[test]
fn io_ops_counts_and_bytes_per_op_and_file_equal_the_workload_tally() {
    check(false);
}

#[test]
fn io_ops_counts_preadv2_and_pwritev2_by_returned_bytes() {
    check(true);
}

#[test]
fn every_io_ops_column_at_once_streams_each_call_of_the_workload() {
    // All 17 columns in one row query: the syscall branch's start carries four file-column
    // strings and ten numbers into its pair (built in per-CPU scratch, not on the BPF stack).
    let dir = std::env::temp_dir().join(format!("ebq-ioops-all-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("f1");
    let comm = "ebq-ioops-all";
    let path = file.to_str().unwrap();
    let args = ["fileio", "--files", path, "--writes", "6", "--reads", "5", "--size", "1000", "--comm", comm];
    let cols = "path, op, pid, tid, comm, cgroup, fs_type, mount_point, file_name, inode, dev, offset, bytes, ret, start, end, latency";
    let sql = format!("SELECT {cols} FROM io.ops WHERE comm = '{comm}'");
    let (outs, stats, report) = run_around(&sql, |_| Scope::All, &args);
    let meta = std::fs::metadata(&file).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let rows: Vec<_> = rows_of(&outs).into_iter().filter(|r| s(r, "file_name") == "f1").collect();
    let f = &report["files"][0];
    let (reads, writes) = (
        f["reads"].as_u64().unwrap() + f["preads"].as_u64().unwrap(),
        f["writes"].as_u64().unwrap() + f["pwrites"].as_u64().unwrap(),
    );
    let of = |op: &str| rows.iter().filter(|r| s(r, "op") == op).collect::<Vec<_>>();
    // Accounting (JOIN rows): rows per op + dropped + missed ends/starts + open + superseded
    // cover the workload's calls; exact when nothing was lost.
    let count = |op: &str| of(op).len() as u64;
    let got: BTreeMap<&str, u64> =
        [(READ, count(READ)), (WRITE, count(WRITE)), (SEEK, count(SEEK)), (CLOSE, count(CLOSE))]
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .collect();
    let want: BTreeMap<&str, u64> = [(READ, reads), (WRITE, writes), (SEEK, 1), (CLOSE, 1)].into_iter().collect();
    assert_map_exact_or_accounted(&got, &want, &stats, &format!("rows per op: {rows:?}"));
    let dev = u64::from(libc::major(meta.dev())) << 20 | u64::from(libc::minor(meta.dev()));
    let pid = report["pid"].as_u64().unwrap();
    for r in &rows {
        assert_eq!(
            (s(r, "path").as_str(), s(r, "comm").as_str(), u(r, "pid"), u(r, "tid")),
            ("syscall", comm, pid, pid),
            "{r:?}"
        );
        assert_eq!((u(r, "inode"), u(r, "dev")), (meta.ino(), dev), "{r:?}");
        assert!(!s(r, "fs_type").is_empty() && path.starts_with(&s(r, "mount_point")), "{r:?}");
        assert!(u(r, "cgroup") > 0 && u(r, "end") >= u(r, "start"), "{r:?}");
        assert_eq!(u(r, "latency"), u(r, "end") - u(r, "start"), "{r:?}");
    }
    for r in of(READ).into_iter().chain(of(WRITE)) {
        assert_eq!((u(r, "bytes"), u(r, "ret")), (1000, 1000), "{r:?}");
    }
}

#[test]
fn io_ops_counts_space_size_and_sync_calls_as_meta_and_sync() {
    let file = std::env::temp_dir().join(format!("ebq-fileops-{}.dat", std::process::id()));
    let comm = "ebq-fileops";
    let sql = format!(
        "SELECT op, file_name, COUNT(*) AS n, SUM(bytes) AS bytes, MAX(offset) AS max_offset FROM io.ops \
         WHERE comm = '{comm}' AND ret >= 0 GROUP BY op, file_name"
    );
    let args = ["fileops", "--file", file.to_str().unwrap(), "--comm", comm];
    let (outs, stats, report) = run_around(&sql, |_| Scope::All, &args);
    let _ = std::fs::remove_file(&file);
    let name = file.file_name().unwrap().to_str().unwrap().to_string();
    let rows = rows_of(&outs);
    let got: BTreeMap<String, (u64, u64, u64)> = rows
        .iter()
        .filter(|r| s(r, "file_name") == name)
        .map(|r| (s(r, "op"), (u(r, "n"), u(r, "bytes"), u(r, "max_offset"))))
        .collect();
    let n = |k: &str| report[k].as_u64().unwrap();
    let syncs = n("fsync") + n("fdatasync") + n("syncfs") + n("sync_file_range");
    let written = report["write"]["bytes"].as_u64().unwrap();
    let want: BTreeMap<String, (u64, u64, u64)> = [
        (WRITE, (report["write"]["calls"].as_u64().unwrap(), written, 0)),
        // The file position after the write, or sync_file_range's offset (0).
        (SYNC, (syncs, 0, written)),
        (CLOSE, (n("close"), 0, written)),
        // The open's file is the fd it returned; it moves no byte, at offset 0.
        (OPEN, (n("opens"), 0, 0)),
        // fallocate's offset argument: the second one starts at 1 MiB.
        (META, (n("fallocate") + n("ftruncate"), 0, 1 << 20)),
    ]
    .into_iter()
    .map(|(op, v)| (op.to_string(), v))
    .collect();
    // Accounting (JOIN, enter/exit pairs): calls per op exact or accounted; (calls, bytes,
    // offset) exact when nothing was lost.
    assert_keyed_exact_or_accounted(&got, &want, |v| v.0, &stats, &format!("{rows:?}"));
}

#[test]
fn tee_and_vmsplice_return_the_bytes_the_workload_moved() {
    let file = std::env::temp_dir().join(format!("ebq-fileops-pipes-{}.dat", std::process::id()));
    let comm = "ebq-pipes";
    for call in ["tee", "vmsplice"] {
        let sql =
            format!("SELECT COUNT(*) AS calls, SUM(ret) AS bytes FROM syscalls.sys_exit_{call} WHERE comm = '{comm}'");
        let args = ["fileops", "--file", file.to_str().unwrap(), "--comm", comm];
        let (outs, stats, report) = run_around(&sql, |_| Scope::All, &args);
        let rows = rows_of(&outs);
        assert_eq!(rows.len(), 1, "{rows:?}");
        let want = (report[call]["calls"].as_u64().unwrap(), report[call]["bytes"].as_u64().unwrap());
        assert_eq!(want, (1, 3000), "the workload's own tally");
        // Accounting (one event, aggregate): calls + dropped + missed = the workload's; the bytes
        // exact when nothing was lost.
        assert_exact_or_accounted(u(&rows[0], "calls"), want.0, &stats, &format!("{call}: {rows:?}"));
        if common::lost(&stats) == 0 {
            assert_eq!(u(&rows[0], "bytes"), want.1, "{call}: {rows:?}; {stats:?}");
        }
    }
    let _ = std::fs::remove_file(&file);
}

//! Issue 3, item 1: file columns (inode, dev, fs_type, mount_point, file_name,
//! file_pos) resolved in the kernel through the running kernel's BTF, checked
//! exactly against a workload that does known I/O on a file on the disk's
//! ext4 (under $TMPDIR) and on a tmpfs this test mounts and unmounts.
//!
//! Run with `cargo test --release -p ebq-e2e --test e2e file_columns:: -- --test-threads=1`.

use crate::common;

use common::{
    assert_exact_or_accounted, assert_keyed_exact_or_accounted, assert_map_exact_or_accounted, ebq_bin, engine, lost,
    rows_of, run_around, s, u, workload_bin, Row,
};
use ebq::QueryStats;
use ebq::Scope;
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A directory on the root file system with a tmpfs mounted at `<dir>/mnt`;
/// unmounted and removed on drop.
struct Files {
    dir: PathBuf,
    mnt: PathBuf,
}

impl Files {
    fn new(tag: &str) -> Files {
        let dir = std::env::temp_dir().join(format!("ebq-fc-{tag}-{}", std::process::id()));
        let mnt = dir.join("mnt");
        std::fs::create_dir_all(&mnt).unwrap();
        let out = Command::new("mount").args(["-t", "tmpfs", "-o", "size=4m", "tmpfs"]).arg(&mnt).output().unwrap();
        assert!(out.status.success(), "mount tmpfs: {}", String::from_utf8_lossy(&out.stderr));
        Files { dir, mnt }
    }

    fn disk(&self) -> PathBuf {
        self.dir.join("disk.dat")
    }

    fn mem(&self) -> PathBuf {
        self.mnt.join("mem.dat")
    }

    /// `fileio` arguments: 7 writes + 5 reads of 100 B on disk.dat, 4 writes +
    /// 3 reads of 200 B on mem.dat.
    fn workload(&self, comm: &str) -> Vec<String> {
        let files = format!("{},{}", self.disk().display(), self.mem().display());
        ["fileio", "--files", &files, "--writes", "7,4", "--reads", "5,3", "--size", "100", "--comm", comm]
            .iter()
            .map(|a| a.to_string())
            .collect()
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mnt).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The mount point of the file system holding `path`, from /proc/self/mountinfo
/// (the last mount whose point is a prefix of the path), and its mount id.
fn mount_of(path: &Path) -> (String, u64) {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let path = path.to_str().unwrap();
    let mut best = (String::new(), 0);
    for line in info.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let point = f[4];
        let under = point == "/" || path == point || path.starts_with(&format!("{point}/"));
        if under && point.len() >= best.0.len() {
            best = (point.to_string(), f[0].parse().unwrap());
        }
    }
    best
}

fn run(sql: &str, files: &Files, comm: &str) -> (Vec<Row>, Json, QueryStats) {
    let args = files.workload(comm);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (outs, stats, report) = run_around(sql, |_| Scope::All, &args);
    (rows_of(&outs), report, stats)
}

/// Whether `got` is `want` with some items left out (in order): what a row query shows
/// when events were lost.
fn subsequence<T: PartialEq>(got: &[T], want: &[T]) -> bool {
    let mut it = want.iter();
    got.iter().all(|g| it.any(|w| w == g))
}

/// Per file name: the report's entry.
fn by_name(report: &Json) -> BTreeMap<String, Json> {
    report["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let name = Path::new(f["path"].as_str().unwrap()).file_name().unwrap().to_str().unwrap().to_string();
            (name, f.clone())
        })
        .collect()
}

#[test]
fn pread_and_pwrite_counts_per_file_system_and_file_are_exact() {
    let files = Files::new("agg");
    let (disk_mount, disk_mount_id) = mount_of(&files.dir);
    let root_fs = Command::new("stat").args(["-f", "-c", "%T"]).arg(&files.dir).output().unwrap();
    let root_fs = String::from_utf8_lossy(&root_fs.stdout).trim().to_string();
    assert_eq!(root_fs, "ext2/ext3", "the test expects $TMPDIR on the disk's ext4 (stat -f says {root_fs})");
    for (event, calls_key) in [("sys_enter_pwrite64", "pwrites"), ("sys_enter_pread64", "preads")] {
        let sql = format!(
            "SELECT fs_type, mount_point, mount_id, file_name, inode, dev, dev_major, dev_minor, \
             COUNT(*) AS n, SUM(count) AS bytes FROM syscalls.{event} WHERE comm = 'ebq-fc-agg' \
             GROUP BY fs_type, mount_point, mount_id, file_name, inode, dev, dev_major, dev_minor"
        );
        let (rows, report, stats) = run(&sql, &files, "ebq-fc-agg");
        let want = by_name(&report);
        // Accounting (one event, aggregate): calls per file + dropped + missed = the workload's;
        // (calls, bytes) exact when nothing was lost.
        let got: BTreeMap<String, (u64, u64)> =
            rows.iter().map(|r| (s(r, "file_name"), (u(r, "n"), u(r, "bytes")))).collect();
        let truth: BTreeMap<String, (u64, u64)> = want
            .iter()
            .map(|(name, w)| {
                let n = w[calls_key].as_u64().unwrap();
                (name.clone(), (n, n * w["size"].as_u64().unwrap()))
            })
            .collect();
        assert_keyed_exact_or_accounted(&got, &truth, |v| v.0, &stats, &format!("{event}: {rows:?}"));
        for r in &rows {
            let name = s(r, "file_name");
            let w = &want[&name];
            let meta = std::fs::metadata(w["path"].as_str().unwrap()).unwrap();
            assert_eq!(u(r, "inode"), meta.ino(), "{name}");
            assert_eq!(u(r, "inode"), w["inode"].as_u64().unwrap());
            let (major, minor) = (libc::major(meta.dev()) as u64, libc::minor(meta.dev()) as u64);
            assert_eq!((u(r, "dev_major"), u(r, "dev_minor")), (major, minor), "{name}");
            assert_eq!(u(r, "dev"), major << 20 | minor, "kernel dev_t of {name}");
            match name.as_str() {
                "disk.dat" => {
                    assert_eq!(s(r, "fs_type"), "ext4");
                    assert_eq!(s(r, "mount_point"), disk_mount);
                    assert_eq!(u(r, "mount_id"), disk_mount_id);
                }
                "mem.dat" => {
                    assert_eq!(s(r, "fs_type"), "tmpfs");
                    assert_eq!(s(r, "mount_point"), files.mnt.to_str().unwrap());
                    assert_eq!(u(r, "mount_id"), mount_of(&files.mnt).1);
                }
                other => panic!("unexpected file {other}"),
            }
        }
    }
}

#[test]
fn file_pos_follows_write_and_read() {
    let files = Files::new("pos");
    for (event, key) in [("sys_enter_write", "write_positions"), ("sys_enter_read", "read_positions")] {
        let sql = format!(
            "SELECT file_name, file_pos, count FROM syscalls.{event} \
             WHERE comm = 'ebq-fc-pos' AND (file_name = 'disk.dat' OR file_name = 'mem.dat')"
        );
        let (rows, report, stats) = run(&sql, &files, "ebq-fc-pos");
        for (name, w) in by_name(&report) {
            let got: Vec<u64> = rows.iter().filter(|r| s(r, "file_name") == name).map(|r| u(r, "file_pos")).collect();
            let want: Vec<u64> = w[key].as_array().unwrap().iter().map(|p| p.as_u64().unwrap()).collect();
            // Accounting (rows): a lost call leaves its position out, the rest in order.
            if lost(&stats) == 0 {
                assert_eq!(got, want, "{event} positions on {name}; {stats:?}");
            } else {
                assert!(subsequence(&got, &want), "{event} positions on {name}: {got:?} of {want:?}; {stats:?}");
            }
            assert!(rows.iter().filter(|r| s(r, "file_name") == name).all(|r| u(r, "count") == w["size"]));
        }
        // Accounting (rows): rows + dropped + missed = the workload's calls.
        let calls = if event == "sys_enter_write" { 7 + 4 } else { 5 + 3 };
        assert_exact_or_accounted(rows.len() as u64, calls, &stats, event);
    }
}

#[test]
fn tmpfs_filter_and_file_name_groups_run_in_the_kernel() {
    let sql = "SELECT file_name, COUNT(*) AS n, SUM(count) AS bytes FROM syscalls.sys_enter_pwrite64 \
               WHERE fs_type = 'tmpfs' AND comm = 'ebq-fc-tmpfs' GROUP BY file_name";
    let explain = engine().prepare(sql).unwrap().explain();
    assert!(explain.contains("[kernel] Filter     (fs_type = 'tmpfs') && (comm = 'ebq-fc-tmpfs')"), "{explain}");
    // Grouped by the file's dentry in the kernel, named once per group (names late).
    assert!(explain.contains("[kernel] Aggregate  keys=[file_name (by dentry_id)]"), "{explain}");
    assert!(explain.contains("#include \"vmlinux.h\""), "{explain}");
    let files = Files::new("tmpfs");
    let (rows, report, stats) = run(sql, &files, "ebq-fc-tmpfs");
    let mem = &by_name(&report)["mem.dat"];
    assert_eq!(rows.len(), 1, "only the tmpfs file passes: {rows:?}");
    assert_eq!(s(&rows[0], "file_name"), "mem.dat");
    // Accounting (one event, aggregate): n + dropped + missed = the workload's pwrites; bytes
    // exact when nothing was lost.
    assert_exact_or_accounted(u(&rows[0], "n"), mem["pwrites"].as_u64().unwrap(), &stats, "pwrites");
    if lost(&stats) == 0 {
        assert_eq!(u(&rows[0], "bytes"), 4 * 200);
    }
}

#[test]
fn openat_exit_resolves_the_new_fd() {
    let files = Files::new("open");
    let sql = "SELECT file_name, inode, fs_type, file_pos, ret FROM syscalls.sys_exit_openat \
               WHERE ret >= 0 AND comm = 'ebq-fc-open'";
    let (rows, report, stats) = run(sql, &files, "ebq-fc-open");
    // Accounting (rows): one openat per data file + dropped + missed = the workload's files
    // (its other opens, of its report, are not counted).
    let names = by_name(&report);
    let mine = rows.iter().filter(|r| names.contains_key(&s(r, "file_name"))).count() as u64;
    assert_exact_or_accounted(mine, names.len() as u64, &stats, &format!("openat rows: {rows:?}"));
    for (name, w) in by_name(&report) {
        let mine: Vec<&Row> = rows.iter().filter(|r| s(r, "file_name") == name).collect();
        if mine.is_empty() && lost(&stats) > 0 {
            continue;
        }
        assert_eq!(mine.len(), 1, "{name}: {rows:?}");
        assert_eq!(u(mine[0], "inode"), w["inode"].as_u64().unwrap(), "{name}");
        assert_eq!(u(mine[0], "ret"), w["fd"].as_u64().unwrap(), "{name}");
        assert_eq!(u(mine[0], "file_pos"), 0);
        assert_eq!(s(mine[0], "fs_type"), if name == "mem.dat" { "tmpfs" } else { "ext4" });
    }
}

/// An fd that is not open (closed, or beyond the fd table) gives 0 and "".
#[test]
fn fds_that_are_not_open_give_zeros_and_empty_strings() {
    let files = Files::new("badfd");
    let sql = "SELECT fd, inode, dev, fs_type, mount_point, mount_id, file_name, file_pos \
               FROM syscalls.sys_enter_fsync WHERE comm = 'ebq-fc-badfd'";
    let (rows, report, stats) = run(sql, &files, "ebq-fc-badfd");
    let mut fds: Vec<u64> = report["files"].as_array().unwrap().iter().map(|f| f["fd"].as_u64().unwrap()).collect();
    fds.push(report["bad_fd"].as_u64().unwrap());
    // Accounting (rows): the fsyncs seen, in order, + dropped + missed = the workload's.
    let got: Vec<u64> = rows.iter().map(|r| u(r, "fd")).collect();
    assert_exact_or_accounted(got.len() as u64, fds.len() as u64, &stats, "fsync rows");
    if lost(&stats) == 0 {
        assert_eq!(got, fds, "{stats:?}");
    } else {
        assert!(subsequence(&got, &fds), "{got:?} of {fds:?}; {stats:?}");
    }
    for r in &rows {
        for c in ["inode", "dev", "mount_id", "file_pos"] {
            assert_eq!(u(r, c), 0, "{c}: {r:?}");
        }
        for c in ["fs_type", "mount_point", "file_name"] {
            assert_eq!(s(r, c), "", "{c}: {r:?}");
        }
    }
}

/// An AOT bundle with file columns runs where neither clang nor bpftool is on
/// PATH: the object is CO-RE, relocated by libbpf against the kernel's BTF.
#[test]
fn a_bundle_with_file_columns_runs_without_clang() {
    let files = Files::new("aot");
    let bundle = files.dir.join("q.ebq");
    let sql = "SELECT file_name, fs_type, COUNT(*) AS n FROM syscalls.sys_enter_pread64 \
               WHERE comm = 'ebq-fc-aot' GROUP BY file_name, fs_type";
    let out = Command::new(ebq_bin()).args(["compile", sql, "-o"]).arg(&bundle).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let empty = files.dir.join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    let report = files.dir.join("report.json");
    let cmd = format!(
        "{} {} --report {}",
        workload_bin().display(),
        files.workload("ebq-fc-aot").join(" "),
        report.display()
    );
    let (rows, stats) = common::run_bundle_without_clang_stats(&bundle, &empty, &cmd);
    let got: BTreeMap<(String, String), u64> = rows
        .into_iter()
        .map(|r| {
            ((r["file_name"].as_str().unwrap().into(), r["fs_type"].as_str().unwrap().into()), r["n"].as_u64().unwrap())
        })
        .collect();
    // Accounting (-c, one event, aggregate): preads per file + dropped + missed + fork/exit
    // missed + untracked = the workload's 5 and 3.
    let want = [(("disk.dat".into(), "ext4".into()), 5), (("mem.dat".into(), "tmpfs".into()), 3)].into();
    assert_map_exact_or_accounted(&got, &want, &stats, "preads per file");
}

/// Two ebq processes building the vmlinux.h cache at once both succeed and
/// leave exactly one header and one PCH (published with link(2), no temp files).
#[test]
fn two_processes_build_the_pch_cache_concurrently() {
    let files = Files::new("pch");
    let cache = files.dir.join("cache");
    let sql = "SELECT file_name, COUNT(*) FROM syscalls.sys_enter_read GROUP BY file_name";
    let children: Vec<_> = (0..2)
        .map(|i| {
            Command::new(ebq_bin())
                .env("EBQ_CACHE_DIR", &cache)
                .args(["compile", sql, "-o"])
                .arg(files.dir.join(format!("q{i}.ebq")))
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let dirs = pch_dirs(&cache);
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let mut names: Vec<String> =
        std::fs::read_dir(&dirs[0]).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["vmlinux.h", "vmlinux.h.pch"]);
    assert!(dirs[0].file_name().unwrap().to_str().unwrap().starts_with("vmlinux-"));
}

/// The `vmlinux-*` header directories of a cache (beside them, `objects/`
/// holds compiled queries).
fn pch_dirs(cache: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("vmlinux-"))
        .collect()
}

/// A damaged cached PCH is discarded and rebuilt instead of failing queries
/// (the compiled-object cache is emptied first: a cached object would not
/// need the header at all).
#[test]
fn a_damaged_pch_is_rebuilt() {
    let files = Files::new("badpch");
    let cache = files.dir.join("cache");
    let compile = || {
        Command::new(ebq_bin())
            .env("EBQ_CACHE_DIR", &cache)
            .args(["compile", "SELECT inode FROM syscalls.sys_enter_fsync", "-o"])
            .arg(files.dir.join("q.ebq"))
            .output()
            .unwrap()
    };
    assert!(compile().status.success());
    let dir = pch_dirs(&cache).remove(0);
    let pch = dir.join("vmlinux.h.pch");
    let good_len = std::fs::metadata(&pch).unwrap().len();
    std::fs::write(&pch, b"not a PCH").unwrap();
    std::fs::remove_dir_all(cache.join("objects")).unwrap();
    let out = compile();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::metadata(&pch).unwrap().len(), good_len, "rebuilt");
}

/// Without the kernel's BTF, file columns are a positioned bind error.
#[test]
fn missing_btf_is_a_clear_bind_error() {
    let out = Command::new(ebq_bin())
        .env("EBQ_KERNEL_BTF", "/nonexistent/vmlinux")
        .args(["explain", "SELECT COUNT(*) FROM syscalls.sys_enter_read GROUP BY fs_type"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`fs_type`: file columns are read with CO-RE and need the kernel's BTF"), "{err}");
    assert!(err.contains("/nonexistent/vmlinux"), "{err}");
    assert!(err.contains("at 1:55"), "{err}");
}

/// Issue 16 item 2, names late: grouped by name, the kernel keys by the
/// names' identities (dentry, file system type, mount id) and names each new
/// group once; user space puts the names back. The answer is the one the
/// names-in-the-key plan gives, row for row, and files of one name in two
/// directories (two dentries) are one group, as with the names in the key.
#[test]
fn names_late_answer_as_names_in_the_key_do() {
    let files = Files::new("late");
    let twin = files.dir.join("twin");
    std::fs::create_dir_all(&twin).unwrap();
    // disk.dat twice (the files' directory and twin/), and mem.dat on the tmpfs.
    let paths = format!("{},{},{}", files.disk().display(), twin.join("disk.dat").display(), files.mem().display());
    let args = [
        "fileio",
        "--files",
        &paths,
        "--writes",
        "7,4,6",
        "--reads",
        "5,3,6",
        "--size",
        "100",
        "--comm",
        "ebq-fc-late",
    ];
    let sql =
        "SELECT fs_type, mount_point, file_name, COUNT(*) AS n, SUM(count) AS bytes FROM syscalls.sys_enter_pread64 \
               WHERE comm = 'ebq-fc-late' GROUP BY fs_type, mount_point, file_name";
    let mut answers = vec![];
    for late_names in [true, false] {
        let engine = engine().with_options(ebq::plan::PlanOptions { late_names, ..Default::default() });
        let plan = engine.prepare(sql).unwrap_or_else(|e| panic!("{}", e.render(sql))).explain();
        assert_eq!(
            plan.contains(
                "[kernel] Names      late: fs_type by fs_type_id, mount_point by vfsmount_id, file_name by dentry_id"
            ),
            late_names,
            "{plan}"
        );
        let (outs, stats, report) = common::run_around_with(&engine, sql, |_| Scope::All, &args);
        let mut rows: Vec<Row> = rows_of(&outs)
            .into_iter()
            .map(|mut r| {
                r.remove("__window");
                r
            })
            .collect();
        rows.sort_by_key(|r| s(r, "file_name"));
        let preads = |i: usize| report["files"][i]["preads"].as_u64().unwrap();
        let bytes = |i: usize| preads(i) * report["files"][i]["size"].as_u64().unwrap();
        let (disk, mem) = (preads(0) + preads(1), preads(2));
        let got: Vec<(String, String, u64, u64)> =
            rows.iter().map(|r| (s(r, "fs_type"), s(r, "file_name"), u(r, "n"), u(r, "bytes"))).collect();
        let want = vec![
            ("ext4".to_string(), "disk.dat".to_string(), disk, bytes(0) + bytes(1)),
            ("tmpfs".to_string(), "mem.dat".to_string(), mem, bytes(2)),
        ];
        // Accounting (one event, aggregate): preads per file + dropped + missed = the workload's;
        // (calls, bytes) exact when nothing was lost, and then both plans answer alike.
        let keyed = |v: &[(String, String, u64, u64)]| -> BTreeMap<(String, String), (u64, u64)> {
            v.iter().map(|(fs, f, n, b)| ((fs.clone(), f.clone()), (*n, *b))).collect()
        };
        let what = format!("late_names = {late_names}: {rows:?}");
        assert_keyed_exact_or_accounted(&keyed(&got), &keyed(&want), |v| v.0, &stats, &what);
        assert_eq!(s(&rows[1], "mount_point"), files.mnt.to_str().unwrap());
        answers.push((rows, lost(&stats)));
    }
    if answers.iter().all(|(_, lost)| *lost == 0) {
        assert_eq!(answers[0].0, answers[1].0, "names late and names in the key answer alike");
    }
}

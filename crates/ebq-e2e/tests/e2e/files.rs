//! File sinks on the real kernel: `--format parquet|arrow -o FILE`, rotation,
//! Ctrl-C. Every file is read back by pyarrow (from PyPI, in a venv under
//! target/) and checked against the workload's report of the calls it made.

use crate::common;

use common::{
    assert_exact_or_accounted, assert_keyed_exact_or_accounted, assert_map_exact_or_accounted, cli_stats, ebq_bin,
    lost, per_fd, workload_bin,
};
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

/// target/pyenv/bin/python with pyarrow installed (created on first use).
fn python() -> &'static Path {
    static PY: OnceLock<PathBuf> = OnceLock::new();
    PY.get_or_init(|| common::python_with("pyarrow", "pyarrow"))
}

const READ: &str = r#"
import json, sys
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
fmt, out = sys.argv[1], []
for path in sys.argv[2:]:
    t = pq.read_table(path) if fmt == "parquet" else ipc.open_file(path).read_all()
    # Timestamps as their int64 ns (datetime objects would lose the ns).
    columns = {f.name: (t.column(f.name).cast(pa.int64()) if pa.types.is_timestamp(f.type) else t.column(f.name)).to_pylist()
               for f in t.schema}
    out.append({"schema": [[f.name, str(f.type)] for f in t.schema], "rows": t.num_rows, "columns": columns})
print(json.dumps(out))
"#;

/// One file as pyarrow sees it.
struct Table {
    schema: Vec<(String, String)>,
    rows: usize,
    /// The integer columns.
    columns: BTreeMap<String, Vec<u64>>,
}

/// Reads each of `files` with pyarrow (`parquet` or `arrow`).
fn read(format: &str, files: &[PathBuf]) -> Vec<Table> {
    let out = Command::new(python()).args(["-c", READ, format]).args(files).output().unwrap();
    assert!(out.status.success(), "pyarrow could not read {files:?}: {}", String::from_utf8_lossy(&out.stderr));
    let v: Json = serde_json::from_slice(&out.stdout).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|t| Table {
            schema: t["schema"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| (f[0].as_str().unwrap().to_string(), f[1].as_str().unwrap().to_string()))
                .collect(),
            rows: t["rows"].as_u64().unwrap() as usize,
            columns: t["columns"]
                .as_object()
                .unwrap()
                .iter()
                .filter_map(|(k, col)| {
                    let ints: Option<Vec<u64>> = col.as_array().unwrap().iter().map(|x| x.as_u64()).collect();
                    ints.map(|c| (k.clone(), c))
                })
                .collect(),
        })
        .collect()
}

fn schema(names_types: &[(&str, &str)]) -> Vec<(String, String)> {
    names_types.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect()
}

/// A scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ebq-files-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The stats line ebq printed on `out`'s stderr.
fn stats(out: &Output) -> ebq::QueryStats {
    cli_stats(&String::from_utf8_lossy(&out.stderr))
}

/// Accounting (-c, one event, aggregate): calls per fd + dropped + missed + fork/exit missed
/// + untracked cover the workload's; (calls, bytes) per fd exact when nothing was lost.
fn per_fd_accounted(tables: &[Table], report: &Json, stats: &ebq::QueryStats) {
    assert_keyed_exact_or_accounted(&summed(tables), &per_fd(report), |v| v.0, stats, "preads per fd");
}

/// Runs `ebq -c '<workload pread …>' ARGS… SQL`; returns ebq's output and the workload's report.
fn run(dir: &Path, comm: &str, calls: &str, args: &[&str], sql: &str) -> (Output, Json) {
    let report = dir.join("report.json");
    let fds = calls.split(',').count().to_string();
    let cmd = format!(
        "{} pread --fds {fds} --calls {calls} --fd-base 100 --gap-us 4000 --comm {comm} --report {}",
        workload_bin().display(),
        report.display()
    );
    let out = Command::new(ebq_bin()).args(["-c", &cmd]).args(args).arg(sql).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report = serde_json::from_str(&std::fs::read_to_string(report).unwrap()).unwrap();
    (out, report)
}

/// Per fd: (Σn, Σbytes) over the rows of `tables`.
fn summed(tables: &[Table]) -> BTreeMap<u64, (u64, u64)> {
    let mut m: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for t in tables {
        for ((fd, n), b) in t.columns["fd"].iter().zip(&t.columns["n"]).zip(&t.columns["bytes"]) {
            let e = m.entry(*fd).or_default();
            e.0 += n;
            e.1 += b;
        }
    }
    m
}

const AGG: &str = "SELECT fd, COUNT(*) AS n, SUM(count) AS bytes FROM syscalls.sys_enter_pread64 \
                   WHERE comm = '{comm}' GROUP BY fd WINDOW(time, 100, 100)";

fn agg_schema() -> Vec<(String, String)> {
    schema(&[
        ("window_start_ns", "uint64"),
        ("window_end_ns", "uint64"),
        ("window_start", "timestamp[ns, tz=UTC]"),
        ("window_end", "timestamp[ns, tz=UTC]"),
        ("fd", "uint32"),
        ("n", "uint64"),
        ("bytes", "uint64"),
    ])
}

/// Checks one file of the windowed aggregate: schema, one row per (window,
/// fd), windows that tile time.
fn check_windows(t: &Table) {
    assert_eq!(t.schema, agg_schema());
    let (starts, ends, fds) = (&t.columns["window_start_ns"], &t.columns["window_end_ns"], &t.columns["fd"]);
    assert_eq!(starts.len(), t.rows);
    let mut keys: Vec<(u64, u64)> = starts.iter().copied().zip(fds.iter().copied()).collect();
    keys.dedup();
    assert_eq!(keys.len(), t.rows, "one row per window and fd");
    let mut bounds: Vec<(u64, u64)> = starts.iter().copied().zip(ends.iter().copied()).collect();
    bounds.dedup();
    assert!(bounds.iter().all(|(s, e)| s < e));
    assert!(bounds.windows(2).all(|w| w[0].1 <= w[1].0), "windows in time order: {bounds:?}");
}

fn windowed_aggregate_file_is_exact(format: &str) {
    let dir = scratch(&format!("agg-{format}"));
    let comm = format!("ebq-f-{format}");
    let file = dir.join(format!("x.{format}"));
    let (out, report) = run(
        &dir,
        &comm,
        "40,25,13",
        &["--format", format, "-o", file.to_str().unwrap()],
        &AGG.replace("{comm}", &comm),
    );
    assert!(out.stdout.is_empty(), "results go to the file, not stdout");
    let tables = read(format, std::slice::from_ref(&file));
    check_windows(&tables[0]);
    let windows: std::collections::BTreeSet<u64> = tables[0].columns["window_start_ns"].iter().copied().collect();
    assert!(windows.len() >= 2, "a ~310 ms workload over 100 ms windows spans several windows: {windows:?}");
    let stats = stats(&out);
    per_fd_accounted(&tables, &report, &stats);
    let calls = tables[0].columns["n"].iter().sum::<u64>();
    assert_exact_or_accounted(calls, report["total_calls"].as_u64().unwrap(), &stats, "preads");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn parquet_file_of_a_windowed_aggregate_is_exact() {
    windowed_aggregate_file_is_exact("parquet");
}

#[test]
fn arrow_file_of_a_windowed_aggregate_is_exact() {
    windowed_aggregate_file_is_exact("arrow");
}

#[test]
fn row_query_files_hold_every_call() {
    for format in ["parquet", "arrow"] {
        let dir = scratch(&format!("rows-{format}"));
        let comm = format!("ebq-r-{format}");
        let file = dir.join(format!("rows.{format}"));
        let (out, report) = run(
            &dir,
            &comm,
            "30,20",
            &["--format", format, "-o", file.to_str().unwrap()],
            &format!("SELECT time, pid, fd, count FROM syscalls.sys_enter_pread64 WHERE comm = '{comm}'"),
        );
        let t = &read(format, &[file])[0];
        assert_eq!(
            t.schema,
            schema(&[
                ("time", "uint64"),
                ("time_wall", "timestamp[ns, tz=UTC]"),
                ("pid", "uint32"),
                ("fd", "uint32"),
                ("count", "uint64")
            ])
        );
        // Accounting (-c, rows): rows + dropped + missed + fork/exit missed + untracked = the
        // workload's calls, per fd too; the bytes exact when nothing was lost.
        let stats = stats(&out);
        assert_exact_or_accounted(t.rows as u64, report["total_calls"].as_u64().unwrap(), &stats, format);
        if lost(&stats) == 0 {
            assert_eq!(t.columns["count"].iter().sum::<u64>(), report["total_bytes"].as_u64().unwrap());
        }
        assert!(t.columns["pid"].iter().all(|&p| p == report["pid"].as_u64().unwrap()));
        let mut calls: BTreeMap<u64, u64> = BTreeMap::new();
        for fd in &t.columns["fd"] {
            *calls.entry(*fd).or_default() += 1;
        }
        let want = per_fd(&report).into_iter().map(|(fd, (c, _))| (fd, c)).collect();
        assert_map_exact_or_accounted(&calls, &want, &stats, "rows per fd");
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// The files of a rotated run, in order, checking their names.
fn rotated_files(dir: &Path, stem: &str, ext: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    files.sort();
    let want: Vec<PathBuf> = (0..files.len()).map(|i| dir.join(format!("{stem}.{i:04}.{ext}"))).collect();
    assert_eq!(files, want, "numbered from 0, nothing else (no unnumbered {stem}.{ext})");
    files
}

#[test]
fn rotate_windows_writes_one_valid_file_per_window() {
    let dir = scratch("rot-windows");
    let comm = "ebq-rot-w";
    let file = dir.join("x.parquet");
    let (out, report) = run(
        &dir,
        comm,
        "40,25,13",
        &["--format", "parquet", "-o", file.to_str().unwrap(), "--rotate-windows", "1"],
        &AGG.replace("{comm}", comm),
    );
    let files = rotated_files(&dir, "x", "parquet");
    assert!(files.len() >= 2, "several windows, so several files: {files:?}");
    let tables = read("parquet", &files);
    for t in &tables {
        check_windows(t);
        let windows: std::collections::BTreeSet<&u64> = t.columns["window_start_ns"].iter().collect();
        assert!(windows.len() <= 1, "one window per file");
    }
    per_fd_accounted(&tables, &report, &stats(&out));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn rotate_bytes_starts_a_new_file_past_the_limit() {
    let dir = scratch("rot-bytes");
    let comm = "ebq-rot-b";
    let file = dir.join("x.arrow");
    // Any batch makes an Arrow file larger than 100 bytes: a file per window.
    let (out, report) = run(
        &dir,
        comm,
        "40,25,13",
        &["--format", "arrow", "-o", file.to_str().unwrap(), "--rotate-bytes", "100"],
        &AGG.replace("{comm}", comm),
    );
    let files = rotated_files(&dir, "x", "arrow");
    assert!(files.len() >= 2, "{files:?}");
    let tables = read("arrow", &files);
    tables.iter().for_each(check_windows);
    per_fd_accounted(&tables, &report, &stats(&out));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn ctrl_c_finishes_the_file() {
    let dir = scratch("sigint");
    for format in ["parquet", "arrow"] {
        let file = dir.join(format!("s.{format}"));
        let mut child = Command::new(ebq_bin())
            .args(["--format", format, "-o", file.to_str().unwrap()])
            .arg("SELECT comm, COUNT(*) AS n FROM raw_syscalls.sys_enter GROUP BY comm WINDOW(time, 60000, 60000)")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (line, _stderr) = common::first_stderr_line(&mut child);
        assert!(line.starts_with("ebq: tracing"), "{line}");
        std::thread::sleep(Duration::from_millis(100));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        assert!(child.wait().unwrap().success());
        let t = &read(format, &[file])[0];
        assert_eq!(t.schema[..2], schema(&[("window_start_ns", "uint64"), ("window_end_ns", "uint64")])[..]);
        assert_eq!(
            t.schema[2..4],
            schema(&[("window_start", "timestamp[ns, tz=UTC]"), ("window_end", "timestamp[ns, tz=UTC]")])[..]
        );
        assert_eq!(t.schema[4..], schema(&[("comm", "string"), ("n", "uint64")])[..]);
        assert!(t.rows >= 1, "the interrupted window is in the file");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_query_without_results_still_writes_a_valid_file() {
    let dir = scratch("empty");
    for format in ["parquet", "arrow"] {
        let file = dir.join(format!("e.{format}"));
        let out = Command::new(ebq_bin())
            .args(["-c", "true", "--format", format, "-o", file.to_str().unwrap()])
            .arg("SELECT pid, fd FROM syscalls.sys_enter_pread64 WHERE comm = 'no-such-comm'")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let t = &read(format, &[file])[0];
        assert_eq!((t.schema.clone(), t.rows), (schema(&[("pid", "uint32"), ("fd", "uint32")]), 0));
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn columnar_formats_need_a_file_and_rotation_needs_windows() {
    let q = "SELECT pid FROM syscalls.sys_enter_pread64";
    for (args, want) in [
        (vec!["--format", "parquet", q], "--format parquet needs -o FILE"),
        (vec!["--format", "arrow", q], "--format arrow needs -o FILE"),
        (vec!["--rotate-bytes", "1M", q], "need -o FILE"),
        (vec!["-o", "/tmp/ebq-never.json", "--format", "json", "--rotate-windows", "2", q], "use --rotate-bytes"),
        (
            vec!["--format", "parquet", "-o", "/nonexistent-dir/x.parquet", q],
            "cannot create /nonexistent-dir/x.parquet",
        ),
    ] {
        let out = Command::new(ebq_bin()).args(["-c", "true"]).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("ebq: tracing"), "refused before attaching: {err}");
    }
}

#[test]
fn dash_o_writes_text_formats_to_the_file() {
    let dir = scratch("text");
    let file = dir.join("x.csv");
    let comm = "ebq-f-csv";
    let (out, report) = run(
        &dir,
        comm,
        "12",
        &["--format", "csv", "-o", file.to_str().unwrap()],
        &format!(
            "SELECT comm, COUNT(*) AS n FROM syscalls.sys_enter_pread64 WHERE comm = '{comm}' GROUP BY comm WINDOW(time, 60000, 60000)"
        ),
    );
    assert!(out.stdout.is_empty());
    let text = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "window_start_ns,window_end_ns,window_start,window_end,comm,n");
    // Accounting (-c, one event, aggregate): n + dropped + missed + fork/exit missed +
    // untracked = the workload's calls.
    assert!(lines[1].contains(&format!(",{comm},")), "{text}");
    let n: u64 = lines[1].rsplit(',').next().unwrap().parse().unwrap();
    assert_exact_or_accounted(n, report["total_calls"].as_u64().unwrap(), &stats(&out), "preads in the CSV");
    let _ = std::fs::remove_dir_all(dir);
}

/// A command that reads 4322 bytes from /dev/zero 3 times as comm `zx\xffy`,
/// 5 times as `zx\xfey` and 2 times as `a\b` (prctl with raw bytes).
const HOSTILE_COMMS: &str = r#"python3 -c '
import ctypes, os
libc = ctypes.CDLL(None)
fd = os.open("/dev/zero", os.O_RDONLY)
for name, n in [(b"zx\xffy", 3), (b"zx\xfey", 5), (b"a\\b", 2)]:
    libc.prctl(15, name, 0, 0, 0)
    for _ in range(n):
        os.read(fd, 4322)
'"#;

#[test]
fn invalid_utf8_stays_distinct_and_reversible_in_every_format() {
    let dir = scratch("bytes");
    let agg = "SELECT comm, COUNT(*) AS n FROM syscalls.sys_enter_read WHERE count = 4322 GROUP BY comm";
    let want = [("zx\\xffy", 3), ("zx\\xfey", 5), ("a\\\\b", 2)];
    // Accounting (-c, one event): reads per comm + dropped + missed + fork/exit missed +
    // untracked cover the command's 3/5/2; exact when nothing was lost.
    let want: BTreeMap<String, u64> = want.iter().map(|(c, n)| (c.to_string(), *n)).collect();
    let ebq = |args: &[&str]| {
        let out = Command::new(ebq_bin()).args(args).args(["-c", HOSTILE_COMMS]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let stats = stats(&out);
        (String::from_utf8(out.stdout).expect("ebq writes UTF-8"), stats)
    };
    // JSON: one object per group, the escaped comm as a JSON string.
    let (json, stats) = ebq(&[agg, "--format", "json"]);
    let got: BTreeMap<String, u64> = json
        .lines()
        .map(|l| serde_json::from_str::<Json>(l).unwrap())
        .map(|v| (v["comm"].as_str().unwrap().to_string(), v["n"].as_u64().unwrap()))
        .collect();
    assert_map_exact_or_accounted(&got, &want, &stats, &format!("JSON: {json}"));
    // CSV (each group after the run's window columns).
    let (csv, stats) = ebq(&[agg, "--format", "csv"]);
    let got: BTreeMap<String, u64> = csv
        .lines()
        .skip(1)
        .filter_map(|l| {
            let mut f = l.rsplitn(3, ',');
            let n = f.next()?.parse().ok()?;
            Some((f.next()?.to_string(), n))
        })
        .collect();
    assert_map_exact_or_accounted(&got, &want, &stats, &format!("CSV: {csv}"));
    // Parquet through pyarrow, from the row path (one row per read).
    let path = dir.join("rows.parquet");
    let p = path.display().to_string();
    let (_, stats) =
        ebq(&["SELECT comm FROM syscalls.sys_enter_read WHERE count = 4322", "--format", "parquet", "-o", &p]);
    let py = Command::new(python())
        .args(["-c", "import pyarrow.parquet as pq, json, sys; print(json.dumps(pq.read_table(sys.argv[1]).column('comm').to_pylist()))", &p])
        .output()
        .unwrap();
    assert!(py.status.success(), "{}", String::from_utf8_lossy(&py.stderr));
    let comms: Vec<String> = serde_json::from_slice(&py.stdout).unwrap();
    let mut got: BTreeMap<String, u64> = BTreeMap::new();
    for c in comms {
        *got.entry(c).or_default() += 1;
    }
    assert_map_exact_or_accounted(&got, &want, &stats, "Parquet rows per comm");
}

//! What readers make of ebq's files (issue 19): wall-clock timestamp columns
//! beside the monotonic ones, JSON keys in SELECT order, and column types that
//! do not depend on the values. Every file is read by pyarrow and DuckDB
//! (from PyPI, in the test venv under target/), not by ebq's own code.

use crate::common;

use common::{ebq_bin, workload_bin};
use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// target/pyenv/bin/python with pyarrow and duckdb.
fn python() -> &'static Path {
    static PY: OnceLock<PathBuf> = OnceLock::new();
    PY.get_or_init(|| {
        common::python_with("pyarrow", "pyarrow");
        common::python_with("duckdb", "duckdb")
    })
}

/// Runs a Python script with `args`; its stdout parsed as JSON.
fn py(script: &str, args: &[&str]) -> Json {
    let out = Command::new(python()).args(["-c", script]).args(args).output().unwrap();
    assert!(out.status.success(), "python: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ebq-file-types-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn unix_ns() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as i64
}

/// Runs ebq around the workload's `calls` preads as `comm`; returns stdout
/// and the wall-clock time just before and just after the run.
fn run(comm: &str, calls: u32, args: &[&str], sql: &str) -> (String, i64, i64) {
    let cmd =
        format!("{} pread --fds 1 --calls {calls} --fd-base 100 --gap-us 2000 --comm {comm}", workload_bin().display());
    let before = unix_ns();
    let out = Command::new(ebq_bin()).args(["-c", &cmd]).args(args).arg(sql).output().unwrap();
    let after = unix_ns();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (String::from_utf8(out.stdout).unwrap(), before, after)
}

/// Each column of a Parquet or Arrow file: its pyarrow type and values
/// (timestamps as int64 ns since the epoch).
const READ_COLUMNS: &str = r#"
import json, sys
import pyarrow as pa, pyarrow.ipc as ipc, pyarrow.parquet as pq
path = sys.argv[1]
t = pq.read_table(path) if path.endswith(".parquet") else ipc.open_file(path).read_all()
out = {}
for f in t.schema:
    col = t.column(f.name)
    if pa.types.is_timestamp(f.type):
        col = col.cast(pa.int64())
    out[f.name] = {"type": str(f.type), "values": col.to_pylist()}
print(json.dumps(out))
"#;

const WALL: &str = "timestamp[ns, tz=UTC]";

/// The ints of column `name`, checking its pyarrow type.
fn ints(t: &Json, name: &str, ty: &str) -> Vec<i64> {
    assert_eq!(t[name]["type"], ty, "{name}: {t}");
    t[name]["values"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect()
}

/// `wall[i] - mono[i]` is one offset for every row (one measurement per run)
/// and every wall time lies within the run.
fn check_wall(mono: &[i64], wall: &[i64], before: i64, after: i64) -> i64 {
    assert!(!wall.is_empty());
    let offset = wall[0] - mono[0];
    assert!(mono.iter().zip(wall).all(|(m, w)| w - m == offset), "one offset: {mono:?} {wall:?}");
    assert!(wall.iter().all(|w| (before..=after).contains(w)), "within [{before}, {after}]: {wall:?}");
    offset
}

#[test]
fn row_files_have_time_wall_as_a_utc_timestamp() {
    let dir = scratch("rows");
    for format in ["parquet", "arrow"] {
        let file = dir.join(format!("rows.{format}"));
        let comm = format!("ebq-w-{format}");
        let sql = format!("SELECT time, fd FROM syscalls.sys_enter_pread64 WHERE comm = '{comm}'");
        let (_, before, after) = run(&comm, 25, &["--format", format, "-o", file.to_str().unwrap()], &sql);
        let t = py(READ_COLUMNS, &[file.to_str().unwrap()]);
        let names: Vec<&String> = t.as_object().unwrap().keys().collect();
        assert_eq!(names, ["fd", "time", "time_wall"], "{format}"); // serde_json sorts; the order is checked below
        let (mono, wall) = (ints(&t, "time", "uint64"), ints(&t, "time_wall", WALL));
        assert_eq!(wall.len(), 25, "{format}");
        check_wall(&mono, &wall, before, after);
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn window_files_have_wall_clock_window_bounds() {
    let dir = scratch("windows");
    for format in ["parquet", "arrow"] {
        let file = dir.join(format!("w.{format}"));
        let comm = format!("ebq-ww-{format}");
        let sql = format!(
            "SELECT fd, COUNT(*) AS n FROM syscalls.sys_enter_pread64 WHERE comm = '{comm}' GROUP BY fd WINDOW(time, 50, 50)"
        );
        let (_, before, after) = run(&comm, 40, &["--format", format, "-o", file.to_str().unwrap()], &sql);
        let t = py(READ_COLUMNS, &[file.to_str().unwrap()]);
        let start = check_wall(&ints(&t, "window_start_ns", "uint64"), &ints(&t, "window_start", WALL), before, after);
        let end = check_wall(&ints(&t, "window_end_ns", "uint64"), &ints(&t, "window_end", WALL), before, after);
        assert_eq!(start, end, "{format}: one offset for the run");
        assert_eq!(ints(&t, "n", "uint64").iter().sum::<i64>(), 40, "{format}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// JSON (and CSV) lines: the keys in file order and the wall-clock times as
/// pyarrow parses the ISO 8601 strings (to ns).
const READ_JSON: &str = r#"
import json, sys
import pyarrow as pa
lines = [json.loads(l) for l in open(sys.argv[1])]
keys = [list(l.keys()) for l in lines]
def ns(name):
    return pa.array([l[name] for l in lines]).cast(pa.timestamp("ns", "UTC")).cast(pa.int64()).to_pylist()
print(json.dumps({"keys": keys, "time": [l["time"] for l in lines], "time_wall": ns("time_wall"),
                  "raw": [l["time_wall"] for l in lines]}))
"#;

#[test]
fn json_lines_keep_select_order_and_iso_wall_times() {
    let dir = scratch("json");
    let comm = "ebq-wall-json";
    let sql = format!("SELECT fd, time, count AS bytes FROM syscalls.sys_enter_pread64 WHERE comm = '{comm}'");
    let (stdout, before, after) = run(comm, 12, &["--format", "json"], &sql);
    let file = dir.join("rows.json");
    // The workload's own report is a line of stdout too.
    let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with("{\"fd\"")).collect();
    std::fs::write(&file, rows.join("\n")).unwrap();
    let j = py(READ_JSON, &[file.to_str().unwrap()]);
    for keys in j["keys"].as_array().unwrap() {
        assert_eq!(keys, &serde_json::json!(["fd", "time", "time_wall", "bytes"]));
    }
    let mono: Vec<i64> = j["time"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
    let wall: Vec<i64> = j["time_wall"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
    assert_eq!(wall.len(), 12);
    check_wall(&mono, &wall, before, after);
    let raw = j["raw"][0].as_str().unwrap();
    assert!(raw.len() == 30 && raw.ends_with('Z') && raw.as_bytes()[10] == b'T', "ISO 8601 with ns: {raw}");
    let _ = std::fs::remove_dir_all(dir);
}

/// Makes `read` calls as comm `ebq-u64`: one of 7 bytes and, with `big`, one
/// asking for 2^64 − 1 bytes (refused by the kernel; the tracepoint sees the count).
fn reads(big: bool) -> String {
    format!(
        r#"python3 -c '
import ctypes, os
libc = ctypes.CDLL(None)
libc.prctl(15, b"ebq-u64", 0, 0, 0)
fd = os.open("/dev/zero", os.O_RDONLY)
os.read(fd, 7)
if {}: libc.read(fd, None, ctypes.c_size_t(2**64 - 1))
'"#,
        if big { "True" } else { "False" }
    )
}

/// DuckDB's type and value of every column of each file, and JSON's keys.
const DUCK: &str = r#"
import json, sys, duckdb
import pyarrow.ipc as ipc
out = []
for path in sys.argv[1:]:
    if path.endswith(".parquet"):
        src = f"read_parquet('{path}')"
    else:
        tbl = ipc.open_file(path).read_all()
        src = "tbl"
    types = {r[0]: r[1] for r in duckdb.sql(f"DESCRIBE SELECT * FROM {src}").fetchall()}
    n, biggest = duckdb.sql(f"SELECT n, biggest FROM {src}").fetchall()[0]
    out.append({"types": types, "n": n, "biggest": str(biggest)})
print(json.dumps(out))
"#;

#[test]
fn an_all_ones_u64_does_not_change_column_types() {
    let dir = scratch("u64");
    let sql = "SELECT comm, COUNT(*) AS n, MAX(count) AS biggest FROM syscalls.sys_enter_read WHERE comm = 'ebq-u64' GROUP BY comm";
    let mut files = vec![];
    for big in [false, true] {
        for format in ["parquet", "arrow"] {
            let file = dir.join(format!("{big}.{format}"));
            let out = Command::new(ebq_bin())
                .args(["-c", &reads(big), "--format", format, "-o", file.to_str().unwrap(), sql])
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            files.push(file.to_str().unwrap().to_string());
        }
        // JSON: the number as it is, exactly.
        let out = Command::new(ebq_bin()).args(["-c", &reads(big), "--format", "json", sql]).output().unwrap();
        let line: Json = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(line["biggest"].as_u64(), Some(if big { u64::MAX } else { 7 }), "{line}");
    }
    let args: Vec<&str> = files.iter().map(String::as_str).collect();
    let tables = py(DUCK, &args);
    for (i, t) in tables.as_array().unwrap().iter().enumerate() {
        let big = i >= 2;
        let want = serde_json::json!({
            "types": {
                "window_start_ns": "UBIGINT", "window_end_ns": "UBIGINT",
                "window_start": "TIMESTAMPTZ_NS", "window_end": "TIMESTAMPTZ_NS",
                "comm": "VARCHAR", "n": "UBIGINT", "biggest": "UBIGINT",
            },
            "n": if big { 2 } else { 1 },
            "biggest": if big { u64::MAX.to_string() } else { "7".into() },
        });
        assert_eq!(t, &want, "{}", files[i]);
    }
    let _ = std::fs::remove_dir_all(dir);
}

//! `ebq report merge` (issue 37 item 5): one MPI-IO job split over two ebq
//! instances, each watching one of its two ranks with `-p` (two "nodes"),
//! while a third instance watches the whole job (`-c mpirun …`). Each
//! writes a Darshan log; the two node logs are merged, and PyDarshan reads
//! the merged log and the whole job's.
//!
//! The ranks start held: `mpirun` runs a wrapper that writes its rank and
//! pid, waits for a `go` file, then execs the job's program (same pid), so
//! each node instance attaches to its rank before the rank does any I/O.
//!
//! What must be equal, and what differs by definition:
//! - **MPI-IO**, the shared file's record of rank −1: every integer counter
//!   equal, and equal to the ranks' own tallies summed; the variance of
//!   bytes exact; times and timestamps within the difference of two
//!   instances' probes (each measures the same calls with its own uprobes:
//!   ≤ 1 ms absolute, 5 %). Which rank was fastest, and which one call was
//!   the longest (`*_MAX_*_TIME_SIZE`), are each instance's measure when
//!   the times are that close: those are checked against the node logs.
//! - **POSIX**, the shared file: the whole job's instance folds both ranks'
//!   operations into one record (ebq's POSIX record folds a file's
//!   processes, as Darshan's non-MPI mode), so the counters that depend on
//!   the interleaving of the processes' accesses (consecutive and
//!   sequential accesses, read/write switches, strides, the four common
//!   access sizes) and the time counters (one record counts overlapping
//!   operations' time once) are its own; those are checked against the node
//!   logs (sums; the fastest and slowest rank and the variances from each
//!   node's record). Every other counter equals the whole job's.
//! - **DXT_POSIX** (`--trace`): each rank's segments on the file equal the
//!   whole job's for that rank (offsets and lengths exact, times within 1 ms).

use crate::common::{ebq_bin, first_stderr_line, wait_for};
use crate::darshan_log::read_with_pydarshan;
use crate::report::{assert_no_losses, build_mpiio_app};
use ebq_report::darshan_log::{self, Log};
use serde_json::Value as Json;
use std::path::Path;
use std::process::{Command, Stdio};

/// One MPI library's job: its compiler, launcher and library to probe.
struct Mpi {
    cc: &'static str,
    launcher: &'static str,
    library: &'static str,
}

/// MPICH: the job under `mpirun.mpich -n 2`, two node logs merged.
#[test]
fn mpich_job_on_two_nodes_merges_into_the_whole_jobs_log() {
    merged_equals_whole_job(Mpi { cc: "mpicc.mpich", launcher: "mpirun.mpich -n 2", library: "libmpich" });
}

/// Open MPI: the same under `mpirun.openmpi` (pointer handles).
#[test]
fn open_mpi_job_on_two_nodes_merges_into_the_whole_jobs_log() {
    merged_equals_whole_job(Mpi {
        cc: "mpicc.openmpi",
        launcher: "mpirun.openmpi --oversubscribe -n 2",
        library: "libmpi",
    });
}

/// Bad input is a clear error naming the file and what is wrong: no `-o`, a
/// file that is no Darshan log, a Darshan log of another format, and logs
/// of two jobs; nothing is written.
#[test]
fn merge_refuses_bad_logs_naming_the_file() {
    let dir = std::env::temp_dir().join(format!("ebq-merge-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, jobid) in [("job1.darshan", 1), ("job2.darshan", 2)] {
        let log = Log { job: darshan_log::Job { jobid, nprocs: 1, ..Default::default() }, ..Log::default() };
        log.write(&dir.join(name)).unwrap();
    }
    std::fs::write(dir.join("text.darshan"), "not a log").unwrap();
    std::fs::write(dir.join("old.darshan"), b"3.21\0\0\0\0 and the rest of an older header").unwrap();
    let out = dir.join("out.darshan");
    let merge = |args: &[&str]| {
        let o = Command::new(ebq_bin()).current_dir(&dir).args(["report", "merge"]).args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        String::from_utf8_lossy(&o.stderr).trim().to_string()
    };
    let o = out.to_str().unwrap();
    assert!(merge(&["job1.darshan"]).starts_with("error: ebq report merge needs -o FILE (the job log); usage:"));
    assert!(merge(&["-o", o]).starts_with("error: ebq report merge needs the nodes' logs"));
    assert!(merge(&["-o", o, "--frobnicate", "job1.darshan"]).starts_with("error: unknown option `--frobnicate`"));
    assert_eq!(
        merge(&["-o", o, "job1.darshan", "text.darshan"]),
        "error: text.darshan: 9 bytes: shorter than a Darshan log's header (1328 bytes)"
    );
    assert_eq!(
        merge(&["-o", o, "old.darshan"]),
        "error: old.darshan: log format version `3.21`; ebq reads 3.41 (Darshan 3.4 and 3.5)"
    );
    assert!(merge(&["-o", o, "nothere.darshan"]).starts_with("error: nothere.darshan: No such file"));
    assert_eq!(
        merge(&["-o", o, "job1.darshan", "job2.darshan"]),
        "error: job2.darshan: job id 2 differs from job1.darshan's (1): the logs of one job carry its id \
         (`--job-id`, SLURM_JOB_ID)"
    );
    assert!(!out.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes its rank and pid (`pid.PID`, renamed into place whole), waits for
/// `go`, then becomes the rank's program.
const HOLD: &str = r#"#!/bin/sh
echo "${PMI_RANK:-$OMPI_COMM_WORLD_RANK} $$" > "$EBQ_MERGE_DIR/pid.$$.tmp"
mv "$EBQ_MERGE_DIR/pid.$$.tmp" "$EBQ_MERGE_DIR/pid.$$"
while [ ! -e "$EBQ_MERGE_DIR/go" ]; do sleep 0.05; done
exec "$@"
"#;

/// `ebq report io` with the merge test's outputs: a Darshan log of job 42 and a trace.
fn report_io(dir: &Path, name: &str) -> Command {
    let mut cmd = Command::new(ebq_bin());
    cmd.args(["report", "io", "--format", "json", "--job-id", "42", "--darshan-log"])
        .arg(dir.join(format!("{name}.darshan")))
        .arg("--trace")
        .arg(dir.join(format!("{name}.parquet")))
        .env("EBQ_MERGE_DIR", dir)
        // Open MPI refuses root unless told twice.
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

fn merged_equals_whole_job(mpi: Mpi) {
    let dir = std::env::temp_dir().join(format!("ebq-merge-{}-{}", mpi.library, std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let exe = build_mpiio_app(mpi.cc, &dir);
    std::fs::write(dir.join("hold.sh"), HOLD).unwrap();
    // The job's file exists before the job: Open MPI's OMPIO creates and removes a
    // `shared.dat_cid-…sm` file in its open, whose inode the file created next would
    // reuse, and ebq's records are per (device, inode) for a whole run.
    std::fs::write(dir.join("shared.dat"), "").unwrap();
    let job = format!(
        "{} sh {} {} {} derived",
        mpi.launcher,
        dir.join("hold.sh").display(),
        exe.display(),
        dir.join("shared.dat").display()
    );
    let whole = report_io(&dir, "whole").args(["-c", &job]).spawn().unwrap();
    // The two held ranks: (rank, pid).
    let ranks: Vec<(u32, u32)> = wait_for(60, "the ranks' pid files", || {
        let files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with("pid.") && !n.ends_with(".tmp"))
            .collect();
        (files.len() == 2).then(|| {
            let mut r: Vec<(u32, u32)> = files
                .iter()
                .map(|f| {
                    let text = std::fs::read_to_string(dir.join(f)).unwrap();
                    let (rank, pid) = text.trim().split_once(' ').unwrap();
                    (rank.parse().unwrap(), pid.parse().unwrap())
                })
                .collect();
            r.sort();
            r
        })
    });
    assert_eq!(ranks.iter().map(|r| r.0).collect::<Vec<_>>(), [0, 1]);
    // One instance per rank, attached (its first stderr line) before the ranks go.
    let nodes: Vec<_> = ranks
        .iter()
        .map(|(rank, pid)| {
            let mut child = report_io(&dir, &format!("node{rank}"))
                .args(["--mpi", mpi.library, "-p", &pid.to_string()])
                .spawn()
                .unwrap();
            let (line, stderr) = first_stderr_line(&mut child);
            assert!(line.starts_with("ebq: tracing"), "{line}");
            (child, stderr)
        })
        .collect();
    std::fs::write(dir.join("go"), "").unwrap();
    let whole = whole.wait_with_output().unwrap();
    let whole_err = String::from_utf8_lossy(&whole.stderr).to_string();
    assert!(whole.status.success(), "{whole_err}");
    assert_no_losses(&whole_err);
    for (child, mut stderr) in nodes {
        let out = child.wait_with_output().unwrap();
        let mut err = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut err).unwrap();
        assert!(out.status.success(), "{err}");
        assert_no_losses(&err);
        assert!(!err.contains("ebq: MPI-IO:"), "every rank's environment was read: {err}");
    }
    let merged = dir.join("merged.darshan");
    let out = Command::new(ebq_bin())
        .args(["report", "merge", "-o"])
        .arg(&merged)
        .args([dir.join("node0.darshan"), dir.join("node1.darshan")])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && err.starts_with("ebq: merged 2 logs of job 42 (2 processes"), "{err}");
    let tallies: Vec<Json> = String::from_utf8_lossy(&whole.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("TALLY "))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(tallies.len(), 2);
    let logs = Logs {
        merged: read_with_pydarshan(&merged),
        whole: read_with_pydarshan(&dir.join("whole.darshan")),
        nodes: [0, 1].map(|r| read_with_pydarshan(&dir.join(format!("node{r}.darshan")))),
    };
    assert_eq!((&logs.merged["job"]["jobid"], &logs.merged["job"]["nprocs"]), (&42.into(), &2.into()));
    assert_eq!(logs.whole["job"]["nprocs"], 2);
    mpiio_equal(&logs, &tallies);
    posix_equal(&logs);
    dxt_equal(&logs);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The merged log, the whole job's, and the two nodes', as PyDarshan reads them.
struct Logs {
    merged: Json,
    whole: Json,
    nodes: [Json; 2],
}

/// A log's records of `module` on the job's file (`shared.dat`).
fn shared_records<'a>(log: &'a Json, module: &str) -> Vec<&'a Json> {
    let names = &log["names"];
    let recs = log[module].as_array().unwrap_or_else(|| panic!("no {module} in {log}"));
    recs.iter().filter(|r| names[r["id"].as_str().unwrap()] == "shared.dat").collect()
}

/// The one record of the job's file, of `rank`.
fn shared_record<'a>(log: &'a Json, module: &str, rank: i64) -> &'a Json {
    let recs = shared_records(log, module);
    assert_eq!(recs.len(), 1, "{module}: {recs:?}");
    assert_eq!(recs[0]["rank"], rank, "{module}");
    recs[0]
}

/// The log's start, seconds since the epoch: timestamps compare as start + timestamp.
fn start(log: &Json) -> f64 {
    let j = &log["job"];
    j["start_time_sec"].as_f64().unwrap() + j["start_time_nsec"].as_f64().unwrap() / 1e9
}

/// Two instances' measures of the same calls agree within 1 ms, or 5 %.
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-3 + 0.05 * a.abs().max(b.abs())
}

fn f(r: &Json, k: &str) -> f64 {
    r["fcounters"][k].as_f64().unwrap_or_else(|| panic!("no {k}"))
}

fn c(r: &Json, k: &str) -> i64 {
    r["counters"][k].as_i64().unwrap_or_else(|| panic!("no {k}"))
}

/// Float counters: timestamps (not 0) absolute, the others as they are, within [`close`].
fn fcounters_close(what: &str, (a, a_start): (&Json, f64), (b, b_start): (&Json, f64), skip: &[&str]) {
    for (k, va) in a["fcounters"].as_object().unwrap() {
        if skip.iter().any(|s| k.contains(s)) {
            continue;
        }
        let (mut x, mut y) = (va.as_f64().unwrap(), f(b, k));
        if k.ends_with("_TIMESTAMP") {
            assert_eq!(x == 0.0, y == 0.0, "{what} {k}: {x} vs {y}");
            (x, y) = (x + a_start, y + b_start);
        }
        assert!(close(x, y), "{what} {k}: {x} vs {y}");
    }
}

/// MPI-IO: the merged record equals the whole job's and the ranks' tallies.
fn mpiio_equal(logs: &Logs, tallies: &[Json]) {
    let m = shared_record(&logs.merged, "MPI-IO", -1);
    let w = shared_record(&logs.whole, "MPI-IO", -1);
    let (fast, slow) = (f(w, "MPIIO_F_FASTEST_RANK_TIME"), f(w, "MPIIO_F_SLOWEST_RANK_TIME"));
    for (k, v) in m["counters"].as_object().unwrap() {
        // Which rank is fastest is the instances' measure when their times are within it.
        if k.contains("_RANK") && slow - fast < 1e-3 || k.contains("_TIME_SIZE") {
            continue;
        }
        assert_eq!(v, &w["counters"][k], "MPI-IO {k}: merged {m}\nwhole job {w}");
    }
    // The tallies' EBQ_ERRORS is the JSON report's, not a Darshan counter.
    for (k, v) in tallies[0]["counters"].as_object().unwrap().iter().filter(|(k, _)| k.starts_with("MPIIO_")) {
        let sum: i64 = tallies.iter().map(|t| t["counters"][k].as_i64().unwrap()).sum();
        let want = if k == "MPIIO_MODE" { v.as_i64().unwrap() } else { sum };
        assert_eq!(c(m, k), want, "MPI-IO {k} against the ranks' tallies");
    }
    assert_eq!(f(m, "MPIIO_F_VARIANCE_RANK_BYTES"), f(w, "MPIIO_F_VARIANCE_RANK_BYTES"));
    max_time_sizes("MPIIO", m, [0, 1].map(|r| shared_record(&logs.nodes[r], "MPI-IO", r as i64)));
    let skip = ["VARIANCE_RANK_"];
    fcounters_close("MPI-IO", (m, start(&logs.merged)), (w, start(&logs.whole)), &skip);
    // The variance of time as a standard deviation (s): the instances' difference, not squared.
    let sd = |r: &Json| f(r, "MPIIO_F_VARIANCE_RANK_TIME").sqrt();
    assert!(close(sd(m), sd(w)), "MPI-IO time standard deviation: {} vs {}", sd(m), sd(w));
}

/// `*_MAX_{READ,WRITE}_TIME_SIZE`: the size of the node records' longest
/// call. Which one call was the longest is each instance's measure (system
/// calls microseconds apart), so these are checked against the nodes' logs,
/// not the whole job's.
fn max_time_sizes(prefix: &str, m: &Json, nodes: [&Json; 2]) {
    for dir in ["READ", "WRITE"] {
        let (t, size) = (format!("{prefix}_F_MAX_{dir}_TIME"), format!("{prefix}_MAX_{dir}_TIME_SIZE"));
        let longest = if f(nodes[1], &t) > f(nodes[0], &t) { nodes[1] } else { nodes[0] };
        assert_eq!((f(m, &t), c(m, &size)), (f(longest, &t), c(longest, &size)), "{size}");
    }
}

/// The POSIX counters that depend on how the processes' accesses
/// interleave in one record (the whole job's instance folds both ranks).
const INTERLEAVED: [&str; 5] = ["_CONSEC_", "_SEQ_", "_RW_SWITCHES", "_STRIDE", "_ACCESS"];

/// POSIX: the whole job's record, but for the interleaved counters and the
/// ranks' reduction, which the node records give.
fn posix_equal(logs: &Logs) {
    let m = shared_record(&logs.merged, "POSIX", -1);
    let w = shared_record(&logs.whole, "POSIX", 0);
    let n = [0, 1].map(|r| shared_record(&logs.nodes[r], "POSIX", r as i64));
    for (k, v) in m["counters"].as_object().unwrap() {
        if k.contains("_RANK") || k.contains("_TIME_SIZE") {
            continue;
        }
        if INTERLEAVED.iter().any(|s| k.contains(s)) {
            if !k.contains("_STRIDE") && !k.contains("_ACCESS") {
                assert_eq!(c(m, k), c(n[0], k) + c(n[1], k), "POSIX {k}: the nodes' sum");
            }
            continue;
        }
        assert_eq!(v, &w["counters"][k], "POSIX {k}: merged {m}\nwhole job {w}");
    }
    let time = |r: &Json| ["READ", "WRITE", "META"].iter().map(|k| f(r, &format!("POSIX_F_{k}_TIME"))).sum::<f64>();
    let bytes = |r: &Json| c(r, "POSIX_BYTES_READ") + c(r, "POSIX_BYTES_WRITTEN");
    let (fast, slow) = if time(n[0]) <= time(n[1]) { (0, 1) } else { (1, 0) };
    for (who, r) in [("FASTEST", fast), ("SLOWEST", slow)] {
        assert_eq!(c(m, &format!("POSIX_{who}_RANK")), r as i64, "{who}");
        assert_eq!(c(m, &format!("POSIX_{who}_RANK_BYTES")), bytes(n[r]), "{who}");
        // Read + write + meta time, summed in another order: within a rounding.
        assert!((f(m, &format!("POSIX_F_{who}_RANK_TIME")) - time(n[r])).abs() <= 1e-12, "{who}");
    }
    max_time_sizes("POSIX", m, n);
    let half = (bytes(n[0]) - bytes(n[1])) as f64 / 2.0;
    assert_eq!(f(m, "POSIX_F_VARIANCE_RANK_BYTES"), half * half);
    let half = (time(n[0]) - time(n[1])) / 2.0;
    assert!((f(m, "POSIX_F_VARIANCE_RANK_TIME") - half * half).abs() <= 1e-12);
    for k in ["READ", "WRITE", "META"].map(|k| format!("POSIX_F_{k}_TIME")) {
        assert!((f(m, &k) - f(n[0], &k) - f(n[1], &k)).abs() <= 1e-9, "{k}: the nodes' sum");
    }
    let skip = ["_RANK_", "_READ_TIME", "_WRITE_TIME", "_META_TIME"];
    fcounters_close("POSIX", (m, start(&logs.merged)), (w, start(&logs.whole)), &skip);
    for k in ["POSIX_F_MAX_READ_TIME", "POSIX_F_MAX_WRITE_TIME"] {
        assert!(close(f(m, k), f(w, k)), "{k}: {} vs {}", f(m, k), f(w, k));
    }
}

/// DXT_POSIX: each rank's segments on the file, as the whole job's instance traced them.
fn dxt_equal(logs: &Logs) {
    let segments = |log: &Json, rank: i64| -> Vec<Vec<f64>> {
        let recs = shared_records(log, "DXT_POSIX");
        let r = recs.iter().find(|r| r["rank"] == rank).unwrap_or_else(|| panic!("no DXT rank {rank}: {recs:?}"));
        let t0 = start(log);
        let mut out: Vec<Vec<f64>> = ["write_segments", "read_segments"]
            .iter()
            .enumerate()
            .flat_map(|(i, k)| r[*k].as_array().unwrap().iter().map(move |s| (i, s)))
            .map(|(i, s)| {
                let v: Vec<f64> = s.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
                vec![i as f64, v[0], v[1], v[2] + t0, v[3] + t0]
            })
            .collect();
        out.sort_by(|a, b| a.partial_cmp(b).unwrap());
        out
    };
    for rank in [0, 1] {
        let (m, w) = (segments(&logs.merged, rank), segments(&logs.whole, rank));
        assert_eq!(m.len(), w.len(), "rank {rank}'s DXT segments");
        assert!(!m.is_empty());
        for (a, b) in m.iter().zip(&w) {
            assert_eq!(a[..3], b[..3], "rank {rank}: kind, offset, length");
            assert!((a[3] - b[3]).abs() < 1e-3 && (a[4] - b[4]).abs() < 1e-3, "rank {rank}: {a:?} vs {b:?}");
        }
    }
}

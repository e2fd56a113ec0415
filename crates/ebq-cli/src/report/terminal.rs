//! The report on stdout: text (busiest files first, `--top N`) or one JSON
//! document with Darshan's counter names.

use super::posix::{Fold, Record, BUCKETS};
use super::FileKey;
use serde_json::{json, Map, Value as Json};
use std::io::{self, Write};

/// The run the records came from.
pub struct Job {
    /// CLOCK_MONOTONIC ns at the report's start (timestamps count from it) and end.
    pub origin_ns: u64,
    pub end_ns: u64,
    pub operations: usize,
}

impl Job {
    /// Wall time of the run in ns.
    pub fn wall_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.origin_ns)
    }
}

/// Files busiest first: bytes moved, then time spent, then (for ties) device and inode.
pub fn busiest(fold: &Fold) -> Vec<(&FileKey, &Record)> {
    let mut files: Vec<(&FileKey, &Record)> = fold.files.iter().collect();
    files.sort_by(|a, b| b.1.bytes().cmp(&a.1.bytes()).then(b.1.time_ns().cmp(&a.1.time_ns())).then(a.0.cmp(b.0)));
    files
}

/// A record's float counters in seconds: timestamps since the job's start, times as durations.
pub fn fcounters_s(r: &Record, origin_ns: u64) -> Map<String, Json> {
    r.fcounters
        .iter()
        .map(|(k, v)| {
            let ns = if k.ends_with("TIMESTAMP") && *v != 0 { *v - origin_ns as i64 } else { *v };
            (k.to_string(), json!(ns as f64 / 1e9))
        })
        .collect()
}

fn record_json(r: &Record, origin_ns: u64) -> Json {
    json!({
        "fs_type": r.fs_type, "mount_point": r.mount_point,
        "counters": r.all_counters(), "fcounters": fcounters_s(r, origin_ns),
    })
}

/// The JSON document: `files` (busiest first) and `filesystems`, each with
/// Darshan's `counters` and `fcounters` (seconds).
pub fn json(out: &mut dyn Write, job: &Job, fold: &Fold) -> io::Result<()> {
    let files: Vec<Json> = busiest(fold)
        .into_iter()
        .map(|(k, r)| {
            let mut v = record_json(r, job.origin_ns);
            v["file_name"] = json!(r.name);
            v["inode"] = json!(k.inode);
            v["dev"] = json!(format!("{}:{}", k.dev_major, k.dev_minor));
            v
        })
        .collect();
    let filesystems: Vec<Json> = fold
        .filesystems
        .values()
        .map(|r| {
            let mut v = record_json(r, job.origin_ns);
            v["files"] = json!(r.files);
            v
        })
        .collect();
    let doc = json!({
        "start_monotonic_ns": job.origin_ns,
        "wall_time_s": job.wall_ns() as f64 / 1e9,
        "operations": job.operations,
        "files": files,
        "filesystems": filesystems,
    });
    writeln!(out, "{doc}")
}

fn ms(ns: i64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

fn sizes(r: &Record, dir: &str) -> String {
    let parts: Vec<String> = BUCKETS
        .iter()
        .filter_map(|b| {
            let n = r.get(&format!("POSIX_SIZE_{dir}_{b}"));
            (n > 0).then(|| format!("{b}: {n}"))
        })
        .collect();
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(", ")
    }
}

/// The text report: per file system, then per file busiest first (the first `top`).
pub fn text(out: &mut dyn Write, job: &Job, fold: &Fold, top: Option<usize>) -> io::Result<()> {
    writeln!(
        out,
        "I/O report: {} operations on {} files in {} file systems, {} s",
        job.operations,
        fold.files.len(),
        fold.filesystems.len(),
        format_args!("{:.3}", job.wall_ns() as f64 / 1e9)
    )?;
    writeln!(out, "\nPer file system")?;
    writeln!(
        out,
        "{:<8} {:<24} {:>5} {:>6} {:>8} {:>8} {:>12} {:>13} {:>10} {:>10} {:>10} {:>6}",
        "fs",
        "mount point",
        "files",
        "opens",
        "reads",
        "writes",
        "bytes read",
        "bytes written",
        "read ms",
        "write ms",
        "meta ms",
        "errors"
    )?;
    for ((fst, mnt), r) in &fold.filesystems {
        writeln!(
            out,
            "{:<8} {:<24} {:>5} {:>6} {:>8} {:>8} {:>12} {:>13} {:>10} {:>10} {:>10} {:>6}",
            fst,
            mnt,
            r.files,
            r.get("POSIX_OPENS"),
            r.get("POSIX_READS"),
            r.get("POSIX_WRITES"),
            r.get("POSIX_BYTES_READ"),
            r.get("POSIX_BYTES_WRITTEN"),
            ms(r.fcounters["POSIX_F_READ_TIME"]),
            ms(r.fcounters["POSIX_F_WRITE_TIME"]),
            ms(r.fcounters["POSIX_F_META_TIME"]),
            r.get("EBQ_ERRORS"),
        )?;
    }
    let files = busiest(fold);
    let shown = top.unwrap_or(files.len()).min(files.len());
    writeln!(
        out,
        "\nPer file, busiest first (bytes, then time){}",
        if shown < files.len() { format!(": top {shown} of {}", files.len()) } else { String::new() }
    )?;
    for (k, r) in files.into_iter().take(shown) {
        writeln!(
            out,
            "{} ({} {}, dev {}:{}, inode {})",
            r.name, r.fs_type, r.mount_point, k.dev_major, k.dev_minor, k.inode
        )?;
        writeln!(
            out,
            "  opens {}  reads {} ({} B, {} seq, {} consec)  writes {} ({} B, {} seq, {} consec)  seeks {}  fsyncs {}  fdatasyncs {}  rw switches {}  errors {}",
            r.get("POSIX_OPENS"),
            r.get("POSIX_READS"),
            r.get("POSIX_BYTES_READ"),
            r.get("POSIX_SEQ_READS"),
            r.get("POSIX_CONSEC_READS"),
            r.get("POSIX_WRITES"),
            r.get("POSIX_BYTES_WRITTEN"),
            r.get("POSIX_SEQ_WRITES"),
            r.get("POSIX_CONSEC_WRITES"),
            r.get("POSIX_SEEKS"),
            r.get("POSIX_FSYNCS"),
            r.get("POSIX_FDSYNCS"),
            r.get("POSIX_RW_SWITCHES"),
            r.get("EBQ_ERRORS"),
        )?;
        writeln!(
            out,
            "  time ms: read {}  write {}  meta {}  slowest read {} ({} B)  slowest write {} ({} B)",
            ms(r.fcounters["POSIX_F_READ_TIME"]),
            ms(r.fcounters["POSIX_F_WRITE_TIME"]),
            ms(r.fcounters["POSIX_F_META_TIME"]),
            ms(r.fcounters["POSIX_F_MAX_READ_TIME"]),
            r.get("POSIX_MAX_READ_TIME_SIZE"),
            ms(r.fcounters["POSIX_F_MAX_WRITE_TIME"]),
            r.get("POSIX_MAX_WRITE_TIME_SIZE"),
        )?;
        writeln!(out, "  read sizes: {}", sizes(r, "READ"))?;
        writeln!(out, "  write sizes: {}", sizes(r, "WRITE"))?;
        if !r.access.is_empty() {
            let common: Vec<String> = r.access.iter().map(|(v, c)| format!("{v} B × {c}")).collect();
            writeln!(out, "  common access sizes: {}", common.join(", "))?;
        }
    }
    Ok(())
}

//! The report on stdout: text (busiest files first, `--top N`) or one JSON
//! document with Darshan's counter names.

use super::listing::NotListed;
use super::mpi;
use super::posix::{per_path, PER_PATH};
use super::posix::{Fold, Record, BUCKETS};
use super::stdio;
use super::{FileKey, Via};
use serde_json::{json, Map, Value as Json};
use std::io::{self, Write};

/// The run the records came from.
pub struct Job {
    /// CLOCK_MONOTONIC ns at the report's start (timestamps count from it) and end.
    pub origin_ns: u64,
    pub end_ns: u64,
    pub operations: usize,
    /// Each query's event accounting (`posix`, `mpiio` summed over its queries):
    /// a report over lost events says so in every format.
    pub stats: Vec<(&'static str, ebq::QueryStats)>,
    pub aio: AioCount,
    /// What was left out of the file records ([`super::listing`]).
    pub not_listed: NotListed,
    /// Rows of files the kernel fold had no record left for (its
    /// [`FILES`](super::kernel_fold::layout::FILES)): not folded, in the
    /// posix query's `dropped`.
    pub past_files: u64,
}

/// AIO requests `io_submit` submitted and those the report counted (iomap's
/// direct I/O, and the other requests by their iocbs): an O_DIRECT request
/// on a file system without iomap's direct I/O (tmpfs) reaches neither.
#[derive(Debug, Clone, Copy, Default)]
pub struct AioCount {
    pub submitted: u64,
    pub counted: u64,
}

impl AioCount {
    /// The warning when requests were submitted that the report did not count.
    pub fn warning(&self) -> Option<String> {
        (self.submitted > self.counted).then(|| {
            format!(
                "io_submit submitted {} AIO requests and the report counted {}; the other {} (O_DIRECT reads and \
                 writes on a file system without iomap's direct I/O, or requests never reaped with io_getevents) are \
                 not in its counters",
                self.submitted,
                self.counted,
                self.submitted - self.counted
            )
        })
    }
}

/// Per I/O path, over every file system: its `EBQ_<PATH>_*` counters summed,
/// in [`PER_PATH`] order (reads, writes, bytes read, bytes written, fsyncs).
pub fn path_totals(fold: &Fold) -> Vec<(Via, [i64; PER_PATH.len()])> {
    Via::ALL
        .into_iter()
        .map(|via| (via, PER_PATH.map(|what| fold.filesystems.values().map(|r| r.get(&per_path(via, what))).sum())))
        .collect()
}

/// Whether Darshan's POSIX module sees a path (issue 37 item 2): it wraps
/// libc's calls, so system calls only; the others are in `EBQ_<PATH>_*` alone.
pub fn in_posix(via: Via) -> bool {
    via == Via::Syscall
}

/// Bytes a path moved (read + written; an mmap's: the pages mapped in).
pub fn path_bytes(n: &[i64; PER_PATH.len()]) -> i64 {
    n[2] + n[3]
}

/// The paths Darshan would not see, with their bytes and share of all the
/// bytes moved (‰ precision as a fraction 0..=1): what Darshan would miss.
pub fn missed_by_darshan(fold: &Fold) -> Vec<(Via, [i64; PER_PATH.len()], f64)> {
    let totals = path_totals(fold);
    let all: i64 = totals.iter().map(|(_, n)| path_bytes(n)).sum();
    totals
        .into_iter()
        .filter(|(via, n)| !in_posix(*via) && n.iter().any(|v| *v != 0))
        .map(|(via, n)| (via, n, if all > 0 { path_bytes(&n) as f64 / all as f64 } else { 0.0 }))
        .collect()
}

/// The accounting of one query as JSON: what the stderr stats line says.
pub fn stats_json(s: &ebq::QueryStats) -> Json {
    json!({
        "seen": s.seen, "matched": s.matched, "delivered": s.delivered, "dropped": s.dropped,
        "missed": s.missed, "unmatched_ends": s.unmatched, "missed_starts": s.missed_starts,
        "open_pairs": s.open_pairs, "superseded": s.superseded, "pairs_lost": s.pending_full, "evicted": s.evicted,
        "missed_tracking": s.missed_tracking, "untracked": s.untracked, "out_of_scope": s.out_of_scope,
        "unreadable_strings": s.unreadable_strings, "middle_unmatched": s.middle_unmatched,
    })
}

/// Events lost by a query: dropped, missed, start events missed, pairs
/// superseded, lost or evicted, fork/exit missed.
pub fn lost(s: &ebq::QueryStats) -> u64 {
    s.dropped + s.missed + s.missed_starts + s.superseded + s.pending_full + s.evicted + s.missed_tracking + s.untracked
}

pub(crate) fn mpi_record_json(r: &mpi::Record, origin_ns: u64) -> Json {
    let mut f = seconds_json(&r.fcounters, origin_ns);
    f.insert("MPIIO_F_VARIANCE_RANK_TIME".into(), json!(r.variance_time_s2));
    f.insert("MPIIO_F_VARIANCE_RANK_BYTES".into(), json!(r.variance_bytes));
    json!({ "file_name": r.name, "ranks": r.ranks, "counters": r.all_counters(), "fcounters": f })
}

/// The MPIIO part of the JSON document: per file the job record and one record per rank.
pub fn mpi_json(m: &mpi::Fold, origin_ns: u64) -> Json {
    let files: Vec<Json> = m
        .files
        .iter()
        .map(|(k, r)| {
            let mut v = mpi_record_json(r, origin_ns);
            v["inode"] = json!(k.inode);
            v["dev"] = json!(format!("{}:{}", k.dev_major, k.dev_minor));
            v["per_rank"] = m
                .ranks
                .range((*k, 0)..=(*k, u32::MAX))
                .map(|((_, rank), r)| {
                    let mut v = mpi_record_json(r, origin_ns);
                    v["rank"] = json!(rank);
                    v
                })
                .collect();
            v
        })
        .collect();
    let pids: Map<String, Json> = m.pids.iter().map(|(p, r)| (p.to_string(), json!(r))).collect();
    json!({
        "files": files,
        "ranks_by_pid": pids,
        "unattributed_calls": m.unattributed,
        "type_size_calls": m.type_size_calls,
    })
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

pub(crate) fn record_json(r: &Record, origin_ns: u64) -> Json {
    json!({
        "fs_type": r.fs_type, "mount_point": r.mount_point,
        "counters": r.all_counters(), "fcounters": fcounters_s(r, origin_ns),
    })
}

/// The JSON document: `files` (busiest first) and `filesystems`, each with
/// Darshan's `counters` and `fcounters` (seconds).
pub fn json(
    out: &mut dyn Write,
    job: &Job,
    fold: &Fold,
    mpi: Option<&mpi::Fold>,
    stdio: Option<&stdio::Fold>,
) -> io::Result<()> {
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
        "mpiio": mpi.map(|m| mpi_json(m, job.origin_ns)),
        "stdio": stdio.map(|s| stdio_json(s, job.origin_ns)),
        "ebq_stats": job.stats.iter().map(|(k, s)| (k.to_string(), stats_json(s))).collect::<Map<String, Json>>(),
        "aio": {"submitted": job.aio.submitted, "counted": job.aio.counted},
        "not_listed": not_listed_json(&job.not_listed),
        "rows_past_kernel_records": job.past_files,
    });
    writeln!(out, "{doc}")
}

/// One STDIO record as JSON: its counters, its float counters in seconds
/// (timestamps since `origin_ns`, as Darshan's are since the job's start).
pub(crate) fn stdio_record_json(name: &str, r: &stdio::Record, origin_ns: u64) -> Json {
    json!({ "file_name": name, "counters": r.counters, "fcounters": seconds_json(&r.fcounters, origin_ns) })
}

/// Float counters kept in ns as seconds: times as they are, timestamps
/// (CLOCK_MONOTONIC) since `origin_ns`, 0 left 0 (never set).
fn seconds_json(fcounters: &std::collections::BTreeMap<&'static str, i64>, origin_ns: u64) -> Map<String, Json> {
    fcounters
        .iter()
        .map(|(k, v)| {
            let ns = if k.ends_with("TIMESTAMP") && *v != 0 { *v - origin_ns as i64 } else { *v };
            (k.to_string(), json!(ns as f64 / 1e9))
        })
        .collect()
}

/// The STDIO part of the JSON document: the records, the calls on streams
/// whose open was not seen, the system calls libc made inside stdio calls.
pub fn stdio_json(s: &stdio::Fold, origin_ns: u64) -> Json {
    let files: Vec<Json> = s.files.iter().map(|(name, r)| stdio_record_json(name, r, origin_ns)).collect();
    json!({
        "files": files,
        "unattributed_calls": s.unattributed,
        "unnamed_stream_calls": s.unnamed,
        "system_calls_inside": s.inside_calls,
        "strings_at_read_cap": s.strings_at_cap,
        "scanf_unmeasured": s.scanf_unmeasured,
        "stdio_calls_nested": s.nested_calls
    })
}

/// What was left out of the file records, as JSON.
pub fn not_listed_json(n: &NotListed) -> Json {
    let other: Map<String, Json> = n
        .other
        .iter()
        .map(|(fs, [d, r, w, b])| (fs.clone(), json!({"descriptors": d, "reads": r, "writes": w, "bytes": b})))
        .collect();
    json!({
        "other_descriptors": other, "excluded_dirs": n.excluded_dirs,
        "name_excluded": n.name_excluded, "report_outputs": n.outputs,
    })
}

/// The lines that say what was left out of the file records, if anything was.
pub fn not_listed_lines(n: &NotListed) -> Vec<String> {
    let mut lines: Vec<String> = n.other_line().into_iter().collect();
    if n.excluded_dirs + n.name_excluded + n.outputs > 0 {
        lines.push(format!(
            "not listed, as Darshan would not: {} files under its excluded directories, {} by the config's \
             NAME_EXCLUDE, {} the report's own outputs",
            n.excluded_dirs, n.name_excluded, n.outputs
        ));
    }
    lines
}

fn ms(ns: i64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// A file's reads and writes per path, when any took a path other than system calls.
fn by_path(r: &Record) -> Option<String> {
    let ops = |via: Via| r.get(&per_path(via, "READS")) + r.get(&per_path(via, "WRITES"));
    if Via::ALL.iter().all(|v| *v == Via::Syscall || ops(*v) == 0) {
        return None;
    }
    let parts: Vec<String> = Via::ALL
        .iter()
        .filter(|v| ops(**v) > 0)
        .map(|v| {
            let get = |what: &str| r.get(&per_path(*v, what));
            if *v == Via::Mmap {
                return format!("mmap faults {} ({} B mapped in)", get("READS"), get("BYTES_READ"));
            }
            format!(
                "{} reads {} ({} B), writes {} ({} B)",
                v.name(),
                get("READS"),
                get("BYTES_READ"),
                get("WRITES"),
                get("BYTES_WRITTEN")
            )
        })
        .collect();
    Some(parts.join("; "))
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

/// The text report: per file system, per I/O path, then per file busiest
/// first (the first `top`), MPI-IO, and warnings of lost events.
pub fn text(
    out: &mut dyn Write,
    job: &Job,
    fold: &Fold,
    mpi: Option<&mpi::Fold>,
    top: Option<usize>,
) -> io::Result<()> {
    writeln!(
        out,
        "I/O report: {} operations on {} files in {} file systems, {} s",
        job.operations,
        fold.files.len(),
        fold.filesystems.len(),
        format_args!("{:.3}", job.wall_ns() as f64 / 1e9)
    )?;
    for line in not_listed_lines(&job.not_listed) {
        writeln!(out, "{line}")?;
    }
    filesystems_text(out, fold)?;
    paths_text(out, fold)?;
    let files = busiest(fold);
    let shown = top.unwrap_or(files.len()).min(files.len());
    writeln!(
        out,
        "\nPer file, busiest first (bytes, then time){}",
        if shown < files.len() { format!(": top {shown} of {}", files.len()) } else { String::new() }
    )?;
    for (k, r) in files.into_iter().take(shown) {
        file_text(out, k, r)?;
    }
    if let Some(m) = mpi.filter(|m| !m.files.is_empty()) {
        mpi_text(out, m)?;
    }
    if let Some(w) = job.aio.warning() {
        writeln!(out, "\nWARNING: {w}")?;
    }
    lost_text(out, job)?;
    Ok(())
}

/// The per-file-system table.
fn filesystems_text(out: &mut dyn Write, fold: &Fold) -> io::Result<()> {
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
    Ok(())
}

/// The per-I/O-path table (system calls, io_uring, AIO, mmap), whether
/// Darshan's `POSIX_*` counters see each, and their share of the bytes; then
/// the `POSIX_*` totals beside them (they equal the syscall row).
fn paths_text(out: &mut dyn Write, fold: &Fold) -> io::Result<()> {
    writeln!(
        out,
        "\nPer I/O path (POSIX_* counts system calls only, as Darshan's; the others are EBQ_<PATH>_* alone)"
    )?;
    writeln!(
        out,
        "{:<10} {:>8} {:>8} {:>12} {:>13} {:>7} {:>9} {:>7}",
        "path", "reads", "writes", "bytes read", "bytes written", "fsyncs", "in POSIX", "bytes %"
    )?;
    let totals = path_totals(fold);
    let all: i64 = totals.iter().map(|(_, n)| path_bytes(n)).sum();
    for (via, n) in &totals {
        let [reads, writes, read, written, fsyncs] = *n;
        let share = if all > 0 { 100.0 * path_bytes(n) as f64 / all as f64 } else { 0.0 };
        let seen = if in_posix(*via) { "yes" } else { "no" };
        writeln!(
            out,
            "{:<10} {reads:>8} {writes:>8} {read:>12} {written:>13} {fsyncs:>7} {seen:>9} {share:>7.1}",
            via.name()
        )?;
    }
    let sum = |k: &str| fold.filesystems.values().map(|r| r.get(k)).sum::<i64>();
    writeln!(
        out,
        "{:<10} {:>8} {:>8} {:>12} {:>13} {:>7}",
        "POSIX_*",
        sum("POSIX_READS"),
        sum("POSIX_WRITES"),
        sum("POSIX_BYTES_READ"),
        sum("POSIX_BYTES_WRITTEN"),
        sum("POSIX_FSYNCS") + sum("POSIX_FDSYNCS")
    )?;
    writeln!(out, "(mmap: faults and fault-arounds as reads, the bytes they mapped in)")?;
    Ok(())
}

/// One file's lines: its name and mount, counts, times, paths and sizes.
fn file_text(out: &mut dyn Write, k: &FileKey, r: &Record) -> io::Result<()> {
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
    if let Some(paths) = by_path(r) {
        writeln!(out, "  by path: {paths}")?;
    }
    writeln!(out, "  read sizes: {}", sizes(r, "READ"))?;
    writeln!(out, "  write sizes: {}", sizes(r, "WRITE"))?;
    if !r.access.is_empty() {
        let common: Vec<String> = r.access.iter().map(|(v, c)| format!("{v} B × {c}")).collect();
        writeln!(out, "  common access sizes: {}", common.join(", "))?;
    }
    Ok(())
}

/// A warning for each query that lost events (its counters may be low).
fn lost_text(out: &mut dyn Write, job: &Job) -> io::Result<()> {
    if job.past_files > 0 {
        writeln!(out, "\nWARNING: {}", past_files_warning(job.past_files))?;
    }
    for (name, st) in &job.stats {
        if lost(st) > 0 {
            writeln!(
                out,
                "\nWARNING: the {name} query lost events ({} dropped, {} missed, {} start events missed, {} pairs superseded, {} pairs lost, {} evicted, {} fork/exit missed, {} untracked): counters may be low",
                st.dropped, st.missed, st.missed_starts, st.superseded, st.pending_full, st.evicted, st.missed_tracking, st.untracked
            )?;
        }
    }
    Ok(())
}

/// Why the kernel fold dropped rows of files it had no record left for, and what to do.
pub fn past_files_warning(rows: u64) -> String {
    format!(
        "{rows} rows were of files past the {} the kernel fold keeps records for: not folded (counted dropped); \
         `--trace FILE` folds every file in user space",
        super::kernel_fold::layout::FILES
    )
}

/// MPIIO per file: the job line, then one line per rank.
fn mpi_text(out: &mut dyn Write, m: &mpi::Fold) -> io::Result<()> {
    writeln!(out, "\nMPI-IO per file ({} ranks)", m.pids.len())?;
    let line = |r: &mpi::Record| {
        format!(
            "opens {}/{} (indep/coll)  reads {}/{}/{}/{}  writes {}/{}/{}/{} (indep/coll/split/nb)  syncs {}  views {}  bytes read {}  written {}  time ms: read {} write {} meta {}",
            r.get("MPIIO_INDEP_OPENS"),
            r.get("MPIIO_COLL_OPENS"),
            r.get("MPIIO_INDEP_READS"),
            r.get("MPIIO_COLL_READS"),
            r.get("MPIIO_SPLIT_READS"),
            r.get("MPIIO_NB_READS"),
            r.get("MPIIO_INDEP_WRITES"),
            r.get("MPIIO_COLL_WRITES"),
            r.get("MPIIO_SPLIT_WRITES"),
            r.get("MPIIO_NB_WRITES"),
            r.get("MPIIO_SYNCS"),
            r.get("MPIIO_VIEWS"),
            r.get("MPIIO_BYTES_READ"),
            r.get("MPIIO_BYTES_WRITTEN"),
            ms(r.fcounters["MPIIO_F_READ_TIME"]),
            ms(r.fcounters["MPIIO_F_WRITE_TIME"]),
            ms(r.fcounters["MPIIO_F_META_TIME"]),
        )
    };
    for (k, r) in &m.files {
        writeln!(out, "{} (dev {}:{}, inode {}), {} ranks", r.name, k.dev_major, k.dev_minor, k.inode, r.ranks)?;
        writeln!(out, "  job: {}", line(r))?;
        writeln!(
            out,
            "  fastest rank {} ({} ms, {} B)  slowest rank {} ({} ms, {} B)  variance: time {:.3e} s², bytes {:.3e} B²",
            r.get("MPIIO_FASTEST_RANK"),
            ms(r.fcounters["MPIIO_F_FASTEST_RANK_TIME"]),
            r.get("MPIIO_FASTEST_RANK_BYTES"),
            r.get("MPIIO_SLOWEST_RANK"),
            ms(r.fcounters["MPIIO_F_SLOWEST_RANK_TIME"]),
            r.get("MPIIO_SLOWEST_RANK_BYTES"),
            r.variance_time_s2,
            r.variance_bytes
        )?;
        for ((_, rank), r) in m.ranks.range((*k, 0)..=(*k, u32::MAX)) {
            writeln!(out, "  rank {rank}: {}", line(r))?;
        }
    }
    if m.unattributed > 0 {
        writeln!(out, "  {} MPI-IO calls on handles without a seen MPI_File_open", m.unattributed)?;
    }
    Ok(())
}

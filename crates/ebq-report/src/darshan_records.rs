//! A [`Report`]'s records as a Darshan log ([`darshan_log::Log`]): the same
//! numbers its JSON document holds, laid out in Darshan's counter order.
//!
//! - POSIX: one record per file (ebq folds a file's processes together, as
//!   Darshan's non-MPI mode does), rank 0, or the MPI rank of its processes
//!   when all its operations came from one rank (one node's rank of a job
//!   traced with `-p`: `ebq report merge` reduces it with the other
//!   nodes'), named by the name ebq knows
//!   (the file's last path component: the kernel events carry the dentry).
//! - MPI-IO: a file's job record (rank −1) when more than one rank opened
//!   it, else its one rank's record.
//! - STDIO: one record per path a stream was opened on (`--stdio`), rank 0,
//!   named by that path (Darshan's record id is the hash of the name).
//! - DXT_POSIX: when the report kept every operation (`--trace`), each
//!   file's reads and writes per rank.
//! - ebq's own counters, which Darshan's modules have no slot for (its
//!   per-path `EBQ_<PATH>_*` reads, writes, bytes and fsyncs: io_uring
//!   requests, AIO iocbs, mmap faults, none of them in `POSIX_*`: issue 37
//!   item 2), go into the job's metadata as `key=value` lines, summed over
//!   the files. Metadata rather than a module of ebq's own: every Darshan
//!   reader keeps the job's metadata as it is (`darshan-parser` prints it
//!   as `# metadata:` lines, PyDarshan returns it in
//!   `metadata["job"]["metadata"]`), where a module id of ebq's would be one
//!   Darshan may give another module in a later format, and each reader's
//!   handling of an unknown module differs (a region it skips, a warning, or
//!   an error); the per-path totals are per job anyway.

use super::darshan_log::{self, DxtRecord, Log, Record, Segment};
use super::posix::{per_path, PER_PATH};
use super::terminal::{mpi_record_json, path_totals, record_json, stdio_record_json};
use super::{OpKind, Report};
use serde_json::Value as Json;
use std::collections::BTreeMap;

impl Report {
    /// The report as a Darshan log. `job` gives what the caller knows (uid,
    /// job id, command line); the times, process count, mounts and ebq's
    /// metadata are the report's.
    pub fn darshan_log(&self, mut job: darshan_log::Job) -> Log {
        let (start, end) = (wall(self.job.origin_ns), wall(self.job.end_ns));
        job.start = start;
        job.end = end;
        job.nprocs = self.mpi.as_ref().map_or(1, |m| m.pids.len().max(1) as i64);
        job.metadata.insert(0, ("lib_ver".into(), format!("ebq-{}", env!("CARGO_PKG_VERSION"))));
        for (via, n) in path_totals(&self.fold) {
            for (what, n) in PER_PATH.iter().zip(n) {
                job.metadata.push((per_path(via, what), n.to_string()));
            }
        }
        let errors: i64 = self.fold.files.values().map(|r| r.counters.get("EBQ_ERRORS").copied().unwrap_or(0)).sum();
        job.metadata.push(("EBQ_ERRORS".into(), errors.to_string()));
        job.mounts = self.fold.filesystems.keys().map(|(t, m)| (t.clone(), m.clone())).collect();
        job.mounts.sort_by_key(|m| std::cmp::Reverse(m.1.len()));
        let mut log = Log { job, ..Log::default() };

        let (posix, mpiio) = (darshan_log::posix_counters(), darshan_log::mpiio_counters());
        let mut ids = BTreeMap::new();
        let ranks = one_rank(&self.ops);
        for (key, r) in &self.fold.files {
            let id = log.name_id(&unique_name(&r.name, &self.fold.files, key));
            ids.insert(*key, id);
            let v = record_json(r, self.job.origin_ns);
            let rank = ranks.get(key).copied().flatten().map_or(0, i64::from);
            log.posix.push(record(id, rank, &v, &posix, &darshan_log::POSIX_FCOUNTERS));
        }
        if let Some(m) = &self.mpi {
            for (key, r) in &m.files {
                let id = *ids.entry(*key).or_insert_with(|| log.name_id(&r.name));
                let (c, f) = (&mpiio, &darshan_log::MPIIO_FCOUNTERS);
                if r.ranks > 1 {
                    log.mpiio.push(record(id, -1, &mpi_record_json(r, self.job.origin_ns), c, f));
                } else {
                    for ((_, rank), rr) in m.ranks.range((*key, 0)..=(*key, u32::MAX)) {
                        log.mpiio.push(record(id, *rank as i64, &mpi_record_json(rr, self.job.origin_ns), c, f));
                    }
                }
            }
        }
        if let Some(s) = &self.stdio {
            let counters: Vec<String> = super::stdio::COUNTERS.iter().map(|c| c.to_string()).collect();
            for (name, r) in &s.files {
                let v = stdio_record_json(name, r, self.job.origin_ns);
                let id = log.name_id(name);
                log.stdio.push(record(id, 0, &v, &counters, &super::stdio::FCOUNTERS));
            }
        }
        log.dxt_posix = self.dxt_posix(&ids);
        log
    }

    /// Each file's reads and writes per rank, seconds since the report's start.
    fn dxt_posix(&self, ids: &BTreeMap<super::FileKey, u64>) -> Vec<DxtRecord> {
        let host = hostname();
        let mut out: BTreeMap<(u64, i64), DxtRecord> = BTreeMap::new();
        for o in self.ops.iter().filter(|o| matches!(o.op, OpKind::Read | OpKind::Write) && o.result >= 0) {
            let Some(id) = ids.get(&o.file) else { continue };
            let rank = o.rank.map_or(0, i64::from);
            let r = out.entry((*id, rank)).or_insert_with(|| DxtRecord {
                id: *id,
                rank,
                hostname: host.clone(),
                writes: vec![],
                reads: vec![],
            });
            let seconds = |ns: u64| ns.saturating_sub(self.job.origin_ns) as f64 / 1e9;
            let s = Segment { offset: o.offset, length: o.result, start: seconds(o.start_ns), end: seconds(o.end_ns) };
            match o.op {
                OpKind::Write => r.writes.push(s),
                _ => r.reads.push(s),
            }
        }
        out.into_values().collect()
    }
}

/// Each file's MPI rank when all its operations came from one rank (else `None`).
fn one_rank(ops: &[super::Operation]) -> BTreeMap<super::FileKey, Option<u32>> {
    let mut out: BTreeMap<super::FileKey, Option<u32>> = BTreeMap::new();
    for o in ops {
        let r = out.entry(o.file).or_insert(o.rank);
        if *r != o.rank {
            *r = None;
        }
    }
    out
}

/// A record of `v`'s `counters` and `fcounters` (the JSON document's) in the order of `names`.
fn record(id: u64, rank: i64, v: &Json, counters: &[String], fcounters: &[&str]) -> Record {
    Record {
        id,
        rank,
        counters: counters.iter().map(|k| v["counters"][k.as_str()].as_i64().unwrap_or(0)).collect(),
        fcounters: fcounters.iter().map(|k| v["fcounters"][k].as_f64().unwrap_or(0.0)).collect(),
    }
}

/// A file's name, with its device and inode when another file has the same name (or it has none).
fn unique_name(name: &str, files: &BTreeMap<super::FileKey, super::posix::Record>, key: &super::FileKey) -> String {
    match files.iter().filter(|(_, r)| r.name == name).count() {
        1 if !name.is_empty() => name.to_string(),
        _ => format!("{name} ({}:{} inode {})", key.dev_major, key.dev_minor, key.inode),
    }
}

/// CLOCK_REALTIME (seconds, ns) of a CLOCK_MONOTONIC instant, through the
/// process's one bracketed clock offset ([`ebq::exec::sink::wall_clock`]):
/// two single reads a preemption apart would shift the log's start, and with
/// it every DXT segment's absolute time, by that preemption.
fn wall(monotonic_ns: u64) -> (i64, i64) {
    let at = ebq::exec::sink::wall_clock().wall_ns(monotonic_ns);
    (at.div_euclid(1_000_000_000), at.rem_euclid(1_000_000_000))
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default()
}

//! `ebq report merge LOG…`: the Darshan logs of one job's nodes (each node's
//! `ebq report io --darshan-log`, same job id) as one job log, with
//! Darshan's shared-file reduction (`darshan-runtime`'s
//! `posix_record_reduction_op`, `mpiio_record_reduction_op`,
//! `stdio_record_reduction_op` and `*_shared_record_variance`).
//!
//! - **The job:** the earliest start, the latest end, the processes summed,
//!   the first log's user, executable and metadata (ebq's own `EBQ_*`
//!   counters summed), the mount tables joined. Every log must carry the
//!   same job id: logs of different jobs are refused.
//! - **Timestamps** are seconds since the job's start, each log's since its
//!   own: they are moved to the merged start, so one file's times on two
//!   nodes compare.
//! - **A file accessed on several nodes** (the same name, Darshan's record id
//!   of it) becomes one record of rank −1 per module. Counters are summed,
//!   except: `*_START_TIMESTAMP` the earliest non-zero, `*_END_TIMESTAMP` and
//!   `*_MAX_BYTE_*` the largest; `*_F_MAX_{READ,WRITE}_TIME` the largest, with
//!   its `*_MAX_{READ,WRITE}_TIME_SIZE`; `*_MODE`, `POSIX_RENAMED_FROM` and the
//!   alignments the last record's; the four common access sizes and strides
//!   merged by value and their counts, then the four most frequent kept;
//!   the fastest and slowest rank (least and most read + write + meta time,
//!   the lower rank on a tie, as ebq's MPI-IO fold) with their bytes and
//!   time; and `*_F_VARIANCE_RANK_{TIME,BYTES}` the variance over every rank
//!   (Darshan's `darshan_variance_reduce`: count, total and sum of squares
//!   combined, so a record already reduced on its node, rank −1 over the
//!   node log's processes, joins exactly). A rank's own record (rank ≥ 0)
//!   is its own fastest and slowest rank, as Darshan sets it up before
//!   reducing.
//! - **A file on one node only** keeps its records as they are.
//! - **DXT** records are per rank and per host: all are kept.

use super::darshan_log::{
    mpiio_counters, posix_counters, DxtRecord, Job, Log, Record, MPIIO_FCOUNTERS, POSIX_FCOUNTERS,
};
use std::collections::BTreeMap;

/// A module's records in a log.
type RecordsOf = fn(&Log) -> &Vec<Record>;

/// One job log of `logs` (one per node, in any order); `names` name them in errors.
pub fn merge(logs: &[Log], names: &[String]) -> Result<Log, String> {
    let first = logs.first().ok_or("no log to merge")?;
    for (log, name) in logs.iter().zip(names) {
        if log.job.jobid != first.job.jobid {
            return Err(format!(
                "{name}: job id {} differs from {}'s ({}): the logs of one job carry its id (`--job-id`, SLURM_JOB_ID)",
                log.job.jobid, names[0], first.job.jobid
            ));
        }
    }
    let mut out = Log { job: merged_job(logs), ..Log::default() };
    let shifts: Vec<f64> = logs.iter().map(|l| seconds_between(out.job.start, l.job.start)).collect();
    // Each log's record id → the merged log's (the same name is the same id).
    let ids: Vec<BTreeMap<u64, u64>> =
        logs.iter().map(|l| l.names.iter().map(|(id, name)| (*id, out.name_id(name))).collect()).collect();
    let id = |i: usize, old: u64| ids[i].get(&old).copied().unwrap_or(old);
    let (posix, mpiio, stdio) = (posix_counters(), mpiio_counters(), super::stdio::COUNTERS.map(String::from));
    let modules: [(&[String], &[&str], RecordsOf); 3] = [
        (&posix, &POSIX_FCOUNTERS, |l| &l.posix),
        (&mpiio, &MPIIO_FCOUNTERS, |l| &l.mpiio),
        (&stdio, &super::stdio::FCOUNTERS, |l| &l.stdio),
    ];
    let mut merged = vec![];
    for (counters, fcounters, records) in modules {
        let module = Module::new(counters, fcounters);
        let mut by_id: BTreeMap<u64, Vec<(usize, Rank)>> = BTreeMap::new();
        for (i, log) in logs.iter().enumerate() {
            for r in records(log) {
                let r = Record { id: id(i, r.id), ..module.shifted(r, shifts[i]) };
                by_id.entry(r.id).or_default().push((i, module.rank(r, log.job.nprocs)));
            }
        }
        merged.push(by_id.into_values().flat_map(|rs| module.join(rs)).collect::<Vec<_>>());
    }
    let [p, m, s]: [Vec<Record>; 3] = merged.try_into().expect("three modules");
    (out.posix, out.mpiio, out.stdio) = (p, m, s);
    for (i, log) in logs.iter().enumerate() {
        let moved = |r: &DxtRecord| DxtRecord { id: id(i, r.id), ..shifted_dxt(r, shifts[i]) };
        out.dxt_posix.extend(log.dxt_posix.iter().map(moved));
        out.dxt_mpiio.extend(log.dxt_mpiio.iter().map(moved));
    }
    Ok(out)
}

/// The job of all logs: earliest start, latest end, processes summed, the
/// first log's user, executable and metadata with the `EBQ_*` counts summed.
fn merged_job(logs: &[Log]) -> Job {
    let first = &logs[0].job;
    let mut metadata: Vec<(String, String)> = vec![];
    let mut mounts: Vec<(String, String)> = vec![];
    for job in logs.iter().map(|l| &l.job) {
        for (k, v) in &job.metadata {
            match metadata.iter_mut().find(|(mk, _)| mk == k) {
                Some((_, mv)) if k.starts_with("EBQ_") => {
                    if let (Ok(a), Ok(b)) = (mv.parse::<i64>(), v.parse::<i64>()) {
                        *mv = (a + b).to_string();
                    }
                }
                Some(_) => {}
                None => metadata.push((k.clone(), v.clone())),
            }
        }
        for m in &job.mounts {
            if !mounts.contains(m) {
                mounts.push(m.clone());
            }
        }
    }
    Job {
        uid: first.uid,
        jobid: first.jobid,
        nprocs: logs.iter().map(|l| l.job.nprocs).sum(),
        start: logs.iter().map(|l| l.job.start).min().expect("one log"),
        end: logs.iter().map(|l| l.job.end).max().expect("one log"),
        metadata,
        exe: first.exe.clone(),
        mounts,
    }
}

/// `later − earlier` in seconds, both (seconds, nanoseconds).
fn seconds_between(earlier: (i64, i64), later: (i64, i64)) -> f64 {
    (later.0 - earlier.0) as f64 + (later.1 - earlier.1) as f64 / 1e9
}

fn shifted_dxt(r: &DxtRecord, by: f64) -> DxtRecord {
    let mut r = r.clone();
    for s in r.writes.iter_mut().chain(r.reads.iter_mut()) {
        (s.start, s.end) = (s.start + by, s.end + by);
    }
    r
}

/// A record with what the reduction needs of its ranks: how many, and the
/// sum and sum of squared deviations of their time and bytes.
struct Rank {
    record: Record,
    time: Moments,
    bytes: Moments,
}

/// Count, total and sum of squared deviations from the mean of a value over
/// ranks (`struct darshan_variance_dt`: n, T, S).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Moments {
    n: f64,
    total: f64,
    squares: f64,
}

impl Moments {
    /// Chan's pairwise combination, as `darshan_variance_reduce`.
    fn join(self, o: Moments) -> Moments {
        let n = self.n + o.n;
        let delta = o.total / o.n - self.total / self.n;
        Moments { n, total: self.total + o.total, squares: self.squares + o.squares + delta * delta * self.n * o.n / n }
    }

    fn variance(self) -> f64 {
        self.squares / self.n
    }
}

/// A module's counters by role, found by their Darshan names.
struct Module<'a> {
    counters: &'a [String],
    fcounters: &'a [&'a str],
    /// The module's prefix: `POSIX`, `MPIIO`, `STDIO`.
    prefix: String,
}

impl<'a> Module<'a> {
    fn new(counters: &'a [String], fcounters: &'a [&'a str]) -> Module<'a> {
        let prefix = counters[0].split('_').next().unwrap_or_default().to_string();
        Module { counters, fcounters, prefix }
    }

    fn c(&self, suffix: &str) -> usize {
        let name = format!("{}_{suffix}", self.prefix);
        self.counters.iter().position(|c| *c == name).unwrap_or_else(|| panic!("{name} is a counter"))
    }

    fn f(&self, suffix: &str) -> usize {
        let name = format!("{}_F_{suffix}", self.prefix);
        self.fcounters.iter().position(|c| *c == name).unwrap_or_else(|| panic!("{name} is an fcounter"))
    }

    fn time(&self, r: &Record) -> f64 {
        ["READ_TIME", "WRITE_TIME", "META_TIME"].iter().map(|k| r.fcounters[self.f(k)]).sum()
    }

    fn bytes(&self, r: &Record) -> i64 {
        r.counters[self.c("BYTES_READ")] + r.counters[self.c("BYTES_WRITTEN")]
    }

    /// `r` with its timestamps (not 0: never) moved `by` seconds.
    fn shifted(&self, r: &Record, by: f64) -> Record {
        let mut r = r.clone();
        for (i, name) in self.fcounters.iter().enumerate() {
            if name.ends_with("_TIMESTAMP") && r.fcounters[i] != 0.0 {
                r.fcounters[i] += by;
            }
        }
        r
    }

    /// A record as the reduction takes it: a rank's own record (rank ≥ 0) is
    /// its own fastest and slowest rank; a reduced one (rank −1) stands for
    /// the `nprocs` processes of its log.
    fn rank(&self, mut r: Record, nprocs: i64) -> Rank {
        let (time, bytes) = (self.time(&r), self.bytes(&r));
        if r.rank >= 0 {
            for (who, rank) in [("FASTEST_RANK", r.rank), ("SLOWEST_RANK", r.rank)] {
                r.counters[self.c(who)] = rank;
                r.counters[self.c(&format!("{who}_BYTES"))] = bytes;
                r.fcounters[self.f(&format!("{who}_TIME"))] = time;
            }
            let one = |v: f64| Moments { n: 1.0, total: v, squares: 0.0 };
            return Rank { time: one(time), bytes: one(bytes as f64), record: r };
        }
        let n = nprocs.max(1) as f64;
        let (vt, vb) = (r.fcounters[self.f("VARIANCE_RANK_TIME")], r.fcounters[self.f("VARIANCE_RANK_BYTES")]);
        Rank {
            time: Moments { n, total: time, squares: vt * n },
            bytes: Moments { n, total: bytes as f64, squares: vb * n },
            record: r,
        }
    }

    /// One file's records (log index, record): kept when all are one log's,
    /// else reduced into one record of rank −1.
    fn join(&self, records: Vec<(usize, Rank)>) -> Vec<Record> {
        if records.iter().all(|(i, _)| *i == records[0].0) {
            return records.into_iter().map(|(_, r)| r.record).collect();
        }
        let ranks: Vec<Rank> = records.into_iter().map(|(_, r)| r).collect();
        vec![self.reduce(&ranks)]
    }

    /// Darshan's shared-file reduction of `ranks` (two at least).
    fn reduce(&self, ranks: &[Rank]) -> Record {
        let recs: Vec<&Record> = ranks.iter().map(|r| &r.record).collect();
        let mut out = Record {
            id: recs[0].id,
            rank: -1,
            counters: vec![0; self.counters.len()],
            fcounters: vec![0.0; self.fcounters.len()],
        };
        let last = recs[recs.len() - 1];
        for (j, name) in self.counters.iter().enumerate() {
            let values = recs.iter().map(|r| r.counters[j]);
            out.counters[j] = if name.contains("_MAX_BYTE_") {
                values.max().unwrap_or(0)
            } else if ["_MODE", "_RENAMED_FROM", "_MEM_ALIGNMENT", "_FILE_ALIGNMENT"].iter().any(|s| name.ends_with(s))
            {
                last.counters[j]
            } else {
                values.sum()
            };
        }
        for (j, name) in self.fcounters.iter().enumerate() {
            let values = recs.iter().map(|r| r.fcounters[j]);
            out.fcounters[j] = if name.ends_with("_START_TIMESTAMP") {
                values.filter(|v| *v > 0.0).min_by(f64::total_cmp).unwrap_or(0.0)
            } else if name.ends_with("_END_TIMESTAMP") {
                values.max_by(f64::total_cmp).unwrap_or(0.0)
            } else {
                values.sum()
            };
        }
        self.max_times(&recs, &mut out);
        self.common_values(&recs, &mut out);
        self.fastest_and_slowest(&recs, &mut out);
        let join = |m: fn(&Rank) -> Moments| ranks.iter().map(m).reduce(Moments::join).expect("two ranks");
        out.fcounters[self.f("VARIANCE_RANK_TIME")] = join(|r| r.time).variance();
        out.fcounters[self.f("VARIANCE_RANK_BYTES")] = join(|r| r.bytes).variance();
        out
    }

    /// `*_F_MAX_{READ,WRITE}_TIME`: the longest, with its `*_MAX_*_TIME_SIZE` (STDIO has none).
    fn max_times(&self, recs: &[&Record], out: &mut Record) {
        let name = |s: &str| format!("{}_F_MAX_{s}_TIME", self.prefix);
        for dir in ["READ", "WRITE"] {
            let Some(f) = self.fcounters.iter().position(|c| *c == name(dir)) else { continue };
            let c = self.c(&format!("MAX_{dir}_TIME_SIZE"));
            // The first of equal maxima, as Darshan keeps the record it holds unless beaten.
            let top = recs.iter().fold(recs[0], |a, b| if b.fcounters[f] > a.fcounters[f] { b } else { a });
            (out.fcounters[f], out.counters[c]) = (top.fcounters[f], top.counters[c]);
        }
    }

    /// The four common access sizes (and strides): counts merged by value, the four most frequent.
    fn common_values(&self, recs: &[&Record], out: &mut Record) {
        for kind in ["ACCESS", "STRIDE"] {
            let slot = |i: usize, what: &str| {
                let name = format!("{}_{kind}{i}_{what}", self.prefix);
                self.counters.iter().position(|c| *c == name)
            };
            let Some(_) = slot(1, kind) else { continue };
            let mut counts: BTreeMap<i64, i64> = BTreeMap::new();
            for r in recs {
                for i in 1..=4 {
                    let (v, n) =
                        (r.counters[slot(i, kind).expect("4 slots")], r.counters[slot(i, "COUNT").expect("4")]);
                    *counts.entry(v).or_insert(0) += n;
                }
            }
            let top = super::posix::top4(counts.into_iter());
            for i in 1..=4 {
                let (v, n) = top.get(i - 1).copied().unwrap_or((0, 0));
                out.counters[slot(i, kind).expect("4 slots")] = v;
                out.counters[slot(i, "COUNT").expect("4 slots")] = n;
            }
        }
    }

    /// The fastest and slowest rank by time (the lower rank on a tie), with their bytes and time.
    fn fastest_and_slowest(&self, recs: &[&Record], out: &mut Record) {
        for (who, slowest) in [("FASTEST_RANK", false), ("SLOWEST_RANK", true)] {
            let (rank, bytes, time) = (self.c(who), self.c(&format!("{who}_BYTES")), self.f(&format!("{who}_TIME")));
            let key = |r: &&&Record| (r.fcounters[time], r.counters[rank]);
            let pick = |a: &&&Record, b: &&&Record| {
                let ((ta, ra), (tb, rb)) = (key(a), key(b));
                let by_time = if slowest { tb.total_cmp(&ta) } else { ta.total_cmp(&tb) };
                by_time.then(ra.cmp(&rb))
            };
            let r = recs.iter().min_by(pick).expect("two records");
            (out.counters[rank], out.counters[bytes], out.fcounters[time]) =
                (r.counters[rank], r.counters[bytes], r.fcounters[time]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::darshan_log::Segment;

    /// A node's log of one job with `nprocs` processes, started at `start_ns` past a second.
    fn node_log(nprocs: i64, start_ns: i64) -> Log {
        let job = Job {
            uid: 1,
            jobid: 42,
            nprocs,
            start: (1_700_000_000, start_ns),
            end: (1_700_000_009, 0),
            metadata: vec![("lib_ver".into(), "ebq-test".into()), ("EBQ_ERRORS".into(), "2".into())],
            exe: "app".into(),
            mounts: vec![("ext4".into(), "/".into())],
        };
        Log { job, ..Log::default() }
    }

    fn counter(name: &str) -> usize {
        posix_counters().iter().position(|c| c == name).unwrap()
    }

    fn fcounter(name: &str) -> usize {
        POSIX_FCOUNTERS.iter().position(|c| *c == name).unwrap()
    }

    /// A POSIX record of `rank`: `writes` writes of `size` bytes over `write_s` seconds, opened at `open_s`.
    fn posix(log: &mut Log, name: &str, rank: i64, writes: i64, size: i64, write_s: f64, open_s: f64) {
        let id = log.name_id(name);
        let mut c = vec![0; posix_counters().len()];
        let mut f = vec![0.0; POSIX_FCOUNTERS.len()];
        c[counter("POSIX_OPENS")] = 1;
        c[counter("POSIX_WRITES")] = writes;
        c[counter("POSIX_BYTES_WRITTEN")] = writes * size;
        c[counter("POSIX_MAX_BYTE_WRITTEN")] = rank * 1000 + writes * size - 1;
        c[counter("POSIX_MODE")] = 0o644;
        c[counter("POSIX_ACCESS1_ACCESS")] = size;
        c[counter("POSIX_ACCESS1_COUNT")] = writes;
        c[counter("POSIX_MAX_WRITE_TIME_SIZE")] = size;
        f[fcounter("POSIX_F_OPEN_START_TIMESTAMP")] = open_s;
        f[fcounter("POSIX_F_WRITE_END_TIMESTAMP")] = open_s + write_s;
        f[fcounter("POSIX_F_WRITE_TIME")] = write_s;
        f[fcounter("POSIX_F_MAX_WRITE_TIME")] = write_s / writes as f64;
        log.posix.push(Record { id, rank, counters: c, fcounters: f });
    }

    /// Two ranks on two nodes become one record of rank −1: sums, extremes,
    /// the fastest and slowest rank and the variances, timestamps moved to
    /// the earliest start.
    #[test]
    fn a_file_on_two_nodes_is_one_shared_record() {
        let (mut a, mut b) = (node_log(1, 0), node_log(1, 500_000_000));
        posix(&mut a, "/tmp/shared", 0, 4, 100, 0.4, 1.0);
        posix(&mut b, "/tmp/shared", 1, 2, 300, 0.1, 0.25);
        posix(&mut b, "/tmp/own", 1, 1, 10, 0.01, 2.0);
        let m = merge(&[a, b], &["a".into(), "b".into()]).unwrap();
        assert_eq!((m.job.nprocs, m.job.start, m.job.jobid), (2, (1_700_000_000, 0), 42));
        assert!(m.job.metadata.contains(&("EBQ_ERRORS".into(), "4".into())));
        assert_eq!(m.names.len(), 2);
        let shared = m.posix.iter().find(|r| m.names[&r.id] == "/tmp/shared").unwrap();
        let own = m.posix.iter().find(|r| m.names[&r.id] == "/tmp/own").unwrap();
        assert_eq!(own.rank, 1, "a file of one node keeps its record");
        assert_eq!(own.fcounters[fcounter("POSIX_F_OPEN_START_TIMESTAMP")], 2.5);
        assert_eq!(shared.rank, -1);
        let c = |n: &str| shared.counters[counter(n)];
        let f = |n: &str| shared.fcounters[fcounter(n)];
        assert_eq!((c("POSIX_OPENS"), c("POSIX_WRITES"), c("POSIX_BYTES_WRITTEN")), (2, 6, 1000));
        assert_eq!(c("POSIX_MAX_BYTE_WRITTEN"), 1599);
        assert_eq!(c("POSIX_MODE"), 0o644);
        // Access sizes: the most frequent first.
        assert_eq!((c("POSIX_ACCESS1_ACCESS"), c("POSIX_ACCESS1_COUNT")), (100, 4));
        assert_eq!((c("POSIX_ACCESS2_ACCESS"), c("POSIX_ACCESS2_COUNT")), (300, 2));
        // b's open at 0.25 s of its log is 0.75 s of the job's; a's at 1.0 s.
        assert_eq!(f("POSIX_F_OPEN_START_TIMESTAMP"), 0.75);
        assert_eq!(f("POSIX_F_WRITE_END_TIMESTAMP"), 1.4);
        assert!((f("POSIX_F_WRITE_TIME") - 0.5).abs() < 1e-12);
        // The longest write: a's 0.1 s of 100 bytes (b's is 0.05 s).
        assert_eq!((f("POSIX_F_MAX_WRITE_TIME"), c("POSIX_MAX_WRITE_TIME_SIZE")), (0.1, 100));
        assert_eq!(
            (c("POSIX_FASTEST_RANK"), c("POSIX_FASTEST_RANK_BYTES"), f("POSIX_F_FASTEST_RANK_TIME")),
            (1, 600, 0.1)
        );
        assert_eq!(
            (c("POSIX_SLOWEST_RANK"), c("POSIX_SLOWEST_RANK_BYTES"), f("POSIX_F_SLOWEST_RANK_TIME")),
            (0, 400, 0.4)
        );
        // Two ranks: the variance is the half-difference squared.
        assert!((f("POSIX_F_VARIANCE_RANK_TIME") - 0.15f64.powi(2)).abs() < 1e-12);
        assert_eq!(f("POSIX_F_VARIANCE_RANK_BYTES"), 100.0 * 100.0);
    }

    /// A record already reduced on its node (rank −1 over its 2 processes)
    /// joins a third rank as if all three had been reduced at once.
    #[test]
    fn reduced_records_join_as_their_ranks_would() {
        let module_c = posix_counters();
        let module = Module::new(&module_c, &POSIX_FCOUNTERS);
        let (mut one, mut two, mut three) = (node_log(1, 0), node_log(1, 0), node_log(1, 0));
        posix(&mut one, "/f", 0, 1, 100, 0.1, 1.0);
        posix(&mut two, "/f", 1, 3, 100, 0.2, 1.0);
        posix(&mut three, "/f", 2, 2, 400, 0.6, 1.0);
        let rank = |l: &Log| module.rank(l.posix[0].clone(), 1);
        let all = module.reduce(&[rank(&one), rank(&two), rank(&three)]);
        let mut node = module.reduce(&[rank(&one), rank(&two)]);
        node.rank = -1;
        let pair = module.reduce(&[module.rank(node, 2), rank(&three)]);
        assert_eq!(pair.counters, all.counters);
        for (i, name) in POSIX_FCOUNTERS.iter().enumerate() {
            assert!(
                (pair.fcounters[i] - all.fcounters[i]).abs() < 1e-12,
                "{name}: {} vs {}",
                pair.fcounters[i],
                all.fcounters[i]
            );
        }
        // Bytes 100, 300, 800: mean 400, variance (90000 + 10000 + 160000) / 3.
        assert!((all.fcounters[fcounter("POSIX_F_VARIANCE_RANK_BYTES")] - 260000.0 / 3.0).abs() < 1e-6);
    }

    /// STDIO has no longest-call or common-value counters: the other rules apply.
    #[test]
    fn stdio_records_of_two_nodes_reduce_too() {
        use crate::stdio::{COUNTERS, FCOUNTERS};
        let (mut a, mut b) = (node_log(1, 0), node_log(1, 0));
        for (log, rank, writes, time) in [(&mut a, 0, 3, 0.5), (&mut b, 1, 5, 0.25)] {
            let id = log.name_id("/tmp/out.txt");
            let mut c = vec![0; COUNTERS.len()];
            let mut f = vec![0.0; FCOUNTERS.len()];
            c[COUNTERS.iter().position(|n| *n == "STDIO_WRITES").unwrap()] = writes;
            c[COUNTERS.iter().position(|n| *n == "STDIO_BYTES_WRITTEN").unwrap()] = writes * 10;
            f[FCOUNTERS.iter().position(|n| *n == "STDIO_F_WRITE_TIME").unwrap()] = time;
            log.stdio.push(Record { id, rank, counters: c, fcounters: f });
        }
        let m = merge(&[a, b], &["a".into(), "b".into()]).unwrap();
        assert_eq!(m.stdio.len(), 1);
        let r = &m.stdio[0];
        let c = |n: &str| r.counters[COUNTERS.iter().position(|x| *x == n).unwrap()];
        assert_eq!((r.rank, c("STDIO_WRITES"), c("STDIO_BYTES_WRITTEN")), (-1, 8, 80));
        assert_eq!((c("STDIO_FASTEST_RANK"), c("STDIO_FASTEST_RANK_BYTES")), (1, 50));
        assert_eq!((c("STDIO_SLOWEST_RANK"), c("STDIO_SLOWEST_RANK_BYTES")), (0, 30));
        let f = |n: &str| r.fcounters[FCOUNTERS.iter().position(|x| *x == n).unwrap()];
        assert_eq!((f("STDIO_F_WRITE_TIME"), f("STDIO_F_VARIANCE_RANK_BYTES")), (0.75, 100.0));
    }

    #[test]
    fn logs_of_different_jobs_are_refused() {
        let (a, mut b) = (node_log(1, 0), node_log(1, 0));
        b.job.jobid = 43;
        let err = merge(&[a, b], &["n1.darshan".into(), "n2.darshan".into()]).unwrap_err();
        assert!(err.starts_with("n2.darshan: job id 43 differs from n1.darshan's (42)"), "{err}");
        assert_eq!(merge(&[], &[]).unwrap_err(), "no log to merge");
    }

    /// DXT segments move to the merged start like the counters' timestamps.
    #[test]
    fn dxt_segments_move_to_the_jobs_start() {
        let (a, mut b) = (node_log(1, 0), node_log(1, 250_000_000));
        let id = b.name_id("/f");
        let seg = Segment { offset: 0, length: 8, start: 1.0, end: 1.5 };
        b.dxt_posix.push(DxtRecord { id, rank: 1, hostname: "n2".into(), writes: vec![seg], reads: vec![] });
        let m = merge(&[a, b], &["a".into(), "b".into()]).unwrap();
        assert_eq!(m.dxt_posix.len(), 1);
        assert_eq!((m.dxt_posix[0].writes[0].start, m.dxt_posix[0].writes[0].end), (1.25, 1.75));
    }
}

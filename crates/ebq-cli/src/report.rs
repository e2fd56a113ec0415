//! `ebq report io`: a Darshan-style I/O characterization built from one ebq
//! query. The kernel pairs every file system call's entry with its exit (a
//! JOIN of `raw_syscalls` enter/exit by thread and call number) and streams
//! one row per call with the file behind the fd (CO-RE file columns), the
//! size asked for, the offset, the result and the latency. User space folds
//! the rows, in time order, into per-file and per-file-system counters.

use ebq::runtime::{Output, Value};
use ebq::sink::{rows, Sink};
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

/// The query behind the report: column order is what [`Op::from_row`] reads.
pub const SQL: &str = "SELECT e.time, e.id, e.inode, e.dev_major, e.dev_minor, e.fs_type, e.mount_point, e.file_name, \
x.inode, x.dev_major, x.dev_minor, x.file_name, args[2] AS size, \
CASE WHEN e.id IN (syscall_nr('pread64'), syscall_nr('pwrite64')) THEN args[3] ELSE e.file_pos END AS offset, \
x.ret, x.time - e.time AS latency \
FROM raw_syscalls.sys_enter e JOIN raw_syscalls.sys_exit x ON e.tid = x.tid AND e.id = x.id \
WHERE e.id IN (syscall_nr('read'), syscall_nr('pread64'), syscall_nr('write'), syscall_nr('pwrite64'), \
syscall_nr('open'), syscall_nr('openat'), syscall_nr('creat'), syscall_nr('close'), syscall_nr('lseek'), \
syscall_nr('fsync'), syscall_nr('fdatasync'))";

/// Darshan's access-size buckets (upper bounds, exclusive; the last is open).
pub const SIZE_BUCKETS: [(&str, u64); 10] = [
    ("0-100", 100),
    ("100-1K", 1 << 10),
    ("1K-10K", 10 << 10),
    ("10K-100K", 100 << 10),
    ("100K-1M", 1 << 20),
    ("1M-4M", 4 << 20),
    ("4M-10M", 10 << 20),
    ("10M-100M", 100 << 20),
    ("100M-1G", 1 << 30),
    ("1G+", u64::MAX),
];

#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    Read,
    Write,
    Open,
    Meta,
}

/// One file, by (major, minor, inode).
#[derive(Default, Clone)]
struct FileStats {
    name: String,
    fs_type: String,
    mount_point: String,
    opens: u64,
    reads: u64,
    writes: u64,
    meta_ops: u64,
    bytes_read: u64,
    bytes_written: u64,
    seq_reads: u64,
    consec_reads: u64,
    seq_writes: u64,
    consec_writes: u64,
    sizes: [u64; 10],
    read_ns: u64,
    write_ns: u64,
    meta_ns: u64,
    max_ns: u64,
    /// End of the last read / write (offset + bytes), for sequentiality.
    last_read_end: Option<u64>,
    last_write_end: Option<u64>,
}

type FileKey = (u64, u64, u64);

/// The slowest call: file name, kind, latency in ns.
type Slowest = (String, &'static str, u64);

/// One traced call.
struct Op {
    time: u64,
    kind: Kind,
    key: FileKey,
    name: String,
    fs_type: String,
    mount_point: String,
    size: u64,
    offset: u64,
    ret: i64,
    latency: u64,
}

fn num(v: &Value) -> u64 {
    match v {
        Value::U(x) => *x,
        Value::I(x) => *x as u64,
        _ => 0,
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::S(s) => s.clone(),
        _ => String::new(),
    }
}

impl Op {
    fn from_row(r: &[Value], kinds: &HashMap<i64, Kind>) -> Option<Op> {
        let kind = kinds.get(&(num(&r[1]) as i64)).copied().unwrap_or(Kind::Meta);
        // Opens name the file by the fd they return (exit side: inode, device and
        // name; its file system comes from the file's other calls); the rest by their fd argument.
        let (f, open) = if kind == Kind::Open { (8, true) } else { (2, false) };
        let inode = num(&r[f]);
        if inode == 0 {
            return None; // not a file: a failed call, a bad fd, a pipe or socket without an inode
        }
        Some(Op {
            time: num(&r[0]),
            kind,
            key: (num(&r[f + 1]), num(&r[f + 2]), inode),
            fs_type: if open { String::new() } else { text(&r[5]) },
            mount_point: if open { String::new() } else { text(&r[6]) },
            name: text(&r[if open { 11 } else { 7 }]),
            size: num(&r[12]),
            offset: num(&r[13]),
            ret: num(&r[14]) as i64,
            latency: num(&r[15]),
        })
    }
}

impl FileStats {
    fn add(&mut self, op: &Op) {
        self.name.clone_from(&op.name);
        if !op.fs_type.is_empty() {
            self.fs_type.clone_from(&op.fs_type);
            self.mount_point.clone_from(&op.mount_point);
        }
        self.max_ns = self.max_ns.max(op.latency);
        let done = op.ret.max(0) as u64;
        match op.kind {
            Kind::Open => {
                self.opens += 1;
                self.meta_ns += op.latency;
            }
            Kind::Meta => {
                self.meta_ops += 1;
                self.meta_ns += op.latency;
            }
            Kind::Read | Kind::Write => {
                let bucket = SIZE_BUCKETS.iter().position(|(_, hi)| op.size < *hi).unwrap_or(9);
                self.sizes[bucket] += 1;
                let (count, bytes, ns, seq, consec, last) = if op.kind == Kind::Read {
                    (
                        &mut self.reads,
                        &mut self.bytes_read,
                        &mut self.read_ns,
                        &mut self.seq_reads,
                        &mut self.consec_reads,
                        &mut self.last_read_end,
                    )
                } else {
                    (
                        &mut self.writes,
                        &mut self.bytes_written,
                        &mut self.write_ns,
                        &mut self.seq_writes,
                        &mut self.consec_writes,
                        &mut self.last_write_end,
                    )
                };
                *count += 1;
                *bytes += done;
                *ns += op.latency;
                // Darshan: consecutive = starts where the previous one ended; sequential = at or after it.
                if let Some(end) = *last {
                    if op.offset >= end {
                        *seq += 1;
                    }
                    if op.offset == end {
                        *consec += 1;
                    }
                }
                *last = Some(op.offset + done);
            }
        }
    }

    fn json(&self) -> serde_json::Value {
        let sizes: serde_json::Map<String, serde_json::Value> =
            SIZE_BUCKETS.iter().zip(self.sizes).map(|((n, _), c)| (n.to_string(), json!(c))).collect();
        json!({
            "file_name": self.name, "fs_type": self.fs_type, "mount_point": self.mount_point,
            "opens": self.opens, "reads": self.reads, "writes": self.writes, "meta_ops": self.meta_ops,
            "bytes_read": self.bytes_read, "bytes_written": self.bytes_written,
            "seq_reads": self.seq_reads, "consec_reads": self.consec_reads,
            "seq_writes": self.seq_writes, "consec_writes": self.consec_writes,
            "access_sizes": sizes,
            "read_time_ns": self.read_ns, "write_time_ns": self.write_ns, "meta_time_ns": self.meta_ns,
            "slowest_op_ns": self.max_ns,
        })
    }
}

/// Collects the query's rows; prints the report when the run ends.
pub struct IoReport {
    ops: Vec<Op>,
    json: bool,
    /// System call number → kind, looked up once rather than per row.
    kinds: HashMap<i64, Kind>,
}

impl IoReport {
    /// A report written as text, or as one JSON document.
    pub fn new(json: bool) -> IoReport {
        let named = [
            ("read", Kind::Read),
            ("pread64", Kind::Read),
            ("write", Kind::Write),
            ("pwrite64", Kind::Write),
            ("open", Kind::Open),
            ("openat", Kind::Open),
            ("creat", Kind::Open),
        ];
        let kinds = named.into_iter().filter_map(|(n, k)| Some((ebq::catalog::syscall_nr(n)?, k))).collect();
        IoReport { ops: vec![], json, kinds }
    }

    fn build(&mut self) -> (BTreeMap<FileKey, FileStats>, Option<Slowest>) {
        // Ring buffer records arrive per CPU: order them in time before tracking offsets.
        self.ops.sort_by_key(|o| o.time);
        let mut files: BTreeMap<FileKey, FileStats> = BTreeMap::new();
        let mut slowest: Option<Slowest> = None;
        for op in &self.ops {
            files.entry(op.key).or_default().add(op);
            if slowest.as_ref().is_none_or(|s| op.latency > s.2) {
                let what = match op.kind {
                    Kind::Read => "read",
                    Kind::Write => "write",
                    Kind::Open => "open",
                    Kind::Meta => "meta",
                };
                slowest = Some((op.name.clone(), what, op.latency));
            }
        }
        (files, slowest)
    }
}

/// Per (fs_type, mount_point): the files' counters summed.
fn per_fs(files: &BTreeMap<FileKey, FileStats>) -> BTreeMap<(String, String), (u64, FileStats)> {
    let mut out: BTreeMap<(String, String), (u64, FileStats)> = BTreeMap::new();
    for f in files.values() {
        let e = out.entry((f.fs_type.clone(), f.mount_point.clone())).or_default();
        e.0 += 1;
        let t = &mut e.1;
        t.opens += f.opens;
        t.reads += f.reads;
        t.writes += f.writes;
        t.meta_ops += f.meta_ops;
        t.bytes_read += f.bytes_read;
        t.bytes_written += f.bytes_written;
        t.seq_reads += f.seq_reads;
        t.consec_reads += f.consec_reads;
        t.seq_writes += f.seq_writes;
        t.consec_writes += f.consec_writes;
        for (a, b) in t.sizes.iter_mut().zip(f.sizes) {
            *a += b;
        }
        t.read_ns += f.read_ns;
        t.write_ns += f.write_ns;
        t.meta_ns += f.meta_ns;
        t.max_ns = t.max_ns.max(f.max_ns);
        t.fs_type.clone_from(&f.fs_type);
        t.mount_point.clone_from(&f.mount_point);
    }
    out
}

impl Sink for IoReport {
    fn write(&mut self, out: &Output) -> io::Result<()> {
        self.ops.extend(rows(&out.batch).filter_map(|r| Op::from_row(&r, &self.kinds)));
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        let (files, slowest) = self.build();
        let fs = per_fs(&files);
        let mut out = io::stdout().lock();
        if self.json {
            let doc = json!({
                "files": files.iter().map(|((ma, mi, ino), f)| {
                    let mut v = f.json();
                    v["inode"] = json!(ino);
                    v["dev"] = json!(format!("{ma}:{mi}"));
                    v
                }).collect::<Vec<_>>(),
                "filesystems": fs.values().map(|(n, f)| { let mut v = f.json(); v["files"] = json!(n); v.as_object_mut().map(|o| o.remove("file_name")); v }).collect::<Vec<_>>(),
                "slowest": slowest.as_ref().map(|(f, k, ns)| json!({"file_name": f, "op": k, "latency_ns": ns})),
                "operations": self.ops.len(),
            });
            return writeln!(out, "{doc}");
        }
        let ms = |ns: u64| format!("{:.3}", ns as f64 / 1e6);
        writeln!(
            out,
            "I/O report: {} operations on {} files in {} file systems",
            self.ops.len(),
            files.len(),
            fs.len()
        )?;
        writeln!(out, "\nPer file system")?;
        writeln!(
            out,
            "{:<8} {:<24} {:>5} {:>6} {:>8} {:>8} {:>12} {:>12} {:>10} {:>10} {:>10}",
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
            "meta ms"
        )?;
        for ((fst, mnt), (n, f)) in &fs {
            writeln!(
                out,
                "{:<8} {:<24} {:>5} {:>6} {:>8} {:>8} {:>12} {:>12} {:>10} {:>10} {:>10}",
                fst,
                mnt,
                n,
                f.opens,
                f.reads,
                f.writes,
                f.bytes_read,
                f.bytes_written,
                ms(f.read_ns),
                ms(f.write_ns),
                ms(f.meta_ns)
            )?;
        }
        writeln!(out, "\nPer file")?;
        for ((ma, mi, ino), f) in &files {
            writeln!(out, "{} ({} {}, dev {ma}:{mi}, inode {ino})", f.name, f.fs_type, f.mount_point)?;
            writeln!(
                out,
                "  opens {}  reads {} ({} B, {} sequential, {} consecutive)  writes {} ({} B, {} sequential, {} consecutive)  meta {}",
                f.opens, f.reads, f.bytes_read, f.seq_reads, f.consec_reads, f.writes, f.bytes_written, f.seq_writes, f.consec_writes, f.meta_ops
            )?;
            writeln!(
                out,
                "  time ms: read {}  write {}  meta {}  slowest op {}",
                ms(f.read_ns),
                ms(f.write_ns),
                ms(f.meta_ns),
                ms(f.max_ns)
            )?;
            let sizes: Vec<String> = SIZE_BUCKETS
                .iter()
                .zip(f.sizes)
                .filter(|(_, c)| *c > 0)
                .map(|((n, _), c)| format!("{n}: {c}"))
                .collect();
            if !sizes.is_empty() {
                writeln!(out, "  access sizes: {}", sizes.join(", "))?;
            }
        }
        if let Some((f, k, ns)) = slowest {
            writeln!(out, "\nSlowest operation: {k} on {f}, {} ms", ms(ns))?;
        }
        Ok(())
    }
}

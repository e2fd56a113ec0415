//! `--darshan-log FILE`: the report as a binary Darshan log (format 3.41),
//! the file Darshan's runtime writes at a job's end, so that Darshan's own
//! tools (PyDarshan, `python -m darshan summary`, Drishti) read ebq's records.
//!
//! The layout, as darshan-util 3.5.0 reads it (`darshan-logutils.c`):
//! - an uncompressed header of 1,328 bytes: the version string "3.41" in 8
//!   bytes, the magic number 6567223 (i64; its byte order tells the reader
//!   the file's), the compression type (one byte, 0 = zlib), a u64 partial
//!   flag, the name region's (offset, length), then 64 module regions'
//!   (offset, length) and 64 module versions (u32); x86-64 padding applies;
//! - the job region right after the header (its length is the name region's
//!   offset minus the header's size): the job struct (uid, start and end
//!   sec/nsec, nprocs, job id as i64, 1,024 bytes of `key=value\n`
//!   metadata), the executable line, the mount table as `\n<type>\t<point>`
//!   lines, at most 4,096 bytes in all;
//! - the name region: per record a u64 id and the NUL-terminated name;
//! - one region per module: each record a base record (u64 id, i64 rank;
//!   −1 for a file all ranks share), its i64 counters and f64 fcounters in
//!   the order of the module's counter list ([`posix_counters`], …).
//!
//! Each region is one zlib stream of its own (the reader `inflateInit`s,
//! not gzip). Record ids are Darshan's [`darshan_hash`] of the name.

use super::buckets::BUCKETS;
use flate2::write::ZlibEncoder;
use flate2::Compression;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

const VERSION: &[u8; 4] = b"3.41";
const MAGIC: i64 = 6567223;
const MAX_MODS: usize = 64;
/// `sizeof(struct darshan_header)` in darshan-util 3.5.0 (x86-64).
pub const HEADER_SIZE: usize = 1328;
/// `DARSHAN_JOB_RECORD_SIZE`: the job struct, the executable and the mounts.
const JOB_RECORD_SIZE: usize = 4096;
/// `DARSHAN_JOB_METADATA_LEN`, its NUL included.
const METADATA_LEN: usize = 1024;
/// `sizeof(struct darshan_job)`: seven i64 and the metadata.
const JOB_STRUCT_SIZE: usize = 7 * 8 + METADATA_LEN;

/// A module's id in the header's maps and the record version the 3.5.0
/// reader accepts (it rejects newer ones: DXT_POSIX 2, DXT_MPIIO 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Module {
    Posix,
    MpiIo,
    Stdio,
    DxtPosix,
    DxtMpiIo,
}

impl Module {
    pub fn id(self) -> usize {
        match self {
            Module::Posix => 1,
            Module::MpiIo => 2,
            Module::Stdio => 9,
            Module::DxtPosix => 10,
            Module::DxtMpiIo => 11,
        }
    }

    pub fn version(self) -> u32 {
        match self {
            Module::Posix => 4,
            Module::MpiIo => 3,
            Module::Stdio => 2,
            Module::DxtPosix => 1,
            Module::DxtMpiIo => 2,
        }
    }
}

/// The job: who ran what, when, where.
#[derive(Clone, Debug, Default)]
pub struct Job {
    pub uid: i64,
    /// `SLURM_JOB_ID`, `PBS_JOBID` or `--job-id` (0 when none).
    pub jobid: i64,
    pub nprocs: i64,
    /// Wall clock (CLOCK_REALTIME) at the start and end: (seconds, nanoseconds).
    pub start: (i64, i64),
    pub end: (i64, i64),
    /// `key=value` lines (`lib_ver`, ebq's own counters…), cut at 1,023 bytes.
    pub metadata: Vec<(String, String)>,
    /// The command line.
    pub exe: String,
    /// (file system type, mount point).
    pub mounts: Vec<(String, String)>,
}

/// One record of a counters module (POSIX, MPI-IO, STDIO).
#[derive(Clone, Debug)]
pub struct Record {
    pub id: u64,
    /// −1: a file every rank shares.
    pub rank: i64,
    pub counters: Vec<i64>,
    pub fcounters: Vec<f64>,
}

/// One access of a DXT trace: seconds since the job's start.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Segment {
    pub offset: i64,
    pub length: i64,
    pub start: f64,
    pub end: f64,
}

/// One file's DXT trace on one rank.
#[derive(Clone, Debug)]
pub struct DxtRecord {
    pub id: u64,
    pub rank: i64,
    pub hostname: String,
    pub writes: Vec<Segment>,
    pub reads: Vec<Segment>,
}

/// A whole log: the job, the names, and each module's records.
#[derive(Clone, Debug, Default)]
pub struct Log {
    pub job: Job,
    /// Record id → name.
    pub names: BTreeMap<u64, String>,
    pub posix: Vec<Record>,
    pub mpiio: Vec<Record>,
    pub stdio: Vec<Record>,
    pub dxt_posix: Vec<DxtRecord>,
    pub dxt_mpiio: Vec<DxtRecord>,
}

impl Log {
    /// A name's record id, registered in the name region; a second name
    /// with the same hash gets the next free id, so records never merge.
    pub fn name_id(&mut self, name: &str) -> u64 {
        let mut id = darshan_hash(name.as_bytes());
        loop {
            match self.names.get(&id) {
                None => {
                    self.names.insert(id, name.to_string());
                    return id;
                }
                Some(n) if n == name => return id,
                Some(_) => id = id.wrapping_add(1),
            }
        }
    }

    /// The log's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut regions: Vec<(Option<Module>, Vec<u8>)> = vec![(None, self.job_region()), (None, self.name_region())];
        for (module, records) in
            [(Module::Posix, &self.posix), (Module::MpiIo, &self.mpiio), (Module::Stdio, &self.stdio)]
        {
            if !records.is_empty() {
                regions.push((Some(module), records.iter().flat_map(counters_record).collect()));
            }
        }
        for (module, records) in [(Module::DxtPosix, &self.dxt_posix), (Module::DxtMpiIo, &self.dxt_mpiio)] {
            if !records.is_empty() {
                regions.push((Some(module), records.iter().flat_map(dxt_record).collect()));
            }
        }
        let mut maps = [(0u64, 0u64); MAX_MODS];
        let mut versions = [0u32; MAX_MODS];
        let mut name_map = (0, 0);
        let mut body = vec![];
        for (i, (module, data)) in regions.iter().enumerate() {
            let z = zlib(data);
            let map = ((HEADER_SIZE + body.len()) as u64, z.len() as u64);
            match (i, module) {
                (1, _) => name_map = map,
                (_, Some(m)) => {
                    maps[m.id()] = map;
                    versions[m.id()] = m.version();
                }
                _ => {}
            }
            body.extend(z);
        }
        let mut out = Vec::with_capacity(HEADER_SIZE + body.len());
        let mut version = [0u8; 8];
        version[..4].copy_from_slice(VERSION);
        out.extend(version);
        out.extend(MAGIC.to_le_bytes());
        out.extend([0u8; 8]); // zlib (0), then padding to the u64 partial flag
        out.extend(0u64.to_le_bytes()); // not partial
        for (off, len) in std::iter::once(name_map).chain(maps) {
            out.extend(off.to_le_bytes());
            out.extend(len.to_le_bytes());
        }
        for v in versions {
            out.extend(v.to_le_bytes());
        }
        debug_assert_eq!(out.len(), HEADER_SIZE);
        out.extend(body);
        out
    }

    /// Writes the log to `path`.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        self.write_to(std::fs::File::create(path)?)
    }

    /// Writes the log to `out` (a file, a socket, memory).
    pub fn write_to(&self, mut out: impl std::io::Write) -> std::io::Result<()> {
        out.write_all(&self.to_bytes())?;
        out.flush()
    }

    /// The job struct, the executable, the mount table: at most 4,096 bytes
    /// with a NUL at the end (mounts that do not fit are left out, as the
    /// runtime does; a mount point with blanks cannot be parsed back).
    fn job_region(&self) -> Vec<u8> {
        let j = &self.job;
        let mut out = vec![];
        for v in [j.uid, j.start.0, j.start.1, j.end.0, j.end.1, j.nprocs, j.jobid] {
            out.extend(v.to_le_bytes());
        }
        let mut meta = vec![];
        for (k, v) in &j.metadata {
            let line = format!("{k}={v}\n");
            if meta.len() + line.len() < METADATA_LEN {
                meta.extend(line.bytes());
            }
        }
        meta.resize(METADATA_LEN, 0);
        out.extend(meta);
        let room = JOB_RECORD_SIZE - JOB_STRUCT_SIZE - 1;
        let exe: String = j.exe.replace('\n', " ").chars().take(room / 2).collect();
        out.extend(exe.bytes());
        let mut left = room - exe.len();
        for (fs_type, point) in &j.mounts {
            let line = format!("\n{fs_type}\t{point}");
            if fs_type.is_empty() || point.chars().any(char::is_whitespace) || line.len() > left {
                continue;
            }
            left -= line.len();
            out.extend(line.bytes());
        }
        out.push(0);
        out
    }

    fn name_region(&self) -> Vec<u8> {
        let mut out = vec![];
        for (id, name) in &self.names {
            out.extend(id.to_le_bytes());
            out.extend(name.bytes().filter(|b| *b != 0));
            out.push(0);
        }
        out
    }
}

fn counters_record(r: &Record) -> Vec<u8> {
    let mut out = vec![];
    out.extend(r.id.to_le_bytes());
    out.extend(r.rank.to_le_bytes());
    r.counters.iter().for_each(|c| out.extend(c.to_le_bytes()));
    r.fcounters.iter().for_each(|c| out.extend(c.to_le_bytes()));
    out
}

/// `struct dxt_file_record` (base record, shared flag, 64-byte host name,
/// write and read counts) then its writes' and reads' segments.
fn dxt_record(r: &DxtRecord) -> Vec<u8> {
    let mut out = vec![];
    out.extend(r.id.to_le_bytes());
    out.extend(r.rank.to_le_bytes());
    out.extend(0i64.to_le_bytes());
    let mut host = [0u8; 64];
    let h = r.hostname.as_bytes();
    host[..h.len().min(63)].copy_from_slice(&h[..h.len().min(63)]);
    out.extend(host);
    out.extend((r.writes.len() as i64).to_le_bytes());
    out.extend((r.reads.len() as i64).to_le_bytes());
    for s in r.writes.iter().chain(&r.reads) {
        out.extend(s.offset.to_le_bytes());
        out.extend(s.length.to_le_bytes());
        out.extend(s.start.to_le_bytes());
        out.extend(s.end.to_le_bytes());
    }
    out
}

fn zlib(data: &[u8]) -> Vec<u8> {
    let mut z = ZlibEncoder::new(Vec::new(), Compression::default());
    z.write_all(data).expect("compressing to memory");
    z.finish().expect("compressing to memory")
}

/// Darshan's record id of a name: Bob Jenkins' 64-bit hash (lookup8.c's
/// `hash`, Darshan's `darshan_hash(name, strlen(name), 0)`), so ebq's ids
/// equal Darshan's for the same name.
pub fn darshan_hash(k: &[u8]) -> u64 {
    fn mix(a: &mut u64, b: &mut u64, c: &mut u64) {
        for (s1, s2, s3) in [(43, 9, 8), (38, 23, 5), (35, 49, 11), (12, 18, 22)] {
            *a = a.wrapping_sub(*b).wrapping_sub(*c) ^ (*c >> s1);
            *b = b.wrapping_sub(*c).wrapping_sub(*a) ^ (*a << s2);
            *c = c.wrapping_sub(*a).wrapping_sub(*b) ^ (*b >> s3);
        }
    }
    let word = |b: &[u8]| b.iter().enumerate().fold(0u64, |w, (i, x)| w | (u64::from(*x) << (8 * i)));
    let (mut a, mut b, mut c) = (0u64, 0u64, 0x9e37_79b9_7f4a_7c13u64);
    let mut rest = k;
    while rest.len() >= 24 {
        a = a.wrapping_add(word(&rest[..8]));
        b = b.wrapping_add(word(&rest[8..16]));
        c = c.wrapping_add(word(&rest[16..24]));
        mix(&mut a, &mut b, &mut c);
        rest = &rest[24..];
    }
    c = c.wrapping_add(k.len() as u64);
    a = a.wrapping_add(word(&rest[..rest.len().min(8)]));
    if rest.len() > 8 {
        b = b.wrapping_add(word(&rest[8..rest.len().min(16)]));
    }
    if rest.len() > 16 {
        // The first byte of c is the length's.
        c = c.wrapping_add(word(&rest[16..]) << 8);
    }
    mix(&mut a, &mut b, &mut c);
    c
}

/// POSIX (version 4): the counters before the size buckets, in the log's order.
pub(crate) const POSIX_HEAD: [&str; 29] = [
    "POSIX_OPENS",
    "POSIX_FILENOS",
    "POSIX_DUPS",
    "POSIX_READS",
    "POSIX_WRITES",
    "POSIX_SEEKS",
    "POSIX_STATS",
    "POSIX_MMAPS",
    "POSIX_FSYNCS",
    "POSIX_FDSYNCS",
    "POSIX_RENAME_SOURCES",
    "POSIX_RENAME_TARGETS",
    "POSIX_RENAMED_FROM",
    "POSIX_MODE",
    "POSIX_BYTES_READ",
    "POSIX_BYTES_WRITTEN",
    "POSIX_MAX_BYTE_READ",
    "POSIX_MAX_BYTE_WRITTEN",
    "POSIX_CONSEC_READS",
    "POSIX_CONSEC_WRITES",
    "POSIX_SEQ_READS",
    "POSIX_SEQ_WRITES",
    "POSIX_RW_SWITCHES",
    "POSIX_MEM_NOT_ALIGNED",
    "POSIX_MEM_ALIGNMENT",
    "POSIX_FILE_NOT_ALIGNED",
    "POSIX_FILE_ALIGNMENT",
    "POSIX_MAX_READ_TIME_SIZE",
    "POSIX_MAX_WRITE_TIME_SIZE",
];

/// POSIX (version 4): its 69 counters in the log's order.
pub fn posix_counters() -> Vec<String> {
    let mut out: Vec<String> = POSIX_HEAD.iter().map(|c| c.to_string()).collect();
    out.extend(sizes("POSIX_SIZE_READ_").chain(sizes("POSIX_SIZE_WRITE_")));
    out.extend(slots("POSIX_STRIDE", "STRIDE"));
    out.extend(slots("POSIX_ACCESS", "ACCESS"));
    out.extend(ranks("POSIX"));
    out
}

/// The size buckets' counters: `PREFIX0_100` … `PREFIX1G_PLUS`.
fn sizes(prefix: &str) -> impl Iterator<Item = String> + '_ {
    BUCKETS.iter().map(move |b| format!("{prefix}{b}"))
}

/// The four common values' counters: `KIND1_WHAT` … `KIND4_WHAT`, then their `_COUNT`s.
fn slots(kind: &str, what: &str) -> Vec<String> {
    let names = |w: &str| (1..=4).map(|i| format!("{kind}{i}_{w}")).collect::<Vec<_>>();
    [names(what), names("COUNT")].concat()
}

/// The shared-file reduction's counters.
pub(crate) fn ranks(module: &str) -> Vec<String> {
    ["FASTEST_RANK", "FASTEST_RANK_BYTES", "SLOWEST_RANK", "SLOWEST_RANK_BYTES"]
        .iter()
        .map(|r| format!("{module}_{r}"))
        .collect()
}

/// POSIX (version 4): the float counters in the log's order.
pub const POSIX_FCOUNTERS: [&str; 17] = [
    "POSIX_F_OPEN_START_TIMESTAMP",
    "POSIX_F_READ_START_TIMESTAMP",
    "POSIX_F_WRITE_START_TIMESTAMP",
    "POSIX_F_CLOSE_START_TIMESTAMP",
    "POSIX_F_OPEN_END_TIMESTAMP",
    "POSIX_F_READ_END_TIMESTAMP",
    "POSIX_F_WRITE_END_TIMESTAMP",
    "POSIX_F_CLOSE_END_TIMESTAMP",
    "POSIX_F_READ_TIME",
    "POSIX_F_WRITE_TIME",
    "POSIX_F_META_TIME",
    "POSIX_F_MAX_READ_TIME",
    "POSIX_F_MAX_WRITE_TIME",
    "POSIX_F_FASTEST_RANK_TIME",
    "POSIX_F_SLOWEST_RANK_TIME",
    "POSIX_F_VARIANCE_RANK_TIME",
    "POSIX_F_VARIANCE_RANK_BYTES",
];

/// MPI-IO (version 3): the counters before the size buckets, in the log's order.
pub(crate) const MPIIO_HEAD: [&str; 19] = [
    "MPIIO_INDEP_OPENS",
    "MPIIO_COLL_OPENS",
    "MPIIO_INDEP_READS",
    "MPIIO_INDEP_WRITES",
    "MPIIO_COLL_READS",
    "MPIIO_COLL_WRITES",
    "MPIIO_SPLIT_READS",
    "MPIIO_SPLIT_WRITES",
    "MPIIO_NB_READS",
    "MPIIO_NB_WRITES",
    "MPIIO_SYNCS",
    "MPIIO_HINTS",
    "MPIIO_VIEWS",
    "MPIIO_MODE",
    "MPIIO_BYTES_READ",
    "MPIIO_BYTES_WRITTEN",
    "MPIIO_RW_SWITCHES",
    "MPIIO_MAX_READ_TIME_SIZE",
    "MPIIO_MAX_WRITE_TIME_SIZE",
];

/// MPI-IO (version 3): its 51 counters in the log's order.
pub fn mpiio_counters() -> Vec<String> {
    let mut out: Vec<String> = MPIIO_HEAD.iter().map(|c| c.to_string()).collect();
    out.extend(sizes("MPIIO_SIZE_READ_AGG_").chain(sizes("MPIIO_SIZE_WRITE_AGG_")));
    out.extend(slots("MPIIO_ACCESS", "ACCESS"));
    out.extend(ranks("MPIIO"));
    out
}

/// MPI-IO (version 3): the float counters in the log's order.
pub const MPIIO_FCOUNTERS: [&str; 17] = [
    "MPIIO_F_OPEN_START_TIMESTAMP",
    "MPIIO_F_READ_START_TIMESTAMP",
    "MPIIO_F_WRITE_START_TIMESTAMP",
    "MPIIO_F_CLOSE_START_TIMESTAMP",
    "MPIIO_F_OPEN_END_TIMESTAMP",
    "MPIIO_F_READ_END_TIMESTAMP",
    "MPIIO_F_WRITE_END_TIMESTAMP",
    "MPIIO_F_CLOSE_END_TIMESTAMP",
    "MPIIO_F_READ_TIME",
    "MPIIO_F_WRITE_TIME",
    "MPIIO_F_META_TIME",
    "MPIIO_F_MAX_READ_TIME",
    "MPIIO_F_MAX_WRITE_TIME",
    "MPIIO_F_FASTEST_RANK_TIME",
    "MPIIO_F_SLOWEST_RANK_TIME",
    "MPIIO_F_VARIANCE_RANK_TIME",
    "MPIIO_F_VARIANCE_RANK_BYTES",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_ids_are_darshans_hash() {
        // Ids of these names in the logs PyDarshan 3.5.0 ships (examples/example_logs).
        assert_eq!(darshan_hash(b"<STDIN>"), 14734109647742566553);
        assert_eq!(darshan_hash(b"/tmp/test/macsio-log.log"), 12580831639222665179);
    }

    #[test]
    fn header_is_darshan_utils_size_and_maps_the_regions() {
        let mut log = Log::default();
        let id = log.name_id("/tmp/a");
        log.posix.push(Record { id, rank: 0, counters: vec![1; posix_counters().len()], fcounters: vec![0.5; 17] });
        let bytes = log.to_bytes();
        assert_eq!(&bytes[..4], b"3.41");
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
        assert_eq!(u64_at(8), MAGIC as u64);
        // The name region follows the job region, which follows the header.
        let (name_off, name_len) = (u64_at(32) as usize, u64_at(40) as usize);
        assert!(name_off > HEADER_SIZE);
        let posix = 48 + 16 * Module::Posix.id();
        assert_eq!(u64_at(posix) as usize, name_off + name_len);
        assert_eq!(u64_at(posix) + u64_at(posix + 8), bytes.len() as u64);
        let ver_at = 48 + 16 * MAX_MODS + 4 * Module::Posix.id();
        assert_eq!(u32::from_le_bytes(bytes[ver_at..ver_at + 4].try_into().unwrap()), 4);
    }

    #[test]
    fn counter_lists_have_the_modules_lengths() {
        assert_eq!(posix_counters().len(), 69);
        assert_eq!(posix_counters()[29], "POSIX_SIZE_READ_0_100");
        assert_eq!(posix_counters()[68], "POSIX_SLOWEST_RANK_BYTES");
        assert_eq!(mpiio_counters().len(), 51);
        assert_eq!(mpiio_counters()[39], "MPIIO_ACCESS1_ACCESS");
    }

    #[test]
    fn names_with_one_hash_get_distinct_ids() {
        let mut log = Log::default();
        let a = log.name_id("x");
        assert_eq!(log.name_id("x"), a);
        log.names.insert(darshan_hash(b"y"), "z".into());
        assert_ne!(log.name_id("y"), darshan_hash(b"y"));
    }
}

//! Reading a Darshan log (format 3.41) back into a [`Log`]: what
//! `ebq report merge` needs to join the logs of one job's nodes
//! ([`super::merge`]). The layout is the one [`super::darshan_log`] writes
//! and darshan-util 3.5.0 reads; this reader takes the job record, the
//! names and the modules ebq writes (POSIX, MPI-IO, STDIO, DXT_POSIX,
//! DXT_MPIIO, at the versions it writes). A log of Darshan's own runtime
//! reads too when its modules are those; the ids of other modules (HEATMAP,
//! LUSTRE…) are returned so that the caller can say they were left out.

use super::darshan_log::{
    mpiio_counters, posix_counters, DxtRecord, Job, Log, Module, Record, Segment, HEADER_SIZE, MPIIO_FCOUNTERS,
    POSIX_FCOUNTERS,
};
use flate2::read::ZlibDecoder;
use std::io::Read;

/// A log read back, and the module ids it holds that were not read.
#[derive(Debug)]
pub struct ReadLog {
    pub log: Log,
    /// Modules with records this reader does not take (by id).
    pub skipped: Vec<usize>,
}

/// Darshan's name of module `id` (`darshan-log-format.h`), for messages.
pub fn module_name(id: usize) -> String {
    const NAMES: [&str; 18] = [
        "NULL",
        "POSIX",
        "MPI-IO",
        "H5F",
        "H5D",
        "PNETCDF_FILE",
        "PNETCDF_VAR",
        "BG/Q",
        "LUSTRE",
        "STDIO",
        "DXT_POSIX",
        "DXT_MPIIO",
        "MDHIM",
        "APXC",
        "APMPI",
        "HEATMAP",
        "DFS",
        "DAOS",
    ];
    NAMES.get(id).map_or_else(|| format!("module {id}"), |n| n.to_string())
}

/// Little-endian fields at a moving position, with the region's name in errors.
struct Cursor<'a> {
    data: &'a [u8],
    at: usize,
    what: &'a str,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.data.len()).ok_or_else(|| {
            format!("the {} ends at byte {} of {}, inside a field of {n} bytes", self.what, self.at, self.data.len())
        })?;
        let out = &self.data[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }

    fn i64(&mut self) -> Result<i64, String> {
        Ok(self.u64()? as i64)
    }

    fn f64(&mut self) -> Result<f64, String> {
        Ok(f64::from_bits(self.u64()?))
    }

    fn done(&self) -> bool {
        self.at >= self.data.len()
    }
}

/// The log in `bytes`; errors say which part is wrong and where.
pub fn read(bytes: &[u8]) -> Result<ReadLog, String> {
    let header = Header::parse(bytes)?;
    let region = |(off, len): (u64, u64), what: &str| -> Result<Vec<u8>, String> {
        let (off, len) = (off as usize, len as usize);
        let z = bytes.get(off..off.saturating_add(len)).ok_or_else(|| {
            format!(
                "the {what} region (bytes {off}..{}) is past the end of the file ({} bytes)",
                off + len,
                bytes.len()
            )
        })?;
        let mut out = vec![];
        ZlibDecoder::new(z).read_to_end(&mut out).map_err(|e| format!("the {what} region (byte {off}): zlib: {e}"))?;
        Ok(out)
    };
    let job_len = header.names.0.checked_sub(HEADER_SIZE as u64).ok_or("the name region starts inside the header")?;
    let job = read_job(&region((HEADER_SIZE as u64, job_len), "job")?)?;
    let mut log = Log { job, ..Log::default() };
    let names = region(header.names, "name")?;
    log.names = read_names(&names)?;
    let mut skipped = vec![];
    for (id, map) in header.modules.iter().enumerate() {
        if map.1 == 0 {
            continue;
        }
        let Some(module) = [Module::Posix, Module::MpiIo, Module::Stdio, Module::DxtPosix, Module::DxtMpiIo]
            .into_iter()
            .find(|m| m.id() == id)
        else {
            skipped.push(id);
            continue;
        };
        let name = module_name(id);
        if header.versions[id] != module.version() {
            return Err(format!(
                "module {name} is version {}; ebq reads version {} (Darshan 3.5.0's)",
                header.versions[id],
                module.version()
            ));
        }
        let data = region(*map, &name)?;
        let mut c = Cursor { data: &data, at: 0, what: &name };
        match module {
            Module::Posix => log.posix = counter_records(&mut c, posix_counters().len(), POSIX_FCOUNTERS.len())?,
            Module::MpiIo => log.mpiio = counter_records(&mut c, mpiio_counters().len(), MPIIO_FCOUNTERS.len())?,
            Module::Stdio => {
                log.stdio = counter_records(&mut c, super::stdio::COUNTERS.len(), super::stdio::FCOUNTERS.len())?
            }
            Module::DxtPosix => log.dxt_posix = dxt_records(&mut c)?,
            Module::DxtMpiIo => log.dxt_mpiio = dxt_records(&mut c)?,
        }
    }
    Ok(ReadLog { log, skipped })
}

/// The uncompressed header: version, magic, compression, the regions' maps.
struct Header {
    names: (u64, u64),
    modules: Vec<(u64, u64)>,
    versions: Vec<u32>,
}

impl Header {
    fn parse(bytes: &[u8]) -> Result<Header, String> {
        // The version first: older logs (3.10, 3.21) have smaller headers.
        let version = String::from_utf8_lossy(&bytes[..bytes.len().min(8)]).trim_end_matches('\0').to_string();
        let a_version = version.len() > 2 && version.chars().all(|c| c.is_ascii_digit() || c == '.');
        if a_version && version != "3.41" {
            return Err(format!("log format version `{version}`; ebq reads 3.41 (Darshan 3.4 and 3.5)"));
        }
        if bytes.len() < HEADER_SIZE {
            return Err(format!("{} bytes: shorter than a Darshan log's header ({HEADER_SIZE} bytes)", bytes.len()));
        }
        if !a_version {
            return Err(format!("not a Darshan log: it starts with {version:?}, not a format version"));
        }
        let mut c = Cursor { data: &bytes[..HEADER_SIZE], at: 8, what: "header" };
        let magic = c.i64()?;
        if magic != 6567223 {
            return Err(format!("magic number {magic:#x} at byte 8 is not Darshan's (6567223, little-endian)"));
        }
        let compression = c.take(8)?[0];
        if compression != 0 {
            return Err(format!("compression type {compression} at byte 16; ebq reads zlib (0) logs"));
        }
        let partial = c.u64()?;
        if partial != 0 {
            return Err(format!("the log is partial (flag {partial:#x} at byte 24): its runtime ran out of memory"));
        }
        let names = (c.u64()?, c.u64()?);
        let mut modules = vec![];
        for _ in 0..64 {
            modules.push((c.u64()?, c.u64()?));
        }
        let mut versions = vec![];
        for _ in 0..64 {
            versions.push(u32::from_le_bytes(c.take(4)?.try_into().expect("4 bytes")));
        }
        Ok(Header { names, modules, versions })
    }
}

/// The job struct, the executable line and the mount table.
fn read_job(data: &[u8]) -> Result<Job, String> {
    let mut c = Cursor { data, at: 0, what: "job region" };
    let mut v = [0i64; 7];
    for x in &mut v {
        *x = c.i64()?;
    }
    let meta = c.take(1024)?;
    let meta = String::from_utf8_lossy(&meta[..meta.iter().position(|b| *b == 0).unwrap_or(meta.len())]).to_string();
    let metadata =
        meta.lines().filter_map(|l| l.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let rest = &data[c.at..];
    let rest = String::from_utf8_lossy(&rest[..rest.iter().position(|b| *b == 0).unwrap_or(rest.len())]).to_string();
    let mut lines = rest.split('\n');
    let exe = lines.next().unwrap_or("").to_string();
    let mounts = lines.filter_map(|l| l.split_once('\t')).map(|(t, p)| (t.to_string(), p.to_string())).collect();
    let job =
        Job { uid: v[0], start: (v[1], v[2]), end: (v[3], v[4]), nprocs: v[5], jobid: v[6], metadata, exe, mounts };
    Ok(job)
}

/// The name region: a u64 id, then the NUL-terminated name, per record.
fn read_names(data: &[u8]) -> Result<std::collections::BTreeMap<u64, String>, String> {
    let mut c = Cursor { data, at: 0, what: "name region" };
    let mut out = std::collections::BTreeMap::new();
    while !c.done() {
        let id = c.u64()?;
        let rest = &data[c.at..];
        let len = rest.iter().position(|b| *b == 0).ok_or_else(|| format!("name of id {id} has no NUL"))?;
        out.insert(id, String::from_utf8_lossy(&rest[..len]).to_string());
        c.at += len + 1;
    }
    Ok(out)
}

/// Records of a counters module: base record, `n` i64 counters, `nf` f64 counters each.
fn counter_records(c: &mut Cursor, n: usize, nf: usize) -> Result<Vec<Record>, String> {
    let mut out = vec![];
    while !c.done() {
        let (id, rank) = (c.u64()?, c.i64()?);
        let counters = (0..n).map(|_| c.i64()).collect::<Result<_, _>>()?;
        let fcounters = (0..nf).map(|_| c.f64()).collect::<Result<_, _>>()?;
        out.push(Record { id, rank, counters, fcounters });
    }
    Ok(out)
}

/// DXT records: `struct dxt_file_record` then its write and read segments.
fn dxt_records(c: &mut Cursor) -> Result<Vec<DxtRecord>, String> {
    let mut out = vec![];
    while !c.done() {
        let (id, rank, _shared) = (c.u64()?, c.i64()?, c.i64()?);
        let host = c.take(64)?;
        let hostname = String::from_utf8_lossy(&host[..host.iter().position(|b| *b == 0).unwrap_or(64)]).to_string();
        let (writes, reads) = (c.i64()?, c.i64()?);
        let mut segments = |n: i64| -> Result<Vec<Segment>, String> {
            (0..n.max(0))
                .map(|_| Ok(Segment { offset: c.i64()?, length: c.i64()?, start: c.f64()?, end: c.f64()? }))
                .collect()
        };
        let writes = segments(writes)?;
        let reads = segments(reads)?;
        out.push(DxtRecord { id, rank, hostname, writes, reads });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log ebq writes reads back field for field.
    #[test]
    fn a_written_log_reads_back_equal() {
        let job = Job {
            uid: 7,
            jobid: 42,
            nprocs: 2,
            start: (1_700_000_000, 5),
            end: (1_700_000_010, 6),
            metadata: vec![("lib_ver".into(), "ebq-test".into()), ("EBQ_ERRORS".into(), "3".into())],
            exe: "mpirun -n 2 ./app".into(),
            mounts: vec![("ext4".into(), "/".into()), ("tmpfs".into(), "/tmp".into())],
        };
        let mut log = Log { job, ..Log::default() };
        let id = log.name_id("/tmp/shared.dat");
        let posix = (0..posix_counters().len() as i64).collect::<Vec<_>>();
        log.posix.push(Record { id, rank: 1, counters: posix, fcounters: vec![0.25; POSIX_FCOUNTERS.len()] });
        let mpiio = vec![3; mpiio_counters().len()];
        log.mpiio.push(Record { id, rank: -1, counters: mpiio, fcounters: vec![1.5; MPIIO_FCOUNTERS.len()] });
        let seg = Segment { offset: 4096, length: 10, start: 0.5, end: 0.75 };
        log.dxt_posix.push(DxtRecord { id, rank: 1, hostname: "node1".into(), writes: vec![seg], reads: vec![] });
        let back = read(&log.to_bytes()).unwrap();
        assert!(back.skipped.is_empty());
        let b = back.log;
        let j = &b.job;
        assert_eq!((j.uid, j.jobid, j.nprocs, j.start, j.end), (7, 42, 2, log.job.start, log.job.end));
        assert_eq!((&j.metadata, &j.exe, &j.mounts), (&log.job.metadata, &log.job.exe, &log.job.mounts));
        assert_eq!(b.names, log.names);
        for (x, y) in [(&b.posix, &log.posix), (&b.mpiio, &log.mpiio)] {
            assert_eq!(x.len(), 1);
            assert_eq!(
                (x[0].id, x[0].rank, &x[0].counters, &x[0].fcounters),
                (y[0].id, y[0].rank, &y[0].counters, &y[0].fcounters)
            );
        }
        assert_eq!(b.dxt_posix[0].writes, vec![seg]);
        assert_eq!(b.dxt_posix[0].hostname, "node1");
    }

    #[test]
    fn bad_logs_say_what_is_wrong_and_where() {
        assert!(read(b"3.41").unwrap_err().contains("shorter than a Darshan log's header"));
        assert!(read(b"3.21\0\0\0\0").unwrap_err().contains("log format version `3.21`"));
        let mut bytes = Log::default().to_bytes();
        bytes[8] ^= 1;
        assert!(read(&bytes).unwrap_err().contains("at byte 8 is not Darshan's"));
        let mut bytes = Log::default().to_bytes();
        bytes[..4].copy_from_slice(b"<htm");
        assert!(read(&bytes).unwrap_err().starts_with("not a Darshan log: it starts with \"<htm"));
        let mut bytes = Log::default().to_bytes();
        bytes[2] = b'2';
        assert!(read(&bytes).unwrap_err().contains("log format version `3.21`"));
        let mut bytes = Log::default().to_bytes();
        let n = bytes.len();
        bytes.truncate(n - 3);
        let err = read(&bytes).unwrap_err();
        assert!(err.contains("the name region") && err.contains("past the end"), "{err}");
    }
}

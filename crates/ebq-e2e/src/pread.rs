//! `pread`: known pread64 calls of known sizes on temp files, the workload of
//! most aggregate tests (counts, byte sums, maxima per fd and per CPU).

use super::{
    close_fd, emit_report, get_comm, gettid, open_path, os_err, pin_to_cpu, runtime, set_comm, usage, wait_for_file,
    Error,
};
use serde_json::{json, Value};

/// Size of each temporary file used by `pread`.
const FILE_SIZE: usize = 1 << 20;
/// Largest accepted `--size-base` (the largest pread count is 5 times this).
const MAX_SIZE_BASE: u64 = 1 << 20;
/// Largest accepted `--fds`.
const MAX_FDS: u64 = 512;
/// Largest accepted `--fd-base`.
const MAX_FD_BASE: u64 = 65_536;

/// The `count` argument of the j-th pread64 call on any fd.
fn pread_size(base: u64, j: u64) -> u64 {
    base * ((j % 5) + 1)
}

/// The `count` argument of the j-th call when the sizes cycle through `sizes`.
fn cycle_size(sizes: &[u64], j: u64) -> u64 {
    sizes[(j % sizes.len() as u64) as usize]
}

/// The default cycle, B·1 … B·5 (what [`pread_size`] computes).
fn default_cycle(base: u64) -> Vec<u64> {
    (0..5).map(|j| pread_size(base, j)).collect()
}

/// How many of `calls` the CPU-0 thread issues (ceil(calls / 2)); CPU 1 does the rest.
fn first_half(calls: u64) -> u64 {
    calls.div_ceil(2)
}

/// Calls, byte sum and largest size of the pread64 calls with indices `range`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Stats {
    calls: u64,
    bytes: u64,
    max: u64,
}

#[cfg(test)]
fn stats_for(base: u64, range: std::ops::Range<u64>) -> Stats {
    stats_in(&default_cycle(base), range)
}

/// [`stats_for`] with the sizes cycling through `sizes`.
fn stats_in(sizes: &[u64], range: std::ops::Range<u64>) -> Stats {
    let mut s = Stats::default();
    for j in range {
        let size = cycle_size(sizes, j);
        s.calls += 1;
        s.bytes += size;
        s.max = s.max.max(size);
    }
    s
}

/// `pread --fds K --calls C1,...,CK [--size-base B | --sizes S1,...,SN] [--comm NAME]
/// [--report FILE] [--wait-file PATH] [--threads-per-cpu] [--fd-base N] [--gap-us US]`.
#[derive(Debug, PartialEq, clap::Args)]
pub(crate) struct PreadCfg {
    /// How many temp files (fds) to read.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=MAX_FDS))]
    fds: u64,
    /// The pread64 calls per fd, one count per fd.
    #[arg(long, required = true, value_delimiter = ',', action = clap::ArgAction::Set,
          value_parser = clap::value_parser!(u64).range(..=u64::from(u32::MAX)))]
    calls: Vec<u64>,
    /// B: the sizes cycle through B·1 … B·5.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=MAX_SIZE_BASE))]
    size_base: u64,
    #[arg(long, value_parser = crate::comm_arg)]
    comm: Option<String>,
    #[arg(long)]
    report: Option<String>,
    #[arg(long)]
    wait_file: Option<String>,
    /// Split each fd's calls between a thread on CPU 0 and one on CPU 1.
    #[arg(long)]
    threads_per_cpu: bool,
    /// The first fd number of the files (F_DUPFD).
    #[arg(long, value_parser = clap::value_parser!(u64).range(3..=MAX_FD_BASE))]
    fd_base: Option<u64>,
    /// Microseconds to sleep after each call, to spread calls across windows.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(..=10_000_000))]
    gap_us: u64,
    /// `--sizes`: the sizes calls cycle through instead of B·1 … B·5 (empty: default).
    #[arg(long, value_delimiter = ',', action = clap::ArgAction::Set,
          value_parser = clap::value_parser!(u64).range(..=5 * MAX_SIZE_BASE))]
    sizes: Vec<u64>,
}

impl PreadCfg {
    /// The sizes calls cycle through.
    fn cycle(&self) -> Vec<u64> {
        if self.sizes.is_empty() {
            default_cycle(self.size_base)
        } else {
            self.sizes.clone()
        }
    }

    /// One count in `--calls` per fd.
    pub(crate) fn check(&self) -> Result<(), Error> {
        if self.calls.len() as u64 != self.fds {
            return usage(format!("--calls has {} counts but --fds is {}", self.calls.len(), self.fds));
        }
        Ok(())
    }
}

/// The temporary files of `pread`; closed and deleted on drop.
struct TempFiles {
    files: Vec<(libc::c_int, String)>,
}

impl TempFiles {
    fn create(count: usize, fd_base: Option<u64>) -> Result<TempFiles, Error> {
        let mut tf = TempFiles { files: Vec::new() };
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let chunk = vec![0x5au8; 64 * 1024];
        for i in 0..count {
            let path = format!("/tmp/ebq-workload-{}-{nanos}-{i}", std::process::id());
            let fd = open_path(&path, libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC, 0o600)?;
            tf.files.push((fd, path));
            if let Some(base) = fd_base {
                let want = base as libc::c_int + i as libc::c_int;
                // SAFETY: fd is open; F_DUPFD_CLOEXEC returns a new fd >= want.
                let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, want) };
                if dup < 0 {
                    return Err(os_err(&format!("fcntl(F_DUPFD_CLOEXEC, {want})")));
                }
                close_fd(fd);
                tf.files.last_mut().expect("just pushed").0 = dup;
                if dup != want {
                    return runtime(format!("fd {want} is taken (got fd {dup})"));
                }
            }
            let fd = tf.files.last().expect("just pushed").0;
            let mut written = 0usize;
            while written < FILE_SIZE {
                let len = chunk.len().min(FILE_SIZE - written);
                // SAFETY: chunk holds at least len bytes.
                let n = unsafe { libc::write(fd, chunk.as_ptr().cast(), len) };
                if n <= 0 {
                    return Err(os_err("write temp file"));
                }
                written += n as usize;
            }
        }
        Ok(tf)
    }

    fn fds(&self) -> Vec<libc::c_int> {
        self.files.iter().map(|(fd, _)| *fd).collect()
    }
}

impl Drop for TempFiles {
    fn drop(&mut self) {
        for (fd, path) in self.files.drain(..) {
            close_fd(fd);
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Issues the pread64 calls with indices `range` on `fd`.
fn do_preads(
    fd: libc::c_int,
    sizes: &[u64],
    range: std::ops::Range<u64>,
    buf: &mut [u8],
    gap_us: u64,
) -> Result<(), Error> {
    for j in range {
        if gap_us > 0 {
            std::thread::sleep(std::time::Duration::from_micros(gap_us));
        }
        let size = cycle_size(sizes, j) as usize;
        // SAFETY: buf holds at least max(sizes) >= size bytes.
        let n = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), size, 0) };
        if n < 0 {
            return Err(os_err(&format!("pread fd {fd}")));
        }
    }
    Ok(())
}

/// What one pinned thread did: its CPU, its tid, and its stats per fd.
struct CpuPart {
    cpu: usize,
    tid: i64,
    per_fd: Vec<Stats>,
}

pub(crate) fn run_pread(cfg: &PreadCfg) -> Result<(), Error> {
    if let Some(c) = &cfg.comm {
        set_comm(c)?;
    }
    let files = TempFiles::create(cfg.calls.len(), cfg.fd_base)?;
    let fds = files.fds();
    let cycle = cfg.cycle();
    let buf_len = cycle.iter().copied().max().unwrap_or(1) as usize;
    wait_for_file(cfg.wait_file.as_deref());

    let mut parts: Vec<CpuPart> = Vec::new();
    if cfg.threads_per_cpu {
        let results: Vec<Result<CpuPart, Error>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..2usize)
                .map(|cpu| {
                    let (fds, cycle) = (&fds, &cycle);
                    s.spawn(move || -> Result<CpuPart, Error> {
                        if let Some(c) = &cfg.comm {
                            set_comm(c)?;
                        }
                        pin_to_cpu(cpu)?;
                        let mut buf = vec![0u8; buf_len];
                        let mut per_fd = Vec::with_capacity(fds.len());
                        for (&fd, &calls) in fds.iter().zip(&cfg.calls) {
                            let half = first_half(calls);
                            let range = if cpu == 0 { 0..half } else { half..calls };
                            do_preads(fd, cycle, range.clone(), &mut buf, cfg.gap_us)?;
                            per_fd.push(stats_in(cycle, range));
                        }
                        Ok(CpuPart { cpu, tid: gettid(), per_fd })
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| runtime("pread thread panicked"))).collect()
        });
        for r in results {
            parts.push(r?);
        }
    } else {
        let mut buf = vec![0u8; buf_len];
        for (&fd, &calls) in fds.iter().zip(&cfg.calls) {
            do_preads(fd, &cycle, 0..calls, &mut buf, cfg.gap_us)?;
        }
    }
    drop(files);

    let json =
        pread_report(std::process::id(), &get_comm(), cfg, &fds, cfg.threads_per_cpu.then_some(parts.as_slice()));
    emit_report(cfg.report.as_deref(), &json)
}

fn pread_report(pid: u32, comm: &str, cfg: &PreadCfg, fds: &[libc::c_int], parts: Option<&[CpuPart]>) -> Value {
    let mut fd_items = Vec::new();
    let mut total_calls = 0u64;
    let mut total_bytes = 0u64;
    for (i, (&fd, &calls)) in fds.iter().zip(&cfg.calls).enumerate() {
        let s = stats_in(&cfg.cycle(), 0..calls);
        total_calls += s.calls;
        total_bytes += s.bytes;
        let per_cpu: Vec<Value> = parts
            .unwrap_or(&[])
            .iter()
            .map(|p| {
                let ps = p.per_fd[i];
                json!({"cpu": p.cpu, "tid": p.tid, "calls": ps.calls, "bytes": ps.bytes, "max": ps.max})
            })
            .collect();
        fd_items.push(json!({"fd": fd, "calls": s.calls, "bytes": s.bytes, "max": s.max, "per_cpu": per_cpu}));
    }
    let mut report = json!({
        "pid": pid,
        "comm": comm,
        "syscall": "pread64",
        "size_base": cfg.size_base,
        "threads_per_cpu": parts.is_some(),
        "fds": fd_items,
        "total_calls": total_calls,
        "total_bytes": total_bytes,
    });
    if !cfg.sizes.is_empty() {
        report["sizes"] = json!(cfg.sizes);
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{is_usage, parse_as};

    fn parse_pread(s: &str) -> Result<PreadCfg, Error> {
        parse_as!(Pread, format!("pread {s}"))
    }

    #[test]
    fn pread_sizes_cycle_through_five_multiples() {
        let sizes: Vec<u64> = (0..7).map(|j| pread_size(64, j)).collect();
        assert_eq!(sizes, vec![64, 128, 192, 256, 320, 64, 128]);
        assert_eq!(pread_size(1, 4), 5);
        assert_eq!(pread_size(10, 5), 10);
    }

    #[test]
    fn stats_match_the_documented_example() {
        // 10 calls of base 64: two full cycles of 64+128+192+256+320 = 960.
        let s = stats_for(64, 0..10);
        assert_eq!(s, Stats { calls: 10, bytes: 1920, max: 320 });
        assert_eq!(stats_for(64, 0..0), Stats::default());
        let one = stats_for(64, 0..1);
        assert_eq!((one.calls, one.bytes, one.max), (1, 64, 64));
        // 5,7,9 calls with base 64.
        assert_eq!(stats_for(64, 0..5).bytes, 960);
        assert_eq!(stats_for(64, 0..7).bytes, 960 + 64 + 128);
        assert_eq!(stats_for(64, 0..9).bytes, 960 + 64 + 128 + 192 + 256);
    }

    #[test]
    fn split_halves_add_up() {
        for calls in 0..50u64 {
            let h = first_half(calls);
            assert_eq!(h, calls.div_ceil(2));
            let a = stats_for(64, 0..h);
            let b = stats_for(64, h..calls);
            let all = stats_for(64, 0..calls);
            assert_eq!(a.calls + b.calls, all.calls);
            assert_eq!(a.bytes + b.bytes, all.bytes);
            assert_eq!(a.max.max(b.max), all.max);
            assert!(a.calls >= b.calls && a.calls - b.calls <= 1);
        }
        assert_eq!(first_half(7), 4);
        assert_eq!(first_half(1), 1);
        assert_eq!(first_half(0), 0);
    }

    #[test]
    fn parses_pread_full() {
        let cfg = parse_pread(
            "--fds 3 --calls 5,7,9 --size-base 32 --comm wl --report /tmp/r.json \
             --wait-file /tmp/go --threads-per-cpu",
        )
        .unwrap();
        assert_eq!(
            cfg,
            PreadCfg {
                fds: 3,
                calls: vec![5, 7, 9],
                size_base: 32,
                comm: Some("wl".into()),
                report: Some("/tmp/r.json".into()),
                wait_file: Some("/tmp/go".into()),
                threads_per_cpu: true,
                fd_base: None,
                gap_us: 0,
                sizes: vec![],
            }
        );
    }

    #[test]
    fn sizes_override_the_default_cycle() {
        let cfg = parse_pread("--fds 1 --calls 7 --sizes 0,5,4096").unwrap();
        assert_eq!(cfg.cycle(), vec![0, 5, 4096]);
        assert_eq!(stats_in(&cfg.cycle(), 0..7), Stats { calls: 7, bytes: 2 * 5 + 2 * 4096, max: 4096 });
        assert_eq!(parse_pread("--fds 1 --calls 7").unwrap().cycle(), vec![64, 128, 192, 256, 320]);
        assert!(is_usage(parse_pread("--fds 1 --calls 1 --sizes 1,x")));
        assert!(is_usage(parse_pread("--fds 1 --calls 1 --sizes 99999999")));
    }

    #[test]
    fn parses_pread_defaults_and_equals_form() {
        let cfg = parse_pread("--fds=2 --calls=0,3").unwrap();
        assert_eq!(cfg.calls, vec![0, 3]);
        assert_eq!(cfg.size_base, 64);
        assert_eq!(cfg.comm, None);
        assert_eq!(cfg.report, None);
        assert_eq!(cfg.wait_file, None);
        assert!(!cfg.threads_per_cpu);
        assert_eq!(cfg.fd_base, None);
        let cfg = parse_pread("--fds 1 --calls 1 --fd-base 100").unwrap();
        assert_eq!(cfg.fd_base, Some(100));
        assert!(is_usage(parse_pread("--fds 1 --calls 1 --fd-base 2")));
    }

    #[test]
    fn rejects_bad_pread_args() {
        assert!(is_usage(parse_pread("--fds 3 --calls 5,7")));
        assert!(is_usage(parse_pread("--calls 5")));
        assert!(is_usage(parse_pread("--fds 1")));
        assert!(is_usage(parse_pread("--fds 0 --calls 1")));
        assert!(is_usage(parse_pread("--fds 1 --calls x")));
        assert!(is_usage(parse_pread("--fds 1 --calls -1")));
        assert!(is_usage(parse_pread("--fds 2 --calls 1,,2")));
        assert!(is_usage(parse_pread("--fds 1 --calls 1 --size-base 0")));
        assert!(is_usage(parse_pread("--fds 1 --calls 1 --bogus 1")));
        assert!(is_usage(parse_pread("--fds 1 --calls 1 --fds 1")));
        assert!(is_usage(parse_pread("--fds 1 --calls 1 --calls 1")));
        assert!(is_usage(parse_pread("--fds 1 --calls 1 --threads-per-cpu --threads-per-cpu")));
        assert!(is_usage(parse_pread("--fds 1 --calls 1 --comm")));
        assert!(is_usage(parse_pread("--fds 1 --calls 1 stray")));
        assert!(is_usage(parse_pread("--fds 1 --calls 1 --threads-per-cpu=yes")));
        assert!(is_usage(parse_pread("--fds 1 --calls 1 --comm abcdefghijklmnop")));
        assert!(is_usage(parse_pread("--fds 1 --calls 1 --size-base 99999999999999999999999")));
    }

    #[test]
    fn pread_report_shape() {
        let cfg = parse_pread("--fds 2 --calls 10,3 --comm wl").unwrap();
        let json = pread_report(123, "wl", &cfg, &[3, 4], None);
        assert_eq!(
            json,
            json!({"pid": 123, "comm": "wl", "syscall": "pread64", "size_base": 64, "threads_per_cpu": false,
                   "fds": [{"fd": 3, "calls": 10, "bytes": 1920, "max": 320, "per_cpu": []},
                           {"fd": 4, "calls": 3, "bytes": 384, "max": 192, "per_cpu": []}],
                   "total_calls": 13, "total_bytes": 2304})
        );
        let parts = [
            CpuPart { cpu: 0, tid: 10, per_fd: vec![stats_for(64, 0..5), stats_for(64, 0..2)] },
            CpuPart { cpu: 1, tid: 11, per_fd: vec![stats_for(64, 5..10), stats_for(64, 2..3)] },
        ];
        let json = pread_report(123, "wl", &cfg, &[3, 4], Some(&parts));
        assert_eq!(
            json["fds"][1],
            json!({"fd": 4, "calls": 3, "bytes": 384, "max": 192, "per_cpu": [
                {"cpu": 0, "tid": 10, "calls": 2, "bytes": 192, "max": 128},
                {"cpu": 1, "tid": 11, "calls": 1, "bytes": 192, "max": 192}]})
        );
        assert_eq!(json["threads_per_cpu"], json!(true));
        let cfg = parse_pread("--fds 1 --calls 2 --sizes 7,9").unwrap();
        assert_eq!(pread_report(1, "wl", &cfg, &[3], None)["sizes"], json!([7, 9]));
    }
}

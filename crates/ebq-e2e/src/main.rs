//! `ebq-workload`: deterministic syscall workloads for ebq's end-to-end tests.
//!
//! Every subcommand issues exactly the syscalls it reports, so tests can
//! compare ebq's aggregates against the report byte for byte.
//!
//! ```text
//! ebq-workload pread --fds K --calls C1,...,CK [--size-base B | --sizes S1,...,SN] [--comm NAME]
//!                    [--report FILE] [--wait-file PATH] [--threads-per-cpu] [--fd-base N] [--gap-us US]
//! ebq-workload fork --children N --calls C [--sequential] [--comm NAME] [--report FILE] [--wait-file PATH]
//! ebq-workload readzero --count N [--bs B] [--comm NAME] [--report FILE] [--wait-file PATH]
//! ebq-workload spin --seconds S [--comm NAME]
//! ebq-workload fileio --files P1,...,PK --writes W1,...,WK --reads R1,...,RK [--size B] [--comm NAME] [--v2]
//!                     [--report FILE] [--wait-file PATH]
//! ebq-workload opens --paths P1,...,PK [--comm NAME] [--report FILE] [--wait-file PATH] [--cold I,...] [--bad-argv PATH]
//! ebq-workload darshan --files P1,...,PK [--side-files Q1,...] [--comm NAME] [--report FILE]
//! ebq-workload stdio --file P [--fdopen Q] [--writes N] [--reads M] [--size B] [--comm NAME] [--report FILE]
//! ebq-workload copies --src S --dst D [--chunk B] [--report FILE]
//! ebq-workload aio --file F [--blocks N] [--batch K] [--report FILE]
//! ebq-workload fileops --file F [--comm NAME] [--report FILE] [--wait-file PATH]
//! ebq-workload mmapwrite --file F --pages N [--skip K] [--msyncs M] [--comm NAME] [--report FILE] [--wait-file PATH]
//! ebq-workload pingpong --rounds R [--pairs N] [--comm NAME] [--report FILE]
//! ebq-workload chain --reads R1,R2,… [--size B] [--report FILE] [--wait-file PATH]
//! ebq-workload zipf --calls C [--keys N] [--seed S] [--sized] [--comm NAME] [--report FILE] [--wait-file PATH]
//! ```
//!
//! Exit codes: 0 success, 1 runtime failure, 2 bad arguments.
//!
//! Before `main` runs, the dynamic loader issues a couple of pread64 calls
//! and Rust's runtime a few read calls (on fd 3), under the default comm
//! `ebq-workload`. Tests that need exact counts filter on the comm set with
//! `--comm` (set first thing in `main`), or attach by pid while the workload
//! waits for `--wait-file`.

mod aio;
mod cache;
mod chain;
mod copies;
mod darshan;
mod fileio;
mod fileops;
mod mmapwrite;
mod opens;
mod pingpong;
mod stdio;
mod zipf;

use std::ffi::CString;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

const USAGE: &str = "\
usage:
  ebq-workload pread --fds K --calls C1,...,CK [--size-base B | --sizes S1,...,SN] [--comm NAME]
                     [--report FILE] [--wait-file PATH] [--threads-per-cpu] [--fd-base N] [--gap-us US]
  ebq-workload fork --children N --calls C [--sequential] [--comm NAME] [--report FILE] [--wait-file PATH]
  ebq-workload readzero --count N [--bs B] [--comm NAME] [--report FILE] [--wait-file PATH]
  ebq-workload spin --seconds S [--comm NAME]
  ebq-workload fileio --files P1,...,PK --writes W1,...,WK --reads R1,...,RK [--size B] [--comm NAME] [--v2]
                      [--report FILE] [--wait-file PATH]
  ebq-workload cachepass --file F [--passes P] [--drop]
  ebq-workload mmaptouch --file F [--drop] [--write]
  ebq-workload opens --paths P1,...,PK [--comm NAME] [--report FILE] [--wait-file PATH] [--cold I,...] [--bad-argv PATH]
  ebq-workload darshan --files P1,...,PK [--side-files Q1,...] [--comm NAME] [--report FILE]
  ebq-workload stdio --file P [--fdopen Q] [--writes N] [--reads M] [--size B] [--comm NAME] [--report FILE]
  ebq-workload copies --src S --dst D [--chunk B] [--report FILE]
  ebq-workload aio --file F [--blocks N] [--batch K] [--report FILE]
  ebq-workload fileops --file F [--comm NAME] [--report FILE] [--wait-file PATH]
  ebq-workload mmapwrite --file F --pages N [--skip K] [--msyncs M] [--comm NAME] [--report FILE] [--wait-file PATH]
  ebq-workload pingpong --rounds R [--pairs N] [--comm NAME] [--report FILE]
  ebq-workload chain --reads R1,R2,… [--size B] [--report FILE] [--wait-file PATH]
  ebq-workload zipf --calls C [--keys N] [--seed S] [--sized] [--comm NAME] [--report FILE] [--wait-file PATH]

pread:    creates K temp files of 1 MiB in /tmp, then issues Ci pread64 calls on
          fd i with count = B * ((j % 5) + 1) for j in 0..Ci (B defaults to 64),
          offset 0. --sizes S1,...,SN makes count = S[j % N] instead
          (each 0..5 MiB). --threads-per-cpu splits each fd's calls between a thread
          pinned to CPU 0 (ceil(Ci/2) calls) and one pinned to CPU 1 (the rest).
          --fd-base N moves the files' fds to N, N+1, ... (fcntl F_DUPFD) so they
          cannot share numbers with fds used before main (the loader's fd 3).
fork:     forks N children that each issue C pread64 calls of 1 byte on /dev/zero.
          The children start their calls together once all N exist (so all N
          are alive at once); with --sequential each child is waited for
          before the next is forked.
readzero: issues N read(2) calls of B bytes (default 1) on /dev/zero.
spin:     prints its pid, then calls getppid() in a busy loop for S seconds.
fileio:   per file Pi: openat(O_CREAT|O_TRUNC|O_RDWR), Wi write() calls of
          B*(i+1) bytes (B defaults to 100), lseek to 0, Ri read() calls, Wi
          pwrite64 and Ri pread64 calls at offsets j*B*(i+1), close, fsync the
          closed fd. Ri <= Wi. Last, fsync(1048576) (both fsyncs fail: EBADF).
cachepass: with --drop, fsync F and drop it from the page cache
          (posix_fadvise DONTNEED); then read it P times (default 1) in
          page-sized pread64 calls at page-aligned offsets.
mmaptouch: the same --drop, then mmap F (MAP_SHARED) and read one byte of
          every page in order; --write stores one instead (a write fault each).
opens:    openat(AT_FDCWD, Pi, O_RDONLY) for each path in order, closing each fd;
          the report gives each ret (the fd, or -errno: -2 for a missing path).
          --cold I,...: those paths (0-based) from a fresh memfd mapping, a page
          not resident at the call's entry (unreadable there by BPF).
          --bad-argv PATH: then execve(PATH) with an argv no mapping holds
          (EFAULT for an existing PATH, no exec); the report's
          bad_argv_exec is its ret.
darshan:  per file: open, read/write/pread/pwrite of every Darshan size-bucket
          boundary (0, 1, 100, 101, ... 2^30, 2^30+1 bytes; side files stop at
          10 MiB + 1), lseek, fsync, fdatasync, two failing calls (EINVAL), a
          short and an empty read at EOF, close, reopen, write, pread, close;
          the report is its own tally under Darshan's POSIX rules.
stdio:    on P only through libc's stdio: fopen, N fwrites of B bytes (default 50 of
          4096), fprintf, fputs, fputc, fflush, ftell, fseek, M freads, fgetc,
          rewind, fgets, a failing fseek, fclose; on Q open(2), fdopen, fwrite,
          fclose; the report is its own tally under Darshan's STDIO rules.
copies:   copies S to D.sendfile (sendfile), D.cfr (copy_file_range) and D.splice
          (splice S -> pipe -> D), at most B bytes a call (default 65536); the
          report counts each kind's calls and returned bytes.
aio:      creates F and writes its N blocks of 4 KiB (default 256) with Linux AIO,
          K requests per io_submit (default 8; every fourth block a PWRITEV of two
          halves), then one FDSYNC + FSYNC submit, then reads them back
          (PREAD/PREADV); each batch reaped with io_getevents. The report counts
          each opcode's requests, returned bytes and offsets, and the calls.
fileops:  on F (created): fallocate x2, ftruncate x2, one 4096-byte write,
          sync_file_range x3, syncfs, fsync, fdatasync, close; then vmsplice
          3000 bytes into a pipe and tee them into a second one (both drained).
          The report counts each call and the bytes write, vmsplice and tee returned.
mmapwrite: creates F with N pages, maps its pages K.. (default 0) shared
          read-write, stores one byte in every mapped page (N - K write faults on
          F), msync(MS_SYNC) of the mapping M times (default 1); the report gives
          N, K, M and F's inode.
pingpong: prints `ready`, blocks until a byte arrives on stdin (no polling: no
          scheduler events), then N pairs of threads (default 2), each pair
          pinned to CPUs 0 and 1, pass one byte back and forth over two pipes R
          times, while a spinner thread on each CPU runs until they are done
          (runqlat, cpudist).
zipf:     C pread64 calls of 1 byte on /dev/zero at offset 4096 * (r - 1), rank r
          drawn from Zipf(exponent 1.3) over N ranks (default 200000) with seed S
          (default 1); --sized reads 1 + (13 * (r - 1)) mod 16 bytes instead of 1;
          the report is the tally: [offset, calls, bytes] heaviest in calls first.
chain:    per file i (one per entry of --reads): open, R_i reads of
          (i + 1) * B bytes (default 100), close, each file timed around the
          three; then one read and the close of an fd opened before
          --wait-file (a chained JOIN's truth: openat → read → close per fd).

--comm sets the thread name (at most 15 bytes) before anything else.
--wait-file makes the workload poll (every 10 ms) until PATH exists before the
measured syscalls. --report writes a JSON report to FILE; without it the
report is printed on stdout. Before main, the dynamic loader issues a few
pread64/read calls under the default comm: filter on --comm for exact counts.
exit status: 0 success, 1 runtime failure, 2 bad arguments";

/// Size of each temporary file used by `pread`.
const FILE_SIZE: usize = 1 << 20;
/// Largest accepted `--size-base` (the largest pread count is 5 times this).
const MAX_SIZE_BASE: u64 = 1 << 20;
/// Largest accepted `--fds`.
const MAX_FDS: u64 = 512;
/// Largest accepted `--fd-base`.
const MAX_FD_BASE: u64 = 65_536;
/// Largest accepted `--bs` for readzero.
const MAX_BS: u64 = 1 << 24;
/// Largest accepted `--children` for fork.
const MAX_CHILDREN: u64 = 4096;

#[derive(Debug, PartialEq)]
enum Error {
    /// Bad arguments: exit status 2.
    Usage(String),
    /// Failure while running: exit status 1.
    Runtime(String),
}

fn usage<T>(msg: impl Into<String>) -> Result<T, Error> {
    Err(Error::Usage(msg.into()))
}

fn runtime<T>(msg: impl Into<String>) -> Result<T, Error> {
    Err(Error::Runtime(msg.into()))
}

fn os_err(what: &str) -> Error {
    Error::Runtime(format!("{what}: {}", std::io::Error::last_os_error()))
}

// ---------------------------------------------------------------------------
// Argument parsing
// ---------------------------------------------------------------------------

/// Flags of one subcommand after parsing: `--key value` pairs and boolean flags.
#[derive(Debug, Default)]
struct Flags {
    values: Vec<(String, String)>,
    switches: Vec<String>,
}

impl Flags {
    /// Parses `args` (everything after the subcommand). `value_keys` take a
    /// value (`--key value` or `--key=value`), `switch_keys` take none.
    fn parse(args: &[String], value_keys: &[&str], switch_keys: &[&str]) -> Result<Flags, Error> {
        let mut flags = Flags::default();
        let mut i = 0;
        while i < args.len() {
            let arg = &args[i];
            let Some(body) = arg.strip_prefix("--") else {
                return usage(format!("unexpected argument '{arg}'"));
            };
            let (key, inline) = match body.split_once('=') {
                Some((k, v)) => (k, Some(v.to_string())),
                None => (body, None),
            };
            if value_keys.contains(&key) {
                let value = match inline {
                    Some(v) => v,
                    None => {
                        i += 1;
                        match args.get(i) {
                            Some(v) => v.clone(),
                            None => return usage(format!("--{key} needs a value")),
                        }
                    }
                };
                if flags.values.iter().any(|(k, _)| k == key) {
                    return usage(format!("--{key} given more than once"));
                }
                flags.values.push((key.to_string(), value));
            } else if switch_keys.contains(&key) {
                if inline.is_some() {
                    return usage(format!("--{key} takes no value"));
                }
                if flags.switches.iter().any(|k| k == key) {
                    return usage(format!("--{key} given more than once"));
                }
                flags.switches.push(key.to_string());
            } else {
                return usage(format!("unknown option '--{key}'"));
            }
            i += 1;
        }
        Ok(flags)
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.values.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    fn has(&self, key: &str) -> bool {
        self.switches.iter().any(|k| k == key)
    }

    fn required(&self, key: &str) -> Result<&str, Error> {
        match self.get(key) {
            Some(v) => Ok(v),
            None => usage(format!("--{key} is required")),
        }
    }

    /// An unsigned integer in `min..=max`, or `default` when absent.
    fn u64_or(&self, key: &str, default: Option<u64>, min: u64, max: u64) -> Result<u64, Error> {
        match self.get(key) {
            Some(v) => parse_u64(key, v, min, max),
            None => match default {
                Some(d) => Ok(d),
                None => usage(format!("--{key} is required")),
            },
        }
    }

    fn comm(&self) -> Result<Option<String>, Error> {
        match self.get("comm") {
            None => Ok(None),
            Some(c) => {
                validate_comm(c)?;
                Ok(Some(c.to_string()))
            }
        }
    }
}

fn parse_u64(key: &str, v: &str, min: u64, max: u64) -> Result<u64, Error> {
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return usage(format!("--{key}: '{v}' is not a non-negative integer"));
    }
    let n: u64 = match v.parse() {
        Ok(n) => n,
        Err(_) => return usage(format!("--{key}: '{v}' is too large")),
    };
    if n < min || n > max {
        return usage(format!("--{key}: {n} is out of range {min}..={max}"));
    }
    Ok(n)
}

/// Parses a comma-separated list of call counts such as `5,7,9`.
fn parse_calls_list(v: &str) -> Result<Vec<u64>, Error> {
    v.split(',').map(|item| parse_u64("calls", item.trim(), 0, u64::from(u32::MAX))).collect()
}

fn validate_comm(c: &str) -> Result<(), Error> {
    if c.is_empty() {
        return usage("--comm must not be empty");
    }
    if c.len() > 15 {
        return usage(format!("--comm '{c}' is longer than 15 bytes (the kernel would truncate it)"));
    }
    if c.bytes().any(|b| b == 0) {
        return usage("--comm must not contain NUL");
    }
    Ok(())
}

fn parse_seconds(v: &str) -> Result<f64, Error> {
    let valid_chars = !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    match v.parse::<f64>() {
        Ok(s) if valid_chars && s.is_finite() && (0.0..=86_400.0).contains(&s) => Ok(s),
        _ => usage(format!("--seconds: '{v}' is not a number of seconds in 0..=86400")),
    }
}

// ---------------------------------------------------------------------------
// Sizes and the pread plan
// ---------------------------------------------------------------------------

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

#[derive(Debug, PartialEq)]
struct PreadCfg {
    calls: Vec<u64>,
    size_base: u64,
    comm: Option<String>,
    report: Option<String>,
    wait_file: Option<String>,
    threads_per_cpu: bool,
    fd_base: Option<u64>,
    /// Microseconds to sleep after each call, to spread calls across windows.
    gap_us: u64,
    /// `--sizes`: the sizes calls cycle through instead of B·1 … B·5 (empty: default).
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
}

fn parse_pread(args: &[String]) -> Result<PreadCfg, Error> {
    let f = Flags::parse(
        args,
        &["fds", "calls", "size-base", "comm", "report", "wait-file", "fd-base", "gap-us", "sizes"],
        &["threads-per-cpu"],
    )?;
    let fds = f.u64_or("fds", None, 1, MAX_FDS)?;
    let calls = parse_calls_list(f.required("calls")?)?;
    if calls.len() as u64 != fds {
        return usage(format!("--calls has {} counts but --fds is {fds}", calls.len()));
    }
    Ok(PreadCfg {
        calls,
        size_base: f.u64_or("size-base", Some(64), 1, MAX_SIZE_BASE)?,
        comm: f.comm()?,
        report: f.get("report").map(str::to_string),
        wait_file: f.get("wait-file").map(str::to_string),
        threads_per_cpu: f.has("threads-per-cpu"),
        fd_base: match f.get("fd-base") {
            Some(v) => Some(parse_u64("fd-base", v, 3, MAX_FD_BASE)?),
            None => None,
        },
        gap_us: f.u64_or("gap-us", Some(0), 0, 10_000_000)?,
        sizes: match f.get("sizes") {
            Some(v) => v
                .split(',')
                .map(|item| parse_u64("sizes", item.trim(), 0, 5 * MAX_SIZE_BASE))
                .collect::<Result<Vec<u64>, Error>>()?,
            None => vec![],
        },
    })
}

#[derive(Debug, PartialEq)]
struct ForkCfg {
    children: u64,
    calls: u64,
    sequential: bool,
    comm: Option<String>,
    report: Option<String>,
    wait_file: Option<String>,
}

fn parse_fork(args: &[String]) -> Result<ForkCfg, Error> {
    let f = Flags::parse(args, &["children", "calls", "comm", "report", "wait-file"], &["sequential"])?;
    Ok(ForkCfg {
        children: f.u64_or("children", None, 0, MAX_CHILDREN)?,
        calls: f.u64_or("calls", None, 0, u64::from(u32::MAX))?,
        sequential: f.has("sequential"),
        comm: f.comm()?,
        report: f.get("report").map(str::to_string),
        wait_file: f.get("wait-file").map(str::to_string),
    })
}

#[derive(Debug, PartialEq)]
struct ReadZeroCfg {
    count: u64,
    bs: u64,
    comm: Option<String>,
    report: Option<String>,
    wait_file: Option<String>,
}

fn parse_readzero(args: &[String]) -> Result<ReadZeroCfg, Error> {
    let f = Flags::parse(args, &["count", "bs", "comm", "report", "wait-file"], &[])?;
    Ok(ReadZeroCfg {
        count: f.u64_or("count", None, 0, u64::MAX)?,
        bs: f.u64_or("bs", Some(1), 1, MAX_BS)?,
        comm: f.comm()?,
        report: f.get("report").map(str::to_string),
        wait_file: f.get("wait-file").map(str::to_string),
    })
}

#[derive(Debug, PartialEq)]
struct SpinCfg {
    seconds: f64,
    comm: Option<String>,
}

fn parse_spin(args: &[String]) -> Result<SpinCfg, Error> {
    let f = Flags::parse(args, &["seconds", "comm"], &[])?;
    Ok(SpinCfg { seconds: parse_seconds(f.required("seconds")?)?, comm: f.comm()? })
}

// ---------------------------------------------------------------------------
// JSON helpers (hand-written; no serde)
// ---------------------------------------------------------------------------

fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json_u64_list(items: &[u64]) -> String {
    let parts: Vec<String> = items.iter().map(u64::to_string).collect();
    format!("[{}]", parts.join(","))
}

/// Writes `json` (plus a newline) to `report` atomically, or to stdout when
/// no report file was asked for.
fn emit_report(report: Option<&str>, json: &str) -> Result<(), Error> {
    match report {
        // Not a regular file (`--report /dev/null`, a FIFO): write in place, since
        // renaming over it would replace the device node with a file.
        Some(path) if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) => {
            std::fs::write(path, format!("{json}\n")).map_err(|e| Error::Runtime(format!("writing {path}: {e}")))
        }
        Some(path) => {
            let tmp = format!("{path}.tmp.{}", std::process::id());
            std::fs::write(&tmp, format!("{json}\n")).map_err(|e| Error::Runtime(format!("writing {tmp}: {e}")))?;
            std::fs::rename(&tmp, path).map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                Error::Runtime(format!("renaming {tmp} to {path}: {e}"))
            })
        }
        None => {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{json}")
                .and_then(|_| out.flush())
                .map_err(|e| Error::Runtime(format!("writing stdout: {e}")))
        }
    }
}

// ---------------------------------------------------------------------------
// Process helpers
// ---------------------------------------------------------------------------

fn set_comm(comm: &str) -> Result<(), Error> {
    let c = CString::new(comm).map_err(|_| Error::Usage("--comm contains NUL".into()))?;
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
    let rc = unsafe { libc::prctl(libc::PR_SET_NAME, c.as_ptr() as libc::c_ulong, 0, 0, 0) };
    if rc != 0 {
        return Err(os_err("prctl(PR_SET_NAME)"));
    }
    Ok(())
}

/// The calling thread's comm as the kernel sees it.
fn get_comm() -> String {
    let mut buf = [0u8; 17];
    // SAFETY: PR_GET_NAME writes at most 16 bytes including the NUL.
    let rc = unsafe { libc::prctl(libc::PR_GET_NAME, buf.as_mut_ptr() as libc::c_ulong, 0, 0, 0) };
    if rc != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(16);
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

fn gettid() -> i64 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) }
}

fn wait_for_file(path: Option<&str>) {
    if let Some(p) = path {
        let p = Path::new(p);
        while !p.exists() {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

fn pin_to_cpu(cpu: usize) -> Result<(), Error> {
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET stay within it, and
    // sched_setaffinity(0, ..) only affects the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(os_err(&format!("sched_setaffinity to CPU {cpu}")));
        }
        let now = libc::sched_getcpu();
        if now != cpu as i32 {
            return runtime(format!("pinned to CPU {cpu} but running on CPU {now}"));
        }
    }
    Ok(())
}

fn open_path(path: &str, flags: libc::c_int, mode: libc::c_uint) -> Result<libc::c_int, Error> {
    let c = CString::new(path).map_err(|_| Error::Runtime(format!("bad path {path}")))?;
    // SAFETY: c is a valid NUL-terminated path.
    let fd = unsafe { libc::open(c.as_ptr(), flags, mode) };
    if fd < 0 {
        return Err(os_err(&format!("open {path}")));
    }
    Ok(fd)
}

fn close_fd(fd: libc::c_int) {
    // SAFETY: fd was opened by this program and is closed once.
    unsafe { libc::close(fd) };
}

// ---------------------------------------------------------------------------
// pread
// ---------------------------------------------------------------------------

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

fn run_pread(cfg: &PreadCfg) -> Result<(), Error> {
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

fn pread_report(pid: u32, comm: &str, cfg: &PreadCfg, fds: &[libc::c_int], parts: Option<&[CpuPart]>) -> String {
    let mut fd_items = Vec::new();
    let mut total_calls = 0u64;
    let mut total_bytes = 0u64;
    for (i, (&fd, &calls)) in fds.iter().zip(&cfg.calls).enumerate() {
        let s = stats_in(&cfg.cycle(), 0..calls);
        total_calls += s.calls;
        total_bytes += s.bytes;
        let per_cpu: Vec<String> = parts
            .unwrap_or(&[])
            .iter()
            .map(|p| {
                let ps = p.per_fd[i];
                format!(
                    "{{\"cpu\":{},\"tid\":{},\"calls\":{},\"bytes\":{},\"max\":{}}}",
                    p.cpu, p.tid, ps.calls, ps.bytes, ps.max
                )
            })
            .collect();
        fd_items.push(format!(
            "{{\"fd\":{fd},\"calls\":{},\"bytes\":{},\"max\":{},\"per_cpu\":[{}]}}",
            s.calls,
            s.bytes,
            s.max,
            per_cpu.join(",")
        ));
    }
    let sizes = if cfg.sizes.is_empty() {
        String::new()
    } else {
        format!(",\"sizes\":[{}]", cfg.sizes.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(","))
    };
    format!(
        "{{\"pid\":{pid},\"comm\":{},\"syscall\":\"pread64\",\"size_base\":{},\
         \"threads_per_cpu\":{},\"fds\":[{}],\"total_calls\":{total_calls},\
         \"total_bytes\":{total_bytes}{sizes}}}",
        json_str(comm),
        cfg.size_base,
        parts.is_some(),
        fd_items.join(",")
    )
}

// ---------------------------------------------------------------------------
// fork
// ---------------------------------------------------------------------------

/// Waits for child `pid`; an error unless it exited with status 0.
fn reap_child(pid: u64) -> Result<(), Error> {
    let mut status = 0;
    // SAFETY: pid is our child; status is a valid out-pointer.
    if unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) } < 0 {
        return Err(os_err(&format!("waitpid {pid}")));
    }
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        return Err(Error::Runtime(format!("child {pid} failed (wait status {status})")));
    }
    Ok(())
}

fn run_fork(cfg: &ForkCfg) -> Result<(), Error> {
    if let Some(c) = &cfg.comm {
        set_comm(c)?;
    }
    let fd = open_path("/dev/zero", libc::O_RDONLY | libc::O_CLOEXEC, 0)?;
    wait_for_file(cfg.wait_file.as_deref());
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();

    // Concurrent children wait for EOF on this pipe: the parent closes its
    // write end once every child exists, so all N are alive together.
    let mut gate = [-1 as libc::c_int; 2];
    // SAFETY: gate is a valid two-element out-array.
    if !cfg.sequential && unsafe { libc::pipe2(gate.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(os_err("pipe2"));
    }
    let mut children: Vec<u64> = Vec::new();
    let mut failure: Option<Error> = None;
    for _ in 0..cfg.children {
        // SAFETY: the child only calls close, read, pread and _exit, all async-signal-safe.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let mut byte = [0u8; 1];
            if !cfg.sequential {
                // SAFETY: closing our copy of the write end, then reading to EOF.
                unsafe {
                    libc::close(gate[1]);
                    while libc::read(gate[0], byte.as_mut_ptr().cast(), 1) > 0 {}
                }
            }
            for _ in 0..cfg.calls {
                // SAFETY: byte is a valid 1-byte buffer; fd is open.
                let n = unsafe { libc::pread(fd, byte.as_mut_ptr().cast(), 1, 0) };
                if n != 1 {
                    // SAFETY: _exit never returns and runs no destructors.
                    unsafe { libc::_exit(1) };
                }
            }
            // SAFETY: as above.
            unsafe { libc::_exit(0) };
        }
        if pid < 0 {
            failure = Some(os_err("fork"));
            break;
        }
        children.push(pid as u64);
        if cfg.sequential {
            if let Err(e) = reap_child(pid as u64) {
                failure.get_or_insert(e);
            }
        }
    }
    if !cfg.sequential {
        close_fd(gate[1]);
        close_fd(gate[0]);
    }
    for &pid in children.iter().filter(|_| !cfg.sequential) {
        if let Err(e) = reap_child(pid) {
            failure.get_or_insert(e);
        }
    }
    close_fd(fd);
    if let Some(e) = failure {
        return Err(e);
    }
    let json = format!(
        "{{\"pid\":{},\"comm\":{},\"syscall\":\"pread64\",\"children\":{},\
         \"calls_per_child\":{},\"size\":1,\"total_calls\":{}}}",
        std::process::id(),
        json_str(&get_comm()),
        json_u64_list(&children),
        cfg.calls,
        cfg.calls * children.len() as u64
    );
    emit_report(cfg.report.as_deref(), &json)
}

// ---------------------------------------------------------------------------
// readzero
// ---------------------------------------------------------------------------

fn run_readzero(cfg: &ReadZeroCfg) -> Result<(), Error> {
    if let Some(c) = &cfg.comm {
        set_comm(c)?;
    }
    let fd = open_path("/dev/zero", libc::O_RDONLY | libc::O_CLOEXEC, 0)?;
    let mut buf = vec![0u8; cfg.bs as usize];
    wait_for_file(cfg.wait_file.as_deref());
    let start = Instant::now();
    for _ in 0..cfg.count {
        // SAFETY: buf holds bs bytes; fd is open.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            let e = os_err("read /dev/zero");
            close_fd(fd);
            return Err(e);
        }
    }
    let elapsed = start.elapsed();
    close_fd(fd);
    let json = format!(
        "{{\"pid\":{},\"comm\":{},\"syscall\":\"read\",\"fd\":{fd},\"count\":{},\"bs\":{},\
         \"total_calls\":{},\"total_bytes\":{},\"elapsed_ns\":{}}}",
        std::process::id(),
        json_str(&get_comm()),
        cfg.count,
        cfg.bs,
        cfg.count,
        u128::from(cfg.count) * u128::from(cfg.bs),
        elapsed.as_nanos()
    );
    emit_report(cfg.report.as_deref(), &json)
}

// ---------------------------------------------------------------------------
// spin
// ---------------------------------------------------------------------------

fn run_spin(cfg: &SpinCfg) -> Result<(), Error> {
    if let Some(c) = &cfg.comm {
        set_comm(c)?;
    }
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", std::process::id())
            .and_then(|_| out.flush())
            .map_err(|e| Error::Runtime(format!("writing stdout: {e}")))?;
    }
    let deadline = Instant::now() + Duration::from_secs_f64(cfg.seconds);
    loop {
        for _ in 0..256 {
            // SAFETY: getppid has no preconditions.
            std::hint::black_box(unsafe { libc::getppid() });
        }
        if Instant::now() >= deadline {
            return Ok(());
        }
    }
}

// ---------------------------------------------------------------------------
// main
// ---------------------------------------------------------------------------

fn run(args: &[String]) -> Result<(), Error> {
    let Some(sub) = args.first() else {
        return usage("missing subcommand");
    };
    let rest = &args[1..];
    match sub.as_str() {
        "pread" => run_pread(&parse_pread(rest)?),
        "fork" => run_fork(&parse_fork(rest)?),
        "readzero" => run_readzero(&parse_readzero(rest)?),
        "spin" => run_spin(&parse_spin(rest)?),
        "fileio" => fileio::run_fileio(&fileio::parse_fileio(rest)?),
        "cachepass" => cache::run_cachepass(&cache::parse_cache(rest)?),
        "mmaptouch" => cache::run_mmaptouch(&cache::parse_cache(rest)?),
        "opens" => opens::run_opens(&opens::parse_opens(rest)?),
        "darshan" => darshan::run_darshan(&darshan::parse_darshan(rest)?),
        "stdio" => stdio::run_stdio(&stdio::parse_stdio(rest)?),
        "copies" => copies::run_copies(&copies::parse_copies(rest)?),
        "aio" => aio::run_aio(&aio::parse_aio(rest)?),
        "fileops" => fileops::run_fileops(&fileops::parse_fileops(rest)?),
        "mmapwrite" => mmapwrite::run_mmapwrite(&mmapwrite::parse_mmapwrite(rest)?),
        "pingpong" => pingpong::run_pingpong(&pingpong::parse_pingpong(rest)?),
        "zipf" => zipf::run_zipf(&zipf::parse_zipf(rest)?),
        "chain" => chain::run_chain(&chain::parse_chain(rest)?),
        "-h" | "--help" | "help" => {
            println!("{USAGE}");
            Ok(())
        }
        other => usage(format!("unknown subcommand '{other}'")),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => {}
        Err(Error::Usage(msg)) => {
            eprintln!("ebq-workload: {msg}\n\n{USAGE}");
            std::process::exit(2);
        }
        Err(Error::Runtime(msg)) => {
            eprintln!("ebq-workload: {msg}");
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    fn is_usage<T: std::fmt::Debug>(r: Result<T, Error>) -> bool {
        matches!(r, Err(Error::Usage(_)))
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
        let cfg = parse_pread(&args(
            "--fds 3 --calls 5,7,9 --size-base 32 --comm wl --report /tmp/r.json \
             --wait-file /tmp/go --threads-per-cpu",
        ))
        .unwrap();
        assert_eq!(
            cfg,
            PreadCfg {
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
        let cfg = parse_pread(&args("--fds 1 --calls 7 --sizes 0,5,4096")).unwrap();
        assert_eq!(cfg.cycle(), vec![0, 5, 4096]);
        assert_eq!(stats_in(&cfg.cycle(), 0..7), Stats { calls: 7, bytes: 2 * 5 + 2 * 4096, max: 4096 });
        assert_eq!(parse_pread(&args("--fds 1 --calls 7")).unwrap().cycle(), vec![64, 128, 192, 256, 320]);
        assert!(is_usage(parse_pread(&args("--fds 1 --calls 1 --sizes 1,x"))));
        assert!(is_usage(parse_pread(&args("--fds 1 --calls 1 --sizes 99999999"))));
    }

    #[test]
    fn parses_pread_defaults_and_equals_form() {
        let cfg = parse_pread(&args("--fds=2 --calls=0,3")).unwrap();
        assert_eq!(cfg.calls, vec![0, 3]);
        assert_eq!(cfg.size_base, 64);
        assert_eq!(cfg.comm, None);
        assert_eq!(cfg.report, None);
        assert_eq!(cfg.wait_file, None);
        assert!(!cfg.threads_per_cpu);
        assert_eq!(cfg.fd_base, None);
        let cfg = parse_pread(&args("--fds 1 --calls 1 --fd-base 100")).unwrap();
        assert_eq!(cfg.fd_base, Some(100));
        assert!(is_usage(parse_pread(&args("--fds 1 --calls 1 --fd-base 2"))));
    }

    #[test]
    fn rejects_bad_pread_args() {
        assert!(is_usage(parse_pread(&args("--fds 3 --calls 5,7"))));
        assert!(is_usage(parse_pread(&args("--calls 5"))));
        assert!(is_usage(parse_pread(&args("--fds 1"))));
        assert!(is_usage(parse_pread(&args("--fds 0 --calls 1"))));
        assert!(is_usage(parse_pread(&args("--fds 1 --calls x"))));
        assert!(is_usage(parse_pread(&args("--fds 1 --calls -1"))));
        assert!(is_usage(parse_pread(&args("--fds 2 --calls 1,,2"))));
        assert!(is_usage(parse_pread(&args("--fds 1 --calls 1 --size-base 0"))));
        assert!(is_usage(parse_pread(&args("--fds 1 --calls 1 --bogus 1"))));
        assert!(is_usage(parse_pread(&args("--fds 1 --calls 1 --fds 1"))));
        assert!(is_usage(parse_pread(&args("--fds 1 --calls 1 --comm"))));
        assert!(is_usage(parse_pread(&args("--fds 1 --calls 1 stray"))));
        assert!(is_usage(parse_pread(&args("--fds 1 --calls 1 --threads-per-cpu=yes"))));
        assert!(is_usage(parse_pread(&args("--fds 1 --calls 1 --comm abcdefghijklmnop"))));
        assert!(is_usage(parse_pread(&args("--fds 1 --calls 1 --size-base 99999999999999999999999"))));
    }

    #[test]
    fn comm_limit_is_fifteen_bytes() {
        assert!(validate_comm("abcdefghijklmno").is_ok());
        assert!(validate_comm("abcdefghijklmnop").is_err());
        assert!(validate_comm("").is_err());
    }

    #[test]
    fn parses_fork() {
        let cfg = parse_fork(&args("--children 4 --calls 10 --report r.json")).unwrap();
        assert_eq!(cfg.children, 4);
        assert_eq!(cfg.calls, 10);
        assert_eq!(cfg.report.as_deref(), Some("r.json"));
        assert!(is_usage(parse_fork(&args("--children 4"))));
        assert!(is_usage(parse_fork(&args("--calls 4"))));
        assert!(is_usage(parse_fork(&args("--children 4 --calls 1 --size 3"))));
    }

    #[test]
    fn parses_readzero() {
        let cfg = parse_readzero(&args("--count 1000")).unwrap();
        assert_eq!((cfg.count, cfg.bs), (1000, 1));
        let cfg = parse_readzero(&args("--count 5 --bs 4096")).unwrap();
        assert_eq!((cfg.count, cfg.bs), (5, 4096));
        assert!(is_usage(parse_readzero(&args("--bs 4"))));
        assert!(is_usage(parse_readzero(&args("--count 5 --bs 0"))));
    }

    #[test]
    fn parses_spin() {
        assert_eq!(parse_spin(&args("--seconds 2")).unwrap().seconds, 2.0);
        assert_eq!(parse_spin(&args("--seconds 0.5")).unwrap().seconds, 0.5);
        assert!(is_usage(parse_spin(&args("--seconds"))));
        assert!(is_usage(parse_spin(&args("--seconds -1"))));
        assert!(is_usage(parse_spin(&args("--seconds inf"))));
        assert!(is_usage(parse_spin(&args("--seconds nan"))));
        assert!(is_usage(parse_spin(&args(""))));
    }

    #[test]
    fn unknown_or_missing_subcommand_is_usage_error() {
        assert!(is_usage(run(&args(""))));
        assert!(is_usage(run(&args("frobnicate"))));
    }

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(json_str("wl"), "\"wl\"");
        assert_eq!(json_str("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\n\\u0001\"");
        assert_eq!(json_u64_list(&[]), "[]");
        assert_eq!(json_u64_list(&[1, 22]), "[1,22]");
    }

    #[test]
    fn pread_report_shape() {
        let cfg = parse_pread(&args("--fds 2 --calls 10,3 --comm wl")).unwrap();
        let json = pread_report(123, "wl", &cfg, &[3, 4], None);
        assert_eq!(
            json,
            "{\"pid\":123,\"comm\":\"wl\",\"syscall\":\"pread64\",\"size_base\":64,\
             \"threads_per_cpu\":false,\"fds\":[\
             {\"fd\":3,\"calls\":10,\"bytes\":1920,\"max\":320,\"per_cpu\":[]},\
             {\"fd\":4,\"calls\":3,\"bytes\":384,\"max\":192,\"per_cpu\":[]}],\
             \"total_calls\":13,\"total_bytes\":2304}"
        );
        let parts = [
            CpuPart { cpu: 0, tid: 10, per_fd: vec![stats_for(64, 0..5), stats_for(64, 0..2)] },
            CpuPart { cpu: 1, tid: 11, per_fd: vec![stats_for(64, 5..10), stats_for(64, 2..3)] },
        ];
        let json = pread_report(123, "wl", &cfg, &[3, 4], Some(&parts));
        assert!(json.contains(
            "{\"fd\":4,\"calls\":3,\"bytes\":384,\"max\":192,\"per_cpu\":[\
             {\"cpu\":0,\"tid\":10,\"calls\":2,\"bytes\":192,\"max\":128},\
             {\"cpu\":1,\"tid\":11,\"calls\":1,\"bytes\":192,\"max\":192}]}"
        ));
        assert!(json.contains("\"threads_per_cpu\":true"));
    }
}

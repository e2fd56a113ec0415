//! `ebq-workload`: deterministic syscall workloads for ebq's end-to-end tests.
//!
//! Every subcommand issues exactly the syscalls it reports, so tests can
//! compare ebq's aggregates against the report number for number.
//! `ebq-workload --help` lists the subcommands, `ebq-workload SUB --help`
//! one subcommand's flags and what it does (the doc comments of [`Cmd`]).
//!
//! Exit codes: 0 success, 1 runtime failure, 2 bad arguments.
//!
//! Before `main` runs, the dynamic loader issues a couple of pread64 calls
//! and Rust's runtime a few read calls (on fd 3), under the default comm
//! `ebq-workload`. Tests that need exact counts filter on the comm set with
//! `--comm` (set first thing in each subcommand), or attach by pid while the
//! workload waits for `--wait-file`.

mod aio;
mod cache;
mod chain;
mod copies;
mod darshan;
mod fileio;
mod fileops;
mod fork;
mod mmapwrite;
mod opens;
mod pingpong;
mod pread;
mod readzero;
mod stdio;
mod zipf;

use clap::Parser;
use std::ffi::CString;
use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

/// What every subcommand's flags share, printed after the list of subcommands.
const NOTES: &str = "\
--comm sets the thread name (at most 15 bytes) before anything else.
--wait-file makes the workload poll (every 10 ms) until PATH exists before the
measured syscalls. --report writes a JSON report to FILE; without it the
report is printed on stdout. Before main, the dynamic loader issues a few
pread64/read calls under the default comm: filter on --comm for exact counts.
exit status: 0 success, 1 runtime failure, 2 bad arguments";

#[derive(Debug)]
enum Error {
    /// Arguments clap refused, or `--help`: clap prints it and picks the exit status (2, or 0 for help).
    Clap(clap::Error),
    /// Arguments clap took but that do not fit together: exit status 2.
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
// The command line
// ---------------------------------------------------------------------------

#[derive(Debug, Parser)]
#[command(name = "ebq-workload", about = "Deterministic syscall workloads for ebq's end-to-end tests", after_help = NOTES)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, clap::Subcommand)]
enum Cmd {
    /// pread64 calls of known sizes on K temp files.
    ///
    /// Creates K temp files of 1 MiB in /tmp, then issues Ci pread64 calls on
    /// fd i with count = B * ((j % 5) + 1) for j in 0..Ci (B defaults to 64),
    /// offset 0. --sizes S1,...,SN makes count = S[j % N] instead (each 0..5 MiB).
    /// --threads-per-cpu splits each fd's calls between a thread pinned to CPU 0
    /// (ceil(Ci/2) calls) and one pinned to CPU 1 (the rest). --fd-base N moves the
    /// files' fds to N, N+1, ... (fcntl F_DUPFD) so they cannot share numbers with
    /// fds used before main (the loader's fd 3).
    Pread(pread::PreadCfg),
    /// N children that each issue C pread64 calls.
    ///
    /// Forks N children that each issue C pread64 calls of 1 byte on /dev/zero.
    /// The children start their calls together once all N exist (so all N are
    /// alive at once); with --sequential each child is waited for before the next
    /// is forked.
    Fork(fork::ForkCfg),
    /// N read(2) calls on /dev/zero.
    ///
    /// Issues N read(2) calls of B bytes (default 1) on /dev/zero.
    Readzero(readzero::ReadZeroCfg),
    /// A busy process that prints its pid.
    ///
    /// Prints its pid, then calls getppid() in a busy loop for S seconds.
    Spin(readzero::SpinCfg),
    /// Writes, reads, pwrite64s and pread64s on given files.
    ///
    /// Per file Pi: openat(O_CREAT|O_TRUNC|O_RDWR), Wi write() calls of B*(i+1)
    /// bytes (B defaults to 100), lseek to 0, Ri read() calls, Wi pwrite64 and Ri
    /// pread64 calls at offsets j*B*(i+1), close, fsync the closed fd. Ri <= Wi.
    /// Last, fsync(1048576) (both fsyncs fail: EBADF).
    Fileio(fileio::FileIoCfg),
    /// Page-sized reads of a file, from a dropped or warm page cache.
    ///
    /// With --drop, fsync F and drop it from the page cache (posix_fadvise
    /// DONTNEED); then read it P times (default 1) in page-sized pread64 calls at
    /// page-aligned offsets.
    Cachepass(cache::CacheCfg),
    /// One load (or store) per page of a mapped file.
    ///
    /// The same --drop, then mmap F (MAP_SHARED) and read one byte of every page
    /// in order; --write stores one instead (a write fault each).
    Mmaptouch(cache::CacheCfg),
    /// One openat per path; the report gives each return value.
    ///
    /// openat(AT_FDCWD, Pi, O_RDONLY) for each path in order, closing each fd;
    /// the report gives each ret (the fd, or -errno: -2 for a missing path).
    /// --cold I,...: those paths (0-based) from a fresh memfd mapping, a page not
    /// resident at the call's entry (unreadable there by BPF). --bad-argv PATH:
    /// then execve(PATH) with an argv no mapping holds (EFAULT for an existing
    /// PATH, no exec); the report's bad_argv_exec is its ret.
    Opens(opens::OpensCfg),
    /// Known POSIX calls tallied under Darshan's rules.
    ///
    /// Per file: open, read/write/pread/pwrite of every Darshan size-bucket
    /// boundary (0, 1, 100, 101, ... 2^30, 2^30+1 bytes; side files stop at 10
    /// MiB + 1), lseek, fsync, fdatasync, two failing calls (EINVAL), a short and
    /// an empty read at EOF, close, reopen, write, pread, close; the report is its
    /// own tally under Darshan's POSIX rules.
    Darshan(darshan::DarshanCfg),
    /// Known stdio calls tallied under Darshan's STDIO rules.
    ///
    /// On P only through libc's stdio: fopen, N fwrites of B bytes (default 50 of
    /// 4096), fprintf, fputs, fputc, fflush, ftell, fseek, M freads, fgetc,
    /// rewind, fgets, a failing fseek, fclose; on Q open(2), fdopen, fwrite,
    /// fclose; the report is its own tally under Darshan's STDIO rules.
    Stdio(stdio::StdioCfg),
    /// sendfile, copy_file_range and splice copies of a file.
    ///
    /// Copies S to D.sendfile (sendfile), D.cfr (copy_file_range) and D.splice
    /// (splice S -> pipe -> D), at most B bytes a call (default 65536); the
    /// report counts each kind's calls and returned bytes.
    Copies(copies::CopiesCfg),
    /// Linux AIO writes and reads of a file.
    ///
    /// Creates F and writes its N blocks of 4 KiB (default 256) with Linux AIO, K
    /// requests per io_submit (default 8; every fourth block a PWRITEV of two
    /// halves), then one FDSYNC + FSYNC submit, then reads them back
    /// (PREAD/PREADV); each batch reaped with io_getevents. The report counts each
    /// opcode's requests, returned bytes and offsets, and the calls.
    Aio(aio::AioCfg),
    /// Space, size and sync calls on a file; vmsplice and tee.
    ///
    /// On F (created): fallocate x2, ftruncate x2, one 4096-byte write,
    /// sync_file_range x3, syncfs, fsync, fdatasync, close; then vmsplice 3000
    /// bytes into a pipe and tee them into a second one (both drained). The
    /// report counts each call and the bytes write, vmsplice and tee returned.
    Fileops(fileops::FileOpsCfg),
    /// Write faults through a shared file mapping, and msync.
    ///
    /// Creates F with N pages, maps its pages K.. (default 0) shared read-write,
    /// stores one byte in every mapped page (N - K write faults on F),
    /// msync(MS_SYNC) of the mapping M times (default 1); the report gives N, K,
    /// M and F's inode.
    Mmapwrite(mmapwrite::MmapWriteCfg),
    /// Pairs of pinned threads passing a byte, beside spinners.
    ///
    /// Prints `ready`, blocks until a byte arrives on stdin (no polling: no
    /// scheduler events), then N pairs of threads (default 2), each pair pinned
    /// to CPUs 0 and 1, pass one byte back and forth over two pipes R times,
    /// while a spinner thread on each CPU runs until they are done (runqlat,
    /// cpudist).
    Pingpong(pingpong::PingPongCfg),
    /// Per file an open, reads and a close (a chained JOIN).
    ///
    /// Per file i (one per entry of --reads): open, R_i reads of (i + 1) * B
    /// bytes (default 100), close, each file timed around the three; then one
    /// read and the close of an fd opened before --wait-file (a chained JOIN's
    /// truth: openat → read → close per fd).
    Chain(chain::ChainCfg),
    /// Zipf-distributed pread64 offsets (heavy hitters).
    ///
    /// C pread64 calls of 1 byte on /dev/zero at offset 4096 * (r - 1), rank r
    /// drawn from Zipf(exponent 1.3) over N ranks (default 200000) with seed S
    /// (default 1); --sized reads 1 + (13 * (r - 1)) mod 16 bytes instead of 1;
    /// the report is the tally: [offset, calls, bytes] heaviest in calls first.
    Zipf(zipf::ZipfCfg),
}

impl Cmd {
    /// What clap cannot check flag by flag: flags that must agree with each other.
    fn check(&mut self) -> Result<(), Error> {
        match self {
            Cmd::Pread(c) => c.check(),
            Cmd::Fileio(c) => c.check(),
            Cmd::Mmapwrite(c) => c.check(),
            Cmd::Stdio(c) => c.check(),
            _ => Ok(()),
        }
    }

    fn run(&self) -> Result<(), Error> {
        match self {
            Cmd::Pread(c) => pread::run_pread(c),
            Cmd::Fork(c) => fork::run_fork(c),
            Cmd::Readzero(c) => readzero::run_readzero(c),
            Cmd::Spin(c) => readzero::run_spin(c),
            Cmd::Fileio(c) => fileio::run_fileio(c),
            Cmd::Cachepass(c) => cache::run_cachepass(c),
            Cmd::Mmaptouch(c) => cache::run_mmaptouch(c),
            Cmd::Opens(c) => opens::run_opens(c),
            Cmd::Darshan(c) => darshan::run_darshan(c),
            Cmd::Stdio(c) => stdio::run_stdio(c),
            Cmd::Copies(c) => copies::run_copies(c),
            Cmd::Aio(c) => aio::run_aio(c),
            Cmd::Fileops(c) => fileops::run_fileops(c),
            Cmd::Mmapwrite(c) => mmapwrite::run_mmapwrite(c),
            Cmd::Pingpong(c) => pingpong::run_pingpong(c),
            Cmd::Zipf(c) => zipf::run_zipf(c),
            Cmd::Chain(c) => chain::run_chain(c),
        }
    }
}

/// Parses the arguments after the program name into a checked subcommand.
fn parse(args: &[String]) -> Result<Cmd, Error> {
    let argv = std::iter::once("ebq-workload").chain(args.iter().map(String::as_str));
    let mut cmd = Cli::try_parse_from(argv).map_err(Error::Clap)?.cmd;
    cmd.check()?;
    Ok(cmd)
}

/// `--comm`: a thread name the kernel keeps whole (at most 15 bytes, no NUL).
fn comm_arg(c: &str) -> Result<String, String> {
    if c.is_empty() {
        return Err("must not be empty".into());
    }
    if c.len() > 15 {
        return Err(format!("'{c}' is longer than 15 bytes (the kernel would truncate it)"));
    }
    if c.bytes().any(|b| b == 0) {
        return Err("must not contain NUL".into());
    }
    Ok(c.to_string())
}

/// `--seconds`: a plain decimal number of seconds in 0..=86400.
fn seconds_arg(v: &str) -> Result<f64, String> {
    let valid_chars = !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    match v.parse::<f64>() {
        Ok(s) if valid_chars && s.is_finite() && (0.0..=86_400.0).contains(&s) => Ok(s),
        _ => Err(format!("'{v}' is not a number of seconds in 0..=86400")),
    }
}

// ---------------------------------------------------------------------------
// The report
// ---------------------------------------------------------------------------

/// Writes `json` (plus a newline) to `report` atomically, or to stdout when
/// no report file was asked for.
fn emit_report(report: Option<&str>, json: &serde_json::Value) -> Result<(), Error> {
    let json = json.to_string();
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
// main
// ---------------------------------------------------------------------------

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match parse(&args).and_then(|cmd| cmd.run()) {
        Ok(()) => {}
        Err(Error::Clap(e)) => e.exit(),
        Err(Error::Usage(msg)) => {
            eprintln!("ebq-workload: {msg}\n\n{}", <Cli as clap::CommandFactory>::command().render_usage());
            std::process::exit(2);
        }
        Err(Error::Runtime(msg)) => {
            eprintln!("ebq-workload: {msg}");
            std::process::exit(1);
        }
    }
}

/// CLOCK_MONOTONIC in ns: the clock of the kernel's event times, so the
/// workloads' own timings compare with ebq's.
fn monotonic_ns() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: t is a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Test helpers: a command line as one string, and its parse.
#[cfg(test)]
mod testing {
    use super::{Cmd, Error};

    /// Parses `line` (split on whitespace) as the whole command line.
    pub(crate) fn parse_line(line: &str) -> Result<Cmd, Error> {
        super::parse(&line.split_whitespace().map(str::to_string).collect::<Vec<_>>())
    }

    /// `parse_as!(Variant, line)`: [`parse_line`] of `line`, the config of
    /// `Cmd::Variant` taken out (`?` on a parse error); another command panics.
    macro_rules! parse_as {
        ($variant:ident, $line:expr) => {
            match crate::testing::parse_line(&$line)? {
                crate::Cmd::$variant(c) => Ok(c),
                other => panic!("{other:?}"),
            }
        };
    }
    pub(crate) use parse_as;

    /// Whether `r` is a bad-arguments error (exit status 2).
    pub(crate) fn is_usage<T: std::fmt::Debug>(r: Result<T, Error>) -> bool {
        match r {
            Err(Error::Usage(_)) => true,
            Err(Error::Clap(e)) => e.exit_code() == 2,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{is_usage, parse_line};
    use super::*;

    #[test]
    fn unknown_or_missing_subcommand_is_usage_error() {
        assert!(is_usage(parse_line("")));
        assert!(is_usage(parse_line("frobnicate")));
    }

    #[test]
    fn comm_limit_is_fifteen_bytes() {
        assert!(comm_arg("abcdefghijklmno").is_ok());
        assert!(comm_arg("abcdefghijklmnop").is_err());
        assert!(comm_arg("").is_err());
    }

    #[test]
    fn help_is_not_an_error() {
        let Err(Error::Clap(e)) = parse_line("--help") else { panic!("--help parsed") };
        assert_eq!(e.exit_code(), 0);
        assert!(e.to_string().contains("mmapwrite"));
    }

    #[test]
    fn the_cli_is_consistent() {
        <Cli as clap::CommandFactory>::command().debug_assert();
    }
}

//! `stdio`: a workload of known libc stdio calls that prints its own tally
//! under Darshan's STDIO rules (darshan-runtime `lib/darshan-stdio.c`), for
//! `ebq report io --stdio` to be compared against.
//!
//! On `--file P`, only through stdio: fopen("w+"); `--writes N` fwrites of
//! `--size B` bytes; fprintf, fputs of a short line and of a 5000-byte one,
//! fputc; fflush; ftell; fseek 100 bytes
//! past the end (`SEEK_END`) and putc there; fseek to 0; `--reads M`
//! freads of B bytes; fgetc; rewind; fgets of at most 63 bytes, then of at
//! most 8191 (the `a`s have no newline: it reads 8191); fseeko to
//! 10 bytes before the end, fgetpos, an fread of 5, fsetpos back, fgetc;
//! fseek to the end, putw twice, fseek 8 before it, getw three times (the
//! last at the end); fseek to the fprintf's line, `fscanf` of its word,
//! `__isoc99_vfscanf` called directly (a `va_list` of our own on x86-64;
//! `__isoc99_fscanf` elsewhere) of its number, `__isoc99_fscanf` of one
//! where none is (returning 0);
//! a failing fseek (whence 99); fclose. On `--fdopen Q`: open(2) (the
//! program's own POSIX call), fdopen, one fwrite, fclose (whose write and
//! close are libc's, not the program's). On `--std-out F`: stdout and
//! stderr (descriptors 1 and 2) go to F, then printf and putc on stdout,
//! fflush(stdout), fputs of a short line and of a 201-byte one on stderr
//! (Darshan's `<STDOUT>` and `<STDERR>`).
//!
//! The tally is this program's own bookkeeping of Darshan's offset (0 at
//! fopen, + the bytes of each read and write, `ftell` after each seek, 0 at
//! rewind) and of each call's return value, the calls' libc makes inside go
//! uncounted.

use super::{emit_report, os_err, set_comm, usage, Error};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::ffi::CString;

/// `stdio --file P [--fdopen Q] [--writes N] [--reads M] [--size B] [--comm NAME] [--report FILE]`.
#[derive(Debug, PartialEq, clap::Args)]
pub(crate) struct StdioCfg {
    /// P: the file written and read only through stdio.
    #[arg(long)]
    file: String,
    /// Q: the file opened with open(2), then fdopen.
    #[arg(long)]
    fdopen: Option<String>,
    /// F: where stdout and stderr go (their records are tallied).
    #[arg(long)]
    std_out: Option<String>,
    /// N: the fwrites of B bytes.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    writes: u64,
    /// M ≤ N: the freads of B bytes (default N).
    #[arg(long)]
    reads: Option<u64>,
    /// B: the bytes of each fwrite and fread.
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u64).range(64..=1 << 20))]
    size: u64,
    #[arg(long, value_parser = crate::comm_arg)]
    comm: Option<String>,
    #[arg(long)]
    report: Option<String>,
}

impl StdioCfg {
    /// `--reads` defaults to `--writes` and reads no more than was written.
    pub(crate) fn check(&mut self) -> Result<(), Error> {
        let reads = *self.reads.get_or_insert(self.writes);
        if reads > self.writes {
            return usage(format!("--reads: {reads} is out of range 0..={}", self.writes));
        }
        Ok(())
    }

    fn reads(&self) -> u64 {
        self.reads.unwrap_or(self.writes)
    }
}

/// One record's counters and Darshan's offset.
#[derive(Default)]
struct Tally {
    counters: BTreeMap<&'static str, i64>,
    offset: i64,
}

impl Tally {
    fn inc(&mut self, k: &'static str, by: i64) {
        *self.counters.entry(k).or_insert(0) += by;
    }

    fn max(&mut self, k: &'static str, v: i64) {
        let e = self.counters.entry(k).or_insert(0);
        *e = (*e).max(v);
    }

    fn read(&mut self, bytes: i64) {
        self.max("STDIO_MAX_BYTE_READ", self.offset + bytes - 1);
        self.offset += bytes;
        self.inc("STDIO_READS", 1);
        self.inc("STDIO_BYTES_READ", bytes);
    }

    fn write(&mut self, bytes: i64, flush: bool) {
        self.max("STDIO_MAX_BYTE_WRITTEN", self.offset + bytes - 1);
        self.offset += bytes;
        self.inc(if flush { "STDIO_FLUSHES" } else { "STDIO_WRITES" }, 1);
        self.inc("STDIO_BYTES_WRITTEN", bytes);
    }

    /// A successful seek: Darshan's offset is `ftell` after it.
    fn seeked(&mut self, fp: *mut libc::FILE) {
        // SAFETY: fp is open.
        self.offset = unsafe { libc::ftell(fp) } as i64;
        self.inc("STDIO_SEEKS", 1);
    }

    fn json(&self, path: &str) -> Value {
        json!({"path": path, "counters": self.counters})
    }
}

/// Every Darshan STDIO counter the workload can move, at 0.
fn zeroed() -> Tally {
    let mut t = Tally::default();
    for k in [
        "STDIO_OPENS",
        "STDIO_FDOPENS",
        "STDIO_READS",
        "STDIO_WRITES",
        "STDIO_SEEKS",
        "STDIO_FLUSHES",
        "STDIO_BYTES_WRITTEN",
        "STDIO_BYTES_READ",
        "STDIO_MAX_BYTE_READ",
        "STDIO_MAX_BYTE_WRITTEN",
    ] {
        t.counters.insert(k, 0);
    }
    t
}

fn cstr(s: &str) -> Result<CString, Error> {
    CString::new(s).map_err(|_| Error::Usage(format!("a NUL in `{s}`")))
}

/// The stdio-only file: every call of the module's doc, tallied.
fn stdio_file(cfg: &StdioCfg) -> Result<Tally, Error> {
    let mut t = zeroed();
    let (path, mode) = (cstr(&cfg.file)?, cstr("w+")?);
    // SAFETY: both strings are NUL-terminated.
    let fp = unsafe { libc::fopen(path.as_ptr(), mode.as_ptr()) };
    if fp.is_null() {
        return Err(os_err("fopen"));
    }
    t.inc("STDIO_OPENS", 1);
    let size = cfg.size as usize;
    // 'a' bytes, no newline, no NUL: fgets reads a full line of 63.
    let mut buf = vec![b'a'; size];
    for _ in 0..cfg.writes {
        // SAFETY: buf holds size bytes; fp is open.
        let n = unsafe { libc::fwrite(buf.as_ptr().cast(), 1, size, fp) };
        if n > 0 {
            t.write(n as i64, false);
        }
    }
    let (fmt, word) = (cstr("%s %d\n")?, cstr("ebq")?);
    // SAFETY: a format of one string and one int, both given.
    let n = unsafe { libc::fprintf(fp, fmt.as_ptr(), word.as_ptr(), 42 as libc::c_int) };
    if n > 0 {
        t.write(i64::from(n), false);
    }
    // A short line, and one longer than a page (user_strlen() reads 4 KiB a time).
    for line in ["a line\n".to_string(), format!("{}\n", "l".repeat(LONG_PUT - 1))] {
        let line = cstr(&line)?;
        // SAFETY: a NUL-terminated string; fp is open.
        if unsafe { libc::fputs(line.as_ptr(), fp) } > 0 {
            t.write(line.as_bytes().len() as i64, false);
        }
    }
    // SAFETY: fp is open.
    if unsafe { libc::fputc(b'x' as libc::c_int, fp) } != libc::EOF {
        t.write(1, false);
    }
    // SAFETY: fp is open.
    if unsafe { libc::fflush(fp) } >= 0 {
        t.write(0, true);
    }
    // SAFETY: fp is open; ftell counts nothing in Darshan.
    unsafe { libc::ftell(fp) };
    // SAFETY: fp is open; 100 bytes past the end, then one byte there (a hole before it).
    if unsafe { libc::fseek(fp, 100, libc::SEEK_END) } >= 0 {
        t.seeked(fp);
    }
    // SAFETY: fp is open.
    if unsafe { putc(b'y' as libc::c_int, fp) } != libc::EOF {
        t.write(1, false);
    }
    // SAFETY: fp is open.
    if unsafe { libc::fseek(fp, 0, libc::SEEK_SET) } >= 0 {
        t.seeked(fp);
    }
    read_back(cfg, fp, &mut buf, &mut t)?;
    // SAFETY: fp is open; closed once.
    unsafe { libc::fclose(fp) };
    Ok(t)
}

/// The reads of the stdio-only file: freads, fgetc, rewind, fgets, a failing fseek.
fn read_back(cfg: &StdioCfg, fp: *mut libc::FILE, buf: &mut [u8], t: &mut Tally) -> Result<(), Error> {
    for _ in 0..cfg.reads() {
        // SAFETY: buf holds size bytes; fp is open.
        let n = unsafe { libc::fread(buf.as_mut_ptr().cast(), 1, buf.len(), fp) };
        if n > 0 {
            t.read(n as i64);
        }
    }
    // SAFETY: fp is open.
    if unsafe { libc::fgetc(fp) } != libc::EOF {
        t.read(1);
    }
    // SAFETY: fp is open.
    unsafe { libc::rewind(fp) };
    t.offset = 0;
    t.inc("STDIO_SEEKS", 1);
    // 63 bytes, then the next 8191 (the file has no newline before the fprintf's).
    for size in [64, LONG_GET] {
        let mut line = vec![0u8; size];
        // SAFETY: line holds size bytes; fp is open.
        let got = unsafe { libc::fgets(line.as_mut_ptr().cast(), size as libc::c_int, fp) };
        if !got.is_null() {
            let len = line.iter().position(|b| *b == 0).unwrap_or(line.len());
            t.read(len as i64);
        }
    }
    seek_back(fp, buf, t)?;
    words(fp, t)?;
    scans(cfg, fp, t)?;
    // SAFETY: fp is open; whence 99 fails with EINVAL, which Darshan does not count.
    if unsafe { libc::fseek(fp, 0, 99) } >= 0 {
        return Err(Error::Runtime("fseek with whence 99 succeeded".into()));
    }
    Ok(())
}

/// fseeko to 10 bytes before the end, fgetpos, fread 5, fsetpos back, fgetc.
fn seek_back(fp: *mut libc::FILE, buf: &mut [u8], t: &mut Tally) -> Result<(), Error> {
    // SAFETY: fp is open.
    if unsafe { libc::fseeko(fp, -10, libc::SEEK_END) } >= 0 {
        t.seeked(fp);
    }
    // SAFETY: an all-zero fpos_t is a valid value to overwrite.
    let mut pos: libc::fpos_t = unsafe { std::mem::zeroed() };
    // SAFETY: fp is open; pos is writable. fgetpos counts nothing in Darshan.
    if unsafe { libc::fgetpos(fp, &mut pos) } != 0 {
        return Err(os_err("fgetpos"));
    }
    // SAFETY: buf holds at least 64 bytes; fp is open.
    let n = unsafe { libc::fread(buf.as_mut_ptr().cast(), 1, 5, fp) };
    if n > 0 {
        t.read(n as i64);
    }
    // SAFETY: fp is open; pos came from fgetpos on it.
    if unsafe { libc::fsetpos(fp, &pos) } == 0 {
        t.seeked(fp);
    }
    // SAFETY: fp is open.
    if unsafe { libc::fgetc(fp) } != libc::EOF {
        t.read(1);
    }
    Ok(())
}

/// putw of two ints at the end (one of them -1, EOF's value), then getw
/// of both and once more at the end of the file.
fn words(fp: *mut libc::FILE, t: &mut Tally) -> Result<(), Error> {
    // SAFETY: fp is open.
    if unsafe { libc::fseek(fp, 0, libc::SEEK_END) } >= 0 {
        t.seeked(fp);
    }
    for w in [0x1234_5678, -1] {
        // SAFETY: fp is open.
        if unsafe { putw(w, fp) } != libc::EOF {
            t.write(4, false);
        }
    }
    // SAFETY: fp is open.
    if unsafe { libc::fseek(fp, -8, libc::SEEK_END) } < 0 {
        return Err(os_err("fseek"));
    }
    t.seeked(fp);
    for _ in 0..3 {
        // SAFETY: fp is open.
        let w = unsafe { getw(fp) };
        // Darshan's rule: the -1 read and the EOF (no error) count 4 bytes each too.
        // SAFETY: fp is open.
        if w != libc::EOF || unsafe { libc::ferror(fp) } == 0 {
            t.read(4);
        }
    }
    Ok(())
}

/// At the fprintf's line (`ebq 42`, after the fwrites): fscanf of the word,
/// `__isoc99_vfscanf` called by the program itself of the number ([`vscan_int`]),
/// and `__isoc99_fscanf` (the libc crate's `fscanf`) of one that matches
/// nothing (0: Darshan counts none). Darshan counts `ftell` after less
/// `ftell` before.
fn scans(cfg: &StdioCfg, fp: *mut libc::FILE, t: &mut Tally) -> Result<(), Error> {
    // SAFETY: fp is open.
    if unsafe { libc::fseek(fp, (cfg.writes * cfg.size) as libc::c_long, libc::SEEK_SET) } < 0 {
        return Err(os_err("fseek"));
    }
    t.seeked(fp);
    let (word_fmt, int_fmt) = (cstr("%15s")?, cstr("%d")?);
    let mut word = [0u8; 16];
    let mut n: libc::c_int = 0;
    for i in 0..3 {
        // SAFETY: fp is open.
        let before = unsafe { libc::ftell(fp) };
        // SAFETY: each format has one conversion, given a buffer of 16 bytes or an int.
        let ret = unsafe {
            match i {
                0 => plain_fscanf(fp, word_fmt.as_ptr(), word.as_mut_ptr()),
                1 => vscan_int(fp, int_fmt.as_ptr(), &mut n),
                _ => libc::fscanf(fp, int_fmt.as_ptr(), &mut n as *mut libc::c_int),
            }
        };
        // SAFETY: fp is open.
        let after = unsafe { libc::ftell(fp) };
        if ret != 0 {
            t.read((after - before) as i64);
        }
    }
    if &word[..4] != b"ebq\0" || n != 42 {
        return Err(Error::Runtime(format!("fscanf read {word:?} and {n}")));
    }
    Ok(())
}

/// `__isoc99_vfscanf(fp, format, ap)` called directly, `ap` holding `n`'s
/// address: a `va_list` built by hand, as the x86-64 System V ABI lays it out
/// (stable Rust cannot make one), with every register slot marked used so that
/// `va_arg` reads from `overflow_arg_area`. A program calling `vfscanf` itself
/// (not through `fscanf`) is a top-level STDIO read, which Darshan wraps too.
///
/// # Safety
/// `fp` is open and `format` has exactly one `%d` conversion.
#[cfg(target_arch = "x86_64")]
unsafe fn vscan_int(fp: *mut libc::FILE, format: *const libc::c_char, n: &mut libc::c_int) -> libc::c_int {
    /// One `__va_list_tag`: a `va_list` is an array of one.
    #[repr(C)]
    struct VaListTag {
        gp_offset: u32,
        fp_offset: u32,
        overflow_arg_area: *mut u64,
        reg_save_area: *mut u8,
    }
    extern "C" {
        fn __isoc99_vfscanf(fp: *mut libc::FILE, format: *const libc::c_char, ap: *mut VaListTag) -> libc::c_int;
    }
    let mut args = [n as *mut libc::c_int as u64];
    // 6 general registers × 8 bytes and 8 vector ones × 16 past the save area: all used.
    let mut ap = VaListTag {
        gp_offset: 48,
        fp_offset: 304,
        overflow_arg_area: args.as_mut_ptr(),
        reg_save_area: std::ptr::null_mut(),
    };
    // SAFETY: the caller's contract; ap's one argument is n's address, alive for the call.
    unsafe { __isoc99_vfscanf(fp, format, &mut ap) }
}

/// Elsewhere, `__isoc99_fscanf` (no hand-made `va_list` for other ABIs).
///
/// # Safety
/// `fp` is open and `format` has exactly one `%d` conversion.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn vscan_int(fp: *mut libc::FILE, format: *const libc::c_char, n: &mut libc::c_int) -> libc::c_int {
    // SAFETY: the caller's contract.
    unsafe { libc::fscanf(fp, format, n as *mut libc::c_int) }
}

/// The fdopen'ed file: the program's open(2), then fdopen, one fwrite and fclose.
fn fdopen_file(path: &str, size: usize) -> Result<Tally, Error> {
    let mut t = zeroed();
    let p = cstr(path)?;
    // SAFETY: a NUL-terminated path.
    let fd = unsafe { libc::open(p.as_ptr(), libc::O_CREAT | libc::O_TRUNC | libc::O_WRONLY, 0o644) };
    if fd < 0 {
        return Err(os_err("open"));
    }
    let mode = cstr("w")?;
    // SAFETY: fd is open; the stream owns it from here.
    let fp = unsafe { libc::fdopen(fd, mode.as_ptr()) };
    if fp.is_null() {
        return Err(os_err("fdopen"));
    }
    t.inc("STDIO_OPENS", 1);
    t.inc("STDIO_FDOPENS", 1);
    let buf = vec![b'b'; size];
    // SAFETY: buf holds size bytes; fp is open.
    let n = unsafe { libc::fwrite(buf.as_ptr().cast(), 1, size, fp) };
    if n > 0 {
        t.write(n as i64, false);
    }
    // SAFETY: fp is open; closed once (with its fd).
    unsafe { libc::fclose(fp) };
    Ok(t)
}

extern "C" {
    /// glibc's `putc` (`_IO_putc`), which the libc crate does not declare.
    fn putc(c: libc::c_int, fp: *mut libc::FILE) -> libc::c_int;
    fn getw(fp: *mut libc::FILE) -> libc::c_int;
    fn putw(w: libc::c_int, fp: *mut libc::FILE) -> libc::c_int;
    /// glibc's own `fscanf` (the libc crate's is `__isoc99_fscanf`).
    #[link_name = "fscanf"]
    fn plain_fscanf(fp: *mut libc::FILE, format: *const libc::c_char, ...) -> libc::c_int;
    static stdout: *mut libc::FILE;
    static stderr: *mut libc::FILE;
}

/// The bytes of the line `--std-out` writes to stderr last, newline included.
pub(crate) const LONG_LINE: usize = 201;

/// The bytes of the second line fputs writes to `--file`, newline included.
const LONG_PUT: usize = 5000;

/// The buffer of the second fgets on `--file`: it reads 8191 bytes of a line longer than that.
const LONG_GET: usize = 8192;

/// Darshan's `<STDOUT>` and `<STDERR>` records (opened at the process's
/// first stdio call), with descriptors 1 and 2 sent to `path` first.
fn std_streams(path: &str) -> Result<[Value; 2], Error> {
    let p = cstr(path)?;
    // SAFETY: a NUL-terminated path.
    let fd = unsafe { libc::open(p.as_ptr(), libc::O_CREAT | libc::O_TRUNC | libc::O_WRONLY, 0o644) };
    // SAFETY: fd is open; 1 and 2 become copies of it.
    if fd < 0 || unsafe { libc::dup2(fd, 1) } < 0 || unsafe { libc::dup2(fd, 2) } < 0 {
        return Err(os_err("open and dup2 of --std-out"));
    }
    // SAFETY: fd is open and no longer needed.
    unsafe { libc::close(fd) };
    let (mut out, mut err) = (zeroed(), zeroed());
    for t in [&mut out, &mut err] {
        t.inc("STDIO_OPENS", 1);
    }
    let fmt = cstr("stdio %s %d\n")?;
    let word = cstr("workload")?;
    // SAFETY: a format of one string and one int, both given; stdout is libc's.
    let n = unsafe { libc::printf(fmt.as_ptr(), word.as_ptr(), 7 as libc::c_int) };
    if n > 0 {
        out.write(i64::from(n), false);
    }
    // SAFETY: stdout is libc's stream.
    if unsafe { putc(b'!' as libc::c_int, stdout) } != libc::EOF {
        out.write(1, false);
    }
    // SAFETY: stdout is libc's stream; its write(2) happens inside this fflush.
    if unsafe { libc::fflush(stdout) } >= 0 {
        out.write(0, true);
    }
    let line = cstr("to stderr\n")?;
    // SAFETY: a NUL-terminated string; stderr is unbuffered, written inside the call.
    if unsafe { libc::fputs(line.as_ptr(), stderr) } > 0 {
        err.write(line.as_bytes().len() as i64, false);
    }
    // A line longer than a string column's 127 bytes: Darshan counts all of it.
    let long = cstr(&format!("{}\n", "e".repeat(LONG_LINE - 1)))?;
    // SAFETY: a NUL-terminated string; stderr is libc's stream.
    if unsafe { libc::fputs(long.as_ptr(), stderr) } > 0 {
        err.write(LONG_LINE as i64, false);
    }
    Ok([out.json("<STDOUT>"), err.json("<STDERR>")])
}

pub(crate) fn run_stdio(cfg: &StdioCfg) -> Result<(), Error> {
    if let Some(c) = &cfg.comm {
        set_comm(c)?;
    }
    let mut files = vec![];
    if let Some(f) = &cfg.std_out {
        files.extend(std_streams(f)?);
    }
    files.push(stdio_file(cfg)?.json(&cfg.file));
    if let Some(q) = &cfg.fdopen {
        files.push(fdopen_file(q, cfg.size as usize)?.json(q));
    }
    emit_report(cfg.report.as_deref(), &json!({ "files": files }))
}

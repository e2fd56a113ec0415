//! `copies`: the in-kernel copy calls between known files, for the tests of the
//! two-fd file columns (`in_…`, `out_…`).
//!
//! `copies --src S --dst D [--chunk B] [--report FILE]` copies S three times,
//! each to a new file: `D.sendfile` with `sendfile` (file → file), `D.cfr`
//! with `copy_file_range` (file → file; the source's offset passed by pointer,
//! the destination's the file position), and `D.splice` with `splice` file →
//! pipe then pipe → file, each call asking for at most B bytes (default 65536).
//! The report counts each call kind's calls, the bytes they returned and the
//! sum of the file offsets they started at (every copy is sequential: a
//! call's offset is the bytes before it), so a test compares with what the
//! kernel saw per call.

use super::{close_fd, emit_report, open_path, os_err, Error};
use serde_json::{json, Value};

/// `copies --src S --dst D [--chunk B] [--report FILE]`.
#[derive(Debug, PartialEq, clap::Args)]
pub(crate) struct CopiesCfg {
    /// S: the file copied.
    #[arg(long)]
    src: String,
    /// D: the copies are D.sendfile, D.cfr and D.splice.
    #[arg(long)]
    dst: String,
    /// B: the most bytes one call asks for.
    #[arg(long, default_value_t = 65536, value_parser = clap::value_parser!(u64).range(1..=1 << 30))]
    chunk: u64,
    #[arg(long)]
    report: Option<String>,
}

/// Calls made, bytes they returned and the sum of the offsets they started at, per kind.
#[derive(Default)]
struct Tally {
    calls: u64,
    bytes: u64,
    offsets: u64,
}

impl Tally {
    /// Counts one call's return value; `Ok(true)` while it moved bytes.
    fn add(&mut self, what: &str, ret: isize) -> Result<bool, Error> {
        if ret < 0 {
            return Err(os_err(what));
        }
        self.calls += 1;
        self.offsets += self.bytes;
        self.bytes += ret as u64;
        Ok(ret > 0)
    }

    fn json(&self) -> Value {
        json!({"calls": self.calls, "bytes": self.bytes, "offsets": self.offsets})
    }
}

/// Opens the source and a new destination `dst.suffix`.
fn open_pair(cfg: &CopiesCfg, suffix: &str) -> Result<(libc::c_int, libc::c_int), Error> {
    let src = open_path(&cfg.src, libc::O_RDONLY, 0)?;
    let dst = open_path(&format!("{}.{suffix}", cfg.dst), libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, 0o644)?;
    Ok((src, dst))
}

pub(crate) fn run_copies(cfg: &CopiesCfg) -> Result<(), Error> {
    let chunk = cfg.chunk as usize;
    let (mut sendfile, mut cfr, mut to_pipe, mut from_pipe) =
        (Tally::default(), Tally::default(), Tally::default(), Tally::default());

    let (src, dst) = open_pair(cfg, "sendfile")?;
    // SAFETY: both fds are open; a NULL offset uses and advances src's file position.
    while sendfile.add("sendfile", unsafe { libc::sendfile(dst, src, std::ptr::null_mut(), chunk) })? {}
    close_fd(src);
    close_fd(dst);

    let (src, dst) = open_pair(cfg, "cfr")?;
    let mut off_in: libc::loff_t = 0;
    loop {
        // SAFETY: both fds are open; the kernel reads and advances `off_in`; a NULL
        // destination offset uses its file position.
        let ret = unsafe { libc::copy_file_range(src, &mut off_in, dst, std::ptr::null_mut(), chunk, 0) };
        if !cfr.add("copy_file_range", ret as isize)? {
            break;
        }
    }
    close_fd(src);
    close_fd(dst);

    let (src, dst) = open_pair(cfg, "splice")?;
    let mut pipe = [0 as libc::c_int; 2];
    // SAFETY: pipe has room for two fds.
    if unsafe { libc::pipe(pipe.as_mut_ptr()) } != 0 {
        return Err(os_err("pipe"));
    }
    let null = std::ptr::null_mut();
    loop {
        // SAFETY: fds are open; NULL offsets (a pipe has none; the file uses its position).
        let got = unsafe { libc::splice(src, null, pipe[1], null, chunk.min(65536), 0) };
        if !to_pipe.add("splice", got)? {
            break;
        }
        let mut left = got as u64;
        while left > 0 {
            // SAFETY: as above.
            let put = unsafe { libc::splice(pipe[0], null, dst, null, left as usize, 0) };
            if !from_pipe.add("splice", put)? {
                return Err(Error::Runtime("splice: the pipe gave 0 bytes".into()));
            }
            left -= put as u64;
        }
    }
    for fd in [src, dst, pipe[0], pipe[1]] {
        close_fd(fd);
    }
    let json = json!({
        "pid": std::process::id(),
        "sendfile": sendfile.json(),
        "copy_file_range": cfr.json(),
        "splice_in": to_pipe.json(),
        "splice_out": from_pipe.json(),
    });
    emit_report(cfg.report.as_deref(), &json)
}

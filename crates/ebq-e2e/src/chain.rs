//! `chain`: per file, an open, a known number of reads of a known size, and
//! a close — the truth for a chained JOIN (openat → read → close per fd).
//!
//! Before `--wait-file`, each of the `--reads` files is created with enough
//! bytes for all its reads, and one more file is opened (the stray fd).
//! After it, for file `i`: `open` (glibc's `openat`), `reads[i]` `read`s of
//! `(i + 1) * --size` bytes each (every read returns what it asked for), and
//! `close`; each file's `ns` is measured around the three (from before the
//! open to after the close), on CLOCK_MONOTONIC as `bpf_ktime_get_ns()`
//! is. Then one read and the close of a pipe's read end (no `openat` made
//! it): a middle event and an end event with no open pair. The files are
//! deleted at the end. (Writing the report opens, writes and closes one
//! more file: a pair with no reads.)

use super::{close_fd, emit_report, open_path, os_err, wait_for_file, Error};
use serde_json::json;

/// `chain --reads R1,R2,… [--size B] [--report FILE] [--wait-file PATH]`.
#[derive(Debug, PartialEq, clap::Args)]
pub(crate) struct ChainCfg {
    /// R_i: the reads of file i.
    #[arg(long, required = true, value_delimiter = ',', action = clap::ArgAction::Set,
          value_parser = clap::value_parser!(u64).range(..=u64::from(u32::MAX)))]
    reads: Vec<u64>,
    /// B: file i's reads are of (i + 1)·B bytes.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=65536))]
    size: u64,
    #[arg(long)]
    report: Option<String>,
    #[arg(long)]
    wait_file: Option<String>,
}

/// `read(fd, buf, len)`, which must return `len`.
fn read_exactly(fd: libc::c_int, buf: &mut [u8]) -> Result<(), Error> {
    // SAFETY: buf is a live, writable buffer of buf.len() bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n != buf.len() as isize {
        return Err(os_err(&format!("read of {} bytes gave {n}", buf.len())));
    }
    Ok(())
}

pub(crate) fn run_chain(cfg: &ChainCfg) -> Result<(), Error> {
    let dir = std::env::temp_dir();
    let path = |i: usize| format!("{}/ebq-chain-{}-{i}", dir.display(), std::process::id());
    let sizes: Vec<u64> = (1..=cfg.reads.len() as u64).map(|i| i * cfg.size).collect();
    for (i, (reads, size)) in cfg.reads.iter().zip(&sizes).enumerate() {
        std::fs::write(path(i), vec![7u8; (reads * size) as usize]).map_err(|e| os_err(&format!("write: {e}")))?;
    }
    let mut pipe = [0 as libc::c_int; 2];
    // SAFETY: pipe fills the two fds of a live array, and 8 bytes of a live buffer are written.
    if unsafe { libc::pipe(pipe.as_mut_ptr()) } != 0
        || unsafe { libc::write(pipe[1], [7u8; 8].as_ptr().cast(), 8) } != 8
    {
        return Err(os_err("pipe"));
    }
    wait_for_file(cfg.wait_file.as_deref());
    let mut parts = vec![];
    for (i, (reads, size)) in cfg.reads.iter().zip(&sizes).enumerate() {
        let mut buf = vec![0u8; *size as usize];
        let before = crate::monotonic_ns();
        let fd = open_path(&path(i), libc::O_RDONLY, 0)?;
        for _ in 0..*reads {
            read_exactly(fd, &mut buf)?;
        }
        close_fd(fd);
        let ns = crate::monotonic_ns() - before;
        parts.push(json!({"fd": fd, "reads": reads, "bytes": reads * size, "ns": ns}));
    }
    read_exactly(pipe[0], &mut [0u8; 8])?;
    close_fd(pipe[0]);
    for i in 0..cfg.reads.len() {
        let _ = std::fs::remove_file(path(i));
    }
    let json = json!({"pid": std::process::id(), "files": parts, "stray_reads": 1, "stray_closes": 1});
    emit_report(cfg.report.as_deref(), &json)
}

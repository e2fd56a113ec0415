//! `fileio`: known write/read/pwrite64/pread64 calls on given files, for the
//! file-column tests (inode, device, file system, file position).
//!
//! For file i (of `--files P1,P2,…`), after `--wait-file`: open it with
//! `openat(O_CREAT|O_TRUNC|O_RDWR)`, issue Wi `write` calls of Si = B·(i+1)
//! bytes (file positions 0, Si, 2·Si, …), `lseek` to 0, Ri `read` calls of Si
//! bytes (positions 0, Si, …), Wi `pwrite64` and Ri `pread64` calls of Si bytes
//! at offsets j·Si, close it, and `fsync` the closed fd (EBADF). Ri ≤ Wi so
//! every read is full. Finally one `fsync(1 << 20)` (EBADF: beyond any fd
//! table). The files are left in place; the report gives each one's fd, inode
//! and st_dev.

use super::{close_fd, emit_report, get_comm, open_path, os_err, set_comm, usage, wait_for_file, Error};
use serde_json::{json, Value};

/// An fd beyond any fd table, for the final `fsync`.
const BAD_FD: libc::c_int = 1 << 20;

/// `fileio --files P1,...,PK --writes W1,...,WK --reads R1,...,RK [--size B] [--comm NAME] [--v2]
/// [--report FILE] [--wait-file PATH]`.
#[derive(Debug, PartialEq, clap::Args)]
pub(crate) struct FileIoCfg {
    /// The files, created (truncated) in order.
    #[arg(long, required = true, value_delimiter = ',', action = clap::ArgAction::Set)]
    files: Vec<String>,
    /// Wi: the write calls on file i (then as many pwrite64 calls).
    #[arg(long, required = true, value_delimiter = ',', action = clap::ArgAction::Set,
          value_parser = clap::value_parser!(u64).range(..=100_000))]
    writes: Vec<u64>,
    /// Ri ≤ Wi: the read calls on file i (then as many pread64 calls).
    #[arg(long, required = true, value_delimiter = ',', action = clap::ArgAction::Set,
          value_parser = clap::value_parser!(u64).range(..=100_000))]
    reads: Vec<u64>,
    /// B: file i's calls move B·(i+1) bytes.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=1 << 16))]
    size: u64,
    #[arg(long, value_parser = crate::comm_arg)]
    comm: Option<String>,
    #[arg(long)]
    report: Option<String>,
    #[arg(long)]
    wait_file: Option<String>,
    /// `--v2`: also Wi `pwritev2` and Ri `preadv2` calls (one iovec of Si
    /// bytes at offsets j·Si, flags 0) after the pread64s.
    #[arg(long)]
    v2: bool,
}

impl FileIoCfg {
    /// One write and one read count per file, and no file read past what was written.
    pub(crate) fn check(&self) -> Result<(), Error> {
        if self.writes.len() != self.files.len() || self.reads.len() != self.files.len() {
            return usage("--writes and --reads need one count per file in --files");
        }
        if self.reads.iter().zip(&self.writes).any(|(r, w)| r > w) {
            return usage("each --reads count must be at most its --writes count (reads read what was written)");
        }
        Ok(())
    }
}

/// Checks that a read/write call moved exactly `want` bytes.
fn full(n: isize, want: usize, what: &str) -> Result<(), Error> {
    if n < 0 {
        return Err(os_err(what));
    }
    if n as usize != want {
        return Err(Error::Runtime(format!("{what}: {n} of {want} bytes")));
    }
    Ok(())
}

/// One file's calls after the open, in the order of the module doc: Wi
/// writes, the lseek, Ri reads, Wi pwrite64s, Ri pread64s (and with `--v2`
/// the pwritev2s and preadv2s), all of `b.len()` bytes; then its inode and
/// st_dev (fstat).
fn file_calls(fd: libc::c_int, b: &mut [u8], (w, r): (u64, u64), v2: bool) -> Result<(u64, u64), Error> {
    let size = b.len() as u64;
    for _ in 0..w {
        // SAFETY: b holds `size` bytes; fd is open.
        full(unsafe { libc::write(fd, b.as_ptr().cast(), b.len()) }, b.len(), "write")?;
    }
    // SAFETY: fd is open.
    if unsafe { libc::lseek(fd, 0, libc::SEEK_SET) } != 0 {
        return Err(os_err("lseek"));
    }
    for _ in 0..r {
        // SAFETY: as above.
        full(unsafe { libc::read(fd, b.as_mut_ptr().cast(), b.len()) }, b.len(), "read")?;
    }
    for j in 0..w {
        let off = (j * size) as libc::off_t;
        // SAFETY: as above.
        full(unsafe { libc::pwrite(fd, b.as_ptr().cast(), b.len(), off) }, b.len(), "pwrite64")?;
    }
    for j in 0..r {
        let off = (j * size) as libc::off_t;
        // SAFETY: as above.
        full(unsafe { libc::pread(fd, b.as_mut_ptr().cast(), b.len(), off) }, b.len(), "pread64")?;
    }
    if v2 {
        vectored_calls(fd, b, (w, r))?;
    }
    // SAFETY: st is plain data fstat fills.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fd is open and st is valid.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(os_err("fstat"));
    }
    Ok((st.st_ino, st.st_dev))
}

/// `--v2`'s calls: Wi `pwritev2` and Ri `preadv2` of one iovec over `b`, at offsets j·Si.
fn vectored_calls(fd: libc::c_int, b: &mut [u8], (w, r): (u64, u64)) -> Result<(), Error> {
    let size = b.len() as u64;
    let iov = libc::iovec { iov_base: b.as_mut_ptr().cast(), iov_len: b.len() };
    for j in 0..w {
        // SAFETY: iov describes b; fd is open.
        let n = unsafe { libc::pwritev2(fd, &iov, 1, (j * size) as libc::off_t, 0) };
        full(n, b.len(), "pwritev2")?;
    }
    for j in 0..r {
        // SAFETY: as above.
        let n = unsafe { libc::preadv2(fd, &iov, 1, (j * size) as libc::off_t, 0) };
        full(n, b.len(), "preadv2")?;
    }
    Ok(())
}

/// One file's entry in the report.
fn file_report(
    cfg: &FileIoCfg,
    path: &str,
    fd: libc::c_int,
    (size, w, r): (u64, u64, u64),
    (ino, dev): (u64, u64),
) -> Value {
    let positions: Vec<u64> = (0..w).map(|j| j * size).collect();
    json!({
        "path": path,
        "fd": fd,
        "inode": ino,
        "st_dev": dev,
        "dev_major": libc::major(dev),
        "dev_minor": libc::minor(dev),
        "size": size,
        "opens": 1,
        "writes": w,
        "reads": r,
        "pwrites": w,
        "preads": r,
        "pwritev2s": if cfg.v2 { w } else { 0 },
        "preadv2s": if cfg.v2 { r } else { 0 },
        "write_positions": positions,
        "read_positions": positions[..r as usize],
    })
}

pub(crate) fn run_fileio(cfg: &FileIoCfg) -> Result<(), Error> {
    if let Some(c) = &cfg.comm {
        set_comm(c)?;
    }
    let mut buf = vec![0x5au8; (cfg.size * cfg.files.len() as u64) as usize];
    wait_for_file(cfg.wait_file.as_deref());
    let mut parts = vec![];
    for (i, path) in cfg.files.iter().enumerate() {
        let size = cfg.size * (i as u64 + 1);
        let (w, r) = (cfg.writes[i], cfg.reads[i]);
        let fd = open_path(path, libc::O_CREAT | libc::O_TRUNC | libc::O_RDWR | libc::O_CLOEXEC, 0o644)?;
        let result = file_calls(fd, &mut buf[..size as usize], (w, r), cfg.v2);
        close_fd(fd);
        // SAFETY: fsync on a closed fd only fails (EBADF).
        unsafe { libc::fsync(fd) };
        parts.push(file_report(cfg, path, fd, (size, w, r), result?));
    }
    // SAFETY: as above; no process has this many fds open.
    unsafe { libc::fsync(BAD_FD) };
    let json = json!({"pid": std::process::id(), "comm": get_comm(), "bad_fd": BAD_FD, "files": parts});
    emit_report(cfg.report.as_deref(), &json)
}

#[cfg(test)]
mod tests {
    use crate::testing::{is_usage, parse_line};
    use crate::Cmd;

    #[test]
    fn parses_and_checks_counts() {
        let Cmd::Fileio(cfg) = parse_line("fileio --files a,b --writes 5,7 --reads 3,7 --size 10").unwrap() else {
            panic!()
        };
        assert_eq!((cfg.writes, cfg.reads, cfg.size), (vec![5, 7], vec![3, 7], 10));
        assert!(is_usage(parse_line("fileio --files a,b --writes 5 --reads 3,7")));
        assert!(is_usage(parse_line("fileio --files a --writes 2 --reads 3")));
    }
}

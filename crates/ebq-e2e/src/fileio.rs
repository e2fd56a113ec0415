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

use super::{
    close_fd, emit_report, get_comm, json_str, json_u64_list, open_path, os_err, parse_u64, set_comm, usage,
    wait_for_file, Error, Flags,
};

/// An fd beyond any fd table, for the final `fsync`.
const BAD_FD: libc::c_int = 1 << 20;

#[derive(Debug, PartialEq)]
pub(crate) struct FileIoCfg {
    files: Vec<String>,
    writes: Vec<u64>,
    reads: Vec<u64>,
    size: u64,
    comm: Option<String>,
    report: Option<String>,
    wait_file: Option<String>,
    /// `--v2`: also Wi `pwritev2` and Ri `preadv2` calls (one iovec of Si
    /// bytes at offsets j·Si, flags 0) after the pread64s.
    v2: bool,
}

fn list(key: &str, v: &str) -> Result<Vec<u64>, Error> {
    v.split(',').map(|item| parse_u64(key, item.trim(), 0, 100_000)).collect()
}

pub(crate) fn parse_fileio(args: &[String]) -> Result<FileIoCfg, Error> {
    let f = Flags::parse(args, &["files", "writes", "reads", "size", "comm", "report", "wait-file"], &["v2"])?;
    let files: Vec<String> = f.required("files")?.split(',').map(str::to_string).collect();
    let writes = list("writes", f.required("writes")?)?;
    let reads = list("reads", f.required("reads")?)?;
    if writes.len() != files.len() || reads.len() != files.len() {
        return usage("--writes and --reads need one count per file in --files");
    }
    if reads.iter().zip(&writes).any(|(r, w)| r > w) {
        return usage("each --reads count must be at most its --writes count (reads read what was written)");
    }
    Ok(FileIoCfg {
        files,
        writes,
        reads,
        size: f.u64_or("size", Some(100), 1, 1 << 16)?,
        comm: f.comm()?,
        report: f.get("report").map(str::to_string),
        wait_file: f.get("wait-file").map(str::to_string),
        v2: f.has("v2"),
    })
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
        let b = &mut buf[..size as usize];
        let io = || -> Result<(u64, u64), Error> {
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
                full(unsafe { libc::read(fd, b.as_ptr() as *mut _, b.len()) }, b.len(), "read")?;
            }
            for j in 0..w {
                let off = (j * size) as libc::off_t;
                // SAFETY: as above.
                full(unsafe { libc::pwrite(fd, b.as_ptr().cast(), b.len(), off) }, b.len(), "pwrite64")?;
            }
            for j in 0..r {
                let off = (j * size) as libc::off_t;
                // SAFETY: as above.
                full(unsafe { libc::pread(fd, b.as_ptr() as *mut _, b.len(), off) }, b.len(), "pread64")?;
            }
            for j in 0..if cfg.v2 { w } else { 0 } {
                let iov = libc::iovec { iov_base: b.as_ptr() as *mut _, iov_len: b.len() };
                // SAFETY: iov describes b; fd is open.
                let n = unsafe { libc::pwritev2(fd, &iov, 1, (j * size) as libc::off_t, 0) };
                full(n, b.len(), "pwritev2")?;
            }
            for j in 0..if cfg.v2 { r } else { 0 } {
                let iov = libc::iovec { iov_base: b.as_ptr() as *mut _, iov_len: b.len() };
                // SAFETY: as above.
                let n = unsafe { libc::preadv2(fd, &iov, 1, (j * size) as libc::off_t, 0) };
                full(n, b.len(), "preadv2")?;
            }
            // SAFETY: st is plain data fstat fills.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            // SAFETY: fd is open and st is valid.
            if unsafe { libc::fstat(fd, &mut st) } != 0 {
                return Err(os_err("fstat"));
            }
            Ok((st.st_ino, st.st_dev))
        };
        let result = io();
        close_fd(fd);
        // SAFETY: fsync on a closed fd only fails (EBADF).
        unsafe { libc::fsync(fd) };
        let (ino, dev) = result?;
        let positions: Vec<u64> = (0..w).map(|j| j * size).collect();
        parts.push(format!(
            "{{\"path\":{},\"fd\":{fd},\"inode\":{ino},\"st_dev\":{dev},\"dev_major\":{},\"dev_minor\":{},\
             \"size\":{size},\"writes\":{w},\"reads\":{r},\"pwrites\":{w},\"preads\":{r},\"pwritev2s\":{},\"preadv2s\":{},\
             \"write_positions\":{},\"read_positions\":{}}}",
            json_str(path),
            libc::major(dev),
            libc::minor(dev),
            if cfg.v2 { w } else { 0 },
            if cfg.v2 { r } else { 0 },
            json_u64_list(&positions),
            json_u64_list(&positions[..r as usize]),
        ));
    }
    // SAFETY: as above; no process has this many fds open.
    unsafe { libc::fsync(BAD_FD) };
    let json = format!(
        "{{\"pid\":{},\"comm\":{},\"bad_fd\":{BAD_FD},\"files\":[{}]}}",
        std::process::id(),
        json_str(&get_comm()),
        parts.join(",")
    );
    emit_report(cfg.report.as_deref(), &json)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn parses_and_checks_counts() {
        let cfg = parse_fileio(&args("--files a,b --writes 5,7 --reads 3,7 --size 10")).unwrap();
        assert_eq!((cfg.writes, cfg.reads, cfg.size), (vec![5, 7], vec![3, 7], 10));
        assert!(matches!(parse_fileio(&args("--files a,b --writes 5 --reads 3,7")), Err(Error::Usage(_))));
        assert!(matches!(parse_fileio(&args("--files a --writes 2 --reads 3")), Err(Error::Usage(_))));
    }
}

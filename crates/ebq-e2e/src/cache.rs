//! `cachepass` and `mmaptouch`: known page-cache traffic on one existing file,
//! for the page-cache and mmap tests.
//!
//! `cachepass --file F [--passes P] [--drop]`: with `--drop`, `fsync` the file and
//! drop it from the page cache (`posix_fadvise(POSIX_FADV_DONTNEED)`); then read
//! it P times (default 1) from start to end in page-sized `pread64` calls at
//! page-aligned offsets, so each call asks the cache for exactly one page.
//! `mmaptouch --file F [--drop] [--write]`: the same drop, then map the whole
//! file (`MAP_SHARED`) and read one byte of every page, in order; with
//! `--write`, store one byte to every page instead (each page's first byte
//! becomes its page number, low 8 bits), so every first touch is a write fault.

use super::{close_fd, open_path, os_err, usage, Error};

/// The page size the reads and touches step by (x86-64, arm64 with 4 KiB pages).
const PAGE: usize = 4096;

/// `cachepass --file F [--passes P] [--drop]`, `mmaptouch --file F [--drop] [--write]`.
#[derive(Debug, PartialEq, clap::Args)]
pub(crate) struct CacheCfg {
    /// F: an existing file.
    #[arg(long)]
    file: String,
    /// P: how many times cachepass reads the file.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(..=1000))]
    passes: u64,
    /// First drop the file's pages from the page cache.
    #[arg(long)]
    drop: bool,
    /// mmaptouch: store a byte to every page instead of reading one.
    #[arg(long)]
    write: bool,
}

/// Opens the file (read-write for `--write`), drops its pages when asked; returns the fd and size.
fn open_dropped(cfg: &CacheCfg) -> Result<(libc::c_int, usize), Error> {
    let fd = open_path(&cfg.file, if cfg.write { libc::O_RDWR } else { libc::O_RDONLY }, 0)?;
    // SAFETY: fd is open; st is a plain struct fstat fills.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(os_err("fstat"));
    }
    if cfg.drop {
        // SAFETY: fd is open.
        if unsafe { libc::fsync(fd) } != 0 {
            return Err(os_err("fsync"));
        }
        // SAFETY: fd is open; offset 0, length 0 = the whole file.
        let rc = unsafe { libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc != 0 {
            return Err(Error::Runtime(format!("posix_fadvise: error {rc}")));
        }
    }
    Ok((fd, st.st_size as usize))
}

pub(crate) fn run_cachepass(cfg: &CacheCfg) -> Result<(), Error> {
    let (fd, size) = open_dropped(cfg)?;
    let mut buf = vec![0u8; PAGE];
    for _ in 0..cfg.passes {
        for off in (0..size).step_by(PAGE) {
            let want = PAGE.min(size - off);
            // SAFETY: buf holds PAGE bytes; fd is open.
            let n = unsafe { libc::pread64(fd, buf.as_mut_ptr().cast(), want, off as libc::off64_t) };
            if n != want as isize {
                return Err(Error::Runtime(format!("pread64 at {off}: {n} of {want} bytes")));
            }
        }
    }
    close_fd(fd);
    Ok(())
}

pub(crate) fn run_mmaptouch(cfg: &CacheCfg) -> Result<(), Error> {
    let (fd, size) = open_dropped(cfg)?;
    if size == 0 {
        return usage("mmaptouch: the file is empty");
    }
    let prot = if cfg.write { libc::PROT_READ | libc::PROT_WRITE } else { libc::PROT_READ };
    // SAFETY: a fresh shared mapping of the open fd's first `size` bytes.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), size, prot, libc::MAP_SHARED, fd, 0) };
    if p == libc::MAP_FAILED {
        return Err(os_err("mmap"));
    }
    let base = p.cast::<u8>();
    let mut sum = 0u64;
    for off in (0..size).step_by(PAGE) {
        // SAFETY: off < size, inside the mapping (writable with --write).
        unsafe {
            if cfg.write {
                std::ptr::write_volatile(base.add(off), (off / PAGE) as u8);
            } else {
                sum += u64::from(std::ptr::read_volatile(base.add(off)));
            }
        }
    }
    std::hint::black_box(sum);
    // SAFETY: the mapping made above, unmapped once.
    unsafe { libc::munmap(p, size) };
    close_fd(fd);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::{is_usage, parse_as};

    fn parse(s: &str) -> Result<CacheCfg, Error> {
        parse_as!(Cachepass, format!("cachepass {s}"))
    }

    #[test]
    fn parses_file_passes_and_drop() {
        let cfg = parse("--file f --passes 2 --drop").unwrap();
        assert_eq!(cfg, CacheCfg { file: "f".into(), passes: 2, drop: true, write: false });
        assert_eq!(parse("--file f").unwrap(), CacheCfg { file: "f".into(), passes: 1, drop: false, write: false });
        assert!(parse("--file f --write").unwrap().write);
        assert!(is_usage(parse("--passes 2")));
        assert!(is_usage(parse("--file f --passes x")));
    }
}

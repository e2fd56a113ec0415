//! `mmapwrite`: stores through a shared file mapping, and msync — the mmap
//! path's ground truth for file columns at a mapped address (user page
//! faults, `sys_enter_msync`).
//!
//! `mmapwrite --file F --pages N [--skip K] [--msyncs M] [--comm NAME] [--report FILE] [--wait-file PATH]`,
//! after `--comm` and the wait: creates F with N pages (ftruncate), maps its
//! pages K.. (default 0: all; the mapping starts at file offset K × 4096)
//! read-write `MAP_SHARED`, stores one byte at the start of every mapped page in
//! order, calls `msync(MS_SYNC)` on the whole mapping M times (default 1),
//! unmaps and closes. A store to a page of a shared mapping that is not
//! mapped yet is a write fault, which the kernel serves one page at a time
//! (fault-around maps neighbours only for read faults): N faults at N
//! addresses in the file. The report gives N, M and the file's inode.

use super::{close_fd, emit_report, open_path, os_err, set_comm, usage, wait_for_file, Error};
use serde_json::json;

const PAGE: usize = 4096;

/// `mmapwrite --file F --pages N [--skip K] [--msyncs M] [--comm NAME] [--report FILE] [--wait-file PATH]`.
#[derive(Debug, PartialEq, clap::Args)]
pub(crate) struct MmapWriteCfg {
    /// F: the file, created (truncated) with N pages.
    #[arg(long)]
    file: String,
    /// N: the file's pages.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pages: u64,
    /// K < N: the pages before the mapping.
    #[arg(long, default_value_t = 0)]
    skip: u64,
    /// M: the msync(MS_SYNC) calls on the whole mapping.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(..=1000))]
    msyncs: u64,
    #[arg(long, value_parser = crate::comm_arg)]
    comm: Option<String>,
    #[arg(long)]
    report: Option<String>,
    #[arg(long)]
    wait_file: Option<String>,
}

impl MmapWriteCfg {
    /// At least one page is mapped.
    pub(crate) fn check(&self) -> Result<(), Error> {
        if self.skip >= self.pages {
            return usage(format!("--skip: {} is out of range 0..={}", self.skip, self.pages - 1));
        }
        Ok(())
    }
}

pub(crate) fn run_mmapwrite(cfg: &MmapWriteCfg) -> Result<(), Error> {
    if let Some(c) = &cfg.comm {
        set_comm(c)?;
    }
    wait_for_file(cfg.wait_file.as_deref());
    let fd = open_path(&cfg.file, libc::O_CREAT | libc::O_TRUNC | libc::O_RDWR, 0o644)?;
    let file_size = cfg.pages as usize * PAGE;
    let size = file_size - cfg.skip as usize * PAGE;
    // SAFETY: fd is open for writing; st is a plain struct fstat fills.
    if unsafe { libc::ftruncate(fd, file_size as libc::off_t) } != 0 {
        return Err(os_err("ftruncate"));
    }
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(os_err("fstat"));
    }
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    let from = (cfg.skip as usize * PAGE) as libc::off_t;
    // SAFETY: a fresh shared mapping of the open fd's last `size` bytes.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), size, prot, libc::MAP_SHARED, fd, from) };
    if p == libc::MAP_FAILED {
        return Err(os_err("mmap"));
    }
    let base = p.cast::<u8>();
    for off in (0..size).step_by(PAGE) {
        // SAFETY: off < size, inside the writable mapping.
        unsafe { std::ptr::write_volatile(base.add(off), 1) };
    }
    for _ in 0..cfg.msyncs {
        // SAFETY: the whole mapping made above.
        if unsafe { libc::msync(p, size, libc::MS_SYNC) } != 0 {
            return Err(os_err("msync"));
        }
    }
    // SAFETY: the mapping made above, unmapped once.
    unsafe { libc::munmap(p, size) };
    close_fd(fd);
    let json = json!({"pages": cfg.pages, "skip": cfg.skip, "msyncs": cfg.msyncs, "inode": st.st_ino});
    emit_report(cfg.report.as_deref(), &json)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::{is_usage, parse_as};

    fn parse(s: &str) -> Result<MmapWriteCfg, Error> {
        parse_as!(Mmapwrite, format!("mmapwrite {s}"))
    }

    #[test]
    fn parses_pages_and_msyncs() {
        let cfg = parse("--file f --pages 8").unwrap();
        assert_eq!((cfg.pages, cfg.msyncs), (8, 1));
        assert_eq!(parse("--file f --pages 8 --msyncs 3").unwrap().msyncs, 3);
        assert!(is_usage(parse("--file f")));
        assert!(is_usage(parse("--file f --pages 0")));
        assert_eq!(parse("--file f --pages 8 --skip 7").unwrap().skip, 7);
        assert!(is_usage(parse("--file f --pages 8 --skip 8")));
    }
}

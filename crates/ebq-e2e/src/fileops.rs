//! `fileops`: the file calls besides read and write — space, size and sync
//! calls on one file, and the pipe-only copies — for the tests of `io.ops`'
//! `sync` and `meta` operations and of `tee`/`vmsplice` byte counts.
//!
//! `fileops --file F [--comm NAME] [--report FILE] [--wait-file PATH]`, after `--comm` and the wait:
//! openat(F, O_CREAT|O_TRUNC|O_RDWR); fallocate 1 MiB at 0 and 64 KiB at
//! 1 MiB; ftruncate to 512 KiB, then to 4096; one 4096-byte write at 0;
//! sync_file_range over it three times; syncfs, fsync and fdatasync once
//! each (the last two through syscall(2), with 6 in the fd register's upper
//! half, which the kernel ignores); close. Then, on two pipes: vmsplice of a 3000-byte buffer into the
//! first, tee of those 3000 bytes into the second, and a read draining each.
//! Every call must succeed; the report counts each kind and the bytes that
//! write, vmsplice and tee returned.

use super::{close_fd, emit_report, get_comm, open_path, os_err, set_comm, wait_for_file, Error};
use serde_json::json;

/// `fileops --file F [--comm NAME] [--report FILE] [--wait-file PATH]`.
#[derive(Debug, PartialEq, clap::Args)]
pub(crate) struct FileOpsCfg {
    /// F: the file, created (truncated).
    #[arg(long)]
    file: String,
    #[arg(long, value_parser = crate::comm_arg)]
    comm: Option<String>,
    #[arg(long)]
    report: Option<String>,
    #[arg(long)]
    wait_file: Option<String>,
}

/// Fails with the call's errno unless it returned ≥ 0; the value otherwise.
fn check(what: &str, ret: i64) -> Result<u64, Error> {
    if ret < 0 {
        return Err(os_err(what));
    }
    Ok(ret as u64)
}

/// What fsync's and fdatasync's fd register holds above the fd.
const DIRTY_UPPER_HALF: u64 = 0x6_0000_0000;

/// Bytes moved through the pipes.
const PIPE_BYTES: usize = 3000;

pub(crate) fn run_fileops(cfg: &FileOpsCfg) -> Result<(), Error> {
    if let Some(c) = &cfg.comm {
        set_comm(c)?;
    }
    wait_for_file(cfg.wait_file.as_deref());
    let fd = open_path(&cfg.file, libc::O_CREAT | libc::O_TRUNC | libc::O_RDWR, 0o644)?;
    // SAFETY (every call below): fd is open for reading and writing; buffers
    // outlive the calls and are as long as the lengths passed.
    for (offset, len) in [(0, 1 << 20), (1 << 20, 64 << 10)] {
        check("fallocate", i64::from(unsafe { libc::fallocate(fd, 0, offset, len) }))?;
    }
    for len in [512 << 10, 4096] {
        check("ftruncate", i64::from(unsafe { libc::ftruncate(fd, len) }))?;
    }
    let block = [7u8; 4096];
    let written = check("write", unsafe { libc::write(fd, block.as_ptr().cast(), block.len()) } as i64)?;
    let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE | libc::SYNC_FILE_RANGE_WRITE | libc::SYNC_FILE_RANGE_WAIT_AFTER;
    for _ in 0..3 {
        check("sync_file_range", i64::from(unsafe { libc::sync_file_range(fd, 0, 4096, flags) }))?;
    }
    check("syncfs", i64::from(unsafe { libc::syncfs(fd) }))?;
    // fsync and fdatasync get their fd with garbage in the register's upper half, which
    // the kernel ignores (it takes an `unsigned int fd`): a caller may leave anything there,
    // as a Rust i32 argument did. Tracers must read the fd as the kernel does.
    for nr in [libc::SYS_fsync, libc::SYS_fdatasync] {
        check("fsync/fdatasync", unsafe { libc::syscall(nr, DIRTY_UPPER_HALF | fd as u64) })?;
    }
    close_fd(fd);

    let (mut a, mut b) = ([0 as libc::c_int; 2], [0 as libc::c_int; 2]);
    for p in [&mut a, &mut b] {
        // SAFETY: p has room for two fds.
        check("pipe", i64::from(unsafe { libc::pipe(p.as_mut_ptr()) }))?;
    }
    let data = [0x5au8; PIPE_BYTES];
    let iov = libc::iovec { iov_base: data.as_ptr() as *mut libc::c_void, iov_len: data.len() };
    // SAFETY: iov points at `data`, alive until the pipe is drained below.
    let spliced = check("vmsplice", unsafe { libc::vmsplice(a[1], &iov, 1, 0) } as i64)?;
    // SAFETY: a[0] and b[1] are pipe ends.
    let teed = check("tee", unsafe { libc::tee(a[0], b[1], PIPE_BYTES, 0) } as i64)?;
    let mut sink = [0u8; PIPE_BYTES];
    for p in [a[0], b[0]] {
        // SAFETY: sink holds PIPE_BYTES, and each pipe holds exactly that many.
        let got = check("read", unsafe { libc::read(p, sink.as_mut_ptr().cast(), sink.len()) } as i64)?;
        if got != PIPE_BYTES as u64 {
            return Err(Error::Runtime(format!("read {got} of {PIPE_BYTES} bytes from a pipe")));
        }
    }
    a.into_iter().chain(b).for_each(close_fd);

    let json = json!({
        "pid": std::process::id(),
        "comm": get_comm(),
        "fd": fd,
        "opens": 1,
        "fallocate": 2,
        "ftruncate": 2,
        "write": {"calls": 1, "bytes": written},
        "sync_file_range": 3,
        "syncfs": 1,
        "fsync": 1,
        "fdatasync": 1,
        "close": 1,
        "vmsplice": {"calls": 1, "bytes": spliced},
        "tee": {"calls": 1, "bytes": teed},
    });
    emit_report(cfg.report.as_deref(), &json)
}

//! `opens`: one `openat(AT_FDCWD, path, O_RDONLY)` per path of `--paths`, for
//! the tests of strings read from user memory (opensnoop: file name and ret).
//!
//! Each path is opened once, in order, after `--wait-file`; an fd that opened
//! is closed before the next path. The report gives each path's return value
//! as the system call gave it: the fd, or minus the errno (-2 for ENOENT).
//!
//! `--cold I,J,…` (0-based indexes into `--paths`) passes those paths from a
//! page not resident at the call's entry: a fresh read-only mapping of a
//! memfd holding the path, never touched before `openat`. A BPF program at
//! the entry cannot read it (its reads cannot fault: no page table entry
//! yet); the call itself faults the page in and opens the path. The report
//! marks them `"cold":true`.
//!
//! `--bad-argv PATH`, after the opens, calls `execve(PATH, argv, NULL)` with
//! an `argv` that points to no mapping: a BPF program at the entry cannot
//! read it, and the call fails with EFAULT (no exec; PATH must exist, else
//! the kernel's ENOENT comes first). The report gives its
//! return as `"bad_argv_exec"`.

use super::{close_fd, emit_report, get_comm, set_comm, wait_for_file, Error};
use serde_json::json;
use std::ffi::CString;

/// `opens --paths P1,...,PK [--comm NAME] [--report FILE] [--wait-file PATH] [--cold I,...] [--bad-argv PATH]`.
#[derive(Debug, PartialEq, clap::Args)]
pub(crate) struct OpensCfg {
    /// The paths to open, in order.
    #[arg(long, required = true, value_delimiter = ',', action = clap::ArgAction::Set)]
    paths: Vec<String>,
    #[arg(long, value_parser = crate::comm_arg)]
    comm: Option<String>,
    #[arg(long)]
    report: Option<String>,
    #[arg(long)]
    wait_file: Option<String>,
    /// Indexes (0-based) of the paths passed from a page not resident yet.
    #[arg(long, value_delimiter = ',', action = clap::ArgAction::Set)]
    cold: Vec<usize>,
    /// After the opens, execve this path with an argv no mapping holds.
    #[arg(long)]
    bad_argv: Option<String>,
}

pub(crate) fn run_opens(cfg: &OpensCfg) -> Result<(), Error> {
    if let Some(c) = &cfg.comm {
        set_comm(c)?;
    }
    let paths: Vec<CString> = cfg
        .paths
        .iter()
        .map(|p| CString::new(p.as_str()).map_err(|_| Error::Usage("--paths contains NUL".into())))
        .collect::<Result<_, _>>()?;
    wait_for_file(cfg.wait_file.as_deref());
    let mut parts = Vec::with_capacity(paths.len());
    for (i, (path, c)) in cfg.paths.iter().zip(&paths).enumerate() {
        let cold = cfg.cold.contains(&i);
        let ret = if cold { open_cold(c)? } else { open(c.as_ptr()) };
        if ret >= 0 {
            close_fd(ret as libc::c_int);
        }
        parts.push(json!({"path": path, "ret": ret, "cold": cold}));
    }
    let mut json = json!({"pid": std::process::id(), "comm": get_comm(), "opens": parts});
    if let Some(path) = &cfg.bad_argv {
        json["bad_argv_exec"] = json!(exec_bad_argv(path)?);
    }
    emit_report(cfg.report.as_deref(), &json)
}

/// `execve(path, argv, NULL)` with an `argv` at an address no mapping holds
/// (the first page): minus the errno (EFAULT), as the call fails before any exec.
fn exec_bad_argv(path: &str) -> Result<i64, Error> {
    let path = CString::new(path).map_err(|_| Error::Usage("--bad-argv contains NUL".into()))?;
    // Dangling: the first page's address 8, which no process maps.
    let argv = std::ptr::dangling::<*const libc::c_char>();
    // SAFETY: the kernel reads argv and fails with EFAULT; nothing in this process is touched.
    let ret = unsafe { libc::syscall(libc::SYS_execve, path.as_ptr(), argv, std::ptr::null::<*const libc::c_char>()) };
    match ret {
        0 => Err(Error::Runtime("execve with a bad argv succeeded".into())),
        _ => Ok(-i64::from(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))),
    }
}

/// `openat(AT_FDCWD, path, O_RDONLY)`: the fd, or minus the errno.
fn open(path: *const libc::c_char) -> i64 {
    // SAFETY: path is a NUL-terminated string; the raw syscall gives -errno, not -1.
    let ret = unsafe { libc::syscall(libc::SYS_openat, libc::AT_FDCWD, path, libc::O_RDONLY, 0) };
    if ret < 0 {
        -i64::from(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    } else {
        ret
    }
}

/// [`open`] of `path` passed from a fresh read-only mapping of a memfd
/// that holds it (no openat of its own to count): no page table entry
/// until the call itself reads the path.
fn open_cold(path: &CString) -> Result<i64, Error> {
    let bytes = path.as_bytes_with_nul();
    // SAFETY: a NUL-terminated name; the fd is owned below.
    let fd = unsafe { libc::memfd_create(c"ebq-cold".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(Error::Runtime(format!("memfd_create: {}", std::io::Error::last_os_error())));
    }
    // SAFETY: fd is the memfd just created, owned by the File from here on.
    let mut f = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    std::io::Write::write_all(&mut f, bytes).map_err(|e| Error::Runtime(format!("memfd write: {e}")))?;
    // SAFETY: a new private read-only mapping of the memfd; unmapped below.
    let at = unsafe { libc::mmap(std::ptr::null_mut(), bytes.len(), libc::PROT_READ, libc::MAP_PRIVATE, fd, 0) };
    if at == libc::MAP_FAILED {
        return Err(Error::Runtime(format!("mmap: {}", std::io::Error::last_os_error())));
    }
    let ret = open(at as *const libc::c_char);
    // SAFETY: the mapping made above, not used after.
    unsafe { libc::munmap(at, bytes.len()) };
    Ok(ret)
}

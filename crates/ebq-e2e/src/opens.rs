//! `opens`: one `openat(AT_FDCWD, path, O_RDONLY)` per path of `--paths`, for
//! the tests of strings read from user memory (opensnoop: file name and ret).
//!
//! Each path is opened once, in order, after `--wait-file`; an fd that opened
//! is closed before the next path. The report gives each path's return value
//! as the system call gave it: the fd, or minus the errno (-2 for ENOENT).

use super::{close_fd, emit_report, get_comm, json_str, set_comm, wait_for_file, Error, Flags};
use std::ffi::CString;

#[derive(Debug, PartialEq)]
pub(crate) struct OpensCfg {
    paths: Vec<String>,
    comm: Option<String>,
    report: Option<String>,
    wait_file: Option<String>,
}

pub(crate) fn parse_opens(args: &[String]) -> Result<OpensCfg, Error> {
    let f = Flags::parse(args, &["paths", "comm", "report", "wait-file"], &[])?;
    Ok(OpensCfg {
        paths: f.required("paths")?.split(',').map(str::to_string).collect(),
        comm: f.comm()?,
        report: f.get("report").map(str::to_string),
        wait_file: f.get("wait-file").map(str::to_string),
    })
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
    for (path, c) in cfg.paths.iter().zip(&paths) {
        // SAFETY: c is a NUL-terminated path; the raw syscall gives -errno, not -1.
        let ret = unsafe { libc::syscall(libc::SYS_openat, libc::AT_FDCWD, c.as_ptr(), libc::O_RDONLY, 0) };
        let ret = if ret < 0 { -i64::from(std::io::Error::last_os_error().raw_os_error().unwrap_or(0)) } else { ret };
        if ret >= 0 {
            close_fd(ret as libc::c_int);
        }
        parts.push(format!("{{\"path\":{},\"ret\":{ret}}}", json_str(path)));
    }
    let json = format!(
        "{{\"pid\":{},\"comm\":{},\"opens\":[{}]}}",
        std::process::id(),
        json_str(&get_comm()),
        parts.join(",")
    );
    emit_report(cfg.report.as_deref(), &json)
}

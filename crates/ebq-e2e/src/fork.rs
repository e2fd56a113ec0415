//! `fork`: children that each issue known pread64 calls, for the tests of
//! per-process grouping and of processes that exit while traced.

use super::{close_fd, emit_report, get_comm, open_path, os_err, set_comm, wait_for_file, Error};
use serde_json::json;
use std::io::Write as _;

/// Largest accepted `--children`.
const MAX_CHILDREN: u64 = 4096;

/// `fork --children N --calls C [--sequential] [--comm NAME] [--report FILE] [--wait-file PATH]`.
#[derive(Debug, PartialEq, clap::Args)]
pub(crate) struct ForkCfg {
    /// N: how many children to fork.
    #[arg(long, value_parser = clap::value_parser!(u64).range(..=MAX_CHILDREN))]
    children: u64,
    /// C: the pread64 calls of each child.
    #[arg(long, value_parser = clap::value_parser!(u64).range(..=u64::from(u32::MAX)))]
    calls: u64,
    /// Wait for each child before forking the next.
    #[arg(long)]
    sequential: bool,
    #[arg(long, value_parser = crate::comm_arg)]
    comm: Option<String>,
    #[arg(long)]
    report: Option<String>,
    #[arg(long)]
    wait_file: Option<String>,
}

/// Waits for child `pid`; an error unless it exited with status 0.
fn reap_child(pid: u64) -> Result<(), Error> {
    let mut status = 0;
    // SAFETY: pid is our child; status is a valid out-pointer.
    if unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) } < 0 {
        return Err(os_err(&format!("waitpid {pid}")));
    }
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        return Err(Error::Runtime(format!("child {pid} failed (wait status {status})")));
    }
    Ok(())
}

pub(crate) fn run_fork(cfg: &ForkCfg) -> Result<(), Error> {
    if let Some(c) = &cfg.comm {
        set_comm(c)?;
    }
    let fd = open_path("/dev/zero", libc::O_RDONLY | libc::O_CLOEXEC, 0)?;
    wait_for_file(cfg.wait_file.as_deref());
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();

    // Concurrent children wait for EOF on this pipe: the parent closes its
    // write end once every child exists, so all N are alive together.
    let mut gate = [-1 as libc::c_int; 2];
    // SAFETY: gate is a valid two-element out-array.
    if !cfg.sequential && unsafe { libc::pipe2(gate.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(os_err("pipe2"));
    }
    let mut children: Vec<u64> = Vec::new();
    let mut failure: Option<Error> = None;
    for _ in 0..cfg.children {
        // SAFETY: the child only calls close, read, pread and _exit, all async-signal-safe.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let mut byte = [0u8; 1];
            if !cfg.sequential {
                // SAFETY: closing our copy of the write end, then reading to EOF.
                unsafe {
                    libc::close(gate[1]);
                    while libc::read(gate[0], byte.as_mut_ptr().cast(), 1) > 0 {}
                }
            }
            for _ in 0..cfg.calls {
                // SAFETY: byte is a valid 1-byte buffer; fd is open.
                let n = unsafe { libc::pread(fd, byte.as_mut_ptr().cast(), 1, 0) };
                if n != 1 {
                    // SAFETY: _exit never returns and runs no destructors.
                    unsafe { libc::_exit(1) };
                }
            }
            // SAFETY: as above.
            unsafe { libc::_exit(0) };
        }
        if pid < 0 {
            failure = Some(os_err("fork"));
            break;
        }
        children.push(pid as u64);
        if cfg.sequential {
            if let Err(e) = reap_child(pid as u64) {
                failure.get_or_insert(e);
            }
        }
    }
    if !cfg.sequential {
        close_fd(gate[1]);
        close_fd(gate[0]);
    }
    for &pid in children.iter().filter(|_| !cfg.sequential) {
        if let Err(e) = reap_child(pid) {
            failure.get_or_insert(e);
        }
    }
    close_fd(fd);
    if let Some(e) = failure {
        return Err(e);
    }
    let json = json!({
        "pid": std::process::id(),
        "comm": get_comm(),
        "syscall": "pread64",
        "children": children,
        "calls_per_child": cfg.calls,
        "size": 1,
        "total_calls": cfg.calls * children.len() as u64,
    });
    emit_report(cfg.report.as_deref(), &json)
}

#[cfg(test)]
mod tests {
    use crate::testing::{is_usage, parse_line};
    use crate::Cmd;

    #[test]
    fn parses_fork() {
        let Cmd::Fork(cfg) = parse_line("fork --children 4 --calls 10 --report r.json").unwrap() else { panic!() };
        assert_eq!(cfg.children, 4);
        assert_eq!(cfg.calls, 10);
        assert_eq!(cfg.report.as_deref(), Some("r.json"));
        assert!(!cfg.sequential);
        assert!(is_usage(parse_line("fork --children 4")));
        assert!(is_usage(parse_line("fork --calls 4")));
        assert!(is_usage(parse_line("fork --children 4 --calls 1 --size 3")));
    }
}

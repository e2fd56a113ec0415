//! `readzero` and `spin`: the simplest loads — N reads of /dev/zero (the
//! counting and overhead tests), and a busy process to find by pid.

use super::{close_fd, emit_report, get_comm, open_path, os_err, set_comm, wait_for_file, Error};
use serde_json::json;
use std::io::Write as _;
use std::time::{Duration, Instant};

/// Largest accepted `--bs`.
const MAX_BS: u64 = 1 << 24;

/// `readzero --count N [--bs B] [--comm NAME] [--report FILE] [--wait-file PATH]`.
#[derive(Debug, PartialEq, clap::Args)]
pub(crate) struct ReadZeroCfg {
    /// N: how many read(2) calls.
    #[arg(long)]
    count: u64,
    /// B: the bytes each call asks for.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=MAX_BS))]
    bs: u64,
    #[arg(long, value_parser = crate::comm_arg)]
    comm: Option<String>,
    #[arg(long)]
    report: Option<String>,
    #[arg(long)]
    wait_file: Option<String>,
}

/// `spin --seconds S [--comm NAME]`.
#[derive(Debug, PartialEq, clap::Args)]
pub(crate) struct SpinCfg {
    /// S: how long to spin.
    #[arg(long, value_parser = crate::seconds_arg)]
    seconds: f64,
    #[arg(long, value_parser = crate::comm_arg)]
    comm: Option<String>,
}

pub(crate) fn run_readzero(cfg: &ReadZeroCfg) -> Result<(), Error> {
    if let Some(c) = &cfg.comm {
        set_comm(c)?;
    }
    let fd = open_path("/dev/zero", libc::O_RDONLY | libc::O_CLOEXEC, 0)?;
    let mut buf = vec![0u8; cfg.bs as usize];
    wait_for_file(cfg.wait_file.as_deref());
    let start = Instant::now();
    for _ in 0..cfg.count {
        // SAFETY: buf holds bs bytes; fd is open.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            let e = os_err("read /dev/zero");
            close_fd(fd);
            return Err(e);
        }
    }
    let elapsed = start.elapsed();
    close_fd(fd);
    let total_bytes = cfg.count.checked_mul(cfg.bs).ok_or(Error::Usage("--count × --bs overflows".into()))?;
    let json = json!({
        "pid": std::process::id(),
        "comm": get_comm(),
        "syscall": "read",
        "fd": fd,
        "count": cfg.count,
        "bs": cfg.bs,
        "total_calls": cfg.count,
        "total_bytes": total_bytes,
        "elapsed_ns": elapsed.as_nanos() as u64,
    });
    emit_report(cfg.report.as_deref(), &json)
}

pub(crate) fn run_spin(cfg: &SpinCfg) -> Result<(), Error> {
    if let Some(c) = &cfg.comm {
        set_comm(c)?;
    }
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", std::process::id())
            .and_then(|_| out.flush())
            .map_err(|e| Error::Runtime(format!("writing stdout: {e}")))?;
    }
    let deadline = Instant::now() + Duration::from_secs_f64(cfg.seconds);
    loop {
        for _ in 0..256 {
            // SAFETY: getppid has no preconditions.
            std::hint::black_box(unsafe { libc::getppid() });
        }
        if Instant::now() >= deadline {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{is_usage, parse_as};

    fn parse_readzero(s: &str) -> Result<ReadZeroCfg, Error> {
        parse_as!(Readzero, format!("readzero {s}"))
    }

    fn parse_spin(s: &str) -> Result<SpinCfg, Error> {
        parse_as!(Spin, format!("spin {s}"))
    }

    #[test]
    fn parses_readzero() {
        let cfg = parse_readzero("--count 1000").unwrap();
        assert_eq!((cfg.count, cfg.bs), (1000, 1));
        let cfg = parse_readzero("--count 5 --bs 4096").unwrap();
        assert_eq!((cfg.count, cfg.bs), (5, 4096));
        assert!(is_usage(parse_readzero("--bs 4")));
        assert!(is_usage(parse_readzero("--count 5 --bs 0")));
    }

    #[test]
    fn parses_spin() {
        assert_eq!(parse_spin("--seconds 2").unwrap().seconds, 2.0);
        assert_eq!(parse_spin("--seconds 0.5").unwrap().seconds, 0.5);
        assert!(is_usage(parse_spin("--seconds")));
        assert!(is_usage(parse_spin("--seconds -1")));
        assert!(is_usage(parse_spin("--seconds inf")));
        assert!(is_usage(parse_spin("--seconds nan")));
        assert!(is_usage(parse_spin("")));
    }
}

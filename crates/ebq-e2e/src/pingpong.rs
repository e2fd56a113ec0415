//! `pingpong`: a scheduler-heavy process for the run-queue and on-CPU time
//! tests (runqlat, cpudist): `--pairs` pairs of threads pass one byte back and
//! forth over two pipes `--rounds` times, each pair's threads pinned to the
//! two CPUs, while one spinner thread per CPU burns its CPU until the pairs
//! are done. Every round wakes a thread that then waits for a CPU a spinner
//! holds (run-queue latency), and the spinners are preempted while runnable.
//!
//! It prints `ready`, then blocks reading a byte from stdin: no timer, no
//! polling (`--wait-file` polls every 10 ms, each poll a wakeup and two
//! switches), so a tracer attached while it waits sees no event of the
//! process until the test writes that byte, and then every one. The report
//! (stdout, or `--report`) gives the rounds.

use super::{close_fd, emit_report, get_comm, json_str, os_err, pin_to_cpu, set_comm, Error, Flags};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[derive(Debug, PartialEq)]
pub(crate) struct PingPongCfg {
    pairs: u64,
    rounds: u64,
    comm: Option<String>,
    report: Option<String>,
}

pub(crate) fn parse_pingpong(args: &[String]) -> Result<PingPongCfg, Error> {
    let f = Flags::parse(args, &["pairs", "rounds", "comm", "report"], &[])?;
    Ok(PingPongCfg {
        pairs: f.u64_or("pairs", Some(2), 1, 64)?,
        rounds: f.u64_or("rounds", None, 1, 10_000_000)?,
        comm: f.comm()?,
        report: f.get("report").map(str::to_string),
    })
}

/// A pipe's (read, write) ends.
fn pipe() -> Result<(libc::c_int, libc::c_int), Error> {
    let mut fds = [0; 2];
    // SAFETY: fds has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(os_err("pipe2"));
    }
    Ok((fds[0], fds[1]))
}

/// Writes one byte to `to`, then reads one from `from`, `rounds` times
/// (`first`: write first; else read first).
fn volley(from: libc::c_int, to: libc::c_int, rounds: u64, first: bool) -> Result<(), Error> {
    let mut byte = [0u8; 1];
    for _ in 0..rounds {
        for step in [first, !first] {
            // SAFETY: byte is one writable byte; the fds are this pair's open pipe ends.
            let n = unsafe {
                if step {
                    libc::write(to, byte.as_ptr().cast(), 1)
                } else {
                    libc::read(from, byte.as_mut_ptr().cast(), 1)
                }
            };
            if n != 1 {
                return Err(os_err(if step { "write to pipe" } else { "read from pipe" }));
            }
        }
    }
    Ok(())
}

pub(crate) fn run_pingpong(cfg: &PingPongCfg) -> Result<(), Error> {
    if let Some(c) = &cfg.comm {
        set_comm(c)?;
    }
    println!("ready");
    std::io::stdout().flush().map_err(|e| Error::Runtime(format!("stdout: {e}")))?;
    let mut go = [0u8; 1];
    std::io::stdin().read_exact(&mut go).map_err(|e| Error::Runtime(format!("stdin: {e}")))?;
    let done = Arc::new(AtomicBool::new(false));
    let spinners: Vec<_> = (0..2)
        .map(|cpu| {
            let done = Arc::clone(&done);
            std::thread::spawn(move || -> Result<u64, Error> {
                pin_to_cpu(cpu)?;
                let mut spins = 0u64;
                while !done.load(Ordering::Relaxed) {
                    spins = std::hint::black_box(spins + 1);
                }
                Ok(spins)
            })
        })
        .collect();
    let mut players = vec![];
    let mut fds = vec![];
    for _ in 0..cfg.pairs {
        let (ping_r, ping_w) = pipe()?;
        let (pong_r, pong_w) = pipe()?;
        fds.extend([ping_r, ping_w, pong_r, pong_w]);
        let rounds = cfg.rounds;
        for (cpu, from, to, first) in [(0, pong_r, ping_w, true), (1, ping_r, pong_w, false)] {
            players.push(std::thread::spawn(move || -> Result<(), Error> {
                pin_to_cpu(cpu)?;
                volley(from, to, rounds, first)
            }));
        }
    }
    let played: Result<Vec<()>, Error> = players.into_iter().map(|t| t.join().expect("a player thread")).collect();
    done.store(true, Ordering::Relaxed);
    let spun: Result<Vec<u64>, Error> = spinners.into_iter().map(|t| t.join().expect("a spinner thread")).collect();
    fds.into_iter().for_each(close_fd);
    played?;
    spun?;
    let json = format!(
        "{{\"pid\":{},\"comm\":{},\"pairs\":{},\"rounds\":{}}}",
        std::process::id(),
        json_str(&get_comm()),
        cfg.pairs,
        cfg.rounds
    );
    emit_report(cfg.report.as_deref(), &json)
}

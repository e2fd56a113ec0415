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

use super::{close_fd, emit_report, get_comm, os_err, pin_to_cpu, set_comm, Error};
use serde_json::json;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// `pingpong --rounds R [--pairs N] [--comm NAME] [--report FILE]`.
#[derive(Debug, PartialEq, clap::Args)]
pub(crate) struct PingPongCfg {
    /// N: the pairs of threads.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=64))]
    pairs: u64,
    /// R: the round trips of each pair.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    rounds: u64,
    #[arg(long, value_parser = crate::comm_arg)]
    comm: Option<String>,
    #[arg(long)]
    report: Option<String>,
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
    let json = json!({"pid": std::process::id(), "comm": get_comm(), "pairs": cfg.pairs, "rounds": cfg.rounds});
    emit_report(cfg.report.as_deref(), &json)
}

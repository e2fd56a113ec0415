//! Self-measurement: BPF run time and count per program (bpf_stats), the
//! kernel's count of runs it skipped (`recursion_misses`), and this process's
//! CPU time.

use ebq_front::error::{Error, Result};
use libbpf_rs::Object;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};

/// Keeps the kernel's BPF run-time statistics on while alive.
///
/// Statistics cost two clock reads per program run, so ebq only turns them
/// on when asked (EXPLAIN ANALYZE, `--bpf-stats`, the library option).
pub struct StatsGuard(#[allow(dead_code)] OwnedFd);

/// Turns on BPF_STATS_RUN_TIME for as long as the guard lives.
pub fn enable_bpf_stats() -> Result<StatsGuard> {
    // SAFETY: plain syscall wrapper; returns a new fd or a negative errno.
    let fd = unsafe { libbpf_sys::bpf_enable_stats(libbpf_sys::BPF_STATS_RUN_TIME) };
    if fd < 0 {
        return Err(Error::Io {
            what: "enable BPF run-time statistics".into(),
            source: std::io::Error::from_raw_os_error(-fd),
        });
    }
    // SAFETY: fd is a fresh descriptor we own.
    Ok(StatsGuard(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// Run count, run time and skipped runs of one loaded program.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProgramStats {
    /// Program name (`ebq_query`, `ebq_follow_fork`).
    pub name: String,
    /// Times it ran while statistics were on.
    pub run_cnt: u64,
    /// Nanoseconds spent in it while statistics were on.
    pub run_time_ns: u64,
    /// Events the kernel did not run it for (`bpf_prog_info.recursion_misses`;
    /// always counted, statistics on or off; for tracepoint and kprobe
    /// programs since kernel 6.7, for trampoline programs since 5.12). A classic
    /// tracepoint or kprobe program is skipped whenever any such program
    /// already runs on the CPU (one per-CPU guard, `bpf_prog_active`): a block
    /// completion interrupting another tool's syscall program is lost to every
    /// tracepoint program. tp_btf, raw_tp and fentry programs have a guard of
    /// their own and miss only their own recursion.
    pub recursion_misses: u64,
}

/// Statistics of every program of `object`.
pub fn program_stats(object: &Object) -> Vec<ProgramStats> {
    object
        .progs()
        .map(|p| {
            let mut info = libbpf_sys::bpf_prog_info::default();
            let mut len = std::mem::size_of::<libbpf_sys::bpf_prog_info>() as u32;
            // SAFETY: info is a valid, zeroed bpf_prog_info of `len` bytes.
            let rc = unsafe { libbpf_sys::bpf_prog_get_info_by_fd(p.as_fd().as_raw_fd(), &mut info, &mut len) };
            if rc != 0 {
                info = Default::default();
            }
            ProgramStats {
                name: p.name().to_string_lossy().into_owned(),
                run_cnt: info.run_cnt,
                run_time_ns: info.run_time_ns,
                recursion_misses: info.recursion_misses,
            }
        })
        .collect()
}

/// CPU time (user + system) this process has used, in nanoseconds.
pub fn process_cpu_ns() -> u64 {
    ebq_exec::clock::clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID) as u64
}

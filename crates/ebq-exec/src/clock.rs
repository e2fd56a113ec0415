//! The clocks, read from user space: the one `clock_gettime` of the libraries
//! (ebq-exec, ebq-runtime, ebq-report), so that every reader of the kernel's
//! clock converts a timespec the same way.

/// `clock` (CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_PROCESS_CPUTIME_ID, …) in ns.
/// i128: a realtime minus a monotonic reading is signed, and neither overflows.
pub fn clock_ns(clock: libc::clockid_t) -> i128 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid timespec for clock_gettime to fill.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec)
}

/// CLOCK_MONOTONIC in ns, the clock of `bpf_ktime_get_ns`.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC) as u64
}

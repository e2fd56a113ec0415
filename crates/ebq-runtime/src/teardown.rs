//! Leaving the kernel's teardown of a finished query to a short-lived child.
//!
//! Closing a classic tracepoint's perf event (the `-c` fork and exit
//! followers) waits for RCU grace periods in the kernel, ~80 ms each here.
//! At process exit the kernel closes what is left open in the exiting task,
//! one file after another, before its parent sees it exit: a one-shot
//! `ebq -c CMD` spent longer tearing down than running. Once the results and
//! the stats line are out, [`hand_off`] forks a child that holds the same
//! descriptors, closes its stdin, stdout and stderr (so nobody reading ebq's
//! output waits for it) and exits: the last close, and its waits, happen in
//! that child while ebq itself exits at once. The programs counting nothing
//! by then (they were detached before the final read), nothing is lost.

/// Forks the child that closes the query's descriptors last (see the module
/// doc). Call it after every result is written, right before dropping the
/// query and exiting; any failure to fork just leaves the teardown to ebq.
pub fn hand_off() {
    // SAFETY: the child calls only close and _exit (async-signal-safe) and
    // touches no memory another thread could hold locked.
    unsafe {
        if libc::fork() == 0 {
            for fd in 0..3 {
                libc::close(fd);
            }
            libc::_exit(0);
        }
    }
}

//! Signals for `ebq run` and `ebq serve`, as flags their main loops poll.
//!
//! SIGINT and SIGTERM ask the loop to stop: `run` then prints the final
//! window and its stats, `serve` detaches its queries. SIGHUP means "the
//! terminal went away" to `run` (stop, as SIGINT) and "reload the
//! configuration" to `serve`. The handlers only store to atomics, the one
//! async-signal-safe thing they need; everything else happens in the loop.
//! `SA_RESTART` keeps system calls in flight (a write of results, an HTTP
//! read) from failing with EINTR.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// What SIGHUP means to the command that installs the handlers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnHangup {
    /// Stop, as SIGINT does (`ebq run`).
    Stop,
    /// Set a flag [`take_hangup`] reads (`ebq serve` reloads its file).
    Reload,
}

/// The signal that asked to stop (0: none yet); SIGPIPE once the output closed.
static STOP: AtomicI32 = AtomicI32::new(0);
static HANGUP: AtomicBool = AtomicBool::new(false);
static HANGUP_RELOADS: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(sig: libc::c_int) {
    if sig == libc::SIGHUP && HANGUP_RELOADS.load(Ordering::SeqCst) {
        HANGUP.store(true, Ordering::SeqCst);
    } else {
        STOP.store(sig, Ordering::SeqCst);
    }
}

/// Installs the handlers for SIGINT, SIGTERM and SIGHUP.
pub fn install(on_hangup: OnHangup) {
    HANGUP_RELOADS.store(on_hangup == OnHangup::Reload, Ordering::SeqCst);
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: a zeroed sigaction with a valid handler; on_signal only stores atomics.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

extern "C" fn on_child(_: libc::c_int) {}

/// `-c`: makes the command's exit interrupt the loop's wait. The handler does
/// nothing; its arrival ends the `nanosleep` or `epoll_wait` the query is
/// waiting in (neither is restarted after a handler), so `run` reaps the
/// child and prints the results at once instead of at its next 100 ms tick.
pub fn wake_on_child_exit() {
    // SAFETY: a zeroed sigaction with a handler that does nothing.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_child as *const () as usize;
        sa.sa_flags = libc::SA_RESTART | libc::SA_NOCLDSTOP;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGCHLD, &sa, std::ptr::null_mut());
    }
}

/// True once a signal (or a closed output) asked the loop to stop.
pub fn stopping() -> bool {
    STOP.load(Ordering::SeqCst) != 0
}

/// True once after each SIGHUP when it reloads.
pub fn take_hangup() -> bool {
    HANGUP.swap(false, Ordering::SeqCst)
}

/// Stops the loop because the reader of the results went away (`ebq … | head`):
/// the query ends quietly, without writing the final results nobody reads.
pub fn output_closed() {
    STOP.store(libc::SIGPIPE, Ordering::SeqCst);
}

/// True when the loop stopped because the output closed.
pub fn is_output_closed() -> bool {
    STOP.load(Ordering::SeqCst) == libc::SIGPIPE
}

//! SIGHUP (reload) and SIGTERM/SIGINT (stop) as flags the serve loop polls.

use std::sync::atomic::{AtomicBool, Ordering};

static HUP: AtomicBool = AtomicBool::new(false);
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(sig: libc::c_int) {
    if sig == libc::SIGHUP {
        HUP.store(true, Ordering::SeqCst);
    } else {
        STOP.store(true, Ordering::SeqCst);
    }
}

/// Installs the handlers (only async-signal-safe work: setting a flag).
pub fn install() {
    for sig in [libc::SIGHUP, libc::SIGTERM, libc::SIGINT] {
        // SAFETY: a zeroed sigaction with a valid handler; on_signal only stores atomics.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// True once after each SIGHUP.
pub fn take_hup() -> bool {
    HUP.swap(false, Ordering::SeqCst)
}

/// True after SIGTERM or SIGINT.
pub fn stopping() -> bool {
    STOP.load(Ordering::SeqCst)
}

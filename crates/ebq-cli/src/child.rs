//! `-c CMD`: a child forked before tracing starts and held at a pipe until
//! the query is attached, so its first system call is already traced.
//!
//! std's `Command::spawn` waits for the child to exec, which a held child never
//! does until released; so this forks by hand and only uses async-signal-safe
//! calls between fork and exec.

use std::ffi::CString;
use std::io;

/// A forked `/bin/sh -c CMD` waiting to exec.
pub struct Held {
    pid: libc::pid_t,
    release_fd: libc::c_int,
    status: Option<i32>,
}

/// Forks `sh -c cmd`, blocked before exec until [`Held::release`].
pub fn spawn_held(cmd: &str) -> io::Result<Held> {
    let sh = CString::new("/bin/sh").expect("no NUL");
    let dash_c = CString::new("-c").expect("no NUL");
    let cmd = CString::new(cmd).map_err(|_| io::Error::other("the command contains a NUL byte"))?;
    let argv = [sh.as_ptr(), dash_c.as_ptr(), cmd.as_ptr(), std::ptr::null()];
    let mut fds = [0; 2];
    // SAFETY: fds is a valid two-element array; O_CLOEXEC keeps the pipe out of other children.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let (read_fd, write_fd) = (fds[0], fds[1]);
    // SAFETY: the child only calls close, read, execv and _exit (async-signal-safe)
    // on memory prepared before fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        let e = io::Error::last_os_error();
        // SAFETY: our descriptors.
        unsafe {
            libc::close(read_fd);
            libc::close(write_fd);
        }
        return Err(e);
    }
    if pid == 0 {
        // SAFETY: see above; never returns.
        unsafe {
            libc::close(write_fd);
            let mut b = 0u8;
            let n = libc::read(read_fd, (&mut b as *mut u8).cast(), 1);
            if n != 1 {
                libc::_exit(127);
            }
            libc::execv(sh.as_ptr(), argv.as_ptr());
            libc::_exit(127);
        }
    }
    // SAFETY: the read end belongs to the child now.
    unsafe { libc::close(read_fd) };
    Ok(Held { pid, release_fd: write_fd, status: None })
}

impl Held {
    /// The child's pid.
    pub fn id(&self) -> u32 {
        self.pid as u32
    }

    /// Lets the command run.
    pub fn release(&mut self) {
        if self.release_fd >= 0 {
            // SAFETY: one byte from a valid buffer to our pipe end, then close it.
            unsafe {
                libc::write(self.release_fd, b"g".as_ptr().cast(), 1);
                libc::close(self.release_fd);
            }
            self.release_fd = -1;
        }
    }

    /// The exit code if the child has ended (128 + signal for a killed child).
    pub fn try_wait(&mut self) -> Option<i32> {
        self.reap(libc::WNOHANG)
    }

    /// Waits for the child to end; returns its exit code.
    pub fn wait(&mut self) -> i32 {
        self.reap(0).unwrap_or(1)
    }

    fn reap(&mut self, flags: libc::c_int) -> Option<i32> {
        if self.status.is_none() {
            let mut raw = 0;
            // SAFETY: waiting for our own child into a valid int.
            let r = unsafe { libc::waitpid(self.pid, &mut raw, flags) };
            if r == self.pid {
                self.status =
                    Some(if libc::WIFEXITED(raw) { libc::WEXITSTATUS(raw) } else { 128 + libc::WTERMSIG(raw) });
            } else if r < 0 {
                self.status = Some(1);
            }
        }
        self.status
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.release_fd >= 0 {
            // Closing without writing makes the child exit before exec.
            // SAFETY: our pipe end.
            unsafe { libc::close(self.release_fd) };
            self.wait();
        }
    }
}

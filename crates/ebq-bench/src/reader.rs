//! The workload of `ebq bench fidelity`: exactly N read(2) calls of 7 bytes on
//! /dev/zero under the comm `ebqrd`, paced to a rate. The comm is set before
//! the first counted read, so a tracer filtering `comm = 'ebqrd'` must see N.

use std::time::{Duration, Instant};

/// The comm the reader runs under.
pub const COMM: &str = "ebqrd";
/// Bytes per read (a size nothing else on the machine tends to use).
pub const READ_BYTES: usize = 7;

/// Issues `reads` reads at `rate` per second (0: unpaced).
pub fn run(reads: u64, rate: u64) -> Result<(), String> {
    let name = std::ffi::CString::new(COMM).expect("no NUL");
    // SAFETY: PR_SET_NAME with a NUL-terminated string of at most 16 bytes.
    unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr()) };
    let path = std::ffi::CString::new("/dev/zero").expect("no NUL");
    // SAFETY: a valid path.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY) };
    if fd < 0 {
        return Err("error: cannot open /dev/zero".into());
    }
    let mut buf = [0u8; READ_BYTES];
    let t0 = Instant::now();
    for i in 0..reads {
        // SAFETY: buf is valid for READ_BYTES bytes.
        if unsafe { libc::read(fd, buf.as_mut_ptr().cast(), READ_BYTES) } != READ_BYTES as isize {
            return Err("error: short read from /dev/zero".into());
        }
        if rate > 0 && i % 64 == 63 {
            let due = Duration::from_secs_f64((i + 1) as f64 / rate as f64);
            let now = t0.elapsed();
            if due > now {
                std::thread::sleep(due - now);
            }
        }
    }
    Ok(())
}

/// The comm of the burst workload (`ebq bench burst`).
pub const BURST_COMM: &str = "ebqburst";

/// The workload of the burst fidelity case: `calls` pread64 calls of one byte
/// on /dev/zero, as fast as they go (300,000 take about 0.1 s untraced), under
/// the comm [`BURST_COMM`], set before the first counted call.
pub fn burst(calls: u64) -> Result<(), String> {
    let name = std::ffi::CString::new(BURST_COMM).expect("no NUL");
    // SAFETY: PR_SET_NAME with a NUL-terminated string of at most 16 bytes.
    unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr()) };
    let path = std::ffi::CString::new("/dev/zero").expect("no NUL");
    // SAFETY: a valid path.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY) };
    if fd < 0 {
        return Err("error: cannot open /dev/zero".into());
    }
    let mut byte = [0u8; 1];
    for _ in 0..calls {
        // SAFETY: byte is valid for 1 byte.
        if unsafe { libc::pread(fd, byte.as_mut_ptr().cast(), 1, 0) } != 1 {
            return Err("error: short pread from /dev/zero".into());
        }
    }
    Ok(())
}

//! `aio`: Linux AIO requests (`io_submit` / `io_getevents`) on a buffered
//! file, for the tests of the expanding events `aio.submit` and
//! `aio.complete` and of io.ops' buffered AIO rows.
//!
//! `aio --file F [--blocks N] [--batch K] [--report FILE]` creates F and
//! writes its N blocks of 4 KiB, K requests per `io_submit` (every fourth
//! block a PWRITEV of two 2 KiB halves, the others PWRITE), submits one
//! FDSYNC and one FSYNC together, then reads the blocks back the same way
//! (PREADV / PREAD). Each batch is reaped with `io_getevents` before the
//! next. The report counts, per opcode, the requests, the bytes their
//! completions returned and the sum of their offsets, and the calls made.

use super::{close_fd, emit_report, open_path, os_err, Error};
use serde_json::json;

/// `aio --file F [--blocks N] [--batch K] [--report FILE]`.
#[derive(Debug, PartialEq, clap::Args)]
pub(crate) struct AioCfg {
    /// F: the file, created (truncated).
    #[arg(long)]
    file: String,
    /// N: the 4 KiB blocks written, then read.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    blocks: u64,
    /// K: the requests per io_submit.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=64))]
    batch: u64,
    #[arg(long)]
    report: Option<String>,
}

/// `struct iocb` of `<linux/aio_abi.h>` (x86-64, little-endian).
#[repr(C)]
#[derive(Default, Clone, Copy)]
struct Iocb {
    data: u64,
    key: u32,
    rw_flags: i32,
    opcode: u16,
    reqprio: i16,
    fildes: u32,
    buf: u64,
    nbytes: u64,
    offset: i64,
    reserved2: u64,
    flags: u32,
    resfd: u32,
}

/// `struct io_event`.
#[repr(C)]
#[derive(Default, Clone, Copy)]
struct IoEvent {
    data: u64,
    obj: u64,
    res: i64,
    res2: i64,
}

const PREAD: u16 = 0;
const PWRITE: u16 = 1;
const FSYNC: u16 = 2;
const FDSYNC: u16 = 3;
const PREADV: u16 = 7;
const PWRITEV: u16 = 8;
const BLOCK: u64 = 4096;

/// Requests of one opcode: how many, the bytes their completions returned, Σ offsets.
#[derive(Default, Clone, Copy)]
struct Tally {
    requests: u64,
    bytes: u64,
    offsets: u64,
}

struct Aio {
    ctx: u64,
    fd: libc::c_int,
    tallies: [Tally; 9],
    submits: u64,
    reaps: u64,
}

impl Aio {
    /// Submits `iocbs` in one `io_submit` and reaps them all.
    fn run(&mut self, iocbs: &mut [Iocb]) -> Result<(), Error> {
        let mut ptrs: Vec<*mut Iocb> = iocbs.iter_mut().map(|i| i as *mut Iocb).collect();
        // SAFETY: ctx is io_setup's; ptrs points at len valid iocbs that outlive their completions.
        let n = unsafe { libc::syscall(libc::SYS_io_submit, self.ctx, ptrs.len() as libc::c_long, ptrs.as_mut_ptr()) };
        self.submits += 1;
        if n != ptrs.len() as libc::c_long {
            return Err(os_err(&format!("io_submit ({n} of {})", ptrs.len())));
        }
        let mut events = vec![IoEvent::default(); iocbs.len()];
        let mut done = 0;
        while done < iocbs.len() {
            let want = (iocbs.len() - done) as libc::c_long;
            // SAFETY: events has room for `want` more entries after `done`.
            let got = unsafe {
                libc::syscall(
                    libc::SYS_io_getevents,
                    self.ctx,
                    want,
                    want,
                    events.as_mut_ptr().add(done),
                    std::ptr::null_mut::<libc::timespec>(),
                )
            };
            self.reaps += 1;
            if got <= 0 {
                return Err(os_err("io_getevents"));
            }
            done += got as usize;
        }
        for e in &events {
            // SAFETY: obj is the address of one of `iocbs`, still alive.
            let iocb = unsafe { &*(e.obj as *const Iocb) };
            if e.res < 0 {
                return Err(Error::Runtime(format!("aio opcode {}: {}", iocb.opcode, e.res)));
            }
            let t = &mut self.tallies[iocb.opcode as usize];
            t.requests += 1;
            t.bytes += e.res as u64;
            t.offsets += iocb.offset as u64;
        }
        Ok(())
    }

    /// A read or write of block `b` (`buf` its bytes; `iov` room for its two halves).
    fn block(&self, b: u64, write: bool, buf: &mut [u8], iov: &mut [libc::iovec; 2]) -> Iocb {
        let vectored = b % 4 == 3;
        let opcode = match (write, vectored) {
            (true, true) => PWRITEV,
            (true, false) => PWRITE,
            (false, true) => PREADV,
            (false, false) => PREAD,
        };
        let (first, second) = buf.split_at_mut(BLOCK as usize / 2);
        *iov = [
            libc::iovec { iov_base: first.as_mut_ptr().cast(), iov_len: first.len() },
            libc::iovec { iov_base: second.as_mut_ptr().cast(), iov_len: second.len() },
        ];
        let (addr, nbytes) = if vectored { (iov.as_ptr() as u64, 2) } else { (buf.as_ptr() as u64, BLOCK) };
        Iocb {
            data: b,
            opcode,
            fildes: self.fd as u32,
            buf: addr,
            nbytes,
            offset: (b * BLOCK) as i64,
            ..Default::default()
        }
    }

    /// Writes or reads every block, `batch` requests per submit.
    fn pass(&mut self, cfg: &AioCfg, write: bool) -> Result<(), Error> {
        let mut b = 0;
        while b < cfg.blocks {
            let n = cfg.batch.min(cfg.blocks - b) as usize;
            let mut bufs = vec![vec![0u8; BLOCK as usize]; n];
            let mut iovs = vec![[libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; 2]; n];
            let mut iocbs = vec![];
            for (i, (buf, iov)) in bufs.iter_mut().zip(iovs.iter_mut()).enumerate() {
                buf.fill((b as usize + i) as u8);
                iocbs.push(self.block(b + i as u64, write, buf, iov));
            }
            self.run(&mut iocbs)?;
            b += n as u64;
        }
        Ok(())
    }
}

pub(crate) fn run_aio(cfg: &AioCfg) -> Result<(), Error> {
    let fd = open_path(&cfg.file, libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC, 0o644)?;
    let mut ctx: u64 = 0;
    // SAFETY: ctx is written by the kernel; it must start at 0.
    if unsafe { libc::syscall(libc::SYS_io_setup, 128 as libc::c_long, &mut ctx as *mut u64) } != 0 {
        return Err(os_err("io_setup"));
    }
    let mut aio = Aio { ctx, fd, tallies: [Tally::default(); 9], submits: 0, reaps: 0 };
    aio.pass(cfg, true)?;
    let sync = |opcode| Iocb { opcode, fildes: fd as u32, ..Default::default() };
    aio.run(&mut [sync(FDSYNC), sync(FSYNC)])?;
    aio.pass(cfg, false)?;
    // SAFETY: ctx is io_setup's, destroyed once.
    unsafe { libc::syscall(libc::SYS_io_destroy, ctx) };
    close_fd(fd);
    let t = |op: u16| {
        let t = aio.tallies[op as usize];
        json!({"requests": t.requests, "bytes": t.bytes, "offsets": t.offsets})
    };
    let json = json!({
        "pid": std::process::id(),
        "submits": aio.submits,
        "reaps": aio.reaps,
        "pread": t(PREAD),
        "preadv": t(PREADV),
        "pwrite": t(PWRITE),
        "pwritev": t(PWRITEV),
        "fsync": t(FSYNC),
        "fdsync": t(FDSYNC),
    });
    emit_report(cfg.report.as_deref(), &json)
}

//! A private loop device for block-layer tests, detached on drop.

use ebq::{Output, QueryStats, RunningQuery, Scope};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Bytes [`LoopDevice::direct_requests`] moves: 300 × 4 KiB written, 40 × 64 KiB read.
#[allow(dead_code)] // not every block test counts bytes
pub const DIRECT_IO_BYTES: u64 = 300 * 4096 + 40 * 65536;

/// A loop device over a file of its own.
pub struct LoopDevice {
    pub dev: PathBuf,
    backing: PathBuf,
}

impl LoopDevice {
    /// Over a sparse 32 MiB file in the temp directory: its requests complete
    /// in the loop driver's worker, in process context.
    /// (A file per call: tests of one process run in parallel, each with its own device.)
    pub fn new() -> LoopDevice {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let backing = std::env::temp_dir().join(format!("ebq-e2e-loop-{}-{n}.img", std::process::id()));
        std::fs::File::create(&backing).unwrap().set_len(32 << 20).unwrap();
        LoopDevice::attach(backing, &[])
    }

    /// Over a sparse file of `bytes` in `dir` (e.g. /dev/shm, so that a large
    /// file system on it costs memory, not disk writes).
    #[allow(dead_code)] // only the report test needs a large device
    pub fn sparse_in(dir: &std::path::Path, bytes: u64) -> LoopDevice {
        let backing = dir.join(format!("ebq-e2e-loop-{}.img", std::process::id()));
        std::fs::File::create(&backing).unwrap().set_len(bytes).unwrap();
        LoopDevice::attach(backing, &[])
    }

    /// With direct I/O to a written (not sparse) file on a disk-backed file
    /// system (cargo's target directory, never tmpfs): each request becomes a
    /// request of the disk below, and completes in the disk's interrupt, where
    /// classic tracepoint programs can be skipped.
    pub fn direct_io(mib: usize) -> LoopDevice {
        let backing =
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("ebq-e2e-dio-{}.img", std::process::id()));
        std::fs::write(&backing, vec![0u8; mib << 20]).unwrap();
        std::fs::File::open(&backing).unwrap().sync_all().unwrap();
        LoopDevice::attach(backing, &["--direct-io=on"])
    }

    fn attach(backing: PathBuf, options: &[&str]) -> LoopDevice {
        let out = Command::new("losetup").args(["-f", "--show"]).args(options).arg(&backing).output().expect("losetup");
        assert!(out.status.success(), "losetup: {}", String::from_utf8_lossy(&out.stderr));
        let dev = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
        LoopDevice { dev, backing }
    }

    /// 300 direct 4 KiB writes, then 40 direct 64 KiB reads ([`DIRECT_IO_BYTES`]):
    /// at least 340 requests, each completed before dd goes on.
    pub fn direct_requests(&self) {
        let dev = self.dev.display().to_string();
        for args in [
            vec![
                "if=/dev/zero".to_string(),
                format!("of={dev}"),
                "bs=4k".into(),
                "count=300".into(),
                "oflag=direct".into(),
            ],
            vec![format!("if={dev}"), "of=/dev/null".into(), "bs=64k".into(), "count=40".into(), "iflag=direct".into()],
        ] {
            assert!(Command::new("dd").args(&args).stderr(Stdio::null()).status().unwrap().success());
        }
    }

    /// Runs `prepared` system-wide around [`LoopDevice::direct_requests`]: its outputs and
    /// stats, and the (requests, sectors) the device completed while the query was attached.
    ///
    /// The device's counters are read around the traced window, never before the attach:
    /// once the programs are attached, and once the last request has completed
    /// ([`LoopDevice::settled`]) with the query still attached; a read after the
    /// query finished must agree (nothing completed outside the window). A
    /// pre-attach read that differs from the post-attach one (a request completed
    /// meanwhile, which ebq could not see) is printed, not counted.
    #[allow(dead_code)] // not every block test runs a prepared query
    pub fn traced_direct_io(&self, prepared: ebq::PreparedQuery) -> (Vec<Output>, QueryStats, (u64, u64)) {
        let pre_attach = self.completed();
        let mut q = RunningQuery::start(&prepared, Scope::All).unwrap();
        let before = self.completed();
        if before != pre_attach {
            eprintln!("{}: {pre_attach:?} before the attach, {before:?} after: not counted", self.name());
        }
        self.direct_requests();
        let after = self.settled();
        let mut outs = q.poll(Duration::from_millis(10)).unwrap();
        outs.extend(q.finish().unwrap());
        assert_eq!(self.completed(), after, "{}: requests completed after the last one settled", self.name());
        let (requests, sectors) = (after.0 - before.0, after.1 - before.1);
        assert!(requests >= 340, "dd issued 300 + 40 direct requests, the device counted {requests}");
        (outs, q.stats().unwrap(), (requests, sectors))
    }

    /// Waits (up to 10 s) until the device has no request in flight
    /// (`/sys/block/NAME/inflight` 0 0) and its completed counts stay the same
    /// over 100 ms; returns them (as [`LoopDevice::completed`]).
    pub fn settled(&self) -> (u64, u64) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut last = self.completed();
        loop {
            std::thread::sleep(Duration::from_millis(100));
            let inflight = std::fs::read_to_string(format!("/sys/block/{}/inflight", self.name())).unwrap();
            let now = self.completed();
            if now == last && inflight.split_whitespace().all(|n| n == "0") {
                return now;
            }
            assert!(std::time::Instant::now() < deadline, "{}: still busy ({inflight:?} in flight)", self.name());
            last = now;
        }
    }

    /// `loopN`, as /sys/block and `disk_name` spell it.
    pub fn name(&self) -> String {
        self.dev.file_name().unwrap().to_string_lossy().into_owned()
    }

    /// The kernel's dev_t as block tracepoints report it: major << 20 | minor.
    pub fn dev_t(&self) -> u64 {
        let text = std::fs::read_to_string(format!("/sys/block/{}/dev", self.name())).unwrap();
        let (major, minor) = text.trim().split_once(':').unwrap();
        (major.parse::<u64>().unwrap() << 20) | minor.parse::<u64>().unwrap()
    }

    /// (requests completed, sectors) from /sys/block/NAME/stat: reads, writes, discards, flushes.
    pub fn completed(&self) -> (u64, u64) {
        let v = self.stat();
        (v[0] + v[4] + v.get(11).copied().unwrap_or(0) + v.get(15).copied().unwrap_or(0), v[2] + v[6] + v[13])
    }

    /// Writes completed (field 5 of /sys/block/NAME/stat).
    pub fn writes(&self) -> u64 {
        self.stat()[4]
    }

    /// Reads completed (field 1 of /sys/block/NAME/stat).
    #[allow(dead_code)] // not every block test splits reads from writes
    pub fn reads(&self) -> u64 {
        self.stat()[0]
    }

    fn stat(&self) -> Vec<u64> {
        let text = std::fs::read_to_string(format!("/sys/block/{}/stat", self.name())).unwrap();
        text.split_whitespace().map(|x| x.parse().unwrap()).collect()
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
        let _ = std::fs::remove_file(&self.backing);
    }
}

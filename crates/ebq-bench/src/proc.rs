//! Processes of a benchmark: a timed workload pinned to a CPU, and tracers
//! (ebq, bpftrace, a reference loader) started in the background until they
//! say they are attached, then stopped with SIGINT.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What one finished workload run cost.
#[derive(Debug, Clone, Copy)]
pub struct Timed {
    /// Wall-clock time from spawn to reap.
    pub elapsed_ns: u64,
    /// The workload's user + system CPU time (BPF programs run in its syscalls,
    /// so their cost is charged here too; less sensitive to a busy machine).
    pub cpu_ns: u64,
}

fn tv_ns(tv: libc::timeval) -> u64 {
    tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1000
}

/// Waits for `child` with wait4 (std's wait gives no rusage); returns status and rusage.
fn wait4(child: &Child, flags: i32) -> io::Result<Option<(i32, libc::rusage)>> {
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value; wait4 fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: our own child's pid, valid pointers.
    let r = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, flags, &mut ru) };
    match r {
        0 => Ok(None),
        r if r < 0 => Err(io::Error::last_os_error()),
        _ => Ok(Some((status, ru))),
    }
}

/// Runs `argv` pinned to `cpu` (taskset execs it, so the pid and rusage are the
/// workload's own) with stdout/stderr discarded; fails on a non-zero exit.
pub fn run_pinned(cpu: usize, argv: &[String]) -> Result<Timed, String> {
    let t0 = Instant::now();
    let child = Command::new("taskset")
        .arg("-c")
        .arg(cpu.to_string())
        .args(argv)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", argv[0]))?;
    let (status, ru) = wait4(&child, 0).map_err(|e| e.to_string())?.expect("blocking wait");
    let elapsed_ns = t0.elapsed().as_nanos() as u64;
    if status != 0 {
        return Err(format!("`{}` failed (wait status {status})", argv.join(" ")));
    }
    Ok(Timed { elapsed_ns, cpu_ns: tv_ns(ru.ru_utime) + tv_ns(ru.ru_stime) })
}

/// BPF programs of other processes (not `own`) attached to the read(2)
/// tracepoints or to uprobes: on a shared machine they add their cost to ours.
pub fn foreign_probes(own: &[u32]) -> usize {
    let Ok(out) = Command::new("bpftool").args(["perf", "show"]).output() else { return 0 };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("sys_enter_read") || l.contains("sys_exit_read") || l.contains("uprobe"))
        .filter(|l| {
            let pid = l.split_whitespace().nth(1).and_then(|p| p.parse::<u32>().ok());
            !pid.is_some_and(|p| own.contains(&p))
        })
        .count()
}

/// Waits (up to 60 s) until no foreign program is attached; false if some still are.
pub fn wait_no_foreign(own: &[u32]) -> bool {
    let deadline = Instant::now() + Duration::from_secs(60);
    while foreign_probes(own) > 0 {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    true
}

/// The fastest of `runs` timed runs after one untimed warm-up (Gregg: least
/// perturbed). Before each run it waits for other processes' programs on the
/// same events to go away; `contaminated` counts runs made with them present.
pub fn fastest_clean(cpu: usize, argv: &[String], runs: usize, own: &[u32]) -> Result<(Timed, usize), String> {
    run_pinned(cpu, argv)?;
    let mut best: Option<Timed> = None;
    let mut contaminated = 0;
    for _ in 0..runs.max(1) {
        contaminated += usize::from(!wait_no_foreign(own));
        let t = run_pinned(cpu, argv)?;
        best = Some(match best {
            None => t,
            Some(b) => Timed { elapsed_ns: b.elapsed_ns.min(t.elapsed_ns), cpu_ns: b.cpu_ns.min(t.cpu_ns) },
        });
    }
    Ok((best.expect("at least one run"), contaminated))
}

/// A background tracer process.
pub struct Tracer {
    child: Child,
    /// Its stdout file.
    pub out: PathBuf,
    /// Its stderr file.
    pub err: PathBuf,
    /// Spawn → attached (its ready line appeared).
    pub startup: Duration,
    cpu_at_ready: u64,
}

/// What a stopped tracer reports.
pub struct Stopped {
    /// Its stdout.
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
    /// CPU time (user + system) from attached to stop: the tracer's cost of
    /// consuming events, without its start-up (compiling, loading).
    pub cpu_ns: u64,
    /// Peak resident set size (VmHWM), KiB.
    pub peak_rss_kb: u64,
}

/// utime + stime of a live process from /proc (clock ticks → ns).
fn proc_cpu_ns(pid: u32) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return 0 };
    // Fields after the parenthesised comm: state is field 3, utime 14, stime 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0)
        + f.get(12).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    ticks * 1_000_000_000 / hz
}

/// CPU time of all of a live process's threads, in ns (/proc/PID/task/*/schedstat:
/// exact, where /proc/PID/stat counts 10 ms ticks).
pub fn threads_cpu_ns(pid: u32) -> u64 {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return 0 };
    dir.flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next().and_then(|n| n.parse::<u64>().ok()))
        .sum()
}

/// A live process's `/proc/PID/status` line `field` (`VmHWM:`, `VmRSS:`), in KiB; 0 when gone.
pub fn status_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}

/// The tool's message, without bpftrace's unrelated RLIMIT_MEMLOCK warning.
fn first_lines(text: &str, n: usize) -> String {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.contains("RLIMIT_MEMLOCK"))
        .take(n)
        .collect::<Vec<_>>()
        .join(" / ")
}

impl Tracer {
    /// The tracer's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Starts `argv` (pinned to `cpu`, extra `env`) with stdout/stderr in
    /// `dir/name.{out,err}` and waits until `ready` appears in either. An exit
    /// before that is an error carrying the tool's own message.
    pub fn start(
        dir: &Path,
        name: &str,
        cpu: usize,
        argv: &[String],
        env: &[(&str, String)],
        ready: &str,
    ) -> Result<Tracer, String> {
        // bpftrace prints its line before attaching, and exits if that fails:
        // let it settle, then make sure it is still there.
        Tracer::start_settled(dir, name, cpu, argv, env, ready, Duration::from_millis(300))
    }

    /// [`Tracer::start`] with a chosen pause after the ready line: ebq prints
    /// its line once attached, so a study starting it hundreds of times
    /// (`stages`) only needs a short check that it did not exit.
    pub fn start_settled(
        dir: &Path,
        name: &str,
        cpu: usize,
        argv: &[String],
        env: &[(&str, String)],
        ready: &str,
        settle: Duration,
    ) -> Result<Tracer, String> {
        let out = dir.join(format!("{name}.out"));
        let err = dir.join(format!("{name}.err"));
        let t0 = Instant::now();
        let mut cmd = Command::new("taskset");
        cmd.arg("-c").arg(cpu.to_string()).args(argv).stdin(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.stdout(File::create(&out).map_err(|e| format!("{}: {e}", out.display()))?);
        cmd.stderr(File::create(&err).map_err(|e| format!("{}: {e}", err.display()))?);
        let mut child = cmd.spawn().map_err(|e| format!("cannot run {}: {e}", argv[0]))?;
        let deadline = t0 + Duration::from_secs(90);
        loop {
            let seen = |p: &Path| std::fs::read_to_string(p).is_ok_and(|s| s.contains(ready));
            if seen(&err) || seen(&out) {
                let startup = t0.elapsed();
                std::thread::sleep(settle);
                if let Ok(Some(_)) = child.try_wait() {
                    let text = std::fs::read_to_string(&err).unwrap_or_default()
                        + &std::fs::read_to_string(&out).unwrap_or_default();
                    return Err(first_lines(&text, 3));
                }
                let cpu_at_ready = proc_cpu_ns(child.id());
                return Ok(Tracer { child, out, err, startup, cpu_at_ready });
            }
            if let Ok(Some(_)) = child.try_wait() {
                let text = std::fs::read_to_string(&err).unwrap_or_default()
                    + &std::fs::read_to_string(&out).unwrap_or_default();
                return Err(first_lines(&text, 3));
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{} did not attach within 90 s", argv[0]));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Whether it is still running: a tracer that died during a measurement
    /// would make that run look like one without tracing.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Sends SIGINT without waiting: the tracer detaches and exits while the
    /// caller does something else; [`Tracer::stop`] reaps it (its own SIGINT
    /// is harmless to a tracer already stopping).
    pub fn interrupt(&self) {
        // SAFETY: our own child.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGINT) };
    }

    /// Sends SIGINT (again every 5 s) and waits (up to 60 s, then SIGKILL) for the
    /// tracer to print its results and exit.
    pub fn stop(mut self) -> Result<Stopped, String> {
        let pid = self.child.id();
        let cpu_ns = proc_cpu_ns(pid).saturating_sub(self.cpu_at_ready);
        let peak_rss_kb = status_kb(pid, "VmHWM:");
        // SAFETY: our own child.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) };
        let t0 = Instant::now();
        let deadline = t0 + Duration::from_secs(60);
        let mut resent = 0;
        while self.child.try_wait().map_err(|e| e.to_string())?.is_none() {
            // bpftrace sometimes misses a SIGINT that arrives while it is still
            // attaching: repeat it every 5 s (a repeat is harmless to every tool).
            if t0.elapsed() > Duration::from_secs(5 * (resent + 1)) {
                resent += 1;
                // SAFETY: our own child.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) };
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Err(format!("tracer {pid} did not exit on SIGINT"));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(Stopped {
            stdout: std::fs::read_to_string(&self.out).unwrap_or_default(),
            stderr: std::fs::read_to_string(&self.err).unwrap_or_default(),
            cpu_ns,
            peak_rss_kb,
        })
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Starts several tracers (the "multiple" experiment runs one ebq per question);
/// on any failure the ones already started are dropped (killed).
pub fn start_all(
    dir: &Path,
    name: &str,
    cpu: usize,
    argvs: &[Vec<String>],
    ready: &str,
) -> Result<Vec<Tracer>, String> {
    argvs.iter().enumerate().map(|(i, a)| Tracer::start(dir, &format!("{name}.{i}"), cpu, a, &[], ready)).collect()
}

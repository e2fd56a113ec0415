//! Shared helpers for end-to-end tests: run a query around a workload with
//! known syscall counts and read the results back as plain rows.
#![allow(dead_code)]

use ebq::runtime::Value;
use ebq::sink::rows;
use ebq::{Engine, Output, QueryStats, Scope};
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The workload binary built with these tests.
pub fn workload_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ebq-workload"))
}

/// The `ebq` binary of the same build profile (built by `cargo build --workspace`).
pub fn ebq_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target/<profile>");
    let bin = dir.join("ebq");
    assert!(
        bin.exists(),
        "{} is missing: run `cargo build --release --workspace` first (scripts/test.sh does)",
        bin.display()
    );
    bin
}

/// An engine over the running kernel.
pub fn engine() -> Engine {
    Engine::new().expect("tracefs must be mounted (scripts/setup.sh mounts it)")
}

/// One result row: column name → value, plus `window` for windowed output.
pub type Row = BTreeMap<String, Value>;

/// Flattens outputs into rows; `__window` holds the window's index in `outs`.
pub fn rows_of(outs: &[Output]) -> Vec<Row> {
    let mut all = vec![];
    for (i, o) in outs.iter().enumerate() {
        let schema = o.batch.schema();
        for r in rows(&o.batch) {
            let mut row: Row = schema.fields().iter().map(|f| f.name().clone()).zip(r).collect();
            row.insert("__window".into(), Value::U(i as u64));
            all.push(row);
        }
    }
    all
}

/// The events a histogram cell counted (the sum of its buckets).
pub fn hist_total(row: &Row, col: &str) -> u64 {
    match row.get(col) {
        Some(Value::Hist(b)) => b.iter().map(|b| b.count).sum(),
        other => panic!("column {col}: expected a histogram, got {other:?} in {row:?}"),
    }
}

/// The shipped query `name` (queries/NAME.sql) without its final `;`, so a test can add a WHERE.
pub fn shipped_query(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../queries/{name}.sql"));
    std::fs::read_to_string(path).unwrap().trim_end().trim_end_matches(';').to_string()
}

/// Reads an unsigned (or non-negative signed) integer cell.
pub fn u(row: &Row, col: &str) -> u64 {
    match row.get(col) {
        Some(Value::U(v)) => *v,
        Some(Value::I(v)) if *v >= 0 => *v as u64,
        other => panic!("column {col}: expected an integer, got {other:?} in {row:?}"),
    }
}

/// Reads a float cell.
pub fn f(row: &Row, col: &str) -> f64 {
    match row.get(col) {
        Some(Value::F(v)) => *v,
        other => panic!("column {col}: expected a float, got {other:?}"),
    }
}

/// Reads a string cell.
pub fn s(row: &Row, col: &str) -> String {
    match row.get(col) {
        Some(Value::S(v)) => v.clone(),
        other => panic!("column {col}: expected a string, got {other:?}"),
    }
}

/// A workload started with `--wait-file`, paused until [`Workload::go`].
pub struct Workload {
    pub child: Child,
    wait_file: PathBuf,
    report_file: PathBuf,
}

impl Workload {
    /// Starts `ebq-workload SUBCOMMAND ARGS… --wait-file F --report R`.
    pub fn start(args: &[&str]) -> Workload {
        let dir = std::env::temp_dir().join(format!("ebq-e2e-{}-{}", std::process::id(), unique()));
        std::fs::create_dir_all(&dir).unwrap();
        let wait_file = dir.join("go");
        let report_file = dir.join("report.json");
        let child = Command::new(workload_bin())
            .args(args)
            .arg("--wait-file")
            .arg(&wait_file)
            .arg("--report")
            .arg(&report_file)
            .stdout(Stdio::null())
            .spawn()
            .expect("start the workload");
        Workload { child, wait_file, report_file }
    }

    /// The workload's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Lets it run.
    pub fn go(&self) {
        std::fs::write(&self.wait_file, b"go").unwrap();
    }

    /// Waits for it to exit successfully and returns its JSON report.
    pub fn report(self) -> serde_json::Value {
        let mut this = self;
        this.take_report()
    }

    fn take_report(&mut self) -> serde_json::Value {
        let status = self.child.wait().unwrap();
        assert!(status.success(), "workload failed: {status}");
        let text = std::fs::read_to_string(&self.report_file).unwrap();
        let _ = std::fs::remove_dir_all(self.wait_file.parent().unwrap());
        serde_json::from_str(&text).unwrap()
    }
}

impl Drop for Workload {
    /// A test that fails before the workload ran must not leave it waiting.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A background `ebq` (serve) process: SIGTERM and reaped when dropped, so a
/// test that fails halfway leaves no daemon attached to the kernel.
pub struct Background(pub Child);

impl Background {
    /// SIGTERM, then its exit status.
    pub fn stop(mut self) -> std::process::ExitStatus {
        // SAFETY: kill on a child we spawned and have not reaped.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        self.0.wait().unwrap()
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            // SAFETY: as in `stop`.
            unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
            let _ = self.0.wait();
        }
    }
}

/// A test's pin directory: when dropped, removes the empty parents that ebq
/// created for it and for its layout header (under /sys/fs/bpf and
/// /run/ebq/pins), also when the test fails halfway. The pins themselves are
/// ebq's to remove; a non-empty parent (another test's) stays.
pub struct PinParents(pub PathBuf);

impl Drop for PinParents {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(self.0.parent().unwrap());
        let _ = std::fs::remove_dir(ebq::runtime::pin::default_header_path(&self.0).parent().unwrap());
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// Runs `sql` (with `{pid}` replaced by the workload's pid) around a workload:
/// attach, release the workload, poll until it exits, detach, and return
/// every output batch, the stats and the workload's report.
pub fn run_around(
    sql: &str,
    scope: impl Fn(u32) -> Scope,
    workload: &[&str],
) -> (Vec<Output>, QueryStats, serde_json::Value) {
    run_around_with(&engine(), sql, scope, workload)
}

/// [`run_around`] with a given engine (for plan options such as ring buffer size).
pub fn run_around_with(
    engine: &Engine,
    sql: &str,
    scope: impl Fn(u32) -> Scope,
    workload: &[&str],
) -> (Vec<Output>, QueryStats, serde_json::Value) {
    let w = Workload::start(workload);
    let sql = sql.replace("{pid}", &w.pid().to_string());
    let prepared = engine.prepare(&sql).unwrap_or_else(|e| panic!("{}", e.render(&sql)));
    let mut q = prepared.start(scope(w.pid())).unwrap_or_else(|e| panic!("{}", e.render(&sql)));
    w.go();
    let mut outs = vec![];
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut w = w;
    while w.child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "workload did not finish");
        outs.extend(q.poll(Duration::from_millis(20)).unwrap());
    }
    outs.extend(q.finish().unwrap());
    let stats = q.stats().unwrap();
    (outs, stats, w.report())
}

/// Ids of loaded BPF programs whose name starts with `ebq_`.
pub fn ebq_prog_ids() -> Vec<u64> {
    let out = Command::new("bpftool").args(["-j", "prog", "show"]).output().expect("bpftool");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Array(vec![]));
    v.as_array()
        .map(|a| {
            a.iter()
                .filter(|p| p["name"].as_str().is_some_and(|n| n.starts_with("ebq_")))
                .filter_map(|p| p["id"].as_u64())
                .collect()
        })
        .unwrap_or_default()
}

/// Waits (up to 5 s: the kernel frees programs once the last fd closes) until
/// no ebq program other than `before` is loaded. Programs of another ebq
/// running meanwhile (a soak) come and go; a leaked one stays and fails.
pub fn assert_nothing_left(before: &[u64]) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left: Vec<u64> = ebq_prog_ids().into_iter().filter(|id| !before.contains(id)).collect();
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "programs left loaded: {left:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Per fd: (calls, bytes) from a pread report.
pub fn per_fd(report: &serde_json::Value) -> BTreeMap<u64, (u64, u64)> {
    report["fds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["fd"].as_u64().unwrap(), (f["calls"].as_u64().unwrap(), f["bytes"].as_u64().unwrap())))
        .collect()
}

/// `dd if=/dev/zero of=/dev/null bs=1` pinned to each of CPUs 0 and 1: a
/// system call per byte, on both CPUs, until dropped (killed with its group).
pub struct DdLoops(Vec<Child>);

impl DdLoops {
    pub fn start() -> DdLoops {
        let spawn = |cpu: &str| {
            Command::new("taskset")
                .args(["-c", cpu, "dd", "if=/dev/zero", "of=/dev/null", "bs=1"])
                .stderr(Stdio::null())
                .process_group(0)
                .spawn()
                .expect("dd")
        };
        DdLoops(vec![spawn("0"), spawn("1")])
    }

    /// Fails the test if a dd ended early.
    pub fn assert_alive(&mut self) {
        for c in &mut self.0 {
            assert!(c.try_wait().unwrap().is_none(), "dd {} ended early", c.id());
        }
    }
}

impl Drop for DdLoops {
    fn drop(&mut self) {
        for c in &mut self.0 {
            // SAFETY: kill on the process group of a child we spawned and have not reaped.
            unsafe { libc::kill(-(c.id() as libc::pid_t), libc::SIGKILL) };
            let _ = c.wait();
        }
    }
}

mod loopdev;
#[allow(unused_imports)] // the block-layer tests use it
pub use loopdev::{LoopDevice, DIRECT_IO_BYTES};
#[path = "../../../../ebq/tests/common/rng.rs"]
mod rng;
#[allow(unused_imports)] // not every test file draws random numbers
pub use rng::Rng;

/// Runs a bundle made by `ebq compile` around `cmd` (`ebq run BUNDLE -c CMD
/// --format json`) with `PATH` set to `empty_dir`, so no clang is reachable;
/// asserts it succeeds and returns its JSON rows.
pub fn run_bundle_without_clang(
    bundle: &std::path::Path,
    empty_dir: &std::path::Path,
    cmd: &str,
) -> Vec<serde_json::Value> {
    let out = Command::new(ebq_bin())
        .env("PATH", empty_dir)
        .env_remove("EBQ_CLANG")
        .arg("run")
        .arg(bundle)
        .args(["-c", cmd, "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// Reads `child`'s first stderr line (ebq's "ebq: tracing …" once attached);
/// the child's stderr must be piped. Returns the line and the reader, which
/// the caller keeps so ebq's later stderr lines do not meet a closed pipe.
pub fn first_stderr_line(child: &mut Child) -> (String, impl std::io::BufRead) {
    let mut stderr = std::io::BufReader::new(child.stderr.take().expect("stderr is piped"));
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stderr, &mut line).unwrap();
    (line, stderr)
}

/// A free loopback port (bound, then released for the server to take).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Waits for `cond` (polling every 100 ms) or panics after `secs` saying `what`.
pub fn wait_for<T>(secs: u64, what: &str, mut cond: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = cond() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The tracepoints `pid`'s BPF links are attached to (`tp_name:` in the
/// links' `/proc/PID/fdinfo`): how a test knows another tool has attached,
/// where a fixed sleep only guesses (a loaded machine can take seconds).
#[allow(dead_code)] // not every test binary waits for a peer
pub fn attached_tracepoints(pid: u32) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else { return vec![] };
    dir.filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
        .filter_map(|info| info.lines().find_map(|l| l.strip_prefix("tp_name:").map(|v| v.trim().to_string())))
        .collect()
}

/// Waits until `pid` has links on every tracepoint in `names`.
#[allow(dead_code)]
pub fn wait_for_links(pid: u32, names: &[&str]) {
    wait_for(60, &format!("pid {pid} to attach to {names:?}"), || {
        let have = attached_tracepoints(pid);
        names.iter().all(|n| have.iter().any(|h| h == n)).then_some(())
    })
}

/// `GET path` on 127.0.0.1:port → (status code, body); None when nothing listens.
pub fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    use std::io::{Read, Write};
    write!(s, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").ok()?;
    let mut buf = vec![];
    s.read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    let code = text.split_whitespace().nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    // Prometheus answers with chunked encoding; its JSON is one chunk per line here.
    let body = if text.to_ascii_lowercase().contains("transfer-encoding: chunked") { dechunk(&body) } else { body };
    Some((code, body))
}

fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&after[..n]);
        rest = &after[n + 2..];
    }
    out
}

/// The value of the sample `series` (exact text before the value) on a /metrics page.
pub fn sample(page: &str, series: &str) -> Option<f64> {
    page.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.split(' ').next()?.parse().ok())
}

/// target/pyenv/bin/python with `package` from PyPI installed (the venv is
/// created on first use; `module` is what `import` checks for).
pub fn python_with(module: &str, package: &str) -> PathBuf {
    use std::path::Path;
    let target = ebq_bin().parent().and_then(|d| d.parent()).expect("target/").to_path_buf();
    let env = target.join("pyenv");
    let py = env.join("bin/python");
    let has = |py: &Path| {
        Command::new(py)
            .args(["-c", &format!("import {module}")])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !has(&py) {
        let quiet = |cmd: &mut Command, what: &str| {
            let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(
                out.status.success(),
                "{what} failed ({}): {}{}\n(scripts/setup.sh installs python3-venv)",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        };
        if !py.exists() {
            quiet(Command::new("python3").args(["-m", "venv"]).arg(&env), "python3 -m venv target/pyenv");
        }
        quiet(
            // `python -m pip`, not bin/pip: its shebang names the venv's original path.
            Command::new(&py).args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", package]),
            &format!("pip install {package}"),
        );
    }
    py
}

//! Shared helpers for end-to-end tests: run a query around a workload with
//! known syscall counts and read the results back as plain rows.
#![allow(dead_code)]

use ebq::runtime::Value;
use ebq::sink::rows;
use ebq::{Engine, Output, QueryStats, RunningQuery, Scope};
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

/// `ebq ARGS`, run to its end: its exit status, stdout and stderr.
pub fn ebq_output(args: &[&str]) -> std::process::Output {
    Command::new(ebq_bin()).args(args).output().unwrap()
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
    let mut q = RunningQuery::start(&prepared, scope(w.pid())).unwrap_or_else(|e| panic!("{}", e.render(&sql)));
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

/// Ids of the BPF programs process `pid` holds right now: the `prog_id:` of
/// each of its fds (a program's own fd and the links' fds both name it). Only
/// that process's programs, never the machine's: other ebq runs, other
/// engineers' tests and other tools load and unload programs meanwhile.
pub fn prog_ids_of(pid: u32) -> Vec<u64> {
    let mut ids: Vec<u64> = fdinfo_values(pid, "prog_id:").iter().filter_map(|v| v.parse().ok()).collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// The kernel's `recursion_misses` summed over the BPF programs process `pid`
/// holds (each program fd's fdinfo): the events a peer tool's programs did
/// not run for, which its own output never reports.
pub fn prog_recursion_misses(pid: u32) -> u64 {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else { return 0 };
    dir.filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
        .filter(|info| !info.contains("link_type:"))
        .filter_map(|info| info.lines().find_map(|l| l.strip_prefix("recursion_misses:")?.trim().parse::<u64>().ok()))
        .sum()
}

/// The BPF programs one process under test holds, watched from its start:
/// a thread reads the process's fdinfo ([`prog_ids_of`]) every 10 ms and keeps
/// every id it ever saw (a daemon's reloads, a short run's brief attach), until
/// [`ProgWatch::assert_gone`]. Scoped to that process, never to the machine's
/// `ebq_*` programs: other ebq runs (other tests of this binary, other
/// engineers) load and unload theirs meanwhile.
pub struct ProgWatch {
    seen: std::sync::Arc<std::sync::Mutex<Vec<u64>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ProgWatch {
    /// Starts watching `pid`.
    pub fn of(pid: u32) -> ProgWatch {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::{Arc, Mutex};
        let seen = Arc::new(Mutex::new(vec![]));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (seen.clone(), stop.clone());
        let thread = std::thread::spawn(move || loop {
            let now = prog_ids_of(pid);
            {
                let mut all = s.lock().unwrap();
                for id in now {
                    if !all.contains(&id) {
                        all.push(id);
                    }
                }
            }
            if st.load(Ordering::Relaxed) || !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        });
        ProgWatch { seen, stop, thread: Some(thread) }
    }

    /// Every program id seen so far.
    pub fn held(&self) -> Vec<u64> {
        self.seen.lock().unwrap().clone()
    }

    /// The ids the process holds now.
    pub fn holding(&self, pid: u32) -> Vec<u64> {
        prog_ids_of(pid)
    }

    /// Stops watching (call once the process has exited) and asserts that
    /// none of the programs it held is loaded any more ([`assert_progs_gone`]).
    pub fn assert_gone(mut self) -> Vec<u64> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        let ids = self.held();
        assert_progs_gone(&ids);
        ids
    }
}

impl Drop for ProgWatch {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Whether the program with this id is still loaded (`bpftool prog show id`).
pub fn prog_loaded(id: u64) -> bool {
    Command::new("bpftool")
        .args(["prog", "show", "id", &id.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("bpftool")
        .success()
}

/// Waits (up to 5 s: the kernel frees a program once its last fd and link
/// are gone) until none of `ids` — the programs the process under test held,
/// from [`prog_ids_of`] — is loaded any more. Ids are never reused while a
/// program lives, so a leaked one stays and fails; whatever else the machine
/// loads meanwhile is not this test's business.
pub fn assert_progs_gone(ids: &[u64]) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left: Vec<u64> = ids.iter().copied().filter(|&id| prog_loaded(id)).collect();
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "programs left loaded: {left:?} (of {ids:?})");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs `cmd` to completion (as `Command::output`), watching the programs it
/// holds meanwhile: its output and those program ids ([`ProgWatch`]), which
/// the caller checks with [`ProgWatch::assert_gone`].
pub fn output_watched(cmd: &mut Command) -> (std::process::Output, ProgWatch) {
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    let watch = ProgWatch::of(child.id());
    (child.wait_with_output().unwrap(), watch)
}

/// Every loss a query's stats report, summed: events `dropped` (group map or
/// ring buffer full), `missed` (the kernel skipped the query program), and for
/// a JOIN `missed_starts`, `open_pairs`, `superseded`, `pending_full` and
/// `evicted` (pairs never seen or never closed); with `-c`, `missed_tracking`
/// and `untracked` (children perhaps not traced). Counters that do not apply to
/// a query's shape are 0. `unmatched` is not a loss (an end whose start came
/// before attach); an end whose start was missed is in `missed_starts`.
pub fn lost(stats: &QueryStats) -> u64 {
    stats.dropped
        + stats.missed
        + stats.missed_starts
        + stats.open_pairs
        + stats.superseded
        + stats.pending_full
        + stats.evicted
        + stats.missed_tracking
        + stats.untracked
}

/// "Exact or accounted" (GROUND-TRUTH.md): `counted` events or pairs against
/// `truth` from a counter nobody here wrote, read around the traced window.
///
/// - Never more than the truth: `counted <= truth`.
/// - Every event short is accounted: `truth <= counted + lost(stats)` — for
///   rows `dropped`; for a JOIN `missed` (ends), `missed_starts`, `open_pairs`,
///   `superseded`, `pending_full`, `evicted`; with `-c` `missed_tracking`,
///   `untracked`. (`missed` is counted before any scope or WHERE, so it bounds
///   the loss from above rather than equalling it: hence `<=`.)
/// - When the stats say nothing was lost, exact: `counted == truth`.
///
/// The message names `what` and prints the stats.
pub fn assert_exact_or_accounted(counted: u64, truth: u64, stats: &QueryStats, what: &str) {
    let lost = lost(stats);
    if counted != truth {
        // Visible with --nocapture: how often a run needed its accounting.
        eprintln!("exact or accounted: {what}: counted {counted} of {truth}, reported lost {lost}; {stats:?}");
    }
    if lost == 0 {
        assert_eq!(counted, truth, "{what}: counted vs truth, nothing reported lost; {stats:?}");
    } else {
        assert!(
            counted <= truth && truth <= counted + lost,
            "{what}: counted {counted}, truth {truth}, reported lost {lost} (exact or accounted: \
             counted <= truth <= counted + lost); {stats:?}"
        );
    }
}

/// [`assert_exact_or_accounted`] over keyed counts (per fd, per flags, …):
/// with nothing lost the maps are equal; otherwise no key counts more than its
/// truth or is unknown to it, and the shortfall over all keys is at most what
/// the stats report lost.
pub fn assert_map_exact_or_accounted<K: Ord + std::fmt::Debug>(
    counted: &BTreeMap<K, u64>,
    truth: &BTreeMap<K, u64>,
    stats: &QueryStats,
    what: &str,
) {
    if lost(stats) == 0 {
        assert_eq!(counted, truth, "{what}: counted vs truth, nothing reported lost; {stats:?}");
        return;
    }
    for (k, n) in counted {
        assert!(truth.get(k).is_some_and(|t| n <= t), "{what}: {k:?} counted {n}, truth {truth:?}; {stats:?}");
    }
    let (c, t) = (counted.values().sum::<u64>(), truth.values().sum::<u64>());
    assert_exact_or_accounted(c, t, stats, what);
}

/// [`assert_map_exact_or_accounted`] over keyed tuples whose `count` is the
/// event count (calls, requests) and whose other fields (bytes, offsets) a
/// loss would change: the counts are exact or accounted; the whole tuples are
/// equal when the stats say nothing was lost.
pub fn assert_keyed_exact_or_accounted<K: Ord + Clone + std::fmt::Debug, V: PartialEq + std::fmt::Debug>(
    counted: &BTreeMap<K, V>,
    truth: &BTreeMap<K, V>,
    count: impl Fn(&V) -> u64,
    stats: &QueryStats,
    what: &str,
) {
    let counts = |m: &BTreeMap<K, V>| m.iter().map(|(k, v)| (k.clone(), count(v))).collect::<BTreeMap<K, u64>>();
    assert_map_exact_or_accounted(&counts(counted), &counts(truth), stats, what);
    if lost(stats) == 0 {
        assert_eq!(counted, truth, "{what}: nothing reported lost; {stats:?}");
    }
}

/// The stats of ebq's final stats line on `stderr` (the CLI's `ebq: S events
/// seen, M matched[, D delivered], X dropped, Y missed[; JOIN: …][; …]`), as a
/// [`QueryStats`] with the counters the line prints (the others 0).
pub fn cli_stats(stderr: &str) -> QueryStats {
    let num = |words: &str| stats_value(stderr, words).unwrap_or(0);
    QueryStats {
        seen: num(" events seen"),
        matched: num(" matched"),
        delivered: num(" delivered"),
        dropped: num(" dropped"),
        // The first ` missed` is the query program's (`…, Y missed[; JOIN: …]`).
        missed: num(" missed"),
        unmatched: unmatched(stderr),
        missed_starts: num(" start events missed"),
        open_pairs: num(" pairs left open"),
        superseded: num(" superseded"),
        pending_full: num(" pairs lost"),
        evicted: num(" evicted"),
        late: num(" rows late"),
        untracked: num(" child processes untracked"),
        missed_tracking: num(" fork/exit events missed"),
        ..QueryStats::default()
    }
}

/// The number right before `words` (`" dropped"`, `" start events missed"`)
/// on ebq's final stats line on `stderr` (`ebq: S events seen, …`); `None`
/// when the line does not print `words`. Panics without a stats line: every
/// run that ends prints one.
pub fn stats_value(stderr: &str, words: &str) -> Option<u64> {
    let line = stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("ebq: ") && l.contains(" events seen"))
        .unwrap_or_else(|| panic!("no stats line in: {stderr}"));
    let at = line.find(words)?;
    let head = line[..at].trim_end();
    let number = head.rsplit(|c: char| !c.is_ascii_digit()).next().and_then(|n| n.parse().ok());
    Some(number.unwrap_or_else(|| panic!("no number before `{words}` in {line}")))
}

/// A JOIN's end events with no start, from the line after the stats line
/// (`ebq: JOIN: N end events had no start (…): not losses`); 0 without it.
pub fn unmatched(stderr: &str) -> u64 {
    stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("ebq: JOIN: ") && l.contains(" end events had no start"))
        .map(|l| {
            let n = l["ebq: JOIN: ".len()..].split(' ').next().unwrap_or_default();
            n.parse().unwrap_or_else(|_| panic!("{l}"))
        })
        .unwrap_or(0)
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
        // Owned one by one: if the second fails to start, the first is still killed.
        let mut loops = DdLoops(vec![]);
        loops.0.push(spawn("0"));
        loops.0.push(spawn("1"));
        loops
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

pub mod kafka;
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
    run_bundle_without_clang_stats(bundle, empty_dir, cmd).0
}

/// [`run_bundle_without_clang`], with the stats of its final stats line ([`cli_stats`]).
pub fn run_bundle_without_clang_stats(
    bundle: &std::path::Path,
    empty_dir: &std::path::Path,
    cmd: &str,
) -> (Vec<serde_json::Value>, QueryStats) {
    let out = Command::new(ebq_bin())
        .env("PATH", empty_dir)
        .env_remove("EBQ_CLANG")
        .arg("run")
        .arg(bundle)
        .args(["-c", cmd, "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (rows, cli_stats(&String::from_utf8_lossy(&out.stderr)))
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

/// A sink's counts from its stats line (`ebq: sink NAME: W rows written, D
/// dropped (…); X delivered, F failed, Q still queued at exit (lost)`) of a
/// Kafka or OTLP sink.
#[derive(Debug, PartialEq, Eq)]
pub struct SinkLine {
    pub written: u64,
    pub dropped: u64,
    pub delivered: u64,
    pub failed: u64,
    pub queued: u64,
}

pub fn sink_line(stderr: &str, name: &str) -> SinkLine {
    let prefix = format!("ebq: sink {name}: ");
    let line = stderr
        .lines()
        // Not the sink's error lines, which start alike.
        .find_map(|l| l.strip_prefix(&prefix).filter(|rest| rest.contains(" rows written, ")))
        .unwrap_or_else(|| panic!("no stats line of sink {name} in:\n{stderr}"));
    let num = |word: &str| -> u64 {
        let at = line.find(word).unwrap_or_else(|| panic!("no `{word}` in {line}"));
        line[..at].trim_end().rsplit(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
    };
    SinkLine {
        written: num(" rows written"),
        dropped: num(" dropped"),
        delivered: num(" delivered"),
        failed: num(" failed"),
        queued: num(" still queued at exit"),
    }
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
    fdinfo_values(pid, "tp_name:")
}

/// The value of the `key` line (`prog_id:`, `map_id:`, `tp_name:`, …) of each
/// of `pid`'s fds that has one, trimmed; none when the process is gone.
pub fn fdinfo_values(pid: u32, key: &str) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else { return vec![] };
    dir.filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
        .filter_map(|info| info.lines().find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_string())))
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

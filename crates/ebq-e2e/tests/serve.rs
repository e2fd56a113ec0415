//! `ebq serve` end to end: a real Prometheus server scrapes the daemon and
//! its HTTP API returns the workload's exact counts; config errors are
//! positioned; SIGHUP reload keeps unchanged queries' state; a query that
//! cannot start does not stop the others; SIGTERM leaves no program loaded;
//! capabilities are reduced once everything is attached.

mod common;

use common::{assert_nothing_left, ebq_bin, ebq_prog_ids, free_port, http_get, sample, Workload};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

fn tmp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ebq-serve-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Waits for `cond` (polling every 100 ms) or panics after `secs` saying `what`.
fn wait_for<T>(secs: u64, what: &str, mut cond: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = cond() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A running `ebq serve`; dropping it sends SIGTERM and reaps it.
struct Daemon {
    child: Child,
    port: u16,
    log: PathBuf,
    config: PathBuf,
}

impl Daemon {
    /// Starts `ebq serve` on `config_text` (with `{port}` filled) and waits
    /// until every query is attached and capabilities are dropped.
    fn start(dir: &Path, config_text: &str) -> Daemon {
        let port = free_port();
        let config = dir.join("ebq.toml");
        std::fs::write(&config, config_text.replace("{port}", &port.to_string())).unwrap();
        let log = dir.join("ebq.log");
        let child = Command::new(ebq_bin())
            .args(["serve", "--config"])
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start ebq serve");
        let d = Daemon { child, port, log, config };
        wait_for(60, "ebq serve to attach its queries", || d.log().contains("capabilities reduced").then_some(()));
        d
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn metrics(&self) -> String {
        let (code, body) = http_get(self.port, "/metrics").expect("/metrics answers");
        assert_eq!(code, 200, "{body}");
        body
    }

    fn signal(&self, sig: libc::c_int) {
        // SAFETY: kill with our child's pid.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, sig) }, 0);
    }

    /// SIGTERM; returns the exit status.
    fn stop(mut self) -> std::process::ExitStatus {
        self.signal(libc::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(Instant::now() < deadline, "ebq serve did not stop on SIGTERM:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Windows `query` has published so far.
    fn windows(&self, query: &str) -> f64 {
        sample(&self.metrics(), &format!("ebq_query_windows_total{{query=\"{query}\"}}")).unwrap_or(0.0)
    }

    /// Waits until `query` has closed two more windows than now: the window
    /// that was open when this was called is closed and published.
    fn wait_closed_window(&self, query: &str) {
        let now = self.windows(query);
        wait_for(30, "a closed window", || (self.windows(query) >= now + 2.0).then_some(()));
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.signal(libc::SIGTERM);
            let _ = self.child.wait();
        }
    }
}

/// A `prometheus` server scraping `targets` every 500 ms, with storage in `dir`.
struct Prometheus {
    child: Child,
    port: u16,
}

impl Prometheus {
    fn start(dir: &Path, target_port: u16) -> Prometheus {
        let port = free_port();
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 500ms\n  scrape_timeout: 500ms\nscrape_configs:\n  - job_name: ebq\n    static_configs:\n      - targets: ['127.0.0.1:{target_port}']\n"
            ),
        )
        .unwrap();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
            .spawn()
            .expect("start prometheus (scripts/setup.sh installs the Debian package)");
        let p = Prometheus { child, port };
        wait_for(60, "prometheus to be ready", || http_get(port, "/-/ready").filter(|r| r.0 == 200));
        p
    }

    /// An instant query → [(labels, value, timestamp seconds)].
    fn query(&self, promql: &str) -> Vec<(serde_json::Value, f64, f64)> {
        let (code, body) = http_get(self.port, &format!("/api/v1/query?query={}", url_encode(promql))).unwrap();
        assert_eq!(code, 200, "{promql}: {body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
        v["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let ts = r["value"][0].as_f64().unwrap();
                let val = r["value"][1].as_str().unwrap().parse().unwrap();
                (r["metric"].clone(), val, ts)
            })
            .collect()
    }

    /// The one value of `promql`, from a scrape taken after `after`.
    fn value_after(&self, promql: &str, after: SystemTime) -> f64 {
        let after = after.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs_f64();
        // timestamp() of the series is its last scrape time.
        wait_for(30, "a scrape after the closed window", || {
            let ts = self.query(&format!("timestamp({promql})"));
            (ts.len() == 1 && ts[0].1 > after).then_some(())
        });
        let r = self.query(promql);
        assert_eq!(r.len(), 1, "{promql}: {r:?}");
        r[0].1
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        // SAFETY: kill with our child's pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

#[test]
fn prometheus_scrapes_the_exact_counts_of_a_closed_window() {
    let before = ebq_prog_ids();
    let dir = tmp_dir("prom");
    let comm = format!("srv{}", std::process::id() % 100_000);
    let config = format!(
        r#"listen = "127.0.0.1:{{port}}"

[[query]]
name = "wl"
sql = "SELECT comm, COUNT(*) AS calls, SUM(count) AS read_bytes, HIST(count) AS size_bytes FROM syscalls.sys_enter_read WHERE comm = '{comm}' GROUP BY comm WINDOW(time, 500)"

[[query]]
name = "fds"
sql = "SELECT fd, COUNT(*) AS calls FROM syscalls.sys_enter_pread64 WHERE comm = '{comm}' GROUP BY fd WINDOW(time, 500)"
max_series = 2
"#
    );
    let daemon = Daemon::start(&dir, &config);
    let prom = Prometheus::start(&dir, daemon.port);

    let w = Workload::start(&["readzero", "--count", "3000", "--bs", "3", "--comm", &comm]);
    w.go();
    let report = w.report();
    let p = Workload::start(&["pread", "--fds", "4", "--calls", "5,5,5,5", "--fd-base", "100", "--comm", &comm]);
    p.go();
    p.report();
    daemon.wait_closed_window("wl");
    daemon.wait_closed_window("fds");
    let closed = SystemTime::now();

    // /metrics itself.
    let page = daemon.metrics();
    let l = format!("comm=\"{comm}\"");
    assert_eq!(sample(&page, &format!("ebq_wl_calls_total{{{l}}}")), Some(3000.0), "{report}\n{page}");
    assert_eq!(sample(&page, &format!("ebq_wl_read_bytes_total{{{l}}}")), Some(9000.0));
    assert_eq!(sample(&page, &format!("ebq_wl_size_bytes_bucket{{le=\"3.0\",{l}}}")), Some(3000.0));
    assert_eq!(sample(&page, &format!("ebq_wl_size_bytes_bucket{{le=\"+Inf\",{l}}}")), Some(3000.0));
    assert_eq!(sample(&page, &format!("ebq_wl_size_bytes_count{{{l}}}")), Some(3000.0));
    assert_eq!(sample(&page, "ebq_query_events_matched_total{query=\"wl\"}"), Some(3000.0));
    assert_eq!(sample(&page, "ebq_query_events_dropped_total{query=\"wl\"}"), Some(0.0));
    assert!(sample(&page, "ebq_query_bpf_runs_total{query=\"wl\"}").unwrap() >= 3000.0, "{page}");
    // Cardinality bound: 4 fds, 2 series kept, the other 2 counted.
    assert_eq!(sample(&page, "ebq_query_series{query=\"fds\"}"), Some(2.0), "{page}");
    assert_eq!(sample(&page, "ebq_query_series_overflow_total{query=\"fds\"}"), Some(2.0), "{page}");
    let kept: Vec<f64> = page
        .lines()
        .filter(|l| l.starts_with("ebq_fds_calls_total{"))
        .map(|l| sample(l, l.split(' ').next().unwrap()).unwrap())
        .collect();
    assert_eq!(kept, [5.0, 5.0], "{page}");

    // The same numbers through a real Prometheus server.
    let sel = format!("{{job=\"ebq\",{l}}}");
    assert_eq!(prom.value_after(&format!("ebq_wl_calls_total{sel}"), closed), 3000.0);
    assert_eq!(prom.value_after(&format!("ebq_wl_read_bytes_total{sel}"), closed), 9000.0);
    assert_eq!(prom.value_after(&format!("ebq_wl_size_bytes_bucket{{job=\"ebq\",{l},le=\"3.0\"}}"), closed), 3000.0);
    assert_eq!(prom.value_after(&format!("ebq_wl_size_bytes_count{sel}"), closed), 3000.0);
    assert_eq!(prom.value_after("ebq_query_series_overflow_total{query=\"fds\"}", closed), 2.0);
    assert_eq!(prom.value_after("ebq_query_up{query=\"wl\"}", closed), 1.0);

    // Least privilege: only CAP_BPF and CAP_PERFMON remain, in every set that could give more back.
    let status = std::fs::read_to_string(format!("/proc/{}/status", daemon.child.id())).unwrap();
    let caps = |key: &str| {
        let line = status.lines().find(|l| l.starts_with(key)).unwrap();
        u64::from_str_radix(line[key.len()..].trim(), 16).unwrap()
    };
    let kept = (1u64 << 38) | (1u64 << 39);
    assert_eq!(caps("CapEff:"), kept, "{status}");
    assert_eq!(caps("CapPrm:"), kept);
    assert_eq!(caps("CapBnd:"), kept);
    assert_eq!(caps("CapInh:"), 0);
    assert_eq!(caps("NoNewPrivs:"), 1);

    assert!(daemon.stop().success());
    assert_nothing_left(&before);
}

#[test]
fn config_errors_are_positioned() {
    let dir = tmp_dir("errors");
    let check = |text: &str| -> String {
        let path = dir.join("bad.toml");
        std::fs::write(&path, text).unwrap();
        let out = Command::new(ebq_bin()).args(["serve", "--check", "--config"]).arg(&path).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{text}");
        String::from_utf8(out.stderr).unwrap().replace(&path.display().to_string(), "bad.toml")
    };
    let ok =
        "[[query]]\nname = \"ok\"\nsql = \"SELECT COUNT(*) AS n FROM syscalls.sys_enter_read WINDOW(time, 1000)\"\n";
    assert_eq!(check(&format!("{ok}max_groups = 3\n")), "error: bad.toml:4:1: unknown field `max_groups`, expected one of `name`, `sql`, `file`, `shipped`, `set`, `interval`, `max_series`, `pin`, `keep_pins`\n");
    assert_eq!(check(&format!("listen = \"10.1.2.3:9435\"\n{ok}")), "error: bad.toml:1:10: listen: 10.1.2.3:9435 is not a loopback address; /metrics is unauthenticated, so ebq only serves it beyond this host when the file says `allow_remote = true`\n");
    assert_eq!(
        check(&format!("{ok}interval = \"fast\"\n")),
        "error: bad.toml:4:12: query `ok`: interval: `fast` is not a duration like \"10s\" or \"500ms\"\n"
    );
    // The query's own error, prefixed with its name and where its SQL is, keeps its own line:column.
    let bad = "[[query]]\nname = \"typo\"\nsql = \"SELECT COUNT(*) AS n FROM syscalls.sys_enter_raed\"\n";
    let e = check(&format!("{ok}\n{bad}"));
    assert!(
        e.starts_with("error: bad.toml:7:7: query `typo`: unknown event `tracepoint:syscalls:sys_enter_raed`"),
        "{e}"
    );
    assert!(e.contains("help: did you mean tracepoint:syscalls:sys_enter_read"), "{e}");
    let bad =
        "[[query]]\nname = \"col\"\nsql = \"SELECT COUNT(*) AS n FROM syscalls.sys_enter_read WHERE nosuch = 1\"\n";
    let e = check(bad);
    assert!(e.starts_with("error: bad.toml:3:7: query `col`: unknown column `nosuch`"), "{e}");
    assert!(e.contains(" at 1:57\n1 | SELECT COUNT(*) AS n FROM syscalls.sys_enter_read WHERE nosuch = 1\n"), "{e}");
    let rows = "[[query]]\nname = \"rows\"\nsql = \"SELECT pid FROM syscalls.sys_enter_read\"\n";
    assert_eq!(check(rows), "error: bad.toml:3:7: query `rows`: this query streams rows; only aggregate queries (GROUP BY, COUNT, HIST …) can be exported as metrics\n");
    // A good file checks.
    let path = dir.join("good.toml");
    std::fs::write(&path, ok).unwrap();
    let out = Command::new(ebq_bin()).args(["serve", "--check", "--config"]).arg(&path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// kprobes are not built into every kernel; where they are not, a kprobe
/// query binds but cannot start: the query that fails at runtime here.
fn kprobes_available() -> bool {
    Path::new("/sys/bus/event_source/devices/kprobe/type").exists()
        || Path::new("/sys/kernel/tracing/kprobe_events").exists()
}

#[test]
fn sighup_reload_keeps_unchanged_queries_and_sigterm_leaves_nothing() {
    assert!(!kprobes_available(), "this test needs a query that fails to start: a kprobe on a kernel without kprobes");
    let before = ebq_prog_ids();
    let dir = tmp_dir("reload");
    let comm = format!("rld{}", std::process::id() % 100_000);
    let keep = format!(
        "[[query]]\nname = \"keep\"\nsql = \"SELECT COUNT(*) AS calls FROM syscalls.sys_enter_read WHERE comm = '{comm}' WINDOW(time, 500)\"\n"
    );
    let gone = "[[query]]\nname = \"gone\"\nsql = \"SELECT COUNT(*) AS calls FROM syscalls.sys_enter_write WINDOW(time, 500)\"\n";
    let changed = |size: u32| {
        format!("[[query]]\nname = \"changed\"\nsql = \"SELECT COUNT(*) AS calls FROM syscalls.sys_enter_read WHERE comm = '{comm}' WINDOW(time, {size})\"\n")
    };
    let daemon = Daemon::start(&dir, &format!("listen = \"127.0.0.1:{{port}}\"\n{keep}{gone}{}", changed(500)));
    let started: Vec<u64> = ebq_prog_ids().into_iter().filter(|id| !before.contains(id)).collect();
    assert!(!started.is_empty());

    let w = Workload::start(&["readzero", "--count", "700", "--comm", &comm]);
    w.go();
    w.report();
    daemon.wait_closed_window("keep");
    daemon.wait_closed_window("changed");
    let page = daemon.metrics();
    assert_eq!(sample(&page, "ebq_keep_calls_total"), Some(700.0), "{page}");
    assert_eq!(sample(&page, "ebq_changed_calls_total"), Some(700.0), "{page}");
    assert!(sample(&page, "ebq_gone_calls_total").is_some(), "{page}");

    // Reload: `keep` unchanged, `gone` removed, `changed` changed, `added` and a failing `bad` added.
    let added = format!(
        "[[query]]\nname = \"added\"\nsql = \"SELECT COUNT(*) AS calls FROM syscalls.sys_enter_read WHERE comm = '{comm}' WINDOW(time, 500)\"\n"
    );
    let bad = "[[query]]\nname = \"bad\"\nsql = \"SELECT COUNT(*) AS calls FROM kprobe:vfs_read WINDOW(time, 500)\"\n";
    let port = daemon.port;
    std::fs::write(&daemon.config, format!("listen = \"127.0.0.1:{port}\"\n{bad}{keep}{}{added}", changed(1000)))
        .unwrap();
    daemon.signal(libc::SIGHUP);
    wait_for(60, "the reload", || daemon.log().contains("reloaded").then_some(()));
    let log = daemon.log();
    assert!(log.contains("1 kept, 2 detached, 3 started"), "{log}");
    assert!(log.contains("query `bad` (") && log.contains("failed to start"), "{log}");

    let w = Workload::start(&["readzero", "--count", "300", "--comm", &comm]);
    w.go();
    w.report();
    daemon.wait_closed_window("keep");
    daemon.wait_closed_window("changed");
    daemon.wait_closed_window("added");
    let page = daemon.metrics();
    // The unchanged query kept its state across the reload; the changed one restarted.
    assert_eq!(sample(&page, "ebq_keep_calls_total"), Some(1000.0), "{page}");
    assert_eq!(sample(&page, "ebq_changed_calls_total"), Some(300.0), "{page}");
    assert_eq!(sample(&page, "ebq_added_calls_total"), Some(300.0), "{page}");
    assert_eq!(sample(&page, "ebq_gone_calls_total"), None, "{page}");
    assert_eq!(sample(&page, "ebq_query_errors_total{query=\"gone\"}"), None, "{page}");
    // The failed query is reported, not retried, and the others run.
    assert_eq!(sample(&page, "ebq_query_up{query=\"bad\"}"), Some(0.0), "{page}");
    assert_eq!(sample(&page, "ebq_query_errors_total{query=\"bad\"}"), Some(1.0), "{page}");
    for q in ["keep", "changed", "added"] {
        assert_eq!(sample(&page, &format!("ebq_query_up{{query=\"{q}\"}}")), Some(1.0), "{page}");
        assert_eq!(sample(&page, &format!("ebq_query_errors_total{{query=\"{q}\"}}")), Some(0.0), "{page}");
    }
    assert_eq!(sample(&page, "ebq_config_reloads_total{result=\"ok\"}"), Some(1.0), "{page}");

    // Programs of detached queries are gone while the daemon runs.
    let now = ebq_prog_ids();
    let gone_or_changed = started.iter().filter(|id| !now.contains(id)).count();
    assert!(gone_or_changed > 0, "detached queries' programs are unloaded");

    // A file that does not check is refused as a whole; everything keeps running.
    std::fs::write(&daemon.config, format!("listen = \"127.0.0.1:{port}\"\n{keep}oops = 1\n")).unwrap();
    daemon.signal(libc::SIGHUP);
    wait_for(30, "the refused reload", || daemon.log().contains("reload refused").then_some(()));
    let page = daemon.metrics();
    assert_eq!(sample(&page, "ebq_config_reloads_total{result=\"error\"}"), Some(1.0), "{page}");
    assert_eq!(sample(&page, "ebq_query_up{query=\"added\"}"), Some(1.0), "{page}");

    let status = daemon.stop();
    assert!(status.success(), "{status}");
    assert_nothing_left(&before);
}

#[test]
fn without_reload_every_capability_is_dropped() {
    let before = ebq_prog_ids();
    let dir = tmp_dir("noreload");
    let q = |name: &str| {
        format!("[[query]]\nname = \"{name}\"\nsql = \"SELECT COUNT(*) AS calls FROM syscalls.sys_enter_read WINDOW(time, 500)\"\n")
    };
    let daemon = Daemon::start(&dir, &format!("listen = \"127.0.0.1:{{port}}\"\nreload = false\n{}", q("one")));
    let status = std::fs::read_to_string(format!("/proc/{}/status", daemon.child.id())).unwrap();
    for key in ["CapEff:", "CapPrm:", "CapBnd:", "CapInh:"] {
        let line = status.lines().find(|l| l.starts_with(key)).unwrap();
        assert_eq!(u64::from_str_radix(line[key.len()..].trim(), 16).unwrap(), 0, "{line}");
    }
    daemon.wait_closed_window("one");
    // A reload can still detach, but what it adds cannot load: reported, and `one` keeps running.
    let port = daemon.port;
    std::fs::write(&daemon.config, format!("listen = \"127.0.0.1:{port}\"\nreload = false\n{}{}", q("one"), q("two")))
        .unwrap();
    daemon.signal(libc::SIGHUP);
    wait_for(60, "the reload", || daemon.log().contains("reloaded").then_some(()));
    daemon.wait_closed_window("one");
    let page = daemon.metrics();
    assert_eq!(sample(&page, "ebq_query_up{query=\"one\"}"), Some(1.0), "{page}");
    assert_eq!(sample(&page, "ebq_query_up{query=\"two\"}"), Some(0.0), "{page}");
    assert_eq!(sample(&page, "ebq_query_errors_total{query=\"two\"}"), Some(1.0), "{page}");
    assert!(daemon.log().contains("query `two` ("), "{}", daemon.log());
    assert!(daemon.stop().success());
    assert_nothing_left(&before);
}

/// The example config runs, and every metric the Grafana dashboard queries is one it exports.
#[test]
fn the_dashboard_queries_metrics_the_example_config_exports() {
    let before = ebq_prog_ids();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let config = std::fs::read_to_string(root.join("deploy/ebq.toml")).unwrap();
    let dashboard = std::fs::read_to_string(root.join("deploy/grafana-ebq-storage.json")).unwrap();
    let _: serde_json::Value = serde_json::from_str(&dashboard).expect("the dashboard is JSON");
    let config = config
        .replace("listen = \"127.0.0.1:9435\"", "listen = \"127.0.0.1:{port}\"")
        .replace("\"10s\"", "\"1s\"")
        .replace("interval_ms = 10000", "interval_ms = 1000");
    assert!(config.contains("{port}"));
    let daemon = Daemon::start(&tmp_dir("deploy"), &config);
    for q in ["biolatency", "vfsstat", "filetop", "fs", "syscount"] {
        daemon.wait_closed_window(q);
    }
    let page = daemon.metrics();
    let families: Vec<&str> = page.lines().filter_map(|l| l.strip_prefix("# TYPE ")?.split(' ').next()).collect();
    let mut used: Vec<String> = vec![];
    let bytes = dashboard.as_bytes();
    let mut i = 0;
    while let Some(at) = dashboard[i..].find("ebq_") {
        let start = i + at;
        let end = start + bytes[start..].iter().take_while(|b| b.is_ascii_lowercase() || **b == b'_').count();
        used.push(dashboard[start..end].to_string());
        i = end;
    }
    used.sort();
    used.dedup();
    assert!(used.len() >= 10, "{used:?}");
    for name in &used {
        let family =
            ["_bucket", "_count", "_sum", "_total"].iter().fold(name.as_str(), |n, s| n.strip_suffix(s).unwrap_or(n));
        assert!(families.contains(&family), "the dashboard uses {name}, which ebq does not export:\n{page}");
    }
    assert!(daemon.stop().success());
    assert_nothing_left(&before);
}

#[test]
fn a_grouped_join_of_two_streams_is_served_as_counters() {
    let dir = tmp_dir("join");
    let comm = format!("sj{}", std::process::id() % 100_000);
    // Each enter meets only its own exit: the next call of the thread is 2 ms later.
    let config = format!(
        r#"listen = "127.0.0.1:{{port}}"

[[query]]
name = "pairs"
sql = "SELECT a.fd, COUNT(*) AS calls, SUM(a.count) AS read_bytes FROM syscalls.sys_enter_pread64 a, syscalls.sys_exit_pread64 b WHERE a.tid = b.tid AND a.comm = '{comm}' AND b.time - a.time < 1000000 GROUP BY a.fd WINDOW(time, 500)"
"#
    );
    let daemon = Daemon::start(&dir, &config);
    let w = Workload::start(&[
        "pread",
        "--fds",
        "3",
        "--calls",
        "7,5,3",
        "--fd-base",
        "100",
        "--size-base",
        "64",
        "--gap-us",
        "2000",
        "--comm",
        &comm,
    ]);
    w.go();
    let report = w.report();
    daemon.wait_closed_window("pairs");
    let page = daemon.metrics();
    let series = |metric: &str| -> Vec<(String, f64)> {
        page.lines()
            .filter(|l| l.starts_with(&format!("{metric}{{")))
            .map(|l| (l.split('}').next().unwrap().to_string(), sample(l, l.split(' ').next().unwrap()).unwrap()))
            .collect()
    };
    let calls = series("ebq_pairs_calls_total");
    assert_eq!(calls.len(), 3, "one series per fd:\n{page}");
    for (fd, (calls, bytes)) in common::per_fd(&report) {
        let label = format!("ebq_pairs_calls_total{{fd=\"{fd}\"");
        assert_eq!(
            series("ebq_pairs_calls_total").iter().find(|(l, _)| *l == label).map(|s| s.1),
            Some(calls as f64),
            "{page}"
        );
        let label = format!("ebq_pairs_read_bytes_total{{fd=\"{fd}\"");
        assert_eq!(
            series("ebq_pairs_read_bytes_total").iter().find(|(l, _)| *l == label).map(|s| s.1),
            Some(bytes as f64),
            "{page}"
        );
    }
    assert_eq!(sample(&page, "ebq_query_up{query=\"pairs\"}"), Some(1.0), "{page}");
    assert!(daemon.stop().success());
}

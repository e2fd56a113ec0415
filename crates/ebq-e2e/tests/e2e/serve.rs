//! `ebq serve` end to end: a real Prometheus server scrapes the daemon and
//! its HTTP API returns the workload's exact counts (and, from two daemons'
//! native histograms, the exact count and sum and a p99 within the sketch's
//! bound of the union's exact one); config errors are
//! positioned; SIGHUP reload keeps unchanged queries' state; a query that
//! cannot start does not stop the others; SIGTERM leaves no program loaded;
//! capabilities are reduced once everything is attached.

use crate::common;

use common::{ebq_bin, free_port, http_get, python_with, sample, wait_for, Workload};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// The `Accept` header of Prometheus 2.42's scrapes.
pub(crate) const OPENMETRICS: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/// One request to `/metrics` with `method` and `accept`: (status line and headers, body).
pub(crate) fn scrape(port: u16, method: &str, accept: Option<&str>) -> (String, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let accept = accept.map_or(String::new(), |a| format!("Accept: {a}\r\n"));
    write!(s, "{method} /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n{accept}Connection: close\r\n\r\n").unwrap();
    let mut raw = vec![];
    s.read_to_end(&mut raw).unwrap();
    // A protobuf page is binary: lossy text is enough to look at its head.
    let got = String::from_utf8_lossy(&raw);
    let (head, body) = got.split_once("\r\n\r\n").unwrap_or((&got, ""));
    (head.to_string(), body.to_string())
}

pub(crate) fn tmp_dir(tag: &str) -> PathBuf {
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

/// A running `ebq serve`; dropping it sends SIGTERM and reaps it.
pub(crate) struct Daemon {
    pub(crate) child: Child,
    pub(crate) port: u16,
    pub(crate) log: PathBuf,
    pub(crate) config: PathBuf,
}

impl Daemon {
    /// Starts `ebq serve` on `config_text` (with `{port}` filled) and waits
    /// until every query is attached and capabilities are dropped.
    pub(crate) fn start(dir: &Path, config_text: &str) -> Daemon {
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

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The page in OpenMetrics, the format Prometheus asks for.
    pub(crate) fn metrics(&self) -> String {
        let (head, body) = scrape(self.port, "GET", Some(OPENMETRICS));
        assert!(head.starts_with("HTTP/1.1 200 "), "{head}\n{body}");
        body
    }

    pub(crate) fn signal(&self, sig: libc::c_int) {
        // SAFETY: kill with our child's pid.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, sig) }, 0);
    }

    /// SIGTERM; returns the exit status.
    pub(crate) fn stop(mut self) -> std::process::ExitStatus {
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
    pub(crate) fn windows(&self, query: &str) -> f64 {
        sample(&self.metrics(), &format!("ebq_query_windows_total{{query=\"{query}\"}}")).unwrap_or(0.0)
    }

    /// Waits until `query` has closed two more windows than now: the window
    /// that was open when this was called is closed and published.
    pub(crate) fn wait_closed_window(&self, query: &str) {
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

/// The losses a daemon's `page` reports for `query` (dropped, and missed: runs
/// the kernel skipped, counted before any scope or WHERE, so an upper bound).
pub(crate) fn query_stats(page: &str, query: &str) -> ebq::QueryStats {
    let n = |name: &str| {
        sample(page, &format!("{name}{{query=\"{query}\"}}")).unwrap_or_else(|| panic!("{name}: {page}")) as u64
    };
    ebq::QueryStats {
        dropped: n("ebq_query_events_dropped_total"),
        missed: n("ebq_query_events_missed_total"),
        ..Default::default()
    }
}

/// `ebq serve` daemons, one per config (each in its own directory below
/// `dir`), each with a watch on the programs it holds: several instances, as
/// several nodes of a fleet are.
pub(crate) struct Daemons(pub(crate) Vec<(Daemon, common::ProgWatch)>);

impl Daemons {
    /// Starts one daemon per config of `configs`, in `dir/<i>`.
    pub(crate) fn start(dir: &Path, configs: &[String]) -> Daemons {
        Daemons(
            configs
                .iter()
                .enumerate()
                .map(|(i, config)| {
                    let own = dir.join(i.to_string());
                    std::fs::create_dir_all(&own).unwrap();
                    let d = Daemon::start(&own, config);
                    let progs = common::ProgWatch::of(d.child.id()); // the programs this daemon holds
                    (d, progs)
                })
                .collect(),
        )
    }

    /// Their `/metrics` ports, in start order.
    pub(crate) fn ports(&self) -> Vec<u16> {
        self.0.iter().map(|(d, _)| d.port).collect()
    }

    /// Waits until each has closed two more windows of `query` than now.
    pub(crate) fn wait_closed_window(&self, query: &str) {
        for (d, _) in &self.0 {
            d.wait_closed_window(query);
        }
    }

    /// SIGTERM to each: each exits 0 and leaves none of its programs loaded.
    pub(crate) fn stop(self) {
        for (d, progs) in self.0 {
            let log = d.log();
            assert!(d.stop().success(), "{log}");
            progs.assert_gone();
        }
    }
}

/// A `prometheus` server scraping `targets` every 500 ms, with storage in `dir`.
pub(crate) struct Prometheus {
    child: Child,
    port: u16,
}

impl Prometheus {
    fn start(dir: &Path, target_port: u16) -> Prometheus {
        Prometheus::start_with(dir, &[target_port], &[])
    }

    /// Scraping every port of `targets`, with extra command-line `flags`.
    pub(crate) fn start_with(dir: &Path, targets: &[u16], flags: &[&str]) -> Prometheus {
        let port = free_port();
        let config = dir.join("prometheus.yml");
        let targets: Vec<String> = targets.iter().map(|t| format!("'127.0.0.1:{t}'")).collect();
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 500ms\n  scrape_timeout: 500ms\nscrape_configs:\n  - job_name: ebq\n    static_configs:\n      - targets: [{}]\n",
                targets.join(", ")
            ),
        )
        .unwrap();
        let child = Command::new("prometheus")
            .args(flags)
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
    pub(crate) fn query(&self, promql: &str) -> Vec<(serde_json::Value, f64, f64)> {
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

    /// The value of `promql` when it is one series, else `None`.
    pub(crate) fn one(&self, promql: &str) -> Option<f64> {
        let r = self.query(promql);
        (r.len() == 1).then(|| r[0].1)
    }

    /// The value of `promql`, which must be one series (the message shows what it was).
    pub(crate) fn single(&self, promql: &str) -> f64 {
        let r = self.query(promql);
        assert_eq!(r.len(), 1, "{promql}: {r:?}");
        r[0].1
    }

    /// Waits until `selector` has `series` series, each scraped after `after`.
    pub(crate) fn wait_scraped_after(&self, selector: &str, series: usize, after: SystemTime) {
        let after = after.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs_f64();
        // timestamp() of a series is its last scrape time.
        wait_for(30, &format!("{series} series of {selector} scraped after the closed window"), || {
            let ts = self.query(&format!("timestamp({selector})"));
            (ts.len() == series && ts.iter().all(|t| t.1 > after)).then_some(())
        });
    }

    /// The one value of `promql`, from a scrape taken after `after`.
    fn value_after(&self, promql: &str, after: SystemTime) -> f64 {
        self.wait_scraped_after(promql, 1, after);
        self.single(promql)
    }

    /// `histogram_quantile(q, native)` for each `(q, ppm)` of `quantiles`, printed, and within the
    /// sketch's stated relative error of the exact nearest-rank quantile of `values` (`(value, times)`).
    pub(crate) fn assert_quantiles_near(&self, native: &str, values: &[(usize, usize)], quantiles: &[(&str, u32)]) {
        for &(q, ppm) in quantiles {
            let promql = format!("histogram_quantile({q}, {native})");
            let got = self.one(&promql).unwrap_or_else(|| panic!("{promql}: {:?}", self.query(&promql)));
            let exact = exact_quantile(values, ppm);
            eprintln!("{promql}: Prometheus {got}, exact {exact}");
            assert!(
                (got - exact).abs() / exact <= ebq::hist::SKETCH_RELATIVE_ERROR,
                "{promql}: Prometheus says {got}, exact {exact}"
            );
        }
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
    let progs_daemon = common::ProgWatch::of(daemon.child.id()); // the programs this daemon holds
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
    assert_eq!(sample(&page, &format!("ebq_wl_size_bytes_bucket{{le=\"4.0\",{l}}}")), Some(3000.0));
    assert_eq!(sample(&page, &format!("ebq_wl_size_bytes_bucket{{le=\"+Inf\",{l}}}")), Some(3000.0));
    assert_eq!(sample(&page, &format!("ebq_wl_size_bytes_count{{{l}}}")), Some(3000.0));
    assert_eq!(sample(&page, "ebq_query_events_matched_total{query=\"wl\"}"), Some(3000.0));
    assert_eq!(sample(&page, "ebq_query_events_dropped_total{query=\"wl\"}"), Some(0.0));
    // Skipped runs (another tool's program holding the CPU's guard) are their own counter.
    assert!(sample(&page, "ebq_query_events_missed_total{query=\"wl\"}").is_some(), "{page}");
    assert_eq!(sample(&page, "ebq_query_join_starts_missed_total{query=\"wl\"}"), Some(0.0), "{page}");
    assert_eq!(sample(&page, "ebq_query_pairs_evicted_total{query=\"wl\"}"), Some(0.0), "not a JOIN: none");
    assert_eq!(sample(&page, "ebq_query_middle_unmatched_total{query=\"wl\"}"), Some(0.0), "not a chained JOIN");
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
    assert_eq!(prom.value_after(&format!("ebq_wl_size_bytes_bucket{{job=\"ebq\",{l},le=\"4.0\"}}"), closed), 3000.0);
    assert_eq!(prom.value_after(&format!("ebq_wl_size_bytes_count{sel}"), closed), 3000.0);
    assert_eq!(prom.value_after("ebq_query_series_overflow_total{query=\"fds\"}", closed), 2.0);
    assert_eq!(prom.value_after("ebq_query_up{query=\"wl\"}", closed), 1.0);
    // Every bucket is exported, so the reads of 3 bytes are in (2, 4] (serve
    // buckets HISTs as Prometheus does, closed on the power of two) and the
    // median interpolates to 3 (with the empty buckets below left out,
    // Prometheus would take (0, 4] and say 2).
    let median = prom.query("histogram_quantile(0.5, sum by (le) (ebq_wl_size_bytes_bucket{job=\"ebq\"}))");
    assert_eq!(median.len(), 1, "{median:?}");
    assert_eq!(median[0].1, 3.0);

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
    progs_daemon.assert_gone();
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
    // `max_groups` and the other `ebq run` limits are keys now (issue 19); an unknown key is still refused.
    assert_eq!(check(&format!("{ok}max_group = 3\n")), "error: bad.toml:4:1: unknown field `max_group`, expected one of `name`, `sql`, `file`, `shipped`, `set`, `interval`, `max_series`, `series_ttl`, `max_groups`, `max_pending`, `max_pair_age`, `max_tracked`, `max_sketch_buckets`, `ringbuf_size`, `wakeup_bytes`, `pin`, `pin_header`, `keep_pins`, `cgroup`, `sinks`\n");
    assert_eq!(
        check(&format!("{ok}ringbuf_size = 5000\n")),
        "error: bad.toml:4:16: query `ok`: ringbuf_size must be a power of two of at least 4096, not 5000\n"
    );
    // A `cgroup` scope must name a group that exists when the query is checked.
    let e = check(&format!("{ok}cgroup = \"/ebq-no-such-group\"\n"));
    assert!(e.starts_with("error: bad.toml:4:10: query `ok`: cgroup /"), "{e}");
    assert!(e.ends_with("/ebq-no-such-group: No such file or directory (os error 2)\n"), "{e}");
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
    let progs_daemon = common::ProgWatch::of(daemon.child.id()); // the programs this daemon holds
    let started = common::prog_ids_of(daemon.child.id());
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
    let now = common::prog_ids_of(daemon.child.id());
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
    progs_daemon.assert_gone();
}

#[test]
fn without_reload_every_capability_is_dropped() {
    let dir = tmp_dir("noreload");
    let q = |name: &str| {
        format!("[[query]]\nname = \"{name}\"\nsql = \"SELECT COUNT(*) AS calls FROM syscalls.sys_enter_read WINDOW(time, 500)\"\n")
    };
    let daemon = Daemon::start(&dir, &format!("listen = \"127.0.0.1:{{port}}\"\nreload = false\n{}", q("one")));
    let progs_daemon = common::ProgWatch::of(daemon.child.id()); // the programs this daemon holds
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
    progs_daemon.assert_gone();
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

/// Reads `n` times 4321 bytes from /dev/zero on a thread whose comm is `comm` (raw bytes).
fn reads_as(comm: &'static [u8], n: usize) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let name = std::ffi::CString::new(comm).unwrap();
        // SAFETY: PR_SET_NAME with a NUL-terminated string of at most 16 bytes.
        assert_eq!(unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr() as libc::c_ulong, 0, 0, 0) }, 0);
        let mut f = std::fs::File::open("/dev/zero").unwrap();
        let mut buf = vec![0u8; 4321];
        for _ in 0..n {
            std::io::Read::read_exact(&mut f, &mut buf).unwrap();
        }
    })
}

/// Reads from /dev/zero on a thread whose comm is `comm`: `n` reads of `size` bytes per `(size, n)`.
fn reads_of(comm: String, sizes: Vec<(usize, usize)>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let name = std::ffi::CString::new(comm).unwrap();
        // SAFETY: PR_SET_NAME with a NUL-terminated string of at most 16 bytes.
        assert_eq!(unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr() as libc::c_ulong, 0, 0, 0) }, 0);
        let mut f = std::fs::File::open("/dev/zero").unwrap();
        for (size, n) in sizes {
            let mut buf = vec![0u8; size];
            for _ in 0..n {
                std::io::Read::read_exact(&mut f, &mut buf).unwrap();
            }
        }
    })
}

/// The exact nearest-rank quantile of `(value, times)` groups.
pub(crate) fn exact_quantile(values: &[(usize, usize)], ppm: u32) -> f64 {
    let mut all: Vec<i128> = values.iter().flat_map(|&(v, n)| std::iter::repeat_n(v as i128, n)).collect();
    ebq::hist::exact_quantile(&mut all, ppm).unwrap() as f64
}

#[test]
fn prometheus_merges_two_instances_native_histograms_into_the_exact_quantiles() {
    let dir = tmp_dir("native");
    let id = std::process::id() % 10_000;
    let (comm_a, comm_b) = (format!("nha{id}"), format!("nhb{id}"));
    let config = |comm: &str| {
        format!(
            "listen = \"127.0.0.1:{{port}}\"\n\n[[query]]\nname = \"nh\"\n\
             sql = \"SELECT P50(count) AS p50_size_bytes, P99(count) AS p99_size_bytes, HIST(count) AS read_bytes \
             FROM syscalls.sys_enter_read \
             WHERE comm = '{comm}' WINDOW(time, 500)\"\n"
        )
    };
    let daemons = Daemons::start(&dir, &[config(&comm_a), config(&comm_b)]);
    let (a, b) = (&daemons.0[0].0, &daemons.0[1].0);
    let prom = Prometheus::start_with(&dir, &daemons.ports(), &["--enable-feature=native-histograms"]);
    let h = "ebq_nh_size_histogram_bytes{job=\"ebq\"}";
    let one = |promql: &str| prom.one(promql);

    // First reads: each instance's buckets appear (rate() below starts from
    // these samples; later reads only add to these buckets, so each series'
    // bucket layout stays the same over the rate range).
    // 4096 = 2^12 sits on a native bucket boundary: in (2048, 4096], not above it.
    let (first_a, first_b) = (vec![(3000, 1), (4096, 3), (90_000, 1)], vec![(5000, 1), (90_000, 1)]);
    reads_of(comm_a.clone(), first_a.clone()).join().unwrap();
    reads_of(comm_b.clone(), first_b.clone()).join().unwrap();
    daemons.wait_closed_window("nh");
    wait_for(30, "both instances' first reads in Prometheus", || {
        (one(&format!("histogram_count(sum({h}))")) == Some(7.0)).then_some(())
    });
    // The protobuf page is what Prometheus asked for.
    let accept = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3";
    let (head, _) = scrape(a.port, "GET", Some(accept));
    assert!(
        head.contains(
            "Content-Type: application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"
        ),
        "{head}"
    );

    let (then_a, then_b) = (vec![(3000, 96), (90_000, 2)], vec![(5000, 96), (90_000, 2)]);
    let ta = reads_of(comm_a.clone(), then_a.clone());
    let tb = reads_of(comm_b.clone(), then_b.clone());
    ta.join().unwrap();
    tb.join().unwrap();
    daemons.wait_closed_window("nh");
    let alone_a = [first_a, then_a.clone()].concat();
    let alone_b = [first_b, then_b.clone()].concat();
    let all = [alone_a.clone(), alone_b.clone()].concat();
    let total: usize = all.iter().map(|v| v.1).sum();
    wait_for(30, "every read in Prometheus", || {
        (one(&format!("histogram_count(sum({h}))")) == Some(total as f64)).then_some(())
    });
    // The merged native histogram: count and sum exact, quantiles within the
    // sketch's bound of the exact quantiles of the union of both instances' reads.
    let sum: usize = all.iter().map(|(v, n)| v * n).sum();
    assert_eq!(one(&format!("histogram_sum(sum({h}))")), Some(sum as f64));
    // The HIST, a native histogram at schema 0 (serve buckets it as Prometheus does):
    // count and sum exact, and its buckets exact at every power of two, so the
    // share of reads up to 4096 = 2^12 (3000 and 4096 itself) is exact too.
    let hist = "ebq_nh_read_histogram_bytes{job=\"ebq\"}";
    assert_eq!(one(&format!("histogram_count(sum({hist}))")), Some(total as f64));
    assert_eq!(one(&format!("histogram_sum(sum({hist}))")), Some(sum as f64));
    let at_most: usize = all.iter().filter(|(v, _)| *v <= 4096).map(|(_, n)| n).sum();
    assert_eq!(at_most, 100);
    for (upper, below) in [(4096, at_most), (2048, 0), (8192, at_most + 97), (131_072, total)] {
        let got = one(&format!("histogram_fraction(0, {upper}, sum({hist}))"));
        assert_eq!(got, Some(below as f64 / total as f64), "reads <= {upper}");
    }
    let quartiles = [("0.25", 250_000), ("0.5", 500_000), ("0.75", 750_000), ("0.99", 990_000)];
    prom.assert_quantiles_near(&format!("sum({h})"), &all, &quartiles);
    assert_eq!(
        [250_000, 500_000, 990_000].map(|ppm| exact_quantile(&all, ppm)),
        [3000.0, 5000.0, 90_000.0],
        "the union's quartile, median and p99"
    );
    // Each instance alone has its own median: the sum really merged both.
    for (port, alone) in [(a.port, &alone_a), (b.port, &alone_b)] {
        let native = format!("sum(ebq_nh_size_histogram_bytes{{instance=\"127.0.0.1:{port}\"}})");
        prom.assert_quantiles_near(&native, alone, &[("0.5", 500_000)]);
    }
    // rate() over the range: the increase since the first samples, i.e. the second reads,
    // each instance's extrapolated by its own factor; 97 % of both are below 90,000 either
    // way, so the p99 stays in 90,000's bucket.
    let then = [then_a, then_b].concat();
    assert_eq!(exact_quantile(&then, 990_000), 90_000.0);
    prom.assert_quantiles_near(&format!("sum(rate({h}[5m]))"), &then, &[("0.99", 990_000)]);

    drop(prom);
    daemons.stop();
}

/// Parses `page` with prometheus_client's OpenMetrics parser (strict) or its
/// 0.0.4 parser: `[[family, type, [[sample, labels, value], …]], …]`, or the parser's error.
pub(crate) fn python_parse(page: &str, openmetrics: bool) -> Result<serde_json::Value, String> {
    const PARSE: &str = r#"
import json, math, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om
from prometheus_client.parser import text_string_to_metric_families as classic
page = sys.stdin.read()
parse = om if sys.argv[1] == "om" else classic
out = [[f.name, f.type, [[s.name, s.labels, s.value if math.isfinite(s.value) else str(s.value)] for s in f.samples]] for f in parse(page)]
print(json.dumps(out))
"#;
    let py = python_with("prometheus_client", "prometheus-client");
    let mut child = Command::new(py)
        .args(["-c", PARSE, if openmetrics { "om" } else { "classic" }])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), page.as_bytes()).unwrap();
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(serde_json::from_slice(&out.stdout).unwrap())
}

/// `promtool check metrics` on `page`: (exit code, its output).
pub(crate) fn promtool(page: &str) -> (i32, String) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian package prometheus, scripts/setup.sh)");
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), page.as_bytes()).unwrap();
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

/// Samples of `family` named `sample` with label `comm` = `comm` and `extra` labels.
fn values(fams: &serde_json::Value, sample: &str, comm: &str, extra: &[(&str, &str)]) -> Vec<f64> {
    fams.as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f[2].as_array().unwrap().iter())
        .filter(|s| s[0] == sample && s[1]["comm"] == comm && extra.iter().all(|(k, v)| s[1][*k] == *v))
        .map(|s| s[2].as_f64().unwrap())
        .collect()
}

#[test]
fn pages_pass_the_strict_parsers_with_hostile_names_and_exact_counts() {
    let dir = tmp_dir("strict");
    let config = r#"listen = "127.0.0.1:{port}"

[[query]]
name = "hostile"
sql = "SELECT comm, COUNT(*) AS calls, SUM(count) AS read_bytes, HIST(count) AS size_bytes, LHIST(count, 0, 10000, 1000) AS len_bytes, P50(count) AS p50_req_bytes, P99(count) AS p99_req_bytes, MAX(count) AS max_bytes FROM syscalls.sys_enter_read WHERE count = 4321 GROUP BY comm"
# No WINDOW: running totals every 500 ms, so the summary and the gauge keep their values.
interval = "500ms"

[[query]]
name = "all"
sql = "SELECT COUNT(*) AS calls FROM syscalls.sys_enter_read WHERE count = 4321 WINDOW(time, 500)"
"#;
    let daemon = Daemon::start(&dir, config);
    let progs_daemon = common::ProgWatch::of(daemon.child.id()); // the programs this daemon holds
                                                                 // (raw comm, reads, the label value ebq shows: invalid bytes as \xHH, a backslash doubled).
    let comms: [(&'static [u8], usize, &str); 5] = [
        (b"zx\xffy", 3, "zx\\xffy"),
        (b"zx\xfey", 5, "zx\\xfey"),
        (b"q\"uote", 7, "q\"uote"),
        (b"back\\slash", 11, "back\\\\slash"),
        (b"new\nline", 13, "new\nline"),
    ];
    for (comm, n, _) in comms {
        reads_as(comm, n).join().unwrap();
    }
    daemon.wait_closed_window("hostile");
    daemon.wait_closed_window("all");

    let om = daemon.metrics();
    let fams = python_parse(&om, true).unwrap_or_else(|e| panic!("the OpenMetrics parser refused the page: {e}\n{om}"));
    for (_, n, label) in comms {
        let n = n as f64;
        assert_eq!(values(&fams, "ebq_hostile_calls_total", label, &[]), [n], "{label:?}\n{om}");
        assert_eq!(values(&fams, "ebq_hostile_read_bytes_total", label, &[]), [4321.0 * n]);
        // Every bucket of the log2 layout (le = 0, 1, 2, 4, …, 2^63, +Inf), cumulative;
        // the reads are all in (4096, 8192].
        let buckets = values(&fams, "ebq_hostile_size_bytes_bucket", label, &[]);
        assert_eq!(buckets.len(), 66, "{label:?}: {buckets:?}");
        assert_eq!(values(&fams, "ebq_hostile_size_bytes_bucket", label, &[("le", "4096.0")]), [0.0]);
        assert_eq!(values(&fams, "ebq_hostile_size_bytes_bucket", label, &[("le", "8192.0")]), [n]);
        assert_eq!(values(&fams, "ebq_hostile_size_bytes_bucket", label, &[("le", "+Inf")]), [n]);
        assert_eq!(values(&fams, "ebq_hostile_size_bytes_count", label, &[]), [n]);
        assert_eq!(values(&fams, "ebq_hostile_size_bytes_sum", label, &[]), [4321.0 * n]);
        // LHIST: 10 linear buckets and the overflow (the empty underflow below 0 is left out).
        assert_eq!(values(&fams, "ebq_hostile_len_bytes_bucket", label, &[]).len(), 11);
        assert_eq!(values(&fams, "ebq_hostile_len_bytes_bucket", label, &[("le", "3999.0")]), [0.0]);
        assert_eq!(values(&fams, "ebq_hostile_len_bytes_bucket", label, &[("le", "4999.0")]), [n]);
        // The summary: quantiles within the sketch bound, the true count and sum.
        for q in ["0.5", "0.99"] {
            let v = values(&fams, "ebq_hostile_req_bytes", label, &[("quantile", q)]);
            let bound = 4321.0 * ebq::hist::SKETCH_RELATIVE_ERROR;
            assert!(v.len() == 1 && (v[0] - 4321.0).abs() <= bound, "{label:?} q={q}: {v:?}\n{om}");
        }
        assert_eq!(values(&fams, "ebq_hostile_req_bytes_count", label, &[]), [n]);
        assert_eq!(values(&fams, "ebq_hostile_req_bytes_sum", label, &[]), [4321.0 * n]);
    }
    let types: Vec<(&str, &str)> = fams
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f[0].as_str().unwrap(), f[1].as_str().unwrap()))
        .filter(|(name, _)| name.starts_with("ebq_hostile_") || name.starts_with("ebq_all_"))
        .collect();
    assert_eq!(
        types,
        [
            ("ebq_all_calls", "counter"),
            ("ebq_hostile_calls", "counter"),
            ("ebq_hostile_read_bytes", "counter"),
            ("ebq_hostile_size_bytes", "histogram"),
            ("ebq_hostile_len_bytes", "histogram"),
            ("ebq_hostile_req_bytes", "summary"),
            ("ebq_hostile_max_bytes", "gauge"),
        ]
    );
    assert_eq!(sample(&om, "ebq_all_calls_total"), Some(39.0), "{om}");

    // The 0.0.4 page (no Accept header): promtool's parser and lint, and prometheus_client's parser.
    let (head, plain) = scrape(daemon.port, "GET", None);
    assert!(head.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8"), "{head}");
    let (code, lint) = promtool(&plain);
    assert_eq!((code, lint.as_str()), (0, ""), "promtool check metrics:\n{plain}");
    let classic = python_parse(&plain, false).unwrap_or_else(|e| panic!("{e}\n{plain}"));
    for (_, n, label) in comms {
        assert_eq!(values(&classic, "ebq_hostile_calls_total", label, &[]), [n as f64], "{label:?}\n{plain}");
    }
    let (head, _) = scrape(daemon.port, "GET", Some("text/plain;version=0.0.4"));
    assert!(head.contains("version=0.0.4"), "{head}");
    let (head, body) = scrape(daemon.port, "HEAD", None);
    assert!(head.starts_with("HTTP/1.1 200 OK") && body.is_empty(), "{head}\n{body}");

    // 50 idle connections and 10 half-sent requests do not hold up a scrape.
    let idle: Vec<std::net::TcpStream> =
        (0..50).map(|_| std::net::TcpStream::connect(("127.0.0.1", daemon.port)).unwrap()).collect();
    let half: Vec<std::net::TcpStream> = (0..10)
        .map(|_| {
            let mut s = std::net::TcpStream::connect(("127.0.0.1", daemon.port)).unwrap();
            std::io::Write::write_all(&mut s, b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAcc").unwrap();
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let started = Instant::now();
    let (head, _) = scrape(daemon.port, "GET", Some(OPENMETRICS));
    let took = started.elapsed();
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(took < Duration::from_millis(100), "the scrape took {took:?} with 60 slow clients connected");
    drop((idle, half));

    assert!(daemon.stop().success());
    progs_daemon.assert_gone();
}

#[test]
fn colliding_metric_names_fail_the_check() {
    let dir = tmp_dir("collide");
    let check = |config: &str| {
        let path = dir.join("c.toml");
        std::fs::write(&path, config).unwrap();
        let out = Command::new(ebq_bin()).args(["serve", "--check", "--config"]).arg(&path).output().unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let q = |name: &str, column: &str| {
        format!(
            "[[query]]\nname = \"{name}\"\nsql = \"SELECT COUNT(*) AS {column} FROM syscalls.sys_enter_read WINDOW(time, 1000)\"\n"
        )
    };
    let path = dir.join("c.toml").display().to_string();
    let (ok, err) = check(&format!("{}{}", q("x-y", "calls"), q("x_y", "calls")));
    assert!(!ok);
    assert_eq!(
        err.trim_end(),
        format!(
            "error: {path}:5:8: query `x_y` column `calls` (metric `ebq_x_y_calls_total`) collides with \
             {path}:2:8: query `x-y` column `calls` (metric `ebq_x_y_calls_total`): both would write `ebq_x_y_calls`; \
             rename the column or the query"
        )
    );
    let (ok, err) = check(&q("query", "up"));
    assert!(!ok);
    assert!(
        err.contains(
            "query `query` column `up` (metric `ebq_query_up_total`) collides with ebq's own metric `ebq_query_up`"
        ),
        "{err}"
    );
    let (ok, err) = check(&format!("{}{}", q("x-y", "calls"), q("x_z", "calls")));
    assert!(ok, "{err}");
}

/// Issue 38 item 1: `sinks = […]` per query. Every window of the query goes
/// to its files as well as to `/metrics`: the JSON lines and the Parquet file
/// (finished at SIGTERM) each sum to the workload's exact 700 reads, as the
/// page does, and the page counts each sink's rows written and dropped.
#[test]
fn a_query_s_sinks_get_every_window_and_the_page_counts_their_rows() {
    let dir = tmp_dir("sinks");
    let comm = format!("snk{}", std::process::id() % 100_000);
    let (jsonl, parquet) = (dir.join("w.jsonl"), dir.join("w.parquet"));
    let daemon = Daemon::start(
        &dir,
        &format!(
            "listen = \"127.0.0.1:{{port}}\"\n[[query]]\nname = \"wl\"\nsql = \"SELECT comm, COUNT(*) AS calls \
             FROM syscalls.sys_enter_read WHERE comm = '{comm}' GROUP BY comm WINDOW(time, 500)\"\n\
             sinks = [\"w.jsonl\", \"{}\"]\n",
            parquet.display()
        ),
    );
    let w = Workload::start(&["readzero", "--count", "700", "--comm", &comm]);
    w.go();
    w.report();
    daemon.wait_closed_window("wl");
    let page = daemon.metrics();
    assert_eq!(sample(&page, &format!("ebq_wl_calls_total{{comm=\"{comm}\"}}")), Some(700.0), "{page}");
    for file in [&jsonl, &parquet] {
        let labels = format!("{{query=\"wl\",sink=\"{}\"}}", file.display());
        let written = sample(&page, &format!("ebq_sink_rows_written_total{labels}"));
        assert!(written.is_some_and(|n| n >= 1.0), "{labels}: {page}");
        assert_eq!(sample(&page, &format!("ebq_sink_rows_dropped_total{labels}")), Some(0.0), "{page}");
    }
    assert!(daemon.stop().success());

    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(lines.iter().all(|r| r["comm"] == comm.as_str()), "{lines:?}");
    assert_eq!(lines.iter().map(|r| r["calls"].as_u64().unwrap()).sum::<u64>(), 700, "{lines:?}");

    let file = std::fs::File::open(&parquet).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file).unwrap().build().unwrap();
    let mut calls = 0;
    for batch in reader {
        let batch = batch.unwrap();
        let col = batch.column_by_name("calls").expect("a calls column");
        let col = col.as_any().downcast_ref::<arrow_array::UInt64Array>().expect("calls is UInt64");
        calls += col.values().iter().sum::<u64>();
    }
    assert_eq!(calls, 700);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 38 item 5: `reload_on_change` (what a Kubernetes ConfigMap update
/// needs: the file changes, nobody signals). The file is rewritten with one
/// query added and no signal sent: the daemon reloads by itself, the added
/// query counts from its start and the unchanged one keeps its total.
#[test]
fn a_changed_file_reloads_without_a_signal_and_keeps_the_other_queries_series() {
    let dir = tmp_dir("watch");
    let comm = format!("wch{}", std::process::id() % 100_000);
    let query = |name: &str| {
        format!(
            "[[query]]\nname = \"{name}\"\nsql = \"SELECT COUNT(*) AS calls FROM syscalls.sys_enter_read \
             WHERE comm = '{comm}' WINDOW(time, 500)\"\n"
        )
    };
    let head = "listen = \"127.0.0.1:{port}\"\nreload_on_change = \"200ms\"\n";
    let daemon = Daemon::start(&dir, &format!("{head}{}", query("keep")));
    let w = Workload::start(&["readzero", "--count", "700", "--comm", &comm]);
    w.go();
    w.report();
    daemon.wait_closed_window("keep");
    assert_eq!(sample(&daemon.metrics(), "ebq_keep_calls_total"), Some(700.0));

    let head = head.replace("{port}", &daemon.port.to_string());
    // Replaced whole, as the kubelet swaps a ConfigMap's files (a rename, never a half-written file).
    let next = dir.join("ebq.toml.next");
    std::fs::write(&next, format!("{head}{}{}", query("keep"), query("added"))).unwrap();
    std::fs::rename(&next, &daemon.config).unwrap();
    wait_for(60, "the reload", || daemon.log().contains("reloaded").then_some(()));
    let log = daemon.log();
    assert!(log.contains("changed") && log.contains("1 kept, 0 detached, 1 started"), "{log}");

    let w = Workload::start(&["readzero", "--count", "300", "--comm", &comm]);
    w.go();
    w.report();
    daemon.wait_closed_window("keep");
    daemon.wait_closed_window("added");
    let page = daemon.metrics();
    assert_eq!(sample(&page, "ebq_keep_calls_total"), Some(1000.0), "{page}");
    assert_eq!(sample(&page, "ebq_added_calls_total"), Some(300.0), "{page}");
    assert_eq!(sample(&page, "ebq_config_reloads_total{result=\"ok\"}"), Some(1.0), "{page}");
    assert!(daemon.stop().success());
}

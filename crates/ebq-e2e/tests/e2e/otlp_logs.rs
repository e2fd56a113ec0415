//! Issue 38 item 3: `--sink otlp+http://HOST:PORT`, rows as OTLP log records.
//!
//! A receiver on a loopback port (a std TcpListener thread) decodes every
//! POST to `/v1/logs` with the opentelemetry-proto definitions; the records
//! must be the workload's pread64 calls exactly: each once, fd, count and tid
//! typed integers equal to the workload's own tally, event times in order and
//! within the run, the resource naming the host. A receiver that answers 503
//! to the first requests loses nothing (each retry counted); a receiver that
//! refuses every row, or is down for the whole run, loses rows counted as
//! failed, dropped or queued, never silently: written + dropped = rows and
//! delivered + failed + queued = written.
//!
//! `a_real_collector_writes_every_row` (ignored: `scripts/test-fleet.sh`
//! runs it) sends the rows to a real OpenTelemetry Collector, built with the
//! collector's builder, and checks what its file exporter wrote.

use crate::common::{
    assert_exact_or_accounted, cli_stats, ebq_bin, free_port, per_fd, sink_line, wait_for, workload_bin, SinkLine,
};
use crate::serve::query_stats;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, KeyValue};
use prost::Message;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// One pread64 call as a record: (time, tid, fd, count).
type Row = (u64, u64, u64, u64);

/// What a receiver got: requests answered 2xx, decoded; statuses it answered.
#[derive(Default)]
pub(crate) struct Got {
    pub(crate) requests: Vec<ExportLogsServiceRequest>,
    answered: Vec<u16>,
    paths: Vec<String>,
    content_types: Vec<String>,
}

/// A receiver on a loopback port that answers `status(n)` to the n-th
/// request (0-based), each on its own connection (`Connection: close`).
pub(crate) fn receiver(status: impl Fn(usize) -> u16 + Send + 'static) -> (u16, Arc<Mutex<Got>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let got = Arc::new(Mutex::new(Got::default()));
    let theirs = got.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut s) = conn else { continue };
            let Some((head, body)) = read_request(&mut s) else { continue };
            let mut g = theirs.lock().unwrap();
            let code = status(g.answered.len());
            g.answered.push(code);
            let header = |name: &str| {
                head.lines()
                    .find_map(|l| l.to_ascii_lowercase().strip_prefix(&format!("{name}: ")).map(str::to_string))
                    .unwrap_or_default()
            };
            g.content_types.push(header("content-type"));
            g.paths.push(head.split(' ').nth(1).unwrap_or_default().to_string());
            if code == 200 {
                g.requests
                    .push(ExportLogsServiceRequest::decode(body.as_slice()).expect("an ExportLogsServiceRequest"));
            }
            drop(g);
            let reply = format!("HTTP/1.1 {code} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            let _ = s.write_all(reply.as_bytes());
        }
    });
    (port, got)
}

/// One request's head (as text) and body, by its Content-Length.
fn read_request(s: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut got = vec![];
    let mut buf = [0u8; 16384];
    loop {
        let n = s.read(&mut buf).ok()?;
        got.extend_from_slice(&buf[..n]);
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&got[..end]).into_owned();
            let len: usize = head
                .lines()
                .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_string()))?
                .parse()
                .ok()?;
            if got.len() >= end + 4 + len {
                return Some((head, got[end + 4..end + 4 + len].to_vec()));
            }
        }
        if n == 0 {
            return None;
        }
    }
}

pub(crate) fn int(kvs: &[KeyValue], key: &str) -> u64 {
    let kv = kvs.iter().find(|a| a.key == key).unwrap_or_else(|| panic!("no {key} in {kvs:?}"));
    match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::IntValue(i)) => *i as u64,
        other => panic!("{key} is not an int: {other:?}"),
    }
}

pub(crate) fn string(kvs: &[KeyValue], key: &str) -> String {
    match kvs.iter().find(|a| a.key == key).and_then(|a| a.value.as_ref()).and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        other => panic!("{key} is not a string: {other:?}"),
    }
}

/// Every record of the requests as a row, in the order received, and
/// checks what each request says of itself (resource, scope, observed time).
fn rows_of(requests: &[ExportLogsServiceRequest]) -> Vec<Row> {
    let host = ebq::host::host_name();
    let mut rows = vec![];
    for req in requests {
        assert_eq!(req.resource_logs.len(), 1);
        let rl = &req.resource_logs[0];
        let resource = &rl.resource.as_ref().unwrap().attributes;
        assert_eq!((string(resource, "host.name"), string(resource, "service.name")), (host.clone(), "ebq".into()));
        assert!(!string(resource, "service.instance.id").is_empty());
        assert_eq!(rl.scope_logs[0].scope.as_ref().unwrap().name, "ebq");
        for r in &rl.scope_logs[0].log_records {
            let keys: Vec<&str> = r.attributes.iter().map(|a| a.key.as_str()).collect();
            assert_eq!(keys, ["tid", "fd", "count"], "SELECT order; `time` is the record's time");
            assert!(r.observed_time_unix_nano >= r.time_unix_nano, "observed after it happened: {r:?}");
            rows.push((
                r.time_unix_nano,
                int(&r.attributes, "tid"),
                int(&r.attributes, "fd"),
                int(&r.attributes, "count"),
            ));
        }
    }
    rows
}

/// The workload's calls, as the records must hold them: the j-th call on
/// each fd reads 64·(j % 5 + 1) bytes; every call on the workload's one thread.
fn check_rows(rows: &[Row], report: &serde_json::Value, run: (u64, u64)) {
    let pid = report["pid"].as_u64().unwrap();
    let mut by_fd: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    let mut counts: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for &(_, tid, fd, count) in rows {
        assert_eq!(tid, pid, "the workload's one thread");
        let e = by_fd.entry(fd).or_default();
        e.0 += 1;
        e.1 += count;
        counts.entry(fd).or_default().push(count);
    }
    assert_eq!(by_fd, per_fd(report), "calls and bytes per fd");
    for (fd, c) in &counts {
        let want: Vec<u64> = (0..c.len() as u64).map(|j| 64 * (j % 5 + 1)).collect();
        assert_eq!(c, &want, "fd {fd}: each call once, in order");
    }
    let mut times: Vec<u64> = rows.iter().map(|r| r.0).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "event times in order: {times:?}");
    times.dedup();
    assert_eq!(times.len(), rows.len(), "one record per call: no time twice");
    assert!(run.0 <= times[0] && *times.last().unwrap() <= run.1, "times {times:?} within the run {run:?}");
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64
}

fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ebq-otlp-logs-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const ROWS: &str = "SELECT time, tid, fd, count FROM syscalls.sys_enter_pread64";

/// Runs ebq on `calls` pread64 calls (fds 100, 101, …) with `sinks`; its
/// stderr, the workload's report, and the run's span in Unix ns.
fn run_rows(tag: &str, calls: &str, sinks: &[&str]) -> (String, serde_json::Value, (u64, u64)) {
    let dir = tmp(tag);
    let comm = format!("ol{tag}{}", std::process::id() % 10_000);
    let report = dir.join("report.json");
    let cmd = format!(
        "{} pread --fds {} --calls {calls} --fd-base 100 --comm {comm} --report {}",
        workload_bin().display(),
        calls.split(',').count(),
        report.display()
    );
    let sql = format!("{ROWS} WHERE comm = '{comm}'");
    let mut args = vec!["-c".to_string(), cmd];
    for s in sinks {
        args.extend(["--sink".to_string(), s.to_string()]);
    }
    args.push(sql);
    let start = unix_now();
    let t = Instant::now();
    let out = Command::new(ebq_bin()).args(&args).stdout(Stdio::null()).output().unwrap();
    let end = unix_now();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    eprintln!("ebq ran {:.1} s:\n{stderr}", t.elapsed().as_secs_f64());
    assert!(out.status.success(), "{stderr}");
    let report = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (stderr, report, (start, end))
}

/// `; N requests retried` of a sink's stats line (0 when absent).
fn retries(stderr: &str, name: &str) -> u64 {
    let prefix = format!("ebq: sink {name}: ");
    let line = stderr.lines().find(|l| l.starts_with(&prefix) && l.contains(" rows written, ")).expect("its line");
    line.split("; ").find_map(|part| part.strip_suffix(" requests retried")).map_or(0, |n| n.parse().unwrap())
}

/// Every call arrives once as a record with typed attributes and its event
/// time; an aggregate's window arrives as one record per group with the
/// window's bounds.
#[test]
fn rows_and_windows_arrive_as_log_records_exactly() {
    let (port, got) = receiver(|_| 200);
    let sink = format!("otlp+http://127.0.0.1:{port}");
    let (stderr, report, run) = run_rows("exact", "30,20", &[&sink]);
    assert_eq!(per_fd(&report), BTreeMap::from([(100, (30, 5760)), (101, (20, 3840))]));
    assert_eq!(cli_stats(&stderr).delivered, 50, "{stderr}");
    assert_eq!(sink_line(&stderr, &sink), SinkLine { written: 50, dropped: 0, delivered: 50, failed: 0, queued: 0 });
    assert_eq!(retries(&stderr, &sink), 0);
    let g = got.lock().unwrap();
    assert!(g.paths.iter().all(|p| p == "/v1/logs"), "{:?}", g.paths);
    assert!(g.content_types.iter().all(|c| c == "application/x-protobuf"), "{:?}", g.content_types);
    let rows = rows_of(&g.requests);
    assert_eq!(rows.len(), 50);
    check_rows(&rows, &report, run);
    drop(g);

    // An aggregate: one record per fd, at the window's end, with its bounds.
    let (port, got) = receiver(|_| 200);
    let sink = format!("otlp+http://127.0.0.1:{port}");
    let dir = tmp("window");
    let comm = format!("olw{}", std::process::id() % 10_000);
    let cmd = format!(
        "{} pread --fds 2 --calls 7,3 --fd-base 100 --comm {comm} --report {}",
        workload_bin().display(),
        dir.join("r.json").display()
    );
    let sql = format!(
        "SELECT fd, COUNT(*) AS calls, SUM(count) AS bytes FROM syscalls.sys_enter_pread64 \
         WHERE comm = '{comm}' GROUP BY fd WINDOW(time, 60000, 60000)"
    );
    let out = Command::new(ebq_bin()).args(["-c", &cmd, "--sink", &sink, &sql]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(sink_line(&stderr, &sink), SinkLine { written: 2, dropped: 0, delivered: 2, failed: 0, queued: 0 });
    let truth = per_fd(&serde_json::from_str(&std::fs::read_to_string(dir.join("r.json")).unwrap()).unwrap());
    let g = got.lock().unwrap();
    let records: Vec<_> =
        g.requests.iter().flat_map(|r| r.resource_logs[0].scope_logs[0].log_records.clone()).collect();
    let mut per_fd = BTreeMap::new();
    for r in &records {
        let a = &r.attributes;
        let keys: Vec<&str> = a.iter().map(|a| a.key.as_str()).collect();
        assert_eq!(keys, ["window_start", "window_end", "fd", "calls", "bytes"]);
        assert_eq!(r.time_unix_nano, int(a, "window_end"), "a window's result is at its end");
        assert!(int(a, "window_start") < int(a, "window_end"));
        per_fd.insert(int(a, "fd"), (int(a, "calls"), int(a, "bytes")));
    }
    assert_eq!(per_fd, truth);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The receiver answers 503 to the first three requests: each is sent again
/// after a backoff, and every row arrives once (10-row requests).
#[test]
fn a_receiver_answering_503_at_first_loses_nothing() {
    let (port, got) = receiver(|n| if n < 3 { 503 } else { 200 });
    let sink = format!("otlp+http://127.0.0.1:{port}?batch=10");
    let (stderr, report, run) = run_rows("retry", "30,20", &[&sink]);
    assert_eq!(sink_line(&stderr, &sink), SinkLine { written: 50, dropped: 0, delivered: 50, failed: 0, queued: 0 });
    assert_eq!(retries(&stderr, &sink), 3, "{stderr}");
    assert!(stderr.contains("HTTP 503"), "the first failure is said: {stderr}");
    let g = got.lock().unwrap();
    assert_eq!(g.answered.iter().filter(|&&s| s == 503).count(), 3);
    assert!(g.requests.iter().all(|r| r.resource_logs[0].scope_logs[0].log_records.len() <= 10));
    let mut rows = rows_of(&g.requests);
    rows.sort_unstable();
    assert_eq!(rows.len(), 50, "each row once");
    check_rows(&rows, &report, run);
}

/// A receiver that refuses the rows (400: sending them again would not
/// help) fails them, counted; one that is down for the whole run keeps
/// `queue=10` of them (the rest dropped, counted) and, at exit, after its
/// flush timeout, counts those 10 queued: lost, and said so.
#[test]
fn a_refusing_or_absent_receiver_loses_rows_counted_never_silent() {
    let (port, got) = receiver(|_| 400);
    let sink = format!("otlp+http://127.0.0.1:{port}");
    let (stderr, _, _) = run_rows("refused", "30,20", &[&sink]);
    assert_eq!(cli_stats(&stderr).delivered, 50, "{stderr}");
    assert_eq!(sink_line(&stderr, &sink), SinkLine { written: 50, dropped: 0, delivered: 0, failed: 50, queued: 0 });
    assert!(stderr.contains("HTTP 400") && stderr.contains("counted failed"), "{stderr}");
    assert_eq!(got.lock().unwrap().answered.len() as u64, 1, "a 400 is not retried: 50 rows, one request");

    let sink = format!("otlp+http://127.0.0.1:{}?queue=10", free_port());
    let (stderr, _, _) = run_rows("down", "30,20", &[&sink]);
    assert_eq!(cli_stats(&stderr).delivered, 50, "{stderr}");
    let c = sink_line(&stderr, &sink);
    assert_eq!(c, SinkLine { written: 10, dropped: 40, delivered: 0, failed: 0, queued: 10 }, "{stderr}");
    assert!(retries(&stderr, &sink) > 0, "{stderr}");
    assert!(stderr.contains("Connection refused") || stderr.contains("ConnectionRefused"), "{stderr}");
}

/// The collector's file exporter writes one OTLP/JSON `ExportLogsServiceRequest`
/// a line; its records as rows (integers are JSON strings in OTLP/JSON).
fn collector_rows(file: &Path) -> Vec<Row> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let mut rows = vec![];
    let host = ebq::host::host_name();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let req: serde_json::Value = serde_json::from_str(line).unwrap();
        for rl in req["resourceLogs"].as_array().unwrap() {
            let resource = &rl["resource"]["attributes"];
            let attr = |kvs: &serde_json::Value, key: &str| -> serde_json::Value {
                kvs.as_array().unwrap().iter().find(|a| a["key"] == key).map(|a| a["value"].clone()).unwrap()
            };
            assert_eq!(attr(resource, "host.name")["stringValue"], host.as_str());
            assert_eq!(attr(resource, "service.name")["stringValue"], "ebq");
            for sl in rl["scopeLogs"].as_array().unwrap() {
                for r in sl["logRecords"].as_array().unwrap() {
                    let num = |v: &serde_json::Value| -> u64 { v.as_str().unwrap().parse().unwrap() };
                    let a = &r["attributes"];
                    let keys: Vec<&str> = a.as_array().unwrap().iter().map(|k| k["key"].as_str().unwrap()).collect();
                    assert_eq!(keys, ["tid", "fd", "count"]);
                    let ints = ["tid", "fd", "count"].map(|k| num(&attr(a, k)["intValue"]));
                    rows.push((num(&r["timeUnixNano"]), ints[0], ints[1], ints[2]));
                }
            }
        }
    }
    rows
}

/// `scripts/test-fleet.sh`: a real OpenTelemetry Collector (`$EBQ_OTELCOL`,
/// built by the script with the collector's builder; its config
/// `otelcol/config.yaml`) receives the rows over OTLP/HTTP and its file
/// exporter writes them: the file holds every call once, exactly.
#[test]
#[ignore = "needs a collector built by scripts/test-fleet.sh ($EBQ_OTELCOL)"]
fn a_real_collector_writes_every_row() {
    let bin =
        std::env::var("EBQ_OTELCOL").expect("EBQ_OTELCOL: the collector binary (scripts/test-fleet.sh builds it)");
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("otelcol/config.yaml");
    let dir = tmp("otelcol");
    let file = dir.join("logs.jsonl");
    let port = free_port();
    let mut collector = Command::new(&bin)
        .arg(format!("--config={}", config.display()))
        .env("EBQ_OTLP_PORT", port.to_string())
        .env("EBQ_OTLP_FILE", &file)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("collector.log")).unwrap())
        .spawn()
        .unwrap();
    wait_for(60, "the collector's OTLP receiver", || TcpStream::connect(("127.0.0.1", port)).ok());
    let sink = format!("otlp+http://127.0.0.1:{port}?batch=100");
    let (stderr, report, run) = run_rows("collector", "300,200", &[&sink]);
    let sent = SinkLine { written: 500, dropped: 0, delivered: 500, failed: 0, queued: 0 };
    assert_eq!(sink_line(&stderr, &sink), sent, "{stderr}");
    // The file exporter flushes every second, and at shutdown (SIGTERM).
    unsafe { libc::kill(collector.id() as i32, libc::SIGTERM) };
    let status = collector.wait().unwrap();
    let log = std::fs::read_to_string(dir.join("collector.log")).unwrap();
    assert!(status.success(), "{log}");
    let mut rows = collector_rows(&file);
    eprintln!("the collector wrote {} records ({} bytes)", rows.len(), std::fs::metadata(&file).unwrap().len());
    rows.sort_unstable();
    assert_eq!(rows.len(), 500, "{log}");
    check_rows(&rows, &report, run);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The summed `calls` attribute of the records, per resource `service.instance.id`.
fn calls_per_instance(requests: &[ExportLogsServiceRequest]) -> BTreeMap<String, u64> {
    let mut sums = BTreeMap::new();
    for req in requests {
        let rl = &req.resource_logs[0];
        let id = string(&rl.resource.as_ref().unwrap().attributes, "service.instance.id");
        *sums.entry(id).or_default() +=
            rl.scope_logs[0].log_records.iter().map(|r| int(&r.attributes, "calls")).sum::<u64>();
    }
    sums
}

/// `ebq serve`: a query's `otlp+http://` sink sends the `[otlp]` table's
/// resource, as the metrics pushes do; a reload that changes that resource
/// restarts the query (its records then say the new one) and keeps a query
/// without such a sink running with its totals.
#[test]
fn a_served_query_s_records_carry_the_otlp_resource_across_a_reload() {
    use crate::serve::{tmp_dir, Daemon};
    let (logs_port, got) = receiver(|_| 200);
    let (metrics_port, _pushes) = crate::otlp::receiver();
    let comm = format!("olsrv{}", std::process::id() % 10_000);
    let config = |id: &str| {
        format!(
            "listen = \"127.0.0.1:{{port}}\"\n\n[otlp]\nendpoint = \"http://127.0.0.1:{metrics_port}\"\n\
             interval = \"1h\"\nresource = {{ \"service.instance.id\" = \"{id}\" }}\n\n\
             [[query]]\nname = \"rows\"\nsinks = [\"otlp+http://127.0.0.1:{logs_port}\"]\n\
             sql = \"SELECT comm, COUNT(*) AS calls FROM syscalls.sys_enter_pread64 WHERE comm = '{comm}' \
             GROUP BY comm WINDOW(time, 500)\"\n\n\
             [[query]]\nname = \"plain\"\n\
             sql = \"SELECT COUNT(*) AS calls FROM syscalls.sys_enter_pread64 WHERE comm = '{comm}' WINDOW(time, 500)\"\n"
        )
    };
    let dir = tmp_dir("logs-resource");
    let daemon = Daemon::start(&dir, &config("first"));
    let preads = |calls: &str| {
        let w = crate::common::Workload::start(&["pread", "--fds", "1", "--calls", calls, "--comm", &comm]);
        w.go();
        w.report()["total_calls"].as_u64().unwrap()
    };
    let rows_calls = format!("ebq_rows_calls_total{{comm=\"{comm}\"}}");
    let counted = |page: &str, series: &str| {
        crate::common::sample(page, series).unwrap_or_else(|| panic!("{series}: {page}")) as u64
    };
    let first = preads("7");
    daemon.wait_closed_window("rows");
    let page = daemon.metrics();
    let counted_first = counted(&page, &rows_calls);
    assert_exact_or_accounted(counted_first, first, &query_stats(&page, "rows"), "calls before the reload");
    let port = daemon.port;
    std::fs::write(&daemon.config, config("second").replace("{port}", &port.to_string())).unwrap();
    daemon.signal(libc::SIGHUP);
    wait_for(60, "the reload", || daemon.log().contains("reloaded").then_some(()));
    assert!(daemon.log().contains("1 kept, 1 detached, 1 started"), "{}", daemon.log());
    let second = preads("5");
    daemon.wait_closed_window("rows");
    daemon.wait_closed_window("plain");
    let page = daemon.metrics();
    let log = daemon.log();
    assert!(daemon.stop().success(), "{log}");
    // The rows query restarted: its counter holds the second workload's calls; `plain` kept both.
    let counted_second = counted(&page, &rows_calls);
    assert_exact_or_accounted(counted_second, second, &query_stats(&page, "rows"), "calls after the reload");
    let plain = counted(&page, "ebq_plain_calls_total");
    assert_exact_or_accounted(plain, first + second, &query_stats(&page, "plain"), "the kept query's calls");
    let sums = calls_per_instance(&got.lock().unwrap().requests);
    eprintln!("records' calls per service.instance.id: {sums:?}; counted {counted_first} then {counted_second}");
    let want = BTreeMap::from([("first".to_string(), counted_first), ("second".to_string(), counted_second)]);
    assert_eq!(sums, want, "each record under the resource of the file it was sent with");
    let _ = std::fs::remove_dir_all(&dir);
}

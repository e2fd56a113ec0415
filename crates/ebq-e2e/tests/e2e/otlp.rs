//! OTLP/HTTP push: a local receiver (a std TcpListener thread) decodes what
//! `ebq … --otlp URL` posts with the opentelemetry-proto definitions (and,
//! independently of any Rust protobuf code, with Python's `opentelemetry-proto`
//! from PyPI); metric names, labels, values, histogram buckets, exponential
//! histograms, summaries and resource attributes must be the workload's exact
//! numbers.

use crate::common;

use common::*;
use ebq::hist::SKETCH_RELATIVE_ERROR;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::{metric::Data, number_data_point, AggregationTemporality, Metric};
use prost::Message;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::sync::mpsc;

/// A received push: path, content type, the request decoded, its raw body.
pub(crate) type Push = (String, String, ExportMetricsServiceRequest, Vec<u8>);

/// A receiver on a loopback port: every decoded request (and its path,
/// content type and raw body) goes to the channel; each gets `200 OK`.
pub(crate) fn receiver() -> (u16, mpsc::Receiver<Push>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut s) = conn else { continue };
            let mut got = vec![];
            let mut buf = [0u8; 8192];
            let (head, body) = loop {
                let n = s.read(&mut buf).unwrap();
                got.extend_from_slice(&buf[..n]);
                let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") else {
                    assert!(n > 0, "request ended inside its headers");
                    continue;
                };
                let head = String::from_utf8_lossy(&got[..end]).into_owned();
                let len: usize = head
                    .lines()
                    .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_string()))
                    .expect("Content-Length")
                    .parse()
                    .unwrap();
                if got.len() >= end + 4 + len {
                    break (head, got[end + 4..end + 4 + len].to_vec());
                }
                assert!(n > 0, "request ended inside its body");
            };
            let path = head.split(' ').nth(1).unwrap_or_default().to_string();
            // Header names are case-insensitive (ureq writes them in lower case).
            let ctype = head
                .lines()
                .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-type: ").map(str::to_string))
                .unwrap_or_default();
            let req =
                ExportMetricsServiceRequest::decode(body.as_slice()).expect("a protobuf ExportMetricsServiceRequest");
            s.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n")
                .unwrap();
            if tx.send((path, ctype, req, body)).is_err() {
                return;
            }
        }
    });
    (port, rx)
}

pub(crate) fn attrs(kvs: &[KeyValue]) -> BTreeMap<String, String> {
    kvs.iter()
        .map(|a| match a.value.as_ref().and_then(|v| v.value.as_ref()) {
            Some(any_value::Value::StringValue(s)) => (a.key.clone(), s.clone()),
            other => panic!("attribute {}: {other:?}", a.key),
        })
        .collect()
}

pub(crate) fn number(p: &opentelemetry_proto::tonic::metrics::v1::NumberDataPoint) -> f64 {
    match p.value {
        Some(number_data_point::Value::AsDouble(v)) => v,
        Some(number_data_point::Value::AsInt(v)) => v as f64,
        None => panic!("no value"),
    }
}

pub(crate) fn metrics(req: &ExportMetricsServiceRequest) -> BTreeMap<String, Metric> {
    req.resource_metrics[0].scope_metrics[0].metrics.iter().map(|m| (m.name.clone(), m.clone())).collect()
}

/// Per data point of a monotonic cumulative Sum: fd label → value.
fn sum_by_fd(m: &Metric) -> BTreeMap<u64, f64> {
    let Some(Data::Sum(s)) = &m.data else { panic!("{} is not a Sum: {:?}", m.name, m.data) };
    assert!(s.is_monotonic);
    let cumulative = AggregationTemporality::Cumulative as i32;
    assert_eq!(s.aggregation_temporality, cumulative, "without WINDOW every result is a running total");
    s.data_points.iter().map(|p| (attrs(&p.attributes)["fd"].parse().unwrap(), number(p))).collect()
}

#[test]
fn the_run_total_arrives_with_exact_counts_labels_buckets_and_resource() {
    let (port, rx) = receiver();
    let comm = format!("otlp{}", std::process::id() % 100000);
    let report = std::env::temp_dir().join(format!("ebq-otlp-{}.json", std::process::id()));
    let workload = format!(
        "{} pread --fds 3 --calls 9,23,40 --comm {comm} --fd-base 400 --report {}",
        workload_bin().display(),
        report.display()
    );
    let sql = format!(
        "SELECT fd, COUNT(*) AS calls, SUM(count) AS bytes, HIST(count) AS size \
         FROM syscalls.sys_enter_pread64 WHERE comm = '{comm}' GROUP BY fd"
    );
    let out = Command::new(ebq_bin())
        .args([&sql, "--format", "json", "-c", &workload])
        .args(["--otlp", &format!("http://127.0.0.1:{port}"), "--otlp-resource", "cluster=hpc-test"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("pushed 1 results"), "{stderr}");
    let want = per_fd(&serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap());
    let _ = std::fs::remove_file(&report);
    assert_eq!(want.len(), 3);
    let stats = cli_stats(&stderr);
    // Accounting (-c, one event, aggregate): calls per fd + dropped + missed + fork/exit missed
    // + untracked = the workload's; bytes, buckets and sums exact when nothing was lost.
    let exact = lost(&stats) == 0;

    let (path, ctype, req, _) = rx.recv().unwrap();
    assert_eq!((path.as_str(), ctype.as_str()), ("/v1/metrics", "application/x-protobuf"));
    assert!(rx.try_recv().is_err(), "one window, one push");
    let resource = attrs(&req.resource_metrics[0].resource.as_ref().unwrap().attributes);
    assert_eq!(resource["service.name"], "ebq");
    assert_eq!(resource["cluster"], "hpc-test");
    assert_eq!(resource["host.name"], std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim());
    assert!(!resource["service.instance.id"].is_empty());

    let m = metrics(&req);
    let calls = sum_by_fd(&m["ebq_query_calls_total"]);
    let bytes = sum_by_fd(&m["ebq_query_bytes_total"]);
    assert_eq!(m["ebq_query_bytes_total"].unit, "By");
    let counted: BTreeMap<u64, u64> = calls.iter().map(|(fd, c)| (*fd, *c as u64)).collect();
    let truth: BTreeMap<u64, u64> = want.iter().map(|(fd, (c, _))| (*fd, *c)).collect();
    assert_map_exact_or_accounted(&counted, &truth, &stats, "calls per fd pushed");
    for (fd, (c, b)) in want.iter().filter(|_| exact) {
        assert_eq!(calls[fd], *c as f64, "calls of fd {fd}");
        assert_eq!(bytes[fd], *b as f64, "bytes of fd {fd}");
    }
    // Sizes 64 * ((j % 5) + 1), in --otlp's buckets (closed on the power of two, as
    // OTel's): 64 → le 64, 128 → le 128, 192 and 256 → le 256, 320 → le 512.
    let Some(Data::Histogram(h)) = &m["ebq_query_size"].data else { panic!("{:?}", m["ebq_query_size"]) };
    assert_eq!(h.aggregation_temporality, AggregationTemporality::Cumulative as i32);
    // (Each fd's buckets and sum against the workload's sizes: when nothing was lost.)
    for p in h.data_points.iter().filter(|_| exact) {
        let fd: u64 = attrs(&p.attributes)["fd"].parse().unwrap();
        let n = want[&fd].0;
        let in_bucket = |sizes: &[u64]| (0..n).filter(|j| sizes.contains(&(64 * ((j % 5) + 1)))).count() as u64;
        // One fixed layout for every point: 0, then all 64 powers of two 1, 2, 4, …, 2^63, then overflow.
        let bounds: Vec<f64> = [0.0].into_iter().chain((0..64).map(|i| (1u128 << i) as f64)).collect();
        assert_eq!(p.explicit_bounds, bounds, "fd {fd}");
        let mut counts = vec![0; 66];
        counts[7..11].copy_from_slice(&[
            in_bucket(&[64]),
            in_bucket(&[128]),
            in_bucket(&[192, 256]),
            in_bucket(&[320]),
        ]);
        assert_eq!(p.bucket_counts, counts, "fd {fd}");
        assert_eq!(p.count, n);
        // SUM(count) of the same argument gives the histogram its exact sum.
        assert_eq!(p.sum, Some(want[&fd].1 as f64), "fd {fd}");
    }
    // The same HIST, losslessly, as an OTel ExponentialHistogram at scale 0:
    // bucket i holds (2^i, 2^(i+1)], so 64 is in 5, 128 in 6, 192 and 256 in 7, 320 in 8.
    let Some(Data::ExponentialHistogram(e)) = &m["ebq_query_size_histogram"].data else {
        panic!("{:?}", m.get("ebq_query_size_histogram"))
    };
    assert_eq!(e.aggregation_temporality, AggregationTemporality::Cumulative as i32);
    for p in e.data_points.iter().filter(|_| exact) {
        let fd: u64 = attrs(&p.attributes)["fd"].parse().unwrap();
        let n = want[&fd].0;
        let in_bucket = |sizes: &[u64]| (0..n).filter(|j| sizes.contains(&(64 * ((j % 5) + 1)))).count() as u64;
        let positive = p.positive.as_ref().unwrap();
        assert_eq!((p.scale, p.zero_count, p.count), (0, 0, n), "fd {fd}");
        assert_eq!(positive.offset, 5, "fd {fd}");
        assert_eq!(
            positive.bucket_counts,
            [in_bucket(&[64]), in_bucket(&[128]), in_bucket(&[192, 256]), in_bucket(&[320])],
            "fd {fd}"
        );
        assert_eq!(p.sum, Some(want[&fd].1 as f64), "fd {fd}");
    }
    // Counts are integers.
    let Some(Data::Sum(c)) = &m["ebq_query_calls_total"].data else { panic!() };
    assert!(c.data_points.iter().all(|p| matches!(p.value, Some(number_data_point::Value::AsInt(_)))), "{c:?}");
    // ebq's own counters ride along, cumulative.
    let total: u64 = want.values().map(|v| v.0).sum();
    let Some(Data::Sum(matched)) = &m["ebq_query_events_matched_total"].data else { panic!() };
    assert_eq!(matched.aggregation_temporality, AggregationTemporality::Cumulative as i32);
    assert_exact_or_accounted(number(&matched.data_points[0]) as u64, total, &stats, "events matched, pushed");
    assert_eq!(attrs(&matched.data_points[0].attributes)["query"], "query");
    let Some(Data::Sum(missed)) = &m["ebq_query_events_missed_total"].data else { panic!("no missed counter") };
    assert_eq!(missed.aggregation_temporality, AggregationTemporality::Cumulative as i32);
    // Issue 40 item 10: a chained JOIN's middle events with no pair are exported beside the
    // losses (a chained JOIN is a row query, so an exported query has none: the stats line
    // says nothing of them either).
    let Some(Data::Sum(middle)) = &m["ebq_query_middle_unmatched_total"].data else { panic!("no middle counter") };
    assert_eq!(number(&middle.data_points[0]), 0.0, "{stderr}");
    assert!(!stderr.contains("middle"), "{stderr}");
}

#[test]
fn each_count_window_is_pushed_as_a_delta() {
    let (port, rx) = receiver();
    let comm = format!("otlpw{}", std::process::id() % 10000);
    let workload =
        format!("{} pread --fds 1 --calls 35 --comm {comm} --fd-base 500 --report /dev/null", workload_bin().display());
    let sql =
        format!("SELECT COUNT(*) AS calls FROM syscalls.sys_enter_pread64 WHERE comm = '{comm}' WINDOW(count, 10, 10)");
    let out = Command::new(ebq_bin())
        .args([&sql, "--format", "json", "-c", &workload, "--otlp", &format!("http://127.0.0.1:{port}/")])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stats = cli_stats(&String::from_utf8_lossy(&out.stderr));
    let mut per_window = vec![];
    while let Ok((_, _, req, _)) = rx.recv_timeout(std::time::Duration::from_secs(1)) {
        let m = metrics(&req);
        let Some(Data::Sum(s)) = &m["ebq_query_calls_total"].data else { panic!() };
        assert_eq!(s.aggregation_temporality, AggregationTemporality::Delta as i32);
        assert!(s.data_points[0].attributes.is_empty(), "no GROUP BY, no labels");
        per_window.push(number(&s.data_points[0]));
    }
    // Accounting (-c, one event, count windows): the deltas + dropped + missed + fork/exit
    // missed + untracked = the workload's 35 calls; windows of 10 then 5 when none was lost.
    let pushed = per_window.iter().sum::<f64>() as u64;
    assert_exact_or_accounted(pushed, 35, &stats, &format!("calls pushed in windows {per_window:?}"));
    if lost(&stats) == 0 {
        assert_eq!(per_window, [10.0, 10.0, 10.0, 5.0]);
    }
}

#[test]
fn push_failures_are_reported_and_bad_urls_refused() {
    // Nobody listens on this port: the run completes, the failure is reported.
    let port = free_port();
    let out = Command::new(ebq_bin())
        .args(["SELECT COUNT(*) FROM syscalls.sys_enter_pread64", "--duration", "0.2"])
        .args(["--otlp", &format!("http://127.0.0.1:{port}")])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains(&format!("OTLP push to http://127.0.0.1:{port}/v1/metrics: Connection refused")), "{err}");
    assert!(err.contains("pushed 0 results") && err.contains("1 failed"), "{err}");
    for (args, message) in [
        (vec!["--otlp", "https://collector:4318"], "https is not supported"),
        (vec!["--otlp", "127.0.0.1:4318"], "expected http://HOST:PORT"),
        (vec!["--otlp-resource", "a=b"], "--otlp-resource needs --otlp URL"),
        (vec!["--otlp", "http://127.0.0.1:1", "--otlp-resource", "novalue"], "expects KEY=VALUE"),
    ] {
        let out = Command::new(ebq_bin())
            .args(["SELECT COUNT(*) FROM syscalls.sys_enter_pread64", "--duration", "0.2"])
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(message), "{args:?}: {err}");
    }
    let out = Command::new(ebq_bin())
        .args(["SELECT pid FROM syscalls.sys_enter_pread64", "--duration", "0.2", "--otlp", "http://127.0.0.1:1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("only aggregate queries"), "{err}");
}

#[test]
fn ebq_serve_pushes_each_window_and_pins_the_query_map() {
    let (otlp_port, rx) = receiver();
    let comm = format!("srvo{}", std::process::id() % 10000);
    let dir = std::env::temp_dir().join(format!("ebq-serve-otlp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pin = format!("/sys/fs/bpf/ebq-test-{}/wl", std::process::id());
    let _tidy = common::PinParents(std::path::PathBuf::from(&pin));
    let metrics_port = free_port();
    let config = dir.join("ebq.toml");
    std::fs::write(
        &config,
        format!(
            r#"listen = "127.0.0.1:{metrics_port}"

[otlp]
endpoint = "http://127.0.0.1:{otlp_port}/v1/metrics"
interval = "1h"
resource = {{ cluster = "serve-test" }}

[[query]]
name = "wl"
sql = "SELECT COUNT(*) AS calls FROM syscalls.sys_enter_read WHERE comm = '{comm}' WINDOW(count, 1000)"
pin = "{pin}"
"#
        ),
    )
    .unwrap();
    let log = dir.join("serve.log");
    let serve = common::Background(
        Command::new(ebq_bin())
            .args(["serve", "--config"])
            .arg(&config)
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let progs = ProgWatch::of(serve.0.id()); // the programs this daemon holds, not the machine's
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !std::fs::read_to_string(&log).unwrap_or_default().contains("capabilities reduced") {
        assert!(std::time::Instant::now() < deadline, "{}", std::fs::read_to_string(&log).unwrap_or_default());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // The pin and its layout header exist while the query runs.
    assert!(std::path::Path::new(&pin).join("groups").exists(), "{}", std::fs::read_to_string(&log).unwrap());
    let header = ebq::runtime::pin::default_header_path(std::path::Path::new(&pin));
    assert!(std::fs::read_to_string(&header).unwrap().contains("EBQ_LAYOUT_VERSION 2"));

    let w = Workload::start(&["readzero", "--count", "3000", "--comm", &comm]);
    w.go();
    w.report();
    // Three closed count windows of 1000 reads each, pushed as deltas as they close.
    let mut windows = vec![];
    while windows.len() < 3 {
        let (path, _, req, _) = rx.recv_timeout(std::time::Duration::from_secs(30)).expect("a push per window");
        assert_eq!(path, "/v1/metrics");
        let resource = attrs(&req.resource_metrics[0].resource.as_ref().unwrap().attributes);
        assert_eq!(resource["cluster"], "serve-test");
        let m = metrics(&req);
        if let Some(Data::Sum(s)) = m.get("ebq_wl_calls_total").and_then(|c| c.data.as_ref()) {
            assert_eq!(s.aggregation_temporality, AggregationTemporality::Delta as i32);
            windows.push(number(&s.data_points[0]));
        }
    }
    assert_eq!(windows, [1000.0, 1000.0, 1000.0]);

    // SIGTERM: programs detached, pins and header removed.
    assert!(serve.stop().success());
    assert!(!std::path::Path::new(&pin).exists(), "pin left behind");
    assert!(!header.exists(), "header left behind");
    let _ = std::fs::remove_dir_all(&dir);
    progs.assert_gone();
}

/// Decodes a raw OTLP body with Python's `opentelemetry-proto` (PyPI): per
/// metric name, its data kind and points (attributes, count, sum, and the
/// exponential buckets or the quantiles).
fn python_decode(body: &[u8]) -> serde_json::Value {
    const DECODE: &str = r#"
import json, sys
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
req = ExportMetricsServiceRequest()
req.ParseFromString(sys.stdin.buffer.read())
out = {}
for rm in req.resource_metrics:
    for sm in rm.scope_metrics:
        for m in sm.metrics:
            kind = m.WhichOneof("data")
            points = []
            if kind == "exponential_histogram":
                for p in m.exponential_histogram.data_points:
                    points.append({"attrs": {a.key: a.value.string_value for a in p.attributes}, "count": p.count,
                        "sum": p.sum, "has_sum": p.HasField("sum"), "scale": p.scale, "zero_count": p.zero_count,
                        "positive": [p.positive.offset, list(p.positive.bucket_counts)],
                        "negative": [p.negative.offset, list(p.negative.bucket_counts)],
                        "temporality": m.exponential_histogram.aggregation_temporality})
            elif kind == "summary":
                for p in m.summary.data_points:
                    points.append({"attrs": {a.key: a.value.string_value for a in p.attributes}, "count": p.count,
                        "sum": p.sum, "quantiles": [[q.quantile, q.value] for q in p.quantile_values]})
            out[m.name] = {"kind": kind, "points": points}
print(json.dumps(out))
"#;
    let py = python_with("opentelemetry.proto", "opentelemetry-proto");
    let mut child = Command::new(py)
        .args(["-c", DECODE])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(body).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "python decode: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The OTel spec's bucket index of `v` at scale 6 (upper-inclusive buckets,
/// base 2^(1/64)): ceil(64·log2 v) − 1, exact in f64 for the workload's sizes
/// (powers of two give whole logs).
fn spec_index(v: u64) -> i64 {
    (64.0 * (v as f64).log2()).ceil() as i64 - 1
}

#[test]
fn exponential_histograms_and_summaries_decode_in_python_with_exact_counts_and_sums() {
    let (port, rx) = receiver();
    let comm = format!("otlpx{}", std::process::id() % 10000);
    let report = std::env::temp_dir().join(format!("ebq-otlp-x-{}.json", std::process::id()));
    let workload = format!(
        "{} pread --fds 2 --calls 17,31 --comm {comm} --fd-base 600 --report {}",
        workload_bin().display(),
        report.display()
    );
    // No COUNT(*) or SUM(count) selected: the counts and sums come from the kernel's sketch and sum.
    let sql = format!(
        "SELECT fd, P50(count) AS p50_size_bytes, P99(count) AS p99_size_bytes, HIST(count) AS len_bytes \
         FROM syscalls.sys_enter_pread64 WHERE comm = '{comm}' GROUP BY fd"
    );
    let out = Command::new(ebq_bin())
        .args([&sql, "--format", "json", "-c", &workload, "--otlp", &format!("http://127.0.0.1:{port}")])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stats = cli_stats(&String::from_utf8_lossy(&out.stderr));
    let want = per_fd(&serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap());
    let _ = std::fs::remove_file(&report);
    assert_eq!(want.len(), 2);
    let (_, _, _, body) = rx.recv().unwrap();
    let m = python_decode(&body);

    let exp = &m["ebq_query_size_histogram_bytes"];
    assert_eq!(exp["kind"], "exponential_histogram", "{m}");
    assert_eq!(m["ebq_query_size_bytes"]["kind"], "summary");
    let points = exp["points"].as_array().unwrap();
    assert_eq!(points.len(), 2, "{exp}");
    // Accounting (-c, one event, aggregate): each fd's point count + dropped + missed +
    // fork/exit missed + untracked = the workload's calls; buckets, sums and quantiles against
    // the workload's sizes when nothing was lost.
    let counted: BTreeMap<u64, u64> = points
        .iter()
        .map(|p| (p["attrs"]["fd"].as_str().unwrap().parse().unwrap(), p["count"].as_u64().unwrap()))
        .collect();
    let truth: BTreeMap<u64, u64> = want.iter().map(|(fd, (n, _))| (*fd, *n)).collect();
    assert_map_exact_or_accounted(&counted, &truth, &stats, "exponential histogram counts per fd");
    if lost(&stats) > 0 {
        return;
    }
    for p in points {
        let fd: u64 = p["attrs"]["fd"].as_str().unwrap().parse().unwrap();
        let (n, bytes) = want[&fd];
        // The workload's sizes: 64 * ((j % 5) + 1) for its j-th call on the fd.
        let sizes: Vec<u64> = (0..n).map(|j| 64 * ((j % 5) + 1)).collect();
        assert_eq!(sizes.iter().sum::<u64>(), bytes, "the report's bytes are these sizes");
        assert_eq!(p["temporality"], 2, "a run without WINDOW pushes cumulative totals");
        assert_eq!(p["scale"], 6, "fd {fd}: a fixed scale");
        assert_eq!(p["count"], n, "fd {fd}");
        assert_eq!(p["has_sum"], true);
        assert_eq!(p["sum"].as_f64().unwrap(), bytes as f64, "fd {fd}: the exact sum");
        assert_eq!(p["zero_count"], 0);
        // The sizes' buckets by `index`: (first index, counts from it to the last, gaps as 0).
        let dense_buckets = |index: &dyn Fn(u64) -> i64| {
            let mut expect: BTreeMap<i64, u64> = BTreeMap::new();
            for v in &sizes {
                *expect.entry(index(*v)).or_default() += 1;
            }
            let (first, last) = (*expect.keys().next().unwrap(), *expect.keys().next_back().unwrap());
            (first, (first..=last).map(|i| expect.get(&i).copied().unwrap_or(0)).collect::<Vec<u64>>())
        };
        // This fd's point of `family`.
        let point = |family: &str| {
            m[family]["points"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["attrs"]["fd"].as_str() == Some(fd.to_string().as_str()))
                .unwrap_or_else(|| panic!("a {family} point for fd {fd}: {m}"))
        };
        let (first, dense) = dense_buckets(&spec_index);
        assert_eq!(p["positive"][0], first, "fd {fd}: offset");
        assert_eq!(p["positive"][1], serde_json::json!(dense), "fd {fd}: dense bucket counts");
        assert_eq!(p["negative"][1], serde_json::json!([]));

        // The HIST at scale 0: bucket i holds (2^i, 2^(i+1)], i = ceil(log2 v) − 1.
        let h = point("ebq_query_len_histogram_bytes");
        let (first, dense) = dense_buckets(&|v| i64::from(64 - (v - 1).leading_zeros()) - 1);
        assert_eq!((h["scale"].as_i64(), h["count"].as_u64(), h["zero_count"].as_u64()), (Some(0), Some(n), Some(0)));
        assert_eq!(h["sum"].as_f64().unwrap(), bytes as f64, "fd {fd}: the exact sum");
        assert_eq!(h["positive"][0], first, "fd {fd}: offset");
        assert_eq!(h["positive"][1], serde_json::json!(dense), "fd {fd}: dense bucket counts");

        let s = point("ebq_query_size_bytes");
        assert_eq!(s["count"], n, "fd {fd}: the summary's true count");
        assert_eq!(s["sum"].as_f64().unwrap(), bytes as f64, "fd {fd}: the summary's true sum");
        for (i, ppm) in [(0, 500_000u32), (1, 990_000)] {
            let mut v: Vec<i128> = sizes.iter().map(|&x| i128::from(x)).collect();
            let exact = ebq::hist::exact_quantile(&mut v, ppm).unwrap() as f64;
            let got = s["quantiles"][i][1].as_f64().unwrap();
            assert!((got - exact).abs() / exact <= SKETCH_RELATIVE_ERROR, "fd {fd} q{ppm}: {got} vs {exact}");
        }
    }
}

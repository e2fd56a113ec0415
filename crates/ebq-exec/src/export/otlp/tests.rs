use super::*;
use crate::export::Unit;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use std::io::{Read, Write};
use std::net::TcpListener;

fn fam(name: &str, kind: MetricKind, value: SampleValue) -> MetricFamily {
    MetricFamily {
        name: name.into(),
        help: format!("help of {name}"),
        unit: Some(Unit::Bytes),
        kind,
        integer: kind == MetricKind::Counter,
        samples: vec![Sample { labels: vec![("fd".into(), "3".into())], value }],
    }
}

#[test]
fn endpoints() {
    let ok = |e: &str| split_endpoint(e, METRICS_PATH).unwrap();
    assert_eq!(ok("http://127.0.0.1:4318"), ("127.0.0.1:4318".into(), "/v1/metrics".into()));
    assert_eq!(ok("http://collector/"), ("collector:80".into(), "/v1/metrics".into()));
    assert_eq!(ok("http://h:1/otlp/v1/metrics"), ("h:1".into(), "/otlp/v1/metrics".into()));
    assert_eq!(signal_url("http://h:1/otlp/", LOGS_PATH).unwrap(), "http://h:1/otlp/v1/logs");
    assert_eq!(signal_url("http://h:1/v1/logs", LOGS_PATH).unwrap(), "http://h:1/v1/logs");
    assert!(check_endpoint("https://h:1").unwrap_err().to_string().contains("https is not supported"));
    assert!(check_endpoint("127.0.0.1:4318").unwrap_err().to_string().contains("expected http://HOST:PORT"));
}

#[test]
fn kinds_map_to_otlp_data() {
    let families = [
        fam("c_total", MetricKind::Counter, SampleValue::Number(7.0)),
        fam("g", MetricKind::Gauge, SampleValue::Number(2.5)),
        fam(
            "h",
            MetricKind::Histogram,
            SampleValue::Histogram { buckets: vec![(127.0, 6), (255.0, 12), (f64::INFINITY, 1)], count: 19, sum: None },
        ),
        fam(
            "s",
            MetricKind::Summary,
            SampleValue::Summary { quantiles: vec![(0.5, 10.0), (0.99, 20.0)], count: Some(12), sum: Some(150.0) },
        ),
        fam("u", MetricKind::Summary, SampleValue::Summary { quantiles: vec![(0.5, 1.0)], count: None, sum: None }),
        MetricFamily { samples: vec![], ..fam("empty", MetricKind::Gauge, SampleValue::Number(0.0)) },
    ];
    let mut config = OtlpConfig::new("http://127.0.0.1:1", "node7");
    config.resource = vec![("cluster".into(), "c1".into()), ("service.name".into(), "ebq-test".into())];
    let b = Batch { families: &families, temporality: Temporality::Delta, start_unix_ns: 10, time_unix_ns: 20 };
    let req = request(&config, &[b]);
    let rm = &req.resource_metrics[0];
    let res: Vec<(String, String)> = rm
        .resource
        .as_ref()
        .unwrap()
        .attributes
        .iter()
        .map(|a| match &a.value.as_ref().unwrap().value {
            Some(any_value::Value::StringValue(s)) => (a.key.clone(), s.clone()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert!(res.contains(&("service.name".into(), "ebq-test".into())), "configured attributes override: {res:?}");
    assert!(res.contains(&("cluster".into(), "c1".into())));
    assert!(res.contains(&("host.name".into(), "node7".into())), "{res:?}");
    let m = &rm.scope_metrics[0].metrics;
    assert_eq!(
        m.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(),
        ["c_total", "g", "h", "s", "u"],
        "empty families are left out"
    );
    assert_eq!(m[0].unit, "By");
    match m[0].data.as_ref().unwrap() {
        Data::Sum(s) => {
            assert!(s.is_monotonic);
            assert_eq!(s.aggregation_temporality, AggregationTemporality::Delta as i32);
            assert_eq!(s.data_points[0].value, Some(number_data_point::Value::AsInt(7)), "counts are integers");
            assert_eq!((s.data_points[0].start_time_unix_nano, s.data_points[0].time_unix_nano), (10, 20));
            assert_eq!(s.data_points[0].attributes, vec![kv("fd", "3")]);
        }
        other => panic!("{other:?}"),
    }
    match m[1].data.as_ref().unwrap() {
        Data::Gauge(g) => assert_eq!(g.data_points[0].value, Some(number_data_point::Value::AsDouble(2.5))),
        other => panic!("{other:?}"),
    }
    match m[2].data.as_ref().unwrap() {
        Data::Histogram(h) => {
            let p = &h.data_points[0];
            assert_eq!(p.explicit_bounds, [127.0, 255.0]);
            assert_eq!(p.bucket_counts, [6, 12, 1], "the +inf bucket is OTLP's overflow count");
            assert_eq!(p.count, 19);
        }
        other => panic!("{other:?}"),
    }
    match m[3].data.as_ref().unwrap() {
        Data::Summary(s) => {
            assert_eq!(s.data_points[0].quantile_values[1], ValueAtQuantile { quantile: 0.99, value: 20.0 });
            assert_eq!((s.data_points[0].count, s.data_points[0].sum), (12, 150.0));
        }
        other => panic!("{other:?}"),
    }
    match m[4].data.as_ref().unwrap() {
        Data::Summary(s) => assert_eq!((s.data_points[0].count, s.data_points[0].sum), (0, 0.0), "unknown: 0"),
        other => panic!("{other:?}"),
    }
}

/// A one-shot HTTP server answering `reply`; returns its port and the request it got.
fn serve_once(reply: &'static str) -> (u16, std::thread::JoinHandle<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let h = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut got = vec![];
        let mut buf = [0u8; 4096];
        loop {
            let n = s.read(&mut buf).unwrap();
            got.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&got);
            if let Some((head, _)) = text.split_once("\r\n\r\n") {
                let len: usize = head
                    .lines()
                    .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length: ").map(str::to_string))
                    .map_or(0, |v| v.trim().parse().unwrap());
                if got.len() >= head.len() + 4 + len || n == 0 {
                    break;
                }
            }
        }
        s.write_all(reply.as_bytes()).unwrap();
        got
    });
    (port, h)
}

#[test]
fn posts_protobuf_and_reports_http_failures() {
    let families = [fam("c_total", MetricKind::Counter, SampleValue::Number(3.0))];
    let b = Batch { families: &families, temporality: Temporality::Cumulative, start_unix_ns: 1, time_unix_ns: 2 };
    let (port, h) = serve_once("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    push(&OtlpConfig::new(format!("http://127.0.0.1:{port}"), "node7"), &[b]).unwrap();
    let got = h.join().unwrap();
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("POST /v1/metrics HTTP/1.1\r\n"), "{text}");
    // Header names are case-insensitive (ureq writes them in lower case).
    assert!(text.to_ascii_lowercase().contains("content-type: application/x-protobuf\r\n"), "{text}");
    let body = &got[text.find("\r\n\r\n").unwrap() + 4..];
    let req = ExportMetricsServiceRequest::decode(body).unwrap();
    assert_eq!(req.resource_metrics[0].scope_metrics[0].metrics[0].name, "c_total");

    let (port, h) = serve_once("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 9\r\n\r\nsaturated");
    let err = push(&OtlpConfig::new(format!("http://127.0.0.1:{port}"), "node7"), &[b]).unwrap_err();
    h.join().unwrap();
    assert!(matches!(&err, OtlpError::Http { status: 503, body, .. } if body == "saturated"), "{err}");
    assert_eq!(err.to_string(), format!("OTLP push to http://127.0.0.1:{port}/v1/metrics: HTTP 503: saturated"));

    // Nobody listening: an I/O error naming the URL.
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let err = push(&OtlpConfig::new(format!("http://127.0.0.1:{port}"), "node7"), &[b]).unwrap_err();
    assert!(matches!(err, OtlpError::Io { .. }) && err.to_string().contains("refused"), "{err}");
}

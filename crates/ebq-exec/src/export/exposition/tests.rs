use super::*;
use crate::export::{Sample, Unit};

fn family(name: &str, kind: MetricKind, unit: Option<Unit>, value: SampleValue) -> MetricFamily {
    MetricFamily {
        name: name.into(),
        help: format!("help of {name}"),
        unit,
        kind,
        integer: false,
        samples: vec![Sample { labels: vec![("comm".into(), "a\"b\\c\nd".into())], value }],
    }
}

fn page(format: TextFormat) -> String {
    let fams = [
        family("ebq_q_calls_total", MetricKind::Counter, None, SampleValue::Number(5.0)),
        family(
            "ebq_q_size_bytes",
            MetricKind::Histogram,
            Some(Unit::Bytes),
            SampleValue::Histogram { buckets: vec![(0.0, 0), (1.0, 2), (f64::INFINITY, 1)], count: 3, sum: None },
        ),
        family(
            "ebq_q_lat_seconds",
            MetricKind::Histogram,
            Some(Unit::Seconds),
            SampleValue::Histogram { buckets: vec![(0.000001, 4)], count: 4, sum: Some(0.000004) },
        ),
        family(
            "ebq_q_len_bytes",
            MetricKind::Summary,
            Some(Unit::Bytes),
            SampleValue::Summary { quantiles: vec![(0.5, 64.0), (0.99, 4096.0)], count: Some(10), sum: None },
        ),
    ];
    encode(&fams, format)
}

#[test]
fn openmetrics_pages_have_typed_families_units_and_eof() {
    let l = r#"{comm="a\"b\\c\nd"}"#;
    let want = format!(
        "# HELP ebq_q_calls help of ebq_q_calls_total\n\
         # TYPE ebq_q_calls counter\n\
         ebq_q_calls_total{l} 5.0\n\
         # HELP ebq_q_size_bytes help of ebq_q_size_bytes\n\
         # TYPE ebq_q_size_bytes histogram\n\
         # UNIT ebq_q_size_bytes bytes\n\
         ebq_q_size_bytes_bucket{{le=\"0.0\",comm=\"a\\\"b\\\\c\\nd\"}} 0\n\
         ebq_q_size_bytes_bucket{{le=\"1.0\",comm=\"a\\\"b\\\\c\\nd\"}} 2\n\
         ebq_q_size_bytes_bucket{{le=\"+Inf\",comm=\"a\\\"b\\\\c\\nd\"}} 3\n\
         # HELP ebq_q_lat_seconds help of ebq_q_lat_seconds\n\
         # TYPE ebq_q_lat_seconds histogram\n\
         # UNIT ebq_q_lat_seconds seconds\n\
         ebq_q_lat_seconds_bucket{{le=\"1e-6\",comm=\"a\\\"b\\\\c\\nd\"}} 4\n\
         ebq_q_lat_seconds_bucket{{le=\"+Inf\",comm=\"a\\\"b\\\\c\\nd\"}} 4\n\
         ebq_q_lat_seconds_count{l} 4\n\
         ebq_q_lat_seconds_sum{l} 4e-6\n\
         # HELP ebq_q_len_bytes help of ebq_q_len_bytes\n\
         # TYPE ebq_q_len_bytes summary\n\
         # UNIT ebq_q_len_bytes bytes\n\
         ebq_q_len_bytes{{comm=\"a\\\"b\\\\c\\nd\",quantile=\"0.5\"}} 64.0\n\
         ebq_q_len_bytes{{comm=\"a\\\"b\\\\c\\nd\",quantile=\"0.99\"}} 4096.0\n\
         ebq_q_len_bytes_count{l} 10\n\
         # EOF\n"
    );
    assert_eq!(page(TextFormat::OpenMetrics), want);
}

#[test]
fn prometheus_004_pages_name_counters_by_their_samples() {
    let p = page(TextFormat::Prometheus004);
    assert!(
        p.starts_with("# HELP ebq_q_calls_total help of ebq_q_calls_total\n# TYPE ebq_q_calls_total counter\n"),
        "{p}"
    );
    assert!(!p.contains("# UNIT") && !p.contains("# EOF"), "{p}");
    assert!(p.contains("# TYPE ebq_q_len_bytes summary\n"), "{p}");
}

#[test]
fn accept_headers_choose_the_format() {
    use TextFormat::*;
    assert_eq!(TextFormat::negotiate(None), Prometheus004);
    assert_eq!(TextFormat::negotiate(Some("text/plain;version=0.0.4")), Prometheus004);
    assert_eq!(TextFormat::negotiate(Some("*/*")), Prometheus004);
    // What Prometheus 2.42 sends.
    assert_eq!(
        TextFormat::negotiate(Some(
            "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,\
             text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
        )),
        OpenMetrics
    );
    assert_eq!(TextFormat::negotiate(Some("application/openmetrics-text; q=0, text/plain")), Prometheus004);
}

#[test]
fn reserved_names_follow_the_family_type() {
    assert_eq!(
        reserved_names("ebq_q_up_total", MetricKind::Counter),
        ["ebq_q_up", "ebq_q_up_total", "ebq_q_up_created"]
    );
    assert!(reserved_names("ebq_q_h", MetricKind::Histogram).contains(&"ebq_q_h_count".to_string()));
    assert_eq!(reserved_names("ebq_q_g", MetricKind::Gauge), ["ebq_q_g"]);
}

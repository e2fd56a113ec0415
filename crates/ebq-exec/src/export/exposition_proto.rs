//! Families as Prometheus' protobuf exposition: length-delimited
//! `io.prometheus.client.MetricFamily` messages, the only format that carries
//! native histograms (Prometheus asks for it first when started with
//! `--enable-feature=native-histograms`).
//!
//! | family      | protobuf                                                        |
//! |-------------|-----------------------------------------------------------------|
//! | counter     | COUNTER, named with its `_total`                                |
//! | gauge       | GAUGE                                                           |
//! | histogram   | HISTOGRAM with classic buckets (cumulative, `+Inf` implied by the count), count and sum |
//! | summary     | SUMMARY: quantiles, count and sum when known                    |
//! | exponential | HISTOGRAM as a native histogram: schema = scale, a zero bucket, positive and negative spans with delta-encoded counts (bucket index = OTel's + 1: Prometheus names a bucket by its upper bound), count and exact sum |
//!
//! The zero bucket's threshold is 2^−128 (client_golang's default) rather
//! than 0, because Prometheus 2.42 takes a histogram with no native buckets,
//! no zero count and a zero threshold of 0 for a classic one; ebq's values are
//! integers, so the zero bucket still holds exactly the zeros.
//!
//! The messages are declared here with prost's derive (field numbers from
//! Prometheus' `io/prometheus/client/metrics.proto`) rather than generated:
//! eight small messages, no build script.

use super::metrics::{Exponential, MetricFamily, MetricKind, SampleValue};
use prost::Message;

/// The `Content-Type` of a protobuf page.
pub const CONTENT_TYPE: &str =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited";

/// The zero bucket's threshold (see the module docs).
pub const ZERO_THRESHOLD: f64 = 2.938_735_877_055_719e-39;

/// `io.prometheus.client.LabelPair`.
#[derive(Clone, PartialEq, Message)]
pub struct LabelPair {
    /// Label name.
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    /// Label value.
    #[prost(string, optional, tag = "2")]
    pub value: Option<String>,
}

/// `io.prometheus.client.Gauge`, `Counter` and `Untyped` (one value).
#[derive(Clone, PartialEq, Message)]
pub struct Value {
    /// The value.
    #[prost(double, optional, tag = "1")]
    pub value: Option<f64>,
}

/// `io.prometheus.client.Quantile`.
#[derive(Clone, PartialEq, Message)]
pub struct Quantile {
    /// q in 0..=1.
    #[prost(double, optional, tag = "1")]
    pub quantile: Option<f64>,
    /// The quantile's value.
    #[prost(double, optional, tag = "2")]
    pub value: Option<f64>,
}

/// `io.prometheus.client.Summary`.
#[derive(Clone, PartialEq, Message)]
pub struct Summary {
    /// Values observed.
    #[prost(uint64, optional, tag = "1")]
    pub sample_count: Option<u64>,
    /// Their sum.
    #[prost(double, optional, tag = "2")]
    pub sample_sum: Option<f64>,
    /// The quantiles.
    #[prost(message, repeated, tag = "3")]
    pub quantile: Vec<Quantile>,
}

/// `io.prometheus.client.Bucket` (a classic histogram's).
#[derive(Clone, PartialEq, Message)]
pub struct Bucket {
    /// Values ≤ `upper_bound`.
    #[prost(uint64, optional, tag = "1")]
    pub cumulative_count: Option<u64>,
    /// Inclusive upper bound.
    #[prost(double, optional, tag = "2")]
    pub upper_bound: Option<f64>,
}

/// `io.prometheus.client.BucketSpan`: `length` consecutive native buckets,
/// starting `offset` after the previous span's end (the first: at `offset`).
#[derive(Clone, PartialEq, Message)]
pub struct BucketSpan {
    /// Gap before the span (the first span: its first index).
    #[prost(sint32, optional, tag = "1")]
    pub offset: Option<i32>,
    /// Buckets in the span.
    #[prost(uint32, optional, tag = "2")]
    pub length: Option<u32>,
}

/// `io.prometheus.client.Histogram`: classic buckets and/or native ones.
#[derive(Clone, PartialEq, Message)]
pub struct Histogram {
    /// Values observed.
    #[prost(uint64, optional, tag = "1")]
    pub sample_count: Option<u64>,
    /// Their sum.
    #[prost(double, optional, tag = "2")]
    pub sample_sum: Option<f64>,
    /// Classic buckets, ascending.
    #[prost(message, repeated, tag = "3")]
    pub bucket: Vec<Bucket>,
    /// Native: the schema (OTel scale).
    #[prost(sint32, optional, tag = "5")]
    pub schema: Option<i32>,
    /// Native: values with |v| ≤ this are in the zero bucket.
    #[prost(double, optional, tag = "6")]
    pub zero_threshold: Option<f64>,
    /// Native: the zero bucket's count.
    #[prost(uint64, optional, tag = "7")]
    pub zero_count: Option<u64>,
    /// Native: spans of negative buckets.
    #[prost(message, repeated, tag = "9")]
    pub negative_span: Vec<BucketSpan>,
    /// Native: negative bucket counts, each as the difference from the previous one.
    #[prost(sint64, repeated, tag = "10")]
    pub negative_delta: Vec<i64>,
    /// Native: spans of positive buckets.
    #[prost(message, repeated, tag = "12")]
    pub positive_span: Vec<BucketSpan>,
    /// Native: positive bucket counts, delta-encoded.
    #[prost(sint64, repeated, tag = "13")]
    pub positive_delta: Vec<i64>,
}

/// `io.prometheus.client.Metric`: one series.
#[derive(Clone, PartialEq, Message)]
pub struct Metric {
    /// Its labels.
    #[prost(message, repeated, tag = "1")]
    pub label: Vec<LabelPair>,
    /// A gauge's value.
    #[prost(message, optional, tag = "2")]
    pub gauge: Option<Value>,
    /// A counter's value.
    #[prost(message, optional, tag = "3")]
    pub counter: Option<Value>,
    /// A summary's value.
    #[prost(message, optional, tag = "4")]
    pub summary: Option<Summary>,
    /// A histogram's value.
    #[prost(message, optional, tag = "7")]
    pub histogram: Option<Histogram>,
}

/// `io.prometheus.client.MetricType`: COUNTER, GAUGE, SUMMARY, UNTYPED, HISTOGRAM.
pub mod metric_type {
    /// COUNTER.
    pub const COUNTER: i32 = 0;
    /// GAUGE.
    pub const GAUGE: i32 = 1;
    /// SUMMARY.
    pub const SUMMARY: i32 = 2;
    /// HISTOGRAM.
    pub const HISTOGRAM: i32 = 4;
}

/// `io.prometheus.client.MetricFamily`.
#[derive(Clone, PartialEq, Message)]
pub struct Family {
    /// Family name (a counter's with `_total`).
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    /// Help text.
    #[prost(string, optional, tag = "2")]
    pub help: Option<String>,
    /// [`metric_type`].
    #[prost(int32, optional, tag = "3")]
    pub r#type: Option<i32>,
    /// The series.
    #[prost(message, repeated, tag = "4")]
    pub metric: Vec<Metric>,
}

/// Sparse native bucket counts → spans (a new one at every gap) and deltas.
pub fn spans(counts: &std::collections::BTreeMap<i32, u64>) -> (Vec<BucketSpan>, Vec<i64>) {
    let (mut spans, mut deltas): (Vec<BucketSpan>, Vec<i64>) = (vec![], vec![]);
    let (mut next, mut prev) = (None::<i32>, 0i64);
    for (&i, &n) in counts {
        match next {
            Some(expected) if expected == i => {
                let last = spans.last_mut().expect("a span is open");
                last.length = Some(last.length.unwrap_or(0) + 1);
            }
            _ => spans.push(BucketSpan { offset: Some(next.map_or(i, |e| i - e)), length: Some(1) }),
        }
        deltas.push(n as i64 - prev);
        prev = n as i64;
        next = Some(i + 1);
    }
    (spans, deltas)
}

/// Prometheus' index of OTel's bucket `i`: OTel's bucket `i` is
/// `(base^i, base^(i+1)]`, Prometheus names a bucket by its upper bound, so
/// the same bucket is `i + 1` there (as the OTel collector converts it).
fn prometheus_indexes(otel: &std::collections::BTreeMap<i32, u64>) -> std::collections::BTreeMap<i32, u64> {
    otel.iter().map(|(i, n)| (i + 1, *n)).collect()
}

/// An exponential histogram as a native one.
pub fn native(e: &Exponential) -> Histogram {
    let (positive_span, positive_delta) = spans(&prometheus_indexes(&e.positive));
    let (negative_span, negative_delta) = spans(&prometheus_indexes(&e.negative));
    Histogram {
        sample_count: Some(e.count),
        sample_sum: Some(e.sum),
        bucket: vec![],
        schema: Some(e.scale),
        zero_threshold: Some(ZERO_THRESHOLD),
        zero_count: Some(e.zero_count),
        negative_span,
        negative_delta,
        positive_span,
        positive_delta,
    }
}

/// One family as a protobuf message.
pub fn family(f: &MetricFamily) -> Family {
    let ty = match f.kind {
        MetricKind::Counter => metric_type::COUNTER,
        MetricKind::Gauge => metric_type::GAUGE,
        MetricKind::Summary => metric_type::SUMMARY,
        MetricKind::Histogram | MetricKind::Exponential => metric_type::HISTOGRAM,
    };
    let metric = f
        .samples
        .iter()
        .map(|s| {
            let label =
                s.labels.iter().map(|(k, v)| LabelPair { name: Some(k.clone()), value: Some(v.clone()) }).collect();
            let mut m = Metric { label, ..Default::default() };
            match (&s.value, f.kind) {
                (SampleValue::Number(v), MetricKind::Counter) => m.counter = Some(Value { value: Some(*v) }),
                (SampleValue::Number(v), _) => m.gauge = Some(Value { value: Some(*v) }),
                (SampleValue::Histogram { buckets, count, sum }, _) => {
                    let mut cumulative = 0;
                    let bucket = buckets
                        .iter()
                        .filter(|(le, _)| le.is_finite())
                        .map(|(le, n)| {
                            cumulative += n;
                            Bucket { cumulative_count: Some(cumulative), upper_bound: Some(*le) }
                        })
                        .collect();
                    m.histogram =
                        Some(Histogram { sample_count: Some(*count), sample_sum: *sum, bucket, ..Default::default() });
                }
                (SampleValue::Summary { quantiles, count, sum }, _) => {
                    m.summary = Some(Summary {
                        sample_count: *count,
                        sample_sum: *sum,
                        quantile: quantiles
                            .iter()
                            .map(|(q, v)| Quantile { quantile: Some(*q), value: Some(*v) })
                            .collect(),
                    })
                }
                (SampleValue::Exponential(e), _) => m.histogram = Some(native(e)),
            }
            m
        })
        .collect();
    Family { name: Some(f.name.clone()), help: Some(f.help.clone()), r#type: Some(ty), metric }
}

/// A whole page: every family with a sample, each length-delimited.
pub fn encode<'a>(families: impl IntoIterator<Item = &'a MetricFamily>) -> Vec<u8> {
    let mut out = vec![];
    for f in families {
        if f.samples.is_empty() {
            continue;
        }
        family(f).encode_length_delimited(&mut out).expect("a Vec grows");
    }
    out
}

/// True when an HTTP `Accept` header prefers the protobuf exposition (with
/// `proto=io.prometheus.client.MetricFamily` and `encoding=delimited`) to
/// every text format it names: at a q above 0 and no lower than theirs.
pub fn wanted(accept: Option<&str>) -> bool {
    let Some(accept) = accept else { return false };
    let (mut proto, mut text) = (0f64, 0f64);
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let params: Vec<(String, String)> = parts
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().trim_matches('"').to_string()))
            .collect();
        let param = |k: &str| params.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
        let q = param("q").and_then(|q| q.parse::<f64>().ok()).unwrap_or(1.0);
        if media == "application/vnd.google.protobuf" {
            if param("proto") == Some("io.prometheus.client.MetricFamily") && param("encoding") == Some("delimited") {
                proto = proto.max(q);
            }
        } else if media == "application/openmetrics-text" || media == "text/plain" {
            text = text.max(q);
        }
    }
    proto > 0.0 && proto >= text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::metrics::Sample;
    use std::collections::BTreeMap;

    #[test]
    fn spans_start_at_every_gap_and_counts_are_deltas() {
        let counts: BTreeMap<i32, u64> = [(-1, 2), (0, 5), (1, 1), (5, 4), (6, 4)].into_iter().collect();
        let (got, deltas) = spans(&counts);
        assert_eq!(
            got,
            vec![BucketSpan { offset: Some(-1), length: Some(3) }, BucketSpan { offset: Some(3), length: Some(2) }]
        );
        assert_eq!(deltas, vec![2, 3, -4, 3, 0]);
        assert_eq!(spans(&BTreeMap::new()), (vec![], vec![]));
    }

    #[test]
    fn a_prometheus_scrape_prefers_protobuf_and_text_clients_keep_text() {
        let prometheus =
            "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,\
                          text/plain;version=0.0.4;q=0.3,*/*;q=0.2";
        assert!(wanted(Some(prometheus)));
        assert!(!wanted(Some("application/openmetrics-text; version=1.0.0")));
        assert!(!wanted(None));
        assert!(!wanted(Some("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text")));
        assert!(!wanted(Some(
            "application/openmetrics-text;q=0.9,application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.5"
        )));
    }

    #[test]
    fn an_exponential_family_is_a_native_histogram() {
        let e = Exponential::of_sketch(
            &[
                ebq_front::hist::Bucket { lo: -3, hi: -2, count: 1 },
                ebq_front::hist::Bucket { lo: 0, hi: 1, count: 2 },
                ebq_front::hist::Bucket { lo: 2, hi: 3, count: 4 },
            ],
            5.0,
            0,
        );
        assert_eq!((e.count, e.zero_count), (7, 2));
        assert_eq!(e.positive, [(63, 4)].into_iter().collect(), "2 is the top of bucket 63");
        assert_eq!(e.negative, [(101, 1)].into_iter().collect());
        let f = MetricFamily {
            name: "ebq_q_x_histogram".into(),
            help: "h".into(),
            unit: None,
            kind: MetricKind::Exponential,
            integer: false,
            samples: vec![Sample { labels: vec![("comm".into(), "dd".into())], value: SampleValue::Exponential(e) }],
        };
        let page = encode([&f]);
        let back = Family::decode_length_delimited(page.as_slice()).unwrap();
        assert_eq!(back.r#type, Some(metric_type::HISTOGRAM));
        let h = back.metric[0].histogram.clone().unwrap();
        assert_eq!((h.schema, h.sample_count, h.sample_sum, h.zero_count), (Some(6), Some(7), Some(5.0), Some(2)));
        // OTel's bucket 63, (2^(63/64), 2], is Prometheus' bucket 64 (named by its upper bound).
        assert_eq!(h.positive_span, vec![BucketSpan { offset: Some(64), length: Some(1) }]);
        assert_eq!(h.positive_delta, vec![4]);
        assert_eq!(h.negative_delta, vec![1]);
        assert_eq!(h.zero_threshold, Some(2f64.powi(-128)));
    }
}

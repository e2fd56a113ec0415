//! OTLP/HTTP push: metric families → an OTLP `ExportMetricsServiceRequest`
//! (protobuf, opentelemetry-proto types) POSTed to `<endpoint>/v1/metrics`.
//!
//! | [`MetricKind`] | OTLP                                                              |
//! |----------------|-------------------------------------------------------------------|
//! | Counter        | Sum, monotonic, delta (a closed window) or cumulative (a snapshot); event counts `as_int` |
//! | Gauge          | Gauge                                                             |
//! | Histogram      | Histogram with explicit bounds, the same for every point of a family (ebq's inclusive upper bounds are OTLP's `(prev, bound]` buckets exactly) |
//! | Summary        | Summary; count and sum are the sketch's own (the events it holds, their exact sum, kept in the kernel); a join of two streams' summary: the group's `COUNT(*)` and the `SUM` of the same argument when selected, else 0 (OTLP has no "unknown") |
//! | Exponential    | ExponentialHistogram at scale 6: the sketch's buckets as they are (offset and dense counts per sign, zero count), exact count and sum |
//!
//! Labels become data point attributes; the resource carries `host.name`,
//! `service.name = ebq`, `service.instance.id`, `service.version` and any
//! configured attributes. Names stay the Prometheus-style names of
//! [`super::naming`], so a collector feeding Prometheus shows the same series
//! as `ebq serve`'s `/metrics`.
//!
//! Transport is ureq, a blocking HTTP client without an async runtime (plain
//! `http://`; put a local collector or a TLS proxy in front for anything
//! else). The opentelemetry-otlp exporter is not used: it only accepts the
//! SDK's own aggregations, not ready-made windows. The same transport carries
//! the rows of an `otlp+http://` sink to `/v1/logs` ([`super::otlp_logs`]).

use super::metrics::{MetricFamily, MetricKind, Sample, SampleValue, Temporality};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::{
    exponential_histogram_data_point::Buckets, metric::Data, number_data_point, summary_data_point::ValueAtQuantile,
    AggregationTemporality, ExponentialHistogram, ExponentialHistogramDataPoint, Gauge, Histogram, HistogramDataPoint,
    Metric, NumberDataPoint, ResourceMetrics, ScopeMetrics, Sum, Summary, SummaryDataPoint,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;
use std::time::Duration;

/// The path metric pushes go to, below the endpoint.
pub const METRICS_PATH: &str = "/v1/metrics";
/// The path log records go to, below the endpoint.
pub const LOGS_PATH: &str = "/v1/logs";

/// Why a push failed. Returned, never panicked: an exporter reports it and
/// keeps tracing (the collector may come back).
#[derive(Debug, thiserror::Error)]
pub enum OtlpError {
    /// The endpoint is not a usable `http://host:port[/path]` URL.
    #[error("OTLP endpoint `{endpoint}`: {reason}")]
    Endpoint {
        /// The configured endpoint.
        endpoint: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Connecting, sending or reading the reply failed.
    #[error("OTLP push to {url}: {source}")]
    Io {
        /// The URL posted to.
        url: String,
        /// The failure.
        source: std::io::Error,
    },
    /// The receiver answered with a non-2xx status.
    #[error("OTLP push to {url}: HTTP {status}{}", if body.is_empty() { String::new() } else { format!(": {body}") })]
    Http {
        /// The URL posted to.
        url: String,
        /// HTTP status code.
        status: u16,
        /// The start of the reply body (the collector's reason), as text.
        body: String,
    },
}

/// Where and as whom to push.
#[derive(Debug, Clone, PartialEq)]
pub struct OtlpConfig {
    /// Base URL, e.g. `http://127.0.0.1:4318`; `/v1/metrics` (or `/v1/logs`
    /// for rows) is appended unless the URL already ends with it.
    pub endpoint: String,
    /// `host.name`: the caller reads it from the machine
    /// (`ebq_front::host::host_name`), so the exporter reads no file.
    pub host_name: String,
    /// `service.instance.id`; default `<host name>-<pid>`.
    pub instance_id: Option<String>,
    /// More resource attributes (`deployment.environment`, `cluster`, …); they
    /// override the defaults of the same key.
    pub resource: Vec<(String, String)>,
    /// Connect and I/O timeout per push.
    pub timeout: Duration,
}

impl OtlpConfig {
    /// A config for `endpoint`, pushing as host `host_name`, with the
    /// defaults (10 s timeout).
    pub fn new(endpoint: impl Into<String>, host_name: impl Into<String>) -> OtlpConfig {
        OtlpConfig {
            endpoint: endpoint.into(),
            host_name: host_name.into(),
            instance_id: None,
            resource: vec![],
            timeout: Duration::from_secs(10),
        }
    }

    /// The resource attributes sent with every push.
    pub fn resource_attributes(&self) -> Vec<(String, String)> {
        let host = &self.host_name;
        let mut attrs = vec![
            ("host.name".to_string(), host.clone()),
            ("service.name".to_string(), "ebq".to_string()),
            (
                "service.instance.id".to_string(),
                self.instance_id.clone().unwrap_or_else(|| format!("{host}-{}", std::process::id())),
            ),
            ("service.version".to_string(), env!("CARGO_PKG_VERSION").to_string()),
        ];
        for (k, v) in &self.resource {
            match attrs.iter_mut().find(|(key, _)| key == k) {
                Some(a) => a.1 = v.clone(),
                None => attrs.push((k.clone(), v.clone())),
            }
        }
        attrs
    }
}

/// One batch of families with the time range they cover (Unix ns).
#[derive(Debug, Clone, Copy)]
pub struct Batch<'a> {
    /// The families.
    pub families: &'a [MetricFamily],
    /// Delta (one closed window) or cumulative (running totals).
    pub temporality: Temporality,
    /// Start of the window (delta) or of the run (cumulative).
    pub start_unix_ns: u64,
    /// End of the window, or the snapshot time.
    pub time_unix_ns: u64,
}

pub(super) fn kv(k: &str, v: &str) -> KeyValue {
    KeyValue {
        key: k.to_string(),
        value: Some(AnyValue { value: Some(any_value::Value::StringValue(v.to_string())) }),
        ..Default::default()
    }
}

fn attributes(s: &Sample) -> Vec<KeyValue> {
    s.labels.iter().map(|(k, v)| kv(k, v)).collect()
}

/// One family as an OTLP metric; `None` when it has no samples.
fn metric(f: &MetricFamily, b: &Batch) -> Option<Metric> {
    if f.samples.is_empty() {
        return None;
    }
    let (start, time) = (b.start_unix_ns, b.time_unix_ns);
    let temporality = match b.temporality {
        Temporality::Delta => AggregationTemporality::Delta,
        Temporality::Cumulative => AggregationTemporality::Cumulative,
    } as i32;
    let number = |s: &Sample| {
        let v = match s.value {
            SampleValue::Number(v) => v,
            _ => f64::NAN,
        };
        // Counts are whole numbers; i64 holds any count a run can reach.
        let value = if f.integer && v.fract() == 0.0 && v.abs() < 9.2e18 {
            number_data_point::Value::AsInt(v as i64)
        } else {
            number_data_point::Value::AsDouble(v)
        };
        NumberDataPoint {
            attributes: attributes(s),
            start_time_unix_nano: start,
            time_unix_nano: time,
            value: Some(value),
            ..Default::default()
        }
    };
    let data = match f.kind {
        MetricKind::Counter => Data::Sum(Sum {
            data_points: f.samples.iter().map(number).collect(),
            aggregation_temporality: temporality,
            is_monotonic: true,
        }),
        MetricKind::Gauge => Data::Gauge(Gauge { data_points: f.samples.iter().map(number).collect() }),
        MetricKind::Histogram => Data::Histogram(Histogram {
            data_points: f.samples.iter().filter_map(|s| histogram_point(s, start, time)).collect(),
            aggregation_temporality: temporality,
        }),
        MetricKind::Summary => Data::Summary(Summary {
            data_points: f
                .samples
                .iter()
                .filter_map(|s| match &s.value {
                    SampleValue::Summary { quantiles, count, sum } => Some(SummaryDataPoint {
                        attributes: attributes(s),
                        start_time_unix_nano: start,
                        time_unix_nano: time,
                        count: count.unwrap_or(0),
                        sum: sum.unwrap_or(0.0),
                        quantile_values: quantiles
                            .iter()
                            .map(|&(quantile, value)| ValueAtQuantile { quantile, value })
                            .collect(),
                        ..Default::default()
                    }),
                    _ => None,
                })
                .collect(),
        }),
        MetricKind::Exponential => Data::ExponentialHistogram(ExponentialHistogram {
            data_points: f.samples.iter().filter_map(|s| exponential_point(s, start, time)).collect(),
            aggregation_temporality: temporality,
        }),
    };
    Some(Metric {
        name: f.name.clone(),
        description: f.help.clone(),
        unit: f.unit.map_or(String::new(), |u| u.ucum().to_string()),
        data: Some(data),
        ..Default::default()
    })
}

/// ebq buckets (inclusive upper bound, count; ascending; the last bound may
/// be +∞) → OTLP explicit bounds with one more (overflow) count.
fn histogram_point(s: &Sample, start: u64, time: u64) -> Option<HistogramDataPoint> {
    let SampleValue::Histogram { buckets, count, sum } = &s.value else { return None };
    let mut explicit_bounds = vec![];
    let mut bucket_counts = vec![];
    let mut overflow = 0;
    for &(le, n) in buckets {
        if le.is_finite() {
            explicit_bounds.push(le);
            bucket_counts.push(n);
        } else {
            overflow += n;
        }
    }
    bucket_counts.push(overflow);
    Some(HistogramDataPoint {
        attributes: attributes(s),
        start_time_unix_nano: start,
        time_unix_nano: time,
        count: *count,
        sum: *sum,
        bucket_counts,
        explicit_bounds,
        ..Default::default()
    })
}

/// Sparse bucket counts → OTLP's offset and dense counts (zeros between).
fn dense(counts: &std::collections::BTreeMap<i32, u64>) -> Option<Buckets> {
    let (&first, _) = counts.first_key_value()?;
    let (&last, _) = counts.last_key_value()?;
    let mut bucket_counts = vec![0u64; (last - first) as usize + 1];
    for (i, n) in counts {
        bucket_counts[(i - first) as usize] = *n;
    }
    Some(Buckets { offset: first, bucket_counts })
}

/// An ebq exponential histogram as an OTLP data point (zero threshold 0: the values are integers).
fn exponential_point(s: &Sample, start: u64, time: u64) -> Option<ExponentialHistogramDataPoint> {
    let SampleValue::Exponential(e) = &s.value else { return None };
    Some(ExponentialHistogramDataPoint {
        attributes: attributes(s),
        start_time_unix_nano: start,
        time_unix_nano: time,
        count: e.count,
        sum: Some(e.sum),
        scale: e.scale,
        zero_count: e.zero_count,
        positive: dense(&e.positive),
        negative: dense(&e.negative),
        ..Default::default()
    })
}

/// The OTLP resource of `attrs` ([`OtlpConfig::resource_attributes`]).
pub(super) fn resource(attrs: &[(String, String)]) -> Resource {
    Resource { attributes: attrs.iter().map(|(k, v)| kv(k, v)).collect(), ..Default::default() }
}

/// The instrumentation scope of everything ebq sends: `ebq` and its version.
pub(super) fn scope() -> InstrumentationScope {
    InstrumentationScope { name: "ebq".into(), version: env!("CARGO_PKG_VERSION").into(), ..Default::default() }
}

/// The request for `batches` under one resource (`config`'s attributes).
pub fn request(config: &OtlpConfig, batches: &[Batch]) -> ExportMetricsServiceRequest {
    let attrs = config.resource_attributes();
    let metrics = batches.iter().flat_map(|b| b.families.iter().filter_map(|f| metric(f, b))).collect();
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(resource(&attrs)),
            scope_metrics: vec![ScopeMetrics { scope: Some(scope()), metrics, schema_url: String::new() }],
            schema_url: String::new(),
        }],
    }
}

/// Converts and pushes `batches`; nothing is sent when no family has a sample.
pub fn push(config: &OtlpConfig, batches: &[Batch]) -> Result<(), OtlpError> {
    let req = request(config, batches);
    if req.resource_metrics[0].scope_metrics[0].metrics.is_empty() {
        return Ok(());
    }
    let url = signal_url(&config.endpoint, METRICS_PATH)?;
    post(&agent(config.timeout), &url, &req.encode_to_vec()).map(|_| ())
}

/// CLOCK_REALTIME in ns.
pub fn unix_now_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// A CLOCK_MONOTONIC time (ebq's window bounds) as Unix ns.
pub fn monotonic_to_unix_ns(mono_ns: u64) -> u64 {
    let offset = unix_now_ns() as i128 - crate::monotonic_ns() as i128;
    (mono_ns as i128 + offset).max(0) as u64
}

/// (start, end) in Unix ns of one output pushed with `temporality`: a time
/// window's own bounds for a delta; from `started_unix_ns` (the run's start)
/// for cumulative values and for windows without times (count windows, rows).
pub fn span_unix_ns(window: crate::WindowBounds, temporality: Temporality, started_unix_ns: u64) -> (u64, u64) {
    let (start, end) = match window {
        crate::WindowBounds::Time { start_ns, end_ns } => {
            (monotonic_to_unix_ns(start_ns), monotonic_to_unix_ns(end_ns))
        }
        _ => (started_unix_ns, unix_now_ns()),
    };
    (if temporality == Temporality::Cumulative { started_unix_ns } else { start }, end)
}

/// Pushes one output of a query (a closed window: delta; an `--interval`
/// snapshot: cumulative) together with the query's own counters `own`
/// (cumulative since `started_unix_ns`, e.g. [`super::self_families`]).
///
/// `windowless`: the query has no WINDOW, so its every output (snapshots and
/// the final result) covers the run from its start: all are sent as
/// cumulative, and one series never switches temporality.
pub fn push_output(
    config: &OtlpConfig,
    schema: &super::MetricSchema,
    out: &crate::Output,
    own: &[MetricFamily],
    started_unix_ns: u64,
    windowless: bool,
) -> Result<(), OtlpError> {
    let (temporality, families) = schema.families(out);
    let temporality = if windowless { Temporality::Cumulative } else { temporality };
    let now = unix_now_ns();
    let (start, end) = span_unix_ns(out.window, temporality, started_unix_ns);
    let batches = [
        Batch { families: &families, temporality, start_unix_ns: start, time_unix_ns: end },
        Batch {
            families: own,
            temporality: Temporality::Cumulative,
            start_unix_ns: started_unix_ns,
            time_unix_ns: now,
        },
    ];
    push(config, &batches)
}

/// `http://host:port/path` → (host:port, path ending in `signal`, e.g. [`METRICS_PATH`]).
fn split_endpoint(endpoint: &str, signal: &str) -> Result<(String, String), OtlpError> {
    let bad = |reason: &str| OtlpError::Endpoint { endpoint: endpoint.to_string(), reason: reason.to_string() };
    let rest = match endpoint.split_once("://") {
        Some(("http", rest)) => rest,
        Some(("https", _)) => {
            return Err(bad("https is not supported; push to a local collector over http (or a TLS proxy)"))
        }
        _ => return Err(bad("expected http://HOST:PORT, e.g. http://127.0.0.1:4318")),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
        None => (rest, ""),
    };
    if authority.is_empty() {
        return Err(bad("no host"));
    }
    let authority = if authority.rsplit_once(':').is_some_and(|(_, p)| p.chars().all(|c| c.is_ascii_digit()))
        && !authority.ends_with(']')
    {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    let path = if path.ends_with(signal) { path.to_string() } else { format!("{path}{signal}") };
    Ok((authority, path))
}

/// The URL a `signal` ([`METRICS_PATH`], [`LOGS_PATH`]) goes to under `endpoint`.
pub fn signal_url(endpoint: &str, signal: &str) -> Result<String, OtlpError> {
    split_endpoint(endpoint, signal).map(|(authority, path)| format!("http://{authority}{path}"))
}

/// Checks that `endpoint` is a usable URL (so a bad one fails at start, not
/// at the first window).
pub fn check_endpoint(endpoint: &str) -> Result<(), OtlpError> {
    split_endpoint(endpoint, METRICS_PATH).map(|_| ())
}

/// An HTTP client for OTLP pushes: `timeout` bounds each whole request
/// (connect, send, reply); statuses come back as statuses, not errors; idle
/// connections are kept for the next push (a collector keeps them open).
pub fn agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .user_agent(format!("ebq/{}", env!("CARGO_PKG_VERSION")))
        .build()
        .into()
}

/// POSTs a protobuf body to `url`; a 2xx reply is success, and its body (the
/// receiver's `Export…ServiceResponse`, up to 64 KiB) is returned.
pub fn post(agent: &ureq::Agent, url: &str, body: &[u8]) -> Result<Vec<u8>, OtlpError> {
    let io = |e: ureq::Error| OtlpError::Io { url: url.to_string(), source: e.into_io() };
    let mut reply = agent.post(url).header("Content-Type", "application/x-protobuf").send(body).map_err(io)?;
    let status = reply.status().as_u16();
    // Bounded: a status and a short reason (or a partial success) are enough.
    let text = reply.body_mut().with_config().limit(64 << 10).read_to_vec().unwrap_or_default();
    if (200..300).contains(&status) {
        return Ok(text);
    }
    let text = String::from_utf8_lossy(&text);
    Err(OtlpError::Http { url: url.to_string(), status, body: truncate(text.trim(), 300) })
}

fn truncate(s: &str, n: usize) -> String {
    let printable: String = s.chars().map(|c| if c.is_control() && c != '\n' { '.' } else { c }).collect();
    match printable.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &printable[..i]),
        None => printable,
    }
}

#[cfg(test)]
mod tests;

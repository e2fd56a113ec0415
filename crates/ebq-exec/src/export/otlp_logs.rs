//! Rows as OTLP log records: an `otlp+http://` sink POSTs them, as an
//! `ExportLogsServiceRequest` (protobuf), to `<endpoint>/v1/logs`.
//!
//! One [`LogRecord`] per row (a histogram row is one record, its buckets one
//! attribute), its columns typed attributes in SELECT order:
//!
//! | ebq value          | OTLP `AnyValue`                                                     |
//! |--------------------|---------------------------------------------------------------------|
//! | unsigned integer   | `int_value` (a value above `i64::MAX` as `string_value`: exact, not rounded) |
//! | signed integer     | `int_value`                                                         |
//! | float              | `double_value`                                                      |
//! | string             | `string_value`                                                      |
//! | boolean            | `bool_value`                                                        |
//! | histogram          | `array_value` of `kvlist_value` {`lo`, `hi`, `count`} per non-empty bucket, `lo` inclusive, `hi` exclusive |
//! | NULL               | an empty `AnyValue` (the key is there, without a value)             |
//!
//! Times: a row's `time` column (CLOCK_MONOTONIC) is its `time_unix_nano`,
//! converted with the run's one offset ([`crate::sink::wall_clock`], as the
//! file sinks' `time_wall`), and is not repeated as an attribute. A window's
//! result has the window's end as `time_unix_nano` and the bounds as
//! attributes `window_start` and `window_end` (Unix ns), a count window its
//! index as `window`. `observed_time_unix_nano` is when the record is sent.
//! The resource is the metrics push's ([`super::otlp::OtlpConfig::resource_attributes`]).

use super::otlp::{resource, scope};
use crate::sink::{cell, time_column, wall_clock};
use crate::{Output, Value, WindowBounds};
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, ArrayValue, KeyValue, KeyValueList};
pub use opentelemetry_proto::tonic::logs::v1::LogRecord;
use opentelemetry_proto::tonic::logs::v1::{ResourceLogs, ScopeLogs};

/// An ebq value as an OTLP attribute value.
pub fn any_value(v: Value) -> AnyValue {
    use any_value::Value as A;
    let value = match v {
        Value::U(u) => Some(i64::try_from(u).map_or_else(|_| A::StringValue(u.to_string()), A::IntValue)),
        Value::I(i) => Some(A::IntValue(i)),
        Value::F(f) => Some(A::DoubleValue(f)),
        Value::S(s) => Some(A::StringValue(s)),
        Value::B(b) => Some(A::BoolValue(b)),
        Value::Null => None,
        Value::Hist(buckets) => Some(A::ArrayValue(ArrayValue {
            values: buckets
                .iter()
                .filter(|b| b.count > 0)
                .map(|b| {
                    let int = |k: &str, v: i128| KeyValue {
                        key: k.to_string(),
                        value: Some(AnyValue {
                            value: Some(i64::try_from(v).map_or_else(|_| A::DoubleValue(v as f64), A::IntValue)),
                        }),
                        ..Default::default()
                    };
                    AnyValue {
                        value: Some(A::KvlistValue(KeyValueList {
                            values: vec![int("lo", b.lo), int("hi", b.hi), int("count", b.count.into())],
                        })),
                    }
                })
                .collect(),
        })),
    };
    AnyValue { value }
}

fn attribute(key: &str, v: Value) -> KeyValue {
    KeyValue { key: key.to_string(), value: Some(any_value(v)), ..Default::default() }
}

/// The rows of `o` as log records (`observed_time_unix_nano` left 0: the
/// sender sets it when it sends them).
pub fn log_records(o: &Output) -> Vec<LogRecord> {
    let clock = wall_clock();
    let unix = |mono: u64| clock.wall_ns(mono).max(0) as u64;
    let schema = o.batch.schema();
    let time = time_column(&schema);
    let (lead, window_time): (Vec<(&str, u64)>, u64) = match o.window {
        WindowBounds::Time { start_ns, end_ns } => {
            (vec![("window_start", unix(start_ns)), ("window_end", unix(end_ns))], unix(end_ns))
        }
        WindowBounds::Count { index } => (vec![("window", index)], 0),
        WindowBounds::Rows => (vec![], 0),
    };
    (0..o.batch.num_rows())
        .map(|row| {
            let mut attributes: Vec<KeyValue> = lead.iter().map(|&(k, v)| attribute(k, Value::U(v))).collect();
            let mut time_unix_nano = window_time;
            for (i, (field, col)) in schema.fields().iter().zip(o.batch.columns()).enumerate() {
                match (Some(i) == time, cell(col, row)) {
                    (true, Value::U(t)) => time_unix_nano = unix(t),
                    (_, v) => attributes.push(attribute(field.name(), v)),
                }
            }
            LogRecord { time_unix_nano, attributes, ..Default::default() }
        })
        .collect()
}

/// The request for `records` under the resource `attrs`, each record
/// observed at `observed_unix_ns`.
pub fn request(attrs: &[(String, String)], records: Vec<LogRecord>, observed_unix_ns: u64) -> ExportLogsServiceRequest {
    let log_records =
        records.into_iter().map(|r| LogRecord { observed_time_unix_nano: observed_unix_ns, ..r }).collect();
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: Some(resource(attrs)),
            scope_logs: vec![ScopeLogs { scope: Some(scope()), log_records, schema_url: String::new() }],
            schema_url: String::new(),
        }],
    }
}

/// The resource attributes of a sink's records: `config`'s, and for a run
/// scoped to a cgroup (`--cgroup PATH`) that group as `ebq.cgroup.path` and,
/// when its path names one, the container as `container.id` (configured
/// attributes of the same keys win).
pub fn resource_attributes(config: &super::otlp::OtlpConfig, cgroup: Option<&str>) -> Vec<(String, String)> {
    let mut attrs = config.resource_attributes();
    if let Some(path) = cgroup {
        let id = ebq_front::host::cgroups::container_id(path);
        let scope = [("ebq.cgroup.path", path.to_string()), ("container.id", id)];
        for (k, v) in scope.into_iter().filter(|(_, v)| !v.is_empty()) {
            if !attrs.iter().any(|(key, _)| key == k) {
                attrs.push((k.to_string(), v));
            }
        }
    }
    attrs
}

/// Rows the receiver refused in a 2xx reply (`partial_success`), at most
/// `sent`; 0 when the reply is empty or not an `ExportLogsServiceResponse`.
pub fn rejected(reply: &[u8], sent: u64) -> u64 {
    use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceResponse;
    use prost::Message;
    ExportLogsServiceResponse::decode(reply)
        .ok()
        .and_then(|r| r.partial_success)
        .map_or(0, |p| (p.rejected_log_records.max(0) as u64).min(sent))
}

#[cfg(test)]
mod tests;

//! Prometheus `/metrics`: the published families in the OpenMetrics text
//! format (prometheus-client's encoder), served by a small HTTP/1.1 server on
//! a std `TcpListener` thread (no HTTP framework: one GET route).
//!
//! Mapping of the neutral model ([`ebq::export`]):
//! - counters → `counter` (`…_total`), gauges → `gauge`;
//! - histograms → `histogram` (`_bucket{le=…}`, `_sum`, `_count`); ebq's
//!   histograms keep no sum, so `_sum` is `NaN` (use `_count` and buckets);
//! - summaries → a `gauge` family with a `quantile` label (prometheus-client
//!   0.25 has no summary type; PromQL reads it like a summary's quantiles).

use ebq::export::{MetricFamily, MetricKind, SampleValue, Unit};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit as PromUnit};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What one scrape shows: per query, its families (running totals) and ebq's own metrics.
#[derive(Debug, Default)]
pub struct Exposition {
    /// Query name → its published metric families.
    pub queries: BTreeMap<String, Vec<MetricFamily>>,
    /// ebq's own families (one sample per query, label `query`), merged by name at scrape time.
    pub own: BTreeMap<String, Vec<MetricFamily>>,
}

/// The shared exposition, read by the HTTP thread.
pub type Shared = Arc<Mutex<Exposition>>;

#[derive(Debug)]
struct EbqCollector(Shared);

/// Splits a model name into what prometheus-client wants: the name without
/// the `_total` it appends to counters and without the unit suffix it appends.
fn descriptor_parts(f: &MetricFamily) -> (String, Option<PromUnit>) {
    let mut name = f.name.clone();
    if f.kind == MetricKind::Counter {
        name = name.strip_suffix("_total").unwrap_or(&name).to_string();
    }
    let unit = f.unit.and_then(|u| {
        let suffix = format!("_{}", u.suffix());
        let stem = name.strip_suffix(&suffix)?.to_string();
        name = stem;
        Some(match u {
            Unit::Seconds => PromUnit::Seconds,
            Unit::Bytes => PromUnit::Bytes,
        })
    });
    (name, unit)
}

fn number(m: &mut MetricEncoder, counter: bool, v: &f64) -> Result<(), std::fmt::Error> {
    if counter {
        m.encode_counter::<prometheus_client::encoding::NoLabelSet, _, f64>(v, None)
    } else {
        m.encode_gauge(v)
    }
}

fn encode_family(encoder: &mut DescriptorEncoder, f: &MetricFamily) -> Result<(), std::fmt::Error> {
    let (name, unit) = descriptor_parts(f);
    let ty = match f.kind {
        MetricKind::Counter => MetricType::Counter,
        MetricKind::Gauge | MetricKind::Summary => MetricType::Gauge,
        MetricKind::Histogram => MetricType::Histogram,
    };
    let mut metric = encoder.encode_descriptor(&name, &f.help, unit.as_ref(), ty)?;
    for s in &f.samples {
        match &s.value {
            SampleValue::Number(v) => {
                let counter = f.kind == MetricKind::Counter;
                // No labels: the bare name (`name 5.0`, not `name{} 5.0`).
                if s.labels.is_empty() {
                    number(&mut metric, counter, v)?;
                } else {
                    number(&mut metric.encode_family(&s.labels)?, counter, v)?;
                }
            }
            SampleValue::Histogram { buckets, count, sum } => {
                let mut b = buckets.clone();
                if b.last().is_none_or(|l| l.0 != f64::INFINITY) {
                    b.push((f64::INFINITY, 0));
                }
                let sum = sum.unwrap_or(f64::NAN);
                let none = None::<&std::collections::HashMap<usize, _>>;
                if s.labels.is_empty() {
                    metric.encode_histogram::<prometheus_client::encoding::NoLabelSet>(sum, *count, &b, none)?;
                } else {
                    metric
                        .encode_family(&s.labels)?
                        .encode_histogram::<prometheus_client::encoding::NoLabelSet>(sum, *count, &b, none)?;
                }
            }
            SampleValue::Summary { quantiles } => {
                for (q, v) in quantiles {
                    let mut labels = s.labels.clone();
                    labels.push(("quantile".into(), q.to_string()));
                    metric.encode_family(&labels)?.encode_gauge(v)?;
                }
            }
        }
    }
    Ok(())
}

impl Collector for EbqCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let state = self.0.lock().map_err(|_| std::fmt::Error)?;
        for families in state.queries.values() {
            for f in families {
                encode_family(&mut encoder, f)?;
            }
        }
        // Own metrics: one family per name with every query's sample.
        let mut merged: BTreeMap<&str, MetricFamily> = BTreeMap::new();
        for families in state.own.values() {
            for f in families {
                merged
                    .entry(&f.name)
                    .or_insert_with(|| MetricFamily { samples: vec![], ..f.clone() })
                    .samples
                    .extend(f.samples.iter().cloned());
            }
        }
        for f in merged.values() {
            encode_family(&mut encoder, f)?;
        }
        Ok(())
    }
}

/// The text a scrape returns.
pub fn render(shared: &Shared) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(EbqCollector(shared.clone())));
    let mut out = String::new();
    if prometheus_client::encoding::text::encode(&mut out, &registry).is_err() {
        out = "# EOF\n".into();
    }
    out
}

/// Binds `addr` (before capabilities are dropped).
pub fn bind(addr: SocketAddr) -> Result<TcpListener, String> {
    TcpListener::bind(addr).map_err(|e| format!("error: cannot listen on {addr}: {e}"))
}

/// Serves `GET /metrics` on `listener` from a background thread.
pub fn serve(listener: TcpListener, shared: Shared) {
    std::thread::Builder::new()
        .name("ebq-metrics".into())
        .spawn(move || {
            for conn in listener.incoming().flatten() {
                // One scrape at a time: Prometheus scrapes rarely and a slow client only delays itself.
                let _ = answer(conn, &shared);
            }
        })
        .expect("spawn the /metrics thread");
}

fn answer(mut conn: TcpStream, shared: &Shared) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(5)))?;
    conn.set_write_timeout(Some(Duration::from_secs(10)))?;
    let mut req = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < 16 << 10 {
        let n = conn.read(&mut buf)?;
        if n == 0 {
            break;
        }
        req.extend_from_slice(&buf[..n]);
    }
    let line = String::from_utf8_lossy(&req);
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, ctype, body) = match (method, path) {
        ("GET", "/metrics") => ("200 OK", "application/openmetrics-text; version=1.0.0; charset=utf-8", render(shared)),
        ("GET", "/") => ("200 OK", "text/plain; charset=utf-8", "ebq serve: metrics at /metrics\n".to_string()),
        ("GET", _) => ("404 Not Found", "text/plain; charset=utf-8", "not found; try /metrics\n".to_string()),
        _ => ("405 Method Not Allowed", "text/plain; charset=utf-8", "only GET\n".to_string()),
    };
    write!(
        conn,
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    conn.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ebq::export::Sample;

    #[test]
    fn families_encode_as_openmetrics() {
        let shared = Shared::default();
        let labels = vec![("syscall".to_string(), "read".to_string())];
        shared.lock().unwrap().queries.insert(
            "q".into(),
            vec![
                MetricFamily {
                    name: "ebq_q_calls_total".into(),
                    help: "calls".into(),
                    unit: None,
                    kind: MetricKind::Counter,
                    samples: vec![Sample { labels: labels.clone(), value: SampleValue::Number(5.0) }],
                },
                MetricFamily {
                    name: "ebq_q_lat_seconds".into(),
                    help: "latency".into(),
                    unit: Some(Unit::Seconds),
                    kind: MetricKind::Histogram,
                    samples: vec![Sample {
                        labels: labels.clone(),
                        value: SampleValue::Histogram { buckets: vec![(0.5, 2), (1.5, 3)], count: 5, sum: None },
                    }],
                },
                MetricFamily {
                    name: "ebq_q_size_bytes".into(),
                    help: "sizes".into(),
                    unit: Some(Unit::Bytes),
                    kind: MetricKind::Summary,
                    samples: vec![Sample {
                        labels,
                        value: SampleValue::Summary { quantiles: vec![(0.5, 64.0), (0.99, 4096.0)] },
                    }],
                },
            ],
        );
        let text = render(&shared);
        for line in [
            "# TYPE ebq_q_calls counter",
            "ebq_q_calls_total{syscall=\"read\"} 5.0",
            "# TYPE ebq_q_lat_seconds histogram",
            "# UNIT ebq_q_lat_seconds seconds",
            "ebq_q_lat_seconds_bucket{le=\"0.5\",syscall=\"read\"} 2",
            "ebq_q_lat_seconds_bucket{le=\"1.5\",syscall=\"read\"} 5",
            "ebq_q_lat_seconds_bucket{le=\"+Inf\",syscall=\"read\"} 5",
            "ebq_q_lat_seconds_count{syscall=\"read\"} 5",
            "ebq_q_size_bytes{syscall=\"read\",quantile=\"0.99\"} 4096.0",
            "# EOF",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
        }
    }
}

//! The one place where results leave the daemon.
//!
//! Every closed window's metric families pass through
//! [`Publisher::window`]; ebq's own per-query metrics through
//! [`Publisher::own`]. Both feed the Prometheus exposition (running totals
//! from an [`Accumulator`] per query) and, with `[otlp]`, an OTLP/HTTP push:
//! each window as it closes (delta; running totals of queries without WINDOW
//! cumulative), ebq's own counters every `interval` (cumulative). A push that
//! fails is logged and counted per query and sink in
//! `ebq_export_failures_total{query,sink="otlp"}` (see [`export_failures_family`]).

use super::prom::Shared;
use ebq::export::otlp::{self, Batch, OtlpConfig};
use ebq::export::{self_families, Accumulator, MetricFamily, MetricKind, Sample, SampleValue, Temporality};
use ebq::sink::QueueCounts;
use ebq::{QueryStats, WindowBounds};
use std::collections::BTreeMap;

/// Per-query publishing state.
#[derive(Debug)]
struct Published {
    acc: Accumulator,
    windows: u64,
}

/// Publishes windows and ebq's own metrics.
#[derive(Debug)]
pub struct Publisher {
    prom: Shared,
    queries: BTreeMap<String, Published>,
    /// Errors per query name, kept across reloads (a counter must not reset
    /// because the query was replaced).
    errors: BTreeMap<String, u64>,
    reloads: (u64, u64),
    otlp: Option<Otlp>,
    /// Failed OTLP pushes per query name, kept across reloads and `[otlp]` changes.
    otlp_failures: BTreeMap<String, u64>,
}

/// The OTLP push: where, how often ebq's own counters go, and how pushes fared.
#[derive(Debug)]
struct Otlp {
    config: OtlpConfig,
    interval: std::time::Duration,
    started_unix_ns: u64,
    /// When each query's own counters were last pushed.
    own_pushed: BTreeMap<String, std::time::Instant>,
}

impl Publisher {
    /// A publisher feeding `prom`.
    pub fn new(prom: Shared) -> Publisher {
        Publisher {
            prom,
            queries: BTreeMap::new(),
            errors: BTreeMap::new(),
            reloads: (0, 0),
            otlp: None,
            otlp_failures: BTreeMap::new(),
        }
    }

    /// Every query of the file has been started once (attached, or failed and
    /// marked up = 0): `/metrics` stops answering 503.
    pub fn ready(&self) {
        if let Ok(mut p) = self.prom.lock() {
            p.ready = true;
        }
    }

    /// The main loop went round once more: `/healthz` stays 200 (see
    /// [`super::prom::STALLED_AFTER`]).
    pub fn heartbeat(&self) {
        if let Ok(mut p) = self.prom.lock() {
            p.heartbeat = Some(std::time::Instant::now());
        }
    }

    /// Sets (or, with `None`, stops) the OTLP push from the `[otlp]` table.
    pub fn set_otlp(&mut self, config: Option<&super::config::OtlpConfig>) {
        let started_unix_ns = self.otlp.as_ref().map_or_else(otlp::unix_now_ns, |o| o.started_unix_ns);
        self.otlp = config.map(|c| {
            let mut config = OtlpConfig::new(c.endpoint.clone(), ebq::host::host_name());
            config.resource = c.resource.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            Otlp { config, interval: c.interval, started_unix_ns, own_pushed: BTreeMap::new() }
        });
    }

    /// Pushes `families` over OTLP when configured; a failure is logged and
    /// counted (a collector may be restarting), never fatal.
    fn push(&mut self, query: &str, temporality: Temporality, families: &[MetricFamily], window: WindowBounds) {
        let Some(o) = &mut self.otlp else { return };
        let (start, end) = otlp::span_unix_ns(window, temporality, o.started_unix_ns);
        let batch = Batch { families, temporality, start_unix_ns: start, time_unix_ns: end };
        if let Err(e) = otlp::push(&o.config, &[batch]) {
            let failed = self.otlp_failures.entry(query.to_string()).or_insert(0);
            *failed += 1;
            eprintln!("ebq serve: query `{query}`: OTLP push failed ({failed} so far): {e}");
        }
    }

    /// A query (re)started: fresh totals bounded by `max_series`, each series
    /// kept until it has not been updated for `ttl`.
    pub fn start(&mut self, query: &str, max_series: usize, ttl: std::time::Duration) {
        self.queries.insert(query.to_string(), Published { acc: Accumulator::new(max_series, ttl), windows: 0 });
        self.errors.entry(query.to_string()).or_insert(0);
    }

    /// A query was removed: its series disappear from the next scrape.
    pub fn remove(&mut self, query: &str) {
        self.queries.remove(query);
        self.errors.remove(query);
        self.otlp_failures.remove(query);
        if let Ok(mut p) = self.prom.lock() {
            p.queries.remove(query);
            p.own.remove(query);
        }
    }

    /// One closed window (or, for a query without WINDOW, one running-total
    /// snapshot) of `query`, as families, with its bounds.
    pub fn window(&mut self, query: &str, temporality: Temporality, families: &[MetricFamily], window: WindowBounds) {
        let Some(q) = self.queries.get_mut(query) else { return };
        q.windows += 1;
        // Prometheus: running totals.
        q.acc.add(temporality, families);
        q.acc.expire(std::time::Instant::now());
        if let Ok(mut p) = self.prom.lock() {
            p.queries.insert(query.to_string(), q.acc.families().to_vec());
        }
        self.push(query, temporality, families, window);
    }

    /// Counts an error of `query` (failed start, failed poll).
    pub fn error(&mut self, query: &str) {
        *self.errors.entry(query.to_string()).or_insert(0) += 1;
    }

    /// Counts a reload, successful or not.
    pub fn reload(&mut self, ok: bool) {
        if ok {
            self.reloads.0 += 1;
        } else {
            self.reloads.1 += 1;
        }
        self.publish_reloads();
    }

    fn publish_reloads(&self) {
        if let Ok(mut p) = self.prom.lock() {
            p.own.insert(String::new(), vec![reload_family(self.reloads)]);
        }
    }

    /// ebq's own metrics of `query`: its event accounting (`stats`, when it
    /// is running), windows published, series held, refused and expired,
    /// errors, and whether it runs (`up`).
    /// `sinks`: the query's file sinks, rows written and dropped by each.
    pub fn own(&mut self, query: &str, stats: Option<&QueryStats>, sinks: &[(String, QueueCounts)]) {
        let mut counts = OwnCounts { errors: self.errors.get(query).copied().unwrap_or(0), ..OwnCounts::default() };
        if let Some(q) = self.queries.get_mut(query) {
            q.acc.expire(std::time::Instant::now());
            counts.windows = q.windows;
            counts.series = q.acc.series() as u64;
            counts.overflow = q.acc.overflow();
            counts.expired = q.acc.expired();
        }
        let mut fams = own_families(query, stats, &counts);
        if !sinks.is_empty() {
            fams.extend(sink_families(query, sinks));
        }
        let due = self.otlp.as_ref().is_some_and(|o| o.own_pushed.get(query).is_none_or(|t| t.elapsed() >= o.interval));
        if due {
            self.push(query, Temporality::Cumulative, &fams, WindowBounds::Rows);
            if let Some(o) = &mut self.otlp {
                o.own_pushed.insert(query.to_string(), std::time::Instant::now());
            }
        }
        if self.otlp.is_some() {
            let failed = self.otlp_failures.get(query).copied().unwrap_or(0);
            fams.push(export_failures_family(query, "otlp", failed));
        }
        if let Ok(mut p) = self.prom.lock() {
            p.own.insert(query.to_string(), fams);
        }
        self.publish_reloads();
    }
}

/// What the publisher counts per query, beside the query's own [`QueryStats`].
#[derive(Debug, Default, Clone, Copy)]
pub struct OwnCounts {
    /// Windows published.
    pub windows: u64,
    /// Series exported now.
    pub series: u64,
    /// Samples refused at `max_series`.
    pub overflow: u64,
    /// Series dropped after `series_ttl` without an update.
    pub expired: u64,
    /// Failed starts and reads.
    pub errors: u64,
}

/// ebq's own families of `query` (`stats` is `None` when it is not running).
/// `serve --check` lists their names from here, so a query cannot take one.
pub fn own_families(query: &str, stats: Option<&QueryStats>, counts: &OwnCounts) -> Vec<MetricFamily> {
    let mut fams = self_families(query, &stats.copied().unwrap_or_default(), counts.windows);
    let labels = vec![("query".to_string(), query.to_string())];
    let one = |name: &str, help: &str, kind, v: u64| MetricFamily {
        name: name.into(),
        help: help.into(),
        unit: None,
        kind,
        integer: true,
        samples: vec![Sample { labels: labels.clone(), value: SampleValue::Number(v as f64) }],
    };
    fams.push(one(
        "ebq_query_errors_total",
        "Errors of the query (failed start or read); it is not restarted.",
        MetricKind::Counter,
        counts.errors,
    ));
    fams.push(one(
        "ebq_query_series_overflow_total",
        "Samples not exported because the query reached max_series.",
        MetricKind::Counter,
        counts.overflow,
    ));
    fams.push(one(
        "ebq_query_series_expired_total",
        "Series dropped because no window updated them for series_ttl.",
        MetricKind::Counter,
        counts.expired,
    ));
    fams.push(one("ebq_query_series", "Series the query exports now.", MetricKind::Gauge, counts.series));
    fams.push(one(
        "ebq_query_up",
        "1 while the query runs, 0 after it failed.",
        MetricKind::Gauge,
        u64::from(stats.is_some()),
    ));
    fams
}

/// `ebq_export_failures_total{query, sink}`: pushes of `query`'s metrics to
/// `sink` (`otlp`) that failed (connection refused, timeout, a status other
/// than 2xx); what they carried is lost (the log says why).
pub fn export_failures_family(query: &str, sink: &str, failed: u64) -> MetricFamily {
    MetricFamily {
        name: "ebq_export_failures_total".into(),
        help: "Pushes of the query's metrics to a sink (otlp) that failed; their data is lost.".into(),
        unit: None,
        kind: MetricKind::Counter,
        integer: true,
        samples: vec![Sample {
            labels: vec![("query".into(), query.into()), ("sink".into(), sink.into())],
            value: SampleValue::Number(failed as f64),
        }],
    }
}

/// `ebq_sink_rows_written_total{query, sink}` and
/// `ebq_sink_rows_dropped_total{query, sink}`: rows of `query`'s windows each
/// of its `sinks` wrote, and dropped because its queue was full (a slow disk).
pub fn sink_families(query: &str, sinks: &[(String, QueueCounts)]) -> Vec<MetricFamily> {
    let family = |name: &str, help: &str, value: fn(&QueueCounts) -> u64| MetricFamily {
        name: name.into(),
        help: help.into(),
        unit: None,
        kind: MetricKind::Counter,
        integer: true,
        samples: sinks
            .iter()
            .map(|(sink, c)| Sample {
                labels: vec![("query".into(), query.into()), ("sink".into(), sink.clone())],
                value: SampleValue::Number(value(c) as f64),
            })
            .collect(),
    };
    let mut fams = vec![
        family(
            "ebq_sink_rows_written_total",
            "Rows of the query's windows a sink wrote (a file) or handed to its client (Kafka, OTLP).",
            |c| c.written,
        ),
        family(
            "ebq_sink_rows_dropped_total",
            "Rows of the query's windows a sink dropped because its queue (or its Kafka or OTLP client's) was full.",
            |c| c.dropped,
        ),
    ];
    // Kafka and OTLP sinks: what became of the rows they handed to their client.
    let brokered: Vec<(String, QueueCounts)> = sinks.iter().filter(|(_, c)| c.delivery.is_some()).cloned().collect();
    if !brokered.is_empty() {
        let delivery = |name: &str, help: &str, kind, value: fn(&ebq::sink::Delivery) -> u64| MetricFamily {
            name: name.into(),
            help: help.into(),
            unit: None,
            kind,
            integer: true,
            samples: brokered
                .iter()
                .map(|(sink, c)| Sample {
                    labels: vec![("query".into(), query.into()), ("sink".into(), sink.clone())],
                    value: SampleValue::Number(value(&c.delivery.unwrap_or_default()) as f64),
                })
                .collect(),
        };
        fams.push(delivery(
            "ebq_sink_rows_delivered_total",
            "Rows a Kafka sink's broker acknowledged (delivery reports), or an OTLP sink's receiver accepted (2xx).",
            MetricKind::Counter,
            |d| d.delivered,
        ));
        fams.push(delivery(
            "ebq_sink_rows_failed_total",
            "Rows whose delivery failed for good (Kafka: message timeout, refused topic; OTLP: a 4xx reply, rejected records).",
            MetricKind::Counter,
            |d| d.failed,
        ));
        fams.push(delivery(
            "ebq_sink_rows_queued",
            "Rows in a Kafka or OTLP sink's client queue, not yet acknowledged (lost if ebq exits before they are).",
            MetricKind::Gauge,
            |d| d.queued,
        ));
    }
    fams
}

/// `ebq_config_reloads_total{result="ok"|"error"}` from (ok, failed) reloads.
pub fn reload_family(reloads: (u64, u64)) -> MetricFamily {
    let sample = |result: &str, v: u64| Sample {
        labels: vec![("result".into(), result.into())],
        value: SampleValue::Number(v as f64),
    };
    MetricFamily {
        name: "ebq_config_reloads_total".into(),
        help: "Reloads of the configuration (SIGHUP, or reload_on_change saw the file change), by result.".into(),
        unit: None,
        kind: MetricKind::Counter,
        integer: true,
        samples: vec![sample("ok", reloads.0), sample("error", reloads.1)],
    }
}

//! The one place where results leave the daemon.
//!
//! Every closed window's metric families pass through
//! [`Publisher::window`]; ebq's own per-query metrics through
//! [`Publisher::own`]. Today both feed the Prometheus exposition (running
//! totals from an [`Accumulator`] per query). Another exporter (an OTLP push
//! with delta temporality, a pinned-map sampler) is added beside the
//! Prometheus lines in these two functions; it gets the same families.

use super::prom::Shared;
use ebq::export::{self_families, Accumulator, MetricFamily, MetricKind, Sample, SampleValue, Temporality};
use ebq::QueryStats;
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
}

impl Publisher {
    /// A publisher feeding `prom`.
    pub fn new(prom: Shared) -> Publisher {
        Publisher { prom, queries: BTreeMap::new(), errors: BTreeMap::new(), reloads: (0, 0) }
    }

    /// A query (re)started: fresh totals bounded by `max_series`.
    pub fn start(&mut self, query: &str, max_series: usize) {
        self.queries.insert(query.to_string(), Published { acc: Accumulator::new(max_series), windows: 0 });
        self.errors.entry(query.to_string()).or_insert(0);
    }

    /// A query was removed: its series disappear from the next scrape.
    pub fn remove(&mut self, query: &str) {
        self.queries.remove(query);
        self.errors.remove(query);
        if let Ok(mut p) = self.prom.lock() {
            p.queries.remove(query);
            p.own.remove(query);
        }
    }

    /// One closed window (or, for a query without WINDOW, one running-total
    /// snapshot) of `query`, as families.
    pub fn window(&mut self, query: &str, temporality: Temporality, families: &[MetricFamily]) {
        let Some(q) = self.queries.get_mut(query) else { return };
        q.windows += 1;
        // Prometheus: running totals.
        q.acc.add(temporality, families);
        if let Ok(mut p) = self.prom.lock() {
            p.queries.insert(query.to_string(), q.acc.families().to_vec());
        }
        // (An OTLP exporter pushes `families` with `temporality` here.)
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
        let reloads = |result: &str, v: u64| Sample {
            labels: vec![("result".into(), result.into())],
            value: SampleValue::Number(v as f64),
        };
        if let Ok(mut p) = self.prom.lock() {
            p.own.insert(
                String::new(),
                vec![MetricFamily {
                    name: "ebq_config_reloads_total".into(),
                    help: "SIGHUP reloads of the configuration, by result.".into(),
                    unit: None,
                    kind: MetricKind::Counter,
                    samples: vec![reloads("ok", self.reloads.0), reloads("error", self.reloads.1)],
                }],
            );
        }
    }

    /// ebq's own metrics of `query`: its event accounting (`stats`, when it
    /// is running), windows published, series held and refused, errors, and
    /// whether it runs (`up`).
    pub fn own(&mut self, query: &str, stats: Option<&QueryStats>) {
        let (windows, series, overflow) =
            self.queries.get(query).map_or((0, 0, 0), |q| (q.windows, q.acc.series() as u64, q.acc.overflow()));
        let mut fams = self_families(query, &stats.copied().unwrap_or_default(), windows);
        let labels = vec![("query".to_string(), query.to_string())];
        let one = |name: &str, help: &str, kind, v: f64| MetricFamily {
            name: name.into(),
            help: help.into(),
            unit: None,
            kind,
            samples: vec![Sample { labels: labels.clone(), value: SampleValue::Number(v) }],
        };
        let errors = self.errors.get(query).copied().unwrap_or(0);
        fams.push(one(
            "ebq_query_errors_total",
            "Errors of the query (failed start or read); it is not restarted.",
            MetricKind::Counter,
            errors as f64,
        ));
        fams.push(one(
            "ebq_query_series_overflow_total",
            "Samples not exported because the query reached max_series.",
            MetricKind::Counter,
            overflow as f64,
        ));
        fams.push(one("ebq_query_series", "Series the query exports now.", MetricKind::Gauge, series as f64));
        fams.push(one(
            "ebq_query_up",
            "1 while the query runs, 0 after it failed.",
            MetricKind::Gauge,
            f64::from(u8::from(stats.is_some())),
        ));
        if let Ok(mut p) = self.prom.lock() {
            p.own.insert(query.to_string(), fams);
        }
        self.publish_reloads();
    }
}

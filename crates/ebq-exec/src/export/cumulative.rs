//! Per-window deltas → running totals, with a bound on series.
//!
//! Prometheus expects counters and histograms (exponential ones included) to only grow (`rate()` does
//! the differencing), so an exporter adds each closed window's deltas to
//! what it has. Gauges and summaries describe the latest window and replace
//! the previous one (a group that did not occur in the latest window has no
//! gauge value; its counters stay).
//!
//! Every group is a series, and a GROUP BY over file names or pids can have
//! very many; each query's accumulator holds at most `max_series`. A sample
//! that would create a series beyond that is not kept and is counted in
//! [`Accumulator::overflow`] (exported as `ebq_query_series_overflow_total`),
//! so a truncated export is never silent.
//!
//! A series whose group stops occurring (a process that exited, a file
//! closed for good) would otherwise hold its place forever, and a daemon
//! grouping by pid would fill `max_series` and stop showing new groups. A
//! series not updated for the accumulator's `ttl` is dropped
//! ([`Accumulator::expire`]) and counted in [`Accumulator::expired`]
//! (`ebq_query_series_expired_total`); if its group comes back, its counters
//! start again from that window (Prometheus' `rate()` treats it as a reset).

use super::metrics::{MetricFamily, MetricKind, Sample, SampleValue, Temporality};
use std::collections::HashMap;
use std::time::{Duration, Instant};

type Labels = Vec<(String, String)>;

/// Running totals of one query's families.
#[derive(Debug, Clone)]
pub struct Accumulator {
    max_series: usize,
    /// Families in first-seen order, each with its series.
    families: Vec<MetricFamily>,
    /// Family name → index in `families`.
    index: HashMap<String, usize>,
    /// Per family: labels → index in its `samples` (a window can have
    /// thousands of groups; lookups stay O(1)).
    series_index: Vec<HashMap<Labels, usize>>,
    /// Per family, per sample: when a window last brought a value for it.
    updated: Vec<Vec<Instant>>,
    series: usize,
    overflow: u64,
    ttl: Duration,
    expired: u64,
}

impl Accumulator {
    /// An empty accumulator keeping at most `max_series` series, each until
    /// it has not been updated for `ttl`.
    pub fn new(max_series: usize, ttl: Duration) -> Accumulator {
        Accumulator {
            max_series,
            families: vec![],
            index: HashMap::new(),
            series_index: vec![],
            updated: vec![],
            series: 0,
            overflow: 0,
            ttl,
            expired: 0,
        }
    }

    /// Series dropped because they were not updated for `ttl`, since creation.
    pub fn expired(&self) -> u64 {
        self.expired
    }

    /// Drops the series not updated since `now − ttl`; returns how many.
    pub fn expire(&mut self, now: Instant) -> u64 {
        let Some(cutoff) = now.checked_sub(self.ttl) else { return 0 };
        let mut dropped = 0;
        for i in 0..self.families.len() {
            let updated = &self.updated[i];
            if updated.iter().all(|&t| t >= cutoff) {
                continue;
            }
            let keep: Vec<bool> = updated.iter().map(|&t| t >= cutoff).collect();
            let mut k = keep.iter();
            self.families[i].samples.retain(|_| *k.next().expect("one flag per sample"));
            self.updated[i].retain(|&t| t >= cutoff);
            let index = &mut self.series_index[i];
            index.clear();
            for (j, s) in self.families[i].samples.iter().enumerate() {
                index.insert(s.labels.clone(), j);
            }
            dropped += keep.iter().filter(|k| !**k).count() as u64;
        }
        self.series -= dropped as usize;
        self.expired += dropped;
        dropped
    }

    /// Samples refused because the series bound was reached, since creation.
    pub fn overflow(&self) -> u64 {
        self.overflow
    }

    /// Series held now.
    pub fn series(&self) -> usize {
        self.series
    }

    /// The running totals (counters, histograms) and latest values (gauges, summaries).
    pub fn families(&self) -> &[MetricFamily] {
        &self.families
    }

    /// Adds one batch of families (one window, or one snapshot), received now.
    pub fn add(&mut self, temporality: Temporality, batch: &[MetricFamily]) {
        self.add_at(temporality, batch, Instant::now());
    }

    /// [`Accumulator::add`] at time `now`.
    pub fn add_at(&mut self, temporality: Temporality, batch: &[MetricFamily], now: Instant) {
        for fam in batch {
            let i = match self.index.get(&fam.name) {
                Some(&i) => i,
                None => {
                    self.families.push(MetricFamily { samples: vec![], ..fam.clone() });
                    self.series_index.push(HashMap::new());
                    self.updated.push(vec![]);
                    self.index.insert(fam.name.clone(), self.families.len() - 1);
                    self.families.len() - 1
                }
            };
            let accumulate = temporality == Temporality::Delta
                && matches!(fam.kind, MetricKind::Counter | MetricKind::Histogram | MetricKind::Exponential);
            if !accumulate {
                // Latest values replace the family's series.
                self.series -= self.families[i].samples.len();
                self.families[i].samples.clear();
                self.series_index[i].clear();
                self.updated[i].clear();
            }
            for s in &fam.samples {
                self.add_sample(i, s, accumulate, now);
            }
        }
    }

    fn add_sample(&mut self, family: usize, s: &Sample, accumulate: bool, now: Instant) {
        match self.series_index[family].get(&s.labels) {
            Some(&j) => {
                let held = &mut self.families[family].samples[j].value;
                if accumulate {
                    add_value(held, &s.value);
                } else {
                    *held = s.value.clone();
                }
                self.updated[family][j] = now;
            }
            None if self.series >= self.max_series => self.overflow += 1,
            None => {
                let samples = &mut self.families[family].samples;
                self.series_index[family].insert(s.labels.clone(), samples.len());
                samples.push(s.clone());
                self.updated[family].push(now);
                self.series += 1;
            }
        }
    }
}

/// `held += delta` for numbers and histograms (buckets merged by bound).
fn add_value(held: &mut SampleValue, delta: &SampleValue) {
    match (held, delta) {
        (SampleValue::Number(a), SampleValue::Number(b)) => *a += b,
        (
            SampleValue::Histogram { buckets, count, sum },
            SampleValue::Histogram { buckets: db, count: dc, sum: ds },
        ) => {
            for (le, n) in db {
                match buckets.iter_mut().find(|b| b.0 == *le) {
                    Some(b) => b.1 += n,
                    None => buckets.push((*le, *n)),
                }
            }
            buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
            *count += dc;
            *sum = match (*sum, ds) {
                (Some(a), Some(b)) => Some(a + b),
                _ => None,
            };
        }
        (SampleValue::Exponential(a), SampleValue::Exponential(b)) => a.add(b),
        (held, delta) => *held = delta.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fam(name: &str, kind: MetricKind, samples: Vec<(&str, SampleValue)>) -> MetricFamily {
        MetricFamily {
            name: name.into(),
            help: String::new(),
            unit: None,
            kind,
            integer: false,
            samples: samples
                .into_iter()
                .map(|(l, value)| Sample { labels: vec![("k".into(), l.into())], value })
                .collect(),
        }
    }

    #[test]
    fn counters_add_gauges_replace() {
        let mut acc = Accumulator::new(100, Duration::from_secs(600));
        let n = SampleValue::Number;
        acc.add(Temporality::Delta, &[fam("c_total", MetricKind::Counter, vec![("a", n(3.0)), ("b", n(1.0))])]);
        acc.add(Temporality::Delta, &[fam("g", MetricKind::Gauge, vec![("a", n(7.0)), ("b", n(1.0))])]);
        acc.add(Temporality::Delta, &[fam("c_total", MetricKind::Counter, vec![("a", n(4.0))])]);
        acc.add(Temporality::Delta, &[fam("g", MetricKind::Gauge, vec![("a", n(2.0))])]);
        let c = &acc.families()[0];
        assert_eq!(c.samples.len(), 2);
        assert_eq!(c.samples[0].value, n(7.0));
        assert_eq!(c.samples[1].value, n(1.0));
        let g = &acc.families()[1];
        assert_eq!(g.samples.len(), 1, "b did not occur in the latest window");
        assert_eq!(g.samples[0].value, n(2.0));
        assert_eq!(acc.series(), 3);
        // A cumulative snapshot sets counters instead of adding.
        acc.add(Temporality::Cumulative, &[fam("c_total", MetricKind::Counter, vec![("a", n(5.0))])]);
        assert_eq!(acc.families()[0].samples, vec![Sample { labels: vec![("k".into(), "a".into())], value: n(5.0) }]);
        assert_eq!(acc.series(), 2);
        // A freed series can be taken again.
        acc.add(Temporality::Delta, &[fam("c_total", MetricKind::Counter, vec![("b", n(1.0))])]);
        assert_eq!(acc.families()[0].samples[1].value, n(1.0));
    }

    #[test]
    fn histograms_merge_buckets_by_bound() {
        let mut acc = Accumulator::new(100, Duration::from_secs(600));
        let h = |buckets: Vec<(f64, u64)>| {
            let count = buckets.iter().map(|b| b.1).sum();
            SampleValue::Histogram { buckets, count, sum: None }
        };
        acc.add(Temporality::Delta, &[fam("h", MetricKind::Histogram, vec![("a", h(vec![(1.0, 2), (3.0, 1)]))])]);
        acc.add(Temporality::Delta, &[fam("h", MetricKind::Histogram, vec![("a", h(vec![(0.0, 1), (3.0, 4)]))])]);
        assert_eq!(acc.families()[0].samples[0].value, h(vec![(0.0, 1), (1.0, 2), (3.0, 5)]));
    }

    #[test]
    fn series_beyond_the_bound_are_counted_not_kept() {
        let mut acc = Accumulator::new(2, Duration::from_secs(600));
        let n = SampleValue::Number;
        acc.add(
            Temporality::Delta,
            &[fam("c_total", MetricKind::Counter, vec![("a", n(1.0)), ("b", n(1.0)), ("c", n(1.0))])],
        );
        assert_eq!(acc.series(), 2);
        assert_eq!(acc.overflow(), 1);
        // Existing series still accumulate at the bound.
        acc.add(Temporality::Delta, &[fam("c_total", MetricKind::Counter, vec![("a", n(1.0)), ("d", n(1.0))])]);
        assert_eq!(acc.families()[0].samples[0].value, n(2.0));
        assert_eq!(acc.overflow(), 2);
    }

    #[test]
    fn series_not_updated_for_the_ttl_expire_and_are_counted() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut acc = Accumulator::new(2, Duration::from_secs(60));
        let n = SampleValue::Number;
        acc.add_at(
            Temporality::Delta,
            &[fam("c_total", MetricKind::Counter, vec![("a", n(1.0)), ("b", n(1.0))])],
            at(0),
        );
        acc.add_at(Temporality::Delta, &[fam("c_total", MetricKind::Counter, vec![("a", n(2.0))])], at(50));
        assert_eq!(acc.expire(at(59)), 0);
        assert_eq!(acc.expire(at(61)), 1, "b was last updated 61 s ago");
        assert_eq!(acc.expired(), 1);
        assert_eq!(acc.series(), 1);
        assert_eq!(acc.families()[0].samples, vec![Sample { labels: vec![("k".into(), "a".into())], value: n(3.0) }]);
        // The freed place takes a new series; a returning group starts again.
        acc.add_at(
            Temporality::Delta,
            &[fam("c_total", MetricKind::Counter, vec![("c", n(5.0)), ("a", n(1.0))])],
            at(70),
        );
        assert_eq!(acc.series(), 2);
        assert_eq!(acc.overflow(), 0);
        assert_eq!(acc.families()[0].samples[0].value, n(4.0));
        assert_eq!(acc.expire(at(200)), 2);
        assert_eq!((acc.series(), acc.expired()), (0, 3));
    }
}

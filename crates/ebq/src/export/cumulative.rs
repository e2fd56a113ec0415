//! Per-window deltas → running totals, with a bound on series.
//!
//! Prometheus expects counters and histograms to only grow (`rate()` does
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

use super::metrics::{MetricFamily, MetricKind, Sample, SampleValue, Temporality};
use std::collections::BTreeMap;

type Labels = Vec<(String, String)>;

/// Running totals of one query's families.
#[derive(Debug, Clone)]
pub struct Accumulator {
    max_series: usize,
    /// Family name → (help, unit, kind, series by labels) in first-seen order.
    families: Vec<MetricFamily>,
    index: BTreeMap<String, usize>,
    overflow: u64,
}

impl Accumulator {
    /// An empty accumulator keeping at most `max_series` series.
    pub fn new(max_series: usize) -> Accumulator {
        Accumulator { max_series, families: vec![], index: BTreeMap::new(), overflow: 0 }
    }

    /// Samples refused because the series bound was reached, since creation.
    pub fn overflow(&self) -> u64 {
        self.overflow
    }

    /// Series held now.
    pub fn series(&self) -> usize {
        self.families.iter().map(|f| f.samples.len()).sum()
    }

    /// The running totals (counters, histograms) and latest values (gauges, summaries).
    pub fn families(&self) -> &[MetricFamily] {
        &self.families
    }

    /// Adds one batch of families (one window, or one snapshot).
    pub fn add(&mut self, temporality: Temporality, batch: &[MetricFamily]) {
        for fam in batch {
            let i = match self.index.get(&fam.name) {
                Some(&i) => i,
                None => {
                    self.families.push(MetricFamily { samples: vec![], ..fam.clone() });
                    self.index.insert(fam.name.clone(), self.families.len() - 1);
                    self.families.len() - 1
                }
            };
            let accumulate =
                temporality == Temporality::Delta && matches!(fam.kind, MetricKind::Counter | MetricKind::Histogram);
            if !accumulate {
                // Latest values replace the family's series.
                self.families[i].samples.clear();
            }
            for s in &fam.samples {
                self.add_sample(i, s, accumulate);
            }
        }
    }

    fn add_sample(&mut self, family: usize, s: &Sample, accumulate: bool) {
        let existing = self.families[family].samples.iter().position(|x| x.labels == s.labels);
        match existing {
            Some(j) if accumulate => {
                let held = &mut self.families[family].samples[j].value;
                add_value(held, &s.value);
            }
            Some(j) => self.families[family].samples[j].value = s.value.clone(),
            None if self.series() >= self.max_series => self.overflow += 1,
            None => self.families[family].samples.push(s.clone()),
        }
    }

    /// Drops every series of `labels` in every family (not needed by
    /// Prometheus; offered to exporters that expire idle groups).
    pub fn forget(&mut self, labels: &Labels) {
        for f in &mut self.families {
            f.samples.retain(|s| &s.labels != labels);
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
            samples: samples
                .into_iter()
                .map(|(l, value)| Sample { labels: vec![("k".into(), l.into())], value })
                .collect(),
        }
    }

    #[test]
    fn counters_add_gauges_replace() {
        let mut acc = Accumulator::new(100);
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
        // A cumulative snapshot sets counters instead of adding.
        acc.add(Temporality::Cumulative, &[fam("c_total", MetricKind::Counter, vec![("a", n(5.0))])]);
        assert_eq!(acc.families()[0].samples, vec![Sample { labels: vec![("k".into(), "a".into())], value: n(5.0) }]);
    }

    #[test]
    fn histograms_merge_buckets_by_bound() {
        let mut acc = Accumulator::new(100);
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
        let mut acc = Accumulator::new(2);
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
}

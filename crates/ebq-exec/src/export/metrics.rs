//! The metric model: one closed window of an aggregate query as metric families.
//!
//! Column roles come from the plan, not from guessing at values:
//!
//! | output column                          | role                                     |
//! |----------------------------------------|------------------------------------------|
//! | a GROUP BY key (or an expression of keys only, e.g. `syscall_name(id)`) | label |
//! | `COUNT(*)`, `SUM(unsigned)`            | counter (`_total`)                        |
//! | `MIN`, `MAX`, `AVG`, `COUNT(DISTINCT)`, `SUM(signed)`, other expressions | gauge |
//! | `HIST`, `LHIST`                        | histogram (buckets with inclusive upper bounds) |
//! | `QUANTILE`/`P50`… of one argument      | one summary (all its quantiles); a signed argument's: one gauge per column |
//!
//! No name ebq makes carries a metric type word (`counter`, `gauge`,
//! `histogram`, `summary`: `promtool check metrics` refuses them on a text
//! page). When a summary would take the name of another family of the query
//! (`HIST(x) AS size_bytes` and `P99(x) AS p99_size_bytes` share the base
//! `size_bytes`), the other family keeps it and the summary is called
//! `…_quantiles[_<unit>]` (`ebq_q_size_quantiles_bytes`).
//!
//! Histograms and quantile sketches carry their exact sum: the kernel sums
//! every histogram's and sketch's argument beside its buckets (a hidden `SUM`
//! slot, see [`ebq_front::plan::Distribution`]) and the window's rows bring those
//! sums and the whole sketches in [`Output::extras`]. A histogram's count is
//! the sum of its buckets; a summary's count and sum are the sketch's own
//! (the events it holds). Only a join of two streams, which aggregates in
//! user space, has no extras: there a summary's count is the group's
//! `COUNT(*)` and its sum the `SUM` of the same unsigned argument when the
//! query selects them, else unknown (`None`) and left out, never made up.
//!
//! Each quantile sketch is also exported whole, as an [`MetricKind::Exponential`]
//! family `…_histogram[_<unit>]`: OTel ExponentialHistogram / Prometheus
//! native histogram buckets at scale 6, the sketch's own buckets with no
//! re-bucketing, so a fleet's sketches merge exactly in Prometheus
//! (`histogram_quantile(0.99, sum(rate(…)))`) or a collector. The bucket grid
//! survives a unit change only by a power of two (KiB → bytes shifts the
//! index by 640); a sketch in a decimal unit (`_us`, `_ms`, `_ns`, whose
//! summary is scaled to seconds) is exported in its own unit, named in the
//! family (`p99_lat_us` → `ebq_q_lat_us_histogram`), so it stays lossless.
//!
//! A closed window's values are **deltas** ([`Temporality::Delta`]): counters
//! and histograms hold what happened in that window, gauges the window's
//! value. A query without WINDOW that is sampled every `interval` gives
//! running totals instead ([`Temporality::Cumulative`]). Exporters that need
//! running totals (Prometheus) feed deltas through
//! [`Accumulator`](super::Accumulator); delta-capable ones (OTLP with delta
//! temporality) can send them as they are.
//!
//! Histogram buckets are ebq's `[lo, hi)` buckets of integers, so the
//! inclusive upper bound is `hi − 1` (exact: a value `v` is in the bucket
//! iff `v ≤ hi − 1`), scaled to the base unit; the top bucket's bound is +∞.
//! Every sample of a histogram family has the same buckets ([`HistLayout`]).

use super::layout::HistLayout;
use super::naming::{label_name, metric_name, scaled, snake, Unit};
use crate::sink::{cell, text};
use crate::{Output, QueryStats, Value};
use ebq_front::bind::{AggFunc, Input, PostExpr};
use ebq_front::hist::Log2;
use ebq_front::plan::{Distribution, KernelOutput, PhysicalPlan, UserSource};

/// The Prometheus / OpenMetrics metric types ebq produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetricKind {
    /// Monotonic within a run: event counts, sums of unsigned values.
    Counter,
    /// A value that can go up and down: min, max, averages, expressions.
    Gauge,
    /// Bucket counts of a HIST/LHIST column.
    Histogram,
    /// Quantiles of one argument.
    Summary,
    /// A quantile sketch's buckets as an exponential histogram (OTel
    /// ExponentialHistogram, Prometheus native histogram): only the OTLP
    /// push and the protobuf exposition carry it.
    Exponential,
}

/// How the values of a batch of families relate to earlier ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Temporality {
    /// What happened in one closed window (counters, histograms) and the
    /// window's own value (gauges).
    Delta,
    /// Running totals since the query started.
    Cumulative,
}

/// One sample's value.
#[derive(Debug, Clone, PartialEq)]
pub enum SampleValue {
    /// A counter or gauge value, in the family's base unit.
    Number(f64),
    /// Histogram buckets, **not** cumulative: `(inclusive upper bound, count
    /// of values in this bucket)` in ascending bound order; the last bound
    /// may be +∞. `count` is the sum of the bucket counts.
    Histogram {
        /// Buckets in ascending order of their upper bound.
        buckets: Vec<(f64, u64)>,
        /// Values observed.
        count: u64,
        /// Sum of the values, when known (from a `SUM` of the same argument).
        sum: Option<f64>,
    },
    /// Quantiles: `(q in 0..=1, value in the base unit)`, ascending q.
    Summary {
        /// The quantiles.
        quantiles: Vec<(f64, f64)>,
        /// Values observed (the group's `COUNT(*)`), when the query has it.
        count: Option<u64>,
        /// Sum of the values (a `SUM` of the same argument), when the query has it.
        sum: Option<f64>,
    },
    /// An exponential histogram, **not** cumulative across buckets.
    Exponential(Exponential),
}

/// Exponential buckets as OTel's ExponentialHistogram and Prometheus' native
/// histograms have them: bucket `i` of `positive` holds values in
/// `(2^(i·2^−scale), 2^((i+1)·2^−scale)]`, of `negative` their negations; 0
/// is in the zero bucket (threshold 0: ebq's values are integers).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Exponential {
    /// OTel `scale` = Prometheus `schema`.
    pub scale: i32,
    /// Values equal to 0.
    pub zero_count: u64,
    /// Bucket index → count, for positive values (only non-zero counts).
    pub positive: std::collections::BTreeMap<i32, u64>,
    /// Bucket index → count, for the magnitudes of negative values.
    pub negative: std::collections::BTreeMap<i32, u64>,
    /// Values observed (every bucket's count, the zero bucket's included).
    pub count: u64,
    /// Exact sum of the values, in the family's base unit.
    pub sum: f64,
}

impl Exponential {
    /// A sketch's buckets (`[lo, hi)` integer ranges as [`ebq_front::hist::sketch_bounds`]
    /// gives them) and exact `sum`, in a unit `2^shift` times the argument's.
    pub fn of_sketch(buckets: &[ebq_front::hist::Bucket], sum: f64, shift: i32) -> Exponential {
        let mut e = Exponential { scale: ebq_front::hist::SKETCH_SCALE, sum, ..Default::default() };
        let per_octave = 1i32 << ebq_front::hist::SKETCH_SCALE;
        for b in buckets.iter().filter(|b| b.count > 0) {
            let code = if b.lo < 0 {
                ebq_front::hist::sketch_index_signed(b.lo as i64)
            } else {
                ebq_front::hist::sketch_index(b.lo as u64)
            };
            match ebq_front::hist::sketch_otel(code) {
                None => e.zero_count += b.count,
                Some((false, i)) => *e.positive.entry(i + shift * per_octave).or_default() += b.count,
                Some((true, i)) => *e.negative.entry(i + shift * per_octave).or_default() += b.count,
            }
            e.count += b.count;
        }
        e
    }

    /// A `HIST` planned with [`ebq_front::hist::Log2::Ceil`] over an unsigned
    /// argument: its buckets are exactly the scale-0 buckets, `{0}` and
    /// `(2^(n−1), 2^n]` (`[2^(n−1) + 1, 2^n + 1)` as integer ranges), so the
    /// counts carry over one for one, in a unit `2^shift` times the argument's.
    pub fn of_log2_ceil(buckets: &[ebq_front::hist::Bucket], sum: f64, shift: i32) -> Exponential {
        let mut e = Exponential { scale: 0, sum, ..Default::default() };
        for b in buckets.iter().filter(|b| b.count > 0) {
            if b.hi <= 1 {
                e.zero_count += b.count;
            } else {
                // Ceil bucket j ≥ 1 (found from its top value) is (2^(j−2), 2^(j−1)]: OTel's index j − 2.
                let j = Log2::Ceil.index((b.hi - 1) as u64) as i32;
                *e.positive.entry(j - 2 + shift).or_default() += b.count;
            }
            e.count += b.count;
        }
        e
    }

    /// Adds `other`'s counts and sum (same scale).
    pub fn add(&mut self, other: &Exponential) {
        self.zero_count += other.zero_count;
        for (i, n) in &other.positive {
            *self.positive.entry(*i).or_default() += n;
        }
        for (i, n) in &other.negative {
            *self.negative.entry(*i).or_default() += n;
        }
        self.count += other.count;
        self.sum += other.sum;
    }
}

/// One labelled series of a family.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// `(label name, value)` in GROUP BY order; no `le`/`quantile` (the
    /// value carries those).
    pub labels: Vec<(String, String)>,
    /// The value.
    pub value: SampleValue,
}

/// All series of one metric.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricFamily {
    /// Full name, e.g. `ebq_vfsstat_calls_total`.
    pub name: String,
    /// One line saying what it measures (from the query and the column).
    pub help: String,
    /// Base unit, when the column name gave one.
    pub unit: Option<Unit>,
    /// Metric type.
    pub kind: MetricKind,
    /// Values are whole numbers (event counts): OTLP sends them as integers.
    pub integer: bool,
    /// The series.
    pub samples: Vec<Sample>,
}

/// What an output column becomes.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnRole {
    /// A label named `name`.
    Label {
        /// Label name.
        name: String,
    },
    /// A counter, gauge or histogram family.
    Metric {
        /// Family name.
        name: String,
        /// Counter, Gauge or Histogram.
        kind: MetricKind,
        /// Base unit.
        unit: Option<Unit>,
        /// Factor into the base unit.
        scale: f64,
        /// Whole numbers (a count, or an unsigned sum in a unit that is not scaled down).
        integer: bool,
        /// Histograms: the family's fixed buckets.
        layout: Option<HistLayout>,
        /// Histograms: where in a row's extras the kernel's exact sum of the argument is.
        sum_extra: Option<usize>,
    },
    /// Quantile `q` of the summary family `name` (one family per sketched argument).
    Quantile {
        /// Family name.
        name: String,
        /// Base unit.
        unit: Option<Unit>,
        /// Factor into the base unit.
        scale: f64,
        /// q in 0..=1.
        q: f64,
        /// The output column holding the group's `COUNT(*)`.
        count_column: Option<usize>,
        /// The output column holding the `SUM` of the same argument.
        sum_column: Option<usize>,
        /// Where in a row's extras the whole sketch is (its sum follows it):
        /// the summary's true count and sum.
        sketch_extra: Option<usize>,
    },
}

/// A distribution exported whole, as an [`MetricKind::Exponential`] family:
/// a quantile sketch (scale 6), or a HIST planned with
/// [`ebq_front::hist::Log2::Ceil`] over an unsigned argument (scale 0).
#[derive(Debug, Clone, PartialEq)]
pub struct ExponentialRole {
    /// Family name (`…_histogram[_<unit>]`).
    pub name: String,
    /// Base unit.
    pub unit: Option<Unit>,
    /// The base unit is `2^shift` of the argument's unit.
    pub shift: i32,
    /// Factor into the base unit (for the sum).
    pub scale: f64,
    /// Where the buckets come from.
    pub source: ExponentialSource,
    /// The first output column that reads the distribution (for the help text;
    /// a HIST's own column).
    pub column: usize,
}

/// Where an [`ExponentialRole`]'s buckets and sum are in a window's row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExponentialSource {
    /// A quantile sketch: at this index of the row's extras, its sum after it.
    Sketch {
        /// Index in the row's extras.
        extra: usize,
    },
    /// A Ceil HIST: the role's output column, and its exact sum in the extras.
    Hist {
        /// Index of the sum in the row's extras.
        sum_extra: Option<usize>,
    },
}

/// The name, unit, scale and power-of-two shift of an exponential family for
/// a column stem: only a power-of-two unit change keeps the bucket grid; a
/// decimal one (µs → seconds) keeps the argument's own unit, named in the
/// family (`ebq_q_lat_us_histogram`).
fn exponential_name(query: &str, stem: &str) -> (String, Option<Unit>, f64, i32) {
    let (name, unit, scale) = metric_name(query, stem, false);
    let shift = scale.log2();
    if shift.fract() == 0.0 {
        let name = match unit {
            Some(u) => {
                format!("{}_histogram_{}", name.strip_suffix(&format!("_{}", u.suffix())).unwrap_or(&name), u.suffix())
            }
            None => format!("{name}_histogram"),
        };
        (name, unit, scale, shift as i32)
    } else {
        (metric_name(query, &format!("{stem}_histogram"), false).0, None, 1.0, 0)
    }
}

/// How one query's windows map to metrics; built once from the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricSchema {
    /// The query's name (the `<query>` in metric names).
    pub query: String,
    /// One role per output column.
    pub roles: Vec<ColumnRole>,
    /// The output column names (for help texts).
    pub columns: Vec<String>,
    /// The sketches exported whole, one family each.
    pub exponentials: Vec<ExponentialRole>,
}

/// The user-plan inputs `e` reads.
fn inputs_of(e: &PostExpr, out: &mut Vec<usize>) {
    match e {
        PostExpr::Ref(Input { index, .. }) => out.push(*index),
        PostExpr::Binary { left, right, .. } => {
            inputs_of(left, out);
            inputs_of(right, out);
        }
        PostExpr::PartName { disk, partno } => {
            inputs_of(disk, out);
            inputs_of(partno, out);
        }
        PostExpr::Not(x)
        | PostExpr::Neg(x)
        | PostExpr::SyscallName { nr: x, .. }
        | PostExpr::Cgroup(_, x)
        | PostExpr::DevStr(x)
        | PostExpr::LinuxName(_, x)
        | PostExpr::ReqFlags { flags: x, .. } => inputs_of(x, out),
        _ => {}
    }
}

/// A quantile column's name without its `p99`/`q50`/`median` token: the
/// summary family's name (`p99_lat_us` → `lat_us`; `p99` → `quantile`).
fn quantile_stem(column: &str) -> String {
    let is_q = |t: &str| {
        t == "median"
            || t == "quantile"
            || (t.len() > 1 && (t.starts_with('p') || t.starts_with('q')) && t[1..].chars().all(|c| c.is_ascii_digit()))
    };
    let kept: Vec<&str> = column.split('_').filter(|t| !is_q(t)).collect();
    if kept.is_empty() {
        "quantile".into()
    } else {
        kept.join("_")
    }
}

/// What [`MetricSchema::of`] reads of a plan to give each output column its
/// role: the kernel's value slots and sketches, where each distribution's
/// values are in a row's extras, and the `COUNT(*)` column.
struct Columns<'a> {
    query: &'a str,
    plan: &'a PhysicalPlan,
    user: &'a ebq_front::plan::UserPlan,
    slots: &'a [ebq_front::plan::ValueSlot],
    sketches: &'a [ebq_front::bind::ScalarExpr],
    /// (histogram field, its first extra) for each HIST's sum.
    hist_extra: Vec<(usize, usize)>,
    /// (sketch, its first extra) for each quantile sketch.
    sketch_extra: Vec<(usize, usize)>,
    count_column: Option<usize>,
}

impl<'a> Columns<'a> {
    fn new(query: &'a str, plan: &'a PhysicalPlan) -> Result<Columns<'a>, String> {
        let (slots, sketches): (&[ebq_front::plan::ValueSlot], &[ebq_front::bind::ScalarExpr]) =
            match (&plan.programs[0].output, plan.window_join()) {
                // A join of two streams aggregates in user space: no kernel slots.
                (_, Some(join)) if join.aggregate.is_some() => (&[], &[]),
                (KernelOutput::Aggregate { slots, sketches, .. }, None) => (slots, sketches),
                _ => {
                    return Err("this query streams rows; only aggregate queries (GROUP BY, COUNT, HIST …) can be \
                            exported as metrics"
                        .into())
                }
            };
        let user = &plan.user;
        // Where each distribution's values are in a row's extras.
        let (mut hist_extra, mut sketch_extra) = (vec![], vec![]);
        let mut at = 0;
        for d in &user.distributions {
            match *d {
                Distribution::HistSum { hist, .. } => hist_extra.push((hist, at)),
                Distribution::Sketch { sketch, .. } => sketch_extra.push((sketch, at)),
            }
            at += d.width();
        }
        let mut columns = Columns { query, plan, user, slots, sketches, hist_extra, sketch_extra, count_column: None };
        columns.count_column = user.columns.iter().position(|c| columns.direct(c) == Some(UserSource::Count));
        Ok(columns)
    }

    /// The input a column shows as it is, if it is one.
    fn direct(&self, c: &ebq_front::plan::UserColumn) -> Option<UserSource> {
        match &c.expr {
            PostExpr::Ref(Input { index, .. }) => Some(self.user.inputs[*index]),
            _ => None,
        }
    }

    /// The column holding SUM(arg) of an unsigned `arg` (a histogram's or summary's sum).
    fn sum_column(&self, arg: &ebq_front::bind::ScalarExpr) -> Option<usize> {
        if arg.ty().is_signed() {
            return None;
        }
        self.user.columns.iter().position(|c| match self.direct(c) {
            Some(UserSource::Slot(f)) => {
                self.slots.iter().any(|s| s.field == f && s.func == AggFunc::Sum && s.arg == *arg)
            }
            _ => false,
        })
    }

    fn hist_extra(&self, field: usize) -> Option<usize> {
        self.hist_extra.iter().find(|(x, _)| *x == field).map(|(_, at)| *at)
    }

    fn sketch_extra(&self, sketch: usize) -> Option<usize> {
        self.sketch_extra.iter().find(|(x, _)| *x == sketch).map(|(_, at)| *at)
    }

    /// Column `ci`'s role: a label (it reads only keys), a counter, gauge or
    /// histogram, or a summary's quantile. A quantile's sketch, and a Ceil
    /// HIST of an unsigned argument, also add an exponential histogram.
    fn role(&self, ci: usize, c: &ebq_front::plan::UserColumn, exponentials: &mut Vec<ExponentialRole>) -> ColumnRole {
        if let Some(UserSource::Quantile { sketch, .. }) = self.direct(c) {
            let known = exponentials.iter().any(|e| match (e.source, self.sketch_extra(sketch)) {
                (ExponentialSource::Sketch { extra }, Some(at)) => extra == at,
                _ => false,
            });
            if let (Some(extra), false) = (self.sketch_extra(sketch), known) {
                let (name, unit, scale, shift) = exponential_name(self.query, &quantile_stem(&snake(&c.name)));
                let source = ExponentialSource::Sketch { extra };
                exponentials.push(ExponentialRole { name, unit, shift, scale, source, column: ci });
            }
        }
        let mut used = vec![];
        inputs_of(&c.expr, &mut used);
        let col = snake(&c.name);
        let all_keys = !used.is_empty() && used.iter().all(|i| matches!(self.user.inputs[*i], UserSource::Key(_)));
        if all_keys {
            return ColumnRole::Label { name: label_name(&c.name) };
        }
        let kind = match self.direct(c) {
            Some(UserSource::Count) => MetricKind::Counter,
            Some(UserSource::Slot(field)) => match self.slots.iter().find(|s| s.field == field) {
                Some(s) if s.func == AggFunc::Sum && !s.arg.ty().is_signed() => MetricKind::Counter,
                _ => MetricKind::Gauge,
            },
            // A join of two streams' aggregate j (its sums add up like the kernel's).
            Some(UserSource::Row(j)) => match self.plan.window_join().and_then(|s| s.aggregate.as_ref()) {
                Some(a) if matches!(a.aggs.get(j), Some((AggFunc::Sum, _, ty)) if !ty.is_signed()) => {
                    MetricKind::Counter
                }
                _ => MetricKind::Gauge,
            },
            Some(UserSource::Hist(_)) => MetricKind::Histogram,
            // OpenMetrics summaries hold no negative quantiles: those of a
            // signed argument are gauges, one per column (`ebq_q_p50_ret`).
            Some(UserSource::Quantile { sketch, .. })
                if self.sketches.get(sketch).is_some_and(|a| a.ty().is_signed()) =>
            {
                MetricKind::Gauge
            }
            Some(UserSource::Quantile { ppm, sketch }) => {
                let stem = quantile_stem(&col);
                let (name, unit, scale) = metric_name(self.query, &stem, false);
                return ColumnRole::Quantile {
                    name,
                    unit,
                    scale,
                    q: f64::from(ppm) / 1e6,
                    count_column: self.count_column,
                    sum_column: self.sketches.get(sketch).and_then(|a| self.sum_column(a)),
                    sketch_extra: self.sketch_extra(sketch),
                };
            }
            _ => MetricKind::Gauge,
        };
        let (name, unit, scale) = metric_name(self.query, &col, kind == MetricKind::Counter);
        let hist_slot = match self.direct(c) {
            Some(UserSource::Hist(f)) => self.slots.iter().find(|s| s.field == f),
            _ => None,
        };
        // A Ceil HIST of an unsigned argument is also a native histogram, losslessly.
        if let Some(s) = hist_slot.filter(|s| s.func == AggFunc::Hist(Log2::Ceil) && !s.arg.ty().is_signed()) {
            let (name, unit, scale, shift) = exponential_name(self.query, &col);
            let source = ExponentialSource::Hist { sum_extra: self.hist_extra(s.field) };
            exponentials.push(ExponentialRole { name, unit, shift, scale, source, column: ci });
        }
        ColumnRole::Metric {
            name,
            kind,
            unit,
            scale,
            integer: kind == MetricKind::Counter && scale >= 1.0,
            layout: hist_slot.and_then(|s| HistLayout::of(&s.func, s.arg.ty().is_signed(), scale)),
            sum_extra: hist_slot.and_then(|s| self.hist_extra(s.field)),
        }
    }
}

impl MetricSchema {
    /// The roles of `plan`'s output columns for a query called `query`.
    /// Fails for row queries (no aggregate: nothing to turn into metrics).
    /// Each column gets its role on its own ([`Columns::role`]); then names
    /// that would clash are told apart.
    pub fn of(query: &str, plan: &PhysicalPlan) -> Result<MetricSchema, String> {
        let columns = Columns::new(query, plan)?;
        let mut exponentials: Vec<ExponentialRole> = vec![];
        let roles: Vec<ColumnRole> =
            plan.user.columns.iter().enumerate().map(|(ci, c)| columns.role(ci, c, &mut exponentials)).collect();
        let mut schema = MetricSchema {
            query: query.to_string(),
            roles,
            columns: plan.user.columns.iter().map(|c| c.name.clone()).collect(),
            exponentials,
        };
        schema.log2_histogram_names();
        schema.quantile_names();
        schema.qualified_labels(plan);
        Ok(schema)
    }

    /// A sketch of a column with a HIST's stem (`HIST(x) AS size_bytes, P99(x) AS
    /// p99_size_bytes`) keeps `…_histogram…`; the HIST's family becomes `…_log2_histogram…`.
    fn log2_histogram_names(&mut self) {
        let exponentials = &mut self.exponentials;
        let sketch_names: Vec<String> = exponentials
            .iter()
            .filter(|e| matches!(e.source, ExponentialSource::Sketch { .. }))
            .map(|e| e.name.clone())
            .collect();
        for e in exponentials.iter_mut().filter(|e| matches!(e.source, ExponentialSource::Hist { .. })) {
            if sketch_names.contains(&e.name) {
                let at = e.name.rfind("_histogram").expect("exponential names have _histogram");
                e.name.insert_str(at, "_log2");
            }
        }
    }

    /// A summary whose name a counter, gauge or histogram already has
    /// (`HIST(x) AS size_bytes, P99(x) AS p99_size_bytes`) becomes
    /// `…_quantiles[_<unit>]` (`ebq_q_size_quantiles_bytes`): never a type
    /// word (`promtool check metrics` refuses `_summary`, `_histogram`, …).
    fn quantile_names(&mut self) {
        let roles = &mut self.roles;
        let taken: Vec<String> = roles
            .iter()
            .filter_map(|r| match r {
                ColumnRole::Metric { name, .. } => Some(name.clone()),
                _ => None,
            })
            .collect();
        for r in roles.iter_mut() {
            if let ColumnRole::Quantile { name, unit, .. } = r {
                if taken.contains(name) {
                    *name = match unit {
                        Some(u) => {
                            format!("{}_quantiles_{}", name.trim_end_matches(&format!("_{}", u.suffix())), u.suffix())
                        }
                        None => format!("{name}_quantiles"),
                    };
                }
            }
        }
    }

    /// Two keys with one label name (`i.dev`, `c.dev`): keep the qualified names.
    fn qualified_labels(&mut self, plan: &PhysicalPlan) {
        let (roles, user) = (&mut self.roles, &plan.user);
        let labels: Vec<String> = roles
            .iter()
            .filter_map(|r| match r {
                ColumnRole::Label { name } => Some(name.clone()),
                _ => None,
            })
            .collect();
        for (r, c) in roles.iter_mut().zip(&user.columns) {
            if let ColumnRole::Label { name } = r {
                if labels.iter().filter(|l| *l == name).count() > 1 {
                    *name = snake(&c.name);
                }
            }
        }
    }

    /// The families of one window (`out`): one per counter/gauge/histogram
    /// column, one per summary; every row of the window is one sample in
    /// each, labelled by the row's GROUP BY columns.
    pub fn families(&self, out: &Output) -> (Temporality, Vec<MetricFamily>) {
        let temporality = if out.partial { Temporality::Cumulative } else { Temporality::Delta };
        let mut families = self.declared_families();
        for row in 0..out.batch.num_rows() {
            self.row_samples(&mut families, out, row);
        }
        self.exponential_samples(&mut families, out);
        (temporality, families)
    }

    /// Every family with no sample yet, in column order (so exporters can
    /// describe them even for an empty window), then the exponential ones.
    fn declared_families(&self) -> Vec<MetricFamily> {
        let mut families: Vec<MetricFamily> = vec![];
        let mut declare = |name: &str, kind, unit, integer, help: String| {
            if !families.iter().any(|f| f.name == name) {
                let name = name.to_string();
                families.push(MetricFamily { name, help, unit, kind, integer, samples: vec![] });
            }
        };
        for (i, role) in self.roles.iter().enumerate() {
            match role {
                ColumnRole::Metric { name, kind, unit, integer, .. } => {
                    declare(name, *kind, *unit, *integer, self.help(i, *kind));
                }
                ColumnRole::Quantile { name, unit, .. } => {
                    declare(name, MetricKind::Summary, *unit, false, self.help(i, MetricKind::Summary));
                }
                ColumnRole::Label { .. } => {}
            }
        }
        for e in &self.exponentials {
            let help = match e.source {
                ExponentialSource::Sketch { .. } => self.help(e.column, MetricKind::Exponential),
                ExponentialSource::Hist { .. } => format!(
                    "ebq query {}: column {} (native histogram, scale 0: log2 buckets (2^(n-1), 2^n])",
                    self.query, self.columns[e.column]
                ),
            };
            declare(&e.name, MetricKind::Exponential, e.unit, false, help);
        }
        families
    }

    /// Row `row`'s sample in each counter, gauge, histogram and summary family.
    fn row_samples(&self, families: &mut [MetricFamily], out: &Output, row: usize) {
        let extras: &[Value] = out.extras.get(row).map_or(&[], Vec::as_slice);
        let values: Vec<Value> = out.batch.columns().iter().map(|c| cell(c, row)).collect();
        let labels: Vec<(String, String)> = self
            .roles
            .iter()
            .zip(&values)
            .filter_map(|(r, v)| match r {
                ColumnRole::Label { name } => Some((name.clone(), text(v))),
                _ => None,
            })
            .collect();
        for (role, v) in self.roles.iter().zip(&values) {
            match role {
                ColumnRole::Label { .. } => {}
                ColumnRole::Metric { name, kind, scale, layout, sum_extra, .. } => {
                    let value = match (kind, v) {
                        (MetricKind::Histogram, Value::Hist(b)) => {
                            let sum = sum_extra.and_then(|at| extras.get(at)).map(|v| scaled(number(v), *scale));
                            histogram(b, layout.as_ref(), *scale, sum)
                        }
                        (_, v) => SampleValue::Number(scaled(number(v), *scale)),
                    };
                    let f = families.iter_mut().find(|f| f.name == *name).expect("declared above");
                    f.samples.push(Sample { labels: labels.clone(), value });
                }
                ColumnRole::Quantile { name, scale, q, count_column, sum_column, sketch_extra, .. } => {
                    let f = families.iter_mut().find(|f| f.name == *name).expect("declared above");
                    let point = (*q, scaled(number(v), *scale));
                    // The sketch's own count and exact sum, else the selected COUNT(*) and SUM.
                    let count_sum = || match sketch(extras, *sketch_extra) {
                        Some((buckets, sum)) => {
                            (Some(buckets.iter().map(|b| b.count).sum()), Some(scaled(number(sum), *scale)))
                        }
                        None => (
                            count_column.map(|c| number(&values[c]) as u64),
                            sum_column.map(|c| scaled(number(&values[c]), *scale)),
                        ),
                    };
                    push_quantile(f, &labels, point, count_sum);
                }
            }
        }
    }

    /// Each row's sample in each exponential family (a row without its
    /// sketch or its histogram's sum has none).
    fn exponential_samples(&self, families: &mut [MetricFamily], out: &Output) {
        let batch = &out.batch;
        for row in 0..batch.num_rows().min(out.extras.len()) {
            let labels = self.labels(batch, row);
            for e in &self.exponentials {
                let value = match e.source {
                    ExponentialSource::Sketch { extra } => {
                        let Some((buckets, sum)) = sketch(&out.extras[row], Some(extra)) else { continue };
                        Exponential::of_sketch(buckets, scaled(number(sum), e.scale), e.shift)
                    }
                    ExponentialSource::Hist { sum_extra } => {
                        let Value::Hist(buckets) = cell(batch.column(e.column), row) else { continue };
                        let Some(sum) = sum_extra.and_then(|at| out.extras[row].get(at)) else { continue };
                        Exponential::of_log2_ceil(&buckets, scaled(number(sum), e.scale), e.shift)
                    }
                };
                let f = families.iter_mut().find(|f| f.name == e.name).expect("declared above");
                f.samples.push(Sample { labels: labels.clone(), value: SampleValue::Exponential(value) });
            }
        }
    }

    /// The labels of row `row`: its GROUP BY columns.
    fn labels(&self, batch: &arrow_array::RecordBatch, row: usize) -> Vec<(String, String)> {
        self.roles
            .iter()
            .zip(batch.columns())
            .filter_map(|(r, c)| match r {
                ColumnRole::Label { name } => Some((name.clone(), text(&cell(c, row)))),
                _ => None,
            })
            .collect()
    }

    /// The families this schema exports, once each: `(name, kind, output
    /// column)` (a summary names its first quantile column).
    pub fn family_names(&self) -> Vec<(String, MetricKind, String)> {
        let mut out: Vec<(String, MetricKind, String)> = vec![];
        for (role, column) in self.roles.iter().zip(&self.columns) {
            let (name, kind) = match role {
                ColumnRole::Metric { name, kind, .. } => (name, *kind),
                ColumnRole::Quantile { name, .. } => (name, MetricKind::Summary),
                ColumnRole::Label { .. } => continue,
            };
            if !out.iter().any(|(n, k, _)| n == name && *k == kind) {
                out.push((name.clone(), kind, column.clone()));
            }
        }
        for e in &self.exponentials {
            out.push((e.name.clone(), MetricKind::Exponential, self.columns[e.column].clone()));
        }
        out
    }

    fn help(&self, column: usize, kind: MetricKind) -> String {
        let what = match kind {
            MetricKind::Counter => "total",
            MetricKind::Gauge => "per window",
            MetricKind::Histogram => "histogram",
            MetricKind::Summary => "quantiles",
            MetricKind::Exponential => "exponential histogram, scale 6",
        };
        format!("ebq query {}: column {} ({what})", self.query, self.columns[column])
    }
}

/// One quantile column's `point` in its row's summary sample: a row's
/// quantiles are consecutive columns, so its sample, if any, is the family's
/// last one; else a new sample with the row's count and sum.
fn push_quantile(
    f: &mut MetricFamily,
    labels: &[(String, String)],
    point: (f64, f64),
    count_sum: impl FnOnce() -> (Option<u64>, Option<f64>),
) {
    match f.samples.last_mut().filter(|s| s.labels == labels) {
        Some(Sample { value: SampleValue::Summary { quantiles, .. }, .. }) => {
            quantiles.push(point);
            quantiles.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        _ => {
            let (count, sum) = count_sum();
            f.samples.push(Sample {
                labels: labels.to_vec(),
                value: SampleValue::Summary { quantiles: vec![point], count, sum },
            })
        }
    }
}

/// A sketch and its sum from a row's extras, at `at`.
fn sketch(extras: &[Value], at: Option<usize>) -> Option<(&[ebq_front::hist::Bucket], &Value)> {
    let at = at?;
    match (extras.get(at), extras.get(at + 1)) {
        (Some(Value::Hist(b)), Some(sum)) => Some((b.as_slice(), sum)),
        _ => None,
    }
}

/// A number cell as f64 (strings and booleans count as 0 and 1; NULL, the
/// SUM or MAX of a window without events, as 0: a series that vanished for one
/// scrape would look like a restart to rate()).
fn number(v: &Value) -> f64 {
    match v {
        Value::U(u) => *u as f64,
        Value::I(i) => *i as f64,
        Value::F(f) => *f,
        Value::B(b) => f64::from(u8::from(*b)),
        Value::S(_) | Value::Hist(_) | Value::Null => 0.0,
    }
}

/// ebq `[lo, hi)` buckets → inclusive upper bounds `hi − 1` in the base unit
/// (+∞ for the top bucket of the argument's type), on the family's fixed
/// `layout` (every bucket, empty ones included) when it has one.
fn histogram(
    buckets: &[ebq_front::hist::Bucket],
    layout: Option<&HistLayout>,
    scale: f64,
    sum: Option<f64>,
) -> SampleValue {
    let buckets: Vec<(f64, u64)> = match layout {
        Some(l) => l.fill(buckets),
        // A join of two streams' HIST: only the buckets it reports.
        None => buckets
            .iter()
            .map(|b| (if b.hi >= (1i128 << 63) { f64::INFINITY } else { scaled((b.hi - 1) as f64, scale) }, b.count))
            .collect(),
    };
    let count = buckets.iter().map(|b| b.1).sum();
    SampleValue::Histogram { buckets, count, sum }
}

/// ebq's own metrics for one query, from its running totals ([`QueryStats`]):
/// events seen, matched, dropped and missed (the kernel skipped the program),
/// JOIN starts missed, pairs superseded or evicted, unreadable strings, a
/// chained JOIN's middle events with no pair, BPF program runs and run time,
/// windows closed. All counters are cumulative since the query attached, labelled
/// `query=<name>`.
pub fn self_families(query: &str, stats: &QueryStats, windows: u64) -> Vec<MetricFamily> {
    let labels = vec![("query".to_string(), query.to_string())];
    let counter = |name: &str, help: &str, unit: Option<Unit>, v: f64| MetricFamily {
        name: name.into(),
        help: help.into(),
        unit,
        kind: MetricKind::Counter,
        integer: unit.is_none(),
        samples: vec![Sample { labels: labels.clone(), value: SampleValue::Number(v) }],
    };
    vec![
        counter("ebq_query_events_seen_total", "Events in scope at the query's probe.", None, stats.seen as f64),
        counter("ebq_query_events_matched_total", "Events that passed the query's WHERE.", None, stats.matched as f64),
        counter(
            "ebq_query_events_dropped_total",
            "Events lost because the group map or ring buffer was full.",
            None,
            stats.dropped as f64,
        ),
        counter(
            "ebq_query_events_missed_total",
            "Events the kernel skipped the query's BPF program for (recursion_misses; any process).",
            None,
            stats.missed as f64,
        ),
        counter(
            "ebq_query_join_starts_missed_total",
            "JOIN start events the kernel skipped the start program for: pairs never seen.",
            None,
            stats.missed_starts as f64,
        ),
        counter(
            "ebq_query_pairs_superseded_total",
            "JOIN pairs a later start on the same key replaced before their end came: pairs never timed.",
            None,
            stats.superseded as f64,
        ),
        counter(
            "ebq_query_pairs_evicted_total",
            "JOIN pairs evicted because their end did not come within max_pair_age.",
            None,
            stats.evicted as f64,
        ),
        counter(
            "ebq_query_unreadable_strings_total",
            "Strings read through a pointer that could not be read when their event fired (user page not resident at entry, bad or NULL pointer): NULL.",
            None,
            stats.unreadable_strings as f64,
        ),
        counter(
            "ebq_query_middle_unmatched_total",
            "Chained JOIN: middle events that found no open pair on their key (started before ebq attached, or filtered): ignored, not losses.",
            None,
            stats.middle_unmatched as f64,
        ),
        counter(
            "ebq_query_bpf_runs_total",
            "Times the query's BPF program ran (kernel bpf_stats).",
            None,
            stats.bpf_run_cnt as f64,
        ),
        counter(
            "ebq_query_bpf_run_seconds_total",
            "Time spent in the query's BPF program (kernel bpf_stats).",
            Some(Unit::Seconds),
            stats.bpf_run_time_ns as f64 * 1e-9,
        ),
        counter("ebq_query_windows_total", "Windows the query has closed and published.", None, windows as f64),
    ]
}

#[cfg(test)]
mod tests;

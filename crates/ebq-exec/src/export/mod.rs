//! Export: query results as metrics, independent of any wire format.
//!
//! A long-running exporter (`ebq serve`, an OTLP push, a pinned-map sampler)
//! needs the same answer to "what does this query's window mean as metrics?":
//! which columns are labels, which are counters, gauges, histograms or
//! summaries, what they are called and in which unit. This module answers it
//! once, so every exporter names and types the metrics alike.
//!
//! ```text
//! PhysicalPlan ─MetricSchema::of─▶ column roles, names, units
//! Output (one closed window) ─MetricSchema::families─▶ Vec<MetricFamily> (per-window deltas)
//!        ─Accumulator::add─▶ cumulative families (what Prometheus scrapes)
//! QueryStats ─self_families─▶ ebq's own metrics (events seen/matched/dropped, BPF run time)
//! ```
//!
//! - [`metrics`]: the model ([`MetricFamily`], [`Sample`], [`SampleValue`])
//!   and the mapping from a plan and a window to families.
//! - [`cumulative`]: turns per-window deltas into running totals, with a
//!   bound on the number of series (overflow is counted, never silent).
//! - [`layout`]: one fixed bucket layout per histogram family.
//! - [`exposition`]: families as OpenMetrics or Prometheus 0.0.4 text.
//! - [`exposition_proto`]: families as Prometheus' protobuf exposition, with
//!   quantile sketches as native histograms.
//! - [`naming`]: Prometheus-style names and units.
//! - [`otlp`]: families → an OTLP/HTTP protobuf push.
//! - [`otlp_logs`]: rows → OTLP log records (the `otlp+http://` sink).

pub mod cumulative;
pub mod exposition;
pub mod exposition_proto;
pub mod layout;
pub mod metrics;
pub mod naming;
pub mod otlp;
pub mod otlp_logs;

pub use cumulative::Accumulator;
pub use metrics::{
    self_families, ColumnRole, Exponential, ExponentialRole, MetricFamily, MetricKind, MetricSchema, Sample,
    SampleValue, Temporality,
};
pub use naming::Unit;

//! Families as Prometheus text: OpenMetrics 1.0 or the classic 0.0.4 format.
//!
//! Both are written here rather than by a client library because ebq's
//! families need what the libraries lack: summaries (quantiles with an
//! optional `_count`/`_sum`), histograms whose `_sum`/`_count` are only
//! present when known, and the 0.0.4 format for scrapers that ask for it.
//!
//! | family    | OpenMetrics                                        | 0.0.4                              |
//! |-----------|----------------------------------------------------|------------------------------------|
//! | counter   | `# TYPE x counter` (`x` without `_total`), `x_total` | `# TYPE x_total counter`, `x_total` |
//! | gauge     | `x`                                                | `x`                                |
//! | histogram | `x_bucket{le=…}` for every bucket, `+Inf` last; `x_count`, `x_sum` only when the sum is known | same |
//! | summary   | `x{…,quantile=…}`; `x_count`/`x_sum` when known    | same                               |
//! | exponential | left out (only the protobuf page, [`super::exposition_proto`], carries native histograms) | left out |
//!
//! A histogram's `_count` goes with its `_sum` (the OpenMetrics parser
//! refuses one without the other); the `+Inf` bucket always holds the count.
//! Label values and help texts are escaped (`\\`, `\"`, `\n`); label values
//! are already valid UTF-8 (invalid bytes were escaped once, when decoded, see
//! [`crate::escape::escape_bytes`]): this is the format's own escape, which a
//! parser undoes, giving back ebq's text.

use super::metrics::{MetricFamily, MetricKind, SampleValue};
use std::fmt::Write;

/// Which text format to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextFormat {
    /// `application/openmetrics-text; version=1.0.0`.
    OpenMetrics,
    /// `text/plain; version=0.0.4` (Prometheus' classic format).
    Prometheus004,
}

impl TextFormat {
    /// The HTTP `Content-Type` of a page in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            TextFormat::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            TextFormat::Prometheus004 => "text/plain; version=0.0.4; charset=utf-8",
        }
    }

    /// The format an HTTP `Accept` header asks for: OpenMetrics when it names
    /// `application/openmetrics-text` (with a q above 0), else 0.0.4, which is
    /// also what scrapers that send no `Accept` get (as client_golang does).
    pub fn negotiate(accept: Option<&str>) -> TextFormat {
        let wants_openmetrics = accept.is_some_and(|a| {
            a.split(',').any(|range| {
                let mut parts = range.split(';').map(str::trim);
                let media = parts.next().unwrap_or("");
                let q = parts.find_map(|p| p.strip_prefix("q=")).and_then(|q| q.parse::<f64>().ok()).unwrap_or(1.0);
                media.eq_ignore_ascii_case("application/openmetrics-text") && q > 0.0
            })
        });
        if wants_openmetrics {
            TextFormat::OpenMetrics
        } else {
            TextFormat::Prometheus004
        }
    }
}

/// A number as both formats write it: shortest round-trip decimal,
/// `+Inf`/`-Inf`/`NaN` spelled out.
pub fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        format!("{v:?}")
    }
}

fn escape(s: &str, quotes: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '"' if quotes => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out
}

/// `{a="x",b="y"}` (nothing when there are no labels); `first` goes before
/// `labels` (a bucket's `le`), `last` after them (a summary's `quantile`).
fn label_set(first: Option<(&str, &str)>, labels: &[(String, String)], last: Option<(&str, &str)>) -> String {
    let all: Vec<String> = first
        .into_iter()
        .chain(labels.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .chain(last)
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v, true)))
        .collect();
    if all.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", all.join(","))
    }
}

/// The name in `# TYPE`/`# HELP` lines: OpenMetrics names a counter without
/// its `_total`, 0.0.4 by its sample name.
fn descriptor_name(f: &MetricFamily, format: TextFormat) -> &str {
    match (format, f.kind) {
        (TextFormat::OpenMetrics, MetricKind::Counter) => f.name.strip_suffix("_total").unwrap_or(&f.name),
        _ => &f.name,
    }
}

/// Appends one family to `out`.
pub fn encode_family(out: &mut String, f: &MetricFamily, format: TextFormat) {
    let name = descriptor_name(f, format);
    let ty = match f.kind {
        MetricKind::Counter => "counter",
        MetricKind::Gauge => "gauge",
        MetricKind::Histogram => "histogram",
        MetricKind::Summary => "summary",
        // Text formats cannot carry exponential buckets: the protobuf page does.
        MetricKind::Exponential => return,
    };
    let _ = writeln!(out, "# HELP {name} {}", escape(&f.help, format == TextFormat::OpenMetrics));
    let _ = writeln!(out, "# TYPE {name} {ty}");
    if let (TextFormat::OpenMetrics, Some(u)) = (format, f.unit) {
        // OpenMetrics wants the name to end in the unit; a name that does not is shown without UNIT.
        if name.ends_with(&format!("_{}", u.suffix())) {
            let _ = writeln!(out, "# UNIT {name} {}", u.suffix());
        }
    }
    let base = &f.name;
    for s in &f.samples {
        match &s.value {
            SampleValue::Number(v) => {
                let _ = writeln!(out, "{base}{} {}", label_set(None, &s.labels, None), number(*v));
            }
            SampleValue::Histogram { buckets, count, sum } => {
                let mut cumulative = 0u64;
                for (le, n) in buckets {
                    cumulative += n;
                    let le = number(*le);
                    let _ =
                        writeln!(out, "{base}_bucket{} {cumulative}", label_set(Some(("le", &le)), &s.labels, None));
                }
                if buckets.last().is_none_or(|b| b.0 != f64::INFINITY) {
                    let labels = label_set(Some(("le", "+Inf")), &s.labels, None);
                    let _ = writeln!(out, "{base}_bucket{labels} {count}");
                }
                if let Some(sum) = sum {
                    let labels = label_set(None, &s.labels, None);
                    let _ = writeln!(out, "{base}_count{labels} {count}");
                    let _ = writeln!(out, "{base}_sum{labels} {}", number(*sum));
                }
            }
            SampleValue::Summary { quantiles, count, sum } => {
                for (q, v) in quantiles {
                    let q = number(*q);
                    let _ =
                        writeln!(out, "{base}{} {}", label_set(None, &s.labels, Some(("quantile", &q))), number(*v));
                }
                let labels = label_set(None, &s.labels, None);
                if let Some(count) = count {
                    let _ = writeln!(out, "{base}_count{labels} {count}");
                }
                if let Some(sum) = sum {
                    let _ = writeln!(out, "{base}_sum{labels} {}", number(*sum));
                }
            }
            SampleValue::Exponential(_) => {}
        }
    }
}

/// A whole page: every family, then `# EOF` in OpenMetrics.
pub fn encode<'a>(families: impl IntoIterator<Item = &'a MetricFamily>, format: TextFormat) -> String {
    let mut out = String::new();
    for f in families {
        encode_family(&mut out, f, format);
    }
    if format == TextFormat::OpenMetrics {
        out.push_str("# EOF\n");
    }
    out
}

/// The sample names a family called `name` of type `kind` writes, whatever
/// its samples: `x`, `x_total`, `x_bucket`, … as the OpenMetrics parser
/// reserves them (a counter also reserves its bare name and `_created`). Two
/// families whose names overlap cannot be on one page.
pub fn reserved_names(name: &str, kind: MetricKind) -> Vec<String> {
    let (base, suffixes): (&str, &[&str]) = match kind {
        MetricKind::Counter => (name.strip_suffix("_total").unwrap_or(name), &["", "_total", "_created"]),
        MetricKind::Gauge => (name, &[""]),
        MetricKind::Histogram | MetricKind::Exponential => (name, &["", "_bucket", "_count", "_sum", "_created"]),
        MetricKind::Summary => (name, &["", "_count", "_sum", "_created"]),
    };
    suffixes.iter().map(|s| format!("{base}{s}")).collect()
}

#[cfg(test)]
mod tests;

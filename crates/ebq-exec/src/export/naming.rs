//! Prometheus naming conventions for query columns.
//!
//! A metric is called `ebq_<query>_<column>`, in snake_case, with its unit
//! in base units as a suffix when the column name gives one away
//! (`lat_us` → `lat_seconds`, values scaled by 10⁻⁶; `read_kb` →
//! `read_bytes`, scaled by 1024), and `_total` after counters. OpenTelemetry
//! exporters can use the same names (they are valid OTLP instrument names).

/// A base unit a column was recognised in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Seconds (from ns, us, ms, s suffixes).
    Seconds,
    /// Bytes (from bytes, kb, mb suffixes).
    Bytes,
}

impl Unit {
    /// The suffix Prometheus uses (and the OTLP unit, as UCUM: `s`, `By`).
    pub fn suffix(self) -> &'static str {
        match self {
            Unit::Seconds => "seconds",
            Unit::Bytes => "bytes",
        }
    }

    /// The UCUM code OTLP expects in a metric's `unit` field.
    pub fn ucum(self) -> &'static str {
        match self {
            Unit::Seconds => "s",
            Unit::Bytes => "By",
        }
    }
}

/// `text` as a snake_case identifier: lowercase ASCII letters, digits and
/// single underscores, never starting with a digit, never empty.
pub fn snake(text: &str) -> String {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            if c.is_ascii_uppercase() && prev_lower && !out.ends_with('_') {
                out.push('_');
            }
            prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
            out.push(c.to_ascii_lowercase());
        } else {
            prev_lower = false;
            if !out.is_empty() && !out.ends_with('_') {
                out.push('_');
            }
        }
    }
    while out.ends_with('_') {
        out.pop();
    }
    if out.is_empty() {
        out.push('x');
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// The unit a snake_case column name ends in, and the factor that turns its
/// values into the base unit: `lat_ns` → (Seconds, 1e-9), `bytes` → (Bytes, 1).
pub fn unit_of(column: &str) -> Option<(Unit, f64, usize)> {
    let last = column.rsplit('_').next().unwrap_or(column);
    let (unit, scale) = match last {
        "ns" | "nsec" | "nsecs" | "nanoseconds" => (Unit::Seconds, 1e-9),
        "us" | "usec" | "usecs" | "microseconds" => (Unit::Seconds, 1e-6),
        "ms" | "msec" | "msecs" | "milliseconds" => (Unit::Seconds, 1e-3),
        "s" | "sec" | "secs" | "seconds" => (Unit::Seconds, 1.0),
        "bytes" | "byte" => (Unit::Bytes, 1.0),
        "kb" | "kib" | "kbytes" => (Unit::Bytes, 1024.0),
        "mb" | "mib" | "mbytes" => (Unit::Bytes, 1024.0 * 1024.0),
        _ => return None,
    };
    Some((unit, scale, last.len()))
}

/// The metric name of `column` of query `query`, its unit and the scale to
/// apply to values: `ebq_<query>_<column>` with the unit suffix in base
/// units, plus `_total` when `counter`.
pub fn metric_name(query: &str, column: &str, counter: bool) -> (String, Option<Unit>, f64) {
    let col = snake(column);
    let (base, unit, scale) = match unit_of(&col) {
        Some((unit, scale, len)) => {
            let stem = col[..col.len() - len].trim_end_matches('_');
            let base = if stem.is_empty() { unit.suffix().to_string() } else { format!("{stem}_{}", unit.suffix()) };
            (base, Some(unit), scale)
        }
        None => (col, None, 1.0),
    };
    let mut name = format!("ebq_{}_{base}", snake(query));
    if counter && !name.ends_with("_total") {
        name.push_str("_total");
    }
    (name, unit, scale)
}

/// Label names the exposition formats reserve (`le`, `quantile`) or that
/// Prometheus sets itself (`job`, `instance`): a GROUP BY column with one of
/// these names becomes `key_<name>`.
const RESERVED_LABELS: &[&str] = &["le", "quantile", "job", "instance", "query"];

/// The label name of a GROUP BY column. A JOIN's qualified column
/// (`e.fs_type`) is labelled by its column name (`fs_type`).
pub fn label_name(column: &str) -> String {
    let plain = match column.rsplit_once('.') {
        Some((alias, name)) if is_ident(alias) && is_ident(name) => name,
        _ => column,
    };
    let l = snake(plain);
    let l = l.trim_start_matches('_').to_string();
    if l.is_empty() || RESERVED_LABELS.contains(&l.as_str()) || l.starts_with(|c: char| c.is_ascii_digit()) {
        format!("key_{l}")
    } else {
        l
    }
}

/// `v` in the base unit: `v × scale`, computed as a division by the exact
/// power of ten for sub-unit scales so that `255 µs` is `0.000255 s`, not
/// `0.00025499999999999996 s`.
pub fn scaled(v: f64, scale: f64) -> f64 {
    if scale < 1.0 {
        v / (1.0 / scale).round()
    } else {
        v * scale
    }
}

fn is_ident(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_case_identifiers() {
        assert_eq!(snake("ReadBytes"), "read_bytes");
        assert_eq!(snake("read-kb"), "read_kb");
        assert_eq!(snake("COUNT(*)"), "count");
        assert_eq!(snake("9lives"), "_9lives");
        assert_eq!(snake("__"), "x");
        assert_eq!(snake("p99 lat"), "p99_lat");
    }

    #[test]
    fn units_become_base_units() {
        assert_eq!(
            metric_name("biolatency", "usecs", false),
            ("ebq_biolatency_seconds".into(), Some(Unit::Seconds), 1e-6)
        );
        assert_eq!(metric_name("q", "lat_ns", false), ("ebq_q_lat_seconds".into(), Some(Unit::Seconds), 1e-9));
        assert_eq!(
            metric_name("filetop", "read_kb", true),
            ("ebq_filetop_read_bytes_total".into(), Some(Unit::Bytes), 1024.0)
        );
        assert_eq!(metric_name("vfs-stat", "calls", true), ("ebq_vfs_stat_calls_total".into(), None, 1.0));
        assert_eq!(metric_name("q", "bytes", true), ("ebq_q_bytes_total".into(), Some(Unit::Bytes), 1.0));
        assert_eq!(metric_name("q", "n_total", true).0, "ebq_q_n_total");
        // Words that merely end in a unit-looking token are not units unless the whole token matches.
        assert_eq!(metric_name("q", "buses", false).1, None);
    }

    #[test]
    fn scaling_is_exact_for_decimal_units() {
        assert_eq!(scaled(255.0, 1e-6).to_string(), "0.000255");
        assert_eq!(scaled(2047.0, 1e-6).to_string(), "0.002047");
        assert_eq!(scaled(3.0, 1024.0), 3072.0);
    }

    #[test]
    fn reserved_labels_are_renamed() {
        assert_eq!(label_name("le"), "key_le");
        assert_eq!(label_name("job"), "key_job");
        assert_eq!(label_name("file_name"), "file_name");
        assert_eq!(label_name("FileName"), "file_name");
        assert_eq!(label_name("e.fs_type"), "fs_type");
        assert_eq!(label_name("i.le"), "key_le");
    }
}

//! Histograms in text sinks: bucket rows for JSON lines and CSV, bars for the terminal.
//!
//! Bucket rows: a result row with a histogram column becomes one row per
//! non-empty bucket, holding the row's other columns plus `lo`, `hi`, `count`
//! (named `bucket_lo`, `bucket_hi`, `bucket_count` when another column already
//! uses one of those names); with several histogram columns a `histogram`
//! column says which one a row belongs to.

use crate::Value;
use arrow_schema::{DataType, Schema};
use ebq_front::hist::Bucket;
use std::fmt::Write;

/// How a schema's rows are expanded into bucket rows.
#[derive(Debug, Clone)]
pub struct BucketRows {
    /// Column indexes of histograms, with their names and signedness.
    hists: Vec<(usize, String, bool)>,
    /// Output column names.
    pub names: Vec<String>,
}

impl BucketRows {
    /// The expansion of `schema`; `None` when it has no histogram column.
    pub fn of(schema: &Schema) -> Option<BucketRows> {
        let mut hists = vec![];
        let mut names = vec![];
        for (i, f) in schema.fields().iter().enumerate() {
            match f.data_type() {
                DataType::List(item) => {
                    let signed =
                        matches!(item.data_type(), DataType::Struct(s) if s[0].data_type() == &DataType::Int64);
                    hists.push((i, f.name().clone(), signed));
                }
                _ => names.push(f.name().clone()),
            }
        }
        if hists.is_empty() {
            return None;
        }
        let taken = |n: &str| names.iter().any(|x| x == n);
        let prefix = if taken("lo") || taken("hi") || taken("count") { "bucket_" } else { "" };
        if hists.len() > 1 {
            names.push(if taken("histogram") { "bucket_histogram".into() } else { "histogram".into() });
        }
        names.extend(["lo", "hi", "count"].map(|n| format!("{prefix}{n}")));
        Some(BucketRows { hists, names })
    }

    /// One row per non-empty bucket of each histogram in `row`.
    pub fn expand(&self, row: Vec<Value>) -> Vec<Vec<Value>> {
        let mut rest = vec![];
        let mut hists = vec![];
        for (i, v) in row.into_iter().enumerate() {
            match (self.hists.iter().find(|h| h.0 == i), v) {
                (Some((_, name, signed)), Value::Hist(b)) => hists.push((name.clone(), *signed, b)),
                (Some((_, name, signed)), _) => hists.push((name.clone(), *signed, vec![])),
                (None, v) => rest.push(v),
            }
        }
        let several = hists.len() > 1;
        let mut out = vec![];
        for (name, signed, buckets) in hists {
            for b in buckets.iter().filter(|b| b.count > 0) {
                let mut r = rest.clone();
                if several {
                    r.push(Value::S(name.clone()));
                }
                r.extend([bound(b.lo, signed), bound(b.hi, signed), Value::U(b.count)]);
                out.push(r);
            }
        }
        out
    }
}

/// A bucket bound as a number of the argument's signedness (the top bucket's
/// `hi`, 2^64 or 2^63, saturates like in Arrow files).
fn bound(v: i128, signed: bool) -> Value {
    if signed {
        Value::I(v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64)
    } else {
        Value::U(v.clamp(0, i128::from(u64::MAX)) as u64)
    }
}

/// A bound with bpftrace's suffixes for multiples of 1024 (`4K`, `16E`).
pub fn short(v: i128) -> String {
    const UNITS: [&str; 6] = ["K", "M", "G", "T", "P", "E"];
    let mut unit = None;
    let mut x = v;
    for u in UNITS {
        if x != 0 && x % 1024 == 0 {
            x /= 1024;
            unit = Some(u);
        } else {
            break;
        }
    }
    match unit {
        Some(u) => format!("{x}{u}"),
        None => v.to_string(),
    }
}

/// Width of the bar between the `|`s.
const BAR_WIDTH: usize = 40;

/// A histogram as bars, one line per bucket: `[4, 8)     12 |@@@@      |`.
pub fn bars(buckets: &[Bucket]) -> String {
    let labels: Vec<String> = buckets.iter().map(|b| format!("[{}, {})", short(b.lo), short(b.hi))).collect();
    let lw = labels.iter().map(|l| l.len()).max().unwrap_or(0);
    let cw = buckets.iter().map(|b| b.count.to_string().len()).max().unwrap_or(1);
    let max = buckets.iter().map(|b| b.count).max().unwrap_or(0).max(1);
    let mut s = String::new();
    for (l, b) in labels.iter().zip(buckets) {
        let n = (u128::from(b.count) * BAR_WIDTH as u128 / u128::from(max)) as usize;
        let _ = writeln!(s, "{l:<lw$} {:>cw$} |{}{}|", b.count, "@".repeat(n), " ".repeat(BAR_WIDTH - n));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::{Field, Fields};
    use std::sync::Arc;

    fn hist_field(name: &str) -> Field {
        let s = Fields::from(vec![
            Field::new("lo", DataType::UInt64, false),
            Field::new("hi", DataType::UInt64, false),
            Field::new("count", DataType::UInt64, false),
        ]);
        Field::new(name, DataType::List(Arc::new(Field::new("item", DataType::Struct(s), true))), false)
    }

    #[test]
    fn bars_scale_to_the_largest_bucket() {
        let b = [
            Bucket { lo: 4, hi: 8, count: 12 },
            Bucket { lo: 8, hi: 16, count: 3 },
            Bucket { lo: 1 << 63, hi: 1 << 64, count: 0 },
        ];
        let text = bars(&b);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], format!("[4, 8)    12 |{}|", "@".repeat(40)));
        assert_eq!(lines[1], format!("[8, 16)    3 |{}{}|", "@".repeat(10), " ".repeat(30)));
        assert_eq!(lines[2], format!("[8E, 16E)  0 |{}|", " ".repeat(40)));
        assert_eq!(short(2048), "2K");
        assert_eq!(short(1536), "1536");
        assert_eq!(short(-1024), "-1K");
    }

    #[test]
    fn bucket_rows_keep_other_columns_and_skip_empty_buckets() {
        let schema = Schema::new(vec![Field::new("comm", DataType::Utf8, false), hist_field("h")]);
        let r = BucketRows::of(&schema).unwrap();
        assert_eq!(r.names, ["comm", "lo", "hi", "count"]);
        let rows = r.expand(vec![
            Value::S("dd".into()),
            Value::Hist(vec![
                Bucket { lo: 1, hi: 2, count: 5 },
                Bucket { lo: 2, hi: 4, count: 0 },
                Bucket { lo: 1 << 63, hi: 1 << 64, count: 1 },
            ]),
        ]);
        assert_eq!(
            rows,
            [
                vec![Value::S("dd".into()), Value::U(1), Value::U(2), Value::U(5)],
                vec![Value::S("dd".into()), Value::U(1 << 63), Value::U(u64::MAX), Value::U(1)],
            ]
        );
        let two = Schema::new(vec![Field::new("count", DataType::UInt64, false), hist_field("a"), hist_field("b")]);
        assert_eq!(
            BucketRows::of(&two).unwrap().names,
            ["count", "histogram", "bucket_lo", "bucket_hi", "bucket_count"]
        );
    }
}

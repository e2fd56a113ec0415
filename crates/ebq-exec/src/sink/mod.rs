//! Sinks: where results go. Each writes [`Output`] batches as they close.

mod columnar;
mod csv;
mod display;
mod fanout;
mod file;
mod folded;
mod hist;
mod json;
mod queued;
mod table;
mod wall;

pub use self::columnar::{file_schema, ipc_stream, with_window_columns, ArrowSink, ParquetSink};
pub use self::csv::CsvSink;
pub use self::display::{iso_utc, TimeDisplay};
pub use self::fanout::FanOut;
// Decoding escapes kernel strings; every sink writes them as decoded.
pub use self::file::{rotated_path, FileFormat, FileSink, Rotation};
pub use self::folded::{fold_row, FoldedSink};
pub use self::hist::{bars, BucketRows};
pub use self::json::JsonSink;
pub use self::queued::{Delivery, DeliveryProbe, QueueCounts, QueuedSink, WhenFull};
pub use self::table::TableSink;
pub use self::wall::{iso8601, time_column, wall_clock, wall_type, WallClock, TIME, TIME_WALL};
pub use crate::escape::{escape_bytes, unescape_bytes};

use crate::{Output, Value, WindowBounds};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use std::io;

/// A destination for query results.
pub trait Sink {
    /// Writes one batch.
    fn write(&mut self, out: &Output) -> io::Result<()>;

    /// Ends the output after the last batch: file formats write their footer
    /// here. Call it once, also when the run was interrupted.
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// Per sink behind this one (several `--sink`s), by name: rows written
    /// and rows dropped because that sink's queue was full. Empty for a
    /// single sink, which loses nothing (its queue waits).
    fn counts(&self) -> Vec<(String, QueueCounts)> {
        vec![]
    }

    /// For a sink that ships rows to a broker (Kafka): a handle that reads
    /// its [`Delivery`] counts from another thread. Taken once, before the
    /// sink moves to its writer thread ([`QueuedSink`]); `None` for a file or
    /// the terminal, which take a row for good once they wrote it.
    fn delivery(&self) -> Option<DeliveryProbe> {
        None
    }
}

/// The value at `row` of an Arrow column, for text formats.
pub fn cell(col: &ArrayRef, row: usize) -> Value {
    use arrow_array::cast::AsArray;
    use arrow_array::types::*;
    if col.is_null(row) {
        return Value::Null;
    }
    match col.data_type() {
        DataType::Int8 => Value::I(col.as_primitive::<Int8Type>().value(row).into()),
        DataType::Int16 => Value::I(col.as_primitive::<Int16Type>().value(row).into()),
        DataType::Int32 => Value::I(col.as_primitive::<Int32Type>().value(row).into()),
        DataType::Int64 => Value::I(col.as_primitive::<Int64Type>().value(row)),
        DataType::UInt8 => Value::U(col.as_primitive::<UInt8Type>().value(row).into()),
        DataType::UInt16 => Value::U(col.as_primitive::<UInt16Type>().value(row).into()),
        DataType::UInt32 => Value::U(col.as_primitive::<UInt32Type>().value(row).into()),
        DataType::UInt64 => Value::U(col.as_primitive::<UInt64Type>().value(row)),
        DataType::Float64 => Value::F(col.as_primitive::<Float64Type>().value(row)),
        DataType::Boolean => Value::B(col.as_boolean().value(row)),
        DataType::List(_) => crate::hist_cell(col, row),
        _ => Value::S(col.as_string::<i32>().value(row).to_string()),
    }
}

/// Rows of a batch as text-ready values.
pub fn rows(batch: &RecordBatch) -> impl Iterator<Item = Vec<Value>> + '_ {
    (0..batch.num_rows()).map(move |r| batch.columns().iter().map(|c| cell(c, r)).collect())
}

/// A value as plain text (floats with up to 3 decimals, trailing zeros dropped).
pub fn text(v: &Value) -> String {
    match v {
        Value::U(u) => u.to_string(),
        Value::I(i) => i.to_string(),
        Value::F(f) => {
            let s = format!("{f:.3}");
            let s = s.trim_end_matches('0').trim_end_matches('.');
            s.to_string()
        }
        Value::S(s) => s.clone(),
        Value::B(b) => b.to_string(),
        Value::Null => String::new(),
        Value::Hist(buckets) => {
            let parts: Vec<String> = buckets
                .iter()
                .filter(|b| b.count > 0)
                .map(|b| format!("[{}, {}): {}", hist::short(b.lo), hist::short(b.hi), b.count))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
    }
}

/// Rows of a batch for the line formats: histogram columns expanded into
/// bucket rows (see [`BucketRows`]), with the column names that go with them.
pub fn line_rows(batch: &RecordBatch) -> (Vec<String>, Vec<Vec<Value>>) {
    match BucketRows::of(&batch.schema()) {
        Some(b) => (b.names.clone(), rows(batch).flat_map(|r| b.expand(r)).collect()),
        None => (batch.schema().fields().iter().map(|f| f.name().clone()).collect(), rows(batch).collect()),
    }
}

/// One column the file sinks put before the query's columns.
pub(crate) struct WindowColumn {
    /// Its name.
    pub name: &'static str,
    /// A CLOCK_MONOTONIC time (time windows) or the window's index.
    pub value: u64,
    /// Written as the wall-clock time of `value` ([`wall_clock`]) rather than as the number.
    pub wall: bool,
}

/// The window columns of a batch of `window`: `window_start_ns`,
/// `window_end_ns` (CLOCK_MONOTONIC) and their wall-clock twins
/// `window_start`, `window_end` for time windows, `window` for count windows,
/// none for rows.
pub(crate) fn window_columns(window: &WindowBounds) -> Vec<WindowColumn> {
    let col = |name, value, wall| WindowColumn { name, value, wall };
    match *window {
        WindowBounds::Time { start_ns, end_ns } => vec![
            col("window_start_ns", start_ns, false),
            col("window_end_ns", end_ns, false),
            col("window_start", start_ns, true),
            col("window_end", end_ns, true),
        ],
        WindowBounds::Count { index } => vec![col("window", index, false)],
        WindowBounds::Rows => vec![],
    }
}

/// An output's rows as the line formats (JSON, CSV) write them, in column
/// order: the window columns, then the query's columns in SELECT order
/// (histograms expanded into bucket rows), the monotonic `time` followed by
/// its wall-clock `time_wall`. Wall-clock times are ISO 8601 UTC strings with
/// nanoseconds.
pub fn line_table(o: &Output) -> (Vec<String>, Vec<Vec<Value>>) {
    let clock = wall_clock();
    let (mut names, mut rows) = line_rows(&o.batch);
    if time_column(&o.batch.schema()).is_some() {
        if let Some(i) = names.iter().position(|n| n == TIME) {
            names.insert(i + 1, TIME_WALL.into());
            for row in &mut rows {
                let wall = match row[i] {
                    Value::U(t) => Value::S(clock.iso(t)),
                    _ => unreachable!("time_column is UInt64"),
                };
                row.insert(i + 1, wall);
            }
        }
    }
    let window = window_columns(&o.window);
    let lead: Vec<Value> =
        window.iter().map(|c| if c.wall { Value::S(clock.iso(c.value)) } else { Value::U(c.value) }).collect();
    if lead.is_empty() {
        return (names, rows);
    }
    let mut all_names: Vec<String> = window.iter().map(|c| c.name.to_string()).collect();
    all_names.append(&mut names);
    let rows = rows.into_iter().map(|r| lead.iter().cloned().chain(r).collect()).collect();
    (all_names, rows)
}

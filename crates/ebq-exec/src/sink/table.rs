//! The terminal: a table per window; streamed rows as aligned lines.
//!
//! Streamed rows are written as they come, so column widths are fixed from
//! the header and the first batch; a wider cell later widens its column from
//! then on. Numbers are right-aligned under right-aligned headers. Times and
//! stacks are shown as [`TimeDisplay`] and one frame per line (see `display`).

use super::display::{push_terminal_text, terminal_text, TimeDisplay};
use super::{cell, rows, text, Sink};
use crate::{Output, WindowBounds};
use arrow_array::RecordBatch;
use comfy_table::{presets, Cell, CellAlignment, Table};
use std::io::{self, Write};

/// Human-readable output.
pub struct TableSink<W: Write> {
    out: W,
    origin_ns: Option<u64>,
    row_widths: Option<Vec<usize>>,
    time: TimeDisplay,
    /// Reused: a batch's lines before they are written.
    text: String,
}

impl<W: Write> TableSink<W> {
    /// A sink writing to `out`, times as raw ns (files).
    pub fn new(out: W) -> Self {
        TableSink { out, origin_ns: None, row_widths: None, time: TimeDisplay::Raw, text: String::new() }
    }

    /// The same, showing `time` columns as `time` says (the terminal).
    pub fn with_time(self, time: TimeDisplay) -> Self {
        TableSink { time, ..self }
    }

    fn stream_rows(&mut self, o: &Output) -> io::Result<()> {
        let schema = o.batch.schema();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        let right: Vec<bool> = schema.fields().iter().map(|f| f.data_type().is_numeric()).collect();
        let cells = Cells::of(&o.batch, &names, &self.time);
        let mut text = std::mem::take(&mut self.text);
        text.clear();
        let first = self.row_widths.is_none();
        let widths = self.row_widths.take().unwrap_or_else(|| names.iter().map(|n| n.len()).collect());
        let widths = widths_with(&cells, widths);
        if first {
            push_line(&mut text, names.iter().copied(), &widths, &right);
        }
        for r in 0..cells.rows {
            let row = cells.row(r);
            if !row.contains('\n') {
                push_line(&mut text, (0..cells.cols).map(|c| cells.get(r, c)), &widths, &right);
                continue;
            }
            // A multi-line cell (a stack) continues on the next lines, other cells blank.
            let height = (0..cells.cols).map(|c| cells.get(r, c).lines().count()).max().unwrap_or(1).max(1);
            for k in 0..height {
                let parts = (0..cells.cols).map(|c| cells.get(r, c).lines().nth(k).unwrap_or(""));
                push_line(&mut text, parts, &widths, &right);
            }
        }
        self.row_widths = Some(widths);
        let written = self.out.write_all(text.as_bytes());
        self.text = text;
        written?;
        self.out.flush()
    }
}

/// One batch's cells as terminal text: one string, a span per cell, row by row.
struct Cells {
    text: String,
    spans: Vec<(usize, usize)>,
    rows: usize,
    cols: usize,
}

impl Cells {
    fn of(batch: &RecordBatch, names: &[&str], time: &TimeDisplay) -> Cells {
        let (rows, cols) = (batch.num_rows(), batch.num_columns());
        let mut c =
            Cells { text: String::with_capacity(rows * cols * 8), spans: Vec::with_capacity(rows * cols), rows, cols };
        for r in 0..rows {
            for (col, name) in batch.columns().iter().zip(names) {
                let start = c.text.len();
                push_terminal_text(&mut c.text, name, &cell(col, r), time);
                c.spans.push((start, c.text.len()));
            }
        }
        c
    }

    fn get(&self, row: usize, col: usize) -> &str {
        let (a, b) = self.spans[row * self.cols + col];
        &self.text[a..b]
    }

    /// The text of a row's cells, back to back.
    fn row(&self, row: usize) -> &str {
        match self.cols {
            0 => "",
            n => &self.text[self.spans[row * n].0..self.spans[row * n + n - 1].1],
        }
    }
}

/// `widths` widened to the widest line of each column's cells.
fn widths_with(cells: &Cells, mut widths: Vec<usize>) -> Vec<usize> {
    for r in 0..cells.rows {
        let multi = cells.row(r).contains('\n');
        for (c, w) in widths.iter_mut().enumerate() {
            let s = cells.get(r, c);
            let widest = if multi { s.lines().map(str::len).max().unwrap_or(0) } else { s.len() };
            *w = (*w).max(widest);
        }
    }
    widths
}

/// One line of aligned cells, two spaces apart, without trailing blanks.
/// Widths are in bytes, padding in characters (as `format!("{c:>w$}")` pads).
fn push_line<'a>(out: &mut String, cells: impl Iterator<Item = &'a str>, widths: &[usize], right: &[bool]) {
    let start = out.len();
    for (i, ((c, &w), &r)) in cells.zip(widths).zip(right).enumerate() {
        if i > 0 {
            out.push_str("  ");
        }
        let pad = w.saturating_sub(c.chars().count());
        if !r {
            out.push_str(c);
        }
        out.extend(std::iter::repeat_n(' ', pad));
        if r {
            out.push_str(c);
        }
    }
    let kept = out[start..].trim_end().len();
    out.truncate(start + kept);
    out.push('\n');
}

impl<W: Write> TableSink<W> {
    /// One block per group: its other columns on a line, then each histogram as bars
    /// (like bpftrace's `@[key]:` blocks).
    fn histogram_blocks(&mut self, title: &str, o: &Output) -> io::Result<()> {
        let schema = o.batch.schema();
        writeln!(self.out, "{title}: {} rows", o.batch.num_rows())?;
        for row in rows(&o.batch) {
            let mut head = vec![];
            let mut hists = vec![];
            for (f, v) in schema.fields().iter().zip(row) {
                match v {
                    crate::Value::Hist(b) => hists.push((f.name().clone(), b)),
                    v => head.push(format!("{} = {}", f.name(), text(&v))),
                }
            }
            if !head.is_empty() {
                writeln!(self.out, "\n{}", head.join(", "))?;
            }
            for (name, buckets) in hists {
                writeln!(self.out, "{name}:")?;
                if buckets.is_empty() {
                    writeln!(self.out, "(no events)")?;
                }
                write!(self.out, "{}", super::bars(&buckets))?;
            }
        }
        writeln!(self.out)?;
        self.out.flush()
    }
}

impl<W: Write> Sink for TableSink<W> {
    fn write(&mut self, o: &Output) -> io::Result<()> {
        let title = match o.window {
            WindowBounds::Rows => return self.stream_rows(o),
            WindowBounds::Time { start_ns, end_ns } => {
                let origin = *self.origin_ns.get_or_insert(start_ns);
                let s = |ns: u64| (ns.saturating_sub(origin)) as f64 / 1e9;
                let what = if o.partial { "so far" } else { "window" };
                format!("{what} {:.3}s – {:.3}s ({:.3} s)", s(start_ns), s(end_ns), (end_ns - start_ns) as f64 / 1e9)
            }
            WindowBounds::Count { index } => format!("count window {index}"),
        };
        let schema = o.batch.schema();
        if super::BucketRows::of(&schema).is_some() {
            return self.histogram_blocks(&title, o);
        }
        let mut t = Table::new();
        t.load_preset(presets::UTF8_BORDERS_ONLY);
        t.set_header(schema.fields().iter().map(|f| Cell::new(f.name())));
        for row in rows(&o.batch) {
            t.add_row(row.iter().zip(schema.fields()).map(|(v, f)| {
                let c = Cell::new(terminal_text(f.name(), v, &self.time));
                if matches!(v, crate::Value::S(_)) {
                    c
                } else {
                    c.set_alignment(CellAlignment::Right)
                }
            }));
        }
        writeln!(self.out, "{title}: {} rows\n{t}", o.batch.num_rows())?;
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::display::terminal_text;
    use arrow_array::{ArrayRef, Int64Array, StringArray, UInt64Array};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;

    /// The streamed table as it was written before a batch went into one
    /// string (per-row values, a String per cell and per line): the bytes to keep.
    fn reference(batches: &[RecordBatch], time: &TimeDisplay) -> String {
        let mut out = String::new();
        let mut row_widths: Option<Vec<usize>> = None;
        let line = |cells: &[&str], widths: &[usize], right: &[bool]| -> String {
            let padded: Vec<String> = cells
                .iter()
                .zip(widths)
                .zip(right)
                .map(|((c, w), r)| if *r { format!("{c:>w$}") } else { format!("{c:<w$}") })
                .collect();
            padded.join("  ").trim_end().to_string()
        };
        for b in batches {
            let schema = b.schema();
            let names: Vec<&String> = schema.fields().iter().map(|f| f.name()).collect();
            let right: Vec<bool> = schema.fields().iter().map(|f| f.data_type().is_numeric()).collect();
            let cells: Vec<Vec<String>> =
                rows(b).map(|row| row.iter().zip(&names).map(|(v, n)| terminal_text(n, v, time)).collect()).collect();
            let widest = |i: usize, c: &[Vec<String>]| c.iter().flat_map(|r| r[i].lines()).map(str::len).max();
            if row_widths.is_none() {
                let widths: Vec<usize> =
                    names.iter().enumerate().map(|(i, n)| n.len().max(widest(i, &cells).unwrap_or(0))).collect();
                let header: Vec<&str> = names.iter().map(|n| n.as_str()).collect();
                out += &format!("{}\n", line(&header, &widths, &right));
                row_widths = Some(widths);
            }
            let widths = row_widths.as_mut().unwrap();
            for (i, w) in widths.iter_mut().enumerate() {
                *w = (*w).max(widest(i, &cells).unwrap_or(0));
            }
            for row in &cells {
                let height = row.iter().map(|c| c.lines().count()).max().unwrap_or(1).max(1);
                for k in 0..height {
                    let parts: Vec<&str> = row.iter().map(|c| c.lines().nth(k).unwrap_or("")).collect();
                    out += &format!("{}\n", line(&parts, widths, &right));
                }
            }
        }
        out
    }

    fn batch(times: &[u64], deltas: &[i64], names: &[&str], stacks: &[&str]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("time", DataType::UInt64, false),
            Field::new("delta", DataType::Int64, false),
            Field::new("name", DataType::Utf8, true),
            Field::new("kstack", DataType::Utf8, false),
        ]));
        let cols: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::from(times.to_vec())),
            Arc::new(Int64Array::from(deltas.to_vec())),
            Arc::new(StringArray::from(names.iter().map(|n| (*n != "NULL").then_some(*n)).collect::<Vec<_>>())),
            Arc::new(StringArray::from(stacks.to_vec())),
        ];
        RecordBatch::try_new(schema, cols).unwrap()
    }

    #[test]
    fn streamed_rows_keep_every_byte_of_the_per_cell_table() {
        let batches = [
            batch(&[5_000_000_000, 4_000_000_000], &[-3, 12], &["é", "tab\t "], &["a+0x1; b+0x2", ""]),
            // Wider cells later widen their columns; a stack of three frames;
            // multi-byte names are padded by characters, measured in bytes.
            batch(&[7_123_456_789], &[i64::MIN], &["ünïcödé wide"], &["x; y; z"]),
            batch(&[8_000_000_001, 9_000_000_000], &[0, 1], &["NULL", "  lead"], &["f+0x10", "g\r; h"]),
        ];
        for time in [TimeDisplay::Raw, TimeDisplay::Relative { origin_ns: 4_500_000_000 }] {
            let mut sink = TableSink::new(Vec::new()).with_time(time);
            for b in &batches {
                let o = Output { window: WindowBounds::Rows, batch: b.clone(), partial: false, extras: vec![] };
                sink.write(&o).unwrap();
            }
            let got = String::from_utf8(sink.out).unwrap();
            assert_eq!(got, reference(&batches, &time));
            assert_eq!(got.lines().count(), 1 + (2 + 1) + 3 + (1 + 2), "{got}");
        }
    }
}

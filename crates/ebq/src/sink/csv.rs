//! CSV: a header once, then one line per row (per bucket for histograms), window columns first.

use super::{line_rows, text, Sink};
use crate::runtime::{Output, Value, WindowBounds};
use std::io::{self, Write};

/// Writes RFC 4180 CSV.
pub struct CsvSink<W: Write> {
    out: W,
    header_written: bool,
}

impl<W: Write> CsvSink<W> {
    /// A sink writing to `out`.
    pub fn new(out: W) -> Self {
        CsvSink { out, header_written: false }
    }
}

fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

impl<W: Write> Sink for CsvSink<W> {
    fn write(&mut self, o: &Output) -> io::Result<()> {
        let window_cols: &[&str] = match o.window {
            WindowBounds::Time { .. } => &["window_start_ns", "window_end_ns"],
            WindowBounds::Count { .. } => &["window"],
            WindowBounds::Rows => &[],
        };
        let (columns, rows) = line_rows(&o.batch);
        if !self.header_written {
            let mut names: Vec<String> = window_cols.iter().map(|s| s.to_string()).collect();
            names.extend(columns.iter().map(|n| quote(n)));
            writeln!(self.out, "{}", names.join(","))?;
            self.header_written = true;
        }
        for row in rows {
            let mut cells: Vec<String> = match o.window {
                WindowBounds::Time { start_ns, end_ns } => vec![start_ns.to_string(), end_ns.to_string()],
                WindowBounds::Count { index } => vec![index.to_string()],
                WindowBounds::Rows => vec![],
            };
            cells.extend(row.iter().map(|v| match v {
                Value::S(s) => quote(s),
                v => text(v),
            }));
            writeln!(self.out, "{}", cells.join(","))?;
        }
        self.out.flush()
    }
}

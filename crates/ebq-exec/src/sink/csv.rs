//! CSV: a header once, then one line per row (per bucket for histograms), window
//! columns first, the columns in the order JSON has them ([`line_table`]).

use super::{line_table, text, Sink};
use crate::{Output, Value};
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
        let (columns, rows) = line_table(o);
        if !self.header_written {
            let names: Vec<String> = columns.iter().map(|n| quote(n)).collect();
            writeln!(self.out, "{}", names.join(","))?;
            self.header_written = true;
        }
        for row in rows {
            let cells: Vec<String> = row
                .iter()
                .map(|v| match v {
                    Value::S(s) => quote(s),
                    v => text(v),
                })
                .collect();
            writeln!(self.out, "{}", cells.join(","))?;
        }
        self.out.flush()
    }
}

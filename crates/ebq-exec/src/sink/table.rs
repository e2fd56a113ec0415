//! The terminal: a table per window; streamed rows as aligned lines.
//!
//! Streamed rows are written as they come, so column widths are fixed from
//! the header and the first batch; a wider cell later widens its column from
//! then on. Numbers are right-aligned under right-aligned headers. Times and
//! stacks are shown as [`TimeDisplay`] and one frame per line (see `display`).

use super::display::{terminal_text, TimeDisplay};
use super::{rows, text, Sink};
use crate::{Output, WindowBounds};
use comfy_table::{presets, Cell, CellAlignment, Table};
use std::io::{self, Write};

/// Human-readable output.
pub struct TableSink<W: Write> {
    out: W,
    origin_ns: Option<u64>,
    row_widths: Option<Vec<usize>>,
    time: TimeDisplay,
}

impl<W: Write> TableSink<W> {
    /// A sink writing to `out`, times as raw ns (files).
    pub fn new(out: W) -> Self {
        TableSink { out, origin_ns: None, row_widths: None, time: TimeDisplay::Raw }
    }

    /// The same, showing `time` columns as `time` says (the terminal).
    pub fn with_time(self, time: TimeDisplay) -> Self {
        TableSink { time, ..self }
    }

    fn stream_rows(&mut self, o: &Output) -> io::Result<()> {
        let schema = o.batch.schema();
        let names: Vec<&String> = schema.fields().iter().map(|f| f.name()).collect();
        let right: Vec<bool> = schema.fields().iter().map(|f| f.data_type().is_numeric()).collect();
        let cells: Vec<Vec<String>> = rows(&o.batch)
            .map(|row| row.iter().zip(&names).map(|(v, n)| terminal_text(n, v, &self.time)).collect())
            .collect();
        let widest = |i: usize, c: &[Vec<String>]| c.iter().flat_map(|r| r[i].lines()).map(str::len).max();
        if self.row_widths.is_none() {
            let widths: Vec<usize> =
                names.iter().enumerate().map(|(i, n)| n.len().max(widest(i, &cells).unwrap_or(0))).collect();
            let header: Vec<&str> = names.iter().map(|n| n.as_str()).collect();
            writeln!(self.out, "{}", line(&header, &widths, &right))?;
            self.row_widths = Some(widths);
        }
        let widths = self.row_widths.as_mut().expect("set above");
        for (i, w) in widths.iter_mut().enumerate() {
            *w = (*w).max(widest(i, &cells).unwrap_or(0));
        }
        for row in &cells {
            // A multi-line cell (a stack) continues on the next lines, other cells blank.
            let height = row.iter().map(|c| c.lines().count()).max().unwrap_or(1).max(1);
            for k in 0..height {
                let parts: Vec<&str> = row.iter().map(|c| c.lines().nth(k).unwrap_or("")).collect();
                writeln!(self.out, "{}", line(&parts, widths, &right))?;
            }
        }
        self.out.flush()
    }
}

/// One line of aligned cells, two spaces apart, without trailing blanks.
fn line(cells: &[&str], widths: &[usize], right: &[bool]) -> String {
    let padded: Vec<String> = cells
        .iter()
        .zip(widths)
        .zip(right)
        .map(|((c, w), r)| if *r { format!("{c:>w$}") } else { format!("{c:<w$}") })
        .collect();
    padded.join("  ").trim_end().to_string()
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

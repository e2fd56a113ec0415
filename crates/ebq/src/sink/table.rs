//! The terminal: a table per window; streamed rows as aligned lines.

use super::{rows, text, Sink};
use crate::runtime::{Output, WindowBounds};
use comfy_table::{presets, Cell, CellAlignment, Table};
use std::io::{self, Write};

/// Human-readable output.
pub struct TableSink<W: Write> {
    out: W,
    origin_ns: Option<u64>,
    row_widths: Option<Vec<usize>>,
}

impl<W: Write> TableSink<W> {
    /// A sink writing to `out`.
    pub fn new(out: W) -> Self {
        TableSink { out, origin_ns: None, row_widths: None }
    }

    fn stream_rows(&mut self, o: &Output) -> io::Result<()> {
        let schema = o.batch.schema();
        let names: Vec<&String> = schema.fields().iter().map(|f| f.name()).collect();
        if self.row_widths.is_none() {
            let widths: Vec<usize> = names.iter().map(|n| n.len().max(8)).collect();
            let header: Vec<String> = names.iter().zip(&widths).map(|(n, w)| format!("{n:<w$}")).collect();
            writeln!(self.out, "{}", header.join("  ").trim_end())?;
            self.row_widths = Some(widths);
        }
        let widths = self.row_widths.as_ref().expect("set above");
        for row in rows(&o.batch) {
            let cells: Vec<String> = row.iter().zip(widths).map(|(v, w)| format!("{:<w$}", text(v))).collect();
            writeln!(self.out, "{}", cells.join("  ").trim_end())?;
        }
        self.out.flush()
    }
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
                    crate::runtime::Value::Hist(b) => hists.push((f.name().clone(), b)),
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
            t.add_row(row.iter().map(|v| {
                let c = Cell::new(text(v));
                if matches!(v, crate::runtime::Value::S(_)) {
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

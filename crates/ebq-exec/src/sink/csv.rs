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

/// [`quote`] appended to `out`.
fn push_quoted(out: &mut Vec<u8>, s: &str) {
    if s.contains([',', '"', '\n', '\r']) {
        out.push(b'"');
        out.extend_from_slice(s.replace('"', "\"\"").as_bytes());
        out.push(b'"');
    } else {
        out.extend_from_slice(s.as_bytes());
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
        // A batch's lines go out in few writes (a line each was a write each).
        let mut lines = Vec::with_capacity(48 * rows.len().min(8192));
        for row in rows {
            for (i, v) in row.iter().enumerate() {
                if i > 0 {
                    lines.push(b',');
                }
                match v {
                    Value::S(s) => push_quoted(&mut lines, s),
                    Value::U(u) => write!(lines, "{u}")?,
                    Value::I(n) => write!(lines, "{n}")?,
                    v => lines.extend_from_slice(text(v).as_bytes()),
                }
            }
            lines.push(b'\n');
            if lines.len() >= 1 << 16 {
                self.out.write_all(&lines)?;
                lines.clear();
            }
        }
        self.out.write_all(&lines)?;
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WindowBounds;
    use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;

    #[test]
    fn cells_are_quoted_only_when_they_must_be() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("a,b", DataType::Utf8, true),
            Field::new("n", DataType::Int64, false),
            Field::new("f", DataType::Float64, false),
        ]));
        let cols: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(vec![Some("plain"), Some("a,\"b\"\nc"), None, Some("cr\r")])),
            Arc::new(Int64Array::from(vec![-7, 0, i64::MIN, 12])),
            Arc::new(Float64Array::from(vec![1.5, 2.0, 0.1234, -3.25])),
        ];
        let batch = RecordBatch::try_new(schema, cols).unwrap();
        let mut out = Vec::new();
        let mut sink = CsvSink::new(&mut out);
        for _ in 0..2 {
            let o = Output {
                window: WindowBounds::Count { index: 4 },
                batch: batch.clone(),
                partial: false,
                extras: vec![],
            };
            sink.write(&o).unwrap();
        }
        let rows = "4,plain,-7,1.5\n4,\"a,\"\"b\"\"\nc\",0,2\n4,,-9223372036854775808,0.123\n4,\"cr\r\",12,-3.25\n";
        assert_eq!(String::from_utf8(out).unwrap(), format!("window,\"a,b\",n,f\n{rows}{rows}"));
    }
}

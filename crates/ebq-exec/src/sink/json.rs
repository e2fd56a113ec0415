//! JSON lines: one object per result row (per bucket for histograms), keys = output column names.

use super::{line_table, Sink};
use crate::{Output, Value};
use serde_json::{Number, Value as Json};
use std::io::{self, Write};

/// Writes one JSON object per row: the window columns
/// (`window_start_ns`/`window_end_ns` and their wall-clock `window_start`/`window_end`
/// for time windows, `window` for count windows), then the query's columns,
/// keys in that order (SELECT order, not sorted), then `"partial": true` on an
/// interrupted window.
pub struct JsonSink<W: Write> {
    out: W,
}

impl<W: Write> JsonSink<W> {
    /// A sink writing to `out`.
    pub fn new(out: W) -> Self {
        JsonSink { out }
    }
}

impl<W: Write> Sink for JsonSink<W> {
    fn write(&mut self, o: &Output) -> io::Result<()> {
        let (names, rows) = line_table(o);
        // Written key by key (serde_json's map would sort the keys): each key
        // with its `{`/`,` before and `:` after, escaped once per batch.
        let keys: Vec<Vec<u8>> = names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let mut k = vec![if i == 0 { b'{' } else { b',' }];
                serde_json::to_writer(&mut k, name).map(|()| k.push(b':')).map(|()| k)
            })
            .collect::<Result<_, _>>()?;
        // A batch's lines go out in one write (a line each was a write each).
        let mut line = Vec::with_capacity(64 * rows.len().min(8192));
        for row in rows {
            for (key, v) in keys.iter().zip(row) {
                line.extend_from_slice(key);
                push_json(&mut line, v)?;
            }
            if o.partial {
                line.extend_from_slice(if names.is_empty() { b"{" } else { b"," });
                line.extend_from_slice(b"\"partial\":true");
            } else if names.is_empty() {
                line.push(b'{');
            }
            line.extend_from_slice(b"}\n");
            if line.len() >= 1 << 16 {
                self.out.write_all(&line)?;
                line.clear();
            }
        }
        self.out.write_all(&line)?;
        self.out.flush()
    }
}

/// `v` as JSON, as serde_json writes it ([`json_value`]), without a
/// `serde_json::Value` for the common kinds.
fn push_json(out: &mut Vec<u8>, v: Value) -> io::Result<()> {
    match v {
        Value::U(u) => write!(out, "{u}"),
        Value::I(i) => write!(out, "{i}"),
        Value::S(s) => Ok(serde_json::to_writer(out, &s)?),
        v => Ok(serde_json::to_writer(out, &json_value(v))?),
    }
}

fn json_value(v: Value) -> Json {
    match v {
        Value::U(u) => u.into(),
        Value::I(i) => i.into(),
        Value::F(f) => Number::from_f64(f).map_or(Json::Null, Json::Number),
        Value::S(s) => s.into(),
        Value::B(b) => b.into(),
        Value::Null => Json::Null,
        Value::Hist(_) => unreachable!("line_rows expands histograms into bucket rows"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WindowBounds;
    use arrow_array::{RecordBatch, UInt64Array};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;

    #[test]
    fn keys_follow_the_select_order() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("zz", DataType::UInt64, false),
            Field::new("time", DataType::UInt64, false),
            Field::new("aa", DataType::UInt64, false),
        ]));
        let cols = [u64::MAX, 5, 1].map(|v| Arc::new(UInt64Array::from(vec![v])) as _);
        let batch = RecordBatch::try_new(schema, cols.to_vec()).unwrap();
        let mut out = Vec::new();
        JsonSink::new(&mut out)
            .write(&Output { window: WindowBounds::Count { index: 2 }, batch, partial: true, extras: vec![] })
            .unwrap();
        let wall = crate::sink::wall_clock().iso(5);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!(
                "{{\"window\":2,\"zz\":18446744073709551615,\"time\":5,\"time_wall\":\"{wall}\",\"aa\":1,\"partial\":true}}\n"
            )
        );
    }
}

//! JSON lines: one object per result row (per bucket for histograms), keys = output column names.

use super::{line_rows, Sink};
use crate::runtime::{Output, Value, WindowBounds};
use serde_json::{Map, Number, Value as Json};
use std::io::{self, Write};

/// Writes one JSON object per row, plus `window_start_ns`/`window_end_ns`
/// (time windows) or `window` (count windows).
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
        let (names, rows) = line_rows(&o.batch);
        for row in rows {
            let mut obj = Map::new();
            for (name, v) in names.iter().zip(row) {
                obj.insert(name.clone(), json_value(v));
            }
            match o.window {
                WindowBounds::Time { start_ns, end_ns } => {
                    obj.insert("window_start_ns".into(), start_ns.into());
                    obj.insert("window_end_ns".into(), end_ns.into());
                }
                WindowBounds::Count { index } => {
                    obj.insert("window".into(), index.into());
                }
                WindowBounds::Rows => {}
            }
            if o.partial {
                obj.insert("partial".into(), true.into());
            }
            serde_json::to_writer(&mut self.out, &Json::Object(obj))?;
            self.out.write_all(b"\n")?;
        }
        self.out.flush()
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

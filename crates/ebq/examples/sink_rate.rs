//! Rows per second of each sink's writer, over a synthetic batch shaped like
//! `SELECT time, tid, fd, count FROM syscalls.sys_enter_pread64` (issue 35
//! item 6): the encoding cost alone, written to /dev/null (JSON, CSV and the
//! table through a buffered writer as the CLI gives them stdout; Parquet and
//! Arrow IPC as `-o` files). `json/line` is JSON through a line-buffered
//! writer, one write(2) per row, as the CLI wrote stdout before.
//!
//! ```sh
//! cargo run --release -p ebq --example sink_rate -- [ROWS] [BATCH_ROWS]
//! ```
//!
//! Default 300,000 rows in batches of 10,000 (a poll's worth of a busy CPU);
//! the best of 3 runs per sink.

use arrow_array::{ArrayRef, RecordBatch, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use ebq::sink::{CsvSink, FileFormat, FileSink, JsonSink, Rotation, Sink, TableSink};
use ebq::{Output, WindowBounds};
use std::io::BufWriter;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn batches(rows: usize, per: usize) -> Vec<Output> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("time", DataType::UInt64, false),
        Field::new("tid", DataType::UInt32, false),
        Field::new("fd", DataType::UInt64, false),
        Field::new("count", DataType::UInt64, false),
    ]));
    let t0 = 1_043_388_427_115u64;
    (0..rows)
        .step_by(per)
        .map(|start| {
            let n = per.min(rows - start);
            let cols: Vec<ArrayRef> = vec![
                Arc::new(UInt64Array::from_iter_values((start..start + n).map(|i| t0 + 300 * i as u64))),
                Arc::new(UInt32Array::from_iter_values(std::iter::repeat_n(11930, n))),
                Arc::new(UInt64Array::from_iter_values(std::iter::repeat_n(3, n))),
                Arc::new(UInt64Array::from_iter_values(std::iter::repeat_n(1, n))),
            ];
            let batch = RecordBatch::try_new(schema.clone(), cols).expect("columns match");
            Output { window: WindowBounds::Rows, batch, partial: false, extras: vec![] }
        })
        .collect()
}

fn null_file() -> std::fs::File {
    std::fs::OpenOptions::new().write(true).open("/dev/null").expect("/dev/null")
}

fn null() -> BufWriter<std::fs::File> {
    BufWriter::with_capacity(64 << 10, null_file())
}

/// Makes a fresh sink for one timed run.
type MakeSink = Box<dyn Fn() -> Box<dyn Sink>>;

fn time(outs: &[Output], make: &dyn Fn() -> Box<dyn Sink>) -> Duration {
    (0..3)
        .map(|_| {
            let mut sink = make();
            let t = Instant::now();
            for o in outs {
                sink.write(o).expect("write");
            }
            sink.finish().expect("finish");
            t.elapsed()
        })
        .min()
        .expect("3 runs")
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("a number")).collect();
    let rows = args.first().copied().unwrap_or(300_000);
    let per = args.get(1).copied().unwrap_or(10_000);
    let outs = batches(rows, per);
    let dir = std::env::temp_dir().join(format!("ebq-sink-rate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = |name: &str, format: FileFormat| {
        let path = dir.join(name);
        move || -> Box<dyn Sink> {
            Box::new(FileSink::create(&path, format, Rotation::default()).expect("create the file"))
        }
    };
    let sinks: Vec<(&str, MakeSink)> = vec![
        ("json", Box::new(|| Box::new(JsonSink::new(null())))),
        // As the CLI gave JSON stdout before issue 35 item 6: one write(2) per row.
        ("json/line", Box::new(|| Box::new(JsonSink::new(std::io::LineWriter::new(null_file()))))),
        ("csv", Box::new(|| Box::new(CsvSink::new(null())))),
        ("table", Box::new(|| Box::new(TableSink::new(null())))),
        ("parquet", Box::new(file("r.parquet", FileFormat::Parquet))),
        ("arrow", Box::new(file("r.arrow", FileFormat::Arrow))),
    ];
    println!("{rows} rows in batches of {per}, best of 3");
    for (name, make) in &sinks {
        let d = time(&outs, make.as_ref());
        println!("{name:10} {:>8.1} ms  {:>12.0} rows/s", d.as_secs_f64() * 1e3, rows as f64 / d.as_secs_f64());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

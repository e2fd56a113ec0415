//! `ebq bench sinks`: what each sink's encoding costs per row, without root.
//!
//! The batches are synthetic but shaped as `ebq --sink …` gets them for
//! `SELECT time, tid, count FROM syscalls.sys_enter_read` under `dd bs=1`
//! (issue 38's three-sink acceptance query): `time` UInt64 rising 0.5–1.5 µs
//! a row, `tid` UInt32 and `count` UInt64 constant, in batches of
//! [`BATCH_ROWS`] (a busy ring wakes the reader at 256 KiB of 24-byte records
//! plus their 8-byte headers: 8192 rows; a run's batches measured so).
//!
//! Each sink is the one the CLI builds for its spec, fed every batch and
//! finished: the terminal table (relative times, as `--time` defaults) into
//! a writer that only counts the bytes; Parquet and CSV as `--sink F.parquet`/`F.csv` files in the
//! temporary directory; Kafka's two formats up to librdkafka's produce: one
//! Arrow IPC stream per batch ([`ipc_stream`]) or the JSON lines of a batch
//! (one message each). The cost is the thread's CPU time (user + system,
//! `CLOCK_THREAD_CPUTIME_ID`), which another process on the CPU does not
//! inflate the way it does wall time; the best of the runs counts.

use super::{table, Ctx};
use ebq::sink::{ipc_stream, FileFormat, FileSink, JsonSink, Rotation, Sink, TableSink, TimeDisplay};
use ebq::{Output, WindowBounds};
use serde_json::{json, Value};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Rows per batch (see the module's note).
pub const BATCH_ROWS: usize = 8192;

/// The query whose rows the batches stand for.
const QUERY: &str = "SELECT time, tid, count FROM syscalls.sys_enter_read";

/// The table's columns.
pub const HEADER: &[&str] = &["sink", "ns/row (best)", "ns/row (worst)", "rows/s (best)", "bytes/row"];

/// `rows` rows of the query in batches of `per`.
fn batches(rows: usize, per: usize) -> Vec<Output> {
    use arrow_array::{ArrayRef, RecordBatch, UInt32Array, UInt64Array};
    use arrow_schema::{DataType, Field, Schema};
    let schema = Arc::new(Schema::new(vec![
        Field::new("time", DataType::UInt64, false),
        Field::new("tid", DataType::UInt32, false),
        Field::new("count", DataType::UInt64, false),
    ]));
    // dd's reads come about 1 µs apart, not exactly: 0.5–1.5 µs (xorshift),
    // so a delta encoding has digits to store, as with real times.
    let (mut t, mut x) = (1_043_388_427_115u64, 0x2545_f491_4f6c_dd1du64);
    let times: Vec<u64> = (0..rows)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            t += 500 + x % 1000;
            t
        })
        .collect();
    (0..rows)
        .step_by(per.max(1))
        .map(|start| {
            let n = per.min(rows - start);
            let cols: Vec<ArrayRef> = vec![
                Arc::new(UInt64Array::from(times[start..start + n].to_vec())),
                Arc::new(UInt32Array::from_iter_values(std::iter::repeat_n(11930, n))),
                Arc::new(UInt64Array::from_iter_values(std::iter::repeat_n(1, n))),
            ];
            let batch = RecordBatch::try_new(schema.clone(), cols).expect("columns match");
            Output { window: WindowBounds::Rows, batch, partial: false, extras: vec![] }
        })
        .collect()
}

/// Kafka `--kafka-format arrow`: one IPC stream per batch into a reused
/// buffer, as the Kafka sink makes its messages; counts their bytes.
struct IpcMessages(Vec<u8>, Bytes);

impl Sink for IpcMessages {
    fn write(&mut self, o: &Output) -> io::Result<()> {
        ipc_stream(o, &mut self.0)?;
        self.1.fetch_add(self.0.len() as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
}

/// Kafka JSON: a batch's JSON lines into a reused buffer, as the Kafka sink
/// makes its messages (one line each); counts their bytes.
struct JsonMessages(Vec<u8>, Bytes);

impl Sink for JsonMessages {
    fn write(&mut self, o: &Output) -> io::Result<()> {
        self.0.clear();
        JsonSink::new(&mut self.0).write(o)?;
        let lines = self.0.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count();
        std::hint::black_box(lines);
        self.1.fetch_add(self.0.len() as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
}

/// `io::sink()` that counts the bytes.
struct Counted(Bytes);

impl io::Write for Counted {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.fetch_add(b.len() as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Where a sink's bytes are counted (files: their size, read after the run).
type Bytes = Arc<std::sync::atomic::AtomicU64>;

/// A fresh sink for one timed run.
type Make = Box<dyn Fn(&Bytes) -> io::Result<Box<dyn Sink>>>;

/// The cases: name, how to make the sink, and its file if it writes one.
fn cases(dir: &Path) -> Vec<(&'static str, Make, Option<PathBuf>)> {
    let file = |name: &str, format: FileFormat| -> (Make, Option<PathBuf>) {
        let path = dir.join(name);
        let p = path.clone();
        let make: Make = Box::new(move |_: &Bytes| {
            let sink = FileSink::create(&p, format, Rotation::default())?;
            Ok(Box::new(sink) as Box<dyn Sink>)
        });
        (make, Some(path))
    };
    let (parquet, parquet_path) = file("rows.parquet", FileFormat::Parquet);
    let (csv, csv_path) = file("rows.csv", FileFormat::Csv);
    let origin_ns = 1_043_388_427_115 - 5_000_000;
    let terminal: Make = Box::new(move |n: &Bytes| {
        let t = TableSink::new(Counted(n.clone())).with_time(TimeDisplay::Relative { origin_ns });
        Ok(Box::new(t) as Box<dyn Sink>)
    });
    let arrow: Make = Box::new(|n: &Bytes| Ok(Box::new(IpcMessages(vec![], n.clone())) as Box<dyn Sink>));
    let json: Make = Box::new(|n: &Bytes| Ok(Box::new(JsonMessages(vec![], n.clone())) as Box<dyn Sink>));
    vec![
        ("terminal table (`-`)", terminal, None),
        ("Parquet file", parquet, parquet_path),
        ("CSV file", csv, csv_path),
        ("Kafka arrow (IPC stream per batch)", arrow, None),
        ("Kafka JSON (a line per row)", json, None),
    ]
}

/// This thread's CPU time (user + system).
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// One run: a fresh sink, every batch, finish; its CPU time and bytes.
fn one_run(outs: &[Output], make: &Make, file: Option<&Path>) -> Result<(Duration, u64), String> {
    let bytes = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut sink = make(&bytes).map_err(|e| format!("error: {e}"))?;
    let t0 = thread_cpu();
    for o in outs {
        sink.write(o).map_err(|e| format!("error: write: {e}"))?;
    }
    sink.finish().map_err(|e| format!("error: finish: {e}"))?;
    drop(sink);
    let cpu = thread_cpu() - t0;
    let n = match file {
        Some(p) => std::fs::metadata(p).map_err(|e| format!("error: {}: {e}", p.display()))?.len(),
        None => bytes.load(std::sync::atomic::Ordering::Relaxed),
    };
    Ok((cpu, n))
}

/// Runs the study: `ctx.count` rows (default 200,000) in batches of
/// [`BATCH_ROWS`] through each sink, `ctx.runs` times (default 3).
pub fn run(ctx: &Ctx, rows: usize) -> Result<Value, String> {
    let runs = ctx.runs.max(1);
    let outs = batches(rows, BATCH_ROWS);
    let dir = std::env::temp_dir().join(format!("ebq-bench-sinks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("error: {}: {e}", dir.display()))?;
    let mut results = vec![];
    for (name, make, file) in cases(&dir) {
        let mut cpu = vec![];
        let mut bytes = 0;
        for _ in 0..runs {
            let (c, b) = one_run(&outs, &make, file.as_deref())?;
            cpu.push(c.as_nanos() as f64 / rows as f64);
            bytes = b;
        }
        let best = cpu.iter().copied().fold(f64::INFINITY, f64::min);
        let worst = cpu.iter().copied().fold(0.0, f64::max);
        results.push(json!({
            "sink": name, "ns_per_row": best, "ns_per_row_worst": worst,
            "ns_per_row_runs": cpu, "bytes_per_row": bytes as f64 / rows as f64,
        }));
    }
    let _ = std::fs::remove_dir_all(&dir);
    let section = json!({ "query": QUERY, "rows": rows, "batch_rows": BATCH_ROWS, "runs": runs, "sinks": results });
    print!("{}", table::text(HEADER, &table_rows(&section)));
    Ok(section)
}

/// The table's rows from a results section.
pub fn table_rows(s: &Value) -> Vec<Vec<String>> {
    s["sinks"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            let best = r["ns_per_row"].as_f64();
            vec![
                r["sink"].as_str().unwrap_or("").to_string(),
                table::num(best, 1),
                table::num(r["ns_per_row_worst"].as_f64(), 1),
                table::num(best.map(|b| 1e9 / b), 0),
                table::num(r["bytes_per_row"].as_f64(), 1),
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_hold_the_rows_in_runtime_sized_pieces() {
        let b = batches(20_000, BATCH_ROWS);
        let sizes: Vec<usize> = b.iter().map(|o| o.batch.num_rows()).collect();
        assert_eq!(sizes, [8192, 8192, 3616]);
        assert_eq!(b[0].batch.schema().fields().len(), 3);
    }
}

//! Columnar files: Parquet and Arrow IPC (file format).
//!
//! The file's schema is the query's output columns, preceded by two UInt64
//! columns `window_start_ns`, `window_end_ns` (time windows, CLOCK_MONOTONIC)
//! and their wall-clock twins `window_start`, `window_end`
//! (`timestamp[ns, tz=UTC]`), or one `window` (count windows): the same names
//! and values as the JSON sink's keys. Row queries have no window columns. A
//! `time` column is followed by its wall-clock `time_wall` (see [`super::wall`]).
//! The schema is fixed by the first batch: all batches of one query have the
//! same columns and the same window kind.
//!
//! Both formats end with a footer, written by [`Sink::finish`]; a file whose
//! sink was not finished is not readable.

use super::{time_column, wall_clock, wall_type, window_columns, Sink, TIME, TIME_WALL};
use crate::Output;
use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{ArrayRef, RecordBatch, TimestampNanosecondArray, UInt64Array};
use arrow_ipc::writer::{FileWriter, StreamWriter};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;
use std::io::{self, Write};
use std::sync::Arc;

/// The file schema for outputs like `o`: window columns, then the batch's,
/// with `time_wall` after `time`.
pub fn file_schema(o: &Output) -> SchemaRef {
    let mut fields: Vec<Field> = window_columns(&o.window)
        .into_iter()
        .map(|c| Field::new(c.name, if c.wall { wall_type() } else { DataType::UInt64 }, false))
        .collect();
    let schema = o.batch.schema();
    fields.extend(schema.fields().iter().map(|f| f.as_ref().clone()));
    if let Some(i) = time_column(&schema) {
        fields.insert(fields.len() - schema.fields().len() + i + 1, Field::new(TIME_WALL, wall_type(), false));
    }
    Arc::new(Schema::new(fields))
}

/// `o`'s batch with its window and wall-clock columns added, checked against `schema`.
pub fn with_window_columns(o: &Output, schema: &SchemaRef) -> io::Result<RecordBatch> {
    let rows = o.batch.num_rows();
    let clock = wall_clock();
    let wall = |values: Vec<i64>| Arc::new(TimestampNanosecondArray::from(values).with_timezone("UTC")) as ArrayRef;
    let mut columns: Vec<ArrayRef> = window_columns(&o.window)
        .into_iter()
        .map(|c| match c.wall {
            true => wall(vec![clock.wall_ns(c.value); rows]),
            false => Arc::new(UInt64Array::from_value(c.value, rows)) as ArrayRef,
        })
        .collect();
    let lead = columns.len();
    columns.extend(o.batch.columns().iter().cloned());
    if let Some(i) = time_column(&o.batch.schema()) {
        let time = o.batch.column(i).as_primitive::<UInt64Type>();
        columns.insert(lead + i + 1, wall(time.values().iter().map(|&t| clock.wall_ns(t)).collect()));
    }
    RecordBatch::try_new(schema.clone(), columns).map_err(|e| {
        io::Error::new(io::ErrorKind::InvalidData, format!("a batch does not match the file's schema: {e}"))
    })
}

/// `o` with its window columns as one Arrow IPC stream (schema, batch, end of
/// stream), a message that decodes alone, in `out` (cleared first): what
/// `--kafka-format arrow` sends per batch (and `ebq bench sinks` times).
///
/// The caller keeps `out` from batch to batch: a new buffer for each (a
/// batch of 8,192 rows is about 230 KB) came from fresh pages, and the page
/// faults were most of the Kafka writer's system time (issue 38).
pub fn ipc_stream(o: &Output, out: &mut Vec<u8>) -> io::Result<()> {
    let schema = file_schema(o);
    let batch = with_window_columns(o, &schema)?;
    out.clear();
    let mut w = StreamWriter::try_new(out, &schema).map_err(io::Error::other)?;
    w.write(&batch).map_err(io::Error::other)?;
    w.finish().map_err(io::Error::other)
}

/// An Arrow-level file writer: opened with the schema, fed batches, finished.
trait BatchWriter<W>: Sized {
    fn open(out: W, schema: &SchemaRef) -> io::Result<Self>;
    fn write(&mut self, batch: &RecordBatch) -> io::Result<()>;
    fn finish(&mut self) -> io::Result<()>;
}

impl<W: Write + Send> BatchWriter<W> for ArrowWriter<W> {
    fn open(out: W, schema: &SchemaRef) -> io::Result<Self> {
        let mut props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_created_by(concat!("ebq ", env!("CARGO_PKG_VERSION")).into());
        // Event times are all but unique and rise: a dictionary only filled up
        // (1 MiB of distinct values, 131,072 rows) to be dropped, at a hash per
        // row; their deltas take a byte or two (issue 38, `ebq bench sinks`).
        let times = schema.fields().iter().filter(|f| {
            (f.name() == TIME || f.name() == TIME_WALL)
                && matches!(f.data_type(), DataType::UInt64 | DataType::Int64 | DataType::Timestamp(..))
        });
        for f in times {
            let column = ColumnPath::from(f.name().as_str());
            props = props
                .set_column_dictionary_enabled(column.clone(), false)
                .set_column_encoding(column, Encoding::DELTA_BINARY_PACKED);
        }
        ArrowWriter::try_new(out, schema.clone(), Some(props.build())).map_err(io::Error::other)
    }
    fn write(&mut self, batch: &RecordBatch) -> io::Result<()> {
        ArrowWriter::write(self, batch).map_err(io::Error::other)
    }
    fn finish(&mut self) -> io::Result<()> {
        ArrowWriter::finish(self).map_err(io::Error::other)?;
        self.inner_mut().flush()
    }
}

impl<W: Write> BatchWriter<W> for FileWriter<W> {
    fn open(out: W, schema: &SchemaRef) -> io::Result<Self> {
        FileWriter::try_new(out, schema).map_err(io::Error::other)
    }
    fn write(&mut self, batch: &RecordBatch) -> io::Result<()> {
        FileWriter::write(self, batch).map_err(io::Error::other)?;
        self.get_mut().flush()
    }
    fn finish(&mut self) -> io::Result<()> {
        FileWriter::finish(self).map_err(io::Error::other)?;
        self.get_mut().flush()
    }
}

/// The writer's life: waiting for the first batch (which fixes the schema),
/// writing, finished.
enum State<W, X> {
    Waiting(W),
    Writing { writer: X, schema: SchemaRef },
    Finished,
}

struct Columnar<W, X> {
    state: State<W, X>,
}

impl<W, X: BatchWriter<W>> Columnar<W, X> {
    fn write(&mut self, o: &Output) -> io::Result<()> {
        if let State::Waiting(_) = self.state {
            let State::Waiting(out) = std::mem::replace(&mut self.state, State::Finished) else { unreachable!() };
            let schema = file_schema(o);
            self.state = State::Writing { writer: X::open(out, &schema)?, schema };
        }
        match &mut self.state {
            State::Writing { writer, schema } => writer.write(&with_window_columns(o, schema)?),
            _ => Err(io::Error::other("write after finish")),
        }
    }

    fn finish(&mut self) -> io::Result<()> {
        match std::mem::replace(&mut self.state, State::Finished) {
            State::Writing { mut writer, .. } => writer.finish(),
            State::Waiting(_) | State::Finished => Ok(()),
        }
    }

    fn has_schema(&self) -> bool {
        matches!(self.state, State::Writing { .. })
    }
}

/// Writes a Parquet file (Snappy-compressed); [`finish`](Sink::finish) writes
/// the footer. Rows are buffered into row groups of up to 1 Mi rows. `time`
/// and `time_wall` are delta-encoded (`DELTA_BINARY_PACKED`), the other
/// columns dictionary-encoded while their distinct values fit in 1 MiB.
///
/// If no batch arrives before `finish`, nothing is written: write an empty
/// batch of the query's schema first to get a valid file with no rows.
pub struct ParquetSink<W: Write + Send> {
    inner: Columnar<W, ArrowWriter<W>>,
}

impl<W: Write + Send> ParquetSink<W> {
    /// A sink writing to `out`.
    pub fn new(out: W) -> Self {
        ParquetSink { inner: Columnar { state: State::Waiting(out) } }
    }

    /// Bytes written so far plus the estimated encoded size of the buffered
    /// row group.
    pub fn size_estimate(&self) -> u64 {
        match &self.inner.state {
            State::Writing { writer, .. } => (writer.bytes_written() + writer.in_progress_size()) as u64,
            _ => 0,
        }
    }

    /// True once the first batch has fixed the schema.
    pub fn has_schema(&self) -> bool {
        self.inner.has_schema()
    }
}

impl<W: Write + Send> Sink for ParquetSink<W> {
    fn write(&mut self, o: &Output) -> io::Result<()> {
        self.inner.write(o)
    }
    fn finish(&mut self) -> io::Result<()> {
        self.inner.finish()
    }
}

/// Writes an Arrow IPC file (the random-access "file" format, `.arrow`), one
/// record batch per output batch; [`finish`](Sink::finish) writes the footer.
///
/// If no batch arrives before `finish`, nothing is written: write an empty
/// batch of the query's schema first to get a valid file with no rows.
pub struct ArrowSink<W: Write> {
    inner: Columnar<W, FileWriter<W>>,
}

impl<W: Write> ArrowSink<W> {
    /// A sink writing to `out`.
    pub fn new(out: W) -> Self {
        ArrowSink { inner: Columnar { state: State::Waiting(out) } }
    }

    /// True once the first batch has fixed the schema.
    pub fn has_schema(&self) -> bool {
        self.inner.has_schema()
    }
}

impl<W: Write> Sink for ArrowSink<W> {
    fn write(&mut self, o: &Output) -> io::Result<()> {
        self.inner.write(o)
    }
    fn finish(&mut self) -> io::Result<()> {
        self.inner.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WindowBounds;
    use arrow_array::{StringArray, UInt64Array};

    fn output(window: WindowBounds, fds: &[u64]) -> Output {
        let schema = Arc::new(Schema::new(vec![
            Field::new("fd", DataType::UInt64, false),
            Field::new("comm", DataType::Utf8, false),
        ]));
        let comms: Vec<&str> = fds.iter().map(|_| "dd").collect();
        let batch = RecordBatch::try_new(
            schema,
            vec![Arc::new(UInt64Array::from(fds.to_vec())), Arc::new(StringArray::from(comms))],
        )
        .unwrap();
        Output { window, batch, partial: false, extras: vec![] }
    }

    #[test]
    fn window_columns_lead_the_schema() {
        let names = |o: &Output| -> Vec<String> { file_schema(o).fields().iter().map(|f| f.name().clone()).collect() };
        let time = output(WindowBounds::Time { start_ns: 5, end_ns: 9 }, &[1, 2]);
        assert_eq!(names(&time), ["window_start_ns", "window_end_ns", "window_start", "window_end", "fd", "comm"]);
        assert_eq!(names(&output(WindowBounds::Count { index: 3 }, &[1])), ["window", "fd", "comm"]);
        assert_eq!(names(&output(WindowBounds::Rows, &[1])), ["fd", "comm"]);
        let b = with_window_columns(&time, &file_schema(&time)).unwrap();
        assert_eq!(b.num_rows(), 2);
        let starts = b.column(0).as_any().downcast_ref::<UInt64Array>().unwrap();
        assert_eq!(starts.values().to_vec(), vec![5, 5]);
        let wall_ends = b.column(3).as_primitive::<arrow_array::types::TimestampNanosecondType>();
        assert_eq!(wall_ends.values().to_vec(), vec![wall_clock().wall_ns(9); 2]);
        assert_eq!(b.schema().field(3).data_type(), &wall_type());
    }

    #[test]
    fn time_gets_a_wall_clock_twin() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("time", DataType::UInt64, false),
            Field::new("fd", DataType::UInt64, false),
        ]));
        let cols = [vec![10, 20], vec![3, 4]].map(|v| Arc::new(UInt64Array::from(v)) as ArrayRef);
        let o = Output {
            window: WindowBounds::Rows,
            batch: RecordBatch::try_new(schema, cols.to_vec()).unwrap(),
            partial: false,
            extras: vec![],
        };
        let b = with_window_columns(&o, &file_schema(&o)).unwrap();
        let names: Vec<String> = b.schema().fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(names, ["time", "time_wall", "fd"]);
        let wall = b.column(1).as_primitive::<arrow_array::types::TimestampNanosecondType>();
        let c = wall_clock();
        assert_eq!(wall.values().to_vec(), vec![c.wall_ns(10), c.wall_ns(20)]);
    }

    #[test]
    fn a_batch_of_another_kind_is_refused() {
        let mut sink = ArrowSink::new(Vec::new());
        sink.write(&output(WindowBounds::Count { index: 0 }, &[1])).unwrap();
        let err = sink.write(&output(WindowBounds::Rows, &[1])).unwrap_err();
        assert!(err.to_string().contains("does not match"), "{err}");
    }

    /// A writer whose bytes stay readable after the sink has dropped it.
    #[derive(Clone, Default)]
    struct Shared(Arc<std::sync::Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn sum_fd(batches: &[RecordBatch], col: usize) -> u64 {
        batches
            .iter()
            .map(|b| b.column(col).as_any().downcast_ref::<UInt64Array>().unwrap().values().iter().sum::<u64>())
            .sum()
    }

    #[test]
    fn arrow_files_read_back() {
        let buf = Shared::default();
        let mut a = ArrowSink::new(buf.clone());
        a.write(&output(WindowBounds::Count { index: 0 }, &[7, 8])).unwrap();
        a.write(&output(WindowBounds::Count { index: 1 }, &[])).unwrap();
        a.write(&output(WindowBounds::Count { index: 2 }, &[9])).unwrap();
        a.finish().unwrap();
        a.finish().unwrap(); // harmless
        let bytes = buf.0.lock().unwrap().clone();
        assert_eq!(&bytes[bytes.len() - 6..], b"ARROW1", "footer written");
        let reader = arrow_ipc::reader::FileReader::try_new(io::Cursor::new(bytes), None).unwrap();
        assert_eq!(reader.schema().field(0).name(), "window");
        let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
        assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 3);
        assert_eq!(sum_fd(&batches, 0), 2, "window indexes 0 + 0 + 2");
        assert_eq!(sum_fd(&batches, 1), 24);
    }

    #[test]
    fn parquet_files_read_back() {
        use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        let buf = Shared::default();
        let mut p = ParquetSink::new(buf.clone());
        assert!(!p.has_schema());
        p.write(&output(WindowBounds::Time { start_ns: 1, end_ns: 2 }, &[4, 5])).unwrap();
        p.write(&output(WindowBounds::Time { start_ns: 2, end_ns: 3 }, &[6])).unwrap();
        assert!(p.has_schema() && p.size_estimate() > 0);
        p.finish().unwrap();
        let bytes = buf.0.lock().unwrap().clone();
        assert_eq!((&bytes[..4], &bytes[bytes.len() - 4..]), (&b"PAR1"[..], &b"PAR1"[..]));
        let path = std::env::temp_dir().join(format!("ebq-sink-test-{}.parquet", std::process::id()));
        std::fs::write(&path, &bytes).unwrap();
        let reader =
            ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&path).unwrap()).unwrap().build().unwrap();
        let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
        std::fs::remove_file(&path).unwrap();
        let names: Vec<String> = batches[0].schema().fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(names, ["window_start_ns", "window_end_ns", "window_start", "window_end", "fd", "comm"]);
        assert_eq!(sum_fd(&batches, 0), 1 + 1 + 2);
        assert_eq!(sum_fd(&batches, 4), 15);
    }
}

//! Results written to a file (`-o FILE`), optionally rotated: a new file every
//! N windows or once the current one exceeds B bytes. With rotation the files
//! are FILE with a number before the extension: `out.parquet` becomes
//! `out.0000.parquet`, `out.0001.parquet`, … Each file is complete on its own
//! (its own header, schema and footer).

use super::{ArrowSink, CsvSink, JsonSink, ParquetSink, Sink, TableSink};
use crate::Output;
use arrow_schema::SchemaRef;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What a [`FileSink`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileFormat {
    /// Tables per window, as on the terminal.
    Table,
    /// JSON lines.
    Json,
    /// CSV with a header line (one per file).
    Csv,
    /// Parquet.
    Parquet,
    /// Arrow IPC file format.
    Arrow,
}

/// When a [`FileSink`] starts a new file. Rotation is on when either is set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rotation {
    /// Start a new file after this many windows (outputs) in the current one.
    pub windows: Option<u64>,
    /// Start a new file once the current one exceeds this many bytes
    /// (checked after each batch).
    pub bytes: Option<u64>,
}

impl Rotation {
    /// True when files are rotated (and so numbered).
    pub fn is_on(&self) -> bool {
        self.windows.is_some() || self.bytes.is_some()
    }
}

/// The path of the `index`-th rotated file: `out.parquet` → `out.0003.parquet`
/// (`out` → `out.0003`).
pub fn rotated_path(base: &Path, index: u32) -> PathBuf {
    let stem = base.file_stem().unwrap_or_default().to_string_lossy();
    let name = match base.extension() {
        Some(ext) => format!("{stem}.{index:04}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{index:04}"),
    };
    base.with_file_name(name)
}

/// Counts the bytes that pass through it.
struct Counting<W> {
    inner: W,
    bytes: Arc<AtomicU64>,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

type Out = Counting<BufWriter<File>>;

enum PartSink {
    Text(Box<dyn Sink + Send>),
    Parquet(ParquetSink<Out>),
    Arrow(ArrowSink<Out>),
}

/// One open file.
struct Part {
    sink: PartSink,
    bytes: Arc<AtomicU64>,
    outputs: u64,
}

impl Part {
    fn create(path: &Path, format: FileFormat) -> io::Result<Part> {
        let file = File::create(path)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot create {}: {e}", path.display())))?;
        let bytes = Arc::new(AtomicU64::new(0));
        let out = Counting { inner: BufWriter::new(file), bytes: bytes.clone() };
        let sink = match format {
            FileFormat::Table => PartSink::Text(Box::new(TableSink::new(out))),
            FileFormat::Json => PartSink::Text(Box::new(JsonSink::new(out))),
            FileFormat::Csv => PartSink::Text(Box::new(CsvSink::new(out))),
            FileFormat::Parquet => PartSink::Parquet(ParquetSink::new(out)),
            FileFormat::Arrow => PartSink::Arrow(ArrowSink::new(out)),
        };
        Ok(Part { sink, bytes, outputs: 0 })
    }

    fn sink(&mut self) -> &mut dyn Sink {
        match &mut self.sink {
            PartSink::Text(s) => s.as_mut(),
            PartSink::Parquet(s) => s,
            PartSink::Arrow(s) => s,
        }
    }

    fn size(&self) -> u64 {
        match &self.sink {
            // Parquet buffers a row group in memory: count its estimated size.
            PartSink::Parquet(s) => s.size_estimate().max(self.bytes.load(Ordering::Relaxed)),
            _ => self.bytes.load(Ordering::Relaxed),
        }
    }

    /// A columnar file that never got a batch has no schema yet.
    fn lacks_schema(&self) -> bool {
        match &self.sink {
            PartSink::Parquet(s) => !s.has_schema(),
            PartSink::Arrow(s) => !s.has_schema(),
            PartSink::Text(_) => false,
        }
    }
}

/// Writes results to a file, or with [`Rotation`] to numbered files.
///
/// The first file is created by [`FileSink::create`] (so a bad path fails
/// before the query starts); later ones when their first batch arrives, so
/// rotation never leaves an empty trailing file. [`Sink::finish`] (or
/// dropping the sink) finishes the open file.
pub struct FileSink {
    base: PathBuf,
    format: FileFormat,
    rotation: Rotation,
    empty: Option<Output>,
    part: Option<Part>,
    files: Vec<PathBuf>,
}

impl FileSink {
    /// Creates the first file at `path` (or its first numbered file when
    /// rotating).
    pub fn create(path: impl Into<PathBuf>, format: FileFormat, rotation: Rotation) -> io::Result<FileSink> {
        let mut sink = FileSink { base: path.into(), format, rotation, empty: None, part: None, files: vec![] };
        sink.open_next()?;
        Ok(sink)
    }

    /// The query's window kind and columns, for Parquet and Arrow files that
    /// get no batch at all: they are then written with this schema and no rows
    /// instead of being left empty.
    pub fn with_schema(mut self, window: crate::WindowBounds, schema: SchemaRef) -> Self {
        let batch = arrow_array::RecordBatch::new_empty(schema);
        self.empty = Some(Output { window, batch, partial: false, extras: vec![] });
        self
    }

    /// The files created so far, in order.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    fn open_next(&mut self) -> io::Result<()> {
        let path =
            if self.rotation.is_on() { rotated_path(&self.base, self.files.len() as u32) } else { self.base.clone() };
        self.part = Some(Part::create(&path, self.format)?);
        self.files.push(path);
        Ok(())
    }

    fn close_part(&mut self) -> io::Result<()> {
        let Some(mut part) = self.part.take() else { return Ok(()) };
        if part.lacks_schema() {
            if let Some(empty) = &self.empty {
                part.sink().write(empty)?;
            }
        }
        part.sink().finish()
    }
}

impl Sink for FileSink {
    fn write(&mut self, o: &Output) -> io::Result<()> {
        if self.part.is_none() {
            self.open_next()?;
        }
        let part = self.part.as_mut().expect("opened above");
        part.sink().write(o)?;
        part.outputs += 1;
        let full = self.rotation.windows.is_some_and(|n| part.outputs >= n)
            || self.rotation.bytes.is_some_and(|b| part.size() > b);
        if full {
            self.close_part()?;
        }
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.close_part()
    }
}

impl Drop for FileSink {
    fn drop(&mut self) {
        // An error path that skipped finish still leaves a readable file.
        let _ = self.close_part();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WindowBounds;
    use arrow_array::{RecordBatch, UInt64Array};
    use arrow_schema::{DataType, Field, Schema};

    #[test]
    fn rotated_names_put_the_number_before_the_extension() {
        assert_eq!(rotated_path(Path::new("/d/out.parquet"), 0), Path::new("/d/out.0000.parquet"));
        assert_eq!(rotated_path(Path::new("out.arrow"), 12), Path::new("out.0012.arrow"));
        assert_eq!(rotated_path(Path::new("a.b.csv"), 1), Path::new("a.b.0001.csv"));
        assert_eq!(rotated_path(Path::new("out"), 3), Path::new("out.0003"));
    }

    fn output(index: u64, n: u64) -> Output {
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::UInt64, false)]));
        let batch = RecordBatch::try_new(schema, vec![Arc::new(UInt64Array::from(vec![n]))]).unwrap();
        Output { window: WindowBounds::Count { index }, batch, partial: false, extras: vec![] }
    }

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ebq-file-sink-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn rotation_by_windows_and_by_bytes() {
        let d = dir("rot");
        let mut s =
            FileSink::create(d.join("x.csv"), FileFormat::Csv, Rotation { windows: Some(2), bytes: None }).unwrap();
        for i in 0..5 {
            s.write(&output(i, i * 10)).unwrap();
        }
        s.finish().unwrap();
        let names: Vec<String> =
            s.files().iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["x.0000.csv", "x.0001.csv", "x.0002.csv"]);
        assert_eq!(std::fs::read_to_string(d.join("x.0001.csv")).unwrap(), "window,n\n2,20\n3,30\n");
        assert_eq!(std::fs::read_to_string(d.join("x.0002.csv")).unwrap(), "window,n\n4,40\n");

        let mut s =
            FileSink::create(d.join("y.json"), FileFormat::Json, Rotation { windows: None, bytes: Some(30) }).unwrap();
        for i in 0..4 {
            s.write(&output(i, 1)).unwrap(); // {"window":i,"n":1}\n is 20 bytes
        }
        drop(s); // finishes
        for (f, want) in [
            ("y.0000.json", "{\"window\":0,\"n\":1}\n{\"window\":1,\"n\":1}\n"),
            ("y.0001.json", "{\"window\":2,\"n\":1}\n{\"window\":3,\"n\":1}\n"),
        ] {
            assert_eq!(std::fs::read_to_string(d.join(f)).unwrap(), want);
        }
        assert!(!d.join("y.0002.json").exists(), "no empty trailing file");
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn a_columnar_file_without_batches_gets_the_schema() {
        let d = dir("empty");
        let schema = output(0, 0).batch.schema();
        let mut s = FileSink::create(d.join("e.arrow"), FileFormat::Arrow, Rotation::default())
            .unwrap()
            .with_schema(WindowBounds::Count { index: 0 }, schema);
        s.finish().unwrap();
        let reader = arrow_ipc::reader::FileReader::try_new(File::open(d.join("e.arrow")).unwrap(), None).unwrap();
        let names: Vec<String> = reader.schema().fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(names, ["window", "n"]);
        assert_eq!(reader.map(|b| b.unwrap().num_rows()).sum::<usize>(), 0);
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn a_bad_path_fails_at_create() {
        let err = FileSink::create("/nonexistent-dir/x.parquet", FileFormat::Parquet, Rotation::default())
            .err()
            .expect("no such directory");
        assert!(err.to_string().starts_with("cannot create /nonexistent-dir/x.parquet:"), "{err}");
    }
}

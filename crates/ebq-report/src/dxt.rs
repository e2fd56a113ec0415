//! `--trace FILE.parquet`: Darshan's DXT (extended tracing) as one Parquet
//! row per operation, readable by DuckDB, pandas and pyarrow.
//!
//! Columns: pid, rank (null outside MPI), dev (`major:minor`), inode, path,
//! fs_type, mount_point, op (open, close, read, write, seek, fsync,
//! fdatasync; map: pages a fault brought into a mapping), via (the kernel
//! path: syscall, io_uring, aio, mmap), offset (reads, writes and maps, else
//! null), length (bytes a read or write returned, as DXT records it, or a
//! map's bytes; null for other operations and failed calls), asked (bytes
//! asked for), result (the raw return value or -errno),
//! start and end (seconds since the report's start, as DXT's are since the
//! job's).

use super::{OpKind, Operation};
use arrow_array::{ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use std::io::Write;
use std::sync::Arc;

/// Writes the Parquet file of one row per operation (in start order) to `out`.
pub fn write_to(out: impl Write + Send, ops: &[Operation], origin_ns: u64) -> Result<(), String> {
    let rw = |o: &Operation| matches!(o.op, OpKind::Read | OpKind::Write | OpKind::Map);
    let secs = |ns: u64| (ns as i64 - origin_ns as i64) as f64 / 1e9;
    let fields = vec![
        Field::new("pid", DataType::UInt32, false),
        Field::new("rank", DataType::Int32, true),
        Field::new("dev", DataType::Utf8, false),
        Field::new("inode", DataType::UInt64, false),
        Field::new("path", DataType::Utf8, false),
        Field::new("fs_type", DataType::Utf8, false),
        Field::new("mount_point", DataType::Utf8, false),
        Field::new("op", DataType::Utf8, false),
        Field::new("via", DataType::Utf8, false),
        Field::new("offset", DataType::Int64, true),
        Field::new("length", DataType::Int64, true),
        Field::new("asked", DataType::UInt64, true),
        Field::new("result", DataType::Int64, false),
        Field::new("start", DataType::Float64, false),
        Field::new("end", DataType::Float64, false),
    ];
    let columns: Vec<ArrayRef> = vec![
        Arc::new(UInt32Array::from_iter_values(ops.iter().map(|o| o.pid))),
        Arc::new(Int32Array::from_iter(ops.iter().map(|o| o.rank.map(|r| r as i32)))),
        Arc::new(StringArray::from_iter_values(
            ops.iter().map(|o| format!("{}:{}", o.file.dev_major, o.file.dev_minor)),
        )),
        Arc::new(UInt64Array::from_iter_values(ops.iter().map(|o| o.file.inode))),
        Arc::new(StringArray::from_iter_values(ops.iter().map(|o| o.path.as_str()))),
        Arc::new(StringArray::from_iter_values(ops.iter().map(|o| o.fs_type.as_str()))),
        Arc::new(StringArray::from_iter_values(ops.iter().map(|o| o.mount_point.as_str()))),
        Arc::new(StringArray::from_iter_values(ops.iter().map(|o| o.op.name()))),
        Arc::new(StringArray::from_iter_values(ops.iter().map(|o| o.via.name()))),
        Arc::new(Int64Array::from_iter(ops.iter().map(|o| rw(o).then_some(o.offset)))),
        Arc::new(Int64Array::from_iter(ops.iter().map(|o| (rw(o) && o.result >= 0).then_some(o.result)))),
        Arc::new(UInt64Array::from_iter(ops.iter().map(|o| rw(o).then_some(o.asked)))),
        Arc::new(Int64Array::from_iter_values(ops.iter().map(|o| o.result))),
        Arc::new(Float64Array::from_iter_values(ops.iter().map(|o| secs(o.start_ns)))),
        Arc::new(Float64Array::from_iter_values(ops.iter().map(|o| secs(o.end_ns)))),
    ];
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(schema.clone(), columns).map_err(|e| e.to_string())?;
    let mut w = ArrowWriter::try_new(out, schema, None).map_err(|e| e.to_string())?;
    w.write(&batch).map_err(|e| e.to_string())?;
    w.close().map_err(|e| e.to_string())?;
    Ok(())
}

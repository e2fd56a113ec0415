//! Where results go: stdout, or `-o FILE` (optionally rotated).

use crate::{Format, RunArgs, TimeArg};
use ebq::plan::{KernelOutput, KernelWindow};
use ebq::sink::{
    CsvSink, FileFormat, FileSink, FoldedSink, JsonSink, QueuedSink, Rotation, Sink, TableSink, TimeDisplay,
};
use ebq::{PreparedQuery, WindowBounds};

/// The sink for `args`; files are created here, before the query starts.
pub fn make_sink(args: &RunArgs, prepared: &PreparedQuery) -> Result<Box<dyn Sink>, String> {
    if let Some(options) = &args.report {
        if args.output.is_some() {
            return Err("error: `ebq report io` writes to stdout; redirect it instead of -o".into());
        }
        return Ok(Box::new(crate::report::IoReport::new(options.clone())));
    }
    let rotation = Rotation { windows: args.rotate_windows, bytes: args.rotate_bytes };
    if rotation.windows == Some(0) || rotation.bytes == Some(0) {
        return Err("error: --rotate-windows and --rotate-bytes must be at least 1".into());
    }
    // A join of two streams returns time windows of joined rows.
    let rows = matches!(prepared.physical.programs[0].output, KernelOutput::Rows { .. })
        && prepared.physical.window_join().is_none();
    if rows && rotation.windows.is_some() {
        return Err(
            "error: --rotate-windows needs a query with windows (an aggregate); this row query streams rows: use --rotate-bytes"
                .into(),
        );
    }
    if args.format == Format::Flamegraph {
        let Some(path) = &args.output else {
            return Err("error: --format flamegraph needs -o FILE.svg (it is not written to stdout)".into());
        };
        if rotation.is_on() {
            return Err("error: --format flamegraph writes one file at the end; rotation does not apply".into());
        }
        let title = prepared.physical.sql.clone();
        return crate::flamegraph::FlamegraphSink::create(path.clone(), &title)
            .map(|s| Box::new(s) as Box<dyn Sink>)
            .map_err(|e| format!("error: {}: {e}", path.display()));
    }
    if args.format == Format::Folded {
        if rotation.is_on() {
            return Err("error: --format folded writes one file at the end; rotation does not apply".into());
        }
        return Ok(match &args.output {
            None => Box::new(FoldedSink::new(std::io::stdout())),
            Some(path) => Box::new(FoldedSink::new(std::io::BufWriter::new(
                std::fs::File::create(path).map_err(|e| format!("error: {}: {e}", path.display()))?,
            ))),
        });
    }
    let format = match args.format {
        Format::Folded | Format::Flamegraph => unreachable!("handled above"),
        Format::Table => FileFormat::Table,
        Format::Json => FileFormat::Json,
        Format::Csv => FileFormat::Csv,
        Format::Parquet => FileFormat::Parquet,
        Format::Arrow => FileFormat::Arrow,
    };
    let Some(path) = &args.output else {
        if matches!(format, FileFormat::Parquet | FileFormat::Arrow) {
            let name = if format == FileFormat::Parquet { "parquet" } else { "arrow" };
            return Err(format!("error: --format {name} needs -o FILE (it is not written to stdout)"));
        }
        if rotation.is_on() {
            return Err("error: --rotate-windows and --rotate-bytes need -o FILE".into());
        }
        // Buffered: stdout alone is line-buffered, one write(2) per row. Each
        // sink flushes after every batch, so a live stream still shows as it comes.
        let out = std::io::BufWriter::with_capacity(64 << 10, std::io::stdout());
        return queued(match format {
            FileFormat::Json => Box::new(JsonSink::new(out)),
            FileFormat::Csv => Box::new(CsvSink::new(out)),
            _ => Box::new(TableSink::new(out).with_time(match args.time {
                TimeArg::Relative => TimeDisplay::relative_from_now(),
                TimeArg::Wall => TimeDisplay::wall_from_now(),
                TimeArg::Raw => TimeDisplay::Raw,
            })),
        });
    };
    // The window kind of every batch, for a columnar file that gets none.
    let window = if rows {
        WindowBounds::Rows
    } else if matches!(prepared.physical.programs[0].window, KernelWindow::Count { .. }) {
        WindowBounds::Count { index: 0 }
    } else {
        WindowBounds::Time { start_ns: 0, end_ns: 0 }
    };
    let sink = FileSink::create(path, format, rotation).map_err(|e| format!("error: {e}"))?;
    queued(Box::new(sink.with_schema(window, ebq::runtime::schema(&prepared.physical))))
}

/// `sink` on its own writer thread ([`QueuedSink`]): encoding and writing
/// never hold up the thread that drains the ring buffers (issue 35 item 6).
fn queued(sink: Box<dyn Sink + Send>) -> Result<Box<dyn Sink>, String> {
    QueuedSink::spawn(sink, QueuedSink::DEFAULT_BYTES)
        .map(|q| Box::new(q) as Box<dyn Sink>)
        .map_err(|e| format!("error: cannot start the writer thread: {e}"))
}

/// Parses a byte count: `1000000`, `64K`, `100M`, `2G` (powers of 1024).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (digits, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => t.split_at(i),
        None => (t, ""),
    };
    let mult: u64 = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        _ => return Err(format!("`{s}` is not a byte count (like 1000000, 64K, 100M, 2G)")),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("`{s}` is not a byte count (like 1000000, 64K, 100M, 2G)"))
}

#[cfg(test)]
mod tests {
    use super::parse_bytes;

    #[test]
    fn byte_counts() {
        assert_eq!(parse_bytes("1000"), Ok(1000));
        assert_eq!(parse_bytes("64K"), Ok(65536));
        assert_eq!(parse_bytes("100M"), Ok(100 << 20));
        assert_eq!(parse_bytes("2GiB"), Ok(2 << 30));
        assert!(parse_bytes("").is_err());
        assert!(parse_bytes("M").is_err());
        assert!(parse_bytes("12X").is_err());
        assert!(parse_bytes("-1").is_err());
        assert!(parse_bytes("99999999999G").is_err());
    }
}

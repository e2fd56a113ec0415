//! Where results go: stdout, or `-o FILE` (optionally rotated), or several
//! `--sink`s fed by the one query ([`ebq::sink::FanOut`]).

use crate::sink_spec::SinkSpec;
use crate::{Format, RunArgs, TimeArg};
use ebq::plan::{KernelOutput, KernelWindow};
use ebq::sink::{
    CsvSink, FanOut, FileFormat, FileSink, FoldedSink, JsonSink, QueuedSink, Rotation, Sink, TableSink, TimeDisplay,
};
use ebq::{PreparedQuery, WindowBounds};

/// The sink for `args`; files are created here, before the query starts.
pub fn make_sink(args: &RunArgs, prepared: &PreparedQuery) -> Result<Box<dyn Sink>, String> {
    if let Some(hook) = &args.hook {
        return hook.sink(args);
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
    if !args.sinks.is_empty() {
        return many(args, prepared, rotation, rows);
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
        return queued(terminal(args, format));
    };
    queued(file(path, format, rotation, prepared, rows)?)
}

/// `--sink SPEC …`: every spec parsed and every file created before the
/// query starts. One sink keeps the single-sink behaviour (its queue waits
/// when full: lossless); several each get a queue that drops when full,
/// counted per sink on the stats line. A Kafka or OTLP sink always gets a
/// dropping queue, even alone: a broker never holds up the rings.
fn many(args: &RunArgs, prepared: &PreparedQuery, rotation: Rotation, rows: bool) -> Result<Box<dyn Sink>, String> {
    if args.output.is_some() {
        return Err("error: --sink and -o do not go together; give the file as one more --sink FILE".into());
    }
    let terminal_format = match args.format {
        Format::Table => FileFormat::Table,
        Format::Json => FileFormat::Json,
        Format::Csv => FileFormat::Csv,
        other => {
            return Err(format!(
                "error: with --sink, --format is the terminal's (`--sink -`) format: table, json or csv, not {}; \
                 a file sink's format comes from its extension",
                format!("{other:?}").to_lowercase()
            ))
        }
    };
    let mut sinks: Vec<(String, Box<dyn Sink + Send>)> = vec![];
    let mut seen: Vec<SinkSpec> = vec![];
    for spec in &args.sinks {
        let parsed = SinkSpec::parse(spec).map_err(|why| format!("error: --sink `{spec}`: {why}"))?;
        if seen.contains(&parsed) {
            return Err(format!("error: --sink `{spec}` is given twice"));
        }
        let sink = match &parsed {
            SinkSpec::Terminal => terminal(args, terminal_format),
            SinkSpec::File { path, format } => file(path, *format, rotation, prepared, rows)?,
            SinkSpec::Kafka(k) => kafka(spec, k, args.kafka_format, args.kafka_queue)?,
            SinkSpec::Otlp(o) => {
                otlp_logs(spec, o, &crate::otlp::resource_pairs(&args.otlp_resource)?, args.cgroup.as_deref())?
            }
        };
        seen.push(parsed);
        sinks.push((spec.clone(), sink));
    }
    if rotation.is_on() && !seen.iter().any(|s| matches!(s, SinkSpec::File { .. })) {
        return Err("error: --rotate-windows and --rotate-bytes rotate file sinks; no --sink is a file".into());
    }
    if sinks.len() == 1 && !matches!(seen[0], SinkSpec::Kafka(_) | SinkSpec::Otlp(_)) {
        return queued(sinks.pop().expect("one").1);
    }
    FanOut::spawn(sinks, QueuedSink::DEFAULT_BYTES)
        .map(|f| Box::new(f) as Box<dyn Sink>)
        .map_err(|e| format!("error: cannot start the writer threads: {e}"))
}

/// An OTLP/HTTP logs receiver (also `ebq serve`'s per-query `sinks`); `name`
/// is its spec, `resource` extra resource attributes, `cgroup` the run's scope.
pub fn otlp_logs(
    name: &str,
    spec: &crate::sink_spec::OtlpSpec,
    resource: &[(String, String)],
    cgroup: Option<&str>,
) -> Result<Box<dyn Sink + Send>, String> {
    let mut config = ebq::export::otlp::OtlpConfig::new(spec.endpoint.clone(), ebq::host::host_name());
    config.resource = resource.to_vec();
    Ok(Box::new(crate::otlp_sink::OtlpSink::create(name, spec, &config, cgroup)?))
}

/// A Kafka topic (also `ebq serve`'s per-query `sinks`); `name` is its spec.
#[cfg(feature = "kafka")]
pub fn kafka(
    name: &str,
    spec: &crate::sink_spec::KafkaSpec,
    format: crate::sink_spec::KafkaFormat,
    queue: u32,
) -> Result<Box<dyn Sink + Send>, String> {
    let sink = crate::kafka::KafkaSink::create(name, spec, format, queue, ebq::host::host_name())?;
    Ok(Box::new(sink))
}

/// Without the `kafka` feature: a Kafka spec parses, and is refused here.
#[cfg(not(feature = "kafka"))]
pub fn kafka(
    name: &str,
    _: &crate::sink_spec::KafkaSpec,
    _: crate::sink_spec::KafkaFormat,
    _: u32,
) -> Result<Box<dyn Sink + Send>, String> {
    Err(format!(
        "error: --sink `{name}`: this ebq was built without the `kafka` feature (cargo build --features kafka)"
    ))
}

/// stdout in `format` (table, JSON or CSV).
fn terminal(args: &RunArgs, format: FileFormat) -> Box<dyn Sink + Send> {
    let out = WholeLines::new(std::io::stdout());
    match format {
        FileFormat::Json => Box::new(JsonSink::new(out)),
        FileFormat::Csv => Box::new(CsvSink::new(out)),
        _ => Box::new(TableSink::new(out).with_time(match args.time {
            TimeArg::Relative => TimeDisplay::relative_from_now(),
            TimeArg::Wall => TimeDisplay::wall_from_now(),
            TimeArg::Raw => TimeDisplay::Raw,
        })),
    }
}

/// A file in `format`, created now (also `ebq serve`'s per-query `sinks`).
pub fn file(
    path: &std::path::Path,
    format: FileFormat,
    rotation: Rotation,
    prepared: &PreparedQuery,
    rows: bool,
) -> Result<Box<dyn Sink + Send>, String> {
    // The window kind of every batch, for a columnar file that gets none.
    let window = if rows {
        WindowBounds::Rows
    } else if matches!(prepared.physical.programs[0].window, KernelWindow::Count { .. }) {
        WindowBounds::Count { index: 0 }
    } else {
        WindowBounds::Time { start_ns: 0, end_ns: 0 }
    };
    let sink = FileSink::create(path, format, rotation).map_err(|e| format!("error: {e}"))?;
    Ok(Box::new(sink.with_schema(window, ebq::runtime::schema(&prepared.physical))))
}

/// `sink` on its own writer thread ([`QueuedSink`]): encoding and writing
/// never hold up the thread that drains the ring buffers (issue 35 item 6).
fn queued(sink: Box<dyn Sink + Send>) -> Result<Box<dyn Sink>, String> {
    QueuedSink::spawn(sink, QueuedSink::DEFAULT_BYTES)
        .map(|q| Box::new(q) as Box<dyn Sink>)
        .map_err(|e| format!("error: cannot start the writer thread: {e}"))
}

/// stdout in writes of whole lines up to `PIPE_BUF` bytes.
///
/// `Stdout` alone is line-buffered: one write(2) per row, which held the
/// drain of a 300,000-row burst up (issue 35 item 6). A big buffer instead
/// would cut lines apart: with `-c` the command shares ebq's stdout, and a
/// pipe keeps a write whole only up to `PIPE_BUF` (4096) bytes, so the
/// command's own output could land inside one of ebq's lines. Here each
/// write(2) is whole lines of at most 4096 bytes (a longer line goes alone).
/// The sinks flush after every batch, so a live stream still shows as it comes.
pub struct WholeLines<W: std::io::Write> {
    out: W,
    buf: Vec<u8>,
}

impl<W: std::io::Write> WholeLines<W> {
    const PIPE_BUF: usize = 4096;

    /// Lines to `out`.
    pub fn new(out: W) -> Self {
        WholeLines { out, buf: Vec::with_capacity(2 * Self::PIPE_BUF) }
    }

    /// Writes the complete lines that fit in one write, while more than `PIPE_BUF` bytes wait.
    /// What was written leaves the buffer once at the end, not after every
    /// write (a table's whole batch comes in one `write`: moving the rest
    /// down after each 4 KiB cost as much as formatting it).
    fn write_full(&mut self) -> std::io::Result<()> {
        let mut start = 0;
        let mut done = Ok(());
        while self.buf.len() - start > Self::PIPE_BUF {
            let rest = &self.buf[start..];
            let end = match rest[..Self::PIPE_BUF].iter().rposition(|&b| b == b'\n') {
                Some(i) => i + 1,
                // One line longer than a pipe keeps whole: to its end.
                None => match rest.iter().position(|&b| b == b'\n') {
                    Some(i) => i + 1,
                    None => break,
                },
            };
            done = self.out.write_all(&rest[..end]);
            if done.is_err() {
                break;
            }
            start += end;
        }
        self.buf.drain(..start);
        done
    }
}

impl<W: std::io::Write> std::io::Write for WholeLines<W> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        self.write_full()?;
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.write_full()?;
        if !self.buf.is_empty() {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        self.out.flush()
    }
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
    use super::{parse_bytes, WholeLines};
    use std::io::Write;

    /// Records each write the wrapped writer gets.
    struct Writes(Vec<Vec<u8>>);

    impl Write for Writes {
        fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
            self.0.push(data.to_vec());
            Ok(data.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn writes_are_whole_lines_of_at_most_pipe_buf() {
        let mut w = WholeLines::new(Writes(vec![]));
        let line = format!("{}\n", "x".repeat(99));
        for _ in 0..1000 {
            w.write_all(line.as_bytes()).unwrap();
        }
        let long = format!("{}\n", "y".repeat(5000));
        w.write_all(long.as_bytes()).unwrap();
        w.write_all(b"tail\n").unwrap();
        w.flush().unwrap();
        let writes = &w.out.0;
        assert!(writes.iter().all(|c| c.ends_with(b"\n")), "every write ends a line");
        assert!(writes.iter().all(|c| c.len() <= 4096 || c == long.as_bytes()), "only the long line goes alone");
        assert!(writes.len() < 40, "{} writes for 1002 lines", writes.len());
        assert_eq!(writes.concat(), [line.repeat(1000), long, "tail\n".into()].concat().into_bytes());
    }

    #[test]
    fn one_big_write_is_cut_as_line_by_line_writes_are() {
        let lines: Vec<String> = (0..3000).map(|i| format!("{}\n", "z".repeat(i % 97))).collect();
        let mut one = WholeLines::new(Writes(vec![]));
        one.write_all(lines.concat().as_bytes()).unwrap();
        one.flush().unwrap();
        let mut each = WholeLines::new(Writes(vec![]));
        for l in &lines {
            each.write_all(l.as_bytes()).unwrap();
        }
        each.flush().unwrap();
        assert!(one.out.0.len() > 10);
        assert_eq!(one.out.0, each.out.0);
    }

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

//! `ebq`: run SQL over kernel events from the command line.

mod analyze;
mod child;
mod flamegraph;
mod hook;
#[cfg(feature = "kafka")]
mod kafka;
mod otlp;
mod otlp_sink;
mod output;
mod report;
mod run;
mod seconds;
mod serve;
mod shipped;
mod signals;
mod sink_books;
mod sink_spec;

use clap::{Args, Parser, Subcommand, ValueEnum};
use ebq::catalog::SystemColumn;
use ebq::{Engine, Error};
use std::process::ExitCode;

/// Streaming SQL over Linux kernel events, compiled to eBPF.
#[derive(Parser, Debug)]
#[command(name = "ebq", version, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Show the plan, its kernel/user split and the generated BPF C; with
    /// --analyze, run the query (default 5 s, or -c/-p/--duration) and report
    /// what it cost: BPF ns per event, events/s, drops, ebq's CPU.
    Explain {
        /// Run the query and measure it.
        #[arg(long)]
        analyze: bool,
        /// The query (or -f FILE) and, with --analyze, any run options.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        rest: Vec<String>,
    },
    /// Compile a query ahead of time into a bundle that runs without clang.
    Compile {
        /// The query (or -f FILE).
        sql: Option<String>,
        /// Read the query from a file.
        #[arg(short = 'f', long = "file")]
        file: Option<String>,
        /// Where to write the bundle.
        #[arg(short = 'o', long = "output", value_name = "FILE.ebq")]
        output: std::path::PathBuf,
        /// A view FROM can name: NAME=FILE.sql (repeatable).
        #[arg(long = "view", value_name = "NAME=FILE.sql")]
        views: Vec<String>,
    },
    /// Run a shipped query by name (see `ebq queries`), a .sql file, or a bundle
    /// made by `ebq compile` (clang is not needed), with any run options.
    Run {
        /// NAME, FILE.sql or FILE.ebq.
        target: String,
        /// Run options (-c, -p, --duration, --format …).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        rest: Vec<String>,
    },
    /// Darshan's I/O characterization (`ebq report io -c CMD` or
    /// `-p PID --duration S`): Darshan's POSIX counters per file and per file
    /// system, and its MPIIO counters per file and rank for MPI jobs.
    #[command(after_help = REPORT_HELP)]
    Report {
        /// The report: `io`, or `merge` (one job log of its nodes' Darshan logs).
        kind: String,
        /// Run options (-c, -p, --duration, --format table|json …).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        rest: Vec<String>,
    },
    /// Run the queries of a config file continuously and export their
    /// windows as metrics (Prometheus /metrics); SIGHUP reloads the file.
    Serve {
        /// The configuration file (TOML; see the book, docs/src/serve/index.md).
        #[arg(long, value_name = "FILE")]
        config: String,
        /// Check the file (TOML and every query) and exit.
        #[arg(long)]
        check: bool,
    },
    /// Benchmarks side by side with bpftrace: pervent (Gregg's per-event cost),
    /// stages (six-stage overhead dissection with fio), fidelity (issued vs
    /// delivered vs dropped), startup, sinks (encoding per row, no root), all;
    /// results to --out (default bench/results).
    Bench(ebq_bench::BenchArgs),
    /// List the shipped queries; with a NAME, print it and its parameters.
    Queries {
        /// A shipped query's name.
        name: Option<String>,
    },
    /// List events (tracepoints), optionally matching a glob like 'syscalls:*pread*'; 'usdt:BINARY:*' lists a binary's USDT probes.
    Events {
        /// Glob over CATEGORY:NAME.
        glob: Option<String>,
    },
    /// List an event's columns with their types.
    Describe {
        /// The event, e.g. syscalls:sys_enter_pread64 (any spelling FROM takes).
        event: String,
        /// A raw argument or a member path from one (`rq`, `rq.q.disk`): lists the
        /// members of the struct it reaches.
        path: Option<String>,
    },
}

/// `--time`: how the terminal table shows event times.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum TimeArg {
    /// Seconds since the query started (1.234567).
    Relative,
    /// UTC wall-clock time (2026-11-24T02:45:01.123456Z).
    Wall,
    /// ns since boot (CLOCK_MONOTONIC), as files have them.
    Raw,
}

/// Output formats.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum Format {
    /// A table per window; aligned lines for streamed rows.
    Table,
    /// One JSON object per result row.
    Json,
    /// CSV with a header line.
    Csv,
    /// A Parquet file (needs -o).
    Parquet,
    /// An Arrow IPC file (needs -o).
    Arrow,
    /// Folded stacks (`outer;…;inner COUNT` per line, summed over the run): GROUP BY ustack/kstack.
    Folded,
    /// A flame graph SVG of the folded stacks (needs -o FILE.svg).
    Flamegraph,
}

/// Options for running a query.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The query (or use -f).
    sql: Option<String>,
    /// Read the query from a file.
    #[arg(short = 'f', long = "file")]
    file: Option<String>,
    /// A view FROM can name: NAME=FILE.sql (NAME is CATEGORY.NAME; repeatable).
    #[arg(long = "view", value_name = "NAME=FILE.sql")]
    views: Vec<String>,
    /// Run this command (through /bin/sh), trace it and its descendants, exit with its status.
    #[arg(short = 'c', long = "command")]
    command: Option<String>,
    /// Say more on stderr: every event a many-event query (io.ops) traces, one
    /// line per UNION ALL branch, under its short "ebq: tracing" line.
    #[arg(short = 'v', long)]
    verbose: bool,
    /// Trace only this process (all its threads).
    #[arg(short = 'p', long = "pid")]
    pid: Option<u32>,
    /// With -c or -p: trace every process anyway (still stops when the command/process ends).
    #[arg(long)]
    system_wide: bool,
    /// Trace only tasks in this cgroup v2 group and the groups below it, checked in
    /// the kernel (a path under the cgroup2 mount, or relative to it: `/system.slice`);
    /// with -c or -p, instead of their process tree (still stops when it ends).
    #[arg(long, value_name = "PATH")]
    cgroup: Option<String>,
    /// Stop after this long: seconds (1.5) or with a unit (500ms, 1s, 2m, 1h).
    #[arg(long, value_name = "DURATION", value_parser = seconds::parse)]
    duration: Option<f64>,
    /// Aggregates without WINDOW: print the running totals every DURATION
    /// (seconds or 500ms, 1s, 2m …); a WINDOW query prints each window itself.
    #[arg(long, value_name = "DURATION", value_parser = seconds::parse)]
    interval: Option<f64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// How the terminal table shows `time` columns: seconds since the query
    /// started, UTC wall-clock time (ISO 8601), or raw ns since boot. Files
    /// and the JSON/CSV formats keep raw ns.
    #[arg(long = "time", value_enum, default_value_t = TimeArg::Relative)]
    time: TimeArg,
    /// Write the results to FILE instead of stdout (required for parquet and arrow).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<std::path::PathBuf>,
    /// Where results go, repeatable: `-` (the terminal, in --format), a
    /// file whose extension names its format (.jsonl/.json, .csv, .parquet,
    /// .arrow), kafka://HOST:PORT/TOPIC, or otlp+http://HOST:PORT (OTLP log
    /// records, one a row, to /v1/logs). One kernel program feeds them
    /// all; with several, each has its own bounded queue and a slow one
    /// drops (and counts) its own rows.
    #[arg(long = "sink", value_name = "SPEC")]
    sinks: Vec<String>,
    /// What a kafka:// sink's messages hold: one row as a JSON object, or
    /// one batch as an Arrow IPC stream (a sink's `?format=` overrides it).
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = sink_spec::KafkaFormat::Json)]
    kafka_format: sink_spec::KafkaFormat,
    /// Messages a kafka:// sink keeps for the broker (librdkafka's
    /// queue.buffering.max.messages); beyond it, while the broker is down
    /// or slow, rows are dropped and counted (a sink's `?queue=` overrides it).
    #[arg(long, value_name = "N", default_value_t = sink_spec::KAFKA_QUEUE_DEFAULT,
          value_parser = clap::value_parser!(u32).range(1..=sink_spec::KAFKA_QUEUE_MAX as i64))]
    kafka_queue: u32,
    /// With -o: start a new file every N windows (FILE.0000.ext, FILE.0001.ext, …).
    #[arg(long, value_name = "N")]
    rotate_windows: Option<u64>,
    /// With -o: start a new file once the current one exceeds BYTES (e.g. 100M).
    #[arg(long, value_name = "BYTES", value_parser = output::parse_bytes)]
    rotate_bytes: Option<u64>,
    /// Maximum groups per window kept in the kernel (more are counted as dropped).
    #[arg(long, default_value_t = 10240)]
    max_groups: u32,
    /// JOIN: most pairs open at once in the kernel (starts waiting for their
    /// end event); more are counted as lost pairs (`pending_full`).
    #[arg(long, default_value_t = 10240, value_name = "N")]
    max_pending: u32,
    /// JOIN: open pairs whose end has not come after this long (seconds or
    /// `500ms`, `2m`) are evicted from the pairing map and counted (`evicted`).
    #[arg(long, value_name = "DURATION", value_parser = seconds::parse, default_value = "60")]
    pub max_pair_age: f64,
    /// JOIN: where open pairs wait for their end. `auto`: a JOIN of system-call
    /// events on the thread (`ON e.tid = x.tid …`) keeps one pair per thread in
    /// the thread's own storage (no hash; a thread's pair goes with it, so
    /// --max-pending and --max-pair-age do not apply); every other JOIN, and
    /// all with `hash`, in a HASH map by key.
    #[arg(long, default_value = "auto", value_name = "HOW", value_parser = ["auto", "hash"])]
    pairs: String,
    /// With -c: most processes tracked at once (the command and its descendants);
    /// children forked beyond it are not traced and are counted as untracked.
    #[arg(long, default_value_t = 65536, value_name = "N")]
    max_tracked: u32,
    /// Where syscalls:sys_enter_X/sys_exit_X events run: `classic` (their own
    /// tracepoint), `raw` (raw sys_enter/sys_exit with a system-call number
    /// check) or `auto` (per event, by measured cost; EXPLAIN says which and why).
    #[arg(long, default_value = "auto", value_name = "HOW", value_parser = ["auto", "classic", "raw"])]
    attach: String,
    /// Row queries: `per-cpu` (one ring buffer of --ringbuf-size per CPU, so
    /// CPUs never contend for one ring's lock) or `shared` (one ring).
    #[arg(long, default_value = "per-cpu", value_name = "HOW", value_parser = ["per-cpu", "shared"])]
    rings: String,
    /// Aggregates grouped by fs_type, mount_point or file_name: keep the names
    /// themselves in the kernel's group key (read on every event), instead of
    /// their identities named once per group (the default; --pin implies this).
    #[arg(long)]
    names_in_key: bool,
    /// QUANTILE/Pxx: entries of the sketch map (one per window, group and
    /// occupied bucket); events beyond it are counted as dropped.
    #[arg(long, default_value_t = ebq::plan::PlanOptions::default().sketch_buckets, value_name = "N")]
    max_sketch_buckets: u32,
    /// Row queries with ORDER BY and no LIMIT: most rows held until the end
    /// (with LIMIT n only the best n are kept); more stop the query with an error.
    #[arg(long, default_value_t = ebq::runtime::DEFAULT_MAX_SORTED_ROWS, value_name = "N")]
    pub max_sorted_rows: usize,
    /// Ring buffer bytes for row queries (power of two): each ring's size, with
    /// per-CPU rings every CPU's (CPUs × this in all).
    #[arg(long, default_value_t = 8 << 20)]
    ringbuf_size: u32,
    /// Row queries: wake the reader once this many bytes wait in the ring buffer
    /// (it also polls every 50 ms). Lower means lower latency, more wake-ups.
    #[arg(long, default_value_t = 256 << 10, value_name = "BYTES")]
    wakeup_bytes: u32,
    /// Pin the query's aggregate maps in this bpffs directory (e.g.
    /// /sys/fs/bpf/ebq/NAME) for external readers, with a C header describing
    /// them (see --pin-header); removed when ebq exits unless --keep-pins.
    #[arg(long, value_name = "DIR")]
    pin: Option<std::path::PathBuf>,
    /// With --pin: where to write the layout header (default
    /// /run/ebq/pins/<DIR relative to /sys/fs/bpf>.h).
    #[arg(long, value_name = "FILE")]
    pin_header: Option<std::path::PathBuf>,
    /// With --pin: leave the pins, the header and the final window's groups behind on exit.
    #[arg(long)]
    keep_pins: bool,
    /// Push every closed window (and --interval snapshot) to this OTLP/HTTP
    /// receiver as protobuf, e.g. http://127.0.0.1:4318 (POST …/v1/metrics).
    #[arg(long, value_name = "URL")]
    otlp: Option<String>,
    /// With --otlp or an otlp+http:// sink: an extra resource attribute
    /// (repeatable), e.g. cluster=hpc1.
    #[arg(long = "otlp-resource", value_name = "KEY=VALUE")]
    otlp_resource: Vec<String>,
    /// Fill a query parameter (`ebq run NAME --set top=20`; see `ebq queries NAME`).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    set: Vec<String>,
    /// Compile the query with clang even when the object cache
    /// (`$EBQ_CACHE_DIR`, else ~/.cache/ebq/objects) holds it, and store nothing.
    #[arg(long)]
    pub no_cache: bool,
    /// `ebq bench stages` only: row queries stop after this pipeline stage
    /// (trigger, filter, reserve, build, commit; at commit nothing reads the rows).
    #[arg(long, hide = true, value_name = "STAGE")]
    pub bench_stage: Option<String>,
    /// What a subcommand adds to the run (`ebq report io`: its report).
    #[arg(skip)]
    pub hook: Option<Box<dyn hook::Hook>>,
    /// Run this bundle instead of SQL (`ebq run FILE.ebq`).
    #[arg(skip)]
    pub bundle: Option<std::path::PathBuf>,
    /// Measure and report the query's cost (`ebq explain --analyze`).
    #[arg(skip)]
    pub analyze: bool,
    /// The query's name in exported metric names (`ebq run NAME`, a file's stem; else `query`).
    #[arg(skip)]
    pub query_name: Option<String>,
}

fn read_sql(sql: Option<String>, file: Option<String>) -> Result<String, String> {
    match (sql, file) {
        (Some(s), None) => Ok(s),
        (None, Some(f)) => std::fs::read(&f)
            .map_err(|e| format!("error: cannot read {f}: {e}"))
            .and_then(|b| String::from_utf8(b).map_err(|_| format!("error: {f} is not UTF-8 text"))),
        (Some(_), Some(_)) => Err("error: give the query either as an argument or with -f, not both".into()),
        (None, None) => Err("error: no query given; try `ebq 'SELECT comm, COUNT(*) FROM raw_syscalls.sys_enter GROUP BY comm' --duration 5`".into()),
    }
}

fn engine(args: &RunArgs) -> Result<Engine, String> {
    let options = ebq::plan::PlanOptions {
        max_groups: args.max_groups,
        ringbuf_bytes: args.ringbuf_size,
        wakeup_bytes: args.wakeup_bytes,
        max_pending: args.max_pending,
        thread_pairs: args.pairs == "auto",
        max_tracked: args.max_tracked,
        sketch_buckets: args.max_sketch_buckets,
        stage_limit: bench_stage(args)?,
        attach: ebq::plan::SyscallAttach::from_name(&args.attach).expect("clap checked the value"),
        every_call_raw: true,
        per_cpu_rings: args.rings == "per-cpu",
        // --otlp pushes HISTs as exponential histograms: bucket them as OTel does.
        hist_buckets: if args.otlp.is_some() { ebq::hist::Log2::Ceil } else { ebq::hist::Log2::Floor },
        // A pinned group map's readers decode the kernel key: names in it, not identities.
        late_names: args.pin.is_none() && !args.names_in_key,
        // `ebq report io` folds Darshan's records in the kernel unless it needs every operation.
        row_fold: args.hook.as_ref().and_then(|h| h.row_fold()),
    };
    let mut catalog = ebq::catalog::Catalog::open().map_err(|e| tracefs_error(&e.into()))?;
    for v in &args.views {
        let (name, file) = v.split_once('=').ok_or_else(|| format!("error: --view takes NAME=FILE.sql, not `{v}`"))?;
        let sql = std::fs::read_to_string(file).map_err(|e| format!("error: cannot read view file {file}: {e}"))?;
        catalog = catalog.with_view(name, &sql).map_err(|e| e.render(&sql))?;
    }
    Ok(Engine::with_catalog(catalog).with_options(options))
}

/// An engine with default plan options (`ebq serve`).
pub fn engine_default() -> Result<Engine, String> {
    Engine::new().map_err(|e| tracefs_error(&e))
}

/// The hidden `--bench-stage` of `ebq bench stages`.
pub fn bench_stage(args: &RunArgs) -> Result<Option<ebq::plan::StageLimit>, String> {
    args.bench_stage
        .as_deref()
        .map(|s| ebq::plan::StageLimit::from_name(s).ok_or_else(|| format!("error: unknown --bench-stage `{s}`")))
        .transpose()
}

fn tracefs_error(e: &Error) -> String {
    use ebq::{catalog::CatalogError, host::TracefsError};
    match e {
        Error::Catalog(CatalogError::Tracefs(TracefsError::Io { path, source })) if source.kind() == std::io::ErrorKind::PermissionDenied => format!(
            "error: cannot read {path}: permission denied; tracefs is readable by root only on most systems\n  help: run ebq as root (`sudo ebq …`)"
        ),
        Error::Catalog(CatalogError::Tracefs(TracefsError::NotMounted { looked })) => format!(
            "error: tracefs is not mounted (looked in {looked}); ebq reads event formats from it\n  help: mount it: `mount -t tracefs nodev /sys/kernel/tracing` (scripts/setup.sh does this)"
        ),
        other => format!("error: {other}"),
    }
}

fn main() -> ExitCode {
    ebq::runtime::startup_trace::mark("main");
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Explain { analyze, rest }) => explain(analyze, &rest),
        Some(Command::Compile { sql, file, output, views }) => {
            compile(sql, file, &output, &RunArgs { views, ..cli.run })
        }
        Some(Command::Run { target, rest }) => run_args(&rest).and_then(|args| run_target(&target, args)),
        Some(Command::Report { kind, rest }) if kind == "merge" => report::merge(&rest),
        Some(Command::Report { kind, rest }) => {
            report::parse(&rest).and_then(|(options, args)| report(&kind, options, args))
        }
        Some(Command::Serve { config, check }) => serve::main(&config, check),
        Some(Command::Bench(args)) => ebq_bench::run(args),
        Some(Command::Queries { name }) => shipped::list(name.as_deref()).and_then(|s| emit(&s)),
        Some(Command::Events { glob }) => events(glob, &cli.run),
        Some(Command::Describe { event, path }) => describe(&event, path.as_deref(), &cli.run),
        None => run::run(&cli.run),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::from(1)
        }
    }
}

/// The report's own options, listed by `ebq report io --help` (clap parses
/// them beside the run options: [`report::IoArgs`]).
const REPORT_HELP: &str = "Report options:
  --top N               the N busiest files (bytes, then time) in the text report
  --trace FILE.parquet  one row per operation (Darshan's DXT): rank, pid, file, op, offset, length, start, end
  --html FILE           one self-contained page (tables, charts, heatmap, event accounting)
  --mpi LIB|none        probe MPI-IO in LIB (`libmpich`, a path); default: libmpich when -c runs
                        mpirun, mpiexec or srun, else none
  --stdio               probe libc's stdio calls (fopen, fwrite, fprintf, …): Darshan's STDIO
                        module; the system calls libc makes inside them leave POSIX (a
                        per-thread mark kept in the kernel fold)
  --darshan-log FILE    a binary Darshan log (format 3.41) that PyDarshan, `python -m darshan
                        summary` and Drishti read; with --trace, DXT_POSIX too; with --stdio, STDIO
  --job-id N            the log's job id (default: SLURM_JOB_ID, else PBS_JOBID, else 0)
  --darshan-config FILE a Darshan config file (DARSHAN_CONFIG_PATH's): its NAME_EXCLUDE and
                        NAME_INCLUDE rules for POSIX apply to the files listed

Listed as Darshan lists: not files under its excluded directories (/etc/ /dev/ /usr/ /bin/ /boot/
/lib/ /opt/ /sbin/ /sys/ /proc/ /var/, by mount point; DARSHAN_EXCLUDE_DIRS=none|DIR,… replaces
them), not pipes, sockets or anonymous inodes (counted in one line), not the report's own outputs.

Run options: -c CMD, -p PID, --duration S, --format table|json, --cgroup PATH, --system-wide,
and the others of `ebq --help` (-o is refused: the report goes to stdout).

Merging the logs of one job's nodes (same --job-id): one job log, Darshan's shared-file reduction
(a file of several nodes is one record of rank -1):
  ebq report merge -o JOB.darshan NODE1.darshan NODE2.darshan …

Examples:
  ebq report io -c 'mpirun -n 4 ./app' --format json
  ebq report io -p 1234 --duration 30 --top 10 --html report.html
  ebq report io -p 1234 --mpi libmpich --job-id 42 --darshan-log node1.darshan";

/// `ebq report io`: runs the report's query with the report as its sink.
fn report(kind: &str, mut options: report::Options, mut args: RunArgs) -> Result<ExitCode, String> {
    if kind != "io" {
        return Err(format!(
            "error: unknown report `{kind}`; the reports are `io` (ebq report io -c CMD) and `merge` \
             (ebq report merge -o JOB.darshan LOG…)"
        ));
    }
    if args.sql.is_some() || args.file.is_some() {
        return Err("error: `ebq report io` runs its own query; give no other query".into());
    }
    if !matches!(args.format, Format::Table | Format::Json) {
        return Err("error: `ebq report io` writes text (--format table) or one JSON document (--format json)".into());
    }
    let catalog = ebq::catalog::Catalog::open().map_err(|e| tracefs_error(&e.into()))?;
    options.syscalls = catalog.kernel().syscalls().clone();
    options.json = args.format == Format::Json;
    options.command = args.command.clone().or_else(|| args.pid.map(|p| format!("pid {p}")));
    args.sql = Some(options.sql(args.command.as_deref()));
    args.hook = Some(Box::new(report::IoHook { options, command: args.command.clone() }));
    run::run(&args)
}

/// `ebq run TARGET`: a bundle, a query file, or a shipped query.
fn run_target(target: &str, mut args: RunArgs) -> Result<ExitCode, String> {
    if args.sql.is_some() || args.file.is_some() {
        return Err(format!("error: `ebq run {target}` runs that query; give no other query"));
    }
    let path = std::path::Path::new(target);
    if path.extension().is_some_and(|e| e == "ebq") {
        args.bundle = Some(path.to_path_buf());
        return run::run(&args);
    }
    let stem = path.file_stem().map_or(target.to_string(), |s| s.to_string_lossy().into_owned());
    args.query_name = Some(stem);
    let text = if path.is_file() {
        read_sql(None, Some(target.to_string()))?
    } else {
        let text = shipped::find(target).ok_or_else(|| shipped::unknown(target))?.text;
        match args.interval.take() {
            Some(seconds) => shipped::per_interval(text, &mut args.set, seconds)?,
            None => text.to_string(),
        }
    };
    args.sql = Some(shipped::instantiate(&text, &args.set)?);
    run::run(&args)
}

/// Parses run options given after a subcommand, as if they followed `ebq`.
fn run_args(rest: &[String]) -> Result<RunArgs, String> {
    let argv = std::iter::once("ebq".to_string()).chain(rest.iter().cloned());
    let cli = Cli::try_parse_from(argv).map_err(|e| e.to_string())?;
    if cli.command.is_some() {
        return Err("error: a subcommand cannot follow another".into());
    }
    Ok(cli.run)
}

fn explain(analyze: bool, rest: &[String]) -> Result<ExitCode, String> {
    let mut args = run_args(rest)?;
    if analyze {
        if args.duration.is_none() && args.command.is_none() && args.pid.is_none() {
            args.duration = Some(5.0);
        }
        args.analyze = true;
        return run::run(&args);
    }
    let sql = read_sql(args.sql.clone(), args.file.clone())?;
    let engine = engine(&args)?;
    let prepared = engine.prepare(&sql).map_err(|e| e.render(&sql))?;
    emit(&prepared.explain())
}

fn compile(
    sql: Option<String>,
    file: Option<String>,
    output: &std::path::Path,
    args: &RunArgs,
) -> Result<ExitCode, String> {
    let sql = read_sql(sql, file)?;
    let engine = engine(args)?;
    let bundle = ebq::bundle::Bundle::compile(&engine, &sql).map_err(|e| e.render(&sql))?;
    std::fs::write(output, bundle.to_bytes()).map_err(|e| format!("error: cannot write {}: {e}", output.display()))?;
    eprintln!(
        "ebq: wrote {} ({} bytes of BPF object); run it with `ebq run {}`",
        output.display(),
        bundle.object.len(),
        output.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn events(glob: Option<String>, args: &RunArgs) -> Result<ExitCode, String> {
    let engine = engine(args)?;
    // `usdt:BINARY:PATTERN` or `usdt:BINARY:PROVIDER:PATTERN`: the binary's USDT probes.
    if let Some(Ok(ebq::parse::EventName::Usdt { path, provider, name })) =
        glob.as_deref().filter(|g| g.starts_with("usdt:")).map(ebq::parse::parse_event_name)
    {
        let pattern = provider.map(|p| format!("{p}:{name}")).unwrap_or(name);
        let list = engine.catalog().list_usdt(&path, &pattern).map_err(|m| format!("error: {m}"))?;
        if list.is_empty() {
            return Err(format!("error: no USDT probe of `{path}` matches `{pattern}`"));
        }
        return emit(&list.iter().map(|e| format!("{e}\n")).collect::<String>());
    }
    let list = engine.catalog().list(glob.as_deref()).map_err(|e| tracefs_error(&e.into()))?;
    // ebq's own events: one row per element of an array a system call passes (aio.submit).
    let expanding = engine.catalog().list_expanding(glob.as_deref());
    if list.is_empty() && expanding.is_empty() {
        return Err(format!("error: no event matches `{}`", glob.unwrap_or_default()));
    }
    let tracepoints = list.iter().map(|(c, n)| format!("tracepoint:{c}:{n}\n"));
    emit(&tracepoints.chain(expanding.iter().map(|e| format!("{e}\n"))).collect::<String>())
}

fn describe(event: &str, path: Option<&str>, args: &RunArgs) -> Result<ExitCode, String> {
    if let Some(view) = engine(args)?.catalog().view(event.trim()) {
        return describe_view(&engine(args)?, view);
    }
    let name = ebq::parse::parse_event_name(event.trim()).map_err(|m| format!("error: {m}"))?;
    let engine = engine(args)?;
    // Bound as the FROM of a query the user never wrote: its errors are told
    // about the event alone, without that query's text.
    let mut q = ebq::parse::parse_query("SELECT COUNT(*) FROM described.event").expect("a valid query");
    q.from.name = name;
    let bound = ebq::bind::bind(&q, engine.catalog()).map_err(|e| match e {
        Error::Query(q) => Error::Query(ebq::error::QueryError { span: None, ..q }).render(""),
        other => other.render(""),
    })?;
    let kernel = engine.catalog().kernel();
    if let Some(path) = path {
        let (c_type, members) =
            ebq::bind::describe_members(kernel, &bound.event, path).map_err(|m| format!("error: {m}"))?;
        let mut out = format!(
            "{} {path}: {c_type}\n  {:<24} {:<32} column type\n",
            bound.event.event_description(),
            "member",
            "C type"
        );
        out += &described_lines(&members);
        return emit(&out);
    }
    let f = &bound.event.format;
    let mut out = format!(
        "{} ({})\n  {:<24} {:<12} source\n",
        bound.event.event_description(),
        bound.event.origin(),
        "column",
        "type"
    );
    for field in &f.fields {
        let ty = column_type(field);
        let read = match field.kind {
            ebq::catalog::FieldKind::UserStr => ", read from user memory",
            ebq::catalog::FieldKind::UserArgv => ", read from user memory: entries joined by spaces",
            _ => "",
        };
        out += &format!("  {:<24} {:<12} {}{read}\n", field.name, ty, bound.event.field_origin(field));
    }
    // `SELECT *` expands to the event's own fields only (a row of every system
    // column would be mostly noise and stacks); say so where the columns are listed.
    out += "  -- not in SELECT * (select these by name):\n";
    for s in SystemColumn::ALL {
        out += &format!("  {:<24} {:<12} {}\n", s.name(), s.data_type().to_string(), s.description());
    }
    let mapped = ebq::catalog::file_columns::address_field(f).is_some();
    for (end, fd) in ebq::catalog::file_columns::fd_fields(f) {
        for c in ebq::catalog::file_columns::columns_at(f) {
            let (name, ty) = (c.name_at(end), c.data_type().to_string());
            let of = if mapped { "file mapped at" } else { "file of" };
            if ebq::catalog::FileColumn::FAULT.contains(&c) {
                out += &format!("  {name:<24} {ty:<12} {}\n", c.description());
            } else {
                out += &format!("  {name:<24} {ty:<12} {} ({of} `{fd}`)\n", c.description());
            }
        }
    }
    if let Some(raw) = ebq::bind::describe_args(kernel, &bound.event) {
        out += &format!(
            "raw arguments (tp_btf; a query reads these or the fields above; format fields win a shared name; \
             with these, a field named like a system column (comm) is the system column):\n  {:<24} {:<32} column type\n",
            "argument", "C type"
        );
        out += &described_lines(&raw);
    }
    emit(&out)
}

/// `ebq describe VIEW`: its columns with their types, then its SQL.
fn describe_view(engine: &Engine, view: &ebq::parse::View) -> Result<ExitCode, String> {
    let mut out = format!("view {} (inlined into the query that reads it)\n  {:<24} type\n", view.name, "column");
    for (name, ty) in ebq::bind::describe_view(engine.catalog(), view) {
        let ty = ty.map(|t| t.to_string()).unwrap_or_else(|why| format!("- ({why})"));
        out += &format!("  {name:<24} {ty}\n");
    }
    out += &format!("view text:\n  {}\n", view.sql.trim().replace('\n', "\n  "));
    emit(&out)
}

/// Raw arguments or struct members, one a line: name, C type, column type (or why none).
fn described_lines(items: &[ebq::bind::Described]) -> String {
    let sql = |d: &ebq::bind::Described| d.sql.clone().unwrap_or_else(|why| format!("- ({why})"));
    items.iter().map(|d| format!("  {:<24} {:<32} {}\n", d.name, d.c_type, sql(d))).collect()
}

/// Writes to stdout; a closed pipe (`ebq events | head`) ends quietly.
fn emit(text: &str) -> Result<ExitCode, String> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(format!("error: writing to stdout: {e}")),
    }
}

fn column_type(f: &ebq::catalog::TpField) -> String {
    use ebq::catalog::FieldKind;
    match &f.kind {
        FieldKind::Int => ebq::types::DataType::int_of_size(f.size, f.signed).to_string(),
        FieldKind::CharArray { len } => format!("string({len})"),
        FieldKind::DataLocStr => format!("string({})", ebq::bind::DATA_LOC_STRING_CAP),
        FieldKind::UserStr | FieldKind::UserArgv => format!("string({})", ebq::bind::USER_STRING_CAP),
        FieldKind::IntArray { elem_size, len } => {
            format!("{}[{len}]", ebq::types::DataType::int_of_size(*elem_size, f.signed))
        }
        FieldKind::Unsupported => "unsupported".into(),
    }
}

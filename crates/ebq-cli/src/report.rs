//! `ebq report io`'s glue: its flags ([`take_options`]) and the sink that
//! hands the query's rows to the [`ebq_report`] library and prints what it
//! returns. The report itself (the query, the folds, every output format)
//! is the `ebq-report` crate.

pub use ebq_report::*;

use crate::hook::{self, Companion, Hook};
use crate::RunArgs;
use ebq::runtime::Output;
use ebq::sink::Sink;
use ebq::{Engine, Scope};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// `ebq report io`'s command line: the run options and the report's own
/// flags (which `ebq report io --help` lists, [`crate::REPORT_HELP`]).
#[derive(clap::Parser, Debug)]
#[command(name = "ebq report io")]
pub struct IoArgs {
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub flags: Flags,
}

/// The report's own flags.
#[derive(clap::Args, Debug)]
pub struct Flags {
    /// The N busiest files (bytes, then time) in the text report.
    #[arg(long, value_name = "N", value_parser = top)]
    top: Option<usize>,
    /// One row per operation (Darshan's DXT) in a Parquet file.
    #[arg(long, value_name = "FILE.parquet")]
    trace: Option<PathBuf>,
    /// One self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Probe MPI-IO in LIB (`none`: no MPI-IO).
    #[arg(long, value_name = "LIB|none")]
    mpi: Option<String>,
    /// Probe libc's stdio calls (Darshan's STDIO module).
    #[arg(long)]
    stdio: bool,
    /// A binary Darshan log (format 3.41).
    #[arg(long = "darshan-log", value_name = "FILE")]
    darshan_log: Option<PathBuf>,
    /// The Darshan log's job id.
    #[arg(long = "job-id", value_name = "N", value_parser = job_id)]
    job_id: Option<i64>,
    /// A Darshan config file: its NAME_EXCLUDE and NAME_INCLUDE rules for POSIX.
    #[arg(long = "darshan-config", value_name = "FILE")]
    darshan_config: Option<PathBuf>,
}

/// `--top N`: at least one file.
fn top(value: &str) -> Result<usize, String> {
    value
        .parse()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("--top takes a number of files (at least 1), not `{value}`"))
}

/// `--job-id N`.
fn job_id(value: &str) -> Result<i64, String> {
    value.parse().map_err(|_| format!("--job-id takes a number, not `{value}`"))
}

/// Parses `ebq report io`'s arguments (after `io`): the report's options and the run's.
pub fn parse(rest: &[String]) -> Result<(Options, RunArgs), String> {
    let argv = std::iter::once("ebq report io".to_string()).chain(rest.iter().cloned());
    let IoArgs { run, flags } = clap::Parser::try_parse_from(argv).map_err(|e: clap::Error| e.to_string())?;
    let darshan_config = match &flags.darshan_config {
        Some(path) => listing::DarshanConfig::read(path).map_err(|e| format!("error: {e}"))?,
        None => listing::DarshanConfig::default(),
    };
    let options = Options {
        top: flags.top,
        trace: flags.trace,
        html: flags.html,
        mpi: flags.mpi,
        stdio: flags.stdio,
        darshan_log: flags.darshan_log,
        job_id: flags.job_id,
        darshan_config,
        ..Options::default()
    };
    Ok((options, run))
}

/// `ebq report io`'s additions to the run: the kernel fold, the report as
/// its sink, the MPI-IO and STDIO queries beside it ([`ReportRun`]).
#[derive(Debug)]
pub struct IoHook {
    pub options: Options,
    /// The `-c` command line (an MPI launcher's picks the MPI library).
    pub command: Option<String>,
}

impl Hook for IoHook {
    fn row_fold(&self) -> Option<std::sync::Arc<ebq::plan::RowFold>> {
        self.options.kernel_fold(self.command.as_deref())
    }

    fn sink(&self, args: &RunArgs) -> Result<Box<dyn Sink>, String> {
        if args.output.is_some() {
            return Err("error: `ebq report io` writes to stdout; redirect it instead of -o".into());
        }
        Ok(Box::new(ReportSink(IoReport::new(self.options.clone()))))
    }

    fn start(&self, args: &RunArgs, engine: &Engine, scope: &Scope) -> Result<Box<dyn Companion>, String> {
        let run = ReportRun::start(engine, &self.options, self.command.as_deref(), args.pid, scope)?;
        Ok(Box::new(run))
    }
}

impl Companion for ReportRun {
    fn announce(&self) -> Vec<String> {
        ReportRun::announce(self)
    }

    fn poll_wait(&self) -> Option<Duration> {
        ReportRun::poll_wait(self)
    }

    fn poll(&mut self) -> Result<(), String> {
        ReportRun::poll(self)
    }

    fn finish(self: Box<Self>, end: hook::Ended<'_>) -> Result<(), String> {
        let hook::Ended { query, prepared, sql, stats, released_ns, end_ns } = end;
        ReportRun::finish(*self, Ended { query, prepared, sql, stats, released_ns, end_ns })
    }
}

/// The report as the run loop's sink: collects the rows, then writes the
/// files asked for and prints the report on stdout.
pub struct ReportSink(pub IoReport);

impl Sink for ReportSink {
    fn write(&mut self, out: &Output) -> io::Result<()> {
        self.0.push(out);
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        let report = self.0.finish();
        let options = self.0.options();
        if let Some(path) = &options.trace {
            let file = File::create(path).map_err(|e| e.to_string());
            file.and_then(|f| report.write_trace(BufWriter::new(f)))
                .map_err(|e| io::Error::other(format!("--trace {}: {e}", path.display())))?;
        }
        if let Some(path) = &options.html {
            write_file("--html", path, |out| report.write_html(out))?;
        }
        if let Some(path) = &options.darshan_log {
            write_file("--darshan-log", path, |out| report.write_darshan_log(out, darshan_job(options)))?;
        }
        let mut out = BufWriter::new(io::stdout().lock());
        match options.json {
            true => report.write_json(&mut out)?,
            false => report.write_text(&mut out, options.top)?,
        }
        out.flush()
    }
}

/// Writes one of the report's files (`--html`, `--darshan-log`); an error names the flag and the file.
fn write_file(flag: &str, path: &Path, write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>) -> io::Result<()> {
    let written = File::create(path).map(BufWriter::new).and_then(|mut out| {
        write(&mut out)?;
        out.flush()
    });
    written.map_err(|e| io::Error::other(format!("{flag} {}: {e}", path.display())))
}

/// What the Darshan log's job record takes from the environment: the user,
/// the job id (`--job-id`, else the batch system's: `SLURM_JOB_ID`, or the
/// number `PBS_JOBID` starts with), the command line.
fn darshan_job(options: &Options) -> darshan_log::Job {
    let from_env = |var: &str| {
        let v = std::env::var(var).ok()?;
        v.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
    };
    darshan_log::Job {
        // SAFETY: getuid has no preconditions.
        uid: i64::from(unsafe { libc::getuid() }),
        jobid: options.job_id.or_else(|| from_env("SLURM_JOB_ID")).or_else(|| from_env("PBS_JOBID")).unwrap_or(0),
        exe: options.command.clone().unwrap_or_default(),
        ..darshan_log::Job::default()
    }
}

/// `ebq report merge -o OUT LOG…`: the Darshan logs of one job's nodes as
/// one job log ([`merge::merge`]), written to OUT; a line on stderr says
/// what was joined.
pub fn merge(args: &[String]) -> Result<ExitCode, String> {
    let (output, inputs) = merge_args(args)?;
    let mut logs = vec![];
    for path in &inputs {
        let bytes = std::fs::read(path).map_err(|e| format!("error: {}: {e}", path.display()))?;
        let read = darshan_read::read(&bytes).map_err(|e| format!("error: {}: {e}", path.display()))?;
        for id in read.skipped {
            eprintln!(
                "ebq: {}: module {} left out (merge reads POSIX, MPI-IO, STDIO, DXT_POSIX and DXT_MPIIO)",
                path.display(),
                darshan_read::module_name(id)
            );
        }
        logs.push(read.log);
    }
    let names: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
    let merged = merge::merge(&logs, &names).map_err(|e| format!("error: {e}"))?;
    merged.write(&output).map_err(|e| format!("error: -o {}: {e}", output.display()))?;
    let shared =
        [&merged.posix, &merged.mpiio, &merged.stdio].iter().flat_map(|m| m.iter()).filter(|r| r.rank == -1).count();
    eprintln!(
        "ebq: merged {} logs of job {} ({} processes, {} files): {} records of rank -1 (shared), written to {}",
        logs.len(),
        merged.job.jobid,
        merged.job.nprocs,
        merged.names.len(),
        shared,
        output.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `-o FILE` (or `--output FILE`, `--output=FILE`) and the logs.
fn merge_args(args: &[String]) -> Result<(PathBuf, Vec<PathBuf>), String> {
    const USAGE: &str = "usage: ebq report merge -o JOB.darshan NODE1.darshan NODE2.darshan …";
    let (mut output, mut inputs) = (None, vec![]);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-o" | "--output" => {
                let v = it.next().ok_or_else(|| format!("error: {a} needs a file; {USAGE}"))?;
                output = Some(PathBuf::from(v));
            }
            _ if a.starts_with("--output=") => output = Some(PathBuf::from(&a["--output=".len()..])),
            _ if a.starts_with('-') => return Err(format!("error: unknown option `{a}` of ebq report merge; {USAGE}")),
            _ => inputs.push(PathBuf::from(a)),
        }
    }
    let output = output.ok_or_else(|| format!("error: ebq report merge needs -o FILE (the job log); {USAGE}"))?;
    if inputs.is_empty() {
        return Err(format!("error: ebq report merge needs the nodes' logs; {USAGE}"));
    }
    Ok((output, inputs))
}

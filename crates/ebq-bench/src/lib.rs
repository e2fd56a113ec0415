//! `ebq bench`: the seed papers' measurement studies as one command each,
//! ebq side by side with bpftrace (and hand-written libbpf C where it matters).
//!
//! - `pervent`: Gregg's per-event cost on `dd bs=1` pinned to one CPU.
//! - `attach`: pervent's system-call shapes on classic vs raw tracepoints.
//! - `stages`: IOTracer's six-stage dissection with fio.
//! - `fidelity`: events issued vs delivered vs reported dropped; a pread64
//!   burst through every output format at ebq's defaults.
//! - `startup`: query text → attached (object cache hit, and `--no-cache`), bundle → attached, bpftrace → attached.
//! - `sinks`: each sink's encoding cost per row on synthetic batches (no root).
//! - `report`: `ebq report io` against bare fio, its hand-written floor and
//!   Darshan, in interleaved rounds.
//! - `render`: only regenerates the report and the plots from `results.json`.
//!
//! Every study merges its section into `OUT/results.json`, prints a table,
//! draws SVG plots into OUT, and regenerates the Markdown report.
//!
//! A library of its own so the `ebq` binary stays the query tool: the CLI
//! only parses `ebq bench …` into [`BenchArgs`] and calls [`run`]. The studies
//! run ebq as a separate process (this same executable, `current_exe`), as a
//! user would, so their costs include ebq's own startup and reader.

mod attach;
mod fidelity;
mod fio;
mod inbpf;
mod ioreport;
mod pervent;
mod plot;
mod proc;
mod reader;
mod reference;
mod report;
mod sinks;
mod stages;
mod startup;
mod stats;
mod table;

use clap::{Args, ValueEnum};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Which study to run.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum Study {
    /// Per-event cost (Gregg) on dd bs=1.
    Pervent,
    /// pervent's system-call shapes on classic vs raw tracepoints, and the
    /// cost on untraced system calls.
    Attach,
    /// Six-stage overhead dissection with fio.
    Stages,
    /// Events issued vs delivered vs dropped; tracer CPU and RSS.
    Fidelity,
    /// Time to attached: query text (cache hit, --no-cache), AOT bundle, bpftrace.
    Startup,
    /// Each sink's encoding CPU per row (terminal, Parquet, CSV, Kafka's
    /// arrow and JSON) on synthetic batches; needs no root.
    Sinks,
    /// `ebq report io` vs bare fio, its hand-written floor (the kernel
    /// fold's minimum) and Darshan (with DARSHAN_PREFIX), in interleaved
    /// rounds (--runs) at 4 KiB and 64 KiB, psync and io_uring.
    Report,
    /// pervent, stages, fidelity, startup and sinks, then the report.
    All,
    /// Only regenerate the Markdown report and the plots from OUT/results.json.
    Render,
    /// The paced read workload of `fidelity` (internal).
    #[value(hide = true)]
    Reader,
    /// The pread64 burst workload of `fidelity` (internal; --reads calls).
    #[value(hide = true)]
    Burst,
}

/// `ebq bench` options.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// The study.
    #[arg(value_enum)]
    study: Study,
    /// pervent: read(2) calls per dd run (default 1000000; --quick 20000).
    /// sinks: rows (default 200000; --quick 20000).
    #[arg(long)]
    count: Option<u64>,
    /// Timed runs per measurement; the fastest counts (default 3; --quick 1).
    /// report: interleaved rounds (default 3; --quick 1).
    #[arg(long)]
    runs: Option<usize>,
    /// Much smaller sizes (a smoke test of the outputs, not a measurement).
    #[arg(long)]
    quick: bool,
    /// Results directory: results.json, *.svg, RESULTS.md.
    #[arg(long, default_value = "bench/results")]
    out: PathBuf,
    /// Also write the Markdown report here (e.g. bench/RESULTS.md).
    #[arg(long, value_name = "FILE")]
    md: Option<PathBuf>,
    /// CPU the workload is pinned to (tracers run on another one).
    #[arg(long, default_value_t = 0)]
    cpu: usize,
    /// The bpftrace binary.
    #[arg(long, default_value = "bpftrace")]
    bpftrace: String,
    /// pervent: only these experiments (comma-separated ids, e.g.
    /// key_pid,file_inode); the bare trigger always runs, as the floor the
    /// added costs are measured over. fidelity: `burst` runs only the pread64
    /// burst through every output format.
    #[arg(long, value_delimiter = ',', value_name = "IDS")]
    only: Vec<String>,
    /// reader: read(2) calls to issue.
    #[arg(long, hide = true, default_value_t = 0)]
    reads: u64,
    /// reader: calls per second (0: as fast as possible).
    #[arg(long, hide = true, default_value_t = 0)]
    rate: u64,
}

/// What every study needs.
pub(crate) struct Ctx {
    /// Quick (smoke-test) sizes.
    pub quick: bool,
    /// dd reads per run (pervent).
    pub count: u64,
    /// Timed runs per measurement.
    pub runs: usize,
    /// Results directory.
    pub out: PathBuf,
    /// Scratch directory for tracer outputs (inside `out`, removed at the end).
    pub scratch: PathBuf,
    /// The workload's CPU.
    pub cpu: usize,
    /// The tracers' CPU.
    pub tracer_cpu: usize,
    /// This ebq binary.
    pub ebq: String,
    /// The bpftrace binary.
    pub bpftrace: String,
    /// pervent: the experiments to run (empty: all, or the quick set).
    pub only: Vec<String>,
}

impl Ctx {
    /// An ebq command line (the binary followed by `args`).
    pub fn ebq_argv(&self, args: &[&str]) -> Vec<String> {
        std::iter::once(self.ebq.clone()).chain(args.iter().map(|s| s.to_string())).collect()
    }
}

/// Runs `ebq bench …`.
pub fn run(args: BenchArgs) -> Result<ExitCode, String> {
    if args.study == Study::Reader {
        return reader::run(args.reads, args.rate).map(|_| ExitCode::SUCCESS);
    }
    if args.study == Study::Burst {
        return reader::burst(args.reads).map(|_| ExitCode::SUCCESS);
    }
    std::fs::create_dir_all(&args.out).map_err(|e| format!("error: cannot create {}: {e}", args.out.display()))?;
    let md = args.md.clone().unwrap_or_else(|| args.out.join("RESULTS.md"));
    if args.study == Study::Render {
        return write_report(&args.out, &md).map(|_| ExitCode::SUCCESS);
    }
    // SAFETY: geteuid has no preconditions.
    if args.study != Study::Sinks && unsafe { libc::geteuid() } != 0 {
        return Err("error: ebq bench loads BPF programs: run it as root".into());
    }
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    if args.cpu >= ncpu {
        return Err(format!("error: --cpu {} but this machine has {ncpu} CPUs", args.cpu));
    }
    let tracer_cpu = if ncpu > 1 { usize::from(args.cpu == 0) } else { 0 };
    let ebq = std::env::current_exe().map_err(|e| format!("error: {e}"))?.display().to_string();
    let scratch = args.out.join("scratch");
    std::fs::create_dir_all(&scratch).map_err(|e| format!("error: {}: {e}", scratch.display()))?;
    let ctx = Ctx {
        quick: args.quick,
        count: args.count.unwrap_or(if args.quick { 20_000 } else { 1_000_000 }),
        runs: args.runs.unwrap_or(if args.quick { 1 } else { 3 }),
        out: args.out.clone(),
        scratch: scratch.clone(),
        cpu: args.cpu,
        tracer_cpu,
        ebq,
        bpftrace: args.bpftrace.clone(),
        only: args.only.clone(),
    };
    let studies: &[Study] = match args.study {
        Study::All => &[Study::Pervent, Study::Stages, Study::Fidelity, Study::Startup, Study::Sinks],
        ref s => std::slice::from_ref(s),
    };
    for &s in studies {
        let started = report::now_utc();
        let load_before = report::loadavg();
        let t0 = std::time::Instant::now();
        eprintln!("ebq bench: {} (load {load_before})", name(s));
        let mut section = match s {
            Study::Pervent => pervent::run(&ctx)?,
            Study::Attach => attach::run(&ctx)?,
            Study::Stages => stages::run(&ctx)?,
            Study::Fidelity => fidelity::run(&ctx)?,
            Study::Startup => startup::run(&ctx)?,
            Study::Report => ioreport::run(&ctx)?,
            Study::Sinks => {
                sinks::run(&ctx, args.count.map_or(if ctx.quick { 20_000 } else { 200_000 }, |c| c as usize))?
            }
            _ => unreachable!(),
        };
        section["run"] = json!({
            "started_utc": started,
            "seconds": t0.elapsed().as_secs_f64(),
            "load_before": load_before,
            "load_after": report::loadavg(),
            "quick": ctx.quick,
            "command": std::env::args().collect::<Vec<_>>().join(" "),
        });
        merge(&ctx.out, name(s), section)?;
    }
    let _ = std::fs::remove_dir_all(&scratch);
    write_report(&ctx.out, &md)?;
    eprintln!("ebq bench: results in {} ({}, plots *.svg), report {}", ctx.out.display(), RESULTS, md.display());
    Ok(ExitCode::SUCCESS)
}

/// The results file inside the results directory.
pub(crate) const RESULTS: &str = "results.json";

fn name(s: Study) -> &'static str {
    match s {
        Study::Pervent => "pervent",
        Study::Attach => "attach",
        Study::Stages => "stages",
        Study::Fidelity => "fidelity",
        Study::Startup => "startup",
        Study::Sinks => "sinks",
        Study::Report => "report",
        Study::All => "all",
        Study::Render => "render",
        Study::Reader => "reader",
        Study::Burst => "burst",
    }
}

/// Replaces one study's section of `results.json` (other studies' results stay).
fn merge(out: &Path, key: &str, section: Value) -> Result<(), String> {
    let path = out.join(RESULTS);
    let mut all = std::fs::read_to_string(&path)
        .ok()
        .and_then(|s| serde_json::from_str::<Value>(&s).ok())
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    all[key] = section;
    all["machine"] = report::machine();
    let text = serde_json::to_string_pretty(&all).map_err(|e| e.to_string())?;
    std::fs::write(&path, text + "\n").map_err(|e| format!("error: cannot write {}: {e}", path.display()))
}

fn write_report(out: &Path, md: &Path) -> Result<(), String> {
    let path = out.join(RESULTS);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("error: cannot read {}: {e}", path.display()))?;
    let all: Value = serde_json::from_str(&text).map_err(|e| format!("error: {}: {e}", path.display()))?;
    std::fs::write(md, report::markdown(&all)).map_err(|e| format!("error: cannot write {}: {e}", md.display()))?;
    draw_plots(out, &all)
}

/// A study's plotter: draws its section of a results.json into a directory.
type Draw = fn(&Path, &Value) -> Result<(), String>;

/// Redraws every study's plot present in `all` (a results.json) into `out`.
fn draw_plots(out: &Path, all: &Value) -> Result<(), String> {
    let draws: [(&str, Draw); 5] = [
        ("pervent", pervent::plot_section),
        ("stages", stages::plot_section),
        ("fidelity", fidelity::plot_section),
        ("startup", startup::plot_section),
        ("report", ioreport::plot_section),
    ];
    for (study, draw) in draws {
        if all.get(study).is_some_and(|s| !s.is_null()) {
            draw(out, &all[study])?;
        }
    }
    Ok(())
}

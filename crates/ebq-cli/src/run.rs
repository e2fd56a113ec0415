//! Running a query: scope, the poll loop (stopped through [`crate::signals`]), the final window and stats.

use crate::child::spawn_held;
use crate::hook::{Companion, Ended};
use crate::output::make_sink;
use crate::signals::{self, OnHangup};
use crate::{engine, read_sql, RunArgs};
use ebq::runtime::startup_trace::mark;
use ebq::sink::Sink;
use ebq::{Output, RunningQuery, Scope};
use std::process::ExitCode;
use std::time::{Duration, Instant};

fn process_alive(pid: u32) -> bool {
    // SAFETY: kill with signal 0 only checks for existence.
    unsafe { libc::kill(pid as libc::pid_t, 0) == 0 || *libc::__errno_location() == libc::EPERM }
}

/// Runs the query described by `args`; returns the exit code. The steps:
/// check the arguments and prepare the query with its outputs
/// ([`Setup::new`]), then trace: start it in its scope, poll until the
/// command exits, Ctrl-C or the deadline, then the companion's end (a
/// subcommand's, [`crate::hook`]), the final window and the stats lines.
pub fn run(args: &RunArgs) -> Result<ExitCode, String> {
    let setup = Setup::new(args)?;
    trace(args, setup)
}

/// A query checked, prepared and given its outputs, before anything is traced.
struct Setup {
    bundle: Option<ebq::bundle::Bundle>,
    sql: String,
    engine: ebq::Engine,
    prepared: ebq::PreparedQuery,
    /// An aggregate without WINDOW: the one kind `--interval` snapshots.
    windowless_aggregate: bool,
    sink: Box<dyn Sink>,
    otlp: Option<crate::otlp::Pusher>,
}

impl Setup {
    /// Reads the query (text or bundle), checks the arguments and the
    /// privileges, prepares the query and makes its sink and OTLP pusher.
    fn new(args: &RunArgs) -> Result<Setup, String> {
        let bundle = match &args.bundle {
            Some(path) => Some(ebq::bundle::Bundle::read(path).map_err(|e| format!("error: {e}"))?),
            None => None,
        };
        let sql = match &bundle {
            Some(b) => b.sql.clone(),
            None => read_sql(args.sql.clone(), args.file.clone())?,
        };
        check_args(args)?;
        ebq::runtime::env::check_privileges().map_err(|e| format!("error: {e}"))?;
        if args.no_cache {
            ebq::runtime::object_cache::disable();
        }
        let engine = engine(args)?;
        mark("catalog opened");
        let prepared = match &bundle {
            Some(b) => b.prepare(engine.catalog()),
            None => engine.prepare(&sql),
        }
        .map_err(|e| e.render(&sql))?;
        mark("prepared (parse, bind, plan, codegen)");
        let windowless_aggregate = prepared.physical.programs[0].window == ebq::plan::KernelWindow::None
            && matches!(prepared.physical.programs[0].output, ebq::plan::KernelOutput::Aggregate { .. });
        if args.interval.is_some() && !windowless_aggregate {
            let windowed = prepared.logical.window.is_some() || prepared.logical.stream_join.is_some();
            return Err(interval_refused(windowed).into());
        }
        let sink = make_sink(args, &prepared)?;
        if args.otlp.is_none() && !args.otlp_resource.is_empty() {
            return Err("error: --otlp-resource needs --otlp URL".into());
        }
        let pin = args.pin.as_ref().map(|dir| ebq::runtime::PinOptions {
            dir: dir.clone(),
            header: args.pin_header.clone(),
            keep: args.keep_pins,
        });
        if let Some(p) = &pin {
            p.check().map_err(|e| format!("error: {e}"))?;
            if !matches!(prepared.physical.programs[0].output, ebq::plan::KernelOutput::Aggregate { .. }) {
                return Err("error: --pin needs an aggregate query: a row query streams through a ring buffer and has no map to pin".into());
            }
        }
        let otlp = match &args.otlp {
            Some(url) => Some(crate::otlp::Pusher::new(
                url,
                &args.otlp_resource,
                args.query_name.as_deref().unwrap_or("query"),
                &prepared,
            )?),
            None => None,
        };
        Ok(Setup { bundle, sql, engine, prepared, windowless_aggregate, sink, otlp })
    }
}

/// Traces the prepared query: the child or process scope, the query and
/// its companion started ([`start_query`]), the poll loop
/// ([`Polling::run`]), then the companion's end, the final results and the stats.
fn trace(args: &RunArgs, setup: Setup) -> Result<ExitCode, String> {
    let Setup { bundle, sql, engine, prepared, windowless_aggregate, mut sink, mut otlp } = setup;
    signals::install(OnHangup::Stop);

    let (cgroup, mut held) = cgroup_and_child(args)?;
    let scope = scope_of(args, held.as_ref(), cgroup);
    let stats_on =
        if args.analyze { Some(ebq::runtime::enable_bpf_stats().map_err(|e| format!("error: {e}"))?) } else { None };
    if !(args.max_pair_age > 0.0 && args.max_pair_age < 1e9) {
        return Err(format!("error: --max-pair-age must be a positive duration, not {}", args.max_pair_age));
    }
    let (mut query, mut companion) = start_query(args, &engine, &prepared, bundle.as_ref(), scope, &sql)?;
    // Rows handed to the sink: with LIMIT, fewer than delivered (the stats line says both).
    let printed = std::cell::Cell::new(0u64);

    announce(args, held.as_ref(), &prepared, companion.as_deref());
    // The traced command's start: the held child's exec follows its release.
    let released_ns = held.as_ref().map(|_| ebq::exec::monotonic_ns());
    release(held.as_mut());
    let started = query.started_at();
    let deadline = args.duration.map(|s| started + Duration::from_secs_f64(s));
    if let Some(d) = deadline {
        query.set_deadline(d);
    }
    let polling = Polling {
        args,
        sql: &sql,
        windowless_aggregate,
        aggregate: matches!(prepared.physical.programs[0].output, ebq::plan::KernelOutput::Aggregate { .. }),
        started,
        deadline,
        interval: args.interval.map(Duration::from_secs_f64),
        // `ebq bench stages` at commit: rows are submitted but nobody reads them.
        unread: crate::bench_stage(args)? == Some(ebq::plan::StageLimit::Commit),
        printed: &printed,
    };
    let child_status = polling.run(&mut query, &mut held, &mut companion, &mut otlp, &mut sink)?;
    let end_ns = ebq::exec::monotonic_ns();
    mark("loop ended (command exited, Ctrl-C or deadline)");
    let outs = query.finish().map_err(|e| e.render(&sql))?;
    mark("final results read");
    let mut stats = query.stats().map_err(|e| e.render(&sql))?;
    let cpu_at_stats = ebq::runtime::process_cpu_ns();
    let programs = query.program_stats();
    if let Some(c) = companion {
        c.finish(Ended { query: &query, prepared: &prepared, sql: &sql, stats, released_ns, end_ns })?;
    }
    if let Some(p) = otlp.as_mut() {
        p.push(&outs, &stats);
        eprintln!("{}", p.summary());
    }
    let elapsed = started.elapsed();
    // The programs are detached (finish): the results go out before the
    // rest of the object is closed.
    if !signals::is_output_closed() {
        flush_results(outs, &mut sink, &printed)?;
    }
    mark("results written");
    if held.is_some() {
        // Only a -c query has process tracking, whose perf events are slow to close.
        ebq::runtime::teardown::hand_off();
    }
    drop(query);
    drop(stats_on);
    mark("object closed");
    // The sinks' last writes (a Parquet footer, Kafka's flush) and the close count too.
    stats.user_cpu_ns += ebq::runtime::process_cpu_ns().saturating_sub(cpu_at_stats);
    print_stats(args, &prepared, &stats, sink.as_ref(), printed.get());
    if args.analyze {
        print_analyze(&prepared, &stats, &programs, elapsed, started.elapsed());
    }
    mark("stats printed");
    if let Some(mut h) = held {
        // Interrupted: the child got the same terminal signal; wait for it.
        let code = child_status.unwrap_or_else(|| h.wait());
        return Ok(ExitCode::from(code as u8));
    }
    Ok(ExitCode::SUCCESS)
}

/// `--analyze`: the per-program report (rates over `elapsed`, ebq's CPU as a
/// share of `to_exit`), and where the objects came from.
fn print_analyze(
    prepared: &ebq::PreparedQuery,
    stats: &ebq::QueryStats,
    programs: &[ebq::runtime::ProgramStats],
    elapsed: Duration,
    to_exit: Duration,
) {
    print!("{}", crate::analyze::render(prepared, stats, programs, elapsed, to_exit));
    let (cached, compiled) = ebq::runtime::object_cache::counts();
    println!("objects: {cached} from the cache, {compiled} compiled by clang");
}

/// A cgroup's id and level (`--cgroup`).
type Cgroup = (u64, u32);

/// What the scope is made of before the query starts: `--cgroup`'s id and
/// level, and `-c`'s child, forked and held until the query runs.
fn cgroup_and_child(args: &RunArgs) -> Result<(Option<Cgroup>, Option<crate::child::Held>), String> {
    let cgroup = match &args.cgroup {
        Some(path) => Some(ebq::host::cgroups::cgroup_of(path).map_err(|e| format!("error: --cgroup: {e}"))?),
        None => None,
    };
    let held = match &args.command {
        Some(cmd) => Some(spawn_held(cmd).map_err(|e| format!("error: cannot run `{cmd}`: {e}"))?),
        None => None,
    };
    mark("child forked, held");
    Ok((cgroup, held))
}

/// Lets `-c`'s held child run (its exit wakes the poll loop).
fn release(held: Option<&mut crate::child::Held>) {
    if let Some(h) = held {
        signals::wake_on_child_exit();
        h.release();
        mark("child released");
    }
}

/// Starts the companion, if any (with the same scope, before the child
/// runs), and the query (from its bundle's object, if any), with its limits and pins.
fn start_query(
    args: &RunArgs,
    engine: &ebq::Engine,
    prepared: &ebq::PreparedQuery,
    bundle: Option<&ebq::bundle::Bundle>,
    scope: Scope,
    sql: &str,
) -> Result<(RunningQuery, Option<Box<dyn Companion>>), String> {
    let companion = args.hook.as_ref().map(|h| h.start(args, engine, &scope)).transpose()?;
    let mut query = match bundle {
        Some(b) => RunningQuery::start_object(&prepared.physical, &b.object, scope),
        None => RunningQuery::start(prepared, scope),
    }
    .map_err(|e| e.render(sql))?;
    mark("query started");
    query.set_max_sorted_rows(args.max_sorted_rows);
    query.set_max_pair_age(std::time::Duration::from_secs_f64(args.max_pair_age));
    if let Some(dir) = &args.pin {
        let options =
            ebq::runtime::PinOptions { dir: dir.clone(), header: args.pin_header.clone(), keep: args.keep_pins };
        let header = query.pin_maps(&options).map_err(|e| e.render(sql))?;
        eprintln!("ebq: pinned the maps under {} (layout: {})", dir.display(), header.display());
    }
    Ok((query, companion))
}

/// The final results out, then the sink finished (its writer thread may
/// meet a closed pipe only now: that ends the output quietly).
fn flush_results(outs: Vec<Output>, sink: &mut Box<dyn Sink>, printed: &std::cell::Cell<u64>) -> Result<(), String> {
    write_outputs(outs, sink, printed)?;
    match sink.finish() {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => signals::output_closed(),
        r => r.map_err(|e| format!("error: finishing the results: {e}"))?,
    }
    Ok(())
}

/// The checks of `args` that need no kernel: -c with -p, durations, the
/// pid, and --pin's companions.
fn check_args(args: &RunArgs) -> Result<(), String> {
    if args.command.is_some() && args.pid.is_some() {
        return Err("error: -c and -p cannot be combined".into());
    }
    for (name, v) in [("--duration", args.duration), ("--interval", args.interval)] {
        if v.is_some_and(|s| !(s > 0.0 && s < 1e9)) {
            return Err(format!("error: {name} must be a positive number of seconds"));
        }
    }
    if let Some(pid) = args.pid {
        if !process_alive(pid) {
            return Err(format!("error: no process with pid {pid}"));
        }
    }
    if args.pin.is_none() && (args.keep_pins || args.pin_header.is_some()) {
        return Err("error: --keep-pins and --pin-header need --pin DIR".into());
    }
    Ok(())
}

/// Whom the query traces: a cgroup, everything, the held child's tree, or one process.
fn scope_of(args: &RunArgs, held: Option<&crate::child::Held>, cgroup: Option<(u64, u32)>) -> Scope {
    match (held, args.pid) {
        _ if cgroup.is_some() => {
            let (id, level) = cgroup.expect("checked");
            Scope::Cgroup { id, level }
        }
        (_, _) if args.system_wide => Scope::All,
        (Some(h), _) => Scope::Tracked(vec![h.id()]),
        (None, Some(pid)) => Scope::Process(pid),
        (None, None) => Scope::All,
    }
}

/// The "ebq: tracing" line (what, in whom), the branches with -v, notes on
/// what the kernel cannot do, and the companion's lines.
fn announce(
    args: &RunArgs,
    held: Option<&crate::child::Held>,
    prepared: &ebq::PreparedQuery,
    companion: Option<&dyn Companion>,
) {
    let who = match (held, args.pid, args.system_wide) {
        _ if args.cgroup.is_some() => format!("cgroup {}", args.cgroup.as_deref().unwrap_or("")),
        (_, _, true) | (None, None, _) => "all processes".to_string(),
        (Some(h), _, _) => format!("`{}` (pid {}) and its descendants", args.command.as_deref().unwrap_or(""), h.id()),
        (None, Some(p), _) => format!("process {p}"),
    };
    let (events, branches) = traced(&prepared.physical);
    let listed = if branches.is_empty() || args.verbose { "" } else { "; -v lists them" };
    eprintln!("ebq: tracing {events} in {who}{listed}; Ctrl-C to stop");
    if args.verbose {
        for b in &branches {
            eprintln!("ebq:   {b}");
        }
    }
    for note in prepared.physical.programs.iter().flat_map(|k| &k.unsupported) {
        eprintln!("ebq: note: {note}");
    }
    for line in companion.map(|c| c.announce()).unwrap_or_default() {
        eprintln!("{line}");
    }
}

/// Hands `outs` to the sink, counting the rows; a closed pipe (`| head`)
/// stops the run quietly instead of failing it.
fn write_outputs(outs: Vec<Output>, sink: &mut Box<dyn Sink>, printed: &std::cell::Cell<u64>) -> Result<(), String> {
    for o in outs {
        printed.set(printed.get() + o.batch.num_rows() as u64);
        if let Err(e) = sink.write(&o) {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                signals::output_closed();
                return Ok(());
            }
            return Err(format!("error: writing results: {e}"));
        }
    }
    Ok(())
}

/// What the poll loop reads of the run.
struct Polling<'a> {
    args: &'a RunArgs,
    sql: &'a str,
    /// An aggregate without WINDOW: `--interval` prints its snapshots.
    windowless_aggregate: bool,
    /// An aggregate query (it releases its start-up pages once running).
    aggregate: bool,
    started: Instant,
    deadline: Option<Instant>,
    interval: Option<Duration>,
    /// `ebq bench stages` at commit: nothing reads the rows.
    unread: bool,
    printed: &'a std::cell::Cell<u64>,
}

impl Polling<'_> {
    /// Polls until Ctrl-C, the command's exit (its status returned), the
    /// traced process's end, the query's end or LIMIT, or the deadline;
    /// writes each window and --interval snapshot as it comes.
    fn run(
        &self,
        query: &mut RunningQuery,
        held: &mut Option<crate::child::Held>,
        companion: &mut Option<Box<dyn Companion>>,
        otlp: &mut Option<crate::otlp::Pusher>,
        sink: &mut Box<dyn Sink>,
    ) -> Result<Option<i32>, String> {
        let mut next_snapshot = self.interval.map(|i| self.started + i);
        let mut startup_pages_released = false;
        loop {
            if signals::stopping() {
                break;
            }
            if let Some(h) = held.as_mut() {
                if let Some(status) = h.try_wait() {
                    return Ok(Some(status));
                }
            }
            if self.args.pid.is_some_and(|p| !process_alive(p)) {
                break;
            }
            let now = Instant::now();
            if query.is_finished()
                || query.limit_reached()
                || self.deadline.is_some_and(|d| now >= d + Duration::from_millis(200))
            {
                break;
            }
            let wait = companion.as_ref().and_then(|c| c.poll_wait()).unwrap_or(Duration::from_millis(100));
            if self.unread {
                std::thread::sleep(wait);
                continue;
            }
            let outs = query.poll(wait).map_err(|e| e.render(self.sql))?;
            if let Some(c) = companion.as_mut() {
                c.poll()?;
            }
            if let Some(p) = otlp.as_mut().filter(|_| !outs.is_empty()) {
                p.push(&outs, &query.stats().map_err(|e| e.render(self.sql))?);
            }
            write_outputs(outs, sink, self.printed)?;
            // An aggregate that runs on keeps only what running needs (a one-shot never gets
            // here). Not a row stream: its batches soon reuse the freed heap, and trimming it
            // only made its RSS climb back over the soak's first minute.
            if self.aggregate && !startup_pages_released && self.started.elapsed() >= RELEASE_STARTUP_PAGES_AFTER {
                ebq::runtime::footprint::release_startup_pages();
                startup_pages_released = true;
            }
            if let (Some(at), Some(i)) = (next_snapshot, self.interval) {
                // Past the deadline the final window is out (or on its way): a
                // snapshot then would print an empty table after it.
                let now = Instant::now();
                if self.windowless_aggregate && now >= at && self.deadline.is_none_or(|d| now < d) {
                    let snapshot = query.snapshot().map_err(|e| e.render(self.sql))?;
                    if let Some(p) = otlp.as_mut() {
                        p.push(std::slice::from_ref(&snapshot), &query.stats().map_err(|e| e.render(self.sql))?);
                    }
                    write_outputs(vec![snapshot], sink, self.printed)?;
                    next_snapshot = Some(at + i);
                }
            }
        }
        Ok(None)
    }
}

/// The stats line (seen, matched, delivered, dropped, missed, and what JOINs,
/// stream joins, LIMIT and process tracking add), each sink's counts,
/// unmatched ends, and what the scope leaves out by design.
fn print_stats(args: &RunArgs, prepared: &ebq::PreparedQuery, stats: &ebq::QueryStats, sink: &dyn Sink, printed: u64) {
    let delivered = if matches!(prepared.physical.programs[0].output, ebq::plan::KernelOutput::Rows { .. }) {
        format!(", {} delivered", stats.delivered)
    } else {
        String::new()
    };
    let pairs = if prepared.physical.programs[0].pairing.is_some() {
        format!(
            "; JOIN: {} start events missed, {} pairs left open (end never seen), \
             {} superseded (a new start on their key before their end), {} pairs lost (pairing map full), \
             {} evicted (older than --max-pair-age)",
            stats.missed_starts, stats.open_pairs, stats.superseded, stats.pending_full, stats.evicted
        )
    } else {
        String::new()
    };
    let late = if prepared.physical.window_join().is_some() {
        format!("; join: {} rows late (after their window was joined)", stats.late)
    } else {
        String::new()
    };
    // A row query stops at its LIMIT: what was matched and delivered before it stopped is not all shown.
    let limited = match (&prepared.physical.programs[0].output, prepared.physical.user.limit) {
        (ebq::plan::KernelOutput::Rows { .. }, Some(limit)) => {
            format!("; {} rows printed (LIMIT {limit})", printed)
        }
        _ => String::new(),
    };
    let mut untracked = if stats.untracked > 0 {
        format!("; {} child processes untracked (--max-tracked full)", stats.untracked)
    } else {
        String::new()
    };
    if stats.missed_tracking > 0 {
        untracked += &format!("; {} fork/exit events missed (children may be untracked)", stats.missed_tracking);
    }
    let unreadable = unreadable_strings(stats.unreadable_strings);
    eprintln!(
        "ebq: {} events seen, {} matched{delivered}, {} dropped, {} missed{pairs}{late}{untracked}{unreadable}{limited}",
        stats.seen, stats.matched, stats.dropped, stats.missed
    );
    // Several --sinks (or a Kafka one): what each wrote, and what its full queue dropped.
    for (name, c) in sink.counts() {
        eprintln!("{}", sink_line(&name, &c));
    }
    // Ends with no start are not losses: the stats line above holds only losses.
    if prepared.physical.programs[0].pairing.is_some() && stats.unmatched > 0 {
        eprintln!("{}", unmatched_line(stats.unmatched));
    }
    if stats.middle_unmatched > 0 {
        eprintln!(
            "ebq: JOIN: {} middle events had no open pair on their key (ignored): not losses",
            stats.middle_unmatched
        );
    }
    // Block completions, interrupts, flusher work: events a process scope leaves out by design.
    let scoped = match (&args.cgroup, args.system_wide, &args.command, args.pid) {
        (Some(cg), _, _, _) => Some(format!("cgroup {cg}")),
        (None, true, _, _) => None,
        (None, false, Some(_), _) => Some("the -c command's processes".to_string()),
        (None, false, None, Some(p)) => Some(format!("process {p}")),
        (None, false, None, None) => None,
    };
    if let Some(note) = scoped.and_then(|who| ebq::runtime::scope_note(stats, &prepared.physical, &who)) {
        eprintln!("{note}");
    }
}

/// The stats line's part for strings read through a pointer that could not
/// be read (empty when none): user strings, `argv`, a kernel `char *`. Their
/// rows say NULL, and this says why and what reads file names.
fn unreadable_strings(n: u64) -> String {
    match n {
        0 => String::new(),
        n => format!(
            "; {n} strings could not be read, shown as NULL (a user page not resident at entry, a bad or NULL \
             pointer; str_at_exit(filename) or the JOIN form reads names at the exit, see docs: Strings in user memory)"
        ),
    }
}

/// What the "ebq: tracing" line names, and each UNION ALL branch for `-v`.
/// Up to [`TRACED_WIDTH`] characters the events themselves; beyond (io.ops
/// unions a dozen JOINs: 1,300 characters) their number and the branches'.
fn traced(physical: &ebq::plan::PhysicalPlan) -> (String, Vec<String>) {
    let k = &physical.programs[0];
    let full = match physical.programs.get(1) {
        Some(second) => format!("{} joined with {}", k.events_description(), second.events_description()),
        None => k.events_description(),
    };
    let branches: Vec<String> = physical
        .programs
        .iter()
        .flat_map(|p| p.with_branches())
        .map(|b| match &b.pairing {
            Some(p) => format!("{} JOIN {}", p.start_description(), b.event.event_description()),
            None => b.event.event_description(),
        })
        .collect();
    if full.chars().count() <= TRACED_WIDTH {
        return (full, vec![]);
    }
    let mut events: Vec<&str> = branches.iter().flat_map(|b| b.split(" JOIN ")).collect();
    events.sort_unstable();
    events.dedup();
    let short = format!("{} events ({} UNION ALL branches)", events.len(), branches.len());
    (short, branches)
}

/// How long a query runs before ebq gives back the memory only its startup
/// used ([`ebq::runtime::footprint`]).
const RELEASE_STARTUP_PAGES_AFTER: Duration = Duration::from_secs(1);

/// The longest list of events the "ebq: tracing" line spells out.
const TRACED_WIDTH: usize = 160;

/// The line after a JOIN's stats line for end events that had no start:
/// other processes' ends, ends of starts before ebq attached, or of starts
/// the start's WHERE left out. Expected, so not on the line of losses.
fn unmatched_line(unmatched: u64) -> String {
    format!(
        "ebq: JOIN: {unmatched} end events had no start (their start came before ebq attached, was another \
         process's, or failed the start's WHERE): not losses"
    )
}

/// A sink's line of the stats: rows written and dropped, and for a Kafka or
/// OTLP sink what became of the written rows (delivered + failed + queued =
/// written) and how many requests were sent again.
fn sink_line(name: &str, c: &ebq::sink::QueueCounts) -> String {
    match c.delivery {
        None => format!("ebq: sink {name}: {} rows written, {} dropped (its queue was full)", c.written, c.dropped),
        Some(d) => format!(
            "ebq: sink {name}: {} rows written, {} dropped (a queue was full); {} delivered, {} failed, \
             {} still queued at exit (lost){}",
            c.written,
            c.dropped,
            d.delivered,
            d.failed,
            d.queued,
            if d.retries > 0 { format!("; {} requests retried", d.retries) } else { String::new() }
        ),
    }
}

/// Why `--interval` does not apply: it snapshots the running totals of an
/// aggregate that has no windows of its own, and any other query already
/// prints as it goes (silently ignoring the flag left users waiting for it).
fn interval_refused(windowed: bool) -> &'static str {
    if windowed {
        "error: --interval prints the running totals of a query without WINDOW; this query's WINDOW already prints each window as it closes\n  help: drop --interval, or drop WINDOW to get running totals every --interval"
    } else {
        "error: --interval prints the running totals of an aggregate; a query without aggregates prints each row as it happens\n  help: drop --interval"
    }
}

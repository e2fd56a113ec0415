//! [`RunningQuery`]: the handle the library and the CLI drive, over one BPF
//! object or, for a join of two streams, two.

use super::stream_join::JoinQuery;
use super::{Output, PinOptions, ProgramStats, QueryStats, Scope, SingleQuery};
use arrow_schema::SchemaRef;
use ebq_front::codegen::generate;
use ebq_front::error::{Error, Result, Stage};
use ebq_front::plan::PhysicalPlan;
use ebq_front::PreparedQuery;
use std::time::{Duration, Instant};

/// A loaded, attached query. Dropping it detaches everything.
pub struct RunningQuery {
    run: Run,
}

enum Run {
    Single(Box<SingleQuery>),
    Join(Box<JoinQuery>),
}

impl RunningQuery {
    /// Compiles, loads and attaches a prepared query's programs: the step
    /// from the pure front to the kernel.
    pub fn start(prepared: &PreparedQuery, scope: Scope) -> Result<RunningQuery> {
        let (plan, programs) = (&prepared.physical, &prepared.programs);
        let run = match plan.window_join() {
            None => Run::Single(Box::new(SingleQuery::start(plan, &programs[0], scope, false)?)),
            Some(join) => Run::Join(Box::new(JoinQuery::start(plan, join, programs, scope)?)),
        };
        Ok(RunningQuery { run })
    }

    /// Loads and attaches an already compiled object of `plan`'s one program.
    /// Its contract is generated again from the plan: codegen is a pure
    /// function of the plan, so it is the contract the object was built with.
    pub fn start_object(plan: &PhysicalPlan, object: &[u8], scope: Scope) -> Result<RunningQuery> {
        if plan.programs.len() != 1 {
            return Err(Error::query(
                Stage::Plan,
                "a join of two streams runs two programs and a compiled bundle holds one: run it from its SQL",
                None,
            ));
        }
        let program = generate(plan).remove(0);
        Ok(RunningQuery { run: Run::Single(Box::new(SingleQuery::start_object(plan, &program, object, scope)?)) })
    }

    /// Pins the aggregate maps under `options.dir` for external readers and
    /// writes their C header; returns the header's path. The pins go when the
    /// query is dropped unless `options.keep`. Row queries have no map to pin.
    pub fn pin_maps(&mut self, options: &PinOptions) -> Result<std::path::PathBuf> {
        match &mut self.run {
            Run::Single(q) => q.pin_maps(options),
            Run::Join(_) => Err(Error::query(
                Stage::Plan,
                "--pin needs an aggregate query: a join of two streams keeps its rows in user space",
                None,
            )),
        }
    }

    /// A kernel fold's map `name` (`PlanOptions::row_fold`): every key with
    /// its value (one per CPU for a per-CPU map); after [`Self::finish`] the
    /// final values.
    pub fn fold_map(&self, name: &str) -> Result<super::FoldEntries> {
        match &self.run {
            Run::Single(q) => q.fold_map(name),
            Run::Join(_) => {
                Err(Error::query(Stage::Plan, "a kernel fold needs a single kernel query, not a stream join", None))
            }
        }
    }

    /// The output schema.
    pub fn schema(&self) -> SchemaRef {
        match &self.run {
            Run::Single(q) => q.schema(),
            Run::Join(j) => j.schema(),
        }
    }

    /// When the query was attached; time windows are cut from here.
    pub fn started_at(&self) -> Instant {
        match &self.run {
            Run::Single(q) => q.started_at(),
            Run::Join(j) => j.started_at(),
        }
    }

    /// Ends the query at `at`: [`poll`](Self::poll) detaches and returns the
    /// final window then, so a duration that is a multiple of the window size
    /// ends exactly on a window boundary.
    pub fn set_deadline(&mut self, at: Instant) {
        match &mut self.run {
            Run::Single(q) => q.set_deadline(at),
            Run::Join(j) => j.set_deadline(at),
        }
    }

    /// JOIN … ON: open pairs older than `age` are evicted from the pairing map
    /// and counted in [`QueryStats::evicted`] (default [`super::DEFAULT_MAX_PAIR_AGE`]).
    pub fn set_max_pair_age(&mut self, age: Duration) {
        if let Run::Single(q) = &mut self.run {
            q.set_max_pair_age(age);
        }
    }

    /// Most rows held at once by a row query with ORDER BY and no LIMIT, or
    /// by a join of two streams in its open windows (default
    /// [`super::DEFAULT_MAX_SORTED_ROWS`]); one more makes `poll` fail.
    pub fn set_max_sorted_rows(&mut self, n: usize) {
        match &mut self.run {
            Run::Single(q) => q.set_max_sorted_rows(n),
            Run::Join(j) => j.set_max_held_rows(n),
        }
    }

    /// Rows held right now (bounded: see [`Self::set_max_sorted_rows`]).
    pub fn held_rows(&self) -> usize {
        match &self.run {
            Run::Single(q) => q.held_rows(),
            Run::Join(j) => j.held_rows(),
        }
    }

    /// True once the query has detached and returned its final results.
    pub fn is_finished(&self) -> bool {
        match &self.run {
            Run::Single(q) => q.is_finished(),
            Run::Join(j) => j.is_finished(),
        }
    }

    /// Adds a process to a `Scope::Tracked` query.
    pub fn track_pid(&self, tgid: u32) -> Result<()> {
        match &self.run {
            Run::Single(q) => q.track_pid(tgid),
            Run::Join(j) => j.track_pid(tgid),
        }
    }

    /// Waits up to `max_wait` and returns what completed meanwhile: closed
    /// windows, or streamed rows.
    pub fn poll(&mut self, max_wait: Duration) -> Result<Vec<Output>> {
        match &mut self.run {
            Run::Single(q) => q.poll(max_wait),
            Run::Join(j) => j.poll(max_wait),
        }
    }

    /// The current results of a query without windows, not cleared (for `--interval`).
    pub fn snapshot(&self) -> Result<Output> {
        match &self.run {
            Run::Single(q) => q.snapshot(),
            Run::Join(_) => {
                Err(Error::query(Stage::Plan, "a join of two streams returns closed windows only; no snapshot", None))
            }
        }
    }

    /// Detaches, then returns everything not yet returned: the last (partial)
    /// window, or the remaining rows. Detaching first makes the totals exact.
    pub fn finish(&mut self) -> Result<Vec<Output>> {
        match &mut self.run {
            Run::Single(q) => q.finish(),
            Run::Join(j) => j.finish(),
        }
    }

    /// Event accounting so far (a join adds up both streams).
    pub fn stats(&self) -> Result<QueryStats> {
        match &self.run {
            Run::Single(q) => q.stats(),
            Run::Join(j) => j.stats(),
        }
    }

    /// Run count and time of each of the query's programs (zero unless
    /// BPF statistics are on: see [`super::enable_bpf_stats`]).
    pub fn program_stats(&self) -> Vec<ProgramStats> {
        match &self.run {
            Run::Single(q) => q.program_stats(),
            Run::Join(j) => j.program_stats(),
        }
    }

    /// True when a row query without ORDER BY has produced its LIMIT rows:
    /// the caller can stop early. (A join's LIMIT is per window.)
    pub fn limit_reached(&self) -> bool {
        match &self.run {
            Run::Single(q) => q.limit_reached(),
            Run::Join(_) => false,
        }
    }
}

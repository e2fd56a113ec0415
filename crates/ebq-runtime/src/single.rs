//! [`SingleQuery`]: one kernel program driven through a [`KernelObject`]:
//! time windows flipped, count windows drained, rows streamed, the final
//! results read after detaching, the accounting merged across CPUs.
//!
//! Everything here is logic over the object's seam; what needs libbpf is
//! [`LibbpfObject`], so the unit tests (`single::tests`) drive this file
//! over a fake object.

use super::libbpf_object::LibbpfObject;
use super::object::{KernelObject, RecordSink};
use super::pair_age::PairAges;
use super::pin::{self, PinOptions, Pins};
use super::stacks::Stacks;
use super::{attach, compile, env, monotonic_ns, schema, selfstats, Output, ProgramStats, QueryStats, Scope};
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use ebq_exec::group_rows::Group;
use ebq_exec::read_groups::{GroupMaps, WindowGroup};
use ebq_exec::row_columns::RowColumns;
use ebq_exec::{decode, sorted, user, window, Value, WindowBounds};
use ebq_front::codegen::{AttachPoint, MapRole, Program, StatsField};
use ebq_front::error::{Error, Result};
use ebq_front::plan::{KernelOutput, KernelWindow, PhysicalPlan};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// One kernel program's query: its object, and the window, row and
/// accounting state user space keeps for it (a join of two streams has two).
pub(super) struct SingleQuery {
    pub(super) rows: Option<RowReader>,
    pub(super) plan: PhysicalPlan,
    /// The object's contract: its programs and maps.
    program: Program,
    schema: SchemaRef,
    /// The kernel window being filled (time windows) or the next count
    /// window to emit.
    window: u64,
    window_start_ns: u64,
    next_flip: Option<Instant>,
    /// The last panes of a sliding window (kernel windows of one step each).
    panes: window::SlidingPanes,
    started_at: Instant,
    cpu_at_start: u64,
    deadline: Option<Instant>,
    pub(super) finished: bool,
    /// Pinned maps (`--pin`), removed on drop unless kept.
    pins: Option<Pins>,
    /// JOIN: when the pairing map is swept for orphans next, and what was evicted.
    /// One per pairing map, in the contract's order.
    pair_ages: Vec<PairAges>,
    /// Names late: the names read from `ebq_names` so far (by kind and identity).
    names: RefCell<ebq_exec::read_groups::NameCache>,
    /// Last, so it is dropped (detached) after everything reading it.
    pub(super) object: Box<dyn KernelObject>,
}

/// A row query's records on their way out.
pub(super) struct RowReader {
    /// Filled by the ring buffer's sink.
    pub(super) buffer: Rc<RefCell<RowBuffer>>,
    pub(super) delivered: u64,
    /// Rows handed out so far (LIMIT counts these).
    emitted: u64,
    /// With ORDER BY rows are kept until the end, bounded (see `sorted`).
    sorted: sorted::SortedRows,
    /// Most rows an ORDER BY without LIMIT may hold.
    max_sorted: usize,
}

/// Where the ring-buffer sink puts records: straight into Arrow builders,
/// or (for ORDER BY, which sorts values) as rows of values.
pub(super) enum RowBuffer {
    Columns(RowColumns),
    Values(Vec<Vec<Value>>),
}

impl SingleQuery {
    /// Compiles `program` (the one program of `plan`), loads and attaches it.
    pub fn start(plan: &PhysicalPlan, program: &Program, scope: Scope, rows_as_values: bool) -> Result<SingleQuery> {
        env::check_privileges()?;
        attach::check_available(&plan.programs[0].event)?;
        let object = compile(&program.source)?;
        super::startup_trace::mark("object (cache or clang)");
        Self::load_and_attach(plan, program, &object, scope, rows_as_values)
    }

    /// Loads and attaches an already compiled object, built from `program`.
    pub fn start_object(plan: &PhysicalPlan, program: &Program, object: &[u8], scope: Scope) -> Result<SingleQuery> {
        attach::check_available(&plan.programs[0].event)?;
        Self::load_and_attach(plan, program, object, scope, false)
    }

    fn load_and_attach(
        plan: &PhysicalPlan,
        program: &Program,
        object: &[u8],
        scope: Scope,
        rows_as_values: bool,
    ) -> Result<SingleQuery> {
        SingleQuery::new(plan, program, rows_as_values, |sink| {
            Ok(Box::new(LibbpfObject::load_and_attach(object, program, &scope, sink)?))
        })
    }

    /// Drives the object `open` loads and attaches; `open` gets where the
    /// ring-buffer records go when the plan streams rows. `rows_as_values`:
    /// decode rows to values for user-space operators (a stream join)
    /// instead of straight into Arrow columns.
    pub(super) fn new(
        plan: &PhysicalPlan,
        program: &Program,
        rows_as_values: bool,
        open: impl FnOnce(Option<RecordSink>) -> Result<Box<dyn KernelObject>>,
    ) -> Result<SingleQuery> {
        let (rows, sink) = match &plan.programs[0].output {
            KernelOutput::Rows { record, fold: None, .. } => {
                let columns = RowColumns::new(plan, record, schema(plan)).filter(|_| !rows_as_values);
                let buffer = Rc::new(RefCell::new(match columns {
                    Some(columns) => RowBuffer::Columns(columns),
                    None => RowBuffer::Values(vec![]),
                }));
                let into = buffer.clone();
                let (plan_c, record_c) = (plan.clone(), record.clone());
                let sink: RecordSink = Box::new(move |bytes: &[u8]| {
                    if bytes.len() >= record_c.size as usize {
                        match &mut *into.borrow_mut() {
                            RowBuffer::Columns(columns) => columns.append(bytes),
                            RowBuffer::Values(rows) => rows.push(decode::record_inputs(&plan_c, &record_c, bytes)),
                        }
                    }
                });
                let reader = RowReader {
                    buffer,
                    delivered: 0,
                    emitted: 0,
                    sorted: Default::default(),
                    max_sorted: sorted::DEFAULT_MAX_SORTED_ROWS,
                };
                (Some(reader), Some(sink))
            }
            // A kernel fold's rows stay in the kernel: its maps are read with `fold_map`.
            KernelOutput::Aggregate { .. } | KernelOutput::Rows { fold: Some(_), .. } => (None, None),
        };
        let object = open(sink)?;
        // The first window's start and the instant deadlines and flips count
        // from, read together (the monotonic clock first, so a deadline never
        // falls short of it): read at the struct's field, after the plan's and
        // program's clones, it came up to 6 ms late on a loaded machine, and a
        // `--duration 0.3` window lasted 0.294 s.
        let window_start_ns = monotonic_ns();
        let started_at = Instant::now();
        let next_flip = match plan.programs[0].window {
            KernelWindow::Time { size_ms } => Some(started_at + Duration::from_millis(size_ms)),
            _ => None,
        };
        Ok(SingleQuery {
            rows,
            schema: schema(plan),
            plan: plan.clone(),
            program: program.clone(),
            window: 0,
            window_start_ns,
            next_flip,
            panes: Default::default(),
            started_at,
            cpu_at_start: selfstats::process_cpu_ns(),
            deadline: None,
            finished: false,
            pins: None,
            // Per-thread pairs go with their thread: only HASH pairings are swept.
            pair_ages: plan.programs[0].pairings().filter(|p| !p.per_thread).map(|p| PairAges::new(&p.stash)).collect(),
            names: Default::default(),
            object,
        })
    }

    /// Pins the aggregate maps under `options.dir` for external readers and
    /// writes their C header; returns the header's path. The pins go when the
    /// query is dropped unless `options.keep`. Row queries have no map to pin.
    pub fn pin_maps(&mut self, options: &PinOptions) -> Result<std::path::PathBuf> {
        let dir = options.dir.to_string_lossy().into_owned();
        let header = ebq_front::codegen::pin_header(&self.plan, &dir).ok_or_else(|| {
            Error::query(
                ebq_front::error::Stage::Plan,
                "--pin needs an aggregate query: a row query streams through a ring buffer and has no map to pin",
                None,
            )
        })?;
        if self.pins.is_some() {
            return Err(Error::Io { what: "pin the maps".into(), source: std::io::Error::other("already pinned") });
        }
        if let KernelOutput::Aggregate { late_names: Some(_), .. } = &self.plan.programs[0].output {
            // Its key holds names' identities, which only ebq turns back into names.
            return Err(Error::query(
                ebq_front::error::Stage::Plan,
                "a pinned group map must hold the names themselves: plan the query with \
                 PlanOptions::late_names = false (the CLI does for --pin)",
                None,
            ));
        }
        let mut pins = pin::create_dir(options)?;
        let maps = [
            (ebq_front::codegen::pin_names::GROUPS, MapRole::Groups),
            (ebq_front::codegen::pin_names::STATS, MapRole::Stats),
            (ebq_front::codegen::pin_names::SKETCH, MapRole::Sketch),
        ];
        for (name, role) in maps {
            let path = options.dir.join(name);
            if self.object.pin(role, &path)? {
                pins.pinned(path);
            }
        }
        let header_path = options.header_path();
        pins.write_header(&header_path, &header)?;
        self.pins = Some(pins);
        Ok(header_path)
    }

    /// The output schema.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// When the query was attached; time windows are cut from here.
    pub fn started_at(&self) -> Instant {
        self.started_at
    }

    /// Ends the query at `at`: [`poll`](Self::poll) detaches and returns the
    /// final window then, so a duration that is a multiple of the window size
    /// ends exactly on a window boundary.
    pub fn set_deadline(&mut self, at: Instant) {
        self.deadline = Some(at);
    }

    /// Row queries with ORDER BY and no LIMIT: most rows held until the end
    /// (default [`DEFAULT_MAX_SORTED_ROWS`]); one more makes `poll` fail.
    pub fn set_max_sorted_rows(&mut self, n: usize) {
        if let Some(r) = &mut self.rows {
            r.max_sorted = n;
        }
    }

    /// JOIN: open pairs older than `age` are evicted (default [`super::DEFAULT_MAX_PAIR_AGE`]).
    pub fn set_max_pair_age(&mut self, age: Duration) {
        for p in &mut self.pair_ages {
            p.set_max_age(age);
        }
    }

    /// Rows an ORDER BY row query holds right now (bounded: see [`Self::set_max_sorted_rows`]).
    pub fn held_rows(&self) -> usize {
        self.rows.as_ref().map_or(0, |r| r.sorted.held())
    }

    /// True once the query has detached and returned its final results.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Adds a process to a `Scope::Tracked` query.
    pub fn track_pid(&self, tgid: u32) -> Result<()> {
        self.object.track_pid(tgid)
    }

    /// Waits up to `max_wait` and returns what completed meanwhile: closed
    /// windows, or streamed rows.
    pub fn poll(&mut self, max_wait: Duration) -> Result<Vec<Output>> {
        if self.finished {
            return Ok(vec![]);
        }
        for (ages, map) in self.pair_ages.iter_mut().zip(self.object.pending()) {
            ages.sweep_if_due(map)?;
        }
        if let Some(end) = self.deadline {
            let now = Instant::now();
            if now >= end {
                return self.finish();
            }
            // A flip that coincides with the end is the end: detach instead.
            let flip_first = self.next_flip.is_some_and(|f| f + Duration::from_millis(1) < end);
            if !flip_first && self.rows.is_none() && end - now <= max_wait {
                super::nap(end - now);
                // Woken early by a signal: the caller decides whether to stop.
                if Instant::now() < end {
                    return Ok(vec![]);
                }
                return self.finish();
            }
        }
        if self.rows.is_some() {
            self.object.poll_ring(max_wait.min(Duration::from_millis(50)))?;
            return self.take_rows(false);
        }
        // User stacks resolve against their process's mappings: read them while it lives.
        if let (Some(st), Some(groups), KernelOutput::Aggregate { key, .. }) =
            (self.object.stacks(), self.object.groups(), &self.plan.programs[0].output)
        {
            st.prefetch(key, groups.all_keys().into_iter());
        }
        match self.plan.programs[0].window {
            KernelWindow::Time { size_ms } => {
                let flip_at = self.next_flip.expect("time windows have a flip time");
                let now = Instant::now();
                if now < flip_at {
                    super::nap(max_wait.min(flip_at - now));
                }
                if Instant::now() < flip_at {
                    return Ok(vec![]);
                }
                self.next_flip = Some(flip_at + Duration::from_millis(size_ms));
                Ok(vec![self.flip_time_window()?])
            }
            KernelWindow::Count { n } => {
                super::nap(max_wait.min(Duration::from_millis(50)));
                let seq = self.object.sequence()?;
                self.drain_count_windows(seq / n, n)
            }
            KernelWindow::None => {
                super::nap(max_wait);
                Ok(vec![])
            }
        }
    }

    /// The current results of a query without windows, not cleared (for `--interval`).
    pub fn snapshot(&self) -> Result<Output> {
        let groups = self.collect_groups(|_| true, false)?;
        let rows = self.group_rows(groups.into_iter().map(|(_, k, m)| (k, m)));
        let (batch, extras) = self.window_batch(rows);
        Ok(Output {
            window: WindowBounds::Time { start_ns: self.window_start_ns, end_ns: monotonic_ns() },
            batch,
            partial: true,
            extras,
        })
    }

    /// Detaches, then returns everything not yet returned: the last (partial)
    /// window, or the remaining rows. Detaching first makes the totals exact.
    pub fn finish(&mut self) -> Result<Vec<Output>> {
        if self.finished {
            return Ok(vec![]);
        }
        self.finished = true;
        // The window ends when detaching starts; detaching itself waits for an
        // RCU grace period (tens of ms) during which late events still count.
        let end_ns = monotonic_ns();
        self.object.detach();
        super::startup_trace::mark("detached");
        self.object.wait_for_inflight_programs();
        super::startup_trace::mark("in-flight programs done (membarrier)");
        if self.rows.is_some() {
            self.object.consume_ring()?;
            return self.take_rows(true);
        }
        match self.plan.programs[0].window {
            KernelWindow::Count { n } => self.drain_count_windows(u64::MAX, n),
            _ => {
                let groups = self.collect_groups(|_| true, true)?;
                let start_ns = self.window_start_ns;
                Ok(vec![self.close_pane(
                    WindowBounds::Time { start_ns, end_ns },
                    groups.into_iter().map(|(_, k, m)| (k, m)).collect(),
                )])
            }
        }
    }

    /// A kernel fold's map `name` (`plan::row_fold`): every key with its
    /// value (one per CPU for a per-CPU map). Read it after `finish`, when
    /// the programs are detached, for final values.
    pub fn fold_map(&self, name: &str) -> Result<super::FoldEntries> {
        self.object.fold_map(name)
    }

    /// Event accounting so far.
    pub fn stats(&self) -> Result<QueryStats> {
        let per_cpu = self.object.stats_per_cpu()?;
        let mut s = QueryStats::default();
        // Per-thread pairs opened minus closed: a CPU's share may be "negative", only the sum means anything.
        let mut thread_pairs = 0u64;
        for v in per_cpu {
            for f in StatsField::ALL {
                let n = self.program.stats.read(&v, f);
                *match f {
                    StatsField::Seen => &mut s.seen,
                    StatsField::Matched => &mut s.matched,
                    StatsField::Dropped => &mut s.dropped,
                    StatsField::Unmatched => &mut s.unmatched,
                    StatsField::PendingFull => &mut s.pending_full,
                    StatsField::Untracked => &mut s.untracked,
                    StatsField::Superseded => &mut s.superseded,
                    StatsField::OutOfScope => &mut s.out_of_scope,
                    StatsField::UnreadableStrings => &mut s.unreadable_strings,
                    StatsField::MiddleUnmatched => &mut s.middle_unmatched,
                    StatsField::ThreadPairs => {
                        thread_pairs = thread_pairs.wrapping_add(n);
                        continue;
                    }
                } += n;
            }
        }
        s.delivered = self.rows.as_ref().map_or(s.matched - s.dropped.min(s.matched), |r| r.delivered);
        for p in self.program_stats() {
            let Some(info) = self.program.progs.iter().find(|i| i.name == p.name) else { continue };
            match info.attach {
                // A union's branches are each a query program: their runs and misses add up.
                AttachPoint::Query(_) => {
                    s.bpf_run_cnt += p.run_cnt;
                    s.bpf_run_time_ns += p.run_time_ns;
                    s.missed += p.recursion_misses;
                }
                // A fault count missed leaves the thread's last one standing: the start of a pair, in effect.
                AttachPoint::PairStart(_) | AttachPoint::FaultCount(_) => s.missed_starts += p.recursion_misses,
                AttachPoint::ProcessTracking(_) => s.missed_tracking += p.recursion_misses,
            }
        }
        // A perf-event program skipped (another BPF program ran on the CPU, or the
        // timer interrupt came a period late) moves no counter: the periods its
        // clock ran, less the runs, are the firings the kernel owed and did not run.
        if let Some(periods) = self.object.timer_periods() {
            s.missed += periods.saturating_sub(s.seen + s.out_of_scope);
        }
        // Detached: no end can close them any more (while running, most are in flight).
        if self.finished {
            let in_maps: u64 = self.object.pending().iter().map(|p| p.pair_keys().len() as u64).sum();
            s.open_pairs = in_maps + thread_pairs;
        }
        s.evicted = self.pair_ages.iter().map(PairAges::evicted).sum();
        s.user_cpu_ns = selfstats::process_cpu_ns().saturating_sub(self.cpu_at_start);
        Ok(s)
    }

    /// Run count and time of each of the query's programs (zero unless
    /// BPF statistics are on: see [`enable_bpf_stats`]).
    pub fn program_stats(&self) -> Vec<ProgramStats> {
        self.object.program_stats()
    }

    /// Decoded rows → outputs. With ORDER BY rows are held until `last`.
    fn take_rows(&mut self, last: bool) -> Result<Vec<Output>> {
        let Some(r) = &mut self.rows else { return Ok(vec![]) };
        let rows = match &mut *r.buffer.borrow_mut() {
            RowBuffer::Columns(columns) => {
                if columns.is_empty() {
                    return Ok(vec![]);
                }
                let batch = columns.finish();
                r.delivered += batch.num_rows() as u64;
                let left = self.plan.user.limit.map_or(u64::MAX, |l| l.saturating_sub(r.emitted));
                let batch = batch.slice(0, batch.num_rows().min(usize::try_from(left).unwrap_or(usize::MAX)));
                r.emitted += batch.num_rows() as u64;
                if batch.num_rows() == 0 {
                    return Ok(vec![]);
                }
                return Ok(vec![Output { window: WindowBounds::Rows, batch, partial: false, extras: vec![] }]);
            }
            RowBuffer::Values(rows) => std::mem::take(rows),
        };
        let mut rows = rows;
        symbolize_rows(self.object.stacks(), &self.plan, &mut rows);
        r.delivered += rows.len() as u64;
        let user = &self.plan.user;
        let out_rows = if user.order_by.is_empty() {
            let left = user.limit.map_or(u64::MAX, |l| l.saturating_sub(r.emitted));
            let mut unlimited = user.clone();
            unlimited.limit = Some(left);
            user::apply(&unlimited, rows, false)
        } else {
            r.sorted.push(user, rows, r.max_sorted)?;
            if !last {
                return Ok(vec![]);
            }
            user::apply(user, r.sorted.take(), false)
        };
        r.emitted += out_rows.len() as u64;
        if out_rows.is_empty() {
            return Ok(vec![]);
        }
        Ok(vec![Output {
            window: WindowBounds::Rows,
            batch: decode::to_batch(&self.schema, &out_rows),
            partial: false,
            extras: vec![],
        }])
    }

    /// True when a row query without ORDER BY has produced its LIMIT rows:
    /// the caller can stop early.
    pub fn limit_reached(&self) -> bool {
        match (&self.rows, self.plan.user.limit) {
            (Some(r), Some(limit)) => self.plan.user.order_by.is_empty() && r.emitted >= limit,
            _ => false,
        }
    }

    /// A kernel window (pane) closed: emit it, or for a sliding window the
    /// combination of the last `window_panes` panes.
    fn close_pane(&mut self, bounds: WindowBounds, groups: Vec<Group>) -> Output {
        let (window, groups) = self.panes.close(self.plan.user.window_panes, bounds, groups);
        let rows = self.group_rows(groups);
        let (batch, extras) = self.window_batch(rows);
        Output { window, batch, partial: false, extras }
    }

    /// Applies the user plan to one window's groups: the batch, and each
    /// row's distributions (the values after its columns).
    fn window_batch(&self, inputs: Vec<Vec<Value>>) -> (RecordBatch, Vec<Vec<Value>>) {
        let mut rows = user::apply(&self.plan.user, inputs, true);
        let batch = decode::to_batch(&self.schema, &rows);
        let n = self.plan.user.columns.len();
        let extras = if self.plan.user.distributions.is_empty() {
            vec![]
        } else {
            rows.iter_mut().map(|r| r.split_off(n.min(r.len()))).collect()
        };
        (batch, extras)
    }

    fn flip_time_window(&mut self) -> Result<Output> {
        let closing = self.window;
        self.window += 1;
        self.object.set_window(self.window)?;
        let end_ns = monotonic_ns();
        self.object.wait_for_inflight_programs();
        let groups = self.collect_groups(|w| w == closing, true)?;
        let start_ns = std::mem::replace(&mut self.window_start_ns, end_ns);
        Ok(self
            .close_pane(WindowBounds::Time { start_ns, end_ns }, groups.into_iter().map(|(_, k, m)| (k, m)).collect()))
    }

    /// Emits count windows [self.window, upto) in order.
    fn drain_count_windows(&mut self, upto: u64, _n: u64) -> Result<Vec<Output>> {
        if upto <= self.window {
            return Ok(vec![]);
        }
        if !self.finished {
            self.object.wait_for_inflight_programs();
        }
        let groups = self.collect_groups(|w| w < upto, true)?;
        let (windows, next) = window::count_windows(groups, self.window, upto);
        let out =
            windows.into_iter().map(|(index, groups)| self.close_pane(WindowBounds::Count { index }, groups)).collect();
        self.window = next;
        Ok(out)
    }

    /// Reads (and with `delete`, removes) the groups whose window satisfies
    /// `pick`, merged across CPUs, sorted by window.
    fn collect_groups(&self, pick: impl Fn(u64) -> bool, delete: bool) -> Result<Vec<WindowGroup>> {
        let Some(groups) = self.object.groups() else { return Ok(vec![]) };
        // Kept pins: the final groups stay for readers after ebq exits.
        let delete = delete && !(self.finished && self.pins.as_ref().is_some_and(Pins::keep));
        let names = self.object.names().map(|m| (m, &self.names));
        let maps =
            GroupMaps { groups, single_slot: self.object.groups_is_single_slot(), sketch: self.object.sketch(), names };
        ebq_exec::read_groups::read_groups(&self.plan, &maps, pick, delete)
    }

    /// Groups → the user plan's input rows (`exec::group_rows`), stack ids symbolized.
    fn group_rows(&self, groups: impl IntoIterator<Item = Group>) -> Vec<Vec<Value>> {
        let mut rows = ebq_exec::group_rows::group_rows(&self.plan, groups);
        if let (Some(st), Some((key, _))) = (self.object.stacks(), self.plan.programs[0].output.display_key()) {
            rows.iter_mut().for_each(|row| st.symbolize_inputs(&self.plan.user.inputs, key, row));
        }
        rows
    }
}

#[cfg(test)]
mod tests;

/// Stack ids in a row query's decoded rows → their frames (runtime::stacks).
pub(super) fn symbolize_rows(stacks: Option<&Stacks>, plan: &PhysicalPlan, rows: &mut [Vec<Value>]) {
    if let (Some(st), KernelOutput::Rows { record, .. }) = (stacks, &plan.programs[0].output) {
        rows.iter_mut().for_each(|row| st.symbolize_inputs(&plan.user.inputs, record, row));
    }
}

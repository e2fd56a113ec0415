//! Runtime: compile, load, attach, and drive a query: the only stage that
//! talks to the kernel.
//!
//! A [`RunningQuery`] owns the object, its links and its ring buffer;
//! dropping it detaches everything (nothing is pinned unless asked: [`pin`]).

mod attach;
pub mod btf;
mod compile;
pub mod env;
mod load;
mod maps;
mod pair_age;
pub mod pin;
mod running;
mod selfstats;
mod stacks;
mod stream_join;

/// Decoded rows → a batch (the export module's tests build windows with it).
#[cfg(test)]
pub(crate) use crate::exec::decode::to_batch;
pub use crate::exec::{arrow_type, hist_cell, schema, Value, WindowBounds, DEFAULT_MAX_SORTED_ROWS};
pub use compile::{compile, scratch_dir};
pub use load::Scope;
pub use pair_age::DEFAULT_MAX_PAIR_AGE;
pub use pin::{PinOptions, Pins};
pub use running::RunningQuery;
pub use selfstats::{enable_bpf_stats, ProgramStats, StatsGuard};

use crate::codegen::{MapRole, Program, StatsField};
use crate::error::{Error, Result};
use crate::exec::group_rows::Group;
use crate::exec::read_groups::{GroupMaps, WindowGroup};
use crate::exec::row_columns::RowColumns;
use crate::exec::{decode, sorted, user, window};
use crate::plan::{KernelOutput, KernelWindow, PhysicalPlan};
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use libbpf_rs::{Link, MapCore, MapFlags, MapHandle, Object, RingBuffer, RingBufferBuilder};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// A batch of results.
#[derive(Debug, Clone)]
pub struct Output {
    /// What the batch covers.
    pub window: WindowBounds,
    /// The rows.
    pub batch: RecordBatch,
    /// True when this is a running snapshot of an unfinished window (`--interval`).
    pub partial: bool,
}

/// Event accounting. For aggregates `matched = aggregated + dropped`; for rows
/// `matched = delivered + dropped` once the ring buffer is drained.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueryStats {
    /// Events in scope at the probe.
    pub seen: u64,
    /// Events that passed WHERE.
    pub matched: u64,
    /// Rows received by user space (row queries).
    pub delivered: u64,
    /// Events lost: group map or ring buffer full.
    pub dropped: u64,
    /// JOIN: end events with no open pair (their start came before ebq
    /// attached, or did not pass the start-side WHERE).
    pub unmatched: u64,
    /// JOIN: start events lost because the pairing map was full (`--max-pending`);
    /// each is a pair that will never be seen.
    pub pending_full: u64,
    /// `-c`: children not traced because the process set was full (`--max-tracked`).
    pub untracked: u64,
    /// JOIN: open pairs evicted from the pairing map because their end did not
    /// come within `--max-pair-age` (e.g. `exit_group`, which never returns).
    pub evicted: u64,
    /// Times the query's main program ran (0 unless BPF statistics are on).
    pub bpf_run_cnt: u64,
    /// Nanoseconds spent in the query's main program (0 unless BPF statistics are on).
    pub bpf_run_time_ns: u64,
    /// CPU time of this process since the query started (all threads, user + system).
    pub user_cpu_ns: u64,
    /// Join of two streams: rows that arrived after their window had been
    /// joined (later than the grace period), left out of the results.
    pub late: u64,
}

/// CLOCK_MONOTONIC in ns, the clock of `bpf_ktime_get_ns`.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid timespec for clock_gettime to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Waits until every BPF program that started before this call has finished.
///
/// Tracepoint programs run inside RCU read-side sections, so an RCU grace
/// period (membarrier(MEMBARRIER_CMD_GLOBAL) runs synchronize_rcu) means no
/// program still holds the old window number.
fn wait_for_inflight_programs() {
    const MEMBARRIER_CMD_GLOBAL: libc::c_long = 1;
    // SAFETY: membarrier takes two integer arguments and no pointers.
    let rc = unsafe { libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) };
    if rc != 0 {
        // nohz_full kernels refuse it; programs run for microseconds.
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One loaded, attached BPF object: a query's programs, maps and ring
/// buffer (a join of two streams has two). Dropping it detaches everything.
struct SingleQuery {
    rows: Option<RowReader>,
    links: Vec<Link>,
    plan: PhysicalPlan,
    /// The object's contract: its programs and maps.
    program: Program,
    schema: SchemaRef,
    groups: Option<MapHandle>,
    /// Quantile sketches (`ebq_sketch`), when the query has QUANTILE/Pxx.
    sketch: Option<MapHandle>,
    /// Call stacks (`ebq_stacks`), when the query reads kstack/ustack.
    stacks: Option<stacks::Stacks>,
    stats_map: MapHandle,
    pids: MapHandle,
    bss: Option<MapHandle>,
    window: u64,
    window_start_ns: u64,
    next_flip: Option<Instant>,
    /// The last panes of a sliding window (kernel windows of one step each).
    panes: window::SlidingPanes,
    started_at: Instant,
    cpu_at_start: u64,
    deadline: Option<Instant>,
    finished: bool,
    /// Pinned maps (`--pin`), removed on drop unless kept.
    pins: Option<Pins>,
    /// JOIN: the pairing map, swept for orphans.
    pair_ages: Option<pair_age::PairAges>,
    object: Object,
}

struct RowReader {
    ring: RingBuffer<'static>,
    buffer: Rc<RefCell<RowBuffer>>,
    delivered: u64,
    /// Rows handed out so far (LIMIT counts these).
    emitted: u64,
    /// With ORDER BY rows are kept until the end, bounded (see `sorted`).
    sorted: sorted::SortedRows,
    /// Most rows an ORDER BY without LIMIT may hold.
    max_sorted: usize,
}

/// Where the ring-buffer callback puts records: straight into Arrow
/// builders, or (for ORDER BY, which sorts values) as rows of values.
enum RowBuffer {
    Columns(RowColumns),
    Values(Vec<Vec<Value>>),
}

impl SingleQuery {
    /// Compiles `program` (the one program of `plan`), loads and attaches it.
    pub fn start(plan: &PhysicalPlan, program: &Program, scope: Scope, rows_as_values: bool) -> Result<SingleQuery> {
        env::check_privileges()?;
        attach::check_available(&plan.programs[0].event)?;
        let object = compile(&program.source)?;
        Self::load_and_attach(plan, program, &object, scope, rows_as_values)
    }

    /// Loads and attaches an already compiled object, built from `program`.
    pub fn start_object(plan: &PhysicalPlan, program: &Program, object: &[u8], scope: Scope) -> Result<SingleQuery> {
        attach::check_available(&plan.programs[0].event)?;
        Self::load_and_attach(plan, program, object, scope, false)
    }

    /// `rows_as_values`: decode rows to values for user-space operators
    /// (a stream join) instead of straight into Arrow columns.
    fn load_and_attach(
        plan: &PhysicalPlan,
        program: &Program,
        object: &[u8],
        scope: Scope,
        rows_as_values: bool,
    ) -> Result<SingleQuery> {
        let object = load::load(object, program, &scope)?;
        let maps = load::Maps { program, object: &object };
        let stats_map = maps.required(MapRole::Stats)?;
        let pids = maps.required(MapRole::TrackedPids)?;
        let groups = maps.optional(MapRole::Groups)?;
        let sketch = maps.optional(MapRole::Sketch)?;
        let stacks = maps.optional(MapRole::Stacks)?.map(stacks::Stacks::new);
        let bss = maps.optional(MapRole::WindowCounter)?;
        let pair_ages = match (maps.optional(MapRole::Pending)?, &plan.programs[0].pairing) {
            (Some(map), Some(p)) => Some(pair_age::PairAges::new(map, &p.stash)),
            _ => None,
        };
        if let Scope::Tracked(tgids) = &scope {
            for t in tgids {
                pids.update(&t.to_ne_bytes(), &[1], MapFlags::ANY).map_err(|e| Error::Io {
                    what: format!("track pid {t}"),
                    source: std::io::Error::other(e.to_string()),
                })?;
            }
        }
        let rows = match &plan.programs[0].output {
            KernelOutput::Rows { record, .. } => {
                let map = maps.required(MapRole::Rows)?;
                let columns = RowColumns::new(plan, record, schema(plan)).filter(|_| !rows_as_values);
                let buffer = Rc::new(RefCell::new(match columns {
                    Some(columns) => RowBuffer::Columns(columns),
                    None => RowBuffer::Values(vec![]),
                }));
                let sink = buffer.clone();
                let (plan_c, record_c) = (plan.clone(), record.clone());
                let mut b = RingBufferBuilder::new();
                b.add(&map, move |bytes: &[u8]| {
                    if bytes.len() >= record_c.size as usize {
                        match &mut *sink.borrow_mut() {
                            RowBuffer::Columns(columns) => columns.append(bytes),
                            RowBuffer::Values(rows) => rows.push(decode::record_inputs(&plan_c, &record_c, bytes)),
                        }
                    }
                    0
                })
                .map_err(|e| Error::Io {
                    what: "set up the ring buffer".into(),
                    source: std::io::Error::other(e.to_string()),
                })?;
                let ring = b.build().map_err(|e| Error::Io {
                    what: "set up the ring buffer".into(),
                    source: std::io::Error::other(e.to_string()),
                })?;
                Some(RowReader {
                    ring,
                    buffer,
                    delivered: 0,
                    emitted: 0,
                    sorted: Default::default(),
                    max_sorted: sorted::DEFAULT_MAX_SORTED_ROWS,
                })
            }
            KernelOutput::Aggregate { .. } => None,
        };
        let links = attach::attach_all(&object, program, &scope)?;
        let started_at = Instant::now();
        let next_flip = match plan.programs[0].window {
            KernelWindow::Time { size_ms } => Some(started_at + Duration::from_millis(size_ms)),
            _ => None,
        };
        Ok(SingleQuery {
            rows,
            links,
            schema: schema(plan),
            plan: plan.clone(),
            program: program.clone(),
            groups,
            sketch,
            stacks,
            stats_map,
            pids,
            bss,
            window: 0,
            window_start_ns: monotonic_ns(),
            next_flip,
            panes: Default::default(),
            started_at,
            cpu_at_start: selfstats::process_cpu_ns(),
            deadline: None,
            finished: false,
            pins: None,
            pair_ages,
            object,
        })
    }

    /// Pins the aggregate maps under `options.dir` for external readers and
    /// writes their C header; returns the header's path. The pins go when the
    /// query is dropped unless `options.keep`. Row queries have no map to pin.
    pub fn pin_maps(&mut self, options: &PinOptions) -> Result<std::path::PathBuf> {
        let dir = options.dir.to_string_lossy().into_owned();
        let header = crate::codegen::pin_header(&self.plan, &dir).ok_or_else(|| {
            Error::query(
                crate::error::Stage::Plan,
                "--pin needs an aggregate query: a row query streams through a ring buffer and has no map to pin",
                None,
            )
        })?;
        if self.pins.is_some() {
            return Err(Error::Io { what: "pin the maps".into(), source: std::io::Error::other("already pinned") });
        }
        let mut pins = pin::create_dir(options)?;
        let maps = [
            (crate::codegen::pin_names::GROUPS, self.groups.as_mut()),
            (crate::codegen::pin_names::STATS, Some(&mut self.stats_map)),
            (crate::codegen::pin_names::SKETCH, self.sketch.as_mut()),
        ];
        for (name, map) in maps {
            let Some(map) = map else { continue };
            let path = options.dir.join(name);
            map.pin(&path).map_err(|e| map_err(&format!("pin {}", path.display()), e))?;
            pins.pinned(path);
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

    /// JOIN: open pairs older than `age` are evicted (default [`DEFAULT_MAX_PAIR_AGE`]).
    pub fn set_max_pair_age(&mut self, age: Duration) {
        if let Some(p) = &mut self.pair_ages {
            p.set_max_age(age);
        }
    }

    /// Rows an ORDER BY row query holds right now (bounded: see [`Self::set_max_sorted_rows`]).
    pub fn held_rows(&self) -> usize {
        self.rows.as_ref().map_or(0, |r| r.sorted.len())
    }

    /// True once the query has detached and returned its final results.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Adds a process to a `Scope::Tracked` query.
    pub fn track_pid(&self, tgid: u32) -> Result<()> {
        self.pids.update(&tgid.to_ne_bytes(), &[1], MapFlags::ANY).map_err(|e| map_err("track pid", e))
    }

    /// Waits up to `max_wait` and returns what completed meanwhile: closed
    /// windows, or streamed rows.
    pub fn poll(&mut self, max_wait: Duration) -> Result<Vec<Output>> {
        if self.finished {
            return Ok(vec![]);
        }
        if let Some(p) = &mut self.pair_ages {
            p.sweep_if_due()?;
        }
        if let Some(end) = self.deadline {
            let now = Instant::now();
            if now >= end {
                return self.finish();
            }
            // A flip that coincides with the end is the end: detach instead.
            let flip_first = self.next_flip.is_some_and(|f| f + Duration::from_millis(1) < end);
            if !flip_first && self.rows.is_none() && end - now <= max_wait {
                std::thread::sleep(end - now);
                return self.finish();
            }
        }
        if let Some(r) = &mut self.rows {
            // A signal (Ctrl-C) interrupting the wait is not an error: the caller decides to stop.
            match r.ring.poll(max_wait.min(Duration::from_millis(50))) {
                Err(e) if e.kind() != libbpf_rs::ErrorKind::Interrupted => {
                    return Err(map_err("poll the ring buffer", e))
                }
                _ => {}
            }
            r.ring.consume().map_err(|e| map_err("read the ring buffer", e))?;
            return self.take_rows(false);
        }
        // User stacks resolve against their process's mappings: read them while it lives.
        if let (Some(st), Some(groups), KernelOutput::Aggregate { key, .. }) =
            (&self.stacks, &self.groups, &self.plan.programs[0].output)
        {
            st.prefetch(key, groups.keys());
        }
        match self.plan.programs[0].window {
            KernelWindow::Time { size_ms } => {
                let flip_at = self.next_flip.expect("time windows have a flip time");
                let now = Instant::now();
                if now < flip_at {
                    std::thread::sleep(max_wait.min(flip_at - now));
                }
                if Instant::now() < flip_at {
                    return Ok(vec![]);
                }
                self.next_flip = Some(flip_at + Duration::from_millis(size_ms));
                Ok(vec![self.flip_time_window()?])
            }
            KernelWindow::Count { n } => {
                std::thread::sleep(max_wait.min(Duration::from_millis(50)));
                let seq = self.read_bss_u64()?;
                self.drain_count_windows(seq / n, n)
            }
            KernelWindow::None => {
                std::thread::sleep(max_wait);
                Ok(vec![])
            }
        }
    }

    /// The current results of a query without windows, not cleared (for `--interval`).
    pub fn snapshot(&self) -> Result<Output> {
        let groups = self.collect_groups(|_| true, false)?;
        let rows = self.group_rows(groups.into_iter().map(|(_, k, m)| (k, m)));
        Ok(Output {
            window: WindowBounds::Time { start_ns: self.window_start_ns, end_ns: monotonic_ns() },
            batch: self.window_batch(rows),
            partial: true,
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
        self.links.clear();
        wait_for_inflight_programs();
        if let Some(r) = &mut self.rows {
            r.ring.consume().map_err(|e| map_err("read the ring buffer", e))?;
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

    /// Event accounting so far.
    pub fn stats(&self) -> Result<QueryStats> {
        let per_cpu = self
            .stats_map
            .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| map_err("read stats", e))?
            .unwrap_or_default();
        let mut s = QueryStats::default();
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
                } += n;
            }
        }
        s.delivered = self.rows.as_ref().map_or(s.matched - s.dropped.min(s.matched), |r| r.delivered);
        let query_prog = self.program.query_prog().map(|p| p.name);
        if let Some(p) = self.program_stats().into_iter().find(|p| Some(p.name.as_str()) == query_prog) {
            s.bpf_run_cnt = p.run_cnt;
            s.bpf_run_time_ns = p.run_time_ns;
        }
        s.user_cpu_ns = selfstats::process_cpu_ns().saturating_sub(self.cpu_at_start);
        s.evicted = self.pair_ages.as_ref().map_or(0, |p| p.evicted());
        Ok(s)
    }

    /// Run count and time of each of the query's programs (zero unless
    /// BPF statistics are on: see [`enable_bpf_stats`]).
    pub fn program_stats(&self) -> Vec<ProgramStats> {
        selfstats::program_stats(&self.object)
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
                return Ok(vec![Output { window: WindowBounds::Rows, batch, partial: false }]);
            }
            RowBuffer::Values(rows) => std::mem::take(rows),
        };
        let mut rows = rows;
        symbolize_rows(&self.stacks, &self.plan, &mut rows);
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
        Output { window, batch: self.window_batch(rows), partial: false }
    }

    /// Applies the user plan to one window's groups.
    fn window_batch(&self, inputs: Vec<Vec<Value>>) -> RecordBatch {
        decode::to_batch(&self.schema, &user::apply(&self.plan.user, inputs, true))
    }

    fn flip_time_window(&mut self) -> Result<Output> {
        let closing = self.window;
        self.window += 1;
        let bss = self.bss.as_ref().expect("time-window programs have ebq_window in .bss");
        bss.update(&0u32.to_ne_bytes(), &self.window.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| map_err("advance the window", e))?;
        let end_ns = monotonic_ns();
        wait_for_inflight_programs();
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
            wait_for_inflight_programs();
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
        let Some(groups) = &self.groups else { return Ok(vec![]) };
        // Kept pins: the final groups stay for readers after ebq exits.
        let delete = delete && !(self.finished && self.pins.as_ref().is_some_and(Pins::keep));
        let maps = GroupMaps {
            groups,
            // The loaded map's own type, not the plan's: a bundle compiled before keyless
            // queries used an array slot still holds a hash, and reads as one.
            single_slot: groups.map_type() == libbpf_rs::MapType::PercpuArray,
            sketch: self.sketch.as_ref().map(|m| m as &dyn crate::exec::PerCpuMap),
        };
        crate::exec::read_groups::read_groups(&self.plan, &maps, pick, delete)
    }

    /// Groups → the user plan's input rows (`exec::group_rows`), stack ids symbolized.
    fn group_rows(&self, groups: impl IntoIterator<Item = Group>) -> Vec<Vec<Value>> {
        let mut rows = crate::exec::group_rows::group_rows(&self.plan, groups);
        if let (Some(st), KernelOutput::Aggregate { key, .. }) = (&self.stacks, &self.plan.programs[0].output) {
            rows.iter_mut().for_each(|row| st.symbolize_inputs(&self.plan.user.inputs, key, row));
        }
        rows
    }

    fn read_bss_u64(&self) -> Result<u64> {
        let bss = self.bss.as_ref().expect("count-window programs have ebq_seq in .bss");
        let v = bss
            .lookup(&0u32.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| map_err("read the event sequence", e))?
            .unwrap_or_default();
        Ok(v.get(0..8).map_or(0, |b| u64::from_ne_bytes(b.try_into().unwrap())))
    }
}

/// Stack ids in a row query's decoded rows → their frames (runtime::stacks).
fn symbolize_rows(stacks: &Option<stacks::Stacks>, plan: &PhysicalPlan, rows: &mut [Vec<Value>]) {
    if let (Some(st), KernelOutput::Rows { record, .. }) = (stacks, &plan.programs[0].output) {
        rows.iter_mut().for_each(|row| st.symbolize_inputs(&plan.user.inputs, record, row));
    }
}

fn map_err(what: &str, e: libbpf_rs::Error) -> Error {
    Error::Io { what: what.into(), source: std::io::Error::other(e.to_string()) }
}

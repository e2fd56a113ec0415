//! Running a join of two streams: two row programs, and a windowed hash join
//! in user space.
//!
//! Rows go to panes (one step long) by their `time`, counted from just before
//! the first program attached. Pane `p` closes once the clock is
//! `grace` past its end and both ring buffers have been drained after that
//! moment; then the window made of the last `size / step` panes is joined:
//! the second stream's rows are hashed on their keys, each row of the first
//! stream probes them in arrival order, and the user plan filters, projects,
//! sorts and limits the joined rows.

use super::decode::{self, Value};
use super::join_groups::{self, KeyPart};
use super::{
    map_err, monotonic_ns, user, wait_for_inflight_programs, Output, ProgramStats, QueryStats, RowBuffer, Scope,
    SingleQuery, WindowBounds,
};
use crate::codegen::Program;
use crate::error::{Error, Result, Stage};
use crate::plan::{PhysicalPlan, UserPlan, WindowJoin};
use crate::types::DataType;
use arrow_schema::SchemaRef;
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// A running two-stream join.
pub(super) struct JoinQuery {
    sides: [SingleQuery; 2],
    join: WindowJoin,
    user: UserPlan,
    schema: SchemaRef,
    /// Pane 0 starts here (CLOCK_MONOTONIC ns, before either program attached).
    origin_ns: u64,
    /// Rows of each stream by pane.
    panes: [BTreeMap<u64, Vec<Vec<Value>>>; 2],
    /// Panes below this one are closed.
    next_pane: u64,
    held: usize,
    max_held: usize,
    /// Rows whose pane had already closed when they arrived.
    late: u64,
    deadline: Option<Instant>,
    finished: bool,
}

impl JoinQuery {
    /// Starts the second stream, then the first (`programs` holds their objects).
    pub(super) fn start(
        plan: &PhysicalPlan,
        join: &WindowJoin,
        programs: &[Program],
        scope: Scope,
    ) -> Result<JoinQuery> {
        let origin_ns = monotonic_ns();
        let second = SingleQuery::start(&plan.stream(join, 1), &programs[1], scope.clone(), true)?;
        let first = SingleQuery::start(&plan.stream(join, 0), &programs[0], scope, true)?;
        Ok(JoinQuery {
            sides: [first, second],
            join: join.clone(),
            user: plan.user.clone(),
            schema: super::schema(plan),
            origin_ns,
            panes: Default::default(),
            next_pane: 0,
            held: 0,
            max_held: super::sorted::DEFAULT_MAX_SORTED_ROWS,
            late: 0,
            deadline: None,
            finished: false,
        })
    }

    pub(super) fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    pub(super) fn started_at(&self) -> Instant {
        self.sides[0].started_at()
    }

    pub(super) fn set_deadline(&mut self, at: Instant) {
        self.deadline = Some(at);
    }

    pub(super) fn set_max_held_rows(&mut self, n: usize) {
        self.max_held = n;
    }

    pub(super) fn held_rows(&self) -> usize {
        self.held
    }

    pub(super) fn is_finished(&self) -> bool {
        self.finished
    }

    pub(super) fn track_pid(&self, tgid: u32) -> Result<()> {
        self.sides.iter().try_for_each(|s| s.track_pid(tgid))
    }

    pub(super) fn program_stats(&self) -> Vec<ProgramStats> {
        self.sides.iter().flat_map(|s| s.program_stats()).collect()
    }

    /// Both streams' accounting added up, plus the late rows.
    pub(super) fn stats(&self) -> Result<QueryStats> {
        let [a, b] = [self.sides[0].stats()?, self.sides[1].stats()?];
        Ok(QueryStats {
            seen: a.seen + b.seen,
            matched: a.matched + b.matched,
            delivered: a.delivered + b.delivered,
            dropped: a.dropped + b.dropped,
            untracked: a.untracked + b.untracked,
            bpf_run_cnt: a.bpf_run_cnt + b.bpf_run_cnt,
            bpf_run_time_ns: a.bpf_run_time_ns + b.bpf_run_time_ns,
            // Process CPU time, counted from the first stream's start.
            user_cpu_ns: a.user_cpu_ns,
            late: self.late,
            ..QueryStats::default()
        })
    }

    /// Reads both ring buffers and returns the windows that closed.
    pub(super) fn poll(&mut self, max_wait: Duration) -> Result<Vec<Output>> {
        if self.finished {
            return Ok(vec![]);
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return self.finish();
        }
        let close_at = self.pane_end(self.next_pane) + self.join.grace_ns;
        let until_close = Duration::from_nanos(close_at.saturating_sub(monotonic_ns()));
        let mut wait = max_wait.min(Duration::from_millis(50)).min(until_close);
        if let Some(d) = self.deadline {
            wait = wait.min(d.saturating_duration_since(Instant::now()));
        }
        if let Some(r) = &mut self.sides[0].rows {
            match r.ring.poll(wait) {
                Err(e) if e.kind() != libbpf_rs::ErrorKind::Interrupted => {
                    return Err(map_err("poll the ring buffer", e))
                }
                _ => {}
            }
        }
        // Everything committed before `now` is read below, so panes that
        // ended `grace` before it are complete.
        let now = monotonic_ns();
        self.read_rows()?;
        let mut out = vec![];
        while self.pane_end(self.next_pane) + self.join.grace_ns <= now {
            out.push(self.close_pane(None));
        }
        Ok(out)
    }

    /// Detaches both programs, reads what is left and joins every open window.
    pub(super) fn finish(&mut self) -> Result<Vec<Output>> {
        if self.finished {
            return Ok(vec![]);
        }
        self.finished = true;
        for side in &mut self.sides {
            side.finished = true;
            side.links.clear();
        }
        wait_for_inflight_programs();
        // Every row received has a time before this: the last window ends here.
        let end_ns = monotonic_ns();
        self.read_rows()?;
        let last = (end_ns.saturating_sub(self.origin_ns)) / self.join.step_ns;
        let mut out = vec![];
        while self.next_pane <= last {
            let end = if self.next_pane == last { Some(end_ns) } else { None };
            out.push(self.close_pane(end));
        }
        Ok(out)
    }

    fn pane_end(&self, pane: u64) -> u64 {
        self.origin_ns + (pane + 1) * self.join.step_ns
    }

    /// Drains both ring buffers into panes.
    fn read_rows(&mut self) -> Result<()> {
        for side in 0..2 {
            let Some(r) = &mut self.sides[side].rows else { continue };
            r.ring.consume().map_err(|e| map_err("read the ring buffer", e))?;
            let rows = match &mut *r.buffer.borrow_mut() {
                RowBuffer::Values(rows) => std::mem::take(rows),
                RowBuffer::Columns(_) => unreachable!("join streams decode to values"),
            };
            r.delivered += rows.len() as u64;
            let mut rows = rows;
            super::symbolize_rows(&self.sides[side].stacks, &self.sides[side].plan, &mut rows);
            for row in rows {
                let Value::U(time) = row[0] else { unreachable!("field 0 of a join stream is time") };
                let pane = time.saturating_sub(self.origin_ns) / self.join.step_ns;
                if pane < self.next_pane {
                    self.late += 1;
                    continue;
                }
                self.held += 1;
                if self.held > self.max_held {
                    return Err(Error::query(
                        Stage::Plan,
                        format!(
                            "the join holds more than {} rows in its open windows; shorten the window, filter more, \
                             or raise --max-sorted-rows",
                            self.max_held
                        ),
                        None,
                    ));
                }
                self.panes[side].entry(pane).or_default().push(row);
            }
        }
        Ok(())
    }

    /// Joins the window that ends with pane `next_pane` (ending at `end_ns`
    /// when given: the query's end), then forgets the pane that no later
    /// window contains.
    fn close_pane(&mut self, end_ns: Option<u64>) -> Output {
        let pane = self.next_pane;
        let first = (pane + 1).saturating_sub(self.user.window_panes.max(1));
        let joined = {
            let rows = |side: usize| self.panes[side].range(first..=pane).flat_map(|(_, rows)| rows);
            let mut by_key: HashMap<Vec<KeyPart>, Vec<&Vec<Value>>> = HashMap::new();
            for r in rows(1) {
                by_key.entry(self.key(r, 1)).or_default().push(r);
            }
            let mut joined = vec![];
            for l in rows(0) {
                for r in by_key.get(&self.key(l, 0)).into_iter().flatten() {
                    joined.push(l.iter().chain(r.iter()).cloned().collect::<Vec<Value>>());
                }
            }
            joined
        };
        let kept = match &self.join.residual {
            Some(r) => joined.into_iter().filter(|row| matches!(user::eval(r, row, &[]), Value::B(true))).collect(),
            None => joined,
        };
        let out = match &self.join.aggregate {
            None => user::apply(&self.user, kept, false),
            Some(a) => user::apply(&self.user, join_groups::group_rows(a, kept), true),
        };
        let batch = decode::to_batch(&self.schema, &out);
        // The next window starts one pane later: this window's first pane is done.
        if pane + 1 >= self.user.window_panes.max(1) {
            for side in &mut self.panes {
                if let Some(rows) = side.remove(&first) {
                    self.held -= rows.len();
                }
            }
        }
        self.next_pane += 1;
        let start_ns = self.origin_ns + first * self.join.step_ns;
        let end_ns = end_ns.unwrap_or_else(|| self.pane_end(pane));
        Output { window: WindowBounds::Time { start_ns, end_ns }, batch, partial: false }
    }

    /// The key of a row of stream `side`.
    fn key(&self, row: &[Value], side: usize) -> Vec<KeyPart> {
        self.join.keys.iter().map(|k| key_part(&row[if side == 0 { k.left } else { k.right }], k.ty)).collect()
    }
}

/// `v` as compared in `ty`: integers as their value in that type (as the
/// kernel converts both operands of a comparison).
fn key_part(v: &Value, ty: DataType) -> KeyPart {
    match v {
        Value::I(i) if !ty.is_signed() => KeyPart::Int(i128::from(*i as u64)),
        Value::U(u) if ty.is_signed() => KeyPart::Int(i128::from(*u as i64)),
        other => KeyPart::of(other),
    }
}

//! Running a join of two streams: two row programs, and a windowed hash join
//! in user space.
//!
//! This file reads the two ring buffers and keeps time; which pane a row
//! goes to and when a window is complete is `exec::join_panes`, the join of
//! one window `exec::hash_join`.

use super::single::{symbolize_rows, RowBuffer, SingleQuery};
use super::{monotonic_ns, Output, ProgramStats, QueryStats, Scope};
use arrow_schema::SchemaRef;
use ebq_exec::decode;
use ebq_exec::hash_join::{hash_join, join_output};
use ebq_exec::join_panes::JoinPanes;
use ebq_front::codegen::Program;
use ebq_front::error::Result;
use ebq_front::plan::{PhysicalPlan, UserPlan, WindowJoin};
use std::time::{Duration, Instant};

/// A running two-stream join.
pub(super) struct JoinQuery {
    sides: [SingleQuery; 2],
    join: WindowJoin,
    user: UserPlan,
    schema: SchemaRef,
    /// Both streams' rows by pane; pane 0 starts just before either
    /// program attached.
    panes: JoinPanes,
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
        Ok(JoinQuery::new(plan, join, [first, second], origin_ns))
    }

    /// Joins two started streams (`plan.stream(join, i)`, rows as values);
    /// pane 0 starts at `origin_ns`.
    pub(super) fn new(plan: &PhysicalPlan, join: &WindowJoin, sides: [SingleQuery; 2], origin_ns: u64) -> JoinQuery {
        JoinQuery {
            sides,
            join: join.clone(),
            user: plan.user.clone(),
            schema: super::schema(plan),
            panes: JoinPanes::new(
                origin_ns,
                join.step_ns,
                join.grace_ns,
                plan.user.window_panes,
                ebq_exec::DEFAULT_MAX_SORTED_ROWS,
            ),
            deadline: None,
            finished: false,
        }
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
        self.panes.set_max_held(n);
    }

    pub(super) fn held_rows(&self) -> usize {
        self.panes.held()
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
        // Process CPU time, counted from the first stream's start.
        let mut sum = QueryStats { late: self.panes.late(), user_cpu_ns: a.user_cpu_ns, ..QueryStats::default() };
        sum.add_events(&a);
        sum.add_events(&b);
        Ok(sum)
    }

    /// Reads both ring buffers and returns the windows that closed.
    pub(super) fn poll(&mut self, max_wait: Duration) -> Result<Vec<Output>> {
        if self.finished {
            return Ok(vec![]);
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return self.finish();
        }
        let close_at = self.panes.next_close_at();
        let until_close = Duration::from_nanos(close_at.saturating_sub(monotonic_ns()));
        let mut wait = max_wait.min(Duration::from_millis(50)).min(until_close);
        if let Some(d) = self.deadline {
            wait = wait.min(d.saturating_duration_since(Instant::now()));
        }
        self.sides[0].object.poll_ring(wait)?;
        // Everything committed before `now` is read below, so panes that
        // ended `grace` before it are complete.
        let now = monotonic_ns();
        self.read_rows()?;
        let mut out = vec![];
        while self.panes.next_is_complete(now) {
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
            side.object.detach();
        }
        self.sides[0].object.wait_for_inflight_programs();
        // Every row received has a time before this: the last window ends here.
        let end_ns = monotonic_ns();
        self.read_rows()?;
        let last = self.panes.pane_of(end_ns);
        let mut out = vec![];
        while self.panes.next_pane() <= last {
            let end = if self.panes.next_pane() == last { Some(end_ns) } else { None };
            out.push(self.close_pane(end));
        }
        Ok(out)
    }

    /// Drains both ring buffers into panes.
    fn read_rows(&mut self) -> Result<()> {
        for side in 0..2 {
            let s = &mut self.sides[side];
            s.object.consume_ring()?;
            let Some(r) = &mut s.rows else { continue };
            let rows = match &mut *r.buffer.borrow_mut() {
                RowBuffer::Values(rows) => std::mem::take(rows),
                RowBuffer::Columns(_) => unreachable!("join streams decode to values"),
            };
            r.delivered += rows.len() as u64;
            let mut rows = rows;
            symbolize_rows(s.object.stacks(), &s.plan, &mut rows);
            self.panes.add(side, rows)?;
        }
        Ok(())
    }

    /// Joins the window that ends with the next pane (ending at `end_ns`
    /// when given: the query's end), then forgets the pane that no later
    /// window contains.
    fn close_pane(&mut self, end_ns: Option<u64>) -> Output {
        let joined = hash_join(&self.join.keys, self.panes.window_rows(0), self.panes.window_rows(1));
        let out = join_output(self.join.residual.as_ref(), self.join.aggregate.as_ref(), &self.user, joined);
        let batch = decode::to_batch(&self.schema, &out);
        let window = self.panes.close_next(end_ns);
        Output { window, batch, partial: false, extras: vec![] }
    }
}

#[cfg(test)]
mod tests;

//! The panes of a join of two streams. Rows go to panes (one step long) by
//! their `time`, counted from `origin_ns` (just before the first program
//! attached). Pane `p` is complete once the clock is `grace` past its end and
//! both ring buffers have been drained after that moment; then the window
//! made of the last `size / step` panes is joined, and the pane no later
//! window contains is forgotten. Rows for a pane already closed are late:
//! counted, left out.

use super::decode::Value;
use super::window::WindowBounds;
use ebq_front::error::{Error, Result, Stage};
use std::collections::BTreeMap;

/// Both streams' rows of the open panes.
#[derive(Debug)]
pub struct JoinPanes {
    /// Pane 0 starts here (CLOCK_MONOTONIC ns).
    origin_ns: u64,
    step_ns: u64,
    grace_ns: u64,
    /// Panes per window (`size / step`).
    window_panes: u64,
    /// Rows of each stream by pane.
    panes: [BTreeMap<u64, Vec<Vec<Value>>>; 2],
    /// Panes below this one are closed.
    next_pane: u64,
    held: usize,
    max_held: usize,
    /// Rows whose pane had already closed when they arrived.
    late: u64,
}

impl JoinPanes {
    /// No rows yet; at most `max_held` rows may wait in open panes.
    pub fn new(origin_ns: u64, step_ns: u64, grace_ns: u64, window_panes: u64, max_held: usize) -> JoinPanes {
        JoinPanes {
            origin_ns,
            step_ns,
            grace_ns,
            window_panes: window_panes.max(1),
            panes: Default::default(),
            next_pane: 0,
            held: 0,
            max_held,
            late: 0,
        }
    }

    /// Where pane `pane` ends.
    pub fn pane_end(&self, pane: u64) -> u64 {
        self.origin_ns + (pane + 1) * self.step_ns
    }

    /// The clock time from which the next pane may close (once both ring
    /// buffers have been drained after it).
    pub fn next_close_at(&self) -> u64 {
        self.pane_end(self.next_pane) + self.grace_ns
    }

    /// True when the next pane is complete given that every row committed
    /// before `drained_at` has been added.
    pub fn next_is_complete(&self, drained_at: u64) -> bool {
        self.next_close_at() <= drained_at
    }

    /// The pane `time` falls in.
    pub fn pane_of(&self, time: u64) -> u64 {
        time.saturating_sub(self.origin_ns) / self.step_ns
    }

    /// The first pane not yet closed.
    pub fn next_pane(&self) -> u64 {
        self.next_pane
    }

    /// Rows waiting in open panes.
    pub fn held(&self) -> usize {
        self.held
    }

    /// Rows that arrived after their pane closed.
    pub fn late(&self) -> u64 {
        self.late
    }

    /// Most rows that may wait in open panes.
    pub fn set_max_held(&mut self, n: usize) {
        self.max_held = n;
    }

    /// Adds stream `side`'s rows (field 0 is `time`); errors once more than
    /// the bound are held.
    pub fn add(&mut self, side: usize, rows: Vec<Vec<Value>>) -> Result<()> {
        for row in rows {
            let Value::U(time) = row[0] else { unreachable!("field 0 of a join stream is time") };
            let pane = self.pane_of(time);
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
        Ok(())
    }

    /// The first pane of the window that ends with the next pane.
    fn first_pane(&self) -> u64 {
        (self.next_pane + 1).saturating_sub(self.window_panes)
    }

    /// Stream `side`'s rows in the window that ends with the next pane, in
    /// arrival order within each pane, panes in order.
    pub fn window_rows(&self, side: usize) -> impl Iterator<Item = &Vec<Value>> {
        self.panes[side].range(self.first_pane()..=self.next_pane).flat_map(|(_, rows)| rows)
    }

    /// Closes the next pane: returns the bounds of the window it ended (at
    /// `end_ns` when given: the query's end) and forgets the pane that no
    /// later window contains.
    pub fn close_next(&mut self, end_ns: Option<u64>) -> WindowBounds {
        let (pane, first) = (self.next_pane, self.first_pane());
        // The next window starts one pane later: this window's first pane is done.
        if pane + 1 >= self.window_panes {
            for side in &mut self.panes {
                if let Some(rows) = side.remove(&first) {
                    self.held -= rows.len();
                }
            }
        }
        self.next_pane += 1;
        let start_ns = self.origin_ns + first * self.step_ns;
        WindowBounds::Time { start_ns, end_ns: end_ns.unwrap_or_else(|| self.pane_end(pane)) }
    }
}

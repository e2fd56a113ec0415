//! Windows cut from kernel panes. The kernel counts each group per window
//! number (a pane); a tumbling window is one pane, a sliding window (`size`
//! a multiple of `step`) is the last `size / step` panes combined, and count
//! windows are the panes numbered by event sequence.

use super::group_rows::Group;
use super::read_groups::WindowGroup;
use std::collections::{BTreeMap, VecDeque};

/// Which part of the stream a batch covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowBounds {
    /// A time window (or the whole run): [start_ns, end_ns) in CLOCK_MONOTONIC.
    Time {
        /// First nanosecond.
        start_ns: u64,
        /// One past the last nanosecond.
        end_ns: u64,
    },
    /// The `index`-th count window (0-based).
    Count {
        /// Window number.
        index: u64,
    },
    /// Streamed rows: no window.
    Rows,
}

/// The last panes of a sliding window (kernel windows of one step each).
#[derive(Debug, Default)]
pub struct SlidingPanes {
    panes: VecDeque<(WindowBounds, Vec<Group>)>,
}

impl SlidingPanes {
    /// A pane closed: returns the window it completes, the combination of
    /// the last `window_panes` panes (0 or 1: the pane alone). The window
    /// starts where its first pane did and ends where this one does.
    pub fn close(&mut self, window_panes: u64, bounds: WindowBounds, groups: Vec<Group>) -> (WindowBounds, Vec<Group>) {
        let k = window_panes.max(1) as usize;
        if k == 1 {
            return (bounds, groups);
        }
        self.panes.push_back((bounds, groups));
        while self.panes.len() > k {
            self.panes.pop_front();
        }
        let window = match (self.panes.front().map(|p| p.0), bounds) {
            (Some(WindowBounds::Time { start_ns, .. }), WindowBounds::Time { end_ns, .. }) => {
                WindowBounds::Time { start_ns, end_ns }
            }
            _ => bounds,
        };
        (window, self.panes.iter().flat_map(|(_, g)| g.iter().cloned()).collect())
    }
}

/// Count windows `[from, upto)` from groups read for them, in order, each
/// with its groups (a window nobody counted in is empty). `upto == u64::MAX`
/// (the query's end) means through the last window that has a group. Also
/// returns the first window not yet emitted.
pub fn count_windows(groups: Vec<WindowGroup>, from: u64, upto: u64) -> (Vec<(u64, Vec<Group>)>, u64) {
    let mut by_window: BTreeMap<u64, Vec<Group>> = Default::default();
    for (w, k, m) in groups {
        by_window.entry(w).or_default().push((k, m));
    }
    let last = if upto == u64::MAX { by_window.keys().next_back().map_or(from, |w| w + 1) } else { upto };
    let out = (from..last).map(|index| (index, by_window.remove(&index).unwrap_or_default())).collect();
    (out, last.max(from))
}

//! ORDER BY on a row query: rows are held until the end (the order is known
//! only then), so their number is bounded. With LIMIT n only the best n are
//! kept (compacted whenever 2n — at least 1024 — are held); without LIMIT at
//! most `max_rows` are held ([`DEFAULT_MAX_SORTED_ROWS`], `--max-sorted-rows`)
//! and one more stops the query with an error: never silent, never unbounded.

use super::decode::Value;
use super::user;
use ebq_front::error::{Error, Result};
use ebq_front::plan::UserPlan;

/// Default most rows an ORDER BY without LIMIT holds (about 100 MB for small rows).
pub const DEFAULT_MAX_SORTED_ROWS: usize = 1_000_000;

/// Rows waiting for the end of an ORDER BY row query.
#[derive(Default)]
pub struct SortedRows {
    rows: Vec<Vec<Value>>,
}

impl SortedRows {
    /// Adds `rows`; errors when an ORDER BY without LIMIT would hold more than `max_rows`.
    pub fn push(&mut self, plan: &UserPlan, rows: Vec<Vec<Value>>, max_rows: usize) -> Result<()> {
        self.rows.extend(rows);
        match plan.limit {
            Some(n) => {
                let n = usize::try_from(n).unwrap_or(usize::MAX);
                if self.rows.len() >= n.saturating_mul(2).max(1024) {
                    self.rows = user::top_inputs(plan, std::mem::take(&mut self.rows), n);
                }
            }
            None if self.rows.len() > max_rows => {
                return Err(Error::Io {
                    what: "ORDER BY without LIMIT holds every row until the query ends".into(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::OutOfMemory,
                        format!(
                            "more than {max_rows} rows arrived; add LIMIT (only that many are kept) \
                             or raise --max-sorted-rows"
                        ),
                    ),
                });
            }
            None => {}
        }
        Ok(())
    }

    /// Rows held so far (bounded as above).
    pub fn held(&self) -> usize {
        self.rows.len()
    }

    /// Every row held, for the final sort.
    pub fn take(&mut self) -> Vec<Vec<Value>> {
        std::mem::take(&mut self.rows)
    }
}

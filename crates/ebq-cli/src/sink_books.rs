//! What became of a remote sink's rows (the Kafka and OTLP-logs sinks):
//! taken, delivered, failed, refused at a full queue, requests retried, and
//! once the sink has finished, the rows it left queued (lost at exit). Both
//! sinks keep these books the same way, so their stats lines and `/metrics`
//! series mean the same.

use ebq::sink::Delivery;

/// Rows by fate.
#[derive(Debug, Default)]
pub struct SinkBooks {
    /// Rows the sink accepted (handed on or queued).
    pub taken: u64,
    pub delivered: u64,
    pub failed: u64,
    /// Rows refused because a queue was full.
    pub refused: u64,
    /// Requests sent again after a failure.
    pub retries: u64,
    /// Set by `finish` once nothing more can be sent: the rows left, lost;
    /// later reports no longer count.
    pub closed: Option<u64>,
    /// The kinds of error reported, each printed once.
    errors_seen: Vec<String>,
}

impl SinkBooks {
    /// Rows taken and not yet reported delivered or failed.
    pub fn in_flight(&self) -> u64 {
        self.taken.saturating_sub(self.delivered + self.failed)
    }

    /// The counts as the stats line and `/metrics` show them.
    pub fn delivery(&self) -> Delivery {
        Delivery {
            delivered: self.delivered,
            failed: self.failed,
            queued: self.closed.unwrap_or_else(|| self.in_flight()),
            refused: self.refused,
            retries: self.retries,
        }
    }

    /// True the first time an error of `kind` is reported: the reason's text
    /// changes at every attempt, its kind does not, so each is said once.
    pub fn first_error(&mut self, kind: String) -> bool {
        let first = !self.errors_seen.contains(&kind);
        if first {
            self.errors_seen.push(kind);
        }
        first
    }
}

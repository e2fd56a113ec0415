//! What a subcommand adds to a plain run ([`Hook`]): `ebq report io` folds
//! the query's rows into its report, runs queries of its own beside it and
//! is told how the run ended. The run loop ([`crate::run`]) drives a
//! [`Companion`] and knows nothing of what it is.

use crate::RunArgs;
use ebq::sink::Sink;
use ebq::{Engine, PreparedQuery, QueryStats, RunningQuery, Scope};
use std::time::Duration;

/// A run's additions, given before it starts (`RunArgs::hook`).
pub trait Hook: std::fmt::Debug {
    /// The kernel fold the query's rows go through instead of the ring
    /// buffer, if any ([`ebq::plan::PlanOptions::row_fold`]).
    fn row_fold(&self) -> Option<std::sync::Arc<ebq::plan::RowFold>>;

    /// Where the query's results go instead of the `--format`/`-o`/`--sink` outputs.
    fn sink(&self, args: &RunArgs) -> Result<Box<dyn Sink>, String>;

    /// Started with the query's scope, before the query starts and the
    /// traced command runs.
    fn start(&self, args: &RunArgs, engine: &Engine, scope: &Scope) -> Result<Box<dyn Companion>, String>;
}

/// What runs beside the query: announced with it, polled in its loop,
/// finished at its end (before the final results go to the sink).
pub trait Companion {
    /// Lines for stderr after the "ebq: tracing" line.
    fn announce(&self) -> Vec<String>;

    /// The longest the loop may wait for the query between polls, if less
    /// than its own 100 ms.
    fn poll_wait(&self) -> Option<Duration>;

    /// Takes what it has without waiting.
    fn poll(&mut self) -> Result<(), String>;

    /// The run ended; `end` is the query as it ended.
    fn finish(self: Box<Self>, end: Ended<'_>) -> Result<(), String>;
}

/// The query at the run's end, for [`Companion::finish`].
pub struct Ended<'a> {
    pub query: &'a RunningQuery,
    pub prepared: &'a PreparedQuery,
    /// Its text, for errors.
    pub sql: &'a str,
    pub stats: QueryStats,
    /// When the `-c` command was released (CLOCK_MONOTONIC ns).
    pub released_ns: Option<u64>,
    /// When the loop ended (the command's exit seen, Ctrl-C or the deadline).
    pub end_ns: u64,
}

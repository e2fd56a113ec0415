//! The report's part of a run loop ([`ReportRun`]): the MPI-IO and STDIO
//! queries started beside the report's query ([`live`](super::live)), polled
//! with it, and, when it ends, what only the loop knows handed to the report
//! ([`Options::shared`]): the kernel fold's maps, the query's accounting and
//! the traced command's start and end. The rows themselves go to
//! [`IoReport`](super::IoReport), whose `finish` then makes the [`Report`](super::Report).

use super::live::{Companions, MpiQueries, StdioQuery};
use super::{kernel_fold, process_start_ns, stdio, FoldMaps, Options, Shared};
use ebq::{Engine, PreparedQuery, QueryStats, RunningQuery, Scope};
use std::time::Duration;

/// The report's side of one run, from before its query starts to its end.
pub struct ReportRun {
    companions: Companions,
    shared: Shared,
    /// The MPI library probed (for the start line).
    mpi_library: Option<String>,
    /// A `-p` process's start (CLOCK_MONOTONIC ns), read while it runs.
    process_start: Option<u64>,
}

/// The report's query at its end, as the run loop has it.
pub struct Ended<'a> {
    pub query: &'a RunningQuery,
    pub prepared: &'a PreparedQuery,
    /// Its text, for errors.
    pub sql: &'a str,
    pub stats: QueryStats,
    /// When the traced command was released (CLOCK_MONOTONIC ns): `-c`'s
    /// held child; `None` for `-p` (its process's own start counts) and
    /// system-wide runs.
    pub released_ns: Option<u64>,
    /// When the loop ended (the command's exit seen, Ctrl-C or the deadline).
    pub end_ns: u64,
}

impl ReportRun {
    /// Starts the MPI-IO queries (`--mpi`, or the launcher's library when
    /// `command` is an MPI launcher) and the STDIO query (`--stdio`) in
    /// `scope`: call it before the report's query starts and the command
    /// runs. `pid` is `-p`'s process, whose start the report's times count from.
    pub fn start(
        engine: &Engine,
        options: &Options,
        command: Option<&str>,
        pid: Option<u32>,
        scope: &Scope,
    ) -> Result<ReportRun, String> {
        // The report's query may fold in the kernel (the engine's `row_fold`); its companions stream rows.
        let engine =
            &engine.clone().with_options(ebq::plan::PlanOptions { row_fold: None, ..engine.options().clone() });
        let mpi_library = options.mpi_library(command).map(str::to_string);
        let mpi = match &mpi_library {
            Some(lib) => MpiQueries::start(engine, lib, scope, options.mpi.is_some())?,
            None => None,
        };
        let stdio = match options.stdio {
            true => Some(StdioQuery::start(engine, scope)?),
            false => None,
        };
        Ok(ReportRun {
            companions: Companions { mpi, stdio },
            shared: options.shared.clone(),
            mpi_library,
            process_start: pid.and_then(process_start_ns),
        })
    }

    /// The start line's additions: the MPI-IO and stdio functions probed.
    pub fn announce(&self) -> Vec<String> {
        let mut lines = vec![];
        if let (Some(m), Some(lib)) = (&self.companions.mpi, &self.mpi_library) {
            lines.push(format!("ebq: and {} MPI-IO functions of {lib} ({})", m.len(), m.how()));
        }
        if self.companions.stdio.is_some() {
            lines.push(format!(
                "ebq: and {} stdio functions of {} (uprobe JOIN uretprobe over the list)",
                stdio::FUNCS.len(),
                stdio::LIBRARY
            ));
        }
        lines
    }

    /// The longest the loop may wait for the report's query between polls:
    /// MPI-IO rows are looked at within 10 ms (a rank's environment, its
    /// rank, and with Open MPI its memory, are read from /proc at its first
    /// call, while the process still runs); STDIO rows are taken within
    /// 10 ms too, as the loop's own query may stream nothing to wake it (the
    /// kernel fold): at the 100 ms default, 300,000 `fwrite`/`fread` calls in
    /// 2 s filled the STDIO query's ring and 5,099 rows were dropped.
    pub fn poll_wait(&self) -> Option<Duration> {
        self.companions.any().then_some(Duration::from_millis(10))
    }

    /// Takes what the MPI-IO and STDIO queries have, without waiting.
    pub fn poll(&mut self) -> Result<(), String> {
        if self.companions.any() {
            self.companions.poll()?;
        }
        Ok(())
    }

    /// The run ended: hands the report (through [`Options::shared`]) the
    /// command's times, the kernel fold's maps and the query's accounting,
    /// and stops the MPI-IO and STDIO queries, handing it what they saw.
    /// [`IoReport::finish`](super::IoReport::finish) reads it all.
    pub fn finish(self, end: Ended<'_>) -> Result<(), String> {
        let fold_maps = match &end.prepared.physical.programs[0].output {
            ebq::plan::KernelOutput::Rows { fold: Some(_), .. } => {
                let read = |name: &str| end.query.fold_map(name).map_err(|e| e.render(end.sql));
                let fdopens = match self.companions.stdio.is_some() {
                    true => Some(read(kernel_fold::FDOPENS_MAP)?),
                    false => None,
                };
                Some(FoldMaps { files: read(kernel_fold::FILES_MAP)?, totals: read(kernel_fold::TOTALS_MAP)?, fdopens })
            }
            _ => None,
        };
        let mut shared = self.shared.lock().expect("not poisoned");
        shared.command_ns = end.released_ns.or(self.process_start).map(|start| (start, end.end_ns));
        shared.fold_maps = fold_maps;
        shared.posix_stats = Some(end.stats);
        drop(shared);
        self.companions.finish(&self.shared)
    }
}

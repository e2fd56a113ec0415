//! The MPI-IO queries of `ebq report io`, running next to its POSIX query:
//! one ebq JOIN per `MPI_File_*` function the library has ([`super::mpi::sql`]),
//! started with the POSIX query's scope before the child is released, polled
//! in the same loop, and their calls and accounting handed to the report.

use super::mpi::{self, Call, Func};
use super::Shared;
use ebq::sink::rows;
use ebq::{Engine, RunningQuery, Scope};
use std::collections::HashMap;
use std::time::Duration;

/// The environment variables that give a process's MPI rank (MPICH's hydra,
/// Open MPI, PMIx).
const RANK_VARS: [&str; 3] = ["PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"];

/// A process's MPI rank from `/proc/PID/environ`, if it is still there and has one.
pub fn rank_of(pid: u32) -> Option<u32> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    env.split(|b| *b == 0).find_map(|kv| {
        let kv = std::str::from_utf8(kv).ok()?;
        let (k, v) = kv.split_once('=')?;
        RANK_VARS.contains(&k).then(|| v.parse().ok()).flatten()
    })
}

/// The running MPI-IO queries.
pub struct MpiQueries {
    queries: Vec<(Func, String, RunningQuery)>,
    calls: Vec<Call>,
    ranks: HashMap<u32, u32>,
    /// Pids whose environment was read (with or without a rank).
    asked: std::collections::HashSet<u32>,
}

impl MpiQueries {
    /// Starts one query per function of `lib` that the library has. When it
    /// has none (or there is no such library): an error if `--mpi LIB` asked
    /// for it (`explicit`), else a note on stderr and no MPI-IO.
    pub fn start(engine: &Engine, lib: &str, scope: &Scope, explicit: bool) -> Result<Option<MpiQueries>, String> {
        let mut queries = vec![];
        let mut first_error = None;
        for func in mpi::FUNCS {
            let sql = mpi::sql(lib, &func);
            // A library without this function is not an error for the report:
            // the functions it has are probed.
            let prepared = match engine.prepare(&sql) {
                Ok(p) => p,
                Err(e) => {
                    first_error.get_or_insert_with(|| e.render(&sql));
                    continue;
                }
            };
            let running =
                prepared.start(scope.clone()).map_err(|e| format!("error: --mpi {lib}: {}", e.render(&sql)))?;
            queries.push((func, sql, running));
        }
        if queries.is_empty() {
            let why = first_error.unwrap_or_default();
            if explicit {
                return Err(format!(
                    "error: --mpi {lib}: no MPI_File_* function can be probed; binding the first said:\n{why}"
                ));
            }
            eprintln!("ebq: no MPI-IO report: {lib} has no MPI_File_* function to probe (or is not installed)");
            return Ok(None);
        }
        Ok(Some(MpiQueries { queries, calls: vec![], ranks: HashMap::new(), asked: Default::default() }))
    }

    /// Functions probed.
    pub fn len(&self) -> usize {
        self.queries.len()
    }

    fn take(&mut self, func: Func, outs: Vec<ebq::Output>) {
        for o in outs {
            for r in rows(&o.batch) {
                let c = mpi::call(&func, &r);
                // Read the rank while the process is alive: its first MPI-IO call.
                if self.asked.insert(c.pid) {
                    if let Some(rank) = rank_of(c.pid) {
                        self.ranks.insert(c.pid, rank);
                    }
                }
                self.calls.push(c);
            }
        }
    }

    /// Takes what every query has without waiting.
    pub fn poll(&mut self) -> Result<(), String> {
        let mut got = vec![];
        for (func, sql, q) in &mut self.queries {
            got.push((*func, q.poll(Duration::ZERO).map_err(|e| e.render(sql))?));
        }
        for (f, outs) in got {
            self.take(f, outs);
        }
        Ok(())
    }

    /// Stops every query and hands the calls, ranks and summed accounting to the report.
    pub fn finish(mut self, shared: &Shared) -> Result<(), String> {
        let mut stats = ebq::runtime::QueryStats::default();
        let mut got = vec![];
        for (func, sql, q) in &mut self.queries {
            got.push((*func, q.finish().map_err(|e| e.render(sql))?));
            let s = q.stats().map_err(|e| e.render(sql))?;
            stats.seen += s.seen;
            stats.matched += s.matched;
            stats.delivered += s.delivered;
            stats.dropped += s.dropped;
            stats.missed += s.missed;
            stats.missed_starts += s.missed_starts;
            stats.open_pairs += s.open_pairs;
            stats.unmatched += s.unmatched;
            stats.pending_full += s.pending_full;
            stats.superseded += s.superseded;
            stats.evicted += s.evicted;
            stats.missed_tracking += s.missed_tracking;
            stats.untracked += s.untracked;
        }
        for (f, outs) in got {
            self.take(f, outs);
        }
        let mut s = shared.lock().expect("not poisoned");
        s.mpi_calls = std::mem::take(&mut self.calls);
        s.ranks = std::mem::take(&mut self.ranks);
        s.mpi_stats = Some(stats);
        s.mpi_functions = self.queries.len();
        Ok(())
    }
}

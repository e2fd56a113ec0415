//! The MPI-IO queries of `ebq report io`, running next to its POSIX query:
//! one ebq JOIN over the `MPI_File_*` functions the library has ([`super::mpi::sql`]),
//! started with the POSIX query's scope before the child is released, polled
//! in the same loop, and their calls and accounting handed to the report.

use super::mpi::{self, Abi, Call, Func};
use super::Shared;
use ebq::sink::rows;
use ebq::{Engine, RunningQuery, Scope};
use std::collections::HashMap;
use std::time::Duration;

use super::mpi::{RANK_VARS, SIZE_VARS};

/// A process's MPI rank from `/proc/PID/environ`, if it is still there and has one.
pub fn rank_of(pid: u32) -> Option<u32> {
    env_number(pid, &RANK_VARS)
}

/// The first of `vars` set to a number in `/proc/PID/environ`.
fn env_number(pid: u32, vars: &[&str]) -> Option<u32> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    env.split(|b| *b == 0).find_map(|kv| {
        let kv = std::str::from_utf8(kv).ok()?;
        let (k, v) = kv.split_once('=')?;
        vars.contains(&k).then(|| v.parse().ok()).flatten()
    })
}

/// The running MPI-IO queries: one over every function, or one per function.
pub struct MpiQueries {
    queries: Vec<(Vec<Func>, String, RunningQuery)>,
    functions: usize,
    /// The library's handles.
    abi: Abi,
    calls: Vec<Call>,
    ranks: HashMap<u32, u32>,
    /// The job's size its processes' environments give (0: none did).
    job_size: u32,
    /// MPICH: the library's `PMPI_Type_size_x` calls (derived datatypes' sizes).
    type_sizes: Vec<mpi::TypeSize>,
    /// Pids whose environment was read (at a process's first MPI-IO call,
    /// while it runs), with or without a rank.
    asked: std::collections::HashSet<u32>,
}

impl MpiQueries {
    /// Starts the query over the functions of `lib` that the library has
    /// (one uprobe_multi link each way; on a kernel without them, one query
    /// per function). When it has none (or there is no such library): an
    /// error if `--mpi LIB` asked for it (`explicit`), else a note on stderr
    /// and no MPI-IO.
    pub fn start(engine: &Engine, lib: &str, scope: &Scope, explicit: bool) -> Result<Option<MpiQueries>, String> {
        let kernel = engine.catalog().kernel();
        let library = kernel.resolve_binary(lib).ok().and_then(|p| std::fs::canonicalize(p).ok());
        // MPICH's handles are integers; any other library is asked whether it is Open MPI
        // (MPICH's 41 MB library is not read for it).
        let mut abi = match &library {
            Some(p) if !p.to_string_lossy().contains("mpich") => {
                Abi::of(&kernel.data_symbols(p, &mpi::OPEN_MPI_SYMBOLS).unwrap_or_default())
            }
            _ => Abi::Mpich,
        };
        if let (Abi::OpenMpi(layout), Some(p)) = (&mut abi, &library) {
            // Where the uprobes of the open and set_view are in the file (their `ip` less it is the load bias).
            if let [Ok(open), Ok(set_view)] = &kernel.find_symbols(p, &["MPI_File_open", "MPI_File_set_view"])[..] {
                layout.functions = Some([open.address, set_view.address]);
            }
        }
        if let Abi::OpenMpi(mpi::OpenMpiLayout { size_offset: None, .. }) = &abi {
            eprintln!("ebq: {lib} is Open MPI, but its datatypes' size field was not found: MPI-IO bytes are unknown");
        }
        // Bind every function at once (the library's symbols are read once); only when one is
        // missing, find which the library has.
        let wanted = mpi::probed(&abi);
        let all = engine.prepare(&mpi::sql(lib, &wanted, &abi));
        let found: Vec<Func> = match (&all, kernel.resolve_binary(lib)) {
            (Ok(_), _) => wanted.clone(),
            (Err(_), Ok(path)) => {
                let names: Vec<&str> = wanted.iter().map(|f| f.name).collect();
                let found = kernel.find_symbols(&path, &names);
                wanted.iter().zip(found).filter(|(_, s)| s.is_ok()).map(|(f, _)| *f).collect()
            }
            (Err(_), Err(_)) => vec![],
        };
        if !found.iter().any(|f| f.kind != mpi::Kind::TypeSize) {
            // Bind one function's query for the binder's own words (no file, no such function).
            let sql = mpi::sql(lib, &mpi::FUNCS[..1], &abi);
            let why = engine.prepare(&sql).err().map(|e| e.render(&sql)).unwrap_or_default();
            if explicit {
                return Err(format!(
                    "error: --mpi {lib}: no MPI_File_* function can be probed; binding the first said:\n{why}"
                ));
            }
            eprintln!("ebq: no MPI-IO report: {lib} has no MPI_File_* function to probe (or is not installed)");
            return Ok(None);
        }
        let mut all = all.ok();
        let mut start = |funcs: &[Func]| -> Result<(Vec<Func>, String, RunningQuery), String> {
            let sql = mpi::sql(lib, funcs, &abi);
            let prepared = match all.take().filter(|_| funcs.len() == wanted.len()) {
                Some(p) => Ok(p),
                None => engine.prepare(&sql),
            };
            let running = prepared.and_then(|p| RunningQuery::start(&p, scope.clone()));
            running
                .map(|r| (funcs.to_vec(), sql.clone(), r))
                .map_err(|e| format!("error: --mpi {lib}: {}", e.render(&sql)))
        };
        let queries = match start(&found) {
            Ok(q) => vec![q],
            // One link per function where the kernel has no uprobe_multi (before 6.6).
            Err(e) if found.len() > 1 => {
                eprintln!("ebq: {e}\nebq: probing each MPI_File_* function with a query of its own instead");
                found.iter().map(|f| start(std::slice::from_ref(f))).collect::<Result<_, _>>()?
            }
            Err(e) => return Err(e),
        };
        Ok(Some(MpiQueries::new(queries, &found, abi, scope)))
    }

    /// The running `queries` over `found`; a process named by -p runs now, so
    /// its rank is read before it can exit (its rows are read at a poll, which
    /// may come after a short rank's exit: seen under load).
    fn new(queries: Vec<(Vec<Func>, String, RunningQuery)>, found: &[Func], abi: Abi, scope: &Scope) -> MpiQueries {
        let mut mpi = MpiQueries {
            queries,
            // The MPI_File_* functions (PMPI_Type_size_x, probed beside them, is no file operation).
            functions: found.iter().filter(|f| f.kind != mpi::Kind::TypeSize).count(),
            type_sizes: vec![],
            abi,
            calls: vec![],
            ranks: HashMap::new(),
            job_size: 0,
            asked: Default::default(),
        };
        if let Scope::Process(pid) = scope {
            mpi.read_environment(*pid);
        }
        mpi
    }

    /// Reads process `pid`'s rank and the job's size from its environment.
    fn read_environment(&mut self, pid: u32) {
        if let Some(rank) = rank_of(pid) {
            self.ranks.insert(pid, rank);
        }
        self.job_size = self.job_size.max(env_number(pid, &SIZE_VARS).unwrap_or(0));
    }

    /// Functions probed.
    pub fn len(&self) -> usize {
        self.functions
    }

    /// No function probed.
    pub fn is_empty(&self) -> bool {
        self.functions == 0
    }

    /// How they are probed, for the start line.
    pub fn how(&self) -> String {
        let how = if self.queries.len() == 1 && self.functions > 1 {
            "one uprobe JOIN uretprobe over the list, a uprobe_multi link each"
        } else {
            "uprobe JOIN uretprobe each"
        };
        match self.abi {
            Abi::Mpich => format!("{how}; with PMPI_Type_size_x, for derived datatypes' sizes"),
            Abi::OpenMpi(_) => how.to_string(),
        }
    }

    fn take(&mut self, funcs: &[Func], outs: Vec<ebq::Output>) {
        for o in outs {
            for r in rows(&o.batch) {
                if let Some(t) = mpi::type_size(funcs, &r) {
                    self.type_sizes.push(t);
                    continue;
                }
                // The rank the kernel read at an open; else read it now, at the
                // process's first MPI-IO call, if the process is still there.
                let pid = mpi::pid(&r);
                let (rank, size) = mpi::rank_and_size(&r);
                if let Some(rank) = rank {
                    self.ranks.insert(pid, rank);
                }
                self.job_size = self.job_size.max(size.unwrap_or(0));
                if self.asked.insert(pid) && !self.ranks.contains_key(&pid) {
                    self.read_environment(pid);
                }
                self.calls.push(mpi::call(funcs, &self.abi, &r));
            }
        }
    }

    /// Takes what every query has without waiting.
    pub fn poll(&mut self) -> Result<(), String> {
        let mut got = vec![];
        for (funcs, sql, q) in &mut self.queries {
            got.push((funcs.clone(), q.poll(Duration::ZERO).map_err(|e| e.render(sql))?));
        }
        for (f, outs) in got {
            self.take(&f, outs);
        }
        Ok(())
    }

    /// Stops every query and hands the calls, ranks and summed accounting to the report.
    pub fn finish(mut self, shared: &Shared) -> Result<(), String> {
        let mut stats = ebq::runtime::QueryStats::default();
        let mut got = vec![];
        for (funcs, sql, q) in &mut self.queries {
            got.push((funcs.clone(), q.finish().map_err(|e| e.render(sql))?));
            stats.add_events(&q.stats().map_err(|e| e.render(sql))?);
        }
        for (f, outs) in got {
            self.take(&f, outs);
        }
        mpi::resolve_type_sizes(&mut self.calls, &self.type_sizes);
        // Say what could not be known.
        let no_rank = self.asked.iter().filter(|p| !self.ranks.contains_key(p)).count();
        if no_rank > 0 {
            eprintln!("ebq: MPI-IO: {no_rank} process(es) without a rank in their environment (gone, or not launched by an MPI launcher): numbered after the known ranks");
        }
        if let Abi::OpenMpi(mpi::OpenMpiLayout { functions: None, .. }) = &self.abi {
            eprintln!("ebq: MPI-IO: the library's MPI_File_open/MPI_File_set_view were not found: MPI_COMM_SELF and MPI_INFO_NULL are unknown, opens count as collective and infos as no hint");
        }
        let mut s = shared.lock().expect("not poisoned");
        s.mpi_calls = std::mem::take(&mut self.calls);
        s.ranks = std::mem::take(&mut self.ranks);
        s.mpi_job_size = self.job_size;
        s.mpi_stats = Some(stats);
        s.type_size_calls = self.type_sizes.len() as u64;
        s.mpi_functions = self.functions;
        Ok(())
    }
}

/// The STDIO query (`--stdio`): libc's stdio calls ([`super::stdio::sql`]),
/// started with the POSIX query's scope before the child is released and
/// polled in the same loop.
pub struct StdioQuery {
    sql: String,
    query: RunningQuery,
    /// The `fscanf` family's entries ([`super::stdio::entry_sql`]).
    entries_sql: String,
    entries_query: RunningQuery,
    calls: Vec<super::stdio::Call>,
    entries: Vec<super::stdio::Entry>,
    /// Where libc's standard streams are, from its file.
    layout: super::stdio::Layout,
}

impl StdioQuery {
    /// Starts the query; an error (with the binder's words) when libc's
    /// stdio functions cannot be probed.
    pub fn start(engine: &Engine, scope: &Scope) -> Result<StdioQuery, String> {
        let start = |sql: &str| {
            engine
                .prepare(sql)
                .and_then(|p| RunningQuery::start(&p, scope.clone()))
                .map_err(|e| format!("error: --stdio: {}", e.render(sql)))
        };
        let (sql, entries_sql) = (super::stdio::sql(), super::stdio::entry_sql());
        let (query, entries_query) = (start(&sql)?, start(&entries_sql)?);
        let layout = stdio_layout(engine);
        if layout.std.is_none() {
            eprintln!(
                "ebq: STDIO: libc's standard streams were not found: calls on stdin, stdout and stderr count nowhere"
            );
        }
        let (calls, entries) = (vec![], vec![]);
        Ok(StdioQuery { sql, query, entries_sql, entries_query, calls, entries, layout })
    }

    fn take(&mut self, outs: Vec<ebq::Output>, entries: Vec<ebq::Output>) {
        for o in outs {
            self.calls.extend(rows(&o.batch).filter_map(|r| super::stdio::call(&r, &self.layout)));
        }
        for o in entries {
            self.entries.extend(rows(&o.batch).map(|r| super::stdio::Entry::of(&r)));
        }
    }

    /// Takes what the queries have without waiting.
    pub fn poll(&mut self) -> Result<(), String> {
        let outs = self.query.poll(Duration::ZERO).map_err(|e| e.render(&self.sql))?;
        let entries = self.entries_query.poll(Duration::ZERO).map_err(|e| e.render(&self.entries_sql))?;
        self.take(outs, entries);
        Ok(())
    }

    /// Stops the queries and hands the calls (each `fscanf` with its
    /// position at entry) and their summed accounting to the report.
    pub fn finish(mut self, shared: &Shared) -> Result<(), String> {
        let outs = self.query.finish().map_err(|e| e.render(&self.sql))?;
        let entries = self.entries_query.finish().map_err(|e| e.render(&self.entries_sql))?;
        self.take(outs, entries);
        let mut stats = self.query.stats().map_err(|e| e.render(&self.sql))?;
        let entries = self.entries_query.stats().map_err(|e| e.render(&self.entries_sql))?;
        stats.add_events(&entries);
        self.calls.sort_by_key(|c| (c.start_ns, c.end_ns));
        super::stdio::positions_at_entry(&mut self.calls, &self.entries);
        let mut s = shared.lock().expect("not poisoned");
        s.stdio_calls = Some(std::mem::take(&mut self.calls));
        s.stdio_stats = Some(stats);
        Ok(())
    }
}

/// libc's probed functions and standard streams in its file ([`super::stdio::Layout`]).
fn stdio_layout(engine: &Engine) -> super::stdio::Layout {
    use super::stdio::{Layout, FUNCS, LIBRARY, STD_STREAMS};
    let kernel = engine.catalog().kernel();
    let Ok(path) = kernel.resolve_binary(LIBRARY) else { return Layout::default() };
    let names: Vec<&str> = FUNCS.iter().map(|(n, _)| *n).collect();
    let funcs = kernel.find_symbols(&path, &names).into_iter().map(|s| s.ok().map(|s| s.address)).collect();
    let std = match kernel.data_symbols(&path, &STD_STREAMS).unwrap_or_default()[..] {
        [Some(ref i), Some(ref o), Some(ref e)] => Some([i.address, o.address, e.address]),
        _ => None,
    };
    Layout { funcs, std }
}

/// The queries that run next to the report's POSIX query: MPI-IO's and STDIO's.
#[derive(Default)]
pub struct Companions {
    pub mpi: Option<MpiQueries>,
    pub stdio: Option<StdioQuery>,
}

impl Companions {
    /// Any query to poll.
    pub fn any(&self) -> bool {
        self.mpi.is_some() || self.stdio.is_some()
    }

    /// Takes what every query has without waiting.
    pub fn poll(&mut self) -> Result<(), String> {
        if let Some(m) = self.mpi.as_mut() {
            m.poll()?;
        }
        if let Some(s) = self.stdio.as_mut() {
            s.poll()?;
        }
        Ok(())
    }

    /// Stops them and hands what they saw to the report.
    pub fn finish(self, shared: &Shared) -> Result<(), String> {
        if let Some(m) = self.mpi {
            m.finish(shared)?;
        }
        if let Some(s) = self.stdio {
            s.finish(shared)?;
        }
        Ok(())
    }
}

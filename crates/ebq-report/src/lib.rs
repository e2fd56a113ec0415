//! `ebq report io`: Darshan's I/O characterization built from one ebq query.
//!
//! - [`query`]: the SQL (a union of kernel JOINs: system calls, opens,
//!   io_uring and AIO requests, one row per file operation; and the pages
//!   faults map in, io.ops' `mmap` path) and the row →
//!   [`Operation`] conversion; [`mounts`] names a system call's mount by id;
//! - [`posix`]: Darshan's POSIX counters folded from operations;
//!   [`kernel_fold`]: the same fold in the kernel (the default: the rows
//!   never leave it), its maps read back into the same records;
//! - [`mpi`]: Darshan's MPIIO counters from one uprobe JOIN per `MPI_File_*`
//!   function, per rank and per job (pure); [`live`] runs those queries next
//!   to the POSIX one, and [`run`] ([`ReportRun`]) is the report's part of a
//!   run loop: it starts them, polls them and hands the report what the loop
//!   knows at its end;
//! - [`terminal`]: the text and JSON reports;
//! - [`dxt`]: `--trace FILE.parquet`, one row per operation (Darshan's DXT);
//! - [`html`]: `--html FILE`, one self-contained page;
//! - [`darshan_log`]: `--darshan-log FILE`, a binary Darshan log (format
//!   3.41) that Darshan's tools (PyDarshan, Drishti) read; [`darshan_read`]
//!   reads one back and [`merge`] joins the logs of one job's nodes
//!   (`ebq report merge`) with Darshan's shared-file reduction.
//!
//! The fold takes [`Operation`]s tagged with their path ([`Via`]): every path
//! feeds the same Darshan counters, and ebq's own `EBQ_<PATH>_…` counters
//! break reads and writes down by path.

pub mod buckets;
pub mod darshan_log;
pub mod darshan_read;
mod darshan_records;
pub mod dxt;
pub mod fold_c;
pub mod html;
pub mod kernel_fold;
pub mod listing;
pub mod live;
pub mod merge;
pub mod mounts;
pub mod mpi;
pub mod posix;
pub mod query;
pub mod run;
pub mod stdio;
pub mod terminal;

use ebq::exec::monotonic_ns;
use ebq::host::SyscallTable;
use ebq::runtime::{FoldEntries, Output};
use ebq::sink::rows;
use std::collections::HashMap;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

pub use query::sql;
pub use run::{Ended, ReportRun};

/// What an operation did.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum OpKind {
    Open,
    Close,
    Read,
    Write,
    Seek,
    Fsync,
    Fdatasync,
    /// Pages a fault brought into a file mapping (a read or a store alike):
    /// no Darshan counter, only `EBQ_MMAP_*`.
    Map,
}

impl OpKind {
    /// The name in the trace and the HTML.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Open => "open",
            OpKind::Close => "close",
            OpKind::Read => "read",
            OpKind::Write => "write",
            OpKind::Seek => "seek",
            OpKind::Fsync => "fsync",
            OpKind::Fdatasync => "fdatasync",
            OpKind::Map => "map",
        }
    }
}

/// The kernel path an operation took.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Via {
    /// A system call (read, pwrite64, fsync, …).
    Syscall,
    /// An io_uring request (its submission and completion).
    IoUring,
    /// An AIO (`io_submit`) read or write, seen as the file system's direct I/O.
    Aio,
    /// Pages faults brought into a file mapping (`mmap`): io.ops' `mmap`
    /// path (a filemap fault's page, fault-around's pages, a large folio
    /// mapped whole).
    Mmap,
}

impl Via {
    /// Every path, in report order.
    pub const ALL: [Via; 4] = [Via::Syscall, Via::IoUring, Via::Aio, Via::Mmap];

    /// The `path` column of the report's SQL ([`query::sql`]) for this path,
    /// which the kernel fold's C compares too (`EBQ_FOLD_PATH_*`, [`fold_c`]).
    pub fn code(self) -> u64 {
        match self {
            Via::Syscall => 0,
            Via::IoUring => 2,
            Via::Aio => 3,
            Via::Mmap => 4,
        }
    }

    /// The path whose [`Via::code`] is `code`.
    pub fn of_code(code: u64) -> Option<Via> {
        Via::ALL.into_iter().find(|v| v.code() == code)
    }

    /// The name in the trace, the HTML and the per-path counters (`EBQ_IO_URING_READS`).
    pub fn name(self) -> &'static str {
        match self {
            Via::Syscall => "syscall",
            Via::IoUring => "io_uring",
            Via::Aio => "aio",
            Via::Mmap => "mmap",
        }
    }
}

/// A file: its file system's device and its inode.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Hash)]
pub struct FileKey {
    pub dev_major: u32,
    pub dev_minor: u32,
    pub inode: u64,
}

impl FileKey {
    /// The file `inode` on the kernel's `dev_t` `dev` (`major << 20 | minor`).
    pub fn of_kernel_dev(dev: u32, inode: u64) -> FileKey {
        FileKey { dev_major: dev >> 20, dev_minor: dev & 0xf_ffff, inode }
    }
}

/// One I/O operation on a file, whatever path it took through the kernel.
#[derive(Clone, Debug)]
pub struct Operation {
    /// The best name known for the file (today the last path component).
    pub path: String,
    pub op: OpKind,
    /// The kernel path it took.
    pub via: Via,
    pub pid: u32,
    /// The thread that made the call (0 for requests and faults): a system
    /// call inside a stdio call of its thread is libc's ([`stdio::Calls`]).
    pub tid: u32,
    /// The MPI rank, when known.
    pub rank: Option<u32>,
    pub file: FileKey,
    pub fs_type: String,
    pub mount_point: String,
    /// Where a read or write starts (0 for other operations).
    pub offset: i64,
    /// The call gave its offset (pread, pwrite, aio, io_uring) rather than
    /// using the file position (read, write).
    pub positioned: bool,
    /// Bytes asked for (reads and writes).
    pub asked: u64,
    /// Bytes returned, a new offset or fd, or -errno.
    pub result: i64,
    /// The user buffer's address (reads and writes), for memory alignment.
    pub mem: Option<u64>,
    /// CLOCK_MONOTONIC ns at entry and exit.
    pub start_ns: u64,
    pub end_ns: u64,
}

/// What `ebq report io` writes besides the report on stdout.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// One JSON document instead of text.
    pub json: bool,
    /// Only the N busiest files in the text report.
    pub top: Option<usize>,
    /// The DXT-style trace (Parquet).
    pub trace: Option<PathBuf>,
    /// The HTML report.
    pub html: Option<PathBuf>,
    /// The binary Darshan log (`--darshan-log FILE`).
    pub darshan_log: Option<PathBuf>,
    /// The job id the Darshan log records (`--job-id`; else `SLURM_JOB_ID` or `PBS_JOBID`).
    pub job_id: Option<i64>,
    /// What was traced (the `-c` command line), the Darshan log's executable line.
    pub command: Option<String>,
    /// The Darshan config's `NAME_EXCLUDE`/`NAME_INCLUDE` rules (`--darshan-config FILE`, [`listing`]).
    pub darshan_config: listing::DarshanConfig,
    /// The MPI library to probe (`--mpi LIB`, `none` for no MPI-IO; see [`Options::mpi_library`]).
    pub mpi: Option<String>,
    /// `--stdio`: probe libc's stdio calls for Darshan's STDIO module ([`stdio`]).
    pub stdio: bool,
    /// What [`ReportRun`] hands the report besides the POSIX rows.
    pub shared: Shared,
    /// The traced kernel's system call numbers (its catalog's `KernelInfo`):
    /// the query picks calls by number, the fold and the decoder name them.
    pub syscalls: SyscallTable,
}

impl Options {
    /// The MPI library to probe, if any: `--mpi LIB` (`none`: none), else the
    /// library of the MPI launcher the command (`-c`) runs
    /// ([`launcher_library`]). Probing is not free (binding, loading and
    /// detaching the uprobes took about 0.1 s), so a report of a program that
    /// is not an MPI job does not pay for it unless asked.
    pub fn mpi_library(&self, command: Option<&str>) -> Option<&str> {
        match self.mpi.as_deref() {
            Some("none") => None,
            Some(lib) => Some(lib),
            None => launcher_library(command?.split_whitespace().next()?),
        }
    }

    /// The report folds its operations into Darshan's records in the kernel
    /// ([`kernel_fold`]) unless something needs each operation in user space:
    /// the trace and the HTML page (one row, one dot per operation) and the
    /// MPI-IO fold (which attributes POSIX operations to MPI calls). With
    /// `--stdio`, the kernel fold keeps the stdio mark (a per-thread depth of
    /// stdio calls, [`query::sql_for_kernel_fold`]); when the operations are
    /// streamed, user space leaves out the calls inside stdio calls by thread
    /// and time instead ([`stdio::Calls`]).
    pub fn kernel_fold(&self, command: Option<&str>) -> Option<std::sync::Arc<ebq::plan::RowFold>> {
        self.folds_in_kernel(command).then(|| {
            let mut maps = vec![kernel_fold::FILES_MAP.into(), kernel_fold::TOTALS_MAP.into()];
            if self.stdio {
                maps.push(kernel_fold::FDOPENS_MAP.into());
            }
            std::sync::Arc::new(ebq::plan::RowFold {
                name: "Darshan's POSIX records per file".into(),
                source: kernel_fold::source(&self.syscalls, self.stdio),
                maps,
            })
        })
    }

    /// The report's query: [`query::sql_for_kernel_fold`] when it folds in
    /// the kernel ([`Options::kernel_fold`]; with the stdio mark's branches
    /// under `--stdio`), else [`query::sql`], whose rows are streamed.
    pub fn sql(&self, command: Option<&str>) -> String {
        match self.folds_in_kernel(command) {
            true => query::sql_for_kernel_fold(&self.syscalls, self.stdio),
            false => query::sql(&self.syscalls),
        }
    }

    /// Whether the report folds in the kernel ([`Options::kernel_fold`]):
    /// no trace, no HTML page, no MPI library to probe.
    fn folds_in_kernel(&self, command: Option<&str>) -> bool {
        self.trace.is_none() && self.html.is_none() && self.mpi_library(command).is_none()
    }
}

/// The MPI library the jobs of launcher `argv0` use: Open MPI's `libmpi` for
/// its launchers (`mpirun.openmpi`, `orterun`, `prterun`), MPICH's
/// `libmpich` for hydra's and `srun`; plain `mpirun`/`mpiexec` are whichever
/// the file they name is (Debian's alternatives link them to one of the
/// above), MPICH when that cannot be told.
pub fn launcher_library(argv0: &str) -> Option<&'static str> {
    let by_name = |name: &str| match name {
        "mpirun.openmpi" | "mpiexec.openmpi" | "orterun" | "prterun" => Some("libmpi"),
        "mpirun.mpich" | "mpiexec.mpich" | "mpiexec.hydra" | "srun" => Some("libmpich"),
        _ => None,
    };
    let name = argv0.rsplit('/').next()?;
    by_name(name).or_else(|| {
        matches!(name, "mpirun" | "mpiexec").then(|| {
            let file = match argv0.contains('/') {
                true => Some(PathBuf::from(argv0)),
                false => std::env::var_os("PATH")
                    .and_then(|path| std::env::split_paths(&path).map(|d| d.join(argv0)).find(|p| p.exists())),
            };
            let real = file.and_then(|f| std::fs::canonicalize(f).ok());
            real.and_then(|r| by_name(r.file_name()?.to_str()?)).unwrap_or("libmpich")
        })
    })
}

/// Filled by [`ReportRun`] before the report is written: the MPI-IO calls and
/// ranks, and each query's event accounting.
#[derive(Debug, Default)]
pub struct SharedState {
    pub mpi_calls: Vec<mpi::Call>,
    /// pid → rank, from the processes' environments.
    pub ranks: HashMap<u32, u32>,
    /// The MPI job's number of ranks, from the processes' environments (0:
    /// unknown); more than the processes traced when `-p` watches one node's.
    pub mpi_job_size: u32,
    /// MPI functions probed.
    pub mpi_functions: usize,
    pub posix_stats: Option<ebq::QueryStats>,
    /// Summed over the MPI-IO queries.
    pub mpi_stats: Option<ebq::QueryStats>,
    /// The stdio calls, when libc's stdio functions were probed (`--stdio`).
    pub stdio_calls: Option<Vec<stdio::Call>>,
    pub stdio_stats: Option<ebq::QueryStats>,
    /// `PMPI_Type_size_x` calls seen (MPICH; rows of the MPI-IO query that are no file's calls).
    pub type_size_calls: u64,
    /// The traced command's start and end (CLOCK_MONOTONIC ns), when the run
    /// loop knows them: `-c`, from the held child's release (its exec) to its
    /// exit seen; `-p`, from the process's start ([`process_start_ns`]) to its
    /// end seen. The report's wall time and timestamps are the command's, not
    /// ebq's (issue 37 item 4: ebq's start-up is no part of the job).
    pub command_ns: Option<(u64, u64)>,
    /// The kernel fold's maps after the run ([`Options::kernel_fold`]): the
    /// files' records and the totals, as `RunningQuery::fold_map` read them.
    pub fold_maps: Option<FoldMaps>,
}

/// What the kernel fold left: `ebq_fold_files` and `ebq_fold_totals`.
#[derive(Debug, Default)]
pub struct FoldMaps {
    pub files: FoldEntries,
    pub totals: FoldEntries,
    /// `ebq_fold_fdopens`, with the stdio mark (`--stdio`).
    pub fdopens: Option<FoldEntries>,
}

/// Column `i` of a row the report's queries return, as an integer's 64 bits
/// (a signed value's two's complement: -1 is `u64::MAX`); `None` where the
/// row has no integer there.
pub(crate) fn int_at(r: &[ebq::runtime::Value], i: usize) -> Option<u64> {
    match r.get(i) {
        Some(ebq::runtime::Value::U(x)) => Some(*x),
        Some(ebq::runtime::Value::I(x)) => Some(*x as u64),
        _ => None,
    }
}

/// When process `pid` started, in CLOCK_MONOTONIC ns: `/proc/PID/stat`'s
/// start time (clock ticks since boot, CLOCK_BOOTTIME) less the time the
/// machine spent suspended (BOOTTIME − MONOTONIC now). `None` if it is gone.
pub fn process_start_ns(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command (which may hold spaces and parentheses): state is field 3, start time 22.
    let ticks: u64 = stat.rsplit_once(')')?.1.split_whitespace().nth(19)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    let clock = ebq::exec::clock::clock_ns;
    let suspended = u64::try_from(clock(libc::CLOCK_BOOTTIME) - clock(libc::CLOCK_MONOTONIC)).unwrap_or(0);
    Some((ticks * 1_000_000_000 / hz).saturating_sub(suspended))
}

/// [`SharedState`] between the run loop and the report (its sink).
pub type Shared = Arc<Mutex<SharedState>>;

/// A file system's block size, as Darshan reads it (`statfs` f_bsize of the mount point); -1 if unknown.
fn block_size(mount_point: &str) -> i64 {
    let Ok(path) = std::ffi::CString::new(mount_point) else { return -1 };
    // SAFETY: statfs fills the zeroed struct; the path is NUL-terminated.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(path.as_ptr(), &mut s) } != 0 {
        return -1;
    }
    s.f_bsize as i64
}

/// Collects the query's rows ([`IoReport::push`]) and folds them into a
/// [`Report`] when the run ends ([`IoReport::finish`]). The run loop (the
/// CLI's, or a program's own) starts the query with [`sql`] beside a
/// [`ReportRun`], which fills [`Options::shared`] with what only the loop
/// knows (the kernel fold's maps, the MPI-IO calls, the event accounting)
/// before `finish` is called. The [`Report`] then writes itself to any
/// [`Write`]: text, JSON, HTML, the DXT trace, the Darshan log.
pub struct IoReport {
    ops: Vec<Operation>,
    /// AIO requests `io_submit` calls submitted ([`query::Decoder::submitted`]).
    aio_submitted: u64,
    options: Options,
    decoder: query::Decoder,
    /// CLOCK_MONOTONIC when the report was made (before the query starts):
    /// timestamps are seconds since then, as Darshan's are since the job's start.
    origin_ns: u64,
}

impl IoReport {
    /// A report with these options.
    pub fn new(options: Options) -> IoReport {
        let decoder = query::Decoder::new(&options.syscalls);
        IoReport { ops: vec![], aio_submitted: 0, options, decoder, origin_ns: monotonic_ns() }
    }

    /// The options the report was made with.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Takes one output of the report's query ([`sql`]).
    pub fn push(&mut self, out: &Output) {
        for r in rows(&out.batch) {
            match self.decoder.submitted(&r) {
                Some(n) => self.aio_submitted += n,
                None => self.ops.extend(self.decoder.operation(&r)),
            }
        }
    }

    /// Folds what the query returned (or the kernel fold's maps) into the report.
    pub fn finish(&mut self) -> Report {
        // Ring buffer records arrive per CPU: order them in time before tracking offsets.
        self.ops.sort_by_key(|o| (o.start_ns, o.end_ns));
        let mut end_ns = monotonic_ns();
        let mut shared = self.options.shared.lock().expect("not poisoned");
        if let Some((start, end)) = shared.command_ns {
            (self.origin_ns, end_ns) = (start, end);
        }
        let mut stdio_calls = shared.stdio_calls.take();
        if let Some(calls) = stdio_calls.as_mut() {
            calls.sort_by_key(|c| (c.start_ns, c.end_ns));
        }
        let maps = shared.fold_maps.take();
        // Streamed: the system calls libc made inside stdio calls leave POSIX before its fold (the
        // kernel fold's stdio mark left them out there).
        let mut inside_stdio = match (&stdio_calls, &maps) {
            (Some(calls), None) => stdio::Calls::new(calls).exclude(&mut self.ops) as u64,
            _ => 0,
        };
        let (in_kernel, mut fdopens) = (maps.is_some(), vec![]);
        // Folded in the kernel: the records and the counts come from its maps, no operation was streamed.
        let mut past_files = 0;
        let (fold, operations, aio) = match maps {
            Some(maps) => {
                let files = single_values(maps.files);
                let totals = kernel_fold::totals(&maps.totals.into_iter().flat_map(|(_, v)| v).collect::<Vec<_>>());
                inside_stdio = totals.inside_stdio;
                past_files = totals.past_files;
                fdopens = kernel_fold::fdopens(&single_values(maps.fdopens.unwrap_or_default()));
                let aio = terminal::AioCount { submitted: totals.aio_submitted, counted: totals.aio_counted };
                (kernel_fold::records(&files, self.decoder.mounts(), &mut block_size), totals.operations as usize, aio)
            }
            None => {
                let aio = terminal::AioCount {
                    submitted: self.aio_submitted,
                    counted: self.ops.iter().filter(|o| o.via == Via::Aio).count() as u64,
                };
                // Operations are calls and requests; a mapping's pages count in EBQ_MMAP_* alone.
                let calls = self.ops.iter().filter(|o| o.op != OpKind::Map).count();
                (posix::fold(&self.ops, &mut block_size), calls, aio)
            }
        };
        let stdio = stdio_calls.map(|calls| {
            let descriptors = match in_kernel {
                true => stdio::Descriptors::Kernel { fdopens: &fdopens, records: &fold.files },
                false => stdio::Descriptors::Operations(&self.ops),
            };
            stdio::Fold { inside_calls: inside_stdio, ..stdio::fold(&calls, &descriptors) }
        });
        let mpi = (shared.mpi_functions > 0).then(|| mpi::Fold {
            type_size_calls: shared.type_size_calls,
            ..mpi::fold(&shared.mpi_calls, &self.ops, &shared.ranks, shared.mpi_job_size as usize)
        });
        if let Some(m) = &mpi {
            for o in &mut self.ops {
                o.rank = m.pids.get(&o.pid).copied();
            }
        }
        let stats: Vec<(&'static str, ebq::QueryStats)> =
            [("posix", shared.posix_stats), ("mpiio", shared.mpi_stats), ("stdio", shared.stdio_stats)]
                .into_iter()
                .filter_map(|(k, s)| Some((k, s?)))
                .collect();
        drop(shared);
        // What Darshan would not list goes (its operations too: the trace and the page are the listed files').
        let mut fold = fold;
        let listing = self.listing();
        let not_listed = listing::apply(&mut fold, &listing);
        let mut stdio = stdio;
        if let Some(s) = stdio.as_mut() {
            s.files.retain(|path, _| !listing.path_excluded(path));
        }
        self.ops.retain(|o| fold.files.contains_key(&o.file));
        let job = terminal::Job { origin_ns: self.origin_ns, end_ns, operations, stats, aio, not_listed, past_files };
        Report { job, fold, mpi, stdio, ops: std::mem::take(&mut self.ops) }
    }

    /// What decides the listing: `DARSHAN_EXCLUDE_DIRS`, the Darshan config, the report's outputs.
    fn listing(&self) -> listing::Listing {
        let o = &self.options;
        let outputs: Vec<PathBuf> = [&o.html, &o.trace, &o.darshan_log].into_iter().flatten().cloned().collect();
        let dirs = std::env::var("DARSHAN_EXCLUDE_DIRS").ok();
        listing::Listing::new(dirs.as_deref(), o.darshan_config.clone(), &outputs)
    }
}

/// A hash map's entries as `RunningQuery::fold_map` reads them (one value
/// per key, not per CPU) as (key, value).
fn single_values(entries: FoldEntries) -> Vec<(Vec<u8>, Vec<u8>)> {
    entries.into_iter().filter_map(|(k, mut v)| Some((k, v.drain(..).next()?))).collect()
}

/// A finished I/O report: Darshan's records and the run they came from.
pub struct Report {
    /// The run: its times, operation count, event accounting.
    pub job: terminal::Job,
    /// The POSIX records per file and per file system.
    pub fold: posix::Fold,
    /// The MPI-IO records, when MPI functions were probed.
    pub mpi: Option<mpi::Fold>,
    /// The STDIO records, when libc's stdio functions were probed (`--stdio`).
    pub stdio: Option<stdio::Fold>,
    /// Every operation, in time order (empty when folded in the kernel).
    pub ops: Vec<Operation>,
}

impl Report {
    /// The JSON document (`ebq report io --format json`).
    pub fn write_json(&self, mut out: impl Write) -> io::Result<()> {
        terminal::json(&mut out, &self.job, &self.fold, self.mpi.as_ref(), self.stdio.as_ref())
    }

    /// The text report, the `top` busiest files only when given.
    pub fn write_text(&self, mut out: impl Write, top: Option<usize>) -> io::Result<()> {
        terminal::text(&mut out, &self.job, &self.fold, self.mpi.as_ref(), top)
    }

    /// The self-contained HTML page (`--html`).
    pub fn write_html(&self, mut out: impl Write) -> io::Result<()> {
        out.write_all(html::render(&self.job, &self.fold, self.mpi.as_ref(), &self.ops).as_bytes())
    }

    /// The DXT-style trace, one Parquet row per operation (`--trace`).
    pub fn write_trace(&self, out: impl Write + Send) -> Result<(), String> {
        dxt::write_to(out, &self.ops, self.job.origin_ns)
    }

    /// The binary Darshan log (`--darshan-log`); `job` gives what the caller
    /// knows of the job ([`Report::darshan_log`]).
    pub fn write_darshan_log(&self, out: impl Write, job: darshan_log::Job) -> io::Result<()> {
        self.darshan_log(job).write_to(out)
    }
}

#[cfg(test)]
mod render_tests;

#[cfg(test)]
mod tests {
    use super::launcher_library;

    #[test]
    fn a_launcher_names_its_mpi_library() {
        for (argv0, lib) in [
            ("mpirun.openmpi", Some("libmpi")),
            ("/usr/bin/orterun", Some("libmpi")),
            ("mpirun.mpich", Some("libmpich")),
            ("mpiexec.hydra", Some("libmpich")),
            ("srun", Some("libmpich")),
            ("fio", None),
            // Plain mpirun is what its file is; with no such file, MPICH.
            ("/nonexistent/mpirun", Some("libmpich")),
        ] {
            assert_eq!(launcher_library(argv0), lib, "{argv0}");
        }
    }
}

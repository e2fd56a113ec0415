//! Darshan's MPIIO counters from uprobes on the MPI library (pure).
//!
//! The probed `MPI_File_*` functions are one ebq query, a JOIN of their
//! uprobes and uretprobes on the thread and the function ([`sql`]): one
//! `uprobe:LIB:{…}` event over the list (one uprobe_multi link, the function's
//! position in the list as `func`), which runs next to the POSIX query
//! (`report/live.rs`); a kernel without uprobe_multi links gets one query per
//! function instead. `MPI_X` and `PMPI_X` are one address in MPICH's
//! `libmpich.so.12` (`MPI_X` a weak alias), so one uprobe sees both.
//!
//! Handles differ by library ([`Abi`]): MPICH's are integers, Open MPI's
//! pointers to the library's objects. What BPF cannot do, user space does,
//! with these documented choices:
//! - **bytes** are `count × size(datatype)`, as Darshan computes them (it
//!   calls `MPI_Type_size` at entry). MPICH encodes a predefined datatype's
//!   size in its handle (`MPIR_Datatype_get_basic_size(a) = (a & 0xff00) >> 8`
//!   for handles of kind `HANDLE_KIND_BUILTIN`, bits 30–31 = 1); a derived
//!   datatype's size is not in its handle, so it is the size ROMIO asks
//!   `PMPI_Type_size_x` (probed in the same query, [`TYPE_SIZE`]) for inside
//!   the call ([`resolve_type_sizes`]), and a call
//!   without one counts with 0 bytes and in `EBQ_UNKNOWN_TYPE_CALLS`. An Open MPI datatype, predefined or
//!   derived, holds its size (`opal_datatype_t.size`), which the query reads
//!   from the process's memory as the call returns (`user_u64(datatype + offset)`);
//!   the offset is where the library file's own `ompi_mpi_byte`,
//!   `ompi_mpi_int` and `ompi_mpi_double` hold 1, 4 and 8.
//! - **the file** of an `MPI_File_open` is the file the same process opened
//!   inside the call under the last component of the name it was given
//!   (`str(e.arg1)`; Open MPI's OMPIO also opens lock files, shared-memory
//!   segments and semaphores there), else the last one it opened there (ROMIO
//!   and OMPIO open it with `open(2)`), so MPIIO and POSIX records share the
//!   file's (device, inode).
//!   The handle `MPI_File_open` wrote to `*fh` is read at its return
//!   (`user_u64(e.arg4)`, computed when the pair completes), and later calls
//!   on it go to that open's file; a handle that could not be read is bound,
//!   at its first use by that process, to that process's latest
//!   `MPI_File_open` still without a handle. `MPI_File_close(&fh)` closes the
//!   open whose `fh` pointer it passes (else the oldest one still open).
//! - **collective vs independent opens**: Darshan asks `MPI_Comm_size`; here
//!   `MPI_COMM_SELF` or a one-rank job is independent, any other communicator
//!   collective. MPICH's `MPI_COMM_SELF` is handle `0x44000001`; Open MPI's
//!   is `&ompi_mpi_comm_self`, an address of the calling process: what the
//!   dynamic linker wrote into the library's GOT slot for it (a program that
//!   uses it copy-relocates the object into itself), read in the kernel at the
//!   call, where the uprobe's `ip` gives the library's load address
//!   ([`OpenMpiLayout::handle_columns`]); `MPI_INFO_NULL` likewise.
//! - **rank**: from the process's environment (`PMI_RANK` from MPICH's hydra,
//!   `OMPI_COMM_WORLD_RANK`, `PMIX_RANK`), read in the kernel at the
//!   process's opens (`env_int()`), so a rank that exits before its rows are
//!   read keeps its number; a process with no open is read in user space
//!   when its pid is first seen. Processes without one are numbered after
//!   the known ranks in pid order.
//!
//! Failed calls (return value ≠ `MPI_SUCCESS`) are left out of Darshan's
//! counters, as Darshan does, and counted in `EBQ_ERRORS`.

use super::darshan_log::{self, MPIIO_HEAD};
use super::posix::{bucket, CommonValues, BUCKETS};
use super::{FileKey, OpKind, Operation};
use ebq::host::elf::DataSymbol;
use std::collections::{BTreeMap, HashMap};

/// What a function does to the file.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Open,
    Close,
    Read,
    Write,
    Sync,
    SetView,
    /// `PMPI_Type_size_x` (MPICH): not a file operation; the size of a datatype
    /// ROMIO asks for inside a read or write ([`resolve_type_sizes`]).
    TypeSize,
}

/// Darshan's class of a read or write.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Class {
    Indep,
    Coll,
    Split,
    Nb,
    /// Not a read or write.
    Meta,
}

/// One probed function: its name, what it does, and where its `count` argument is
/// (the datatype follows it).
#[derive(Clone, Copy, Debug)]
pub struct Func {
    pub name: &'static str,
    pub kind: Kind,
    pub class: Class,
    /// Index of `count` among the integer arguments (0 for non-data calls).
    count_arg: usize,
}

const fn f(name: &'static str, kind: Kind, class: Class, count_arg: usize) -> Func {
    Func { name, kind, class, count_arg }
}

/// Every probed function (Darshan's MPI-IO wrappers).
pub const FUNCS: [Func; 28] = [
    f("MPI_File_open", Kind::Open, Class::Meta, 0),
    f("MPI_File_close", Kind::Close, Class::Meta, 0),
    f("MPI_File_sync", Kind::Sync, Class::Meta, 0),
    f("MPI_File_set_view", Kind::SetView, Class::Meta, 0),
    f("MPI_File_read", Kind::Read, Class::Indep, 2),
    f("MPI_File_read_at", Kind::Read, Class::Indep, 3),
    f("MPI_File_read_shared", Kind::Read, Class::Indep, 2),
    f("MPI_File_write", Kind::Write, Class::Indep, 2),
    f("MPI_File_write_at", Kind::Write, Class::Indep, 3),
    f("MPI_File_write_shared", Kind::Write, Class::Indep, 2),
    f("MPI_File_read_all", Kind::Read, Class::Coll, 2),
    f("MPI_File_read_at_all", Kind::Read, Class::Coll, 3),
    f("MPI_File_read_ordered", Kind::Read, Class::Coll, 2),
    f("MPI_File_write_all", Kind::Write, Class::Coll, 2),
    f("MPI_File_write_at_all", Kind::Write, Class::Coll, 3),
    f("MPI_File_write_ordered", Kind::Write, Class::Coll, 2),
    f("MPI_File_read_all_begin", Kind::Read, Class::Split, 2),
    f("MPI_File_read_at_all_begin", Kind::Read, Class::Split, 3),
    f("MPI_File_read_ordered_begin", Kind::Read, Class::Split, 2),
    f("MPI_File_write_all_begin", Kind::Write, Class::Split, 2),
    f("MPI_File_write_at_all_begin", Kind::Write, Class::Split, 3),
    f("MPI_File_write_ordered_begin", Kind::Write, Class::Split, 2),
    f("MPI_File_iread", Kind::Read, Class::Nb, 2),
    f("MPI_File_iread_at", Kind::Read, Class::Nb, 3),
    f("MPI_File_iread_shared", Kind::Read, Class::Nb, 2),
    f("MPI_File_iwrite", Kind::Write, Class::Nb, 2),
    f("MPI_File_iwrite_at", Kind::Write, Class::Nb, 3),
    f("MPI_File_iwrite_shared", Kind::Write, Class::Nb, 2),
];

/// How a library represents MPI handles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Abi {
    /// MPICH and its derivatives: handles are integers.
    Mpich,
    /// Open MPI: handles point at the library's objects.
    OpenMpi(OpenMpiLayout),
}

/// Where Open MPI keeps what the counters need.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenMpiLayout {
    /// Offset of a datatype's size (`opal_datatype_t.size`); `None` when the
    /// library's predefined datatypes did not show it (bytes unknown).
    pub size_offset: Option<u64>,
    /// `ompi_mpi_comm_self` and `ompi_mpi_info_null` in the library file.
    pub comm_self: DataSymbol,
    pub info_null: DataSymbol,
    /// `MPI_File_open`'s and `MPI_File_set_view`'s addresses in the file:
    /// at their uprobes, `ip` minus one is where the library is loaded
    /// ([`OpenMpiLayout::handle_columns`]); `None` when not found.
    pub functions: Option<[u64; 2]>,
}

impl OpenMpiLayout {
    /// The query columns `comm_self_at` and `info_null_at`: `MPI_COMM_SELF`
    /// and `MPI_INFO_NULL` in the calling process, computed in the kernel at
    /// `MPI_File_open` (both) and `MPI_File_set_view` (the info), 0 at other
    /// calls. The uprobe's `ip` less the function's file address is the
    /// library's load bias; an object with a GOT slot is what the dynamic
    /// linker wrote there (the executable's copy when the program
    /// copy-relocated it), read from the process; one without is the
    /// library's own. `func` is the query's function column and `funcs` its list.
    pub fn handle_columns(&self, func: &str, funcs: &[Func]) -> String {
        let Some([open, set_view]) = self.functions else {
            return "0 AS comm_self_at, 0 AS info_null_at".into();
        };
        let at = |f: u64, s: &DataSymbol| match s.got_slot {
            Some(slot) => format!("user_u64(e.ip + {})", slot.wrapping_sub(f)),
            None => format!("(e.ip + {})", s.address.wrapping_sub(f)),
        };
        let when = |kind: Kind, expr: String| {
            funcs.iter().position(|f| f.kind == kind).map(|i| format!("WHEN {func} = {i} THEN {expr} "))
        };
        let case = |whens: Vec<Option<String>>| {
            let whens: String = whens.into_iter().flatten().collect();
            if whens.is_empty() {
                "0".to_string()
            } else {
                format!("CASE {whens}ELSE 0 END")
            }
        };
        let comm = case(vec![when(Kind::Open, at(open, &self.comm_self))]);
        let info =
            case(vec![when(Kind::Open, at(open, &self.info_null)), when(Kind::SetView, at(set_view, &self.info_null))]);
        format!("{comm} AS comm_self_at, {info} AS info_null_at")
    }
}

/// The data objects that tell Open MPI's library apart and give its layout.
pub const OPEN_MPI_SYMBOLS: [&str; 5] =
    ["ompi_mpi_comm_self", "ompi_mpi_info_null", "ompi_mpi_byte", "ompi_mpi_int", "ompi_mpi_double"];

impl Abi {
    /// The library's ABI from its [`OPEN_MPI_SYMBOLS`] (`None` where not
    /// defined): Open MPI when it has `ompi_mpi_comm_self` and
    /// `ompi_mpi_info_null`, the size offset being the first 8-byte slot where
    /// the file's `MPI_BYTE`, `MPI_INT` and `MPI_DOUBLE` hold 1, 4 and 8.
    pub fn of(symbols: &[Option<DataSymbol>]) -> Abi {
        let [Some(comm_self), Some(info_null), byte, int, double] = symbols else {
            return Abi::Mpich;
        };
        let slot = |s: &Option<DataSymbol>, at: usize| {
            let b = s.as_ref()?.bytes.as_ref()?.get(at..at + 8)?;
            Some(u64::from_le_bytes(b.try_into().ok()?))
        };
        let size_offset = (0..256)
            .step_by(8)
            .find(|&at| slot(byte, at) == Some(1) && slot(int, at) == Some(4) && slot(double, at) == Some(8));
        Abi::OpenMpi(OpenMpiLayout {
            size_offset: size_offset.map(|o| o as u64),
            comm_self: comm_self.clone(),
            info_null: info_null.clone(),
            functions: None,
        })
    }

    /// What call `func` with arguments `args` passed, in the library's terms;
    /// `sizes`: the [`sql`] columns read at arguments 3 and 4 + the size
    /// offset, `at`: its `comm_self_at` and `info_null_at` (Open MPI; 0 when
    /// unknown).
    fn handles(&self, func: &Func, args: &[u64; 6], sizes: [u64; 2], at: [u64; 2]) -> Handles {
        let io = matches!(func.kind, Kind::Read | Kind::Write);
        let info_arg = match func.kind {
            Kind::Open => Some(3),
            Kind::SetView => Some(5),
            _ => None,
        };
        match self {
            Abi::Mpich => Handles {
                type_size: io.then(|| builtin_type_size(args[func.count_arg + 1] as u32)).flatten(),
                comm_self: func.kind == Kind::Open && args[0] as u32 == MPI_COMM_SELF,
                info: info_arg.is_some_and(|i| args[i] as u32 != MPI_INFO_NULL),
            },
            Abi::OpenMpi(l) => Handles {
                // The datatype follows `count` (argument 2 or 3): its size was read at argument 3 or 4.
                type_size: (io && l.size_offset.is_some())
                    .then(|| sizes[func.count_arg - 2] as i64)
                    .filter(|&size| size > 0),
                comm_self: func.kind == Kind::Open && at[0] != 0 && args[0] == at[0],
                info: info_arg.is_some_and(|i| at[1] != 0 && args[i] != at[1]),
            },
        }
    }
}

/// What a call's handle arguments mean.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Handles {
    /// A read or write's datatype size, `None` when unknown.
    pub type_size: Option<i64>,
    /// An open on `MPI_COMM_SELF`.
    pub comm_self: bool,
    /// An open or set_view with an info other than `MPI_INFO_NULL` (Darshan's hint).
    pub info: bool,
}

/// The environment variables that give a process's MPI rank (MPICH's hydra,
/// Open MPI, PMIx).
pub const RANK_VARS: [&str; 3] = ["PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"];

/// The environment variables that give the job's number of ranks (MPICH's
/// hydra, Open MPI): a process traced alone (`-p`, one node's ranks of a job
/// on several) still knows its job's size, so a collective open is one.
pub const SIZE_VARS: [&str; 2] = ["PMI_SIZE", "OMPI_COMM_WORLD_SIZE"];

/// MPICH's `PMPI_Type_size_x`, probed with the `MPI_File_*` functions.
pub const TYPE_SIZE: Func = f("PMPI_Type_size_x", Kind::TypeSize, Class::Meta, 0);

/// The functions probed in a library of `abi`: [`FUNCS`], and for MPICH
/// [`TYPE_SIZE`] (its derived datatypes' sizes are not in their handles).
pub fn probed(abi: &Abi) -> Vec<Func> {
    let mut funcs = FUNCS.to_vec();
    if *abi == Abi::Mpich {
        funcs.push(TYPE_SIZE);
    }
    funcs
}

/// The query of `funcs` in library `lib`: each call's entry (arguments)
/// joined with its return (result) on the thread and, for a list, the
/// function (`func`, its position in `funcs`), so calls of different
/// functions nested on one thread pair each with its own. `name` is the
/// string at argument 1, `handle` the 8 bytes argument 4 points at and
/// `size_out` those argument 1 points at when the call returns (an open's
/// file name and the `MPI_File` it wrote, `PMPI_Type_size_x`'s size; for
/// other calls unused). With Open MPI the
/// datatype's size is read at the call (at argument 3 or 4, where the
/// datatype of the function is). Column order is what [`call`] reads.
pub fn sql(lib: &str, funcs: &[Func], abi: &Abi) -> String {
    let names: Vec<&str> = funcs.iter().map(|f| f.name).collect();
    let (symbol, func, on) = match names[..] {
        [one] => (one.to_string(), "0", String::new()),
        _ => (format!("{{{}}}", names.join(",")), "e.func", " AND e.func = x.func".to_string()),
    };
    // Open MPI: the datatype's size (at argument 3 or 4) and the handles' addresses in the process.
    let sizes = match abi {
        Abi::OpenMpi(l) => {
            let size = |arg: u32| match l.size_offset {
                Some(o) => format!("user_u64(e.arg{arg} + {o})"),
                None => "0".into(),
            };
            format!(", {} AS size3, {} AS size4, {}", size(3), size(4), l.handle_columns(func, funcs))
        }
        Abi::Mpich => String::new(),
    };
    // The rank and the job's size, read from the process's environment in the kernel at
    // its opens (a process opens before it reads or writes), so a rank that exits before
    // user space reads its row still has its number.
    let opens: Vec<String> =
        funcs.iter().enumerate().filter(|(_, f)| f.kind == Kind::Open).map(|(i, _)| i.to_string()).collect();
    let env = |vars: &[&str]| {
        let names: Vec<String> = vars.iter().map(|v| format!("'{v}'")).collect();
        if opens.is_empty() {
            "-1".to_string()
        } else {
            format!("CASE WHEN {func} IN ({}) THEN env_int({}) ELSE -1 END", opens.join(", "), names.join(", "))
        }
    };
    format!(
        "SELECT e.time, x.time - e.time AS latency, x.pid, e.arg0, e.arg1, e.arg2, e.arg3, e.arg4, e.arg5, x.retval, \
         {func} AS func, str(e.arg1) AS name, user_u64(e.arg4) AS handle, x.tid, user_i64(e.arg1) AS size_out, \
         {} AS rank, {} AS job_size{sizes} \
         FROM uprobe:{lib}:{symbol} e JOIN uretprobe:{lib}:{symbol} x ON e.tid = x.tid{on}",
        env(&RANK_VARS),
        env(&SIZE_VARS),
    )
}

/// One completed MPI-IO call.
#[derive(Clone, Debug)]
pub struct Call {
    pub func: Func,
    pub pid: u32,
    /// The integer arguments at entry.
    pub args: [u64; 6],
    /// What its handles meant.
    pub handles: Handles,
    /// An open's file name (`None` for other calls).
    pub name: Option<String>,
    /// The `MPI_File` an open wrote (`None` for other calls, or unreadable).
    pub opened: Option<u64>,
    /// The calling thread.
    pub tid: u32,
    /// The MPI error code (`MPI_SUCCESS` = 0).
    pub ret: u32,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// One row of [`sql`] over `funcs` in a library of `abi`.
pub fn call(funcs: &[Func], abi: &Abi, r: &[ebq::runtime::Value]) -> Call {
    let n = |i: usize| super::int_at(r, i).unwrap_or(0);
    let start = n(0);
    let func = funcs[n(10) as usize];
    let args = [n(3), n(4), n(5), n(6), n(7), n(8)];
    Call {
        func,
        pid: n(2) as u32,
        args,
        handles: abi.handles(&func, &args, [n(17), n(18)], [n(19), n(20)]),
        opened: (func.kind == Kind::Open && n(12) != 0).then(|| n(12)),
        tid: n(13) as u32,
        name: match (func.kind, r.get(11)) {
            (Kind::Open, Some(ebq::runtime::Value::S(name))) => Some(name.clone()),
            _ => None,
        },
        ret: n(9) as u32,
        start_ns: start,
        end_ns: start + n(1),
    }
}

/// One `PMPI_Type_size_x` call: thread, time, datatype, size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TypeSize {
    pub tid: u32,
    pub time_ns: u64,
    pub datatype: u32,
    pub size: i64,
}

/// A row of [`sql`] over `funcs` that is a [`TYPE_SIZE`] call, as one.
pub fn type_size(funcs: &[Func], r: &[ebq::runtime::Value]) -> Option<TypeSize> {
    let n = |i: usize| super::int_at(r, i).unwrap_or(0);
    (funcs.get(n(10) as usize)?.kind == Kind::TypeSize).then(|| TypeSize {
        tid: n(13) as u32,
        time_ns: n(0),
        datatype: n(3) as u32,
        size: n(14) as i64,
    })
}

/// Gives each read or write whose datatype size is unknown (an MPICH derived
/// datatype) the size the library asked for that datatype inside the call,
/// on the call's thread: ROMIO asks `PMPI_Type_size_x` for the datatype of
/// every read and write it runs.
pub fn resolve_type_sizes(calls: &mut [Call], sizes: &[TypeSize]) {
    for c in calls.iter_mut().filter(|c| matches!(c.func.kind, Kind::Read | Kind::Write)) {
        if c.handles.type_size.is_some() {
            continue;
        }
        let datatype = c.args[c.func.count_arg + 1] as u32;
        c.handles.type_size = sizes
            .iter()
            .find(|s| s.tid == c.tid && s.datatype == datatype && (c.start_ns..=c.end_ns).contains(&s.time_ns))
            .map(|s| s.size);
    }
}

/// The MPI rank and the job's size a row of [`sql`] read from its process's
/// environment (at opens; `None` where it read none).
pub fn rank_and_size(r: &[ebq::runtime::Value]) -> (Option<u32>, Option<u32>) {
    // -1 (none read) is u64::MAX here, no u32.
    let n = |i: usize| super::int_at(r, i).and_then(|x| u32::try_from(x).ok());
    (n(15), n(16))
}

/// The pid of a row of [`sql`] (to look its process up before [`call`]).
pub fn pid(r: &[ebq::runtime::Value]) -> u32 {
    super::int_at(r, 2).unwrap_or(0) as u32
}

/// MPICH's `MPI_COMM_SELF` and `MPI_INFO_NULL` handles.
const MPI_COMM_SELF: u32 = 0x4400_0001;
const MPI_INFO_NULL: u32 = 0x1c00_0000;

/// The size of an MPICH predefined datatype from its handle, `None` for a derived one.
pub fn builtin_type_size(handle: u32) -> Option<i64> {
    (handle >> 30 == 1).then_some(((handle & 0xff00) >> 8) as i64)
}

/// Float counters, held in ns (timestamps absolute, 0 = never).
pub const FCOUNTERS: [&str; 15] = [
    "MPIIO_F_OPEN_START_TIMESTAMP",
    "MPIIO_F_READ_START_TIMESTAMP",
    "MPIIO_F_WRITE_START_TIMESTAMP",
    "MPIIO_F_CLOSE_START_TIMESTAMP",
    "MPIIO_F_OPEN_END_TIMESTAMP",
    "MPIIO_F_READ_END_TIMESTAMP",
    "MPIIO_F_WRITE_END_TIMESTAMP",
    "MPIIO_F_CLOSE_END_TIMESTAMP",
    "MPIIO_F_READ_TIME",
    "MPIIO_F_WRITE_TIME",
    "MPIIO_F_META_TIME",
    "MPIIO_F_MAX_READ_TIME",
    "MPIIO_F_MAX_WRITE_TIME",
    "MPIIO_F_FASTEST_RANK_TIME",
    "MPIIO_F_SLOWEST_RANK_TIME",
];

/// One Darshan MPIIO record: a file in one rank, or a file over the job.
#[derive(Clone, Debug)]
pub struct Record {
    pub name: String,
    pub counters: BTreeMap<String, i64>,
    /// ns (timestamps absolute).
    pub fcounters: BTreeMap<&'static str, i64>,
    /// `MPIIO_F_VARIANCE_RANK_TIME` (s²) and `MPIIO_F_VARIANCE_RANK_BYTES` (bytes²), job records only.
    pub variance_time_s2: f64,
    pub variance_bytes: f64,
    /// Ranks folded in (1 for a rank's record).
    pub ranks: u64,
    access: CommonValues,
    last_io: Option<Kind>,
}

impl Record {
    fn new(name: &str) -> Record {
        // Integer counters of every record: Darshan's up to the size buckets, and the rank reduction's.
        let names = MPIIO_HEAD.iter().map(|c| c.to_string()).chain(darshan_log::ranks("MPIIO"));
        let mut counters: BTreeMap<String, i64> = names.map(|c| (c, 0)).collect();
        for b in BUCKETS {
            counters.insert(format!("MPIIO_SIZE_READ_AGG_{b}"), 0);
            counters.insert(format!("MPIIO_SIZE_WRITE_AGG_{b}"), 0);
        }
        counters.insert("EBQ_ERRORS".into(), 0);
        counters.insert("EBQ_UNKNOWN_TYPE_CALLS".into(), 0);
        Record {
            name: name.into(),
            counters,
            fcounters: FCOUNTERS.iter().map(|f| (*f, 0)).collect(),
            variance_time_s2: 0.0,
            variance_bytes: 0.0,
            ranks: 1,
            access: CommonValues::default(),
            last_io: None,
        }
    }

    /// A counter by name (0 for a name it does not have).
    pub fn get(&self, name: &str) -> i64 {
        self.counters.get(name).copied().unwrap_or(0)
    }

    fn inc(&mut self, name: &str, by: i64) {
        *self.counters.get_mut(name).expect("a name of MPIIO_HEAD or ranks") += by;
    }

    /// Bytes read + written.
    pub fn bytes(&self) -> i64 {
        self.get("MPIIO_BYTES_READ") + self.get("MPIIO_BYTES_WRITTEN")
    }

    /// ns in reads, writes and metadata (Darshan's rank time).
    pub fn time_ns(&self) -> i64 {
        self.fcounters["MPIIO_F_READ_TIME"] + self.fcounters["MPIIO_F_WRITE_TIME"] + self.fcounters["MPIIO_F_META_TIME"]
    }

    /// The integer counters with the four access-size slots.
    pub fn all_counters(&self) -> BTreeMap<String, i64> {
        let mut out = self.counters.clone();
        let top = self.access.top4();
        for i in 0..4 {
            let (v, n) = top.get(i).copied().unwrap_or((0, 0));
            out.insert(format!("MPIIO_ACCESS{}_ACCESS", i + 1), v);
            out.insert(format!("MPIIO_ACCESS{}_COUNT", i + 1), n);
        }
        out
    }

    fn first(&mut self, name: &'static str, t: i64) {
        let v = self.fcounters.get_mut(name).expect("a name of FCOUNTERS");
        if *v == 0 || *v > t {
            *v = t;
        }
    }

    fn last(&mut self, name: &'static str, t: i64) {
        let v = self.fcounters.get_mut(name).expect("a name of FCOUNTERS");
        *v = (*v).max(t);
    }

    fn add_time(&mut self, name: &'static str, ns: i64) {
        *self.fcounters.get_mut(name).expect("a name of FCOUNTERS") += ns;
    }

    fn add(&mut self, c: &Call, job_ranks: usize) {
        let (t1, t2) = (c.start_ns as i64, c.end_ns as i64);
        let dt = t2 - t1;
        if c.ret != 0 {
            self.inc("EBQ_ERRORS", 1);
            return;
        }
        match c.func.kind {
            Kind::Open => {
                let indep = c.handles.comm_self || job_ranks <= 1;
                self.inc(if indep { "MPIIO_INDEP_OPENS" } else { "MPIIO_COLL_OPENS" }, 1);
                self.counters.insert("MPIIO_MODE".into(), c.args[2] as u32 as i64);
                self.inc("MPIIO_HINTS", c.handles.info as i64);
                self.first("MPIIO_F_OPEN_START_TIMESTAMP", t1);
                self.last("MPIIO_F_OPEN_END_TIMESTAMP", t2);
                self.add_time("MPIIO_F_META_TIME", dt);
            }
            Kind::Close => {
                self.first("MPIIO_F_CLOSE_START_TIMESTAMP", t1);
                self.last("MPIIO_F_CLOSE_END_TIMESTAMP", t2);
                self.add_time("MPIIO_F_META_TIME", dt);
            }
            Kind::Sync => {
                self.inc("MPIIO_SYNCS", 1);
                self.add_time("MPIIO_F_WRITE_TIME", dt);
            }
            Kind::TypeSize => {}
            Kind::SetView => {
                self.inc("MPIIO_VIEWS", 1);
                self.inc("MPIIO_HINTS", c.handles.info as i64);
                self.add_time("MPIIO_F_META_TIME", dt);
            }
            Kind::Read | Kind::Write => self.add_io(c, (t1, t2)),
        }
    }

    /// A read or a write: its class's call count, bytes and size bucket,
    /// the access size, read/write switches, and the times (first start,
    /// last end, sum, the slowest and its size).
    fn add_io(&mut self, c: &Call, (t1, t2): (i64, i64)) {
        let dt = t2 - t1;
        let read = c.func.kind == Kind::Read;
        let count = c.args[c.func.count_arg] as u32 as i32 as i64;
        let bytes = match c.handles.type_size {
            Some(size) => count * size,
            None => {
                self.inc("EBQ_UNKNOWN_TYPE_CALLS", 1);
                0
            }
        };
        let (dir, class) = if read { ("READ", "READS") } else { ("WRITE", "WRITES") };
        let prefix = match c.func.class {
            Class::Indep => "INDEP",
            Class::Coll => "COLL",
            Class::Split => "SPLIT",
            Class::Nb => "NB",
            Class::Meta => unreachable!("reads and writes have a class"),
        };
        self.inc(&format!("MPIIO_{prefix}_{class}"), 1);
        self.inc(if read { "MPIIO_BYTES_READ" } else { "MPIIO_BYTES_WRITTEN" }, bytes);
        self.inc(&format!("MPIIO_SIZE_{dir}_AGG_{}", BUCKETS[bucket(bytes)]), 1);
        self.access.add(bytes);
        if self.last_io.is_some_and(|k| k != c.func.kind) {
            self.inc("MPIIO_RW_SWITCHES", 1);
        }
        self.last_io = Some(c.func.kind);
        let (start, end, time, max, max_size) = if read {
            (
                "MPIIO_F_READ_START_TIMESTAMP",
                "MPIIO_F_READ_END_TIMESTAMP",
                "MPIIO_F_READ_TIME",
                "MPIIO_F_MAX_READ_TIME",
                "MPIIO_MAX_READ_TIME_SIZE",
            )
        } else {
            (
                "MPIIO_F_WRITE_START_TIMESTAMP",
                "MPIIO_F_WRITE_END_TIMESTAMP",
                "MPIIO_F_WRITE_TIME",
                "MPIIO_F_MAX_WRITE_TIME",
                "MPIIO_MAX_WRITE_TIME_SIZE",
            )
        };
        self.first(start, t1);
        self.last(end, t2);
        self.add_time(time, dt);
        if dt > self.fcounters[max] {
            self.fcounters.insert(max, dt);
            self.counters.insert(max_size.into(), bytes);
        }
    }
}

/// The MPIIO records of a run.
#[derive(Clone, Debug, Default)]
pub struct Fold {
    /// Per file and rank.
    pub ranks: BTreeMap<(FileKey, u32), Record>,
    /// Per file over the job (Darshan's shared-file reduction).
    pub files: BTreeMap<FileKey, Record>,
    /// The rank of each process.
    pub pids: BTreeMap<u32, u32>,
    /// Calls on a handle no `MPI_File_open` was seen for (not in any record).
    pub unattributed: u64,
    /// `PMPI_Type_size_x` calls the query saw (MPICH's derived datatypes' sizes).
    pub type_size_calls: u64,
}

/// An `MPI_File_open` of one process not closed yet.
struct OpenFile {
    key: FileKey,
    /// The `MPI_File *` it was given.
    fh_ptr: u64,
    handle: Option<u64>,
}

/// Ranks of `pids`: the ones `known` gives, the rest numbered after them in pid order.
pub fn ranks(pids: impl Iterator<Item = u32>, known: &HashMap<u32, u32>) -> BTreeMap<u32, u32> {
    let mut out = BTreeMap::new();
    let mut next = known.values().map(|r| r + 1).max().unwrap_or(0);
    let mut pids: Vec<u32> = pids.collect();
    pids.sort_unstable();
    pids.dedup();
    for p in pids {
        let r = known.get(&p).copied().unwrap_or_else(|| {
            next += 1;
            next - 1
        });
        out.insert(p, r);
    }
    out
}

/// Folds `calls` (any order) into per-rank and per-job records. `posix` (in
/// time order) names the file each `MPI_File_open` opened; `known` is the
/// rank of each process whose environment gave one; `job_size` the job's
/// ranks its environment gave (0: unknown), more than the processes seen
/// when one node's ranks are traced (a collective open is one there too).
pub fn fold(calls: &[Call], posix: &[Operation], known: &HashMap<u32, u32>, job_size: usize) -> Fold {
    let mut calls: Vec<&Call> = calls.iter().collect();
    calls.sort_by_key(|c| (c.start_ns, c.end_ns));
    let pids = ranks(calls.iter().map(|c| c.pid), known);
    let job_ranks = pids.len().max(job_size);
    let mut out = Fold { pids: pids.clone(), ..Fold::default() };
    let mut names: BTreeMap<FileKey, String> = BTreeMap::new();
    let mut open: HashMap<u32, Vec<OpenFile>> = HashMap::new();
    let mut unknown_files = 0u64;
    for c in calls {
        let rank = pids[&c.pid];
        let files = open.entry(c.pid).or_default();
        let key = match c.func.kind {
            Kind::Open => {
                if c.ret != 0 {
                    continue;
                }
                let key = open_key(c, posix, &mut names, &mut unknown_files);
                files.push(OpenFile { key, fh_ptr: c.args[4], handle: c.opened });
                key
            }
            Kind::Close => {
                let i =
                    files.iter().position(|f| f.fh_ptr == c.args[0]).or(if files.is_empty() { None } else { Some(0) });
                match i {
                    Some(i) => files.remove(i).key,
                    None => {
                        out.unattributed += 1;
                        continue;
                    }
                }
            }
            _ => {
                let h = c.args[0];
                let bound = match files.iter().find(|f| f.handle == Some(h)) {
                    Some(f) => Some(f.key),
                    None => files.iter_mut().rev().find(|f| f.handle.is_none()).map(|f| {
                        f.handle = Some(h);
                        f.key
                    }),
                };
                match bound {
                    Some(k) => k,
                    None => {
                        out.unattributed += 1;
                        continue;
                    }
                }
            }
        };
        let name = names.get(&key).cloned().unwrap_or_default();
        out.ranks.entry((key, rank)).or_insert_with(|| Record::new(&name)).add(c, job_ranks);
    }
    own_extremes(&mut out.ranks);
    let keys: Vec<FileKey> = out.ranks.keys().map(|(k, _)| *k).collect();
    for key in keys {
        if out.files.contains_key(&key) {
            continue;
        }
        let per: Vec<(&u32, &Record)> =
            out.ranks.range((key, 0)..=(key, u32::MAX)).map(|((_, rank), r)| (rank, r)).collect();
        out.files.insert(key, reduce(&per));
    }
    out
}

/// The file an `MPI_File_open` opened, named in `names` the first time:
/// the library's open of the file named in the call (Open MPI's OMPIO also
/// opens lock files, shared-memory segments and semaphores inside it), else
/// its last open there; without one, a file of its own numbered by
/// `unknown_files`.
fn open_key(c: &Call, posix: &[Operation], names: &mut BTreeMap<FileKey, String>, unknown_files: &mut u64) -> FileKey {
    let inside: Vec<&Operation> = posix
        .iter()
        .filter(|o| o.op == OpKind::Open && o.pid == c.pid && o.start_ns >= c.start_ns && o.end_ns <= c.end_ns)
        .collect();
    let base_name = c.name.as_deref().map(|n| n.rsplit('/').next().unwrap_or(n));
    let posix_open = inside.iter().rev().find(|o| base_name == Some(o.path.as_str())).or(inside.last()).copied();
    match posix_open {
        Some(o) => {
            names.entry(o.file).or_insert_with(|| o.path.clone());
            o.file
        }
        None => {
            // No POSIX open seen (lost, or a file system ROMIO reaches otherwise).
            *unknown_files += 1;
            let k = FileKey { dev_major: 0, dev_minor: 0, inode: *unknown_files };
            names.insert(k, format!("(MPI file {unknown_files})"));
            k
        }
    }
}

/// A rank's own record is its own fastest and slowest rank (as Darshan's unshared records).
fn own_extremes(ranks: &mut BTreeMap<(FileKey, u32), Record>) {
    for ((_, rank), r) in ranks.iter_mut() {
        let (t, b) = (r.time_ns(), r.bytes());
        for (k, v) in [("MPIIO_FASTEST_RANK", *rank as i64), ("MPIIO_SLOWEST_RANK", *rank as i64)] {
            r.counters.insert(k.into(), v);
        }
        r.counters.insert("MPIIO_FASTEST_RANK_BYTES".into(), b);
        r.counters.insert("MPIIO_SLOWEST_RANK_BYTES".into(), b);
        r.fcounters.insert("MPIIO_F_FASTEST_RANK_TIME", t);
        r.fcounters.insert("MPIIO_F_SLOWEST_RANK_TIME", t);
    }
}

/// Darshan's shared-file reduction: counters summed, maxima and extreme
/// timestamps kept, common access sizes merged, and the fastest and slowest
/// rank (by read + write + meta time; the lower rank on a tie) with their
/// bytes and time, and the variance over ranks of time (s²) and bytes.
fn reduce(per: &[(&u32, &Record)]) -> Record {
    let mut t = Record::new(&per[0].1.name);
    t.ranks = per.len() as u64;
    let mut access: BTreeMap<i64, i64> = BTreeMap::new();
    for (_, r) in per {
        for (k, v) in &r.counters {
            let e = t.counters.entry(k.clone()).or_insert(0);
            if k.starts_with("MPIIO_MAX_") || k == "MPIIO_MODE" {
                continue;
            }
            *e += v;
        }
        for (k, v) in &r.fcounters {
            if k.ends_with("_START_TIMESTAMP") {
                if *v != 0 {
                    t.first(k, *v);
                }
            } else if k.ends_with("_END_TIMESTAMP") {
                t.last(k, *v);
            } else if !k.contains("_MAX_") {
                t.add_time(k, *v);
            }
        }
        for dir in ["READ", "WRITE"] {
            let fk: &'static str = if dir == "READ" { "MPIIO_F_MAX_READ_TIME" } else { "MPIIO_F_MAX_WRITE_TIME" };
            if r.fcounters[fk] > t.fcounters[fk] {
                t.fcounters.insert(fk, r.fcounters[fk]);
                let ck = format!("MPIIO_MAX_{dir}_TIME_SIZE");
                t.counters.insert(ck.clone(), r.get(&ck));
            }
        }
        t.counters.insert("MPIIO_MODE".into(), r.get("MPIIO_MODE"));
        for (v, c) in r.access.top4() {
            *access.entry(v).or_insert(0) += c;
        }
    }
    for (v, c) in access {
        for _ in 0..c {
            t.access.add(v);
        }
    }
    let fastest = per.iter().min_by_key(|(rank, r)| (r.time_ns(), **rank)).expect("one rank at least");
    let slowest = per.iter().max_by_key(|(rank, r)| (r.time_ns(), std::cmp::Reverse(**rank))).expect("one rank");
    for (name, (rank, r)) in [("FASTEST", fastest), ("SLOWEST", slowest)] {
        t.counters.insert(format!("MPIIO_{name}_RANK"), **rank as i64);
        t.counters.insert(format!("MPIIO_{name}_RANK_BYTES"), r.bytes());
    }
    t.fcounters.insert("MPIIO_F_FASTEST_RANK_TIME", fastest.1.time_ns());
    t.fcounters.insert("MPIIO_F_SLOWEST_RANK_TIME", slowest.1.time_ns());
    let n = per.len() as f64;
    let variance = |xs: Vec<f64>| {
        let mean = xs.iter().sum::<f64>() / n;
        xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n
    };
    t.variance_time_s2 = variance(per.iter().map(|(_, r)| r.time_ns() as f64 / 1e9).collect());
    t.variance_bytes = variance(per.iter().map(|(_, r)| r.bytes() as f64).collect());
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn func(name: &str) -> Func {
        *FUNCS.iter().find(|f| f.name == name).unwrap()
    }

    fn c(name: &str, pid: u32, args: [u64; 6], start: u64, end: u64) -> Call {
        let f = func(name);
        let handles = Abi::Mpich.handles(&f, &args, [0; 2], [0; 2]);
        Call { func: f, pid, args, handles, name: None, opened: None, tid: pid, ret: 0, start_ns: start, end_ns: end }
    }

    fn posix_open(pid: u32, inode: u64, t: u64) -> Operation {
        Operation {
            path: "shared.dat".into(),
            op: OpKind::Open,
            via: super::super::Via::Syscall,
            pid,
            tid: pid,
            rank: None,
            file: FileKey { dev_major: 8, dev_minor: 1, inode },
            fs_type: "ext4".into(),
            mount_point: "/".into(),
            offset: 0,
            positioned: false,
            asked: 0,
            result: 3,
            mem: None,
            start_ns: t,
            end_ns: t + 1,
        }
    }

    const BYTE: u64 = 0x4c00_010d;
    const INT: u64 = 0x4c00_0405;
    const WORLD: u64 = 0x4400_0000;

    #[test]
    fn builtin_sizes_come_from_the_handle() {
        assert_eq!(builtin_type_size(BYTE as u32), Some(1));
        assert_eq!(builtin_type_size(INT as u32), Some(4));
        assert_eq!(builtin_type_size(0x4c00_080b), Some(8)); // MPI_DOUBLE
        assert_eq!(builtin_type_size(0x8c00_0001), None); // a derived type
    }

    /// An Open MPI library's data objects as its file holds them: `opal_datatype_t`'s
    /// class pointer, reference count, flags/id/bdt_used, then the size at 24.
    fn open_mpi_symbols() -> Vec<Option<DataSymbol>> {
        let datatype = |size: u64| {
            let words = [0u64, 1, 0x4000_0000_0036, size, 0, size, 0, size];
            Some(DataSymbol {
                address: 0x12_0000 + size * 0x100,
                bytes: Some(words.iter().flat_map(|w| w.to_le_bytes()).collect()),
                got_slot: None,
            })
        };
        let bss = |address: u64, got_slot: Option<u64>| Some(DataSymbol { address, bytes: None, got_slot });
        vec![bss(0x12_cca0, Some(0x11_f000)), bss(0x13_4dc0, None), datatype(1), datatype(4), datatype(8)]
    }

    #[test]
    fn open_mpi_is_told_by_its_objects_and_its_size_field_found_in_its_datatypes() {
        let Abi::OpenMpi(layout) = Abi::of(&open_mpi_symbols()) else { panic!("Open MPI") };
        assert_eq!(layout.size_offset, Some(24));
        // MPICH's library has none of them.
        assert_eq!(Abi::of(&[None, None, None, None, None]), Abi::Mpich);
        // Sizes nowhere to be seen: Open MPI, bytes unknown.
        let mut odd = open_mpi_symbols();
        odd[2] = Some(DataSymbol { address: 1, bytes: Some(vec![0; 64]), got_slot: None });
        let Abi::OpenMpi(l) = Abi::of(&odd) else { panic!("Open MPI") };
        assert_eq!(l.size_offset, None);
        // Without the functions' addresses, the handles are unknown (0).
        assert_eq!(layout.handle_columns("e.func", &FUNCS), "0 AS comm_self_at, 0 AS info_null_at");
        // MPI_File_open at 0x778c0, set_view at 0x78000: MPI_COMM_SELF through its GOT slot at 0x11f000
        // (copy-relocated into the program), MPI_INFO_NULL (no slot) the library's own object at 0x134dc0.
        let l = OpenMpiLayout { functions: Some([0x778c0, 0x78000]), ..layout };
        assert_eq!(
            l.handle_columns("e.func", &FUNCS),
            format!(
                "CASE WHEN e.func = 0 THEN user_u64(e.ip + {}) ELSE 0 END AS comm_self_at, \
                 CASE WHEN e.func = 0 THEN (e.ip + {}) WHEN e.func = 3 THEN (e.ip + {}) ELSE 0 END AS info_null_at",
                0x11_f000 - 0x778c0,
                0x13_4dc0 - 0x778c0,
                0x13_4dc0 - 0x78000
            )
        );
        // One function's own query: its position is 0; a list without the open has no comm.
        let sync = [func("MPI_File_sync")];
        assert_eq!(l.handle_columns("0", &sync), "0 AS comm_self_at, 0 AS info_null_at");
        // An object above the function: the offset wraps, as the kernel's addition does.
        let low = OpenMpiLayout { functions: Some([0x20_0000, 0x20_0000]), ..l };
        assert!(low
            .handle_columns("0", &[func("MPI_File_open")])
            .contains(&(0x11_f000u64.wrapping_sub(0x20_0000)).to_string()));
    }

    #[test]
    fn open_mpi_handles_are_pointers_compared_per_process() {
        let abi = Abi::of(&open_mpi_symbols());
        let at = [0x5000, 0x6000];
        let h = |name: &str, args: [u64; 6], sizes: [u64; 2], at| abi.handles(&func(name), &args, sizes, at);
        // MPI_File_open(comm, name, amode, info, &fh): on MPI_COMM_SELF, with MPI_INFO_NULL.
        assert_eq!(
            h("MPI_File_open", [0x5000, 0, 2, 0x6000, 0, 0], [0; 2], at),
            Handles { comm_self: true, ..Handles::default() }
        );
        assert_eq!(
            h("MPI_File_open", [0x5100, 0, 2, 0x7000, 0, 0], [0; 2], at),
            Handles { info: true, ..Handles::default() }
        );
        // Not knowing where they are in the process (0): collective, no hint.
        assert_eq!(h("MPI_File_open", [0x5000, 0, 2, 0x7000, 0, 0], [0; 2], [0; 2]), Handles::default());
        // write(fh, buf, count, datatype, …) read its size at argument 3, write_at at argument 4.
        let size = |name: &str, sizes| h(name, [0; 6], sizes, at).type_size;
        assert_eq!(size("MPI_File_write", [12, 99]), Some(12));
        assert_eq!(size("MPI_File_write_at", [99, 12]), Some(12));
        assert_eq!(size("MPI_File_read_at_all", [99, 0]), None, "a size that could not be read is unknown");
    }

    #[test]
    fn an_open_is_the_file_it_names_and_its_handle_the_one_it_wrote() {
        // Inside the open, OMPIO opens a lock file, the file, then a semaphore (all named by the dentry).
        let named = |pid, inode, t, name: &str| Operation { path: name.into(), ..posix_open(pid, inode, t) };
        let posix = vec![
            named(7, 1, 1002, "shared.dat.locktest.0"),
            named(7, 42, 1004, "shared.dat"),
            named(7, 2, 1006, "sem.x"),
        ];
        let mut open = c("MPI_File_open", 7, [WORLD, 0, 9, MPI_INFO_NULL as u64, 0x7ff0, 0], 1000, 1010);
        open.name = Some("/tmp/run/shared.dat".into());
        open.opened = Some(0xfeed);
        // Another open without a handle comes later; the write names the first open's handle.
        let mut second = c("MPI_File_open", 7, [WORLD, 0, 9, MPI_INFO_NULL as u64, 0x7ff8, 0], 1100, 1110);
        second.name = Some("other.dat".into());
        let posix = [posix, vec![named(7, 43, 1105, "other.dat")]].concat();
        let write = c("MPI_File_write_at", 7, [0xfeed, 0, 0, 10, BYTE, 0], 1200, 1210);
        let fold = fold(&[open, second, write], &posix, &[(7, 0)].into(), 0);
        let key = |inode| FileKey { dev_major: 8, dev_minor: 1, inode };
        assert_eq!(fold.ranks[&(key(42), 0)].get("MPIIO_INDEP_WRITES"), 1, "{:?}", fold.ranks.keys());
        assert_eq!(fold.ranks[&(key(43), 0)].get("MPIIO_INDEP_WRITES"), 0);
        assert_eq!(fold.files.len(), 2);
    }

    #[test]
    fn a_derived_datatype_takes_the_size_the_library_asked_for_inside_the_call() {
        const DERIVED: u64 = 0x8c00_0005;
        let mut calls = vec![
            c("MPI_File_write_at", 7, [0xabc, 0, 0, 5, DERIVED, 0], 1000, 1100),
            c("MPI_File_write_at", 8, [0xabc, 0, 0, 5, DERIVED, 0], 1000, 1100),
            c("MPI_File_write_at", 7, [0xabc, 0, 0, 5, DERIVED, 0], 2000, 2100),
            c("MPI_File_write_at", 7, [0xabc, 0, 0, 5, BYTE, 0], 3000, 3100),
        ];
        let size = |tid, time_ns, datatype: u64, size| TypeSize { tid, time_ns, datatype: datatype as u32, size };
        let sizes = [
            size(7, 1050, DERIVED, 12),
            // Another thread's, another datatype's, and one outside any call are not it.
            size(9, 2050, DERIVED, 99),
            size(7, 2050, INT, 4),
            size(7, 2500, DERIVED, 99),
            size(7, 3050, BYTE, 99),
        ];
        resolve_type_sizes(&mut calls, &sizes);
        let got: Vec<Option<i64>> = calls.iter().map(|c| c.handles.type_size).collect();
        // The builtin type keeps its handle's size.
        assert_eq!(got, [Some(12), None, None, Some(1)]);
    }

    /// One node's rank of a two-rank job (`-p`, or a node of several): its
    /// collective open is collective, as the job's size in its environment says.
    #[test]
    fn a_rank_traced_alone_opens_collectively_in_a_job_of_two() {
        let open = c("MPI_File_open", 7, [WORLD, 0, 9, MPI_INFO_NULL as u64, 0x7ff0, 0], 1000, 1010);
        let posix = [posix_open(7, 42, 1005)];
        let key = FileKey { dev_major: 8, dev_minor: 1, inode: 42 };
        for (job_size, coll, indep) in [(2, 1, 0), (0, 0, 1)] {
            let fold = fold(std::slice::from_ref(&open), &posix, &[(7, 1)].into(), job_size);
            let r = &fold.ranks[&(key, 1)];
            assert_eq!((r.get("MPIIO_COLL_OPENS"), r.get("MPIIO_INDEP_OPENS")), (coll, indep), "job of {job_size}");
        }
    }

    #[test]
    fn two_ranks_fold_into_one_shared_record() {
        let mut calls = vec![];
        let mut posix = vec![];
        for (pid, base) in [(100u32, 1000u64), (200, 2000)] {
            calls.push(c("MPI_File_open", pid, [WORLD, 0, 9, MPI_INFO_NULL as u64, 0x7ff0, 0], base, base + 10));
            posix.push(posix_open(pid, 42, base + 5));
            calls.push(c("MPI_File_write_at", pid, [0xabc, 0, 0, 1000, BYTE, 0], base + 20, base + 30 + pid as u64));
            calls.push(c("MPI_File_write_at_all", pid, [0xabc, 0, 0, 512, INT, 0], base + 100, base + 110));
            calls.push(c("MPI_File_read_at_all", pid, [0xabc, 0, 0, 1000, BYTE, 0], base + 200, base + 210));
            calls.push(c("MPI_File_close", pid, [0x7ff0, 0, 0, 0, 0, 0], base + 300, base + 310));
        }
        let known: HashMap<u32, u32> = [(200, 0), (100, 1)].into();
        let fold = fold(&calls, &posix, &known, 0);
        assert_eq!(fold.unattributed, 0);
        let key = FileKey { dev_major: 8, dev_minor: 1, inode: 42 };
        let r0 = &fold.ranks[&(key, 0)];
        assert_eq!(r0.get("MPIIO_COLL_OPENS"), 1);
        assert_eq!(r0.get("MPIIO_INDEP_WRITES"), 1);
        assert_eq!(r0.get("MPIIO_COLL_WRITES"), 1);
        assert_eq!(r0.get("MPIIO_COLL_READS"), 1);
        assert_eq!(r0.get("MPIIO_BYTES_WRITTEN"), 1000 + 2048);
        assert_eq!(r0.get("MPIIO_BYTES_READ"), 1000);
        assert_eq!(r0.get("MPIIO_RW_SWITCHES"), 1);
        assert_eq!(r0.get("MPIIO_MODE"), 9);
        let job = &fold.files[&key];
        assert_eq!(job.ranks, 2);
        assert_eq!(job.get("MPIIO_COLL_OPENS"), 2);
        assert_eq!(job.get("MPIIO_BYTES_WRITTEN"), 2 * 3048);
        assert_eq!(job.get("MPIIO_SIZE_WRITE_AGG_1K_10K"), 2);
        assert_eq!(job.get("MPIIO_SIZE_WRITE_AGG_100_1K"), 2);
        // Rank 1 (pid 100) wrote 100 ns faster than rank 0 (pid 200).
        assert_eq!(job.get("MPIIO_FASTEST_RANK"), 1);
        assert_eq!(job.get("MPIIO_SLOWEST_RANK"), 0);
        assert_eq!(job.fcounters["MPIIO_F_SLOWEST_RANK_TIME"] - job.fcounters["MPIIO_F_FASTEST_RANK_TIME"], 100);
        assert_eq!(job.variance_bytes, 0.0);
        assert!((job.variance_time_s2 - (50e-9f64).powi(2)).abs() < 1e-24);
        assert_eq!(job.all_counters()["MPIIO_ACCESS1_ACCESS"], 1000);
        assert_eq!(job.all_counters()["MPIIO_ACCESS1_COUNT"], 4);
    }

    #[test]
    fn unknown_ranks_follow_known_ones_in_pid_order() {
        let known: HashMap<u32, u32> = [(50, 0)].into();
        let r = ranks([70u32, 60, 50].into_iter(), &known);
        assert_eq!(r.into_iter().collect::<Vec<_>>(), vec![(50, 0), (60, 1), (70, 2)]);
    }
}

//! Where a system-call event's program runs: the classic per-call tracepoint
//! (`syscalls:sys_enter_read`, a perf-event program) or the raw `sys_enter` /
//! `sys_exit` tracepoint behind a check of the call's number (tp_btf).
//!
//! ```text
//! before: [kernel] Attach tracepoint:syscalls:sys_enter_read (BPF_PROG_TYPE_TRACEPOINT)
//! after:  [kernel] Attach tracepoint:syscalls:sys_enter_read (BPF_PROG_TYPE_TRACING, tp_btf)
//!         [kernel] Via    …sys_enter_read: raw sys_enter (tp_btf), system call 0 checked first; why
//! ```
//!
//! `raw_syscalls:sys_enter` / `sys_exit` may run raw as well, with no number
//! check: their classic programs run on every call too, so `auto` runs them
//! raw (unless they walk kernel stacks).
//!
//! The trade: a classic program fills a perf trace record and runs under the
//! one per-CPU guard all perf-event BPF programs share (an event is skipped,
//! and counted only in `recursion_misses`, whenever any other such program is
//! running on the CPU); a raw program reads the saved registers directly and
//! has its own guard, but runs on every system call of the machine and
//! returns after one comparison on the others. `ebq bench attach` measures
//! both; [`AUTO_RAW`], [`AUTO_EXIT`] and [`AUTO_KSTACK`] give the figures
//! `auto` rests on.

use super::KernelPlan;
use crate::bind::{BoundEvent, ColumnSource, EventSource};
use crate::catalog::{Catalog, FieldKind, SystemColumn, TracepointFormat};
use crate::parse::EventName;

/// How system-call events attach (`--attach`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyscallAttach {
    /// Per event, by the measured costs: entry events raw (unless the
    /// program walks kernel stacks), exit events classic.
    #[default]
    Auto,
    /// The classic `syscalls:*` tracepoints.
    Classic,
    /// The raw `sys_enter` / `sys_exit` tracepoints where the event can run
    /// there (else classic, EXPLAIN says why).
    Raw,
}

impl SyscallAttach {
    /// Parses `auto`, `classic` or `raw`.
    pub fn from_name(name: &str) -> Option<SyscallAttach> {
        match name {
            "auto" => Some(SyscallAttach::Auto),
            "classic" => Some(SyscallAttach::Classic),
            "raw" => Some(SyscallAttach::Raw),
            _ => None,
        }
    }

    /// The option's spelling.
    pub fn name(self) -> &'static str {
        match self {
            SyscallAttach::Auto => "auto",
            SyscallAttach::Classic => "classic",
            SyscallAttach::Raw => "raw",
        }
    }
}

/// Why `auto` runs an entry event raw (`ebq bench attach`, bench/RESULTS-rawsys.md):
/// the traced call costs about 55 ns less, every other call about 45 ns more.
pub const AUTO_RAW: &str = "auto: own recursion guard (classic programs share one and skip events), no perf \
                            record: ~55 ns less per traced call, ~45 ns more on every other system call";

/// Why `auto` keeps an exit event classic: its record is only `ret`, so raw
/// saves about 20 ns per traced call and costs about 45 on every other one.
pub const AUTO_EXIT: &str = "auto: an exit record holds only ret, raw would save ~20 ns per traced call and \
                             add ~45 ns to every other system call";

/// Why `auto` keeps a program that walks kernel stacks classic.
pub const AUTO_KSTACK: &str =
    "auto: kstack is walked through the raw tracepoint's extra frames, ~200 ns slower per event";

/// Why `auto` runs a `raw_syscalls` event raw: the classic one runs on every
/// call too, so raw only takes the perf record and the shared guard away.
pub const AUTO_EVERY_CALL_RAW: &str = "auto: the classic raw_syscalls tracepoint runs on every call too; raw has its \
                                       own recursion guard and no perf record";

/// Why `auto` keeps an entry event classic when another branch of the union
/// already runs on every system call.
pub const AUTO_EVERY_CALL: &str = "auto: another branch already runs on every system call (raw_syscalls); raw, this \
                                   event would add ~45 ns more to each, classic runs only on its own call";

/// Why a query reading strings from user memory stays classic.
pub const USER_STRINGS: &str = "it reads a string from user memory through the record's pointer field";

/// Rewrites the events of `k` (the end event and a JOIN's start events, every
/// branch of a union) that
/// run raw, and notes for EXPLAIN, per system-call program, which
/// attachment runs and why. `every_call`: another program of the object
/// already runs on every system call (a union branch over `raw_syscalls`), so
/// `auto` keeps entry events classic: raw, each would be one more program
/// run on every call of the machine (io.ops' copies and splice).
pub(super) fn choose(k: &mut KernelPlan, catalog: &Catalog, options: &super::PlanOptions, every_call: bool) {
    let mode = options.attach;
    let mut notes = vec![];
    let kstack = k.reads_column(&|c| matches!(c, ColumnSource::System(SystemColumn::Kstack)));
    // User-memory strings are read through the record's pointer field, which a raw program has not.
    let user_strings =
        k.reads_column(&|c| matches!(c, ColumnSource::Field { kind: FieldKind::UserStr | FieldKind::UserArgv, .. }));
    // Every start event of a union is decided (and checked) on its own, like the first.
    let events = std::iter::once(&mut k.event).chain(k.pairing.iter_mut().flat_map(|p| p.start_events_mut()));
    for event in events {
        let Some((call, exit)) = syscall_event(event) else { continue };
        let every = call.is_none();
        if every && !options.every_call_raw {
            continue;
        }
        let problem = match mode {
            SyscallAttach::Classic => Err("--attach classic".to_string()),
            SyscallAttach::Auto if exit && !every => Err(AUTO_EXIT.to_string()),
            SyscallAttach::Auto if kstack => Err(AUTO_KSTACK.to_string()),
            SyscallAttach::Auto if every_call && !every => Err(AUTO_EVERY_CALL.to_string()),
            _ if user_strings => Err(USER_STRINGS.to_string()),
            SyscallAttach::Auto | SyscallAttach::Raw => raw_problem(event, catalog, call.as_deref(), exit),
        };
        let raw = if exit { "sys_exit" } else { "sys_enter" };
        let note = match problem {
            Ok(nr) => {
                event.source = EventSource::RawSyscall { nr, exit };
                let why = match (mode, nr) {
                    (SyscallAttach::Raw, _) => "--attach raw",
                    (_, Some(_)) => AUTO_RAW,
                    (_, None) => AUTO_EVERY_CALL_RAW,
                };
                let which = nr.map_or("every system call, as the classic one".to_string(), |nr| {
                    format!("system call {nr} checked first")
                });
                format!("{}: raw {raw} (tp_btf), {which}; {why}", event.event_description())
            }
            Err(why) => format!("{}: classic tracepoint; {why}", event.event_description()),
        };
        notes.push(note);
    }
    k.attach_notes = notes;
}

/// True when `k` runs a program on every system call's entry (`raw_syscalls:sys_enter`).
pub(super) fn on_every_call(k: &KernelPlan) -> bool {
    k.events().any(|e| {
        matches!(&e.name, EventName::Tracepoint { category, name } if category == "raw_syscalls" && name == "sys_enter")
    })
}

/// `(Some(read), false)` for `syscalls:sys_enter_read`, `(Some(read), true)`
/// for its exit; `(None, exit)` for `raw_syscalls:sys_enter` / `sys_exit`,
/// which are every call.
fn syscall_event(event: &BoundEvent) -> Option<(Option<String>, bool)> {
    let EventName::Tracepoint { category, name } = &event.name else { return None };
    if event.source != EventSource::Tracepoint {
        return None;
    }
    if category == "raw_syscalls" {
        return match name.as_str() {
            "sys_enter" => Some((None, false)),
            "sys_exit" => Some((None, true)),
            _ => None,
        };
    }
    if category != "syscalls" {
        return None;
    }
    let (call, exit) = match (name.strip_prefix("sys_enter_"), name.strip_prefix("sys_exit_")) {
        (Some(call), _) => (call, false),
        (_, Some(call)) => (call, true),
        _ => return None,
    };
    Some((Some(call.to_string()), exit))
}

/// The system call's number when `event` can run raw (`None` for every call,
/// a `raw_syscalls` event); why not otherwise.
fn raw_problem(event: &BoundEvent, catalog: &Catalog, call: Option<&str>, exit: bool) -> Result<Option<i64>, String> {
    let arch = catalog.kernel().arch();
    if arch != crate::host::X86_64 {
        return Err(format!("system-call registers are mapped for x86-64 only, and this is {arch}"));
    }
    if !catalog.kernel().has_btf() {
        return Err("tp_btf needs the kernel's BTF (/sys/kernel/btf/vmlinux)".into());
    }
    let Some(call) = call else {
        return every_call_layout_problem(&event.format, exit).map_or(Ok(None), Err);
    };
    if let Some(why) = layout_problem(&event.format, exit) {
        return Err(why);
    }
    let unistd = UNISTD_NAMES.iter().find(|(tp, _)| *tp == call).map_or(call, |(_, n)| *n);
    catalog.kernel().syscalls().nr(unistd).map(Some).ok_or_else(|| {
        format!("no system call `{call}` in asm/unistd_64.h (its number is needed to pick it out of every call)")
    })
}

/// Tracepoints named after the kernel's `SYSCALL_DEFINE` where x86-64's
/// `asm/unistd_64.h` names the call otherwise (`sys_enter_sendfile64` is `__NR_sendfile`).
const UNISTD_NAMES: [(&str, &str); 6] = [
    ("sendfile64", "sendfile"),
    ("newstat", "stat"),
    ("newlstat", "lstat"),
    ("newfstat", "fstat"),
    ("newuname", "uname"),
    ("umount", "umount2"),
];

/// The format field holding the system call's number (not an argument).
pub const NR_FIELD: &str = "__syscall_nr";

/// Arguments a system call passes in registers (x86-64).
pub const MAX_ARGS: usize = 6;

/// Why the columns of `format` cannot be read from the registers: every
/// field an integer of at most 8 bytes, at most six arguments (at exit, just
/// `ret`); `None` when they can.
fn layout_problem(format: &TracepointFormat, exit: bool) -> Option<String> {
    // A user-memory string's pointer is an integer register too; reading it is refused above.
    let register = |k: &FieldKind| matches!(k, FieldKind::Int | FieldKind::UserStr | FieldKind::UserArgv);
    if let Some(f) = format.fields.iter().find(|f| !register(&f.kind) || f.size > 8) {
        return Some(format!("its field {} is not an integer register", f.name));
    }
    let args = format.fields.iter().filter(|f| f.name != NR_FIELD).count();
    if exit && args != 1 {
        return Some(format!("its exit record has {args} fields besides the number, not one (ret)"));
    }
    if args > MAX_ARGS {
        return Some(format!("it has {args} arguments, registers hold {MAX_ARGS}"));
    }
    None
}

/// Why `raw_syscalls:sys_enter` (`id`, `args[6]`) or `sys_exit` (`id`,
/// `ret`) cannot be read from the registers: its format is not that.
fn every_call_layout_problem(format: &TracepointFormat, exit: bool) -> Option<String> {
    let int = |name: &str| format.field(name).is_some_and(|f| f.kind == FieldKind::Int && f.size == 8);
    let args = format
        .field("args")
        .is_some_and(|f| matches!(f.kind, FieldKind::IntArray { elem_size: 8, len } if len == MAX_ARGS as u32));
    let expected = if exit { int("id") && int("ret") } else { int("id") && args };
    let fields = if exit { "id, ret" } else { "id, args[6]" };
    (!expected || format.fields.len() != 2).then(|| format!("its format is not ({fields}) of 8-byte integers"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{plan, PlanOptions};

    fn via(sql: &str, attach: SyscallAttach) -> Vec<String> {
        let cat = Catalog::fixture();
        let l = crate::bind::bind(&crate::parse::parse_query(sql).unwrap(), &cat).unwrap();
        let p = plan(sql, &l, &cat, &PlanOptions { attach, ..Default::default() }).unwrap();
        p.explain().lines().filter_map(|l| l.strip_prefix("[kernel] Via        ").map(str::to_string)).collect()
    }

    const JOIN: &str =
        "SELECT COUNT(*) FROM syscalls.sys_enter_pread64 e JOIN syscalls.sys_exit_pread64 x ON e.tid = x.tid";

    #[test]
    fn auto_runs_entries_raw_and_exits_classic_one_line_per_program() {
        assert_eq!(
            via(JOIN, SyscallAttach::Auto),
            [
                format!("tracepoint:syscalls:sys_exit_pread64: classic tracepoint; {AUTO_EXIT}"),
                format!(
                    "tracepoint:syscalls:sys_enter_pread64: raw sys_enter (tp_btf), system call 17 checked first; {AUTO_RAW}"
                ),
            ]
        );
        let kstack = via("SELECT kstack, COUNT(*) FROM syscalls.sys_enter_read GROUP BY kstack", SyscallAttach::Auto);
        assert_eq!(kstack, [format!("tracepoint:syscalls:sys_enter_read: classic tracepoint; {AUTO_KSTACK}")]);
        assert_eq!(
            via("SELECT COUNT(*) FROM raw_syscalls.sys_enter", SyscallAttach::Auto),
            [format!(
                "tracepoint:raw_syscalls:sys_enter: raw sys_enter (tp_btf), every system call, as the classic one; \
                 {AUTO_EVERY_CALL_RAW}"
            )]
        );
        // An exit too: the classic raw_syscalls exit runs on every call as well.
        assert_eq!(
            via("SELECT COUNT(*) FROM raw_syscalls.sys_exit WHERE ret < 0", SyscallAttach::Auto),
            [format!(
                "tracepoint:raw_syscalls:sys_exit: raw sys_exit (tp_btf), every system call, as the classic one; \
                 {AUTO_EVERY_CALL_RAW}"
            )]
        );
        let kstack = via("SELECT kstack, COUNT(*) FROM raw_syscalls.sys_enter GROUP BY kstack", SyscallAttach::Auto);
        assert_eq!(kstack, [format!("tracepoint:raw_syscalls:sys_enter: classic tracepoint; {AUTO_KSTACK}")]);
        // Bundles from before planned them classic, and say nothing.
        let cat = Catalog::fixture();
        let sql = "SELECT COUNT(*) FROM raw_syscalls.sys_enter";
        let l = crate::bind::bind(&crate::parse::parse_query(sql).unwrap(), &cat).unwrap();
        let options = PlanOptions { every_call_raw: false, ..Default::default() };
        let p = plan(sql, &l, &cat, &options).unwrap();
        assert_eq!(p.programs[0].event.source, EventSource::Tracepoint);
    }

    #[test]
    fn the_option_forces_either_attachment() {
        assert_eq!(
            via(JOIN, SyscallAttach::Raw),
            [
                "tracepoint:syscalls:sys_exit_pread64: raw sys_exit (tp_btf), system call 17 checked first; --attach raw",
                "tracepoint:syscalls:sys_enter_pread64: raw sys_enter (tp_btf), system call 17 checked first; --attach raw",
            ]
        );
        assert_eq!(
            via("SELECT COUNT(*) FROM syscalls.sys_enter_read", SyscallAttach::Classic),
            ["tracepoint:syscalls:sys_enter_read: classic tracepoint; --attach classic"]
        );
        for name in ["auto", "classic", "raw"] {
            assert_eq!(SyscallAttach::from_name(name).map(SyscallAttach::name), Some(name));
        }
    }

    /// A union of two entries closed by one exit: both start branches are decided.
    const UNION: &str = "SELECT COUNT(*) FROM (SELECT tid, time FROM syscalls.sys_enter_read \
                         UNION ALL SELECT tid, time FROM syscalls.sys_enter_pread64) s \
                         JOIN syscalls.sys_exit_read x ON s.tid = x.tid";

    fn physical(sql: &str, attach: SyscallAttach) -> crate::plan::PhysicalPlan {
        let cat = Catalog::fixture();
        let l = crate::bind::bind(&crate::parse::parse_query(sql).unwrap(), &cat).unwrap();
        plan(sql, &l, &cat, &PlanOptions { attach, ..Default::default() }).unwrap()
    }

    #[test]
    fn every_branch_of_a_union_start_is_decided_on_its_own() {
        assert_eq!(
            via(UNION, SyscallAttach::Auto),
            [
                format!("tracepoint:syscalls:sys_exit_read: classic tracepoint; {AUTO_EXIT}"),
                format!("tracepoint:syscalls:sys_enter_read: raw sys_enter (tp_btf), system call 0 checked first; {AUTO_RAW}"),
                format!(
                    "tracepoint:syscalls:sys_enter_pread64: raw sys_enter (tp_btf), system call 17 checked first; {AUTO_RAW}"
                ),
            ]
        );
        let p = physical(UNION, SyscallAttach::Auto);
        let starts: Vec<EventSource> =
            p.programs[0].pairing.as_ref().unwrap().start_events().map(|e| e.source.clone()).collect();
        assert_eq!(
            starts,
            [
                EventSource::RawSyscall { nr: Some(0), exit: false },
                EventSource::RawSyscall { nr: Some(17), exit: false }
            ]
        );
        assert_eq!(
            via(UNION, SyscallAttach::Classic)[2],
            "tracepoint:syscalls:sys_enter_pread64: classic tracepoint; --attach classic"
        );
    }

    #[test]
    fn a_second_branch_is_checked_like_the_first() {
        // Its own WHERE reads a user-memory string: every program stays classic, the second branch included.
        let sql = "SELECT COUNT(*) FROM (SELECT tid, time FROM syscalls.sys_enter_read \
                   UNION ALL SELECT tid, time FROM syscalls.sys_enter_openat WHERE filename = '/etc/passwd') s \
                   JOIN syscalls.sys_exit_read x ON s.tid = x.tid";
        let lines = via(sql, SyscallAttach::Raw);
        assert_eq!(
            lines[1..],
            [
                format!("tracepoint:syscalls:sys_enter_read: classic tracepoint; {USER_STRINGS}"),
                format!("tracepoint:syscalls:sys_enter_openat: classic tracepoint; {USER_STRINGS}"),
            ]
        );
        let p = physical(sql, SyscallAttach::Raw);
        assert!(p.programs[0].pairing.as_ref().unwrap().start_events().all(|e| e.source == EventSource::Tracepoint));
        // An exit event as a second branch: `auto` keeps it classic for the exit's reason, not the first branch's.
        let exits = "SELECT COUNT(*) FROM (SELECT tid, time FROM syscalls.sys_enter_read \
                     UNION ALL SELECT tid, time FROM syscalls.sys_exit_pread64) s \
                     JOIN syscalls.sys_exit_read x ON s.tid = x.tid";
        assert_eq!(
            via(exits, SyscallAttach::Auto)[2],
            format!("tracepoint:syscalls:sys_exit_pread64: classic tracepoint; {AUTO_EXIT}")
        );
    }
}

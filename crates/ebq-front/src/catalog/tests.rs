//! Catalog tests against the fixture kernel's tree in `tests/fixtures/formats`
//! (real format files copied from a 6.x kernel) and, when present, the live tracefs.

use super::{Catalog, CatalogError, FieldKind, TpField};
use crate::host::HostKernel;

fn fixtures() -> Catalog {
    Catalog::fixture()
}

/// (offset, size, signed, kind) of one field.
fn layout(f: &TpField) -> (u32, u32, bool, FieldKind) {
    (f.offset, f.size, f.signed, f.kind.clone())
}

fn field(cat: &str, event: &str, name: &str) -> TpField {
    let tp = fixtures().tracepoint(cat, event).unwrap();
    tp.field(name).unwrap_or_else(|| panic!("{cat}:{event} has no {name}")).clone()
}

fn unknown(result: Result<super::TracepointFormat, CatalogError>) -> (String, Vec<String>) {
    match result {
        Err(CatalogError::UnknownEvent { event, suggestions }) => (event, suggestions),
        other => panic!("expected UnknownEvent, got {other:?}"),
    }
}

#[test]
fn exact_layouts() {
    // An `unsigned int` in an 8-byte slot: read at its declared width (see declared_width).
    let fd = field("syscalls", "sys_enter_pread64", "fd");
    assert_eq!(layout(&fd), (16, 4, false, FieldKind::Int));
    assert_eq!(fd.c_type, "unsigned int");
    let ret = field("syscalls", "sys_exit_pread64", "ret");
    assert_eq!(layout(&ret), (16, 8, true, FieldKind::Int));
    let filename = field("syscalls", "sys_enter_openat", "filename");
    assert_eq!((filename.c_type.as_str(), filename.offset), ("const char *", 24));
    assert_eq!(layout(&filename), (24, 8, false, FieldKind::UserStr));
    let buf = field("syscalls", "sys_enter_read", "buf");
    assert_eq!(
        (buf.c_type.as_str(), buf.kind.clone()),
        ("char *", FieldKind::Int),
        "an output buffer stays an address"
    );
    let parent = field("sched", "sched_process_fork", "parent_comm");
    assert_eq!(layout(&parent), (8, 4, false, FieldKind::DataLocStr));
    assert_eq!(parent.c_type, "__data_loc char[]");
    let child_pid = field("sched", "sched_process_fork", "child_pid");
    assert_eq!(layout(&child_pid), (20, 4, true, FieldKind::Int));
    let rwbs = field("block", "block_rq_issue", "rwbs");
    assert_eq!(layout(&rwbs), (34, 10, false, FieldKind::CharArray { len: 10 }));
    assert_eq!(rwbs.c_type, "char[10]");
    let args = field("raw_syscalls", "sys_enter", "args");
    assert_eq!(layout(&args), (16, 48, false, FieldKind::IntArray { elem_size: 8, len: 6 }));
    let next_comm = field("sched", "sched_switch", "next_comm");
    assert_eq!(layout(&next_comm), (40, 16, false, FieldKind::CharArray { len: 16 }));
    let irq_name = field("irq", "irq_handler_entry", "name");
    assert_eq!(layout(&irq_name), (12, 4, false, FieldKind::DataLocStr));
}

#[test]
fn header_and_field_order() {
    let tp = fixtures().tracepoint("syscalls", "sys_enter_pread64").unwrap();
    assert_eq!((tp.category.as_str(), tp.name.as_str()), ("syscalls", "sys_enter_pread64"));
    assert!(tp.id > 0);
    let names: Vec<_> = tp.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["__syscall_nr", "fd", "buf", "count", "pos"]);
    assert_eq!(tp.record_size(), 48);
}

#[test]
fn list_and_glob() {
    let cat = fixtures();
    let all = cat.list(None).unwrap();
    assert_eq!(all.len(), 51);
    assert_eq!(all[0], ("block".to_string(), "block_rq_complete".to_string()));
    assert!(all.windows(2).all(|w| w[0] < w[1]), "sorted");
    let names =
        |g| -> Vec<String> { cat.list(Some(g)).unwrap().into_iter().map(|(c, n)| format!("{c}:{n}")).collect() };
    assert_eq!(
        names("sched:*"),
        ["sched:sched_process_exec", "sched:sched_process_exit", "sched:sched_process_fork", "sched:sched_switch"]
    );
    assert_eq!(
        names("sys_enter*"),
        [
            "raw_syscalls:sys_enter",
            "syscalls:sys_enter_close",
            "syscalls:sys_enter_copy_file_range",
            "syscalls:sys_enter_creat",
            "syscalls:sys_enter_io_submit",
            "syscalls:sys_enter_mmap",
            "syscalls:sys_enter_msync",
            "syscalls:sys_enter_open",
            "syscalls:sys_enter_openat",
            "syscalls:sys_enter_pread64",
            "syscalls:sys_enter_read",
            "syscalls:sys_enter_sendfile64",
            "syscalls:sys_enter_splice",
            "syscalls:sys_enter_write"
        ]
    );
    assert_eq!(
        names("*:sys_?xit_*"),
        [
            "syscalls:sys_exit_copy_file_range",
            "syscalls:sys_exit_creat",
            "syscalls:sys_exit_io_getevents",
            "syscalls:sys_exit_io_submit",
            "syscalls:sys_exit_mmap",
            "syscalls:sys_exit_msync",
            "syscalls:sys_exit_open",
            "syscalls:sys_exit_openat",
            "syscalls:sys_exit_pread64",
            "syscalls:sys_exit_read",
            "syscalls:sys_exit_sendfile64",
            "syscalls:sys_exit_splice",
            "syscalls:sys_exit_write"
        ]
    );
    assert_eq!(names("block_rq_issue"), ["block:block_rq_issue"]);
    assert!(names("nothing*").is_empty());
    // A glob with `:` is matched against `cat:name` only.
    assert!(names("sys_enter:*").is_empty());
}

#[test]
fn unknown_events_get_suggestions() {
    let cat = fixtures();
    let (event, s) = unknown(cat.tracepoint("syscalls", "sys_enter_pred64"));
    assert_eq!(event, "tracepoint:syscalls:sys_enter_pred64");
    assert_eq!(s[0], "tracepoint:syscalls:sys_enter_pread64");
    assert!(s.len() <= 3);
    let (_, s) = unknown(cat.tracepoint("syscall", "sys_enter_openat"));
    assert_eq!(s[0], "tracepoint:syscalls:sys_enter_openat");
    let (_, s) = unknown(cat.tracepoint("sched", "switch"));
    assert_eq!(s, ["tracepoint:sched:sched_switch"]);
    let (_, s) = unknown(cat.tracepoint("nope", "zzzzzzzz"));
    assert!(s.is_empty());
    // A top-level file or a category without that event is unknown, not an I/O error.
    unknown(cat.tracepoint("events", "x"));
    unknown(cat.tracepoint("sched", "sched_switch_x"));
}

#[test]
fn rejects_path_traversal() {
    let cat = fixtures();
    for (c, n) in [
        ("..", "formats"),
        ("sched", ".."),
        ("sched/../block", "block_rq_issue"),
        ("sched", "../sched/sched_switch"),
        ("", "sched_switch"),
        ("sched", ""),
        ("sched\0", "sched_switch"),
        (".", "sched_switch"),
        ("/etc", "passwd"),
    ] {
        let (_, s) = unknown(cat.tracepoint(c, n));
        assert!(s.is_empty(), "{c:?}:{n:?} got suggestions {s:?}");
    }
}

#[test]
fn missing_root_is_io_error() {
    let host = HostKernel::with_tracefs("/nonexistent/ebq-catalog-test");
    assert_eq!(host.tracefs().root(), std::path::Path::new("/nonexistent/ebq-catalog-test"));
    let cat = Catalog::new(std::sync::Arc::new(host));
    assert!(matches!(cat.list(None), Err(CatalogError::Tracefs(crate::host::TracefsError::Io { .. }))));
}

/// Parses every format file of the running kernel. Skipped without tracefs.
#[test]
fn parses_every_live_format() {
    let host = match HostKernel::open() {
        Ok(host) => host,
        Err(e) => {
            eprintln!("skipping parses_every_live_format: {e}");
            return;
        }
    };
    let root = host.tracefs().root().to_path_buf();
    let cat = Catalog::new(std::sync::Arc::new(host));
    let events = cat.list(None).unwrap();
    let (mut fields, mut unsupported) = (0, Vec::new());
    for (c, n) in &events {
        let tp = cat.tracepoint(c, n).unwrap_or_else(|e| panic!("{c}:{n}: {e}"));
        fields += tp.fields.len();
        let mut names: Vec<_> = tp.fields.iter().map(|f| &f.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), tp.fields.len(), "{c}:{n}: duplicate field names");
        for f in tp.fields.iter().filter(|f| f.kind == FieldKind::Unsupported) {
            unsupported.push(format!("{c}:{n}.{} ({})", f.name, f.c_type));
        }
    }
    eprintln!(
        "parsed {} events from {}: {fields} fields, {} unsupported",
        events.len(),
        root.display(),
        unsupported.len()
    );
    for u in unsupported.iter().take(20) {
        eprintln!("  unsupported: {u}");
    }
    assert!(events.len() > 100, "suspiciously few events: {}", events.len());
    let has = |c: &str, n: &str| events.iter().any(|e| e.0 == c && e.1 == n);
    if has("syscalls", "sys_enter_pread64") {
        let (_, s) = unknown(cat.tracepoint("syscalls", "sys_enter_pred64"));
        assert_eq!(s[0], "tracepoint:syscalls:sys_enter_pread64", "{s:?}");
        let (_, s) = unknown(cat.tracepoint("syscall", "sys_enter_read"));
        assert_eq!(s[0], "tracepoint:syscalls:sys_enter_read", "{s:?}");
        eprintln!("live suggestions for syscall:sys_enter_read: {s:?}");
    }
}

#[test]
fn const_char_pointers_are_user_strings_only_at_syscalls() {
    let text = "name: sys_enter_execve\nID: 1\nformat:\n\
        \tfield:const char * filename;\toffset:16;\tsize:8;\tsigned:0;\n\
        \tfield:const char *const * argv;\toffset:24;\tsize:8;\tsigned:0;\n";
    let kinds = |cat: &str| -> Vec<FieldKind> {
        super::parse_format(cat, text).unwrap().fields.into_iter().map(|f| f.kind).collect()
    };
    assert_eq!(kinds("syscalls"), [FieldKind::UserStr, FieldKind::UserArgv]);
    // Elsewhere a pointer may be a kernel address: it stays an integer.
    assert_eq!(kinds("sched"), [FieldKind::Int, FieldKind::Int]);
}

#[test]
fn narrow_syscall_arguments_are_read_at_their_declared_width() {
    // What a caller leaves in a register's upper half is not the argument: the kernel casts.
    // (The kernel's format files say signed:0 for every argument, `int dfd` too.)
    let text = "name: sys_enter_openat\nID: 1\nformat:\n\
        \tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n\
        \tfield:int dfd;\toffset:16;\tsize:8;\tsigned:0;\n\
        \tfield:const char * filename;\toffset:24;\tsize:8;\tsigned:0;\n\
        \tfield:int flags;\toffset:32;\tsize:8;\tsigned:0;\n\
        \tfield:umode_t mode;\toffset:40;\tsize:8;\tsigned:0;\n\
        \tfield:size_t count;\toffset:48;\tsize:8;\tsigned:0;\n\
        \tfield:unsigned long addr;\toffset:56;\tsize:8;\tsigned:0;\n";
    let sizes = |cat: &str| -> Vec<(String, u32, bool)> {
        super::parse_format(cat, text).unwrap().fields.into_iter().map(|f| (f.name, f.size, f.signed)).collect()
    };
    let want = [("__syscall_nr", 4, true), ("dfd", 4, true), ("filename", 8, false), ("flags", 4, true)];
    let want = want.into_iter().chain([("mode", 2, false), ("count", 8, false), ("addr", 8, false)]);
    assert_eq!(sizes("syscalls"), want.map(|(n, s, g)| (n.to_string(), s, g)).collect::<Vec<_>>());
    // Other categories' records are as the format file says.
    assert!(sizes("sched").iter().skip(1).all(|(_, size, _)| *size == 8));
}

#[test]
fn expanding_events_are_listed_where_their_system_calls_are_traced() {
    let cat = fixtures();
    assert_eq!(cat.list_expanding(None), ["aio.submit", "aio.complete"]);
    assert_eq!(cat.list_expanding(Some("aio:sub*")), ["aio.submit"]);
    assert_eq!(cat.list_expanding(Some("complete")), ["aio.complete"]);
    assert!(cat.list_expanding(Some("sched:*")).is_empty());
}

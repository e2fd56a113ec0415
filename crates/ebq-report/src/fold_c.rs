//! The facts `fold.bpf.c` shares with its Rust readers, written as C from
//! their one Rust definition: system call numbers, the SQL's path codes
//! ([`Via::code`]) and request kinds ([`REQUEST_KINDS`]), the order of the
//! per-path counters ([`Via::ALL`], [`PER_PATH`]), of the integer and float
//! counters ([`COUNTER_NAMES`], [`FCOUNTER_NAMES`]), Darshan's size buckets
//! ([`buckets`](super::buckets)), and `_Static_assert`s of every offset
//! [`kernel_fold`](super::kernel_fold) decodes and of the AIO structs the
//! fold reads from user memory (the catalog's `IOCB_FIELDS`,
//! `IO_EVENT_FIELDS`). A change on the Rust side changes the C with it; a
//! change to the C's structs alone fails to compile (the compile test in
//! `kernel_fold`), never at a user.

use super::buckets::{BUCKETS, EDGES};
use super::kernel_fold::{layout, COUNTER_NAMES, FCOUNTER_NAMES, TOTALS};
use super::posix::PER_PATH;
use super::query::{
    AIO_CALLS, FILE_CALLS, OPEN_CALLS, POSITIONED_CALLS, REQUEST_KINDS, STDIO_MARK_IDS, STDIO_MARK_PATH, SYSCALL_KINDS,
    VECTORED_CALLS,
};
use super::Via;
use ebq::catalog::expand::{IOCB_FIELDS, IO_EVENT_FIELDS, IO_EVENT_SIZE};
use std::fmt::Write;

/// The system calls the C names (`EBQ_NR_<call>`): those the report's query
/// reads ([`FILE_CALLS`], [`OPEN_CALLS`] and [`AIO_CALLS`]).
fn syscalls() -> impl Iterator<Item = &'static str> {
    FILE_CALLS.into_iter().chain(OPEN_CALLS).chain(AIO_CALLS)
}

/// The `#define`s and the bucket function `fold.bpf.c` is appended to; `nr`
/// gives a system call's number on this machine (a call it lacks is -1,
/// which no row's call number is).
/// `stdio_mark` defines `EBQ_FOLD_STDIO_MARK`: the query has the stdio
/// mark's branches ([`query::sql_for_kernel_fold`](super::query::sql_for_kernel_fold)).
pub fn header(nr: &mut dyn FnMut(&str) -> Option<i64>, stdio_mark: bool) -> String {
    let mut c = "/* Generated from Rust (report/fold_c.rs): system call numbers, -1 for none. */\n".to_string();
    if stdio_mark {
        c.push_str("#define EBQ_FOLD_STDIO_MARK 1\n");
    }
    for name in syscalls() {
        let _ = writeln!(c, "#define EBQ_NR_{name} ({})", nr(name).unwrap_or(-1));
    }
    calls(&mut c, nr);
    c.push_str("\n/* The `path` column (Via::code) and the index of per_path (Via::ALL order). */\n");
    for (i, via) in Via::ALL.into_iter().enumerate() {
        let name = via.name().to_ascii_uppercase();
        let _ = writeln!(c, "#define EBQ_FOLD_PATH_{name} {}\n#define EBQ_FOLD_VIA_{name} {i}", via.code());
    }
    c.push_str("\n/* A request row's `id` (query.rs REQUEST_KINDS). */\n");
    for (i, kind) in REQUEST_KINDS.iter().enumerate() {
        let _ = writeln!(c, "#define EBQ_FOLD_REQUEST_{} {i}", kind.name().to_ascii_uppercase());
    }
    let _ = writeln!(
        c,
        "\n/* The stdio mark's rows (query.rs STDIO_MARK_PATH, STDIO_MARK_IDS). */\n#define EBQ_FOLD_PATH_STDIO_MARK {STDIO_MARK_PATH}"
    );
    for (i, name) in STDIO_MARK_IDS.iter().enumerate() {
        let _ = writeln!(c, "#define EBQ_FOLD_MARK_{name} {i}");
    }
    c.push_str("\n/* counters[] (kernel_fold.rs COUNTER_NAMES). */\n");
    indices(&mut c, "EBQ_FOLD_C_", COUNTER_NAMES.iter().map(|n| short(n)), "EBQ_FOLD_COUNTERS");
    c.push_str("\n/* per_path[via * EBQ_FOLD_PP_PER_VIA + …] (posix.rs PER_PATH). */\n");
    indices(&mut c, "EBQ_FOLD_PP_", PER_PATH.iter().map(|n| n.to_string()), "EBQ_FOLD_PP_PER_VIA");
    let _ = writeln!(c, "#define EBQ_FOLD_PER_PATH {}", PER_PATH.len() * Via::ALL.len());
    c.push_str("\n/* fcounters[] (kernel_fold.rs FCOUNTER_NAMES). */\n");
    indices(&mut c, "EBQ_FOLD_F_", FCOUNTER_NAMES.iter().map(|n| short(n)), "EBQ_FOLD_FCOUNTERS");
    let _ = writeln!(
        c,
        "\n/* The files' records and their cold tail's bytes (kernel_fold.rs layout::FILES, COLD_TAIL_SIZE). */\n#define EBQ_FOLD_FILES {}\n#define EBQ_FOLD_COLD_TAIL {}",
        layout::FILES,
        layout::COLD_TAIL_SIZE
    );
    let _ = write!(
        c,
        "\n/* Darshan's cap on distinct common values per file, their filter's words; align[ctz(off)], align[64] for 0. */\n\
         #define EBQ_FOLD_COMMON {}\n#define EBQ_FOLD_COMMON_SEEN {}\n#define EBQ_FOLD_ALIGN {}\n",
        layout::COMMON,
        layout::COMMON_SEEN,
        layout::ALIGN_SLOTS
    );
    let _ = write!(
        c,
        "\n/* size[w * EBQ_FOLD_BUCKETS + bucket]: POSIX_SIZE_READ_*, then POSIX_SIZE_WRITE_*. */\n\
         #define EBQ_FOLD_BUCKETS {}\n\n\
         /* Darshan's size bucket of an access (buckets.rs): inclusive upper edges. */\n\
         static __always_inline __u32 ebq_fold_bucket(__s64 bytes)\n{{\n",
        BUCKETS.len()
    );
    for (i, edge) in EDGES.iter().enumerate() {
        let _ = writeln!(c, "\tif (bytes <= {edge}LL)\n\t\treturn {i};");
    }
    let _ = writeln!(c, "\treturn {};\n}}\n", EDGES.len());
    c
}

/// The fold's table of calls, `EBQ_FOLD_CALL_KINDS`: by call number, the
/// Decoder's kind ([`SYSCALL_KINDS`], its `EBQ_FOLD_<KIND>`) with the
/// flags of [`POSITIONED_CALLS`] and [`VECTORED_CALLS`], 0 for a call the
/// report does not fold. One bounded load where ten to twenty compares
/// of the call number stood (issue 39: 7 ns of the fold per read).
fn calls(c: &mut String, nr: &mut dyn FnMut(&str) -> Option<i64>) {
    let mut entries = Vec::new();
    for (name, kind) in SYSCALL_KINDS {
        let Some(n) = nr(name) else { continue };
        let mut entry = format!("EBQ_FOLD_{}", kind.name().to_ascii_uppercase());
        if POSITIONED_CALLS.contains(&name) {
            entry.push_str(" | EBQ_FOLD_CALL_POSITIONED");
        }
        if VECTORED_CALLS.contains(&name) {
            entry.push_str(" | EBQ_FOLD_CALL_VECTORED");
        }
        entries.push((n, entry));
    }
    entries.sort();
    let slots = entries.last().map_or(1, |(n, _)| n + 1);
    let table: Vec<String> = entries.iter().map(|(n, e)| format!("\t[{n}] = {e},")).collect();
    let _ = writeln!(
        c,
        "\n/* Decoder's kind of each call (query.rs SYSCALL_KINDS) | its flags (POSITIONED_CALLS, VECTORED_CALLS), by number. */\n\
         #define EBQ_FOLD_CALL_SLOTS {slots}\n#define EBQ_FOLD_CALL_KINDS {{ \\\n{} \\\n}}",
        table.join(" \\\n")
    );
}

/// A counter's C name: without Darshan's prefix (`POSIX_F_` for a float
/// counter) and `_TIMESTAMP` suffix.
fn short(name: &str) -> String {
    let name = ["POSIX_F_", "POSIX_", "EBQ_"].iter().find_map(|p| name.strip_prefix(p)).unwrap_or(name);
    name.strip_suffix("_TIMESTAMP").unwrap_or(name).to_string()
}

/// `#define PREFIXname i` for each name, then `#define count n`.
fn indices(c: &mut String, prefix: &str, names: impl Iterator<Item = String>, count: &str) {
    let mut n = 0;
    for (i, name) in names.enumerate() {
        let _ = writeln!(c, "#define {prefix}{name} {i}");
        n = i + 1;
    }
    let _ = writeln!(c, "#define {count} {n}");
}

/// `_Static_assert`s that the C's structs have the layout `kernel_fold`
/// decodes, to append after them.
pub fn layout_asserts() -> String {
    let mut c = "\n/* Generated from Rust (report/fold_c.rs): the layouts kernel_fold.rs decodes. */\n".to_string();
    let mut assert = |what: String, value: usize| {
        let _ = writeln!(c, "_Static_assert({what} == {value}, \"layout of report/kernel_fold.rs\");");
    };
    assert("sizeof(struct ebq_fold_key)".into(), layout::KEY_SIZE);
    assert("__builtin_offsetof(struct ebq_fold_key, inode)".into(), layout::KEY_INODE);
    for (field, offset) in layout::FILE_FIELDS {
        assert(format!("__builtin_offsetof(struct ebq_fold_file, {field})"), offset);
    }
    assert("sizeof(struct ebq_fold_file)".into(), layout::VALUE_SIZE);
    assert("sizeof(struct ebq_fold_fdopen)".into(), layout::FDOPEN_KEY_SIZE);
    for (field, offset) in [("tid", 0), ("fd", 4), ("time", 8)] {
        assert(format!("__builtin_offsetof(struct ebq_fold_fdopen, {field})"), offset);
    }
    for (i, field) in TOTALS.iter().enumerate() {
        assert(format!("__builtin_offsetof(struct ebq_fold_totals, {field})"), 8 * i);
    }
    assert("sizeof(struct ebq_fold_totals)".into(), 8 * TOTALS.len());
    // The user ABI's iocb and io_event as the catalog's aio.submit and aio.complete read them: the
    // fields the fold's walk reads.
    for (strukt, fields, read) in [
        (
            "ebq_fold_user_iocb",
            &IOCB_FIELDS[..],
            &["data", "rw_flags", "opcode", "reqprio", "fd", "buf", "nbytes", "offset"][..],
        ),
        ("ebq_fold_user_event", &IO_EVENT_FIELDS[..], &["data", "iocb", "res", "res2"][..]),
    ] {
        for (name, offset, size, _, _) in fields.iter().filter(|f| read.contains(&f.0)) {
            assert(format!("__builtin_offsetof(struct {strukt}, {name})"), *offset as usize);
            assert(format!("sizeof(((struct {strukt} *)0)->{name})"), *size as usize);
        }
    }
    assert("sizeof(struct ebq_fold_user_event)".into(), IO_EVENT_SIZE as usize);
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_number_is_defined() {
        let c = header(&mut |name| (name != "open").then_some(7), false);
        assert!(!c.contains("EBQ_FOLD_STDIO_MARK 1"));
        assert!(c.contains("#define EBQ_NR_open (-1)\n"));
        assert!(c.contains("#define EBQ_NR_io_submit (7)\n"));
    }

    #[test]
    fn the_table_of_calls_holds_each_calls_kind_and_flags() {
        let mut numbers = |name: &str| match name {
            "read" => Some(0),
            "pread64" => Some(17),
            "readv" => Some(19),
            "pwritev2" => Some(328),
            "lseek" => Some(8),
            _ => None,
        };
        let c = header(&mut numbers, false);
        for needle in [
            "#define EBQ_FOLD_CALL_SLOTS 329\n",
            "\t[0] = EBQ_FOLD_READ, \\\n\t[8] = EBQ_FOLD_SEEK, \\\n\t[17] = EBQ_FOLD_READ | EBQ_FOLD_CALL_POSITIONED, \\\n",
            "\t[19] = EBQ_FOLD_READ | EBQ_FOLD_CALL_VECTORED, \\\n",
            "\t[328] = EBQ_FOLD_WRITE | EBQ_FOLD_CALL_POSITIONED | EBQ_FOLD_CALL_VECTORED, \\\n}\n",
        ] {
            assert!(c.contains(needle), "{needle:?} in\n{c}");
        }
        assert!(header(&mut |_| None, false)
            .contains("#define EBQ_FOLD_CALL_SLOTS 1\n#define EBQ_FOLD_CALL_KINDS { \\\n \\\n}"));
    }

    #[test]
    fn the_aio_structs_are_asserted_against_the_catalogs_layout() {
        let c = layout_asserts();
        for needle in [
            "_Static_assert(__builtin_offsetof(struct ebq_fold_user_iocb, opcode) == 16,",
            "_Static_assert(sizeof(((struct ebq_fold_user_iocb *)0)->fd) == 4,",
            "_Static_assert(__builtin_offsetof(struct ebq_fold_user_iocb, offset) == 40,",
            "_Static_assert(__builtin_offsetof(struct ebq_fold_user_event, iocb) == 8,",
            "_Static_assert(sizeof(struct ebq_fold_user_event) == 32,",
        ] {
            assert!(c.contains(needle), "{needle:?} in\n{c}");
        }
    }

    #[test]
    fn indices_follow_the_rust_order() {
        let c = header(&mut |_| None, true);
        for needle in [
            "#define EBQ_FOLD_STDIO_MARK 1\n",
            "#define EBQ_FOLD_PATH_STDIO_MARK 5\n#define EBQ_FOLD_MARK_ENTER 0\n#define EBQ_FOLD_MARK_RETURN 1\n",
            "#define EBQ_FOLD_PATH_IO_URING 2\n#define EBQ_FOLD_VIA_IO_URING 1\n",
            "#define EBQ_FOLD_REQUEST_FSYNC 2\n",
            "#define EBQ_FOLD_C_OPENS 0\n",
            "#define EBQ_FOLD_C_ERRORS 18\n#define EBQ_FOLD_COUNTERS 19\n",
            "#define EBQ_FOLD_PP_FSYNCS 4\n#define EBQ_FOLD_PP_PER_VIA 5\n#define EBQ_FOLD_PER_PATH 20\n",
            "#define EBQ_FOLD_F_OPEN_START 0\n",
            "#define EBQ_FOLD_F_MAX_WRITE_TIME 12\n#define EBQ_FOLD_FCOUNTERS 13\n",
            "\tif (bytes <= 100LL)\n\t\treturn 0;\n\tif (bytes <= 1024LL)\n\t\treturn 1;\n",
            "\tif (bytes <= 1073741824LL)\n\t\treturn 8;\n\treturn 9;\n}\n",
        ] {
            assert!(c.contains(needle), "{needle:?} in\n{c}");
        }
    }
}

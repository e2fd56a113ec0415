//! A top-level union whose branches pair events of their own (enter ⋈ exit,
//! submit ⋈ complete): each such branch gets its own pairing map, structs and
//! start program in the one object, and the branches' integer columns widen
//! to one type. Against the fixture kernel; `crates/ebq-e2e/tests/io_ops.rs`
//! runs `io.ops` (such a union) on the real one.

use super::tests::generate_for;
use crate::bind::ScalarExpr;
use crate::catalog::Catalog;
use crate::codegen::MapRole;
use crate::engine::Engine;
use crate::types::DataType;

/// pread64 calls (enter ⋈ exit) and io_uring requests (submit ⋈ complete),
/// bytes per path; `ret` is i64, `res` i32.
const TWO_PAIRS: &str = "SELECT path, COUNT(*) AS n, SUM(bytes) AS b FROM ( \
    SELECT 0 AS path, e.pid AS who, x.ret AS bytes FROM syscalls.sys_enter_pread64 e \
      JOIN syscalls.sys_exit_pread64 x ON e.tid = x.tid WHERE e.count > 0 \
    UNION ALL SELECT 2 AS path, s.pid AS who, c.res AS bytes FROM io_uring.io_uring_submit_req s \
      JOIN io_uring.io_uring_complete c ON s.req = c.req WHERE s.opcode = 22) u \
    WHERE who > 1 GROUP BY path";

fn engine() -> Engine {
    Engine::with_catalog(Catalog::fixture())
}

#[test]
fn each_pairing_branch_has_its_own_map_structs_and_start_program() {
    let c = generate_for(TWO_PAIRS);
    for decl in [
        "struct ebq_pair_key {",
        "struct ebq_pair_key_1 {",
        "struct ebq_stash {",
        "struct ebq_stash_1 {",
        "} ebq_pending SEC(\".maps\");",
        "} ebq_pending_1 SEC(\".maps\");",
        "int ebq_pair_start(",
        "int ebq_pair_start_b1(",
        "int ebq_query(",
        "int ebq_query_1(",
    ] {
        assert_eq!(c.matches(decl).count(), 1, "{decl} in {c}");
    }
    // Each end program looks up and closes its own pairs only.
    assert!(c.contains("struct ebq_stash_1 *pending = bpf_map_lookup_elem(&ebq_pending_1, &pk);"), "{c}");
    assert!(c.contains("bpf_map_delete_elem(&ebq_pending_1, &pk);"), "{c}");
    assert!(c.contains("bpf_map_update_elem(&ebq_pending_1, &pk, s, BPF_NOEXIST)"), "{c}");
}

#[test]
fn the_contract_lists_every_pairing_map_for_the_age_sweeps() {
    let p = engine().prepare(TWO_PAIRS).unwrap();
    let program = &p.programs[0];
    let role = |r: MapRole| program.maps.iter().filter(|m| m.role == r).map(|m| &*m.name).collect::<Vec<&str>>();
    // The system calls' pairs live per thread (nothing to sweep); io_uring's in a HASH.
    assert_eq!(role(MapRole::Pending), ["ebq_pending_1"]);
    assert_eq!(role(MapRole::ThreadPairs), ["ebq_pending"]);
    let k = &p.physical.programs[0];
    let branches: Vec<usize> = k.pairings().map(|p| p.branch).collect();
    assert_eq!(branches, [0, 1], "pairings in the contract's order");
}

#[test]
fn the_querys_start_only_conditions_are_checked_before_a_pair_opens() {
    let p = engine().prepare(TWO_PAIRS).unwrap();
    let k = &p.physical.programs[0];
    // `who > 1` reads the start's pid in both branches: it moves to the start programs.
    for b in k.with_branches() {
        let start = b.pairing.as_ref().unwrap().start_filter.as_ref().unwrap().to_string();
        assert!(start.ends_with("&& (pid > 1)"), "{start}");
        assert_eq!(b.filter, None, "nothing is left for the end program");
    }
    // An unqualified system column of the outer query is the end event's, as in a JOIN.
    let p = engine().prepare(&TWO_PAIRS.replace("WHERE who > 1", "WHERE tid > 1")).unwrap();
    assert_eq!(p.physical.programs[0].filter.as_ref().unwrap().to_string(), "tid > 1");
}

#[test]
fn narrower_integers_widen_to_the_unions_type() {
    let cat = Catalog::fixture();
    let l = crate::bind::bind(&crate::parse::parse_query(TWO_PAIRS).unwrap(), &cat).unwrap();
    let bytes = &l.union[1].columns[2];
    assert_eq!(bytes.ty(), DataType::I64, "res (i32) widens to ret's i64");
    assert!(matches!(bytes, ScalarExpr::Cast { ty: DataType::I64, .. }), "{bytes:?}");
    let plan = engine().prepare(TWO_PAIRS).unwrap().explain();
    assert!(plan.contains("sum_0 ← CAST(res AS i64)"), "{plan}");
    // Unsigned 32 and signed 32 need a signed 64.
    let sql = "SELECT v, COUNT(*) FROM (SELECT pid AS v FROM syscalls.sys_enter_read \
               UNION ALL SELECT res AS v FROM io_uring.io_uring_complete) u GROUP BY v";
    let l = crate::bind::bind(&crate::parse::parse_query(sql).unwrap(), &cat).unwrap();
    assert_eq!(l.union[0].columns[0].ty(), DataType::I64);
    assert_eq!(l.union[1].columns[0].ty(), DataType::I64);
}

#[test]
fn explain_shows_each_branchs_pairing() {
    let plan = engine().prepare(TWO_PAIRS).unwrap().explain();
    let at = |text: &str| plan.find(text).unwrap_or_else(|| panic!("no `{text}` in {plan}"));
    let first = at("[kernel] Pair       on [e.tid = x.tid] in TASK_STORAGE ebq_pending (one open pair per thread");
    let end1 = at("[kernel] Attach     branch 1: tracepoint:syscalls:sys_exit_pread64 (BPF_PROG_TYPE_TRACEPOINT, closes pairs, ebq_query)");
    let second = at("[kernel] Pair       on [s.req = c.req] in HASH ebq_pending_1 (");
    let end2 = at("closes pairs, ebq_query_1)");
    assert!(first < end1 && end1 < second && second < end2, "{plan}");
}

#[test]
fn a_union_that_opens_a_join_cannot_pair_inside_a_branch() {
    let sql = "SELECT COUNT(*) FROM (SELECT tid FROM syscalls.sys_enter_read e JOIN syscalls.sys_exit_read x ON e.tid = x.tid \
               UNION ALL SELECT tid FROM syscalls.sys_enter_write) q JOIN syscalls.sys_exit_write w ON q.tid = w.tid";
    let Err(crate::Error::Query(q)) = engine().prepare(sql) else { panic!("refused") };
    assert_eq!(
        q.message,
        "the branches of a union that opens a JOIN's pairs are single events; pair inside a branch only in a union \
         that is the whole FROM"
    );
    assert!(q.span.is_some());
}

#[test]
fn cast_converts_integers_and_names_what_it_cannot() {
    let p =
        engine().prepare("SELECT CAST(count AS INT) AS c, CAST(fd AS u16) AS f FROM syscalls.sys_enter_read").unwrap();
    let schema: Vec<String> = p.logical.schema().iter().map(|(n, t)| format!("{n} {t}")).collect();
    assert_eq!(schema, ["c i32", "f u16"]);
    assert!(p.source().contains("((__s32)"), "{}", p.source());
    for (sql, want) in [
        ("SELECT CAST(comm AS BIGINT) FROM syscalls.sys_enter_read", "CAST converts integers; `comm` is string(16)"),
        ("SELECT CAST(count AS TEXT) FROM syscalls.sys_enter_read", "not `TEXT`"),
    ] {
        let Err(crate::Error::Query(q)) = engine().prepare(sql) else { panic!("{sql} refused") };
        assert!(q.message.contains(want), "{sql}: {}", q.message);
        assert!(q.span.is_some(), "{sql}");
    }
}

#[test]
fn io_uring_file_columns_read_the_requests_file() {
    let c = generate_for("SELECT fs_type, inode, COUNT(*) FROM io_uring.io_uring_complete GROUP BY fs_type, inode");
    assert!(c.contains("struct file *fc_file = ebq_file_of_req(ctx->req);"), "{c}");
    assert!(
        c.contains("return BPF_CORE_READ((struct io_kiocb *)req, file);"),
        "the fixture has no bpf_rdonly_cast: {c}"
    );
    assert!(c.contains("static __always_inline struct file *ebq_file_of_req(__u64 req)"), "{c}");
    let Err(crate::Error::Query(q)) = engine().prepare("SELECT file_pos FROM io_uring.io_uring_complete") else {
        panic!("file_pos refused")
    };
    assert!(q.message.contains("the request carries its own offset"), "{}", q.message);
}

#[test]
fn aio_file_columns_read_the_kiocbs_file_in_a_tp_btf_program() {
    // iomap's direct-I/O events have no fd: their file is raw argument 0's,
    // `iocb->ki_filp`, so reading a file column attaches them as tp_btf, where
    // `dev` is the file's (the record's own `dev` is out of reach) and `ret`
    // at the completion the raw `ssize_t ret`.
    let c = generate_for(
        "SELECT b.file_name, b.dev, COUNT(*), SUM(c.ret) FROM iomap.iomap_dio_rw_begin b \
         JOIN iomap.iomap_dio_complete c ON b.iocb = c.iocb GROUP BY b.file_name, b.dev",
    );
    assert!(c.contains("SEC(\"tp_btf/iomap_dio_rw_begin\")"), "{c}");
    assert!(c.contains("SEC(\"tp_btf/iomap_dio_complete\")"), "{c}");
    assert!(c.contains("struct file *fc_file = ebq_file_of_kiocb(ctx[0]);"), "{c}");
    assert!(
        c.contains("return BPF_CORE_READ((struct kiocb *)iocb, ki_filp);"),
        "the fixture has no bpf_rdonly_cast: {c}"
    );
    assert!(c.contains("ctx[2];\t/* ret: ssize_t */"), "{c}");
    let Err(crate::Error::Query(q)) = engine().prepare("SELECT file_pos FROM iomap.iomap_dio_rw_begin") else {
        panic!("file_pos refused")
    };
    assert!(q.span.is_some(), "{}", q.message);
}

#[test]
fn mmap_fault_file_columns_read_a_mapping_vmas_file_and_mark_retries() {
    // filemap's fault has no fd: its file is one a VMA mapping raw argument 0's page cache
    // holds, and `retry` compares the thread's last faulting page, both in a tp_btf program.
    let c = generate_for(
        "SELECT file_name, inode, COUNT(*) FROM filemap.mm_filemap_fault WHERE retry = 0 GROUP BY file_name, inode",
    );
    assert!(c.contains("SEC(\"tp_btf/mm_filemap_fault\")"), "{c}");
    assert!(c.contains("struct file *fc_file = ebq_file_of_mapping(ctx[0]);"), "{c}");
    assert!(c.contains("i_mmap.rb_root.rb_node"), "the fixture has no bpf_rdonly_cast: CO-RE reads: {c}");
    assert!(c.contains("__u32 fc_retry = ebq_fault_retry(ctx[0], ctx[1]);"), "{c}");
    assert!(c.contains("} ebq_last_fault SEC(\".maps\");"), "{c}");
    let c = generate_for("SELECT file_name, COUNT(*) FROM filemap.mm_filemap_map_pages GROUP BY file_name");
    assert!(c.contains("ebq_file_of_mapping(ctx[0])") && !c.contains("ebq_last_fault"), "{c}");
    for (sql, want) in [
        ("SELECT retry FROM filemap.mm_filemap_map_pages", "is not one"),
        ("SELECT retry FROM syscalls.sys_enter_read", "is not one"),
        ("SELECT file_pos FROM filemap.mm_filemap_fault", "file_pos"),
    ] {
        let Err(crate::Error::Query(q)) = engine().prepare(sql) else { panic!("{sql} refused") };
        assert!(q.message.contains(want) && q.span.is_some(), "{sql}: {}", q.message);
    }
}

#[test]
fn a_union_branch_its_constants_rule_out_attaches_nothing() {
    // io.ops' `path` is a constant per branch: `WHERE path = 'aio'` leaves one program.
    let p = engine().prepare("SELECT COUNT(*) FROM io.ops WHERE path = 'aio'").unwrap();
    let k = &p.physical.programs[0];
    let names: Vec<&str> = k.with_branches().map(|k| k.event.format.name.as_str()).collect();
    assert_eq!(names, ["iomap_dio_complete", "complete"], "direct I/O, and the other requests");
    assert_eq!(k.left_out.len(), 16, "{:?}", k.left_out);
    let p = engine().prepare("SELECT COUNT(*) FROM io.ops WHERE path != 'mmap'").unwrap();
    let names: Vec<&str> = p.physical.programs[0].with_branches().map(|k| k.event.format.name.as_str()).collect();
    let copies = [
        "sys_exit_copy_file_range",
        "sys_exit_copy_file_range",
        "sys_exit_sendfile64",
        "sys_exit_sendfile64",
        "sys_exit_splice",
        "sys_exit_splice",
        "sys_exit_mmap",
        "sys_exit_open",
        "sys_exit_openat",
        "sys_exit_creat",
    ];
    assert_eq!(names, [&["sys_exit", "io_uring_complete", "iomap_dio_complete", "complete"][..], &copies[..]].concat());
    assert!(!p.source().contains("mm_filemap_fault"), "{}", p.source());
    // Every branch ruled out: the last stands (a query with no rows, still a plan).
    let p = engine().prepare("SELECT COUNT(*) FROM io.ops WHERE path = 'nfs'").unwrap();
    assert_eq!(p.physical.programs[0].with_branches().count(), 1);
}

#[test]
fn print_flag_reads_a_define_from_the_tracepoints_print_table() {
    // IOCB_AIO_RW is a #define (not in BTF); iomap_dio_rw_begin's print fmt spells it.
    let p = engine()
        .prepare("SELECT COUNT(*) FROM iomap.iomap_dio_rw_begin WHERE ki_flags & print_flag('iomap.iomap_dio_rw_begin', 'ki_flags', 'AIO_RW') != 0")
        .unwrap();
    assert!(p.source().contains("& 8388608"), "{}", p.source());
    for (sql, want) in [
        (
            "SELECT print_flag('iomap.iomap_dio_rw_begin', 'ki_flags', 'AIO') AS x FROM iomap.iomap_dio_rw_begin",
            "AIO_RW",
        ),
        ("SELECT print_flag('iomap.nosuch', 'ki_flags', 'AIO') AS x FROM iomap.iomap_dio_rw_begin", "not a tracepoint"),
        (
            "SELECT print_flag('iomap.iomap_dio_rw_begin', 'ki_flags') AS x FROM iomap.iomap_dio_rw_begin",
            "three string literals",
        ),
    ] {
        let Err(crate::Error::Query(q)) = engine().prepare(sql) else { panic!("{sql} refused") };
        assert!(q.message.contains(want) && q.span.is_some(), "{sql}: {}", q.message);
    }
}

#[test]
fn io_uring_request_columns_read_the_prepared_request() {
    let p = engine().prepare("SELECT opcode, req_offset, req_len FROM io_uring.io_uring_submit_req").unwrap();
    let schema: Vec<String> = p.logical.schema().iter().map(|(n, t)| format!("{n} {t}")).collect();
    assert_eq!(schema, ["opcode u8", "req_offset i64", "req_len u32"]);
    let c = p.source();
    assert!(c.contains("= ebq_req_offset(ctx->req);") && c.contains("= ebq_req_len(ctx->req);"), "{c}");
    assert!(!c.contains("ebq_file_of_req(ctx->req);"), "no file is looked up for them: {c}");
    let Err(crate::Error::Query(q)) = engine().prepare("SELECT req_len FROM syscalls.sys_enter_read") else {
        panic!("req_len refused")
    };
    assert!(q.message.contains("`req_len` is an io_uring request's"), "{}", q.message);
}

#[test]
fn string_constants_label_rows_groups_and_union_branches() {
    // A CASE of strings is written into its key field by the branch its conditions pick.
    let sql = "SELECT CASE WHEN fd = 0 THEN 'stdin' WHEN fd = 1 THEN 'out' ELSE 'other' END AS f, COUNT(*) \
               FROM syscalls.sys_enter_read GROUP BY f";
    let p = engine().prepare(sql).unwrap();
    assert_eq!(p.logical.schema()[0].1, DataType::Str { cap: 6 }, "the longest value and its NUL");
    let c = p.source();
    assert!(c.contains(", \"stdin\", 6);\n\t} else {\n\t\tif ("), "{c}");
    assert!(c.contains(", \"out\", 4);") && c.contains(", \"other\", 6);"), "{c}");
    // Union branches label themselves; the column is as wide as the longest label.
    let sql = "SELECT path, COUNT(*) FROM (SELECT 'syscall' AS path FROM syscalls.sys_enter_read \
               UNION ALL SELECT 'io_uring' AS path FROM io_uring.io_uring_complete) u WHERE path = 'io_uring' \
               GROUP BY path";
    let p = engine().prepare(sql).unwrap();
    assert_eq!(p.logical.schema()[0].1, DataType::Str { cap: 9 });
    let k = &p.physical.programs[0];
    // `path = 'io_uring'` is decided per branch by its constant: false (left out), true.
    assert_eq!((k.event.format.name.as_str(), k.branches.len()), ("io_uring_complete", 0));
    assert_eq!(k.filter, None, "a filter its constants decide is no filter");
    // A row's field is not zeroed by the ring: cleared, then written.
    let c = generate_for("SELECT 'a\"b\\\\c' AS tag, fd FROM syscalls.sys_enter_read");
    assert!(c.contains("\t__builtin_memset(r->c0_"), "{c}");
    // SQL keeps the two backslashes (no escapes in '…'); C escapes the quote and each backslash.
    assert!(c.contains(", \"a\\\"b\\\\\\\\c\", 7);"), "{c}");
}

#[test]
fn a_condition_on_a_string_case_reads_its_conditions() {
    // io.ops's `op` is a CASE of strings over the system call number: `op = 'read'`
    // is the read numbers' condition, checked before a pair opens.
    let p = engine().prepare("SELECT COUNT(*) FROM io.ops WHERE op IN ('read', 'write') AND path = 'syscall'").unwrap();
    let k = &p.physical.programs[0];
    let start = k.pairing.as_ref().unwrap().start_filter.as_ref().unwrap().to_string();
    assert!(!start.contains('\''), "no string is compared in the kernel: {start}");
    assert!(start.contains("(id == 0)") && start.contains("(id == 1)"), "{start}");
    let names: Vec<&str> = k.branches.iter().map(|b| b.event.format.name.as_str()).collect();
    assert_eq!(
        names.len(),
        6,
        "op IN ('read', 'write') AND path = 'syscall' leaves the copies' and splice's: {names:?}"
    );
    let p = engine().prepare("SELECT COUNT(*) FROM io.ops WHERE op IN ('read', 'write')").unwrap();
    let k = &p.physical.programs[0];
    assert!(!k.branches[0].pairing.as_ref().unwrap().start_filter.as_ref().unwrap().to_string().contains('\''));
}

#[test]
fn beside_a_branch_on_every_system_call_the_other_entries_stay_classic() {
    use crate::bind::EventSource;
    // io.ops: its first branch runs on every system call (raw_syscalls), so the copies' and
    // splice's entries attach classic, each running only on its own call.
    let p = engine().prepare("SELECT path, COUNT(*) FROM io.ops GROUP BY path").unwrap();
    let k = &p.physical.programs[0];
    let starts: Vec<(&str, bool)> = k
        .with_branches()
        .filter_map(|b| b.pairing.as_ref())
        .flat_map(|p| p.start_events())
        .filter(|e| e.format.category == "syscalls")
        .map(|e| (e.format.name.as_str(), e.source == EventSource::Tracepoint))
        .collect();
    assert_eq!(starts.len(), 10, "{starts:?}");
    assert!(starts.iter().all(|(_, classic)| *classic), "{starts:?}");
    let notes: Vec<&String> = k.with_branches().flat_map(|b| &b.attach_notes).collect();
    assert!(notes.iter().any(|n| n.contains("another branch already runs on every system call")), "{notes:?}");
    // Alone, the same JOIN opens its pairs raw (auto's usual choice).
    let p = engine()
        .prepare("SELECT COUNT(*) FROM syscalls.sys_enter_splice e JOIN syscalls.sys_exit_splice x ON e.tid = x.tid")
        .unwrap();
    let start = p.physical.programs[0].pairing.as_ref().unwrap().start_events().next().unwrap();
    assert!(matches!(start.source, EventSource::RawSyscall { exit: false, .. }), "{:?}", start.source);
}

#[test]
fn a_view_branch_this_kernel_cannot_run_is_left_out_and_said() {
    // io.ops' msync branch names the file mapped at msync's address (bpf_find_vma +
    // bpf_rdonly_cast); the fixture kernel has no bpf_rdonly_cast, so the view runs without it.
    // Its fault-around branch counts pages at the fault tracepoints, which the fixture's BTF
    // cannot attach to.
    let p = engine().prepare("SELECT path, op, COUNT(*) FROM io.ops GROUP BY path, op").unwrap();
    let k = &p.physical.programs[0];
    assert_eq!(k.unsupported.len(), 3, "{:?}", k.unsupported);
    let (around, msync) = (&k.unsupported[0], &k.unsupported[2]);
    assert!(k.unsupported[1].starts_with("branch 7 (tracepoint:kmem:rss_stat) left out: a filemap fault's finish"));
    assert!(
        around
            .starts_with("branch 6 (tracepoint:filemap:mm_filemap_map_pages) left out: pages_mapped cannot be counted"),
        "{around}"
    );
    assert!(around.contains("no tp_btf attachment to exceptions:page_fault_user"), "{around}");
    assert!(
        msync.starts_with("branch 15 (tracepoint:syscalls:sys_exit_msync) left out: the file columns at"),
        "{msync}"
    );
    assert!(msync.contains("no bpf_rdonly_cast"), "{msync}");
    let names: Vec<&str> = k.with_branches().map(|b| b.event.format.name.as_str()).collect();
    assert!(!names.contains(&"sys_exit_msync") && !names.contains(&"mm_filemap_map_pages"), "{names:?}");
    // EXPLAIN lists each branch left out, numbered as written, with its reason.
    assert_eq!(k.left_out.len(), 3, "{:?}", k.left_out);
    for (note, said) in k.left_out.iter().zip(&k.unsupported) {
        assert_eq!(said.replacen(") left out: ", "): ", 1), *note);
        assert!(p.explain().contains(&format!("[kernel] Left out   {note}\n")), "EXPLAIN says it too");
    }
}

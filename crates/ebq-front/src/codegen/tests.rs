//! Codegen tests against the fixture kernel. That generated programs compile
//! (clang, the UAPI headers, the kernel's BTF) is checked in
//! `tests/compile.rs`, outside the pure unit tests.

use crate::catalog::Catalog;
use crate::plan::{plan, PlanOptions};

/// The C generated for `sql` against the fixture kernel.
pub(super) fn generate_for(sql: &str) -> String {
    generate_with(sql, &PlanOptions::default())
}

/// An engine over the fixture kernel.
pub(super) fn engine() -> crate::Engine {
    crate::Engine::with_catalog(Catalog::fixture())
}

/// [`generate_for`] with plan options.
pub(super) fn generate_with(sql: &str, options: &PlanOptions) -> String {
    let cat = Catalog::fixture();
    let q = crate::parse::parse_query(sql).unwrap();
    let l = crate::bind::bind(&q, &cat).unwrap_or_else(|e| panic!("{}", e.render(sql)));
    let p = plan(sql, &l, &cat, options).unwrap();
    super::generate(&p).remove(0).source
}

/// Compares generated C with the checked-in snapshot `tests/snapshots/NAME`.
/// EBQ_UPDATE_SNAPSHOTS=1 rewrites it after an intended change.
pub(super) fn assert_snapshot(name: &str, c: &str) {
    let path = format!("{}/tests/snapshots/{name}", env!("CARGO_MANIFEST_DIR"));
    if std::env::var_os("EBQ_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, c).unwrap();
    }
    let want = std::fs::read_to_string(&path).expect("snapshot exists (EBQ_UPDATE_SNAPSHOTS=1 writes it)");
    assert_eq!(c, want, "generated C changed; review and rerun with EBQ_UPDATE_SNAPSHOTS=1");
}

#[test]
fn ebql_example_uses_one_map_lookup_for_all_aggregates() {
    let c = generate_for(
        "SELECT fd, cpu, COUNT(*), MAX(count), AVG(count) FROM tracepoint/syscalls/sys_enter_pread64 GROUP BY fd, cpu WHERE pid == 42 WINDOW(time, 1000, 1000)",
    );
    assert_eq!(c.matches("bpf_map_lookup_elem(&ebq_groups").count(), 2, "one lookup, one retry after insert");
    assert!(c.contains("\t__u32 ev_fd = (__u32)ebq_regs(ctx)->di;"), "{c}");
    assert!(c.contains("if (!((__u64)sys_pid == (__u64)42ULL))"), "{c}");
    assert!(c.contains("key.window = ebq_window;"));
    assert!(c.contains("v->max_0 = x;") || c.contains("v->max_1 = x;"), "{c}");
}

#[test]
fn string_filters_compare_bytes() {
    let c = generate_for("SELECT COUNT(*) FROM syscalls.sys_enter_pread64 WHERE comm = 'dd' OR comm LIKE 'ab%'");
    assert!(c.contains("(((sys_comm[0] ^ 'd') | (sys_comm[1] ^ 'd') | sys_comm[2]) == 0)"), "{c}");
    assert!(c.contains("(((sys_comm[0] ^ 'a') | (sys_comm[1] ^ 'b')) == 0)"), "{c}");
}

#[test]
fn rows_use_the_ring_buffer() {
    let c = generate_for("SELECT time, pid, comm, fd, count FROM syscalls.sys_enter_pread64");
    // Per-CPU rings by default (codegen::rings has the shared ring's test).
    assert!(c.contains("bpf_ringbuf_reserve(ring, sizeof(*r), 0)"), "{c}");
    // comm only fills its field: read into the record, no stack copy (plan::record_strings).
    assert!(c.contains("\tebq_current_comm(r->c2_comm);\n") && !c.contains("char sys_comm"), "{c}");
}

/// A string the filter reads is on the stack already and is copied; one
/// only projected is read into its record field after the reserve.
#[test]
fn row_strings_go_to_the_record_unless_read_before_it() {
    let c = generate_for("SELECT comm, filename, pid FROM syscalls.sys_enter_openat WHERE comm = 'cat'");
    assert!(c.contains("\t__builtin_memcpy(r->c0_comm, sys_comm, sizeof(r->c0_comm));\n"), "{c}");
    assert!(!c.contains("ebq_strings"), "{c}");
    let read = "\tebq_user_str_read(r->c1_filename, bpf_probe_read_user_str(r->c1_filename, sizeof(r->c1_filename), (const void *)*(__u64 *)((void *)ctx + 24)));";
    assert!(c.contains(read) && !c.contains("char ev_filename[128] = {}"), "{c}");
    assert!(c.find(read) > c.find("bpf_ringbuf_reserve"), "{c}");
    // Projected twice: one read into the string scratch, two copies by the helper.
    let c = generate_for("SELECT filename, filename AS again FROM syscalls.sys_enter_openat");
    assert!(
        c.contains("bpf_probe_read_kernel_str(r->c0_filename, sizeof(r->c0_filename), strings->ev_filename);"),
        "{c}"
    );
    assert!(c.contains("bpf_probe_read_kernel_str(r->c1_again, sizeof(r->c1_again), strings->ev_filename);"), "{c}");
    // An empty copy takes the NULL mark of an unreadable string along (byte 1).
    assert!(c.contains("\tif (!r->c1_again[0])\n\t\tr->c1_again[1] = strings->ev_filename[1];\n"), "{c}");
}

/// A string only grouped by is read into the zeroed key; one the filter
/// reads too is copied from the scratch.
#[test]
fn grouped_strings_are_read_into_the_key() {
    let c = generate_for("SELECT filename, COUNT(*) FROM syscalls.sys_enter_openat GROUP BY filename");
    let read = "\tstruct ebq_key key = {};\n\tebq_user_str_read(key.c0_filename, bpf_probe_read_user_str(key.c0_filename, sizeof(key.c0_filename), ";
    assert!(c.contains(read) && !c.contains("ebq_strings"), "{c}");
}

/// Filtered big strings are read into the per-CPU scratch after the scope
/// check, not zeroed (comparisons stop at the NUL); the copy into the zeroed
/// key stops at the NUL too, so the key's bytes past it stay zero.
#[test]
fn big_strings_are_read_into_the_scratch() {
    let c = generate_for(
        "SELECT filename, COUNT(*) FROM syscalls.sys_enter_openat WHERE filename <> '/x' GROUP BY filename",
    );
    assert!(c.contains("struct ebq_strings {\n\tchar ev_filename[128] __attribute__((aligned(8)));\n};"), "{c}");
    let lookup =
        c.find("\tstruct ebq_strings *strings = ebq_strings_buf();\n\tif (!strings)\n\t\treturn 0;\n").unwrap();
    assert!(lookup > c.find("\tif (!ebq_in_scope_now())").unwrap(), "{c}");
    let read = "\tebq_user_str_read(strings->ev_filename, bpf_probe_read_user_str(strings->ev_filename, sizeof(strings->ev_filename), ";
    assert!(c.contains(read) && !c.contains("memset") && !c.contains("char ev_filename[128] = {}"), "{c}");
    let copy = "\tstruct ebq_key key = {};\n\tbpf_probe_read_kernel_str(key.c0_filename, sizeof(key.c0_filename), strings->ev_filename);";
    assert!(c.contains(copy), "{c}");
}

/// The JOIN form (a system call's entry and exit, on `tid`) keeps a user
/// string's pointer at the entry and reads the string once, at the exit,
/// after the call faulted its page in.
#[test]
fn a_join_reads_the_start_user_string_at_the_end() {
    let c = generate_for(
        "SELECT e.filename, x.ret FROM syscalls.sys_enter_openat e JOIN syscalls.sys_exit_openat x ON e.tid = x.tid",
    );
    assert!(c.contains("/* e.filename: its pointer, read at the end event */"), "{c}");
    assert_eq!(c.matches("bpf_probe_read_user_str(").count(), 1, "{c}");
    assert!(c.contains("ebq_user_str_read(start->"), "{c}");
    // Not thread-keyed: the end may run in another process, so the start reads the string.
    let c = generate_for(
        "SELECT e.filename, x.ret FROM syscalls.sys_enter_openat e JOIN syscalls.sys_exit_openat x ON e.pid = x.pid",
    );
    assert!(!c.contains("read at the end event") && c.contains("bpf_probe_read_user_str(strings->"), "{c}");
}

/// `str_at_exit()` (issue 40 item 6): a row of one `sys_enter_*` event is
/// the entry paired with its exit on the thread; the string it reads is the
/// pointer kept at the entry and read at the exit, while a plain `filename`
/// beside it is read at the entry, and its WHERE on the entry's columns runs
/// before a pair opens.
#[test]
fn str_at_exit_reads_its_string_at_the_exit_and_the_rest_at_the_entry() {
    let c = generate_for(
        "SELECT comm, filename, str_at_exit(filename) AS name FROM syscalls.sys_enter_openat \
         WHERE comm = 'ls' AND str_at_exit(filename) <> ''",
    );
    assert!(c.contains("/* str_at_exit(filename): its pointer, read at the end event */"), "{c}");
    assert!(c.contains("/* str_at_exit(filename): read now, from the pointer the start kept"), "{c}");
    // Two reads: the plain filename at the entry, the str_at_exit one at the exit.
    assert_eq!(c.matches("bpf_probe_read_user_str(").count(), 2, "{c}");
    let start = c.find("ebq_pair_start(").expect("a start program");
    let entry_read = c.find("bpf_probe_read_user_str(strings->ev_filename").expect("the entry's read");
    let comm = c.find("/* WHERE sys_enter_openat.comm = 'ls' */").or_else(|| c.find("/* WHERE comm = 'ls' */"));
    assert!(comm.is_some_and(|w| w > start) && entry_read > start, "{c}");
    assert!(c.contains("str_at_exit(filename) <> ''"), "{c}");
}

/// The generated C for the eBQL example, compared with a checked-in snapshot.
/// Set EBQ_UPDATE_SNAPSHOTS=1 to rewrite it after an intended change.
#[test]
fn ebql_example_snapshot() {
    let c = generate_for(
        "SELECT fd, cpu, COUNT(*), MAX(count), AVG(count) FROM tracepoint/syscalls/sys_enter_pread64 GROUP BY fd, cpu WHERE pid == 1041370 WINDOW(time, 1000, 1000)",
    );
    assert_snapshot("ebql_example.bpf.c", &c);
}

/// File columns: the fd is resolved once (the hidden `file` column), the
/// program includes vmlinux.h, and every read is a CO-RE read.
#[test]
fn file_columns_resolve_the_fd_once_with_core_reads() {
    let c = generate_for(
        "SELECT fs_type, mount_point, file_name, COUNT(*), SUM(count) FROM syscalls.sys_enter_pread64 \
         WHERE fs_type = 'tmpfs' GROUP BY fs_type, mount_point, file_name",
    );
    assert!(c.contains("#include \"vmlinux.h\"") && !c.contains("<linux/bpf.h>"), "{c}");
    assert_eq!(c.matches("= ebq_file_of(").count(), 1, "{c}");
    // The file is looked up before WHERE, which reads fs_type through it.
    // On the raw sys_enter (auto) the fd is the first argument register.
    let lookup = c.find("struct file *fc_file = ebq_file_of((__u32)ebq_regs(ctx)->di);").expect("lookup");
    let filter = c.find("/* WHERE fs_type = 'tmpfs' */").expect("filter");
    assert!(lookup < filter, "{c}");
    assert!(c.contains("ebq_file_fs_type(fc_file, fc_fs_type);"), "{c}");
    // The fixture's BTF has no bpf_rdonly_cast: every hop is a CO-RE probe read.
    assert!(c.contains("BPF_CORE_READ(file, f_inode, i_sb, s_type, name)") && !c.contains("bpf_rdonly_cast"), "{c}");
    assert!(c.contains("ebq_mount_point(fc_file, fc_mount_point);"), "{c}");
    assert!(!c.contains("typedef struct"), "never typedef kernel structs (CO-RE relocations name the type)");
    // Queries without file columns keep the minimal header.
    let plain = generate_for("SELECT fd, COUNT(*) FROM syscalls.sys_enter_pread64 GROUP BY fd");
    assert!(plain.contains("#include <linux/bpf.h>") && !plain.contains("vmlinux"), "{plain}");
}

/// A two-fd call resolves each end once, into its own locals.
#[test]
fn two_fd_calls_resolve_both_ends() {
    let c = generate_for(
        "SELECT in_inode, out_inode, in_file_name, COUNT(*) FROM syscalls.sys_enter_copy_file_range \
         GROUP BY in_inode, out_inode, in_file_name",
    );
    assert_eq!(c.matches("= ebq_file_of(").count(), 2, "{c}");
    // Raw sys_enter (auto): fd_in is the first argument register, fd_out the third.
    assert!(c.contains("struct file *fc_in_file = ebq_file_of((__s32)ebq_regs(ctx)->di);"), "{c}");
    assert!(c.contains("struct file *fc_out_file = ebq_file_of((__s32)ebq_regs(ctx)->dx);"), "{c}");
    assert!(c.contains("__u64 fc_in_inode = ebq_file_ino(fc_in_file);"), "{c}");
    assert!(c.contains("__u64 fc_out_inode = ebq_file_ino(fc_out_file);"), "{c}");
    let classic = generate_with(
        "SELECT out_inode FROM syscalls.sys_enter_sendfile64",
        &PlanOptions { attach: crate::plan::SyscallAttach::Classic, ..Default::default() },
    );
    assert!(classic.contains("struct file *fc_out_file = ebq_file_of(ctx->out_fd);"), "{classic}");
    // sendfile64's tracepoint is system call 40, `__NR_sendfile`: out_fd first, in_fd second.
    let raw = generate_for("SELECT in_inode, out_inode FROM syscalls.sys_enter_sendfile64");
    assert!(
        raw.contains(
            "	if (ctx[1] != 40 || ebq_compat_syscall())
"
        ),
        "{raw}"
    );
    assert!(raw.contains("struct file *fc_in_file = ebq_file_of((__s32)ebq_regs(ctx)->si);"), "{raw}");
    assert!(raw.contains("struct file *fc_out_file = ebq_file_of((__s32)ebq_regs(ctx)->di);"), "{raw}");
}

/// At sys_exit_openat the fd is the return value.
#[test]
fn open_exits_resolve_ret() {
    let c = generate_for("SELECT file_name, inode, file_pos FROM syscalls.sys_exit_openat WHERE ret >= 0");
    assert!(c.contains("struct file *fc_file = ebq_file_of(ctx->ret);"), "{c}");
    assert!(c.contains("__u64 fc_inode = ebq_file_ino(fc_file);"), "{c}");
}

/// On a kernel with `bpf_rdonly_cast` the same columns are typed loads, the
/// fd slot's too: no helper call.
#[test]
fn typed_files_load_through_btf_pointers() {
    let sql = "SELECT inode, fs_type, COUNT(*) FROM syscalls.sys_enter_pread64 GROUP BY inode, fs_type";
    let cat = Catalog::fixture();
    let l = crate::bind::bind(&crate::parse::parse_query(sql).unwrap(), &cat).unwrap();
    let mut p = plan(sql, &l, &cat, &PlanOptions::default()).unwrap();
    assert!(!p.programs[0].typed_files, "the fixture's BTF has no bpf_rdonly_cast");
    assert!(p.explain().contains("[kernel] Files      bpf_probe_read_kernel per hop"), "{}", p.explain());
    p.programs[0].typed_files = true;
    assert!(p.explain().contains("[kernel] Files      typed loads"), "{}", p.explain());
    let c = super::generate(&p).remove(0).source;
    assert!(c.contains("bpf_core_type_id_kernel(struct kiocb));\n\treturn slot->ki_filp;"), "{c}");
    let file_of = &c[c.find("ebq_file_of(__u32 fd)").unwrap()..];
    assert!(!file_of[..file_of.find("\n}\n").unwrap()].contains("bpf_probe_read"), "{c}");
    assert!(c.contains("return file->f_inode->i_ino;"), "{c}");
    assert!(!c.contains("BPF_CORE_READ("), "no probe read per hop: {c}");
    assert!(c.contains("__u64 fc_inode = ebq_file_ino(fc_file);"), "{c}");
    // The prelude's string helpers use the columns' capacities.
    assert_eq!((crate::catalog::FileColumn::FS_TYPE_CAP, crate::catalog::FileColumn::FILE_NAME_CAP), (16, 64));
}

/// `LIKE '%x'` and `'%x%'` call one function each, declared once however
/// often the pattern is used; NOT LIKE negates the call.
#[test]
fn suffix_and_contains_patterns_call_their_functions() {
    let c = generate_for(
        "SELECT COUNT(*) FROM syscalls.sys_enter_openat \
         WHERE (filename LIKE '%.so' OR comm LIKE '%sh%') AND filename NOT LIKE '%lib%' AND comm NOT LIKE '%sh%'",
    );
    // The condition on comm alone runs first; the file name is read only for events it keeps.
    let cheap = c.find("if (!(!ebq_contains_16_sh(sys_comm)))").expect("comm's test");
    let read = c.find("ebq_user_str_read(strings->ev_filename").expect("the file name's read");
    let strings = "if (!((ebq_ends_with_128__2eso(strings->ev_filename) || ebq_contains_16_sh(sys_comm)) \
                   && (!ebq_contains_128_lib(strings->ev_filename))))";
    let strings = c.find(strings).expect("the file name's tests");
    assert!(cheap < read && read < strings, "{c}");
    for f in ["ebq_ends_with_128__2eso", "ebq_contains_16_sh", "ebq_contains_128_lib"] {
        assert_eq!(c.matches(&format!("static __always_inline int {f}(const char *s)")).count(), 1, "{f}: {c}");
    }
    assert!(c.contains("\t\t\treturn ((s[i] ^ '.') | (s[i + 1] ^ 's') | (s[i + 2] ^ 'o')) == 0;\n"), "{c}");
    assert!(c.contains("\tfor (__u32 i = 0; i <= 128 - 3; i++) {\n"), "{c}");
    // A program with no such pattern has no such function, nor their comment.
    assert!(!generate_for("SELECT COUNT(*) FROM syscalls.sys_enter_openat WHERE filename LIKE '/%'")
        .contains("LIKE '%abc'"));
}

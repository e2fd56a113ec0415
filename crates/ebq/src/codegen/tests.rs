use crate::catalog::Catalog;
use crate::plan::{plan, PlanOptions};

fn fixtures() -> Catalog {
    Catalog::fixture()
}

fn generate_for(sql: &str) -> String {
    let cat = fixtures();
    let q = crate::parse::parse_query(sql).unwrap();
    let l = crate::bind::bind(&q, &cat).unwrap();
    let p = plan(sql, &l, &cat, &PlanOptions::default()).unwrap();
    super::generate(&p)
}

#[test]
fn ebql_example_uses_one_map_lookup_for_all_aggregates() {
    let c = generate_for(
        "SELECT fd, cpu, COUNT(*), MAX(count), AVG(count) FROM tracepoint/syscalls/sys_enter_pread64 GROUP BY fd, cpu WHERE pid == 42 WINDOW(time, 1000, 1000)",
    );
    assert_eq!(c.matches("bpf_map_lookup_elem(&ebq_groups").count(), 2, "one lookup, one retry after insert");
    assert!(c.contains("\t__u64 fd;\t/* offset 16, size 8: unsigned int */"), "{c}");
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
    assert!(c.contains("bpf_ringbuf_reserve(&ebq_rows, sizeof(*r), 0)"));
    assert!(c.contains("__builtin_memcpy(r->"));
}

/// The generated C for the eBQL example, compared with a checked-in snapshot.
/// Set EBQ_UPDATE_SNAPSHOTS=1 to rewrite it after an intended change.
#[test]
fn ebql_example_snapshot() {
    let c = generate_for(
        "SELECT fd, cpu, COUNT(*), MAX(count), AVG(count) FROM tracepoint/syscalls/sys_enter_pread64 GROUP BY fd, cpu WHERE pid == 1041370 WINDOW(time, 1000, 1000)",
    );
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots/ebql_example.bpf.c");
    if std::env::var_os("EBQ_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(path, &c).unwrap();
    }
    let want = std::fs::read_to_string(path).expect("snapshot exists (EBQ_UPDATE_SNAPSHOTS=1 writes it)");
    assert_eq!(c, want, "generated C changed; review and rerun with EBQ_UPDATE_SNAPSHOTS=1");
}

/// Generated programs compile with clang (-Wall -Werror), without loading them:
/// runs wherever clang and libbpf headers exist, root or not.
#[test]
fn generated_programs_compile_with_clang() {
    for sql in [
        "SELECT fd, cpu, COUNT(*), MAX(count), AVG(count) FROM syscalls.sys_enter_pread64 GROUP BY fd, cpu WINDOW(time, 1000, 1000)",
        "SELECT comm, COUNT(*), SUM(count / 3 - 1), MIN(-count % 7) FROM syscalls.sys_enter_pread64 WHERE comm LIKE 'd%' GROUP BY comm WINDOW(count, 100, 100)",
        "SELECT time, pid, tid, uid, gid, comm, cpu, cgroup, fd, count, pos FROM syscalls.sys_enter_pread64 WHERE fd << 2 >= 8 OR NOT (pos BETWEEN -1 AND 10)",
        "SELECT rwbs, dev, SUM(bytes) FROM block.block_rq_issue WHERE cmd = 'x' GROUP BY rwbs, dev",
        "SELECT args[0], COUNT(*) FROM raw_syscalls.sys_enter GROUP BY args[0]",
        "SELECT parent_comm, child_pid FROM sched.sched_process_fork WHERE parent_comm != 'bash'",
    ] {
        let c = generate_for(sql);
        if let Err(e) = crate::runtime::compile(&c) {
            panic!("{sql}\n{e}\n{c}");
        }
    }
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
    let lookup = c.find("struct file *fc_file = ebq_file_of(ctx->fd);").expect("lookup");
    let filter = c.find("/* WHERE fs_type = 'tmpfs' */").expect("filter");
    assert!(lookup < filter, "{c}");
    assert!(c.contains("BPF_CORE_READ(fc_file, f_inode, i_sb, s_type, name)"), "{c}");
    assert!(c.contains("ebq_mount_point(fc_file, fc_mount_point);"), "{c}");
    assert!(!c.contains("typedef struct"), "never typedef kernel structs (CO-RE relocations name the type)");
    // Queries without file columns keep the minimal header.
    let plain = generate_for("SELECT fd, COUNT(*) FROM syscalls.sys_enter_pread64 GROUP BY fd");
    assert!(plain.contains("#include <linux/bpf.h>") && !plain.contains("vmlinux"), "{plain}");
}

/// At sys_exit_openat the fd is the return value.
#[test]
fn open_exits_resolve_ret() {
    let c = generate_for("SELECT file_name, inode, file_pos FROM syscalls.sys_exit_openat WHERE ret >= 0");
    assert!(c.contains("struct file *fc_file = ebq_file_of(ctx->ret);"), "{c}");
    assert!(c.contains("__u64 fc_inode = BPF_CORE_READ(fc_file, f_inode, i_ino);"), "{c}");
}

/// Programs with file columns compile against the cached vmlinux.h PCH
/// (needs /sys/kernel/btf/vmlinux and bpftool, like running them).
#[test]
fn file_column_programs_compile_with_clang() {
    for sql in [
        "SELECT inode, dev, dev_major, dev_minor, fs_type, mount_point, mount_id, file_name, file_pos, count \
         FROM syscalls.sys_enter_write WHERE file_pos > 10 AND mount_point LIKE '/t%'",
        "SELECT file_name, inode FROM syscalls.sys_exit_openat WHERE ret >= 0",
        "SELECT e.file_name, e.inode, COUNT(*), SUM(x.ret) FROM syscalls.sys_enter_pread64 e \
         JOIN syscalls.sys_exit_pread64 x ON e.tid = x.tid WHERE e.mount_point = '/' GROUP BY e.file_name, e.inode",
        "SELECT fs_type, file_name, COUNT(*), SUM(count), MAX(file_pos) FROM syscalls.sys_enter_pread64 \
         GROUP BY fs_type, file_name WINDOW(time, 1000, 1000)",
    ] {
        let c = generate_for(sql);
        if let Err(e) = crate::runtime::compile(&c) {
            panic!("{sql}\n{e}\n{c}");
        }
    }
}

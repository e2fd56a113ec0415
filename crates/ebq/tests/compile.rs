//! Generated programs compile: BPF C with clang (-Wall -Werror, the UAPI
//! headers; file columns against the running kernel's BTF), pin headers as
//! user-space C. Nothing is loaded, so no root is needed; the queries bind
//! against the fixture kernel, as the codegen unit tests do.
//!
//! These are outside the library's unit tests because they need the host's
//! compiler and headers, which `scripts/test-pure.sh` hides.

use ebq::host::FixtureKernel;
use ebq::plan::{PlanOptions, StageLimit};
use ebq::{Engine, PreparedQuery};

fn prepare_with(sql: &str, options: PlanOptions) -> PreparedQuery {
    Engine::with_kernel(FixtureKernel::checked_in())
        .with_options(options)
        .prepare(sql)
        .unwrap_or_else(|e| panic!("{}", e.render(sql)))
}

/// Compiles the BPF C generated for `sql` with `options`.
fn compiles_with(sql: &str, options: PlanOptions) {
    let c = prepare_with(sql, options).source().to_string();
    if let Err(e) = ebq::runtime::compile(&c) {
        panic!("{sql}\n{e}\n{c}");
    }
}

fn compiles(sql: &str) {
    compiles_with(sql, PlanOptions::default());
}

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
        compiles(sql);
    }
}

/// System-call events on each attachment (the fixture kernel has BTF and the
/// system-call table): enter and exit, a JOIN of two raw events and (auto) a
/// mixed one, row and stack programs, every argument register.
#[test]
fn raw_and_classic_syscall_programs_compile_with_clang() {
    use ebq::plan::SyscallAttach;
    for sql in [
        "SELECT fd, buf, count, pos, __syscall_nr, COUNT(*) FROM syscalls.sys_enter_pread64 GROUP BY fd, buf, count, pos, __syscall_nr",
        "SELECT time, tid, ret FROM syscalls.sys_exit_read WHERE ret < 0",
        "SELECT e.fd, COUNT(*), HIST(x.time - e.time), MIN(x.ret) FROM syscalls.sys_enter_read e          JOIN syscalls.sys_exit_read x ON e.tid = x.tid WHERE e.count > 0 GROUP BY e.fd",
        "SELECT kstack, ustack, COUNT(*) FROM syscalls.sys_enter_openat GROUP BY kstack, ustack",
        "SELECT dfd, flags, mode FROM syscalls.sys_enter_openat WHERE comm = 'cat'",
    ] {
        for attach in [SyscallAttach::Raw, SyscallAttach::Classic, SyscallAttach::Auto] {
            compiles_with(sql, PlanOptions { attach, ..Default::default() });
        }
    }
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
        compiles(sql);
    }
}

/// Expanding events: the row code as a function of the per-CPU element,
/// run by a `bpf_loop` callback; alone, as both sides of a JOIN (the
/// completion's arguments from the task's saved registers), with file
/// columns and rows.
#[test]
fn expanding_event_programs_compile_with_clang() {
    for sql in [
        "SELECT opcode, COUNT(*), SUM(nbytes) FROM aio.submit GROUP BY opcode",
        "SELECT time, ctx_id, index, iocb, data, res, res2 FROM aio.complete WHERE res < 0",
        "SELECT s.fs_type, s.file_name, s.file_flags, COUNT(*), SUM(c.res), HIST(c.time - s.time) FROM aio.submit s \
         JOIN aio.complete c ON s.pid = c.pid AND s.iocb = c.iocb WHERE s.opcode IN (0, 1) GROUP BY s.fs_type, s.file_name, s.file_flags",
        "SELECT path, op, file_name, offset, bytes, ret, latency FROM io.ops WHERE path = 'aio'",
    ] {
        compiles(sql);
    }
}

/// Big strings off the stack (plan::string_buffers): read into the record,
/// into the key, or into the per-CPU scratch and copied from it, beside a
/// long expression (CI's props case: two user strings and 184 bytes of spills).
#[test]
fn string_programs_compile_with_clang() {
    for sql in [
        "SELECT *, (fd ^ cpu) % (count + 1) > -(6 + gid) == (cgroup + 1 - cgroup * fd <= uid * (4294967295 | tid)) \
         FROM syscalls.sys_enter_write WHERE comm = 'sh'",
        "SELECT filename, flags FROM syscalls.sys_enter_openat WHERE filename LIKE '/etc/%' AND comm <> 'x'",
        "SELECT filename, COUNT(*) FROM syscalls.sys_enter_openat GROUP BY filename",
        "SELECT filename, comm, COUNT(*) FROM syscalls.sys_enter_openat WHERE filename <> '/x' GROUP BY filename, comm",
        "SELECT str(buf), str(count), str(buf, 126), str(count, 126) FROM syscalls.sys_enter_write \
         WHERE str(buf) <> 'a' AND str(count) <> 'b' AND str(buf, 126) <> 'c' AND str(count, 126) <> 'd'",
        "SELECT e.filename, x.ret FROM syscalls.sys_enter_openat e JOIN syscalls.sys_exit_openat x ON e.tid = x.tid \
         WHERE e.filename <> ''",
        // str_at_exit(): the pointer carried, read at the exit (in WHERE too), beside the entry's own read.
        "SELECT time, comm, filename, str_at_exit(filename) AS name FROM \
         syscalls.sys_enter_openat WHERE comm = 'ls' AND str_at_exit(filename) NOT LIKE '/proc/%'",
        "SELECT str_at_exit(filename, 32) AS name, COUNT(*) FROM syscalls.sys_enter_openat GROUP BY 1",
        "SELECT fd, str_at_exit(buf, 16) FROM syscalls.sys_enter_read WHERE fd > 2",
    ] {
        compiles(sql);
    }
}

/// Raw tracepoint arguments (tp_btf programs) compile against the running kernel's
/// vmlinux.h: the fixture's paths are members the real structs have.
#[test]
fn raw_argument_programs_compile_with_clang() {
    for sql in [
        "SELECT rq.q.disk.disk_name, rq.q.disk.major, COUNT(*), SUM(rq.__data_len), SUM(nr_bytes), MAX(rq.tag) \
         FROM block.block_rq_complete WHERE rq.q.disk.disk_name LIKE 'loop%' AND rq.cmd_flags & 1 = 1 \
         GROUP BY rq.q.disk.disk_name, rq.q.disk.major",
        "SELECT time, pid, cpu, rq, rq.__sector, rq.q.queue_flags, rq.q.disk.disk_name FROM block.block_rq_issue",
        "SELECT c.rq.q.disk.disk_name, COUNT(*), SUM(i.rq.__data_len), MAX(c.time - i.time) FROM block.block_rq_issue i \
         JOIN block.block_rq_complete c ON i.rq = c.rq WHERE i.pid > 1 GROUP BY c.rq.q.disk.disk_name",
        "SELECT i.comm, i.rwbs, COUNT(*) FROM block.block_rq_issue i JOIN block.block_rq_complete c \
         ON i.sector = c.rq.__sector WHERE c.nr_bytes > 0 GROUP BY i.comm, i.rwbs",
        "SELECT req.file.f_inode.i_ino, req.cqe.fd, req.opcode, COUNT(*) FROM io_uring.io_uring_submit_req \
         GROUP BY req.file.f_inode.i_ino, req.cqe.fd, req.opcode",
        // A union of start events: one tp_btf start program per branch.
        "SELECT HIST((c.time - q.time) / 1000) FROM (SELECT rq, time FROM block.block_rq_issue \
         UNION ALL SELECT rq, time FROM block.block_rq_complete WHERE rq.__data_len > 0) q \
         JOIN block.block_rq_complete c ON q.rq = c.rq",
        // The same with classic tracepoints: a record struct per branch.
        "SELECT MAX(x.time - s.time) FROM (SELECT tid, time FROM syscalls.sys_enter_read \
         UNION ALL SELECT tid, time FROM syscalls.sys_enter_pread64 WHERE fd > 2) s \
         JOIN syscalls.sys_exit_read x ON s.tid = x.tid",
    ] {
        compiles(sql);
    }
}

/// Histogram programs: signed and unsigned arguments, extreme LHIST bounds,
/// string keys, count windows.
#[test]
fn histogram_programs_compile_with_clang() {
    for sql in [
        "SELECT comm, HIST(count), LHIST(count, 0, 400, 100), P50(count), P999(count) FROM syscalls.sys_enter_pread64 GROUP BY comm WINDOW(count, 100, 50)",
        "SELECT HIST(-pos), LHIST(-pos, -9223372036854775808, 9223372036854775807, 18446744073709552), QUANTILE(pos - 5, 0.25) FROM syscalls.sys_enter_pread64",
        "SELECT fd, LHIST(count, 7, 8, 1), HIST(count * 2), MIN(count), AVG(count) FROM syscalls.sys_enter_pread64 GROUP BY fd HAVING P90(count) > 3",
    ] {
        compiles(sql);
    }
}

/// The keyless aggregate of the `keyless.bpf.c` snapshot.
#[test]
fn keyless_program_compiles_with_clang() {
    compiles(
        "SELECT COUNT(*), SUM(count), MIN(count), MAX(count), HIST(count) FROM syscalls.sys_enter_pread64 \
         WHERE comm = 'dd'",
    );
}

/// Every cut of the pipeline (`--stage-limit`) compiles.
#[test]
fn every_stage_cut_compiles_with_clang() {
    let sql = "SELECT time, pid, count FROM syscalls.sys_enter_pread64 WHERE comm = 'fio'";
    for limit in [StageLimit::Trigger, StageLimit::Filter, StageLimit::Reserve, StageLimit::Build, StageLimit::Commit] {
        compiles_with(sql, PlanOptions { stage_limit: Some(limit), ..Default::default() });
    }
}

#[test]
fn probe_programs_compile_with_clang() {
    for sql in [
        "SELECT COUNT(*), SUM(arg2) FROM uprobe:libc:pread64 WHERE arg0 > 2",
        "SELECT time, tid, comm, retval FROM uretprobe:libc.so.6:pread64 WHERE retval > 0",
        "SELECT e.func, COUNT(*) FROM uprobe:libc:{pread64,read} e JOIN uretprobe:libc:{pread64,read} x \
         ON e.tid = x.tid AND e.func = x.func GROUP BY e.func",
        // Reads through arguments: a string, and integers of several widths.
        "SELECT str(e.arg1) AS name, user_u64(e.arg3 + 24) AS size, user_i8(e.arg0) AS b, x.retval \
         FROM uprobe:libc:pread64 e JOIN uretprobe:libc:pread64 x ON e.tid = x.tid",
        "SELECT user_u16(arg1) AS v, COUNT(*) FROM uprobe:libc:pread64 WHERE user_i32(arg1 + 4) > 0 GROUP BY v",
        // The probed function's address, and a read at a distance from it (as report io reads a GOT slot).
        "SELECT ip, user_u64(ip + 4096) AS got FROM uprobe:libc:pread64",
        "SELECT e.func, e.ip FROM uprobe:libc:{pread64,read} e JOIN uretprobe:libc:{pread64,read} x \
         ON e.tid = x.tid AND e.func = x.func",
        "SELECT comm, COUNT(*), SUM(arg2) FROM kprobe:vfs_read GROUP BY comm",
        "SELECT pid, retval FROM kretprobe:vfs_read",
        "SELECT COUNT(*), MAX(arg2) FROM fentry:vfs_read WHERE arg2 > 1",
        "SELECT retval, COUNT(*) FROM fexit:vfs_read GROUP BY retval",
    ] {
        compiles(sql);
    }
}

/// Compiles `src` with `compiler` and `std` (warnings are errors, pedantic);
/// the compiler's complaint on failure.
fn compile_header(name: &str, compiler: &str, std: &str, src: &str) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("ebq-pin-header-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("layout.c");
    std::fs::write(&path, src).unwrap();
    let lang = if compiler == "g++" { "c++" } else { "c" };
    let out = std::process::Command::new(compiler)
        .args(["-x", lang, std, "-Wall", "-Wextra", "-pedantic", "-Werror", "-fsyntax-only"])
        .arg(&path)
        .output()
        .unwrap_or_else(|e| panic!("{compiler} (scripts/setup.sh installs gcc and g++): {e}"));
    let _ = std::fs::remove_dir_all(&dir);
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Pin headers of every aggregate shape are valid user-space C99, C11 and
/// C++11 (what a sampler compiles), and their layout checks bite in each.
#[test]
fn pin_headers_compile_as_c_and_cpp() {
    for sql in [
        "SELECT comm, COUNT(*), SUM(count), MIN(-count % 7), HIST(-count) FROM syscalls.sys_enter_pread64 \
         GROUP BY comm WINDOW(time, 1000, 1000)",
        "SELECT fd, COUNT(DISTINCT pid), LHIST(count, 0, 100, 7), AVG(count) FROM syscalls.sys_enter_pread64 \
         GROUP BY fd WINDOW(count, 100, 100)",
        "SELECT P50(count), P99(count), QUANTILE(pos, 0.9) FROM syscalls.sys_enter_pread64",
    ] {
        let h = ebq::codegen::pin_header(&prepare_with(sql, PlanOptions::default()).physical, "/sys/fs/bpf/ebq/q")
            .expect("aggregates have a pin header");
        assert!(!h.contains("_Static_assert(sizeof"), "C11-only checks: {h}");
        let main = "int main(void) { struct ebq_key k; struct ebq_value v; struct ebq_stats s; \
                    return (int)(sizeof k + sizeof v + sizeof s) * 0 + EBQ_LAYOUT_VERSION - 2; }\n";
        let wrong = "EBQ_STATIC_ASSERT(sizeof(struct ebq_key) == 3, \"ebq_key layout\");\n";
        for (compiler, std) in [("gcc", "-std=c99"), ("gcc", "-std=c11"), ("g++", "-std=c++11")] {
            let name = std.trim_start_matches("-std=");
            if let Err(e) = compile_header(name, compiler, std, &format!("{h}\n{main}")) {
                panic!("{compiler} {std}: {sql}\n{e}\n{h}");
            }
            let e = compile_header(name, compiler, std, &format!("{h}\n{wrong}{main}")).expect_err("a wrong size");
            assert!(e.contains("error"), "{compiler} {std}: {e}");
        }
    }
}

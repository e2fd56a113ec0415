//! Strings from user memory (issue 18 item 1) on the real kernel: `const char *`
//! system call arguments (openat's `filename`), execve's `argv`, carried through
//! an enter→exit JOIN and used as a GROUP BY key, against the workload's report.

use crate::common;

use common::{ebq_output as ebq, stats_value, workload_bin};
use serde_json::Value as Json;
use std::process::Output;

/// (ebq's result rows, the workload's report): both are JSON lines on stdout.
fn split(out: &Output) -> (Vec<Json>, Json) {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<Json> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str::<Json>(l).unwrap()).collect();
    let report = lines.iter().find(|l| l.get("opens").is_some()).expect("the workload's report").clone();
    (lines.into_iter().filter(|r| r.get("opens").is_none()).collect(), report)
}

fn opens(comm: &str, paths: &[&str]) -> String {
    format!("{} opens --comm {comm} --paths {}", workload_bin().display(), paths.join(","))
}

#[test]
fn opensnoop_lists_each_file_name_with_its_fd_or_error() {
    let paths = ["/etc/hostname", "/nonexistent/ebq-a", "/proc/self/status", "/nonexistent/ebq-b"];
    let out = ebq(&[
        "-c",
        &opens("ebq-opensnoop", &paths),
        "--format",
        "json",
        "SELECT e.comm, e.filename, x.ret FROM syscalls.sys_enter_openat e JOIN syscalls.sys_exit_openat x \
         ON e.tid = x.tid WHERE e.comm = 'ebq-opensnoop'",
    ]);
    let (rows, report) = split(&out);
    let got: Vec<(String, String, i64)> = rows
        .iter()
        .map(|r| {
            (r["comm"].as_str().unwrap().into(), r["filename"].as_str().unwrap().into(), r["ret"].as_i64().unwrap())
        })
        .collect();
    let want: Vec<(String, String, i64)> = report["opens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| ("ebq-opensnoop".into(), o["path"].as_str().unwrap().into(), o["ret"].as_i64().unwrap()))
        .collect();
    assert_eq!(got, want);
    assert_eq!(want.iter().map(|w| w.2 == -2).collect::<Vec<_>>(), [false, true, false, true]);
    assert!(want[0].2 >= 0 && want[2].2 >= 0, "{want:?}");
}

#[test]
fn a_user_string_is_a_group_by_key() {
    let paths = ["/etc/hostname", "/nonexistent/ebq-c", "/etc/hostname", "/etc/hostname"];
    let out = ebq(&[
        "-c",
        &opens("ebq-opengroup", &paths),
        "--format",
        "json",
        "SELECT filename, COUNT(*) AS n FROM syscalls.sys_enter_openat WHERE comm = 'ebq-opengroup' \
         GROUP BY filename ORDER BY filename",
    ]);
    let (rows, _) = split(&out);
    let got: Vec<(&str, u64)> =
        rows.iter().map(|r| (r["filename"].as_str().unwrap(), r["n"].as_u64().unwrap())).collect();
    assert_eq!(got, [("/etc/hostname", 3), ("/nonexistent/ebq-c", 1)]);
}

/// Issue 40 item 10: `argv` reads back as the arguments a shell would give:
/// an entry with a space or a quote is quoted (`'it'\''s a file'`), the
/// others are not.
#[test]
fn execve_shows_the_program_and_its_arguments_shell_quoted() {
    let workload = workload_bin().display().to_string();
    let out = ebq(&[
        "-c",
        &format!("{workload} opens --comm ebq-argv --paths '/nonexistent/it'\\''s a file'"),
        "--format",
        "json",
        &format!("SELECT filename, argv FROM syscalls.sys_enter_execve WHERE filename = '{workload}'"),
    ]);
    let (rows, report) = split(&out);
    assert_eq!(report["opens"][0]["path"].as_str(), Some("/nonexistent/it's a file"), "one argument: {report}");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["filename"].as_str(), Some(workload.as_str()));
    assert_eq!(
        rows[0]["argv"].as_str(),
        Some(format!("{workload} opens --comm ebq-argv --paths '/nonexistent/it'\\''s a file'").as_str())
    );
}

/// The paths of the cold-open tests: the second and third from a page not
/// resident at openat's entry (`ebq-workload opens --cold 1,2`), the fourth
/// empty (read, so `""`).
const COLD_PATHS: [&str; 5] = ["/etc/hostname", "/etc/hostname", "/nonexistent/ebq-cold", "", "/etc/hostname"];

/// `sql` in JSON around the workload's opens of [`COLD_PATHS`] as `comm`.
fn around_cold_opens(comm: &str, sql: &str) -> Output {
    let cold = format!("{} --cold 1,2", opens(comm, &COLD_PATHS));
    ebq(&["-c", &cold, "--format", "json", sql])
}

/// What the stats line says of strings it could not read (absent: none).
const UNREADABLE: &str = " strings could not be read";

/// Issue 40 item 6: a file name in a page not resident at openat's entry
/// cannot be read there: its row says NULL, not `""` (an empty path, read,
/// stays `""`), and the stats line counts exactly the workload's cold opens;
/// the readable names are kept.
#[test]
fn an_unreadable_file_name_is_null_and_counted() {
    let out = around_cold_opens("ebq-cold", "SELECT filename FROM syscalls.sys_enter_openat WHERE comm = 'ebq-cold'");
    let (rows, report) = split(&out);
    let cold: Vec<bool> = report["opens"].as_array().unwrap().iter().map(|o| o["cold"].as_bool().unwrap()).collect();
    assert_eq!(cold, [false, true, true, false, false]);
    let got: Vec<&Json> = rows.iter().map(|r| &r["filename"]).collect();
    let want = [Json::from("/etc/hostname"), Json::Null, Json::Null, Json::from(""), Json::from("/etc/hostname")];
    assert_eq!(got, want.iter().collect::<Vec<_>>(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        stats_value(&String::from_utf8_lossy(&out.stderr), UNREADABLE).unwrap_or(0),
        cold.iter().filter(|c| **c).count() as u64
    );
}

/// The same opens grouped by file name, the name read into the string
/// scratch for the WHERE and copied into the key: NULL is its own group,
/// apart from the empty name.
#[test]
fn an_unreadable_file_name_is_its_own_group() {
    let out = around_cold_opens(
        "ebq-coldgroup",
        "SELECT filename, COUNT(*) AS n FROM syscalls.sys_enter_openat \
         WHERE comm = 'ebq-coldgroup' AND filename NOT LIKE '/proc/%' GROUP BY filename ORDER BY filename",
    );
    let (rows, _) = split(&out);
    let got: Vec<(Json, u64)> = rows.iter().map(|r| (r["filename"].clone(), r["n"].as_u64().unwrap())).collect();
    assert_eq!(got, [(Json::from(""), 1), (Json::from("/etc/hostname"), 2), (Json::Null, 2)]);
    // WHERE tests comm before it reads the name (codegen's where_steps): a name unreadable at
    // the workload's start (glibc's /proc/self/maps, before it takes its comm) is not counted,
    // as it was 1 run in 3 when the name was read first.
    let unreadable = stats_value(&String::from_utf8_lossy(&out.stderr), UNREADABLE).unwrap_or(0);
    assert_eq!(unreadable, 2, "{}", String::from_utf8_lossy(&out.stderr));
}

/// The JOIN form reads the start's file name at the exit, from the pointer
/// the entry kept: by then the call has faulted the page in, so every name
/// is read, cold or not, and nothing is counted unreadable.
#[test]
fn the_join_form_reads_the_file_name_at_the_exit() {
    let out = around_cold_opens(
        "ebq-coldjoin",
        "SELECT e.filename, x.ret FROM syscalls.sys_enter_openat e JOIN syscalls.sys_exit_openat x \
         ON e.tid = x.tid WHERE e.comm = 'ebq-coldjoin'",
    );
    let (rows, report) = split(&out);
    let got: Vec<(&str, i64)> =
        rows.iter().map(|r| (r["filename"].as_str().unwrap_or("NULL"), r["ret"].as_i64().unwrap())).collect();
    let want: Vec<(&str, i64)> = report["opens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["path"].as_str().unwrap(), o["ret"].as_i64().unwrap()))
        .collect();
    assert_eq!(got, want);
    assert_eq!(want.iter().filter(|w| w.1 >= 0).count(), 3, "{want:?}");
    assert_eq!(
        stats_value(&String::from_utf8_lossy(&out.stderr), UNREADABLE).unwrap_or(0),
        0,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Issue 40 item 6: `str_at_exit(filename)` in a row query over openat's
/// entry reads each name at the call's exit (the entry paired with its exit
/// on the thread, as the JOIN form): every name is read, cold or not, in the
/// workload's order, nothing is counted unreadable, and every call returned
/// (no pair left open). `time` is the entry's: one per open, increasing.
#[test]
fn str_at_exit_reads_every_file_name_at_the_exit() {
    let out = around_cold_opens(
        "ebq-coldexit",
        "SELECT time, comm, str_at_exit(filename) AS name FROM syscalls.sys_enter_openat WHERE comm = 'ebq-coldexit'",
    );
    let (rows, report) = split(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let got: Vec<&Json> = rows.iter().map(|r| &r["name"]).collect();
    let want: Vec<Json> = report["opens"].as_array().unwrap().iter().map(|o| o["path"].clone()).collect();
    assert_eq!(want, COLD_PATHS.map(Json::from), "{report}");
    assert_eq!(got, want.iter().collect::<Vec<_>>(), "{stderr}");
    assert!(rows.iter().all(|r| r["comm"] == "ebq-coldexit"), "{rows:?}");
    let times: Vec<u64> = rows.iter().map(|r| r["time"].as_u64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
    assert_eq!(stats_value(&stderr, UNREADABLE).unwrap_or(0), 0, "{stderr}");
    assert_eq!(stats_value(&stderr, " pairs left open"), Some(0), "{stderr}");
    assert_eq!(stats_value(&stderr, " delivered"), Some(COLD_PATHS.len() as u64), "{stderr}");
}

/// The same as a group key, and in WHERE (checked at the exit, the name read
/// there): cold names are counted under their names, none is NULL.
#[test]
fn str_at_exit_is_a_group_key_read_at_the_exit() {
    let out = around_cold_opens(
        "ebq-coldexitgrp",
        "SELECT str_at_exit(filename) AS name, COUNT(*) AS n FROM syscalls.sys_enter_openat \
         WHERE comm = 'ebq-coldexitgrp' AND str_at_exit(filename) NOT LIKE '/proc/%' GROUP BY 1 ORDER BY 1",
    );
    let (rows, _) = split(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let got: Vec<(Json, u64)> = rows.iter().map(|r| (r["name"].clone(), r["n"].as_u64().unwrap())).collect();
    assert_eq!(got, [(Json::from(""), 1), (Json::from("/etc/hostname"), 3), (Json::from("/nonexistent/ebq-cold"), 1)]);
    assert_eq!(stats_value(&stderr, UNREADABLE).unwrap_or(0), 0, "{stderr}");
}

/// A call that has not returned when the query stops is never silently
/// lost: its entry is a pair left open on the stats line. The workload
/// opens a file, then a FIFO no writer opens until after ebq's `--duration`.
#[test]
fn str_at_exit_counts_a_call_still_in_progress_as_left_open() {
    let fifo = std::env::temp_dir().join(format!("ebq-atexit-fifo-{}", std::process::id()));
    let fifo = fifo.display().to_string();
    let cmd = format!(
        "rm -f {fifo}; mkfifo {fifo} && (sleep 6; echo > {fifo}) & sleep 0.2; exec {} opens --comm ebq-exitfifo \
         --paths /etc/hostname,{fifo}",
        workload_bin().display()
    );
    let out = ebq(&[
        "-c",
        &cmd,
        "--duration",
        "3",
        "--format",
        "json",
        "SELECT str_at_exit(filename) AS name FROM syscalls.sys_enter_openat WHERE comm = 'ebq-exitfifo'",
    ]);
    let _ = std::fs::remove_file(&fifo);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let (rows, report) = split(&out);
    assert_eq!(report["opens"].as_array().map(Vec::len), Some(2), "{report}");
    let got: Vec<&Json> = rows.iter().map(|r| &r["name"]).collect();
    assert_eq!(got, [&Json::from("/etc/hostname")], "{stderr}");
    assert_eq!(stats_value(&stderr, " pairs left open"), Some(1), "{stderr}");
}

#[test]
fn str_reads_the_string_at_any_pointer_column() {
    let paths = ["/etc/hostname", "/nonexistent/ebq-e"];
    let out = ebq(&[
        "-c",
        &opens("ebq-str", &paths),
        "--format",
        "json",
        "SELECT str(args[1]) AS path, str(args[1], 4) AS head FROM raw_syscalls.sys_enter \
         WHERE id = syscall_nr('openat') AND comm = 'ebq-str'",
    ]);
    let (rows, _) = split(&out);
    let got: Vec<(&str, &str)> =
        rows.iter().map(|r| (r["path"].as_str().unwrap(), r["head"].as_str().unwrap())).collect();
    assert_eq!(got, [("/etc/hostname", "/etc"), ("/nonexistent/ebq-e", "/non")]);
}

/// Issue 40 item 4: a `const char *` argument, already a string, takes a
/// length too (`str(buf, 32)` at `sys_enter_write` was refused).
#[test]
fn str_with_a_length_cuts_a_string_argument() {
    let paths = ["/etc/hostname", "/nonexistent/ebq-f"];
    let out = ebq(&[
        "-c",
        &opens("ebq-strlen", &paths),
        "--format",
        "json",
        "SELECT filename, str(filename, 4) AS head FROM syscalls.sys_enter_openat WHERE comm = 'ebq-strlen'",
    ]);
    let (rows, _) = split(&out);
    let got: Vec<(&str, &str)> =
        rows.iter().map(|r| (r["filename"].as_str().unwrap(), r["head"].as_str().unwrap())).collect();
    assert_eq!(got, [("/etc/hostname", "/etc"), ("/nonexistent/ebq-f", "/non")]);
}

/// Issue 40 item 4: `str()` of a kernel `char *` reached through BTF, as
/// bpftrace users write `str(args->bprm->filename)`: the program the kernel
/// executed, read with bpf_probe_read_kernel_str at sched_process_exec
/// (tp_btf), whole, cut by a length, and as a LIKE filter in the kernel.
/// Item 6: one the kernel left NULL (`bprm.fdpath`, set only for an exec
/// through a file descriptor, not by path as here) cannot be read: NULL,
/// not `""`, and counted.
#[test]
fn str_reads_a_kernel_char_pointer_through_btf() {
    let workload = workload_bin().display().to_string();
    let out = ebq(&[
        "-c",
        &opens("ebq-kstr", &["/nonexistent/ebq-k"]),
        "--format",
        "json",
        "SELECT pid, str(bprm.filename) AS file, str(bprm.filename, 4) AS head, str(bprm.fdpath) AS fdpath \
         FROM sched.sched_process_exec WHERE str(bprm.filename) LIKE '%/ebq-workload'",
    ]);
    let (rows, _) = split(&out);
    assert_eq!(rows.len(), 1, "one exec of the workload: {rows:?}");
    assert_eq!(rows[0]["file"].as_str(), Some(workload.as_str()));
    assert_eq!(rows[0]["head"].as_str(), Some(&workload[..4]));
    assert_eq!(rows[0]["fdpath"], Json::Null, "{rows:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("1 matched, 1 delivered, 0 dropped, 0 missed"), "{stderr}");
    assert_eq!(stats_value(&stderr, UNREADABLE), Some(1), "{stderr}");
}

/// Issue 40 item 6: an `argv` that cannot be read (here its array is at an
/// address no mapping holds, and execve of `/bin/true` fails with EFAULT) is
/// NULL and counted, not an empty or a cut command line.
#[test]
fn an_unreadable_argv_is_null_and_counted() {
    let out = ebq(&[
        "-c",
        &format!("{} --bad-argv /bin/true", opens("ebq-badargv", &["/etc/hostname"])),
        "--format",
        "json",
        "SELECT filename, argv FROM syscalls.sys_enter_execve WHERE comm = 'ebq-badargv'",
    ]);
    let (rows, report) = split(&out);
    assert_eq!(report["bad_argv_exec"], Json::from(-libc::EFAULT), "{report}");
    let got: Vec<(&Json, &Json)> = rows.iter().map(|r| (&r["filename"], &r["argv"])).collect();
    assert_eq!(got, [(&Json::from("/bin/true"), &Json::Null)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stats_value(&stderr, UNREADABLE), Some(1), "{stderr}");
}

/// Issue 40 item 6: a union's string column is NULL where a branch's user
/// string could not be read, whichever branch that is, and a branch whose
/// string is never NULL (`''` here, written into ring records after the
/// NULL ones) stays `""`.
#[test]
fn a_union_column_is_null_where_its_branch_could_not_read_the_string() {
    let out = around_cold_opens(
        "ebq-coldunion",
        "SELECT time, name FROM (SELECT '' AS name FROM syscalls.sys_exit_openat \
         UNION ALL SELECT filename AS name FROM syscalls.sys_enter_openat) u WHERE comm = 'ebq-coldunion'",
    );
    let (mut rows, _) = split(&out);
    rows.sort_by_key(|r| r["time"].as_u64().unwrap());
    let got: Vec<&Json> = rows.iter().map(|r| &r["name"]).collect();
    let (name, empty) = (Json::from("/etc/hostname"), Json::from(""));
    let want = [&name, &empty, &Json::Null, &empty, &Json::Null, &empty, &empty, &empty, &name, &empty];
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(got, want, "an entry, then its exit, per open: {stderr}");
    assert_eq!(stats_value(&stderr, UNREADABLE), Some(2), "{stderr}");
}

/// LIKE '%suffix', '%infix%' and their NOT LIKE on a user string, in the
/// kernel: counts equal to the workload's own opens. A long name before a
/// short one leaves its tail in the per-CPU string scratch past the short
/// name's NUL (`.conf`, `MARK`): a match that looked past the NUL would count
/// the short names too.
#[test]
fn like_suffix_and_contains_count_exactly_the_matching_opens() {
    let long = "/nonexistent/ebq-like/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaMARKbbbbbbbbbbbbbbbbbbbb.conf";
    let paths = [
        long,
        "/nonexistent/ebq-like/x",
        long,
        "/nonexistent/ebq-like/y.conf",
        "/nonexistent/ebq-like/c",
        "/etc/hostname",
    ];
    let out = ebq(&[
        "-c",
        &opens("ebq-like", &paths),
        "--format",
        "json",
        "SELECT COUNT(*) AS n, \
         SUM(CASE WHEN filename LIKE '%.conf' THEN 1 ELSE 0 END) AS conf, \
         SUM(CASE WHEN filename NOT LIKE '%.conf' THEN 1 ELSE 0 END) AS not_conf, \
         SUM(CASE WHEN filename LIKE '%MARK%' THEN 1 ELSE 0 END) AS mark, \
         SUM(CASE WHEN filename NOT LIKE '%MARK%' THEN 1 ELSE 0 END) AS not_mark, \
         SUM(CASE WHEN filename LIKE '%/c' THEN 1 ELSE 0 END) AS c \
         FROM syscalls.sys_enter_openat WHERE comm = 'ebq-like' AND filename LIKE '%/ebq-like/%'",
    ]);
    let (rows, report) = split(&out);
    let opened: Vec<&str> = report["opens"].as_array().unwrap().iter().map(|o| o["path"].as_str().unwrap()).collect();
    assert_eq!(opened, paths);
    let count = |f: &dyn Fn(&str) -> bool| opened.iter().filter(|p| p.contains("/ebq-like/") && f(p)).count() as u64;
    let want = [
        ("n", count(&|_| true)),
        ("conf", count(&|p| p.ends_with(".conf"))),
        ("not_conf", count(&|p| !p.ends_with(".conf"))),
        ("mark", count(&|p| p.contains("MARK"))),
        ("not_mark", count(&|p| !p.contains("MARK"))),
        ("c", count(&|p| p.ends_with("/c"))),
    ];
    assert_eq!(want, [("n", 5), ("conf", 3), ("not_conf", 2), ("mark", 2), ("not_mark", 3), ("c", 1)]);
    assert_eq!(rows.len(), 1, "{rows:?}");
    let got: Vec<(&str, u64)> = want.iter().map(|(k, _)| (*k, rows[0][k].as_u64().unwrap_or(u64::MAX))).collect();
    assert_eq!(got, want, "{rows:?}");
}

/// execveat's `argv` and `envp` (192 bytes each with their read slack) beside
/// an expression: on the stack they took clang past 512 bytes, a query that
/// bound and planned and then failed to compile (a props seed in the
/// fresh-clone series). They are read into the per-CPU string scratch: the
/// program loads, and `/bin/sh -c` running a command execs it.
#[test]
fn execveat_argv_and_envp_beside_an_expression_load() {
    let out = ebq(&[
        "-c",
        "/bin/true",
        "--format",
        "json",
        "SELECT NOT (__syscall_nr + __syscall_nr = __syscall_nr AND comm != 'aaaaaaa'), \
         4294967295 * __syscall_nr / (fd & -18446744073709551615), * FROM syscalls.sys_enter_execveat \
         WHERE NOT filename = 'rcu_sched'",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stats_value(&stderr, " missed"), Some(0), "{stderr}");
}

/// `env_int()` reads the process's environment in the kernel, at the event:
/// the rows of `true`'s exit are read after it is gone, and still carry the
/// numbers its environment held. The first name that is set wins, in the
/// order the query gives them. A variable longer than one read whose tail
/// looks like `EBQ_B=9` at the read's boundary is not taken for `EBQ_B`,
/// and a value that is no number is -1.
#[test]
fn env_int_reads_a_gone_processs_environment_at_its_event() {
    let pad = format!("EBQ_PAD={}EBQ_B=9", "x".repeat(127 - "EBQ_PAD=".len()));
    let out = ebq(&[
        "-c",
        &format!("env -i {pad} EBQ_A=17 EBQ_B=42 EBQ_WORD=abc /bin/true"),
        "--format",
        "json",
        "SELECT pid, env_int('EBQ_MISSING', 'EBQ_B', 'EBQ_A') AS b, env_int('EBQ_A') AS a, \
         env_int('EBQ_WORD') AS word, env_int('EBQ_MISSING') AS missing \
         FROM syscalls.sys_enter_exit_group WHERE comm = 'true'",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let rows: Vec<Json> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str::<Json>(l).unwrap()).collect();
    // Exact or accounted: `true` exits once.
    let lost = stats_value(&stderr, "missed").unwrap_or(0) + stats_value(&stderr, "dropped").unwrap_or(0);
    assert_eq!(rows.len() as u64 + lost, 1, "one exit of `true`: {rows:?}\n{stderr}");
    for r in &rows {
        let v = |k: &str| r[k].as_i64().unwrap();
        assert_eq!([v("b"), v("a"), v("word"), v("missing")], [42, 17, -1, -1], "{rows:?}");
    }
}

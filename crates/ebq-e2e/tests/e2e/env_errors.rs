//! Environment errors of the CLI: each ends the process with exit status 1
//! and one actionable message on stderr. (A missing tracefs is not tested:
//! it would need unmounting the machine's tracefs.)

use crate::common;

use std::process::{Command, Output};

const QUERY: &str = "SELECT COUNT(*) FROM syscalls.sys_enter_read";

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `ebq QUERY --duration 1` as a user without privileges.
fn run_unprivileged() -> Output {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"])
        .arg(common::ebq_bin())
        .args([QUERY, "--duration", "1"])
        .output()
        .expect("run setpriv (util-linux)")
}

#[test]
fn missing_clang_is_reported() {
    let dir = std::env::temp_dir().join(format!("ebq-env-noclang-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The only thing on PATH: a link to something that is not clang.
    let _ = std::os::unix::fs::symlink("/bin/true", dir.join("true"));
    let out = Command::new(common::ebq_bin())
        .args([QUERY, "--duration", "1"])
        .env("PATH", &dir)
        .env_remove("EBQ_CLANG")
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "stderr:\n{err}");
    assert!(err.contains("clang was not found"), "stderr:\n{err}");
    assert!(err.contains("EBQ_CLANG"), "the help names EBQ_CLANG:\n{err}");
}

#[test]
fn clang_named_by_ebq_clang_must_exist() {
    let out = Command::new(common::ebq_bin())
        .args([QUERY, "--duration", "1"])
        .env("EBQ_CLANG", "/nonexistent/clang")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "stderr:\n{err}");
    assert!(err.contains("error"), "stderr:\n{err}");
}

#[test]
fn unprivileged_run_fails_cleanly() {
    let out = run_unprivileged();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "stderr:\n{err}");
    assert!(err.starts_with("error:"), "stderr:\n{err}");
    assert!(!err.contains("panicked"), "stderr:\n{err}");
}

/// Today the catalog is opened before the privilege check, so an unprivileged
/// user sees "cannot read /sys/kernel/tracing/events: Permission denied"
/// instead of the message saying root (or CAP_BPF + CAP_PERFMON) is needed.
#[test]
fn unprivileged_run_says_root_is_needed() {
    let out = run_unprivileged();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "stderr:\n{err}");
    assert!(err.contains("root"), "stderr:\n{err}");
}

#[test]
fn invalid_query_exits_1_with_a_caret() {
    let sql = "SELECT MAX(cout) FROM syscalls.sys_enter_read";
    let out = Command::new(common::ebq_bin()).args([sql, "--duration", "1"]).output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "stderr:\n{err}");
    assert!(err.contains("unknown column `cout`"), "stderr:\n{err}");
    assert!(err.contains(&format!("1 | {sql}")), "stderr:\n{err}");
    assert!(err.lines().any(|l| l.trim() == "^^^^"), "caret line under `cout`:\n{err}");
    assert!(err.contains("did you mean `count`"), "stderr:\n{err}");
    assert!(out.stdout.is_empty(), "nothing on stdout: {:?}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn invalid_query_in_explain_exits_1() {
    let out = Command::new(common::ebq_bin())
        .args(["explain", "SELECT COUNT(*) FROM syscalls.sys_enter_raed"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "stderr:\n{err}");
    assert!(err.contains("unknown event") && err.contains("did you mean"), "stderr:\n{err}");
    assert!(err.lines().any(|l| l.trim_start().starts_with('^')), "stderr:\n{err}");
}

//! kprobe and fentry events through the CLI. They bind and explain anywhere;
//! running them first asks the kernel whether it allows that kind of probe,
//! before clang runs, and where it does not the user gets one message naming
//! the tracepoint to use instead.
//!
//! On the machine these tests were written on, kprobes are not built in and
//! fentry programs are refused (EPERM); where a kernel allows them, the same
//! tests check that the query runs instead.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `ebq ARGS` with an empty PATH (no clang) unless `with_clang`.
fn ebq(args: &[&str], with_clang: bool) -> Output {
    let mut cmd = Command::new(common::ebq_bin());
    cmd.args(args);
    if !with_clang {
        cmd.env("PATH", "/nonexistent").env_remove("EBQ_CLANG");
    }
    cmd.output().unwrap()
}

fn kprobes_built_in() -> bool {
    Path::new("/sys/bus/event_source/devices/kprobe/type").exists()
        || Path::new("/sys/kernel/tracing/kprobe_events").exists()
}

#[test]
fn kprobe_is_refused_before_compiling_with_a_tracepoint_to_use() {
    let q = "SELECT COUNT(*) FROM kprobe:vfs_read";
    if kprobes_built_in() {
        let out = ebq(&[q, "--duration", "1"], true);
        assert!(out.status.success(), "{}", stderr(&out));
        return;
    }
    // No clang on PATH: had ebq compiled first, it would complain about clang.
    let out = ebq(&[q, "--duration", "1"], false);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("kprobe:vfs_read: this kernel does not allow kprobes (CONFIG_KPROBES is off"), "{err}");
    assert!(err.contains("use tracepoint syscalls:sys_enter_read instead"), "{err}");
    assert!(!err.contains("clang"), "{err}");
    let out = ebq(&["SELECT COUNT(*) FROM kretprobe:do_sys_openat2", "--duration", "1"], false);
    assert!(stderr(&out).contains("use tracepoint syscalls:sys_exit_openat2 instead"), "{}", stderr(&out));
}

#[test]
fn fentry_is_refused_or_runs() {
    for (q, instead) in [
        ("SELECT COUNT(*), SUM(arg2) FROM fentry:vfs_read", "syscalls:sys_enter_read"),
        ("SELECT retval, COUNT(*) FROM fexit:vfs_write GROUP BY retval", "syscalls:sys_exit_write"),
    ] {
        let out = ebq(&[q, "--duration", "1"], true);
        let err = stderr(&out);
        if out.status.success() {
            continue; // this kernel has BPF trampolines
        }
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("this kernel does not allow fentry/fexit programs"), "{err}");
        assert!(err.contains(&format!("use tracepoint {instead} instead")), "{err}");
        // Refused before compiling: the same message without clang.
        assert_eq!(stderr(&ebq(&[q, "--duration", "1"], false)), err);
    }
}

#[test]
fn explain_prints_kprobe_and_fentry_programs() {
    for (q, section, ctx) in [
        ("SELECT comm, COUNT(*) FROM kprobe:vfs_read GROUP BY comm", "SEC(\"kprobe/vfs_read\")", "struct pt_regs *ctx"),
        ("SELECT pid, retval FROM kretprobe:vfs_read", "SEC(\"kretprobe/vfs_read\")", "EBQ_REG(ctx, rax, ax)"),
        ("SELECT SUM(arg2) FROM fentry:vfs_read", "SEC(\"fentry/vfs_read\")", "ctx[2]"),
        ("SELECT MAX(retval) FROM fexit:vfs_read", "SEC(\"fexit/vfs_read\")", "ctx[4]"),
    ] {
        let out = ebq(&["explain", q], true);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(text.contains(section) && text.contains(ctx), "{text}");
    }
}

#[test]
fn probe_queries_are_not_bundled() {
    let bundle = std::env::temp_dir().join(format!("ebq-probe-bundle-{}", std::process::id()));
    let out = Command::new(common::ebq_bin())
        .args(["compile", "SELECT COUNT(*) FROM uprobe:libc:pread64", "-o"])
        .arg(&bundle)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("bundles hold tracepoint queries only"), "{}", stderr(&out));
    assert!(!bundle.exists());
}

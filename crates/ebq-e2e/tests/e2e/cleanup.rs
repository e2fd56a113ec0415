//! Issue 7: signals leave nothing behind; two ebq instances do not interfere.

use crate::common;

use common::{ebq_bin, workload_bin, ProgWatch};
use serde_json::Value as Json;
use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Starts ebq and returns once it says it is tracing.
fn start_ebq(args: &[&str]) -> Child {
    let mut child =
        Command::new(ebq_bin()).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start ebq");
    let mut line = String::new();
    std::io::BufReader::new(child.stderr.as_mut().unwrap()).read_line(&mut line).unwrap();
    assert!(line.starts_with("ebq: tracing"), "{line}");
    child
}

#[test]
fn sigkill_and_sigterm_leave_no_program_behind() {
    // Only the programs this ebq held (its fdinfo), not the machine's.
    for (signal, sql) in [
        (libc::SIGKILL, "SELECT comm, COUNT(*) FROM raw_syscalls.sys_enter GROUP BY comm WINDOW(time, 1000, 1000)"),
        (libc::SIGKILL, "SELECT pid, comm FROM syscalls.sys_enter_read"),
        (libc::SIGTERM, "SELECT COUNT(*) FROM raw_syscalls.sys_enter"),
    ] {
        let mut ebq = start_ebq(&[sql]);
        let watch = ProgWatch::of(ebq.id());
        assert!(!watch.holding(ebq.id()).is_empty(), "attached while running");
        // SAFETY: signalling our own child.
        unsafe { libc::kill(ebq.id() as i32, signal) };
        let status = ebq.wait().unwrap();
        if signal == libc::SIGTERM {
            assert!(status.success(), "SIGTERM prints the final window and exits 0");
        }
        watch.assert_gone();
    }
}

#[test]
fn killing_the_traced_command_ends_ebq_with_its_status() {
    let mut ebq = start_ebq(&["-c", "sleep 30", "SELECT COUNT(*) FROM raw_syscalls.sys_enter"]);
    let watch = ProgWatch::of(ebq.id());
    assert!(!watch.holding(ebq.id()).is_empty(), "attached while running");
    // Find the command (a child of ebq) and kill it.
    let deadline = Instant::now() + Duration::from_secs(5);
    let child_pid = loop {
        let out = Command::new("pgrep").args(["-P", &ebq.id().to_string()]).output().unwrap();
        if let Some(p) = String::from_utf8_lossy(&out.stdout).lines().next().and_then(|l| l.trim().parse::<i32>().ok())
        {
            break p;
        }
        assert!(Instant::now() < deadline, "no child");
        std::thread::sleep(Duration::from_millis(20));
    };
    // SAFETY: killing the test's grandchild.
    unsafe { libc::kill(child_pid, libc::SIGKILL) };
    let status = ebq.wait().unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGKILL), "ebq exits with the command's status");
    watch.assert_gone();
}

#[test]
fn two_instances_at_once_count_exactly() {
    let run = |comm: &'static str, calls: &'static str| {
        std::thread::spawn(move || {
            let cmd = format!("{} pread --fds 2 --calls {calls} --fd-base 100 --comm {comm}", workload_bin().display());
            let sql =
                format!("SELECT fd, COUNT(*) AS n FROM syscalls.sys_enter_pread64 WHERE comm = '{comm}' GROUP BY fd");
            let out = Command::new(ebq_bin()).args(["-c", &cmd, "--format", "json", &sql]).output().unwrap();
            assert!(out.status.success());
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|l| l.contains("\"n\""))
                .map(|l| {
                    let v: Json = serde_json::from_str(l).unwrap();
                    (v["fd"].as_u64().unwrap(), v["n"].as_u64().unwrap())
                })
                .collect::<Vec<_>>()
        })
    };
    let a = run("ebq-two-a", "300,700");
    let b = run("ebq-two-b", "500,100");
    assert_eq!(a.join().unwrap(), [(100, 300), (101, 700)]);
    assert_eq!(b.join().unwrap(), [(100, 500), (101, 100)]);
}

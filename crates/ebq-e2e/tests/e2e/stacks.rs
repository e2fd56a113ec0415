//! Issue 6: `kstack` / `ustack` system columns on the real kernel. Every
//! pread64 of the workload lands in exactly one stack group, and the frames
//! name what the kernel and libc really ran.

use crate::common;

use common::{rows_of, run_around, s, u};
use ebq::Scope;

/// 3 fds × (30, 20, 10) preads, 3 ms apart: the workload lives while ebq polls
/// (user stacks resolve against a living process's mappings).
const PREAD: &[&str] = &["pread", "--fds", "3", "--calls", "30,20,10", "--fd-base", "100", "--gap-us", "3000"];

/// Runs `SELECT {col}, COUNT(*) … GROUP BY {col}` around the workload; returns
/// (stack, count) rows and the workload's exact call count. `fd >= 100` leaves
/// out the dynamic loader's preads before main.
fn stacks_of(col: &str) -> (Vec<(String, u64)>, u64) {
    let sql = format!(
        "SELECT {col}, COUNT(*) FROM syscalls.sys_enter_pread64 WHERE pid = {{pid}} AND fd >= 100 GROUP BY {col}"
    );
    let (outs, stats, report) = run_around(&sql, |_| Scope::All, PREAD);
    assert_eq!(stats.dropped, 0, "no stack id failed");
    let calls: u64 = report["fds"].as_array().unwrap().iter().map(|f| f["calls"].as_u64().unwrap()).sum();
    assert_eq!(calls, 60);
    assert_eq!(stats.matched, calls);
    let rows = rows_of(&outs).iter().map(|r| (s(r, col), u(r, "COUNT(*)"))).collect();
    (rows, calls)
}

#[test]
fn kstack_groups_every_pread_by_its_kernel_stack() {
    let (rows, calls) = stacks_of("kstack");
    assert!(!rows.is_empty());
    assert_eq!(rows.iter().map(|(_, n)| n).sum::<u64>(), calls, "{rows:?}");
    for (stack, _) in &rows {
        // sys_enter fires in the syscall entry path, before the pread64 handler runs.
        let frames: Vec<&str> = stack.split("; ").collect();
        assert!(frames.iter().any(|f| f.starts_with("do_syscall_64+0x")), "{stack}");
        assert!(frames.last().unwrap().starts_with("entry_SYSCALL_64"), "outermost last: {stack}");
    }
}

#[test]
fn ustack_groups_every_pread_by_its_user_stack_and_names_libc() {
    let (rows, calls) = stacks_of("ustack");
    assert!(!rows.is_empty());
    assert_eq!(rows.iter().map(|(_, n)| n).sum::<u64>(), calls, "{rows:?}");
    for (stack, _) in &rows {
        // The innermost frame is libc's pread64 wrapper (the workload calls it through std's read_at).
        let first = stack.split("; ").next().unwrap();
        assert!(first.contains("pread"), "innermost frame resolves to libc's pread: {stack}");
    }
}

#[test]
fn stacks_are_not_compared() {
    let engine = common::engine();
    let sql = "SELECT COUNT(*) FROM syscalls.sys_enter_read WHERE kstack = 'x'";
    let Err(e) = engine.prepare(sql) else { panic!("comparing a stack is refused") };
    let text = e.render(sql);
    assert!(text.contains("kernel stacks can be selected and grouped by, not compared"), "{text}");
    assert!(text.contains('^'), "positioned: {text}");
    let sql = "SELECT COUNT(*) FROM syscalls.sys_enter_read WHERE ustack + 1 > 2";
    let Err(e) = engine.prepare(sql) else { panic!("arithmetic on a stack is refused") };
    let text = e.render(sql);
    assert!(text.contains("user stacks can be selected and grouped by"), "{text}");
}

#[test]
fn row_queries_stream_symbolized_stacks() {
    let sql = "SELECT fd, kstack FROM syscalls.sys_enter_pread64 WHERE pid = {pid} AND fd >= 100";
    let (outs, stats, _) = run_around(sql, |_| Scope::All, PREAD);
    let rows = rows_of(&outs);
    assert_eq!(rows.len(), 60);
    assert_eq!(stats.dropped, 0);
    assert!(rows.iter().all(|r| s(r, "kstack").contains("do_syscall_64+0x")), "{:?}", rows.first());
}

#[test]
fn a_join_carries_the_start_events_stack() {
    let sql = "SELECT e.kstack, COUNT(*) FROM syscalls.sys_enter_pread64 e JOIN syscalls.sys_exit_pread64 x \
               ON e.tid = x.tid WHERE e.pid = {pid} AND e.fd >= 100 GROUP BY e.kstack";
    let (outs, stats, _) = run_around(sql, |_| Scope::All, PREAD);
    let rows = rows_of(&outs);
    assert_eq!(stats.dropped, 0);
    assert_eq!(rows.iter().map(|r| u(r, "COUNT(*)")).sum::<u64>(), 60, "one pair per pread");
    assert!(rows.iter().all(|r| s(r, "kstack").contains("do_syscall_64+0x")));
}

//! A JOIN whose start side is a union: one start program per branch, each with
//! its own record struct (classic tracepoints) or tp_btf section and its own
//! filter, all writing `ebq_pending`. `tests/compile.rs` compiles them.

use super::tests::generate_for;

/// Two syscalls open pairs closed by one exit; the second only for fd > 2.
pub(crate) const SYSCALLS: &str = "SELECT MAX(x.time - s.time) AS worst \
    FROM (SELECT tid, time FROM syscalls.sys_enter_read \
          UNION ALL SELECT tid, time FROM syscalls.sys_enter_pread64 WHERE fd > 2) s \
    JOIN syscalls.sys_exit_read x ON s.tid = x.tid";

#[test]
fn each_branch_is_a_start_program_with_its_own_record_and_filter() {
    let c = generate_for(SYSCALLS);
    assert!(
        // `--attach auto` runs the first branch (a syscall entry) on the raw sys_enter tracepoint.
        c.contains("SEC(\"tp_btf/sys_enter\")\nint ebq_pair_start_0(__u64 *ctx)"),
        "{c}"
    );
    // The second branch is decided on its own, the same way: raw too, checking its own number.
    assert!(c.contains("SEC(\"tp_btf/sys_enter\")\nint ebq_pair_start_1(__u64 *ctx)"), "{c}");
    assert!(!c.contains("struct ebq_start_event_1 {"), "{c}");
    assert_eq!(c.matches("/* WHERE fd > 2 */").count(), 1, "{c}");
    // Every branch is a system call's entry on the thread: each opens the thread's one pair.
    assert_eq!(
        c.matches("bpf_get_current_task_btf(), 0,\n\t\t\t\t\t  BPF_LOCAL_STORAGE_GET_F_CREATE);").count(),
        2,
        "{c}"
    );
    assert!(!c.contains("int ebq_pair_start("), "{c}");
}

#[test]
fn raw_argument_branches_attach_as_tp_btf_and_read_their_own_arguments() {
    let c = generate_for(
        "SELECT COUNT(*) FROM (SELECT rq, time FROM block.block_rq_issue \
         UNION ALL SELECT rq, time FROM block.block_rq_complete WHERE rq.__data_len > 0) q \
         JOIN block.block_rq_complete c ON q.rq = c.rq WHERE q.rq.tag >= 0",
    );
    assert!(c.contains("SEC(\"tp_btf/block_rq_issue\")\nint ebq_pair_start_0(__u64 *ctx)"), "{c}");
    assert!(c.contains("SEC(\"tp_btf/block_rq_complete\")\nint ebq_pair_start_1(__u64 *ctx)"), "{c}");
    // The query's start-only WHERE runs in both branches, the branch's own in its program only.
    assert_eq!(c.matches("WHERE rq.tag >= 0").count(), 1, "{c}");
    assert_eq!(c.matches("WHERE (rq.__data_len > 0) && (rq.tag >= 0)").count(), 1, "{c}");
}

#[test]
fn explain_shows_every_start_program_with_its_filter() {
    let engine = crate::Engine::with_kernel(crate::host::FixtureKernel::checked_in());
    let plan = engine.prepare(SYSCALLS).unwrap().explain();
    let at = |text: &str| plan.find(text).unwrap_or_else(|| panic!("no `{text}` in {plan}"));
    let first =
        at("[kernel] Attach     tracepoint:syscalls:sys_enter_read (BPF_PROG_TYPE_TRACING, tp_btf, opens pairs)");
    let second =
        at("[kernel] Attach     tracepoint:syscalls:sys_enter_pread64 (BPF_PROG_TYPE_TRACING, tp_btf, opens pairs)");
    let filter = at("[kernel] Filter     fd > 2 (before a pair opens)");
    assert!(first < second && second < filter && filter < at("[kernel] Pair "), "{plan}");
    assert_eq!(plan.matches("[kernel] Filter").count(), 1, "{plan}");
}

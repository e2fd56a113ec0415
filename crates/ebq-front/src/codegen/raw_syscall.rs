//! Code for system-call events run on the raw `sys_enter` / `sys_exit`
//! tracepoints ([`EventSource::RawSyscall`]).
//!
//! A tp_btf program on `sys_enter` gets `(struct pt_regs *regs, long id)`, on
//! `sys_exit` `(regs, long ret)`, for every system call: it leaves at once
//! unless the number is the traced one, then skips 32-bit (ia32) calls, whose
//! numbers mean other calls — the classic `syscalls:*` tracepoints skip them
//! too. Each column of the event's tracefs format is read from the saved user
//! registers of the x86-64 system-call convention (di, si, dx, r10, r8, r9),
//! cast to the field's size and sign, so it holds the value the classic
//! tracepoint's record would. `pt_regs` and `task_struct` are read through
//! CO-RE-relocated local views, so the minimal header suffices (no vmlinux.h).

use crate::bind::{BoundEvent, EventSource};
use crate::types::DataType;

/// Registers holding system-call arguments 0…5 (`struct pt_regs` field names
/// in the kernel's BTF; r10, not cx, which `syscall` clobbers).
const SYSCALL_ARG_REGS: [&str; MAX_ARGS] = ["di", "si", "dx", "r10", "r8", "r9"];

use crate::plan::syscall_attach::{MAX_ARGS, NR_FIELD};

/// Declarations every raw system-call program needs, emitted once per object
/// (before the maps) when its end or start event runs raw.
pub const HELPERS: &str = r#"/* The saved user registers, as the kernel's BTF lays them out (CO-RE relocates the offsets). */
struct pt_regs___ebq {
	unsigned long di, si, dx, r10, r8, r9, orig_ax;
} __attribute__((preserve_access_index));

struct thread_info___ebq {
	__u32 status;
} __attribute__((preserve_access_index));

struct task_struct___ebq_ti {
	struct thread_info___ebq thread_info;
} __attribute__((preserve_access_index));

/* TS_COMPAT (arch/x86/include/asm/thread_info.h): the task is in a 32-bit (ia32) system call,
 * whose numbers name other calls; the classic syscalls:* tracepoints skip those, and so do we. */
#define EBQ_TS_COMPAT 0x0002

/* A raw sys_enter/sys_exit program's first argument: the saved user registers. */
static __always_inline struct pt_regs___ebq *ebq_regs(__u64 *ctx)
{
	return (struct pt_regs___ebq *)ctx[0];
}

static __always_inline int ebq_compat_syscall(void)
{
	struct task_struct___ebq_ti *task = (void *)bpf_get_current_task_btf();

	return task->thread_info.status & EBQ_TS_COMPAT;
}

"#;

/// True when `event` or the other program's event runs raw: the object needs [`HELPERS`].
pub fn any_raw<'a>(mut events: impl Iterator<Item = &'a BoundEvent>) -> bool {
    events.any(|e| matches!(e.source, EventSource::RawSyscall { .. }))
}

/// The comment that stands where a tracepoint's record struct would.
pub fn preamble(event: &BoundEvent, exit: bool) -> String {
    format!(
        "/* {}: runs on the raw tracepoint {} for every system call; columns from the saved registers. */\n\n",
        event.event_description(),
        raw_tracepoint(exit)
    )
}

/// `sys_enter` or `sys_exit`.
fn raw_tracepoint(exit: bool) -> &'static str {
    if exit {
        "sys_exit"
    } else {
        "sys_enter"
    }
}

/// The `SEC(…)` line and signature of `function`.
pub fn program_header(exit: bool, function: &str) -> String {
    format!("SEC(\"tp_btf/{}\")\nint {function}(__u64 *ctx)", raw_tracepoint(exit))
}

/// The program's first statements: leave unless this is system call `nr`
/// from a 64-bit task. Everything after (scope, stats) sees only the traced
/// call. A `raw_syscalls` event (`nr` is `None`) is every call, 32-bit ones
/// too, as its classic tracepoint is: nothing to check.
pub fn prologue(nr: Option<i64>, exit: bool) -> String {
    let Some(nr) = nr else {
        return "\t/* Every system call, as the classic raw_syscalls tracepoint (32-bit calls too). */\n".into();
    };
    format!(
        "\t/* Runs for every system call: only number {nr} is this event (a 32-bit call's numbers mean others). */\n\
         \tif ({} != {nr} || ebq_compat_syscall())\n\t\treturn 0;\n",
        number(exit)
    )
}

/// The system call's number: `sys_enter`'s second argument, the saved
/// `orig_ax` at `sys_exit` (what the classic records' `id` and `__syscall_nr` hold).
fn number(exit: bool) -> &'static str {
    if exit {
        "ebq_regs(ctx)->orig_ax"
    } else {
        "ctx[1]"
    }
}

/// The C expression for column `name` of the event (its tracefs format
/// field), as the classic record would hold it; `None` for columns that are
/// not fields.
pub fn column_expr(event: &BoundEvent, exit: bool, name: &str) -> Option<String> {
    if let EventSource::RawSyscall { nr: None, .. } = event.source {
        return every_call_column(exit, name);
    }
    let field = event.format.field(name)?;
    let ty = DataType::int_of_size(field.size, field.signed).c_type();
    if name == NR_FIELD {
        return Some(format!("({ty}){}", number(exit)));
    }
    if exit {
        // sys_exit's record has one field besides the number: the return value, the raw tracepoint's second argument.
        return Some(format!("({ty})ctx[1]"));
    }
    let index = event.format.fields.iter().filter(|f| f.name != NR_FIELD).position(|f| f.name == name)?;
    Some(format!("({ty})ebq_regs(ctx)->{}", SYSCALL_ARG_REGS[index]))
}

/// A column of `raw_syscalls:sys_enter` (`long id`, `unsigned long args[6]`,
/// one column per element, `args[2]`) or `sys_exit` (`long id`, `long ret`):
/// the layout `plan::syscall_attach` checked.
fn every_call_column(exit: bool, name: &str) -> Option<String> {
    match name {
        "id" => Some(format!("(__s64){}", number(exit))),
        "ret" if exit => Some("(__s64)ctx[1]".into()),
        _ if exit => None,
        _ => {
            let i: usize = name.strip_prefix("args[")?.strip_suffix(']')?.parse().ok()?;
            Some(format!("(__u64)ebq_regs(ctx)->{}", SYSCALL_ARG_REGS.get(i)?))
        }
    }
}

#[cfg(test)]
mod tests {
    //! The fixture kernel's system-call events; `tests/compile.rs` compiles
    //! the same programs and the e2e tests run them.
    use crate::codegen::tests::{generate_for, generate_with};
    use crate::plan::{PlanOptions, SyscallAttach};

    fn raw() -> PlanOptions {
        PlanOptions { attach: SyscallAttach::Raw, ..Default::default() }
    }

    #[test]
    fn enter_checks_the_number_then_reads_registers() {
        let c = generate_for("SELECT fd, pos, COUNT(*) FROM syscalls.sys_enter_pread64 GROUP BY fd, pos");
        assert!(c.contains("SEC(\"tp_btf/sys_enter\")\nint ebq_query(__u64 *ctx)\n{\n"), "{c}");
        assert!(c.contains("\tif (ctx[1] != 17 || ebq_compat_syscall())\n\t\treturn 0;\n"), "{c}");
        // pread64(fd, buf, count, pos): the fourth argument is in r10, not rcx.
        assert!(c.contains("\t__u32 ev_fd = (__u32)ebq_regs(ctx)->di;\n"), "{c}");
        assert!(c.contains("\t__u64 ev_pos = (__u64)ebq_regs(ctx)->r10;\n"), "{c}");
        assert!(!c.contains("struct ebq_event"), "no record struct: {c}");
        let check = c.find("ctx[1] != 17").unwrap();
        assert!(check < c.find("stats->seen++").unwrap(), "seen counts the traced call only");
    }

    #[test]
    fn exit_reads_the_number_from_orig_ax_and_ret_from_the_argument() {
        let c = generate_with("SELECT ret, __syscall_nr FROM syscalls.sys_exit_read WHERE ret < 0", &raw());
        assert!(c.contains("SEC(\"tp_btf/sys_exit\")"), "{c}");
        assert!(c.contains("\tif (ebq_regs(ctx)->orig_ax != 0 || ebq_compat_syscall())\n"), "{c}");
        assert!(c.contains("\t__s64 ev_ret = (__s64)ctx[1];\n"), "{c}");
        assert!(c.contains("\t__s32 ev___syscall_nr = (__s32)ebq_regs(ctx)->orig_ax;\n"), "{c}");
    }

    #[test]
    fn a_join_of_raw_events_declares_the_helpers_once_and_checks_both_numbers() {
        let sql = "SELECT e.fd, COUNT(*), MAX(x.ret) FROM syscalls.sys_enter_read e \
                   JOIN syscalls.sys_exit_read x ON e.tid = x.tid GROUP BY e.fd";
        let c = generate_with(sql, &raw());
        assert_eq!(c.matches("struct pt_regs___ebq {").count(), 1, "{c}");
        let start =
            c.find("int ebq_pair_start(__u64 *ctx)\n{\n\t/* Runs for every system call").expect("raw start program");
        assert!(c[start..].contains("\tif (ctx[1] != 0 || ebq_compat_syscall())\n"), "{c}");
        assert!(c[..start].ends_with("SEC(\"tp_btf/sys_enter\")\n"), "{c}");
        assert!(c.contains("SEC(\"tp_btf/sys_exit\")\nint ebq_query(__u64 *ctx)\n{\n"), "{c}");
        assert!(c.contains("\t__u32 ev_fd = (__u32)ebq_regs(ctx)->di;\n"), "{c}");
    }

    /// auto: the entry raw, the exit classic, in one object.
    #[test]
    fn a_mixed_join_opens_pairs_raw_and_closes_them_classic() {
        let c = generate_for(
            "SELECT COUNT(*), MAX(x.ret) FROM syscalls.sys_enter_read e JOIN syscalls.sys_exit_read x ON e.tid = x.tid",
        );
        assert!(c.contains("SEC(\"tracepoint/syscalls/sys_exit_read\")\nint ebq_query(struct ebq_event *ctx)"), "{c}");
        assert!(c.contains("SEC(\"tp_btf/sys_enter\")\nint ebq_pair_start(__u64 *ctx)"), "{c}");
        assert!(c.contains("struct pt_regs___ebq {") && c.contains("\t__s64 ev_ret = ctx->ret;\n"), "{c}");
    }

    #[test]
    fn classic_keeps_the_tracepoint_record() {
        let classic = PlanOptions { attach: SyscallAttach::Classic, ..Default::default() };
        let c = generate_with("SELECT COUNT(*), SUM(count) FROM syscalls.sys_enter_read", &classic);
        assert!(c.contains("SEC(\"tracepoint/syscalls/sys_enter_read\")\nint ebq_query(struct ebq_event *ctx)"), "{c}");
        assert!(!c.contains("pt_regs___ebq") && !c.contains("tp_btf"), "{c}");
        let c = generate_with("SELECT COUNT(*) FROM raw_syscalls.sys_enter", &classic);
        assert!(c.contains("SEC(\"tracepoint/raw_syscalls/sys_enter\")") && !c.contains("pt_regs___ebq"), "{c}");
    }

    /// raw_syscalls' events are every call: raw, they check no number and skip no 32-bit call.
    #[test]
    fn raw_syscalls_read_id_and_args_from_the_registers_with_no_number_check() {
        let c = generate_for(
            "SELECT id, args[0], args[3], args[5], COUNT(*) FROM raw_syscalls.sys_enter GROUP BY id, args[0], args[3], args[5]",
        );
        assert!(c.contains("SEC(\"tp_btf/sys_enter\")\nint ebq_query(__u64 *ctx)\n{\n"), "{c}");
        assert!(!c.contains("ebq_compat_syscall()") && !c.contains("struct ebq_event {"), "{c}");
        for read in [
            "\t__s64 ev_id = (__s64)ctx[1];\n",
            "\t__u64 ev_args_0_ = (__u64)ebq_regs(ctx)->di;\n",
            "\t__u64 ev_args_3_ = (__u64)ebq_regs(ctx)->r10;\n",
            "\t__u64 ev_args_5_ = (__u64)ebq_regs(ctx)->r9;\n",
        ] {
            assert!(c.contains(read), "{read} in {c}");
        }
        let c = generate_for("SELECT id, ret, COUNT(*) FROM raw_syscalls.sys_exit GROUP BY id, ret");
        assert!(c.contains("SEC(\"tp_btf/sys_exit\")"), "{c}");
        assert!(c.contains("\t__s64 ev_id = (__s64)ebq_regs(ctx)->orig_ax;\n"), "{c}");
        assert!(c.contains("\t__s64 ev_ret = (__s64)ctx[1];\n"), "{c}");
    }
}

//! Code for probe events: the section and context type of the program, and how
//! each argument column is read.
//!
//! uprobes and kprobes get `struct pt_regs *` and read arguments from the
//! registers of the System V calling convention: `<asm/ptrace.h>`'s layout,
//! which is the kernel's on x86-64 under other names (`rdi` is the kernel's
//! `di`). A program that also reads file columns includes the kernel's
//! `vmlinux.h`, whose `struct pt_regs` clashes with `<asm/ptrace.h>`'s, so a
//! register is read through `EBQ_REG(ctx, user, kernel)` ([`REG_MACRO`]),
//! which picks the name of whichever struct the program has. fentry/fexit get
//! the trampoline's `__u64` array of arguments, followed at fexit by the
//! return value.

use crate::bind::{BoundEvent, EventSource};
use crate::catalog::probe::{ARG_REGS, RET_REG};

/// The register struct of a uprobe or kprobe program and how a register is
/// named in it: the kernel's `struct pt_regs` when `vmlinux.h` came first (a
/// program with file columns), else `<asm/ptrace.h>`'s. Repeated per probe
/// event; the include is guarded and the macro's definitions are identical.
const REG_MACRO: &str = "#ifdef __VMLINUX_H__
    /* vmlinux.h's struct pt_regs is the kernel's: the same slots as <asm/ptrace.h>'s, named without the r (rdi is di). */
    #define EBQ_REG(ctx, user, kernel) ((ctx)->kernel)
    #else
    #include <asm/ptrace.h>
    #define EBQ_REG(ctx, user, kernel) ((ctx)->user)
    #endif

";

/// The C reading user-space register `user` (`rdi`, `r8`, `rip`) of `ctx`
/// under either struct's name ([`REG_MACRO`]).
fn register(user: &str) -> String {
    let kernel = match user {
        "r8" | "r9" => user,
        _ => user.strip_prefix('r').unwrap_or(user),
    };
    format!("EBQ_REG(ctx, {user}, {kernel})")
}

/// Declarations a probe program needs in place of the tracepoint record
/// struct; `None` for tracepoints.
pub fn preamble(event: &BoundEvent) -> Option<String> {
    let regs = "arguments are read from registers of the x86-64 calling convention";
    match &event.source {
        EventSource::Tracepoint | EventSource::Expand { .. } => None,
        EventSource::TracepointBtf => Some(format!(
            "/* {}: attached as tp_btf; ctx[i] is raw argument i (typed by the kernel's BTF). */\n\n",
            event.event_description()
        )),
        EventSource::Uprobe { path, functions, .. } if !functions.is_empty() => Some(format!(
            "/* {}: {} functions of {}, one uprobe_multi link; `func` (the BPF cookie) is the function's \
             position in the list; {regs}. */\n{REG_MACRO}",
            event.event_description(),
            functions.len(),
            path.display()
        )),
        EventSource::Uprobe { path, offset, .. } => Some(format!(
            "/* {}: {} at file offset {offset:#x}; {regs}. */\n{REG_MACRO}",
            event.event_description(),
            path.display()
        )),
        EventSource::Kprobe { .. } => {
            Some(format!("/* {}: {regs}. */\n{REG_MACRO}", event.event_description()))
        }
        EventSource::Usdt { .. } => Some(super::usdt::preamble(event)),
        EventSource::Timer { .. } => Some(format!(
            "/* {}: a perf software cpu-clock sample; ctx is the sample's registers. */\n#include <linux/bpf_perf_event.h>\n\n",
            event.event_description()
        )),
        EventSource::Fentry { arg_slots, .. } => Some(format!(
            "/* {}: ctx[0..{arg_slots}) are the arguments (BTF), then the return value at fexit. */\n\n",
            event.event_description()
        )),
        EventSource::RawSyscall { exit, .. } => Some(super::raw_syscall::preamble(event, *exit)),
    }
}

/// The `SEC(…)` line and signature of the program `function` (`ebq_query`,
/// or a JOIN's `ebq_pair_start`); `None` for tracepoints.
///
/// uprobes carry no target in the section: the runtime attaches them to the
/// resolved file and offset (and to the `-p` process only).
pub fn program_header(event: &BoundEvent, function: &str) -> Option<String> {
    let section = match &event.source {
        // An expanding event's row function is `codegen::expand`'s.
        EventSource::Tracepoint | EventSource::Expand { .. } => return None,
        EventSource::TracepointBtf => format!("tp_btf/{}", event.format.name),
        EventSource::RawSyscall { exit, .. } => return Some(super::raw_syscall::program_header(*exit, function)),
        EventSource::Uprobe { ret, functions, .. } if !functions.is_empty() => {
            (if *ret { "uretprobe.multi" } else { "uprobe.multi" }).to_string()
        }
        EventSource::Uprobe { ret, .. } => (if *ret { "uretprobe" } else { "uprobe" }).to_string(),
        EventSource::Usdt { .. } => "uprobe".to_string(),
        EventSource::Timer { .. } => "perf_event".to_string(),
        EventSource::Kprobe { function, ret, .. } => {
            format!("{}/{function}", if *ret { "kretprobe" } else { "kprobe" })
        }
        EventSource::Fentry { function, exit, .. } => format!("{}/{function}", if *exit { "fexit" } else { "fentry" }),
    };
    let ctx = match event.source {
        EventSource::Fentry { .. } | EventSource::TracepointBtf => "__u64 *ctx",
        EventSource::Timer { .. } => "struct bpf_perf_event_data *ctx",
        _ => "struct pt_regs *ctx",
    };
    Some(format!("SEC(\"{section}\")\nint {function}({ctx})"))
}

/// The statements a program on `event` starts with: the system-call number
/// check of a raw system-call program; empty for other events.
pub fn prologue(event: &BoundEvent) -> String {
    match &event.source {
        EventSource::RawSyscall { nr, exit } => super::raw_syscall::prologue(*nr, *exit),
        _ => String::new(),
    }
}

/// The C expression reading argument column `name` (`arg3`, `retval`); `None`
/// for tracepoints. The binder only admits the columns [`crate::catalog::probe::argument_format`] lists.
pub fn column_expr(event: &BoundEvent, name: &str) -> Option<String> {
    let arg = name.strip_prefix("arg").and_then(|n| n.parse::<usize>().ok());
    match (&event.source, arg) {
        (EventSource::Tracepoint | EventSource::TracepointBtf, _) => None,
        (EventSource::RawSyscall { exit, .. }, _) => super::raw_syscall::column_expr(event, *exit, name),
        (EventSource::Usdt { .. }, Some(i)) => Some(super::usdt::column_expr(event, i)),
        (EventSource::Usdt { .. } | EventSource::Timer { .. }, _) => None,
        (EventSource::Fentry { .. }, Some(i)) => Some(format!("ctx[{i}]")),
        (EventSource::Uprobe { .. }, None) if name == crate::catalog::probe::FUNC_COLUMN => {
            Some("(__u32)bpf_get_attach_cookie(ctx)".into())
        }
        (EventSource::Uprobe { .. }, None) if name == crate::catalog::probe::IP_COLUMN => Some(register("rip")),
        // Only `retval` besides the arguments: `str(arg1)` is a string read, not a register.
        (_, None) if !name.starts_with("retval") => None,
        (EventSource::Fentry { arg_slots, .. }, None) => Some(format!("ctx[{arg_slots}]")),
        (_, Some(i)) => Some(register(ARG_REGS[i])),
        (_, None) => Some(register(RET_REG)),
    }
}

#[cfg(test)]
mod tests {
    //! Probes bind against the fixture kernel's binaries, BTF and kallsyms;
    //! `tests/compile.rs` compiles the same programs.
    use crate::codegen::tests::generate_for;

    #[test]
    fn uprobes_read_argument_registers() {
        let c = generate_for("SELECT COUNT(*), SUM(arg2) FROM uprobe:libc:pread64 WHERE arg0 > 2");
        assert!(c.contains("SEC(\"uprobe\")\nint ebq_query(struct pt_regs *ctx)"), "{c}");
        assert!(c.contains("\t__u64 ev_arg0 = EBQ_REG(ctx, rdi, di);\n"), "{c}");
        assert!(c.contains("\t__u64 ev_arg2 = EBQ_REG(ctx, rdx, dx);\n"), "{c}");
        assert!(c.contains("#include <asm/ptrace.h>") && !c.contains("struct ebq_event"), "{c}");
        let c = generate_for("SELECT time, tid, comm, retval FROM uretprobe:libc.so.6:pread64 WHERE retval > 0");
        assert!(c.contains("SEC(\"uretprobe\")") && c.contains("EBQ_REG(ctx, rax, ax);"), "{c}");
        let c = generate_for("SELECT * FROM uprobe:libc:read");
        assert!(c.contains("EBQ_REG(ctx, r9, r9);"), "SELECT * lists arg0..arg5: {c}");
    }

    #[test]
    fn a_uprobe_over_a_list_of_functions_is_one_multi_program_with_the_function_as_cookie() {
        let sql = "SELECT e.func, COUNT(*), SUM(x.retval) FROM uprobe:libc:{pread64,read} e \
                   JOIN uretprobe:libc:{pread64,read} x ON e.tid = x.tid AND e.func = x.func GROUP BY e.func";
        let c = generate_for(sql);
        assert!(c.contains("SEC(\"uprobe.multi\")\nint ebq_pair_start(struct pt_regs *ctx)"), "{c}");
        assert!(c.contains("SEC(\"uretprobe.multi\")\nint ebq_query(struct pt_regs *ctx)"), "{c}");
        assert_eq!(c.matches("(__u32)bpf_get_attach_cookie(ctx)").count(), 2, "both ends key on it: {c}");
        let p = crate::Engine::with_catalog(crate::catalog::Catalog::fixture()).prepare(sql).unwrap();
        let crate::bind::EventSource::Uprobe { functions, .. } = &p.physical.programs[0].event.source else {
            panic!("a uprobe")
        };
        assert_eq!(functions, &[("pread64".to_string(), 0xf63c0), ("read".to_string(), 0xf82a0)]);
        // One missing function names itself, at the event.
        let Err(crate::Error::Query(q)) = crate::Engine::with_catalog(crate::catalog::Catalog::fixture())
            .prepare("SELECT COUNT(*) FROM uprobe:libc:{pread64,preed}")
        else {
            panic!("refused")
        };
        assert!(q.message.contains("has no function `preed`") && q.span.is_some(), "{}", q.message);
    }

    #[test]
    fn probe_arguments_are_read_through_as_user_memory() {
        // What an MPI datatype pointer's size field holds, and the file name an open was given.
        let sql = "SELECT user_u64(e.arg3 + 24) AS size, user_i32(e.arg0) AS first, str(e.arg1) AS name, x.retval \
                   FROM uprobe:libc:pread64 e JOIN uretprobe:libc:pread64 x ON e.tid = x.tid";
        let c = generate_for(sql);
        assert!(
            c.contains("({ __u64 v = 0; bpf_probe_read_user(&v, sizeof(v), (const void *)(__u64)((__u64)")
                && c.contains("({ __s32 v = 0; bpf_probe_read_user(&v, sizeof(v), (const void *)(__u64)"),
            "{c}"
        );
        assert!(c.contains("(const void *)EBQ_REG(ctx, rsi, si)));\t/* str(arg1) */"), "arg1's register: {c}");
        // The function's address in the process: the instruction pointer at the probe.
        let c = generate_for("SELECT ip FROM uprobe:libc:pread64");
        assert!(c.contains("\t__u64 ev_ip = EBQ_REG(ctx, rip, ip);\n"), "{c}");
        assert!(!c.contains("EBQ_REG(ctx, rax, ax);\t/* str"), "a string is not the return register: {c}");
        let p = crate::Engine::with_catalog(crate::catalog::Catalog::fixture()).prepare(sql).unwrap();
        let names: Vec<String> = p.logical.schema().iter().map(|(name, ty)| format!("{name} {ty}")).collect();
        assert_eq!(names, ["size u64", "first i32", "name string(128)", "retval u64"]);
    }

    #[test]
    fn a_strings_length_is_measured_in_a_scratch_only_where_asked() {
        let sql = "SELECT user_strlen(e.arg0) AS n, x.retval FROM uprobe:libc:pread64 e JOIN uretprobe:libc:pread64 x \
                   ON e.tid = x.tid";
        let c = generate_for(sql);
        // At the end event, from the pointer the start kept; the scratch and the function once.
        assert!(c.contains("ebq_user_strlen((__u64)"), "{c}");
        assert_eq!(c.matches("} ebq_strlen_scratch SEC(\".maps\");").count(), 1, "{c}");
        assert!(c.contains("bpf_probe_read_user_str(buf, 4096, (const void *)(addr + len))"), "{c}");
        let p = crate::Engine::with_catalog(crate::catalog::Catalog::fixture()).prepare(sql).unwrap();
        let names: Vec<String> = p.logical.schema().iter().map(|(name, ty)| format!("{name} {ty}")).collect();
        assert_eq!(names, ["n u64", "retval u64"]);
        assert!(p.programs[0].map(crate::codegen::MapRole::StrlenScratch).is_some());
        let c = generate_for("SELECT user_u64(e.arg0) AS n FROM uprobe:libc:pread64 e");
        assert!(!c.contains("ebq_strlen_scratch") && !c.contains("ebq_user_strlen"), "{c}");
        let e = crate::Engine::with_catalog(crate::catalog::Catalog::fixture())
            .prepare("SELECT user_strlen(comm) FROM uprobe:libc:pread64")
            .unwrap_err()
            .render("");
        assert!(e.contains("user_strlen() reads at an integer address"), "{e}");
    }

    /// `env_int()`: one walk per list of names, the names compared in the
    /// order given, the scratch once; names that are no variable's are refused.
    #[test]
    fn env_int_walks_the_environment_once_per_list_of_names() {
        let sql = "SELECT env_int('PMI_RANK', 'PMIX_RANK') AS rank, env_int('PMI_RANK', 'PMIX_RANK') + 1 AS next, \
                   env_int('PMI_SIZE') AS size FROM uprobe:libc:pread64";
        let c = generate_for(sql);
        assert_eq!(c.matches("} ebq_env_scratch SEC(\".maps\");").count(), 1, "{c}");
        assert_eq!(c.matches("static __always_inline __s64 ebq_env_int__PMI_RANK__PMIX_RANK(void)").count(), 1, "{c}");
        assert!(c.contains("bpf_loop(512, ebq_env_int__PMI_SIZE_step, &w, 0);"), "{c}");
        assert!(c.contains("if (!w->found[1] && !((s[0] ^ 'P') | (s[1] ^ 'M') | (s[2] ^ 'I') | (s[3] ^ 'X')"), "{c}");
        let p = crate::Engine::with_catalog(crate::catalog::Catalog::fixture()).prepare(sql).unwrap();
        let names: Vec<String> = p.logical.schema().iter().map(|(name, ty)| format!("{name} {ty}")).collect();
        assert_eq!(names, ["rank i64", "next i64", "size i64"]);
        assert!(p.programs[0].map(crate::codegen::MapRole::EnvScratch).is_some());
        assert!(!generate_for("SELECT user_u64(arg0) AS n FROM uprobe:libc:pread64").contains("ebq_env"));
        for (bad, says) in [
            ("env_int('PMI-RANK')", "`PMI-RANK` is no environment variable's name"),
            ("env_int(arg0)", "needs environment variables' names as string literals"),
            ("env_int()", "needs environment variables' names as string literals"),
        ] {
            let e = crate::Engine::with_catalog(crate::catalog::Catalog::fixture())
                .prepare(&format!("SELECT {bad} FROM uprobe:libc:pread64"))
                .unwrap_err()
                .render("");
            assert!(e.contains(says), "{bad}: {e}");
        }
        // The longest name: 105 bytes (`NAME=`, 20 digits and the NUL in one 128-byte read).
        let engine = crate::Engine::with_catalog(crate::catalog::Catalog::fixture());
        let named = |n: usize| format!("SELECT env_int('{}') FROM uprobe:libc:pread64", "A".repeat(n));
        assert!(engine.prepare(&named(105)).is_ok());
        assert!(engine.prepare(&named(106)).unwrap_err().render("").contains("at most 105 bytes"));
    }

    #[test]
    fn timers_are_perf_event_programs() {
        let c = generate_for("SELECT ustack, COUNT(*) FROM profile:hz:99 WHERE comm = 'x' GROUP BY ustack");
        assert!(c.contains("SEC(\"perf_event\")\nint ebq_query(struct bpf_perf_event_data *ctx)"), "{c}");
        assert!(c.contains("#include <linux/bpf_perf_event.h>") && c.contains("BPF_F_USER_STACK"), "{c}");
        let c = generate_for("SELECT cpu, COUNT(*) FROM interval:ms:100 GROUP BY cpu");
        assert!(c.contains("SEC(\"perf_event\")"), "{c}");
    }

    #[test]
    fn kprobes_and_trampolines_read_their_arguments() {
        for (sql, section, read) in [
            (
                "SELECT comm, COUNT(*), SUM(arg2) FROM kprobe:vfs_read GROUP BY comm",
                "kprobe/vfs_read",
                "EBQ_REG(ctx, rdx, dx)",
            ),
            ("SELECT pid, retval FROM kretprobe:vfs_read", "kretprobe/vfs_read", "EBQ_REG(ctx, rax, ax)"),
            ("SELECT COUNT(*), MAX(arg2) FROM fentry:vfs_read WHERE arg2 > 1", "fentry/vfs_read", "ctx[2]"),
            // vfs_read(file, buf, count, pos): the return value follows the four arguments.
            ("SELECT retval, COUNT(*) FROM fexit:vfs_read GROUP BY retval", "fexit/vfs_read", "ctx[4]"),
        ] {
            let c = generate_for(sql);
            assert!(c.contains(&format!("SEC(\"{section}\")")), "{c}");
            assert!(c.contains(&format!(" = {read};")), "{c}");
        }
    }
}

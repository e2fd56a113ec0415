//! Programs of expanding events (`aio.submit`; [`crate::catalog::expand`]).
//!
//! The query's row code is written exactly as for a tracepoint, as a function
//! of one record (`ctx`), which is ebq's per-CPU record of one element
//! (`ebq_elements`). The program on the system call's tracepoint checks the
//! scope once and hands the array to `bpf_loop`, whose callback copies each
//! element from the caller's memory into the record and runs the row code.
//! With `bpf_loop` the verifier checks the row code once, not once per element,
//! and the array needs no bound below the kernel's own (8,388,608 elements).
//!
//! The record is per CPU, not on the stack: the row code keeps its 512-byte
//! stack budget. Classic tracepoint programs never run nested on one CPU, so
//! one record serves every expanding program of the object.

use crate::bind::{BoundEvent, EventSource};
use crate::catalog::expand::Expansion;
use crate::types::DataType;
use std::fmt::Write;

/// The per-CPU record's map.
pub const ELEMENTS: &str = "ebq_elements";

/// Bytes of the per-CPU record: the largest expanding event's.
pub fn record_bytes<'a>(events: impl IntoIterator<Item = &'a BoundEvent>) -> Option<u32> {
    events
        .into_iter()
        .filter(|e| matches!(e.source, EventSource::Expand { .. }))
        .map(|e| e.format.record_size().next_multiple_of(8))
        .max()
}

/// The map of the per-CPU record (`bytes` from [`record_bytes`]).
pub fn map(bytes: u32) -> String {
    format!(
        "/* The element an expanding event's row code runs on, copied from the caller's memory. */\n\
         struct ebq_element {{\n\t__u64 words[{}];\n}};\n\nstruct {{\n\t__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);\n\
         \t__uint(max_entries, 1);\n\t__type(key, __u32);\n\t__type(value, struct ebq_element);\n}} {ELEMENTS} SEC(\".maps\");\n\n",
        bytes / 8
    )
}

/// The header of the row function `function` on record `record`.
pub fn row_header(function: &str, record: &str) -> String {
    format!("static __always_inline int {function}_row(struct {record} *ctx)")
}

/// After the row function of `function` on `event`: the `bpf_loop`
/// callback and the program itself. Empty for other events.
pub fn driver(event: &BoundEvent, function: &str, record: &str) -> String {
    let EventSource::Expand { expansion, trigger } = &event.source else { return String::new() };
    let (category, name) = (&trigger.category, &trigger.name);
    let call = format!("{function}_call");
    let mut c = super::structs::event_struct(&format!("{function}_trigger"), &format!("{category}:{name}"), trigger);
    let _ = write!(
        c,
        "/* {}: {}. */\nstruct {call} {{\n\t__u64 array;\n\t__u64 ctx_id;\n}};\n\n",
        event.event_description(),
        expansion.description()
    );
    let (fields, size) = expansion.element();
    let _ = write!(
        c,
        "static long {function}_each(__u64 i, struct {call} *call)\n{{\n\t__u32 zero = 0;\n\
         \tstruct {record} *ctx = bpf_map_lookup_elem(&{ELEMENTS}, &zero);\n\t__u64 at = 0;\n\t__u8 el[{size}];\n\n\
         \tif (!ctx)\n\t\treturn 1;\n"
    );
    let read = "bpf_probe_read_user(el, sizeof(el), (void *)at)";
    match expansion {
        Expansion::AioSubmit => {
            let _ = write!(
                c,
                "\t/* iocbpp[i] is the iocb's address. */\n\
                 \tif (bpf_probe_read_user(&at, sizeof(at), (void *)(call->array + i * 8)) || {read}) {{\n"
            );
        }
        Expansion::AioComplete => {
            let _ = write!(c, "\tat = call->array + i * {size};\n\tif ({read}) {{\n");
        }
    }
    c.push_str(
        "\t\t/* Not readable (paged out): the element is seen and lost, never dropped unsaid. */\n\
         \t\tstruct ebq_stats *stats = bpf_map_lookup_elem(&ebq_stats, &zero);\n\n\
         \t\tif (stats) {\n\t\t\tstats->seen++;\n\t\t\tstats->dropped++;\n\t\t}\n\t\treturn 0;\n\t}\n",
    );
    c.push_str("\tctx->ctx_id = call->ctx_id;\n\tctx->index = i;\n");
    if *expansion == Expansion::AioSubmit {
        c.push_str("\tctx->iocb = at;\n");
    }
    for (field, offset, bytes) in fields {
        let signed = event.format.field(field).is_some_and(|f| f.signed);
        let ty = DataType::int_of_size(bytes, signed).c_type();
        let _ = writeln!(c, "\tctx->{field} = *({ty} *)(el + {offset});");
    }
    let _ = write!(c, "\t{function}_row(ctx);\n\treturn 0;\n}}\n\n");
    let (count, array, context) = match expansion {
        Expansion::AioSubmit => ("ctx->nr", "ctx->iocbpp", "ctx->ctx_id"),
        Expansion::AioComplete => ("ctx->ret", "regs->r10", "regs->di"),
    };
    let _ = write!(c, "SEC(\"tracepoint/{category}/{name}\")\nint {function}(struct {function}_trigger *ctx)\n{{\n");
    if *expansion == Expansion::AioComplete {
        // The exit record has only `ret`: the array and context are the call's
        // arguments 4 and 1, in the task's saved user registers.
        c.push_str("\tstruct pt_regs___ebq_aio *regs = (void *)bpf_task_pt_regs(bpf_get_current_task_btf());\n");
    }
    let _ = write!(
        c,
        "\tstruct {call} call = {{ .array = {array}, .ctx_id = {context} }};\n\tlong n = {count};\n\n\
         \tif (n <= 0 || !ebq_in_scope_now())\n\t\treturn 0;\n\tbpf_loop(n, {function}_each, &call, 0);\n\treturn 0;\n}}\n\n"
    );
    c
}

/// Declarations the drivers share, once per object with an expanding
/// event: the saved registers `aio.complete` reads its arguments from
/// (CO-RE: offsets from the running kernel's `struct pt_regs`).
pub const REGS: &str =
    "struct pt_regs___ebq_aio {\n\tunsigned long di;\n\tunsigned long r10;\n} __attribute__((preserve_access_index));\n\n";

#[cfg(test)]
mod tests {
    //! The programs bind against the fixture kernel; `tests/compile.rs`
    //! compiles them and `ebq-e2e/tests/io_engines.rs` runs them.
    use crate::codegen::tests::{engine, generate_for};
    use crate::codegen::{AttachPoint, MapRole};

    #[test]
    fn a_submit_runs_the_row_code_once_per_iocb_in_a_bpf_loop() {
        let c =
            generate_for("SELECT opcode, fs_type, COUNT(*) FROM aio.submit WHERE nbytes > 0 GROUP BY opcode, fs_type");
        for want in [
            "static __always_inline int ebq_query_row(struct ebq_event *ctx)\n{",
            "static long ebq_query_each(__u64 i, struct ebq_query_call *call)",
            "bpf_probe_read_user(&at, sizeof(at), (void *)(call->array + i * 8))",
            "\tctx->iocb = at;\n",
            "\tctx->fd = *(__u32 *)(el + 20);\n",
            "\tctx->offset = *(__s64 *)(el + 40);\n",
            "SEC(\"tracepoint/syscalls/sys_enter_io_submit\")\nint ebq_query(struct ebq_query_trigger *ctx)",
            "struct ebq_query_call call = { .array = ctx->iocbpp, .ctx_id = ctx->ctx_id };",
            "bpf_loop(n, ebq_query_each, &call, 0);",
            "ebq_file_of(ctx->fd)",
            "\t\t\tstats->dropped++;\n",
        ] {
            assert!(c.contains(want), "{want}\n{c}");
        }
        // The row code is the tracepoint's: WHERE reads the record, the scope is checked per row too.
        let row = &c[c.find("int ebq_query_row(").unwrap()..c.find("static long ebq_query_each(").unwrap()];
        assert!(row.contains("if (!(ev_nbytes > 0))") || row.contains("ctx->nbytes"), "{row}");
        let p = engine().prepare("SELECT COUNT(*) FROM aio.submit").unwrap();
        let program = &p.programs[0];
        let attached: Vec<&str> =
            program.progs.iter().filter(|p| matches!(p.attach, AttachPoint::Query(_))).map(|p| p.name).collect();
        assert_eq!(attached, ["ebq_query"], "one program; the row code and callback are its subprograms");
        assert!(program.maps.iter().any(|m| m.role == MapRole::Elements && m.name == super::ELEMENTS));
    }

    #[test]
    fn a_join_of_submit_and_completion_expands_both_sides() {
        let c = generate_for(
            "SELECT s.opcode, COUNT(*), SUM(c.res) FROM aio.submit s JOIN aio.complete c \
             ON s.pid = c.pid AND s.iocb = c.iocb GROUP BY s.opcode",
        );
        for want in [
            "static __always_inline int ebq_pair_start_row(struct ebq_start_event *ctx)",
            "SEC(\"tracepoint/syscalls/sys_enter_io_submit\")\nint ebq_pair_start(",
            "SEC(\"tracepoint/syscalls/sys_exit_io_getevents\")\nint ebq_query(",
            "struct pt_regs___ebq_aio *regs = (void *)bpf_task_pt_regs(bpf_get_current_task_btf());",
            "struct ebq_query_call call = { .array = regs->r10, .ctx_id = regs->di };",
            "\tlong n = ctx->ret;\n",
            "\tat = call->array + i * 32;\n",
            "\tctx->res = *(__s64 *)(el + 16);\n",
        ] {
            assert!(c.contains(want), "{want}\n{c}");
        }
        assert_eq!(c.matches("bpf_loop(").count(), 2, "{c}");
        assert_eq!(c.matches("} ebq_elements SEC(\".maps\");").count(), 1, "one per-CPU element for both");
    }

    #[test]
    fn stacks_at_an_element_are_refused_with_the_reason() {
        let Err(crate::Error::Query(q)) = engine().prepare("SELECT kstack, COUNT(*) FROM aio.submit GROUP BY kstack")
        else {
            panic!("stacks at an expanding event must be refused")
        };
        assert!(q.message.contains("aio.submit") && q.message.contains("stack"), "{}", q.message);
    }
}

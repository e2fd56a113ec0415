//! Raw tracepoint arguments as C: a `tp_btf` program's `ctx[i]`, and CO-RE reads of
//! the kernel structs they point to.
//!
//! ```c
//! __u64 arg_rq = (__u64)ctx[0];    /* rq: struct request * */
//! char arg_rq__q__disk__disk_name[32] = {};
//! BPF_CORE_READ_STR_INTO(&arg_rq__q__disk__disk_name, ((struct request *)ctx[0]), q, disk, disk_name);
//! ```
//!
//! Every member read goes through `BPF_CORE_READ` (libbpf relocates the offsets against
//! the running kernel's BTF at load time, and a NULL or stale pointer reads as 0
//! instead of faulting), so a path that binds always loads. Such programs include
//! `vmlinux.h`, as file columns do.

use crate::bind::{EventSource, RawArg};
use crate::plan::KernelPlan;
use crate::types::DataType;

/// Does a program of `k` attach as `tp_btf` (and so need the kernel's types)?
pub fn attaches_tp_btf(k: &KernelPlan) -> bool {
    let tp_btf = |source: &EventSource| *source == EventSource::TracepointBtf;
    tp_btf(&k.event.source) || k.pairing.as_ref().is_some_and(|p| p.start_events().any(|e| tp_btf(&e.source)))
}

/// The local variable a raw argument read lands in: `rq.q.disk` → `arg_rq__q__disk`.
pub fn local_name(arg: &RawArg) -> String {
    let safe: String =
        arg.path.replace('.', "__").chars().map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '_' }).collect();
    format!("arg_{safe}")
}

/// C statements declaring `local` and reading `arg` into it as `ty`.
pub fn load(arg: &RawArg, ty: DataType, local: &str) -> String {
    let (i, comment) = (arg.index, format!("/* {}: {} */", arg.path, arg.c_type));
    let root = format!("(({})ctx[{i}])", arg.arg_c_type);
    let members = arg.accessors.join(", ");
    if arg.string_at_pointer {
        let DataType::Str { cap } = ty else { unreachable!("str() of a char * is a string") };
        let pointer = match arg.accessors.as_slice() {
            [] => format!("ctx[{i}]"),
            _ => format!("BPF_CORE_READ({root}, {members})"),
        };
        // A NULL or stale pointer fails the read: NULL, marked and counted as a user
        // string's (plan::may_be_unreadable).
        let read = format!("bpf_probe_read_kernel_str(&{local}, sizeof({local}), (const void *){pointer})");
        return format!("\tchar {local}[{cap}] = {{}};\t{comment}\n\tebq_user_str_read({local}, {read});\n");
    }
    if arg.accessors.is_empty() {
        return format!("\t{0} {local} = ({0})ctx[{i}];\t{comment}\n", ty.c_type());
    }
    match ty {
        DataType::Str { cap } => format!(
            "\tchar {local}[{cap}] = {{}};\t{comment}\n\tBPF_CORE_READ_STR_INTO(&{local}, {root}, {members});\n"
        ),
        ty => format!("\t{0} {local} = ({0})BPF_CORE_READ({root}, {members});\t{comment}\n", ty.c_type()),
    }
}

#[cfg(test)]
mod tests {
    use crate::bind::{ColumnSource, RawArg, ScalarExpr};
    use crate::codegen::tests::generate_for;
    use crate::types::DataType;

    /// Issue 40 item 6: `str()` of a kernel `char *` through BTF marks a
    /// failed read (a NULL pointer: `bprm.fdpath` at an exec by path, e2e
    /// `user_strings::`) as NULL and counts it, and its field is NULL-marked.
    #[test]
    fn a_kernel_char_pointer_read_marks_a_failure_null() {
        let arg = RawArg {
            path: "str(bprm.fdpath)".into(),
            index: 2,
            arg_c_type: "struct linux_binprm *".into(),
            accessors: vec!["fdpath".into()],
            c_type: "const char *".into(),
            string_cap: Some(128),
            string_at_pointer: true,
        };
        let ty = DataType::Str { cap: 128 };
        assert_eq!(
            super::load(&arg, ty, "s"),
            "\tchar s[128] = {};\t/* str(bprm.fdpath): const char * */\n\tebq_user_str_read(s, \
             bpf_probe_read_kernel_str(&s, sizeof(s), (const void *)BPF_CORE_READ(((struct linux_binprm *)ctx[2]), \
             fdpath)));\n"
        );
        let column = |a: RawArg| ScalarExpr::Column { source: ColumnSource::Arg(Box::new(a)), ty };
        assert!(crate::plan::may_be_unreadable(&column(arg.clone())));
        // A char array member (BPF_CORE_READ_STR_INTO) is not marked: a NULL pointer on its path
        // still reads as "".
        assert!(!crate::plan::may_be_unreadable(&column(RawArg { string_at_pointer: false, ..arg })));
    }

    #[test]
    fn a_join_on_the_request_pointer_attaches_both_ends_as_tp_btf() {
        let sql = "SELECT c.rq.q.disk.disk_name, COUNT(*), SUM(i.rq.__data_len) FROM block.block_rq_issue i \
                   JOIN block.block_rq_complete c ON i.rq = c.rq GROUP BY c.rq.q.disk.disk_name";
        let c = generate_for(sql);
        for want in [
            "#include \"vmlinux.h\"\n",
            "SEC(\"tp_btf/block_rq_complete\")\nint ebq_query(__u64 *ctx)\n",
            "SEC(\"tp_btf/block_rq_issue\")\nint ebq_pair_start(__u64 *ctx)\n",
            "\t__u64 arg_rq = (__u64)ctx[0];\t/* rq: struct request * */\n",
            "\tchar arg_rq__q__disk__disk_name[32] = {};\t/* rq.q.disk.disk_name: char[32] */\n\
             \tBPF_CORE_READ_STR_INTO(&arg_rq__q__disk__disk_name, ((struct request *)ctx[0]), q, disk, disk_name);\n",
            "\t__u32 arg_rq____data_len = (__u32)BPF_CORE_READ(((struct request *)ctx[0]), __data_len);\t\
             /* rq.__data_len: unsigned int */\n",
        ] {
            assert!(c.contains(want), "missing {want}\n{c}");
        }
        assert!(!c.contains("struct ebq_event") && !c.contains("struct ebq_start_event"), "{c}");
        let cat = crate::catalog::Catalog::fixture();
        let bound = crate::bind::bind(&crate::parse::parse_query(sql).unwrap(), &cat).unwrap();
        let explain = crate::plan::plan(sql, &bound, &cat, &Default::default()).unwrap().explain();
        let tp_btf = "tp_btf, BPF_PROG_TYPE_TRACING: the query reads raw arguments";
        assert!(explain
            .starts_with(&format!("[kernel] Attach     tracepoint:block:block_rq_issue ({tp_btf}, opens pairs)\n")));
        assert!(explain
            .contains(&format!("[kernel] Attach     tracepoint:block:block_rq_complete ({tp_btf}, closes pairs)\n")));
    }

    #[test]
    fn embedded_members_join_their_container_and_scalars_are_cast() {
        let c = generate_for(
            "SELECT rq.queuelist.next, rq.op, rq.deadline FROM block.block_rq_complete c WHERE c.nr_bytes > 0",
        );
        assert!(c.contains("(__u64)BPF_CORE_READ(((struct request *)ctx[0]), queuelist.next);"), "{c}");
        assert!(c.contains("__s64 arg_rq__deadline = (__s64)BPF_CORE_READ("), "{c}");
        assert!(c.contains("\t__u32 arg_nr_bytes = (__u32)ctx[2];"), "{c}");
        let c = generate_for("SELECT req.file.f_inode.i_ino, req.cqe.fd FROM io_uring.io_uring_submit_req");
        assert!(c.contains("= (__u64)BPF_CORE_READ(((struct io_kiocb *)ctx[0]), file, f_inode, i_ino);"), "{c}");
        assert!(
            c.contains("\t__s32 arg_req__cqe__fd = (__s32)BPF_CORE_READ(((struct io_kiocb *)ctx[0]), cqe.fd);"),
            "{c}"
        );
        let c = generate_for("SELECT req.file.f_inode.i_ino, cqe.res FROM io_uring.io_uring_complete");
        assert!(c.contains("= (__u64)BPF_CORE_READ(((struct io_kiocb *)ctx[1]), file, f_inode, i_ino);"), "{c}");
        assert!(c.contains("= (__s32)BPF_CORE_READ(((struct io_uring_cqe *)ctx[2]), res);"), "{c}");
    }
}

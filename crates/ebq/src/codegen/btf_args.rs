//! Raw tracepoint arguments as C: a `tp_btf` program's `ctx[i]`, and CO-RE reads of
//! the kernel structs they point to.
//!
//! ```c
//! __u64 arg_rq = (__u64)ctx[0];	/* rq: struct request * */
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
    tp_btf(&k.event.source) || k.pairing.as_ref().is_some_and(|p| tp_btf(&p.start.source))
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
    if arg.accessors.is_empty() {
        return format!("\t{0} {local} = ({0})ctx[{i}];\t{comment}\n", ty.c_type());
    }
    let root = format!("(({})ctx[{i}])", arg.arg_c_type);
    let members = arg.accessors.join(", ");
    match ty {
        DataType::Str { cap } => format!(
            "\tchar {local}[{cap}] = {{}};\t{comment}\n\tBPF_CORE_READ_STR_INTO(&{local}, {root}, {members});\n"
        ),
        ty => format!("\t{0} {local} = ({0})BPF_CORE_READ({root}, {members});\t{comment}\n", ty.c_type()),
    }
}

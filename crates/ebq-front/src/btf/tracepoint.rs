//! A tracepoint's raw arguments, as a `tp_btf` program receives them.
//!
//! For each tracepoint the kernel's BTF has `typedef void (*btf_trace_<tp>)(void *__data,
//! <the tracepoint's arguments>)`: the verifier checks `tp_btf` programs against it. Its
//! prototype's parameters are anonymous, so the names come from a function with the same
//! parameters: `__probestub_<tp>` (one per tracepoint, Linux 6.7+), `__traceiter_<tp>`, or
//! `__bpf_trace_<tp>` (one per event class, so only when the tracepoint names its class).

use super::{Btf, Kind, KindTag, TypeId};

/// One raw argument of a tracepoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arg {
    /// Its name in the kernel source (`rq`), or `argN` when BTF does not keep it.
    pub name: String,
    /// Its type.
    pub ty: TypeId,
    /// Its type in C (`struct request *`).
    pub c_type: String,
}

/// Raw arguments the kernel declares `void *` although every call site passes one
/// struct: (tracepoint, argument, a tracepoint whose argument of the same name has
/// that struct's pointer type). `io_uring_complete`'s `req` is the `struct io_kiocb *`
/// being completed (NULL for auxiliary CQEs, which then read as 0), typed so that
/// `req.file`, `req.opcode` read at completion what `io_uring_submit_req` reads at
/// submission — and `req->file` is assigned by then, for fds and registered files.
const UNTYPED_POINTERS: [(&str, &str, &str); 1] = [("io_uring_complete", "req", "io_uring_submit_req")];

/// Functions whose parameters repeat the tracepoint's, named.
const NAMED_TWINS: [&str; 3] = ["__probestub_", "__traceiter_", "__bpf_trace_"];

impl Btf {
    /// The raw arguments of tracepoint `tp` (its bare name: `block_rq_complete`,
    /// `sys_enter`), without the leading `void *__data`; `None` when the BTF has no
    /// `btf_trace_<tp>` (the kernel cannot attach a `tp_btf` program to it).
    pub fn tracepoint_args(&self, tp: &str) -> Option<Vec<Arg>> {
        let typedef = self.find(&format!("btf_trace_{tp}"), KindTag::Typedef)?;
        let Kind::Ptr(proto) = self.kind(self.skip_modifiers(typedef)) else { return None };
        let Kind::FuncProto { params, .. } = self.kind(self.skip_modifiers(proto)) else { return None };
        let types: Vec<TypeId> = self.params(params).iter().skip(1).map(|p| p.ty).collect();
        let names = NAMED_TWINS.iter().find_map(|prefix| self.param_names(&format!("{prefix}{tp}"), &types));
        let args = types
            .iter()
            .enumerate()
            .map(|(i, &ty)| Arg {
                name: names.as_ref().map_or_else(|| format!("arg{i}"), |n| n[i].clone()),
                ty,
                c_type: self.c_type_name(ty),
            })
            .collect();
        Some(self.typed_pointers(tp, args))
    }

    /// `args` with the `void *` arguments of [`UNTYPED_POINTERS`] given their struct type.
    fn typed_pointers(&self, tp: &str, mut args: Vec<Arg>) -> Vec<Arg> {
        for (_, name, twin) in UNTYPED_POINTERS.iter().filter(|(t, ..)| *t == tp) {
            let typed = self.tracepoint_args(twin).and_then(|a| a.into_iter().find(|a| a.name == *name));
            if let (Some(typed), Some(arg)) = (typed, args.iter_mut().find(|a| a.name == *name && a.c_type == "void *"))
            {
                arg.ty = typed.ty;
                arg.c_type = typed.c_type;
            }
        }
        args
    }

    /// The names of function `func`'s parameters after the first, when they are all
    /// named and their types are `types` (the same tracepoint, not a namesake).
    fn param_names(&self, func: &str, types: &[TypeId]) -> Option<Vec<String>> {
        let Kind::Func { proto, .. } = self.kind(self.find(func, KindTag::Func)?) else { return None };
        let Kind::FuncProto { params, .. } = self.kind(proto) else { return None };
        let rest = self.params(params).get(1..)?;
        let same = rest.len() == types.len() && rest.iter().zip(types).all(|(p, &t)| p.ty == t);
        let names: Vec<String> = rest.iter().map(|p| self.name(p).to_string()).collect();
        (same && names.iter().all(|n| !n.is_empty())).then_some(names)
    }
}

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
        Some(args)
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

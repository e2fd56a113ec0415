//! Types printed as C declares them, for `ebq describe` and error messages:
//! `struct request *`, `unsigned int`, `char[32]`, `blk_status_t` (typedef names are
//! kept: they are what kernel sources and tracepoint formats show), `char (*)[16]`,
//! `void (*)(struct request *, blk_status_t)`.
//!
//! C wraps a declarator around its base type inside out, so the printer walks from
//! the outermost type inwards, growing the declarator (`*`, `[32]`, `(…)`) and
//! stopping at the named base (`struct request`, `unsigned int`, a typedef). A depth
//! limit and a budget of visited types bound the work (and the stack) on a corrupt blob
//! whose types refer to themselves.

use super::{Btf, Kind, TypeId, MAX_DEPTH};

/// Types one name may visit: far more than any real C type (function pointers with
/// many parameters included), few enough that a self-referring blob prints quickly.
const BUDGET: u32 = 4096;

impl Btf {
    /// The type as C spells it in a cast: `struct request *`, `char[32]`.
    pub fn c_type_name(&self, id: TypeId) -> String {
        self.c_type_within(id, 0, &mut { BUDGET })
    }

    fn c_type_within(&self, id: TypeId, depth: usize, budget: &mut u32) -> String {
        let (base, declarator) = self.declarator(id, String::new(), depth, budget);
        let declarator = declarator.trim_end();
        if declarator.is_empty() {
            base
        } else if declarator.starts_with('[') {
            format!("{base}{declarator}")
        } else {
            format!("{base} {declarator}")
        }
    }

    /// The base type name and the declarator around it, with `inner` the part of the
    /// declarator already built by the enclosing types.
    fn declarator(&self, id: TypeId, inner: String, depth: usize, budget: &mut u32) -> (String, String) {
        if *budget == 0 || depth > MAX_DEPTH {
            return ("...".into(), inner);
        }
        *budget -= 1;
        let next = depth + 1;
        let name = self.type_name(id);
        let named = |word: &str| if name.is_empty() { format!("{word} {{...}}") } else { format!("{word} {name}") };
        // Arrays and function types bind tighter than `*`, so a pointer inside needs parentheses.
        let grouped = |inner: String| if inner.starts_with('*') { format!("({inner})") } else { inner };
        match self.kind(id) {
            Kind::Void => ("void".into(), inner),
            Kind::Int(_) | Kind::Float { .. } | Kind::Typedef(_) => (name.into(), inner),
            Kind::Struct(_) => (named("struct"), inner),
            Kind::Union(_) => (named("union"), inner),
            Kind::Enum(_) => (named("enum"), inner),
            Kind::Fwd { union } => (named(if union { "union" } else { "struct" }), inner),
            Kind::Ptr(t) => self.declarator(t, format!("*{inner}"), next, budget),
            Kind::Array { elem, len, .. } => self.declarator(elem, format!("{}[{len}]", grouped(inner)), next, budget),
            Kind::FuncProto { ret, params } => {
                let list: Vec<String> = self
                    .params(params)
                    .iter()
                    .map(|p| if p.ty == 0 { "...".into() } else { self.c_type_within(p.ty, next, budget) })
                    .collect();
                let list = if list.is_empty() { "void".into() } else { list.join(", ") };
                self.declarator(ret, format!("{}({list})", grouped(inner)), next, budget)
            }
            Kind::Func { proto, .. } => self.declarator(proto, format!("{name}{inner}"), next, budget),
            Kind::Const(t) | Kind::Volatile(t) | Kind::Restrict(t) => {
                let word = match self.kind(id) {
                    Kind::Const(_) => "const",
                    Kind::Volatile(_) => "volatile",
                    _ => "restrict",
                };
                if matches!(self.kind(self.skip_qualifiers(t)), Kind::Ptr(_)) {
                    // `char *const p`: the qualifier sits after the pointer's star.
                    self.declarator(t, format!("{word} {inner}"), next, budget)
                } else {
                    let (base, decl) = self.declarator(t, inner, next, budget);
                    (format!("{word} {base}"), decl)
                }
            }
            Kind::TypeTag(t) | Kind::Var { ty: t, .. } | Kind::DeclTag { ty: t, .. } => {
                self.declarator(t, inner, next, budget)
            }
            Kind::Datasec { .. } => (format!("SEC(\"{name}\")"), inner),
        }
    }
}

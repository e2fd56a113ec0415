//! BTF, the kernel's type information, read in pure Rust from its raw bytes.
//!
//! The running kernel describes its own types in `/sys/kernel/btf/vmlinux`: every
//! struct with member offsets, every function's signature, and for each tracepoint a
//! `btf_trace_<name>` typedef whose prototype lists the raw arguments a `tp_btf`
//! program receives. This module turns those bytes into answers the binder needs,
//! without libbpf or syscalls (it takes `&[u8]`), so it is tested on a compiled
//! fixture and on the running kernel alike:
//!
//! - [`Btf::parse`] decodes a blob (the wire format is in `raw.rs`), rejecting truncated or
//!   corrupt input with a [`BtfError`]; names are indexed on first lookup ([`Btf::find`]).
//! - [`Btf::tracepoint_args`] lists a tracepoint's arguments with their types ([`Arg`]).
//! - [`Btf::resolve_path`] follows `rq.q.disk.disk_name` through pointers and anonymous
//!   members to a [`Path`] of [`Hop`]s and a [`LeafType`] that says which SQL value it
//!   becomes, or a [`PathError`] (with "did you mean" for unknown members).
//! - [`Btf::struct_members`] and [`Btf::c_type_name`] describe types as C spells them.

mod c_type;
mod error;
mod index;
mod leaf;
mod member;
mod path;
mod raw;
mod tracepoint;
mod types;

#[cfg(test)]
mod tests;

use std::sync::OnceLock;

pub use error::BtfError;
pub use leaf::{LeafType, Unreadable};
pub use member::Field;
pub use path::{Hop, Path, PathError};
pub use tracepoint::Arg;
pub use types::{Composite, Enum, EnumValue, Int, Kind, List, Member, Param, SectionVar, Type, TypeId};

/// How many typedefs, qualifiers or nested arrays a walk follows before it gives up:
/// a corrupt blob can make them loop (libbpf stops at the same depth).
pub(crate) const MAX_DEPTH: usize = 32;

/// Size of a pointer on the targets ebq runs on (BTF does not record it).
pub const POINTER_SIZE: u32 = 8;

/// A parsed BTF blob: its types by id and its strings.
#[derive(Debug)]
pub struct Btf {
    strings: Box<str>,
    types: Vec<Type>,
    members: Vec<Member>,
    params: Vec<Param>,
    enum_values: Vec<EnumValue>,
    section_vars: Vec<SectionVar>,
    index: OnceLock<index::NameIndex>,
}

/// The kind of a type without its data, for lookups by name ([`Btf::find`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KindTag {
    /// `void`.
    Void,
    /// INT.
    Int,
    /// PTR.
    Ptr,
    /// ARRAY.
    Array,
    /// STRUCT.
    Struct,
    /// UNION.
    Union,
    /// ENUM or ENUM64.
    Enum,
    /// FWD.
    Fwd,
    /// TYPEDEF.
    Typedef,
    /// VOLATILE.
    Volatile,
    /// CONST.
    Const,
    /// RESTRICT.
    Restrict,
    /// FUNC.
    Func,
    /// FUNC_PROTO.
    FuncProto,
    /// VAR.
    Var,
    /// DATASEC.
    Datasec,
    /// FLOAT.
    Float,
    /// DECL_TAG.
    DeclTag,
    /// TYPE_TAG.
    TypeTag,
}

impl Kind {
    /// The kind without its data.
    pub fn tag(&self) -> KindTag {
        match self {
            Kind::Void => KindTag::Void,
            Kind::Int(_) => KindTag::Int,
            Kind::Ptr(_) => KindTag::Ptr,
            Kind::Array { .. } => KindTag::Array,
            Kind::Struct(_) => KindTag::Struct,
            Kind::Union(_) => KindTag::Union,
            Kind::Enum(_) => KindTag::Enum,
            Kind::Fwd { .. } => KindTag::Fwd,
            Kind::Typedef(_) => KindTag::Typedef,
            Kind::Volatile(_) => KindTag::Volatile,
            Kind::Const(_) => KindTag::Const,
            Kind::Restrict(_) => KindTag::Restrict,
            Kind::Func { .. } => KindTag::Func,
            Kind::FuncProto { .. } => KindTag::FuncProto,
            Kind::Var { .. } => KindTag::Var,
            Kind::Datasec { .. } => KindTag::Datasec,
            Kind::Float { .. } => KindTag::Float,
            Kind::DeclTag { .. } => KindTag::DeclTag,
            Kind::TypeTag(_) => KindTag::TypeTag,
        }
    }
}

/// Something with a name in the string section: a type, member, parameter or enumerator.
pub trait Named {
    /// Its offset in the string section (0: anonymous).
    fn name_off(&self) -> u32;
}

macro_rules! named {
    ($($t:ty),*) => {$(
        impl Named for $t {
            fn name_off(&self) -> u32 {
                self.name_off
            }
        }
    )*};
}
named!(Type, Member, Param, EnumValue);

impl Btf {
    /// Parses a raw BTF blob (the content of `/sys/kernel/btf/vmlinux`, or an object's
    /// `.BTF` section). Errors say what is malformed; no input makes it panic.
    pub fn parse(bytes: &[u8]) -> Result<Btf, BtfError> {
        raw::parse(bytes)
    }

    /// Number of type ids, `void` (id 0) included.
    pub fn type_count(&self) -> u32 {
        self.types.len() as u32
    }

    /// The type with this id, if there is one.
    pub fn get(&self, id: TypeId) -> Option<&Type> {
        self.types.get(id as usize)
    }

    /// The kind of the type with this id (`Void` for an id that does not exist, which
    /// only a caller can pass: ids inside the blob are checked when it is parsed).
    pub fn kind(&self, id: TypeId) -> Kind {
        self.get(id).map_or(Kind::Void, |t| t.kind)
    }

    /// The name of a type, member, parameter or enumerator; empty when anonymous (or
    /// when `item` comes from another blob and its offset is not a string here).
    pub fn name<N: Named>(&self, item: &N) -> &str {
        let rest = self.strings.get(item.name_off() as usize..).unwrap_or("");
        rest.find('\0').map_or(rest, |end| &rest[..end])
    }

    /// The name of the type with this id; empty when anonymous or absent.
    pub fn type_name(&self, id: TypeId) -> &str {
        self.get(id).map_or("", |t| self.name(t))
    }

    /// A struct's or union's members, in declaration order. (Lists from another blob
    /// that do not fit this one give an empty slice, here and in the three below.)
    pub fn members(&self, c: Composite) -> &[Member] {
        self.members.get(c.members.range()).unwrap_or_default()
    }

    /// A function prototype's parameters.
    pub fn params(&self, params: List) -> &[Param] {
        self.params.get(params.range()).unwrap_or_default()
    }

    /// An enum's enumerators.
    pub fn enum_values(&self, e: Enum) -> &[EnumValue] {
        self.enum_values.get(e.values.range()).unwrap_or_default()
    }

    /// A data section's variables.
    pub fn section_vars(&self, vars: List) -> &[SectionVar] {
        self.section_vars.get(vars.range()).unwrap_or_default()
    }

    /// Follows typedefs and qualifiers (const, volatile, restrict, type tags) to the
    /// type underneath: what a value of `id` really is.
    pub fn skip_modifiers(&self, id: TypeId) -> TypeId {
        self.skip(id, true)
    }

    /// Follows qualifiers (const, volatile, restrict, type tags) but keeps typedefs,
    /// which carry meaning (`u8` is a byte, `char` a character).
    pub fn skip_qualifiers(&self, id: TypeId) -> TypeId {
        self.skip(id, false)
    }

    fn skip(&self, mut id: TypeId, typedefs: bool) -> TypeId {
        for _ in 0..MAX_DEPTH {
            match self.kind(id) {
                Kind::Const(t) | Kind::Volatile(t) | Kind::Restrict(t) | Kind::TypeTag(t) => id = t,
                Kind::Typedef(t) if typedefs => id = t,
                _ => break,
            }
        }
        id
    }

    /// Size in bytes of a value of the type, as `sizeof` gives it; `None` for `void`,
    /// functions and forward declarations (libbpf's `btf__resolve_size`).
    pub fn size_of(&self, id: TypeId) -> Option<u32> {
        let (mut id, mut count) = (id, 1u32);
        for _ in 0..MAX_DEPTH {
            let size = match self.kind(id) {
                Kind::Int(Int { size, .. })
                | Kind::Struct(Composite { size, .. })
                | Kind::Union(Composite { size, .. })
                | Kind::Enum(Enum { size, .. })
                | Kind::Float { size }
                | Kind::Datasec { size, .. } => size,
                Kind::Ptr(_) => POINTER_SIZE,
                Kind::Array { elem, len, .. } => {
                    count = count.checked_mul(len)?;
                    id = elem;
                    continue;
                }
                Kind::Typedef(t)
                | Kind::Const(t)
                | Kind::Volatile(t)
                | Kind::Restrict(t)
                | Kind::TypeTag(t)
                | Kind::Var { ty: t, .. }
                | Kind::DeclTag { ty: t, .. } => {
                    id = t;
                    continue;
                }
                Kind::Void | Kind::Fwd { .. } | Kind::Func { .. } | Kind::FuncProto { .. } => return None,
            };
            return size.checked_mul(count);
        }
        None
    }

    /// The first type named `name` of kind `tag` (names are indexed on the first call).
    pub fn find(&self, name: &str, tag: KindTag) -> Option<TypeId> {
        self.find_all(name).find(|&id| self.kind(id).tag() == tag)
    }

    /// The value of enumerator `value` of `enum enum_name` (`io_uring_op`,
    /// `IORING_OP_READ` → 22), read as signed when the enum is.
    pub fn enumerator(&self, enum_name: &str, value: &str) -> Option<i64> {
        self.find_all(enum_name).find_map(|id| match self.kind(id) {
            Kind::Enum(e) => self.enum_values(e).iter().find(|v| self.name(*v) == value).map(|v| {
                if e.signed || e.size == 8 {
                    v.value as i64
                } else {
                    v.value as u32 as i64
                }
            }),
            _ => None,
        })
    }

    /// Every type named `name`, in id order.
    pub fn find_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = TypeId> + 'a {
        self.index.get_or_init(|| index::NameIndex::build(self)).lookup(self, name)
    }

    /// Every function (FUNC) with its name and type id, in id order.
    pub fn functions(&self) -> impl Iterator<Item = (&str, TypeId)> {
        self.types
            .iter()
            .enumerate()
            .filter(|(_, t)| matches!(t.kind, Kind::Func { .. }))
            .map(|(id, t)| (self.name(t), id as TypeId))
    }
}

//! Member paths such as `rq.q.disk.disk_name`: each step names a member of the
//! struct the previous step holds or points to, searched through anonymous members,
//! typedefs and qualifiers seen through.
//!
//! ```text
//! rq: struct request *  ─q→  struct request_queue *  ─disk→  struct gendisk *  ─disk_name→  char[32]
//! hops: ->q @0           ->disk @64                    ->disk_name @128         leaf: CharArray{32}
//! ```
//! A path to a member of an embedded struct (`task.se.vruntime`) has a hop without
//! `deref`: its offset adds to the previous hop's inside the same object.

use super::{Btf, Kind, LeafType, TypeId, Unreadable};
use crate::suggest::suggest_column;

/// A resolved path: the member accesses in order, and what the last one reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path {
    /// One per path step.
    pub hops: Vec<Hop>,
    /// The declared type of the last member (the root's type for an empty path).
    pub ty: TypeId,
    /// What SQL value the read becomes.
    pub leaf: LeafType,
}

/// One member access.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hop {
    /// The member's name as written.
    pub member: String,
    /// True (C `->`) when the previous value is a pointer and this member lies in the
    /// struct it points to: the read starts at a new address. False (C `.`) when the
    /// member lies inside the previous value (an embedded struct): its offset adds to
    /// the previous hop's.
    pub deref: bool,
    /// The struct or union this is a member of (the named one, not an anonymous
    /// container): what a CO-RE field relocation names.
    pub container: TypeId,
    /// Offset in bits from the start of `container`.
    pub offset_bits: u32,
    /// The member's declared type.
    pub ty: TypeId,
}

impl Path {
    /// The path as a C expression from a variable `root`: `rq->q->disk->disk_name`,
    /// what a CO-RE read (`BPF_CORE_READ`, `__builtin_preserve_access_index`) takes.
    pub fn c_access(&self, root: &str) -> String {
        self.hops
            .iter()
            .fold(root.to_string(), |acc, h| format!("{acc}{}{}", if h.deref { "->" } else { "." }, h.member))
    }
}

/// Why a path does not resolve. `at` is the index of the offending path step, so the
/// caller can point at it in the query text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The struct has no member of that name.
    #[error("`{container}` has no member `{member}`")]
    UnknownMember {
        /// The step.
        at: usize,
        /// The name asked for.
        member: String,
        /// The struct, in C (`struct request`).
        container: String,
        /// Its members as paths name them, in declaration order.
        members: Vec<String>,
        /// The closest of them, best first (may be empty).
        suggestions: Vec<String>,
    },
    /// The previous value is not a struct, a union or a pointer to one.
    #[error("cannot read member `{member}` of `{c_type}`: it is not a struct or a pointer to one")]
    NoMembers {
        /// The step.
        at: usize,
        /// The name asked for.
        member: String,
        /// The previous value's type, in C.
        c_type: String,
    },
    /// The previous value points to a struct the BTF only declares.
    #[error("cannot read member `{member}` of `{c_type}`: the kernel's BTF declares it without members")]
    Incomplete {
        /// The step.
        at: usize,
        /// The name asked for.
        member: String,
        /// The previous value's type, in C.
        c_type: String,
    },
    /// The path ends at a value that cannot be a column.
    #[error("`{c_type}` cannot be a column: {reason}")]
    Unreadable {
        /// The last step (`None` for an empty path: the root itself).
        at: Option<usize>,
        /// The value's type, in C.
        c_type: String,
        /// Why.
        reason: Unreadable,
    },
}

impl PathError {
    /// The index of the offending path step (`None`: the root itself).
    pub fn at(&self) -> Option<usize> {
        match self {
            PathError::UnknownMember { at, .. }
            | PathError::NoMembers { at, .. }
            | PathError::Incomplete { at, .. } => Some(*at),
            PathError::Unreadable { at, .. } => *at,
        }
    }
}

impl Btf {
    /// Follows `path` from a value of type `root` (a tracepoint argument, usually a
    /// pointer to a struct): each step is a member of the struct the previous value is
    /// or points to. An empty path classifies the root itself.
    pub fn resolve_path(&self, root: TypeId, path: &[&str]) -> Result<Path, PathError> {
        let mut hops = Vec::with_capacity(path.len());
        let (mut ty, mut bitfield) = (root, None);
        for (at, &member) in path.iter().enumerate() {
            let value = self.skip_modifiers(ty);
            let (deref, target) = match self.kind(value) {
                Kind::Ptr(p) => (true, self.skip_modifiers(p)),
                _ => (false, value),
            };
            let c_type = || self.c_type_name(ty);
            let c = match self.kind(target) {
                Kind::Struct(c) | Kind::Union(c) => c,
                Kind::Fwd { .. } => return Err(PathError::Incomplete { at, member: member.into(), c_type: c_type() }),
                _ => return Err(PathError::NoMembers { at, member: member.into(), c_type: c_type() }),
            };
            let Some(field) = self.find_member(c, member) else {
                let members: Vec<String> =
                    self.struct_members(target).unwrap_or_default().into_iter().map(|f| f.name).collect();
                let names: Vec<&str> = members.iter().map(String::as_str).collect();
                let suggestions = suggest_column(member, &names);
                let container = self.c_type_name(target);
                return Err(PathError::UnknownMember { at, member: member.into(), container, members, suggestions });
            };
            hops.push(Hop {
                member: member.into(),
                deref,
                container: target,
                offset_bits: field.offset_bits,
                ty: field.ty,
            });
            (ty, bitfield) = (field.ty, field.bitfield_bits);
        }
        let unreadable =
            |reason| PathError::Unreadable { at: path.len().checked_sub(1), c_type: self.c_type_name(ty), reason };
        if let Some(bits) = bitfield {
            return Err(unreadable(Unreadable::Bitfield { bits }));
        }
        let leaf = self.classify(ty).map_err(unreadable)?;
        Ok(Path { hops, ty, leaf })
    }
}

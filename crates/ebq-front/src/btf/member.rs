//! Members as C code names them: the members of anonymous structs and unions
//! (which the kernel uses everywhere, e.g. `struct request`'s `queuelist`) are
//! reached as if they were the outer struct's own, at their offset within it.

use std::ops::ControlFlow;

use super::{Btf, Composite, Int, Kind, Member, TypeId, MAX_DEPTH};

/// Members one walk may visit. The kernel's largest struct, flattened, has a few
/// hundred; the bound keeps a corrupt blob whose anonymous members contain their own
/// struct from visiting without end ([`MAX_DEPTH`] bounds the nesting, this the total).
const BUDGET: u32 = 1 << 16;

/// A member of a struct or union, anonymous containers flattened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Its name.
    pub name: String,
    /// Its declared type.
    pub ty: TypeId,
    /// Its type in C (`struct request_queue *`, `char[32]`).
    pub c_type: String,
    /// Offset in bits from the start of the outer struct (anonymous containers' offsets included).
    pub offset_bits: u32,
    /// Its width when it is a bitfield.
    pub bitfield_bits: Option<u32>,
}

impl Btf {
    /// The struct or union `id` names, or the one it points to (`struct request *`
    /// describes `struct request`), modifiers seen through; `None` for anything else.
    pub fn composite(&self, id: TypeId) -> Option<(TypeId, Composite)> {
        let id = self.skip_modifiers(id);
        let id = match self.kind(id) {
            Kind::Ptr(t) => self.skip_modifiers(t),
            _ => id,
        };
        match self.kind(id) {
            Kind::Struct(c) | Kind::Union(c) => Some((id, c)),
            _ => None,
        }
    }

    /// The members of the struct or union `id` names or points to, as paths name them,
    /// in declaration order; `None` when `id` is neither ([`Btf::composite`]).
    pub fn struct_members(&self, id: TypeId) -> Option<Vec<Field>> {
        let (_, c) = self.composite(id)?;
        let mut out = Vec::new();
        let _: ControlFlow<()> = self.walk_members(c, 0, 0, &mut { BUDGET }, &mut |name, m, offset_bits| {
            out.push(self.field(name, m, offset_bits));
            ControlFlow::Continue(())
        });
        Some(out)
    }

    /// The member `name` of the struct or union `c`, searched through anonymous members.
    pub(crate) fn find_member(&self, c: Composite, name: &str) -> Option<Field> {
        match self.walk_members(c, 0, 0, &mut { BUDGET }, &mut |n, m, offset_bits| {
            if n == name {
                ControlFlow::Break(self.field(n, m, offset_bits))
            } else {
                ControlFlow::Continue(())
            }
        }) {
            ControlFlow::Break(field) => Some(field),
            ControlFlow::Continue(()) => None,
        }
    }

    fn field(&self, name: &str, m: &Member, offset_bits: u32) -> Field {
        // kind_flag structs give a bitfield's width in the member; older BTF gives it
        // as an INT narrower than its storage.
        let bitfield_bits = match self.kind(self.skip_modifiers(m.ty)) {
            _ if m.bitfield_bits != 0 => Some(m.bitfield_bits as u32),
            Kind::Int(Int { size, bits, bit_offset, .. }) if bit_offset != 0 || bits as u32 != size * 8 => {
                Some(bits as u32)
            }
            _ => None,
        };
        Field { name: name.into(), ty: m.ty, c_type: self.c_type_name(m.ty), offset_bits, bitfield_bits }
    }

    /// Calls `visit(name, member, offset_bits)` for each named member, descending into
    /// anonymous structs and unions in place, until `visit` breaks or the budget of
    /// visited members runs out; nesting deeper than [`MAX_DEPTH`] is not followed.
    fn walk_members<T>(
        &self,
        c: Composite,
        base_bits: u32,
        depth: usize,
        budget: &mut u32,
        visit: &mut dyn FnMut(&str, &Member, u32) -> ControlFlow<T>,
    ) -> ControlFlow<T> {
        for m in self.members(c) {
            if *budget == 0 {
                break;
            }
            *budget -= 1;
            let offset_bits = base_bits.saturating_add(m.offset_bits);
            let name = self.name(m);
            if !name.is_empty() {
                visit(name, m, offset_bits)?;
            } else if let Kind::Struct(inner) | Kind::Union(inner) = self.kind(self.skip_modifiers(m.ty)) {
                if depth < MAX_DEPTH {
                    self.walk_members(inner, offset_bits, depth + 1, budget, visit)?;
                }
            }
        }
        ControlFlow::Continue(())
    }
}

//! The decoded BTF types: one [`Type`] per type id with its kind's data inline.
//!
//! Lists (struct members, function parameters, enumerators, section variables) are
//! [`List`] ranges into shared arrays of [`Btf`](super::Btf), so the ~130k types of a
//! kernel cost four allocations, not one per type.

/// A BTF type id. 0 is `void`; ids count from 1 in the order types appear.
pub type TypeId = u32;

/// One type: its name (an offset into the string section, 0 when anonymous) and kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Type {
    pub(crate) name_off: u32,
    /// What the type is, with its kind-specific data.
    pub kind: Kind,
}

/// A range of a shared list (members, parameters, enumerators or section variables).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct List {
    pub(crate) start: u32,
    pub(crate) len: u32,
}

impl List {
    pub(crate) fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.start as usize + self.len as usize
    }
}

/// The kind of a type (BTF_KIND_*), with what that kind records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Type id 0.
    Void,
    /// An integer (also `char` and `_Bool`).
    Int(Int),
    /// A pointer to the type.
    Ptr(TypeId),
    /// A fixed-size array.
    Array {
        /// The element type.
        elem: TypeId,
        /// The index type (BTF keeps it; C does not need it).
        index: TypeId,
        /// Number of elements.
        len: u32,
    },
    /// A struct.
    Struct(Composite),
    /// A union.
    Union(Composite),
    /// An enum: ENUM (32-bit values) or ENUM64.
    Enum(Enum),
    /// A forward declaration (`struct x;`): the members are not known.
    Fwd {
        /// True for `union x;`.
        union: bool,
    },
    /// A typedef naming the type.
    Typedef(TypeId),
    /// `volatile` of the type.
    Volatile(TypeId),
    /// `const` of the type.
    Const(TypeId),
    /// `restrict` of the type.
    Restrict(TypeId),
    /// A function: its name is the type's name.
    Func {
        /// Its FUNC_PROTO.
        proto: TypeId,
        /// 0 static, 1 global, 2 extern.
        linkage: u16,
    },
    /// A function's signature.
    FuncProto {
        /// The return type (0 for void).
        ret: TypeId,
        /// The parameters; a last parameter of type 0 means `...`.
        params: List,
    },
    /// A variable.
    Var {
        /// Its type.
        ty: TypeId,
        /// 0 static, 1 global, 2 extern.
        linkage: u32,
    },
    /// A data section listing the variables in it.
    Datasec {
        /// Section size in bytes.
        size: u32,
        /// Its variables.
        vars: List,
    },
    /// A floating point type.
    Float {
        /// Size in bytes.
        size: u32,
    },
    /// An attribute tag on a declaration (`btf_decl_tag`).
    DeclTag {
        /// The tagged type (struct, union, function, variable or typedef).
        ty: TypeId,
        /// The tagged member or parameter, -1 for the type itself.
        component: i32,
    },
    /// An attribute tag on a type (`btf_type_tag`, e.g. `__user`, `__rcu`); the name is the tag.
    TypeTag(TypeId),
}

/// What an INT records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Int {
    /// Storage size in bytes.
    pub size: u32,
    /// Two's complement.
    pub signed: bool,
    /// Marked as a character type.
    pub char: bool,
    /// `_Bool`.
    pub bool: bool,
    /// Bit offset of the value in its storage (old-style bitfields; 0 otherwise).
    pub bit_offset: u8,
    /// Number of value bits.
    pub bits: u8,
}

/// What a STRUCT or UNION records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Composite {
    /// Size in bytes.
    pub size: u32,
    /// Its members, in declaration order.
    pub members: List,
}

/// What an ENUM or ENUM64 records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Enum {
    /// Size in bytes.
    pub size: u32,
    /// Values are signed (kind_flag).
    pub signed: bool,
    /// ENUM64 rather than ENUM.
    pub wide: bool,
    /// The enumerators.
    pub values: List,
}

/// A struct or union member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    pub(crate) name_off: u32,
    /// Its type.
    pub ty: TypeId,
    /// Its offset in bits from the start of the struct or union.
    pub offset_bits: u32,
    /// Its width in bits when it is a bitfield declared with kind_flag; 0 otherwise
    /// (an old-style bitfield shows in its INT's `bits` instead).
    pub bitfield_bits: u8,
}

/// A function prototype's parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    pub(crate) name_off: u32,
    /// Its type; 0 for the `...` of a variadic function.
    pub ty: TypeId,
}

/// An enumerator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnumValue {
    pub(crate) name_off: u32,
    /// Its value as 64 bits; read as signed when the enum is signed.
    pub value: u64,
}

/// A variable in a data section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SectionVar {
    /// The VAR's type id.
    pub ty: TypeId,
    /// Offset in the section, in bytes.
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
}

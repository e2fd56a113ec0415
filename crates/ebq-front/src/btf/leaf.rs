//! Which SQL value a kernel type becomes at the end of a path, or why it cannot.
//!
//! BPF reads fixed-size scalars and byte strings; everything else needs a member
//! named (a struct), a choice the kernel does not record (a union), or has no SQL
//! meaning (a function pointer, a float the BPF side cannot compute with).

use super::{Btf, Int, Kind, TypeId};
use crate::types::DataType;

/// A readable value at the end of a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeafType {
    /// An integer of 1, 2, 4 or 8 bytes.
    Integer {
        /// Its size.
        bytes: u32,
        /// Two's complement.
        signed: bool,
    },
    /// `_Bool` (one byte, 0 or 1).
    Bool,
    /// An enum, read as its integer value.
    Enum {
        /// Its size.
        bytes: u32,
        /// Its values are signed.
        signed: bool,
    },
    /// A pointer, read as its 64-bit address: compares and groups as an unsigned integer.
    Pointer,
    /// `char[len]`: a NUL-terminated string of at most `len` bytes.
    CharArray {
        /// Array length in bytes.
        len: u32,
    },
}

impl LeafType {
    /// The column type it becomes: integers keep size and sign, pointers are u64,
    /// `bool` is an unsigned byte, a `char[len]` a string buffer with room for a NUL.
    pub fn data_type(self) -> DataType {
        match self {
            LeafType::Integer { bytes, signed } | LeafType::Enum { bytes, signed } => {
                DataType::Int { bits: (bytes * 8) as u8, signed }
            }
            LeafType::Bool => DataType::Int { bits: 8, signed: false },
            LeafType::Pointer => DataType::U64,
            LeafType::CharArray { len } => DataType::Str { cap: (len + 1).min(u16::MAX as u32) as u16 },
        }
    }

    /// Bytes one read of it copies from the kernel.
    pub fn read_size(self) -> u32 {
        match self {
            LeafType::Integer { bytes, .. } | LeafType::Enum { bytes, .. } => bytes,
            LeafType::Bool => 1,
            LeafType::Pointer => super::POINTER_SIZE,
            LeafType::CharArray { len } => len,
        }
    }
}

/// Why a type cannot be a column.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unreadable {
    /// A struct by value: name one of its members.
    #[error("it is a struct by value; name one of its members")]
    Struct,
    /// A union by value: the kernel does not record which member is live.
    #[error("it is a union by value; name one of its members")]
    Union,
    /// A struct or union only declared in BTF.
    #[error("its type is only declared in the kernel's BTF, without members")]
    Incomplete,
    /// A function pointer.
    #[error("it is a function pointer")]
    FunctionPointer,
    /// A floating point value (BPF has no floating point).
    #[error("it is a floating point value, which BPF programs cannot read as a number")]
    Float,
    /// An array of something other than `char`.
    #[error("it is an array of `{elem}`; only char arrays (strings) can be read whole")]
    Array {
        /// The element type in C.
        elem: String,
    },
    /// An integer wider than 64 bits.
    #[error("it is a {bytes}-byte integer; columns hold at most 8 bytes")]
    WideInteger {
        /// Its size.
        bytes: u32,
    },
    /// A bitfield: it does not start on a byte, and a byte-wise read would mix its neighbours in.
    #[error("it is a {bits}-bit bitfield, which ebq does not read yet")]
    Bitfield {
        /// Its width.
        bits: u32,
    },
    /// `void`, a function or anything else with no value.
    #[error("it has no value")]
    NoValue,
}

impl Btf {
    /// What SQL value a value of type `id` becomes, typedefs and qualifiers seen through.
    pub fn classify(&self, id: TypeId) -> Result<LeafType, Unreadable> {
        let id = self.skip_modifiers(id);
        match self.kind(id) {
            Kind::Int(int) => classify_int(int),
            Kind::Enum(e) if matches!(e.size, 1 | 2 | 4 | 8) => Ok(LeafType::Enum { bytes: e.size, signed: e.signed }),
            Kind::Enum(e) => Err(Unreadable::WideInteger { bytes: e.size }),
            Kind::Ptr(t) if matches!(self.kind(self.skip_modifiers(t)), Kind::FuncProto { .. }) => {
                Err(Unreadable::FunctionPointer)
            }
            Kind::Ptr(_) => Ok(LeafType::Pointer),
            Kind::Array { elem, len, .. } if self.is_char(elem) => Ok(LeafType::CharArray { len }),
            Kind::Array { elem, .. } => Err(Unreadable::Array { elem: self.c_type_name(elem) }),
            Kind::Struct(_) => Err(Unreadable::Struct),
            Kind::Union(_) => Err(Unreadable::Union),
            Kind::Fwd { .. } => Err(Unreadable::Incomplete),
            Kind::Float { .. } => Err(Unreadable::Float),
            Kind::FuncProto { .. } => Err(Unreadable::FunctionPointer),
            _ => Err(Unreadable::NoValue),
        }
    }

    /// Is `id` C's `char`, `signed char` or `unsigned char` (qualifiers seen through)?
    /// Typedefs are not: `u8 addr[6]` is bytes, not text.
    fn is_char(&self, id: TypeId) -> bool {
        let id = self.skip_qualifiers(id);
        matches!(self.kind(id), Kind::Int(Int { size: 1, .. }))
            && matches!(self.type_name(id), "char" | "signed char" | "unsigned char")
    }
}

fn classify_int(int: Int) -> Result<LeafType, Unreadable> {
    if int.bit_offset != 0 || int.bits as u32 != int.size * 8 {
        return Err(Unreadable::Bitfield { bits: int.bits as u32 });
    }
    if int.bool {
        return Ok(LeafType::Bool);
    }
    match int.size {
        1 | 2 | 4 | 8 => Ok(LeafType::Integer { bytes: int.size, signed: int.signed }),
        bytes => Err(Unreadable::WideInteger { bytes }),
    }
}

//! Value types shared by every stage: what a column or expression holds.

use std::fmt;

/// The type of a column or expression as ebq sees it.
///
/// Integers keep their width and signedness from the event record so results
/// print and export with the type the kernel used; arithmetic widens to 64 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataType {
    /// Integer of `bits` (8, 16, 32, 64).
    Int {
        /// Width in bits.
        bits: u8,
        /// Two's complement when true.
        signed: bool,
    },
    /// A truth value (the result of a comparison).
    Bool,
    /// A NUL-terminated string held in a fixed buffer of `cap` bytes (including the NUL).
    Str {
        /// Buffer capacity in bytes.
        cap: u16,
    },
    /// A 64-bit float; only produced in user space (AVG).
    Float,
    /// A histogram (HIST, LHIST): buckets of `[lo, hi)` with counts, bounds in
    /// the argument's signedness. Only produced in user space; it can be
    /// selected, not compared, sorted or computed with.
    Hist {
        /// True when the argument was signed (bucket bounds are i64, else u64).
        signed: bool,
    },
    /// `len` u64 counters: storage only, for histogram buckets inside a map value.
    Buckets {
        /// Number of counters.
        len: u16,
    },
    /// A call stack (`kstack`, `ustack`): a 64-bit stack id in the kernel
    /// (a `BPF_MAP_TYPE_STACK_TRACE` id; for user stacks the tgid in the high
    /// half), symbolized to text in user space. Selected and grouped by,
    /// never compared or computed with.
    Stack {
        /// True for user-space stacks.
        user: bool,
    },
    /// `len` one-byte registers: storage only, for a HyperLogLog sketch inside a map value.
    Registers {
        /// Number of registers.
        len: u16,
    },
}

impl DataType {
    /// Unsigned 64-bit integer.
    pub const U64: DataType = DataType::Int { bits: 64, signed: false };
    /// Signed 64-bit integer.
    pub const I64: DataType = DataType::Int { bits: 64, signed: true };
    /// Unsigned 32-bit integer.
    pub const U32: DataType = DataType::Int { bits: 32, signed: false };

    /// An integer type from a byte size and signedness (sizes other than 1/2/4/8 become 64-bit).
    pub fn int_of_size(size: u32, signed: bool) -> DataType {
        let bits = match size {
            1 => 8,
            2 => 16,
            4 => 32,
            _ => 64,
        };
        DataType::Int { bits, signed }
    }

    /// True for integer types.
    pub fn is_int(&self) -> bool {
        matches!(self, DataType::Int { .. })
    }

    /// A string's buffer capacity; `None` for other types.
    pub fn string_cap(&self) -> Option<u16> {
        match self {
            DataType::Str { cap } => Some(*cap),
            _ => None,
        }
    }

    /// True for signed integer types.
    pub fn is_signed(&self) -> bool {
        matches!(self, DataType::Int { signed: true, .. })
    }

    /// Size in bytes when stored in a BPF map key/value or ring-buffer record.
    pub fn byte_size(&self) -> u32 {
        match self {
            DataType::Int { bits, .. } => u32::from(*bits) / 8,
            DataType::Bool => 1,
            DataType::Str { cap } => u32::from(*cap),
            DataType::Float => 8,
            DataType::Hist { .. } => 0,
            DataType::Stack { .. } => 8,
            DataType::Buckets { len } => 8 * u32::from(*len),
            DataType::Registers { len } => u32::from(*len),
        }
    }

    /// The C type used in generated BPF code.
    pub fn c_type(&self) -> &'static str {
        match self {
            DataType::Int { bits: 8, signed: false } => "__u8",
            DataType::Int { bits: 16, signed: false } => "__u16",
            DataType::Int { bits: 32, signed: false } => "__u32",
            DataType::Int { bits: _, signed: false } => "__u64",
            DataType::Int { bits: 8, signed: true } => "__s8",
            DataType::Int { bits: 16, signed: true } => "__s16",
            DataType::Int { bits: 32, signed: true } => "__s32",
            DataType::Int { bits: _, signed: true } => "__s64",
            DataType::Bool => "__u8",
            DataType::Str { .. } => "char",
            DataType::Float => "double",
            DataType::Hist { .. } => "void",
            DataType::Stack { .. } => "__u64",
            DataType::Buckets { .. } => "__u64",
            DataType::Registers { .. } => "__u8",
        }
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataType::Int { bits, signed: true } => write!(f, "i{bits}"),
            DataType::Int { bits, signed: false } => write!(f, "u{bits}"),
            DataType::Bool => f.write_str("bool"),
            DataType::Str { cap } => write!(f, "string({cap})"),
            DataType::Float => f.write_str("f64"),
            DataType::Hist { .. } => f.write_str("histogram"),
            DataType::Stack { user: false } => f.write_str("kernel stack"),
            DataType::Stack { user: true } => f.write_str("user stack"),
            DataType::Buckets { len } => write!(f, "u64[{len}]"),
            DataType::Registers { len } => write!(f, "u8[{len}]"),
        }
    }
}

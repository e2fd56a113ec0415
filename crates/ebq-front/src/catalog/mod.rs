//! The catalog: which events exist on this kernel and what columns they carry.
//!
//! Tracepoint layouts are read from tracefs `format` files at run time, never
//! hard-coded: offsets and sizes differ between kernels. System columns (time,
//! pid, …) exist on every event and are produced by BPF helpers, not read from
//! the event record. The catalog reads nothing itself: it asks its
//! [`KernelInfo`] (the running kernel, or a fixture in tests).
//!
//! Main types: [`Catalog`] (a kernel's events), [`TracepointFormat`] (one parsed
//! `format` file), [`TpField`] and [`SystemColumn`]. Misspelt names get "did you
//! mean" suggestions ([`CatalogError::UnknownEvent`], [`suggest_column`]).

pub mod expand;
pub mod file_columns;
mod format;
mod glob;
mod lookup;
pub mod outside_task;
pub mod print_fmt;
pub mod probe;
mod system;
#[cfg(test)]
mod tests;
pub mod usdt;
pub mod views;

pub use crate::error::CatalogError;
pub use crate::suggest::{closest, suggest_column};
pub use file_columns::FileColumn;
pub use format::parse_format;
pub use system::SystemColumn;

use crate::host::KernelInfo;
use std::sync::Arc;

/// How the bytes of a tracepoint field are to be read.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FieldKind {
    /// An integer (or pointer) of `size` bytes stored inline.
    Int,
    /// `char name[len]`: a fixed, NUL-padded character array stored inline.
    CharArray {
        /// Array length in bytes, terminating NUL included.
        len: u32,
    },
    /// `__data_loc char[] name`: a u32 whose low 16 bits are the string's offset
    /// from the start of the record and high 16 bits its length.
    DataLocStr,
    /// `const char *name` at a `syscalls` tracepoint: an 8-byte pointer into the
    /// calling process's memory (a `__user` argument), read as a string with
    /// `bpf_probe_read_user_str` (at most `bind::USER_STRING_CAP` bytes).
    /// Non-const `char *` arguments stay addresses: they are output buffers the
    /// kernel has not filled yet at `sys_enter` (`read`'s `buf`); `str(buf)` reads one.
    UserStr,
    /// `const char *const *argv` (and `envp`) at a `syscalls` tracepoint: a user array
    /// of strings, read as one string, the first `bind::ARGV_MAX_ARGS`
    /// entries joined by spaces (each cut at 63 bytes, the whole at
    /// `bind::USER_STRING_CAP`) — what a terminal shows of a command line.
    UserArgv,
    /// An array of integers (`unsigned long args[6]`): elements of `elem_size` bytes.
    IntArray {
        /// Size of one element in bytes (1, 2, 4 or 8).
        elem_size: u32,
        /// Number of elements.
        len: u32,
    },
    /// Anything else (`__data_loc` of non-char, bit fields…): listed, not queryable.
    Unsupported,
}

/// One field of a tracepoint record, straight from its `format` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TpField {
    /// Field name (`fd`, `count`, `comm`).
    pub name: String,
    /// The C declaration's type as written (`unsigned int`, `char[16]`, `__data_loc char[]`).
    pub c_type: String,
    /// Byte offset from the start of the record (including the common header).
    pub offset: u32,
    /// Byte size in the record, as the format file gives it, except at `syscalls`
    /// tracepoints: an argument declared narrower than its 8-byte slot (`unsigned int
    /// fd`) has its declared width there, because the kernel reads only those bytes.
    pub size: u32,
    /// Signedness as the format file states it.
    pub signed: bool,
    /// How the bytes are read.
    pub kind: FieldKind,
}

/// A parsed tracefs `format` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracepointFormat {
    /// Category (`syscalls`), the directory above the event.
    pub category: String,
    /// Event name (`sys_enter_pread64`).
    pub name: String,
    /// Tracepoint id from the `ID:` line.
    pub id: u32,
    /// Event-specific fields in record order; the `common_*` header fields are dropped
    /// because BPF programs get them through helpers instead.
    pub fields: Vec<TpField>,
}

impl TracepointFormat {
    /// The field with this name, if any.
    pub fn field(&self, name: &str) -> Option<&TpField> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Size of the record up to the end of its last field.
    pub fn record_size(&self) -> u32 {
        self.fields.iter().map(|f| f.offset + f.size).max().unwrap_or(8)
    }
}

/// The events of one kernel, read through its [`KernelInfo`].
#[derive(Debug, Clone)]
pub struct Catalog {
    kernel: Arc<dyn KernelInfo>,
    /// Built-in and user views ([`views`]), inlined before bind.
    views: Arc<Vec<crate::parse::View>>,
}
